// Shapes of kernels the generators do not produce, built as IR.

#include "Halide.h"

#include "EmulatedAsyncCopies.h"
#include "SyntheticIR.h"
#include "copy/CopyLowering.h"
#include "rewrite/ExpandSlots.h"
#include "rewrite/LowerPipelines.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

using namespace synthetic;

namespace {

alcop::testing::Hooks emulated() {
    alcop::testing::Hooks hooks;
    alcop::testing::emulate_async_copies(hooks);
    return hooks;
}

// Two streaming loops of one kernel, one after the other, whose tiles Halide placed at the
// same offset (their lifetimes do not overlap): each is pipelined with its own stage count,
// and both reuse the same slots.
TEST(Rewrite, TwoPipelinedLoopsInOneKernel) {
    auto loop = [](const std::string &k, const std::string &f, const std::string &in, const std::string &out) {
        Stmt copy = produce(f, store("S", var("tx"), load(in, var(k) * 16 + var("tx"))));
        Stmt use = consume(f, store(out, var(k) * 16 + var("tx"), load("S", 15 - var("tx"))));
        return For::make(k, 0, var(K), ForType::Serial, DeviceAPI::None,
                         Block::make({copy, barrier(), use, barrier()}));
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

// The async-visibility emulation: the copies only fill registers; shared memory is written by
// the code of the waits, from those registers, with one ring entry per commit point (two
// prologue steps and the loop's step at 3 stages), after a NaN poison of every slot (one
// poisoned copy per commit point, before anything is delivered). No marker is left for codegen.
// ExpandSlots.h: a marked loop runs in groups of its copies, each copy's slots constants, and
// the marks are gone; a mark inside a marked loop's body is expanded too. A mark with no loop of
// its name under it is an internal error, never a loop silently left rolled.
TEST(Rewrite, ExpandSlotsExpandsEveryMarkedLoop) {
    auto marked = [](const std::string &k, Stmt inner) {
        Stmt body = store("S_" + k, var(k) % 2, load("in", var(k)));
        if (inner.defined()) body = Block::make(body, inner);
        return alcop::mark_for_expansion(For::make(k, 0, 10, ForType::Serial, DeviceAPI::None, body), 2);
    };
    std::ostringstream text;
    text << alcop::expand_slots(marked("ko", marked("ki", Stmt())));
    const std::string ir = text.str();
    EXPECT_EQ(ir.find(".expand_slots"), std::string::npos) << ir;
    EXPECT_NE(ir.find("for (ko.slots, 0, 5)"), std::string::npos) << ir;
    EXPECT_NE(ir.find("for (ki.slots, 0, 5)"), std::string::npos) << ir;
    for (const std::string &slot : {"S_ko[0]", "S_ko[1]", "S_ki[0]", "S_ki[1]"}) {
        EXPECT_NE(ir.find(slot), std::string::npos) << slot << " in\n" << ir;
    }

    const Stmt lost = alcop::mark_for_expansion(For::make("ko", 0, 10, ForType::Serial, DeviceAPI::None,
                                                          store("S", var("ko") % 2, 0.0f)),
                                                2);
    const Stmt renamed = LetStmt::make(lost.as<LetStmt>()->name, lost.as<LetStmt>()->value,
                                       For::make("kk", 0, 10, ForType::Serial, DeviceAPI::None,
                                                 store("S", var("kk") % 2, 0.0f)));
    EXPECT_THROW(alcop::expand_slots(renamed), Halide::InternalError);
}

TEST(Rewrite, EmulatedAsyncWritesSlotsOnlyAtWaits) {
    Stmt s = kernel(streaming_loop(Block::make({copy_tile(), barrier(), use_tile(), barrier()})));
    Stmt result = alcop::inject_pipelines(s, {{"P", {3, alcop::Level::Shared}}}, alcop::Options(), emulated());

    class Check : public IRVisitor {
        using IRVisitor::visit;
        int producing = 0;

        void visit(const ProducerConsumer *op) override {
            producing += op->is_producer;
            IRVisitor::visit(op);
            producing -= op->is_producer;
        }
        void visit(const Store *op) override {
            const FloatImm *poison = op->value.as<FloatImm>();
            if (op->name == "S" && poison && std::isnan(poison->value)) {
                EXPECT_EQ(shared_stores, 0) << "a slot poisoned after a delivery: " << Stmt(op);
                poison_stores++;
            } else if (op->name == "S") {
                const Load *from = op->value.as<Load>();
                EXPECT_EQ(producing, 0) << "a copy writes its slot at issue: " << Stmt(op);
                EXPECT_TRUE(from && from->name.rfind(alcop::staging_prefix, 0) == 0) << Stmt(op);
                shared_stores++;
            }
            IRVisitor::visit(op);
        }
        void visit(const Call *op) override {
            EXPECT_EQ(op->name.find("alcop_emulated"), std::string::npos) << "marker left: " << Expr(op);
            IRVisitor::visit(op);
        }

    public:
        int shared_stores = 0, poison_stores = 0;
    } check;
    result.accept(&check);
    EXPECT_GT(check.shared_stores, 0);
    EXPECT_EQ(check.poison_stores, 3);
    std::ostringstream text;
    text << result;
    // (Later emulated pipelines of the process name their flags alcop_emulated_flag$1, ...)
    EXPECT_TRUE(std::regex_search(text.str(), std::regex("alcop_emulated_flag(\\$\\d+)?\\[uint8 \\* 3\\]")))
        << text.str();
}

// The emulation holds each store of a copy in its own registers, which a loop would overwrite.
TEST(Rewrite, EmulatedAsyncRejectsACopyWithALoop) {
    Stmt copy = produce("P", For::make("i", 0, 1, ForType::Serial, DeviceAPI::None,
                                       store("S", var("tx") + var("i"), load("in", var("ko") * 16 + var("tx")))));
    Stmt s = kernel(streaming_loop(Block::make({copy, barrier(), use_tile(), barrier()})));
    try {
        alcop::inject_pipelines(s, {{"P", {2, alcop::Level::Shared}}}, alcop::Options(), emulated());
        FAIL() << "a copy with a loop was accepted";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("cannot hold a copy with a loop"), std::string::npos) << e.what();
    }
}

}  // namespace
