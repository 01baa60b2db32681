#ifndef ALCOP_TEST_EPILOGUE_NUMBERS_H
#define ALCOP_TEST_EPILOGUE_NUMBERS_H

// The numbers of a gemm or bmm variant with a fused epilogue and B in either layout
// (generators/MatMulGenerator.h), against a double-precision reference of the whole expression;
// the inputs as test/tensorcore's TensorCoreNumbers.h draws them. Variants are called through
// their `_argv` entry points, whose arguments follow the GeneratorParams: A, B[, bias][, residual], out.

#include "TensorCoreNumbers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tc_numbers {

using ArgvFn = int (*)(void **);

enum class Activation { None, ReLU, GELU };

/** What a variant computes: out = out_type(activation(A B + bias) + residual). */
struct Variant {
    ArgvFn fn;
    halide_type_t type, out_type;  // A's and B's; out's, bias's and residual's
    bool bias = false, residual = false, b_k_major = false;
    Activation activation = Activation::None;
};

/** Outputs of v at `s` (A(k, m[, b]), B(n, k[, b]) or with b_k_major B(k, n[, b]), bias(n),
 * residual(n, m[, b]), out(n, m[, b])) off the double-precision epilogue of the reference
 * product (or unwritten: out starts as NaNs); -1 when the pipeline fails. Close: the product's
 * accumulation bound (exact_products_bound; reference::close's 1e-4 for fp32 operands) through
 * the activation (ReLU 1-Lipschitz, GELU 1.13), the fp32 roundings of the epilogue's few
 * operations and the erf approximation (2^-20 of the terms), and half a unit in the last place
 * of out_type at the result (2^-11 of it for fp16, 2^-8 for bf16, 2^-24 for fp32; fp16's
 * subnormal step at least). A missing or misplaced bias or residual, or B read in the other
 * layout, is off by about their size. */
inline int epilogue_mismatches(const Variant &v, const MatMulShape &s) {
    std::mt19937 rng(s.m * 131 + s.n * 17 + s.k);
    std::vector<int> a_shape{s.k, s.m}, b_shape{s.n, s.k}, out_shape{s.n, s.m};
    if (v.b_k_major) b_shape = {s.k, s.n};
    if (s.batch) {
        a_shape.push_back(s.batch);
        b_shape.push_back(s.batch);
        out_shape.push_back(s.batch);
    }
    Halide::Runtime::Buffer<float> a_values, b_values, bias_values, residual_values;
    Halide::Runtime::Buffer<void> a = reference::random_operand(rng, a_shape, v.type, a_values);
    Halide::Runtime::Buffer<void> b = reference::random_operand(rng, b_shape, v.type, b_values);
    Halide::Runtime::Buffer<void> bias = reference::random_operand(rng, {s.n}, v.out_type, bias_values);
    Halide::Runtime::Buffer<void> residual = reference::random_operand(rng, out_shape, v.out_type, residual_values);
    const bool wide = v.out_type.bits == 32;
    Halide::Runtime::Buffer<void> out(v.out_type, out_shape);
    if (wide) {
        std::fill((float *)out.data(), (float *)out.data() + out.number_of_elements(), std::nanf(""));
    } else {
        const uint16_t nan = v.out_type.code == halide_type_bfloat ? 0x7fc0 : 0x7e00;
        std::fill((uint16_t *)out.data(), (uint16_t *)out.data() + out.number_of_elements(), nan);
    }
    out.set_host_dirty();
    std::vector<void *> args{a.raw_buffer(), b.raw_buffer()};
    if (v.bias) args.push_back(bias.raw_buffer());
    if (v.residual) args.push_back(residual.raw_buffer());
    args.push_back(out.raw_buffer());
    if (v.fn(args.data()) != 0) return -1;
    out.copy_to_host();
    const double half_ulp = std::ldexp(1.0, wide ? -24 : v.out_type.code == halide_type_bfloat ? -8 : -11);
    const double lipschitz = v.activation == Activation::GELU ? 1.13 : 1.0;
    const int batch = s.batch ? s.batch : 1;
    int bad = 0;
    for (int z = 0; z < batch; z++) {
        for (int y = 0; y < s.m; y++) {
            for (int x = 0; x < s.n; x++) {
                double p = 0, scale = 0;
                for (int i = 0; i < s.k; i++) {
                    const int bx = v.b_k_major ? i : x, bk = v.b_k_major ? x : i;
                    const double t = s.batch ? (double)a_values(i, y, z) * b_values(bx, bk, z) :
                                               (double)a_values(i, y) * b_values(bx, bk);
                    p += t;
                    scale += std::abs(t);
                }
                const double pre = p + (v.bias ? bias_values(x) : 0.0);
                const double act = v.activation == Activation::ReLU ? std::max(pre, 0.0) :
                                   v.activation == Activation::GELU ? 0.5 * pre * (1 + std::erf(pre * M_SQRT1_2)) :
                                                                      pre;
                const double r = !v.residual ? 0.0 : s.batch ? residual_values(x, y, z) : residual_values(x, y);
                const double ref = act + r;
                const double accumulation =
                    v.type.bits == 32 ? 1e-4 * scale : reference::exact_products_bound(s.k, scale);
                const double tolerance = lipschitz * accumulation +
                                         std::ldexp(1.0, -20) * (std::abs(pre) + std::abs(r) + 1) +
                                         std::max(half_ulp * std::abs(ref), std::ldexp(1.0, -25));
                const size_t at = x + (size_t)s.n * (y + (size_t)s.m * z);
                const float got = wide ? ((const float *)out.data())[at] :
                                         reference::value_of(((const uint16_t *)out.data())[at], v.out_type);
                bad += !(std::abs(got - ref) <= tolerance);
            }
        }
    }
    std::printf("batch %d, %dx%dx%d: %d of %d outputs off\n", s.batch, s.m, s.n, s.k, bad,
                (int)out.number_of_elements());
    return bad;
}

inline void check_epilogue(const Variant &v, const std::vector<MatMulShape> &shapes) {
    for (const MatMulShape &s : shapes) {
        SCOPED_TRACE(::testing::Message() << "batch " << s.batch << ", " << s.m << "x" << s.n << "x" << s.k);
        EXPECT_EQ(epilogue_mismatches(v, s), 0);
    }
}

}  // namespace tc_numbers

#endif
