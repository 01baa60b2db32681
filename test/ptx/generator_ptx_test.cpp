// The GEMM's PTX on sm_80 / sm_86: cp.async copies, one commit group per stage, the wait
// before the barrier, no copy left as ld.global + st.shared; and ptxas assembles it with no
// spills. On sm_75 (no cp.async) the copies are staged through registers instead.

#include "Halide.h"

#include "ContractionSchedule.h"
#include "KernelSource.h"
#include "alcop/Alcop.h"

#include "alcop/Inspect.h"
#include "analysis/PipelineSummary.h"
#include "directive/Requests.h"
#include "model/CostModel.h"
#include "model/GpuSpec.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

using namespace Halide;
using namespace Halide::Internal;

namespace {

std::string ptx_of(const std::string &generator, const std::string &target, const GeneratorParamsMap &params) {
    return kernel_source::of_generator(generator, target, params);
}

using kernel_source::count;

struct Ptxas {
    bool ran = false;
    int registers = -1, spill_bytes = -1, shared_bytes = -1;
    std::string log;
};

Ptxas assemble(const std::string &ptx, const std::string &arch) {
    Ptxas r;
#ifdef ALCOP_PTXAS
    int status = -1;
    r.log = ptxas::run(ptx, arch, "generator", &status);
    r.ran = status == 0;
    std::smatch m;
    if (std::regex_search(r.log, m, std::regex("Used (\\d+) registers"))) r.registers = std::stoi(m[1]);
    if (std::regex_search(r.log, m, std::regex("(\\d+) bytes spill stores"))) r.spill_bytes = std::stoi(m[1]);
    // Halide's shared memory is dynamic, so ptxas reports only static shared memory.
    r.shared_bytes = std::regex_search(r.log, m, std::regex("(\\d+) bytes smem")) ? std::stoi(m[1]) : 0;
#endif
    return r;
}

/** A local array or a spill: ld/st.local, or a __local_depot (which generic loads may address). */
bool uses_local_memory(const std::string &ptx) {
    return count(ptx, "ld.local") + count(ptx, "st.local") + count(ptx, "__local_depot") > 0;
}

/** What is wrong with the PTX of a cp.async pipeline of `stages` stages (default tiles: each
 * thread copies one 16-byte vector of A and one of B per stage; with register fragments A's
 * tile is transposed, and each thread copies two 4-byte elements of it instead); empty when
 * nothing is. */
std::vector<std::string> async_pipeline_problems(const std::string &ptx, int stages, bool a_transposed = false) {
    std::vector<std::string> problems;
    auto expect = [&](bool ok, const std::string &what) {
        if (!ok) problems.push_back(what);
    };
    expect(count(ptx, "alcop_cp_async") == 0, "a marker survived");
    // The prologue has stages - 1 steps and the loop one, each a commit group.
    expect(count(ptx, "cp.async.cg.shared.global") == (a_transposed ? 1 : 2) * stages,
           "not one cp.async per vector and step");
    expect(count(ptx, "cp.async.ca.shared.global [%r") == (a_transposed ? 2 : 0) * stages,
           "not one 4-byte cp.async per element of A and step");
    expect(count(ptx, "cp.async.commit_group") == stages, "not one commit group per step");
    // Each tile is published by a wait for all but the newest stages - 2 groups, right followed
    // (no branch or copy in between) by a barrier: after the prologue and in the loop.
    const std::string wait = "cp.async.wait_group " + std::to_string(stages - 2) + ";";
    // (With 2 stages it is the same instruction as the final drain's.)
    expect(count(ptx, wait) == (stages == 2 ? 3 : 2), "not one `" + wait + "` after the prologue and one in the loop");
    for (size_t at = ptx.find(wait); at != std::string::npos; at = ptx.find(wait, at + 1)) {
        size_t next = std::string::npos;
        std::string what;
        for (const std::string &i : {"bar.sync", "bra", "cp.async.cg", "cp.async.ca", "ret;"}) {
            const size_t p = ptx.find(i, at);
            if (p < next) {
                next = p;
                what = i;
            }
        }
        expect(what == "bar.sync", "a wait is followed by `" + what + "` before any barrier");
    }
    // ... and after the loop, all of them.
    expect(ptx.find("cp.async.wait_group 0;") != std::string::npos, "no final wait for all groups");
    expect(count(ptx, "st.shared") == 0, "a copy went the synchronous way");
    // Register arrays (accumulators, fragments and their slots) are indexed by constants.
    expect(!uses_local_memory(ptx), "a register array went to local memory");
    return problems;
}

std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v) s += x + "; ";
    return s;
}

struct Case {
    std::string target;
    int stages;
};

void PrintTo(const Case &c, std::ostream *os) {
    *os << c.target << " stages=" << c.stages;
}

class AsyncCopies : public ::testing::TestWithParam<Case> {};

TEST_P(AsyncCopies, AreGroupedWaitedForAndAssemble) {
    const Case c = GetParam();
    const std::string ptx = ptx_of("gemm", c.target, {{"stages", std::to_string(c.stages)}});
    ASSERT_FALSE(ptx.empty());
    if (c.stages == 1) {
        EXPECT_EQ(count(ptx, "cp.async"), 0) << "unpipelined copies are Halide's plain ones";
    } else {
        EXPECT_EQ(join(async_pipeline_problems(ptx, c.stages)), "");
    }
    // The PTX's own architecture, and Hopper (PTX is forward compatible).
    const std::string own = "sm_" + c.target.substr(c.target.size() - 2);
    for (const std::string &arch : {own, std::string("sm_90")}) {
        Ptxas r = assemble(ptx, arch);
#ifdef ALCOP_PTXAS
        ASSERT_TRUE(r.ran) << r.log;
        EXPECT_EQ(r.spill_bytes, 0) << r.log;
        std::cout << "[ptxas " << arch << "] " << c.target << " stages=" << c.stages << ": " << r.registers
                  << " registers, " << r.shared_bytes << " bytes static smem, " << r.spill_bytes << " bytes spilled\n";
#else
        ALCOP_SKIP_ASSEMBLING(c.target + " for " + arch);
#endif
    }
}

// The checker bites: each deliberately broken pipeline has the problem it names.
TEST(AsyncCopies, BrokenPipelinesAreCaught) {
    const std::string target = "host-cuda-cuda_capability_80";
    const std::pair<std::string, std::string> faults[] = {
        {"drop_barrier", "a wait is followed by"},
        {"wait_one_group_short", "not one `cp.async.wait_group 1;`"},
        {"drop_wait", "not one `cp.async.wait_group 1;`"},
    };
    for (const auto &[fault, problem] : faults) {
        const std::string ptx = ptx_of("testing_gemm", target, {{"stages", "3"}, {"fault", fault}});
        ASSERT_FALSE(ptx.empty()) << fault;
        const std::string problems = join(async_pipeline_problems(ptx, 3));
        EXPECT_NE(problems.find(problem), std::string::npos) << fault << " was not caught as such: " << problems;
    }
}

// A tensor-core operand tile left unswizzled is a warning that says why, never one with the
// reason left empty (as it was where no write of the tile's copies lies inside its production:
// the async-visibility emulation writes the slots at the wait).
TEST(AsyncCopies, AnUnswizzledTileSaysWhy) {
    testing::internal::CaptureStderr();
    const std::string ptx =
        ptx_of("testing_gemm", "host-cuda-cuda_capability_80", {{"type", "f16"}, {"emulated_async", "true"}});
    const std::string warned = testing::internal::GetCapturedStderr();
    ASSERT_FALSE(ptx.empty());
    for (const char *tile : {"A_shared", "B_shared"}) {
        EXPECT_NE(warned.find(std::string("the tensor-core operand tile ") + tile), std::string::npos) << warned;
    }
    EXPECT_EQ(warned.find("bank-conflicted: ."), std::string::npos) << warned;
    EXPECT_EQ(count(warned, "bank-conflicted: no write of its copies was found inside its production."), 2) << warned;
}

INSTANTIATE_TEST_SUITE_P(
    Gemm, AsyncCopies,
    ::testing::Values(Case{"host-cuda-cuda_capability_80", 1}, Case{"host-cuda-cuda_capability_80", 2},
                      Case{"host-cuda-cuda_capability_80", 3}, Case{"host-cuda-cuda_capability_80", 4},
                      Case{"host-cuda-cuda_capability_86", 2}, Case{"host-cuda-cuda_capability_86", 4}),
    [](const ::testing::TestParamInfo<Case> &info) {
        return info.param.target.substr(info.param.target.size() - 2) + "_stages" + std::to_string(info.param.stages);
    });

// Both levels: register fragments double-buffered (or more) under the cp.async pipeline.
// The shared level's PTX is unchanged: its wait and barrier moved inside the unrolled steps,
// still one after the other; the fragments' slots stay in registers.
class TwoLevel : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(TwoLevel, KeepsTheAsyncPipelineAndTheSlotsInRegisters) {
    const int stages = GetParam().first, register_stages = GetParam().second;
    const std::string ptx =
        ptx_of("gemm", "host-cuda-cuda_capability_80",
               {{"stages", std::to_string(stages)}, {"register_stages", std::to_string(register_stages)}});
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(join(async_pipeline_problems(ptx, stages, true)), "");
    Ptxas r = assemble(ptx, "sm_80");
#ifdef ALCOP_PTXAS
    ASSERT_TRUE(r.ran) << r.log;
    EXPECT_EQ(r.spill_bytes, 0) << r.log;
    std::cout << "[ptxas sm_80] stages=" << stages << " register_stages=" << register_stages << ": " << r.registers
              << " registers, " << r.spill_bytes << " bytes spilled\n";
#else
    ALCOP_SKIP_ASSEMBLING("the two-level GEMM");
#endif
}

// Every fragment load of the inner loop is a 16-byte ld.shared.v4: B's fragment is contiguous
// along x, A's along y in its transposed tile. Per chunk of 8 k steps, one fragment of A and
// one of B per step (1 + 8 per iteration, the first before the loop, with R = 2); nothing in
// the kernel reads shared memory by scalars.
TEST(FragmentLoads, AreSixteenByteVectors) {
    for (int register_stages : {1, 2}) {
        const std::string ptx = ptx_of("gemm", "host-cuda-cuda_capability_80",
                                       {{"stages", "3"}, {"register_stages", std::to_string(register_stages)}});
        ASSERT_FALSE(ptx.empty());
        const int v4 = count(ptx, "ld.shared.v4.f32"), v2 = count(ptx, "ld.shared.v2.f32"),
                  scalar = count(ptx, "ld.shared.f32");
        std::cout << "[ptx sm_80] gemm stages=3 register_stages=" << register_stages << ": " << v4
                  << " ld.shared.v4.f32, " << v2 << " ld.shared.v2.f32, " << scalar << " ld.shared.f32, "
                  << count(ptx, "cp.async.cg.shared.global") << " 16-byte and "
                  << count(ptx, "cp.async.ca.shared.global [%r") << " 4-byte cp.async\n";
        EXPECT_EQ(v4, register_stages == 2 ? 2 * (1 + 8) : 2 * 8) << "register_stages=" << register_stages;
        EXPECT_EQ(v2 + scalar, 0) << "register_stages=" << register_stages;
    }
}

INSTANTIATE_TEST_SUITE_P(Gemm, TwoLevel,
                         ::testing::Values(std::make_pair(2, 2), std::make_pair(3, 2), std::make_pair(4, 2),
                                           std::make_pair(3, 3), std::make_pair(3, 4)),
                         [](const ::testing::TestParamInfo<std::pair<int, int>> &info) {
                             return "shared" + std::to_string(info.param.first) + "_register" +
                                    std::to_string(info.param.second);
                         });

// The local-memory check bites: a per-thread array read at a data-dependent index cannot
// be registers.
TEST(TwoLevel, LocalMemoryIsDetected) {
    ImageParam in(Float(32), 1, "in");
    ImageParam which(Int(32), 1, "which");
    Func window("window"), out("out");
    Var x("x"), i("i"), xo("xo"), xi("xi");
    window(i, x) = in(x * 16 + i);
    out(x) = window(clamp(which(x), 0, 15), x);
    out.gpu_tile(x, xo, xi, 64);
    window.compute_at(out, xi).store_in(MemoryType::Register).bound(i, 0, 16);
    Module m = Pipeline(out).compile_to_module({in, which}, "local", Target("host-cuda-cuda_capability_80"));
    const std::string ptx = kernel_source::of(m);
    ASSERT_FALSE(ptx.empty());
    EXPECT_TRUE(uses_local_memory(ptx)) << ptx;
}

// The model's register estimate (accumulators + fragment slots + a constant for addresses
// and loop state; docs/model.md) against what ptxas allocates for the same schedules, so that
// occupancy predictions rest on checked numbers. Register stages 0 (the compute reads shared
// memory directly) is one fragment slot to the model: the compiler loads each step's values
// into registers anyway.
TEST(ModelValidation, RegisterEstimateIsWithinTenPercentOfPtxasOnTheKernelsItWasFittedTo) {
#ifndef ALCOP_PTXAS
    GTEST_SKIP() << "ptxas not found";
#else
    struct Config {
        int bm, bn, kt, tm, tn, stages, register_stages;
    };
    const Config configs[] = {
        {64, 64, 8, 4, 4, 3, 0}, {64, 64, 8, 4, 4, 3, 2}, {64, 64, 8, 4, 4, 4, 2}, {128, 128, 16, 8, 8, 4, 2}};
    for (const Config &c : configs) {
        const std::string ptx = ptx_of("gemm", "host-cuda-cuda_capability_80",
                                       {{"block_m", std::to_string(c.bm)},
                                        {"block_n", std::to_string(c.bn)},
                                        {"tile_k", std::to_string(c.kt)},
                                        {"thread_m", std::to_string(c.tm)},
                                        {"thread_n", std::to_string(c.tn)},
                                        {"stages", std::to_string(c.stages)},
                                        {"register_stages", std::to_string(c.register_stages)},
                                        // 128 x 128 x 16 with 4 stages takes 64 KB: assembled
                                        // only, as the benchmark's gemm_cuda_deep, which a
                                        // launch through apps/common/CudaOptIn allows.
                                        {"shared_memory_limit", "232448"}});
        Ptxas r = assemble(ptx, "sm_80");
        ASSERT_TRUE(r.ran) << r.log;
        alcop::model::Schedule s;
        s.bm = c.bm, s.bn = c.bn, s.kt = c.kt, s.tm = c.tm, s.tn = c.tn, s.smem_stages = c.stages;
        s.reg_stages = std::max(1, c.register_stages);
        const int estimate = alcop::model::estimate_registers(s, *alcop::model::find_gpu("A100"));
        std::cout << "[model vs ptxas] " << s.to_string() << ": estimate " << estimate << ", ptxas " << r.registers
                  << "\n";
        // Within 10%, in whole registers: ptxas's allocation moves by a register with the code
        // around the same tiles (the S3 R1 kernel: 56, then 57 once a copy's conditions were
        // one select, against the estimate's 51).
        EXPECT_LE(std::abs(estimate - r.registers), std::ceil(0.1 * r.registers)) << s.to_string();
    }
#endif
}

// The estimates on kernels they were not fitted to: the fp32 one (fitted to the four GEMM
// schedules above) on other GEMM tiles, the batched matmul and the convolution; the tensor-core
// one (fitted to the user's GEMM of test/tensorcore/TensorCoreGemm.h, TensorCoreModel in
// test/autoscheduler) on the generators' own tensor-core GEMM, batched matmul and convolution,
// whose copies, guards and epilogues are written differently. Occupancy rests on these, so the
// error a user meets is the one outside the fit: within 16% or 8 registers either way, the
// convolutions too (their copies' im2col addresses, which the estimate, knowing only the tiles,
// leaves out, cost up to 13% since their chunks run as one loop: docs/model.md §15).
TEST(ModelValidation, RegisterEstimateHoldsOnKernelsOutsideItsFit) {
#ifndef ALCOP_PTXAS
    GTEST_SKIP() << "ptxas not found";
#else
    struct Config {
        const char *generator, *type;
        int bm, bn, kt, tm, tn, stages, register_stages;
    };
    const Config configs[] = {
        {"gemm", "f32", 128, 64, 16, 8, 4, 3, 1},
        {"gemm", "f32", 64, 64, 32, 4, 4, 2, 1},
        {"gemm", "f32", 32, 32, 8, 2, 2, 3, 2},
        {"bmm", "f32", 64, 64, 16, 4, 4, 3, 2},
        {"conv2d", "f32", 64, 64, 16, 4, 4, 3, 2},
        {"conv2d", "f32", 128, 64, 8, 8, 4, 2, 1},
        {"gemm", "f16", 128, 128, 32, 64, 64, 3, 2},
        {"gemm", "f16", 64, 64, 32, 32, 32, 3, 1},
        {"gemm", "bf16", 128, 64, 32, 64, 32, 4, 2},
        {"bmm", "f16", 64, 64, 32, 32, 32, 3, 2},
        {"conv2d", "f16", 64, 64, 32, 32, 32, 3, 1},
        {"conv2d", "f16", 128, 64, 32, 64, 32, 3, 1},
    };
    for (const Config &c : configs) {
        const bool tensor_cores = std::string(c.type) != "f32";
        GeneratorParamsMap params{{"type", c.type},
                                  {"block_m", std::to_string(c.bm)},
                                  {"block_n", std::to_string(c.bn)},
                                  {"tile_k", std::to_string(c.kt)},
                                  {tensor_cores ? "warp_m" : "thread_m", std::to_string(c.tm)},
                                  {tensor_cores ? "warp_n" : "thread_n", std::to_string(c.tn)},
                                  {"stages", std::to_string(c.stages)},
                                  {"register_stages", std::to_string(c.register_stages)},
                                  {"limits", "optin"}};
        const std::string ptx = ptx_of(c.generator, "host-cuda-cuda_capability_80", params);
        Ptxas r = assemble(ptx, "sm_80");
        ASSERT_TRUE(r.ran) << r.log;
        alcop::model::Schedule s;
        s.bm = c.bm, s.bn = c.bn, s.kt = c.kt, s.tm = c.tm, s.tn = c.tn, s.smem_stages = c.stages;
        s.reg_stages = std::max(1, c.register_stages);
        s.tensor_cores = tensor_cores;
        const int estimate = alcop::model::estimate_registers(s, *alcop::model::find_gpu("A100"));
        const double error = double(estimate - r.registers) / r.registers;
        std::cout << "[model vs ptxas, held out] " << c.generator << " " << c.type << " " << s.to_string()
                  << ": estimate " << estimate << ", ptxas " << r.registers << " (" << std::lround(100 * error)
                  << "%)\n";
        EXPECT_TRUE(std::abs(error) <= 0.16 || std::abs(estimate - r.registers) <= 8)
            << c.generator << " " << s.to_string();
    }
#endif
}

TEST(LaunchBounds, FitTheRegistersToTheRequestedBlocksPerSm) {
    // Both levels, 128 x 128 tiles, 8 x 8 per thread, k tile 32, 256 threads: ptxas takes 134
    // registers on its own, so one block per SM; two blocks leave 65536 / 512 = 128. (The
    // benchmark's gemm_cuda_deep, k tile 16 and 4 stages, took 129 and showed this until A's
    // tile was transposed; it now takes 120 on its own.)
    GeneratorParamsMap deep{
        {"block_m", "128"}, {"block_n", "128"}, {"thread_m", "8"},        {"thread_n", "8"},
        {"tile_k", "32"},   {"stages", "2"},    {"register_stages", "2"}, {"shared_memory_limit", "232448"}};  // 64 KB
    const std::string free_ptx = ptx_of("gemm", "host-cuda-cuda_capability_80", deep);
    deep["min_blocks_per_sm"] = "2";
    const std::string bounded_ptx = ptx_of("gemm", "host-cuda-cuda_capability_80", deep);
    ASSERT_FALSE(free_ptx.empty());
    ASSERT_FALSE(bounded_ptx.empty());
    EXPECT_EQ(count(free_ptx, ".maxntid"), 0);
    EXPECT_EQ(count(bounded_ptx, ".maxntid 256, 1, 1"), 1) << "one kernel, its block size";
    EXPECT_EQ(count(bounded_ptx, ".minnctapersm 2"), 1);
    EXPECT_EQ(count(bounded_ptx, "alcop_launch_bounds"), 0) << "the marker survived";
#ifndef ALCOP_PTXAS
    GTEST_SKIP() << "ptxas not found at configure time: PTX not assembled";
#else
    // Found at configure time, ptxas must assemble both: a rejection is a failure, not a skip.
    const Ptxas free = assemble(free_ptx, "sm_80"), bounded = assemble(bounded_ptx, "sm_80");
    ASSERT_TRUE(free.ran) << free.log;
    ASSERT_TRUE(bounded.ran) << bounded.log;
    std::printf(
        "[ptxas sm_80] 128x128x32 t8x8 S2 R2: %d registers alone, %d with two blocks per SM (%d bytes spilled)\n",
        free.registers, bounded.registers, bounded.spill_bytes);
    EXPECT_GT(free.registers, 128) << "the case no longer shows what the bound is for";
    EXPECT_EQ(free.spill_bytes, 0) << free.log;
    EXPECT_LE(bounded.registers, 128);
    EXPECT_EQ(bounded.spill_bytes, 0) << bounded.log;
#endif
}

// Launch bounds cap a kernel's registers (65536 over the blocks' threads): blocks per SM that
// leave a thread fewer registers than the kernel needs are a warning naming the request, as
// ptxas then spills. The fp16 GEMM's 128 threads take 240: two blocks leave 256, three 168.
TEST(LaunchBounds, BlocksPerSmThatLeaveTooFewRegistersAreAWarning) {
    const std::string target = "host-cuda-cuda_capability_80";
    std::map<int, std::string> ptx, warned;
    for (int blocks : {2, 3}) {
        testing::internal::CaptureStderr();
        ptx[blocks] = ptx_of("gemm", target,
                             {{"type", "f16"}, {"limits", "optin"}, {"min_blocks_per_sm", std::to_string(blocks)}});
        warned[blocks] = testing::internal::GetCapturedStderr();
        ASSERT_FALSE(ptx[blocks].empty());
    }
    EXPECT_EQ(warned[2].find("registers per thread"), std::string::npos) << warned[2];
    EXPECT_NE(warned[3].find("more than the limit of 168 (what alcop::min_blocks_per_sm(out, 3) leaves a thread: "
                             "ptxas fits 3 blocks of 128 threads into the 65536 registers of an SM)"),
              std::string::npos)
        << warned[3];
    EXPECT_NE(warned[3].find("or ask for fewer blocks per SM."), std::string::npos) << warned[3];
    EXPECT_EQ(warned[3].find("cuda_opt_in"), std::string::npos) << "the opt-in would not lift this cap";
#ifndef ALCOP_PTXAS
    GTEST_SKIP() << "ptxas not found at configure time: the warnings not compared with ptxas";
#else
    // What the warning says is what ptxas does.
    const Ptxas two = assemble(ptx[2], "sm_80"), three = assemble(ptx[3], "sm_80");
    ASSERT_TRUE(two.ran) << two.log;
    ASSERT_TRUE(three.ran) << three.log;
    EXPECT_EQ(two.spill_bytes, 0) << two.log;
    EXPECT_LE(three.registers, 168) << three.log;
    EXPECT_GT(three.spill_bytes, 0) << three.log;
#endif
}

// The cap that warning compares with (model::registers_for_blocks) is the one ptxas applies: the
// fp16 GEMM's kernel of whole tiles, which takes 240 registers free, assembled under launch
// bounds of other block sizes (.maxntid, .minnctapersm) uses exactly the cap. Blocks of other
// than a multiple of four warps share the registers per scheduler partition: 5 blocks of 96
// threads leave 128 a thread, not 65536 / 480 rounded down to 136.
TEST(LaunchBounds, TheRegisterCapIsWhatPtxasApplies) {
#ifndef ALCOP_PTXAS
    GTEST_SKIP() << "ptxas not found at configure time: the caps not compared with ptxas";
#else
    const std::string ptx = ptx_of("gemm", "host-cuda-cuda_capability_80", {{"type", "f16"}, {"limits", "optin"}});
    const std::vector<kernel_source::Kernel> kernels = kernel_source::kernels(ptx);
    ASSERT_FALSE(kernels.empty());
    ASSERT_EQ(count(ptx, ".maxntid"), 0);
    const std::string header = ptx.substr(0, ptx.find(".visible .entry "));
    const std::string kernel = kernels[0].text.substr(0, kernels[0].text.rfind('}') + 1);
    const size_t body = kernel.find("\n{\n");
    ASSERT_NE(body, std::string::npos) << kernel.substr(0, 2000);
    const std::pair<int, int> bounds[] = {{128, 3}, {96, 4}, {96, 5}, {160, 3}, {64, 7}, {224, 2}, {32, 13}};
    for (const auto &[threads, blocks] : bounds) {
        const int cap = alcop::model::registers_for_blocks(threads, blocks, alcop::model::default_gpu());
        const std::string bounded = header + kernel.substr(0, body) + "\n.maxntid " + std::to_string(threads) +
                                    ", 1, 1\n.minnctapersm " + std::to_string(blocks) + kernel.substr(body);
        const Ptxas r = assemble(bounded, "sm_80");
        ASSERT_TRUE(r.ran) << r.log;
        std::printf("%d blocks of %d threads: cap %d, ptxas %d registers\n", blocks, threads, cap, r.registers);
        EXPECT_LT(cap, 240) << "a cap above what the kernel takes free says nothing";
        EXPECT_EQ(r.registers, cap) << blocks << " blocks of " << threads << " threads\n" << r.log;
    }
#endif
}

TEST(LaunchBounds, OtherTargetsIgnoreThem) {
    const std::string source = ptx_of("gemm", "host-opencl", {{"stages", "3"}, {"min_blocks_per_sm", "2"}});
    ASSERT_FALSE(source.empty());
    EXPECT_EQ(count(source, "alcop_launch_bounds"), 0) << source;
}

// A pipelined tile that another buffer follows in the kernel's shared allocation cannot grow
// into its slots in place (src/plan/PipelinePlan.cpp): A_shared's 5 slots of 8 KiB go past
// B_shared's 4 KiB, and A_shared's old tile is left unused. The error counts those bytes apart
// from the other data and says how to reclaim them; with B_shared pipelined too, the slots
// pack from the start and the same A_shared stages fit the 48 KiB (5 x 8192 + 2 x 4096).
TEST(SharedMemoryLimit, TheBytesSlotsLeaveUnusedAreCountedApart) {
    GeneratorParamsMap params{{"block_m", "64"}, {"block_n", "32"}, {"thread_m", "4"}, {"thread_n", "4"},
                              {"tile_k", "32"},  {"stages", "5"},   {"stages_b", "1"}};
    const std::string error = kernel_source::error_of("gemm", "host-cuda-cuda_capability_80", params);
    EXPECT_NE(error.find("would need 53248 bytes of shared memory per block (A_shared: 5 stages x 8192 bytes, 4096 "
                         "bytes of the kernel's other data, and 8192 bytes the slots leave unused"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("pipelining the Func of that data in the same loop too lets all the slots pack"),
              std::string::npos)
        << error;
    params["stages_b"] = "2";
    EXPECT_EQ(kernel_source::error_of("gemm", "host-cuda-cuda_capability_80", params), "");
}

TEST(AsyncCopies, ConvolutionTilesUseCpAsync) {
    // Both operands' copies, with and without padding. (The padded input's offset holds
    // -input.stride.1, whose alignment Halide 14's simplifier loses; copy/GlobalAlignment.h
    // recovers it.)
    for (const char *pad : {"0", "1"}) {
        SCOPED_TRACE(std::string("pad=") + pad);
        const std::string ptx = ptx_of("conv2d", "host-cuda-cuda_capability_80", {{"stages", "3"}, {"pad", pad}});
        ASSERT_FALSE(ptx.empty());
        EXPECT_EQ(count(ptx, "alcop_cp_async"), 0);
        EXPECT_EQ(count(ptx, "cp.async.cg.shared.global"), 2 * 3);  // input and filter, 3 steps
        EXPECT_EQ(count(ptx, "st.shared"), 0);
        Ptxas r = assemble(ptx, "sm_80");
#ifdef ALCOP_PTXAS
        EXPECT_TRUE(r.ran) << r.log;
        EXPECT_EQ(r.spill_bytes, 0) << r.log;
        std::cout << "[ptxas sm_80] conv2d stages=3 pad=" << pad << ": " << r.registers << " registers\n";
#endif
    }
#ifndef ALCOP_PTXAS
    ALCOP_SKIP_ASSEMBLING("the conv2d kernels");
#endif
}

TEST(AsyncCopies, WideVectorsAreSplitInto16BytePieces) {
    // vector_width 8: each thread's copy is 32 bytes, two cp.async of 16 bytes. With the
    // default 64x64x8 tile, A is 8x64 (64 such copies) and B 64x8 (64): one per thread for
    // threads 0..63 of 256, so each step issues 2 pieces for A and 2 for B.
    const std::string ptx = ptx_of("gemm", "host-cuda-cuda_capability_80", {{"stages", "3"}, {"vector_width", "8"}});
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(count(ptx, "cp.async.cg.shared.global"), 2 * 2 * 3);
    EXPECT_EQ(count(ptx, "cp.async.commit_group"), 3);
    EXPECT_EQ(count(ptx, "st.shared"), 0);
}

/** A GEMM whose copies of A start at A(k + a_offset, m), compiled for sm_80: its PTX and what
 * the pass warned. `promised`: which of A and B carry the constraints that prove 16-byte
 * vectors aligned (a 16-byte aligned allocation, a first element at 0, whole-vector strides). */
struct OffsetGemm {
    std::string ptx, warnings;
};
Pipeline offset_gemm_pipeline(int a_offset, bool promise_a, bool promise_b, std::vector<Argument> *args) {
    ImageParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    *args = {A, B};
    Halide::Var k("k"), m("m"), n("n"), x("x"), y("y");
    Halide::Func A_shared("A_shared"), B_shared("B_shared"), prod("prod"), out("out");
    const int vw = 4, kt = 8;
    for (ImageParam *in : {&A, &B}) {
        if (in == &A ? !promise_a : !promise_b) continue;
        in->set_host_alignment(16);
        in->dim(0).set_min(0);
        in->dim(1).set_stride((in->dim(1).stride() / vw) * vw);
    }
    Expr K = B.dim(1).extent(), M = A.dim(1).extent(), N = B.dim(0).extent();
    A_shared(k, m) = select(k < K && m < M, A(unsafe_promise_clamped(k + a_offset, a_offset, K), clamp(m, 0, M - 1)),
                            0.0f);
    B_shared(n, k) = select(k < K && n < N, B(unsafe_promise_clamped(n, 0, N - 1), clamp(k, 0, K - 1)), 0.0f);
    RDom r(0, kt, 0, (K + kt - 1) / kt, "r");
    prod(x, y) = 0.0f;
    prod(x, y) += A_shared(r.y * kt + r.x, y) * B_shared(x, r.y * kt + r.x);
    out(x, y) = prod(x, y);
    out.output_buffer().dim(0).set_min(0);
    alcop_generators::schedule_contraction(out, prod, A_shared, B_shared, x, y, {}, {r.x}, r.y, {64, 64, 4, 4, vw},
                                           3, 3);
    Pipeline p(out);
    alcop::enable(p, Target("host-cuda-cuda_capability_80"));
    return p;
}

OffsetGemm offset_gemm(int a_offset, bool promise_a, bool promise_b) {
    std::vector<Argument> args;
    Pipeline p = offset_gemm_pipeline(a_offset, promise_a, promise_b, &args);
    OffsetGemm g;
    testing::internal::CaptureStderr();
    g.ptx = kernel_source::of(p.compile_to_module(args, "offset_gemm", Target("host-cuda-cuda_capability_80")));
    g.warnings = testing::internal::GetCapturedStderr();
    return g;
}

TEST(AsyncCopies, CopiesNotProvablyAlignedAreStagedThroughRegisters) {
    // A read from its second column on (A(k + 1, m)): no 16-byte copy of A is aligned, so A's
    // copies are loaded into registers and stored into their slot after the compute, while B's
    // stay cp.async; both in the same pipeline. The constraints are all there: the offset is
    // what the warning names.
    const OffsetGemm g = offset_gemm(1, true, true);
    ASSERT_FALSE(g.ptx.empty());
    EXPECT_EQ(count(g.ptx, "cp.async.cg.shared.global"), 3);
    EXPECT_GT(count(g.ptx, "st.shared"), 0);
    EXPECT_EQ(count(g.ptx, "cp.async.commit_group"), 3);
    EXPECT_NE(g.warnings.find("alcop: the copies of A_shared from A into shared memory are loads and stores through "
                              "registers, not cp.async: Halide cannot prove their 16-byte vectors of A aligned. Its "
                              "constraints are set, so a tile starts off a whole vector"),
              std::string::npos)
        << g.warnings;
    EXPECT_EQ(g.warnings.find("from B"), std::string::npos) << g.warnings;
}

// Without the constraints, the warning gives the lines that promise them, once per input; when
// no copy of a loop is cp.async, the loop has no commit or wait (its barriers publish the slots).
TEST(AsyncCopies, AnInputNotPromisedAlignedIsAWarningWithTheLinesThatPromiseIt) {
    const OffsetGemm one = offset_gemm(0, false, true);
    const std::string lines = "Promise what it needs where A is declared: A.set_host_alignment(16); "
                              "A.dim(0).set_min(0); A.dim(1).set_stride((A.dim(1).stride() / 4) * 4)";
    EXPECT_NE(one.warnings.find(lines), std::string::npos) << one.warnings;
    EXPECT_EQ(one.warnings.find(lines), one.warnings.rfind(lines)) << "said twice: " << one.warnings;
    EXPECT_EQ(count(one.ptx, "cp.async.cg.shared.global"), 3);  // B's
    EXPECT_EQ(count(one.ptx, "cp.async.commit_group"), 3);

    const OffsetGemm none = offset_gemm(0, false, false);
    EXPECT_NE(none.warnings.find("from B into shared memory"), std::string::npos) << none.warnings;
    EXPECT_EQ(count(none.ptx, "cp.async"), 0);
    EXPECT_GT(count(none.ptx, "bar.sync"), 0);

    const OffsetGemm promised = offset_gemm(0, true, true);
    EXPECT_EQ(promised.warnings.find("not cp.async"), std::string::npos) << promised.warnings;
    EXPECT_EQ(count(promised.ptx, "cp.async.cg.shared.global"), 6);
}

TEST(RegisterStaged, WithoutCpAsyncTheLoadsComeBeforeTheCompute) {
    const std::string ptx = ptx_of("gemm", "host-cuda-cuda_capability_75", {{"stages", "3"}});
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(count(ptx, "cp.async"), 0);
    // In the loop: the next tile's global loads, then the FMAs, then its shared stores.
    const size_t first_fma = ptx.find("fma.rn.f32");
    ASSERT_NE(first_fma, std::string::npos);
    const size_t load_before = ptx.rfind("ld.global", first_fma);
    const size_t store_after = ptx.find("st.shared", first_fma);
    EXPECT_NE(load_before, std::string::npos);
    EXPECT_NE(store_after, std::string::npos);
    Ptxas r = assemble(ptx, "sm_80");
#ifdef ALCOP_PTXAS
    EXPECT_TRUE(r.ran) << r.log;
    EXPECT_EQ(r.spill_bytes, 0) << r.log;
#else
    ALCOP_SKIP_ASSEMBLING("the register-staged GEMM");
#endif
}

// The summary alcop_inspect prints counts the copies by kind as the PTX has them, for every
// element type: a 16-byte copy of halves is a store of reinterpreted words, still a cp.async.
TEST(InspectSummary, CountsTheCopiesThePtxHas) {
    for (const char *type : {"f32", "f16", "bf16"}) {
        SCOPED_TRACE(type);
        Internal::Stmt after;
        alcop::set_lowering_observer([&](const Internal::Stmt &, const Internal::Stmt &a, const auto &) { after = a; });
        const std::string ptx = ptx_of("gemm", "host-cuda-cuda_capability_80", {{"type", type}, {"stages", "3"}});
        alcop::set_lowering_observer(nullptr);
        ASSERT_TRUE(after.defined());
        const alcop::PipelineSummary p = alcop::summarize_pipeline(after, {"A_shared", "B_shared"});
        std::cout << type << ": " << alcop::describe(p);
        EXPECT_GT(p.async_copies, 0);
        EXPECT_EQ(p.async_copies, count(ptx, "cp.async.cg.shared.global") + count(ptx, "cp.async.ca.shared.global"));
        EXPECT_EQ(p.staged_copies + p.synchronous_copies, 0);
    }
}

/** A folder for the PTX alcop::inspect writes, this process's own: ctest -j runs a test and
 * its binary's shuffled run at once, and they write the same names. */
std::string ptx_folder() {
    return ::testing::TempDir() + "alcop_inspect_ptx_" + std::to_string(getpid());
}

/** The `copies into shared memory: N cp.async` of the report's "after:" part, and the cp.async
 * of the PTX it wrote to <dir>/<name>.ptx (the folder removed). */
std::pair<int, int> reported_and_assembled_copies(const std::string &report, const std::string &dir,
                                                  const std::string &name) {
    std::ifstream in(dir + "/" + name + ".ptx");
    const std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove_all(dir);
    std::smatch m;
    if (!std::regex_search(report, m, std::regex("after: [^\\n]*\\ncopies into shared memory: (\\d+) cp.async"))) {
        return {-1, -1};
    }
    return {std::stoi(m[1]), count(ptx, "cp.async.cg.shared.global") + count(ptx, "cp.async.ca.shared.global")};
}

// alcop::inspect (alcop/Inspect.h) on a user's own Pipeline: the report alcop_inspect prints for
// a generator: the requests, the copies by kind (as many cp.async as the PTX it writes has), each
// kernel's bank conflicts and main loop.
TEST(Inspect, AUsersPipelineIsReportedWithTheCopiesThePtxHas) {
    std::vector<Argument> args;
    Pipeline p = offset_gemm_pipeline(0, true, true, &args);
    alcop::InspectOptions options;
    options.ptx_dir = ptx_folder();
    const Target target("host-cuda-cuda_capability_80");
    const std::string report = alcop::inspect(p, args, target, options);
    std::cout << report;
    EXPECT_NE(report.find("=== pipeline for " + target.to_string()), std::string::npos);
    EXPECT_NE(report.find("requests: A_shared(stages 3, shared) B_shared(stages 3, shared)"), std::string::npos);
    // (This schedule's reads of A and B are 2-way: main_loop_test's gemm_f32_s3.)
    // (The kernel's name is Halide's: out$n.s0... where an earlier test made an `out`.)
    EXPECT_NE(report.find(": bank conflicts: 256 (262 thread-dependent shared accesses analyzed, 0 not)"),
              std::string::npos);
    EXPECT_NE(report.find("main loop of _kernel_out"), std::string::npos);
    const auto [reported, assembled] = reported_and_assembled_copies(report, options.ptx_dir, "pipeline");
    EXPECT_EQ(reported, 6);
    EXPECT_EQ(reported, assembled);
}

// Each kernel's bank conflicts are one line and a count of the conflicting accesses; each access
// is listed only on request (alcop_inspect --verbose, InspectOptions::list_conflicting_accesses).
TEST(Inspect, ConflictingAccessesAreListedOnRequest) {
    std::vector<Argument> args;
    Pipeline p = offset_gemm_pipeline(0, true, true, &args);
    const Target target("host-opencl");
    alcop::InspectOptions options;
    const std::string brief = alcop::inspect(p, args, target, options);
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(brief, m, std::regex("\\n  (\\d+) accesses with conflicts \\(alcop_inspect --verbose")))
        << brief;
    EXPECT_EQ(count(brief, " bytes/lane at byte "), 0) << brief;
    // One count a kernel (each of this pipeline's kernels has conflicts), not one per access.
    EXPECT_EQ(count(brief, "accesses with conflicts"), count(brief, ": bank conflicts: ")) << brief;
    options.list_conflicting_accesses = true;
    const std::string listed = alcop::inspect(p, args, target, options);
    EXPECT_EQ(count(listed, " bytes/lane at byte "), std::stoi(m[1])) << listed;
    EXPECT_EQ(count(listed, "accesses with conflicts"), 0) << listed;
}

// --ptx DIR (InspectOptions::ptx_dir) creates a folder that is not there, and says so where the
// PTX cannot be written instead of naming a file it did not write.
TEST(Inspect, ThePtxFolderIsCreatedAndAFailedWriteIsSaid) {
    std::vector<Argument> args;
    Pipeline p = offset_gemm_pipeline(0, true, true, &args);
    const Target target("host-cuda-cuda_capability_80");
    alcop::InspectOptions options;
    const std::string folder = ::testing::TempDir() + "/alcop_inspect_" + std::to_string(getpid());
    options.ptx_dir = folder + "/nested";
    const std::string path = options.ptx_dir + "/pipeline.ptx";
    std::string report = alcop::inspect(p, args, target, options);
    EXPECT_NE(report.find("PTX written to " + path), std::string::npos) << report;
    std::ifstream written(path);
    EXPECT_TRUE(written.good()) << path;
    std::filesystem::remove_all(folder);
    options.ptx_dir = "/proc/alcop_inspect";  // no folder can be made there
    report = alcop::inspect(p, args, target, options);
    EXPECT_NE(report.find("PTX not written: cannot write /proc/alcop_inspect/pipeline.ptx"), std::string::npos)
        << report;
    EXPECT_EQ(report.find("PTX written to"), std::string::npos) << report;
}

// --sass (InspectOptions::sass): each kernel's main loop in SASS for sm_80 and sm_90 under its
// PTX line where nvdisasm is found, else one line saying why; nothing of it unasked, and for a
// target that is not CUDA, that there is no SASS.
TEST(Inspect, SassIsReportedForEachKernelOrWhyNot) {
    std::vector<Argument> args;
    Pipeline p = offset_gemm_pipeline(0, true, true, &args);
    alcop::InspectOptions options;
    const std::string plain = alcop::inspect(p, args, Target("host-cuda-cuda_capability_80"), options);
    EXPECT_EQ(plain.find("SASS"), std::string::npos) << plain;
    options.sass = true;
    const std::string report = alcop::inspect(p, args, Target("host-cuda-cuda_capability_80"), options);
    const int kernels = count(report, "main loop of ");
    EXPECT_GT(kernels, 0) << report;
    if (report.find("SASS not reported: nvdisasm not found") != std::string::npos) {
        EXPECT_EQ(count(report, "  SASS sm_"), 0) << report;
    } else {
        EXPECT_EQ(count(report, "  SASS sm_80 (ptxas "), kernels) << report;
        EXPECT_EQ(count(report, "  SASS sm_90 (ptxas "), kernels) << report;
    }
    const std::string opencl = alcop::inspect(p, args, Target("host-opencl"), options);
    EXPECT_NE(opencl.find("SASS not reported: the target is not CUDA"), std::string::npos) << opencl;
}

// The PTX modules of a compiled file (alcop_inspect file.o): Halide keeps each module as
// NUL-terminated text among the file's other bytes; each is found whole, in order.
TEST(Inspect, ThePtxModulesOfACompiledFileAreFoundWhole) {
    std::vector<std::string> modules;
    for (bool async : {true, false}) {
        std::vector<Argument> args;
        Pipeline p = offset_gemm_pipeline(0, async, true, &args);
        alcop::InspectOptions options;
        options.ptx_dir = ptx_folder();
        alcop::inspect(p, args, Target("host-cuda-cuda_capability_80"), options);
        std::ifstream in(options.ptx_dir + "/pipeline.ptx");
        modules.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::filesystem::remove_all(options.ptx_dir);
        ASSERT_NE(modules.back().find(".entry"), std::string::npos);
    }
    ASSERT_NE(modules[0], modules[1]);
    const std::string object = std::string("\x7f"
                                           "ELF\0\0code",
                                           10) +
                               modules[0] + std::string("\0\x01\x02", 3) + "// a comment\n" + std::string("\0", 1) +
                               modules[1] + std::string("\0tail", 5);
    EXPECT_EQ(alcop::embedded_ptx(object), modules);
    EXPECT_TRUE(alcop::embedded_ptx(std::string("\x7f"
                                                "ELF\0 no kernels",
                                                16))
                    .empty());
}

// A generator's module, as alcop_inspect builds it: the same counts for each operand type.
TEST(Inspect, AGeneratorsModuleIsReportedWithTheCopiesThePtxHasForEachType) {
    for (const char *type : {"f32", "f16", "bf16"}) {
        SCOPED_TRACE(type);
        const Target target("host-cuda-cuda_capability_80");
        auto gen = GeneratorRegistry::create("gemm", GeneratorContext(target));
        gen->set_generator_param_values({{"type", type}, {"stages", "3"}, {"limits", "optin"}});
        alcop::InspectOptions options;
        options.ptx_dir = ptx_folder();
        const std::string report =
            alcop::inspect("gemm", target, [&]() { return gen->build_module("gemm"); }, options);
        // (f32 under the opt-in also asks for register stages of the fragments, A_shared_in_prod.)
        EXPECT_NE(report.find("requests: A_shared(stages 3, shared) "), std::string::npos) << report;
        EXPECT_NE(report.find(" B_shared(stages 3, shared)"), std::string::npos) << report;
        const auto [reported, assembled] = reported_and_assembled_copies(report, options.ptx_dir, "gemm");
        EXPECT_GT(reported, 0) << report;
        EXPECT_EQ(reported, assembled) << report;
    }
}

}  // namespace
