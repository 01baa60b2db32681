#include "autoscheduler/RowReductionSchedule.h"

#include <algorithm>

namespace alcop {
namespace autoscheduler {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** out: blocks of rows, lanes along each row. Returns the loop of the blocks of rows, where
 * every reduction is computed. */
Dim tile_rows(Schedule &schedule, const RowReductions &r, FuncRef out) {
    const std::vector<std::string> &args = r.output.args();
    const Dim x{args[0]}, y{args[1]}, x_o{args[0] + "_o"}, lane{args[0] + "_lane"}, y_o{args[1] + "_o"},
        row{args[1] + "_row"};
    Chain o = schedule.stage(out);
    o.split(x, x_o, lane, row_reduction_lanes, TailStrategy::GuardWithIf)
        .split(y, y_o, row, row_reduction_rows_per_block, TailStrategy::GuardWithIf);
    std::vector<Dim> order{x_o, lane, row, y_o}, blocks{y_o};
    // The other row dimensions: one block each, fused into one (a GPU has three block
    // dimensions).
    std::vector<Dim> others;
    for (size_t i = 2; i < args.size(); i++) others.push_back({args[i]});
    if (const Dim rest = fuse_into_one(o, others); !rest.name.empty()) {
        order.push_back(rest);
        blocks.push_back(rest);
    }
    o.reorder(order).gpu_blocks(blocks).gpu_threads({lane, row});
    o.done();
    return y_o;
}

/** One reduction, computed per block of rows: the lanes' partials, then each row's value. */
void reduce_across_lanes(Schedule &schedule, const Function &reduction, FuncRef red, FuncRef out,
                         const Dim &rows_loop) {
    const std::string r = reduction.update(0).schedule().rvars()[0].var;
    // The partials' new dimension: `lane`, unless the reduction has a variable of that name.
    std::string lane_name = "lane";
    while (std::count(reduction.args().begin(), reduction.args().end(), lane_name)) lane_name += "_";
    const Dim step{r + "_step", true}, lane_r{r + "_lane", true}, lane{lane_name}, row{reduction.args()[0]};
    schedule.stage(red, 0).split({r, true}, step, lane_r, row_reduction_lanes, TailStrategy::GuardWithIf).done();
    const FuncRef partial = schedule.rfactor(red, {{lane_r, lane}});
    // Each lane's partial, in its registers, stored once where red's thread reads it.
    const FuncRef partials = schedule.wrapper(partial, red);
    // The lanes innermost, as out's: the block's threads are 32 x rows, whatever loop nest.
    schedule.func(partials)
        .compute_at(out, rows_loop)
        .store_in(MemoryType::GPUShared)
        .new_line()
        .reorder({lane, row})
        .gpu_threads({lane, row})
        .done();
    // At the innermost thread loop, where a thread's share is one value: a register.
    schedule.func(partial).compute_at(partials, lane).store_in(MemoryType::Register).done();
    // Each row's value, combined in one thread, stored where its consumers read it.
    const FuncRef rows = schedule.wrapper(red);
    schedule.func(rows).compute_at(out, rows_loop).store_in(MemoryType::GPUShared).new_line().gpu_threads({row}).done();
    schedule.func(red).compute_at(rows, row).store_in(MemoryType::Register).done();
}

}  // namespace

void schedule_row_reductions(Schedule &schedule, const RowReductions &r) {
    // The handles of the pipeline's Funcs first, while its Funcs are the user's (each rfactor
    // adds one).
    const FuncRef out = schedule.pipeline_func(r.output);
    std::vector<FuncRef> reductions;
    for (const Function &f : r.reductions) reductions.push_back(schedule.pipeline_func(f));
    const Dim rows_loop = tile_rows(schedule, r, out);
    for (size_t i = 0; i < reductions.size(); i++) {
        reduce_across_lanes(schedule, r.reductions[i], reductions[i], out, rows_loop);
    }
    // Nothing to pipeline, but the pass checks the kernels against the launch limits and
    // reports what it lowered (alcop_inspect), as for every schedule of the plugin.
    schedule.enable();
}

}  // namespace autoscheduler
}  // namespace alcop
