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
//
// This file builds the rows and runs them; Operands.h holds the problems, their operands and
// the check against the reference, Variant.h a row and its timing, Vendors.h (CUDA) the cuBLAS
// and cuDNN anchors.

#include "HalideBuffer.h"
#include "HalideRuntime.h"

#include "Operands.h"
#include "Variant.h"
#include "model/CostModel.h"
#include "model/GpuSpec.h"

#ifdef ALCOP_BENCH_CUDA
#include "CudaOptInRecording.h"
#include "Vendors.h"
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
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace bench;
using Halide::Runtime::Buffer;
using Fn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

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

/** A build of the plain contractions (generators/PlainGenerators.cpp: autoscheduled,
 * by the Alcop plugin or Li2018) on the problem's operands: their conv2d is a valid convolution,
 * so it takes the padded input and writes the (co, x, y, n) output. */
Variant plain_variant(const char *name, Fn fn, const Problem &p, Operands &o) {
    if (p.element != Element::F32) {
        return halide_variant(name, 0, fn, p.conv_kh ? &o.a_padded_narrow : &o.a_narrow, &o.b_narrow,
                              p.conv_kh ? &o.out_4d : &o.out);
    }
    return halide_variant(name, 0, fn, p.conv_kh ? &o.a_padded : &o.a, &o.b, p.conv_kh ? &o.out_4d : &o.out);
}

double predicted_us(const Problem &p, const alcop::model::Schedule &s) {
    namespace model = alcop::model;
    const model::Element e = p.element == Element::F16  ? model::Element::F16 :
                             p.element == Element::BF16 ? model::Element::BF16 :
                                                          model::Element::F32;
    model::Problem mp = model::make_bmm(p.batch > 1 && !p.conv_kh ? p.batch : 1, p.m, p.n, p.k, e);
    model::ModelOptions options;
#ifdef ALCOP_BENCH_CUDA
    // This build links apps/common/CudaOptIn.cpp.
    options.limits = model::RuntimeLimits::OptIn;
#endif
    model::Prediction pr = model::predict(mp, s, model::default_gpu(), options);
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

struct Options {
    std::string size = "small", only;
    int runs = 20;
    bool faults = false;
};

/** The command line into `o`; false, after the usage, where it is not understood. */
bool parse_options(int argc, char **argv, Options &o) {
    for (int i = 1; i < argc; i++) {
        const bool has_value = i + 1 < argc;
        if (!strcmp(argv[i], "--faults")) {
            o.faults = true;
        } else if (has_value && !strcmp(argv[i], "--size")) {
            o.size = argv[++i];
        } else if (has_value && !strcmp(argv[i], "--runs")) {
            o.runs = std::max(1, atoi(argv[++i]));
        } else if (has_value && !strcmp(argv[i], "--only")) {
            o.only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--size tiny|small|large] [--runs N] [--only VARIANTS] [--faults]\n", argv[0]);
            return false;
        }
    }
#ifndef ALCOP_BENCH_CUDA
    if (o.faults) {
        // On pocl the copies are synchronous, so most faults are invisible: test/opencl's
        // fault_test emulates asynchronous copies instead.
        fprintf(stderr, "--faults needs the CUDA build\n");
        return false;
    }
#endif
    return true;
}

/** The problems of a size. Shapes: GEMM; attention QK^T and PV (batch 12, as in ALCOP's
 * evaluation); ResNet-50 3x3 convolutions (batch 1 for the small sizes). "tiny" is for
 * sanitizers. The CUDA build adds each in fp16 and bf16 (tensor cores). */
std::vector<Problem> problems_of(const std::string &size) {
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
    return problems;
}

#ifdef ALCOP_BENCH_CUDA
/** The generators' tensor-core schedule at its default tiles, stages 1, 3 (and 4 for GEMM). */
void add_tensor_core_rows(const Problem &p, Operands &o, std::vector<Variant> &rows) {
    const auto [s1, s3] = tensor_core_variants(p);
    rows.push_back(halide_variant("TC s1", 1, s1, &o.a_narrow, &o.b_narrow, &o.out));
    rows.push_back(halide_variant("TC s3", 3, s3, &o.a_narrow, &o.b_narrow, &o.out));
    if (!p.conv_kh && p.batch == 1) {
        // 4 stages of 16 KB (64 KB): past the 48 KB default, so this build raises the
        // kernel's limit (CudaOptIn.h).
        rows.push_back(halide_variant("TC s4", 4,
                                      p.element == Element::BF16 ? tc_gemm_cuda_bf16_s4 : tc_gemm_cuda_f16_s4,
                                      &o.a_narrow, &o.b_narrow, &o.out));
    }
    // (The model knows SIMT tiles only.)
    for (Variant &v : rows) v.modelled = false;
}

/** The stages-3 GEMM pipeline broken in four ways (test/support's faults): on a GPU the copies
 * really are asynchronous, so each must give wrong outputs. */
void add_fault_rows(Operands &o, std::vector<Variant> &rows) {
    const std::pair<const char *, Fn> broken[] = {{"drop_wait", gemm_cuda_fault_drop_wait},
                                                  {"wait_short", gemm_cuda_fault_wait_one_group_short},
                                                  {"drop_bar", gemm_cuda_fault_drop_barrier},
                                                  {"war_bar", gemm_cuda_fault_missing_war_barrier}};
    for (const auto &[name, fn] : broken) {
        rows.push_back(halide_variant(name, 3, fn, &o.a, &o.b, &o.out));
        rows.back().broken = true;
    }
}

/** The fp32 plugin builds' predictions, and one row per op off its estimate. */
void add_autoscheduled_predictions(const Problem &p, Operands &o, bool second, std::vector<Variant> &rows) {
    // The plugin's prediction holds at the shape each build was estimated at.
    rows.back().predicted_us = p.conv_kh   ? (second ? conv_cuda_auto_14_predicted_us : conv_cuda_auto_predicted_us) :
                               p.batch > 1 ? (second ? bmm_cuda_auto_pv_predicted_us : bmm_cuda_auto_predicted_us) :
                                             gemm_cuda_auto_predicted_us;
    if (second) return;
    // One row per op off its estimate, the generic path (every K in chunks of the k tile, the
    // last one guarded): the GEMM estimated at K = 2047, the batched matmul and the convolution
    // estimated at the other shape of their op; the model's time for that build's tiles at this
    // shape beside it.
    const Fn off = p.conv_kh ? conv_cuda_auto_14 : p.batch > 1 ? bmm_cuda_auto_pv : gemm_cuda_auto_k2047;
    const alcop::model::Schedule s = chosen_schedule(p.conv_kh   ? conv_cuda_auto_14_chosen :
                                                     p.batch > 1 ? bmm_cuda_auto_pv_chosen :
                                                                   gemm_cuda_auto_k2047_chosen);
    rows.push_back(plain_variant("auto (off)", off, p, o));
    rows.back().predicted_us = predicted_us(p, s);
}

/** Both levels with 128 x 128 tiles, and the plugin's candidates 1..3 beside its choice. */
void add_deep_and_ranked_rows(const Problem &p, Operands &o, std::vector<Variant> &rows) {
    // 4 shared stages of 16 KB, more than Halide's 48 KB default, so this build raises the
    // kernel's limit (CudaOptIn.h).
    alcop::model::Schedule deep;
    deep.bm = 128, deep.bn = 128, deep.kt = 16, deep.tm = 8, deep.tn = 8, deep.smem_stages = 4, deep.reg_stages = 2;
    rows.push_back(halide_variant("ALCOP deep", 4, gemm_cuda_deep, &o.a, &o.b, &o.out, deep));
    // Tuning: the plugin's candidates 1..3 (in its order of preference) beside its choice,
    // "ALCOP auto"; built for the first GEMM shape of the large size.
    const Fn ranked[] = {gemm_cuda_auto_c1, gemm_cuda_auto_c2, gemm_cuda_auto_c3};
    const double ranked_us[] = {gemm_cuda_auto_c1_predicted_us, gemm_cuda_auto_c2_predicted_us,
                                gemm_cuda_auto_c3_predicted_us};
    for (int i = 0; i < 3; i++) {
        rows.push_back(halide_variant(tuned_names[i], 0, ranked[i], &o.a, &o.b, &o.out));
        if (p.tuned) rows.back().predicted_us = ranked_us[i];
    }
}
#endif

/** The Halide rows of a problem, or with `faults` (CUDA, fp32 GEMM only) the stages-1 and -3
 * pipelines and the broken ones. */
std::vector<Variant> halide_rows(const Problem &p, Operands &o, bool faults) {
    std::vector<Variant> rows;
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
    if (p.element != Element::F32) {
#ifdef ALCOP_BENCH_CUDA
        add_tensor_core_rows(p, o, rows);
        // The plugin's tensor-core schedule, where it has a build for this shape.
        if (const auto [fn, predicted] = tensor_core_autoscheduled(p); fn) {
            rows.push_back(plain_variant("ALCOP auto", fn, p, o));
            rows.back().modelled = false;
            rows.back().predicted_us = predicted;
        }
#endif
        return rows;
    }
    rows.push_back(halide_variant("stages 1", 1, plain, &o.a, &o.b, &o.out));
    rows.push_back(halide_variant("ALCOP s3", 3, pipelined, &o.a, &o.b, &o.out));
    if (faults) {
#ifdef ALCOP_BENCH_CUDA
        add_fault_rows(o, rows);
#endif
        return rows;
    }
#ifdef ALCOP_BENCH_CUDA
    // Each shape of the large size has a build estimated at it (the second batched matmul and
    // convolution: apps/bench/CMakeLists.txt).
    const bool second = p.tuned && (p.conv_kh ? p.conv_ci != 64 : p.batch > 1 && p.k != 64);
    if (second) autoscheduled = p.conv_kh ? conv_cuda_auto_14 : bmm_cuda_auto_pv;
#endif
    rows.push_back(plain_variant("ALCOP auto", autoscheduled, p, o));
#ifdef ALCOP_BENCH_CUDA
    if (p.tuned) add_autoscheduled_predictions(p, o, second, rows);
#endif
    // Halide 14's own GPU autoscheduler on the same plainly written contraction. Its tiles
    // shift inwards at the edges, so outputs narrower than a tile fail its bounds check (the
    // tiny conv2d): that row is then reported, not counted.
    rows.push_back(plain_variant("Li2018", li2018, p, o));
    rows.back().ours = false;
#ifdef ALCOP_BENCH_CUDA
    if (!p.conv_kh && p.batch == 1) add_deep_and_ranked_rows(p, o, rows);
#endif
    return rows;
}

/** The tuning result at the shape the candidates were built for: how far the model's choice
 * (the first candidate) is from the measured best of its top N. */
void print_tuning(const Problem &p, const std::vector<std::pair<std::string, double>> &candidates) {
    auto best = std::min_element(candidates.begin(), candidates.end(),
                                 [](const auto &a, const auto &b) { return a.second < b.second; });
    // Keeping the best is building with its rank (candidates are in the plugin's order).
    const long rank = best - candidates.begin();
    printf("%-32s tuning: measured best of the plugin's top %zu is %s (%.3f ms); its choice, %s, is %.1f%% "
           "slower%s; keep it with as_gemm candidate=%ld (or ALCOP_AUTOSCHEDULER_CANDIDATE=%ld)\n",
           p.name.c_str(), candidates.size(), best->first.c_str(), best->second, candidates[0].first.c_str(),
           100.0 * (candidates[0].second / best->second - 1.0), rank == 0 ? " (the model's choice is the best)" : "",
           rank, rank);
}

/** Runs, checks, times and prints each row of a problem (those `only` names, if any; the
 * first is the library's where `has_anchor`), then the tuning line; whether each of ours was
 * right (a broken one: caught). Kernels of ours with local memory go into `spilling`. */
bool run_rows(const Problem &p, const Operands &o, const std::vector<Variant> &rows, bool has_anchor,
              const Options &options, std::mt19937 &rng, std::vector<std::string> &spilling) {
    const double flops = 2.0 * p.m * p.n * p.k * (p.conv_kh ? 1 : p.batch);
    double anchor_ms = NAN, base_ms = NAN;
    std::vector<std::pair<std::string, double>> candidates;  // "ALCOP auto" and the tuned ranks
    bool all_correct = true;
    for (const Variant &v : rows) {
        const bool is_anchor = has_anchor && &v == &rows[0];
        if (!options.only.empty() && ("," + options.only + ",").find("," + v.name + ",") == std::string::npos) {
            continue;
        }
        v.poison();
#ifdef ALCOP_BENCH_CUDA
        // The kernels' registers and local memory, as the driver reports them (the anchors do
        // not launch through Halide's runtime).
        alcop::apps::record_kernel_resources(true);
#endif
        if (const int status = v.run()) {
            // The other rows still run (a launch refused for its shared memory, say, leaves the
            // context usable); an anchor's failure only loses the ratios to it.
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
        const double ms = median_ms(v, options.runs);
        if (is_anchor) anchor_ms = ms;
        if (v.stages == 1) base_ms = ms;
        if (v.name.rfind("ALCOP auto", 0) == 0 || v.name.rfind("auto #", 0) == 0) candidates.emplace_back(v.name, ms);
        char speedup[16] = "-", vs_lib[16] = "-", model[16] = "-";
        if (!is_anchor && !std::isnan(base_ms)) snprintf(speedup, sizeof(speedup), "%.2fx", base_ms / ms);
        if (!is_anchor && !std::isnan(anchor_ms)) snprintf(vs_lib, sizeof(vs_lib), "%.2fx", anchor_ms / ms);
        if (v.stages && v.modelled) snprintf(model, sizeof(model), "%.1f", predicted_us(p, v.schedule));
        if (!std::isnan(v.predicted_us)) snprintf(model, sizeof(model), "%.1f", v.predicted_us);
        // A fault is caught when some sampled output is wrong.
        const char *check = v.broken ? (wrong ? "caught" : "MISSED") : (wrong ? "WRONG" : "ok");
        printf("%-32s %-10s %10.3f %9.4f %8s %7s %14s %5s %7s", p.name.c_str(), v.name.c_str(), ms, flops / ms * 1e-9,
               speedup, vs_lib, model, regs, check);
        printf(wrong ? " (%d of %d sampled outputs wrong)\n" : "\n", wrong, std::min(o.nx * o.ny * o.nz, 2000));
        all_correct = all_correct && (v.broken ? wrong > 0 : wrong == 0);
    }
    if (candidates.size() > 1 && p.tuned) print_tuning(p, candidates);
    return all_correct;
}

}  // namespace

int main(int argc, char **argv) {
    // Halide's default error handler aborts; a failed pipeline should fail its row only.
    halide_set_error_handler([](void *, const char *msg) {
        const size_t n = strlen(msg);
        fprintf(stderr, "Halide: %s%s", msg, n && msg[n - 1] == '\n' ? "" : "\n");
    });
    Options options;
    if (!parse_options(argc, argv, options)) return 2;
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
    printf("device: %s; %d timed runs each (median, after a warm-up)\n", device_name, options.runs);
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
    for (const Problem &p : problems_of(options.size)) {
        if (options.faults && (p.conv_kh || p.batch > 1 || p.element != Element::F32)) continue;
        Operands o = make_operands(p, rng);
        std::vector<Variant> rows;
        bool has_anchor = false;  // rows[0] is the library's
#ifdef ALCOP_BENCH_CUDA
        std::unique_ptr<Anchor> anchor;
        if (!options.faults && (p.conv_kh ? vendor.cudnn : vendor.cublas)) {
            anchor = std::make_unique<Anchor>(vendor, p, o);
            if (anchor->ok) {
                rows.push_back(anchor->variant());
                has_anchor = true;
            } else {
                printf("%-32s %-10s could not set up its operands or descriptors\n", p.name.c_str(), anchor->name);
            }
        }
#endif
        for (Variant &v : halide_rows(p, o, options.faults)) rows.push_back(std::move(v));
        all_correct = run_rows(p, o, rows, has_anchor, options, rng, spilling) && all_correct;
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
