/* Tests of the reader's hwaccel option (src/video/hwaccel.c) that run on any machine:
 * option names and bad values, "auto" choosing a decoder and giving the same frames as
 * a plain CPU decode (bit for bit when it falls back to the CPU, which it must on a
 * machine without a CUDA device, with exactly one info line saying why), "cuda" failing
 * with FFU_ERR_DEVICE and a reason when NVDEC is unavailable (and succeeding when it
 * is), read_gpu refused on a CPU reader, and the stream layer passing the option
 * through (health.decoder, a required-but-missing NVDEC ending the stream at once).
 * The NVDEC-vs-CPU comparison on a GPU is tests/unit/test_video_hw_gpu.c. */
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "facefuse/gpu.h"
#include "facefuse/video.h"
#include "test.h"
#include "test_video.h"

#define HAMILTON "data/videos/face_recognition_short_hamilton_clip.mp4"

/* Moving colour ramps and a sliding block: every frame differs, B-frames get used. */
static void draw(ffu_image *img, int t)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            uint8_t *p = img->data[0] + (size_t)y * img->stride[0] + 3 * x;
            int block = x >= 10 + 3 * t && x < 50 + 3 * t && y >= 30 && y < 70;
            p[0] = block ? 220 : (uint8_t)(x * 2 + t * 5);
            p[1] = block ? 220 : (uint8_t)(y * 2 + t);
            p[2] = block ? 30 : (uint8_t)((x + y + t * 3) & 255);
        }
}

/* 40 frames of 200x120 H.264 at 25 fps (120 is not a multiple of 16: cropped by the
 * decoder), written once. */
static char clip[256];
static const char *get_clip(void)
{
    if (clip[0]) return clip;
    const char *dir = test_tmpdir_auto();
    if (!dir) return NULL;
    char path[256];
    snprintf(path, sizeof path, "%s/hw.mp4", dir);
    ffu_video_writer_opts o = {.width = 200,
                               .height = 120,
                               .fps_num = 25,
                               .fps_den = 1,
                               .crf = 20,
                               .preset = "veryfast",
                               .gop = 12};
    if (test_write_clip(path, &o, 40, draw, NULL) < 0) {
        fprintf(stderr, "cannot write the clip: %s\n", ffu_error_message());
        return NULL;
    }
    snprintf(clip, sizeof clip, "%s", path);
    return clip;
}

/* Log lines of the video reader's class at INFO, counted and the last one kept. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_reader_info;
static char log_last[512];
static void log_sink(void *user, ffu_log_level level, const ffu_class *cls, const void *obj,
                     const char *msg)
{
    (void)user, (void)obj;
    pthread_mutex_lock(&log_mu);
    if (level == FFU_LOG_INFO && cls && strcmp(cls->name, "video_reader") == 0) {
        log_reader_info++;
        snprintf(log_last, sizeof log_last, "%s", msg);
    }
    pthread_mutex_unlock(&log_mu);
}

static void test_names_and_parse(void)
{
    static const char *const names[] = {"none", "auto", "cuda"};
    for (int i = 0; i < FFU_VIDEO_HWACCEL_COUNT; i++) {
        CHECK_STR(ffu_video_hwaccel_name((ffu_video_hwaccel)i), names[i]);
        ffu_video_hwaccel h = FFU_VIDEO_HWACCEL_COUNT;
        CHECK_EQ_INT(ffu_video_hwaccel_parse(names[i], &h), FFU_OK);
        CHECK_EQ_INT(h, i);
    }
    CHECK_STR(ffu_video_hwaccel_name(FFU_VIDEO_HWACCEL_COUNT), "unknown");
    CHECK_STR(ffu_video_hwaccel_name((ffu_video_hwaccel)-1), "unknown");
    static const char *const bad[] = {"gpu", "CUDA", "", "nvdec", "cuda ", "autox"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ffu_video_hwaccel h = FFU_VIDEO_HWACCEL_CUDA;
        CHECK_EQ_INT(ffu_video_hwaccel_parse(bad[i], &h), FFU_ERR_INVALID);
        CHECK_EQ_INT(h, FFU_VIDEO_HWACCEL_NONE); /* out-param reset on error */
        CHECK(strstr(ffu_error_message(), "none, auto, cuda") != NULL);
    }
    ffu_video_hwaccel h;
    CHECK_EQ_INT(ffu_video_hwaccel_parse(NULL, &h), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_video_hwaccel_parse("auto", NULL), FFU_ERR_INVALID);
}

static void test_bad_option_values(void)
{
    const char *path = get_clip();
    CHECK(path != NULL);
    if (!path) return;
    int bad_h[] = {-1, FFU_VIDEO_HWACCEL_COUNT, 7, 1 << 30};
    for (size_t i = 0; i < sizeof bad_h / sizeof bad_h[0]; i++) {
        ffu_video_reader_opts o = {.hwaccel = (ffu_video_hwaccel)bad_h[i]};
        ffu_video_reader *r = (ffu_video_reader *)&o; /* must come back NULL */
        CHECK_EQ_INT(ffu_video_reader_open(&r, path, &o), FFU_ERR_INVALID);
        CHECK(r == NULL);
        CHECK(strstr(ffu_error_message(), "hwaccel") != NULL);
    }
    ffu_video_reader_opts o = {.hwaccel = FFU_VIDEO_HWACCEL_AUTO, .hw_device = -1};
    ffu_video_reader *r = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&r, path, &o), FFU_ERR_INVALID);
    CHECK(r == NULL);
    CHECK(strstr(ffu_error_message(), "hw_device") != NULL);
    /* The stream layer refuses the same values at open, not later on its thread. */
    ffu_stream_opts so;
    ffu_stream_opts_default(&so);
    so.reader.hwaccel = (ffu_video_hwaccel)9;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, path, &so), FFU_ERR_INVALID);
    CHECK(s == NULL);
    so.reader.hwaccel = FFU_VIDEO_HWACCEL_NONE;
    so.reader.hw_device = -3;
    CHECK_EQ_INT(ffu_stream_open(&s, path, &so), FFU_ERR_INVALID);
    CHECK(s == NULL);
}

/* Reads every frame of path from a and b (same output format) and compares them:
 * exact (max_diff 0) or within a PSNR bound. *frames = the frame count. */
static void compare_readers(ffu_video_reader *a, ffu_video_reader *b, int exact, int *frames)
{
    *frames = 0;
    ffu_image fa = {0}, fb = {0};
    double ta, tb;
    int n = 0;
    ffu_status sa, sb;
    for (;;) {
        sa = ffu_video_reader_read(a, &fa, &ta);
        sb = ffu_video_reader_read(b, &fb, &tb);
        if (sa != FFU_OK || sb != FFU_OK) break;
        CHECK(ta == tb);
        CHECK(fa.fmt == fb.fmt && fa.width == fb.width && fa.height == fb.height);
        if (fa.fmt != fb.fmt || fa.width != fb.width || fa.height != fb.height) break;
        int planes = fa.fmt == FFU_PIX_NV12 ? 2 : 1;
        double se = 0, count = 0;
        int worst = 0;
        for (int p = 0; p < planes; p++) {
            int rows = p == 0 ? fa.height : fa.height / 2;
            int bytes = fa.fmt == FFU_PIX_NV12 ? fa.width : fa.width * ffu_pixfmt_bpp(fa.fmt);
            for (int y = 0; y < rows; y++)
                for (int x = 0; x < bytes; x++) {
                    int d = fa.data[p][(size_t)y * fa.stride[p] + x] -
                            fb.data[p][(size_t)y * fb.stride[p] + x];
                    se += (double)d * d;
                    count++;
                    if (abs(d) > worst) worst = abs(d);
                }
        }
        if (exact) {
            CHECK_EQ_INT(worst, 0);
        } else {
            double psnr = se <= 0 ? 99 : 10 * log10(255.0 * 255.0 * count / se);
            if (psnr < 40)
                printf("  frame %d: PSNR %.2f dB, worst difference %d\n", n, psnr, worst);
            CHECK(psnr >= 40);
        }
        *frames = ++n;
    }
    ffu_image_release(&fa);
    ffu_image_release(&fb);
    CHECK_EQ_INT(sa, FFU_EOF);
    CHECK_EQ_INT(sb, FFU_EOF);
}

/* "auto" on this machine: the CPU when there is no device (bit-exact frames, one info
 * line with the reason), NVDEC where there is one (frames within the PSNR bound). */
static void test_auto_matches_cpu(void)
{
    const char *path = get_clip();
    CHECK(path != NULL);
    if (!path) return;
    int devices = ffu_gpu_device_count();
    static const ffu_pixfmt fmts[] = {FFU_PIX_NV12, FFU_PIX_RGB24};
    for (int k = 0; k < 2; k++) {
        ffu_video_reader_opts cpu_o = {.pixfmt = fmts[k], .threads = 1};
        ffu_video_reader_opts auto_o = cpu_o;
        auto_o.hwaccel = FFU_VIDEO_HWACCEL_AUTO;
        ffu_video_reader *rc = NULL, *ra = NULL;
        CHECK_EQ_INT(ffu_video_reader_open(&rc, path, &cpu_o), FFU_OK);
        ffu_log_level level = ffu_log_get_level();
        log_reader_info = 0;
        log_last[0] = 0;
        ffu_log_set_callback(log_sink, NULL);
        ffu_log_set_level(FFU_LOG_INFO);
        ffu_status st = ffu_video_reader_open(&ra, path, &auto_o);
        ffu_log_set_level(level);
        ffu_log_set_callback(NULL, NULL);
        CHECK_EQ_INT(st, FFU_OK);
        if (st < 0 || !rc) {
            ffu_video_reader_close(rc);
            ffu_video_reader_close(ra);
            return;
        }
        const ffu_video_info *ic = ffu_video_reader_info(rc), *ia = ffu_video_reader_info(ra);
        CHECK_EQ_INT(ic->hwaccel, FFU_VIDEO_HWACCEL_NONE);
        CHECK_STR(ic->decoder, "h264 (cpu)");
        if (devices == 0) {
            CHECK_EQ_INT(ia->hwaccel, FFU_VIDEO_HWACCEL_NONE);
            CHECK_STR(ia->decoder, "h264 (cpu)");
            CHECK_EQ_INT(log_reader_info, 1); /* exactly one line, and it says why */
            CHECK(strstr(log_last, "hwaccel auto: decoding on the CPU: ") != NULL);
            CHECK(strlen(log_last) > strlen("hwaccel auto: decoding on the CPU: ") + 5);
        } else {
            CHECK_EQ_INT(ia->hwaccel, FFU_VIDEO_HWACCEL_CUDA);
            CHECK_STR(ia->decoder, "h264 (nvdec)");
        }
        /* Same stream facts whichever decoder. */
        CHECK(ia->width == ic->width && ia->height == ic->height);
        CHECK_EQ_INT(ia->frame_count, ic->frame_count);
        int frames = 0;
        compare_readers(rc, ra, devices == 0, &frames);
        printf("  %s: %d frames, auto decoder %s\n", ffu_pixfmt_name(fmts[k]), frames, ia->decoder);
        CHECK_EQ_INT(frames, 40);
        ffu_video_reader_stats sc, sa;
        ffu_video_reader_stats_get(rc, &sc);
        ffu_video_reader_stats_get(ra, &sa);
        CHECK_EQ_INT(sa.frames, sc.frames);
        CHECK_EQ_INT(sa.decode_errors, 0);
        /* Seeking works the same after the fallback. */
        CHECK_EQ_INT(ffu_video_reader_seek(rc, 0.8), FFU_OK);
        CHECK_EQ_INT(ffu_video_reader_seek(ra, 0.8), FFU_OK);
        double tc, ta;
        CHECK_EQ_INT(ffu_video_reader_read(rc, NULL, &tc), FFU_OK);
        CHECK_EQ_INT(ffu_video_reader_read(ra, NULL, &ta), FFU_OK);
        CHECK_NEAR(ta, tc, 1e-9);
        CHECK_NEAR(ta, 0.8, 0.021);
        ffu_video_reader_close(rc);
        ffu_video_reader_close(ra);
    }
}

/* "cuda": FFU_ERR_DEVICE with a reason where NVDEC is unavailable, from a file and from
 * memory; a working reader where it is available. */
static void test_cuda_required(void)
{
    const char *path = get_clip();
    CHECK(path != NULL);
    if (!path) return;
    int devices = ffu_gpu_device_count();
    ffu_video_reader_opts o = {.hwaccel = FFU_VIDEO_HWACCEL_CUDA};
    ffu_video_reader *r = (ffu_video_reader *)&o;
    ffu_status st = ffu_video_reader_open(&r, path, &o);
    if (devices == 0) {
        CHECK_EQ_INT(st, FFU_ERR_DEVICE);
        CHECK(r == NULL);
        const char *m = ffu_error_message();
        CHECK(strstr(m, path) != NULL); /* names the source */
        CHECK(strstr(m, "hwaccel cuda: NVDEC is not available: ") != NULL);
        CHECK(strlen(m) > strlen(path) + 45); /* ... and says why */
        size_t size = 0;
        uint8_t *data = test_read_all(path, &size);
        CHECK(data != NULL);
        r = (ffu_video_reader *)&o;
        CHECK_EQ_INT(ffu_video_reader_open_memory(&r, data, size, &o), FFU_ERR_DEVICE);
        CHECK(r == NULL);
        free(data);
        /* A device index that does not exist fails the same way. */
        o.hw_device = 12345;
        CHECK_EQ_INT(ffu_video_reader_open(&r, path, &o), FFU_ERR_DEVICE);
        CHECK(strstr(ffu_error_message(), "12345") != NULL);
    } else {
        CHECK_EQ_INT(st, FFU_OK);
        CHECK_EQ_INT(ffu_video_reader_info(r)->hwaccel, FFU_VIDEO_HWACCEL_CUDA);
        ffu_image img = {0};
        int n = 0;
        while ((st = ffu_video_reader_read(r, &img, NULL)) == FFU_OK)
            n++;
        CHECK_EQ_INT(st, FFU_EOF);
        CHECK_EQ_INT(n, 40);
        ffu_image_release(&img);
        ffu_video_reader_close(r);
        /* A device index that does not exist. */
        o.hw_device = 12345;
        r = NULL;
        CHECK_EQ_INT(ffu_video_reader_open(&r, path, &o), FFU_ERR_DEVICE);
        CHECK(r == NULL);
    }
}

/* read_gpu on a reader that does not decode with NVDEC: refused, view zeroed, and the
 * reader goes on working. */
static void test_read_gpu_refused(void)
{
    const char *path = get_clip();
    CHECK(path != NULL);
    if (!path) return;
    ffu_gpu_image v;
    memset(&v, 0xab, sizeof v);
    CHECK_EQ_INT(ffu_video_reader_read_gpu(NULL, &v, NULL), FFU_ERR_INVALID);
    CHECK(v.data[0] == NULL && v.gpu == NULL && v.width == 0);
    int devices = ffu_gpu_device_count();
    ffu_video_hwaccel modes[] = {FFU_VIDEO_HWACCEL_NONE, FFU_VIDEO_HWACCEL_AUTO};
    for (int k = 0; k < (devices == 0 ? 2 : 1); k++) {
        ffu_video_reader_opts o = {.hwaccel = modes[k]};
        ffu_video_reader *r = NULL;
        CHECK_EQ_INT(ffu_video_reader_open(&r, path, &o), FFU_OK);
        if (!r) return;
        memset(&v, 0xab, sizeof v);
        double pts = 7;
        CHECK_EQ_INT(ffu_video_reader_read_gpu(r, &v, &pts), FFU_ERR_UNSUPPORTED);
        CHECK(strstr(ffu_error_message(), "NVDEC") != NULL);
        CHECK(v.data[0] == NULL && v.data[1] == NULL && v.gpu == NULL && v.fmt == FFU_PIX_NONE);
        CHECK(pts == 0);
        CHECK_EQ_INT(ffu_video_reader_read_gpu(r, NULL, NULL), FFU_ERR_INVALID);
        /* Nothing was consumed: the first read still gets frame 0. */
        CHECK_EQ_INT(ffu_video_reader_read(r, NULL, &pts), FFU_OK);
        CHECK_NEAR(pts, 0, 1e-9);
        ffu_video_reader_close(r);
    }
}

/* The colour coding read_gpu's consumers need: our writer's clip is limited range and
 * small (601 unless tagged); the Hamilton clip is tagged BT.709. */
static void test_color(void)
{
    const char *path = get_clip();
    CHECK(path != NULL);
    if (!path) return;
    int m = -1, full = -1;
    ffu_video_reader_color(NULL, &m, &full);
    CHECK(m == 601 && full == 0);
    ffu_video_reader_color(NULL, NULL, NULL);
    ffu_video_reader *r = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&r, path, NULL), FFU_OK);
    if (!r) return;
    CHECK_EQ_INT(ffu_video_reader_read(r, NULL, NULL), FFU_OK);
    ffu_video_reader_color(r, &m, &full);
    CHECK(m == 601 || m == 709);
    CHECK_EQ_INT(full, 0);
    ffu_video_reader_close(r);
    char buf[4096];
    const char *ham = test_shared_path(HAMILTON, buf, sizeof buf);
    if (!ham) return;
    CHECK_EQ_INT(ffu_video_reader_open(&r, ham, NULL), FFU_OK);
    if (!r) return;
    CHECK_EQ_INT(ffu_video_reader_read(r, NULL, NULL), FFU_OK);
    ffu_video_reader_color(r, &m, &full);
    CHECK_EQ_INT(m, 709);
    CHECK_EQ_INT(full, 0);
    ffu_video_reader_close(r);
}

static int wait_final(ffu_stream *s, ffu_stream_health *h)
{
    for (int i = 0; i < 1000; i++) {
        ffu_stream_health_get(s, h);
        if (h->state == FFU_STREAM_FAILED || h->state == FFU_STREAM_ENDED) return 1;
        usleep(10000);
    }
    return 0;
}

/* Streams pass hwaccel to their reader: health names the decoder; a required NVDEC that
 * is missing ends the stream at once, live or not (no reconnect loop). */
static void test_stream_hwaccel(void)
{
    const char *path = get_clip();
    CHECK(path != NULL);
    if (!path) return;
    int devices = ffu_gpu_device_count();
    ffu_stream_opts so;
    ffu_stream_opts_default(&so);
    so.sample_fps = -1;
    so.reader.hwaccel = FFU_VIDEO_HWACCEL_AUTO;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, path, &so), FFU_OK);
    if (!s) return;
    int n = 0;
    ffu_stream_frame *f;
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 10000)) == FFU_OK) {
        CHECK(f->image.width == 200 && f->image.height == 120 && f->image.fmt == FFU_PIX_RGB24);
        ffu_stream_release(s, f);
        n++;
    }
    CHECK_EQ_INT(st, FFU_EOF);
    CHECK_EQ_INT(n, 40);
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    CHECK_STR(h.decoder, devices ? "h264 (nvdec)" : "h264 (cpu)");
    ffu_video_info info;
    ffu_stream_info(s, &info);
    CHECK_EQ_INT(info.hwaccel, devices ? FFU_VIDEO_HWACCEL_CUDA : FFU_VIDEO_HWACCEL_NONE);
    ffu_stream_close(s);
    if (devices) return;

    for (int live = 1; live <= 2; live++) {
        ffu_stream_opts_default(&so);
        so.live = live == 1 ? 1 : 2;
        so.backoff_initial_s = 0.01;
        so.reader.hwaccel = FFU_VIDEO_HWACCEL_CUDA;
        s = NULL;
        CHECK_EQ_INT(ffu_stream_open(&s, path, &so), FFU_OK);
        if (!s) return;
        CHECK_EQ_INT(ffu_stream_pop(s, &f, 10000), FFU_ERR_DEVICE);
        CHECK(strstr(ffu_error_message(), "NVDEC") != NULL);
        CHECK(wait_final(s, &h));
        CHECK_EQ_INT(h.state, FFU_STREAM_FAILED);
        CHECK_EQ_INT(h.reconnects, 0);
        CHECK_EQ_INT(h.errors, 1);
        CHECK(strstr(h.last_error, "hwaccel cuda") != NULL);
        CHECK_STR(h.decoder, "");
        ffu_stream_close(s);
    }
}

static void test_cleanup(void)
{
    if (clip[0]) unlink(clip);
    if (test_tmpdir_buf_()[0]) CHECK(rmdir(test_tmpdir_buf_()) == 0);
}

TEST_MAIN(test_names_and_parse, test_bad_option_values, test_auto_matches_cpu, test_cuda_required,
          test_read_gpu_refused, test_color, test_stream_hwaccel, test_cleanup)
