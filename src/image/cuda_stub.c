/* Builds without CUDA still export the CUDA twins' functions, so callers need no
 * #ifdef: they report "unsupported" here. The real ones live in the .cu files of
 * src/image/cuda and are compiled only when nvcc is found. (Device counting is the GPU
 * core's: ffu_gpu_device_count.) */
#include "facefuse/gpu.h"
#include "facefuse/image.h"
#include "facefuse/image_gpu.h"
#include "ffu_config.h"

#if !FFU_HAVE_CUDA
static ffu_status no_cuda(void)
{
    return ffu_error_set(FFU_ERR_UNSUPPORTED, "this build of facefuse has no CUDA support");
}

ffu_status ffu_cuda_resize_bilinear_u8(const uint8_t *h_src, int sw, int sh, int sstride,
                                       uint8_t *h_dst, int dw, int dh, int dstride, int channels)
{
    return no_cuda();
}

ffu_status ffu_gpu_image_convert(ffu_gpu_stream *s, const ffu_gpu_image *src, ffu_gpu_image *dst)
{
    return no_cuda();
}

ffu_status ffu_gpu_image_convert_range(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                       ffu_gpu_image *dst, ffu_yuv_range range)
{
    return no_cuda();
}

ffu_status ffu_gpu_image_convert_yuv(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                     ffu_gpu_image *dst, ffu_yuv_coding coding)
{
    return no_cuda();
}

ffu_status ffu_gpu_image_resize(ffu_gpu_stream *s, const ffu_gpu_image *src, ffu_gpu_image *dst)
{
    return no_cuda();
}

ffu_status ffu_gpu_image_warp_affine(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                     ffu_gpu_image *dst, const double m[6], ffu_interp interp,
                                     ffu_border border, const uint8_t border_value[4])
{
    return no_cuda();
}

ffu_status ffu_gpu_image_warp_to_tensor(ffu_gpu_stream *s, const ffu_gpu_image *srcs, int n_srcs,
                                        const ffu_gpu_warp_job *jobs, int n_jobs,
                                        const ffu_gpu_warp_opts *opts, const ffu_gpu_tensor_view *t)
{
    return no_cuda();
}

ffu_status ffu_gpu_image_to_tensor(ffu_gpu_stream *s, const ffu_gpu_image *img,
                                   const ffu_norm_params *p, const ffu_gpu_tensor_view *t,
                                   int batch_index)
{
    return no_cuda();
}

ffu_status ffu_gpu_image_draw(ffu_gpu_stream *s, ffu_gpu_image *img, const ffu_gpu_shape *shapes,
                              int n)
{
    return no_cuda();
}
#else
/* ISO C forbids an empty translation unit. */
typedef int cuda_stub_unused;
#endif
