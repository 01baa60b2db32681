#ifndef ALCOP_AUTOSCHEDULER_ROW_REDUCTION_SCHEDULE_H
#define ALCOP_AUTOSCHEDULER_ROW_REDUCTION_SCHEDULE_H

/** \file
 * The schedule the Alcop autoscheduler gives recognized row reductions (RowReduction.h), as
 * steps of a Schedule (ScheduleSteps.h): what a CUDA programmer writes for a softmax or a
 * layernorm, a warp's 32 lanes per row, `row_reduction_rows_per_block` rows per block.
 *  - out: the first row dimension split into blocks of rows (the other row dimensions index
 *    blocks too, fused into one beyond the first), 32 lanes along each row, each lane writing
 *    the row's elements lane, lane + 32, ...: coalesced stores and loads.
 *  - each reduction red(y), producers first: its RDom split into steps of 32 lanes and
 *    rfactor()ed over the lanes, so that partial(y, lane) is one lane's share of the row
 *    (elements lane, lane + 32, ...: coalesced loads), accumulated in the lane's registers and
 *    stored once in shared memory (a wrapper computed per block of rows, on the block's
 *    threads); red then combines its row's 32 partials in one thread, in registers, and stores
 *    the row's value in shared memory (a wrapper every consumer reads: out's lanes, later
 *    reductions).
 *  - every other Func inlined.
 * No staging and no pipeline: a lane reads each element of its row once, from global memory,
 * with nothing to reuse; the barriers Halide puts between the block's loop nests are the
 * only synchronization.
 *
 * Assumes: `r` was recognized on the pipeline `schedule` schedules.
 * Guarantees: only steps of `schedule` touch the pipeline; correct at every size (guarded
 * tails of rows and of blocks of rows).
 */

#include "autoscheduler/RowReduction.h"
#include "autoscheduler/ScheduleSteps.h"

namespace alcop {
namespace autoscheduler {

/** Rows per block: four warps, 128 threads. */
constexpr int row_reduction_rows_per_block = 4;
/** The lanes along a row: a warp. */
constexpr int row_reduction_lanes = 32;

void schedule_row_reductions(Schedule &schedule, const RowReductions &r);

}  // namespace autoscheduler
}  // namespace alcop

#endif
