#include "plan/AutoPipeline.h"

#include "Error.h"
#include "analysis/FragmentAnalysis.h"
#include "analysis/KernelRegisters.h"
#include "analysis/PipelineAnalysis.h"
#include "model/CostModel.h"
#include "plan/PipelinePlan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <optional>
#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

constexpr int max_shared_stages = 8;
constexpr int max_register_stages = 4;
/** A stage count whose predicted time is within this of the best is good enough. */
constexpr double tolerance = 1.03;
/** The trip count assumed for a loop whose extent is not a constant. */
constexpr int64_t assumed_trips = 64;

/** Where the candidates are produced. Halide 14 has fused the gpu_threads loops of a kernel
 * around everything in it by the time the pass runs, so a Func is told per-thread by its own
 * allocation in per-thread memory around its production; a shared Func has none (it is a range
 * of the kernel's merged shared allocation). */
class FindCandidates : public IRVisitor {
    using IRVisitor::visit;

    int kernel_depth = 0, serial_depth = 0;
    std::vector<std::string> per_thread;  ///< allocations in scope, inside a kernel

    void visit(const For *op) override {
        const bool block = op->for_type == ForType::GPUBlock;
        const bool serial = kernel_depth > 0 && op->for_type == ForType::Serial;
        kernel_depth += block;
        serial_depth += serial;
        IRVisitor::visit(op);
        kernel_depth -= block;
        serial_depth -= serial;
    }

    void visit(const Allocate *op) override {
        const bool mine = kernel_depth > 0 && op->memory_type != MemoryType::GPUShared &&
                          op->memory_type != MemoryType::Heap && op->memory_type != MemoryType::GPUTexture;
        if (mine) per_thread.push_back(op->name);
        IRVisitor::visit(op);
        if (mine) per_thread.pop_back();
    }

    void visit(const ProducerConsumer *op) override {
        if (op->is_producer && kernel_depth > 0 && serial_depth > 0 && funcs.count(op->name) && !skip.count(op->name)) {
            const MemoryType type = funcs.at(op->name).schedule().memory_type();
            if (std::any_of(per_thread.begin(), per_thread.end(),
                            [&](const std::string &a) { return func_of_allocation(a) == op->name; })) {
                add(op->name, Level::Register);
            } else if (type == MemoryType::GPUShared || type == MemoryType::Auto) {
                // Halide 14 puts a Func of default memory type computed at the block level of
                // a kernel in shared memory too (e.g. an input's in() staged for a reduction).
                add(op->name, Level::Shared);
            }
        }
        IRVisitor::visit(op);
    }

    void add(const std::string &f, Level level) {
        for (const auto &c : found) {
            if (c.first == f) return;
        }
        found.emplace_back(f, level);
    }

public:
    const std::map<std::string, Function> &funcs;
    const std::set<std::string> &skip;
    std::vector<std::pair<std::string, Level>> found;  ///< in program order

    FindCandidates(const std::map<std::string, Function> &funcs, const std::set<std::string> &skip)
        : funcs(funcs), skip(skip) {
    }
};

/** The reason of an analysis user error, without the call it starts with. */
std::string reason_of(const std::string &message) {
    std::string r = message;
    const size_t call = r.find("alcop::pipeline(");
    if (call != std::string::npos) {
        const size_t colon = r.find("): ", call);
        size_t start = colon == std::string::npos ? call : colon + 3;
        // A wrapper's call names Halide's Func in parentheses: "(on Halide's A$0): ".
        if (r.compare(start, 4, "(on ") == 0) {
            const size_t end = r.find("): ", start);
            if (end != std::string::npos) start = end + 3;
        }
        r = r.substr(start);
    } else if (r.rfind("Error: ", 0) == 0) {
        r = r.substr(7);
    }
    std::replace(r.begin(), r.end(), '\n', ' ');
    while (!r.empty() && r.back() == ' ') r.pop_back();
    return r;
}

/** Why the analysis rejects `requests`, or nothing when it accepts them. */
std::optional<std::string> rejection(const Stmt &s, const std::map<std::string, PipelineRequest> &requests) {
    try {
        analyze_pipelines(s, requests);
        analyze_fragments(s, requests);
    } catch (const CompileError &e) {
        return reason_of(e.what());
    }
    return std::nullopt;
}

/** What one thread runs per iteration of a loop: arithmetic and loads, constant inner loops
 * counted by their trips and vectors by their lanes (GPU thread loops are the threads). */
class CountOps : public IRVisitor {
    using IRVisitor::visit;
    int64_t scale = 1;

    void count(const Type &t) {
        ops += scale * t.lanes();
    }
    void visit(const Add *op) override {
        count(op->type);
        IRVisitor::visit(op);
    }
    void visit(const Sub *op) override {
        count(op->type);
        IRVisitor::visit(op);
    }
    void visit(const Mul *op) override {
        count(op->type);
        IRVisitor::visit(op);
    }
    void visit(const Div *op) override {
        count(op->type);
        IRVisitor::visit(op);
    }
    void visit(const Min *op) override {
        count(op->type);
        IRVisitor::visit(op);
    }
    void visit(const Max *op) override {
        count(op->type);
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        count(op->type);
        IRVisitor::visit(op);
    }
    void visit(const For *op) override {
        const int64_t *e = as_const_int(op->extent);
        const int64_t old = scale;
        if (op->for_type != ForType::GPUThread && e) scale *= std::max<int64_t>(*e, 1);
        IRVisitor::visit(op);
        scale = old;
    }

public:
    int64_t ops = 0;
};

int64_t ops_of(const LoopBody &body) {
    CountOps c;
    for (size_t i = 0; i < body.stmts.size(); i++) {
        if (body.roles[i] == StmtRole::Compute) body.stmts[i].accept(&c);
    }
    return std::max<int64_t>(c.ops, 1);
}

/** The threads of a block: the largest product of constant gpu_threads extents nested in `s`. */
int64_t threads_in(const Stmt &s) {
    class Threads : public IRVisitor {
        using IRVisitor::visit;
        int64_t product = 1;
        void visit(const For *op) override {
            const int64_t *e = as_const_int(op->extent);
            const int64_t old = product;
            if (op->for_type == ForType::GPUThread && e) product *= *e;
            most = std::max(most, product);
            IRVisitor::visit(op);
            product = old;
        }

    public:
        int64_t most = 1;
    } t;
    s.accept(&t);
    return t.most;
}

int64_t trips_of(const For *loop) {
    const int64_t *e = as_const_int(loop->extent);
    return e ? *e : assumed_trips;
}

/** Per-thread arrays of constant size (32-bit words) of each kernel, and the kernel of each
 * loop. */
class PerThreadWords : public IRVisitor {
    using IRVisitor::visit;
    const For *kernel = nullptr;
    int thread_depth = 0;

    void visit(const For *op) override {
        const For *old = kernel;
        if (op->for_type == ForType::GPUBlock && !kernel) kernel = op;
        kernel_of[op] = kernel;
        thread_depth += op->for_type == ForType::GPUThread;
        IRVisitor::visit(op);
        thread_depth -= op->for_type == ForType::GPUThread;
        kernel = old;
    }
    void visit(const Allocate *op) override {
        if (kernel && thread_depth > 0 && op->memory_type != MemoryType::GPUShared) {
            const int64_t elements = op->constant_allocation_size();
            words[kernel][op] = elements * ((op->type.bytes() + 3) / 4);
        }
        IRVisitor::visit(op);
    }

public:
    std::map<const For *, const For *> kernel_of;
    std::map<const For *, std::map<const Allocate *, int64_t>> words;
};

/** The model's time per block of an SM for one shared stage count. */
struct SharedTiming {
    double time = 0;  ///< cycles per block
    int blocks = 1;   ///< per SM
    int64_t bytes = 0;
    int registers = 0;  ///< per thread, estimated; 0: unknown
};

class Chooser {
    const AutoLimits &limits;
    const model::GpuSpec &gpu;
    const PerThreadWords &kernels;

public:
    Chooser(const AutoLimits &limits, const PerThreadWords &kernels)
        : limits(limits), gpu(limits.gpu ? *limits.gpu : model::default_gpu()), kernels(kernels) {
    }

    /** The kernel's shared memory and the model's time per block with `stages` for every
     * buffer of loop `l` in `automatic` (others as they are). */
    SharedTiming shared_timing(KernelPipelines k, size_t l, const std::set<std::string> &automatic, int stages) {
        for (StagedBuffer &b : k.loops[l].buffers) {
            if (automatic.count(b.func)) b.stages = stages;
        }
        const KernelPlan plan = plan_kernel(k);
        const PipelineLoop &loop = k.loops[l];
        int64_t tile_bytes = 0;
        int d = std::numeric_limits<int>::max();
        for (const StagedBuffer &b : loop.buffers) {
            tile_bytes += b.end - b.begin;
            d = std::min(d, b.stages - 1);
        }
        if (!limits.async_copies(k.device)) d = std::min(d, 1);
        auto kernel = kernels.kernel_of.find(loop.loop);
        const int64_t threads =
            threads_in(kernel != kernels.kernel_of.end() && kernel->second ? Stmt(kernel->second) : loop.loop->body);
        int registers = 0;
        if (kernel != kernels.kernel_of.end() && kernel->second) {
            auto r = limits.kernel_registers.find(kernel->second->name);
            if (r != limits.kernel_registers.end()) registers = r->second;
        }
        const int blocks = std::max(model::occupancy((int)threads, registers, plan.total_bytes, gpu).blocks_per_sm, 1);
        const double load = gpu.global_latency_cycles + blocks * tile_bytes / gpu.l2_bytes_per_clk_per_sm();
        const double compute =
            std::max(blocks * (double)threads * ops_of(loop.body) / gpu.fp32_lanes_per_sm, gpu.smem_latency_cycles);
        SharedTiming t;
        t.time = model::pipeline_chain_cycles(trips_of(loop.loop), d, load, compute) / blocks;
        t.blocks = blocks;
        t.bytes = plan.total_bytes;
        t.registers = registers;
        return t;
    }

    double register_time(const FragmentLoop &l, int stages) const {
        const int64_t trips = l.one_step.defined() ? trips_of(l.loop) : l.extent;
        return model::pipeline_chain_cycles(trips, stages - 1, gpu.smem_latency_cycles, (double)ops_of(l.body));
    }

    const model::GpuSpec &spec() const {
        return gpu;
    }
};

std::string fmt(double x) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(2) << x;
    return o.str();
}

AutoChoice *find_choice(AutoReport &r, const std::string &f) {
    for (AutoChoice &c : r.choices) {
        if (c.func == f) return &c;
    }
    return nullptr;
}

/** The register stages of the fragments of tensor-core use `u`: they prefetch across the chunks
 * of the operands' shared pipeline (`requests` has their stages), R dividing the chunk's k
 * steps, within `limits.registers` by model::estimate_registers; the time of a k step is
 * model::tensor_core_step_cycles. Stages 1, with the reason, where none applies. */
AutoChoice tensor_core_register_stages(const TensorCoreUse &u, const std::map<std::string, PipelineRequest> &requests,
                                       const AutoLimits &limits, const model::GpuSpec &gpu) {
    auto stages_of = [&](const std::string &f) {
        auto r = requests.find(f);
        return r == requests.end() || r->second.level != Level::Shared ? 1 : r->second.stages;
    };
    AutoChoice choice;
    choice.func = u.accumulator;
    choice.level = Level::Register;
    const int steps = (int)u.k_tile / model::kMmaK;
    const double mma_flops =
        model::mma_flops_per_clk(u.element == BFloat(16) ? model::Element::BF16 : model::Element::F16, gpu);
    auto step_time = [&](int R) { return model::tensor_core_step_cycles(warp_tile_of(u, R), gpu, mma_flops); };
    if (stages_of(u.a) < 2 || stages_of(u.b) < 2) {
        choice.why = "its operands " + user_name(u.a) + " and " + user_name(u.b) +
                     " have no shared stages for the fragments to prefetch across";
        return choice;
    }
    if (steps < 2) {
        choice.why = "its chunks hold one k step of 16, so there is no next step to load ahead";
        return choice;
    }
    std::vector<std::pair<int, double>> fits;
    for (int R = 2; R <= std::min(steps, max_register_stages); R++) {
        if (steps % R != 0) continue;
        const int registers = model::estimate_registers(warp_tile_of(u, R), gpu);
        if (registers <= limits.registers) {
            fits.emplace_back(R, step_time(R));
        } else if (choice.why.empty()) {
            choice.why = std::to_string(R) + " register stages need about " + std::to_string(registers) +
                         " registers per thread (model::estimate_registers), more than the limit of " +
                         std::to_string(limits.registers);
        }
    }
    if (fits.empty()) return choice;
    double best = fits.front().second;
    for (const auto &f : fits) best = std::min(best, f.second);
    const auto chosen = std::find_if(fits.begin(), fits.end(), [&](const auto &f) { return f.second <= best * tolerance; });
    choice.stages = chosen->first;
    choice.predicted_gain = step_time(1) / chosen->second;
    choice.why = "ldmatrix " + std::to_string(choice.stages - 1) + " k step" + (choice.stages > 2 ? "s" : "") +
                 " ahead of the mma.sync, about " + std::to_string(model::estimate_registers(warp_tile_of(u, choice.stages), gpu)) +
                 " registers per thread of the limit of " + std::to_string(limits.registers);
    return choice;
}

std::function<void(const AutoReport &)> &observer() {
    static std::function<void(const AutoReport &)> o;
    return o;
}

}  // namespace

std::string AutoReport::to_string() const {
    std::ostringstream o;
    if (choices.empty()) {
        o << "alcop::auto_pipeline: no candidate (no Func stored in GPU shared memory or per-thread memory is "
          << "produced inside a serial loop of a GPU kernel)\n";
    }
    for (const AutoChoice &c : choices) {
        o << "alcop::auto_pipeline: " << user_name(c.func) << " (" << alcop::to_string(c.level) << "): ";
        if (c.stages > 1) {
            o << c.stages << " stages across the serial loop " << c.loop << ", predicted gain " << fmt(c.predicted_gain)
              << "x (" << c.why << ")\n";
        } else {
            o << "left as it is: " << c.why << "\n";
        }
    }
    return o.str();
}

void set_auto_pipeline_observer(std::function<void(const AutoReport &)> o) {
    observer() = std::move(o);
}

namespace {

/** What the phases of choose_pipelines share: the requests so far (explicit and automatic),
 * which of them are automatic, and the report of every candidate. */
struct Choices {
    std::map<std::string, PipelineRequest> requests;
    std::set<std::string> automatic;
    AutoReport &report;

    /** Takes the automatic request of `func` back, saying why. */
    void reject(const std::string &func, const std::string &why) {
        requests.erase(func);
        automatic.erase(func);
        find_choice(report, func)->why = why;
    }
};

/** Legality: each candidate, one at a time beside what is accepted (shared ones first: a
 * fragment may compose with them), is requested with 2 stages where the analysis accepts it. */
void accept_legal_candidates(const Stmt &s, const FindCandidates &finder, Choices &c) {
    for (Level level : {Level::Shared, Level::Register}) {
        for (const auto &candidate : finder.found) {
            if (candidate.second != level) continue;
            AutoChoice choice;
            choice.func = candidate.first;
            choice.level = level;
            std::map<std::string, PipelineRequest> with = c.requests;
            with[candidate.first] = {2, level};
            if (std::optional<std::string> why = rejection(s, with)) {
                choice.why = *why;
            } else {
                c.requests = with;
                c.automatic.insert(candidate.first);
            }
            c.report.choices.push_back(choice);
        }
    }
}

/** The shared stages of the automatic buffers of loop `l` of kernel `k`: the smallest count
 * within `tolerance` of the model's best of those that fit the kernel's shared memory. Where
 * none fits, or the model predicts the loop slower pipelined, its candidates are rejected and
 * false returned. */
bool choose_loop_shared_stages(KernelPipelines &k, size_t l, const AutoLimits &limits, Chooser &chooser,
                               Choices &c) {
    std::set<std::string> mine;
    for (const StagedBuffer &b : k.loops[l].buffers) {
        if (c.automatic.count(b.func)) mine.insert(b.func);
    }
    if (mine.empty()) return true;
    const int64_t limit = limits.shared_bytes(k.device);
    const SharedTiming base = chooser.shared_timing(k, l, mine, 1);
    std::vector<std::pair<int, SharedTiming>> fits;
    int64_t two_bytes = 0;
    for (int stages = 2; stages <= max_shared_stages; stages++) {
        SharedTiming t = chooser.shared_timing(k, l, mine, stages);
        if (stages == 2) two_bytes = t.bytes;
        if (t.bytes <= limit) fits.emplace_back(stages, t);
    }
    if (fits.empty()) {
        for (const std::string &f : mine) {
            c.reject(f, "2 stages would need " + std::to_string(two_bytes) +
                            " bytes of shared memory per block, more than the limit of " + std::to_string(limit) +
                            " bytes");
        }
        return false;
    }
    double best = fits.front().second.time;
    for (const auto &f : fits) best = std::min(best, f.second.time);
    auto chosen =
        std::find_if(fits.begin(), fits.end(), [&](const auto &f) { return f.second.time <= best * tolerance; });
    const int stages = chosen->first;
    if (chosen->second.time > base.time) {
        // The stages' shared memory costs more occupancy than the prefetch gains.
        for (const std::string &f : mine) {
            c.reject(f, "the model predicts the loop slower pipelined (" + fmt(base.time / chosen->second.time) +
                            "x with " + std::to_string(stages) + " stages: " + std::to_string(chosen->second.bytes) +
                            " bytes of shared memory per block leave " + std::to_string(chosen->second.blocks) +
                            " blocks per SM, against " + std::to_string(base.blocks) + " unpipelined)");
        }
        return false;
    }
    std::ostringstream why;
    why << chosen->second.bytes << " of " << limit << " bytes of shared memory per block, " << chosen->second.blocks
        << " blocks per SM on the " << chooser.spec().name << " model"
        << (chosen->second.registers ? " at " + std::to_string(chosen->second.registers) + " registers per thread" :
                                       std::string())
        << "; " << (limits.async_copies(k.device) ? "" : "copies not asynchronous, so 1 tile in flight; ")
        << "the smallest count within " << (int)std::round((tolerance - 1) * 100) << "% of the best of 2.."
        << fits.back().first << " within the limit";
    for (const std::string &f : mine) {
        c.requests[f].stages = stages;
        AutoChoice *choice = find_choice(c.report, f);
        choice->stages = stages;
        choice->loop = k.loops[l].loop->name;
        choice->predicted_gain = base.time / chosen->second.time;
        choice->why = why.str();
    }
    for (StagedBuffer &b : k.loops[l].buffers) {
        if (mine.count(b.func)) b.stages = stages;
    }
    return true;
}

/** Shared stages, loop by loop. A loop whose candidates are rejected loses them, and the
 * analysis runs again without them. */
void choose_shared_stages(const Stmt &s, const AutoLimits &limits, Chooser &chooser, Choices &c) {
    for (bool again = true; again;) {
        again = false;
        const PipelineAnalysis analysis = analyze_pipelines(s, c.requests);
        for (size_t i = 0; i < analysis.kernels.size() && !again; i++) {
            KernelPipelines k = analysis.kernels[i];
            for (size_t l = 0; l < k.loops.size() && !again; l++) {
                again = !choose_loop_shared_stages(k, l, limits, chooser, c);
            }
        }
    }
}

/** Register stages, loop by loop: the smallest count within `tolerance` of the model's best of
 * those whose slots fit the registers left by the kernel's other per-thread arrays and its
 * addresses (an explicit request's count where one shares the loop); none where 2 do not fit. */
void choose_register_stages(const Stmt &s, const AutoLimits &limits, const PerThreadWords &words,
                            const Chooser &chooser, Choices &c) {
    for (const FragmentLoop &l : analyze_fragments(s, c.requests)) {
        std::set<std::string> mine;
        int explicit_stages = 0;
        int64_t slot_words = 0;
        std::set<const Allocate *> slots;
        for (const Fragment &f : l.fragments) {
            if (c.automatic.count(f.func)) {
                mine.insert(f.func);
            } else {
                explicit_stages = c.requests.at(f.func).stages;
            }
            slot_words += f.elements * ((f.storage->type.bytes() + 3) / 4);
            slots.insert(f.storage);
        }
        if (mine.empty()) continue;
        int64_t others = model::kAddressAndLoopRegisters;
        auto kernel = words.kernel_of.find(l.loop);
        if (kernel != words.kernel_of.end()) {
            auto arrays = words.words.find(kernel->second);
            if (arrays != words.words.end()) {
                for (const auto &a : arrays->second) {
                    if (!slots.count(a.first)) others += a.second;
                }
            }
        }
        const int64_t budget = limits.registers - others;
        const int most = std::min<int64_t>(max_register_stages, (int64_t)l.extent + 1);
        int stages = 1;
        double best = 0;
        std::vector<std::pair<int, double>> fits;
        for (int R = 2; R <= most; R++) {
            if (explicit_stages && R != explicit_stages) continue;
            if (R * slot_words <= budget) fits.emplace_back(R, chooser.register_time(l, R));
        }
        if (!fits.empty()) {
            best = fits.front().second;
            for (const auto &f : fits) best = std::min(best, f.second);
            stages = std::find_if(fits.begin(), fits.end(), [&](const auto &f) {
                         return f.second <= best * tolerance;
                     })->first;
        }
        for (const std::string &f : mine) {
            if (stages == 1) {
                c.reject(f, std::string("2 register stages of the fragments of ") + describe_loop(l.loop) + " (" +
                                std::to_string(2 * slot_words) + " registers) do not fit in the " +
                                std::to_string(budget) + " registers per thread left of the limit of " +
                                std::to_string(limits.registers) + " (the kernel's other per-thread arrays and " +
                                std::to_string(model::kAddressAndLoopRegisters) + " for addresses take " +
                                std::to_string(others) + ")");
                continue;
            }
            c.requests[f].stages = stages;
            AutoChoice *choice = find_choice(c.report, f);
            choice->stages = stages;
            choice->loop = l.loop->name;
            choice->predicted_gain = chooser.register_time(l, 1) / best;
            choice->why = std::to_string(stages * slot_words) + " registers per thread of " + std::to_string(budget) +
                          " left under the limit of " + std::to_string(limits.registers) +
                          (explicit_stages ? "; the stages of the explicit request in the same loop" :
                                             "; the smallest count within 3% of the best of 2.." + std::to_string(most));
        }
    }
}

/** Register stages of tensor-core fragments, once the operands' shared stages are known: the
 * requests of those that get some go into `fragments`. */
void choose_tensor_core_stages(const std::vector<TensorCoreUse> &tensor_cores,
                               const std::map<std::string, PipelineRequest> &explicit_requests,
                               const AutoLimits &limits, const model::GpuSpec &gpu, Choices &c,
                               std::map<std::string, PipelineRequest> &fragments) {
    for (const TensorCoreUse &u : tensor_cores) {
        if (explicit_requests.count(u.accumulator) || u.k_tile <= 0) continue;
        AutoChoice choice = tensor_core_register_stages(u, c.requests, limits, gpu);
        if (choice.stages > 1) {
            // Across the chunks of its operands' pipeline.
            const AutoChoice *operand = find_choice(c.report, u.a);
            choice.loop = operand && !operand->loop.empty() ? operand->loop : "that pipelines " + user_name(u.a);
            fragments[u.accumulator] = {choice.stages, Level::Register};
        }
        c.report.choices.push_back(choice);
    }
}

}  // namespace

std::map<std::string, PipelineRequest> choose_pipelines(const Stmt &s, const std::map<std::string, Function> &funcs,
                                                        const std::set<std::string> &outputs,
                                                        const std::map<std::string, PipelineRequest> &explicit_requests,
                                                        const AutoLimits &limits, AutoReport *report,
                                                        const std::vector<TensorCoreUse> &tensor_cores) {
    AutoReport local;
    AutoReport &r = report ? *report : local;
    r.choices.clear();

    // The register stages of tensor-core fragments belong to the inner-product rewrite, not to
    // a fragment loop the analyses know: set aside, and chosen last.
    const std::map<std::string, int> fragments = fragment_stages(tensor_cores, explicit_requests);
    std::map<std::string, PipelineRequest> tensor_core_requests, analyzed;
    for (const auto &e : explicit_requests) {
        (fragments.count(e.first) ? tensor_core_requests : analyzed).insert(e);
    }

    // Explicit requests first, with their own errors.
    analyze_pipelines(s, analyzed);
    analyze_fragments(s, analyzed);

    std::set<std::string> skip = outputs;
    for (const auto &e : explicit_requests) skip.insert(e.first);
    FindCandidates finder(funcs, skip);
    s.accept(&finder);

    PerThreadWords words;
    s.accept(&words);
    Chooser chooser(limits, words);
    Choices c{analyzed, {}, r};
    accept_legal_candidates(s, finder, c);
    choose_shared_stages(s, limits, chooser, c);
    choose_register_stages(s, limits, words, chooser, c);
    choose_tensor_core_stages(tensor_cores, explicit_requests, limits, chooser.spec(), c, tensor_core_requests);

    // A fragment dropped above may have been the last of a loop some other fragment shares;
    // the analysis has the last word.
    if (std::optional<std::string> why = rejection(s, c.requests)) {
        internal_assert(false) << "alcop::auto_pipeline chose requests the analysis rejects: " << *why << "\n";
    }
    std::map<std::string, PipelineRequest> requests = c.requests;
    requests.insert(tensor_core_requests.begin(), tensor_core_requests.end());

    if (observer()) observer()(r);
    return requests;
}

}  // namespace alcop
