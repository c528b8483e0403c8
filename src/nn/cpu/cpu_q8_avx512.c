/* Our convolution for layers whose weights outweigh their activations, with the
 * weights held as 8-bit codes. dlib-resnet's 256-channel layers run on 4x4 and 3x3
 * pixels: 2.4 MB of f32 weights a layer for 32 output pixels (batch 2), so oneDNN's
 * kernels wait on the weights streaming in from L3 (about half of those layers' time,
 * from the per-item cost at batch 2 and 8). Its weights come uint8-quantised
 * (face-api's TF.js files): each was made as (q * scale + min) times the folded
 * per-channel factor. Held as codes they are a quarter of the bytes, rebuilt with
 * those same three f32 operations, so the weights are bit for bit the f32 ones (an
 * affine fit was not exact enough: docs/NN_CPU.md "8-bit weights").
 *
 * Channels-last (NHWC) f32 in and out, any kernel size, stride and pads, output
 * channels in blocks of 32 (the last one may be half). Output pixels go in blocks of at
 * most twelve, up to NN_CPU_Q8_BLOCKS of them at a time: their input patches are packed
 * as A[tap][c][pixels]. Per 32-output panel the weights are rebuilt chunk by chunk into
 * an L1 buffer, and each run of a block's pixels whose patches read the chunk's tap
 * inside the input (pads add nothing) adds the chunk's products to its partial sums
 * with up to 24 accumulators, two weight vectors per patch element and one broadcast
 * from A per pixel. Bias, an optional residual (the node's sum input, which
 * may be the output itself) and the activation come before one store per pixel and
 * slice. Only called after a runtime AVX-512F check. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"
#include "cpu_avx512.h"

#define PX NN_CPU_Q8_PIXELS

#define PIX(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* The patches of output pixels [p, p + np) into A[k][np], k = (ky * KW + kx) * C + c,
 * where the tap falls inside the input (the rest is left as it was). live[t] gets the pixels (bit
 * j) for which tap t = ky * KW + kx falls inside the input. */
static void pack(const nn_cpu_q8 *d, const float *x, int64_t p, int np, float *A, uint16_t *live)
{
    const int64_t C = d->C, per = d->OH * d->OW;
    memset(live, 0, sizeof *live * (size_t)d->KH * (size_t)d->KW);
    for (int j = 0; j < np; j++) {
        const int64_t n = (p + j) / per, oy = (p + j) % per / d->OW, ox = (p + j) % d->OW;
        for (int ky = 0; ky < d->KH; ky++)
            for (int kx = 0; kx < d->KW; kx++) {
                const int64_t iy = oy * d->SH - d->PT + ky, ix = ox * d->SW - d->PL + kx;
                float *a = A + (ky * d->KW + kx) * C * np + j;
                if (iy >= 0 && iy < d->IH && ix >= 0 && ix < d->IW) {
                    const float *xp = x + ((n * d->IH + iy) * d->IW + ix) * C;
                    live[ky * d->KW + kx] |= (uint16_t)(1u << j);
                    for (int64_t c = 0; c < C; c++)
                        a[c * np] = xp[c];
                }
            }
    }
}

/* The weights of sixteen codes c: (c * scale + min) * mul, three roundings as the
 * loader's and the fold's (PIN keeps GCC from fusing the first two into an FMA). The
 * builder's check and the kernel both rebuild through this. */
INLINE __m512 rebuild16(__m512i c, __m512 scale, __m512 min, __m512 mul)
{
    __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(c), scale);
    PIN(u);
    u = _mm512_add_ps(u, min);
    PIN(u);
    return _mm512_mul_ps(u, mul);
}

INLINE __m512 weights16(const uint8_t *q, __m512 scale, __m512 min, __m512 mul)
{
    return rebuild16(_mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)q)), scale, min, mul);
}

/* The weights of outputs [k0, k0 + 32) as the kernel rebuilds them, rows [ka, kb) of
 * [KH][KW][C][32] into w[kb - ka][32]. */
static void expand(const nn_cpu_q8 *d, int64_t k0, int64_t ka, int64_t kb, float *w)
{
    const int64_t KK = (int64_t)d->KH * d->KW * d->C;
    const uint8_t *q = d->q + k0 * KK;
    const __m512 scale = _mm512_set1_ps(d->scale), min = _mm512_set1_ps(d->min);
    const __m512 m0 = _mm512_load_ps(d->mul + k0), m1 = _mm512_load_ps(d->mul + k0 + 16);
    for (int64_t k = ka; k < kb; k++) {
        _mm512_storeu_ps(w + (k - ka) * 32, weights16(q + k * 32, scale, min, m0));
        _mm512_storeu_ps(w + (k - ka) * 32 + 16, weights16(q + k * 32 + 16, scale, min, m1));
    }
}

/* 1 when factor a rebuilds each of the n weights v from a code (into q): v[i] is the
 * kernel's rebuild of q[i] with a, bit for bit. The code tried first is the one an
 * estimate in f32 gives, then its two neighbours; a wrong factor fails within a vector
 * or two. */
static int codes_fit(const float *v, int64_t n, float scale, float min, float a, uint8_t *q)
{
    if (!isfinite(a) || a == 0) return 0;
    const __m512 ia = _mm512_set1_ps(1 / a), is = _mm512_set1_ps(1 / scale);
    const __m512 vscale = _mm512_set1_ps(scale), vmin = _mm512_set1_ps(min), va = _mm512_set1_ps(a);
    const __m512i zero = _mm512_setzero_si512(), top = _mm512_set1_epi32(255),
                  one = _mm512_set1_epi32(1);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 w = _mm512_maskz_loadu_ps(live, v + i);
        const __m512i wb = _mm512_castps_si512(w);
        __m512i c =
            _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(_mm512_mul_ps(w, ia), vmin), is));
        c = _mm512_min_epi32(_mm512_max_epi32(c, zero), top);
        const __m512i lo = _mm512_max_epi32(_mm512_sub_epi32(c, one), zero),
                      hi = _mm512_min_epi32(_mm512_add_epi32(c, one), top);
#define FITS(idx) _mm512_cmpeq_epi32_mask(_mm512_castps_si512(rebuild16(idx, vscale, vmin, va)), wb)
        const __mmask16 m0 = FITS(c), m1 = (__mmask16)(FITS(lo) & ~m0),
                        m2 = (__mmask16)(FITS(hi) & ~(m0 | m1));
#undef FITS
        if ((__mmask16)((m0 | m1 | m2) & live) != live) return 0;
        c = _mm512_mask_mov_epi32(_mm512_mask_mov_epi32(c, m1, lo), m2, hi);
        uint8_t codes[16];
        _mm_storeu_si128((__m128i *)codes, _mm512_cvtepi32_epi8(c));
        memcpy(q + i, codes, (size_t)(n - i >= 16 ? 16 : n - i));
    }
    return 1;
}

/* The largest |v[i]| (its first index) and the smallest nonzero |v[i] - v[0]| (0 when
 * all are equal), the latter in double; 0 when some v[i] is not finite. */
static int spread(const float *v, int64_t n, int64_t *top, double *gap)
{
    __mmask16 bad = 0;
    __m512 vmax = _mm512_setzero_ps();
    __m512d g = _mm512_set1_pd(INFINITY);
    const __m512d v0 = _mm512_set1_pd(v[0]);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 w = _mm512_maskz_loadu_ps(live, v + i);
        vmax = _mm512_max_ps(vmax, _mm512_abs_ps(w));
        bad |= _mm512_cmp_ps_mask(_mm512_abs_ps(w), _mm512_set1_ps(INFINITY), _CMP_NLT_UQ);
        for (int h = 0; h < 2; h++) {
            const __m256 part = h ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(w), 1))
                                  : _mm512_castps512_ps256(w);
            const __m512d d = _mm512_abs_pd(_mm512_sub_pd(_mm512_cvtps_pd(part), v0));
            const __mmask8 use = (__mmask8)(live >> (8 * h)) &
                                 _mm512_cmp_pd_mask(d, _mm512_setzero_pd(), _CMP_GT_OQ);
            g = _mm512_mask_min_pd(g, use, d, g);
        }
    }
    const float m = _mm512_reduce_max_ps(vmax);
    const double gm = _mm512_reduce_min_pd(g);
    *gap = gm == INFINITY ? 0 : gm;
    *top = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabsf(v[i]) == m) {
            *top = i;
            break;
        }
    return !bad;
}

int nn_cpu_q8_channel_avx512(const float *v, int64_t n, const float *u, float scale, float min,
                             float *mul, uint8_t *q)
{
    int64_t top;
    double gap;
    if (!spread(v, n, &top, &gap) || v[top] == 0 || scale == 0) return 0;
    int guess[2] = {-1, -1};
    for (int s = 0; s < 2 && gap > 0; s++) {
        double c = floor(((double)v[top] / ((s ? -gap : gap) / scale) - min) / scale + 0.5);
        guess[s] = c >= 0 && c <= 255 ? (int)c : -1;
    }
    for (int j = -2; j < 256; j++) {
        const int ct = j < 0 ? guess[j + 2] : j;
        if (ct < 0 || u[ct] == 0) continue;
        for (int step = -2; step <= 2; step++) {
            float a = v[top] / u[ct];
            for (int k = 0; k < (step < 0 ? -step : step); k++)
                a = nextafterf(a, step < 0 ? -INFINITY : INFINITY);
            if (codes_fit(v, n, scale, min, a, q)) {
                *mul = a;
                return 1;
            }
        }
    }
    return 0;
}

/* Adds to the partial sums part[np][32] of np pixels of a block the products of rows
 * [0, nk) of their packed patches (row k at A + k * lda) and of the rebuilt weights
 * W[nk][32]. np is a constant in each instance (part_np): pixels past it take no FMAs.
 * Each sum runs over the rows in order, as in one pass over all of them (a float
 * stored and reloaded is the same float). With pf, a prefetch into L2 of the codes at
 * pf + 32 k each row. */
INLINE void part(const float *A, int64_t lda, const float *W, int64_t nk, const int np, float *sums,
                 const uint8_t *pf)
{
#define ACC(j)                                                           \
    __m512 a##j##_0 = _mm512_setzero_ps(), a##j##_1 = _mm512_setzero_ps(); \
    if (j < np) {                                                        \
        a##j##_0 = _mm512_loadu_ps(sums + j * 32);                        \
        a##j##_1 = _mm512_loadu_ps(sums + j * 32 + 16);                   \
    }
    PIX(ACC)
#undef ACC
    for (int64_t k = 0; k < nk; k++) {
        __m512 w0 = _mm512_loadu_ps(W + k * 32), w1 = _mm512_loadu_ps(W + k * 32 + 16);
        PIN(w0);
        PIN(w1);
        const float *a = A + k * lda;
        if (pf) _mm_prefetch((const char *)(pf + k * 32), _MM_HINT_T1);
#define FMA(j)                                                   \
    if (j < np) {                                                \
        const __m512 v = _mm512_set1_ps(a[j]);                   \
        a##j##_0 = _mm512_fmadd_ps(v, w0, a##j##_0);             \
        a##j##_1 = _mm512_fmadd_ps(v, w1, a##j##_1);             \
    }
        PIX(FMA)
#undef FMA
    }
#define ST(j)                                          \
    if (j < np) {                                      \
        _mm512_storeu_ps(sums + j * 32, a##j##_0);      \
        _mm512_storeu_ps(sums + j * 32 + 16, a##j##_1); \
    }
    PIX(ST)
#undef ST
}

/* part for np of 1..12 pixels, each count its own instance */
static void part_np(const float *A, int64_t lda, const float *W, int64_t nk, int np, float *sums,
                    const uint8_t *pf)
{
    switch (np) {
#define CASE(j)                                                                                    \
    case j + 1:                                                                                    \
        part(A, lda, W, nk, j + 1, sums, pf);                                                      \
        break;
        PIX(CASE)
#undef CASE
    default: break;
    }
}

/* Outputs [k0, k0 + 32) of pixels [p, p + np) from their sums: bias, residual,
 * activation, stores. */
static void finish(const nn_cpu_q8 *d, const float *sums, int64_t k0, int64_t p, int np,
                   const float *res, float *y)
{
    const int64_t K = d->K;
    const int two = k0 + 16 < K; /* the second slice holds outputs */
    const __m512 b0 = _mm512_load_ps(d->b + k0), b1 = _mm512_load_ps(d->b + k0 + 16);
    const actv v0 = act_init(&d->act, d->ns + k0), v1 = act_init(&d->act, d->ns + k0 + 16);
    for (int j = 0; j < np; j++) {
        float *yp = y + (p + j) * K + k0;
        const float *rp = res ? res + (p + j) * K + k0 : NULL;
        __m512 o0 = _mm512_add_ps(_mm512_loadu_ps(sums + j * 32), b0);
        __m512 o1 = _mm512_add_ps(_mm512_loadu_ps(sums + j * 32 + 16), b1);
        if (rp) o0 = _mm512_add_ps(o0, _mm512_loadu_ps(rp));
        _mm512_storeu_ps(yp, act(v0, o0));
        if (two) {
            if (rp) o1 = _mm512_add_ps(o1, _mm512_loadu_ps(rp + 16));
            _mm512_storeu_ps(yp + 16, act(v1, o1));
        }
    }
}

void nn_cpu_q8_pixels_avx512(const nn_cpu_q8 *d, const float *src, const float *res, float *dst,
                             int64_t p0, int64_t p1, float *scratch)
{
    /* Up to NN_CPU_Q8_BLOCKS pixel blocks packed; then per 32-output panel, chunk by
     * chunk of at most NN_CPU_Q8_CHUNK rows within one tap, the chunk's weights rebuilt
     * into L1 and taken by every block that reads the tap into its partial sums (the
     * rebuilt panel, 2304 x 32 floats for a 3x3 layer on 256 channels, would not stay in
     * L1 for the next block). A run's pixels split evenly over as few blocks as hold
     * them: 16 pixels at batch 1 are two blocks of 8, not 12 and 4. */
    const int64_t C = d->C, KK = (int64_t)d->KH * d->KW * C, span = PX * NN_CPU_Q8_BLOCKS;
    float *W = scratch + KK * span, *sums = W + 32 * NN_CPU_Q8_CHUNK;
    uint16_t live[NN_CPU_Q8_BLOCKS][64]; /* per block and tap, its pixels inside */
    int64_t at[NN_CPU_Q8_BLOCKS + 1];
    for (int64_t pc = p0; pc < p1; pc += span) {
        const int64_t n = p1 - pc < span ? p1 - pc : span;
        const int nb = (int)((n + PX - 1) / PX);
        for (int b = 0; b <= nb; b++) at[b] = pc + n * b / nb;
        for (int b = 0; b < nb; b++)
            pack(d, src, at[b], (int)(at[b + 1] - at[b]), scratch + b * PX * KK, live[b]);
        for (int64_t k0 = 0; k0 < d->K; k0 += 32) {
            memset(sums, 0, sizeof(float) * 32 * PX * (size_t)nb);
            for (int64_t ka = 0, kb; ka < KK; ka = kb) {
                const int64_t t = ka / C; /* the tap; chunks end at its last row */
                kb = ka + NN_CPU_Q8_CHUNK < (t + 1) * C ? ka + NN_CPU_Q8_CHUNK : (t + 1) * C;
                unsigned any = 0;
                for (int b = 0; b < nb; b++)
                    any |= live[b][t];
                if (!any) continue; /* it reads only pads for every pixel */
                expand(d, k0, ka, kb, W);
                /* the first run of pixels asks for the codes after these (the next
                 * chunk, or the next panel's first) into L2, one row's 32 bytes per row
                 * it computes: a chunk is one 4 KB page, where the hardware prefetcher
                 * stops, and waiting for it was 45% of the rebuild */
                const uint8_t *next = d->q + k0 * KK + kb * 32;
                for (int b = 0; b < nb; b++) {
                    /* each run of the block's pixels that read the tap inside the
                     * input (a pad's zero would add nothing: a third of the products of
                     * a 3x3 layer on 4x4 pixels) */
                    const int64_t np = at[b + 1] - at[b];
                    for (unsigned m = live[b][t]; m;) {
                        const int j = __builtin_ctz(m), len = __builtin_ctz(~(m >> j));
                        part_np(scratch + b * PX * KK + ka * np + j, np, W, kb - ka, len,
                                sums + (b * PX + j) * 32, next);
                        next = NULL;
                        m &= ~(((1u << len) - 1) << j);
                    }
                }
            }
            for (int b = 0; b < nb; b++)
                finish(d, sums + b * PX * 32, k0, at[b], (int)(at[b + 1] - at[b]), res, dst);
        }
    }
}

#endif
