#ifndef ALCOP_TOOLS_VARIANT_LOAD_H
#define ALCOP_TOOLS_VARIANT_LOAD_H

// Loading the variants VariantBuild.h builds and calling them: dlopen of the shared object,
// then the pipeline's `<function>_argv` entry point with its arguments found by name in
// `<function>_metadata`. Needs neither libHalide nor a compiler, so a program that only runs
// variants (built elsewhere) carries to a GPU machine without Halide.
//
// The variants hold no Halide runtime: the loading program links one (the runtime object of
// an add_halide_library target for the variants' target) and exports its symbols (CMake
// ENABLE_EXPORTS, -rdynamic), so that every variant it loads shares it (one device context).
// A variant is never unloaded: the runtime keeps pointers into its static state (its compiled
// kernels) until the device is released.

#include "HalideRuntime.h"

#include <map>
#include <memory>
#include <string>

namespace alcop {
namespace variants {

class Variant {
public:
    /** Loads `function` from the shared object `library`; nullptr, with `error` set, when it
     * cannot (no such file, unresolved runtime symbols, no such function). */
    static std::unique_ptr<Variant> load(const std::string &library, const std::string &function, std::string *error);

    /** Calls the pipeline with each buffer argument bound by name (e.g. A, B, out); returns
     * its status, or -1 (with `error` set) when an argument is missing or not a buffer. */
    int run(const std::map<std::string, halide_buffer_t *> &buffers, std::string *error = nullptr) const;

    const halide_filter_metadata_t &metadata() const {
        return *metadata_;
    }
    const std::string &function() const {
        return function_;
    }

private:
    std::string function_;
    int (*argv_)(void **) = nullptr;
    const halide_filter_metadata_t *metadata_ = nullptr;
};

}  // namespace variants
}  // namespace alcop

#endif
