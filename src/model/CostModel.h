#ifndef ALCOP_MODEL_COST_MODEL_H
#define ALCOP_MODEL_COST_MODEL_H

/** \file
 * An analytical performance model for software-pipelined GEMM-like kernels.
 *
 * What it does: given a contraction problem (C[M,N] = sum_k A*B, batched, or a
 * convolution as implicit GEMM), a candidate schedule (block tile, thread tile,
 * k tile, shared-memory and register stages) and a GPU description, it decides
 * whether the schedule fits the GPU at all (shared memory under the limit that
 * applies, registers, threads) and, if it does, predicts the kernel's run time
 * and says why: occupancy and its limiting resource, waves, the per-iteration
 * load and compute times, how much of the load latency the stages-1 tiles in
 * flight leave exposed, the prologue and epilogue, and the memory- and
 * compute-bound floors. docs/model.md derives every formula.
 *
 * Assumes: the kernel is the one our Halide lowering generates. FP32 data and
 * CUDA-core FMAs; a block computes a BM x BN tile with (BM/TM)*(BN/TN)
 * threads, each owning a TM x TN register tile; the reduction is a serial loop
 * over K in chunks of KT; per iteration the block copies a KT x BM tile of A
 * and a KT x BN tile of B from global to shared memory with 4-wide vector
 * copies; S shared stages hold S copies (prefetch distance S-1) and register
 * stages R in {1,2} double-buffer the per-thread fragments. On GPUs without
 * cp.async (V100) prefetching goes through registers, so the prefetch
 * distance is at most one iteration whatever S is. Waits are issued in
 * CUTLASS order (wait for the oldest tile before issuing the next), so all
 * S-1 in-flight tiles overlap compute, and tail prefetches are predicated off
 * (no redundant traffic).
 *
 * Guarantees: predict() is pure and takes constant time (closed forms, no
 * loops over the problem or the iterations; strings are built only for the
 * reason of an infeasible prediction and in explain()), so the search can call
 * it thousands of times.
 * A Prediction with feasible == false always has a non-empty reason and a
 * total_us of +infinity. With everything else fixed, adding a shared stage
 * never makes a feasible prediction slower unless it lowers occupancy: the
 * only things a stage costs are shared memory and, without cp.async, the
 * staging registers that S >= 2 needs.
 */

#include "model/GpuSpec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace alcop {
namespace model {

/** The element type of a contraction's operands; C and the accumulation are FP32 in every case. */
enum class Element {
    F32,
    F16,
    BF16,
};
int element_bytes(Element e);
const char *to_string(Element e);

/** A contraction C[batch][M][N] = sum_k A[batch][M][k] * B[batch][k][N], FP32 accumulation and
 * output, operands of `element`. */
struct Problem {
    std::string name;
    int64_t batch = 1;
    int64_t m = 0, n = 0, k = 0;
    Element element = Element::F32;
    /** Bytes of distinct A and B data in DRAM. For a plain FP32 GEMM 4*batch*M*K and
     * 4*batch*K*N (2 bytes an element for F16 and BF16); an implicit-GEMM convolution reads each input pixel for many
     * rows of its virtual A, so its unique A bytes are the input tensor's size.
     * 0 means dense (the GEMM sizes). */
    int64_t a_bytes = 0, b_bytes = 0;
    /** A is gathered, as an implicit-GEMM convolution reads its input (im2col): each chunk and
     * each of A's copies compute more addresses than a dense operand's. */
    bool gathered_a = false;
    /** The extents of the dimensions M runs over, innermost first (a convolution's output width,
     * height and images), whose product times the true batch is batch * m; empty: one dimension
     * of m. A block tile of BM rows lays out over them (m_tile_shape), and the blocks along M are
     * its tiles' count over them (m_block_tiles), more than M / BM where a tile does not fit. */
    std::vector<int64_t> m_extents;

    /** 2 * batch * M * N * K. */
    double flops() const;
    /** Bytes of the output C. */
    int64_t c_bytes() const {
        return 4 * batch * m * n;
    }
    std::string to_string() const;
};

Problem make_gemm(int64_t m, int64_t n, int64_t k, Element element = Element::F32);
Problem make_bmm(int64_t batch, int64_t m, int64_t n, int64_t k, Element element = Element::F32);

/** A 2-D convolution over an NHWC input with CO filters of KH x KW x CI. */
struct Conv2dShape {
    int64_t n = 1, h = 0, w = 0, ci = 0;
    int64_t co = 0, kh = 1, kw = 1;
    int64_t stride = 1, pad = 0;
    int64_t out_h() const {
        return (h + 2 * pad - kh) / stride + 1;
    }
    int64_t out_w() const {
        return (w + 2 * pad - kw) / stride + 1;
    }
};

/** Implicit GEMM: M = N*OH*OW, N = CO, K = KH*KW*CI, batch 1. */
Problem make_conv2d_nhwc(const Conv2dShape &conv, Element element = Element::F32);

/** mma.sync.aligned.m16n8k16: the tile one instruction computes, and the alignment of the
 * swizzled shared slots of its operands (the XOR swizzle permutes 16-byte chunks within 8 rows
 * of 128 bytes, src/plan/Swizzle.h, so a slot that starts inside a period would break it). */
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int64_t kSwizzlePeriodBytes = 1024;

/** A candidate schedule. See the file comment for what each field means.
 *
 * With tensor_cores, the kernel is the tensor-core one (docs/tensor-cores.md): 16-bit operands,
 * a warp of 32 lanes computes a TM x TN *warp* tile (tm, tn: multiples of 16) with
 * mma.sync.m16n8k16 on fragments that ldmatrix.x4 reads from swizzled shared tiles; R register
 * stages double-buffer those fragments. */
struct Schedule {
    int bm = 0, bn = 0;  // block tile
    int kt = 0;          // k tile: reduction elements per main-loop iteration
    int tm = 0, tn = 0;  // thread tile (SIMT) or warp tile (tensor cores)
    int smem_stages = 1;
    int reg_stages = 1;
    bool tensor_cores = false;

    int warps() const {
        return (tm > 0 && tn > 0) ? (bm / tm) * (bn / tn) : 0;
    }
    int threads() const {
        return tensor_cores ? 32 * warps() : warps();
    }
    /** Bytes of an operand element: FP32 on CUDA cores, fp16/bf16 on tensor cores. */
    int element_bytes() const {
        return tensor_cores ? 2 : 4;
    }
    /** One shared stage: an A tile (KT x BM) and a B tile (KT x BN). */
    int64_t bytes_per_stage() const {
        return int64_t(element_bytes()) * kt * (bm + bn);
    }
    /** The shared memory one stage occupies: its two tiles, each in a slot aligned to the
     * swizzle period with tensor cores (kSwizzlePeriodBytes), as they are. */
    int64_t slot_bytes_per_stage() const;
    /** Shared memory per block: S stages and nothing else. */
    int64_t smem_bytes() const {
        return smem_stages * slot_bytes_per_stage();
    }
    /** Tensor cores: the 16 x 8 accumulator tiles of a warp tile, and the ldmatrix.x4 of one
     * 16-wide k step for A (one per 16 rows) and B (one per 16 columns). */
    int mma_tiles_per_warp() const {
        return (tm / kMmaM) * (tn / kMmaN);
    }
    int ldmatrix_per_k_step() const {
        return tm / 16 + tn / 16;
    }
    /** Elements each thread copies from global memory per stage. */
    int elements_per_thread_per_stage() const {
        return threads() > 0 ? kt * (bm + bn) / threads() : 0;
    }
    /** Elements of one 16-byte copy: 4 FP32 or 8 halves. */
    int copy_vector_elements() const {
        return 16 / element_bytes();
    }
    /** 16-byte copies the busiest thread issues per stage: rounds over the threads, per tile. */
    int copy_vectors_per_thread_per_stage() const {
        return copy_vectors_per_thread(bm) + copy_vectors_per_thread(bn);
    }
    /** The same for A's tile alone. */
    int a_copy_vectors_per_thread_per_stage() const {
        return copy_vectors_per_thread(bm);
    }
    /** 16-byte copies the busiest thread issues for a tile of `rows` x kt. */
    int copy_vectors_per_thread(int rows) const {
        const int t = threads();
        return t > 0 ? (kt * rows / copy_vector_elements() + t - 1) / t : 0;
    }
    /** "128x128x8 t8x8 S3 R1", with tensor cores "128x128x32 w64x64 S3 R1" */
    std::string to_string() const;
};

/** The shape of `s`'s block tile of BM rows over M dimensions of `extents` (innermost first),
 * as the schedules lay it out: a factor a dimension, each a power of two but the last, which
 * takes the rest (with CUDA cores the first a multiple of TM, which runs along it). With tensor
 * cores every dimension is tiled (the warp layout takes them fused), with CUDA cores the first
 * two (further ones index blocks, one each). The factors that tile the extents exactly, or else
 * any (a tile covers at most its extent, but the first if it is TM and the last), the widest
 * first along the first dimensions; empty if BM has no such factors. */
std::vector<int> m_tile_shape(const Schedule &s, const std::vector<int64_t> &extents);

/** Block tiles along M (times the true batch): over p.m_extents in m_tile_shape's tiles, each
 * dimension in as many tiles as cover it; without m_extents (or a shape), ceil(M / BM) a batch. */
int64_t m_block_tiles(const Problem &p, const Schedule &s);

/** Whether `s` describes a kernel our lowering can generate at all, whatever
 * the GPU: positive fields, 1 <= R <= 2, 1 <= S, thread tile divides the block
 * tile, 32 <= threads <= 1024 and a multiple of the warp size, KT and BN
 * multiples of the 4-wide copy vector (a round of copies may leave threads
 * idle), and with tensor cores warp tiles and KT multiples of 16. On failure
 * writes why to *why (if given). */
bool structurally_valid(const Schedule &s, std::string *why = nullptr);

/** Which launch limits apply. Halide 14's CUDA runtime never raises a kernel's
 * dynamic shared memory above the 48 KiB default, and it loads every module with
 * CU_JIT_MAX_REGISTERS = 64, so a kernel that needs more registers spills
 * (measured on an H200: an 8 x 8 thread tile got 64 registers instead of 129 and
 * ran 10x slower). Those are the defaults here. OptIn means the app links
 * apps/common/CudaOptIn, which raises MAX_DYNAMIC_SHARED_SIZE_BYTES to what a
 * launch needs (up to the GPU's maximum) and drops the register cap (up to the
 * GPU's 255). */
enum class RuntimeLimits {
    HalideDefault,
    OptIn,
};

/** The register cap of Halide 14's CUDA runtime (src/runtime/cuda.cpp, compile_kernel). */
constexpr int kHalideRuntimeRegisterCap = 64;

struct ModelOptions {
    RuntimeLimits limits = RuntimeLimits::HalideDefault;
};

int64_t smem_limit_bytes(const GpuSpec &gpu, RuntimeLimits limits);
int register_limit(const GpuSpec &gpu, RuntimeLimits limits);
const char *to_string(RuntimeLimits limits);

/** Whether `s` can be launched on `gpu` at all: structurally valid, shared
 * memory per block and registers per thread within the limits `options`
 * selects, registers within the per-block file, and at least one block per SM. Does not
 * depend on the problem, so a plugin can reject a schedule before generating
 * any code. On failure writes the reason predict() would give to *why. */
bool fits(const Schedule &s, const GpuSpec &gpu, const ModelOptions &options = ModelOptions(),
          std::string *why = nullptr);

/** Registers a thread needs besides accumulators, fragments and staging: thread/block
 * indices, the A, B and C base pointers and their strides, the shared-memory base and
 * ring-slot offsets, the k loop counter and bound, predicates: 22-32 in the kernels we looked
 * at (ptxas, sm_80: 32 for the 64x64 t4x4 GEMM reading shared memory directly, 22-24 for its
 * register fragments read as vectors from A's transposed tile); we take the middle. */
constexpr int kAddressAndLoopRegisters = 27;

/** Registers per thread our kernels need, before allocation rounding:
 *   TM*TN accumulators + R*(TM+TN) fragment slots + 27 address/loop registers
 *   + (no cp.async and S >= 2) one stage of staged elements per thread;
 * with tensor cores, per lane: 4 accumulators per 16 x 8 tile of the warp tile, the fragments
 * of the k steps held (k_steps + 1 with R = 2, else min(k_steps, 2); 4 registers per 16 rows of
 * A and 2 per 8 columns of B, scaled by a share fitted to ptxas for one or for two register
 * stages), a few registers per accumulator and the address registers, and 22 where the main
 * loop is expanded past two slots (expanded_chunks: under the opt-in `limits` only). docs/model.md
 * explains each term. */
int estimate_registers(const Schedule &s, const GpuSpec &gpu, RuntimeLimits limits = RuntimeLimits::OptIn);

/** What a pipelined loop streams to mma.sync, as expanded_chunks weighs it. */
struct TensorCoreStream {
    int lane_accumulators = 0;  ///< the accumulators each lane of the mma.sync holds (0: none streamed)
    int fragment_stages = 1;    ///< the register stages of its fragments (R)
    /** The registers a thread of the kernel may hold (Halide 14's runtime: 64). */
    int register_limit = kHalideRuntimeRegisterCap;

    /** Widens this stream by `other`, for a loop whose operands feed both: the most
     * accumulators and register stages of either (a kernel has one register limit). */
    void merge(const TensorCoreStream &other);
};

/** The accumulators each lane holds for a warp tile of warp_m x warp_n outputs: four per
 * 16 x 8 tile of mma.sync. */
int lane_accumulators(int warp_m, int warp_n);

/** How many chunks one trip of a pipelined steady state runs once its slots are expanded
 * (rewrite/ExpandSlots.h; 1: it stays rolled): `period`, the lcm of its buffers' stage counts,
 * where the loop streams a tensor-core operand's tile (`stream`), none of its prefetches stores
 * in place, the period is at most two, or at most six where the lanes hold at most 64
 * accumulators (a 32 x 64 warp tile), the fragments one register stage and the kernel may hold
 * more registers than Halide 14's runtime gives it (the slots' addresses take about 22 more),
 * and it runs more
 * than one group of `period` chunks (`trips`: its trip count where that is a constant). The
 * rewrite expands by it and the model counts it (its issue, and the registers of a period
 * past two). */
int expanded_chunks(int period, const TensorCoreStream &stream, bool prefetch_in_place, std::optional<int64_t> trips);

/** The SM's mma.sync FLOPs per clock for operands of `element` (F16 or BF16). */
double mma_flops_per_clk(Element element, const GpuSpec &gpu);

/** Cycles of one warp's chain per 16-wide k step of its tensor-core tile (s.tm x s.tn, with
 * s.reg_stages register stages of the fragments), at the SM's mma.sync rate `mma_flops`. */
double tensor_core_step_cycles(const Schedule &s, const GpuSpec &gpu, double mma_flops);

enum class OccupancyLimiter {
    None,  // the block does not fit at all
    SharedMemory,
    Registers,
    Threads,
    BlockSlots,
};
const char *to_string(OccupancyLimiter l);

struct Occupancy {
    int blocks_per_sm = 0;
    OccupancyLimiter limiter = OccupancyLimiter::None;
    // What each resource alone allows.
    int by_smem = 0, by_registers = 0, by_threads = 0, by_slots = 0;
    int regs_allocated = 0;  // per thread, after rounding to the allocation unit
    /** Resident warps / max warps per SM. */
    double fraction = 0;
};

/** Resident blocks per SM for blocks of `threads` threads using
 * `regs_per_thread` registers and `smem_per_block` bytes of shared memory,
 * computed the way the CUDA occupancy calculator does (register allocation per
 * warp in 256-register units, per scheduler sub-partition; shared memory per
 * block plus the driver's reservation, in allocation units). Ties between
 * limiters are reported in the order smem, registers, threads, block slots.
 * Does not check the per-block limits; predict() does that first. */
Occupancy occupancy(int threads, int regs_per_thread, int64_t smem_per_block, const GpuSpec &gpu);

/** The most registers a thread may use for `blocks` blocks of `threads` threads to be resident
 * on one SM by occupancy()'s rule (at most gpu.max_registers_per_thread): what ptxas caps a
 * kernel at for `__launch_bounds__(threads, blocks)` (`.maxntid`, `.minnctapersm`). In steps of
 * the allocation unit, from each scheduler partition's quarter of the file: 5 blocks of 96
 * threads leave 128 a thread, not the 136 of the SM's registers over the blocks' threads. 0
 * where even the fewest registers do not fit them. */
int registers_for_blocks(int threads, int blocks, const GpuSpec &gpu);

/** Cycles from launch to the end of the last iteration's compute for one block
 * whose main loop runs `iterations` iterations with prefetch distance `d`,
 * when each stage's load takes `load` cycles and each iteration's compute
 * `compute` cycles. Exact closed form of the recurrence
 *   t_0 = load;  t_i = max(t_{i-1} + compute, t_{i-d} + load)  for d >= 1
 *   t_i = t_{i-1} + compute + load                             for d == 0
 *   result = t_{iterations-1} + compute
 * (tiles 0..d-1 are all issued by the prologue at time 0). Non-increasing in d. */
double pipeline_chain_cycles(int64_t iterations, int d, double load, double compute);

/** What decided the predicted time. */
enum class Bound {
    Infeasible,
    SmCompute,        // the SM's FMA, shared-memory or issue throughput
    SmLoadBandwidth,  // the SM's share of L2 bandwidth for the tile copies
    LoadLatency,      // a block waits for tiles the prefetch distance does not cover
    BlockChain,       // too few warps: a block's own FMA/fragment-load chain and barriers
    DeviceMemory,     // the DRAM or L2 floor for the whole problem
    DevicePeak,       // the FP32 (or mma.sync) peak floor
};
const char *to_string(Bound b);

struct Prediction {
    bool feasible = false;
    /** Why the schedule was rejected; empty when feasible. */
    std::string reason;

    // The inputs it describes, for explain().
    Schedule schedule;
    std::string gpu_name;
    double clock_ghz = 0;

    // Resources.
    int threads = 0;
    int64_t smem_per_block = 0;
    int64_t smem_limit = 0;
    RuntimeLimits limits = RuntimeLimits::HalideDefault;
    int register_limit = 0;  // per thread, under `limits`
    int regs_estimated = 0;

    // Occupancy and waves.
    Occupancy occ;
    int64_t total_blocks = 0;
    /** total_blocks / (blocks_per_sm * SMs), fractional. */
    double waves = 0;
    int64_t full_waves = 0;
    /** Blocks per SM in the last, partial wave (0 when there is none). */
    int tail_blocks_per_sm = 0;

    // One main-loop iteration, in core cycles.
    int64_t k_iterations = 0;
    /** Iterations between issuing a tile and using it: 0 for S=1, S-1 with
     * cp.async, min(S-1, 1) when prefetch is register-staged. */
    int prefetch_distance = 0;
    /** Latency + transfer of one stage's copy. */
    double load_cycles = 0;
    double load_transfer_cycles = 0;
    /** One block's iteration if it had the SM alone: max(throughput, latency)
     * plus barriers. */
    double compute_cycles = 0;
    // The throughput terms of one block's iteration and the per-warp chain. With tensor cores
    // fma_cycles is the time of the mma.sync on the tensor cores.
    double fma_cycles = 0, smem_cycles = 0, issue_cycles = 0, warp_chain_cycles = 0;
    /** The instructions one warp issues per iteration, counted as the main-loop report counts
     * a kernel's (analysis/MainLoop.h, but for the retyping moves it leaves out). */
    double issue_per_warp = 0;
    /** Main-loop time per iteration (of a full wave) during which the SM's
     * compute waits for tiles. Zero means the stages hide the loads. */
    double exposed_load_cycles = 0;

    // Whole kernel, in microseconds. prologue + main_loop + epilogue is the
    // pipeline estimate; total is the largest of it and the two floors.
    double prologue_us = 0;
    double main_loop_us = 0;
    double epilogue_us = 0;
    double memory_floor_us = 0;
    double compute_floor_us = 0;
    /** Bytes moved from DRAM and from L2 into the SMs (tile copies + C). */
    double dram_traffic_bytes = 0;
    double l2_traffic_bytes = 0;
    double total_us = 0;
    Bound bound = Bound::Infeasible;

    /** A one-paragraph breakdown: what fits, occupancy and why, the iteration
     * balance, where the time goes and what bounds it. */
    std::string explain() const;
};

/** Predict the run time of `s` on `gpu` for `p`. Infeasible schedules (not
 * structurally valid, over the shared-memory limit that applies, over the
 * register or thread limits) come back with feasible == false and a reason. */
Prediction predict(const Problem &p, const Schedule &s, const GpuSpec &gpu,
                   const ModelOptions &options = ModelOptions());

}  // namespace model
}  // namespace alcop

#endif
