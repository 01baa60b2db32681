#include "codegen/ValueMatch.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>

namespace alcop {

namespace {

using namespace llvm;

bool same_value(const Value *a, const Value *b, int &budget) {
    if (a == b) {
        return true;
    }
    if (--budget < 0) {
        return false;
    }
    const auto *ia = dyn_cast<Instruction>(a);
    const auto *ib = dyn_cast<Instruction>(b);
    if (!ia || !ib || !ia->isSameOperationAs(ib)) {
        return false;  // Distinct constants and arguments are distinct values (constants are uniqued).
    }
    // Only instructions whose result depends on nothing but their operands.
    bool pure = isa<BinaryOperator>(ia) || isa<UnaryOperator>(ia) || isa<CastInst>(ia) || isa<GetElementPtrInst>(ia) ||
                isa<CmpInst>(ia) || isa<SelectInst>(ia) || isa<ExtractElementInst>(ia) || isa<InsertElementInst>(ia) ||
                isa<ShuffleVectorInst>(ia) || isa<ExtractValueInst>(ia);
    if (const auto *call = dyn_cast<CallInst>(ia)) {
        // e.g. llvm.nvvm.read.ptx.sreg.tid.x, which Halide reads once per kernel anyway.
        const Function *callee = call->getCalledFunction();
        pure = callee && callee->isIntrinsic() && call->doesNotAccessMemory() && !call->mayHaveSideEffects();
    }
    if (!pure) {
        return false;
    }
    for (unsigned i = 0; i < ia->getNumOperands(); i++) {
        if (!same_value(ia->getOperand(i), ib->getOperand(i), budget)) {
            return false;
        }
    }
    return true;
}

}  // namespace

bool same_value(const Value *a, const Value *b) {
    int budget = 512;
    return same_value(a, b, budget);
}

}  // namespace alcop
