#ifndef ALCOP_PUBLIC_AUTOSCHEDULER_H
#define ALCOP_PUBLIC_AUTOSCHEDULER_H

/** \file
 * Requests to the Alcop autoscheduler (the plugin HalideAlcop::Alcop), recorded on a
 * pipeline's output Func as alcop::pipeline records its own, so that they reach the plugin from
 * a Generator, where the build's environment cannot differ per library. They override the
 * environment (ALCOP_AUTOSCHEDULER_CANDIDATE, _GPU, _LIMITS).
 */

#include "Halide.h"

#include <string>

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

}  // namespace autoscheduler
}  // namespace alcop

#endif
