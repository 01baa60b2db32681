// apps/common/SixteenBitFloats.h, the fp16 / bf16 conversions the apps and the numerical tests
// share, against Halide's own float16_t and bfloat16_t (round to nearest, ties to even): every
// bf16 and fp16 value round trips, ties go to even, and random floats round as Halide rounds.

#include "Halide.h"
#include "SixteenBitFloats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace {

const halide_type_t f16(halide_type_float, 16), bf16(halide_type_bfloat, 16);

uint16_t halide_bits(float f, halide_type_t t) {
    return t.code == halide_type_bfloat ? Halide::bfloat16_t(f).to_bits() : Halide::float16_t(f).to_bits();
}

TEST(SixteenBitFloats, EveryFiniteValueRoundTrips) {
    for (const halide_type_t t : {f16, bf16}) {
        for (uint32_t bits = 0; bits < 0x10000; bits++) {
            const float v = alcop::apps::value_of((uint16_t)bits, t);
            if (!std::isfinite(v)) continue;
            ASSERT_EQ(alcop::apps::bits_of(v, t), (uint16_t)bits)
                << "bits " << bits << (t.code == halide_type_bfloat ? " bf16" : " f16");
        }
    }
}

TEST(SixteenBitFloats, TiesGoToEven) {
    // 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7 (odd): to 1. 1 + 3 2^-8 lies between
    // 1 + 2^-7 (odd) and 1 + 2^-6: to 1 + 2^-6. fp16 alike, with 2^-11 and 2^-10.
    EXPECT_EQ(alcop::apps::value_of(alcop::apps::bits_of(1 + std::ldexp(1.0f, -8), bf16), bf16), 1.0f);
    EXPECT_EQ(alcop::apps::value_of(alcop::apps::bits_of(1 + 3 * std::ldexp(1.0f, -8), bf16), bf16),
              1 + std::ldexp(1.0f, -6));
    EXPECT_EQ(alcop::apps::value_of(alcop::apps::bits_of(1 + std::ldexp(1.0f, -11), f16), f16), 1.0f);
    EXPECT_EQ(alcop::apps::value_of(alcop::apps::bits_of(1 + 3 * std::ldexp(1.0f, -11), f16), f16),
              1 + std::ldexp(1.0f, -9));
}

TEST(SixteenBitFloats, RandomFloatsRoundAsHalideRounds) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> any;
    for (const halide_type_t t : {f16, bf16}) {
        int checked = 0;
        for (int i = 0; i < 200000; i++) {
            // Random bits: every exponent and mantissa, within the type's range.
            uint32_t u = any(rng);
            float f;
            std::memcpy(&f, &u, 4);
            if (!std::isfinite(f) || std::abs(f) > (t.code == halide_type_bfloat ? 3e38f : 65000.0f)) continue;
            ASSERT_EQ(alcop::apps::bits_of(f, t), halide_bits(f, t)) << f;
            EXPECT_EQ(alcop::apps::rounded(f, t), alcop::apps::value_of(halide_bits(f, t), t));
            checked++;
        }
        EXPECT_GT(checked, 1000);
    }
}

}  // namespace
