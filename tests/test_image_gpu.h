/* The CPU twin of one GPU warp-to-tensor job, shared by the tests that check the
 * kernel's arithmetic on the host (test_image_gpu_hd.c) and the kernel on a device
 * (test_image_gpu.c): NV12 -> RGB24 with the options' matrix and range when needed,
 * ffu_image_warp_affine, then ffu_image_to_tensor into slot b of an f32 tensor. */
#ifndef FFU_TEST_IMAGE_GPU_H
#define FFU_TEST_IMAGE_GPU_H

#include <limits.h>
#include <string.h>

#include "facefuse/image.h"
#include "facefuse/gpu.h"
#include "facefuse/image_gpu.h"
#include "test.h"

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

/* A device-image descriptor over host memory: the kernels' plan and per-pixel code
 * only follow its pointers, which on the CPU may be host ones. */
static inline ffu_gpu_image gview(const ffu_image *im)
{
    ffu_gpu_image g;
    memset(&g, 0, sizeof g);
    g.fmt = im->fmt, g.width = im->width, g.height = im->height;
    for (int i = 0; i < 3; i++)
        g.data[i] = im->data[i], g.stride[i] = im->stride[i];
    return g;
}

/* The warp-to-tensor settings both tests sweep: configuration cfg (0..11) covers each
 * interpolation, border, YUV matrix in both ranges, normalisation preset, channel swap
 * and grey output. */
static inline ffu_status warp_test_opts(int cfg, ffu_gpu_warp_opts *o)
{
    static const char *presets[] = {"imagenet", "symmetric", "unit"};
    memset(o, 0, sizeof *o);
    o->interp = cfg % 3 == 2 ? FFU_INTERP_NEAREST : FFU_INTERP_BILINEAR;
    o->border = (ffu_border)(cfg % FFU_BORDER_COUNT);
    o->border_value[0] = 114, o->border_value[1] = 20, o->border_value[2] = 250;
    o->range = cfg & 4 ? FFU_YUV_FULL : FFU_YUV_LIMITED;
    o->matrix = (ffu_yuv_matrix)((cfg + cfg / 4) % 3);
    ffu_status st = ffu_norm_preset(&o->norm, presets[cfg % 3]);
    o->norm.swap_rb = cfg & 1;
    o->norm.gray = cfg == 7 || cfg == 10;
    return st;
}

/* A coordinate for the drawing tests: mostly in or near an image of `size`, sometimes
 * far outside, sometimes INT_MIN / INT_MAX (the clipping must survive them). */
static inline int rand_coord(uint64_t *seed, int size)
{
    switch (test_rand_u64(seed) % 10) {
    case 0:
        return INT_MIN;
    case 1:
        return INT_MAX;
    case 2:
        return -(int)(test_rand_u64(seed) % 1000);
    default:
        return (int)(test_rand_u64(seed) % (uint64_t)(size + 40)) - 20;
    }
}

/* n random shapes over a w x h image: sides in -5 .. size - 6 (one in eight anywhere),
 * thickness in -2 .. thick - 3, radius in rad_lo .. rad_lo + rad_n - 1 (INT_MAX one
 * time in `huge`). */
static inline void random_shapes(ffu_gpu_shape *shapes, int n, int w, int h, int size, int thick,
                                 int rad_lo, int rad_n, int huge, uint64_t *seed)
{
    for (int i = 0; i < n; i++) {
        ffu_gpu_shape *s = &shapes[i];
        s->kind = (ffu_gpu_shape_kind)(test_rand_u64(seed) % FFU_GPU_SHAPE_COUNT);
        s->x = rand_coord(seed, w), s->y = rand_coord(seed, h);
        int big = test_rand_u64(seed) % 8 == 0;
        s->w = big ? rand_coord(seed, w) : (int)(test_rand_u64(seed) % (uint64_t)size) - 5;
        s->h = big ? rand_coord(seed, h) : (int)(test_rand_u64(seed) % (uint64_t)size) - 5;
        s->thickness = (int)(test_rand_u64(seed) % (uint64_t)thick) - 2;
        s->radius = test_rand_u64(seed) % (uint64_t)huge == 0
                        ? INT_MAX
                        : (int)(test_rand_u64(seed) % (uint64_t)rad_n) + rad_lo;
        uint64_t c = test_rand_u64(seed);
        s->color = (ffu_color){(uint8_t)c, (uint8_t)(c >> 8), (uint8_t)(c >> 16), (uint8_t)(c >> 24)};
    }
}

/* The shapes drawn by the CPU drawing functions, in order: the GPU kernel's twin. */
static inline ffu_status cpu_draw(ffu_image *img, const ffu_gpu_shape *s, int n)
{
    for (int i = 0; i < n; i++) {
        ffu_status st;
        switch (s[i].kind) {
        case FFU_GPU_SHAPE_RECT:
            st = ffu_draw_rect(img, s[i].x, s[i].y, s[i].w, s[i].h, s[i].thickness, s[i].color);
            break;
        case FFU_GPU_SHAPE_FILL_RECT:
            st = ffu_draw_fill_rect(img, s[i].x, s[i].y, s[i].w, s[i].h, s[i].color);
            break;
        default:
            st = ffu_draw_point(img, s[i].x, s[i].y, s[i].radius, s[i].color);
        }
        if (st < 0) return st;
    }
    return FFU_OK;
}

#endif
