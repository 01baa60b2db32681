#ifndef ALCOP_TEST_EMULATED_ASYNC_COPIES_H
#define ALCOP_TEST_EMULATED_ASYNC_COPIES_H

/** \file
 * The async-visibility emulation, a copy lowering for the tests (plugged in through
 * alcop::testing::Hooks::copies): cp.async's group semantics in plain code, on any GPU target,
 * with every copy written as late as cp.async allows.
 *
 * At issue, each store's value, index and predicate go into per-thread registers, in the entry
 * of a ring that belongs to the group being built (one entry per group that may be in flight);
 * commit counts the group; wait(n) writes every group but the newest n into its slots, oldest
 * first, and only then. Issuing into a full ring first writes the oldest group, which only
 * happens when groups pile up across iterations (a missing wait): still a completion order
 * cp.async allows. So a wait that is missing or retires too few groups leaves a tile out of its
 * slot when it is read, and the numbers are wrong whatever the order of the threads; every slot
 * is poisoned (NaN) before the prologue, so that such a read cannot find a right tile that an
 * earlier run left there either. Writing late is the wrong test for a missing write-after-read
 * barrier, whose race needs the write early: the other kinds catch that one
 * (test/opencl/fault_test.cpp). A copy with a loop inside is an error (its stores would need
 * one set of registers per trip).
 */

#include "directive/TestHooks.h"

namespace alcop {
namespace testing {

/** Makes `hooks` emulate the copies of every pipelined kernel instead of the chosen lowering. */
void emulate_async_copies(Hooks &hooks);

}  // namespace testing
}  // namespace alcop

#endif
