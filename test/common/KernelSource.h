#ifndef ALCOP_TEST_KERNEL_SOURCE_H
#define ALCOP_TEST_KERNEL_SOURCE_H

// What the PTX and IR tests read from a compiled module: the GPU kernels' source (PTX for CUDA
// targets, OpenCL C for OpenCL ones), and how often a piece of text occurs in it.

#include "Halide.h"

#include <cstring>
#include <string>

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

/** The occurrences of `what` in `text`, overlapping ones included. */
inline int count(const std::string &text, const std::string &what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return n;
}

}  // namespace kernel_source

#endif
