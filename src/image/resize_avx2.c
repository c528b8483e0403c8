/* AVX2 halves of the bilinear resize (see kernels_internal.h for the integer recipe
 * they share with resize.c) and of the general area filter (its vertical sums in the
 * same float operations as the scalar pass, no fused multiply-add, and its rounding
 * store). Built with -mavx2; called only after ffu_cpu_features() reports AVX2. Each
 * function does a prefix of its row and returns its length; the scalar code finishes
 * the row, so the output bytes are the same on every path. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels_internal.h"

/* Two 8-byte loads (a source pixel and its right neighbour, plus padding bytes) into
 * the two 128-bit lanes. */
static inline __m256i load_pair2(const uint8_t *a, const uint8_t *b)
{
    __m128i lo = _mm_loadl_epi64((const __m128i *)(const void *)a);
    __m128i hi = _mm_loadl_epi64((const __m128i *)(const void *)b);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* RGB24/BGR24 and RGBA32: per 128-bit lane one output pixel: its source bytes are
 * spread into 16-bit (left, right) pairs per channel and multiplied-added with the
 * pixel's (a0, a1) weights, giving one int32 per channel. */
static int hline_packed(const uint8_t *src, int16_t *dst, const int32_t *xofs,
                        const int16_t *alpha, int safe, int cn)
{
    const __m256i spread3 = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1,
                                             -1, -1, 0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1,
                                             -1, -1, -1, -1);
    const __m256i spread4 = _mm256_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1,
                                             7, -1, 0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1,
                                             3, -1, 7, -1);
    /* Drops the 4th (zero) int16 of each pixel: 8 words -> 6 words per lane. */
    const __m256i squeeze3 = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, -1, -1,
                                              -1, -1, 0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13,
                                              -1, -1, -1, -1);
    const __m256i spread = cn == 3 ? spread3 : spread4;
    const __m256i idx_a = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2);
    const __m256i idx_b = _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3);
    int i = 0;
    for (; i + 4 <= safe; i += 4) {
        /* Register a holds pixels i and i+2, b holds i+1 and i+3: after packing the
         * lanes read i, i+1 | i+2, i+3. */
        __m256i a = load_pair2(src + xofs[i], src + xofs[i + 2]);
        __m256i b = load_pair2(src + xofs[i + 1], src + xofs[i + 3]);
        __m256i w = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(alpha + 2 * i)));
        __m256i wa = _mm256_permutevar8x32_epi32(w, idx_a);
        __m256i wb = _mm256_permutevar8x32_epi32(w, idx_b);
        __m256i ra = _mm256_srai_epi32(_mm256_madd_epi16(_mm256_shuffle_epi8(a, spread), wa), 4);
        __m256i rb = _mm256_srai_epi32(_mm256_madd_epi16(_mm256_shuffle_epi8(b, spread), wb), 4);
        __m256i p = _mm256_packs_epi32(ra, rb);
        if (cn == 4) {
            _mm256_storeu_si256((__m256i *)(void *)(dst + 4 * i), p);
        } else {
            /* Two overlapping 16-byte stores of 12 useful bytes; the spill lands in the
             * next pixels (rewritten later) or the row's padding. */
            p = _mm256_shuffle_epi8(p, squeeze3);
            _mm_storeu_si128((__m128i *)(void *)(dst + 3 * i), _mm256_castsi256_si128(p));
            _mm_storeu_si128((__m128i *)(void *)(dst + 3 * i + 6), _mm256_extracti128_si256(p, 1));
        }
    }
    return i;
}

/* GRAY8: eight pixels per gather of 32 bits (left, right and two spare bytes). */
static int hline_gray(const uint8_t *src, int16_t *dst, const int32_t *xofs,
                      const int16_t *alpha, int safe)
{
    const __m256i spread = _mm256_setr_epi8(0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1, 12, -1,
                                            13, -1, 0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1,
                                            12, -1, 13, -1);
    int i = 0;
    for (; i + 16 <= safe; i += 16) {
        __m256i o0 = _mm256_loadu_si256((const __m256i *)(const void *)(xofs + i));
        __m256i o1 = _mm256_loadu_si256((const __m256i *)(const void *)(xofs + i + 8));
        __m256i g0 = _mm256_i32gather_epi32((const int *)(const void *)src, o0, 1);
        __m256i g1 = _mm256_i32gather_epi32((const int *)(const void *)src, o1, 1);
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(alpha + 2 * i));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(alpha + 2 * i + 16));
        __m256i r0 = _mm256_srai_epi32(_mm256_madd_epi16(_mm256_shuffle_epi8(g0, spread), w0), 4);
        __m256i r1 = _mm256_srai_epi32(_mm256_madd_epi16(_mm256_shuffle_epi8(g1, spread), w1), 4);
        __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(r0, r1), 0xd8);
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), p);
    }
    return i;
}

int ffu_resize_hline_avx2(const uint8_t *src, int16_t *dst, const int32_t *xofs,
                          const int16_t *alpha, int n, int cn, int safe)
{
    if (safe > n) safe = n;
    if (cn == 1) return hline_gray(src, dst, xofs, alpha, safe);
    if (cn == 3 || cn == 4) return hline_packed(src, dst, xofs, alpha, safe, cn);
    return 0;
}

int ffu_resize_vline_avx2(const int16_t *h0, const int16_t *h1, uint8_t *dst, int n, int b0,
                          int b1)
{
    const __m256i vb0 = _mm256_set1_epi16((short)b0), vb1 = _mm256_set1_epi16((short)b1);
    const __m256i two = _mm256_set1_epi16(2);
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(h0 + i));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(h1 + i));
        __m256i y0 = _mm256_loadu_si256((const __m256i *)(const void *)(h0 + i + 16));
        __m256i y1 = _mm256_loadu_si256((const __m256i *)(const void *)(h1 + i + 16));
        __m256i u = _mm256_add_epi16(_mm256_mulhi_epi16(x0, vb0), _mm256_mulhi_epi16(x1, vb1));
        __m256i v = _mm256_add_epi16(_mm256_mulhi_epi16(y0, vb0), _mm256_mulhi_epi16(y1, vb1));
        u = _mm256_srai_epi16(_mm256_add_epi16(u, two), 2);
        v = _mm256_srai_epi16(_mm256_add_epi16(v, two), 2);
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi16(u, v), 0xd8);
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), p);
    }
    for (; i + 16 <= n; i += 16) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(h0 + i));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(h1 + i));
        __m256i u = _mm256_add_epi16(_mm256_mulhi_epi16(x0, vb0), _mm256_mulhi_epi16(x1, vb1));
        u = _mm256_srai_epi16(_mm256_add_epi16(u, two), 2);
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi16(u, u), 0xd8);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_castsi256_si128(p));
    }
    return i;
}

int ffu_resize_area_vline_avx2(const uint8_t *src, size_t stride, int rows, float w_first,
                               float w_mid, float w_last, float *t, int n)
{
    int done = n & ~7;
    for (int r = 0; r < rows; r++, src += stride) {
        __m256 w = _mm256_set1_ps(r == 0 ? w_first : r == rows - 1 ? w_last : w_mid);
        for (int j = 0; j < done; j += 8) {
            __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(src + j));
            __m256 v = _mm256_mul_ps(w, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)));
            _mm256_storeu_ps(t + j, r ? _mm256_add_ps(_mm256_loadu_ps(t + j), v) : v);
        }
    }
    return done;
}

int ffu_resize_area_store_avx2(const float *acc, uint8_t *dst, int n)
{
    int done = n & ~7;
    for (int j = 0; j < done; j += 8) {
        /* round to nearest even (the default MXCSR mode), then saturate twice */
        __m256i i32 = _mm256_cvtps_epi32(_mm256_loadu_ps(acc + j));
        __m128i u16 = _mm_packus_epi32(_mm256_castsi256_si128(i32),
                                       _mm256_extracti128_si256(i32, 1));
        _mm_storel_epi64((__m128i *)(void *)(dst + j), _mm_packus_epi16(u16, u16));
    }
    return done;
}
