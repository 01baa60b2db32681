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

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

using namespace Halide;

using kernel_source::count;

std::string ptx_of(const Module &m) {
    return kernel_source::of(m);
}

std::string ptxas_output(const std::string &ptx, const std::string &arch, int *status) {
    return ptxas::run(ptx, arch, "tc_gemm", status);
}

/** ptxas assembles `ptx` for sm_80 and sm_90 with no spills; prints its log when `print`. */
void expect_no_spills(const std::string &ptx, bool print = true) {
#ifdef ALCOP_PTXAS
    for (const char *arch : {"sm_80", "sm_90"}) {
        int status = 0;
        const std::string log = ptxas_output(ptx, arch, &status);
        EXPECT_EQ(status, 0) << log;
        EXPECT_EQ(count(log, "0 bytes spill stores, 0 bytes spill loads"), count(log, "spill stores")) << log;
        if (print) std::printf("ptxas %s:\n%s", arch, log.c_str());
    }
#else
    ALCOP_SKIP_ASSEMBLING("the tensor-core GEMM");
#endif
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
#ifndef ALCOP_PTXAS
    ALCOP_SKIP_ASSEMBLING("the tensor-core GEMMs");
#endif
}

// The shared level pipelined with 3 stages: the same mma.sync and ldmatrix counts (the
// tensor-core rewrite runs after the pipeline rewrite, on the consumers' slot-indexed loads), no
// local memory; ptxas: no spills. With vector = 1 the 2-byte copies do not qualify for cp.async
// and go through registers: no commit group or wait is left without a copy, the barriers alone
// publish the slots; wider ones are cp.async (CpAsyncCopiesOfHalves: one commit group per
// prologue step and one in the loop, every wait followed by a barrier before the next ldmatrix).
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
        EXPECT_EQ(count(ptx, "cp.async"), 0) << ptx;
        EXPECT_GE(count(ptx, "bar.sync"), 2);
        EXPECT_EQ(count(ptx, ".local"), 0);
        std::printf(
            "%s, 3 stages: %d mma.sync, %d ldmatrix, %d cp.async, %d commit_group, %d wait_group, %d bar.sync\n",
            t.is_bfloat() ? "bf16" : "f16", count(ptx, "mma.sync"), count(ptx, "ldmatrix.sync"),
            count(ptx, "cp.async.cg.shared.global") + count(ptx, "cp.async.ca.shared.global"),
            count(ptx, "cp.async.commit_group"), count(ptx, "cp.async.wait_group"), count(ptx, "bar.sync"));
        expect_no_spills(ptx);
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
    expect_no_spills(ptx);
}

/** The basic blocks of a kernel's PTX (split at its labels, `LBB...:` or `$L__BB...:`, and at
 * LLVM's `// %bb.N:` fall-through markers), each as the sequence of the instructions that
 * matter to the register stages: l (ldmatrix), m (mma.sync), c (commit_group), w (wait_group),
 * b (bar.sync). Within a block the text is the order of execution; the blocks' layout is
 * LLVM's. */
std::vector<std::string> block_sequences(const std::string &ptx) {
    std::vector<std::string> blocks(1);
    std::istringstream in(ptx);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("LBB", 0) == 0 || line.rfind("$L__BB", 0) == 0 || line.rfind("// %bb.", 0) == 0) {
            blocks.emplace_back();
        }
        for (auto [what, code] : {std::pair<const char *, char>{"ldmatrix.sync", 'l'},
                                  {"mma.sync", 'm'},
                                  {"cp.async.commit_group", 'c'},
                                  {"cp.async.wait_group", 'w'},
                                  {"bar.sync", 'b'}}) {
            if (line.find(what) != std::string::npos) blocks.back() += code;
        }
    }
    return blocks;
}

// Register stages of the fragments (alcop::pipeline(prod, 2, Level::Register)) on the H200
// defaults (3 shared stages, 16-byte cp.async copies): the ldmatrix of k step 1 is issued
// before the mma of step 0, and the first step of chunk ko + 1 is loaded during step 1 of
// chunk ko, after the wait and the barrier that publish its tile; a register prologue loads
// step 0 of the first chunk. So, per k step, the same mma.sync and ldmatrix counts plus one
// step of ldmatrix (the prologue), and the loop one block (the next chunk's loads are not
// guarded: MmaInnerProduct.cpp), in this order: the commit, step 1's ldmatrix, step 0's mma, the
// wait, the one barrier of the iteration, the next chunk's step 0 ldmatrix, step 1's mma; the
// prologue's ldmatrix alone in a block. No local memory; ptxas without spills.
TEST(TensorCoreGemm, RegisterStagesPrefetchAcrossChunks) {
    tc_test::Gemm g;
    g.block_m = g.block_n = 128;
    g.warp_m = g.warp_n = 64;
    g.stages = 3;
    g.vector = 8;
    g.register_stages = 2;
    const std::string ptx = compile(g);
    ASSERT_FALSE(ptx.empty());
    const int per_step = g.warp_m / 16 + g.warp_n / 16, mma_per_step = (g.warp_m / 16) * (g.warp_n / 8),
              k_steps = g.tile_k / 16;
    EXPECT_EQ(count(ptx, "mma.sync"), k_steps * mma_per_step);
    EXPECT_EQ(count(ptx, "ldmatrix.sync"), (k_steps + 1) * per_step);
    const std::string loads(per_step, 'l'), mmas(mma_per_step, 'm');
    int main = 0, prologue = 0, barriers_with_mma = 0;
    for (const std::string &b : block_sequences(ptx)) {
        main += b == "c" + loads + mmas + "wb" + loads + mmas;
        prologue += b == loads;
        if (b.find('m') != std::string::npos) barriers_with_mma += (int)std::count(b.begin(), b.end(), 'b');
    }
    EXPECT_EQ(main, 1) << "commit, step 1's ldmatrix, step 0's mma, wait, barrier, the next chunk's step 0, step 1's mma";
    EXPECT_EQ(prologue, 1) << "the prologue's step 0 alone";
    EXPECT_EQ(barriers_with_mma, 1) << "one barrier per iteration";
    EXPECT_EQ(count(ptx, ".local"), 0) << "fragment registers in local memory";
    std::printf("register stages 2: %d mma.sync, %d ldmatrix, blocks: main %d, prologue ldmatrix %d\n",
                count(ptx, "mma.sync"), count(ptx, "ldmatrix.sync"), main, prologue);
    expect_no_spills(ptx);
}

// 16-byte copies of fp16/bf16 tiles (vector = 8 halves) are cp.async.cg of 16 bytes, 8- and
// 4-byte ones (vector 4, 2) cp.async.ca: the copy lowering marks a 2-byte float copy on its
// bits (u16 lanes) and moves a 16-byte one as one 4 x 32-bit access, the only 16-byte aligned
// access Halide's PTX backend emits for it. One copy per operand and step (2 prologue steps,
// 1 in the loop), each step one commit group, each wait before a barrier, no synchronous copy left (no ld.global, no st.shared). With guarded
// copies (Gemm::guarded: zeros outside A and B, any M, N, K) the src-size is a register (zero
// fill past the inputs' ends), else the constant size. ptxas: no spills, no local memory.
TEST(TensorCoreGemm, CpAsyncCopiesOfHalves) {
    struct Width {
        int vector;
        std::string instruction;
    };
    for (Type t : {Float(16), BFloat(16)}) {
        // The narrower copies take the same route for both types: f16 only, to keep it fast.
        for (const Width &w : {Width{8, "cp.async.cg.shared.global"}, Width{4, "cp.async.ca.shared.global"},
                               Width{2, "cp.async.ca.shared.global"}}) {
            if (t.is_bfloat() && w.vector < 8) continue;
            for (bool guarded : {false, true}) {
                SCOPED_TRACE(::testing::Message() << t << " vector " << w.vector << " guarded " << guarded);
                tc_test::Gemm g;
                g.a_type = g.b_type = t;
                g.stages = 3;
                g.vector = w.vector;
                g.guarded = guarded;
                g.unroll_copies = true;
                const std::string ptx = compile(g);
                ASSERT_FALSE(ptx.empty());
                // Per step (2 prologue steps, 1 in the loop) each thread copies its share of both
                // tiles, one cp.async per vector (the copy loop unrolled: LLVM's unroller alone
                // keeps the 2-byte guarded copies a loop).
                const int threads = 32 * (g.block_m / g.warp_m) * (g.block_n / g.warp_n), bytes = 2 * w.vector;
                const int copies = g.stages * g.tile_k * (g.block_m + g.block_n) / (threads * w.vector);
                const std::string sized = w.instruction + " [%r";
                EXPECT_EQ(count(ptx, sized), copies) << ptx;
                EXPECT_EQ(count(ptx, "cp.async"),
                          copies + count(ptx, "cp.async.commit_group") + count(ptx, "cp.async.wait_group"));
                // One commit group per prologue step (stages - 1) and one in the loop; every wait
                // is followed by a barrier before the next shared read.
                EXPECT_EQ(count(ptx, "cp.async.commit_group"), g.stages);
                int waits = 0;
                for (size_t at = 0; (at = ptx.find("cp.async.wait_group", at)) != std::string::npos; at++, waits++) {
                    const size_t bar = ptx.find("bar.sync", at), next_ld = ptx.find("ldmatrix", at);
                    EXPECT_TRUE(bar != std::string::npos && (next_ld == std::string::npos || bar < next_ld));
                }
                EXPECT_GE(waits, 2);
                // `[dst], [src], size, src-size`: src-size is computed for every copy, each its
                // own where it zero-fills past K; otherwise only the tile's existence (the prefetch
                // past the loop's end is predicated), one for all the copies of a step.
                const kernel_source::SrcSizes sizes = kernel_source::src_sizes(ptx, w.instruction, bytes);
                EXPECT_EQ(sizes.constant, 0);
                EXPECT_EQ((int)sizes.computed.size(), copies);
                if (guarded) {
                    EXPECT_GT(sizes.distinct(), (size_t)g.stages);
                } else {
                    EXPECT_LE(sizes.distinct(), (size_t)g.stages);
                }
                EXPECT_EQ(count(ptx, "ld.global"), 0) << "a synchronous copy is left";
                EXPECT_EQ(count(ptx, "st.shared"), 0) << "a synchronous copy is left";
                EXPECT_EQ(count(ptx, "mma.sync"), (g.tile_k / 16) * (g.warp_m / 16) * (g.warp_n / 8));
                EXPECT_EQ(count(ptx, ".local"), 0);
                std::printf("%s vector %d%s: %d x %s %d bytes (%d distinct src-sizes), %d commit_group, "
                            "%d wait_group\n",
                            t.is_bfloat() ? "bf16" : "f16", w.vector, guarded ? " (guarded)" : "", count(ptx, sized),
                            w.instruction.c_str(), bytes, (int)sizes.distinct(), count(ptx, "cp.async.commit_group"),
                            count(ptx, "cp.async.wait_group"));
                if (w.vector == 8) expect_no_spills(ptx, false);
            }
        }
    }
}

// A user's own schedule of a K the k tile does not divide (Gemm::k_tail): one reduction over
// [0, K) split into chunks of 32 with a guarded last chunk, whose step loop has no constant
// extent. With tiles of constant bound extents the pass zero-fills that chunk's tail
// (rewrite/ZeroFilledTails.h): every chunk is mma.sync, and no thread multiplies on its own
// (no fma.rn.f32). With 16-byte copies (vector 8) the tile's first element is found through the
// lets of the copy (whose index adds the chunk's k in one and subtracts it in another:
// collect_terms), and every copy is a cp.async whose src-size zero-fills past K: no copy is
// left synchronous or staged through registers (no ld.global, no st.shared). Without bound
// tiles the analysis says what is missing (TensorCoreMisuse.GuardedLastChunkOverUnboundedTiles).
// Tiles bound to more than a chunk along k (64 for chunks of 32): each chunk still runs its 32
// steps, not the tile's 64. Reads clamped into the inputs along the vectors too (Gemm::
// clamp_vectors): the gathers along K become cp.async (copy/CopyLowering.cpp, unclamped).
TEST(TensorCoreGemm, GuardedKTailOfAUsersScheduleIsZeroFilled) {
    struct Config {
        int stages, vector, k_bound;
        bool clamped = false;  // both tiles K-major, their vectors' reads clamped to K
    };
    for (Type t : {Float(16), BFloat(16)}) {
        for (const Config &c : {Config{1, 1, 0}, Config{3, 8, 0}, Config{1, 1, 64}, Config{3, 8, 0, true}}) {
            if ((c.k_bound || c.clamped) && t.is_bfloat()) continue;  // the same route for both types
            SCOPED_TRACE(::testing::Message() << t << " stages " << c.stages << " vector " << c.vector << " k_bound "
                                              << c.k_bound << " clamped " << c.clamped);
            tc_test::Gemm g;
            g.a_type = g.b_type = t;
            g.guarded = g.k_tail = true;
            g.stages = c.stages;
            g.vector = c.vector;
            g.k_bound = c.k_bound;
            g.clamp_vectors = c.clamped;
            const std::string ptx = compile(g);
            ASSERT_FALSE(ptx.empty());
            const int mma_per_chunk = (g.tile_k / 16) * (g.warp_m / 16) * (g.warp_n / 8);
            EXPECT_EQ(count(ptx, "mma.sync"), mma_per_chunk) << ptx;
            EXPECT_EQ(count(ptx, "fma.rn.f32"), 0) << "a chunk on the threads' multiply-adds";
            EXPECT_EQ(count(ptx, ".local"), 0);
            if (c.clamped) {
                // A's gathers along K, clamped to K, are each one cp.async (their src-size stops at
                // K, where the zero fill starts); B's along N, clamped to N (its last column
                // repeated, not zeroed), stay gathers staged through registers.
                const int threads = 32 * (g.block_m / g.warp_m) * (g.block_n / g.warp_n);
                const int a_copies = c.stages * g.tile_k * g.block_m / (threads * c.vector);
                const kernel_source::SrcSizes sizes = kernel_source::src_sizes(ptx, "cp.async.cg.shared.global", 16);
                EXPECT_EQ((int)sizes.computed.size(), a_copies) << ptx;
                EXPECT_EQ(sizes.constant, 0);
            } else if (c.vector == 8) {
                const kernel_source::SrcSizes sizes = kernel_source::src_sizes(ptx, "cp.async.cg.shared.global", 16);
                EXPECT_GT(sizes.computed.size(), 0u) << ptx;
                EXPECT_EQ(count(ptx, "ld.global"), 0) << "a copy left synchronous or staged through registers";
                EXPECT_EQ(count(ptx, "st.shared"), 0) << "a copy left synchronous or staged through registers";
            }
            std::printf("%s, %d stages, vector %d%s, k bound %d, guarded K tail: %d mma.sync, %d fma.rn.f32, %d "
                        "cp.async.cg\n",
                        t.is_bfloat() ? "bf16" : "f16", c.stages, c.vector, c.clamped ? " (clamped)" : "", c.k_bound,
                        count(ptx, "mma.sync"), count(ptx, "fma.rn.f32"), count(ptx, "cp.async.cg.shared.global [%r"));
            expect_no_spills(ptx, false);
        }
    }
}

}  // namespace
