#ifndef ALCOP_TENSOR_CORE_MARKERS_H
#define ALCOP_TENSOR_CORE_MARKERS_H

/** \file
 * The contract between a Halide-level tensor-core lowering and the LLVM rewrite of the NVPTX
 * module: the extern calls that stand for `mma.sync` and `ldmatrix`. Halide 14 can emit
 * neither instruction, and it splits a vector-typed extern call into one call per lane (its
 * operands split too), so every marker is a scalar PureExtern call whose operands are all
 * arguments. The LLVM rewrite (TensorCoreRewrite.cpp, run by the one marker pass of
 * AsyncCopyRewrite.cpp) groups the calls that belong to one instruction and replaces them by
 * one NVVM intrinsic call, marked convergent (LLVM 14 does not mark these intrinsics).
 *
 * The markers need sm_80 or newer (PTX 7.0); the Halide side must only emit them there. All
 * 32 lanes of a warp must reach each instruction: no guard on the thread index around them.
 *
 * Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"; lane l, group g = l / 4,
 * thread-in-group t = l % 4). A 32-bit register holds two 16-bit values, the one with the
 * smaller column (A) or row (B) index in the low half, as ldmatrix delivers them:
 *  - A (16 x 16, row-major, "row"): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1],
 *    a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
 *  - B (16 x 8, K by N, "col"): b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g];
 *  - C and D (16 x 8, fp32): c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1].
 *
 * mma: `f32 alcop_mma_m16n8k16_f32_<in>(i32 j, i32 a0, a1, a2, a3, i32 b0, b1, f32 c0, c1, c2, c3)`
 * with <in> = f16 or bf16: element j (a constant in 0..3) of D = A * B + C, i.e.
 * `mma.sync.aligned.m16n8k16.row.col.f32.<in>.<in>.f32`. One instruction is written as four
 * calls, j = 0..3, with the same ten operands; the Halide side binds every operand once
 * (LetStmt) before the four calls, in particular the old accumulator values, since Halide 14
 * updates a Tuple element by element and the call for j = 1 must not see the new c0.
 *   The rewrite groups, within one basic block, the calls to one marker whose ten operands
 *   are the same values (the same SSA values, or identical trees of pure instructions, which
 *   is what Halide makes of recomputed pure operands). Each group becomes one intrinsic call
 *   (`llvm.nvvm.mma.m16n8k16.row.col.f32.f32` on <2 x half> pairs, or
 *   `llvm.nvvm.mma.m16n8k16.row.col.bf16` on i32) at the group's first call, and call j
 *   becomes element j of its result. It asserts (fatal error otherwise): j is a constant in
 *   0..3 and every group has each j (a group with a missing j means the four calls disagree
 *   on an operand, e.g. the non-atomic accumulator update above).
 *
 * ldmatrix: `i32 alcop_ldmatrix_x4_b16(i32 j, T e0, ..., T e7)` and
 * `i32 alcop_ldmatrix_x4_trans_b16(...)`, T a 16-bit type (f16, i16; bf16 travels as i16):
 * register j (a constant in 0..3) of `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16`,
 * i.e. the lane's fragment of matrix j. e0..e7 are loads of the 8 elements of this lane's
 * 16-byte row in shared memory (lanes 8i..8i+7 give the rows of matrix i); the rewrite uses
 * only e0's address, the others are there so that Halide's bounds inference sees the whole
 * row (and are checked to be that row). The row must be 16-byte aligned.
 *   The rewrite groups, within one basic block, the calls to one marker whose e0 addresses
 *   are the same value; each group becomes one intrinsic call
 *   (`llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4[.trans].b16` on an addrspace(3) pointer) at the
 *   group's first call, and call j becomes element j of its result. It asserts: j is a
 *   constant in 0..3; each e_k is a 16-bit load (or a lane of a vector load) from shared
 *   memory, 2k bytes past e0 (the same base and index up to constant terms); nothing between
 *   the first and the last call of a group may write memory other than the thread's own stack
 *   (so that one read serves them all).
 *
 * Afterwards no call to an `alcop_mma_` or `alcop_ldmatrix_` function remains, and their
 * declarations are erased. A declaration with one of these prefixes that does not match its
 * signature above is a fatal error. The rewrite needs no registration of its own: it runs in
 * the pass that `async_copy_rewrite_registered()` (AsyncCopyMarkers.h) registers.
 */

namespace alcop {

constexpr const char *mma_f16_name = "alcop_mma_m16n8k16_f32_f16";
constexpr const char *mma_bf16_name = "alcop_mma_m16n8k16_f32_bf16";
constexpr const char *ldmatrix_name = "alcop_ldmatrix_x4_b16";
constexpr const char *ldmatrix_trans_name = "alcop_ldmatrix_x4_trans_b16";

/** Every tensor-core marker starts with one of these. */
constexpr const char *mma_prefix = "alcop_mma_";
constexpr const char *ldmatrix_prefix = "alcop_ldmatrix_";

/** Operand counts of the markers: the index j, then the instruction's operands. */
constexpr int mma_marker_args = 11;      ///< j, a0..a3, b0, b1, c0..c3
constexpr int ldmatrix_marker_args = 9;  ///< j, e0..e7

}  // namespace alcop

#endif
