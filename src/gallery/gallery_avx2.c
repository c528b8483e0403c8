/* The gallery search kernel with AVX2 + FMA: dot products of one probe with a run of
 * template rows. Four rows go together so each load of the probe serves four fused
 * multiply-adds, with eight lanes per row; the scalar tail covers dims that are not
 * a multiple of 8. Called only when ffu_cpu_features() reports AVX2 and FMA; checked
 * against gallery_dots_c by tests/unit/test_gallery.c. */
#include <immintrin.h>

#include "gallery_internal.h"

static float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

void gallery_dots_avx2(const float *probe, const float *rows, int n, int dim, float *sims)
{
    const int d8 = dim & ~7;
    const size_t stride = (size_t)dim;
    int r = 0;
    for (; r + 4 <= n; r += 4) {
        const float *a = rows + (size_t)r * stride, *b = a + stride, *c = b + stride,
                    *e = c + stride;
        __m256 sa = _mm256_setzero_ps(), sb = sa, sc = sa, se = sa;
        for (int d = 0; d < d8; d += 8) {
            __m256 p = _mm256_loadu_ps(probe + d);
            sa = _mm256_fmadd_ps(p, _mm256_loadu_ps(a + d), sa);
            sb = _mm256_fmadd_ps(p, _mm256_loadu_ps(b + d), sb);
            sc = _mm256_fmadd_ps(p, _mm256_loadu_ps(c + d), sc);
            se = _mm256_fmadd_ps(p, _mm256_loadu_ps(e + d), se);
        }
        float ta = hsum(sa), tb = hsum(sb), tc = hsum(sc), te = hsum(se);
        for (int d = d8; d < dim; d++) {
            ta += probe[d] * a[d];
            tb += probe[d] * b[d];
            tc += probe[d] * c[d];
            te += probe[d] * e[d];
        }
        sims[r] = ta;
        sims[r + 1] = tb;
        sims[r + 2] = tc;
        sims[r + 3] = te;
    }
    for (; r < n; r++) {
        const float *a = rows + (size_t)r * stride;
        /* two sums to keep the FMA pipeline busy on the last rows */
        __m256 s0 = _mm256_setzero_ps(), s1 = s0;
        int d = 0;
        for (; d + 16 <= d8; d += 16) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(probe + d), _mm256_loadu_ps(a + d), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(probe + d + 8), _mm256_loadu_ps(a + d + 8), s1);
        }
        for (; d < d8; d += 8)
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(probe + d), _mm256_loadu_ps(a + d), s0);
        float t = hsum(_mm256_add_ps(s0, s1));
        for (d = d8; d < dim; d++)
            t += probe[d] * a[d];
        sims[r] = t;
    }
}
