#include "plan/PipelinePlan.h"

#include "plan/Swizzle.h"

#include <algorithm>
#include <limits>

namespace alcop {

namespace {

int64_t round_up(int64_t x, int64_t m) {
    return (x + m - 1) / m * m;
}

// The smallest b >= cursor with b == residue (mod alignment).
int64_t place(int64_t cursor, int64_t residue, int64_t alignment) {
    return round_up(cursor - residue, alignment) + residue;
}

/** Where the slots of a loop may go: bytes [lo, hi) of the allocation. */
struct Hole {
    int64_t lo, hi;
};
constexpr int64_t unbounded = std::numeric_limits<int64_t>::max();

/** The bytes free during `loop` of an allocation of `size` bytes that other buffers share:
 * its tiles' old ranges (no other buffer live across the loop lies there: the analysis saw no
 * other access in the loop touch them, and Halide gives buffers live at once disjoint ranges)
 * and everything past the old end. A range that reaches the old end runs on past it. */
std::vector<Hole> free_during(const PipelineLoop &loop, int64_t size) {
    std::vector<Hole> tiles;
    for (const StagedBuffer &b : loop.buffers) {
        tiles.push_back({b.begin, b.end});
    }
    std::sort(tiles.begin(), tiles.end(), [](const Hole &a, const Hole &b) { return a.lo < b.lo; });
    std::vector<Hole> holes;
    for (const Hole &t : tiles) {
        if (!holes.empty() && t.lo <= holes.back().hi) {
            holes.back().hi = std::max(holes.back().hi, t.hi);
        } else {
            holes.push_back(t);
        }
    }
    if (!holes.empty() && holes.back().hi >= size) {
        holes.back().hi = unbounded;
    } else {
        holes.push_back({size, unbounded});
    }
    return holes;
}

}  // namespace

KernelPlan plan_kernel(const KernelPipelines &kernel, const std::set<std::string> &swizzled) {
    KernelPlan plan;
    // With other buffers in an allocation of unknown size, nothing is known to be free but
    // what lies past its end, wherever that is.
    const bool appended = kernel.has_other_buffers && kernel.allocation_bytes < 0;
    plan.anchor = appended ? Anchor::AfterOldData : Anchor::AllocationStart;
    for (const PipelineLoop &loop : kernel.loops) {
        LoopPlan lp;
        std::vector<Hole> holes = kernel.has_other_buffers && !appended ? free_during(loop, kernel.allocation_bytes) :
                                                                          std::vector<Hole>{{0, unbounded}};
        for (const StagedBuffer &b : loop.buffers) {
            BufferPlan bp;
            bp.func = b.func;
            bp.stages = b.stages;
            bp.prefetch_distance = b.stages - 1;
            bp.old_begin = b.begin;
            const int64_t residue = ((b.begin % slot_alignment) + slot_alignment) % slot_alignment;
            // A swizzled operand's slots move by whole periods: from an old offset that is a
            // multiple of slot_alignment, counted from the allocation's start.
            const bool may_align = residue == 0 && !appended;
            bp.swizzled = swizzled.count(b.func) && may_align;
            const int64_t alignment = bp.swizzled ? swizzle_period : slot_alignment;
            bp.slot_bytes = round_up(b.end - b.begin, alignment);
            const int64_t bytes = bp.stages * bp.slot_bytes;
            // The first hole that holds all its slots (the last one always does).
            for (Hole &h : holes) {
                const int64_t base = place(h.lo, residue, alignment);
                if (h.hi != unbounded && base + bytes > h.hi) continue;
                bp.base = base;
                h.lo = base + bytes;
                break;
            }
            // Any other buffer whose slots landed on whole periods anyway may be swizzled
            // too, at no cost in bytes (the rewrite decides whether a swizzle helps it).
            bp.swizzled = bp.swizzled || (may_align && bp.base % swizzle_period == 0 &&
                                          bp.slot_bytes % swizzle_period == 0);
            lp.bytes = std::max(lp.bytes, bp.base + bytes);
            lp.max_prefetch_distance = std::max(lp.max_prefetch_distance, bp.prefetch_distance);
            lp.buffers.push_back(bp);
        }
        plan.slot_bytes = std::max(plan.slot_bytes, lp.bytes);
        plan.loops.push_back(lp);
    }
    if (plan.anchor == Anchor::AllocationStart) {
        plan.total_bytes = std::max(plan.slot_bytes, kernel.allocation_bytes);
    } else {
        plan.total_bytes = round_up(kernel.allocation_bytes, slot_alignment) + plan.slot_bytes;
    }
    plan.total_known = kernel.allocation_bytes >= 0;
    if (!plan.total_known) plan.total_bytes = plan.slot_bytes;
    return plan;
}

std::vector<SwizzleAlignedSlots> swizzle_aligned_slots(const KernelPlan &plan) {
    std::vector<SwizzleAlignedSlots> result;
    for (const LoopPlan &loop : plan.loops) {
        for (const BufferPlan &b : loop.buffers) {
            // Swizzled slots always count from the allocation's start (plan_kernel).
            if (b.swizzled) result.push_back({b.func, b.base, b.base + b.stages * b.slot_bytes});
        }
    }
    return result;
}

}  // namespace alcop
