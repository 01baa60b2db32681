#ifndef ALCOP_AUTOSCHEDULER_ROW_REDUCTION_H
#define ALCOP_AUTOSCHEDULER_ROW_REDUCTION_H

/** \file
 * Recognition of the row-reduction pipelines the Alcop autoscheduler schedules: an output
 * computed elementwise along rows from statistics of each row, the statistics being reductions
 * along the row. Softmax, layernorm and a row sum broadcast back are such pipelines, written
 * plainly:
 *
 *   mx(y) = maximum(v(r, y));  s(y) = sum(exp(v(r, y) - mx(y)));  out(x, y) = exp(v(x, y) - mx(y)) / s(y)
 *
 * The recognized form, exactly:
 *  - one output `out(x, y, ...)`, a pure Func of at least two dimensions: x (its first) runs
 *    along a row, the others (the row dimensions) index rows;
 *  - at least one reduction: a Func with a pure definition and exactly one update, over a
 *    one-dimensional RDom without a predicate, whose left-hand side is its pure variables and
 *    which Halide proves associative (rfactor() splits it across a row's lanes). Its
 *    dimensions are the row dimensions;
 *  - every other Func is pure (and inlined): one that reads input buffers only, directly or
 *    through other such Funcs, is the same at every row and may be read anywhere (gamma(x), a
 *    mask); the others have the row dimensions, or one more in front;
 *  - each row depends on its own row only: every call to one of those others passes the
 *    caller's own row variables, unchanged and in order, as its last arguments (mx(y) from
 *    out(x, y); v(r, y) from s(y)).
 *
 * Assumes: nothing of estimates (the schedule does not depend on the sizes).
 * Guarantees: recognize_row_reductions() never changes the pipeline; when it returns nothing it
 * says why in one sentence.
 */

#include "Halide.h"

#include <optional>
#include <string>
#include <vector>

namespace alcop {
namespace autoscheduler {

struct RowReductions {
    Halide::Internal::Function output;
    /** The reductions, producers before their consumers. */
    std::vector<Halide::Internal::Function> reductions;

    /** "row reductions of out over x, rows y: maximum(y) over r$x, sum(y) over r$x". */
    std::string describe() const;
};

/** The row reductions `outputs` compute, or nothing, with the reason in *why. */
std::optional<RowReductions> recognize_row_reductions(const std::vector<Halide::Internal::Function> &outputs,
                                                      std::string *why);

}  // namespace autoscheduler
}  // namespace alcop

#endif
