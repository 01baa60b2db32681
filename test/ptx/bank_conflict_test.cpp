// Shared-memory bank conflicts of the GEMM kernels, counted from their real index math after the
// ALCOP pass (src/analysis/BankConflicts.h): the gemm generator at its defaults and the GEMM the
// Alcop autoscheduler schedules (in-process, as its plugin would), both for CUDA sm_80. Every
// thread-dependent shared access (the copies' writes, the fragment reads) must be analyzable
// and conflict-free for warp 0; a conflicting layout fails with the accesses listed.

#include "Halide.h"

#include "alcop/Autoscheduler.h"

#include "analysis/BankConflicts.h"
#include "autoscheduler/AlcopAutoscheduler.h"
#include "directive/Requests.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace Halide;

namespace {

const Target sm80("host-cuda-cuda_capability_80");

/** The kernels of the Stmt the pass returned when `compile` lowered a pipeline. */
template<typename F>
std::vector<alcop::KernelBankConflicts> kernels_of(F compile) {
    Internal::Stmt after;
    alcop::set_lowering_observer([&](const Internal::Stmt &, const Internal::Stmt &a, const auto &) { after = a; });
    compile();
    alcop::set_lowering_observer(nullptr);
    return after.defined() ? alcop::find_bank_conflicts(after) : std::vector<alcop::KernelBankConflicts>{};
}

/** Each access and its cost, for the failure message. */
std::string describe(const std::vector<alcop::KernelBankConflicts> &kernels) {
    std::ostringstream os;
    for (const auto &k : kernels) {
        os << "kernel " << k.kernel << ": bank conflicts: " << k.conflicts() << ", unanalyzed " << k.unanalyzed << "\n";
        for (const auto &a : k.accesses) {
            os << "  " << (a.is_store ? "store " : "load ") << a.buffer << " " << a.access_bytes << "B at "
               << a.byte_address << ": " << a.cost.wavefronts << " wavefronts / " << a.cost.phases << " phases\n";
        }
    }
    return os.str();
}

void expect_conflict_free(const std::vector<alcop::KernelBankConflicts> &kernels) {
    ASSERT_FALSE(kernels.empty()) << "no kernel found";
    for (const auto &k : kernels) {
        std::cout << "kernel " << k.kernel << ": bank conflicts: " << k.conflicts() << " (" << k.accesses.size()
                  << " accesses, " << k.unanalyzed << " unanalyzed)\n";
        // A kernel with pipelined tiles reads and writes them: nothing analyzed would pass
        // vacuously.
        EXPECT_FALSE(k.accesses.empty()) << describe(kernels);
        EXPECT_EQ(k.unanalyzed, 0) << describe(kernels);
        EXPECT_EQ(k.conflicts(), 0) << describe(kernels);
    }
}

std::vector<alcop::KernelBankConflicts> gemm_kernels(const Internal::GeneratorParamsMap &params) {
    return kernels_of([&] {
        auto gen = Internal::GeneratorRegistry::create("gemm", GeneratorContext(sm80));
        gen->set_generator_param_values(params);
        gen->build_module("gemm");
    });
}

// The default tiles (64 x 64, 4 x 4 per thread, k tile 8) with register fragments, plain and
// pipelined: the fragments are the loads of the inner loop.
TEST(BankConflicts, DefaultGemmKernels) {
    expect_conflict_free(gemm_kernels({{"stages", "3"}, {"register_stages", "1"}}));
    expect_conflict_free(gemm_kernels({{"stages", "3"}, {"register_stages", "2"}}));
}

// 8 x 8 thread tiles, whose B fragments are two vectors 32 bytes apart per lane: B's slots get
// swizzled by windows, in 64- and 128-wide blocks, with plain and pipelined fragments.
TEST(BankConflicts, EightByEightThreadTiles) {
    for (const char *block : {"64", "128"}) {
        for (const char *r : {"1", "2"}) {
            SCOPED_TRACE(std::string("block ") + block + ", register_stages " + r);
            expect_conflict_free(gemm_kernels({{"block_m", block},
                                               {"block_n", block},
                                               {"thread_m", "8"},
                                               {"thread_n", "8"},
                                               {"stages", "3"},
                                               {"register_stages", r}}));
        }
    }
}

// --- Tensor-core tiles as users write them: block, warp and k tiles, register stages.

struct TensorCoreTiles {
    std::string type;
    int block, warp_m, warp_n, tile_k, register_stages;
};

void PrintTo(const TensorCoreTiles &t, std::ostream *os) {
    *os << t.type << " block " << t.block << " warp " << t.warp_m << "x" << t.warp_n << " k " << t.tile_k << " R"
        << t.register_stages;
}

/** Every combination the gemm generator accepts at CUDA's stock 48 KB of shared memory with 3
 * stages (2 register stages need 2 k steps of 16 per chunk). */
std::vector<TensorCoreTiles> tensor_core_tiles() {
    std::vector<TensorCoreTiles> all;
    for (const char *type : {"f16", "bf16"}) {
        for (int block : {64, 128}) {
            for (int warp_m : {32, 64}) {
                for (int warp_n : {32, 64}) {
                    for (int tile_k : {16, 32, 64}) {
                        for (int r : {1, 2}) {
                            const bool fits = 3 * 2 * block * tile_k * 2 <= 48 * 1024;
                            if (!fits || (r == 2 && tile_k < 32)) continue;
                            // bf16 shares the f16 layouts: a few of its tiles suffice.
                            if (std::string(type) == "bf16" && (warp_m != warp_n || r != 2)) continue;
                            all.push_back({type, block, warp_m, warp_n, tile_k, r});
                        }
                    }
                }
            }
        }
    }
    return all;
}

class TensorCoreTilesUsersWrite : public ::testing::TestWithParam<TensorCoreTiles> {};

// Each operand tile is swizzled for its rows (plan/Swizzle.h, for_rows) whatever threads copy
// it: with 32 x 32 warps in a 128 x 128 block, 512 threads copy A's 4096-byte slots in 16-byte
// vectors, so half of them do, under a guard on the thread index that the tile's bounds must
// see (it was left unswizzled, with 64 conflicts, before they did).
TEST_P(TensorCoreTilesUsersWrite, AreSwizzledAndConflictFree) {
    const TensorCoreTiles t = GetParam();
    testing::internal::CaptureStderr();
    const std::vector<alcop::KernelBankConflicts> kernels = gemm_kernels({{"type", t.type},
                                                                          {"block_m", std::to_string(t.block)},
                                                                          {"block_n", std::to_string(t.block)},
                                                                          {"warp_m", std::to_string(t.warp_m)},
                                                                          {"warp_n", std::to_string(t.warp_n)},
                                                                          {"tile_k", std::to_string(t.tile_k)},
                                                                          {"register_stages", std::to_string(t.register_stages)}});
    const std::string warned = testing::internal::GetCapturedStderr();
    EXPECT_EQ(warned.find("left unswizzled"), std::string::npos) << warned;
    expect_conflict_free(kernels);
}

INSTANTIATE_TEST_SUITE_P(Gemm, TensorCoreTilesUsersWrite, ::testing::ValuesIn(tensor_core_tiles()),
                         [](const auto &info) {
                             const TensorCoreTiles &t = info.param;
                             return t.type + "_b" + std::to_string(t.block) + "_w" + std::to_string(t.warp_m) + "x" +
                                    std::to_string(t.warp_n) + "_k" + std::to_string(t.tile_k) + "_r" +
                                    std::to_string(t.register_stages);
                         });

// A tile whose rows the swizzle cannot take is said, with the Func, its rows and why: a k tile of
// 48 makes A's rows 96 bytes (6 chunks), which share banks 2 ways under ldmatrix.
TEST(BankConflicts, AnOperandTileTheSwizzleCannotTakeIsAWarningNamingTheFunc) {
    testing::internal::CaptureStderr();
    const std::vector<alcop::KernelBankConflicts> kernels = gemm_kernels(
        {{"type", "f16"}, {"block_m", "64"}, {"block_n", "64"}, {"warp_m", "32"}, {"warp_n", "32"}, {"tile_k", "48"}});
    const std::string warned = testing::internal::GetCapturedStderr();
    EXPECT_NE(warned.find("alcop: the tensor-core operand tile A_shared (rows of 96 bytes) is left unswizzled, so its "
                          "ldmatrix reads are 2-way bank-conflicted: the swizzle takes rows of 32 or 64 bytes or a "
                          "multiple of 128"),
              std::string::npos)
        << warned;
    // What is left is ldmatrix reads, each 2-way (B's rows, 128 bytes, are swizzled), in both
    // kernels (whole tiles, partial tiles).
    ASSERT_EQ(kernels.size(), 2u);
    for (const alcop::KernelBankConflicts &k : kernels) {
        int a_conflicts = 0;
        for (const alcop::SharedAccess &a : k.accesses) {
            if (a.is_ldmatrix && a.cost.conflicts() > 0) {
                EXPECT_EQ(a.cost.wavefronts, 2 * a.cost.phases) << describe(kernels);
                a_conflicts += a.cost.conflicts();
            }
        }
        EXPECT_EQ(a_conflicts, k.conflicts()) << describe(kernels);
        EXPECT_GT(a_conflicts, 0) << k.kernel;
    }
}

std::vector<alcop::KernelBankConflicts> autoscheduled_gemm_kernels(bool benchmark) {
    ImageParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Var x("x"), y("y");
    RDom r(0, A.dim(0).extent(), "r");
    Func prod("prod"), out("out");
    prod(x, y) = 0.0f;
    prod(x, y) += A(r, y) * B(x, r);
    out(x, y) = prod(x, y);
    A.set_estimates({{0, 2048}, {0, 2048}});
    B.set_estimates({{0, 2048}, {0, 2048}});
    out.set_estimates({{0, 2048}, {0, 2048}});
    if (benchmark) {
        // As the CUDA benchmark builds it: the H200 with the opt-in limits, cp.async-aligned
        // operands (128 x 128 tiles, 8 x 8 per thread).
        for (ImageParam *in : {&A, &B}) {
            in->set_host_alignment(16);
            in->dim(0).set_min(0);
            in->dim(1).set_stride((in->dim(1).stride() / 4) * 4);
        }
        out.output_buffer().dim(0).set_min(0);
        alcop::autoscheduler::request_gpu(out, "H200");
        alcop::autoscheduler::request_limits(out, "optin");
    }
    Pipeline p(out);
    alcop::autoscheduler::Options options;
    std::ostringstream log;
    options.log = &log;
    alcop::autoscheduler::Result result = alcop::autoscheduler::autoschedule(p, sm80, options);
    EXPECT_TRUE(result.contraction.has_value()) << result.why_not;
    std::cout << log.str();
    return kernels_of([&] { p.compile_to_module({A, B}, "as_gemm", sm80); });
}

// Its choice for the sm_80 target at Halide's default limits, and the benchmark's.
TEST(BankConflicts, AutoscheduledGemmKernels) {
    expect_conflict_free(autoscheduled_gemm_kernels(false));
}

// Its 8 x 8 thread tile reads B's fragment as two 16-byte vectors at x = 8 tx, so lanes tx
// and tx + 4 of an 8-lane phase would share banks (256 and 512 conflicts in its two kernels):
// the rewrite swizzles B's slots by 128-byte windows (plan/Swizzle.h, for_windows).
TEST(BankConflicts, AutoscheduledBenchmarkGemmKernels) {
    expect_conflict_free(autoscheduled_gemm_kernels(true));
}

}  // namespace
