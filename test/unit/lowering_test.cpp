#include "Halide.h"
#include "Directive.h"
#include <gtest/gtest.h>
#include <iostream>

using namespace Halide;
using namespace Halide::Internal;

namespace {
class Capture : public IRMutator {
public:
    Stmt *out;
    Capture(Stmt *out) : out(out) {}
    Stmt mutate(const Stmt &s) override { *out = s; return s; }
    using IRMutator::mutate;
};

Stmt lower_generator(const std::string &name, const GeneratorParamsMap &params) {
    Target t("host-opencl");
    auto gen = GeneratorRegistry::create(name, GeneratorContext(t));
    gen->set_generator_param_values(params);
    Stmt s;
    alcop::set_lowering_observer([&](const Stmt &, const Stmt &after) { s = after; });
    gen->build_module(name);
    alcop::set_lowering_observer(nullptr);
    return s;
}
}

TEST(Lowering, Dump) {
    Stmt s = lower_generator("gemm", {{"stages", "3"}, {"block_m", "32"}, {"block_n", "32"}});
    std::cout << s << "\n";
}
