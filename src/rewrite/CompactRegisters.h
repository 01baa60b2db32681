#ifndef ALCOP_COMPACT_REGISTERS_H
#define ALCOP_COMPACT_REGISTERS_H

/** \file
 * Shrinks block-level register allocations to the window one thread uses.
 *
 * A Func computed at the GPU block level and stored in MemoryType::Register (the accumulator
 * tile of a shared-memory GEMM, which must live across a serial loop whose body holds the
 * gpu_thread loops) is kept by Halide 14 as a private array of the whole block tile in every
 * thread, indexed by thread: each thread uses only its own window, and the array's
 * thread-dependent indices keep it out of registers. When every index of such an array is
 * `T + c`, where the thread part T depends only on what is fixed for a thread while the array
 * lives (thread and block ids, loops around the allocation, the pipeline's parameters) and is
 * the same for all accesses in value (spellings may differ: an accumulator's init and update
 * often do), and c depends on the loops inside the allocation within constant bounds [lo, hi],
 * this pass shrinks the array to hi - lo + 1 elements indexed by c - lo. Once the loops are
 * unrolled c is a constant, so the array becomes registers. When every c - lo is already a
 * constant (or a dense ramp from one) but they leave gaps, as the rows of an mma.sync
 * accumulator 8 apart in the block tile do, the elements used are numbered densely instead.
 *
 * Exact, because the array is private to each thread. Any other array is left as it is.
 */

#include "Halide.h"

namespace alcop {

Halide::Internal::Stmt compact_thread_registers(const Halide::Internal::Stmt &s);

}  // namespace alcop

#endif
