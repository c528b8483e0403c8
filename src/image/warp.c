/* Affine warp of packed u8 images (nearest and bilinear, three border modes) and the
 * inverse of an affine matrix. The scalar code here is the reference; warp_avx2.c and
 * warp_avx512.c do blocks of eight interior bilinear pixels with the same integers.
 *
 * Positions follow OpenCV's warpAffine: per-column terms m0*x, m3*x and a per-row term
 * are rounded to 1/1024 px and added in integers, then cut to 1/32 px for bilinear
 * (weights are then exact integers) or rounded to whole pixels for nearest. That keeps
 * results within +-1 of OpenCV and identical between our code paths. Maps that put every
 * output pixel on a whole source pixel (flips, transposes, whole offsets) are copies,
 * done as such (whole_pixel_map). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "facefuse/image.h"
#include "kernels_internal.h"

ffu_status ffu_affine_invert(const double m[6], double out[6])
{
    double a = m[0], b = m[1], c = m[2], d = m[3], e = m[4], f = m[5];
    double det = a * e - b * d;
    double big = fmax(fmax(fabs(a), fabs(b)), fmax(fabs(d), fabs(e)));
    int finite = 1;
    for (int i = 0; i < 6; i++) finite &= isfinite(m[i]);
    /* Relative test: scaling a matrix must not change whether it counts as singular. */
    if (!finite || !isfinite(det) || big == 0 || fabs(det) <= 1e-12 * big * big) {
        memset(out, 0, 6 * sizeof *out);
        return ffu_error_set(FFU_ERR_INVALID, "affine matrix is singular or not finite "
                             "(det %g)", det);
    }
    double r[6] = {e / det, -b / det, (b * f - e * c) / det,
                   -d / det, a / det, (d * c - a * f) / det};
    memcpy(out, r, sizeof r);
    return FFU_OK;
}

/* Fixed-point positions are clamped to +-2^29 / 1024 px (far outside any image), so
 * the integer sums below cannot overflow whatever the matrix. NaN lands outside. */
#define FIX_LIMIT (1 << 29)

static int32_t fix_round(double v)
{
    if (!(v > -FIX_LIMIT)) return -FIX_LIMIT;
    if (v > FIX_LIMIT) return FIX_LIMIT;
    return (int32_t)lrint(v);
}

static int border_index(int p, int n, ffu_border border)
{
    if ((unsigned)p < (unsigned)n) return p;
    if (border == FFU_BORDER_CONSTANT) return -1;
    if (border == FFU_BORDER_REPLICATE) return p < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    int period = 2 * (n - 1); /* reflect-101: ... 2 1 | 0 1 2 ... n-1 | n-2 ... */
    p %= period;
    if (p < 0) p += period;
    return p < n ? p : period - p;
}

typedef struct {
    const uint8_t *src;
    int sstride, sw, sh, cn;
    ffu_border border;
    uint8_t bv[4];
} warp_ctx;

static void pixel_nearest(const warp_ctx *w, int sx, int sy, uint8_t *d)
{
    int x = border_index(sx, w->sw, w->border), y = border_index(sy, w->sh, w->border);
    if (x < 0 || y < 0) {
        memcpy(d, w->bv, (size_t)w->cn);
        return;
    }
    memcpy(d, w->src + (size_t)y * w->sstride + (size_t)x * w->cn, (size_t)w->cn);
}

/* X, Y in 1/32 px. */
static void pixel_bilinear(const warp_ctx *w, int32_t X, int32_t Y, uint8_t *d)
{
    int sx = X >> FFU_WARP_INTER_BITS, sy = Y >> FFU_WARP_INTER_BITS;
    int fx = X & 31, fy = Y & 31, cn = w->cn;
    int wx0 = 32 - fx, wy0 = 32 - fy;
    if ((unsigned)sx < (unsigned)(w->sw - 1) && (unsigned)sy < (unsigned)(w->sh - 1)) {
        const uint8_t *p = w->src + (size_t)sy * w->sstride + (size_t)sx * cn;
        const uint8_t *q = p + w->sstride;
        for (int c = 0; c < cn; c++)
            d[c] = (uint8_t)(((p[c] * wx0 + p[c + cn] * fx) * wy0 +
                              (q[c] * wx0 + q[c + cn] * fx) * fy + 512) >> 10);
        return;
    }
    if (w->border == FFU_BORDER_CONSTANT &&
        (sx >= w->sw || sx + 1 < 0 || sy >= w->sh || sy + 1 < 0)) {
        memcpy(d, w->bv, (size_t)cn);
        return;
    }
    /* Edge: each of the four neighbours through the border rule (-1 = border value). */
    int x0 = border_index(sx, w->sw, w->border), x1 = border_index(sx + 1, w->sw, w->border);
    int y0 = border_index(sy, w->sh, w->border), y1 = border_index(sy + 1, w->sh, w->border);
    const uint8_t *r0 = y0 >= 0 ? w->src + (size_t)y0 * w->sstride : NULL;
    const uint8_t *r1 = y1 >= 0 ? w->src + (size_t)y1 * w->sstride : NULL;
    for (int c = 0; c < cn; c++) {
        int b = w->bv[c];
        int p00 = r0 && x0 >= 0 ? r0[x0 * cn + c] : b, p01 = r0 && x1 >= 0 ? r0[x1 * cn + c] : b;
        int p10 = r1 && x0 >= 0 ? r1[x0 * cn + c] : b, p11 = r1 && x1 >= 0 ? r1[x1 * cn + c] : b;
        d[c] = (uint8_t)(((p00 * wx0 + p01 * fx) * wy0 + (p10 * wx0 + p11 * fx) * fy + 512) >> 10);
    }
}

/* 1 when every bilinear position of a row segment from (Xa, Ya) to (Xb, Yb), 1/32 px
 * (each coordinate moves one way along a row), has its four neighbours outside an
 * sw x sh source: what pixel_bilinear gives the border value for. */
static int all_outside(int32_t Xa, int32_t Ya, int32_t Xb, int32_t Yb, int sw, int sh)
{
    int xa = Xa >> FFU_WARP_INTER_BITS, xb = Xb >> FFU_WARP_INTER_BITS;
    int ya = Ya >> FFU_WARP_INTER_BITS, yb = Yb >> FFU_WARP_INTER_BITS;
    int xlo = xa < xb ? xa : xb, xhi = xa < xb ? xb : xa;
    int ylo = ya < yb ? ya : yb, yhi = ya < yb ? yb : ya;
    return xhi + 1 < 0 || xlo >= sw || yhi + 1 < 0 || ylo >= sh;
}

/* Rows of output ahead of the one being computed whose source lines are asked for. */
#define WARP_PREFETCH_ROWS 2

/* Asks for the source lines that output row y, columns [x0, x0 + n), reads (both rows
 * under each bilinear position), so that they come in while the rows before it are
 * computed. A face crop's source has usually been pushed out of the caches by the
 * models run since the image came in, and a rotated row walks across source rows,
 * where the hardware prefetchers do not follow it. The row's segment is cut into pieces
 * of at most 16 source columns (48 or 64 bytes, under a line); for each piece, a
 * prefetch at its start column in every source row from the one under its start to
 * the one under its end, plus one. Along an unrotated row shrunk more than 4x (a 1080p
 * frame's letterbox for a detector) the reads run along two source rows, which the
 * hardware prefetcher follows once started, and a prefetch per piece would be one per
 * two or three output pixels: there only the first two pieces. Positions in 16.16
 * fixed point; maps that reach far outside the image are left alone. Measured in
 * docs/BENCHMARKS.md ("Prefetching the warp's source"). */
static void prefetch_row(const warp_ctx *w, const double m[6], int y, int x0, int n)
{
    const double one = 65536.0, lim = 1e6;
    const double ax = fabs(m[0]);
    const int s = ax * n <= 16 ? n : ax > 16 ? 1 : (int)(16 / ax);
    const int np = m[1] == 0 && m[3] == 0 && ax > 4 && 2 * s < n ? 2 * s : n;
    const double X0 = m[0] * x0 + m[1] * y + m[2], Y0 = m[3] * x0 + m[4] * y + m[5];
    const double Xe = X0 + m[0] * (n - 1), Ye = Y0 + m[3] * (n - 1);
    if (!(fabs(X0) < lim && fabs(Y0) < lim && fabs(Xe) < lim && fabs(Ye) < lim)) return;
    /* a row wholly beside the image (the letterbox's bars) reads nothing */
    if (fmax(X0, Xe) < -1 || fmin(X0, Xe) >= w->sw || fmax(Y0, Ye) < -1 || fmin(Y0, Ye) >= w->sh)
        return;
    int64_t X = (int64_t)(X0 * one), Y = (int64_t)(Y0 * one);
    const int64_t dX = (int64_t)(m[0] * s * one), dY = (int64_t)(m[3] * s * one);
    const int64_t XE = (int64_t)(Xe * one), YE = (int64_t)(Ye * one);
    for (int i = 0; i < np; i += s) {
        /* the piece's end: s columns on, or the row's last */
        const int64_t X1 = i + s < n ? X + dX : XE, Y1 = i + s < n ? Y + dY : YE;
        int64_t ix = X >> 16, ylo = (Y < Y1 ? Y : Y1) >> 16, yhi = ((Y < Y1 ? Y1 : Y) >> 16) + 1;
        if (ix < 0) ix = 0;
        if (ylo < 0) ylo = 0;
        if (yhi > w->sh - 1) yhi = w->sh - 1;
        if (ix < w->sw) {
            const uint8_t *p = w->src + (size_t)ix * (size_t)w->cn;
            for (int64_t r = ylo; r <= yhi; r++)
                __builtin_prefetch(p + (size_t)r * (size_t)w->sstride, 0, 3);
        }
        X = X1, Y = Y1;
    }
}

/* Maps whose every output pixel lands on a whole source pixel: a 2x2 part of 0 and +-1
 * entries (a flip, a transpose, a quarter turn) and whole offsets. Both interpolations
 * then give that pixel (or the border), so the warp is a copy: MTCNN's transposed
 * bands and crops at integer offsets take this. Pixels whose source lies outside go
 * through pixel_nearest, which applies the border mode. */
static int whole_pixel_map(const double m[6])
{
    for (int i = 0; i < 6; i++)
        if (!(fabs(m[i]) < 1e9) || m[i] != floor(m[i])) return 0;
    int a = (int)m[0], b = (int)m[1], c = (int)m[3], d = (int)m[4];
    return (a * a + c * c == 1) && (b * b + d * d == 1) && a * b + c * d == 0;
}

static void warp_whole_pixels(const warp_ctx *w, ffu_image *dst, const double m[6])
{
    int cn = w->cn, ax = (int)m[0], bx = (int)m[1], ay = (int)m[3], by = (int)m[4];
    ptrdiff_t step = (ptrdiff_t)ax * cn + (ptrdiff_t)ay * w->sstride;
    for (int y = 0; y < dst->height; y++) {
        int64_t sx0 = (int64_t)bx * y + (int64_t)m[2], sy0 = (int64_t)by * y + (int64_t)m[5];
        uint8_t *d = dst->data[0] + (size_t)y * dst->stride[0];
        int x = 0;
        while (x < dst->width) {
            int64_t sx = sx0 + (int64_t)ax * x, sy = sy0 + (int64_t)ay * x;
            if (sx < 0 || sy < 0 || sx >= w->sw || sy >= w->sh) {
                pixel_nearest(w, (int)sx, (int)sy, d + (size_t)x * cn);
                x++;
                continue;
            }
            /* the run of pixels from x on whose sources stay inside */
            int64_t run = dst->width - x;
            if (ax > 0) run = run < w->sw - sx ? run : w->sw - sx;
            if (ax < 0) run = run < sx + 1 ? run : sx + 1;
            if (ay > 0) run = run < w->sh - sy ? run : w->sh - sy;
            if (ay < 0) run = run < sy + 1 ? run : sy + 1;
            const uint8_t *s = w->src + (size_t)sy * w->sstride + (size_t)sx * cn;
            uint8_t *o = d + (size_t)x * cn;
            if (step == cn)
                memcpy(o, s, (size_t)run * cn);
            else if (cn == 3)
                for (int64_t i = 0; i < run; i++, s += step, o += 3)
                    o[0] = s[0], o[1] = s[1], o[2] = s[2];
            else
                for (int64_t i = 0; i < run; i++, s += step, o += cn) memcpy(o, s, (size_t)cn);
            x += (int)run;
        }
    }
}

ffu_status ffu_image_warp_affine_impl(const ffu_image *src, ffu_image *dst, const double m[6],
                                      ffu_interp interp, ffu_border border,
                                      const uint8_t border_value[4], int isa)
{
    ffu_status st = ffu_image_check_packed_pair(src, dst, "warp_affine");
    if (st < 0) return st;
    if (!m) return ffu_error_set(FFU_ERR_INVALID, "warp_affine: NULL matrix");
    if (interp != FFU_INTERP_NEAREST && interp != FFU_INTERP_BILINEAR)
        return ffu_error_set(FFU_ERR_INVALID, "warp_affine: interpolation %d not supported "
                             "(nearest or bilinear)", (int)interp);
    if ((unsigned)border >= FFU_BORDER_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "warp_affine: unknown border mode %d", (int)border);
    isa = ffu_image_isa_resolve(isa);

    warp_ctx w = {src->data[0], src->stride[0], src->width, src->height,
                  ffu_pixfmt_bpp(src->fmt), border, {0, 0, 0, 0}};
    if (border_value) memcpy(w.bv, border_value, 4);
    if (whole_pixel_map(m)) {
        warp_whole_pixels(&w, dst, m);
        return FFU_OK;
    }
    const double ab_scale = 1 << FFU_WARP_AB_BITS;
    int nearest = interp == FFU_INTERP_NEAREST;
    /* Nearest rounds to the closest pixel; bilinear to the closest 1/32 px. */
    int round_delta = nearest ? 1 << (FFU_WARP_AB_BITS - 1)
                              : 1 << (FFU_WARP_AB_BITS - FFU_WARP_INTER_BITS - 1);
    int shift = nearest ? FFU_WARP_AB_BITS : FFU_WARP_AB_BITS - FFU_WARP_INTER_BITS;
    int cn = w.cn;
    int simd = !nearest && isa >= FFU_ISA_AVX2 && (cn == 3 || cn == 4);

    _Alignas(32) int32_t adelta[FFU_WARP_TILE], bdelta[FFU_WARP_TILE];
    uint8_t blk_done[FFU_WARP_TILE / 8];
    for (int x0 = 0; x0 < dst->width; x0 += FFU_WARP_TILE) {
        int n = dst->width - x0 < FFU_WARP_TILE ? dst->width - x0 : FFU_WARP_TILE;
        for (int i = 0; i < n; i++) {
            adelta[i] = fix_round(m[0] * (x0 + i) * ab_scale);
            bdelta[i] = fix_round(m[3] * (x0 + i) * ab_scale);
        }
        for (int y = 0; y < WARP_PREFETCH_ROWS && y < dst->height; y++)
            prefetch_row(&w, m, y, x0, n);
        for (int y = 0; y < dst->height; y++) {
            if (y + WARP_PREFETCH_ROWS < dst->height)
                prefetch_row(&w, m, y + WARP_PREFETCH_ROWS, x0, n);
            ffu_warp_row r = {adelta, bdelta, fix_round((m[1] * y + m[2]) * ab_scale) + round_delta,
                              fix_round((m[4] * y + m[5]) * ab_scale) + round_delta, shift};
#define ROW_X(i) ((r.x0 + adelta[i]) >> shift)
#define ROW_Y(i) ((r.y0 + bdelta[i]) >> shift)
            uint8_t *d = dst->data[0] + (size_t)y * dst->stride[0] + (size_t)x0 * cn;
            if (nearest) {
                for (int i = 0; i < n; i++) pixel_nearest(&w, ROW_X(i), ROW_Y(i), d + i * cn);
                continue;
            }
            if (border == FFU_BORDER_CONSTANT &&
                all_outside(ROW_X(0), ROW_Y(0), ROW_X(n - 1), ROW_Y(n - 1), w.sw, w.sh)) {
                /* the letterbox's bars: every pixel's neighbours outside the source; one
                 * pixel, then copies of what is filled, doubling */
                size_t row = (size_t)n * (size_t)cn, done = (size_t)cn;
                memcpy(d, w.bv, (size_t)cn);
                for (; done < row; done *= 2)
                    memcpy(d + done, d, done < row - done ? done : row - done);
                continue;
            }
            int nblk = 0;
            if (simd && isa >= FFU_ISA_AVX512)
                nblk = ffu_warp_bilinear_row_avx512(w.src, w.sstride, w.sw, w.sh, cn, &r, d, n,
                                                    blk_done);
            else if (simd)
                nblk = ffu_warp_bilinear_row_avx2(w.src, w.sstride, w.sw, w.sh, cn, &r, d, n,
                                                  blk_done);
            for (int i = 0; i < n; i++) {
                if (i >> 3 < nblk && blk_done[i >> 3]) {
                    i |= 7;
                    continue;
                }
                pixel_bilinear(&w, ROW_X(i), ROW_Y(i), d + i * cn);
            }
#undef ROW_X
#undef ROW_Y
        }
    }
    return FFU_OK;
}

ffu_status ffu_image_warp_affine(const ffu_image *src, ffu_image *dst, const double m[6],
                                 ffu_interp interp, ffu_border border,
                                 const uint8_t border_value[4])
{
    return ffu_image_warp_affine_impl(src, dst, m, interp, border, border_value, FFU_ISA_AUTO);
}
