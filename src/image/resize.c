/* Resize of packed u8 images: nearest, bilinear (OpenCV INTER_LINEAR numbers) and area
 * (box filter). This file is the scalar reference and the dispatcher; resize_avx2.c
 * holds the SIMD halves of the bilinear passes, which compute the same integers, and of
 * the general area filter's vertical pass and store, which compute the same floats.
 *
 * Nothing is allocated: the output is cut into tiles of FFU_RESIZE_TILE columns whose
 * coefficient tables and intermediate rows fit on the stack (the area filter's row of
 * vertical sums: 32 KB). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "facefuse/image.h"
#include "kernels_internal.h"

/* ---- dispatch and shared checks --------------------------------------------------- */

int ffu_image_isa_best(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned f = ffu_cpu_features();
    if ((f & FFU_CPU_AVX512F) && (f & FFU_CPU_AVX512BW)) return FFU_ISA_AVX512;
    if (f & FFU_CPU_AVX2) return FFU_ISA_AVX2;
#endif
    return FFU_ISA_SCALAR;
}

int ffu_image_isa_resolve(int isa)
{
    int best = ffu_image_isa_best();
    if (isa < 0 || isa > best) return best;
    return isa;
}

static int is_packed(ffu_pixfmt f)
{
    return f == FFU_PIX_GRAY8 || f == FFU_PIX_RGB24 || f == FFU_PIX_BGR24 || f == FFU_PIX_RGBA32;
}

ffu_status ffu_image_check_packed_pair(const ffu_image *src, const ffu_image *dst,
                                       const char *op)
{
    if (!src || !dst)
        return ffu_error_set(FFU_ERR_INVALID, "%s: NULL image", op);
    if (!is_packed(src->fmt) || src->fmt != dst->fmt)
        return ffu_error_set(FFU_ERR_INVALID, "%s: needs packed GRAY8/RGB24/BGR24/RGBA32 of "
                             "one format, got %s -> %s", op, ffu_pixfmt_name(src->fmt),
                             ffu_pixfmt_name(dst->fmt));
    int bpp = ffu_pixfmt_bpp(src->fmt);
    const ffu_image *im[2] = {src, dst};
    for (int i = 0; i < 2; i++) {
        if (!im[i]->data[0] || im[i]->width <= 0 || im[i]->height <= 0 ||
            im[i]->width > FFU_IMAGE_MAX_DIM || im[i]->height > FFU_IMAGE_MAX_DIM ||
            im[i]->stride[0] < im[i]->width * bpp)
            return ffu_error_set(FFU_ERR_INVALID, "%s: bad %s image %dx%d stride %d", op,
                                 i ? "destination" : "source", im[i]->width, im[i]->height,
                                 im[i]->stride[0]);
    }
    /* Byte ranges [first, last) of both images; overlap would read our own output. */
    const uint8_t *s0 = src->data[0];
    const uint8_t *s1 = s0 + (size_t)(src->height - 1) * src->stride[0] + (size_t)src->width * bpp;
    const uint8_t *d0 = dst->data[0];
    const uint8_t *d1 = d0 + (size_t)(dst->height - 1) * dst->stride[0] + (size_t)dst->width * bpp;
    if ((uintptr_t)s0 < (uintptr_t)d1 && (uintptr_t)d0 < (uintptr_t)s1)
        return ffu_error_set(FFU_ERR_INVALID, "%s: source and destination overlap", op);
    return FFU_OK;
}

/* ---- nearest ---------------------------------------------------------------------- */

/* Index of the source pixel whose centre is nearest the centre of output pixel d:
 * floor((d + 0.5) * s / n), in exact integers. */
static int nearest_index(int d, int n, int s)
{
    return (int)(((int64_t)(2 * d + 1) * s) / (2 * (int64_t)n));
}

static void resize_nearest(const ffu_image *src, ffu_image *dst)
{
    int cn = ffu_pixfmt_bpp(src->fmt);
    int32_t xofs[FFU_RESIZE_TILE];
    for (int x0 = 0; x0 < dst->width; x0 += FFU_RESIZE_TILE) {
        int n = dst->width - x0 < FFU_RESIZE_TILE ? dst->width - x0 : FFU_RESIZE_TILE;
        for (int i = 0; i < n; i++) xofs[i] = nearest_index(x0 + i, dst->width, src->width) * cn;
        for (int y = 0; y < dst->height; y++) {
            const uint8_t *s = src->data[0] +
                               (size_t)nearest_index(y, dst->height, src->height) * src->stride[0];
            uint8_t *d = dst->data[0] + (size_t)y * dst->stride[0] + (size_t)x0 * cn;
            switch (cn) {
            case 1:
                for (int i = 0; i < n; i++) d[i] = s[xofs[i]];
                break;
            case 3:
                for (int i = 0; i < n; i++, d += 3) {
                    const uint8_t *p = s + xofs[i];
                    d[0] = p[0], d[1] = p[1], d[2] = p[2];
                }
                break;
            default:
                for (int i = 0; i < n; i++) memcpy(d + 4 * i, s + xofs[i], 4);
            }
        }
    }
}

/* ---- bilinear --------------------------------------------------------------------- */

/* OpenCV's INTER_LINEAR coefficients for output index d: the position is computed in
 * double, rounded to float, and the weights rounded from float, so the integers (and
 * our outputs) agree with OpenCV's. Returns the left/top source index; positions left
 * of the first centre or right of the last one clamp to the edge pixel. */
static int linear_coef(int d, double scale, int ssize, int16_t *w0, int16_t *w1)
{
    float f = (float)((d + 0.5) * scale - 0.5);
    int s = (int)floorf(f);
    f -= (float)s;
    if (s < 0) s = 0, f = 0.f;
    if (s >= ssize - 1) s = ssize - 1, f = 0.f;
    long a = lrintf((1.f - f) * (float)FFU_RESIZE_COEF_ONE);
    long b = lrintf(f * (float)FFU_RESIZE_COEF_ONE);
    *w0 = (int16_t)(a < 0 ? 0 : a > FFU_RESIZE_COEF_ONE ? FFU_RESIZE_COEF_ONE : a);
    *w1 = (int16_t)(b < 0 ? 0 : b > FFU_RESIZE_COEF_ONE ? FFU_RESIZE_COEF_ONE : b);
    return s;
}

static void hline_scalar(const uint8_t *src, int16_t *dst, const int32_t *xofs,
                         const int16_t *alpha, int from, int n, int cn, int right)
{
    for (int i = from; i < n; i++) {
        const uint8_t *p = src + xofs[i];
        int a0 = alpha[2 * i], a1 = alpha[2 * i + 1];
        for (int c = 0; c < cn; c++)
            dst[i * cn + c] = (int16_t)((p[c] * a0 + p[c + right] * a1) >> 4);
    }
}

static void vline_scalar(const int16_t *h0, const int16_t *h1, uint8_t *dst, int from, int n,
                         int b0, int b1)
{
    for (int i = from; i < n; i++) {
        int v = (((h0[i] * b0) >> 16) + ((h1[i] * b1) >> 16) + 2) >> 2;
        dst[i] = (uint8_t)(v > 255 ? 255 : v);
    }
}

typedef struct {
    int32_t xofs[FFU_RESIZE_TILE];
    int16_t alpha[2 * FFU_RESIZE_TILE];
    _Alignas(32) int16_t rows[2][FFU_RESIZE_TILE * 4 + FFU_RESIZE_ROW_PAD];
} bilinear_tile;

static void resize_bilinear(const ffu_image *src, ffu_image *dst, int isa)
{
    int cn = ffu_pixfmt_bpp(src->fmt), sw = src->width, sh = src->height;
    int row_bytes = sw * cn;
    /* With two or more source columns the right neighbour is always at +cn: the last
     * column is expressed as (sw-2, weights 0:2048), which gives the same integers. */
    int right = sw >= 2 ? cn : 0;
    double sx = (double)sw / dst->width, sy = (double)sh / dst->height;
    bilinear_tile t;
    for (int x0 = 0; x0 < dst->width; x0 += FFU_RESIZE_TILE) {
        int n = dst->width - x0 < FFU_RESIZE_TILE ? dst->width - x0 : FFU_RESIZE_TILE;
        int safe = 0; /* leading pixels whose 8-byte SIMD loads stay inside the row */
        for (int i = 0; i < n; i++) {
            int s = linear_coef(x0 + i, sx, sw, &t.alpha[2 * i], &t.alpha[2 * i + 1]);
            if (sw >= 2 && s == sw - 1) {
                s = sw - 2;
                t.alpha[2 * i + 1] = t.alpha[2 * i];
                t.alpha[2 * i] = 0;
            }
            t.xofs[i] = s * cn;
            if (sw >= 2 && t.xofs[i] + 8 <= row_bytes) safe = i + 1;
        }
        int tag[2] = {-1, -1};
        for (int y = 0; y < dst->height; y++) {
            int16_t b0, b1;
            int r0 = linear_coef(y, sy, sh, &b0, &b1);
            int r1 = r0 + 1 < sh ? r0 + 1 : r0;
            int need[2] = {r0, r1};
            int16_t *h[2] = {NULL, NULL};
            for (int k = 0; k < 2; k++) {
                int slot = tag[0] == need[k] ? 0 : tag[1] == need[k] ? 1 : -1;
                if (slot < 0) {
                    /* Refill a slot the other needed row does not occupy. */
                    if (k == 0)
                        slot = tag[0] == need[1] ? 1 : 0;
                    else
                        slot = h[0] == t.rows[0] ? 1 : 0;
                    const uint8_t *s = src->data[0] + (size_t)need[k] * src->stride[0];
                    int done = 0;
                    if (isa >= FFU_ISA_AVX2)
                        done = ffu_resize_hline_avx2(s, t.rows[slot], t.xofs, t.alpha, n, cn, safe);
                    hline_scalar(s, t.rows[slot], t.xofs, t.alpha, done, n, cn, right);
                    tag[slot] = need[k];
                }
                h[k] = t.rows[slot];
            }
            uint8_t *d = dst->data[0] + (size_t)y * dst->stride[0] + (size_t)x0 * cn;
            int done = 0;
            if (isa >= FFU_ISA_AVX2) done = ffu_resize_vline_avx2(h[0], h[1], d, n * cn, b0, b1);
            vline_scalar(h[0], h[1], d, done, n * cn, b0, b1);
        }
    }
}

/* ---- area ------------------------------------------------------------------------- */

/* Integer factors: every output pixel is the mean of a kx x ky block, rounded half up.
 * Division by the block size is a multiply by a 32-bit reciprocal, exact for every
 * sum that can occur (sum < 2^17, area <= 256). */
#define AREA_FAST_MAX 256
#define AREA_ACC 8192

static void resize_area_int(const ffu_image *src, ffu_image *dst, int kx, int ky)
{
    int cn = ffu_pixfmt_bpp(src->fmt), area = kx * ky;
    uint64_t recip = (((uint64_t)1 << 32) / (uint64_t)area) + 1;
    uint32_t half = (uint32_t)area / 2;
    _Alignas(32) uint16_t acc[AREA_ACC];
    int tile = AREA_ACC / (kx * cn);
    for (int x0 = 0; x0 < dst->width; x0 += tile) {
        int n = dst->width - x0 < tile ? dst->width - x0 : tile;
        int span = n * kx * cn;
        for (int y = 0; y < dst->height; y++) {
            const uint8_t *s = src->data[0] + (size_t)y * ky * src->stride[0] + (size_t)x0 * kx * cn;
            for (int j = 0; j < span; j++) acc[j] = s[j];
            for (int r = 1; r < ky; r++) {
                s += src->stride[0];
                for (int j = 0; j < span; j++) acc[j] = (uint16_t)(acc[j] + s[j]);
            }
            uint8_t *d = dst->data[0] + (size_t)y * dst->stride[0] + (size_t)x0 * cn;
            const uint16_t *a = acc;
            for (int i = 0; i < n; i++, a += kx * cn) {
                for (int c = 0; c < cn; c++) {
                    uint32_t sum = half;
                    for (int k = 0; k < kx; k++) sum += a[k * cn + c];
                    *d++ = (uint8_t)((sum * recip) >> 32);
                }
            }
        }
    }
}

/* General factors: the output pixel d covers [d*scale, (d+1)*scale) of the source; each
 * source pixel counts with the fraction of it that is covered (slivers under 1e-3, which
 * come from rounding, are dropped as OpenCV does). Weights: first, middle, last. */
typedef struct {
    int first, last;
    float w_first, w_mid, w_last;
} area_span;

static area_span area_coef(int d, double scale, int ssize)
{
    area_span a;
    double lo = d * scale, hi = lo + scale;
    if (hi > ssize) hi = ssize;
    double len = hi - lo;
    int i0 = (int)floor(lo), i1 = (int)ceil(hi) - 1;
    if (i1 >= ssize) i1 = ssize - 1;
    if (i1 > i0 && (i0 + 1) - lo < 1e-3) i0++;
    if (i1 > i0 && hi - i1 < 1e-3) i1--;
    double o0 = (i0 + 1 < hi ? i0 + 1 : hi) - (i0 > lo ? i0 : lo);
    double o1 = hi - (i1 > lo ? i1 : lo);
    a.first = i0, a.last = i1;
    a.w_first = (float)(o0 / len);
    a.w_last = (float)(o1 / len);
    a.w_mid = (float)(1.0 / len);
    if (i0 == i1) a.w_first = a.w_last = 1.f;
    return a;
}

/* Source columns one vertical pass covers at most (floats on the stack: 32 KB). */
#define AREA_CHUNK 8192

/* Vertical pass: t[j] = sum over rows r of w_r * s_r[j], rows in order (first, middle,
 * last weights from ys), for j in [from, n). The AVX2 version does a prefix with the
 * same multiplies and adds (no fused multiply-add), so the sums are the same floats. */
static void area_vline_scalar(const uint8_t *s, size_t stride, const area_span *ys, float *t,
                              int from, int n)
{
    for (int r = ys->first; r <= ys->last; r++, s += stride) {
        float w = r == ys->first ? ys->w_first : r == ys->last ? ys->w_last : ys->w_mid;
        if (r == ys->first)
            for (int j = from; j < n; j++) t[j] = w * (float)s[j];
        else
            for (int j = from; j < n; j++) t[j] += w * (float)s[j];
    }
}

/* Horizontal pass: adds to acc the part of each output pixel's box that lies in source
 * columns [c0, c1), whose vertical sums t holds from column c0 on. Output pixel i
 * covers source columns xs[i].first..xs[i].last; inlined with cn constant. */
static inline __attribute__((always_inline)) void area_hline(const float *t, int c0, int c1,
                                                             const area_span *xs, int n,
                                                             float *acc, int cn)
{
    for (int i = 0; i < n; i++) {
        const area_span *a = &xs[i];
        if (a->last < c0)
            continue;
        if (a->first >= c1)
            break;
        /* taps first (w_first), first+1..last-1 (w_mid), last (w_last), in order,
         * cut to [c0, c1) */
        int k = a->first > c0 ? a->first : c0, hi = a->last < c1 - 1 ? a->last : c1 - 1;
        int mid_end = hi < a->last ? hi + 1 : a->last;
        float v[4];
        for (int c = 0; c < cn; c++) v[c] = acc[i * cn + c];
        const float *p = t + (k - c0) * cn;
        if (k == a->first) {
            for (int c = 0; c < cn; c++) v[c] += a->w_first * p[c];
            k++, p += cn;
        }
        for (; k < mid_end; k++, p += cn)
            for (int c = 0; c < cn; c++) v[c] += a->w_mid * p[c];
        if (k == a->last && k <= hi)
            for (int c = 0; c < cn; c++) v[c] += a->w_last * p[c];
        for (int c = 0; c < cn; c++) acc[i * cn + c] = v[c];
    }
}

/* Rounds to nearest, ties to even, as lrintf does, for 0 <= v < 2^22 (adding 1.5 * 2^23
 * leaves no fraction bits), and clamps to a byte. */
static inline uint8_t area_round(float v)
{
    if (!(v > 0.f))
        return 0;
    if (v >= 255.f)
        return 255;
    return (uint8_t)(int)((v + 0x1.8p23f) - 0x1.8p23f);
}

/* Separable: for each output row, the source rows it covers are summed with their
 * weights into floats (vectorised), then each output pixel sums its columns of that. */
static void resize_area_general(const ffu_image *src, ffu_image *dst, int isa)
{
    int cn = ffu_pixfmt_bpp(src->fmt), chunk = AREA_CHUNK / cn;
    double scx = (double)src->width / dst->width, scy = (double)src->height / dst->height;
    area_span xs[FFU_RESIZE_TILE];
    float acc[FFU_RESIZE_TILE * 4];
    _Alignas(32) float t[AREA_CHUNK];
    for (int x0 = 0; x0 < dst->width; x0 += FFU_RESIZE_TILE) {
        int n = dst->width - x0 < FFU_RESIZE_TILE ? dst->width - x0 : FFU_RESIZE_TILE;
        for (int i = 0; i < n; i++) xs[i] = area_coef(x0 + i, scx, src->width);
        int first = xs[0].first, end = xs[n - 1].last + 1;
        for (int y = 0; y < dst->height; y++) {
            area_span ys = area_coef(y, scy, src->height);
            memset(acc, 0, sizeof(float) * (size_t)(n * cn));
            for (int c0 = first; c0 < end; c0 += chunk) {
                int c1 = end - c0 < chunk ? end : c0 + chunk, m = (c1 - c0) * cn, done = 0;
                const uint8_t *s = src->data[0] + (size_t)ys.first * src->stride[0] +
                                   (size_t)c0 * cn;
                if (isa >= FFU_ISA_AVX2)
                    done = ffu_resize_area_vline_avx2(s, (size_t)src->stride[0], ys.last -
                                                      ys.first + 1, ys.w_first, ys.w_mid,
                                                      ys.w_last, t, m);
                area_vline_scalar(s, (size_t)src->stride[0], &ys, t, done, m);
                switch (cn) {
                case 1: area_hline(t, c0, c1, xs, n, acc, 1); break;
                case 3: area_hline(t, c0, c1, xs, n, acc, 3); break;
                default: area_hline(t, c0, c1, xs, n, acc, 4); break;
                }
            }
            uint8_t *d = dst->data[0] + (size_t)y * dst->stride[0] + (size_t)x0 * cn;
            int done = isa >= FFU_ISA_AVX2 ? ffu_resize_area_store_avx2(acc, d, n * cn) : 0;
            for (int j = done; j < n * cn; j++) d[j] = area_round(acc[j]);
        }
    }
}

/* ---- entry points ----------------------------------------------------------------- */

ffu_status ffu_image_resize_impl(const ffu_image *src, ffu_image *dst, ffu_interp interp,
                                 int isa)
{
    ffu_status st = ffu_image_check_packed_pair(src, dst, "resize");
    if (st < 0) return st;
    isa = ffu_image_isa_resolve(isa);
    switch (interp) {
    case FFU_INTERP_NEAREST:
        resize_nearest(src, dst);
        return FFU_OK;
    case FFU_INTERP_BILINEAR:
        resize_bilinear(src, dst, isa);
        return FFU_OK;
    case FFU_INTERP_AREA: {
        int sw = src->width, sh = src->height, dw = dst->width, dh = dst->height;
        if (dw > sw || dh > sh) {
            resize_bilinear(src, dst, isa);
        } else if (sw % dw == 0 && sh % dh == 0 && (sw / dw) * (sh / dh) <= AREA_FAST_MAX) {
            resize_area_int(src, dst, sw / dw, sh / dh);
        } else {
            resize_area_general(src, dst, isa);
        }
        return FFU_OK;
    }
    default:
        return ffu_error_set(FFU_ERR_INVALID, "resize: unknown interpolation %d", (int)interp);
    }
}

ffu_status ffu_image_resize(const ffu_image *src, ffu_image *dst, ffu_interp interp)
{
    return ffu_image_resize_impl(src, dst, interp, FFU_ISA_AUTO);
}
