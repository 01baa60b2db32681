// Four GEMMs, out(x, y) = sum_k A(k, y) * B(x, k), and a softmax over rows, as a user of
// Halide-ALCOP writes them.

#include "Halide.h"
#include "alcop/Alcop.h"

namespace {

using namespace Halide;

// out(x, y) = sum_k A(k, y) * B(x, k) over chunks of tile_k of the reduction (r.y the chunk, r.x
// within it), each chunk's tiles of A and B staged in Funcs of their own. The operands read
// zeros past their edges, so that every chunk's tile has one size and place, which is what a
// pipeline needs. Self schedules it.
template<typename Self, int tile_k>
class StagedGemm : public Generator<Self> {
public:
    GeneratorInput<Buffer<float>> A{"A", 2};
    GeneratorInput<Buffer<float>> B{"B", 2};
    GeneratorOutput<Buffer<float>> out{"out", 2};

    void generate() {
        Expr K = A.dim(0).extent(), M = A.dim(1).extent(), N = B.dim(0).extent();
        A_shared(k, y) = select(k < K && y < M, A(clamp(k, 0, K - 1), clamp(y, 0, M - 1)), 0.0f);
        B_shared(x, k) = select(x < N && k < K, B(clamp(x, 0, N - 1), clamp(k, 0, K - 1)), 0.0f);
        r = RDom(0, tile_k, 0, (K + tile_k - 1) / tile_k, "r");
        prod(x, y) = 0.0f;
        prod(x, y) += A_shared(r.y * tile_k + r.x, y) * B_shared(x, r.y * tile_k + r.x);
        out(x, y) = prod(x, y);
    }

protected:
    Var x{"x"}, y{"y"}, k{"k"};
    alcop::Func A_shared{"A_shared"}, B_shared{"B_shared"}, prod{"prod"};
    RDom r;
};

// Scheduled by hand: a 16 x 16 block of threads computes a 16 x 16 tile of out, one element per
// thread, over chunks of 16 of the reduction; each chunk's tiles of A and B are staged in shared
// memory, and ALCOP pipelines them 3 deep, so that the copies of chunk ko + 2 overlap the
// compute of chunk ko.
class PipelinedGemm : public StagedGemm<PipelinedGemm, 16> {
public:
    void schedule() {
        Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
        out.gpu_tile(x, y, xo, yo, xi, yi, tile, tile, TailStrategy::GuardWithIf);
        // One tile size for every block, edges included, so that the staged tiles have one too.
        prod.compute_at(out, xo).bound_extent(x, tile).bound_extent(y, tile).gpu_threads(x, y);
        prod.update().reorder(r.x, x, y, r.y).gpu_threads(x, y).unroll(r.x);
        for (alcop::Func f : {A_shared, B_shared}) {
            f.compute_at(prod, r.y).store_in(MemoryType::GPUShared).gpu_threads(f.args()[0], f.args()[1]);
            f.pipeline(3);
        }
        alcop::enable(get_pipeline(), get_target());
    }

private:
    static constexpr int tile = 16;
};

// The same GEMM with the schedule helpers the project's generators and autoscheduler use
// (alcop/Directive.h): a 64 x 64 tile per block (alcop::schedule_block_tile, its accumulators in
// registers) of 16 x 16 threads, each thread a 4 x 4 register tile (alcop::schedule_thread_tile),
// the chunks' tiles (of 8) copied by all 256 threads in vectors of 4 floats
// (alcop::schedule_staged_copy) and pipelined 3 deep.
class TiledGemm : public StagedGemm<TiledGemm, 8> {
public:
    void schedule() {
        alcop::schedule_block_tile(out, x, y, block, block);  // block loops x_o, y_o; x_i, y_i inside
        alcop::schedule_thread_tile(out, Var("x_i"), Var("y_i"), thread, thread, {}, {}, {},
                                    TailStrategy::GuardWithIf);
        alcop::store_block_accumulators(prod, out, Var("x_o"), {{x, block}, {y, block}});
        alcop::schedule_thread_tile(prod, x, y, thread, thread);
        alcop::schedule_thread_tile(prod.update(), x, y, thread, thread, {r.x}, {r.y});
        prod.update().unroll(r.x);
        const int threads_x = block / thread, threads = threads_x * threads_x;
        A_shared.compute_at(prod, r.y).store_in(MemoryType::GPUShared);
        alcop::schedule_staged_copy(A_shared, {k, y}, 4, threads_x, threads);
        B_shared.compute_at(prod, r.y).store_in(MemoryType::GPUShared);
        alcop::schedule_staged_copy(B_shared, {x, k}, 4, threads_x, threads);
        A_shared.pipeline(3);
        B_shared.pipeline(3);
        alcop::enable(get_pipeline(), get_target());
    }

private:
    static constexpr int block = 64, thread = 4;
};

// Written plainly, with estimates: the Alcop autoscheduler (AUTOSCHEDULER HalideAlcop::Alcop)
// tiles it, stages its operands in shared memory and pipelines them.
class PlainGemm : public Generator<PlainGemm> {
public:
    Input<Buffer<float>> A{"A", 2};
    Input<Buffer<float>> B{"B", 2};
    Output<Buffer<float>> out{"out", 2};

    void generate() {
        Var x("x"), y("y");
        RDom r(0, A.dim(0).extent(), "r");
        Func prod("prod");
        prod(x, y) = 0.0f;
        prod(x, y) += A(r, y) * B(x, r);
        out(x, y) = prod(x, y);
        A.set_estimates({{0, 256}, {0, 256}});
        B.set_estimates({{0, 256}, {0, 256}});
        out.set_estimates({{0, 256}, {0, 256}});
    }
};

// The same in fp16 with fp32 accumulation, its sizes all runtime ones: for CUDA sm_80 the
// autoscheduler puts it on tensor cores wherever its k tile divides K. The operands promise what
// 16-byte cp.async copies need (the plugin's warning says what, where they do not).
class PlainGemmF16 : public Generator<PlainGemmF16> {
public:
    Input<Buffer<float16_t>> A{"A", 2};
    Input<Buffer<float16_t>> B{"B", 2};
    Output<Buffer<float>> out{"out", 2};

    void generate() {
        Var x("x"), y("y");
        RDom r(0, A.dim(0).extent(), "r");
        Func prod("prod");
        prod(x, y) = 0.0f;
        prod(x, y) += cast<float>(A(r, y)) * cast<float>(B(x, r));
        out(x, y) = prod(x, y);
        for (Input<Buffer<float16_t>> *in : {&A, &B}) {
            in->set_host_alignment(16);
            in->dim(0).set_min(0);
            in->dim(1).set_stride((in->dim(1).stride() / 8) * 8);
        }
        out.dim(0).set_min(0);
        A.set_estimates({{0, 1024}, {0, 1024}});
        B.set_estimates({{0, 1024}, {0, 1024}});
        out.set_estimates({{0, 1024}, {0, 1024}});
    }
};

// An fp16 GEMM on tensor cores scheduled by hand, its sizes all runtime ones: one reduction
// over [0, K) split into chunks of 32 with a guarded last chunk (any K), 64 x 64 blocks of four
// 32 x 32 warps (alcop::schedule_tensor_core_tile), the chunks' tiles of constant extents read
// at clamped coordinates in 16-byte vectors by all 128 threads, pipelined 3 deep. The pass
// zero-fills the last chunk's tiles past K, so that every chunk is mma.sync, and A's vectors
// along K, clamped to K, become cp.async whose src-size stops at K (the inputs promise 16-byte
// aligned rows); B's along N stay gathers (docs/usage.md, "Tensor cores"). CUDA sm_80 only:
// alcop_inspect reports it.
class OwnTensorCoreGemm : public Generator<OwnTensorCoreGemm> {
public:
    Input<Buffer<float16_t>> A{"A", 2};
    Input<Buffer<float16_t>> B{"B", 2};
    Output<Buffer<float>> out{"out", 2};

    void generate() {
        Expr K = A.dim(0).extent(), M = A.dim(1).extent(), N = B.dim(0).extent();
        A_sh(k, y) = A(clamp(k, 0, K - 1), clamp(y, 0, M - 1));
        B_sh(x, k) = B(clamp(x, 0, N - 1), clamp(k, 0, K - 1));
        r = RDom(0, K, "r");
        prod(x, y) = 0.0f;
        prod(x, y) += cast<float>(A_sh(r, y)) * cast<float>(B_sh(x, r));
        out(x, y) = prod(x, y);
    }

    void schedule() {
        // What makes a 16-byte vector of A or B one aligned address (cp.async).
        for (Input<Buffer<float16_t>> *in : {&A, &B}) {
            in->set_host_alignment(16);
            in->dim(0).set_min(0);
            in->dim(1).set_stride((in->dim(1).stride() / 8) * 8);
        }
        Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
        RVar ko("ko"), ki("ki");
        out.tile(x, y, xo, yo, xi, yi, block, block, TailStrategy::GuardWithIf).gpu_blocks(xo, yo);
        prod.compute_at(out, xo).store_in(MemoryType::Register).bound_extent(x, block).bound_extent(y, block);
        prod.update().split(r, ko, ki, tile_k, TailStrategy::GuardWithIf);
        alcop::schedule_tensor_core_tile(out, xi, yi, warp, warp);
        alcop::schedule_tensor_core_tile(prod, x, y, warp, warp);
        alcop::schedule_tensor_core_tile(prod.update(), x, y, warp, warp, {ki}, {ko});
        const int threads = (block / warp) * (block / warp) * 32;
        A_sh.compute_at(prod, ko).store_in(MemoryType::GPUShared).bound_extent(k, tile_k).bound_extent(y, block);
        alcop::schedule_staged_copy(A_sh, {k, y}, 8, 32, threads);
        B_sh.compute_at(prod, ko).store_in(MemoryType::GPUShared).bound_extent(x, block).bound_extent(k, tile_k);
        alcop::schedule_staged_copy(B_sh, {x, k}, 8, 32, threads);
        A_sh.pipeline(3);
        B_sh.pipeline(3);
        prod.tensor_cores(warp, warp);
        alcop::enable(get_pipeline(), get_target());
    }

private:
    static constexpr int block = 64, warp = 32, tile_k = 32;
    Var x{"x"}, y{"y"}, k{"k"};
    RDom r;
    alcop::Func A_sh{"A_sh"}, B_sh{"B_sh"}, prod{"prod"};
};

// Softmax over each row, written plainly: the Alcop autoscheduler recognizes its row reductions
// and gives each row a warp's lanes.
class PlainSoftmax : public Generator<PlainSoftmax> {
public:
    Input<Buffer<float>> in{"in", 2};
    Output<Buffer<float>> out{"out", 2};

    void generate() {
        Var x("x"), y("y");
        RDom r(0, in.dim(0).extent(), "r");
        Func e("e");
        e(x, y) = exp(in(x, y) - maximum(in(r, y)));
        out(x, y) = e(x, y) / sum(e(r, y));
        in.set_estimates({{0, 128}, {0, 256}});
        out.set_estimates({{0, 128}, {0, 256}});
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(PipelinedGemm, pipelined_gemm)
HALIDE_REGISTER_GENERATOR(TiledGemm, tiled_gemm)
HALIDE_REGISTER_GENERATOR(PlainGemm, plain_gemm)
HALIDE_REGISTER_GENERATOR(PlainGemmF16, plain_gemm_f16)
HALIDE_REGISTER_GENERATOR(PlainSoftmax, plain_softmax)
HALIDE_REGISTER_GENERATOR(OwnTensorCoreGemm, own_tc_gemm)
