/* The ERT kernels with AVX2 (built with -mavx2; called only when ffu_cpu_features()
 * has AVX2), for CPUs without AVX-512 (most laptops).
 *
 * The leaf sum: up to 12 of the 16 ymm registers hold a slice of the shape while a
 * block of leaf rows is added (a 68-point shape, 144 floats, is two slices). Same
 * floats, same order as ert_sum_rows_c.
 *
 * The feature pixels: 8 at a time, the same operations as ert_feature_xy_c in the same
 * order (no contraction into FMAs: this file is built as ISO C, as the C one). */
#include <immintrin.h>
#include <stdint.h>

#include "face/ert.h"

static inline __attribute__((always_inline)) void chunk(float *shape, const float *const *rows,
                                                        int n, int c, const int nz)
{
    __m256 acc[12];
#pragma GCC unroll 12
    for (int k = 0; k < nz; k++)
        acc[k] = _mm256_load_ps(shape + c + 8 * k);
    for (int r = 0; r < n; r++) {
        const float *p = rows[r] + c;
#pragma GCC unroll 12
        for (int k = 0; k < nz; k++)
            acc[k] = _mm256_add_ps(acc[k], _mm256_load_ps(p + 8 * k));
    }
#pragma GCC unroll 12
    for (int k = 0; k < nz; k++)
        _mm256_store_ps(shape + c + 8 * k, acc[k]);
}

void ert_sum_rows_avx2(float *shape, const float *const *rows, int n, int stride)
{
    /* stride is a multiple of 16, so a slice is an even number of registers */
    for (int c = 0; c < stride; c += 96) {
        int nz = (stride - c) / 8;
        switch (nz > 12 ? 12 : nz) {
        case 2:
            chunk(shape, rows, n, c, 2);
            break;
        case 4:
            chunk(shape, rows, n, c, 4);
            break;
        case 6:
            chunk(shape, rows, n, c, 6);
            break;
        case 8:
            chunk(shape, rows, n, c, 8);
            break;
        case 10:
            chunk(shape, rows, n, c, 10);
            break;
        default:
            chunk(shape, rows, n, c, 12);
            break;
        }
    }
}

/* Four features' floats (vx, vy) to pixels: px = -1 where outside the image. */
static inline __attribute__((always_inline)) void pixels4(const ert_feature_job *j, __m128 vx,
                                                          __m128 vy, int32_t *px, int32_t *py)
{
    const __m256d half = _mm256_set1_pd(0.5), zero = _mm256_setzero_pd();
    __m256d x =
        _mm256_add_pd(_mm256_add_pd(_mm256_set1_pd(j->ox),
                                    _mm256_mul_pd(_mm256_set1_pd(j->sx), _mm256_cvtps_pd(vx))),
                      half);
    __m256d y =
        _mm256_add_pd(_mm256_add_pd(_mm256_set1_pd(j->oy),
                                    _mm256_mul_pd(_mm256_set1_pd(j->sy), _mm256_cvtps_pd(vy))),
                      half);
    x = _mm256_round_pd(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    y = _mm256_round_pd(y, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    /* ordered compares: a NaN is outside */
    __m256d in = _mm256_and_pd(_mm256_cmp_pd(x, zero, _CMP_GE_OQ),
                               _mm256_cmp_pd(x, _mm256_set1_pd((double)j->w), _CMP_LT_OQ));
    in = _mm256_and_pd(in, _mm256_cmp_pd(y, zero, _CMP_GE_OQ));
    in = _mm256_and_pd(in, _mm256_cmp_pd(y, _mm256_set1_pd((double)j->h), _CMP_LT_OQ));
    /* the four 64-bit masks as four 32-bit ones */
    const __m128 lo = _mm256_castps256_ps128(_mm256_castpd_ps(in)),
                 hi = _mm256_extractf128_ps(_mm256_castpd_ps(in), 1);
    const __m128i m = _mm_castps_si128(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm_storeu_si128((__m128i *)px, _mm_blendv_epi8(_mm_set1_epi32(-1), _mm256_cvttpd_epi32(x), m));
    _mm_storeu_si128((__m128i *)py, _mm_and_si128(_mm256_cvttpd_epi32(y), m));
}

void ert_feature_xy_avx2(const ert_feature_job *j, int32_t *px, int32_t *py)
{
    const __m256 a00 = _mm256_set1_ps(j->a00), a01 = _mm256_set1_ps(j->a01),
                 a10 = _mm256_set1_ps(j->a10), a11 = _mm256_set1_ps(j->a11);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (uint32_t i = 0; i < j->n; i += 8) {
        const __m256i k = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(j->n - i)), lanes);
        const __m256 dx = _mm256_maskload_ps(j->dx + i, k);
        const __m256 dy = _mm256_maskload_ps(j->dy + i, k);
        /* lanes past n gather shape[0], a valid address */
        const __m256i a2 = _mm256_maskload_epi32((const int *)(j->anchor2 + i), k);
        __m256 vx = _mm256_add_ps(_mm256_mul_ps(a00, dx), _mm256_mul_ps(a01, dy));
        __m256 vy = _mm256_add_ps(_mm256_mul_ps(a10, dx), _mm256_mul_ps(a11, dy));
        vx = _mm256_add_ps(vx, _mm256_i32gather_ps(j->shape, a2, 4));
        vy = _mm256_add_ps(vy, _mm256_i32gather_ps(j->shape + 1, a2, 4));
        pixels4(j, _mm256_castps256_ps128(vx), _mm256_castps256_ps128(vy), px + i, py + i);
        pixels4(j, _mm256_extractf128_ps(vx, 1), _mm256_extractf128_ps(vy, 1), px + i + 4,
                py + i + 4);
    }
}
