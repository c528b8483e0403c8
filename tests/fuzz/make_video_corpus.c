/* Writes the seed corpus of the video fuzzer (tests/fixtures/corpus/video) with the
 * project's own writer: tiny synthetic clips in each container we write (MP4, MOV, MKV;
 * H.264 and MPEG-4 Part 2), one with the index first, and one cut in half. Built with the
 * tests by cmake/ffmpeg.cmake; run by hand when the seeds change:
 * `build/make_video_corpus tests/fixtures/corpus/video`. */
#include <stdio.h>
#include <stdlib.h>

#include "facefuse/video.h"

static ffu_status write_clip(const char *path, const char *codec, const char *pix_fmt,
                             int faststart)
{
    ffu_video_writer_opts o = {.width = 32,
                               .height = 24,
                               .fps_num = 10,
                               .fps_den = 1,
                               .codec = codec,
                               .pix_fmt = pix_fmt,
                               .gop = 3,
                               .crf = 30,
                               .faststart = faststart,
                               .threads = 1};
    if (!codec && faststart) o.preset = "ultrafast"; /* the others: x264's default, B-frames */
    ffu_video_writer *w = NULL;
    ffu_status st = ffu_video_writer_open(&w, path, &o);
    if (st < 0) return st;
    ffu_video_writer_set_metadata(w, "comment", "facefuse fuzz seed");
    ffu_image img;
    if ((st = ffu_image_create(&img, FFU_PIX_RGB24, 32, 24)) < 0) {
        ffu_video_writer_abort(w);
        return st;
    }
    for (int t = 0; t < 6 && st >= 0; t++) {
        for (int y = 0; y < 24; y++)
            for (int x = 0; x < 32; x++) {
                uint8_t *p = img.data[0] + y * img.stride[0] + 3 * x;
                p[0] = (uint8_t)(x * 8 + t * 20), p[1] = (uint8_t)(y * 10),
                p[2] = (uint8_t)(t * 40);
            }
        st = ffu_video_writer_write(w, &img, -1);
    }
    ffu_image_release(&img);
    if (st < 0) {
        ffu_video_writer_abort(w);
        return st;
    }
    return ffu_video_writer_close(w);
}

static int cut_half(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    if (!f) return -1;
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    FILE *g = fopen(to, "wb");
    if (!g) return -1;
    size_t k = fwrite(buf, 1, n / 2, g);
    return fclose(g) == 0 && k == n / 2 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static const struct {
        const char *name, *codec, *pix_fmt;
        int faststart;
    } seeds[] = {
        {"h264.mp4", NULL, NULL, 0},
        {"h264_faststart.mp4", NULL, NULL, 1},
        {"h264_444.mov", NULL, "yuv444p", 0},
        {"mpeg4.mkv", "mpeg4", NULL, 0},
    };
    ffu_video_route_ffmpeg_log(1); /* x264's statistics are not wanted here */
    char path[4096], cut[4096];
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", argv[1], seeds[i].name);
        if (write_clip(path, seeds[i].codec, seeds[i].pix_fmt, seeds[i].faststart) < 0) {
            fprintf(stderr, "%s: %s\n", path, ffu_error_message());
            return 1;
        }
    }
    snprintf(path, sizeof path, "%s/h264_faststart.mp4", argv[1]);
    snprintf(cut, sizeof cut, "%s/h264_faststart_cut.mp4", argv[1]);
    if (cut_half(path, cut) != 0) {
        fprintf(stderr, "%s: cannot write\n", cut);
        return 1;
    }
    return 0;
}
