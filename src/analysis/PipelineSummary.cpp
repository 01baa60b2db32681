#include "analysis/PipelineSummary.h"

#include "analysis/PipelineAnalysis.h"
#include "copy/CopyLowering.h"

#include <sstream>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

void flatten(const Stmt &s, std::vector<Stmt> &out) {
    if (const Block *b = s.as<Block>()) {
        flatten(b->first, out);
        flatten(b->rest, out);
    } else {
        out.push_back(s);
    }
}

/** Barriers that run once whenever s does: not under a loop or an if (lets, allocations and
 * produce/consume markers do not count; a register-level pipeline nests the loop's barrier
 * in them). */
int unconditional_barriers(const Stmt &s) {
    if (const Block *b = s.as<Block>()) return unconditional_barriers(b->first) + unconditional_barriers(b->rest);
    if (const LetStmt *l = s.as<LetStmt>()) return unconditional_barriers(l->body);
    if (const ProducerConsumer *pc = s.as<ProducerConsumer>()) return unconditional_barriers(pc->body);
    if (const Allocate *a = s.as<Allocate>()) return unconditional_barriers(a->body);
    return is_barrier(s) ? 1 : 0;
}

std::string base(const std::string &name) {
    return name.substr(0, name.find('$'));
}

class Measure : public IRVisitor {
    using IRVisitor::visit;
    std::vector<const For *> serial;
    std::vector<Expr> conditions;
    std::string shared;
    bool in_consume = false, producing = false;
    bool counted_barriers = false;
    int deepest = 0;

    void visit(const Allocate *op) override {
        if (op->memory_type == MemoryType::GPUShared) {
            shape.shared_elems = op->constant_allocation_size();
            shared = op->name;
        } else if (op->memory_type == MemoryType::Register && shape.register_elems < 0) {
            shape.register_elems = op->constant_allocation_size();
        }
        IRVisitor::visit(op);
    }

    void visit(const For *op) override {
        if (op->for_type != ForType::Serial) {
            IRVisitor::visit(op);
            return;
        }
        serial.push_back(op);
        IRVisitor::visit(op);
        serial.pop_back();
    }

    void visit(const Block *op) override {
        // A barrier right after a streaming loop.
        std::vector<Stmt> stmts;
        flatten(op, stmts);
        for (size_t i = 0; i < stmts.size(); i++) {
            const For *f = stmts[i].as<For>();
            for (size_t j = i + 1; f && j < stmts.size(); j++) {
                if (is_barrier(stmts[j])) followed_by_barrier.insert(f->name);
            }
        }
        IRVisitor::visit(op);
    }

    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        conditions.push_back(op->condition);
        op->then_case.accept(this);
        conditions.pop_back();
        if (op->else_case.defined()) op->else_case.accept(this);
    }

    // Halide makes Func names unique in a process ("A_shared$1"): compare the base names.
    bool watched(const std::string &name) const {
        return funcs.count(base(name));
    }

    void visit(const ProducerConsumer *op) override {
        if (op->is_producer && watched(op->name)) {
            if (finding && (int)serial.size() > deepest) {
                // The streaming loop is the innermost serial loop around a copy (prologue
                // copies sit outside it, possibly inside other serial loops).
                deepest = serial.size();
                shape.loop = serial.back()->name;
            }
            if (!serial.empty() && serial.back()->name == shape.loop && !counted_barriers) {
                counted_barriers = true;
                shape.loop_barriers = unconditional_barriers(serial.back()->body);
            }
            const bool in_loop = !serial.empty() && serial.back()->name == shape.loop;
            bool on_loop_var = false, on_prologue_step = false;
            for (const Expr &c : conditions) {
                const LT *lt = c.as<LT>();
                on_loop_var = on_loop_var || expr_uses_var(c, shape.loop);
                on_prologue_step = on_prologue_step || (lt && is_const(lt->a));
            }
            if (in_loop) {
                shape.loop_copies[base(op->name)]++;
                shape.guarded_loop[base(op->name)] += on_loop_var;
            } else {
                shape.prologue_copies[base(op->name)]++;
                shape.guarded_prologue[base(op->name)] += on_prologue_step;
            }
        }
        bool old = in_consume, old_producing = producing;
        in_consume = in_consume || (!op->is_producer && watched(op->name));
        producing = producing || (op->is_producer && watched(op->name));
        IRVisitor::visit(op);
        in_consume = old;
        producing = old_producing;
    }

    void visit(const Store *op) override {
        if (op->name == shared && producing) {
            switch (copy_kind_of(op->value)) {
            case CopyKind::Async:
                shape.async_copies++;
                break;
            case CopyKind::RegisterStaged:
                shape.staged_copies++;
                break;
            default:
                shape.synchronous_copies++;
            }
        }
        IRVisitor::visit(op);
    }

    void visit(const Load *op) override {
        if (in_consume && op->name == shared && !serial.empty() && serial.back()->name == shape.loop) {
            std::ostringstream s;
            s << op->index;
            shape.consumer_indices.push_back(s.str());
        }
        IRVisitor::visit(op);
    }

public:
    std::set<std::string> funcs, followed_by_barrier;
    PipelineSummary shape;
    Measure(std::set<std::string> funcs, std::string loop) : funcs(std::move(funcs)), finding(loop.empty()) {
        shape.loop = std::move(loop);
    }
    const bool finding;
};

}  // namespace

PipelineSummary summarize_pipeline(const Stmt &s, const std::set<std::string> &funcs) {
    // The first pass finds the loop (its first produce node may follow the consumers, when
    // copies are staged through registers); the second reads it.
    Measure find(funcs, "");
    s.accept(&find);
    Measure m(funcs, find.shape.loop);
    s.accept(&m);
    m.shape.barrier_after_loop = m.followed_by_barrier.count(m.shape.loop);
    return m.shape;
}

std::string describe(const PipelineSummary &s) {
    std::ostringstream out;
    if (s.loop.empty()) {
        out << "no serial loop produces the watched Funcs\n";
        return out.str();
    }
    out << "streaming loop " << s.loop << ": " << s.loop_barriers << " barrier(s) per iteration"
        << (s.barrier_after_loop ? ", a barrier after it" : "") << "\n";
    out << "copies into shared memory: " << s.async_copies << " cp.async, " << s.staged_copies
        << " staged through registers, " << s.synchronous_copies << " synchronous\n";
    out << "shared allocation: " << s.shared_elems << " elements; registers per thread: " << s.register_elems << "\n";
    for (const auto &c : s.loop_copies) {
        const std::string &f = c.first;
        auto get = [&](const std::map<std::string, int> &m) {
            auto it = m.find(f);
            return it == m.end() ? 0 : it->second;
        };
        out << "  " << f << ": " << get(s.prologue_copies) << " prologue cop"
            << (get(s.prologue_copies) == 1 ? "y" : "ies") << " (" << get(s.guarded_prologue) << " guarded), "
            << c.second << " copy per iteration (" << get(s.guarded_loop) << " guarded by the tail test)\n";
    }
    return out.str();
}

}  // namespace alcop
