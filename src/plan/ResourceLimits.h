#ifndef ALCOP_RESOURCE_LIMITS_H
#define ALCOP_RESOURCE_LIMITS_H

/** \file
 * The limits a pipelined kernel must fit, checked on the plans before the rewrite builds
 * anything: each kernel's shared memory (its slots and the rest of its allocation) against
 * Options::shared_memory_limit, and each fragment loop's register slots against
 * Options::register_limit, each defaulting to what the target's runtime allows (Halide 14's
 * CUDA runtime: 48 KiB and 64 registers per thread; model::RuntimeLimits).
 *
 * Each kernel's estimated registers are checked against the register limit too, after the
 * rewrite: ptxas spills what does not fit, so that is a warning unless the Options ask for an
 * error.
 *
 * Guarantees: a request over a limit is a user error that names the Funcs, what they need, the
 * limit, where it comes from and how to raise it, at compile time: never a launch failure, and
 * never a prologue so large that the compiler itself fails first.
 */

#include "analysis/FragmentAnalysis.h"
#include "analysis/KernelRegisters.h"
#include "analysis/PipelineAnalysis.h"
#include "plan/PipelinePlan.h"

#include <vector>

namespace alcop {

/** The limits themselves, as check_resource_limits() applies them: the shared memory one block
 * of a kernel on `device` may use, in bytes, and the 32-bit registers per thread the register
 * slots of one fragment loop may take (alcop::auto_pipeline chooses within them). */
int64_t kernel_shared_memory_limit(const Options &options, Halide::DeviceAPI device);
int fragment_register_limit(const Options &options);

void check_resource_limits(const PipelineAnalysis &analysis, const std::vector<KernelPlan> &plans,
                           const std::vector<FragmentLoop> &fragments, const Options &options);

/** Each kernel whose estimated registers (analysis/KernelRegisters.h, on the rewritten Stmt)
 * exceed the register limit: a warning naming its Func, the estimate and its basis, the limit
 * and why, and the fix; a user error with Options::spills_are_errors. A kernel with launch
 * bounds (`bounds`, by kernel: alcop::min_blocks_per_sm) is limited to what they leave a
 * thread, where that is less: ptxas caps its registers to fit the blocks asked for. Each
 * distinct message is said once (a Func's specializations share their kernel's name). */
void check_kernel_registers(const std::vector<KernelRegisters> &kernels, const Options &options,
                            const std::map<std::string, LaunchBounds> &bounds = {});

}  // namespace alcop

#endif
