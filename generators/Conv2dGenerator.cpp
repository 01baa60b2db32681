// fp32 2-D convolution (NHWC input, HWIO filter) as an implicit GEMM on the GPU, with the
// shared tiles of input and filter pipelined by ALCOP across the input-channel chunks:
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

namespace {

using namespace Halide;
using alcop_generators::ContractionTiles;
using alcop_generators::schedule_contraction;

class Conv2d : public Generator<Conv2d> {
public:
    GeneratorParam<int> block_m{"block_m", 64, 1, 1024};  // output pixels per block
    GeneratorParam<int> block_n{"block_n", 64, 1, 1024};  // output channels per block
    GeneratorParam<int> thread_m{"thread_m", 4, 1, 64};
    GeneratorParam<int> thread_n{"thread_n", 4, 1, 64};
    GeneratorParam<int> tile_k{"tile_k", 8, 1, 256};  // input channels per chunk
    GeneratorParam<int> vector_width{"vector_width", 4, 1, 16};
    GeneratorParam<int> stages{"stages", 1, 1, 16};
    // Register fragments per channel step, with this many slots (0: none; see MatMulGenerator).
    GeneratorParam<int> register_stages{"register_stages", 0, 0, 8};
    GeneratorParam<int> stride{"stride", 1, 1, 8};
    GeneratorParam<int> pad{"pad", 0, 0, 8};
    // The same schedule without any alcop::pipeline() call, pipelined by alcop::auto_pipeline.
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};

    Input<Buffer<float>> input{"input", 4};    // (ci, x, y, n)
    Input<Buffer<float>> filter{"filter", 4};  // (co, ci, kx, ky)
    Output<Buffer<float>> out{"out", 2};       // (co, pixel)

    void generate() {
        const int kt = tile_k, vw = vector_width, s = stride, pd = pad;
        _halide_user_assert(get_target().has_gpu_feature()) << "The conv2d generator needs a GPU target.\n";
        _halide_user_assert(kt % vw == 0 && block_n % vw == 0) << "vector_width must divide tile_k and block_n.\n";
        Expr CI = input.dim(0).extent(), W = input.dim(1).extent(), H = input.dim(2).extent();
        Expr CO = filter.dim(0).extent(), KW = filter.dim(2).extent(), KH = filter.dim(3).extent();
        Expr OW = (W + 2 * pd - KW) / s + 1, OH = (H + 2 * pd - KH) / s + 1;
        Expr pixels = OW * OH * input.dim(3).extent();

        // As in the GEMM: unclamped contiguous dimensions where copies become cp.async.
        const bool async = get_target().has_feature(Target::CUDA) && alcop::uses_async_copies(get_target());
        auto contiguous = [&](Expr i, Expr extent) {
            return async ? unsafe_promise_clamped(i, 0, extent - 1) : clamp(i, 0, extent - 1);
        };
        if (async) {
            for (Input<Buffer<float>> *in : {&input, &filter}) {
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
            0.0f);
        filter_shared(co, ci, kx, ky) =
            select(ci < CI && co < CO, filter(contiguous(co, CO), clamp(ci, 0, CI - 1), kx, ky), 0.0f);

        r = RDom(0, kt, 0, (CI + kt - 1) / kt, 0, KW, 0, KH, "r");
        Expr rc = r.y * kt + r.x;
        prod(x, y) = 0.0f;
        prod(x, y) += input_shared(rc, y, r.z, r.w) * filter_shared(x, rc, r.z, r.w);
        out(x, y) = prod(x, y);
        if (async) {
            out.dim(0).set_min(0);
        }
    }

    void schedule() {
        const ContractionTiles tiles{block_m, block_n, thread_m, thread_n, vector_width};
        schedule_contraction(out, prod, input_shared, filter_shared, x, y, {}, {r.x}, r.y, {r.z, r.w}, tiles, stages,
                             stages, register_stages, !auto_pipeline);
        if (auto_pipeline) {
            alcop::auto_pipeline(get_pipeline(), get_target());
        } else {
            alcop::enable(get_pipeline(), get_target());
        }
    }

private:
    Var ci{"ci"}, co{"co"}, p{"p"}, kx{"kx"}, ky{"ky"}, x{"x"}, y{"y"};
    Func input_shared{"input_shared"}, filter_shared{"filter_shared"}, prod{"prod"};
    RDom r;  // r.x: channels within a chunk, r.y: the chunk (pipelined), r.z, r.w: kx, ky
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Conv2d, conv2d)
