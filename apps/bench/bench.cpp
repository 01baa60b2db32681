// alcop_bench_{opencl,cuda}: GEMM, batched matmul (attention shapes) and conv2d (ResNet-50
// layers), unpipelined (stages 1) and pipelined by ALCOP (stages 3), side by side in one run.
// Each variant is checked against a double-precision reference (on sampled outputs for large
// problems) and timed: median of `runs` runs after a warm-up, each ended by a device sync.
// Next to each time, the model's prediction for the modelled GPU (H200 by default), so that
// the model can be validated where a GPU is lent.
//
//   alcop_bench_cuda   [--size tiny|small|large] [--runs N]   (a GPU; the GPU check runs it)
//   alcop_bench_opencl [--size tiny|small|large] [--runs N]   (pocl on the CPU: emulation)

#include "HalideBuffer.h"
#include "HalideRuntime.h"

#include "model/CostModel.h"
#include "model/GpuSpec.h"

#ifdef ALCOP_BENCH_CUDA
#include "bmm_cuda_s1.h"
#include "bmm_cuda_s3.h"
#include "conv_cuda_s1.h"
#include "conv_cuda_s3.h"
#include "gemm_cuda_s1.h"
#include "gemm_cuda_s3.h"
#define VARIANT(op, s) op##_cuda_s##s
static const char *const device_name = "CUDA";
#else
#include "bmm_s1.h"
#include "bmm_s3.h"
#include "conv_s1.h"
#include "conv_s3.h"
#include "gemm_s1.h"
#include "gemm_s3.h"
#define VARIANT(op, s) op##_s##s
static const char *const device_name = "OpenCL (on a machine without a GPU: pocl on the CPU, so CPU emulation)";
#endif

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using Halide::Runtime::Buffer;
using Fn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct Problem {
    std::string name;
    int batch, m, n, k;             // as a (batched) GEMM; for conv, M = pixels, N = CO, K = taps * CI
    int conv_h = 0, conv_w = 0, conv_ci = 0, conv_kh = 0;  // conv only (stride 1, pad 1, square filter)
};

Buffer<float> random_buffer(std::vector<int> shape, std::mt19937 &rng) {
    Buffer<float> b(shape);
    std::uniform_real_distribution<float> dist(-1, 1);
    b.for_each_value([&](float &v) { v = dist(rng); });
    b.set_host_dirty();
    return b;
}

struct Operands {
    Buffer<float> a, b, out;
    std::function<double(int, int, int, double *)> reference;  // (x, y, z) -> value, |terms|
    std::function<float(int, int, int)> got;
    int nx, ny, nz;
};

Operands make_operands(const Problem &p, std::mt19937 &rng) {
    Operands o;
    if (p.conv_kh) {
        const int pad = p.conv_kh / 2, oh = p.conv_h, ow = p.conv_w;
        o.a = random_buffer({p.conv_ci, p.conv_w, p.conv_h, p.batch}, rng);
        o.b = random_buffer({p.n, p.conv_ci, p.conv_kh, p.conv_kh}, rng);
        o.out = Buffer<float>(p.n, ow * oh * p.batch);
        o.nx = p.n, o.ny = ow * oh * p.batch, o.nz = 1;
        o.reference = [=](int co, int px, int, double *scale) {
            const int ox = px % ow, oy = (px / ow) % oh, n = px / (ow * oh);
            double r = 0;
            for (int ky = 0; ky < p.conv_kh; ky++) {
                for (int kx = 0; kx < p.conv_kh; kx++) {
                    const int ix = ox + kx - pad, iy = oy + ky - pad;
                    if (ix < 0 || iy < 0 || ix >= p.conv_w || iy >= p.conv_h) continue;
                    for (int ci = 0; ci < p.conv_ci; ci++) {
                        const double t = (double)o.a(ci, ix, iy, n) * o.b(co, ci, kx, ky);
                        r += t;
                        *scale += std::abs(t);
                    }
                }
            }
            return r;
        };
        o.got = [=](int co, int px, int) { return o.out(co, px); };
    } else if (p.batch > 1) {
        o.a = random_buffer({p.k, p.m, p.batch}, rng);
        o.b = random_buffer({p.n, p.k, p.batch}, rng);
        o.out = Buffer<float>(p.n, p.m, p.batch);
        o.nx = p.n, o.ny = p.m, o.nz = p.batch;
        o.reference = [=](int x, int y, int z, double *scale) {
            double r = 0;
            for (int i = 0; i < p.k; i++) {
                const double t = (double)o.a(i, y, z) * o.b(x, i, z);
                r += t;
                *scale += std::abs(t);
            }
            return r;
        };
        o.got = [=](int x, int y, int z) { return o.out(x, y, z); };
    } else {
        o.a = random_buffer({p.k, p.m}, rng);
        o.b = random_buffer({p.n, p.k}, rng);
        o.out = Buffer<float>(p.n, p.m);
        o.nx = p.n, o.ny = p.m, o.nz = 1;
        o.reference = [=](int x, int y, int, double *scale) {
            double r = 0;
            for (int i = 0; i < p.k; i++) {
                const double t = (double)o.a(i, y) * o.b(x, i);
                r += t;
                *scale += std::abs(t);
            }
            return r;
        };
        o.got = [=](int x, int y, int) { return o.out(x, y); };
    }
    return o;
}

// Wrong outputs among (at most) 2000 sampled ones; NaN-poisoned outputs count when unwritten.
int wrong_outputs(Operands &o, std::mt19937 &rng) {
    o.out.copy_to_host();
    const long total = (long)o.nx * o.ny * o.nz;
    const int samples = (int)std::min<long>(total, 2000);
    int wrong = 0;
    for (int i = 0; i < samples; i++) {
        const long e = samples == total ? i : (long)(rng() % total);
        const int x = e % o.nx, y = (e / o.nx) % o.ny, z = e / ((long)o.nx * o.ny);
        double scale = 1e-6;
        const double ref = o.reference(x, y, z, &scale);
        wrong += !(std::abs(o.got(x, y, z) - ref) <= 1e-4 * scale);
    }
    return wrong;
}

double median_ms(Fn fn, Operands &o, int runs) {
    fn(o.a, o.b, o.out);  // warm-up (compiles the kernel)
    o.out.device_sync();
    std::vector<double> ms;
    for (int i = 0; i < runs; i++) {
        const auto t0 = std::chrono::steady_clock::now();
        fn(o.a, o.b, o.out);
        o.out.device_sync();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// The generators' default tiles: 64 x 64 blocks, 4 x 4 per thread, tile_k 8.
double predicted_us(const Problem &p, int stages) {
    using namespace alcop::model;
    alcop::model::Problem mp = make_bmm(p.batch > 1 && !p.conv_kh ? p.batch : 1, p.m, p.n, p.k);
    Schedule s;
    s.bm = 64, s.bn = 64, s.kt = 8, s.tm = 4, s.tn = 4, s.smem_stages = stages, s.reg_stages = 1;
    Prediction pr = predict(mp, s, default_gpu());
    return pr.feasible ? pr.total_us : NAN;
}

}  // namespace

int main(int argc, char **argv) {
    std::string size = "small";
    int runs = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--size")) size = argv[i + 1];
        if (!strcmp(argv[i], "--runs")) runs = std::max(1, atoi(argv[i + 1]));
    }
    // Shapes: GEMM; attention QK^T and PV (batch 12, as in ALCOP's evaluation); ResNet-50
    // 3x3 convolutions (batch 1 for the small sizes). "tiny" is for sanitizers.
    std::vector<Problem> problems;
    if (size == "large") {
        problems = {{"gemm 2048^3", 1, 2048, 2048, 2048},
                    {"bmm 12x512x512x64", 12, 512, 512, 64},
                    {"bmm 12x512x64x512", 12, 512, 64, 512},
                    {"conv 56x56x64->64 3x3 (N=8)", 8, 56 * 56 * 8, 64, 9 * 64, 56, 56, 64, 3},
                    {"conv 14x14x256->256 3x3 (N=8)", 8, 14 * 14 * 8, 256, 9 * 256, 14, 14, 256, 3}};
    } else if (size == "small") {
        problems = {{"gemm 256^3", 1, 256, 256, 256},
                    {"bmm 4x128x128x64", 4, 128, 128, 64},
                    {"conv 14x14x64->64 3x3", 1, 14 * 14, 64, 9 * 64, 14, 14, 64, 3}};
    } else {
        problems = {{"gemm 64x64x32", 1, 64, 64, 32}, {"conv 6x6x8->16 3x3", 1, 36, 16, 72, 6, 6, 8, 3}};
    }

#ifdef ALCOP_BENCH_CUDA
    // Halide's CUDA runtime loads the driver when first used and aborts through the Buffer
    // helpers when it is missing: say so plainly instead.
    if (!dlopen("libcuda.so.1", RTLD_LAZY) && !dlopen("libcuda.so", RTLD_LAZY)) {
        fprintf(stderr, "alcop_bench_cuda: no CUDA driver (libcuda.so) on this machine\n");
        return 2;
    }
#endif
    printf("device: %s; %d timed runs each (median, after a warm-up)\n", device_name, runs);
    printf("%-32s %-9s %10s %10s %8s %14s %7s\n", "problem", "variant", "ms", "GFLOP/s", "speedup", "model us(H200)",
           "check");
    bool all_correct = true;
    std::mt19937 rng(1);
    for (const Problem &p : problems) {
        Operands o = make_operands(p, rng);
        Fn plain, pipelined;
        if (p.conv_kh) {
            plain = VARIANT(conv, 1), pipelined = VARIANT(conv, 3);
        } else if (p.batch > 1) {
            plain = VARIANT(bmm, 1), pipelined = VARIANT(bmm, 3);
        } else {
            plain = VARIANT(gemm, 1), pipelined = VARIANT(gemm, 3);
        }
        const double flops = 2.0 * p.m * p.n * p.k * (p.conv_kh ? 1 : p.batch);
        double base_ms = 0;
        for (int stages : {1, 3}) {
            Fn fn = stages == 1 ? plain : pipelined;
            o.out.set_device_dirty(false);  // poison the output again, from the host
            o.out.fill(NAN);
            o.out.set_host_dirty();
            if (fn(o.a, o.b, o.out) != 0) {
                printf("%-32s stages=%d: the pipeline returned an error (no device?)\n", p.name.c_str(), stages);
                return 2;
            }
            const int wrong = wrong_outputs(o, rng);
            const double ms = median_ms(fn, o, runs);
            if (stages == 1) base_ms = ms;
            printf("%-32s %-9s %10.3f %10.1f %7.2fx %14.1f %7s\n", p.name.c_str(), stages == 1 ? "stages 1" : "ALCOP s3",
                   ms, flops / ms * 1e-6, base_ms / ms, predicted_us(p, stages), wrong ? "WRONG" : "ok");
            all_correct = all_correct && !wrong;
        }
    }
    return all_correct ? 0 : 1;
}
