#include "plan/PipelinePlan.h"

#include <algorithm>

namespace alcop {

namespace {

int64_t round_up(int64_t x, int64_t m) {
    return (x + m - 1) / m * m;
}

// The smallest b >= cursor with b == residue (mod slot_alignment).
int64_t place(int64_t cursor, int64_t residue) {
    return round_up(cursor - residue, slot_alignment) + residue;
}

}  // namespace

KernelPlan plan_kernel(const KernelPipelines &kernel) {
    KernelPlan plan;
    plan.anchor = kernel.has_other_buffers ? Anchor::AfterOldData : Anchor::AllocationStart;
    for (const PipelineLoop &loop : kernel.loops) {
        LoopPlan lp;
        int64_t cursor = 0;
        for (const StagedBuffer &b : loop.buffers) {
            BufferPlan bp;
            bp.func = b.func;
            bp.stages = b.stages;
            bp.prefetch_distance = b.stages - 1;
            bp.old_begin = b.begin;
            bp.slot_bytes = round_up(b.end - b.begin, slot_alignment);
            const int64_t residue = ((b.begin % slot_alignment) + slot_alignment) % slot_alignment;
            bp.base = place(cursor, residue);
            cursor = bp.base + bp.stages * bp.slot_bytes;
            lp.max_prefetch_distance = std::max(lp.max_prefetch_distance, bp.prefetch_distance);
            lp.buffers.push_back(bp);
        }
        lp.bytes = cursor;
        plan.slot_bytes = std::max(plan.slot_bytes, cursor);
        plan.loops.push_back(lp);
    }
    return plan;
}

}  // namespace alcop
