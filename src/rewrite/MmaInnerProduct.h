#ifndef ALCOP_MMA_INNER_PRODUCT_H
#define ALCOP_MMA_INNER_PRODUCT_H

/** \file
 * The Halide-side tensor-core rewrite: replaces the per-thread inner product of each accepted
 * alcop::tensor_cores() request (TensorCoreAnalysis.h) by fragment loads and mma markers
 * (codegen/TensorCoreMarkers.h), which the LLVM rewrite of the NVPTX module turns into
 * ldmatrix and mma.sync.
 *
 * The serial K loop `for kk in [min, min + tile_k)` around the accumulator's unrolled updates
 * (not a guarded tail, is_guarded_k_loop, which stays the threads' own) becomes
 * `for ks in [0, tile_k / 16)`, whose body binds (LetStmt) the ldmatrix.x4 registers
 * of A for each 16-row tile j of the warp tile and of B for each pair of 8-column tiles, then
 * for each 16 x 8 tile (j, i) binds the lane's four old accumulators and stores the four
 * results of one mma.sync.m16n8k16 into them. Addresses come from the loads of the original
 * update: A's (and B's) index at lane 0 of the (i, j) = (0, 0) update, with K and M (N)
 * strides measured lane by lane (every lane's row of every tile checked against them: a user
 * error where they are not evenly spaced), so the rewrite reads the same shared tile the
 * copies wrote (up to the slot offsets the pipeline rewrite adds afterwards). Lane L gives the
 * row of matrix L / 8, row L % 8, of each ldmatrix.x4 (TensorCoreMarkers.h).
 *
 * With register stages R (alcop::pipeline(P, R, Level::Register) on the accumulator) the
 * ldmatrix results go to R slots of per-thread fragment registers instead: step s loads step
 * s + R - 1 before its mma, the last steps load the next chunk's first ones (from slot
 * ko + 1 of the shared pipeline; unguarded, in the last chunk from a slot no copy writes any
 * more, into registers no mma reads) after the streaming loop's wait and barrier, which
 * move there from the end of its body, and a register prologue follows the shared one. It
 * assumes the shared pipeline of both operands (LowerPipelines checks it) and that the inner
 * product is the unconditional last consumer of the streaming loop (a user error otherwise).
 */

#include "analysis/TensorCoreAnalysis.h"

#include <map>
#include <string>
#include <vector>

namespace alcop {

/** The row of an operand's shared tile as the rewrite measured it: the stride, in bytes, of
 * the tile's non-contiguous index (M or N for a K-contiguous operand, K otherwise). */
struct OperandRows {
    std::string func;
    int64_t row_bytes = 0;
};

/** Rewrites the inner product of each use in `s`; appends the rows of the operands it
 * rewrote to `rows` when given (what the swizzle of the operands needs). `register_stages`
 * (per accumulator, alcop::pipeline(P, R, Level::Register)): the fragments of step s + R - 1
 * are loaded before the mma of step s, across the chunks of the shared pipeline around the
 * inner product (see docs/tensor-cores.md, "Register stages of the fragments"). */
Halide::Internal::Stmt rewrite_inner_products(const Halide::Internal::Stmt &s, const std::vector<TensorCoreUse> &uses,
                                              std::vector<OperandRows> *rows = nullptr,
                                              const std::map<std::string, int> &register_stages = {});

}  // namespace alcop

#endif
