/* The ERT leaf sum with AVX2 (built with -mavx2; called only when ffu_cpu_features()
 * has AVX2). Up to 12 of the 16 ymm registers hold a slice of the shape while a block
 * of leaf rows is added (a 68-point shape, 144 floats, is two slices). Same floats,
 * same order as ert_sum_rows_c. */
#include <immintrin.h>

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
