// apps/common/CudaOptIn: the Halide CUDA runtime of an app that links it asks it for the
// driver's entry points; a launch above 48 KB of dynamic shared memory raises the kernel's
// limit first, and modules load without the runtime's 64-register cap. The driver is a fake
// (fake_cuda_driver.cpp) that records its calls.

#include "CudaOptInRecording.h"
#include "alcop/CudaOptIn.h"
#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "HalideRuntimeCuda.h"
#include "gemm_cuda_s1.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>

extern "C" void *halide_cuda_get_symbol(void *user_context, const char *name);

namespace {

using Launch = int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
                       void **);

int &fake(const char *name) {
    return *(int *)dlsym(alcop::apps::cuda_driver(), name);
}

// Runs a CUDA pipeline against the fake: it gets as far as loading its module, which fails.
int run_pipeline() {
    halide_set_error_handler([](void *, const char *) {});
    Halide::Runtime::Buffer<float> a(8, 8), b(8, 8), out(8, 8);
    a.fill(1.0f);
    b.fill(1.0f);
    return gemm_cuda_s1(a, b, out);
}

// Each test starts from the state of a fresh process, whatever ran before it (--gtest_shuffle,
// --gtest_repeat): no device, no CUDA context in the Halide runtime (which creates one once and
// keeps it, calling cuInit only then), no recording, no register cap asked for. The fake's call
// counters and the wrapper's counters are compared before and after, not reset.
class CudaOptIn : public ::testing::Test {
protected:
    void SetUp() override {
        if (fake("fake_device_present")) {
            halide_device_release(nullptr, halide_cuda_device_interface());
        }
        fake("fake_device_present") = 0;
        alcop::apps::record_kernel_resources(false);
        unsetenv("HL_CUDA_JIT_MAX_REGISTERS");
    }
};

TEST_F(CudaOptIn, LaunchesAbove48KBRaiseTheKernelsLimitFirst) {
    ASSERT_NE(alcop::apps::cuda_driver(), nullptr) << dlerror();
    Launch launch = (Launch)halide_cuda_get_symbol(nullptr, "cuLaunchKernel");
    ASSERT_NE(launch, nullptr);
    EXPECT_NE((void *)launch, dlsym(alcop::apps::cuda_driver(), "cuLaunchKernel")) << "the launch is not wrapped";

    fake("fake_attribute") = -1;
    EXPECT_EQ(launch(nullptr, 1, 1, 1, 256, 1, 1, 16 * 1024, nullptr, nullptr, nullptr), 0);
    EXPECT_EQ(fake("fake_attribute"), -1) << "a launch within the default limit needs no attribute";
    EXPECT_EQ(fake("fake_launch_shared_bytes"), 16 * 1024);

    const int before = alcop::apps::opted_in_launches();
    EXPECT_EQ(launch(nullptr, 1, 1, 1, 256, 1, 1, 96 * 1024, nullptr, nullptr, nullptr), 0);
    EXPECT_EQ(fake("fake_attribute"), 8);  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    EXPECT_EQ(fake("fake_attribute_value"), 96 * 1024);
    EXPECT_EQ(fake("fake_launch_shared_bytes"), 96 * 1024);
    EXPECT_EQ(alcop::apps::opted_in_launches(), before + 1);

    // Every other entry point is the driver's own.
    EXPECT_EQ(halide_cuda_get_symbol(nullptr, "cuInit"), dlsym(alcop::apps::cuda_driver(), "cuInit"));
}

TEST_F(CudaOptIn, RecordsTheLaunchedKernelsResources) {
    Launch launch = (Launch)halide_cuda_get_symbol(nullptr, "cuLaunchKernel");
    ASSERT_NE(launch, nullptr);
    const int unrecorded = alcop::apps::recorded_kernel_resources().launches;
    launch(nullptr, 1, 1, 1, 256, 1, 1, 1024, nullptr, nullptr, nullptr);
    EXPECT_EQ(alcop::apps::recorded_kernel_resources().launches, unrecorded) << "recording is off until asked for";

    alcop::apps::record_kernel_resources(true);
    launch(nullptr, 1, 1, 1, 256, 1, 1, 64 * 1024, nullptr, nullptr, nullptr);
    launch(nullptr, 1, 1, 1, 256, 1, 1, 1024, nullptr, nullptr, nullptr);
    alcop::apps::record_kernel_resources(false);
    launch(nullptr, 1, 1, 1, 256, 1, 1, 100 * 1024, nullptr, nullptr, nullptr);
    const alcop::apps::KernelResources r = alcop::apps::recorded_kernel_resources();
    EXPECT_EQ(r.launches, 2);
    EXPECT_EQ(r.max_registers, 96);  // what the fake reports
    EXPECT_EQ(r.max_local_bytes, 16);
    EXPECT_EQ(r.max_dynamic_shared, 64 * 1024);
}

TEST_F(CudaOptIn, TheHalideRuntimeAsksIt) {
    // A CUDA pipeline's first device call loads the driver through halide_cuda_get_symbol:
    // the fake's cuInit is called (and reports no device, so the pipeline fails cleanly).
    const int calls = fake("fake_init_calls");
    EXPECT_NE(run_pipeline(), 0);
    EXPECT_GT(fake("fake_init_calls"), calls);
}

TEST_F(CudaOptIn, ModulesLoadWithoutTheRuntimesRegisterCap) {
    // Halide 14's runtime asks the driver for at most 64 registers per thread; the wrapper
    // drops that, so the driver gives a kernel what it needs.
    fake("fake_device_present") = 1;
    const int loads = fake("fake_load_calls");
    EXPECT_NE(run_pipeline(), 0) << "the fake's module load fails";
    ASSERT_EQ(fake("fake_load_calls"), loads + 1) << "the runtime did not get as far as loading its module";
    EXPECT_EQ(alcop::apps::dropped_register_cap(), 64) << "the runtime's cap, as Halide 14 sets it";
    EXPECT_EQ(fake("fake_load_options"), 0) << "the driver still got the register cap";
}

TEST_F(CudaOptIn, KeepsTheCapTheUserAsksFor) {
    setenv("HL_CUDA_JIT_MAX_REGISTERS", "80", 1);
    fake("fake_device_present") = 1;
    const int loads = fake("fake_load_calls");
    EXPECT_NE(run_pipeline(), 0);
    ASSERT_EQ(fake("fake_load_calls"), loads + 1);
    EXPECT_EQ(fake("fake_load_options"), 1);
    EXPECT_EQ(fake("fake_load_first_option"), 0);  // CU_JIT_MAX_REGISTERS
    EXPECT_EQ(fake("fake_load_first_value"), 80);
}

}  // namespace

int main(int argc, char **argv) {
    setenv("ALCOP_LIBCUDA", ALCOP_FAKE_CUDA_DRIVER, 1);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
