// The structure of the lowered GEMM and batched matmul, for 1 to 4 stages.

#include "Halide.h"

#include "Directive.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

using namespace Halide;
using namespace Halide::Internal;

namespace {

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

bool is_barrier_stmt(const Stmt &s) {
    const Evaluate *e = s.as<Evaluate>();
    const Call *c = e ? e->value.as<Call>() : nullptr;
    return c && c->is_intrinsic(Call::gpu_thread_barrier);
}

void flatten(const Stmt &s, std::vector<Stmt> &out) {
    if (const Block *b = s.as<Block>()) {
        flatten(b->first, out);
        flatten(b->rest, out);
    } else {
        out.push_back(s);
    }
}

/** What the IR of one kernel with one streaming loop looks like. */
struct Shape {
    int64_t shared_elems = -1, register_elems = -1;
    std::string loop;                             // the serial loop holding the produce nodes
    std::map<std::string, int> prologue_copies;   // produce nodes before the loop
    std::map<std::string, int> guarded_prologue;  // ... each under `if (p < extent)`
    std::map<std::string, int> loop_copies;       // produce nodes in the loop
    std::map<std::string, int> guarded_loop;      // ... each under an if on the loop variable
    int loop_barriers = 0;                        // top-level barriers of the loop body
    bool barrier_after_loop = false;
    std::vector<std::string> consumer_indices;    // shared indices read in the loop, as text
};

std::string base(const std::string &name) {
    return name.substr(0, name.find('$'));
}

class Measure : public IRVisitor {
    using IRVisitor::visit;
    std::vector<const For *> serial;
    std::vector<Expr> conditions;
    std::string shared;
    bool in_consume = false;

    void visit(const Allocate *op) override {
        if (op->memory_type == MemoryType::GPUShared) {
            shape.shared_elems = op->constant_allocation_size();
            shared = op->name;
        } else if (op->memory_type == MemoryType::Register) {
            shape.register_elems = op->constant_allocation_size();
        }
        IRVisitor::visit(op);
    }

    void visit(const For *op) override {
        if (op->for_type != ForType::Serial) {
            IRVisitor::visit(op);
            return;
        }
        serial.push_back(op);
        IRVisitor::visit(op);
        serial.pop_back();
    }

    void visit(const Block *op) override {
        // A barrier right after a streaming loop.
        std::vector<Stmt> stmts;
        flatten(op, stmts);
        for (size_t i = 0; i + 1 < stmts.size(); i++) {
            const For *f = stmts[i].as<For>();
            if (f && is_barrier_stmt(stmts[i + 1])) followed_by_barrier.insert(f->name);
        }
        IRVisitor::visit(op);
    }

    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        conditions.push_back(op->condition);
        op->then_case.accept(this);
        conditions.pop_back();
        if (op->else_case.defined()) op->else_case.accept(this);
    }

    // Halide makes Func names unique in a process ("A_shared$1"): compare the base names.
    bool watched(const std::string &name) const {
        return funcs.count(base(name));
    }

    void visit(const ProducerConsumer *op) override {
        if (op->is_producer && watched(op->name)) {
            if (!serial.empty() && shape.loop.empty()) {
                shape.loop = serial.back()->name;
                std::vector<Stmt> body;
                flatten(serial.back()->body, body);
                for (const Stmt &s : body) shape.loop_barriers += is_barrier_stmt(s);
            }
            const bool in_loop = !serial.empty() && serial.back()->name == shape.loop;
            bool on_loop_var = false, on_prologue_step = false;
            for (const Expr &c : conditions) {
                const LT *lt = c.as<LT>();
                on_loop_var = on_loop_var || expr_uses_var(c, shape.loop);
                on_prologue_step = on_prologue_step || (lt && is_const(lt->a));
            }
            if (in_loop) {
                shape.loop_copies[base(op->name)]++;
                shape.guarded_loop[base(op->name)] += on_loop_var;
            } else {
                shape.prologue_copies[base(op->name)]++;
                shape.guarded_prologue[base(op->name)] += on_prologue_step;
            }
        }
        bool old = in_consume;
        in_consume = in_consume || (!op->is_producer && watched(op->name));
        IRVisitor::visit(op);
        in_consume = old;
    }

    void visit(const Load *op) override {
        if (in_consume && op->name == shared && !serial.empty() && serial.back()->name == shape.loop) {
            std::ostringstream s;
            s << op->index;
            shape.consumer_indices.push_back(s.str());
        }
        IRVisitor::visit(op);
    }

public:
    std::set<std::string> funcs, followed_by_barrier;
    Shape shape;
    Measure(std::set<std::string> funcs)
        : funcs(std::move(funcs)) {
    }
};

Shape measure(const Stmt &s, const std::set<std::string> &funcs) {
    Measure m(funcs);
    s.accept(&m);
    m.shape.barrier_after_loop = m.followed_by_barrier.count(m.shape.loop);
    return m.shape;
}

class GemmStages : public ::testing::TestWithParam<int> {};

TEST_P(GemmStages, HasSlotsPrologueGuardsAndOneBarrierPerIteration) {
    const int stages = GetParam();
    Stmt s = lower_generator("gemm", {{"stages", std::to_string(stages)}});
    Shape shape = measure(s, {"A_shared", "B_shared"});

    // Default tiles: A is tile_k x block_m = 8 x 64 floats, B is 64 x 8: 1024 floats a stage.
    EXPECT_EQ(shape.shared_elems, stages * 1024);
    // The accumulator was compacted from the block tile to one thread's window.
    EXPECT_LT(shape.register_elems, 64 * 64);
    ASSERT_FALSE(shape.loop.empty());
    for (const std::string f : {"A_shared", "B_shared"}) {
        EXPECT_EQ(shape.prologue_copies[f], stages - 1) << f;
        EXPECT_EQ(shape.guarded_prologue[f], stages - 1) << f;
        EXPECT_EQ(shape.loop_copies[f], 1) << f;
        EXPECT_EQ(shape.guarded_loop[f], stages > 1 ? 1 : 0) << f;
    }
    ASSERT_FALSE(shape.consumer_indices.empty());
    if (stages == 1) {
        // Untouched: Halide's barriers after each producer and at the end of the body.
        EXPECT_EQ(shape.loop_barriers, 3);
    } else {
        EXPECT_EQ(shape.loop_barriers, 1);
        EXPECT_TRUE(shape.barrier_after_loop);
        const std::string slot = "(" + shape.loop + " % " + std::to_string(stages) + ")";
        for (const std::string &index : shape.consumer_indices) {
            EXPECT_NE(index.find(slot), std::string::npos) << index;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Lowering, GemmStages, ::testing::Values(1, 2, 3, 4));

TEST(Lowering, BatchedMatMulIsPipelinedToo) {
    Shape shape = measure(lower_generator("bmm", {{"stages", "3"}, {"block_m", "32"}, {"block_n", "32"}}),
                          {"A_shared", "B_shared"});
    EXPECT_EQ(shape.shared_elems, 3 * (8 * 32 * 2));
    EXPECT_EQ(shape.prologue_copies["A_shared"], 2);
    EXPECT_EQ(shape.loop_copies["B_shared"], 1);
    EXPECT_EQ(shape.loop_barriers, 1);
}

TEST(Lowering, StagesOneIsUnchanged) {
    Stmt plain, pipelined;
    alcop::set_lowering_observer([&](const Stmt &before, const Stmt &after) {
        plain = before;
        pipelined = after;
    });
    Target t("host-opencl");
    auto gen = GeneratorRegistry::create("gemm", GeneratorContext(t));
    gen->set_generator_param_values({{"stages", "1"}});
    gen->build_module("gemm");
    alcop::set_lowering_observer(nullptr);
    // Only the register compaction applies.
    Shape a = measure(plain, {"A_shared", "B_shared"}), b = measure(pipelined, {"A_shared", "B_shared"});
    EXPECT_EQ(a.shared_elems, b.shared_elems);
    EXPECT_EQ(a.loop_barriers, b.loop_barriers);
    EXPECT_EQ(a.consumer_indices.size(), b.consumer_indices.size());
}

TEST(Lowering, DroppingTheBarrierShowsInTheIR) {
    Shape shape = measure(lower_generator("gemm", {{"stages", "3"}, {"fault", "drop_barrier"}}),
                          {"A_shared", "B_shared"});
    EXPECT_EQ(shape.loop_barriers, 0);
}

}  // namespace
