/* The CPU twin of one GPU warp-to-tensor job, shared by the tests that check the
 * kernel's arithmetic on the host (test_image_gpu_hd.c) and the kernel on a device
 * (test_image_gpu.c): NV12 -> RGB24 with the options' matrix and range when needed,
 * ffu_image_warp_affine, then ffu_image_to_tensor into slot b of an f32 tensor. */
#ifndef FFU_TEST_IMAGE_GPU_H
#define FFU_TEST_IMAGE_GPU_H

#include "facefuse/image.h"
#include "facefuse/image_gpu.h"

static inline ffu_status cpu_job(const ffu_image *src, const double m[6],
                                 const ffu_gpu_warp_opts *o, ffu_tensor_view *t, int b)
{
    ffu_image rgb = {0}, warped;
    const ffu_image *s = src;
    ffu_status st;
    if (src->fmt == FFU_PIX_NV12) {
        if ((st = ffu_image_create(&rgb, FFU_PIX_RGB24, src->width, src->height)) < 0) return st;
        ffu_yuv_coding coding = {o->matrix, o->range};
        if ((st = ffu_image_convert_yuv(src, &rgb, coding)) < 0) goto out;
        s = &rgb;
    }
    if ((st = ffu_image_create(&warped, s->fmt, t->w, t->h)) < 0) goto out;
    st = ffu_image_warp_affine(s, &warped, m, o->interp, o->border, o->border_value);
    if (st == FFU_OK) st = ffu_image_to_tensor(&warped, &o->norm, t, b);
    ffu_image_release(&warped);
out:
    ffu_image_release(&rgb);
    return st;
}

#endif
