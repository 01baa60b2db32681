// Runs both GEMMs on the OpenCL device and checks them against a double-precision reference.

#include "HalideBuffer.h"

#include "autoscheduled_gemm.h"
#include "pipelined_gemm.h"

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

}  // namespace

int main() {
    int wrong = 0;
    // Tails in every dimension, a reduction shorter than the pipeline, and the estimated shape.
    for (auto [M, N, K] : {std::tuple{64, 64, 64}, {37, 50, 100}, {16, 16, 5}, {256, 256, 256}}) {
        wrong += mismatches("pipelined_gemm", pipelined_gemm, M, N, K);
        wrong += mismatches("autoscheduled_gemm", autoscheduled_gemm, M, N, K);
    }
    std::printf(wrong ? "FAILED\n" : "PASSED\n");
    return wrong ? 1 : 0;
}
