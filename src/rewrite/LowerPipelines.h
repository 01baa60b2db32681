#ifndef ALCOP_LOWER_PIPELINES_H
#define ALCOP_LOWER_PIPELINES_H

/** \file
 * The ALCOP lowering pass that alcop::enable() installs, a Halide custom lowering pass (it runs
 * after the final simplification and before GPU offload), and its driver: it reads the
 * requests recorded on the pipeline's Funcs (with alcop::auto_pipeline, adds the policy's,
 * plan/AutoPipeline.h) and runs, in this order: the tensor-core analysis
 * (analysis/TensorCoreAnalysis.h, which also checks the fragments' register stages), the
 * pipelines' rewrite (InjectPipelines.h, both levels, after the input loads' alignment,
 * copy/GlobalAlignment.h, and the plans' check against the resource limits,
 * plan/ResourceLimits.h), the
 * tensor-core rewrite of the inner products (MmaInnerProduct.h), the operands' swizzle
 * (SwizzleOperands.h), the compaction of per-thread register tiles (CompactRegisters.h) and the
 * check of each kernel's register estimate, then the launch bounds (codegen/LaunchBounds.h).
 */

#include "analysis/TensorCoreAnalysis.h"
#include "directive/Requests.h"
#include "directive/TestHooks.h"
#include "plan/Swizzle.h"
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

/** The pipelines of `s` (both levels) for `requests`, the tensor-core rewrite of the inner
 * products of `uses`, and the swizzle of their operands' shared tiles, whose slots the plan
 * aligned for it when they are pipelined, then the expansion of the steady states that stream
 * those tiles (ExpandSlots.h): what LowerPipelines runs before shrinking the register tiles.
 * Appends the swizzled tiles to `swizzled` when given. */
Halide::Internal::Stmt pipelines_and_tensor_cores(const Halide::Internal::Stmt &s,
                                                  const std::map<std::string, PipelineRequest> &requests,
                                                  const std::vector<TensorCoreUse> &uses, const Options &options,
                                                  const testing::Hooks &hooks,
                                                  std::vector<SwizzledBuffer> *swizzled = nullptr);

/** The custom lowering pass that alcop::enable() installs. */
class LowerPipelines : public Halide::Internal::IRMutator {
public:
    /** `automatic`: alcop::auto_pipeline, which adds the requests of plan/AutoPipeline.h to the
     * explicit ones (which win per Func). */
    LowerPipelines(std::vector<Halide::Internal::Function> outputs, Options options, testing::Hooks hooks,
                   bool automatic = false)
        : outputs(std::move(outputs)), options_(std::move(options)), hooks(std::move(hooks)), automatic(automatic) {
    }

    /** Called once by Halide with the whole lowered pipeline. */
    Halide::Internal::Stmt mutate(const Halide::Internal::Stmt &s) override;
    using Halide::Internal::IRMutator::mutate;

    const Options &options() const {
        return options_;
    }
    /** For a later alcop::enable() on the same Pipeline: its Options (and test hooks) replace
     * these. */
    void set_options(const Options &options, const testing::Hooks &hooks, bool automatic = false) {
        options_ = options;
        this->hooks = hooks;
        this->automatic = automatic;
    }
    bool is_automatic() const {
        return automatic;
    }

private:
    std::vector<Halide::Internal::Function> outputs;
    Options options_;
    testing::Hooks hooks;
    bool automatic = false;
};

}  // namespace alcop

#endif
