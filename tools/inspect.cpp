// alcop_inspect: lowers a generator in-process and shows what the ALCOP pass did.
//
//   alcop_inspect file.ptx      (the main loops of any PTX)
//   alcop_inspect file.sass     (the same in a SASS listing: nvdisasm or cuobjdump -sass)
//   alcop_inspect file.o        (each PTX module of a compiled file: object, library, executable)
//   alcop_inspect [-l generators.so ...] <generator> [target=<halide target>] [param=value ...]
//                 [--stmt] [--ptx DIR] [--sass] [-s Scheduler] [-p plugin.so]
//
// The generators are the project's (gemm, bmm, conv2d, the plain contractions) and those of
// each `-l` module: a user's shared library of generators (add_library(... MODULE ...) linking
// HalideAlcop::HalideAlcop), loaded before the generator is looked up. This executable exports
// its symbols, so a module's calls into the library reach the pass, the observers and the
// autoscheduler of this process, which the report reads.
//
// Prints what alcop::inspect reports (alcop/Inspect.h): the requests and auto_pipeline's
// choices, the pipelined loop before and after the pass, each kernel's bank conflicts, and for
// CUDA each kernel's main loop and its ptxas registers; --stmt adds the Stmt before and after
// the pass, --ptx DIR writes the PTX to DIR/<generator>.ptx, --sass counts each main loop in the
// SASS too (where nvdisasm is found; also after file.ptx). The plain contractions (as_gemm,
// as_bmm, as_conv2d) are built in, and the Alcop autoscheduler runs in-process: with
// `auto_schedule=true`, the kernels it gives them.

#include "Halide.h"

#include "alcop/Inspect.h"
#include "autoscheduler/AlcopAutoscheduler.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <iostream>

using namespace Halide;
using namespace Halide::Internal;

namespace {

bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = strlen(suffix);
    return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

/** The report on a file instead of a generator: a PTX module of any origin (a peer's kernel,
 * nvcc's output), the SASS listing of a cubin (nvdisasm, cuobjdump -sass), or a compiled file
 * with Halide's CUDA kernels (an object, a library, an executable), each of its PTX modules in
 * turn, written to `ptx_dir` where given. */
int inspect_file(const std::string &path, bool sass, const std::string &ptx_dir) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in) {
        std::cerr << "cannot read " << path << "\n";
        return 1;
    }
    if (ends_with(path, ".sass")) {
        const std::string report = alcop::inspect_sass(bytes);
        if (report.empty()) {
            std::cerr << path << ": no kernel found (no function: not a listing of nvdisasm or cuobjdump -sass)\n";
            return 1;
        }
        std::cout << report;
        return 0;
    }
    const bool ptx_file = ends_with(path, ".ptx");
    const std::vector<std::string> modules = ptx_file ? std::vector<std::string>{bytes} : alcop::embedded_ptx(bytes);
    if (modules.empty()) {
        std::cerr << path << ": no PTX module found (Halide's CUDA kernels keep their PTX as text in what "
                  << "links them; this file has none)\n";
        return 1;
    }
    const std::string stem = std::filesystem::path(path).filename().string();
    for (size_t m = 0; m < modules.size(); m++) {
        if (!ptx_file) {
            std::cout << "=== PTX module " << m + 1 << " of " << modules.size() << " in " << path << " ===\n";
        }
        const std::string report = alcop::inspect_ptx(modules[m], sass);
        if (report.empty()) {
            std::cerr << path << ": no kernel found (no .entry: not a PTX module)\n";
            return 1;
        }
        std::cout << report;
        if (!ptx_file && !ptx_dir.empty()) {
            std::cout << alcop::write_ptx(ptx_dir, stem + "." + std::to_string(m + 1) + ".ptx", modules[m]) << "\n";
        }
    }
    return 0;
}

/** The forms of the command line (as the file comment gives them), and the generators built in. */
void usage(std::ostream &os, const char *argv0) {
    os << "usage: " << argv0
       << " [-l generators.so ...] <generator> [target=T] [param=value ...] [--stmt] [--ptx DIR] [--sass] "
          "[--verbose] [-s Scheduler] [-p plugin.so]\n"
       << "       " << argv0 << " file.ptx|file.sass|file.o [--sass] [--ptx DIR]\n"
       << "generators:";
    for (const auto &g : GeneratorRegistry::enumerate()) os << " " << g;
    os << "\n";
}

int inspect_main(int argc, char **argv) {
    if (argc < 2) {
        usage(std::cerr, argv[0]);
        return 1;
    }
    if (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
        usage(std::cout, argv[0]);
        return 0;
    }
    // Modules of generators first: their static initializers register them with Halide.
    int first = 1;
    while (first + 1 < argc && std::string(argv[first]) == "-l") {
        if (!dlopen(argv[first + 1], RTLD_NOW | RTLD_GLOBAL)) {
            std::cerr << "cannot load " << argv[first + 1] << ": " << dlerror() << "\n";
            return 1;
        }
        first += 2;
    }
    if (first >= argc) {
        std::cerr << "usage: " << argv[0] << " [-l generators.so ...] <generator> [target=T] [param=value ...]\n";
        return 1;
    }
    const std::string generator = argv[first];
    // `auto_schedule=true` runs the Alcop autoscheduler in this process (its lowering pass is
    // then this tool's, which the observers below see), unless -s names another.
    alcop::autoscheduler::register_with_halide();
    Pipeline::set_default_autoscheduler_name("Alcop");
    Target target("host-opencl");
    GeneratorParamsMap params;
    bool print_stmt = false, list_accesses = false, sass = false, target_given = false;
    std::string ptx_dir;
    for (int i = first + 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--stmt") {
            print_stmt = true;
            continue;
        }
        if (arg == "--sass") {
            sass = true;
            continue;
        }
        if (arg == "--verbose" || arg == "-v") {
            list_accesses = true;
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
            target_given = true;
        } else {
            params[arg.substr(0, eq)] = arg.substr(eq + 1);
        }
    }

    const std::vector<std::string> known = GeneratorRegistry::enumerate();
    const bool is_generator = std::find(known.begin(), known.end(), generator) != known.end();
    if (ends_with(generator, ".ptx") || ends_with(generator, ".sass") ||
        (!is_generator && std::filesystem::is_regular_file(generator))) {
        if (!params.empty() || target_given || print_stmt || list_accesses) {
            std::cerr << "alcop_inspect " << generator << ": a file takes --sass and --ptx DIR only\n";
            return 1;
        }
        return inspect_file(generator, sass, ptx_dir);
    }
    if (!is_generator) {
        std::cerr << "no generator " << generator << " (load a module of yours with -l); generators:";
        for (const std::string &g : known) std::cerr << " " << g;
        std::cerr << "\n";
        return 1;
    }
    auto gen = GeneratorRegistry::create(generator, GeneratorContext(target));
    gen->set_generator_param_values(params);
    alcop::InspectOptions options;
    options.print_stmt = print_stmt;
    options.ptx_dir = ptx_dir;
    options.list_conflicting_accesses = list_accesses;
    options.sass = sass;
    const std::string report =
        alcop::inspect(generator, target, [&]() { return gen->build_module(generator); }, options);
    std::cout << report;
    return report.find("the ALCOP pass of this process did not lower") == std::string::npos ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
    // A generator's user errors (a bad GeneratorParam, a schedule the pass rejects) are
    // Halide::CompileError: printed as Halide prints them, and the exit status says so, where
    // uncaught they would end in std::terminate.
    try {
        return inspect_main(argc, argv);
    } catch (const Halide::Error &e) {
        const std::string message = e.what();
        std::cerr << message << (message.empty() || message.back() != '\n' ? "\n" : "");
        return 1;
    }
}
