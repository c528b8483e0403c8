/* `facefuse video info|convert|from-images` run as a user would: a clip made from
 * photos has the frame count, size and rate asked for and its tag; convert changes
 * size and frame rate by time (frames repeated or dropped) and keeps the audio; info
 * reports both in JSON; bad arguments and missing files give one-line errors; without
 * FFmpeg's libraries video commands say so and image commands work. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <libavformat/version.h>

#include "facefuse/core.h"
#include "facefuse/image.h"
#include "facefuse/video.h"
#include "test.h"
#include "test_cli.h"

static run_result r;
static char dir[] = "/tmp/ffu_cli_video_XXXXXX";

static void make_photo(const char *path, int w, int h, int seed)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, w, h), FFU_OK);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = img.data[0] + (size_t)y * img.stride[0] + 3 * x;
            p[0] = (uint8_t)(x * 255 / w), p[1] = (uint8_t)(y * 255 / h), p[2] = (uint8_t)seed;
        }
    CHECK_EQ_INT(ffu_image_save(path, &img, 95), FFU_OK);
    ffu_image_release(&img);
}

/* Opens path and returns its info through *in (reader closed). */
static int probe(const char *path, ffu_video_info *in)
{
    ffu_video_reader *rd;
    if (ffu_video_reader_open(&rd, path, NULL))
        return -1;
    *in = *ffu_video_reader_info(rd);
    ffu_video_reader_close(rd);
    return 0;
}

/* Frames a reader really returns (the container's count can be an estimate). */
static int count_frames(const char *path)
{
    ffu_video_reader *rd;
    if (ffu_video_reader_open(&rd, path, NULL))
        return -1;
    int n = 0;
    while (ffu_video_reader_read(rd, NULL, NULL) == FFU_OK) n++;
    ffu_video_reader_close(rd);
    return n;
}

static void test_from_images_and_info(void)
{
    char a[512], b[512], clip[512];
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.jpg", dir);
    snprintf(clip, sizeof clip, "%s/clip.mp4", dir);
    make_photo(a, 300, 200, 10);
    make_photo(b, 200, 300, 200);
    run(&r, (const char *const[]){"video", "from-images", a, b, "-o", clip, "--size", "320x240",
                                  "--seconds", "0.8", "--fps", "10", "-q", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_video_info in;
    CHECK_EQ_INT(probe(clip, &in), 0);
    CHECK_EQ_INT(in.width, 320);
    CHECK_EQ_INT(in.height, 240);
    CHECK_EQ_INT(in.fps_num, 10);
    CHECK_EQ_INT(in.fps_den, 1);
    CHECK_EQ_INT(count_frames(clip), 16); /* 2 photos x 0.8 s x 10 fps */

    run(&r, (const char *const[]){"video", "info", clip, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const ffu_json *v = ffu_json_at(j, 0);
    CHECK(v != NULL);
    CHECK_EQ_INT((int)ffu_json_number(ffu_json_get(v, "width"), -1), 320);
    CHECK_EQ_INT((int)ffu_json_number(ffu_json_get(v, "frames"), -1), 16);
    CHECK_STR(ffu_json_string(ffu_json_get(v, "codec")), "h264");
    const char *comment = ffu_json_string(ffu_json_get(ffu_json_get(v, "metadata"), "comment"));
    CHECK(comment && strstr(comment, "facefuse"));
    ffu_json_free(j);

    /* a folder stands for its images in name order (a text file in it ignored; the
     * folder was an I/O error), and --json escapes the output's name (a quote in it
     * made the printed JSON invalid) */
    char photos[512], pa[600], pb[600], txt[600], clip2[512];
    snprintf(photos, sizeof photos, "%s/photos", dir);
    snprintf(pa, sizeof pa, "%s/1.png", photos);
    snprintf(pb, sizeof pb, "%s/2.jpg", photos);
    snprintf(txt, sizeof txt, "%s/notes.txt", photos);
    snprintf(clip2, sizeof clip2, "%s/say \"cheese\".mp4", dir);
    CHECK(mkdir(photos, 0755) == 0 && test_write_file(txt, "x", 1) == 0);
    make_photo(pa, 300, 200, 10);
    make_photo(pb, 200, 300, 200);
    run(&r, (const char *const[]){"video", "from-images", photos, "-o", clip2, "--size", "320x240",
                                  "--seconds", "0.8", "--fps", "10", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const char *named = ffu_json_string(ffu_json_get(j, "output"));
    int frames = (int)ffu_json_number(ffu_json_get(j, "frames"), -1);
    int same = named && !strcmp(named, clip2);
    ffu_json_free(j);
    CHECK(same);
    CHECK_EQ_INT(frames, 16);
    CHECK_EQ_INT(count_frames(clip2), 16);
}

static void test_convert(void)
{
    char buf[512];
    const char *src = test_shared_path("data/videos/liveportrait_driving_d12.mp4", buf, sizeof buf);
    if (!src)
        TEST_SKIP("shared video liveportrait_driving_d12.mp4 absent");
    char out[512];
    snprintf(out, sizeof out, "%s/conv.mp4", dir);
    /* 25 fps in, 2 s at 10 fps and 256x256 out: 20 frames, audio kept. */
    run(&r, (const char *const[]){"video", "convert", src, "-o", out, "--size", "256x256",
                                  "--fps", "10", "--max-seconds", "2", "-q", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_video_info in;
    CHECK_EQ_INT(probe(out, &in), 0);
    CHECK_EQ_INT(in.width, 256);
    CHECK_EQ_INT(in.fps_num, 10);
    CHECK_EQ_INT(count_frames(out), 20);
    CHECK_EQ_INT(in.has_audio, 1);
    /* 50 fps: every input frame shown twice. */
    run(&r, (const char *const[]){"video", "convert", src, "-o", out, "--fps", "50",
                                  "--max-seconds", "1", "-q", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(count_frames(out), 50);
}

static void test_errors(void)
{
    run(&r, (const char *const[]){"video", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "give a subcommand") != NULL);
    run(&r, (const char *const[]){"video", "frobnicate", NULL});
    CHECK_EQ_INT(r.code, 2);
    run(&r, (const char *const[]){"video", "info", "/nonexistent/x.mp4", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK_EQ_INT(count_lines(r.err), 1);
    /* a folder where a file goes is a usage error (it was exit 1, an I/O failure) */
    run(&r, (const char *const[]){"video", "info", dir, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "Is a directory") != NULL);
    char a[512], out[512];
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(out, sizeof out, "%s/bad.mp4", dir);
    run(&r, (const char *const[]){"video", "from-images", a, "-o", out, "--size", "321x240",
                                  NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(access(out, F_OK) != 0);
    /* A photo that cannot be read: no half-written video is left. */
    run(&r, (const char *const[]){"video", "from-images", a, "/nonexistent.png", "-o", out,
                                  NULL});
    CHECK(r.code != 0);
    CHECK(access(out, F_OK) != 0);
    /* An output that is the input itself is refused and the input left as it was: convert
     * replaced the video by its re-encoding, detect --draw into the photo's own folder
     * replaced the photo by its annotated copy. */
    char clip[512];
    snprintf(clip, sizeof clip, "%s/clip.mp4", dir);
    size_t nclip = 0, npng = 0;
    uint8_t *before_clip = test_read_all(clip, &nclip), *before_png = test_read_all(a, &npng);
    CHECK(before_clip && before_png);
    run(&r, (const char *const[]){"video", "convert", clip, "-o", clip, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "is the input") != NULL);
    run(&r, (const char *const[]){"detect", a, "--draw", dir, NULL});
    CHECK_EQ_INT(r.code, 2);
    run(&r, (const char *const[]){"detect", a, "--draw", a, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "would replace the image") != NULL);
    size_t n2 = 0, n3 = 0;
    uint8_t *after_clip = test_read_all(clip, &n2), *after_png = test_read_all(a, &n3);
    CHECK(after_clip && n2 == nclip && !memcmp(after_clip, before_clip, nclip));
    CHECK(after_png && n3 == npng && !memcmp(after_png, before_png, npng));
    free(before_clip), free(after_clip), free(before_png), free(after_png);
}

/* Where FFmpeg cannot be loaded (an empty file is found first for libavformat's soname:
 * LD_LIBRARY_PATH), video commands fail with one line naming the missing library and the
 * package, and the image commands and --version still work: the library is loaded when
 * a video is opened, not linked. */
static void test_without_ffmpeg(void)
{
    char noav[512], lib[600], a[512], clip[512], out[512];
    snprintf(noav, sizeof noav, "%s/noav", dir);
    snprintf(lib, sizeof lib, "%s/libavformat.so.%d", noav, LIBAVFORMAT_VERSION_MAJOR);
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(clip, sizeof clip, "%s/clip.mp4", dir);
    snprintf(out, sizeof out, "%s/noav.mp4", dir);
    CHECK_EQ_INT(mkdir(noav, 0755), 0);
    FILE *f = fopen(lib, "w");
    CHECK(f != NULL);
    fclose(f);
    const char *old = getenv("LD_LIBRARY_PATH");
    char *saved = old ? strdup(old) : NULL;
    setenv("LD_LIBRARY_PATH", noav, 1);
    run_result info, conv, ver, det;
    run(&info, (const char *const[]){"video", "info", clip, NULL});
    run(&conv, (const char *const[]){"video", "from-images", a, "-o", out, "-q", NULL});
    run(&ver, (const char *const[]){"--version", NULL});
    run(&det, (const char *const[]){"detect", a, "--json", NULL});
    if (saved)
        setenv("LD_LIBRARY_PATH", saved, 1);
    else
        unsetenv("LD_LIBRARY_PATH");
    free(saved);
    CHECK(info.code != 0);
    CHECK_EQ_INT(count_lines(info.err), 1);
    CHECK(strstr(info.err, "needs FFmpeg's libraries") != NULL);
    CHECK(strstr(info.err, lib) != NULL);
    CHECK(conv.code != 0);
    CHECK(strstr(conv.err, "needs FFmpeg's libraries") != NULL);
    CHECK(access(out, F_OK) != 0);
    CHECK_EQ_INT(ver.code, 0);
    CHECK(strstr(ver.out, "facefuse") != NULL);
    CHECK_EQ_INT(det.code, 0);
    CHECK(strstr(det.out, "\"images\"") != NULL);
}

static void setup(void)
{
    if (!mkdtemp(dir))
        TEST_SKIP("mkdtemp failed");
}

static void cleanup(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup of %s failed\n", dir);
}

static void test_all(void)
{
    setup();
    test_from_images_and_info();
    test_errors(); /* after: it uses the clip made there */
    test_without_ffmpeg();
    test_convert(); /* last: it may skip */
    cleanup();
}

TEST_MAIN(test_all)
