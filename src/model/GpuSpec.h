#ifndef ALCOP_MODEL_GPU_SPEC_H
#define ALCOP_MODEL_GPU_SPEC_H

/** \file
 * Descriptions of the NVIDIA GPUs the performance model knows about.
 *
 * What it does: holds, for each GPU, the numbers the analytical model in
 * CostModel.h needs: resource limits that decide occupancy and feasibility
 * (shared memory, registers, threads, block slots), throughputs that decide
 * the compute and memory floors (FP32 FMA lanes, DRAM and L2 bandwidth) and
 * latencies that decide how much prefetching a pipelined main loop needs
 * (global-load and shared-memory latency).
 *
 * Assumes: datasheet numbers at the boost clock. Sustained clocks under a
 * long GEMM are often lower (power limits), so absolute predicted times are
 * optimistic; rankings between schedules on one GPU are what the model is for.
 * L2 bandwidth and the two latencies are not published by NVIDIA for every
 * part; where they are estimates, docs/model.md says so and how they were made.
 *
 * Guarantees: every GpuSpec returned by find_gpu()/default_gpu()/all_gpus()
 * lives for the whole program (they are static tables), and the derived
 * quantities below (lanes, bytes per clock) are consistent with the fields.
 */

#include <cstdint>
#include <string>
#include <vector>

namespace alcop {
namespace model {

struct GpuSpec {
    /** Short canonical name used for lookup and in reports: "H200", "A100", ... */
    std::string name;
    /** The exact product the numbers describe, e.g. "NVIDIA H200 SXM 141GB". */
    std::string product;

    /** Compute capability as major*10 + minor (70, 80, 86, 89, 90). */
    int compute_capability = 0;
    /** cp.async (global->shared without passing through registers): sm_80+. */
    bool has_async_copy = false;

    int sm_count = 0;
    /** Boost clock in GHz. Cycles are converted to time with this clock. */
    double clock_ghz = 0;

    int warp_size = 32;
    /** Warp schedulers (= register file sub-partitions) per SM. 4 on all parts here. */
    int schedulers_per_sm = 4;
    int max_threads_per_sm = 0;
    int max_threads_per_block = 1024;
    int max_blocks_per_sm = 0;

    /** 32-bit registers per SM and the most one block may hold. */
    int registers_per_sm = 65536;
    int max_registers_per_block = 65536;
    int max_registers_per_thread = 255;
    /** Registers are handed to warps in units of this many (256 = 8 per thread). */
    int register_alloc_unit = 256;

    /** Shared memory per SM at the largest carveout, in bytes. */
    int64_t smem_per_sm = 0;
    /** Per-block dynamic shared memory without any opt-in (48 KiB on every CUDA GPU). */
    int64_t smem_per_block_default = 48 * 1024;
    /** Per-block maximum after cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES). */
    int64_t smem_per_block_optin = 0;
    /** Shared memory the driver reserves per resident block (1 KiB on sm_80+, 0 on sm_70). */
    int64_t smem_reserved_per_block = 0;
    /** Shared memory is allocated to blocks in units of this many bytes. */
    int64_t smem_alloc_unit = 128;

    int64_t l2_bytes = 0;
    /** DRAM bandwidth (datasheet), GB/s with G = 1e9. */
    double dram_gbps = 0;
    /** L2 -> SM read bandwidth over the whole chip, GB/s (see docs/model.md for sources). */
    double l2_gbps = 0;

    /** Latency of a global load that misses L1, in core cycles (microbenchmark estimate). */
    double global_latency_cycles = 0;
    /** Latency of a shared-memory load, in core cycles (microbenchmark estimate). */
    double smem_latency_cycles = 0;

    /** FP32 FMA lanes per SM (an FMA counts as 2 FLOPs). */
    int fp32_lanes_per_sm = 0;
    /** Datasheet FP32 peak in TFLOP/s; equals 2 * lanes * SMs * clock. */
    double fp32_tflops = 0;
    /** Datasheet dense FP16-input, FP32-accumulate tensor-core peak in TFLOP/s (on Hopper the
     * rate of wgmma, which our kernels do not use; see mma_f16_flops_per_clk_per_sm). */
    double fp16_mma_tflops = 0;
    /** What mma.sync.aligned.m16n8k16 (fp16 or bf16 operands, fp32 accumulation) sustains, in
     * dense FLOPs per core clock per SM (one instruction is 2 * 16 * 8 * 16 = 4096 FLOPs): 0
     * where the instruction does not exist (sm_70). On Hopper this is about half of the dense
     * peak, which only wgmma reaches. docs/model.md gives the source of each number. */
    int mma_f16_flops_per_clk_per_sm = 0;
    int mma_bf16_flops_per_clk_per_sm = 0;
    /** Cycles from one mma.sync issuing to a dependent one (the same accumulators) issuing:
     * a microbenchmark estimate. */
    double mma_latency_cycles = 0;

    // Derived quantities.
    int max_warps_per_sm() const {
        return max_threads_per_sm / warp_size;
    }
    /** L2 bytes one SM receives per core cycle when every SM streams at once. */
    double l2_bytes_per_clk_per_sm() const;
    /** DRAM bytes per core cycle for the whole chip. */
    double dram_bytes_per_clk() const;
    /** Whether mma.sync.m16n8k16 with fp16 / bf16 operands exists here (sm_80+). */
    bool has_mma_sync() const {
        return mma_f16_flops_per_clk_per_sm > 0;
    }
    /** "sm_90" etc. */
    std::string arch() const;
};

/** The GPU called `name`, case-insensitively and ignoring spaces, '-' and '_'
 * ("h200", "A100", "RTX 3090", "rtx_4090", "3090", "NVIDIA V100" all work).
 * Returns nullptr for an unknown name. */
const GpuSpec *find_gpu(std::string name);

/** The GPU CUDA targets are modelled for when none is named: the H200. */
const GpuSpec &default_gpu();

/** Every GPU described, in a fixed order (V100, A100, RTX3090, RTX4090, H100, H200). */
const std::vector<GpuSpec> &all_gpus();

}  // namespace model
}  // namespace alcop

#endif
