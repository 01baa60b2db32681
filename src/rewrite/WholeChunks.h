#ifndef ALCOP_WHOLE_CHUNKS_H
#define ALCOP_WHOLE_CHUNKS_H

/** \file
 * Proves a reduction's chunks whole where a branch says that its extent is a multiple of the
 * chunk: the first step of the pass, before the tensor-core analysis reads the chunks.
 *
 * Halide splits a reduction of runtime extent K into chunks of KT with the last one guarded:
 *
 *   for (ko, 0, (K + KT - 1) / KT) { ...  for (ki, 0, max(min(K - ko KT, KT), 0)) ... }
 *
 * Under `if (K % KT == 0)` (the Alcop autoscheduler specializes a runtime K on it) every chunk
 * is whole, but Halide's simplifier cannot prove it: it bounds a loop's index by constants
 * only, and ko's bound, (K + KT - 1) / KT, is not one. Unproven, the branch would run as a
 * tail (rewrite/ZeroFilledTails.h): every copy of every chunk predicated on it.
 *
 * This pass writes each such K as KT q (q a fresh variable) and bounds what depends on it by
 * interval arithmetic over the loops around it (Halide's bounds_of_expr_in_scope, the lets
 * substituted): ko in [0, q - 1] gives K - ko KT in [KT, KT q]. Where a loop's extent has one
 * constant for its lower and upper bounds, that constant replaces it (the tensor-core schedule's
 * step loop); an if whose condition's comparisons hold everywhere is replaced by its then-case
 * (the SIMT schedule unrolls the step loop, one guard `ko KT + i < K` a step).
 *
 * Assumes: the lowered Stmt the pass receives. Guarantees: only extents that are not constants
 * and conditions change, each inside the true branch of an `if` one of whose conjuncts is
 * `K % c == 0` (c a constant), and only where the loops around them take the extent's value, or
 * the condition holds, at every iteration.
 */

#include "Halide.h"

namespace alcop {

Halide::Internal::Stmt prove_whole_chunks(const Halide::Internal::Stmt &s);

}  // namespace alcop

#endif
