#include "rewrite/CompactRegisters.h"

#include "analysis/KernelContext.h"

#include <map>
#include <optional>
#include <set>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** An access split into its thread part and the rest, both with the kernel's lets inlined. */
struct SplitIndex {
    const IRNode *access;
    Expr thread_part;  // scalar; zero when the index does not depend on the threads
    Expr rest;
    Interval rest_bounds;
};

std::vector<const Variable *> variables_in(const Expr &e) {
    class Collect : public IRGraphVisitor {
        using IRGraphVisitor::visit;
        void visit(const Variable *op) override {
            found.push_back(op);
        }

    public:
        std::vector<const Variable *> found;
    } collect;
    e.accept(&collect);
    return collect.found;
}

/** Adds scale * e to a linear combination of atoms (anything but +, - and * by a constant). */
void add_linear_terms(const Expr &e, int64_t scale, std::vector<std::pair<Expr, int64_t>> &terms, int64_t &constant) {
    if (const int64_t *c = as_const_int(e)) {
        constant += scale * *c;
    } else if (const Add *op = e.as<Add>()) {
        add_linear_terms(op->a, scale, terms, constant);
        add_linear_terms(op->b, scale, terms, constant);
    } else if (const Sub *op = e.as<Sub>()) {
        add_linear_terms(op->a, scale, terms, constant);
        add_linear_terms(op->b, -scale, terms, constant);
    } else if (const Mul *op = e.as<Mul>(); op && as_const_int(op->b)) {
        add_linear_terms(op->a, scale * *as_const_int(op->b), terms, constant);
    } else if (const Mul *op = e.as<Mul>(); op && as_const_int(op->a)) {
        add_linear_terms(op->b, scale * *as_const_int(op->a), terms, constant);
    } else if (const Mod *op = e.as<Mod>(); op && as_const_int(op->b) && *as_const_int(op->b) > 0) {
        // x % c == x - (x / c) * c (Halide's division rounds down, its modulus is positive).
        add_linear_terms(op->a, scale, terms, constant);
        add_linear_terms(op->a / op->b, -scale * *as_const_int(op->b), terms, constant);
    } else {
        for (auto &t : terms) {
            if (equal(t.first, e)) {
                t.second += scale;
                return;
            }
        }
        terms.emplace_back(e, scale);
    }
}

/** Whether two index expressions are equal in value. The init and the update of an
 * accumulator may spell one thread part differently, e.g. ((t/2 - b)*8 + (t%2)*4 + b*8)*64
 * and t*256, where the simplifier alone cancels neither b nor t/2 against t%2: expanding both
 * into one linear combination of atoms, with x % c as x - (x / c) * c, leaves nothing. */
bool same_value(const Expr &a, const Expr &b) {
    if (equal(a, b)) return true;
    std::vector<std::pair<Expr, int64_t>> terms;
    int64_t constant = 0;
    add_linear_terms(a, 1, terms, constant);
    add_linear_terms(b, -1, terms, constant);
    Expr difference = make_const(a.type(), constant);
    for (const auto &t : terms) {
        if (t.second) difference = difference + t.first * make_const(a.type(), t.second);
    }
    return can_prove(difference == 0);
}

/** How each block-level register array is accessed, or nullopt once one access does not fit. */
class FindWindows : public KernelContextVisitor {
    using KernelContextVisitor::visit;

    std::set<std::string> thread_vars;
    // Per array: the loops around its allocation, whose variables are fixed while it lives.
    std::map<std::string, std::set<std::string>> outer_loops;

    void visit(const For *op) override {
        const bool thread = kernel_depth > 0 && op->for_type == ForType::GPUThread;
        if (thread) thread_vars.insert(op->name);
        KernelContextVisitor::visit(op);
        if (thread) thread_vars.erase(op->name);
    }

    void visit(const Allocate *op) override {
        if (kernel_depth && thread_vars.empty() && op->memory_type == MemoryType::Register && op->extents.size() == 1) {
            windows.emplace(op->name, std::vector<SplitIndex>());
            for (const auto &l : ctx.loops) {
                outer_loops[op->name].insert(l.first);
            }
        }
        IRVisitor::visit(op);
    }

    void record(const IRNode *node, const std::string &name, const Expr &index) {
        auto it = windows.find(name);
        if (it == windows.end() || !it->second) return;
        Expr full = ctx.inline_lets(index);
        // The loops between the allocation and the access vary the index within a thread;
        // everything else (thread and block ids, loops around the allocation, the
        // pipeline's parameters) is fixed for the thread while the array lives, and forms the
        // thread part.
        std::set<std::string> varying;
        for (const auto &l : ctx.loops) {
            if (!thread_vars.count(l.first) && !outer_loops[name].count(l.first)) varying.insert(l.first);
        }
        std::map<std::string, Expr> zero;
        for (const Variable *v : variables_in(full)) {
            if (!varying.count(v->name)) zero[v->name] = make_zero(v->type);
        }
        Expr rest = simplify(substitute(zero, full));
        Expr thread_part = simplify(full - rest);
        if (const Broadcast *b = thread_part.as<Broadcast>()) {
            thread_part = b->value;
        }
        Interval bounds = ctx.bounds(rest);
        bool fits = !thread_part.type().is_vector() && bounds.is_bounded() && is_const(simplify(bounds.min)) &&
                    is_const(simplify(bounds.max));
        // The thread part may not vary within the thread (the index was not T + c).
        for (const std::string &v : varying) {
            fits = fits && !expr_uses_var(thread_part, v);
        }
        // One thread part for all accesses.
        for (const SplitIndex &other : *it->second) {
            fits = fits && same_value(other.thread_part, thread_part);
        }
        if (fits) {
            it->second->push_back({node, thread_part, rest, Interval(simplify(bounds.min), simplify(bounds.max))});
        } else {
            it->second.reset();
        }
    }

    void visit(const Load *op) override {
        record(op, op->name, op->index);
        IRVisitor::visit(op);
    }

    void visit(const Store *op) override {
        record(op, op->name, op->index);
        IRVisitor::visit(op);
    }

public:
    std::map<std::string, std::optional<std::vector<SplitIndex>>> windows;
};

/** The elements an index reads or writes when it is a constant or a dense ramp from one;
 * empty otherwise. */
std::vector<int64_t> constant_elements(const Expr &index) {
    if (const int64_t *c = as_const_int(index)) return {*c};
    const Ramp *r = index.as<Ramp>();
    if (!r || !as_const_int(r->base) || !is_const_one(r->stride)) return {};
    std::vector<int64_t> elements;
    for (int i = 0; i < r->lanes; i++) {
        elements.push_back(*as_const_int(r->base) + i);
    }
    return elements;
}

class Rebase : public IRMutator {
    using IRMutator::visit;

    // Per array: its window's lowest index and size; per access: its index in the window.
    struct Window {
        int64_t lo, size;
    };
    std::map<std::string, Window> windows;
    std::map<const IRNode *, Expr> rebased;

    Expr visit(const Load *op) override {
        if (!windows.count(op->name)) return IRMutator::visit(op);
        Expr index = rebased.at(op);
        return Load::make(op->type, op->name, index, op->image, op->param, mutate(op->predicate), ModulusRemainder());
    }

    Stmt visit(const Store *op) override {
        if (!windows.count(op->name)) return IRMutator::visit(op);
        Expr index = rebased.at(op);
        return Store::make(op->name, mutate(op->value), index, op->param, mutate(op->predicate), ModulusRemainder());
    }

    Stmt visit(const Allocate *op) override {
        auto it = windows.find(op->name);
        if (it == windows.end()) return IRMutator::visit(op);
        Stmt body = mutate(op->body);
        return Allocate::make(op->name, op->type, op->memory_type, {(int)it->second.size}, op->condition, body,
                              op->new_expr, op->free_function);
    }

public:
    Rebase(const FindWindows &found) {
        for (const auto &f : found.windows) {
            if (!f.second || f.second->empty()) continue;
            int64_t lo = INT64_MAX, hi = INT64_MIN;
            for (const SplitIndex &s : *f.second) {
                lo = std::min(lo, *as_const_int(s.rest_bounds.min));
                hi = std::max(hi, *as_const_int(s.rest_bounds.max));
            }
            windows[f.first] = {lo, hi - lo + 1};
            std::set<int64_t> used;
            bool constant = true;
            for (const SplitIndex &s : *f.second) {
                Expr index = simplify(s.rest - (int)lo);
                rebased[s.access] = index;
                const std::vector<int64_t> elements = constant_elements(index);
                constant = constant && !elements.empty();
                used.insert(elements.begin(), elements.end());
            }
            if (constant && (int64_t)used.size() < hi - lo + 1) {
                number_densely(f.first, *f.second, used);
            }
        }
    }

private:
    /** Once the loops are unrolled the window may still be sparse: an mma.sync accumulator's
     * rows 8 apart in a block tile 32 wide use 8 of its 266 elements, 64 x 64 warp tiles 128
     * of thousands, which a private array keeps out of registers wherever codegen does not
     * split it. Numbers the elements used, in order: a dense ramp's elements are consecutive
     * integers, all used, so their numbers are consecutive too. */
    void number_densely(const std::string &array, const std::vector<SplitIndex> &accesses,
                        const std::set<int64_t> &used) {
        std::map<int64_t, int> number;
        for (int64_t e : used) {
            number.emplace(e, (int)number.size());
        }
        std::set<const IRNode *> done;  // (an access node may be reached more than once)
        for (const SplitIndex &s : accesses) {
            if (!done.insert(s.access).second) continue;
            Expr &index = rebased.at(s.access);
            if (const Ramp *r = index.as<Ramp>()) {
                index = Ramp::make(number.at(*as_const_int(r->base)), r->stride, r->lanes);
            } else {
                index = number.at(*as_const_int(index));
            }
        }
        windows[array].size = (int64_t)used.size();
    }
};

}  // namespace

Stmt compact_thread_registers(const Stmt &s) {
    FindWindows found;
    s.accept(&found);
    return Rebase(found).mutate(s);
}

}  // namespace alcop
