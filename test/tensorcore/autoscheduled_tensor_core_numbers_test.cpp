// The numbers of the Alcop plugin's tensor-core schedules (fp16 / bf16 GEMM, batched matmul and
// conv2d, generators/PlainGenerators.cpp), on pocl: the schedules the plugin wrote for
// CUDA sm_80, compiled for OpenCL with the ldmatrix and mma markers emulated
// (replay_tensor_core_schedule.cpp), against the double-precision reference on the rounded
// inputs, close as in tensor_core_numbers_test (TensorCoreNumbers.h). K and conv2d's channels
// are the builds' (compile-time sizes for fp16 / bf16); M, N, the batch and the image sizes
// vary, with tails.

#include "TensorCoreNumbers.h"

#include "as_bmm_tc_pocl.h"
#include "as_bmm_tc_runtime_k_pocl.h"
#include "as_conv2d_tc_pocl.h"
#include "as_conv2d_tc_runtime_k_pocl.h"
#include "as_gemm_tc_k16_pocl.h"
#include "as_gemm_tc_k32_pocl.h"
#include "as_gemm_tc_pocl.h"
#include "as_gemm_tc_r2_pocl.h"
#include "as_gemm_tc_runtime_k_pocl.h"
#include "as_gemm_tc_runtime_k_r2_pocl.h"

#include "as_bmm_tc_pocl_markers.h"
#include "as_bmm_tc_runtime_k_pocl_markers.h"
#include "as_conv2d_tc_pocl_markers.h"
#include "as_conv2d_tc_runtime_k_pocl_markers.h"
#include "as_gemm_tc_k16_pocl_markers.h"
#include "as_gemm_tc_k32_pocl_markers.h"
#include "as_gemm_tc_pocl_markers.h"
#include "as_gemm_tc_r2_pocl_markers.h"
#include "as_gemm_tc_runtime_k_pocl_markers.h"
#include "as_gemm_tc_runtime_k_r2_pocl_markers.h"

#include <gtest/gtest.h>

namespace {

using namespace tc_numbers;

/** (M, N) at the estimate (64 x 64); with tails along both dimensions, along M only and along
 * N only, which the kernel of whole tiles runs, its edge blocks shifted inwards over their
 * neighbours (N a whole number of 8-element vectors); less than one block, and N not whole
 * vectors, which the kernel of clamped copies runs; K as built. */
std::vector<MatMulShape> gemm_shapes(int k) {
    return {{0, 64, 64, k}, {0, 100, 72, k}, {0, 100, 64, k}, {0, 64, 72, k},
            {0, 17, 9, k},  {0, 1, 1, k},    {0, 33, 130, k}};
}

/** gemm_shapes(estimate) and, for a build whose K is a runtime size, two shapes (one of each
 * kernel: whole tiles with shifted edges, and less than a block) at each of `other_ks`. */
std::vector<MatMulShape> runtime_k_shapes(int estimate, const std::vector<int> &other_ks) {
    std::vector<MatMulShape> shapes = gemm_shapes(estimate);
    for (int k : other_ks) {
        shapes.push_back({0, 100, 72, k});
        shapes.push_back({0, 17, 9, k});
    }
    return shapes;
}

// K 64; f16.
TEST(AutoscheduledTensorCoreNumbers, GemmF16) {
    check_matmul(as_gemm_tc_pocl, f16, gemm_shapes(64));
}
// K 32; bf16.
TEST(AutoscheduledTensorCoreNumbers, GemmBF16K32) {
    check_matmul(as_gemm_tc_k32_pocl, bf16, gemm_shapes(32));
}
// K 16, a single k tile: one shared stage (more would be a pipeline over a loop of one chunk,
// which Halide removes and the pass rejects).
TEST(AutoscheduledTensorCoreNumbers, GemmBF16K16) {
    check_matmul(as_gemm_tc_k16_pocl, bf16, gemm_shapes(16));
}
// K 128 for an H200 under the opt-in limits, where the model picks register stages of the
// fragments (16x32x32 w16x32 S4 R2): ldmatrix a k step ahead, across chunks.
TEST(AutoscheduledTensorCoreNumbers, GemmF16RegisterStages) {
    check_matmul(as_gemm_tc_r2_pocl, f16, gemm_shapes(128));
}
// K a runtime size (estimated 64): tensor cores where the k tile divides K (the estimate, 128,
// 192: chunks the pass proves whole), the same tiles and chunks on the threads' own
// multiply-adds, the last chunk guarded, at any other K.
TEST(AutoscheduledTensorCoreNumbers, GemmF16RuntimeK) {
    check_matmul(as_gemm_tc_runtime_k_pocl, f16, runtime_k_shapes(64, {1, 16, 48, 72, 128, 130, 192}));
}
// The same with register stages (the estimate 128, bf16, the H200's opt-in limits: 16x16x32
// w16x16 S4 R2) in the branch of whole chunks (32, 96, 160 too).
TEST(AutoscheduledTensorCoreNumbers, GemmBF16RuntimeKRegisterStages) {
    check_matmul(as_gemm_tc_runtime_k_r2_pocl, bf16, runtime_k_shapes(128, {8, 32, 96, 100, 160}));
}
TEST(AutoscheduledTensorCoreNumbers, BmmBF16) {
    // The estimate; N not whole vectors; the last M block shifted; both edges shifted.
    check_matmul(as_bmm_tc_pocl, bf16, {{2, 64, 64, 64}, {3, 45, 19, 64}, {1, 17, 80, 64}, {2, 40, 40, 64}});
}
// Its reduction's extent a runtime size (estimated 64), f16.
TEST(AutoscheduledTensorCoreNumbers, BmmF16RuntimeK) {
    check_matmul(as_bmm_tc_runtime_k_pocl, f16,
                 {{2, 64, 64, 64},
                  {3, 45, 19, 64},
                  {2, 64, 64, 40},
                  {3, 45, 19, 100},
                  {1, 17, 80, 8},
                  {2, 64, 64, 128},
                  {3, 45, 19, 192}});
}
// 3 x 3 filters over the build's 32 channels, no padding: inputs of (output + 2) pixels; the
// estimate (8 x 8 outputs, 32 output channels), odd sizes, channel tails; and outputs whose
// pixels the M tile does not divide but covers, or channels (whole vectors) the N tile does not
// divide, which the kernel of whole tiles runs, its edge blocks shifted inwards over their
// neighbours (11 x 9 and 10 x 13 pixels, 24 channels), and one narrower than the tile, which
// the other kernel runs (6 x 7).
TEST(AutoscheduledTensorCoreNumbers, Conv2dF16) {
    check_conv(as_conv2d_tc_pocl, f16,
               {{1, 10, 10, 32, 32, 3, 3},
                {2, 11, 9, 32, 20, 3, 3},
                {1, 7, 8, 32, 13, 3, 3},
                {2, 13, 11, 32, 32, 3, 3},
                {1, 12, 15, 32, 64, 3, 3},
                {1, 8, 9, 32, 32, 3, 3},
                {1, 10, 10, 32, 24, 3, 3}},
               1, 0, /*out_4d=*/true);
}

// CI a runtime size (estimated 32), bf16: tensor cores over the estimate's channels (its
// chunks fused with the filter taps), the threads' own multiply-adds over any other count.
TEST(AutoscheduledTensorCoreNumbers, Conv2dBF16RuntimeChannels) {
    check_conv(as_conv2d_tc_runtime_k_pocl, bf16,
               {{1, 10, 10, 32, 32, 3, 3},
                {2, 11, 9, 32, 20, 3, 3},
                {1, 10, 10, 16, 32, 3, 3},
                {1, 9, 12, 40, 24, 3, 3},
                {2, 7, 8, 3, 13, 3, 3},
                {1, 10, 10, 64, 32, 3, 3}},
               1, 0, /*out_4d=*/true);
}

// The kernels above are the plugin's tensor-core kernels, not a fallback: the pass made mma.sync
// and ldmatrix markers of every schedule (counted by the replay before the emulation), and the
// builds at K 128 for the H200 keep their fragments in register slots (their register stages).
TEST(AutoscheduledTensorCoreNumbers, SchedulesUseTensorCores) {
    const struct {
        const char *name;
        int mma, ldmatrix;
    } builds[] = {
        {"as_gemm_tc", as_gemm_tc_mma_markers, as_gemm_tc_ldmatrix_markers},
        {"as_gemm_tc_k32", as_gemm_tc_k32_mma_markers, as_gemm_tc_k32_ldmatrix_markers},
        {"as_gemm_tc_k16", as_gemm_tc_k16_mma_markers, as_gemm_tc_k16_ldmatrix_markers},
        {"as_gemm_tc_r2", as_gemm_tc_r2_mma_markers, as_gemm_tc_r2_ldmatrix_markers},
        {"as_gemm_tc_runtime_k", as_gemm_tc_runtime_k_mma_markers, as_gemm_tc_runtime_k_ldmatrix_markers},
        {"as_gemm_tc_runtime_k_r2", as_gemm_tc_runtime_k_r2_mma_markers, as_gemm_tc_runtime_k_r2_ldmatrix_markers},
        {"as_bmm_tc", as_bmm_tc_mma_markers, as_bmm_tc_ldmatrix_markers},
        {"as_bmm_tc_runtime_k", as_bmm_tc_runtime_k_mma_markers, as_bmm_tc_runtime_k_ldmatrix_markers},
        {"as_conv2d_tc", as_conv2d_tc_mma_markers, as_conv2d_tc_ldmatrix_markers},
        {"as_conv2d_tc_runtime_k", as_conv2d_tc_runtime_k_mma_markers, as_conv2d_tc_runtime_k_ldmatrix_markers}};
    for (const auto &b : builds) {
        std::printf("%s: %d mma.sync markers, %d ldmatrix markers\n", b.name, b.mma, b.ldmatrix);
        EXPECT_GT(b.mma, 0) << b.name;
        EXPECT_GT(b.ldmatrix, 0) << b.name;
    }
    std::printf("as_gemm_tc_r2: %d ldmatrix results kept in register slots\n", as_gemm_tc_r2_ldmatrix_into_registers);
    EXPECT_GT(as_gemm_tc_r2_ldmatrix_into_registers, 0) << "the register-stage build lost its register stages";
    EXPECT_GT(as_gemm_tc_runtime_k_r2_ldmatrix_into_registers, 0)
        << "the runtime-K register-stage build lost its register stages";
}

}  // namespace
