// Every rejected use of the directive raises a Halide user error that names the Func and
// the reason. Most cases are built as IR directly (the shapes Halide hands the pass), so
// that each test pins one defect.

#include "Halide.h"

#include "analysis/PipelineAnalysis.h"
#include "directive/Requests.h"
#include "rewrite/LowerPipelines.h"
#include "SyntheticIR.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>

using namespace Halide;
using namespace Halide::Internal;

namespace {

using namespace synthetic;

std::string error_of(const Stmt &s, int stages = 2, alcop::Level level = alcop::Level::Shared) {
    return rejection(s, {{"P", {stages, level}}});
}

#define EXPECT_REJECTED(stmt, reason) EXPECT_REJECTION(error_of(stmt), "alcop::pipeline(P)", reason)

TEST(Misuse, TheWellFormedKernelIsAccepted) {
    Stmt s = kernel(streaming_loop(Block::make({copy_tile(), barrier(), use_tile(), barrier()})));
    EXPECT_EQ(error_of(s), "");
    std::ostringstream text;
    text << alcop::inject_pipelines(s, {{"P", {2, alcop::Level::Shared}}});
    EXPECT_NE(text.str().find("S[float32 * 32]"), std::string::npos) << text.str();
}

/** The user error a directive call on a fresh Func raises ("" if it raises none), and the
 * Func's name: Halide names the second Func "staged" of a process "staged$1". */
struct DirectiveError {
    std::string message, func;
};

DirectiveError directive_error(const std::string &name, const std::function<void(Func)> &call) {
    Func f(name);
    Var x;
    f(x) = x;
    try {
        call(f);
    } catch (const CompileError &e) {
        return {e.what(), f.name()};
    }
    return {"", f.name()};
}

// A directive asked twice on one Func means the last one, read back by alcop::recorded, the one
// reader of every request (the autoscheduler's too: Autoscheduler.RequestedGpuIsModelled).
TEST(Requests, TheLastOfARequestMadeTwiceWins) {
    Func f("asked_twice");
    Var x, y;
    f(x, y) = 0.0f;
    EXPECT_FALSE(alcop::requested_pipeline(f.function()));
    alcop::pipeline(f, 2);
    alcop::pipeline(f, 3, alcop::Level::Register);
    const std::optional<alcop::PipelineRequest> p = alcop::requested_pipeline(f.function());
    ASSERT_TRUE(p);
    EXPECT_EQ(p->stages, 3);
    EXPECT_EQ(p->level, alcop::Level::Register);
    alcop::min_blocks_per_sm(f, 4);
    alcop::min_blocks_per_sm(f, 2);
    EXPECT_EQ(alcop::requested_min_blocks_per_sm(f.function()), 2);
    alcop::tensor_cores(f, 64, 64);
    alcop::tensor_cores(f, 32, 16);
    const std::optional<alcop::TensorCoreRequest> t = alcop::requested_tensor_cores(f.function());
    ASSERT_TRUE(t);
    EXPECT_EQ(t->warp_m, 32);
    EXPECT_EQ(t->warp_n, 16);
    EXPECT_EQ(alcop::recorded(f.function(), "alcop.nothing "), std::nullopt);
}

TEST(Requests, TheMemberDirectivesRecordWhatTheFunctionsDo) {
    alcop::Func f("members");
    Var x, y;
    f(x, y) = 0.0f;
    f.tensor_cores(32, 64).min_blocks_per_sm(3).pipeline(2, alcop::Level::Register);
    const std::optional<alcop::TensorCoreRequest> t = alcop::requested_tensor_cores(f.function());
    ASSERT_TRUE(t);
    EXPECT_EQ(t->warp_m, 32);
    EXPECT_EQ(t->warp_n, 64);
    EXPECT_EQ(alcop::requested_min_blocks_per_sm(f.function()), 3);
    const std::optional<alcop::PipelineRequest> p = alcop::requested_pipeline(f.function());
    ASSERT_TRUE(p);
    EXPECT_EQ(p->stages, 2);
    EXPECT_EQ(p->level, alcop::Level::Register);
    // They check their arguments as the functions do.
    EXPECT_THROW(f.tensor_cores(24, 64), CompileError);
    EXPECT_THROW(f.min_blocks_per_sm(0), CompileError);
}

TEST(Requests, LevelsAreNamedAsInTheMessages) {
    EXPECT_STREQ(alcop::to_string(alcop::Level::Shared), "shared");
    EXPECT_STREQ(alcop::to_string(alcop::Level::Register), "register");
}

TEST(Requests, OptionsAreEqualOnlyInEveryField) {
    const alcop::Options base;
    EXPECT_TRUE(base == alcop::Options());
    EXPECT_FALSE(base != alcop::Options());
    std::vector<std::function<void(alcop::Options &)>> changes = {
        [](alcop::Options &o) { o.target = Target("host-cuda"); },
        [](alcop::Options &o) { o.copies = alcop::CopyKind::Synchronous; },
        [](alcop::Options &o) { o.shared_memory_limit = 1024; },
        [](alcop::Options &o) { o.register_limit = 128; },
        [](alcop::Options &o) { o.cuda_opt_in = true; },
        [](alcop::Options &o) { o.spills_are_errors = true; },
    };
    for (size_t i = 0; i < changes.size(); i++) {
        alcop::Options changed;
        changes[i](changed);
        EXPECT_TRUE(changed != base) << "field " << i;
        EXPECT_FALSE(changed == base) << "field " << i;
    }
}

TEST(Misuse, StagesBelowOne) {
    const DirectiveError e = directive_error("staged", [](Func f) { alcop::pipeline(f, 0); });
    // Named as the user wrote it, whatever suffix Halide gave the Func in this process.
    EXPECT_REJECTION(e.message, "alcop::pipeline(" + alcop::user_name(e.func) + ", 0)",
                     "the number of stages must be at least 1");
}

TEST(Misuse, NoBlockPerSm) {
    const DirectiveError e = directive_error("bounded", [](Func f) { alcop::min_blocks_per_sm(f, 0); });
    EXPECT_REJECTION(e.message, "alcop::min_blocks_per_sm(" + alcop::user_name(e.func) + ", 0)",
                     "at least one block must fit on an SM");
}

// The schedule helpers the generators and the autoscheduler share (alcop/Directive.h).
TEST(Misuse, StagedCopyThreadsThatAreNotWholeRows) {
    const DirectiveError e = directive_error(
        "copied", [](Func f) { alcop::schedule_staged_copy(f, {f.args()[0]}, 4, /*threads_x=*/32, /*threads=*/48); });
    EXPECT_REJECTION(e.message, "alcop::schedule_staged_copy(" + alcop::user_name(e.func) + ", vector_width 4",
                     "threads a multiple of threads_x");
}

TEST(Misuse, RegisterFragmentOfNoExtent) {
    const DirectiveError e =
        directive_error("fragment", [](Func f) { alcop::schedule_register_fragment(f, f.args()[0], 0); });
    EXPECT_REJECTION(e.message, "alcop::schedule_register_fragment(" + alcop::user_name(e.func),
                     "the extent must be positive");
}

TEST(Misuse, ThreadTileOfNoExtent) {
    const DirectiveError e = directive_error("thread_tiled", [](Func f) {
        alcop::schedule_thread_tile(f, f.args()[0], f.args()[0], /*thread_m=*/0, /*thread_n=*/4);
    });
    EXPECT_REJECTION(e.message, "alcop::schedule_thread_tile(" + alcop::user_name(e.func) + ", 0, 4)",
                     "a thread's register tile needs positive extents");
}

TEST(Misuse, BlockTileOfNoExtent) {
    const DirectiveError e = directive_error("block_tiled", [](Func f) {
        alcop::schedule_block_tile(f, f.args()[0], f.args()[0], /*block_m=*/64, /*block_n=*/0);
    });
    EXPECT_REJECTION(e.message, "alcop::schedule_block_tile(" + alcop::user_name(e.func) + ", 64, 0)",
                     "a block tile needs positive extents");
    const DirectiveError row = directive_error("row_tiled", [](Func f) {
        alcop::schedule_block_tile(f, f.args()[0], f.args()[0], 64, 64, {{f.args()[0], 0}});
    });
    EXPECT_REJECTION(row.message, "alcop::schedule_block_tile(" + alcop::user_name(row.func) + ", 64, 64)",
                     "a block tile needs positive extents, its rows' too");
}

// Rounded up, the edge blocks' tiles would have one size but write past the output; Halide
// would say so only at run time, or not at all for an intermediate Func.
TEST(Misuse, BlockTileRoundedUp) {
    const DirectiveError e = directive_error("block_rounded", [](Func f) {
        alcop::schedule_block_tile(f, f.args()[0], f.args()[0], 64, 64, {}, {}, TailStrategy::RoundUp);
    });
    EXPECT_REJECTION(e.message, "alcop::schedule_block_tile(" + alcop::user_name(e.func) + ", 64, 64)",
                     "the edge blocks along M are guarded (GuardWithIf) or shifted inwards (ShiftInwards)");
    const DirectiveError n = directive_error("block_rounded_n", [](Func f) {
        alcop::schedule_block_tile(f, f.args()[0], f.args()[0], 64, 64, {}, {}, TailStrategy::GuardWithIf,
                                   TailStrategy::RoundUp);
    });
    EXPECT_REJECTION(n.message, "alcop::schedule_block_tile(" + alcop::user_name(n.func) + ", 64, 64)",
                     "the edge blocks along N are guarded (GuardWithIf) or shifted inwards (ShiftInwards)");
}

TEST(Misuse, ReadAfterTheLoop) {
    Stmt after = consume("P", store("out", var("tx"), load("S", var("tx"))));
    EXPECT_REJECTED(kernel(Block::make(streaming_loop(Block::make({copy_tile(), barrier(), use_tile()})), after)),
                    "is read after the loop");
}

TEST(Misuse, ProducerReadsSharedMemory) {
    Stmt copy = produce("P", store("S", var("tx"), load("S", var("tx") + 16)));
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({copy, barrier(), use_tile()})), 32), "reads GPU shared memory");
}

TEST(Misuse, ProducerReadsWhatTheLoopWrites) {
    Stmt copy = produce("P", store("S", var("tx"), load("acc", 0)));
    Stmt use = consume("P", store("acc", 0, load("S", var("tx"))));
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({copy, barrier(), use}))), "which the serial loop ko writes");
}

TEST(Misuse, TileMovesWithTheIterations) {
    EXPECT_REJECTED(
        kernel(streaming_loop(Block::make({copy_tile(var("tx") + var("ko") * 16), barrier(), use_tile()})), 64),
        "changes with the iterations");
}

TEST(Misuse, WrittenOutsideItsProducer) {
    Stmt clobber = consume("P", store("S", var("tx"), 0.0f));
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({copy_tile(), barrier(), use_tile(), clobber}))),
                    "is written outside its producer");
}

TEST(Misuse, ReadBeforeItIsProduced) {
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({use_tile(), barrier(), copy_tile(), barrier()}))),
                    "before it is produced");
}

TEST(Misuse, AmbiguousAccess) {
    // Reads S[8, 24): half in P's tile, half in whatever follows it.
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({copy_tile(), barrier(), use_tile(var("tx") + 8)})), 32),
                    "without lying inside it");
}

// Two staged tiles, P and Q, each with its own requests.
std::string error_of_two(const Stmt &s) {
    return rejection(s, {{"P", {2, alcop::Level::Shared}}, {"Q", {2, alcop::Level::Shared}}});
}

TEST(Misuse, TwoTilesProducedByOneStatement) {
    // Q's copy inside P's producer: one statement that cannot be prefetched as two.
    Stmt copies = produce("P", Block::make(store("S", var("tx"), load("in", var("tx"))), copy_tile(var("tx") + 16, "Q")));
    Stmt s = kernel(streaming_loop(Block::make({copies, barrier(), use_tile()})), 32);
    EXPECT_REJECTION(error_of_two(s), "alcop::pipeline(Q)", "are produced by one statement of the serial loop ko");
}

TEST(Misuse, ProducedTwiceInTheLoop) {
    // What an unrolled loop inside the streaming loop leaves: two produce nodes of P.
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({copy_tile(), barrier(), copy_tile(), barrier(), use_tile()}))),
                    "is produced more than once in the serial loop ko");
}

TEST(Misuse, ProducerWritesAnotherBuffer) {
    Stmt copy = produce("P", Block::make(store("S", var("tx"), load("in", var("ko") * 16 + var("tx"))),
                                         store("out", var("tx"), 0.0f)));
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({copy, barrier(), use_tile()}))),
                    "also writes out; a pipelined producer may only write its own shared tile");
}

TEST(Misuse, TwoTilesInTheSameBytes) {
    // P and Q both in S[0, 16): their slots could not be told apart.
    Stmt use = consume("P", consume("Q", store("out", var("ko") * 16 + var("tx"), load("S", 15 - var("tx")))));
    Stmt s = kernel(streaming_loop(Block::make({copy_tile(var("tx"), "P"), copy_tile(var("tx"), "Q"), barrier(), use})));
    const std::string e = error_of_two(s);
    EXPECT_REJECTION(e, "alcop::pipeline(P): the shared tiles of P and Q", "cannot be told apart");
    EXPECT_NE(e.find("bytes [0, 64)"), std::string::npos) << e;
}

TEST(Misuse, DirectivesOnAFuncWithoutADefinition) {
    Func undefined("undefined");
    for (const std::function<void()> &call : std::vector<std::function<void()>>{
             [&] { alcop::pipeline(undefined, 2); }, [&] { alcop::tensor_cores(undefined, 64, 64); }}) {
        try {
            call();
            ADD_FAILURE() << "accepted on a Func without a definition";
        } catch (const CompileError &e) {
            EXPECT_NE(std::string(e.what()).find("(undefined): the Func has no definition"), std::string::npos)
                << e.what();
        }
    }
}

TEST(Misuse, NotInAGpuKernel) {
    Stmt s = streaming_loop(Block::make(copy_tile(), use_tile()));
    EXPECT_REJECTED(Allocate::make("S", Float(32), MemoryType::Stack, {16}, const_true(), s),
                    "not computed inside a GPU kernel");
}

TEST(Misuse, ComputedAtTheBlockLevel) {
    EXPECT_REJECTED(kernel(Block::make({copy_tile(), barrier(), use_tile()})), "GPU block level");
}

TEST(Misuse, NotStoredInSharedMemory) {
    Stmt copy = produce("P", store("R", var("tx"), load("in", var("ko") * 16 + var("tx"))));
    Stmt use = consume("P", store("out", var("tx"), load("R", var("tx"))));
    Stmt loop = streaming_loop(Block::make({copy, barrier(), use}));
    EXPECT_REJECTED(kernel(Allocate::make("R", Float(32), MemoryType::Register, {16}, const_true(), loop)),
                    "GPU shared");
}

TEST(Misuse, NotProducedAtAll) {
    EXPECT_REJECTED(kernel(streaming_loop(use_tile())), "is not produced in the lowered pipeline");
}

// Asking for cp.async where the kernel cannot have it.
TEST(Misuse, AsyncCopiesWithoutCpAsync) {
    auto gen = GeneratorRegistry::create("gemm", GeneratorContext(Target("host-opencl")));
    gen->set_generator_param_values({{"stages", "3"}, {"copies", "async"}});
    try {
        gen->build_module("gemm");
        FAIL() << "cp.async was accepted on OpenCL";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("need a CUDA kernel and a target with cuda_capability_80"),
                  std::string::npos)
            << e.what();
    }
}

// A real schedule: a reduction split with a guarded tail makes the last tile smaller and
// moves it, so the pass must refuse it.
TEST(Misuse, GuardedReductionTailInARealSchedule) {
    ImageParam A(Float(32), 2, "A");
    Var x("x"), y("y"), tx("tx"), bx("bx");
    RDom r(0, A.dim(0).extent(), "r");
    RVar ko("ko"), ki("ki");
    Func P("P"), sum("sum"), out("out");
    P(x, y) = A(x, y);
    sum(y) = 0.0f;
    sum(y) += P(r, y);
    out(y) = sum(y);
    out.gpu_tile(y, bx, tx, 16);
    sum.compute_at(out, bx).gpu_threads(y).update().split(r, ko, ki, 8).reorder(ki, y, ko).gpu_threads(y);
    P.compute_at(sum, ko).store_in(MemoryType::GPUShared).gpu_threads(y);
    alcop::pipeline(P, 2);
    Pipeline p(out);
    alcop::enable(p);
    try {
        p.compile_to_module(p.infer_arguments(), "guarded", Target("host-opencl"));
        FAIL() << "a moving tile was accepted";
    } catch (const CompileError &e) {
        EXPECT_REJECTION(e.what(), "alcop::pipeline(" + alcop::user_name(P.name()) + ")",
                         "changes with the iterations of the serial loop");
    }
}

// A real schedule as a user writes it: row sums of a 32-column A, each block of 16 rows staging
// its chunk of 8 columns of A.in() in shared memory at the chunk loop r.y. Tests change it to
// make one mistake each.
struct RowSum {
    ImageParam A{Float(32), 2, "A"};
    Var y{"y"}, bx{"bx"}, tx{"tx"};
    RDom r{0, 8, 0, 4, "r"};
    Func staged, sum{"sum"}, out{"out"};
    alcop::Options options;

    explicit RowSum(bool staged_at_the_chunk_loop = true) {
        staged = A.in();
        sum(y) = 0.0f;
        sum(y) += staged(r.y * 8 + r.x, y);
        out(y) = sum(y);
        out.gpu_tile(y, bx, tx, 16);
        sum.compute_at(out, bx).gpu_threads(y);
        sum.update().reorder(r.x, y, r.y).gpu_threads(y);
        if (staged_at_the_chunk_loop) {
            staged.compute_at(sum, r.y).store_in(MemoryType::GPUShared).gpu_threads(staged.args()[1]);
        }
        options.target = Target("host-opencl");
    }

    /** The user error compiling it raises, "" if none. */
    std::string error(Pipeline p = Pipeline()) {
        if (!p.defined()) {
            p = Pipeline(out);
            alcop::enable(p, options);
        }
        try {
            p.compile_to_module(p.infer_arguments(), "row_sum", options.target);
        } catch (const CompileError &e) {
            return e.what();
        }
        return "";
    }
};

TEST(Misuse, TheRowSumIsAccepted) {
    RowSum s;
    alcop::pipeline(s.staged, 2);
    EXPECT_EQ(s.error(), "");
}

// Issue #17, 1: the slots are checked against the shared memory a block may have, at compile
// time and before anything is built, so that no stage count takes long or crashes.
TEST(Misuse, SharedMemoryOverTheLimit) {
    for (int stages : {1000, 1000000}) {
        RowSum s;
        s.options.target = Target("host-cuda-cuda_capability_80");
        alcop::pipeline(s.staged, stages);
        const auto start = std::chrono::steady_clock::now();
        const std::string error = s.error();
        EXPECT_REJECTION(error, "alcop::pipeline(A.in())", "bytes of shared memory per block");
        EXPECT_NE(error.find("A.in(): " + std::to_string(stages) + " stages x 512 bytes"), std::string::npos) << error;
        EXPECT_NE(error.find("more than the limit of 49152 bytes (the default for CUDA"), std::string::npos) << error;
        EXPECT_NE(error.find("alcop::Options::shared_memory_limit"), std::string::npos) << error;
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << stages << " stages";
    }
    // OpenCL cannot ask the device at compile time: the documented default, and the option.
    RowSum s;
    alcop::pipeline(s.staged, 100);
    EXPECT_REJECTION(s.error(), "alcop::pipeline(A.in())", "the default for OpenCL");
    // The block's 16 sums stay in the allocation, before the slots (64 bytes).
    s.options.shared_memory_limit = 100 * 512 + 64;
    EXPECT_EQ(s.error(), "");
}

// A limit raised past any real GPU's lets a huge stage count through: it must still compile,
// with a prologue that is a loop rather than a million nested statements.
TEST(Misuse, AMillionSharedStagesUnderARaisedLimitDoNotCrash) {
    RowSum s;
    alcop::pipeline(s.staged, 1000000);
    s.options.shared_memory_limit = int64_t(1) << 40;
    EXPECT_EQ(s.error(), "");
}

Stmt fragment_kernel(int steps) {
    return kernel(fragment_registers(
                      For::make("ki", 0, steps, ForType::Serial, DeviceAPI::None,
                                Block::make(produce("F", Block::make({store("F_regs", 0, load("S", var("ki"))),
                                                                      store("F_regs", 3, load("S", var("ki") + 1))})),
                                            use_fragment()))),
                  (steps + 1));
}

TEST(Misuse, RegisterSlotsOverTheLimit) {
    // 4 floats per slot: 2 stages take 8 registers; a million, over a loop long enough for them.
    alcop::Options options;
    options.register_limit = 7;
    try {
        alcop::inject_pipelines(fragment_kernel(8), {{"F", {2, alcop::Level::Register}}}, options);
        FAIL() << "8 registers were accepted under a limit of 7";
    } catch (const CompileError &e) {
        EXPECT_REJECTION(
            std::string(e.what()), "alcop::pipeline(F, Level::Register)",
            "would take 8 32-bit registers per thread (F: 2 stages x 4 x 4 bytes), more than the limit of 7");
    }
    const auto start = std::chrono::steady_clock::now();
    EXPECT_REJECTION(rejection(fragment_kernel(1000000), {{"F", {1000000, alcop::Level::Register}}}),
                     "alcop::pipeline(F, Level::Register)", "would take 4000000 32-bit registers per thread");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Misuse, RegisterLimitPastAnyGpu) {
    alcop::Options options;
    options.register_limit = 100000;
    try {
        alcop::inject_pipelines(fragment_kernel(8), {{"F", {2, alcop::Level::Register}}}, options);
        FAIL() << "a register limit of 100000 was accepted";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("no GPU gives a thread more than 512"), std::string::npos) << e.what();
    }
}

// Issue #17, 2: an unrolled chunk loop is not "the block level".
TEST(Misuse, UnrolledStreamingLoop) {
    RowSum s;
    s.sum.update().unroll(s.r.y);
    alcop::pipeline(s.staged, 2);
    EXPECT_REJECTION(s.error(), "alcop::pipeline(A.in())",
                     "is produced 4 times at the GPU block level, in no serial "
                     "loop. Was the loop it is computed at unrolled?");
}

// Issue #17, 3: a second enable() with other Options is not dropped: the last call wins.
TEST(Misuse, SecondEnableWithOtherOptionsWins) {
    RowSum s;
    alcop::pipeline(s.staged, 2);
    Pipeline p(s.out);
    alcop::enable(p, s.options);
    EXPECT_EQ(s.error(p), "");
    alcop::Options async = s.options;
    async.copies = alcop::CopyKind::Async;
    alcop::enable(p, async);
    EXPECT_NE(s.error(p).find("need a CUDA kernel and a target with cuda_capability_80"), std::string::npos);
    alcop::enable(p, s.options);
    EXPECT_EQ(s.error(p), "");
    EXPECT_EQ(p.custom_lowering_passes().size(), 1u);
}

// Issue #17, 4: the Funcs are named as the user wrote them.
TEST(Misuse, ErrorsNameFuncsAsTheUserWroteThem) {
    EXPECT_EQ(alcop::user_name("A2$0"), "A2");
    EXPECT_EQ(alcop::user_name("A_im_global_wrapper$0"), "A.in()");
    EXPECT_EQ(alcop::user_name("A_shared$1_in_prod$2"), "A_shared.in(prod)");
    EXPECT_EQ(alcop::user_name("A_im_global_wrapper$0_in_prod$3"), "A.in().in(prod)");
    EXPECT_EQ(alcop::pipeline_call("A_im_global_wrapper$0"),
              "alcop::pipeline(A.in()) (on Halide's A_im_global_wrapper$0)");
    EXPECT_EQ(alcop::pipeline_call("A2$0", alcop::Level::Register), "alcop::pipeline(A2, Level::Register)");
    RowSum s;
    s.staged.compute_at(s.out, s.bx);  // at the block level
    alcop::pipeline(s.staged, 2);
    EXPECT_REJECTION(s.error(), "alcop::pipeline(A.in()) (on Halide's A_im",
                     "A.in() is computed at the GPU block level");
}

// Issue #17, 7: what is true of a kernel's output, and of a Func with a kernel of its own.
TEST(Misuse, PipelinedKernelOutput) {
    RowSum s;
    alcop::pipeline(s.staged, 2);
    alcop::pipeline(s.out, 3);
    EXPECT_REJECTION(s.error(), "alcop::pipeline(out)",
                     "out is computed in a GPU kernel of its own, at the block level");
}

TEST(Misuse, ComputeRootFuncWithAKernelOfItsOwn) {
    RowSum s(false);
    Var bx("bx2"), tx("tx2");
    s.staged.compute_root().gpu_tile(s.staged.args()[1], bx, tx, 16);
    alcop::pipeline(s.staged, 2);
    EXPECT_REJECTION(s.error(), "alcop::pipeline(A.in())",
                     "A.in() is computed in a GPU kernel of its own, at the block level");
}

}  // namespace
