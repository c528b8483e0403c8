/* cuDNN and cuBLAS, loaded at run time (dlopen), never linked: facefuse runs where they
 * are absent (the cuda backend then leaves convolutions and GEMMs to ref) and uses the
 * GPU machine's own copies where they exist. The table holds one pointer per function
 * we call, typed from the vendor headers (`__typeof__`), so a signature can never drift
 * from the header the build saw. Only for builds with CUDA (FFU_HAVE_CUDA). */
#ifndef FFU_NN_CUDA_LIBS_H
#define FFU_NN_CUDA_LIBS_H

#include <cublas_v2.h>
#include <cudnn.h>

#define NN_CUDNN_FUNCS(F)                                                                      \
    F(cudnnCreate)                                                                             \
    F(cudnnDestroy)                                                                            \
    F(cudnnSetStream)                                                                          \
    F(cudnnGetErrorString)                                                                     \
    F(cudnnGetVersion)                                                                         \
    F(cudnnCreateTensorDescriptor)                                                             \
    F(cudnnDestroyTensorDescriptor)                                                            \
    F(cudnnSetTensor4dDescriptor)                                                              \
    F(cudnnCreateFilterDescriptor)                                                             \
    F(cudnnDestroyFilterDescriptor)                                                            \
    F(cudnnSetFilter4dDescriptor)                                                              \
    F(cudnnCreateConvolutionDescriptor)                                                        \
    F(cudnnDestroyConvolutionDescriptor)                                                       \
    F(cudnnSetConvolution2dDescriptor)                                                         \
    F(cudnnSetConvolutionGroupCount)                                                           \
    F(cudnnSetConvolutionMathType)                                                             \
    F(cudnnGetConvolutionForwardAlgorithm_v7)                                                  \
    F(cudnnGetConvolutionForwardWorkspaceSize)                                                 \
    F(cudnnConvolutionForward)                                                                 \
    F(cudnnCreateActivationDescriptor)                                                         \
    F(cudnnDestroyActivationDescriptor)                                                        \
    F(cudnnSetActivationDescriptor)                                                            \
    F(cudnnConvolutionBiasActivationForward)

#define NN_CUBLAS_FUNCS(F)                                                                     \
    F(cublasCreate_v2)                                                                         \
    F(cublasDestroy_v2)                                                                        \
    F(cublasSetStream_v2)                                                                      \
    F(cublasSetWorkspace_v2)                                                                   \
    F(cublasSetMathMode)                                                                       \
    F(cublasSgemmStridedBatched)                                                               \
    F(cublasGemmStridedBatchedEx)

typedef struct nn_cuda_libs {
    void *dnn_lib, *blas_lib;
    int have_dnn, have_blas; /* every function of the library was found */
    char why_dnn[160], why_blas[160];
#define NN_CU_MEMBER(fn) __typeof__(fn) *fn;
    NN_CUDNN_FUNCS(NN_CU_MEMBER)
    NN_CUBLAS_FUNCS(NN_CU_MEMBER)
#undef NN_CU_MEMBER
} nn_cuda_libs;

/* The process-wide table, loaded on first use (thread-safe); never NULL. Libraries that
 * could not be loaded have have_* = 0 and why_* saying why. */
const nn_cuda_libs *nn_cuda_libs_get(void);

#endif
