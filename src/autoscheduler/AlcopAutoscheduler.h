#ifndef ALCOP_AUTOSCHEDULER_H
#define ALCOP_AUTOSCHEDULER_H

/** \file
 * The Alcop autoscheduler: schedules a contraction pipeline (Contraction.h) as the tiled,
 * shared-memory-staged, software-pipelined GPU kernel that generators/ContractionSchedule.h
 * writes by hand (with the same schedule helpers, alcop/Directive.h), choosing the tiles and stages with the analytical model (model/Search.h).
 * libautoschedule_alcop.so registers it with Halide under the name "Alcop".
 *
 * What it applies, for a recognized contraction `out = f = sum(a * b)` and the best-ranked
 * candidate (BM, BN, KT, TM, TN, S, R) it can express, whose k tile divides the estimated K and
 * whose block tile divides the estimated output (relaxed in that order when none does):
 *  - out: BN x BM tiles on GPU blocks (alcop::schedule_block_tile; BM = bx * by over the
 *    first two M dimensions, further dimensions one block each), TN x TM register tiles on
 *    threads, guarded tails: any size.
 *    An output that accumulates itself is first split by out.update(0).rfactor({}) into
 *    `out = init; out += f` with f the whole reduction, and both stages of out are tiled;
 *  - f: computed per block in registers (alcop::store_block_accumulators, bounded to the
 *    block tile), its pure and update stages on the same threads;
 *  - a and b: staged per chunk in GPU shared memory through Func::in() wrappers copied by all
 *    threads, then alcop::pipeline(wrapper, S) on both and alcop::enable(pipeline, target);
 *  - with R >= 2: each thread's fragments of a and b, wrappers of those wrappers, computed at
 *    the serial step loop of a chunk in registers, alcop::pipeline(fragment, R,
 *    Level::Register). For one M dimension (GEMM, batched GEMM) and K a constant the k tile
 *    divides (below); elsewhere the best candidate with R = 1.
 *
 * The update of f runs K in chunks of KT at every size: the first RDom variable split by KT and
 * fused with the RDom's other variables into one serial loop, so that the pipeline runs across
 * all of them. Pipelining needs each chunk's tile to have one constant size and place. Where
 * Halide cannot prove the split exact it guards the update of the last chunk's tail (an RVar
 * takes no other tail strategy), which would shrink that chunk's tile; so the staged tiles are
 * given their chunk's extents (bound_extent), and the copy of the tail reads past K, at clamped
 * coordinates, elements the guarded update never uses. The update has up to two branches:
 *  - exact: always when the RDom extent is a constant multiple of KT; when it is a Param or
 *    buffer size (a Variable) whose estimate KT divides, under `specialize(extent % KT == 0)`,
 *    where the pass proves every chunk whole (rewrite/WholeChunks.h: Halide's simplifier keeps
 *    the guards), or for a convolution (its chunks fused with the filter taps: a runtime chunk
 *    count costs divisions in every chunk) under `specialize(extent == estimate)`, where Halide
 *    substitutes the value;
 *  - guarded (every other extent): the same chunks, the last one guarded. Halide's loop
 *    partitioning gives that chunk's step loop min(K - k, KT) trips, a loop that neither
 *    mma.sync nor the register-level pass takes, so there the threads multiply-add.
 * f's block tile over-computes at the output's edges (bound_extent), reading the operands past
 * the output's edges. So the copies are specialized too: where the split of K is exact and every
 * block's tile lies inside the output (a whole number of block tiles; for a pure output, at
 * least one tile along each dimension and whole 16-byte vectors along N, the last blocks
 * shifted inwards over their neighbours: Candidates.h, shifts_edge_blocks) they read the
 * operands directly, 16-byte vectors along the innermost dimension when the tile allows;
 * otherwise from input buffers at coordinates clamped to the buffer (clamp_to_input_bounds),
 * values that only feed discarded outputs. Where
 * the split of K is exact and K has no runtime guard, only the coordinates that move with the
 * output are clamped (the edge blocks read past the buffer only there), so a tile whose
 * innermost coordinate is a reduction one (A's K, a conv input's channels) is still copied in
 * 16-byte vectors; elsewhere, one element per thread. An operand that is a computed Func, not
 * an input buffer, is not clamped: the edge blocks read it past the output's edges, which is
 * safe for a Func defined everywhere (a boundary condition) and a Halide bounds error at run
 * time otherwise (a warning says so).
 *
 * A contraction of fp16 or bf16 operands (fp32 accumulation) gets, on CUDA sm_80+ where K is a
 * multiple of 16 (a constant, or a Param or buffer size estimated at one), f is laid out (N,
 * M, ...) and the operands' innermost dimensions are K, M or N, the tensor-core schedule
 * instead (ContractionSchedule.h,
 * schedule_tensor_core_contraction): the model ranks the tensor-core space
 * (model::SearchSpace::for_tensor_cores()), and the output's and f's block tiles get the
 * mma.sync warp layout through alcop::schedule_tensor_core_tile (a convolution's M tile over
 * pixels of its width, rows and images, fused into one M loop), the operands are staged and
 * pipelined as above, the mma fragments get the model's register stages where they apply
 * (R = 2 with S >= 2 and R dividing a chunk's k steps: alcop::pipeline(f, 2, Level::Register)),
 * and alcop::tensor_cores(f) asks for mma.sync.
 * Elsewhere it gets the schedule above, on the converted operands, and a warning says why; so
 * does a contraction where tensor cores apply but none of their candidates fits the model's
 * limits (shared memory, registers: the warning names the output and counts the candidates
 * each limit rejected), the SIMT candidates being searched instead. Where no SIMT candidate
 * fits either, a user error names the output and the limits. A
 * runtime K gets mma.sync at every extent: f's update is specialized on K % KT == 0 (a
 * convolution's on its estimate), a branch whose chunks the pass proves whole 16-wide k steps
 * (rewrite/WholeChunks.h). At any other K the last chunk is a guarded step loop of
 * min(K - k, KT) trips, which no schedule of a sum over [0, K) can make whole: the pass
 * zero-fills that chunk's tail in both operand tiles and runs every k step
 * (rewrite/ZeroFilledTails.h), in the same warp tiles, over copies at clamped coordinates. The
 * summary says so.
 *
 * A pipeline that is not a recognized contraction but computes its output along rows from
 * reductions of each row (softmax, layernorm: RowReduction.h) gets the schedule of
 * RowReductionSchedule.h: a warp's lanes per row, each reduction split across them (rfactor),
 * the partials and the rows' values in shared memory.
 *
 * A pipeline that is neither gets a plain GPU schedule (every Func that
 * cannot be inlined at root, the two innermost dimensions that are safe to parallelize on
 * 16 x 16 (or 64) threads, one thread where none is) and a warning saying why it was not
 * recognized. Non-GPU targets are a user error.
 *
 * The schedule source it returns is C++ for the body of the apply_schedule function that
 * Halide's .schedule.h output declares (it uses `pipeline` and `target`); it needs
 * "Directive.h" and this header. Its header comment gives the contraction, the model GPU, the
 * number of candidates, the search time, the chosen candidate and its predicted time.
 *
 * Tuning: Options::candidate (or request_candidate() on an output) picks another candidate
 * than the model's choice, counted in that same order of preference among the candidates the
 * schedule can express (past the last, the last), so that measuring ranks 0..N-1 measures the
 * model's top N.
 *
 * Guarantees: the schedule applied and the source returned are the same directives: both are
 * generated from one list of steps (ScheduleSteps.h; test/autoscheduler/schedule_source_test.cpp
 * checks the result); the ranking is the model's (deterministic); a one-paragraph summary with
 * the search time is printed on every call.
 *
 * The files, one job each: Options.h (options, environment, requests), Contraction.h
 * (recognition), Candidates.h (the model's candidates the schedule can express, and the
 * choice), ContractionSchedule.h and PlainSchedule.h (the schedules, as steps),
 * ScheduleSteps.h (the steps: applied and printed), ScheduleSourceHelpers.cpp (what the printed
 * sources call, declared in alcop/Autoscheduler.h), this file (autoschedule(): the order of
 * those jobs, the summary and the source's header), Plugin.cpp (the registration with Halide).
 */

#include "Halide.h"
#include "alcop/Autoscheduler.h"
#include "autoscheduler/Contraction.h"
#include "autoscheduler/ContractionSchedule.h"
#include "autoscheduler/Options.h"
#include "autoscheduler/Requests.h"
#include "autoscheduler/RowReduction.h"
#include "model/GpuSpec.h"
#include "model/Search.h"

#include <optional>
#include <string>

namespace alcop {
namespace autoscheduler {

/** What autoschedule() decided. */
struct Result {
    std::optional<Contraction> contraction;  ///< empty: not recognized (why_not says why)
    std::string why_not;
    /** Not a contraction: the row reductions recognized instead (RowReduction.h), if any. */
    std::optional<RowReductions> row_reductions;
    const model::GpuSpec *gpu = nullptr;
    model::SearchResult search;
    /** The applied candidate and its prediction (feasible only for a contraction). */
    model::Prediction chosen;
    /** Candidates the lowering could build and that run the fast path at the estimates. */
    size_t applicable = 0;
    /** Where the chunks of K are exact and where the last one is guarded. */
    Chunking chunking;
    std::string schedule_source;
    /** The contraction has fp16/bf16 operands and gets the tensor-core schedule; where it has
     * them and does not, why not (the target below sm_80 or not CUDA, a K that is not a
     * constant multiple of 16, a layout ldmatrix cannot read, or no tensor-core candidate
     * within the model's limits): it then gets the FP32 SIMT schedule, with a warning. */
    bool tensor_cores = false;
    std::string tensor_cores_why_not;
};

/** Schedule `p` for `target` as described above and return what was done. Throws
 * Halide::CompileError (user_error) for a non-GPU target, and where no candidate fits the
 * model's limits. */
Result autoschedule(const Halide::Pipeline &p, const Halide::Target &target, const Options &options);

/** Registers autoschedule() with Halide as the scheduler "Alcop", its Options from the
 * environment: what loading the plugin does, and what a tool that links this library calls to
 * run it in its own process (where its lowering pass is the tool's, so that the tool's
 * observers see it). */
void register_with_halide();

}  // namespace autoscheduler
}  // namespace alcop

#endif
