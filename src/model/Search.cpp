#include "model/Search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>

namespace alcop {
namespace model {

namespace {

// Deterministic order: predicted time, then the cheaper schedule in shared
// memory and registers (it leaves more room for whatever else runs), then the
// schedule's fields so that equal predictions still sort the same way.
bool faster(const Prediction &a, const Prediction &b) {
    if (a.total_us != b.total_us) {
        return a.total_us < b.total_us;
    }
    const Schedule &x = a.schedule, &y = b.schedule;
    return std::make_tuple(a.smem_per_block, a.occ.regs_allocated, x.smem_stages, x.reg_stages, x.bm, x.bn, x.kt, x.tm,
                           x.tn) < std::make_tuple(b.smem_per_block, b.occ.regs_allocated, y.smem_stages, y.reg_stages,
                                                   y.bm, y.bn, y.kt, y.tm, y.tn);
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

    if (options.keep > 0 && options.keep < result.ranked.size()) {
        std::partial_sort(result.ranked.begin(), result.ranked.begin() + options.keep, result.ranked.end(), faster);
        result.ranked.resize(options.keep);
    } else {
        std::sort(result.ranked.begin(), result.ranked.end(), faster);
    }

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
