// The slot layout, on plain numbers.

#include "plan/PipelinePlan.h"
#include "plan/Swizzle.h"

#include <gtest/gtest.h>

using namespace alcop;

namespace {

KernelPipelines kernel(std::vector<std::vector<StagedBuffer>> loops, bool has_other_buffers = false,
                       int64_t allocation_bytes = -1) {
    KernelPipelines k;
    k.has_other_buffers = has_other_buffers;
    k.allocation_bytes = allocation_bytes;
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

// Tensor-core operands (swizzled): their slots start on multiples of the swizzle's period and
// span whole periods, so every slot has the same swizzled layout and no 128-byte window
// straddles two slots; the other buffers keep 16-byte slots. A tile not at a multiple of 16
// bytes, or slots appended after data of unknown size, cannot move by whole periods: ordinary
// slots, not swizzled.
TEST(Plan, SwizzledOperandsGetPeriodAlignedSlots) {
    // A: 64 x 32 halves (4096 bytes); B: 1200 bytes; C: 100 bytes, not swizzled.
    KernelPlan p = plan_kernel(kernel({{{"C", 2, 0, 100}, {"A", 3, 112, 4208}, {"B", 2, 4208, 5408}}}), {"A", "B"});
    const auto &b = p.loops[0].buffers;
    EXPECT_FALSE(b[0].swizzled);
    EXPECT_EQ(b[0].slot_bytes, 112);
    for (int i : {1, 2}) {
        EXPECT_TRUE(b[i].swizzled) << b[i].func;
        EXPECT_EQ(b[i].base % swizzle_period, 0) << b[i].func;
        EXPECT_EQ(b[i].slot_bytes % swizzle_period, 0) << b[i].func;
    }
    EXPECT_EQ(b[1].slot_bytes, 4096);
    EXPECT_EQ(b[2].slot_bytes, 2048);  // 1200 rounded up to whole periods
    EXPECT_GE(b[1].base, 2 * 112);
    EXPECT_GE(b[2].base, b[1].base + 3 * 4096);
    const std::vector<SwizzleAlignedSlots> slots = swizzle_aligned_slots(p);
    ASSERT_EQ(slots.size(), 2u);
    EXPECT_EQ(slots[0].func, "A");
    EXPECT_EQ(slots[0].begin, b[1].base);
    EXPECT_EQ(slots[0].end, b[1].base + 3 * 4096);

    KernelPlan odd = plan_kernel(kernel({{{"A", 3, 36, 4132}}}), {"A"});
    EXPECT_FALSE(odd.loops[0].buffers[0].swizzled);
    EXPECT_EQ(odd.loops[0].buffers[0].base % slot_alignment, 36 % slot_alignment);
    KernelPlan appended = plan_kernel(kernel({{{"A", 2, 0, 4096}}}, true), {"A"});
    EXPECT_FALSE(appended.loops[0].buffers[0].swizzled);
    EXPECT_TRUE(swizzle_aligned_slots(appended).empty());
}

// Other buffers (fp32 tiles) keep ordinary 16-byte slots, and are marked aligned only where
// those slots happen to lie on whole periods: the mark never costs a byte.
TEST(Plan, OtherBuffersOnWholePeriodsAreMarkedAlignedForFree) {
    // A and B: 128 x 8 floats (4096 bytes) from byte 0; C: 1200 bytes after them.
    KernelPlan p = plan_kernel(kernel({{{"A", 3, 0, 4096}, {"B", 3, 4096, 8192}, {"C", 2, 8192, 9392}}}));
    const auto &b = p.loops[0].buffers;
    EXPECT_TRUE(b[0].swizzled);
    EXPECT_TRUE(b[1].swizzled);
    EXPECT_FALSE(b[2].swizzled);  // 1200 bytes: its slots are not whole periods
    EXPECT_EQ(b[1].base, 3 * 4096);
    EXPECT_EQ(b[2].slot_bytes, 1200);
    EXPECT_EQ(p.slot_bytes, 6 * 4096 + 2 * 1200);
    EXPECT_EQ(swizzle_aligned_slots(p).size(), 2u);

    // After C's 1200-byte slots, A's would need padding to reach a period: not marked.
    KernelPlan q = plan_kernel(kernel({{{"C", 2, 0, 1200}, {"A", 3, 1200, 5296}}}));
    EXPECT_FALSE(q.loops[0].buffers[1].swizzled);
    EXPECT_EQ(q.loops[0].buffers[1].base, 2 * 1200);
    EXPECT_TRUE(swizzle_aligned_slots(q).empty());
}

TEST(Plan, AppendsAfterOldDataWhenOtherBuffersShareTheAllocation) {
    KernelPlan p = plan_kernel(kernel({{{"A", 2, 0, 512}}}, true));
    EXPECT_EQ(p.anchor, Anchor::AfterOldData);
    EXPECT_EQ(p.loops[0].buffers[0].base, 0);
    EXPECT_EQ(p.slot_bytes, 1024);
}

// Issue #17, 6: a GEMV whose block keeps its accumulator (384 bytes) in the shared allocation
// beside the tile of the matrix (8320 bytes, 2 stages); Halide lays the accumulator, live
// across the loop, first. Appending the slots after both kept the tile's old bytes unused:
// 8704 + 2 x 8320 = 25344 bytes. The slots now start where the tile did: 384 + 2 x 8320.
TEST(Plan, SlotsReuseTheTilesOldBytesWhenOtherBuffersShareTheAllocation) {
    KernelPlan p = plan_kernel(kernel({{{"A", 2, 384, 8704}}}, true, 8704));
    EXPECT_EQ(p.anchor, Anchor::AllocationStart);
    EXPECT_EQ(p.loops[0].buffers[0].base, 384);
    EXPECT_EQ(p.total_bytes, 17024);
    EXPECT_TRUE(p.total_known);
    // Of unknown size, the old layout is kept and the slots appended, as before.
    KernelPlan unknown = plan_kernel(kernel({{{"A", 2, 384, 8704}}}, true));
    EXPECT_EQ(unknown.anchor, Anchor::AfterOldData);
    EXPECT_FALSE(unknown.total_known);
}

TEST(Plan, SlotsFillTheHolesOfTilesThatHoldThem) {
    // Other data at [0, 128) and [1152, 1280); A's tile (1024 bytes, 2 stages) at [128, 1152),
    // B's (256 bytes, 3 stages) at [1280, 1536), the end. A's 2048 bytes of slots do not fit
    // its old place and go from B's, which runs on past the end; B's 768 fit A's old place.
    KernelPlan p = plan_kernel(kernel({{{"A", 2, 128, 1152}, {"B", 3, 1280, 1536}}}, true, 1536));
    const auto &b = p.loops[0].buffers;
    EXPECT_EQ(b[0].base, 1280);
    EXPECT_EQ(b[1].base, 128);
    EXPECT_EQ(p.total_bytes, 1280 + 2 * 1024);  // appended: 1536 + 2 x 1024 + 3 x 256 = 4352
}

TEST(Plan, LoopsOfOneKernelReuseTheSameSlots) {
    KernelPlan p = plan_kernel(kernel({{{"A", 2, 0, 512}}, {{"C", 4, 0, 256}}}));
    EXPECT_EQ(p.loops[0].bytes, 1024);
    EXPECT_EQ(p.loops[1].bytes, 1024);
    EXPECT_EQ(p.loops[1].buffers[0].base, 0);
    EXPECT_EQ(p.slot_bytes, 1024);
}
