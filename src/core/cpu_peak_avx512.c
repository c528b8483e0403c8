/* One thread's f32 multiply-add rate with AVX-512: the ceiling that compute-bound
 * kernels are measured against in benchmark reports (cpu_peak.c). */
#include <immintrin.h>

#include "core_internal.h"

/* Twelve independent FMA chains (enough to cover the FMA latency on two ports), n rounds;
 * returns a sum of the results so the work cannot be dropped. */
float core_fma_chains_avx512(long n)
{
    __m512 a0 = _mm512_set1_ps(0.f), a1 = _mm512_set1_ps(1.f), a2 = _mm512_set1_ps(2.f),
           a3 = _mm512_set1_ps(3.f), a4 = _mm512_set1_ps(4.f), a5 = _mm512_set1_ps(5.f),
           a6 = _mm512_set1_ps(6.f), a7 = _mm512_set1_ps(7.f), a8 = _mm512_set1_ps(8.f),
           a9 = _mm512_set1_ps(9.f), a10 = _mm512_set1_ps(10.f), a11 = _mm512_set1_ps(11.f);
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (long i = 0; i < n; i++) {
#define STEP(a) a = _mm512_fmadd_ps(a, m, c);
        STEP(a0) STEP(a1) STEP(a2) STEP(a3) STEP(a4) STEP(a5)
        STEP(a6) STEP(a7) STEP(a8) STEP(a9) STEP(a10) STEP(a11)
#undef STEP
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    return _mm512_reduce_add_ps(s);
}
