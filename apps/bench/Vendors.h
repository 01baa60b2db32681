#ifndef ALCOP_BENCH_VENDORS_H
#define ALCOP_BENCH_VENDORS_H

// cuBLAS and cuDNN, loaded at run time so that the benchmark builds and runs without them, and
// declared here so that no CUDA header is needed: the entry points and enum values are those of
// the CUDA 13.0 and cuDNN 9 headers, cited by file and line. The anchors keep their own device
// copies of the operands, made through libcudart: Halide's CUDA runtime works in a context of
// its own (cuCtxCreate), not the primary context that cudart, cuBLAS and cuDNN use.

#include "Operands.h"
#include "Variant.h"

#include <cstddef>
#include <functional>

namespace bench {

struct Vendor {
    // cuda_runtime_api.h:4581, 4752, 5957, 6807, 352
    int (*cudaMalloc)(void **, size_t);
    int (*cudaFree)(void *);
    int (*cudaMemcpy)(void *, const void *, size_t, int);
    int (*cudaMemset)(void *, int, size_t);
    int (*cudaDeviceSynchronize)();
    // cublas_api.h:246, 248, 3082, 4684
    int (*cublasCreate_v2)(void **);
    int (*cublasDestroy_v2)(void *);
    int (*cublasSgemm_v2)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                          const float *, float *, int);
    int (*cublasSgemmStridedBatched)(void *, int, int, int, int, int, const float *, const float *, int, long long,
                                     const float *, int, long long, const float *, float *, int, long long, int);
    // cublas_api.h:3368, 4916 (fp16 / bf16 operands); null where this cuBLAS lacks them
    int (*cublasGemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                        const void *, void *, int, int, int, int) = nullptr;
    int (*cublasGemmStridedBatchedEx)(void *, int, int, int, int, int, const void *, const void *, int, int, long long,
                                      const void *, int, int, long long, const void *, void *, int, int, long long, int,
                                      int, int) = nullptr;
    // cudnn_graph.h:212, 214; cudnn_ops.h:96, 99, 181, 390, 393, 438; cudnn_cnn.h:90, 94, 97, 115, 232, 244
    int (*cudnnCreate)(void **);
    int (*cudnnDestroy)(void *);
    int (*cudnnCreateTensorDescriptor)(void **);
    int (*cudnnSetTensor4dDescriptor)(void *, int, int, int, int, int, int);
    int (*cudnnDestroyTensorDescriptor)(void *);
    int (*cudnnCreateFilterDescriptor)(void **);
    int (*cudnnSetFilter4dDescriptor)(void *, int, int, int, int, int, int);
    int (*cudnnDestroyFilterDescriptor)(void *);
    int (*cudnnCreateConvolutionDescriptor)(void **);
    int (*cudnnDestroyConvolutionDescriptor)(void *);
    int (*cudnnSetConvolutionMathType)(void *, int);
    int (*cudnnSetConvolution2dDescriptor)(void *, int, int, int, int, int, int, int, int);
    int (*cudnnGetConvolutionForwardWorkspaceSize)(void *, void *, void *, void *, void *, int, size_t *);
    int (*cudnnConvolutionForward)(void *, const void *, void *, const void *, void *, const void *, void *, int,
                                   void *, size_t, const void *, void *, void *);

    void *cublas = nullptr, *cudnn = nullptr;  // the handles, where the library was found

    /** Binds what it finds of libcudart, cuBLAS and cuDNN and makes the handles. */
    void load();
};

// One problem on cuBLAS or cuDNN: device copies of the operands (cuDNN's filter transposed;
// fp16 / bf16 problems: their bits), the descriptors, and the host copy of the output (fp32;
// cuDNN's fp16 / bf16 output widened).
class Anchor {
public:
    Anchor(const Vendor &vendor, const Problem &p, const Operands &o);
    ~Anchor();

    /** Its row of the table. */
    Variant variant();

    const char *name;
    bool ok = false;  // the operands and descriptors are set up

private:
    /** Room for n elements on the device, and there those of `src` (if any): fp32, or where
     * `narrow` the problem's fp16 / bf16 (which holds the values of `src` exactly). */
    bool upload(void **dst, const float *src, size_t n, bool narrow);

    const Vendor &v;
    Halide::Runtime::Buffer<float> out_host;
    Element element;
    bool out_narrow = false;  // cuDNN's fp16 / bf16 output
    void *a = nullptr, *b = nullptr, *out = nullptr;
    void *x_desc = nullptr, *y_desc = nullptr, *w_desc = nullptr, *conv_desc = nullptr, *workspace = nullptr;
    size_t workspace_bytes = 0;
    std::function<int()> run;
};

}  // namespace bench

#endif
