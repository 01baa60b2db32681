// Synchronization faults that the numbers must catch, on pocl (OpenCL on the CPU).
//
// Missing and short waits, through the async-visibility emulation (CopyKind::EmulatedAsync,
// src/copy/CopyLowering.h): each copy reaches its slot only at the wait that retires its
// commit group, the latest moment cp.async allows. The correct pipeline must still match the
// reference at every stage count, per-buffer stage count and tail shape; with the steady-state
// wait missing, or every wait retiring one group too few, an iteration reads a tile that has
// not been written yet, whatever the order of the work-items. It reads the NaN the emulation
// puts into every slot first, not what earlier runs on the same inputs left in local memory
// (pocl reuses it), so these tests do not depend on what ran before them.
//
// A missing write-after-read barrier (Fault::MissingWarBarrier, test/support/PipelineFaults.h:
// iteration k reads slot k % stages and copies tile k + stages into it with no barrier
// between; staged copies store it after the consumers), with the default
// copies (staged through registers on OpenCL), on pocl's "loops" work-group method. That method
// runs the work-items of a work-group one after the other through each region between two
// barriers, so work-item 0 overwrites its part of the slot before the others have read it: the
// numbers are wrong, deterministically. The same pipeline with the barrier (gemm_s3, in
// matmul_test.cpp) is right on the same method. Two of pocl's implicit barriers shape the
// fault and the test:
//  - pocl puts barriers at the preheader, header and latch of every loop that has a barrier
//    (lib/llvmopencl/LoopBarriers.cc). A race across the back edge of the pipelined loop (the
//    rewrite's own order, with the copy of iteration k moved before the barrier that ends
//    iteration k - 1) is therefore never seen; the fault keeps the read and the write in one
//    iteration.
//  - pocl puts barriers around every innermost uniform loop without barriers
//    (ImplicitLoopBarriers.cc), which would isolate consumers with a loop inside from the copy
//    that follows them. The GEMM's consumers are unrolled, straight-line code.
// pocl's "cbs" method, which adds neither, is not in Debian's pocl 3.1 (it warns "Unknown work
// group generation method" and uses "auto"). Copies written late would hide the race: under
// the emulation at 3 stages the copy lands after the next barrier.

#include "GemmRun.h"

#include "gemm_emu_s2.h"
#include "gemm_emu_s3.h"
#include "gemm_emu_s3_r2.h"
#include "gemm_emu_s3_drop_wait.h"
#include "gemm_emu_s3_wait_one_group_short.h"
#include "gemm_emu_s4.h"
#include "gemm_emu_s4_b2.h"
#include "gemm_s3_missing_war_barrier.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using reference::gemm_mismatches;
using reference::GemmFn;

struct Shape {
    int m, n, k;

    /** Iterations of the pipelined loop (tile_k = 8). */
    int iterations() const {
        return (k + 7) / 8;
    }
};

std::string describe(const Shape &s) {
    return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// The shapes of matmul_test.cpp (64 x 64 blocks, tile_k = 8).
const Shape shapes[] = {
    {64, 64, 64},   // whole tiles
    {100, 70, 50},  // M, N not multiples of the block tile, K % tile_k != 0
    {33, 65, 8},    // K == tile_k: one iteration
    {40, 17, 12},   // K < stages * tile_k: the prologue is cut short
    {1, 1, 1},      // a single element
    {130, 3, 97},   // prime K, thin N, two block rows
};

struct Variant {
    const char *name;
    GemmFn fn;
};

void PrintTo(const Variant &v, std::ostream *os) {
    *os << v.name;
}

class Emulated : public ::testing::TestWithParam<Variant> {};

TEST_P(Emulated, MatchesReference) {
    for (const Shape &s : shapes) {
        EXPECT_EQ(gemm_mismatches(GetParam().fn, s.m, s.n, s.k), 0) << GetParam().name << " on " << describe(s);
    }
}

const Variant emulated[] = {
    {"gemm_emu_s2", gemm_emu_s2},       {"gemm_emu_s3", gemm_emu_s3},
    {"gemm_emu_s4", gemm_emu_s4},       {"gemm_emu_s4_b2", gemm_emu_s4_b2},  // A 3 tiles ahead, B 1: the waits follow B
    {"gemm_emu_s3_r2", gemm_emu_s3_r2},  // both levels: the wait moved into the steps
};

INSTANTIATE_TEST_SUITE_P(Stages, Emulated, ::testing::ValuesIn(emulated),
                         [](const ::testing::TestParamInfo<Variant> &info) { return std::string(info.param.name); });

/** Expects wrong numbers from a broken variant on every shape with at least `min_iterations`
 * iterations (on fewer, the fault changes nothing), and prints how many. */
void expect_caught(GemmFn fn, const char *fault, int min_iterations) {
    int shapes_checked = 0;
    for (const Shape &s : shapes) {
        if (s.iterations() < min_iterations) continue;
        const int bad = gemm_mismatches(fn, s.m, s.n, s.k);
        std::printf("%s on %s: %d of %d outputs wrong\n", fault, describe(s).c_str(), bad, s.m * s.n);
        EXPECT_GT(bad, 0) << fault << " on " << describe(s);
        shapes_checked++;
    }
    EXPECT_GE(shapes_checked, 3);
}

// Iteration 1 reads tile 1, which only the missing wait of iteration 0 would have written.
TEST(BrokenPipeline, MissingWaitIsCaught) {
    expect_caught(gemm_emu_s3_drop_wait, "drop_wait", 2);
}

// Already the prologue's wait leaves tile 0 in flight.
TEST(BrokenPipeline, ShortWaitIsCaught) {
    expect_caught(gemm_emu_s3_wait_one_group_short, "wait_one_group_short", 1);
}

// The first copy into a slot being read is that of tile 3, in iteration 0: it exists (is not
// guarded off) from 4 iterations on.
TEST(BrokenPipeline, MissingWarBarrierIsCaught) {
    expect_caught(gemm_s3_missing_war_barrier, "missing_war_barrier", 4);
}

}  // namespace

int main(int argc, char **argv) {
    // See above; the emulated variants do not depend on the method.
    setenv("POCL_WORK_GROUP_METHOD", "loops", 1);  // pinned: a user's value must not change what is checked
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
