#include "autoscheduler/AlcopAutoscheduler.h"

#include "alcop/Directive.h"
#include "Error.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;
using Halide::Func;  // not alcop::Func, which names the directives' subclass

namespace {

// Width, in elements, of the staged copies' vectors: 16 bytes of FP32, what cp.async moves at
// once and what the model's copy cost assumes.
constexpr int copy_vector_width = 4;

/** A loop dimension by name: a pure Var or an RVar. */
struct Dim {
    std::string name;
    bool rvar = false;
    VarOrRVar halide() const {
        return VarOrRVar(name, rvar);
    }
};

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

/** The C++ source of the schedule, written next to the directives that apply it: Var/RVar
 * declarations, Func handles from the Pipeline, and one statement per stage. */
class ScheduleText {
public:
    /** The C++ identifier of a Var or RVar, declared on first use. */
    std::string var(const Dim &d) {
        auto it = var_ids.find({d.name, d.rvar});
        if (it != var_ids.end()) return it->second;
        std::string id = unique_id(d.name);
        var_ids[{d.name, d.rvar}] = id;
        decls << (d.rvar ? "RVar " : "Var ") << id << "(\"" << d.name << "\");\n";
        return id;
    }

    /** Declare a Func handle `Func id = init;` for the Halide Func `name`. The "$n" that Halide
     * appends to names used twice in a process is left out of the identifier. */
    std::string func(const std::string &name, const std::string &init) {
        auto it = func_ids.find(name);
        if (it != func_ids.end()) return it->second;
        std::string base;
        for (size_t i = 0; i < name.size(); i++) {
            if (name[i] == '$' && i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) {
                while (i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) i++;
                continue;
            }
            base += name[i];
        }
        std::string id = unique_id(base);
        func_ids[name] = id;
        funcs << "Func " << id << " = " << init << ";\n";
        return id;
    }

    std::string func_id(const std::string &name) const {
        return func_ids.at(name);
    }

    std::ostringstream header, body;

    std::string str() const {
        std::ostringstream os;
        os << header.str()
           << "// Uses `pipeline` and `target`, the Pipeline and Target being scheduled (the parameters of\n"
           << "// the apply_schedule function of Halide's .schedule.h; in a Generator: get_pipeline() and\n"
           << "// get_target()), and needs \"Directive.h\" and \"autoscheduler/AlcopAutoscheduler.h\".\n\n"
           << funcs.str() << "\n"
           << decls.str() << "\n"
           << body.str();
        return os.str();
    }

    static std::string sanitize(const std::string &name) {
        std::string id;
        for (char ch : name) id += std::isalnum((unsigned char)ch) ? ch : '_';
        if (id.empty() || std::isdigit((unsigned char)id[0])) id = "v" + id;
        return id;
    }

private:
    std::string unique_id(const std::string &name) {
        std::string base = sanitize(name), id = base;
        for (int i = 1; used.count(id) || id == "pipeline" || id == "target"; i++) id = base + "_" + std::to_string(i);
        used.insert(id);
        return id;
    }

    std::map<std::pair<std::string, bool>, std::string> var_ids;  // by name and RVar-ness
    std::map<std::string, std::string> func_ids;
    std::set<std::string> used;
    std::ostringstream decls, funcs;
};

/** A Stage being scheduled: every directive is applied to Halide and written as C++. */
class StageWriter {
public:
    StageWriter(Stage stage, std::string handle, ScheduleText &text)
        : stage(std::move(stage)), handle(std::move(handle)), text(text) {
    }

    StageWriter &split(const Dim &old, const Dim &outer, const Dim &inner, int factor,
                       TailStrategy tail = TailStrategy::Auto) {
        stage.split(old.halide(), outer.halide(), inner.halide(), factor, tail);
        std::ostringstream os;
        os << ".split(" << text.var(old) << ", " << text.var(outer) << ", " << text.var(inner) << ", " << factor;
        if (tail != TailStrategy::Auto) os << ", " << tail_text(tail);
        os << ")";
        calls.push_back(os.str());
        return *this;
    }

    StageWriter &fuse(const Dim &inner, const Dim &outer, const Dim &fused) {
        stage.fuse(inner.halide(), outer.halide(), fused.halide());
        calls.push_back(".fuse(" + text.var(inner) + ", " + text.var(outer) + ", " + text.var(fused) + ")");
        return *this;
    }

    StageWriter &rename(const Dim &old, const Dim &now) {
        stage.rename(old.halide(), now.halide());
        calls.push_back(".rename(" + text.var(old) + ", " + text.var(now) + ")");
        return *this;
    }

    StageWriter &reorder(const std::vector<Dim> &dims) {
        std::vector<VarOrRVar> vs;
        std::string s = ".reorder(";
        for (size_t i = 0; i < dims.size(); i++) {
            vs.push_back(dims[i].halide());
            s += (i ? ", " : "") + text.var(dims[i]);
        }
        stage.reorder(vs);
        calls.push_back(s + ")");
        return *this;
    }

    StageWriter &gpu_blocks(const std::vector<Dim> &dims) {
        internal_assert(!dims.empty() && dims.size() <= 3);
        std::string s = ".gpu_blocks(";
        for (size_t i = 0; i < dims.size(); i++) s += (i ? ", " : "") + text.var(dims[i]);
        if (dims.size() == 1) stage.gpu_blocks(dims[0].halide());
        if (dims.size() == 2) stage.gpu_blocks(dims[0].halide(), dims[1].halide());
        if (dims.size() == 3) stage.gpu_blocks(dims[0].halide(), dims[1].halide(), dims[2].halide());
        calls.push_back(s + ")");
        return *this;
    }

    StageWriter &gpu_threads(const Dim &x, const Dim &y) {
        stage.gpu_threads(x.halide(), y.halide());
        calls.push_back(".gpu_threads(" + text.var(x) + ", " + text.var(y) + ")");
        return *this;
    }

    StageWriter &gpu_threads(const Dim &x) {
        stage.gpu_threads(x.halide());
        calls.push_back(".gpu_threads(" + text.var(x) + ")");
        return *this;
    }

    StageWriter &gpu_single_thread() {
        stage.gpu_single_thread();
        calls.push_back(".gpu_single_thread()");
        return *this;
    }

    StageWriter &unroll(const Dim &d) {
        stage.unroll(d.halide());
        calls.push_back(".unroll(" + text.var(d) + ")");
        return *this;
    }

    StageWriter &vectorize(const Dim &d) {
        stage.vectorize(d.halide());
        calls.push_back(".vectorize(" + text.var(d) + ")");
        return *this;
    }

    /** Writes the statement. */
    void done() {
        if (calls.empty()) return;
        text.body << handle;
        for (const std::string &c : calls) text.body << "\n    " << c;
        text.body << ";\n";
        calls.clear();
    }

private:
    Stage stage;
    std::string handle;
    ScheduleText &text;
    std::vector<std::string> calls;
};

/** How a model candidate maps onto the contraction's dimensions. */
struct Mapping {
    model::Schedule s;
    int bx = 0, by = 1;      // the M block tile over the first and second M dimensions
    bool divisible = false;  // the estimated output is a whole number of block tiles
    bool k_divisible = false;
};

/** The candidate as tiles of `c`, or nothing if our schedule cannot express it. */
std::optional<Mapping> map_candidate(const Contraction &c, const model::Schedule &s) {
    // Register fragments (R >= 2) need a thread's fragment to be a constant number of
    // elements: with one M dimension (GEMM, batched GEMM) TM (or TN) values; with two (an
    // implicit-GEMM conv's pixel tile) its bounds go through the fused thread variable.
    if (s.reg_stages > 1 && c.m_dims().size() != 1) return std::nullopt;
    Mapping m;
    m.s = s;
    const std::vector<int> md = c.m_dims();
    const int64_t ex = c.dims[md[0]].extent, ey = md.size() > 1 ? c.dims[md[1]].extent : 1;
    const int64_t n = c.dims[c.n_dim()].extent, k = c.rvars[0].extent_estimate;
    if (md.size() == 1) {
        m.bx = s.bm;
        m.by = 1;
    } else {
        // A BM-pixel tile as bx * by, the thread tile TM along x: the widest bx that tiles
        // the estimated extents exactly, else the widest that fits.
        int best = 0;
        for (int bx = s.bm; bx >= s.tm; bx /= 2) {
            if (bx % s.tm || s.bm % bx) continue;
            if (ex % bx == 0 && ey % (s.bm / bx) == 0) {
                best = bx;
                break;
            }
        }
        if (!best) {
            for (int bx = s.bm; bx >= s.tm; bx /= 2) {
                if (bx % s.tm == 0 && s.bm % bx == 0 && (bx <= ex || bx == s.tm)) {
                    best = bx;
                    break;
                }
            }
        }
        if (!best) return std::nullopt;
        m.bx = best;
        m.by = s.bm / best;
    }
    if (m.bx % s.tm) return std::nullopt;
    m.divisible = n % s.bn == 0 && ex % m.bx == 0 && ey % m.by == 0;
    m.k_divisible = k % s.kt == 0;
    // Where a chunk is one k step (the branch for sizes other than a constant K the k tile
    // divides), fragments have no step loop of their own and pipeline only composed with a
    // shared-level pipeline (S >= 2).
    const bool one_step_branch = !is_const(c.rvars[0].extent) || !m.k_divisible;
    if (s.reg_stages > 1 && s.smem_stages < 2 && one_step_branch) return std::nullopt;
    return m;
}

/** A condition as a Halide Expr and as C++. */
struct Condition {
    Expr expr;  // undefined: always true
    std::string text;
    void and_with(const Expr &e, const std::string &t) {
        expr = expr.defined() ? (expr && e) : e;
        text = text.empty() ? t : text + " && " + t;
    }
};

/** The extents of an operand's tile: each argument's range when the N, M and chunk variables
 * run over one block tile and one chunk of kt, every other variable fixed; -1 where the range
 * is not a constant. */
std::vector<int64_t> tile_extents(const Contraction &c, const Operand &o, const Mapping &m, int kt) {
    Scope<Interval> scope;
    const Function &f = c.reduction;
    for (const std::string &v : f.args()) scope.push(v, Interval(0, 0));
    const std::vector<int> md = c.m_dims();
    scope.push(c.dims[c.n_dim()].reduction_var, Interval(0, m.s.bn - 1));
    scope.push(c.dims[md[0]].reduction_var, Interval(0, m.bx - 1));
    if (md.size() > 1) scope.push(c.dims[md[1]].reduction_var, Interval(0, m.by - 1));
    for (size_t i = 0; i < c.rvars.size(); i++) {
        scope.push(c.rvars[i].name, Interval(0, i == 0 ? kt - 1 : 0));
    }
    std::vector<int64_t> extents;
    for (const Expr &arg : o.args) {
        Interval in = bounds_of_expr_in_scope(arg, scope);
        int64_t e = -1;
        if (in.is_bounded()) {
            const Expr extent = simplify(in.max - in.min + 1);  // as_const_int points into it
            if (const int64_t *i = as_const_int(extent)) e = *i;
        }
        extents.push_back(e);
    }
    return extents;
}

/** Schedules one staged copy: all threads of the block (threads_x x threads_y), each copying
 * whole vectors along the innermost dimension when `vectorize`. */
void schedule_copy(StageWriter &s, const std::vector<Dim> &args, bool vectorize, int threads_x, int threads) {
    std::vector<Dim> dims = args;
    if (vectorize) {
        Dim o{args[0].name + "_o"}, v{args[0].name + "_v"};
        // RoundUp: the tile's extent is a multiple of the vector here, so nothing is added.
        s.split(args[0], o, v, copy_vector_width, TailStrategy::RoundUp).vectorize(v);
        dims[0] = o;
    }
    Dim t = dims[0];
    for (size_t i = 1; i < dims.size(); i++) {
        Dim fused{"t" + std::to_string(i)};
        s.fuse(t, dims[i], fused);
        t = fused;
    }
    Dim to{"t_o"}, ti{"t_i"}, tx{"t_x"}, ty{"t_y"};
    s.split(t, to, ti, threads, TailStrategy::GuardWithIf)
        .split(ti, ty, tx, threads_x)
        .reorder({tx, ty, to})
        .gpu_threads(tx, ty)
        .unroll(to);
    s.done();
}

/** The loop structure of a block of `c`: the names of the split dimensions. */
struct BlockLoops {
    Dim n_t, n_r;         // N: thread, register
    Dim m_t, mx_r;        // M: thread (fused over x and y when two), register (along x)
    std::vector<Dim> reg; // the unrolled register-tile loops, innermost first
};

/** Splits the N and M dimensions of a stage of the accumulating Func (region: one block tile)
 * into threads and register tiles. */
BlockLoops split_block(StageWriter &s, const Contraction &c, const Mapping &m) {
    const std::vector<int> md = c.m_dims();
    const std::string n = c.dims[c.n_dim()].reduction_var, mx = c.dims[md[0]].reduction_var;
    BlockLoops b;
    b.n_t = {n + "_t"};
    b.n_r = {n + "_r"};
    b.mx_r = {mx + "_r"};
    s.split({n}, b.n_t, b.n_r, m.s.tn).split({mx}, {mx + "_t"}, b.mx_r, m.s.tm);
    if (md.size() > 1) {
        const std::string my = c.dims[md[1]].reduction_var;
        b.m_t = {mx + "_" + my + "_t"};
        s.fuse({mx + "_t"}, {my}, b.m_t);
    } else {
        b.m_t = {mx + "_t"};
    }
    b.reg = {b.n_r, b.mx_r};
    return b;
}

/** The name of the serial chunk loop of the update. */
Dim chunk_loop(const Contraction &c) {
    return {ScheduleText::sanitize(c.rvars[0].name) + "_o", true};
}

/** The name of the loop over the k steps of a chunk. */
Dim step_loop(const Contraction &c) {
    return {ScheduleText::sanitize(c.rvars[0].name) + "_i", true};
}

/** Schedules the update: the reduction loops, then threads and register tiles. Chunks of kt
 * (kt > 1, where the extent is known to divide): the first RDom variable split by kt, its
 * chunks fused with the RDom's other variables into one serial loop, so that the pipeline runs
 * across all of them. Chunks of one element (kt == 1, any extent): the first RDom variable is
 * the serial chunk loop, the others stay serial loops around it (fusing a loop of symbolic
 * extent would make the tile's bounds div/mod expressions Halide cannot tighten). */
void schedule_update(StageWriter &s, const Contraction &c, const Mapping &m, int kt) {
    const std::string r0 = ScheduleText::sanitize(c.rvars[0].name);
    const Dim chunk = chunk_loop(c);
    // With register fragments (R >= 2) the step loop ki stays serial, for the pass to unroll
    // after pipelining.
    const bool fragments = m.s.reg_stages > 1;
    std::vector<Dim> outer_rvars;
    const Dim ki = step_loop(c);
    if (kt > 1) {
        const bool fused = c.rvars.size() > 1;
        Dim k = fused ? Dim{r0 + "_c", true} : chunk;
        s.split({c.rvars[0].name, true}, k, ki, kt);
        for (size_t i = 1; i < c.rvars.size(); i++) {
            Dim next = (i + 1 == c.rvars.size()) ? chunk : Dim{r0 + "_c" + std::to_string(i), true};
            s.fuse(k, {c.rvars[i].name, true}, next);
            k = next;
        }
    } else {
        s.rename({c.rvars[0].name, true}, chunk);
        for (size_t i = 1; i < c.rvars.size(); i++) outer_rvars.push_back({c.rvars[i].name, true});
    }
    BlockLoops b = split_block(s, c, m);
    std::vector<Dim> order = b.reg;
    if (kt > 1) {
        order.push_back(ki);
    } else if (fragments) {
        // The fragments are computed at the step loop, and Halide wants that location in
        // every branch: where a chunk is one k step, a one-trip loop of that name split off
        // the register tile. Halide removes it again, so the pass finds the fragments right
        // in the chunk loop: one step per chunk (FragmentLoop::one_step). (Splitting the RVar
        // by 1 instead would leave the chunk's tile at a place Halide does not simplify.)
        const Dim one_step{ki.name, false};
        s.split(b.n_r, b.n_r, one_step, 1);
        order.push_back(one_step);
    }
    order.push_back(b.n_t);
    order.push_back(b.m_t);
    order.push_back(chunk);
    order.insert(order.end(), outer_rvars.begin(), outer_rvars.end());
    s.reorder(order).gpu_threads(b.n_t, b.m_t);
    for (const Dim &d : b.reg) s.unroll(d);
    if (kt > 1 && !fragments) s.unroll(ki);
    s.done();
}

/** The env of the pipeline and the index of each Func in Pipeline::get_func() order. */
std::map<std::string, int> func_indices(const Pipeline &p) {
    std::vector<Function> outputs;
    for (const Func &f : p.outputs()) outputs.push_back(f.function());
    std::map<std::string, Function> env = build_environment(outputs);
    std::vector<std::string> order = topological_order(outputs, env);
    std::map<std::string, int> index;
    for (size_t i = 0; i < order.size(); i++) index[order[i]] = (int)i;
    return index;
}

std::string get_func_text(const std::map<std::string, int> &index, const std::string &name) {
    return "pipeline.get_func(" + std::to_string(index.at(name)) + ")";
}

/** A pure Var of stage `def` of `f` that is safe to run in parallel: the stage writes f at
 * exactly that variable in its position, and every read of f in the stage reads there too. */
bool parallel_safe(const Function &f, const Definition &def, size_t pos) {
    const std::string &v = f.args()[pos];
    if (def.is_init()) return true;
    const Variable *lhs = def.args()[pos].as<Variable>();
    if (!lhs || lhs->name != v) return false;
    class SelfReads : public IRGraphVisitor {
        using IRGraphVisitor::visit;
        void visit(const Call *op) override {
            if (op->call_type == Call::Halide && op->name == name) {
                const Variable *a = op->args[pos].as<Variable>();
                safe = safe && a && a->name == var;
            }
            IRGraphVisitor::visit(op);
        }

    public:
        const std::string &name, &var;
        size_t pos;
        bool safe = true;
        SelfReads(const std::string &name, const std::string &var, size_t pos)
            : name(name), var(var), pos(pos) {
        }
    } reads(f.name(), v, pos);
    for (const Expr &e : def.values()) e.accept(&reads);
    for (const Expr &e : def.args()) e.accept(&reads);
    return reads.safe;
}

/** The fallback: every Func that cannot be inlined computed at root, each stage's parallel-safe
 * dimensions (the two innermost) on 16 x 16 (or 64) threads, a single thread where none is. */
void plain_gpu_schedule(const Pipeline &p, ScheduleText &text) {
    std::vector<Function> outputs;
    for (const Func &f : p.outputs()) outputs.push_back(f.function());
    std::map<std::string, Function> env = build_environment(outputs);
    std::map<std::string, int> index = func_indices(p);
    std::set<std::string> output_names;
    for (const Function &f : outputs) output_names.insert(f.name());
    for (const std::string &name : topological_order(outputs, env)) {
        Function f = env.at(name);
        if (f.can_be_inlined() && !output_names.count(name)) continue;
        Func func(f);
        const std::string id = text.func(name, get_func_text(index, name));
        func.compute_root();
        text.body << id << ".compute_root();\n";
        if (f.has_extern_definition()) continue;
        for (int stage = 0; stage <= (int)f.updates().size(); stage++) {
            const Definition &def = stage == 0 ? f.definition() : f.update(stage - 1);
            std::vector<std::string> vars;
            for (size_t pos = 0; pos < f.args().size() && vars.size() < 2; pos++) {
                if (parallel_safe(f, def, pos)) vars.push_back(f.args()[pos]);
            }
            Stage st = stage == 0 ? Stage(func) : func.update(stage - 1);
            StageWriter s(st, stage == 0 ? id : id + ".update(" + std::to_string(stage - 1) + ")", text);
            if (vars.size() == 2) {
                Dim x{vars[0]}, y{vars[1]}, xo{vars[0] + "_o"}, yo{vars[1] + "_o"}, xi{vars[0] + "_i"}, yi{vars[1] + "_i"};
                s.split(x, xo, xi, 16, TailStrategy::GuardWithIf)
                    .split(y, yo, yi, 16, TailStrategy::GuardWithIf)
                    .reorder({xi, yi, xo, yo})
                    .gpu_blocks({xo, yo})
                    .gpu_threads(xi, yi);
            } else if (vars.size() == 1) {
                Dim x{vars[0]}, xo{vars[0] + "_o"}, xi{vars[0] + "_i"};
                s.split(x, xo, xi, 64, TailStrategy::GuardWithIf).reorder({xi, xo}).gpu_blocks({xo}).gpu_threads(xi);
            } else {
                s.gpu_single_thread();
            }
            s.done();
        }
    }
}

std::ostream &log_stream(const Options &o) {
    return o.log ? *o.log : std::cerr;
}

/** Applies the chosen mapping to the contraction and writes it. */
void apply_contraction_schedule(const Pipeline &p, const Target &target, const Contraction &c, const Mapping &m,
                                Result &r, ScheduleText &text, std::vector<std::string> &warnings) {
    const std::map<std::string, int> index = func_indices(p);
    Func out(c.output), f(c.reduction), fa(c.a.func), fb(c.b.func);
    const std::string out_id = text.func(c.output.name(), get_func_text(index, c.output.name()));
    const std::string f_id = text.func(c.reduction.name(), get_func_text(index, c.reduction.name()));
    const std::string a_id = text.func(c.a.func.name(), get_func_text(index, c.a.func.name()));
    const std::string b_id = text.func(c.b.func.name(), get_func_text(index, c.b.func.name()));
    const model::Schedule &s = m.s;
    const int threads_x = s.bn / s.tn, threads = s.threads();
    const std::vector<int> md = c.m_dims();

    // --- When the reduction is chunked by KT: an exact split (constant K), or a branch
    // specialized on the estimated K.
    const ContractionRVar &r0 = c.rvars[0];
    Condition k_cond;
    bool k_chunked = false, k_generic = true;
    if (!m.k_divisible) {
        warnings.push_back("the estimated extent " + std::to_string(r0.extent_estimate) + " of " + r0.name +
                           " is not a multiple of the k tile " + std::to_string(s.kt) +
                           ", so the reduction is staged one element per chunk at every size");
    } else if (is_const(r0.extent)) {
        k_chunked = true;
        k_generic = false;
    } else if (r0.extent.as<Variable>() && r0.extent.as<Variable>()->param.defined()) {
        // A Param or a buffer size: Halide substitutes `var == value` into the specialized
        // definition, which makes the split exact there. The source names it through the
        // RDom, which is all the schedule's scope has.
        k_chunked = true;
        k_cond.and_with(r0.extent == make_const(r0.extent.type(), r0.extent_estimate),
                        "alcop::autoscheduler::rdom_extent(" + f_id + ", 0) == " + std::to_string(r0.extent_estimate));
    } else {
        std::ostringstream e;
        e << r0.extent;
        warnings.push_back("the extent of " + r0.name + " (" + e.str() +
                           ") is neither a constant nor a Param or buffer size, so Halide cannot prove a split "
                           "exact; the reduction is staged one element per chunk");
    }
    r.k_chunked = k_chunked;
    r.k_condition = k_cond.expr;

    // --- The output: block tiles on GPU blocks, register tiles on threads, guarded tails. When
    // the output accumulates f (out = init; out += f), its init is one kernel and its update,
    // which reads f, the other: both tiled alike.
    const int reading_stage = c.output_accumulates ? 1 : 0;
    Dim n_o{c.dims[c.n_dim()].output_var + "_o"};
    for (int stage = 0; stage <= reading_stage; stage++) {
        StageWriter o(stage ? out.update(0) : Stage(out), stage ? out_id + ".update(0)" : out_id, text);
        const std::string n = c.dims[c.n_dim()].output_var, mx = c.dims[md[0]].output_var;
        Dim n_i{n + "_i"}, n_t{n + "_t"}, n_r{n + "_r"};
        Dim mx_o{mx + "_o"}, mx_i{mx + "_i"}, mx_t{mx + "_t"}, mx_r{mx + "_r"};
        o.split({n}, n_o, n_i, s.bn, TailStrategy::GuardWithIf)
            .split(n_i, n_t, n_r, s.tn, TailStrategy::GuardWithIf)
            .split({mx}, mx_o, mx_i, m.bx, TailStrategy::GuardWithIf)
            .split(mx_i, mx_t, mx_r, s.tm, TailStrategy::GuardWithIf);
        Dim m_t = mx_t, m_o = mx_o;
        if (md.size() > 1) {
            const std::string my = c.dims[md[1]].output_var;
            Dim my_o{my + "_o"}, my_i{my + "_i"};
            o.split({my}, my_o, my_i, m.by, TailStrategy::GuardWithIf);
            m_t = {mx + "_" + my + "_t"};
            m_o = {mx + "_" + my + "_o"};
            o.fuse(mx_t, my_i, m_t).fuse(mx_o, my_o, m_o);
        }
        // Every other dimension (batches, further M dimensions) indexes blocks.
        std::vector<Dim> blocks{n_o, m_o};
        Dim z;
        for (size_t i = 0; i < c.dims.size(); i++) {
            if ((int)i == c.n_dim() || (int)i == md[0] || (md.size() > 1 && (int)i == md[1])) continue;
            Dim d{c.dims[i].output_var};
            if (z.name.empty()) {
                z = d;
            } else {
                Dim fused{z.name + "_" + d.name};
                o.fuse(z, d, fused);
                z = fused;
            }
        }
        std::vector<Dim> order{n_r, mx_r, n_t, m_t, n_o, m_o};
        if (!z.name.empty()) {
            order.push_back(z);
            blocks.push_back(z);
        }
        o.reorder(order).gpu_blocks(blocks).gpu_threads(n_t, m_t).unroll(n_r).unroll(mx_r);
        o.done();
    }
    {
        // --- The accumulators: one block tile in registers, each thread its TN x TM window.
        // (When the output accumulates f, only its update stage has a use of f inside x_o,
        // which is where Halide places f.)
        f.compute_at(out, Var(n_o.name));
        text.body << f_id << ".compute_at(" << out_id << ", " << text.var(n_o) << ")";
        f.store_in(MemoryType::Register);
        text.body << "\n    .store_in(MemoryType::Register)";
        for (const ContractionDim &d : c.dims) {
            int extent = 1;
            if (d.role == DimRole::N) extent = s.bn;
            if (d.output_dim == c.dims[md[0]].output_dim) extent = m.bx;
            if (md.size() > 1 && d.output_dim == c.dims[md[1]].output_dim) extent = m.by;
            f.bound_extent(Var(d.reduction_var), extent);
            text.body << "\n    .bound_extent(" << text.var({d.reduction_var}) << ", " << extent << ")";
        }
        text.body << ";\n";
    }
    {
        StageWriter init(Stage(f), f_id, text);
        BlockLoops b = split_block(init, c, m);
        std::vector<Dim> order = b.reg;
        order.push_back(b.n_t);
        order.push_back(b.m_t);
        init.reorder(order).gpu_threads(b.n_t, b.m_t);
        for (const Dim &d : b.reg) init.unroll(d);
        init.done();
    }
    // The update: the chunked branch first (a specialization copies the schedule so far).
    if (k_chunked) {
        if (k_cond.expr.defined()) {
            StageWriter fast(f.update(0).specialize(k_cond.expr), f_id + ".update(0).specialize(" + k_cond.text + ")", text);
            schedule_update(fast, c, m, s.kt);
        } else {
            StageWriter fast(f.update(0), f_id + ".update(0)", text);
            schedule_update(fast, c, m, s.kt);
        }
    }
    if (k_generic) {
        StageWriter generic(f.update(0), f_id + ".update(0)", text);
        schedule_update(generic, c, m, 1);
    }

    // --- The staged operands.
    Condition copy_cond = k_cond;
    {
        const std::string out_buf = out_id + ".output_buffer()";
        auto require = [&](int dim, int tile) {
            Expr e = out.output_buffer().dim(dim).extent();
            copy_cond.and_with(e % tile == 0, out_buf + ".dim(" + std::to_string(dim) + ").extent() % " + std::to_string(tile) + " == 0");
        };
        require(c.dims[c.n_dim()].output_dim, s.bn);
        require(c.dims[md[0]].output_dim, m.bx);
        if (md.size() > 1) require(c.dims[md[1]].output_dim, m.by);
    }
    if (k_chunked && copy_cond.expr.defined()) {
        // The fast branch gets a kernel of its own. With both branches of every copy in one
        // loop, the generic copies' clamped addresses (hoisted out of the loop) hold registers
        // in the fast path too: ptxas gives the 128 x 128, 8 x 8-per-thread GEMM 168 registers
        // (one block per SM) in one kernel, 128 in its own (two), as the hand-written kernel.
        // Inside out's branch the copies' identical conditions simplify away.
        Stage reading = reading_stage ? out.update(0) : Stage(out);
        reading.specialize(copy_cond.expr);
        text.body << out_id << (reading_stage ? ".update(0)" : "") << ".specialize(" << copy_cond.text << ");\n";
    }
    const Dim chunk = chunk_loop(c);
    for (const Operand *o : {&c.a, &c.b}) {
        Func src(o->func);
        Func w = src.in(f);
        const std::string src_id = o == &c.a ? a_id : b_id;
        const std::string w_id = text.func(w.name(), src_id + ".in(" + f_id + ")");
        w.compute_at(f, RVar(chunk.name)).store_in(MemoryType::GPUShared);
        text.body << w_id << ".compute_at(" << f_id << ", " << text.var(chunk) << ").store_in(MemoryType::GPUShared);\n";
        std::vector<Dim> args;
        for (const Var &v : w.args()) args.push_back({v.name()});
        // The tile's extent along every dimension the chunk variable does not index is the
        // same in every branch: say so, so that Halide's bounds of the fused copy loops stay
        // exact (they would otherwise widen the shared tile by what the guards cannot prove).
        {
            const std::vector<int64_t> extents = tile_extents(c, *o, m, 1);
            for (size_t d = 0; d < args.size(); d++) {
                if (extents[d] > 0 && !expr_uses_var(o->args[d], r0.name)) {
                    w.bound_extent(Var(args[d].name), (int)extents[d]);
                    text.body << w_id << ".bound_extent(" << text.var(args[d]) << ", " << extents[d] << ");\n";
                }
            }
        }
        if (k_chunked) {
            const std::vector<int64_t> extents = tile_extents(c, *o, m, s.kt);
            const bool vectorize = extents[0] > 0 && extents[0] % copy_vector_width == 0;
            if (copy_cond.expr.defined()) {
                StageWriter fast(w.specialize(copy_cond.expr), w_id + ".specialize(" + copy_cond.text + ")", text);
                schedule_copy(fast, args, vectorize, threads_x, threads);
            } else {
                StageWriter fast(Stage(w), w_id, text);
                schedule_copy(fast, args, vectorize, threads_x, threads);
            }
        }
        if (k_generic || copy_cond.expr.defined()) {
            StageWriter generic(Stage(w), w_id, text);
            schedule_copy(generic, args, false, threads_x, threads);
            if (o->image) {
                clamp_to_input_bounds(w);
                text.body << "// Outside the branch above, the edge blocks read " << o->image->name()
                          << " at clamped coordinates (AlcopAutoscheduler.h).\n"
                          << "alcop::autoscheduler::clamp_to_input_bounds(" << w_id << ");\n";
            } else {
                warnings.push_back("the operand " + o->func.name() +
                                   " is not an input buffer, so the edge blocks of a size that is not a multiple of the block tile read it "
                                   "past the output's edges unclamped (safe for a Func defined everywhere, a bounds error otherwise)");
            }
        }
        alcop::pipeline(w, s.smem_stages);
        text.body << "alcop::pipeline(" << w_id << ", " << s.smem_stages << ");\n";

        if (s.reg_stages > 1) {
            // Each thread's fragment of the operand at one k step, in registers, R slots.
            Func frag = w.in(f);
            const std::string frag_id = text.func(frag.name(), w_id + ".in(" + f_id + ")");
            const Dim ki = step_loop(c);
            frag.compute_at(f, RVar(ki.name)).store_in(MemoryType::Register);
            text.body << frag_id << ".compute_at(" << f_id << ", " << text.var(ki)
                      << ").store_in(MemoryType::Register)";
            for (const Var &v : frag.args()) {
                frag.unroll(v);
                text.body << "\n    .unroll(" << text.var({v.name()}) << ")";
            }
            text.body << ";\n";
            alcop::pipeline(frag, s.reg_stages, Level::Register);
            text.body << "alcop::pipeline(" << frag_id << ", " << s.reg_stages << ", alcop::Level::Register);\n";
        }
    }
    alcop::enable(p, target);
    text.body << "alcop::enable(pipeline, target);\n";
}

/** The GPU `name` names (see model::find_gpu); a user error, said by `who`, if none. */
const model::GpuSpec &named_gpu(const std::string &name, const std::string &who) {
    const model::GpuSpec *gpu = model::find_gpu(name);
    if (!gpu) {
        std::string known;
        for (const model::GpuSpec &g : model::all_gpus()) known += (known.empty() ? "" : ", ") + g.name;
        user_error << who << " names no GPU the model knows (" << known << ").\n";
    }
    return *gpu;
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
            << "ALCOP_AUTOSCHEDULER_LIMITS=" << v << ": say optin (the app links apps/common/CudaOptIn) or default.\n";
        if (std::string(v) == "optin") o.search.model.limits = model::RuntimeLimits::OptIn;
    }
    if (const char *v = getenv("ALCOP_AUTOSCHEDULER_CANDIDATE")) o.candidate = std::max(0, atoi(v));
    return o;
}

namespace {

/** What a request (Requests.h) recorded on one of the outputs under `tag`, if anything. */
std::optional<std::string> requested(const std::vector<Function> &outputs, const std::string &tag) {
    for (const Function &f : outputs) {
        for (const std::string &t : f.get_trace_tags()) {
            if (t.rfind(tag, 0) == 0) return t.substr(tag.size());
        }
    }
    return std::nullopt;
}

}  // namespace

const model::GpuSpec &gpu_for_target(const Target &target) {
    if (target.has_feature(Target::CUDA)) {
        const int cc = target.get_cuda_capability_lower_bound();
        const char *name = cc >= 90 ? "H200" : cc >= 89 ? "RTX4090" : cc >= 86 ? "RTX3090" : cc >= 80 ? "A100" : cc >= 70 ? "V100" : nullptr;
        if (name && model::find_gpu(name)) return *model::find_gpu(name);
    }
    return model::default_gpu();
}

void clamp_to_input_bounds(Func wrapper) {
    Function w = wrapper.function();
    const Call *call = w.values().size() == 1 ? w.values()[0].as<Call>() : nullptr;
    Parameter param;
    if (call && call->call_type == Call::Halide && call->func.defined()) {
        Function g(call->func);
        const Call *read = g.is_pure() && g.values().size() == 1 ? g.values()[0].as<Call>() : nullptr;
        if (read && read->call_type == Call::Image && read->args.size() == call->args.size()) {
            param = read->param;
        }
    } else if (call && call->call_type == Call::Image) {
        param = call->param;
    }
    user_assert(param.defined() && param.is_buffer())
        << "clamp_to_input_bounds(" << w.name() << "): " << w.name()
        << " is not a wrapper of a Func that reads an input buffer.\n";
    std::vector<Expr> args;
    for (size_t d = 0; d < call->args.size(); d++) {
        Expr min = Variable::make(Int(32), param.name() + ".min." + std::to_string(d), param);
        Expr extent = Variable::make(Int(32), param.name() + ".extent." + std::to_string(d), param);
        args.push_back(clamp(call->args[d], min, min + extent - 1));
    }
    w.definition().values()[0] =
        Call::make(call->type, call->name, args, call->call_type, call->func, call->value_index, call->image, call->param);
}

Expr rdom_extent(const Func &f, int dim) {
    const Function &g = f.function();
    user_assert(g.has_update_definition() && dim >= 0 && dim < (int)g.update(0).schedule().rvars().size())
        << "rdom_extent(" << g.name() << ", " << dim << "): " << g.name() << " has no update with an RDom of "
        << dim + 1 << " dimensions.\n";
    return g.update(0).schedule().rvars()[dim].extent;
}

Result autoschedule(const Pipeline &pipeline, const Target &target, const Options &options) {
    user_assert(target.has_gpu_feature())
        << "The Alcop autoscheduler schedules GPU kernels, but the target " << target.to_string()
        << " has no GPU feature (add opencl or cuda, e.g. host-cuda-cuda_capability_80).\n";
    std::ostream &log = log_stream(options);
    Pipeline p = pipeline;
    Result r;
    std::vector<Function> outputs;
    for (const Func &f : p.outputs()) outputs.push_back(f.function());
    r.gpu = options.gpu ? options.gpu : &gpu_for_target(target);
    if (std::optional<std::string> gpu = requested(outputs, gpu_tag)) {
        r.gpu = &named_gpu(*gpu, "request_gpu(" + outputs[0].name() + ", \"" + *gpu + "\")");
    }
    model::SearchOptions search = options.search;
    if (std::optional<std::string> limits = requested(outputs, limits_tag)) {
        search.model.limits = *limits == "optin" ? model::RuntimeLimits::OptIn : model::RuntimeLimits::HalideDefault;
    }
    ScheduleText text;
    text.header << "// Schedule generated by the Alcop autoscheduler (libautoschedule_alcop) for " << target.to_string() << ".\n";

    std::string why;
    std::optional<Contraction> c = recognize_contraction(outputs, &why);
    if (c && c->output_is_reduction) {
        // The accumulators must live in registers, inside the block that stores the output, so
        // the contraction moves into a Func of its own: out = init, out += out_intm, where
        // out_intm is the whole reduction (rfactor over no RVar keeps every one in it).
        const std::map<std::string, int> index = func_indices(p);
        for (const Function &g : {c->output, c->a.func, c->b.func}) text.func(g.name(), get_func_text(index, g.name()));
        const std::string out_id = text.func_id(c->output.name());
        Func intm = Func(c->output).update(0).rfactor(std::vector<std::pair<RVar, Var>>());
        text.func(intm.name(), out_id + ".update(0).rfactor(std::vector<std::pair<RVar, Var>>())");
        c = recognize_contraction(outputs, &why);
        internal_assert(!c || c->output_accumulates) << "rfactor({}) did not make the output accumulate a copy\n";
    }
    if (!c) {
        r.why_not = why;
        user_warning << "Alcop autoscheduler: not a contraction it recognizes (" << why
                     << "); applying a plain GPU schedule without staging or pipelining.\n";
        text.header << "// Not a recognized contraction: " << why << ".\n// A plain GPU schedule: no shared-memory staging, no pipelining.\n";
        plain_gpu_schedule(p, text);
        r.schedule_source = text.str();
        return r;
    }
    r.contraction = c;

    // --- Search: every candidate ranked by the model.
    r.search = model::search(c->problem, *r.gpu, search);
    // The best-ranked candidate the schedule can express, preferring one that tiles the
    // estimated sizes exactly (the fast path at the estimates), then one whose k tile divides
    // the estimated K.
    std::vector<Mapping> exact, k_only, other;  // each in the model's order
    for (const model::Prediction &pr : r.search.ranked) {
        std::optional<Mapping> mp = map_candidate(*c, pr.schedule);
        if (!mp) continue;
        (mp->k_divisible && mp->divisible ? exact : mp->k_divisible ? k_only : other).push_back(*mp);
    }
    r.applicable = exact.size();
    std::vector<Mapping> preferred = exact;
    preferred.insert(preferred.end(), k_only.begin(), k_only.end());
    preferred.insert(preferred.end(), other.begin(), other.end());
    user_assert(!preferred.empty()) << "Alcop autoscheduler: no candidate schedule of the search space fits "
                                    << r.gpu->name << " for " << c->describe() << ".\n";
    const std::optional<std::string> asked = requested(outputs, candidate_tag);
    const size_t rank =
        std::min(asked ? (size_t)std::max(0, atoi(asked->c_str())) : options.candidate, preferred.size() - 1);
    const Mapping m = preferred[rank];
    r.chosen = model::predict(c->problem, m.s, *r.gpu, search.model);

    std::ostringstream summary;
    summary << std::fixed << std::setprecision(1);
    summary << "Alcop autoscheduler: " << c->describe() << "\n"
            << "  model: " << r.gpu->name << ", " << model::to_string(search.model.limits)
            << " limits (" << model::smem_limit_bytes(*r.gpu, search.model.limits) / 1024 << " KiB shared, "
            << model::register_limit(*r.gpu, search.model.limits) << " registers); " << r.search.enumerated << " candidates ranked (" << r.search.feasible
            << " feasible, " << r.applicable << " expressible and tiling the estimates exactly) in "
            << r.search.seconds * 1e3 << " ms\n"
            << "  chosen: " << m.s.to_string() << " (M tile " << m.bx << "x" << m.by << "), predicted "
            << std::setprecision(2) << r.chosen.total_us << " us (" << model::to_string(r.chosen.bound) << ")";
    if (rank > 0) {
        summary << "; tuning: candidate " << rank << " in the order of preference, the model's choice "
                << preferred[0].s.to_string() << " predicts "
                << model::predict(c->problem, preferred[0].s, *r.gpu, search.model).total_us << " us";
    } else if (!r.search.ranked.empty() && r.search.ranked[0].schedule.to_string() != m.s.to_string()) {
        const model::Schedule &top = r.search.ranked[0].schedule;
        std::optional<Mapping> tm = map_candidate(*c, top);
        summary << "; best-ranked " << top.to_string() << " predicts " << r.search.ranked[0].total_us << " us but "
                << (top.reg_stages > 1 && tm == std::nullopt
                        ? "its register fragments need one M dimension, and S >= 2 unless K is a constant the k tile divides" :
                    !tm                ? "its M tile cannot be laid out over the M dimensions" :
                    !tm->k_divisible   ? "its k tile does not divide the estimated K" :
                                         "its block tile does not divide the estimated output");
    }
    summary << "\n";

    std::vector<std::string> warnings;
    if (exact.empty()) {
        warnings.push_back("no candidate tiles the estimated sizes exactly, so the estimated problem runs the clamped copies");
    }
    apply_contraction_schedule(p, target, *c, m, r, text, warnings);

    text.header << std::fixed << "// " << c->describe() << "\n"
                << "// Model: " << r.gpu->name << "; " << r.search.enumerated << " candidates ranked in "
                << std::setprecision(2) << r.search.seconds * 1e3 << " ms.\n"
                << "// Chosen: " << m.s.to_string() << ", M tile " << m.bx << "x" << m.by << ", predicted "
                << r.chosen.total_us << " us (" << model::to_string(r.chosen.bound) << ")"
                << (rank ? ", candidate " + std::to_string(rank) + " (tuning)" : std::string(", the model's choice"))
                << ".\n";
    if (r.k_chunked && r.k_condition.defined()) {
        text.header << "// The reduction is chunked by " << m.s.kt << " where its extent is the estimated "
                    << c->rvars[0].extent_estimate << ", and by 1 (still pipelined) otherwise.\n";
    }
    for (const std::string &w : warnings) {
        text.header << "// Note: " << w << ".\n";
        user_warning << "Alcop autoscheduler: " << w << ".\n";
    }
    r.schedule_source = text.str();

    log << summary.str();
    if (options.verbose) {
        log << r.search.report(options.top);
    }
    return r;
}

}  // namespace autoscheduler
}  // namespace alcop
