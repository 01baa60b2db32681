#include "autoscheduler/Candidates.h"

#include "Error.h"

#include <iomanip>
#include <sstream>

namespace alcop {
namespace autoscheduler {

bool guard_free(const Contraction &c, const model::Schedule &s) {
    const int64_t *k = Halide::Internal::as_const_int(c.rvars[0].extent);
    return k && *k % s.kt == 0;
}

int64_t chunk_count(const Contraction &c, int kt) {
    int64_t chunks = (c.rvars[0].extent_estimate + kt - 1) / kt;
    for (size_t i = 1; i < c.rvars.size(); i++) chunks *= std::max<int64_t>(1, c.rvars[i].extent_estimate);
    return chunks;
}

bool shifts_edge_blocks(const Contraction &c) {
    return !c.output_accumulates;
}

int vector_elements(const Contraction &c) {
    return 16 / model::element_bytes(c.problem.element);
}

bool tensor_core_register_stages_apply(const model::Schedule &s) {
    return s.reg_stages <= 1 || (s.smem_stages > 1 && (s.kt / 16) % s.reg_stages == 0);
}

std::string m_tile_text(const Mapping &m) {
    std::ostringstream os;
    for (size_t i = 0; i < m.m_tile.size(); i++) {
        os << (i ? "x" : "") << m.m_tile[i];
    }
    if (m.m_tile.size() == 1) os << "x1";
    return os.str();
}

std::optional<Mapping> map_candidate(const Contraction &c, const model::Schedule &s) {
    // More shared stages than chunks only fill slots no chunk reads (and the pass rejects a
    // pipeline over a loop of one chunk, which is no loop): at most one stage a chunk.
    if (s.smem_stages > 1 && s.smem_stages > chunk_count(c, s.kt)) return std::nullopt;
    // Register fragments (R >= 2) of the SIMT schedule need a thread's fragment to be a
    // constant number of elements: with one M dimension (GEMM, batched GEMM) TM (or TN)
    // values; with two (an implicit-GEMM conv's pixel tile) its bounds go through the fused
    // thread variable.
    if (!s.tensor_cores && s.reg_stages > 1 && c.m_dims().size() != 1) return std::nullopt;
    // Register stages of the mma fragments (ldmatrix R - 1 k steps ahead, across chunks) need
    // both tiles pipelined and R dividing the chunk's k steps; their registers are in the
    // model's estimate.
    if (s.tensor_cores && !tensor_core_register_stages_apply(s)) return std::nullopt;
    Mapping m;
    m.s = s;
    const std::vector<int> md = c.m_dims();
    // The SIMT schedule tiles two M dimensions (the thread tile's TM along the first); the
    // tensor-core schedule fuses the tiled ones into one M loop, which any factors serve.
    m.m_tile = model::m_tile_shape(s, c.problem.m_extents);
    if (m.m_tile.empty()) return std::nullopt;
    const int64_t n = c.dims[c.n_dim()].extent, k = c.rvars[0].extent_estimate;
    const bool shifted = shifts_edge_blocks(c);
    m.divisible = shifted ? n >= s.bn && n % vector_elements(c) == 0 : n % s.bn == 0;
    for (size_t i = 0; i < m.m_tile.size(); i++) {
        const int64_t e = c.dims[md[i]].extent;
        m.divisible = m.divisible && (shifted ? e >= m.m_tile[i] : e % m.m_tile[i] == 0);
    }
    m.k_divisible = k % s.kt == 0;
    // The tensor-core reduction is chunked by the k tile: K is a constant it divides
    // (tensor_cores_apply()).
    if (s.tensor_cores) return m.k_divisible ? std::optional<Mapping>(m) : std::nullopt;
    // Register stages need a step loop of constant extent in every branch (the pass unrolls it
    // after pipelining, and the fragments are one Func for all branches). Where K is not a
    // constant the k tile divides, some branch guards the last chunk, and Halide's loop
    // partitioning turns that chunk's guarded step loop into one of min(K - k, KT) trips.
    if (s.reg_stages > 1 && !guard_free(c, s)) return std::nullopt;
    return m;
}

Choice choose(const Contraction &c, const model::SearchResult &search, size_t candidate) {
    std::vector<Mapping> exact, k_only, other;  // each in the model's order
    for (const model::Prediction &pr : search.ranked) {
        std::optional<Mapping> mp = map_candidate(c, pr.schedule);
        if (!mp) continue;
        (mp->k_divisible && mp->divisible ? exact : mp->k_divisible ? k_only : other).push_back(*mp);
    }
    Choice choice;
    choice.exact = exact.size();
    choice.preferred = exact;
    choice.preferred.insert(choice.preferred.end(), k_only.begin(), k_only.end());
    choice.preferred.insert(choice.preferred.end(), other.begin(), other.end());
    choice.rank = choice.preferred.empty() ? 0 : std::min(candidate, choice.preferred.size() - 1);
    return choice;
}

std::string why_not_best_ranked(const Contraction &c, const model::SearchResult &search, const Mapping &chosen) {
    if (search.ranked.empty() || search.ranked[0].schedule.to_string() == chosen.s.to_string()) return "";
    const model::Schedule &top = search.ranked[0].schedule;
    std::optional<Mapping> tm = map_candidate(c, top);
    std::ostringstream os;
    os << std::fixed << std::setprecision(2);
    os << "; best-ranked " << top.to_string() << " predicts " << search.ranked[0].total_us << " us but "
       << (top.smem_stages > 1 && top.smem_stages > chunk_count(c, top.kt) ?
               "it has more shared stages than the reduction has chunks" :
           top.tensor_cores && !tensor_core_register_stages_apply(top) ?
               "its register stages of tensor-core fragments need both tiles pipelined (2 or more shared stages) "
               "and R dividing the chunk's k steps (k tile / 16)" :
           top.reg_stages > 1 && tm == std::nullopt && c.m_dims().size() != 1 ?
               "its register fragments need one M dimension" :
           top.reg_stages > 1 && tm == std::nullopt ?
               "its register stages need a K that is a constant the k tile divides (the step loop of a guarded "
               "last chunk has no constant extent)" :
           !tm                   ? "its M tile cannot be laid out over the M dimensions" :
           !tm->k_divisible      ? "its k tile does not divide the estimated K" :
           shifts_edge_blocks(c) ? "its block tile is larger than the estimated output, or N is not a whole number of "
                                   "16-byte vectors" :
                                   "its block tile does not divide the estimated output");
    return os.str();
}

}  // namespace autoscheduler
}  // namespace alcop
