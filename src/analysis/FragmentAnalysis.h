#ifndef ALCOP_FRAGMENT_ANALYSIS_H
#define ALCOP_FRAGMENT_ANALYSIS_H

/** \file
 * Finds the loops whose register fragments can be pipelined (Level::Register), and proves
 * that pipelining them is legal.
 *
 * A fragment is a requested Func F (Level::Register, stages > 1) stored in a per-thread
 * array: an allocation inside the gpu_thread loops of a kernel, of constant size (Halide
 * hoists it out of F's loops to the thread level). Its loop L is the serial loop innermost
 * around F's produce node, inside the thread loops; typically the steps ki of a reduction
 * chunk whose operands F loads from shared memory.
 *
 * The rewrite unrolls L (a long L by groups of `stages` steps, see PipelineFragments.h), so
 * that every slot index is a constant and the slots stay in registers. For each L it checks,
 * raising a Halide user_error naming the Func:
 *  - F is computed inside the gpu_thread loops, inside a serial loop;
 *  - F is produced once per iteration of L (more produce nodes mean L's own loop was
 *    unrolled by the schedule, which the pass must do itself, after pipelining);
 *  - L has a constant extent of at least `stages - 1` (the prefetch distance), or is a
 *    shared-level streaming loop that produces F once per iteration (a one-step body, see
 *    FragmentLoop::one_step);
 *  - F's storage is a per-thread array of constant size allocated outside L;
 *  - F is written only by its producer, read only inside L and after its producer, and
 *    its producer reads nothing that L writes (it runs stages - 1 steps early);
 *  - L holds no barrier (register pipelining is per thread);
 *  - all fragments of one L have the same stage count (they share one prefetch distance,
 *    which is what lets the shared-level barrier move to one point; see PipelineFragments.h).
 * It changes nothing.
 */

#include "analysis/PipelineAnalysis.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace alcop {

/** A requested Level::Register Func. */
struct Fragment {
    std::string func;
    const Halide::Internal::Allocate *storage = nullptr;  ///< the per-thread array F stores into
    int64_t elements = 0;                                 ///< of one slot: the array's size
};

/** A serial loop whose fragments are pipelined. Its body is cut like a streaming loop's:
 * Producer statements produce one fragment each, the others are Compute. */
struct FragmentLoop {
    const Halide::Internal::For *loop = nullptr;
    /** Defined when the fragments are produced once per iteration of a shared-level
     * streaming loop `loop` itself, with no step loop between (Halide removes a loop of one
     * trip, e.g. the step loop of a chunk of one k step): then this statement of that loop's
     * body is the one step, extent is 1, and the fragments can only be pipelined composed
     * with the shared level, across its iterations. */
    Halide::Internal::Stmt one_step;
    int extent = 0;
    int stages = 1;
    std::vector<Fragment> fragments;
    LoopBody body;
};

/** Analyze `s` for the Level::Register requests among `requests` (keyed by Func name);
 * others are ignored. Throws Halide::CompileError (user_error) on illegal requests. */
std::vector<FragmentLoop> analyze_fragments(const Halide::Internal::Stmt &s,
                                            const std::map<std::string, PipelineRequest> &requests);

/** The buffers stored into inside `s` (none for an undefined Stmt). */
std::set<std::string> stored_buffers(const Halide::Internal::Stmt &s);

}  // namespace alcop

#endif
