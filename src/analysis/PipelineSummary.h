#ifndef ALCOP_PIPELINE_SUMMARY_H
#define ALCOP_PIPELINE_SUMMARY_H

/** \file
 * Reads the shape of a lowered kernel back from its IR: the streaming loop that produces the
 * watched Funcs, its prologue copies and their guards, the copies and barriers of one
 * iteration, and what the consumers read. For alcop::inspect (alcop/Inspect.h) and tests; it
 * reads IR only and shares no code with the rewrite it describes.
 *
 * Func names are compared without Halide's uniquifying suffix ("A_shared$1" is "A_shared").
 */

#include "Halide.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace alcop {

struct PipelineSummary {
    int64_t shared_elems = -1;                    ///< the GPU shared allocation, in elements
    int64_t register_elems = -1;                  ///< the first register array (the accumulator), per thread
    std::string loop;                             ///< the serial loop holding the produce nodes
    std::map<std::string, int> prologue_copies;   ///< produce nodes before the loop
    std::map<std::string, int> guarded_prologue;  ///< ... under `if (p < extent)`
    std::map<std::string, int> loop_copies;       ///< produce nodes in the loop
    std::map<std::string, int> guarded_loop;      ///< ... under an if on the loop variable
    int loop_barriers = 0;                        ///< barriers run once per iteration
    bool barrier_after_loop = false;
    std::vector<std::string> consumer_indices;  ///< shared indices read in the loop, as text
    /** Stores into shared memory by copy kind, counted where they stand in the IR. */
    int async_copies = 0, staged_copies = 0, synchronous_copies = 0;
};

PipelineSummary summarize_pipeline(const Halide::Internal::Stmt &s, const std::set<std::string> &funcs);

/** A few human-readable lines. */
std::string describe(const PipelineSummary &s);

}  // namespace alcop

#endif
