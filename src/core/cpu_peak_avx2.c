/* One thread's f32 multiply-add rate with AVX2 + FMA, for CPUs without AVX-512
 * (cpu_peak.c). */
#include <immintrin.h>

#include "core_internal.h"

/* As core_fma_chains_avx512, with 8-lane vectors. */
float core_fma_chains_avx2(long n)
{
    __m256 a0 = _mm256_set1_ps(0.f), a1 = _mm256_set1_ps(1.f), a2 = _mm256_set1_ps(2.f),
           a3 = _mm256_set1_ps(3.f), a4 = _mm256_set1_ps(4.f), a5 = _mm256_set1_ps(5.f),
           a6 = _mm256_set1_ps(6.f), a7 = _mm256_set1_ps(7.f), a8 = _mm256_set1_ps(8.f),
           a9 = _mm256_set1_ps(9.f), a10 = _mm256_set1_ps(10.f), a11 = _mm256_set1_ps(11.f);
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (long i = 0; i < n; i++) {
#define STEP(a) a = _mm256_fmadd_ps(a, m, c);
        STEP(a0) STEP(a1) STEP(a2) STEP(a3) STEP(a4) STEP(a5)
        STEP(a6) STEP(a7) STEP(a8) STEP(a9) STEP(a10) STEP(a11)
#undef STEP
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}
