#ifndef ALCOP_MMA_INNER_PRODUCT_H
#define ALCOP_MMA_INNER_PRODUCT_H

/** \file
 * The Halide-side tensor-core rewrite: replaces the per-thread inner product of each accepted
 * alcop::tensor_cores() request (TensorCoreAnalysis.h) by fragment loads and mma markers
 * (codegen/TensorCoreMarkers.h), which the LLVM rewrite of the NVPTX module turns into
 * ldmatrix and mma.sync.
 *
 * The serial K loop `for kk in [min, min + tile_k)` around the accumulator's unrolled updates
 * becomes `for ks in [0, tile_k / 16)`, whose body binds (LetStmt) the ldmatrix.x4 registers
 * of A for each 16-row tile j of the warp tile and of B for each pair of 8-column tiles, then
 * for each 16 x 8 tile (j, i) binds the lane's four old accumulators and stores the four
 * results of one mma.sync.m16n8k16 into them. Addresses come from the loads of the original
 * update: A's (and B's) index at lane 0 of the (i, j) = (0, 0) update, with K and M (N)
 * strides measured lane by lane, so the rewrite reads the same shared tile the copies wrote
 * (up to the slot offsets the pipeline rewrite adds afterwards). Lane L gives the row of
 * matrix L / 8, row L % 8, of each ldmatrix.x4 (TensorCoreMarkers.h).
 */

#include "analysis/TensorCoreAnalysis.h"

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
 * rewrote to `rows` when given (what the swizzle of the operands needs). */
Halide::Internal::Stmt rewrite_inner_products(const Halide::Internal::Stmt &s, const std::vector<TensorCoreUse> &uses,
                                              std::vector<OperandRows> *rows = nullptr);

}  // namespace alcop

#endif
