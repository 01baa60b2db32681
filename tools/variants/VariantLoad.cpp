#include "VariantLoad.h"

#include <dlfcn.h>

#include <vector>

namespace alcop {
namespace variants {

std::unique_ptr<Variant> Variant::load(const std::string &library, const std::string &function, std::string *error) {
    // RTLD_NOW: an unresolved runtime symbol (a program that does not export its runtime) is
    // an error here, not a crash at the first call. RTLD_LOCAL: variants do not see each other.
    void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        if (error) *error = dlerror();
        return nullptr;
    }
    auto v = std::make_unique<Variant>();
    v->function_ = function;
    v->argv_ = (int (*)(void **))dlsym(handle, (function + "_argv").c_str());
    using MetadataFn = const halide_filter_metadata_t *(*)();
    MetadataFn metadata = (MetadataFn)dlsym(handle, (function + "_metadata").c_str());
    if (!v->argv_ || !metadata) {
        if (error) *error = library + " has no " + function + "_argv or " + function + "_metadata";
        return nullptr;
    }
    v->metadata_ = metadata();
    return v;
}

int Variant::run(const std::map<std::string, halide_buffer_t *> &buffers, std::string *error) const {
    // The argv entry point takes a buffer argument as the halide_buffer_t pointer itself.
    std::vector<void *> args;
    for (int i = 0; i < metadata_->num_arguments; i++) {
        const halide_filter_argument_t &a = metadata_->arguments[i];
        auto it = buffers.find(a.name);
        if (a.kind == halide_argument_kind_input_scalar || it == buffers.end()) {
            if (error) *error = function_ + ": no buffer given for its argument " + a.name;
            return -1;
        }
        args.push_back(it->second);
    }
    return argv_(args.data());
}

}  // namespace variants
}  // namespace alcop
