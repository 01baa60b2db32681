#ifndef ALCOP_GENERATORS_MATMUL_GENERATOR_H
#define ALCOP_GENERATORS_MATMUL_GENERATOR_H

// Matrix multiplication on the GPU, tiled for shared memory and registers, with the shared
// tiles of A and B pipelined across the reduction by ALCOP. A and B are fp32 (type=f32, the
// SIMT schedule) or fp16 / bf16 (type=f16, type=bf16: tensor cores, CUDA sm_80+); out and the
// accumulation are fp32.
//
//   gemm: out(n, m)    = sum_k A(k, m)    * B(n, k)       (row-major M x K, K x N, M x N)
//   bmm:  out(n, m, b) = sum_k A(k, m, b) * B(n, k, b)    (a batch of those)
//
// A block computes a block_m x block_n tile of out with (block_m / thread_m) x
// (block_n / thread_n) threads, each a thread_m x thread_n register tile (f32), or with
// (block_m / warp_m) x (block_n / warp_n) warps, each a warp_m x warp_n tile in mma.sync's
// accumulator layout (f16, bf16; thread_m, thread_n and vector_width are then unused: the
// copies are 16-byte vectors). The reduction
// runs in chunks of tile_k: chunk ko stages a tile_k x block_m tile of A and a tile_k x
// block_n tile of B in shared memory. M, N and K are runtime sizes: tiles past the edges
// read zeros (the reduction is split exactly, so every chunk's tile has one size and place,
// which is what pipelining needs) and the output is guarded.

#include "Halide.h"

#include "ContractionSchedule.h"
#include "alcop/Alcop.h"

#include <vector>

namespace alcop_generators {

/** The GEMM (Batched false) and batched matmul generators, as a base for a generator class
 * `Self` (Halide's Generator<Self> finds the GeneratorParams of Self's whole object). Self may
 * install the pass its own way by declaring enable_pipelines(options). */
template<typename Self, bool Batched>
class MatMulGenerator : public Halide::Generator<Self> {
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
    template<typename T = void>
    using Buffer = Halide::Buffer<T>;

    // The operands' element type: f32, f16 or bf16 (ContractionSchedule.h, Operands).
    GeneratorParam<Operands> type{"type", Operands::F32, operand_type_names()};
    // block_m, block_n, tile_k, stages and register_stages: 0 is the type's default
    // (with_defaults: f32 64 x 64, tile_k 8, unpipelined, no fragments; f16 and bf16 128 x 128,
    // tile_k 32, 3 stages, 2 register stages of the mma fragments).
    GeneratorParam<int> block_m{"block_m", 0, 0, 1024};
    GeneratorParam<int> block_n{"block_n", 0, 0, 1024};
    GeneratorParam<int> thread_m{"thread_m", 4, 1, 64};  // f32
    GeneratorParam<int> thread_n{"thread_n", 4, 1, 64};  // f32
    GeneratorParam<int> warp_m{"warp_m", 64, 16, 256};   // f16, bf16
    GeneratorParam<int> warp_n{"warp_n", 64, 16, 256};   // f16, bf16
    GeneratorParam<int> tile_k{"tile_k", 0, 0, 256};
    GeneratorParam<int> vector_width{"vector_width", 4, 1, 16};  // f32
    GeneratorParam<int> stages{"stages", 0, 0, 16};
    // B's stages when they differ from A's (0: the same as A's).
    GeneratorParam<int> stages_b{"stages_b", 0, 0, 16};
    // Register fragments of A and B loaded from shared memory per step of the chunk, with
    // this many register slots (f32, 0: the compute reads shared memory directly; f16 and
    // bf16: the ldmatrix fragments, 1: loaded in the k step that uses them).
    GeneratorParam<int> register_stages{"register_stages", 0, 0, 8};
    // CUDA launch bounds: at least this many blocks per SM (alcop::min_blocks_per_sm; 0: none).
    GeneratorParam<int> min_blocks_per_sm{"min_blocks_per_sm", 0, 0, 32};
    // Shared memory a block may use, in bytes (alcop::Options::shared_memory_limit; 0: the
    // target's default, 48 KiB). More needs an app that links apps/common/CudaOptIn.
    GeneratorParam<int> shared_memory_limit{"shared_memory_limit", 0, 0, 1 << 30};
    // The same schedule without any alcop::pipeline() call, pipelined by alcop::auto_pipeline
    // (stages and stages_b are then ignored; register_stages >= 2 still leaves the fragment
    // loop serial, as the automatic register level needs).
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};
    // How copies are made (auto: cp.async on CUDA sm_80+, staged through registers elsewhere).
    GeneratorParam<alcop::CopyKind> copies{"copies",
                                           alcop::CopyKind::Auto,
                                           {{"auto", alcop::CopyKind::Auto},
                                            {"synchronous", alcop::CopyKind::Synchronous},
                                            {"staged", alcop::CopyKind::RegisterStaged},
                                            {"async", alcop::CopyKind::Async}}};

    Input<Buffer<>> A{"A", Batched ? 3 : 2};  // typed by `type` (configure())
    Input<Buffer<>> B{"B", Batched ? 3 : 2};
    Output<Buffer<float>> out{"out", Batched ? 3 : 2};

    void configure() {
        A.set_type(element_type(type));
        B.set_type(element_type(type));
    }

    void generate() {
        const ContractionShape shape = resolved_shape();
        const int kt = shape.tile_k, bm = shape.block_m, bn = shape.block_n;
        const int vw = copy_vector_elements(generator_name(), type, vector_width, kt, bn);
        const Halide::Type t = element_type(type);
        Expr K = A.dim(0).extent(), M = A.dim(1).extent(), N = B.dim(0).extent();
        _halide_user_assert(this->get_target().has_gpu_feature())
            << "The " << generator_name() << " generator needs a GPU target (e.g. host-opencl or host-cuda).\n";
        if (tensor_cores()) {
            check_tensor_core_tiles(generator_name(), {bm, bn, warp_m, warp_n}, kt);
        } else {
            _halide_user_assert(bm % thread_m == 0 && bn % thread_n == 0)
                << "thread_m and thread_n must divide block_m and block_n.\n";
        }

        std::vector<Var> batch;
        if (Batched) batch.push_back(b);

        // The staged tiles: copies of A and B that read zeros outside the matrices. Where the
        // copies become cp.async (CUDA, sm_80+), the contiguous dimension is not clamped, so
        // that each thread's copy is one dense, aligned vector load; cp.async's src-size then
        // reads only the elements inside the row and zero-fills the rest. Elsewhere every
        // lane's index is clamped, so no load leaves the matrix.
        const bool async = this->get_target().has_feature(Halide::Target::CUDA) &&
                           alcop::uses_async_copies(this->get_target(), copy_kind());
        auto contiguous = [&](Expr i, Expr extent) {
            return async ? unsafe_promise_clamped(i, 0, extent - 1) : clamp(i, 0, extent - 1);
        };
        if (async) {
            // What makes a whole vector aligned: zero-based rows whose strides are multiples of
            // the vector, in 16-byte aligned allocations (and, below, output tiles, which pick
            // the columns of B, that start at column 0).
            for (Input<Buffer<>> *in : {&A, &B}) {
                in->set_host_alignment(16);
                in->dim(0).set_min(0);
                for (int d = 1; d < in->dimensions(); d++) {
                    in->dim(d).set_stride((in->dim(d).stride() / vw) * vw);
                }
            }
        }
        std::vector<Expr> a_args{contiguous(k, K), clamp(m, 0, M - 1)};
        std::vector<Expr> b_args{contiguous(n, N), clamp(k, 0, K - 1)};
        std::vector<Var> a_vars{k, m}, b_vars{n, k}, out_vars{x, y};
        for (Var v : batch) {
            a_args.push_back(v);
            b_args.push_back(v);
            a_vars.push_back(v);
            b_vars.push_back(v);
            out_vars.push_back(v);
        }
        A_shared(a_vars) = select(k < K && m < M, A(a_args), Halide::cast(t, 0));
        B_shared(b_vars) = select(k < K && n < N, B(b_args), Halide::cast(t, 0));

        r = RDom(0, kt, 0, (K + kt - 1) / kt, "r");
        Expr rk = r.y * kt + r.x;
        std::vector<Expr> a_use{rk, y}, b_use{x, rk};
        for (Var v : batch) {
            a_use.push_back(v);
            b_use.push_back(v);
        }
        prod(out_vars) = 0.0f;
        // (For f32 the casts are no-ops: the same Expr.)
        prod(out_vars) += Halide::cast<float>(A_shared(a_use)) * Halide::cast<float>(B_shared(b_use));
        out(out_vars) = prod(out_vars);
        if (async) {
            out.dim(0).set_min(0);
        }
    }

    void schedule() {
        const ContractionShape shape = resolved_shape();
        const int bm = shape.block_m, bn = shape.block_n, sa = shape.stages, sb = stages_b > 0 ? (int)stages_b : sa;
        std::vector<Var> extra_blocks;
        if (Batched) extra_blocks.push_back(b);
        if (tensor_cores()) {
            schedule_tensor_core_contraction(out, prod, A_shared, B_shared, x, y, extra_blocks, {r.x}, r.y, {},
                                             {bm, bn, warp_m, warp_n}, sa, sb, shape.register_stages, !auto_pipeline);
        } else {
            schedule_contraction(out, prod, A_shared, B_shared, x, y, extra_blocks, {r.x}, r.y, {},
                                 {bm, bn, thread_m, thread_n, vector_width}, sa, sb, register_stages, !auto_pipeline);
        }
        if (min_blocks_per_sm > 0) {
            alcop::min_blocks_per_sm(out, min_blocks_per_sm);
        }
        alcop::Options options;
        options.target = this->get_target();
        options.copies = copy_kind();
        options.shared_memory_limit = shared_memory_limit;
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
    bool tensor_cores() const {
        return type != Operands::F32;
    }
    ContractionShape resolved_shape() const {
        return with_defaults(type, block_m, block_n, tile_k, stages, stages_b, register_stages);
    }
    alcop::CopyKind copy_kind() const {
        return copies;
    }
    static const char *generator_name() {
        return Batched ? "bmm" : "gemm";
    }

    Var k{"k"}, m{"m"}, n{"n"}, x{"x"}, y{"y"}, b{"b"};
    Halide::Func A_shared{"A_shared"}, B_shared{"B_shared"}, prod{"prod"};
    RDom r;  // r.x: within a chunk (ki), r.y: the chunk (ko), the loop that is pipelined
};

}  // namespace alcop_generators

#endif
