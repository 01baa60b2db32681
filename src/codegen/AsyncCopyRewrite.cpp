/** \file
 * The LLVM half of the cp.async lowering: a legacy function pass, registered with LLVM's
 * PassManagerBuilder at EP_EarlyAsPossible, that turns the marker calls of
 * AsyncCopyMarkers.h into cp.async instructions in the NVPTX modules that Halide 14 emits.
 * It is the one marker pass of the project: it also hands each function to the tensor-core
 * rewrite (TensorCoreRewrite.cpp, contract in TensorCoreMarkers.h), so that every marker is
 * known, checked and erased in one place, under one registration.
 *
 * Why a pass in LLVM: Halide 14's PTX backend can neither take the address of a buffer
 * element nor call a void intrinsic, so the copy lowering leaves marker calls in the IR. Halide
 * builds its PTX pipeline with a PassManagerBuilder from the same shared libLLVM that this
 * unit links, so a global extension registered here runs on every NVPTX module Halide compiles
 * in this process. EP_EarlyAsPossible runs first in the function pipeline, so the pass sees
 * the IR exactly as Halide's codegen wrote it.
 *
 * Assumes (what Halide 14 emits, checked by experiment; see test/ptx/llvm_rewrite_test.cpp):
 *  - A copy is one store, or a few contiguous slice stores, of a value assembled lane by lane
 *    from marker calls (`insertelement` chain; a scalar copy stores the call directly). The
 *    stored value may be reinterpreted (`bitcast`) and sliced (`shufflevector`,
 *    `extractelement`) on the way to the stores: an aligned 4 x 32-bit copy is stored as one
 *    i128, wider vectors are split into 64-bit slices.
 *  - Each call's argument is one lane of the loaded value, reached through `extractelement`,
 *    `shufflevector`, `insertelement` and `bitcast` from one or more slice loads.
 *  - Shared memory is addrspace(3) (Halide addresses it from `addrspace(3)* null`, sometimes
 *    cast to a generic pointer); global buffers are the kernel's generic pointer arguments.
 *
 * Guarantees:
 *  - A copy becomes one `cp.async.{ca|cg}.shared.global [dst], [src], size, src_bytes` only if
 *    it moves 4, 8 or 16 contiguous bytes, the stores write shared memory and the loads read
 *    global memory at addresses whose `align` is at least the copy size, and nothing between
 *    the loads and the stores touches memory. Otherwise each marker call is replaced by its
 *    argument, zeroed past src_bytes, and the copy stays synchronous: the same result, just
 *    not an async one. Where src_bytes is not a constant, its loads read the input's first
 *    bytes when it is 0, as cp.async reads nothing then (a predicated prefetch's source may lie
 *    past the input).
 *  - The cp.async of a block whose global addresses share one term of their index and differ
 *    in the other address memory by one pointer step per term (AddressTerms.h): the same
 *    addresses, computed with fewer instructions in the loop.
 *  - Commit and wait calls become `cp.async.commit_group` / `cp.async.wait_group n`; their
 *    results become 0. A wait whose count is not a constant waits for all groups (n = 0).
 *  - All asm is volatile and clobbers memory, so LLVM never moves a shared-memory access
 *    across a copy, commit or wait.
 *  - Afterwards no call to an `alcop_cp_async*` function remains, and their declarations are
 *    erased. A module that is not NVPTX, or declares no marker, is left untouched.
 *  - `alcop_launch_bounds(threads, blocks)` calls (LaunchBounds.h) become their kernel's nvvm
 *    annotations maxntidx and minctasm, and are erased with their declaration.
 * It does not know the target's compute capability: the Halide side must only emit markers
 * for sm_80 or newer (cp.async needs PTX 7.0 and sm_80).
 *
 * Set ALCOP_ASYNC_COPY_DEBUG=1 to print, for each copy, whether it became async or why not.
 */

#include "codegen/AddressTerms.h"
#include "codegen/AsyncCopyMarkers.h"
#include "codegen/TensorCoreRewrite.h"
#include "codegen/ValueMatch.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/Pass.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/PassManagerBuilder.h>
#include <llvm/Transforms/Utils/Local.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

namespace alcop {

namespace {

using namespace llvm;

// NVPTX address spaces.
constexpr unsigned generic_space = 0;
constexpr unsigned global_space = 1;
constexpr unsigned shared_space = 3;

// Any function with this prefix belongs to the contract; an unknown one is a bug on the Halide side.
constexpr const char *marker_prefix = "alcop_cp_async";

enum class Marker { None, Copy, Commit, Wait };

Marker marker_kind(const Function *f) {
    if (!f) {
        return Marker::None;
    }
    StringRef name = f->getName();
    if (name.startswith(async_copy_prefix)) {
        return Marker::Copy;
    } else if (name == async_commit_name) {
        return Marker::Commit;
    } else if (name == async_wait_name) {
        return Marker::Wait;
    }
    return Marker::None;
}

bool debug_enabled() {
    static const bool on = [] {
        const char *v = std::getenv("ALCOP_ASYNC_COPY_DEBUG");
        return v && *v && std::string(v) != "0";
    }();
    return on;
}

// Markers are calls to declarations; anything else (a definition, a signature that is not the
// contract's, an address taken) means the Halide side and this pass disagree, which must not
// silently produce a module with an unresolved call.
void check_declaration(const Function &f) {
    StringRef name = f.getName();
    Marker kind = marker_kind(&f);
    FunctionType *t = f.getFunctionType();
    bool ok = f.isDeclaration() && !t->isVarArg();
    switch (kind) {
    case Marker::Copy:
        ok = ok && t->getNumParams() == 2 && t->getParamType(0) == t->getReturnType() &&
             t->getParamType(1)->isIntegerTy() && !t->getReturnType()->isVoidTy();
        break;
    case Marker::Commit:
        ok = ok && t->getNumParams() == 0 && t->getReturnType()->isIntegerTy();
        break;
    case Marker::Wait:
        ok = ok && t->getNumParams() == 1 && t->getParamType(0)->isIntegerTy() && t->getReturnType()->isIntegerTy();
        break;
    case Marker::None:
        ok = false;
        break;
    }
    for (const User *u : f.users()) {
        const auto *call = dyn_cast<CallInst>(u);
        ok = ok && call && call->getCalledOperand() == &f;
    }
    if (!ok) {
        report_fatal_error(Twine("alcop: ") + name + " does not match the marker contract of AsyncCopyMarkers.h");
    }
}

bool is_kernel(const Function &f) {
    // NVPTX marks kernels in !nvvm.annotations as {f, !"kernel", i32 1}; Halide does the same.
    const NamedMDNode *annotations = f.getParent()->getNamedMetadata("nvvm.annotations");
    if (!annotations) {
        return false;
    }
    for (const MDNode *node : annotations->operands()) {
        if (node->getNumOperands() < 3) {
            continue;
        }
        const auto *fn = dyn_cast_or_null<ValueAsMetadata>(node->getOperand(0).get());
        if (!fn || fn->getValue() != &f) {
            continue;
        }
        for (unsigned i = 1; i + 1 < node->getNumOperands(); i += 2) {
            const auto *key = dyn_cast_or_null<MDString>(node->getOperand(i).get());
            if (key && key->getString() == "kernel") {
                return true;
            }
        }
    }
    return false;
}

// The memory a pointer points into: the first non-generic address space met walking back
// through casts and GEPs. A generic pointer argument of a kernel is a global buffer (NVPTX
// lowers kernel pointer parameters the same way).
unsigned origin_space(Value *p) {
    while (true) {
        unsigned space = p->getType()->getPointerAddressSpace();
        if (space != generic_space) {
            return space;
        }
        if (auto *gep = dyn_cast<GEPOperator>(p)) {
            p = gep->getPointerOperand();
        } else if (auto *cast = dyn_cast<BitCastOperator>(p)) {
            p = cast->getOperand(0);
        } else if (auto *cast = dyn_cast<AddrSpaceCastOperator>(p)) {
            p = cast->getOperand(0);
        } else if (auto *arg = dyn_cast<Argument>(p)) {
            return is_kernel(*arg->getParent()) ? global_space : generic_space;
        } else {
            return generic_space;
        }
    }
}

// A pointer as a base plus a constant byte offset: casts and constant GEPs are stripped.
// Halide emits the constant part of a slice's index as its own GEP (p + 2 elements is
// `gep (gep p, i), 2`), so two slices of one access split into equal bases.
struct SplitPointer {
    Value *base;
    int64_t offset;
};

SplitPointer split_pointer(Value *p, const DataLayout &dl) {
    int64_t offset = 0;
    while (true) {
        if (auto *cast = dyn_cast<BitCastOperator>(p)) {
            p = cast->getOperand(0);
        } else if (auto *cast = dyn_cast<AddrSpaceCastOperator>(p)) {
            // Generic <-> shared/global moves every address by the same amount, so byte
            // differences survive it.
            p = cast->getOperand(0);
        } else if (auto *gep = dyn_cast<GEPOperator>(p)) {
            APInt c(dl.getIndexTypeSizeInBits(gep->getType()), 0);
            if (!gep->accumulateConstantOffset(dl, c)) {
                break;
            }
            offset += c.getSExtValue();
            p = gep->getPointerOperand();
        } else {
            break;
        }
    }
    return {p, offset};
}

// Whether pointer p addresses `delta` bytes past pointer p0.
bool is_at_offset(Value *p, Value *p0, int64_t delta, const DataLayout &dl) {
    SplitPointer a = split_pointer(p, dl), b = split_pointer(p0, dl);
    return a.offset - b.offset == delta && a.base->getType() == b.base->getType() && same_value(a.base, b.base);
}

bool is_byte_sized(Type *t, const DataLayout &dl) {
    return t->isSized() && !t->isPointerTy() && !t->isVectorTy() &&
           dl.getTypeSizeInBits(t) == 8 * dl.getTypeStoreSize(t);
}

// Size in bytes of one element of a vector (or of a scalar), 0 if not a whole number of bytes.
uint64_t element_bytes(Type *t, const DataLayout &dl) {
    Type *e = t->getScalarType();
    return is_byte_sized(e, dl) ? dl.getTypeStoreSize(e).getFixedSize() : 0;
}

// The bytes [offset, offset + size) of the value v, traced back to the load they come from.
struct LoadedBytes {
    LoadInst *load = nullptr;
    uint64_t offset = 0;  // In the loaded value.
};

LoadedBytes trace_to_load(Value *v, uint64_t offset, uint64_t size, const DataLayout &dl) {
    for (int steps = 0; steps < 64; steps++) {
        if (auto *load = dyn_cast<LoadInst>(v)) {
            Type *t = load->getType();
            if (!t->isSized() || offset + size > dl.getTypeStoreSize(t)) {
                return {};
            }
            return {load, offset};
        } else if (auto *cast = dyn_cast<BitCastInst>(v)) {
            // Same bytes, other lanes (NVPTX is little-endian: lane 0 holds the lowest bytes).
            if (cast->getSrcTy()->isPtrOrPtrVectorTy() || element_bytes(cast->getSrcTy(), dl) == 0) {
                return {};
            }
            v = cast->getOperand(0);
            continue;
        } else if (auto *extract = dyn_cast<ExtractElementInst>(v)) {
            auto *idx = dyn_cast<ConstantInt>(extract->getIndexOperand());
            uint64_t es = element_bytes(extract->getVectorOperandType(), dl);
            if (!idx || es == 0 || offset + size > es) {
                return {};
            }
            v = extract->getVectorOperand();
            offset += idx->getZExtValue() * es;
            continue;
        }
        // The remaining steps select one lane of a vector.
        uint64_t es = element_bytes(v->getType(), dl);
        if (es == 0 || !v->getType()->isVectorTy()) {
            return {};
        }
        uint64_t lane = offset / es, within = offset % es;
        if (within + size > es) {
            return {};  // The bytes straddle two lanes.
        }
        if (auto *shuffle = dyn_cast<ShuffleVectorInst>(v)) {
            int m = shuffle->getMaskValue(lane);
            if (m < 0) {
                return {};
            }
            auto *op_type = cast<FixedVectorType>(shuffle->getOperand(0)->getType());
            unsigned n = op_type->getNumElements();
            v = shuffle->getOperand((unsigned)m < n ? 0 : 1);
            offset = ((unsigned)m % n) * es + within;
        } else if (auto *insert = dyn_cast<InsertElementInst>(v)) {
            auto *idx = dyn_cast<ConstantInt>(insert->getOperand(2));
            if (!idx) {
                return {};
            }
            if (idx->getZExtValue() == lane) {
                v = insert->getOperand(1);
                offset = within;
            } else {
                v = insert->getOperand(0);
            }
        } else {
            return {};
        }
    }
    return {};
}

// One store of part of a copy: the bytes [offset, offset + size) of the assembled value.
struct StorePiece {
    StoreInst *store;
    uint64_t offset, size;
};

// Follows every use of v (bytes [offset, ...) of the assembled value) to the stores that
// write it. Fails on any other use: the assembled value must exist only to be stored.
bool collect_stores(Value *v, uint64_t offset, const DataLayout &dl, SmallVectorImpl<StorePiece> &pieces,
                    int depth = 0) {
    if (depth > 8 || v->use_empty()) {
        return false;
    }
    uint64_t es = element_bytes(v->getType(), dl);
    if (es == 0) {
        return false;
    }
    for (User *u : v->users()) {
        if (auto *store = dyn_cast<StoreInst>(u)) {
            if (store->getValueOperand() != v || store->getPointerOperand() == v) {
                return false;
            }
            pieces.push_back({store, offset, dl.getTypeStoreSize(v->getType()).getFixedSize()});
        } else if (auto *cast = dyn_cast<BitCastInst>(u)) {
            if (cast->getDestTy()->isPtrOrPtrVectorTy() || !collect_stores(cast, offset, dl, pieces, depth + 1)) {
                return false;
            }
        } else if (auto *extract = dyn_cast<ExtractElementInst>(u)) {
            auto *idx = dyn_cast<ConstantInt>(extract->getIndexOperand());
            if (!idx || !collect_stores(extract, offset + idx->getZExtValue() * es, dl, pieces, depth + 1)) {
                return false;
            }
        } else if (auto *shuffle = dyn_cast<ShuffleVectorInst>(u)) {
            // Only a slice: lanes [first, first + n) of v, in order.
            if (shuffle->getOperand(0) != v || !isa<UndefValue>(shuffle->getOperand(1))) {
                return false;
            }
            ArrayRef<int> mask = shuffle->getShuffleMask();
            int first = mask.empty() ? -1 : mask[0];
            for (size_t i = 0; i < mask.size(); i++) {
                if (first < 0 || mask[i] != first + (int)i) {
                    return false;
                }
            }
            if (!collect_stores(shuffle, offset + (uint64_t)first * es, dl, pieces, depth + 1)) {
                return false;
            }
        } else {
            return false;
        }
    }
    return true;
}

// Deletes those of `roots` that are dead instructions, and what becomes dead with them.
void erase_if_dead(ArrayRef<Value *> roots) {
    SmallVector<WeakTrackingVH, 16> dead;
    for (Value *v : roots) {
        auto *i = dyn_cast<Instruction>(v);
        if (i && isInstructionTriviallyDead(i)) {
            dead.push_back(i);
        }
    }
    // A root listed twice is seen as null once the first copy is gone, which is allowed.
    RecursivelyDeleteTriviallyDeadInstructions(dead);
}

// One copy: the marker calls for its lanes and the value they assemble.
struct CopyGroup {
    SmallVector<CallInst *, 16> lanes;  // lanes[k] produces lane k.
    Value *assembled = nullptr;         // The last insertelement, or the call of a scalar copy.
};

// Finds the copy that `call` belongs to. Fails (returns a group with no `assembled`) if the
// calls do not fill lanes 0..L-1 of one insertelement chain exactly once.
CopyGroup find_group(CallInst *call) {
    CopyGroup g;
    g.lanes.push_back(call);
    if (!call->hasOneUse()) {
        return g;
    }
    auto *insert = dyn_cast<InsertElementInst>(call->user_back());
    if (!insert) {
        g.assembled = call;  // Scalar copy; collect_stores checks its uses.
        return g;
    }
    if (insert->getOperand(1) != call) {
        return g;
    }
    // Forward to the end of the chain ...
    Instruction *last = insert;
    while (last->hasOneUse()) {
        auto *next = dyn_cast<InsertElementInst>(last->user_back());
        if (!next || next->getOperand(0) != last) {
            break;
        }
        last = next;
    }
    // ... and back to its start, collecting lanes.
    auto *type = dyn_cast<FixedVectorType>(last->getType());
    if (!type) {
        return g;
    }
    g.lanes.assign(type->getNumElements(), nullptr);
    Value *v = last;
    while (auto *ie = dyn_cast<InsertElementInst>(v)) {
        auto *idx = dyn_cast<ConstantInt>(ie->getOperand(2));
        auto *lane_call = dyn_cast<CallInst>(ie->getOperand(1));
        if (!idx || idx->getZExtValue() >= g.lanes.size() || !lane_call ||
            lane_call->getCalledFunction() != call->getCalledFunction() || !lane_call->hasOneUse() ||
            g.lanes[idx->getZExtValue()] || (ie != last && !ie->hasOneUse())) {
            g.lanes.assign(1, call);
            return g;
        }
        g.lanes[idx->getZExtValue()] = lane_call;
        v = ie->getOperand(0);
    }
    bool complete = isa<UndefValue>(v) && std::none_of(g.lanes.begin(), g.lanes.end(), [](CallInst *c) { return !c; });
    if (!complete) {
        // Keep what was found so that all of them fall back together.
        SmallVector<CallInst *, 16> found;
        for (CallInst *c : g.lanes) {
            if (c) {
                found.push_back(c);
            }
        }
        g.lanes = found;
        return g;
    }
    g.assembled = last;
    return g;
}

class AsyncCopyRewrite : public FunctionPass {
public:
    static char ID;
    AsyncCopyRewrite() : FunctionPass(ID) {
    }

    StringRef getPassName() const override {
        return "ALCOP marker rewrite (cp.async, launch bounds, mma, ldmatrix)";
    }

    bool doInitialization(Module &m) override {
        markers.clear();
        tensor_core_markers.clear();
        // Cheap exit for everything that is not an NVPTX module using the markers (Halide
        // runs this on every function of every module, including all of libdevice).
        if (!StringRef(m.getTargetTriple()).startswith("nvptx")) {
            return false;
        }
        const bool bounded = annotate_launch_bounds(m);
        for (Function &f : m) {
            if (f.getName().startswith(marker_prefix)) {
                check_declaration(f);
                markers.push_back(&f);
            } else if (is_tensor_core_marker(f)) {
                tensor_core_markers.push_back(&f);
            }
        }
        return bounded;
    }

    bool runOnFunction(Function &f) override {
        if (f.isDeclaration()) {
            return false;
        }
        // Tensor-core markers first: they never feed a copy, and the copy rewrite then sees
        // intrinsic calls where they were.
        bool changed = !tensor_core_markers.empty() && rewrite_tensor_core_markers(f);
        return (!markers.empty() && rewrite(f)) || changed;
    }

    bool doFinalization(Module &m) override {
        // A program that links the library and loads a plugin that links it too (a generator
        // with alcop::auto_pipeline under the Alcop autoscheduler) registers two copies of this
        // pass; the first to finish has rewritten the calls and erased the markers. Keep only
        // the markers still in the module (compared by address, never dereferenced).
        SmallPtrSet<const Function *, 32> present;
        for (const Function &f : m) {
            present.insert(&f);
        }
        for (auto *list : {&markers, &tensor_core_markers}) {
            list->erase(std::remove_if(list->begin(), list->end(), [&](Function *f) { return !present.count(f); }),
                        list->end());
        }
        if (markers.empty() && tensor_core_markers.empty()) {
            return false;
        }
        // Functions the pass manager did not visit (none, under Halide) still get rewritten,
        // so that the guarantee "no marker call remains" holds.
        SmallPtrSet<Function *, 4> leftover;
        for (const auto *list : {&markers, &tensor_core_markers}) {
            for (Function *marker : *list) {
                for (User *u : marker->users()) {
                    leftover.insert(cast<CallInst>(u)->getFunction());
                }
            }
        }
        for (Function *f : leftover) {
            if (!tensor_core_markers.empty()) {
                rewrite_tensor_core_markers(*f);
            }
            if (!markers.empty()) {
                rewrite(*f);
            }
        }
        for (const auto *list : {&markers, &tensor_core_markers}) {
            for (Function *marker : *list) {
                if (!marker->use_empty()) {
                    report_fatal_error(Twine("alcop: calls to ") + marker->getName() +
                                       " remain after the marker rewrite");
                }
                marker->eraseFromParent();
            }
        }
        markers.clear();
        tensor_core_markers.clear();
        return true;
    }

private:
    SmallVector<Function *, 8> markers;              // cp.async
    SmallVector<Function *, 8> tensor_core_markers;  // mma and ldmatrix (TensorCoreRewrite.cpp)

    // alcop_launch_bounds(threads, blocks) in a kernel becomes its nvvm annotations maxntidx and
    // minctasm, which the NVPTX backend prints as .maxntid and .minnctapersm.
    static bool annotate_launch_bounds(Module &m) {
        Function *marker = m.getFunction(launch_bounds_name);
        if (!marker) {
            return false;
        }
        FunctionType *t = marker->getFunctionType();
        if (!marker->isDeclaration() || t->getNumParams() != 2 || !t->getReturnType()->isIntegerTy()) {
            report_fatal_error(Twine("alcop: ") + launch_bounds_name +
                               " is not the declaration the markers' contract says");
        }
        NamedMDNode *annotations = m.getOrInsertNamedMetadata("nvvm.annotations");
        LLVMContext &context = m.getContext();
        SmallPtrSet<Function *, 4> bounded;
        for (User *u : make_early_inc_range(marker->users())) {
            auto *call = cast<CallInst>(u);
            auto *threads = dyn_cast<ConstantInt>(call->getArgOperand(0));
            auto *blocks = dyn_cast<ConstantInt>(call->getArgOperand(1));
            Function *kernel = call->getFunction();
            if (threads && blocks && bounded.insert(kernel).second) {
                for (auto [key, value] :
                     {std::pair<const char *, ConstantInt *>{"maxntidx", threads}, {"minctasm", blocks}}) {
                    Metadata *fields[] = {
                        ValueAsMetadata::get(kernel), MDString::get(context, key),
                        ValueAsMetadata::get(ConstantInt::get(Type::getInt32Ty(context), value->getZExtValue()))};
                    annotations->addOperand(MDNode::get(context, fields));
                }
            }
            call->replaceAllUsesWith(ConstantInt::get(call->getType(), 0));
            call->eraseFromParent();
        }
        marker->eraseFromParent();
        return true;
    }

    bool rewrite(Function &f) {
        SmallVector<CallInst *, 32> copies, groups;
        for (Function *marker : markers) {
            for (User *u : marker->users()) {
                auto *call = cast<CallInst>(u);
                if (call->getFunction() == &f) {
                    (marker_kind(marker) == Marker::Copy ? copies : groups).push_back(call);
                }
            }
        }
        if (copies.empty() && groups.empty()) {
            return false;
        }
        // Each group is handled once, when its first call is met; the rest are skipped.
        SmallPtrSet<CallInst *, 32> done;
        SmallVector<CallInst *, 32> issued;  // the cp.async the copies became
        for (CallInst *call : copies) {
            if (done.count(call)) {
                continue;
            }
            CopyGroup g = find_group(call);
            done.insert(g.lanes.begin(), g.lanes.end());
            std::string what;
            if (debug_enabled()) {
                raw_string_ostream os(what);
                os << g.lanes.size() << " x " << *call->getType();
            }
            std::string why = rewrite_copy(g, issued);
            if (!why.empty()) {
                make_synchronous(g);
            }
            if (debug_enabled()) {
                errs() << "alcop: copy (" << what << ") in " << f.getName() << ": "
                       << (why.empty() ? "cp.async" : "synchronous, " + why) << "\n";
            }
        }
        for (CallInst *call : groups) {
            rewrite_group_call(call);
        }
        step_source_addresses(issued);
        return true;
    }

    /** The cp.async of a block whose global addresses share one term of their index (the
     * chunk's offset along K) and differ in the other (each copy's row): each address then
     * steps from a pointer of the copy's own, computed before the loop (AddressTerms.h). */
    static void step_source_addresses(ArrayRef<CallInst *> issued) {
        // By block, in the order the copies were issued (so the IR built does not depend on
        // where the blocks lie in memory).
        SmallVector<std::pair<BasicBlock *, SmallVector<CallInst *, 16>>, 4> by_block;
        for (CallInst *call : issued) {
            auto it = std::find_if(by_block.begin(), by_block.end(),
                                   [&](const auto &b) { return b.first == call->getParent(); });
            if (it == by_block.end()) it = by_block.insert(by_block.end(), {call->getParent(), {}});
            it->second.push_back(call);
        }
        for (const auto &[block, calls] : by_block) {
            const DataLayout &dl = block->getModule()->getDataLayout();
            SmallVector<std::pair<CallInst *, ElementAddress>, 16> asyncs;
            SmallVector<std::optional<IndexTerms>, 16> terms;
            for (CallInst *call : calls) {
                // emit_cp_async's source operand: ptrtoint of the copy's global address.
                const Value *source = cast<PtrToIntInst>(call->getArgOperand(1))->getPointerOperand();
                asyncs.push_back({call, element_address(source, dl)});
                terms.push_back(index_terms(asyncs.back().second, dl));
            }
            for (size_t c = 0; c < asyncs.size(); c++) {
                if (!shares_one_term(terms, c)) {
                    continue;
                }
                CallInst *call = asyncs[c].first;
                IRBuilder<> b(call);
                Value *old = call->getArgOperand(1);
                call->setArgOperand(1, b.CreatePtrToInt(address_by_terms(b, asyncs[c].second, *terms[c], dl),
                                                        b.getInt64Ty()));
                erase_if_dead({old});
            }
        }
    }

    // The marker's meaning without cp.async: lane k is the loaded value when its bytes lie
    // inside the first src_bytes, and zero past them (cp.async's zero fill). The copy then
    // happens through the original load and store.
    static void make_synchronous(CopyGroup &g) {
        guard_sources(g);
        for (size_t k = 0; k < g.lanes.size(); k++) {
            CallInst *c = g.lanes[k];
            Value *value = c->getArgOperand(0), *src_bytes = c->getArgOperand(1);
            IRBuilder<> b(c);
            const uint64_t lane_bytes = c->getModule()->getDataLayout().getTypeStoreSize(value->getType());
            Value *inside = b.CreateICmpULT(b.getInt32((uint32_t)(k * lane_bytes)), src_bytes);
            Value *zero = Constant::getNullValue(value->getType());
            c->replaceAllUsesWith(b.CreateSelect(inside, value, zero));
            c->eraseFromParent();
        }
        g.lanes.clear();
    }

    // Moves `v` (and what it is computed from, within `at`'s block) before `at`, where nothing
    // it depends on reads memory. Returns whether `v` is available at `at`.
    static bool hoist_before(Value *v, Instruction *at, int depth = 0) {
        auto *i = dyn_cast<Instruction>(v);
        if (!i || i->getParent() != at->getParent() || i->comesBefore(at)) return true;
        if (i == at || depth > 8 || isa<PHINode>(i) || i->mayReadOrWriteMemory()) return false;
        for (Value *operand : i->operands()) {
            if (!hoist_before(operand, at, depth + 1)) return false;
        }
        i->moveBefore(at);
        return true;
    }

    // A src_bytes known only at run time may be 0 for a tile past the end of its loop (the
    // predicated prefetch, copy/CopyLowering.h), whose source address lies past the input:
    // cp.async reads none of it, and neither may the synchronous copy. Each load the lanes
    // come from then reads the input's first bytes instead (its kernel argument, aligned as
    // the copy) where src_bytes is 0, and the zero fill discards what it reads.
    static void guard_sources(const CopyGroup &g) {
        Value *src_bytes = g.lanes.empty() ? nullptr : g.lanes[0]->getArgOperand(1);
        if (!src_bytes || isa<ConstantInt>(src_bytes)) return;
        const DataLayout &dl = g.lanes[0]->getModule()->getDataLayout();
        const uint64_t lane_bytes = dl.getTypeStoreSize(g.lanes[0]->getType());
        SmallPtrSet<LoadInst *, 4> guarded;
        for (CallInst *c : g.lanes) {
            LoadInst *load = trace_to_load(c->getArgOperand(0), 0, lane_bytes, dl).load;
            if (!load || !guarded.insert(load).second || !same_value(c->getArgOperand(1), src_bytes)) continue;
            auto *input = dyn_cast<Argument>(getUnderlyingObject(load->getPointerOperand()));
            if (!input || !hoist_before(src_bytes, load)) continue;
            IRBuilder<> b(load);
            Value *first = b.CreatePointerBitCastOrAddrSpaceCast(input, load->getPointerOperandType());
            load->setOperand(load->getPointerOperandIndex(),
                             b.CreateSelect(b.CreateICmpNE(src_bytes, b.getInt32(0)), load->getPointerOperand(), first));
        }
    }

    static void rewrite_group_call(CallInst *call) {
        IRBuilder<> b(call);
        std::string text = "cp.async.commit_group;";
        if (marker_kind(call->getCalledFunction()) == Marker::Wait) {
            // A non-constant count cannot be an immediate; waiting for everything is always safe.
            auto *n = dyn_cast<ConstantInt>(call->getArgOperand(0));
            uint64_t count = n && !n->isNegative() ? n->getZExtValue() : 0;
            text = "cp.async.wait_group " + std::to_string(count) + ";";
        }
        auto *type = FunctionType::get(b.getVoidTy(), false);
        b.CreateCall(InlineAsm::get(type, text, "~{memory}", /*hasSideEffects*/ true));
        call->replaceAllUsesWith(ConstantInt::get(call->getType(), 0));
        call->eraseFromParent();
    }

    // Rewrites one copy into cp.async, appended to `issued`. Returns why it cannot be, leaving
    // the IR untouched.
    static std::string rewrite_copy(CopyGroup &g, SmallVectorImpl<CallInst *> &issued) {
        if (!g.assembled) {
            return "the calls do not assemble one vector lane by lane";
        }
        CallInst *first = g.lanes[0];
        const DataLayout &dl = first->getModule()->getDataLayout();
        uint64_t es = element_bytes(first->getType(), dl);
        uint64_t size = es * g.lanes.size();
        if (es == 0 || (size != 4 && size != 8 && size != 16)) {
            return "cp.async moves 4, 8 or 16 bytes, not " + std::to_string(size);
        }
        Value *src_bytes = first->getArgOperand(1);
        for (CallInst *c : g.lanes) {
            if (!same_value(c->getArgOperand(1), src_bytes)) {
                return "the lanes disagree on src_bytes";
            }
        }
        if (auto *c = dyn_cast<ConstantInt>(src_bytes)) {
            if (c->isNegative() || c->getZExtValue() > size) {
                return "src_bytes is outside [0, size]";
            }
        }

        // Destination: the stores must write exactly the bytes [0, size), contiguously.
        SmallVector<StorePiece, 4> pieces;
        if (!collect_stores(g.assembled, 0, dl, pieces)) {
            return "the assembled value has uses other than stores";
        }
        std::sort(pieces.begin(), pieces.end(),
                  [](const StorePiece &a, const StorePiece &b) { return a.offset < b.offset; });
        uint64_t covered = 0;
        for (const StorePiece &p : pieces) {
            if (p.offset != covered || !p.store->isSimple()) {
                return "the stores do not write each byte once";
            }
            covered += p.size;
        }
        if (covered != size) {
            return "the stores do not write each byte once";
        }
        StoreInst *dst = pieces[0].store;
        for (const StorePiece &p : pieces) {
            if (!is_at_offset(p.store->getPointerOperand(), dst->getPointerOperand(), p.offset, dl)) {
                return "the stores are not contiguous";
            }
        }
        if (origin_space(dst->getPointerOperand()) != shared_space) {
            return "the destination is not shared memory";
        }
        if (dst->getAlign().value() < size) {
            return "the destination is aligned to " + std::to_string(dst->getAlign().value()) + " bytes only";
        }

        // Source: lane k must be the bytes [k * es, (k + 1) * es) of one global access.
        SmallVector<LoadInst *, 4> loads;
        LoadInst *src = nullptr;
        for (size_t k = 0; k < g.lanes.size(); k++) {
            LoadedBytes t = trace_to_load(g.lanes[k]->getArgOperand(0), 0, es, dl);
            if (!t.load || !t.load->isSimple()) {
                return "a lane is not a byte range of a load";
            }
            if (k == 0) {
                if (t.offset != 0) {
                    return "lane 0 is not the start of a load";
                }
                src = t.load;
            } else if (!is_at_offset(t.load->getPointerOperand(), src->getPointerOperand(),
                                     (int64_t)(k * es) - (int64_t)t.offset, dl)) {
                return "the lanes are not contiguous in memory";
            }
            if (std::find(loads.begin(), loads.end(), t.load) == loads.end()) {
                loads.push_back(t.load);
            }
        }
        if (origin_space(src->getPointerOperand()) != global_space) {
            return "the source is not global memory";
        }
        if (src->getAlign().value() < size) {
            return "the source is aligned to " + std::to_string(src->getAlign().value()) + " bytes only";
        }

        // cp.async reads global memory where the stores were and writes shared memory some
        // time before the wait, so nothing in between may touch memory.
        BasicBlock *bb = dst->getParent();
        SmallPtrSet<Instruction *, 16> own(g.lanes.begin(), g.lanes.end());
        Instruction *begin = dst, *end = dst;
        for (LoadInst *l : loads) {
            own.insert(l);
        }
        for (const StorePiece &p : pieces) {
            own.insert(p.store);
        }
        for (Instruction *i : own) {
            if (i->getParent() != bb) {
                return "the loads and stores are in different blocks";
            }
            begin = i->comesBefore(begin) ? i : begin;
            end = end->comesBefore(i) ? i : end;
        }
        for (Instruction *i = begin; i != end; i = i->getNextNode()) {
            if (!own.count(i) && i->mayReadOrWriteMemory()) {
                return "memory is accessed between the load and the store";
            }
        }

        issued.push_back(emit_cp_async(end, dst->getPointerOperand(), src->getPointerOperand(), size, src_bytes));

        // Remove the synchronous copy: stores, the value chain, the calls and, if nothing
        // else reads them, the loads (and the address arithmetic only they used).
        SmallVector<Value *, 16> roots;
        for (const StorePiece &p : pieces) {
            roots.push_back(p.store->getValueOperand());
            roots.push_back(p.store->getPointerOperand());
            p.store->eraseFromParent();
        }
        erase_if_dead(roots);
        roots.clear();
        for (CallInst *c : g.lanes) {
            // collect_stores saw every use of the assembled value, so the calls are dead now.
            roots.push_back(c->getArgOperand(0));
            roots.push_back(c->getArgOperand(1));
            c->eraseFromParent();
        }
        g.lanes.clear();
        erase_if_dead(roots);
        return "";
    }

    static CallInst *emit_cp_async(Instruction *before, Value *dst, Value *src, uint64_t size, Value *src_bytes) {
        IRBuilder<> b(before);
        // The shared address as a 32-bit offset into the shared window, the global one as 64 bits.
        auto as_i8_pointer = [&](Value *p, unsigned space) {
            unsigned from = p->getType()->getPointerAddressSpace();
            p = b.CreateBitCast(p, b.getInt8PtrTy(from));
            return from == space ? p : b.CreateAddrSpaceCast(p, b.getInt8PtrTy(space));
        };
        Value *d = b.CreatePtrToInt(as_i8_pointer(dst, shared_space), b.getInt32Ty());
        Value *s = b.CreatePtrToInt(as_i8_pointer(src, global_space), b.getInt64Ty());
        Value *n = b.CreateIntCast(src_bytes, b.getInt32Ty(), /*isSigned*/ false);
        // .cg (bypass L1) exists only for 16 bytes.
        std::string text = std::string("cp.async.") + (size == 16 ? "cg" : "ca") + ".shared.global [$0], [$1], " +
                           std::to_string(size) + ", $2;";
        auto *type = FunctionType::get(b.getVoidTy(), {b.getInt32Ty(), b.getInt64Ty(), b.getInt32Ty()}, false);
        return b.CreateCall(InlineAsm::get(type, text, "r,l,r,~{memory}", /*hasSideEffects*/ true), {d, s, n});
    }
};

char AsyncCopyRewrite::ID = 0;

bool register_rewrite() {
    PassManagerBuilder::addGlobalExtension(
        PassManagerBuilder::EP_EarlyAsPossible,
        [](const PassManagerBuilder &, legacy::PassManagerBase &pm) { pm.add(new AsyncCopyRewrite()); });
    return true;
}

// Registers at load time, so the rewrite is active even before anyone asks.
const bool registered_at_load = async_copy_rewrite_registered();

}  // namespace

bool async_copy_rewrite_registered() {
    // A function-local static registers exactly once, whichever static initializer asks first.
    static const bool registered = register_rewrite();
    return registered;
}

}  // namespace alcop
