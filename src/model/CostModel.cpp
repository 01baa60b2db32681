#include "model/CostModel.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>

namespace alcop {
namespace model {

namespace {

// ---------------------------------------------------------------------------
// Constants of our kernels. docs/model.md gives the reasoning for each.

// Every global->shared copy and every fragment read is a 4-wide (16-byte)
// vector access.
constexpr int kVectorWidth = 4;
constexpr int kBytesPerElement = 4;  // FP32: the SIMT kernels' operands, and C


// The same for the tensor-core kernels, per lane: the ldmatrix row addresses of the ring slots
// (one per operand and slot, constant offsets after that), the copies' global and shared
// addresses, the k loop, the output's base, and a part of the accumulators' count again (what
// ptxas holds beyond them grows with the warp tile: measured, not derived). Fitted to ptxas -v
// for sm_80 on the user's GEMM of docs/tensor-cores.md (test/tensorcore/TensorCoreGemm.h) with
// the 16-byte cp.async copies that the generators and the plugin emit, over warp tiles 16x16 to
// 64x64, k tiles 16 to 64 and 1 or 2 register stages (TensorCoreModel in test/autoscheduler,
// docs/model.md §3), and bounded by the plugin's kernels (RegisterEstimateFitsThePluginsKernels).
// Of the fragments' registers ptxas holds about a third at once with one register stage, where
// it reuses a step's registers for the next step's loads, and more than half with two, where
// the prefetched step is live beside the current one.
constexpr int kTensorCoreAddressRegisters = 20;
constexpr double kTensorCoreExtraPerAccumulator = 0.40;
constexpr double kTensorCoreFragmentsHeldOneStage = 0.34;
constexpr double kTensorCoreFragmentsHeldTwoStages = 0.58;

// mma.sync.m16n8k16: 2 * 16 * 8 * 16 FLOPs; each lane holds 4 fp32 accumulators per 16 x 8
// tile; ldmatrix.x4 gives each lane 4 32-bit registers (a 16 x 16 tile of A, or two 16 x 8
// tiles of B) and reads 4 x 128 bytes, 4 shared-memory wavefronts; C is stored as pairs (c0, c1
// and c2, c3 are adjacent columns).
constexpr double kMmaFlops = 2.0 * kMmaM * kMmaN * kMmaK;
constexpr int kAccumulatorsPerTile = 4;
constexpr int kLdmatrixWavefronts = 4;
constexpr int kAccumulatorsPerStore = 2;

// Block-wide barriers per main-loop iteration, as the lowering emits them:
//  - pipelined (S >= 2): one. The pipeline rewrite ends each iteration with
//    `wait(S-2); barrier`, which both makes tile k+1 visible and frees slot
//    k % S (the only slot iteration k+1 writes): src/rewrite/InjectPipelines.h,
//    test/unit/lowering_test.cpp (GemmStages, loop_barriers == 1);
//  - unpipelined (S == 1): the loop is Halide's own, whose FuseGPUThreadLoops
//    puts a barrier after each of the two staged copies and one at the end of
//    the body: three (the same test, stages 1).
// A barrier on an otherwise idle SM costs a few tens of cycles; it is a
// latency, so it only adds to a block's own chain, not to SM throughput.
constexpr int kPipelinedBarriersPerIteration = 1;
constexpr int kUnpipelinedBarriersPerIteration = 3;
constexpr double kBarrierCycles = 20;

int barriers_per_iteration(int smem_stages) {
    return smem_stages >= 2 ? kPipelinedBarriersPerIteration : kUnpipelinedBarriersPerIteration;
}

// Non-FMA, non-load instructions per warp per main-loop iteration besides the
// barriers (one BAR.SYNC each, added per iteration below): the k loop's
// increment/compare/branch, address increments of the two global pointers and
// the ring slots, cp.async commit and wait. (Until the barriers were counted
// as emitted, this was 16 with two barriers in it.) The main-loop report
// (docs/mainloop.md) counts the 64x64x8 4x4 S3 GEMM's loop at 202 instructions, the model 185
// with this: 8% under. An unpipelined loop (S = 1) computes its synchronous copies' clamped
// addresses every iteration: 49 (fitted to the report's 224 for the same GEMM at S1).
constexpr int kLoopOverheadInstructions = 14;
constexpr int kUnpipelinedLoopOverheadInstructions = 49;

// The same for the tensor-core kernels, as the main-loop report counts their steady-state
// loops (docs/mainloop.md): per chunk of a pipelined loop the slots' indices, the copies'
// addresses, commit and wait, and per ldmatrix the row address of its fragment (B's .trans
// rows each take a 64-bit add; A's share one). A least-squares line through nine kernels'
// counts (other instructions + commit + wait, against ldmatrix a chunk): the generators'
// 64x64x16 w32x32 (4 ldmatrix: 36), 128x128x16 w32x64 (6: 38), 64x64x32 w32x32 S4 (8: 48),
// 128x128x32 w64x64 S3 and S4 (16: 75, 64), and the plugin's 64x128x16 w32x64 S5 (6: 44),
// 32x64x32 w32x32 S5 R2 (8: 73), 128x128x32 w64x64 S2 (16: 87) and its batched 64x128x32
// w64x64 S2 (16: 93). Model.IssueFollowsTheMainLoopReport (test/ptx/main_loop_test.cpp)
// holds it within 15% of the report for the benchmark's kernels.
constexpr double kTensorCorePipelinedChunkOverhead = 25;
constexpr double kTensorCoreOverheadPerLdmatrix = 3.5;
// A loop of two stages whose copies are cp.async is expanded by its slots (two chunks a trip,
// rewrite/ExpandSlots.h): every slot, copy and row address is a constant offset, and what is
// left a chunk is the copies' global addresses and the loop's count. Fitted on 2026-12-06 to
// the main-loop report of the plugin's 128x128x32 w64x64 S2 GEMM (16 ldmatrix a chunk): 43
// other instructions, 2 commits and 2 waits a trip, 23.5 a chunk (87 rolled).
constexpr double kTensorCoreExpandedChunkOverhead = 23.5;
// The most chunks a trip of an expanded loop runs (why not three: rewrite/ExpandSlots.h), and
// where each lane holds at most kFewLaneAccumulators accumulators (a 32 x 64 warp tile) and
// the fragments one register stage, which leave the registers each slot's addresses take: six,
// the most shared stages the search considers. Measured (ptxas 13, sm_80): the plugin's
// 8x14x14 convolution, 64x64x32 w32x32 S5, 4.25 -> 2.42 other instructions per mma.sync
// expanded by five, 80 -> 128 registers; its 8x56x56 one, 256x64x16 w32x64 S4, 4.12 -> 2.41
// by four, 138 -> 130. With two register stages the registers scattered (kt 32: +15 to +35
// over the estimate; kt 64: -12 to +62). Under Halide 14's runtime cap of 64 registers the
// slots' addresses would spill (a 16x32 warp tile of three stages: ptxas 72 expanded).
constexpr int kMaxExpandedChunks = 2;
constexpr int kFewLaneAccumulators = 64;
constexpr int kMaxExpandedChunksOfFewAccumulators = 6;
// What a loop expanded past two slots holds beside the rolled estimate: each slot's copy and
// ldmatrix addresses. Fitted on 2026-12-06 to 21 kernels of three stages, R = 1, at warp tiles
// of 16x16 to 64x32 (ptxas 13, sm_80; +2 to +42 over the rolled estimate, mean +23).
constexpr int kExpandedSlotRegisters = 22;

// An implicit-GEMM convolution gathers A (im2col): each chunk takes its filter tap and channel
// chunk from the chunk index (two divisions), and each of A's copies its own address and the
// image's borders. Fitted on 2026-12-05 to the main-loop report: the conv2d generator's fp16
// default (4 of A's 16-byte vectors a thread and chunk) issues 49 more a chunk than the GEMM of
// the same tiles, the plugin's 64x64x16 w32x32 convolution (1 vector) 22 more than its batched
// matmul of the same tiles. A synchronous copy (an unpipelined loop) clamps each of its
// coordinates and tests each lane instead: the generator's unpipelined fp16 and bf16
// convolutions issue 194 and 162 more than their GEMMs.
constexpr double kGatherChunkOverhead = 15;
constexpr double kGatherOverheadPerAsyncVector = 8.5;
constexpr double kGatherOverheadPerSyncVector = 41;

// Shared memory serves one 128-byte wavefront (32 banks x 4 bytes) per cycle.
constexpr double kSmemBytesPerCycle = 128;

// Fractions of the peak bandwidths in GpuSpec that kernels sustain. For L2,
// Jia et al. measured 2155 GB/s on V100 against a 3133 GB/s peak (0.69); for
// DRAM, streaming kernels reach 80-90% of HBM/GDDR peak. Erring low is cheap
// and erring high is not: an optimistic L2 bandwidth makes small,
// bandwidth-hungry tiles look free (docs/model.md, "Sensitivity").
constexpr double kSustainedL2Fraction = 0.7;
constexpr double kSustainedDramFraction = 0.85;

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

int64_t round_up(int64_t a, int64_t unit) {
    return ceil_div(a, unit) * unit;
}

double cycles_to_us(double cycles, double clock_ghz) {
    return cycles / (clock_ghz * 1e3);
}

int64_t round_up_to(int64_t a, int64_t unit) {
    return (a + unit - 1) / unit * unit;
}

std::string format(const char *fmt, ...) {
    char buf[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    return buf;
}

std::string kib(int64_t bytes) {
    if (bytes % 1024 == 0) {
        return format("%lld KiB", (long long)(bytes / 1024));
    }
    return format("%.1f KiB", bytes / 1024.0);
}

// One wave of blocks on one SM, in cycles: the three candidates for the main
// loop's time and the one that wins.
struct Wave {
    double prologue = 0, main_loop = 0, epilogue = 0;
    double compute_bound = 0, load_bw_bound = 0, latency_bound = 0;
};

// Everything about one block's main-loop iteration that does not depend on
// how many blocks share the SM.
struct Iteration {
    int64_t e = 0;        // iterations
    int d = 0;            // prefetch distance
    double load = 0;      // L: latency + transfer of one stage
    double transfer = 0;  // X: one stage at the SM's share of L2 bandwidth
    int warps = 0;        // per block
    // Per warp and iteration: cycles on its scheduler's FMA lanes, issue
    // slots on its scheduler, and its share of the SM's shared-memory pipe.
    double fma_per_warp = 0, issue_per_warp = 0, smem_per_warp = 0;
    double chain = 0;     // one warp's own dependence chain
    double c_block = 0;   // one block alone on the SM: max(throughput, chain) + barriers
    double c_stores = 0;  // store instructions per warp for its part of the C tile
    double epilogue_per_block = 0;
};

// Cycles the SM's pipes need for one iteration of `warps_on_sm` warps. A warp
// is bound to one scheduler sub-partition and its quarter of the FMA lanes,
// so the busiest scheduler (ceil(warps / schedulers) warps) sets the FMA and
// issue time; shared memory is one pipe for the whole SM.
double throughput_cycles(const Iteration &it, int64_t warps_on_sm, int schedulers) {
    const double busiest = double(ceil_div(warps_on_sm, schedulers));
    return std::max(busiest * std::max(it.fma_per_warp, it.issue_per_warp), warps_on_sm * it.smem_per_warp);
}

// The per-warp terms of one iteration of the FP32 CUDA-core kernel (docs/model.md §6).
void simt_terms(const Schedule &s, const GpuSpec &gpu, bool async, int barriers, Iteration &it) {
    const double lanes = gpu.fp32_lanes_per_sm;
    const int schedulers = gpu.schedulers_per_sm;
    const int tile_fmas = s.tm * s.tn;
    // FMA lanes: every thread does TM*TN FMAs per k step; a warp instruction
    // takes fma_cpi cycles on its scheduler's lanes (2 with 16 lanes per
    // scheduler, 1 with 32).
    const double fma_cpi = gpu.warp_size / (lanes / schedulers);
    it.fma_per_warp = double(s.kt) * tile_fmas * fma_cpi;
    // Shared-memory pipe. Threads are laid out N-fastest, so a warp covers
    // warp_cols thread columns and warp_rows thread rows; per k step it reads
    // warp_rows*TM distinct A values and warp_cols*TN distinct B values (the
    // rest are broadcasts), in at least one wavefront per load instruction. A's
    // tile keeps k innermost, as it is copied, so a thread's TM values of one k
    // step are KT apart: TM scalar loads (measured on an H200, a 64x64 t4x4
    // GEMM keeps the shared-memory pipe 83% busy, which vector A loads would
    // not). B's TN values are contiguous: vector loads. The stage's stores into
    // shared memory are shared out over the warps.
    const int warp_cols = std::min(gpu.warp_size, s.bn / s.tn);
    const int warp_rows = gpu.warp_size / warp_cols;
    const int lds_a = s.tm;
    const int lds_b = static_cast<int>(ceil_div(s.tn, kVectorWidth));
    const double wf_a = std::max<double>(lds_a, std::ceil(warp_rows * s.tm * kBytesPerElement / kSmemBytesPerCycle));
    const double wf_b = std::max<double>(lds_b, std::ceil(warp_cols * s.tn * kBytesPerElement / kSmemBytesPerCycle));
    it.smem_per_warp = double(s.kt) * (wf_a + wf_b) + s.bytes_per_stage() / (kSmemBytesPerCycle * it.warps);
    // Issue: FMAs, fragment loads, the copy (cp.async is one instruction per
    // vector; a synchronous or register-staged copy is a load and a store) and
    // the loop's own overhead; one instruction per cycle per scheduler.
    const int copy_instructions = s.copy_vectors_per_thread_per_stage() * (async ? 1 : 2);
    const int overhead = s.smem_stages >= 2 ? kLoopOverheadInstructions : kUnpipelinedLoopOverheadInstructions;
    it.issue_per_warp = double(s.kt) * (tile_fmas + lds_a + lds_b) + copy_instructions + overhead + barriers;
    // One warp's own dependence chain per k step: with one register slot it
    // must wait for its fragment loads before its FMAs; with two it loads the
    // next k step's fragments while computing this one.
    const double step_fmas = tile_fmas * fma_cpi;
    const double step =
        s.reg_stages >= 2 ? std::max(gpu.smem_latency_cycles, step_fmas) : gpu.smem_latency_cycles + step_fmas;
    it.chain = s.kt * step;
    // C: 4-wide vector stores of each thread's tile.
    it.c_stores = double(ceil_div(tile_fmas, kVectorWidth));
}

// The per-warp terms of one iteration of the tensor-core kernel (docs/model.md §6b): per
// 16-wide k step, ldmatrix.x4 of the warp's A rows and B columns, then one mma.sync per 16 x 8
// tile of the warp tile. `mma_flops` is the SM's mma.sync rate for the operands' type.
void tensor_core_terms(const Schedule &s, const GpuSpec &gpu, double mma_flops, int barriers, bool expanded,
                       Iteration &it) {
    const int schedulers = gpu.schedulers_per_sm;
    const double steps = double(s.kt) / kMmaK;
    const int tiles = s.mma_tiles_per_warp(), ldmatrix = s.ldmatrix_per_k_step();
    // Tensor cores: one per scheduler, so an mma.sync occupies its scheduler's tensor core for
    // 4096 FLOPs / (the SM's rate / schedulers) cycles: 8 on A100 and H100/H200, 32 on the
    // GeForce parts (fp32 accumulation at half the fp16 rate).
    const double mma_cpi = kMmaFlops / (mma_flops / schedulers);
    it.fma_per_warp = steps * tiles * mma_cpi;
    // Shared memory: every ldmatrix.x4 reads 4 x 128 bytes, conflict-free in swizzled tiles: 4
    // wavefronts; the stage's copies store its bytes, shared out over the warps.
    it.smem_per_warp = steps * ldmatrix * kLdmatrixWavefronts + s.bytes_per_stage() / (kSmemBytesPerCycle * it.warps);
    // Issue: the mma.sync and ldmatrix, one 16-byte cp.async per 8 halves, the loop overhead.
    const double overhead = expanded ? kTensorCoreExpandedChunkOverhead :
                                       (s.smem_stages >= 2 ? kTensorCorePipelinedChunkOverhead : 0) +
                                           kTensorCoreOverheadPerLdmatrix * steps * ldmatrix;
    it.issue_per_warp = steps * (tiles + ldmatrix) + s.copy_vectors_per_thread_per_stage() + overhead + barriers;
    it.chain = steps * tensor_core_step_cycles(s, gpu, mma_flops);
    // C: each lane's accumulators as pairs (8-byte stores).
    it.c_stores = double(ceil_div(kAccumulatorsPerTile * tiles, kAccumulatorsPerStore));
}

// The SM's mma.sync FLOPs per clock for `p`'s operands.
double mma_flops_per_clk(const Problem &p, const GpuSpec &gpu) {
    return mma_flops_per_clk(p.element, gpu);
}

Wave wave_cycles(const Iteration &it, int blocks, int schedulers) {
    Wave w;
    w.prologue = it.load;
    w.compute_bound = it.e * throughput_cycles(it, int64_t(blocks) * it.warps, schedulers);
    w.load_bw_bound = blocks * it.e * it.transfer;
    // The resident blocks start together and, sharing the SM's pipes, keep in step: they wait
    // for their tiles at the same time, so they do not hide each other's load latency, only
    // the prefetch distance does. The chain runs at the pace of the whole set's iteration.
    // (Measured on an H200: a 64x64 GEMM with 4 blocks per SM runs 1.31x faster with 3 stages
    // than with 1, which blocks hiding each other's loads would have made equal.)
    const double set_iteration = std::max(throughput_cycles(it, int64_t(blocks) * it.warps, schedulers), it.c_block);
    w.latency_bound = pipeline_chain_cycles(it.e, it.d, it.load, set_iteration) - it.load;
    w.main_loop = std::max({w.compute_bound, w.load_bw_bound, w.latency_bound});
    w.epilogue = blocks * it.epilogue_per_block + kBarrierCycles;
    return w;
}

// DRAM bytes: each operand once if A and B fit comfortably in L2 (half of it:
// C and other tenants compete); otherwise each wave of concurrently resident
// blocks re-reads the A rows and B columns it touches. Clamped between the
// unique bytes and the L2->SM traffic (a byte cannot come from DRAM more often
// than it is requested).
double estimate_dram_bytes(const Problem &p, const Schedule &s, const GpuSpec &gpu, int blocks_per_sm,
                           int64_t total_blocks, double l2_traffic) {
    // A Problem built by hand may leave the unique bytes at 0: read that as
    // dense operands.
    const double eb = element_bytes(p.element);
    const double a_bytes = p.a_bytes > 0 ? double(p.a_bytes) : eb * p.batch * p.m * p.k;
    const double b_bytes = p.b_bytes > 0 ? double(p.b_bytes) : eb * p.batch * p.k * p.n;
    const double unique = a_bytes + b_bytes + double(p.c_bytes());
    if (a_bytes + b_bytes <= gpu.l2_bytes / 2) {
        return unique;
    }
    // Blocks are launched with the N tile fastest, then the M tile, then batch.
    const int64_t gx = ceil_div(p.n, s.bn), gy = ceil_div(p.m, s.bm);
    const int64_t per_batch = gx * gy;
    const int64_t concurrent = int64_t(blocks_per_sm) * gpu.sm_count;
    const int64_t count = std::min(concurrent, total_blocks);
    const int64_t batches = std::min<int64_t>(p.batch, std::max<int64_t>(1, ceil_div(count, per_batch)));
    const int64_t rows = std::min(gy * batches, ceil_div(count, gx));
    const int64_t cols = std::min(gx, count) * batches;
    // Dense operands have a_scale = b_scale = 1; an implicit-GEMM convolution
    // re-reads input pixels across rows of its virtual A, which L2 absorbs.
    const double a_scale = a_bytes / (eb * p.batch * p.m * p.k);
    const double b_scale = b_bytes / (eb * p.batch * p.k * p.n);
    const double wave_bytes = eb * p.k * (rows * s.bm * a_scale + cols * s.bn * b_scale);
    const double waves = double(ceil_div(total_blocks, concurrent));
    const double dram = waves * wave_bytes + double(p.c_bytes());
    return std::min(std::max(dram, unique), std::max(unique, l2_traffic));
}

// The first launch limit `s` breaks on `gpu` under `options`, or "" if it
// fits. Assumes `s` is structurally valid. Fills in the register estimate and
// the occupancy as far as it gets.
std::string first_violation(const Schedule &s, const GpuSpec &gpu, const ModelOptions &options, int *regs,
                            Occupancy *occ) {
    const int threads = s.threads();
    if (s.tensor_cores && !gpu.has_mma_sync()) {
        return format("tensor cores: mma.sync.m16n8k16 needs sm_80 or later, and %s is %s", gpu.name.c_str(),
                      gpu.arch().c_str());
    }
    if (threads > gpu.max_threads_per_block) {
        return format("%d threads per block, more than the %d %s allows", threads, gpu.max_threads_per_block,
                      gpu.name.c_str());
    }
    const int64_t smem = s.smem_bytes();
    const int64_t limit = smem_limit_bytes(gpu, options.limits);
    if (smem > limit) {
        std::string msg =
            format("needs %lld B of shared memory per block (%d stages x %lld B), over the %s limit of %s on %s",
                   (long long)smem, s.smem_stages, (long long)s.bytes_per_stage(), to_string(options.limits),
                   kib(limit).c_str(), gpu.name.c_str());
        if (options.limits == RuntimeLimits::HalideDefault && smem <= gpu.smem_per_block_optin) {
            msg += format("; it would fit under the opt-in maximum of %s", kib(gpu.smem_per_block_optin).c_str());
        }
        return msg;
    }
    *regs = estimate_registers(s, gpu, options.limits);
    const int reg_limit = register_limit(gpu, options.limits);
    if (*regs > reg_limit) {
        std::string msg =
            format("needs about %d registers per thread, more than the %d %s (it would spill)", *regs, reg_limit,
                   options.limits == RuntimeLimits::HalideDefault ? "Halide's CUDA runtime lets the driver allocate" :
                                                                    "maximum");
        if (options.limits == RuntimeLimits::HalideDefault && *regs <= gpu.max_registers_per_thread) {
            msg += format("; it would fit with the opt-in (up to %d)", gpu.max_registers_per_thread);
        }
        return msg;
    }
    const int warps = s.threads() / gpu.warp_size;
    const int64_t regs_per_warp = round_up(int64_t(*regs) * gpu.warp_size, gpu.register_alloc_unit);
    if (regs_per_warp * warps > gpu.max_registers_per_block) {
        return format("needs %lld registers per block (%d threads x %lld allocated), more than the %d a block may hold",
                      (long long)(regs_per_warp * warps), threads, (long long)(regs_per_warp / gpu.warp_size),
                      gpu.max_registers_per_block);
    }
    *occ = occupancy(threads, *regs, smem, gpu);
    if (occ->blocks_per_sm <= 0) {
        return "not even one block fits on an SM";
    }
    return std::string();
}

Prediction reject(Prediction r, std::string why) {
    r.feasible = false;
    r.reason = std::move(why);
    r.bound = Bound::Infeasible;
    r.total_us = std::numeric_limits<double>::infinity();
    return r;
}

}  // namespace

// ---------------------------------------------------------------------------
// The main loop's dependence chain.

// The dependence chain of one block's main loop, in cycles, from launch to the
// end of its last iteration's compute, when tile i is issued d iterations
// before it is used (d = 0: issued after iteration i-1 has released the only
// slot), every load takes L cycles and every iteration's compute C cycles:
//   t_0 = L;  t_i = max(t_{i-1} + C, t_{i-d} + L)  (d >= 1, tiles 0..d-1 all
//   issued by the prologue at time 0);  end = t_{E-1} + C.
// The closed form below is exact for this recurrence; docs/model.md derives
// it. It is non-increasing in d, which is what makes more stages never worse.
double pipeline_chain_cycles(int64_t iterations, int d, double load, double compute) {
    const int64_t e = iterations;
    if (e <= 0) {
        return 0;
    }
    if (d == 0) {
        return e * (load + compute);
    }
    if (load <= d * compute) {
        // d iterations of compute cover one load: only the first tile waits.
        return load + e * compute;
    }
    // Latency-bound: every d-th iteration waits for a load issued d
    // iterations earlier, and the d-1 in between run back to back.
    const int64_t q = (e - 1) / d, r = (e - 1) % d;
    return load + q * load + r * compute + compute;
}

// ---------------------------------------------------------------------------
// Problems and schedules.

double Problem::flops() const {
    return 2.0 * double(batch) * double(m) * double(n) * double(k);
}

std::string Problem::to_string() const {
    std::string dims = batch > 1 ? format("%lldx", (long long)batch) : std::string();
    dims += format("%lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
    if (element != Element::F32) {
        dims += std::string(" ") + model::to_string(element);
    }
    return name.empty() ? dims : name + " (" + dims + ")";
}

int element_bytes(Element e) {
    return e == Element::F32 ? 4 : 2;
}

const char *to_string(Element e) {
    switch (e) {
    case Element::F32:
        return "f32";
    case Element::F16:
        return "f16";
    case Element::BF16:
        return "bf16";
    }
    return "?";
}

Problem make_gemm(int64_t m, int64_t n, int64_t k, Element element) {
    return make_bmm(1, m, n, k, element);
}

Problem make_bmm(int64_t batch, int64_t m, int64_t n, int64_t k, Element element) {
    Problem p;
    p.name = batch > 1 ? "bmm" : "gemm";
    p.batch = batch;
    p.m = m;
    p.n = n;
    p.k = k;
    p.element = element;
    p.a_bytes = element_bytes(element) * batch * m * k;
    p.b_bytes = element_bytes(element) * batch * k * n;
    return p;
}

Problem make_conv2d_nhwc(const Conv2dShape &c, Element element) {
    Problem p;
    p.name = "conv2d";
    p.batch = 1;
    p.m = c.n * c.out_h() * c.out_w();
    p.n = c.co;
    p.k = c.kh * c.kw * c.ci;
    p.element = element;
    p.a_bytes = element_bytes(element) * c.n * c.h * c.w * c.ci;  // the input, not its im2col
    p.gathered_a = true;
    p.b_bytes = element_bytes(element) * c.kh * c.kw * c.ci * c.co;
    p.m_extents = {c.out_w(), c.out_h(), c.n};
    return p;
}

namespace {

/** The first factorization of `rows` over extents[d...] as m_tile_shape lays it out (`step`:
 * what the first factor must be a multiple of), widest first, among those that tile the extents
 * exactly when `exact`, else among any; nothing if there is none. */
std::optional<std::vector<int>> factor_m_tile(int rows, int step, const std::vector<int64_t> &extents, size_t d,
                                              bool exact) {
    if (d + 1 == extents.size()) {
        if (rows % step || (exact && extents[d] % rows)) return std::nullopt;
        return std::vector<int>{rows};
    }
    for (int f = rows; f >= step; f /= 2) {
        if (f % step || rows % f) continue;
        if (exact ? extents[d] % f != 0 : f > extents[d] && f != step) continue;
        if (std::optional<std::vector<int>> rest = factor_m_tile(rows / f, 1, extents, d + 1, exact)) {
            rest->insert(rest->begin(), f);
            return rest;
        }
    }
    return std::nullopt;
}

}  // namespace

std::vector<int> m_tile_shape(const Schedule &s, const std::vector<int64_t> &extents) {
    const size_t tiled = s.tensor_cores ? extents.size() : std::min<size_t>(extents.size(), 2);
    if (tiled == 0 || s.bm <= 0) return {};
    const std::vector<int64_t> dims(extents.begin(), extents.begin() + tiled);
    const int step = s.tensor_cores ? 1 : std::max(1, s.tm);
    // Exact factors, else any: the widest first along the first dimensions. (The fewest tiles
    // would make the 8x14x14 convolution's 64-row tile 8 x 2 x 4 pixels, whose warp tiles of 32
    // rows cross images: its accumulators then stayed a whole block tile, 4096 floats, rather
    // than each lane's window.)
    std::optional<std::vector<int>> tile = factor_m_tile(s.bm, step, dims, 0, true);
    if (!tile) tile = factor_m_tile(s.bm, step, dims, 0, false);
    return tile ? *tile : std::vector<int>{};
}

int64_t m_block_tiles(const Problem &p, const Schedule &s) {
    const std::vector<int> tile = m_tile_shape(s, p.m_extents);
    if (tile.empty()) return p.batch * ceil_div(p.m, s.bm);
    int64_t tiles = 1, rows = 1;
    for (size_t i = 0; i < p.m_extents.size(); i++) {
        tiles *= i < tile.size() ? ceil_div(p.m_extents[i], tile[i]) : p.m_extents[i];
        rows *= p.m_extents[i];
    }
    return tiles * std::max<int64_t>(1, p.batch * p.m / rows);
}

int64_t Schedule::slot_bytes_per_stage() const {
    if (!tensor_cores) {
        return bytes_per_stage();
    }
    const int64_t a = int64_t(element_bytes()) * kt * bm, b = int64_t(element_bytes()) * kt * bn;
    return round_up_to(a, kSwizzlePeriodBytes) + round_up_to(b, kSwizzlePeriodBytes);
}

std::string Schedule::to_string() const {
    return format("%dx%dx%d %c%dx%d S%d R%d", bm, bn, kt, tensor_cores ? 'w' : 't', tm, tn, smem_stages, reg_stages);
}

bool structurally_valid(const Schedule &s, std::string *why) {
    auto fail = [&](std::string msg) {
        if (why) {
            *why = std::move(msg);
        }
        return false;
    };
    if (s.bm <= 0 || s.bn <= 0 || s.kt <= 0 || s.tm <= 0 || s.tn <= 0) {
        return fail("tile sizes must be positive");
    }
    if (s.smem_stages < 1) {
        return fail("needs at least one shared stage");
    }
    if (s.reg_stages < 1 || s.reg_stages > 2) {
        return fail("register stages must be 1 or 2");
    }
    if (s.bm % s.tm != 0 || s.bn % s.tn != 0) {
        return fail(format("%s tile %dx%d does not divide block tile %dx%d", s.tensor_cores ? "warp" : "thread", s.tm,
                           s.tn, s.bm, s.bn));
    }
    if (s.tensor_cores) {
        // A warp tile of whole 16 x 16 tiles: ldmatrix.x4 reads A in 16 x 16 and B in pairs of
        // 16 x 8; a chunk of whole 16-wide k steps.
        if (s.tm % 16 != 0 || s.tn % 16 != 0 || s.kt % kMmaK != 0) {
            return fail(
                format("tensor cores: warp tile %dx%d and k tile %d must be multiples of 16", s.tm, s.tn, s.kt));
        }
    }
    const int threads = s.threads();
    if (threads < 32 || threads > 1024 || threads % 32 != 0) {
        return fail(format("%d threads: need a multiple of 32 between 32 and 1024", threads));
    }
    // The copies move 4-wide vectors along the contiguous dimension of each tile (k for A,
    // n for B); a round of copies may leave threads idle (the schedules guard it).
    if (s.kt % kVectorWidth != 0 || s.bn % kVectorWidth != 0) {
        return fail(
            format("the %dx%d and %dx%d tiles cannot be copied in whole 4-wide vectors", s.kt, s.bm, s.kt, s.bn));
    }
    return true;
}

// ---------------------------------------------------------------------------
// Resources.

bool fits(const Schedule &s, const GpuSpec &gpu, const ModelOptions &options, std::string *why) {
    std::string why_not;
    if (structurally_valid(s, &why_not)) {
        int regs = 0;
        Occupancy occ;
        why_not = first_violation(s, gpu, options, &regs, &occ);
    }
    if (why) {
        *why = why_not;
    }
    return why_not.empty();
}

int64_t smem_limit_bytes(const GpuSpec &gpu, RuntimeLimits limits) {
    return limits == RuntimeLimits::OptIn ? gpu.smem_per_block_optin : gpu.smem_per_block_default;
}

int register_limit(const GpuSpec &gpu, RuntimeLimits limits) {
    return limits == RuntimeLimits::OptIn ? gpu.max_registers_per_thread :
                                            std::min(kHalideRuntimeRegisterCap, gpu.max_registers_per_thread);
}

const char *to_string(RuntimeLimits limits) {
    return limits == RuntimeLimits::OptIn ? "opt-in maximum" : "Halide runtime default";
}

namespace {

/** What a tensor-core schedule's main loop streams to its mma.sync, under `limits`. */
TensorCoreStream stream_of(const Schedule &s, const GpuSpec &gpu, RuntimeLimits limits) {
    return {lane_accumulators(s.tm, s.tn), s.reg_stages, register_limit(gpu, limits)};
}

}  // namespace

void TensorCoreStream::merge(const TensorCoreStream &other) {
    lane_accumulators = std::max(lane_accumulators, other.lane_accumulators);
    fragment_stages = std::max(fragment_stages, other.fragment_stages);
    register_limit = other.register_limit;
}

int lane_accumulators(int warp_m, int warp_n) {
    return kAccumulatorsPerTile * (warp_m / kMmaM) * (warp_n / kMmaN);
}

int expanded_chunks(int period, const TensorCoreStream &stream, bool prefetch_in_place, std::optional<int64_t> trips) {
    const bool one_group = trips && *trips <= period;
    const bool room = stream.lane_accumulators <= kFewLaneAccumulators && stream.fragment_stages <= 1 &&
                      stream.register_limit > kHalideRuntimeRegisterCap;
    const int most = room ? kMaxExpandedChunksOfFewAccumulators : kMaxExpandedChunks;
    const bool expands = stream.lane_accumulators > 0 && !prefetch_in_place && period <= most;
    return expands && !one_group ? period : 1;
}

double mma_flops_per_clk(Element element, const GpuSpec &gpu) {
    return element == Element::BF16 ? gpu.mma_bf16_flops_per_clk_per_sm : gpu.mma_f16_flops_per_clk_per_sm;
}

double tensor_core_step_cycles(const Schedule &s, const GpuSpec &gpu, double mma_flops) {
    // Its tiles' mma.sync back to back on its tensor core (one per scheduler), and at least the
    // latency of one mma.sync on the accumulators the previous step updated; with one register
    // slot the fragments' ldmatrix comes first, with two it overlaps the previous step's.
    const double mma_cpi = kMmaFlops / (mma_flops / gpu.schedulers_per_sm);
    const double step_mma = std::max(s.mma_tiles_per_warp() * mma_cpi, gpu.mma_latency_cycles);
    return s.reg_stages >= 2 ? std::max(gpu.smem_latency_cycles, step_mma) : gpu.smem_latency_cycles + step_mma;
}

int estimate_registers(const Schedule &s, const GpuSpec &gpu, RuntimeLimits limits) {
    if (s.tensor_cores) {
        // Per lane: c0..c3 of every 16 x 8 tile; per k step of fragments held, A's ldmatrix.x4
        // (4 per 16 rows) and B's (2 per 8 columns). ptxas unrolls a chunk's k steps and, with
        // one register stage, loads the next step's fragments while the current one's mma.sync
        // run (two steps held where a chunk has two or more); with two, the pass's prefetch of
        // the next chunk's first step comes on top of the chunk's steps. Tensor cores need
        // sm_80, so copies are cp.async: no staging registers.
        const int accumulators = lane_accumulators(s.tm, s.tn);
        const int k_steps = s.kt / kMmaK;
        const int steps_held = s.reg_stages > 1 ? k_steps + 1 : std::min(k_steps, 2);
        const double held = s.reg_stages > 1 ? kTensorCoreFragmentsHeldTwoStages : kTensorCoreFragmentsHeldOneStage;
        const int fragments = int(std::lround(held * steps_held * (4 * (s.tm / kMmaM) + 2 * (s.tn / kMmaN))));
        const int overhead =
            int(std::lround(kTensorCoreExtraPerAccumulator * accumulators)) + kTensorCoreAddressRegisters;
        // A loop expanded past two slots (whatever its trip count, which fits() does not know).
        const bool expanded = expanded_chunks(s.smem_stages, stream_of(s, gpu, limits), false, std::nullopt) > 2;
        const int expansion = expanded ? kExpandedSlotRegisters : 0;
        return accumulators + fragments + overhead + expansion;
    }
    const int accumulators = s.tm * s.tn;
    const int fragments = s.reg_stages * (s.tm + s.tn);
    // Without cp.async a prefetched stage sits in registers from its global
    // load until the iteration's end, when it is stored to shared memory.
    const bool register_staged = !gpu.has_async_copy && s.smem_stages >= 2;
    const int staging = register_staged ? s.elements_per_thread_per_stage() : 0;
    return accumulators + fragments + kAddressAndLoopRegisters + staging;
}

const char *to_string(OccupancyLimiter l) {
    switch (l) {
    case OccupancyLimiter::None:
        return "nothing fits";
    case OccupancyLimiter::SharedMemory:
        return "shared memory";
    case OccupancyLimiter::Registers:
        return "registers";
    case OccupancyLimiter::Threads:
        return "threads";
    case OccupancyLimiter::BlockSlots:
        return "block slots";
    }
    return "?";
}

Occupancy occupancy(int threads, int regs_per_thread, int64_t smem_per_block, const GpuSpec &gpu) {
    Occupancy o;
    const int warps = static_cast<int>(ceil_div(threads, gpu.warp_size));
    if (warps <= 0) {
        return o;
    }
    // Registers go to warps in allocation units, and each warp's registers
    // come from the file of the scheduler sub-partition it runs on.
    const int64_t regs_per_warp = round_up(int64_t(regs_per_thread) * gpu.warp_size, gpu.register_alloc_unit);
    o.regs_allocated = static_cast<int>(regs_per_warp / gpu.warp_size);
    if (regs_per_warp > 0) {
        const int64_t per_partition = gpu.registers_per_sm / gpu.schedulers_per_sm;
        const int64_t warps_per_sm = (per_partition / regs_per_warp) * gpu.schedulers_per_sm;
        o.by_registers = static_cast<int>(warps_per_sm / warps);
    } else {
        o.by_registers = gpu.max_blocks_per_sm;
    }
    // The driver reserves some shared memory for every resident block.
    const int64_t smem = round_up(smem_per_block + gpu.smem_reserved_per_block, gpu.smem_alloc_unit);
    o.by_smem = smem > 0 ? static_cast<int>(gpu.smem_per_sm / smem) : gpu.max_blocks_per_sm;
    o.by_threads = gpu.max_warps_per_sm() / warps;
    o.by_slots = gpu.max_blocks_per_sm;

    o.blocks_per_sm = std::min({o.by_smem, o.by_registers, o.by_threads, o.by_slots});
    if (o.blocks_per_sm <= 0) {
        o.blocks_per_sm = 0;
        o.limiter = OccupancyLimiter::None;
    } else if (o.by_smem == o.blocks_per_sm) {
        o.limiter = OccupancyLimiter::SharedMemory;
    } else if (o.by_registers == o.blocks_per_sm) {
        o.limiter = OccupancyLimiter::Registers;
    } else if (o.by_threads == o.blocks_per_sm) {
        o.limiter = OccupancyLimiter::Threads;
    } else {
        o.limiter = OccupancyLimiter::BlockSlots;
    }
    o.fraction = double(o.blocks_per_sm * warps) / gpu.max_warps_per_sm();
    return o;
}

int registers_for_blocks(int threads, int blocks, const GpuSpec &gpu) {
    const int step = gpu.register_alloc_unit / gpu.warp_size;
    if (threads <= 0 || blocks <= 0) return gpu.max_registers_per_thread;
    // The most a thread can hold, then down through the allocation steps below it.
    for (int r = gpu.max_registers_per_thread; r > 0; r = (r - 1) / step * step) {
        if (occupancy(threads, r, 0, gpu).by_registers >= blocks) return r;
    }
    return 0;
}

const char *to_string(Bound b) {
    switch (b) {
    case Bound::Infeasible:
        return "infeasible";
    case Bound::SmCompute:
        return "SM compute throughput";
    case Bound::SmLoadBandwidth:
        return "the SM's share of L2 bandwidth";
    case Bound::LoadLatency:
        return "exposed load latency";
    case Bound::BlockChain:
        return "one block's own instruction chain";
    case Bound::DeviceMemory:
        return "the device memory floor";
    case Bound::DevicePeak:
        return "the compute peak floor";
    }
    return "?";
}

// ---------------------------------------------------------------------------
// The model.

Prediction predict(const Problem &p, const Schedule &s, const GpuSpec &gpu, const ModelOptions &options) {
    Prediction r;
    r.schedule = s;
    r.gpu_name = gpu.name;
    r.clock_ghz = gpu.clock_ghz;
    r.threads = s.threads();
    r.smem_per_block = s.smem_bytes();
    r.limits = options.limits;
    r.smem_limit = smem_limit_bytes(gpu, options.limits);
    r.register_limit = register_limit(gpu, options.limits);

    if (p.batch <= 0 || p.m <= 0 || p.n <= 0 || p.k <= 0) {
        return reject(r, "the problem has a non-positive dimension");
    }
    std::string why;
    if (!structurally_valid(s, &why)) {
        return reject(r, why);
    }
    if (s.tensor_cores && p.element == Element::F32) {
        return reject(r, "tensor cores (mma.sync.m16n8k16) multiply fp16 or bf16 operands, and this problem's are f32");
    }

    // --- Feasibility: the limits a launch would hit. ---
    why = first_violation(s, gpu, options, &r.regs_estimated, &r.occ);
    if (!why.empty()) {
        return reject(r, why);
    }
    const int warps = r.threads / gpu.warp_size;
    r.feasible = true;

    // --- Waves. ---
    r.total_blocks = m_block_tiles(p, s) * ceil_div(p.n, s.bn);
    const int64_t concurrent = int64_t(r.occ.blocks_per_sm) * gpu.sm_count;
    r.waves = double(r.total_blocks) / double(concurrent);
    r.full_waves = r.total_blocks / concurrent;
    const int64_t tail = r.total_blocks % concurrent;
    r.tail_blocks_per_sm = static_cast<int>(ceil_div(tail, gpu.sm_count));

    // --- One iteration of one block. ---
    Iteration it;
    it.e = ceil_div(p.k, s.kt);
    const bool async = gpu.has_async_copy && s.smem_stages >= 2;
    if (s.smem_stages == 1) {
        it.d = 0;
    } else if (gpu.has_async_copy) {
        it.d = s.smem_stages - 1;
    } else {
        it.d = 1;  // register-staged: the staging registers hold one tile
    }

    it.warps = warps;
    const int barriers = barriers_per_iteration(s.smem_stages);
    if (s.tensor_cores) {
        // The whole-tile kernels' copies of tensor-core tiles are cp.async (or staged through
        // registers), never in place.
        const bool expanded = expanded_chunks(s.smem_stages, stream_of(s, gpu, options.limits), false, it.e) > 1;
        tensor_core_terms(s, gpu, mma_flops_per_clk(p, gpu), barriers, expanded, it);
    } else {
        simt_terms(s, gpu, async, barriers, it);
    }
    if (p.gathered_a) {
        const double per_vector = async ? kGatherOverheadPerAsyncVector : kGatherOverheadPerSyncVector;
        it.issue_per_warp += kGatherChunkOverhead + per_vector * s.a_copy_vectors_per_thread_per_stage();
    }
    const int schedulers = gpu.schedulers_per_sm;
    it.c_block = std::max(throughput_cycles(it, warps, schedulers), it.chain) + barriers * kBarrierCycles;
    // Load: latency plus the stage's transfer at the SM's share of L2 bandwidth.
    const double l2_per_sm = kSustainedL2Fraction * gpu.l2_bytes_per_clk_per_sm();
    it.transfer = s.bytes_per_stage() / l2_per_sm;
    it.load = gpu.global_latency_cycles + it.transfer;
    // Epilogue per block: write the BM x BN tile of C (bandwidth, or the issue of its stores if
    // that is slower).
    const double c_tile_bytes = double(kBytesPerElement) * s.bm * s.bn;
    it.epilogue_per_block = std::max(c_tile_bytes / l2_per_sm, double(ceil_div(warps, schedulers)) * it.c_stores);

    r.k_iterations = it.e;
    r.prefetch_distance = it.d;
    r.load_cycles = it.load;
    r.load_transfer_cycles = it.transfer;
    r.compute_cycles = it.c_block;
    const double busiest = double(ceil_div(warps, schedulers));
    r.fma_cycles = busiest * it.fma_per_warp;
    r.smem_cycles = warps * it.smem_per_warp;
    r.issue_cycles = busiest * it.issue_per_warp;
    r.issue_per_warp = it.issue_per_warp;
    r.warp_chain_cycles = it.chain;

    // --- Waves of blocks. ---
    const Wave full = wave_cycles(it, r.occ.blocks_per_sm, schedulers);
    Wave last;
    if (r.tail_blocks_per_sm > 0) {
        last = wave_cycles(it, r.tail_blocks_per_sm, schedulers);
    }
    const double fw = double(r.full_waves);
    const double tw = r.tail_blocks_per_sm > 0 ? 1.0 : 0.0;
    r.prologue_us = cycles_to_us(fw * full.prologue + tw * last.prologue, gpu.clock_ghz);
    r.main_loop_us = cycles_to_us(fw * full.main_loop + tw * last.main_loop, gpu.clock_ghz);
    r.epilogue_us = cycles_to_us(fw * full.epilogue + tw * last.epilogue, gpu.clock_ghz);

    // Exposure, from the representative wave (a full one if there is one).
    const Wave &rep = r.full_waves > 0 ? full : last;
    const double compute_only = std::max(rep.compute_bound, it.e * it.c_block);
    r.exposed_load_cycles = std::max(0.0, rep.main_loop - compute_only) / double(it.e);

    // --- Floors. ---
    r.l2_traffic_bytes = double(r.total_blocks) * double(it.e) * double(s.bytes_per_stage()) + double(p.c_bytes());
    r.dram_traffic_bytes = estimate_dram_bytes(p, s, gpu, r.occ.blocks_per_sm, r.total_blocks, r.l2_traffic_bytes);
    r.memory_floor_us = std::max(r.dram_traffic_bytes / (kSustainedDramFraction * gpu.dram_gbps * 1e3),
                                 r.l2_traffic_bytes / (kSustainedL2Fraction * gpu.l2_gbps * 1e3));
    r.compute_floor_us = s.tensor_cores ? p.flops() / (mma_flops_per_clk(p, gpu) * gpu.sm_count * gpu.clock_ghz * 1e3) :
                                          p.flops() / (gpu.fp32_tflops * 1e6);

    const double pipeline_us = r.prologue_us + r.main_loop_us + r.epilogue_us;
    r.total_us = std::max({pipeline_us, r.memory_floor_us, r.compute_floor_us});
    if (r.total_us == pipeline_us) {
        if (rep.main_loop == rep.compute_bound) {
            r.bound = Bound::SmCompute;
        } else if (rep.main_loop == rep.load_bw_bound) {
            r.bound = Bound::SmLoadBandwidth;
        } else if (r.exposed_load_cycles > 0) {
            r.bound = Bound::LoadLatency;
        } else {
            r.bound = Bound::BlockChain;
        }
    } else if (r.total_us == r.memory_floor_us) {
        r.bound = Bound::DeviceMemory;
    } else {
        r.bound = Bound::DevicePeak;
    }
    return r;
}

std::string Prediction::explain() const {
    const Schedule &s = schedule;
    std::string out = format("%s on %s: ", s.to_string().c_str(), gpu_name.c_str());
    if (!feasible) {
        return out + "infeasible: " + reason + ".";
    }
    if (s.tensor_cores) {
        out +=
            format("%d warps of %dx%d on tensor cores (%d mma.sync and %d ldmatrix.x4 per warp and 16-wide k step), ",
                   s.warps(), s.tm, s.tn, s.mma_tiles_per_warp(), s.ldmatrix_per_k_step());
    }
    out += format("%d threads, %s of shared memory per block (%d x %lld B; limit %s, %s) and %d registers per thread "
                  "(%d allocated; limit %d). ",
                  threads, kib(smem_per_block).c_str(), s.smem_stages, (long long)s.slot_bytes_per_stage(),
                  kib(smem_limit).c_str(), to_string(limits), regs_estimated, occ.regs_allocated, register_limit);
    out += format(
        "Occupancy %d blocks/SM (%.0f%% of warps), limited by %s (smem allows %d, registers %d, threads %d, slots %d); "
        "%lld blocks make %.2f waves. ",
        occ.blocks_per_sm, 100.0 * occ.fraction, to_string(occ.limiter), occ.by_smem, occ.by_registers, occ.by_threads,
        occ.by_slots, (long long)total_blocks, waves);
    out +=
        format("The main loop runs %lld iteration%s; one loads a stage in %.0f cycles (%.0f of them transfer) "
               "and computes it in %.0f (%s %.0f, shared memory %.0f, issue %.0f, warp chain %.0f, plus barriers); ",
               (long long)k_iterations, k_iterations == 1 ? "" : "s", load_cycles, load_transfer_cycles, compute_cycles,
               s.tensor_cores ? "mma.sync" : "FMA", fma_cycles, smem_cycles, issue_cycles, warp_chain_cycles);
    if (exposed_load_cycles > 0) {
        out += format("with prefetch distance %d, %.0f cycles of load per iteration stay exposed. ", prefetch_distance,
                      exposed_load_cycles);
    } else {
        const int resident = full_waves > 0 ? occ.blocks_per_sm : tail_blocks_per_sm;
        out += format("prefetch distance %d hides the loads (of %d resident block%s per SM, in step). ",
                      prefetch_distance, resident, resident == 1 ? "" : "s");
    }
    out += format("Prologue %.2f us + main loop %.2f us + epilogue %.2f us; floors: memory %.2f us "
                  "(%.1f MB DRAM, %.1f MB L2), compute %.2f us. Predicted %.2f us, bound by %s.",
                  prologue_us, main_loop_us, epilogue_us, memory_floor_us, dram_traffic_bytes / 1e6,
                  l2_traffic_bytes / 1e6, compute_floor_us, total_us, to_string(bound));
    return out;
}

}  // namespace model
}  // namespace alcop
