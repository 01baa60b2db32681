// CompactRegisters on small kernels: a block-level register array shrinks to one thread's
// window only when every access is the same thread part plus a bounded rest.

#include "Halide.h"

#include "SyntheticIR.h"
#include "rewrite/CompactRegisters.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace synthetic;

namespace {

// `acc` is a 64-float array at block level; thread tx uses acc[tx * 4 + c].
Stmt kernel_with_accumulator(Expr first_index, Expr second_index) {
    Stmt body = Block::make(store("acc", first_index, 0.0f), store("out", var("tx"), load("acc", second_index)));
    Stmt threads = For::make("tx", 0, 16, ForType::GPUThread, DeviceAPI::OpenCL, body);
    Stmt alloc = Allocate::make("acc", Float(32), MemoryType::Register, {64}, const_true(), threads);
    return For::make("blk", 0, 4, ForType::GPUBlock, DeviceAPI::OpenCL, alloc);
}

std::string text_of(const Stmt &s) {
    std::ostringstream out;
    out << s;
    return out.str();
}

TEST(CompactRegisters, ShrinksToOneThreadsWindow) {
    const std::string ir =
        text_of(alcop::compact_thread_registers(kernel_with_accumulator(var("tx") * 4 + 1, var("tx") * 4 + 3)));
    // Elements 1 and 3 of the window, numbered densely (their indices are constants).
    EXPECT_NE(ir.find("acc[float32 * 2]"), std::string::npos) << ir;
    EXPECT_NE(ir.find("acc[0] = "), std::string::npos) << ir;
    EXPECT_NE(ir.find("acc[1]"), std::string::npos) << ir;
}

TEST(CompactRegisters, LeavesArraysWithDifferentThreadPartsAlone) {
    // The accesses have different thread parts (tx * 4 and -tx * 4): no one window holds them.
    const std::string ir =
        text_of(alcop::compact_thread_registers(kernel_with_accumulator(var("tx") * 4, (15 - var("tx")) * 4)));
    EXPECT_NE(ir.find("acc[float32 * 64]"), std::string::npos) << ir;
}

TEST(CompactRegisters, ThreadPartsEqualInValueShareOneWindow) {
    // An accumulator's init and update may spell one thread part differently, with block terms
    // that cancel and a thread id split by / and %: ((tx/2 - blk)*8 + (tx%2)*4 + blk*8) is tx*4.
    const Expr spelled_apart = (var("tx") / 2 - var("blk")) * 8 + (var("tx") % 2) * 4 + var("blk") * 8;
    const std::string ir =
        text_of(alcop::compact_thread_registers(kernel_with_accumulator(spelled_apart + 1, var("tx") * 4 + 3)));
    EXPECT_NE(ir.find("acc[float32 * 2]"), std::string::npos) << ir;
}

TEST(CompactRegisters, LeavesIndicesThatMixThreadsAndLoopsAlone) {
    // (tx + k) % 16: the element a thread uses depends on the thread and the loop together.
    Stmt body = store("acc", ((var("tx") + var("k")) % 16) * 4, 0.0f);
    body = For::make("k", 0, 2, ForType::Serial, DeviceAPI::None, body);
    body = Block::make(body, store("out", var("tx"), load("acc", var("tx") * 4)));
    Stmt threads = For::make("tx", 0, 16, ForType::GPUThread, DeviceAPI::OpenCL, body);
    Stmt alloc = Allocate::make("acc", Float(32), MemoryType::Register, {64}, const_true(), threads);
    const std::string ir =
        text_of(alcop::compact_thread_registers(For::make("blk", 0, 4, ForType::GPUBlock, DeviceAPI::OpenCL, alloc)));
    EXPECT_NE(ir.find("acc[float32 * 64]"), std::string::npos) << ir;
}

}  // namespace
