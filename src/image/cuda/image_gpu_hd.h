/* The GPU image kernels' arithmetic (src/image/cuda/image_gpu.cu), private to the image
 * module. Each kernel is a thin __global__ wrapper that calls one FFU_HD "pixel body"
 * below for its (x, y); the unit test tests/unit/test_image_gpu_hd.c runs the very same
 * bodies over host memory on machines without a GPU and compares them with the CPU
 * twins (ffu_image_convert, ffu_image_resize, ffu_image_warp_affine,
 * ffu_image_to_tensor, ffu_draw_*), byte for byte. Only grids, launches and device
 * memory are left for the GPU tests (tests/unit/test_image_gpu.c).
 *
 * Why the results can be identical: the CPU twins are integer fixed point except for a
 * few float/double steps, and those are written here with the IMGPU_D* / IMGPU_F*
 * macros, which are the _rn intrinsics on the device (nvcc would otherwise contract a
 * multiply and an add into an FMA, which rounds once instead of twice) and plain
 * operators on the host (C11 mode: no contraction). Conversions round the same way
 * (lrint / __double2int_rn are both round-half-even).
 *
 * The plan functions (imgpu_plan_*) are host-only: they check the public arguments and
 * fill the kernel parameter structs, which travel by value as __grid_constant__ kernel
 * parameters (each under 4 KB), so a launch needs no device copy of its parameters. */
#ifndef FFU_IMAGE_GPU_HD_H
#define FFU_IMAGE_GPU_HD_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "facefuse/image_gpu.h"
#include "gpu/gpu_hd.h"
#include "image/yuv_coefs.h"

#ifdef __CUDA_ARCH__
#define IMGPU_DADD(a, b) __dadd_rn((a), (b))
#define IMGPU_DMUL(a, b) __dmul_rn((a), (b))
#define IMGPU_FADD(a, b) __fadd_rn((a), (b))
#define IMGPU_FSUB(a, b) __fsub_rn((a), (b))
#define IMGPU_FMUL(a, b) __fmul_rn((a), (b))
#else
#define IMGPU_DADD(a, b) ((a) + (b))
#define IMGPU_DMUL(a, b) ((a) * (b))
#define IMGPU_FADD(a, b) ((a) + (b))
#define IMGPU_FSUB(a, b) ((a) - (b))
#define IMGPU_FMUL(a, b) ((a) * (b))
#endif

/* The fixed-point constants of src/image/kernels_internal.h (FFU_RESIZE_COEF_ONE,
 * FFU_WARP_AB_BITS, FFU_WARP_INTER_BITS), repeated so this header stands alone; the
 * unit test checks they agree. */
#define IMGPU_RESIZE_COEF_ONE 2048
#define IMGPU_WARP_AB_BITS 10
#define IMGPU_WARP_INTER_BITS 5
#define IMGPU_FIX_LIMIT (1 << 29) /* warp.c's FIX_LIMIT */

FFU_HD uint8_t imgpu_clamp_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* ---- pixel layouts ------------------------------------------------------------------- */

/* Where R, G, B, A sit in a packed pixel (a = -1: none); gray: one luma byte. */
typedef struct imgpu_layout {
    int bpp, r, g, b, a, gray;
} imgpu_layout;

FFU_HD int imgpu_layout_of(int fmt, imgpu_layout *l)
{
    l->a = -1, l->gray = 0, l->g = 1;
    switch (fmt) {
    case FFU_PIX_GRAY8:
        l->bpp = 1, l->r = l->g = l->b = 0, l->gray = 1;
        return 1;
    case FFU_PIX_RGB24:
        l->bpp = 3, l->r = 0, l->b = 2;
        return 1;
    case FFU_PIX_BGR24:
        l->bpp = 3, l->r = 2, l->b = 0;
        return 1;
    case FFU_PIX_RGBA32:
        l->bpp = 4, l->r = 0, l->b = 2, l->a = 3;
        return 1;
    default:
        l->bpp = 0, l->r = 0, l->b = 0;
        return 0;
    }
}

/* ---- NV12 -> RGB (convert.c yuv_to_packed) ------------------------------------------- */

/* YUV -> RGB coefficients in Q16: convert.c's, from the shared table (yuv_coefs.h). */
typedef struct imgpu_yuv {
    int yoff, cy, crv, cgu, cgv, cbu;
} imgpu_yuv;

/* 0 for a coding the table does not know (k is then zeroed). Host only. */
static inline int imgpu_yuv_init(imgpu_yuv *k, ffu_yuv_coding coding)
{
    const yuv_coefs *t = yuv_coefs_of(coding);
    memset(k, 0, sizeof *k);
    if (!t) return 0;
    k->yoff = t->yoff, k->cy = t->cy, k->crv = t->crv;
    k->cgu = t->cgu, k->cgv = t->cgv, k->cbu = t->cbu;
    return 1;
}

/* One pixel's Y and its block's U, V to R, G, B. */
FFU_HD void imgpu_yuv_to_rgb(int y, int u, int v, const imgpu_yuv *k, uint8_t rgb[3])
{
    int c = k->cy * (y - k->yoff) + 32768;
    u -= 128, v -= 128;
    rgb[0] = imgpu_clamp_u8((c + k->crv * v) >> 16);
    rgb[1] = imgpu_clamp_u8((c - k->cgu * u - k->cgv * v) >> 16);
    rgb[2] = imgpu_clamp_u8((c + k->cbu * u) >> 16);
}

/* Gray from Y alone: the luma of the decoded RGB is the scaled Y (chroma cancels). */
FFU_HD uint8_t imgpu_yuv_to_gray(int y, const imgpu_yuv *k)
{
    return imgpu_clamp_u8((k->cy * (y - k->yoff) + 32768) >> 16);
}

/* ---- sources: packed u8 or NV12, read as packed pixels ------------------------------- */

typedef struct imgpu_src {
    const uint8_t *p0; /* packed pixels, or the NV12 Y plane */
    const uint8_t *p1; /* NV12 interleaved UV plane */
    int stride0, stride1;
    int w, h;
    int fmt; /* ffu_pixfmt */
    int cn;  /* bytes per pixel read: the packed bpp, 3 (R,G,B) for NV12 */
} imgpu_src;

/* Pixel (x, y), inside the image, in the source's memory order (NV12: R,G,B). */
FFU_HD void imgpu_src_fetch(const imgpu_src *s, const imgpu_yuv *k, int x, int y, uint8_t px[4])
{
    if (s->fmt == FFU_PIX_NV12) {
        const uint8_t *uv = s->p1 + (size_t)(y / 2) * s->stride1 + (size_t)(x / 2) * 2;
        imgpu_yuv_to_rgb(s->p0[(size_t)y * s->stride0 + x], uv[0], uv[1], k, px);
        return;
    }
    const uint8_t *p = s->p0 + (size_t)y * s->stride0 + (size_t)x * s->cn;
    for (int c = 0; c < s->cn; c++)
        px[c] = p[c];
}

/* ---- convert kernel body ------------------------------------------------------------- */

typedef struct imgpu_convert_params {
    imgpu_src src; /* NV12 */
    imgpu_yuv yuv;
    uint8_t *dst;
    int dstride;
    imgpu_layout d;
} imgpu_convert_params;

FFU_HD void imgpu_convert_pixel(const imgpu_convert_params *p, int x, int y)
{
    const imgpu_src *s = &p->src;
    uint8_t *o = p->dst + (size_t)y * p->dstride + (size_t)x * p->d.bpp;
    int yv = s->p0[(size_t)y * s->stride0 + x];
    if (p->d.gray) {
        o[0] = imgpu_yuv_to_gray(yv, &p->yuv);
        return;
    }
    const uint8_t *uv = s->p1 + (size_t)(y / 2) * s->stride1 + (size_t)(x / 2) * 2;
    uint8_t rgb[3];
    imgpu_yuv_to_rgb(yv, uv[0], uv[1], &p->yuv, rgb);
    o[p->d.r] = rgb[0], o[p->d.g] = rgb[1], o[p->d.b] = rgb[2];
    if (p->d.a >= 0) o[p->d.a] = 255;
}

/* ---- bilinear resize (resize.c linear_coef, hline_scalar, vline_scalar) -------------- */

/* Source index and 11-bit weights of output position d: the position in double,
 * rounded to float, the weights rounded from float; clamped at both ends. */
FFU_HD int imgpu_linear_coef(int d, double scale, int ssize, int *w0, int *w1)
{
    double pos = IMGPU_DADD(IMGPU_DMUL(IMGPU_DADD((double)d, 0.5), scale), -0.5);
#ifdef __CUDA_ARCH__
    float f = __double2float_rn(pos);
#else
    float f = (float)pos;
#endif
    int s = (int)floorf(f);
    f = IMGPU_FSUB(f, (float)s);
    if (s < 0) s = 0, f = 0.f;
    if (s >= ssize - 1) s = ssize - 1, f = 0.f;
    float fa = IMGPU_FMUL(IMGPU_FSUB(1.f, f), (float)IMGPU_RESIZE_COEF_ONE);
    float fb = IMGPU_FMUL(f, (float)IMGPU_RESIZE_COEF_ONE);
#ifdef __CUDA_ARCH__
    int a = __float2int_rn(fa), b = __float2int_rn(fb);
#else
    int a = (int)lrintf(fa), b = (int)lrintf(fb);
#endif
    *w0 = a < 0 ? 0 : a > IMGPU_RESIZE_COEF_ONE ? IMGPU_RESIZE_COEF_ONE : a;
    *w1 = b < 0 ? 0 : b > IMGPU_RESIZE_COEF_ONE ? IMGPU_RESIZE_COEF_ONE : b;
    return s;
}

typedef struct imgpu_resize_params {
    const uint8_t *src;
    int sw, sh, sstride;
    uint8_t *dst;
    int dw, dh, dstride;
    int cn;
    double scale_x, scale_y; /* src size / dst size */
} imgpu_resize_params;

FFU_HD void imgpu_resize_pixel(const imgpu_resize_params *p, int x, int y)
{
    int a0, a1, b0, b1, cn = p->cn;
    int sx = imgpu_linear_coef(x, p->scale_x, p->sw, &a0, &a1);
    int sy = imgpu_linear_coef(y, p->scale_y, p->sh, &b0, &b1);
    /* At the last column the CPU pairs it with the one before at weight 0; pairing it
     * with itself gives the same sum (the second weight is 0 there). */
    int sx1 = sx + 1 < p->sw ? sx + 1 : sx;
    int sy1 = sy + 1 < p->sh ? sy + 1 : sy;
    const uint8_t *r0 = p->src + (size_t)sy * p->sstride, *r1 = p->src + (size_t)sy1 * p->sstride;
    uint8_t *d = p->dst + (size_t)y * p->dstride + (size_t)x * cn;
    for (int c = 0; c < cn; c++) {
        int h0 = (r0[sx * cn + c] * a0 + r0[sx1 * cn + c] * a1) >> 4;
        int h1 = (r1[sx * cn + c] * a0 + r1[sx1 * cn + c] * a1) >> 4;
        int v = (((h0 * b0) >> 16) + ((h1 * b1) >> 16) + 2) >> 2;
        d[c] = (uint8_t)(v > 255 ? 255 : v);
    }
}

/* ---- affine warp sampling (warp.c) --------------------------------------------------- */

FFU_HD int32_t imgpu_fix_round(double v)
{
    if (!(v > -IMGPU_FIX_LIMIT)) return -IMGPU_FIX_LIMIT; /* NaN too */
    if (v > IMGPU_FIX_LIMIT) return IMGPU_FIX_LIMIT;
#ifdef __CUDA_ARCH__
    return __double2int_rn(v);
#else
    return (int32_t)lrint(v);
#endif
}

/* The sample position of destination pixel (x, y): whole pixels for nearest, 1/32 px
 * for bilinear. warp.c splits m0*x (per column) and m1*y + m2 (per row), rounds each
 * to 1/1024 px and adds integers; so do we, so positions agree to the bit. */
FFU_HD void imgpu_warp_pos(const double m[6], int x, int y, int nearest, int32_t *X, int32_t *Y)
{
    const double ab = (double)(1 << IMGPU_WARP_AB_BITS);
    int round_delta = nearest ? 1 << (IMGPU_WARP_AB_BITS - 1)
                              : 1 << (IMGPU_WARP_AB_BITS - IMGPU_WARP_INTER_BITS - 1);
    int shift = nearest ? IMGPU_WARP_AB_BITS : IMGPU_WARP_AB_BITS - IMGPU_WARP_INTER_BITS;
    int32_t adelta = imgpu_fix_round(IMGPU_DMUL(IMGPU_DMUL(m[0], (double)x), ab));
    int32_t bdelta = imgpu_fix_round(IMGPU_DMUL(IMGPU_DMUL(m[3], (double)x), ab));
    int32_t X0 = imgpu_fix_round(IMGPU_DMUL(IMGPU_DADD(IMGPU_DMUL(m[1], (double)y), m[2]), ab)) +
                 round_delta;
    int32_t Y0 = imgpu_fix_round(IMGPU_DMUL(IMGPU_DADD(IMGPU_DMUL(m[4], (double)y), m[5]), ab)) +
                 round_delta;
    *X = (X0 + adelta) >> shift;
    *Y = (Y0 + bdelta) >> shift;
}

/* p in 0..n-1 after the border rule, or -1 for "the border value". */
FFU_HD int imgpu_border_index(int p, int n, int border)
{
    if ((unsigned)p < (unsigned)n) return p;
    if (border == FFU_BORDER_CONSTANT) return -1;
    if (border == FFU_BORDER_REPLICATE) return p < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    int period = 2 * (n - 1);
    p %= period;
    if (p < 0) p += period;
    return p < n ? p : period - p;
}

FFU_HD void imgpu_fetch_or_border(const imgpu_src *s, const imgpu_yuv *k, int x, int y,
                                  const uint8_t bv[4], uint8_t px[4])
{
    if (x < 0 || y < 0) {
        for (int c = 0; c < 4; c++)
            px[c] = bv[c];
        return;
    }
    imgpu_src_fetch(s, k, x, y, px);
}

/* The warped pixel at destination (x, y): s->cn bytes into px. Bilinear takes each of
 * the four neighbours through the border rule; where all four are inside this is
 * warp.c's fast path, and where a constant border covers all four the integers give
 * the border value itself, as warp.c's shortcut does. */
FFU_HD void imgpu_warp_sample(const imgpu_src *s, const imgpu_yuv *k, int nearest, int border,
                              const uint8_t bv[4], const double m[6], int x, int y, uint8_t px[4])
{
    int32_t X, Y;
    imgpu_warp_pos(m, x, y, nearest, &X, &Y);
    if (nearest) {
        imgpu_fetch_or_border(s, k, imgpu_border_index(X, s->w, border),
                              imgpu_border_index(Y, s->h, border), bv, px);
        return;
    }
    int sx = X >> IMGPU_WARP_INTER_BITS, sy = Y >> IMGPU_WARP_INTER_BITS;
    int fx = X & 31, fy = Y & 31, wx0 = 32 - fx, wy0 = 32 - fy;
    int x0 = imgpu_border_index(sx, s->w, border), x1 = imgpu_border_index(sx + 1, s->w, border);
    int y0 = imgpu_border_index(sy, s->h, border), y1 = imgpu_border_index(sy + 1, s->h, border);
    uint8_t p00[4], p01[4], p10[4], p11[4];
    imgpu_fetch_or_border(s, k, x0, y0, bv, p00);
    imgpu_fetch_or_border(s, k, x1, y0, bv, p01);
    imgpu_fetch_or_border(s, k, x0, y1, bv, p10);
    imgpu_fetch_or_border(s, k, x1, y1, bv, p11);
    for (int c = 0; c < s->cn; c++)
        px[c] = (uint8_t)(((p00[c] * wx0 + p01[c] * fx) * wy0 + (p10[c] * wx0 + p11[c] * fx) * fy +
                           512) >>
                          10);
}

/* ---- f32 -> f16, round to nearest even (as nn_f32_to_f16) --------------------------- */

FFU_HD uint16_t imgpu_f32_to_f16(float f)
{
#ifdef __CUDA_ARCH__
    uint32_t x = __float_as_uint(f);
#else
    uint32_t x;
    memcpy(&x, &f, 4);
#endif
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu, man = x & 0x7fffffu;
    int e = (int)(ax >> 23); /* biased f32 exponent */
    if (e == 0xff)           /* inf; NaN stays a quiet NaN with its top payload bits */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    if (e >= 143) return (uint16_t)(sign | 0x7c00u); /* >= 2^16: overflow */
    if (e <= 112) {                                  /* f16 subnormal or zero */
        if (e < 102) return (uint16_t)sign;          /* under half the smallest one */
        uint32_t full = man | 0x800000u;
        int shift = 126 - e;
        uint32_t h = full >> shift, rem = full & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | (uint32_t)(e - 112) << 10 | man >> 13, rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* a carry rounds up the exponent */
    return (uint16_t)h;
}

/* ---- warp + normalise into a tensor -------------------------------------------------- */

/* One job as the kernel sees it: its source and its matrix. */
typedef struct imgpu_warp_item {
    imgpu_src src;
    double m[6];
    int batch;
} imgpu_warp_item;

/* What every job of a launch shares. */
typedef struct imgpu_warp_params {
    imgpu_yuv yuv;
    int nearest, border;
    uint8_t bv[4];
    float mean[3], scale[3];
    int swap_rb, luma;
    void *data; /* the tensor */
    int f16, nhwc, C, H, W;
} imgpu_warp_params;

/* BT.601 luma as normalize.c computes it for gray tensors. */
FFU_HD float imgpu_luma(int r, int g, int b)
{
    return IMGPU_FADD(IMGPU_FADD(IMGPU_FMUL(0.299f, (float)r), IMGPU_FMUL(0.587f, (float)g)),
                      IMGPU_FMUL(0.114f, (float)b));
}

FFU_HD float imgpu_normalise(float v, float mean, float scale)
{
    return IMGPU_FMUL(IMGPU_FSUB(v, mean), scale);
}

FFU_HD size_t imgpu_tensor_index(const imgpu_warp_params *p, int b, int c, int y, int x)
{
    if (p->nhwc) return (((size_t)b * p->H + y) * p->W + x) * p->C + c;
    return (((size_t)b * p->C + c) * p->H + y) * p->W + x;
}

FFU_HD void imgpu_tensor_store(const imgpu_warp_params *p, size_t i, float v)
{
    if (p->f16)
        ((uint16_t *)p->data)[i] = imgpu_f32_to_f16(v);
    else
        ((float *)p->data)[i] = v;
}

FFU_HD void imgpu_warp_tensor_pixel(const imgpu_warp_params *p, const imgpu_warp_item *it, int x,
                                    int y)
{
    uint8_t px[4] = {0, 0, 0, 0};
    imgpu_warp_sample(&it->src, &p->yuv, p->nearest, p->border, p->bv, it->m, x, y, px);
    if (p->luma) {
        int ro = it->src.fmt == FFU_PIX_BGR24 ? 2 : 0;
        float v = imgpu_luma(px[ro], px[1], px[2 - ro]);
        imgpu_tensor_store(p, imgpu_tensor_index(p, it->batch, 0, y, x),
                           imgpu_normalise(v, p->mean[0], p->scale[0]));
        return;
    }
    for (int c = 0; c < 3; c++) {
        float v = (float)px[p->swap_rb ? 2 - c : c];
        imgpu_tensor_store(p, imgpu_tensor_index(p, it->batch, c, y, x),
                           imgpu_normalise(v, p->mean[c], p->scale[c]));
    }
}

/* ---- warp into a packed image -------------------------------------------------------- */

typedef struct imgpu_warp_image_params {
    imgpu_src src;
    imgpu_yuv yuv; /* unused: packed sources only */
    int nearest, border;
    uint8_t bv[4];
    double m[6];
    uint8_t *dst;
    int dstride, dw, dh;
} imgpu_warp_image_params;

FFU_HD void imgpu_warp_image_pixel(const imgpu_warp_image_params *p, int x, int y)
{
    uint8_t px[4] = {0, 0, 0, 0};
    imgpu_warp_sample(&p->src, &p->yuv, p->nearest, p->border, p->bv, p->m, x, y, px);
    uint8_t *d = p->dst + (size_t)y * p->dstride + (size_t)x * p->src.cn;
    for (int c = 0; c < p->src.cn; c++)
        d[c] = px[c];
}

/* ---- drawing (draw.c) ---------------------------------------------------------------- */

typedef struct imgpu_shape {
    int kind, x, y, w, h, t, r;
    uint8_t px[4]; /* the colour as the image stores it */
} imgpu_shape;

typedef struct imgpu_draw_params {
    uint8_t *data;
    int stride, w, h, bpp;
    int n;
    imgpu_shape shapes[FFU_GPU_DRAW_SHAPES_PER_LAUNCH];
} imgpu_draw_params;

/* draw.c canvas_init: the colour's bytes in fmt's order (GRAY8: rounded BT.601 luma). */
FFU_HD void imgpu_color_bytes(int fmt, ffu_color c, uint8_t px[4])
{
    px[0] = px[1] = px[2] = px[3] = 0;
    if (fmt == FFU_PIX_GRAY8) {
        px[0] = (uint8_t)((299 * c.r + 587 * c.g + 114 * c.b + 500) / 1000);
    } else if (fmt == FFU_PIX_BGR24) {
        px[0] = c.b, px[1] = c.g, px[2] = c.r;
    } else {
        px[0] = c.r, px[1] = c.g, px[2] = c.b, px[3] = c.a;
    }
}

/* Whether the shape covers pixel (x, y). 64-bit, so any int inputs are safe:
 * - rect: the rectangle minus its inner rectangle t pixels in; when 2t >= w or h the
 *   bands meet and draw.c fills the whole rectangle, and so do we;
 * - point: dx^2 + dy^2 <= r^2, which is draw.c's row spans |dx| <= isqrt(r^2 - dy^2). */
FFU_HD int imgpu_shape_covers(const imgpu_shape *s, int px, int py)
{
    long long x = px, y = py, x0 = s->x, y0 = s->y, w = s->w, h = s->h;
    if (s->kind == FFU_GPU_SHAPE_POINT) {
        long long r = s->r < 0 ? 0 : s->r, dx = x - x0, dy = y - y0;
        if (dx < -r || dx > r || dy < -r || dy > r) return 0;
        return dx * dx + dy * dy <= r * r;
    }
    if (x < x0 || x >= x0 + w || y < y0 || y >= y0 + h) return 0;
    if (s->kind == FFU_GPU_SHAPE_FILL_RECT) return 1;
    long long t = s->t < 1 ? 1 : s->t;
    if (2 * t >= w || 2 * t >= h) return 1;
    return !(x >= x0 + t && x < x0 + w - t && y >= y0 + t && y < y0 + h - t);
}

/* The last shape covering (x, y) paints it: the CPU's call order. */
FFU_HD void imgpu_draw_pixel(const imgpu_draw_params *p, int x, int y)
{
    int hit = -1;
    for (int i = 0; i < p->n; i++)
        if (imgpu_shape_covers(&p->shapes[i], x, y)) hit = i;
    if (hit < 0) return;
    uint8_t *d = p->data + (size_t)y * p->stride + (size_t)x * p->bpp;
    for (int c = 0; c < p->bpp; c++)
        d[c] = p->shapes[hit].px[c];
}

/* ---- host-side planning: argument checks and parameter structs ----------------------
 * Plain host functions (not FFU_HD). Not hidden from nvcc's device pass with
 * __CUDA_ARCH__: that pass parses the .cu file's host code too. */

static inline int imgpu_dims_ok(int w, int h)
{
    return w > 0 && h > 0 && w <= FFU_IMAGE_MAX_DIM && h <= FFU_IMAGE_MAX_DIM;
}

/* A source or destination image; nv12_ok admits NV12 (even sizes, a UV plane). */
static inline ffu_status imgpu_src_init(imgpu_src *s, const ffu_gpu_image *img, int nv12_ok,
                                        const char *what)
{
    memset(s, 0, sizeof *s);
    if (!img) return ffu_error_set(FFU_ERR_INVALID, "%s: NULL image", what);
    imgpu_layout l;
    int packed = imgpu_layout_of(img->fmt, &l), nv12 = img->fmt == FFU_PIX_NV12;
    if (!packed && !(nv12 && nv12_ok))
        return ffu_error_set(FFU_ERR_INVALID, "%s: %s images are not supported here", what,
                             ffu_pixfmt_name(img->fmt));
    if (!imgpu_dims_ok(img->width, img->height) || !img->data[0] ||
        img->stride[0] < img->width * (packed ? l.bpp : 1))
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad %s image %dx%d, stride %d", what,
                             ffu_pixfmt_name(img->fmt), img->width, img->height, img->stride[0]);
    if (nv12 && (((img->width | img->height) & 1) || !img->data[1] || img->stride[1] < img->width))
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: NV12 needs even sizes and a UV plane, got "
                             "%dx%d, UV stride %d",
                             what, img->width, img->height, img->stride[1]);
    s->p0 = img->data[0];
    s->p1 = nv12 ? img->data[1] : NULL;
    s->stride0 = img->stride[0];
    s->stride1 = nv12 ? img->stride[1] : 0;
    s->w = img->width, s->h = img->height, s->fmt = img->fmt;
    s->cn = nv12 ? 3 : l.bpp;
    return FFU_OK;
}

/* Whether the bytes two images' planes span (first row to last) intersect. */
static inline int imgpu_images_overlap(const ffu_gpu_image *a, const ffu_gpu_image *b)
{
    int na = a->fmt == FFU_PIX_NV12 ? 2 : 1, nb = b->fmt == FFU_PIX_NV12 ? 2 : 1;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            int ha = i ? a->height / 2 : a->height, hb = j ? b->height / 2 : b->height;
            uintptr_t a0 = (uintptr_t)a->data[i], b0 = (uintptr_t)b->data[j];
            uintptr_t a1 = a0 + (uintptr_t)a->stride[i] * (uintptr_t)ha;
            uintptr_t b1 = b0 + (uintptr_t)b->stride[j] * (uintptr_t)hb;
            if (a0 < b1 && b0 < a1) return 1;
        }
    return 0;
}

static inline ffu_status imgpu_plan_convert(const ffu_gpu_image *src, const ffu_gpu_image *dst,
                                            ffu_yuv_coding coding, imgpu_convert_params *p)
{
    ffu_status st;
    imgpu_src d;
    memset(p, 0, sizeof *p);
    if ((st = imgpu_src_init(&p->src, src, 1, "gpu convert source")) < 0) return st;
    if ((st = imgpu_src_init(&d, dst, 0, "gpu convert destination")) < 0) return st;
    if (src->fmt != FFU_PIX_NV12)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "gpu convert: only NV12 sources, got %s",
                             ffu_pixfmt_name(src->fmt));
    if (src->width != dst->width || src->height != dst->height)
        return ffu_error_set(FFU_ERR_INVALID, "gpu convert: size mismatch %dx%d -> %dx%d",
                             src->width, src->height, dst->width, dst->height);
    if (!imgpu_yuv_init(&p->yuv, coding))
        return ffu_error_set(FFU_ERR_INVALID,
                             "gpu convert: unknown YUV coding (matrix %d, range %d)",
                             (int)coding.matrix, (int)coding.range);
    if (imgpu_images_overlap(src, dst))
        return ffu_error_set(FFU_ERR_INVALID, "gpu convert: source and destination overlap");
    imgpu_layout_of(dst->fmt, &p->d);
    p->dst = dst->data[0];
    p->dstride = dst->stride[0];
    return FFU_OK;
}

static inline ffu_status imgpu_plan_resize(const ffu_gpu_image *src, const ffu_gpu_image *dst,
                                           imgpu_resize_params *p)
{
    ffu_status st;
    imgpu_src s, d;
    memset(p, 0, sizeof *p);
    if ((st = imgpu_src_init(&s, src, 0, "gpu resize source")) < 0 ||
        (st = imgpu_src_init(&d, dst, 0, "gpu resize destination")) < 0)
        return st;
    if (src->fmt != dst->fmt)
        return ffu_error_set(FFU_ERR_INVALID, "gpu resize: formats differ (%s -> %s)",
                             ffu_pixfmt_name(src->fmt), ffu_pixfmt_name(dst->fmt));
    if (imgpu_images_overlap(src, dst))
        return ffu_error_set(FFU_ERR_INVALID, "gpu resize: source and destination overlap");
    p->src = src->data[0], p->sw = src->width, p->sh = src->height, p->sstride = src->stride[0];
    p->dst = dst->data[0], p->dw = dst->width, p->dh = dst->height, p->dstride = dst->stride[0];
    p->cn = s.cn;
    /* resize.c: scale = (double)src / dst per axis. */
    p->scale_x = (double)src->width / dst->width;
    p->scale_y = (double)src->height / dst->height;
    return FFU_OK;
}

static inline ffu_status imgpu_check_warp_mode(ffu_interp interp, ffu_border border,
                                               const char *what)
{
    if (interp != FFU_INTERP_NEAREST && interp != FFU_INTERP_BILINEAR)
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: interpolation %d not supported (nearest "
                             "or bilinear)",
                             what, (int)interp);
    if ((unsigned)border >= FFU_BORDER_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "%s: unknown border mode %d", what, (int)border);
    return FFU_OK;
}

static inline ffu_status imgpu_plan_warp_image(const ffu_gpu_image *src, const ffu_gpu_image *dst,
                                               const double m[6], ffu_interp interp,
                                               ffu_border border, const uint8_t bv[4],
                                               imgpu_warp_image_params *p)
{
    ffu_status st;
    imgpu_src d;
    memset(p, 0, sizeof *p);
    if ((st = imgpu_src_init(&p->src, src, 0, "gpu warp_affine source")) < 0 ||
        (st = imgpu_src_init(&d, dst, 0, "gpu warp_affine destination")) < 0)
        return st;
    if (src->fmt != dst->fmt)
        return ffu_error_set(FFU_ERR_INVALID, "gpu warp_affine: formats differ (%s -> %s)",
                             ffu_pixfmt_name(src->fmt), ffu_pixfmt_name(dst->fmt));
    if (!m) return ffu_error_set(FFU_ERR_INVALID, "gpu warp_affine: NULL matrix");
    if ((st = imgpu_check_warp_mode(interp, border, "gpu warp_affine")) < 0) return st;
    if (imgpu_images_overlap(src, dst))
        return ffu_error_set(FFU_ERR_INVALID, "gpu warp_affine: source and destination overlap");
    p->nearest = interp == FFU_INTERP_NEAREST;
    p->border = (int)border;
    if (bv) memcpy(p->bv, bv, 4);
    memcpy(p->m, m, sizeof p->m);
    p->dst = dst->data[0], p->dstride = dst->stride[0];
    p->dw = dst->width, p->dh = dst->height;
    return FFU_OK;
}

/* Checks a whole warp_to_tensor call (every source, every job) before anything is
 * queued, and fills what the launches share. */
static inline ffu_status imgpu_plan_warp_tensor(const ffu_gpu_image *srcs, int n_srcs,
                                                const ffu_gpu_warp_job *jobs, int n_jobs,
                                                const ffu_gpu_warp_opts *o,
                                                const ffu_gpu_tensor_view *t, imgpu_warp_params *p)
{
    const char *what = "gpu warp_to_tensor";
    ffu_status st;
    memset(p, 0, sizeof *p);
    if (!o || !t || n_jobs < 0 || (n_jobs > 0 && (!jobs || !srcs || n_srcs <= 0)))
        return ffu_error_set(FFU_ERR_INVALID, "%s: missing argument (%d jobs, %d sources)", what,
                             n_jobs, n_srcs);
    if ((st = imgpu_check_warp_mode(o->interp, o->border, what)) < 0) return st;
    ffu_yuv_coding coding = {o->matrix, o->range};
    if (!imgpu_yuv_init(&p->yuv, coding))
        return ffu_error_set(FFU_ERR_INVALID, "%s: unknown YUV coding (matrix %d, range %d)", what,
                             (int)o->matrix, (int)o->range);
    if (!t->data || (t->dtype != FFU_DTYPE_F32 && t->dtype != FFU_DTYPE_F16))
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: tensor must be f32 or f16 device memory "
                             "(dtype %d)",
                             what, (int)t->dtype);
    if (t->layout != FFU_LAYOUT_NCHW && t->layout != FFU_LAYOUT_NHWC)
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad tensor layout %d", what, (int)t->layout);
    if (t->n <= 0 || t->n > (1 << 20) || !imgpu_dims_ok(t->w, t->h))
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad tensor shape %dx%dx%dx%d", what, t->n, t->c,
                             t->h, t->w);
    int want = o->norm.gray ? 1 : 3;
    if (t->c != want)
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: %s input needs %d tensor channels, the "
                             "tensor has %d",
                             what, o->norm.gray ? "gray" : "colour", want, t->c);
    for (int i = 0; n_jobs > 0 && i < n_srcs; i++) {
        imgpu_src s;
        if ((st = imgpu_src_init(&s, &srcs[i], 1, what)) < 0) return st;
        if (s.fmt == FFU_PIX_GRAY8)
            return ffu_error_set(FFU_ERR_UNSUPPORTED,
                                 "%s: source %d is GRAY8 (RGB24, BGR24, "
                                 "RGBA32 or NV12)",
                                 what, i);
    }
    for (int i = 0; i < n_jobs; i++) {
        if (jobs[i].src < 0 || jobs[i].src >= n_srcs)
            return ffu_error_set(FFU_ERR_INVALID, "%s: job %d names source %d of %d", what, i,
                                 jobs[i].src, n_srcs);
        if (jobs[i].batch_index < 0 || jobs[i].batch_index >= t->n)
            return ffu_error_set(FFU_ERR_INVALID,
                                 "%s: job %d writes batch slot %d outside "
                                 "0..%d",
                                 what, i, jobs[i].batch_index, t->n - 1);
    }
    p->nearest = o->interp == FFU_INTERP_NEAREST;
    p->border = (int)o->border;
    memcpy(p->bv, o->border_value, 4);
    memcpy(p->mean, o->norm.mean, sizeof p->mean);
    memcpy(p->scale, o->norm.scale, sizeof p->scale);
    p->swap_rb = o->norm.swap_rb != 0;
    p->luma = o->norm.gray != 0;
    p->data = t->data;
    p->f16 = t->dtype == FFU_DTYPE_F16;
    p->nhwc = t->layout == FFU_LAYOUT_NHWC;
    p->C = t->c, p->H = t->h, p->W = t->w;
    return FFU_OK;
}

/* One job of a checked call (imgpu_plan_warp_tensor passed). */
static inline void imgpu_warp_item_init(imgpu_warp_item *it, const ffu_gpu_image *srcs,
                                        const ffu_gpu_warp_job *job)
{
    memset(it, 0, sizeof *it);
    (void)imgpu_src_init(&it->src, &srcs[job->src], 1, "gpu warp_to_tensor");
    memcpy(it->m, job->m, sizeof it->m);
    it->batch = job->batch_index;
}

/* Fills p with shapes[0..n) (n <= FFU_GPU_DRAW_SHAPES_PER_LAUNCH) and the pixels they
 * can touch, [x0, x1) x [y0, y1) clipped to the image; returns 0 when that is empty. */
static inline int imgpu_plan_draw_chunk(const ffu_gpu_image *img, const ffu_gpu_shape *shapes,
                                        int n, imgpu_draw_params *p, int box[4])
{
    long long bx0 = img->width, by0 = img->height, bx1 = 0, by1 = 0;
    p->n = n;
    for (int i = 0; i < n; i++) {
        const ffu_gpu_shape *s = &shapes[i];
        imgpu_shape *d = &p->shapes[i];
        d->kind = (int)s->kind, d->x = s->x, d->y = s->y, d->w = s->w, d->h = s->h;
        d->t = s->thickness, d->r = s->radius;
        imgpu_color_bytes(img->fmt, s->color, d->px);
        long long x0, y0, x1, y1;
        if (s->kind == FFU_GPU_SHAPE_POINT) {
            long long r = s->radius < 0 ? 0 : s->radius;
            x0 = (long long)s->x - r, x1 = (long long)s->x + r + 1;
            y0 = (long long)s->y - r, y1 = (long long)s->y + r + 1;
        } else {
            x0 = s->x, x1 = (long long)s->x + s->w, y0 = s->y, y1 = (long long)s->y + s->h;
        }
        if (x0 < 0) x0 = 0;
        if (y0 < 0) y0 = 0;
        if (x1 > img->width) x1 = img->width;
        if (y1 > img->height) y1 = img->height;
        if (x0 >= x1 || y0 >= y1) continue;
        if (x0 < bx0) bx0 = x0;
        if (y0 < by0) by0 = y0;
        if (x1 > bx1) bx1 = x1;
        if (y1 > by1) by1 = y1;
    }
    box[0] = (int)bx0, box[1] = (int)by0, box[2] = (int)bx1, box[3] = (int)by1;
    return bx0 < bx1 && by0 < by1;
}

static inline ffu_status imgpu_plan_draw(const ffu_gpu_image *img, const ffu_gpu_shape *shapes,
                                         int n, imgpu_draw_params *p)
{
    ffu_status st;
    imgpu_src s;
    memset(p, 0, sizeof *p);
    if ((st = imgpu_src_init(&s, img, 0, "gpu draw")) < 0) return st;
    if (n < 0 || (n > 0 && !shapes))
        return ffu_error_set(FFU_ERR_INVALID, "gpu draw: %d shapes at %p", n, (const void *)shapes);
    for (int i = 0; i < n; i++)
        if ((unsigned)shapes[i].kind >= FFU_GPU_SHAPE_COUNT)
            return ffu_error_set(FFU_ERR_INVALID, "gpu draw: shape %d has unknown kind %d", i,
                                 (int)shapes[i].kind);
    p->data = img->data[0], p->stride = img->stride[0];
    p->w = img->width, p->h = img->height, p->bpp = s.cn;
    return FFU_OK;
}

#endif
