// One BERT encoder layer, end to end, through eight AOT-compiled pipelines of this project's
// generators (CMakeLists.txt): fp16 (or bf16: encoder_layer_cuda_bf16) on tensor cores on CUDA,
// fp32 on OpenCL (pocl in CI).
//
//   QKV     = X Wqkv^T + bqkv                         gemm, b_k_major, fused bias
//   S       = Q K^T per sequence and head             bmm over (head, sequence), b_k_major: K read in place
//   P       = softmax(S / 8 + mask)                   softmax, a warp a row
//   C       = P V per sequence and head               bmm over (head, sequence): V read, C written in place
//   X1      = layernorm(C Wo^T + bo + X)              gemm (fused bias, residual), layernorm
//   out     = layernorm(gelu(X1 W1^T + b1) W2^T + b2 + X1)
//
// Q, K and V are never copied out of QKV: each attention kernel, one launch over every head and
// sequence, reads a view of it (a header over the same memory with other strides: (head dim,
// token, head, sequence)), and writes C the same way. The output is checked against a double-precision reference of the layer on the
// same (rounded) weights and inputs, within a tolerance derived from the roundings of each stage.
//
//   encoder_layer_{opencl,cuda,cuda_bf16} [--config tiny|base] [--seq N] [--batch B] [--runs R] [--dump DIR]
//
// --dump DIR writes the weights, inputs, output and the layer's time for tools/encoder_peers.py,
// which runs the same layer in PyTorch (eager, torch.compile) and JAX (XLA) on a GPU.

#include "HalideBuffer.h"
#include "HalideRuntime.h"

#ifdef ALCOP_ENCODER_CUDA
#include "HalideRuntimeCuda.h"
#else
#include "HalideRuntimeOpenCL.h"
#endif
// This build's eight kernels and KERNEL(name), their entry points (CMakeLists.txt writes it).
#include "encoder_kernels.h"
#include "SixteenBitFloats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using Halide::Runtime::Buffer;

namespace {

#if defined(ALCOP_ENCODER_BF16)
const halide_type_t element(halide_type_bfloat, 16);
const char *const backend = "CUDA, bf16 on tensor cores";
#elif defined(ALCOP_ENCODER_CUDA)
const halide_type_t element(halide_type_float, 16);
const char *const backend = "CUDA, fp16 on tensor cores";
#else
const halide_type_t element(halide_type_float, 32);
const char *const backend = "OpenCL, fp32 (on a machine without a GPU, pocl on the CPU)";
#endif

const halide_device_interface_t *device() {
#ifdef ALCOP_ENCODER_CUDA
    return halide_cuda_device_interface();
#else
    return halide_opencl_device_interface();
#endif
}

struct Shape {
    int hidden, heads, ffn, seq, batch;
    int head_dim() const {
        return hidden / heads;
    }
    int tokens() const {
        return seq * batch;
    }
};

// ---- Values of the element type ------------------------------------------------------------

/** The unit roundoff of the element type, 2^e: fp32 2^-24, fp16 2^-11, bf16 2^-8. */
int unit_roundoff_exponent() {
    return element.bits == 32 ? -24 : element.code == halide_type_bfloat ? -8 : -11;
}

/** f rounded to the element type (fp32: f). */
float rounded(float f) {
    return alcop::apps::rounded(f, element);
}

/** A buffer of the element type holding `values` (already rounded). */
Buffer<void> to_device_type(const Buffer<float> &values) {
    std::vector<int> sizes;
    for (int d = 0; d < values.dimensions(); d++) sizes.push_back(values.dim(d).extent());
    Buffer<void> b(element, sizes);
    const float *from = values.data();
    for (size_t i = 0; i < values.number_of_elements(); i++) {
        if (element.bits == 32) {
            ((float *)b.data())[i] = from[i];
        } else {
            ((uint16_t *)b.data())[i] = alcop::apps::bits_of(from[i], element);
        }
    }
    b.set_host_dirty();
    return b;
}

/** The values of a dense buffer of the element type, as fp32. */
std::vector<float> values_of(Buffer<void> &b) {
    b.copy_to_host();
    std::vector<float> v(b.number_of_elements());
    for (size_t i = 0; i < v.size(); i++) {
        v[i] = element.bits == 32 ? ((const float *)b.data())[i] :
                                    alcop::apps::value_of(((const uint16_t *)b.data())[i], element);
    }
    return v;
}

/** Random values uniform in [-scale, scale), rounded to the element type. */
Buffer<float> random_values(std::mt19937 &rng, std::vector<int> sizes, float scale) {
    Buffer<float> v(sizes);
    std::uniform_real_distribution<float> dist(-scale, scale);
    v.for_each_value([&](float &x) { x = rounded(dist(rng)); });
    return v;
}

/** A buffer of the element type on the device, its contents to be written by a kernel. */
Buffer<void> device_buffer(std::vector<int> sizes) {
    Buffer<void> b(element, sizes);
    if (b.device_malloc(device()) != 0) {
        std::fprintf(stderr, "cannot allocate device memory\n");
        std::exit(1);
    }
    return b;
}

// ---- Views: other strides over the same memory ---------------------------------------------

/** A header over b's memory, host and device, with dimensions `dims` (min, extent, stride in
 * elements): nothing is copied. b must be on the device and outlive the view; what a kernel
 * writes through the view marks b's device copy as the newer one only when the caller says so. */
Buffer<void> view(const Buffer<void> &b, std::vector<halide_dimension_t> dims) {
    halide_buffer_t raw = *b.raw_buffer();
    raw.dimensions = (int)dims.size();
    raw.dim = dims.data();
    return Buffer<void>(raw);  // copies the shape; the memory stays b's
}

/** A part of a buffer the attention kernels take: `crop`, a device crop of the buffer (which
 * owns the device sub-allocation), seen through `at_zero`, the same with every dimension from 0
 * (Buffer::translated would drop the device crop). */
struct Part {
    Buffer<void> crop, at_zero;
    halide_buffer_t *raw() {
        return at_zero.raw_buffer();
    }
};

Part from_zero(Buffer<void> crop) {
    std::vector<halide_dimension_t> dims(crop.raw_buffer()->dim, crop.raw_buffer()->dim + crop.dimensions());
    for (halide_dimension_t &d : dims) d.min = 0;
    Part p{std::move(crop), Buffer<void>()};
    p.at_zero = view(p.crop, dims);
    return p;
}

/** Part `part` of a [tokens][parts x heads x head_dim] buffer (QKV: parts 3, Q, K and V; the
 * context: 1), as (head_dim, query or key, head, sequence): what the attention kernels take. */
Part heads_of(const Buffer<void> &b, const Shape &s, int parts, int part) {
    const int d = s.head_dim(), row = parts * s.hidden;
    Buffer<void> all =
        view(b, {{0, d, 1, 0}, {0, parts * s.heads, d, 0}, {0, s.seq, row, 0}, {0, s.batch, s.seq * row, 0}});
    return from_zero(all.cropped(1, part * s.heads, s.heads).transposed(1, 2));
}

/** The scores or the probabilities, [sequence][head][query][key], as (key, query, head, sequence). */
Buffer<void> per_head(const Buffer<void> &b, const Shape &s) {
    return view(b, {{0, s.seq, 1, 0}, {0, s.seq, s.seq, 0}, {0, s.heads, s.seq * s.seq, 0},
                    {0, s.batch, s.heads * s.seq * s.seq, 0}});
}

// ---- The kernels ---------------------------------------------------------------------------

using ArgvFn = int (*)(void **);

/** Runs a kernel on buffers and scalars, in the order of its arguments; exits on failure. */
void run(const char *name, ArgvFn fn, std::vector<void *> args) {
    if (int rc = fn(args.data())) {
        std::fprintf(stderr, "%s failed: %d\n", name, rc);
        std::exit(1);
    }
}

struct Weights {
    Buffer<float> wqkv, bqkv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2;  // values (rounded)
};

Weights random_weights(std::mt19937 &rng, const Shape &s) {
    const int h = s.hidden, f = s.ffn;
    const float in_h = 1.0f / std::sqrt((float)h), in_f = 1.0f / std::sqrt((float)f);
    Weights w;
    // [N][K], as PyTorch's Linear stores them: B(k, n).
    w.wqkv = random_values(rng, {h, 3 * h}, in_h);
    w.bqkv = random_values(rng, {3 * h}, 0.1f);
    w.wo = random_values(rng, {h, h}, in_h);
    w.bo = random_values(rng, {h}, 0.1f);
    w.w1 = random_values(rng, {h, f}, in_h);
    w.c1 = random_values(rng, {f}, 0.1f);
    w.w2 = random_values(rng, {f, h}, in_f);
    w.c2 = random_values(rng, {h}, 0.1f);
    w.g1 = random_values(rng, {h}, 1.0f);
    w.b1 = random_values(rng, {h}, 0.5f);
    w.g2 = random_values(rng, {h}, 1.0f);
    w.b2 = random_values(rng, {h}, 0.5f);
    w.g1.for_each_value([](float &x) { x = rounded(1.0f + 0.25f * x); });
    w.g2.for_each_value([](float &x) { x = rounded(1.0f + 0.25f * x); });
    return w;
}

/** The layer's buffers on the device. */
struct Layer {
    Shape s;
    Buffer<void> x, mask, wqkv, bqkv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2;
    Buffer<void> qkv, scores, probs, context, y1, x1, hidden, y2, out;
    int mask_rows;
};

Layer make_layer(const Shape &s, const Weights &w, const Buffer<float> &x, const Buffer<float> &mask) {
    Layer l;
    l.s = s;
    l.x = to_device_type(x);
    l.mask = Buffer<void>(mask.copy());
    l.mask.set_host_dirty();
    l.mask_rows = s.heads * s.seq;
    const Buffer<float> *values[] = {&w.wqkv, &w.bqkv, &w.wo, &w.bo, &w.g1, &w.b1,
                                     &w.w1,   &w.c1,   &w.w2, &w.c2, &w.g2, &w.b2};
    Buffer<void> *buffers[] = {&l.wqkv, &l.bqkv, &l.wo, &l.bo, &l.g1, &l.b1, &l.w1, &l.c1, &l.w2, &l.c2, &l.g2, &l.b2};
    for (int i = 0; i < 12; i++) *buffers[i] = to_device_type(*values[i]);
    for (Buffer<void> *b : {&l.x, &l.mask, &l.wqkv, &l.bqkv, &l.wo, &l.bo, &l.g1, &l.b1, &l.w1, &l.c1, &l.w2, &l.c2,
                            &l.g2, &l.b2}) {
        b->copy_to_device(device());
    }
    const int t = s.tokens(), h = s.hidden;
    l.qkv = device_buffer({3 * h, t});
    l.scores = device_buffer({s.seq, s.seq, s.heads * s.batch});
    l.probs = device_buffer({s.seq, s.seq, s.heads * s.batch});
    l.context = device_buffer({h, t});
    l.y1 = device_buffer({h, t});
    l.x1 = device_buffer({h, t});
    l.hidden = device_buffer({s.ffn, t});
    l.y2 = device_buffer({h, t});
    l.out = device_buffer({h, t});
    return l;
}

/** Per stage, the time of its last run in ms (after a device sync). */
using StageTimes = std::map<std::string, double>;

/** Runs the layer; with `times`, each stage timed on its own (a device sync after each). */
void forward(Layer &l, StageTimes *times) {
    const Shape &s = l.s;
    auto timed = [&](const char *stage, auto &&body) {
        if (!times) {
            body();
            return;
        }
        auto t0 = std::chrono::steady_clock::now();
        body();
        l.out.device_sync();
        (*times)[stage] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    timed("qkv", [&] { run("qkv", KERNEL(qkv), {l.x.raw_buffer(), l.wqkv.raw_buffer(), l.bqkv.raw_buffer(), l.qkv.raw_buffer()}); });
    timed("scores", [&] {
        Part q = heads_of(l.qkv, s, 3, 0), k = heads_of(l.qkv, s, 3, 1);
        Buffer<void> out = per_head(l.scores, s);
        run("scores", KERNEL(scores), {q.raw(), k.raw(), out.raw_buffer()});
        l.scores.set_device_dirty();
    });
    timed("softmax", [&] {
        const int rows = s.seq * s.heads * s.batch;
        Buffer<void> in = view(l.scores, {{0, s.seq, 1, 0}, {0, rows, s.seq, 0}});
        Buffer<void> out = view(l.probs, {{0, s.seq, 1, 0}, {0, rows, s.seq, 0}});
        run("softmax", KERNEL(softmax), {in.raw_buffer(), l.mask.raw_buffer(), &l.mask_rows, out.raw_buffer()});
        l.probs.set_device_dirty();
    });
    timed("context", [&] {
        Part v = heads_of(l.qkv, s, 3, 2), c = heads_of(l.context, s, 1, 0);
        Buffer<void> p = per_head(l.probs, s);
        run("context", KERNEL(context), {p.raw_buffer(), v.raw(), c.raw()});
        l.context.set_device_dirty();
    });
    timed("out_proj", [&] {
        run("out_proj", KERNEL(out_proj),
            {l.context.raw_buffer(), l.wo.raw_buffer(), l.bo.raw_buffer(), l.x.raw_buffer(), l.y1.raw_buffer()});
    });
    timed("layernorm1", [&] {
        run("layernorm", KERNEL(layernorm), {l.y1.raw_buffer(), l.g1.raw_buffer(), l.b1.raw_buffer(), l.x1.raw_buffer()});
    });
    timed("ffn_up", [&] {
        run("ffn_up", KERNEL(ffn_up), {l.x1.raw_buffer(), l.w1.raw_buffer(), l.c1.raw_buffer(), l.hidden.raw_buffer()});
    });
    timed("ffn_down", [&] {
        run("ffn_down", KERNEL(ffn_down),
            {l.hidden.raw_buffer(), l.w2.raw_buffer(), l.c2.raw_buffer(), l.x1.raw_buffer(), l.y2.raw_buffer()});
    });
    timed("layernorm2", [&] {
        run("layernorm", KERNEL(layernorm), {l.y2.raw_buffer(), l.g2.raw_buffer(), l.b2.raw_buffer(), l.out.raw_buffer()});
    });
}

// ---- The reference, in double precision ------------------------------------------------------

using Matrix = std::vector<double>;  // [rows][cols], row-major

/** y[t][n] = sum_k x[t][k] w[n][k] + bias[n], w given as Buffer (k, n). */
Matrix linear(const Matrix &x, int rows, int k, const Buffer<float> &w, const Buffer<float> &bias) {
    const int n = w.dim(1).extent();
    Matrix y((size_t)rows * n);
    for (int t = 0; t < rows; t++) {
        for (int j = 0; j < n; j++) {
            double acc = bias(j);
            for (int i = 0; i < k; i++) acc += x[(size_t)t * k + i] * w(i, j);
            y[(size_t)t * n + j] = acc;
        }
    }
    return y;
}

Matrix layernorm(const Matrix &x, int rows, int n, const Buffer<float> &g, const Buffer<float> &b, double eps) {
    Matrix y(x.size());
    for (int t = 0; t < rows; t++) {
        double mean = 0, var = 0;
        for (int i = 0; i < n; i++) mean += x[(size_t)t * n + i];
        mean /= n;
        for (int i = 0; i < n; i++) var += std::pow(x[(size_t)t * n + i] - mean, 2);
        var /= n;
        for (int i = 0; i < n; i++) y[(size_t)t * n + i] = (x[(size_t)t * n + i] - mean) / std::sqrt(var + eps) * g(i) + b(i);
    }
    return y;
}

/** The reference's intermediates, each laid out as the app's buffer of it. */
struct Reference {
    Matrix qkv, scores, probs, context, x1, out;
};

Reference reference_layer(const Shape &s, const Weights &w, const Buffer<float> &x, const Buffer<float> &mask) {
    Reference r;
    const int t = s.tokens(), h = s.hidden, d = s.head_dim();
    Matrix in(x.begin(), x.end());
    Matrix qkv = linear(in, t, h, w.wqkv, w.bqkv);
    Matrix context((size_t)t * h);
    r.probs.resize((size_t)s.seq * s.seq * s.heads * s.batch);
    r.scores.resize(r.probs.size());
    for (int b = 0; b < s.batch; b++) {
        for (int head = 0; head < s.heads; head++) {
            for (int q = 0; q < s.seq; q++) {
                std::vector<double> p(s.seq);
                double top = -1e300;
                for (int k = 0; k < s.seq; k++) {
                    double dot = 0;
                    for (int i = 0; i < d; i++) {
                        dot += qkv[(size_t)(b * s.seq + q) * 3 * h + head * d + i] *
                               qkv[(size_t)(b * s.seq + k) * 3 * h + h + head * d + i];
                    }
                    r.scores[k + (size_t)s.seq * (q + (size_t)s.seq * (head + s.heads * b))] = dot;
                    p[k] = dot / std::sqrt((double)d) + mask(k, b);
                    top = std::max(top, p[k]);
                }
                double sum = 0;
                for (double &v : p) sum += (v = std::exp(v - top));
                for (int k = 0; k < s.seq; k++) r.probs[k + (size_t)s.seq * (q + (size_t)s.seq * (head + s.heads * b))] = p[k] / sum;
                for (int i = 0; i < d; i++) {
                    double acc = 0;
                    for (int k = 0; k < s.seq; k++) acc += p[k] / sum * qkv[(size_t)(b * s.seq + k) * 3 * h + 2 * h + head * d + i];
                    context[(size_t)(b * s.seq + q) * h + head * d + i] = acc;
                }
            }
        }
    }
    Matrix y1 = linear(context, t, h, w.wo, w.bo);
    for (size_t i = 0; i < y1.size(); i++) y1[i] += in[i];
    Matrix x1 = layernorm(y1, t, h, w.g1, w.b1, 1e-12);
    Matrix up = linear(x1, t, h, w.w1, w.c1);
    for (double &v : up) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    Matrix y2 = linear(up, t, s.ffn, w.w2, w.c2);
    for (size_t i = 0; i < y2.size(); i++) y2[i] += x1[i];
    r.qkv = qkv;
    r.context = context;
    r.x1 = x1;
    r.out = layernorm(y2, t, h, w.g2, w.b2, 1e-12);
    return r;
}

/** How far the layer's output may be from the reference: each of its ten stages rounds its
 * outputs to the element type (unit roundoff u: unit_roundoff_exponent()) and accumulates
 * up to K products in fp32 (K 2^-24 relative to the sum of |terms|, K the largest reduction:
 * the FFN's); a layernorm output is of unit scale and each stage carries the relative error of
 * its inputs through with a gain of a few (4 here: the layernorms divide by standard deviations
 * of about the values' size, GELU's slope is at most 1.13). So, per output, 4 x 10 x (u + K
 * 2^-24) x (|reference| + 1). */
double tolerance(const Shape &s, double ref) {
    const double u = std::ldexp(1.0, unit_roundoff_exponent());
    const double accumulation = std::max(s.ffn, s.hidden) * std::ldexp(1.0, -24);
    return 4 * 10 * (u + accumulation) * (std::abs(ref) + 1);
}

/** Writes what tools/encoder_peers.py needs to run the same layer in PyTorch and JAX: the shape,
 * the layer's time, and every tensor as raw little-endian fp32 (weights [N][K] as PyTorch's). */
void dump(const std::string &dir, const Shape &s, const Weights &w, const Buffer<float> &x, const Buffer<float> &mask,
          const std::vector<float> &out, double layer_ms) {
    auto write = [&](const std::string &name, const float *data, size_t n) {
        FILE *f = std::fopen((dir + "/" + name + ".f32").c_str(), "wb");
        if (!f || std::fwrite(data, 4, n, f) != n) {
            std::fprintf(stderr, "cannot write %s/%s.f32\n", dir.c_str(), name.c_str());
            std::exit(1);
        }
        std::fclose(f);
    };
    const std::pair<const char *, const Buffer<float> *> tensors[] = {
        {"x", &x},      {"mask", &mask}, {"wqkv", &w.wqkv}, {"bqkv", &w.bqkv}, {"wo", &w.wo},
        {"bo", &w.bo},  {"g1", &w.g1},   {"b1", &w.b1},     {"w1", &w.w1},     {"c1", &w.c1},
        {"w2", &w.w2},  {"c2", &w.c2},   {"g2", &w.g2},     {"b2", &w.b2}};
    for (const auto &t : tensors) write(t.first, t.second->data(), t.second->number_of_elements());
    write("out", out.data(), out.size());
    FILE *f = std::fopen((dir + "/shape.txt").c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "cannot write %s/shape.txt\n", dir.c_str());
        std::exit(1);
    }
    std::fprintf(f, "hidden %d\nheads %d\nffn %d\nseq %d\nbatch %d\nlayer_ms %.6f\nelement %s\n", s.hidden, s.heads,
                 s.ffn, s.seq, s.batch, layer_ms,
                 element.bits == 32 ? "f32" : element.code == halide_type_bfloat ? "bf16" : "f16");
    std::fclose(f);
    std::printf("wrote the layer's tensors and time to %s\n", dir.c_str());
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    std::string config = "tiny", dump_dir;
    int seq = 0, batch = 0, runs = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--config") config = argv[i + 1];
        else if (a == "--seq") seq = atoi(argv[i + 1]);
        else if (a == "--batch") batch = atoi(argv[i + 1]);
        else if (a == "--runs") runs = std::max(1, atoi(argv[i + 1]));
        else if (a == "--dump") dump_dir = argv[i + 1];
        else {
            std::fprintf(stderr, "usage: %s [--config tiny|base] [--seq N] [--batch B] [--runs R] [--dump DIR]\n",
                         argv[0]);
            return 2;
        }
    }
    // tiny: BERT's head size (64) and the shapes' structure, small enough for pocl; base: BERT-base.
    Shape s = config == "base" ? Shape{768, 12, 3072, 128, 8} : Shape{128, 2, 512, 16, 2};
    if (config != "base" && config != "tiny") {
        std::fprintf(stderr, "unknown --config %s (tiny or base)\n", config.c_str());
        return 2;
    }
    if (seq) s.seq = seq;
    if (batch) s.batch = batch;
    if (s.seq % 8) {
        // softmax and layernorm read and write their rows in 16-byte vectors (aligned=true).
        std::fprintf(stderr, "--seq must be a multiple of 8 (rows of whole 16-byte vectors of 16-bit values)\n");
        return 2;
    }
    std::printf("BERT encoder layer (%s): hidden %d, %d heads of %d, FFN %d, sequence %d, batch %d; %s\n",
                config.c_str(), s.hidden, s.heads, s.head_dim(), s.ffn, s.seq, s.batch, backend);

    std::mt19937 rng(2026);
    const Weights w = random_weights(rng, s);
    const Buffer<float> x = random_values(rng, {s.hidden, s.tokens()}, 1.0f);
    // The last quarter of every other sequence is padding.
    Buffer<float> mask(s.seq, s.batch);
    mask.for_each_element([&](int k, int b) { mask(k, b) = (b % 2 == 1 && k >= s.seq * 3 / 4) ? -10000.0f : 0.0f; });

    std::printf("building the layer's buffers on the device...\n");
    std::fflush(stdout);
    Layer l = make_layer(s, w, x, mask);
    std::vector<StageTimes> samples;
    std::vector<double> layer_samples;
    for (int r = 0; r < runs + 1; r++) {  // the first run warms up (kernel compilation on OpenCL)
        StageTimes t;
        forward(l, &t);
        if (r > 0) samples.push_back(t);
    }
    for (int r = 0; r < runs; r++) {  // the whole layer, no sync between its stages
        auto t0 = std::chrono::steady_clock::now();
        forward(l, nullptr);
        l.out.device_sync();
        layer_samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }

    // Per stage and for the layer: the median over the runs.
    const double t = s.tokens(), h = s.hidden, f = s.ffn, d = s.head_dim();
    const std::map<std::string, double> flops{{"qkv", 2 * t * h * 3 * h},
                                              {"scores", 2 * s.batch * s.heads * (double)s.seq * s.seq * d},
                                              {"context", 2 * s.batch * s.heads * (double)s.seq * s.seq * d},
                                              {"out_proj", 2 * t * h * h},
                                              {"ffn_up", 2 * t * h * f},
                                              {"ffn_down", 2 * t * f * h}};
    double stages_ms = 0, contraction_flops = 0, contraction_ms = 0;
    std::printf("%-11s %10s %10s\n", "stage", "ms", "TFLOP/s");
    for (const char *stage :
         {"qkv", "scores", "softmax", "context", "out_proj", "layernorm1", "ffn_up", "ffn_down", "layernorm2"}) {
        std::vector<double> ms;
        for (const StageTimes &sample : samples) ms.push_back(sample.at(stage));
        const double m = median(ms);
        stages_ms += m;
        auto fl = flops.find(stage);
        if (fl != flops.end()) {
            contraction_flops += fl->second;
            contraction_ms += m;
            std::printf("%-11s %10.3f %10.2f\n", stage, m, fl->second / (m * 1e-3) / 1e12);
        } else {
            std::printf("%-11s %10.3f %10s\n", stage, m, "");
        }
    }
    const double layer_ms = median(layer_samples);
    std::printf("layer: %.3f ms (median of %d runs; the stages one by one: %.3f), %.0f tokens/s; contractions "
                "%.2f TFLOP/s\n",
                layer_ms, runs, stages_ms, t / (layer_ms * 1e-3), contraction_flops / (contraction_ms * 1e-3) / 1e12);
#ifndef ALCOP_ENCODER_CUDA
    std::printf("(on pocl these are CPU times, which say nothing about a GPU's)\n");
#endif

    // The check.
    std::printf("checking against the double-precision reference...\n");
    std::fflush(stdout);
    const Reference reference = reference_layer(s, w, x, mask);
    // Each stage's largest error, to tell where a wrong output comes from.
    const std::pair<const char *, std::pair<Buffer<void> *, const Matrix *>> stages[] = {
        {"qkv", {&l.qkv, &reference.qkv}},
        {"scores", {&l.scores, &reference.scores}},
        {"softmax", {&l.probs, &reference.probs}},
        {"context", {&l.context, &reference.context}},
        {"layernorm1", {&l.x1, &reference.x1}}};
    for (const auto &stage : stages) {
        const std::vector<float> v = values_of(*stage.second.first);
        double largest = 0;
        for (size_t i = 0; i < v.size(); i++) {
            const double e = std::abs(v[i] - (*stage.second.second)[i]);
            largest = std::isnan(e) ? INFINITY : std::max(largest, e);
        }
        std::printf("  %-10s largest error %.3g\n", stage.first, largest);
    }
    const Matrix &ref = reference.out;
    const std::vector<float> got = values_of(l.out);
    int bad = 0;
    double worst = 0, worst_tolerance = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        const double err = std::abs(got[i] - ref[i]), tol = tolerance(s, ref[i]);
        if (!(err <= tol)) bad++;
        if (err > worst || std::isnan(err)) {
            worst = std::isnan(err) ? INFINITY : err;
            worst_tolerance = tol;
        }
    }
    std::printf("check: %d of %zu outputs off; largest error %.3g (its tolerance %.3g: 40 (u + K 2^-24) (|ref| + 1), "
                "u = 2^%d, K = %d)\n",
                bad, ref.size(), worst, worst_tolerance, unit_roundoff_exponent(), std::max(s.ffn, s.hidden));
    if (!dump_dir.empty()) dump(dump_dir, s, w, x, mask, got, layer_ms);
    return bad == 0 ? 0 : 1;
}
