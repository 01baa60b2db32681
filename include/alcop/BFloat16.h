#ifndef ALCOP_BFLOAT16_H
#define ALCOP_BFLOAT16_H

/** \file
 * fp32 to bf16 in integer arithmetic, for pipelines that convert without the pass.
 *
 * Halide 14's PTX backend cannot round an fp32 to bf16 (LLVM 14's NVPTX has none). Inside the
 * CUDA kernels of a pipeline the pass lowers (alcop::enable, alcop::auto_pipeline, the Alcop
 * autoscheduler), a plain `cast(BFloat(16), f)` is lowered to this same rounding; a pipeline
 * without the pass calls it itself (the softmax and layernorm generators do).
 */

#include "Halide.h"

namespace alcop {

/** The fp32 `f` rounded to the nearest bf16, ties to even, as Halide's bfloat16_t rounds; a NaN
 * stays a quiet NaN of its sign (Halide's own emulation rounds a NaN whose payload is in the
 * low half into an infinity, and all ones into zero). Any lanes. */
Halide::Expr round_to_bfloat16(const Halide::Expr &f);

}  // namespace alcop

#endif
