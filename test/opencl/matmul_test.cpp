// The pipelined GEMM and batched matmul, run on the CPU through OpenCL (pocl), against a
// double-precision reference, for stages 1..4 and shapes with every kind of tail.

#include "HalideBuffer.h"
#include "GemmRun.h"
#include "HalideRuntime.h"

#include "bmm_s1.h"
#include "bmm_s2.h"
#include "bmm_s3.h"
#include "bmm_s4.h"
#include "gemm_s1.h"
#include "gemm_s2.h"
#include "gemm_s3.h"
#include "gemm_s3_slot_off_by_one.h"
#include "gemm_s4.h"
#include "gemm_s4_b2.h"
#include "gemm_s3_b1.h"
#include "gemm_s1_r1.h"
#include "gemm_s1_r2.h"
#include "gemm_s2_r1.h"
#include "gemm_s2_r2.h"
#include "gemm_s3_r1.h"
#include "gemm_s3_r2.h"
#include "gemm_s4_r1.h"
#include "gemm_s4_r2.h"
#include "gemm_s3_r3.h"
#include "gemm_s2_r5_k4.h"
#include "gemm_s1_b2_r2.h"
#include "gemm_s2_b1_r2.h"
#include "gemm_s2_b1_r3.h"
#include "gemm_t8_s3_r1.h"
#include "gemm_t8_s3_r2.h"
#include "gemm_optin.h"
#include "bmm_s2_r2.h"
#include "gemm_s1_r2_slot_off_by_one.h"
#include "gemm_s2_r2_fragment_before_barrier.h"
#include "gemm_s3_split3.h"
#include "bmm_s2_r2_split2.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

using MatMulFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct Shape {
    int batch, m, n, k;
};

std::string describe(const Shape &s) {
    return std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// Outputs not written or off the reference (test/common/GemmRun.h).
int count_mismatches(MatMulFn fn, const Shape &s, bool batched) {
    const int wrong = reference::gemm_mismatches(fn, s.m, s.n, s.k, batched ? s.batch : 0);
    EXPECT_GE(wrong, 0) << "pipeline returned an error for " << describe(s);
    return wrong;
}

struct Variant {
    const char *name;
    MatMulFn fn;
    bool batched;
};

void PrintTo(const Variant &v, std::ostream *os) {
    *os << v.name;
}

const Variant variants[] = {
    {"gemm_s1", gemm_s1, false},
    {"gemm_s2", gemm_s2, false},
    {"gemm_s3", gemm_s3, false},
    {"gemm_s4", gemm_s4, false},
    {"gemm_s4_b2", gemm_s4_b2, false},
    {"gemm_s3_b1", gemm_s3_b1, false},
    {"bmm_s1", bmm_s1, true},
    {"bmm_s2", bmm_s2, true},
    {"bmm_s3", bmm_s3, true},
    {"bmm_s4", bmm_s4, true},
    // Shared stages x register stages.
    {"gemm_s1_r1", gemm_s1_r1, false},
    {"gemm_s1_r2", gemm_s1_r2, false},
    {"gemm_s2_r1", gemm_s2_r1, false},
    {"gemm_s2_r2", gemm_s2_r2, false},
    {"gemm_s3_r1", gemm_s3_r1, false},
    {"gemm_s3_r2", gemm_s3_r2, false},
    {"gemm_s4_r1", gemm_s4_r1, false},
    {"gemm_s4_r2", gemm_s4_r2, false},
    {"gemm_s3_r3", gemm_s3_r3, false},
    {"gemm_s2_r5_k4", gemm_s2_r5_k4, false},
    // One operand pipelined at the shared level, register stages for both.
    {"gemm_s1_b2_r2", gemm_s1_b2_r2, false},
    {"gemm_s2_b1_r2", gemm_s2_b1_r2, false},
    {"gemm_s2_b1_r3", gemm_s2_b1_r3, false},
    {"bmm_s2_r2", bmm_s2_r2, true},
    // 8 x 8 thread tiles: B's slots swizzled by windows.
    {"gemm_t8_s3_r1", gemm_t8_s3_r1, false},
    {"gemm_t8_s3_r2", gemm_t8_s3_r2, false},
    // The fp32 defaults under the opt-in: 128x128x16, 8 x 8 a thread, S4 R2.
    {"gemm_optin", gemm_optin, false},
    // Split-K (split_k=3, 2): each part's sums a block tile of their own, added by a second kernel.
    {"gemm_s3_split3", gemm_s3_split3, false},
    {"bmm_s2_r2_split2", bmm_s2_r2_split2, true},
};

// Tile sizes of the generators' defaults: 64 x 64 blocks, tile_k = 8.
const Shape shapes[] = {
    {1, 64, 64, 64},   // whole tiles
    {1, 100, 70, 50},  // M, N not multiples of the block tile, K % tile_k != 0
    {1, 33, 65, 8},    // K == tile_k: one iteration
    {1, 40, 17, 12},   // K < stages * tile_k: the prologue is cut short
    {1, 1, 1, 1},      // a single element
    {1, 130, 3, 97},   // prime K, thin N, two block rows
};

// The last two have more iterations (8 and 13) than the deepest pipeline has slots (4), so
// every slot is reused, as in the GEMM's shapes.
const Shape batched_shapes[] = {
    {3, 50, 40, 30}, {2, 64, 64, 8}, {4, 7, 5, 3}, {2, 64, 64, 64},  // whole tiles
    {2, 70, 45, 97},                                                 // prime K, every tail
};

class MatMul : public ::testing::TestWithParam<Variant> {};

TEST_P(MatMul, MatchesReference) {
    const Variant &v = GetParam();
    if (v.batched) {
        for (const Shape &s : batched_shapes) {
            EXPECT_EQ(count_mismatches(v.fn, s, true), 0) << v.name << " on " << describe(s);
        }
    } else {
        for (const Shape &s : shapes) {
            EXPECT_EQ(count_mismatches(v.fn, s, false), 0) << v.name << " on " << describe(s);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Stages, MatMul, ::testing::ValuesIn(variants),
                         [](const ::testing::TestParamInfo<Variant> &info) { return std::string(info.param.name); });

// The checker bites: a deliberately broken pipeline must produce wrong numbers. (A missing
// barrier is caught by the IR and PTX tests; pocl does not reliably expose it as a race.)
TEST(BrokenPipeline, SlotOffByOneIsCaught) {
    EXPECT_GT(count_mismatches(gemm_s3_slot_off_by_one, {1, 100, 70, 50}, false), 0);
}

TEST(BrokenPipeline, RegisterSlotOffByOneIsCaught) {
    EXPECT_GT(count_mismatches(gemm_s1_r2_slot_off_by_one, {1, 100, 70, 50}, false), 0);
}

TEST(BrokenPipeline, FragmentLoadedBeforeItsTileIsPublishedIsCaught) {
    EXPECT_GT(count_mismatches(gemm_s2_r2_fragment_before_barrier, {1, 100, 70, 50}, false), 0);
}

}  // namespace

int main(int argc, char **argv) {
    // pocl's default work-group method runs the work-items of a loop iteration in lockstep
    // (implicit barriers at loop headers), which would hide a missing barrier. The "loops"
    // method runs each work-item alone from one barrier to the next: a race shows up.
    setenv("POCL_WORK_GROUP_METHOD", "loops", 1);  // pinned: a user's value must not change what is checked
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
