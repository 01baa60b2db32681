#ifndef ALCOP_AUTOSCHEDULER_H
#define ALCOP_AUTOSCHEDULER_H

/** \file
 * The Alcop autoscheduler: schedules a contraction pipeline (Contraction.h) as the tiled,
 * shared-memory-staged, software-pipelined GPU kernel that generators/MatMulGenerator.cpp
 * writes by hand, choosing the tiles and stages with the analytical model (model/Search.h).
 * libautoschedule_alcop.so registers it with Halide under the name "Alcop".
 *
 * What it applies, for a recognized contraction `out = f = sum(a * b)` and the best-ranked
 * candidate (BM, BN, KT, TM, TN, S, R) it can express, whose k tile divides the estimated K and
 * whose block tile divides the estimated output (relaxed in that order when none does):
 *  - out: BN x BM tiles on GPU blocks (BM = bx * by over the first two M dimensions, further
 *    dimensions one block each), TN x TM register tiles on threads, guarded tails: any size.
 *    An output that accumulates itself is first split by out.update(0).rfactor({}) into
 *    `out = init; out += f` with f the whole reduction, and both stages of out are tiled;
 *  - f: computed per block in registers (store_in(MemoryType::Register), bound_extent to the
 *    block tile), its pure and update stages on the same threads;
 *  - a and b: staged per chunk in GPU shared memory through Func::in() wrappers copied by all
 *    threads, then alcop::pipeline(wrapper, S) on both and alcop::enable(pipeline, target);
 *  - with R >= 2: each thread's fragments of a and b, wrappers of those wrappers, computed at
 *    the serial step loop of a chunk in registers, alcop::pipeline(fragment, R,
 *    Level::Register). Halide wants that location in every branch, so where a chunk is one
 *    k step a one-trip loop of the same name is split off the register tile; Halide drops
 *    it, and the pass pipelines those fragments across the chunks, composed with the shared
 *    level (which is why R >= 2 needs S >= 2 there). For one M dimension (GEMM, batched
 *    GEMM); elsewhere the best candidate with R = 1.
 *
 * Pipelining needs each chunk's tile to have one constant size and place; Halide 14 guards the
 * tail of a reduction split it cannot prove exact, which moves the last tile. So the update of
 * f is scheduled in up to two branches:
 *  - chunks of KT: the first RDom variable split by KT (exact) and fused with the RDom's other
 *    variables into one serial loop, so that the pipeline runs across all of them. Taken always
 *    when the RDom extent is a constant multiple of KT; when it is a Param or buffer size (a
 *    Variable) whose estimate KT divides, under `specialize(extent == estimate)`, where Halide
 *    substitutes the value;
 *  - chunks of one element (1 divides every extent): the first RDom variable is the serial
 *    chunk loop, the others serial loops around it. Still pipelined; correct at every size.
 * f's block tile over-computes at the output's edges (bound_extent), reading the operands past
 * the output's edges. So the copies are specialized too: where K is chunked by KT and the output
 * is a whole number of block tiles they read the operands directly, 4-wide vectors along the
 * innermost dimension when the tile allows; otherwise, one element per thread, from input
 * buffers at coordinates clamped to the buffer (clamp_to_input_bounds), values that only feed
 * discarded outputs. An operand that is a computed Func, not an input buffer, is not clamped:
 * the edge blocks read it past the output's edges, which is safe for a Func defined everywhere
 * (a boundary condition) and a Halide bounds error at run time otherwise (a warning says so).
 *
 * A pipeline that is not a recognized contraction gets a plain GPU schedule (every Func that
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
 * Guarantees: the schedule applied and the source returned are the same directives
 * (test/autoscheduler/schedule_source_test.cpp); the ranking is the model's (deterministic); a
 * one-paragraph summary with the search time is printed on every call.
 */

#include "Halide.h"
#include "autoscheduler/Requests.h"
#include "autoscheduler/Contraction.h"
#include "model/GpuSpec.h"
#include "model/Search.h"

#include <iosfwd>
#include <optional>
#include <string>

namespace alcop {
namespace autoscheduler {

struct Options {
    /** The GPU the model predicts for; null: chosen from the target (gpu_for_target). */
    const model::GpuSpec *gpu = nullptr;
    /** Print the top candidates with their predicted times. */
    bool verbose = false;
    size_t top = 10;
    model::SearchOptions search;
    /** Where the summary (always) and the verbose table go. */
    std::ostream *log = nullptr;  // null: std::cerr
    /** Tuning: which of the candidates the schedule can express to apply, in the order of
     * preference (see the file comment); 0 is the model's choice. request_candidate() on an
     * output overrides it. */
    size_t candidate = 0;

    /** The defaults, overridden by the environment:
     *  ALCOP_AUTOSCHEDULER_VERBOSE=1  print the top candidates (ALCOP_AUTOSCHEDULER_TOP=n of them)
     *  ALCOP_AUTOSCHEDULER_GPU=A100   the GPU the model predicts for (see model::find_gpu)
     *  ALCOP_AUTOSCHEDULER_LIMITS=optin the launch limits of an app linking apps/common/CudaOptIn
     *                                 (shared memory up to the GPU's maximum, 255 registers)
     *                                 instead of Halide's runtime defaults (48 KiB, 64 registers)
     *  ALCOP_AUTOSCHEDULER_CANDIDATE=n apply the n-th candidate instead of the model's choice */
    static Options from_environment();
};


/** What autoschedule() decided. */
struct Result {
    std::optional<Contraction> contraction;  ///< empty: not recognized (why_not says why)
    std::string why_not;
    const model::GpuSpec *gpu = nullptr;
    model::SearchResult search;
    /** The applied candidate and its prediction (feasible only for a contraction). */
    model::Prediction chosen;
    /** Candidates the lowering could build and that run the fast path at the estimates. */
    size_t applicable = 0;
    /** The first RDom variable is chunked by KT (true) or, at every size, by 1 (false); when
     * true and k_condition is defined, only where k_condition holds (by 1 elsewhere). */
    bool k_chunked = false;
    Halide::Expr k_condition;
    std::string schedule_source;
};

/** The GPU a target is modelled as: its CUDA capability's GPU (sm_70 V100, sm_80 A100,
 * sm_86 RTX 3090, sm_89 RTX 4090, sm_90 H200), otherwise model::default_gpu(). */
const model::GpuSpec &gpu_for_target(const Halide::Target &target);

/** Schedule `p` for `target` as described above and return what was done. Throws
 * Halide::CompileError (user_error) for a non-GPU target. */
Result autoschedule(const Halide::Pipeline &p, const Halide::Target &target, const Options &options);

/** Make `wrapper`, a Func::in() wrapper of a Func that reads an input buffer, read that buffer
 * at coordinates clamped to its bounds. Only the wrapper's own (unspecialized) definition
 * changes: specializations made before keep reading directly. Exact for every coordinate
 * inside the buffer; coordinates outside it read the nearest element instead of failing a
 * bounds check. The generated schedule sources call it. */
void clamp_to_input_bounds(Halide::Func wrapper);

/** The extent of dimension `dim` of the RDom of `f`'s first update, as the algorithm wrote it
 * (e.g. the Variable `A.extent.0`). The generated schedule sources specialize on it; a schedule
 * only has the Funcs at hand, and Func::rvars() returns RVars without their RDom. */
Halide::Expr rdom_extent(const Halide::Func &f, int dim);

}  // namespace autoscheduler
}  // namespace alcop

#endif
