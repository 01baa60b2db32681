#ifndef ALCOP_AUTOSCHEDULER_REQUESTS_H
#define ALCOP_AUTOSCHEDULER_REQUESTS_H

/** \file
 * Requests to the Alcop autoscheduler recorded on a pipeline's output Func (trace tags, like
 * alcop::pipeline's), so that they reach the plugin from a Generator, where the environment of
 * the build cannot differ per library. They override the environment (AlcopAutoscheduler.h,
 * Options::from_environment). Header-only: a generator uses them without linking the
 * autoscheduler, which the plugin brings.
 */

#include "Error.h"

#include <string>

namespace alcop {
namespace autoscheduler {

inline const std::string candidate_tag = "alcop.autoscheduler.candidate ";
inline const std::string gpu_tag = "alcop.autoscheduler.gpu ";
inline const std::string limits_tag = "alcop.autoscheduler.limits ";

/** Tuning: apply the `rank`-th candidate (0: the model's choice; the order is
 * AlcopAutoscheduler.h's) to the pipeline whose output is `output`. */
inline void request_candidate(Halide::Func output, int rank) {
    user_assert(rank >= 0) << "request_candidate(" << output.name() << ", " << rank << "): the rank is at least 0.\n";
    output.add_trace_tag(candidate_tag + std::to_string(rank));
}

/** Model `gpu` (a name model::find_gpu knows, e.g. "H200") instead of the target's GPU: Halide
 * 14's CUDA targets stop at sm_86, so an sm_90 GPU can only be named. "" asks nothing. */
inline void request_gpu(Halide::Func output, const std::string &gpu) {
    if (!gpu.empty()) output.add_trace_tag(gpu_tag + gpu);
}

/** Which launch limits the model assumes: "optin" for an app that links apps/common/CudaOptIn
 * (dynamic shared memory up to the GPU's maximum, registers up to 255), "default" for Halide
 * 14's CUDA runtime (48 KiB, 64 registers per thread). "" asks nothing. */
inline void request_limits(Halide::Func output, const std::string &limits) {
    user_assert(limits.empty() || limits == "optin" || limits == "default")
        << "request_limits(" << output.name() << ", \"" << limits
        << "\"): say \"optin\" (the app links apps/common/CudaOptIn) or \"default\".\n";
    if (!limits.empty()) output.add_trace_tag(limits_tag + limits);
}

}  // namespace autoscheduler
}  // namespace alcop

#endif
