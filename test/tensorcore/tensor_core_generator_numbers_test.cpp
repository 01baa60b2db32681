// The numbers of the production generators gemm, bmm and conv2d with type=f16 and type=bf16
// (generators/MatMulGenerator.h, Conv2dGenerator.h), built through their testing wrappers
// (testing_gemm, testing_bmm, testing_conv2d: the same schedules, and on OpenCL the ldmatrix and
// mma.sync markers emulated, test/support/EmulatedTensorCores.h) and run on pocl. Blocks of
// 32 x 32, which pocl compiles in seconds.
//
// Inputs: uniform in [-1, 1), rounded to fp16 or bf16; the reference is the double-precision
// sum of the products of the rounded inputs, and an output is close when it is within the
// rounding of an fp32 sum of that many exact products (reference::exact_products_bound, the
// bound of tensor_core_numbers_test). Shapes with tails in M, N and K, K below one k tile, one
// k tile, fewer k tiles than stages, several; for conv2d odd sizes, padding, stride 2.

#include "HalideBuffer.h"
#include "Reference.h"

#include "tcg_bmm_bf16_s3.h"
#include "tcg_bmm_f16_s2_k16.h"
#include "tcg_conv_bf16_s2_stride2.h"
#include "tcg_conv_f16_s3_pad1.h"
#include "tcg_gemm_bf16_s1_k16.h"
#include "tcg_gemm_f16_s2_b1_w32x16.h"
#include "tcg_gemm_f16_s3.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

namespace {

using Halide::Runtime::Buffer;
using Fn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

const halide_type_t f16(halide_type_float, 16), bf16(halide_type_bfloat, 16);

struct MatMulShape {
    int batch, m, n, k;  // batch 0: gemm's 2-D operands
};

/** Outputs of `fn` off the reference at `s` (or unwritten); prints the count. */
int matmul_mismatches(Fn fn, halide_type_t type, const MatMulShape &s) {
    std::mt19937 rng(s.m * 131 + s.n * 17 + s.k);
    std::vector<int> a_shape{s.k, s.m}, b_shape{s.n, s.k}, out_shape{s.n, s.m};
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
    std::printf("batch %d, %dx%dx%d: %d of %d outputs off\n", s.batch, s.m, s.n, s.k, bad,
                (int)out.number_of_elements());
    return bad;
}

// Tails in M, N and K (the copies read zeros past the edges), K below one k tile, one k tile,
// fewer k tiles than three stages (K 40, 64 with tile_k 32), several k tiles.
const std::vector<MatMulShape> gemm_shapes{{0, 32, 32, 32}, {0, 64, 64, 64}, {0, 100, 72, 160}, {0, 17, 9, 7},
                                           {0, 33, 47, 40}, {0, 1, 1, 1},    {0, 96, 130, 250}};
const std::vector<MatMulShape> bmm_shapes{{2, 32, 32, 32}, {3, 45, 19, 70}, {1, 17, 40, 9}, {2, 64, 33, 129}};

void check(Fn fn, halide_type_t type, const std::vector<MatMulShape> &shapes) {
    for (const MatMulShape &s : shapes) {
        SCOPED_TRACE(::testing::Message() << "batch " << s.batch << ", " << s.m << "x" << s.n << "x" << s.k);
        EXPECT_EQ(matmul_mismatches(fn, type, s), 0);
    }
}

// Named: generator, element, shared stages (b1: B unpipelined), k tile where not 32, warp
// tile where not 16 x 16.
TEST(TensorCoreGeneratorNumbers, GemmF16ThreeStages) {
    check(tcg_gemm_f16_s3, f16, gemm_shapes);
}
TEST(TensorCoreGeneratorNumbers, GemmBF16OneStageK16) {
    check(tcg_gemm_bf16_s1_k16, bf16, gemm_shapes);
}
TEST(TensorCoreGeneratorNumbers, GemmF16TwoStagesBUnpipelinedTallWarps) {
    check(tcg_gemm_f16_s2_b1_w32x16, f16, gemm_shapes);
}
TEST(TensorCoreGeneratorNumbers, BmmBF16ThreeStages) {
    check(tcg_bmm_bf16_s3, bf16, bmm_shapes);
}
TEST(TensorCoreGeneratorNumbers, BmmF16TwoStagesK16) {
    check(tcg_bmm_f16_s2_k16, f16, bmm_shapes);
}

struct ConvShape {
    int n, h, w, ci, co, kh, kw;
};

/** Outputs of the conv2d `fn` (input (ci, x, y, n), filter (co, ci, kx, ky), out (co, pixel))
 * off the reference at `s`. */
int conv_mismatches(Fn fn, halide_type_t type, const ConvShape &s, int stride, int pad) {
    const int oh = (s.h + 2 * pad - s.kh) / stride + 1, ow = (s.w + 2 * pad - s.kw) / stride + 1;
    std::mt19937 rng(s.ci * 7 + s.co);
    Buffer<float> input, filter;
    Buffer<void> input_bits = reference::random_operand(rng, {s.ci, s.w, s.h, s.n}, type, input);
    Buffer<void> filter_bits = reference::random_operand(rng, {s.co, s.ci, s.kw, s.kh}, type, filter);
    Buffer<float> out = reference::poisoned({s.co, ow * oh * s.n});
    if (fn(input_bits, filter_bits, out) != 0) return -1;
    out.copy_to_host();
    int bad = 0;
    for (int n = 0; n < s.n; n++) {
        for (int oy = 0; oy < oh; oy++) {
            for (int ox = 0; ox < ow; ox++) {
                for (int co = 0; co < s.co; co++) {
                    double ref = 0, scale = 0;
                    for (int ky = 0; ky < s.kh; ky++) {
                        for (int kx = 0; kx < s.kw; kx++) {
                            const int ix = ox * stride + kx - pad, iy = oy * stride + ky - pad;
                            if (ix < 0 || ix >= s.w || iy < 0 || iy >= s.h) continue;
                            for (int ci = 0; ci < s.ci; ci++) {
                                const double t = (double)input(ci, ix, iy, n) * filter(co, ci, kx, ky);
                                ref += t;
                                scale += std::abs(t);
                            }
                        }
                    }
                    const float got = out(co, ox + ow * (oy + oh * n));
                    bad += !reference::close_exact_products(got, ref, scale, s.kh * s.kw * s.ci);
                }
            }
        }
    }
    std::printf("n %d, %dx%d, %d -> %d channels, %dx%d filter: %d of %d outputs off\n", s.n, s.h, s.w, s.ci, s.co, s.kh,
                s.kw, bad, (int)out.number_of_elements());
    return bad;
}

// Odd sizes, a channel tail (21 = 16 + 5), fewer channels than one chunk, channels of one
// chunk exactly, several chunks per tap, 1 x 1 and non-square filters.
const ConvShape conv_shapes[] = {
    {2, 9, 7, 21, 20, 3, 3},
    {1, 5, 7, 3, 5, 3, 3},
    {1, 8, 8, 16, 32, 1, 1},
    {3, 6, 5, 40, 9, 2, 3},
};

void check_conv(Fn fn, halide_type_t type, int stride, int pad) {
    for (const ConvShape &s : conv_shapes) {
        SCOPED_TRACE(::testing::Message() << "n " << s.n << ", " << s.h << "x" << s.w << ", " << s.ci << " -> " << s.co
                                          << ", " << s.kh << "x" << s.kw);
        EXPECT_EQ(conv_mismatches(fn, type, s, stride, pad), 0);
    }
}

TEST(TensorCoreGeneratorNumbers, Conv2dF16ThreeStagesPadded) {
    check_conv(tcg_conv_f16_s3_pad1, f16, 1, 1);
}
TEST(TensorCoreGeneratorNumbers, Conv2dBF16TwoStagesStrideTwo) {
    check_conv(tcg_conv_bf16_s2_stride2, bf16, 2, 0);
}

}  // namespace
