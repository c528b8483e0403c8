/* Builds without CUDA still export the CUDA twin's functions, so callers need no
 * #ifdef: they report "no device" / "unsupported" here. The real ones live in
 * src/image/cuda/resize_bilinear.cu and are compiled only when nvcc is found. */
#include "facefuse/image.h"
#include "ffu_config.h"

#if !FFU_HAVE_CUDA
ffu_status ffu_cuda_resize_bilinear_u8(const uint8_t *h_src, int sw, int sh, int sstride,
                                       uint8_t *h_dst, int dw, int dh, int dstride,
                                       int channels)
{
    return ffu_error_set(FFU_ERR_UNSUPPORTED, "this build of facefuse has no CUDA support");
}

int ffu_cuda_device_count(void) { return 0; }
#else
/* ISO C forbids an empty translation unit. */
typedef int cuda_stub_unused;
#endif
