// alcop::auto_pipeline, the one switch (src/plan/AutoPipeline.h): what it chooses on the
// project's generators with every alcop::pipeline() call removed, on schedules written by others
// (test/support/ForeignGenerators.cpp), under smaller budgets, and beside explicit requests.
// IR only: the pipelines are lowered, not run (test/opencl/auto_pipeline_test.cpp runs them).

#include "Halide.h"

#include "ContractionSchedule.h"
#include "analysis/PipelineSummary.h"
#include "analysis/PipelineAnalysis.h"
#include "directive/Requests.h"
#include "plan/AutoPipeline.h"
#include "rewrite/LowerPipelines.h"

#include <gtest/gtest.h>

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** `name` without Halide's uniquifying "$<n>" suffixes (A_shared$5_in_prod$5$0: A_shared_in_prod). */
std::string plain(const std::string &name) {
    return alcop::without_unique_suffixes(name);
}

/** A summary without the loop's uniquified name, for comparing two lowerings. */
std::string shape(const Stmt &s, const std::set<std::string> &funcs) {
    return plain(alcop::describe(alcop::summarize_pipeline(s, funcs)));
}

struct Lowered {
    Stmt before, after;
    std::map<std::string, alcop::PipelineRequest> requests;  ///< keyed by plain() Func name
    alcop::AutoReport report;
    bool automatic = false;  ///< the policy ran
    std::string warnings;    ///< what Halide printed (the lines for candidates left as they are)

    int stages(const std::string &func) const {
        auto it = requests.find(func);
        return it == requests.end() ? 0 : it->second.stages;
    }
    const alcop::AutoChoice *choice(const std::string &func) const {
        for (const alcop::AutoChoice &c : report.choices) {
            if (plain(c.func) == func) return &c;
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
        for (const auto &q : r) l.requests[plain(q.first)] = q.second;
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
    EXPECT_EQ(shape(automatic.after, shared), shape(by_hand.after, shared));
    EXPECT_EQ(alcop::summarize_pipeline(automatic.after, shared).shared_elems, 2 * 1024);
    EXPECT_GT(automatic.choice("A_shared")->predicted_gain, 1.0);
    EXPECT_EQ(automatic.warnings.find("left as it is"), std::string::npos) << automatic.warnings;

    // On CUDA sm_80 the copies are cp.async; at the default 8-deep chunks the model's compute
    // per chunk (256 threads x 8 steps of 4 x 4 FMAs) already covers a tile's latency, so it
    // takes 2 stages where the benchmarks ask for 3: the same structure as a hand-written 2.
    Lowered cuda_auto = lower_generator("gemm", {{"auto_pipeline", "true"}}, cuda);
    EXPECT_EQ(cuda_auto.stages("A_shared"), 2);
    Lowered cuda_hand = lower_generator("gemm", {{"stages", "2"}}, cuda);
    EXPECT_EQ(shape(cuda_auto.after, shared), shape(cuda_hand.after, shared));
    EXPECT_GT(alcop::summarize_pipeline(cuda_auto.after, shared).async_copies, 0);
}

// A GEMM written in the test, with the project's contraction schedule and no request, tile_k
// deep: (tile_k x 64) floats of A and of B a stage.
struct TestGemm {
    ImageParam A{Float(32), 2, "A"}, B{Float(32), 2, "B"};
    Func A_shared{"A_shared"}, B_shared{"B_shared"}, prod{"prod"}, out{"out"};

    explicit TestGemm(int tile_k) {
        Var k("k"), m("m"), n("n"), x("x"), y("y");
        Expr K = A.dim(0).extent();
        A_shared(k, m) = A(clamp(k, 0, K - 1), clamp(m, 0, A.dim(1).extent() - 1));
        B_shared(n, k) = B(clamp(n, 0, B.dim(0).extent() - 1), clamp(k, 0, K - 1));
        RDom r(0, tile_k, 0, (K + tile_k - 1) / tile_k, "r");
        prod(x, y) = 0.0f;
        prod(x, y) += A_shared(r.y * tile_k + r.x, y) * B_shared(x, r.y * tile_k + r.x);
        out(x, y) = prod(x, y);
        alcop_generators::schedule_contraction(out, prod, A_shared, B_shared, x, y, {}, {r.x}, r.y,
                                               {64, 64, 4, 4, 4}, 1, 1, 0, /*request_pipelines=*/false);
    }

    Lowered lower_automatic() {
        return lower([&] {
            Pipeline p(out);
            alcop::auto_pipeline(p, Target("host-opencl"));
            p.compile_to_module({A, B}, "test_gemm", Target("host-opencl"));
        });
    }

    std::map<std::string, Function> funcs() const {
        std::map<std::string, Function> f;
        for (const Func &g : {A_shared, B_shared, prod, out}) f.emplace(g.name(), g.function());
        return f;
    }
};

// The stages never take more shared memory than the limit, the pass accepts them under it, and a
// smaller limit gives fewer stages. On a modelled GPU whose global loads take 10^6 cycles every
// stage pays, so the limit (and the occupancy it leaves) decides. 32 x (64 + 64) floats are
// 16 KiB a stage.
TEST(AutoPipeline, StagesStayWithinTheBudgetAndShrinkWithIt) {
    TestGemm g(32);
    const Stmt before = g.lower_automatic().before;
    alcop::model::GpuSpec slow = alcop::model::default_gpu();
    slow.global_latency_cycles = 1e6;
    alcop::AutoLimits limits;
    limits.registers = 255;
    limits.async_copies = [](DeviceAPI) { return true; };
    limits.gpu = &slow;
    std::vector<int> chosen;
    for (int64_t limit : {200000, 100000, 60000, 40000}) {
        limits.shared_bytes = [&](DeviceAPI) { return limit; };
        alcop::AutoReport report;
        std::map<std::string, alcop::PipelineRequest> requests =
            alcop::choose_pipelines(before, g.funcs(), {"out"}, {}, limits, &report);
        std::map<std::string, int> stages;
        for (const auto &r : requests) stages[plain(r.first)] = r.second.stages;
        if (!stages.count("A_shared")) {
            // Under the smallest limit 2 stages leave 6 blocks per SM instead of 13: the model
            // predicts the loop slower pipelined, and says so.
            EXPECT_EQ(limit, 40000);
            EXPECT_NE(report.to_string().find("slower pipelined"), std::string::npos) << report.to_string();
            chosen.push_back(1);
            continue;
        }
        const int s = stages["A_shared"];
        EXPECT_EQ(stages["B_shared"], s);
        chosen.push_back(s);
        // The pass, checking the same limit, accepts the choice (it raises an error over it).
        alcop::Options options;
        options.target = Target("host-opencl");
        options.shared_memory_limit = limit;
        const Stmt after = alcop::inject_pipelines(before, requests, options);
        const int64_t bytes = 4 * alcop::summarize_pipeline(after, {"A_shared", "B_shared"}).shared_elems;
        EXPECT_EQ(bytes, s * 16384) << report.to_string();
        EXPECT_LE(bytes, limit) << report.to_string();
        std::cout << "limit " << limit << ": " << report.to_string();
    }
    for (size_t i = 1; i < chosen.size(); i++) {
        EXPECT_LE(chosen[i], chosen[i - 1]) << "a smaller limit gave more stages";
    }
    EXPECT_GT(chosen.front(), 3);
    EXPECT_LT(chosen[2], chosen.front());
}

// The generator's GEMM on CUDA sm_80 (cp.async): within Halide 14's default 48 KiB; with a limit
// that 2 stages exceed, left as it is, with its reason, and nothing fails.
TEST(AutoPipeline, CudaDefaultLimitAndNothingFits) {
    auto shared_bytes = [](const Lowered &l) {
        return 4 * alcop::summarize_pipeline(l.after, {"A_shared", "B_shared"}).shared_elems;
    };
    Lowered wide = lower_generator("gemm", {{"auto_pipeline", "true"}, {"tile_k", "32"}}, cuda);
    const int s = wide.stages("A_shared");
    EXPECT_GE(s, 2);
    EXPECT_EQ(wide.stages("B_shared"), s);
    EXPECT_LE(shared_bytes(wide), 48 * 1024);
    EXPECT_EQ(shared_bytes(wide), s * 16384);

    Lowered none =
        lower_generator("gemm", {{"auto_pipeline", "true"}, {"tile_k", "32"}, {"shared_memory_limit", "20000"}}, cuda);
    EXPECT_EQ(none.stages("A_shared"), 0);
    ASSERT_NE(none.choice("A_shared"), nullptr);
    EXPECT_EQ(none.choice("A_shared")->stages, 1);
    EXPECT_NE(none.choice("A_shared")->why.find("more than the limit of 20000"), std::string::npos)
        << none.choice("A_shared")->why;
    EXPECT_NE(none.warnings.find("A_shared (shared) is left as it is"), std::string::npos) << none.warnings;
    // Untouched: what Halide made, one tile.
    EXPECT_EQ(shared_bytes(none), 16384);
}

// The tensor-core GEMM without requests (128 x 128 blocks, 64 x 64 warp tiles, k tile 32): its
// operands get shared stages, and its fragments the 2 register stages of the hand-written
// schedule where the registers allow them (the opt-in's 255: the model's estimate with them is
// 255); under the stock cap of 64 they are left as they are, with the reason. The blocks per SM
// the shared stages are weighed at come from the kernel's registers: 221 a thread (its estimate
// before register stages) leave 2 blocks of 4 warps on an H200's 4 x 16384 registers.
TEST(AutoPipeline, TensorCoreFragmentsGetRegisterStagesWhereTheRegistersAllow) {
    const Lowered optin = lower_generator("gemm", {{"type", "f16"}, {"auto_pipeline", "true"}, {"limits", "optin"}}, cuda);
    EXPECT_GE(optin.stages("A_shared"), 2);
    EXPECT_EQ(optin.stages("B_shared"), optin.stages("A_shared"));
    EXPECT_EQ(optin.stages("prod"), 2);
    ASSERT_NE(optin.choice("prod"), nullptr);
    EXPECT_EQ(optin.choice("prod")->level, alcop::Level::Register);
    EXPECT_GT(optin.choice("prod")->predicted_gain, 1.0);
    EXPECT_NE(optin.choice("prod")->why.find("ldmatrix 1 k step ahead of the mma.sync, about 255 registers per thread "
                                            "of the limit of 255"),
              std::string::npos)
        << optin.choice("prod")->why;
    ASSERT_NE(optin.choice("A_shared"), nullptr);
    EXPECT_NE(optin.choice("A_shared")->why.find("2 blocks per SM on the H200 model at 221 registers per thread"),
              std::string::npos)
        << optin.choice("A_shared")->why;
    // The rewrite took them: the fragments' register slots are in the kernel.
    EXPECT_NE(alcop::summarize_pipeline(optin.after, {"A_shared", "B_shared"}).shared_elems, 0);
    std::ostringstream after;
    after << optin.after;
    EXPECT_NE(after.str().find("tc_fragments"), std::string::npos);

    const Lowered stock = lower_generator("gemm", {{"type", "f16"}, {"auto_pipeline", "true"}}, cuda);
    EXPECT_EQ(stock.stages("prod"), 0);
    ASSERT_NE(stock.choice("prod"), nullptr);
    EXPECT_NE(stock.choice("prod")->why.find("2 register stages need about 255 registers per thread "
                                             "(model::estimate_registers), more than the limit of 64"),
              std::string::npos)
        << stock.choice("prod")->why;
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
        EXPECT_EQ(l.requests.count(plain(c.func)), 0u) << c.func;
        EXPECT_NE(l.warnings.find(alcop::user_name(c.func) + " (register) is left as it is"), std::string::npos)
            << l.warnings;
    }
    EXPECT_TRUE(rejected) << l.report.to_string();
    EXPECT_NE(l.warnings.find("(register) is left as it is"), std::string::npos) << l.warnings;
    // The fragments are where they were: the same shared pipeline as the hand-written shared-only
    // request, and the same produce nodes of the fragments (8 unrolled steps of each).
    Lowered by_hand = lower_generator("gemm", {{"stages", "2"}, {"register_stages", "1"}});
    alcop::PipelineSummary a = alcop::summarize_pipeline(l.after, {"A_shared", "B_shared"});
    alcop::PipelineSummary h = alcop::summarize_pipeline(by_hand.after, {"A_shared", "B_shared"});
    EXPECT_EQ(a.shared_elems, h.shared_elems);
    EXPECT_EQ(a.register_elems, h.register_elems);
    EXPECT_EQ(a.loop_barriers, h.loop_barriers);
    EXPECT_EQ(a.prologue_copies, h.prologue_copies);
    auto fragment_productions = [](const Stmt &s) {
        class Count : public IRVisitor {
            using IRVisitor::visit;
            void visit(const ProducerConsumer *op) override {
                n += op->is_producer && plain(op->name).find("_in_prod") != std::string::npos;
                IRVisitor::visit(op);
            }

        public:
            int n = 0;
        } count;
        s.accept(&count);
        return count.n;
    };
    EXPECT_EQ(fragment_productions(l.after), 16);
    EXPECT_EQ(fragment_productions(l.after), fragment_productions(by_hand.after));
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
    Lowered automatic = TestGemm(8).lower_automatic();
    EXPECT_EQ(automatic.stages("A_shared"), 2);
    EXPECT_EQ(automatic.stages("B_shared"), 2);

    TestGemm g(8);
    alcop::pipeline(g.A_shared, 4);
    alcop::pipeline(g.B_shared, 1);
    Lowered mixed = g.lower_automatic();
    EXPECT_EQ(mixed.stages("A_shared"), 4);
    EXPECT_EQ(mixed.stages("B_shared"), 1);
    ASSERT_TRUE(mixed.automatic);
    for (const alcop::AutoChoice &c : mixed.report.choices) {
        ADD_FAILURE() << "an explicitly requested Func is no candidate: " << c.func;
    }
    alcop::PipelineSummary s = alcop::summarize_pipeline(mixed.after, {"A_shared", "B_shared"});
    EXPECT_EQ(s.prologue_copies["A_shared"], 3);
    EXPECT_EQ(s.prologue_copies["B_shared"], 0);
}

// Halide's apps/conv_layer GPU schedule: input.in(), staged in shared memory (Halide's default
// at the block level) across the channel chunks rxo, is pipelined; nothing else is a candidate.
TEST(AutoPipeline, HalideConvLayerStagedInputIsPipelined) {
    Lowered l = lower_generator("testing_halide_conv_layer", {{"auto_pipeline", "true"}});
    std::cout << l.report.to_string();
    ASSERT_EQ(l.report.choices.size(), 1u) << l.report.to_string();
    const alcop::AutoChoice &c = l.report.choices.front();
    EXPECT_EQ(alcop::user_name(c.func), "input.in()");
    EXPECT_EQ(c.level, alcop::Level::Shared);
    EXPECT_EQ(c.stages, 2);
    // PipelineSummary compares names up to their first '$' (input$2_im_global_wrapper$1 when the
    // test runs again in one process).
    const std::string watched = c.func.substr(0, c.func.find('$'));
    alcop::PipelineSummary s = alcop::summarize_pipeline(l.after, {watched});
    ASSERT_EQ(s.loop_copies.size(), 1u) << watched;
    ASSERT_EQ(s.prologue_copies.size(), 1u) << watched;
    EXPECT_EQ(s.loop_copies.begin()->second, 1);
    EXPECT_EQ(s.prologue_copies.begin()->second, 1);
    EXPECT_EQ(s.loop_barriers, 1);
}

// Halide's apps/cuda_mat_mul: A.in() and B.in() in per-thread registers inside the serial r
// loop (16 steps at size 128). On OpenCL (255 registers) both get 2 register stages; on CUDA,
// under Halide 14's runtime cap of 64 registers, 2 stages of 96 words do not fit: left as they
// are, with the reason.
TEST(AutoPipeline, HalideCudaMatMulRegisterStaging) {
    Lowered l = lower_generator("testing_halide_cuda_mat_mul", {{"auto_pipeline", "true"}});
    std::cout << l.report.to_string();
    ASSERT_EQ(l.report.choices.size(), 2u) << l.report.to_string();
    for (const alcop::AutoChoice &c : l.report.choices) {
        EXPECT_EQ(c.level, alcop::Level::Register) << c.func;
        EXPECT_EQ(c.stages, 2) << c.func;
    }
    Lowered capped = lower_generator("testing_halide_cuda_mat_mul", {{"auto_pipeline", "true"}}, cuda);
    ASSERT_EQ(capped.report.choices.size(), 2u) << capped.report.to_string();
    for (const alcop::AutoChoice &c : capped.report.choices) {
        EXPECT_EQ(c.stages, 1) << c.func;
        EXPECT_NE(c.why.find("do not fit"), std::string::npos) << c.why;
    }
    EXPECT_TRUE(capped.requests.empty());
    EXPECT_TRUE(equal(capped.before, capped.after));
}

// At Halide's own size (1024: 128 steps of r) the register level does not unroll the loop whole:
// the rewrite unrolls a loop of more than 16 steps only by its slots (PipelineFragments.h), so
// the code holds a few copies of each fragment's production, not 128.
TEST(AutoPipeline, ALongRegisterLoopIsNotUnrolledWhole) {
    Lowered l = lower_generator("testing_halide_cuda_mat_mul", {{"auto_pipeline", "true"}, {"size", "1024"}});
    ASSERT_EQ(l.report.choices.size(), 2u) << l.report.to_string();
    EXPECT_EQ(l.report.choices.front().stages, 2) << l.report.to_string();
    class Count : public IRVisitor {
        using IRVisitor::visit;
        void visit(const ProducerConsumer *op) override {
            n += op->is_producer && plain(op->name) == "A_im_global_wrapper";
            IRVisitor::visit(op);
        }

    public:
        int n = 0;
    } before, after;
    l.before.accept(&before);
    l.after.accept(&after);
    EXPECT_EQ(before.n, 1);
    EXPECT_GT(after.n, 1);
    EXPECT_LE(after.n, 8);
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
