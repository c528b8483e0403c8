/* Our own depthwise 2-D convolution for the cpu backend, channels-last (NHWC) f32 with
 * AVX-512. oneDNN 2.6's NHWC depthwise kernel (brdgmm_dw) runs at a third of the
 * FMA rate on the 16-64 channel layers of BlazeFace, YuNet and MobileFaceNet, which
 * spend 20-35% of their time there, and its blocked-format kernel would need padded
 * tensors (24 channels stored as 32) that the memory plan does not have.
 *
 * The work is cut into blocks of eight output pixels of one 16-channel slice, whose
 * accumulators stay in registers while the kernel taps walk the input rows; for the
 * common 3-wide stride-1 kernel each input vector is loaded once and feeds three
 * outputs. Bias, an optional residual (the node's sum input) and the activation are
 * applied before one store per pixel. Blocks are plain functions with explicit
 * accumulators (GCC spills arrays of vectors), instantiated for three ways of
 * touching a slice: all 16 lanes, the low 8 (a channel tail of 8, as in 24 or 40
 * channels) or a mask (other tails; AVX-512 masked stores are slow on AMD Zen, so
 * only such tails pay for them). Pixels whose window reaches into the padding take a
 * per-pixel path that skips those taps. Only called after a runtime AVX-512F check. */
#include <immintrin.h>
#include <stdint.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"

#include "cpu_avx512.h"

/* What a block needs besides its pointers: the slice's bias and activation. */
typedef struct slice {
    __m512 bias, ns, lo, hi;
    int neg, clamp, mode;
    __mmask16 m;
    int64_t C, Cp, rs; /* channels, weight row stride, input row stride (floats) */
} slice;

INLINE actv act_of(const slice *s)
{
    actv a = {s->ns, s->lo, s->hi, s->neg, s->clamp};
    return a;
}

#define ACC8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* Eight outputs of a 3-wide stride-1 kernel: x is the input pixel under the first
 * tap of the first valid row, w that row's weights, nkh the valid rows. */
INLINE void blk_k3s1(const slice *s, const float *x, const float *w, int nkh, const float *res,
                     float *y, int mode, int64_t Cc)
{
    const int64_t C = Cc ? Cc : s->C, Cp = s->Cp, rs = s->rs;
    const __mmask16 m = s->m;
    const actv av = act_of(s);
    __m512 a0, a1, a2, a3, a4, a5, a6, a7;
#define INIT(j) a##j = res ? _mm512_add_ps(s->bias, ld(res + j * C, mode, m)) : s->bias;
    ACC8(INIT)
#undef INIT
    for (int kh = 0; kh < nkh; kh++, x += rs, w += 3 * Cp) {
        const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + Cp),
                     w2 = _mm512_load_ps(w + 2 * Cp);
        const float *p = x;
        __m512 v;
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a0 = _mm512_fmadd_ps(w0, v, a0);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a1 = _mm512_fmadd_ps(w0, v, a1);
        a0 = _mm512_fmadd_ps(w1, v, a0);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a2 = _mm512_fmadd_ps(w0, v, a2);
        a1 = _mm512_fmadd_ps(w1, v, a1);
        a0 = _mm512_fmadd_ps(w2, v, a0);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a3 = _mm512_fmadd_ps(w0, v, a3);
        a2 = _mm512_fmadd_ps(w1, v, a2);
        a1 = _mm512_fmadd_ps(w2, v, a1);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a4 = _mm512_fmadd_ps(w0, v, a4);
        a3 = _mm512_fmadd_ps(w1, v, a3);
        a2 = _mm512_fmadd_ps(w2, v, a2);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a5 = _mm512_fmadd_ps(w0, v, a5);
        a4 = _mm512_fmadd_ps(w1, v, a4);
        a3 = _mm512_fmadd_ps(w2, v, a3);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a6 = _mm512_fmadd_ps(w0, v, a6);
        a5 = _mm512_fmadd_ps(w1, v, a5);
        a4 = _mm512_fmadd_ps(w2, v, a4);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a7 = _mm512_fmadd_ps(w0, v, a7);
        a6 = _mm512_fmadd_ps(w1, v, a6);
        a5 = _mm512_fmadd_ps(w2, v, a5);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a7 = _mm512_fmadd_ps(w1, v, a7);
        a6 = _mm512_fmadd_ps(w2, v, a6);
        v = ld(p, mode, m);
        PIN(v);
        a7 = _mm512_fmadd_ps(w2, v, a7);
    }
#define OUT(j) st(y + j * C, act(av, a##j), mode, m);
    ACC8(OUT)
#undef OUT
}

#define ACC16(X) ACC8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* Sixteen outputs of a 3-wide stride-1 kernel: x is the input pixel under the first
 * tap of the first valid row, w that row's weights, nkh the valid rows. Input-major:
 * each input vector is loaded once (one advancing pointer: GCC runs out of general
 * registers with sixteen offsets) and feeds the three outputs that read it; sixteen
 * accumulators leave the out-of-order core enough independent FMAs. */
INLINE void blk16_k3s1(const slice *s, const float *x, const float *w, int nkh,
                       const float *res, float *y, int mode, int64_t Cc)
{
    const int64_t C = Cc ? Cc : s->C, Cp = s->Cp, rs = s->rs;
    const __mmask16 m = s->m;
    const actv av = act_of(s);
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15;
#define INIT(j) a##j = res ? _mm512_add_ps(s->bias, ld(res + j * C, mode, m)) : s->bias;
    ACC16(INIT)
#undef INIT
    for (int kh = 0; kh < nkh; kh++, x += rs, w += 3 * Cp) {
        const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + Cp),
                     w2 = _mm512_load_ps(w + 2 * Cp);
        const float *p = x;
        __m512 v;
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a0 = _mm512_fmadd_ps(w0, v, a0);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a1 = _mm512_fmadd_ps(w0, v, a1);
        a0 = _mm512_fmadd_ps(w1, v, a0);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a2 = _mm512_fmadd_ps(w0, v, a2);
        a1 = _mm512_fmadd_ps(w1, v, a1);
        a0 = _mm512_fmadd_ps(w2, v, a0);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a3 = _mm512_fmadd_ps(w0, v, a3);
        a2 = _mm512_fmadd_ps(w1, v, a2);
        a1 = _mm512_fmadd_ps(w2, v, a1);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a4 = _mm512_fmadd_ps(w0, v, a4);
        a3 = _mm512_fmadd_ps(w1, v, a3);
        a2 = _mm512_fmadd_ps(w2, v, a2);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a5 = _mm512_fmadd_ps(w0, v, a5);
        a4 = _mm512_fmadd_ps(w1, v, a4);
        a3 = _mm512_fmadd_ps(w2, v, a3);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a6 = _mm512_fmadd_ps(w0, v, a6);
        a5 = _mm512_fmadd_ps(w1, v, a5);
        a4 = _mm512_fmadd_ps(w2, v, a4);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a7 = _mm512_fmadd_ps(w0, v, a7);
        a6 = _mm512_fmadd_ps(w1, v, a6);
        a5 = _mm512_fmadd_ps(w2, v, a5);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a8 = _mm512_fmadd_ps(w0, v, a8);
        a7 = _mm512_fmadd_ps(w1, v, a7);
        a6 = _mm512_fmadd_ps(w2, v, a6);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a9 = _mm512_fmadd_ps(w0, v, a9);
        a8 = _mm512_fmadd_ps(w1, v, a8);
        a7 = _mm512_fmadd_ps(w2, v, a7);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a10 = _mm512_fmadd_ps(w0, v, a10);
        a9 = _mm512_fmadd_ps(w1, v, a9);
        a8 = _mm512_fmadd_ps(w2, v, a8);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a11 = _mm512_fmadd_ps(w0, v, a11);
        a10 = _mm512_fmadd_ps(w1, v, a10);
        a9 = _mm512_fmadd_ps(w2, v, a9);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a12 = _mm512_fmadd_ps(w0, v, a12);
        a11 = _mm512_fmadd_ps(w1, v, a11);
        a10 = _mm512_fmadd_ps(w2, v, a10);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a13 = _mm512_fmadd_ps(w0, v, a13);
        a12 = _mm512_fmadd_ps(w1, v, a12);
        a11 = _mm512_fmadd_ps(w2, v, a11);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a14 = _mm512_fmadd_ps(w0, v, a14);
        a13 = _mm512_fmadd_ps(w1, v, a13);
        a12 = _mm512_fmadd_ps(w2, v, a12);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a15 = _mm512_fmadd_ps(w0, v, a15);
        a14 = _mm512_fmadd_ps(w1, v, a14);
        a13 = _mm512_fmadd_ps(w2, v, a13);
        v = ld(p, mode, m);
        PIN(v);
        p += C;
        a15 = _mm512_fmadd_ps(w1, v, a15);
        a14 = _mm512_fmadd_ps(w2, v, a14);
        v = ld(p, mode, m);
        PIN(v);
        a15 = _mm512_fmadd_ps(w2, v, a15);
    }
#define OUT(j) st(y + j * C, act(av, a##j), mode, m);
    ACC16(OUT)
#undef OUT
}

/* Eight outputs of any kernel width and stride (taps kw0..KW-1 valid for all eight). */
INLINE void blk_any(const slice *s, const float *x, const float *w, int nkh, int KW, int64_t SW,
                    const float *res, float *y, int mode)
{
    const int64_t C = s->C, Cp = s->Cp, step = SW * C, rs = s->rs;
    const __mmask16 m = s->m;
    const actv av = act_of(s);
    __m512 a0, a1, a2, a3, a4, a5, a6, a7;
#define INIT(j) a##j = res ? _mm512_add_ps(s->bias, ld(res + j * C, mode, m)) : s->bias;
    ACC8(INIT)
#undef INIT
    for (int kh = 0; kh < nkh; kh++, x += rs, w += KW * Cp)
        for (int kw = 0; kw < KW; kw++) {
            const __m512 wv = _mm512_load_ps(w + kw * Cp);
            const float *p = x + kw * C;
#define TAP(j) a##j = _mm512_fmadd_ps(wv, ld(p + j * step, mode, m), a##j);
            ACC8(TAP)
#undef TAP
        }
#define OUT(j) st(y + j * C, act(av, a##j), mode, m);
    ACC8(OUT)
#undef OUT
}

/* One output pixel, skipping taps in the padding. */
INLINE void pixel(const slice *s, const nn_cpu_dw *d, const float *xn, int64_t oh, int64_t ow,
                  const float *wc, const float *res, float *y, int mode)
{
    const int64_t C = s->C;
    __m512 acc = res ? _mm512_add_ps(s->bias, ld(res, mode, s->m)) : s->bias;
    for (int kh = 0; kh < d->KH; kh++) {
        int64_t ih = oh * d->SH - d->PT + kh;
        if (ih < 0 || ih >= d->IH) continue;
        const float *xr = xn + ih * d->IW * C;
        for (int kw = 0; kw < d->KW; kw++) {
            int64_t iw = ow * d->SW - d->PL + kw;
            if (iw < 0 || iw >= d->IW) continue;
            acc = _mm512_fmadd_ps(_mm512_load_ps(wc + (kh * d->KW + kw) * d->Cp),
                                  ld(xr + iw * C, mode, s->m), acc);
        }
    }
    st(y, act(act_of(s), acc), mode, s->m);
}

/* One output row of one slice (xn, wc, yr, rr already point at the slice). */
INLINE void row_slice(const slice *s, const nn_cpu_dw *d, const float *xn, const float *wc,
                      const float *rr, float *yr, int64_t oh, int kh0, int kh1, int64_t ow_lo,
                      int64_t ow_hi, int mode, int64_t Cc)
{
    const int64_t C = Cc ? Cc : s->C, SW = d->SW, KW = d->KW;
    const int k3s1 = KW == 3 && SW == 1;
    /* the first valid input row (none when the window is all padding) */
    const float *x0 = kh1 > kh0 ? xn + (oh * d->SH - d->PT + kh0) * d->IW * C : xn;
    const float *w0 = wc + kh0 * KW * d->Cp;
    int nkh = kh1 - kh0;
    /* a last block may overlap the previous one (recomputing some pixels) unless
     * the residual is the output itself: then it would read results */
    int overlap = !rr || rr != yr;
    int64_t ow = 0;
    for (; ow < ow_lo; ow++)
        pixel(s, d, xn, oh, ow, wc, rr ? rr + ow * C : NULL, yr + ow * C, mode);
    int64_t end = ow_hi;
    if (k3s1)
        for (; ow + 16 <= end; ow += 16)
            blk16_k3s1(s, x0 + (ow - d->PL) * C, w0, nkh, rr ? rr + ow * C : NULL, yr + ow * C,
                       mode, Cc);
    while (ow < end) {
        if (ow + 8 > end) {
            if (!overlap || end - ow_lo < 8) break;
            ow = end - 8;
        }
        const float *x = x0 + (ow * SW - d->PL) * C;
        const float *res = rr ? rr + ow * C : NULL;
        if (k3s1) blk_k3s1(s, x, w0, nkh, res, yr + ow * C, mode, Cc);
        else blk_any(s, x, w0, nkh, (int)KW, SW, res, yr + ow * C, mode);
        ow += 8;
    }
    for (; ow < d->OW; ow++)
        pixel(s, d, xn, oh, ow, wc, rr ? rr + ow * C : NULL, yr + ow * C, mode);
}

/* The slice kinds as separate functions, so that each gets its own registers; and
 * instances for the common channel counts: with the pixel stride a constant every
 * input of a block is at an immediate offset, where a run-time stride needs an index
 * register per pixel and GCC runs out of them (measured: half the FMA rate). */
#define ROW_FN(name, mode, Cc)                                                                \
    static __attribute__((noinline)) void name(const slice *s, const nn_cpu_dw *d,             \
                                               const float *xn, const float *wc,               \
                                               const float *rr, float *yr, int64_t oh,         \
                                               int kh0, int kh1, int64_t ow_lo, int64_t ow_hi) \
    {                                                                                         \
        row_slice(s, d, xn, wc, rr, yr, oh, kh0, kh1, ow_lo, ow_hi, mode, Cc);                \
    }
ROW_FN(row_full, V_FULL, 0)
ROW_FN(row_half, V_HALF, 0)
ROW_FN(row_mask, V_MASK, 0)
ROW_FN(row_full16, V_FULL, 16)
ROW_FN(row_full24, V_FULL, 24)
ROW_FN(row_half24, V_HALF, 24)
ROW_FN(row_full32, V_FULL, 32)
ROW_FN(row_full48, V_FULL, 48)
ROW_FN(row_full64, V_FULL, 64)
ROW_FN(row_full96, V_FULL, 96)
ROW_FN(row_full128, V_FULL, 128)

typedef void (*row_fn)(const slice *, const nn_cpu_dw *, const float *, const float *,
                       const float *, float *, int64_t, int, int, int64_t, int64_t);

/* conv rows [row0, row1) of the N * OH, written at dst + r * OW * C */
static void conv_rows(const nn_cpu_dw *d, const float *src, const float *res, float *dst,
                      int64_t row0, int64_t row1, int64_t dst_row0);

void nn_cpu_dw_rows_avx512(const nn_cpu_dw *d, const float *src, const float *res, float *dst,
                           int64_t row0, int64_t row1, float *tmp)
{
    if (!d->pool) {
        conv_rows(d, src, res, dst, row0, row1, 0);
        return;
    }
    /* fused 2x2 stride-2 max pool: two conv rows into tmp, then their maxima */
    const int64_t C = d->C, OW = d->OW, PH = d->OH / 2, PW = OW / 2;
    for (int64_t pr = row0; pr < row1; pr++) {
        int64_t n = pr / PH, ph = pr % PH, r = n * d->OH + 2 * ph;
        conv_rows(d, src, NULL, tmp, r, r + 2, r);
        const float *a = tmp, *b = tmp + OW * C;
        float *y = dst + pr * PW * C;
        for (int64_t pw = 0; pw < PW; pw++)
            for (int64_t c0 = 0; c0 < C; c0 += 16) {
                __mmask16 m;
                int mode = slice_mode(C, c0, &m);
                const float *p0 = a + 2 * pw * C + c0, *p1 = b + 2 * pw * C + c0;
                /* MaxPool's order: the first element, then each later one if greater */
                __m512 v = ld(p0, mode, m);
                v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(ld(p0 + C, mode, m), v, _CMP_GT_OQ), ld(p0 + C, mode, m));
                v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(ld(p1, mode, m), v, _CMP_GT_OQ), ld(p1, mode, m));
                v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(ld(p1 + C, mode, m), v, _CMP_GT_OQ), ld(p1 + C, mode, m));
                st(y + pw * C + c0, v, mode, m);
            }
    }
}

static void conv_rows(const nn_cpu_dw *d, const float *src, const float *res, float *dst,
                      int64_t row0, int64_t row1, int64_t dst_row0)
{
    const int64_t C = d->C, OW = d->OW, SW = d->SW, KW = d->KW;
    /* output columns whose whole window lies inside the input width */
    int64_t ow_lo = (d->PL + SW - 1) / SW, ow_hi = 0;
    if (d->IW - KW + d->PL >= 0) ow_hi = (d->IW - KW + d->PL) / SW + 1;
    if (ow_hi > OW) ow_hi = OW;
    if (ow_lo > ow_hi) ow_lo = ow_hi;
    slice s = {.lo = _mm512_set1_ps(d->act.lo), .hi = _mm512_set1_ps(d->act.hi),
               .ns = _mm512_setzero_ps(), .neg = d->act.neg, .clamp = d->act.clamp, .C = C, .Cp = d->Cp, .rs = d->IW * C};
    row_fn full = C == 16 ? row_full16 : C == 24 ? row_full24 : C == 32 ? row_full32
                : C == 48 ? row_full48 : C == 64 ? row_full64 : C == 96 ? row_full96
                : C == 128 ? row_full128 : row_full;
    row_fn half = C == 24 ? row_half24 : row_half;
    for (int64_t r = row0; r < row1; r++) {
        int64_t n = r / d->OH, oh = r % d->OH;
        const float *xn = src + n * d->IH * d->IW * C;
        float *yr = dst + (r - dst_row0) * OW * C;
        const float *rr = res ? res + r * OW * C : NULL;
        int kh0 = 0, kh1 = d->KH;
        while (kh0 < kh1 && oh * d->SH - d->PT + kh0 < 0) kh0++;
        while (kh1 > kh0 && oh * d->SH - d->PT + kh1 - 1 >= d->IH) kh1--;
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
            s.bias = _mm512_load_ps(d->b + c0);
            if (d->act.neg) s.ns = _mm512_load_ps(d->ns + c0);
            int mode = slice_mode(C, c0, &s.m);
            const float *rc = rr ? rr + c0 : NULL;
            row_fn f = mode == V_FULL ? full : mode == V_HALF ? half : row_mask;
            f(&s, d, xn + c0, d->w + c0, rc, yr + c0, oh, kh0, kh1, ow_lo, ow_hi);
        }
    }
}

#endif
