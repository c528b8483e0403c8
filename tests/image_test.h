/* Helpers shared by the image codec tests (test_image_codec.c, test_image_webp.c):
 * addressing one pixel, exact and PSNR comparison, the "zeroed on error" check the
 * decoders promise, every truncation of a file, and the committed seed files. */
#ifndef FFU_IMAGE_TEST_H
#define FFU_IMAGE_TEST_H

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/image.h"
#include "test.h"

static inline const uint8_t *px(const ffu_image *img, int x, int y)
{
    return img->data[0] + (size_t)y * img->stride[0] + (size_t)x * ffu_pixfmt_bpp(img->fmt);
}

/* 1 when both images have the same format, size and pixel bytes. */
static inline int same_pixels(const ffu_image *a, const ffu_image *b)
{
    if (a->fmt != b->fmt || a->width != b->width || a->height != b->height) return 0;
    size_t row = (size_t)a->width * ffu_pixfmt_bpp(a->fmt);
    for (int y = 0; y < a->height; y++)
        if (memcmp(px(a, 0, y), px(b, 0, y), row) != 0) return 0;
    return 1;
}

static inline double psnr(const ffu_image *a, const ffu_image *b)
{
    int bpp = ffu_pixfmt_bpp(a->fmt);
    double se = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * bpp; x++) {
            double d = (double)px(a, 0, y)[x] - (double)px(b, 0, y)[x];
            se += d * d;
        }
    double mse = se / ((double)a->width * a->height * bpp);
    return mse > 0 ? 10.0 * log10(255.0 * 255.0 / mse) : 99.0;
}

static inline int is_zeroed(const ffu_image *img)
{
    static const ffu_image zero;
    return memcmp(img, &zero, sizeof zero) == 0;
}

/* Every cut of a file must fail cleanly with FFU_ERR_FORMAT and a zeroed output. */
static inline int check_all_cuts(const uint8_t *data, size_t n, const char *what)
{
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees over-reads */
        memcpy(copy, data, cut);
        ffu_image img;
        memset(&img, 0x5A, sizeof img);
        ffu_status st =
            ffu_image_decode(copy, cut, (cut & 1) ? FFU_PIX_RGB24 : FFU_PIX_GRAY8, &img);
        free(copy);
        if (st != FFU_ERR_FORMAT || !is_zeroed(&img)) {
            fprintf(stderr, "%s cut at %zu of %zu: status %d (%s)\n", what, cut, n, st,
                    ffu_error_message());
            ffu_image_release(&img);
            return -1;
        }
    }
    return 0;
}

/* Path of a committed seed file, tests/fixtures/corpus/REL, in buf. */
static inline const char *fixture(const char *rel, char *buf, size_t len)
{
    snprintf(buf, len, "%s/tests/fixtures/corpus/%s", FFU_TEST_SOURCE_DIR, rel);
    return buf;
}

/* check_all_cuts on the committed seed file REL; -1 when it cannot be read. */
static inline int check_fixture_cuts(const char *rel)
{
    char p[PATH_MAX];
    size_t n;
    uint8_t *data = test_read_all(fixture(rel, p, sizeof p), &n);
    int rc = data ? check_all_cuts(data, n, rel) : -1;
    if (!data) fprintf(stderr, "%s: cannot read\n", p);
    free(data);
    return rc;
}

static inline ffu_status load_fixture(const char *rel, ffu_pixfmt want, ffu_image *out)
{
    char p[PATH_MAX];
    return ffu_image_load(fixture(rel, p, sizeof p), want, out);
}

#endif
