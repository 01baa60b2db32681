// The build phase of the tuning experiment (tools/alcop-tune): for a GEMM and a conv2d shape,
// the Alcop autoscheduler's candidates in its order of preference (the model's ranking of what
// the schedule can express, src/autoscheduler/Candidates.h), a sample of them (the model's top
// T and S more spread over the rest, one drawn in each of S equal strata of the ranks), each
// built through alcop_plain_gen with the plugin told to apply that candidate
// (ALCOP_AUTOSCHEDULER_CANDIDATE), and a manifest for the run phase (TuneRun.cpp), which needs
// neither Halide nor this machine.
//
// Each build is checked: the schedule the plugin wrote must name the candidate this tool
// expected at that rank (the in-process ranking and the plugin's agree).
//
//   alcop_tune_build --out DIR [--target host-opencl] [--size tiny|small|large] [--top T]
//                    [--sample S] [--seed N] [--jobs J] [key=value ...]
//
// key=value pairs go to both generators (e.g. gpu=H200 limits=optin aligned=true for the CUDA
// build, as the benchmark's autoscheduled variants). Manifest lines (tab-separated):
//   problem <id> <kind> <sizes, comma-separated> <candidates> <top> <label>
//   variant <id> <rank> <weight> <function> <library> <predicted us> <schedule>
// where weight is how many candidates of the space the variant stands for (1 in the top T).

#include "Halide.h"

#include "VariantBuild.h"
#include "autoscheduler/AlcopAutoscheduler.h"
#include "autoscheduler/Candidates.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

namespace {

using namespace alcop;
using alcop::variants::Built;
using alcop::variants::Generation;

struct Problem {
    std::string id, kind, generator, label;
    std::vector<std::pair<std::string, int>> sizes;  // the generator's estimates, in the manifest's order
};

std::vector<Problem> problems(const std::string &size) {
    if (size == "large") {
        return {{"gemm", "gemm", "as_gemm", "gemm 2048^3", {{"M", 2048}, {"N", 2048}, {"K", 2048}}},
                {"conv",
                 "conv2d",
                 "as_conv2d",
                 "conv 56x56x64->64 3x3 (N=8)",
                 {{"N", 8}, {"H", 56}, {"W", 56}, {"CI", 64}, {"CO", 64}}}};
    }
    if (size == "small") {
        return {{"gemm", "gemm", "as_gemm", "gemm 256^3", {{"M", 256}, {"N", 256}, {"K", 256}}},
                {"conv",
                 "conv2d",
                 "as_conv2d",
                 "conv 14x14x64->64 3x3",
                 {{"N", 1}, {"H", 14}, {"W", 14}, {"CI", 64}, {"CO", 64}}}};
    }
    return {
        {"gemm", "gemm", "as_gemm", "gemm 64x64x32", {{"M", 64}, {"N", 64}, {"K", 32}}},
        {"conv", "conv2d", "as_conv2d", "conv 6x6x8->16 3x3", {{"N", 1}, {"H", 6}, {"W", 6}, {"CI", 8}, {"CO", 16}}}};
}

/** The candidates in the plugin's order of preference, each with its predicted time. */
std::vector<std::pair<model::Schedule, double>> ranking(const Problem &p, const Halide::Target &target,
                                                        const std::vector<std::string> &extra) {
    Halide::GeneratorContext context(target);
    auto gen = Halide::Internal::GeneratorRegistry::create(p.generator, context);
    Halide::Internal::GeneratorParamsMap params;
    for (const auto &[k, v] : p.sizes) params[k] = std::to_string(v);
    for (const std::string &kv : extra) params[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    gen->set_generator_param_values(params);
    // Built once with Halide's default schedule, which is what makes a generator hand out its
    // Pipeline (as test/autoscheduler does); the autoscheduler then schedules it here.
    gen->build_module(p.generator);
    Halide::Pipeline pipeline = gen->get_pipeline();
    autoscheduler::Options options;
    std::ostringstream summary;
    options.log = &summary;
    const autoscheduler::Result r = autoscheduler::autoschedule(pipeline, target, options);
    std::cout << summary.str();
    if (!r.contraction) {
        fprintf(stderr, "alcop_tune_build: %s is not a contraction the plugin recognizes: %s\n", p.generator.c_str(),
                r.why_not.c_str());
        exit(1);
    }
    std::map<std::string, double> predicted;
    for (const model::Prediction &pr : r.search.ranked) predicted[pr.schedule.to_string()] = pr.total_us;
    const autoscheduler::Choice choice = autoscheduler::choose(*r.contraction, r.search, 0);
    std::vector<std::pair<model::Schedule, double>> ranked;
    for (const autoscheduler::Mapping &m : choice.preferred) ranked.emplace_back(m.s, predicted[m.s.to_string()]);
    return ranked;
}

struct Sampled {
    size_t rank;
    size_t weight;
};

/** The top `top` ranks and one rank drawn in each of `sample` equal strata of the rest. */
std::vector<Sampled> sample_ranks(size_t n, size_t top, size_t sample, std::mt19937 &rng) {
    std::vector<Sampled> s;
    for (size_t r = 0; r < std::min(top, n); r++) s.push_back({r, 1});
    if (n <= top) return s;
    const size_t rest = n - top, strata = std::min(sample, rest);
    for (size_t j = 0; j < strata; j++) {
        const size_t lo = top + j * rest / strata, hi = top + (j + 1) * rest / strata;
        s.push_back({lo + rng() % (hi - lo), hi - lo});
    }
    return s;
}

std::string chosen_in(const std::string &schedule_source) {
    const std::string tag = "// Chosen: ";
    const size_t at = schedule_source.find(tag);
    if (at == std::string::npos) return "";
    const size_t from = at + tag.size();
    return schedule_source.substr(from, schedule_source.find(',', from) - from);
}

}  // namespace

int main(int argc, char **argv) {
    std::string out, target_string = "host-opencl", size = "tiny";
    size_t top = 20, sample = 300;
    int seed = 1, jobs = 0;
    std::vector<std::string> extra;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                fprintf(stderr, "alcop_tune_build: %s needs a value\n", a.c_str());
                exit(2);
            }
            return argv[++i];
        };
        if (a == "--out")
            out = next();
        else if (a == "--target")
            target_string = next();
        else if (a == "--size")
            size = next();
        else if (a == "--top")
            top = std::stoul(next());
        else if (a == "--sample")
            sample = std::stoul(next());
        else if (a == "--seed")
            seed = std::stoi(next());
        else if (a == "--jobs")
            jobs = std::stoi(next());
        else if (a.find('=') != std::string::npos)
            extra.push_back(a);
        else {
            fprintf(stderr,
                    "usage: %s --out DIR [--target T] [--size tiny|small|large] [--top T] [--sample S] [--seed N] "
                    "[--jobs J] [key=value ...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (out.empty()) {
        fprintf(stderr, "alcop_tune_build: --out DIR is required\n");
        return 2;
    }
    const Halide::Target target(target_string);
    std::mt19937 rng(seed);

    std::vector<Generation> gens;
    std::vector<std::string> expected;
    std::ostringstream manifest;
    std::vector<std::string> variant_lines;
    for (const Problem &p : problems(size)) {
        const auto ranked = ranking(p, target, extra);
        const std::vector<Sampled> picked = sample_ranks(ranked.size(), top, sample, rng);
        std::string sizes;
        for (const auto &[k, v] : p.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(v);
        manifest << "problem\t" << p.id << "\t" << p.kind << "\t" << sizes << "\t" << ranked.size() << "\t"
                 << std::min(top, ranked.size()) << "\t" << p.label << "\n";
        printf("%s: %zu candidates, building %zu (the top %zu and %zu spread over the rest)\n", p.label.c_str(),
               ranked.size(), picked.size(), std::min(top, ranked.size()),
               picked.size() - std::min(top, ranked.size()));
        for (const Sampled &s : picked) {
            Generation g;
            g.generator_exe = ALCOP_PLAIN_GEN;
            g.generator = p.generator;
            g.function = "tune_" + p.id + "_r" + std::to_string(s.rank);
            g.target = target_string;
            for (const auto &[k, v] : p.sizes) g.params.push_back(k + "=" + std::to_string(v));
            g.params.insert(g.params.end(), extra.begin(), extra.end());
            g.params.push_back("auto_schedule=true");
            g.env = {"ALCOP_AUTOSCHEDULER_CANDIDATE=" + std::to_string(s.rank)};
            g.plugins = {ALCOP_PLUGIN};
            g.autoscheduler = "Alcop";
            g.extra_outputs = {"schedule"};
            gens.push_back(g);
            const std::string schedule = ranked[s.rank].first.to_string();
            expected.push_back(schedule);
            char predicted[32];
            snprintf(predicted, sizeof(predicted), "%.3f", ranked[s.rank].second);
            variant_lines.push_back("variant\t" + p.id + "\t" + std::to_string(s.rank) + "\t" +
                                    std::to_string(s.weight) + "\t" + g.function + "\t" + g.function + ".so\t" +
                                    predicted + "\t" + schedule + "\n");
        }
    }

    const std::vector<Built> built = alcop::variants::build_all(gens, out, ALCOP_CXX, jobs);
    int failed = 0;
    for (size_t i = 0; i < built.size(); i++) {
        std::string why;
        if (!built[i].ok) {
            why = "build failed (log: " + built[i].log + ")";
        } else {
            const std::string chosen =
                chosen_in(alcop::variants::read_text(out + "/" + gens[i].function + ".schedule.h"));
            if (chosen != expected[i]) why = "the plugin applied " + chosen + ", not " + expected[i];
        }
        if (why.empty()) {
            manifest << variant_lines[i];
        } else {
            failed++;
            fprintf(stderr, "%s: %s\n  %s\n", gens[i].function.c_str(), why.c_str(), built[i].command.c_str());
        }
    }
    std::ofstream(out + "/manifest.txt") << manifest.str();
    printf("built %zu variants into %s (%d failed); run them with alcop_tune_run %s/manifest.txt\n",
           built.size() - failed, out.c_str(), failed, out.c_str());
    return failed ? 1 : 0;
}
