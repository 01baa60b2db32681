#include "autoscheduler/ScheduleSteps.h"

#include "alcop/Directive.h"
#include "Error.h"
#include "alcop/Autoscheduler.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;
using Halide::Func;  // not alcop::Func, which names the directives' subclass

namespace {

const char *tail_text(TailStrategy t) {
    switch (t) {
    case TailStrategy::RoundUp:
        return "TailStrategy::RoundUp";
    case TailStrategy::GuardWithIf:
        return "TailStrategy::GuardWithIf";
    case TailStrategy::ShiftInwards:
        return "TailStrategy::ShiftInwards";
    default:
        return "TailStrategy::Auto";
    }
}

const char *memory_text(MemoryType m) {
    switch (m) {
    case MemoryType::Register:
        return "MemoryType::Register";
    case MemoryType::GPUShared:
        return "MemoryType::GPUShared";
    case MemoryType::Stack:
        return "MemoryType::Stack";
    case MemoryType::Heap:
        return "MemoryType::Heap";
    default:
        return "MemoryType::Auto";
    }
}

/** The identifiers of the printed source: Func handles and Vars/RVars, unique among each
 * other (and never `pipeline` or `target`, the apply_schedule function's parameters). */
class Names {
public:
    /** The identifier of a Var or RVar, declared (into `decls`) on first use. */
    std::string var(const Dim &d) {
        auto it = var_ids.find({d.name, d.rvar});
        if (it != var_ids.end()) return it->second;
        std::string id = unique_id(d.name);
        var_ids[{d.name, d.rvar}] = id;
        decls << (d.rvar ? "RVar " : "Var ") << id << "(\"" << d.name << "\");\n";
        return id;
    }

    /** The identifier of a new Func handle for the Halide Func `name`. The "$n" that Halide
     * appends to names used twice in a process is left out: the source must not depend on
     * what else the process compiled. */
    std::string new_func(const std::string &name) {
        std::string base;
        for (size_t i = 0; i < name.size(); i++) {
            if (name[i] == '$' && i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) {
                while (i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) i++;
                continue;
            }
            base += name[i];
        }
        std::string id = unique_id(base);
        func_ids.push_back(id);
        return id;
    }

    const std::string &func(FuncRef f) const {
        internal_assert(f.defined() && f.id < (int)func_ids.size()) << "a step names an undeclared Func\n";
        return func_ids[f.id];
    }

    std::ostringstream decls;

private:
    std::string unique_id(const std::string &name) {
        std::string base = Schedule::sanitize(name), id = base;
        for (int i = 1; used.count(id) || id == "pipeline" || id == "target"; i++) id = base + "_" + std::to_string(i);
        used.insert(id);
        return id;
    }

    std::map<std::pair<std::string, bool>, std::string> var_ids;  // by name and RVar-ness
    std::vector<std::string> func_ids;                            // by FuncRef::id
    std::set<std::string> used;
};

std::string condition_text(const Condition &c, const Names &names) {
    std::string text;
    for (const Condition::Term &t : c.terms) {
        std::string term;
        switch (t.kind) {
        case Condition::Term::Kind::RDomExtentIs:
            term = "alcop::autoscheduler::rdom_extent(" + names.func(t.func) + ", " + std::to_string(t.dim) +
                   ") == " + std::to_string(t.value);
            break;
        case Condition::Term::Kind::RDomExtentDivides:
            term = "alcop::autoscheduler::rdom_extent(" + names.func(t.func) + ", " + std::to_string(t.dim) + ") % " +
                   std::to_string(t.value) + " == 0";
            break;
        case Condition::Term::Kind::OutputExtentDivides:
            term = names.func(t.func) + ".output_buffer().dim(" + std::to_string(t.dim) + ").extent() % " +
                   std::to_string(t.value) + " == 0";
            break;
        case Condition::Term::Kind::OutputExtentAtLeast:
            term = names.func(t.func) + ".output_buffer().dim(" + std::to_string(t.dim) +
                   ").extent() >= " + std::to_string(t.value);
            break;
        }
        text += (text.empty() ? "" : " && ") + term;
    }
    return text;
}

std::string stage_text(const StageRef &s, const Names &names) {
    std::string text = names.func(s.func);
    if (s.update >= 0) text += ".update(" + std::to_string(s.update) + ")";
    if (s.specialization.defined()) text += ".specialize(" + condition_text(s.specialization, names) + ")";
    return text;
}

std::string dims_text(const std::vector<Dim> &dims, Names &names) {
    std::string s;
    for (size_t i = 0; i < dims.size(); i++) s += (i ? ", " : "") + names.var(dims[i]);
    return s;
}

/** `{{a, 8}, {b, 1}}`: dimensions with their extents, as a braced list of pairs. */
std::string extents_text(const std::vector<std::pair<Dim, int>> &extents, Names &names) {
    std::string s;
    for (size_t i = 0; i < extents.size(); i++) {
        s += (i ? ", {" : "{") + names.var(extents[i].first) + ", " + std::to_string(extents[i].second) + "}";
    }
    return "{" + s + "}";
}

std::vector<std::pair<Var, int>> var_extents(const std::vector<std::pair<Dim, int>> &extents) {
    std::vector<std::pair<Var, int>> v;
    for (const auto &[d, e] : extents) v.emplace_back(Var(d.name), e);
    return v;
}

std::vector<RVar> rvars(const std::vector<Dim> &dims) {
    std::vector<RVar> r;
    for (const Dim &d : dims) r.emplace_back(d.name);
    return r;
}

// --- The two interpreters of a StepCall, side by side: what it does and what it says.

void apply_call(const StepCall &c, Stage stage, Func func, const Schedule &schedule) {
    const std::vector<Dim> &d = c.dims;
    switch (c.method) {
    case StepCall::Method::Split:
        stage.split(d[0].halide(), d[1].halide(), d[2].halide(), c.factor, c.tail);
        break;
    case StepCall::Method::Fuse:
        stage.fuse(d[0].halide(), d[1].halide(), d[2].halide());
        break;
    case StepCall::Method::Rename:
        stage.rename(d[0].halide(), d[1].halide());
        break;
    case StepCall::Method::Reorder: {
        std::vector<VarOrRVar> vs;
        for (const Dim &x : d) vs.push_back(x.halide());
        stage.reorder(vs);
        break;
    }
    case StepCall::Method::GpuBlocks:
        if (d.size() == 1) stage.gpu_blocks(d[0].halide());
        if (d.size() == 2) stage.gpu_blocks(d[0].halide(), d[1].halide());
        if (d.size() == 3) stage.gpu_blocks(d[0].halide(), d[1].halide(), d[2].halide());
        break;
    case StepCall::Method::GpuThreads:
        if (d.size() == 1) stage.gpu_threads(d[0].halide());
        if (d.size() == 2) stage.gpu_threads(d[0].halide(), d[1].halide());
        if (d.size() == 3) stage.gpu_threads(d[0].halide(), d[1].halide(), d[2].halide());
        break;
    case StepCall::Method::GpuSingleThread:
        stage.gpu_single_thread();
        break;
    case StepCall::Method::Unroll:
        stage.unroll(d[0].halide());
        break;
    case StepCall::Method::Vectorize:
        stage.vectorize(d[0].halide());
        break;
    case StepCall::Method::ComputeAt:
        if (d[0].rvar) {
            func.compute_at(schedule.handle(c.at), RVar(d[0].name));
        } else {
            func.compute_at(schedule.handle(c.at), Var(d[0].name));
        }
        break;
    case StepCall::Method::ComputeRoot:
        func.compute_root();
        break;
    case StepCall::Method::StoreIn:
        func.store_in(c.memory);
        break;
    case StepCall::Method::BoundExtent:
        func.bound_extent(Var(d[0].name), c.factor);
        break;
    case StepCall::Method::ReorderStorage: {
        std::vector<Var> vs;
        for (const Dim &x : d) vs.push_back(Var(x.name));
        func.reorder_storage(vs);
        break;
    }
    }
}

std::string call_text(const StepCall &c, Names &names) {
    const std::vector<Dim> &d = c.dims;
    // Vars are declared on first use, and the first printer of these sources used them in an
    // order GCC chose: the operands of `".fuse(" + var(a) + ", " + var(b) + ...` right to left.
    // Declaring in that order keeps every source byte-identical to the ones written before.
    if (c.method == StepCall::Method::Fuse || c.method == StepCall::Method::Rename ||
        (c.method == StepCall::Method::GpuThreads && d.size() == 2)) {
        for (size_t i = d.size(); i-- > 0;) names.var(d[i]);
    }
    switch (c.method) {
    case StepCall::Method::Split: {
        // var() in argument order: the order of the declarations follows first use.
        std::string s = ".split(" + names.var(d[0]) + ", ";
        s += names.var(d[1]) + ", ";
        s += names.var(d[2]) + ", " + std::to_string(c.factor);
        if (c.tail != TailStrategy::Auto) s += std::string(", ") + tail_text(c.tail);
        return s + ")";
    }
    case StepCall::Method::Fuse:
        return ".fuse(" + dims_text(d, names) + ")";
    case StepCall::Method::Rename:
        return ".rename(" + dims_text(d, names) + ")";
    case StepCall::Method::Reorder:
        return ".reorder(" + dims_text(d, names) + ")";
    case StepCall::Method::GpuBlocks:
        return ".gpu_blocks(" + dims_text(d, names) + ")";
    case StepCall::Method::GpuThreads:
        return ".gpu_threads(" + dims_text(d, names) + ")";
    case StepCall::Method::GpuSingleThread:
        return ".gpu_single_thread()";
    case StepCall::Method::Unroll:
        return ".unroll(" + names.var(d[0]) + ")";
    case StepCall::Method::Vectorize:
        return ".vectorize(" + names.var(d[0]) + ")";
    case StepCall::Method::ComputeAt: {
        std::string s = ".compute_at(" + names.func(c.at) + ", ";
        return s + names.var(d[0]) + ")";
    }
    case StepCall::Method::ComputeRoot:
        return ".compute_root()";
    case StepCall::Method::StoreIn:
        return std::string(".store_in(") + memory_text(c.memory) + ")";
    case StepCall::Method::BoundExtent: {
        std::string s = ".bound_extent(" + names.var(d[0]) + ", ";
        return s + std::to_string(c.factor) + ")";
    }
    case StepCall::Method::ReorderStorage:
        return ".reorder_storage(" + dims_text(d, names) + ")";
    }
    return "";
}

bool is_func_method(StepCall::Method m) {
    return m == StepCall::Method::ComputeAt || m == StepCall::Method::ComputeRoot || m == StepCall::Method::StoreIn ||
           m == StepCall::Method::BoundExtent || m == StepCall::Method::ReorderStorage;
}

size_t dims_of(StepCall::Method m) {
    switch (m) {
    case StepCall::Method::Split:
    case StepCall::Method::Fuse:
        return 3;
    case StepCall::Method::Rename:
        return 2;
    case StepCall::Method::Unroll:
    case StepCall::Method::Vectorize:
    case StepCall::Method::ComputeAt:
    case StepCall::Method::BoundExtent:
        return 1;
    default:
        return 0;  // any number (checked by Halide), or none
    }
}

/** A TensorCoreTile or ThreadTile step: `stage`'s block tile over x (N) and y (M) laid out in
 * tiles of m x n (a warp's or a thread's). */
Step block_layout_step(Step::Kind kind, StageRef stage, const Dim &x, const Dim &y, int m, int n,
                       const std::vector<Dim> &within_chunk, const std::vector<Dim> &chunks) {
    Step s{kind};
    s.stage = std::move(stage);
    s.x = x;
    s.y = y;
    s.tile_m = m;
    s.tile_n = n;
    s.within_chunk = within_chunk;
    s.chunks = chunks;
    return s;
}

}  // namespace

// --- Chain

Chain::Chain(Schedule &schedule, StageRef stage, bool calls_on_new_lines)
    : schedule(schedule), next_new_line(calls_on_new_lines) {
    step.kind = Step::Kind::Calls;
    step.stage = std::move(stage);
}

Chain &Chain::add(StepCall c) {
    internal_assert(!added) << "a call added to a chain already done\n";
    internal_assert(dims_of(c.method) == 0 || c.dims.size() == dims_of(c.method))
        << "a call with the wrong dimensions\n";
    internal_assert(!is_func_method(c.method) || step.stage.is_func()) << "a Func directive on a Stage\n";
    c.new_line = next_new_line;
    step.calls.push_back(std::move(c));
    return *this;
}

Chain &Chain::split(const Dim &old, const Dim &outer, const Dim &inner, int factor, TailStrategy tail) {
    StepCall c{StepCall::Method::Split, {old, outer, inner}};
    c.factor = factor;
    c.tail = tail;
    return add(c);
}

Chain &Chain::fuse(const Dim &inner, const Dim &outer, const Dim &fused) {
    return add({StepCall::Method::Fuse, {inner, outer, fused}});
}

Chain &Chain::rename(const Dim &old, const Dim &now) {
    return add({StepCall::Method::Rename, {old, now}});
}

Chain &Chain::reorder(const std::vector<Dim> &dims) {
    return add({StepCall::Method::Reorder, dims});
}

Chain &Chain::gpu_blocks(const std::vector<Dim> &dims) {
    internal_assert(!dims.empty() && dims.size() <= 3);
    return add({StepCall::Method::GpuBlocks, dims});
}

Chain &Chain::gpu_threads(const std::vector<Dim> &dims) {
    internal_assert(!dims.empty() && dims.size() <= 3);
    return add({StepCall::Method::GpuThreads, dims});
}

Chain &Chain::gpu_single_thread() {
    return add({StepCall::Method::GpuSingleThread, {}});
}

Chain &Chain::unroll(const Dim &d) {
    return add({StepCall::Method::Unroll, {d}});
}

Chain &Chain::vectorize(const Dim &d) {
    return add({StepCall::Method::Vectorize, {d}});
}

Chain &Chain::compute_at(FuncRef f, const Dim &loop) {
    StepCall c{StepCall::Method::ComputeAt, {loop}};
    c.at = f;
    return add(c);
}

Chain &Chain::compute_root() {
    return add({StepCall::Method::ComputeRoot, {}});
}

Chain &Chain::store_in(MemoryType memory) {
    StepCall c{StepCall::Method::StoreIn, {}};
    c.memory = memory;
    return add(c);
}

Chain &Chain::bound_extent(const Dim &var, int extent) {
    StepCall c{StepCall::Method::BoundExtent, {var}};
    c.factor = extent;
    return add(c);
}

Chain &Chain::reorder_storage(const std::vector<Dim> &dims) {
    return add({StepCall::Method::ReorderStorage, dims});
}

Chain &Chain::new_line(bool on) {
    next_new_line = on;
    return *this;
}

void Chain::done() {
    internal_assert(!added) << "a chain done twice\n";
    added = true;
    schedule.add(std::move(step));
}

// --- Schedule

Dim fuse_into_one(Chain &s, const std::vector<Dim> &dims) {
    Dim fused;
    for (const Dim &d : dims) {
        if (fused.name.empty()) {
            fused = d;
        } else {
            const Dim both{fused.name + "_" + d.name};
            s.fuse(fused, d, both);
            fused = both;
        }
    }
    return fused;
}

Schedule::Schedule(Pipeline p, Target target) : p(std::move(p)), target(std::move(target)) {
}

FuncRef Schedule::pipeline_func(const Function &f) {
    auto it = by_name.find(f.name());
    if (it != by_name.end()) return it->second;
    // The index in Pipeline::get_func order, which is the realization order of the pipeline
    // as it is now (an rfactor adds a Func).
    std::vector<Function> outputs;
    for (const Func &o : p.outputs()) outputs.push_back(o.function());
    const std::map<std::string, Function> env = build_environment(outputs);
    const std::vector<std::string> order = topological_order(outputs, env);
    const auto pos = std::find(order.begin(), order.end(), f.name());
    internal_assert(pos != order.end()) << f.name() << " is not a Func of the pipeline\n";
    Step s{Step::Kind::DeclareFunc};
    s.origin = Step::Origin::PipelineFunc;
    s.index = (int)(pos - order.begin());
    add(std::move(s));
    return {(int)funcs.size() - 1};
}

FuncRef Schedule::wrapper(FuncRef of, FuncRef in) {
    Step s{Step::Kind::DeclareFunc};
    s.origin = Step::Origin::Wrapper;
    s.of = of;
    s.in = in;
    add(std::move(s));
    return {(int)funcs.size() - 1};
}

FuncRef Schedule::rfactor(FuncRef of, const std::vector<std::pair<Dim, Dim>> &pairs) {
    Step s{Step::Kind::DeclareFunc};
    s.origin = Step::Origin::RFactor;
    s.of = of;
    s.rfactored = pairs;
    add(std::move(s));
    return {(int)funcs.size() - 1};
}

void Schedule::pipeline(FuncRef f, int stages, bool register_level) {
    Step s{Step::Kind::Pipeline};
    s.func = f;
    s.value = stages;
    s.register_level = register_level;
    add(std::move(s));
}

void Schedule::clamp_to_input_bounds(FuncRef f, const std::vector<int> &dims, const std::string &comment) {
    Step s{Step::Kind::Clamp};
    s.func = f;
    s.clamped = dims;
    s.comment = comment;
    add(std::move(s));
}

void Schedule::block_tile(StageRef stage, const Dim &x, const Dim &y, int block_m, int block_n,
                          const std::vector<std::pair<Dim, int>> &rows, const std::vector<Dim> &batches,
                          TailStrategy m_tail, TailStrategy n_tail) {
    Step s = block_layout_step(Step::Kind::BlockTile, std::move(stage), x, y, block_m, block_n, {}, {});
    s.extents = rows;
    s.batches = batches;
    s.tail = m_tail;
    s.n_tail = n_tail;
    add(std::move(s));
}

void Schedule::block_accumulators(FuncRef acc, FuncRef output, const Dim &block_loop,
                                  const std::vector<std::pair<Dim, int>> &tile) {
    Step s{Step::Kind::BlockAccumulators};
    s.func = acc;
    s.at = output;
    s.x = block_loop;
    s.extents = tile;
    add(std::move(s));
}

void Schedule::tensor_core_tile(StageRef stage, const Dim &x, const Dim &y, int warp_m, int warp_n,
                                const std::vector<Dim> &within_chunk, const std::vector<Dim> &chunks) {
    add(block_layout_step(Step::Kind::TensorCoreTile, std::move(stage), x, y, warp_m, warp_n, within_chunk, chunks));
}

void Schedule::thread_tile(StageRef stage, const Dim &x, const Dim &y, int thread_m, int thread_n,
                           const std::vector<Dim> &within_chunk, const std::vector<Dim> &chunks,
                           const std::vector<Dim> &rows, TailStrategy tail) {
    Step s =
        block_layout_step(Step::Kind::ThreadTile, std::move(stage), x, y, thread_m, thread_n, within_chunk, chunks);
    s.rows = rows;
    s.tail = tail;
    add(std::move(s));
}

void Schedule::tensor_cores(FuncRef f, int warp_m, int warp_n) {
    Step s{Step::Kind::TensorCores};
    s.func = f;
    s.tile_m = warp_m;
    s.tile_n = warp_n;
    add(std::move(s));
}

void Schedule::register_fragment(FuncRef f, const Dim &dense, int extent) {
    Step s{Step::Kind::RegisterFragment};
    s.func = f;
    s.x = dense;
    s.value = extent;
    add(std::move(s));
}

void Schedule::staged_copy(StageRef stage, const std::vector<Dim> &dims, int vector_width, int threads_x,
                           int threads, bool unroll_rounds) {
    Step s{Step::Kind::StagedCopy};
    s.stage = std::move(stage);
    s.copy.dims = dims;
    s.copy.vector_width = vector_width;
    s.copy.threads_x = threads_x;
    s.copy.threads = threads;
    s.copy.unroll_rounds = unroll_rounds;
    add(std::move(s));
}

void Schedule::enable() {
    Step s{Step::Kind::Enable};
    s.shared_memory_limit = launch_limits.shared_memory_bytes;
    s.register_limit = launch_limits.registers;
    s.comment = launch_limits.why;
    add(std::move(s));
}

Func Schedule::handle(FuncRef f) const {
    internal_assert(f.defined() && f.id < (int)funcs.size()) << "a step names an undeclared Func\n";
    return funcs[f.id];
}

Expr Schedule::expr(const Condition &c) const {
    Expr e;
    for (const Condition::Term &t : c.terms) {
        Expr term;
        switch (t.kind) {
        case Condition::Term::Kind::RDomExtentIs:
            term = rdom_extent(handle(t.func), t.dim) == (int)t.value;
            break;
        case Condition::Term::Kind::RDomExtentDivides:
            term = rdom_extent(handle(t.func), t.dim) % (int)t.value == 0;
            break;
        case Condition::Term::Kind::OutputExtentDivides:
            term = handle(t.func).output_buffer().dim(t.dim).extent() % (int)t.value == 0;
            break;
        case Condition::Term::Kind::OutputExtentAtLeast:
            term = handle(t.func).output_buffer().dim(t.dim).extent() >= (int)t.value;
            break;
        }
        e = e.defined() ? (e && term) : term;
    }
    return e;
}

Stage Schedule::stage_of(const StageRef &s) const {
    Func f = handle(s.func);
    Stage stage = s.update >= 0 ? f.update(s.update) : Stage(f);
    return s.specialization.defined() ? stage.specialize(expr(s.specialization)) : stage;
}

// The interpreter that applies a step (its twin, print_step, is in source() below).
void Schedule::add(Step step) {
    switch (step.kind) {
    case Step::Kind::DeclareFunc: {
        Func f;
        switch (step.origin) {
        case Step::Origin::PipelineFunc:
            f = p.get_func(step.index);
            break;
        case Step::Origin::Wrapper:
            f = step.in.defined() ? handle(step.of).in(handle(step.in)) : handle(step.of).in();
            break;
        case Step::Origin::RFactor: {
            std::vector<std::pair<RVar, Var>> pairs;
            for (const auto &[rvar, var] : step.rfactored) pairs.emplace_back(RVar(rvar.name), Var(var.name));
            f = handle(step.of).update(0).rfactor(pairs);
            break;
        }
        }
        by_name[f.name()] = {(int)funcs.size()};
        funcs.push_back(f);
        break;
    }
    case Step::Kind::Calls: {
        Stage stage = stage_of(step.stage);
        Func f = handle(step.stage.func);
        for (const StepCall &c : step.calls) apply_call(c, stage, f, *this);
        break;
    }
    case Step::Kind::Pipeline:
        alcop::pipeline(handle(step.func), step.value, step.register_level ? Level::Register : Level::Shared);
        break;
    case Step::Kind::Clamp:
        alcop::autoscheduler::clamp_to_input_bounds(handle(step.func), step.clamped);
        break;
    case Step::Kind::BlockTile: {
        std::vector<Var> batches;
        for (const Dim &d : step.batches) batches.emplace_back(d.name);
        alcop::schedule_block_tile(stage_of(step.stage), Var(step.x.name), Var(step.y.name), step.tile_m, step.tile_n,
                                   var_extents(step.extents), batches, step.tail, step.n_tail);
        break;
    }
    case Step::Kind::BlockAccumulators:
        alcop::store_block_accumulators(handle(step.func), handle(step.at), Var(step.x.name),
                                        var_extents(step.extents));
        break;
    case Step::Kind::TensorCoreTile:
        alcop::schedule_tensor_core_tile(stage_of(step.stage), Var(step.x.name), Var(step.y.name), step.tile_m,
                                         step.tile_n, rvars(step.within_chunk), rvars(step.chunks));
        break;
    case Step::Kind::ThreadTile: {
        std::vector<Var> rows;
        for (const Dim &d : step.rows) rows.emplace_back(d.name);
        alcop::schedule_thread_tile(stage_of(step.stage), Var(step.x.name), Var(step.y.name), step.tile_m, step.tile_n,
                                    rvars(step.within_chunk), rvars(step.chunks), rows, step.tail);
        break;
    }
    case Step::Kind::TensorCores:
        alcop::tensor_cores(handle(step.func), step.tile_m, step.tile_n);
        break;
    case Step::Kind::StagedCopy: {
        std::vector<Var> dims;
        for (const Dim &d : step.copy.dims) dims.emplace_back(d.name);
        alcop::schedule_staged_copy(stage_of(step.stage), dims, step.copy.vector_width, step.copy.threads_x,
                                    step.copy.threads, step.copy.unroll_rounds);
        break;
    }
    case Step::Kind::RegisterFragment:
        if (step.x.name.empty()) {
            alcop::schedule_register_fragment(handle(step.func));
        } else {
            alcop::schedule_register_fragment(handle(step.func), Var(step.x.name), step.value);
        }
        break;
    case Step::Kind::Enable:
        if (step.shared_memory_limit || step.register_limit) {
            alcop::Options options;
            options.target = target;
            options.shared_memory_limit = step.shared_memory_limit;
            options.register_limit = step.register_limit;
            alcop::enable(p, options);
        } else {
            alcop::enable(p, target);
        }
        break;
    }
    steps.push_back(std::move(step));
}

std::string Schedule::source(const std::string &header) const {
    Names names;
    std::ostringstream funcs_text, body;
    size_t declared = 0;  // Func declarations printed so far: the next one's FuncRef::id
    bool declared_in_body = false;
    auto print_step = [&](const Step &step) {
        if (!step.comment.empty()) body << "// " << step.comment << "\n";
        switch (step.kind) {
        case Step::Kind::DeclareFunc: {
            std::string init;
            switch (step.origin) {
            case Step::Origin::PipelineFunc:
                init = "pipeline.get_func(" + std::to_string(step.index) + ")";
                break;
            case Step::Origin::Wrapper:
                init = names.func(step.of) + ".in(" + (step.in.defined() ? names.func(step.in) : "") + ")";
                break;
            case Step::Origin::RFactor:
                if (step.rfactored.empty()) {
                    init = names.func(step.of) + ".update(0).rfactor(std::vector<std::pair<RVar, Var>>())";
                } else {
                    init = names.func(step.of) + ".update(0).rfactor({";
                    for (size_t i = 0; i < step.rfactored.size(); i++) {
                        init += std::string(i ? ", " : "") + "{" + names.var(step.rfactored[i].first) + ", " +
                                names.var(step.rfactored[i].second) + "}";
                    }
                    init += "})";
                }
                break;
            }
            const std::string id = names.new_func(funcs[declared++].name());
            // An rfactor of named RVars needs the stage calls before it (their split) and the
            // Vars' declarations: it goes where it runs, and so does every later declaration
            // (one may name it, and pipeline.get_func indices count the Funcs it adds).
            declared_in_body = declared_in_body || !step.rfactored.empty();
            (declared_in_body ? body : funcs_text) << "Func " << id << " = " << init << ";\n";
            break;
        }
        case Step::Kind::Calls:
            body << stage_text(step.stage, names);
            for (const StepCall &c : step.calls) body << (c.new_line ? "\n    " : "") << call_text(c, names);
            body << ";\n";
            break;
        case Step::Kind::Pipeline:
            body << "alcop::pipeline(" << names.func(step.func) << ", " << step.value
                 << (step.register_level ? ", alcop::Level::Register" : "") << ");\n";
            break;
        case Step::Kind::Clamp:
            body << "alcop::autoscheduler::clamp_to_input_bounds(" << names.func(step.func);
            if (!step.clamped.empty()) {
                body << ", {";
                for (size_t i = 0; i < step.clamped.size(); i++) body << (i ? ", " : "") << step.clamped[i];
                body << "}";
            }
            body << ");\n";
            break;
        case Step::Kind::BlockTile: {
            std::string text = "alcop::schedule_block_tile(" + stage_text(step.stage, names) + ", ";
            text += names.var(step.x) + ", ";
            text += names.var(step.y) + ", " + std::to_string(step.tile_m) + ", " + std::to_string(step.tile_n);
            // The tails as far as one differs from the helper's default, GuardWithIf.
            const bool n_shifted = step.n_tail != TailStrategy::GuardWithIf;
            const bool shifted = n_shifted || step.tail != TailStrategy::GuardWithIf;
            if (!step.extents.empty() || !step.batches.empty() || shifted) {
                text += ", " + extents_text(step.extents, names);
            }
            if (!step.batches.empty() || shifted) text += ", {" + dims_text(step.batches, names) + "}";
            if (shifted) text += std::string(", ") + tail_text(step.tail);
            if (n_shifted) text += std::string(", ") + tail_text(step.n_tail);
            body << text << ");\n";
            break;
        }
        case Step::Kind::BlockAccumulators: {
            const std::string acc = names.func(step.func), at = names.func(step.at);
            body << "alcop::store_block_accumulators(" << acc << ", " << at << ", " << names.var(step.x) << ", "
                 << extents_text(step.extents, names) << ");\n";
            break;
        }
        case Step::Kind::TensorCoreTile: {
            // Vars in argument order: the order of the declarations follows first use.
            std::string text = "alcop::schedule_tensor_core_tile(" + stage_text(step.stage, names) + ", ";
            text += names.var(step.x) + ", ";
            text += names.var(step.y) + ", " + std::to_string(step.tile_m) + ", " + std::to_string(step.tile_n);
            if (!step.within_chunk.empty() || !step.chunks.empty()) {
                text += ", {" + dims_text(step.within_chunk, names) + "}";
                text += ", {" + dims_text(step.chunks, names) + "}";
            }
            body << text << ");\n";
            break;
        }
        case Step::Kind::ThreadTile: {
            std::string text = "alcop::schedule_thread_tile(" + stage_text(step.stage, names) + ", ";
            text += names.var(step.x) + ", ";
            text += names.var(step.y) + ", " + std::to_string(step.tile_m) + ", " + std::to_string(step.tile_n);
            const bool tail = step.tail != TailStrategy::Auto;
            if (!step.within_chunk.empty() || !step.chunks.empty() || !step.rows.empty() || tail) {
                text += ", {" + dims_text(step.within_chunk, names) + "}";
                text += ", {" + dims_text(step.chunks, names) + "}";
            }
            if (!step.rows.empty() || tail) text += ", {" + dims_text(step.rows, names) + "}";
            if (tail) text += std::string(", ") + tail_text(step.tail);
            body << text << ");\n";
            break;
        }
        case Step::Kind::TensorCores:
            body << "alcop::tensor_cores(" << names.func(step.func) << ", " << step.tile_m << ", " << step.tile_n
                 << ");\n";
            break;
        case Step::Kind::RegisterFragment:
            body << "alcop::schedule_register_fragment(" << names.func(step.func);
            if (!step.x.name.empty()) body << ", " << names.var(step.x) << ", " << step.value;
            body << ");\n";
            break;
        case Step::Kind::StagedCopy:
            body << "alcop::schedule_staged_copy(" << stage_text(step.stage, names) << ", {"
                 << dims_text(step.copy.dims, names) << "}, " << step.copy.vector_width << ", " << step.copy.threads_x
                 << ", " << step.copy.threads << (step.copy.unroll_rounds ? "" : ", false") << ");\n";
            break;
        case Step::Kind::Enable:
            if (step.shared_memory_limit || step.register_limit) {
                body << "alcop::Options options;\n"
                     << "options.target = target;\n"
                     << "options.shared_memory_limit = " << step.shared_memory_limit << ";\n"
                     << "options.register_limit = " << step.register_limit << ";\n"
                     << "alcop::enable(pipeline, options);\n";
            } else {
                body << "alcop::enable(pipeline, target);\n";
            }
            break;
        }
    };
    for (const Step &s : steps) print_step(s);
    std::ostringstream os;
    os << header << "// Uses `pipeline` and `target`, the Pipeline and Target being scheduled (the parameters of\n"
       << "// the apply_schedule function of Halide's .schedule.h; in a Generator: get_pipeline() and\n"
       << "// get_target()), and needs \"alcop/Alcop.h\" (link HalideAlcop::HalideAlcop).\n\n"
       << funcs_text.str() << "\n"
       << names.decls.str() << "\n"
       << body.str();
    return os.str();
}

std::string Schedule::sanitize(const std::string &name) {
    std::string id;
    for (char ch : name) id += std::isalnum((unsigned char)ch) ? ch : '_';
    if (id.empty() || std::isdigit((unsigned char)id[0])) id = "v" + id;
    return id;
}

}  // namespace autoscheduler
}  // namespace alcop
