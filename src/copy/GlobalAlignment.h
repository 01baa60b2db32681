#ifndef ALCOP_GLOBAL_ALIGNMENT_H
#define ALCOP_GLOBAL_ALIGNMENT_H

/** \file
 * Recovers the alignment of loads from the pipeline's input buffers that Halide 14's simplifier
 * leaves unknown, so that the copy lowering can prove a copy's global address aligned for
 * cp.async.
 *
 * Halide 14's ModulusRemainder analysis gives `x * -1` a negative modulus (-8 for a stride
 * known to be a multiple of 8), and the simplifier then drops it from the Load's alignment. Such
 * a term arises wherever a clamp is shifted by a constant, e.g. conv2d's padded im2col gather,
 * whose clamp(ix, 0, W - 1) becomes max(min(ix + 1, W), 1) - 1 and puts -input.stride.1 into
 * the buffer offset.
 *
 * Assumes: a lowered Stmt (unique names). Learns the facts `(v % m) == r` of the asserts
 * (Halide's stride constraints, e.g. Input::dim(d).set_stride) for the statements after them,
 * and the alignment of let-bound values in their scope.
 * Guarantees: only a Load of an input buffer (a Parameter) whose alignment was unknown changes,
 * and only to an alignment its index provably has.
 */

#include "Halide.h"

#include <map>
#include <string>

namespace alcop {

/** What the recovery learns of a Stmt's variables: the alignment of each integer let's value,
 * and the facts (v % m) == r of the asserts. Names are unique in a lowered Stmt, so each holds
 * wherever its variable is in scope; a loop's variable is any integer to it, so they hold too
 * where the pipeline rewrite puts another chunk's index in a copy. The copy lowering reads them
 * for an index it builds (copy/CopyLowering.h). */
using KnownAlignments = std::map<std::string, Halide::Internal::ModulusRemainder>;

/** `s` with its input loads' alignment recovered; what it learned on the way is added to
 * `learned` when given. */
Halide::Internal::Stmt recover_global_alignment(const Halide::Internal::Stmt &s, KnownAlignments *learned = nullptr);

/** The alignment of `e`, given `known`, with a positive modulus. */
Halide::Internal::ModulusRemainder alignment_of(const Halide::Expr &e, const KnownAlignments &known);

}  // namespace alcop

#endif
