/* Private to src/image: what the resize and warp kernels share between their scalar
 * reference (resize.c, warp.c) and their SIMD versions (*_avx2.c), plus entry points
 * that force one code path so tests can compare the paths byte for byte.
 *
 * The fixed-point numbers are part of the contract: every path computes exactly the
 * same integers, so SIMD output is bit-exact with the scalar output. */
#ifndef FFU_IMAGE_KERNELS_INTERNAL_H
#define FFU_IMAGE_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "facefuse/image.h"

/* Code paths. FFU_ISA_AUTO picks the best one allowed by ffu_cpu_features(). */
enum {
    FFU_ISA_AUTO = -1,
    FFU_ISA_SCALAR = 0,
    FFU_ISA_AVX2 = 1,
    FFU_ISA_AVX512 = 2, /* AVX-512 F + BW (and VL, DQ, which every such CPU has) */
    FFU_ISA_COUNT = 3
};

/* The best path this CPU and FFU_CPU_MASK allow. */
int ffu_image_isa_best(void);
/* Clamps a requested path to what the CPU can run (AUTO -> best). */
int ffu_image_isa_resolve(int isa);

/* Checks the arguments every packed-to-packed kernel shares: both images present,
 * packed u8, the same format, sane strides, no overlap. `op` names the caller. */
ffu_status ffu_image_check_packed_pair(const ffu_image *src, const ffu_image *dst,
                                       const char *op);

ffu_status ffu_image_resize_impl(const ffu_image *src, ffu_image *dst, ffu_interp interp,
                                 int isa);
ffu_status ffu_image_warp_affine_impl(const ffu_image *src, ffu_image *dst, const double m[6],
                                      ffu_interp interp, ffu_border border,
                                      const uint8_t border_value[4], int isa);

/* ---- bilinear resize ------------------------------------------------------------------
 * Separable, horizontal pass first (as OpenCV), on 11-bit weights (sum 2048):
 *   h = (p[x0] * a0 + p[x0 + 1] * a1) >> 4              (int16, at most 32640)
 *   out = ((h0 * b0) >> 16) + ((h1 * b1) >> 16) + 2) >> 2
 * The >>16 products are what a 16-bit "multiply high" gives, so the vertical pass is
 * four instructions per 16 values in SIMD and the same integers in C. */
#define FFU_RESIZE_COEF_BITS 11
#define FFU_RESIZE_COEF_ONE (1 << FFU_RESIZE_COEF_BITS)
/* Output columns per tile: tables and two intermediate rows for one tile live on the
 * stack (about 12 KB), so resize never allocates. */
#define FFU_RESIZE_TILE 512
/* int16 values of padding after an intermediate row: SIMD stores may spill into it. */
#define FFU_RESIZE_ROW_PAD 32

/* One source row through the horizontal pass for n output pixels of cn channels.
 * xofs[i] is the byte offset of the left source pixel (its right neighbour is at
 * xofs[i] + cn), alpha[2i], alpha[2i+1] its weights. The SIMD versions do the first
 * pixels whose loads stay inside the row (xofs[i] + 8 <= row_bytes, any cn) and return
 * how many they did; the caller finishes with the scalar version. */
typedef int (*ffu_resize_hline_fn)(const uint8_t *src, int16_t *dst, const int32_t *xofs,
                                   const int16_t *alpha, int n, int cn, int safe);
int ffu_resize_hline_avx2(const uint8_t *src, int16_t *dst, const int32_t *xofs,
                          const int16_t *alpha, int n, int cn, int safe);
/* Vertical pass over n int16 values; returns how many it did (the rest is scalar). */
int ffu_resize_vline_avx2(const int16_t *h0, const int16_t *h1, uint8_t *dst, int n, int b0,
                          int b1);

/* ---- area resize, general factors ----------------------------------------------------
 * Vertical pass of one output row: t[j] = sum over `rows` source rows (stride apart) of
 * w * src[j], the first row weighted w_first, the last w_last, the others w_mid, summed
 * in row order with separate multiplies and adds, as the scalar pass in resize.c does.
 * Does a prefix of [0, n) and returns its length. */
int ffu_resize_area_vline_avx2(const uint8_t *src, size_t stride, int rows, float w_first,
                               float w_mid, float w_last, float *t, int n);
/* The output row: each of acc[0..n) rounded to nearest (ties to even) and clamped to
 * [0, 255], as the scalar store; a prefix, returning its length. */
int ffu_resize_area_store_avx2(const float *acc, uint8_t *dst, int n);

/* ---- affine warp ----------------------------------------------------------------------
 * Coordinates are fixed point with FFU_WARP_AB_BITS fraction bits (adelta per column +
 * one per-row offset, as OpenCV), cut to FFU_WARP_INTER_BITS fraction bits for
 * bilinear. Bilinear weights are exact: wx = (32 - fx, fx), wy = (32 - fy, fy),
 *   out = ((p00 wx0 + p01 wx1) wy0 + (p10 wx0 + p11 wx1) wy1 + 512) >> 10. */
#define FFU_WARP_AB_BITS 10
#define FFU_WARP_INTER_BITS 5
#define FFU_WARP_TILE 256

/* The sample positions of one row of a tile, in 1/32 px: pixel i at
 * X = (x0 + adelta[i]) >> shift, Y = (y0 + bdelta[i]) >> shift. */
typedef struct ffu_warp_row {
    const int32_t *adelta, *bdelta;
    int32_t x0, y0;
    int shift;
} ffu_warp_row;

/* Bilinear warp of one row of n output pixels (cn 3 or 4) at the sample positions r
 * gives. Works in blocks of eight: a block whose 2x2 neighbourhoods
 * (plus the 8-byte SIMD loads) all lie inside the source is written and gets
 * blk_done[b] = 1; other blocks get 0 and are left to the scalar code with its border
 * handling. Returns the number of blocks looked at (n / 8). */
int ffu_warp_bilinear_row_avx512(const uint8_t *src, int sstride, int sw, int sh, int cn,
                                 const ffu_warp_row *row, uint8_t *dst, int n, uint8_t *blk_done);
int ffu_warp_bilinear_row_avx2(const uint8_t *src, int sstride, int sw, int sh, int cn,
                               const ffu_warp_row *row, uint8_t *dst, int n, uint8_t *blk_done);

#endif
