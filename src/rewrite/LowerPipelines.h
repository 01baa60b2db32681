#ifndef ALCOP_LOWER_PIPELINES_H
#define ALCOP_LOWER_PIPELINES_H

/** \file
 * The ALCOP lowering pass that alcop::enable() installs, a Halide custom lowering pass (it runs
 * after the final simplification and before GPU offload), and its driver: it reads the
 * requests recorded on the pipeline's Funcs and runs, in this order, the pipelines' rewrite
 * (InjectPipelines.h, both levels, after the plans are checked against the resource limits,
 * plan/ResourceLimits.h), the compaction of per-thread register tiles (CompactRegisters.h) and
 * the launch bounds (codegen/LaunchBounds.h).
 */

#include "directive/Requests.h"
#include "directive/TestHooks.h"
#include "rewrite/InjectPipelines.h"

#include <map>
#include <string>
#include <vector>

namespace alcop {

/** The requests recorded on the Funcs of a pipeline (its outputs, everything they call,
 * and the wrappers made by Func::in()). */
std::map<std::string, PipelineRequest> collect_requests(const std::vector<Halide::Internal::Function> &outputs);

/** The launch bounds (alcop::min_blocks_per_sm) recorded on the same Funcs. */
std::map<std::string, int> collect_launch_bounds(const std::vector<Halide::Internal::Function> &outputs);

/** The custom lowering pass that alcop::enable() installs. */
class LowerPipelines : public Halide::Internal::IRMutator {
public:
    LowerPipelines(std::vector<Halide::Internal::Function> outputs, Options options, testing::Hooks hooks)
        : outputs(std::move(outputs)), options_(std::move(options)), hooks(std::move(hooks)) {
    }

    /** Called once by Halide with the whole lowered pipeline. */
    Halide::Internal::Stmt mutate(const Halide::Internal::Stmt &s) override;
    using Halide::Internal::IRMutator::mutate;

    const Options &options() const {
        return options_;
    }
    /** For a later alcop::enable() on the same Pipeline: its Options (and test hooks) replace
     * these. */
    void set_options(const Options &options, const testing::Hooks &hooks) {
        options_ = options;
        this->hooks = hooks;
    }

private:
    std::vector<Halide::Internal::Function> outputs;
    Options options_;
    testing::Hooks hooks;
};

}  // namespace alcop

#endif
