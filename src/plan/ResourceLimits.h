#ifndef ALCOP_RESOURCE_LIMITS_H
#define ALCOP_RESOURCE_LIMITS_H

/** \file
 * The limits a pipelined kernel must fit, checked on the plans before the rewrite builds
 * anything: each kernel's shared memory (its slots and the rest of its allocation) against
 * Options::shared_memory_limit, and each fragment loop's register slots against
 * Options::register_limit, each defaulting to what the target's runtime allows (Halide 14's
 * CUDA runtime: 48 KiB and 64 registers per thread; model::RuntimeLimits).
 *
 * Guarantees: a request over a limit is a user error that names the Funcs, what they need, the
 * limit, where it comes from and how to raise it, at compile time: never a launch failure, and
 * never a prologue so large that the compiler itself fails first.
 */

#include "analysis/FragmentAnalysis.h"
#include "analysis/PipelineAnalysis.h"
#include "plan/PipelinePlan.h"

#include <vector>

namespace alcop {

void check_resource_limits(const PipelineAnalysis &analysis, const std::vector<KernelPlan> &plans,
                           const std::vector<FragmentLoop> &fragments, const Options &options);

}  // namespace alcop

#endif
