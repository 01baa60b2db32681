#ifndef ALCOP_REQUESTS_H
#define ALCOP_REQUESTS_H

/** \file
 * What the directives (alcop/Directive.h) record on a Func, read back by the pass: the
 * pipeline request and the launch bound of each Function. Internal: users write the
 * directives; the pass, the tools and the tests read them here.
 */

#include "alcop/Directive.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace alcop {

/** What a user asked for one Func. */
struct PipelineRequest {
    int stages = 1;
    Level level = Level::Shared;
};

/** What alcop::tensor_cores() asked for an accumulator Func: its warp tile. */
struct TensorCoreRequest {
    int warp_m = 0;  ///< rows (y, the M side) of one warp's tile
    int warp_n = 0;  ///< columns (x, the N side)
};

/** The value of the last trace tag of `f` that starts with `prefix` (the tag without it), if
 * any: how every request (directives and autoscheduler requests) is read back, so that a
 * request made twice means the last one. */
std::optional<std::string> recorded(const Halide::Internal::Function &f, const std::string &prefix);

/** The tensor-core request recorded on a Function, if any (the last one wins). */
std::optional<TensorCoreRequest> requested_tensor_cores(const Halide::Internal::Function &f);

/** The pipeline request recorded on a Function, if any (the last one wins). */
std::optional<PipelineRequest> requested_pipeline(const Halide::Internal::Function &f);

/** The launch bound recorded on a Function, if any (the last one wins). */
std::optional<int> requested_min_blocks_per_sm(const Halide::Internal::Function &f);

/** Every Function of the pipeline whose outputs are `outputs`: the outputs, everything they
 * call, and the wrappers made by Func::in(), keyed by name. */
std::map<std::string, Halide::Internal::Function>
pipeline_functions(const std::vector<Halide::Internal::Function> &outputs);

/** What `requested` finds recorded on each Function of that pipeline, keyed by Func name. */
template<typename Request>
std::map<std::string, Request>
collect_recorded(const std::vector<Halide::Internal::Function> &outputs,
                 std::optional<Request> (*requested)(const Halide::Internal::Function &)) {
    std::map<std::string, Request> found;
    for (const auto &f : pipeline_functions(outputs)) {
        if (std::optional<Request> r = requested(f.second)) {
            found[f.first] = *r;
        }
    }
    return found;
}

/** Called by the lowering pass with the Stmt it received, the one it returns and the requests
 * it honoured (keyed by Func name), for tools and tests that inspect what it did
 * (process-wide, like Halide's CompilerLogger). An empty function removes it. */
using LoweringObserver = std::function<void(const Halide::Internal::Stmt &before, const Halide::Internal::Stmt &after,
                                            const std::map<std::string, PipelineRequest> &requests)>;
void set_lowering_observer(LoweringObserver observer);

}  // namespace alcop

#endif
