// Synchronization faults on the tensor-core path, caught by the numbers on pocl.
//
// The production gemm at f16 and bf16 (its testing wrapper: the same schedule, the ldmatrix
// and mma.sync markers emulated, test/support/EmulatedTensorCores.h), 32 x 32 blocks of four
// 16 x 16 warps, K tiles of 32, 3 shared stages, 1 or 2 register stages. The emulation adds no
// barrier or order of its own, so the pipeline's waits and barriers are the only ones, and
// each deliberate defect of the rewrite (src/directive/TestHooks.h) must give wrong numbers at
// some shape, while the same kernels without it give none. Copies go through the
// async-visibility emulation (each copy lands at the wait that retires its group, the latest
// moment cp.async allows; every slot poisoned with NaN first), except for a missing
// write-after-read barrier, whose race needs the write early: those variants use the default
// copies (staged through registers, written before the barrier), as in fault_test.cpp.
//
// pocl's "loops" work-group method (pinned below) runs the work-items of a work-group one after
// the other between two barriers, so a missing barrier is a deterministic race, not a rare one.

#include "TensorCoreNumbers.h"

#include "tcf_bf16_r1.h"
#include "tcf_bf16_r1_missing_war_barrier_staged.h"
#include "tcf_bf16_r1_slot_off_by_one.h"
#include "tcf_bf16_r1_staged.h"
#include "tcf_bf16_r1_s2.h"
#include "tcf_bf16_r1_s2_slot_off_by_one.h"
#include "tcf_bf16_r1_wait_one_group_short.h"
#include "tcf_bf16_r2.h"
#include "tcf_bf16_r2_drop_wait.h"
#include "tcf_bf16_r2_fragment_before_barrier.h"
#include "tcf_f16_r1.h"
#include "tcf_f16_r1_drop_wait.h"
#include "tcf_f16_r2.h"
#include "tcf_f16_r2_fragment_before_barrier.h"
#include "tcf_f16_r2_missing_war_barrier_staged.h"
#include "tcf_f16_r2_slot_off_by_one.h"
#include "tcf_f16_r2_staged.h"
#include "tcf_f16_r2_wait_one_group_short.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace tc_numbers;

// (batch 0, M, N, K.) One K tile; fewer K tiles than the stages; tails in M, N and K with
// several K tiles; everything below one tile.
const std::vector<MatMulShape> shapes{
    {0, 32, 32, 32}, {0, 64, 64, 64}, {0, 100, 72, 160}, {0, 33, 47, 200}, {0, 17, 9, 7}};

struct Variant {
    const char *name;
    Fn fn;
    halide_type_t type;
};

void PrintTo(const Variant &v, std::ostream *os) {
    *os << v.name;
}

std::string variant_name(const ::testing::TestParamInfo<Variant> &info) {
    return info.param.name;
}

class Clean : public ::testing::TestWithParam<Variant> {};

TEST_P(Clean, MatchesReference) {
    check_matmul(GetParam().fn, GetParam().type, shapes);
}

INSTANTIATE_TEST_SUITE_P(TensorCoreFaults, Clean,
                         ::testing::Values(Variant{"f16_r1", tcf_f16_r1, f16}, Variant{"f16_r2", tcf_f16_r2, f16},
                                           Variant{"bf16_r1", tcf_bf16_r1, bf16}, Variant{"bf16_r2", tcf_bf16_r2, bf16},
                                           Variant{"bf16_r1_staged", tcf_bf16_r1_staged, bf16},
                                           Variant{"f16_r2_staged", tcf_f16_r2_staged, f16},
                                           Variant{"bf16_r1_s2", tcf_bf16_r1_s2, bf16}),
                         variant_name);

class Broken : public ::testing::TestWithParam<Variant> {};

// Wrong numbers at some shape (every shape's count printed).
TEST_P(Broken, IsCaught) {
    int wrong = 0;
    for (const MatMulShape &s : shapes) {
        const int bad = matmul_mismatches(GetParam().fn, GetParam().type, s);
        ASSERT_GE(bad, 0) << "the pipeline failed";
        wrong += bad;
    }
    std::printf("%s: %d outputs wrong over the shapes\n", GetParam().name, wrong);
    EXPECT_GT(wrong, 0) << GetParam().name << " gave right numbers at every shape";
}

INSTANTIATE_TEST_SUITE_P(
    TensorCoreFaults, Broken,
    ::testing::Values(Variant{"f16_r1_drop_wait", tcf_f16_r1_drop_wait, f16},
                      Variant{"bf16_r2_drop_wait", tcf_bf16_r2_drop_wait, bf16},
                      Variant{"bf16_r1_wait_one_group_short", tcf_bf16_r1_wait_one_group_short, bf16},
                      Variant{"f16_r2_wait_one_group_short", tcf_f16_r2_wait_one_group_short, f16},
                      Variant{"bf16_r1_slot_off_by_one", tcf_bf16_r1_slot_off_by_one, bf16},
                      Variant{"f16_r2_slot_off_by_one", tcf_f16_r2_slot_off_by_one, f16},
                      Variant{"f16_r2_fragment_before_barrier", tcf_f16_r2_fragment_before_barrier, f16},
                      Variant{"bf16_r2_fragment_before_barrier", tcf_bf16_r2_fragment_before_barrier, bf16},
                      Variant{"bf16_r1_missing_war_barrier_staged", tcf_bf16_r1_missing_war_barrier_staged, bf16},
                      Variant{"f16_r2_missing_war_barrier_staged", tcf_f16_r2_missing_war_barrier_staged, f16},
                      Variant{"bf16_r1_s2_slot_off_by_one", tcf_bf16_r1_s2_slot_off_by_one, bf16}),
    variant_name);

}  // namespace

int main(int argc, char **argv) {
    setenv("POCL_WORK_GROUP_METHOD", "loops", 1);  // pinned: a user's value must not change what is checked
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
