#include "rewrite/WholeChunks.h"

#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** An Expr with the values of the lets around it substituted, recursively. */
class SubstituteLets : public IRMutator {
    using IRMutator::visit;
    const Scope<Expr> &lets;

    Expr visit(const Variable *op) override {
        return lets.contains(op->name) ? mutate(lets.get(op->name)) : op;
    }

public:
    explicit SubstituteLets(const Scope<Expr> &lets) : lets(lets) {
    }
};

class ProveWholeChunks : public IRMutator {
    using IRMutator::visit;

    Scope<Expr> lets;
    /** The loops around the node visited, outermost first: each index and its range. */
    std::vector<std::pair<std::string, Interval>> loops;
    /** What a branch around the node says is a multiple of a constant (K % c == 0, K with the
     * lets substituted): K = c q, q a fresh variable. */
    struct Multiple {
        Expr k;
        int64_t c;
        std::string q = unique_name("multiple");
    };
    std::vector<Multiple> multiples;

    Expr with_lets(const Expr &e) const {
        return SubstituteLets(lets).mutate(e);
    }

    /** Records every conjunct `K % c == 0` of a branch's condition. */
    void learn(const Expr &condition) {
        if (const Cast *cast = condition.as<Cast>()) {  // a bool let read as uint1
            if (cast->value.type().is_bool()) learn(cast->value);
            return;
        }
        if (const And *a = condition.as<And>()) {
            learn(a->a);
            learn(a->b);
            return;
        }
        const EQ *eq = condition.as<EQ>();
        if (!eq || !is_const_zero(eq->b)) return;
        const Mod *mod = eq->a.as<Mod>();
        const int64_t *c = mod ? as_const_int(mod->b) : nullptr;
        if (!c || *c < 2) return;
        for (Multiple &m : multiples) {
            if (graph_equal(m.k, mod->a)) {
                m.c = std::lcm(m.c, *c);
                return;
            }
        }
        multiples.push_back({mod->a, *c});
    }

    /** e with the lets substituted and each K written c q. The q are left free: interval
     * arithmetic would lose that a chunk index's bound (q - 1) and K name the same q. A loop's
     * index lies in its range, which is empty where q makes it so (the chunk loop at K = 0),
     * and there nothing inside it runs. */
    Expr as_multiples(const Expr &e) const {
        Expr r = with_lets(e);
        for (const Multiple &m : multiples) {
            r = substitute(m.k, Variable::make(m.k.type(), m.q) * make_const(m.k.type(), m.c), r);
        }
        return simplify(r);
    }

    /** The ranges of the loops around the node, as_multiples. */
    Scope<Interval> loop_ranges() const {
        Scope<Interval> ranges;
        for (const auto &loop : loops) {
            ranges.push(loop.first, Interval(as_multiples(loop.second.min), as_multiples(loop.second.max)));
        }
        return ranges;
    }

    /** The one value `extent` takes wherever the loops around it run, if it can be proven. */
    std::optional<int64_t> proven_value(const Expr &extent) const {
        const Interval b = bounds_of_expr_in_scope(as_multiples(extent), loop_ranges());
        if (!b.is_bounded()) return std::nullopt;
        const Expr lower = simplify(b.min);
        const int64_t *value = as_const_int(lower);
        if (!value || !can_prove(b.max <= lower)) return std::nullopt;
        return *value;
    }

    /** Whether `condition` holds wherever the loops around it run (the guards of an unrolled
     * step loop, `ko KT + i <= K`): a conjunction of comparisons, each a <= b proven by the
     * upper bound of a - b. */
    bool proven_true(const Expr &condition) const {
        const Scope<Interval> ranges = loop_ranges();
        std::function<bool(const Expr &)> holds = [&](const Expr &c) {
            if (is_const_one(c)) return true;
            if (const And *a = c.as<And>()) return holds(a->a) && holds(a->b);
            Expr difference;  // at most 0 where c holds
            if (const LE *le = c.as<LE>()) difference = le->a - le->b;
            if (const LT *lt = c.as<LT>()) difference = lt->a - lt->b + 1;
            if (const GE *ge = c.as<GE>()) difference = ge->b - ge->a;
            if (const GT *gt = c.as<GT>()) difference = gt->b - gt->a + 1;
            if (!difference.defined() || !difference.type().is_int()) return false;
            const Interval b = bounds_of_expr_in_scope(simplify(difference), ranges);
            return b.has_upper_bound() && can_prove(b.max <= 0);
        };
        return holds(as_multiples(condition));
    }

    Stmt visit(const LetStmt *op) override {
        ScopedBinding<Expr> bind(lets, op->name, op->value);
        const Stmt body = mutate(op->body);
        return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
    }

    Stmt visit(const IfThenElse *op) override {
        if (!multiples.empty() && proven_true(op->condition)) return mutate(op->then_case);
        const std::vector<Multiple> outside = multiples;
        learn(with_lets(op->condition));
        const Stmt then_case = mutate(op->then_case);
        multiples = outside;
        const Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
        if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return op;
        return IfThenElse::make(op->condition, then_case, else_case);
    }

    Stmt visit(const For *op) override {
        Expr extent = op->extent;
        if (!multiples.empty() && !is_const(extent)) {
            if (const std::optional<int64_t> value = proven_value(extent)) {
                extent = make_const(extent.type(), *value);
            }
        }
        loops.push_back({op->name, Interval(op->min, simplify(op->min + extent - 1))});
        const Stmt body = mutate(op->body);
        loops.pop_back();
        if (extent.same_as(op->extent) && body.same_as(op->body)) return op;
        return For::make(op->name, op->min, extent, op->for_type, op->device_api, body);
    }
};

}  // namespace

Stmt prove_whole_chunks(const Stmt &s) {
    return ProveWholeChunks().mutate(s);
}

}  // namespace alcop
