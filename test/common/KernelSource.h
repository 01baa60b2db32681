#ifndef ALCOP_TEST_KERNEL_SOURCE_H
#define ALCOP_TEST_KERNEL_SOURCE_H

// What the PTX and IR tests read from a compiled module: the GPU kernels' source (PTX for CUDA
// targets, OpenCL C for OpenCL ones), and how often a piece of text occurs in it.

#include "Halide.h"
#include "Ptxas.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

/** Where the build found no ptxas (CMake's ALCOP_PTXAS; Debian 12 has none: it comes with
 * CUDA's toolkit, README), a test that assembles the PTX it checked skips that part, visibly:
 * it is reported skipped, with why, and ctest counts it among the tests that did not run. The
 * checks on the PTX text before it still run. */
#define ALCOP_SKIP_ASSEMBLING(what) \
    GTEST_SKIP() << "ptxas not found when the build was configured: " << what << " not assembled (the PTX was checked as text)"

namespace kernel_source {

/** The device code Halide embeds in `m` ("" when it has none). */
inline std::string of(const Halide::Module &m) {
    for (const Halide::Buffer<> &b : m.buffers()) {
        if (b.name().find("gpu_source_kernels") != std::string::npos) {
            return std::string((const char *)b.data(), strnlen((const char *)b.data(), b.size_in_bytes()));
        }
    }
    return "";
}

/** The device code of the registered generator `generator` built for `target` with `params`. */
/** `params` with the `key=value` words of `text` (a variant's PARAMS as CMake lists them,
 * space-separated) added, each replacing what was there. */
inline Halide::Internal::GeneratorParamsMap with_params(Halide::Internal::GeneratorParamsMap params,
                                                        const std::string &text) {
    std::istringstream in(text);
    for (std::string kv; in >> kv;) {
        const size_t eq = kv.find('=');
        params[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return params;
}

inline std::string of_generator(const std::string &generator, const std::string &target,
                                const Halide::Internal::GeneratorParamsMap &params) {
    auto gen = Halide::Internal::GeneratorRegistry::create(generator, Halide::GeneratorContext(Halide::Target(target)));
    gen->set_generator_param_values(params);
    return of(gen->build_module(generator));
}

/** The CompileError (a user error) building that variant raises, printed; "" when it builds. */
inline std::string error_of(const std::string &generator, const std::string &target,
                            const Halide::Internal::GeneratorParamsMap &params) {
    try {
        of_generator(generator, target, params);
    } catch (const Halide::CompileError &e) {
        std::printf("%s", e.what());
        return e.what();
    }
    return "";
}

/** The occurrences of `what` in `text`, overlapping ones included. */
inline int count(const std::string &text, const std::string &what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return n;
}

/** The src-size operands of the cp.async of `bytes` bytes in `ptx` (`instruction [dst], [src],
 * bytes, %r;`): how many are the constant `bytes` (LLVM keeps it in a register set by one
 * `mov.u32`), and the registers of the others, which are computed: a zero fill (a tail, conv2d's
 * padding) or the tile's existence (the predicated prefetch past the loop's end). */
struct SrcSizes {
    int constant = 0;
    std::vector<std::string> computed;  ///< one per copy, in order
    /** The distinct computed registers: one per step where only the tile's existence is. */
    size_t distinct() const {
        return std::set<std::string>(computed.begin(), computed.end()).size();
    }
};

inline SrcSizes src_sizes(const std::string &ptx, const std::string &instruction, int bytes) {
    const std::regex copy(instruction + R"( \[%r\d+\], \[%rd\d+\], )" + std::to_string(bytes) + R"(, (%r\d+);)");
    SrcSizes sizes;
    for (auto m = std::sregex_iterator(ptx.begin(), ptx.end(), copy); m != std::sregex_iterator(); ++m) {
        if (count(ptx, "mov.u32 \t" + (*m)[1].str() + ", " + std::to_string(bytes) + ";") == 1) {
            sizes.constant++;
        } else {
            sizes.computed.push_back((*m)[1].str());
        }
    }
    return sizes;
}

/** A kernel of a PTX module: its name and its text, from its .entry to the next one. */
struct Kernel {
    std::string name, text;
};

/** The kernels of the PTX `ptx`, in order. */
inline std::vector<Kernel> kernels(const std::string &ptx) {
    std::vector<Kernel> result;
    for (size_t at = ptx.find(".entry "); at != std::string::npos;) {
        const size_t name = at + strlen(".entry "), next = ptx.find(".entry ", at + 1);
        result.push_back({ptx.substr(name, ptx.find('(', name) - name), ptx.substr(at, next - at)});
        at = next;
    }
    return result;
}

}  // namespace kernel_source

#endif
