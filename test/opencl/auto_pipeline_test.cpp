// alcop::auto_pipeline on pocl: the project's generators with every alcop::pipeline() call
// removed, Li2018's GEMM plus the switch, and schedules written by others
// (test/support/ForeignGenerators.cpp), against a double-precision reference, and each foreign
// schedule with the switch against the same schedule without it (bit for bit: pipelining moves
// copies, not arithmetic). What the switch chose for each is in test/unit/auto_pipeline_test.cpp.

#include "GemmRun.h"
#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "Reference.h"

#include "halide_conv_layer.h"
#include "halide_conv_layer_switch.h"
#include "halide_cuda_mat_mul.h"
#include "halide_cuda_mat_mul_switch.h"
#include "halide_gpu_dynamic_shared.h"
#include "halide_gpu_dynamic_shared_switch.h"
#include "switch_bmm.h"
#include "switch_conv.h"
#include "switch_gemm.h"
#include "switch_bmm_li2018.h"
#include "switch_conv_li2018.h"
#include "switch_gemm_li2018.h"
#include "switch_gemm_r2.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

namespace {

using Halide::Runtime::Buffer;

struct Shape {
    int m, n, k;
};
// Whole tiles, and tails in every dimension.
const Shape shapes[] = {{64, 64, 64}, {100, 70, 37}, {128, 96, 256}};

TEST(AutoPipelineOpenCL, GemmAndBmmWithoutRequests) {
    for (const Shape &s : shapes) {
        EXPECT_EQ(reference::gemm_mismatches(switch_gemm, s.m, s.n, s.k), 0) << s.m << "x" << s.n << "x" << s.k;
        EXPECT_EQ(reference::gemm_mismatches(switch_gemm_r2, s.m, s.n, s.k), 0) << s.m << "x" << s.n << "x" << s.k;
        EXPECT_EQ(reference::gemm_mismatches(switch_bmm, s.m, s.n, s.k, 3), 0) << s.m << "x" << s.n << "x" << s.k;
    }
}

// conv2d (implicit GEMM, 3 x 3, pad 1) without requests: out(co, pixel).
TEST(AutoPipelineOpenCL, ConvWithoutRequests) {
    const int n = 2, h = 9, w = 7, ci = 19, co = 24, pad = 1;
    std::mt19937 rng(5);
    Buffer<float> input(ci, w, h, n), filter(co, ci, 3, 3);
    reference::fill_random(input, rng);
    reference::fill_random(filter, rng);
    Buffer<float> out = reference::poisoned({co, w * h * n});
    ASSERT_EQ(switch_conv(input, filter, out), 0);
    out.copy_to_host();
    int bad = 0;
    for (int b = 0; b < n; b++) {
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                for (int c = 0; c < co; c++) {
                    double ref = 0, scale = 0;
                    for (int ky = 0; ky < 3; ky++) {
                        for (int kx = 0; kx < 3; kx++) {
                            const int ix = x + kx - pad, iy = y + ky - pad;
                            if (ix < 0 || ix >= w || iy < 0 || iy >= h) continue;
                            for (int i = 0; i < ci; i++) {
                                const double t = (double)input(i, ix, iy, b) * filter(c, i, kx, ky);
                                ref += t;
                                scale += std::abs(t);
                            }
                        }
                    }
                    bad += !reference::close(out(c, x + w * (y + h * b)), ref, scale);
                }
            }
        }
    }
    EXPECT_EQ(bad, 0);
}

// Li2018's schedule stages nothing (every thread reads A and B from global memory): the switch
// finds no candidate, and the numbers are those of the plain contraction.
TEST(AutoPipelineOpenCL, Li2018PlusTheSwitch) {
    for (const Shape &s : shapes) {
        EXPECT_EQ(reference::gemm_mismatches(switch_gemm_li2018, s.m, s.n, s.k), 0) << s.m << "x" << s.n << "x" << s.k;
    }
}

// The same for batched matmul, and the valid 3 x 3 convolution as_conv2d:
// out(co, x, y, n) = sum input(ci, x + kx, y + ky, n) * weights(co, ci, kx, ky).
TEST(AutoPipelineOpenCL, Li2018PlusTheSwitchBmmAndConv) {
    for (const Shape &s : shapes) {
        EXPECT_EQ(reference::gemm_mismatches(switch_bmm_li2018, s.m, s.n, s.k, 3), 0)
            << s.m << "x" << s.n << "x" << s.k;
    }
    // Li2018 splits the output by up to 64 with ShiftInwards: at least that many of each.
    const int n = 1, h = 14, w = 14, ci = 13, co = 64;
    std::mt19937 rng(3);
    Buffer<float> input(ci, w + 2, h + 2, n), weights(co, ci, 3, 3);
    reference::fill_random(input, rng);
    reference::fill_random(weights, rng);
    Buffer<float> out = reference::poisoned({co, w, h, n});
    ASSERT_EQ(switch_conv_li2018(input, weights, out), 0);
    out.copy_to_host();
    int bad = 0;
    out.for_each_element([&](int c, int x, int y, int b) {
        double ref = 0, scale = 0;
        for (int ky = 0; ky < 3; ky++) {
            for (int kx = 0; kx < 3; kx++) {
                for (int i = 0; i < ci; i++) {
                    const double t = (double)input(i, x + kx, y + ky, b) * weights(c, i, kx, ky);
                    ref += t;
                    scale += std::abs(t);
                }
            }
        }
        bad += !reference::close(out(c, x, y, b), ref, scale);
    });
    EXPECT_EQ(bad, 0);
}

template<typename T>
bool identical(const Buffer<T> &a, const Buffer<T> &b) {
    bool same = true;
    a.for_each_element([&](const int *pos) { same = same && a(pos) == b(pos); });
    return same;
}

// Halide's apps/conv_layer schedule (input.in() staged in shared memory across rxo), with and
// without the switch; relu(c, x, y, n) = max(0, bias(c) + sum filter(c, ry, rz, rx) *
// input(rx, x + ry, y + rz, n)). Sizes: the generator's defaults.
TEST(AutoPipelineOpenCL, HalideConvLayer) {
    const int N = 1, CI = 64, CO = 32, W = 5, H = 5;
    std::mt19937 rng(7);
    Buffer<float> input(CI, W + 2, H + 2, N), filter(CO, 3, 3, CI), bias(CO);
    reference::fill_random(input, rng);
    reference::fill_random(filter, rng);
    reference::fill_random(bias, rng);
    Buffer<float> plain = reference::poisoned({CO, W, H, N}), pipelined = reference::poisoned({CO, W, H, N});
    ASSERT_EQ(halide_conv_layer(input, filter, bias, plain), 0);
    ASSERT_EQ(halide_conv_layer_switch(input, filter, bias, pipelined), 0);
    plain.copy_to_host();
    pipelined.copy_to_host();
    int bad = 0;
    for (int n = 0; n < N; n++) {
        for (int y = 0; y < H; y++) {
            for (int x = 0; x < W; x++) {
                for (int c = 0; c < CO; c++) {
                    double ref = bias(c), scale = std::abs(bias(c));
                    for (int rz = 0; rz < 3; rz++) {
                        for (int ry = 0; ry < 3; ry++) {
                            for (int rx = 0; rx < CI; rx++) {
                                const double t = (double)filter(c, ry, rz, rx) * input(rx, x + ry, y + rz, n);
                                ref += t;
                                scale += std::abs(t);
                            }
                        }
                    }
                    bad += !reference::close(pipelined(c, x, y, n), std::max(ref, 0.0), scale);
                }
            }
        }
    }
    EXPECT_EQ(bad, 0);
    EXPECT_TRUE(identical(plain, pipelined));
}

// Halide's apps/cuda_mat_mul computes out(x, y) = sum_r A(x, r) * B(r, y): the project's gemm
// with the operands swapped.
int mat_mul_switch_as_gemm(halide_buffer_t *a, halide_buffer_t *b, halide_buffer_t *out) {
    return halide_cuda_mat_mul_switch(b, a, out);
}
int mat_mul_as_gemm(halide_buffer_t *a, halide_buffer_t *b, halide_buffer_t *out) {
    return halide_cuda_mat_mul(b, a, out);
}

TEST(AutoPipelineOpenCL, HalideCudaMatMul) {
    const int size = 128;  // the generator's default; its schedule is written for that size only
    EXPECT_EQ(reference::gemm_mismatches(mat_mul_switch_as_gemm, size, size, size), 0);
    EXPECT_EQ(reference::gemm_mismatches(mat_mul_as_gemm, size, size, size), 0);
    std::mt19937 rng(11);
    Buffer<float> A(size, size), B(size, size);
    reference::fill_random(A, rng);
    reference::fill_random(B, rng);
    Buffer<float> plain = reference::poisoned({size, size}), pipelined = reference::poisoned({size, size});
    ASSERT_EQ(halide_cuda_mat_mul(A, B, plain), 0);
    ASSERT_EQ(halide_cuda_mat_mul_switch(A, B, pipelined), 0);
    plain.copy_to_host();
    pipelined.copy_to_host();
    EXPECT_TRUE(identical(plain, pipelined));
}

// Halide's test/correctness/gpu_dynamic_shared.cpp: nothing to pipeline; g(x) = 3x still.
TEST(AutoPipelineOpenCL, HalideGpuDynamicShared) {
    for (auto fn : {halide_gpu_dynamic_shared, halide_gpu_dynamic_shared_switch}) {
        Buffer<int> out(100);
        ASSERT_EQ(fn(out), 0);
        out.copy_to_host();
        for (int x = 0; x < 100; x++) EXPECT_EQ(out(x), 3 * x) << x;
    }
}

}  // namespace

int main(int argc, char **argv) {
    // As in matmul_test.cpp: pocl runs each work-item alone between barriers, so a race shows.
    setenv("POCL_WORK_GROUP_METHOD", "loops", 1);  // pinned: a user's value must not change what is checked
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
