/* What the cpu backend's own AVX-512 kernels share (cpu_dw_avx512.c, cpu_pw_avx512.c):
 * loads and stores of one 16-channel slice, and the fused activation of a convolution
 * as nn_cpu_act describes it. Included only by files built with AVX-512 flags. */
#ifndef FFU_NN_CPU_AVX512_H
#define FFU_NN_CPU_AVX512_H

#include <immintrin.h>
#include <math.h>

#define INLINE static inline __attribute__((always_inline))

/* Keeps a loaded vector in a register: without it GCC folds every use back into a
 * memory operand of its FMA, and three loads per input vector instead of one make
 * a block load-bound (measured on the depthwise kernel: half the FMA rate). */
#define PIN(v) __asm__("" : "+v"(v))

/* How one 16-channel slice is loaded and stored: all lanes, the low 8, or a mask
 * (AVX-512 masked stores are slow on AMD Zen, so only other tails pay for them). */
enum { V_FULL, V_HALF, V_MASK };

INLINE __m512 ld(const float *p, int mode, __mmask16 m)
{
    if (mode == V_FULL) return _mm512_loadu_ps(p);
    if (mode == V_HALF) return _mm512_zextps256_ps512(_mm256_loadu_ps(p));
    return _mm512_maskz_loadu_ps(m, p);
}

INLINE void st(float *p, __m512 v, int mode, __mmask16 m)
{
    if (mode == V_FULL) _mm512_storeu_ps(p, v);
    else if (mode == V_HALF) _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
    else _mm512_mask_storeu_ps(p, m, v);
}

/* The activation with its parameters in locals: intrinsic stores may alias anything,
 * so fields read through a pointer would be reloaded after every store. */
typedef struct actv {
    __m512 ns, lo, hi;
    int neg, clamp;
    int clamp_hi; /* the clamp's upper bound is finite (ReLU's is not) */
} actv;

/* One 16-channel output slice's epilogue in our 1x1 and first-layer kernels: bias,
 * activation, how it is stored (V_*, and the mask of V_MASK). */
typedef struct out_slice {
    __m512 bias;
    actv av;
    int mode;
    __mmask16 m;
} out_slice;

/* a's activation; ns its 16 slopes when a->neg. */
INLINE actv act_init(const nn_cpu_act *a, const float *ns)
{
    actv v = {.ns = a->neg ? _mm512_load_ps(ns) : _mm512_setzero_ps(),
              .lo = _mm512_set1_ps(a->lo), .hi = _mm512_set1_ps(a->hi), .neg = a->neg,
              .clamp = a->clamp, .clamp_hi = a->clamp && a->hi < INFINITY};
    return v;
}

INLINE __m512 act(actv a, __m512 y)
{
    /* y < 0 ? y * ns : y keeps NaN; max/min with y first return the bound for NaN,
     * as the reference's fmaxf/fminf (and ReLU's x > 0 ? x : 0) do. After the max y is
     * not NaN, so min(y, +inf), which is y, is left out (a min per vector measured 3%
     * of a first-layer block) */
    if (a.neg)
        y = _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ), y, a.ns);
    if (a.clamp) y = _mm512_max_ps(y, a.lo);
    if (a.clamp_hi) y = _mm512_min_ps(y, a.hi);
    return y;
}

/* The slice kind of the channels [c0, c0 + 16) of C, and its mask. */
INLINE int slice_mode(int64_t C, int64_t c0, __mmask16 *m)
{
    int64_t left = C - c0;
    *m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    return left >= 16 ? V_FULL : left == 8 ? V_HALF : V_MASK;
}

/* The output slice of channels [c0, c0 + 16) of C: bias b and slopes ns (per channel),
 * activation a. */
INLINE out_slice out_slice_at(const float *b, const float *ns, const nn_cpu_act *a, int64_t C,
                              int64_t c0)
{
    out_slice s = {.bias = _mm512_load_ps(b + c0), .av = act_init(a, ns + c0)};
    s.mode = slice_mode(C, c0, &s.m);
    return s;
}

/* MaxPool's order, one more element t after u: t replaces u where it is greater or NaN
 * (so a NaN anywhere in the window wins, as in the reference's comparison). */
INLINE __m512 pool_max(__m512 u, __m512 t)
{
    __mmask16 m = _mm512_cmp_ps_mask(t, u, _CMP_GT_OQ) | _mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(u, m, t);
}

/* The 2x2 stride-2 max pool of rows a and b (C channels, 2 * PW pixels each) into y. */
INLINE void pool2_row(const float *a, const float *b, float *y, int64_t PW, int64_t C)
{
    for (int64_t pw = 0; pw < PW; pw++)
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
            __mmask16 m;
            int mode = slice_mode(C, c0, &m);
            const float *p0 = a + 2 * pw * C + c0, *p1 = b + 2 * pw * C + c0;
            __m512 v = pool_max(ld(p0, mode, m), ld(p0 + C, mode, m));
            v = pool_max(pool_max(v, ld(p1, mode, m)), ld(p1 + C, mode, m));
            st(y + pw * C + c0, v, mode, m);
        }
}

/* The output columns [*lo, *hi) of a window KW wide at stride SW with PL columns of left
 * padding whose whole window lies inside the IW input columns (of OW outputs). */
INLINE void inner_columns(int64_t IW, int64_t KW, int64_t PL, int64_t SW, int64_t OW,
                          int64_t *lo, int64_t *hi)
{
    *lo = (PL + SW - 1) / SW, *hi = 0;
    if (IW - KW + PL >= 0) *hi = (IW - KW + PL) / SW + 1;
    if (*hi > OW) *hi = OW;
    if (*lo > *hi) *lo = *hi;
}

#endif
