// The Alcop plugin's tensor-core schedules, compiled for pocl: on OpenCL the plugin schedules
// fp16 / bf16 contractions for SIMT (no tensor cores there), so the tests take the schedule
// source it wrote for CUDA sm_80 (the .schedule.h of an AUTOSCHEDULE build, CMakeLists.txt),
// paste it onto a fresh copy of the same plain generator's pipeline built for OpenCL, as
// schedule_source_test does, and install the pass with the tensor-core emulation
// (test/support/EmulatedTensorCores.h) through the test hook (src/directive/TestHooks.h). The
// kernels are then the plugin's tensor-core kernels with the ldmatrix and mma markers
// emulated, which pocl runs. Test-only: nothing here reaches the plugin or the product.
//
//   alcop_replay_tensor_core_schedule NAME OUTPUT_DIR TARGET
//
// writes OUTPUT_DIR/NAME_pocl.o and .h, function NAME_pocl, arguments as the generator's.

#include "Halide.h"

#include "EmulatedTensorCores.h"
#include "alcop/Alcop.h"  // what the schedule sources call
#include "Unscheduled.h"
#include "directive/TestHooks.h"

#include "as_bmm_tc.schedule.h"
#include "as_conv2d_tc.schedule.h"
#include "as_gemm_tc.schedule.h"
#include "as_gemm_tc_k32.schedule.h"

#include <cstdio>
#include <map>
#include <string>

using namespace Halide;

namespace {

struct Case {
    std::string generator;
    Internal::GeneratorParamsMap params;  // as the CUDA build's PARAMS (CMakeLists.txt)
    void (*apply)(Pipeline, Target);
    std::vector<std::string> inputs;  // the generator's inputs, in its order
};

const std::map<std::string, Case> cases{
    {"as_gemm_tc",
     {"as_gemm", {{"type", "f16"}, {"M", "64"}, {"N", "64"}, {"K", "64"}}, apply_schedule_as_gemm_tc, {"A", "B"}}},
    {"as_gemm_tc_k32",
     {"as_gemm", {{"type", "bf16"}, {"M", "64"}, {"N", "64"}, {"K", "32"}}, apply_schedule_as_gemm_tc_k32, {"A", "B"}}},
    {"as_bmm_tc",
     {"as_bmm",
      {{"type", "bf16"}, {"batch", "2"}, {"M", "64"}, {"N", "64"}, {"K", "64"}},
      apply_schedule_as_bmm_tc,
      {"A", "B"}}},
    {"as_conv2d_tc",
     {"as_conv2d",
      {{"type", "f16"}, {"N", "1"}, {"H", "8"}, {"W", "8"}, {"CI", "32"}, {"CO", "32"}},
      apply_schedule_as_conv2d_tc,
      {"input", "weights"}}},
};

}  // namespace

int main(int argc, char **argv) {
    if (argc != 4 || !cases.count(argv[1])) {
        fprintf(stderr, "usage: %s as_gemm_tc|as_gemm_tc_k32|as_bmm_tc|as_conv2d_tc OUTPUT_DIR TARGET\n", argv[0]);
        return 1;
    }
    const std::string name = argv[1], dir = argv[2];
    const Case &c = cases.at(name);
    const Target target(argv[3]);
    Pipeline p = unscheduled(c.generator, target, c.params);
    c.apply(p, target);
    // The schedule source ends with alcop::enable(pipeline, target); the last call wins.
    alcop::Options options;
    options.target = target;
    alcop::testing::Hooks hooks;
    hooks.tensor_cores = alcop::testing::emulate_tensor_cores;
    alcop::testing::enable(p, options, hooks);

    // The arguments in the generator's order: its inputs, then the output.
    std::vector<Argument> inferred = p.infer_arguments(), args;
    for (const std::string &input : c.inputs) {
        for (const Argument &a : inferred) {
            if (a.name == input) args.push_back(a);
        }
    }
    if (args.size() != inferred.size()) {
        fprintf(stderr, "%s: the pipeline has %zu arguments, expected %zu\n", name.c_str(), inferred.size(),
                c.inputs.size());
        return 1;
    }
    const std::string base = dir + "/" + name + "_pocl";
    p.compile_to({{OutputFileType::object, base + ".o"}, {OutputFileType::c_header, base + ".h"}}, args, name + "_pocl",
                 target);
    return 0;
}
