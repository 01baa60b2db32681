// The registers a kernel is estimated to need against the limit its launch has
// (src/analysis/KernelRegisters.h, plan/ResourceLimits.h): Halide 14's CUDA runtime caps every
// kernel at 64 registers a thread, and ptxas spills the rest to local memory, so a kernel over
// the cap is a warning naming its Func, the estimate, the limit and the fix; one that declares
// the opt-in (limits=optin: alcop::Options::cuda_opt_in) is within 255 and says nothing.

#include "Halide.h"

#include "analysis/KernelRegisters.h"
#include "analysis/TensorCoreAnalysis.h"

#include <gtest/gtest.h>

using namespace Halide;
using namespace Halide::Internal;

namespace {

const char *const cuda = "host-cuda-cuda_capability_80";

/** What compiling the generator printed. */
std::string warnings_of(const std::string &name, const GeneratorParamsMap &params) {
    ::testing::internal::CaptureStderr();
    auto gen = GeneratorRegistry::create(name, GeneratorContext(Target(cuda)));
    gen->set_generator_param_values(params);
    gen->build_module(name);
    return ::testing::internal::GetCapturedStderr();
}

const std::string over = "registers per thread";

// The default fp16 GEMM (128 x 128 blocks, 64 x 64 warp tiles, k tile 32, 2 register stages):
// the model's fit is 255 registers (ptxas gives its kernels 240 and 254 at sm_80), four times
// the stock cap.
TEST(RegisterLimit, ATensorCoreKernelOverTheStockCapIsAWarningNamingTheFix) {
    const std::string w = warnings_of("gemm", {{"type", "f16"}});
    EXPECT_NE(w.find("alcop: the GPU kernel of out is estimated to need 255 registers per thread (255 for the tensor "
                     "cores of prod (a 64 x 64 warp tile, k tile 32, 2 register stages) and 0 words of per-thread "
                     "arrays), more than the limit of 64 (the default for CUDA: Halide 14's runtime caps every kernel "
                     "at that many registers per thread): ptxas would spill the rest to local memory"),
              std::string::npos)
        << w;
    EXPECT_NE(w.find("link HalideAlcop::cuda_opt_in (alcop/CudaOptIn.h), which lifts the cap to 255, and declare it "
                     "with alcop::Options::cuda_opt_in"),
              std::string::npos)
        << w;
}

// The default GEMM has two kernels of `out` (its whole-tile and partial-tile specializations),
// which share the kernel's name and the estimate: one warning, not the same line twice.
TEST(RegisterLimit, OneWarningForAFuncsSpecializations) {
    const std::string w = warnings_of("gemm", {{"type", "f16"}});
    const std::string line = "alcop: the GPU kernel of out is estimated to need";
    size_t count = 0;
    for (size_t at = w.find(line); at != std::string::npos; at = w.find(line, at + 1)) count++;
    EXPECT_EQ(count, 1u) << w;
}

TEST(RegisterLimit, TheOptInDeclaredIsQuiet) {
    const std::string w = warnings_of("gemm", {{"type", "f16"}, {"limits", "optin"}});
    EXPECT_EQ(w.find(over), std::string::npos) << w;
}

// SIMT: 8 x 8 accumulators and 8 + 8 fragment registers, with the model's 27 for addresses: 107
// (measured on an H200, such a kernel capped at 64 ran 10x slower). The 4 x 4 default needs 51.
TEST(RegisterLimit, AnFp32KernelIsEstimatedFromItsArrays) {
    const std::string wide = warnings_of(
        "gemm", {{"block_m", "128"}, {"block_n", "128"}, {"thread_m", "8"}, {"thread_n", "8"}, {"register_stages", "1"}});
    EXPECT_NE(wide.find("alcop: the GPU kernel of out is estimated to need 107 registers per thread (27 for addresses "
                        "and 80 words of per-thread arrays), more than the limit of 64"),
              std::string::npos)
        << wide;
    const std::string narrow = warnings_of("gemm", {{"register_stages", "1"}});
    EXPECT_EQ(narrow.find(over), std::string::npos) << narrow;
    const std::string opt_in = warnings_of("gemm", {{"block_m", "128"},
                                                    {"block_n", "128"},
                                                    {"thread_m", "8"},
                                                    {"thread_n", "8"},
                                                    {"register_stages", "1"},
                                                    {"limits", "optin"}});
    EXPECT_EQ(opt_in.find(over), std::string::npos) << opt_in;
}

TEST(RegisterLimit, AnUnknownLimitsValueIsAUserError) {
    try {
        warnings_of("gemm", {{"limits", "unlimited"}});
        ADD_FAILURE() << "limits=unlimited was accepted";
    } catch (const CompileError &e) {
        ::testing::internal::GetCapturedStderr();
        EXPECT_NE(std::string(e.what()).find("limits is \"unlimited\"; it takes \"\" (Halide 14's runtime) or \"optin\""),
                  std::string::npos)
            << e.what();
    }
}

TEST(RegisterLimit, AnAllocationsFuncIsItsNameWithoutHalidesNumber) {
    EXPECT_EQ(alcop::func_of_allocation("prod"), "prod");
    EXPECT_EQ(alcop::func_of_allocation("prod.0"), "prod");
    EXPECT_EQ(alcop::func_of_allocation("A_shared_in_prod$0.63"), "A_shared_in_prod$0");
    EXPECT_EQ(alcop::func_of_allocation("prod.x"), "prod.x");
    EXPECT_EQ(alcop::func_of_allocation("prod."), "prod.");
}

}  // namespace
