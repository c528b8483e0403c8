/* What the SIMD bilinear row kernels (warp_avx2.c, warp_avx512.c) share: the row's
 * sample positions eight at a time, and which sources they can read with their 8-byte
 * row loads. Included only by files built with AVX2 or more. */
#ifndef FFU_IMAGE_WARP_SIMD_H
#define FFU_IMAGE_WARP_SIMD_H

#include <immintrin.h>
#include <stdint.h>

#include "kernels_internal.h"

/* Eight sample positions of a row: (base + delta[i]) >> shift. */
static inline __m256i warp_block_pos(const int32_t *delta, __m256i base, __m128i shift)
{
    __m256i d = _mm256_loadu_si256((const __m256i *)(const void *)delta);
    return _mm256_sra_epi32(_mm256_add_epi32(base, d), shift);
}

/* 1 when the kernels can take blocks of this source at all: 3 or 4 channels, a row of
 * at least 8 bytes, two rows. */
static inline int warp_simd_fits(int sw, int sh, int cn)
{
    return (cn == 3 || cn == 4) && sw * cn >= 8 && sh >= 2;
}

/* Per row: the positions' terms and the limits of a block the kernels can take. */
typedef struct {
    __m256i x0, y0;     /* the row's terms, broadcast */
    __m128i shift;
    __m256i xlim, ylim; /* largest left column whose 8-byte load stays in the row; last
                           top row */
    int off32;          /* byte offsets fit 32-bit lanes: the source is under 2 GiB
                           (always, for images within FFU_IMAGE_MAX_PIXELS with tight
                           strides) */
} warp_simd_row;

static inline warp_simd_row warp_simd_row_setup(const ffu_warp_row *row, int sstride, int sw,
                                                int sh, int cn)
{
    warp_simd_row w;
    w.x0 = _mm256_set1_epi32(row->x0);
    w.y0 = _mm256_set1_epi32(row->y0);
    w.shift = _mm_cvtsi32_si128(row->shift);
    w.xlim = _mm256_set1_epi32((sw * cn - 8) / cn);
    w.ylim = _mm256_set1_epi32(sh - 2);
    w.off32 = (int64_t)sh * sstride < ((int64_t)1 << 31);
    return w;
}

/* Block b's whole-pixel positions; 1 when all eight 2x2 neighbourhoods (and the 8-byte
 * loads) lie inside the source. Unsigned compares: negative positions look huge and
 * fail too. */
static inline int warp_block_inside(const ffu_warp_row *row, const warp_simd_row *w, int b,
                                    __m256i *vx, __m256i *vy, __m256i *sx, __m256i *sy)
{
    *vx = warp_block_pos(row->adelta + 8 * b, w->x0, w->shift);
    *vy = warp_block_pos(row->bdelta + 8 * b, w->y0, w->shift);
    *sx = _mm256_srai_epi32(*vx, FFU_WARP_INTER_BITS);
    *sy = _mm256_srai_epi32(*vy, FFU_WARP_INTER_BITS);
#ifdef __AVX512VL__ /* a mask compare: one instruction less on the shuffle port */
    return (__mmask8)(_mm256_cmple_epu32_mask(*sx, w->xlim) &
                      _mm256_cmple_epu32_mask(*sy, w->ylim)) == 0xFF;
#else
    __m256i ok = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_min_epu32(*sx, w->xlim), *sx),
                                  _mm256_cmpeq_epi32(_mm256_min_epu32(*sy, w->ylim), *sy));
    return _mm256_movemask_epi8(ok) == -1;
#endif
}

#endif
