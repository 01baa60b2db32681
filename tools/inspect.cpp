// alcop_inspect: lowers one of our generators in-process and shows what the ALCOP pass did.
//
//   alcop_inspect file.ptx      (the main loops of any PTX)
//   alcop_inspect <generator> [target=<halide target>] [param=value ...] [--stmt] [--ptx DIR]
//                 [-s Scheduler] [-p plugin.so]
//
// Prints a summary of the pipelined loop (stages, slots, copies by kind, guards, barriers) and,
// per kernel, a line `bank conflicts: N` counted from the index math of its shared-memory
// accesses after the pass (src/analysis/BankConflicts.h); with --stmt also the Stmt before and
// after the pass; with --ptx (CUDA targets) writes the kernels' PTX to DIR/<generator>.ptx. For
// CUDA targets it also reports each kernel's main loop, counted in its PTX
// (src/analysis/MainLoop.h), and its registers and spills as ptxas assembles it for sm_80 and
// sm_90 (when ptxas is found, in PATH or /usr/local/cuda/bin; else it says so). The plain contractions
// (as_gemm, as_bmm, as_conv2d) are built in too, and the Alcop autoscheduler runs in-process:
// with `auto_schedule=true`, the kernels it gives them. With a generator that calls
// alcop::auto_pipeline (e.g. `alcop_inspect gemm auto_pipeline=true`) it also prints the
// automatic choice: each candidate, its stages and predicted gain, or why it was left as it is.

#include "Halide.h"

#include "analysis/BankConflicts.h"
#include "analysis/MainLoop.h"
#include "autoscheduler/AlcopAutoscheduler.h"
#include "directive/Requests.h"
#include "plan/AutoPipeline.h"
#include "PipelineSummary.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <unistd.h>

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The module's PTX (CUDA targets keep it in a buffer); "" for other targets. */
std::string ptx_of(const Module &module) {
    std::string ptx;
    for (const Buffer<> &b : module.buffers()) {
        if (b.name().find("gpu_source_kernels") != std::string::npos) {
            ptx.assign((const char *)b.data(), strnlen((const char *)b.data(), b.size_in_bytes()));
        }
    }
    return ptx.find(".entry") == std::string::npos ? "" : ptx;
}

// Writes the module's PTX to DIR/<generator>.ptx.
void write_ptx(const std::string &ptx, const std::string &generator, const std::string &dir) {
    if (ptx.empty()) {
        std::cout << "no PTX: the target is not CUDA\n";
        return;
    }
    const std::string path = dir + "/" + generator + ".ptx";
    std::ofstream(path) << ptx;
    std::cout << "PTX written to " << path << "\n";
}

struct Assembled {
    int registers = -1, spill_bytes = -1;
};

/** What ptxas -v says of each kernel of `ptx` for `arch`; empty, with the reason in *why, where
 * ptxas is not found (PATH, then /usr/local/cuda/bin) or rejects the PTX. */
std::map<std::string, Assembled> assemble(const std::string &ptx, const std::string &arch, std::string *why) {
    const char *tmp = getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/alcop_inspect_XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) {
        *why = "no temporary file for ptxas";
        return {};
    }
    close(fd);
    std::ofstream(path) << ptx;
    const std::string cmd = "PATH=$PATH:/usr/local/cuda/bin; command -v ptxas >/dev/null || { echo 'ptxas: not found'; "
                            "exit 127; }; ptxas -v -arch=" +
                            arch + " " + path + " -o /dev/null 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    char line[1024];
    std::string log;
    while (p && fgets(line, sizeof line, p)) log += line;
    const int status = p ? pclose(p) : -1;
    std::remove(path.c_str());
    if (status != 0) {
        *why = log.find("ptxas: not found") != std::string::npos ? "ptxas not found (PATH, /usr/local/cuda/bin)"
                                                                : "ptxas failed: " + log;
        return {};
    }
    std::map<std::string, Assembled> kernels;
    std::string kernel;
    std::istringstream lines(log);
    std::smatch m;
    for (std::string l; std::getline(lines, l);) {
        if (std::regex_search(l, m, std::regex("Compiling entry function '([^']+)'"))) kernel = m[1];
        if (std::regex_search(l, m, std::regex("(\\d+) bytes spill stores"))) kernels[kernel].spill_bytes = std::stoi(m[1]);
        if (std::regex_search(l, m, std::regex("Used (\\d+) registers"))) kernels[kernel].registers = std::stoi(m[1]);
    }
    return kernels;
}

/** Each kernel's main loop (src/analysis/MainLoop.h), and its registers and spills as ptxas
 * assembles it for sm_80 and sm_90. */
void report_main_loops(const std::string &ptx) {
    const std::vector<alcop::MainLoopReport> loops = alcop::main_loops(ptx);
    if (loops.empty()) return;
    std::map<std::string, std::map<std::string, Assembled>> by_arch;
    std::string why;
    for (const char *arch : {"sm_80", "sm_90"}) {
        by_arch[arch] = assemble(ptx, arch, &why);
    }
    for (const alcop::MainLoopReport &r : loops) {
        std::cout << alcop::to_string(r) << "\n";
        if (!why.empty()) continue;
        std::cout << "  ptxas:";
        for (const auto &[arch, kernels] : by_arch) {
            auto k = kernels.find(r.kernel);
            if (k == kernels.end()) continue;
            std::cout << " " << arch << " " << k->second.registers << " registers, " << k->second.spill_bytes
                      << " bytes spilled;";
        }
        std::cout << "\n";
    }
    if (!why.empty()) std::cout << "registers not reported: " << why << "\n";
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::cerr << "usage: " << argv[0] << " <generator> [target=T] [param=value ...] [--stmt]\n"
                  << "generators:";
        for (const auto &g : GeneratorRegistry::enumerate()) std::cerr << " " << g;
        std::cerr << "\n";
        return 1;
    }
    const std::string generator = argv[1];
    if (generator.size() > 4 && generator.compare(generator.size() - 4, 4, ".ptx") == 0) {
        // A PTX file of any origin (a peer's kernel, nvcc's output): its main loops alone.
        std::ifstream in(generator);
        const std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in) {
            std::cerr << "cannot read " << generator << "\n";
            return 1;
        }
        report_main_loops(ptx);
        return 0;
    }
    // `auto_schedule=true` runs the Alcop autoscheduler in this process (its lowering pass is
    // then this tool's, which the observers below see), unless -s names another.
    alcop::autoscheduler::register_with_halide();
    Pipeline::set_default_autoscheduler_name("Alcop");
    Target target("host-opencl");
    GeneratorParamsMap params;
    bool print_stmt = false;
    std::string ptx_dir;
    for (int i = 2; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--stmt") {
            print_stmt = true;
            continue;
        }
        if (arg == "--ptx" && i + 1 < argc) {
            ptx_dir = argv[++i];
            continue;
        }
        // As the generator executables take them: a plugin to load (another autoscheduler than
        // Alcop, which is built in) and the scheduler that `auto_schedule=true` runs.
        if (arg == "-p" && i + 1 < argc) {
            const std::string plugin = argv[++i];
            if (plugin.find("autoschedule_alcop") != std::string::npos) {
                std::cerr << "alcop_inspect: the Alcop autoscheduler is built in; " << plugin << " is not loaded\n";
            } else {
                load_plugin(plugin);
            }
            continue;
        }
        if (arg == "-s" && i + 1 < argc) {
            Pipeline::set_default_autoscheduler_name(argv[++i]);
            continue;
        }
        const size_t eq = arg.find('=');
        if (eq == std::string::npos) {
            std::cerr << "bad argument: " << arg << "\n";
            return 1;
        }
        if (arg.substr(0, eq) == "target") {
            target = Target(arg.substr(eq + 1));
        } else {
            params[arg.substr(0, eq)] = arg.substr(eq + 1);
        }
    }

    Stmt before, after;
    std::map<std::string, alcop::PipelineRequest> requests;
    alcop::set_lowering_observer([&](const Stmt &b, const Stmt &a, const auto &r) {
        before = b;
        after = a;
        requests = r;
    });
    // With alcop::auto_pipeline (e.g. auto_pipeline=true), what the policy chose and why.
    std::string auto_report;
    alcop::set_auto_pipeline_observer([&](const alcop::AutoReport &r) { auto_report += r.to_string(); });
    auto gen = GeneratorRegistry::create(generator, GeneratorContext(target));
    gen->set_generator_param_values(params);
    Module module = gen->build_module(generator);
    alcop::set_lowering_observer(nullptr);
    alcop::set_auto_pipeline_observer(nullptr);
    if (!after.defined()) {
        std::cerr << "the ALCOP pass of this process did not lower " << generator
                  << " (a plugin's own copy of the library did, or nothing enabled it)\n";
        return 1;
    }

    if (print_stmt) {
        std::cout << "=== before the ALCOP pass ===\n" << before << "\n=== after ===\n" << after << "\n";
    }
    std::set<std::string> shared, fragments;
    std::cout << "=== " << generator << " for " << target.to_string() << " ===\nrequests:";
    for (const auto &r : requests) {
        const std::string base = r.first.substr(0, r.first.find('$'));
        (r.second.level == alcop::Level::Shared ? shared : fragments).insert(base);
        std::cout << " " << base << "(stages " << r.second.stages << ", " << alcop::to_string(r.second.level) << ")";
    }
    if (!auto_report.empty()) std::cout << "\n" << auto_report;
    std::cout << "\nbefore: " << alcop::describe(alcop::summarize_pipeline(before, shared))
              << "after:  " << alcop::describe(alcop::summarize_pipeline(after, shared));
    if (!fragments.empty()) {
        // The register level: the step loop is unrolled, so its fragment loads are counted
        // per iteration of the streaming loop.
        alcop::PipelineSummary f = alcop::summarize_pipeline(after, fragments);
        std::cout << "register level (fragments, step loop unrolled by the pass):\n";
        for (const auto &c : f.loop_copies) {
            std::cout << "  " << c.first << ": " << f.prologue_copies[c.first] << " fragment load(s) before " << f.loop
                      << ", " << c.second << " per iteration (" << f.guarded_loop[c.first]
                      << " of the next chunk, guarded)\n";
        }
    }
    // Bank conflicts of warp 0 at the first iteration of every loop, per access, summed per
    // kernel; each conflicting access is listed so that the layout can be fixed.
    for (const alcop::KernelBankConflicts &k : alcop::find_bank_conflicts(after)) {
        std::cout << "kernel " << k.kernel << ": bank conflicts: " << k.conflicts() << " (" << k.accesses.size()
                  << " thread-dependent shared accesses analyzed, " << k.unanalyzed << " not)\n";
        for (const alcop::SharedAccess &a : k.accesses) {
            if (a.cost.conflicts() > 0) {
                std::cout << "  " << (a.is_store ? "store " : "load ") << a.buffer << " " << a.access_bytes
                          << " bytes/lane at byte " << a.byte_address << ": " << a.cost.wavefronts << " wavefronts in "
                          << a.cost.phases << " phases\n";
            }
        }
    }
    // The steady-state loop of each CUDA kernel, counted in its PTX (src/analysis/MainLoop.h).
    const std::string ptx = ptx_of(module);
    report_main_loops(ptx);
    if (!ptx_dir.empty()) {
        write_ptx(ptx, generator, ptx_dir);
    }
    return 0;
}
