#include "autoscheduler/AlcopAutoscheduler.h"

#include "Error.h"
#include "autoscheduler/Candidates.h"
#include "autoscheduler/ContractionSchedule.h"
#include "autoscheduler/PlainSchedule.h"
#include "autoscheduler/RowReductionSchedule.h"
#include "autoscheduler/ScheduleSteps.h"

#include <iomanip>
#include <iostream>
#include <sstream>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;
using Halide::Func;  // not alcop::Func, which names the directives' subclass

namespace {

/** Whether the tensor-core schedule applies to `c` (16-bit operands) on `target` with `gpu`;
 * if not, why not, in *why. A K that is a runtime size gets them where it is its estimate. */
bool tensor_cores_apply(const Contraction &c, const Target &target, const model::GpuSpec &gpu, std::string *why) {
    const std::vector<int> md = c.m_dims();
    const ContractionRVar &r0 = c.rvars[0];
    const Function &f = c.reduction;
    auto arg0_is = [](const Operand &o, const std::string &a, const std::string &b) {
        const Variable *v = o.args.empty() ? nullptr : o.args[0].as<Variable>();
        return v && (v->name == a || v->name == b);
    };
    if (!target.has_feature(Target::CUDA)) {
        *why = "the target " + target.to_string() + " is not CUDA, and tensor cores are CUDA's mma.sync";
    } else if (target.get_cuda_capability_lower_bound() < 80) {
        *why = "mma.sync.m16n8k16 needs sm_80 or later, and the target asks for sm_" +
               std::to_string(target.get_cuda_capability_lower_bound());
    } else if (!gpu.has_mma_sync()) {
        *why = "the modelled GPU " + gpu.name + " (" + gpu.arch() + ") has no mma.sync.m16n8k16";
    } else if (!is_const(r0.extent) && !r0.extent_is_size()) {
        std::ostringstream e;
        e << r0.extent;
        *why = "the extent of " + r0.name + ", " + e.str() + ", is neither a constant nor a Param or buffer size, " +
               "so no branch of it runs whole 16-wide mma.sync k steps";
    } else if (r0.extent_estimate % model::kMmaK != 0) {
        *why = "the " + std::string(is_const(r0.extent) ? "extent" : "estimated extent") + " of " + r0.name + " (" +
               std::to_string(r0.extent_estimate) + ") is not a multiple of 16, the k step of mma.sync";
    } else if (f.args()[0] != c.dims[c.n_dim()].reduction_var || f.args()[1] != c.dims[md[0]].reduction_var) {
        *why = f.name() + "'s first two dimensions are not N and M, the layout of the instruction's accumulators";
    } else if (!arg0_is(c.a, r0.name, c.dims[md[0]].reduction_var) ||
               !arg0_is(c.b, r0.name, c.dims[c.n_dim()].reduction_var)) {
        *why = "an operand's innermost dimension is neither the reduction nor its M or N dimension, so ldmatrix "
               "cannot read its rows";
    } else {
        return true;
    }
    return false;
}

/** The problem a tensor-core schedule solves: its M tile runs along the first M dimension only,
 * any further M dimension indexes blocks like a batch. */
model::Problem tensor_core_problem(const Contraction &c) {
    model::Problem p = c.problem;
    const std::vector<int> md = c.m_dims();
    p.m = c.dims[md[0]].extent;
    p.batch = 1;
    for (size_t i = 0; i < c.dims.size(); i++) {
        if ((int)i != md[0] && (int)i != c.n_dim()) p.batch *= c.dims[i].extent;
    }
    return p;
}

/** `bytes` as the model's reasons write them: "48 KiB", "1.5 KiB". */
std::string kib(int64_t bytes) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(bytes % 1024 ? 1 : 0) << bytes / 1024.0 << " KiB";
    return os.str();
}

/** Why none of `search`'s candidates is one to apply to `c` (choose() found none): how many
 * broke each limit of `options` on `gpu`, and the least shared memory and registers any
 * candidate of the space needs, the two limits a user can compare with. */
std::string why_none_fits(const Contraction &c, const model::SearchResult &search, const model::GpuSpec &gpu,
                          const model::SearchOptions &options) {
    const model::RuntimeLimits limits = options.model.limits;
    int64_t least_smem = -1;
    int least_registers = -1;
    for (model::Schedule s : model::enumerate_schedules(options.space)) {
        s.smem_stages = s.reg_stages = 1;  // the stages only add to both
        const int registers = model::estimate_registers(s, gpu);
        if (least_smem < 0 || s.smem_bytes() < least_smem) least_smem = s.smem_bytes();
        if (least_registers < 0 || registers < least_registers) least_registers = registers;
    }
    std::ostringstream os;
    os << "none of the " << search.enumerated << (options.space.tensor_cores ? " tensor-core" : "") << " candidates "
       << (search.feasible ? "both fits" : "fits") << " the modelled " << gpu.name << " under the "
       << model::to_string(limits) << " limits (" << kib(model::smem_limit_bytes(gpu, limits))
       << " of shared memory per block, " << model::register_limit(gpu, limits) << " registers per thread)"
       << (search.feasible ? " and can be laid out over the dimensions of " + c.output.name() : std::string()) << ": "
       << search.rejected_smem << " need more shared memory, " << search.rejected_registers << " more registers, "
       << search.rejected_other << " more threads or block slots";
    if (search.feasible > 0) os << ", and the " << search.feasible << " that fit cannot be laid out";
    os << " (the least any needs: " << kib(least_smem) << " of shared memory, about " << least_registers
       << " registers per thread)";
    return os.str();
}

/** The one-paragraph summary printed on every call. */
std::string summary(const Contraction &c, const Result &r, const model::SearchOptions &search, const Choice &choice) {
    const Mapping &m = choice.chosen();
    std::ostringstream os;
    os << std::fixed << std::setprecision(1);
    os << "Alcop autoscheduler: " << c.describe() << "\n"
       << "  model: " << r.gpu->name << ", " << model::to_string(search.model.limits) << " limits ("
       << model::smem_limit_bytes(*r.gpu, search.model.limits) / 1024 << " KiB shared, "
       << model::register_limit(*r.gpu, search.model.limits) << " registers); " << r.search.enumerated
       << " candidates ranked (" << r.search.feasible << " feasible, " << r.applicable
       << " expressible and tiling the estimates exactly) in " << r.search.seconds * 1e3 << " ms\n"
       << "  chosen: " << m.s.to_string() << " (M tile " << m_tile_text(m) << "), predicted "
       << std::setprecision(2) << r.chosen.total_us << " us (" << model::to_string(r.chosen.bound) << ")";
    if (choice.rank > 0) {
        os << "; tuning: candidate " << choice.rank << " in the order of preference, the model's choice "
           << choice.preferred[0].s.to_string() << " predicts "
           << model::predict(c.problem, choice.preferred[0].s, *r.gpu, search.model).total_us << " us";
    } else {
        os << why_not_best_ranked(c, r.search, m);
    }
    os << "\n";
    return os.str();
}

/** Where a tensor-core schedule over a runtime K runs mma.sync. */
std::string runtime_k_tensor_cores(const Contraction &c, const Chunking &k) {
    return "mma.sync where " + c.rvars[0].name + "'s extent " + k.exact_where +
           " (its chunks whole 16-wide k steps), and at any other extent with the last chunk's tail zero-filled";
}

/** The comment lines that head the schedule source of a contraction. */
std::string contraction_header(const Contraction &c, const Result &r, const Choice &choice,
                               const std::vector<std::string> &warnings) {
    const Mapping &m = choice.chosen();
    std::ostringstream os;
    os << std::fixed << "// " << c.describe() << "\n"
       << "// Model: " << r.gpu->name << "; " << r.search.enumerated << " candidates ranked in " << std::setprecision(2)
       << r.search.seconds * 1e3 << " ms.\n"
       << "// Chosen: " << m.s.to_string() << ", M tile " << m_tile_text(m) << ", predicted " << r.chosen.total_us
       << " us (" << model::to_string(r.chosen.bound) << ")"
       << (choice.rank ? ", candidate " + std::to_string(choice.rank) + " (tuning)" :
                         std::string(", the model's choice"))
       << ".\n";
    const Chunking &k = r.chunking;
    const std::string rk = c.rvars[0].name;
    if (k.exact && k.condition.defined()) {
        os << "// " << rk << " runs in chunks of " << m.s.kt << ", whole where its extent " << k.exact_where
           << ", and with the last chunk guarded (its tail read at clamped coordinates) at every other extent.\n";
    } else if (k.guarded) {
        os << "// " << rk << " runs in chunks of " << m.s.kt << " with the last chunk guarded (its tail read at "
           << "clamped coordinates) at every extent: " << k.why_guarded << ".\n";
    }
    if (r.tensor_cores) {
        os << "// Tensor cores: mma.sync.m16n8k16 on " << model::to_string(c.problem.element)
           << " operands, fp32 accumulators; warp tile " << m.s.tm << "x" << m.s.tn << ".\n";
        if (k.condition.defined()) os << "// " << runtime_k_tensor_cores(c, k) << ".\n";
    }
    for (const std::string &w : warnings) os << "// Note: " << w << ".\n";
    return os.str();
}

}  // namespace

Result autoschedule(const Pipeline &pipeline, const Target &target, const Options &options) {
    user_assert(target.has_gpu_feature())
        << "The Alcop autoscheduler schedules GPU kernels, but the target " << target.to_string()
        << " has no GPU feature (add opencl or cuda, e.g. host-cuda-cuda_capability_80).\n";
    std::ostream &log = log_stream(options);
    Pipeline p = pipeline;
    Result r;
    std::vector<Function> outputs;
    for (const Func &f : p.outputs()) outputs.push_back(f.function());
    const Settings settings = settings_for(outputs, target, options);
    r.gpu = settings.gpu;
    Schedule schedule(p, target);
    const std::string header =
        "// Schedule generated by the Alcop autoscheduler (libautoschedule_alcop) for " + target.to_string() + ".\n";

    std::string why;
    std::optional<Contraction> c = recognize_contraction(outputs, &why);
    if (c && c->output_is_reduction) {
        split_off_reduction(schedule, *c);
        c = recognize_contraction(outputs, &why);
        internal_assert(!c || c->output_accumulates) << "rfactor({}) did not make the output accumulate a copy\n";
    }
    if (!c) {
        r.why_not = why;
        std::string why_not_rows;
        r.row_reductions = recognize_row_reductions(outputs, &why_not_rows);
        if (r.row_reductions) {
            const std::string described = r.row_reductions->describe();  // before the schedule splits
            schedule_row_reductions(schedule, *r.row_reductions);
            const std::string shape = std::to_string(row_reduction_lanes) + " lanes a row, " +
                                      std::to_string(row_reduction_rows_per_block) + " rows a block";
            log << "Alcop autoscheduler: " << described << "; " << shape << "\n";
            r.schedule_source = schedule.source(header + "// " + described + ".\n// " + shape +
                                                ": each reduction split across a row's lanes (rfactor), the lanes' "
                                                "partials and the rows' values in shared memory.\n");
            return r;
        }
        user_warning << "Alcop autoscheduler: neither a contraction it recognizes (" << why
                     << ") nor row reductions (" << why_not_rows
                     << "); applying a plain GPU schedule without staging or pipelining.\n";
        schedule_plain(schedule, p);
        r.schedule_source = schedule.source(header + "// Not a recognized contraction: " + why +
                                            ".\n// Not row reductions: " + why_not_rows +
                                            ".\n// A plain GPU schedule: no shared-memory staging, no pipelining.\n");
        return r;
    }
    // --- Tensor cores for 16-bit operands where they apply; the FP32 SIMT schedule (on the
    // converted operands) with a warning where not.
    model::SearchOptions search_options = settings.search;
    const model::Problem simt_problem = c->problem;
    std::vector<std::string> warnings;
    if (c->problem.element != model::Element::F32) {
        std::string why_not;
        r.tensor_cores = tensor_cores_apply(*c, target, *r.gpu, &why_not);
        if (r.tensor_cores) {
            c->problem = tensor_core_problem(*c);
            search_options.space = model::SearchSpace::for_tensor_cores();
        } else {
            r.tensor_cores_why_not = why_not;
            warnings.push_back(std::string("the ") + model::to_string(c->problem.element) + " operands of " +
                               c->output.name() + " get no tensor cores (" + why_not +
                               "); applying the FP32 SIMT schedule to the converted operands");
        }
    }

    // --- Search: every candidate ranked by the model, then the one to apply.
    r.search = model::search(c->problem, *r.gpu, search_options);
    Choice choice = choose(*c, r.search, settings.candidate);
    std::string tensor_cores_rejected;
    if (!choice.any() && r.tensor_cores) {
        // No tensor-core candidate fits the limits (the smallest warp tile needs more registers
        // than the SIMT thread tiles, its swizzled slots more shared memory): the FP32 SIMT
        // search, as where tensor cores do not apply. Its model counts the staged 16-bit tiles
        // at 4 bytes an element, so what it finds fits.
        r.tensor_cores = false;
        r.tensor_cores_why_not = tensor_cores_rejected = why_none_fits(*c, r.search, *r.gpu, search_options);
        warnings.push_back("no tensor-core schedule of " + c->output.name() + " fits (" + tensor_cores_rejected +
                           "); applying the FP32 SIMT schedule to its converted " +
                           model::to_string(c->problem.element) + " operands");
        c->problem = simt_problem;
        search_options = settings.search;
        r.search = model::search(c->problem, *r.gpu, search_options);
        choice = choose(*c, r.search, settings.candidate);
    }
    user_assert(choice.any()) << "Alcop autoscheduler: no schedule of " << c->output.name()
                              << " fits: " << why_none_fits(*c, r.search, *r.gpu, search_options)
                              << (tensor_cores_rejected.empty() ? "" : "; before those, " + tensor_cores_rejected)
                              << ". The contraction: " << c->describe() << ".\n";
    r.contraction = c;
    r.applicable = choice.exact;
    const Mapping &m = choice.chosen();
    r.chosen = model::predict(c->problem, m.s, *r.gpu, settings.search.model);
    std::string said = summary(*c, r, search_options, choice);

    // --- The schedule.
    if (choice.exact == 0) {
        warnings.push_back("no candidate tiles the estimated sizes of " + c->output.name() +
                           " exactly, so the estimated problem runs the clamped copies");
    }
    if (r.chosen.limits == model::RuntimeLimits::OptIn) {
        // The pass checks the kernel against the launch limits; these are the ones the model
        // chose under (the app links HalideAlcop::cuda_opt_in), above the defaults.
        schedule.set_launch_limits(r.chosen.smem_limit, r.chosen.register_limit,
                                   "The launch limits the model chose under: " + r.gpu->name +
                                       "'s opt-in maximum (the app links HalideAlcop::cuda_opt_in).");
    }
    r.chunking = r.tensor_cores ? schedule_tensor_core_contraction(schedule, *c, m, warnings) :
                                  schedule_contraction(schedule, *c, m, warnings);
    if (r.tensor_cores && r.chunking.condition.defined()) said += "  " + runtime_k_tensor_cores(*c, r.chunking) + "\n";

    // --- What it did: the source, the warnings, the summary.
    r.schedule_source = schedule.source(header + contraction_header(*c, r, choice, warnings));
    for (const std::string &w : warnings) user_warning << "Alcop autoscheduler: " << w << ".\n";
    log << said;
    if (options.verbose) {
        log << r.search.report(options.top, /*explain=*/true);
    }
    return r;
}

void register_with_halide() {
    Halide::Pipeline::add_autoscheduler("Alcop", [](const Halide::Pipeline &p, const Halide::Target &target,
                                                    const Halide::MachineParams &params,
                                                    Halide::AutoSchedulerResults *results) {
        Result r = autoschedule(p, target, Options::from_environment());
        results->scheduler_name = "Alcop";
        results->target = target;
        results->machine_params_string = params.to_string();
        results->schedule_source = r.schedule_source;
    });
}

}  // namespace autoscheduler
}  // namespace alcop
