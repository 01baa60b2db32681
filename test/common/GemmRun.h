#ifndef ALCOP_TEST_GEMM_RUN_H
#define ALCOP_TEST_GEMM_RUN_H

// Runs an AOT-compiled gemm (out(n, m) = sum_k A(k, m) * B(n, k)), or a batch of them, on
// seeded random inputs with a NaN-poisoned output, and counts the outputs that are unwritten
// or off the double-precision reference.

#include "HalideBuffer.h"
#include "Reference.h"

namespace reference {

using GemmFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

/** Mismatches of `fn` on an m x k times k x n product (`batch` of them in 3-D buffers when
 * batch > 0); -1 if the pipeline returns an error. */
inline int gemm_mismatches(GemmFn fn, int m, int n, int k, int batch = 0) {
    std::mt19937 rng(m * 131 + n * 17 + k);
    auto sizes = [&](int columns, int rows) {
        return batch ? std::vector<int>{columns, rows, batch} : std::vector<int>{columns, rows};
    };
    Halide::Runtime::Buffer<float> a(sizes(k, m)), b(sizes(n, k)), out = poisoned(sizes(n, m));
    fill_random(a, rng);
    fill_random(b, rng);
    if (fn(a, b, out) != 0) return -1;
    out.copy_to_host();
    return matmul_mismatches(a, b, out);
}

}  // namespace reference

#endif
