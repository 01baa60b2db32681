#include "rewrite/ExpandSlots.h"

#include "Error.h"
#include "model/CostModel.h"

#include <numeric>
#include <string>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The suffix of the mark's name, after the loop's. */
const std::string mark_suffix = ".expand_slots";

/** The slot arithmetic of one copy: each `i % S` that is a constant once the loop variable
 * `k` is `value` becomes that constant; every other term stays. */
class FoldSlots : public IRMutator {
    using IRMutator::visit;

    const std::string &k;
    const Expr &value;

    Expr visit(const Mod *op) override {
        const Expr folded = simplify(substitute(k, value, Expr(op)));
        return is_const(folded) ? folded : IRMutator::visit(op);
    }

public:
    FoldSlots(const std::string &k, const Expr &value) : k(k), value(value) {
    }
};

/** The loop `op` in groups of `copies` iterations, each copy's slots folded, then the
 * iterations left as they were. */
Stmt expand(const For *op, int copies) {
    const std::string group_name = op->name + ".slots";
    const Expr group = Variable::make(Int(32), group_name), groups = simplify(op->extent / copies);
    std::vector<Stmt> group_body;
    for (int u = 0; u < copies; u++) {
        const Expr k = op->min + group * copies + u;
        group_body.push_back(LetStmt::make(op->name, k, FoldSlots(op->name, k).mutate(op->body)));
    }
    const Stmt groups_loop = For::make(group_name, 0, groups, op->for_type, op->device_api, Block::make(group_body));
    const Stmt rest = For::make(op->name, simplify(op->min + groups * copies), simplify(op->extent - groups * copies),
                                op->for_type, op->device_api, op->body);
    return Block::make(groups_loop, rest);
}

bool is_mark(const LetStmt *op) {
    const std::string &n = op->name;
    return n.size() > mark_suffix.size() && n.compare(n.size() - mark_suffix.size(), n.npos, mark_suffix) == 0;
}

class ExpandSlots : public IRMutator {
    using IRMutator::visit;

    /** The marked loop's name and copies, inside its mark; whether it was found. */
    std::string loop;
    int copies = 1;
    bool found = false;

    Stmt visit(const LetStmt *op) override {
        if (!is_mark(op)) return IRMutator::visit(op);
        const std::string outer_loop = loop;
        const int outer_copies = copies;
        const bool outer_found = found;
        loop = op->name.substr(0, op->name.size() - mark_suffix.size());
        copies = (int)*as_const_int(op->value);
        found = false;
        Stmt body = mutate(op->body);
        internal_assert(found) << "The loop " << loop << " marked for expansion is not under its mark.\n";
        loop = outer_loop;
        copies = outer_copies;
        found = outer_found;
        return body;
    }

    Stmt visit(const For *op) override {
        if (op->name != loop || op->for_type != ForType::Serial) return IRMutator::visit(op);
        // Marks inside the body first (none today: a steady state holds no other), which see
        // their own loops only.
        const std::string marked = loop;
        loop.clear();
        const Stmt body = mutate(op->body);
        loop = marked;
        found = true;
        const Stmt with_body = For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
        return expand(with_body.as<For>(), copies);
    }
};

}  // namespace

int expanded_copies(const std::vector<int> &stages, const model::TensorCoreStream &stream, bool prefetch_in_place,
                    const Expr &extent) {
    int period = 1;
    for (int s : stages) {
        period = std::lcm(period, s);
    }
    const int64_t *trips = as_const_int(extent);
    return model::expanded_chunks(period, stream, prefetch_in_place,
                                  trips ? std::optional<int64_t>(*trips) : std::nullopt);
}

Stmt mark_for_expansion(const Stmt &loop, int copies) {
    const For *f = loop.as<For>();
    internal_assert(f && copies >= 1);
    return copies == 1 ? loop : LetStmt::make(f->name + mark_suffix, copies, loop);
}

Stmt expand_slots(const Stmt &s) {
    return ExpandSlots().mutate(s);
}

}  // namespace alcop
