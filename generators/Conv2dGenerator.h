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
// reduction is ky, kx (outer serial loops) and the channel chunks of tile_k channels (the
// streaming loop: its pipeline restarts for each filter tap). Padding and channel tails read
// zeros.

#include "Halide.h"

#include "ContractionSchedule.h"
#include "alcop/Alcop.h"

namespace alcop_generators {

/** The conv2d generator, as a base for a generator class `Self` (as MatMulGenerator): Self may
 * install the pass its own way by declaring enable_pipelines(options). */
template<typename Self>
class Conv2dGenerator : public Halide::Generator<Self> {
public:
    template<typename T>
    using GeneratorParam = typename Halide::Generator<Self>::template GeneratorParam<T>;
    template<typename T>
    using Input = typename Halide::Generator<Self>::template Input<T>;
    template<typename T>
    using Output = typename Halide::Generator<Self>::template Output<T>;
    using Var = Halide::Var;
    using Expr = Halide::Expr;
    using RDom = Halide::RDom;
    using Func = Halide::Func;
    using Type = Halide::Type;
    using Target = Halide::Target;
    template<typename T = void>
    using Buffer = Halide::Buffer<T>;

    // The operands' element type: f32, f16 or bf16 (tensor cores), as in MatMulGenerator.h.
    GeneratorParam<Operands> type{"type", Operands::F32, operand_type_names()};
    // block_m, block_n, tile_k, stages and register_stages: 0 is the type's default (with_defaults).
    GeneratorParam<int> block_m{"block_m", 0, 0, 1024};  // output pixels per block
    GeneratorParam<int> block_n{"block_n", 0, 0, 1024};  // output channels per block
    GeneratorParam<int> thread_m{"thread_m", 4, 1, 64};  // f32
    GeneratorParam<int> thread_n{"thread_n", 4, 1, 64};  // f32
    // f16, bf16: eight 64 x 32 warp tiles a 128 x 128 block. With 64 x 64 (four warps) each
    // thread also copies twice the tile elements, and the copies' index math (pixel to x, y,
    // n; padding) takes the registers ptxas then spills (255 registers, 56 bytes of stack at
    // 3 stages, while gemm and bmm fit 64 x 64 in 245).
    GeneratorParam<int> warp_m{"warp_m", 64, 16, 256};
    GeneratorParam<int> warp_n{"warp_n", 32, 16, 256};
    GeneratorParam<int> tile_k{"tile_k", 0, 0, 256};             // input channels per chunk
    GeneratorParam<int> vector_width{"vector_width", 4, 1, 16};  // f32 (f16, bf16: 16 bytes)
    GeneratorParam<int> stages{"stages", 0, 0, 16};
    // Register fragments per channel step, with this many slots (see MatMulGenerator).
    GeneratorParam<int> register_stages{"register_stages", 0, 0, 8};
    GeneratorParam<int> stride{"stride", 1, 1, 8};
    GeneratorParam<int> pad{"pad", 0, 0, 8};
    // The same schedule without any alcop::pipeline() call, pipelined by alcop::auto_pipeline.
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};

    Input<Buffer<>> input{"input", 4};    // (ci, x, y, n), typed by `type` (configure())
    Input<Buffer<>> filter{"filter", 4};  // (co, ci, kx, ky)
    Output<Buffer<float>> out{"out", 2};  // (co, pixel)

    void configure() {
        input.set_type(element_type(type));
        filter.set_type(element_type(type));
    }

    void generate() {
        const bool tc = type != Operands::F32;
        const ContractionShape shape = with_defaults(type, block_m, block_n, tile_k, stages, 0, register_stages);
        const int kt = shape.tile_k, bm = shape.block_m, bn = shape.block_n;
        const int vw = copy_vector_elements("conv2d", type, vector_width, kt, bn);
        const int s = stride, pd = pad;
        const Type t = element_type(type);
        _halide_user_assert(this->get_target().has_gpu_feature()) << "The conv2d generator needs a GPU target.\n";
        if (tc) check_tensor_core_tiles("conv2d", {bm, bn, warp_m, warp_n}, kt);
        Expr CI = input.dim(0).extent(), W = input.dim(1).extent(), H = input.dim(2).extent();
        Expr CO = filter.dim(0).extent(), KW = filter.dim(2).extent(), KH = filter.dim(3).extent();
        Expr OW = (W + 2 * pd - KW) / s + 1, OH = (H + 2 * pd - KH) / s + 1;
        Expr pixels = OW * OH * input.dim(3).extent();

        // As in the GEMM: unclamped contiguous dimensions where copies become cp.async.
        const bool async =
            this->get_target().has_feature(Target::CUDA) && alcop::uses_async_copies(this->get_target(), copy_kind());
        auto contiguous = [&](Expr i, Expr extent) {
            return async ? unsafe_promise_clamped(i, 0, extent - 1) : clamp(i, 0, extent - 1);
        };
        if (async) {
            for (Input<Buffer<>> *in : {&input, &filter}) {
                in->set_host_alignment(16);
                in->dim(0).set_min(0);
                for (int d = 1; d < 4; d++) {
                    in->dim(d).set_stride((in->dim(d).stride() / vw) * vw);
                }
            }
        }

        Expr ox = p % OW, oy = (p / OW) % OH, n = p / (OW * OH);
        Expr ix = ox * s + kx - pd, iy = oy * s + ky - pd;
        Expr inside = ci < CI && p < pixels && ix >= 0 && ix < W && iy >= 0 && iy < H;
        input_shared(ci, p, kx, ky) = select(
            inside,
            input(contiguous(ci, CI), clamp(ix, 0, W - 1), clamp(iy, 0, H - 1), clamp(n, 0, input.dim(3).extent() - 1)),
            Halide::cast(t, 0));
        filter_shared(co, ci, kx, ky) =
            select(ci < CI && co < CO, filter(contiguous(co, CO), clamp(ci, 0, CI - 1), kx, ky), Halide::cast(t, 0));

        r = RDom(0, kt, 0, (CI + kt - 1) / kt, 0, KW, 0, KH, "r");
        Expr rc = r.y * kt + r.x;
        prod(x, y) = 0.0f;
        // (For f32 the casts are no-ops: the same Expr.)
        prod(x, y) +=
            Halide::cast<float>(input_shared(rc, y, r.z, r.w)) * Halide::cast<float>(filter_shared(x, rc, r.z, r.w));
        out(x, y) = prod(x, y);
        if (async) {
            out.dim(0).set_min(0);
        }
    }

    void schedule() {
        const ContractionShape shape = with_defaults(type, block_m, block_n, tile_k, stages, 0, register_stages);
        const int bm = shape.block_m, bn = shape.block_n, sa = shape.stages;
        if (type != Operands::F32) {
            schedule_tensor_core_contraction(out, prod, input_shared, filter_shared, x, y, {}, {r.x}, r.y, {r.z, r.w},
                                             {bm, bn, warp_m, warp_n}, sa, sa, shape.register_stages, !auto_pipeline);
        } else {
            schedule_contraction(out, prod, input_shared, filter_shared, x, y, {}, {r.x}, r.y, {r.z, r.w},
                                 {bm, bn, thread_m, thread_n, vector_width}, sa, sa, register_stages, !auto_pipeline);
        }
        alcop::Options options;
        options.target = this->get_target();
        options.copies = copy_kind();
        if (auto_pipeline) {
            alcop::auto_pipeline(this->get_pipeline(), options);
        } else {
            static_cast<Self *>(this)->enable_pipelines(options);
        }
    }

    void enable_pipelines(const alcop::Options &options) {
        alcop::enable(this->get_pipeline(), options);
    }

protected:
    alcop::CopyKind copy_kind() const {
        return alcop::CopyKind::Auto;
    }

    Var ci{"ci"}, co{"co"}, p{"p"}, kx{"kx"}, ky{"ky"}, x{"x"}, y{"y"};
    Func input_shared{"input_shared"}, filter_shared{"filter_shared"}, prod{"prod"};
    RDom r;  // r.x: channels within a chunk, r.y: the chunk (pipelined), r.z, r.w: kx, ky
};

}  // namespace alcop_generators

#endif
