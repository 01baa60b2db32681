// The schedule source the plugin writes is the schedule it applies: the .schedule.h files that
// the AOT builds of PlainGenerators.cpp emitted (add_halide_library ... SCHEDULE), applied to a
// fresh, unscheduled copy of each generator's pipeline, lower to the same Stmt as the
// autoscheduler applying its schedule directly.

#include "Halide.h"

#include "Directive.h"
#include "autoscheduler/AlcopAutoscheduler.h"

#include "as_bmm.schedule.h"
#include "as_conv2d.schedule.h"
#include "as_gemm.schedule.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

using namespace Halide;

namespace {

const Target target("host-opencl");

Pipeline unscheduled(const std::string &generator) {
    auto gen = Internal::GeneratorRegistry::create(generator, GeneratorContext(target));
    return gen->build_pipeline();
}

/** The lowered Stmt as text, with the names Halide numbers process-wide (unique Func and
 * variable names) made comparable. */
std::string lowered(Pipeline p, const std::string &name) {
    const std::string file = testing::TempDir() + "alcop_" + name + ".stmt";
    p.compile_to_lowered_stmt(file, p.infer_arguments(), Text, target);
    std::stringstream text;
    text << std::ifstream(file).rdbuf();
    std::string s = std::regex_replace(text.str(), std::regex("\\$\\d+"), "");
    return std::regex_replace(s, std::regex("\\bt\\d+\\b"), "t");
}

struct Case {
    std::string generator;
    void (*apply)(Pipeline, Target);
};

class ScheduleSource : public ::testing::TestWithParam<Case> {};

TEST_P(ScheduleSource, ReproducesTheAppliedSchedule) {
    const Case &c = GetParam();
    alcop::autoscheduler::Options options;
    std::ostringstream log;
    options.log = &log;
    Pipeline direct = unscheduled(c.generator);
    alcop::autoscheduler::Result r = alcop::autoscheduler::autoschedule(direct, target, options);
    ASSERT_TRUE(r.contraction.has_value()) << r.why_not;

    Pipeline pasted = unscheduled(c.generator);
    c.apply(pasted, target);
    const std::string a = lowered(direct, c.generator + "_direct"), b = lowered(pasted, c.generator + "_pasted");
    EXPECT_GT(a.size(), 1000u);
    EXPECT_EQ(a, b) << "the schedule source differs from the schedule applied";
}

INSTANTIATE_TEST_SUITE_P(Generators, ScheduleSource,
                         ::testing::Values(Case{"as_gemm", apply_schedule_as_gemm}, Case{"as_bmm", apply_schedule_as_bmm},
                                           Case{"as_conv2d", apply_schedule_as_conv2d}),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.generator; });

}  // namespace
