// The GEMM and batched matmul generators (MatMulGenerator.h).

#include "MatMulGenerator.h"

namespace {

template<bool Batched>
class MatMul : public alcop_generators::MatMulGenerator<MatMul<Batched>, Batched> {};

}  // namespace

HALIDE_REGISTER_GENERATOR(MatMul<false>, gemm)
HALIDE_REGISTER_GENERATOR(MatMul<true>, bmm)
