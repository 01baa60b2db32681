#ifndef ALCOP_TEST_THREAD_LOOPS_H
#define ALCOP_TEST_THREAD_LOOPS_H

/** \file
 * For the tests' mutators of tensor-core kernels (EmulatedTensorCores, TensorCoreFaults):
 * an IRMutator that knows the innermost gpu_thread loop around the node it visits, whose
 * variable numbers the lanes of a warp in the kernels of the tensor-core rewrite.
 */

#include "Halide.h"

namespace alcop {
namespace testing {

class ThreadLoopMutator : public Halide::Internal::IRMutator {
protected:
    using Halide::Internal::IRMutator::visit;

    const Halide::Internal::For *lanes = nullptr;  ///< the innermost gpu_thread loop around

    Halide::Internal::Stmt visit(const Halide::Internal::For *op) override {
        if (op->for_type != Halide::Internal::ForType::GPUThread) return IRMutator::visit(op);
        const Halide::Internal::For *outer = lanes;
        lanes = op;
        Halide::Internal::Stmt s = IRMutator::visit(op);
        lanes = outer;
        return s;
    }
};

}  // namespace testing
}  // namespace alcop

#endif
