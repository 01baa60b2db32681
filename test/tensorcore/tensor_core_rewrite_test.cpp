// The LLVM rewrite of the tensor-core markers (src/codegen/TensorCoreRewrite.cpp, contract in
// TensorCoreMarkers.h), without Halide: hand-written NVPTX modules in the shape Halide 14 gives
// scalar PureExtern calls (one call per result register, every operand recomputed per call)
// go through the registered marker pass alone (IR checks) and through the O3 + NVPTX pipeline
// Halide builds (PTX checks: exact mma.sync / ldmatrix instructions, counted; no marker left;
// ptxas assembles for sm_80 and sm_90 without spills).

#include "codegen/AsyncCopyMarkers.h"
#include "codegen/TensorCoreMarkers.h"

#include "NvptxPipeline.h"

#include <gtest/gtest.h>

#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

namespace {

using namespace llvm;
using namespace nvptx_test;
using nvptx_test::count;  // not llvm::count

enum class Input { F16, BF16 };

// The element type of the operands as Halide 14 writes it (bf16 travels as i16).
std::string element(Input in) {
    return in == Input::F16 ? "half" : "i16";
}

std::string mma_marker(Input in) {
    return in == Input::F16 ? alcop::mma_f16_name : alcop::mma_bf16_name;
}

std::string declarations(Input in) {
    std::string row;
    for (int k = 0; k < 8; k++) {
        row += ", " + element(in);
    }
    return "declare i32 @alcop_ldmatrix_x4_b16(i32" + row + ")\n" + "declare i32 @alcop_ldmatrix_x4_trans_b16(i32" +
           row + ")\n" + "declare float @" + mma_marker(in) +
           "(i32, i32, i32, i32, i32, i32, i32, float, float, float, float)\n";
}

// One ldmatrix marker call for register j, with its 8 row loads recomputed from `row_start`
// (an i32 element index into shared memory), as Halide emits each call's arguments.
std::string ldmatrix_call(Input in, bool trans, int j, const std::string &row_start, const std::string &name) {
    const std::string e = element(in);
    std::string s, args;
    for (int k = 0; k < 8; k++) {
        std::string v = "%" + name + "_" + std::to_string(k);
        std::string index = row_start;
        if (k > 0) {
            s += "  " + v + "i = add nsw i32 " + row_start + ", " + std::to_string(k) + "\n";
            index = v + "i";
        }
        s += "  " + v + "s = sext i32 " + index + " to i64\n";
        s += "  " + v + "p = getelementptr inbounds " + e + ", " + e + " addrspace(3)* null, i64 " + v + "s\n";
        s += "  " + v + " = load " + e + ", " + e + " addrspace(3)* " + v + "p, align 2\n";
        args += ", " + e + " " + v;
    }
    s += "  %" + name + " = call i32 @alcop_ldmatrix_x4_" + (trans ? "trans_" : "") + "b16(i32 " + std::to_string(j) +
         args + ") nounwind\n";
    return s;
}

// The four calls of one mma: d<j> = mma(j, a, b, c), results %<name>_<j>.
std::string mma_calls(Input in, const std::vector<std::string> &a, const std::vector<std::string> &b,
                      const std::vector<std::string> &c, const std::string &name) {
    std::string s;
    for (int j = 0; j < 4; j++) {
        s += "  %" + name + "_" + std::to_string(j) + " = call float @" + mma_marker(in) + "(i32 " + std::to_string(j);
        for (const auto &v : a) {
            s += ", i32 " + v;
        }
        for (const auto &v : b) {
            s += ", i32 " + v;
        }
        for (const auto &v : c) {
            s += ", float " + v;
        }
        s += ") nounwind\n";
    }
    return s;
}

// A warp computes D = A * B0 * ... : A (16 x 16, K-contiguous rows of 32 bytes) at shared
// element 0 through ldmatrix.x4, B (16 x 16, K by N, N-contiguous) at shared element 256 through
// ldmatrix.x4.trans, which gives the fragments of two 16 x 8 operands (registers 0, 1 and 2, 3).
// Two mmas: D0 = A * B[:, 0:8] + C (C loaded from `input`), D1 = A * B[:, 8:16] + D0; D1 is
// stored to `out`. Lane l gives row l % 16, column (l / 16) * 8 of each tile.
// `middle` is inserted between the A ldmatrix calls 1 and 2; `c1_of_second`, when set,
// replaces the c0 operand of the second mma's call j = 1.
std::string mma_kernel(Input in, const std::string &middle = "", const std::string &c1_of_second = "") {
    std::string s = R"(
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64--"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone
)" + declarations(in) +
                    R"(
define void @k(i8* noalias %input, i8* noalias %out) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %row = and i32 %tx, 15
  %half = lshr i32 %tx, 4
  %col = shl i32 %half, 3
  %row16 = shl i32 %row, 4
  %a_start = add nsw i32 %row16, %col
  %b_row = add nsw i32 %row16, 256
  %b_start = add nsw i32 %b_row, %col
)";
    for (int j = 0; j < 4; j++) {
        s += ldmatrix_call(in, false, j, "%a_start", "a" + std::to_string(j));
        if (j == 1) {
            s += middle;
        }
    }
    for (int j = 0; j < 4; j++) {
        s += ldmatrix_call(in, true, j, "%b_start", "b" + std::to_string(j));
    }
    s += R"(
  %cin = bitcast i8* %input to float*
  %lane4 = shl i32 %tx, 2
)";
    std::vector<std::string> c;
    for (int j = 0; j < 4; j++) {
        std::string n = std::to_string(j);
        s += "  %ci" + n + " = add nsw i32 %lane4, " + n + "\n  %cs" + n + " = sext i32 %ci" + n + " to i64\n" +
             "  %cp" + n + " = getelementptr inbounds float, float* %cin, i64 %cs" + n + "\n" + "  %c" + n +
             " = load float, float* %cp" + n + ", align 4\n";
        c.push_back("%c" + n);
    }
    s += mma_calls(in, {"%a0", "%a1", "%a2", "%a3"}, {"%b0", "%b1"}, c, "d0");
    std::string second =
        mma_calls(in, {"%a0", "%a1", "%a2", "%a3"}, {"%b2", "%b3"}, {"%d0_0", "%d0_1", "%d0_2", "%d0_3"}, "d1");
    if (!c1_of_second.empty()) {
        // Only call j = 1 sees another c0: what a non-atomic accumulator update gives.
        size_t at = second.find("(i32 1");
        size_t c0 = second.find("float %d0_0", at);
        second.replace(c0, std::string("float %d0_0").size(), "float " + c1_of_second);
    }
    s += second;
    s += "  %o = bitcast i8* %out to float*\n";
    for (int j = 0; j < 4; j++) {
        std::string n = std::to_string(j);
        s += "  %op" + n + " = getelementptr inbounds float, float* %o, i64 %cs" + n + "\n" + "  store float %d1_" + n +
             ", float* %op" + n + ", align 4\n";
    }
    s += R"(  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i8*, i8*)* @k, !"kernel", i32 1}
)";
    return s;
}

std::string print(const Value *v) {
    std::string text;
    raw_string_ostream os(text);
    v->print(os);
    return os.str();
}

std::vector<CallInst *> intrinsic_calls(Function &f, Intrinsic::ID id) {
    std::vector<CallInst *> calls;
    for (BasicBlock &bb : f) {
        for (Instruction &i : bb) {
            auto *call = dyn_cast<CallInst>(&i);
            if (call && call->getCalledFunction() && call->getCalledFunction()->getIntrinsicID() == id) {
                calls.push_back(call);
            }
        }
    }
    return calls;
}

// Which register of which call v is: extractvalue(call, j), through bitcasts.
std::pair<const Value *, unsigned> register_of(const Value *v) {
    while (const auto *cast = dyn_cast<BitCastInst>(v)) {
        v = cast->getOperand(0);
    }
    const auto *extract = dyn_cast<ExtractValueInst>(v);
    if (!extract || extract->getNumIndices() != 1) {
        return {nullptr, 0};
    }
    return {extract->getAggregateOperand(), extract->getIndices()[0]};
}

// The instructions as LLVM 14 prints them (an mma spreads over several lines); the groups
// capture the registers: d, a, b, c for mma, the 4 results for ldmatrix.
const std::string reg = "%[a-z]+[0-9]+";
const std::string regs4 = "\\{(" + reg + "), (" + reg + "), (" + reg + "), (" + reg + ")\\}";
const std::string regs2 = "\\{(" + reg + "), (" + reg + ")\\}";
const std::string shared_address = "\\[%rd?[0-9]+(\\+[0-9]+)?\\]";

std::regex mma_instruction(const std::string &type) {
    return std::regex("mma\\.sync\\.aligned\\.m16n8k16\\.row\\.col\\.f32\\." + type + "\\." + type + "\\.f32\\s+" +
                      regs4 + ",\\s+" + regs4 + ",\\s+" + regs2 + ",\\s+" + regs4 + ";");
}
const std::regex ldmatrix_instruction("ldmatrix\\.sync\\.aligned\\.m8n8\\.x4\\.shared\\.b16 " + regs4 + ", " +
                                      shared_address + ";");
const std::regex ldmatrix_trans_instruction("ldmatrix\\.sync\\.aligned\\.m8n8\\.x4\\.trans\\.shared\\.b16 " + regs4 +
                                            ", " + shared_address + ";");

// The registers of every match of `instruction` in `ptx`, each match's in order; a register
// that only copies another (`mov.b32 %hh1, %r7;`, f16 pairs) is replaced by the original.
std::vector<std::vector<std::string>> operands(const std::string &ptx, const std::regex &instruction) {
    std::map<std::string, std::string> copy_of;
    const std::regex mov("mov\\.b32\\s+(" + reg + "), (" + reg + ");");
    for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), mov); it != std::sregex_iterator(); ++it) {
        copy_of[(*it)[1]] = (*it)[2];
    }
    std::vector<std::vector<std::string>> all;
    for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), instruction); it != std::sregex_iterator(); ++it) {
        std::vector<std::string> r;
        for (size_t i = 1; i < it->size(); i++) {
            std::string name = (*it)[i];
            if (name.empty() || name[0] != '%') {
                continue;  // the address offset
            }
            r.push_back(copy_of.count(name) ? copy_of[name] : name);
        }
        all.push_back(r);
    }
    return all;
}

TEST(TensorCoreRewrite, RunsInTheOneMarkerPass) {
    EXPECT_TRUE(alcop::async_copy_rewrite_registered());
}

// IR level: 8 ldmatrix calls -> 2 intrinsic calls, 8 mma calls -> 2, all convergent, operands
// in the contract's order: a0..a3 = registers 0..3 of the A ldmatrix, b = registers 0, 1 (then
// 2, 3) of the B ldmatrix.trans, c = the loaded C, then the first mma's results in order.
TEST(TensorCoreRewrite, GroupsCallsIntoConvergentIntrinsics) {
    for (Input in : {Input::F16, Input::BF16}) {
        SCOPED_TRACE(in == Input::F16 ? "f16" : "bf16");
        LLVMContext context;
        std::unique_ptr<Module> m = parse(context, mma_kernel(in));
        ASSERT_TRUE(m);
        EXPECT_TRUE(rewrite(*m));
        std::string ir = text_of(*m);
        EXPECT_EQ(count(ir, "alcop_"), 0) << ir;
        Function &f = *m->getFunction("k");
        auto ldm = intrinsic_calls(f, Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16);
        auto ldm_trans = intrinsic_calls(f, Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16);
        auto mma = intrinsic_calls(f, in == Input::F16 ? Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32 :
                                                         Intrinsic::nvvm_mma_m16n8k16_row_col_bf16);
        ASSERT_EQ(ldm.size(), 1u) << ir;
        ASSERT_EQ(ldm_trans.size(), 1u) << ir;
        ASSERT_EQ(mma.size(), 2u) << ir;
        for (CallInst *call : {ldm[0], ldm_trans[0], mma[0], mma[1]}) {
            EXPECT_TRUE(call->isConvergent()) << print(call);
        }
        // The row addresses: A at element %a_start, B at %b_start, as i8 addrspace(3)*.
        EXPECT_EQ(ldm[0]->getArgOperand(0)->getType()->getPointerAddressSpace(), 3u);
        for (int n = 0; n < 2; n++) {
            CallInst *call = mma[n];
            for (unsigned i = 0; i < 4; i++) {
                EXPECT_EQ(register_of(call->getArgOperand(i)), std::make_pair((const Value *)ldm[0], i)) << print(call);
            }
            for (unsigned i = 0; i < 2; i++) {
                EXPECT_EQ(register_of(call->getArgOperand(4 + i)),
                          std::make_pair((const Value *)ldm_trans[0], 2 * n + i))
                    << print(call);
            }
            for (unsigned i = 0; i < 4; i++) {
                const Value *c = call->getArgOperand(6 + i);
                if (n == 0) {
                    EXPECT_EQ(c->getName(), "c" + std::to_string(i)) << print(call);
                } else {
                    EXPECT_EQ(register_of(c), std::make_pair((const Value *)mma[0], i)) << print(call);
                }
            }
            if (in == Input::F16) {
                EXPECT_TRUE(call->getArgOperand(0)->getType()->isVectorTy()) << print(call);  // <2 x half>
            }
        }
    }
}

// PTX level, after the O3 pipeline: exactly one ldmatrix.x4, one ldmatrix.x4.trans and two
// mma.sync of the right type, wired as the contract says: a = the ldmatrix.x4 registers in
// order, b = registers 0, 1 (first mma) and 2, 3 (second) of the ldmatrix.x4.trans, the second
// mma accumulating onto the first's d. No shared loads are left (the row loads were only for
// Halide's bounds), no marker.
TEST(TensorCoreRewrite, PtxHoldsExactlyTheInstructions) {
    for (Input in : {Input::F16, Input::BF16}) {
        SCOPED_TRACE(in == Input::F16 ? "f16" : "bf16");
        std::string ptx = ptx_of(mma_kernel(in));
        auto ldm = operands(ptx, ldmatrix_instruction);
        auto ldm_trans = operands(ptx, ldmatrix_trans_instruction);
        auto mma = operands(ptx, mma_instruction(in == Input::F16 ? "f16" : "bf16"));
        ASSERT_EQ(ldm.size(), 1u) << ptx;
        ASSERT_EQ(ldm_trans.size(), 1u) << ptx;
        ASSERT_EQ(mma.size(), 2u) << ptx;
        EXPECT_EQ(count(ptx, "ldmatrix"), 2) << ptx;
        EXPECT_EQ(count(ptx, "mma.sync"), 2) << ptx;
        EXPECT_EQ(count(ptx, "ld.shared"), 0) << ptx;
        EXPECT_EQ(count(ptx, "alcop"), 0) << ptx;
        for (int n = 0; n < 2; n++) {
            const auto &r = mma[n];  // d0..d3, a0..a3, b0, b1, c0..c3
            ASSERT_EQ(r.size(), 14u);
            EXPECT_EQ(std::vector<std::string>(r.begin() + 4, r.begin() + 8), ldm[0]) << ptx;
            EXPECT_EQ(std::vector<std::string>(r.begin() + 8, r.begin() + 10),
                      std::vector<std::string>(ldm_trans[0].begin() + 2 * n, ldm_trans[0].begin() + 2 * n + 2))
                << ptx;
        }
        EXPECT_EQ(std::vector<std::string>(mma[1].begin() + 10, mma[1].end()),
                  std::vector<std::string>(mma[0].begin(), mma[0].begin() + 4))
            << ptx;
    }
}

// ptxas assembles the result for sm_80 and sm_90, with no spills.
TEST(TensorCoreRewrite, PtxasAssemblesWithoutSpills) {
    if (ptxas_path().empty()) {
        GTEST_SKIP() << "ptxas not found at configure time (find_program(ALCOP_PTXAS ptxas))";
    }
    for (Input in : {Input::F16, Input::BF16}) {
        std::string ptx = ptx_of(mma_kernel(in));
        for (const char *arch : {"sm_80", "sm_90"}) {
            PtxasResult r = assemble(ptx, arch, std::string("tensor_core_") + (in == Input::F16 ? "f16" : "bf16"));
            EXPECT_EQ(r.status, 0) << r.output << ptx;
            EXPECT_EQ(count(r.output, "0 bytes spill stores, 0 bytes spill loads"), 1) << r.output;
            EXPECT_EQ(count(r.output, std::regex("Used [0-9]+ registers")), 1) << r.output;
            std::printf("ptxas %s %s: %s", arch, in == Input::F16 ? "f16" : "bf16", r.output.c_str());
        }
    }
}

// Stores to the thread's own stack between the calls of one ldmatrix group are allowed (a
// per-thread array); the group still becomes one instruction.
TEST(TensorCoreRewrite, StackStoresBetweenCallsAreAllowed) {
    const std::string ir =
        mma_kernel(Input::F16, "  %stack = alloca i32, align 4\n  store i32 %a1, i32* %stack, align 4\n");
    std::string ptx = ptx_of(ir);
    EXPECT_EQ(count(ptx, ldmatrix_instruction), 1) << ptx;
    EXPECT_EQ(count(ptx, mma_instruction("f16")), 2) << ptx;
}

// Breaches of the contract are fatal errors that say what is wrong.
void expect_fatal(const std::string &ir, const std::string &message) {
    EXPECT_DEATH(
        {
            LLVMContext context;
            std::unique_ptr<Module> m = parse(context, ir);
            rewrite(*m);
        },
        message);
}

TEST(TensorCoreRewriteDeathTest, CallsThatDisagreeOnAnOperandAreAnError) {
    // Call j = 1 of the second mma sees the new value of c0: the four calls are no longer one group.
    expect_fatal(mma_kernel(Input::F16, "", "%d1_0"),
                 "group has no call for j = 1: the four calls of one mma do not share");
}

TEST(TensorCoreRewriteDeathTest, SharedStoreBetweenLdmatrixCallsIsAnError) {
    expect_fatal(mma_kernel(Input::F16, "  store half 0xH0000, half addrspace(3)* null, align 2\n"),
                 "memory is written between the alcop_ldmatrix_x4_b16 calls of one row address");
}

TEST(TensorCoreRewriteDeathTest, RowNotInSharedMemoryIsAnError) {
    std::string ir = mma_kernel(Input::F16);
    ir = std::regex_replace(
        ir, std::regex("%a2_0p = getelementptr inbounds half, half addrspace\\(3\\)\\* null"),
        "%a2_0g = bitcast i8* %input to half*\n  %a2_0p = getelementptr inbounds half, half* %a2_0g");
    ir = std::regex_replace(ir, std::regex("load half, half addrspace\\(3\\)\\* %a2_0p"), "load half, half* %a2_0p");
    expect_fatal(ir, "alcop_ldmatrix_x4_b16: row element e0 is not a 16-bit load from shared memory");
}

TEST(TensorCoreRewriteDeathTest, ElementsThatAreNotTheRowAreAnError) {
    std::string ir = std::regex_replace(mma_kernel(Input::F16), std::regex("%a2_1i = add nsw i32 %a_start, 1"),
                                        "%a2_1i = add nsw i32 %a_start, 3");
    expect_fatal(ir, "alcop_ldmatrix_x4_b16: row element e1 is not 2 bytes past e0");
    ir = std::regex_replace(mma_kernel(Input::F16), std::regex("%b1_7i = add nsw i32 %b_start, 7"),
                            "%b1_7i = add nsw i32 %a_start, 7");
    expect_fatal(ir, "alcop_ldmatrix_x4_trans_b16: row element e7 is not 14 bytes past e0");
}

TEST(TensorCoreRewriteDeathTest, NonConstantIndexIsAnError) {
    std::string ir = std::regex_replace(mma_kernel(Input::F16), std::regex("b16\\(i32 3,"), "b16(i32 %tx,");
    expect_fatal(ir, "alcop_ldmatrix_x4_b16: the result index j is not a constant in 0..3");
}

TEST(TensorCoreRewriteDeathTest, WrongSignatureIsAnError) {
    expect_fatal(R"(
target triple = "nvptx64--"
declare double @alcop_mma_m16n8k16_f32_f16(i32)
define void @k(double* %out) {
  %d = call double @alcop_mma_m16n8k16_f32_f16(i32 0)
  store double %d, double* %out
  ret void
}
)",
                 "alcop_mma_m16n8k16_f32_f16 does not match the marker contract of TensorCoreMarkers.h");
}

}  // namespace
