#include "model/Search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>

namespace alcop {
namespace model {

namespace {

// Predictions closer than this are one tier of the ranking: well inside what the model can tell
// apart (its rates are estimates, docs/model.md §14).
constexpr double kTierWidth = 0.01;

// How busy one iteration keeps the pipes beside the one that binds it (tensor or FMA, shared
// memory, issue), summed and relative to the binding one: 1 when only one pipe works, 3 when all
// three are saturated. The model takes the largest term as the time, as if the others overlapped
// perfectly; they do so less the busier they are, and on tensor cores the instructions beside
// mma.sync are what keeps it from its rate (docs/mainloop.md).
double pipe_load(const Prediction &p) {
    const double busiest = std::max({p.fma_cycles, p.smem_cycles, p.issue_cycles});
    return busiest > 0 ? (p.fma_cycles + p.smem_cycles + p.issue_cycles) / busiest : 0;
}

// The instructions one warp issues per mma.sync in an iteration: the main loop's leanness, which
// the main-loop report measures (docs/mainloop.md).
double issue_per_mma(const Prediction &p) {
    const Schedule &s = p.schedule;
    const double mmas = double(s.mma_tiles_per_warp()) * (s.kt / 16);
    return mmas > 0 ? p.issue_per_warp / mmas : 0;
}

// Whether the blocks of the first wave give every scheduler of an SM a warp. Where they do not, a
// scheduler's loads and mma.sync wait on one warp's chain, an overlap the throughput terms assume.
bool fills_schedulers(const Prediction &p, int schedulers) {
    const double resident_blocks = p.occ.blocks_per_sm * std::min(1.0, p.waves);
    return resident_blocks * p.schedule.warps() >= schedulers;
}

// The key a candidate is ranked by. The predicted time; on tensor cores, the tier of the predicted
// time first, and within it the candidates bound by the SM's pipes by their pipe load before the
// others: such loops are often bound by the tensor pipe at one time, whatever their tiles, and
// among them a k tile of 16 or a small warp tile spends more issue slots and shared-memory
// wavefronts a mma.sync than a larger one (at 2048^3, 128x128x16 w32x64 keeps the shared-memory
// pipe as busy as the tensor pipe, 128x128x32 w64x64 at 75%). Where loads bind, the pipes have
// slack, and the load would only prefer fewer warps or no pipeline. There a tier of equal times
// (a problem at the memory floor) takes the leanest main loop, by the issue slots it spends a
// mma.sync, among the candidates that give every scheduler a warp and pipeline (a prefetch
// distance of at least 1 over at least 2 chunks): the floors assume loads that overlap the
// work, which is what the pipeline and the warps make them do. (The FP32 model's issue term
// binds, so it already tells such loops apart.) Then less shared memory and fewer registers
// (they leave more room for whatever else runs), then the schedule's fields, so that the order
// is deterministic.
struct RankKey {
    int64_t tier;
    bool loads_bind, starved, unpipelined;
    double load, time;
    std::tuple<int64_t, int, int, int, int, int, int, int, int> cheaper;

    bool operator<(const RankKey &o) const {
        return std::tie(tier, loads_bind, starved, unpipelined, load, time, cheaper) <
               std::tie(o.tier, o.loads_bind, o.starved, o.unpipelined, o.load, o.time, o.cheaper);
    }
};

RankKey rank_key(const Prediction &p, double fastest_us, bool tensor_cores, int schedulers) {
    const Schedule &s = p.schedule;
    RankKey k;
    k.tier = tensor_cores ? static_cast<int64_t>((p.total_us / fastest_us - 1) / kTierWidth) : 0;
    k.loads_bind = tensor_cores && p.bound != Bound::SmCompute;
    k.starved = k.loads_bind && !fills_schedulers(p, schedulers);
    k.unpipelined = k.loads_bind && (p.prefetch_distance < 1 || p.k_iterations < 2);
    k.load = !tensor_cores ? 0 : k.loads_bind ? issue_per_mma(p) : pipe_load(p);
    k.time = p.total_us;
    k.cheaper = std::make_tuple(p.smem_per_block, p.occ.regs_allocated, s.smem_stages, s.reg_stages, s.bm, s.bn, s.kt,
                                s.tm, s.tn);
    return k;
}

// Sorts `ranked` by rank_key, the first `keep` of it (all with 0).
void rank(std::vector<Prediction> &ranked, bool tensor_cores, int schedulers, size_t keep) {
    if (ranked.empty()) {
        return;
    }
    double fastest_us = ranked[0].total_us;
    for (const Prediction &p : ranked) {
        fastest_us = std::min(fastest_us, p.total_us);
    }
    std::vector<std::pair<RankKey, size_t>> order;
    order.reserve(ranked.size());
    for (size_t i = 0; i < ranked.size(); i++) {
        order.emplace_back(rank_key(ranked[i], fastest_us, tensor_cores, schedulers), i);
    }
    const size_t n = keep > 0 ? std::min(keep, order.size()) : order.size();
    std::partial_sort(order.begin(), order.begin() + n, order.end());
    std::vector<Prediction> sorted;
    sorted.reserve(n);
    for (size_t i = 0; i < n; i++) {
        sorted.push_back(std::move(ranked[order[i].second]));
    }
    ranked = std::move(sorted);
}

}  // namespace

SearchSpace SearchSpace::for_tensor_cores() {
    SearchSpace space;
    space.thread_tiles = {16, 32, 64};
    space.k_tiles = {16, 32, 64};
    space.tensor_cores = true;
    return space;
}

std::vector<Schedule> enumerate_schedules(const SearchSpace &space) {
    std::vector<Schedule> out;
    out.reserve(space.block_tiles.size() * space.block_tiles.size() * space.thread_tiles.size() *
                space.thread_tiles.size() * space.k_tiles.size() * size_t(std::max(0, space.max_smem_stages)) *
                size_t(std::max(0, space.max_reg_stages)));
    for (int bm : space.block_tiles) {
        for (int bn : space.block_tiles) {
            for (int tm : space.thread_tiles) {
                for (int tn : space.thread_tiles) {
                    for (int kt : space.k_tiles) {
                        Schedule s;
                        s.bm = bm;
                        s.bn = bn;
                        s.tm = tm;
                        s.tn = tn;
                        s.kt = kt;
                        s.tensor_cores = space.tensor_cores;
                        // Validity does not depend on the stage counts, so
                        // test the tile shape once.
                        if (!structurally_valid(s)) {
                            continue;
                        }
                        for (int stages = 1; stages <= space.max_smem_stages; stages++) {
                            for (int regs = 1; regs <= space.max_reg_stages; regs++) {
                                s.smem_stages = stages;
                                s.reg_stages = regs;
                                out.push_back(s);
                            }
                        }
                    }
                }
            }
        }
    }
    return out;
}

SearchResult search(const Problem &p, const GpuSpec &gpu, const SearchOptions &options) {
    const auto start = std::chrono::steady_clock::now();

    SearchResult result;
    result.problem = p;
    result.gpu_name = gpu.name;
    result.limits = options.model.limits;

    const std::vector<Schedule> candidates = enumerate_schedules(options.space);
    result.enumerated = candidates.size();
    result.ranked.reserve(candidates.size());
    for (const Schedule &s : candidates) {
        Prediction pred = predict(p, s, gpu, options.model);
        if (pred.feasible) {
            result.ranked.push_back(std::move(pred));
        } else if (pred.smem_per_block > pred.smem_limit) {
            result.rejected_smem++;
        } else if (pred.regs_estimated > 0) {
            result.rejected_registers++;  // predict() only estimates registers after the smem check
        } else {
            result.rejected_other++;
        }
    }
    result.feasible = result.ranked.size();

    rank(result.ranked, options.space.tensor_cores, gpu.schedulers_per_sm, options.keep);

    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

std::string SearchResult::report(size_t top, bool explain) const {
    std::string out;
    char line[512];
    snprintf(line, sizeof(line),
             "%s on %s (limits: %s): %zu candidates, %zu feasible "
             "(%zu over shared memory, %zu over registers, %zu other), ranked in %.3f ms\n",
             problem.to_string().c_str(), gpu_name.c_str(), to_string(limits), enumerated, feasible, rejected_smem,
             rejected_registers, rejected_other, seconds * 1e3);
    out += line;
    snprintf(line, sizeof(line), "%4s  %-24s %7s %9s %5s %12s %6s %5s %9s %11s  %s\n", "rank", "schedule", "threads",
             "smem", "regs", "blocks/SM", "waves", "dist", "exposed", "time (us)", "bound");
    out += line;
    const size_t n = std::min(top, ranked.size());
    for (size_t i = 0; i < n; i++) {
        const Prediction &r = ranked[i];
        char occ[32];
        snprintf(occ, sizeof(occ), "%d (%s)", r.occ.blocks_per_sm,
                 r.occ.limiter == OccupancyLimiter::SharedMemory ? "smem" :
                 r.occ.limiter == OccupancyLimiter::Registers    ? "regs" :
                 r.occ.limiter == OccupancyLimiter::Threads      ? "thr" :
                                                                   "slot");
        snprintf(line, sizeof(line), "%4zu  %-24s %7d %9lld %5d %12s %6.2f %5d %9.0f %11.2f  %s\n", i + 1,
                 r.schedule.to_string().c_str(), r.threads, (long long)r.smem_per_block, r.occ.regs_allocated, occ,
                 r.waves, r.prefetch_distance, r.exposed_load_cycles, r.total_us, to_string(r.bound));
        out += line;
    }
    for (size_t i = 0; explain && i < n; i++) {
        out += std::to_string(i + 1) + ". " + ranked[i].explain() + "\n";
    }
    return out;
}

}  // namespace model
}  // namespace alcop
