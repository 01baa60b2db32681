// rewrite/WholeChunks.h: the guarded chunks of a runtime K proven whole under `K % KT == 0`,
// and nothing else changed. Each Stmt is the shape Halide lowers a reduction split by KT into
// (the last chunk's step loop of max(min(K - ko KT, KT), 0) trips, or its unrolled guards).
#include "rewrite/WholeChunks.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace Halide;
using namespace Halide::Internal;

const Expr k = Variable::make(Int(32), "A.extent.0");
const Expr ko = Variable::make(Int(32), "prod.s1.r$x.r_x_o");

Stmt update(const std::string &loop) {
    return Evaluate::make(Call::make(Int(32), "update", {Variable::make(Int(32), loop)}, Call::Extern));
}

/** for (ko, 0, (K + 31) / 32) { let tail = K - ko 32 in for (ki, 0, max(min(tail, step), 0)) } */
Stmt chunks(const Expr &chunk_count, const Expr &step_extent) {
    const Stmt step =
        For::make("prod.s1.r$x.r_x_i", 0, step_extent, ForType::Serial, DeviceAPI::None, update("prod.s1.r$x.r_x_i"));
    const Stmt tail = LetStmt::make("prod.s1.r$x.r_x_i.epilogue.s", k - ko * 32, step);
    return For::make(ko.as<Variable>()->name, 0, chunk_count, ForType::Serial, DeviceAPI::None, tail);
}

Expr guarded_step(int kt = 32) {
    return max(min(Variable::make(Int(32), "prod.s1.r$x.r_x_i.epilogue.s"), kt), 0);
}

/** The extents of the loops named `name` in s, in order. */
std::vector<Expr> extents_of(const Stmt &s, const std::string &name) {
    struct Loops : IRVisitor {
        std::string name;
        std::vector<Expr> extents;
        using IRVisitor::visit;
        void visit(const For *op) override {
            if (op->name == name) extents.push_back(op->extent);
            IRVisitor::visit(op);
        }
    } loops;
    loops.name = name;
    s.accept(&loops);
    return loops.extents;
}

/** The number of IfThenElse nodes in s. */
int ifs_in(const Stmt &s) {
    struct Ifs : IRVisitor {
        int n = 0;
        using IRVisitor::visit;
        void visit(const IfThenElse *op) override {
            n++;
            IRVisitor::visit(op);
        }
    } ifs;
    s.accept(&ifs);
    return ifs.n;
}

TEST(WholeChunks, TheStepLoopOfEveryChunkIsTheChunkWhereAMultipleOfItIsK) {
    // As Halide leaves it: the branch on K's multiple a bool let, read as uint1, outside the
    // kernel; the chunk count its own let.
    const Stmt loops = LetStmt::make("t1", (k + 31) / 32, chunks(Variable::make(Int(32), "t1"), guarded_step()));
    const Stmt s = LetStmt::make(
        "t0", k % 32 == 0, IfThenElse::make(Cast::make(UInt(1), Variable::make(Bool(), "t0")) && k >= 1, loops, loops));
    const std::vector<Expr> extents = extents_of(alcop::prove_whole_chunks(s), "prod.s1.r$x.r_x_i");
    ASSERT_EQ(extents.size(), 2u);
    EXPECT_TRUE(is_const(extents[0], 32)) << extents[0];
    EXPECT_TRUE(equal(extents[1], guarded_step()))
        << "the generic branch changed: " << extents[1];
}

TEST(WholeChunks, WhatTheFactDoesNotProveStays) {
    // A multiple of 16 leaves the last 32-wide chunk a half one; a step of 48 is not the
    // chunk's 32; a loop outside any chunk loop runs at K = 0 too (0 trips, not 32); and a
    // chunk loop of one trip more than the chunks reads past K.
    const std::vector<Stmt> cases{
        IfThenElse::make(k % 16 == 0, chunks((k + 31) / 32, guarded_step())),
        IfThenElse::make(k % 32 == 0, chunks((k + 31) / 32, guarded_step(48))),
        IfThenElse::make(k % 32 == 0, For::make("prod.s1.r$x.r_x_i", 0, min(k, 32), ForType::Serial, DeviceAPI::None,
                                                update("prod.s1.r$x.r_x_i"))),
        IfThenElse::make(k % 32 == 0, chunks(k / 32 + 1, guarded_step())),
        chunks((k + 31) / 32, guarded_step()),
    };
    for (const Stmt &s : cases) {
        const Stmt after = alcop::prove_whole_chunks(s);
        EXPECT_TRUE(after.same_as(s)) << "changed:\n" << s << "into\n" << after;
    }
}

TEST(WholeChunks, TheGuardsOfAnUnrolledStepLoopAreProvenTrue) {
    // The SIMT schedule unrolls the step loop: one guard per step, ko 32 + j + 1 <= K.
    Stmt steps = Evaluate::make(0);
    for (int j = 31; j >= 0; j--) {
        steps = Block::make(IfThenElse::make(ko * 32 + (j + 1) <= k, update("j")), steps);
    }
    const Stmt loop = For::make(ko.as<Variable>()->name, 0, (k + 31) / 32, ForType::Serial, DeviceAPI::None, steps);
    EXPECT_EQ(ifs_in(alcop::prove_whole_chunks(IfThenElse::make(k % 32 == 0, loop))), 1) << "only the branch";
    // A multiple of 16 leaves the last chunk half: its 16 guards past K / 32 stay.
    EXPECT_GE(ifs_in(alcop::prove_whole_chunks(IfThenElse::make(k % 16 == 0, loop))), 17);
}

}  // namespace
