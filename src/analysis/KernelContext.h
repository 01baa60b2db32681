#ifndef ALCOP_KERNEL_CONTEXT_H
#define ALCOP_KERNEL_CONTEXT_H

/** \file
 * What is known at a point inside a GPU kernel, for the passes that must bound indices: the
 * lets of the kernel (inlined into an index so that the simplifier sees through them) and
 * the ranges of the gpu_thread and serial loops around the point. Used to find where a Func
 * lives in a merged shared allocation and which part of a register array a thread uses.
 *
 * A variable that is not a loop in the context (e.g. the streaming loop's own variable, which
 * the analysis leaves out on purpose) stays symbolic: an index that depends on it then has
 * no constant bounds.
 */

#include "Halide.h"

#include <string>
#include <utility>
#include <vector>

namespace alcop {

struct KernelContext {
    std::vector<std::pair<std::string, Halide::Expr>> lets;                   ///< outermost first
    std::vector<std::pair<std::string, Halide::Internal::Interval>> loops;  ///< outermost first

    Halide::Expr inline_lets(Halide::Expr e) const;

    /** Narrow the loop ranges to a box containing every point where `condition` holds
     * (thread predicates of fused gpu_thread loops guard the stages that use fewer threads,
     * e.g. `ty * 16 + tx <= 127`). The box may be larger than the guarded set, never smaller. */
    void assume(const Halide::Expr &condition);

    void push_loop(const Halide::Internal::For *op);

    /** Bounds of `e` over the loop ranges, with the lets inlined. */
    Halide::Internal::Interval bounds(const Halide::Expr &e) const;
};

}  // namespace alcop

#endif
