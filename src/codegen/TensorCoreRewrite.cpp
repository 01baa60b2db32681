/** \file
 * The LLVM rewrite of the tensor-core markers (TensorCoreMarkers.h) into NVVM intrinsics:
 * groups of scalar marker calls become one `llvm.nvvm.mma.m16n8k16.*` or
 * `llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4*` call each, marked convergent.
 *
 * Why grouping: Halide 14 splits a vector-typed extern call into one call per lane, so one
 * instruction reaches LLVM as four scalar calls, one per result register. The calls of one
 * instruction are recognized by their operands (the same values, see ValueMatch.h), never
 * by their position, so that code Halide puts between them does not matter.
 *
 * Why convergent: the intrinsics are warp-collective, but LLVM 14 declares them `readnone`
 * (mma) or `argmemonly readonly` (ldmatrix) only; without `convergent` a transformation may
 * move them into code that not all lanes of the warp reach.
 *
 * The ldmatrix rows of a k step that share one term of their index (the slot's base) and differ
 * in the other (a thread's swizzled offset) are addressed one term at a time (AddressTerms.h).
 *
 * Runs inside the one marker pass (AsyncCopyRewrite.cpp), at EP_EarlyAsPossible: it sees the
 * IR exactly as Halide wrote it. Built with -fno-rtti against the shared libLLVM.
 */

#include "codegen/TensorCoreRewrite.h"

#include "codegen/AddressTerms.h"
#include "codegen/TensorCoreMarkers.h"
#include "codegen/ValueMatch.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/IR/ValueHandle.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Transforms/Utils/Local.h>

#include <array>
#include <optional>
#include <string>

namespace alcop {

namespace {

using namespace llvm;

constexpr unsigned shared_space = 3;

enum class TensorCoreMarker { None, MmaF16, MmaBf16, Ldmatrix, LdmatrixTrans };

TensorCoreMarker marker_kind(const Function *f) {
    if (!f) {
        return TensorCoreMarker::None;
    }
    StringRef name = f->getName();
    if (name == mma_f16_name) {
        return TensorCoreMarker::MmaF16;
    } else if (name == mma_bf16_name) {
        return TensorCoreMarker::MmaBf16;
    } else if (name == ldmatrix_name) {
        return TensorCoreMarker::Ldmatrix;
    } else if (name == ldmatrix_trans_name) {
        return TensorCoreMarker::LdmatrixTrans;
    }
    return TensorCoreMarker::None;
}

bool is_mma(TensorCoreMarker kind) {
    return kind == TensorCoreMarker::MmaF16 || kind == TensorCoreMarker::MmaBf16;
}

bool is_ldmatrix(TensorCoreMarker kind) {
    return kind == TensorCoreMarker::Ldmatrix || kind == TensorCoreMarker::LdmatrixTrans;
}

bool is_16_bit(const Type *t) {
    return t->isHalfTy() || t->isBFloatTy() || t->isIntegerTy(16);
}

bool has_signature(const Function &f, TensorCoreMarker kind) {
    FunctionType *t = f.getFunctionType();
    if (!f.isDeclaration() || t->isVarArg() || !t->getParamType(0)->isIntegerTy(32)) {
        return false;
    }
    if (is_mma(kind)) {
        if (t->getNumParams() != mma_marker_args || !t->getReturnType()->isFloatTy()) {
            return false;
        }
        for (unsigned i = 1; i < 7; i++) {
            if (!t->getParamType(i)->isIntegerTy(32)) {
                return false;
            }
        }
        for (unsigned i = 7; i < 11; i++) {
            if (!t->getParamType(i)->isFloatTy()) {
                return false;
            }
        }
        return true;
    } else if (is_ldmatrix(kind)) {
        if (t->getNumParams() != ldmatrix_marker_args || !t->getReturnType()->isIntegerTy(32)) {
            return false;
        }
        for (unsigned i = 1; i < 9; i++) {
            if (!is_16_bit(t->getParamType(i))) {
                return false;
            }
        }
        return true;
    }
    return false;
}

// The constant result index j of a marker call.
unsigned result_index(const CallInst *call) {
    const auto *j = dyn_cast<ConstantInt>(call->getArgOperand(0));
    if (!j || j->getZExtValue() > 3) {
        report_fatal_error(Twine("alcop: ") + call->getCalledFunction()->getName() +
                           ": the result index j is not a constant in 0..3");
    }
    return (unsigned)j->getZExtValue();
}

// The calls of `kind` in f, block by block, each block's in program order.
SmallVector<SmallVector<CallInst *, 16>, 4> calls_by_block(Function &f, bool (*kind)(TensorCoreMarker)) {
    SmallVector<SmallVector<CallInst *, 16>, 4> blocks;
    for (BasicBlock &bb : f) {
        SmallVector<CallInst *, 16> calls;
        for (Instruction &i : bb) {
            if (auto *call = dyn_cast<CallInst>(&i)) {
                if (kind(marker_kind(call->getCalledFunction()))) {
                    calls.push_back(call);
                }
            }
        }
        if (!calls.empty()) {
            blocks.push_back(calls);
        }
    }
    return blocks;
}

// The calls of one instruction, the first (in program order) first.
struct Group {
    SmallVector<CallInst *, 4> calls;
};

// Replaces each call of g by element j of `intrinsic_call`, and erases what only the calls used.
void replace_group(const Group &g, CallInst *intrinsic_call) {
    SmallVector<WeakTrackingVH, 32> operands;
    for (CallInst *call : g.calls) {
        IRBuilder<> b(call);
        call->replaceAllUsesWith(b.CreateExtractValue(intrinsic_call, {result_index(call)}));
        for (Value *v : call->args()) {
            if (isa<Instruction>(v)) {
                operands.push_back(v);
            }
        }
        call->eraseFromParent();
    }
    // Operands may be listed more than once, or still used: the permissive form skips those.
    RecursivelyDeleteTriviallyDeadInstructionsPermissive(operands);
}

// ---- ldmatrix ----

// Where a 16-bit row element was loaded from: `load`, lane `lane` of its value.
struct RowElement {
    LoadInst *load = nullptr;
    unsigned lane = 0;
};

bool points_into_shared(const Value *p) {
    for (int steps = 0; steps < 32; steps++) {
        if (p->getType()->getPointerAddressSpace() == shared_space) {
            return true;
        }
        if (const auto *gep = dyn_cast<GEPOperator>(p)) {
            p = gep->getPointerOperand();
        } else if (const auto *cast = dyn_cast<BitCastOperator>(p)) {
            p = cast->getOperand(0);
        } else if (const auto *cast = dyn_cast<AddrSpaceCastOperator>(p)) {
            p = cast->getOperand(0);
        } else {
            return false;
        }
    }
    return false;
}

RowElement row_element(const CallInst *call, unsigned k) {
    Value *v = call->getArgOperand(1 + k);
    while (auto *cast = dyn_cast<BitCastInst>(v)) {
        v = cast->getOperand(0);  // e.g. a half reinterpreted as i16
    }
    RowElement e;
    if (auto *extract = dyn_cast<ExtractElementInst>(v)) {
        auto *lane = dyn_cast<ConstantInt>(extract->getIndexOperand());
        e.load = dyn_cast<LoadInst>(extract->getVectorOperand());
        e.lane = lane ? (unsigned)lane->getZExtValue() : ~0u;
        if (!lane) {
            e.load = nullptr;
        }
    } else {
        e.load = dyn_cast<LoadInst>(v);
    }
    if (!e.load || !e.load->isSimple() || !is_16_bit(e.load->getType()->getScalarType()) ||
        !points_into_shared(e.load->getPointerOperand())) {
        report_fatal_error(Twine("alcop: ") + call->getCalledFunction()->getName() + ": row element e" + Twine(k) +
                           " is not a 16-bit load from shared memory");
    }
    return e;
}

// A row element's address, its lane included.
ElementAddress element_address(const RowElement &e) {
    const DataLayout &dl = e.load->getModule()->getDataLayout();
    ElementAddress a = alcop::element_address(e.load->getPointerOperand(), dl);
    a.bytes += (int64_t)e.lane * (int64_t)dl.getTypeStoreSize(e.load->getType()->getScalarType());
    return a;
}

// Whether `e` is `bytes` bytes past `e0`.
bool is_at_offset(const RowElement &e, const RowElement &e0, int64_t bytes) {
    const ElementAddress a = element_address(e), a0 = element_address(e0);
    const bool same_index =
        (!a.index && !a0.index) || (a.index && a0.index && a.scale == a0.scale && same_value(a.index, a0.index));
    return same_index && a.bytes - a0.bytes == bytes && same_value(a.base, a0.base);
}

bool same_address(const RowElement &a, const RowElement &b) {
    return a.lane == b.lane && a.load->getType() == b.load->getType() &&
           same_value(a.load->getPointerOperand(), b.load->getPointerOperand());
}

// Only the thread's own stack (Halide's per-thread arrays) may be written between the calls
// of one group: the group reads shared memory once, at its first call.
bool writes_only_own_stack(const Instruction &i) {
    if (!i.mayWriteToMemory()) {
        return true;
    }
    if (const auto *call = dyn_cast<CallInst>(&i)) {
        // The markers are pure by contract, whatever attributes their declarations carry.
        return marker_kind(call->getCalledFunction()) != TensorCoreMarker::None;
    }
    const auto *store = dyn_cast<StoreInst>(&i);
    return store && store->isSimple() && isa<AllocaInst>(getUnderlyingObject(store->getPointerOperand()));
}

// The row address as an i8 addrspace(3)* in front of `before`; with `terms`, one step of
// pointer arithmetic per term (AddressTerms.h): where the rows of a k step differ in the
// thread's swizzled offset and share the slot's base (B's n8 tile pairs, read with .trans),
// each row then takes one add and an immediate.
Value *row_address(const RowElement &e0, const std::optional<IndexTerms> &terms, Instruction *before) {
    IRBuilder<> b(before);
    Value *p = e0.load->getPointerOperand();
    Type *element = e0.load->getType()->getScalarType();
    unsigned space = p->getType()->getPointerAddressSpace();
    if (terms) {
        const ElementAddress a = element_address(e0);
        space = a.base->getType()->getPointerAddressSpace();
        p = address_by_terms(b, a, *terms, e0.load->getModule()->getDataLayout());
    } else if (e0.lane != 0) {
        p = b.CreateConstGEP1_32(element, b.CreateBitCast(p, element->getPointerTo(space)), e0.lane);
    }
    p = b.CreateBitCast(p, b.getInt8PtrTy(space));
    // A generic pointer into shared memory (points_into_shared checked it) casts back losslessly.
    return space == shared_space ? p : b.CreateAddrSpaceCast(p, b.getInt8PtrTy(shared_space));
}

bool rewrite_ldmatrix(Function &f) {
    bool changed = false;
    Module &m = *f.getParent();
    for (auto &calls : calls_by_block(f, is_ldmatrix)) {
        SmallVector<Group, 8> groups;
        SmallVector<RowElement, 8> firsts;  // e0 of each group's first call
        for (CallInst *call : calls) {
            result_index(call);
            RowElement e0 = row_element(call, 0);
            const int64_t element_bytes = 2;
            for (unsigned k = 1; k < 8; k++) {
                if (!is_at_offset(row_element(call, k), e0, k * element_bytes)) {
                    report_fatal_error(Twine("alcop: ") + call->getCalledFunction()->getName() + ": row element e" +
                                       Twine(k) + " is not " + Twine(2 * k) + " bytes past e0");
                }
            }
            size_t g = 0;
            while (g < groups.size() && !(groups[g].calls[0]->getCalledFunction() == call->getCalledFunction() &&
                                          same_address(firsts[g], e0))) {
                g++;
            }
            if (g == groups.size()) {
                groups.push_back({});
                firsts.push_back(e0);
            }
            groups[g].calls.push_back(call);
        }
        const DataLayout &dl = m.getDataLayout();
        SmallVector<std::optional<IndexTerms>, 8> terms;
        for (const RowElement &e0 : firsts) {
            terms.push_back(index_terms(element_address(e0), dl));
        }
        for (size_t g = 0; g < groups.size(); g++) {
            CallInst *first = groups[g].calls[0], *last = groups[g].calls.back();
            for (Instruction *i = first->getNextNode(); i != last; i = i->getNextNode()) {
                if (!writes_only_own_stack(*i)) {
                    report_fatal_error(Twine("alcop: memory is written between the ") +
                                       first->getCalledFunction()->getName() + " calls of one row address");
                }
            }
            bool trans = marker_kind(first->getCalledFunction()) == TensorCoreMarker::LdmatrixTrans;
            Value *address = row_address(firsts[g], shares_one_term(terms, g) ? terms[g] : std::nullopt, first);
            Function *intrinsic =
                Intrinsic::getDeclaration(&m,
                                          trans ? Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16 :
                                                  Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16,
                                          {address->getType()});
            CallInst *load = IRBuilder<>(first).CreateCall(intrinsic, {address});
            load->addFnAttr(Attribute::Convergent);
            replace_group(groups[g], load);
            changed = true;
        }
    }
    return changed;
}

// ---- mma ----

constexpr unsigned mma_operands = mma_marker_args - 1;

bool same_operands(const CallInst *a, const CallInst *b) {
    if (a->getCalledFunction() != b->getCalledFunction()) {
        return false;
    }
    for (unsigned i = 1; i <= mma_operands; i++) {
        if (!same_value(a->getArgOperand(i), b->getArgOperand(i))) {
            return false;
        }
    }
    return true;
}

bool rewrite_mma(Function &f) {
    bool changed = false;
    Module &m = *f.getParent();
    LLVMContext &context = m.getContext();
    for (auto &calls : calls_by_block(f, is_mma)) {
        SmallVector<Group, 8> groups;
        for (CallInst *call : calls) {
            result_index(call);
            size_t g = 0;
            while (g < groups.size() && !same_operands(groups[g].calls[0], call)) {
                g++;
            }
            if (g == groups.size()) {
                groups.push_back({});
            }
            groups[g].calls.push_back(call);
        }
        for (const Group &g : groups) {
            std::array<bool, 4> seen{};
            for (CallInst *call : g.calls) {
                seen[result_index(call)] = true;
            }
            for (unsigned j = 0; j < 4; j++) {
                if (!seen[j]) {
                    report_fatal_error(Twine("alcop: an ") + g.calls[0]->getCalledFunction()->getName() +
                                       " group has no call for j = " + Twine(j) +
                                       ": the four calls of one mma do not share their operands");
                }
            }
            CallInst *first = g.calls[0];
            const bool bf16 = marker_kind(first->getCalledFunction()) == TensorCoreMarker::MmaBf16;
            IRBuilder<> b(first);
            SmallVector<Value *, mma_operands> args;
            for (unsigned i = 1; i <= mma_operands; i++) {
                Value *v = first->getArgOperand(i);
                // f16 operands travel as <2 x half>, the low half first (NVPTX is little-endian).
                if (!bf16 && i <= 6) {
                    v = b.CreateBitCast(v, FixedVectorType::get(Type::getHalfTy(context), 2));
                }
                args.push_back(v);
            }
            Function *intrinsic = Intrinsic::getDeclaration(&m, bf16 ? Intrinsic::nvvm_mma_m16n8k16_row_col_bf16 :
                                                                       Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32);
            CallInst *mma = b.CreateCall(intrinsic, args);
            mma->addFnAttr(Attribute::Convergent);
            replace_group(g, mma);
            changed = true;
        }
    }
    return changed;
}

}  // namespace

bool is_tensor_core_marker(const Function &f) {
    StringRef name = f.getName();
    if (!name.startswith(mma_prefix) && !name.startswith(ldmatrix_prefix)) {
        return false;
    }
    bool ok = has_signature(f, marker_kind(&f));
    for (const User *u : f.users()) {
        const auto *call = dyn_cast<CallInst>(u);
        ok = ok && call && call->getCalledOperand() == &f;
    }
    if (!ok) {
        report_fatal_error(Twine("alcop: ") + name + " does not match the marker contract of TensorCoreMarkers.h");
    }
    return true;
}

bool rewrite_tensor_core_markers(Function &f) {
    // ldmatrix first: its results feed the mma operands, which then compare equal as
    // extracts of one intrinsic call.
    bool changed = rewrite_ldmatrix(f);
    changed |= rewrite_mma(f);
    return changed;
}

}  // namespace alcop
