// The static hazard checker (src/analysis/PipelineHazards.h) on the pipelines the tests build:
// block 0 of every kernel run thread by thread at the sizes alcop_inspect uses (a tail in every
// dimension with several K tiles, fewer K tiles than stages, one partial tile). The clean
// configurations of the numerical tests (fp32 and tensor cores, one and two levels, CUDA with
// cp.async and OpenCL with copies staged through registers) have no hazard; every deliberate
// fault of the rewrite (src/directive/TestHooks.h) and the tensor cores' fragments loaded
// before the barrier (test/support/TensorCoreFaults.h) has some, with the Func and the places
// reported.

#include "Halide.h"
#include "alcop/Directive.h"
#include "analysis/PipelineHazards.h"
#include "directive/Requests.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace Halide;

const std::string cuda = "host-cuda-cuda_capability_80", opencl = "host-opencl";

struct Config {
    std::string name, generator, target;
    Internal::GeneratorParamsMap params;
};

void PrintTo(const Config &c, std::ostream *os) {
    *os << c.name;
}

/** The hazards of every kernel of `c`'s pipeline after the pass, at each size; every run checked. */
std::vector<alcop::PipelineHazard> hazards_of(const Config &c) {
    Internal::Stmt after;
    alcop::set_lowering_observer([&](const Internal::Stmt &, const Internal::Stmt &a, const auto &) { after = a; });
    auto gen = Internal::GeneratorRegistry::create(c.generator, GeneratorContext(Target(c.target)));
    gen->set_generator_param_values(c.params);
    gen->build_module(c.generator);
    alcop::set_lowering_observer(nullptr);
    EXPECT_TRUE(after.defined()) << c.name << ": the pass did not run";
    std::vector<alcop::PipelineHazard> all;
    for (int64_t extent : alcop::hazard_check_extents()) {
        const std::vector<alcop::KernelHazards> kernels = alcop::find_pipeline_hazards(after, extent);
        EXPECT_FALSE(kernels.empty()) << c.name;
        for (const alcop::KernelHazards &k : kernels) {
            EXPECT_TRUE(k.checked) << c.name << ", kernel " << k.kernel << " at extent " << extent << ": " << k.reason;
            EXPECT_GT(k.reads, 0) << c.name << ": no shared read recorded";
            EXPECT_GT(k.writes, 0) << c.name << ": no copy recorded";
            std::cout << c.name << ", kernel " << k.kernel << ", extent " << extent << ": " << k.threads << " threads, "
                      << k.writes << " writes, " << k.reads << " reads, " << k.hazards.size() << " hazards\n";
            all.insert(all.end(), k.hazards.begin(), k.hazards.end());
        }
    }
    return all;
}

Internal::GeneratorParamsMap with(Internal::GeneratorParamsMap p, const Internal::GeneratorParamsMap &more) {
    for (const auto &[k, v] : more) {
        p[k] = v;
    }
    return p;
}

// The tensor-core tests' configuration: 32 x 32 blocks of 16 x 16 warps (tensor_core_fault_test).
const Internal::GeneratorParamsMap tc{{"block_m", "32"}, {"block_n", "32"}, {"warp_m", "16"}, {"warp_n", "16"}};

class Clean : public ::testing::TestWithParam<Config> {};

TEST_P(Clean, HasNoHazard) {
    for (const alcop::PipelineHazard &h : hazards_of(GetParam())) {
        ADD_FAILURE() << GetParam().name << ": " << h.to_string();
    }
}

std::vector<Config> clean_configs() {
    std::vector<Config> configs;
    for (const std::string &target : {cuda, opencl}) {
        const std::string t = target == cuda ? "cuda" : "opencl";
        for (int s = 1; s <= 4; s++) {
            for (int r = 0; r <= 2; r++) {
                configs.push_back({"gemm_f32_s" + std::to_string(s) + "_r" + std::to_string(r) + "_" + t,
                                   "gemm",
                                   target,
                                   {{"stages", std::to_string(s)}, {"register_stages", std::to_string(r)}}});
            }
        }
        configs.push_back({"gemm_f32_s4_b2_" + t, "gemm", target, {{"stages", "4"}, {"stages_b", "2"}}});
        configs.push_back(
            {"gemm_f32_s2_r5_k4_" + t, "gemm", target, {{"stages", "2"}, {"register_stages", "5"}, {"tile_k", "4"}}});
        configs.push_back({"bmm_f32_s3_r2_" + t, "bmm", target, {{"stages", "3"}, {"register_stages", "2"}}});
        configs.push_back(
            {"conv_f32_s3_r2_pad1_" + t, "conv2d", target, {{"stages", "3"}, {"register_stages", "2"}, {"pad", "1"}}});
        for (const std::string type : {"f16", "bf16"}) {
            for (int s = 1; s <= 4; s++) {
                // Two register stages of tensor-core fragments need both operands pipelined.
                for (int r = 1; r <= (s == 1 ? 1 : 2); r++) {
                    configs.push_back({"gemm_" + type + "_s" + std::to_string(s) + "_r" + std::to_string(r) + "_" + t,
                                       "testing_gemm", target,
                                       with(tc, {{"type", type},
                                                 {"stages", std::to_string(s)},
                                                 {"register_stages", std::to_string(r)}})});
                }
            }
            configs.push_back(
                {"bmm_" + type + "_s3_" + t, "testing_bmm", target, with(tc, {{"type", type}, {"stages", "3"}})});
            if (target == cuda) {  // on OpenCL, its emulated tensor cores take 10 s to run
                configs.push_back({"conv_" + type + "_s3_pad1_" + t, "testing_conv2d", target,
                                   with(tc, {{"type", type}, {"stages", "3"}, {"tile_k", "16"}, {"pad", "1"}})});
            }
        }
    }
    return configs;
}

INSTANTIATE_TEST_SUITE_P(PipelineHazards, Clean, ::testing::ValuesIn(clean_configs()),
                         [](const auto &info) { return info.param.name; });

class Broken : public ::testing::TestWithParam<Config> {};

TEST_P(Broken, IsReported) {
    const std::vector<alcop::PipelineHazard> hazards = hazards_of(GetParam());
    ASSERT_FALSE(hazards.empty()) << GetParam().name << ": no hazard reported";
    std::cout << hazards.size() << " hazards; the first: " << hazards[0].to_string() << "\n";
    for (const alcop::PipelineHazard &h : hazards) {
        // The copies' Funcs (uniquely renamed, A_shared$3, when built twice in one process).
        EXPECT_TRUE(h.func.rfind("A_shared", 0) == 0 || h.func.rfind("B_shared", 0) == 0) << h.to_string();
    }
}

std::vector<Config> broken_configs() {
    std::vector<Config> configs;
    const Internal::GeneratorParamsMap f32_r1{{"stages", "3"}, {"register_stages", "1"}};
    const Internal::GeneratorParamsMap f16_r1 = with(tc, {{"type", "f16"}, {"stages", "3"}, {"register_stages", "1"}});
    const Internal::GeneratorParamsMap bf16_r2 =
        with(tc, {{"type", "bf16"}, {"stages", "3"}, {"register_stages", "2"}});
    for (const std::string fault :
         {"drop_barrier", "missing_war_barrier", "drop_wait", "wait_one_group_short", "slot_off_by_one"}) {
        configs.push_back({fault + "_f32_r1", "testing_gemm", cuda, with(f32_r1, {{"fault", fault}})});
        configs.push_back({fault + "_f16_r1", "testing_gemm", cuda, with(f16_r1, {{"fault", fault}})});
        if (fault != "drop_barrier") {  // with register stages, the tensor cores need the barrier
            configs.push_back({fault + "_bf16_r2", "testing_gemm", cuda, with(bf16_r2, {{"fault", fault}})});
        }
    }
    configs.push_back({"missing_war_barrier_f32_r1_staged", "testing_gemm", opencl,
                       with(f32_r1, {{"fault", "missing_war_barrier"}})});
    configs.push_back({"fragment_before_barrier_f32_r2",
                       "testing_gemm",
                       cuda,
                       {{"stages", "3"}, {"register_stages", "2"}, {"fault", "fragment_before_barrier"}}});
    // The tensor cores' register stages compose in their own rewrite: the fault is made on its
    // output (OpenCL, where the test hook applies it, then the emulation).
    configs.push_back({"fragment_before_barrier_bf16_r2", "testing_gemm", opencl,
                       with(bf16_r2, {{"tc_fault", "fragment_before_barrier"}})});
    return configs;
}

INSTANTIATE_TEST_SUITE_P(PipelineHazards, Broken, ::testing::ValuesIn(broken_configs()),
                         [](const auto &info) { return info.param.name; });

// The sizes a specialization fixes or rounds up outside the kernels (the plugin's branch of a
// runtime K), for runs that reach the kernel it launches; a kernel's own conditions fix none.
TEST(PipelineHazards, SpecializedSizesAreTheHostConditionsEqualitiesAndMultiples) {
    using namespace Halide::Internal;
    const Expr k = Variable::make(Int(32), "A.extent.0"), n = Variable::make(Int(32), "out.extent.0");
    const Expr b = Variable::make(Int(32), "B.extent.2"), p = Variable::make(Int(32), "p");
    const Expr tx = Variable::make(Int(32), "k.__thread_id_x");
    const Stmt in_kernel = IfThenElse::make(tx == 0 && tx % 4 == 0, Evaluate::make(0));
    const Stmt kernel = For::make("k.__block_id_x", 0, 4, ForType::GPUBlock, DeviceAPI::CUDA, in_kernel);
    const Stmt s = IfThenElse::make(k == 512 && n >= 128 && (n % 8 == 0) && (b % 4 == 0) && (p % 16 == 0),
                                    IfThenElse::make(n % 12 == 0 && k % 32 == 0, kernel), kernel);
    const alcop::SpecializedSizes sizes = alcop::specialized_sizes(s);
    EXPECT_EQ(sizes.values, (std::map<std::string, int64_t>{{"A.extent.0", 512}}));
    EXPECT_EQ(sizes.multiples,
              (std::map<std::string, int64_t>{{"A.extent.0", 32}, {"B.extent.2", 4}, {"out.extent.0", 24}, {"p", 16}}));
    // A fixed value wins; a buffer's dimension takes its size at the run's extent (the third
    // and later 3 below a whole tile), a Param the extent, each rounded up.
    EXPECT_EQ(sizes.at(100), (std::map<std::string, int64_t>{
                                 {"A.extent.0", 512}, {"B.extent.2", 4}, {"out.extent.0", 120}, {"p", 112}}));
    EXPECT_EQ(sizes.at(128), (std::map<std::string, int64_t>{
                                 {"A.extent.0", 512}, {"B.extent.2", 128}, {"out.extent.0", 144}, {"p", 128}}));
    EXPECT_EQ(sizes.to_string(), "A.extent.0 = 512, B.extent.2 rounded up to a multiple of 4, out.extent.0 rounded "
                                 "up to a multiple of 24, p rounded up to a multiple of 16");
    EXPECT_TRUE(alcop::specialized_sizes(kernel).empty());
}

}  // namespace
