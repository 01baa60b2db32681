#ifndef ALCOP_CONTRACTION_SCHEDULE_H
#define ALCOP_CONTRACTION_SCHEDULE_H

// The GPU schedule shared by the contraction generators (gemm, bmm, conv2d):
//
//   out(x, y, ...) = prod(x, y, ...)
//   prod(x, y, ...) += a_shared(k, y, ...) * b_shared(x, k, ...)   over a reduction whose
//                      chunk loop `streaming` holds the shared tiles of one chunk.
//
// A block computes a block_m x block_n tile of out (y by x) with (block_m / thread_m) x
// (block_n / thread_n) threads, each a thread_m x thread_n register tile of prod. Each chunk
// stages a_shared and b_shared in shared memory, copied by all threads `vector_width`
// contiguous elements at a time along their first dimension, and both are pipelined by ALCOP
// across the chunks with `stages_a` and `stages_b` slots. With register fragments
// (register_stages > 0) a_shared is stored transposed (y innermost) and copied one element per
// thread, so that every fragment load is a 16-byte vector free of bank conflicts. With
// request_pipelines false the schedule is the same but asks for nothing (for
// alcop::auto_pipeline to choose).

#include "Halide.h"

#include "alcop/Alcop.h"

#include <vector>

namespace alcop_generators {

struct ContractionTiles {
    int block_m, block_n, thread_m, thread_n, vector_width;
};

inline void schedule_contraction(Halide::Func out, Halide::Func prod, Halide::Func a_shared, Halide::Func b_shared,
                                 Halide::Var x, Halide::Var y, const std::vector<Halide::Var> &extra_blocks,
                                 const std::vector<Halide::RVar> &within_chunk, Halide::RVar streaming,
                                 const std::vector<Halide::RVar> &outer_reduction, const ContractionTiles &t,
                                 int stages_a, int stages_b, int register_stages = 0, bool request_pipelines = true) {
    using namespace Halide;
    const int threads_x = t.block_n / t.thread_n, threads = threads_x * (t.block_m / t.thread_m);
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), tx("tx"), ty("ty"), xr("xr"), yr("yr");

    out.tile(x, y, xo, yo, xi, yi, t.block_n, t.block_m, TailStrategy::GuardWithIf)
        .tile(xi, yi, tx, ty, xr, yr, t.thread_n, t.thread_m, TailStrategy::GuardWithIf)
        .reorder(xr, yr, tx, ty, xo, yo)
        .gpu_threads(tx, ty)
        .unroll(xr)
        .unroll(yr);
    std::vector<VarOrRVar> blocks{xo, yo};
    blocks.insert(blocks.end(), extra_blocks.begin(), extra_blocks.end());
    if (blocks.size() == 2) {
        out.gpu_blocks(blocks[0], blocks[1]);
    } else {
        out.gpu_blocks(blocks[0], blocks[1], blocks[2]);
    }

    // The accumulators live in registers, one thread_m x thread_n tile per thread.
    prod.compute_at(out, xo)
        .store_in(MemoryType::Register)
        .bound_extent(x, t.block_n)
        .bound_extent(y, t.block_m)
        .tile(x, y, tx, ty, xr, yr, t.thread_n, t.thread_m)
        .reorder(xr, yr, tx, ty)
        .gpu_threads(tx, ty)
        .unroll(xr)
        .unroll(yr);
    std::vector<VarOrRVar> order{xr, yr};
    order.insert(order.end(), within_chunk.begin(), within_chunk.end());
    order.insert(order.end(), {tx, ty, streaming});
    order.insert(order.end(), outer_reduction.begin(), outer_reduction.end());
    Stage update = prod.update();
    update.tile(x, y, tx, ty, xr, yr, t.thread_n, t.thread_m).reorder(order).gpu_threads(tx, ty).unroll(xr).unroll(yr);
    if (register_stages <= 1) {
        for (const RVar &r : within_chunk) {
            update.unroll(r);
        }
    }
    if (register_stages > 0) {
        int operand = 0;
        for (Func f : {a_shared, b_shared}) {
            // One k step's fragment is contiguous along y in A's (transposed, below) tile and
            // along x in B's: 16-byte vectors, ld.shared.v4 (vectorized here, so that the
            // Stmt the bank-conflict check reads has the accesses the PTX has).
            Func frag = f.in(prod);
            const Var dense = frag.args()[operand++ == 0 ? 1 : 0];
            const int extent = operand == 1 ? t.thread_m : t.thread_n;
            const int width = extent % 4 == 0 ? 4 : extent % 2 == 0 ? 2 : 1;
            frag.compute_at(prod, within_chunk.front()).store_in(MemoryType::Register);
            Var dv("dv");
            if (width > 1) {
                frag.split(dense, dense, dv, width).vectorize(dv);
            }
            for (const Var &v : frag.args()) {
                frag.unroll(v);
            }
            if (request_pipelines) alcop::pipeline(frag, register_stages, alcop::Level::Register);
        }
    }

    // Each chunk's tiles are copied by all threads, vector_width contiguous elements each.
    const int stage_counts[] = {stages_a, stages_b};
    int operand = 0;
    for (Func f : {a_shared, b_shared}) {
        Var inner = f.args()[0], outer = f.args()[1];
        int width = t.vector_width;
        if (operand == 0 && register_stages > 0) {
            // A's tile is stored y-major (y innermost), so that a thread's thread_m values of
            // one k step are contiguous. Global A is k-major, so no vector is dense on both
            // sides: the copy is one element per thread, consecutive threads along y (dense,
            // conflict-free stores; 4-byte cp.async on sm_80).
            std::swap(inner, outer);
            width = 1;
            std::vector<Var> storage = f.args();
            std::swap(storage[0], storage[1]);
            f.reorder_storage(storage);
        }
        Var io("io"), ii("ii"), c("c"), co("co"), ci("ci"), fx("fx"), fy("fy");
        f.compute_at(prod, streaming)
            .store_in(MemoryType::GPUShared)
            .split(inner, io, ii, width)
            .vectorize(ii)
            .fuse(io, outer, c)
            .split(c, co, ci, threads, TailStrategy::GuardWithIf)
            .split(ci, fy, fx, threads_x)
            .reorder(fx, fy, co)
            .gpu_threads(fx, fy)
            .unroll(co);
        if (request_pipelines) alcop::pipeline(f, stage_counts[operand]);
        operand++;
    }
}

}  // namespace alcop_generators

#endif
