#ifndef ALCOP_AUTOSCHEDULER_PLAIN_SCHEDULE_H
#define ALCOP_AUTOSCHEDULER_PLAIN_SCHEDULE_H

/** \file
 * The Alcop autoscheduler's fallback for a pipeline it recognizes neither as a contraction nor
 * as row reductions: a plain GPU schedule, as steps of a Schedule (ScheduleSteps.h). Every
 * Func that cannot be inlined (and every output) computed at root; each stage's first two
 * dimensions that are safe to run in parallel on 16 x 16 threads (one such dimension: 64
 * threads), a single GPU thread where none is. No shared-memory staging, no pipelining.
 *
 * Assumes: a GPU target. Guarantees: a schedule that lowers for any pipeline Halide can
 * compute on a GPU, correct whatever it reads and writes (a stage's dimension runs in parallel
 * only where the stage writes and reads its Func at exactly that variable).
 */

#include "autoscheduler/ScheduleSteps.h"

namespace alcop {
namespace autoscheduler {

void schedule_plain(Schedule &schedule, const Halide::Pipeline &p);

}  // namespace autoscheduler
}  // namespace alcop

#endif
