#include "alcop/Directive.h"

#include "Error.h"
#include "analysis/PipelineAnalysis.h"
#include "copy/CopyLowering.h"
#include "directive/Requests.h"
#include "directive/TestHooks.h"
#include "rewrite/LowerPipelines.h"

#include <cstring>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// The tag is "alcop.pipeline <stages> <level>"; the last tag wins.
const char *const tag_prefix = "alcop.pipeline ";
// "alcop.min_blocks_per_sm <blocks>"; the last tag wins.
const char *const launch_bounds_prefix = "alcop.min_blocks_per_sm ";

std::optional<Level> parse_level(const std::string &s) {
    if (s == "shared") return Level::Shared;
    if (s == "register") return Level::Register;
    return std::nullopt;
}

}  // namespace

const char *to_string(Level level) {
    switch (level) {
    case Level::Shared:
        return "shared";
    case Level::Register:
        return "register";
    }
    return "?";
}

Halide::Func pipeline(Halide::Func f, int stages, Level level) {
    user_assert(stages >= 1)
        << "alcop::pipeline(" << user_name(f.name()) << ", " << stages << "): the number of stages must be at "
        << "least 1 (1 means no pipelining).\n";
    user_assert(f.defined())
        << "alcop::pipeline(" << user_name(f.name()) << "): the Func has no definition.\n";
    std::ostringstream tag;
    tag << tag_prefix << stages << " " << to_string(level);
    f.add_trace_tag(tag.str());
    return f;
}

std::optional<PipelineRequest> requested_pipeline(const Function &f) {
    std::optional<PipelineRequest> result;
    for (const std::string &tag : f.get_trace_tags()) {
        if (tag.rfind(tag_prefix, 0) != 0) continue;
        std::istringstream in(tag.substr(std::string(tag_prefix).size()));
        PipelineRequest r;
        std::string level;
        in >> r.stages >> level;
        std::optional<Level> l = parse_level(level);
        internal_assert(in && l) << "Malformed ALCOP tag on " << f.name() << ": " << tag << "\n";
        r.level = *l;
        result = r;
    }
    return result;
}

Halide::Func min_blocks_per_sm(Halide::Func f, int blocks) {
    user_assert(blocks >= 1) << "alcop::min_blocks_per_sm(" << user_name(f.name()) << ", " << blocks
                             << "): at least one block must fit on an SM.\n";
    f.add_trace_tag(launch_bounds_prefix + std::to_string(blocks));
    return f;
}

std::optional<int> requested_min_blocks_per_sm(const Function &f) {
    std::optional<int> result;
    for (const std::string &tag : f.get_trace_tags()) {
        if (tag.rfind(launch_bounds_prefix, 0) == 0) result = std::stoi(tag.substr(strlen(launch_bounds_prefix)));
    }
    return result;
}

Func &Func::pipeline(int stages, Level level) {
    alcop::pipeline(*this, stages, level);
    return *this;
}

Func &Func::min_blocks_per_sm(int blocks) {
    alcop::min_blocks_per_sm(*this, blocks);
    return *this;
}

bool uses_async_copies(const Target &target, CopyKind copies) {
    return copy_kind_for(DeviceAPI::CUDA, target, copies) == CopyKind::Async;
}

bool operator==(const Options &a, const Options &b) {
    return a.target == b.target && a.copies == b.copies && a.shared_memory_limit == b.shared_memory_limit &&
           a.register_limit == b.register_limit;
}

void enable(Pipeline p, const Options &options) {
    testing::enable(std::move(p), options, testing::Hooks());
}

namespace {

void install(Pipeline p, const Options &options, const testing::Hooks &hooks, bool automatic) {
    for (const CustomLoweringPass &pass : p.custom_lowering_passes()) {
        if (auto *installed = dynamic_cast<LowerPipelines *>(pass.pass)) {
            // The last call wins, and what was compiled before may be stale.
            installed->set_options(options, hooks, automatic);
            p.invalidate_cache();
            return;
        }
    }
    std::vector<Function> outputs;
    for (const Halide::Func &f : p.outputs()) {
        outputs.push_back(f.function());
    }
    p.add_custom_lowering_pass(new LowerPipelines(outputs, options, hooks, automatic));
}

}  // namespace

void testing::enable(Pipeline p, const Options &options, const Hooks &hooks) {
    install(std::move(p), options, hooks, false);
}

void auto_pipeline(Pipeline p, const Options &options) {
    // The policy learns why a candidate is rejected by catching the analysis's user error.
    user_assert(exceptions_enabled())
        << "alcop::auto_pipeline needs Halide built with exceptions (HALIDE_WITH_EXCEPTIONS): it tells the "
        << "buffers that cannot be pipelined by the errors the analysis raises for them.\n";
    install(std::move(p), options, testing::Hooks(), true);
}

void auto_pipeline(Pipeline p, const Target &target) {
    Options options;
    options.target = target;
    auto_pipeline(std::move(p), options);
}

void enable(Pipeline p, const Target &target) {
    Options options;
    options.target = target;
    enable(std::move(p), options);
}

}  // namespace alcop
