#ifndef ALCOP_COPY_LOWERING_H
#define ALCOP_COPY_LOWERING_H

/** \file
 * The one place that knows how a pipelined producer's copy becomes code.
 *
 * The rewrite hands over each copy as the producer statement, already addressing its slot,
 * plus the condition under which its tile exists (false for the tail prefetches past the
 * end of the streaming loop). A copy kind decides what to emit where:
 *  - Synchronous: the guarded producer, at the prefetch point.
 * The register-staged and asynchronous kinds plug in here; the rewrite does not change.
 *
 * Guarantee of every kind: once wait(in_flight) returned and the block passed the following
 * barrier, every tile older than the newest `in_flight` tiles is in its slot.
 */

#include "Halide.h"

#include <memory>

namespace alcop {

/** What issuing one copy emits: one part at the prefetch point, before the compute of the
 * current iteration, and one after it. Either part may be undefined. */
struct IssuedCopy {
    Halide::Internal::Stmt before_compute;
    Halide::Internal::Stmt after_compute;
};

class CopyLowering {
public:
    virtual ~CopyLowering() = default;

    virtual const char *name() const = 0;

    /** The copy of one tile, guarded by `in_range`. */
    virtual IssuedCopy issue(const Halide::Internal::Stmt &copy, const Halide::Expr &in_range) const = 0;

    /** Closes the group of copies issued for one tile (prologue step or iteration). */
    virtual Halide::Internal::Stmt commit() const {
        return Halide::Internal::Stmt();
    }

    /** Before the barrier of an iteration: wait until at most `in_flight` of the most
     * recently committed groups may still be outstanding. */
    virtual Halide::Internal::Stmt wait(int in_flight) const {
        return Halide::Internal::Stmt();
    }
};

/** Plain stores at the prefetch point. */
std::unique_ptr<CopyLowering> make_synchronous_copy();

}  // namespace alcop

#endif
