#ifndef ALCOP_TOOLS_VARIANT_BUILD_H
#define ALCOP_TOOLS_VARIANT_BUILD_H

// Building variants of a generator at run time, each through the generator executable in a
// subprocess, as add_halide_library does at build time:
//
//   <generator exe> -g <generator> -f <function> -n <function> -e object[,...] -o <dir>
//                   [-p plugin -s scheduler] target=<target>-no_runtime key=value ...
//   c++ -shared -o <dir>/<function>.so <dir>/<function>.o && rm <dir>/<function>.o
//
// The shared object holds the pipeline and nothing of Halide's runtime: the program that loads
// it (VariantLoad.h) provides one runtime for all the variants it loads. A failed build keeps
// its log, and every build has the one shell command line that repeats it.
//
// Needs a generator executable and a C++ compiler, not libHalide.

#include <string>
#include <vector>

namespace alcop {
namespace variants {

/** One variant: the generator, its GeneratorParams, and how to call it. */
struct Generation {
    std::string generator_exe;               ///< e.g. build/test/support/alcop_testing_gen
    std::string generator;                   ///< -g
    std::string function;                    ///< the pipeline's function name, and the files' base name
    std::string target;                      ///< e.g. host-opencl (no_runtime is added)
    std::vector<std::string> params;         ///< key=value GeneratorParams
    std::vector<std::string> env;            ///< KEY=VALUE set for the generator
    std::vector<std::string> plugins;        ///< -p (autoscheduler plugins)
    std::string autoscheduler;               ///< -s (needs auto_schedule=true in params)
    std::vector<std::string> extra_outputs;  ///< -e besides object (e.g. schedule, stmt)
};

struct Built {
    bool ok = false;
    std::string library;  ///< <dir>/<function>.so
    std::string log;      ///< <dir>/<function>.log: the generator's and the linker's output
    std::string command;  ///< the shell command line that builds it again
};

/** The shell command line that generates `g` into `dir` and links its shared object with `cxx`. */
std::string command_line(const Generation &g, const std::string &dir, const std::string &cxx);

/** Builds every generation into `dir` (created), `jobs` subprocesses at a time (0: one per
 * core). The results are in the order of `gens`. */
std::vector<Built> build_all(const std::vector<Generation> &gens, const std::string &dir, const std::string &cxx,
                             int jobs = 0);

/** The contents of a text file ("" if it cannot be read). */
std::string read_text(const std::string &path);

}  // namespace variants
}  // namespace alcop

#endif
