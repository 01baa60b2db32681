#ifndef ALCOP_TEST_TENSOR_CORE_FAULTS_H
#define ALCOP_TEST_TENSOR_CORE_FAULTS_H

/** \file
 * Defects of the tensor-core rewrite, made by the tests on the pass's output (before the
 * emulation, through alcop::testing::Hooks::output): each is a mistake the rewrite could
 * make, and the numbers on pocl must catch it (tensor_core_numbers_test). They act on the
 * ldmatrix markers (codegen/TensorCoreMarkers.h), so the rewrite itself carries no fault:
 *  - LaneMapping: each lane gives the row of the next lane of its group of 8 (lane
 *    8i + (r + 1) % 8 instead of 8i + r), as a rewrite that numbered the rows from 1 would;
 *  - DropTrans: every ldmatrix.trans becomes a plain ldmatrix (a transposed operand read as
 *    if it were not);
 *  - UnswizzledRows: the rows' addresses lose their swizzle (every XOR in them dropped), while
 *    the copies still store through it;
 *  - FragmentBeforeBarrier: with register stages, the next tile's first fragments are loaded
 *    before the barrier that publishes the tile (the statements after a barrier that load
 *    fragments go before it: PipelineFaults.h's fault of the same name, on ldmatrix loads).
 * A fault that finds nothing to break in a kernel with markers is an error, so that a test of
 * it cannot pass for want of a target.
 */

#include "Halide.h"

namespace alcop {
namespace testing {

enum class TensorCoreFault { None, LaneMapping, DropTrans, UnswizzledRows, FragmentBeforeBarrier };

Halide::Internal::Stmt break_tensor_cores(const Halide::Internal::Stmt &s, TensorCoreFault fault);

}  // namespace testing
}  // namespace alcop

#endif
