// alcop::auto_pipeline, the one switch (src/plan/AutoPipeline.h): what it chooses on the
// project's generators with every alcop::pipeline() call removed, on schedules written by others
// (test/support/ForeignGenerators.cpp), under smaller budgets, and beside explicit requests.
// IR only: the pipelines are lowered, not run (test/opencl/auto_pipeline_test.cpp runs them).

#include "Halide.h"

#include "ContractionSchedule.h"
#include "PipelineSummary.h"
#include "analysis/PipelineAnalysis.h"
#include "directive/Requests.h"
#include "plan/AutoPipeline.h"

#include <gtest/gtest.h>

using namespace Halide;
using namespace Halide::Internal;

namespace {

struct Lowered {
    Stmt before, after;
    std::map<std::string, alcop::PipelineRequest> requests;  ///< keyed by Func name without '$'
    alcop::AutoReport report;
    bool automatic = false;  ///< the policy ran
    std::string warnings;    ///< what Halide printed (the lines for candidates left as they are)

    int stages(const std::string &func) const {
        auto it = requests.find(func);
        return it == requests.end() ? 0 : it->second.stages;
    }
    const alcop::AutoChoice *choice(const std::string &func) const {
        for (const alcop::AutoChoice &c : report.choices) {
            if (c.func.substr(0, c.func.find('$')) == func) return &c;
        }
        return nullptr;
    }
};

template<typename Build>
Lowered lower(Build build) {
    Lowered l;
    alcop::set_lowering_observer([&](const Stmt &b, const Stmt &a, const auto &r) {
        l.before = b;
        l.after = a;
        for (const auto &q : r) l.requests[q.first.substr(0, q.first.find('$'))] = q.second;
    });
    alcop::set_auto_pipeline_observer([&](const alcop::AutoReport &r) {
        l.report = r;
        l.automatic = true;
    });
    ::testing::internal::CaptureStderr();
    try {
        build();
    } catch (...) {
        l.warnings = ::testing::internal::GetCapturedStderr();
        alcop::set_lowering_observer(nullptr);
        alcop::set_auto_pipeline_observer(nullptr);
        throw;
    }
    l.warnings = ::testing::internal::GetCapturedStderr();
    alcop::set_lowering_observer(nullptr);
    alcop::set_auto_pipeline_observer(nullptr);
    return l;
}

Lowered lower_generator(const std::string &name, const GeneratorParamsMap &params,
                        const std::string &target = "host-opencl") {
    return lower([&] {
        auto gen = GeneratorRegistry::create(name, GeneratorContext(Target(target)));
        gen->set_generator_param_values(params);
        gen->build_module(name);
    });
}

const char *const cuda = "host-cuda-cuda_capability_80";

// The hand-written requests and the automatic choice give the same pipeline where the model
// picks the stages the hand-written one asks for: on OpenCL copies are staged through
// registers, one tile in flight, so the model's choice is 2 stages.
TEST(AutoPipeline, GemmWithoutRequestsGetsTheHandWrittenStructure) {
    Lowered automatic = lower_generator("gemm", {{"auto_pipeline", "true"}});
    ASSERT_TRUE(automatic.automatic);
    EXPECT_EQ(automatic.stages("A_shared"), 2);
    EXPECT_EQ(automatic.stages("B_shared"), 2);
    Lowered by_hand = lower_generator("gemm", {{"stages", "2"}});
    const std::set<std::string> shared{"A_shared", "B_shared"};
    alcop::PipelineSummary a = alcop::summarize_pipeline(automatic.after, shared);
    alcop::PipelineSummary h = alcop::summarize_pipeline(by_hand.after, shared);
    EXPECT_EQ(alcop::describe(a), alcop::describe(h));
    EXPECT_EQ(a.shared_elems, 2 * 1024);
    EXPECT_GT(automatic.choice("A_shared")->predicted_gain, 1.0);
    EXPECT_EQ(automatic.warnings.find("left as it is"), std::string::npos) << automatic.warnings;
}

// With cp.async (CUDA sm_80) more tiles can be in flight: the model takes more stages, never
// more shared memory than the limit that applies (48 KiB by default), and fewer under a smaller
// limit. 32 x (64 + 64) floats are 16 KiB a stage.
TEST(AutoPipeline, StagesStayWithinTheBudgetAndShrinkWithIt) {
    auto shared_bytes = [](const Lowered &l) {
        return 4 * alcop::summarize_pipeline(l.after, {"A_shared", "B_shared"}).shared_elems;
    };
    Lowered wide = lower_generator("gemm", {{"auto_pipeline", "true"}, {"tile_k", "32"}}, cuda);
    const int s = wide.stages("A_shared");
    EXPECT_GE(s, 2);
    EXPECT_EQ(wide.stages("B_shared"), s);
    EXPECT_LE(shared_bytes(wide), 48 * 1024);
    EXPECT_EQ(shared_bytes(wide), s * 16384);

    Lowered narrow = lower_generator("gemm", {{"auto_pipeline", "true"}, {"tile_k", "32"},
                                              {"shared_memory_limit", std::to_string(2 * 16384 + 100)}}, cuda);
    EXPECT_EQ(narrow.stages("A_shared"), 2);
    EXPECT_LE(shared_bytes(narrow), 2 * 16384 + 100);
    EXPECT_LE(narrow.stages("A_shared"), s);

    // Not even 2 stages fit: left as it is, with its reason, and nothing fails.
    Lowered none = lower_generator("gemm", {{"auto_pipeline", "true"}, {"tile_k", "32"},
                                            {"shared_memory_limit", "20000"}}, cuda);
    EXPECT_EQ(none.stages("A_shared"), 0);
    ASSERT_NE(none.choice("A_shared"), nullptr);
    EXPECT_EQ(none.choice("A_shared")->stages, 1);
    EXPECT_NE(none.choice("A_shared")->why.find("more than the limit of 20000"), std::string::npos)
        << none.choice("A_shared")->why;
    EXPECT_NE(none.warnings.find("A_shared (shared) is left as it is"), std::string::npos) << none.warnings;
}

// register_stages=1: the fragments' step loop is unrolled by the schedule, so the analysis
// rejects the register level; the shared level is still pipelined, the fragments stay as
// they were, and one line says which Func and why.
TEST(AutoPipeline, RejectedCandidateIsLeftUntouchedWithItsReason) {
    Lowered l = lower_generator("gemm", {{"auto_pipeline", "true"}, {"register_stages", "1"}});
    EXPECT_EQ(l.stages("A_shared"), 2);
    bool rejected = false;
    for (const alcop::AutoChoice &c : l.report.choices) {
        if (c.level != alcop::Level::Register) continue;
        rejected = true;
        EXPECT_EQ(c.stages, 1) << c.func;
        EXPECT_NE(c.why.find("unrolled"), std::string::npos) << c.why;
        EXPECT_EQ(l.requests.count(c.func.substr(0, c.func.find('$'))), 0u) << c.func;
        EXPECT_NE(l.warnings.find(alcop::user_name(c.func) + " (register) is left as it is"), std::string::npos)
            << l.warnings;
    }
    EXPECT_TRUE(rejected) << l.report.to_string();
    EXPECT_NE(l.warnings.find("(register) is left as it is"), std::string::npos) << l.warnings;
    // The fragments are where they were: the same per-thread arrays as the shared-only pipeline.
    Lowered by_hand = lower_generator("gemm", {{"stages", "2"}, {"register_stages", "1"}});
    EXPECT_EQ(alcop::describe(alcop::summarize_pipeline(l.after, {"A_shared", "B_shared"})),
              alcop::describe(alcop::summarize_pipeline(by_hand.after, {"A_shared", "B_shared"})));
}

// register_stages=2 leaves the step loop serial: both levels are chosen, and the result has the
// structure of the hand-written two-level request where the model chose its stages.
TEST(AutoPipeline, BothLevelsWhereTheStepLoopIsSerial) {
    Lowered l = lower_generator("gemm", {{"auto_pipeline", "true"}, {"register_stages", "2"}});
    EXPECT_EQ(l.stages("A_shared"), 2);
    int fragments = 0;
    for (const auto &r : l.requests) {
        if (r.second.level != alcop::Level::Register) continue;
        fragments++;
        EXPECT_GE(r.second.stages, 2) << r.first;
        EXPECT_LE(r.second.stages, 4) << r.first;
    }
    EXPECT_EQ(fragments, 2) << l.report.to_string();
}

// Explicit requests win per Func: A's 4 stages stay, B's explicit 1 keeps B unpipelined.
TEST(AutoPipeline, ExplicitRequestsOverrideTheAutomaticChoice) {
    ImageParam A(Float(32), 2, "A"), B(Float(32), 2, "B");
    Var k("k"), m("m"), n("n"), x("x"), y("y");
    Func A_shared("A_shared"), B_shared("B_shared"), prod("prod"), out("out");
    Expr K = A.dim(0).extent();
    A_shared(k, m) = A(clamp(k, 0, K - 1), clamp(m, 0, A.dim(1).extent() - 1));
    B_shared(n, k) = B(clamp(n, 0, B.dim(0).extent() - 1), clamp(k, 0, K - 1));
    RDom r(0, 8, 0, (K + 7) / 8, "r");
    prod(x, y) = 0.0f;
    prod(x, y) += A_shared(r.y * 8 + r.x, y) * B_shared(x, r.y * 8 + r.x);
    out(x, y) = prod(x, y);
    alcop_generators::schedule_contraction(out, prod, A_shared, B_shared, x, y, {}, {r.x}, r.y, {},
                                           {64, 64, 4, 4, 4}, 1, 1, 0, /*request_pipelines=*/false);
    auto compile = [&](bool explicit_requests) {
        return lower([&] {
            if (explicit_requests) {
                alcop::pipeline(A_shared, 4);
                alcop::pipeline(B_shared, 1);
            }
            Pipeline p(out);
            alcop::auto_pipeline(p, Target("host-opencl"));
            p.compile_to_module({A, B}, "explicit_wins", Target("host-opencl"));
        });
    };
    Lowered automatic = compile(false);
    EXPECT_EQ(automatic.stages("A_shared"), 2);
    EXPECT_EQ(automatic.stages("B_shared"), 2);
    Lowered mixed = compile(true);
    EXPECT_EQ(mixed.stages("A_shared"), 4);
    EXPECT_EQ(mixed.stages("B_shared"), 1);
    for (const alcop::AutoChoice &c : mixed.report.choices) {
        ADD_FAILURE() << "an explicitly requested Func is no candidate: " << c.func;
    }
    alcop::PipelineSummary s = alcop::summarize_pipeline(mixed.after, {"A_shared", "B_shared"});
    EXPECT_EQ(s.prologue_copies["A_shared"], 3);
    EXPECT_EQ(s.prologue_copies["B_shared"], 0);
}

// Halide's apps/conv_layer GPU schedule: input.in(), staged in shared memory across rxo, is
// pipelined.
TEST(AutoPipeline, HalideConvLayerStagedInputIsPipelined) {
    Lowered l = lower_generator("testing_halide_conv_layer", {{"auto_pipeline", "true"}});
    std::cout << l.report.to_string() << l.warnings;
    int shared = 0;
    for (const alcop::AutoChoice &c : l.report.choices) {
        if (c.level == alcop::Level::Shared && c.stages >= 2) shared++;
    }
    EXPECT_EQ(shared, 1) << l.report.to_string();
    EXPECT_NE(l.after.get(), l.before.get());
}

// Halide's apps/cuda_mat_mul: A.in() and B.in() in per-thread registers inside the serial r
// loop. Whatever the policy does with them, it says so, and the schedule still lowers.
TEST(AutoPipeline, HalideCudaMatMulRegisterStagingIsReported) {
    Lowered l = lower_generator("testing_halide_cuda_mat_mul", {{"auto_pipeline", "true"}});
    std::cout << l.report.to_string() << l.warnings;
    EXPECT_EQ(l.report.choices.size(), 2u) << l.report.to_string();
    for (const alcop::AutoChoice &c : l.report.choices) {
        EXPECT_EQ(c.level, alcop::Level::Register) << c.func;
        EXPECT_FALSE(c.stages == 1 && c.why.empty()) << c.func;
    }
}

// Nothing qualifies: the Stmt is the one Halide made, and Li2018's GEMM schedule (no staging at
// all) is the same case.
TEST(AutoPipeline, NothingChangesWhenNothingQualifies) {
    Lowered l = lower_generator("testing_halide_gpu_dynamic_shared", {{"auto_pipeline", "true"}});
    ASSERT_TRUE(l.automatic);
    EXPECT_TRUE(l.report.choices.empty()) << l.report.to_string();
    EXPECT_TRUE(l.requests.empty());
    EXPECT_TRUE(equal(l.before, l.after));
}

}  // namespace
