// The numbers of the Alcop plugin's tensor-core schedules (fp16 / bf16 GEMM, batched matmul and
// conv2d, generators/PlainContractionGenerators.cpp), on pocl: the schedules the plugin wrote for
// CUDA sm_80, compiled for OpenCL with the ldmatrix and mma markers emulated
// (replay_tensor_core_schedule.cpp), against the double-precision reference on the rounded
// inputs, close as in tensor_core_numbers_test (reference::exact_products_bound). K and conv2d's
// channels are the builds' (compile-time for fp16 / bf16); M, N, the batch and the image sizes
// vary, with tails.

#include "HalideBuffer.h"
#include "Reference.h"

#include "as_bmm_tc_pocl.h"
#include "as_conv2d_tc_pocl.h"
#include "as_gemm_tc_k32_pocl.h"
#include "as_gemm_tc_pocl.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

namespace {

using Halide::Runtime::Buffer;
using Fn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

const halide_type_t f16(halide_type_float, 16), bf16(halide_type_bfloat, 16);

struct MatMulShape {
    int batch, m, n;  // batch 0: the GEMM's 2-D operands
};

int matmul_mismatches(Fn fn, halide_type_t type, int k, const MatMulShape &s) {
    std::mt19937 rng(s.m * 131 + s.n * 17 + k);
    std::vector<int> a_shape{k, s.m}, b_shape{s.n, k}, out_shape{s.n, s.m};
    if (s.batch) {
        a_shape.push_back(s.batch);
        b_shape.push_back(s.batch);
        out_shape.push_back(s.batch);
    }
    Buffer<float> a_values, b_values;
    Buffer<void> a = reference::random_operand(rng, a_shape, type, a_values);
    Buffer<void> b = reference::random_operand(rng, b_shape, type, b_values);
    Buffer<float> out = reference::poisoned(out_shape);
    if (fn(a, b, out) != 0) return -1;
    out.copy_to_host();
    const int bad = reference::matmul_mismatches(a_values, b_values, out, /*exact_products=*/true);
    std::printf("batch %d, %dx%dx%d: %d of %d outputs off\n", s.batch, s.m, s.n, k, bad, (int)out.number_of_elements());
    return bad;
}

void check(Fn fn, halide_type_t type, int k, const std::vector<MatMulShape> &shapes) {
    for (const MatMulShape &s : shapes) {
        SCOPED_TRACE(::testing::Message() << "batch " << s.batch << ", " << s.m << "x" << s.n << "x" << k);
        EXPECT_EQ(matmul_mismatches(fn, type, k, s), 0);
    }
}

// The estimate (64 x 64), tails in M and N, less than one block, more blocks than the estimate.
const std::vector<MatMulShape> gemm_shapes{{0, 64, 64}, {0, 100, 72}, {0, 17, 9}, {0, 1, 1}, {0, 33, 130}};

// K 64: 4 k tiles of 16, fewer than the plugin's 5 stages; f16.
TEST(AutoscheduledTensorCoreNumbers, GemmF16) {
    check(as_gemm_tc_pocl, f16, 64, gemm_shapes);
}
// K 32; bf16. (Not K 16, a single k tile: for it the plugin picks 2 stages of a loop of one
// chunk, which Halide removes, and the pass rejects the schedule: "A.in(prod) is produced 2
// times at the GPU block level, in no serial loop".)
TEST(AutoscheduledTensorCoreNumbers, GemmBF16K32) {
    check(as_gemm_tc_k32_pocl, bf16, 32, gemm_shapes);
}
TEST(AutoscheduledTensorCoreNumbers, BmmBF16) {
    check(as_bmm_tc_pocl, bf16, 64, {{2, 64, 64}, {3, 45, 19}, {1, 17, 80}});
}

struct ConvShape {
    int n, h, w, co;  // output sizes; 3 x 3 filters over the build's 32 channels
};

TEST(AutoscheduledTensorCoreNumbers, Conv2dF16) {
    const int ci = 32, kh = 3, kw = 3;
    for (const ConvShape &s : {ConvShape{1, 8, 8, 32}, ConvShape{2, 9, 7, 20}, ConvShape{1, 5, 6, 13}}) {
        SCOPED_TRACE(::testing::Message() << "n " << s.n << ", " << s.h << "x" << s.w << ", " << s.co << " channels");
        std::mt19937 rng(s.h * 7 + s.co);
        Buffer<float> input, weights;
        Buffer<void> input_bits = reference::random_operand(rng, {ci, s.w + kw - 1, s.h + kh - 1, s.n}, f16, input);
        Buffer<void> weights_bits = reference::random_operand(rng, {s.co, ci, kw, kh}, f16, weights);
        Buffer<float> out = reference::poisoned({s.co, s.w, s.h, s.n});
        ASSERT_EQ(as_conv2d_tc_pocl(input_bits, weights_bits, out), 0);
        out.copy_to_host();
        int bad = 0;
        out.for_each_element([&](int co, int x, int y, int n) {
            double ref = 0, scale = 0;
            for (int ky = 0; ky < kh; ky++) {
                for (int kx = 0; kx < kw; kx++) {
                    for (int c = 0; c < ci; c++) {
                        const double t = (double)input(c, x + kx, y + ky, n) * weights(co, c, kx, ky);
                        ref += t;
                        scale += std::abs(t);
                    }
                }
            }
            bad += !reference::close_exact_products(out(co, x, y, n), ref, scale, kh * kw * ci);
        });
        std::printf("n %d, %dx%d, %d channels: %d of %d outputs off\n", s.n, s.h, s.w, s.co, bad,
                    (int)out.number_of_elements());
        EXPECT_EQ(bad, 0);
    }
}

}  // namespace
