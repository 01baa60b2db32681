#include "alcop/Autoscheduler.h"

#include "Error.h"
#include "autoscheduler/Requests.h"

namespace alcop {
namespace autoscheduler {

void request_candidate(Halide::Func output, int rank) {
    user_assert(rank >= 0) << "request_candidate(" << output.name() << ", " << rank << "): the rank is at least 0.\n";
    output.add_trace_tag(candidate_tag + std::to_string(rank));
}

void request_gpu(Halide::Func output, const std::string &gpu) {
    if (!gpu.empty()) output.add_trace_tag(gpu_tag + gpu);
}

void request_limits(Halide::Func output, const std::string &limits) {
    user_assert(limits.empty() || limits == "optin" || limits == "default")
        << "request_limits(" << output.name() << ", \"" << limits
        << "\"): say \"optin\" (the app links HalideAlcop::cuda_opt_in) or \"default\".\n";
    if (!limits.empty()) output.add_trace_tag(limits_tag + limits);
}

}  // namespace autoscheduler
}  // namespace alcop
