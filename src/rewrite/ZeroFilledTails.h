#ifndef ALCOP_ZERO_FILLED_TAILS_H
#define ALCOP_ZERO_FILLED_TAILS_H

/** \file
 * Runs the last, partial chunk of a tensor-core reduction on mma.sync, as CUTLASS runs its K
 * residue: the operands' tiles are zero past K, and every k step of the chunk runs. A step of
 * the pass before the tensor-core analysis, after rewrite/WholeChunks.h.
 *
 * Halide splits a reduction of runtime extent K into chunks of KT with the last one guarded:
 *
 *   for (ko, 0, (K + KT - 1) / KT) {
 *     produce A_tile { A_tile[i] = A[...] }  ...  produce B_tile { ... }
 *     for (ki, 0, max(min(K - ko KT, KT), 0)) { P += f32(A_tile[...ki...]) * f32(B_tile[...ki...]) }
 *   }
 *
 * a step loop of no constant extent, which mma.sync cannot take (the branch of a runtime K that
 * the k tile does not divide: the Alcop autoscheduler's generic one). Where the accumulator P
 * asks for tensor cores and both operands are staged per chunk, this pass makes each copy into
 * an operand's tile write 0 where the element's k coordinate in the chunk is at least the step
 * loop's extent (the tile's layout from its Func: storage order and bound extents; its first
 * element the least index any copy of it writes), and gives the step loop the most steps its
 * extent takes (a whole chunk's, which each tile must hold along K). The products it adds are
 * 0 x 0: exact, also where the operands past K hold infinities or NaNs. A copy's own zero fill
 * (select(c, A[...], 0)) takes the new condition into c, and a 16-byte vector along k is zeroed
 * as a prefix of its lanes: the form the copy lowering makes one cp.async of, its src-size
 * zero-filling past K (copy/CopyLowering.h). Where the tile's definition reads its input at
 * clamp(k, lo, hi) and the reduction runs inside [lo, hi], such a vector is a gather whose clamp
 * changes no lane the zero fill keeps; the condition then also says that those lanes lie in
 * [lo, hi], which the copy lowering reads to load the dense vector instead.
 *
 * Assumes: the lowered Stmt the pass receives, the tiles computed at the chunk loop (their k
 * coordinate starts at the chunk's first reduction index) and read in it only where the step
 * loop reads them (past its extent nothing reads them). Guarantees: only step loops of a
 * tensor-core accumulator whose extent is not a constant but at most a constant that its tiles'
 * K extents hold change, with the stores inside the producers of its two operand tiles in the
 * same chunk loop; anything it cannot read so (a tile without constant bound extents, a
 * producer outside the loop) is left as it was, on the threads' own multiply-adds.
 */

#include "Halide.h"

#include <vector>

namespace alcop {

Halide::Internal::Stmt zero_fill_k_tails(const Halide::Internal::Stmt &s,
                                         const std::vector<Halide::Internal::Function> &outputs);

}  // namespace alcop

#endif
