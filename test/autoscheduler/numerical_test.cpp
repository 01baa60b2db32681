// The Alcop-autoscheduled GEMM, batched matmul and conv2d (generators/PlainGenerators.cpp, compiled AOT
// for OpenCL with the plugin), run on the CPU through pocl against a double-precision
// reference: at the estimated sizes (the pipelined fast path: chunks of the chosen k tile,
// direct vectorized copies) and at sizes that take every other branch (another K: the same
// chunks, the last one guarded, its tail copied from clamped coordinates; outputs smaller than a
// block tile, or along N not a whole number of copy vectors: clamped copies; any other: the fast
// path, its last blocks shifted inwards over their neighbours).
// This binary must not load libHalide: pocl links its own LLVM.

#include "HalideBuffer.h"
#include "Reference.h"
#include "HalideRuntime.h"

#include "as_bmm.h"
#include "as_conv2d.h"
#include "as_gemm.h"
#include "as_gemm_bias.h"
#include "as_gemm_into_output.h"
#include "as_gemm_k256.h"
#include "as_gemm_relu.h"
#include "as_gemm_shifted.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

namespace {

using Halide::Runtime::Buffer;

using reference::poisoned;

/** Fills b from a generator seeded with `seed` (test/common/Reference.h). */
void fill_random(Buffer<float> &b, unsigned seed) {
    std::mt19937 rng(seed);
    reference::fill_random(b, rng);
}

struct MatShape {
    int batch, m, n, k;
};

std::string describe(const MatShape &s) {
    return std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

using MatMulFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

int gemm_mismatches(const MatShape &s, bool batched, MatMulFn fn = as_gemm, bool relu = false) {
    Buffer<float> a = batched ? Buffer<float>(s.k, s.m, s.batch) : Buffer<float>(s.k, s.m);
    Buffer<float> b = batched ? Buffer<float>(s.n, s.k, s.batch) : Buffer<float>(s.n, s.k);
    fill_random(a, s.m * 131 + s.k);
    fill_random(b, s.n * 17 + s.k);
    Buffer<float> out = batched ? poisoned({s.n, s.m, s.batch}) : poisoned({s.n, s.m});
    int err = batched ? as_bmm(a, b, out) : fn(a, b, out);
    EXPECT_EQ(err, 0) << "pipeline error on " << describe(s);
    if (err) return -1;
    out.copy_to_host();
    return reference::matmul_mismatches(a, b, out, [&](double r) { return relu ? std::max(r, 0.0) : r; });
}

class AutoscheduledGemm : public ::testing::TestWithParam<MatShape> {};

TEST_P(AutoscheduledGemm, MatchesReference) {
    EXPECT_EQ(gemm_mismatches(GetParam(), false), 0) << describe(GetParam());
}

// Estimates: M = N = K = 128.
INSTANTIATE_TEST_SUITE_P(Sizes, AutoscheduledGemm,
                         ::testing::Values(MatShape{1, 128, 128, 128},  // the estimate: fast path
                                           MatShape{1, 64, 256, 128},   // K as estimated, whole tiles
                                           MatShape{1, 100, 70, 128},   // K as estimated, partial tiles
                                           MatShape{1, 100, 64, 128},   // whole tiles along N, the last M block shifted
                                           MatShape{1, 128, 200, 128},  // whole tiles along M, the last N block shifted
                                           MatShape{1, 100, 68, 128},   // both shifted
                                           MatShape{1, 128, 128, 96},   // another K: guarded last chunk
                                           MatShape{1, 100, 70, 50},    // every tail
                                           MatShape{1, 1, 1, 1},        // one element
                                           MatShape{1, 130, 3, 97},     // thin N, prime K
                                           MatShape{1, 64, 96, 333}),   // K past the estimate
                         [](const ::testing::TestParamInfo<MatShape> &i) { return describe(i.param); });

// K fixed at 256: the plugin's one-branch schedule, in which it applies the model's register
// stages as well (the schedule it wrote says so).
TEST(AutoscheduledGemmConstantK, AppliesRegisterStagesAndMatchesReference) {
    std::ifstream in(AS_GEMM_K256_SCHEDULE);
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(source.empty()) << AS_GEMM_K256_SCHEDULE;
    EXPECT_NE(source.find("alcop::Level::Register"), std::string::npos) << source;
    for (const MatShape &s : {MatShape{1, 128, 128, 256}, MatShape{1, 100, 64, 256}, MatShape{1, 100, 68, 256},
                              MatShape{1, 100, 70, 256}, MatShape{1, 1, 3, 256}}) {
        EXPECT_EQ(gemm_mismatches(s, false, as_gemm_k256), 0) << describe(s);
    }
}

class AutoscheduledGemmIntoOutput : public ::testing::TestWithParam<MatShape> {};

TEST_P(AutoscheduledGemmIntoOutput, MatchesReference) {
    EXPECT_EQ(gemm_mismatches(GetParam(), false, as_gemm_into_output), 0) << describe(GetParam());
}

// Estimates: M = 96, N = 64, K = 128. The plugin moves the reduction out of the output (rfactor).
INSTANTIATE_TEST_SUITE_P(Sizes, AutoscheduledGemmIntoOutput,
                         ::testing::Values(MatShape{1, 96, 64, 128},  // the estimate: fast path
                                           MatShape{1, 50, 33, 128},  // partial tiles
                                           MatShape{1, 96, 64, 20},   // another K
                                           MatShape{1, 3, 2, 1}),
                         [](const ::testing::TestParamInfo<MatShape> &i) { return describe(i.param); });

// max(GEMM, 0): the epilogue computed in the GEMM's output stage, whole and partial tiles.
TEST(AutoscheduledGemmRelu, FusedEpilogueMatchesReference) {
    for (const MatShape &s : {MatShape{1, 64, 64, 64}, MatShape{1, 37, 50, 23}}) {
        EXPECT_EQ(gemm_mismatches(s, false, as_gemm_relu, true), 0) << describe(s);
    }
}

// out(x, y) = GEMM(x, y + 1), not a recognized contraction: the plugin's plain GPU schedule must
// still be correct. A has one row more than out; the reference reads it one row down.
TEST(AutoscheduledGemmShifted, PlainScheduleMatchesReference) {
    for (const MatShape &s : {MatShape{1, 64, 64, 64}, MatShape{1, 37, 50, 23}}) {
        Buffer<float> a(s.k, s.m + 1), b(s.n, s.k);
        fill_random(a, s.m * 131 + s.k);
        fill_random(b, s.n * 17 + s.k);
        Buffer<float> out = poisoned({s.n, s.m});
        ASSERT_EQ(as_gemm_shifted(a, b, out), 0) << describe(s);
        out.copy_to_host();
        Buffer<float> a_down = a.cropped(1, 1, s.m);
        a_down.translate(1, -1);  // a_down(k, y) = a(k, y + 1)
        EXPECT_EQ(reference::matmul_mismatches(a_down, b, out), 0) << describe(s);
    }
}

class AutoscheduledGemmBias : public ::testing::TestWithParam<MatShape> {};

// The accumulator starts from a bias (prod(x, y) = bias(x)): the edge blocks compute it past N,
// where the plugin's schedule reads the bias at clamped coordinates (it failed at run time,
// "bias is accessed at 255, which is beyond the max (129)", before). Estimates: 128 cubed.
TEST_P(AutoscheduledGemmBias, MatchesReference) {
    const MatShape s = GetParam();
    Buffer<float> a(s.k, s.m), b(s.n, s.k), bias(s.n);
    fill_random(a, s.m * 131 + s.k);
    fill_random(b, s.n * 17 + s.k);
    fill_random(bias, s.n * 7 + 1);
    Buffer<float> out = poisoned({s.n, s.m});
    ASSERT_EQ(as_gemm_bias(a, b, bias, out), 0) << describe(s);
    out.copy_to_host();
    int bad = 0;
    for (int y = 0; y < s.m; y++) {
        for (int x = 0; x < s.n; x++) {
            double ref = bias(x), scale = std::abs(bias(x));
            for (int i = 0; i < s.k; i++) {
                ref += (double)a(i, y) * b(x, i);
                scale += std::abs((double)a(i, y) * b(x, i));
            }
            bad += !reference::close(out(x, y), ref, scale);
        }
    }
    EXPECT_EQ(bad, 0) << describe(s);
}

INSTANTIATE_TEST_SUITE_P(Sizes, AutoscheduledGemmBias,
                         ::testing::Values(MatShape{1, 128, 128, 128},  // the estimate
                                           MatShape{1, 200, 128, 128},  // the last M block shifted over its neighbour
                                           MatShape{1, 128, 196, 128},  // the last N block: the bias read shifted
                                           MatShape{1, 200, 130, 250},  // tails in M, N and K
                                           MatShape{1, 100, 70, 50},    // every tail, K under the estimate
                                           MatShape{1, 1, 1, 1}),       // one element
                         [](const ::testing::TestParamInfo<MatShape> &i) { return describe(i.param); });

class AutoscheduledBmm : public ::testing::TestWithParam<MatShape> {};

TEST_P(AutoscheduledBmm, MatchesReference) {
    EXPECT_EQ(gemm_mismatches(GetParam(), true), 0) << describe(GetParam());
}

// Estimates: batch 3, M = N = K = 64.
INSTANTIATE_TEST_SUITE_P(Sizes, AutoscheduledBmm,
                         ::testing::Values(MatShape{3, 64, 64, 64},   // the estimate: fast path
                                           MatShape{2, 50, 40, 64},   // both edges shifted
                                           MatShape{2, 50, 42, 64},   // partial tiles
                                           MatShape{2, 50, 64, 64},   // the last M block shifted
                                           MatShape{4, 64, 64, 30},   // another K
                                           MatShape{2, 33, 64, 101},  // another K, past the estimate
                                           MatShape{1, 7, 5, 3}),
                         [](const ::testing::TestParamInfo<MatShape> &i) { return describe(i.param); });

struct ConvShape {
    int n, out_h, out_w, ci, co, kh, kw;
};

std::string describe(const ConvShape &s) {
    return "n" + std::to_string(s.n) + "_" + std::to_string(s.out_h) + "x" + std::to_string(s.out_w) + "_ci" +
           std::to_string(s.ci) + "_co" + std::to_string(s.co) + "_k" + std::to_string(s.kh) + "x" +
           std::to_string(s.kw);
}

class AutoscheduledConv2d : public ::testing::TestWithParam<ConvShape> {};

TEST_P(AutoscheduledConv2d, MatchesReference) {
    const ConvShape s = GetParam();
    Buffer<float> input(s.ci, s.out_w + s.kw - 1, s.out_h + s.kh - 1, s.n);
    Buffer<float> weights(s.co, s.ci, s.kw, s.kh);
    fill_random(input, s.ci * 7 + s.out_w);
    fill_random(weights, s.co * 3 + s.kh);
    Buffer<float> out = poisoned({s.co, s.out_w, s.out_h, s.n});
    ASSERT_EQ(as_conv2d(input, weights, out), 0) << describe(s);
    out.copy_to_host();
    int bad = 0;
    for (int n = 0; n < s.n; n++) {
        for (int y = 0; y < s.out_h; y++) {
            for (int x = 0; x < s.out_w; x++) {
                for (int co = 0; co < s.co; co++) {
                    double scale = 0;
                    const double ref = reference::conv2d_at(input, weights, 1, 0, co, x, y, n, &scale);
                    bad += !reference::close(out(co, x, y, n), ref, scale);
                }
            }
        }
    }
    EXPECT_EQ(bad, 0) << describe(s);
}

// Estimates: n 2, 8 x 8 outputs, 32 -> 32 channels, 3 x 3 filters.
INSTANTIATE_TEST_SUITE_P(Shapes, AutoscheduledConv2d,
                         ::testing::Values(ConvShape{2, 8, 8, 32, 32, 3, 3},    // the estimate: fast path
                                           ConvShape{1, 16, 16, 32, 32, 3, 3},  // whole tiles, larger
                                           ConvShape{1, 9, 8, 32, 32, 3, 3},    // a partial tile row: shifted
                                           ConvShape{1, 11, 13, 32, 16, 3, 3},  // both pixel tiles shifted
                                           ConvShape{1, 13, 11, 32, 24, 3, 3},  // channels and pixels shifted
                                           ConvShape{1, 13, 11, 32, 18, 3, 3},  // partial tiles
                                           ConvShape{1, 8, 8, 20, 32, 3, 3},    // another channel count
                                           ConvShape{1, 6, 7, 45, 8, 3, 3},     // more channels, not a tile's
                                           ConvShape{1, 5, 6, 32, 16, 1, 1},    // 1 x 1 filters
                                           ConvShape{1, 4, 4, 8, 8, 5, 3}),     // other filter sizes
                         [](const ::testing::TestParamInfo<ConvShape> &i) { return describe(i.param); });

}  // namespace

int main(int argc, char **argv) {
    // pocl's default work-group method runs the work-items of a loop iteration in lockstep,
    // which would hide a missing barrier; "loops" runs each work-item alone between barriers.
    setenv("POCL_WORK_GROUP_METHOD", "loops", 1);  // pinned: a user's value must not change what is checked
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
