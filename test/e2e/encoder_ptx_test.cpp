// The CUDA kernels of a transformer encoder layer's pieces, read in their PTX (no GPU): the fused
// epilogues of gemm (generators/MatMulGenerator.h) and the warp-per-row softmax and layernorm
// (generators/RowReductionGenerators.h); and their user errors.

#include "Halide.h"

#include "KernelSource.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

using namespace Halide;
using kernel_source::count;
using kernel_source::error_of;

const std::string sm80 = "host-cuda-cuda_capability_80";

/** ptxas's complaints about `ptx` for sm_80 and sm_90: "" when it assembles without spills (or
 * when there is no ptxas: each test then ends with ALCOP_SKIP_ASSEMBLING, a visible skip). */
std::string assembly_problems(const std::string &ptx, const std::string &tag) {
#ifdef ALCOP_PTXAS
    std::string problems;
    for (const char *arch : {"sm_80", "sm_90"}) {
        int status = 0;
        const std::string log = ptxas::run(ptx, arch, tag, &status);
        if (status != 0 || count(log, "0 bytes spill stores, 0 bytes spill loads") != count(log, "spill stores")) {
            problems += log;
        }
        const size_t used = log.find("Used ");
        std::printf("  ptxas %s: %s", arch, used == std::string::npos ? "?\n" : log.substr(used).c_str());
    }
    return problems;
#else
    (void)ptx;
    (void)tag;
    return "";
#endif
}

// The fused epilogue of a linear layer, out = f16(gelu(prod + bias) + residual) (bf16 with ReLU),
// at the default tiles: computed from the accumulators in the kernel that holds them, each lane's
// pair of adjacent columns converted and stored as one 4-byte vector (64 per thread: its 128
// accumulators), the residual and the bias read the same way, the main loop that of the fp32
// output's, no local memory, assembled without spills.
TEST(FusedEpilogue, StoresFourBytesALane) {
    for (const char *type : {"f16", "bf16"}) {
        SCOPED_TRACE(type);
        const std::string ptx =
            kernel_source::of_generator("gemm", sm80,
                                        {{"type", type},
                                         {"out_type", type},
                                         {"add_bias", "true"},
                                         {"add_residual", "true"},
                                         {"activation", std::string(type) == "f16" ? "gelu" : "relu"},
                                         {"limits", "optin"}});
        const std::vector<kernel_source::Kernel> kernels = kernel_source::kernels(ptx);
        ASSERT_EQ(kernels.size(), 2u);
        for (const kernel_source::Kernel &kernel : kernels) {
            SCOPED_TRACE(kernel.name);
            const std::string &k = kernel.text;
            // The main loop is the fp32 output's: a warp's 64 x 64 tile, two k steps a chunk.
            EXPECT_EQ(count(k, "mma.sync.aligned.m16n8k16"), 64);
            EXPECT_EQ(count(k, "ld.local") + count(k, "st.local") + count(k, "__local_depot"), 0);
            // LLVM types a pair of f16 as b16 and one of bf16 (Halide's i16) as u16.
            const int pair_stores = count(k, "st.global.v2.b16") + count(k, "st.global.v2.u16");
            const int pair_loads = count(k, "ld.global.b32") + count(k, "ld.global.v2.u16");
            EXPECT_EQ(pair_stores, 64);
            EXPECT_EQ(count(k, "st.global"), 64);  // no other stores to global memory
            EXPECT_EQ(pair_loads, 128);            // the residual's and the bias's pairs
            EXPECT_EQ(count(k, "ld.global.u16") + count(k, "ld.global.b16"), 0);
            // Where the edge N cuts a pair (the tail's branch), each half is stored on its own:
            // both halves of each of the 64 pairs, through generic addresses.
            const int half_stores = count(k, "\tst.b16") + count(k, "\tst.u16");
            EXPECT_EQ(half_stores, 128);
            std::printf("gemm %s, %s: %d 4-byte stores and %d loads of pairs, %d 2-byte stores in the tail\n", type,
                        kernel.name.c_str(), pair_stores, pair_loads, half_stores);
        }
        EXPECT_EQ(assembly_problems(ptx, "tc_epilogue"), "");
    }
#ifndef ALCOP_PTXAS
    ALCOP_SKIP_ASSEMBLING("the epilogues' kernels");
#endif
}

// A 16-bit out from fp32 operands (the SIMT kernel) on OpenCL, and a 16-bit type of a row
// reduction there: fp16 needs cl_khr_fp16, bf16 has no OpenCL type.
TEST(SixteenBitTypes, OnOpenCLAreUserErrors) {
    EXPECT_NE(error_of("gemm", "host-opencl", {{"out_type", "bf16"}}).find("OpenCL has no bf16 type"),
              std::string::npos);
    EXPECT_NE(error_of("bmm", "host-opencl", {{"out_type", "f16"}}).find("needs the device's cl_khr_fp16"),
              std::string::npos);
    EXPECT_EQ(error_of("gemm", "host-opencl-cl_half", {{"out_type", "f16"}, {"add_bias", "true"}}), "");
    // The row reductions, for their input and output types alike.
    EXPECT_NE(error_of("softmax", "host-opencl", {{"type", "f16"}}).find("softmax generator: type=f16 on OpenCL needs"),
              std::string::npos);
    EXPECT_NE(error_of("layernorm", "host-opencl", {{"out_type", "bf16"}}).find("out_type=bf16 on OpenCL"),
              std::string::npos);
}

// softmax and layernorm on CUDA: one warp a row, its statistics exchanged by warp shuffles (five
// butterfly steps, one shfl.sync.idx a value a step: softmax's 2 values, the maximum and the sum;
// layernorm's 1, twice: the mean, then the centred squares), no shared memory or barrier, no
// local memory; fp16 in and out (cvt), assembled without spills.
TEST(RowReductions, AWarpARowThroughShuffles) {
    struct Case {
        const char *generator;
        int shuffles;
    };
    for (const Case &c : {Case{"softmax", 5 * 2}, Case{"layernorm", 2 * 5}}) {
        SCOPED_TRACE(c.generator);
        const std::string ptx = kernel_source::of_generator(c.generator, sm80, {{"type", "f16"}, {"out_type", "f16"}});
        ASSERT_EQ(kernel_source::kernels(ptx).size(), 1u);
        EXPECT_EQ(count(ptx, "shfl.sync.idx.b32"), c.shuffles);
        EXPECT_EQ(count(ptx, "shfl.sync"), c.shuffles);
        EXPECT_EQ(count(ptx, "bar.sync") + count(ptx, ".shared"), 0);
        EXPECT_EQ(count(ptx, "ld.local") + count(ptx, "st.local") + count(ptx, "__local_depot"), 0);
        EXPECT_GT(count(ptx, "cvt.f32.f16"), 0);
        EXPECT_GT(count(ptx, "cvt.rn.f16.f32"), 0);
        std::printf("%s f16: %d shuffles\n", c.generator, count(ptx, "shfl.sync"));
        EXPECT_EQ(assembly_problems(ptx, c.generator), "");
    }
#ifndef ALCOP_PTXAS
    ALCOP_SKIP_ASSEMBLING("softmax and layernorm");
#endif
}

// With aligned=true (the app's kernels): where a row is a whole number of the warp's vectors (one
// of the two kernels, a specialization), each lane reads and writes its row in vectors
// (ld.global.v4.b16: 8 bytes, the widest vector Halide 14's PTX backend proves aligned in a
// kernel's buffer) and never element by element; the other kernel reads and writes the elements
// of the other rows. The same shuffles in each.
TEST(RowReductions, AlignedRowsMoveVectors) {
    struct Case {
        const char *generator;
        int shuffles;
    };
    for (const Case &c : {Case{"softmax", 5 * 2}, Case{"layernorm", 2 * 5}}) {
        SCOPED_TRACE(c.generator);
        const std::string ptx = kernel_source::of_generator(c.generator, sm80,
                                                            {{"type", "f16"}, {"out_type", "f16"}, {"aligned", "true"}});
        const std::vector<kernel_source::Kernel> kernels = kernel_source::kernels(ptx);
        ASSERT_EQ(kernels.size(), 2u);
        int vector_kernels = 0;
        for (const kernel_source::Kernel &k : kernels) {
            EXPECT_EQ(count(k.text, "shfl.sync.idx.b32"), c.shuffles) << k.name;
            const int loads = count(k.text, "ld.global.v4.b16") + count(k.text, "ld.global.nc.v4.b16");
            const int scalar_loads = count(k.text, "ld.global.b16") + count(k.text, "ld.global.nc.b16");
            const int stores = count(k.text, "st.global.v4.b16"), scalar_stores = count(k.text, "st.global.b16");
            std::printf("%s %s: %d + %d loads, %d + %d stores (vectors + elements)\n", c.generator, k.name.c_str(),
                        loads, scalar_loads, stores, scalar_stores);
            if (stores == 0) continue;  // the kernel of the other rows
            vector_kernels++;
            EXPECT_GT(loads, 0) << k.name;
            EXPECT_EQ(scalar_loads + scalar_stores, 0) << k.name;
        }
        EXPECT_EQ(vector_kernels, 1);
        EXPECT_EQ(count(ptx, "ld.local") + count(ptx, "st.local") + count(ptx, "__local_depot"), 0);
        EXPECT_EQ(assembly_problems(ptx, c.generator), "");
    }
#ifndef ALCOP_PTXAS
    ALCOP_SKIP_ASSEMBLING("softmax and layernorm");
#endif
}

// Every kernel of apps/encoder_layer (apps/encoder_layer/kernels.cmake) as its CUDA builds make
// it: fp16 (encoder_layer_cuda) or bf16 (encoder_layer_cuda_bf16), tensor cores for the
// contractions, with the opt-in's limits; ptxas assembles each for sm_80 and sm_90 without
// spills, and none uses local memory.
class EncoderLayer : public ::testing::TestWithParam<std::string> {};

TEST_P(EncoderLayer, EveryCudaKernelAssemblesWithoutLocalMemory) {
    struct Kernel {
        const char *name, *generator, *params;
    };
    const Kernel kernels[] = {
#include "encoder_kernels.inc"
    };
    const std::string type = GetParam();
    for (const Kernel &k : kernels) {
        SCOPED_TRACE(k.name);
        Internal::GeneratorParamsMap params{{"type", type}, {"out_type", type}};
        if (std::string(k.generator) == "gemm" || std::string(k.generator) == "bmm") params["limits"] = "optin";
        params = kernel_source::with_params(params, k.params);
        const std::string ptx = kernel_source::of_generator(k.generator, sm80, params);
        ASSERT_FALSE(ptx.empty());
        EXPECT_EQ(count(ptx, "ld.local") + count(ptx, "st.local") + count(ptx, "__local_depot"), 0);
        if (std::string(k.generator) != "softmax" && std::string(k.generator) != "layernorm") {
            EXPECT_GT(count(ptx, "mma.sync.aligned.m16n8k16"), 0);
        }
        std::printf("%s (%s %s, %s):\n", k.name, k.generator, k.params, type.c_str());
        EXPECT_EQ(assembly_problems(ptx, k.name), "");
    }
#ifndef ALCOP_PTXAS
    ALCOP_SKIP_ASSEMBLING("the encoder layer's kernels");
#endif
}

INSTANTIATE_TEST_SUITE_P(Types, EncoderLayer, ::testing::Values("f16", "bf16"),
                         [](const auto &info) { return info.param; });

}  // namespace
