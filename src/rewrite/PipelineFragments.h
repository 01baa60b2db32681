#ifndef ALCOP_PIPELINE_FRAGMENTS_H
#define ALCOP_PIPELINE_FRAGMENTS_H

/** \file
 * The register level of ALCOP: a fragment loop L (see FragmentAnalysis.h) with T steps and
 * fragments of R stages (prefetch distance d = R - 1) becomes T steps, in which step j first
 * loads the fragments of step j + d into slot (j + d) % R of their registers, then computes
 * step j from slot j % R. Every slot index must be a constant, so that the slots stay in
 * registers: a short loop (T <= 16) is unrolled whole; a longer one becomes a loop over
 * G = (T - d) / R groups of R steps, unrolled within a group (step g R + u uses the slots
 * (u + d) % R and u, constants), followed by the T - G R < 2 R remaining steps unrolled.
 *
 * Alone, L starts over in each iteration of the loop around it: the fragments of steps
 * 0 .. d-1 are loaded before step 0 (a register prologue).
 *
 * Composed with a shared-level pipeline (L is the last consumer of the streaming loop k,
 * as the ki loop of a GEMM is under ko), the prefetch runs across the end of L: steps
 * j >= T - d load the first fragments of tile k + 1 from its shared slot, guarded by
 * k + 1 < end. The streaming loop's wait and barrier (which make tile k + 1 visible) move
 * to step T - d, just before those loads, where every read of tile k's slot is already
 * done, so the one barrier still separates the reads of a slot from its next copy. The
 * register prologue of tile `min` then runs once, after the shared prologue. When T is
 * not a multiple of R the slots are renamed at the end of each iteration, so that step j
 * of every tile uses slot j % R. A one-step body (FragmentLoop::one_step, T = 1) is the same
 * with one step: it only ever composes.
 *
 * Only the fragments loaded from k's pipelined tiles prefetch across the end of L
 * (SharedLoopContext::crossing): the publication makes those visible early. A fragment of
 * an operand that k produces unpipelined (one buffer, copied at the start of each
 * iteration) has tile k + 1 only after that copy, in the next iteration: it starts over in
 * each iteration as if alone (its register prologue at the start of L, no loads after step
 * T - d - 1, no renaming), so every read of that buffer still comes before the barrier.
 */

#include "analysis/FragmentAnalysis.h"
#include "directive/TestHooks.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace alcop {

/** The shared-level pipelined loop a fragment loop composes with. */
struct SharedLoopContext {
    std::string var;  ///< the streaming loop's variable
    Halide::Expr min, end;
    /** What makes tile var + 1 visible: the register-staged stores, the wait, the barrier. */
    Halide::Internal::Stmt publish;
    /** The lets between the streaming loop's body and the fragment loop, outermost first. */
    std::vector<std::pair<std::string, Halide::Expr>> lets;
    /** The fragments whose loads of tile var + 1 may cross into this iteration (see above). */
    std::set<std::string> crossing;
};

struct FragmentPipeline {
    Halide::Internal::Stmt steps;     ///< replaces the fragment loop
    Halide::Internal::Stmt prologue;  ///< composed only: tile min's first fragments, after the shared prologue
};

/** Pipelines `loop`, whose body statements (loop.body.stmts, in order) are `pieces` after
 * the shared-level rewrite. With `shared`, composes with that loop. (`hooks`: the slot the
 * compute of a step reads, testing::Hooks::consumer_slot.) */
FragmentPipeline pipeline_fragments(const FragmentLoop &loop, const std::vector<Halide::Internal::Stmt> &pieces,
                                    const SharedLoopContext *shared, const testing::Hooks &hooks = testing::Hooks());

}  // namespace alcop

#endif
