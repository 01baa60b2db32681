#include "autoscheduler/Contraction.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Replaces the symbols a size can depend on (scalar Params, buffer mins and extents) by
 * their constraints or estimates. Records a symbol it cannot replace. */
class SubstituteEstimates : public IRMutator {
    using IRMutator::visit;

    Expr visit(const Variable *op) override {
        if (!op->param.defined()) {
            return op;
        }
        const Parameter &p = op->param;
        if (!p.is_buffer()) {
            Expr e = p.estimate();
            if (!e.defined()) {
                missing = op->name;
                return op;
            }
            return cast(op->type, e);
        }
        // "<buffer>.<field>.<dim>"
        const std::string prefix = p.name() + ".";
        if (op->name.rfind(prefix, 0) != 0) {
            missing = op->name;
            return op;
        }
        std::string rest = op->name.substr(prefix.size());
        size_t dot = rest.find('.');
        if (dot == std::string::npos) {
            missing = op->name;
            return op;
        }
        const std::string field = rest.substr(0, dot);
        const int dim = std::atoi(rest.c_str() + dot + 1);
        Expr e;
        if (field == "extent") {
            e = p.extent_constraint(dim);
            if (!e.defined() || !is_const(e)) e = p.extent_constraint_estimate(dim);
        } else if (field == "min") {
            e = p.min_constraint(dim);
            if (!e.defined() || !is_const(e)) e = p.min_constraint_estimate(dim);
        }
        if (!e.defined()) {
            missing = op->name;
            return op;
        }
        return cast(op->type, e);
    }

public:
    std::string missing;
};

/** The pure variables of `f` and RDom variables of `rvars` that `e` uses. */
std::set<std::string> vars_used(const Expr &e, const std::vector<std::string> &candidates) {
    std::set<std::string> used;
    for (const std::string &v : candidates) {
        if (expr_uses_var(e, v)) used.insert(v);
    }
    return used;
}

std::set<std::string> vars_used(const std::vector<Expr> &args, const std::vector<std::string> &candidates) {
    std::set<std::string> used;
    for (const Expr &e : args) {
        std::set<std::string> u = vars_used(e, candidates);
        used.insert(u.begin(), u.end());
    }
    return used;
}

/** `e` is exactly the variable `name`. */
bool is_var(const Expr &e, const std::string &name) {
    const Variable *v = e.as<Variable>();
    return v && v->name == name;
}

/** `e` is a call of the Func named `name` (self-references hold a weak pointer, so by name). */
bool calls(const Expr &e, const std::string &name) {
    const Call *c = e.as<Call>();
    return c && c->call_type == Call::Halide && c->name == name;
}

/** The Func `e` calls, when `e` is a call to a Func (not an image, not an intrinsic). */
const Call *as_func_call(const Expr &e) {
    const Call *c = e.as<Call>();
    return (c && c->call_type == Call::Halide && c->func.defined()) ? c : nullptr;
}

/** The calls to Funcs in `e`, in the order they are visited. */
std::vector<const Call *> func_calls(const Expr &e) {
    class Calls : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Call *op) override {
            if (const Call *c = as_func_call(op)) found.push_back(c);
            IRVisitor::visit(op);
        }

    public:
        std::vector<const Call *> found;
    } calls;
    e.accept(&calls);
    return calls.found;
}

/** Whether `g` reads a Func with an update definition (a reduction), through any chain of
 * Funcs. */
bool reads_a_reduction(const Function &g, std::set<std::string> &seen) {
    if (!seen.insert(g.name()).second) return false;
    for (const Expr &value : g.values()) {
        for (const Call *call : func_calls(value)) {
            const Function h(call->func);
            if (h.has_update_definition() || reads_a_reduction(h, seen)) return true;
        }
    }
    return false;
}

/** `e` with every pure Func that stands between it and a reduction inlined (bias(x) stays a
 * call; biased(x, y) = prod(x, y) + bias(x) is replaced by its definition), as the schedule
 * leaves them: what the output computes from the reduction. */
Expr inline_up_to_reductions(const Expr &e) {
    class Inline : public IRMutator {
        using IRMutator::visit;
        Expr visit(const Call *op) override {
            const Call *call = as_func_call(op);
            if (!call) return IRMutator::visit(op);
            const Function g(call->func);
            std::set<std::string> seen;
            if (g.has_update_definition() || g.has_extern_definition() || !reads_a_reduction(g, seen)) {
                return IRMutator::visit(op);
            }
            std::map<std::string, Expr> args;
            for (size_t i = 0; i < g.args().size(); i++) args[g.args()[i]] = mutate(call->args[i]);
            return mutate(substitute(args, g.values()[call->value_index]));
        }
    } inline_;
    return inline_.mutate(e);
}

/** The factor's Func call: `e` itself, or the call inside `f32(e)` when e is fp16 or bf16 (the
 * operands of a tensor-core contraction, accumulated in fp32). */
const Call *factor_call(const Expr &e) {
    const Cast *cast = e.as<Cast>();
    if (cast && cast->type == Float(32) && (cast->value.type() == Float(16) || cast->value.type() == BFloat(16))) {
        return as_func_call(cast->value);
    }
    return as_func_call(e);
}

model::Element element_of(const Type &t) {
    return t == Float(16) ? model::Element::F16 : t == BFloat(16) ? model::Element::BF16 : model::Element::F32;
}

int64_t estimate_of(const Expr &e, std::string *missing_symbol) {
    SubstituteEstimates s;
    Expr v = simplify(s.mutate(e));
    if (!s.missing.empty()) {
        *missing_symbol = s.missing;
        return -1;
    }
    const int64_t *i = as_const_int(v);
    if (!i) {
        std::ostringstream os;
        os << e;  // no symbol is missing, but the expression does not reduce to a constant
        *missing_symbol = os.str();
        return -1;
    }
    return *i;
}

Operand make_operand(const Call *call) {
    Operand o;
    o.func = Function(call->func);
    o.args = call->args;
    const Function &f = o.func;
    if (f.is_pure() && f.values().size() == 1) {
        const Call *read = f.values()[0].as<Call>();
        bool plain =
            read && read->call_type == Call::Image && read->param.defined() && read->args.size() == f.args().size();
        for (size_t i = 0; plain && i < read->args.size(); i++) {
            plain = is_var(read->args[i], f.args()[i]);
        }
        if (plain) {
            o.image = read->param;
            int64_t elems = 1;
            for (int d = 0; d < read->param.dimensions() && elems > 0; d++) {
                Expr e = read->param.extent_constraint(d);
                if (!e.defined() || !is_const(e)) e = read->param.extent_constraint_estimate(d);
                if (e.defined()) e = simplify(e);  // kept alive: as_const_int points into it
                const int64_t *i = e.defined() ? as_const_int(e) : nullptr;
                elems = i ? elems * *i : 0;
            }
            o.bytes_estimate = elems * read->param.type().bytes();
        }
    }
    return o;
}

/** Whether `f` or anything it calls (transitively) has an update or extern definition. */
bool all_pure(const Function &f, std::string *impure) {
    for (const auto &kv : find_transitive_calls(f)) {
        if (!kv.second.is_pure()) {
            *impure = kv.first;
            return false;
        }
    }
    return true;
}

/** Calls `fn` on every Call in `values`, outer calls first. */
void visit_calls(const std::vector<Expr> &values, const std::function<void(const Call *)> &fn) {
    class Visit : public IRVisitor {
        using IRVisitor::visit;
        const std::function<void(const Call *)> &fn;
        void visit(const Call *op) override {
            fn(op);
            IRVisitor::visit(op);
        }

    public:
        explicit Visit(const std::function<void(const Call *)> &fn) : fn(fn) {
        }
    } visit(fn);
    for (const Expr &v : values) {
        v.accept(&visit);
    }
}

/** The first buffer (an input or an embedded Buffer) `g` reads, itself or through the Funcs it
 * calls, or "". */
std::string buffer_read_by(const Function &g) {
    class FindImage : public IRVisitor {
        using IRVisitor::visit;
        void visit(const Call *op) override {
            if (op->call_type == Call::Image && name.empty()) name = op->name;
            IRVisitor::visit(op);
        }

    public:
        std::string name;
    } find;
    for (const auto &kv : find_transitive_calls(g)) {
        Function(kv.second).accept(&find);
    }
    return find.name;
}

}  // namespace

const char *to_string(DimRole role) {
    switch (role) {
    case DimRole::N:
        return "N";
    case DimRole::M:
        return "M";
    case DimRole::Batch:
        return "batch";
    }
    return "?";
}

Expr substitute_estimates(const Expr &e) {
    SubstituteEstimates s;
    Expr v = simplify(s.mutate(e));
    return s.missing.empty() ? v : Expr();
}

int Contraction::n_dim() const {
    for (size_t i = 0; i < dims.size(); i++) {
        if (dims[i].role == DimRole::N) return (int)i;
    }
    return -1;
}

std::vector<int> Contraction::m_dims() const {
    std::vector<int> r;
    for (size_t i = 0; i < dims.size(); i++) {
        if (dims[i].role == DimRole::M) r.push_back((int)i);
    }
    return r;
}

std::vector<int> Contraction::batch_dims() const {
    std::vector<int> r;
    for (size_t i = 0; i < dims.size(); i++) {
        if (dims[i].role == DimRole::Batch) r.push_back((int)i);
    }
    return r;
}

std::string Contraction::describe() const {
    std::ostringstream os;
    os << kind << " " << output.name();
    if (!output_is_reduction) os << " = " << (epilogue ? "an elementwise function of " : "") << reduction.name();
    os << " = sum(" << a.func.name() << " * " << b.func.name() << "):";
    for (DimRole role : {DimRole::M, DimRole::N, DimRole::Batch}) {
        for (const ContractionDim &d : dims) {
            if (d.role == role) os << " " << to_string(role) << ":" << d.output_var << "=" << d.extent;
        }
    }
    for (const ContractionRVar &r : rvars) {
        os << " K:" << r.name << "=" << r.extent_estimate;
    }
    os << " (" << problem.to_string() << ")";
    return os.str();
}

std::optional<Contraction> recognize_contraction(const std::vector<Function> &outputs, std::string *why) {
    auto fail = [&](const std::string &reason) -> std::optional<Contraction> {
        *why = reason;
        return std::nullopt;
    };
    if (outputs.size() != 1) {
        return fail("the pipeline has " + std::to_string(outputs.size()) + " outputs; a contraction has one");
    }
    Contraction c;
    c.output = outputs[0];
    const Function &out = c.output;
    if (out.has_extern_definition() || out.values().size() != 1) {
        return fail("the output " + out.name() + " is an extern or Tuple-valued Func");
    }

    // The accumulating Func: the output, or the Func that the output copies.
    std::vector<int> perm;  // output dim d <-> reduction arg perm[d]
    const Call *copy = nullptr;
    Expr value;  // what the output computes, the Funcs up to the reduction inlined (`copy` is in it)
    if (out.has_update_definition() && out.updates().size() == 1 && out.update(0).schedule().rvars().empty()) {
        // out(v) = out(v) + f(...): the output accumulates a copy of f (rfactor({}) makes this).
        const Add *add = out.update(0).values()[0].as<Add>();
        bool lhs_pure = true;
        for (size_t i = 0; i < out.args().size(); i++)
            lhs_pure = lhs_pure && is_var(out.update(0).args()[i], out.args()[i]);
        copy = add ? as_func_call(add->b) : nullptr;
        if (!lhs_pure || !calls(add->a, out.name()) || !copy || copy->name == out.name()) {
            return fail("the update of the output " + out.name() + " is neither a contraction nor out += f(...)");
        }
        c.output_accumulates = true;
    } else if (out.has_update_definition()) {
        c.reduction = out;
        c.output_is_reduction = true;
        for (size_t d = 0; d < out.args().size(); d++) perm.push_back((int)d);
    } else {
        // out(v) = e(f(...)): the copy of the accumulating Func, the one Func e reads (with the
        // pure Funcs between them inlined) that has an update, read at one place; the rest of e
        // is its epilogue, computed where out stores.
        value = inline_up_to_reductions(out.values()[0]);
        for (const Call *call : func_calls(value)) {
            if (!Function(call->func).has_update_definition()) continue;
            if (copy && copy->name != call->name) {
                return fail("the output " + out.name() + " reads two reductions, " + copy->name + " and " +
                            call->name);
            }
            for (size_t i = 0; copy && i < call->args.size(); i++) {
                if (!equal(call->args[i], copy->args[i])) {
                    return fail("the output " + out.name() + " reads " + call->name +
                                " at two places; an epilogue reads it at the output's own coordinates");
                }
            }
            copy = call;
        }
        c.epilogue = copy && as_func_call(value) != copy;
    }
    if (!c.output_is_reduction) {
        if (!copy) {
            return fail("the output " + out.name() +
                        " neither accumulates nor is a copy (or an elementwise function) of a Func that does");
        }
        c.reduction = Function(copy->func);
        if (copy->args.size() != out.args().size()) {
            return fail("the output " + out.name() + " is not a plain copy of " + c.reduction.name());
        }
        perm.assign(out.args().size(), -1);
        for (size_t j = 0; j < copy->args.size(); j++) {
            for (size_t d = 0; d < out.args().size(); d++) {
                if (is_var(copy->args[j], out.args()[d])) perm[d] = (int)j;
            }
        }
        if (std::count(perm.begin(), perm.end(), -1)) {
            return fail("the output " + out.name() + " reads " + c.reduction.name() +
                        " at coordinates that are not its own variables");
        }
    }
    const Function &f = c.reduction;
    if (f.updates().size() != 1 || f.has_extern_definition()) {
        return fail(f.name() + " has " + std::to_string(f.updates().size()) +
                    " update definitions; a contraction has exactly one, f(...) += a(...) * b(...)");
    }
    if (f.output_types().size() != 1 || f.output_types()[0] != Float(32)) {
        return fail(f.name() + " is not a single float32 value (the model and the kernels are FP32)");
    }
    const Definition &update = f.update(0);
    if (!is_const_one(update.predicate())) {
        return fail("the RDom of " + f.name() + " has a predicate (RDom::where)");
    }
    for (size_t i = 0; i < f.args().size(); i++) {
        if (!is_var(update.args()[i], f.args()[i])) {
            return fail("the update of " + f.name() + " does not write f(" + f.args()[i] +
                        ", ...) at its own variables");
        }
    }
    // value = f(args) + a * b, in either order.
    const Add *add = update.values()[0].as<Add>();
    const Mul *mul = nullptr;
    if (add) {
        for (const Expr &self : {add->a, add->b}) {
            const Call *s = self.as<Call>();
            if (calls(self, f.name())) {
                bool same = s->args.size() == f.args().size();
                for (size_t i = 0; same && i < s->args.size(); i++) same = is_var(s->args[i], f.args()[i]);
                if (same) mul = (self.same_as(add->a) ? add->b : add->a).as<Mul>();
            }
        }
    }
    if (!mul) {
        return fail("the update of " + f.name() + " is not f(...) = f(...) + a(...) * b(...)");
    }
    const Call *ca = factor_call(mul->a), *cb = factor_call(mul->b);
    if (!ca || !cb) {
        return fail("the update of " + f.name() +
                    " multiplies values that are not calls to Funcs or inputs (or f32() of fp16 / bf16 ones)");
    }
    if (ca->type != cb->type) {
        return fail("the factors of " + f.name() + " have different types (" + type_to_c_type(ca->type, false) +
                    " and " + type_to_c_type(cb->type, false) + ")");
    }
    if (ca->name == cb->name) {
        return fail("both factors of " + f.name() + " read " + ca->name +
                    "; the two operands must be different Funcs to be staged separately");
    }
    for (const Call *call : {ca, cb}) {
        std::string impure;
        if (!all_pure(Function(call->func), &impure)) {
            return fail("the operand " + call->name + " depends on " + impure +
                        ", which is not a pure Func (updates and extern stages are not staged)");
        }
    }

    // What f starts from (a bias): the edge blocks compute f past the output's edges, where
    // the schedule clamps the input buffers f's pure definition reads; a buffer read through
    // other Funcs it could not clamp. (An output that accumulates itself starts in the output,
    // whose edges are guarded.)
    if (!c.output_is_reduction) {
        std::string refused;
        visit_calls(f.values(), [&](const Call *call) {
            if (!refused.empty()) return;
            if (call->call_type == Call::Image) {
                refused = "the initial value of " + f.name() + " reads the buffer " + call->name +
                          " itself, which the edge blocks would read past its edges (read it through a Func)";
                return;
            }
            if (call->call_type != Call::Halide || !call->func.defined() || call->name == f.name()) return;
            Operand in = make_operand(call);
            if (in.image) {
                for (const Operand &known : c.init_inputs) {
                    if (known.func.name() == in.func.name()) return;
                }
                c.init_inputs.push_back(in);
                return;
            }
            const std::string buffer = buffer_read_by(in.func);
            if (!buffer.empty()) {
                refused = "the initial value of " + f.name() + " reads " + call->name + ", which reads the buffer " +
                          buffer + " through other Funcs: the edge blocks compute it past the output's edges, " +
                          "where only a plain read of an input buffer can be clamped";
            }
        });
        if (!refused.empty()) return fail(refused);
    }

    // The reduction domain.
    for (const ReductionVariable &rv : update.schedule().rvars()) {
        ContractionRVar r;
        r.name = rv.var;
        r.min = rv.min;
        r.extent = rv.extent;
        std::string missing;
        r.extent_estimate = estimate_of(rv.extent, &missing);
        if (r.extent_estimate < 0) {
            return fail("the extent of " + rv.var + " depends on " + missing + ", which has no estimate");
        }
        c.rvars.push_back(r);
    }
    if (c.rvars.empty()) {
        return fail("the update of " + f.name() + " has no RDom");
    }
    std::vector<std::string> rnames, fvars = f.args();
    for (const ContractionRVar &r : c.rvars) rnames.push_back(r.name);

    // Roles. b is the operand that the output's innermost dimension indexes.
    const std::string inner = f.args()[perm[0]];
    const bool a_inner = vars_used(ca->args, {inner}).size(), b_inner = vars_used(cb->args, {inner}).size();
    if (a_inner == b_inner) {
        return fail("the output's innermost dimension " + out.args()[0] +
                    (a_inner ? " indexes both" : " indexes neither") +
                    " operand; it must index exactly one (the N dimension)");
    }
    c.a = make_operand(a_inner ? cb : ca);
    c.b = make_operand(a_inner ? ca : cb);
    const std::set<std::string> a_vars = vars_used(c.a.args, fvars), b_vars = vars_used(c.b.args, fvars);
    const std::set<std::string> a_rvars = vars_used(c.a.args, rnames), b_rvars = vars_used(c.b.args, rnames);
    if (!a_rvars.count(rnames[0]) || !b_rvars.count(rnames[0])) {
        return fail("the first RDom variable " + rnames[0] +
                    " does not index both operands, so the update is not a contraction over it");
    }
    for (const std::string &r : rnames) {
        if (!a_rvars.count(r) && !b_rvars.count(r)) {
            return fail("the RDom variable " + r + " indexes neither operand");
        }
    }

    // Sizes at the estimates.
    std::map<std::string, std::pair<int64_t, int64_t>> est;  // output var -> (min, extent)
    for (const Bound &bd : out.schedule().estimates()) {
        std::string missing;
        int64_t e = estimate_of(bd.extent, &missing);
        if (e > 0) est[bd.var] = {0, e};
    }
    for (size_t d = 0; d < out.args().size(); d++) {
        ContractionDim dim;
        dim.output_var = out.args()[d];
        dim.output_dim = (int)d;
        dim.reduction_var = f.args()[perm[d]];
        const bool in_a = a_vars.count(dim.reduction_var), in_b = b_vars.count(dim.reduction_var);
        dim.role = (d == 0) ? DimRole::N : (in_a && !in_b) ? DimRole::M : DimRole::Batch;
        if (est.count(dim.output_var)) {
            dim.extent = est[dim.output_var].second;
        } else if (!out.output_buffers().empty()) {
            Expr e = out.output_buffers()[0].extent_constraint_estimate((int)d);
            if (e.defined()) e = simplify(e);  // kept alive: as_const_int points into it
            const int64_t *i = e.defined() ? as_const_int(e) : nullptr;
            dim.extent = i ? *i : 0;
        }
        if (dim.extent <= 0) {
            return fail("the output " + out.name() + " has no estimate for dimension " + dim.output_var + "; call " +
                        out.name() + ".set_estimates(...)");
        }
        c.dims.push_back(dim);
    }
    if (c.m_dims().empty()) {
        return fail("no output dimension indexes only " + c.a.func.name() +
                    " (a matrix-vector product); Alcop tiles two dimensions, M and N");
    }

    // The model's problem: M = the tiled M dimensions (at most two are tiled; further ones
    // are separate blocks, like batches), N = the N dimension, K = the whole RDom.
    model::Problem &p = c.problem;
    p.m = 1;
    p.batch = 1;
    std::vector<int> m = c.m_dims();
    for (size_t i = 0; i < m.size(); i++) {
        (i < 2 ? p.m : p.batch) *= c.dims[m[i]].extent;
    }
    for (int i : c.batch_dims()) p.batch *= c.dims[i].extent;
    for (int i : m) p.m_extents.push_back(c.dims[i].extent);
    p.n = c.dims[c.n_dim()].extent;
    p.k = 1;
    for (const ContractionRVar &r : c.rvars) p.k *= r.extent_estimate;
    // Unique input bytes: an implicit-GEMM convolution reads each input pixel for many rows of
    // its virtual A; 0 (dense) when the operand is not a plain input.
    p.a_bytes = c.a.bytes_estimate;
    p.b_bytes = c.b.bytes_estimate;

    // A name for reports.
    bool shifted = false;  // some operand argument mixes a pure variable and an RDom variable
    for (const Operand *o : {&c.a, &c.b}) {
        for (const Expr &arg : o->args) {
            shifted = shifted || (!vars_used(arg, fvars).empty() && !vars_used(arg, rnames).empty());
        }
    }
    if (shifted || c.rvars.size() > 1) {
        c.kind = "implicit-GEMM convolution";
        p.gathered_a = shifted;
    } else if (p.batch > 1 || !c.batch_dims().empty()) {
        c.kind = "batched matmul";
    } else {
        c.kind = "GEMM";
    }
    p.name = c.kind;
    p.element = element_of(c.a.func.output_types()[0]);
    return c;
}

}  // namespace autoscheduler
}  // namespace alcop
