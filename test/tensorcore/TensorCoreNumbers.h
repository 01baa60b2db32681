#ifndef ALCOP_TEST_TENSOR_CORE_NUMBERS_H
#define ALCOP_TEST_TENSOR_CORE_NUMBERS_H

// What the numbers tests of fp16 / bf16 contractions on pocl share: random inputs rounded to
// the element type, the double-precision reference on the rounded inputs, and close as
// reference::exact_products_bound (test/common/Reference.h) allows; every count printed.

#include "HalideBuffer.h"
#include "Reference.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

namespace tc_numbers {

using Fn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

const halide_type_t f16(halide_type_float, 16), bf16(halide_type_bfloat, 16);

struct MatMulShape {
    int batch, m, n, k;  // batch 0: a GEMM's 2-D operands
};

/** Outputs of fn(A(k, m[, b]), B(n, k[, b]), out(n, m[, b])) off the reference at `s` (or
 * unwritten); -1 when the pipeline fails. */
inline int matmul_mismatches(Fn fn, halide_type_t type, const MatMulShape &s) {
    std::mt19937 rng(s.m * 131 + s.n * 17 + s.k);
    std::vector<int> a_shape{s.k, s.m}, b_shape{s.n, s.k}, out_shape{s.n, s.m};
    if (s.batch) {
        a_shape.push_back(s.batch);
        b_shape.push_back(s.batch);
        out_shape.push_back(s.batch);
    }
    Halide::Runtime::Buffer<float> a_values, b_values;
    Halide::Runtime::Buffer<void> a = reference::random_operand(rng, a_shape, type, a_values);
    Halide::Runtime::Buffer<void> b = reference::random_operand(rng, b_shape, type, b_values);
    Halide::Runtime::Buffer<float> out = reference::poisoned(out_shape);
    if (fn(a, b, out) != 0) return -1;
    out.copy_to_host();
    const int bad = reference::matmul_mismatches(a_values, b_values, out, /*exact_products=*/true);
    std::printf("batch %d, %dx%dx%d: %d of %d outputs off\n", s.batch, s.m, s.n, s.k, bad,
                (int)out.number_of_elements());
    return bad;
}

inline void check_matmul(Fn fn, halide_type_t type, const std::vector<MatMulShape> &shapes) {
    for (const MatMulShape &s : shapes) {
        SCOPED_TRACE(::testing::Message() << "batch " << s.batch << ", " << s.m << "x" << s.n << "x" << s.k);
        EXPECT_EQ(matmul_mismatches(fn, type, s), 0);
    }
}

struct ConvShape {
    int n, h, w, ci, co, kh, kw;  // the input's sizes, the filter's
};

/** Outputs of the convolution fn(input(ci, x, y, n), filter(co, ci, kx, ky), out) off the
 * reference at `s`, with `stride` and zero padding `pad`; out is the NHWC output, as
 * (co, pixel) or, with out_4d, (co, x, y, n): the same elements in the same order. */
inline int conv_mismatches(Fn fn, halide_type_t type, const ConvShape &s, int stride, int pad, bool out_4d = false) {
    const int oh = (s.h + 2 * pad - s.kh) / stride + 1, ow = (s.w + 2 * pad - s.kw) / stride + 1;
    std::mt19937 rng(s.ci * 7 + s.co + s.h);
    Halide::Runtime::Buffer<float> input, filter;
    Halide::Runtime::Buffer<void> input_bits = reference::random_operand(rng, {s.ci, s.w, s.h, s.n}, type, input);
    Halide::Runtime::Buffer<void> filter_bits = reference::random_operand(rng, {s.co, s.ci, s.kw, s.kh}, type, filter);
    Halide::Runtime::Buffer<float> out =
        reference::poisoned(out_4d ? std::vector<int>{s.co, ow, oh, s.n} : std::vector<int>{s.co, ow * oh * s.n});
    if (fn(input_bits, filter_bits, out) != 0) return -1;
    out.copy_to_host();
    const float *got = out.data();  // dense: (co, pixel) either way
    int bad = 0;
    for (int n = 0; n < s.n; n++) {
        for (int oy = 0; oy < oh; oy++) {
            for (int ox = 0; ox < ow; ox++) {
                for (int co = 0; co < s.co; co++) {
                    double scale = 0;
                    const double ref = reference::conv2d_at(input, filter, stride, pad, co, ox, oy, n, &scale);
                    const float value = got[co + s.co * (ox + ow * (oy + oh * n))];
                    bad += !reference::close_exact_products(value, ref, scale, s.kh * s.kw * s.ci);
                }
            }
        }
    }
    std::printf("n %d, %dx%d, %d -> %d channels, %dx%d filter: %d of %d outputs off\n", s.n, s.h, s.w, s.ci, s.co, s.kh,
                s.kw, bad, (int)out.number_of_elements());
    return bad;
}

inline void check_conv(Fn fn, halide_type_t type, const std::vector<ConvShape> &shapes, int stride, int pad,
                       bool out_4d = false) {
    for (const ConvShape &s : shapes) {
        SCOPED_TRACE(::testing::Message() << "n " << s.n << ", " << s.h << "x" << s.w << ", " << s.ci << " -> " << s.co
                                          << ", " << s.kh << "x" << s.kw);
        EXPECT_EQ(conv_mismatches(fn, type, s, stride, pad, out_4d), 0);
    }
}

}  // namespace tc_numbers

#endif
