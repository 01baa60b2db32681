#include "rewrite/LowerPipelines.h"

#include "analysis/TensorCoreAnalysis.h"
#include "codegen/BFloat16Casts.h"
#include "codegen/LaunchBounds.h"
#include "copy/CopyLowering.h"
#include "model/GpuSpec.h"
#include "plan/AutoPipeline.h"
#include "plan/ResourceLimits.h"
#include "rewrite/CompactRegisters.h"
#include "rewrite/ExpandSlots.h"
#include "rewrite/InjectPipelines.h"
#include "rewrite/MmaInnerProduct.h"
#include "rewrite/SwizzleOperands.h"
#include "rewrite/WholeChunks.h"
#include "rewrite/ZeroFilledTails.h"

#include "Error.h"

#include <cstdlib>
#include <iostream>
#include <set>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

LoweringObserver &observer() {
    static LoweringObserver o;
    return o;
}

}  // namespace

void set_lowering_observer(LoweringObserver o) {
    observer() = std::move(o);
}

namespace {

/** Whether the automatic choices are printed: ALCOP_AUTO_PIPELINE_DEBUG=1 or HL_DEBUG_CODEGEN >= 1. */
bool print_auto_choices() {
    for (const char *var : {"ALCOP_AUTO_PIPELINE_DEBUG", "HL_DEBUG_CODEGEN"}) {
        const char *v = getenv(var);
        if (v && atoi(v) >= 1) return true;
    }
    return false;
}

/** alcop::auto_pipeline: the explicit requests and the policy's (plan/AutoPipeline.h), under
 * the limits check_resource_limits() applies (plan/ResourceLimits.h). */
std::map<std::string, PipelineRequest>
automatic_requests(const Stmt &s, const std::vector<Function> &outputs,
                   const std::map<std::string, PipelineRequest> &explicit_requests,
                   const std::vector<TensorCoreUse> &tensor_cores, const Options &options) {
    const std::map<std::string, Function> env = pipeline_functions(outputs);
    std::set<std::string> output_names;
    for (const Function &f : outputs) {
        output_names.insert(f.name());
    }
    AutoLimits limits;
    limits.shared_bytes = [&](DeviceAPI device) { return kernel_shared_memory_limit(options, device); };
    limits.registers = fragment_register_limit(options);
    limits.async_copies = [&](DeviceAPI device) {
        return copy_kind_for(device, options.target, options.copies) == CopyKind::Async;
    };
    limits.gpu = &model::default_gpu();
    for (const KernelRegisters &k : estimate_kernel_registers(compact_thread_registers(s), tensor_cores,
                                                              fragment_stages(tensor_cores, explicit_requests))) {
        limits.kernel_registers[k.kernel] = k.registers;
    }
    AutoReport report;
    std::map<std::string, PipelineRequest> requests =
        choose_pipelines(s, env, output_names, explicit_requests, limits, &report, tensor_cores);
    // A candidate left as it is gets one line; what was chosen, on request.
    for (const AutoChoice &c : report.choices) {
        if (c.stages == 1) {
            user_warning << "alcop::auto_pipeline: " << user_name(c.func) << " (" << to_string(c.level)
                         << ") is left as it is: " << c.why << "\n";
        }
    }
    if (print_auto_choices()) {
        std::cerr << report.to_string();
    }
    return requests;
}

}  // namespace

Stmt LowerPipelines::mutate(const Stmt &input) {
    // The passes, in order: the chunks that a branch on a runtime K makes whole proven so
    // (rewrite/WholeChunks.h; the tensor-core analysis takes constant step loops only), the
    // last chunk of any other K zero-filled past K and stepped whole (rewrite/ZeroFilledTails.h),
    // the tensor-core analysis, the pipelines (both levels, after the input loads' alignment
    // that Halide's simplifier lost, copy/GlobalAlignment.h, for the copies' cp.async), the
    // tensor-core rewrite of the inner products (it reads the consumers' loads after the
    // pipeline rewrite moved them into their slots, so that each ldmatrix row is one address
    // plus constants), then the per-thread register
    // tiles shrunk to one thread's window (the rewrite's register slots included), whose sizes
    // each kernel's register estimate is checked on (plan/ResourceLimits.h), then the launch
    // bounds marked on the kernels they ask for, and the CUDA kernels' casts to and from bf16
    // lowered to integer arithmetic (codegen/BFloat16Casts.h). The operands' tiles are
    // swizzled right after the rewrite that builds the ldmatrix rows (it measures the tiles'
    // strides on unswizzled indices), writers and readers by one pass through one map
    // (rewrite/SwizzleOperands.h); last, the steady states the pipeline rewrite marked are
    // expanded by their slots (rewrite/ExpandSlots.h), which folds the slot terms the passes
    // before it add and read.
    // (With the test hook that emulates the markers, any GPU target.)
    const Stmt s = zero_fill_k_tails(prove_whole_chunks(input), outputs);
    const std::vector<TensorCoreUse> tensor_cores =
        analyze_tensor_cores(s, outputs, options_.target, hooks.emulates_tensor_cores);
    const std::map<std::string, PipelineRequest> requests =
        automatic ? automatic_requests(s, outputs, collect_requests(outputs), tensor_cores, options_) :
                    collect_requests(outputs);
    Stmt result = pipelines_and_tensor_cores(s, requests, tensor_cores, options_, hooks);
    result = compact_thread_registers(result);
    const std::map<std::string, int> blocks_per_sm = collect_launch_bounds(outputs);
    check_kernel_registers(estimate_kernel_registers(result, tensor_cores, fragment_stages(tensor_cores, requests)),
                           options_, kernel_launch_bounds(result, blocks_per_sm));
    result = hooks.output ? hooks.output(result) : result;
    result = mark_launch_bounds(result, blocks_per_sm);
    result = lower_bfloat16_casts(result);
    if (observer()) {
        observer()(input, result, requests);
    }
    return result;
}

Stmt pipelines_and_tensor_cores(const Stmt &s, const std::map<std::string, PipelineRequest> &requests,
                                const std::vector<TensorCoreUse> &uses, const Options &options,
                                const testing::Hooks &hooks, std::vector<SwizzledBuffer> *swizzled) {
    check_fragment_stages(uses, requests, fragment_register_limit(options));
    const std::map<std::string, int> register_stages = fragment_stages(uses, requests);
    std::map<std::string, PipelineRequest> pipelines = requests;
    for (const auto &r : register_stages) {
        pipelines.erase(r.first);
    }
    std::map<std::string, model::TensorCoreStream> operands;  // each with what it streams to mma.sync
    std::set<std::string> pipelined;
    for (const TensorCoreUse &u : uses) {
        const auto r = register_stages.find(u.accumulator);
        const model::TensorCoreStream stream{model::lane_accumulators(u.tile.warp_m, u.tile.warp_n),
                                             r == register_stages.end() ? 1 : r->second,
                                             fragment_register_limit(options)};
        for (const std::string &operand : {u.a, u.b}) {
            operands[operand].merge(stream);
        }
    }
    for (const auto &r : pipelines) {
        if (r.second.stages > 1 && r.second.level == Level::Shared) pipelined.insert(r.first);
    }
    std::vector<SwizzleAlignedSlots> aligned_slots;
    Stmt result = inject_pipelines(s, pipelines, options, hooks, operands, &aligned_slots);
    std::vector<OperandRows> operand_rows;
    result = rewrite_inner_products(result, uses, &operand_rows, register_stages);
    result = swizzle_operands(result, operand_rows, pipelined, aligned_slots, swizzled);
    return expand_slots(result);
}

std::map<std::string, PipelineRequest> collect_requests(const std::vector<Function> &outputs) {
    return collect_recorded(outputs, requested_pipeline);
}

std::map<std::string, int> collect_launch_bounds(const std::vector<Function> &outputs) {
    return collect_recorded(outputs, requested_min_blocks_per_sm);
}

}  // namespace alcop
