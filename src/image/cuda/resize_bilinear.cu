/* CUDA twin of the CPU bilinear resize (src/image/resize.c): one thread per output
 * pixel running imgpu_resize_pixel (image_gpu_hd.h), the CPU's OpenCV-style coefficients
 * computed with the same float operations (round-to-nearest intrinsics, so nvcc cannot
 * fuse them into FMAs) and the same fixed-point passes, so the GPU gives the CPU's
 * bytes. Two entry points: ffu_gpu_image_resize (device to device, queued on a stream)
 * and ffu_cuda_resize_bilinear_u8 (host buffers in and out, a self-contained check). */
#include <stdint.h>

#include "cuda_kernels.h"
#include "facefuse/image.h"
#include "image_gpu_hd.h"

namespace
{

__global__ void resize_bilinear_u8(const __grid_constant__ imgpu_resize_params p)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.dw || y >= p.dh) return;
    imgpu_resize_pixel(&p, x, y);
}

} // namespace

extern "C" ffu_status ffu_gpu_image_resize(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                           ffu_gpu_image *dst)
{
    imgpu_resize_params p;
    cudaStream_t cs;
    ffu_status st;
    if ((st = imgpu_plan_resize(src, dst, &p)) < 0) return st;
    if ((st = ffu_cuda_stream_begin(s, "gpu resize", &cs)) < 0) return st;
    resize_bilinear_u8<<<ffu_cuda_grid(p.dw, p.dh, 1), dim3(FFU_CUDA_BLOCK_X, FFU_CUDA_BLOCK_Y), 0,
                         cs>>>(p);
    return ffu_cuda_launch_check("gpu resize");
}

extern "C" ffu_status ffu_cuda_resize_bilinear_u8(const uint8_t *h_src, int sw, int sh, int sstride,
                                                  uint8_t *h_dst, int dw, int dh, int dstride,
                                                  int channels)
{
    if (!h_src || !h_dst || channels < 1 || channels > 4 || sw <= 0 || sh <= 0 || dw <= 0 ||
        dh <= 0 || sw > FFU_IMAGE_MAX_DIM || sh > FFU_IMAGE_MAX_DIM || dw > FFU_IMAGE_MAX_DIM ||
        dh > FFU_IMAGE_MAX_DIM || sstride < sw * channels || dstride < dw * channels)
        return ffu_error_set(FFU_ERR_INVALID,
                             "cuda resize: bad arguments %dx%d -> %dx%d, "
                             "%d channels, strides %d/%d",
                             sw, sh, dw, dh, channels, sstride, dstride);
    size_t spitch = (size_t)sw * channels, dpitch = (size_t)dw * channels;
    uint8_t *d_src = nullptr, *d_dst = nullptr;
    ffu_status st;
    imgpu_resize_params p;
    if ((st = FFU_CUDA_CHECK(cudaMalloc(&d_src, spitch * (size_t)sh))) < 0) goto done;
    if ((st = FFU_CUDA_CHECK(cudaMalloc(&d_dst, dpitch * (size_t)dh))) < 0) goto done;
    if ((st = FFU_CUDA_CHECK(cudaMemcpy2D(d_src, spitch, h_src, (size_t)sstride, spitch, (size_t)sh,
                                          cudaMemcpyHostToDevice))) < 0)
        goto done;
    p.src = d_src, p.sw = sw, p.sh = sh, p.sstride = (int)spitch;
    p.dst = d_dst, p.dw = dw, p.dh = dh, p.dstride = (int)dpitch;
    p.cn = channels;
    p.scale_x = (double)sw / dw, p.scale_y = (double)sh / dh;
    resize_bilinear_u8<<<ffu_cuda_grid(dw, dh, 1), dim3(FFU_CUDA_BLOCK_X, FFU_CUDA_BLOCK_Y)>>>(p);
    if ((st = ffu_cuda_launch_check("cuda resize")) < 0) goto done;
    /* The blocking copy also reports errors raised while the kernel ran. */
    st = FFU_CUDA_CHECK(cudaMemcpy2D(h_dst, (size_t)dstride, d_dst, dpitch, dpitch, (size_t)dh,
                                     cudaMemcpyDeviceToHost));
done:
    if (d_src) cudaFree(d_src);
    if (d_dst) cudaFree(d_dst);
    return st;
}
