#ifndef ALCOP_TEST_EPILOGUE_NUMBERS_H
#define ALCOP_TEST_EPILOGUE_NUMBERS_H

// The numbers of a contraction with a fused epilogue (generators/MatMulGenerator.h), against a
// double-precision reference of the whole expression; the inputs as test/tensorcore's
// TensorCoreNumbers.h draws them.

#include "TensorCoreNumbers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tc_numbers {

/** The fused epilogue of the matmul generators (generators/MatMulGenerator.h): out =
 * out_type(activation(A B + bias) + residual). */
using EpilogueFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                           halide_buffer_t *);
enum class Activation { ReLU, GELU };

/** The value of 16 bits of an fp16 or bf16. */
inline float value_of(uint16_t bits, halide_type_t t) {
    if (t.code == halide_type_bfloat) {
        const uint32_t u = (uint32_t)bits << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    _Float16 h;
    memcpy(&h, &bits, 2);
    return (float)h;
}

/** Outputs of fn(A(k, m[, b]), B(n, k[, b]), bias(n), residual(n, m[, b]), out(n, m[, b])) off
 * the double-precision epilogue of the reference product at `s` (or unwritten: out starts as
 * NaNs), out, bias and residual of `out_type`; -1 when the pipeline fails. Close: the product's
 * accumulation bound (exact_products_bound; reference::close's 1e-4 for fp32 operands) through the activation (ReLU 1-Lipschitz,
 * GELU 1.13), the fp32 roundings of the epilogue's few operations and the erf approximation
 * (2^-20 of the terms), and half a unit in the last place of out_type at the result (2^-11 of it
 * for fp16, 2^-8 for bf16, 2^-24 for fp32; fp16's subnormal step at least). A missing or misplaced bias or
 * residual is off by about their size (up to 1). */
inline int epilogue_mismatches(EpilogueFn fn, halide_type_t type, halide_type_t out_type, Activation activation,
                               const MatMulShape &s) {
    std::mt19937 rng(s.m * 131 + s.n * 17 + s.k);
    std::vector<int> a_shape{s.k, s.m}, b_shape{s.n, s.k}, out_shape{s.n, s.m};
    if (s.batch) {
        a_shape.push_back(s.batch);
        b_shape.push_back(s.batch);
        out_shape.push_back(s.batch);
    }
    Halide::Runtime::Buffer<float> a_values, b_values, bias_values, residual_values;
    Halide::Runtime::Buffer<void> a = reference::random_operand(rng, a_shape, type, a_values);
    Halide::Runtime::Buffer<void> b = reference::random_operand(rng, b_shape, type, b_values);
    Halide::Runtime::Buffer<void> bias = reference::random_operand(rng, {s.n}, out_type, bias_values);
    Halide::Runtime::Buffer<void> residual = reference::random_operand(rng, out_shape, out_type, residual_values);
    const bool wide = out_type.bits == 32;
    Halide::Runtime::Buffer<void> out(out_type, out_shape);
    if (wide) {
        std::fill((float *)out.data(), (float *)out.data() + out.number_of_elements(), std::nanf(""));
    } else {
        const uint16_t nan = out_type.code == halide_type_bfloat ? 0x7fc0 : 0x7e00;
        std::fill((uint16_t *)out.data(), (uint16_t *)out.data() + out.number_of_elements(), nan);
    }
    out.set_host_dirty();
    if (fn(a, b, bias, residual, out) != 0) return -1;
    out.copy_to_host();
    const double half_ulp = std::ldexp(1.0, wide ? -24 : out_type.code == halide_type_bfloat ? -8 : -11);
    const double lipschitz = activation == Activation::GELU ? 1.13 : 1.0;
    const int batch = s.batch ? s.batch : 1;
    const uint16_t *got = (const uint16_t *)out.data();
    int bad = 0;
    for (int z = 0; z < batch; z++) {
        for (int y = 0; y < s.m; y++) {
            for (int x = 0; x < s.n; x++) {
                double p = 0, scale = 0;
                for (int i = 0; i < s.k; i++) {
                    const double t = s.batch ? (double)a_values(i, y, z) * b_values(x, i, z) :
                                               (double)a_values(i, y) * b_values(x, i);
                    p += t;
                    scale += std::abs(t);
                }
                const double pre = p + bias_values(x);
                const double act =
                    activation == Activation::ReLU ? std::max(pre, 0.0) : 0.5 * pre * (1 + std::erf(pre * M_SQRT1_2));
                const double r = s.batch ? residual_values(x, y, z) : residual_values(x, y);
                const double ref = act + r;
                const double accumulation =
                    type.bits == 32 ? 1e-4 * scale : reference::exact_products_bound(s.k, scale);
                const double tolerance = lipschitz * accumulation +
                                         std::ldexp(1.0, -20) * (std::abs(pre) + std::abs(r) + 1) +
                                         std::max(half_ulp * std::abs(ref), std::ldexp(1.0, -25));
                const size_t at = x + (size_t)s.n * (y + s.m * z);
                const float value = wide ? ((const float *)out.data())[at] : value_of(got[at], out_type);
                bad += !(std::abs(value - ref) <= tolerance);
            }
        }
    }
    std::printf("batch %d, %dx%dx%d: %d of %d outputs off\n", s.batch, s.m, s.n, s.k, bad,
                (int)out.number_of_elements());
    return bad;
}

inline void check_epilogue(EpilogueFn fn, halide_type_t type, halide_type_t out_type, Activation activation,
                           const std::vector<MatMulShape> &shapes) {
    for (const MatMulShape &s : shapes) {
        SCOPED_TRACE(::testing::Message() << "batch " << s.batch << ", " << s.m << "x" << s.n << "x" << s.k);
        EXPECT_EQ(epilogue_mismatches(fn, type, out_type, activation, s), 0);
    }
}

}  // namespace tc_numbers

#endif
