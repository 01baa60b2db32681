// The pieces of a transformer encoder layer on pocl, one by one:
//  - the fused epilogues and B layouts of the production gemm and bmm (generators/MatMulGenerator.h) through
//    their testing wrappers (the tensor-core markers emulated, test/support/EmulatedTensorCores.h),
//    against a double-precision epilogue of the reference product (EpilogueNumbers.h);
//  - softmax and layernorm in fp32, hand-written (generators/RowReductionGenerators.h) and written
//    plainly for the Alcop plugin's row reductions (as_softmax, as_layernorm in
//    generators/PlainGenerators.cpp), against double precision: softmax within 1e-5 of each
//    probability (plus 2^-24), layernorm within 1e-5 of the normalized value's scale. A wrong
//    mask row, scale, mean or variance is off by far more.

#include "EpilogueNumbers.h"

#include "as_layernorm_f32.h"
#include "as_softmax_f32_batched.h"
#include "as_softmax_f32_heads.h"
#include "as_softmax_f32_masked.h"
#include "layernorm_f32.h"
#include "layernorm_f32_aligned.h"
#include "softmax_f32_masked.h"
#include "softmax_f32_masked_aligned.h"
#include "tcg_bmm_bf16_s2_k16_relu.h"
#include "tcg_bmm_f16_s3_bkm.h"
#include "tcg_gemm_f16_s3_gelu.h"
#include "tcg_gemm_f32_s3_bkm.h"
#include "tcg_gemm_f32_s3_gelu.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace {

using namespace tc_numbers;

const halide_type_t f32(halide_type_float, 32);

// The fused epilogue, out = out_type(activation(A B + bias) + residual) in fp16 or bf16: N even
// (a 16-bit out's rows start at 4-byte boundaries), a tail in N that cuts no lane's pair
// (N = 72 = 2 x 32 + 8), tails in M and K, one element pair.
const std::vector<MatMulShape> epilogue_gemm_shapes{{0, 32, 32, 32}, {0, 100, 72, 160}, {0, 17, 10, 7},
                                                    {0, 33, 46, 40}, {0, 1, 2, 1},      {0, 96, 130, 250}};
const std::vector<MatMulShape> epilogue_bmm_shapes{{2, 32, 32, 32}, {3, 45, 20, 70}, {2, 64, 34, 129}};

TEST(FusedEpilogue, GemmF16ToF16WithBiasGeluResidual) {
    check_epilogue({tcg_gemm_f16_s3_gelu_argv, f16, f16, true, true, false, Activation::GELU}, epilogue_gemm_shapes);
}
TEST(FusedEpilogue, BmmBF16ToBF16WithBiasReluResidual) {
    check_epilogue({tcg_bmm_bf16_s2_k16_relu_argv, bf16, bf16, true, true, false, Activation::ReLU},
                   epilogue_bmm_shapes);
}

// The SIMT kernel (fp32 operands) computes the same epilogue into an fp32 out, any N.
TEST(FusedEpilogue, GemmF32WithBiasGeluResidual) {
    check_epilogue({tcg_gemm_f32_s3_gelu_argv, f32, f32, true, true, false, Activation::GELU},
                   {{0, 100, 72, 160}, {0, 17, 9, 7}, {0, 1, 1, 1}});
}

// B contiguous along K (attention's K in Q K^T, a PyTorch Linear weight): on tensor cores (B's
// tile K-major, ldmatrix without .trans) into fp16, and on the SIMT kernel.
TEST(FusedEpilogue, BmmF16WithKMajorB) {
    check_epilogue({tcg_bmm_f16_s3_bkm_argv, f16, f16, false, false, true}, epilogue_bmm_shapes);
}
TEST(FusedEpilogue, GemmF32WithKMajorBAndBias) {
    check_epilogue({tcg_gemm_f32_s3_bkm_argv, f32, f32, true, false, true},
                   {{0, 100, 72, 160}, {0, 17, 9, 7}, {0, 1, 1, 1}});
}

// An odd row stride would misalign a lane's pair: the pipeline refuses it (Halide's constraint
// on out.stride.1) rather than store it wrong.
std::string last_error;

TEST(FusedEpilogue, SixteenBitOutputsRefuseAnOddRowStride) {
    const halide_error_handler_t before =
        halide_set_error_handler([](void *, const char *message) { last_error = message; });
    EXPECT_EQ(epilogue_mismatches({tcg_gemm_f16_s3_gelu_argv, f16, f16, true, true, false, Activation::GELU},
                                  {0, 8, 9, 16}),
              -1);
    halide_set_error_handler(before);
    EXPECT_NE(last_error.find("Constraint violated: out.stride.1 (9)"), std::string::npos) << last_error;
}

// The sizes of a row: one element, fewer than a warp's lanes, one per lane, a tail of one past
// a warp, BERT's sequence (128) and hidden size (768), and rows of a block's tail (9 rows of
// blocks of 4).
const std::vector<int> row_lengths{1, 7, 32, 33, 128, 200, 768};
const int rows = 9;

using SoftmaxFn = int (*)(halide_buffer_t *, halide_buffer_t *, int, halide_buffer_t *);
using LayerNormFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

/** The probabilities `out(x)` of one row off softmax over x < n of `v(x)`. */
int softmax_row_mismatches(int n, const std::function<double(int)> &v, const std::function<float(int)> &out) {
    double top = -1e300, sum = 0;
    for (int x = 0; x < n; x++) top = std::max(top, v(x));
    for (int x = 0; x < n; x++) sum += std::exp(v(x) - top);
    int bad = 0;
    for (int x = 0; x < n; x++) {
        const double ref = std::exp(v(x) - top) / sum;
        bad += !(std::abs(out(x) - ref) <= 1e-5 * ref + std::ldexp(1.0, -24));
    }
    return bad;
}

/** Probabilities of `softmax` (scale 0.125, one mask row for 3 rows) off the reference, over
 * rows of length n; -1 when the pipeline fails. */
int softmax_mismatches(SoftmaxFn softmax, int n) {
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> value(-30.0f, 30.0f);
    Halide::Runtime::Buffer<float> in(n, rows), mask(n, rows / 3), out = reference::poisoned({n, rows});
    in.for_each_value([&](float &v) { v = value(rng); });
    mask.for_each_value([&](float &v) { v = rng() % 4 == 0 ? -10000.0f : 0.0f; });
    in.set_host_dirty();
    mask.set_host_dirty();
    if (softmax(in, mask, 3, out) != 0) return -1;
    out.copy_to_host();
    int bad = 0;
    for (int y = 0; y < rows; y++) {
        bad += softmax_row_mismatches(
            n, [&](int x) { return 0.125 * in(x, y) + mask(x, y / 3); }, [&](int x) { return out(x, y); });
    }
    std::printf("softmax, rows of %d: %d of %d off\n", n, bad, n * rows);
    return bad;
}

TEST(RowReductions, SoftmaxWithScaleAndMask) {
    for (int n : row_lengths) {
        SCOPED_TRACE(n);
        EXPECT_EQ(softmax_mismatches(softmax_f32_masked, n), 0);
    }
}

// With aligned=true: rows of whole vectors (4 floats), some a whole number of the warp's 128
// elements (the vector kernel), the others not (element by element).
const std::vector<int> aligned_row_lengths{4, 8, 36, 128, 200, 256, 768};

TEST(RowReductions, SoftmaxOfAlignedRows) {
    for (int n : aligned_row_lengths) {
        SCOPED_TRACE(n);
        EXPECT_EQ(softmax_mismatches(softmax_f32_masked_aligned, n), 0);
    }
}

// Rows padded to whole vectors (a row of 6 floats in a stride of 8): the row is not whole, and
// its vector-less kernel reads and writes the 6 elements only.
TEST(RowReductions, SoftmaxOfPaddedAlignedRows) {
    const int n = 6, padded = 8;
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> value(-30.0f, 30.0f);
    Halide::Runtime::Buffer<float> in_rows(padded, rows), mask_rows(padded, rows / 3), out_rows(padded, rows);
    in_rows.for_each_value([&](float &v) { v = value(rng); });
    mask_rows.fill(0.0f);
    out_rows.fill(-1.0f);
    Halide::Runtime::Buffer<float> in = in_rows.cropped(0, 0, n), mask = mask_rows.cropped(0, 0, n),
                                   out = out_rows.cropped(0, 0, n);
    in.set_host_dirty();
    mask.set_host_dirty();
    out.set_host_dirty();
    ASSERT_EQ(softmax_f32_masked_aligned(in, mask, 3, out), 0);
    out.copy_to_host();  // into out_rows' host memory, which the crop shares
    int bad = 0, padding_written = 0;
    for (int y = 0; y < rows; y++) {
        bad += softmax_row_mismatches(
            n, [&](int x) { return 0.125 * in_rows(x, y); }, [&](int x) { return out_rows(x, y); });
        for (int x = n; x < padded; x++) padding_written += out_rows(x, y) != -1.0f;
    }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(padding_written, 0);
}

TEST(AutoscheduledRowReductions, SoftmaxWithScaleAndMask) {
    for (int n : row_lengths) {
        SCOPED_TRACE(n);
        EXPECT_EQ(softmax_mismatches(as_softmax_f32_masked, n), 0);
    }
}

// Rows in two and three dimensions (attention's queries, heads and batch: in(x, y, h[, b])), the
// plugin's block of rows along the first, one block per head and batch (fused into one block
// dimension with four).
TEST(AutoscheduledRowReductions, SoftmaxOverRowsOfHeadsAndBatches) {
    const int heads = 3, batch = 2;
    for (bool batched : {false, true}) {
        for (int n : row_lengths) {
            SCOPED_TRACE(std::to_string(n) + (batched ? " batched" : ""));
            std::mt19937 rng(n);
            std::uniform_real_distribution<float> value(-30.0f, 30.0f);
            std::vector<int> sizes{n, rows, heads};
            if (batched) sizes.push_back(batch);
            Halide::Runtime::Buffer<float> in(sizes), out = reference::poisoned(sizes);
            in.for_each_value([&](float &v) { v = value(rng); });
            in.set_host_dirty();
            ASSERT_EQ(batched ? as_softmax_f32_batched(in, out) : as_softmax_f32_heads(in, out), 0);
            out.copy_to_host();
            int bad = 0;
            for (int b = 0; b < (batched ? batch : 1); b++) {
                for (int h = 0; h < heads; h++) {
                    for (int y = 0; y < rows; y++) {
                        auto at = [&](const Halide::Runtime::Buffer<float> &f, int x) {
                            return batched ? f(x, y, h, b) : f(x, y, h);
                        };
                        bad += softmax_row_mismatches(
                            n, [&](int x) { return 0.125 * at(in, x); }, [&](int x) { return at(out, x); });
                    }
                }
            }
            std::printf("softmax over %s, rows of %d: %d of %d off\n", batched ? "heads and batches" : "heads", n,
                        bad, (int)out.number_of_elements());
            EXPECT_EQ(bad, 0);
        }
    }
}

/** Outputs of `layernorm` (epsilon 1e-5) off the reference over rows of length n, whose values
 * sit around 3 (a mean that sum x^2 - n mean^2 would cancel against). */
int layernorm_mismatches(LayerNormFn layernorm, int n) {
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    Halide::Runtime::Buffer<float> in(n, rows), gamma(n), beta(n), out = reference::poisoned({n, rows});
    in.for_each_value([&](float &v) { v = 3.0f + value(rng); });
    gamma.for_each_value([&](float &v) { v = value(rng); });
    beta.for_each_value([&](float &v) { v = value(rng); });
    for (auto *b : {&in, &gamma, &beta}) b->set_host_dirty();
    if (layernorm(in, gamma, beta, out) != 0) return -1;
    out.copy_to_host();
    int bad = 0;
    for (int y = 0; y < rows; y++) {
        double mean = 0, var = 0;
        for (int x = 0; x < n; x++) mean += in(x, y);
        mean /= n;
        for (int x = 0; x < n; x++) var += (in(x, y) - mean) * (in(x, y) - mean);
        var /= n;
        for (int x = 0; x < n; x++) {
            const double normalized = (in(x, y) - mean) / std::sqrt(var + 1e-5);
            const double ref = normalized * gamma(x) + beta(x);
            const double scale = std::abs(normalized * gamma(x)) + std::abs(beta(x)) + 1;
            bad += !(std::abs(out(x, y) - ref) <= 1e-5 * scale);
        }
    }
    std::printf("layernorm, rows of %d: %d of %d off\n", n, bad, n * rows);
    return bad;
}

TEST(RowReductions, LayerNorm) {
    for (int n : row_lengths) {
        SCOPED_TRACE(n);
        EXPECT_EQ(layernorm_mismatches(layernorm_f32, n), 0);
    }
}

TEST(RowReductions, LayerNormOfAlignedRows) {
    for (int n : aligned_row_lengths) {
        SCOPED_TRACE(n);
        EXPECT_EQ(layernorm_mismatches(layernorm_f32_aligned, n), 0);
    }
}

TEST(AutoscheduledRowReductions, LayerNorm) {
    for (int n : row_lengths) {
        SCOPED_TRACE(n);
        EXPECT_EQ(layernorm_mismatches(as_layernorm_f32, n), 0);
    }
}

}  // namespace
