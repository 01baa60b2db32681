// apps/common/SharedMemoryOptIn: the Halide CUDA runtime of an app that links it asks it for
// the driver's entry points, and a launch above 48 KB of dynamic shared memory raises the
// kernel's limit first. The driver is a fake (fake_cuda_driver.cpp) that records its calls.

#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "SharedMemoryOptIn.h"
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

TEST(SharedMemoryOptIn, LaunchesAbove48KBRaiseTheKernelsLimitFirst) {
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

TEST(SharedMemoryOptIn, TheHalideRuntimeAsksIt) {
    // A CUDA pipeline's first device call loads the driver through halide_cuda_get_symbol:
    // the fake's cuInit is called (and reports no device, so the pipeline fails cleanly).
    halide_set_error_handler([](void *, const char *) {});
    Halide::Runtime::Buffer<float> a(8, 8), b(8, 8), out(8, 8);
    a.fill(1.0f);
    b.fill(1.0f);
    const int calls = fake("fake_init_calls");
    EXPECT_NE(gemm_cuda_s1(a, b, out), 0);
    EXPECT_GT(fake("fake_init_calls"), calls);
}

}  // namespace

int main(int argc, char **argv) {
    setenv("ALCOP_LIBCUDA", ALCOP_FAKE_CUDA_DRIVER, 1);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
