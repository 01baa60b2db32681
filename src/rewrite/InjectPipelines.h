#ifndef ALCOP_INJECT_PIPELINES_H
#define ALCOP_INJECT_PIPELINES_H

/** \file
 * The rewrite: turns each streaming loop found by the analysis into a multi-buffered software
 * pipeline laid out by the plan, in the phases of a software pipeline (as MLIR's loop
 * pipeliner names them): slot addressing, prologue, steady state (the kernel), epilogue, and
 * the composition of the last consumer's register-level pipeline with the shared one.
 *
 * For `for k in [min, min + E)` with pipelined buffers P of S_P stages (prefetch distance
 * d_P = S_P - 1, D = max d_P, n = min d_P - 1), it emits:
 *
 *   barrier                                  // the slots may have held other data before
 *   for p in [0, D): copy tile min+p of each P with p < d_P into slot p   (if p < E); commit
 *   wait(n); barrier                         // tile min is in place and visible
 *   for k:
 *     copy tile k + d_P of each P into slot (k - min + d_P) % S_P   (if k + d_P < min + E)
 *     commit
 *     consumers, reading P from slot (k - min) % S_P
 *     wait(n)                                // asynchronous kinds: tile k+1 of every P landed
 *     barrier                                // (a) tile k+1 is visible to every thread
 *                                            // (b) all threads left iteration k, so slot
 *                                            //     k % S_P == (k + 1 + d_P) % S_P is free
 *   wait(0); barrier                         // nothing in flight; slots free for reuse
 *
 * One barrier per iteration suffices: the only slot written in iteration k+1 is the one last
 * read in iteration k, and the only slot read in k+1 was written before it; both orders cross
 * the barrier that ends iteration k. Read cyclically, an iteration is wait -> barrier -> issue
 * the next copy -> compute, so the copies of tile k+d overlap the compute of tile k even with
 * 2 stages. The wait count n holds because each step commits exactly one group (possibly
 * empty, for a guarded-off tail), so when iteration k ends, the group holding tile k+1 of a
 * buffer with distance d is older than the newest d - 1 groups. The barriers Halide put after
 * each pipelined producer and at the end of the body become redundant and are dropped;
 * barriers between consumer stages stay. Tail prefetches are guarded off, so no tile past the
 * end is loaded. How a copy is emitted (cp.async, staged through registers, or synchronous) is
 * the CopyLowering's business; the registers it stages through are allocated around the loop.
 *
 * Register level (FragmentAnalysis.h, PipelineFragments.h): each fragment loop is unrolled
 * with its register slots (a long one by groups of them). When it is the last consumer of a
 * pipelined loop, it composes: the wait and barrier that end iteration k move into its steps,
 * just before the loads of tile k + 1's first fragments, and its register prologue follows the
 * shared one.
 *
 * A steady state that streams tensor-core operands is marked for expansion by its slots,
 * which the last step of the rewrite performs (ExpandSlots.h).
 *
 * A prologue that prefetches more than 15 tiles ahead is a loop over its steps rather than
 * unrolled. Before building anything, the input loads' alignment that Halide's simplifier lost
 * is recovered (copy/GlobalAlignment.h; the copy lowering proves cp.async's alignment from what
 * that walk learns), and the kernel's shared memory and each fragment loop's register slots are
 * checked against Options::shared_memory_limit and register_limit.
 *
 * Assumes what the analysis checked; guarantees the same values as the unpipelined loop.
 */

#include "directive/Requests.h"
#include "directive/TestHooks.h"
#include "model/CostModel.h"
#include "plan/PipelinePlan.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace alcop {

/** The rewrite of `s` for explicit requests (keyed by Func name). The shared buffers named in
 * `tensor_core_operands`, each with what its loop streams to mma.sync (the accumulators a lane
 * holds, the fragments' register stages), get slots aligned for their swizzle where the plan can (PipelinePlan.h), appended to
 * `aligned_slots` when given, and the loops that stream them may be expanded by their slots
 * (ExpandSlots.h, by what they stream). */
Halide::Internal::Stmt inject_pipelines(const Halide::Internal::Stmt &s,
                                        const std::map<std::string, PipelineRequest> &requests,
                                        const Options &options = Options(),
                                        const testing::Hooks &hooks = testing::Hooks(),
                                        const std::map<std::string, model::TensorCoreStream> &tensor_core_operands = {},
                                        std::vector<SwizzleAlignedSlots> *aligned_slots = nullptr);

}  // namespace alcop

#endif
