// The structure of the lowered GEMM and batched matmul, for 1 to 4 stages.

#include "Halide.h"

#include "directive/Requests.h"
#include "analysis/PipelineSummary.h"

#include <gtest/gtest.h>

using namespace Halide;
using namespace Halide::Internal;

namespace {

Stmt lower_generator(const std::string &name, const GeneratorParamsMap &params) {
    Target t("host-opencl");
    auto gen = GeneratorRegistry::create(name, GeneratorContext(t));
    gen->set_generator_param_values(params);
    Stmt s;
    alcop::set_lowering_observer([&](const Stmt &, const Stmt &after, const auto &) { s = after; });
    gen->build_module(name);
    alcop::set_lowering_observer(nullptr);
    return s;
}

class GemmStages : public ::testing::TestWithParam<int> {};

TEST_P(GemmStages, HasSlotsPrologueGuardsAndOneBarrierPerIteration) {
    const int stages = GetParam();
    Stmt s = lower_generator("gemm", {{"stages", std::to_string(stages)}});
    alcop::PipelineSummary shape = alcop::summarize_pipeline(s, {"A_shared", "B_shared"});

    // Default tiles: A is tile_k x block_m = 8 x 64 floats, B is 64 x 8: 1024 floats a stage.
    EXPECT_EQ(shape.shared_elems, stages * 1024);
    // The accumulator was compacted from the block tile to one thread's window.
    EXPECT_LT(shape.register_elems, 64 * 64);
    ASSERT_FALSE(shape.loop.empty());
    for (const std::string f : {"A_shared", "B_shared"}) {
        EXPECT_EQ(shape.prologue_copies[f], stages - 1) << f;
        EXPECT_EQ(shape.guarded_prologue[f], stages - 1) << f;
        EXPECT_EQ(shape.loop_copies[f], 1) << f;
        EXPECT_EQ(shape.guarded_loop[f], stages > 1 ? 1 : 0) << f;
    }
    ASSERT_FALSE(shape.consumer_indices.empty());
    if (stages == 1) {
        // Untouched: Halide's barriers after each producer and at the end of the body.
        EXPECT_EQ(shape.loop_barriers, 3);
    } else {
        EXPECT_EQ(shape.loop_barriers, 1);
        EXPECT_TRUE(shape.barrier_after_loop);
        const std::string slot = "(" + shape.loop + " % " + std::to_string(stages) + ")";
        for (const std::string &index : shape.consumer_indices) {
            EXPECT_NE(index.find(slot), std::string::npos) << index;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Lowering, GemmStages, ::testing::Values(1, 2, 3, 4));

TEST(Lowering, BatchedMatMulIsPipelinedToo) {
    alcop::PipelineSummary shape = alcop::summarize_pipeline(
        lower_generator("bmm", {{"stages", "3"}, {"block_m", "32"}, {"block_n", "32"}}), {"A_shared", "B_shared"});
    EXPECT_EQ(shape.shared_elems, 3 * (8 * 32 * 2));
    EXPECT_EQ(shape.prologue_copies["A_shared"], 2);
    EXPECT_EQ(shape.loop_copies["B_shared"], 1);
    EXPECT_EQ(shape.loop_barriers, 1);
}

TEST(Lowering, BuffersOfOneLoopMayHaveDifferentStageCounts) {
    alcop::PipelineSummary shape = alcop::summarize_pipeline(
        lower_generator("gemm", {{"stages", "4"}, {"stages_b", "2"}}), {"A_shared", "B_shared"});
    EXPECT_EQ(shape.shared_elems, 4 * 512 + 2 * 512);
    EXPECT_EQ(shape.prologue_copies["A_shared"], 3);
    EXPECT_EQ(shape.prologue_copies["B_shared"], 1);
    EXPECT_EQ(shape.loop_barriers, 1);
}

TEST(Lowering, SlotsGoAfterABufferThatStaysInPlace) {
    // B is not pipelined: its 512 floats keep their place, A's three slots follow the old
    // allocation (1024 floats), and B's accesses are untouched.
    Stmt s = lower_generator("gemm", {{"stages", "3"}, {"stages_b", "1"}});
    alcop::PipelineSummary shape = alcop::summarize_pipeline(s, {"A_shared"});
    EXPECT_EQ(shape.shared_elems, 1024 + 3 * 512);
    EXPECT_EQ(shape.prologue_copies["A_shared"], 2);
    int a_reads = 0, b_reads = 0;
    for (const std::string &index : shape.consumer_indices) {
        if (index.find("% 3)") != std::string::npos) {
            a_reads++;
            EXPECT_NE(index.find("1024"), std::string::npos) << index;  // A moved past the old data
        } else {
            b_reads++;  // B, as Halide laid it out
        }
    }
    EXPECT_GT(a_reads, 0);
    EXPECT_GT(b_reads, 0);
}

TEST(Lowering, StagesOneIsUnchanged) {
    Stmt plain, pipelined;
    alcop::set_lowering_observer([&](const Stmt &before, const Stmt &after, const auto &) {
        plain = before;
        pipelined = after;
    });
    Target t("host-opencl");
    auto gen = GeneratorRegistry::create("gemm", GeneratorContext(t));
    gen->set_generator_param_values({{"stages", "1"}});
    gen->build_module("gemm");
    alcop::set_lowering_observer(nullptr);
    // Only the register compaction applies.
    alcop::PipelineSummary a = alcop::summarize_pipeline(plain, {"A_shared", "B_shared"}),
                           b = alcop::summarize_pipeline(pipelined, {"A_shared", "B_shared"});
    EXPECT_EQ(a.shared_elems, b.shared_elems);
    EXPECT_EQ(a.loop_barriers, b.loop_barriers);
    EXPECT_EQ(a.consumer_indices.size(), b.consumer_indices.size());
}

TEST(Lowering, DroppingTheBarrierShowsInTheIR) {
    alcop::PipelineSummary shape = alcop::summarize_pipeline(
        lower_generator("testing_gemm", {{"stages", "3"}, {"fault", "drop_barrier"}}), {"A_shared", "B_shared"});
    EXPECT_EQ(shape.loop_barriers, 0);
}

}  // namespace
