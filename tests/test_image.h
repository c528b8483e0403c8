/* Pixel helpers shared by the image kernel tests: one channel of one pixel, and the
 * largest byte difference between two packed images of the same size and format. */
#ifndef FFU_TEST_IMAGE_H
#define FFU_TEST_IMAGE_H

#include <stdlib.h>

#include "facefuse/image.h"

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

#endif
