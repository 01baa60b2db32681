#include "analysis/KernelContext.h"

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

Expr KernelContext::inline_lets(Expr e) const {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) {
        if (expr_uses_var(e, it->first)) {
            e = substitute(it->first, it->second, e);
        }
    }
    return simplify(e);
}

void KernelContext::assume(const Expr &condition) {
    // Each variable's range is solved from the condition with the other variables free in
    // their current ranges; a second round lets the narrowed ranges feed each other.
    const Expr c = inline_lets(condition);
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < loops.size(); i++) {
            if (!expr_uses_var(c, loops[i].first)) continue;
            Interval solved = solve_for_outer_interval(c, loops[i].first);
            Scope<Interval> others;
            for (size_t j = 0; j < loops.size(); j++) {
                if (j != i) others.push(loops[j].first, loops[j].second);
            }
            Interval box = Interval::everything();
            if (solved.has_lower_bound()) box.min = simplify(bounds_of_expr_in_scope(solved.min, others).min);
            if (solved.has_upper_bound()) box.max = simplify(bounds_of_expr_in_scope(solved.max, others).max);
            Interval narrowed = Interval::make_intersection(loops[i].second, box);
            loops[i].second = Interval(simplify(narrowed.min), simplify(narrowed.max));
        }
    }
}

Expr loop_max(const Expr &max) {
    if (is_const(max)) return max;
    const Expr bound = find_constant_bound(max, Direction::Upper);
    return bound.defined() ? bound : max;
}

std::optional<std::pair<Expr, int64_t>> as_multiple(const Expr &conjunct) {
    const EQ *eq = conjunct.as<EQ>();
    const Mod *mod = eq && is_const_zero(eq->b) ? eq->a.as<Mod>() : nullptr;
    const int64_t *c = mod ? as_const_int(mod->b) : nullptr;
    if (!c || *c < 2) return std::nullopt;
    return std::make_pair(mod->a, *c);
}

void KernelContext::push_loop(const For *op) {
    loops.emplace_back(op->name, Interval(inline_lets(op->min), loop_max(inline_lets(op->min + op->extent - 1))));
}

Interval KernelContext::bounds(const Expr &e) const {
    Scope<Interval> scope;
    std::vector<std::string> names;
    for (const auto &l : loops) {
        scope.push(l.first, l.second);
        names.push_back(l.first);
    }
    const Expr inlined = inline_lets(e);
    Expr collected = inlined;
    if (const Ramp *r = inlined.as<Ramp>()) {
        collected = Ramp::make(collect_terms(r->base, names), r->stride, r->lanes);
    } else if (!inlined.type().is_vector()) {
        collected = collect_terms(inlined, names);
    }
    const Interval as_written = bounds_of_expr_in_scope(inlined, scope);
    if (collected.same_as(inlined)) return as_written;
    // Both bound e; the solver's form is tighter where terms cancel, and may be looser where it
    // moves a variable across a division. Each end: the tighter constant, else as written.
    const Interval solved = bounds_of_expr_in_scope(collected, scope);
    auto tighter = [](const Expr &written, const Expr &solved, bool lower) {
        const Expr a = simplify(written), b = simplify(solved);
        const int64_t *ca = as_const_int(a), *cb = as_const_int(b);
        if (ca && cb) return (lower ? *ca >= *cb : *ca <= *cb) ? a : b;
        return cb ? b : a;
    };
    return Interval(tighter(as_written.min, solved.min, true), tighter(as_written.max, solved.max, false));
}

Expr collect_terms(Expr e, const std::vector<std::string> &vars) {
    bool solved = false;
    for (const std::string &v : vars) {
        if (!expr_uses_var(e, v)) continue;
        e = solve_expression(e, v).result;
        solved = true;
    }
    return solved ? simplify(e) : e;
}

void KernelContextVisitor::visit(const For *op) {
    const bool is_block = op->for_type == ForType::GPUBlock;
    const bool tracked = kernel_depth > 0 && !is_block;
    op->min.accept(this);
    op->extent.accept(this);
    kernel_depth += is_block;
    if (tracked) ctx.push_loop(op);
    op->body.accept(this);
    if (tracked) ctx.loops.pop_back();
    kernel_depth -= is_block;
}

void KernelContextVisitor::visit(const LetStmt *op) {
    op->value.accept(this);
    if (kernel_depth) ctx.lets.emplace_back(op->name, op->value);
    op->body.accept(this);
    if (kernel_depth) ctx.lets.pop_back();
}

Stmt KernelContextMutator::visit(const LetStmt *op) {
    ctx.lets.emplace_back(op->name, op->value);
    const Stmt body = mutate(op->body);
    ctx.lets.pop_back();
    return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
}

void KernelContextVisitor::visit(const Let *op) {
    op->value.accept(this);
    if (kernel_depth) ctx.lets.emplace_back(op->name, op->value);
    op->body.accept(this);
    if (kernel_depth) ctx.lets.pop_back();
}

void KernelContextVisitor::visit(const IfThenElse *op) {
    op->condition.accept(this);
    const KernelContext outer = ctx;
    if (kernel_depth) ctx.assume(op->condition);
    op->then_case.accept(this);
    ctx = outer;
    if (op->else_case.defined()) {
        if (kernel_depth) ctx.assume(!op->condition);
        op->else_case.accept(this);
        ctx = outer;
    }
}

std::map<const For *, std::string> kernel_names(const Stmt &s) {
    class Kernels : public IRVisitor {
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (op->for_type == ForType::GPUBlock) {
                kernels.push_back(op);  // its body holds no other kernel
            } else {
                IRVisitor::visit(op);
            }
        }

    public:
        std::vector<const For *> kernels;
    } find;
    s.accept(&find);
    std::map<std::string, int> count, seen;
    for (const For *k : find.kernels) {
        count[k->name]++;
    }
    std::map<const For *, std::string> names;
    for (const For *k : find.kernels) {
        const int n = count[k->name];
        names[k] =
            n == 1 ? k->name : k->name + " (" + std::to_string(++seen[k->name]) + " of " + std::to_string(n) + ")";
    }
    return names;
}

}  // namespace alcop
