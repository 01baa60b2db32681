#ifndef ALCOP_DIRECTIVE_H
#define ALCOP_DIRECTIVE_H

/** \file
 * The public scheduling directive of Halide-ALCOP.
 *
 * `alcop::pipeline(f, stages, level)` asks that the Func `f`, staged in GPU shared
 * memory (Level::Shared) or in registers (Level::Register) inside a serial loop under
 * gpu_blocks/gpu_threads, be multi-buffered with `stages` slots so that the copy of
 * iteration k + stages - 1 overlaps the compute of iteration k.
 *
 * The request is stored on the Func itself (as a trace tag, the one free-form field
 * a Halide 14 Function carries), so it travels with the Func into JIT pipelines,
 * Generators and autoscheduler plugins without any global state. `alcop::enable(p)`
 * installs the lowering pass that honours the requests of every Func of `p`; it is the
 * one line a pipeline needs.
 */

#include "Halide.h"

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace alcop {

/** Where a pipelined Func is staged. */
enum class Level {
    Shared,   ///< global -> GPU shared memory (block-wide slots, barriers)
    Register  ///< shared -> registers (per-thread slots)
};

const char *to_string(Level level);

/** What a user asked for one Func. */
struct PipelineRequest {
    int stages = 1;
    Level level = Level::Shared;
};

/** Ask for `f` to be pipelined with `stages` slots at `level`. stages == 1 changes
 * nothing; stages < 1 is a user error. A later call on the same Func replaces an
 * earlier one. Returns f so that the call reads like a schedule line. */
Halide::Func pipeline(Halide::Func f, int stages, Level level = Level::Shared);

/** The request recorded on a Function, if any. */
std::optional<PipelineRequest> requested_pipeline(const Halide::Internal::Function &f);

/** CUDA launch bounds for the kernel that computes `f` (a Func with gpu_blocks loops): at
 * least `blocks` blocks of it must fit on one SM, so ptxas keeps each thread's registers
 * within what that occupancy leaves (65536 / (threads x blocks)), spilling if it must, as
 * __launch_bounds__(threads, blocks) does in CUDA C++; the threads are the kernel's own. The
 * Alcop autoscheduler asks for the occupancy its model assumed. Other targets ignore it;
 * blocks < 1 is a user error. Returns f. */
Halide::Func min_blocks_per_sm(Halide::Func f, int blocks);

/** The launch bound recorded on a Function, if any. */
std::optional<int> requested_min_blocks_per_sm(const Halide::Internal::Function &f);

/** Deliberate defects for tests only: each must make a numerical or structural test fail. */
enum class Fault {
    None,
    DropBarrier,        ///< omit the per-iteration barrier of the steady state
    SlotOffByOne,       ///< consumers read slot (k + 1) % stages instead of k % stages (both levels)
    WaitOneGroupShort,  ///< every wait (prologue and loop) lets one group too many stay in flight
    DropWait,           ///< omit the per-iteration wait of the steady state (its barrier stays)
    /** Iteration k issues the copies of iteration k + 1 (tile k + stages, into slot
     * k % stages) right after its own consumers, before the wait and barrier that end it; the
     * prologue issues those of the first iteration. Every tile is still in place and visible
     * before it is read (read-after-write holds), but nothing separates the reads of slot
     * k % stages in iteration k from the copy into it: the write-after-read barrier is missing. */
    MissingWarBarrier,
    FragmentBeforeBarrier,  ///< two levels: the next tile's first fragments are loaded before
                            ///< the wait and barrier that publish that tile
};

/** How the copies of a pipelined Func are made. */
enum class CopyKind {
    Auto,            ///< Async where the target has cp.async (CUDA sm_80+), else RegisterStaged
    Synchronous,     ///< plain loads and stores at the prefetch point
    RegisterStaged,  ///< loads into registers before the compute, stores into the slot after it
    Async,           ///< cp.async with commit/wait groups (CUDA sm_80+ only)
    /** Test-only, any GPU target: cp.async's commit/wait semantics emulated in plain code.
     * Each copy is held in per-thread registers and written into its slot only by the wait
     * that retires its group, the latest moment cp.async allows, so that a missing or short
     * wait gives wrong numbers (see copy/CopyLowering.h). */
    EmulatedAsync
};

/** Options of the lowering pass. */
struct Options {
    /** The target the pipeline is compiled for: with CopyKind::Auto it decides how copies
     * are made. */
    Halide::Target target;
    CopyKind copies = CopyKind::Auto;
    Fault fault = Fault::None;
};

/** Install the ALCOP lowering pass on `p` (idempotent). Call it once per Pipeline; in
 * a Generator, call `alcop::enable(get_pipeline(), get_target())` from schedule(). The
 * target (by default the JIT target from the environment) only decides how copies are made. */
void enable(Halide::Pipeline p, const Options &options);
void enable(Halide::Pipeline p, const Halide::Target &target = Halide::get_jit_target_from_environment());

/** Called by the lowering pass with the Stmt it received, the one it returns and the requests
 * it honoured (keyed by Func name), for tools and tests that inspect what it did
 * (process-wide, like Halide's CompilerLogger). An empty function removes it. */
using LoweringObserver =
    std::function<void(const Halide::Internal::Stmt &before, const Halide::Internal::Stmt &after,
                       const std::map<std::string, PipelineRequest> &requests)>;
void set_lowering_observer(LoweringObserver observer);

}  // namespace alcop

#endif
