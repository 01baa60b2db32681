#ifndef ALCOP_PUBLIC_CUDA_OPT_IN_H
#define ALCOP_PUBLIC_CUDA_OPT_IN_H

// Lifts the two caps Halide 14's CUDA runtime puts on every kernel, so that an app's kernels get
// what their schedule needs: more than 48 KB of dynamic shared memory, and more than 64
// registers per thread.
//
// - Shared memory: the runtime launches a kernel with its dynamic shared memory size but never
//   raises the kernel's limit above the 48 KB default, so a deeper pipeline (more slots) fails
//   at launch. cuLaunchKernel is wrapped to raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
//   to what the launch asks for first (the device's opt-in maximum, e.g. 227 KB on H100/H200,
//   still applies).
// - Registers: the runtime loads every module with CU_JIT_MAX_REGISTERS = 64 (unless
//   HL_CUDA_JIT_MAX_REGISTERS is set), so a kernel with 8 x 8 accumulators per thread spills
//   (measured on an H200: 64 registers instead of 129, 10x slower). cuModuleLoadDataEx is
//   wrapped to drop that option, so that the driver allocates what the code needs (up to 255),
//   as later Halide runtimes do; an HL_CUDA_JIT_MAX_REGISTERS the user sets is kept.
//
// The runtime gets every driver entry point from halide_cuda_get_symbol(), which it declares
// weak: linking CudaOptIn.cpp replaces it with one that hands out the driver's own functions,
// except those two. The model (model::RuntimeLimits::OptIn) and the autoscheduler
// (ALCOP_AUTOSCHEDULER_LIMITS=optin) may assume the lifted limits only for apps that link it.
// An app calls nothing: linking HalideAlcop::cuda_opt_in is the whole opt-in. (What it records
// of the launches, for the benchmark and the tests, is apps/common/CudaOptInRecording.h.)

namespace alcop::apps {

/** The driver library loaded: ALCOP_LIBCUDA if set (tests), else libcuda.so.1 / libcuda.so. */
void *cuda_driver();

}  // namespace alcop::apps

#endif
