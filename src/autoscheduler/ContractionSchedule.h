#ifndef ALCOP_AUTOSCHEDULER_CONTRACTION_SCHEDULE_H
#define ALCOP_AUTOSCHEDULER_CONTRACTION_SCHEDULE_H

/** \file
 * The schedule the Alcop autoscheduler gives a recognized contraction (Contraction.h) for one
 * candidate laid out over its dimensions (Candidates.h), as steps of a Schedule
 * (ScheduleSteps.h), which applies and prints them: the output's block and register tiles,
 * the accumulators in registers, the update in chunks of the k tile (exact, or with the last
 * chunk guarded), the operands
 * staged in shared memory and pipelined (and, with R >= 2, their register fragments).
 * AlcopAutoscheduler.h describes that schedule and why it takes the shape it does.
 *
 * Assumes: the contraction was recognized on the pipeline the Schedule schedules, with
 * output_is_reduction false (split_off_reduction() first otherwise, and recognize again).
 * Guarantees: only steps of `schedule` touch the pipeline.
 */

#include "autoscheduler/Candidates.h"
#include "autoscheduler/Contraction.h"
#include "autoscheduler/ScheduleSteps.h"

#include <string>
#include <vector>

namespace alcop {
namespace autoscheduler {

/** For an output that accumulates itself: the steps out.update(0).rfactor({}), which make the
 * whole reduction a Func of its own, `out = init; out += out_intm`, so that its accumulators can
 * live in registers inside the block that stores the output. */
void split_off_reduction(Schedule &schedule, const Contraction &c);

/** How the reduction ended up chunked: always by KT, the first RDom variable split and fused
 * with the others into one serial chunk loop. */
struct Chunking {
    /** A branch splits K exactly (its chunks read the operands directly where the output is a
     * whole number of block tiles): at every size (K a constant KT divides), or where
     * `condition` holds when it is defined. */
    bool exact = false;
    Halide::Expr condition;
    /** Where a runtime extent's split is exact, after "its extent ": "is a multiple of the k
     * tile, 32" or "is the estimated 256". */
    std::string exact_where;
    /** A branch (every size outside `condition`, or every size) runs the same chunks with the
     * update of the last one guarded and the tail of its tiles read at clamped coordinates;
     * why it is the only one, when it is. */
    bool guarded = true;
    std::string why_guarded;
};

/** Adds the steps that schedule `c` as mapping `m` says; appends what the user should know
 * (an unclamped operand) to `warnings`. */
Chunking schedule_contraction(Schedule &schedule, const Contraction &c, const Mapping &m,
                              std::vector<std::string> &warnings);

/** The tensor-core schedule of `c` (16-bit operands, `m.s.tensor_cores`) through the public
 * directives a user would write (docs/tensor-cores.md): the output's and the accumulators' block
 * tiles in the mma.sync warp layout (alcop::schedule_tensor_core_tile), over one M loop that
 * fuses the M dimensions of m.m_tile (a convolution's pixels across width, rows and images),
 * K chunked by KT (a constant extent KT divides, or a runtime size whose estimate it divides:
 * tensor_cores_apply(); then the update is specialized on K % KT == 0, a convolution's on the
 * estimate, and its generic branch, the last chunk guarded, takes mma.sync in the same warp
 * tiles with that chunk's tail zero-filled by the pass), the operands staged in shared memory
 * and pipelined with S stages, alcop::tensor_cores on the accumulators, and with R >= 2 the mma
 * fragments' register stages (alcop::pipeline(f, R, Level::Register)). */
Chunking schedule_tensor_core_contraction(Schedule &schedule, const Contraction &c, const Mapping &m,
                                          std::vector<std::string> &warnings);

}  // namespace autoscheduler
}  // namespace alcop

#endif
