#include "Vendors.h"

#include "SixteenBitFloats.h"

#include <dlfcn.h>

#include <initializer_list>
#include <vector>

namespace bench {

namespace {

void *open_first(std::initializer_list<const char *> names) {
    for (const char *name : names) {
        if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    }
    return nullptr;
}

template<typename T>
bool bind(void *lib, const char *name, T *fn) {
    *fn = lib ? (T)dlsym(lib, name) : nullptr;
    return *fn != nullptr;
}

// Every entry point returns a status, 0 on success (cudaSuccess, driver_types.h:199;
// CUBLAS_STATUS_SUCCESS, cublas_api.h:90; CUDNN_STATUS_SUCCESS, cudnn_graph.h:121).
constexpr int cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2;  // driver_types.h:1248-1249
constexpr int CUBLAS_OP_N = 0;                                         // cublas_api.h:109
constexpr int CUDNN_DATA_FLOAT = 0;                                    // cudnn_graph.h:223
constexpr int CUDNN_FMA_MATH = 3;                                      // cudnn_graph.h:254
constexpr int CUDNN_TENSOR_NHWC = 1;                                   // cudnn_graph.h:278
constexpr int CUDNN_CROSS_CORRELATION = 1;                             // cudnn_graph.h:361
constexpr int CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1;    // cudnn_ops.h:859
constexpr int CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14;        // library_types.h:59-63
constexpr int CUBLAS_COMPUTE_32F = 68;                                 // cublas_api.h:208
constexpr int CUBLAS_GEMM_DEFAULT = -1;                                // cublas_api.h:123
constexpr int CUDNN_DATA_HALF = 2, CUDNN_DATA_BFLOAT16 = 9;            // cudnn_graph.h:225, 232
constexpr int CUDNN_TENSOR_OP_MATH = 1;                                // cudnn_graph.h:252

}  // namespace

void Vendor::load() {
    void *rt = open_first({"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"});
    const bool have_rt = bind(rt, "cudaMalloc", &cudaMalloc) && bind(rt, "cudaFree", &cudaFree) &&
                         bind(rt, "cudaMemcpy", &cudaMemcpy) && bind(rt, "cudaMemset", &cudaMemset) &&
                         bind(rt, "cudaDeviceSynchronize", &cudaDeviceSynchronize);
    void *blas = open_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"});
    if (have_rt && bind(blas, "cublasCreate_v2", &cublasCreate_v2) &&
        bind(blas, "cublasDestroy_v2", &cublasDestroy_v2) && bind(blas, "cublasSgemm_v2", &cublasSgemm_v2) &&
        bind(blas, "cublasSgemmStridedBatched", &cublasSgemmStridedBatched) && cublasCreate_v2(&cublas) != 0) {
        cublas = nullptr;
    }
    if (!bind(blas, "cublasGemmEx", &cublasGemmEx) ||
        !bind(blas, "cublasGemmStridedBatchedEx", &cublasGemmStridedBatchedEx)) {
        cublasGemmEx = nullptr;
        cublasGemmStridedBatchedEx = nullptr;
    }
    void *dnn = open_first({"libcudnn.so", "libcudnn.so.9", "libcudnn.so.8"});
    if (have_rt && bind(dnn, "cudnnCreate", &cudnnCreate) && bind(dnn, "cudnnDestroy", &cudnnDestroy) &&
        bind(dnn, "cudnnCreateTensorDescriptor", &cudnnCreateTensorDescriptor) &&
        bind(dnn, "cudnnSetTensor4dDescriptor", &cudnnSetTensor4dDescriptor) &&
        bind(dnn, "cudnnDestroyTensorDescriptor", &cudnnDestroyTensorDescriptor) &&
        bind(dnn, "cudnnCreateFilterDescriptor", &cudnnCreateFilterDescriptor) &&
        bind(dnn, "cudnnSetFilter4dDescriptor", &cudnnSetFilter4dDescriptor) &&
        bind(dnn, "cudnnDestroyFilterDescriptor", &cudnnDestroyFilterDescriptor) &&
        bind(dnn, "cudnnCreateConvolutionDescriptor", &cudnnCreateConvolutionDescriptor) &&
        bind(dnn, "cudnnDestroyConvolutionDescriptor", &cudnnDestroyConvolutionDescriptor) &&
        bind(dnn, "cudnnSetConvolutionMathType", &cudnnSetConvolutionMathType) &&
        bind(dnn, "cudnnSetConvolution2dDescriptor", &cudnnSetConvolution2dDescriptor) &&
        bind(dnn, "cudnnGetConvolutionForwardWorkspaceSize", &cudnnGetConvolutionForwardWorkspaceSize) &&
        bind(dnn, "cudnnConvolutionForward", &cudnnConvolutionForward) && cudnnCreate(&cudnn) != 0) {
        cudnn = nullptr;
    }
}


Anchor::Anchor(const Vendor &vendor, const Problem &p, const Operands &o)
    : name(p.conv_kh ? "cuDNN" : "cuBLAS"), v(vendor), out_host(o.nx, o.ny, o.nz), element(p.element) {
    std::vector<float> filter(o.b.data(), o.b.data() + o.b.number_of_elements());
    if (p.conv_kh) {
        // Our weights are (co, ci, kx, ky) with co innermost: HWIO in memory, which no cuDNN
        // filter format is. CUDNN_TENSOR_NHWC filters are KRSC, (ky, kx, ci) per output
        // channel: transpose once, here, outside the timed runs.
        for (int ky = 0; ky < p.conv_kh; ky++) {
            for (int kx = 0; kx < p.conv_kh; kx++) {
                for (int ci = 0; ci < p.conv_ci; ci++) {
                    for (int co = 0; co < p.n; co++) {
                        filter[((co * p.conv_kh + ky) * p.conv_kh + kx) * p.conv_ci + ci] = o.b(co, ci, kx, ky);
                    }
                }
            }
        }
    }
    const bool narrow = element != Element::F32;
    // cuBLAS writes fp32 (Ctype CUDA_R_32F); cuDNN's output has its input's type.
    out_narrow = narrow && p.conv_kh;
    ok = upload(&a, o.a.data(), o.a.number_of_elements(), narrow) &&
         upload(&b, filter.data(), filter.size(), narrow) &&
         upload(&out, nullptr, out_host.number_of_elements(), out_narrow);
    if (!ok) return;
    const float one = 1, zero = 0;
    if (!p.conv_kh) {
        // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS multiplies B (N x K,
        // leading dimension N) by A (K x M, leading dimension K) into C (N x M). fp16 /
        // bf16: the Ex entry points, fp32 compute and output (tensor cores).
        const float *fa = (const float *)a, *fb = (const float *)b;
        float *fout = (float *)out;
        const int t = element == Element::F16 ? CUDA_R_16F : CUDA_R_16BF;
        ok = !narrow || (v.cublasGemmEx && v.cublasGemmStridedBatchedEx);
        run = [this, p, one, zero, fa, fb, fout, narrow, t]() {
            if (narrow) {
                return p.batch > 1 ? v.cublasGemmStridedBatchedEx(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k,
                                                                  &one, b, t, p.n, (long long)p.n * p.k, a, t, p.k,
                                                                  (long long)p.k * p.m, &zero, out, CUDA_R_32F, p.n,
                                                                  (long long)p.n * p.m, p.batch, CUBLAS_COMPUTE_32F,
                                                                  CUBLAS_GEMM_DEFAULT) :
                                     v.cublasGemmEx(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, b, t,
                                                    p.n, a, t, p.k, &zero, out, CUDA_R_32F, p.n, CUBLAS_COMPUTE_32F,
                                                    CUBLAS_GEMM_DEFAULT);
            }
            return p.batch > 1 ?
                       v.cublasSgemmStridedBatched(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, fb, p.n,
                                                   (long long)p.n * p.k, fa, p.k, (long long)p.k * p.m, &zero, fout,
                                                   p.n, (long long)p.n * p.m, p.batch) :
                       v.cublasSgemm_v2(v.cublas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, fb, p.n, fa, p.k,
                                        &zero, fout, p.n);
        };
        return;
    }
    // NHWC input and output, KRSC filter, stride 1, same padding, plain FP32 arithmetic
    // (CUDNN_DEFAULT_MATH would allow TF32 on sm_80+), and a fixed algorithm. fp16 / bf16:
    // input, filter and output of that type, fp32 compute, tensor cores (the
    // PSEUDO_HALF / PSEUDO_BFLOAT16 configurations).
    const int pad = p.conv_kh / 2;
    const int data = element == Element::F32 ? CUDNN_DATA_FLOAT :
                     element == Element::F16 ? CUDNN_DATA_HALF :
                                               CUDNN_DATA_BFLOAT16;
    ok = v.cudnnCreateTensorDescriptor(&x_desc) == 0 && v.cudnnCreateTensorDescriptor(&y_desc) == 0 &&
         v.cudnnCreateFilterDescriptor(&w_desc) == 0 && v.cudnnCreateConvolutionDescriptor(&conv_desc) == 0 &&
         v.cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NHWC, data, p.batch, p.conv_ci, p.conv_h, p.conv_w) ==
             0 &&
         v.cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NHWC, data, p.batch, p.n, p.conv_h, p.conv_w) == 0 &&
         v.cudnnSetFilter4dDescriptor(w_desc, data, CUDNN_TENSOR_NHWC, p.n, p.conv_ci, p.conv_kh, p.conv_kh) == 0 &&
         v.cudnnSetConvolution2dDescriptor(conv_desc, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT) == 0 &&
         v.cudnnSetConvolutionMathType(conv_desc, narrow ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH) == 0 &&
         v.cudnnGetConvolutionForwardWorkspaceSize(v.cudnn, x_desc, w_desc, conv_desc, y_desc,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                   &workspace_bytes) == 0 &&
         (workspace_bytes == 0 || v.cudaMalloc(&workspace, workspace_bytes) == 0);
    run = [this, one, zero]() {
        return v.cudnnConvolutionForward(v.cudnn, &one, x_desc, a, w_desc, b, conv_desc,
                                         CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, workspace,
                                         workspace_bytes, &zero, y_desc, out);
    };
}

Anchor::~Anchor() {
    for (void *ptr : {(void *)a, (void *)b, (void *)out, workspace}) {
        if (ptr) v.cudaFree(ptr);
    }
    if (x_desc) v.cudnnDestroyTensorDescriptor(x_desc);
    if (y_desc) v.cudnnDestroyTensorDescriptor(y_desc);
    if (w_desc) v.cudnnDestroyFilterDescriptor(w_desc);
    if (conv_desc) v.cudnnDestroyConvolutionDescriptor(conv_desc);
}

Variant Anchor::variant() {
    Variant r;
    r.name = name;
    r.run = run;
    r.sync = [this]() { v.cudaDeviceSynchronize(); };
    // All ones bytes are a NaN (in fp32, fp16 and bf16).
    const size_t out_bytes = out_host.number_of_elements() * (out_narrow ? 2 : 4);
    r.poison = [this, out_bytes]() { v.cudaMemset(out, 0xff, out_bytes); };
    r.result = [this, out_bytes]() {
        if (!out_narrow) {
            v.cudaMemcpy(out_host.data(), out, out_bytes, cudaMemcpyDeviceToHost);
            return out_host.data();
        }
        std::vector<uint16_t> bits(out_host.number_of_elements());
        v.cudaMemcpy(bits.data(), out, out_bytes, cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < bits.size(); i++) out_host.data()[i] = alcop::apps::value_of(bits[i], type_of(element));
        return out_host.data();
    };
    // An fp16 / bf16 output is rounded: up to 2^-8 of the value (bf16), which is at most
    // the sum of the terms' magnitudes.
    if (out_narrow) r.output_rounding = 1.0 / 256;
    return r;
}

bool Anchor::upload(void **dst, const float *src, size_t n, bool narrow) {
    const size_t bytes = n * (narrow ? 2 : 4);
    if (v.cudaMalloc(dst, bytes) != 0) return false;
    if (!src) return true;
    if (!narrow) return v.cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice) == 0;
    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; i++) bits[i] = alcop::apps::bits_of(src[i], type_of(element));
    return v.cudaMemcpy(*dst, bits.data(), bytes, cudaMemcpyHostToDevice) == 0;
}

}  // namespace bench
