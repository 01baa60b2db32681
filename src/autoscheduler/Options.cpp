#include "autoscheduler/Options.h"

#include "Error.h"
#include "autoscheduler/Requests.h"
#include "directive/Requests.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The GPU `name` names (see model::find_gpu); a user error, said by `who`, if none. One
 * lookup for the environment and request_gpu, so that both list the model's GPUs alike. */
const model::GpuSpec &named_gpu(const std::string &name, const std::string &who) {
    const model::GpuSpec *gpu = model::find_gpu(name);
    if (!gpu) {
        std::string known;
        for (const model::GpuSpec &g : model::all_gpus()) known += (known.empty() ? "" : ", ") + g.name;
        user_error << who << " names no GPU the model knows (" << known << ").\n";
    }
    return *gpu;
}

/** What a request (Requests.h) recorded under `tag` on the outputs, if anything: the last one
 * (of the last output that has one), as for every request. */
std::optional<std::string> requested(const std::vector<Function> &outputs, const std::string &tag) {
    std::optional<std::string> value;
    for (const Function &f : outputs) {
        if (std::optional<std::string> v = recorded(f, tag)) value = v;
    }
    return value;
}

}  // namespace

Options Options::from_environment() {
    Options o;
    if (const char *v = getenv("ALCOP_AUTOSCHEDULER_VERBOSE")) o.verbose = std::string(v) != "0" && *v;
    if (const char *v = getenv("ALCOP_AUTOSCHEDULER_TOP")) o.top = std::max(1, atoi(v));
    if (const char *v = getenv("ALCOP_AUTOSCHEDULER_GPU")) {
        o.gpu = &named_gpu(v, std::string("ALCOP_AUTOSCHEDULER_GPU=") + v);
    }
    if (const char *v = getenv("ALCOP_AUTOSCHEDULER_LIMITS")) {
        user_assert(std::string(v) == "optin" || std::string(v) == "default")
            << "ALCOP_AUTOSCHEDULER_LIMITS=" << v
            << ": say optin (the app links HalideAlcop::cuda_opt_in) or default.\n";
        if (std::string(v) == "optin") o.search.model.limits = model::RuntimeLimits::OptIn;
    }
    if (const char *v = getenv("ALCOP_AUTOSCHEDULER_CANDIDATE")) o.candidate = std::max(0, atoi(v));
    return o;
}

const model::GpuSpec &gpu_for_target(const Target &target) {
    if (target.has_feature(Target::CUDA)) {
        const int cc = target.get_cuda_capability_lower_bound();
        const char *name = cc >= 90 ? "H200" :
                           cc >= 89 ? "RTX4090" :
                           cc >= 86 ? "RTX3090" :
                           cc >= 80 ? "A100" :
                           cc >= 70 ? "V100" :
                                      nullptr;
        if (name && model::find_gpu(name)) return *model::find_gpu(name);
    }
    return model::default_gpu();
}

Settings settings_for(const std::vector<Function> &outputs, const Target &target, const Options &options) {
    Settings s;
    s.gpu = options.gpu ? options.gpu : &gpu_for_target(target);
    if (std::optional<std::string> gpu = requested(outputs, gpu_tag)) {
        s.gpu = &named_gpu(*gpu, "request_gpu(" + outputs[0].name() + ", \"" + *gpu + "\")");
    }
    s.search = options.search;
    if (std::optional<std::string> limits = requested(outputs, limits_tag)) {
        s.search.model.limits = *limits == "optin" ? model::RuntimeLimits::OptIn : model::RuntimeLimits::HalideDefault;
    }
    const std::optional<std::string> asked = requested(outputs, candidate_tag);
    s.candidate = asked ? (size_t)std::max(0, atoi(asked->c_str())) : options.candidate;
    return s;
}

std::ostream &log_stream(const Options &o) {
    return o.log ? *o.log : std::cerr;
}

}  // namespace autoscheduler
}  // namespace alcop
