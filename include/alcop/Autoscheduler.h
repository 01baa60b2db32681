#ifndef ALCOP_PUBLIC_AUTOSCHEDULER_H
#define ALCOP_PUBLIC_AUTOSCHEDULER_H

/** \file
 * Requests to the Alcop autoscheduler (the plugin HalideAlcop::Alcop), recorded on a
 * pipeline's output Func as alcop::pipeline records its own, so that they reach the plugin from
 * a Generator, where the build's environment cannot differ per library. They override the
 * environment (ALCOP_AUTOSCHEDULER_CANDIDATE, _GPU, _LIMITS). And the two functions its
 * schedule sources call.
 */

#include "Halide.h"

#include <string>
#include <vector>

namespace alcop {
namespace autoscheduler {

/** Tuning: apply the `rank`-th candidate (0: the model's choice, 1: the next best, ...) to the
 * pipeline whose output is `output`. rank < 0 is a user error. */
void request_candidate(Halide::Func output, int rank);

/** Model `gpu` (e.g. "H200", "A100") instead of the target's GPU: Halide 14's CUDA targets
 * stop at sm_86, so an sm_90 GPU can only be named. "" asks nothing. */
void request_gpu(Halide::Func output, const std::string &gpu);

/** Which launch limits the model assumes: "optin" for an app that links HalideAlcop::cuda_opt_in
 * (dynamic shared memory up to the GPU's maximum, registers up to 255), "default" for Halide
 * 14's CUDA runtime (48 KiB, 64 registers per thread). "" asks nothing. */
void request_limits(Halide::Func output, const std::string &limits);

// What the schedule sources the plugin writes (`-e schedule`) call besides Halide's and ALCOP's
// directives: a program that pastes one includes this header and links HalideAlcop::HalideAlcop.

/** Make `wrapper`, a Func::in() wrapper of a Func that reads an input buffer, read that buffer
 * at coordinates clamped to its bounds: along the dimensions `dims`, or all when it is empty.
 * Only the wrapper's own (unspecialized) definition changes: specializations made before keep
 * reading directly. Exact for every coordinate inside the buffer; coordinates outside it read
 * the nearest element instead of failing a bounds check. A dimension left out stays a plain
 * coordinate, which a copy can read as a vector. The generated schedule sources call it. */
void clamp_to_input_bounds(Halide::Func wrapper, const std::vector<int> &dims = {});

/** The extent of dimension `dim` of the RDom of `f`'s first update, as the algorithm wrote it
 * (e.g. the Variable `A.extent.0`). The generated schedule sources specialize on it; a schedule
 * only has the Funcs at hand, and Func::rvars() returns RVars without their RDom. */
Halide::Expr rdom_extent(const Halide::Func &f, int dim);

}  // namespace autoscheduler
}  // namespace alcop

#endif
