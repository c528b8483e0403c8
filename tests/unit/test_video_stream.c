/* Tests of live streams (src/video/stream.c): sampling by stream time with the right
 * count and pts, the ring's drop and block policies, max_held, failures that reach pop
 * and health (missing, truncated, garbage files), stop interrupting a blocked open,
 * reconnects of a live file at EOF (pts continue, generation increments), loop and
 * realtime pacing. Clips are written at test time with ffu_video_writer; the shared
 * videos are used when present. */
#include <dirent.h>
#include <stdatomic.h>
#include <unistd.h>

#include "facefuse/video.h"
#include "test.h"
#include "test_video.h"

#define HAMILTON "data/videos/face_recognition_short_hamilton_clip.mp4"

static const char *tmp_path(char *buf, size_t len, const char *name)
{
    const char *dir = test_tmpdir_auto();
    if (!dir) return NULL;
    snprintf(buf, len, "%s/%s", dir, name);
    return buf;
}

/* A moving pattern (frame t). */
static void draw(ffu_image *img, int t)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            uint8_t *p = img->data[0] + (size_t)y * img->stride[0] + 3 * x;
            p[0] = (uint8_t)(x * 2 + t * 5);
            p[1] = (uint8_t)(y * 2);
            p[2] = (uint8_t)((x + y + t * 3) & 255);
        }
}

/* n frames at 25 fps of the pattern (frame i at pts i / 25). */
static ffu_status write_clip(const char *path, int w, int h, int n, int faststart)
{
    ffu_video_writer_opts o = {.width = w, .height = h, .fps_num = 25, .fps_den = 1, .crf = 23,
                               .preset = "ultrafast", .gop = 10, .faststart = faststart};
    return test_write_clip(path, &o, n, draw, NULL);
}

/* The clips every test shares, written once. */
static char clip50[256], clip25[256], clip10[256];
static int make_clips(void)
{
    if (clip50[0]) return 0;
    if (!tmp_path(clip50, sizeof clip50, "c50.mp4") ||
        !tmp_path(clip25, sizeof clip25, "c25.mp4") || !tmp_path(clip10, sizeof clip10, "c10.mkv"))
        return -1;
    if (write_clip(clip50, 160, 120, 50, 0) < 0 || write_clip(clip25, 96, 64, 25, 0) < 0 ||
        write_clip(clip10, 96, 64, 10, 0) < 0) {
        fprintf(stderr, "cannot write clips: %s\n", ffu_error_message());
        return -1;
    }
    return 0;
}

static ffu_stream_opts file_opts(double sample_fps)
{
    ffu_stream_opts o;
    ffu_stream_opts_default(&o);
    o.sample_fps = sample_fps;
    o.reader.threads = 1;
    return o;
}

/* Waits (bounded) until the stream is in a final state. */
static ffu_stream_state wait_final(ffu_stream *s)
{
    ffu_stream_health h;
    for (int i = 0; i < 3000; i++) {
        ffu_stream_health_get(s, &h);
        if (h.state == FFU_STREAM_ENDED || h.state == FFU_STREAM_FAILED ||
            h.state == FFU_STREAM_STOPPED)
            return h.state;
        usleep(10000);
    }
    return h.state;
}

/* ---- sampling ------------------------------------------------------------------------- */

/* A sampler keeping 1 frame in 5 does not decode the frames nothing refers to
 * (x264's B-frames at preset veryfast): fewer frames decoded, still one frame per
 * sampling slot, each at most a few frames late; keeping every frame decodes all. */
static void test_skip_nonref(void)
{
    char path[512];
    CHECK(tmp_path(path, sizeof path, "bframes.mp4") != NULL);
    ffu_video_writer_opts wo = {.width = 160, .height = 120, .fps_num = 25, .fps_den = 1,
                                .crf = 23, .preset = "veryfast"};
    ffu_status wst = test_write_clip(path, &wo, 100, draw, NULL);
    CHECK_EQ_INT(wst, FFU_OK);
    for (int all = 0; all < 2; all++) {
        ffu_stream_opts o = file_opts(all ? -1 : 5);
        ffu_stream *s = NULL;
        CHECK_EQ_INT(ffu_stream_open(&s, path, &o), FFU_OK);
        ffu_stream_frame *f;
        int n = 0, late = 0;
        while (ffu_stream_pop(s, &f, 30000) == FFU_OK) {
            if (!all && (f->pts < n * 0.2 - 1e-6 || f->pts > n * 0.2 + 4 / 25.0 + 1e-6)) late++;
            ffu_stream_release(s, f);
            n++;
        }
        ffu_stream_health h;
        ffu_stream_health_get(s, &h);
        ffu_stream_close(s);
        CHECK_EQ_INT(late, 0);
        CHECK_EQ_INT(n, all ? 100 : 20);
        if (all)
            CHECK_EQ_INT((int)h.decoded, 100);
        else
            CHECK(h.decoded < 90); /* x264 veryfast: about a third are non-reference */
    }
    unlink(path);
}

/* Pops everything until EOF; checks pts/seq and returns the count (or -1). */
static int pop_all_sampled(ffu_stream *s, double period, double fps, double *last_pts)
{
    int n = 0;
    ffu_stream_frame *f;
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 30000)) == FFU_OK) {
        /* Frame j lies in sampling slot j: at or after j * period, within a frame. */
        if (f->seq != n || f->generation != 0) return -1;
        if (f->pts < n * period - 0.25 / fps - 1e-6 || f->pts > n * period + 1.0 / fps + 1e-6) {
            fprintf(stderr, "sample %d at pts %.4f\n", n, f->pts);
            return -1;
        }
        *last_pts = f->pts;
        ffu_stream_release(s, f);
        n++;
    }
    return st == FFU_EOF ? n : -1;
}

static void test_sampling(void)
{
    ffu_video_route_ffmpeg_log(1); /* x264's and FFmpeg's chatter goes to ffu_log (debug) */
    CHECK(make_clips() == 0);
    /* 50 frames at 25 fps: 2 s. 5 fps keeps frames 0, 5, ..., 45; 10 fps every other. */
    double rates[] = {5, 10, 12.5, -1, 100};
    int expect[] = {10, 20, 25, 50, 50};
    for (int i = 0; i < 5; i++) {
        ffu_stream_opts o = file_opts(rates[i]);
        ffu_stream *s = NULL;
        CHECK_EQ_INT(ffu_stream_open(&s, clip50, &o), FFU_OK);
        CHECK_STR(ffu_stream_name(s), clip50);
        int n = 0;
        ffu_stream_frame *f;
        ffu_status st;
        double period = rates[i] > 0 && rates[i] < 25 ? 1.0 / rates[i] : 1.0 / 25;
        while ((st = ffu_stream_pop(s, &f, 30000)) == FFU_OK) {
            CHECK_EQ_INT(f->seq, n);
            /* The first frame at or after each slot start (10 fps from 25: 0, 0.12, 0.2). */
            CHECK(f->pts > n * period - 1e-3 && f->pts < n * period + 1.0 / 25 - 1e-3);
            CHECK_NEAR(f->pts, f->decoded_seq / 25.0, 1e-3);
            if (25 % (int)fmin(rates[i] > 0 ? rates[i] : 25, 25) == 0)
                CHECK_NEAR(f->pts, n * period, 1e-3); /* a divisor of 25: exact slots */
            CHECK_EQ_INT(f->image.width, 160);
            CHECK_EQ_INT(f->image.height, 120);
            CHECK_EQ_INT(f->image.fmt, FFU_PIX_RGB24);
            CHECK(f->wall_ns > 0);
            ffu_stream_release(s, f);
            n++;
        }
        CHECK_EQ_INT(st, FFU_EOF);
        CHECK_EQ_INT(n, expect[i]);
        CHECK_EQ_INT(ffu_stream_pop(s, &f, 0), FFU_EOF); /* and stays so */
        CHECK(f == NULL);
        ffu_stream_health h;
        ffu_stream_health_get(s, &h);
        CHECK_EQ_INT(h.state, FFU_STREAM_ENDED);
        CHECK_EQ_INT(h.decoded, 50);
        CHECK_EQ_INT(h.sampled, expect[i]);
        CHECK_EQ_INT(h.processed, expect[i]);
        CHECK_EQ_INT(h.dropped, 0);
        CHECK_EQ_INT(h.reconnects, 0);
        CHECK_EQ_INT(h.errors, 0);
        CHECK_EQ_INT(h.ring_size, 0);
        CHECK_EQ_INT(h.width, 160);
        CHECK_NEAR(h.source_fps, 25, 1e-9);
        CHECK_STR(h.last_error, "");
        ffu_video_info info;
        ffu_stream_info(s, &info);
        CHECK_EQ_INT(info.frame_count, 50);
        CHECK_STR(info.codec, "h264");
        ffu_stream_close(s);
    }

    /* A real clip at 29.97 fps (275 frames, 9.18 s): one frame per 0.2 s slot, the
     * first of each slot. */
    char buf[4096];
    const char *path = test_shared_path(HAMILTON, buf, sizeof buf);
    if (!path) return;
    ffu_stream_opts o = file_opts(0); /* the default: 5 fps */
    o.reader.pixfmt = FFU_PIX_GRAY8;
    o.reader.width = 320;
    o.reader.height = 180;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, path, &o), FFU_OK);
    double last = -1;
    int n = pop_all_sampled(s, 0.2, 30000.0 / 1001, &last);
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    ffu_stream_close(s);
    printf("  hamilton at 5 fps: %d of %lld frames, last pts %.3f\n", n, (long long)h.decoded,
           last);
    CHECK_EQ_INT(h.decoded, 275);
    CHECK_EQ_INT(n, (int)floor(274 * 1001 / 30000.0 / 0.2) + 1);
    CHECK_EQ_INT(h.width, 320);
}

/* ---- ring policies ------------------------------------------------------------------- */

/* A file that drops like a live source, never popped until it ends: exactly the last
 * ring_capacity frames wait, everything before them was dropped and counted. */
static void test_drop_oldest(void)
{
    CHECK(make_clips() == 0);
    ffu_stream_opts o = file_opts(-1);
    o.drop_when_full = 1;
    o.ring_capacity = 3;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, clip50, &o), FFU_OK);
    CHECK_EQ_INT(wait_final(s), FFU_STREAM_ENDED);
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.ring_size, 3);
    CHECK_EQ_INT(h.sampled, 50);
    CHECK_EQ_INT(h.dropped, 47);
    ffu_stream_frame *f;
    for (int i = 47; i < 50; i++) {
        CHECK_EQ_INT(ffu_stream_pop(s, &f, 1000), FFU_OK);
        CHECK_EQ_INT(f->seq, i); /* the newest survive, in order */
        CHECK_NEAR(f->pts, i / 25.0, 1e-3);
        ffu_stream_release(s, f);
    }
    CHECK_EQ_INT(ffu_stream_pop(s, &f, 1000), FFU_EOF);
    ffu_stream_close(s);

    /* A slow consumer: whatever the timing, the ring stays within its capacity and
     * every sampled frame is either popped or counted as dropped (seq gaps = drops). */
    CHECK_EQ_INT(ffu_stream_open(&s, clip50, &o), FFU_OK);
    int64_t popped = 0, gaps = 0, prev = -1;
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 30000)) == FFU_OK) {
        ffu_stream_health_get(s, &h);
        CHECK(h.ring_size <= 3);
        CHECK(f->seq > prev);
        gaps += f->seq - prev - 1;
        prev = f->seq;
        popped++;
        usleep(20000);
        ffu_stream_release(s, f);
    }
    CHECK_EQ_INT(st, FFU_EOF);
    ffu_stream_health_get(s, &h);
    printf("  slow consumer, drop mode: %lld popped, %lld dropped\n", (long long)popped,
           (long long)h.dropped);
    CHECK_EQ_INT(h.sampled, 50);
    CHECK_EQ_INT(popped + h.dropped, 50);
    CHECK_EQ_INT(gaps + (49 - prev), h.dropped);
    ffu_stream_close(s);
}

/* A file in block mode loses nothing to a slow consumer; frames come from a fixed set
 * of image buffers (ring + held + the decode image), so nothing is allocated per frame. */
static void test_block_no_loss(void)
{
    CHECK(make_clips() == 0);
    ffu_stream_opts o = file_opts(-1);
    o.ring_capacity = 2;
    o.max_held = 1;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, clip50, &o), FFU_OK);
    const uint8_t *seen[64];
    int nseen = 0, n = 0;
    ffu_stream_frame *f;
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 30000)) == FFU_OK) {
        CHECK_EQ_INT(f->seq, n);
        CHECK_EQ_INT(f->decoded_seq, n);
        CHECK_NEAR(f->pts, n / 25.0, 1e-3);
        int known = 0;
        for (int i = 0; i < nseen; i++)
            known |= seen[i] == f->image.data[0];
        if (!known && nseen < 64) seen[nseen++] = f->image.data[0];
        if (n % 7 == 0) usleep(30000); /* the ring fills up and the thread waits */
        ffu_stream_release(s, f);
        n++;
    }
    CHECK_EQ_INT(st, FFU_EOF);
    CHECK_EQ_INT(n, 50);
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.dropped, 0);
    CHECK_EQ_INT(h.processed, 50);
    printf("  block mode: %d frames through %d distinct buffers\n", n, nseen);
    CHECK(nseen <= 2 + 1 + 1);
    ffu_stream_close(s);
}

static void test_max_held(void)
{
    CHECK(make_clips() == 0);
    ffu_stream_opts o = file_opts(-1);
    o.max_held = 2;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, clip50, &o), FFU_OK);
    ffu_stream_frame *a, *b, *c = (ffu_stream_frame *)&c;
    CHECK_EQ_INT(ffu_stream_pop(s, &a, 30000), FFU_OK);
    CHECK_EQ_INT(ffu_stream_pop(s, &b, 30000), FFU_OK);
    CHECK_EQ_INT(ffu_stream_pop(s, &c, 1000), FFU_AGAIN);
    CHECK(c == NULL);
    CHECK_EQ_INT(a->seq, 0);
    CHECK_EQ_INT(b->seq, 1);
    CHECK(a->image.data[0] != b->image.data[0]);
    ffu_stream_release(s, a);
    ffu_stream_release(s, a);    /* a second release of the same frame is ignored */
    ffu_stream_release(s, NULL); /* a no-op */
    CHECK_EQ_INT(ffu_stream_pop(s, &c, 30000), FFU_OK);
    CHECK_EQ_INT(c->seq, 2);
    CHECK_EQ_INT(ffu_stream_pop(s, &a, 0), FFU_AGAIN);
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.processed, 1);
    ffu_stream_release(s, b);
    ffu_stream_release(s, c);
    ffu_stream_close(s); /* with the rest of the file still in the ring */
}

/* ---- failures -------------------------------------------------------------------------- */

static void test_missing_file(void)
{
    const char *missing = "/nonexistent/ffu-stream-test/clip.mp4";
    ffu_stream_opts o = file_opts(0);
    o.name = "cam-missing";
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, missing, &o), FFU_OK); /* opening happens on the thread */
    CHECK_STR(ffu_stream_name(s), "cam-missing");
    ffu_stream_frame *f = (ffu_stream_frame *)&f;
    CHECK_EQ_INT(ffu_stream_pop(s, &f, -1), FFU_ERR_NOT_FOUND);
    CHECK(f == NULL);
    CHECK(strstr(ffu_error_message(), "clip.mp4") != NULL);
    CHECK_EQ_INT(ffu_stream_pop(s, &f, 0), FFU_ERR_NOT_FOUND); /* and stays so */
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.state, FFU_STREAM_FAILED);
    CHECK_STR(ffu_stream_state_name(h.state), "failed");
    CHECK_EQ_INT(h.errors, 1);
    CHECK_EQ_INT(h.reconnects, 0);
    CHECK(strstr(h.last_error, "clip.mp4") != NULL);
    CHECK_EQ_INT(h.width, 0);
    ffu_video_info info;
    ffu_stream_info(s, &info);
    CHECK_EQ_INT(info.width, 0);
    ffu_stream_close(s);

    /* Live: retried with backoff, then given up after max_reconnects attempts. */
    o.live = 1;
    o.backoff_initial_s = 0.01;
    o.backoff_max_s = 0.02;
    o.max_reconnects = 3;
    CHECK_EQ_INT(ffu_stream_open(&s, missing, &o), FFU_OK);
    CHECK_EQ_INT(ffu_stream_pop(s, &f, -1), FFU_ERR_NOT_FOUND);
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.state, FFU_STREAM_FAILED);
    CHECK_EQ_INT(h.errors, 3);
    ffu_stream_close(s);
}

static void test_damaged_files(void)
{
    CHECK(make_clips() == 0);
    /* An index-first MP4 cut in half: the frames before the cut, then FFU_ERR_FORMAT. */
    char whole[256], cut[256];
    CHECK(tmp_path(whole, sizeof whole, "whole.mp4") && tmp_path(cut, sizeof cut, "cut.mp4"));
    CHECK_EQ_INT(write_clip(whole, 320, 240, 50, 1), FFU_OK);
    size_t n = 0;
    uint8_t *data = test_read_all(whole, &n);
    CHECK(data);
    CHECK_EQ_INT(test_write_file(cut, data, n / 2), 0);
    ffu_stream_opts o = file_opts(-1);
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, cut, &o), FFU_OK);
    int frames = 0;
    ffu_stream_frame *f;
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 30000)) == FFU_OK) {
        frames++;
        ffu_stream_release(s, f);
    }
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    printf("  half a file: %d frames, then %s (%s)\n", frames, ffu_status_str(st), h.last_error);
    CHECK_EQ_INT(st, FFU_ERR_FORMAT);
    CHECK(frames > 5 && frames < 50);
    CHECK_EQ_INT(h.state, FFU_STREAM_FAILED);
    CHECK_EQ_INT(h.errors, 1);
    CHECK(h.last_error[0]);
    ffu_stream_close(s);

    /* Garbage and an empty file fail at open. */
    uint64_t seed = 9;
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)test_rand_u64(&seed);
    size_t sizes[] = {0, 65536};
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(test_write_file(cut, data, sizes[i] < n ? sizes[i] : n), 0);
        CHECK_EQ_INT(ffu_stream_open(&s, cut, &o), FFU_OK);
        st = ffu_stream_pop(s, &f, 30000);
        CHECK(st == FFU_ERR_FORMAT || st == FFU_ERR_UNSUPPORTED);
        ffu_stream_health_get(s, &h);
        CHECK_EQ_INT(h.state, FFU_STREAM_FAILED);
        ffu_stream_close(s);
    }
    free(data);
    unlink(whole);
    unlink(cut);
}

static void test_bad_options(void)
{
    ffu_stream *s = (ffu_stream *)&s;
    CHECK_EQ_INT(ffu_stream_open(&s, NULL, NULL), FFU_ERR_INVALID);
    CHECK(s == NULL);
    CHECK_EQ_INT(ffu_stream_open(&s, "", NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_stream_open(NULL, "x.mp4", NULL), FFU_ERR_INVALID);
    ffu_stream_opts o;
    ffu_stream_opts_default(&o);
    o.ring_capacity = -1;
    CHECK_EQ_INT(ffu_stream_open(&s, "x.mp4", &o), FFU_ERR_INVALID);
    ffu_stream_opts_default(&o);
    o.live = 3;
    CHECK_EQ_INT(ffu_stream_open(&s, "x.mp4", &o), FFU_ERR_INVALID);
    ffu_stream_opts_default(&o);
    o.sample_fps = NAN;
    CHECK_EQ_INT(ffu_stream_open(&s, "x.mp4", &o), FFU_ERR_INVALID);
    ffu_stream_opts_default(&o);
    o.backoff_max_s = -1;
    CHECK_EQ_INT(ffu_stream_open(&s, "x.mp4", &o), FFU_ERR_INVALID);
    ffu_stream_opts_default(&o);
    o.max_held = 100000;
    CHECK_EQ_INT(ffu_stream_open(&s, "x.mp4", &o), FFU_ERR_INVALID);
    CHECK(s == NULL);
    /* Defaults and no-ops. */
    ffu_stream_opts_default(&o);
    CHECK_NEAR(o.sample_fps, 5, 0);
    CHECK_EQ_INT(o.ring_capacity, 4);
    CHECK_EQ_INT(o.max_held, 2);
    ffu_stream_close(NULL);
    ffu_stream_stop(NULL);
    ffu_stream_release(NULL, NULL);
    ffu_stream_health h;
    ffu_stream_health_get(NULL, &h);
    CHECK_EQ_INT(h.decoded, 0);
    ffu_stream_frame *f = (ffu_stream_frame *)&f;
    CHECK_EQ_INT(ffu_stream_pop(NULL, &f, 0), FFU_ERR_INVALID);
    CHECK(f == NULL);
    CHECK_STR(ffu_stream_state_name(FFU_STREAM_BACKOFF), "backoff");
    CHECK_STR(ffu_stream_state_name((ffu_stream_state)42), "unknown");
}

/* ---- stop, reconnect, loop ------------------------------------------------------------- */

static void test_stop_unreachable(void)
{
    /* Connection refused, then a long backoff: stop must cut the wait short. */
    int port = 0;
    int fd = test_loopback_socket(&port, 0);
    CHECK(fd >= 0);
    close(fd); /* nobody listens on port now */
    char url[128];
    snprintf(url, sizeof url, "rtsp://127.0.0.1:%d/x", port);
    ffu_stream_opts o;
    ffu_stream_opts_default(&o);
    o.live = 1;
    o.backoff_initial_s = 600;
    o.backoff_max_s = 600;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, url, &o), FFU_OK);
    ffu_stream_health h;
    for (int i = 0; i < 3000; i++) {
        ffu_stream_health_get(s, &h);
        if (h.state == FFU_STREAM_BACKOFF) break;
        usleep(10000);
    }
    printf("  %s: %s, %s\n", url, ffu_stream_state_name(h.state), h.last_error);
    CHECK_EQ_INT(h.state, FFU_STREAM_BACKOFF);
    CHECK_EQ_INT(h.errors, 1);
    ffu_stream_frame *f;
    CHECK_EQ_INT(ffu_stream_pop(s, &f, 0), FFU_ERR_TIMEOUT);
    ffu_stream_stop(s);
    ffu_stream_stop(s); /* idempotent */
    CHECK_EQ_INT(ffu_stream_pop(s, &f, -1), FFU_EOF);
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.state, FFU_STREAM_STOPPED);
    ffu_stream_close(s);

    /* A server that accepts and never answers, no timeout at all: the open blocks until
     * stop interrupts it. */
    fd = test_loopback_socket(&port, 1);
    CHECK(fd >= 0);
    snprintf(url, sizeof url, "rtsp://127.0.0.1:%d/x", port);
    o.reader.timeout_ms = -1;
    o.stall_s = 1000;
    CHECK_EQ_INT(ffu_stream_open(&s, url, &o), FFU_OK);
    usleep(200000);
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.state, FFU_STREAM_CONNECTING);
    int64_t t0 = ffu_clock_ns();
    ffu_stream_stop(s);
    CHECK_EQ_INT(ffu_stream_pop(s, &f, -1), FFU_EOF);
    ffu_stream_close(s);
    printf("  blocked open: stop + close took %.3f s\n", (double)(ffu_clock_ns() - t0) * 1e-9);
    close(fd);
}

/* A file declared live ends, is reopened after the backoff, and its frames go on with
 * increasing pts and the next generation. */
static void test_live_file_reconnects(void)
{
    CHECK(make_clips() == 0);
    ffu_stream_opts o = file_opts(-1);
    o.live = 1;
    o.backoff_initial_s = 0.01;
    o.ring_capacity = 8;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, clip25, &o), FFU_OK);
    ffu_stream_frame *f;
    double last = -1;
    int gen = 0, n = 0;
    int64_t last_seq = -1;
    while (gen < 3) {
        CHECK_EQ_INT(ffu_stream_pop(s, &f, 30000), FFU_OK);
        CHECK(f->pts > last);
        CHECK(f->seq > last_seq);
        CHECK(f->generation >= gen);
        if (f->generation > gen) CHECK(f->pts >= last + 1.0 / 25 - 1e-9); /* the gap */
        last = f->pts;
        last_seq = f->seq;
        gen = f->generation;
        n++;
        ffu_stream_release(s, f);
    }
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    printf("  live file: %d frames over %d connections, last pts %.2f, %lld dropped\n", n, gen + 1,
           last, (long long)h.dropped);
    CHECK(h.reconnects >= 3);
    CHECK_EQ_INT(h.errors, 0); /* EOF is not an error */
    CHECK(last > 3 * 24 / 25.0);
    ffu_stream_close(s);
}

/* A live source that stops sending: after stall_s without a frame the stream gives up
 * on the connection (even though the reader's own timeout is far longer) and connects
 * again; its frames continue on the next generation. */
static void test_stall_reconnects(void)
{
    char path[256];
    CHECK(tmp_path(path, sizeof path, "hang.mkv"));
    CHECK_EQ_INT(write_clip(path, 96, 64, 50, 0), FFU_OK);
    size_t n = 0;
    uint8_t *data = test_read_all(path, &n);
    unlink(path);
    CHECK(data);
    test_stall_server hs;
    int port = 0;
    CHECK(test_stall_server_start(&hs, data, n / 2, &port) == 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/cam.mkv", port);
    ffu_stream_opts o = file_opts(-1); /* http:// is live by its scheme */
    o.stall_s = 0.5;
    o.backoff_initial_s = 0.05;
    o.ring_capacity = 64;
    o.reader.timeout_ms = 60000;
    o.reader.format = "matroska";
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, url, &o), FFU_OK);
    ffu_stream_frame *f;
    double last = -1;
    int frames = 0, gen = 0;
    ffu_status st = FFU_OK;
    while (gen < 1 && (st = ffu_stream_pop(s, &f, 30000)) == FFU_OK) {
        if (!(f->pts > last)) st = FFU_ERR_INTERNAL;
        last = f->pts;
        gen = f->generation;
        frames++;
        ffu_stream_release(s, f);
    }
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    ffu_stream_close(s);
    test_stall_server_stop(&hs);
    free(data);
    printf("  hanging camera: %d frames, %d clients, reconnects %lld, errors %lld (%s)\n", frames,
           atomic_load(&hs.clients), (long long)h.reconnects, (long long)h.errors, h.last_error);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(gen, 1);
    CHECK(h.reconnects >= 1);
    CHECK(h.errors >= 1);
    CHECK(strstr(h.last_error, "stalled") != NULL);
    CHECK(atomic_load(&hs.clients) >= 2);
}

/* loop + realtime: a 10-frame file (0.4 s) played as a camera. */
static void test_loop_realtime(void)
{
    CHECK(make_clips() == 0);
    ffu_stream_opts o = file_opts(-1);
    o.loop = 1;
    o.realtime = 1;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, clip10, &o), FFU_OK);
    ffu_stream_frame *f;
    double first_pts = 0, last = -1;
    int64_t t0 = ffu_clock_ns();
    for (int i = 0; i < 30; i++) {
        CHECK_EQ_INT(ffu_stream_pop(s, &f, 30000), FFU_OK);
        CHECK_EQ_INT(f->seq, i); /* block mode: nothing lost */
        CHECK_EQ_INT(f->generation, 0);
        CHECK_NEAR(f->pts, i / 25.0, 1e-3); /* the clock runs on through each loop */
        if (i == 0) first_pts = f->pts;
        last = f->pts;
        ffu_stream_release(s, f);
    }
    double elapsed = (double)(ffu_clock_ns() - t0) * 1e-9;
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    printf("  loop + realtime: 30 frames (%.2f s of video) in %.2f s, input %.1f fps\n",
           last - first_pts, elapsed, h.input_fps);
    /* Pacing holds frames back, so this much time must have passed (a lower bound only). */
    CHECK(elapsed >= 0.5 * (last - first_pts));
    CHECK(h.state == FFU_STREAM_RUNNING);
    CHECK(h.input_fps > 0);
    CHECK_EQ_INT(h.reconnects, 0);
    ffu_stream_stop(s);
    int drained = 0;
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 1000)) == FFU_OK) {
        drained++;
        ffu_stream_release(s, f);
    }
    CHECK_EQ_INT(st, FFU_EOF);
    CHECK(drained <= o.ring_capacity);
    ffu_stream_close(s);
}

/* ---- shared clips --------------------------------------------------------------------- */

/* Every frame of every shared clip comes through block mode in order. */
static void test_shared_clips(void)
{
    char buf[4096];
    const char *dir = test_shared_path("data/videos", buf, sizeof buf);
    if (!dir) TEST_SKIP("no shared videos");
    const char *names[] = {"liveportrait_driving_d3.mp4", "dlib_MOT20-05-raw_even_shorter.mp4"};
    for (int i = 0; i < 2; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat stt;
        if (stat(path, &stt) != 0) continue;
        ffu_video_reader *r = NULL;
        CHECK_EQ_INT(ffu_video_reader_open(&r, path, NULL), FFU_OK);
        int64_t count = ffu_video_reader_info(r)->frame_count;
        ffu_video_reader_close(r);
        ffu_stream_opts o = file_opts(-1);
        o.reader.width = 160;
        o.reader.height = 96;
        ffu_stream *s = NULL;
        CHECK_EQ_INT(ffu_stream_open(&s, path, &o), FFU_OK);
        ffu_stream_frame *f;
        int64_t n = 0;
        double last = -1;
        ffu_status st;
        while ((st = ffu_stream_pop(s, &f, 30000)) == FFU_OK) {
            CHECK(f->pts > last);
            CHECK_EQ_INT(f->seq, n);
            last = f->pts;
            n++;
            ffu_stream_release(s, f);
        }
        printf("  %s: %lld frames (container says %lld), %s\n", names[i], (long long)n,
               (long long)count, ffu_status_str(st));
        CHECK_EQ_INT(st, FFU_EOF);
        CHECK_EQ_INT(n, count);
        ffu_stream_close(s);
    }
}

static void test_cleanup(void)
{
    if (clip50[0]) unlink(clip50);
    if (clip25[0]) unlink(clip25);
    if (clip10[0]) unlink(clip10);
    if (test_tmpdir_buf_()[0]) CHECK(rmdir(test_tmpdir_buf_()) == 0);
}

TEST_MAIN(test_sampling, test_skip_nonref, test_drop_oldest, test_block_no_loss, test_max_held,
          test_missing_file, test_damaged_files, test_bad_options, test_stop_unreachable, test_live_file_reconnects,
          test_stall_reconnects, test_loop_realtime, test_shared_clips, test_cleanup)
