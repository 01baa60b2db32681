#ifndef ALCOP_TEST_PIPELINE_FAULTS_H
#define ALCOP_TEST_PIPELINE_FAULTS_H

/** \file
 * Deliberately broken pipelines, made by the tests through the pass's test hook
 * (src/directive/TestHooks.h): each is a synchronization mistake the rewrite could make, and
 * the numbers on pocl, the IR and PTX checks and the hazard checker must catch it. The rewrite
 * knows none of them; each acts on one seam:
 *  - DropBarrier, DropWait: the steady state ends its iterations without the barrier, or
 *    without the wait (its barrier stays) (Hooks::steady_state_publication);
 *  - SlotOffByOne: the consumers of iteration k read slot (k + 1) % stages instead of
 *    k % stages, at both levels (Hooks::consumer_slot);
 *  - WaitOneGroupShort: every wait lets one group more stay in flight (a copy lowering that
 *    wraps the chosen one, Hooks::copies);
 *  - MissingWarBarrier: every buffer fetches as many tiles ahead as it has slots (the plan,
 *    Hooks::plan), so iteration k copies tile k + stages into slot k % stages, the one its
 *    consumers read, with no barrier between them. Register-staged copies store it after the
 *    consumers (every tile is still in place before it is read, but other threads may still
 *    be reading the slot: the write-after-read barrier is missing); cp.async may land it at
 *    any time;
 *  - FragmentBeforeBarrier: with register stages, the next tile's first fragments are loaded
 *    before the barrier that publishes the tile (on the pass's output, Hooks::output: in a
 *    sequence, the run of statements after a barrier that load fragments goes before it; a
 *    fragment load stores into a register array from shared memory, or by ldmatrix).
 * A fault that finds nothing to break is an error, where it acts on the output, so that a test
 * of it cannot pass for want of a target.
 */

#include "directive/TestHooks.h"

namespace alcop {
namespace testing {

enum class Fault {
    None,
    DropBarrier,
    SlotOffByOne,
    WaitOneGroupShort,
    DropWait,
    MissingWarBarrier,
    FragmentBeforeBarrier,
};

/** `hooks` with `fault` added: its copy lowering wraps theirs, its output edit runs before
 * theirs (an emulation of the tensor cores). */
void add_fault(Hooks &hooks, Fault fault);

/** FragmentBeforeBarrier on a Stmt (TensorCoreFaults applies it too); `changed` says whether
 * it moved anything. */
Halide::Internal::Stmt load_fragments_before_barriers(const Halide::Internal::Stmt &s, bool *changed);

}  // namespace testing
}  // namespace alcop

#endif
