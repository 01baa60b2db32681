#ifndef ALCOP_GENERATORS_MATMUL_GENERATOR_H
#define ALCOP_GENERATORS_MATMUL_GENERATOR_H

// Matrix multiplication on the GPU, tiled for shared memory and registers, with the shared
// tiles of A and B pipelined across the reduction by ALCOP. A and B are fp32 (type=f32, the
// SIMT schedule) or fp16 / bf16 (type=f16, type=bf16: tensor cores, CUDA sm_80+); the
// accumulation is fp32.
//
//   gemm: out(n, m)    = epilogue(sum_k A(k, m)    * B(n, k))       (row-major M x K, K x N, M x N)
//   bmm:  out(n, m, b) = epilogue(sum_k A(k, m, b) * B(n, k, b))    (a batch of those; with
//         batch_dims=2, out(n, m, b, b2) over two batch dimensions)
//
// (with b_k_major, B(k, n[, b]): an N x K row-major B, contiguous along K).
//
// With split_k > 1 the reduction's chunks are split into that many parts, each part's sums a
// block tile of the contraction's kernel (the part one more block dimension), and a second
// kernel adds the parts and computes the epilogue.
//
// The epilogue is fused into the kernel, computed in fp32 from the accumulators each thread
// holds, as a linear layer's: epilogue(p) = out_type(activation(p + bias(n)) + residual(n, m[, b])),
// each part optional (add_bias, activation, add_residual; by default out = p in fp32). bias and
// residual are of out_type. On tensor cores a 16-bit out is stored a lane's pair of adjacent
// columns at a time (4 bytes: alcop::schedule_tensor_core_tile), so its rows must start at 4-byte
// boundaries (min 0 along n, even row strides), as must the residual's and the bias.
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

#include "ContractionGenerator.h"
#include "alcop/Alcop.h"

#include <vector>

namespace alcop_generators {

/** The activation of the fused epilogue. GELU is BERT's and PyTorch's default, exact (erf). */
enum class Activation { None, ReLU, GELU };

inline Expr activate(Activation a, const Expr &v) {
    switch (a) {
    case Activation::ReLU:
        return Halide::max(v, 0.0f);
    case Activation::GELU:
        return 0.5f * v * (1.0f + Halide::erf(v * (float)M_SQRT1_2));
    case Activation::None:
        break;
    }
    return v;
}

/** The GEMM (Batched false) and batched matmul generators, as a base for a generator class
 * `Self` (Halide's Generator<Self> finds the GeneratorParams of Self's whole object). Self may
 * install the pass its own way by declaring enable_pipelines(options). */
template<typename Self, bool Batched>
class MatMulGenerator : public ContractionGenerator<Self> {
public:
    // The GeneratorParams of ContractionGenerator.h (type, the tiles, stages, register_stages,
    // auto_pipeline; warp tiles 64 x 64), and these:

    // B's stages when they differ from A's (0: the same as A's).
    GeneratorParam<int> stages_b{"stages_b", 0, 0, 16};
    // CUDA launch bounds: at least this many blocks per SM (alcop::min_blocks_per_sm; 0: none).
    GeneratorParam<int> min_blocks_per_sm{"min_blocks_per_sm", 0, 0, 32};
    // Shared memory a block may use, in bytes (alcop::Options::shared_memory_limit; 0: the
    // target's default, 48 KiB). More needs an app that links apps/common/CudaOptIn.
    GeneratorParam<int> shared_memory_limit{"shared_memory_limit", 0, 0, 1 << 30};
    // How copies are made (auto: cp.async on CUDA sm_80+, staged through registers elsewhere).
    GeneratorParam<alcop::CopyKind> copies{"copies",
                                           alcop::CopyKind::Auto,
                                           {{"auto", alcop::CopyKind::Auto},
                                            {"synchronous", alcop::CopyKind::Synchronous},
                                            {"staged", alcop::CopyKind::RegisterStaged},
                                            {"async", alcop::CopyKind::Async}}};

    // The fused epilogue (above): out's element type (f32, f16 or bf16), an input `bias` of N
    // values added to each row, the activation (none, relu, gelu), an input `residual` of out's
    // shape added last.
    GeneratorParam<Operands> out_type{"out_type", Operands::F32, operand_type_names()};
    GeneratorParam<bool> add_bias{"add_bias", false};
    GeneratorParam<Activation> activation{
        "activation",
        Activation::None,
        {{"none", Activation::None}, {"relu", Activation::ReLU}, {"gelu", Activation::GELU}}};
    GeneratorParam<bool> add_residual{"add_residual", false};
    // B given as B(k, n[, b]), contiguous along K (a linear layer's weight as PyTorch stores it,
    // [N][K]; attention's K in Q K^T): its shared tile is then K-major too (ldmatrix without
    // .trans on tensor cores).
    GeneratorParam<bool> b_k_major{"b_k_major", false};

    // bmm: its batch dimensions, 1 or 2 (e.g. attention's heads and sequences), all in one launch.
    GeneratorParam<int> batch_dims{"batch_dims", 1, 1, 2};

    // Split-K: the chunks of the reduction in this many parts, each part's sum a block tile of a
    // kernel of its own (one GPU block dimension more), which a second kernel adds up, with the
    // epilogue. For outputs of too few block tiles to fill the GPU and a long K (1: none).
    GeneratorParam<int> split_k{"split_k", 1, 1, 64};

    OperandInput A{"A"};  // typed by `type`, dimensioned by batch_dims (configure())
    OperandInput B{"B"};
    Halide::GeneratorOutput<Halide::Buffer<>> out{"out"};  // typed by out_type
    // With add_bias and add_residual (configure()).
    OperandInput *bias = nullptr, *residual = nullptr;

    MatMulGenerator() : ContractionGenerator<Self>(64) {
    }

    void configure() {
        this->set_operand_types(A, B);
        _halide_user_assert(Batched || batch_dims == 1) << "The gemm generator has no batch_dims (bmm has).\n";
        _halide_user_assert(batch_dims == 1 || batch_dims == 2)
            << "The bmm generator: batch_dims (" << (int)batch_dims << ") must be 1 or 2.\n";
        _halide_user_assert(split_k >= 1) << "The " << generator_name() << " generator: split_k (" << (int)split_k
                                          << ") must be at least 1 (1: the reduction in one part).\n";
        // Three dimensions fused into one block index (two batches and the part): CompactRegisters
        // does not find each thread's window of the accumulators there, which then go to memory.
        _halide_user_assert(split_k == 1 || batch_dims == 1)
            << "The bmm generator: split_k (" << (int)split_k << ") with batch_dims=2 is not supported: the "
            << "accumulators would not stay in registers. Use batch_dims=1 (fuse the batches in the inputs) or "
            << "split_k=1.\n";
        const int dims = Batched ? 2 + batch_dims : 2;
        A.set_dimensions(dims);
        B.set_dimensions(dims);
        out.set_dimensions(dims);
        const Halide::Type t = element_type(out_type);
        out.set_type(t);
        if (add_bias) bias = this->template add_input<Halide::Buffer<>>("bias", t, 1);
        if (add_residual) residual = this->template add_input<Halide::Buffer<>>("residual", t, dims);
    }

    void generate() {
        const ContractionShape shape = this->resolved_shape(stages_b);
        const int kt = shape.tile_k, bm = shape.block_m, bn = shape.block_n;
        const int vw = copy_vector_elements(generator_name(), this->type, this->vector_width, kt, bn);
        const Halide::Type t = element_type(this->type);
        Expr K = A.dim(0).extent(), M = A.dim(1).extent(), N = B.dim(b_k_major ? 1 : 0).extent();
        _halide_user_assert(this->get_target().has_gpu_feature())
            << "The " << generator_name() << " generator needs a GPU target (e.g. host-opencl or host-cuda).\n";
        if (this->tensor_cores()) {
            check_tensor_core_tiles(generator_name(), {bm, bn, this->warp_m, this->warp_n}, kt);
        } else {
            _halide_user_assert(bm % shape.thread_m == 0 && bn % shape.thread_n == 0)
                << "thread_m and thread_n must divide block_m and block_n.\n";
        }

        const std::vector<Var> batch = batch_vars();

        // The staged tiles: copies of A and B that read zeros outside the matrices, unclamped
        // where the copies become cp.async (guarded_index), their guards true where every
        // tile is whole (guard()).
        const bool async = this->promise_async_operands(copies, vw, A, B);
        const bool rows = this->unclamped_rows(async);
        std::vector<Expr> a_args{this->guarded_index(async, k, K), this->guarded_index(rows, m, M)};
        std::vector<Expr> b_args{this->guarded_index(async, n, N), this->guarded_index(rows, k, K)};
        if (b_k_major) b_args = {this->guarded_index(async, k, K), this->guarded_index(rows, n, N)};
        std::vector<Var> a_vars{k, m}, b_vars{n, k}, out_vars{x, y};
        for (Var v : batch) {
            a_args.push_back(v);
            b_args.push_back(v);
            a_vars.push_back(v);
            b_vars.push_back(v);
            out_vars.push_back(v);
        }
        // The chunks of the reduction, in split_k parts of `per_part` chunks: past K (the last
        // part's tail) the tiles read zeros, as the last chunk's tail does.
        // (per_part is ceil(chunks / split_k) written as one division: Halide's bounds of the
        // tiles then name one Expr for it, and a tile's place in its slots is a constant.)
        const Expr chunks = (K + kt - 1) / kt, per_part = (K + kt * split_k - 1) / (kt * split_k);
        // (One term on K: the simplifier folds the copies' guards in the branch it holds, where
        // K % kt == 0 && chunks % split_k == 0 would leave the second rewritten and unfolded.)
        whole_tiles = K % (kt * split_k) == 0 && M % bm == 0 && N % bn == 0;
        A_shared(a_vars) = select(this->guard(k < K && m < M, whole_tiles), A(a_args), Halide::cast(t, 0));
        B_shared(b_vars) = select(this->guard(k < K && n < N, whole_tiles), B(b_args), Halide::cast(t, 0));

        r = split_k > 1 ? RDom(0, kt, 0, per_part, 0, split_k, "r") : RDom(0, kt, 0, chunks, "r");
        Expr rk = split_k > 1 ? r.z * (per_part * kt) + r.y * kt + r.x : r.y * kt + r.x;
        std::vector<Expr> a_use{rk, y}, b_use{x, rk};
        for (Var v : batch) {
            a_use.push_back(v);
            b_use.push_back(v);
        }
        prod(out_vars) = 0.0f;
        // (For f32 the casts are no-ops: the same Expr.)
        prod(out_vars) += Halide::cast<float>(A_shared(a_use)) * Halide::cast<float>(B_shared(b_use));
        out(out_vars) = epilogue(prod(out_vars), out_vars);
        if (async) {
            out.dim(0).set_min(0);
        }
        if (this->tensor_cores() && out.type().bits() < 32) {
            // Each lane's pair of columns is one aligned 4-byte vector, in out, residual and bias.
            out.set_host_alignment(4);
            promise_even_rows(out);
            for (OperandInput *in : {residual, bias}) {
                if (!in) continue;
                in->set_host_alignment(4);
                promise_even_rows(*in);
            }
        }
    }

    /** out's value from the accumulator p at out_vars. */
    Expr epilogue(Expr p, const std::vector<Var> &out_vars) {
        check_output_type(generator_name(), this->get_target(), this->type, out_type);
        if (bias) p += to_float32((*bias)(out_vars[0]));
        p = activate(activation, p);
        if (residual) p += to_float32((*residual)(out_vars));
        return to_element_type(out_type, p);
    }

    void schedule() {
        const ContractionShape shape = this->resolved_shape(stages_b);
        const std::vector<Var> extra_blocks = batch_vars();
        const int b_stages = stages_b > 0 ? (int)stages_b : shape.stages;
        Func contraction = out;  // the Func whose kernel runs the contraction's block tiles
        if (split_k > 1) {
            // prod = the sum over the parts r.z of parts(x, y, ..., part), each part's own
            // reduction over its chunks: a contraction with `part` as one more batch dimension,
            // whose block tiles `partials` stores. out's kernel adds the parts, one thread an
            // element.
            Var part("part");
            Func parts = prod.update().rfactor(r.z, part);
            Func partials = parts.in(prod);
            partials.compute_root();
            std::vector<Var> blocks = extra_blocks;
            blocks.push_back(part);
            this->schedule_contraction_of(partials, parts, A_shared, B_shared, x, y, blocks, r.x, r.y, shape,
                                          b_stages, b_k_major);
            // 8 x 32 elements a block, a thread each: a warp reads 32 consecutive partials of a row.
            alcop::schedule_block_tile(out, x, y, 8, 32, {}, extra_blocks);
            Halide::Stage(out).gpu_threads(Var("x_i"), Var("y_i"));
            prod.compute_at(out, Var("x_i"));
            contraction = partials;
        } else {
            this->schedule_contraction_of(out, prod, A_shared, B_shared, x, y, extra_blocks, r.x, r.y, shape,
                                          b_stages, b_k_major);
        }
        if (min_blocks_per_sm > 0) {
            alcop::min_blocks_per_sm(contraction, min_blocks_per_sm);
        }
        this->specialize_whole_tiles(contraction, whole_tiles);
        alcop::Options options;
        options.copies = copies;
        options.shared_memory_limit = shared_memory_limit;
        this->install_pass(options);
    }

protected:
    /** A 16-bit buffer's rows start at 4-byte boundaries: min 0 along the columns, even row
     * (and batch) strides. */
    template<typename Buffer>
    static void promise_even_rows(Buffer &buffer) {
        buffer.dim(0).set_min(0);
        for (int d = 1; d < buffer.dimensions(); d++) {
            buffer.dim(d).set_stride((buffer.dim(d).stride() / 2) * 2);
        }
    }

    /** bmm's batch dimensions' Vars (none for gemm). */
    std::vector<Var> batch_vars() const {
        if (!Batched) return {};
        if (batch_dims == 1) return {b};
        return {b, b2};
    }

    static const char *generator_name() {
        return Batched ? "bmm" : "gemm";
    }

    Var k{"k"}, m{"m"}, n{"n"}, x{"x"}, y{"y"}, b{"b"}, b2{"b2"};
    Halide::Func A_shared{"A_shared"}, B_shared{"B_shared"}, prod{"prod"};
    Expr whole_tiles;  // K a multiple of tile_k (times split_k), M and N of the block tile
    RDom r;  // r.x: within a chunk (ki), r.y: the chunk (ko), the loop that is pipelined; r.z: the
             // part, with split_k
};

}  // namespace alcop_generators

#endif
