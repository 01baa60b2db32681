#ifndef ALCOP_AUTOSCHEDULER_SCHEDULE_STEPS_H
#define ALCOP_AUTOSCHEDULER_SCHEDULE_STEPS_H

/** \file
 * The one description of a schedule the Alcop autoscheduler builds: a list of steps, each one
 * C++ statement of the schedule source (a Func handle declared, a chain of directive calls on
 * a Func or Stage, a call of alcop::pipeline, clamp_to_input_bounds or alcop::enable), from
 * which both the schedule applied to the Funcs and the source printed are generated.
 *
 * What it does: Schedule::add() applies a step to the pipeline at once (later steps need what
 * it made: a wrapper's name and arguments, an rfactor's new Func) and keeps it; source()
 * prints every kept step as C++ for the body of the apply_schedule function Halide's
 * .schedule.h declares. Those two (with apply_call() and call_text(), side by side in
 * ScheduleSteps.cpp, one case per kind of call each) are the only places that interpret a
 * step, so a directive cannot be applied one way and printed another. The builders
 * (ContractionSchedule.cpp, RowReductionSchedule.cpp, PlainSchedule.cpp) make steps and
 * nothing else: they neither call Halide's scheduling methods nor write C++ themselves.
 *
 * Assumes: the steps are added in the order the source runs them; every FuncRef names a
 * handle declared by an earlier step.
 *
 * Guarantees: running the printed source on a fresh copy of the pipeline performs the same
 * calls with the same arguments in the same order (test/autoscheduler/schedule_source_test.cpp
 * checks the result); identifiers are unique C++ names derived from Halide's (without the "$n"
 * Halide appends to names used twice in a process), Vars and RVars declared on first use.
 */

#include "Halide.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace alcop {
namespace autoscheduler {

/** A loop dimension by name: a pure Var or an RVar. */
struct Dim {
    std::string name;
    bool rvar = false;
    Halide::VarOrRVar halide() const {
        return Halide::VarOrRVar(name, rvar);
    }
};

/** A Func handle of a schedule: the declaration step that made it. */
struct FuncRef {
    int id = -1;
    bool defined() const {
        return id >= 0;
    }
};

/** A condition a stage is specialized on: the conjunction of facts about the pipeline's sizes
 * that a schedule can state (empty: always true). */
struct Condition {
    struct Term {
        enum class Kind {
            RDomExtentIs,         ///< rdom_extent(func, dim) == value
            RDomExtentDivides,    ///< rdom_extent(func, dim) % value == 0
            OutputExtentDivides,  ///< func.output_buffer().dim(dim).extent() % value == 0
            OutputExtentAtLeast   ///< func.output_buffer().dim(dim).extent() >= value
        };
        Kind kind;
        FuncRef func;
        int dim = 0;
        int64_t value = 0;
    };
    std::vector<Term> terms;
    bool defined() const {
        return !terms.empty();
    }
};

/** A Func, one of its stages (update -1: the pure definition), and a specialization of it. */
struct StageRef {
    FuncRef func;
    int update = -1;
    Condition specialization;
    bool is_func() const {
        return update < 0 && !specialization.defined();
    }
};

/** One directive call in a chain (Halide::Internal::Call is an IR node, hence the name). */
struct StepCall {
    enum class Method {
        // On a Stage (or a Func's pure definition):
        Split,
        Fuse,
        Rename,
        Reorder,
        GpuBlocks,
        GpuThreads,
        GpuSingleThread,
        Unroll,
        Vectorize,
        // On a Func:
        ComputeAt,
        ComputeRoot,
        StoreIn,
        BoundExtent,
        ReorderStorage,
    };
    Method method;
    std::vector<Dim> dims;  ///< the dimensions it names, in the order of its arguments
    int factor = 0;         ///< Split: the factor; BoundExtent: the extent
    Halide::TailStrategy tail = Halide::TailStrategy::Auto;
    Halide::MemoryType memory = Halide::MemoryType::Auto;
    FuncRef at;            ///< ComputeAt: the Func whose loop dims[0] is
    bool new_line = true;  ///< layout only: printed on a line of its own
};

/** One statement. */
struct Step {
    enum class Kind {
        /// Func id = pipeline.get_func(index) | of.in(in) | of.in() | of.update(0).rfactor({...})
        DeclareFunc,
        Calls,     ///< stage.call().call()...; (no call: the stage alone, e.g. a specialize)
        Pipeline,  ///< alcop::pipeline(func, value[, alcop::Level::Register])
        Clamp,     ///< alcop::autoscheduler::clamp_to_input_bounds(func[, {dims...}])
        Enable,    ///< alcop::enable(pipeline, target)
        /// alcop::schedule_block_tile(stage, x, y, block_m, block_n[, {{row, extent}...}[, {batch...}[,
        /// m_tail[, n_tail]]]])
        BlockTile,
        /// alcop::store_block_accumulators(func, at, x, {{dim, extent}...})
        BlockAccumulators,
        /// alcop::schedule_tensor_core_tile(stage, x, y, warp_m, warp_n, {within...}, {chunks...})
        TensorCoreTile,
        /// alcop::schedule_thread_tile(stage, x, y, thread_m, thread_n[, {within...}, {chunks...}[, {rows...}[,
        /// tail]]])
        ThreadTile,
        TensorCores,  ///< alcop::tensor_cores(func, warp_m, warp_n)
        /// alcop::schedule_staged_copy(stage, {copied...}, vector_width, threads_x, threads[, false])
        StagedCopy,
        /// alcop::schedule_register_fragment(func[, x, value]): x the dense Var (none: empty)
        RegisterFragment,
    };
    enum class Origin { PipelineFunc, Wrapper, RFactor };
    Kind kind;
    // DeclareFunc
    Origin origin = Origin::PipelineFunc;
    int index = 0;   ///< PipelineFunc: the index in Pipeline::get_func order
    FuncRef of, in;  ///< Wrapper: of.in(in), or of.in() without `in`; RFactor: of.update(0).rfactor(...)
    /// RFactor: the (RVar, Var) pairs of rfactor({{rvar, var}, ...}); none: the whole reduction
    std::vector<std::pair<Dim, Dim>> rfactored;
    // Calls
    StageRef stage;
    std::vector<StepCall> calls;
    // Pipeline, Clamp
    FuncRef func;
    int value = 0;  ///< Pipeline: the stages
    bool register_level = false;
    std::vector<int> clamped;  ///< Clamp: the dimensions clamped (all when empty)
    // BlockTile, TensorCoreTile and ThreadTile (on `stage`), TensorCores (on `func`): the block's,
    // the warp's or the thread's tile; the block tile's N and M dimensions (ThreadTile: and
    // further M dimensions fused into the thread rows, and the splits' tail); the reduction
    // loops inside a chunk and the chunk loops
    int tile_m = 0, tile_n = 0;
    Dim x, y;
    std::vector<Dim> rows;
    // BlockTile: further M dimensions and their extents in the block tile, and the batch
    // dimensions fused into one block dimension. BlockAccumulators (on `func`, computed at
    // `at`'s loop x): each dimension bounded to its extent.
    std::vector<std::pair<Dim, int>> extents;
    std::vector<Dim> batches;
    FuncRef at;
    /// BlockTile: at the block tiles' edges along M (n_tail: along N); ThreadTile: at the
    /// threads' (Auto: not given).
    Halide::TailStrategy tail = Halide::TailStrategy::Auto, n_tail = Halide::TailStrategy::GuardWithIf;
    std::vector<Dim> within_chunk, chunks;
    // StagedCopy (on `stage`): the loops dealt out to the threads, innermost first, and how
    struct {
        std::vector<Dim> dims;
        int vector_width = 1, threads_x = 1, threads = 1;
        bool unroll_rounds = true;
    } copy;
    // Enable: alcop::Options' limits (0: the target's defaults, and plain enable(pipeline, target))
    int64_t shared_memory_limit = 0;
    int register_limit = 0;
    /** Printed on a line of its own before the statement. */
    std::string comment;
};

/** A chain of calls being built on one stage; added to its Schedule (and so applied) by
 * done(). Each method appends one StepCall. */
class Schedule;
class Chain {
public:
    Chain(Schedule &schedule, StageRef stage, bool calls_on_new_lines);
    Chain(const Chain &) = delete;

    Chain &split(const Dim &old, const Dim &outer, const Dim &inner, int factor,
                 Halide::TailStrategy tail = Halide::TailStrategy::Auto);
    Chain &fuse(const Dim &inner, const Dim &outer, const Dim &fused);
    Chain &rename(const Dim &old, const Dim &now);
    Chain &reorder(const std::vector<Dim> &dims);
    Chain &gpu_blocks(const std::vector<Dim> &dims);
    Chain &gpu_threads(const std::vector<Dim> &dims);
    Chain &gpu_single_thread();
    Chain &unroll(const Dim &d);
    Chain &vectorize(const Dim &d);
    Chain &compute_at(FuncRef f, const Dim &loop);
    Chain &compute_root();
    Chain &store_in(Halide::MemoryType memory);
    Chain &bound_extent(const Dim &var, int extent);
    Chain &reorder_storage(const std::vector<Dim> &dims);
    /** Layout only: the next call starts a line of its own (or, with false, continues this one). */
    Chain &new_line(bool on = true);

    /** Adds the statement (applied at once). A chain with no call adds its stage alone. */
    void done();

private:
    Chain &add(StepCall c);
    Schedule &schedule;
    Step step;
    bool next_new_line;
    bool added = false;
};

/** Fuses `dims` (innermost first) of `s` into one, named by joining theirs with '_'; returns
 * it, or an empty Dim where `dims` is empty. */
Dim fuse_into_one(Chain &s, const std::vector<Dim> &dims);

/** The steps of a schedule of one pipeline, applied as they are added. */
class Schedule {
public:
    /** The schedule of `p` for `target` (what alcop::enable is given). */
    Schedule(Halide::Pipeline p, Halide::Target target);

    /** The handle of a Func of the pipeline, declared (pipeline.get_func(index)) on first use. */
    FuncRef pipeline_func(const Halide::Internal::Function &f);
    /** A new handle: of.in(in), or of.in() (every consumer) when `in` is not defined. */
    FuncRef wrapper(FuncRef of, FuncRef in = {});
    /** A new handle: of.update(0).rfactor(pairs), the reduction of `of` over the pairs' RVars
     * in a Func of its own over their Vars; without pairs, the whole reduction. */
    FuncRef rfactor(FuncRef of, const std::vector<std::pair<Dim, Dim>> &pairs = {});

    /** A chain of stage directives on `stage`, each call on a line of its own. */
    Chain stage(StageRef stage) {
        return Chain(*this, std::move(stage), true);
    }
    Chain stage(FuncRef f, int update = -1, Condition specialization = {}) {
        return stage(StageRef{f, update, std::move(specialization)});
    }
    /** A chain of directives on Func `f`, the calls on its line unless new_line() is asked. */
    Chain func(FuncRef f) {
        return Chain(*this, StageRef{f, -1, {}}, false);
    }

    void pipeline(FuncRef f, int stages, bool register_level = false);
    void clamp_to_input_bounds(FuncRef f, const std::vector<int> &dims, const std::string &comment);
    /** alcop::schedule_block_tile on `stage` (the output's pure definition or update). */
    void block_tile(StageRef stage, const Dim &x, const Dim &y, int block_m, int block_n,
                    const std::vector<std::pair<Dim, int>> &rows, const std::vector<Dim> &batches,
                    Halide::TailStrategy m_tail = Halide::TailStrategy::GuardWithIf,
                    Halide::TailStrategy n_tail = Halide::TailStrategy::GuardWithIf);
    /** alcop::store_block_accumulators(acc, output, block_loop, tile). */
    void block_accumulators(FuncRef acc, FuncRef output, const Dim &block_loop,
                            const std::vector<std::pair<Dim, int>> &tile);
    /** alcop::schedule_tensor_core_tile on `stage` (a Func's pure definition or its update). */
    void tensor_core_tile(StageRef stage, const Dim &x, const Dim &y, int warp_m, int warp_n,
                          const std::vector<Dim> &within_chunk = {}, const std::vector<Dim> &chunks = {});
    /** alcop::schedule_thread_tile on `stage` (the output's, or the accumulator's pure
     * definition or update). */
    void thread_tile(StageRef stage, const Dim &x, const Dim &y, int thread_m, int thread_n,
                     const std::vector<Dim> &within_chunk = {}, const std::vector<Dim> &chunks = {},
                     const std::vector<Dim> &rows = {}, Halide::TailStrategy tail = Halide::TailStrategy::Auto);
    /** alcop::tensor_cores(f, warp_m, warp_n). */
    void tensor_cores(FuncRef f, int warp_m, int warp_n);
    /** alcop::schedule_staged_copy on `stage` (a staged tile's pure definition, or a
     * specialization of it). */
    void staged_copy(StageRef stage, const std::vector<Dim> &dims, int vector_width, int threads_x, int threads,
                     bool unroll_rounds);
    /** alcop::schedule_register_fragment(f, dense, extent), or (f) where `dense` has no name. */
    void register_fragment(FuncRef f, const Dim &dense, int extent);
    /** alcop::enable, with the launch limits set by set_launch_limits() if any. */
    void enable();
    /** The pass checks the kernels against these (alcop::Options::shared_memory_limit and
     * register_limit): the limits the model chose under, when they are not the defaults. */
    void set_launch_limits(int64_t shared_memory_bytes, int registers, const std::string &why) {
        launch_limits = {shared_memory_bytes, registers, why};
    }

    /** Applies `step` and keeps it. */
    void add(Step step);

    /** The Halide Func of a handle, as the steps so far made it. */
    Halide::Func handle(FuncRef f) const;
    /** A condition as the Expr the steps specialize on. */
    Halide::Expr expr(const Condition &c) const;

    /** The C++ of the steps: `header` (comment lines), a note on what the source uses, the Func
     * declarations, the Var and RVar declarations, then the statements. The declarations from
     * the first rfactor of named RVars on are statements where they run (it needs the split
     * before it). */
    std::string source(const std::string &header) const;

    /** A C++ identifier made of `name` (non-alphanumerics as '_', a leading digit prefixed). */
    static std::string sanitize(const std::string &name);

private:
    /** The Halide Stage a StageRef names (specializing, which returns the existing
     * specialization of an equal condition). */
    Halide::Stage stage_of(const StageRef &s) const;
    struct {
        int64_t shared_memory_bytes = 0;
        int registers = 0;
        std::string why;
    } launch_limits;
    friend class Chain;
    Halide::Pipeline p;
    Halide::Target target;
    std::vector<Step> steps;
    std::vector<Halide::Func> funcs;         // by FuncRef::id
    std::map<std::string, FuncRef> by_name;  // the pipeline's Funcs declared so far
};

}  // namespace autoscheduler
}  // namespace alcop

#endif
