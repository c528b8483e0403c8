/* Our own "first layer" convolution for the cpu backend: an f32 image with few channels
 * (C <= 4: RGB, gray), plain NCHW or, with 3 channels, stored NHWC (TF.js models), into
 * at most 32 output channels or exactly 64, written channels-last (NHWC), with AVX-512,
 * optionally followed by a fused 2x2 stride-2 max pool. Every face detector starts so
 * (YuNet 3x3 s2 3 -> 16 at 640x640, UltraFace 3x3 s2 3 -> 16, BlazeFace 5x5 s2 3 -> 24
 * or 32), and there oneDNN 2.6 has only its direct kernel writing nChw16c (exactly NHWC
 * for 16 channels; other counts need a reorder) or brgconv on a staged NHWC copy of the
 * image; the liveness model's 3x3 3 -> 64 layer with its pool ran at 66 GFLOP/s there
 * (its 4 MB unpooled output streams through L3 on the Intel host).
 *
 * The work is one output row per call (nn_cpu_cf_row_avx512), so that a banded pipeline
 * can produce rows in any order into a ring buffer; a pooled row is two such rows into
 * a buffer, then their maxima. A block is up to thirty output pixels of one 16-channel
 * slice (up to 16 outputs) or fourteen pixels of two slices (17-32; 64 outputs are two
 * such groups): up to 30 accumulators in registers, and for each input channel, kernel
 * row and tap one weight row per slice times each pixel's input value broadcast from
 * memory. With the stride and the input's pixel step (1 plain, 3 NHWC) compile-time
 * constants every broadcast is an immediate offset from one pointer. Long blocks matter:
 * each block ends in a drain (the last taps' latency, the activation and stores), and
 * 16-pixel blocks ran at 75% of the FMA peak where 30-pixel ones reach 92% (in L1, 3x3
 * kernel, 3 channels). Shorter blocks finish a row; columns whose window reaches into
 * the left or right padding take a per-pixel path that skips those taps, and kernel rows
 * outside the image are skipped for the whole output row. The sum runs in the reference
 * kernel's order (bias, then input channel, kernel row, kernel column), each product
 * fused into the sum. Only called after a runtime AVX-512F check. */
#include <immintrin.h>
#include <stdint.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"
#include "cpu_avx512.h"

/* Hides where a pointer points: with stride 2 the taps kw and kw + 2 read the same
 * inputs one pixel apart, and GCC then keeps broadcasts in registers from one tap to
 * the next (predictive commoning), spilling accumulators (measured: 110 GFLOP/s instead
 * of 130 with 16-pixel blocks). */
#define HIDE(p) __asm__("" : "+r"(p))

#define L4(X) X(0) X(1) X(2) X(3)
#define L8(X) L4(X) X(4) X(5) X(6) X(7)
#define L14(X) L8(X) X(8) X(9) X(10) X(11) X(12) X(13)
#define L16(X) L14(X) X(14) X(15)
#define L30(X) L16(X) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) \
    X(27) X(28) X(29)

/* The geometry a block needs, in locals (see actv in cpu_avx512.h). */
typedef struct cgeo {
    int64_t plane, IW, K, Kp; /* input channel and row stride, output pixel stride, weights */
    int C, KW;
} cgeo;

/* A block of one slice over the pixels of LIST: x is the input under the first tap of
 * the first valid kernel row of input channel 0, w that row's weights, nkh the valid
 * rows. Accumulators are named variables (GCC spills arrays of vectors). */
#define BLK1(name, LIST)                                                                   \
    INLINE void name(const cgeo *g, const float *x, const float *w, int nkh,             \
                     const out_slice *s, float *y, const int SW, const int mode,         \
                     const int PS, const int KS)                                          \
    {                                                                                    \
        const int64_t plane = g->plane, IW = g->IW, Kp = g->Kp;                         \
        /* the output pixel stride, a constant where the slice kind fixes it: GCC        \
         * keeps thirty store addresses on the stack otherwise */                        \
        const int64_t K = KS ? KS : mode == V_FULL ? 16 : mode == V_HALF ? 8 : g->K;     \
        const int C = g->C, KW = g->KW;                                                  \
        const int64_t tap = C * Kp, row = KW * tap;                                      \
        const __m512 bias = s->bias;                                                     \
        LIST(DECL1)                                                                      \
        for (int c = 0; c < C; c++)                                                      \
            for (int kh = 0; kh < nkh; kh++) {                                           \
                const float *xr = x + c * plane + kh * IW, *wr = w + c * Kp + kh * row;  \
                for (int kw = 0; kw < KW; kw++, xr += PS, wr += tap) {                   \
                    HIDE(xr);                                                            \
                    const __m512 wv = _mm512_load_ps(wr);                                \
                    LIST(FMA1)                                                           \
                }                                                                        \
            }                                                                            \
        const out_slice sl = *s;                                                            \
        LIST(OUT1)                                                                       \
    }
#define DECL1(j) __m512 a##j = bias;
#define FMA1(j) a##j = _mm512_fmadd_ps(_mm512_set1_ps(xr[j * SW * PS]), wv, a##j);
#define OUT1(j) st(y + j * K, act(sl.av, a##j), mode, sl.m);

/* The same over two slices (the second may be partial): each broadcast feeds both. */
#define BLK2(name, LIST)                                                                   \
    INLINE void name(const cgeo *g, const float *x, const float *w, int nkh,             \
                     const out_slice *s, float *y, const int SW, const int mode,         \
                     const int PS, const int KS)                                          \
    {                                                                                    \
        const int64_t plane = g->plane, IW = g->IW, Kp = g->Kp;                         \
        const int64_t K = KS ? KS : mode == V_FULL ? 32 : mode == V_HALF ? 24 : g->K;    \
        const int C = g->C, KW = g->KW;                                                  \
        const int64_t tap = C * Kp, row = KW * tap;                                      \
        const __m512 b0 = s[0].bias, b1 = s[1].bias;                                     \
        LIST(DECL2)                                                                      \
        for (int c = 0; c < C; c++)                                                      \
            for (int kh = 0; kh < nkh; kh++) {                                           \
                const float *xr = x + c * plane + kh * IW, *wr = w + c * Kp + kh * row;  \
                for (int kw = 0; kw < KW; kw++, xr += PS, wr += tap) {                   \
                    HIDE(xr);                                                            \
                    const __m512 w0 = _mm512_load_ps(wr), w1 = _mm512_load_ps(wr + 16);  \
                    __m512 v;                                                            \
                    LIST(FMA2)                                                           \
                }                                                                        \
            }                                                                            \
        const out_slice s0 = s[0], s1 = s[1];                                               \
        LIST(OUT2)                                                                       \
    }
#define DECL2(j) __m512 a##j = b0, c##j = b1;
/* the broadcast pinned in a register: GCC would fold it into both FMAs (two loads) */
#define FMA2(j)                                \
    v = _mm512_set1_ps(xr[j * SW * PS]);       \
    PIN(v);                                    \
    a##j = _mm512_fmadd_ps(v, w0, a##j);       \
    c##j = _mm512_fmadd_ps(v, w1, c##j);
#define OUT2(j)                                                     \
    _mm512_storeu_ps(y + j * K, act(s0.av, a##j));              \
    st(y + j * K + 16, act(s1.av, c##j), mode, s1.m);

BLK1(blk1_30, L30)
BLK1(blk1_16, L16)
BLK1(blk1_8, L8)
BLK2(blk2_14, L14)
BLK2(blk2_8, L8)
BLK2(blk2_4, L4)

/* One pixel of every slice, skipping the taps in the left and right padding: xr is the
 * image's first valid kernel row at channel 0, w that row's weights, iw0 the input
 * column under the first tap, PS the input's pixel step (IW columns of it per row). */
INLINE void pixel(const cgeo *g, const float *xr, const float *w, int nkh, int64_t iw0,
                  const out_slice *s, int ns, float *y, const int PS)
{
    const int64_t tap = g->C * g->Kp, row = g->KW * tap, IW = g->IW / PS;
    for (int j = 0; j < ns; j++) {
        __m512 a = s[j].bias;
        for (int c = 0; c < g->C; c++)
            for (int kh = 0; kh < nkh; kh++) {
                const float *x = xr + c * g->plane + kh * g->IW;
                const float *wr = w + c * g->Kp + kh * row + 16 * j;
                for (int kw = 0; kw < g->KW; kw++) {
                    int64_t iw = iw0 + kw;
                    if (iw < 0 || iw >= IW) continue;
                    a = _mm512_fmadd_ps(_mm512_set1_ps(x[iw * PS]), _mm512_load_ps(wr + kw * tap),
                                        a);
                }
            }
        st(y + 16 * j, act(s[j].av, a), s[j].mode, s[j].m);
    }
}

/* One output row for a stride and the last slice's kind (the first of two is whole), the
 * input's pixel step PS and the output's pixel stride KS (0: as the slices say). */
INLINE void row(const nn_cpu_cf *d, const cgeo *g, const out_slice *s, const int ns,
                const float *xr, const float *w, int nkh, float *y, const int SW, const int mode,
                const int PS, const int KS)
{
    const int64_t OW = d->OW, K = d->K, PL = d->PL, KW = d->KW;
    int64_t lo, hi; /* the columns whose whole window lies inside the input width */
    inner_columns(d->IW, KW, PL, SW, OW, &lo, &hi);
    /* block widths: long, middle, short */
    const int64_t bl = ns == 1 ? 30 : 14, bm = ns == 1 ? 16 : 8, bs = ns == 1 ? 8 : 4;
#define BLOCK(n1, n2, at)                                                                 \
    do {                                                                                  \
        const float *x_ = xr + ((at) * SW - PL) * PS;                                     \
        if (ns == 1) n1(g, x_, w, nkh, s, y + (at) * K, SW, mode, PS, KS);                \
        else n2(g, x_, w, nkh, s, y + (at) * K, SW, mode, PS, KS);                        \
    } while (0)
    int64_t ow = 0;
    for (; ow < lo; ow++) pixel(g, xr, w, nkh, ow * SW - PL, s, ns, y + ow * K, PS);
    for (; ow + bl <= hi; ow += bl) BLOCK(blk1_30, blk2_14, ow);
    if (ow + bm <= hi) {
        BLOCK(blk1_16, blk2_8, ow);
        ow += bm;
    }
    /* the rest by a middle or short block that ends at hi and overlaps the one before
     * (a few pixels computed twice; measured: cheaper than a long block there) where
     * the interior is that wide, else by whole short blocks first */
    if (ow < hi && hi - ow > bs && hi - lo >= bm) {
        BLOCK(blk1_16, blk2_8, hi - bm);
        ow = hi;
    }
    for (; ow + bs <= hi; ow += bs) BLOCK(blk1_8, blk2_4, ow);
    if (ow < hi && hi - lo >= bs) {
        BLOCK(blk1_8, blk2_4, hi - bs);
        ow = hi;
    }
#undef BLOCK
    for (; ow < OW; ow++) pixel(g, xr, w, nkh, ow * SW - PL, s, ns, y + ow * K, PS);
}

/* Instances per stride, slice count, tail kind and input pixel step: each gets its own
 * registers and immediate offsets; with 64 outputs, two groups of two slices at an
 * output pixel stride of 64. */
#define ROW_FN(name, ns, SW, mode, PS, KS)                                                    \
    static __attribute__((noinline)) void name(const nn_cpu_cf *d, const cgeo *g,             \
                                               const out_slice *s, const float *xr,           \
                                               const float *w, int nkh, float *y)             \
    {                                                                                        \
        row(d, g, s, ns, xr, w, nkh, y, SW, mode, PS, KS);                                   \
    }
#define ROW_FNS(PS)                                             \
    ROW_FN(row1_s1_full_##PS, 1, 1, V_FULL, PS, 0)              \
    ROW_FN(row1_s1_half_##PS, 1, 1, V_HALF, PS, 0)              \
    ROW_FN(row1_s1_mask_##PS, 1, 1, V_MASK, PS, 0)              \
    ROW_FN(row1_s2_full_##PS, 1, 2, V_FULL, PS, 0)              \
    ROW_FN(row1_s2_half_##PS, 1, 2, V_HALF, PS, 0)              \
    ROW_FN(row1_s2_mask_##PS, 1, 2, V_MASK, PS, 0)              \
    ROW_FN(row2_s1_full_##PS, 2, 1, V_FULL, PS, 0)              \
    ROW_FN(row2_s1_half_##PS, 2, 1, V_HALF, PS, 0)              \
    ROW_FN(row2_s1_mask_##PS, 2, 1, V_MASK, PS, 0)              \
    ROW_FN(row2_s2_full_##PS, 2, 2, V_FULL, PS, 0)              \
    ROW_FN(row2_s2_half_##PS, 2, 2, V_HALF, PS, 0)              \
    ROW_FN(row2_s2_mask_##PS, 2, 2, V_MASK, PS, 0)              \
    ROW_FN(row4_s1_##PS, 2, 1, V_FULL, PS, 64)                  \
    ROW_FN(row4_s2_##PS, 2, 2, V_FULL, PS, 64)
ROW_FNS(1)
ROW_FNS(3)

typedef void (*row_fn)(const nn_cpu_cf *, const cgeo *, const out_slice *, const float *,
                       const float *, int, float *);

/* [pixel step 1 or 3][slices 1, 2 or two groups of 2][stride 1 or 2][last slice kind] */
#define ROW_TABLE(PS)                                                                      \
    {{{row1_s1_full_##PS, row1_s1_half_##PS, row1_s1_mask_##PS},                           \
      {row1_s2_full_##PS, row1_s2_half_##PS, row1_s2_mask_##PS}},                          \
     {{row2_s1_full_##PS, row2_s1_half_##PS, row2_s1_mask_##PS},                           \
      {row2_s2_full_##PS, row2_s2_half_##PS, row2_s2_mask_##PS}},                          \
     {{row4_s1_##PS, row4_s1_##PS, row4_s1_##PS}, {row4_s2_##PS, row4_s2_##PS, row4_s2_##PS}}}
static const row_fn row_fns[2][3][2][3] = {ROW_TABLE(1), ROW_TABLE(3)};

/* The input's pixel step (3 for an NHWC image, else 1) and the block geometry: input
 * channel stride and row stride in floats. */
static int cf_pixel_step(const nn_cpu_cf *d) { return d->nhwc ? (int)d->C : 1; }

static cgeo cf_geo(const nn_cpu_cf *d)
{
    const cgeo g = {.plane = d->nhwc ? 1 : d->IH * d->IW, .IW = d->IW * cf_pixel_step(d),
                    .K = d->K, .Kp = d->Kp, .C = (int)d->C, .KW = d->KW};
    return g;
}

void nn_cpu_cf_row_avx512(const nn_cpu_cf *d, const float *src, float *dst, int64_t oh)
{
    const int ns = d->K > 16 ? 2 : 1, groups = d->K > 32 ? 2 : 1;
    out_slice s[4];
    for (int j = 0; j < ns * groups; j++) s[j] = out_slice_at(d->b, d->ns, &d->act, d->K, 16 * j);
    const int PS = cf_pixel_step(d);
    const cgeo g = cf_geo(d);
    /* the kernel rows inside the image: [kh0, kh1) */
    const int64_t ih = oh * d->SH - d->PT;
    int kh0 = 0, kh1 = d->KH;
    while (kh0 < kh1 && ih + kh0 < 0) kh0++;
    while (kh1 > kh0 && ih + kh1 - 1 >= d->IH) kh1--;
    const float *xr = kh1 > kh0 ? src + (ih + kh0) * g.IW : src;
    const float *w = d->w + (int64_t)kh0 * d->KW * d->C * d->Kp;
    row_fn f = row_fns[PS == 3][groups == 2 ? 2 : ns - 1][d->SW - 1][s[ns - 1].mode];
    for (int k = 0; k < groups; k++) f(d, &g, s + 2 * k, xr, w + 32 * k, kh1 - kh0, dst + 32 * k);
}

/* ---- a pool in registers --------------------------------------------------------------
 * Stride 1 into 64 outputs (the liveness model's 3x3 layer): each pooled pixel's four
 * convolution outputs (rows r, columns q) are eight accumulators of one group of two
 * slices, so three pooled pixels are 24 and each tap's two weight vectors feed twelve
 * broadcasts. The maxima are taken in registers, in MaxPool's order over the activated
 * values (as pool2_row over the stored rows), and only the pooled pixel is stored: the
 * two convolution rows never go through memory. Same sums, same order, same bytes as
 * the two-row path. x is the input under the first tap of the first pixel's top-left
 * output, at input channel 0; every kernel row is inside the image. */
#define PBLK(name, LIST)                                                                   \
    INLINE void name(const cgeo *g, const float *x, const float *w, int KH,              \
                     const out_slice *s, float *y, const int PS)                          \
    {                                                                                    \
        const int64_t plane = g->plane, IW = g->IW, Kp = g->Kp;                         \
        const int C = g->C, KW = g->KW;                                                  \
        const int64_t tap = C * Kp, row = KW * tap;                                      \
        const __m512 b0 = s[0].bias, b1 = s[1].bias;                                     \
        LIST(DECLP)                                                                      \
        POOLED_TAPS(const __m512 w0 = _mm512_load_ps(wr), w1 = _mm512_load_ps(wr + 16);  \
                    __m512 v;                                                            \
                    LIST(FMAP))                                                          \
        const actv v0 = s[0].av, v1 = s[1].av;                                           \
        LIST(OUTP)                                                                       \
    }
#define DECLP(j)                                                            \
    __m512 a##j##00 = b0, a##j##01 = b0, a##j##10 = b0, a##j##11 = b0;      \
    __m512 c##j##00 = b1, c##j##01 = b1, c##j##10 = b1, c##j##11 = b1;
#define FMAP1(j, r, q, xp)                                  \
    v = _mm512_set1_ps(xp[(2 * j + q) * PS]);               \
    PIN(v);                                                 \
    a##j##r##q = _mm512_fmadd_ps(v, w0, a##j##r##q);        \
    c##j##r##q = _mm512_fmadd_ps(v, w1, c##j##r##q);
#define FMAP(j) FMAP1(j, 0, 0, x0) FMAP1(j, 0, 1, x0) FMAP1(j, 1, 0, x1) FMAP1(j, 1, 1, x1)
#define POOL4(av, p)                                                                     \
    pool_max(pool_max(pool_max(act(av, p##00), act(av, p##01)), act(av, p##10)),         \
             act(av, p##11))
#define OUTP(j)                                                  \
    _mm512_storeu_ps(y + j * 64, POOL4(v0, a##j));               \
    _mm512_storeu_ps(y + j * 64 + 16, POOL4(v1, c##j));
/* The taps of PBLK and PBLK1S: for every input channel, kernel row and kernel column,
 * x0 and x1 under the tap for the two convolution rows, wr at its weights; the
 * arguments are what each tap does. */
#define POOLED_TAPS(...)                                                                 \
    for (int c = 0; c < C; c++)                                                          \
        for (int kh = 0; kh < KH; kh++) {                                                \
            const float *x0 = x + c * plane + kh * IW, *x1 = x0 + IW;                   \
            const float *wr = w + c * Kp + kh * row;                                     \
            for (int kw = 0; kw < KW; kw++, x0 += PS, x1 += PS, wr += tap) {             \
                HIDE(x0);                                                                \
                HIDE(x1);                                                                \
                __VA_ARGS__                                                              \
            }                                                                            \
        }

#define L1(X) X(0)
#define L3(X) X(0) X(1) X(2)

PBLK(pblk_3, L3)
PBLK(pblk_1, L1)

/* The same for one slice of at most 16 outputs (MTCNN's P-Net: 3 -> 10 with PReLU):
 * six pooled pixels are 24 accumulators, each tap's weight vector meets 24 broadcasts,
 * and the pooled pixel is stored as the slice says (K lanes, K apart). */
#define PBLK1S(name, LIST)                                                                 \
    INLINE void name(const cgeo *g, const float *x, const float *w, int KH,              \
                     const out_slice *s, float *y, const int PS)                          \
    {                                                                                    \
        const int64_t plane = g->plane, IW = g->IW, Kp = g->Kp, K = g->K;               \
        const int C = g->C, KW = g->KW;                                                  \
        const int64_t tap = C * Kp, row = KW * tap;                                      \
        const __m512 b0 = s->bias;                                                       \
        LIST(DECLP1)                                                                     \
        POOLED_TAPS(const __m512 w0 = _mm512_load_ps(wr); LIST(FMAP1S))                  \
        const out_slice sl = *s;                                                            \
        LIST(OUTP1)                                                                      \
    }
#define DECLP1(j) __m512 a##j##00 = b0, a##j##01 = b0, a##j##10 = b0, a##j##11 = b0;
#define FMAP1S1(j, r, q, xp) \
    a##j##r##q = _mm512_fmadd_ps(_mm512_set1_ps(xp[(2 * j + q) * PS]), w0, a##j##r##q);
#define FMAP1S(j) \
    FMAP1S1(j, 0, 0, x0) FMAP1S1(j, 0, 1, x0) FMAP1S1(j, 1, 0, x1) FMAP1S1(j, 1, 1, x1)
#define OUTP1(j) st(y + j * K, POOL4(sl.av, a##j), sl.mode, sl.m);
#define L6(X) X(0) X(1) X(2) X(3) X(4) X(5)

PBLK1S(pblk1s_6, L6)
PBLK1S(pblk1s_1, L1)

/* Pooled row ph, stride 1, 64 outputs (two groups of two slices) or at most 16 (one
 * slice), every kernel row of both convolution rows inside the image: the columns whose
 * windows are whole in registers, the others (left and right padding) per convolution
 * pixel into tmp, a 2x2 block pooled as two rows. */
INLINE void pooled_row_regs(const nn_cpu_cf *d, const cgeo *g, const out_slice *s,
                            const float *src, float *dst, int64_t ph, float *tmp, const int PS)
{
    const int64_t PW = d->OW / 2, K = d->K;
    const int one = K <= 16, run = one ? 6 : 3; /* pooled pixels of a long block */
    const float *xr = src + (2 * ph - d->PT) * g->IW; /* conv row 2 ph, kernel row 0 */
    int64_t lo, hi;
    inner_columns(d->IW, d->KW, d->PL, 1, d->OW, &lo, &hi);
    const int64_t plo = (lo + 1) / 2, phi = hi / 2 > plo ? hi / 2 : plo;
    for (int64_t pw = 0; pw < PW; pw++) {
        if (pw >= plo && pw < phi) {
            const int many = pw + run <= phi;
            const float *x = xr + (2 * pw - d->PL) * PS;
            if (one) {
                if (many) pblk1s_6(g, x, d->w, d->KH, s, dst + pw * K, PS);
                else pblk1s_1(g, x, d->w, d->KH, s, dst + pw * K, PS);
            } else {
                for (int k = 0; k < 2; k++) {
                    float *y = dst + pw * 64 + 32 * k;
                    if (many) pblk_3(g, x, d->w + 32 * k, d->KH, s + 2 * k, y, PS);
                    else pblk_1(g, x, d->w + 32 * k, d->KH, s + 2 * k, y, PS);
                }
            }
            if (many) pw += run - 1;
            continue;
        }
        /* an edge pixel: its four convolution outputs (two rows of two), then their
         * maxima */
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < 2; q++) {
                if (one) {
                    pixel(g, xr + r * g->IW, d->w, d->KH, 2 * pw + q - d->PL, s, 1,
                          tmp + (2 * r + q) * K, PS);
                    continue;
                }
                for (int k = 0; k < 2; k++)
                    pixel(g, xr + r * g->IW, d->w + 32 * k, d->KH, 2 * pw + q - d->PL, s + 2 * k,
                          2, tmp + (2 * r + q) * 64 + 32 * k, PS);
            }
        pool2_row(tmp, tmp + 2 * K, dst + pw * K, 1, K);
    }
}

static __attribute__((noinline)) void pooled_regs_1(const nn_cpu_cf *d, const cgeo *g,
                                                    const out_slice *s, const float *src,
                                                    float *dst, int64_t ph, float *tmp)
{
    pooled_row_regs(d, g, s, src, dst, ph, tmp, 1);
}

static __attribute__((noinline)) void pooled_regs_3(const nn_cpu_cf *d, const cgeo *g,
                                                    const out_slice *s, const float *src,
                                                    float *dst, int64_t ph, float *tmp)
{
    pooled_row_regs(d, g, s, src, dst, ph, tmp, 3);
}

void nn_cpu_cf_pooled_row_avx512(const nn_cpu_cf *d, const float *src, float *dst, int64_t ph,
                                 float *tmp)
{
    const int64_t row = d->OW * d->K, ih = 2 * ph - d->PT;
    /* both convolution rows (input rows ih .. ih + KH) inside the image */
    if ((d->K == 64 || d->K <= 16) && d->SH == 1 && d->SW == 1 && ih >= 0 &&
        ih + 1 + d->KH <= d->IH) {
        out_slice s[4];
        for (int j = 0; j < (d->K == 64 ? 4 : 1); j++)
            s[j] = out_slice_at(d->b, d->ns, &d->act, d->K, 16 * j);
        const cgeo g = cf_geo(d);
        if (cf_pixel_step(d) == 3) pooled_regs_3(d, &g, s, src, dst, ph, tmp);
        else pooled_regs_1(d, &g, s, src, dst, ph, tmp);
        return;
    }
    nn_cpu_cf_row_avx512(d, src, tmp, 2 * ph);
    nn_cpu_cf_row_avx512(d, src, tmp + row, 2 * ph + 1);
    pool2_row(tmp, tmp + row, dst, d->OW / 2, d->K);
}

#endif
