/* The ERT leaf sum with AVX-512 (built with -mavx512f; called only when
 * ffu_cpu_features() has AVX512F). A 68-point shape is 144 floats = 9 registers, so
 * the whole shape stays in registers while a block of leaf rows is added: one load-add
 * per 16 floats per tree instead of a load, an add and a store. Same floats, same
 * order as ert_sum_rows_c. */
#include <immintrin.h>

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
