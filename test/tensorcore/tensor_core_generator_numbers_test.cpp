// The numbers of the production generators gemm, bmm and conv2d with type=f16 and type=bf16
// (generators/MatMulGenerator.h, Conv2dGenerator.h), built through their testing wrappers
// (testing_gemm, testing_bmm, testing_conv2d: the same schedules, and on OpenCL the ldmatrix and
// mma.sync markers emulated, test/support/EmulatedTensorCores.h) and run on pocl. Blocks of
// 32 x 32, which pocl compiles in seconds.
//
// Inputs: uniform in [-1, 1), rounded to fp16 or bf16; the reference is the double-precision
// sum of the products of the rounded inputs, and an output is close when it is within the
// rounding of an fp32 sum of that many exact products (TensorCoreNumbers.h,
// reference::exact_products_bound, as in tensor_core_numbers_test).

#include "TensorCoreNumbers.h"

#include "tcg_bmm_bf16_s3.h"
#include "tcg_bmm_f16_s2_k16.h"
#include "tcg_conv_bf16_s2_stride2.h"
#include "tcg_conv_f16_s3_pad1.h"
#include "tcg_gemm_bf16_s1_k16.h"
#include "tcg_gemm_bf16_s2_r2.h"
#include "tcg_gemm_f16_s2_b1_w32x16.h"
#include "tcg_gemm_f16_s3.h"

#include <gtest/gtest.h>

namespace {

using namespace tc_numbers;

// (batch, M, N, K.) Tails in M, N and K (the copies read zeros past the edges), K below one k
// tile, one k tile, fewer k tiles than three stages (K 40, 64 with tile_k 32), several k tiles.
const std::vector<MatMulShape> gemm_shapes{{0, 32, 32, 32}, {0, 64, 64, 64}, {0, 100, 72, 160}, {0, 17, 9, 7},
                                           {0, 33, 47, 40}, {0, 1, 1, 1},    {0, 96, 130, 250}};
const std::vector<MatMulShape> bmm_shapes{{2, 32, 32, 32}, {3, 45, 19, 70}, {1, 17, 40, 9}, {2, 64, 33, 129}};

// Named: generator, element, shared stages (b1: B unpipelined), k tile where not 32, warp
// tile where not 16 x 16.
TEST(TensorCoreGeneratorNumbers, GemmF16ThreeStages) {
    check_matmul(tcg_gemm_f16_s3, f16, gemm_shapes);
}
TEST(TensorCoreGeneratorNumbers, GemmBF16OneStageK16) {
    check_matmul(tcg_gemm_bf16_s1_k16, bf16, gemm_shapes);
}
TEST(TensorCoreGeneratorNumbers, GemmF16TwoStagesBUnpipelinedTallWarps) {
    check_matmul(tcg_gemm_f16_s2_b1_w32x16, f16, gemm_shapes);
}
// Two stages and two register stages: the steady state runs two chunks a trip
// (rewrite/ExpandSlots.h), the fragments of the next chunk loaded from the other copy's slot.
TEST(TensorCoreGeneratorNumbers, GemmBF16TwoStagesTwoRegisterStages) {
    check_matmul(tcg_gemm_bf16_s2_r2, bf16, gemm_shapes);
}
TEST(TensorCoreGeneratorNumbers, BmmBF16ThreeStages) {
    check_matmul(tcg_bmm_bf16_s3, bf16, bmm_shapes);
}
TEST(TensorCoreGeneratorNumbers, BmmF16TwoStagesK16) {
    check_matmul(tcg_bmm_f16_s2_k16, f16, bmm_shapes);
}

// (n, h, w, ci, co, kh, kw.) Odd sizes, a channel tail (21 = 16 + 5), fewer channels than one
// chunk, channels of one chunk exactly, several chunks per tap, 1 x 1 and non-square filters;
// whole channel chunks and filter vectors (the specialized kernel: 16 and 32, 48 and 24) with a
// partial tile of pixels.
const std::vector<ConvShape> conv_shapes{
    {2, 9, 7, 21, 20, 3, 3},
    {1, 5, 7, 3, 5, 3, 3},
    {1, 8, 8, 16, 32, 1, 1},
    {3, 6, 5, 40, 9, 2, 3},
    {2, 9, 7, 48, 24, 3, 3},
};

TEST(TensorCoreGeneratorNumbers, Conv2dF16ThreeStagesPadded) {
    check_conv(tcg_conv_f16_s3_pad1, f16, conv_shapes, 1, 1);
}
TEST(TensorCoreGeneratorNumbers, Conv2dBF16TwoStagesStrideTwo) {
    check_conv(tcg_conv_bf16_s2_stride2, bf16, conv_shapes, 2, 0);
}

}  // namespace
