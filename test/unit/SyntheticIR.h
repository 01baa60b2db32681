#ifndef ALCOP_TEST_SYNTHETIC_IR_H
#define ALCOP_TEST_SYNTHETIC_IR_H

// Builders for small kernels in the shape Halide hands the pass: a gpu_block loop, one merged
// GPUShared allocation "S", 16 fused gpu_thread lanes, a streaming loop "ko" over K chunks.

#include "Halide.h"

#include "rewrite/LowerPipelines.h"

#include <map>
#include <string>

namespace synthetic {

using namespace Halide;
using namespace Halide::Internal;

inline const std::string K = "K";

// The user error the pass raises for s and these requests, or "" when it accepts them.
inline std::string rejection(const Halide::Internal::Stmt &s,
                             const std::map<std::string, alcop::PipelineRequest> &requests) {
    try {
        alcop::inject_pipelines(s, requests);
    } catch (const Halide::CompileError &e) {
        return e.what();
    }
    return "";
}

// The message names the Func (`who`) and says `reason`.
#define EXPECT_REJECTION(message, who, reason)                 \
    do {                                                       \
        const std::string msg = (message);                     \
        EXPECT_NE(msg.find(who), std::string::npos) << msg;    \
        EXPECT_NE(msg.find(reason), std::string::npos) << msg; \
    } while (0)

inline Expr var(const std::string &name) {
    return Variable::make(Int(32), name);
}
inline Expr load(const std::string &buf, Expr index) {
    return Load::make(Float(32), buf, std::move(index), Buffer<>(), Parameter(), const_true(), ModulusRemainder());
}
inline Stmt store(const std::string &buf, Expr index, Expr value) {
    return Store::make(buf, std::move(value), std::move(index), Parameter(), const_true(), ModulusRemainder());
}
inline Stmt barrier() {
    return Evaluate::make(Call::make(Int(32), Call::gpu_thread_barrier, {2}, Call::Intrinsic));
}
inline Stmt produce(const std::string &f, Stmt s) {
    return ProducerConsumer::make_produce(f, std::move(s));
}
inline Stmt consume(const std::string &f, Stmt s) {
    return ProducerConsumer::make_consume(f, std::move(s));
}
inline Stmt streaming_loop(Stmt body) {
    return For::make("ko", 0, var(K), ForType::Serial, DeviceAPI::None, std::move(body));
}
// One block of 16 threads with a shared allocation "S" of `elems` floats.
inline Stmt kernel(Stmt thread_body, int elems = 16) {
    Stmt threads = For::make("tx", 0, 16, ForType::GPUThread, DeviceAPI::OpenCL, std::move(thread_body));
    Stmt alloc = Allocate::make("S", Float(32), MemoryType::GPUShared, {elems}, const_true(), threads);
    return For::make("blk", 0, 4, ForType::GPUBlock, DeviceAPI::OpenCL, alloc);
}

// The copy of tile ko of "in" into f's 16 floats at the start of S (or at `at`).
inline Stmt copy_tile(Expr at = var("tx"), const std::string &f = "P") {
    return produce(f, store("S", std::move(at), load("in", var("ko") * 16 + var("tx"))));
}
// A consumer that reads P reversed and writes the global "out".
inline Stmt use_tile(Expr at = 15 - var("tx")) {
    return consume("P", store("out", var("ko") * 16 + var("tx"), load("S", std::move(at))));
}

// Register level: a fragment "F" of 4 floats in the per-thread array "F_regs", loaded from S at
// each step ki of a serial loop and accumulated into the per-thread "acc".
inline Stmt load_fragment(Expr step = var("ki"), const std::string &f = "F") {
    std::vector<Stmt> stores;
    for (int i = 0; i < 4; i++) {
        stores.push_back(store(f + "_regs", i, load("S", step * 4 + i)));
    }
    return produce(f, Block::make(stores));
}
inline Stmt use_fragment(const std::string &f = "F") {
    return consume(f, store("acc", 0, load("acc", 0) + load(f + "_regs", 0) * load(f + "_regs", 3)));
}
inline Stmt step_loop(Stmt body, Expr extent = 8) {
    return For::make("ki", 0, std::move(extent), ForType::Serial, DeviceAPI::None, std::move(body));
}
// The per-thread arrays around s: acc and the fragments' registers, in `memory`.
inline Stmt fragment_registers(Stmt s, MemoryType memory = MemoryType::Register,
                               const std::vector<std::string> &fragments = {"F"}) {
    for (const std::string &f : fragments) {
        s = Allocate::make(f + "_regs", Float(32), memory, {4}, const_true(), s);
    }
    return Allocate::make("acc", Float(32), MemoryType::Register, {1}, const_true(), s);
}

}  // namespace synthetic

#endif
