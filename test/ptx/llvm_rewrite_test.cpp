// The LLVM rewrite of the cp.async markers (src/codegen/AsyncCopyRewrite.cpp), without Halide:
// hand-written NVPTX modules, patterned on what Halide 14's PTX codegen emits for a GPUShared
// staging Func whose value is a marker call, go through the same legacy pipeline Halide builds
// (PassManagerBuilder at O3, the NVPTX target machine for sm_80 / +ptx70), and the PTX is
// checked: one cp.async per aligned copy, of the right size and flavour, with the src-size
// operand; commit/wait groups; synchronous copies where the copy cannot be async; no marker
// left; and ptxas (when found) assembles the result for sm_80 and sm_90.

#include "codegen/AsyncCopyMarkers.h"

#include "NvptxPipeline.h"

#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>

namespace {

using namespace llvm;
using namespace nvptx_test;
using nvptx_test::count;  // not llvm::count

// What every Halide NVPTX module starts with (data layout and triple as Halide 14 sets them).
const char *prefix = R"(
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64--"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y() nounwind readnone
declare void @llvm.nvvm.barrier0() convergent nounwind
)";

// The markers, declared as Halide declares extern functions (no attributes).
const char *marker_declarations = R"(
declare float @alcop_cp_async_copy_f32(float, i32)
declare double @alcop_cp_async_copy_f64(double, i32)
declare i32 @alcop_cp_async_commit()
declare i32 @alcop_cp_async_wait(i32)
)";

// The kernel `k(i8* input, i8* out, i32 stride, i32 n)`: `body` stages into shared memory, then
// every thread reads a float of it back and writes it out, so the shared stores are live.
std::string kernel(const std::string &body, bool with_markers = true) {
    return std::string(prefix) + (with_markers ? marker_declarations : "") + R"(
define void @k(i8* noalias %input, i8* noalias %out, i32 %stride, i32 %n) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
)" + body + R"(
  call void @llvm.nvvm.barrier0()
  %c0 = mul nsw i32 %ty, 32
  %c1 = add nsw i32 %c0, %tx
  %c2 = sext i32 %c1 to i64
  %c3 = getelementptr inbounds float, float addrspace(3)* null, i64 %c2
  %c4 = load float, float addrspace(3)* %c3, align 4
  %c5 = bitcast i8* %out to float*
  %c6 = getelementptr inbounds float, float* %c5, i64 %c2
  store float %c4, float* %c6, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i8*, i8*, i32, i32)* @k, !"kernel", i32 1}
)";
}

// A 4 x f32 copy whose index Halide proved 4-aligned: Halide's PTX backend loads and stores it
// as one i128 (align 16); the marker calls sit between the reinterpretations. `load_align`,
// `store_align` and `src_bytes` vary the pattern; `name` makes the values of two copies distinct.
std::string f32x4_body(int load_align = 16, int store_align = 16, const std::string &src_bytes = "16",
                       const std::string &name = "") {
    std::string body = R"(
  %0 = mul nsw i32 %ty, %stride
  %1 = ashr i32 %0, 2
  %2 = add nsw i32 %1, %tx
  %3 = bitcast i8* %input to i128*
  %4 = sext i32 %2 to i64
  %5 = getelementptr inbounds i128, i128* %3, i64 %4
  %6 = load i128, i128* %5, align LOAD_ALIGN
  %7 = insertelement <1 x i128> undef, i128 %6, i32 0
  %8 = shufflevector <1 x i128> %7, <1 x i128> undef, <1 x i32> zeroinitializer
  %9 = bitcast <1 x i128> %8 to <4 x float>
  %10 = extractelement <4 x float> %9, i32 0
  %11 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %10, i32 SRC_BYTES) nounwind
  %12 = insertelement <4 x float> undef, float %11, i32 0
  %13 = extractelement <4 x float> %9, i32 1
  %14 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %13, i32 SRC_BYTES) nounwind
  %15 = insertelement <4 x float> %12, float %14, i32 1
  %16 = extractelement <4 x float> %9, i32 2
  %17 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %16, i32 SRC_BYTES) nounwind
  %18 = insertelement <4 x float> %15, float %17, i32 2
  %19 = extractelement <4 x float> %9, i32 3
  %20 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %19, i32 SRC_BYTES) nounwind
  %21 = insertelement <4 x float> %18, float %20, i32 3
  %22 = bitcast <4 x float> %21 to <1 x i128>
  %23 = extractelement <1 x i128> %22, i64 0
  %24 = mul nsw i32 %ty, 8
  %25 = add nsw i32 %24, %tx
  %26 = sext i32 %25 to i64
  %27 = getelementptr inbounds i128, i128 addrspace(3)* null, i64 %26
  store i128 %23, i128 addrspace(3)* %27, align STORE_ALIGN
  %28 = call i32 @alcop_cp_async_commit() nounwind
  %29 = call i32 @alcop_cp_async_wait(i32 1) nounwind
)";
    body = std::regex_replace(body, std::regex("LOAD_ALIGN"), std::to_string(load_align));
    body = std::regex_replace(body, std::regex("STORE_ALIGN"), std::to_string(store_align));
    body = std::regex_replace(body, std::regex("SRC_BYTES"), src_bytes);
    if (!name.empty()) {
        body = std::regex_replace(body, std::regex("%([0-9]+)"), "%" + name + "$1");
    }
    return body;
}

std::string f32x4_copy(int load_align = 16, int store_align = 16, const std::string &src_bytes = "16") {
    return kernel(f32x4_body(load_align, store_align, src_bytes));
}

// A scalar f32 copy, as Halide emits it when the staging Func is not vectorized.
const std::string scalar_f32_copy = kernel(R"(
  %0 = mul nsw i32 %ty, %stride
  %1 = add nsw i32 %0, %tx
  %2 = bitcast i8* %input to float*
  %3 = sext i32 %1 to i64
  %4 = getelementptr inbounds float, float* %2, i64 %3
  %5 = load float, float* %4, align 4
  %6 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %5, i32 4) nounwind
  %7 = mul nsw i32 %ty, 32
  %8 = add nsw i32 %7, %tx
  %9 = sext i32 %8 to i64
  %10 = getelementptr inbounds float, float addrspace(3)* null, i64 %9
  store float %6, float addrspace(3)* %10, align 4
  %11 = call i32 @alcop_cp_async_commit() nounwind
  %12 = call i32 @alcop_cp_async_wait(i32 1) nounwind
)");

// A 4 x f32 copy whose alignment Halide could not prove (a shared row of 33 floats): the
// backend splits load and store into 64-bit slices with align 4, and recomputes the clamped
// index for every slice. Verbatim from Halide 14, up to value names.
const std::string unaligned_f32x4_copy = kernel(R"(
  %a2 = mul nsw i32 %tx, 4
  %0 = icmp slt i32 %a2, 29
  %1 = select i1 %0, i32 %a2, i32 29
  %base = add nsw i32 %1, %n
  %2 = mul nsw i32 %ty, %stride
  %3 = add nsw i32 %2, %base
  %4 = bitcast i8* %input to float*
  %5 = sext i32 %3 to i64
  %6 = getelementptr inbounds float, float* %4, i64 %5
  %7 = bitcast float* %6 to <2 x float>*
  %8 = load <2 x float>, <2 x float>* %7, align 4
  %9 = mul nsw i32 %ty, %stride
  %10 = add nsw i32 %9, %base
  %11 = bitcast i8* %input to float*
  %12 = sext i32 %10 to i64
  %13 = getelementptr inbounds float, float* %11, i64 %12
  %14 = getelementptr inbounds float, float* %13, i64 2
  %15 = bitcast float* %14 to <2 x float>*
  %16 = load <2 x float>, <2 x float>* %15, align 4
  %17 = shufflevector <2 x float> %8, <2 x float> %16, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %18 = extractelement <4 x float> %17, i32 0
  %19 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %18, i32 16) nounwind
  %20 = insertelement <4 x float> undef, float %19, i32 0
  %21 = extractelement <4 x float> %17, i32 1
  %22 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %21, i32 16) nounwind
  %23 = insertelement <4 x float> %20, float %22, i32 1
  %24 = extractelement <4 x float> %17, i32 2
  %25 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %24, i32 16) nounwind
  %26 = insertelement <4 x float> %23, float %25, i32 2
  %27 = extractelement <4 x float> %17, i32 3
  %28 = call reassoc nnan ninf nsz contract afn float @alcop_cp_async_copy_f32(float %27, i32 16) nounwind
  %29 = insertelement <4 x float> %26, float %28, i32 3
  %30 = shufflevector <4 x float> %29, <4 x float> undef, <2 x i32> <i32 0, i32 1>
  %a3 = mul nsw i32 %tx, 4
  %31 = icmp slt i32 %a3, 29
  %32 = select i1 %31, i32 %a3, i32 29
  %33 = mul nsw i32 %ty, 33
  %34 = add nsw i32 %32, %33
  %35 = sext i32 %34 to i64
  %36 = getelementptr inbounds float, float addrspace(3)* null, i64 %35
  %37 = addrspacecast float addrspace(3)* %36 to <2 x float>*
  store <2 x float> %30, <2 x float>* %37, align 4
  %38 = shufflevector <4 x float> %29, <4 x float> undef, <2 x i32> <i32 2, i32 3>
  %a4 = mul nsw i32 %tx, 4
  %39 = icmp slt i32 %a4, 29
  %40 = select i1 %39, i32 %a4, i32 29
  %41 = mul nsw i32 %ty, 33
  %42 = add nsw i32 %40, %41
  %43 = sext i32 %42 to i64
  %44 = getelementptr inbounds float, float addrspace(3)* null, i64 %43
  %45 = getelementptr inbounds float, float addrspace(3)* %44, i64 2
  %46 = addrspacecast float addrspace(3)* %45 to <2 x float>*
  store <2 x float> %38, <2 x float>* %46, align 4
  %47 = call i32 @alcop_cp_async_commit() nounwind
  %48 = call i32 @alcop_cp_async_wait(i32 1) nounwind
)");

// A 2 x f64 copy: Halide splits it into two scalar-sized slices (align 8 at most). With
// `first_align` 16 (not something Halide 14 emits, but the pass must handle slices) it is a
// 16-byte copy made of two contiguous slices. `second_offset` moves the second slice.
std::string f64x2_copy(int first_align, int second_offset = 1) {
    std::string body = R"(
  %0 = mul nsw i32 %ty, %stride
  %1 = add nsw i32 %0, %tx
  %2 = bitcast i8* %input to double*
  %3 = sext i32 %1 to i64
  %4 = getelementptr inbounds double, double* %2, i64 %3
  %5 = bitcast double* %4 to <1 x double>*
  %6 = load <1 x double>, <1 x double>* %5, align FIRST_ALIGN
  %7 = mul nsw i32 %ty, %stride
  %8 = add nsw i32 %7, %tx
  %9 = bitcast i8* %input to double*
  %10 = sext i32 %8 to i64
  %11 = getelementptr inbounds double, double* %9, i64 %10
  %12 = getelementptr inbounds double, double* %11, i64 SECOND_OFFSET
  %13 = bitcast double* %12 to <1 x double>*
  %14 = load <1 x double>, <1 x double>* %13, align 8
  %15 = shufflevector <1 x double> %6, <1 x double> %14, <2 x i32> <i32 0, i32 1>
  %16 = extractelement <2 x double> %15, i32 0
  %17 = call reassoc nnan ninf nsz contract afn double @alcop_cp_async_copy_f64(double %16, i32 16) nounwind
  %18 = insertelement <2 x double> undef, double %17, i32 0
  %19 = extractelement <2 x double> %15, i32 1
  %20 = call reassoc nnan ninf nsz contract afn double @alcop_cp_async_copy_f64(double %19, i32 16) nounwind
  %21 = insertelement <2 x double> %18, double %20, i32 1
  %22 = extractelement <2 x double> %21, i64 0
  %23 = mul nsw i32 %ty, 16
  %24 = add nsw i32 %23, %tx
  %25 = sext i32 %24 to i64
  %26 = getelementptr inbounds double, double addrspace(3)* null, i64 %25
  %27 = addrspacecast double addrspace(3)* %26 to double*
  store double %22, double* %27, align FIRST_ALIGN
  %28 = extractelement <2 x double> %21, i64 1
  %29 = mul nsw i32 %ty, 16
  %30 = add nsw i32 %29, %tx
  %31 = sext i32 %30 to i64
  %32 = getelementptr inbounds double, double addrspace(3)* null, i64 %31
  %33 = getelementptr inbounds double, double addrspace(3)* %32, i64 1
  %34 = addrspacecast double addrspace(3)* %33 to double*
  store double %28, double* %34, align 8
  %35 = call i32 @alcop_cp_async_commit() nounwind
  %36 = call i32 @alcop_cp_async_wait(i32 0) nounwind
)";
    body = std::regex_replace(body, std::regex("FIRST_ALIGN"), std::to_string(first_align));
    body = std::regex_replace(body, std::regex("SECOND_OFFSET"), std::to_string(second_offset));
    return kernel(body);
}

// cp.async with a register for each address and for src-size: `[%r], [%rd], size, %r;`
std::regex cp_async(const std::string &flavour, int size) {
    return std::regex("cp\\.async\\." + flavour + "\\.shared\\.global \\[%r[0-9]+\\], \\[%rd[0-9]+\\], " +
                      std::to_string(size) + ", %r[0-9]+;");
}

TEST(LlvmRewrite, IsRegistered) {
    EXPECT_TRUE(alcop::async_copy_rewrite_registered());
}

// (a) An aligned 4 x f32 copy is exactly one 16-byte cp.async.cg, nothing synchronous.
TEST(LlvmRewrite, VectorCopyBecomesOneCpAsyncCg) {
    std::string ptx = ptx_of(f32x4_copy());
    EXPECT_EQ(count(ptx, cp_async("cg", 16)), 1) << ptx;
    EXPECT_EQ(count(ptx, std::regex("cp\\.async\\.c[ag]\\.")), 1) << ptx;  // No other cp.async.ca/cg.
    EXPECT_EQ(count(ptx, "ld.global"), 0) << ptx;
    EXPECT_EQ(count(ptx, "st.shared"), 0) << ptx;
    EXPECT_EQ(count(ptx, "alcop"), 0) << ptx;
}

// (a) At the IR level: the markers, the store and the load are gone, the declarations too.
TEST(LlvmRewrite, VectorCopyLeavesNoMarker) {
    LLVMContext context;
    std::unique_ptr<Module> m = parse(context, f32x4_copy());
    ASSERT_TRUE(m);
    EXPECT_TRUE(rewrite(*m));
    std::string ir = text_of(*m);
    EXPECT_EQ(count(ir, "alcop_cp_async"), 0) << ir;
    EXPECT_EQ(count(ir, "cp.async.cg.shared.global [$0], [$1], 16, $2;"), 1) << ir;
    EXPECT_EQ(count(ir, "load i128"), 0) << ir;
    EXPECT_EQ(count(ir, "store i128"), 0) << ir;
}

// The src-size operand is the marker's second argument, also when it is not a constant.
TEST(LlvmRewrite, SrcBytesIsPassedThrough) {
    LLVMContext context;
    std::unique_ptr<Module> m = parse(context, f32x4_copy(16, 16, "%n"));
    ASSERT_TRUE(m);
    rewrite(*m);
    std::string ir = text_of(*m);
    EXPECT_EQ(count(ir, std::regex("\"r,l,r,~\\{memory\\}\"\\(i32 %[0-9]+, i64 %[0-9]+, i32 %n\\)")), 1) << ir;
    EXPECT_EQ(count(ptx_of(f32x4_copy(16, 16, "%n")), cp_async("cg", 16)), 1);
}

// Copies one after the other are rewritten one by one, each into its own cp.async.
TEST(LlvmRewrite, ConsecutiveCopies) {
    std::string second =
        std::regex_replace(f32x4_body(16, 16, "16", "b"), std::regex("mul nsw i32 %ty, 8"), "mul nsw i32 %ty, 16");
    std::string ptx = ptx_of(kernel(f32x4_body(16, 16, "16", "a") + second));
    EXPECT_EQ(count(ptx, cp_async("cg", 16)), 2) << ptx;
    EXPECT_EQ(count(ptx, "st.shared"), 0) << ptx;
    EXPECT_EQ(count(ptx, "cp.async.commit_group"), 2) << ptx;
}

// Copies whose source indices share one term (here the thread's column %tx) and differ in the
// other (the row) read from pointers stepped one term at a time (AddressTerms.h): the shared
// term widened and scaled once, each copy's own once. Copies that share both terms, as in
// ConsecutiveCopies, keep their address as Halide wrote it.
TEST(LlvmRewrite, SourcesSharingOneTermStepByTerm) {
    const std::regex stepped("getelementptr i128, i128\\* %[0-9]+, i64 %[0-9]+");
    auto stepped_addresses = [&](const std::string &ir_text) {
        LLVMContext context;
        std::unique_ptr<Module> m = parse(context, ir_text);
        EXPECT_TRUE(m && rewrite(*m));
        std::string ir = m ? text_of(*m) : "";
        EXPECT_EQ(count(ir, "cp.async.cg.shared.global [$0], [$1], 16, $2;"), 2) << ir;
        return count(ir, stepped);
    };
    auto other_store = [](std::string body) {
        return std::regex_replace(body, std::regex("mul nsw i32 %ty, 8"), "mul nsw i32 %ty, 16");
    };
    const std::string other_row =
        std::regex_replace(other_store(f32x4_body(16, 16, "16", "b")), std::regex("ashr i32 %b0, 2"), "ashr i32 %b0, 3");
    EXPECT_EQ(stepped_addresses(kernel(f32x4_body(16, 16, "16", "a") + other_row)), 4);
    EXPECT_EQ(stepped_addresses(kernel(f32x4_body(16, 16, "16", "a") + other_store(f32x4_body(16, 16, "16", "b")))), 0);
    // And the result still assembles to the two copies.
    const std::string ptx = ptx_of(kernel(f32x4_body(16, 16, "16", "a") + other_row));
    EXPECT_EQ(count(ptx, cp_async("cg", 16)), 2) << ptx;
}

// A marker the contract does not know is an error, not a silently unresolved call.
TEST(LlvmRewriteDeathTest, UnknownMarkerIsAnError) {
    const std::string ir = kernel(R"(
  %0 = call i32 @alcop_cp_async_flush() nounwind
)") + "declare i32 @alcop_cp_async_flush()\n";
    EXPECT_DEATH(
        {
            LLVMContext context;
            std::unique_ptr<Module> m = parse(context, ir);
            rewrite(*m);
        },
        "alcop_cp_async_flush does not match the marker contract");
}

// (b) A scalar f32 copy is a 4-byte cp.async.ca.
TEST(LlvmRewrite, ScalarCopyBecomesCpAsyncCa) {
    std::string ptx = ptx_of(scalar_f32_copy);
    EXPECT_EQ(count(ptx, cp_async("ca", 4)), 1) << ptx;
    EXPECT_EQ(count(ptx, std::regex("cp\\.async\\.c[ag]\\.")), 1) << ptx;
    EXPECT_EQ(count(ptx, "ld.global"), 0) << ptx;
    EXPECT_EQ(count(ptx, "st.shared"), 0) << ptx;
    EXPECT_EQ(count(ptx, "alcop"), 0) << ptx;
}

// (c) Commit and wait become the group instructions, in order, and return 0.
TEST(LlvmRewrite, CommitAndWaitBecomeGroupInstructions) {
    std::string ptx = ptx_of(scalar_f32_copy);
    size_t copy = ptx.find("cp.async.ca.shared.global");
    size_t commit = ptx.find("cp.async.commit_group;");
    size_t wait = ptx.find("cp.async.wait_group 1;");
    ASSERT_NE(copy, std::string::npos) << ptx;
    ASSERT_NE(commit, std::string::npos) << ptx;
    ASSERT_NE(wait, std::string::npos) << ptx;
    const size_t barrier = ptx.find("bar.sync");
    ASSERT_NE(barrier, std::string::npos) << ptx;
    EXPECT_LT(copy, commit);
    EXPECT_LT(commit, wait);
    EXPECT_LT(wait, barrier);
    EXPECT_EQ(count(ptx, "cp.async.commit_group"), 1);
    EXPECT_EQ(count(ptx, "cp.async.wait_group"), 1);

    LLVMContext context;
    std::unique_ptr<Module> m = parse(context, kernel(R"(
  %r0 = call i32 @alcop_cp_async_commit() nounwind
  %r1 = call i32 @alcop_cp_async_wait(i32 %n) nounwind
  %r2 = add i32 %r0, %r1
  %p = bitcast i8* %out to i32*
  store i32 %r2, i32* %p, align 4
)"));
    ASSERT_TRUE(m);
    EXPECT_TRUE(rewrite(*m));
    std::string ir = text_of(*m);
    EXPECT_EQ(count(ir, "alcop"), 0) << ir;
    EXPECT_EQ(count(ir, "add i32 0, 0"), 1) << ir;  // Both results are 0.
    // A count that is not a constant cannot be an immediate: wait for all groups.
    EXPECT_EQ(count(ir, "\"cp.async.wait_group 0;\""), 1) << ir;
}

// (d) A copy Halide could not align stays a plain ld.global + st.shared, without markers.
TEST(LlvmRewrite, UnalignedCopyStaysSynchronous) {
    for (const std::string &ir : {unaligned_f32x4_copy, f32x4_copy(4, 16), f32x4_copy(16, 8)}) {
        std::string ptx = ptx_of(ir);
        EXPECT_EQ(count(ptx, std::regex("cp\\.async\\.c[ag]\\.")), 0) << ptx;
        EXPECT_GT(count(ptx, "ld.global"), 0) << ptx;
        EXPECT_GT(count(ptx, "st.shared"), 0) << ptx;
        EXPECT_EQ(count(ptx, "alcop"), 0) << ptx;
        EXPECT_EQ(count(ptx, "cp.async.commit_group"), 1) << ptx;
    }
    LLVMContext context;
    std::unique_ptr<Module> m = parse(context, unaligned_f32x4_copy);
    ASSERT_TRUE(m);
    rewrite(*m);
    std::string ir = text_of(*m);
    EXPECT_EQ(count(ir, "alcop_cp_async"), 0) << ir;
    EXPECT_EQ(count(ir, "load <2 x float>"), 2) << ir;
    EXPECT_EQ(count(ir, "store <2 x float>"), 2) << ir;
}

// A synchronous copy whose src_bytes is known only at run time (a predicated prefetch, whose
// source lies past the input where it is 0) reads the input's first bytes when it is 0, as
// cp.async would read nothing.
TEST(LlvmRewrite, SynchronousCopyReadsNothingPastTheInputWhereSrcBytesIsZero) {
    LLVMContext context;
    std::unique_ptr<Module> m = parse(context, f32x4_copy(16, 8, "%n"));
    ASSERT_TRUE(m);
    rewrite(*m);
    std::string ir = text_of(*m);
    EXPECT_EQ(count(ir, std::regex("cp\\.async\\.c[ag]\\.")), 0) << ir;
    EXPECT_EQ(count(ir, std::regex("icmp ne i32 %n, 0")), 1) << ir;
    EXPECT_EQ(count(ir, std::regex("select i1 %[0-9a-z.]+, i128\\* %5, i128\\* %[0-9a-z.]+")), 1) << ir;
    EXPECT_EQ(count(ir, std::regex("load i128, i128\\* %[0-9a-z.]+, align 16")), 1) << ir;
    // With a constant src_bytes the load stays as it was.
    std::unique_ptr<Module> constant = parse(context, f32x4_copy(16, 8));
    ASSERT_TRUE(constant);
    rewrite(*constant);
    EXPECT_EQ(count(text_of(*constant), std::regex("select i1 [^\\n]*i128\\*")), 0) << text_of(*constant);
}

// A copy split into slices is one cp.async when the slices are contiguous and the first is
// aligned to the whole copy; Halide 14 emits them with align 8, which stays synchronous.
TEST(LlvmRewrite, SlicedCopy) {
    EXPECT_EQ(count(ptx_of(f64x2_copy(16)), cp_async("cg", 16)), 1);
    EXPECT_EQ(count(ptx_of(f64x2_copy(16)), "cp.async.wait_group 0;"), 1);
    for (const std::string &ir : {f64x2_copy(8), f64x2_copy(16, 2)}) {
        std::string ptx = ptx_of(ir);
        EXPECT_EQ(count(ptx, std::regex("cp\\.async\\.c[ag]\\.")), 0) << ptx;
        EXPECT_GT(count(ptx, "st.shared"), 0) << ptx;
        EXPECT_EQ(count(ptx, "alcop"), 0) << ptx;
    }
}

// Copies that are not global -> shared, or that something else touches memory in the middle
// of, stay synchronous.
TEST(LlvmRewrite, OnlyUndisturbedGlobalToSharedCopiesAreAsync) {
    std::string from_shared = std::regex_replace(
        scalar_f32_copy,
        std::regex("%4 = getelementptr inbounds float, float\\* %2, i64 %3\n  %5 = load float, float\\* %4"),
        "%4 = getelementptr inbounds float, float addrspace(3)* null, i64 %3\n  %5 = load float, float addrspace(3)* "
        "%4");
    std::string to_global =
        std::regex_replace(scalar_f32_copy,
                           std::regex("%10 = getelementptr inbounds float, float addrspace\\(3\\)\\* null, i64 %9\n  "
                                      "store float %6, float addrspace\\(3\\)\\* %10"),
                           "%o = bitcast i8* %out to float*\n  %10 = getelementptr inbounds float, float* %o, i64 %9\n "
                           " store float %6, float* %10");
    std::string interleaved = std::regex_replace(
        scalar_f32_copy, std::regex("%7 = mul nsw i32 %ty, 32"),
        "%o = bitcast i8* %out to float*\n  store float 1.0, float* %o, align 4\n  %7 = mul nsw i32 %ty, 32");
    for (const std::string &ir : {from_shared, to_global, interleaved}) {
        ASSERT_NE(ir, scalar_f32_copy);
        LLVMContext context;
        std::unique_ptr<Module> m = parse(context, ir);
        ASSERT_TRUE(m);
        rewrite(*m);
        std::string text = text_of(*m);
        EXPECT_EQ(count(text, "alcop_cp_async"), 0) << text;
        EXPECT_EQ(count(text, std::regex("cp\\.async\\.c[ag]\\.")), 0) << text;
        // The marker's meaning: the loaded value, zeroed past src_bytes, stored as before.
        EXPECT_EQ(count(text, std::regex("select i1 [^,]+, float %5, float 0\\.0")), 1) << text;
        EXPECT_GE(count(text, std::regex("store float %[0-9a-z.]+, float")), 1) << text;
    }
}

// (e) A module without markers, and a non-NVPTX module with them, are left alone.
TEST(LlvmRewrite, OtherModulesAreUnchanged) {
    const std::string plain = kernel(R"(
  %0 = bitcast i8* %input to float*
  %1 = load float, float* %0, align 4
  store float %1, float addrspace(3)* null, align 4
)",
                                     /*with_markers*/ false);
    std::string host = std::regex_replace(scalar_f32_copy, std::regex("nvptx64--"), "x86_64-unknown-linux-gnu");
    for (const std::string &ir : {plain, host}) {
        LLVMContext context;
        std::unique_ptr<Module> m = parse(context, ir);
        ASSERT_TRUE(m);
        std::string before = text_of(*m);
        EXPECT_FALSE(rewrite(*m));
        EXPECT_EQ(text_of(*m), before);
    }
}

// (f) ptxas assembles what the rewrite produces (it rejects the unresolved extern calls the
// markers would leave, and cp.async where the target lacks it).
TEST(LlvmRewrite, PtxasAssemblesTheResult) {
    if (ptxas_path().empty()) {
        GTEST_SKIP() << "ptxas not found at configure time (find_program(ALCOP_PTXAS ptxas))";
    }
    const std::pair<const char *, std::string> cases[] = {
        {"f32x4", f32x4_copy()},          {"f32x4_dynamic_src_bytes", f32x4_copy(16, 16, "%n")},
        {"scalar_f32", scalar_f32_copy},  {"unaligned_f32x4", unaligned_f32x4_copy},
        {"sliced_f64x2", f64x2_copy(16)},
    };
    for (const auto &c : cases) {
        std::string ptx = ptx_of(c.second);
        ASSERT_FALSE(ptx.empty());
        for (const char *arch : {"sm_80", "sm_90"}) {
            const PtxasResult r = assemble(ptx, arch, std::string("llvm_rewrite_") + c.first);
            EXPECT_EQ(r.status, 0) << c.first << " " << arch << "\n" << r.output << ptx;
        }
    }
}

}  // namespace
