// A stand-in for libcuda.so with the three entry points the opt-in test needs. It records
// what it is asked and launches nothing.

extern "C" {

int fake_attribute = -1, fake_attribute_value = -1, fake_launch_shared_bytes = -1, fake_init_calls = 0;

int cuInit(unsigned) {
    fake_init_calls++;
    return 100;  // CUDA_ERROR_NO_DEVICE
}

int cuFuncSetAttribute(void *, int attribute, int value) {
    fake_attribute = attribute;
    fake_attribute_value = value;
    return 0;
}

int cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned shared_bytes, void *,
                   void **, void **) {
    fake_launch_shared_bytes = shared_bytes;
    return 0;
}
}
