#ifndef ALCOP_APPS_CUDA_OPT_IN_RECORDING_H
#define ALCOP_APPS_CUDA_OPT_IN_RECORDING_H

// What the CUDA opt-in (include/alcop/CudaOptIn.h, CudaOptIn.cpp) records of the launches it
// wraps, for the benchmark (registers and spills of the kernels it times) and the opt-in's
// tests. Not installed: an app that links the opt-in calls none of it.

namespace alcop::apps {

/** Launches whose dynamic shared memory needed the opt-in, since the program started. */
int opted_in_launches();

/** The register cap the runtime last asked for and was dropped (64 in Halide 14), 0 if none. */
int dropped_register_cap();

/** What the kernels launched while recording hold, as the driver reports it. */
struct KernelResources {
    int launches = 0;
    int max_registers = 0;       // per thread
    int max_local_bytes = 0;     // per thread: spills and local arrays (0 when none)
    int max_dynamic_shared = 0;  // bytes per block
};

/** Starts (clearing what was recorded) or stops recording the launched kernels' resources:
 * three driver queries per launch, so leave it off while timing. */
void record_kernel_resources(bool on);
KernelResources recorded_kernel_resources();

}  // namespace alcop::apps

#endif
