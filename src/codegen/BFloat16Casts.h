#ifndef ALCOP_BFLOAT16_CASTS_H
#define ALCOP_BFLOAT16_CASTS_H

/** \file
 * Lowers the casts to and from bf16 inside CUDA kernels to integer arithmetic: from bf16 with
 * Halide's own conversion (Halide::Internal::lower_float16_cast, what it does for targets
 * without bf16), to bf16 by rounding that keeps NaNs (alcop::round_to_bfloat16).
 *
 * Halide 14's PTX backend takes bf16 for a type LLVM 14's NVPTX can convert: a bf16 loaded
 * and cast to fp32 becomes `fpext i16`, which ptxas rejects as a 16-bit load into an fp32
 * register (`ld.shared.u16 %f`: "Arguments mismatch for instruction 'ld'"), and an fp32 cast
 * to bf16 has no rounding to select. The tensor cores take bf16 operands as they are, but a
 * kernel that also reads them on the threads' own multiply-adds (the SIMT fallback of a
 * tensor-core contraction, AlcopAutoscheduler.h) or writes a bf16 output casts them.
 *
 * OpenCL has no bf16 type at all, and Halide 14 reports a bf16 in an OpenCL kernel as half
 * ("OpenCL kernel uses half type, but CLHalf target flag not enabled"), so a load or store of
 * bf16 values in an OpenCL kernel is a user error here that names the buffer and says so.
 *
 * Assumes: the Stmt at the end of the pass. Guarantees: only casts inside CUDA kernels (their
 * gpu_block loops) that have bf16 as source or destination change; a bf16 becomes the upper
 * half of an fp32 exactly, an fp32 rounds to the nearest bf16 (ties to even) as Halide's
 * bfloat16_t does, and a NaN stays a NaN (alcop::round_to_bfloat16, alcop/BFloat16.h, which
 * pipelines without the pass call themselves; Halide's emulation for other targets rounds some
 * NaNs into infinities or zero).
 */

#include "Halide.h"

namespace alcop {

Halide::Internal::Stmt lower_bfloat16_casts(const Halide::Internal::Stmt &s);

}  // namespace alcop

#endif
