/* Tests of ffu_swap_video (src/swap/swap_video.c) on a real talking-head clip from
 * ../shared/data/videos with a photo from face_recognition_examples as the source: the
 * output keeps the frame count, frame rate and audio, carries the provenance comment,
 * differs from the input around the face only, comes out the same whatever the number
 * of workers (ordered output), and a stop from the progress callback leaves no file.
 * Skipped without the shared data or the default models. */
#include <dirent.h>
#include <unistd.h>

#include "facefuse/swap.h"
#include "facefuse/video.h"
#include "test.h"
#include "test_video.h"

#define CLIP "data/videos/sadtalker_WDA_AlexandriaOcasioCortez_000.mp4"
#define PHOTO "data/face_recognition_examples/examples/obama.jpg"
#define FRAMES 40 /* ~1.6 s of the 25 fps clip */

static char clip[4096], photo[4096], dir[64];

/* The swapper with the photo as its source, or NULL (skip) when data/models are absent. */
static ffu_swapper *make_swapper(ffu_swapper_opts *so)
{
    if (!test_shared_path(CLIP, clip, sizeof clip) || !test_shared_path(PHOTO, photo, sizeof photo))
        return NULL;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/ffu_swap_video_XXXXXX");
        if (!mkdtemp(dir)) return NULL;
    }
    ffu_video_route_ffmpeg_log(1); /* x264's chatter into the (quiet) log */
    ffu_swapper_opts_default(so);
    so->threads = 1;
    so->detect.m.threads = so->landmarks.threads = so->embed.threads = 1;
    ffu_swapper *sw = NULL;
    if (ffu_swapper_create(so, &sw) < 0) {
        fprintf(stderr, "swapper: %s\n", ffu_error_message());
        return NULL;
    }
    ffu_image img = {0};
    if (ffu_image_load(photo, FFU_PIX_RGB24, &img) < 0 || ffu_swapper_set_source(sw, &img, 1) < 0) {
        fprintf(stderr, "source: %s\n", ffu_error_message());
        ffu_swapper_destroy(sw);
        sw = NULL;
    }
    ffu_image_release(&img);
    return sw;
}

static int count_parts(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp-") != NULL;
    if (d) closedir(d);
    return n;
}

/* PSNR of a w x h region at (x, y) between two RGB24 frames of the same size. */
static double region_psnr(const ffu_image *a, const ffu_image *b, int x0, int y0, int w, int h)
{
    double se = 0;
    for (int y = y0; y < y0 + h; y++) {
        const uint8_t *pa = a->data[0] + (size_t)y * a->stride[0] + 3 * x0;
        const uint8_t *pb = b->data[0] + (size_t)y * b->stride[0] + 3 * x0;
        for (int i = 0; i < 3 * w; i++) {
            double d = (double)pa[i] - pb[i];
            se += d * d;
        }
    }
    double mse = se / (3.0 * w * h);
    return mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : 99;
}

typedef struct {
    int calls, stop_after, last_done, saw_eta;
    int64_t total;
} progress_log;

static int on_progress(void *user, const ffu_swap_progress *p)
{
    progress_log *l = user;
    l->calls++;
    l->last_done = (int)p->frames_done;
    l->total = p->frames_total;
    l->saw_eta |= p->eta_s >= 0;
    return l->stop_after && l->calls >= l->stop_after;
}

static void test_swap_clip(void)
{
    ffu_swapper_opts so;
    ffu_swapper *sw = make_swapper(&so);
    if (!sw) TEST_SKIP("needs ../shared data and the default models");
    char out[256];
    snprintf(out, sizeof out, "%s/out.mp4", dir);
    ffu_swap_video_opts vo;
    ffu_swap_video_opts_default(&vo);
    CHECK_EQ_INT(vo.keep_audio, 1);
    ffu_swap_video_stats stats;
    progress_log log = {0};
    vo.max_frames = FRAMES;
    vo.threads = 2;
    vo.progress = on_progress;
    vo.user = &log;
    vo.stats = &stats;
    ffu_status st = ffu_swap_video(sw, &so, clip, out, &vo);
    if (st < 0) fprintf(stderr, "%s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(stats.frames, FRAMES);
    CHECK_EQ_INT(stats.threads, 2);
    CHECK(stats.faces >= FRAMES - 2); /* one face in (nearly) every frame */
    CHECK(stats.frames_without_face <= 2);
    /* apply runs on frames with a face, summed over both workers */
    CHECK_EQ_INT(stats.swap.frames, FRAMES - stats.frames_without_face);
    CHECK(stats.decode_ms > 0 && stats.encode_ms > 0 && stats.swap.detect_ms > 0);
    CHECK(log.calls >= 1);
    CHECK_EQ_INT(log.last_done, FRAMES); /* the final call */
    CHECK_EQ_INT(log.total, FRAMES);
    CHECK_EQ_INT(count_parts(), 0);

    ffu_video_reader *ri = NULL, *ro = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&ri, clip, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_open(&ro, out, NULL), FFU_OK);
    const ffu_video_info *ii = ffu_video_reader_info(ri), *oi = ffu_video_reader_info(ro);
    CHECK_EQ_INT(oi->width, ii->width);
    CHECK_EQ_INT(oi->height, ii->height);
    CHECK_EQ_INT((int64_t)oi->fps_num * ii->fps_den, (int64_t)ii->fps_num * oi->fps_den);
    CHECK_EQ_INT(oi->has_audio, ii->has_audio);
    const char *comment = ffu_video_reader_metadata(ro, "comment");
    CHECK(comment && strstr(comment, "facefuse") && strstr(comment, "synthetic"));

    /* Background corners survive (only re-encoding loss); the face does not. */
    ffu_image a = {0}, b = {0};
    int n = 0, W = ii->width, H = ii->height, cs = W / 8;
    double corner_min = 99, face_sum = 0, corner_sum = 0;
    while (ffu_video_reader_read(ro, &b, NULL) == FFU_OK) {
        if (ffu_video_reader_read(ri, &a, NULL) != FFU_OK) break;
        double c1 = region_psnr(&a, &b, 0, 0, cs, cs);
        double c2 = region_psnr(&a, &b, W - cs, 0, cs, cs);
        double face = region_psnr(&a, &b, W * 3 / 8, H * 3 / 8, W / 4, H / 4);
        corner_min = fmin(corner_min, fmin(c1, c2));
        corner_sum += c1 + c2;
        face_sum += face;
        n++;
    }
    ffu_image_release(&a);
    ffu_image_release(&b);
    ffu_video_reader_close(ri);
    ffu_video_reader_close(ro);
    fprintf(stderr, "corners: min %.1f dB mean %.1f dB; face mean %.1f dB\n", corner_min,
            corner_sum / (2 * n), face_sum / n);
    CHECK_EQ_INT(n, FRAMES);
    CHECK(corner_min > 32);
    CHECK(face_sum / n < corner_sum / (2 * n) - 6);
    remove(out);
    ffu_swapper_destroy(sw);
}

/* Frames come back in order whatever worker swapped them: one worker and three give
 * the same decoded pictures. */
static void test_ordered_output(void)
{
    ffu_swapper_opts so;
    ffu_swapper *sw = make_swapper(&so);
    if (!sw) TEST_SKIP("needs ../shared data and the default models");
    char out1[256], out3[256];
    snprintf(out1, sizeof out1, "%s/one.mkv", dir);
    snprintf(out3, sizeof out3, "%s/three.mkv", dir);
    ffu_swap_video_opts vo;
    ffu_swap_video_opts_default(&vo);
    vo.max_frames = 16;
    vo.crf = 1; /* near lossless: differences would be the swap's */
    vo.preset = "ultrafast";
    vo.keep_audio = 0;
    vo.threads = 1;
    CHECK_EQ_INT(ffu_swap_video(sw, &so, clip, out1, &vo), FFU_OK);
    vo.threads = 3;
    CHECK_EQ_INT(ffu_swap_video(sw, &so, clip, out3, &vo), FFU_OK);
    ffu_video_reader *r1 = NULL, *r3 = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&r1, out1, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_open(&r3, out3, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_info(r1)->has_audio, 0);
    ffu_image a = {0}, b = {0};
    int n = 0, same = 1;
    while (ffu_video_reader_read(r1, &a, NULL) == FFU_OK) {
        if (ffu_video_reader_read(r3, &b, NULL) != FFU_OK) {
            same = 0;
            break;
        }
        for (int y = 0; y < a.height && same; y++)
            same = !memcmp(a.data[0] + (size_t)y * a.stride[0], b.data[0] + (size_t)y * b.stride[0],
                           (size_t)a.width * 3);
        n++;
    }
    int extra = ffu_video_reader_read(r3, &b, NULL) == FFU_OK;
    ffu_image_release(&a);
    ffu_image_release(&b);
    ffu_video_reader_close(r1);
    ffu_video_reader_close(r3);
    CHECK_EQ_INT(n, 16);
    CHECK(!extra);
    CHECK(same);
    remove(out1);
    remove(out3);
    ffu_swapper_destroy(sw);
}

/* A non-zero answer from the progress callback stops the job: FFU_ERR_CLOSED, no
 * output, no temporary file; a file already at the output path is left untouched. */
static void test_stop(void)
{
    ffu_swapper_opts so;
    ffu_swapper *sw = make_swapper(&so);
    if (!sw) TEST_SKIP("needs ../shared data and the default models");
    char out[256];
    snprintf(out, sizeof out, "%s/stopped.mp4", dir);
    ffu_swap_video_opts vo;
    ffu_swap_video_opts_default(&vo);
    progress_log log = {.stop_after = 1};
    ffu_swap_video_stats stats;
    vo.progress = on_progress;
    vo.user = &log;
    vo.stats = &stats;
    vo.threads = 2;
    CHECK_EQ_INT(ffu_swap_video(sw, &so, clip, out, &vo), FFU_ERR_CLOSED);
    CHECK(strstr(ffu_error_message(), "stopped"));
    CHECK(access(out, F_OK) != 0);
    CHECK_EQ_INT(count_parts(), 0);
    CHECK(stats.frames > 0 && log.last_done < 200); /* stopped early, not at the end */

    /* An existing file stays as it was. */
    CHECK(test_write_file(out, "old", 3) == 0);
    log.calls = 0;
    CHECK_EQ_INT(ffu_swap_video(sw, &so, clip, out, &vo), FFU_ERR_CLOSED);
    size_t size = 0;
    uint8_t *data = test_read_all(out, &size);
    int kept = data && size == 3 && !memcmp(data, "old", 3);
    free(data);
    CHECK(kept);
    remove(out);
    ffu_swapper_destroy(sw);
}

static void test_errors(void)
{
    ffu_swapper_opts so;
    ffu_swapper *sw = make_swapper(&so);
    if (!sw) TEST_SKIP("needs ../shared data and the default models");
    char out[256], bad[256];
    snprintf(out, sizeof out, "%s/err.mp4", dir);
    snprintf(bad, sizeof bad, "%s/bad.mp4", dir);
    CHECK_EQ_INT(ffu_swap_video(sw, &so, "/nonexistent/in.mp4", out, NULL), FFU_ERR_NOT_FOUND);
    CHECK(access(out, F_OK) != 0);
    static const char text[] = "not a video at all, just some text in a file";
    CHECK(test_write_file(bad, text, sizeof text - 1) == 0);
    CHECK(ffu_swap_video(sw, &so, bad, out, NULL) < 0);
    CHECK(access(out, F_OK) != 0);
    CHECK_EQ_INT(ffu_swap_video(NULL, &so, clip, out, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_swap_video(sw, NULL, clip, out, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_swap_video(sw, &so, clip, NULL, NULL), FFU_ERR_INVALID);
    /* an unknown encoder fails before any frame, leaving nothing */
    ffu_swap_video_opts vo;
    ffu_swap_video_opts_default(&vo);
    vo.codec = "no-such-encoder";
    CHECK(ffu_swap_video(sw, &so, clip, out, &vo) < 0);
    CHECK(access(out, F_OK) != 0);
    CHECK_EQ_INT(count_parts(), 0);
    remove(bad);
    ffu_swapper_destroy(sw);
    rmdir(dir);
}

TEST_MAIN(test_swap_clip, test_ordered_output, test_stop, test_errors)
