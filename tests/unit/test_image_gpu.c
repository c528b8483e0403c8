/* The GPU image kernels (include/facefuse/image_gpu.h) on a real device against their
 * CPU twins: NV12 -> RGB/BGR/RGBA/GRAY (BT.601, BT.709, BT.2020; both ranges), bilinear
 * resize, affine warp, warp + normalise (every matrix for NV12 sources)
 * into batched f32/f16 NCHW/NHWC tensors (from RGB, BGR, RGBA and NV12 sources, many
 * launches' worth of jobs), image_to_tensor and drawing. Everything is designed to be
 * byte-exact (f16: the CPU's f32 rounded to nearest even), so the comparisons are exact.
 * Sentinels check that slots and pixels nobody should write stay untouched, and bad
 * arguments must leave the stream usable. Skipped (exit 77) without a usable device:
 * the per-pixel arithmetic is checked on the CPU by test_image_gpu_hd.c; this is where
 * grids, launches, strides and device memory are checked. */
#include <limits.h>
#include <time.h>

#include "facefuse/gpu.h"
#include "facefuse/image.h"
#include "facefuse/image_gpu.h"
#include "nn/ir.h"
#include "test.h"
#include "test_image_gpu.h"

#define PHOTO1 "data/dlib_faces/2008_002470.jpg"
#define PHOTO2 "data/dlib_faces/2009_004587.jpg"

static ffu_gpu *g_gpu;
static ffu_gpu_stream *g_s;

static int gpu_ready(void)
{
    if (g_s) return 1;
    if (ffu_gpu_device_count() <= 0) return 0;
    if (ffu_gpu_open(0, &g_gpu) != FFU_OK) {
        fprintf(stderr, "  ffu_gpu_open: %s\n", ffu_error_message());
        return 0;
    }
    if (ffu_gpu_stream_create(g_gpu, &g_s) != FFU_OK) {
        fprintf(stderr, "  ffu_gpu_stream_create: %s\n", ffu_error_message());
        return 0;
    }
    ffu_gpu_device_info info;
    if (ffu_gpu_device_info_get(0, &info) == FFU_OK)
        printf("  device 0: %s, sm_%d%d\n", info.name, info.cc_major, info.cc_minor);
    return 1;
}

#define NEED_GPU()                                                                                 \
    do {                                                                                           \
        if (!gpu_ready()) TEST_SKIP("no usable CUDA device");                                      \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill_noise(ffu_image *im, uint64_t *seed)
{
    int planes = im->fmt == FFU_PIX_NV12 ? 2 : 1;
    for (int p = 0; p < planes; p++) {
        int rows = p ? im->height / 2 : im->height;
        int bytes = im->fmt == FFU_PIX_NV12 ? im->width : im->width * ffu_pixfmt_bpp(im->fmt);
        for (int y = 0; y < rows; y++)
            for (int x = 0; x < bytes; x++)
                im->data[p][(size_t)y * im->stride[p] + x] = (uint8_t)(test_rand_u64(seed) >> 56);
    }
}

/* The photo as fmt at w x h (0: its own size, cut to even), or noise without data. */
static int load_photo(const char *rel, ffu_pixfmt fmt, int w, int h, ffu_image *out)
{
    char buf[4096];
    ffu_image full;
    memset(out, 0, sizeof *out);
    const char *path = test_shared_path(rel, buf, sizeof buf);
    ffu_pixfmt packed = fmt == FFU_PIX_NV12 ? FFU_PIX_RGB24 : fmt;
    if (path && ffu_image_load(path, packed, &full) == FFU_OK) {
        if (!w) w = full.width & ~1, h = full.height & ~1;
        ffu_image sized;
        int ok = ffu_image_create(&sized, packed, w, h) == FFU_OK &&
                 ffu_image_resize(&full, &sized, FFU_INTERP_BILINEAR) == FFU_OK;
        ffu_image_release(&full);
        if (!ok) return -1;
        if (fmt == packed) {
            *out = sized;
            return 1;
        }
        ok = ffu_image_create(out, fmt, w, h) == FFU_OK && ffu_image_convert(&sized, out) == FFU_OK;
        ffu_image_release(&sized);
        return ok ? 1 : -1;
    }
    uint64_t seed = 99;
    if (ffu_image_create(out, fmt, w ? w : 318, h ? h : 242) != FFU_OK) return -1;
    fill_noise(out, &seed);
    return 0;
}

static ffu_status upload(const ffu_image *h, ffu_gpu_image *d)
{
    ffu_status st = ffu_gpu_image_create(g_gpu, d, h->fmt, h->width, h->height);
    if (st == FFU_OK) st = ffu_gpu_image_upload(g_s, h, d);
    return st;
}

/* Downloads d into a new host image (synchronising the stream). */
static ffu_status download(const ffu_gpu_image *d, ffu_image *h)
{
    ffu_status st = ffu_image_create(h, d->fmt, d->width, d->height);
    if (st == FFU_OK) st = ffu_gpu_image_download(g_s, d, h);
    if (st == FFU_OK) st = ffu_gpu_stream_sync(g_s);
    return st;
}

static int same_bytes(const ffu_image *a, const ffu_image *b, const char *what)
{
    int bpp = ffu_pixfmt_bpp(a->fmt);
    long bad = 0, worst = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * bpp; x++) {
            int u = a->data[0][(size_t)y * a->stride[0] + x];
            int v = b->data[0][(size_t)y * b->stride[0] + x];
            if (u == v) continue;
            if (!bad)
                fprintf(stderr, "  %s: first difference byte %d row %d: %d vs %d\n", what, x, y, u,
                        v);
            bad++;
            if (abs(u - v) > worst) worst = abs(u - v);
        }
    if (bad) fprintf(stderr, "  %s: %ld bytes differ, max %ld\n", what, bad, worst);
    return bad == 0;
}

static void test_convert(void)
{
    NEED_GPU();
    static const ffu_pixfmt outs[] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32, FFU_PIX_GRAY8};
    ffu_image photo, noise;
    CHECK(load_photo(PHOTO1, FFU_PIX_NV12, 1920, 1080, &photo) >= 0);
    CHECK_EQ_INT(ffu_image_create(&noise, FFU_PIX_NV12, 642, 362), FFU_OK);
    uint64_t seed = 1;
    fill_noise(&noise, &seed);
    const ffu_image *ins[2] = {&photo, &noise};
    for (int i = 0; i < 2; i++) {
        ffu_gpu_image dsrc;
        CHECK_EQ_INT(upload(ins[i], &dsrc), FFU_OK);
        /* every matrix in both ranges; BT.601 through all three entry points */
        for (int m = 0; m < FFU_YUV_MATRIX_COUNT; m++)
            for (int range = 0; range < 2; range++)
                for (size_t f = 0; f < sizeof outs / sizeof outs[0]; f++) {
                    ffu_yuv_coding coding = {(ffu_yuv_matrix)m, (ffu_yuv_range)range};
                    ffu_image cpu, gpu;
                    ffu_gpu_image ddst;
                    CHECK_EQ_INT(ffu_image_create(&cpu, outs[f], ins[i]->width, ins[i]->height),
                                 FFU_OK);
                    CHECK_EQ_INT(ffu_image_convert_yuv(ins[i], &cpu, coding), FFU_OK);
                    CHECK_EQ_INT(
                        ffu_gpu_image_create(g_gpu, &ddst, outs[f], ins[i]->width, ins[i]->height),
                        FFU_OK);
                    ffu_status st;
                    if (m == FFU_YUV_BT601 && range && (f & 1))
                        st = ffu_gpu_image_convert_range(g_s, &dsrc, &ddst, FFU_YUV_FULL);
                    else if (m == FFU_YUV_BT601 && !range && (f & 1))
                        st = ffu_gpu_image_convert(g_s, &dsrc, &ddst);
                    else
                        st = ffu_gpu_image_convert_yuv(g_s, &dsrc, &ddst, coding);
                    CHECK_EQ_INT(st, FFU_OK);
                    CHECK_EQ_INT(download(&ddst, &gpu), FFU_OK);
                    if (!same_bytes(&cpu, &gpu, ffu_pixfmt_name(outs[f]))) {
                        fprintf(stderr, "  input %d matrix %d range %d\n", i, m, range);
                        CHECK(0);
                    }
                    ffu_image_release(&cpu), ffu_image_release(&gpu), ffu_gpu_image_release(&ddst);
                }
        ffu_gpu_image_release(&dsrc);
    }

    /* An NV12 view with NVDEC-like pitch (2048 for 1920 wide, UV plane after 1088 rows):
     * borrowed memory and a stride that is not the image's own. */
    size_t pitch = 2048, rows = 1088;
    uint8_t *mem = NULL;
    CHECK_EQ_INT(ffu_gpu_alloc(g_gpu, pitch * rows * 3 / 2, (void **)&mem), FFU_OK);
    ffu_gpu_image view;
    memset(&view, 0, sizeof view);
    view.fmt = FFU_PIX_NV12, view.width = 1920, view.height = 1080, view.gpu = g_gpu;
    view.data[0] = mem, view.data[1] = mem + pitch * rows;
    view.stride[0] = view.stride[1] = (int)pitch;
    CHECK_EQ_INT(ffu_gpu_image_upload(g_s, &photo, &view), FFU_OK);
    ffu_gpu_image drgb;
    ffu_image cpu, gpu;
    CHECK_EQ_INT(ffu_gpu_image_create(g_gpu, &drgb, FFU_PIX_BGR24, 1920, 1080), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_image_convert(g_s, &view, &drgb), FFU_OK);
    CHECK_EQ_INT(download(&drgb, &gpu), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&cpu, FFU_PIX_BGR24, 1920, 1080), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&photo, &cpu), FFU_OK);
    CHECK(same_bytes(&cpu, &gpu, "pitched NV12 view"));
    ffu_image_release(&cpu), ffu_image_release(&gpu);
    /* the same view as HD video is coded: BT.709 limited */
    ffu_yuv_coding hd = {FFU_YUV_BT709, FFU_YUV_LIMITED};
    CHECK_EQ_INT(ffu_gpu_image_convert_yuv(g_s, &view, &drgb, hd), FFU_OK);
    CHECK_EQ_INT(download(&drgb, &gpu), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&cpu, FFU_PIX_BGR24, 1920, 1080), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert_yuv(&photo, &cpu, hd), FFU_OK);
    CHECK(same_bytes(&cpu, &gpu, "pitched NV12 view, BT.709"));
    ffu_image_release(&cpu), ffu_image_release(&gpu);
    /* an unknown coding is refused before anything is queued */
    CHECK_EQ_INT(ffu_gpu_image_convert_yuv(g_s, &view, &drgb,
                                           (ffu_yuv_coding){FFU_YUV_MATRIX_COUNT, FFU_YUV_LIMITED}),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gpu_image_convert_yuv(g_s, &view, &drgb,
                                           (ffu_yuv_coding){FFU_YUV_BT709, (ffu_yuv_range)2}),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK);
    ffu_gpu_image_release(&drgb);
    ffu_gpu_free(g_gpu, mem);
    ffu_image_release(&photo), ffu_image_release(&noise);
}

static void test_resize(void)
{
    NEED_GPU();
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_GRAY8, FFU_PIX_RGBA32, FFU_PIX_BGR24};
    static const int sizes[][4] = {{1920, 1080, 640, 360}, {1920, 1080, 640, 640},
                                   {641, 479, 1921, 1081}, {17, 13, 3, 7},
                                   {1, 1, 5, 3},           {333, 555, 112, 112}};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ffu_image src, cpu, gpu;
            ffu_gpu_image ds, dd;
            CHECK(load_photo(PHOTO2, fmts[f], sizes[k][0], sizes[k][1], &src) >= 0);
            CHECK_EQ_INT(ffu_image_create(&cpu, fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
            CHECK_EQ_INT(ffu_image_resize(&src, &cpu, FFU_INTERP_BILINEAR), FFU_OK);
            CHECK_EQ_INT(upload(&src, &ds), FFU_OK);
            CHECK_EQ_INT(ffu_gpu_image_create(g_gpu, &dd, fmts[f], sizes[k][2], sizes[k][3]),
                         FFU_OK);
            CHECK_EQ_INT(ffu_gpu_image_resize(g_s, &ds, &dd), FFU_OK);
            CHECK_EQ_INT(download(&dd, &gpu), FFU_OK);
            if (!same_bytes(&cpu, &gpu, "resize"))
                fprintf(stderr, "  %s %dx%d -> %dx%d\n", ffu_pixfmt_name(fmts[f]), sizes[k][0],
                        sizes[k][1], sizes[k][2], sizes[k][3]);
            CHECK(same_bytes(&cpu, &gpu, "resize"));
            ffu_image_release(&src), ffu_image_release(&cpu), ffu_image_release(&gpu);
            ffu_gpu_image_release(&ds), ffu_gpu_image_release(&dd);
        }
}

static void sim_matrix(double s, double a, double sx, double sy, double cx, double cy, double m[6])
{
    double c = cos(a) * s, n = sin(a) * s;
    m[0] = c, m[1] = -n, m[2] = sx - c * cx + n * cy;
    m[3] = n, m[4] = c, m[5] = sy - n * cx - c * cy;
}

static void test_warp_image(void)
{
    NEED_GPU();
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_GRAY8, FFU_PIX_RGBA32};
    const uint8_t bv[4] = {10, 200, 30, 77};
    uint64_t seed = 11;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image src;
        ffu_gpu_image ds;
        CHECK(load_photo(PHOTO1, fmts[f], 0, 0, &src) >= 0);
        CHECK_EQ_INT(upload(&src, &ds), FFU_OK);
        for (int k = 0; k < 8; k++) {
            double m[6];
            sim_matrix(0.3 + 2.5 * test_rand_f(&seed), 6.3 * test_rand_f(&seed),
                       src.width * (1.4 * test_rand_f(&seed) - 0.2),
                       src.height * (1.4 * test_rand_f(&seed) - 0.2), 56, 56, m);
            if (k == 0) m[0] = 1, m[1] = 0, m[2] = 0, m[3] = 0, m[4] = 1, m[5] = 0;
            for (int interp = 0; interp < 2; interp++)
                for (int border = 0; border < FFU_BORDER_COUNT; border++) {
                    ffu_image cpu, gpu;
                    ffu_gpu_image dd;
                    CHECK_EQ_INT(ffu_image_create(&cpu, fmts[f], 112, 97), FFU_OK);
                    CHECK_EQ_INT(ffu_image_warp_affine(&src, &cpu, m, (ffu_interp)interp,
                                                       (ffu_border)border, bv),
                                 FFU_OK);
                    CHECK_EQ_INT(ffu_gpu_image_create(g_gpu, &dd, fmts[f], 112, 97), FFU_OK);
                    CHECK_EQ_INT(ffu_gpu_image_warp_affine(g_s, &ds, &dd, m, (ffu_interp)interp,
                                                           (ffu_border)border, bv),
                                 FFU_OK);
                    CHECK_EQ_INT(download(&dd, &gpu), FFU_OK);
                    CHECK(same_bytes(&cpu, &gpu, "warp"));
                    ffu_image_release(&cpu), ffu_image_release(&gpu), ffu_gpu_image_release(&dd);
                }
        }
        ffu_image_release(&src), ffu_gpu_image_release(&ds);
    }
}

/* Every element of the slots jobs wrote equals the CPU's (f16: rounded); every other
 * slot still holds the 0xA5 sentinel. */
static int tensor_matches(const void *h_gpu, const ffu_tensor_view *cpu, int f16,
                          const ffu_gpu_warp_job *jobs, int n_jobs)
{
    size_t per = (size_t)cpu->c * cpu->h * cpu->w, esz = f16 ? 2 : 4;
    for (int b = 0; b < cpu->n; b++) {
        int used = 0;
        for (int j = 0; j < n_jobs; j++)
            used |= jobs[j].batch_index == b;
        const uint8_t *slot = (const uint8_t *)h_gpu + b * per * esz;
        for (size_t i = 0; i < per; i++) {
            size_t e = b * per + i;
            int ok;
            if (!used) {
                ok = slot[i * esz] == 0xA5 && slot[i * esz + esz - 1] == 0xA5;
            } else if (f16) {
                ok = ((const uint16_t *)h_gpu)[e] == nn_f32_to_f16(cpu->data[e]);
            } else {
                ok = memcmp((const float *)h_gpu + e, cpu->data + e, 4) == 0;
            }
            if (!ok) {
                fprintf(stderr, "  slot %d (%s) element %zu: cpu %.9g\n", b,
                        used ? "written" : "untouched", i, used ? cpu->data[e] : 0.0);
                return 0;
            }
        }
    }
    return 1;
}

static void test_warp_tensor(void)
{
    NEED_GPU();
    ffu_image frame, rgb, bgr, rgba;
    CHECK(load_photo(PHOTO1, FFU_PIX_NV12, 1920, 1080, &frame) >= 0);
    CHECK(load_photo(PHOTO1, FFU_PIX_RGB24, 0, 0, &rgb) >= 0);
    CHECK(load_photo(PHOTO2, FFU_PIX_BGR24, 0, 0, &bgr) >= 0);
    CHECK(load_photo(PHOTO2, FFU_PIX_RGBA32, 640, 480, &rgba) >= 0);
    const ffu_image *hsrc[4] = {&frame, &rgb, &bgr, &rgba};
    ffu_gpu_image dsrc[4];
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(upload(hsrc[i], &dsrc[i]), FFU_OK);

    enum { NB = 80, NJ = 70, TW = 112, TH = 112 }; /* 70 jobs: three launches */
    ffu_gpu_warp_job jobs[NJ];
    uint64_t seed = 3;
    for (int j = 0; j < NJ; j++) {
        jobs[j].src = j % 4;
        jobs[j].batch_index = (j * 3) % NB; /* distinct: 3 and 80 are coprime */
        const ffu_image *s = hsrc[j % 4];
        sim_matrix(0.3 + 3 * test_rand_f(&seed), 0.8 * (test_rand_f(&seed) - 0.5),
                   s->width * (1.2 * test_rand_f(&seed) - 0.1),
                   s->height * (1.2 * test_rand_f(&seed) - 0.1), TW / 2.0, TH / 2.0, jobs[j].m);
    }
    size_t nelem = (size_t)NB * 3 * TH * TW;
    float *cpu = malloc(nelem * 4);
    void *hgpu = malloc(nelem * 4), *dten = NULL;
    CHECK(cpu && hgpu);
    CHECK_EQ_INT(ffu_gpu_alloc(g_gpu, nelem * 4, &dten), FFU_OK);
    for (int cfg = 0; cfg < 12; cfg++) {
        ffu_gpu_warp_opts o;
        CHECK_EQ_INT(warp_test_opts(cfg, &o), FFU_OK);
        int C = o.norm.gray ? 1 : 3, f16 = cfg & 2 ? 1 : 0;
        ffu_tensor_layout layout = cfg & 8 ? FFU_LAYOUT_NHWC : FFU_LAYOUT_NCHW;
        ffu_tensor_view tc = {cpu, layout, NB, C, TH, TW};
        ffu_gpu_tensor_view tg = {dten, f16 ? FFU_DTYPE_F16 : FFU_DTYPE_F32, layout, NB, C, TH, TW};
        size_t bytes = (size_t)NB * C * TH * TW * (f16 ? 2 : 4);
        CHECK_EQ_INT(ffu_gpu_memset(g_s, dten, 0xA5, bytes), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_image_warp_to_tensor(g_s, dsrc, 4, jobs, NJ, &o, &tg), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_copy(g_s, hgpu, dten, bytes), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK);
        for (int j = 0; j < NJ; j++)
            CHECK_EQ_INT(cpu_job(hsrc[jobs[j].src], jobs[j].m, &o, &tc, jobs[j].batch_index),
                         FFU_OK);
        if (!tensor_matches(hgpu, &tc, f16, jobs, NJ)) {
            fprintf(stderr, "  cfg %d: interp %d border %d range %d matrix %d gray %d f16 %d %s\n",
                    cfg, o.interp, o.border, o.range, o.matrix, o.norm.gray, f16,
                    cfg & 8 ? "NHWC" : "NCHW");
            CHECK(0);
        }
    }

    /* The embedding case: 256 aligned faces of one 1080p NV12 frame, f16 NCHW. Timed
     * for information only (no assertion on time). */
    enum { NF = 256 };
    ffu_gpu_warp_job *faces = malloc(NF * sizeof *faces);
    float *cpu256 = malloc((size_t)NF * 3 * TH * TW * 4);
    void *h256 = malloc((size_t)NF * 3 * TH * TW * 2), *d256 = NULL;
    CHECK(faces && cpu256 && h256);
    CHECK_EQ_INT(ffu_gpu_alloc(g_gpu, (size_t)NF * 3 * TH * TW * 2, &d256), FFU_OK);
    for (int j = 0; j < NF; j++) {
        faces[j].src = 0, faces[j].batch_index = j;
        sim_matrix(0.6 + 1.5 * test_rand_f(&seed), 0.5 * (test_rand_f(&seed) - 0.5),
                   1920 * test_rand_f(&seed), 1080 * test_rand_f(&seed), TW / 2.0, TH / 2.0,
                   faces[j].m);
    }
    ffu_gpu_warp_opts o;
    memset(&o, 0, sizeof o);
    o.interp = FFU_INTERP_BILINEAR;
    o.border = FFU_BORDER_CONSTANT;
    CHECK_EQ_INT(ffu_norm_preset(&o.norm, "symmetric"), FFU_OK);
    ffu_gpu_tensor_view t256 = {d256, FFU_DTYPE_F16, FFU_LAYOUT_NCHW, NF, 3, TH, TW};
    CHECK_EQ_INT(ffu_gpu_image_warp_to_tensor(g_s, dsrc, 1, faces, NF, &o, &t256), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK); /* warm-up */
    double t0 = now_ms();
    for (int r = 0; r < 10; r++)
        CHECK_EQ_INT(ffu_gpu_image_warp_to_tensor(g_s, dsrc, 1, faces, NF, &o, &t256), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK);
    printf("  warp_to_tensor: %d faces 112x112 f16 from 1080p NV12: %.3f ms per batch\n", NF,
           (now_ms() - t0) / 10);
    CHECK_EQ_INT(ffu_gpu_copy(g_s, h256, d256, (size_t)NF * 3 * TH * TW * 2), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK);
    ffu_tensor_view c256 = {cpu256, FFU_LAYOUT_NCHW, NF, 3, TH, TW};
    for (int j = 0; j < NF; j++)
        CHECK_EQ_INT(cpu_job(&frame, faces[j].m, &o, &c256, j), FFU_OK);
    CHECK(tensor_matches(h256, &c256, 1, faces, NF));

    /* ffu_gpu_image_to_tensor: the identity, into slot 5 of a 6-slot NHWC f32 tensor. */
    ffu_image face;
    ffu_gpu_image dface;
    CHECK(load_photo(PHOTO2, FFU_PIX_BGR24, TW, TH, &face) >= 0);
    CHECK_EQ_INT(upload(&face, &dface), FFU_OK);
    ffu_norm_params np;
    CHECK_EQ_INT(ffu_norm_preset(&np, "imagenet"), FFU_OK);
    np.swap_rb = 1;
    ffu_gpu_tensor_view t6 = {dten, FFU_DTYPE_F32, FFU_LAYOUT_NHWC, 6, 3, TH, TW};
    ffu_tensor_view c6 = {cpu, FFU_LAYOUT_NHWC, 6, 3, TH, TW};
    CHECK_EQ_INT(ffu_gpu_memset(g_s, dten, 0xA5, (size_t)6 * 3 * TH * TW * 4), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_image_to_tensor(g_s, &dface, &np, &t6, 5), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_copy(g_s, hgpu, dten, (size_t)6 * 3 * TH * TW * 4), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK);
    CHECK_EQ_INT(ffu_image_to_tensor(&face, &np, &c6, 5), FFU_OK);
    ffu_gpu_warp_job slot5 = {0, 5, {1, 0, 0, 0, 1, 0}};
    CHECK(tensor_matches(hgpu, &c6, 0, &slot5, 1));

    /* Bad arguments: refused at once, nothing queued, the stream still works. */
    ffu_gpu_warp_job bad = jobs[0];
    bad.batch_index = NB;
    ffu_gpu_tensor_view tb = {dten, FFU_DTYPE_F32, FFU_LAYOUT_NCHW, NB, 3, TH, TW};
    CHECK_EQ_INT(ffu_gpu_image_warp_to_tensor(g_s, dsrc, 4, &bad, 1, &o, &tb), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gpu_image_warp_to_tensor(NULL, dsrc, 4, jobs, 1, &o, &tb), FFU_ERR_INVALID);
    ffu_gpu_tensor_view t64 = t6; /* dface is TW x TH: a 64-wide tensor does not fit it */
    t64.w = 64;
    CHECK_EQ_INT(ffu_gpu_image_to_tensor(g_s, &dface, &np, &t64, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gpu_image_to_tensor(g_s, &dface, &np, &t6, 6), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK);

    free(faces), free(cpu256), free(h256), free(cpu), free(hgpu);
    ffu_gpu_free(g_gpu, d256), ffu_gpu_free(g_gpu, dten);
    ffu_image_release(&face), ffu_gpu_image_release(&dface);
    for (int i = 0; i < 4; i++) {
        ffu_image_release((ffu_image *)hsrc[i]);
        ffu_gpu_image_release(&dsrc[i]);
    }
}

static void test_draw(void)
{
    NEED_GPU();
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32, FFU_PIX_GRAY8};
    enum { NS = 200 }; /* four launches */
    ffu_gpu_shape shapes[NS];
    uint64_t seed = 17;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image cpu, gpu;
        ffu_gpu_image d;
        CHECK(load_photo(PHOTO2, fmts[f], 1920, 1080, &cpu) >= 0);
        CHECK_EQ_INT(upload(&cpu, &d), FFU_OK);
        random_shapes(shapes, NS, cpu.width, cpu.height, 300, 12, -2, 9, 40, &seed);
        CHECK_EQ_INT(cpu_draw(&cpu, shapes, NS), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_image_draw(g_s, &d, shapes, NS), FFU_OK);
        CHECK_EQ_INT(download(&d, &gpu), FFU_OK);
        CHECK(same_bytes(&cpu, &gpu, ffu_pixfmt_name(fmts[f])));
        ffu_gpu_shape bad = shapes[0];
        bad.kind = (ffu_gpu_shape_kind)9;
        CHECK_EQ_INT(ffu_gpu_image_draw(g_s, &d, &bad, 1), FFU_ERR_INVALID);
        ffu_image_release(&cpu), ffu_image_release(&gpu), ffu_gpu_image_release(&d);
    }
    CHECK_EQ_INT(ffu_gpu_stream_sync(g_s), FFU_OK);
}

/* Last: release the stream and device, so leak checkers see a clean exit. */
static void test_teardown(void)
{
    NEED_GPU();
    ffu_gpu_stream_destroy(g_s);
    ffu_gpu_close(g_gpu);
    g_s = NULL, g_gpu = NULL;
}

TEST_MAIN(test_convert, test_resize, test_warp_image, test_warp_tensor, test_draw, test_teardown)
