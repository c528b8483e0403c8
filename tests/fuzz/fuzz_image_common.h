/* The body of the image fuzz targets (fuzz_jpeg.c, fuzz_png.c, fuzz_webp.c): decode
 * one input to two pixel formats, check that success and failure are consistent, and
 * for small images check that a PNG re-encode decodes back to identical pixels. A
 * broken invariant aborts, which libFuzzer reports as a crash. */
#ifndef FFU_FUZZ_IMAGE_COMMON_H
#define FFU_FUZZ_IMAGE_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Larger images are valid inputs but only slow the fuzzer down (and a 256 Mpx image
 * would trip its memory limit); the size checks themselves run in probe. */
#define FUZZ_MAX_PIXELS (4u << 20)

static void fuzz_touch(const ffu_image *img)
{
    /* Reads every byte so ASan/MSan see uninitialised or out-of-bounds pixels. */
    unsigned sum = 0;
    int row = img->width * ffu_pixfmt_bpp(img->fmt);
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < row; x++)
            sum += img->data[0][(size_t)y * img->stride[0] + x];
    if (sum == 0xFFFFFFFFu) abort(); /* keeps the loop */
}

static int fuzz_image_decode_one(const uint8_t *data, size_t size)
{
    int w = 0, h = 0;
    const char *fmt = NULL;
    ffu_status pst = ffu_image_probe(data, size, &fmt, &w, &h);
    if (pst == FFU_OK && (uint64_t)w * (uint64_t)h > FUZZ_MAX_PIXELS) return 0;
    static const ffu_pixfmt others[] = {FFU_PIX_GRAY8, FFU_PIX_BGR24, FFU_PIX_RGBA32};
    ffu_pixfmt wants[2] = {FFU_PIX_RGB24, others[size % 3]};
    for (int i = 0; i < 2; i++) {
        ffu_image img;
        ffu_status st = ffu_image_decode(data, size, wants[i], &img);
        if (st != FFU_OK) {
            static const ffu_image zero;
            /* FFU_ERR_INTERNAL means libpng/libjpeg gave other pixels than we asked for. */
            if (st >= 0 || st == FFU_ERR_INTERNAL || memcmp(&img, &zero, sizeof img) != 0)
                abort();
            continue;
        }
        /* A decodable file has a readable header of the same size. */
        if (pst != FFU_OK || img.width != w || img.height != h || img.fmt != wants[i]) abort();
        fuzz_touch(&img);
        if (i == 0 && (uint64_t)img.width * img.height <= 64 * 64) {
            uint8_t *png = NULL;
            size_t n = 0;
            ffu_image back;
            if (ffu_image_encode_png(&img, NULL, &png, &n) != FFU_OK) abort();
            if (ffu_image_decode(png, n, img.fmt, &back) != FFU_OK) abort();
            for (int y = 0; y < img.height; y++)
                if (memcmp(img.data[0] + (size_t)y * img.stride[0],
                           back.data[0] + (size_t)y * back.stride[0], (size_t)img.width * 3) != 0)
                    abort();
            ffu_image_release(&back);
            free(png);
        }
        ffu_image_release(&img);
    }
    return 0;
}

#endif
