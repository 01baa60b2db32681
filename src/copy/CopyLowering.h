#ifndef ALCOP_COPY_LOWERING_H
#define ALCOP_COPY_LOWERING_H

/** \file
 * The one place that knows how a pipelined producer's copy becomes code.
 *
 * The rewrite hands over each copy as the producer statement, already addressing its slot,
 * plus the condition under which its tile exists (false for the tail prefetches past the end
 * of the streaming loop). A copy kind decides what to emit where:
 *  - Synchronous: the guarded producer at the prefetch point. The compute waits for its loads.
 *  - RegisterStaged: the loads into registers at the prefetch point, the stores from the
 *    registers into the slot after the compute, so the load latency overlaps the compute on
 *    any GPU. A producer it cannot stage (a loop inside it, mixed element types) stays
 *    synchronous.
 *  - Async (CUDA sm_80+): every store that is a dense copy of 4, 8 or 16 bytes (wider vectors
 *    are split into 16-byte pieces) from a global load that Halide proves aligned to that size,
 *    or such a load under a select(prefix-of-lanes predicate, load, 0), becomes a cp.async
 *    marker (see codegen/AsyncCopyMarkers.h) whose src-size zero-fills what the predicate cuts
 *    off; the copies of one step form one commit group. Copies of fp16/bf16 move their bits
 *    (u16 lanes), a 16-byte one as one 4 x 32-bit access. Other stores are register-staged.
 *    A copy all of whose stores are cp.async, with no branch of its own and each copying its
 *    whole vector or nothing, is not branched on its tile's condition: the condition is folded
 *    into their src-size, so a tile past the end zero-fills its slot (which nothing reads
 *    before the next copy into it) and the steady state is one path. A source index into
 *    which the chunk enters through a division (an im2col gather's tap) is written as the
 *    sum of its terms that stay and those that move with the chunk, so that the marker
 *    rewrite computes the first once per thread and the second once per chunk.
 * The rewrite does not change with the kind.
 *
 * Guarantee of every kind: once wait(n) returned and the block passed the following barrier,
 * every tile but the newest n committed steps is in its slot.
 */

#include "alcop/Directive.h"
#include "copy/GlobalAlignment.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace alcop {

/** What issuing one copy emits: one part at the prefetch point, before the compute of the
 * current iteration, and one after it; plus the per-thread registers the parts use, which the
 * rewrite allocates around the loop. Any part may be undefined or empty. */
struct IssuedCopy {
    Halide::Internal::Stmt before_compute;
    Halide::Internal::Stmt after_compute;
    struct Registers {
        std::string name;
        Halide::Type type;
        int elements;
    };
    std::vector<Registers> registers;
    /** Some store of the copy stays a plain store in the compute's place: neither a cp.async
     * nor staged through `registers` (a copy with a loop inside, a copy into a tile that is
     * not 16-byte vectors on a synchronous kind). */
    bool in_place = false;
};

/** `body` inside a per-thread register array `name` of `elements` values of type `t`, freed at
 * its end: device code generators expect every allocation to be freed explicitly. */
Halide::Internal::Stmt with_registers(const std::string &name, Halide::Type t, int elements,
                                      const Halide::Internal::Stmt &body);

class CopyLowering {
public:
    virtual ~CopyLowering() = default;

    /** The copy of one tile, guarded by `in_range`. With `overlap` false (the prologue, where
     * there is no compute to hide the loads behind) it is emitted whole, before the compute. */
    virtual IssuedCopy issue(const Halide::Internal::Stmt &copy, const Halide::Expr &in_range, bool overlap) = 0;

    /** Closes the group of copies issued for one step (a prologue step or an iteration). */
    virtual Halide::Internal::Stmt commit() const {
        return Halide::Internal::Stmt();
    }

    /** Before the barrier of an iteration: wait until at most `in_flight` of the most recently
     * committed steps may still be outstanding. */
    virtual Halide::Internal::Stmt wait(int in_flight) const {
        return Halide::Internal::Stmt();
    }

    /** Called once per pipelined loop with all of it (prologue, loop and what follows), after
     * every copy, commit and wait of the loop was emitted: a kind that keeps state across steps
     * (the tests' async emulation) completes its code and allocates that state here. */
    virtual Halide::Internal::Stmt finish(const Halide::Internal::Stmt &pipelined) {
        return pipelined;
    }
};

/** Registers a copy is staged through are named with this prefix. */
constexpr const char *staging_prefix = "alcop_staged";

/** What kind of copy a store into a slot is, read back from the lowered IR by the value it
 * stores: Async for a cp.async marker (reinterpreted: a vector of halves is copied as 32-bit
 * words), RegisterStaged for a load of a staging register, Synchronous for anything else. */
CopyKind copy_kind_of(const Halide::Expr &stored);

/** The lowering of `kind`. With Async, a copy from an input that is not cp.async only because
 * Halide cannot prove its address aligned is a warning naming the Func, the input and the
 * constraints that are missing, once per input in `unaligned_inputs` (the pass's); a loop none
 * of whose copies became cp.async gets no commit or wait (finish). `known` gives the alignment
 * of the indices it builds (a gather the copy's zero fill makes dense). */
std::unique_ptr<CopyLowering> make_copy_lowering(CopyKind kind, std::set<std::string> *unaligned_inputs,
                                                 const KnownAlignments &known);

/** A clamp of a dense vector, max(min(ramp(base, 1, n), broadcast(hi)), broadcast(lo)): the
 * index of a copy's gather where its input is read at clamped coordinates. */
struct ClampedRamp {
    const Halide::Internal::Ramp *ramp = nullptr;
    Halide::Expr lo, hi;
};

/** `e` as a ClampedRamp, if it is one. */
std::optional<ClampedRamp> as_clamped_ramp(const Halide::Expr &e);

/** Where the lanes of `c` lie inside its clamp, as ramp(base, 1, n) < hi + 1 and lo <= base:
 * the form in which a copy's zero fill that keeps no lane outside the clamp says so, so that the
 * lowering loads the gather as the dense vector, one cp.async whose src-size stops at the kept
 * lanes. */
Halide::Expr inside_clamp(const ClampedRamp &c);

/** The kind for a kernel: what `requested` says, where Auto means Async for CUDA kernels on
 * targets with cuda_capability >= 80 and RegisterStaged for every other GPU kernel. Async is
 * a user error where the kernel cannot use it. */
CopyKind copy_kind_for(Halide::DeviceAPI device, const Halide::Target &target, CopyKind requested = CopyKind::Auto);

}  // namespace alcop

#endif
