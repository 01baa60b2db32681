// Runs the three GEMMs and the softmax on the OpenCL device and checks them against a double-precision
// reference.

#include "HalideBuffer.h"

#include "autoscheduled_gemm.h"
#include "autoscheduled_softmax.h"
#include "pipelined_gemm.h"
#include "tiled_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

using Halide::Runtime::Buffer;

namespace {

// Outputs that differ from the reference by more than a float sum of K products may.
int mismatches(const char *name, int (*gemm)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *), int M, int N,
               int K) {
    Buffer<float> A(K, M), B(N, K), out(N, M);
    std::mt19937 rng(M * 131 + N * 7 + K);
    std::uniform_real_distribution<float> u(-1, 1);
    A.for_each_value([&](float &v) { v = u(rng); });
    B.for_each_value([&](float &v) { v = u(rng); });
    A.set_host_dirty();  // written on the host: the pipeline copies them to the device
    B.set_host_dirty();
    if (gemm(A, B, out) != 0) {
        std::printf("%s %dx%dx%d: the pipeline failed\n", name, M, N, K);
        return M * N;
    }
    out.copy_to_host();
    int wrong = 0;
    for (int y = 0; y < M; y++) {
        for (int x = 0; x < N; x++) {
            double ref = 0;
            for (int k = 0; k < K; k++) ref += (double)A(k, y) * B(x, k);
            wrong += !(std::abs(out(x, y) - ref) <= 1e-5 * K);
        }
    }
    std::printf("%s %dx%dx%d: %d of %d outputs wrong\n", name, M, N, K, wrong, M * N);
    return wrong;
}

// Probabilities that differ from the reference by more than 1e-5 of themselves (plus 2^-24).
int softmax_mismatches(int n, int rows) {
    Buffer<float> in(n, rows), out(n, rows);
    std::mt19937 rng(n * 7 + rows);
    std::uniform_real_distribution<float> u(-20, 20);
    in.for_each_value([&](float &v) { v = u(rng); });
    in.set_host_dirty();
    if (autoscheduled_softmax(in, out) != 0) {
        std::printf("autoscheduled_softmax %dx%d: the pipeline failed\n", n, rows);
        return n * rows;
    }
    out.copy_to_host();
    int wrong = 0;
    for (int y = 0; y < rows; y++) {
        double top = -1e300, sum = 0;
        for (int x = 0; x < n; x++) top = std::max(top, (double)in(x, y));
        for (int x = 0; x < n; x++) sum += std::exp(in(x, y) - top);
        for (int x = 0; x < n; x++) {
            const double ref = std::exp(in(x, y) - top) / sum;
            wrong += !(std::abs(out(x, y) - ref) <= 1e-5 * ref + std::ldexp(1.0, -24));
        }
    }
    std::printf("autoscheduled_softmax %dx%d: %d of %d outputs wrong\n", n, rows, wrong, n * rows);
    return wrong;
}

}  // namespace

int main() {
    int wrong = 0;
    // Tails in every dimension, a reduction shorter than the pipeline, and the estimated shape.
    for (auto [M, N, K] : {std::tuple{64, 64, 64}, {37, 50, 100}, {16, 16, 5}, {256, 256, 256}}) {
        wrong += mismatches("pipelined_gemm", pipelined_gemm, M, N, K);
        wrong += mismatches("tiled_gemm", tiled_gemm, M, N, K);
        wrong += mismatches("autoscheduled_gemm", autoscheduled_gemm, M, N, K);
    }
    // Rows shorter than a warp, with a tail past one, a tail of a block of rows, as estimated.
    for (auto [n, rows] : {std::pair{7, 3}, {100, 9}, {128, 256}}) {
        wrong += softmax_mismatches(n, rows);
    }
    std::printf(wrong ? "FAILED\n" : "PASSED\n");
    return wrong ? 1 : 0;
}
