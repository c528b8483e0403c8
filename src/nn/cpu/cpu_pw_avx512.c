/* Our own 1x1 convolution for the cpu backend's narrow layers: channels-last (NHWC) f32
 * with AVX-512, into at most 64 output channels (or a multiple of 64, 64 at a time, for
 * band pipelines and layers with PReLU: MobileFaceNet's expansions). oneDNN 2.6 runs such layers
 * well below the FMA rate: FaceMesh's 16 -> 16 layers at 96x96 at about 70 GFLOP/s (its blocked 1x1
 * kernel), BlazeFace's 24 -> 24 at 128x128 at about 145 (brgconv; 24 channels fill a 32-lane pair
 * of vectors only three quarters); together those layers are 20-40% of both models (`facefuse bench
 * nn --profile`). Into 33-64 channels oneDNN's brgconv is about as fast (one thread, FMA peak 179
 * GFLOP/s; 64 -> 64 at 80x80 and 32 -> 64 at 160x160 called alone: this kernel 166 and 146 GFLOP/s,
 * oneDNN 158-163 and 136-140; in a model after a 3x3 conv both 105 and 77), so there this kernel
 * runs only where the builder is told to (cpu_dense.c, build_pw_custom).
 *
 * A block is sixteen pixels of one 16-channel slice (up to 16 outputs), eight pixels
 * of two slices (17-32 outputs; exactly 24 as eight pixel pairs filling three whole
 * vectors, blk24) or four pixels of three or four slices (33-64 outputs): 12-24
 * accumulators in registers, and for each input channel one weight row per slice
 * times each pixel's input value broadcast from memory once. With the input channel
 * count a compile-time constant (instances for the common counts) every broadcast is
 * an immediate offset from one pointer. Bias, an optional residual (the node's sum
 * input, which may be the output itself) and the activation are applied before one
 * store per pixel and slice; pixels left after the last whole block take a one-pixel
 * path. Only called after a runtime AVX-512F check. */
#include <immintrin.h>
#include <stdint.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"
#include "cpu_avx512.h"

#define ACC4(X) X(0) X(1) X(2) X(3)
#define ACC8(X) ACC4(X) X(4) X(5) X(6) X(7)
#define ACC16(X) ACC8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* Sixteen pixels of one slice: x the first pixel's input, y its output. */
INLINE void blk16(const float *x, int64_t Ci, const float *w, const out_slice *s, const float *res,
                  float *y, int64_t Co)
{
    const __m512 bias = s->bias;
    const int mode = s->mode;
    const __mmask16 m = s->m;
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15;
#define INIT(j) a##j = res ? _mm512_add_ps(bias, ld(res + j * Co, mode, m)) : bias;
    ACC16(INIT)
#undef INIT
    for (int64_t c = 0; c < Ci; c++) {
        const __m512 wv = _mm512_load_ps(w + c * 16);
#define FMA(j) a##j = _mm512_fmadd_ps(_mm512_set1_ps(x[j * Ci + c]), wv, a##j);
        ACC16(FMA)
#undef FMA
    }
    const actv av = s->av;
#define OUT(j) st(y + j * Co, act(av, a##j), mode, m);
    ACC16(OUT)
#undef OUT
}

/* Eight pixels of two slices (the second may be partial). */
INLINE void blk8x2(const float *x, int64_t Ci, const float *w, int64_t Cop, const out_slice *s,
                   const float *res, float *y, int64_t Co)
{
    const __m512 b0 = s[0].bias, b1 = s[1].bias;
    const int mode = s[1].mode;
    const __mmask16 m = s[1].m;
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, c0, c1, c2, c3, c4, c5, c6, c7;
#define INIT(j)                                                                          \
    a##j = res ? _mm512_add_ps(b0, _mm512_loadu_ps(res + j * Co)) : b0;                  \
    c##j = res ? _mm512_add_ps(b1, ld(res + j * Co + 16, mode, m)) : b1;
    ACC8(INIT)
#undef INIT
    for (int64_t c = 0; c < Ci; c++) {
        const __m512 w0 = _mm512_load_ps(w + c * Cop), w1 = _mm512_load_ps(w + c * Cop + 16);
        __m512 v;
#define FMA(j)                                 \
    v = _mm512_set1_ps(x[j * Ci + c]);         \
    PIN(v);                                    \
    a##j = _mm512_fmadd_ps(v, w0, a##j);       \
    c##j = _mm512_fmadd_ps(v, w1, c##j);
        ACC8(FMA)
#undef FMA
    }
    const actv v0 = s[0].av, v1 = s[1].av;
#define OUT(j)                                            \
    _mm512_storeu_ps(y + j * Co, act(v0, a##j));          \
    st(y + j * Co + 16, act(v1, c##j), mode, m);
    ACC8(OUT)
#undef OUT
}

/* Four pixels of n = 3 or 4 slices (the last may be partial; n a constant, so the
 * fourth slice's code is gone when n is 3). Four pixels measured fastest: with three
 * slices blocks of eight (24 accumulators) were up to 7% slower (64 -> 48 at 160x160:
 * 145 against 155 GFLOP/s) and of six up to 3%; with four, blocks of six 1-5%, of seven
 * (28, broadcasts or weights from memory operands) 3-8%, of three about 22%. */
INLINE void blk4xn(const float *x, int64_t Ci, const float *w, int64_t Cop, const out_slice *s,
                   const float *res, float *y, int64_t Co, const int n)
{
    const __m512 b0 = s[0].bias, b1 = s[1].bias, b2 = s[2].bias;
    const __m512 b3 = n == 4 ? s[3].bias : _mm512_setzero_ps();
    const int mode = s[n - 1].mode;
    const __mmask16 m = s[n - 1].m;
    const int m2 = n == 4 ? V_FULL : mode; /* how the third slice is loaded and stored */
    __m512 a0, a1, a2, a3, c0, c1, c2, c3, e0, e1, e2, e3, g0, g1, g2, g3;
#define INIT(j)                                                                          \
    a##j = res ? _mm512_add_ps(b0, _mm512_loadu_ps(res + j * Co)) : b0;                  \
    c##j = res ? _mm512_add_ps(b1, _mm512_loadu_ps(res + j * Co + 16)) : b1;             \
    e##j = res ? _mm512_add_ps(b2, ld(res + j * Co + 32, m2, m)) : b2;                   \
    g##j = res && n == 4 ? _mm512_add_ps(b3, ld(res + j * Co + 48, mode, m)) : b3;
    ACC4(INIT)
#undef INIT
    for (int64_t c = 0; c < Ci; c++) {
        const float *wc = w + c * Cop;
        const __m512 w0 = _mm512_load_ps(wc), w1 = _mm512_load_ps(wc + 16),
                     w2 = _mm512_load_ps(wc + 32);
        const __m512 w3 = n == 4 ? _mm512_load_ps(wc + 48) : _mm512_setzero_ps();
        __m512 v;
#define FMA(j)                                        \
    v = _mm512_set1_ps(x[j * Ci + c]);                \
    PIN(v);                                           \
    a##j = _mm512_fmadd_ps(v, w0, a##j);              \
    c##j = _mm512_fmadd_ps(v, w1, c##j);              \
    e##j = _mm512_fmadd_ps(v, w2, e##j);              \
    if (n == 4) g##j = _mm512_fmadd_ps(v, w3, g##j);
        ACC4(FMA)
#undef FMA
    }
    const actv v0 = s[0].av, v1 = s[1].av, v2 = s[2].av, v3 = s[n - 1].av;
#define OUT(j)                                                         \
    _mm512_storeu_ps(y + j * Co, act(v0, a##j));                       \
    _mm512_storeu_ps(y + j * Co + 16, act(v1, c##j));                  \
    st(y + j * Co + 32, act(v2, e##j), m2, m);                         \
    if (n == 4) st(y + j * Co + 48, act(v3, g##j), mode, m);
    ACC4(OUT)
#undef OUT
}

/* Sixteen pixels into 24 channels, as eight pairs whose 48 outputs fill three whole
 * vectors (where two slices per pixel would leave a quarter of the lanes empty): the
 * middle vector holds the first pixel's channels 16-23 and the second's 0-7, so it is
 * multiplied by the two pixels' values merged in one register; the weight rows, bias
 * and slopes are stored twice over (48 wide) to match. */
INLINE void blk24(const float *x, int64_t Ci, const float *w, const out_slice *s, const float *res,
                  float *y)
{
    const __m512 b0 = s[0].bias, b1 = s[1].bias, b2 = s[2].bias;
    __m512 a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32, a40, a41, a42, a50, a51,
        a52, a60, a61, a62, a70, a71, a72;
#define INIT(i)                                                                       \
    a##i##0 = res ? _mm512_add_ps(b0, _mm512_loadu_ps(res + i * 48)) : b0;            \
    a##i##1 = res ? _mm512_add_ps(b1, _mm512_loadu_ps(res + i * 48 + 16)) : b1;       \
    a##i##2 = res ? _mm512_add_ps(b2, _mm512_loadu_ps(res + i * 48 + 32)) : b2;
    ACC8(INIT)
#undef INIT
    for (int64_t c = 0; c < Ci; c++) {
        const __m512 w0 = _mm512_load_ps(w + c * 48), w1 = _mm512_load_ps(w + c * 48 + 16),
                     w2 = _mm512_load_ps(w + c * 48 + 32);
        __m512 u, v, m;
#define FMA(i)                                                  \
    u = _mm512_set1_ps(x[2 * i * Ci + c]);                      \
    v = _mm512_set1_ps(x[(2 * i + 1) * Ci + c]);                \
    m = _mm512_mask_mov_ps(u, (__mmask16)0xFF00, v);            \
    a##i##0 = _mm512_fmadd_ps(u, w0, a##i##0);                  \
    a##i##1 = _mm512_fmadd_ps(m, w1, a##i##1);                  \
    a##i##2 = _mm512_fmadd_ps(v, w2, a##i##2);
        ACC8(FMA)
#undef FMA
    }
    const actv v0 = s[0].av, v1 = s[1].av, v2 = s[2].av;
#define OUT(i)                                              \
    _mm512_storeu_ps(y + i * 48, act(v0, a##i##0));         \
    _mm512_storeu_ps(y + i * 48 + 16, act(v1, a##i##1));    \
    _mm512_storeu_ps(y + i * 48 + 32, act(v2, a##i##2));
    ACC8(OUT)
#undef OUT
}

/* One pixel, any number of slices (up to four). */
INLINE void pixel(const float *x, int64_t Ci, const float *w, int64_t Cop, const out_slice *s,
                  int ns, const float *res, float *y)
{
    for (int j = 0; j < ns; j++) {
        __m512 a = res ? _mm512_add_ps(s[j].bias, ld(res + 16 * j, s[j].mode, s[j].m)) : s[j].bias;
        for (int64_t c = 0; c < Ci; c++)
            a = _mm512_fmadd_ps(_mm512_set1_ps(x[c]), _mm512_load_ps(w + c * Cop + 16 * j), a);
        st(y + 16 * j, act(s[j].av, a), s[j].mode, s[j].m);
    }
}

INLINE void pixels(const nn_cpu_pw *d, const float *src, const float *res, float *dst,
                   int64_t p0, int64_t p1, int64_t Cc)
{
    const int64_t Ci = Cc ? Cc : d->Ci, Co = d->Co, Cop = d->Cop;
    const int ns = (int)((Co + 15) / 16), nv = (int)(Cop / 16);
    out_slice s[4];
    if (ns > 4) {
        /* a multiple of 64 outputs, 64 at a time over the pixels (their weights, 16 KB
         * for 64 inputs, stay in L1 meanwhile) */
        for (int64_t g = 0; g < Co; g += 64) {
            for (int j = 0; j < 4; j++)
                s[j] = out_slice_at(d->b, d->ns, &d->act, Co, g + 16 * j);
            int64_t p = p0;
            for (; p + 4 <= p1; p += 4)
                blk4xn(src + p * Ci, Ci, d->w + g, Cop, s, res ? res + p * Co + g : NULL,
                       dst + p * Co + g, Co, 4);
            for (; p < p1; p++)
                pixel(src + p * Ci, Ci, d->w + g, Cop, s, 4, res ? res + p * Co + g : NULL,
                      dst + p * Co + g);
        }
        return;
    }
    for (int j = 0; j < nv; j++) {
        /* beyond the outputs (24 stored twice over) whole slices */
        s[j] = out_slice_at(d->b, d->ns, &d->act, j < ns ? Co : Cop, 16 * j);
    }
    const int per = ns == 1 || Co == 24 ? 16 : ns == 2 ? 8 : 4;
    int64_t p = p0;
    for (; p + per <= p1; p += per) {
        const float *x = src + p * Ci, *r = res ? res + p * Co : NULL;
        if (Co == 24) blk24(x, Ci, d->w, s, r, dst + p * Co);
        else if (ns == 1) blk16(x, Ci, d->w, s, r, dst + p * Co, Co);
        else if (ns == 2) blk8x2(x, Ci, d->w, Cop, s, r, dst + p * Co, Co);
        else if (ns == 3)
            blk4xn(x, Ci, d->w, Cop, s, r, dst + p * Co, Co, 3);
        else
            blk4xn(x, Ci, d->w, Cop, s, r, dst + p * Co, Co, 4);
    }
    for (; p < p1; p++)
        pixel(src + p * Ci, Ci, d->w, Cop, s, ns, res ? res + p * Co : NULL, dst + p * Co);
}

/* Instances for the common input channel counts (see the top of the file). */
#define PIX_FN(name, Cc)                                                                     \
    static __attribute__((noinline)) void name(const nn_cpu_pw *d, const float *src,          \
                                               const float *res, float *dst, int64_t p0,      \
                                               int64_t p1)                                    \
    {                                                                                        \
        pixels(d, src, res, dst, p0, p1, Cc);                                                \
    }
PIX_FN(pixels_any, 0)
PIX_FN(pixels8, 8)
PIX_FN(pixels16, 16)
PIX_FN(pixels24, 24)
PIX_FN(pixels32, 32)
PIX_FN(pixels48, 48)
PIX_FN(pixels64, 64)

void nn_cpu_pw_pixels_avx512(const nn_cpu_pw *d, const float *src, const float *res, float *dst,
                             int64_t p0, int64_t p1)
{
    switch (d->Ci) {
    case 8: pixels8(d, src, res, dst, p0, p1); break;
    case 16: pixels16(d, src, res, dst, p0, p1); break;
    case 24: pixels24(d, src, res, dst, p0, p1); break;
    case 32: pixels32(d, src, res, dst, p0, p1); break;
    case 48: pixels48(d, src, res, dst, p0, p1); break;
    case 64: pixels64(d, src, res, dst, p0, p1); break;
    default: pixels_any(d, src, res, dst, p0, p1); break;
    }
}

#endif
