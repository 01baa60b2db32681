// alcop::tensor_cores() on a user's GEMM: the well-formed schedule is accepted, and each
// request the instructions cannot serve is a Halide user error that names the Func and the
// reason (test/unit/misuse_test.cpp style). The pipelines are lowered for CUDA sm_80 up to the
// ALCOP pass only: an observer stops the compile once the pass has run (no device code).

#include "Halide.h"

#include "analysis/TensorCoreAnalysis.h"
#include "directive/Requests.h"

#include "TensorCoreGemm.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

using namespace Halide;

namespace {

#define EXPECT_REJECTION(message, who, reason)                 \
    do {                                                       \
        const std::string msg = (message);                     \
        EXPECT_NE(msg.find(who), std::string::npos) << msg;    \
        EXPECT_NE(msg.find(reason), std::string::npos) << msg; \
    } while (0)

struct StopAfterThePass {};

struct Gemm : tc_test::Gemm {
    /** "" when the pass accepts the request, else the user error. */
    std::string lower(int register_limit = 0, bool spills_are_errors = false) const {
        try {
            std::vector<Argument> args;
            Pipeline p = build(&args);
            alcop::Options options;
            options.target = Target(target);
            options.register_limit = register_limit;
            options.spills_are_errors = spills_are_errors;
            alcop::enable(p, options);
            alcop::set_lowering_observer(
                [](const Internal::Stmt &, const Internal::Stmt &,
                   const std::map<std::string, alcop::PipelineRequest> &) { throw StopAfterThePass(); });
            p.compile_to_module(args, "gemm", Target(target));
        } catch (const StopAfterThePass &) {
            alcop::set_lowering_observer(nullptr);
            return "";
        } catch (const CompileError &e) {
            alcop::set_lowering_observer(nullptr);
            std::printf("%s", e.what());
            return e.what();
        }
        alcop::set_lowering_observer(nullptr);
        return "the pass did not run";
    }
};

TEST(TensorCoreMisuse, TheWellFormedGemmIsAccepted) {
    for (Type t : {Float(16), BFloat(16)}) {
        for (bool a_m_major : {false, true}) {
            for (bool b_k_major : {false, true}) {
                SCOPED_TRACE(testing::Message() << t << " a_m_major " << a_m_major << " b_k_major " << b_k_major);
                Gemm g;
                g.a_type = g.b_type = t;
                g.a_m_major = a_m_major;
                g.b_k_major = b_k_major;
                EXPECT_EQ(g.lower(), "");
            }
        }
    }
    Gemm wide;  // one warp per block, a 64 x 64 warp tile
    wide.warp_m = wide.warp_n = 64;
    EXPECT_EQ(wide.lower(), "");
}

TEST(TensorCoreMisuse, WarpTileNotAMultipleOfTheInstruction) {
    Func f("acc");
    Var x, y;
    f(x, y) = 0.0f;
    std::string error;
    try {
        alcop::tensor_cores(f, 24, 32);
    } catch (const CompileError &e) {
        error = e.what();
    }
    EXPECT_REJECTION(error, "alcop::tensor_cores(acc, 24, 32)", "is not a multiple of the instruction shape");
    error = "";
    try {
        alcop::tensor_cores(f, 32, 12);
    } catch (const CompileError &e) {
        error = e.what();
    }
    EXPECT_REJECTION(error, "alcop::tensor_cores(acc, 32, 12)", "multiples of 16");
}

TEST(TensorCoreMisuse, OperandNeitherKNorMContiguous) {
    Gemm g;
    g.a_strided = true;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "the operand A_sh (A) is neither K- nor M-contiguous");
}

TEST(TensorCoreMisuse, OperandNotStagedInSharedMemory) {
    Gemm g;
    g.a_unstaged = true;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "(A) must be a Func staged in GPU shared memory");
}

TEST(TensorCoreMisuse, NotAPlainInnerProduct) {
    Gemm g;
    g.scaled = true;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "the update must be the plain inner product");
}

TEST(TensorCoreMisuse, AccumulatorNotFloat32) {
    Gemm g;
    g.f64_accumulator = true;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "accumulates in fp32");
}

TEST(TensorCoreMisuse, TypeTheInstructionLacks) {
    Gemm g;
    g.a_type = g.b_type = Float(32);
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)",
                     "multiplies fp16 (Float(16)) or bf16 (BFloat(16)) operands of one type, but A_sh is float32");
    Gemm mixed;
    mixed.b_type = BFloat(16);
    EXPECT_REJECTION(mixed.lower(), "alcop::tensor_cores(prod)", "A_sh is float16 and B_sh is bfloat16");
}

TEST(TensorCoreMisuse, LanesThatDoNotFormWholeWarps) {
    Gemm g;
    g.threads = Gemm::Threads::HalfWarps;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "do not form whole warps");
}

TEST(TensorCoreMisuse, AccumulatorsNotInTheFragmentLayout) {
    Gemm g;
    g.threads = Gemm::Threads::Simt;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "do not match the fragment layout of mma.sync.m16n8k16");
}

// A's rows of the warp tile not evenly spaced in its shared tile (here a gap after every 16;
// a convolution's pixel tile staged with its halo is another): ldmatrix addresses every row from
// the first rows' stride, so the rest would be read from the wrong rows.
TEST(TensorCoreMisuse, OperandRowsNotEvenlySpaced) {
    Gemm g;
    g.a_gapped = true;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)",
                     "the rows of A_sh that a warp's mma.sync tiles read are not evenly spaced in its shared tile");
    // Where the output's position is known (mins 0), the gap after row 15 is seen there.
    g.vector = 8;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)",
                     "not evenly spaced in its shared tile: row 16 of the warp tile (lane 0) is element 544 from the "
                     "first, where the stride of the first rows (32) puts it at 512");
}

TEST(TensorCoreMisuse, ChunkNotAMultipleOfTheKStep) {
    Gemm g;
    g.tile_k = 8;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "of extent 8");
}

TEST(TensorCoreMisuse, AccumulatorOfOneDimension) {
    ImageParam A(Float(16), 1, "A"), B(Float(16), 1, "B");
    Var x("x"), xo("xo"), xi("xi");
    RDom r(0, 16, "r");
    Func prod("prod"), out("out");
    prod(x) = 0.0f;
    prod(x) += ConciseCasts::f32(A(r)) * ConciseCasts::f32(B(x + r));
    out(x) = prod(x);
    out.gpu_tile(x, xo, xi, 32);
    prod.compute_at(out, xo);
    alcop::tensor_cores(prod, 16, 16);
    Pipeline p(out);
    alcop::Options options;
    options.target = Target("host-cuda-cuda_capability_80");
    alcop::enable(p, options);
    try {
        p.compile_to_module({A, B}, "one_dimension", options.target);
        FAIL() << "a one-dimensional accumulator was accepted";
    } catch (const CompileError &e) {
        EXPECT_REJECTION(e.what(), "alcop::tensor_cores(prod)", "the accumulator needs two dimensions");
    }
}

TEST(TensorCoreMisuse, MoreThanOneUpdate) {
    Gemm g;
    g.second_update = true;
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "must have exactly one update");
}

TEST(TensorCoreMisuse, AKernelWithoutThreads) {
    // Halide runs it as one thread a block.
    Gemm g;
    g.threads = Gemm::Threads::OneThread;
    const std::string e = g.lower();
    EXPECT_REJECTION(e, "alcop::tensor_cores(prod)", "do not form whole warps");
    EXPECT_NE(e.find("has 1 threads (1 in all)"), std::string::npos) << e;
}

TEST(TensorCoreMisuse, ReductionOfAChunkUnrolled) {
    Gemm g;
    g.unroll_k = true;
    // The serial loop around the updates is then the chunk loop, of no constant extent.
    const std::string e = g.lower();
    EXPECT_REJECTION(e, "alcop::tensor_cores(prod)", "must be a serial loop (not unrolled)");
    EXPECT_NE(e.find("but it is prod"), std::string::npos) << e;
    EXPECT_NE(e.find(".s1.r$y of extent"), std::string::npos) << e;
}

// A K the chunk does not divide, split with a guarded last chunk (Gemm::k_tail), over tiles of
// no bound extents: the pass cannot zero-fill the tail in them (rewrite/ZeroFilledTails.h), so
// no update is left for mma.sync. The error names the operands and what makes it run; with the
// tiles bounded the same GEMM is accepted.
TEST(TensorCoreMisuse, GuardedLastChunkOverUnboundedTiles) {
    Gemm g;
    g.guarded = g.k_tail = true;
    g.bound_tiles = false;
    const std::string e = g.lower();
    EXPECT_REJECTION(e, "alcop::tensor_cores(prod)", ".s1.rt$x.rt_ki, has no constant extent");
    EXPECT_NE(e.find("A_sh and B_sh are computed at the chunk loop in tiles of constant extents: bound every "
                     "dimension of each"),
              std::string::npos)
        << e;
    g.bound_tiles = true;
    EXPECT_EQ(g.lower(), "");
}

TEST(TensorCoreMisuse, TargetWithoutTensorCores) {
    Gemm g;
    g.target = "host-cuda-cuda_capability_61";
    EXPECT_REJECTION(g.lower(), "alcop::tensor_cores(prod)", "need a CUDA target with cuda_capability_80");
}

}  // namespace

// Register stages of the fragments (alcop::pipeline(prod, R, Level::Register)): they prefetch
// across the chunks of a shared pipeline, so one must be there, and R must divide the k steps
// of a chunk (tile_k / 16).
TEST(TensorCoreMisuse, RegisterStagesNeedASharedPipelineAndDivideTheKSteps) {
    Gemm g;
    g.register_stages = 2;
    EXPECT_REJECTION(g.lower(), "alcop::pipeline(prod, 2, Level::Register)", "shared-level pipeline");
    g.stages = 3;
    EXPECT_EQ(g.lower(), "");
    // Within the register limit (2 stages x 4 x (2 + 2) = 32 registers for a 32 x 32 warp
    // tile), and over a lower one.
    EXPECT_REJECTION(g.lower(16), "alcop::pipeline(prod, 2, Level::Register)",
                     "would take 32 32-bit registers per thread");
    g.register_stages = 4;  // 2 k steps of 16 in a chunk of 32
    EXPECT_REJECTION(g.lower(), "alcop::pipeline(prod, 4, Level::Register)", "2 k steps of 16 per chunk");
}

// Over the register limit, a kernel is a warning (test/unit/register_limit_test.cpp) unless the
// Options ask for an error: a 64 x 64 warp tile with 2 register stages is estimated at 255.
TEST(TensorCoreMisuse, SpillsAreErrorsWhereTheOptionsSaySo) {
    Gemm g;
    g.block_m = g.block_n = 128;
    g.warp_m = g.warp_n = 64;
    g.vector = 8;
    g.stages = 3;
    g.register_stages = 2;
    EXPECT_REJECTION(g.lower(0, true), "alcop: the GPU kernel of out",
                     "is estimated to need 255 registers per thread (255 for the tensor cores of prod (a 64 x 64 warp "
                     "tile, k tile 32, 2 register stages) and 0 words of per-thread arrays), more than the limit of 64");
    EXPECT_EQ(g.lower(255, true), "");
}
