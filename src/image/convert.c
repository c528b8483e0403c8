/* Colour conversion between the u8 pixel formats: channel reorders, BT.601 luma for
 * gray, and YUV 4:2:0 (NV12, YUV420P) in BT.601, BT.709 or BT.2020, limited or full
 * range, both ways. Decoded video arrives as NV12/YUV420P and the encoder wants them
 * back, everything in between (models, drawing) works on packed RGB/BGR.
 *
 * Arithmetic is 16-bit fixed point with rounding. The YUV coefficients come from one
 * table (yuv_coefs.h) that the GPU kernels read too, so CPU and GPU give the same
 * bytes; both directions come from the same Kr, Kb there. */
#include <stdint.h>
#include <string.h>

#include "facefuse/image.h"
#include "yuv_coefs.h"

/* Where R, G, B (and A) sit in a packed pixel; GRAY8 reads its value for all three. */
typedef struct {
    int bpp, r, g, b, a; /* a = -1: no alpha */
    int gray;
} layout;

static int packed_layout(ffu_pixfmt f, layout *l)
{
    switch (f) {
    case FFU_PIX_GRAY8: *l = (layout){1, 0, 0, 0, -1, 1}; return 1;
    case FFU_PIX_RGB24: *l = (layout){3, 0, 1, 2, -1, 0}; return 1;
    case FFU_PIX_BGR24: *l = (layout){3, 2, 1, 0, -1, 0}; return 1;
    case FFU_PIX_RGBA32: *l = (layout){4, 0, 1, 2, 3, 0}; return 1;
    default: return 0;
    }
}

static int is_yuv(ffu_pixfmt f) { return f == FFU_PIX_NV12 || f == FFU_PIX_YUV420P; }

static uint8_t clamp_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* BT.601 luma in 14-bit fixed point: 0.299, 0.587, 0.114 scaled by 16384 (sum 16384). */
static inline uint8_t luma(int r, int g, int b)
{
    return (uint8_t)((4899 * r + 9617 * g + 1868 * b + 8192) >> 14);
}

/* ---- packed <-> packed --------------------------------------------------------------- */

static void convert_packed(const ffu_image *src, ffu_image *dst, layout s, layout d)
{
    int w = src->width;
    for (int y = 0; y < src->height; y++) {
        const uint8_t *sp = src->data[0] + (size_t)y * src->stride[0];
        uint8_t *dp = dst->data[0] + (size_t)y * dst->stride[0];
        if (d.gray) {
            for (int x = 0; x < w; x++, sp += s.bpp) dp[x] = luma(sp[s.r], sp[s.g], sp[s.b]);
            continue;
        }
        for (int x = 0; x < w; x++, sp += s.bpp, dp += d.bpp) {
            uint8_t r = sp[s.r], g = sp[s.g], b = sp[s.b];
            dp[d.r] = r, dp[d.g] = g, dp[d.b] = b;
            if (d.a >= 0) dp[d.a] = s.a >= 0 ? sp[s.a] : 255;
        }
    }
}

/* ---- YUV 4:2:0 -> packed ------------------------------------------------------------- */

static void yuv_to_packed(const ffu_image *src, ffu_image *dst, layout d, const yuv_coefs *k)
{
    int w = src->width, nv12 = src->fmt == FFU_PIX_NV12;
    for (int y = 0; y < src->height; y++) {
        const uint8_t *yp = src->data[0] + (size_t)y * src->stride[0];
        const uint8_t *up = src->data[1] + (size_t)(y / 2) * src->stride[1];
        const uint8_t *vp = nv12 ? up + 1 : src->data[2] + (size_t)(y / 2) * src->stride[2];
        int cstep = nv12 ? 2 : 1;
        uint8_t *dp = dst->data[0] + (size_t)y * dst->stride[0];
        if (d.gray) {
            /* The luma of the decoded RGB is the scaled Y itself (chroma cancels). */
            for (int x = 0; x < w; x++)
                dp[x] = clamp_u8((k->cy * (yp[x] - k->yoff) + 32768) >> 16);
            continue;
        }
        for (int x = 0; x < w; x++, dp += d.bpp) {
            int c = k->cy * (yp[x] - k->yoff) + 32768;
            int u = up[(x / 2) * cstep] - 128, v = vp[(x / 2) * cstep] - 128;
            dp[d.r] = clamp_u8((c + k->crv * v) >> 16);
            dp[d.g] = clamp_u8((c - k->cgu * u - k->cgv * v) >> 16);
            dp[d.b] = clamp_u8((c + k->cbu * u) >> 16);
            if (d.a >= 0) dp[d.a] = 255;
        }
    }
}

/* ---- packed -> YUV 4:2:0 ------------------------------------------------------------- */

static void packed_to_yuv(const ffu_image *src, ffu_image *dst, layout s, const yuv_coefs *k)
{
    int w = src->width, nv12 = dst->fmt == FFU_PIX_NV12;
    int yoff = k->yoff << 16;
    for (int y = 0; y < src->height; y += 2) {
        const uint8_t *s0 = src->data[0] + (size_t)y * src->stride[0];
        const uint8_t *s1 = s0 + src->stride[0];
        uint8_t *y0 = dst->data[0] + (size_t)y * dst->stride[0];
        uint8_t *y1 = y0 + dst->stride[0];
        uint8_t *up = dst->data[1] + (size_t)(y / 2) * dst->stride[1];
        uint8_t *vp = nv12 ? up + 1 : dst->data[2] + (size_t)(y / 2) * dst->stride[2];
        int cstep = nv12 ? 2 : 1;
        for (int x = 0; x < w; x += 2) {
            int sr = 0, sg = 0, sb = 0;
            const uint8_t *px[4] = {s0 + x * s.bpp, s0 + (x + 1) * s.bpp, s1 + x * s.bpp,
                                    s1 + (x + 1) * s.bpp};
            uint8_t *py[4] = {y0 + x, y0 + x + 1, y1 + x, y1 + x + 1};
            for (int i = 0; i < 4; i++) {
                int r = px[i][s.r], g = px[i][s.g], b = px[i][s.b];
                *py[i] = clamp_u8((yoff + k->yr * r + k->yg * g + k->yb * b + 32768) >> 16);
                sr += r, sg += g, sb += b;
            }
            /* Chroma of the block mean: sums of four pixels, so two more bits of shift;
             * the 128 offset keeps the total positive before the shift. */
            int u = ((128 << 18) + k->ur * sr + k->ug * sg + k->ub * sb + (1 << 17)) >> 18;
            int v = ((128 << 18) + k->vr * sr + k->vg * sg + k->vb * sb + (1 << 17)) >> 18;
            up[(x / 2) * cstep] = clamp_u8(u);
            vp[(x / 2) * cstep] = clamp_u8(v);
        }
    }
}

/* ---- YUV <-> YUV and copies ---------------------------------------------------------- */

static void copy_rows(uint8_t *d, int ds, const uint8_t *s, int ss, int bytes, int rows)
{
    for (int y = 0; y < rows; y++) memcpy(d + (size_t)y * ds, s + (size_t)y * ss, (size_t)bytes);
}

static void yuv_to_yuv(const ffu_image *src, ffu_image *dst)
{
    int w = src->width, h = src->height;
    copy_rows(dst->data[0], dst->stride[0], src->data[0], src->stride[0], w, h);
    if (src->fmt == dst->fmt) {
        if (src->fmt == FFU_PIX_NV12) {
            copy_rows(dst->data[1], dst->stride[1], src->data[1], src->stride[1], w, h / 2);
        } else {
            for (int p = 1; p < 3; p++)
                copy_rows(dst->data[p], dst->stride[p], src->data[p], src->stride[p], w / 2, h / 2);
        }
        return;
    }
    for (int y = 0; y < h / 2; y++) {
        if (src->fmt == FFU_PIX_NV12) {
            const uint8_t *uv = src->data[1] + (size_t)y * src->stride[1];
            uint8_t *u = dst->data[1] + (size_t)y * dst->stride[1];
            uint8_t *v = dst->data[2] + (size_t)y * dst->stride[2];
            for (int x = 0; x < w / 2; x++) u[x] = uv[2 * x], v[x] = uv[2 * x + 1];
        } else {
            const uint8_t *u = src->data[1] + (size_t)y * src->stride[1];
            const uint8_t *v = src->data[2] + (size_t)y * src->stride[2];
            uint8_t *uv = dst->data[1] + (size_t)y * dst->stride[1];
            for (int x = 0; x < w / 2; x++) uv[2 * x] = u[x], uv[2 * x + 1] = v[x];
        }
    }
}

/* ---- entry points -------------------------------------------------------------------- */

static ffu_status check_image(const ffu_image *im, const char *which)
{
    layout l = {0, 0, 0, 0, -1, 0};
    if (!im) return ffu_error_set(FFU_ERR_INVALID, "convert: NULL %s image", which);
    int packed = packed_layout(im->fmt, &l), yuv = is_yuv(im->fmt);
    if (!packed && !yuv)
        return ffu_error_set(FFU_ERR_INVALID, "convert: invalid %s format %s", which,
                             ffu_pixfmt_name(im->fmt));
    if (im->width <= 0 || im->height <= 0 || im->width > FFU_IMAGE_MAX_DIM ||
        im->height > FFU_IMAGE_MAX_DIM || !im->data[0] ||
        im->stride[0] < im->width * (packed ? l.bpp : 1))
        return ffu_error_set(FFU_ERR_INVALID, "convert: bad %s image %dx%d stride %d", which,
                             im->width, im->height, im->stride[0]);
    if (yuv) {
        int cw = im->fmt == FFU_PIX_NV12 ? im->width : im->width / 2;
        if ((im->width | im->height) & 1)
            return ffu_error_set(FFU_ERR_INVALID, "convert: %s %s needs even dimensions, "
                                 "got %dx%d", which, ffu_pixfmt_name(im->fmt), im->width,
                                 im->height);
        if (!im->data[1] || im->stride[1] < cw ||
            (im->fmt == FFU_PIX_YUV420P && (!im->data[2] || im->stride[2] < cw)))
            return ffu_error_set(FFU_ERR_INVALID, "convert: %s %s has missing or short "
                                 "chroma planes", which, ffu_pixfmt_name(im->fmt));
    }
    return FFU_OK;
}

ffu_status ffu_image_convert_yuv(const ffu_image *src, ffu_image *dst, ffu_yuv_coding coding)
{
    ffu_status st;
    if ((st = check_image(src, "source")) < 0 || (st = check_image(dst, "destination")) < 0)
        return st;
    if (src->width != dst->width || src->height != dst->height)
        return ffu_error_set(FFU_ERR_INVALID, "convert: size mismatch %dx%d -> %dx%d",
                             src->width, src->height, dst->width, dst->height);
    const yuv_coefs *k = yuv_coefs_of(coding);
    if (!k)
        return ffu_error_set(FFU_ERR_INVALID, "convert: unknown YUV coding (matrix %d, range %d)",
                             (int)coding.matrix, (int)coding.range);
    if (src->data[0] == dst->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "convert: source and destination are the same "
                             "pixels");
    layout ls = {0, 0, 0, 0, -1, 0}, ld = ls;
    int sp = packed_layout(src->fmt, &ls), dp = packed_layout(dst->fmt, &ld);
    if (sp && dp) {
        if (src->fmt == dst->fmt)
            copy_rows(dst->data[0], dst->stride[0], src->data[0], src->stride[0],
                      src->width * ls.bpp, src->height);
        else
            convert_packed(src, dst, ls, ld);
    } else if (!sp && dp) {
        yuv_to_packed(src, dst, ld, k);
    } else if (sp && !dp) {
        packed_to_yuv(src, dst, ls, k);
    } else {
        yuv_to_yuv(src, dst);
    }
    return FFU_OK;
}

ffu_status ffu_image_convert_range(const ffu_image *src, ffu_image *dst, ffu_yuv_range range)
{
    if (range != FFU_YUV_LIMITED && range != FFU_YUV_FULL)
        return ffu_error_set(FFU_ERR_INVALID, "convert: unknown YUV range %d", (int)range);
    return ffu_image_convert_yuv(src, dst, (ffu_yuv_coding){FFU_YUV_BT601, range});
}

ffu_status ffu_image_convert(const ffu_image *src, ffu_image *dst)
{
    return ffu_image_convert_yuv(src, dst, (ffu_yuv_coding){FFU_YUV_BT601, FFU_YUV_LIMITED});
}

ffu_yuv_coding ffu_image_yuv_coding(int matrix, int full_range)
{
    ffu_yuv_coding c = {FFU_YUV_BT601, full_range ? FFU_YUV_FULL : FFU_YUV_LIMITED};
    if (matrix == 709) c.matrix = FFU_YUV_BT709;
    if (matrix == 2020) c.matrix = FFU_YUV_BT2020;
    return c;
}
