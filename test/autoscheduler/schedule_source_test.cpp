// The schedule source the plugin writes is the schedule it applies: the .schedule.h files that
// the AOT builds of generators/PlainGenerators.cpp emitted (add_halide_library ... SCHEDULE), applied to a
// fresh, unscheduled copy of each generator's pipeline, lower to the same Stmt as the
// autoscheduler applying its schedule directly. Both come from one list of steps
// (src/autoscheduler/ScheduleSteps.h); this is what would catch its two interpreters, the one
// that applies a step and the one that prints it, disagreeing. as_gemm_relu's epilogue is fused
// into the output stage; as_gemm_shifted is not a contraction: it covers the plain fallback's
// directives (compute_root among them); as_softmax and as_layernorm are row reductions: they
// cover rfactor over named RVars and wrappers of every consumer.

#include "Halide.h"

#include "directive/Requests.h"
#include "autoscheduler/AlcopAutoscheduler.h"

#include "Unscheduled.h"
#include "as_bmm.schedule.h"
#include "as_bmm_bf16.schedule.h"
#include "as_conv2d.schedule.h"
#include "as_conv2d_f16.schedule.h"
#include "as_gemm.schedule.h"
#include "as_gemm_bias.schedule.h"
#include "as_gemm_f16.schedule.h"
#include "as_gemm_f16_r2.schedule.h"
#include "as_gemm_into_output.schedule.h"
#include "as_gemm_relu.schedule.h"
#include "as_gemm_shifted.schedule.h"
#include "as_layernorm_f16.schedule.h"
#include "as_layernorm_f32.schedule.h"
#include "as_softmax_f32_masked.schedule.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

using namespace Halide;

namespace {

/** Every scheduling decision of the pipeline, as text: per Func (in get_func order) its
 * compute and store levels, memory type, bounds, wrappers and definition, and per stage and
 * specialization its splits and loop dimensions. The numbers Halide appends to make names
 * unique in a process are dropped, so that two builds of one generator compare equal. */
std::string schedule_of(Pipeline p) {
    using namespace Halide::Internal;
    std::ostringstream os;
    auto definition = [&](const Definition &d, const std::string &indent, auto &self) -> void {
        for (const Expr &v : d.values()) os << indent << "value " << v << "\n";
        for (const Split &sp : d.schedule().splits()) {
            os << indent << "split " << sp.old_var << " -> " << sp.outer << ", " << sp.inner << " by " << sp.factor
               << " tail " << (int)sp.tail << " type " << (int)sp.split_type << "\n";
        }
        for (const Dim &dim : d.schedule().dims()) {
            os << indent << "dim " << dim.var << " " << (int)dim.for_type << " " << (int)dim.device_api << "\n";
        }
        for (const Specialization &sp : d.specializations()) {
            os << indent << "specialize " << sp.condition << "\n";
            self(sp.definition, indent + "  ", self);
        }
    };
    std::vector<Function> outputs;
    for (const Func &f : p.outputs()) outputs.push_back(f.function());
    std::map<std::string, Function> env = build_environment(outputs);
    for (const std::string &name : topological_order(outputs, env)) {
        Function f = env.at(name);
        std::vector<Function> funcs{f};
        for (const auto &w : f.schedule().wrappers()) funcs.push_back(Function(w.second));
        for (const Function &g : funcs) {
            const FuncSchedule &fs = g.schedule();
            LoopLevel compute = fs.compute_level(), store = fs.store_level();
            compute.lock();  // as lowering does: binds the level to its Func and loop
            store.lock();
            os << "func " << g.name() << " compute_at " << compute.to_string() << " store_at " << store.to_string()
               << " memory " << (int)fs.memory_type() << "\n";
            for (const Bound &b : fs.bounds()) os << "  bound " << b.var << " " << b.min << " " << b.extent << "\n";
            definition(g.definition(), "  ", definition);
            for (const Definition &u : g.updates()) {
                os << "  update\n";
                definition(u, "    ", definition);
            }
            if (auto request = alcop::requested_pipeline(g)) {
                os << "  alcop::pipeline " << request->stages
                   << (request->level == alcop::Level::Register ? " register" : "") << "\n";
            }
        }
    }
    os << "custom lowering passes " << p.custom_lowering_passes().size() << "\n";
    // Names without the suffixes Halide adds to a Func defined again in this process: out$41,
    // and the rfactor's intermediate, which it names out_41_intm after such an output; and the
    // lets an rfactor over named RVars writes, numbered in the process (t47).
    const std::string funcs = std::regex_replace(std::regex_replace(os.str(), std::regex("\\$\\d+"), ""),
                                                 std::regex("_\\d+_intm"), "_intm");
    return std::regex_replace(funcs, std::regex("\\bt\\d+\\b"), "t");
}

struct Case {
    std::string name, generator;
    void (*apply)(Pipeline, Target);
    bool contraction = true;  ///< false: the plain fallback (no staging, no pipelining)
    /** The build's target and generator params (test/autoscheduler/CMakeLists.txt). */
    std::string target = "host-opencl";
    Internal::GeneratorParamsMap params = {};
    bool tensor_cores = false;
    bool register_stages = false;  ///< the choice pipelines register fragments (R >= 2)
    bool row_reductions = false;   ///< not a contraction: row reductions (rows of lanes)
};

class ScheduleSource : public ::testing::TestWithParam<Case> {};

const std::string cuda = "host-cuda-cuda_capability_80";

TEST_P(ScheduleSource, ReproducesTheAppliedSchedule) {
    const Case &c = GetParam();
    alcop::autoscheduler::Options options;
    std::ostringstream log;
    options.log = &log;
    const Target target(c.target);
    Pipeline direct = unscheduled(c.generator, target, c.params);
    alcop::autoscheduler::Result r = alcop::autoscheduler::autoschedule(direct, target, options);
    ASSERT_EQ(r.contraction.has_value(), c.contraction) << r.why_not;
    ASSERT_EQ(r.row_reductions.has_value(), c.row_reductions) << r.schedule_source;
    EXPECT_EQ(r.tensor_cores, c.tensor_cores) << r.tensor_cores_why_not;
    EXPECT_EQ(r.schedule_source.find("alcop::tensor_cores(") != std::string::npos, c.tensor_cores);

    Pipeline pasted = unscheduled(c.generator, target, c.params);
    c.apply(pasted, target);
    const std::string a = schedule_of(direct), b = schedule_of(pasted);
    EXPECT_EQ(a.find("alcop::pipeline") != std::string::npos, c.contraction) << a;
    EXPECT_EQ(a.find(" register\n") != std::string::npos, c.register_stages) << a;
    EXPECT_EQ(a, b) << "the schedule source differs from the schedule applied";
    // And it lowers.
    EXPECT_NO_THROW(pasted.compile_to_module(pasted.infer_arguments(), c.generator, target));
}

INSTANTIATE_TEST_SUITE_P(
    Generators, ScheduleSource,
    ::testing::Values(
        Case{"as_gemm", "as_gemm", apply_schedule_as_gemm},
        Case{"as_gemm_into_output", "as_gemm_into_output", apply_schedule_as_gemm_into_output},
        Case{"as_gemm_bias", "as_gemm_bias", apply_schedule_as_gemm_bias},  // the bias read clamped
        Case{"as_bmm", "as_bmm", apply_schedule_as_bmm}, Case{"as_conv2d", "as_conv2d", apply_schedule_as_conv2d},
        Case{"as_gemm_relu", "as_gemm_relu", apply_schedule_as_gemm_relu},
        Case{"as_gemm_shifted", "as_gemm_shifted", apply_schedule_as_gemm_shifted, false},
        Case{"as_gemm_f16",
             "as_gemm",
             apply_schedule_as_gemm_f16,
             true,
             cuda,
             {{"type", "f16"}, {"M", "256"}, {"N", "256"}, {"K", "256"}},
             true,
             true},  // under the 64-register cap: 16 x 16 warp tiles, 2 register stages
        Case{"as_gemm_f16_r2",
             "as_gemm",
             apply_schedule_as_gemm_f16_r2,
             true,
             cuda,
             {{"type", "f16"}, {"M", "256"}, {"N", "256"}, {"K", "256"}, {"gpu", "H200"}, {"limits", "optin"}},
             true,
             true},
        Case{"as_bmm_bf16",
             "as_bmm",
             apply_schedule_as_bmm_bf16,
             true,
             cuda,
             {{"type", "bf16"}, {"batch", "4"}, {"M", "128"}, {"N", "128"}, {"K", "128"}},
             true},
        Case{"as_conv2d_f16",
             "as_conv2d",
             apply_schedule_as_conv2d_f16,
             true,
             cuda,
             {{"type", "f16"}, {"N", "2"}, {"H", "8"}, {"W", "16"}, {"CI", "64"}, {"CO", "64"}},
             true,
             true},
        // Row reductions: an rfactor over named RVars, wrappers of every consumer (in()).
        Case{"as_softmax_f32_masked",
             "as_softmax",
             apply_schedule_as_softmax_f32_masked,
             false,
             "host-opencl",
             {{"scale", "0.125"}, {"add_mask", "true"}},
             false,
             false,
             true},
        Case{"as_layernorm_f32", "as_layernorm", apply_schedule_as_layernorm_f32, false, "host-opencl",
             {{"epsilon", "1e-5"}}, false, false, true},
        Case{"as_layernorm_f16", "as_layernorm", apply_schedule_as_layernorm_f16, false, cuda, {{"type", "f16"}},
             false, false, true}),
    [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

}  // namespace

// The plain row reductions take bf16 too. Halide 14 cannot compile a plain bf16 conversion for
// CUDA (LLVM fails, "Copy one register into another with a different width"): the pass the
// plugin installs converts in integer arithmetic (codegen/BFloat16Casts.h). OpenCL has no bf16
// type: the pass says so, naming the input, where Halide would say "half".
TEST(PlainRowReductions, TakeBf16OnCudaAndNameItOnOpenCl) {
    for (const std::string generator : {"as_softmax", "as_layernorm"}) {
        SCOPED_TRACE(generator);
        for (const std::string target : {cuda, std::string("host-opencl")}) {
            Pipeline p = unscheduled(generator, Target(target), {{"type", "bf16"}});
            alcop::autoscheduler::autoschedule(p, Target(target), alcop::autoscheduler::Options());
            std::string message;
            try {
                p.compile_to_module(p.infer_arguments(), generator, Target(target));
            } catch (const CompileError &e) {
                message = e.what();
            }
            if (target == cuda) {
                EXPECT_EQ(message, "");
            } else {
                EXPECT_NE(message.find("alcop: in holds bf16 values in an OpenCL kernel (of out), and OpenCL has "
                                       "no bf16 type"),
                          std::string::npos)
                    << message;
            }
        }
    }
}

// The helper the sources call for the edge blocks' copies: it clamps the dimensions it is given
// (all by default) and names the wrapper where one it is given does not exist.
TEST(ClampToInputBounds, ClampsTheListedDimensionsOnly) {
    ImageParam A(Float(32), 2, "A");
    Var x("x"), y("y");
    auto clamped_args = [&](const std::vector<int> &dims) {
        Func use("use");
        use(x, y) = A(x, y);  // a call of A's Func, A_im, as the plugin's wrappers wrap
        Func wrapper = Func(A).in(use);
        alcop::autoscheduler::clamp_to_input_bounds(wrapper, dims);
        const auto *call = wrapper.function().values()[0].as<Internal::Call>();
        std::vector<bool> clamped;
        for (const Expr &arg : call->args) clamped.push_back(!arg.as<Internal::Variable>());
        return clamped;
    };
    EXPECT_EQ(clamped_args({1}), (std::vector<bool>{false, true}));
    EXPECT_EQ(clamped_args({0}), (std::vector<bool>{true, false}));
    EXPECT_EQ(clamped_args({}), (std::vector<bool>{true, true}));
    try {
        clamped_args({2});
        FAIL() << "a dimension A does not have was accepted";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("A has no dimension 2"), std::string::npos) << e.what();
        // The wrapper's name, with the suffixes Halide adds to keep names unique in a process.
        EXPECT_TRUE(std::regex_search(e.what(), std::regex("clamp_to_input_bounds\\(A_im\\S*_in_use"))) << e.what();
    }
}
