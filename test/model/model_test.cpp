// Tests for the analytical performance model and the candidate search.
//
// The numbers asserted here are computed by hand in the comments next to
// them, from the GPU table in src/model/GpuSpec.cpp and the formulas in
// docs/model.md, so a change to either shows up as a failing hand calculation
// rather than as a silently different ranking.

#include "model/CostModel.h"
#include "model/GpuSpec.h"
#include "model/Search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace alcop::model;

namespace {

const GpuSpec &gpu(const char *name) {
    const GpuSpec *g = find_gpu(name);
    EXPECT_NE(g, nullptr) << name;
    return *g;
}

Schedule sched(int bm, int bn, int kt, int tm, int tn, int stages, int reg_stages) {
    Schedule s;
    s.bm = bm;
    s.bn = bn;
    s.kt = kt;
    s.tm = tm;
    s.tn = tn;
    s.smem_stages = stages;
    s.reg_stages = reg_stages;
    return s;
}

ModelOptions opt_in() {
    ModelOptions o;
    o.limits = RuntimeLimits::OptIn;
    return o;
}

}  // namespace

// ---------------------------------------------------------------------------
// GPU descriptions.

TEST(GpuSpec, LookupByNameIsCaseInsensitive) {
    EXPECT_EQ(find_gpu("h200")->name, "H200");
    EXPECT_EQ(find_gpu("H200")->name, "H200");
    EXPECT_EQ(find_gpu("a100")->name, "A100");
    EXPECT_EQ(find_gpu("A100-SXM4")->name, "A100");
    EXPECT_EQ(find_gpu("h100")->name, "H100");
    EXPECT_EQ(find_gpu("V100")->name, "V100");
    EXPECT_EQ(find_gpu("NVIDIA Tesla V100")->name, "V100");
    EXPECT_EQ(find_gpu("RTX 3090")->name, "RTX3090");
    EXPECT_EQ(find_gpu("rtx3090")->name, "RTX3090");
    EXPECT_EQ(find_gpu("GeForce RTX-4090")->name, "RTX4090");
    EXPECT_EQ(find_gpu("rtx_4090")->name, "RTX4090");
    EXPECT_EQ(find_gpu("4090")->name, "RTX4090");
    EXPECT_EQ(find_gpu("b200"), nullptr);
    EXPECT_EQ(find_gpu("a10"), nullptr);
    EXPECT_EQ(find_gpu(""), nullptr);
}

TEST(GpuSpec, DefaultIsH200) {
    EXPECT_EQ(default_gpu().name, "H200");
    EXPECT_EQ(&default_gpu(), find_gpu("h200"));
}

TEST(GpuSpec, TableIsConsistent) {
    const std::vector<GpuSpec> &gpus = all_gpus();
    ASSERT_EQ(gpus.size(), 6u);
    for (const GpuSpec &g : gpus) {
        SCOPED_TRACE(g.name);
        // Datasheet FP32 peak = 2 FLOPs x lanes x SMs x clock, within rounding.
        const double derived = 2.0 * g.fp32_lanes_per_sm * g.sm_count * g.clock_ghz / 1e3;
        EXPECT_NEAR(derived, g.fp32_tflops, 0.01 * g.fp32_tflops);
        EXPECT_EQ(g.has_async_copy, g.compute_capability >= 80);
        EXPECT_EQ(g.smem_per_block_default, 48 * 1024);
        EXPECT_LE(g.smem_per_block_optin + g.smem_reserved_per_block, g.smem_per_sm);
        EXPECT_EQ(g.warp_size, 32);
        EXPECT_EQ(g.max_threads_per_block, 1024);
        EXPECT_EQ(g.register_alloc_unit, 256);
        EXPECT_EQ(g.max_registers_per_thread, 255);
        EXPECT_GT(g.dram_gbps, 0);
        EXPECT_GT(g.l2_gbps, g.dram_gbps);
        EXPECT_GT(g.global_latency_cycles, g.smem_latency_cycles);
        EXPECT_GT(g.fp16_mma_tflops, g.fp32_tflops);
    }
    // The opt-in maxima the Halide runtime never asks for.
    EXPECT_EQ(gpu("h200").smem_per_block_optin, 227 * 1024);
    EXPECT_EQ(gpu("h100").smem_per_block_optin, 227 * 1024);
    EXPECT_EQ(gpu("a100").smem_per_block_optin, 163 * 1024);
    EXPECT_EQ(gpu("rtx3090").smem_per_block_optin, 99 * 1024);
    EXPECT_EQ(gpu("rtx4090").smem_per_block_optin, 99 * 1024);
    EXPECT_EQ(gpu("v100").smem_per_block_optin, 96 * 1024);
    EXPECT_FALSE(gpu("v100").has_async_copy);
    EXPECT_EQ(gpu("h200").arch(), "sm_90");
}

// ---------------------------------------------------------------------------
// Problems and schedules.

TEST(Problem, Builders) {
    Problem g = make_gemm(1024, 768, 768);
    EXPECT_EQ(g.batch, 1);
    EXPECT_EQ(g.a_bytes, 4 * 1024 * 768);
    EXPECT_DOUBLE_EQ(g.flops(), 2.0 * 1024 * 768 * 768);

    Problem b = make_bmm(12, 512, 512, 64);
    EXPECT_EQ(b.batch, 12);
    EXPECT_EQ(b.b_bytes, 4 * 12 * 64 * 512);
    EXPECT_EQ(b.c_bytes(), 4 * 12 * 512 * 512);

    // ResNet-50 conv2_x 3x3: 56x56x64 -> 64, stride 1, pad 1, batch 64.
    Conv2dShape c;
    c.n = 64, c.h = 56, c.w = 56, c.ci = 64, c.co = 64, c.kh = 3, c.kw = 3, c.stride = 1, c.pad = 1;
    Problem cv = make_conv2d_nhwc(c);
    EXPECT_EQ(cv.m, 64 * 56 * 56);  // (56 + 2 - 3)/1 + 1 = 56
    EXPECT_EQ(cv.n, 64);
    EXPECT_EQ(cv.k, 3 * 3 * 64);
    EXPECT_EQ(cv.a_bytes, 4 * 64 * 56 * 56 * 64);  // the input tensor, not its im2col
    EXPECT_EQ(cv.b_bytes, 4 * 3 * 3 * 64 * 64);

    // The 7x7/2 stem: (224 + 6 - 7)/2 + 1 = 112.
    Conv2dShape stem;
    stem.n = 1, stem.h = 224, stem.w = 224, stem.ci = 3, stem.co = 64, stem.kh = 7, stem.kw = 7;
    stem.stride = 2, stem.pad = 3;
    EXPECT_EQ(make_conv2d_nhwc(stem).m, 112 * 112);
    EXPECT_EQ(make_conv2d_nhwc(stem).k, 7 * 7 * 3);
}

TEST(Schedule, DerivedQuantities) {
    Schedule s = sched(128, 128, 8, 8, 8, 3, 1);
    EXPECT_EQ(s.threads(), 256);                      // (128/8) * (128/8)
    EXPECT_EQ(s.bytes_per_stage(), 8192);             // 4 * 8 * (128 + 128)
    EXPECT_EQ(s.smem_bytes(), 24576);                 // 3 * 8192
    EXPECT_EQ(s.elements_per_thread_per_stage(), 8);  // 8 * 256 / 256
    EXPECT_EQ(s.to_string(), "128x128x8 t8x8 S3 R1");
}

TEST(Schedule, StructuralValidity) {
    std::string why;
    EXPECT_TRUE(structurally_valid(sched(128, 128, 8, 8, 8, 1, 1), &why)) << why;
    // 16 threads: below a warp.
    EXPECT_FALSE(structurally_valid(sched(16, 16, 8, 4, 4, 1, 1), &why));
    EXPECT_NE(why.find("16 threads"), std::string::npos) << why;
    // 2048 threads.
    EXPECT_FALSE(structurally_valid(sched(256, 256, 32, 1, 8, 1, 1)));
    EXPECT_FALSE(structurally_valid(sched(128, 128, 8, 8, 8, 1, 3)));  // R = 3
    EXPECT_FALSE(structurally_valid(sched(128, 128, 8, 8, 8, 0, 1)));  // S = 0
    // A round of copies may leave threads idle (the schedules guard it): 128x128x4 with 256
    // threads copies A's 512 elements as 128 vectors, half a round.
    EXPECT_TRUE(structurally_valid(sched(128, 128, 4, 8, 8, 1, 1), &why)) << why;
    EXPECT_EQ(sched(128, 128, 4, 8, 8, 1, 1).copy_vectors_per_thread_per_stage(), 2);
    // 96x128 with 8x8: 192 threads; A is one round of 192 vectors, B (256 vectors) two rounds.
    EXPECT_EQ(sched(96, 128, 8, 8, 8, 1, 1).threads(), 192);
    EXPECT_TRUE(structurally_valid(sched(96, 128, 8, 8, 8, 1, 1), &why)) << why;
    EXPECT_EQ(sched(96, 128, 8, 8, 8, 1, 1).copy_vectors_per_thread_per_stage(), 1 + 2);
    // The contiguous dimensions must hold whole vectors: k for A, n for B.
    EXPECT_FALSE(structurally_valid(sched(128, 128, 2, 8, 8, 1, 1), &why));
    EXPECT_NE(why.find("vectors"), std::string::npos) << why;
    EXPECT_FALSE(structurally_valid(sched(64, 34, 8, 2, 34, 1, 1), &why));
    EXPECT_NE(why.find("vectors"), std::string::npos) << why;
}

// ---------------------------------------------------------------------------
// Registers and occupancy, by hand.

TEST(Occupancy, RegisterEstimate) {
    // 8x8 accumulators (64) + one slot of 8+8 fragments (16) + 27 = 107.
    EXPECT_EQ(estimate_registers(sched(128, 128, 8, 8, 8, 3, 1), gpu("h200")), 107);
    // Two register slots: + 16.
    EXPECT_EQ(estimate_registers(sched(128, 128, 8, 8, 8, 3, 2), gpu("h200")), 123);
    // With cp.async the stage count does not cost registers...
    EXPECT_EQ(estimate_registers(sched(128, 128, 8, 8, 8, 1, 1), gpu("a100")),
              estimate_registers(sched(128, 128, 8, 8, 8, 6, 1), gpu("a100")));
    // ...on V100 a prefetched stage is staged in registers: 8*256/256 = 8 more
    // once S >= 2, and no more for deeper S (one tile is staged at a time).
    EXPECT_EQ(estimate_registers(sched(128, 128, 8, 8, 8, 1, 1), gpu("v100")), 107);
    EXPECT_EQ(estimate_registers(sched(128, 128, 8, 8, 8, 2, 1), gpu("v100")), 115);
    EXPECT_EQ(estimate_registers(sched(128, 128, 8, 8, 8, 5, 1), gpu("v100")), 115);
    // 64x32x32, 32 threads: 32*96/32 = 96 staged elements per thread.
    EXPECT_EQ(estimate_registers(sched(64, 32, 32, 8, 8, 2, 2), gpu("v100")), 64 + 32 + 27 + 96);
}

TEST(Occupancy, LimitedByRegisters) {
    // H200, 256 threads (8 warps), 108 registers, 24576 B of shared memory:
    //  registers: 108*32 = 3456 -> 3584 per warp (256-register units), i.e. 112
    //             per thread; a sub-partition has 65536/4 = 16384 registers ->
    //             floor(16384/3584) = 4 warps, x4 = 16 warps per SM -> 16/8 = 2 blocks.
    //  smem:      24576 + 1024 reserved = 25600 B; 233472 / 25600 = 9.1 -> 9.
    //  threads:   2048/32 = 64 warps / 8 = 8.   slots: 32.
    Occupancy o = occupancy(256, 108, 24576, gpu("h200"));
    EXPECT_EQ(o.regs_allocated, 112);
    EXPECT_EQ(o.by_registers, 2);
    EXPECT_EQ(o.by_smem, 9);
    EXPECT_EQ(o.by_threads, 8);
    EXPECT_EQ(o.by_slots, 32);
    EXPECT_EQ(o.blocks_per_sm, 2);
    EXPECT_EQ(o.limiter, OccupancyLimiter::Registers);
    EXPECT_DOUBLE_EQ(o.fraction, 16.0 / 64.0);
}

// Its inverse, what launch bounds leave a thread: the most registers at which occupancy() still
// fits the blocks, which is ptxas's own cap (generator_ptx_test's
// LaunchBounds.TheRegisterCapIsWhatPtxasApplies compares the two).
TEST(Occupancy, RegistersForBlocks) {
    const GpuSpec &h200 = gpu("h200");
    // 2 blocks of 128 threads: 255 (256 a thread, 8192 a warp: 2 warps a partition, 8 an SM).
    EXPECT_EQ(registers_for_blocks(128, 2, h200), 255);
    // 3: 168 (5376 a warp: 3 a partition, 12 warps); 176 (5632) leaves 2 a partition.
    EXPECT_EQ(registers_for_blocks(128, 3, h200), 168);
    // 5 blocks of 3 warps need 4 warps a partition: 4096 a warp, 128 a thread (the SM's 65536
    // over 480 threads would say 136).
    EXPECT_EQ(registers_for_blocks(96, 5, h200), 128);
    // Each cap fits its blocks, and the next allocation step does not.
    const std::pair<int, int> bounds[] = {{128, 3}, {96, 4}, {96, 5}, {160, 3}, {64, 7}, {224, 2}, {32, 13}, {256, 1}};
    for (const auto &[threads, blocks] : bounds) {
        const int r = registers_for_blocks(threads, blocks, h200);
        EXPECT_GE(occupancy(threads, r, 0, h200).by_registers, blocks) << threads << " x " << blocks;
        if (r < h200.max_registers_per_thread) {
            EXPECT_LT(occupancy(threads, r + 8, 0, h200).by_registers, blocks) << threads << " x " << blocks;
        }
    }
    // More blocks of 1024 threads than even 8 registers a thread fit: none.
    EXPECT_EQ(registers_for_blocks(1024, 9, h200), 0);
}

TEST(Occupancy, LimitedBySharedMemory) {
    // A100, 256 threads, 52 registers, 64 KiB (64x64x32 tile, 4 stages):
    //  smem: 65536 + 1024 = 66560; 167936 / 66560 = 2.52 -> 2.
    //  regs: 52*32 = 1664 -> 1792 per warp; 16384/1792 = 9 warps x 4 = 36 / 8 = 4.
    Occupancy o = occupancy(256, 52, 65536, gpu("a100"));
    EXPECT_EQ(o.by_smem, 2);
    EXPECT_EQ(o.by_registers, 4);
    EXPECT_EQ(o.blocks_per_sm, 2);
    EXPECT_EQ(o.limiter, OccupancyLimiter::SharedMemory);

    // The 1 KiB the driver reserves per block matters: on H200 a quarter of the
    // opt-in maximum, 232448/4 = 58112 B, gives 233472 / (58112 + 1024) = 3.9
    // -> 3 blocks, not 4.
    EXPECT_EQ(occupancy(128, 32, 58112, gpu("h200")).by_smem, 3);
    // V100 reserves nothing: 98304 / 49152 = 2 exactly.
    EXPECT_EQ(occupancy(256, 64, 49152, gpu("v100")).by_smem, 2);
    // ... where A100 fits 167936 / (49152 + 1024) = 3.3 -> 3.
    EXPECT_EQ(occupancy(256, 64, 49152, gpu("a100")).by_smem, 3);
}

TEST(Occupancy, LimitedByThreads) {
    // RTX 3090, 1024 threads (32 warps), 32 registers, 8 KiB:
    //  threads: 1536/32 = 48 warps / 32 = 1.
    //  regs: 32*32 = 1024 per warp; 16384/1024 = 16 x 4 = 64 warps / 32 = 2.
    //  smem: (8192 + 1024) = 9216; 102400 / 9216 = 11.   slots: 16.
    Occupancy o = occupancy(1024, 32, 8192, gpu("rtx3090"));
    EXPECT_EQ(o.by_threads, 1);
    EXPECT_EQ(o.by_registers, 2);
    EXPECT_EQ(o.by_smem, 11);
    EXPECT_EQ(o.by_slots, 16);
    EXPECT_EQ(o.blocks_per_sm, 1);
    EXPECT_EQ(o.limiter, OccupancyLimiter::Threads);
}

TEST(Occupancy, LimitedByBlockSlots) {
    // H200, 32 threads (one warp), 48 registers, 512 B:
    //  regs: 48*32 = 1536 per warp; 16384/1536 = 10 x 4 = 40 blocks.
    //  smem: 512 + 1024 = 1536; 233472/1536 = 152.  threads: 64.  slots: 32.
    Occupancy o = occupancy(32, 48, 512, gpu("h200"));
    EXPECT_EQ(o.by_registers, 40);
    EXPECT_EQ(o.by_smem, 152);
    EXPECT_EQ(o.by_threads, 64);
    EXPECT_EQ(o.blocks_per_sm, 32);
    EXPECT_EQ(o.limiter, OccupancyLimiter::BlockSlots);
}

// ---------------------------------------------------------------------------
// The whole prediction for one configuration, by hand.

TEST(Predict, HandComputedH200) {
    const GpuSpec &h200 = gpu("h200");
    // 107 registers per thread: the app links the opt-in (64 is Halide's runtime cap).
    Prediction p = predict(make_gemm(4096, 4096, 4096), sched(128, 128, 8, 8, 8, 3, 1), h200, opt_in());
    ASSERT_TRUE(p.feasible) << p.reason;
    EXPECT_EQ(p.smem_per_block, 24576);  // 3 * 4 * 8 * 256
    EXPECT_EQ(p.smem_limit, 227 * 1024);
    EXPECT_EQ(p.register_limit, 255);
    EXPECT_EQ(p.regs_estimated, 107);
    EXPECT_EQ(p.occ.blocks_per_sm, 2);
    EXPECT_EQ(p.occ.limiter, OccupancyLimiter::Registers);

    // Waves: 32 x 32 = 1024 blocks; 2 x 132 = 264 at a time -> 3.88 waves,
    // 3 full and a tail of 1024 - 792 = 232 blocks = ceil(232/132) = 2 per SM.
    EXPECT_EQ(p.total_blocks, 1024);
    EXPECT_NEAR(p.waves, 1024.0 / 264.0, 1e-12);
    EXPECT_EQ(p.full_waves, 3);
    EXPECT_EQ(p.tail_blocks_per_sm, 2);

    // One iteration, 512 of them, prefetch distance S-1 = 2 (cp.async).
    EXPECT_EQ(p.k_iterations, 512);
    EXPECT_EQ(p.prefetch_distance, 2);
    // FMA: 8 warps on 4 schedulers -> the busiest runs 2; each warp does
    //      8 k-steps x 64 FMA instructions at 32/(128/4) = 1 cycle = 512 -> 1024.
    EXPECT_DOUBLE_EQ(p.fma_cycles, 1024);
    // Shared memory: a warp spans 16 thread columns x 2 rows; per k step A needs
    //      max(8 scalar LDS, ceil(2*8*4/128)) = 8 wavefronts (A keeps k innermost)
    //      and B max(2 LDS.128, 16*8*4/128) = 4; 8 warps x 8 k x 12 = 768, plus
    //      8192 B of stage stores / 128 = 64.
    EXPECT_DOUBLE_EQ(p.smem_cycles, 832);
    // Issue: per warp 8 x (64 FMA + 8 + 2 LDS) + 2 cp.async + 14 loop overhead
    //      + 1 barrier (a pipelined loop has one per iteration) = 609;
    //      the busiest scheduler issues 2 warps' worth = 1218.
    EXPECT_DOUBLE_EQ(p.issue_cycles, 1218);
    // Warp chain: 8 x (23 LDS latency + 64 FMAs) = 696 < 1218.
    EXPECT_DOUBLE_EQ(p.warp_chain_cycles, 696);
    // One block alone: max(1218, 696) + 1 barrier x 20 = 1238.
    EXPECT_DOUBLE_EQ(p.compute_cycles, 1238);
    // Load: 500 cycles latency + 8192 B at 70% of 5120/108 B/clk/SM
    //      (= 33.2 B/clk sustained) = 246.9 cycles.
    EXPECT_NEAR(p.load_transfer_cycles, 8192.0 / (0.7 * 5120.0 / 108.0), 1e-6);
    EXPECT_NEAR(p.load_cycles, 500 + 8192.0 / (0.7 * 5120.0 / 108.0), 1e-6);
    // 2 iterations of compute (2476) cover a 747-cycle load: nothing exposed.
    EXPECT_EQ(p.exposed_load_cycles, 0);

    // Main loop per wave: two blocks = 16 warps, 4 per scheduler:
    //      512 x max(4 x max(512, 609), 16 x 104) = 512 x 2436 = 1,247,232 cycles,
    //      more than one block's chain (512 x 1238); 4 waves of that.
    EXPECT_NEAR(p.main_loop_us, 4 * 512 * 2436 / (1.98 * 1e3), 1e-6);
    EXPECT_EQ(p.bound, Bound::SmCompute);
    // The compute floor: 2 x 4096^3 / 66.9 TFLOP/s = 2054 us.
    EXPECT_NEAR(p.compute_floor_us, 2.0 * 4096.0 * 4096.0 * 4096.0 / 66.9e6, 1e-6);
    // The pipeline, not a floor, is the time.
    EXPECT_NEAR(p.total_us, p.prologue_us + p.main_loop_us + p.epilogue_us, 1e-9);

    const std::string text = p.explain();
    EXPECT_NE(text.find("limited by registers"), std::string::npos) << text;
    EXPECT_NE(text.find("prefetch distance 2 hides the loads (of 2 resident blocks per SM, in step)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("SM compute throughput"), std::string::npos) << text;
    printf("%s\n", text.c_str());
}

TEST(Predict, BarriersAreTheOnesTheLoweringEmits) {
    // The same H200 configuration unpipelined (S=1): the loop is Halide's own, with a barrier
    // after each of the two staged copies and one at the end of the body (three; the pipelined
    // loop has one: test/unit/lowering_test.cpp, GemmStages). The copy is synchronous: 2
    // vectors per thread, each a load and a store, and its clamped addresses are computed every
    // iteration (49 instructions of overhead, not 14: the main-loop report's count).
    //  issue per warp: 8 x (64 + 8 + 2) + 2 x 2 + 49 + 3 barriers = 648; busiest 2 warps = 1296.
    //  one block alone: max(1296, 696) + 3 barriers x 20 = 1356.
    const GpuSpec &h200 = gpu("h200");
    Prediction s1 = predict(make_gemm(4096, 4096, 4096), sched(128, 128, 8, 8, 8, 1, 1), h200, opt_in());
    ASSERT_TRUE(s1.feasible) << s1.reason;
    EXPECT_DOUBLE_EQ(s1.issue_cycles, 1296);
    EXPECT_DOUBLE_EQ(s1.compute_cycles, 1356);
    // Pipelined with any number of stages: 609 and 1218 + 1 x 20, as above.
    for (int stages : {2, 3, 4}) {
        Prediction p = predict(make_gemm(4096, 4096, 4096), sched(128, 128, 8, 8, 8, stages, 1), h200, opt_in());
        ASSERT_TRUE(p.feasible) << p.reason;
        EXPECT_DOUBLE_EQ(p.issue_cycles, 1218) << stages;
        EXPECT_DOUBLE_EQ(p.compute_cycles, 1238) << stages;
    }
}

TEST(Predict, PipelineChainClosedFormMatchesRecurrence) {
    // The closed form against the recurrence it solves, over a grid of
    // latency/compute ratios, distances and trip counts.
    for (int64_t e : {1, 2, 3, 5, 8, 17, 64}) {
        for (int d = 0; d <= 6; d++) {
            for (double load : {50.0, 400.0, 700.0, 1500.0}) {
                for (double compute : {30.0, 100.0, 333.0, 1200.0}) {
                    std::vector<double> t(e);
                    for (int64_t i = 0; i < e; i++) {
                        if (d == 0) {
                            t[i] = (i == 0 ? 0 : t[i - 1] + compute) + load;
                        } else {
                            const double ready = (i < d ? 0 : t[i - d]) + load;
                            t[i] = i == 0 ? ready : std::max(t[i - 1] + compute, ready);
                        }
                    }
                    const double expect = t[e - 1] + compute;
                    EXPECT_NEAR(pipeline_chain_cycles(e, d, load, compute), expect, 1e-9)
                        << "E=" << e << " d=" << d << " L=" << load << " C=" << compute;
                    if (d > 0) {
                        EXPECT_LE(pipeline_chain_cycles(e, d, load, compute),
                                  pipeline_chain_cycles(e, d - 1, load, compute));
                    }
                }
            }
        }
    }
}

TEST(Predict, PrefetchDistance) {
    const Problem p = make_gemm(2048, 2048, 2048);
    for (int s = 1; s <= 6; s++) {
        const Schedule sc = sched(64, 64, 16, 4, 4, s, 1);
        EXPECT_EQ(predict(p, sc, gpu("h200"), opt_in()).prefetch_distance, s - 1);
        // V100 stages through registers: one tile ahead at most.
        EXPECT_EQ(predict(p, sc, gpu("v100"), opt_in()).prefetch_distance, std::min(s - 1, 1));
    }
}

TEST(Predict, BatchMultipliesBlocks) {
    const Schedule s = sched(64, 64, 16, 8, 8, 2, 1);
    // 512/64 = 8 x 8 = 64 blocks per matrix, 12 matrices.
    EXPECT_EQ(predict(make_bmm(12, 512, 512, 64), s, gpu("a100"), opt_in()).total_blocks, 768);
    EXPECT_EQ(predict(make_gemm(512, 512, 64), s, gpu("a100"), opt_in()).total_blocks, 64);
    // Ragged edges round up: ceil(100/64) x ceil(70/64) = 2 x 2.
    EXPECT_EQ(predict(make_gemm(100, 70, 64), s, gpu("a100"), opt_in()).total_blocks, 4);
}

TEST(Predict, HandBuiltProblemDefaultsToDenseOperands) {
    Problem hand;
    hand.m = 8192, hand.n = 8192, hand.k = 4096;  // a_bytes = b_bytes = 0
    const Schedule s = sched(128, 128, 16, 8, 8, 2, 1);
    const Prediction a = predict(hand, s, gpu("v100"));
    const Prediction b = predict(make_gemm(8192, 8192, 4096), s, gpu("v100"));
    EXPECT_DOUBLE_EQ(a.dram_traffic_bytes, b.dram_traffic_bytes);
    EXPECT_DOUBLE_EQ(a.total_us, b.total_us);
}

TEST(Predict, MemoryBoundProblem) {
    // K = 8: 2*8192*8192*8 = 1.07 GFLOP but 268 MB of C to write.
    Prediction p = predict(make_gemm(8192, 8192, 8), sched(128, 128, 8, 8, 8, 2, 1), gpu("h200"), opt_in());
    ASSERT_TRUE(p.feasible) << p.reason;
    // DRAM floor: 4*(8192*8 + 8*8192 + 8192*8192) B at 85% of 4800 GB/s = 66.0 us.
    const double dram = 4.0 * (8192 * 8 * 2 + 8192.0 * 8192.0);
    EXPECT_NEAR(p.dram_traffic_bytes, dram, 1);
    EXPECT_NEAR(p.memory_floor_us, dram / (0.85 * 4800e3), 1e-6);
    EXPECT_GT(p.memory_floor_us, p.compute_floor_us);
    printf("%s\n", p.explain().c_str());
}

// ---------------------------------------------------------------------------
// Feasibility: shared memory under the limit that applies, registers.

TEST(Feasibility, SharedMemoryOverHalideDefaultIsRejected) {
    const Problem p = make_gemm(4096, 4096, 4096);
    // 128x128x32: 4*32*256 = 32768 B per stage; 6 stages = 196608 B.
    const Schedule deep = sched(128, 128, 32, 8, 8, 6, 1);
    ASSERT_EQ(deep.smem_bytes(), 196608);
    for (const GpuSpec &g : all_gpus()) {
        Prediction r = predict(p, deep, g);
        EXPECT_FALSE(r.feasible) << g.name;
        EXPECT_EQ(r.bound, Bound::Infeasible);
        EXPECT_TRUE(std::isinf(r.total_us));
        EXPECT_NE(r.reason.find("48 KiB"), std::string::npos) << r.reason;
        EXPECT_NE(r.explain().find("infeasible"), std::string::npos);
    }
    // Under the opt-in maximum it fits where that maximum is 227 KiB...
    EXPECT_TRUE(predict(p, deep, gpu("h200"), opt_in()).feasible);
    EXPECT_TRUE(predict(p, deep, gpu("h100"), opt_in()).feasible);
    // ...and not where it is 163, 99 or 96 KiB.
    EXPECT_FALSE(predict(p, deep, gpu("a100"), opt_in()).feasible);
    EXPECT_FALSE(predict(p, deep, gpu("rtx4090"), opt_in()).feasible);
    EXPECT_FALSE(predict(p, deep, gpu("rtx3090"), opt_in()).feasible);
    EXPECT_FALSE(predict(p, deep, gpu("v100"), opt_in()).feasible);
    // 5 stages = 163840 B fit A100's 166912.
    EXPECT_TRUE(predict(p, sched(128, 128, 32, 8, 8, 5, 1), gpu("a100"), opt_in()).feasible);

    // The default message points at the opt-in when it would help.
    Prediction r = predict(p, sched(128, 128, 32, 8, 8, 3, 1), gpu("a100"));
    EXPECT_FALSE(r.feasible);
    EXPECT_NE(r.reason.find("opt-in maximum of 163 KiB"), std::string::npos) << r.reason;
}

TEST(Feasibility, SharedMemoryLimitIsInclusive) {
    // 128x64x32: 4*32*192 = 24576 B per stage; two stages are exactly 48 KiB.
    const Problem p = make_gemm(1024, 1024, 1024);
    EXPECT_TRUE(predict(p, sched(128, 64, 32, 4, 4, 2, 1), gpu("h200")).feasible);
    EXPECT_FALSE(predict(p, sched(128, 64, 32, 4, 4, 3, 1), gpu("h200")).feasible);
    EXPECT_EQ(smem_limit_bytes(gpu("h200"), RuntimeLimits::HalideDefault), 49152);
    EXPECT_EQ(smem_limit_bytes(gpu("h200"), RuntimeLimits::OptIn), 232448);
}

TEST(Feasibility, RegistersPerBlockAndPerThread) {
    const Problem p = make_gemm(4096, 4096, 4096);
    // 256x256x16 with 8x8 per thread: 1024 threads x 112 registers = 114688 > 65536.
    Prediction r = predict(p, sched(256, 256, 16, 8, 8, 1, 1), gpu("h200"), opt_in());
    EXPECT_FALSE(r.feasible);
    EXPECT_NE(r.reason.find("114688 registers per block"), std::string::npos) << r.reason;
    // A 16x16 thread tile: 256 + 2*16... = 256 + 32 + 27 = 315 > 255 per thread.
    r = predict(p, sched(256, 128, 16, 16, 16, 1, 1), gpu("h200"), opt_in());
    EXPECT_FALSE(r.feasible);
    EXPECT_NE(r.reason.find("315 registers per thread, more than the 255 maximum"), std::string::npos) << r.reason;
}

TEST(Feasibility, HalideRuntimeCapsRegistersAt64) {
    // Halide 14's CUDA runtime loads modules with CU_JIT_MAX_REGISTERS = 64: an 8x8 thread
    // tile (64 + 16 + 27 = 107, more without cp.async) would spill, a 4x4 one (16 + 16 + 27 = 59
    // with R = 2) fits.
    const Problem p = make_gemm(2048, 2048, 2048);
    for (const GpuSpec &g : all_gpus()) {
        EXPECT_EQ(register_limit(g, RuntimeLimits::HalideDefault), 64) << g.name;
        EXPECT_EQ(register_limit(g, RuntimeLimits::OptIn), 255) << g.name;
        Prediction r = predict(p, sched(128, 128, 8, 8, 8, 2, 1), g);
        EXPECT_FALSE(r.feasible) << g.name;
        EXPECT_NE(r.reason.find("registers per thread, more than the 64 Halide's CUDA runtime"), std::string::npos)
            << r.reason;
        EXPECT_NE(r.reason.find("it would fit with the opt-in"), std::string::npos) << r.reason;
        EXPECT_TRUE(predict(p, sched(128, 128, 8, 8, 8, 2, 1), g, opt_in()).feasible) << g.name;
        EXPECT_TRUE(predict(p, sched(64, 64, 8, 4, 4, 2, 2), g).feasible) << g.name;
    }
}

TEST(Feasibility, FitsNeedsNoProblem) {
    // The plugin's pre-codegen check, on each limit by hand (the numbers of the cases above).
    std::string why;
    // 6 stages of 32768 B: over 48 KiB, under the 227 KiB opt-in.
    EXPECT_FALSE(fits(sched(128, 128, 32, 8, 8, 6, 1), gpu("h200"), ModelOptions(), &why));
    EXPECT_NE(why.find("196608 B of shared memory"), std::string::npos) << why;
    EXPECT_TRUE(fits(sched(128, 128, 32, 8, 8, 6, 1), gpu("h200"), opt_in(), &why)) << why;
    EXPECT_EQ(why, "");
    // 107 registers per thread: over Halide's 64, under the opt-in's 255.
    EXPECT_FALSE(fits(sched(128, 128, 8, 8, 8, 3, 1), gpu("h200"), ModelOptions(), &why));
    EXPECT_NE(why.find("about 107 registers per thread"), std::string::npos) << why;
    EXPECT_TRUE(fits(sched(128, 128, 8, 8, 8, 3, 1), gpu("h200"), opt_in()));
    // 1024 threads x 112 registers per block.
    EXPECT_FALSE(fits(sched(256, 256, 16, 8, 8, 1, 1), gpu("h200"), opt_in(), &why));
    EXPECT_NE(why.find("114688 registers per block"), std::string::npos) << why;
    // 16 threads.
    EXPECT_FALSE(fits(sched(16, 16, 8, 4, 4, 1, 1), gpu("h200"), ModelOptions(), &why));
    EXPECT_NE(why.find("16 threads"), std::string::npos) << why;
}

TEST(Feasibility, StructurallyInvalidIsRejected) {
    Prediction r = predict(make_gemm(64, 64, 64), sched(16, 16, 8, 4, 4, 1, 1), gpu("h200"));
    EXPECT_FALSE(r.feasible);
    EXPECT_FALSE(r.reason.empty());
    r = predict(make_gemm(0, 64, 64), sched(128, 128, 8, 8, 8, 1, 1), gpu("h200"));
    EXPECT_FALSE(r.feasible);
}

// ---------------------------------------------------------------------------
// The stage property: more stages never predicted slower while loads are still
// exposed and the configuration still fits (feasible, same occupancy).

TEST(Property, MoreStagesNeverSlowerWhileLoadsExposed) {
    const std::vector<Problem> problems = {
        make_gemm(4096, 4096, 4096), make_gemm(1024, 768, 768),  make_bmm(12, 512, 512, 64),
        make_gemm(256, 256, 8192),   make_gemm(128, 2048, 1024), make_conv2d_nhwc({64, 56, 56, 64, 64, 3, 3, 1, 1}),
    };
    SearchSpace space;
    space.max_smem_stages = 1;  // tile shapes and R; S is varied below
    const std::vector<Schedule> shapes = enumerate_schedules(space);

    size_t pairs = 0, exposed_pairs = 0, strictly_faster = 0, occupancy_drops = 0, slower_after_drop = 0;
    for (const GpuSpec &g : all_gpus()) {
        for (RuntimeLimits limit : {RuntimeLimits::HalideDefault, RuntimeLimits::OptIn}) {
            ModelOptions o;
            o.limits = limit;
            for (const Problem &p : problems) {
                for (Schedule s : shapes) {
                    s.smem_stages = 1;
                    Prediction prev = predict(p, s, g, o);
                    for (int stages = 2; stages <= 6; stages++) {
                        s.smem_stages = stages;
                        Prediction next = predict(p, s, g, o);
                        if (prev.feasible && next.feasible) {
                            if (next.occ.blocks_per_sm == prev.occ.blocks_per_sm) {
                                pairs++;
                                // With occupancy unchanged a stage costs nothing in the
                                // model, so it is never slower, exposed or not...
                                EXPECT_LE(next.total_us, prev.total_us * (1 + 1e-12))
                                    << g.name << " " << p.to_string() << " " << s.to_string();
                                // Exposure itself only shrinks once both are pipelined:
                                // going from S=1 to S=2 also drops two of the three
                                // barriers of Halide's unpipelined loop (and, with cp.async,
                                // makes the copy cheaper), which can make the loads a larger
                                // share of a shorter iteration (on V100, 16x16x4 bmm tiles:
                                // 401.8 -> 402.3 exposed cycles, for a shorter total).
                                if (stages > 2) {
                                    EXPECT_LE(next.exposed_load_cycles, prev.exposed_load_cycles + 1e-9)
                                        << g.name << " " << p.to_string() << " " << s.to_string();
                                }
                                // The pairs the property is about (asserted above for
                                // all): counted, so that the sweep cannot miss them.
                                if (prev.exposed_load_cycles > 0) {
                                    exposed_pairs++;
                                    strictly_faster += next.total_us < prev.total_us;
                                }
                            } else {
                                occupancy_drops++;
                                slower_after_drop += next.total_us > prev.total_us;
                            }
                        }
                        prev = next;
                    }
                }
            }
        }
    }
    printf("stage pairs checked: %zu (%zu with exposed loads, %zu of those strictly faster); "
           "%zu pairs lose occupancy, %zu of them predicted slower\n",
           pairs, exposed_pairs, strictly_faster, occupancy_drops, slower_after_drop);
    EXPECT_GT(pairs, 10000u);
    EXPECT_GT(exposed_pairs, 1000u);
    // Pipelining is not a no-op in the model: exposed loads get hidden.
    EXPECT_GT(strictly_faster, 100u);
    // And deeper is not free: losing a block per SM to shared memory can cost
    // more than the extra stage hides (the CUTLASS maintainers' warning).
    EXPECT_GT(slower_after_drop, 0u);
}

TEST(Property, V100DeeperThanTwoStagesBuysNothing) {
    // Register-staged prefetch hides one iteration at most, so S = 3..6 can
    // only cost shared memory.
    const Problem p = make_gemm(1024, 1024, 1024);
    const Schedule base = sched(64, 64, 16, 4, 4, 2, 1);
    const Prediction two = predict(p, base, gpu("v100"), opt_in());
    ASSERT_TRUE(two.feasible);
    for (int s = 3; s <= 6; s++) {
        Schedule deeper = base;
        deeper.smem_stages = s;
        const Prediction r = predict(p, deeper, gpu("v100"), opt_in());
        ASSERT_TRUE(r.feasible);
        EXPECT_GE(r.total_us, two.total_us * (1 - 1e-12));
    }
}

TEST(Property, ExposedLoadsShrinkWithStagesOnH200) {
    // A latency-bound case: one small block per SM with a short k tile, so one
    // iteration's compute cannot cover a global load. Every extra stage hides
    // more until the loads are covered.
    const Problem p = make_gemm(512, 512, 4096);
    double prev_time = 1e300, prev_exposed = 1e300;
    for (int s = 1; s <= 6; s++) {
        const Prediction r = predict(p, sched(64, 64, 8, 4, 4, s, 1), gpu("h200"));
        ASSERT_TRUE(r.feasible) << r.reason;
        printf("S=%d: exposed %.0f cycles/iteration, %.2f us (%s)\n", s, r.exposed_load_cycles, r.total_us,
               to_string(r.bound));
        EXPECT_LE(r.exposed_load_cycles, prev_exposed);
        EXPECT_LE(r.total_us, prev_time);
        if (s <= 3) {
            // S=1 waits a full load per iteration, S=2 still part of one,
            // S=3 covers it: each of those stages is a real gain.
            EXPECT_LT(r.total_us, prev_time);
        } else {
            EXPECT_EQ(r.exposed_load_cycles, 0);
        }
        prev_time = r.total_us;
        prev_exposed = r.exposed_load_cycles;
        if (s == 1) {
            EXPECT_GT(r.exposed_load_cycles, 0);
        }
    }
}

// ---------------------------------------------------------------------------
// Search.

TEST(Search, EnumeratesTheSpace) {
    const std::vector<Schedule> all = enumerate_schedules();
    // 1084 valid tile shapes x 6 shared stages x 2 register stages.
    EXPECT_EQ(all.size(), 13008u);
    std::set<std::string> distinct;
    for (const Schedule &s : all) distinct.insert(s.to_string());
    EXPECT_EQ(distinct.size(), all.size()) << "a schedule enumerated twice";
    // Tile shapes checked by hand (Schedule.StructuralValidity): in with every (S, R), or out.
    auto stage_counts = [&](int bm, int bn, int kt, int tm, int tn) {
        return std::count_if(all.begin(), all.end(), [&](const Schedule &s) {
            return s.bm == bm && s.bn == bn && s.kt == kt && s.tm == tm && s.tn == tn;
        });
    };
    EXPECT_EQ(stage_counts(128, 128, 8, 8, 8), 12);
    EXPECT_EQ(stage_counts(128, 128, 4, 8, 8), 12);  // idle threads in a round of copies
    EXPECT_EQ(stage_counts(16, 16, 8, 4, 4), 0);     // 16 threads
    EXPECT_EQ(stage_counts(256, 256, 32, 1, 1), 0);  // 65536 threads
}

TEST(Search, RanksAtLeastAThousandCandidatesQuickly) {
    const Problem p = make_gemm(4096, 4096, 4096);
    SearchResult r = search(p, default_gpu());
    printf("%s", r.report(10).c_str());
    printf("search: %zu candidates in %.3f ms\n", r.enumerated, r.seconds * 1e3);

    EXPECT_EQ(r.enumerated, 13008u);
    // The counts, from the schedules' own sizes: under Halide's default limits, a schedule of
    // the space fails on shared memory (over 48 KiB) or else on registers (over 64 per thread;
    // at most 1024 threads x 64 fit a block), or is ranked.
    size_t over_smem = 0, over_registers = 0, fitting = 0;
    for (const Schedule &s : enumerate_schedules()) {
        if (s.smem_bytes() > 48 * 1024) {
            over_smem++;
        } else if (estimate_registers(s, default_gpu()) > 64) {
            over_registers++;
        } else {
            fitting++;
        }
    }
    EXPECT_GT(over_smem, 0u);  // the 48 KiB default bites
    EXPECT_EQ(r.rejected_smem, over_smem);
    EXPECT_EQ(r.rejected_registers, over_registers);
    EXPECT_EQ(r.rejected_other, 0u);
    EXPECT_EQ(r.ranked.size(), fitting);
    ASSERT_FALSE(r.ranked.empty());
    for (size_t i = 1; i < r.ranked.size(); i++) {
        EXPECT_LE(r.ranked[i - 1].total_us, r.ranked[i].total_us);
    }
    EXPECT_LT(r.seconds, 5.0);  // goal: <= 1 s; this is a generous bound for slow CI
}

TEST(Search, OptInWidensTheSpaceAndNeverLoses) {
    for (const char *name : {"h200", "a100", "rtx4090", "v100"}) {
        for (const Problem &p : {make_gemm(4096, 4096, 4096), make_bmm(12, 512, 64, 512)}) {
            SearchOptions def, opt;
            opt.model.limits = RuntimeLimits::OptIn;
            SearchResult a = search(p, gpu(name), def);
            SearchResult b = search(p, gpu(name), opt);
            EXPECT_GT(b.feasible, a.feasible) << name;
            ASSERT_FALSE(a.ranked.empty());
            ASSERT_FALSE(b.ranked.empty());
            EXPECT_LE(b.ranked[0].total_us, a.ranked[0].total_us) << name;
        }
    }
}

TEST(Search, KeepReturnsTheBestPrefix) {
    const Problem p = make_conv2d_nhwc({64, 56, 56, 64, 64, 3, 3, 1, 1});
    SearchResult all = search(p, gpu("a100"));
    SearchOptions o;
    o.keep = 5;
    SearchResult top = search(p, gpu("a100"), o);
    ASSERT_EQ(top.ranked.size(), 5u);
    EXPECT_EQ(top.feasible, all.feasible);
    for (size_t i = 0; i < 5; i++) {
        EXPECT_EQ(top.ranked[i].schedule.to_string(), all.ranked[i].schedule.to_string());
    }
}

TEST(Search, EveryGpuFindsSomething) {
    for (const GpuSpec &g : all_gpus()) {
        SearchResult r = search(make_gemm(1024, 768, 768), g);
        ASSERT_FALSE(r.ranked.empty()) << g.name;
        printf("%-8s best %-24s %9.2f us  %s\n", g.name.c_str(), r.ranked[0].schedule.to_string().c_str(),
               r.ranked[0].total_us, to_string(r.ranked[0].bound));
    }
}

// ---------------------------------------------------------------------------
// Tensor cores: mma.sync.m16n8k16, fp16/bf16 operands, fp32 accumulation.

namespace {

/** A tensor-core schedule: block tile bm x bn, k tile kt, warp tile wm x wn. */
Schedule tc(int bm, int bn, int kt, int wm, int wn, int stages, int reg_stages) {
    Schedule s = sched(bm, bn, kt, wm, wn, stages, reg_stages);
    s.tensor_cores = true;
    return s;
}

}  // namespace

TEST(TensorCores, MmaRatesMatchTheDatasheets) {
    for (const GpuSpec &g : all_gpus()) {
        SCOPED_TRACE(g.name);
        EXPECT_EQ(g.mma_f16_flops_per_clk_per_sm, g.mma_bf16_flops_per_clk_per_sm);  // the same on every part here
        if (g.compute_capability < 80) {
            EXPECT_FALSE(g.has_mma_sync());  // sm_70: mma.sync.m8n8k4 only
            continue;
        }
        const double mma_sync_tflops = double(g.mma_f16_flops_per_clk_per_sm) * g.sm_count * g.clock_ghz / 1e3;
        if (g.compute_capability == 90) {
            // The datasheet's 989.4 is wgmma's 4096 FLOPs/clk/SM at 1830 MHz; mma.sync gets half
            // of wgmma's rate per clock.
            EXPECT_NEAR(2.0 * g.mma_f16_flops_per_clk_per_sm * g.sm_count * 1.830 / 1e3, g.fp16_mma_tflops,
                        0.01 * g.fp16_mma_tflops);
            EXPECT_LT(mma_sync_tflops, 0.6 * g.fp16_mma_tflops);
        } else {
            EXPECT_NEAR(mma_sync_tflops, g.fp16_mma_tflops, 0.01 * g.fp16_mma_tflops);
        }
        EXPECT_GT(g.mma_latency_cycles, 0);
    }
}

TEST(TensorCores, DerivedQuantities) {
    const Schedule s = tc(128, 128, 32, 64, 32, 3, 1);
    EXPECT_EQ(s.warps(), 8);                     // (128/64) * (128/32)
    EXPECT_EQ(s.threads(), 256);                 // 8 warps of 32 lanes
    EXPECT_EQ(s.bytes_per_stage(), 16384);       // 2 bytes * 32 * (128 + 128)
    EXPECT_EQ(s.slot_bytes_per_stage(), 16384);  // two 8 KiB tiles: whole swizzle periods
    EXPECT_EQ(s.smem_bytes(), 3 * 16384);
    EXPECT_EQ(s.mma_tiles_per_warp(), 16);                    // (64/16) * (32/8)
    EXPECT_EQ(s.ldmatrix_per_k_step(), 6);                    // 64/16 for A + 32/16 for B
    EXPECT_EQ(s.copy_vectors_per_thread_per_stage(), 2 + 2);  // 32*128/8 = 512 vectors per tile, 256 threads
    EXPECT_EQ(s.to_string(), "128x128x32 w64x32 S3 R1");
    // A swizzled slot starts at a whole 1024-byte period: a 16 x 16 tile of halves (512 bytes)
    // takes a whole period, so a stage of two takes 2 KiB.
    const Schedule small = tc(16, 16, 16, 16, 16, 2, 1);
    EXPECT_EQ(small.bytes_per_stage(), 1024);
    EXPECT_EQ(small.slot_bytes_per_stage(), 2048);
    EXPECT_EQ(small.smem_bytes(), 4096);
}

TEST(TensorCores, BlocksAlongMFollowTheTileShapeOverThePixels) {
    // The benchmark's 8x14x14 convolution: 8 images of 14 x 14 output pixels, M = 1,568.
    Conv2dShape c;
    c.n = 8, c.h = 16, c.w = 16, c.ci = 256, c.co = 256, c.kh = 3, c.kw = 3;
    const Problem p = make_conv2d_nhwc(c, Element::F16);
    EXPECT_EQ(p.m_extents, (std::vector<int64_t>{14, 14, 8}));
    // No powers of two tile 14 x 14 x 8 in 64 rows: the widest that fit, 8 x 8 pixels of one
    // image, 2 x 2 tiles an image, 32 along M where 1568 / 64 would round up to 25.
    Schedule s = tc(64, 64, 32, 32, 32, 5, 1);
    EXPECT_EQ(m_tile_shape(s, p.m_extents), (std::vector<int>{8, 8, 1}));
    EXPECT_EQ(m_block_tiles(p, s), 2 * 2 * 8);
    EXPECT_EQ(predict(p, s, gpu("h200"), opt_in()).total_blocks, 32 * (256 / 64));
    // Where powers of two tile the pixels exactly, those: 16 rows as 2 x 2 pixels of 4 images.
    s.bm = 16;
    EXPECT_EQ(m_tile_shape(s, p.m_extents), (std::vector<int>{2, 2, 4}));
    EXPECT_EQ(m_block_tiles(p, s), 7 * 7 * 2);
    // With CUDA cores two dimensions are tiled, the first by a multiple of TM; the images
    // index blocks, one each.
    const Schedule simt = sched(64, 64, 16, 4, 4, 2, 1);
    EXPECT_EQ(m_tile_shape(simt, p.m_extents), (std::vector<int>{8, 8}));
    EXPECT_EQ(m_block_tiles(p, simt), 2 * 2 * 8);
    // The plugin's problem counts the images past the first two M dimensions as batches;
    // the tiles come out the same.
    Problem plugin = p;
    plugin.m = 14 * 14;
    plugin.batch = 8;
    EXPECT_EQ(m_block_tiles(plugin, simt), 2 * 2 * 8);
    // Without the M dimensions: ceil(M / BM) a batch.
    EXPECT_EQ(m_block_tiles(make_bmm(3, 100, 70, 64), simt), 3 * 2);
    // No factors: a tile of TM = 4 rows cannot start a 6-row tile.
    EXPECT_TRUE(m_tile_shape(sched(6, 64, 16, 4, 4, 2, 1), {14, 14}).empty());
}

TEST(TensorCores, LoopsExpandBySlotsWhereTheLanesHaveRegistersToSpare) {
    // Two stages at any warp tile; up to six where a lane holds at most 64 accumulators (a
    // 32 x 64 warp tile) and the fragments one register stage; none without a tensor-core
    // operand, with copies in place, or in one group of chunks.
    const TensorCoreStream w64x64{128, 1, 255}, w32x64{64, 1, 255}, w32x32{32, 1, 255}, w32x32_r2{32, 2, 255},
        none{0, 1, 255}, capped{32, 1, kHalideRuntimeRegisterCap};
    EXPECT_EQ(expanded_chunks(2, w64x64, false, std::nullopt), 2);
    EXPECT_EQ(expanded_chunks(3, w64x64, false, std::nullopt), 1);
    EXPECT_EQ(expanded_chunks(5, w32x32, false, std::nullopt), 5);
    EXPECT_EQ(expanded_chunks(4, w32x64, false, int64_t(36)), 4);
    EXPECT_EQ(expanded_chunks(7, w32x32, false, std::nullopt), 1);
    EXPECT_EQ(expanded_chunks(3, w32x32_r2, false, std::nullopt), 1);
    EXPECT_EQ(expanded_chunks(2, w32x32_r2, false, std::nullopt), 2);
    // Under Halide 14's runtime cap the slots' addresses would spill: two slots only.
    EXPECT_EQ(expanded_chunks(3, capped, false, std::nullopt), 1);
    EXPECT_EQ(expanded_chunks(2, capped, false, std::nullopt), 2);
    EXPECT_EQ(expanded_chunks(2, none, false, std::nullopt), 1);
    EXPECT_EQ(expanded_chunks(2, w32x32, true, std::nullopt), 1);
    EXPECT_EQ(expanded_chunks(5, w32x32, false, int64_t(5)), 1);
    // The register estimate holds the expanded slots' addresses past two (22, fitted), where
    // the loop expands: under the opt-in limits.
    EXPECT_EQ(estimate_registers(tc(64, 64, 32, 32, 32, 3, 1), gpu("h200")) -
                  estimate_registers(tc(64, 64, 32, 32, 32, 2, 1), gpu("h200")),
              22);
    EXPECT_EQ(estimate_registers(tc(64, 64, 32, 32, 32, 3, 1), gpu("h200"), RuntimeLimits::HalideDefault),
              estimate_registers(tc(64, 64, 32, 32, 32, 2, 1), gpu("h200"), RuntimeLimits::HalideDefault));
    EXPECT_EQ(estimate_registers(tc(128, 128, 32, 64, 64, 3, 1), gpu("h200")),
              estimate_registers(tc(128, 128, 32, 64, 64, 2, 1), gpu("h200")));
}

TEST(TensorCores, StructuralValidity) {
    std::string why;
    EXPECT_TRUE(structurally_valid(tc(128, 128, 32, 64, 64, 3, 2), &why)) << why;
    EXPECT_TRUE(structurally_valid(tc(16, 16, 16, 16, 16, 1, 1), &why)) << why;  // one warp
    // The k tile must be whole 16-wide k steps; the warp tile whole 16 x 16 tiles.
    EXPECT_FALSE(structurally_valid(tc(128, 128, 8, 64, 64, 1, 1), &why));
    EXPECT_NE(why.find("multiples of 16"), std::string::npos) << why;
    EXPECT_FALSE(structurally_valid(tc(128, 128, 32, 64, 8, 1, 1), &why));
    EXPECT_FALSE(structurally_valid(tc(128, 128, 32, 48, 64, 1, 1), &why));  // 48 does not divide 128
    EXPECT_NE(why.find("warp tile"), std::string::npos) << why;
    // 64 warps: 2048 threads.
    EXPECT_FALSE(structurally_valid(tc(256, 256, 32, 16, 64, 1, 1), &why));
    EXPECT_NE(why.find("2048 threads"), std::string::npos) << why;
}

TEST(TensorCores, RegisterEstimateFollowsWhatTheKernelHolds) {
    // The figures are checked against ptxas elsewhere (ModelValidation in test/ptx, TensorCoreModel
    // in test/autoscheduler); here, what the estimate must do whatever its constants. Every lane
    // holds its accumulators, four per 16 x 8 tile, and more besides.
    for (const auto &w : std::vector<std::pair<int, int>>{{16, 16}, {32, 32}, {64, 32}, {64, 64}}) {
        const Schedule s = tc(128, 128, 32, w.first, w.second, 3, 1);
        EXPECT_GT(estimate_registers(s, gpu("a100")), 4 * s.mma_tiles_per_warp()) << s.to_string();
    }
    // Shared stages live in shared memory: cp.async takes no staging registers.
    EXPECT_EQ(estimate_registers(tc(128, 128, 32, 64, 64, 1, 1), gpu("a100")),
              estimate_registers(tc(128, 128, 32, 64, 64, 6, 1), gpu("a100")));
    // One register stage holds two k steps at most (the next step's loads under this one's
    // mma.sync), so a longer chunk costs nothing; two register stages hold the whole chunk and
    // the next one's first step, so they cost more and grow with the chunk.
    EXPECT_EQ(estimate_registers(tc(64, 64, 32, 32, 32, 3, 1), gpu("a100")),
              estimate_registers(tc(64, 64, 64, 32, 32, 3, 1), gpu("a100")));
    EXPECT_LT(estimate_registers(tc(64, 64, 16, 32, 32, 3, 1), gpu("a100")),
              estimate_registers(tc(64, 64, 32, 32, 32, 3, 1), gpu("a100")));
    EXPECT_LT(estimate_registers(tc(128, 128, 32, 64, 64, 3, 1), gpu("a100")),
              estimate_registers(tc(128, 128, 32, 64, 64, 3, 2), gpu("a100")));
    EXPECT_LT(estimate_registers(tc(128, 128, 32, 64, 64, 3, 2), gpu("a100")),
              estimate_registers(tc(128, 128, 64, 64, 64, 3, 2), gpu("a100")));
    // The generators' default (128x128x32 w64x64 S3 R2) assembles in 255 (ptxas gives its kernel
    // of whole tiles 240 at sm_80, the partial tiles' 254):
    // the estimate must not reject it under the opt-in.
    EXPECT_LE(estimate_registers(tc(128, 128, 32, 64, 64, 3, 2), gpu("h200")), 255);
    // The register file is the same on every sm_80+ part here, so is the estimate.
    EXPECT_EQ(estimate_registers(tc(128, 128, 32, 64, 32, 3, 2), gpu("a100")),
              estimate_registers(tc(128, 128, 32, 64, 32, 3, 2), gpu("h200")));
}

TEST(TensorCores, OverTheRegisterLimitIsRejected) {
    const Problem p = make_gemm(2048, 2048, 2048, Element::F16);
    // 221 registers: over Halide's runtime cap of 64, within the opt-in's 255.
    Prediction d = predict(p, tc(128, 128, 32, 64, 64, 3, 1), gpu("h200"));
    EXPECT_FALSE(d.feasible);
    EXPECT_NE(d.reason.find("221 registers"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("would fit with the opt-in"), std::string::npos) << d.reason;
    EXPECT_TRUE(predict(p, tc(128, 128, 32, 64, 64, 3, 1), gpu("h200"), opt_in()).feasible);
    // Registers per block: 8 warps of 64x64 with two register stages need 255 each, 8 x 32 x 256
    // = 65536 registers: fits; 16 warps of 64x32 (64 + 0.58 x 3 x (16 + 8) + 0.40 x 64 + 20 =
    // 152, allocated in 8s) need 512 x 152 = 77824 > 65536: rejected.
    Prediction big = predict(p, tc(256, 128, 32, 64, 64, 3, 2), gpu("h200"), opt_in());
    EXPECT_TRUE(big.feasible) << big.reason;
    Prediction over = predict(p, tc(256, 128, 32, 64, 32, 3, 2), gpu("h200"), opt_in());
    EXPECT_FALSE(over.feasible);
    EXPECT_NE(over.reason.find("registers per block"), std::string::npos) << over.reason;
}

TEST(TensorCores, NeedSm80AndHalfPrecisionOperands) {
    const Problem f16 = make_gemm(1024, 1024, 1024, Element::F16);
    Prediction v = predict(f16, tc(64, 64, 32, 32, 32, 2, 1), gpu("v100"), opt_in());
    EXPECT_FALSE(v.feasible);
    EXPECT_NE(v.reason.find("sm_80"), std::string::npos) << v.reason;
    Prediction f32 = predict(make_gemm(1024, 1024, 1024), tc(64, 64, 32, 32, 32, 2, 1), gpu("a100"), opt_in());
    EXPECT_FALSE(f32.feasible);
    EXPECT_NE(f32.reason.find("fp16 or bf16"), std::string::npos) << f32.reason;
    EXPECT_TRUE(predict(f16, tc(64, 64, 32, 32, 32, 2, 1), gpu("a100"), opt_in()).feasible);
    // bf16 runs at the fp16 rate on every part here: the same prediction.
    const Problem bf16 = make_gemm(1024, 1024, 1024, Element::BF16);
    EXPECT_DOUBLE_EQ(predict(bf16, tc(64, 64, 32, 32, 32, 2, 1), gpu("a100"), opt_in()).total_us,
                     predict(f16, tc(64, 64, 32, 32, 32, 2, 1), gpu("a100"), opt_in()).total_us);
}

TEST(TensorCores, HandComputedIterationOnA100) {
    // A100, 128x128x32, 2x2 warps of 64x64, S3 R1, GEMM 2048^3 fp16, opt-in.
    const Problem p = make_gemm(2048, 2048, 2048, Element::F16);
    const Prediction r = predict(p, tc(128, 128, 32, 64, 64, 3, 1), gpu("a100"), opt_in());
    ASSERT_TRUE(r.feasible) << r.reason;
    // mma.sync: 4096 FLOPs / (2048 / 4 schedulers) = 8 cycles on a warp's tensor core; per
    // iteration 2 k steps x 32 tiles = 64 of them: 512 cycles per warp, one warp per scheduler.
    EXPECT_DOUBLE_EQ(r.fma_cycles, 512);
    // Shared memory: 2 steps x 8 ldmatrix.x4 x 4 wavefronts = 64 per warp, plus the stage's
    // 16384 bytes / 128 / 4 warps = 32: (64 + 32) x 4 warps = 384.
    EXPECT_DOUBLE_EQ(r.smem_cycles, 384);
    // Issue: 2 x (32 + 8) + 8 copies (2 x 4096 halves / 8 / 128 threads) + 25 + 3.5 x 16
    // ldmatrix (the loop's overhead, fitted to the main-loop report) + 1 barrier = 170.
    EXPECT_DOUBLE_EQ(r.issue_cycles, 170);
    EXPECT_DOUBLE_EQ(r.issue_per_warp, 170);
    // Warp chain, R1: per step the ldmatrix latency (23) and then 32 x 8 cycles of mma.sync.
    EXPECT_DOUBLE_EQ(r.warp_chain_cycles, 2 * (23 + 256));
    // One block: max(512, 384, 170, 558) + 1 barrier x 20 = 578.
    EXPECT_DOUBLE_EQ(r.compute_cycles, 578);
    EXPECT_EQ(r.regs_estimated, 221);   // 128 + 0.34 x 2 x 32 + 0.40 x 128 + 20
    EXPECT_EQ(r.occ.blocks_per_sm, 2);  // 224 allocated, 4 warps: 16384 / 7168 = 2 warps per
                                        // sub-partition, 8 per SM
    EXPECT_EQ(r.occ.limiter, OccupancyLimiter::Registers);
    // The compute floor is at the mma.sync rate: 2 x 2048^3 / (2048 x 108 x 1.41 GHz).
    EXPECT_NEAR(r.compute_floor_us, 2.0 * 2048 * 2048 * 2048 / (2048.0 * 108 * 1.41e3), 1e-9);
    EXPECT_NE(r.explain().find("mma.sync 512"), std::string::npos) << r.explain();
}

TEST(TensorCores, MoreStagesWinWhileLatencyBound) {
    // H200, GEMM 2048^3 fp16, 128x128x32 w64x64, opt-in: one stage waits for every tile
    // (latency-bound, loads exposed), two hide them; occupancy (registers: 2 blocks) does not move.
    const Problem p = make_gemm(2048, 2048, 2048, Element::F16);
    const Prediction s1 = predict(p, tc(128, 128, 32, 64, 64, 1, 1), gpu("h200"), opt_in());
    const Prediction s2 = predict(p, tc(128, 128, 32, 64, 64, 2, 1), gpu("h200"), opt_in());
    ASSERT_TRUE(s1.feasible && s2.feasible);
    EXPECT_EQ(s1.occ.blocks_per_sm, s2.occ.blocks_per_sm);
    EXPECT_EQ(s1.bound, Bound::LoadLatency);
    EXPECT_GT(s1.exposed_load_cycles, 0);
    EXPECT_NE(s1.explain().find("stay exposed"), std::string::npos) << s1.explain();
    EXPECT_EQ(s2.exposed_load_cycles, 0);
    EXPECT_LT(s2.total_us, 0.6 * s1.total_us);
    // On A100 (a smaller wave of 216 blocks for 256: the tail wave runs one block per SM, whose
    // loads one stage in flight does not cover), the third stage still wins.
    const Prediction a2 = predict(p, tc(128, 128, 32, 64, 64, 2, 1), gpu("a100"), opt_in());
    const Prediction a3 = predict(p, tc(128, 128, 32, 64, 64, 3, 1), gpu("a100"), opt_in());
    EXPECT_EQ(a2.occ.blocks_per_sm, a3.occ.blocks_per_sm);
    EXPECT_LT(a3.total_us, a2.total_us);
    // With occupancy unchanged, a stage never makes a tensor-core prediction slower, over the
    // whole space, on every sm_80+ GPU and both limits.
    int pairs = 0, faster = 0;
    for (const GpuSpec &g : all_gpus()) {
        if (!g.has_mma_sync()) continue;
        for (ModelOptions o : {ModelOptions(), opt_in()}) {
            for (const Schedule &s : enumerate_schedules(SearchSpace::for_tensor_cores())) {
                if (s.smem_stages == 6) continue;
                Schedule deeper = s;
                deeper.smem_stages++;
                const Prediction a = predict(p, s, g, o), b = predict(p, deeper, g, o);
                if (!a.feasible || !b.feasible || a.occ.blocks_per_sm != b.occ.blocks_per_sm) continue;
                pairs++;
                faster += b.total_us < a.total_us;
                EXPECT_LE(b.total_us, a.total_us * (1 + 1e-12)) << g.name << " " << s.to_string();
            }
        }
    }
    EXPECT_GT(pairs, 1000);
    EXPECT_GT(faster, 100);
    printf("tensor cores: %d stage increases at equal occupancy, %d predicted faster\n", pairs, faster);
}

TEST(TensorCores, OccupancyCliff) {
    // A100, 128x128x32 w64x64 (2 blocks/SM by registers): the sixth stage takes 96 KiB, and two
    // blocks need 2 x 97 KiB > 164 KiB: one block per SM, whose chain runs alone. Predicted slower
    // than five stages, and explain() says what limits it.
    const Problem p = make_gemm(2048, 2048, 2048, Element::F16);
    const Prediction s5 = predict(p, tc(128, 128, 32, 64, 64, 5, 1), gpu("a100"), opt_in());
    const Prediction s6 = predict(p, tc(128, 128, 32, 64, 64, 6, 1), gpu("a100"), opt_in());
    ASSERT_TRUE(s5.feasible && s6.feasible);
    EXPECT_EQ(s5.occ.blocks_per_sm, 2);
    EXPECT_EQ(s6.occ.blocks_per_sm, 1);
    EXPECT_EQ(s6.occ.limiter, OccupancyLimiter::SharedMemory);
    EXPECT_GT(s6.total_us, s5.total_us);
    EXPECT_NE(s6.explain().find("limited by shared memory"), std::string::npos) << s6.explain();
    // Under Halide's runtime defaults (48 KiB, 64 registers) the same problem can use only warp
    // tiles whose fragments fit 64 registers: 16x16, 16x32, 32x16, never 64x64.
    SearchOptions def;
    def.space = SearchSpace::for_tensor_cores();
    const SearchResult r = search(p, gpu("a100"), def);
    ASSERT_FALSE(r.ranked.empty());
    std::set<std::pair<int, int>> warp_tiles;
    for (const Prediction &x : r.ranked) warp_tiles.insert({x.schedule.tm, x.schedule.tn});
    // 32x32 holds 32 accumulators, 16 fragment registers per k step and the addresses: about 70.
    EXPECT_EQ(warp_tiles, (std::set<std::pair<int, int>>{{16, 16}, {16, 32}, {32, 16}}));
}

TEST(TensorCores, TiesGoToTheLeanerLoop) {
    // H200, GEMM 2048^3 fp16, opt-in: the tensor pipe binds 128x128 blocks whatever their warp and
    // k tiles. The k tile of 16 is predicted fastest by its shorter prologue (35.48 against 35.61
    // us), but its warps spend 3.25 to 4.75 issue slots an mma.sync where 128x128x32 w64x64 spends
    // 2.81, and with w32x64 its shared-memory pipe is as busy as the tensor pipe. Within 1% of the
    // fastest, the ranking puts the candidate whose pipes beside the binding one are least busy
    // first.
    const Problem p = make_gemm(2048, 2048, 2048, Element::F16);
    SearchOptions o;
    o.space = SearchSpace::for_tensor_cores();
    o.model.limits = RuntimeLimits::OptIn;
    const SearchResult r = search(p, gpu("h200"), o);
    ASSERT_FALSE(r.ranked.empty());
    auto load = [](const Prediction &x) {
        const double busiest = std::max({x.fma_cycles, x.smem_cycles, x.issue_cycles});
        return (x.fma_cycles + x.smem_cycles + x.issue_cycles) / busiest;
    };
    double fastest = r.ranked[0].total_us;
    for (const Prediction &x : r.ranked) fastest = std::min(fastest, x.total_us);
    const Prediction &first = r.ranked[0];
    EXPECT_EQ(first.schedule.kt, 32);
    EXPECT_EQ(first.schedule.tm, 64);
    EXPECT_EQ(first.schedule.tn, 64);
    EXPECT_GT(first.total_us, fastest);
    EXPECT_LT(first.total_us, 1.01 * fastest);
    EXPECT_EQ(first.bound, Bound::SmCompute);
    int in_tier = 0;
    for (const Prediction &x : r.ranked) {
        if (x.total_us >= 1.01 * fastest || x.bound != Bound::SmCompute) continue;
        in_tier++;
        EXPECT_LE(load(first), load(x)) << x.schedule.to_string();
    }
    EXPECT_GT(in_tier, 10);
    // Where loads bind (the batched 12x512x512x64: every candidate of the first tier at the
    // device-memory floor), the pipes have slack: the tier goes to the leanest loop, by the
    // instructions a warp issues a mma.sync, among the candidates that pipeline (prefetch distance
    // >= 1 over >= 2 chunks) and whose first wave gives each of an SM's 4 schedulers a warp. (The
    // one of least shared memory, 64x64x16 w32x32 S2, spent 6.00 beside each mma.sync in the
    // main-loop report; the leanest of all, one chunk of 64 and no loop, or single-warp blocks.)
    const SearchResult b = search(make_bmm(12, 512, 512, 64, Element::F16), gpu("h200"), o);
    ASSERT_FALSE(b.ranked.empty());
    const Prediction &lean = b.ranked[0];
    EXPECT_NE(lean.bound, Bound::SmCompute);
    auto issue_per_mma = [](const Prediction &x) {
        return x.issue_per_warp / (x.schedule.mma_tiles_per_warp() * (x.schedule.kt / 16));
    };
    auto qualifies = [](const Prediction &x) {
        const double warps_per_sm = x.occ.blocks_per_sm * std::min(1.0, x.waves) * x.schedule.warps();
        return x.prefetch_distance >= 1 && x.k_iterations >= 2 && warps_per_sm >= 4;
    };
    EXPECT_TRUE(qualifies(lean)) << lean.schedule.to_string();
    // What the ranking took by time and then less shared memory and fewer registers.
    auto by_time_then_cheaper = [](const Prediction &x) {
        const Schedule &s = x.schedule;
        return std::make_tuple(x.total_us, x.smem_per_block, x.occ.regs_allocated, s.smem_stages, s.reg_stages, s.bm,
                               s.bn, s.kt, s.tm, s.tn);
    };
    const Prediction *cheapest = &lean;
    int tier_members = 0;
    for (const Prediction &x : b.ranked) {
        if (x.total_us >= 1.01 * lean.total_us || x.bound == Bound::SmCompute) continue;
        tier_members++;
        if (qualifies(x)) EXPECT_LE(issue_per_mma(lean), issue_per_mma(x)) << x.schedule.to_string();
        if (by_time_then_cheaper(x) < by_time_then_cheaper(*cheapest)) cheapest = &x;
    }
    EXPECT_GT(tier_members, 10);
    printf("load-bound tier: %s issues %.2f a mma.sync, %s %.2f\n", lean.schedule.to_string().c_str(),
           issue_per_mma(lean), cheapest->schedule.to_string().c_str(), issue_per_mma(*cheapest));
    EXPECT_LT(issue_per_mma(lean), 0.75 * issue_per_mma(*cheapest));
    // The FP32 ranking stays by time alone: its issue term binds, so it tells such loops apart.
    const SearchResult f = search(make_gemm(2048, 2048, 2048), gpu("h200"), SearchOptions());
    for (size_t i = 1; i < f.ranked.size(); i++) EXPECT_LE(f.ranked[i - 1].total_us, f.ranked[i].total_us);
}

TEST(TensorCores, SearchRanksTheSpaceQuickly) {
    const Problem p = make_gemm(2048, 2048, 2048, Element::F16);
    SearchOptions o;
    o.space = SearchSpace::for_tensor_cores();
    o.model.limits = RuntimeLimits::OptIn;
    const SearchResult r = search(p, default_gpu(), o);
    printf("%s", r.report(10).c_str());
    // 129 tile shapes (12 (block, warp) pairs per dimension, less 15 with more than 32 warps) x 3
    // k tiles x 6 S x 2 R.
    EXPECT_EQ(r.enumerated, 4644u);
    EXPECT_EQ(enumerate_schedules(o.space).size(), 4644u);
    ASSERT_FALSE(r.ranked.empty());
    // Ranked by predicted time to within 1% of the fastest (ties then go to the leaner loop:
    // TiesGoToTheLeanerLoop).
    const double tier = 0.01 * r.ranked[0].total_us;
    for (size_t i = 1; i < r.ranked.size(); i++) EXPECT_LE(r.ranked[i - 1].total_us, r.ranked[i].total_us + tier);
    // The best is bound by the SM's mma.sync and shared-memory throughput, within 15% of the
    // mma.sync peak floor, and pipelined.
    EXPECT_EQ(r.ranked[0].bound, Bound::SmCompute);
    EXPECT_LT(r.ranked[0].total_us, 1.15 * r.ranked[0].compute_floor_us);
    EXPECT_GE(r.ranked[0].schedule.smem_stages, 2);
    EXPECT_LT(r.seconds, 1.0);
}
