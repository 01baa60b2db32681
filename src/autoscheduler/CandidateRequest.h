#ifndef ALCOP_CANDIDATE_REQUEST_H
#define ALCOP_CANDIDATE_REQUEST_H

/** \file
 * Tuning with the Alcop autoscheduler: ask it to apply its `rank`-th candidate (0: the model's
 * choice; the order is AlcopAutoscheduler.h's) to the pipeline whose output is `output`. The
 * request is recorded on the Func, a trace tag like alcop::pipeline's, so that it reaches the
 * plugin from a Generator, where the environment of the build cannot differ per library.
 * Header-only: a generator uses it without linking the autoscheduler, which the plugin brings.
 */

#include "Error.h"

#include <string>

namespace alcop {
namespace autoscheduler {

inline const std::string candidate_tag = "alcop.autoscheduler.candidate ";

inline void request_candidate(Halide::Func output, int rank) {
    user_assert(rank >= 0) << "request_candidate(" << output.name() << ", " << rank << "): the rank is at least 0.\n";
    output.add_trace_tag(candidate_tag + std::to_string(rank));
}

}  // namespace autoscheduler
}  // namespace alcop

#endif
