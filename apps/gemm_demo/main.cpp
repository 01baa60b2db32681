// The GEMM demo: the same fp32 GEMM unpipelined (stages = 1) and pipelined by ALCOP
// (stages = 3), AOT-compiled for OpenCL and run on the best OpenCL device present (on a
// machine without a GPU, pocl runs it on the CPU). Prints correctness against a
// double-precision reference and the time of each variant.
//
//   gemm_demo [M N K] [runs]

#include "HalideBuffer.h"
#include "HalideRuntime.h"

#include "gemm_s1.h"
#include "gemm_s3.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using Halide::Runtime::Buffer;
using MatMulFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

namespace {

// Largest error relative to sum_k |a*b|, the scale of an fp32 dot product's rounding error.
double max_relative_error(const Buffer<float> &a, const Buffer<float> &b, const Buffer<float> &out) {
    double worst = 0;
    for (int y = 0; y < out.dim(1).extent(); y++) {
        for (int x = 0; x < out.dim(0).extent(); x++) {
            double ref = 0, scale = 1e-30;
            for (int k = 0; k < a.dim(0).extent(); k++) {
                ref += (double)a(k, y) * b(x, k);
                scale += std::abs((double)a(k, y) * b(x, k));
            }
            double err = std::abs(out(x, y) - ref) / scale;
            worst = std::max(worst, std::isfinite(out(x, y)) ? err : INFINITY);
        }
    }
    return worst;
}

double median_ms(MatMulFn fn, Buffer<float> &a, Buffer<float> &b, Buffer<float> &out, int runs) {
    std::vector<double> ms;
    for (int i = 0; i < runs; i++) {
        auto t0 = std::chrono::steady_clock::now();
        fn(a, b, out);
        out.device_sync();
        auto t1 = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    const int M = argc > 3 ? atoi(argv[1]) : 256, N = argc > 3 ? atoi(argv[2]) : 256,
              K = argc > 3 ? atoi(argv[3]) : 256;
    const int runs = argc > 4 ? atoi(argv[4]) : 5;
    Buffer<float> a(K, M), b(N, K);
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> dist(-1, 1);
    a.for_each_value([&](float &v) { v = dist(rng); });
    b.for_each_value([&](float &v) { v = dist(rng); });
    a.set_host_dirty();
    b.set_host_dirty();

    const struct {
        const char *name;
        MatMulFn fn;
    } variants[] = {{"unpipelined (stages 1)", gemm_s1}, {"ALCOP      (stages 3)", gemm_s3}};

    printf("GEMM %d x %d x %d (fp32) through OpenCL; on a machine without a GPU this is pocl on the CPU,\n"
           "so the times below are CPU emulation, not GPU performance.\n",
           M, N, K);
    bool ok = true;
    for (const auto &v : variants) {
        Buffer<float> out(N, M);
        out.fill(NAN);
        out.set_host_dirty();
        if (v.fn(a, b, out) != 0) {
            printf("%s: the pipeline returned an error\n", v.name);
            return 1;
        }
        out.copy_to_host();
        const double err = max_relative_error(a, b, out);
        const double ms = median_ms(v.fn, a, b, out, runs);
        printf("  %s: max relative error %.2e (%s), median of %d runs %.2f ms\n", v.name, err,
               err < 1e-4 ? "correct" : "WRONG", runs, ms);
        ok = ok && err < 1e-4;
    }
    return ok ? 0 : 1;
}
