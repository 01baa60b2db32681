#ifndef ALCOP_TEST_TENSOR_CORE_GEMM_H
#define ALCOP_TEST_TENSOR_CORE_GEMM_H

// The user's fp16/bf16 GEMM of the tensor-core tests: out(n, m) = sum_k A(k, m) * B(n, k) with
// an fp32 accumulator prod that asks for tensor cores, scheduled with
// alcop::schedule_tensor_core_tile, and variants that break one rule each.

#include "Halide.h"

#include "alcop/Alcop.h"
#include "alcop/Directive.h"

#include <string>
#include <vector>

namespace tc_test {

using namespace Halide;

/** A GEMM whose accumulator prod asks for tensor cores. */
struct Gemm {
    Type a_type = Float(16), b_type = Float(16);
    int block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, tile_k = 32;
    bool a_m_major = false;   // A's shared tile stored with m innermost
    bool b_k_major = false;   // B's shared tile stored with k innermost
    bool a_strided = false;   // the inner product reads A_sh(2 k, y)
    bool a_gapped = false;    // the inner product reads A_sh(k, y + y / 16): a gap after every 16 rows
    bool a_unstaged = false;  // the inner product reads the input A itself
    bool scaled = false;      // P += 2 * f32(A) * f32(B)
    bool f64_accumulator = false;
    bool guarded = false;  // the copies read zeros outside A and B: any M, N and K (see define())
    // With guarded: K is one reduction over [0, K) split into chunks of tile_k with a guarded
    // last chunk (a K the tile does not divide), the copies clamp k instead of zeroing past K,
    // and the tiles are bounded to constant extents (bound_extent), so that the pass zero-fills
    // the last chunk's tail (rewrite/ZeroFilledTails.h). bound_tiles = false leaves them unbounded.
    bool k_tail = false;
    bool bound_tiles = true;
    int k_bound = 0;             // with k_tail: the tiles' bound extent along k (0: tile_k)
    // With guarded and k_tail: the copies read every index clamped into the inputs, that of
    // their vectors too (a gather), as apps/consumer's own_tc_gemm does, and zero nothing
    // themselves (outside M and N the tiles repeat the last row, which only outputs past M and
    // N read; past K the pass's zero fill).
    bool clamp_vectors = false;
    bool unroll_copies = false;  // the rounds of copies unrolled by Halide, not left to LLVM's unroller
    bool second_update = false;  // P += f32(A) * f32(B) twice
    bool unroll_k = false;       // the reduction inside a chunk unrolled (no k loop for the mma steps)
    enum class Threads { TensorCore, Simt, HalfWarps, OneThread } threads = Threads::TensorCore;
    std::string target = "host-cuda-cuda_capability_80";

    int stages = 1;           // alcop::pipeline of A_sh and B_sh
    int register_stages = 1;  // alcop::pipeline(prod, register_stages, Level::Register): the fragments
    int vector = 1;           // elements per copy (8: 16 bytes, what cp.async copies)

    /** The pipeline (alcop::enable not yet called) and its arguments; may throw CompileError. */
    Pipeline build(std::vector<Argument> *args) const {
        ImageParam A(a_type, 2, "A"), B(b_type, 2, "B");
        *args = {A, B};
        return Pipeline(define(A, B));
    }

    /** The output Func, defined and scheduled, on inputs A (a_type) and B (b_type). */
    Func define(ImageParam A, ImageParam B) const {
        Var k("k"), m("m"), n("n"), x("x"), y("y"), xo("xo"), yo("yo"), xi("xi"), yi("yi");
        Func A_sh("A_sh"), B_sh("B_sh"), prod("prod"), out("out");
        Expr K = A.dim(0).extent(), M = A.dim(1).extent(), N = B.dim(0).extent();
        if (guarded) {
            // The index along which a copy is a vector is not clamped (a clamped ramp under the
            // select would make Halide partition the copy loop, whose tail the pipeline cannot
            // place): the vector may then read past the input's extent, which the caller's
            // allocation must cover (whole block and K tiles), and the select zeroes what it read
            // there.
            auto index = [&](const Expr &i, const Expr &extent, bool vectorized) {
                return vector > 1 && vectorized ? unsafe_promise_clamped(i, 0, extent - 1) : clamp(i, 0, extent - 1);
            };
            // With k_tail nothing zeroes past K here: the pass does.
            Expr inside_k = k_tail ? Internal::const_true() : k < K;
            if (clamp_vectors) {
                A_sh(k, m) = A(clamp(k, 0, K - 1), clamp(m, 0, M - 1));
                B_sh(n, k) = B(clamp(n, 0, N - 1), clamp(k, 0, K - 1));
            } else {
                A_sh(k, m) =
                    select(inside_k && m < M, A(index(k, K, !a_m_major), index(m, M, a_m_major)), cast(a_type, 0));
                B_sh(n, k) =
                    select(inside_k && n < N, B(index(n, N, !b_k_major), index(k, K, b_k_major)), cast(b_type, 0));
            }
        } else {
            A_sh(k, m) = A(k, m);
            B_sh(n, k) = B(n, k);
        }
        RDom r(0, tile_k, 0, guarded ? (K + tile_k - 1) / tile_k : K / tile_k, "r");
        Expr rk = r.y * tile_k + r.x;
        RVar within_chunk = r.x, chunk = r.y;
        if (k_tail) {
            RDom rt(0, K, "rt");
            r = rt;
            rk = rt.x;
            within_chunk = RVar("rt_ki");
            chunk = RVar("rt_ko");
        }
        const Type acc = f64_accumulator ? Float(64) : Float(32);
        Expr a = a_unstaged ? A(rk, y) : A_sh(a_strided ? 2 * rk : rk, a_gapped ? y + y / 16 : y);
        prod(x, y) = cast(acc, 0);
        if (scaled) {
            prod(x, y) += cast(acc, a) * cast(acc, B_sh(x, rk)) * cast(acc, 2);
        } else {
            prod(x, y) += cast(acc, a) * cast(acc, B_sh(x, rk));
        }
        if (second_update) prod(x, y) += cast(acc, a) * cast(acc, B_sh(x, rk));
        out(x, y) = prod(x, y);
        if (k_tail) prod.update().split(r.x, chunk, within_chunk, tile_k, TailStrategy::GuardWithIf);

        out.tile(x, y, xo, yo, xi, yi, block_n, block_m, TailStrategy::GuardWithIf).gpu_blocks(xo, yo);
        prod.compute_at(out, xo).store_in(MemoryType::Register).bound_extent(x, block_n).bound_extent(y, block_m);
        int threads_x = 32, threads_y = block_m / warp_m * (block_n / warp_n);
        if (threads == Threads::TensorCore) {
            alcop::schedule_tensor_core_tile(out, xi, yi, warp_m, warp_n);
            alcop::schedule_tensor_core_tile(prod, x, y, warp_m, warp_n);
            alcop::schedule_tensor_core_tile(prod.update(), x, y, warp_m, warp_n, {within_chunk}, {chunk});
            if (unroll_k) prod.update().unroll(within_chunk);
        } else if (threads == Threads::OneThread) {
            // No gpu_threads in the kernel: one thread of each block copies and computes its
            // tile. (Where any Func of a kernel has threads, Halide puts the others inside the
            // same thread loops.)
            prod.update().reorder(x, y, within_chunk, chunk);
        } else {
            // The SIMT register tiling of the fp32 generators: thread (tx, ty) holds a
            // contiguous tm x tn tile. Threads::Simt: 32 x 2 threads (whole warps, wrong
            // lanes); Threads::HalfWarps: 16 x 4.
            const int tn = threads == Threads::Simt ? block_n / 32 : block_n / 16;
            const int tm = threads == Threads::Simt ? block_m / 2 : block_m / 4;
            threads_x = block_n / tn;
            threads_y = block_m / tm;
            Var tx("tx"), ty("ty"), xr("xr"), yr("yr");
            out.tile(xi, yi, tx, ty, xr, yr, tn, tm).reorder(xr, yr, tx, ty, xo, yo).gpu_threads(tx, ty);
            prod.tile(x, y, tx, ty, xr, yr, tn, tm).reorder(xr, yr, tx, ty).gpu_threads(tx, ty).unroll(xr).unroll(yr);
            prod.update()
                .tile(x, y, tx, ty, xr, yr, tn, tm)
                .reorder(xr, yr, within_chunk, tx, ty, chunk)
                .gpu_threads(tx, ty)
                .unroll(xr)
                .unroll(yr);
        }
        // The copies: `vector` contiguous elements (along the storage's innermost dimension)
        // per thread and step, all threads.
        for (Func f : {A_sh, B_sh}) {
            const bool swapped = (f.name() == A_sh.name() && a_m_major) || (f.name() == B_sh.name() && b_k_major);
            Var inner = f.args()[swapped ? 1 : 0], outer = f.args()[swapped ? 0 : 1];
            Var c("c"), co("co"), ci("ci"), fx("fx"), fy("fy"), io("io"), ii("ii");
            f.compute_at(prod, chunk).store_in(MemoryType::GPUShared);
            if (k_tail && bound_tiles) {
                const int outer_extent = f.name() == A_sh.name() ? block_m : block_n;
                f.bound_extent(k, k_bound > 0 ? k_bound : tile_k)
                    .bound_extent(f.name() == A_sh.name() ? m : n, outer_extent);
            }
            if (vector > 1) {
                f.split(inner, io, ii, vector).vectorize(ii);
                inner = io;
            }
            if (threads == Threads::OneThread) continue;
            f.fuse(inner, outer, c)
                .split(c, co, ci, threads_x * threads_y, TailStrategy::GuardWithIf)
                .split(ci, fy, fx, threads_x)
                .reorder(fx, fy, co)
                .gpu_threads(fx, fy);
            if (unroll_copies) f.unroll(co);
        }
        if (vector > 1) {
            // What makes each copy one aligned 16-byte vector (cp.async): zero-based rows whose
            // strides are multiples of the vector, in 16-byte aligned allocations.
            for (ImageParam *in : {&A, &B}) {
                in->set_host_alignment(16);
                in->dim(0).set_min(0);
                in->dim(1).set_stride((in->dim(1).stride() / vector) * vector);
            }
            // Block tiles start at whole vectors of B (and of an M-major A).
            out.output_buffer().dim(0).set_min(0);
            out.output_buffer().dim(1).set_min(0);
        }
        if (a_m_major) A_sh.reorder_storage(m, k);
        if (b_k_major) B_sh.reorder_storage(k, n);
        alcop::tensor_cores(prod, warp_m, warp_n);

        if (stages > 1) {
            alcop::pipeline(A_sh, stages);
            alcop::pipeline(B_sh, stages);
        }
        if (register_stages > 1) alcop::pipeline(prod, register_stages, alcop::Level::Register);
        return out;
    }
};

}  // namespace tc_test

#endif
