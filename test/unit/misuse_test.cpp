// Every rejected use of the directive raises a Halide user error that names the Func and
// the reason. Most cases are built as IR directly (the shapes Halide hands the pass), so
// that each test pins one defect.

#include "Halide.h"

#include "directive/Requests.h"
#include "rewrite/LowerPipelines.h"
#include "SyntheticIR.h"

#include <gtest/gtest.h>

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

TEST(Misuse, StagesBelowOne) {
    const DirectiveError e = directive_error("staged", [](Func f) { alcop::pipeline(f, 0); });
    EXPECT_REJECTION(e.message, "alcop::pipeline(" + e.func + ", 0)", "the number of stages must be at least 1");
}

TEST(Misuse, NoBlockPerSm) {
    const DirectiveError e = directive_error("bounded", [](Func f) { alcop::min_blocks_per_sm(f, 0); });
    EXPECT_REJECTION(e.message, "alcop::min_blocks_per_sm(" + e.func + ", 0)", "at least one block must fit on an SM");
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
    EXPECT_REJECTED(kernel(streaming_loop(Block::make({copy_tile(var("tx") + var("ko") * 16), barrier(), use_tile()})), 64),
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
        EXPECT_NE(std::string(e.what()).find("need a CUDA kernel and a target with cuda_capability_80"), std::string::npos)
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
        EXPECT_REJECTION(e.what(), "alcop::pipeline(" + P.name() + ")", "changes with the iterations of the serial loop");
    }
}

}  // namespace
