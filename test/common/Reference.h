#ifndef ALCOP_TEST_REFERENCE_H
#define ALCOP_TEST_REFERENCE_H

// The numerical tests' one notion of a correct output: within 1e-4 of a double-precision
// reference, relative to sum |terms| (the scale of an fp32 dot product's rounding error); for
// sums of fp16 or bf16 products (tensor cores), within the bound of fp32 rounding that K such
// products can reach (exact_products_bound). NaN (the poison of an unwritten output) is never
// close.

#include "HalideBuffer.h"
#include "SixteenBitFloats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace reference {

/** Fills b with values uniform in [-1, 1) drawn from rng. for_each_value writes through raw
 * pointers, so the host copy is then marked as the newer one. */
inline void fill_random(Halide::Runtime::Buffer<float> &b, std::mt19937 &rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    b.for_each_value([&](float &v) { v = dist(rng); });
    b.set_host_dirty();
}

using alcop::apps::bits_of;  // fp16 / bf16 bits and values (apps/common/SixteenBitFloats.h)
using alcop::apps::rounded;
using alcop::apps::value_of;

/** Random values rounded to `type` in fp32 (`values`, for the reference) and a buffer of `type`
 * holding them (for the pipeline). */
inline Halide::Runtime::Buffer<void> random_operand(std::mt19937 &rng, const std::vector<int> &shape,
                                                    halide_type_t type, Halide::Runtime::Buffer<float> &values) {
    values = Halide::Runtime::Buffer<float>(shape);
    fill_random(values, rng);
    values.for_each_value([&](float &v) { v = rounded(v, type); });
    if (type.bits == 32) return values;
    Halide::Runtime::Buffer<void> b(type, shape);
    const float *from = values.data();
    uint16_t *to = (uint16_t *)b.data();
    for (size_t i = 0; i < values.number_of_elements(); i++) to[i] = bits_of(from[i], type);
    b.set_host_dirty();
    return b;
}

/** An output of these sizes full of NaN, so that an element the pipeline does not write is
 * never close to its reference. */
inline Halide::Runtime::Buffer<float> poisoned(const std::vector<int> &sizes) {
    Halide::Runtime::Buffer<float> out(sizes);
    out.fill(std::nanf(""));
    out.set_host_dirty();
    return out;
}

inline bool close(float got, double ref, double scale) {
    return std::abs(got - ref) <= 1e-4 * std::max(scale, 1e-6);
}

/** The largest error of an fp32 sum of k terms that are exact in fp32, whatever the order of
 * the additions: the products of fp16 or bf16 values (at most 22 significant bits) that tensor
 * cores (and their emulation, test/support/EmulatedTensorCores.h) accumulate in fp32. Rounding
 * at each of the k additions, |error| <= gamma_k * sum |terms| with gamma_k = k u / (1 - k u),
 * u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, 3.1); times 1.01. It grows
 * linearly with k; a wrong element in a product is off by about |a b|, far above it. This is the
 * bound of the emulation, which rounds each fp32 addition to nearest; hardware mma.sync aligns
 * and truncates its sums (Fasi et al. 2021), up to 2.5 k u, which the benchmark's check on a GPU
 * applies (apps/bench/bench.cpp, accumulation_tolerance). The tests run the emulation: the tighter
 * bound is the right one for them. */
inline double exact_products_bound(int k, double scale) {
    const double u = std::ldexp(1.0, -24), gamma = k * u / (1 - k * u);
    return 1.01 * gamma * scale;
}

inline bool close_exact_products(float got, double ref, double scale, int k) {
    return std::abs(got - ref) <= exact_products_bound(k, scale);
}

/** Elements of out(x, y[, z]) that are not close to sum_k a(k, y[, z]) * b(x, k[, z]), after
 * `epilogue` (e.g. a ReLU) is applied to the reference. 3-D buffers are a batch along z. With
 * exact_products (a and b hold fp16 or bf16 values), close is close_exact_products. */
template<typename Epilogue>
int matmul_mismatches(const Halide::Runtime::Buffer<float> &a, const Halide::Runtime::Buffer<float> &b,
                      const Halide::Runtime::Buffer<float> &out, Epilogue epilogue, bool exact_products = false) {
    const bool batched = out.dimensions() == 3;
    const int batch = batched ? out.dim(2).extent() : 1, m = out.dim(1).extent(), n = out.dim(0).extent(),
              k = a.dim(0).extent();
    int bad = 0;
    for (int z = 0; z < batch; z++) {
        for (int y = 0; y < m; y++) {
            for (int x = 0; x < n; x++) {
                double ref = 0, scale = 0;
                for (int i = 0; i < k; i++) {
                    const double t = batched ? (double)a(i, y, z) * b(x, i, z) : (double)a(i, y) * b(x, i);
                    ref += t;
                    scale += std::abs(t);
                }
                const float got = batched ? out(x, y, z) : out(x, y);
                bad += exact_products ? !close_exact_products(got, epilogue(ref), scale, k) :
                                        !close(got, epilogue(ref), scale);
            }
        }
    }
    return bad;
}

inline int matmul_mismatches(const Halide::Runtime::Buffer<float> &a, const Halide::Runtime::Buffer<float> &b,
                             const Halide::Runtime::Buffer<float> &out, bool exact_products = false) {
    return matmul_mismatches(
        a, b, out, [](double r) { return r; }, exact_products);
}

/** Output channel co at output pixel (ox, oy) of image n of the convolution of `input` (ci, x,
 * y, n) by `filter` (co, ci, kx, ky), with `stride` and zero padding `pad`, in double; `scale`
 * gets sum |products|, the scale close() wants. */
inline double conv2d_at(const Halide::Runtime::Buffer<float> &input, const Halide::Runtime::Buffer<float> &filter,
                        int stride, int pad, int co, int ox, int oy, int n, double *scale) {
    double sum = 0;
    *scale = 0;
    for (int ky = 0; ky < filter.dim(3).extent(); ky++) {
        for (int kx = 0; kx < filter.dim(2).extent(); kx++) {
            const int ix = ox * stride + kx - pad, iy = oy * stride + ky - pad;
            if (ix < 0 || ix >= input.dim(1).extent() || iy < 0 || iy >= input.dim(2).extent()) continue;
            for (int ci = 0; ci < input.dim(0).extent(); ci++) {
                const double t = (double)input(ci, ix, iy, n) * filter(co, ci, kx, ky);
                sum += t;
                *scale += std::abs(t);
            }
        }
    }
    return sum;
}

/** Elements of `out` (co, pixel), pixel = ox + OW (oy + OH n), that are not close to the
 * convolution of `input` by `filter` with `stride` and `pad` (conv2d_at): wrong or unwritten. */
inline int conv2d_mismatches(const Halide::Runtime::Buffer<float> &input, const Halide::Runtime::Buffer<float> &filter,
                             const Halide::Runtime::Buffer<float> &out, int stride, int pad) {
    const int ow = (input.dim(1).extent() + 2 * pad - filter.dim(2).extent()) / stride + 1;
    const int oh = (input.dim(2).extent() + 2 * pad - filter.dim(3).extent()) / stride + 1;
    int bad = 0;
    for (int n = 0; n < input.dim(3).extent(); n++) {
        for (int oy = 0; oy < oh; oy++) {
            for (int ox = 0; ox < ow; ox++) {
                for (int co = 0; co < filter.dim(0).extent(); co++) {
                    double scale = 0;
                    const double ref = conv2d_at(input, filter, stride, pad, co, ox, oy, n, &scale);
                    bad += !close(out(co, ox + ow * (oy + oh * n)), ref, scale);
                }
            }
        }
    }
    return bad;
}

}  // namespace reference

#endif
