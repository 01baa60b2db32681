#ifndef ALCOP_GENERATORS_CONV2D_GENERATOR_H
#define ALCOP_GENERATORS_CONV2D_GENERATOR_H

// 2-D convolution (NHWC input, HWIO filter) as an implicit GEMM on the GPU, with the shared
// tiles of input and filter pipelined by ALCOP across the input-channel chunks; fp32 operands
// (type=f32, the SIMT schedule) or fp16 / bf16 (type=f16, type=bf16: tensor cores, CUDA
// sm_80+), fp32 output and accumulation:
//
//   out(co, p) = sum_{ky, kx, ci} input(ci, ox*stride + kx - pad, oy*stride + ky - pad, n)
//                                 * filter(co, ci, kx, ky)
//
// where p = ox + OW * (oy + OH * n) runs over the output pixels (so `out` is the NHWC output
// seen as a CO x pixels matrix: the same bytes). M = pixels, N = CO, K = KH * KW * CI; the
// reduction runs in chunks of tile_k channels of one filter tap, the chunks of all taps one
// loop (the streaming loop, which the pipelines run across). Padding and channel tails read
// zeros.

#include "Halide.h"

#include "ContractionGenerator.h"
#include "alcop/Alcop.h"

namespace alcop_generators {

/** The conv2d generator, as a base for a generator class `Self` (as MatMulGenerator): Self may
 * install the pass its own way by declaring enable_pipelines(options). */
template<typename Self>
class Conv2dGenerator : public ContractionGenerator<Self> {
public:
    // The GeneratorParams of ContractionGenerator.h (type, the tiles, stages, register_stages,
    // auto_pipeline), and these:
    GeneratorParam<int> stride{"stride", 1, 1, 8};
    GeneratorParam<int> pad{"pad", 0, 0, 8};

    OperandInput input{"input", 4};    // (ci, x, y, n), typed by `type` (configure())
    OperandInput filter{"filter", 4};  // (co, ci, kx, ky)
    OutputBuffer out{"out", 2};        // (co, pixel)

    // f16, bf16: four 64 x 64 warp tiles a 128 x 128 block, as gemm and bmm. (Eight 64 x 32
    // until the chunks of all filter taps were one loop: before, the copies' index math took
    // the registers ptxas then spilled at 64 x 64, 255 and 56 bytes of stack at 3 stages; now
    // 254 over whole channel chunks, 255 otherwise, none spilled.)
    Conv2dGenerator() : ContractionGenerator<Self>(64) {
    }

    void configure() {
        this->set_operand_types(input, filter);
    }

    void generate() {
        const ContractionShape shape = this->resolved_shape();
        const int kt = shape.tile_k, bm = shape.block_m, bn = shape.block_n;
        const int vw = copy_vector_elements("conv2d", this->type, this->vector_width, kt, bn);
        const int s = stride, pd = pad;
        const Halide::Type t = element_type(this->type);
        _halide_user_assert(this->get_target().has_gpu_feature()) << "The conv2d generator needs a GPU target.\n";
        if (this->tensor_cores()) check_tensor_core_tiles("conv2d", {bm, bn, this->warp_m, this->warp_n}, kt);
        Expr CI = input.dim(0).extent(), W = input.dim(1).extent(), H = input.dim(2).extent();
        Expr CO = filter.dim(0).extent(), KW = filter.dim(2).extent(), KH = filter.dim(3).extent();
        Expr OW = (W + 2 * pd - KW) / s + 1, OH = (H + 2 * pd - KH) / s + 1;
        Expr pixels = OW * OH * input.dim(3).extent();

        // As in the GEMM: unclamped where the copies become cp.async (guarded_index).
        const bool async = this->promise_async_operands(alcop::CopyKind::Auto, vw, input, filter);
        const bool rows = this->unclamped_rows(async);
        auto contiguous = [&](Expr i, Expr extent) { return this->guarded_index(async, i, extent); };
        auto other = [&](Expr i, Expr extent) { return this->guarded_index(rows, i, extent); };

        // K = KH x KW x CI runs as one loop of chunks (as CUTLASS's implicit GEMM iterates it),
        // so that the pipeline runs across the filter taps instead of filling and draining at
        // each: chunk q is tile_k channels of tap q / chunks_per_tap. The shared tiles are
        // indexed by the chunk, which keeps each one's place affine in the chunk loop and its
        // channels contiguous (16-byte copies); their channel and tap come from q, once a chunk.
        // The divisions are unsigned and by divisors of at least 1: Halide emits a signed
        // division by a runtime value with Euclidean sign and zero fix-ups (about four
        // instructions each, every chunk), an unsigned one as one div.u32 or rem.u32. (q is
        // never negative; the promises give back the bounds the casts hide from the inputs'
        // required regions.)
        Expr chunks_per_tap = (CI + kt - 1) / kt;
        auto u32 = [](const Expr &e) { return Halide::cast<uint32_t>(e); };
        auto i32 = [](const Expr &e) { return Halide::cast<int32_t>(e); };
        Expr per_tap = max(u32(chunks_per_tap), 1), width = max(u32(KW), 1);
        Expr tap = u32(q) / per_tap;
        Expr kx = unsafe_promise_clamped(i32(tap % width), 0, KW - 1);
        Expr ky = unsafe_promise_clamped(i32(tap / width), 0, KH - 1);
        Expr channel = i32(u32(q) % per_tap) * kt + c;

        // On tensor cores, out is specialized on whole channels: CI a multiple of tile_k and CO
        // of the copies' vector. There every copy is all or nothing, by conditions uniform over
        // its vector (the image's borders; the vector's first filter column, co / vw), the
        // form whose prefetch past the last chunk is predicated instead of branched
        // (copy/CopyLowering.cpp); and a row past the last pixel (a partial block tile) reads
        // the last pixel's input instead of a condition in every copy and chunk: its
        // accumulators are never stored, and the clamp is one per thread, before the loop.
        // The other kernel zero-fills the channel tail lane by lane and keeps the pixel's
        // condition (its prefetch is a branch, out of which LLVM would not hoist the clamped
        // pixel's divisions).
        whole_channels = CI % kt == 0 && CO % vw == 0;
        Expr pixel = this->tensor_cores() ? select(whole_channels, min(p, pixels - 1), p) : p;
        Expr ox = pixel % OW, oy = (pixel / OW) % OH, n = pixel / (OW * OH);
        Expr ix = ox * s + kx - pd, iy = oy * s + ky - pd;
        // 0 <= i < extent as one unsigned comparison: a negative i wraps past every extent.
        auto within = [&](const Expr &i, const Expr &extent) { return u32(i) < u32(extent); };
        Expr input_inside = this->guard(channel < CI && p < pixels, whole_channels) && within(ix, W) && within(iy, H);
        Expr filter_inside = channel < CI && co < CO;
        if (this->tensor_cores()) filter_inside = select(whole_channels, co / vw < CO / vw, filter_inside);
        input_shared(c, p, q) = select(
            input_inside,
            input(contiguous(channel, CI), other(ix, W), other(iy, H), other(n, input.dim(3).extent())),
            Halide::cast(t, 0));
        filter_shared(co, c, q) =
            select(filter_inside, filter(contiguous(co, CO), other(channel, CI), kx, ky), Halide::cast(t, 0));

        r = RDom(0, kt, 0, chunks_per_tap * KW * KH, "r");
        prod(x, y) = 0.0f;
        // (For f32 the casts are no-ops: the same Expr.)
        prod(x, y) += Halide::cast<float>(input_shared(r.x, y, r.y)) * Halide::cast<float>(filter_shared(x, r.x, r.y));
        out(x, y) = prod(x, y);
        if (async) {
            out.dim(0).set_min(0);
        }
    }

    void schedule() {
        const ContractionShape shape = this->resolved_shape();
        this->schedule_contraction_of(out, prod, input_shared, filter_shared, x, y, {}, r.x, r.y, shape,
                                      shape.stages);
        this->specialize_whole_tiles(out, whole_channels);
        alcop::Options options;
        options.copies = alcop::CopyKind::Auto;
        this->install_pass(options);
    }

protected:
    Var c{"c"}, co{"co"}, p{"p"}, q{"q"}, x{"x"}, y{"y"};  // c: a channel of chunk q
    Func input_shared{"input_shared"}, filter_shared{"filter_shared"}, prod{"prod"};
    RDom r;  // r.x: channels within a chunk, r.y: the chunk (of all taps: pipelined)
    Expr whole_channels;  // CI a multiple of tile_k, CO of the copies' vector
};

}  // namespace alcop_generators

#endif
