/* Private to src/image: entry points of the piecewise warp, blur and Poisson solver that
 * force one code path or solver setting, so tests and benchmarks can compare the scalar
 * and SIMD paths byte for byte and measure the solver's convergence. The public
 * functions in image.h call these with FFU_ISA_AUTO and the default tolerance. */
#ifndef FFU_IMAGE_BLEND_INTERNAL_H
#define FFU_IMAGE_BLEND_INTERNAL_H

#include <stdint.h>

#include "facefuse/image.h"

/* isa: FFU_ISA_* from kernels_internal.h. */
ffu_status ffu_image_warp_piecewise_impl(const ffu_image *src, ffu_image *dst, const float *src_xy,
                                         const float *dst_xy, int n_points, const int *tri,
                                         int n_tri, ffu_image *mask, int isa);
ffu_status ffu_mask_gaussian_blur_impl(const ffu_image *src, ffu_image *dst, float sigma, int isa);

/* Default stopping rule of the Poisson solver: V-cycles stop once no pixel moved by more
 * than this many levels in the last cycle (or after FFU_CLONE_MAX_CYCLES). */
#define FFU_CLONE_TOL 0.02f
#define FFU_CLONE_MAX_CYCLES 60
/* tol and max_cycles as above; *cycles (may be NULL) gets the largest number of V-cycles
 * any channel needed. */
ffu_status ffu_image_seamless_clone_impl(ffu_clone_ctx *ctx, const ffu_image *src,
                                         const ffu_image *mask, ffu_image *dst, int x, int y,
                                         float tol, int max_cycles, int *cycles);

/* Gaussian blur passes over one tile (AVX2 build of the same C code as blend.c; the
 * compiler's vectorisation of the same expression order gives the same floats). */
void ffu_blur_vpass_avx2(const uint8_t *const *rows, int col0, const float *w, int r, int n,
                         float *out);
void ffu_blur_hpass_avx2(const float *in, const float *w, int r, int n, uint8_t *out);

#endif
