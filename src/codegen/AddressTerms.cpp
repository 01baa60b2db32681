#include "codegen/AddressTerms.h"

#include "codegen/ValueMatch.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Operator.h>

namespace alcop {

using namespace llvm;

ElementAddress element_address(const Value *p, const DataLayout &dl) {
    ElementAddress a;
    for (int steps = 0; steps < 32; steps++) {
        if (const auto *bitcast = dyn_cast<BitCastOperator>(p)) {
            p = bitcast->getOperand(0);
        } else if (const auto *space_cast = dyn_cast<AddrSpaceCastOperator>(p)) {
            p = space_cast->getOperand(0);
        } else if (const auto *gep = dyn_cast<GEPOperator>(p); gep && gep->getNumIndices() == 1 && !a.index) {
            const int64_t scale = (int64_t)dl.getTypeAllocSize(gep->getSourceElementType());
            const Value *index = gep->getOperand(1);
            while (index) {
                if (const auto *c = dyn_cast<ConstantInt>(index)) {
                    a.bytes += scale * c->getSExtValue();
                    index = nullptr;
                } else if (isa<SExtInst>(index) || isa<ZExtInst>(index)) {
                    a.signed_index = a.signed_index && isa<SExtInst>(index);
                    index = cast<Instruction>(index)->getOperand(0);
                } else if (const auto *add = dyn_cast<BinaryOperator>(index);
                           add && add->getOpcode() == Instruction::Add && isa<ConstantInt>(add->getOperand(1))) {
                    a.bytes += scale * cast<ConstantInt>(add->getOperand(1))->getSExtValue();
                    index = add->getOperand(0);
                } else {
                    break;
                }
            }
            if (index) {
                a.index = index;
                a.scale = scale;
            }
            p = gep->getPointerOperand();
        } else {
            break;
        }
    }
    a.base = p;
    return a;
}

std::optional<IndexTerms> index_terms(const ElementAddress &a, const DataLayout &dl) {
    // address_by_terms steps in iN of the scale: exact where that is 1 to 16 bytes, a power of
    // two (an iN of another size may be allocated rounded up).
    const bool stepped_exactly = a.scale >= 1 && a.scale <= 16 && (a.scale & (a.scale - 1)) == 0;
    const auto *sum = a.index && a.signed_index && stepped_exactly ? dyn_cast<BinaryOperator>(a.index) : nullptr;
    if (!sum || !a.base->getType()->isPointerTy() || isa<Constant>(sum->getOperand(0)) ||
        isa<Constant>(sum->getOperand(1))) {
        return std::nullopt;
    }
    Value *x = sum->getOperand(0), *y = sum->getOperand(1);
    const bool disjoint_or = sum->getOpcode() == Instruction::Or && haveNoCommonBitsSet(x, y, dl);
    if (sum->getOpcode() != Instruction::Add && !disjoint_or) {
        return std::nullopt;
    }
    return IndexTerms{x, y};
}

bool shares_one_term(ArrayRef<std::optional<IndexTerms>> accesses, size_t i) {
    auto same = [](Value *v, const IndexTerms &t) { return same_value(v, t.first) || same_value(v, t.second); };
    for (size_t j = 0; j < accesses.size() && accesses[i]; j++) {
        if (j != i && accesses[j] && same(accesses[i]->first, *accesses[j]) != same(accesses[i]->second, *accesses[j])) {
            return true;
        }
    }
    return false;
}

Value *address_by_terms(IRBuilderBase &b, const ElementAddress &a, const IndexTerms &terms, const DataLayout &dl) {
    const unsigned space = a.base->getType()->getPointerAddressSpace();
    Type *scaled = b.getIntNTy(8 * (unsigned)a.scale);
    Type *wide = dl.getIndexType(a.base->getType());
    Value *p = b.CreateBitCast(const_cast<Value *>(a.base), scaled->getPointerTo(space));
    p = b.CreateGEP(scaled, p, b.CreateSExt(terms.first, wide));
    p = b.CreateGEP(scaled, p, b.CreateSExt(terms.second, wide));
    return b.CreateGEP(b.getInt8Ty(), b.CreateBitCast(p, b.getInt8PtrTy(space)), b.getInt64(a.bytes));
}

}  // namespace alcop
