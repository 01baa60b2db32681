#ifndef ALCOP_BENCH_OPERANDS_H
#define ALCOP_BENCH_OPERANDS_H

// The benchmark's problems and their operands: random inputs (fp32, or multiples of 1/256 in
// [-1, 1], exact in fp16 and bf16, so that the reference sees what the kernels see), the
// double-precision reference, and the check of an output against it.

#include "HalideBuffer.h"

#include <cstdint>
#include <functional>
#include <random>
#include <string>

namespace bench {

// The operands' element type; the output and the accumulation are fp32 in each case.
enum class Element { F32, F16, BF16 };

struct Problem {
    std::string name;
    int batch, m, n, k;  // as a (batched) GEMM; for conv, M = pixels, N = CO, K = taps * CI
    int conv_h = 0, conv_w = 0, conv_ci = 0, conv_kh = 0;  // conv only (stride 1, pad 1, square filter)
    bool tuned = false;  // the shape the CUDA build's autoscheduled variants were tuned for
    Element element = Element::F32;
};

/** The problem with fp16 or bf16 operands. */
Problem with_element(Problem p, Element e);

/** The Halide type of the operands' elements (for alcop::apps::bits_of and value_of,
 * SixteenBitFloats.h). */
halide_type_t type_of(Element e);

// Every output layout here (the generators', the autoscheduled ones', cuBLAS's row-major C and
// cuDNN's NHWC) is dense with x (N, or CO) innermost, so an output is read by its flat index.
struct Operands {
    Halide::Runtime::Buffer<float> a, b, out;
    Halide::Runtime::Buffer<> a_narrow, b_narrow;  // fp16 / bf16 problems: a and b as the pipelines take them
    // conv only: the input zero-padded and the (co, x, y, n) output of the autoscheduled
    // as_conv2d, a valid convolution (the input is padded once, outside the timed runs); for
    // fp16 / bf16 problems also the padded input as the pipelines take it.
    Halide::Runtime::Buffer<float> a_padded, out_4d;
    Halide::Runtime::Buffer<> a_padded_narrow;
    std::function<double(int, int, int, double *)> reference;  // (x, y, z) -> value, |terms|
    int nx, ny, nz;
};

Operands make_operands(const Problem &p, std::mt19937 &rng);

/** Wrong outputs among (at most) 2000 sampled ones; NaN-poisoned outputs count when unwritten.
 * `tolerance` is relative to the sum of the terms' magnitudes. */
int wrong_outputs(const Operands &o, const float *got, std::mt19937 &rng, double tolerance);

/** What fp32 accumulation may lose, relative to the sum of the terms' magnitudes (Operands.cpp
 * says why). */
double accumulation_tolerance(const Problem &p);

}  // namespace bench

#endif
