/* libFuzzer target for the video reader (src/video/reader.c) over an in-memory file:
 * whatever container FFmpeg recognises is opened, a few frames are decoded and
 * converted to one of the output formats, one seek is tried. Checks our side of the
 * contract: errors are negative statuses with the out-pointer cleared, frames have the
 * size and format the reader announced, every converted byte is readable.
 * Seeds: tests/fixtures/corpus/video (written by make_video_corpus). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/video.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const ffu_image *img)
{
    /* Reads every byte so the sanitizers see uninitialised or out-of-bounds pixels. */
    unsigned sum = 0;
    int planes = img->fmt == FFU_PIX_NV12 ? 2 : 1;
    for (int p = 0; p < planes; p++) {
        int rows = p ? img->height / 2 : img->height;
        int row = img->fmt == FFU_PIX_NV12 ? img->width : img->width * ffu_pixfmt_bpp(img->fmt);
        for (int y = 0; y < rows; y++)
            for (int x = 0; x < row; x++)
                sum += img->data[p][(size_t)y * img->stride[p] + x];
    }
    if (sum == 0xFFFFFFFFu) abort(); /* keeps the loop */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        ffu_video_route_ffmpeg_log(1);
        ffu_log_set_level(FFU_LOG_ERROR);
        quiet = 1;
    }
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_NV12, FFU_PIX_GRAY8};
    /* Small caps keep each input cheap; sizes beyond them are checked, not decoded. */
    ffu_video_reader_opts o = {
        .pixfmt = fmts[size % 4], .threads = 1, .max_pixels = 1 << 20, .timeout_ms = 10000};
    ffu_video_reader *r = (ffu_video_reader *)&o; /* must come back NULL on error */
    ffu_status st = ffu_video_reader_open_memory(&r, data, size, &o);
    if (st != FFU_OK) {
        if (st >= 0 || r != NULL) abort();
        return 0;
    }
    const ffu_video_info *in = ffu_video_reader_info(r);
    if (in->width <= 0 || in->height <= 0 || (int64_t)in->width * in->height > (1 << 20)) abort();
    ffu_pixfmt pf;
    int w, h;
    ffu_video_reader_output(r, &pf, &w, &h);
    ffu_image img = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 6; i++) {
            double pts;
            st = ffu_video_reader_read(r, &img, &pts);
            if (st != FFU_OK) {
                if (st != FFU_EOF && st >= 0) abort();
                break;
            }
            if (img.fmt != pf || img.width != w || img.height != h) abort();
            touch(&img);
        }
        if (pass == 0 && (!in->seekable || ffu_video_reader_seek(r, 0.1) != FFU_OK)) break;
    }
    ffu_image_release(&img);
    ffu_video_reader_close(r);
    return 0;
}
