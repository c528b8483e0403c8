/* Private to src/image/cuda: helpers shared by the image module's CUDA files. */
#ifndef FFU_IMAGE_CUDA_KERNELS_H
#define FFU_IMAGE_CUDA_KERNELS_H

#include <cuda_runtime.h>

#include "facefuse/core.h"
#include "facefuse/gpu.h"

/* Records a failed CUDA call as FFU_ERR_DEVICE with CUDA's own message; evaluates to
 * the status so callers write `if ((st = FFU_CUDA_CHECK(cudaMalloc(...))) < 0) goto fail;`.
 * The sticky error state is cleared so a later call starts clean. */
static inline ffu_status ffu_cuda_check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess) return FFU_OK;
    (void)cudaGetLastError();
    return ffu_error_set(FFU_ERR_DEVICE, "CUDA %s failed: %s", what, cudaGetErrorString(err));
}
#define FFU_CUDA_CHECK(call) ffu_cuda_check((call), #call)

/* Makes the stream's device current on this thread (CUDA's current device is per
 * thread) and gives its cudaStream_t, before a launch. */
static inline ffu_status ffu_cuda_stream_begin(ffu_gpu_stream *s, const char *what,
                                               cudaStream_t *cs)
{
    *cs = nullptr;
    if (!s) return ffu_error_set(FFU_ERR_INVALID, "%s: NULL stream", what);
    ffu_status st = ffu_gpu_make_current(ffu_gpu_stream_gpu(s));
    if (st < 0) return st;
    *cs = (cudaStream_t)ffu_gpu_stream_handle(s);
    return FFU_OK;
}

/* Launch errors (bad configuration, no kernel image for this GPU) show at once; faults
 * while the kernel runs show at the next synchronisation. */
static inline ffu_status ffu_cuda_launch_check(const char *what)
{
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) return FFU_OK;
    return ffu_error_set(FFU_ERR_DEVICE, "%s: kernel launch failed: %s", what,
                         cudaGetErrorString(err));
}

/* One thread per pixel in 32 x 8 blocks: a warp covers 32 consecutive pixels of a row. */
#define FFU_CUDA_BLOCK_X 32
#define FFU_CUDA_BLOCK_Y 8
static inline dim3 ffu_cuda_grid(int w, int h, int z)
{
    return dim3((unsigned)((w + FFU_CUDA_BLOCK_X - 1) / FFU_CUDA_BLOCK_X),
                (unsigned)((h + FFU_CUDA_BLOCK_Y - 1) / FFU_CUDA_BLOCK_Y), (unsigned)z);
}

#endif
