#ifndef ALCOP_AUTOSCHEDULER_H
#define ALCOP_AUTOSCHEDULER_H

/** \file
 * The Alcop autoscheduler: schedules a contraction pipeline (Contraction.h) as the tiled,
 * shared-memory-staged, software-pipelined GPU kernel that generators/MatMulGenerator.cpp
 * writes by hand, choosing the tiles and stages with the analytical model (model/Search.h).
 * libautoschedule_alcop.so registers it with Halide under the name "Alcop".
 *
 * What it applies, for a recognized contraction `out = f = sum(a * b)` and the best-ranked
 * candidate (BM, BN, KT, TM, TN, S) that the lowering can build:
 *  - out: BN x BM tiles (M split into bx * by over the first two M dimensions) on GPU
 *    blocks, TN x TM register tiles per thread, tails guarded (GuardWithIf): any size;
 *  - f: computed per block in registers (store_in(MemoryType::Register), bound_extent to the
 *    block tile), pure and update stages on the same threads;
 *  - the chunked reduction: the first RDom variable split by KT, the RDom's other variables
 *    fused into the serial chunk loop, so that one loop runs every chunk;
 *  - a and b staged per chunk in GPU shared memory through Func::in() wrappers copied by all
 *    threads (4-wide vectors along their innermost dimension when it allows), and
 *    alcop::pipeline(wrapper, S) on both; alcop::enable(pipeline, target).
 *
 * Pipelining needs every chunk's tile to have one constant size and place, and Halide 14
 * guards the tail of a reduction split it cannot prove exact, which moves the last tile. So:
 *  - when the chunked extent K is a constant multiple of KT, the split is exact;
 *  - when it is a Param or input-buffer size whose estimate is a multiple of KT, f's update
 *    is specialized on `K == estimate` (Halide substitutes the value in that branch); the
 *    other branch runs chunks of one element (KT = 1 always divides), still pipelined, so
 *    every K is correct and only the estimated one is fast;
 *  - otherwise every K runs chunks of one element, with a warning.
 * The block tile over-computes f at the edges of the output (bound_extent), which reads the
 * operands past the output's edges. The staged copies are therefore specialized too: when the
 * chunk is KT deep and the output's extents are multiples of the block tile they read the
 * operands directly (vectorized); otherwise they read input buffers through coordinates
 * clamped to the buffer (clamp_to_input_bounds), values that only feed discarded outputs.
 * An operand that is a computed Func rather than an input buffer cannot be clamped: there the
 * edge blocks read it past the output's edges, which is safe for a Func defined everywhere
 * (a boundary condition) and a Halide bounds error at run time otherwise (a warning says so).
 *
 * A pipeline that is not a recognized contraction gets a plain GPU schedule (every Func that
 * cannot be inlined at root, its parallel dimensions on 16 x 16 blocks of threads, or one
 * thread where no dimension is safe to parallelize), with a warning saying why it was not
 * recognized. Non-GPU targets are a user error.
 *
 * Guarantees: the schedule applied and the C++ returned as the schedule source are the same
 * directives; the ranking is the model's (deterministic); the search time is printed.
 */

#include "Halide.h"
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

    /** The defaults, overridden by the environment:
     *  ALCOP_AUTOSCHEDULER_VERBOSE=1  print the top candidates (ALCOP_AUTOSCHEDULER_TOP=n of them)
     *  ALCOP_AUTOSCHEDULER_GPU=A100   the GPU the model predicts for (see model::find_gpu)
     *  ALCOP_AUTOSCHEDULER_SMEM=optin the opt-in shared-memory limit instead of Halide's 48 KiB */
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
     * true and k_condition is defined, only where k_condition holds. */
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

}  // namespace autoscheduler
}  // namespace alcop

#endif
