#ifndef ALCOP_EXPAND_SLOTS_H
#define ALCOP_EXPAND_SLOTS_H

/** \file
 * Modulo variable expansion of the steady states that stream tensor-core operands: the last
 * step of the rewrite, after the inner products and the swizzle, whose slot terms it folds.
 *
 * The pipeline rewrite addresses slot (k - min + d) % S of each buffer (InjectPipelines.h),
 * so a rolled loop derives every slot from k in each iteration and LLVM rebuilds each shared
 * address from it: about 20 instructions a chunk beside the plugin's 8x56x56 convolution's 32
 * mma.sync. With P copies (P a multiple of every stage count) this pass turns
 *
 *   for k in [min, min + E): body(k)
 *
 * into
 *
 *   for g in [0, E / P):
 *     let k = min + g P + u in body(k)     for u = 0 .. P - 1, each slot folded to a constant
 *   for k in [min + (E / P) P, min + E): body(k)      // the E % P iterations left
 *
 * so that every address into the slots is a constant offset of a per-thread address. It folds
 * a term `i % S` only where it is a constant in the copy; every other term (the tiles'
 * positions in their operands) stays as it was, so each copy computes what the rolled body
 * computed at the same k.
 *
 * Which loops (expanded_copies, by model::expanded_chunks, the rule the cost model counts
 * with): those that stream a tensor-core operand, with two stages (up to six where each lane
 * holds at most 64 accumulators, the fragments have one register stage and the kernel may hold
 * more than the 64 registers of Halide 14's runtime), and none of whose prefetches (the copies inside the loop)
 * stores in place: each is a cp.async or staged through registers (IssuedCopy::in_place; the
 * prologue's may store in place). A tensor-core body is short (one mma.sync is 4096
 * multiply-adds), so the slot arithmetic is a large share of it; a SIMT body is many times
 * longer and keeps one copy. Expanded, LLVM hoists each copy's slot addresses out of the loop
 * as registers of their own (ptxas 13, sm_80): past two stages that outgrows large warp tiles
 * (the generators' fp16 GEMM, 64 x 64 warp tiles, 128 accumulators a lane, three stages, went
 * 240 -> 255 registers and their convolution spilled at sm_90), not smaller ones (the plugin's
 * 8x14x14 convolution, 32 x 32 warp tiles, five stages: 80 -> 128; its 8x56x56 one, 32 x 64,
 * four stages: 138 -> 130); with copies in place
 * (the edge kernels' clamped 2-byte gathers) even two stages do (the plugin's fp16 GEMM's
 * edge kernel 225 -> 255). A loop of one group at
 * most (a constant extent up to P) stays too: it would run each copy once, and LLVM makes it
 * straight-line code, the kernel's whole body, which has no main loop to report (the
 * plugin's batched matmul of K = 64 in 2 chunks). (The register level unrolls its fragment
 * slots the same way: PipelineFragments.h.)
 *
 * InjectPipelines marks the loops to expand (mark_for_expansion), so that the passes between
 * see the rolled loop; expand_slots expands them and drops the marks.
 */

#include "Halide.h"
#include "model/CostModel.h"

#include <vector>

namespace alcop {

/** How many copies of a steady state's body expand_slots makes (1: none), by the rule above:
 * the buffers' stage counts, what they stream to mma.sync (the accumulators each lane holds, 0
 * where none is a tensor-core operand's tile, and the fragments' register stages), whether a
 * prefetch stores in place, and the loop's extent. */
int expanded_copies(const std::vector<int> &stages, const model::TensorCoreStream &stream, bool prefetch_in_place,
                    const Halide::Expr &extent);

/** `loop` (a steady-state For) marked for expansion into `copies` copies (a LetStmt around it
 * that expand_slots reads and removes). */
Halide::Internal::Stmt mark_for_expansion(const Halide::Internal::Stmt &loop, int copies);

/** `s` with every marked loop expanded and the marks removed. */
Halide::Internal::Stmt expand_slots(const Halide::Internal::Stmt &s);

}  // namespace alcop

#endif
