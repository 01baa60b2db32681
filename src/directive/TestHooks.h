#ifndef ALCOP_TEST_HOOKS_H
#define ALCOP_TEST_HOOKS_H

/** \file
 * The internal hook through which the tests reach into the pass: deliberate defects, which
 * prove that the numerical, IR and PTX checks bite, a replacement copy lowering (the
 * async-visibility emulation of test/support) and a replacement of the tensor-core
 * instructions (their emulation in plain code, test/support/EmulatedTensorCores.h). Not
 * installed; nothing in the product sets it, and with the default Hooks the pass is exactly
 * what alcop::enable installs.
 */

#include "alcop/Directive.h"

#include <functional>
#include <memory>

namespace alcop {

class CopyLowering;

namespace testing {

/** Deliberate defects: each must make a numerical or structural test fail. */
enum class Fault {
    None,
    DropBarrier,        ///< omit the per-iteration barrier of the steady state
    SlotOffByOne,       ///< consumers read slot (k + 1) % stages instead of k % stages (both levels)
    WaitOneGroupShort,  ///< every wait (prologue and loop) lets one group too many stay in flight
    DropWait,           ///< omit the per-iteration wait of the steady state (its barrier stays)
    /** Iteration k issues the copies of iteration k + 1 (tile k + stages, into slot
     * k % stages) right after its own consumers, before the wait and barrier that end it; the
     * prologue issues those of the first iteration. Every tile is still in place and visible
     * before it is read (read-after-write holds), but nothing separates the reads of slot
     * k % stages in iteration k from the copy into it: the write-after-read barrier is missing. */
    MissingWarBarrier,
    FragmentBeforeBarrier,  ///< two levels: the next tile's first fragments are loaded before
                            ///< the wait and barrier that publish that tile
};

struct Hooks {
    Fault fault = Fault::None;
    /** Makes the copy lowering of every pipelined kernel instead of Options::copies (which
     * then only decides how the generator writes its copies). */
    std::function<std::unique_ptr<CopyLowering>()> copies;
    /** Applied to the lowered pipeline after the tensor-core rewrite, the operands' swizzle
     * and the compaction of the registers: replaces the ldmatrix / mma markers by code the
     * target can run. When set, the tensor-core analysis accepts any GPU target (the markers
     * need CUDA sm_80+ otherwise). */
    std::function<Halide::Internal::Stmt(const Halide::Internal::Stmt &)> tensor_cores;
};

/** alcop::enable with hooks. */
void enable(Halide::Pipeline p, const Options &options, const Hooks &hooks);

}  // namespace testing
}  // namespace alcop

#endif
