#ifndef ALCOP_TEST_HOOKS_H
#define ALCOP_TEST_HOOKS_H

/** \file
 * The internal hook through which the tests reach into the pass. Not installed; nothing in the
 * product sets it, and with the default Hooks the pass is exactly what alcop::enable installs.
 *
 * The tests use it for two things:
 *  - emulations that let pocl run what only a GPU could: the async-visibility emulation of the
 *    copies (test/support/EmulatedAsyncCopies.h) and the tensor-core instructions in plain code
 *    (test/support/EmulatedTensorCores.h);
 *  - deliberate defects, which prove that the numerical, IR, PTX and hazard checks bite
 *    (test/support/PipelineFaults.h, TensorCoreFaults.h).
 * Each hook is a seam between phases of the pass (the plan, the copy lowering, the output), or
 * a named decision of the rewrite that a test may make differently, as MLIR's loop pipeliner
 * takes its schedule and annotations as callbacks. The rewrite itself knows no fault.
 */

#include "alcop/Directive.h"

#include <functional>
#include <memory>

namespace alcop {

class CopyLowering;
struct KernelPlan;

namespace testing {

struct Hooks {
    /** Edits each kernel's plan before the rewrite follows it. */
    std::function<void(KernelPlan &)> plan;
    /** Makes the copy lowering of every pipelined kernel from the one the pass chose (by
     * Options::copies and the target), which it may wrap or ignore. */
    std::function<std::unique_ptr<CopyLowering>(std::unique_ptr<CopyLowering> chosen)> copies;
    /** The slot that the consumers of iteration `iteration` of a pipelined loop read, of
     * `stages` (both levels; a register-level iteration is a step of the fragment loop).
     * The rewrite's: iteration % stages. */
    std::function<Halide::Expr(const Halide::Expr &iteration, int stages)> consumer_slot;
    /** What ends each iteration of a pipelined loop's steady state, given the wait for the next
     * tile's copies (undefined where the copies need none) and the barrier that publishes it.
     * The rewrite's: both, in that order. */
    std::function<Halide::Internal::Stmt(const Halide::Internal::Stmt &wait, const Halide::Internal::Stmt &barrier)>
        steady_state_publication;
    /** Applied to the pass's output after the tensor-core rewrite, the operands' swizzle and the
     * compaction of the registers (before the launch bounds). */
    std::function<Halide::Internal::Stmt(const Halide::Internal::Stmt &)> output;
    /** The output hook replaces the ldmatrix / mma markers by code any GPU target can run, so
     * the tensor-core analysis accepts any GPU target (the markers need CUDA sm_80+ otherwise). */
    bool emulates_tensor_cores = false;
};

/** The slot the consumers of `iteration` read: the hook's, or iteration % stages. */
inline Halide::Expr consumer_slot(const Hooks &hooks, const Halide::Expr &iteration, int stages) {
    return hooks.consumer_slot ? hooks.consumer_slot(iteration, stages) : iteration % stages;
}

/** alcop::enable with hooks. */
void enable(Halide::Pipeline p, const Options &options, const Hooks &hooks);

}  // namespace testing
}  // namespace alcop

#endif
