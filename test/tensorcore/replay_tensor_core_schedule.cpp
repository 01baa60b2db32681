// The Alcop plugin's tensor-core schedules, compiled for pocl: on OpenCL the plugin schedules
// fp16 / bf16 contractions for SIMT (no tensor cores there), so the tests take the schedule
// source it wrote for CUDA sm_80 (the .schedule.h of an AUTOSCHEDULE build, CMakeLists.txt),
// paste it onto a fresh copy of the same plain generator's pipeline built for OpenCL, as
// schedule_source_test does, and install the pass with the tensor-core emulation
// (test/support/EmulatedTensorCores.h) through the test hook (src/directive/TestHooks.h). The
// kernels are then the plugin's tensor-core kernels with the ldmatrix and mma markers
// emulated, which pocl runs. Test-only: nothing here reaches the plugin or the product.
//
//   alcop_replay_tensor_core_schedule NAME GENERATOR OUTPUT_DIR TARGET [param=value...]
//
// (the build NAME's generator and params) writes OUTPUT_DIR/NAME_pocl.o and .h, function
// NAME_pocl, arguments as the generator's, and OUTPUT_DIR/NAME_pocl_markers.h: what the pass
// made of the schedule before the emulation (its mma.sync and ldmatrix markers, and the
// ldmatrix results kept in register slots, which register stages rotate), for the test to
// assert, so that a schedule that lost its tensor cores or register stages cannot pass on its
// numbers alone.

#include "Halide.h"

#include "EmulatedTensorCores.h"
#include "alcop/Alcop.h"  // what the schedule sources call
#include "Unscheduled.h"
#include "directive/TestHooks.h"

#include "as_bmm_tc.schedule.h"
#include "as_bmm_tc_runtime_k.schedule.h"
#include "as_conv2d_tc.schedule.h"
#include "as_conv2d_tc_runtime_k.schedule.h"
#include "as_gemm_tc.schedule.h"
#include "as_gemm_tc_k16.schedule.h"
#include "as_gemm_tc_k32.schedule.h"
#include "as_gemm_tc_r2.schedule.h"
#include "as_gemm_tc_runtime_k.schedule.h"
#include "as_gemm_tc_runtime_k_r2.schedule.h"
#include "codegen/TensorCoreMarkers.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace Halide;

namespace {

/** The tensor-core markers of a lowered pipeline. */
struct MarkerCount : Internal::IRVisitor {
    int mma = 0, ldmatrix = 0, into_registers = 0;
    using Internal::IRVisitor::visit;
    void visit(const Internal::Call *op) override {
        mma += op->name.rfind(alcop::mma_prefix, 0) == 0;
        ldmatrix += op->name.rfind(alcop::ldmatrix_prefix, 0) == 0;
        Internal::IRVisitor::visit(op);
    }
    void visit(const Internal::Store *op) override {
        const Internal::Call *c = op->value.as<Internal::Call>();
        into_registers += c && c->name.rfind(alcop::ldmatrix_prefix, 0) == 0;
        Internal::IRVisitor::visit(op);
    }
};

/** The schedule sources, by build name (CMakeLists.txt, as_tc_cases). */
const std::map<std::string, void (*)(Pipeline, Target)> schedules{
    {"as_gemm_tc", apply_schedule_as_gemm_tc},
    {"as_gemm_tc_k32", apply_schedule_as_gemm_tc_k32},
    {"as_gemm_tc_k16", apply_schedule_as_gemm_tc_k16},
    {"as_gemm_tc_r2", apply_schedule_as_gemm_tc_r2},
    {"as_gemm_tc_runtime_k", apply_schedule_as_gemm_tc_runtime_k},
    {"as_gemm_tc_runtime_k_r2", apply_schedule_as_gemm_tc_runtime_k_r2},
    {"as_bmm_tc", apply_schedule_as_bmm_tc},
    {"as_bmm_tc_runtime_k", apply_schedule_as_bmm_tc_runtime_k},
    {"as_conv2d_tc", apply_schedule_as_conv2d_tc},
    {"as_conv2d_tc_runtime_k", apply_schedule_as_conv2d_tc_runtime_k},
};

/** The plain generators' inputs, in their order. */
const std::map<std::string, std::vector<std::string>> inputs{
    {"as_gemm", {"A", "B"}},
    {"as_bmm", {"A", "B"}},
    {"as_conv2d", {"input", "weights"}},
};

}  // namespace

int main(int argc, char **argv) {
    if (argc < 5 || !schedules.count(argv[1]) || !inputs.count(argv[2])) {
        fprintf(stderr, "usage: %s NAME GENERATOR OUTPUT_DIR TARGET [param=value...]\n", argv[0]);
        return 1;
    }
    const std::string name = argv[1], generator = argv[2], dir = argv[3];
    const Target target(argv[4]);
    Internal::GeneratorParamsMap params;
    for (int i = 5; i < argc; i++) {
        const std::string kv = argv[i];
        params[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
    Pipeline p = unscheduled(generator, target, params);
    schedules.at(name)(p, target);
    // The schedule source ends with alcop::enable(pipeline, target); the last call wins.
    alcop::Options options;
    options.target = target;
    alcop::testing::Hooks hooks;
    MarkerCount markers;
    hooks.output = [&](const Internal::Stmt &s) {
        s.accept(&markers);
        return alcop::testing::emulate_tensor_cores(s);
    };
    hooks.emulates_tensor_cores = true;
    alcop::testing::enable(p, options, hooks);

    // The arguments in the generator's order: its inputs, then the output.
    std::vector<Argument> inferred = p.infer_arguments(), args;
    for (const std::string &input : inputs.at(generator)) {
        for (const Argument &a : inferred) {
            if (a.name == input) args.push_back(a);
        }
    }
    if (args.size() != inferred.size()) {
        fprintf(stderr, "%s: the pipeline has %zu arguments, expected %zu\n", name.c_str(), inferred.size(),
                inputs.at(generator).size());
        return 1;
    }
    const std::string base = dir + "/" + name + "_pocl";
    p.compile_to({{OutputFileType::object, base + ".o"}, {OutputFileType::c_header, base + ".h"}}, args, name + "_pocl",
                 target);
    std::ofstream(base + "_markers.h") << "// Written by alcop_replay_tensor_core_schedule: the markers of " << name
                                       << " before the emulation.\n"
                                       << "constexpr int " << name << "_mma_markers = " << markers.mma << ";\n"
                                       << "constexpr int " << name << "_ldmatrix_markers = " << markers.ldmatrix << ";\n"
                                       << "constexpr int " << name
                                       << "_ldmatrix_into_registers = " << markers.into_registers << ";\n";
    return 0;
}
