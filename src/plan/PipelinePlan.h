#ifndef ALCOP_PIPELINE_PLAN_H
#define ALCOP_PIPELINE_PLAN_H

/** \file
 * Decides, in plain numbers, where the slots of every pipelined buffer of a kernel live in
 * its merged shared allocation and how far ahead each buffer is fetched.
 *
 * A buffer with S stages gets S slots of its tile, `slot_bytes` apart, and iteration k
 * fetches tile k + (S - 1) (the prefetch distance) into slot (k + S - 1) % S.
 *
 * Layout. Slots are 16-byte aligned apart (the cp.async unit), and slot 0 keeps the tile's
 * old offset modulo 16, so every alignment fact Halide proved about an access stays true.
 * Slots of a swizzled operand (a tensor-core operand, plan/Swizzle.h) are aligned to the
 * swizzle's period instead: each slot starts on a multiple of swizzle_period bytes and spans a
 * whole number of them, so the swizzle, which permutes the 16-byte chunks of each 128-byte
 * window counted from byte 0 of the allocation, keeps every byte in its slot and gives every
 * slot the same layout. Only where slot 0 may move by whole periods: the tile's old offset is
 * a multiple of 16 bytes and the slots count from the allocation's start (not appended after
 * data of unknown size); otherwise the buffer gets ordinary slots and stays unswizzled.
 * Any other buffer whose ordinary slots happen to lie on whole periods (tiles of a multiple
 * of 1024 bytes, packed from the start) is marked aligned as well, which costs nothing: the
 * rewrite may then swizzle it where that removes bank conflicts (rewrite/SwizzleOperands.h).
 * When every access to the allocation, anywhere in the kernel, belongs to a pipelined buffer,
 * the slots are packed from the start of the allocation. Otherwise the other buffers keep
 * their place (one may be live across the loop), and each buffer's slots go into the first
 * bytes free during its loop that hold them: the old ranges of the loop's tiles, which nothing
 * else uses then, and past the old end (a tile range that reaches the end runs on past it, so
 * a kernel whose tiles Halide laid out last, after a buffer live across the loop, grows by
 * only the extra stages). When the old size is not a constant, the slots are appended after
 * it. Loops of one kernel run one after the other, so each loop lays out its slots alone.
 *
 * The plan holds no IR and can be unit-tested on its own.
 */

#include "analysis/PipelineAnalysis.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace alcop {

constexpr int64_t slot_alignment = 16;

struct BufferPlan {
    std::string func;
    /** The slots are aligned to swizzle_period and span whole periods: a swizzle of the
     * buffer's tile (rewrite/SwizzleOperands.h) may apply to them, one map for every slot. */
    bool swizzled = false;
    int stages = 1;
    int prefetch_distance = 0;  ///< stages - 1
    int64_t old_begin = 0;      ///< first byte of the tile before the rewrite
    int64_t slot_bytes = 0;     ///< distance between consecutive slots
    int64_t base = 0;           ///< first byte of slot 0, relative to the anchor
};

struct LoopPlan {
    std::vector<BufferPlan> buffers;
    int max_prefetch_distance = 0;
    int64_t bytes = 0;  ///< one past the last byte of this loop's slots, from the anchor
};

enum class Anchor {
    AllocationStart,  ///< bases count from byte 0 (packed, or into the free bytes)
    AfterOldData      ///< bases count from the old size rounded up to slot_alignment (appended;
                      ///< only when that size is not a constant)
};

struct KernelPlan {
    Anchor anchor = Anchor::AllocationStart;
    std::vector<LoopPlan> loops;  ///< parallel to KernelPipelines::loops
    int64_t slot_bytes = 0;       ///< max over loops of LoopPlan::bytes
    /** The allocation's size after the rewrite, in bytes; when the old size is not a constant
     * (total_known false), what the slots alone need, a lower bound. */
    int64_t total_bytes = 0;
    bool total_known = false;
};

/** Bytes [begin, end) of a kernel's merged shared allocation: all the slots of a buffer the
 * plan aligned for its swizzle (BufferPlan::swizzled), whole periods from byte 0. */
struct SwizzleAlignedSlots {
    std::string func;
    int64_t begin = 0, end = 0;
};

/** The swizzle-aligned slots of `plan`. */
std::vector<SwizzleAlignedSlots> swizzle_aligned_slots(const KernelPlan &plan);

/** The plan of `kernel`; the buffers named in `swizzled` get swizzle-aligned slots where
 * they can (see the file comment and BufferPlan::swizzled). */
KernelPlan plan_kernel(const KernelPipelines &kernel, const std::set<std::string> &swizzled = {});

}  // namespace alcop

#endif
