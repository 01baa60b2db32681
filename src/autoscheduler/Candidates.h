#ifndef ALCOP_AUTOSCHEDULER_CANDIDATES_H
#define ALCOP_AUTOSCHEDULER_CANDIDATES_H

/** \file
 * The Alcop autoscheduler's use of the model's search (model/Search.h): which of the ranked
 * candidates (BM, BN, KT, TM, TN, S, R) the schedule can express on a contraction, laid out
 * over its dimensions, and which one to apply.
 *
 * Order of preference: the model's ranking, first among the candidates whose block tile
 * divides the estimated output and whose k tile divides the estimated K (the fast path at the
 * estimates), then those whose k tile divides K, then the rest. The model's choice is the
 * first; a tuning request counts in that order (past the last: the last).
 *
 * Assumes: the search ranked candidates for c.problem.
 * Guarantees: deterministic (the model's ranking is); never changes the pipeline.
 */

#include "autoscheduler/Contraction.h"
#include "model/Search.h"

#include <optional>
#include <string>
#include <vector>

namespace alcop {
namespace autoscheduler {

/** How a model candidate maps onto the contraction's dimensions. */
struct Mapping {
    model::Schedule s;
    /** The M block tile along the first M dimensions (Contraction::m_dims(), in order): BM
     * rows for one M dimension; for a convolution's pixels, its width and rows (SIMT: the
     * register tile runs along the width), with tensor cores its images too (the warp layout
     * takes them fused into one M loop). Further M dimensions index blocks. */
    std::vector<int> m_tile;
    /** The estimated output runs the kernel of whole tiles: it is a whole number of block tiles
     * or, where the edge blocks shift inwards (shifts_edge_blocks), at least one along each
     * dimension and a whole number of copy vectors along N (vector_elements). */
    bool divisible = false;
    bool k_divisible = false;
};

/** The M tile as printed: "128x1", "8x8", "2x2x4". */
std::string m_tile_text(const Mapping &m);

/** Whether every size runs chunks of exactly s.kt: the reduction's first extent is a constant
 * the k tile divides, so that no branch guards the last chunk. */
bool guard_free(const Contraction &c, const model::Schedule &s);

/** The chunks the pipeline runs over: the k tile's chunks of the first reduction variable
 * (at its estimated extent) times the extents of the others, which the chunk loop fuses. */
int64_t chunk_count(const Contraction &c, int kt);

/** Whether the edge blocks of `c` along M and N shift inwards over their neighbours
 * (alcop::schedule_block_tile with TailStrategy::ShiftInwards), so that every output at least
 * one block tile large (and along N a whole number of copy vectors) runs the kernel of whole
 * tiles, not the one of clamped copies: where the output's stage that reads the accumulators
 * is a pure definition (`out += f` would add the overlap twice). The clamped copies gather
 * elements, and their loops spend up to three times the instructions of whole tiles beside
 * each mma.sync or FFMA; without the shift the choice falls back to a tile that divides the
 * output (docs/mainloop.md has the figures). */
bool shifts_edge_blocks(const Contraction &c);

/** The elements of one 16-byte copy vector of c's operands. Where the edge blocks shift
 * inwards along N too, the last block starts at N less the block tile: on a vector boundary of
 * the operand indexed by N (so that its copies stay cp.async) only where N is a multiple of
 * the vector, which the kernel of whole tiles also asks. */
int vector_elements(const Contraction &c);

/** Whether a tensor-core candidate's register stages can apply: R = 1, or both tiles pipelined
 * (the fragments prefetch across chunks) and R dividing the chunk's k steps (kt / 16). */
bool tensor_core_register_stages_apply(const model::Schedule &s);

/** The candidate as tiles of `c`, or nothing if the schedule cannot express it. */
std::optional<Mapping> map_candidate(const Contraction &c, const model::Schedule &s);

/** The expressible candidates of a search in the order of preference, and the one applied. */
struct Choice {
    std::vector<Mapping> preferred;
    size_t exact = 0;  ///< how many (the first) tile the estimates exactly
    size_t rank = 0;   ///< the one applied
    /** Whether there is one to apply at all: the search found a feasible candidate the schedule
     * can express. */
    bool any() const {
        return !preferred.empty();
    }
    const Mapping &chosen() const {
        return preferred[rank];
    }
};

/** The choice among `search`'s candidates for `c`, the `candidate`-th in the order of
 * preference (clamped to the last). Empty (!any()) if none is expressible: the caller falls
 * back or says why (AlcopAutoscheduler.cpp). */
Choice choose(const Contraction &c, const model::SearchResult &search, size_t candidate);

/** Why the model's best-ranked candidate is not the one applied, as a clause for the summary
 * ("; best-ranked ... predicts ... us but ..."), or "" when it is. */
std::string why_not_best_ranked(const Contraction &c, const model::SearchResult &search, const Mapping &chosen);

}  // namespace autoscheduler
}  // namespace alcop

#endif
