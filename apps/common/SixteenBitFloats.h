#ifndef ALCOP_APPS_SIXTEEN_BIT_FLOATS_H
#define ALCOP_APPS_SIXTEEN_BIT_FLOATS_H

// fp16 and bf16 values on the host, as the apps and the tests hand 16-bit buffers to pipelines
// and read them back: the 16 bits of a float rounded to nearest (ties to even), and the float a
// pattern of 16 bits holds. Header-only, for the build's apps and tests and for an app built
// on the installed package (apps/encoder_layer includes it by its path in the source tree).

#include "HalideRuntime.h"

#include <cstdint>
#include <cstring>

namespace alcop::apps {

/** The 16 bits of f rounded to `t` (fp16 or bf16), to nearest, ties to even. */
inline uint16_t bits_of(float f, halide_type_t t) {
    if (t.code == halide_type_bfloat) {
        uint32_t u;
        memcpy(&u, &f, 4);
        return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
    const _Float16 h = (_Float16)f;
    uint16_t bits;
    memcpy(&bits, &h, 2);
    return bits;
}

/** The value of 16 bits of `t` (fp16 or bf16). */
inline float value_of(uint16_t bits, halide_type_t t) {
    if (t.code == halide_type_bfloat) {
        const uint32_t u = (uint32_t)bits << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    _Float16 h;
    memcpy(&h, &bits, 2);
    return (float)h;
}

/** f rounded to the nearest value of `t` (fp32: f), ties to even. */
inline float rounded(float f, halide_type_t t) {
    return t.bits == 32 ? f : value_of(bits_of(f, t), t);
}

}  // namespace alcop::apps

#endif
