// GPU schedules written by others, ported to Halide 14, for alcop::auto_pipeline: they were
// not written for ALCOP, and each takes `auto_pipeline` (false: the schedule exactly as its
// authors wrote it, no ALCOP pass at all; true: the same plus the one switch).
//
//   testing_halide_conv_layer: the GPU schedule of Halide's apps/conv_layer
//     (conv_layer_generator.cpp, "GPU schedule, tuned for a gtx 980"): input.in() staged in
//     GPU shared memory (the default for a Func at the block level) inside the serial
//     reduction loop rxo. The sizes, compile-time constants there, are GeneratorParams here
//     (small defaults, for pocl), and gpu_lanes() is gpu_threads() (Halide 14's OpenCL backend
//     rejects gpu_lanes; on CUDA both make the same 32-wide thread loop); the schedule is
//     otherwise unchanged.
//   testing_halide_cuda_mat_mul: the schedule of Halide's apps/cuda_mat_mul
//     (mat_mul_generator.cpp): A.in() and B.in() staged in per-thread registers inside the
//     serial loop over r (split by 8, inner unrolled). `size` defaults to 128 here (1024
//     there).
//   testing_halide_gpu_dynamic_shared: Halide's test/correctness/gpu_dynamic_shared.cpp: f
//     staged in shared memory at the block level, in no serial loop (nothing to pipeline).
//
// Sources: https://github.com/halide/Halide (apps/conv_layer, apps/cuda_mat_mul,
// test/correctness/gpu_dynamic_shared.cpp), MIT license; the schedules are theirs, the
// Generator wrapping and the parameters are ours.

#include "Halide.h"

#include "alcop/Directive.h"

namespace {

using namespace Halide;

class HalideConvLayer : public Generator<HalideConvLayer> {
public:
    GeneratorParam<int> batch{"N", 1}, channels_in{"CI", 64}, channels_out{"CO", 32}, width{"W", 5}, height{"H", 5};
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};

    Input<Buffer<float>> input{"input", 4};
    Input<Buffer<float>> filter{"filter", 4};
    Input<Buffer<float>> bias{"bias", 1};
    Output<Buffer<float>> relu{"relu", 4};

    void generate() {
        const int N = batch, CI = channels_in, CO = channels_out, W = width, H = height;
        Var x("x"), y("y"), c("c"), n("n");
        Func conv("conv");
        RDom r(0, CI, 0, 3, 0, 3);
        conv(c, x, y, n) = bias(c);
        conv(c, x, y, n) += filter(c, r.y, r.z, r.x) * input(r.x, x + r.y, y + r.z, n);
        relu(c, x, y, n) = max(0, conv(c, x, y, n));

        relu.bound(x, 0, W).bound(y, 0, H).bound(c, 0, CO).bound(n, 0, N);
        relu.dim(0)
            .set_bounds(0, CO)
            .set_stride(1)
            .dim(1)
            .set_bounds(0, W)
            .set_stride(CO)
            .dim(2)
            .set_bounds(0, H)
            .set_stride(CO * W)
            .dim(3)
            .set_bounds(0, N)
            .set_stride(CO * H * W);
        input.dim(0)
            .set_bounds(0, CI)
            .set_stride(1)
            .dim(1)
            .set_bounds(0, W + 2)
            .set_stride(CI)
            .dim(2)
            .set_bounds(0, H + 2)
            .set_stride(CI * (W + 2))
            .dim(3)
            .set_bounds(0, N)
            .set_stride(CI * (W + 2) * (H + 2));
        filter.dim(0)
            .set_bounds(0, CO)
            .set_stride(1)
            .dim(1)
            .set_bounds(0, 3)
            .set_stride(CO)
            .dim(2)
            .set_bounds(0, 3)
            .set_stride(CO * 3)
            .dim(3)
            .set_bounds(0, CI)
            .set_stride(CO * 3 * 3);
        bias.dim(0).set_bounds(0, CO).set_stride(1);

        // The GPU schedule of apps/conv_layer, as written there.
        Var ni, no, xi, xo, yi, yo, ci, co, t;
        RVar rxo, rxi, rxii;
        relu.compute_root()
            .split(x, xo, xi, 5)
            .split(y, yo, yi, 5)
            .split(c, co, ci, 32)
            .reorder(xi, yi, ci, xo, yo, co, n)
            .gpu_threads(ci)
            .unroll(xi)
            .unroll(yi)
            .fuse(co, n, t)
            .gpu_blocks(xo, yo, t);
        conv.compute_at(relu, xo)
            .store_in(MemoryType::Register)
            .gpu_threads(c)
            .unroll(x)
            .unroll(y)
            .update()
            .split(r.x, rxo, rxi, 16)
            .split(rxi, rxi, rxii, 2)
            .reorder(c, rxii, x, y, r.y, r.z, rxi, rxo)
            .gpu_threads(c)
            .unroll(x)
            .unroll(y)
            .unroll(r.y)
            .unroll(r.z)
            .unroll(rxii);
        input.in()
            .compute_at(conv, rxo)
            .vectorize(_0, 2)
            .split(_1, xo, xi, 4)
            .fuse(_0, xi, t)
            .gpu_threads(t)
            .unroll(xo)
            .unroll(_2);
    }

    void schedule() {
        if (auto_pipeline) alcop::auto_pipeline(get_pipeline(), get_target());
    }
};

class HalideCudaMatMul : public Generator<HalideCudaMatMul> {
public:
    GeneratorParam<int> size{"size", 128};
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};

    Input<Buffer<float>> A{"A", 2};
    Input<Buffer<float>> B{"B", 2};
    Output<Buffer<float>> out{"out", 2};

    void generate() {
        Var x("x"), y("y");
        Func prod("prod");
        const int size = this->size;
        RDom r(0, size);
        prod(x, y) += A(x, r) * B(r, y);
        out(x, y) = prod(x, y);

        // The schedule of apps/cuda_mat_mul, as written there.
        Var xi, yi, xii, yii;
        out.bound(x, 0, size)
            .bound(y, 0, size)
            .tile(x, y, xi, yi, 64, 16)
            .tile(xi, yi, xii, yii, 4, 8)
            .gpu_blocks(x, y)
            .gpu_threads(xi, yi)
            .unroll(xii)
            .unroll(yii);
        prod.compute_at(out, xi).vectorize(x).unroll(y).update().reorder(x, y, r).vectorize(x).unroll(y).unroll(r, 8);
        A.in().compute_at(prod, r).vectorize(_0).unroll(_1);
        B.in().compute_at(prod, r).vectorize(_0).unroll(_1);
        A.set_host_alignment(16);
        A.dim(0).set_bounds(0, size).dim(1).set_stride(size);
        B.set_host_alignment(16);
        B.dim(0).set_bounds(0, size).dim(1).set_stride(size);
        out.set_host_alignment(16);
        out.dim(0).set_bounds(0, size).dim(1).set_stride(size);
    }

    void schedule() {
        if (auto_pipeline) alcop::auto_pipeline(get_pipeline(), get_target());
    }
};

class HalideGpuDynamicShared : public Generator<HalideGpuDynamicShared> {
public:
    GeneratorParam<bool> auto_pipeline{"auto_pipeline", false};
    Output<Buffer<int>> g{"g", 1};

    void generate() {
        Var x("x"), xi("xi");
        Func f("f");
        f(x) = x;
        g(x) = f(x) + f(2 * x);
        // As in test/correctness/gpu_dynamic_shared.cpp: the shared memory f needs varies with x.
        g.gpu_tile(x, xi, 16);
        f.compute_at(g, x).gpu_threads(x);
    }

    void schedule() {
        if (auto_pipeline) alcop::auto_pipeline(get_pipeline(), get_target());
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(HalideConvLayer, testing_halide_conv_layer)
HALIDE_REGISTER_GENERATOR(HalideCudaMatMul, testing_halide_cuda_mat_mul)
HALIDE_REGISTER_GENERATOR(HalideGpuDynamicShared, testing_halide_gpu_dynamic_shared)
