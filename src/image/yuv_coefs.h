/* The YUV <-> RGB coefficients, one table for the CPU conversion (convert.c) and the
 * GPU kernels (cuda/image_gpu_hd.h), so both run the very same integers and give the
 * same bytes.
 *
 * Every entry is 16-bit fixed point, lround(v * 65536), of the matrix with luma weights
 * Kr, Kb (Kg = 1 - Kr - Kb) and the range scales ys, cs: full range ys = cs = 1,
 * limited ys = 255/219 (Y 16..235), cs = 255/224 (U, V 16..240), yoff 16. Decoding:
 *   cy = ys, crv = 2 cs (1 - Kr), cbu = 2 cs (1 - Kb),
 *   cgu = 2 cs (1 - Kb) Kb / Kg, cgv = 2 cs (1 - Kr) Kr / Kg;
 *   R = (cy (Y - yoff) + crv V' + 2^15) >> 16, G = (... - cgu U' - cgv V' ...) >> 16,
 *   B = (... + cbu U' ...) >> 16 with U' = U - 128, V' = V - 128.
 * Encoding, with cu = 1 / (2 cs (1 - Kb)), cv = 1 / (2 cs (1 - Kr)):
 *   yr, yg, yb = Kr / ys, Kg / ys, Kb / ys;
 *   ur, ug, ub = -Kr cu, -Kg cu, (1 - Kb) cu;  vr, vg, vb = (1 - Kr) cv, -Kg cv, -Kb cv.
 * The numbers are written out rather than computed at run time so a kernel's
 * parameters are plain copies and nothing depends on the host's libm; the unit test
 * (tests/unit/test_image_convert.c) recomputes every entry from Kr and Kb. The BT.601
 * rows are the values convert.c always used. */
#ifndef FFU_IMAGE_YUV_COEFS_H
#define FFU_IMAGE_YUV_COEFS_H

#include "facefuse/image.h"

typedef struct yuv_coefs {
    int yoff, cy, crv, cgu, cgv, cbu;       /* YUV -> RGB */
    int yr, yg, yb, ur, ug, ub, vr, vg, vb; /* RGB -> YUV */
} yuv_coefs;

/* The luma weights each matrix is derived from (for the test, and for documentation). */
static inline void yuv_matrix_weights(ffu_yuv_matrix m, double *kr, double *kb)
{
    switch (m) {
    case FFU_YUV_BT709: *kr = 0.2126, *kb = 0.0722; return;
    case FFU_YUV_BT2020: *kr = 0.2627, *kb = 0.0593; return;
    default: *kr = 0.299, *kb = 0.114; return;
    }
}

/* The coefficients of a coding, or NULL when its matrix or range is unknown. */
static inline const yuv_coefs *yuv_coefs_of(ffu_yuv_coding c)
{
    /* [matrix][range]: limited, then full */
    static const yuv_coefs table[FFU_YUV_MATRIX_COUNT][2] = {
        {/* BT.601 */
         {16, 76309, 104597, 25675, 53279, 132201,
          16829, 33039, 6416, -9714, -19071, 28784, 28784, -24103, -4681},
         {0, 65536, 91881, 22553, 46802, 116130,
          19595, 38470, 7471, -11058, -21710, 32768, 32768, -27439, -5329}},
        {/* BT.709 */
         {16, 76309, 117489, 13975, 34925, 138438,
          11966, 40254, 4064, -6596, -22189, 28784, 28784, -26145, -2639},
         {0, 65536, 103206, 12276, 30679, 121609,
          13933, 46871, 4732, -7509, -25259, 32768, 32768, -29763, -3005}},
        {/* BT.2020 (non-constant luminance) */
         {16, 76309, 110014, 12277, 42626, 140363,
          14786, 38160, 3338, -8038, -20746, 28784, 28784, -26469, -2315},
         {0, 65536, 96639, 10784, 37444, 123299,
          17216, 44433, 3886, -9151, -23617, 32768, 32768, -30133, -2635}},
    };
    if ((unsigned)c.matrix >= FFU_YUV_MATRIX_COUNT ||
        (c.range != FFU_YUV_LIMITED && c.range != FFU_YUV_FULL))
        return (const yuv_coefs *)0;
    return &table[c.matrix][c.range == FFU_YUV_FULL];
}

#endif
