#include "alcop/CudaOptIn.h"
#include "CudaOptInRecording.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace alcop::apps {

namespace {

// The driver API types and values used here, as in CUDA 13's cuda.h (CUresult,
// CUfunction_attribute and CUjit_option are enums; CUfunction, CUmodule and CUstream opaque
// pointers).
using CUresult = int;
using CUfunction = void *;
using CUmodule = void *;
using CUstream = void *;
constexpr int CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;               // cuda.h:951
constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;                       // cuda.h:956
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;  // cuda.h:994
constexpr int CU_JIT_MAX_REGISTERS = 0;                             // cuda.h:1159
constexpr unsigned default_dynamic_shared_limit = 48 * 1024;

using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void **, void **);
using FuncSetAttribute = CUresult (*)(CUfunction, int, int);
using FuncGetAttribute = CUresult (*)(int *, int, CUfunction);
using ModuleLoadDataEx = CUresult (*)(CUmodule *, const void *, unsigned, int *, void **);

LaunchKernel driver_launch = nullptr;
FuncSetAttribute driver_set_attribute = nullptr;
FuncGetAttribute driver_get_attribute = nullptr;
ModuleLoadDataEx driver_load_module = nullptr;
std::atomic<int> opted_in{0};
std::atomic<int> dropped_cap{0};

std::mutex recording_mutex;
std::atomic<bool> recording{false};  // read at every launch, without the lock
KernelResources recorded;

void record(CUfunction f, unsigned shared_bytes) {
    int regs = 0, local_bytes = 0;
    if (!driver_get_attribute || driver_get_attribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != 0 ||
        driver_get_attribute(&local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) != 0) {
        regs = local_bytes = 0;
    }
    std::lock_guard<std::mutex> lock(recording_mutex);
    recorded.launches++;
    recorded.max_registers = std::max(recorded.max_registers, regs);
    recorded.max_local_bytes = std::max(recorded.max_local_bytes, local_bytes);
    recorded.max_dynamic_shared = std::max(recorded.max_dynamic_shared, (int)shared_bytes);
}

CUresult launch_with_opt_in(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared_bytes, CUstream stream, void **params, void **extra) {
    if (shared_bytes > default_dynamic_shared_limit) {
        // Setting the attribute is cheap and idempotent; doing it at every such launch keeps
        // no per-kernel state. A failure (above the device's maximum) is reported by the
        // launch itself, with the driver's own error.
        driver_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared_bytes);
        opted_in++;
    }
    if (recording) record(f, shared_bytes);
    return driver_launch(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

CUresult load_module_uncapped(CUmodule *module, const void *image, unsigned num_options, int *options, void **values) {
    // The runtime's only option is its register cap (Halide 14, src/runtime/cuda.cpp,
    // compile_kernel); one the user asked for through HL_CUDA_JIT_MAX_REGISTERS stays.
    if (getenv("HL_CUDA_JIT_MAX_REGISTERS")) return driver_load_module(module, image, num_options, options, values);
    std::vector<int> kept_options;
    std::vector<void *> kept_values;
    for (unsigned i = 0; i < num_options; i++) {
        if (options[i] == CU_JIT_MAX_REGISTERS) {
            dropped_cap = (int)(uintptr_t)values[i];
        } else {
            kept_options.push_back(options[i]);
            kept_values.push_back(values[i]);
        }
    }
    return driver_load_module(module, image, (unsigned)kept_options.size(), kept_options.data(), kept_values.data());
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

int dropped_register_cap() {
    return dropped_cap;
}

void record_kernel_resources(bool on) {
    std::lock_guard<std::mutex> lock(recording_mutex);
    if (on) recorded = KernelResources();
    recording = on;
}

KernelResources recorded_kernel_resources() {
    std::lock_guard<std::mutex> lock(recording_mutex);
    return recorded;
}

}  // namespace alcop::apps

// Replaces the Halide runtime's weak definition (src/runtime/cuda.cpp in Halide 14).
extern "C" void *halide_cuda_get_symbol(void *, const char *name) {
    using namespace alcop::apps;
    void *lib = cuda_driver();
    if (!lib) return nullptr;
    void *symbol = dlsym(lib, name);
    if (!symbol) return nullptr;
    if (strcmp(name, "cuLaunchKernel") == 0) {
        driver_launch = (LaunchKernel)symbol;
        driver_set_attribute = (FuncSetAttribute)dlsym(lib, "cuFuncSetAttribute");
        driver_get_attribute = (FuncGetAttribute)dlsym(lib, "cuFuncGetAttribute");
        // Without cuFuncSetAttribute (drivers before CUDA 9) the plain launch is all there is.
        return driver_set_attribute ? (void *)&launch_with_opt_in : symbol;
    }
    if (strcmp(name, "cuModuleLoadDataEx") == 0) {
        driver_load_module = (ModuleLoadDataEx)symbol;
        return (void *)&load_module_uncapped;
    }
    return symbol;
}
