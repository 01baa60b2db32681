#ifndef ALCOP_TEST_SYNTHETIC_IR_H
#define ALCOP_TEST_SYNTHETIC_IR_H

// Builders for small kernels in the shape Halide hands the pass: a gpu_block loop, one merged
// GPUShared allocation "S", 16 fused gpu_thread lanes, a streaming loop "ko" over K chunks.

#include "Halide.h"

namespace synthetic {

using namespace Halide;
using namespace Halide::Internal;

inline const std::string K = "K";

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

// The copy of tile ko of "in" into P's 16 floats at the start of S.
inline Stmt copy_tile(Expr at = var("tx")) {
    return produce("P", store("S", std::move(at), load("in", var("ko") * 16 + var("tx"))));
}
// A consumer that reads P reversed and writes the global "out".
inline Stmt use_tile(Expr at = 15 - var("tx")) {
    return consume("P", store("out", var("ko") * 16 + var("tx"), load("S", std::move(at))));
}

}  // namespace synthetic

#endif
