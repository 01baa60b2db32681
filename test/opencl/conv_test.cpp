// The pipelined implicit-GEMM convolution on pocl against a double-precision reference.

#include "HalideBuffer.h"
#include "Reference.h"

#include "conv_s1.h"
#include "conv_s3.h"
#include "conv_s4_stride2.h"
#include "conv_s3_r2.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using Halide::Runtime::Buffer;
using ConvFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct ConvShape {
    int n, h, w, ci, co, kh, kw;
};

// Wrong or unwritten output elements (test/common/Reference.h).
int conv_mismatches(ConvFn fn, const ConvShape &s, int stride, int pad) {
    const int oh = (s.h + 2 * pad - s.kh) / stride + 1, ow = (s.w + 2 * pad - s.kw) / stride + 1;
    std::mt19937 rng(s.ci * 7 + s.co);
    Buffer<float> input(s.ci, s.w, s.h, s.n), filter(s.co, s.ci, s.kw, s.kh);
    Buffer<float> out = reference::poisoned({s.co, ow * oh * s.n});
    reference::fill_random(input, rng);
    reference::fill_random(filter, rng);
    EXPECT_EQ(fn(input, filter, out), 0);
    out.copy_to_host();
    return reference::conv2d_mismatches(input, filter, out, stride, pad);
}

const ConvShape conv_shapes[] = {
    {2, 9, 9, 13, 20, 3, 3},  // channel tail (13 = 8 + 5), CO not a multiple of the block
    {1, 8, 8, 16, 64, 1, 1},  // 1x1: a plain GEMM over channels
    {1, 5, 7, 3, 5, 3, 3},    // fewer channels than one chunk
    {3, 6, 6, 24, 8, 2, 2},   // several chunks per tap, batch 3
};

TEST(Conv2d, UnpipelinedMatchesReference) {
    for (const ConvShape &s : conv_shapes) EXPECT_EQ(conv_mismatches(conv_s1, s, 1, 1), 0);
}

TEST(Conv2d, ThreeStagesMatchReference) {
    for (const ConvShape &s : conv_shapes) EXPECT_EQ(conv_mismatches(conv_s3, s, 1, 1), 0);
}

TEST(Conv2d, StrideTwoFourStagesMatchReference) {
    for (const ConvShape &s : conv_shapes) EXPECT_EQ(conv_mismatches(conv_s4_stride2, s, 2, 0), 0);
}

TEST(Conv2d, BothLevelsMatchReference) {
    // 3 shared stages, fragments double-buffered across the channel steps of each chunk.
    for (const ConvShape &s : conv_shapes) EXPECT_EQ(conv_mismatches(conv_s3_r2, s, 1, 1), 0);
}

}  // namespace
