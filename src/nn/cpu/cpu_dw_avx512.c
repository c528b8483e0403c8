/* Our own depthwise 2-D convolution for the cpu backend, channels-last (NHWC) f32 with
 * AVX-512. oneDNN 2.6's NHWC depthwise kernel (brdgmm_dw) runs at a third of the
 * FMA rate on the 16-64 channel layers of BlazeFace, YuNet and MobileFaceNet, which
 * spend 20-35% of their time there, and its blocked-format kernel would need padded
 * tensors (24 channels stored as 32) that the memory plan does not have.
 *
 * The kernel keeps eight output pixels of one 16-channel block in registers, walks
 * the kernel taps over the input rows every pixel of the block reads (for 3-wide
 * stride-1 kernels each input vector is loaded once and used for three outputs), and
 * applies bias, an optional residual (the node's sum input) and the activation before
 * one store. A channel tail of 8 uses 256-bit loads and stores; other tails use masked
 * ones (masked stores are slow on AMD Zen, so only tails pay for them), so nothing
 * outside the tensor is touched. Border pixels take a slower path that skips taps in
 * the padding. Only called after a runtime AVX-512F check (cpu_dense.c). */
#include <immintrin.h>
#include <stdint.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"

#define BLK 8 /* output pixels per register block */

/* How one 16-channel block is loaded and stored: all lanes, the low 8, or a mask. */
enum { V_FULL, V_HALF, V_MASK };

static inline __attribute__((always_inline)) __m512 ld(const float *p, int mode, __mmask16 m)
{
    if (mode == V_FULL) return _mm512_loadu_ps(p);
    if (mode == V_HALF) return _mm512_zextps256_ps512(_mm256_loadu_ps(p));
    return _mm512_maskz_loadu_ps(m, p);
}

static inline __attribute__((always_inline)) void st(float *p, __m512 v, int mode, __mmask16 m)
{
    if (mode == V_FULL) _mm512_storeu_ps(p, v);
    else if (mode == V_HALF) _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
    else _mm512_mask_storeu_ps(p, m, v);
}

typedef struct act_regs {
    __m512 ns, lo, hi;
    int neg, clamp;
} act_regs;

static inline __attribute__((always_inline)) __m512 act(const act_regs *a, __m512 y)
{
    /* y < 0 ? y * ns : y keeps NaN; max/min with y first return the bound for NaN,
     * as the reference's fmaxf/fminf (and ReLU's x > 0 ? x : 0) do */
    if (a->neg)
        y = _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ), y, a->ns);
    if (a->clamp) y = _mm512_min_ps(_mm512_max_ps(y, a->lo), a->hi);
    return y;
}

/* One output pixel with the padding checks (image borders). */
static inline __attribute__((always_inline)) void pixel_edge(
    const nn_cpu_dw *d, const float *xn, const float *res, float *y, int64_t oh, int64_t ow,
    int64_t c0, __m512 bias, const act_regs *a, int mode, __mmask16 m)
{
    const int64_t C = d->C;
    __m512 acc = bias;
    if (res) acc = _mm512_add_ps(acc, ld(res, mode, m));
    for (int kh = 0; kh < d->KH; kh++) {
        int64_t ih = oh * d->SH - d->PT + kh;
        if (ih < 0 || ih >= d->IH) continue;
        const float *xr = xn + ih * d->IW * C + c0;
        for (int kw = 0; kw < d->KW; kw++) {
            int64_t iw = ow * d->SW - d->PL + kw;
            if (iw < 0 || iw >= d->IW) continue;
            __m512 w = _mm512_load_ps(d->w + (kh * d->KW + kw) * d->Cp + c0);
            acc = _mm512_fmadd_ps(w, ld(xr + iw * C, mode, m), acc);
        }
    }
    st(y, act(a, acc), mode, m);
}

/* One output row of one channel block. */
static inline __attribute__((always_inline)) void row_block(
    const nn_cpu_dw *d, const float *xn, const float *rr, float *yr, int64_t oh, int kh0,
    int kh1, int64_t ow_lo, int64_t ow_hi, int64_t c0, const act_regs *a, int mode, __mmask16 m)
{
    const int64_t C = d->C, OW = d->OW, SW = d->SW, KW = d->KW, Cp = d->Cp;
    const __m512 bias = _mm512_load_ps(d->b + c0);
    int64_t ow = 0;
    for (; ow < ow_lo; ow++)
        pixel_edge(d, xn, rr ? rr + ow * C + c0 : NULL, yr + ow * C + c0, oh, ow, c0, bias, a,
                   mode, m);
    for (; ow + BLK <= ow_hi; ow += BLK) {
        __m512 acc[BLK];
        if (rr) {
            const float *rp = rr + ow * C + c0;
#pragma GCC unroll 8
            for (int j = 0; j < BLK; j++, rp += C) acc[j] = _mm512_add_ps(bias, ld(rp, mode, m));
        } else {
#pragma GCC unroll 8
            for (int j = 0; j < BLK; j++) acc[j] = bias;
        }
        for (int kh = kh0; kh < kh1; kh++) {
            int64_t ih = oh * d->SH - d->PT + kh;
            const float *xr = xn + (ih * d->IW + ow * SW - d->PL) * C + c0;
            const float *wr = d->w + kh * KW * Cp + c0;
            if (SW == 1 && KW == 3) {
                /* each input vector feeds three neighbouring outputs */
                __m512 w0 = _mm512_load_ps(wr), w1 = _mm512_load_ps(wr + Cp),
                       w2 = _mm512_load_ps(wr + 2 * Cp);
                __m512 xv[BLK + 2];
                const float *xp = xr;
#pragma GCC unroll 10
                for (int j = 0; j < BLK + 2; j++, xp += C) xv[j] = ld(xp, mode, m);
#pragma GCC unroll 8
                for (int j = 0; j < BLK; j++) {
                    acc[j] = _mm512_fmadd_ps(w0, xv[j], acc[j]);
                    acc[j] = _mm512_fmadd_ps(w1, xv[j + 1], acc[j]);
                    acc[j] = _mm512_fmadd_ps(w2, xv[j + 2], acc[j]);
                }
                continue;
            }
            for (int kw = 0; kw < KW; kw++) {
                __m512 w = _mm512_load_ps(wr + kw * Cp);
                const float *xp = xr + kw * C;
                const int64_t step = SW * C;
#pragma GCC unroll 8
                for (int j = 0; j < BLK; j++, xp += step)
                    acc[j] = _mm512_fmadd_ps(w, ld(xp, mode, m), acc[j]);
            }
        }
        float *yp = yr + ow * C + c0;
#pragma GCC unroll 8
        for (int j = 0; j < BLK; j++, yp += C) st(yp, act(a, acc[j]), mode, m);
    }
    for (; ow < ow_hi; ow++) { /* interior leftovers: no column checks needed */
        __m512 acc = rr ? _mm512_add_ps(bias, ld(rr + ow * C + c0, mode, m)) : bias;
        for (int kh = kh0; kh < kh1; kh++) {
            int64_t ih = oh * d->SH - d->PT + kh;
            const float *xr = xn + (ih * d->IW + ow * SW - d->PL) * C + c0;
            const float *wr = d->w + kh * KW * Cp + c0;
            for (int kw = 0; kw < KW; kw++)
                acc = _mm512_fmadd_ps(_mm512_load_ps(wr + kw * Cp), ld(xr + kw * C, mode, m), acc);
        }
        st(yr + ow * C + c0, act(a, acc), mode, m);
    }
    for (; ow < OW; ow++)
        pixel_edge(d, xn, rr ? rr + ow * C + c0 : NULL, yr + ow * C + c0, oh, ow, c0, bias, a,
                   mode, m);
}

void nn_cpu_dw_rows_avx512(const nn_cpu_dw *d, const float *src, const float *res, float *dst,
                           int64_t row0, int64_t row1)
{
    const int64_t C = d->C, OW = d->OW, SW = d->SW, KW = d->KW;
    /* output columns whose whole window lies inside the input width */
    int64_t ow_lo = (d->PL + SW - 1) / SW, ow_hi = 0;
    if (d->IW - KW + d->PL >= 0) ow_hi = (d->IW - KW + d->PL) / SW + 1;
    if (ow_hi > OW) ow_hi = OW;
    if (ow_lo > ow_hi) ow_lo = ow_hi;
    act_regs a = {.lo = _mm512_set1_ps(d->lo), .hi = _mm512_set1_ps(d->hi), .neg = d->neg,
                  .clamp = d->clamp, .ns = _mm512_setzero_ps()};
    for (int64_t r = row0; r < row1; r++) {
        int64_t n = r / d->OH, oh = r % d->OH;
        const float *xn = src + n * d->IH * d->IW * C;
        float *yr = dst + r * OW * C;
        const float *rr = res ? res + r * OW * C : NULL;
        int kh0 = 0, kh1 = d->KH;
        while (kh0 < kh1 && oh * d->SH - d->PT + kh0 < 0) kh0++;
        while (kh1 > kh0 && oh * d->SH - d->PT + kh1 - 1 >= d->IH) kh1--;
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
            int64_t left = C - c0;
            if (d->neg) a.ns = _mm512_load_ps(d->ns + c0);
            if (left >= 16)
                row_block(d, xn, rr, yr, oh, kh0, kh1, ow_lo, ow_hi, c0, &a, V_FULL, 0xFFFF);
            else if (left == 8)
                row_block(d, xn, rr, yr, oh, kh0, kh1, ow_lo, ow_hi, c0, &a, V_HALF, 0xFF);
            else
                row_block(d, xn, rr, yr, oh, kh0, kh1, ow_lo, ow_hi, c0, &a, V_MASK,
                          (__mmask16)((1u << left) - 1));
        }
    }
}

#endif
