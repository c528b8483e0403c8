/* Private to src/image/cuda: helpers shared by the image module's CUDA files. */
#ifndef FFU_IMAGE_CUDA_KERNELS_H
#define FFU_IMAGE_CUDA_KERNELS_H

#include <cuda_runtime.h>

#include "facefuse/core.h"

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

#endif
