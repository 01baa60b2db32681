// Differential fuzzing of the pipelining pass on pocl: seeded random shapes (1, primes,
// smaller than a tile, around tile multiples) through AOT variants that cover tile shapes,
// vector widths, stage counts 1..6, per-buffer stage counts and register stages. Each configuration is checked
// against a double-precision reference and against the unpipelined GEMM.
//
// ALCOP_FUZZ_SEED and ALCOP_FUZZ_CONFIGS (default 200, at least 1: a run of none fails) choose the run.

#include "FuzzShapes.h"
#include "HalideBuffer.h"
#include "Reference.h"
#include "HalideRuntime.h"

#include "gemm_s1.h"
#define X(name, gen) extern "C" int name(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);
#include "fuzz_variants.inc"
#undef X

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

namespace {

using Halide::Runtime::Buffer;
using MatMulFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct Variant {
    const char *name;
    MatMulFn fn;
    bool batched;
};

const Variant variants[] = {
#define X(name, gen) {#name, name, std::string(#gen) == "bmm"},
#include "fuzz_variants.inc"
#undef X
};

using fuzz::draw_size;
using fuzz::env_int;

Buffer<float> random_buffer(std::mt19937 &rng, std::vector<int> shape) {
    Buffer<float> b(shape);
    reference::fill_random(b, rng);
    return b;
}

TEST(Fuzz, PipelinedMatchesReferenceAndUnpipelined) {
    const int seed = env_int("ALCOP_FUZZ_SEED", 1234), configs = env_int("ALCOP_FUZZ_CONFIGS", 200);
    ASSERT_GT(configs, 0) << "ALCOP_FUZZ_CONFIGS=" << configs << " runs no configuration: nothing would be checked";
    std::mt19937 rng(seed);
    int failures = 0;
    for (int c = 0; c < configs && failures < 5; c++) {
        const Variant &v = variants[rng() % (sizeof(variants) / sizeof(variants[0]))];
        const int batch = v.batched ? 1 + rng() % 3 : 1, m = draw_size(rng), n = draw_size(rng), k = draw_size(rng);
        std::vector<int> a_shape{k, m}, b_shape{n, k}, out_shape{n, m};
        if (v.batched) {
            a_shape.push_back(batch);
            b_shape.push_back(batch);
            out_shape.push_back(batch);
        }
        Buffer<float> a = random_buffer(rng, a_shape), b = random_buffer(rng, b_shape);
        Buffer<float> out = reference::poisoned(out_shape);
        ASSERT_EQ(v.fn(a, b, out), 0) << v.name;
        out.copy_to_host();

        int bad = 0;
        for (int z = 0; z < batch; z++) {
            // The unpipelined GEMM on this batch's matrices (dense copies: OpenCL rejects
            // sub-buffers at unaligned offsets).
            Buffer<float> az = v.batched ? a.sliced(2, z).copy() : a, bz = v.batched ? b.sliced(2, z).copy() : b;
            az.set_host_dirty();
            bz.set_host_dirty();
            Buffer<float> plain(n, m);
            ASSERT_EQ(gemm_s1(az, bz, plain), 0);
            plain.copy_to_host();
            for (int y = 0; y < m; y++) {
                for (int x = 0; x < n; x++) {
                    double ref = 0, scale = 0;
                    for (int i = 0; i < k; i++) {
                        ref += (double)az(i, y) * bz(x, i);
                        scale += std::abs((double)az(i, y) * bz(x, i));
                    }
                    const float got = v.batched ? out(x, y, z) : out(x, y);
                    bad += !reference::close(got, ref, scale) || !reference::close(got, plain(x, y), scale);
                }
            }
        }
        if (bad) {
            failures++;
            ADD_FAILURE() << "config " << c << " (seed " << seed << "): " << v.name << " on batch " << batch << ", M "
                          << m << ", N " << n << ", K " << k << ": " << bad << " wrong elements";
        }
    }
}

}  // namespace

int main(int argc, char **argv) {
    // See test/opencl/matmul_test.cpp: run each work-item alone between barriers.
    setenv("POCL_WORK_GROUP_METHOD", "loops", 1);  // pinned: a user's value must not change what is checked
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
