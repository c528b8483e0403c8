/* Pixel helpers shared by the image kernel tests: one channel of one pixel, the
 * largest byte difference between two packed images of the same size and format, and
 * filling a packed image with the fixed-seed random bytes of test.h. */
#ifndef FFU_TEST_IMAGE_H
#define FFU_TEST_IMAGE_H

#include <stdlib.h>

#include "facefuse/image.h"
#include "test.h"

static inline int px(const ffu_image *im, int x, int y, int c)
{
    return im->data[0][(size_t)y * im->stride[0] + x * ffu_pixfmt_bpp(im->fmt) + c];
}

static inline int max_diff(const ffu_image *a, const ffu_image *b)
{
    int m = 0, bpp = ffu_pixfmt_bpp(a->fmt);
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * bpp; x++) {
            int d = abs(a->data[0][(size_t)y * a->stride[0] + x] -
                        b->data[0][(size_t)y * b->stride[0] + x]);
            if (d > m) m = d;
        }
    return m;
}

static inline void fill_random(ffu_image *im, uint64_t *seed)
{
    int bpp = ffu_pixfmt_bpp(im->fmt);
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width * bpp; x++)
            im->data[0][(size_t)y * im->stride[0] + x] = (uint8_t)(test_rand_u64(seed) >> 56);
}

#endif
