#ifndef ALCOP_TEST_EMULATED_TENSOR_CORES_H
#define ALCOP_TEST_EMULATED_TENSOR_CORES_H

/** \file
 * The tensor-core emulation, for the tests (plugged in through alcop::testing::Hooks::
 * tensor_cores): the ldmatrix and mma.sync markers of the rewritten kernels
 * (codegen/TensorCoreMarkers.h) become plain Halide IR that any OpenCL device runs, pocl's
 * CPU device included (no cl_khr_fp16, no sub-groups). It consumes the very marker calls the
 * NVPTX rewrite consumes, with their swizzled addresses, and moves the data between lanes by
 * the PTX ISA's fragment tables, so a wrong lane mapping, a missing `.trans` or a swizzle that
 * the writers and readers of a tile disagree on gives wrong numbers.
 *
 * Lanes exchange data through a per-thread slot appended to the kernel's merged shared
 * allocation (64 bytes a thread, 32-byte aligned), between two barriers:
 *  - ldmatrix.x4[.trans]: each lane writes the 8 elements of its row (the marker's loads
 *    e0..e7, from the addresses the rewrite gave it); lane l = 4g + t then reads register j
 *    from the rows of lanes 8j..8j+7: row g, elements 2t and 2t + 1 (without .trans) or rows
 *    2t and 2t + 1, element g (.trans); the smaller index in the low half. The four registers of
 *    one instruction (calls j = 0..3 with the same row) share one exchange.
 *  - mma.sync.m16n8k16: each lane writes a0..a3, b0, b1, each half decoded to fp32 (by its
 *    owner: a pure function of the bits, done once rather than by every reader); lane l computes
 *    d_q = c_q + sum_k A[r][k] B[k][c] (r = g + 8 (q / 2), c = 2t + q % 2), reading A[r][k] from
 *    lane 4 (r % 8) + (k % 8) / 2, register a(r / 8 + 2 (k / 8)), half k % 2, and B[k][c] from
 *    lane 4c + (k % 8) / 2, register b(k / 8), half k % 2; products and sums in fp32, in the
 *    order of k. The four calls of one instruction share one exchange.
 * Every exchange is `barrier; write; barrier; read`, so all threads of the block must reach
 * each marker (the markers' contract already asks it of a warp).
 *
 * fp16 and bf16 travel as UInt(16) bits inside the kernels: every Float(16) / BFloat(16)
 * load, store, constant, variable and register allocation becomes UInt(16), so the kernels'
 * buffer arguments are ushort; a cast to a wider type decodes the bits in integer arithmetic
 * (bf16: the bits shifted into the top half of an fp32; f16: sign, exponent and mantissa,
 * subnormals, infinities and NaNs included). Arithmetic on 16-bit floats, or a cast to one,
 * inside a kernel is an internal error: nothing in the tensor-core kernels does either.
 * Kernels without markers only get the type change.
 */

#include "Halide.h"

namespace alcop {
namespace testing {

Halide::Internal::Stmt emulate_tensor_cores(const Halide::Internal::Stmt &s);

}  // namespace testing
}  // namespace alcop

#endif
