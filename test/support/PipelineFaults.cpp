#include "PipelineFaults.h"

#include "Error.h"
#include "analysis/PipelineAnalysis.h"
#include "codegen/TensorCoreMarkers.h"
#include "copy/CopyLowering.h"
#include "plan/PipelinePlan.h"

#include <algorithm>
#include <set>

namespace alcop {
namespace testing {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The chosen copy lowering, each of whose waits leaves one group more in flight. */
class ShortWaits : public CopyLowering {
    std::unique_ptr<CopyLowering> chosen;

public:
    explicit ShortWaits(std::unique_ptr<CopyLowering> chosen) : chosen(std::move(chosen)) {
    }
    IssuedCopy issue(const Stmt &copy, const Expr &in_range, bool overlap) override {
        return chosen->issue(copy, in_range, overlap);
    }
    Stmt commit() const override {
        return chosen->commit();
    }
    Stmt wait(int in_flight) const override {
        return chosen->wait(in_flight + 1);
    }
    Stmt finish(const Stmt &pipelined) override {
        return chosen->finish(pipelined);
    }
};

/** The names of the allocations of `s` in `memory`. */
std::set<std::string> allocations_in(const Stmt &s, MemoryType memory) {
    struct Find : IRVisitor {
        MemoryType memory;
        std::set<std::string> names;
        using IRVisitor::visit;
        void visit(const Allocate *op) override {
            if (op->memory_type == memory) names.insert(op->name);
            IRVisitor::visit(op);
        }
    } find;
    find.memory = memory;
    s.accept(&find);
    return find.names;
}

/** Whether `s` loads fragments: stores into a register array a value read from shared memory
 * or by ldmatrix. */
class LoadsFragments : public IRVisitor {
    const std::set<std::string> &registers, &shared;
    bool in_register_store = false;

    using IRVisitor::visit;
    void visit(const Store *op) override {
        const bool outer = in_register_store;
        in_register_store = registers.count(op->name) > 0;
        op->value.accept(this);
        in_register_store = outer;
        op->index.accept(this);
    }
    void visit(const Load *op) override {
        found = found || (in_register_store && shared.count(op->name));
        IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
        found = found || (in_register_store && op->name.rfind(ldmatrix_prefix, 0) == 0);
        IRVisitor::visit(op);
    }

public:
    bool found = false;
    LoadsFragments(const std::set<std::string> &registers, const std::set<std::string> &shared)
        : registers(registers), shared(shared) {
    }
};

class LoadFragmentsBeforeBarriers : public IRMutator {
    const std::set<std::string> registers, shared;

    bool loads_fragments(const Stmt &s) const {
        LoadsFragments v(registers, shared);
        s.accept(&v);
        return v.found;
    }

    using IRMutator::visit;
    Stmt visit(const Block *op) override {
        std::vector<Stmt> stmts;
        for (Stmt s = op; s.defined();) {
            const Block *b = s.as<Block>();
            stmts.push_back(mutate(b ? b->first : s));
            s = b ? b->rest : Stmt();
        }
        for (size_t i = 0; i + 1 < stmts.size(); i++) {
            if (!is_barrier(stmts[i])) continue;
            size_t end = i + 1;
            while (end < stmts.size() && loads_fragments(stmts[end])) end++;
            if (end == i + 1) continue;
            std::rotate(stmts.begin() + i, stmts.begin() + i + 1, stmts.begin() + end);
            changed = true;
            i = end - 1;
        }
        return Block::make(stmts);
    }

public:
    bool changed = false;
    explicit LoadFragmentsBeforeBarriers(const Stmt &s)
        : registers(allocations_in(s, MemoryType::Register)), shared(allocations_in(s, MemoryType::GPUShared)) {
    }
};

}  // namespace

Stmt load_fragments_before_barriers(const Stmt &s, bool *changed) {
    LoadFragmentsBeforeBarriers m(s);
    Stmt result = m.mutate(s);
    *changed = m.changed;
    return result;
}

void add_fault(Hooks &hooks, Fault fault) {
    switch (fault) {
    case Fault::None:
        break;
    case Fault::DropBarrier:
        hooks.steady_state_publication = [](const Stmt &wait, const Stmt &) { return wait; };
        break;
    case Fault::DropWait:
        hooks.steady_state_publication = [](const Stmt &, const Stmt &barrier) { return barrier; };
        break;
    case Fault::SlotOffByOne:
        hooks.consumer_slot = [](const Expr &iteration, int stages) { return (iteration + 1) % stages; };
        break;
    case Fault::WaitOneGroupShort:
        hooks.copies = [wrapped = hooks.copies](std::unique_ptr<CopyLowering> chosen) {
            return std::make_unique<ShortWaits>(wrapped ? wrapped(std::move(chosen)) : std::move(chosen));
        };
        break;
    case Fault::MissingWarBarrier:
        hooks.plan = [](KernelPlan &plan) {
            for (LoopPlan &loop : plan.loops) {
                for (BufferPlan &b : loop.buffers) {
                    b.prefetch_distance = b.stages;
                    loop.max_prefetch_distance = std::max(loop.max_prefetch_distance, b.stages);
                }
            }
        };
        break;
    case Fault::FragmentBeforeBarrier:
        hooks.output = [then = hooks.output](const Stmt &s) {
            bool changed = false;
            Stmt broken = load_fragments_before_barriers(s, &changed);
            internal_assert(changed) << "fault fragment_before_barrier: no fragments loaded after a barrier\n";
            return then ? then(broken) : broken;
        };
        break;
    }
}

}  // namespace testing
}  // namespace alcop
