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
 * The emulation adds no synchronization: no barrier, no shared memory of its own, no order
 * between threads that the real instructions do not have, so the pipeline's own waits and
 * barriers are the only ones, and a missing one gives wrong numbers as on a GPU. Each thread
 * computes privately what the warp instruction gives it, holding the other lanes' registers
 * that its own mma.sync reads (lane l = 4g + t):
 *  - every 32-bit register a fragment passes through (a `let` of an ldmatrix or a register
 *    copy, an entry of a register array ldmatrix stores into) becomes 12 private entries: its
 *    value on lanes 4g..4g+3, where this lane's A elements come from, and on lanes 8t..8t+7,
 *    where its B elements come from (an A register's B entries, and the reverse, are never
 *    read);
 *  - ldmatrix.x4[.trans], register j: lane l' = 4g' + t' holds row g', elements 2t' and
 *    2t' + 1 (without .trans) or rows 2t' and 2t' + 1, element g' (.trans) of matrix j, whose
 *    row r the thread reads from shared memory at the address lane 8j + r gives (the marker's
 *    e0, computed as that lane computes it: the lane variable substituted, through the lets
 *    that depend on it; ldmatrix reads a row from its first element's address, and the LLVM
 *    rewrite checks that e1..e7 are the rest of the row); the smaller index in the low half;
 *  - mma.sync.m16n8k16: lane l computes d_q = c_q + sum_k A[r][k] B[k][c] (r = g + 8 (q / 2),
 *    c = 2t + q % 2), reading A[r][k] from lane 4 (r % 8) + (k % 8) / 2's entry of register
 *    a(r / 8 + 2 (k / 8)), half k % 2, and B[k][c] from lane 4c + (k % 8) / 2's entry of
 *    register b(k / 8), half k % 2; products and sums in fp32, in the order of k.
 * A thread reads the other lanes' rows when it executes the ldmatrix, as the warp would. All of
 * it is straight-line code: pocl puts barriers around every innermost loop without barriers
 * (its implicit loop barriers), which a loop here would add. The register operands of an mma
 * must come from ldmatrix, through lets and register arrays (checked), and a register array's
 * index must be the same on every lane of a warp (as the rewrite makes them: slot numbers).
 * Holding only those lanes, not all 32, is what keeps pocl's compile of these kernels short:
 * the gemm of tensor_core_fault_test's f16_r1 took 158 s with every lane's entries, 28 s so.
 *
 * fp16 and bf16 travel as UInt(16) bits inside the kernels: every Float(16) / BFloat(16)
 * load, store, constant, variable and register allocation becomes UInt(16), so the kernels'
 * buffer arguments are ushort; a cast to a wider type decodes the bits in integer arithmetic
 * (bf16: the bits shifted into the top half of an fp32; f16: sign, exponent and mantissa,
 * subnormals, infinities and NaNs included), and a cast to one encodes them (rounded to
 * nearest, ties to even, as cvt.rn: a 16-bit output's epilogue). Arithmetic on 16-bit floats,
 * or a cast between two, inside a kernel is an internal error: nothing in the tensor-core
 * kernels does either.
 * Kernels without markers only get the type change, and predicated vector loads and stores
 * (which Halide's OpenCL backend lacks) become one scalar access a lane under its predicate.
 */

#include "Halide.h"

namespace alcop {
namespace testing {

Halide::Internal::Stmt emulate_tensor_cores(const Halide::Internal::Stmt &s);

}  // namespace testing
}  // namespace alcop

#endif
