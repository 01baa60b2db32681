#ifndef ALCOP_KERNEL_REGISTERS_H
#define ALCOP_KERNEL_REGISTERS_H

/** \file
 * The 32-bit registers per thread each GPU kernel of a lowered Stmt is estimated to need: what
 * the launch limits are checked against (Halide 14's CUDA runtime caps every kernel at 64, and
 * ptxas spills the rest to local memory) and what bounds the blocks an SM holds.
 *
 * A kernel needs the words of its per-thread arrays (accumulators, fragment slots, staged
 * copies; each Func's largest allocation, since the copies an unrolled loop or a
 * specialization makes of one are not live at once) plus the cost model's address and loop
 * registers (model::kAddressAndLoopRegisters).
 * Where it holds the inner product of a tensor-core accumulator, the model's fit for the warp
 * tile, the k tile and the register stages (model::estimate_registers) stands for the
 * accumulator and its fragments instead: ptxas keeps more fragments live than the rewrite's
 * slots, and addresses of its own.
 *
 * Assumes the per-thread arrays are already compacted to one thread's window
 * (rewrite/CompactRegisters.h): a block-level array before it counts the whole block tile.
 */

#include "analysis/TensorCoreAnalysis.h"
#include "model/CostModel.h"

#include <map>
#include <string>
#include <vector>

namespace alcop {

struct KernelRegisters {
    std::string kernel;  ///< the outermost gpu_block loop's name
    std::string func;    ///< the Func the kernel produces (the producer around its block loops)
    int registers = 0;   ///< the estimate, per thread
    /** How the estimate was made, for a message: "27 for addresses and 80 words of per-thread
     * arrays", or the tensor-core tile's fit in place of the addresses. */
    std::string basis;
};

/** A kernel's launch bounds (alcop::min_blocks_per_sm): its block size and the blocks per SM
 * asked for, which cap its registers (codegen/LaunchBounds.h finds and marks them). */
struct LaunchBounds {
    int threads = 0;
    int blocks_per_sm = 0;
};

/** Each kernel of `s` and its estimate. `uses`: the tensor-core requests the analysis accepted;
 * `register_stages`: per accumulator, alcop::pipeline(P, R, Level::Register). */
std::vector<KernelRegisters> estimate_kernel_registers(const Halide::Internal::Stmt &s,
                                                       const std::vector<TensorCoreUse> &uses,
                                                       const std::map<std::string, int> &register_stages);

/** The cost model's description of `u`'s warp tile (warp_m x warp_n, its chunk's k tile) with
 * `register_stages` register stages of the fragments: what model::estimate_registers and
 * model::tensor_core_step_cycles take. */
model::Schedule warp_tile_of(const TensorCoreUse &u, int register_stages);

/** The Func an allocation holds: its name, without the ".<n>" Halide 14 adds to the per-thread
 * allocations it lifts to the thread level (one per iteration of an unrolled loop). */
std::string func_of_allocation(const std::string &allocation);

}  // namespace alcop

#endif
