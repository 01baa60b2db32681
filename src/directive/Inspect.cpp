#include "alcop/Inspect.h"

#include "analysis/BankConflicts.h"
#include "analysis/MainLoop.h"
#include "analysis/PipelineHazards.h"
#include "analysis/PipelineSummary.h"
#include "directive/Requests.h"
#include "plan/AutoPipeline.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace alcop {

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

/** Runs `script` (sh) with $PTX naming a temporary file that holds `ptx` and $CUBIN a
 * temporary path beside it; returns its exit status, its output in *out. */
int run_on_ptx(const std::string &ptx, const std::string &script, std::string *out) {
    const char *tmp = getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/alcop_inspect_XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) {
        *out = "no temporary file";
        return -1;
    }
    close(fd);
    std::ofstream(path) << ptx;
    const std::string cmd = "PTX='" + path + "' CUBIN='" + path + ".cubin'; export PATH=$PATH:/usr/local/cuda/bin; { " +
                            script + "; } 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    char line[4096];
    out->clear();
    while (p && fgets(line, sizeof line, p)) *out += line;
    const int status = p ? pclose(p) : -1;
    std::remove(path.c_str());
    std::remove((path + ".cubin").c_str());
    return status;
}

struct Assembled {
    int registers = -1, spill_bytes = -1;
};

/** What ptxas -v says of each kernel of `ptx` for `arch`; empty, with the reason in *why, where
 * ptxas is not found (PATH, then /usr/local/cuda/bin) or rejects the PTX. */
std::map<std::string, Assembled> assemble(const std::string &ptx, const std::string &arch, std::string *why) {
    std::string log;
    const int status = run_on_ptx(ptx,
                                  "command -v ptxas >/dev/null || { echo 'ptxas: not found'; exit 127; }; "
                                  "ptxas -v -arch=" +
                                      arch + " \"$PTX\" -o /dev/null",
                                  &log);
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

/** The SASS listing of `ptx` for `arch`, assembled by the ptxas beside nvdisasm (PATH, then
 * /usr/local/cuda/bin): a disassembler reads the cubins of its own CUDA release and older ones,
 * not a newer ptxas's. The release in *release; "" with the reason in *why (the tool's first
 * line of output: what is missing, or why ptxas rejected the PTX) where there is no such pair
 * or it fails. */
std::string disassemble(const std::string &ptx, const std::string &arch, std::string *release, std::string *why) {
    std::string out;
    const int status =
        run_on_ptx(ptx,
                   "nv=$(command -v nvdisasm) || { echo 'nvdisasm not found (PATH, /usr/local/cuda/bin)'; exit 127; }; "
                   "as=$(dirname \"$nv\")/ptxas; [ -x \"$as\" ] || { echo \"no ptxas beside $nv\"; exit 126; }; "
                   "\"$as\" -arch=" +
                       arch +
                       " \"$PTX\" -o \"$CUBIN\" && "
                       "\"$as\" --version | sed -n 's/.*release \\([0-9.]*\\).*/ptxas release \\1/p' && "
                       "\"$nv\" -c \"$CUBIN\"",
                   &out);
    if (status != 0) {
        *why = out.substr(0, out.find('\n'));
        return "";
    }
    const size_t eol = out.find('\n');
    const std::string first = out.substr(0, eol);
    *release = first.rfind("ptxas release ", 0) == 0 ? first.substr(14) : "?";
    return out;
}

/** The Funcs of `requests` without Halide's uniquifying suffixes, by level. */
void split_by_level(const std::map<std::string, PipelineRequest> &requests, std::set<std::string> *shared,
                    std::set<std::string> *fragments, std::ostream &os) {
    os << "requests:";
    for (const auto &r : requests) {
        const std::string base = r.first.substr(0, r.first.find('$'));
        (r.second.level == Level::Shared ? *shared : *fragments).insert(base);
        os << " " << base << "(stages " << r.second.stages << ", " << to_string(r.second.level) << ")";
    }
    os << "\n";
}

}  // namespace

std::string inspect_ptx(const std::string &ptx, bool sass) {
    std::ostringstream os;
    const std::vector<MainLoopReport> loops = main_loops(ptx);
    if (loops.empty()) return "";
    const std::vector<std::string> archs{"sm_80", "sm_90"};
    std::map<std::string, std::map<std::string, Assembled>> by_arch;
    std::string why;
    for (const std::string &arch : archs) {
        by_arch[arch] = assemble(ptx, arch, &why);
    }
    // Each kernel's main loop in the machine code too, where asked and a disassembler is found.
    std::map<std::string, std::map<std::string, MainLoopReport>> sass_by_arch;
    std::string release, why_no_sass;
    for (const std::string &arch : sass ? archs : std::vector<std::string>{}) {
        const std::string listing = disassemble(ptx, arch, &release, &why_no_sass);
        if (!why_no_sass.empty()) break;
        for (const MainLoopReport &r : main_loops_sass(listing)) sass_by_arch[arch][r.kernel] = r;
    }
    for (const MainLoopReport &r : loops) {
        os << to_string(r) << "\n";
        if (why.empty()) {
            os << "  ptxas:";
            for (const auto &[arch, kernels] : by_arch) {
                auto k = kernels.find(r.kernel);
                if (k == kernels.end()) continue;
                os << " " << arch << " " << k->second.registers << " registers, " << k->second.spill_bytes
                   << " bytes spilled;";
            }
            os << "\n";
        }
        for (const auto &[arch, kernels] : sass_by_arch) {
            auto k = kernels.find(r.kernel);
            if (k != kernels.end()) {
                os << "  SASS " << arch << " (ptxas " << release << "): " << describe_iteration(k->second) << "\n";
            }
        }
    }
    if (!why.empty()) os << "registers not reported: " << why << "\n";
    if (!why_no_sass.empty()) os << "SASS not reported: " << why_no_sass << "\n";
    return os.str();
}

std::vector<std::string> embedded_ptx(const std::string &bytes) {
    // LLVM's NVPTX backend heads each module with this comment, after a line of "//".
    const std::string header = "// Generated by LLVM NVPTX Back-End", rule = "//\n";
    std::vector<std::string> modules;
    for (size_t at = bytes.find(header); at != std::string::npos; at = bytes.find(header, at)) {
        const bool ruled = at >= rule.size() && bytes.compare(at - rule.size(), rule.size(), rule) == 0;
        const size_t begin = ruled ? at - rule.size() : at;
        const size_t end = std::min(bytes.find('\0', at), bytes.size());
        modules.push_back(bytes.substr(begin, end - begin));
        at = end;
    }
    return modules;
}

std::string write_ptx(const std::string &dir, const std::string &file, const std::string &ptx) {
    // Create the folder as a user naming a new one expects; say so where writing fails rather
    // than claim a file that is not there.
    std::error_code ignored;
    std::filesystem::create_directories(dir, ignored);
    const std::string path = dir + "/" + file;
    std::ofstream out(path);
    out << ptx;
    out.close();
    return (out ? "PTX written to " : "PTX not written: cannot write ") + path;
}

std::string inspect_sass(const std::string &listing) {
    std::ostringstream os;
    for (const MainLoopReport &r : main_loops_sass(listing)) os << to_string(r) << "\n";
    return os.str();
}

namespace {

/** "kernel K: hazards: N" per kernel, over the sizes of hazard_check_extents(), each also with
 * the sizes the pipeline's specializations fix or round up (specialized_sizes: the branches
 * they select run only there), and the first few hazards found. */
std::string hazards_report(const Stmt &s) {
    const SpecializedSizes fixed = specialized_sizes(s);
    std::map<std::string, std::vector<KernelHazards>> by_kernel;
    for (KernelHazards &k : find_pipeline_hazards_at(s, hazard_check_extents(), fixed)) {
        by_kernel[k.kernel].push_back(std::move(k));
    }
    const std::string fixed_text = fixed.empty() ? "" : " with " + fixed.to_string();
    std::ostringstream os;
    for (const auto &[kernel, runs] : by_kernel) {
        size_t hazards = 0;
        int truncated = 0;
        std::vector<std::string> unchecked;
        // The runs at extents the first two dimensions alone take, those every one takes, and
        // those with the specialized sizes.
        std::string partial, whole, with_fixed;
        for (const KernelHazards &k : runs) {
            hazards += k.hazards.size();
            truncated = std::max(truncated, k.truncated_loops);
            const std::string extent = std::to_string(k.extent);
            if (!k.checked)
                unchecked.push_back("extent " + extent + (k.specialized ? fixed_text : "") + ": " + k.reason);
            (k.specialized                                ? with_fixed :
             hazard_check_extent(k.extent, 2) == k.extent ? whole :
                                                            partial) += " " + extent;
        }
        os << "kernel " << kernel << ": hazards: " << hazards << " (block 0, buffers of extent";
        if (!partial.empty()) {
            os << partial << " in dimensions 0 and 1, " << other_dimensions_extent << " in the others";
        }
        if (!whole.empty()) os << (partial.empty() ? "" : ", and") << whole << " in every dimension";
        if (!with_fixed.empty()) os << (partial.empty() && whole.empty() ? "" : "; and") << with_fixed << fixed_text;
        os << (truncated ? "; loops of more than 12 trips run 12" : "") << ")\n";
        for (const std::string &u : unchecked) {
            os << "  not checked at " << u << "\n";
        }
        int listed = 0;
        for (const KernelHazards &k : runs) {
            for (const PipelineHazard &h : k.hazards) {
                if (listed++ < 4) {
                    os << "  extent " << k.extent << (k.specialized ? fixed_text : "") << ": " << h.to_string() << "\n";
                }
            }
        }
    }
    return os.str();
}

}  // namespace

std::string inspect(const std::string &name, const Target &target, const std::function<Module()> &compile,
                    const InspectOptions &options) {
    Stmt before, after;
    std::map<std::string, PipelineRequest> requests;
    set_lowering_observer([&](const Stmt &b, const Stmt &a, const auto &r) {
        before = b;
        after = a;
        requests = r;
    });
    std::string auto_report;
    set_auto_pipeline_observer([&](const AutoReport &r) { auto_report += r.to_string(); });
    Module module(name, target);
    try {
        module = compile();
    } catch (...) {
        set_lowering_observer(nullptr);
        set_auto_pipeline_observer(nullptr);
        throw;
    }
    set_lowering_observer(nullptr);
    set_auto_pipeline_observer(nullptr);

    std::ostringstream os;
    os << "=== " << name << " for " << target.to_string() << " ===\n";
    if (!after.defined()) {
        os << "the ALCOP pass of this process did not lower " << name
           << " (nothing enabled it, or a plugin's own copy of the library did)\n";
        return os.str();
    }
    if (options.print_stmt) {
        os << "=== before the ALCOP pass ===\n" << before << "\n=== after ===\n" << after << "\n";
    }
    std::set<std::string> shared, fragments;
    split_by_level(requests, &shared, &fragments, os);
    os << auto_report;
    os << "before: " << describe(summarize_pipeline(before, shared))
       << "after:  " << describe(summarize_pipeline(after, shared));
    if (!fragments.empty()) {
        // The register level: the step loop is unrolled, so its fragment loads are counted per
        // iteration of the streaming loop.
        PipelineSummary f = summarize_pipeline(after, fragments);
        os << "register level (fragments, step loop unrolled by the pass):\n";
        for (const auto &c : f.loop_copies) {
            os << "  " << c.first << ": " << f.prologue_copies[c.first] << " fragment load(s) before " << f.loop << ", "
               << c.second << " per iteration (" << f.guarded_loop[c.first] << " of the next chunk, guarded)\n";
        }
    }
    // Bank conflicts of warp 0 at the first iteration of every loop, per access, summed per
    // kernel; on request each conflicting access is listed, so that the layout can be fixed.
    for (const KernelBankConflicts &k : find_bank_conflicts(after)) {
        os << "kernel " << k.kernel << ": bank conflicts: " << k.conflicts() << " (" << k.accesses.size()
           << " thread-dependent shared accesses analyzed, " << k.unanalyzed << " not)\n";
        const int conflicting = std::count_if(k.accesses.begin(), k.accesses.end(),
                                              [](const SharedAccess &a) { return a.cost.conflicts() > 0; });
        if (conflicting && !options.list_conflicting_accesses) {
            os << "  " << conflicting << " accesses with conflicts (alcop_inspect --verbose lists them)\n";
            continue;
        }
        for (const SharedAccess &a : k.accesses) {
            if (a.cost.conflicts() > 0) {
                os << "  " << (a.is_store ? "store " : "load ") << a.buffer << " " << a.access_bytes
                   << " bytes/lane at byte " << a.byte_address << ": " << a.cost.wavefronts << " wavefronts in "
                   << a.cost.phases << " phases\n";
            }
        }
    }
    // Read-after-write and write-after-read hazards on shared memory, block 0 of each kernel
    // run thread by thread at a few sizes.
    os << hazards_report(after);
    // The steady-state loop of each CUDA kernel, counted in its PTX (and its SASS, on request).
    const std::string ptx = ptx_of(module);
    os << inspect_ptx(ptx, options.sass);
    if (ptx.empty() && options.sass) os << "SASS not reported: the target is not CUDA\n";
    if (!options.ptx_dir.empty()) {
        if (ptx.empty()) {
            os << "no PTX: the target is not CUDA\n";
        } else {
            os << write_ptx(options.ptx_dir, name + ".ptx", ptx) << "\n";
        }
    }
    return os.str();
}

std::string inspect(Pipeline p, const std::vector<Argument> &args, const Target &target,
                    const InspectOptions &options) {
    return inspect(
        "pipeline", target, [&]() { return p.compile_to_module(args, "pipeline", target); }, options);
}

}  // namespace alcop
