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
 * When every access to the allocation, anywhere in the kernel, belongs to a pipelined buffer,
 * the slots are packed from the start of the allocation. Otherwise the old layout is kept
 * (another buffer may be live across the loop) and the slots are appended after it. Loops of one kernel run one
 * after the other, so each loop's slots start at the same anchor.
 *
 * The plan holds no IR and can be unit-tested on its own.
 */

#include "analysis/PipelineAnalysis.h"

#include <cstdint>
#include <string>
#include <vector>

namespace alcop {

constexpr int64_t slot_alignment = 16;

struct BufferPlan {
    std::string func;
    int stages = 1;
    int prefetch_distance = 0;  ///< stages - 1
    int64_t old_begin = 0;      ///< first byte of the tile before the rewrite
    int64_t slot_bytes = 0;     ///< distance between consecutive slots
    int64_t base = 0;           ///< first byte of slot 0, relative to the anchor
};

struct LoopPlan {
    std::vector<BufferPlan> buffers;
    int max_prefetch_distance = 0;
    int64_t bytes = 0;  ///< bytes of all slots of this loop
};

enum class Anchor {
    AllocationStart,  ///< bases count from byte 0 (packed)
    AfterOldData      ///< bases count from the old size rounded up to slot_alignment (appended)
};

struct KernelPlan {
    Anchor anchor = Anchor::AllocationStart;
    std::vector<LoopPlan> loops;  ///< parallel to KernelPipelines::loops
    int64_t slot_bytes = 0;       ///< max over loops of LoopPlan::bytes
};

KernelPlan plan_kernel(const KernelPipelines &kernel);

}  // namespace alcop

#endif
