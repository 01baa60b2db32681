// The slot layout, on plain numbers.

#include "plan/PipelinePlan.h"

#include <gtest/gtest.h>

using namespace alcop;

namespace {

KernelPipelines kernel(std::vector<std::vector<StagedBuffer>> loops, bool has_other_buffers = false) {
    KernelPipelines k;
    k.has_other_buffers = has_other_buffers;
    for (auto &buffers : loops) {
        PipelineLoop l;
        l.buffers = buffers;
        k.loops.push_back(l);
    }
    return k;
}

}  // namespace

TEST(Plan, PacksSlotsOfAGemmFromTheStart) {
    // A's 8 x 64 floats at [0, 2048), B's at [2048, 4096), 3 stages each.
    KernelPlan p = plan_kernel(kernel({{{"A", 3, 0, 2048}, {"B", 3, 2048, 4096}}}));
    ASSERT_EQ(p.loops.size(), 1u);
    const auto &b = p.loops[0].buffers;
    EXPECT_EQ(p.anchor, Anchor::AllocationStart);
    EXPECT_EQ(b[0].slot_bytes, 2048);
    EXPECT_EQ(b[0].base, 0);
    EXPECT_EQ(b[0].prefetch_distance, 2);
    EXPECT_EQ(b[1].base, 3 * 2048);
    EXPECT_EQ(p.slot_bytes, 6 * 2048);
    EXPECT_EQ(p.loops[0].max_prefetch_distance, 2);
}

TEST(Plan, PerBufferStageCounts) {
    KernelPlan p = plan_kernel(kernel({{{"A", 4, 0, 1024}, {"B", 2, 1024, 1536}}}));
    const auto &b = p.loops[0].buffers;
    EXPECT_EQ(b[0].prefetch_distance, 3);
    EXPECT_EQ(b[1].prefetch_distance, 1);
    EXPECT_EQ(b[1].base, 4 * 1024);
    EXPECT_EQ(p.slot_bytes, 4 * 1024 + 2 * 512);
    EXPECT_EQ(p.loops[0].max_prefetch_distance, 3);
}

TEST(Plan, SlotsAreAlignedAndKeepTheTileResidue) {
    // A 100-byte tile starting at byte 36 (== 4 mod 16).
    KernelPlan p = plan_kernel(kernel({{{"A", 3, 36, 136}, {"B", 2, 136, 200}}}));
    const auto &b = p.loops[0].buffers;
    EXPECT_EQ(b[0].slot_bytes, 112);  // 100 rounded up to 16
    EXPECT_EQ(b[0].base % slot_alignment, 36 % slot_alignment);
    EXPECT_EQ(b[1].slot_bytes, 64);
    EXPECT_GE(b[1].base, b[0].base + 3 * b[0].slot_bytes);
    EXPECT_EQ(b[1].base % slot_alignment, 136 % slot_alignment);
}

TEST(Plan, AppendsAfterOldDataWhenOtherBuffersShareTheAllocation) {
    KernelPlan p = plan_kernel(kernel({{{"A", 2, 0, 512}}}, true));
    EXPECT_EQ(p.anchor, Anchor::AfterOldData);
    EXPECT_EQ(p.loops[0].buffers[0].base, 0);
    EXPECT_EQ(p.slot_bytes, 1024);
}

TEST(Plan, LoopsOfOneKernelReuseTheSameSlots) {
    KernelPlan p = plan_kernel(kernel({{{"A", 2, 0, 512}}, {{"C", 4, 0, 256}}}));
    EXPECT_EQ(p.loops[0].bytes, 1024);
    EXPECT_EQ(p.loops[1].bytes, 1024);
    EXPECT_EQ(p.loops[1].buffers[0].base, 0);
    EXPECT_EQ(p.slot_bytes, 1024);
}
