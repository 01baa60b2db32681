#include "TensorCoreFaults.h"

#include "Error.h"
#include "ThreadLoops.h"
#include "codegen/TensorCoreMarkers.h"

#include <algorithm>

namespace alcop {
namespace testing {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Every XOR replaced by its first operand: the address before the swizzle. */
class DropXor : public IRMutator {
    using IRMutator::visit;
    Expr visit(const Call *op) override {
        if (op->is_intrinsic(Call::bitwise_xor)) return mutate(op->args[0]);
        return IRMutator::visit(op);
    }
};

bool has_ldmatrix(const Stmt &s) {
    struct Find : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            found = found || op->name.rfind(ldmatrix_prefix, 0) == 0;
            IRVisitor::visit(op);
        }
    } find;
    s.accept(&find);
    return find.found;
}

bool is_barrier(const Stmt &s) {
    const Evaluate *e = s.as<Evaluate>();
    const Call *c = e ? e->value.as<Call>() : nullptr;
    return c && c->is_intrinsic(Call::gpu_thread_barrier);
}

class BreakLdmatrix : public ThreadLoopMutator {
    using ThreadLoopMutator::visit;
    const TensorCoreFault fault;

    // FragmentBeforeBarrier: in a sequence, the statements after a barrier that load fragments
    // (the run of them: the rewrite's fragment stores, one statement each) go before the
    // barrier.
    Stmt visit(const Block *op) override {
        if (fault != TensorCoreFault::FragmentBeforeBarrier) return IRMutator::visit(op);
        std::vector<Stmt> stmts;
        for (Stmt s = op; s.defined();) {
            const Block *b = s.as<Block>();
            stmts.push_back(mutate(b ? b->first : s));
            s = b ? b->rest : Stmt();
        }
        for (size_t i = 0; i + 1 < stmts.size(); i++) {
            if (!is_barrier(stmts[i])) continue;
            size_t end = i + 1;
            while (end < stmts.size() && has_ldmatrix(stmts[end])) end++;
            if (end == i + 1) continue;
            std::rotate(stmts.begin() + i, stmts.begin() + i + 1, stmts.begin() + end);
            changed = true;
            i = end - 1;
        }
        return Block::make(stmts);
    }

    Expr visit(const Call *op) override {
        if (op->name.rfind(ldmatrix_prefix, 0) != 0 || fault == TensorCoreFault::FragmentBeforeBarrier) {
            return IRMutator::visit(op);
        }
        std::string name = op->name;
        std::vector<Expr> args = op->args;
        switch (fault) {
        case TensorCoreFault::LaneMapping: {
            internal_assert(lanes) << "tc_fault lane_mapping: an ldmatrix outside the thread loops\n";
            Expr l = Variable::make(Int(32), lanes->name) - lanes->min;
            Expr next = lanes->min + (l / 8) * 8 + (l + 1) % 8;
            for (size_t i = 1; i < args.size(); i++) {
                args[i] = substitute(lanes->name, next, args[i]);
            }
            break;
        }
        case TensorCoreFault::DropTrans:
            if (name == ldmatrix_trans_name) name = ldmatrix_name;
            break;
        case TensorCoreFault::UnswizzledRows:
            for (size_t i = 1; i < args.size(); i++) {
                args[i] = DropXor().mutate(args[i]);
            }
            break;
        case TensorCoreFault::None:
        case TensorCoreFault::FragmentBeforeBarrier:
            break;
        }
        Expr broken = Call::make(op->type, name, args, op->call_type, op->func, op->value_index, op->image, op->param);
        changed = changed || !equal(broken, Expr(op));
        return broken;
    }

public:
    bool changed = false;
    explicit BreakLdmatrix(TensorCoreFault fault) : fault(fault) {
    }
};

}  // namespace

Stmt break_tensor_cores(const Stmt &s, TensorCoreFault fault) {
    if (fault == TensorCoreFault::None) return s;
    BreakLdmatrix breaker(fault);
    Stmt broken = breaker.mutate(s);
    internal_assert(breaker.changed) << "tensor-core fault " << (int)fault
                                     << ": nothing it changes (no lane variable, .trans or XOR in the rows, or no "
                                        "fragments loaded after a barrier)\n";
    return broken;
}

}  // namespace testing
}  // namespace alcop
