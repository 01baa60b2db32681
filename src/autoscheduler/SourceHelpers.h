#ifndef ALCOP_AUTOSCHEDULER_SOURCE_HELPERS_H
#define ALCOP_AUTOSCHEDULER_SOURCE_HELPERS_H

/** \file
 * The two functions the Alcop autoscheduler's schedule sources call besides Halide's and
 * ALCOP's directives (ScheduleSteps.h applies them through the same calls). A program that
 * pastes a schedule source links them from alcop_autoscheduler; the source includes
 * "autoscheduler/AlcopAutoscheduler.h", which includes this header.
 *
 * Assumes: a Halide 14 pipeline as the algorithm wrote it (before lowering).
 * Guarantees: both are user errors, not crashes, on a Func that is not what they expect.
 */

#include "Halide.h"

namespace alcop {
namespace autoscheduler {

/** Make `wrapper`, a Func::in() wrapper of a Func that reads an input buffer, read that buffer
 * at coordinates clamped to its bounds. Only the wrapper's own (unspecialized) definition
 * changes: specializations made before keep reading directly. Exact for every coordinate
 * inside the buffer; coordinates outside it read the nearest element instead of failing a
 * bounds check. The generated schedule sources call it. */
void clamp_to_input_bounds(Halide::Func wrapper);

/** The extent of dimension `dim` of the RDom of `f`'s first update, as the algorithm wrote it
 * (e.g. the Variable `A.extent.0`). The generated schedule sources specialize on it; a schedule
 * only has the Funcs at hand, and Func::rvars() returns RVars without their RDom. */
Halide::Expr rdom_extent(const Halide::Func &f, int dim);

}  // namespace autoscheduler
}  // namespace alcop

#endif
