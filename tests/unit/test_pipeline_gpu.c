/* Tests of the analyze pipeline's GPU path (issue #7 item 5; src/pipeline/gpu_frames.c,
 * the device-frame ring of src/video/stream.c).
 *
 * Run everywhere:
 *   - backend cuda without a usable device fails at create, before any model is loaded,
 *     with FFU_ERR_DEVICE / FFU_ERR_UNSUPPORTED and a message naming cuda; a device
 *     index that does not exist fails the same way on a GPU machine;
 *   - a stream asked for device frames without NVDEC gives host frames (the documented
 *     fallback) and says so in health;
 *   - face quality from a patch (what the pipeline reads of a device frame) equals face
 *     quality from the whole frame, for faces anywhere, edges and outside included --
 *     the arithmetic the GPU path relies on, checked on the CPU.
 * Need a GPU (skipped here):
 *   - a stream with NVDEC and gpu_frames gives NV12 device frames whose bytes equal the
 *     CPU decoder's NV12 (H.264 decoding is bit-exact);
 *   - the Hamilton clip analysed with backend cuda -- one stream with device frames
 *     (hwaccel cuda), one with host frames (hwaccel none) in the same run, so batches mix
 *     both -- confirms the identities the CPU run confirms (Lin-Manuel Miranda among
 *     them), with downloads only for the annotated video and snapshots, and the
 *     watchlist searched on the GPU. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <unistd.h>

#include "facefuse/gpu.h"
#include "facefuse/pipeline.h"
#include "pipeline/pipeline_internal.h"
#include "test.h"
#include "test_video.h"

#define HAMILTON "data/videos/face_recognition_short_hamilton_clip.mp4"

/* The watchlist of the Hamilton run (named one by one so scripts/gpu-pack carries
 * them), and the default models it needs. */
static const char *const watchlist[][2] = {
    {"Lin-Manuel Miranda", "data/face_recognition_examples/examples/lin-manuel-miranda.png"},
    {"Alex Lacamoire", "data/face_recognition_examples/examples/alex-lacamoire.png"},
    {"Alex Lacamoire", "data/face_recognition_examples/examples/knn_examples/train/alex_lacamoire/img1.jpg"},
    {"Barack Obama", "data/face_recognition_examples/examples/obama.jpg"},
    {"Barack Obama", "data/face_recognition_examples/examples/knn_examples/train/obama/obama2.jpg"},
    {"Joe Biden", "data/face_recognition_examples/examples/biden.jpg"},
    {"Kit Harington", "data/face_recognition_examples/examples/knn_examples/train/kit_harington/john1.jpeg"},
    {"Rose Leslie", "data/face_recognition_examples/examples/knn_examples/train/rose_leslie/img1.jpg"},
};
static const char *const packed_models[] = {"blazeface-back.json", "faceres.json"};



/* ---- backend cuda without a device --------------------------------------------------- */

static void test_no_device(void)
{
    ffu_pipeline_opts o;
    ffu_pipeline_opts_default(&o);
    CHECK_EQ_INT(o.max_batch, 0); /* by backend */
    o.backend = "cuda";
    o.workers = 1;
    ffu_pipeline *p = (ffu_pipeline *)&o; /* must come back NULL */
    o.device = -1;
    CHECK_EQ_INT(ffu_pipeline_create(&o, &p), FFU_ERR_INVALID);
    CHECK(p == NULL);
    /* no device at all, or an index past the last one: refused before any model is
     * looked for (so this holds on a machine without the models too) */
    int n = ffu_gpu_device_count();
    o.device = n;
    o.detector = "no-such-detector-model";
    p = (ffu_pipeline *)&o;
    ffu_status st = ffu_pipeline_create(&o, &p);
    printf("  backend cuda, device %d of %d: %s: %s\n", o.device, n, ffu_status_str(st),
           ffu_error_message());
    /* as ffu_gpu_open: an index past the last device is not found */
    CHECK(n > 0 ? st == FFU_ERR_NOT_FOUND : (st == FFU_ERR_DEVICE || st == FFU_ERR_UNSUPPORTED));
    CHECK(p == NULL);
    CHECK(strstr(ffu_error_message(), "cuda") != NULL);
}

/* ---- device frames without NVDEC: host frames ---------------------------------------- */

static void draw(ffu_image *img, int t)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            uint8_t *px = img->data[0] + (size_t)y * img->stride[0] + 3 * x;
            px[0] = (uint8_t)(x * 3 + t * 7);
            px[1] = (uint8_t)(y * 3);
            px[2] = (uint8_t)((x ^ y) + t);
        }
}

static char clip[256];

static int make_clip(void)
{
    if (clip[0])
        return 0;
    const char *dir = test_tmpdir_auto();
    if (!dir)
        return -1;
    snprintf(clip, sizeof clip, "%s/clip.mp4", dir);
    ffu_video_writer_opts o = {.width = 96, .height = 64, .fps_num = 25, .fps_den = 1, .crf = 20,
                               .preset = "ultrafast", .gop = 5};
    if (test_write_clip(clip, &o, 12, draw, NULL) != FFU_OK) {
        fprintf(stderr, "cannot write the clip: %s\n", ffu_error_message());
        clip[0] = 0;
        return -1;
    }
    return 0;
}

/* Pops every frame of a stream; returns how many, -1 on an error (message printed).
 * on_gpu counts device frames. */
static int pop_all(ffu_stream *s, int *on_gpu, ffu_stream_health *h)
{
    int n = 0;
    *on_gpu = 0;
    for (;;) {
        ffu_stream_frame *fr = NULL;
        ffu_status st = ffu_stream_pop(s, &fr, 5000);
        if (st == FFU_EOF)
            break;
        if (st != FFU_OK) {
            fprintf(stderr, "pop: %s: %s\n", ffu_status_str(st), ffu_error_message());
            return -1;
        }
        if (fr->on_gpu) {
            (*on_gpu)++;
            if (fr->gpu.fmt != FFU_PIX_NV12 || fr->gpu.width != 96 || fr->gpu.height != 64 ||
                !fr->gpu.data[0] || fr->image.data[0])
                n = -1000;
        } else if (!fr->image.data[0] || fr->image.width != 96 || fr->image.height != 64) {
            n = -1000;
        }
        ffu_stream_health_get(s, h); /* while running: gpu_frames describes this connection */
        ffu_stream_release(s, fr);
        n++;
    }
    return n;
}

static void test_stream_fallback(void)
{
    if (make_clip())
        TEST_SKIP("cannot write a clip (no libx264?)");
    ffu_video_hwaccel modes[] = {FFU_VIDEO_HWACCEL_NONE, FFU_VIDEO_HWACCEL_AUTO};
    for (int m = 0; m < 2; m++) {
        /* AUTO on a machine with NVDEC gives device frames: the GPU test covers that */
        if (modes[m] == FFU_VIDEO_HWACCEL_AUTO && ffu_gpu_device_count() > 0)
            continue;
        ffu_stream_opts so;
        ffu_stream_opts_default(&so);
        so.sample_fps = -1;
        so.gpu_frames = 1;
        so.reader.hwaccel = modes[m];
        ffu_stream *s = NULL;
        CHECK_EQ_INT(ffu_stream_open(&s, clip, &so), FFU_OK);
        int on_gpu = -1;
        ffu_stream_health h;
        memset(&h, 0xff, sizeof h);
        int n = pop_all(s, &on_gpu, &h);
        CHECK_EQ_INT(n, 12);
        CHECK_EQ_INT(on_gpu, 0);
        CHECK_EQ_INT(h.gpu_frames, 0);
        CHECK(strstr(h.decoder, "cpu") != NULL);
        ffu_stream_close(s);
    }
}

/* ---- quality from a patch = quality from the frame ------------------------------------ */

static void test_quality_patch(void)
{
    uint64_t rng = 0x9a11e7;
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 320, 240), FFU_OK);
    /* texture with structure at every scale, so sharpness differs from face to face */
    for (int y = 0; y < img.height; y++)
        for (int x = 0; x < img.width; x++) {
            uint8_t *px = img.data[0] + (size_t)y * img.stride[0] + 3 * x;
            int n = (int)(test_rand_u64(&rng) & 63);
            px[0] = (uint8_t)(((x / 7 + y / 5) & 1) * 120 + n);
            px[1] = (uint8_t)((x * y / 17) & 255);
            px[2] = (uint8_t)(x + n);
        }
    /* the template's eye/nose/mouth layout, scaled, turned and placed anywhere --
     * inside, across the edges, and wholly outside */
    static const float tpl[10] = {-0.5f, -0.4f, 0.5f, -0.4f, 0.0f, 0.1f, -0.4f, 0.55f, 0.4f, 0.55f};
    int checked = 0, edge = 0;
    for (int t = 0; t < 300; t++) {
        float cx = -40 + 400 * test_rand_f(&rng), cy = -40 + 320 * test_rand_f(&rng);
        float iod = 6 + 60 * test_rand_f(&rng), a = (test_rand_f(&rng) - 0.5f) * 1.6f;
        float yaw = (test_rand_f(&rng) - 0.5f) * 0.3f;
        ffu_face f;
        memset(&f, 0, sizeof f);
        ffu_face_init(&f);
        f.box[0] = cx - iod;
        f.box[1] = cy - iod;
        f.box[2] = f.box[3] = 2 * iod;
        for (int k = 0; k < 5; k++) {
            float u = tpl[2 * k] * iod + (k == 2 ? yaw * iod : 0), v = tpl[2 * k + 1] * iod;
            f.kps[2 * k] = cx + u * cosf(a) - v * sinf(a);
            f.kps[2 * k + 1] = cy + u * sinf(a) + v * cosf(a);
        }
        int r[4];
        if (pl_quality_patch(f.kps, img.width, img.height, r) != 0)
            continue;
        CHECK(r[0] >= 0 && r[1] >= 0 && r[2] >= 1 && r[3] >= 1);
        CHECK(r[0] + r[2] <= img.width && r[1] + r[3] <= img.height);
        edge += r[0] == 0 || r[1] == 0 || r[0] + r[2] == img.width || r[1] + r[3] == img.height;
        ffu_face whole = f, part = f;
        ffu_status sw = ffu_face_quality_compute(&img, &whole);
        ffu_image view;
        CHECK_EQ_INT(ffu_image_view(&view, &img, r[0], r[1], r[2], r[3]), FFU_OK);
        part.box[0] -= (float)r[0];
        part.box[1] -= (float)r[1];
        for (int k = 0; k < 5; k++) {
            part.kps[2 * k] -= (float)r[0];
            part.kps[2 * k + 1] -= (float)r[1];
        }
        ffu_status sp = ffu_face_quality_compute(&view, &part);
        CHECK_EQ_INT(sp, sw);
        if (sw != FFU_OK)
            continue;
        /* translation by whole pixels: the same samples up to float rounding */
        CHECK_NEAR(part.quality.size, whole.quality.size, 1e-3 * whole.quality.size + 1e-4);
        CHECK_NEAR(part.quality.roll, whole.quality.roll, 1e-2);
        CHECK_NEAR(part.quality.yaw, whole.quality.yaw, 1e-2);
        CHECK_NEAR(part.quality.pitch, whole.quality.pitch, 1e-2);
        CHECK_NEAR(part.quality.sharpness, whole.quality.sharpness,
                   2e-3 * whole.quality.sharpness + 0.5);
        CHECK_NEAR(part.quality.score, whole.quality.score, 2e-3);
        checked++;
    }
    printf("  %d faces compared, %d patches at the frame's edge\n", checked, edge);
    CHECK(checked > 200);
    CHECK(edge > 20 && checked - edge > 20);
    /* no usable keypoints: no patch */
    float bad[10] = {NAN, 0, 1, 1, 2, 2, 3, 3, 4, 4};
    int r[4];
    CHECK_EQ_INT(pl_quality_patch(bad, 320, 240, r), -1);
    float same[10] = {5, 5, 5, 5, 5, 5, 5, 5, 5, 5};
    CHECK_EQ_INT(pl_quality_patch(same, 320, 240, r), -1);
    ffu_image_release(&img);
}

/* ---- on a GPU: device frames are the decoder's bytes ---------------------------------- */

static void test_stream_gpu_frames(void)
{
    if (ffu_gpu_device_count() == 0)
        TEST_SKIP("no CUDA device");
    if (make_clip())
        TEST_SKIP("cannot write a clip (no libx264?)");
    /* the CPU decoder's NV12, frame by frame */
    ffu_video_reader_opts ro = {.pixfmt = FFU_PIX_NV12};
    ffu_video_reader *r = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&r, clip, &ro), FFU_OK);
    ffu_image ref[12] = {{0}};
    int nref = 0;
    while (nref < 12 && ffu_video_reader_read(r, &ref[nref], NULL) == FFU_OK)
        nref++;
    ffu_video_reader_close(r);
    CHECK_EQ_INT(nref, 12);

    ffu_stream_opts so;
    ffu_stream_opts_default(&so);
    so.sample_fps = -1;
    so.gpu_frames = 1;
    so.reader.hwaccel = FFU_VIDEO_HWACCEL_CUDA;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, clip, &so), FFU_OK);
    ffu_image host;
    CHECK_EQ_INT(ffu_image_create(&host, FFU_PIX_NV12, 96, 64), FFU_OK);
    int n = 0, on_gpu = 0, same = 0;
    ffu_stream_health h;
    for (;;) {
        ffu_stream_frame *fr = NULL;
        ffu_status st = ffu_stream_pop(s, &fr, 10000);
        if (st == FFU_EOF)
            break;
        if (st == FFU_ERR_DEVICE) {
            ffu_stream_close(s);
            ffu_image_release(&host);
            for (int i = 0; i < nref; i++)
                ffu_image_release(&ref[i]);
            TEST_SKIP("no NVDEC on this machine");
        }
        CHECK_EQ_INT(st, FFU_OK);
        ffu_stream_health_get(s, &h);
        CHECK_EQ_INT(h.gpu_frames, 1);
        CHECK(fr->on_gpu);
        CHECK_EQ_INT(fr->gpu.fmt, FFU_PIX_NV12);
        CHECK_EQ_INT(fr->gpu.width, 96);
        CHECK_EQ_INT(fr->gpu.height, 64);
        CHECK(fr->image.data[0] == NULL);
        CHECK_EQ_INT(fr->yuv_full_range, 0);
        on_gpu += fr->on_gpu;
        CHECK_EQ_INT(ffu_gpu_image_download(NULL, &fr->gpu, &host), FFU_OK);
        CHECK(fr->seq == n && n < nref);
        int eq = 1;
        for (int y = 0; y < 64; y++)
            eq &= !memcmp(host.data[0] + (size_t)y * host.stride[0],
                          ref[n].data[0] + (size_t)y * ref[n].stride[0], 96);
        for (int y = 0; y < 32; y++)
            eq &= !memcmp(host.data[1] + (size_t)y * host.stride[1],
                          ref[n].data[1] + (size_t)y * ref[n].stride[1], 96);
        same += eq;
        ffu_stream_release(s, fr);
        n++;
    }
    printf("  %d device frames, %d equal to the CPU decoder's NV12; decoder %s\n", on_gpu, same,
           h.decoder);
    CHECK_EQ_INT(n, 12);
    CHECK_EQ_INT(on_gpu, 12);
    CHECK_EQ_INT(same, 12);
    ffu_stream_close(s);
    ffu_image_release(&host);
    for (int i = 0; i < nref; i++)
        ffu_image_release(&ref[i]);
}

/* ---- on a GPU: the Hamilton clip, CPU vs cuda ------------------------------------------ */

typedef struct collector {
    pthread_mutex_t mu;
    char names[2][512]; /* confirmed identities per stream, comma-joined, in order */
    int confirmed[2], snapshots[2];
} collector;

static void collect(void *user, int stream, const char *stream_name, const ffu_track_event *e)
{
    collector *c = user;
    (void)stream_name;
    if (e->type != FFU_EVENT_IDENTITY_CONFIRMED || stream < 0 || stream > 1)
        return;
    pthread_mutex_lock(&c->mu);
    c->confirmed[stream]++;
    c->snapshots[stream] += e->snapshot && access(e->snapshot, R_OK) == 0;
    const char *who = e->name ? e->name : "?";
    char key[160];
    snprintf(key, sizeof key, ",%s,", who);
    char have[520];
    snprintf(have, sizeof have, ",%s,", c->names[stream]);
    if (!strstr(have, key)) {
        size_t l = strlen(c->names[stream]);
        snprintf(c->names[stream] + l, sizeof c->names[stream] - l, "%s%s", l ? "," : "", who);
    }
    pthread_mutex_unlock(&c->mu);
}

/* The names sorted, so two runs compare whatever order identities were confirmed in. */
static void sort_names(char *s)
{
    char *v[32];
    int n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < 32; t = strtok_r(NULL, ",", &save))
        v[n++] = t;
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
            char *x = v[k];
            v[k] = v[k - 1];
            v[k - 1] = x;
        }
    char out[512] = "";
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? "," : "", v[i]);
    strcpy(s, out);
}

static int make_watchlist(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return -1;
    for (size_t i = 0; i < sizeof watchlist / sizeof watchlist[0]; i++) {
        char src[1024], pdir[1024], dst[1200];
        if (!test_shared_path(watchlist[i][1], src, sizeof src))
            return -1;
        snprintf(pdir, sizeof pdir, "%s/%s", dir, watchlist[i][0]);
        mkdir(pdir, 0777);
        const char *base = strrchr(src, '/');
        snprintf(dst, sizeof dst, "%s/%zu_%s", pdir, i, base + 1);
        if (symlink(src, dst) != 0)
            return -1;
    }
    return 0;
}

static void test_hamilton_cuda(void)
{
    (void)packed_models;
    if (ffu_gpu_device_count() == 0)
        TEST_SKIP("no CUDA device");
    char vid[512];
    if (!test_shared_path(HAMILTON, vid, sizeof vid))
        TEST_SKIP("no ../shared/data");
    const char *dir = test_tmpdir_auto();
    CHECK(dir != NULL);
    char wl[256], gal[256];
    snprintf(wl, sizeof wl, "%s/watchlist", dir);
    snprintf(gal, sizeof gal, "%s/watchlist.ffgl", dir);
    if (make_watchlist(wl))
        TEST_SKIP("no ../shared photos for the watchlist");

    /* the CPU run: the reference (and the watchlist, enrolled once, saved) */
    collector cc = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ffu_pipeline_opts o;
    ffu_pipeline_opts_default(&o);
    o.watchlist = wl;
    o.on_event = collect;
    o.user = &cc;
    ffu_pipeline *p = NULL;
    ffu_status st = ffu_pipeline_create(&o, &p);
    if (st == FFU_ERR_NOT_FOUND && strstr(ffu_error_message(), "model"))
        TEST_SKIP("default face models not installed");
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(ffu_gallery_save(ffu_pipeline_gallery(p), gal), FFU_OK);
    ffu_pipeline_stream_opts so = {.url = vid, .name = "cpu"};
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &so, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_run(p), FFU_OK);
    ffu_pipeline_stats cs;
    ffu_pipeline_stats_get(p, &cs);
    ffu_pipeline_destroy(p);
    sort_names(cc.names[0]);
    printf("  cpu: %lld frames, confirmed: %s (%.1f s)\n", (long long)cs.frames, cc.names[0],
           cs.wall_s);
    CHECK(strstr(cc.names[0], "Lin-Manuel Miranda") != NULL);
    CHECK_EQ_INT(cs.on_gpu, 0);
    CHECK_EQ_INT(cs.gpu_frames, 0);

    /* the cuda run: stream 0 decodes on NVDEC and stays on the device (annotated,
     * snapshots: the downloads), stream 1 decodes on the CPU (host frames into cuda
     * models), in one pool so batches mix the two */
    collector gc = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char snaps[256], ann[256];
    snprintf(snaps, sizeof snaps, "%s/snaps", dir);
    snprintf(ann, sizeof ann, "%s/annotated.mp4", dir);
    ffu_pipeline_opts_default(&o);
    o.watchlist = gal;
    o.on_event = collect;
    o.user = &gc;
    o.backend = "cuda";
    o.snapshot_dir = snaps;
    o.workers = 4;
    CHECK_EQ_INT(ffu_pipeline_create(&o, &p), FFU_OK);
    if (!p)
        return;
    ffu_pipeline_stream_opts s0 = {.url = vid, .name = "device", .annotate = ann,
                                   .hwaccel = FFU_VIDEO_HWACCEL_CUDA};
    ffu_pipeline_stream_opts s1 = {.url = vid, .name = "host"};
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &s0, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &s1, NULL), FFU_OK);
    st = ffu_pipeline_run(p);
    if (st)
        fprintf(stderr, "run: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    ffu_pipeline_stats gs;
    ffu_pipeline_stats_get(p, &gs);
    ffu_pipeline_stream_stats ss[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, i, &ss[i]), FFU_OK);
    ffu_pipeline_destroy(p);
    for (int i = 0; i < 2; i++)
        sort_names(gc.names[i]);
    printf("  cuda: %lld frames (%lld from device memory), %lld downloads, %lld GPU searches, "
           "detector batches up to %d, embedder up to %d, %.1f s\n",
           (long long)gs.frames, (long long)gs.gpu_frames, (long long)gs.host_downloads,
           (long long)gs.gpu_searches, gs.max_detect_batch, gs.max_embed_batch, gs.wall_s);
    printf("  cuda confirmed: device stream %s (decoder %s); host stream %s (decoder %s)\n",
           gc.names[0], ss[0].health.decoder, gc.names[1], ss[1].health.decoder);
    CHECK_EQ_INT(gs.on_gpu, 1);
    CHECK_EQ_INT(ss[0].frames, cs.frames);
    CHECK_EQ_INT(ss[1].frames, cs.frames);
    /* every frame of the NVDEC stream was analysed from device memory */
    CHECK_EQ_INT(gs.gpu_frames, ss[0].frames);
    /* downloads only for the annotated stream: one per frame (annotation), none for the
     * host stream */
    CHECK(gs.host_downloads >= ss[0].frames && gs.host_downloads <= ss[0].frames + 1);
    CHECK(gs.gpu_searches > 0);
    CHECK(gs.max_detect_batch >= 2);
    CHECK_STR(gc.names[0], cc.names[0]);
    CHECK_STR(gc.names[1], cc.names[0]);
    CHECK(gc.confirmed[0] > 0 && gc.snapshots[0] == gc.confirmed[0]);
    /* the annotated video decodes, one frame per analysed frame */
    ffu_video_reader *r = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&r, ann, NULL), FFU_OK);
    int64_t nf = 0;
    while (r && ffu_video_reader_read(r, NULL, NULL) == FFU_OK)
        nf++;
    ffu_video_reader_close(r);
    CHECK_EQ_INT(nf, ss[0].frames);
}

TEST_MAIN(test_no_device, test_stream_fallback, test_quality_patch, test_stream_gpu_frames,
          test_hamilton_cuda)
