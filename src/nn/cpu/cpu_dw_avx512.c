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
    __m512 bias;
    actv av;
    __mmask16 m;
    int64_t C, Cp, c0; /* channels, weight row stride, the slice's first channel */
} slice;

INLINE actv act_of(const slice *s) { return s->av; }

#define ACC8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* Which end of a row a block of a 3-wide stride-1 kernel with one column of padding
 * each side holds: its first output's left tap or its last output's right tap is in the
 * padding and is skipped, so the row's end columns need no per-pixel path. */
enum { EDGE_LEFT = 1, EDGE_RIGHT = 2 };

/* The input-major walk along a row of a 3-wide stride-1 kernel (blk_k3s1, blk16_k3s1):
 * each input vector v is loaded once (NEXT_V; p advances to the next pixel) and feeds
 * the outputs that read it, accumulator a<i> through tap 0, a<j> through tap 1 and a<k>
 * through tap 2 (FEED3); a row's first two and last two vectors feed fewer (FEED). */
#define NEXT_V                                                                                     \
    v = ld(p, mode, m);                                                                            \
    PIN(v);                                                                                        \
    p += C;
#define FEED(w, i) a##i = _mm512_fmadd_ps(w, v, a##i);
#define FEED3(i, j, k) NEXT_V FEED(w0, i) FEED(w1, j) FEED(w2, k)

/* Eight outputs of a 3-wide stride-1 kernel: xr the valid input rows (nkh of them), off
 * the offset in each of the pixel under the first tap, w the first valid row's weights. */
INLINE void blk_k3s1(const slice *s, const float *const *xr, int64_t off, const float *w,
                     int nkh, const float *res, float *y, int mode, int64_t Cc)
{
    const int64_t C = Cc ? Cc : s->C, Cp = s->Cp;
    const __mmask16 m = s->m;
    const actv av = act_of(s);
    __m512 a0, a1, a2, a3, a4, a5, a6, a7;
#define INIT(j) a##j = res ? _mm512_add_ps(s->bias, ld(res + j * C, mode, m)) : s->bias;
    ACC8(INIT)
#undef INIT
    for (int kh = 0; kh < nkh; kh++, w += 3 * Cp) {
        const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + Cp),
                     w2 = _mm512_load_ps(w + 2 * Cp);
        const float *p = xr[kh] + off;
        __m512 v;
        /* clang-format off */
        NEXT_V FEED(w0, 0)
        NEXT_V FEED(w0, 1) FEED(w1, 0)
        FEED3(2, 1, 0) FEED3(3, 2, 1) FEED3(4, 3, 2) FEED3(5, 4, 3) FEED3(6, 5, 4) FEED3(7, 6, 5)
        NEXT_V FEED(w1, 7) FEED(w2, 6)
        NEXT_V FEED(w2, 7)
        /* clang-format on */
    }
#define OUT(j) st(y + j * C, act(av, a##j), mode, m);
    ACC8(OUT)
#undef OUT
}

#define ACC16(X) ACC8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* Sixteen outputs of a 3-wide stride-1 kernel, arguments as blk_k3s1, and edge (a
 * constant): with EDGE_LEFT off is the offset of the pixel after the first tap's (the
 * first output's column). Input-major:
 * each input vector is loaded once (one advancing pointer: GCC runs out of general
 * registers with sixteen offsets) and feeds the three outputs that read it; sixteen
 * accumulators leave the out-of-order core enough independent FMAs. */
INLINE void blk16_k3s1(const slice *s, const float *const *xr, int64_t off, const float *w, int nkh,
                       const float *res, float *y, int mode, int64_t Cc, const int edge)
{
    const int64_t C = Cc ? Cc : s->C, Cp = s->Cp;
    const __mmask16 m = s->m;
    const actv av = act_of(s);
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15;
#define INIT(j) a##j = res ? _mm512_add_ps(s->bias, ld(res + j * C, mode, m)) : s->bias;
    ACC16(INIT)
#undef INIT
    for (int kh = 0; kh < nkh; kh++, w += 3 * Cp) {
        const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + Cp),
                     w2 = _mm512_load_ps(w + 2 * Cp);
        const float *p = xr[kh] + off;
        __m512 v;
        /* clang-format off */
        if (!(edge & EDGE_LEFT)) {
            NEXT_V FEED(w0, 0)
        }
        NEXT_V FEED(w0, 1) FEED(w1, 0)
        FEED3(2, 1, 0) FEED3(3, 2, 1) FEED3(4, 3, 2) FEED3(5, 4, 3) FEED3(6, 5, 4) FEED3(7, 6, 5)
        FEED3(8, 7, 6) FEED3(9, 8, 7) FEED3(10, 9, 8) FEED3(11, 10, 9) FEED3(12, 11, 10)
        FEED3(13, 12, 11) FEED3(14, 13, 12) FEED3(15, 14, 13)
        NEXT_V FEED(w1, 15) FEED(w2, 14)
        if (!(edge & EDGE_RIGHT)) {
            NEXT_V FEED(w2, 15)
        }
        /* clang-format on */
    }
#define OUT(j) st(y + j * C, act(av, a##j), mode, m);
    ACC16(OUT)
#undef OUT
}

#undef FEED3
#undef FEED
#undef NEXT_V

/* Four pooled outputs of a 3x3 stride-1 kernel followed by the 2x2 max pool: eight
 * columns of two convolution rows (sixteen accumulators) from the four input rows xr[0..3]
 * (all inside the image), off the offset in each of the pixel under the first tap, w the
 * kernel's first row. Each input vector is loaded once and feeds up to six outputs (three
 * columns of both rows), where two conv_row calls would load the two middle input rows
 * twice; the pool takes the activated accumulators straight from registers. Every
 * output's sum is made in the same order as blk_k3s1's. */
INLINE void blkp_k3s1(const slice *s, const float *const *xr, int64_t off, const float *w, float *y,
                      int mode, int64_t Cc, const int edge)
{
    const int k0 = edge & EDGE_LEFT ? 1 : 0; /* the input column (TAP's k) at off */
    const int64_t C = Cc ? Cc : s->C, Cp = s->Cp;
    const __mmask16 m = s->m;
    const actv av = act_of(s);
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7, ax, bx, v;
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = s->bias;
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = s->bias;
    ax = bx = _mm512_setzero_ps(); /* sinks of the taps that fall outside the block */
/* input row i feeds conv row 0 through kernel row ka (when HA) and conv row 1 through
 * kernel row kb (when HB); TAP(k, j0, j1, j2): input column k is tap 0 of output column
 * j0, tap 1 of j1, tap 2 of j2 (x: none) */
#define FA(j, t)                                            \
    if (ha) a##j = _mm512_fmadd_ps(A##t, v, a##j);         \
    if (hb) b##j = _mm512_fmadd_ps(B##t, v, b##j);
#define TAP(k, j0, j1, j2)                                                                         \
    if (!(k == 0 && (edge & EDGE_LEFT)) && !(k == 9 && (edge & EDGE_RIGHT))) {                     \
        v = ld(p + (k - k0) * C, mode, m);                                                         \
        PIN(v);                                                                                    \
        FA(j0, 0) FA(j1, 1) FA(j2, 2)                                                              \
    }
#define ROW(i, HA, ka, HB, kb)                                                          \
    {                                                                                   \
        const __m512 A0 = _mm512_load_ps(w + (3 * ka) * Cp),                           \
                     A1 = _mm512_load_ps(w + (3 * ka + 1) * Cp),                       \
                     A2 = _mm512_load_ps(w + (3 * ka + 2) * Cp),                       \
                     B0 = _mm512_load_ps(w + (3 * kb) * Cp),                           \
                     B1 = _mm512_load_ps(w + (3 * kb + 1) * Cp),                       \
                     B2 = _mm512_load_ps(w + (3 * kb + 2) * Cp);                       \
        const float *p = xr[i] + off;                                                   \
        const int ha = HA, hb = HB;                                                     \
        TAP(0, 0, x, x) TAP(1, 1, 0, x) TAP(2, 2, 1, 0) TAP(3, 3, 2, 1) TAP(4, 4, 3, 2) \
        TAP(5, 5, 4, 3) TAP(6, 6, 5, 4) TAP(7, 7, 6, 5) TAP(8, x, 7, 6) TAP(9, x, x, 7) \
    }
    ROW(0, 1, 0, 0, 0)
    ROW(1, 1, 1, 1, 0)
    ROW(2, 1, 2, 1, 1)
    ROW(3, 0, 2, 1, 2)
#undef ROW
#undef TAP
#undef FA
    (void)ax, (void)bx;
#define POOL(q, j0, j1)                                                                    \
    st(y + q * C,                                                                          \
       pool_max(pool_max(pool_max(act(av, a##j0), act(av, a##j1)), act(av, b##j0)),       \
                act(av, b##j1)),                                                           \
       mode, m);
    POOL(0, 0, 1) POOL(1, 2, 3) POOL(2, 4, 5) POOL(3, 6, 7)
#undef POOL
}

/* Sixteen outputs of a 3-wide stride-1 kernel as eight pixel pairs, for C = 16n + 8
 * channels (24, 40, ...): a pair's 2C channels fill C / 8 vectors, where one pixel's
 * leave a vector half empty (a quarter of the FMA lanes idle at 24 channels). This is
 * vector k of each pair: channels 16k.. of the pair, running on into the second pixel
 * past C, so weights, bias and slopes come stored twice over, 2C wide (nn_cpu_dw's w2,
 * b2, ns2). xr the valid input rows (nkh), off the offset in each of the vector under
 * the first pair's first tap, w the first valid row's taps for vector k (tap stride
 * 2C); y and res (may be NULL) point at the first pair's vector k. Input vector s of
 * the row is tap s - 2j of pair j: each is loaded once and feeds one or two outputs.
 * Every output's sum is made in the same order as blk_k3s1's. */
INLINE void blk_pair_k3s1(__m512 bias, actv av, const float *const *xr, int64_t off,
                          const float *w, int nkh, const float *res, float *y, int64_t C)
{
    const int64_t W2 = 2 * C;
    __m512 a0, a1, a2, a3, a4, a5, a6, a7;
#define INIT(j) a##j = res ? _mm512_add_ps(bias, _mm512_loadu_ps(res + j * W2)) : bias;
    ACC8(INIT)
#undef INIT
    for (int kh = 0; kh < nkh; kh++, w += 3 * W2) {
        const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + W2),
                     w2 = _mm512_load_ps(w + 2 * W2);
        const float *p = xr[kh] + off;
        __m512 v;
/* input vectors 2j + 1 (tap 1 of pair j) and 2j + 2 (tap 2 of pair j, tap 0 of j + 1) */
#define PAIR(j, k)                            \
    v = _mm512_loadu_ps(p + (2 * j + 1) * C); \
    PIN(v);                                   \
    a##j = _mm512_fmadd_ps(w1, v, a##j);      \
    v = _mm512_loadu_ps(p + (2 * j + 2) * C); \
    PIN(v);                                   \
    a##j = _mm512_fmadd_ps(w2, v, a##j);      \
    a##k = _mm512_fmadd_ps(w0, v, a##k);
        v = _mm512_loadu_ps(p);
        PIN(v);
        a0 = _mm512_fmadd_ps(w0, v, a0);
        PAIR(0, 1) PAIR(1, 2) PAIR(2, 3) PAIR(3, 4) PAIR(4, 5) PAIR(5, 6) PAIR(6, 7)
#undef PAIR
        v = _mm512_loadu_ps(p + 15 * C);
        PIN(v);
        a7 = _mm512_fmadd_ps(w1, v, a7);
        v = _mm512_loadu_ps(p + 16 * C);
        PIN(v);
        a7 = _mm512_fmadd_ps(w2, v, a7);
    }
#define OUT(j) _mm512_storeu_ps(y + j * W2, act(av, a##j));
    ACC8(OUT)
#undef OUT
}

/* Eight outputs of any kernel width and stride (all taps valid for all eight), arguments
 * as blk_k3s1. */
INLINE void blk_any(const slice *s, const float *const *xr, int64_t off, const float *w, int nkh,
                    int KW, int64_t SW, const float *res, float *y, int mode)
{
    const int64_t C = s->C, Cp = s->Cp, step = SW * C;
    const __mmask16 m = s->m;
    const actv av = act_of(s);
    __m512 a0, a1, a2, a3, a4, a5, a6, a7;
#define INIT(j) a##j = res ? _mm512_add_ps(s->bias, ld(res + j * C, mode, m)) : s->bias;
    ACC8(INIT)
#undef INIT
    for (int kh = 0; kh < nkh; kh++, w += KW * Cp)
        for (int kw = 0; kw < KW; kw++) {
            const __m512 wv = _mm512_load_ps(w + kw * Cp);
            const float *p = xr[kh] + off + kw * C;
#define TAP(j) a##j = _mm512_fmadd_ps(wv, ld(p + j * step, mode, m), a##j);
            ACC8(TAP)
#undef TAP
        }
#define OUT(j) st(y + j * C, act(av, a##j), mode, m);
    ACC8(OUT)
#undef OUT
}

/* One output pixel, skipping taps in the padding (rows: all KH, NULL for padding). */
INLINE void pixel(const slice *s, const nn_cpu_dw *d, const float *const *rows, int64_t ow,
                  const float *wc, const float *res, float *y, int mode)
{
    const int64_t C = s->C;
    __m512 acc = res ? _mm512_add_ps(s->bias, ld(res, mode, s->m)) : s->bias;
    for (int kh = 0; kh < d->KH; kh++) {
        if (!rows[kh]) continue;
        const float *xr = rows[kh] + s->c0;
        for (int kw = 0; kw < d->KW; kw++) {
            int64_t iw = ow * d->SW - d->PL + kw;
            if (iw < 0 || iw >= d->IW) continue;
            acc = _mm512_fmadd_ps(_mm512_load_ps(wc + (kh * d->KW + kw) * d->Cp),
                                  ld(xr + iw * C, mode, s->m), acc);
        }
    }
    st(y, act(act_of(s), acc), mode, s->m);
}

/* One output row of one slice: rows the KH input rows under it (NULL for padding; kh0 and
 * kh1 bound the valid ones), each read from the slice's channel s->c0 on; wc, yr, rr
 * already point at the slice. */
INLINE void row_slice(const slice *s, const nn_cpu_dw *d, const float *const *rows,
                      const float *wc, const float *rr, float *yr, int kh0, int kh1,
                      int64_t ow_lo, int64_t ow_hi, int mode, int64_t Cc)
{
    const int64_t C = Cc ? Cc : s->C, SW = d->SW, KW = d->KW, c0 = s->c0;
    const int k3s1 = KW == 3 && SW == 1;
    const float *const *xr = rows + kh0;
    const float *w0 = wc + kh0 * KW * d->Cp;
    int nkh = kh1 - kh0;
    /* a last block may overlap the previous one (recomputing some pixels) unless
     * the residual is the output itself: then it would read results */
    int overlap = !rr || rr != yr;
    int64_t ow = 0, end = ow_hi, stop = d->OW;
    if (k3s1 && d->PL == 1 && ow_lo == 1 && ow_hi == d->OW - 1 && d->OW >= 32) {
        /* one column of padding each side: the end blocks skip the taps there, and the
         * columns between them are done as in any row */
        const int64_t r0 = d->OW - 16;
        blk16_k3s1(s, xr, c0, w0, nkh, rr, yr, mode, Cc, EDGE_LEFT);
        blk16_k3s1(s, xr, (r0 - 1) * C + c0, w0, nkh, rr ? rr + r0 * C : NULL, yr + r0 * C, mode,
                   Cc, EDGE_RIGHT);
        ow = ow_lo = 16;
        end = stop = r0;
    }
    for (; ow < ow_lo; ow++)
        pixel(s, d, rows, ow, wc, rr ? rr + ow * C : NULL, yr + ow * C, mode);
    if (k3s1)
        for (; ow + 16 <= end; ow += 16)
            blk16_k3s1(s, xr, (ow - d->PL) * C + c0, w0, nkh, rr ? rr + ow * C : NULL, yr + ow * C,
                       mode, Cc, 0);
    while (ow < end) {
        if (ow + 8 > end) {
            if (!overlap || end - ow_lo < 8) break;
            ow = end - 8;
        }
        const int64_t off = (ow * SW - d->PL) * C + c0;
        const float *res = rr ? rr + ow * C : NULL;
        if (k3s1) blk_k3s1(s, xr, off, w0, nkh, res, yr + ow * C, mode, Cc);
        else blk_any(s, xr, off, w0, nkh, (int)KW, SW, res, yr + ow * C, mode);
        ow += 8;
    }
    for (; ow < stop; ow++)
        pixel(s, d, rows, ow, wc, rr ? rr + ow * C : NULL, yr + ow * C, mode);
}

/* One pooled row of one slice for a 3x3 stride-1 kernel whose four input rows all lie
 * inside the image (rows[0..3]); wc and yr already point at the slice. */
INLINE void prow_slice(const slice *s, const nn_cpu_dw *d, const float *const *rows,
                       const float *wc, float *yr, int64_t ow_lo, int64_t ow_hi, int mode,
                       int64_t Cc)
{
    const int64_t C = Cc ? Cc : s->C, PW = d->OW / 2;
    int64_t q = 0, qend = PW;
    if (d->PL == 1 && ow_lo == 1 && ow_hi == d->OW - 1 && 2 * PW == d->OW && PW >= 8) {
        /* one column of padding each side: the end blocks skip the taps there */
        blkp_k3s1(s, rows, s->c0, wc, yr, mode, Cc, EDGE_LEFT);
        blkp_k3s1(s, rows, (2 * (PW - 4) - 1) * C + s->c0, wc, yr + (PW - 4) * C, mode, Cc,
                  EDGE_RIGHT);
        q = 4;
        qend = PW - 4;
    }
    while (q < qend) {
        if (2 * q >= ow_lo && 2 * q + 8 <= ow_hi && q + 4 <= qend) {
            blkp_k3s1(s, rows, (2 * q - d->PL) * C + s->c0, wc, yr + q * C, mode, Cc, 0);
            q += 4;
            continue;
        }
        /* a column pair no block covers: its four outputs one by one, then their maximum */
        float t[4][16] __attribute__((aligned(64)));
        for (int k = 0; k < 4; k++)
            pixel(s, d, rows + (k >> 1), 2 * q + (k & 1), wc, NULL, t[k], mode);
        __m512 u = ld(t[0], mode, s->m);
        for (int k = 1; k < 4; k++) u = pool_max(u, ld(t[k], mode, s->m));
        st(yr + q * C, u, mode, s->m);
        q++;
    }
}

/* The slice kinds as separate functions, so that each gets its own registers; and
 * instances for the common channel counts: with the pixel stride a constant every
 * input of a block is at an immediate offset, where a run-time stride needs an index
 * register per pixel and GCC runs out of them (measured: half the FMA rate). */
#define ROW_FN(name, mode, Cc)                                                               \
    static __attribute__((noinline)) void name(const slice *s, const nn_cpu_dw *d,            \
                                               const float *const *rows, const float *wc,     \
                                               const float *rr, float *yr, int kh0, int kh1,  \
                                               int64_t ow_lo, int64_t ow_hi)                  \
    {                                                                                        \
        row_slice(s, d, rows, wc, rr, yr, kh0, kh1, ow_lo, ow_hi, mode, Cc);                 \
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

#define PROW_FN(name, mode, Cc)                                                              \
    static __attribute__((noinline)) void name(const slice *s, const nn_cpu_dw *d,            \
                                               const float *const *rows, const float *wc,     \
                                               float *yr, int64_t ow_lo, int64_t ow_hi)       \
    {                                                                                        \
        prow_slice(s, d, rows, wc, yr, ow_lo, ow_hi, mode, Cc);                              \
    }
PROW_FN(prow_full, V_FULL, 0)
PROW_FN(prow_half, V_HALF, 0)
PROW_FN(prow_mask, V_MASK, 0)
PROW_FN(prow_full16, V_FULL, 16)
PROW_FN(prow_full32, V_FULL, 32)
PROW_FN(prow_full64, V_FULL, 64)

typedef void (*prow_fn)(const slice *, const nn_cpu_dw *, const float *const *, const float *,
                        float *, int64_t, int64_t);

typedef void (*row_fn)(const slice *, const nn_cpu_dw *, const float *const *, const float *,
                       const float *, float *, int, int, int64_t, int64_t);

/* The slice of channels [c0, c0 + 16): *s filled, its store mode returned. */
static int slice_at(const nn_cpu_dw *d, int64_t c0, slice *s)
{
    *s = (slice){.bias = _mm512_load_ps(d->b + c0), .av = act_init(&d->act, d->ns + c0),
                 .C = d->C, .Cp = d->Cp, .c0 = c0};
    return slice_mode(d->C, c0, &s->m);
}

/* One output pixel, every slice. */
static void pixel_all(const nn_cpu_dw *d, const float *const *rows, int64_t ow, const float *rr,
                      float *yr)
{
    for (int64_t c0 = 0; c0 < d->C; c0 += 16) {
        slice s;
        int mode = slice_at(d, c0, &s);
        pixel(&s, d, rows, ow, d->w + c0, rr ? rr + ow * d->C + c0 : NULL, yr + ow * d->C + c0,
              mode);
    }
}

/* One output row of a 3-wide stride-1 kernel for C = 16n + 8 channels in pixel pairs
 * (blk_pair_k3s1), the columns outside [ow_lo, ow_hi) one pixel at a time; that range
 * holds at least sixteen. Arguments as row_slice, for all channels. */
INLINE void row_pairs(const nn_cpu_dw *d, const float *const *rows, const float *rr, float *yr,
                      int kh0, int kh1, int64_t ow_lo, int64_t ow_hi, int64_t Cc)
{
    const int64_t C = Cc ? Cc : d->C, W2 = 2 * C;
    const float *const *xr = rows + kh0;
    const float *w0 = d->w2 + kh0 * 3 * W2;
    int nkh = kh1 - kh0;
    int overlap = !rr || rr != yr; /* as in row_slice */
    int64_t ow = 0;
    for (; ow < ow_lo; ow++) pixel_all(d, rows, ow, rr, yr);
    while (ow < ow_hi) {
        if (ow + 16 > ow_hi) {
            if (!overlap) break;
            ow = ow_hi - 16;
        }
        for (int64_t k = 0; k < W2; k += 16)
            blk_pair_k3s1(_mm512_load_ps(d->b2 + k), act_init(&d->act, d->ns2 + k), xr,
                          (ow - d->PL) * C + k, w0 + k, nkh, rr ? rr + ow * C + k : NULL,
                          yr + ow * C + k, C);
        ow += 16;
    }
    for (; ow < d->OW; ow++) pixel_all(d, rows, ow, rr, yr);
}

static __attribute__((noinline)) void row_pairs24(const nn_cpu_dw *d, const float *const *rows,
                                                  const float *rr, float *yr, int kh0, int kh1,
                                                  int64_t ow_lo, int64_t ow_hi)
{
    row_pairs(d, rows, rr, yr, kh0, kh1, ow_lo, ow_hi, 24);
}

static __attribute__((noinline)) void row_pairs_any(const nn_cpu_dw *d, const float *const *rows,
                                                    const float *rr, float *yr, int kh0, int kh1,
                                                    int64_t ow_lo, int64_t ow_hi)
{
    row_pairs(d, rows, rr, yr, kh0, kh1, ow_lo, ow_hi, 0);
}

/* One convolution output row: rows its KH input rows (NULL for padding), rr the
 * residual row or NULL, yr the output row. */
static void conv_row(const nn_cpu_dw *d, const float *const *rows, const float *rr, float *yr)
{
    const int64_t C = d->C;
    int64_t ow_lo, ow_hi;
    inner_columns(d->IW, d->KW, d->PL, d->SW, d->OW, &ow_lo, &ow_hi);
    int kh0 = 0, kh1 = d->KH;
    while (kh0 < kh1 && !rows[kh0]) kh0++;
    while (kh1 > kh0 && !rows[kh1 - 1]) kh1--;
    if (d->w2 && ow_hi - ow_lo >= 16) { /* C = 16n + 8, 3 wide, stride 1 */
        (C == 24 ? row_pairs24 : row_pairs_any)(d, rows, rr, yr, kh0, kh1, ow_lo, ow_hi);
        return;
    }
    row_fn full = C == 16 ? row_full16 : C == 24 ? row_full24 : C == 32 ? row_full32
                : C == 48 ? row_full48 : C == 64 ? row_full64 : C == 96 ? row_full96
                : C == 128 ? row_full128 : row_full;
    row_fn half = C == 24 ? row_half24 : row_half;
    for (int64_t c0 = 0; c0 < C; c0 += 16) {
        slice s;
        int mode = slice_at(d, c0, &s);
        row_fn f = mode == V_FULL ? full : mode == V_HALF ? half : row_mask;
        f(&s, d, rows, d->w + c0, rr ? rr + c0 : NULL, yr + c0, kh0, kh1, ow_lo, ow_hi);
    }
}

/* One pooled row (dst) from the KH + SH input rows under its two convolution rows (NULL
 * for padding); tmp holds two convolution rows where the general path needs them. */
static void pooled_row(const nn_cpu_dw *d, const float *const *rows, float *dst, float *tmp)
{
    const int64_t C = d->C, OW = d->OW;
    if (d->KH == 3 && d->KW == 3 && d->SH == 1 && d->SW == 1 && rows[0] && rows[1] && rows[2] &&
        rows[3]) {
        int64_t ow_lo, ow_hi;
        inner_columns(d->IW, d->KW, d->PL, d->SW, d->OW, &ow_lo, &ow_hi);
        prow_fn full = C == 16 ? prow_full16 : C == 32 ? prow_full32 : C == 64 ? prow_full64
                     : prow_full;
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
            slice s;
            int mode = slice_at(d, c0, &s);
            prow_fn f = mode == V_FULL ? full : mode == V_HALF ? prow_half : prow_mask;
            f(&s, d, rows, d->w + c0, dst + c0, ow_lo, ow_hi);
        }
        return;
    }
    conv_row(d, rows, NULL, tmp);
    conv_row(d, rows + d->SH, NULL, tmp + OW * C);
    pool2_row(tmp, tmp + OW * C, dst, OW / 2, C);
}

/* The n input rows from row oh * SH - PT on of the image at xn (NULL outside it). */
static void rows_of(const nn_cpu_dw *d, const float *xn, int64_t oh, int n, const float **rows)
{
    for (int k = 0; k < n; k++) {
        int64_t ih = oh * d->SH - d->PT + k;
        rows[k] = ih >= 0 && ih < d->IH ? xn + ih * d->IW * d->C : NULL;
    }
}

void nn_cpu_dw_rows_avx512(const nn_cpu_dw *d, const float *src, const float *res, float *dst,
                           int64_t row0, int64_t row1, float *tmp)
{
    const int64_t C = d->C, OW = d->OW, img = d->IH * d->IW * C;
    const float *rows[NN_CPU_DW_MAX_KH + 2];
    if (!d->pool) {
        for (int64_t r = row0; r < row1; r++) {
            rows_of(d, src + r / d->OH * img, r % d->OH, d->KH, rows);
            conv_row(d, rows, res ? res + r * OW * C : NULL, dst + r * OW * C);
        }
        return;
    }
    /* fused 2x2 stride-2 max pool */
    const int64_t PH = d->OH / 2, PW = OW / 2;
    for (int64_t pr = row0; pr < row1; pr++) {
        rows_of(d, src + pr / PH * img, 2 * (pr % PH), d->KH + d->SH, rows);
        pooled_row(d, rows, dst + pr * PW * C, tmp);
    }
}

void nn_cpu_dw_ring_row_avx512(const nn_cpu_dw *d, const float *const *rows, float *dst,
                               float *tmp)
{
    if (d->pool) pooled_row(d, rows, dst, tmp);
    else conv_row(d, rows, NULL, dst);
}

void nn_cpu_pool2_row_avx512(const float *a, const float *b, float *y, int64_t PW, int64_t C)
{
    pool2_row(a, b, y, PW, C);
}

void nn_cpu_upadd_row_avx512(const float *x, const float *r, float *y, int64_t OW, int64_t C,
                             int64_t kw)
{
    const __mmask16 tail = (__mmask16)((1u << (C & 15)) - 1);
    for (int64_t ow = 0; ow < OW; ow++) {
        const float *xp = x + ow / kw * C, *rp = r + ow * C;
        float *yp = y + ow * C;
        int64_t c = 0;
        for (; c + 16 <= C; c += 16)
            _mm512_storeu_ps(yp + c,
                             _mm512_add_ps(_mm512_loadu_ps(xp + c), _mm512_loadu_ps(rp + c)));
        if (tail)
            _mm512_mask_storeu_ps(yp + c, tail,
                                  _mm512_add_ps(_mm512_maskz_loadu_ps(tail, xp + c),
                                                _mm512_maskz_loadu_ps(tail, rp + c)));
    }
}

void nn_cpu_pool2_rows_avx512(const nn_cpu_pool2 *d, const float *x, float *y, int64_t r0,
                              int64_t r1)
{
    const int64_t C = d->C, IW = d->IW;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / d->OH, oh = r % d->OH;
        const float *a = x + (n * d->IH + 2 * oh) * IW * C;
        pool2_row(a, a + IW * C, y + r * d->OW * C, d->OW, C);
    }
}

#endif
