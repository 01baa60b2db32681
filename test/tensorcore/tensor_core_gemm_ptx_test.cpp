// The user's fp16/bf16 GEMM (TensorCoreGemm.h) compiled for CUDA sm_80 in-process: the pass
// replaces the inner product by ldmatrix + mma.sync markers, which the NVPTX rewrite turns into
// the instructions. Per chunk of tile_k = 32 (two 16-wide K steps) and a 32 x 32 warp tile
// (2 x 4 tiles of 16 x 8), the kernel has 2 x 2 x 4 = 16 mma.sync, 2 x 2 ldmatrix.x4 for A and
// 2 x 2 for B, each with .trans exactly where the operand is contiguous along M (A) or N (B).
// ptxas assembles it for sm_80 and sm_90 with no spills and no local memory. Not run (no GPU).

#include "Halide.h"

#include "KernelSource.h"

#include "codegen/AsyncCopyMarkers.h"
#include "directive/Requests.h"

#include "TensorCoreGemm.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

using namespace Halide;

using kernel_source::count;

std::string ptx_of(const Module &m) {
    return kernel_source::of(m);
}

std::string ptxas_output(const std::string &ptx, const std::string &arch, int *status) {
    return kernel_source::ptxas_output(ptx, arch, "tc_gemm", status);
}

std::string compile(const tc_test::Gemm &g) {
    std::vector<Argument> args;
    Pipeline p = g.build(&args);
    alcop::enable(p, Target(g.target));
    return ptx_of(p.compile_to_module(args, "tc_gemm", Target(g.target)));
}

TEST(TensorCoreGemm, MmaAndLdmatrixPerKStep) {
    ASSERT_TRUE(alcop::async_copy_rewrite_registered());
    for (Type t : {Float(16), BFloat(16)}) {
        for (bool a_m_major : {false, true}) {
            for (bool b_k_major : {false, true}) {
                SCOPED_TRACE(::testing::Message() << t << " a_m_major " << a_m_major << " b_k_major " << b_k_major);
                tc_test::Gemm g;
                g.a_type = g.b_type = t;
                g.a_m_major = a_m_major;
                g.b_k_major = b_k_major;
                const std::string ptx = compile(g);
                ASSERT_FALSE(ptx.empty());
                const int k_steps = g.tile_k / 16, tiles = (g.warp_m / 16) * (g.warp_n / 8);
                const int a_loads = k_steps * g.warp_m / 16, b_loads = k_steps * g.warp_n / 16;
                const std::string mma = t.is_bfloat() ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" :
                                                        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
                EXPECT_EQ(count(ptx, mma), k_steps * tiles) << ptx;
                EXPECT_EQ(count(ptx, "mma.sync"), k_steps * tiles);
                const int trans = (a_m_major ? a_loads : 0) + (b_k_major ? 0 : b_loads);
                EXPECT_EQ(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), trans);
                EXPECT_EQ(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), a_loads + b_loads - trans);
                EXPECT_EQ(count(ptx, "alcop_"), 0);
                EXPECT_EQ(count(ptx, ".local"), 0) << "local memory";
                std::printf("%s a_m_major=%d b_k_major=%d: %d mma.sync, %d ldmatrix.x4, %d ldmatrix.x4.trans\n",
                            t.is_bfloat() ? "bf16" : "f16", a_m_major, b_k_major, count(ptx, "mma.sync"),
                            count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
                            count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
#ifdef ALCOP_PTXAS
                for (const char *arch : {"sm_80", "sm_90"}) {
                    int status = 0;
                    const std::string log = ptxas_output(ptx, arch, &status);
                    EXPECT_EQ(status, 0) << log;
                    EXPECT_EQ(count(log, "0 bytes spill stores, 0 bytes spill loads"), count(log, "spill stores"))
                        << log;
                    EXPECT_EQ(count(log, "bytes stack frame"), count(log, "0 bytes stack frame")) << log;
                    if (t.is_bfloat() && a_m_major && !b_k_major) std::printf("ptxas %s:\n%s", arch, log.c_str());
                }
#endif
            }
        }
    }
}

// The shared level pipelined with 3 stages: the same mma.sync and ldmatrix counts (the
// tensor-core rewrite runs after the pipeline rewrite, on the consumers' slot-indexed loads),
// one commit group per prologue step and one in the loop, every wait followed by a barrier before
// the next ldmatrix, no local memory; ptxas: no spills. With vector = 1 the 2-byte copies do
// not qualify for cp.async and stay synchronous; with vector = 8 (16-byte copies), see
// DISABLED_CpAsyncCopiesOfHalves.
TEST(TensorCoreGemm, PipelinedThreeStages) {
    for (Type t : {Float(16), BFloat(16)}) {
        SCOPED_TRACE(::testing::Message() << t);
        tc_test::Gemm g;
        g.a_type = g.b_type = t;
        g.stages = 3;
        const std::string ptx = compile(g);
        ASSERT_FALSE(ptx.empty());
        const int k_steps = g.tile_k / 16, tiles = (g.warp_m / 16) * (g.warp_n / 8);
        EXPECT_EQ(count(ptx, "mma.sync"), k_steps * tiles);
        EXPECT_EQ(count(ptx, "ldmatrix.sync"), k_steps * (g.warp_m / 16 + g.warp_n / 16));
        EXPECT_EQ(count(ptx, "cp.async.commit_group"), g.stages) << ptx;  // the prologue's stages - 1, the loop's one
        // Every wait is followed by a barrier before the next shared read.
        size_t at = 0;
        int waits = 0;
        while ((at = ptx.find("cp.async.wait_group", at)) != std::string::npos) {
            const size_t bar = ptx.find("bar.sync", at), next_ld = ptx.find("ldmatrix", at);
            EXPECT_TRUE(bar != std::string::npos && (next_ld == std::string::npos || bar < next_ld));
            waits++;
            at++;
        }
        EXPECT_GE(waits, 2);
        EXPECT_EQ(count(ptx, ".local"), 0);
        std::printf(
            "%s, 3 stages: %d mma.sync, %d ldmatrix, %d cp.async, %d commit_group, %d wait_group, %d bar.sync\n",
            t.is_bfloat() ? "bf16" : "f16", count(ptx, "mma.sync"), count(ptx, "ldmatrix.sync"),
            count(ptx, "cp.async.cg.shared.global") + count(ptx, "cp.async.ca.shared.global"),
            count(ptx, "cp.async.commit_group"), count(ptx, "cp.async.wait_group"), count(ptx, "bar.sync"));
#ifdef ALCOP_PTXAS
        for (const char *arch : {"sm_80", "sm_90"}) {
            int status = 0;
            const std::string log = ptxas_output(ptx, arch, &status);
            EXPECT_EQ(status, 0) << log;
            EXPECT_EQ(count(log, "0 bytes spill stores, 0 bytes spill loads"), count(log, "spill stores")) << log;
            std::printf("ptxas %s:\n%s", arch, log.c_str());
        }
#endif
    }
}

/** The elements of the accumulator's per-thread array (prod, in registers) in the kernel the
 * pass returns; -1 when there is none of constant size. */
int64_t accumulator_elements(const Internal::Stmt &s) {
    class Find : public Internal::IRVisitor {
        using Internal::IRVisitor::visit;
        void visit(const Internal::Allocate *op) override {
            const int64_t *e = op->extents.size() == 1 ? Internal::as_const_int(op->extents[0]) : nullptr;
            if (op->memory_type == MemoryType::Register && op->name.rfind("prod", 0) == 0 && e) found = *e;
            Internal::IRVisitor::visit(op);
        }

    public:
        int64_t found = -1;
    } find;
    s.accept(&find);
    return find.found;
}

// Warp tiles 16 wide in N (the blocks and k tiles the Alcop plugin leaves out for them,
// src/autoscheduler/Candidates.cpp) and a 64 x 64 block of 32 x 32 warps: the block's
// accumulator tile shrinks to what a lane holds, warp_m x warp_n / 32 floats
// (CompactRegisters). Its rows 8 apart in the block tile once left a sparse window (266 floats
// for 8 used in a 32 x 32 block of 16 x 16 warps), a private array wherever codegen does not
// split it (pocl). No local memory, at 3 and 6 shared stages (6 once failed in codegen with
// "Symbol not found"), unguarded (and guarded, the first tiles).
TEST(TensorCoreGemm, NarrowWarpTilesKeepAccumulatorsInRegisters) {
    struct Tiles {
        int block_m, block_n, warp_m, warp_n, tile_k;
    };
    const Tiles tiles[] = {{32, 32, 16, 16, 32},  {64, 32, 16, 16, 32}, {128, 32, 16, 16, 32}, {64, 32, 32, 16, 32},
                           {128, 32, 32, 16, 32}, {64, 64, 16, 16, 64}, {64, 64, 32, 32, 32}};
    for (const Tiles &t : tiles) {
        for (const auto &[stages, guarded] : {std::pair{3, false}, std::pair{3, true}, std::pair{6, false}}) {
            // (6 stages of the larger tiles need more than the 48 KiB of shared memory; the
            // guarded copies change no accumulator index: once, on the first tiles, suffices.)
            if (stages * (t.block_m + t.block_n) * t.tile_k * 2 > 48 * 1024) continue;
            if (guarded && &t != &tiles[0]) continue;
            tc_test::Gemm g;
            g.block_m = t.block_m;
            g.block_n = t.block_n;
            g.warp_m = t.warp_m;
            g.warp_n = t.warp_n;
            g.tile_k = t.tile_k;
            g.stages = stages;
            g.guarded = guarded;
            char what[128];
            std::snprintf(what, sizeof(what), "%dx%d block, %dx%d warps, k tile %d, %d stages%s", g.block_m, g.block_n,
                          g.warp_m, g.warp_n, g.tile_k, stages, guarded ? ", guarded" : "");
            SCOPED_TRACE(what);
            Internal::Stmt lowered;
            alcop::set_lowering_observer(
                [&](const Internal::Stmt &, const Internal::Stmt &after, const auto &) { lowered = after; });
            std::string ptx;
            try {
                ptx = compile(g);
            } catch (const CompileError &e) {
                ADD_FAILURE() << e.what();
            }
            alcop::set_lowering_observer(nullptr);
            ASSERT_FALSE(ptx.empty());
            EXPECT_EQ(count(ptx, "mma.sync"), g.tile_k / 16 * (g.warp_m / 16) * (g.warp_n / 8));
            EXPECT_EQ(accumulator_elements(lowered), g.warp_m * g.warp_n / 32);
            EXPECT_EQ(count(ptx, ".local"), 0);
            std::printf("%s: %d mma.sync, accumulator of %d floats, %d .local\n", what, count(ptx, "mma.sync"),
                        (int)accumulator_elements(lowered), count(ptx, ".local"));
        }
    }
}

// The tiles the issue asks as defaults for an H200: a 128 x 128 block of four 64 x 64 warp
// tiles, k tile 32, 3 shared stages. Per chunk 2 x 32 mma.sync and 2 x (4 + 4) ldmatrix.x4;
// ptxas for sm_80 and sm_90 must not spill (128 fp32 accumulators per thread).
TEST(TensorCoreGemm, H200DefaultTiles) {
    tc_test::Gemm g;
    g.block_m = g.block_n = 128;
    g.warp_m = g.warp_n = 64;
    g.stages = 3;
    const std::string ptx = compile(g);
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(count(ptx, "mma.sync"), 2 * 32);
    EXPECT_EQ(count(ptx, "ldmatrix.sync"), 2 * 8);
    EXPECT_EQ(count(ptx, ".local"), 0);
#ifdef ALCOP_PTXAS
    for (const char *arch : {"sm_80", "sm_90"}) {
        int status = 0;
        const std::string log = ptxas_output(ptx, arch, &status);
        EXPECT_EQ(status, 0) << log;
        EXPECT_EQ(count(log, "0 bytes spill stores, 0 bytes spill loads"), count(log, "spill stores")) << log;
        std::printf("ptxas %s:\n%s", arch, log.c_str());
    }
#endif
}

// DISABLED, not yet working: 16-byte copies of fp16/bf16 tiles as cp.async. The copy
// lowering's marker for a float16x8 value (alcop_cp_async_copy_f16) fails Halide 14's codegen
// (an extern call on float16 vectors does not produce <8 x half>: Halide passes halves to
// extern calls as 16-bit integers). Tried: the marker on the bits (alcop_cp_async_copy_u16 of
// reinterpret(uint16x8, load), stored through a uint16 view of the slot) compiles, but the
// NVPTX rewrite leaves plain ld.global.nc.v4 + st.shared.v4 (8-byte pieces), no cp.async: to
// be found in src/copy/CopyLowering.cpp (async_store) and src/codegen/AsyncCopyRewrite.cpp.
TEST(TensorCoreGemm, DISABLED_CpAsyncCopiesOfHalves) {
    tc_test::Gemm g;
    g.stages = 3;
    g.vector = 8;
    const std::string ptx = compile(g);
    EXPECT_GT(count(ptx, "cp.async.cg.shared.global"), 0) << ptx;
    EXPECT_EQ(count(ptx, "mma.sync"), (g.tile_k / 16) * (g.warp_m / 16) * (g.warp_n / 8));
}

}  // namespace
