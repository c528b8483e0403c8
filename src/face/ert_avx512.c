/* The ERT kernels with AVX-512 (built with -mavx512f; called only when
 * ffu_cpu_features() has AVX512F).
 *
 * The leaf sum: a 68-point shape is 144 floats = 9 registers, so the whole shape stays
 * in registers while a block of leaf rows is added: one load-add per 16 floats per tree
 * instead of a load, an add and a store. Same floats, same order as ert_sum_rows_c.
 *
 * The feature pixels: 16 at a time, the same operations as ert_feature_xy_c in the
 * same order (IEEE arithmetic in float and double gives the same results in vector
 * lanes; this file is built without contraction into FMAs, as the C one). */
#include <immintrin.h>
#include <stdint.h>

#include "face/ert.h"

/* Adds rows to shape[c, c + 16 * NZ) with NZ accumulators; NZ is a constant after
 * inlining, so the loops unroll and the accumulators live in registers. */
static inline __attribute__((always_inline)) void chunk(float *shape, const float *const *rows,
                                                        int n, int c, const int nz)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int k = 0; k < nz; k++)
        acc[k] = _mm512_load_ps(shape + c + 16 * k);
    for (int r = 0; r < n; r++) {
        const float *p = rows[r] + c;
#pragma GCC unroll 16
        for (int k = 0; k < nz; k++)
            acc[k] = _mm512_add_ps(acc[k], _mm512_load_ps(p + 16 * k));
    }
#pragma GCC unroll 16
    for (int k = 0; k < nz; k++)
        _mm512_store_ps(shape + c + 16 * k, acc[k]);
}

void ert_sum_rows_avx512(float *shape, const float *const *rows, int n, int stride)
{
    for (int c = 0; c < stride; c += 256) {
        int nz = (stride - c) / 16;
        switch (nz > 16 ? 16 : nz) {
        case 1:
            chunk(shape, rows, n, c, 1);
            break;
        case 2:
            chunk(shape, rows, n, c, 2);
            break;
        case 3:
            chunk(shape, rows, n, c, 3);
            break;
        case 4:
            chunk(shape, rows, n, c, 4);
            break;
        case 5:
            chunk(shape, rows, n, c, 5);
            break;
        case 6:
            chunk(shape, rows, n, c, 6);
            break;
        case 7:
            chunk(shape, rows, n, c, 7);
            break;
        case 8:
            chunk(shape, rows, n, c, 8);
            break;
        case 9:
            chunk(shape, rows, n, c, 9);
            break;
        case 10:
            chunk(shape, rows, n, c, 10);
            break;
        case 11:
            chunk(shape, rows, n, c, 11);
            break;
        case 12:
            chunk(shape, rows, n, c, 12);
            break;
        case 13:
            chunk(shape, rows, n, c, 13);
            break;
        case 14:
            chunk(shape, rows, n, c, 14);
            break;
        case 15:
            chunk(shape, rows, n, c, 15);
            break;
        default:
            chunk(shape, rows, n, c, 16);
            break;
        }
    }
}

/* Eight features' floats (vx, vy) to pixels: px = -1 where outside the image. */
static inline __attribute__((always_inline)) void pixels8(const ert_feature_job *j, __m256 vx,
                                                          __m256 vy, int32_t *px, int32_t *py)
{
    const __m512d half = _mm512_set1_pd(0.5), zero = _mm512_setzero_pd();
    __m512d x =
        _mm512_add_pd(_mm512_add_pd(_mm512_set1_pd(j->ox),
                                    _mm512_mul_pd(_mm512_set1_pd(j->sx), _mm512_cvtps_pd(vx))),
                      half);
    __m512d y =
        _mm512_add_pd(_mm512_add_pd(_mm512_set1_pd(j->oy),
                                    _mm512_mul_pd(_mm512_set1_pd(j->sy), _mm512_cvtps_pd(vy))),
                      half);
    x = _mm512_roundscale_pd(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    y = _mm512_roundscale_pd(y, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    /* ordered compares: a NaN is outside */
    const __mmask8 in = _mm512_cmp_pd_mask(x, zero, _CMP_GE_OQ) &
                        _mm512_cmp_pd_mask(x, _mm512_set1_pd((double)j->w), _CMP_LT_OQ) &
                        _mm512_cmp_pd_mask(y, zero, _CMP_GE_OQ) &
                        _mm512_cmp_pd_mask(y, _mm512_set1_pd((double)j->h), _CMP_LT_OQ);
    _mm256_storeu_si256((__m256i *)px, _mm512_mask_cvttpd_epi32(_mm256_set1_epi32(-1), in, x));
    _mm256_storeu_si256((__m256i *)py, _mm512_maskz_cvttpd_epi32(in, y));
}

static inline __m256 high8(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

void ert_feature_xy_avx512(const ert_feature_job *j, int32_t *px, int32_t *py)
{
    const __m512 a00 = _mm512_set1_ps(j->a00), a01 = _mm512_set1_ps(j->a01),
                 a10 = _mm512_set1_ps(j->a10), a11 = _mm512_set1_ps(j->a11);
    for (uint32_t i = 0; i < j->n; i += 16) {
        const __mmask16 k = j->n - i >= 16 ? 0xffff : (__mmask16)((1u << (j->n - i)) - 1);
        const __m512 dx = _mm512_maskz_loadu_ps(k, j->dx + i);
        const __m512 dy = _mm512_maskz_loadu_ps(k, j->dy + i);
        /* lanes past n gather shape[0], a valid address */
        const __m512i a2 = _mm512_maskz_loadu_epi32(k, j->anchor2 + i);
        __m512 vx = _mm512_add_ps(_mm512_mul_ps(a00, dx), _mm512_mul_ps(a01, dy));
        __m512 vy = _mm512_add_ps(_mm512_mul_ps(a10, dx), _mm512_mul_ps(a11, dy));
        vx = _mm512_add_ps(vx, _mm512_i32gather_ps(a2, j->shape, 4));
        vy = _mm512_add_ps(vy, _mm512_i32gather_ps(a2, j->shape + 1, 4));
        pixels8(j, _mm512_castps512_ps256(vx), _mm512_castps512_ps256(vy), px + i, py + i);
        pixels8(j, high8(vx), high8(vy), px + i + 8, py + i + 8);
    }
}
