#ifndef ALCOP_LOWER_PIPELINES_H
#define ALCOP_LOWER_PIPELINES_H

/** \file
 * The ALCOP lowering pass: turns each streaming loop found by the analysis into a
 * multi-buffered software pipeline laid out by the plan. It runs as a Halide custom lowering
 * pass, after the final simplification and before GPU offload.
 *
 * For `for k in [min, min + E)` with pipelined buffers P of S_P stages (prefetch distance
 * d_P = S_P - 1, D = max d_P, n = min d_P - 1), it emits:
 *
 *   barrier                                  // the slots may have held other data before
 *   for p in [0, D): copy tile min+p of each P with p < d_P into slot p   (if p < E); commit
 *   wait(n); barrier                         // tile min is in place and visible
 *   for k:
 *     copy tile k + d_P of each P into slot (k - min + d_P) % S_P   (if k + d_P < min + E)
 *     commit
 *     consumers, reading P from slot (k - min) % S_P
 *     wait(n)                                // asynchronous kinds: tile k+1 of every P landed
 *     barrier                                // (a) tile k+1 is visible to every thread
 *                                            // (b) all threads left iteration k, so slot
 *                                            //     k % S_P == (k + 1 + d_P) % S_P is free
 *   wait(0); barrier                         // nothing in flight; slots free for reuse
 *
 * One barrier per iteration suffices: the only slot written in iteration k+1 is the one last
 * read in iteration k, and the only slot read in k+1 was written before it; both orders cross
 * the barrier that ends iteration k. Read cyclically, an iteration is wait -> barrier -> issue
 * the next copy -> compute, so the copies of tile k+d overlap the compute of tile k even with
 * 2 stages. The wait count n holds because each step commits exactly one group (possibly
 * empty, for a guarded-off tail), so when iteration k ends, the group holding tile k+1 of a
 * buffer with distance d is older than the newest d - 1 groups. The barriers Halide put after
 * each pipelined producer and at the end of the body become redundant and are dropped;
 * barriers between consumer stages stay. Tail prefetches are guarded off, so no tile past the
 * end is loaded. How a copy is emitted (cp.async, staged through registers, or synchronous) is
 * the CopyLowering's business; the registers it stages through are allocated around the loop.
 *
 * Register level (FragmentAnalysis.h, PipelineFragments.h): each fragment loop is unrolled
 * with its register slots (a long one by groups of them). When it is the last consumer of a
 * pipelined loop, it composes: the wait and barrier that end iteration k move into its steps,
 * just before the loads of tile k + 1's first fragments, and its register prologue follows the
 * shared one.
 *
 * A prologue that prefetches more than 15 tiles ahead is a loop over its steps rather than
 * unrolled. Before building anything, the kernel's shared memory and each fragment loop's
 * register slots are checked against Options::shared_memory_limit and register_limit.
 *
 * Assumes what the analysis checked; guarantees the same values as the unpipelined loop.
 */

#include "directive/Requests.h"
#include "directive/TestHooks.h"

#include <map>
#include <string>
#include <vector>

namespace alcop {

/** The rewrite for a bare Stmt and explicit requests (keyed by Func name). */
Halide::Internal::Stmt inject_pipelines(const Halide::Internal::Stmt &s,
                                        const std::map<std::string, PipelineRequest> &requests,
                                        const Options &options = Options(),
                                        const testing::Hooks &hooks = testing::Hooks());

/** The requests recorded on the Funcs of a pipeline (its outputs, everything they call,
 * and the wrappers made by Func::in()). */
std::map<std::string, PipelineRequest> collect_requests(const std::vector<Halide::Internal::Function> &outputs);

/** The launch bounds (alcop::min_blocks_per_sm) recorded on the same Funcs. */
std::map<std::string, int> collect_launch_bounds(const std::vector<Halide::Internal::Function> &outputs);

/** The custom lowering pass that alcop::enable() installs. */
class LowerPipelines : public Halide::Internal::IRMutator {
public:
    /** `automatic`: alcop::auto_pipeline, which adds the requests of plan/AutoPipeline.h to the
     * explicit ones (which win per Func). */
    LowerPipelines(std::vector<Halide::Internal::Function> outputs, Options options, testing::Hooks hooks,
                   bool automatic = false)
        : outputs(std::move(outputs)), options_(std::move(options)), hooks(std::move(hooks)), automatic(automatic) {
    }

    /** Called once by Halide with the whole lowered pipeline. */
    Halide::Internal::Stmt mutate(const Halide::Internal::Stmt &s) override;
    using Halide::Internal::IRMutator::mutate;

    const Options &options() const {
        return options_;
    }
    /** For a later alcop::enable() on the same Pipeline: its Options (and test hooks) replace
     * these. */
    void set_options(const Options &options, const testing::Hooks &hooks, bool automatic = false) {
        options_ = options;
        this->hooks = hooks;
        this->automatic = automatic;
    }
    bool is_automatic() const {
        return automatic;
    }

private:
    std::vector<Halide::Internal::Function> outputs;
    Options options_;
    testing::Hooks hooks;
    bool automatic = false;
};

}  // namespace alcop

#endif
