#include "rewrite/WholeChunks.h"

#include "analysis/KernelContext.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Its context (KernelContextMutator) holds the lets and loops around the node visited,
 * outside kernels too: the branch on K is the host's. */
class ProveWholeChunks : public KernelContextMutator {
    using KernelContextMutator::visit;

    /** What a branch around the node says is a multiple of a constant (K % c == 0, K with the
     * lets inlined): K = c q, q a fresh variable. */
    struct Multiple {
        Expr k;
        int64_t c;
        std::string q = unique_name("multiple");
    };
    std::vector<Multiple> multiples;

    /** Records every conjunct `K % c == 0` of a branch's condition. */
    void learn(const Expr &condition) {
        std::vector<Expr> conjuncts;
        split_into_ands(ctx.inline_lets(condition), conjuncts);
        for (const Expr &conjunct : conjuncts) {
            const auto fact = as_multiple(conjunct);
            if (!fact) continue;
            auto known = std::find_if(multiples.begin(), multiples.end(),
                                      [&](const Multiple &m) { return graph_equal(m.k, fact->first); });
            if (known != multiples.end()) {
                known->c = std::lcm(known->c, fact->second);
            } else {
                multiples.push_back({fact->first, fact->second});
            }
        }
    }

    /** e (its lets inlined) with each K written c q. The q are left free: interval arithmetic
     * would lose that a chunk index's bound (q - 1) and K name the same q. A loop's index lies
     * in its range, which is empty where q makes it so (the chunk loop at K = 0), and there
     * nothing inside it runs. */
    Expr as_multiples(Expr e) const {
        for (const Multiple &m : multiples) {
            e = substitute(m.k, Variable::make(m.k.type(), m.q) * make_const(m.k.type(), m.c), e);
        }
        return simplify(e);
    }

    /** The ranges of the loops around the node (the context's), as_multiples. */
    Scope<Interval> loop_ranges() const {
        Scope<Interval> ranges;
        for (const auto &loop : ctx.loops) {
            ranges.push(loop.first, Interval(as_multiples(loop.second.min), as_multiples(loop.second.max)));
        }
        return ranges;
    }

    /** The one value `extent` takes wherever the loops around it run, if it can be proven. */
    std::optional<int64_t> proven_value(const Expr &extent) const {
        const Interval b = bounds_of_expr_in_scope(as_multiples(ctx.inline_lets(extent)), loop_ranges());
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
        std::vector<Expr> conjuncts;
        split_into_ands(as_multiples(ctx.inline_lets(condition)), conjuncts);
        return std::all_of(conjuncts.begin(), conjuncts.end(), [&](const Expr &c) {
            if (is_const_one(c)) return true;
            Expr difference;  // at most 0 where c holds
            if (const LE *le = c.as<LE>()) difference = le->a - le->b;
            if (const LT *lt = c.as<LT>()) difference = lt->a - lt->b + 1;
            if (const GE *ge = c.as<GE>()) difference = ge->b - ge->a;
            if (const GT *gt = c.as<GT>()) difference = gt->b - gt->a + 1;
            if (!difference.defined() || !difference.type().is_int()) return false;
            const Interval b = bounds_of_expr_in_scope(simplify(difference), ranges);
            return b.has_upper_bound() && can_prove(b.max <= 0);
        });
    }

    Stmt visit(const IfThenElse *op) override {
        if (!multiples.empty() && proven_true(op->condition)) return mutate(op->then_case);
        const std::vector<Multiple> outside = multiples;
        learn(op->condition);
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
        // (The range of op's extent and of the one proven are the same.)
        ctx.push_loop(op);
        const Stmt body = mutate(op->body);
        ctx.loops.pop_back();
        if (extent.same_as(op->extent) && body.same_as(op->body)) return op;
        return For::make(op->name, op->min, extent, op->for_type, op->device_api, body);
    }
};

}  // namespace

Stmt prove_whole_chunks(const Stmt &s) {
    return ProveWholeChunks().mutate(s);
}

}  // namespace alcop
