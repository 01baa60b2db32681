#ifndef ALCOP_LAUNCH_BOUNDS_H
#define ALCOP_LAUNCH_BOUNDS_H

/** \file
 * The Halide half of alcop::min_blocks_per_sm: marks CUDA kernels with their launch bounds.
 *
 * For every Func with a request, each CUDA kernel inside its production (the outermost
 * gpu_block loops) gets, first in its block body, the marker call
 * `alcop_launch_bounds(threads, blocks)` of AsyncCopyMarkers.h, where threads is the kernel's
 * block size: the product of its gpu_thread loop extents, which are constants once Halide has
 * fused the thread loops (custom passes run after that). The LLVM rewrite turns the marker
 * into the kernel's .maxntid / .minnctapersm, and ptxas then fits the kernel's registers to
 * `blocks` blocks per SM.
 *
 * Assumes the lowered Stmt a custom pass sees. Guarantees: only CUDA kernels are marked (the
 * marker exists only for the NVPTX rewrite); a kernel whose thread extents are not constant is
 * left alone (a .maxntid below the launch's block would make the launch fail).
 */

#include "analysis/KernelRegisters.h"

#include "Halide.h"

#include <map>
#include <string>

namespace alcop {

/** The launch bounds of each CUDA kernel of the Funcs in `blocks_per_sm` (keyed by Func name)
 * whose block size is a constant, keyed by the name of the kernel's outermost gpu_block loop
 * (as analysis/KernelRegisters.h names kernels; where two kernels share it, the last one's). */
std::map<std::string, LaunchBounds> kernel_launch_bounds(const Halide::Internal::Stmt &s,
                                                         const std::map<std::string, int> &blocks_per_sm);

/** Marks the kernels of the Funcs in `blocks_per_sm` (keyed by Func name). */
Halide::Internal::Stmt mark_launch_bounds(const Halide::Internal::Stmt &s,
                                          const std::map<std::string, int> &blocks_per_sm);

}  // namespace alcop

#endif
