/* AVX-512 bilinear warp row: the same blocks of eight interior pixels and the same
 * integers as warp_avx2.c, with fewer shuffles per pixel. The AVX2 kernel assembles
 * each pair of pixels from four 8-byte loads and spreads its weights with permutes,
 * and those shuffles all queue on one port (about 6 cycles a pixel on the Intel host).
 * Here two gathers bring the eight top and eight bottom 8-byte rows of a block, one
 * in-lane shuffle per row orders each pixel's bytes as (left, right) pairs per
 * channel, the horizontal weights are built with shifts, and a pair of word
 * interleaves lines the top and bottom sums up for the vertical step. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels_internal.h"
#include "warp_simd.h"

int ffu_warp_bilinear_row_avx512(const uint8_t *src, int sstride, int sw, int sh, int cn,
                                 const ffu_warp_row *row, uint8_t *dst, int n, uint8_t *blk_done)
{
    int nblk = n / 8;
    if (!warp_simd_fits(sw, sh, cn)) {
        memset(blk_done, 0, (size_t)nblk);
        return nblk;
    }
    /* Per 8-byte row (one pixel and its right neighbour): per channel (left, right). */
    const __m512i pairs3 = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 3, 1, 4, 2, 5, -1, -1, 8, 11, 9, 12, 10, 13, -1, -1));
    const __m512i pairs4 = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15));
    const __m512i pairs = cn == 3 ? pairs3 : pairs4;
    const __m256i squeeze3 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1,
                                              -1, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1,
                                              -1, -1);
    const __m256i join3 = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
    const __m512i low_qwords = _mm512_setr_epi64(0, 2, 4, 6, 0, 2, 4, 6);
    /* dword i of 8 to qword i (both halves), and to every dword of lane i/2 (even i:
     * the lane's low pixel, odd: its high one) */
    const __m512i dup2 = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i even4 = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    const __m512i odd4 = _mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7);
    const warp_simd_row w = warp_simd_row_setup(row, sstride, sw, sh, cn);
    const __m256i m31 = _mm256_set1_epi32(31), c32 = _mm256_set1_epi32(32);
    const __m512i round = _mm512_set1_epi32(512);
    const __m256i vstride = _mm256_set1_epi32(sstride), vcn = _mm256_set1_epi32(cn);
    const __m512i qstride = _mm512_set1_epi64(sstride), qcn = _mm512_set1_epi64(cn);
    for (int b = 0; b < nblk; b++) {
        __m256i vx, vy, sx, sy;
        if (!(blk_done[b] = (uint8_t)warp_block_inside(row, &w, b, &vx, &vy, &sx, &sy)))
            continue;
        /* Pixel i in qword i of the gathered rows. */
        __m512i top, bot;
        if (w.off32) {
            __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(sy, vstride),
                                           _mm256_mullo_epi32(sx, vcn));
            top = _mm512_i32gather_epi64(off, (const void *)src, 1);
            bot = _mm512_i32gather_epi64(_mm256_add_epi32(off, vstride), (const void *)src, 1);
        } else {
            __m512i off = _mm512_add_epi64(_mm512_mul_epu32(_mm512_cvtepu32_epi64(sy), qstride),
                                           _mm512_mul_epu32(_mm512_cvtepu32_epi64(sx), qcn));
            top = _mm512_i64gather_epi64(off, (const void *)src, 1);
            bot = _mm512_i64gather_epi64(_mm512_add_epi64(off, qstride), (const void *)src, 1);
        }
        __m256i fx = _mm256_and_si256(vx, m31), fy = _mm256_and_si256(vy, m31);
        /* Bytes (32 - fx, fx) four times per qword; words (32 - fy, fy) per dword. */
        __m256i wx = _mm256_or_si256(_mm256_sub_epi32(c32, fx), _mm256_slli_epi32(fx, 8));
        wx = _mm256_or_si256(wx, _mm256_slli_epi32(wx, 16));
        __m512i wy = _mm512_castsi256_si512(
            _mm256_or_si256(_mm256_sub_epi32(c32, fy), _mm256_slli_epi32(fy, 16)));
        __m512i wxq = _mm512_permutexvar_epi32(dup2, _mm512_castsi256_si512(wx));
        /* Per pixel four words: each channel's row sum p_left wx0 + p_right fx. */
        __m512i ht = _mm512_maddubs_epi16(_mm512_shuffle_epi8(top, pairs), wxq);
        __m512i hb = _mm512_maddubs_epi16(_mm512_shuffle_epi8(bot, pairs), wxq);
        /* Lane k holds pixels 2k (low qword) and 2k+1: interleave top and bottom words
         * per channel, then weigh them with that pixel's (32 - fy, fy). */
        __m512i even = _mm512_madd_epi16(_mm512_unpacklo_epi16(ht, hb),
                                         _mm512_permutexvar_epi32(even4, wy));
        __m512i odd = _mm512_madd_epi16(_mm512_unpackhi_epi16(ht, hb),
                                        _mm512_permutexvar_epi32(odd4, wy));
        even = _mm512_srai_epi32(_mm512_add_epi32(even, round), 10);
        odd = _mm512_srai_epi32(_mm512_add_epi32(odd, round), 10);
        /* Lane k's low 8 bytes: pixels 2k and 2k+1, four bytes each; then in order. */
        __m512i px = _mm512_packus_epi16(_mm512_packs_epi32(even, odd), _mm512_setzero_si512());
        __m256i out = _mm512_castsi512_si256(_mm512_permutexvar_epi64(low_qwords, px));
        uint8_t *d = dst + (size_t)8 * b * cn;
        if (cn == 4) {
            _mm256_storeu_si256((__m256i *)(void *)d, out);
            continue;
        }
        out = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(out, squeeze3), join3);
        _mm256_mask_storeu_epi8(d, 0xFFFFFF, out);
    }
    return nblk;
}
