// A stand-in for libcuda.so with the entry points the opt-in test needs: with
// fake_device_present set, enough of them for Halide's CUDA runtime to create a context and
// load its module, whose load fails (so the pipeline fails cleanly, launching nothing). It
// records what it is asked.

#include <cstdint>
#include <cstring>

extern "C" {

int fake_device_present = 0, fake_init_calls = 0;
int fake_attribute = -1, fake_attribute_value = -1, fake_launch_shared_bytes = -1;
int fake_load_calls = 0, fake_load_options = -1, fake_load_first_option = -1, fake_load_first_value = -1;

constexpr int success = 0, no_device = 100, invalid_image = 200;  // cuda.h's CUresult values
static int fake_context;                                          // its address is the context

int cuInit(unsigned) {
    fake_init_calls++;
    return fake_device_present ? success : no_device;
}

int cuDeviceGetCount(int *count) {
    *count = 1;
    return success;
}

int cuDeviceGet(int *device, int) {
    *device = 0;
    return success;
}

int cuDeviceGetAttribute(int *value, int, int) {
    *value = 1;
    return success;
}

int cuDeviceGetName(char *name, int length, int) {
    strncpy(name, "fake", length);
    return success;
}

int cuDeviceTotalMem_v2(size_t *bytes, int) {
    *bytes = size_t(1) << 30;
    return success;
}

int cuCtxCreate_v2(void **context, unsigned, int) {
    *context = &fake_context;
    return success;
}

int cuCtxPushCurrent_v2(void *) {
    return success;
}

int cuCtxPopCurrent_v2(void **context) {
    if (context) *context = &fake_context;
    return success;
}

int cuCtxGetApiVersion(void *, unsigned *version) {
    *version = 3020;
    return success;
}

int cuCtxSynchronize() {
    return success;
}

int cuCtxDestroy_v2(void *) {
    return success;
}

int cuProfilerStop() {
    return success;
}

int cuMemAlloc_v2(uint64_t *pointer, size_t) {
    static uint64_t next = 1 << 20;
    *pointer = next;
    next += 1 << 20;
    return success;
}

int cuMemFree_v2(uint64_t) {
    return success;
}

int cuMemcpyHtoD_v2(uint64_t, const void *, size_t) {
    return success;
}

int cuFuncSetAttribute(void *, int attribute, int value) {
    fake_attribute = attribute;
    fake_attribute_value = value;
    return success;
}

int cuFuncGetAttribute(int *value, int attribute, void *) {
    // A kernel of 96 registers (CU_FUNC_ATTRIBUTE_NUM_REGS) that spills 16 bytes
    // (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES).
    *value = attribute == 4 ? 96 : attribute == 3 ? 16 : 0;
    return success;
}

int cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned shared_bytes, void *,
                   void **, void **) {
    fake_launch_shared_bytes = shared_bytes;
    return success;
}

int cuModuleLoadDataEx(void **module, const void *, unsigned num_options, int *options, void **values) {
    fake_load_calls++;
    fake_load_options = (int)num_options;
    fake_load_first_option = num_options ? options[0] : -1;
    fake_load_first_value = num_options ? (int)(uintptr_t)values[0] : -1;
    *module = nullptr;
    return invalid_image;
}
}
