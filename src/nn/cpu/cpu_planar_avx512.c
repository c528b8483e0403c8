/* Planar rows for the band pipelines (cpu_chain.c): one row of a value stored as C
 * planes of W values, where channels-last (NHWC) stores W pixels of C values.
 *
 * In channels-last a vector holds sixteen channels of one pixel, so a 1x1 layer into 24
 * channels needs one broadcast per FMA and leaves a quarter of the lanes idle (or
 * blends pixel pairs, cpu_pw_avx512.c), and a depthwise layer's taps are unaligned
 * loads; BlazeFace's seven 128x128 blocks (depthwise 3x3 then 1x1 24 -> 24) ran at
 * 40 and 82 GFLOP/s there. In a plane a vector holds sixteen pixels of one channel:
 * the 1x1 layer multiplies each input vector by the weights of twelve outputs
 * (broadcasts shared by two vectors, every lane used; on cores that run a 512-bit FMA
 * as two halves, up to 24 outputs on one vector, which reads each input plane once:
 * BlazeFace 2-3% faster on the Zen 4 host, bench/ab), and the depthwise layer's left
 * and right taps are the aligned neighbours shifted by one lane (valignd), which a
 * throwaway loop measured at 94 against 66 GFLOP/s for unaligned loads (one thread,
 * Intel host, in L1); at stride 2, and in the 2x2 max pool, a row's even and odd
 * columns are split apart with two permutes per sixteen outputs. Only the pipelines'
 * rings are planar; rows are converted where a pipeline meets channels-last tensors
 * (its input, a residual read from its buffer, its output), sixteen by sixteen through
 * registers.
 *
 * A planar row is C planes of S = W + 32 floats, W a multiple of 16: plane c's values
 * at [c * S + 16, c * S + 16 + W), with a zero margin of 16 either side that the
 * depthwise layer reads as its padding column. Every output's sum is made in the order
 * the channels-last kernels make it (bias, plus the residual, then the input channels
 * or taps in order), so a pipeline's numbers do not change. Only called after a runtime
 * AVX-512F check. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"
#include "cpu_avx512.h"

#define MARGIN NN_CPU_PLANAR_MARGIN

/* The activation of one channel: av (made once, held in locals) with channel c's slope
 * from ns broadcast. */
INLINE actv act_one(actv av, const float *ns, int64_t c)
{
    if (av.neg) av.ns = _mm512_set1_ps(ns[c]);
    return av;
}

/* ---- 1x1 ----------------------------------------------------------------------------------- */

/* Outputs [o0, o0 + n) at nv vectors of pixels from x (each plane's first value of the
 * block; planes S apart), res and y likewise. n (up to 12 with two vectors, 24 with one)
 * and nv are constants. */
INLINE void pw_blk(const nn_cpu_pw *d, const float *x, int64_t S, const float *res, float *y,
                   int64_t o0, const int n, const int nv)
{
    const int64_t Ci = d->Ci, Cop = d->Cop;
    __m512 a[24][2];
#pragma GCC unroll 24
    for (int o = 0; o < n; o++) {
        const __m512 b = _mm512_set1_ps(d->b[o0 + o]);
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++)
            a[o][v] = res ? _mm512_add_ps(b, _mm512_load_ps(res + (o0 + o) * S + 16 * v)) : b;
    }
    const float *w = d->w + o0;
    for (int64_t c = 0; c < Ci; c++, w += Cop) {
        __m512 v0 = _mm512_load_ps(x + c * S);
        __m512 v1 = nv == 2 ? _mm512_load_ps(x + c * S + 16) : v0;
#pragma GCC unroll 24
        for (int o = 0; o < n; o++) {
            const __m512 wv = _mm512_set1_ps(w[o]);
            a[o][0] = _mm512_fmadd_ps(wv, v0, a[o][0]);
            if (nv == 2) a[o][1] = _mm512_fmadd_ps(wv, v1, a[o][1]);
        }
    }
    /* read after the loop, where it needs no registers */
    const actv av = act_init(&d->act, d->ns);
#pragma GCC unroll 24
    for (int o = 0; o < n; o++) {
        const actv ao = act_one(av, d->ns, o0 + o);
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) _mm512_store_ps(y + (o0 + o) * S + 16 * v, act(ao, a[o][v]));
    }
}

/* Outputs [o0, o0 + n) of the whole row: two vectors of pixels at a time for up to
 * twelve outputs, one for more (the wide groups, nn_cpu_pw.wide). */
INLINE void pw_outputs(const nn_cpu_pw *d, const float *x, int64_t S, const float *res, float *y,
                       int64_t W, int64_t o0, const int n)
{
    int64_t p = 0;
    if (n <= 12)
        for (; p + 32 <= W; p += 32)
            pw_blk(d, x + p, S, res ? res + p : NULL, y + p, o0, n, 2);
    for (; p < W; p += 16)
        pw_blk(d, x + p, S, res ? res + p : NULL, y + p, o0, n, 1);
}

/* One instance per group size. */
#define PW_N(n)                                                                                   \
    static __attribute__((noinline)) void pw_n##n(const nn_cpu_pw *d, const float *x, int64_t S, \
                                                  const float *res, float *y, int64_t W,          \
                                                  int64_t o0)                                     \
    {                                                                                             \
        pw_outputs(d, x, S, res, y, W, o0, n);                                                    \
    }
/* clang-format off */
PW_N(1) PW_N(2) PW_N(3) PW_N(4) PW_N(5) PW_N(6) PW_N(7) PW_N(8) PW_N(9) PW_N(10) PW_N(11) PW_N(12)
PW_N(13) PW_N(14) PW_N(15) PW_N(16) PW_N(17) PW_N(18) PW_N(19) PW_N(20) PW_N(21) PW_N(22) PW_N(23)
PW_N(24)

typedef void (*pw_fn)(const nn_cpu_pw *, const float *, int64_t, const float *, float *, int64_t,
                      int64_t);
/* clang-format on */

void nn_cpu_pw_planar_avx512(const nn_cpu_pw *d, const float *src, const float *res, float *dst,
                             int64_t W)
{
    static const pw_fn fns[25] = {NULL,   pw_n1,  pw_n2,  pw_n3,  pw_n4,  pw_n5,  pw_n6,
                                  pw_n7,  pw_n8,  pw_n9,  pw_n10, pw_n11, pw_n12, pw_n13,
                                  pw_n14, pw_n15, pw_n16, pw_n17, pw_n18, pw_n19, pw_n20,
                                  pw_n21, pw_n22, pw_n23, pw_n24};
    const int64_t S = W + 2 * MARGIN;
    const float *x = src + MARGIN, *r = res ? res + MARGIN : NULL;
    float *y = dst + MARGIN;
    /* groups of twelve outputs on two vectors of pixels, or of up to 24 on one (wide); the
     * rest split evenly (16 -> 8 + 8, not 12 + 4) */
    const int64_t G = d->wide ? 24 : 12;
    int64_t o0 = 0, Co = d->Co;
    while (Co - o0 > G) {
        int64_t left = Co - o0, n = left > 2 * G ? G : (left + 1) / 2;
        fns[n](d, x, S, r, y, W, o0);
        o0 += n;
    }
    fns[Co - o0](d, x, S, r, y, W, o0);
}

/* ---- depthwise 3x3, stride 1 and 2 --------------------------------------------------------- */

/* Channel c of one output row from the nk input rows p (each at channel c's first
 * value), with the taps w (row k's three at w[3 * k]); nk a constant. */
INLINE void dw_channel(const float *const *p, const int nk, const __m512 *w, __m512 bias,
                       actv av, float *y, int64_t W)
{
    __m512 prev[3], cur[3];
#pragma GCC unroll 3
    for (int k = 0; k < nk; k++) {
        prev[k] = _mm512_load_ps(p[k] - 16); /* the margin: zeros */
        cur[k] = _mm512_load_ps(p[k]);
    }
    for (int64_t x = 0; x < W; x += 16) {
        __m512 a = bias;
#pragma GCC unroll 3
        for (int k = 0; k < nk; k++) {
            const __m512 next = _mm512_load_ps(p[k] + x + 16); /* past W: the margin */
            const __m512i pi = _mm512_castps_si512(prev[k]), ci = _mm512_castps_si512(cur[k]),
                          ni = _mm512_castps_si512(next);
            const __m512 left = _mm512_castsi512_ps(_mm512_alignr_epi32(ci, pi, 15));
            const __m512 right = _mm512_castsi512_ps(_mm512_alignr_epi32(ni, ci, 1));
            a = _mm512_fmadd_ps(w[3 * k], left, a);
            a = _mm512_fmadd_ps(w[3 * k + 1], cur[k], a);
            a = _mm512_fmadd_ps(w[3 * k + 2], right, a);
            prev[k] = cur[k];
            cur[k] = next;
        }
        _mm512_store_ps(y + x, act(av, a));
    }
}

/* The even and odd columns of the 32 values at p. */
INLINE void split_phases(const float *p, __m512 *ev, __m512 *od)
{
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512 a = _mm512_load_ps(p), b = _mm512_load_ps(p + 16);
    *ev = _mm512_permutex2var_ps(a, ie, b);
    *od = _mm512_permutex2var_ps(a, io, b);
}

/* Channel c of one output row at stride 2 from the nk input rows p (each at channel c's
 * first value, 2 OW values), taps w as in dw_channel: output column j reads input
 * columns 2j - PL + kw (PL 0 or 1, a constant; past either end, the margin's zeros). */
INLINE void dw2_channel(const float *const *p, const int nk, const __m512 *w, __m512 bias, actv av,
                        float *y, int64_t OW, const int PL)
{
    for (int64_t x = 0; x < OW; x += 16) {
        __m512 a = bias;
#pragma GCC unroll 3
        for (int k = 0; k < nk; k++) {
            const float *q = p[k] + 2 * x;
            __m512 ev, od, t0, t1, t2;
            split_phases(q, &ev, &od);
            if (PL == 0) {
                t0 = ev, t1 = od;
                t2 = _mm512_castsi512_ps(_mm512_alignr_epi32(
                    _mm512_castps_si512(_mm512_load_ps(q + 32)), _mm512_castps_si512(ev), 1));
            } else {
                t0 = _mm512_castsi512_ps(_mm512_alignr_epi32(
                    _mm512_castps_si512(od), _mm512_castps_si512(_mm512_load_ps(q - 16)), 15));
                t1 = ev, t2 = od;
            }
            a = _mm512_fmadd_ps(w[3 * k], t0, a);
            a = _mm512_fmadd_ps(w[3 * k + 1], t1, a);
            a = _mm512_fmadd_ps(w[3 * k + 2], t2, a);
        }
        _mm512_store_ps(y + x, act(av, a));
    }
}

/* A row of every channel: stride 1, or (pl >= 0) stride 2 with pl columns of padding on
 * the left (dw2_channel); nk and pl constants. */
INLINE void dw_rows(const nn_cpu_dw *d, const float *const *rows, const int *kk, const int nk,
                    float *dst, const int pl)
{
    const int64_t W = d->OW, Si = (pl >= 0 ? 2 * W : W) + 2 * MARGIN, So = W + 2 * MARGIN;
    const actv av = act_init(&d->act, d->ns);
    for (int64_t c = 0; c < d->C; c++) {
        const float *p[3];
        __m512 w[9];
#pragma GCC unroll 3
        for (int k = 0; k < nk; k++) {
            p[k] = rows[kk[k]] + c * Si + MARGIN;
            for (int j = 0; j < 3; j++)
                w[3 * k + j] = _mm512_set1_ps(d->w[(kk[k] * 3 + j) * d->Cp + c]);
        }
        const __m512 b = _mm512_set1_ps(d->b[c]);
        float *y = dst + c * So + MARGIN;
        if (pl < 0)
            dw_channel(p, nk, w, b, act_one(av, d->ns, c), y, W);
        else
            dw2_channel(p, nk, w, b, act_one(av, d->ns, c), y, W, pl);
    }
}

/* Instances per count of valid input rows (none: a row all padding, bias and activation)
 * and stride: 1 (s1), 2 with no column of padding on the left (p0) or one (p1). */
/* clang-format off */
#define DW_N(n, name, pl)                                                                         \
    static __attribute__((noinline)) void dw_rows##n##_##name(                                   \
        const nn_cpu_dw *d, const float *const *rows, const int *kk, float *dst)                 \
    {                                                                                             \
        dw_rows(d, rows, kk, n, dst, pl);                                                         \
    }
DW_N(0, s1, -1) DW_N(1, s1, -1) DW_N(2, s1, -1) DW_N(3, s1, -1)
DW_N(0, p0, 0) DW_N(1, p0, 0) DW_N(2, p0, 0) DW_N(3, p0, 0)
DW_N(0, p1, 1) DW_N(1, p1, 1) DW_N(2, p1, 1) DW_N(3, p1, 1)

typedef void (*dw_fn)(const nn_cpu_dw *, const float *const *, const int *, float *);
/* clang-format on */

/* The valid input rows (rows[k] not NULL) as kk[0..nk), then fns[nk]. */
static void dw_dispatch(const dw_fn *fns, const nn_cpu_dw *d, const float *const *rows, float *dst)
{
    int kk[3], nk = 0;
    for (int k = 0; k < 3; k++)
        if (rows[k]) kk[nk++] = k;
    fns[nk](d, rows, kk, dst);
}

void nn_cpu_dw_planar_avx512(const nn_cpu_dw *d, const float *const *rows, float *dst)
{
    static const dw_fn fns[4] = {dw_rows0_s1, dw_rows1_s1, dw_rows2_s1, dw_rows3_s1};
    dw_dispatch(fns, d, rows, dst);
}

void nn_cpu_dw2_planar_avx512(const nn_cpu_dw *d, const float *const *rows, float *dst)
{
    static const dw_fn fns[2][4] = {{dw_rows0_p0, dw_rows1_p0, dw_rows2_p0, dw_rows3_p0},
                                    {dw_rows0_p1, dw_rows1_p1, dw_rows2_p1, dw_rows3_p1}};
    dw_dispatch(fns[d->PL], d, rows, dst);
}

void nn_cpu_pool2_planar_avx512(const float *a, const float *b, int64_t C, int64_t OW, float *dst)
{
    const int64_t Si = 2 * OW + 2 * MARGIN, So = OW + 2 * MARGIN;
    for (int64_t c = 0; c < C; c++) {
        const float *pa = a + c * Si + MARGIN, *pb = b + c * Si + MARGIN;
        float *y = dst + c * So + MARGIN;
        for (int64_t x = 0; x < OW; x += 16) {
            __m512 ae, ao, be, bo;
            split_phases(pa + 2 * x, &ae, &ao);
            split_phases(pb + 2 * x, &be, &bo);
            /* pool2_row's order: the top pair, then the bottom pixels */
            _mm512_store_ps(y + x, pool_max(pool_max(pool_max(ae, ao), be), bo));
        }
    }
}

/* ---- first layer: an NHWC image of 3 channels, stride 1 or 2 ------------------------------ */

/* Input row x (IW pixels of 3 values) as its SW * 3 phase rows of L floats in slot: phase
 * p of channel c holds the padded row's columns p, p + SW, ... (column i being pixel
 * i - PL, zero outside the image), so output column j's tap kw reads phase kw % SW at
 * j + kw / SW. pad is NN_CPU_CF_PLANAR_PAD floats of scratch (for groups of columns
 * at the row's ends). */
void nn_cpu_cf_planar_prep_avx512(const nn_cpu_cf *d, const float *x, float *slot, float *pad)
{
    const int64_t L = NN_CPU_CF_PLANAR_L(d), SW = d->SW, C = 3, span = SW * C * 16;
    const int64_t need = (span + 31) / 32 * 32, row = d->IW * C; /* floats loaded, in x */
    /* phase row k = c * SW + ph: lane j takes float SW * 3 * j + 3 * ph + c of a group's
     * span, from vector pair off / 32, lane off % 32 */
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i idx[6];
    __mmask16 m1[6], m2[6];
    for (int64_t c = 0; c < C; c++)
        for (int64_t ph = 0; ph < SW; ph++) {
            const int64_t k = c * SW + ph;
            const __m512i off =
                _mm512_add_epi32(_mm512_mullo_epi32(iota, _mm512_set1_epi32((int)(SW * C))),
                                 _mm512_set1_epi32((int)(C * ph + c)));
            const __m512i q = _mm512_srli_epi32(off, 5);
            idx[k] = _mm512_and_si512(off, _mm512_set1_epi32(31));
            m1[k] = _mm512_cmpeq_epi32_mask(q, _mm512_set1_epi32(1));
            m2[k] = _mm512_cmpeq_epi32_mask(q, _mm512_set1_epi32(2));
        }
    for (int64_t j = 0; j < L; j += 16) {
        /* the group's pixels from p0, read in place inside the row, else through pad
         * with zeros for the padding */
        const int64_t f0 = (SW * j - d->PL) * C;
        const float *g = pad;
        if (f0 >= 0 && f0 + need <= row) g = x + f0;
        else
            for (int64_t i = 0; i < need; i++)
                pad[i] = f0 + i >= 0 && f0 + i < row ? x[f0 + i] : 0.0f;
        for (int64_t k = 0; k < SW * C; k++) {
            __m512 v = _mm512_permutex2var_ps(_mm512_loadu_ps(g), idx[k], _mm512_loadu_ps(g + 16));
            if (span > 32)
                v = _mm512_mask_blend_ps(m1[k], v, _mm512_permutex2var_ps(
                    _mm512_loadu_ps(g + 32), idx[k], _mm512_loadu_ps(g + 48)));
            if (span > 64)
                v = _mm512_mask_blend_ps(m2[k], v, _mm512_permutex2var_ps(
                    _mm512_loadu_ps(g + 64), idx[k], _mm512_loadu_ps(g + 80)));
            _mm512_store_ps(slot + k * L + j, v);
        }
    }
}

/* Sixteen output columns from x0 of all K (a constant) outputs, in the channels-last
 * kernel's order: bias, then input channel, kernel row, kernel column; tap kw of channel
 * c reads its slot at off[c * KW + kw] + x0. */
INLINE void cf_blk(const nn_cpu_cf *d, const float *const *slots, const int64_t *off, int64_t x0,
                   float *y, const int K)
{
    const int64_t Kp = d->Kp, S = d->OW + 2 * MARGIN;
    const int KW = d->KW;
    __m512 a[24];
#pragma GCC unroll 24
    for (int k = 0; k < K; k++) a[k] = _mm512_set1_ps(d->b[k]);
    for (int c = 0; c < 3; c++)
        for (int kh = 0; kh < d->KH; kh++) {
            if (!slots[kh]) continue; /* a padding row */
            const float *w = d->w + ((int64_t)kh * KW * 3 + c) * Kp, *x = slots[kh] + x0;
            for (int kw = 0; kw < KW; kw++, w += 3 * Kp) {
                const __m512 v = _mm512_loadu_ps(x + off[c * KW + kw]);
#pragma GCC unroll 24
                for (int k = 0; k < K; k++) a[k] = _mm512_fmadd_ps(_mm512_set1_ps(w[k]), v, a[k]);
            }
        }
    const actv av = act_init(&d->act, d->ns);
#pragma GCC unroll 24
    for (int k = 0; k < K; k++)
        _mm512_store_ps(y + MARGIN + k * S + x0, act(act_one(av, d->ns, k), a[k]));
}

#define CF_K(K)                                                                               \
    static __attribute__((noinline)) void cf_k##K(const nn_cpu_cf *d, const float *const *slots, \
                                                  const int64_t *off, float *y)                \
    {                                                                                         \
        for (int64_t x0 = 0; x0 < d->OW; x0 += 16) cf_blk(d, slots, off, x0, y, K);            \
    }
CF_K(17) CF_K(18) CF_K(19) CF_K(20) CF_K(21) CF_K(22) CF_K(23) CF_K(24)

void nn_cpu_cf_planar_row_avx512(const nn_cpu_cf *d, const float *const *slots, float *dst)
{
    typedef void (*fn)(const nn_cpu_cf *, const float *const *, const int64_t *, float *);
    static const fn fns[8] = {cf_k17, cf_k18, cf_k19, cf_k20, cf_k21, cf_k22, cf_k23, cf_k24};
    const int64_t L = NN_CPU_CF_PLANAR_L(d);
    int64_t off[3 * 7];
    for (int c = 0; c < 3; c++)
        for (int kw = 0; kw < d->KW; kw++)
            off[c * d->KW + kw] = (c * d->SW + kw % d->SW) * L + kw / d->SW;
    fns[d->K - 17](d, slots, off, dst);
}

/* ---- conversions --------------------------------------------------------------------------- */

/* Transposes the 16x16 block in r: element (i, l) goes to (l, i). Round k swaps bit b =
 * 8 >> k of the row with bit b of the lane where they differ: row i (bit b clear) takes
 * lanes perm[k][0] of rows i and i + b, row i + b lanes perm[k][1]. */
static const int32_t perm[4][2][16] = {
    {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
     {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
     {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31}},
    {{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
     {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}},
    {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
     {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}}};

INLINE void transpose16(__m512 *r)
{
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const int b = 8 >> k;
        const __m512i xa = _mm512_loadu_si512(perm[k][0]), xb = _mm512_loadu_si512(perm[k][1]);
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            if (i & b) continue;
            const __m512 u = r[i], v = r[i + b];
            r[i] = _mm512_permutex2var_ps(u, xa, v);
            r[i + b] = _mm512_permutex2var_ps(u, xb, v);
        }
    }
}

/* A row between channels-last and planar, sixteen pixels by sixteen channels (the last
 * slice of channels masked). */
INLINE void convert(const float *src, int64_t C, int64_t W, float *dst, const int to_planar)
{
    const int64_t S = W + 2 * MARGIN;
    for (int64_t p = 0; p < W; p += 16)
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
            const int64_t nc = C - c0 < 16 ? C - c0 : 16;
            const __mmask16 m = (__mmask16)((1u << nc) - 1);
            __m512 r[16];
            for (int i = 0; i < 16; i++) /* pixel i, or channel c0 + i */
                r[i] = to_planar ? _mm512_maskz_loadu_ps(m, src + (p + i) * C + c0)
                       : i < nc  ? _mm512_load_ps(src + (c0 + i) * S + MARGIN + p)
                                 : _mm512_setzero_ps();
            transpose16(r);
            if (to_planar)
                for (int64_t j = 0; j < nc; j++)
                    _mm512_store_ps(dst + (c0 + j) * S + MARGIN + p, r[j]);
            else
                for (int i = 0; i < 16; i++) _mm512_mask_storeu_ps(dst + (p + i) * C + c0, m, r[i]);
        }
}

void nn_cpu_planar_from_nhwc_avx512(const float *src, int64_t C, int64_t W, float *dst)
{
    convert(src, C, W, dst, 1);
}

void nn_cpu_planar_to_nhwc_avx512(const float *src, int64_t C, int64_t W, float *dst)
{
    convert(src, C, W, dst, 0);
}

void nn_cpu_planar_margins(float *row, int64_t C, int64_t W)
{
    const int64_t S = W + 2 * MARGIN;
    for (int64_t c = 0; c < C; c++) {
        memset(row + c * S, 0, sizeof(float) * MARGIN);
        memset(row + c * S + MARGIN + W, 0, sizeof(float) * MARGIN);
    }
}

#endif
