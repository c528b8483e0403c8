/* Blending primitives for pasting a face back: Gaussian blur of a mask (feathering),
 * alpha blending through a u8 mask, and Poisson seamless cloning.
 *
 * Poisson cloning (Perez et al. 2003, "guided interpolation"; OpenCV seamlessClone
 * NORMAL_CLONE) wants f inside the mask region O with the source's gradients and the
 * destination's values just outside: for every p in O,
 *     sum_q (f_p - f_q) = sum_q (g_p - g_q)      over the 4-neighbours q of p,
 * with f_q = dst_q for q outside O (g = the source). Writing f = g + h turns this into
 * the Laplace equation for the correction h, with h = dst - src on the pixels around O:
 * a smooth membrane, which multigrid solves in a few V-cycles. Neighbours beyond the
 * destination image are left out of the sum (a reflecting, Neumann edge) so masks may
 * touch or cross the image border. The solver works on the mask's bounding box plus a
 * one-pixel ring (red-black Gauss-Seidel smoothing, 2 + 2 sweeps, coarsening by 2x2
 * cells that are unknown when any child is, full-weighted residual sums down, bilinear
 * corrections up) and stops once a V-cycle moves no value by FFU_CLONE_TOL or more. All
 * its memory lives in an ffu_clone_ctx that grows to the largest region seen, so a
 * caller that keeps one context allocates nothing per frame. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blend_internal.h"
#include "blur_passes.h"
#include "facefuse/image.h"
#include "kernels_internal.h"

static int64_t clip64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static ffu_status check_gray(const ffu_image *m, int w, int h, const char *op, const char *what)
{
    if (!m || m->fmt != FFU_PIX_GRAY8 || !m->data[0] || m->width <= 0 || m->height <= 0 ||
        m->stride[0] < m->width)
        return ffu_error_set(FFU_ERR_INVALID, "%s: %s must be a GRAY8 image", op, what);
    if (m->width != w || m->height != h)
        return ffu_error_set(FFU_ERR_INVALID, "%s: %s is %dx%d, needs %dx%d", op, what, m->width,
                             m->height, w, h);
    return FFU_OK;
}

/* ---- Gaussian blur ------------------------------------------------------------------ */

#define BLUR_TILE 512
#define BLUR_MAX_SIGMA 100.0f
#define BLUR_MAX_R 300 /* the radius BLUR_MAX_SIGMA gives */

static int reflect101(int p, int n)
{
    if ((unsigned)p < (unsigned)n) return p;
    if (n == 1) return 0;
    int period = 2 * (n - 1);
    p %= period;
    if (p < 0) p += period;
    return p < n ? p : period - p;
}

ffu_status ffu_mask_gaussian_blur_impl(const ffu_image *src, ffu_image *dst, float sigma, int isa)
{
    ffu_status st = ffu_image_check_packed_pair(src, dst, "gaussian_blur");
    if (st < 0) return st;
    if (src->fmt != FFU_PIX_GRAY8 || src->width != dst->width || src->height != dst->height)
        return ffu_error_set(FFU_ERR_INVALID,
                             "gaussian_blur: needs two GRAY8 images of one "
                             "size, got %s %dx%d -> %dx%d",
                             ffu_pixfmt_name(src->fmt), src->width, src->height, dst->width,
                             dst->height);
    if (!(sigma > 0) || !(sigma <= BLUR_MAX_SIGMA))
        return ffu_error_set(FFU_ERR_INVALID, "gaussian_blur: sigma %g not in (0, %g]",
                             (double)sigma, (double)BLUR_MAX_SIGMA);
    isa = ffu_image_isa_resolve(isa);
    int W = src->width, H = src->height;
    /* OpenCV's kernel size for 8-bit images: round(6 sigma + 1), made odd. */
    int r = ((int)lrintf(sigma * 6 + 1) | 1) / 2;
    if (r > BLUR_MAX_R) r = BLUR_MAX_R;
    float w[BLUR_MAX_R + 1];
    double wd[BLUR_MAX_R + 1], sum = 0;
    for (int k = 0; k <= r; k++) {
        wd[k] = exp(-(double)k * k / (2.0 * sigma * sigma));
        sum += k ? 2 * wd[k] : wd[k];
    }
    for (int k = 0; k <= r; k++)
        w[k] = (float)(wd[k] / sum);

    const uint8_t *rows[2 * BLUR_MAX_R + 1];
    float vbuf[BLUR_TILE + 2 * BLUR_MAX_R], acc[BLUR_TILE];
    for (int y = 0; y < H; y++) {
        for (int k = 0; k <= 2 * r; k++)
            rows[k] = src->data[0] + (size_t)reflect101(y - r + k, H) * src->stride[0];
        uint8_t *drow = dst->data[0] + (size_t)y * dst->stride[0];
        for (int x0 = 0; x0 < W; x0 += BLUR_TILE) {
            int n = W - x0 < BLUR_TILE ? W - x0 : BLUR_TILE;
            int c_lo = x0 - r, c_hi = x0 + n + r; /* columns the tile reads */
            int real_lo = c_lo < 0 ? 0 : c_lo, real_hi = c_hi > W ? W : c_hi;
            if (isa >= FFU_ISA_AVX2)
                ffu_blur_vpass_avx2(rows, real_lo, w, r, real_hi - real_lo,
                                    vbuf + (real_lo - c_lo));
            else
                blur_vpass(rows, real_lo, w, r, real_hi - real_lo, vbuf + (real_lo - c_lo));
            /* Columns beyond the image edges are reflections of real ones. */
            for (int c = c_lo; c < c_hi; c++) {
                if (c == real_lo) c = real_hi;
                if (c >= c_hi) break;
                int j = reflect101(c, W);
                if (j >= real_lo && j < real_hi)
                    vbuf[c - c_lo] = vbuf[j - c_lo];
                else
                    blur_vpass(rows, j, w, r, 1, vbuf + (c - c_lo));
            }
            if (isa >= FFU_ISA_AVX2)
                ffu_blur_hpass_avx2(vbuf, w, r, n, drow + x0);
            else
                blur_hpass(vbuf, w, r, n, acc, drow + x0);
        }
    }
    return FFU_OK;
}

ffu_status ffu_mask_gaussian_blur(const ffu_image *src, ffu_image *dst, float sigma)
{
    return ffu_mask_gaussian_blur_impl(src, dst, sigma, FFU_ISA_AUTO);
}

/* ---- alpha blend ---------------------------------------------------------------------- */

ffu_status ffu_image_blend_mask(ffu_image *dst, const ffu_image *src, const ffu_image *mask, int x,
                                int y)
{
    ffu_status st = ffu_image_check_packed_pair(src, dst, "blend_mask");
    if (st < 0) return st;
    if ((st = check_gray(mask, src->width, src->height, "blend_mask", "mask")) < 0) return st;
    int cn = ffu_pixfmt_bpp(src->fmt);
    /* Source rectangle [i0, i1) x [j0, j1) that lands inside dst. */
    int i0 = (int)clip64(-(int64_t)x, 0, src->width);
    int i1 = (int)clip64((int64_t)dst->width - x, 0, src->width);
    int j0 = (int)clip64(-(int64_t)y, 0, src->height);
    int j1 = (int)clip64((int64_t)dst->height - y, 0, src->height);
    for (int j = j0; j < j1; j++) {
        const uint8_t *s = src->data[0] + (size_t)j * src->stride[0];
        const uint8_t *m = mask->data[0] + (size_t)j * mask->stride[0];
        uint8_t *d = dst->data[0] + (size_t)(y + j) * dst->stride[0] + (int64_t)x * cn;
        for (int i = i0; i < i1; i++) {
            int a = m[i];
            if (a == 0) continue;
            for (int c = 0; c < cn; c++) {
                /* round((d (255 - a) + s a) / 255), exact for every input */
                int v = d[i * cn + c] * (255 - a) + s[i * cn + c] * a + 128;
                d[i * cn + c] = (uint8_t)((v + (v >> 8)) >> 8);
            }
        }
    }
    return FFU_OK;
}

/* ---- Poisson clone: multigrid on the correction membrane ---------------------------- */

#define MG_MAX_LEVELS 16
#define MG_MAX_CN 4

/* One grid level, padded by one cell of zeros on every side so stencils need no bounds
 * checks: a padding cell is never unknown and its value stays 0, which is exactly "no
 * neighbour" since diag counts only real neighbours. Values are interleaved cn floats. */
typedef struct {
    int w, h, stride; /* stride = w + 2 cells */
    uint8_t *type;    /* 1 = unknown, 0 = fixed (level 0: boundary value; coarser: 0) */
    float *idiag;     /* 1 / (number of real neighbours), 0 when fixed or isolated */
    float *u, *f, *r; /* solution (or correction), right-hand side, residual */
} mg_level;

struct ffu_clone_ctx {
    void *mem;
    size_t cap;
    mg_level lv[MG_MAX_LEVELS];
    int nlev, cn;
    float *prev; /* level-0 values before the last cycle */
};

ffu_status ffu_clone_ctx_create(ffu_clone_ctx **ctx)
{
    if (!ctx) return ffu_error_set(FFU_ERR_INVALID, "clone_ctx_create: NULL out-pointer");
    *ctx = calloc(1, sizeof **ctx);
    if (!*ctx) return ffu_error_set(FFU_ERR_NOMEM, "clone_ctx_create: out of memory");
    return FFU_OK;
}

void ffu_clone_ctx_destroy(ffu_clone_ctx *ctx)
{
    if (!ctx) return;
    free(ctx->mem);
    free(ctx);
}

static size_t align64(size_t v) { return (v + 63) & ~(size_t)63; }

/* Lays out the levels for a w x h problem of cn channels, growing ctx->mem if needed. */
static ffu_status mg_plan(ffu_clone_ctx *ctx, int w, int h, int cn)
{
    int ws[MG_MAX_LEVELS], hs[MG_MAX_LEVELS], n = 0;
    size_t need = 0;
    for (;;) {
        ws[n] = w, hs[n] = h;
        size_t cells = (size_t)(w + 2) * (size_t)(h + 2);
        need += align64(cells) + align64(cells * sizeof(float)) +
                3 * align64(cells * cn * sizeof(float));
        if (n == 0) need += align64(cells * cn * sizeof(float)); /* prev */
        n++;
        if ((w <= 4 && h <= 4) || n == MG_MAX_LEVELS) break;
        w = (w + 1) / 2, h = (h + 1) / 2;
    }
    if (need > ctx->cap) {
        void *m = NULL;
        if (posix_memalign(&m, 64, need) != 0 || !m)
            return ffu_error_set(FFU_ERR_NOMEM, "seamless_clone: %zu bytes of solver memory", need);
        free(ctx->mem);
        ctx->mem = m, ctx->cap = need;
    }
    uint8_t *p = ctx->mem;
    for (int l = 0; l < n; l++) {
        mg_level *L = &ctx->lv[l];
        size_t cells = (size_t)(ws[l] + 2) * (size_t)(hs[l] + 2);
        L->w = ws[l], L->h = hs[l], L->stride = ws[l] + 2;
        L->type = p, p += align64(cells);
        L->idiag = (float *)p, p += align64(cells * sizeof(float));
        L->u = (float *)p, p += align64(cells * cn * sizeof(float));
        L->f = (float *)p, p += align64(cells * cn * sizeof(float));
        L->r = (float *)p, p += align64(cells * cn * sizeof(float));
        if (l == 0) ctx->prev = (float *)p, p += align64(cells * cn * sizeof(float));
        memset(L->u, 0, cells * cn * sizeof(float));
        memset(L->f, 0, cells * cn * sizeof(float));
        memset(L->r, 0, cells * cn * sizeof(float));
    }
    ctx->nlev = n, ctx->cn = cn;
    return FFU_OK;
}

/* idiag from the unknown cells' count of real (in-grid) neighbours. */
static void mg_diag(mg_level *L)
{
    int s = L->stride;
    for (int j = 0; j < L->h + 2; j++)
        for (int i = 0; i < s; i++) {
            size_t p = (size_t)j * s + i;
            L->idiag[p] = 0;
            if (!L->type[p]) continue;
            int nb = (i > 1) + (i < L->w) + (j > 1) + (j < L->h);
            L->idiag[p] = nb ? 1.0f / (float)nb : 0.0f;
        }
}

/* A coarse cell is unknown only when all its children are: the coarse problem then
 * keeps fixed (zero-correction) cells around it, as the fine one does. Marking a cell
 * unknown when any child is would swallow the one-pixel boundary ring and leave a
 * singular, Neumann-only problem on the coarse grids. */
static void mg_coarsen_types(const mg_level *F, mg_level *C)
{
    memset(C->type, 0, (size_t)C->stride * (size_t)(C->h + 2));
    for (int J = 0; J < C->h; J++)
        for (int I = 0; I < C->w; I++) {
            int all = 1;
            for (int j = 2 * J; j < 2 * J + 2 && j < F->h; j++)
                for (int i = 2 * I; i < 2 * I + 2 && i < F->w; i++)
                    all &= F->type[(size_t)(j + 1) * F->stride + i + 1];
            C->type[(size_t)(J + 1) * C->stride + I + 1] = (uint8_t)all;
        }
    mg_diag(C);
}

/* Red-black Gauss-Seidel sweeps (red then black) over the unknown cells. */
static void mg_smooth(mg_level *L, int cn, int sweeps)
{
    int s = L->stride;
    for (int it = 0; it < sweeps; it++)
        for (int colour = 0; colour < 2; colour++)
            for (int j = 1; j <= L->h; j++) {
                size_t row = (size_t)j * s;
                for (int i = 1 + ((j + 1 + colour) & 1); i <= L->w; i += 2) {
                    size_t p = row + i;
                    if (!L->type[p]) continue;
                    float id = L->idiag[p];
                    float *u = L->u;
                    for (int c = 0; c < cn; c++) {
                        float nsum = u[(p - 1) * cn + c] + u[(p + 1) * cn + c] +
                                     u[(p - s) * cn + c] + u[(p + s) * cn + c];
                        u[p * cn + c] = (L->f[p * cn + c] + nsum) * id;
                    }
                }
            }
}

static void mg_residual(mg_level *L, int cn)
{
    int s = L->stride;
    for (int j = 1; j <= L->h; j++)
        for (int i = 1; i <= L->w; i++) {
            size_t p = (size_t)j * s + i;
            float *r = L->r + p * cn;
            if (!L->type[p] || L->idiag[p] == 0) {
                for (int c = 0; c < cn; c++)
                    r[c] = 0;
                continue;
            }
            float diag = 1.0f / L->idiag[p];
            const float *u = L->u;
            for (int c = 0; c < cn; c++)
                r[c] = L->f[p * cn + c] + u[(p - 1) * cn + c] + u[(p + 1) * cn + c] +
                       u[(p - s) * cn + c] + u[(p + s) * cn + c] - diag * u[p * cn + c];
        }
}

/* Coarse right-hand side: the sum of the children's residuals (the coarse stencil is the
 * same unscaled 5-point one, on cells twice as wide, hence 4 x the mean). */
static void mg_restrict(const mg_level *F, mg_level *C, int cn)
{
    size_t cells = (size_t)C->stride * (size_t)(C->h + 2) * cn;
    memset(C->f, 0, cells * sizeof(float));
    memset(C->u, 0, cells * sizeof(float));
    for (int j = 0; j < F->h; j++)
        for (int i = 0; i < F->w; i++) {
            size_t p = (size_t)(j + 1) * F->stride + i + 1;
            size_t q = (size_t)(j / 2 + 1) * C->stride + i / 2 + 1;
            for (int c = 0; c < cn; c++)
                C->f[q * cn + c] += F->r[p * cn + c];
        }
}

/* Adds the coarse correction, interpolated bilinearly between coarse cell centres. */
static void mg_prolong(const mg_level *C, mg_level *F, int cn)
{
    for (int j = 0; j < F->h; j++) {
        int J = j / 2, J2 = J + ((j & 1) ? 1 : -1);
        if (J2 < 0) J2 = 0;
        if (J2 >= C->h) J2 = C->h - 1;
        for (int i = 0; i < F->w; i++) {
            size_t p = (size_t)(j + 1) * F->stride + i + 1;
            if (!F->type[p]) continue;
            int I = i / 2, I2 = I + ((i & 1) ? 1 : -1);
            if (I2 < 0) I2 = 0;
            if (I2 >= C->w) I2 = C->w - 1;
            size_t a = (size_t)(J + 1) * C->stride + I + 1;
            size_t b = (size_t)(J + 1) * C->stride + I2 + 1;
            size_t c2 = (size_t)(J2 + 1) * C->stride + I + 1;
            size_t d = (size_t)(J2 + 1) * C->stride + I2 + 1;
            for (int c = 0; c < cn; c++)
                F->u[p * cn + c] += (9.0f * C->u[a * cn + c] + 3.0f * C->u[b * cn + c] +
                                     3.0f * C->u[c2 * cn + c] + C->u[d * cn + c]) *
                                    (1.0f / 16.0f);
        }
    }
}

static void mg_vcycle(ffu_clone_ctx *ctx, int l)
{
    mg_level *L = &ctx->lv[l];
    int cn = ctx->cn;
    if (l == ctx->nlev - 1) {
        mg_smooth(L, cn, 40); /* at most 4 x 4 cells (or a thin strip) */
        return;
    }
    mg_smooth(L, cn, 2);
    mg_residual(L, cn);
    mg_restrict(L, &ctx->lv[l + 1], cn);
    mg_vcycle(ctx, l + 1);
    mg_prolong(&ctx->lv[l + 1], L, cn);
    mg_smooth(L, cn, 2);
}

ffu_status ffu_image_seamless_clone_impl(ffu_clone_ctx *ctx, const ffu_image *src,
                                         const ffu_image *mask, ffu_image *dst, int x, int y,
                                         float tol, int max_cycles, int *cycles)
{
    if (cycles) *cycles = 0;
    ffu_status st = ffu_image_check_packed_pair(src, dst, "seamless_clone");
    if (st < 0) return st;
    if ((st = check_gray(mask, src->width, src->height, "seamless_clone", "mask")) < 0) return st;
    if (!(tol > 0) || max_cycles < 1)
        return ffu_error_set(FFU_ERR_INVALID,
                             "seamless_clone: bad tolerance %g or cycle "
                             "limit %d",
                             (double)tol, max_cycles);
    int cn = ffu_pixfmt_bpp(src->fmt);
    int sw = src->width, sh = src->height;
    /* The region O: mask >= 128, not on the mask's outer ring (those pixels are the
     * boundary, as in OpenCV, so every pixel of O has its source neighbours), and
     * inside dst. Its bounding box, in source coordinates: */
    int ci0 = (int)clip64(-(int64_t)x, 1, sw - 1),
        ci1 = (int)clip64((int64_t)dst->width - x, 0, sw - 1);
    int cj0 = (int)clip64(-(int64_t)y, 1, sh - 1),
        cj1 = (int)clip64((int64_t)dst->height - y, 0, sh - 1);
    int bx0 = INT32_MAX, bx1 = -1, by0 = INT32_MAX, by1 = -1;
    for (int j = cj0; j < cj1; j++) {
        const uint8_t *m = mask->data[0] + (size_t)j * mask->stride[0];
        for (int i = ci0; i < ci1; i++)
            if (m[i] >= 128) {
                if (i < bx0) bx0 = i;
                if (i > bx1) bx1 = i;
                if (j < by0) by0 = j;
                by1 = j;
            }
    }
    if (bx1 < 0) return FFU_OK; /* empty: nothing to do */
    /* Grid: the box plus a ring of boundary pixels, cut where dst ends. */
    int gx0 = (int)clip64(bx0 - 1, -(int64_t)x, sw),
        gx1 = (int)clip64(bx1 + 1, 0, (int64_t)dst->width - x - 1);
    int gy0 = (int)clip64(by0 - 1, -(int64_t)y, sh),
        gy1 = (int)clip64(by1 + 1, 0, (int64_t)dst->height - y - 1);
    int gw = gx1 - gx0 + 1, gh = gy1 - gy0 + 1;

    ffu_clone_ctx *own = NULL;
    if (!ctx) {
        if ((st = ffu_clone_ctx_create(&own)) < 0) return st;
        ctx = own;
    }
    if ((st = mg_plan(ctx, gw, gh, cn)) < 0) goto done;
    mg_level *L0 = &ctx->lv[0];
    int s = L0->stride;
    memset(L0->type, 0, (size_t)s * (size_t)(gh + 2));
    for (int j = 0; j < gh; j++) {
        int sj = gy0 + j;
        const uint8_t *m = mask->data[0] + (size_t)sj * mask->stride[0];
        const uint8_t *sp = src->data[0] + (size_t)sj * src->stride[0];
        const uint8_t *dp = dst->data[0] + (size_t)(y + sj) * dst->stride[0];
        for (int i = 0; i < gw; i++) {
            int si = gx0 + i;
            size_t p = (size_t)(j + 1) * s + i + 1;
            int in = si >= ci0 && si < ci1 && sj >= cj0 && sj < cj1 && m[si] >= 128;
            L0->type[p] = (uint8_t)in;
            for (int c = 0; c < cn; c++)
                L0->u[p * cn + c] =
                    in ? 0.0f : (float)dp[((int64_t)x + si) * cn + c] - (float)sp[si * cn + c];
        }
    }
    mg_diag(L0);
    for (int l = 1; l < ctx->nlev; l++)
        mg_coarsen_types(&ctx->lv[l - 1], &ctx->lv[l]);

    /* Start from the mean boundary value: exact for a constant offset. */
    double bsum[MG_MAX_CN] = {0};
    long nb = 0;
    for (int j = 1; j <= gh; j++)
        for (int i = 1; i <= gw; i++) {
            size_t p = (size_t)j * s + i;
            if (L0->type[p]) continue;
            if (!(L0->type[p - 1] | L0->type[p + 1] | L0->type[p - s] | L0->type[p + s])) continue;
            for (int c = 0; c < cn; c++)
                bsum[c] += L0->u[p * cn + c];
            nb++;
        }
    for (int j = 1; j <= gh; j++)
        for (int i = 1; i <= gw; i++) {
            size_t p = (size_t)j * s + i;
            if (L0->type[p])
                for (int c = 0; c < cn; c++)
                    L0->u[p * cn + c] = nb ? (float)(bsum[c] / (double)nb) : 0.0f;
        }

    size_t nval = (size_t)s * (size_t)(gh + 2) * cn;
    int it = 0;
    while (it < max_cycles) {
        memcpy(ctx->prev, L0->u, nval * sizeof(float));
        mg_vcycle(ctx, 0);
        it++;
        float change = 0;
        for (size_t k = 0; k < nval; k++) {
            float d = fabsf(L0->u[k] - ctx->prev[k]);
            if (d > change) change = d;
        }
        if (!(change >= tol)) break; /* NaN cannot happen with finite data; stop anyway */
    }
    if (cycles) *cycles = it;

    for (int j = 0; j < gh; j++) {
        int sj = gy0 + j;
        const uint8_t *sp = src->data[0] + (size_t)sj * src->stride[0];
        uint8_t *dp = dst->data[0] + (size_t)(y + sj) * dst->stride[0];
        for (int i = 0; i < gw; i++) {
            size_t p = (size_t)(j + 1) * s + i + 1;
            if (!L0->type[p]) continue;
            int si = gx0 + i;
            for (int c = 0; c < cn; c++) {
                float v = (float)sp[si * cn + c] + L0->u[p * cn + c];
                long q = lrintf(v);
                dp[((int64_t)x + si) * cn + c] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
            }
        }
    }
done:
    ffu_clone_ctx_destroy(own);
    return st;
}

ffu_status ffu_image_seamless_clone(ffu_clone_ctx *ctx, const ffu_image *src, const ffu_image *mask,
                                    ffu_image *dst, int x, int y)
{
    return ffu_image_seamless_clone_impl(ctx, src, mask, dst, x, y, FFU_CLONE_TOL,
                                         FFU_CLONE_MAX_CYCLES, NULL);
}
