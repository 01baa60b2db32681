// alcop_bench_{opencl,cuda}: GEMM, batched matmul (attention shapes) and conv2d (ResNet-50
// layers), side by side in one run in three variants: unpipelined (stages 1), pipelined by ALCOP
// with the generators' hand-written schedule (stages 3), and the plainly written contraction
// scheduled by the Alcop autoscheduler ("ALCOP auto", tuned for the first shape of each op of
// the sizes the build runs: small for OpenCL, large for CUDA), and for GEMM the same
// contraction scheduled by Halide 14's Li2018 autoscheduler. The CUDA build adds cuBLAS (GEMM,
// batched GEMM) and cuDNN (conv) as anchors where it finds them. Each row is checked against a
// double-precision reference (on sampled outputs for large problems) and timed: median of `runs`
// runs after a warm-up, each ended by a device sync. Next to the pipelined variants' times, the
// model's prediction for the modelled GPU (H200 by default): for the hand-written variants from
// their tiles, for the autoscheduled ones (CUDA, at the shape each was tuned for) what the plugin
// predicted when it built them, so that the model can be validated where a GPU is lent.
// The CUDA build adds fp16 and bf16 rows (GEMM 2048^3 and 4096^3, the batched matmuls and
// convolutions): the generators' tensor-core schedule (type=f16|bf16, default tiles) at stages 1
// ("TC s1") and pipelined with the same tiles ("TC s3"; GEMM also "TC s4", 64 KB of shared
// memory through the opt-in) and the plainly written contraction scheduled by the Alcop
// autoscheduler on tensor cores ("ALCOP auto", at the large shapes its builds are estimated at:
// GEMM 2048^3, the first batched matmul, both convolutions), fp32 accumulation and output, against
// cuBLAS (cublasGemmEx, cublasGemmStridedBatchedEx: fp16/bf16 in, fp32 compute and out) and
// cuDNN (fp16/bf16 in and out, fp32 compute, tensor-op math). Their operands are multiples of
// 1/256 in [-1, 1], exact in fp16 and bf16, so that the reference sees what the kernels see.
//
//   alcop_bench_cuda   [--size tiny|small|large] [--runs N] [--only VARIANTS] [--faults]
//   alcop_bench_opencl [--size tiny|small|large] [--runs N] [--only VARIANTS]
//
// --only runs the rows of the variants named (comma-separated, e.g. "ALCOP s3,ALCOP deep" under a
// sanitizer). --faults (CUDA) runs, instead of the table, GEMM pipelines broken on purpose, whose
// copies really are asynchronous on a GPU: each must be caught (wrong outputs), and the exit
// status says whether all were.

#include "HalideBuffer.h"
#include "HalideRuntime.h"

#include "model/CostModel.h"
#include "model/GpuSpec.h"

#ifdef ALCOP_BENCH_CUDA
#include "CudaOptInRecording.h"
#include "alcop/CudaOptIn.h"
#include "autoscheduled_predictions.h"
#include "bmm_cuda_auto.h"
#include "bmm_cuda_auto_bf16.h"
#include "bmm_cuda_auto_f16.h"
#include "bmm_cuda_auto_pv.h"
#include "bmm_cuda_li2018.h"
#include "bmm_cuda_s1.h"
#include "bmm_cuda_s3.h"
#include "conv_cuda_auto.h"
#include "conv_cuda_auto_14.h"
#include "conv_cuda_auto_14_bf16.h"
#include "conv_cuda_auto_14_f16.h"
#include "conv_cuda_auto_bf16.h"
#include "conv_cuda_auto_f16.h"
#include "conv_cuda_li2018.h"
#include "conv_cuda_s1.h"
#include "conv_cuda_s3.h"
#include "gemm_cuda_auto.h"
#include "gemm_cuda_auto_bf16.h"
#include "gemm_cuda_auto_f16.h"
#include "gemm_cuda_auto_k2047.h"
#include "gemm_cuda_auto_c1.h"
#include "gemm_cuda_auto_c2.h"
#include "gemm_cuda_auto_c3.h"
#include "gemm_cuda_deep.h"
#include "gemm_cuda_fault_drop_barrier.h"
#include "gemm_cuda_fault_drop_wait.h"
#include "gemm_cuda_fault_missing_war_barrier.h"
#include "gemm_cuda_fault_wait_one_group_short.h"
#include "gemm_cuda_li2018.h"
#include "gemm_cuda_s1.h"
#include "gemm_cuda_s3.h"
#include "tc_bmm_cuda_bf16_s1.h"
#include "tc_bmm_cuda_bf16_s3.h"
#include "tc_bmm_cuda_f16_s1.h"
#include "tc_bmm_cuda_f16_s3.h"
#include "tc_conv_cuda_bf16_s1.h"
#include "tc_conv_cuda_bf16_s3.h"
#include "tc_conv_cuda_f16_s1.h"
#include "tc_conv_cuda_f16_s3.h"
#include "tc_gemm_cuda_bf16_s1.h"
#include "tc_gemm_cuda_bf16_s3.h"
#include "tc_gemm_cuda_bf16_s4.h"
#include "tc_gemm_cuda_f16_s1.h"
#include "tc_gemm_cuda_f16_s3.h"
#include "tc_gemm_cuda_f16_s4.h"
#define VARIANT(op, s) op##_cuda_##s
static const char *const device_name = "CUDA";
static const char *const tuned_names[] = {"auto #1", "auto #2", "auto #3"};
#else
#include "bmm_auto.h"
#include "bmm_li2018.h"
#include "bmm_s1.h"
#include "bmm_s3.h"
#include "conv_auto.h"
#include "conv_li2018.h"
#include "conv_s1.h"
#include "conv_s3.h"
#include "gemm_auto.h"
#include "gemm_li2018.h"
#include "gemm_s1.h"
#include "gemm_s3.h"
#define VARIANT(op, s) op##_##s
static const char *const device_name = "OpenCL (on a machine without a GPU: pocl on the CPU, so CPU emulation)";
#endif

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using Halide::Runtime::Buffer;
using Fn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

// The operands' element type; the output and the accumulation are fp32 in each case.
enum class Element { F32, F16, BF16 };

struct Problem {
    std::string name;
    int batch, m, n, k;  // as a (batched) GEMM; for conv, M = pixels, N = CO, K = taps * CI
    int conv_h = 0, conv_w = 0, conv_ci = 0, conv_kh = 0;  // conv only (stride 1, pad 1, square filter)
    bool tuned = false;  // the shape the CUDA build's autoscheduled variants were tuned for
    Element element = Element::F32;
};

/** The problem with fp16 or bf16 operands. */
Problem with_element(Problem p, Element e) {
    p.name += e == Element::F16 ? " f16" : " bf16";
    p.element = e;
    return p;
}

// The bits of a value that fp16 or bf16 holds exactly (a multiple of 1/256 in [-1, 1]: at most 8
// significant bits, normal in both), and the value of fp16 or bf16 bits.
uint16_t bits_of(float v, Element e) {
    uint32_t x;
    memcpy(&x, &v, sizeof x);
    if (e == Element::BF16) return (uint16_t)(x >> 16);
    if (v == 0) return (uint16_t)((x >> 16) & 0x8000);
    const uint32_t sign = (x >> 16) & 0x8000, exponent = ((x >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (exponent << 10) | ((x & 0x7fffff) >> 13));
}

float value_of(uint16_t h, Element e) {
    if (e == Element::BF16) {
        const uint32_t x = (uint32_t)h << 16;
        float v;
        memcpy(&v, &x, sizeof v);
        return v;
    }
    const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    const float magnitude = exponent == 0  ? std::ldexp((float)mantissa, -24) :
                            exponent == 31 ? (mantissa ? NAN : INFINITY) :
                                             std::ldexp((float)(mantissa | 0x400), exponent - 25);
    return h & 0x8000 ? -magnitude : magnitude;
}

Buffer<float> random_buffer(std::vector<int> shape, std::mt19937 &rng, Element e = Element::F32) {
    Buffer<float> b(shape);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::uniform_int_distribution<int> steps(-256, 256);
    b.for_each_value([&](float &v) { v = e == Element::F32 ? dist(rng) : steps(rng) / 256.0f; });
    b.set_host_dirty();
    return b;
}

/** The fp16 or bf16 copy of `values` (which that type holds exactly), as a pipeline takes it. */
Buffer<> narrowed(const Buffer<float> &values, Element e) {
    const halide_type_t type(e == Element::BF16 ? halide_type_bfloat : halide_type_float, 16);
    std::vector<int> shape;
    for (int d = 0; d < values.dimensions(); d++) shape.push_back(values.dim(d).extent());
    Buffer<> b(type, shape);
    const float *src = values.data();
    uint16_t *dst = (uint16_t *)b.data();
    for (size_t i = 0; i < values.number_of_elements(); i++) dst[i] = bits_of(src[i], e);
    b.set_host_dirty();
    return b;
}

// Every output layout here (the generators', the autoscheduled ones', cuBLAS's row-major C and
// cuDNN's NHWC) is dense with x (N, or CO) innermost, so an output is read by its flat index.
struct Operands {
    Buffer<float> a, b, out;
    Buffer<> a_narrow, b_narrow;  // fp16 / bf16 problems: a and b as the pipelines take them
    // conv only: the input zero-padded and the (co, x, y, n) output of the autoscheduled
    // as_conv2d, a valid convolution (the input is padded once, outside the timed runs); for
    // fp16 / bf16 problems also the padded input as the pipelines take it.
    Buffer<float> a_padded, out_4d;
    Buffer<> a_padded_narrow;
    std::function<double(int, int, int, double *)> reference;  // (x, y, z) -> value, |terms|
    int nx, ny, nz;
};

Operands make_operands(const Problem &p, std::mt19937 &rng) {
    Operands o;
    if (p.conv_kh) {
        const int pad = p.conv_kh / 2, oh = p.conv_h, ow = p.conv_w;
        o.a = random_buffer({p.conv_ci, p.conv_w, p.conv_h, p.batch}, rng, p.element);
        o.b = random_buffer({p.n, p.conv_ci, p.conv_kh, p.conv_kh}, rng, p.element);
        o.out = Buffer<float>(p.n, ow * oh * p.batch);
        o.a_padded = Buffer<float>(p.conv_ci, p.conv_w + 2 * pad, p.conv_h + 2 * pad, p.batch);
        o.a_padded.fill(0.0f);
        o.a.for_each_element([&](int c, int x, int y, int n) { o.a_padded(c, x + pad, y + pad, n) = o.a(c, x, y, n); });
        o.a_padded.set_host_dirty();
        o.out_4d = Buffer<float>(p.n, ow, oh, p.batch);
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
    } else if (p.batch > 1) {
        o.a = random_buffer({p.k, p.m, p.batch}, rng, p.element);
        o.b = random_buffer({p.n, p.k, p.batch}, rng, p.element);
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
    } else {
        o.a = random_buffer({p.k, p.m}, rng, p.element);
        o.b = random_buffer({p.n, p.k}, rng, p.element);
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
    }
    if (p.element != Element::F32) {
        o.a_narrow = narrowed(o.a, p.element);
        o.b_narrow = narrowed(o.b, p.element);
        if (p.conv_kh) o.a_padded_narrow = narrowed(o.a_padded, p.element);
    }
    return o;
}

// Wrong outputs among (at most) 2000 sampled ones; NaN-poisoned outputs count when unwritten.
// `tolerance` is relative to the sum of the terms' magnitudes.
int wrong_outputs(const Operands &o, const float *got, std::mt19937 &rng, double tolerance) {
    const long total = (long)o.nx * o.ny * o.nz;
    const int samples = (int)std::min<long>(total, 2000);
    int wrong = 0;
    for (int i = 0; i < samples; i++) {
        const long e = samples == total ? i : (long)(rng() % total);
        const int x = e % o.nx, y = (e / o.nx) % o.ny, z = e / ((long)o.nx * o.ny);
        double scale = 1e-6;
        const double ref = o.reference(x, y, z, &scale);
        wrong += !(std::abs(got[e] - ref) <= tolerance * scale);
    }
    return wrong;
}

// One row of the table: a Halide variant or a library anchor. The Halide variants use the
// Operands' buffers through pointers: a copy of a Buffer keeps dirty bits of its own.
struct Variant {
    std::string name;
    int stages = 0;                         // shared stages; 0: not one of our hand schedules
    alcop::model::Schedule schedule;        // its tiles, for the model's prediction
    std::function<int()> run;               // one run, asynchronous
    std::function<void()> sync;             // waits for it
    std::function<void()> poison;           // NaN into the output, so that unwritten outputs count
    std::function<const float *()> result;  // the output, on the host
    bool broken = false;                    // a fault: correct when it is caught (wrong outputs)
    double predicted_us = NAN;              // an autoscheduled variant: what the plugin predicted
    bool ours = true;                       // false for the libraries and Li2018: a run they
                                            // cannot make (status) is theirs to report, not a failure
    bool modelled = true;                   // the model predicts its time from `schedule` (SIMT tiles)
    double output_rounding = 0;             // relative error of an output rounded to fp16 / bf16
};

// What fp32 accumulation may lose, relative to the sum of the terms' magnitudes: 1e-4 as for
// fp32 operands, or for fp16 / bf16 operands the bound of hardware mma.sync. Its products are
// exact, but its sums are not fp32 additions rounded to nearest (the emulation's, whose bound the
// tests use: reference::exact_products_bound): Fasi, Higham, Mikaitis and Pranesh (Numerical
// behavior of NVIDIA tensor cores, PeerJ CS 2021) measured on V100, T4 and A100 that a block of
// b products (4 on V100, 8 on A100) and the accumulator are aligned to the largest of them and
// truncated, and the sum rounded toward zero: up to 2^-23 of the block's largest magnitude per
// addend, (b + 1) 2^-23 per block, K (1 + 1/b) 2^-23 of the terms' magnitudes in all, at most
// 2.5 K 2^-24 for b >= 4. cuBLAS and cuDNN, on the same tensor cores, are judged by it too.
double accumulation_tolerance(const Problem &p) {
    return p.element == Element::F32 ? 1e-4 : std::max(1e-4, 2.5 * p.k * std::ldexp(1.0, -24));
}

// The generators' default tiles: 64 x 64 blocks, 4 x 4 per thread, tile_k 8, no fragments.
alcop::model::Schedule default_tiles(int stages) {
    alcop::model::Schedule s;
    s.bm = 64, s.bn = 64, s.kt = 8, s.tm = 4, s.tn = 4, s.smem_stages = stages, s.reg_stages = 1;
    return s;
}

template<typename In>
Variant halide_variant(const char *name, int stages, Fn fn, In *a, In *b, Buffer<float> *out,
                       alcop::model::Schedule schedule = alcop::model::Schedule()) {
    Variant v;
    v.name = name;
    v.stages = stages;
    v.schedule = schedule.bm ? schedule : default_tiles(stages);
    v.run = [=]() { return fn(*a, *b, *out); };
    v.sync = [=]() { out->device_sync(); };
    v.poison = [=]() {
        out->set_device_dirty(false);
        out->fill(NAN);
        out->set_host_dirty();
    };
    v.result = [=]() {
        out->copy_to_host();
        return out->data();
    };
    return v;
}

/** A build of the plain contractions (generators/PlainContractionGenerators.cpp: autoscheduled,
 * by the Alcop plugin or Li2018) on the problem's operands: their conv2d is a valid convolution,
 * so it takes the padded input and writes the (co, x, y, n) output. */
Variant plain_variant(const char *name, Fn fn, const Problem &p, Operands &o) {
    if (p.element != Element::F32) {
        return halide_variant(name, 0, fn, p.conv_kh ? &o.a_padded_narrow : &o.a_narrow, &o.b_narrow,
                              p.conv_kh ? &o.out_4d : &o.out);
    }
    return halide_variant(name, 0, fn, p.conv_kh ? &o.a_padded : &o.a, &o.b, p.conv_kh ? &o.out_4d : &o.out);
}

double median_ms(const Variant &v, int runs) {
    v.run();  // warm-up (compiles the kernel)
    v.sync();
    std::vector<double> ms;
    for (int i = 0; i < runs; i++) {
        const auto t0 = std::chrono::steady_clock::now();
        v.run();
        v.sync();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

double predicted_us(const Problem &p, const alcop::model::Schedule &s) {
    using namespace alcop::model;
    const alcop::model::Element e = p.element == Element::F16  ? alcop::model::Element::F16 :
                                    p.element == Element::BF16 ? alcop::model::Element::BF16 :
                                                                 alcop::model::Element::F32;
    alcop::model::Problem mp = make_bmm(p.batch > 1 && !p.conv_kh ? p.batch : 1, p.m, p.n, p.k, e);
    ModelOptions options;
#ifdef ALCOP_BENCH_CUDA
    // This build links apps/common/CudaOptIn.cpp.
    options.limits = RuntimeLimits::OptIn;
#endif
    Prediction pr = predict(mp, s, default_gpu(), options);
    return pr.feasible ? pr.total_us : NAN;
}

#ifdef ALCOP_BENCH_CUDA
/** The candidate an autoscheduled build chose, as autoscheduled_predictions.h states it. */
alcop::model::Schedule chosen_schedule(const int (&c)[8]) {
    alcop::model::Schedule s;
    s.bm = c[0], s.bn = c[1], s.kt = c[2], s.tm = c[3], s.tn = c[4], s.smem_stages = c[5], s.reg_stages = c[6];
    s.tensor_cores = c[7] != 0;
    return s;
}

// cuBLAS and cuDNN, loaded at run time so that the benchmark builds and runs without them, and
// declared here so that no CUDA header is needed: the entry points and enum values are those of
// the CUDA 13.0 and cuDNN 9 headers, cited by file and line. The anchors keep their own device
// copies of the operands, made through libcudart: Halide's CUDA runtime works in a context of
// its own (cuCtxCreate), not the primary context that cudart, cuBLAS and cuDNN use.
void *open_first(std::initializer_list<const char *> names) {
    for (const char *name : names) {
        if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    }
    return nullptr;
}

template<typename T>
bool bind(void *lib, const char *name, T *fn) {
    *fn = lib ? (T)dlsym(lib, name) : nullptr;
    return *fn != nullptr;
}

// Every entry point returns a status, 0 on success (cudaSuccess, driver_types.h:199;
// CUBLAS_STATUS_SUCCESS, cublas_api.h:90; CUDNN_STATUS_SUCCESS, cudnn_graph.h:121).
constexpr int cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2;  // driver_types.h:1248-1249
constexpr int CUBLAS_OP_N = 0;                                         // cublas_api.h:109
constexpr int CUDNN_DATA_FLOAT = 0;                                    // cudnn_graph.h:223
constexpr int CUDNN_FMA_MATH = 3;                                      // cudnn_graph.h:254
constexpr int CUDNN_TENSOR_NHWC = 1;                                   // cudnn_graph.h:278
constexpr int CUDNN_CROSS_CORRELATION = 1;                             // cudnn_graph.h:361
constexpr int CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1;    // cudnn_ops.h:859
constexpr int CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14;        // library_types.h:59-63
constexpr int CUBLAS_COMPUTE_32F = 68;                                 // cublas_api.h:208
constexpr int CUBLAS_GEMM_DEFAULT = -1;                                // cublas_api.h:123
constexpr int CUDNN_DATA_HALF = 2, CUDNN_DATA_BFLOAT16 = 9;            // cudnn_graph.h:225, 232
constexpr int CUDNN_TENSOR_OP_MATH = 1;                                // cudnn_graph.h:252

struct Vendor {
    // cuda_runtime_api.h:4581, 4752, 5957, 6807, 352
    int (*cudaMalloc)(void **, size_t);
    int (*cudaFree)(void *);
    int (*cudaMemcpy)(void *, const void *, size_t, int);
    int (*cudaMemset)(void *, int, size_t);
    int (*cudaDeviceSynchronize)();
    // cublas_api.h:246, 248, 3082, 4684
    int (*cublasCreate_v2)(void **);
    int (*cublasDestroy_v2)(void *);
    int (*cublasSgemm_v2)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                          const float *, float *, int);
    int (*cublasSgemmStridedBatched)(void *, int, int, int, int, int, const float *, const float *, int, long long,
                                     const float *, int, long long, const float *, float *, int, long long, int);
    // cublas_api.h:3368, 4916 (fp16 / bf16 operands); null where this cuBLAS lacks them
    int (*cublasGemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                        const void *, void *, int, int, int, int) = nullptr;
    int (*cublasGemmStridedBatchedEx)(void *, int, int, int, int, int, const void *, const void *, int, int, long long,
                                      const void *, int, int, long long, const void *, void *, int, int, long long, int,
                                      int, int) = nullptr;
    // cudnn_graph.h:212, 214; cudnn_ops.h:96, 99, 181, 390, 393, 438; cudnn_cnn.h:90, 94, 97, 115, 232, 244
    int (*cudnnCreate)(void **);
    int (*cudnnDestroy)(void *);
    int (*cudnnCreateTensorDescriptor)(void **);
    int (*cudnnSetTensor4dDescriptor)(void *, int, int, int, int, int, int);
    int (*cudnnDestroyTensorDescriptor)(void *);
    int (*cudnnCreateFilterDescriptor)(void **);
    int (*cudnnSetFilter4dDescriptor)(void *, int, int, int, int, int, int);
    int (*cudnnDestroyFilterDescriptor)(void *);
    int (*cudnnCreateConvolutionDescriptor)(void **);
    int (*cudnnDestroyConvolutionDescriptor)(void *);
    int (*cudnnSetConvolutionMathType)(void *, int);
    int (*cudnnSetConvolution2dDescriptor)(void *, int, int, int, int, int, int, int, int);
    int (*cudnnGetConvolutionForwardWorkspaceSize)(void *, void *, void *, void *, void *, int, size_t *);
    int (*cudnnConvolutionForward)(void *, const void *, void *, const void *, void *, const void *, void *, int,
                                   void *, size_t, const void *, void *, void *);

    void *cublas = nullptr, *cudnn = nullptr;  // the handles, where the library was found

    void load() {
        void *rt = open_first({"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"});
        const bool have_rt = bind(rt, "cudaMalloc", &cudaMalloc) && bind(rt, "cudaFree", &cudaFree) &&
                             bind(rt, "cudaMemcpy", &cudaMemcpy) && bind(rt, "cudaMemset", &cudaMemset) &&
                             bind(rt, "cudaDeviceSynchronize", &cudaDeviceSynchronize);
        void *blas = open_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"});
        if (have_rt && bind(blas, "cublasCreate_v2", &cublasCreate_v2) &&
            bind(blas, "cublasDestroy_v2", &cublasDestroy_v2) && bind(blas, "cublasSgemm_v2", &cublasSgemm_v2) &&
            bind(blas, "cublasSgemmStridedBatched", &cublasSgemmStridedBatched) && cublasCreate_v2(&cublas) != 0) {
            cublas = nullptr;
        }
        if (!bind(blas, "cublasGemmEx", &cublasGemmEx) ||
            !bind(blas, "cublasGemmStridedBatchedEx", &cublasGemmStridedBatchedEx)) {
            cublasGemmEx = nullptr;
            cublasGemmStridedBatchedEx = nullptr;
        }
        void *dnn = open_first({"libcudnn.so", "libcudnn.so.9", "libcudnn.so.8"});
        if (have_rt && bind(dnn, "cudnnCreate", &cudnnCreate) && bind(dnn, "cudnnDestroy", &cudnnDestroy) &&
            bind(dnn, "cudnnCreateTensorDescriptor", &cudnnCreateTensorDescriptor) &&
            bind(dnn, "cudnnSetTensor4dDescriptor", &cudnnSetTensor4dDescriptor) &&
            bind(dnn, "cudnnDestroyTensorDescriptor", &cudnnDestroyTensorDescriptor) &&
            bind(dnn, "cudnnCreateFilterDescriptor", &cudnnCreateFilterDescriptor) &&
            bind(dnn, "cudnnSetFilter4dDescriptor", &cudnnSetFilter4dDescriptor) &&
            bind(dnn, "cudnnDestroyFilterDescriptor", &cudnnDestroyFilterDescriptor) &&
            bind(dnn, "cudnnCreateConvolutionDescriptor", &cudnnCreateConvolutionDescriptor) &&
            bind(dnn, "cudnnDestroyConvolutionDescriptor", &cudnnDestroyConvolutionDescriptor) &&
            bind(dnn, "cudnnSetConvolutionMathType", &cudnnSetConvolutionMathType) &&
            bind(dnn, "cudnnSetConvolution2dDescriptor", &cudnnSetConvolution2dDescriptor) &&
            bind(dnn, "cudnnGetConvolutionForwardWorkspaceSize", &cudnnGetConvolutionForwardWorkspaceSize) &&
            bind(dnn, "cudnnConvolutionForward", &cudnnConvolutionForward) && cudnnCreate(&cudnn) != 0) {
            cudnn = nullptr;
        }
    }
};

// One problem on cuBLAS or cuDNN: device copies of the operands (cuDNN's filter transposed;
// fp16 / bf16 problems: their bits), the descriptors, and the host copy of the output (fp32;
// cuDNN's fp16 / bf16 output widened).
class Anchor {
public:
    Anchor(const Vendor &vendor, const Problem &p, const Operands &o)
        : name(p.conv_kh ? "cuDNN" : "cuBLAS"), v(vendor), out_host(o.nx, o.ny, o.nz), element(p.element) {
        std::vector<float> filter(o.b.data(), o.b.data() + o.b.number_of_elements());
        if (p.conv_kh) {
            // Our weights are (co, ci, kx, ky) with co innermost: HWIO in memory, which no cuDNN
            // filter format is. CUDNN_TENSOR_NHWC filters are KRSC, (ky, kx, ci) per output
            // channel: transpose once, here, outside the timed runs.
            for (int ky = 0; ky < p.conv_kh; ky++) {
                for (int kx = 0; kx < p.conv_kh; kx++) {
                    for (int ci = 0; ci < p.conv_ci; ci++) {
                        for (int co = 0; co < p.n; co++) {
                            filter[((co * p.conv_kh + ky) * p.conv_kh + kx) * p.conv_ci + ci] = o.b(co, ci, kx, ky);
                        }
                    }
                }
            }
        }
        const bool narrow = element != Element::F32;
        // cuBLAS writes fp32 (Ctype CUDA_R_32F); cuDNN's output has its input's type.
        out_narrow = narrow && p.conv_kh;
        ok = upload(&a, o.a.data(), o.a.number_of_elements(), narrow) &&
             upload(&b, filter.data(), filter.size(), narrow) &&
             upload(&out, nullptr, out_host.number_of_elements(), out_narrow);
        if (!ok) return;
        const float one = 1, zero = 0;
        if (!p.conv_kh) {
            // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS multiplies B (N x K,
            // leading dimension N) by A (K x M, leading dimension K) into C (N x M). fp16 /
            // bf16: the Ex entry points, fp32 compute and output (tensor cores).
            const float *fa = (const float *)a, *fb = (const float *)b;
            float *fout = (float *)out;
            const int t = element == Element::F16 ? CUDA_R_16F : CUDA_R_16BF;
            ok = !narrow || (v.cublasGemmEx && v.cublasGemmStridedBatchedEx);
            run = [this, p, one, zero, fa, fb, fout, narrow, t]() {
                if (narrow) {
                    return p.batch > 1 ? v.cublasGemmStridedBatchedEx(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k,
                                                                      &one, b, t, p.n, (long long)p.n * p.k, a, t, p.k,
                                                                      (long long)p.k * p.m, &zero, out, CUDA_R_32F, p.n,
                                                                      (long long)p.n * p.m, p.batch, CUBLAS_COMPUTE_32F,
                                                                      CUBLAS_GEMM_DEFAULT) :
                                         v.cublasGemmEx(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, b, t,
                                                        p.n, a, t, p.k, &zero, out, CUDA_R_32F, p.n, CUBLAS_COMPUTE_32F,
                                                        CUBLAS_GEMM_DEFAULT);
                }
                return p.batch > 1 ?
                           v.cublasSgemmStridedBatched(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, fb, p.n,
                                                       (long long)p.n * p.k, fa, p.k, (long long)p.k * p.m, &zero, fout,
                                                       p.n, (long long)p.n * p.m, p.batch) :
                           v.cublasSgemm_v2(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, fb, p.n, fa, p.k,
                                            &zero, fout, p.n);
            };
            return;
        }
        // NHWC input and output, KRSC filter, stride 1, same padding, plain FP32 arithmetic
        // (CUDNN_DEFAULT_MATH would allow TF32 on sm_80+), and a fixed algorithm. fp16 / bf16:
        // input, filter and output of that type, fp32 compute, tensor cores (the
        // PSEUDO_HALF / PSEUDO_BFLOAT16 configurations).
        const int pad = p.conv_kh / 2;
        const int data = element == Element::F32 ? CUDNN_DATA_FLOAT :
                         element == Element::F16 ? CUDNN_DATA_HALF :
                                                   CUDNN_DATA_BFLOAT16;
        ok = v.cudnnCreateTensorDescriptor(&x_desc) == 0 && v.cudnnCreateTensorDescriptor(&y_desc) == 0 &&
             v.cudnnCreateFilterDescriptor(&w_desc) == 0 && v.cudnnCreateConvolutionDescriptor(&conv_desc) == 0 &&
             v.cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NHWC, data, p.batch, p.conv_ci, p.conv_h, p.conv_w) ==
                 0 &&
             v.cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NHWC, data, p.batch, p.n, p.conv_h, p.conv_w) == 0 &&
             v.cudnnSetFilter4dDescriptor(w_desc, data, CUDNN_TENSOR_NHWC, p.n, p.conv_ci, p.conv_kh, p.conv_kh) == 0 &&
             v.cudnnSetConvolution2dDescriptor(conv_desc, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT) == 0 &&
             v.cudnnSetConvolutionMathType(conv_desc, narrow ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH) == 0 &&
             v.cudnnGetConvolutionForwardWorkspaceSize(v.cudnn, x_desc, w_desc, conv_desc, y_desc,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                       &workspace_bytes) == 0 &&
             (workspace_bytes == 0 || v.cudaMalloc(&workspace, workspace_bytes) == 0);
        run = [this, one, zero]() {
            return v.cudnnConvolutionForward(v.cudnn, &one, x_desc, a, w_desc, b, conv_desc,
                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, workspace,
                                             workspace_bytes, &zero, y_desc, out);
        };
    }

    ~Anchor() {
        for (void *ptr : {(void *)a, (void *)b, (void *)out, workspace}) {
            if (ptr) v.cudaFree(ptr);
        }
        if (x_desc) v.cudnnDestroyTensorDescriptor(x_desc);
        if (y_desc) v.cudnnDestroyTensorDescriptor(y_desc);
        if (w_desc) v.cudnnDestroyFilterDescriptor(w_desc);
        if (conv_desc) v.cudnnDestroyConvolutionDescriptor(conv_desc);
    }

    Variant variant() {
        Variant r;
        r.name = name;
        r.run = run;
        r.sync = [this]() { v.cudaDeviceSynchronize(); };
        // All ones bytes are a NaN (in fp32, fp16 and bf16).
        const size_t out_bytes = out_host.number_of_elements() * (out_narrow ? 2 : 4);
        r.poison = [this, out_bytes]() { v.cudaMemset(out, 0xff, out_bytes); };
        r.result = [this, out_bytes]() {
            if (!out_narrow) {
                v.cudaMemcpy(out_host.data(), out, out_bytes, cudaMemcpyDeviceToHost);
                return out_host.data();
            }
            std::vector<uint16_t> bits(out_host.number_of_elements());
            v.cudaMemcpy(bits.data(), out, out_bytes, cudaMemcpyDeviceToHost);
            for (size_t i = 0; i < bits.size(); i++) out_host.data()[i] = value_of(bits[i], element);
            return out_host.data();
        };
        // An fp16 / bf16 output is rounded: up to 2^-8 of the value (bf16), which is at most
        // the sum of the terms' magnitudes.
        if (out_narrow) r.output_rounding = 1.0 / 256;
        return r;
    }

    const char *name;
    bool ok = false;  // the operands and descriptors are set up

private:
    /** Room for n elements on the device, and there those of `src` (if any): fp32, or where
     * `narrow` the problem's fp16 / bf16 (which holds the values of `src` exactly). */
    bool upload(void **dst, const float *src, size_t n, bool narrow) {
        const size_t bytes = n * (narrow ? 2 : 4);
        if (v.cudaMalloc(dst, bytes) != 0) return false;
        if (!src) return true;
        if (!narrow) return v.cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice) == 0;
        std::vector<uint16_t> bits(n);
        for (size_t i = 0; i < n; i++) bits[i] = bits_of(src[i], element);
        return v.cudaMemcpy(*dst, bits.data(), bytes, cudaMemcpyHostToDevice) == 0;
    }

    const Vendor &v;
    Buffer<float> out_host;
    Element element;
    bool out_narrow = false;  // cuDNN's fp16 / bf16 output
    void *a = nullptr, *b = nullptr, *out = nullptr;
    void *x_desc = nullptr, *y_desc = nullptr, *w_desc = nullptr, *conv_desc = nullptr, *workspace = nullptr;
    size_t workspace_bytes = 0;
    std::function<int()> run;
};

/** The tensor-core variants of an fp16 / bf16 problem: stages 1 and 3, the same tiles. */
std::pair<Fn, Fn> tensor_core_variants(const Problem &p) {
    const bool bf16 = p.element == Element::BF16;
    if (p.conv_kh) {
        return bf16 ? std::pair<Fn, Fn>{tc_conv_cuda_bf16_s1, tc_conv_cuda_bf16_s3} :
                      std::pair<Fn, Fn>{tc_conv_cuda_f16_s1, tc_conv_cuda_f16_s3};
    }
    if (p.batch > 1) {
        return bf16 ? std::pair<Fn, Fn>{tc_bmm_cuda_bf16_s1, tc_bmm_cuda_bf16_s3} :
                      std::pair<Fn, Fn>{tc_bmm_cuda_f16_s1, tc_bmm_cuda_f16_s3};
    }
    return bf16 ? std::pair<Fn, Fn>{tc_gemm_cuda_bf16_s1, tc_gemm_cuda_bf16_s3} :
                  std::pair<Fn, Fn>{tc_gemm_cuda_f16_s1, tc_gemm_cuda_f16_s3};
}

/** The plugin's tensor-core build of an fp16 / bf16 problem and the time it predicted, at the
 * shapes the builds are estimated at (a 16-bit K, and conv2d's CI, is fixed at its estimate:
 * apps/bench/CMakeLists.txt); {nullptr, NAN} at the others. */
std::pair<Fn, double> tensor_core_autoscheduled(const Problem &p) {
    const bool bf16 = p.element == Element::BF16;
    const auto pick = [bf16](Fn f16, double f16_us, Fn b16, double b16_us) {
        return bf16 ? std::pair<Fn, double>{b16, b16_us} : std::pair<Fn, double>{f16, f16_us};
    };
    if (!p.tuned) return {nullptr, NAN};
    if (p.conv_kh) {
        if (p.conv_h == 56 && p.conv_ci == 64) {
            return pick(conv_cuda_auto_f16, conv_cuda_auto_f16_predicted_us, conv_cuda_auto_bf16,
                        conv_cuda_auto_bf16_predicted_us);
        }
        if (p.conv_h == 14 && p.conv_ci == 256) {
            return pick(conv_cuda_auto_14_f16, conv_cuda_auto_14_f16_predicted_us, conv_cuda_auto_14_bf16,
                        conv_cuda_auto_14_bf16_predicted_us);
        }
    } else if (p.batch > 1) {
        if (p.k == 64 && p.n == 512) {
            return pick(bmm_cuda_auto_f16, bmm_cuda_auto_f16_predicted_us, bmm_cuda_auto_bf16,
                        bmm_cuda_auto_bf16_predicted_us);
        }
    } else if (p.m == 2048 && p.n == 2048 && p.k == 2048) {
        return pick(gemm_cuda_auto_f16, gemm_cuda_auto_f16_predicted_us, gemm_cuda_auto_bf16,
                    gemm_cuda_auto_bf16_predicted_us);
    }
    return {nullptr, NAN};
}
#endif

}  // namespace

int main(int argc, char **argv) {
    // Halide's default error handler aborts; a failed pipeline should fail its row only.
    halide_set_error_handler([](void *, const char *msg) {
        const size_t n = strlen(msg);
        fprintf(stderr, "Halide: %s%s", msg, n && msg[n - 1] == '\n' ? "" : "\n");
    });
    std::string size = "small", only;
    int runs = 20;
    bool faults = false;
    for (int i = 1; i < argc; i++) {
        const bool has_value = i + 1 < argc;
        if (!strcmp(argv[i], "--faults")) {
            faults = true;
        } else if (has_value && !strcmp(argv[i], "--size")) {
            size = argv[++i];
        } else if (has_value && !strcmp(argv[i], "--runs")) {
            runs = std::max(1, atoi(argv[++i]));
        } else if (has_value && !strcmp(argv[i], "--only")) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--size tiny|small|large] [--runs N] [--only VARIANTS] [--faults]\n", argv[0]);
            return 2;
        }
    }
#ifndef ALCOP_BENCH_CUDA
    if (faults) {
        // On pocl the copies are synchronous, so most faults are invisible: test/opencl's
        // fault_test emulates asynchronous copies instead.
        fprintf(stderr, "--faults needs the CUDA build\n");
        return 2;
    }
#endif
    // Shapes: GEMM; attention QK^T and PV (batch 12, as in ALCOP's evaluation); ResNet-50
    // 3x3 convolutions (batch 1 for the small sizes). "tiny" is for sanitizers.
    std::vector<Problem> problems;
    if (size == "large") {
        problems = {{"gemm 2048^3", 1, 2048, 2048, 2048},
                    {"bmm 12x512x512x64", 12, 512, 512, 64},
                    {"bmm 12x512x64x512", 12, 512, 64, 512},
                    {"conv 56x56x64->64 3x3 (N=8)", 8, 56 * 56 * 8, 64, 9 * 64, 56, 56, 64, 3},
                    {"conv 14x14x256->256 3x3 (N=8)", 8, 14 * 14 * 8, 256, 9 * 256, 14, 14, 256, 3}};
        // Every shape has an autoscheduled CUDA build estimated at it (generators/CMakeLists.txt,
        // apps/bench/CMakeLists.txt).
        for (Problem &p : problems) p.tuned = true;
    } else if (size == "small") {
        problems = {{"gemm 256^3", 1, 256, 256, 256},
                    {"bmm 4x128x128x64", 4, 128, 128, 64},
                    {"conv 14x14x64->64 3x3", 1, 14 * 14, 64, 9 * 64, 14, 14, 64, 3}};
    } else {
        problems = {{"gemm 64x64x32", 1, 64, 64, 32}, {"conv 6x6x8->16 3x3", 1, 36, 16, 72, 6, 6, 8, 3}};
    }
#ifdef ALCOP_BENCH_CUDA
    // fp16 and bf16 on tensor cores: the same shapes, and GEMM 4096^3 (large), a batched matmul
    // (tiny), each with either type.
    std::vector<Problem> narrow_shapes = problems;
    if (size == "large") narrow_shapes.insert(narrow_shapes.begin() + 1, {"gemm 4096^3", 1, 4096, 4096, 4096});
    if (size == "tiny") narrow_shapes.push_back({"bmm 2x64x64x32", 2, 64, 64, 32});
    for (Element e : {Element::F16, Element::BF16}) {
        for (const Problem &p : narrow_shapes) problems.push_back(with_element(p, e));
    }
#endif

#ifdef ALCOP_BENCH_CUDA
    // Halide's CUDA runtime loads the driver when first used and aborts through the Buffer
    // helpers when it is missing: say so plainly instead.
    if (!dlopen("libcuda.so.1", RTLD_LAZY) && !dlopen("libcuda.so", RTLD_LAZY)) {
        fprintf(stderr, "alcop_bench_cuda: no CUDA driver (libcuda.so) on this machine\n");
        return 2;
    }
    Vendor vendor;
    vendor.load();
    printf("anchors: cuBLAS: %s; cuDNN: %s\n", vendor.cublas ? "loaded" : "not found",
           vendor.cudnn ? "loaded" : "not found");
#endif
    printf("device: %s; %d timed runs each (median, after a warm-up)\n", device_name, runs);
#ifdef ALCOP_BENCH_CUDA
    printf("speedup: over stages 1; vs lib: the anchor's time over the variant's (cuBLAS for GEMMs, cuDNN for conv)\n");
#else
    printf("speedup: over stages 1; vs lib: none in this build (cuBLAS and cuDNN anchors: the CUDA build)\n");
#endif
    printf("%-32s %-10s %10s %9s %8s %7s %14s %5s %7s\n", "problem", "variant", "ms", "TFLOP/s", "speedup", "vs lib",
           "model us(H200)", "regs", "check");
    bool all_correct = true;
    std::vector<std::string> spilling;  // our variants whose kernels use local memory
    std::mt19937 rng(1);
    for (const Problem &p : problems) {
        if (faults && (p.conv_kh || p.batch > 1 || p.element != Element::F32)) continue;
        Operands o = make_operands(p, rng);
        Fn plain, pipelined, autoscheduled, li2018;
        if (p.conv_kh) {
            plain = VARIANT(conv, s1), pipelined = VARIANT(conv, s3), autoscheduled = VARIANT(conv, auto);
            li2018 = VARIANT(conv, li2018);
        } else if (p.batch > 1) {
            plain = VARIANT(bmm, s1), pipelined = VARIANT(bmm, s3), autoscheduled = VARIANT(bmm, auto);
            li2018 = VARIANT(bmm, li2018);
        } else {
            plain = VARIANT(gemm, s1), pipelined = VARIANT(gemm, s3), autoscheduled = VARIANT(gemm, auto);
            li2018 = VARIANT(gemm, li2018);
        }
        std::vector<Variant> variants;
        bool has_anchor = false;  // variants[0] is the library's
#ifdef ALCOP_BENCH_CUDA
        std::unique_ptr<Anchor> anchor;
        if (!faults && (p.conv_kh ? vendor.cudnn : vendor.cublas)) {
            anchor = std::make_unique<Anchor>(vendor, p, o);
            if (anchor->ok) {
                variants.push_back(anchor->variant());
                has_anchor = true;
            } else {
                printf("%-32s %-10s could not set up its operands or descriptors\n", p.name.c_str(), anchor->name);
            }
        }
#endif
#ifdef ALCOP_BENCH_CUDA
        if (p.element != Element::F32) {
            // The generators' tensor-core schedule at its default tiles (the model knows SIMT
            // tiles only).
            const auto [s1, s3] = tensor_core_variants(p);
            variants.push_back(halide_variant("TC s1", 1, s1, &o.a_narrow, &o.b_narrow, &o.out));
            variants.push_back(halide_variant("TC s3", 3, s3, &o.a_narrow, &o.b_narrow, &o.out));
            if (!p.conv_kh && p.batch == 1) {
                // 4 stages of 16 KB (64 KB): past the 48 KB default, so this build raises the
                // kernel's limit (CudaOptIn.h).
                variants.push_back(
                    halide_variant("TC s4", 4, p.element == Element::BF16 ? tc_gemm_cuda_bf16_s4 : tc_gemm_cuda_f16_s4,
                                   &o.a_narrow, &o.b_narrow, &o.out));
            }
            for (Variant &v : variants) v.modelled = false;
        }
#endif
        if (p.element == Element::F32) {
            variants.push_back(halide_variant("stages 1", 1, plain, &o.a, &o.b, &o.out));
            variants.push_back(halide_variant("ALCOP s3", 3, pipelined, &o.a, &o.b, &o.out));
        }
#ifdef ALCOP_BENCH_CUDA
        if (faults) {
            // Beside the correct stages-3 pipeline, the same one broken in four ways.
            const std::pair<const char *, Fn> broken[] = {{"drop_wait", gemm_cuda_fault_drop_wait},
                                                          {"wait_short", gemm_cuda_fault_wait_one_group_short},
                                                          {"drop_bar", gemm_cuda_fault_drop_barrier},
                                                          {"war_bar", gemm_cuda_fault_missing_war_barrier}};
            for (const auto &[name, fn] : broken) {
                variants.push_back(halide_variant(name, 3, fn, &o.a, &o.b, &o.out));
                variants.back().broken = true;
            }
        }
#endif
        if (!faults && p.element == Element::F32) {
#ifdef ALCOP_BENCH_CUDA
            // Each shape of the large size has a build estimated at it (the second batched matmul
            // and convolution: apps/bench/CMakeLists.txt).
            const bool second = p.tuned && (p.conv_kh ? p.conv_ci != 64 : p.batch > 1 && p.k != 64);
            if (second) autoscheduled = p.conv_kh ? conv_cuda_auto_14 : bmm_cuda_auto_pv;
#endif
            variants.push_back(plain_variant("ALCOP auto", autoscheduled, p, o));
#ifdef ALCOP_BENCH_CUDA
            // The plugin's prediction holds at the shape each build was estimated at.
            if (p.tuned) {
                variants.back().predicted_us =
                    p.conv_kh   ? (second ? conv_cuda_auto_14_predicted_us : conv_cuda_auto_predicted_us) :
                    p.batch > 1 ? (second ? bmm_cuda_auto_pv_predicted_us : bmm_cuda_auto_predicted_us) :
                                  gemm_cuda_auto_predicted_us;
                // One row per op off its estimate, the generic path (every K in chunks of the k
                // tile, the last one guarded): the GEMM estimated at K = 2047, the batched matmul
                // and the convolution estimated at the other shape of their op; the model's
                // time for that build's tiles at this shape beside it.
                if (!second) {
                    const Fn off = p.conv_kh   ? conv_cuda_auto_14 :
                                   p.batch > 1 ? bmm_cuda_auto_pv :
                                                 gemm_cuda_auto_k2047;
                    const alcop::model::Schedule s = chosen_schedule(p.conv_kh   ? conv_cuda_auto_14_chosen :
                                                                     p.batch > 1 ? bmm_cuda_auto_pv_chosen :
                                                                                   gemm_cuda_auto_k2047_chosen);
                    variants.push_back(plain_variant("auto (off)", off, p, o));
                    variants.back().predicted_us = predicted_us(p, s);
                }
            }
#endif
        }
#ifdef ALCOP_BENCH_CUDA
        if (!faults && p.element != Element::F32) {
            // The plugin's tensor-core schedule, where it has a build for this shape.
            if (const auto [fn, predicted] = tensor_core_autoscheduled(p); fn) {
                variants.push_back(plain_variant("ALCOP auto", fn, p, o));
                variants.back().modelled = false;
                variants.back().predicted_us = predicted;
            }
        }
#endif
        if (!faults && p.element == Element::F32) {
            // Halide 14's own GPU autoscheduler on the same plainly written contraction.
            // Its tiles shift inwards at the edges, so outputs narrower than a tile fail its
            // bounds check (the tiny conv2d): that row is then reported, not counted.
            variants.push_back(plain_variant("Li2018", li2018, p, o));
            variants.back().ours = false;
        }
#ifdef ALCOP_BENCH_CUDA
        if (!faults && !p.conv_kh && p.batch == 1 && p.element == Element::F32) {
            // Both levels with 128 x 128 tiles: 4 shared stages of 16 KB, more than Halide's
            // 48 KB default, so this build raises the kernel's limit (CudaOptIn.h).
            alcop::model::Schedule deep;
            deep.bm = 128, deep.bn = 128, deep.kt = 16, deep.tm = 8, deep.tn = 8, deep.smem_stages = 4,
            deep.reg_stages = 2;
            variants.push_back(halide_variant("ALCOP deep", 4, gemm_cuda_deep, &o.a, &o.b, &o.out, deep));
            // Tuning: the plugin's candidates 1..3 (in its order of preference) beside its
            // choice, "ALCOP auto"; built for the first GEMM shape of the large size.
            const Fn ranked[] = {gemm_cuda_auto_c1, gemm_cuda_auto_c2, gemm_cuda_auto_c3};
            const double ranked_us[] = {gemm_cuda_auto_c1_predicted_us, gemm_cuda_auto_c2_predicted_us,
                                        gemm_cuda_auto_c3_predicted_us};
            for (int i = 0; i < 3; i++) {
                variants.push_back(halide_variant(tuned_names[i], 0, ranked[i], &o.a, &o.b, &o.out));
                if (p.tuned) variants.back().predicted_us = ranked_us[i];
            }
        }
#endif
        const double flops = 2.0 * p.m * p.n * p.k * (p.conv_kh ? 1 : p.batch);
        double anchor_ms = NAN, base_ms = NAN;
        std::vector<std::pair<std::string, double>> candidates;  // "ALCOP auto" and the tuned ranks
        for (const Variant &v : variants) {
            const bool is_anchor = has_anchor && &v == &variants[0];
            if (!only.empty() && ("," + only + ",").find("," + v.name + ",") == std::string::npos) continue;
            v.poison();
#ifdef ALCOP_BENCH_CUDA
            // The kernels' registers and local memory, as the driver reports them (the anchors
            // do not launch through Halide's runtime).
            alcop::apps::record_kernel_resources(true);
#endif
            if (const int status = v.run()) {
                // The other rows still run (a launch refused for its shared memory, say, leaves
                // the context usable); an anchor's failure only loses the ratios to it.
#ifdef ALCOP_BENCH_CUDA
                alcop::apps::record_kernel_resources(false);
#endif
                printf("%-32s %-10s returned status %d%s\n", p.name.c_str(), v.name.c_str(), status,
                       v.ours && !is_anchor ? "" : " (not ours: not counted)");
                all_correct = all_correct && (is_anchor || !v.ours);
                continue;
            }
            v.sync();
            char regs[16] = "-";
#ifdef ALCOP_BENCH_CUDA
            alcop::apps::record_kernel_resources(false);
            const alcop::apps::KernelResources used = alcop::apps::recorded_kernel_resources();
            if (used.launches) {
                snprintf(regs, sizeof(regs), "%d", used.max_registers);
                if (used.max_local_bytes) spilling.push_back(p.name + " " + v.name);
            }
#endif
            const int wrong = wrong_outputs(o, v.result(), rng, accumulation_tolerance(p) + v.output_rounding);
            const double ms = median_ms(v, runs);
            if (is_anchor) anchor_ms = ms;
            if (v.stages == 1) base_ms = ms;
            if (v.name.rfind("ALCOP auto", 0) == 0 || v.name.rfind("auto #", 0) == 0)
                candidates.emplace_back(v.name, ms);
            char speedup[16] = "-", vs_lib[16] = "-", model[16] = "-";
            if (!is_anchor && !std::isnan(base_ms)) snprintf(speedup, sizeof(speedup), "%.2fx", base_ms / ms);
            if (!is_anchor && !std::isnan(anchor_ms)) snprintf(vs_lib, sizeof(vs_lib), "%.2fx", anchor_ms / ms);
            if (v.stages && v.modelled) snprintf(model, sizeof(model), "%.1f", predicted_us(p, v.schedule));
            if (!std::isnan(v.predicted_us)) snprintf(model, sizeof(model), "%.1f", v.predicted_us);
            // A fault is caught when some sampled output is wrong.
            const char *check = v.broken ? (wrong ? "caught" : "MISSED") : (wrong ? "WRONG" : "ok");
            printf("%-32s %-10s %10.3f %9.4f %8s %7s %14s %5s %7s", p.name.c_str(), v.name.c_str(), ms,
                   flops / ms * 1e-9, speedup, vs_lib, model, regs, check);
            printf(wrong ? " (%d of %d sampled outputs wrong)\n" : "\n", wrong, std::min(o.nx * o.ny * o.nz, 2000));
            all_correct = all_correct && (v.broken ? wrong > 0 : wrong == 0);
        }
        if (candidates.size() > 1 && p.tuned) {
            // The tuning result at the shape the candidates were built for: how far the model's
            // choice is from the measured best of its top N.
            auto best = std::min_element(candidates.begin(), candidates.end(),
                                         [](const auto &a, const auto &b) { return a.second < b.second; });
            // Keeping the best is building with its rank (candidates are in the plugin's order).
            const long rank = best - candidates.begin();
            printf("%-32s tuning: measured best of the plugin's top %zu is %s (%.3f ms); its choice, %s, is %.1f%% "
                   "slower%s; keep it with as_gemm candidate=%ld (or ALCOP_AUTOSCHEDULER_CANDIDATE=%ld)\n",
                   p.name.c_str(), candidates.size(), best->first.c_str(), best->second, candidates[0].first.c_str(),
                   100.0 * (candidates[0].second / best->second - 1.0),
                   rank == 0 ? " (the model's choice is the best)" : "", rank, rank);
        }
    }
#ifdef ALCOP_BENCH_CUDA
    // Local memory in one of our kernels is a spill or an array the lowering failed to keep in
    // registers: correct, but a performance bug the GPU check reports.
    printf("kernels with local memory (spills):");
    for (const std::string &s : spilling) printf(" [%s]", s.c_str());
    printf(spilling.empty() ? " none\n" : "\n");
#endif
    return all_correct ? 0 : 1;
}
