#include "TensorCoreFaults.h"

#include "PipelineFaults.h"

#include "Error.h"
#include "ThreadLoops.h"
#include "codegen/TensorCoreMarkers.h"

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

class BreakLdmatrix : public ThreadLoopMutator {
    using ThreadLoopMutator::visit;
    const TensorCoreFault fault;

    Expr visit(const Call *op) override {
        if (op->name.rfind(ldmatrix_prefix, 0) != 0) {
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
    if (fault == TensorCoreFault::FragmentBeforeBarrier) {
        bool changed = false;
        Stmt broken = load_fragments_before_barriers(s, &changed);
        internal_assert(changed) << "tensor-core fault fragment_before_barrier: no fragments loaded after a barrier\n";
        return broken;
    }
    BreakLdmatrix breaker(fault);
    Stmt broken = breaker.mutate(s);
    internal_assert(breaker.changed) << "tensor-core fault " << (int)fault
                                     << ": nothing it changes (no lane variable, .trans or XOR in the rows)\n";
    return broken;
}

}  // namespace testing
}  // namespace alcop
