#include "SharedMemoryOptIn.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace alcop::apps {

namespace {

// The driver API types and values used here, as in CUDA 13's cuda.h (CUresult and
// CUfunction_attribute are enums, CUfunction and CUstream opaque pointers).
using CUresult = int;
using CUfunction = void *;
using CUstream = void *;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;  // cuda.h:994
constexpr unsigned default_dynamic_shared_limit = 48 * 1024;

using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void **, void **);
using FuncSetAttribute = CUresult (*)(CUfunction, int, int);

LaunchKernel driver_launch = nullptr;
FuncSetAttribute driver_set_attribute = nullptr;
std::atomic<int> opted_in{0};

CUresult launch_with_opt_in(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra) {
    if (shared_bytes > default_dynamic_shared_limit) {
        // Setting the attribute is cheap and idempotent; doing it at every such launch keeps
        // no per-kernel state. A failure (above the device's maximum) is reported by the
        // launch itself, with the driver's own error.
        driver_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared_bytes);
        opted_in++;
    }
    return driver_launch(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

}  // namespace

void *cuda_driver() {
    static void *lib = []() -> void * {
        if (const char *path = getenv("ALCOP_LIBCUDA")) return dlopen(path, RTLD_LAZY);
        void *l = dlopen("libcuda.so.1", RTLD_LAZY);
        return l ? l : dlopen("libcuda.so", RTLD_LAZY);
    }();
    return lib;
}

int opted_in_launches() {
    return opted_in;
}

}  // namespace alcop::apps

// Replaces the Halide runtime's weak definition (src/runtime/cuda.cpp in Halide 14).
extern "C" void *halide_cuda_get_symbol(void *, const char *name) {
    using namespace alcop::apps;
    void *lib = cuda_driver();
    if (!lib) return nullptr;
    void *symbol = dlsym(lib, name);
    if (symbol && strcmp(name, "cuLaunchKernel") == 0) {
        driver_launch = (LaunchKernel)symbol;
        driver_set_attribute = (FuncSetAttribute)dlsym(lib, "cuFuncSetAttribute");
        // Without cuFuncSetAttribute (drivers before CUDA 9) the plain launch is all there is.
        return driver_set_attribute ? (void *)&launch_with_opt_in : symbol;
    }
    return symbol;
}
