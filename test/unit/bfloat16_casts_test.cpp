// codegen/BFloat16Casts.h: the casts to and from bf16 inside CUDA kernels become integer
// arithmetic (Halide 14's PTX for them is rejected by ptxas: autoscheduler_test's
// TensorCoreRuntimeK and gemm_bf16_bias_relu assemble kernels that need it), and nothing else
// changes. The lowered conversions, run on the CPU over every bf16 value and a spread of
// floats, give Halide's bfloat16_t values, and NaNs stay NaNs.

#include "Halide.h"
#include "alcop/BFloat16.h"
#include "codegen/BFloat16Casts.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>
#include <vector>

namespace {

using namespace Halide;
using namespace Halide::Internal;

/** A kernel over `api` that stores `value` into `out`. */
Stmt kernel(DeviceAPI api, const Expr &value) {
    Stmt store = Store::make("out", value, Variable::make(Int(32), "k.__block_id_x"), Parameter(), const_true(),
                             ModulusRemainder());
    return For::make("k.__block_id_x", 0, 16, ForType::GPUBlock, api, store);
}

/** The casts of `s` that have bf16 on either side. */
int bfloat16_casts(const Stmt &s) {
    struct Count : IRVisitor {
        int n = 0;
        using IRVisitor::visit;
        void visit(const Cast *op) override {
            n += op->type.is_bfloat() || op->value.type().is_bfloat();
            IRVisitor::visit(op);
        }
    } count;
    s.accept(&count);
    return count.n;
}

/** The value `s` (one kernel) stores. */
Expr stored(const Stmt &s) {
    const For *f = s.as<For>();
    const Store *st = f ? f->body.as<Store>() : nullptr;
    return st ? st->value : Expr();
}

const Expr bf16_in = Variable::make(BFloat(16), "bf16_in");
const Expr f32_in = Variable::make(Float(32), "f32_in");

TEST(BFloat16Casts, OnlyThoseInCudaKernelsChange) {
    const Stmt cuda =
        kernel(DeviceAPI::CUDA, Cast::make(Float(32), bf16_in) + Cast::make(Float(32), Cast::make(BFloat(16), f32_in)));
    const Stmt lowered = alcop::lower_bfloat16_casts(cuda);
    EXPECT_EQ(bfloat16_casts(cuda), 3);
    EXPECT_EQ(bfloat16_casts(lowered), 0) << lowered;
    // The same casts on the host, or in an OpenCL kernel, stay as they are.
    for (const Stmt &other : {kernel(DeviceAPI::OpenCL, Cast::make(Float(32), bf16_in)),
                              Stmt(Evaluate::make(Cast::make(Float(32), bf16_in)))}) {
        EXPECT_TRUE(alcop::lower_bfloat16_casts(other).same_as(other)) << other;
    }
    // fp16 casts are PTX's own.
    const Stmt f16 = kernel(DeviceAPI::CUDA, Cast::make(Float(32), Variable::make(Float(16), "f16_in")));
    EXPECT_TRUE(alcop::lower_bfloat16_casts(f16).same_as(f16));
}

// OpenCL has no bf16 type (Halide 14 would report "half"): a load or a store of bf16 in an
// OpenCL kernel is a user error naming the buffer, a loaded one first; not in a CUDA kernel.
TEST(BFloat16Casts, Bf16InAnOpenClKernelIsAnErrorNamingTheBuffer) {
    const Expr loaded = Load::make(BFloat(16), "A", Variable::make(Int(32), "k.__block_id_x"), Buffer<>(), Parameter(),
                                   const_true(), ModulusRemainder());
    for (const auto &[api, value, expected] : {std::tuple<DeviceAPI, Expr, std::string>{DeviceAPI::OpenCL, loaded, "A"},
                                               {DeviceAPI::OpenCL, Cast::make(BFloat(16), f32_in), "out"},
                                               {DeviceAPI::CUDA, loaded, ""}}) {
        std::string message;
        try {
            alcop::lower_bfloat16_casts(kernel(api, value));
        } catch (const CompileError &e) {
            message = e.what();
        }
        if (expected.empty()) {
            EXPECT_EQ(message, "");
        } else {
            EXPECT_NE(message.find("alcop: " + expected +
                                   " holds bf16 values in an OpenCL kernel (of k), and OpenCL "
                                   "has no bf16 type"),
                      std::string::npos)
                << message;
        }
    }
}

// alcop::round_to_bfloat16 rounds fp32 (any lanes); anything else is a user error naming it.
TEST(BFloat16Casts, RoundToBFloat16TakesFloat32Only) {
    EXPECT_EQ(alcop::round_to_bfloat16(Variable::make(Float(32, 4), "v")).type(), BFloat(16, 4));
    std::string message;
    try {
        alcop::round_to_bfloat16(Variable::make(Float(16), "h"));
    } catch (const CompileError &e) {
        message = e.what();
    }
    EXPECT_NE(message.find("alcop::round_to_bfloat16 rounds an fp32 value, not float16_t"), std::string::npos)
        << message;
}

/** `conversion` of `in` (a CUDA kernel's cast, lowered) run on the CPU over `values`. */
template<typename T, typename U>
std::vector<U> run_lowered(const Expr &conversion, const Expr &in, const std::vector<T> &values) {
    const Expr lowered = stored(alcop::lower_bfloat16_casts(kernel(DeviceAPI::CUDA, conversion)));
    Buffer<T> input((int)values.size());
    std::memcpy(input.data(), values.data(), values.size() * sizeof(T));
    ImageParam p(input.type(), 1);
    Var x("x");
    Func f;
    f(x) = substitute(in.as<Variable>()->name, p(x), lowered);
    p.set(input);
    Buffer<U> out = f.realize({(int)values.size()});
    return std::vector<U>(out.data(), out.data() + values.size());
}

TEST(BFloat16Casts, EveryBFloat16BecomesItsFloat32) {
    std::vector<bfloat16_t> all;
    for (uint32_t bits = 0; bits < 0x10000; bits++) all.push_back(bfloat16_t::make_from_bits((uint16_t)bits));
    const std::vector<float> got = run_lowered<bfloat16_t, float>(Cast::make(Float(32), bf16_in), bf16_in, all);
    for (size_t i = 0; i < all.size(); i++) {
        const float want = (float)all[i];
        ASSERT_EQ(std::memcmp(&got[i], &want, 4), 0) << "bf16 bits " << i << ": " << got[i] << ", not " << want;
    }
}

TEST(BFloat16Casts, Float32RoundsToTheNearestBFloat16AndNaNsStayNaNs) {
    std::mt19937 rng(7);
    std::vector<float> values{0.0f,
                              -0.0f,
                              1.0f,
                              1.00390625f /* a tie, to even */,
                              1.01171875f /* a tie, up */,
                              3.0e38f,
                              -1.0e-40f /* subnormal */,
                              INFINITY,
                              -INFINITY};
    // NaNs with their payload in the low half only, and all ones: Halide's own emulation
    // (float32_to_bfloat16) makes an infinity of the first and zero of the second.
    for (const uint32_t b : {0x7f800001u, 0xff80ffffu, 0xffffffffu, 0x7fc00000u}) {
        float v;
        std::memcpy(&v, &b, 4);
        values.push_back(v);
    }
    std::uniform_int_distribution<uint32_t> bits;
    while (values.size() < 100000) {
        const uint32_t b = bits(rng);
        float v;
        std::memcpy(&v, &b, 4);
        values.push_back(v);
    }
    // The lowering is the public alcop::round_to_bfloat16 (alcop/BFloat16.h), which pipelines
    // without the pass call themselves.
    EXPECT_TRUE(equal(stored(alcop::lower_bfloat16_casts(kernel(DeviceAPI::CUDA, Cast::make(BFloat(16), f32_in)))),
                      alcop::round_to_bfloat16(f32_in)));
    const std::vector<bfloat16_t> got = run_lowered<float, bfloat16_t>(Cast::make(BFloat(16), f32_in), f32_in, values);
    for (size_t i = 0; i < values.size(); i++) {
        if (std::isnan(values[i])) {
            ASSERT_TRUE(got[i].is_nan()) << "NaN became bits " << got[i].to_bits();
            ASSERT_EQ(got[i].is_negative(), std::signbit(values[i]));
        } else {
            ASSERT_EQ(got[i].to_bits(), bfloat16_t(values[i]).to_bits()) << values[i];
        }
    }
}

}  // namespace
