/* Piecewise-affine warp (a mesh of triangles, each with its own affine map) and polygon
 * masks: the geometry half of the mesh face swapper.
 *
 * Both rasterisers decide "is this pixel centre inside?" with one exact rule, so a mesh
 * of triangles and the polygon of its outline cover the same pixels, and triangles that
 * share an edge never leave a gap or both write a pixel:
 *   - vertices are rounded to 1/256 px and every test is done in 64-bit integers;
 *   - a centre p counts as inside when p + d lies strictly inside, for an infinitesimal
 *     d = (-e, e^2): on a shared edge exactly one side wins, at a shared vertex exactly
 *     one triangle. For a triangle with edges a->b oriented so the inside is
 *     E(p) = cross(b - a, p - a) > 0, that is: E > 0, or E == 0 and the edge "owns" its
 *     points (dy > 0, or dy == 0 and dx > 0). For a polygon it is the non-zero winding
 *     number of p + d, counted along the row (edges cover rows ymin <= y < ymax, and a
 *     crossing at x_c counts for the pixels x <= x_c).
 * Each covered pixel samples the source bilinearly at the triangle's affine image of
 * the pixel centre, with the fixed-point numbers of ffu_image_warp_affine (1/1024 px
 * positions cut to 1/32 px, exact integer weights), edges replicated. Interior runs of
 * eight pixels go through the affine warp's AVX2 row kernel, which computes the same
 * integers (so scalar and AVX2 give the same bytes). Nothing is allocated except for
 * polygons of more than STACK_EDGES vertices. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blend_internal.h"
#include "facefuse/image.h"
#include "kernels_internal.h"

#define SUB_BITS 8
#define SUB (1 << SUB_BITS)
/* Coordinates are clamped to +-2^20 px so every product below fits in int64 (|coord| <
 * 2^28 in 1/256 px, differences < 2^29, products < 2^58). */
#define COORD_LIMIT 1048576.0
#define STACK_EDGES 256

static int64_t to_fix(float v)
{
    double d = (double)v;
    if (d > COORD_LIMIT) d = COORD_LIMIT;
    if (d < -COORD_LIMIT) d = -COORD_LIMIT;
    return (int64_t)llrint(d * SUB);
}

static int64_t floor_div(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b) /* b > 0 */ { return -floor_div(-a, b); }

static int all_finite(const float *xy, int n)
{
    for (int i = 0; i < 2 * n; i++)
        if (!isfinite(xy[i])) return 0;
    return 1;
}

static ffu_status check_mask(const ffu_image *m, int w, int h, const char *op)
{
    if (!m || m->fmt != FFU_PIX_GRAY8 || !m->data[0] || m->stride[0] < m->width)
        return ffu_error_set(FFU_ERR_INVALID, "%s: mask must be a GRAY8 image", op);
    if (w > 0 && (m->width != w || m->height != h))
        return ffu_error_set(FFU_ERR_INVALID, "%s: mask is %dx%d, image is %dx%d", op, m->width,
                             m->height, w, h);
    if (m->width <= 0 || m->height <= 0 || m->width > FFU_IMAGE_MAX_DIM ||
        m->height > FFU_IMAGE_MAX_DIM)
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad mask size %dx%d", op, m->width, m->height);
    return FFU_OK;
}

/* ---- triangle setup ---------------------------------------------------------------- */

typedef struct {
    int64_t x[3], y[3]; /* vertices in 1/256 px, counter-clockwise in the E > 0 sense */
    int64_t dx[3], dy[3];
    int bias[3]; /* 0 when the edge owns points with E == 0, else 1 */
    int y0, y1;  /* pixel rows to visit (clipped) */
} tri_raster;

/* 0 when the triangle is degenerate or misses the rows 0..h-1. */
static int tri_setup(tri_raster *t, const float *a, const float *b, const float *c, int h)
{
    int64_t x[3] = {to_fix(a[0]), to_fix(b[0]), to_fix(c[0])};
    int64_t y[3] = {to_fix(a[1]), to_fix(b[1]), to_fix(c[1])};
    int64_t area = (x[1] - x[0]) * (y[2] - y[0]) - (y[1] - y[0]) * (x[2] - x[0]);
    if (area == 0) return 0;
    if (area < 0) { /* swap b and c so the inside is E > 0 */
        int64_t tx = x[1], ty = y[1];
        x[1] = x[2], y[1] = y[2], x[2] = tx, y[2] = ty;
    }
    int64_t ymin = y[0], ymax = y[0];
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3;
        t->x[i] = x[i], t->y[i] = y[i];
        t->dx[i] = x[j] - x[i], t->dy[i] = y[j] - y[i];
        t->bias[i] = (t->dy[i] > 0 || (t->dy[i] == 0 && t->dx[i] > 0)) ? 0 : 1;
        if (y[i] < ymin) ymin = y[i];
        if (y[i] > ymax) ymax = y[i];
    }
    int64_t r0 = ceil_div(ymin, SUB), r1 = floor_div(ymax, SUB);
    if (r0 < 0) r0 = 0;
    if (r1 > h - 1) r1 = h - 1;
    if (r0 > r1) return 0;
    t->y0 = (int)r0, t->y1 = (int)r1;
    return 1;
}

/* Covered pixels [*lo, *hi] of row y, clipped to 0..w-1; 0 when none. */
static int tri_span(const tri_raster *t, int y, int w, int *lo, int *hi)
{
    int64_t l = 0, r = w - 1, Y = (int64_t)y * SUB;
    for (int i = 0; i < 3; i++) {
        /* E(X) = K - dy * SUB * X must be >= bias. */
        int64_t K = t->dx[i] * (Y - t->y[i]) + t->dy[i] * t->x[i];
        int64_t dy = t->dy[i];
        if (dy == 0) {
            if (K < t->bias[i]) return 0;
        } else if (dy > 0) {
            int64_t m = floor_div(K - t->bias[i], dy * SUB);
            if (m < r) r = m;
        } else {
            int64_t m = ceil_div(t->bias[i] - K, -dy * SUB);
            if (m > l) l = m;
        }
        if (l > r) return 0;
    }
    *lo = (int)l, *hi = (int)r;
    return 1;
}

/* ---- sampling ------------------------------------------------------------------------ */

#define FIX_LIMIT (1 << 29)

static int32_t fix_round(double v)
{
    if (!(v > -FIX_LIMIT)) return -FIX_LIMIT;
    if (v > FIX_LIMIT) return FIX_LIMIT;
    return (int32_t)lrint(v);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Bilinear sample at (X, Y) in 1/32 px, edges replicated. */
static void sample_bilinear(const ffu_image *s, int cn, int32_t X, int32_t Y, uint8_t *d)
{
    int sx = X >> FFU_WARP_INTER_BITS, sy = Y >> FFU_WARP_INTER_BITS;
    int fx = X & 31, fy = Y & 31, wx0 = 32 - fx, wy0 = 32 - fy;
    int x0 = clampi(sx, 0, s->width - 1), x1 = clampi(sx + 1, 0, s->width - 1);
    int y0 = clampi(sy, 0, s->height - 1), y1 = clampi(sy + 1, 0, s->height - 1);
    const uint8_t *r0 = s->data[0] + (size_t)y0 * s->stride[0];
    const uint8_t *r1 = s->data[0] + (size_t)y1 * s->stride[0];
    const uint8_t *p00 = r0 + x0 * cn, *p01 = r0 + x1 * cn;
    const uint8_t *p10 = r1 + x0 * cn, *p11 = r1 + x1 * cn;
    for (int c = 0; c < cn; c++)
        d[c] = (uint8_t)(((p00[c] * wx0 + p01[c] * fx) * wy0 + (p10[c] * wx0 + p11[c] * fx) * fy +
                          512) >>
                         10);
}

/* The affine map taking triangle d0 d1 d2 onto s0 s1 s2 (dst pixel -> src position);
 * 0 when it is not finite (a triangle too thin for doubles). */
static int tri_affine(const float *d0, const float *d1, const float *d2, const float *s0,
                      const float *s1, const float *s2, double m[6])
{
    double e1x = (double)d1[0] - d0[0], e1y = (double)d1[1] - d0[1];
    double e2x = (double)d2[0] - d0[0], e2y = (double)d2[1] - d0[1];
    double det = e1x * e2y - e1y * e2x;
    if (det == 0) return 0;
    for (int k = 0; k < 2; k++) {
        double f1 = (double)s1[k] - s0[k], f2 = (double)s2[k] - s0[k];
        double a = (f1 * e2y - f2 * e1y) / det, b = (f2 * e1x - f1 * e2x) / det;
        m[3 * k] = a, m[3 * k + 1] = b;
        m[3 * k + 2] = (double)s0[k] - a * d0[0] - b * d0[1];
    }
    for (int i = 0; i < 6; i++)
        if (!isfinite(m[i])) return 0;
    return 1;
}

ffu_status ffu_image_warp_piecewise_impl(const ffu_image *src, ffu_image *dst, const float *src_xy,
                                         const float *dst_xy, int n_points, const int *tri,
                                         int n_tri, ffu_image *mask, int isa)
{
    ffu_status st = ffu_image_check_packed_pair(src, dst, "warp_piecewise");
    if (st < 0) return st;
    if (!src_xy || !dst_xy || !tri || n_points < 3 || n_tri < 0)
        return ffu_error_set(FFU_ERR_INVALID,
                             "warp_piecewise: need >= 3 points, source and "
                             "destination points and a triangle list (got %d points, %d "
                             "triangles)",
                             n_points, n_tri);
    if (!all_finite(src_xy, n_points) || !all_finite(dst_xy, n_points))
        return ffu_error_set(FFU_ERR_INVALID, "warp_piecewise: a point is NaN or infinite");
    for (int i = 0; i < 3 * n_tri; i++)
        if (tri[i] < 0 || tri[i] >= n_points)
            return ffu_error_set(FFU_ERR_INVALID,
                                 "warp_piecewise: triangle %d uses point %d "
                                 "of %d",
                                 i / 3, tri[i], n_points);
    if (mask && (st = check_mask(mask, dst->width, dst->height, "warp_piecewise")) < 0) return st;
    isa = ffu_image_isa_resolve(isa);
    int cn = ffu_pixfmt_bpp(src->fmt);
    int simd = isa >= FFU_ISA_AVX2 && (cn == 3 || cn == 4);
    const int tile = FFU_WARP_TILE;
    _Alignas(32) int32_t adelta[FFU_WARP_TILE], bdelta[FFU_WARP_TILE];
    uint8_t blk_done[FFU_WARP_TILE / 8];

    for (int t = 0; t < n_tri; t++) {
        const int *v = tri + 3 * t;
        const float *d0 = dst_xy + 2 * v[0], *d1 = dst_xy + 2 * v[1], *d2 = dst_xy + 2 * v[2];
        tri_raster r;
        double m[6];
        if (!tri_setup(&r, d0, d1, d2, dst->height)) continue;
        if (!tri_affine(d0, d1, d2, src_xy + 2 * v[0], src_xy + 2 * v[1], src_xy + 2 * v[2], m))
            continue;
        for (int y = r.y0; y <= r.y1; y++) {
            int lo, hi;
            if (!tri_span(&r, y, dst->width, &lo, &hi)) continue;
            uint8_t *drow = dst->data[0] + (size_t)y * dst->stride[0];
            if (mask)
                memset(mask->data[0] + (size_t)y * mask->stride[0] + lo, 255,
                       (size_t)(hi - lo + 1));
            /* As warp.c: per-column and per-row terms each rounded to 1/1024 px, added,
             * then rounded to 1/32 px; the same map gives the same samples. */
            int32_t rx = fix_round((m[1] * y + m[2]) * 1024.0) + 16;
            int32_t ry = fix_round((m[4] * y + m[5]) * 1024.0) + 16;
            for (int x0 = lo; x0 <= hi; x0 += tile) {
                int n = hi - x0 + 1 < tile ? hi - x0 + 1 : tile;
                for (int i = 0; i < n; i++) {
                    double x = x0 + i;
                    adelta[i] = fix_round(m[0] * x * 1024.0);
                    bdelta[i] = fix_round(m[3] * x * 1024.0);
                }
                /* both terms within +-2^29 + 16: the int32 sums cannot overflow */
                ffu_warp_row row = {adelta, bdelta, rx, ry, 5};
                uint8_t *d = drow + (size_t)x0 * cn;
                int nblk = 0;
                if (simd && isa >= FFU_ISA_AVX512)
                    nblk = ffu_warp_bilinear_row_avx512(src->data[0], src->stride[0], src->width,
                                                        src->height, cn, &row, d, n, blk_done);
                else if (simd)
                    nblk = ffu_warp_bilinear_row_avx2(src->data[0], src->stride[0], src->width,
                                                      src->height, cn, &row, d, n, blk_done);
                for (int i = 0; i < n; i++) {
                    if (i >> 3 < nblk && blk_done[i >> 3]) {
                        i |= 7;
                        continue;
                    }
                    sample_bilinear(src, cn, (rx + adelta[i]) >> 5, (ry + bdelta[i]) >> 5,
                                    d + i * cn);
                }
            }
        }
    }
    return FFU_OK;
}

ffu_status ffu_image_warp_piecewise(const ffu_image *src, ffu_image *dst, const float *src_xy,
                                    const float *dst_xy, int n_points, const int *tri, int n_tri,
                                    ffu_image *mask)
{
    return ffu_image_warp_piecewise_impl(src, dst, src_xy, dst_xy, n_points, tri, n_tri, mask,
                                         FFU_ISA_AUTO);
}

ffu_status ffu_mask_fill_triangles(ffu_image *mask, const float *xy, int n_points, const int *tri,
                                   int n_tri, uint8_t value)
{
    ffu_status st = check_mask(mask, 0, 0, "fill_triangles");
    if (st < 0) return st;
    if (!xy || !tri || n_points < 3 || n_tri < 0)
        return ffu_error_set(FFU_ERR_INVALID,
                             "fill_triangles: need >= 3 points and a "
                             "triangle list (got %d points, %d triangles)",
                             n_points, n_tri);
    if (!all_finite(xy, n_points))
        return ffu_error_set(FFU_ERR_INVALID, "fill_triangles: a point is NaN or infinite");
    for (int i = 0; i < 3 * n_tri; i++)
        if (tri[i] < 0 || tri[i] >= n_points)
            return ffu_error_set(FFU_ERR_INVALID,
                                 "fill_triangles: triangle %d uses point %d "
                                 "of %d",
                                 i / 3, tri[i], n_points);
    for (int t = 0; t < n_tri; t++) {
        const int *v = tri + 3 * t;
        tri_raster r;
        if (!tri_setup(&r, xy + 2 * v[0], xy + 2 * v[1], xy + 2 * v[2], mask->height)) continue;
        for (int y = r.y0; y <= r.y1; y++) {
            int lo, hi;
            if (tri_span(&r, y, mask->width, &lo, &hi))
                memset(mask->data[0] + (size_t)y * mask->stride[0] + lo, value,
                       (size_t)(hi - lo + 1));
        }
    }
    return FFU_OK;
}

/* ---- polygons -------------------------------------------------------------------------- */

typedef struct {
    int32_t x;   /* the crossing counts for pixels <= x (clamped to -1..w-1) */
    int32_t dir; /* +1 edge going down (y grows), -1 going up */
} crossing;

typedef struct {
    int64_t ax, ay, bx, by; /* 1/256 px; ay != by */
} edge;

ffu_status ffu_mask_fill_polygon(ffu_image *mask, const float *xy, int n, uint8_t value)
{
    ffu_status st = check_mask(mask, 0, 0, "fill_polygon");
    if (st < 0) return st;
    if (!xy || n < 3)
        return ffu_error_set(FFU_ERR_INVALID, "fill_polygon: need >= 3 points (got %d)", n);
    if (n > FFU_IMAGE_MAX_DIM * 64)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "fill_polygon: %d points", n);
    if (!all_finite(xy, n))
        return ffu_error_set(FFU_ERR_INVALID, "fill_polygon: a point is NaN or infinite");
    crossing cr_stack[STACK_EDGES], *cr = cr_stack;
    edge ed_stack[STACK_EDGES], *ed = ed_stack;
    void *heap = NULL;
    if (n > STACK_EDGES) {
        if (!(heap = malloc((size_t)n * (sizeof *cr + sizeof *ed))))
            return ffu_error_set(FFU_ERR_NOMEM, "fill_polygon: %d points", n);
        ed = heap;
        cr = (crossing *)(ed + n);
    }

    int64_t ymin = INT64_MAX, ymax = INT64_MIN;
    int ne = 0;
    for (int i = 0; i < n; i++) {
        int j = i + 1 == n ? 0 : i + 1;
        edge e = {to_fix(xy[2 * i]), to_fix(xy[2 * i + 1]), to_fix(xy[2 * j]),
                  to_fix(xy[2 * j + 1])};
        if (e.ay < ymin) ymin = e.ay;
        if (e.ay > ymax) ymax = e.ay;
        if (e.ay != e.by) ed[ne++] = e; /* horizontal edges never cross a row */
    }
    /* Rows whose centre Y satisfies ymin <= Y < ymax. */
    int64_t r0 = ceil_div(ymin, SUB), r1 = ceil_div(ymax, SUB) - 1;
    if (r0 < 0) r0 = 0;
    if (r1 > mask->height - 1) r1 = mask->height - 1;
    int w = mask->width;
    for (int64_t y = r0; y <= r1; y++) {
        int64_t Y = y * SUB;
        int nc = 0;
        for (int i = 0; i < ne; i++) {
            const edge *e = &ed[i];
            int64_t lo = e->ay < e->by ? e->ay : e->by, hi = e->ay < e->by ? e->by : e->ay;
            if (Y < lo || Y >= hi) continue;
            /* floor(x_c / SUB) with x_c = ax + (Y - ay) (bx - ax) / (by - ay), exactly. */
            int64_t num = e->ax * (e->by - e->ay) + (Y - e->ay) * (e->bx - e->ax);
            int64_t den = (e->by - e->ay) * SUB;
            if (den < 0) num = -num, den = -den;
            int64_t f = floor_div(num, den);
            cr[nc].x = (int32_t)(f < -1 ? -1 : f > w - 1 ? w - 1 : f);
            cr[nc].dir = e->by > e->ay ? 1 : -1;
            nc++;
        }
        for (int i = 1; i < nc; i++) { /* insertion sort: a handful per row */
            crossing c = cr[i];
            int j = i - 1;
            for (; j >= 0 && cr[j].x > c.x; j--)
                cr[j + 1] = cr[j];
            cr[j + 1] = c;
        }
        /* Pixels in (x_{k-1}, x_k] have the winding of the crossings k, k+1, ...; the
         * crossings of a closed outline sum to zero, so the start is 0. */
        uint8_t *row = mask->data[0] + (size_t)y * mask->stride[0];
        int wind = 0, prev = -1;
        for (int k = 0; k < nc; k++) {
            if (wind != 0 && cr[k].x > prev)
                memset(row + prev + 1, value, (size_t)(cr[k].x - prev));
            wind += cr[k].dir;
            prev = cr[k].x;
        }
    }
    free(heap);
    return FFU_OK;
}
