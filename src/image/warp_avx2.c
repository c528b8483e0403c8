/* AVX2 bilinear affine warp for RGB24/BGR24/RGBA32: blocks of eight output pixels whose
 * source neighbourhoods lie inside the image. Same integers as pixel_bilinear in
 * warp.c: a u8 x s8 multiply-add blends each row pair with (32 - fx, fx), a 16-bit
 * multiply-add blends the two rows with (32 - fy, fy), then (v + 512) >> 10.
 * Built with -mavx2; called only after ffu_cpu_features() reports AVX2. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels_internal.h"
#include "warp_simd.h"

/* Row sy bytes in the low half, row sy+1 in the high half: left pixel, right pixel and
 * padding (8 bytes each). */
static inline __m128i load_quad(const uint8_t *p, int sstride)
{
    __m128i r0 = _mm_loadl_epi64((const __m128i *)(const void *)p);
    __m128i r1 = _mm_loadl_epi64((const __m128i *)(const void *)(p + sstride));
    return _mm_unpacklo_epi64(r0, r1);
}

int ffu_warp_bilinear_row_avx2(const uint8_t *src, int sstride, int sw, int sh, int cn,
                               const ffu_warp_row *row, uint8_t *dst, int n, uint8_t *blk_done)
{
    int nblk = n / 8;
    if (!warp_simd_fits(sw, sh, cn)) {
        memset(blk_done, 0, (size_t)nblk);
        return nblk;
    }
    /* Interleaves, per channel, (row0 left, row0 right, row1 left, row1 right). */
    const __m256i spread3 = _mm256_setr_epi8(0, 3, 8, 11, 1, 4, 9, 12, 2, 5, 10, 13, -1, -1, -1,
                                             -1, 0, 3, 8, 11, 1, 4, 9, 12, 2, 5, 10, 13, -1, -1,
                                             -1, -1);
    const __m256i spread4 = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11,
                                             15, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7,
                                             11, 15);
    const __m256i squeeze3 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1,
                                              -1, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1,
                                              -1, -1);
    const __m256i spread = cn == 3 ? spread3 : spread4;
    const warp_simd_row w = warp_simd_row_setup(row, sstride, sw, sh, cn);
    const __m256i m31 = _mm256_set1_epi32(31), c32 = _mm256_set1_epi32(32);
    const __m256i round = _mm256_set1_epi32(512);
    const __m256i vstride = _mm256_set1_epi32(sstride), vcn = _mm256_set1_epi32(cn);
    _Alignas(32) int32_t offs[8], X[8], Y[8];
    for (int b = 0; b < nblk; b++) {
        __m256i vx, vy, sx, sy;
        if (!(blk_done[b] = (uint8_t)warp_block_inside(row, &w, b, &vx, &vy, &sx, &sy)))
            continue;
        if (w.off32) {
            __m256i o = _mm256_add_epi32(_mm256_mullo_epi32(sy, vstride),
                                         _mm256_mullo_epi32(sx, vcn));
            _mm256_store_si256((__m256i *)(void *)offs, o);
        } else {
            _mm256_store_si256((__m256i *)(void *)X, vx);
            _mm256_store_si256((__m256i *)(void *)Y, vy);
        }
        __m256i fx = _mm256_and_si256(vx, m31), fy = _mm256_and_si256(vy, m31);
        /* Byte pairs (32 - fx, fx) and word pairs (32 - fy, fy), one pixel per int32. */
        __m256i wx = _mm256_or_si256(_mm256_sub_epi32(c32, fx), _mm256_slli_epi32(fx, 8));
        wx = _mm256_or_si256(wx, _mm256_slli_epi32(wx, 16));
        __m256i wy = _mm256_or_si256(_mm256_sub_epi32(c32, fy), _mm256_slli_epi32(fy, 16));
        __m256i r[4];
        for (int k = 0; k < 4; k++) {
            /* Register k holds pixels k and k+4, so the packs below come out in order. */
            int j0 = k, j1 = k + 4;
            const uint8_t *p0, *p1;
            if (w.off32) {
                p0 = src + offs[k], p1 = src + offs[k + 4];
            } else {
                p0 = src + (size_t)(Y[j0] >> FFU_WARP_INTER_BITS) * sstride +
                     (size_t)(X[j0] >> FFU_WARP_INTER_BITS) * cn;
                p1 = src + (size_t)(Y[j1] >> FFU_WARP_INTER_BITS) * sstride +
                     (size_t)(X[j1] >> FFU_WARP_INTER_BITS) * cn;
            }
            __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(load_quad(p0, sstride)),
                                                load_quad(p1, sstride), 1);
            __m256i idx = _mm256_setr_epi32(k, k, k, k, k + 4, k + 4, k + 4, k + 4);
            __m256i h = _mm256_maddubs_epi16(_mm256_shuffle_epi8(q, spread),
                                             _mm256_permutevar8x32_epi32(wx, idx));
            __m256i v = _mm256_madd_epi16(h, _mm256_permutevar8x32_epi32(wy, idx));
            r[k] = _mm256_srai_epi32(_mm256_add_epi32(v, round), 10);
        }
        __m256i out = _mm256_packus_epi16(_mm256_packs_epi32(r[0], r[1]),
                                          _mm256_packs_epi32(r[2], r[3]));
        uint8_t *d = dst + (size_t)8 * b * cn;
        if (cn == 4) {
            _mm256_storeu_si256((__m256i *)(void *)d, out);
            continue;
        }
        out = _mm256_shuffle_epi8(out, squeeze3);
        if ((b + 1) * 8 * 3 + 4 <= n * 3) {
            /* The second store spills 4 bytes into the next block, written later. */
            _mm_storeu_si128((__m128i *)(void *)d, _mm256_castsi256_si128(out));
            _mm_storeu_si128((__m128i *)(void *)(d + 12), _mm256_extracti128_si256(out, 1));
        } else {
            uint8_t tmp[32];
            _mm_storeu_si128((__m128i *)(void *)tmp, _mm256_castsi256_si128(out));
            _mm_storeu_si128((__m128i *)(void *)(tmp + 12), _mm256_extracti128_si256(out, 1));
            memcpy(d, tmp, 24);
        }
    }
    return nblk;
}
