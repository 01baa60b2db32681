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

/** How each block-level register array is accessed, or nullopt once one access does not fit. */
class FindWindows : public KernelContextVisitor {
    using KernelContextVisitor::visit;

    std::set<std::string> thread_vars;

    void visit(const For *op) override {
        const bool thread = kernel_depth > 0 && op->for_type == ForType::GPUThread;
        if (thread) thread_vars.insert(op->name);
        KernelContextVisitor::visit(op);
        if (thread) thread_vars.erase(op->name);
    }

    void visit(const Allocate *op) override {
        if (kernel_depth && thread_vars.empty() && op->memory_type == MemoryType::Register &&
            op->extents.size() == 1) {
            windows.emplace(op->name, std::vector<SplitIndex>());
        }
        IRVisitor::visit(op);
    }

    void record(const IRNode *node, const std::string &name, const Expr &index) {
        auto it = windows.find(name);
        if (it == windows.end() || !it->second) return;
        Expr full = ctx.inline_lets(index);
        std::map<std::string, Expr> zero;
        for (const std::string &v : thread_vars) {
            zero[v] = 0;
        }
        Expr rest = simplify(substitute(zero, full));
        Expr thread_part = simplify(full - rest);
        if (const Broadcast *b = thread_part.as<Broadcast>()) {
            thread_part = b->value;
        }
        Interval bounds = ctx.bounds(rest);
        bool fits = !thread_part.type().is_vector() && bounds.is_bounded() &&
                    is_const(simplify(bounds.min)) && is_const(simplify(bounds.max));
        // The thread part may only depend on the thread ids.
        for (const auto &l : ctx.loops) {
            fits = fits && (thread_vars.count(l.first) || !expr_uses_var(thread_part, l.first));
        }
        for (const SplitIndex &other : *it->second) {
            fits = fits && equal(other.thread_part, thread_part);
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
        return Load::make(op->type, op->name, index, op->image, op->param, mutate(op->predicate),
                          ModulusRemainder());
    }

    Stmt visit(const Store *op) override {
        if (!windows.count(op->name)) return IRMutator::visit(op);
        Expr index = rebased.at(op);
        return Store::make(op->name, mutate(op->value), index, op->param, mutate(op->predicate),
                           ModulusRemainder());
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
            for (const SplitIndex &s : *f.second) {
                rebased[s.access] = simplify(s.rest - (int)lo);
            }
        }
    }
};

}  // namespace

Stmt compact_thread_registers(const Stmt &s) {
    FindWindows found;
    s.accept(&found);
    return Rebase(found).mutate(s);
}

}  // namespace alcop
