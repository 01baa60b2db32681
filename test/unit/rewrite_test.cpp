// Shapes of kernels the generators do not produce, built as IR.

#include "Halide.h"

#include "SyntheticIR.h"
#include "rewrite/LowerPipelines.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace synthetic;

namespace {

// Two streaming loops of one kernel, one after the other, whose tiles Halide placed at the
// same offset (their lifetimes do not overlap): each is pipelined with its own stage count,
// and both reuse the same slots.
TEST(Rewrite, TwoPipelinedLoopsInOneKernel) {
    auto loop = [](const std::string &k, const std::string &f, const std::string &in, const std::string &out) {
        Stmt copy = produce(f, store("S", var("tx"), load(in, var(k) * 16 + var("tx"))));
        Stmt use = consume(f, store(out, var(k) * 16 + var("tx"), load("S", 15 - var("tx"))));
        return For::make(k, 0, var(K), ForType::Serial, DeviceAPI::None, Block::make({copy, barrier(), use, barrier()}));
    };
    Stmt s = kernel(Block::make({loop("ko1", "P", "in1", "out1"), barrier(), loop("ko2", "Q", "in2", "out2")}));
    std::ostringstream text;
    text << alcop::inject_pipelines(s, {{"P", {3, alcop::Level::Shared}}, {"Q", {2, alcop::Level::Shared}}});
    const std::string ir = text.str();
    EXPECT_NE(ir.find("S[float32 * 48]"), std::string::npos) << ir;  // max(3, 2) slots of 64 bytes
    EXPECT_NE(ir.find("(ko1 % 3)"), std::string::npos) << ir;
    EXPECT_NE(ir.find("(ko2 % 2)"), std::string::npos) << ir;
    EXPECT_NE(ir.find("if (ko1 < (K + -2))"), std::string::npos) << ir;  // each loop's own tail guard
    EXPECT_NE(ir.find("if (ko2 < (K + -1))"), std::string::npos) << ir;
}

}  // namespace
