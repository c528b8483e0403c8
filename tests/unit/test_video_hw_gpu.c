/* NVDEC on a real GPU (issue #7 item 3): frames decoded by NVDEC through FFmpeg's CUDA
 * hwaccel against a CPU decode of the same clips. read_gpu's NV12 views are downloaded
 * and compared plane by plane (H.264 decoding is exact, so the bound is tight), the
 * host read through the download path against the CPU's RGB, after a seek too; the
 * views are checked to be device memory of device 0 in the very context ffu_gpu_open(0)
 * uses (the CUDA runtime's primary context), with frame->gpu the shared handle.
 * Also: a stream NVDEC cannot take (H.264 4:4:4) under auto (CPU, read_gpu through an
 * upload) and under cuda (FFU_ERR_DEVICE at the first read), several readers at once,
 * the reader outliving the caller's ffu_gpu handle, and a stream with hwaccel cuda.
 * Skipped (exit 77) without a CUDA device, or without NVDEC's library on the machine. */
#include <dlfcn.h>
#include <math.h>
#include <unistd.h>

#include "facefuse/gpu.h"
#include "facefuse/video.h"
#include "ffu_config.h"
#include "test.h"
#include "test_video.h"
#if FFU_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define HAMILTON "data/videos/face_recognition_short_hamilton_clip.mp4"

/* Texture that changes every frame (so P/B-frames carry real residuals) + a block. */
static void draw(ffu_image *img, int t)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            uint8_t *p = img->data[0] + (size_t)y * img->stride[0] + 3 * x;
            int block = x >= 40 + 6 * t && x < 200 + 6 * t && y >= 60 && y < 200;
            p[0] = block ? 230 : (uint8_t)(128 + 100 * sin(x * 0.031 + t * 0.2));
            p[1] = block ? 40 : (uint8_t)(128 + 90 * cos(y * 0.043 - t * 0.1));
            p[2] = (uint8_t)((x ^ y) + t * 7);
        }
}

/* Clips written once: 640x360 (60 frames), 1920x1080 (20; 1080 is cropped from 1088),
 * and 320x240 in 4:4:4, which NVDEC's H.264 does not decode. */
static char clip_sd[256], clip_hd[256], clip_444[256];
static int clips_ok = -1;
static int make_clips(void)
{
    if (clips_ok >= 0) return clips_ok;
    clips_ok = 0;
    const char *dir = test_tmpdir_auto();
    if (!dir) return 0;
    snprintf(clip_sd, sizeof clip_sd, "%s/sd.mp4", dir);
    snprintf(clip_hd, sizeof clip_hd, "%s/hd.mp4", dir);
    snprintf(clip_444, sizeof clip_444, "%s/444.mkv", dir);
    ffu_video_writer_opts o = {.width = 640,
                               .height = 360,
                               .fps_num = 25,
                               .fps_den = 1,
                               .crf = 22,
                               .preset = "veryfast",
                               .gop = 15};
    if (test_write_clip(clip_sd, &o, 60, draw, NULL) < 0) goto fail;
    o.width = 1920, o.height = 1080, o.preset = "ultrafast", o.gop = 8;
    if (test_write_clip(clip_hd, &o, 20, draw, NULL) < 0) goto fail;
    o.width = 320, o.height = 240, o.pix_fmt = "yuv444p", o.preset = "veryfast";
    if (test_write_clip(clip_444, &o, 20, draw, NULL) < 0) goto fail;
    clips_ok = 1;
    return 1;
fail:
    fprintf(stderr, "cannot write the clips: %s\n", ffu_error_message());
    return 0;
}

/* Why this machine cannot run the test, or NULL. */
static const char *skip_reason(void)
{
    if (ffu_gpu_device_count() == 0) return "no CUDA device";
    void *h = dlopen("libnvcuvid.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return "no libnvcuvid.so.1 (NVDEC's driver library) on this machine";
    dlclose(h);
    return NULL;
}

/* Max abs difference and PSNR of two NV12 images of one size over both planes. */
static void nv12_diff(const ffu_image *a, const ffu_image *b, int *worst, double *psnr)
{
    double se = 0, n = 0;
    *worst = 0;
    for (int p = 0; p < 2; p++) {
        int rows = p == 0 ? a->height : a->height / 2;
        for (int y = 0; y < rows; y++)
            for (int x = 0; x < a->width; x++) {
                int d = a->data[p][(size_t)y * a->stride[p] + x] -
                        b->data[p][(size_t)y * b->stride[p] + x];
                se += (double)d * d;
                n++;
                if (abs(d) > *worst) *worst = abs(d);
            }
    }
    *psnr = se <= 0 ? 99 : 10 * log10(255.0 * 255.0 * n / se);
}

/* The view's memory: device memory of device 0, in the context that is current after
 * ffu_gpu_make_current(g) (the runtime's primary context). */
static void check_device_pointer(ffu_gpu *g, const void *dptr)
{
#if FFU_HAVE_CUDA
    struct cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    CHECK_EQ_INT(cudaPointerGetAttributes(&at, dptr), cudaSuccess);
    CHECK_EQ_INT(at.type, cudaMemoryTypeDevice);
    CHECK_EQ_INT(at.device, ffu_gpu_index(g));
#if CUDART_VERSION >= 12050
    typedef int (*ptr_attr_fn)(void *data, int attribute, unsigned long long ptr);
    typedef int (*ctx_current_fn)(void **ctx);
    void *fa = NULL, *fc = NULL;
    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &fa, 12000, cudaEnableDefault,
                                         NULL) == cudaSuccess &&
        cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fc, 12000, cudaEnableDefault, NULL) ==
            cudaSuccess &&
        fa && fc) {
        CHECK_EQ_INT(ffu_gpu_make_current(g), FFU_OK);
        cudaFree(NULL); /* the runtime binds its (primary) context now at the latest */
        void *ptr_ctx = NULL, *cur = NULL;
        CHECK_EQ_INT(((ptr_attr_fn)fa)(&ptr_ctx, 1 /* CU_POINTER_ATTRIBUTE_CONTEXT */,
                                       (unsigned long long)(uintptr_t)dptr),
                     0);
        CHECK_EQ_INT(((ctx_current_fn)fc)(&cur), 0);
        CHECK(ptr_ctx != NULL);
        CHECK(ptr_ctx == cur); /* one context shared by NVDEC frames and our kernels */
    } else {
        printf("note: no driver entry points; context identity not checked\n");
    }
#endif
#else
    (void)g, (void)dptr;
#endif
}

/* read_gpu views vs the CPU decoder's NV12, frame by frame, and the host RGB read of a
 * CUDA reader vs the CPU's RGB. */
static void compare_clip(const char *path, int expect_frames)
{
    ffu_gpu *g = NULL;
    CHECK_EQ_INT(ffu_gpu_open(0, &g), FFU_OK);
    if (!g) return;
    ffu_video_reader_opts co = {.pixfmt = FFU_PIX_NV12};
    ffu_video_reader_opts go = {.pixfmt = FFU_PIX_NV12, .hwaccel = FFU_VIDEO_HWACCEL_CUDA};
    ffu_video_reader *rc = NULL, *rg = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&rc, path, &co), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_open(&rg, path, &go), FFU_OK);
    if (!rc || !rg) goto out;
    const ffu_video_info *ig = ffu_video_reader_info(rg);
    CHECK_EQ_INT(ig->hwaccel, FFU_VIDEO_HWACCEL_CUDA);
    CHECK_STR(ig->decoder, "h264 (nvdec)");

    ffu_image cpu = {0}, down = {0};
    ffu_gpu_image v;
    double tc, tg, worst_psnr = 99;
    int n = 0, exact = 0, worst_abs = 0;
    ffu_status sc, sg;
    for (;;) {
        sc = ffu_video_reader_read(rc, &cpu, &tc);
        sg = ffu_video_reader_read_gpu(rg, &v, &tg);
        if (sc != FFU_OK || sg != FFU_OK) break;
        CHECK(tc == tg);
        CHECK_EQ_INT(v.fmt, FFU_PIX_NV12);
        CHECK(v.width == cpu.width && v.height == cpu.height);
        CHECK(v.gpu == g); /* the shared handle of device 0 */
        CHECK_EQ_INT(v.owned, 0);
        CHECK(v.data[0] && v.data[1] && !v.data[2]);
        CHECK(v.stride[0] >= v.width && v.stride[1] >= v.width);
        if (v.width != cpu.width || v.height != cpu.height || !v.data[0]) break;
        if (n == 0 || n == 7) check_device_pointer(g, v.data[0]);
        if (!down.data[0])
            CHECK_EQ_INT(ffu_image_create(&down, FFU_PIX_NV12, v.width, v.height), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_image_download(NULL, &v, &down), FFU_OK);
        int w;
        double psnr;
        nv12_diff(&cpu, &down, &w, &psnr);
        exact += w == 0;
        if (w > worst_abs) worst_abs = w;
        if (psnr < worst_psnr) worst_psnr = psnr;
        n++;
    }
    printf("%s: %d frames, %d bit-exact, worst abs diff %d, worst PSNR %.1f dB\n", path, n, exact,
           worst_abs, worst_psnr);
    CHECK_EQ_INT(sc, FFU_EOF);
    CHECK_EQ_INT(sg, FFU_EOF);
    CHECK(v.data[0] == NULL); /* zeroed at EOF */
    CHECK_EQ_INT(n, expect_frames);
    CHECK(worst_abs <= 2); /* H.264 decoding is exact; allow a rounding */
    CHECK(worst_psnr >= 50.0);

    /* Seek on the CUDA reader; the frame there equals the CPU's. */
    CHECK_EQ_INT(ffu_video_reader_seek(rc, 1.0 * expect_frames / 25 / 2), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_seek(rg, 1.0 * expect_frames / 25 / 2), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_read(rc, &cpu, &tc), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_read_gpu(rg, &v, &tg), FFU_OK);
    CHECK_NEAR(tg, tc, 1e-9);
    if (v.data[0] && down.data[0]) {
        CHECK_EQ_INT(ffu_gpu_image_download(NULL, &v, &down), FFU_OK);
        int w;
        double psnr;
        nv12_diff(&cpu, &down, &w, &psnr);
        CHECK(w <= 2);
    }
    int m, full;
    ffu_video_reader_color(rg, &m, &full);
    CHECK(m == 601 || m == 709);
    CHECK_EQ_INT(full, 0);
    ffu_image_release(&cpu);
    ffu_image_release(&down);
    ffu_video_reader_close(rc);
    ffu_video_reader_close(rg);
    rc = rg = NULL;

    /* Host reads of a CUDA reader (download + swscale) against the CPU, in RGB. */
    co.pixfmt = go.pixfmt = FFU_PIX_RGB24;
    CHECK_EQ_INT(ffu_video_reader_open(&rc, path, &co), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_open(&rg, path, &go), FFU_OK);
    if (!rc || !rg) goto out;
    ffu_image a = {0}, b = {0};
    n = 0;
    double total = 0, count = 0;
    while ((sc = ffu_video_reader_read(rc, &a, &tc)) == FFU_OK &&
           (sg = ffu_video_reader_read(rg, &b, &tg)) == FFU_OK) {
        CHECK(tc == tg);
        for (int y = 0; y < a.height; y++)
            for (int x = 0; x < a.width * 3; x++) {
                total += abs(a.data[0][(size_t)y * a.stride[0] + x] -
                             b.data[0][(size_t)y * b.stride[0] + x]);
                count++;
            }
        n++;
    }
    CHECK_EQ_INT(n, expect_frames);
    printf("%s: RGB host read, mean abs diff %.4f\n", path, count ? total / count : -1);
    CHECK(count > 0 && total / count <= 1.0);
    ffu_image_release(&a);
    ffu_image_release(&b);
out:
    ffu_video_reader_close(rc);
    ffu_video_reader_close(rg);
    ffu_gpu_close(g);
}

static void test_nvdec_vs_cpu(void)
{
    const char *why = skip_reason();
    if (why) TEST_SKIP(why);
    CHECK(make_clips());
    if (!clips_ok) return;
    compare_clip(clip_sd, 60);
    compare_clip(clip_hd, 20);
    char buf[4096];
    const char *ham = test_shared_path(HAMILTON, buf, sizeof buf);
    if (ham) compare_clip(ham, 275); /* a real camera clip, BT.709, with B-frames */
}

/* auto on a GPU machine picks NVDEC; the reader keeps its own ffu_gpu reference, so the
 * caller closing theirs does not pull the device from under it. */
static void test_auto_and_lifetime(void)
{
    const char *why = skip_reason();
    if (why) TEST_SKIP(why);
    CHECK(make_clips());
    if (!clips_ok) return;
    ffu_gpu *g = NULL;
    CHECK_EQ_INT(ffu_gpu_open(0, &g), FFU_OK);
    ffu_video_reader_opts o = {.hwaccel = FFU_VIDEO_HWACCEL_AUTO};
    ffu_video_reader *r = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&r, clip_sd, &o), FFU_OK);
    ffu_gpu_close(g);
    if (!r) return;
    CHECK_EQ_INT(ffu_video_reader_info(r)->hwaccel, FFU_VIDEO_HWACCEL_CUDA);
    ffu_gpu_image v;
    int n = 0;
    while (ffu_video_reader_read_gpu(r, &v, NULL) == FFU_OK) {
        CHECK(v.gpu != NULL && v.data[0] != NULL);
        ffu_gpu_image_release(&v); /* a view: harmless, zeroes it */
        CHECK(v.data[0] == NULL);
        n++;
    }
    CHECK_EQ_INT(n, 60);
    ffu_video_reader_close(r);
}

/* Several NVDEC readers at once, read in turns (each holds its own decoder and view). */
static void test_many_readers(void)
{
    const char *why = skip_reason();
    if (why) TEST_SKIP(why);
    CHECK(make_clips());
    if (!clips_ok) return;
    enum { K = 6 };
    ffu_video_reader *r[K] = {0};
    ffu_video_reader_opts o = {.pixfmt = FFU_PIX_NV12, .hwaccel = FFU_VIDEO_HWACCEL_CUDA};
    for (int i = 0; i < K; i++)
        CHECK_EQ_INT(ffu_video_reader_open(&r[i], clip_sd, &o), FFU_OK);
    ffu_gpu_image v[K];
    ffu_image host = {0}, ref = {0};
    ffu_video_reader *rc = NULL;
    ffu_video_reader_opts co = {.pixfmt = FFU_PIX_NV12};
    CHECK_EQ_INT(ffu_video_reader_open(&rc, clip_sd, &co), FFU_OK);
    for (int f = 0; f < 60 && rc; f++) {
        CHECK_EQ_INT(ffu_video_reader_read(rc, &ref, NULL), FFU_OK);
        for (int i = 0; i < K; i++)
            CHECK_EQ_INT(r[i] ? ffu_video_reader_read_gpu(r[i], &v[i], NULL) : FFU_ERR_INVALID,
                         FFU_OK);
        /* All K views are valid at once, and each holds this frame. */
        for (int i = 0; i < K; i++) {
            if (!host.data[0])
                CHECK_EQ_INT(ffu_image_create(&host, FFU_PIX_NV12, v[i].width, v[i].height),
                             FFU_OK);
            CHECK_EQ_INT(ffu_gpu_image_download(NULL, &v[i], &host), FFU_OK);
            int w;
            double psnr;
            nv12_diff(&ref, &host, &w, &psnr);
            CHECK(w <= 2);
        }
    }
    ffu_image_release(&host);
    ffu_image_release(&ref);
    ffu_video_reader_close(rc);
    for (int i = 0; i < K; i++)
        ffu_video_reader_close(r[i]);
}

/* H.264 4:4:4: NVDEC refuses it (or, in an FFmpeg that can, gives a 4:4:4 surface);
 * either way read_gpu gives NV12 equal to the CPU's, auto reports the CPU when refused,
 * and cuda required fails at the first read with FFU_ERR_DEVICE. */
static void test_refused_stream(void)
{
    const char *why = skip_reason();
    if (why) TEST_SKIP(why);
    CHECK(make_clips());
    if (!clips_ok) return;
    ffu_video_reader_opts ao = {.pixfmt = FFU_PIX_NV12, .hwaccel = FFU_VIDEO_HWACCEL_AUTO};
    ffu_video_reader_opts co = {.pixfmt = FFU_PIX_NV12};
    ffu_video_reader *ra = NULL, *rc = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&ra, clip_444, &ao), FFU_OK);
    CHECK_EQ_INT(ffu_video_reader_open(&rc, clip_444, &co), FFU_OK);
    if (!ra || !rc) goto out;
    CHECK_EQ_INT(ffu_video_reader_info(ra)->hwaccel, FFU_VIDEO_HWACCEL_CUDA); /* at open */
    ffu_image cpu = {0}, down = {0};
    ffu_gpu_image v;
    int n = 0;
    while (ffu_video_reader_read(rc, &cpu, NULL) == FFU_OK) {
        CHECK_EQ_INT(ffu_video_reader_read_gpu(ra, &v, NULL), FFU_OK);
        if (!v.data[0]) break;
        CHECK(v.width == 320 && v.height == 240 && v.fmt == FFU_PIX_NV12);
        if (!down.data[0]) CHECK_EQ_INT(ffu_image_create(&down, FFU_PIX_NV12, 320, 240), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_image_download(NULL, &v, &down), FFU_OK);
        int w;
        double psnr;
        nv12_diff(&cpu, &down, &w, &psnr);
        CHECK(w <= 2);
        n++;
    }
    CHECK_EQ_INT(n, 20);
    const ffu_video_info *in = ffu_video_reader_info(ra);
    printf("4:4:4 under auto: %s\n", in->decoder);
    if (in->hwaccel == FFU_VIDEO_HWACCEL_NONE) CHECK_STR(in->decoder, "h264 (cpu)");
    ffu_image_release(&cpu);
    ffu_image_release(&down);

    ffu_video_reader_opts ro = {.hwaccel = FFU_VIDEO_HWACCEL_CUDA};
    ffu_video_reader *rr = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&rr, clip_444, &ro), FFU_OK);
    if (rr) {
        ffu_status st = ffu_video_reader_read(rr, NULL, NULL);
        if (in->hwaccel == FFU_VIDEO_HWACCEL_NONE) {
            CHECK_EQ_INT(st, FFU_ERR_DEVICE);
            CHECK(strstr(ffu_error_message(), "NVDEC cannot decode this stream") != NULL);
        } else {
            CHECK_EQ_INT(st, FFU_OK);
        }
        ffu_video_reader_close(rr);
    }
out:
    ffu_video_reader_close(ra);
    ffu_video_reader_close(rc);
}

/* A stream with hwaccel cuda: all frames arrive (downloaded for the ring), health says
 * nvdec. */
static void test_stream_cuda(void)
{
    const char *why = skip_reason();
    if (why) TEST_SKIP(why);
    CHECK(make_clips());
    if (!clips_ok) return;
    ffu_stream_opts so;
    ffu_stream_opts_default(&so);
    so.sample_fps = 5; /* 12 of 60 frames at 25 fps: the others are never downloaded */
    so.reader.hwaccel = FFU_VIDEO_HWACCEL_CUDA;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, clip_sd, &so), FFU_OK);
    if (!s) return;
    ffu_stream_frame *f;
    int n = 0;
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 20000)) == FFU_OK) {
        CHECK(f->image.width == 640 && f->image.height == 360);
        ffu_stream_release(s, f);
        n++;
    }
    CHECK_EQ_INT(st, FFU_EOF);
    CHECK_EQ_INT(n, 12);
    ffu_stream_health h;
    ffu_stream_health_get(s, &h);
    CHECK_STR(h.decoder, "h264 (nvdec)");
    /* Non-reference frames are skipped when sampling 1 in 5, with NVDEC too. */
    CHECK(h.decoded >= 12 && h.decoded <= 60);
    ffu_stream_close(s);
}

static void test_cleanup(void)
{
    if (clip_sd[0]) unlink(clip_sd);
    if (clip_hd[0]) unlink(clip_hd);
    if (clip_444[0]) unlink(clip_444);
    if (test_tmpdir_buf_()[0]) rmdir(test_tmpdir_buf_());
    if (skip_reason()) TEST_SKIP(skip_reason());
}

TEST_MAIN(test_nvdec_vs_cpu, test_auto_and_lifetime, test_many_readers, test_refused_stream,
          test_stream_cuda, test_cleanup)
