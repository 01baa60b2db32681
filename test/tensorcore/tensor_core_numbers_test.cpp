// The numbers of the tensor-core GEMM (testing_tc_gemm: tc_test::Gemm with zero-filled copies),
// run on the CPU through OpenCL (pocl), where the ldmatrix and mma.sync markers are emulated
// through the PTX ISA's fragment layouts (test/support/EmulatedTensorCores.h): every lane
// exchanges what the real instruction would give it, from the (swizzled) addresses the rewrite
// computed, so a wrong lane mapping, a missing .trans or a swizzle that writers and readers
// disagree on gives wrong numbers here.
//
// Inputs: uniform in [-1, 1), rounded to fp16 (11 significant bits) or bf16 (8) before the
// kernel sees them; the reference is the double-precision sum of the products of the rounded
// inputs. A product of two fp16 or bf16 values is exact in fp32 (at most 22 significant bits),
// so the only error left is the fp32 accumulation of K products, in some order (the emulation
// adds them one by one; mma.sync in its own order; the K-tile loop adds onto the accumulator,
// 16 at a time): the test allows the bound of that rounding, gamma_K * sum_k |a_k b_k|
// (reference::exact_products_bound, test/common/Reference.h). An unwritten output is NaN
// (never close).

#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "Reference.h"

#include "tc_gemm_bf16_akm_bnm_s1_v8.h"
#include "tc_gemm_bf16_akm_bnm_s3_v8_r2_ktail.h"
#include "tc_gemm_bf16_akm_bkm_s3_v8.h"
#include "tc_gemm_bf16_akm_bkm_s3_v8_ktail.h"
#include "tc_gemm_bf16_amm_bnm_s3_v1.h"
#include "tc_gemm_f16_akm_bnm_s1_v1.h"
#include "tc_gemm_f16_akm_bnm_s1_v1_drop_trans.h"
#include "tc_gemm_f16_akm_bnm_s1_v1_lane_mapping.h"
#include "tc_gemm_f16_akm_bnm_s1_v1_unswizzled_rows.h"
#include "tc_gemm_f16_akm_bkm_s3_v8_ktail.h"
#include "tc_gemm_f16_akm_bkm_s3_v8_ktail_clamped.h"
#include "tc_gemm_f16_akm_bnm_s3_v8.h"
#include "tc_gemm_f16_amm_bkm_s1_v8.h"
#include "tc_gemm_f16_amm_bnm_s3_v1_ktail_unrolled.h"
#include "tc_gemm_f16_amm_bnm_s3_v8_r2.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using GemmFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct Element {
    halide_type_t type;
    int significand;   // bits, the implicit one included
    int min_exponent;  // of the smallest normal number, as frexp gives it (0.5 * 2^e)
};
const Element f16{halide_type_t(halide_type_float, 16), 11, -13};
const Element bf16{halide_type_t(halide_type_bfloat, 16), 8, -125};

/** x rounded to the nearest value of `e` (ties to even; no value here overflows). */
double round_to(double x, const Element &e) {
    if (x == 0) return 0;
    int exponent;
    std::frexp(x, &exponent);
    exponent = std::max(exponent, e.min_exponent);
    const double scale = std::ldexp(1.0, e.significand - exponent);
    return std::nearbyint(x * scale) / scale;
}

/** The 16 bits of x, a value of `e`. */
uint16_t bits_of(double x, const Element &e) {
    return reference::bits_of((float)x, e.type);  // exact: x is a value of e
}

struct Shape {
    int m, n, k;
};

/** Outputs of fn on an m x k times k x n product off the reference (or unwritten); -1 when the
 * pipeline fails. Prints the largest error relative to its bound. */
int mismatches(GemmFn fn, const Element &e, const Shape &s) {
    std::mt19937 rng(s.m * 131 + s.n * 17 + s.k);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    // A(k, m) and B(n, k), rounded; the kernels get their bits.
    // Allocations of whole tiles (64: blocks and K tiles), cropped to the matrices: the vector
    // copies read whole vectors past the edges (tc_test::Gemm::define), and ask for rows of
    // whole vectors. Past the matrices they hold NaN, which no output may see.
    std::vector<double> a(s.k * s.m), b(s.n * s.k);
    auto tiles = [](int extent) { return (extent + 63) / 64 * 64; };
    const int k_stride = tiles(s.k), n_stride = tiles(s.n);
    Halide::Runtime::Buffer<void> A(e.type, k_stride, tiles(s.m)), B(e.type, n_stride, tiles(s.k));
    for (Halide::Runtime::Buffer<void> *in : {&A, &B}) {
        std::fill_n((uint16_t *)in->data(), in->number_of_elements(), bits_of(std::nan(""), e));
    }
    for (int y = 0; y < s.m; y++) {
        for (int i = 0; i < s.k; i++) {
            a[y * s.k + i] = round_to(dist(rng), e);
            ((uint16_t *)A.data())[y * k_stride + i] = bits_of(a[y * s.k + i], e);
        }
    }
    for (int i = 0; i < s.k; i++) {
        for (int x = 0; x < s.n; x++) {
            b[i * s.n + x] = round_to(dist(rng), e);
            ((uint16_t *)B.data())[i * n_stride + x] = bits_of(b[i * s.n + x], e);
        }
    }
    A.crop(0, 0, s.k);
    A.crop(1, 0, s.m);
    B.crop(0, 0, s.n);
    B.crop(1, 0, s.k);
    A.set_host_dirty();
    B.set_host_dirty();
    Halide::Runtime::Buffer<float> out(s.n, s.m);
    out.fill(std::nanf(""));
    out.set_host_dirty();
    if (fn(A, B, out) != 0) return -1;
    out.copy_to_host();
    int bad = 0;
    double worst = 0;
    for (int y = 0; y < s.m; y++) {
        for (int x = 0; x < s.n; x++) {
            double ref = 0, scale = 0;
            for (int i = 0; i < s.k; i++) {
                const double t = a[y * s.k + i] * b[i * s.n + x];
                ref += t;
                scale += std::abs(t);
            }
            const double error = std::abs(out(x, y) - ref), bound = reference::exact_products_bound(s.k, scale);
            worst = std::max(worst, error / std::max(bound, 1e-300));
            if (!(error <= bound)) {
                if (bad < 3) {
                    std::printf("  out(%d, %d) = %.9g, reference %.9g, bound %.3g\n", x, y, out(x, y), ref, bound);
                }
                bad++;
            }
        }
    }
    std::printf("%dx%dx%d: %d of %d outputs off; largest error / bound %.3f\n", s.m, s.n, s.k, bad, s.m * s.n, worst);
    return bad;
}

// Blocks of 32 x 32 (four warps of 16 x 16: small kernels, which pocl compiles in seconds),
// K tiles of 32 (two mma steps). Tails in M, N and K (the copies read zeros past the edges);
// one K tile; fewer K tiles than 3 stages; several K tiles; everything below one tile.
const std::vector<Shape> shapes{{64, 64, 32}, {64, 64, 64},    {128, 128, 96}, {100, 72, 160},
                                {64, 64, 40}, {200, 130, 250}, {17, 9, 7}};

void check(GemmFn fn, const Element &e) {
    for (const Shape &s : shapes) {
        SCOPED_TRACE(::testing::Message() << s.m << "x" << s.n << "x" << s.k);
        EXPECT_EQ(mismatches(fn, e, s), 0);
    }
}

// Named: element, A's shared layout (akm: K-major, amm: M-major, read with .trans), B's
// (bnm: N-major, .trans; bkm: K-major), shared stages, elements per copy, register stages of
// the fragments where more than one. Only unpipelined
// operand tiles are swizzled (rewrite/SwizzleOperands.h): A and B in the s1 variants with a
// K-major A and an N-major B.
TEST(TensorCoreNumbers, F16KMajorANMajorB) {
    check(tc_gemm_f16_akm_bnm_s1_v1, f16);
}
TEST(TensorCoreNumbers, F16MMajorAKMajorBVectorCopies) {
    check(tc_gemm_f16_amm_bkm_s1_v8, f16);
}
TEST(TensorCoreNumbers, F16ThreeStagesVectorCopies) {
    check(tc_gemm_f16_akm_bnm_s3_v8, f16);
}
TEST(TensorCoreNumbers, BF16VectorCopies) {
    check(tc_gemm_bf16_akm_bnm_s1_v8, bf16);
}
TEST(TensorCoreNumbers, BF16KMajorBThreeStagesVectorCopies) {
    check(tc_gemm_bf16_akm_bkm_s3_v8, bf16);
}
TEST(TensorCoreNumbers, BF16MMajorAThreeStages) {
    check(tc_gemm_bf16_amm_bnm_s3_v1, bf16);
}
TEST(TensorCoreNumbers, F16BothTransposedThreeStagesTwoRegisterStages) {
    check(tc_gemm_f16_amm_bnm_s3_v8_r2, f16);
}
// K split by the user's schedule with a guarded last chunk (tc_test::Gemm::k_tail), whose tiles
// the pass zero-fills past K (rewrite/ZeroFilledTails.h): the K tails of the shapes (40, 250, 7)
// on mma markers, with NaN read past K in both operands' vectors.
TEST(TensorCoreNumbers, F16GuardedKTailZeroFilled) {
    check(tc_gemm_f16_akm_bkm_s3_v8_ktail, f16);
}
TEST(TensorCoreNumbers, BF16GuardedKTailZeroFilled) {
    check(tc_gemm_bf16_akm_bkm_s3_v8_ktail, bf16);
}
TEST(TensorCoreNumbers, F16GuardedKTailOfClampedVectorsZeroFilled) {
    check(tc_gemm_f16_akm_bkm_s3_v8_ktail_clamped, f16);
}
TEST(TensorCoreNumbers, F16GuardedKTailZeroFilledInUnrolledRounds) {
    check(tc_gemm_f16_amm_bnm_s3_v1_ktail_unrolled, f16);
}
TEST(TensorCoreNumbers, BF16GuardedKTailZeroFilledTwoRegisterStages) {
    check(tc_gemm_bf16_akm_bnm_s3_v8_r2_ktail, bf16);
}

// The first variant with a defect of the tensor-core rewrite (test/support/TensorCoreFaults.h):
// wrong numbers at some shape (every count printed).
void expect_caught(GemmFn fn, const char *fault) {
    int wrong = 0;
    for (const Shape &s : shapes) {
        const int bad = mismatches(fn, f16, s);
        ASSERT_GE(bad, 0) << fault << ": the pipeline failed";
        wrong += bad;
    }
    std::printf("%s: %d outputs wrong over the shapes\n", fault, wrong);
    EXPECT_GT(wrong, 0) << fault << " gave right numbers at every shape";
}
TEST(TensorCoreNumbers, WrongLaneMappingIsCaught) {
    expect_caught(tc_gemm_f16_akm_bnm_s1_v1_lane_mapping, "lane_mapping");
}
TEST(TensorCoreNumbers, MissingTransIsCaught) {
    expect_caught(tc_gemm_f16_akm_bnm_s1_v1_drop_trans, "drop_trans");
}
TEST(TensorCoreNumbers, RowsNotSwizzledLikeTheCopiesAreCaught) {
    expect_caught(tc_gemm_f16_akm_bnm_s1_v1_unswizzled_rows, "unswizzled_rows");
}

}  // namespace
