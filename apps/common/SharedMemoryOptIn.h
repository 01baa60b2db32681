#ifndef ALCOP_SHARED_MEMORY_OPT_IN_H
#define ALCOP_SHARED_MEMORY_OPT_IN_H

// Lets the Halide CUDA kernels of an app use more than 48 KB of dynamic shared memory.
//
// Halide 14's CUDA runtime launches every kernel with its dynamic shared memory size but never
// raises the kernel's limit above the 48 KB default, so a deeper pipeline (more slots) fails
// at launch. The runtime gets every driver entry point from halide_cuda_get_symbol(), which it
// declares weak: linking SharedMemoryOptIn.cpp replaces it with one that hands out the
// driver's own functions, except cuLaunchKernel, which first raises the kernel's
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to what the launch asks for (when that is
// above 48 KB; the device's opt-in maximum, e.g. 227 KB on H100/H200, still applies).
//
// The model (SmemLimit::OptIn) and the autoscheduler (ALCOP_AUTOSCHEDULER_SMEM=optin) must
// assume the opt-in limit only for apps that link this file.

namespace alcop::apps {

/** The driver library loaded: ALCOP_LIBCUDA if set (tests), else libcuda.so.1 / libcuda.so. */
void *cuda_driver();

/** Launches whose dynamic shared memory needed the opt-in, since the program started. */
int opted_in_launches();

}  // namespace alcop::apps

#endif
