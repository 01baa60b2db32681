#ifndef ALCOP_MODEL_SEARCH_H
#define ALCOP_MODEL_SEARCH_H

/** \file
 * Candidate search: enumerate the schedules our lowering can generate for a
 * contraction and rank them with the analytical model in CostModel.h.
 *
 * What it does: walks the cross product of block tiles, thread tiles, k tiles,
 * shared stages and register stages, keeps the structurally valid schedules
 * (see structurally_valid()), predicts each one, drops the infeasible ones
 * (over the shared-memory limit that applies, over register limits) and sorts
 * the rest by predicted time.
 *
 * Assumes: the space is small enough to enumerate exhaustively (the default
 * space has 19,200 points of which 13,008 are structurally valid), so no
 * pruning heuristics are needed; predict() is constant time.
 *
 * Guarantees: the ranking is deterministic (by predicted time; tensor-core
 * candidates within 1% of each other, which the model cannot tell apart, by how
 * busy their other pipes are beside the binding one; ties then broken by less
 * shared memory, then fewer registers, then the schedule's fields), and
 * every ranked schedule is feasible under the options given. Counts of what was
 * enumerated and why candidates were rejected come back with the ranking, as
 * does the wall time the search took.
 */

#include "model/CostModel.h"

#include <cstddef>
#include <string>
#include <vector>

namespace alcop {
namespace model {

struct SearchSpace {
    std::vector<int> block_tiles{16, 32, 64, 128, 256};  // BM and BN
    std::vector<int> thread_tiles{1, 2, 4, 8};           // TM and TN (warp tiles with tensor cores)
    std::vector<int> k_tiles{4, 8, 16, 32};              // KT
    int max_smem_stages = 6;                             // S in 1..max
    int max_reg_stages = 2;                              // R in 1..max
    /** Tensor-core schedules (Schedule::tensor_cores): thread_tiles are then warp tiles. */
    bool tensor_cores = false;

    /** The tensor-core space: block tiles 16..256, warp tiles 16, 32, 64 (M and N), k tiles 16,
     * 32, 64, S 1..6, R 1..2 (4,644 valid schedules). */
    static SearchSpace for_tensor_cores();
};

/** Every structurally valid schedule in `space`, in a fixed order. */
std::vector<Schedule> enumerate_schedules(const SearchSpace &space = SearchSpace());

struct SearchOptions {
    ModelOptions model;
    SearchSpace space;
    /** How many of the best candidates to return; 0 returns every feasible one. */
    size_t keep = 0;
};

struct SearchResult {
    Problem problem;
    std::string gpu_name;
    RuntimeLimits limits = RuntimeLimits::HalideDefault;
    /** Feasible candidates, fastest first (at most `keep` of them). */
    std::vector<Prediction> ranked;
    /** Structurally valid candidates predicted. */
    size_t enumerated = 0;
    size_t feasible = 0;
    /** Infeasible ones, by the first limit they broke. */
    size_t rejected_smem = 0;
    size_t rejected_registers = 0;
    size_t rejected_other = 0;
    /** Wall time of enumeration, prediction and ranking. */
    double seconds = 0;

    /** A table of the `top` best candidates with their predicted times and the
     * terms that explain them, preceded by the counts and the search time; with `explain`,
     * followed by each one's Prediction::explain(). */
    std::string report(size_t top = 10, bool explain = false) const;
};

SearchResult search(const Problem &p, const GpuSpec &gpu, const SearchOptions &options = SearchOptions());

}  // namespace model
}  // namespace alcop

#endif
