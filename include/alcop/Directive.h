#ifndef ALCOP_PUBLIC_DIRECTIVE_H
#define ALCOP_PUBLIC_DIRECTIVE_H

/** \file
 * The scheduling directives of Halide-ALCOP.
 *
 * `f.pipeline(stages, level)` on an `alcop::Func` (or `alcop::pipeline(f, stages, level)` on
 * any Func) asks that `f`, staged in GPU shared memory (Level::Shared) or in registers
 * (Level::Register) inside a serial loop under gpu_blocks/gpu_threads, be multi-buffered with
 * `stages` slots, so that the copy of iteration k + stages - 1 overlaps the compute of
 * iteration k.
 *
 * A request is stored on the Func itself (as a trace tag, the one free-form field a Halide 14
 * Function carries), so it travels with the Func into JIT pipelines, Generators and
 * autoscheduler plugins without global state. `alcop::enable(pipeline, target)` installs the
 * lowering pass that honours the requests of every Func of the pipeline; it is the one line a
 * pipeline needs.
 */

#include "Halide.h"

namespace alcop {

/** Where a pipelined Func is staged. */
enum class Level {
    Shared,   ///< global -> GPU shared memory (block-wide slots, barriers)
    Register  ///< shared -> registers (per-thread slots)
};

const char *to_string(Level level);

/** Ask for `f` to be pipelined with `stages` slots at `level`. stages == 1 changes nothing;
 * stages < 1 is a user error. A later call on the same Func replaces an earlier one. Returns
 * f, so that the call reads like a schedule line. */
Halide::Func pipeline(Halide::Func f, int stages, Level level = Level::Shared);

/** CUDA launch bounds for the kernel that computes `f` (a Func with gpu_blocks loops): at
 * least `blocks` blocks of it must fit on one SM, so ptxas keeps each thread's registers
 * within what that occupancy leaves (about 65536 / (threads x blocks): registers go to warps
 * in steps of 8 a thread, per scheduler partition), spilling if it must, as
 * __launch_bounds__(threads, blocks) does in CUDA C++; the threads are the kernel's own.
 * A kernel whose estimated registers exceed what the bound leaves gets the pass's register
 * warning (Options::spills_are_errors). Other targets ignore it; blocks < 1 is a user error.
 * Returns f. */
Halide::Func min_blocks_per_sm(Halide::Func f, int blocks);

/** Compute the inner product of the accumulator `f` with tensor cores (CUDA, sm_80 or newer):
 * each warp computes a `warp_m` x `warp_n` tile of f with `mma.sync.m16n8k16` (fp16 or bf16
 * operands, fp32 accumulators) on fragments loaded from shared memory by `ldmatrix`. f is a
 * plain sum over fp16 (Float(16)) or bf16 (BFloat(16)) operands staged in GPU shared memory:
 *
 *     prod(x, y) = 0.0f;
 *     prod(x, y) += f32(A_shared(k, y)) * f32(B_shared(x, k));   // x: N, y: M
 *
 * and its update (and pure definition) is scheduled so that each thread holds the accumulators
 * that mma.sync gives its lane: with lane = t + 4 g (t < 4, g < 8) and a warp tile at (x0, y0),
 * the lane holds x = x0 + 8 i + 2 t + {0, 1}, y = y0 + 16 j + g + {0, 8} for i < warp_n / 8 and
 * j < warp_m / 16 (schedule_tensor_core_tile() below writes that schedule). The lowering pass
 * checks the request (a user error names the Func and the reason): warp_m and warp_n multiples of
 * 16 (one ldmatrix.x4 loads B for two n8 tiles), a serial K loop inside a chunk of a multiple
 * of 16, operand types the instruction has, operands contiguous along K or along M/N in
 * their shared tiles, threads that form whole warps, and per-thread accumulators in the
 * fragment layout. An update whose last chunk is a guarded tail (a K loop of extent
 * min(K - k, KT): a runtime K, or the generic branch of `f.update().specialize(K % 32 == 0)`)
 * takes mma.sync too where both operands are staged at the chunk loop in tiles of constant
 * bound extents: the pass zero-fills the tail of both tiles and runs every k step. Elsewhere
 * that update stays the threads' own multiply-adds, in the same layout, and another update of
 * f must take mma.sync. A later call on the same Func replaces an earlier one. Returns f. */
Halide::Func tensor_cores(Halide::Func f, int warp_m, int warp_n);

/** Tiles `stage` (a contraction's output, or the update of an output that accumulates) into
 * block tiles, one GPU block each: x (N) by block_n and y (M) by block_m, each split into its
 * block loop `<v>_o` and its loop inside the tile `<v>_i`. The edge blocks compute whole tiles
 * (their accumulators and staged tiles keep one size); along M (y and `rows`) `m_tail` and
 * along N `n_tail` say where they store: GuardWithIf (the default) what lies inside the
 * output, or ShiftInwards, the last block moved back inside the output over its neighbour, so
 * that every block reads and stores a whole tile inside it (for a pure definition only, which
 * may store an element twice, and only where each extent is at least its tile, which the
 * caller specializes on). A shifted last block along N starts at the output's extent less
 * block_n: for its copies of the operand indexed by N to be whole 16-byte vectors, the caller
 * also specializes on that extent being a multiple of the vector. Each of `rows`
 * (further M dimensions of the block tile with their extents in it: a convolution's output
 * rows and images) is split alike, its block loop fused into y's (`<y>_<row>..._o`); `batches`
 * (innermost first) are fused into one, named by joining theirs with '_', a third block
 * dimension. Loop order, innermost first: x_i, y_i, the rows' `_i` loops, then the blocks.
 * The block's threads are laid out next (schedule_thread_tile, schedule_tensor_core_tile over
 * x_i and y_i) and its accumulators computed at x_o (store_block_accumulators). Returns the
 * stage. */
Halide::Stage schedule_block_tile(Halide::Stage stage, Halide::Var x, Halide::Var y, int block_m, int block_n,
                                  const std::vector<std::pair<Halide::Var, int>> &rows = {},
                                  const std::vector<Halide::Var> &batches = {},
                                  Halide::TailStrategy m_tail = Halide::TailStrategy::GuardWithIf,
                                  Halide::TailStrategy n_tail = Halide::TailStrategy::GuardWithIf);

/** Computes `acc`, a contraction's accumulators, once per block tile of `output` (at its block
 * loop `block_loop`, x_o of schedule_block_tile), in registers, each of acc's dimensions named
 * in `tile` bounded to its extent there (the block tile's; 1 for a batch). Returns acc. */
Halide::Func store_block_accumulators(Halide::Func acc, Halide::Func output, Halide::Var block_loop,
                                      const std::vector<std::pair<Halide::Var, int>> &tile);

/** Schedules `stage` (the pure definition or the update of a tensor_cores() accumulator, or the
 * Func that stores it) over an already tiled block tile: splits x (N) and y (M) by the warp
 * tile and by the mma.sync accumulator layout, fuses the lane (t + 4 g) and the warp index, and
 * makes them `gpu_threads(lane, warp)`, with the per-thread register tile unrolled. x and y
 * must be the Vars of the block tile's inner dimensions, of extents that warp_n and warp_m
 * divide. Loop order, innermost first: the unrolled register tile, `within_chunk` (an update's
 * reduction inside one staged chunk: the k loop the mma steps replace), the threads (lane,
 * warp), then `chunks` (the streaming loop and any outer reduction). Returns the stage. */
Halide::Stage schedule_tensor_core_tile(Halide::Stage stage, Halide::Var x, Halide::Var y, int warp_m, int warp_n,
                                        const std::vector<Halide::RVar> &within_chunk = {},
                                        const std::vector<Halide::RVar> &chunks = {});

/** The same on f's pure definition (the accumulator's, or that of the Func that reads it out),
 * and where f's values are narrower than 32 bits (an fp16 or bf16 output computed from the fp32
 * accumulators) a lane's two adjacent x elements are one vector: each lane converts its pair and
 * stores 4 bytes at once (st.global.v2.b16) instead of two 2-byte stores. A vector store needs a
 * 4-byte aligned pair: f's rows must start at 4-byte boundaries (for an output buffer, min 0 along
 * x and even row strides, which the caller declares). Returns f. */
Halide::Func schedule_tensor_core_tile(Halide::Func f, Halide::Var x, Halide::Var y, int warp_m, int warp_n);

/** The same on a Generator's Output, which converts to a Func and to a Stage alike (the two
 * overloads above would be ambiguous). */
template<typename T>
Halide::Func schedule_tensor_core_tile(const Halide::GeneratorOutput<T> &output, Halide::Var x, Halide::Var y,
                                       int warp_m, int warp_n) {
    return schedule_tensor_core_tile(static_cast<Halide::Func>(output), x, y, warp_m, warp_n);
}

/** The SIMT counterpart of schedule_tensor_core_tile: schedules `stage` (a contraction's output,
 * or the pure definition or update of its accumulator) over an already tiled block tile, each
 * thread a `thread_m` x `thread_n` register tile. Splits x (N) by thread_n and y (M) by thread_m
 * into the threads (x_t, y_t: `gpu_threads`, consecutive threads along x) and a thread's
 * register tile (x_r, y_r, unrolled), with `tail` at both splits. `rows`, further M dimensions
 * of the block tile (a convolution's output rows: y its columns), are fused into the thread
 * rows outside y_t, so that each thread's register tile lies along y. x, y and `rows` must be
 * the Vars of the block tile's inner dimensions, x's and y's extents multiples of thread_n and
 * thread_m. Loop order, innermost first: the register tile, `within_chunk` (an update's
 * reduction inside one staged chunk), the threads, then `chunks` (the streaming loop and any
 * outer reduction). Returns the stage. */
Halide::Stage schedule_thread_tile(Halide::Stage stage, Halide::Var x, Halide::Var y, int thread_m, int thread_n,
                                   const std::vector<Halide::RVar> &within_chunk = {},
                                   const std::vector<Halide::RVar> &chunks = {},
                                   const std::vector<Halide::Var> &rows = {},
                                   Halide::TailStrategy tail = Halide::TailStrategy::Auto);

/** Schedules the copy into a staged tile (`stage`: the pure definition of a Func computed per
 * chunk in shared memory, or a specialization of it) over all `threads` threads of the block,
 * `threads_x` of them along the GPU's thread x: the loops `dims` (innermost first; any other
 * stays outside) become one, dims[0] first split into vectors of `vector_width` elements
 * (vectorized; 1: none), dealt out to the threads (a guarded split), in rounds unrolled with
 * `unroll_rounds`. The tile's extent along dims[0] must be a multiple of vector_width (rows of
 * whole vectors: the split rounds up), and threads a multiple of threads_x. Consecutive threads
 * copy consecutive vectors: coalesced global reads, dense shared writes. Returns the stage. */
Halide::Stage schedule_staged_copy(Halide::Stage stage, const std::vector<Halide::Var> &dims, int vector_width,
                                   int threads_x, int threads, bool unroll_rounds = true);

/** Schedules `frag`, a thread's fragment of a staged tile at one step of its consumer's
 * reduction (a wrapper `tile.in(consumer)` computed inside that step), in registers with every
 * loop unrolled, read along `dense` (where the fragment is contiguous in the tile) in vectors
 * of the largest of 4, 2 and 1 elements that divides `extent`, the fragment's extent along it
 * (one ld.shared.v4 for 4 floats). Returns frag. */
Halide::Func schedule_register_fragment(Halide::Func frag, const Halide::Var &dense, int extent);

/** The same, read element by element (no dimension of the fragment is contiguous in the tile). */
Halide::Func schedule_register_fragment(Halide::Func frag);

/** A Halide::Func with the ALCOP directives as members, and nothing else:
 *
 *     alcop::Func A_shared("A_shared");
 *     A_shared(k, m) = A(k, m);
 *     A_shared.compute_at(prod, ko).store_in(MemoryType::GPUShared);
 *     A_shared.pipeline(3);
 *
 * It converts to and from Halide::Func (a copy names the same Function). */
class Func : public Halide::Func {
public:
    using Halide::Func::Func;
    Func() = default;
    Func(const Halide::Func &f) : Halide::Func(f) {
    }

    /** alcop::pipeline(*this, stages, level). */
    Func &pipeline(int stages, Level level = Level::Shared);

    /** alcop::min_blocks_per_sm(*this, blocks). */
    Func &min_blocks_per_sm(int blocks);

    /** alcop::tensor_cores(*this, warp_m, warp_n). */
    Func &tensor_cores(int warp_m, int warp_n);
};

/** How the copies of a pipelined Func are made. */
enum class CopyKind {
    Auto,            ///< Async where the kernel can use cp.async (CUDA sm_80+), else RegisterStaged
    Synchronous,     ///< plain loads and stores at the prefetch point
    RegisterStaged,  ///< loads into registers before the compute, stores into the slot after it
    Async            ///< cp.async with commit/wait groups (CUDA sm_80+ only)
};

/** Options of the lowering pass. */
struct Options {
    /** The target the pipeline is compiled for: with CopyKind::Auto it decides how copies
     * are made. */
    Halide::Target target;
    CopyKind copies = CopyKind::Auto;
    /** Shared memory one block of a pipelined kernel may use, in bytes; the pass raises a user
     * error, at compile time, for a kernel whose slots would need more. 0: the default of the
     * kernel's target, 48 KiB for every GPU API: on CUDA it is what Halide 14's runtime
     * launches with (model::GpuSpec::smem_per_block_default); an app that links the CUDA
     * opt-in (HalideAlcop::cuda_opt_in, alcop/CudaOptIn.h) may set up to its GPU's opt-in
     * maximum (model::GpuSpec::smem_per_block_optin, 232448 on an H100 or H200). OpenCL cannot tell the
     * device's CL_DEVICE_LOCAL_MEM_SIZE at compile time: 48 KiB is what NVIDIA's OpenCL offers
     * and less than AMD's and Intel's GPUs (64 KiB) and pocl offer; set the limit for a device
     * with less (the OpenCL minimum is 32 KiB). */
    int64_t shared_memory_limit = 0;
    /** 32-bit registers per thread a thread of a kernel may use. The register slots of one
     * fragment loop (Level::Register) over it are a user error; a kernel whose estimate
     * (src/analysis/KernelRegisters.h) is over it gets a warning naming its Func, the estimate,
     * the limit and the fix, since ptxas would spill the rest to local memory (a user error with
     * spills_are_errors). 0: the target's default, 64 on CUDA (Halide 14's runtime caps every
     * kernel at 64 registers; the opt-in lifts the cap to 255, model::RuntimeLimits), 255
     * elsewhere (the most a thread of any GPU the model knows holds before it spills). At most
     * 512: no GPU gives a thread more. */
    int register_limit = 0;
    /** The app links the CUDA opt-in (HalideAlcop::cuda_opt_in, alcop/CudaOptIn.h): on CUDA the
     * defaults of both limits above become the GPU's opt-in maxima (232448 bytes, 255
     * registers on an H100 or H200) instead of Halide 14's runtime's. */
    bool cuda_opt_in = false;
    /** A kernel estimated to need more registers than register_limit is a user error, not a
     * warning. */
    bool spills_are_errors = false;
};

bool operator==(const Options &a, const Options &b);
inline bool operator!=(const Options &a, const Options &b) {
    return !(a == b);
}

/** Whether the pass makes the copies of a CUDA kernel compiled for `target` with cp.async
 * when `copies` is requested: a generator that promises what cp.async needs (16-byte aligned,
 * dense tiles) asks this rather than guessing. Async on a target without cp.async is a user
 * error, as it is in enable(). */
bool uses_async_copies(const Halide::Target &target, CopyKind copies = CopyKind::Auto);

/** Install the ALCOP lowering pass on `p`. Call it once per Pipeline; in a Generator, call
 * `alcop::enable(get_pipeline(), get_target())` from schedule(). The target (by default the
 * JIT target from the environment) decides how copies are made and the default limits. A later
 * call on the same Pipeline replaces the Options of an earlier one (the last call wins, as with
 * pipeline()), and the Pipeline is compiled again with them. */
void enable(Halide::Pipeline p, const Options &options);
void enable(Halide::Pipeline p, const Halide::Target &target = Halide::get_jit_target_from_environment());

/** The one switch: install the pass as enable() does, and let it pipeline, at compile time,
 * every buffer of the existing GPU schedule that can be: each Func stored in GPU shared memory
 * and produced inside a serial loop under the gpu_blocks loops (Level::Shared), and each
 * per-thread Func produced inside a serial loop within the gpu_threads loops
 * (Level::Register), that the pass's analysis accepts, with stages chosen by the cost model
 * within `options`' shared_memory_limit and register_limit (the same limits the pass checks,
 * so no choice exceeds them; src/plan/AutoPipeline.h has the policy). In a Generator:
 * `alcop::auto_pipeline(get_pipeline(), get_target())` from schedule(); it works with an
 * autoscheduler's schedule too, which is applied before the pipeline is lowered.
 *
 * An explicit pipeline() on a Func wins over the automatic choice for that Func (stages 1 too:
 * it keeps the Func unpipelined). A candidate that cannot be pipelined is left exactly as it
 * is, with a one-line warning naming the Func and the reason; nothing changes when nothing
 * qualifies. What was chosen (Func, level, stages, predicted gain) is printed to stderr when
 * the environment sets ALCOP_AUTO_PIPELINE_DEBUG=1 or HL_DEBUG_CODEGEN >= 1. The analysis
 * reports a rejected candidate by raising and catching its user error, so this needs Halide
 * built with exceptions (Debian's is). The last of enable() and auto_pipeline() on a Pipeline
 * wins. */
void auto_pipeline(Halide::Pipeline p, const Options &options);
void auto_pipeline(Halide::Pipeline p, const Halide::Target &target = Halide::get_jit_target_from_environment());

}  // namespace alcop

#endif
