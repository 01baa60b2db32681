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
//
// schedule_tensor_core_contraction is the same contraction on tensor cores (fp16 or bf16
// operands, fp32 prod): the same block tiles and staged, pipelined copies, but each warp
// computes a warp_m x warp_n tile of prod in the layout of mma.sync's accumulators
// (alcop::schedule_tensor_core_tile), and prod asks for tensor cores (alcop::tensor_cores).

#include "Halide.h"

#include "alcop/Alcop.h"

#include <map>
#include <string>
#include <vector>

namespace alcop_generators {

struct ContractionTiles {
    int block_m, block_n, thread_m, thread_n, vector_width;
};

/** out in block_m x block_n tiles on GPU blocks, `extra_blocks` (batch dimensions) fused into
 * a third (alcop::schedule_block_tile), and prod's accumulators of one block tile in registers,
 * computed per block (alcop::store_block_accumulators): the same calls the autoscheduler's
 * steps make. One batch element per block: with two batch dimensions fused into one block
 * index, Halide cannot see that by itself. Returns the block tile's loops of x and y, which
 * the threads are laid out over. */
inline std::pair<Halide::Var, Halide::Var> tile_blocks(Halide::Func out, Halide::Func prod, Halide::Var x,
                                                       Halide::Var y, int block_m, int block_n,
                                                       const std::vector<Halide::Var> &extra_blocks) {
    std::vector<std::pair<Halide::Var, int>> tile{{x, block_n}, {y, block_m}};
    for (const Halide::Var &b : extra_blocks) tile.emplace_back(b, 1);
    alcop::schedule_block_tile(out, x, y, block_m, block_n, {}, extra_blocks);
    alcop::store_block_accumulators(prod, out, Halide::Var(x.name() + "_o"), tile);
    return {Halide::Var(x.name() + "_i"), Halide::Var(y.name() + "_i")};
}

/** The shared tiles of one chunk (computed at prod's `streaming` loop), copied by all
 * `threads` threads (threads_x of them along the GPU's thread x) `width` contiguous elements
 * at a time along their first dimension (alcop::schedule_staged_copy, which the
 * autoscheduler's copies use too), and pipelined with stages_a and stages_b slots
 * (when request_pipelines). With a_transposed, a_shared is stored with its second dimension
 * innermost and copied one element at a time along it; with b_k_major, b_shared(n, k) is
 * stored and copied along k, as the global B it copies is contiguous (whole vectors). */
inline void schedule_staged_copies(Halide::Func prod, Halide::RVar streaming, Halide::Func a_shared,
                                   Halide::Func b_shared, int threads_x, int threads, int width, bool a_transposed,
                                   bool b_k_major, int stages_a, int stages_b, bool request_pipelines) {
    using namespace Halide;
    const int stage_counts[] = {stages_a, stages_b};
    int operand = 0;
    for (Func f : {a_shared, b_shared}) {
        Var inner = f.args()[0], outer = f.args()[1];
        int w = width;
        if ((operand == 0 && a_transposed) || (operand == 1 && b_k_major)) {
            std::swap(inner, outer);
            if (operand == 0) w = 1;
            std::vector<Var> storage = f.args();
            std::swap(storage[0], storage[1]);
            f.reorder_storage(storage);
        }
        f.compute_at(prod, streaming).store_in(MemoryType::GPUShared);
        alcop::schedule_staged_copy(f, {inner, outer}, w, threads_x, threads);
        if (request_pipelines) alcop::pipeline(f, stage_counts[operand]);
        operand++;
    }
}

inline void schedule_contraction(Halide::Func out, Halide::Func prod, Halide::Func a_shared, Halide::Func b_shared,
                                 Halide::Var x, Halide::Var y, const std::vector<Halide::Var> &extra_blocks,
                                 const std::vector<Halide::RVar> &within_chunk, Halide::RVar streaming,
                                 const ContractionTiles &t,
                                 int stages_a, int stages_b, int register_stages = 0, bool request_pipelines = true,
                                 bool b_k_major = false) {
    using namespace Halide;
    const int threads_x = t.block_n / t.thread_n, threads = threads_x * (t.block_m / t.thread_m);

    // The accumulators live in registers, one thread_m x thread_n tile per thread.
    const auto [xi, yi] = tile_blocks(out, prod, x, y, t.block_m, t.block_n, extra_blocks);
    alcop::schedule_thread_tile(out, xi, yi, t.thread_m, t.thread_n, {}, {}, {}, TailStrategy::GuardWithIf);
    alcop::schedule_thread_tile(prod, x, y, t.thread_m, t.thread_n);
    Stage update = prod.update();
    alcop::schedule_thread_tile(update, x, y, t.thread_m, t.thread_n, within_chunk, {streaming});
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
            // Stmt the bank-conflict check reads has the accesses the PTX has), as the
            // autoscheduler's fragments (alcop::schedule_register_fragment).
            Func frag = f.in(prod);
            const Var dense = frag.args()[operand++ == 0 ? 1 : 0];
            frag.compute_at(prod, within_chunk.front());
            alcop::schedule_register_fragment(frag, dense, operand == 1 ? t.thread_m : t.thread_n);
            if (request_pipelines) alcop::pipeline(frag, register_stages, alcop::Level::Register);
        }
    }

    // Each chunk's tiles are copied by all threads, vector_width contiguous elements each;
    // with register fragments A's tile is stored y-major (y innermost), so that a thread's
    // thread_m values of one k step are contiguous. Global A is k-major, so no vector is dense
    // on both sides: that copy is one element per thread, consecutive threads along y (dense,
    // conflict-free stores; 4-byte cp.async on sm_80).
    const bool a_transposed = register_stages > 0;
    schedule_staged_copies(prod, streaming, a_shared, b_shared, threads_x, threads, t.vector_width, a_transposed,
                           b_k_major, stages_a, stages_b, request_pipelines);
}

struct TensorCoreTiles {
    int block_m, block_n, warp_m, warp_n;
};

/** The element type of a contraction's operands (the `type` GeneratorParam of gemm, bmm and
 * conv2d): fp32 on the SIMT schedule, fp16 or bf16 on tensor cores. The output and the
 * accumulation are fp32 in each case. */
enum class Operands { F32, F16, BF16 };

inline const std::map<std::string, Operands> &operand_type_names() {
    static const std::map<std::string, Operands> names{
        {"f32", Operands::F32}, {"f16", Operands::F16}, {"bf16", Operands::BF16}};
    return names;
}

inline Halide::Type element_type(Operands t) {
    return t == Operands::F32 ? Halide::Float(32) : t == Operands::F16 ? Halide::Float(16) : Halide::BFloat(16);
}

/** The block tile, k tile, stages and thread tile of a generator: its GeneratorParams' values,
 * or where one is 0 the default of the operand type's schedule. f32 under Halide 14's runtime
 * limits (64 registers a thread): 64 x 64 blocks of 4 x 4 register tiles, k tile 8,
 * unpipelined, no register fragments. f32 under the opt-in (`optin`: 255 registers, 227 KiB),
 * CUTLASS's SIMT configuration: 128 x 128 blocks of 8 x 8 register tiles, k tile 16, 4 shared
 * stages and 2 register stages where both tiles are pipelined (1 elsewhere): 0.29 instructions
 * beside each FFMA in its main loop, 123 registers (two blocks an SM), where the 4 x 4 tiles
 * spend 0.56 or more (docs/mainloop.md). f16 and bf16, chosen for an H200 (and an A100): 128 x
 * 128 blocks (of four 64 x 64 warp tiles: 128 fp32 accumulators a thread), k tile 32 (two
 * mma.sync k steps), 3 shared stages of 16 KB, which fit the 48 KB a block gets without the
 * shared-memory opt-in, and 2 register stages of the mma fragments (ldmatrix one k step ahead)
 * where they apply: both tiles pipelined (the fragments prefetch across their chunks) and an
 * even number of k steps a chunk (each register slot serves whole pairs); elsewhere none. */
struct ContractionShape {
    int block_m, block_n, tile_k, stages, register_stages, thread_m, thread_n;
};

inline ContractionShape with_defaults(Operands type, bool optin, int block_m, int block_n, int tile_k, int stages,
                                      int stages_b, int register_stages, int thread_m, int thread_n) {
    const bool tc = type != Operands::F32, wide = tc || optin;
    auto pick = [](int value, int fallback) { return value > 0 ? value : fallback; };
    const int s = pick(stages, tc ? 3 : optin ? 4 : 1), sb = pick(stages_b, s);
    const int kt = pick(tile_k, tc ? 32 : optin ? 16 : 8), t = optin ? 8 : 4;
    const bool both_pipelined = s > 1 && sb > 1;
    const int r = tc ? (both_pipelined && (kt / 16) % 2 == 0 ? 2 : 0) : optin ? (both_pipelined ? 2 : 1) : 0;
    return {pick(block_m, wide ? 128 : 64),
            pick(block_n, wide ? 128 : 64),
            kt,
            s,
            pick(register_stages, r),
            pick(thread_m, t),
            pick(thread_n, t)};
}

// Conversions between bf16 and fp32 in integer arithmetic, for the generators whose pipelines
// the pass does not lower (the row reductions): Halide 14's PTX backend loads a bf16 it casts to
// fp32 as the 16-bit integer in an fp32 register (ld.global.u16 %f), which ptxas rejects, and
// cannot round fp32 to bf16 (LLVM 14's NVPTX has no bf16 rounding: alcop::round_to_bfloat16).

/** `v` (f32, f16 or bf16) as an fp32, exactly. */
inline Halide::Expr to_float32(const Halide::Expr &v) {
    if (!v.type().is_bfloat()) return Halide::cast(Halide::Float(32, v.type().lanes()), v);
    const int lanes = v.type().lanes();
    Halide::Expr bits = Halide::cast(Halide::UInt(32, lanes), Halide::reinterpret(Halide::UInt(16, lanes), v));
    return Halide::reinterpret(Halide::Float(32, lanes), bits << 16);
}

/** `v` (fp32) as a value of `type`, rounded to nearest even. */
inline Halide::Expr to_element_type(Operands type, const Halide::Expr &v) {
    return type == Operands::BF16 ? alcop::round_to_bfloat16(v) : Halide::cast(element_type(type), v);
}

/** Checks a 16-bit element type a kernel loads or stores (the GeneratorParam `param`) against
 * the target: OpenCL has fp16 only with cl_khr_fp16 and no bf16 at all. */
inline void check_opencl_element_type(const std::string &generator, const Halide::Target &target,
                                      const std::string &param, Operands t) {
    if (!target.has_feature(Halide::Target::OpenCL)) return;
    _halide_user_assert(t != Operands::BF16) << "The " << generator << " generator: " << param
                                             << "=bf16 on OpenCL: OpenCL has no bf16 type; use f16 (with the "
                                             << "target feature cl_half) or f32.\n";
    _halide_user_assert(t != Operands::F16 || target.has_feature(Halide::Target::CLHalf))
        << "The " << generator << " generator: " << param << "=f16 on OpenCL needs the device's cl_khr_fp16 (the "
        << "target feature cl_half).\n";
}

/** Checks a contraction's output type (the `out_type` GeneratorParam) against the target: the
 * SIMT kernels (f32 operands) on OpenCL (the tensor-core kernels run on CUDA only). */
inline void check_output_type(const std::string &generator, const Halide::Target &target, Operands type,
                              Operands out_type) {
    if (type == Operands::F32) check_opencl_element_type(generator, target, "out_type", out_type);
}

/** Promises what a whole vector of `vector` elements of `b` needs to be aligned: a 16-byte
 * aligned allocation, rows from element 0, and row strides a multiple of the vector. */
template<typename Buffer>
void promise_vectors(Buffer &b, int vector) {
    b.set_host_alignment(16);
    b.dim(0).set_min(0);
    for (int d = 1; d < b.dimensions(); d++) {
        b.dim(d).set_stride((b.dim(d).stride() / vector) * vector);
    }
}

/** The bytes of one copy of a tensor-core operand tile: what cp.async and an ldmatrix row move. */
constexpr int tensor_core_copy_bytes = 16;

/** Elements per copy vector: `vector_width` for f32, 16 bytes for f16 and bf16; a user error
 * unless it divides tile_k and block_n (the copies' dense dimensions). */
inline int copy_vector_elements(const std::string &generator, Operands type, int vector_width, int tile_k,
                                int block_n) {
    const int v = type == Operands::F32 ? vector_width : tensor_core_copy_bytes / element_type(type).bytes();
    _halide_user_assert(tile_k % v == 0 && block_n % v == 0)
        << "The " << generator << " generator: "
        << (type == Operands::F32 ? "vector_width (" + std::to_string(v) + ")" :
                                    "the 16-byte copies of f16 and bf16 tiles (8 elements)")
        << " must divide tile_k (" << tile_k << ") and block_n (" << block_n << ").\n";
    return v;
}

/** Checks the tiles of a tensor-core contraction (user errors naming the generator and the
 * GeneratorParam). */
inline void check_tensor_core_tiles(const std::string &generator, const TensorCoreTiles &t, int tile_k) {
    _halide_user_assert(t.warp_m % 16 == 0 && t.warp_n % 16 == 0)
        << "The " << generator << " generator with type f16 or bf16: warp_m (" << t.warp_m << ") and warp_n ("
        << t.warp_n << ") must be multiples of 16 (mma.sync.m16n8k16, two n8 tiles per ldmatrix.x4).\n";
    _halide_user_assert(t.block_m % t.warp_m == 0 && t.block_n % t.warp_n == 0)
        << "The " << generator << " generator with type f16 or bf16: warp_m (" << t.warp_m << ") and warp_n ("
        << t.warp_n << ") must divide block_m (" << t.block_m << ") and block_n (" << t.block_n << ").\n";
    _halide_user_assert(tile_k % 16 == 0) << "The " << generator << " generator with type f16 or bf16: tile_k ("
                                          << tile_k << ") must be a multiple of 16 (the mma.sync k step).\n";
}

/** The contraction on tensor cores: prod's update is P(x, y) += f32(a(k, y)) * f32(b(x, k))
 * over fp16 or bf16 tiles. Each of the (block_m / warp_m) x (block_n / warp_n) warps of a
 * block holds a warp_m x warp_n tile of prod in the layout of mma.sync's accumulators, for
 * prod's definitions and for out; the shared tiles are copied by all threads in 16-byte
 * vectors (8 elements: cp.async where the copies are asynchronous); prod asks for tensor
 * cores, which the pass checks and rewrites into ldmatrix + mma.sync (CUDA sm_80+), with its
 * fragments in `register_stages` register slots where that is more than one. */
inline void schedule_tensor_core_contraction(Halide::Func out, Halide::Func prod, Halide::Func a_shared,
                                             Halide::Func b_shared, Halide::Var x, Halide::Var y,
                                             const std::vector<Halide::Var> &extra_blocks,
                                             const std::vector<Halide::RVar> &within_chunk, Halide::RVar streaming,
                                             const TensorCoreTiles &t,
                                             int stages_a, int stages_b, int register_stages,
                                             bool request_pipelines = true, bool b_k_major = false) {
    using namespace Halide;
    constexpr int warp_size = 32;
    const int threads = warp_size * (t.block_m / t.warp_m) * (t.block_n / t.warp_n);

    const auto [xi, yi] = tile_blocks(out, prod, x, y, t.block_m, t.block_n, extra_blocks);
    alcop::schedule_tensor_core_tile(out, xi, yi, t.warp_m, t.warp_n);
    alcop::schedule_tensor_core_tile(prod, x, y, t.warp_m, t.warp_n);
    alcop::schedule_tensor_core_tile(prod.update(), x, y, t.warp_m, t.warp_n, within_chunk, {streaming});

    // The copies' lanes are the thread x of the warps (32), as the accumulators' are.
    const int width = tensor_core_copy_bytes / a_shared.output_types()[0].bytes();
    schedule_staged_copies(prod, streaming, a_shared, b_shared, warp_size, threads, width, false, b_k_major, stages_a,
                           stages_b, request_pipelines);
    alcop::tensor_cores(prod, t.warp_m, t.warp_n);
    if (request_pipelines && register_stages > 1) alcop::pipeline(prod, register_stages, alcop::Level::Register);
}

}  // namespace alcop_generators

#endif
