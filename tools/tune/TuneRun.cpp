// The run phase of the tuning experiment (tools/alcop-tune): loads every variant of a manifest
// that alcop_tune_build wrote (tools/variants: one Halide runtime, this program's, for all of
// them), checks each against a double-precision reference (all outputs, or 2000 sampled ones;
// test/common/Reference.h's notion of close),
// times it (median of --runs runs after a warm-up, each ended by a device sync) and prints one
// line per candidate, then per problem what ALCOP's model-guided search claims:
//
//   - the measured best candidate, and the model's pick (rank 0) with its place among the measured;
//   - the fraction of the best reached by the model's top 1, 5 and 20 (best time / the fastest of
//     the model's first k);
//   - how many measurements a random search needs, in expectation over random orders of the
//     whole space, to find a candidate as fast as that: (N + 1) / (G + 1) for G of the N
//     candidates as fast (G estimated from the sample, each candidate counted with its weight).
//
// Needs neither Halide nor a compiler: the variants were built elsewhere (TuneBuild.cpp).
//
//   alcop_tune_run_{opencl,cuda} MANIFEST [--runs N]
//
// Lines: "candidate <problem> <rank> <weight> <predicted us> <measured ms> <check> <schedule>"
// (tab-separated, for tools/plot.sh), then the summary. Exit status 1 when a candidate is
// wrong or fails to run.

#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "Reference.h"
#include "VariantLoad.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#ifdef ALCOP_TUNE_CUDA
#include "alcop/CudaOptIn.h"
#include <dlfcn.h>
#endif

namespace {

using alcop::variants::Variant;
using Halide::Runtime::Buffer;

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    std::string p;
    while (std::getline(ss, p, sep)) parts.push_back(p);
    return parts;
}

struct Candidate {
    size_t rank, weight;
    std::string function, library, schedule;
    double predicted_us;
    double ms = NAN;
    std::string check;
};

struct Problem {
    std::string id, kind, label;
    std::vector<int> sizes;
    size_t candidates = 0, top = 0;
    std::vector<Candidate> measured;
};

Buffer<float> random_buffer(const std::vector<int> &shape, std::mt19937 &rng) {
    Buffer<float> b(shape);
    reference::fill_random(b, rng);
    return b;
}

/** The operands of a problem, named as the generators name them, and its reference. */
struct Operands {
    std::map<std::string, Buffer<float>> buffers;
    Buffer<float> out;
    std::function<double(const std::vector<int> &, double *)> reference;  // (coordinates) -> value, |terms|
};

Operands make_operands(const Problem &p, std::mt19937 &rng) {
    Operands o;
    if (p.kind == "gemm") {
        const int m = p.sizes[0], n = p.sizes[1], k = p.sizes[2];
        Buffer<float> a = random_buffer({k, m}, rng), b = random_buffer({n, k}, rng);
        o.buffers = {{"A", a}, {"B", b}};
        o.out = Buffer<float>(n, m);
        o.reference = [=](const std::vector<int> &c, double *scale) {
            double r = 0;
            for (int i = 0; i < k; i++) {
                const double t = (double)a(i, c[1]) * b(c[0], i);
                r += t;
                *scale += std::abs(t);
            }
            return r;
        };
    } else {
        // as_conv2d: a valid 3x3 convolution, input (ci, x, y, n), weights (co, ci, kx, ky).
        const int batch = p.sizes[0], h = p.sizes[1], w = p.sizes[2], ci = p.sizes[3], co = p.sizes[4];
        Buffer<float> in = random_buffer({ci, w + 2, h + 2, batch}, rng), wt = random_buffer({co, ci, 3, 3}, rng);
        o.buffers = {{"input", in}, {"weights", wt}};
        o.out = Buffer<float>(co, w, h, batch);
        o.reference = [=](const std::vector<int> &c, double *scale) {
            double r = 0;
            for (int ky = 0; ky < 3; ky++) {
                for (int kx = 0; kx < 3; kx++) {
                    for (int i = 0; i < ci; i++) {
                        const double t = (double)in(i, c[1] + kx, c[2] + ky, c[3]) * wt(c[0], i, kx, ky);
                        r += t;
                        *scale += std::abs(t);
                    }
                }
            }
            return r;
        };
    }
    return o;
}

/** Wrong outputs among (at most) 2000 sampled ones; unwritten (NaN) outputs count. */
int wrong_outputs(const Operands &o, std::mt19937 &rng) {
    const size_t total = o.out.number_of_elements();
    const size_t samples = std::min<size_t>(total, 2000);
    int wrong = 0;
    std::vector<int> c(o.out.dimensions());
    for (size_t s = 0; s < samples; s++) {
        size_t e = samples == total ? s : rng() % total;
        for (int d = 0; d < o.out.dimensions(); d++) {
            c[d] = o.out.dim(d).min() + e % o.out.dim(d).extent();
            e /= o.out.dim(d).extent();
        }
        double scale = 0;
        const double ref = o.reference(c, &scale);
        wrong += !reference::close(o.out(c.data()), ref, scale);
    }
    return wrong;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/** Runs and checks every candidate of `p`; false when one is wrong or fails. */
bool measure(Problem &p, const std::string &dir, int runs, std::mt19937 &rng) {
    Operands o = make_operands(p, rng);
    std::map<std::string, halide_buffer_t *> args;
    for (auto &[name, b] : o.buffers) args[name] = b.raw_buffer();
    args["out"] = o.out.raw_buffer();
    bool ok = true;
    for (Candidate &c : p.measured) {
        std::string error;
        std::unique_ptr<Variant> v = Variant::load(dir + "/" + c.library, c.function, &error);
        int status = -1;
        if (v) {
            o.out.copy_to_host();  // the last candidate's result, so that the poison below is the newer copy
            o.out.fill(std::nanf(""));
            o.out.set_host_dirty();
            status = v->run(args, &error);
        }
        if (status) {
            c.check = "failed";
            fprintf(stderr, "%s rank %zu (%s): %s\n", p.id.c_str(), c.rank, c.function.c_str(),
                    v ? ("returned " + std::to_string(status) + " " + error).c_str() : error.c_str());
            printf("candidate\t%s\t%zu\t%zu\t%.3f\tnan\tfailed\t%s\n", p.id.c_str(), c.rank, c.weight, c.predicted_us,
                   c.schedule.c_str());
            ok = false;
            continue;
        }
        o.out.copy_to_host();
        const int wrong = wrong_outputs(o, rng);
        c.check = wrong ? "WRONG" : "ok";
        ok = ok && !wrong;
        std::vector<double> times;
        for (int r = 0; r < runs; r++) {
            const auto start = std::chrono::steady_clock::now();
            v->run(args);
            o.out.device_sync();
            times.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        c.ms = median(times);
        printf("candidate\t%s\t%zu\t%zu\t%.3f\t%.5f\t%s\t%s\n", p.id.c_str(), c.rank, c.weight, c.predicted_us, c.ms,
               c.check.c_str(), c.schedule.c_str());
        fflush(stdout);
    }
    return ok;
}

void summarize(const Problem &p) {
    std::vector<const Candidate *> good;
    for (const Candidate &c : p.measured) {
        if (c.check == "ok") good.push_back(&c);
    }
    if (good.empty()) return;
    const Candidate *best = *std::min_element(good.begin(), good.end(), [](auto *a, auto *b) { return a->ms < b->ms; });
    double space = 0;  // the candidates the measured ones stand for
    for (const Candidate *c : good) space += c->weight;
    const size_t top = std::count_if(good.begin(), good.end(), [&](auto *c) { return c->rank < p.top; });
    printf("%s: %zu candidates in the space, %zu measured and right (%zu of the model's top %zu and %zu spread)\n",
           p.label.c_str(), p.candidates, good.size(), top, p.top, good.size() - top);
    printf("%s: measured best: rank %zu, %s, %.5f ms\n", p.label.c_str(), best->rank, best->schedule.c_str(), best->ms);
    for (const Candidate *c : good) {
        if (c->rank != 0) continue;
        const size_t place = 1 + std::count_if(good.begin(), good.end(), [&](auto *o) { return o->ms < c->ms; });
        printf("%s: the model's pick: %s, %.5f ms, %zu of %zu measured\n", p.label.c_str(), c->schedule.c_str(), c->ms,
               place, good.size());
    }
    std::vector<size_t> tops{1, 5, 20};
    if (p.top > 1 && std::find(tops.begin(), tops.end(), p.top) == tops.end()) tops.push_back(p.top);
    std::sort(tops.begin(), tops.end());
    for (size_t k : tops) {
        if (k > p.top) break;
        double fastest = INFINITY;
        for (const Candidate *c : good) {
            if (c->rank < k) fastest = std::min(fastest, c->ms);
        }
        if (std::isinf(fastest)) continue;
        double as_fast = 0;  // G: the weight of the candidates at least as fast
        for (const Candidate *c : good) {
            if (c->ms <= fastest) as_fast += c->weight;
        }
        printf("%s: model's top %zu reaches %.1f%% of the best; random search needs %.1f measurements on average "
               "to do as well\n",
               p.label.c_str(), k, 100.0 * best->ms / fastest, (space + 1) / (as_fast + 1));
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MANIFEST [--runs N]\n", argv[0]);
        return 2;
    }
    const std::string manifest = argv[1];
    int runs = 5;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--runs") runs = std::max(1, atoi(argv[i + 1]));
    }
#ifdef ALCOP_TUNE_CUDA
    if (!alcop::apps::cuda_driver()) {
        fprintf(stderr, "%s: no CUDA driver (libcuda.so) on this machine\n", argv[0]);
        return 2;
    }
#endif
    const std::string dir =
        manifest.substr(0, manifest.find_last_of('/') == std::string::npos ? 0 : manifest.find_last_of('/'));
    std::ifstream in(manifest);
    if (!in) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], manifest.c_str());
        return 2;
    }
    std::vector<Problem> problems;
    std::string line;
    while (std::getline(in, line)) {
        const std::vector<std::string> f = split(line, '\t');
        if (f[0] == "problem" && f.size() >= 7) {
            Problem p;
            p.id = f[1], p.kind = f[2], p.candidates = std::stoul(f[4]), p.top = std::stoul(f[5]), p.label = f[6];
            for (const std::string &s : split(f[3], ',')) p.sizes.push_back(std::stoi(s));
            problems.push_back(p);
        } else if (f[0] == "variant" && f.size() >= 8) {
            for (Problem &p : problems) {
                if (p.id == f[1]) {
                    p.measured.push_back({std::stoul(f[2]), std::stoul(f[3]), f[4], f[5], f[7], std::stod(f[6])});
                }
            }
        }
    }
#ifdef ALCOP_TUNE_CUDA
    printf("device\tCUDA\n");
#else
    printf("device\tOpenCL (without a GPU: pocl on the CPU, times are CPU emulation)\n");
#endif
    printf("# candidate\tproblem\trank\tweight\tpredicted_us\tmeasured_ms\tcheck\tschedule\n");
    std::mt19937 rng(1);
    bool ok = true;
    for (Problem &p : problems) {
        printf("problem\t%s\t%s\n", p.id.c_str(), p.label.c_str());
        ok = measure(p, dir.empty() ? "." : dir, runs, rng) && ok;
    }
    for (const Problem &p : problems) summarize(p);
    return ok ? 0 : 1;
}
