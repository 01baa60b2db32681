#ifndef ALCOP_ASYNC_COPY_MARKERS_H
#define ALCOP_ASYNC_COPY_MARKERS_H

/** \file
 * The contract between the Halide-level copy lowering and the LLVM rewrite of the NVPTX
 * module: the extern calls that stand for cp.async and its commit/wait groups. Halide 14's
 * PTX backend can neither take an address nor call a void intrinsic, so the copy lowering
 * leaves these calls in the IR and the LLVM rewrite (AsyncCopyRewrite.cpp) turns them into
 * cp.async instructions. No other code knows them.
 *
 *  - Copy: `shared[i] = alcop_cp_async_copy_<t>(global[j], src_bytes)`, where <t> is the element
 *    type (f32, i32, u32, u16, i16, f64, i64, u64, i8, u8; fp16 and bf16 copies are marked on
 *    their bits, u16) and the value is a dense load
 *    of 4, 8 or 16 bytes' worth of elements from global memory, aligned to that size. The
 *    call is the identity on its first argument; Halide scalarizes it over the lanes of a
 *    vector, so the module holds one call per lane between an extractelement of the load and
 *    an insertelement into the stored vector. `src_bytes` (the same i32 on every lane) is how
 *    many leading bytes to read; the rest of the destination is zero-filled (cp.async's
 *    src-size operand). It becomes `cp.async.{cg|ca}.shared.global [dst], [src], size, src_bytes`.
 *  - `alcop_cp_async_commit()` (returns i32 0): closes the group of copies issued so far.
 *  - `alcop_cp_async_wait(n)` (returns i32 0, n a constant): waits until at most n of the
 *    most recent groups are pending.
 * Both group calls act as compiler barriers for memory.
 *
 * One more marker rides the same rewrite: `alcop_launch_bounds(threads, blocks)` (returns i32
 * 0, both constants), left in a kernel by LaunchBounds.h, becomes the kernel's nvvm
 * annotations maxntidx = threads and minctasm = blocks (PTX .maxntid and .minnctapersm).
 */

namespace alcop {

constexpr const char *async_copy_prefix = "alcop_cp_async_copy_";
constexpr const char *async_commit_name = "alcop_cp_async_commit";
constexpr const char *async_wait_name = "alcop_cp_async_wait";
constexpr const char *launch_bounds_name = "alcop_launch_bounds";

/** True once the LLVM rewrite is registered with LLVM's PassManagerBuilder in this process.
 * Calling it also forces the rewrite's translation unit (and its registration) to be linked. */
bool async_copy_rewrite_registered();

}  // namespace alcop

#endif
