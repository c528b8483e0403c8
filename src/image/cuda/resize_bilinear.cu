/* CUDA twin of the CPU bilinear resize (src/image/resize.c): one thread per output
 * pixel, the same OpenCV-style coefficients computed with the same float operations
 * (explicit round-to-nearest intrinsics, so nvcc cannot fuse them into FMAs), and the
 * same fixed-point passes, so the GPU gives the CPU's bytes. The host function copies in,
 * runs and copies out; it is the tested pattern for later device-resident kernels. */
#include <stdint.h>

#include "cuda_kernels.h"
#include "facefuse/image.h"

namespace {

constexpr int kCoefOne = 2048; /* 11-bit weights, FFU_RESIZE_COEF_ONE */

/* See linear_coef in resize.c: position in double, rounded to float, weights rounded
 * from float; left/top of the first centre and right/bottom of the last clamp. */
__device__ int linear_coef(int d, double scale, int ssize, int *w0, int *w1)
{
    float f = __double2float_rn(__dadd_rn(__dmul_rn(__dadd_rn((double)d, 0.5), scale), -0.5));
    int s = (int)floorf(f);
    f = __fsub_rn(f, (float)s);
    if (s < 0) s = 0, f = 0.f;
    if (s >= ssize - 1) s = ssize - 1, f = 0.f;
    int a = __float2int_rn(__fmul_rn(__fsub_rn(1.f, f), (float)kCoefOne));
    int b = __float2int_rn(__fmul_rn(f, (float)kCoefOne));
    *w0 = a < 0 ? 0 : a > kCoefOne ? kCoefOne : a;
    *w1 = b < 0 ? 0 : b > kCoefOne ? kCoefOne : b;
    return s;
}

__global__ void resize_bilinear_u8(const uint8_t *__restrict__ src, int sw, int sh,
                                   int spitch, uint8_t *__restrict__ dst, int dw, int dh,
                                   int dpitch, int cn, double scale_x, double scale_y)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= dw || y >= dh) return;
    int a0, a1, b0, b1;
    int sx = linear_coef(x, scale_x, sw, &a0, &a1);
    int sy = linear_coef(y, scale_y, sh, &b0, &b1);
    int sx1 = sx + 1 < sw ? sx + 1 : sx;
    int sy1 = sy + 1 < sh ? sy + 1 : sy;
    const uint8_t *r0 = src + (size_t)sy * spitch, *r1 = src + (size_t)sy1 * spitch;
    uint8_t *d = dst + (size_t)y * dpitch + (size_t)x * cn;
    for (int c = 0; c < cn; c++) {
        int h0 = (r0[sx * cn + c] * a0 + r0[sx1 * cn + c] * a1) >> 4;
        int h1 = (r1[sx * cn + c] * a0 + r1[sx1 * cn + c] * a1) >> 4;
        int v = (((h0 * b0) >> 16) + ((h1 * b1) >> 16) + 2) >> 2;
        d[c] = (uint8_t)(v > 255 ? 255 : v);
    }
}

} // namespace

extern "C" ffu_status ffu_cuda_resize_bilinear_u8(const uint8_t *h_src, int sw, int sh,
                                                  int sstride, uint8_t *h_dst, int dw, int dh,
                                                  int dstride, int channels)
{
    if (!h_src || !h_dst || channels < 1 || channels > 4 || sw <= 0 || sh <= 0 || dw <= 0 ||
        dh <= 0 || sw > FFU_IMAGE_MAX_DIM || sh > FFU_IMAGE_MAX_DIM ||
        dw > FFU_IMAGE_MAX_DIM || dh > FFU_IMAGE_MAX_DIM || sstride < sw * channels ||
        dstride < dw * channels)
        return ffu_error_set(FFU_ERR_INVALID, "cuda resize: bad arguments %dx%d -> %dx%d, "
                             "%d channels, strides %d/%d", sw, sh, dw, dh, channels, sstride,
                             dstride);
    size_t spitch = (size_t)sw * channels, dpitch = (size_t)dw * channels;
    uint8_t *d_src = nullptr, *d_dst = nullptr;
    ffu_status st;
    dim3 block(32, 8);
    dim3 grid((unsigned)((dw + 31) / 32), (unsigned)((dh + 7) / 8));
    if ((st = FFU_CUDA_CHECK(cudaMalloc(&d_src, spitch * (size_t)sh))) < 0) goto done;
    if ((st = FFU_CUDA_CHECK(cudaMalloc(&d_dst, dpitch * (size_t)dh))) < 0) goto done;
    if ((st = FFU_CUDA_CHECK(cudaMemcpy2D(d_src, spitch, h_src, (size_t)sstride, spitch,
                                          (size_t)sh, cudaMemcpyHostToDevice))) < 0)
        goto done;
    resize_bilinear_u8<<<grid, block>>>(d_src, sw, sh, (int)spitch, d_dst, dw, dh, (int)dpitch,
                                        channels, (double)sw / dw, (double)sh / dh);
    if ((st = FFU_CUDA_CHECK(cudaGetLastError())) < 0) goto done;
    /* The blocking copy also reports errors raised while the kernel ran. */
    st = FFU_CUDA_CHECK(cudaMemcpy2D(h_dst, (size_t)dstride, d_dst, dpitch, dpitch, (size_t)dh,
                                     cudaMemcpyDeviceToHost));
done:
    if (d_src) cudaFree(d_src);
    if (d_dst) cudaFree(d_dst);
    return st;
}

extern "C" int ffu_cuda_device_count(void)
{
    int n = 0;
    /* Without a driver or GPU this fails (no device / insufficient driver): that is a
     * normal answer here, not an error. */
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}
