/* Softmax over an axis that is not the innermost one, f32 with AVX-512: a channel
 * softmax of an NCHW tensor, such as MTCNN's P-Net face map (2 x 635 x 475 on a
 * 1280x960 input). oneDNN 2.7 runs that case on its reference loop, which took 39 ms
 * there, half of the network; here sixteen positions of the inner dimension share one
 * vector and the exponential is our own (below). Only called after a runtime AVX-512F
 * check (cpu_misc.c, nn_cpu_build_softmax). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "../backend.h"
#include "cpu_internal.h"

/* e^x: x = k ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so r is exact), e^r from
 * the degree-7 minimax polynomial Cephes' expf uses, then scaled by 2^k with scalef,
 * which also underflows to 0 gracefully. About 1 ulp from libm's expf; the inputs here
 * are <= 0 (the maximum is subtracted first). */
static inline __m512 exp_ps(__m512 x)
{
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.7f));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, k);
}

/* Positions [i0, i1) of one outer slice: x and y point at its [len][inner] values. */
void nn_cpu_softmax_inner_avx512(const float *x, float *y, int64_t len, int64_t inner,
                                 int64_t i0, int64_t i1)
{
    for (int64_t i = i0; i < i1; i += 16) {
        __mmask16 m = i1 - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (i1 - i)) - 1);
        __m512 mx = _mm512_set1_ps(-INFINITY);
        for (int64_t k = 0; k < len; k++)
            mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, m, x + k * inner + i));
        __m512 sum = _mm512_setzero_ps();
        for (int64_t k = 0; k < len; k++) {
            __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + k * inner + i), mx));
            sum = _mm512_add_ps(sum, e);
            _mm512_mask_storeu_ps(y + k * inner + i, m, e);
        }
        __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
        for (int64_t k = 0; k < len; k++)
            _mm512_mask_storeu_ps(y + k * inner + i, m,
                                  _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + k * inner + i), inv));
    }
}
