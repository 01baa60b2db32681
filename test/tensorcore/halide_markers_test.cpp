// The tensor-core markers as Halide 14 itself emits them: a one-warp pipeline whose operands
// are staged in GPUShared Funcs and whose value is built from the marker calls
// (TensorCoreMarkers.h), compiled for CUDA sm_80 in-process, where the marker pass registered
// by the library rewrites them. The PTX holds exactly one ldmatrix.x4, one ldmatrix.x4.trans
// and one mma.sync, no marker, and ptxas assembles it. This checks the contract against the
// IR Halide really writes (lets, casts, address arithmetic), which the hand-written modules
// of tensor_core_rewrite_test only imitate. Not a numerical test (no GPU here).

#include "Halide.h"

#include "KernelSource.h"

#include "codegen/AsyncCopyMarkers.h"
#include "codegen/TensorCoreMarkers.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <unistd.h>

namespace {

using namespace Halide;
using namespace Halide::Internal;

using kernel_source::count;

std::string ptx_of(const Module &m) {
    return kernel_source::of(m);
}

// Register j of ldmatrix.x4[.trans] for this lane: its row is 8 elements of `tile` (column
// index first) at (col .. col + 7, row).
Expr ldmatrix(Func tile, bool trans, int j, Expr col, Expr row) {
    std::vector<Expr> args = {j};
    for (int k = 0; k < 8; k++) {
        args.push_back(tile(col + k, row));
    }
    return Call::make(UInt(32), trans ? alcop::ldmatrix_trans_name : alcop::ldmatrix_name, args, Call::PureExtern);
}

// One warp: D = A * B + C for a 16 x 16 A (A(k, m)), a 16 x 8 B (B(n, k), read transposed),
// out(lane) = the sum of the lane's four D elements (all four calls in one Expr, so that
// Halide's CSE binds the shared operands once, as the contract asks).
Module mma_module(Type element, const char *mma_name) {
    ImageParam A(element, 2, "A"), B(element, 2, "B");
    ImageParam C(Float(32), 1, "C");
    Var k("k"), m("m"), n("n"), lane("lane"), block("block"), t("t");
    Func A_sh("A_sh"), B_sh("B_sh"), out("out");
    A_sh(k, m) = A(k, m);
    B_sh(n, k) = B(n, k);
    // Lanes 8i..8i+7 give the rows of matrix i: rows lane % 16, columns (lane / 16) * 8.
    Expr row = lane % 16, col = (lane / 16) * 8;
    std::vector<Expr> operands;
    for (int i = 0; i < 4; i++) {
        operands.push_back(ldmatrix(A_sh, false, i, col, row));
    }
    for (int i = 0; i < 2; i++) {
        operands.push_back(ldmatrix(B_sh, true, i, col, row));
    }
    for (int i = 0; i < 4; i++) {
        operands.push_back(C(lane * 4 + i));
    }
    Expr sum;
    for (int j = 0; j < 4; j++) {
        std::vector<Expr> args = {j};
        args.insert(args.end(), operands.begin(), operands.end());
        Expr d = Call::make(Float(32), mma_name, args, Call::PureExtern);
        sum = sum.defined() ? sum + d : d;
    }
    out(lane) = sum;

    out.bound(lane, 0, 32).gpu_tile(lane, block, t, 32);
    A_sh.compute_at(out, block).store_in(MemoryType::GPUShared).gpu_threads(m);
    B_sh.compute_at(out, block).store_in(MemoryType::GPUShared).gpu_threads(k);
    return Pipeline(out).compile_to_module({A, B, C}, element.is_float() ? "mma_f16" : "mma_bf16",
                                           Target("host-cuda-cuda_capability_80"));
}

std::string ptxas_output(const std::string &ptx, const std::string &arch, int *status) {
    return ptxas::run(ptx, arch, "halide_markers", status);
}

TEST(HalideMarkers, BecomeTensorCoreInstructions) {
    ASSERT_TRUE(alcop::async_copy_rewrite_registered());
    struct Case {
        Type element;
        const char *marker, *instruction;
    } cases[] = {{Float(16), alcop::mma_f16_name, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
                 {UInt(16), alcop::mma_bf16_name, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"}};
    for (const Case &c : cases) {
        SCOPED_TRACE(c.marker);
        const std::string ptx = ptx_of(mma_module(c.element, c.marker));
        ASSERT_FALSE(ptx.empty());
        EXPECT_EQ(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 1) << ptx;
        EXPECT_EQ(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 1) << ptx;
        EXPECT_EQ(count(ptx, c.instruction), 1) << ptx;
        EXPECT_EQ(count(ptx, "mma.sync"), 1) << ptx;
        EXPECT_EQ(count(ptx, "alcop_"), 0) << ptx;
#ifdef ALCOP_PTXAS
        for (const char *arch : {"sm_80", "sm_90"}) {
            int status = 0;
            const std::string log = ptxas_output(ptx, arch, &status);
            EXPECT_EQ(status, 0) << log << ptx;
            EXPECT_EQ(count(log, "0 bytes spill stores, 0 bytes spill loads"), 1) << log;
            std::printf("ptxas %s %s:\n%s", arch, c.marker, log.c_str());
        }
#endif
    }
#ifndef ALCOP_PTXAS
    ALCOP_SKIP_ASSEMBLING("the one-warp kernels");
#endif
}

}  // namespace
