#ifndef ALCOP_TEST_REFERENCE_H
#define ALCOP_TEST_REFERENCE_H

// The numerical tests' one notion of a correct output: within 1e-4 of a double-precision
// reference, relative to sum |terms| (the scale of an fp32 dot product's rounding error).
// NaN (the poison of an unwritten output) is never close.

#include "HalideBuffer.h"

#include <algorithm>
#include <cmath>
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

/** Elements of out(x, y[, z]) that are not close to sum_k a(k, y[, z]) * b(x, k[, z]), after
 * `epilogue` (e.g. a ReLU) is applied to the reference. 3-D buffers are a batch along z. */
template<typename Epilogue>
int matmul_mismatches(const Halide::Runtime::Buffer<float> &a, const Halide::Runtime::Buffer<float> &b,
                      const Halide::Runtime::Buffer<float> &out, Epilogue epilogue) {
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
                bad += !close(batched ? out(x, y, z) : out(x, y), epilogue(ref), scale);
            }
        }
    }
    return bad;
}

inline int matmul_mismatches(const Halide::Runtime::Buffer<float> &a, const Halide::Runtime::Buffer<float> &b,
                             const Halide::Runtime::Buffer<float> &out) {
    return matmul_mismatches(a, b, out, [](double r) { return r; });
}

}  // namespace reference

#endif
