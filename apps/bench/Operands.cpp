#include "Operands.h"

#include "SixteenBitFloats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace bench {

using Halide::Runtime::Buffer;

namespace {

Buffer<float> random_buffer(std::vector<int> shape, std::mt19937 &rng, Element e) {
    Buffer<float> b(shape);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::uniform_int_distribution<int> steps(-256, 256);
    b.for_each_value([&](float &v) { v = e == Element::F32 ? dist(rng) : steps(rng) / 256.0f; });
    b.set_host_dirty();
    return b;
}

/** The fp16 or bf16 copy of `values` (which that type holds exactly), as a pipeline takes it. */
Buffer<> narrowed(const Buffer<float> &values, Element e) {
    const halide_type_t type = type_of(e);
    std::vector<int> shape;
    for (int d = 0; d < values.dimensions(); d++) shape.push_back(values.dim(d).extent());
    Buffer<> b(type, shape);
    const float *src = values.data();
    uint16_t *dst = (uint16_t *)b.data();
    for (size_t i = 0; i < values.number_of_elements(); i++) dst[i] = alcop::apps::bits_of(src[i], type_of(e));
    b.set_host_dirty();
    return b;
}

}  // namespace

Problem with_element(Problem p, Element e) {
    p.name += e == Element::F16 ? " f16" : " bf16";
    p.element = e;
    return p;
}

halide_type_t type_of(Element e) {
    return e == Element::F32  ? halide_type_t(halide_type_float, 32) :
           e == Element::BF16 ? halide_type_t(halide_type_bfloat, 16) :
                                halide_type_t(halide_type_float, 16);
}

Operands make_operands(const Problem &p, std::mt19937 &rng) {
    Operands o;
    if (p.conv_kh) {
        const int pad = p.conv_kh / 2, oh = p.conv_h, ow = p.conv_w;
        o.a = random_buffer({p.conv_ci, p.conv_w, p.conv_h, p.batch}, rng, p.element);
        o.b = random_buffer({p.n, p.conv_ci, p.conv_kh, p.conv_kh}, rng, p.element);
        o.out = Buffer<float>(p.n, ow * oh * p.batch);
        o.a_padded = Buffer<float>(p.conv_ci, p.conv_w + 2 * pad, p.conv_h + 2 * pad, p.batch);
        o.a_padded.fill(0.0f);
        o.a.for_each_element([&](int c, int x, int y, int n) { o.a_padded(c, x + pad, y + pad, n) = o.a(c, x, y, n); });
        o.a_padded.set_host_dirty();
        o.out_4d = Buffer<float>(p.n, ow, oh, p.batch);
        o.nx = p.n, o.ny = ow * oh * p.batch, o.nz = 1;
        o.reference = [=](int co, int px, int, double *scale) {
            const int ox = px % ow, oy = (px / ow) % oh, n = px / (ow * oh);
            double r = 0;
            for (int ky = 0; ky < p.conv_kh; ky++) {
                for (int kx = 0; kx < p.conv_kh; kx++) {
                    const int ix = ox + kx - pad, iy = oy + ky - pad;
                    if (ix < 0 || iy < 0 || ix >= p.conv_w || iy >= p.conv_h) continue;
                    for (int ci = 0; ci < p.conv_ci; ci++) {
                        const double t = (double)o.a(ci, ix, iy, n) * o.b(co, ci, kx, ky);
                        r += t;
                        *scale += std::abs(t);
                    }
                }
            }
            return r;
        };
    } else if (p.batch > 1) {
        o.a = random_buffer({p.k, p.m, p.batch}, rng, p.element);
        o.b = random_buffer({p.n, p.k, p.batch}, rng, p.element);
        o.out = Buffer<float>(p.n, p.m, p.batch);
        o.nx = p.n, o.ny = p.m, o.nz = p.batch;
        o.reference = [=](int x, int y, int z, double *scale) {
            double r = 0;
            for (int i = 0; i < p.k; i++) {
                const double t = (double)o.a(i, y, z) * o.b(x, i, z);
                r += t;
                *scale += std::abs(t);
            }
            return r;
        };
    } else {
        o.a = random_buffer({p.k, p.m}, rng, p.element);
        o.b = random_buffer({p.n, p.k}, rng, p.element);
        o.out = Buffer<float>(p.n, p.m);
        o.nx = p.n, o.ny = p.m, o.nz = 1;
        o.reference = [=](int x, int y, int, double *scale) {
            double r = 0;
            for (int i = 0; i < p.k; i++) {
                const double t = (double)o.a(i, y) * o.b(x, i);
                r += t;
                *scale += std::abs(t);
            }
            return r;
        };
    }
    if (p.element != Element::F32) {
        o.a_narrow = narrowed(o.a, p.element);
        o.b_narrow = narrowed(o.b, p.element);
        if (p.conv_kh) o.a_padded_narrow = narrowed(o.a_padded, p.element);
    }
    return o;
}

int wrong_outputs(const Operands &o, const float *got, std::mt19937 &rng, double tolerance) {
    const long total = (long)o.nx * o.ny * o.nz;
    const int samples = (int)std::min<long>(total, 2000);
    int wrong = 0;
    for (int i = 0; i < samples; i++) {
        const long e = samples == total ? i : (long)(rng() % total);
        const int x = e % o.nx, y = (e / o.nx) % o.ny, z = e / ((long)o.nx * o.ny);
        double scale = 1e-6;
        const double ref = o.reference(x, y, z, &scale);
        wrong += !(std::abs(got[e] - ref) <= tolerance * scale);
    }
    return wrong;
}

// What fp32 accumulation may lose, relative to the sum of the terms' magnitudes: 1e-4 as for
// fp32 operands, or for fp16 / bf16 operands the bound of hardware mma.sync. Its products are
// exact, but its sums are not fp32 additions rounded to nearest (the emulation's, whose bound the
// tests use: reference::exact_products_bound): Fasi, Higham, Mikaitis and Pranesh (Numerical
// behavior of NVIDIA tensor cores, PeerJ CS 2021) measured on V100, T4 and A100 that a block of
// b products (4 on V100, 8 on A100) and the accumulator are aligned to the largest of them and
// truncated, and the sum rounded toward zero: up to 2^-23 of the block's largest magnitude per
// addend, (b + 1) 2^-23 per block, K (1 + 1/b) 2^-23 of the terms' magnitudes in all, at most
// 2.5 K 2^-24 for b >= 4. cuBLAS and cuDNN, on the same tensor cores, are judged by it too.
double accumulation_tolerance(const Problem &p) {
    return p.element == Element::F32 ? 1e-4 : std::max(1e-4, 2.5 * p.k * std::ldexp(1.0, -24));
}

}  // namespace bench
