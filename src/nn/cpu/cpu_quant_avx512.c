/* The loops of ffu.DynamicQuantizeSteps (the dynamic quantisation that the integer
 * products' rewrite leaves in front of each f32 product, rewrite_integer.c) for
 * AVX-512. The steps are quant_math.h's loop, which the reference kernel runs too,
 * compiled here (GCC vectorises it): the same bits, 16 values per instruction. The
 * range is written out in intrinsics, because GCC leaves quant_math.h's range loop
 * scalar: vminps (x, acc) is x < acc ? x : acc, the same comparison, so NaN never wins
 * and the minimum and maximum are exactly the reference's (no -0 can enter: the
 * accumulators start at +0 and only take values strictly beyond it). The builder and
 * the split over threads are in cpu_misc.c. Also the epilogue of a dynamically
 * quantised layer's convolution on our kernels (nn_cpu_scale_avx512: the fused scale
 * and bias, src/nn/ir.h). Only called after a runtime AVX-512F check. */
#include <immintrin.h>
#include <stdint.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "../ops/quant_math.h"
#include "cpu_internal.h"

#include "cpu_avx512.h"

void nn_cpu_qsteps_range_avx512(const float *x, int64_t n, float *mn, float *mx)
{
    __m512 lo[4], hi[4];
    for (int k = 0; k < 4; k++)
        lo[k] = _mm512_set1_ps(*mn), hi[k] = _mm512_set1_ps(*mx);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 4; k++) {
            __m512 v = _mm512_loadu_ps(x + i + 16 * k);
            lo[k] = _mm512_min_ps(v, lo[k]);
            hi[k] = _mm512_max_ps(v, hi[k]);
        }
    for (; i < n; i += 16) { /* masked-off lanes read 0, which the range holds */
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        lo[0] = _mm512_min_ps(v, lo[0]);
        hi[0] = _mm512_max_ps(v, hi[0]);
    }
    float l[64], h[64];
    for (int k = 0; k < 4; k++)
        _mm512_storeu_ps(l + 16 * k, lo[k]), _mm512_storeu_ps(h + 16 * k, hi[k]);
    for (int j = 0; j < 64; j++) {
        *mn = l[j] < *mn ? l[j] : *mn;
        *mx = h[j] > *mx ? h[j] : *mx;
    }
}

void nn_cpu_qsteps_avx512(const float *x, int64_t n, float scale, float zp, float *y)
{
    qm_steps(x, n, scale, zp, y);
}

void nn_cpu_scale_avx512(const nn_cpu_scaled *e, float s, float *y, int64_t n)
{
    const __m512 sc = _mm512_set1_ps(s);
    for (int64_t c0 = 0; c0 < e->C; c0 += 16) {
        __mmask16 m;
        int mode = slice_mode(e->C, c0, &m);
        const __m512 b = _mm512_load_ps(e->b + c0);
        const actv av = act_init(&e->act, e->ns + c0);
        float *p = y + c0;
        for (int64_t i = 0; i < n; i++, p += e->C)
            st(p, act(av, _mm512_add_ps(_mm512_mul_ps(ld(p, mode, m), sc), b)), mode, m);
    }
}

#endif
