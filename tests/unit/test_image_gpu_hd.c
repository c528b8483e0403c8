/* The GPU image kernels' per-pixel arithmetic (src/image/cuda/image_gpu_hd.h) run on
 * the CPU against the CPU twins, byte for byte: NV12 -> RGB vs ffu_image_convert_yuv
 * (BT.601, BT.709 and BT.2020, both ranges), bilinear resize vs ffu_image_resize,
 * affine warp vs ffu_image_warp_affine, warp + normalise into batched f32/f16 tensors
 * vs convert + warp + ffu_image_to_tensor (every matrix for NV12 sources), and drawing
 * vs ffu_draw_*. The host loops below stand in for the kernel grids and call
 * the same plan functions and pixel bodies the kernels call, on host memory, so these
 * tests check the exact code the GPU runs per pixel. Real photos from ../shared when
 * present, plus synthetic noise that reaches every clamp. No GPU needed. */
#include <limits.h>

#include "facefuse/image.h"
#include "facefuse/image_gpu.h"
#include "image/cuda/image_gpu_hd.h"
#include "image/kernels_internal.h"
#include "nn/ir.h"
#include "test.h"
#include "test_image_gpu.h"

#define PHOTO1 "data/dlib_faces/2008_002470.jpg"
#define PHOTO2 "data/dlib_faces/2009_004587.jpg"

static void fill_noise(ffu_image *im, uint64_t *seed)
{
    int planes = im->fmt == FFU_PIX_NV12 ? 2 : 1;
    for (int p = 0; p < planes; p++) {
        int rows = p ? im->height / 2 : im->height;
        int bytes = p ? im->width : im->width * ffu_pixfmt_bpp(im->fmt);
        if (im->fmt == FFU_PIX_NV12 && !p) bytes = im->width;
        for (int y = 0; y < rows; y++)
            for (int x = 0; x < bytes; x++)
                im->data[p][(size_t)y * im->stride[p] + x] = (uint8_t)(test_rand_u64(seed) >> 56);
    }
}

/* The photo as `fmt`, cut to even size; a noise image where ../shared is absent. */
static int load_photo(const char *rel, ffu_pixfmt fmt, ffu_image *out)
{
    char buf[4096];
    ffu_image full, view;
    memset(out, 0, sizeof *out);
    const char *path = test_shared_path(rel, buf, sizeof buf);
    if (path && ffu_image_load(path, fmt, &full) == FFU_OK) {
        int rc = ffu_image_view(&view, &full, 0, 0, full.width & ~1, full.height & ~1) == FFU_OK &&
                 ffu_image_clone(out, &view) == FFU_OK;
        ffu_image_release(&full);
        return rc ? 1 : -1;
    }
    uint64_t seed = 99;
    if (ffu_image_create(out, fmt, 318, 242) != FFU_OK) return -1;
    fill_noise(out, &seed);
    return 0;
}

static int same_bytes(const ffu_image *a, const ffu_image *b, const char *what)
{
    int bpp = ffu_pixfmt_bpp(a->fmt);
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * bpp; x++) {
            int u = a->data[0][(size_t)y * a->stride[0] + x];
            int v = b->data[0][(size_t)y * b->stride[0] + x];
            if (u != v) {
                fprintf(stderr, "  %s: byte %d of row %d: %d vs %d\n", what, x, y, u, v);
                return 0;
            }
        }
    return 1;
}

static void test_constants(void)
{
    CHECK_EQ_INT(IMGPU_RESIZE_COEF_ONE, FFU_RESIZE_COEF_ONE);
    CHECK_EQ_INT(IMGPU_WARP_AB_BITS, FFU_WARP_AB_BITS);
    CHECK_EQ_INT(IMGPU_WARP_INTER_BITS, FFU_WARP_INTER_BITS);
    /* Launch parameters must stay small enough to pass by value. */
    CHECK(sizeof(imgpu_warp_params) + FFU_GPU_WARP_JOBS_PER_LAUNCH * sizeof(imgpu_warp_item) <=
          4000);
    CHECK(sizeof(imgpu_draw_params) + 16 <= 4000);
}

static void test_f16(void)
{
    static const float special[] = {0.f,
                                    -0.f,
                                    1.f,
                                    -1.f,
                                    65504.f,
                                    65519.f,
                                    65520.f,
                                    65536.f,
                                    1e-8f,
                                    2.98023224e-8f,
                                    2.98023254e-8f,
                                    5.96046448e-8f,
                                    6.09755516e-5f,
                                    6.10351562e-5f,
                                    1e30f,
                                    -1e30f,
                                    0.1f,
                                    2.0f / 3,
                                    INFINITY,
                                    -INFINITY,
                                    NAN,
                                    -NAN};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        CHECK_EQ_INT(imgpu_f32_to_f16(special[i]), nn_f32_to_f16(special[i]));
    uint64_t seed = 7;
    for (int i = 0; i < 2000000; i++) {
        uint32_t bits = (uint32_t)(test_rand_u64(&seed) >> 32);
        if (i & 1) bits = (bits & 0x87ffffffu) | 0x30000000u; /* the f16 exponent range */
        float f;
        memcpy(&f, &bits, 4);
        if (imgpu_f32_to_f16(f) != nn_f32_to_f16(f)) {
            fprintf(stderr, "  bits 0x%08x: %04x vs %04x\n", bits, imgpu_f32_to_f16(f),
                    nn_f32_to_f16(f));
            CHECK(0);
        }
    }
}

/* Runs the convert kernel body over every pixel. */
static ffu_status hd_convert(const ffu_image *src, ffu_image *dst, ffu_yuv_coding coding)
{
    ffu_gpu_image s = gview(src), d = gview(dst);
    imgpu_convert_params p;
    ffu_status st = imgpu_plan_convert(&s, &d, coding, &p);
    if (st < 0) return st;
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x++)
            imgpu_convert_pixel(&p, x, y);
    return FFU_OK;
}

static const ffu_yuv_coding lim601 = {FFU_YUV_BT601, FFU_YUV_LIMITED};

static void test_convert(void)
{
    static const ffu_pixfmt outs[] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32, FFU_PIX_GRAY8};
    ffu_image rgb, nv12;
    int real = load_photo(PHOTO1, FFU_PIX_RGB24, &rgb);
    CHECK(real >= 0);
    CHECK_EQ_INT(ffu_image_create(&nv12, FFU_PIX_NV12, rgb.width, rgb.height), FFU_OK);
    uint64_t seed = 5;
    /* Round 0: the photo through the CPU encoder; round 1: noise, every Y/U/V pairing.
     * Every matrix in both ranges. */
    for (int round = 0; round < 2; round++)
        for (int m = 0; m < FFU_YUV_MATRIX_COUNT; m++)
            for (int range = 0; range < 2; range++) {
                ffu_yuv_coding coding = {(ffu_yuv_matrix)m, (ffu_yuv_range)range};
                if (round == 0)
                    CHECK_EQ_INT(ffu_image_convert_yuv(&rgb, &nv12, coding), FFU_OK);
                else
                    fill_noise(&nv12, &seed);
                for (size_t f = 0; f < sizeof outs / sizeof outs[0]; f++) {
                    ffu_image cpu, hd;
                    CHECK_EQ_INT(ffu_image_create(&cpu, outs[f], rgb.width, rgb.height), FFU_OK);
                    CHECK_EQ_INT(ffu_image_create(&hd, outs[f], rgb.width, rgb.height), FFU_OK);
                    CHECK_EQ_INT(ffu_image_convert_yuv(&nv12, &cpu, coding), FFU_OK);
                    memset(hd.data[0], 0x5a, (size_t)hd.stride[0] * hd.height);
                    CHECK_EQ_INT(hd_convert(&nv12, &hd, coding), FFU_OK);
                    if (!same_bytes(&cpu, &hd, ffu_pixfmt_name(outs[f]))) {
                        fprintf(stderr, "  round %d matrix %d range %d\n", round, m, range);
                        CHECK(0);
                    }
                    ffu_image_release(&cpu), ffu_image_release(&hd);
                }
            }
    /* The kernel's coefficients are the shared table's, and BT.709 really is another
     * matrix (a table mix-up would make the comparisons above pass vacuously). */
    for (int m = 0; m < FFU_YUV_MATRIX_COUNT; m++)
        for (int range = 0; range < 2; range++) {
            ffu_yuv_coding coding = {(ffu_yuv_matrix)m, (ffu_yuv_range)range};
            imgpu_yuv k;
            const yuv_coefs *t = yuv_coefs_of(coding);
            CHECK(t != NULL);
            CHECK_EQ_INT(imgpu_yuv_init(&k, coding), 1);
            CHECK(k.yoff == t->yoff && k.cy == t->cy && k.crv == t->crv && k.cgu == t->cgu &&
                  k.cgv == t->cgv && k.cbu == t->cbu);
        }
    imgpu_yuv k601, k709;
    CHECK_EQ_INT(imgpu_yuv_init(&k601, lim601), 1);
    CHECK_EQ_INT(imgpu_yuv_init(&k709, (ffu_yuv_coding){FFU_YUV_BT709, FFU_YUV_LIMITED}), 1);
    CHECK(k601.crv != k709.crv && k601.cgu != k709.cgu && k601.cbu != k709.cbu);
    /* Refusals: packed source, size mismatch, odd size, bad range or matrix, same
     * memory. */
    ffu_image small, odd;
    CHECK_EQ_INT(ffu_image_create(&small, FFU_PIX_RGB24, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&odd, FFU_PIX_RGB24, 5, 3), FFU_OK);
    CHECK_EQ_INT(hd_convert(&rgb, &rgb, lim601), FFU_ERR_UNSUPPORTED);
    CHECK_EQ_INT(hd_convert(&nv12, &small, lim601), FFU_ERR_INVALID);
    CHECK_EQ_INT(hd_convert(&nv12, &rgb, (ffu_yuv_coding){FFU_YUV_BT601, (ffu_yuv_range)7}),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(hd_convert(&nv12, &rgb, (ffu_yuv_coding){FFU_YUV_MATRIX_COUNT, FFU_YUV_FULL}),
                 FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "matrix") != NULL);
    CHECK_EQ_INT(hd_convert(&nv12, &rgb, (ffu_yuv_coding){(ffu_yuv_matrix)-1, FFU_YUV_FULL}),
                 FFU_ERR_INVALID);
    ffu_image nv_odd = nv12;
    nv_odd.width = 5, nv_odd.height = 3;
    CHECK_EQ_INT(hd_convert(&nv_odd, &odd, lim601), FFU_ERR_INVALID);
    ffu_image alias = rgb;
    alias.data[0] = nv12.data[0];
    CHECK_EQ_INT(hd_convert(&nv12, &alias, lim601), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "overlap") != NULL);
    ffu_image_release(&small), ffu_image_release(&odd);
    ffu_image_release(&rgb), ffu_image_release(&nv12);
}

static ffu_status hd_resize(const ffu_image *src, ffu_image *dst)
{
    ffu_gpu_image s = gview(src), d = gview(dst);
    imgpu_resize_params p;
    ffu_status st = imgpu_plan_resize(&s, &d, &p);
    if (st < 0) return st;
    for (int y = 0; y < dst->height; y++)
        for (int x = 0; x < dst->width; x++)
            imgpu_resize_pixel(&p, x, y);
    return FFU_OK;
}

static void test_resize(void)
{
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_GRAY8, FFU_PIX_RGBA32};
    static const int sizes[][2] = {{1, 1},     {3, 5},     {17, 13}, {112, 112},
                                   {640, 360}, {641, 479}, {1001, 7}};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image src;
        CHECK(load_photo(PHOTO2, fmts[f], &src) >= 0);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ffu_image cpu, hd;
            CHECK_EQ_INT(ffu_image_create(&cpu, fmts[f], sizes[k][0], sizes[k][1]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&hd, fmts[f], sizes[k][0], sizes[k][1]), FFU_OK);
            CHECK_EQ_INT(ffu_image_resize(&src, &cpu, FFU_INTERP_BILINEAR), FFU_OK);
            CHECK_EQ_INT(hd_resize(&src, &hd), FFU_OK);
            CHECK(same_bytes(&cpu, &hd, "resize"));
            /* And back up from the small one (growing, edge clamps). */
            ffu_image up_cpu, up_hd;
            CHECK_EQ_INT(ffu_image_create(&up_cpu, fmts[f], 97, 61), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&up_hd, fmts[f], 97, 61), FFU_OK);
            CHECK_EQ_INT(ffu_image_resize(&cpu, &up_cpu, FFU_INTERP_BILINEAR), FFU_OK);
            CHECK_EQ_INT(hd_resize(&cpu, &up_hd), FFU_OK);
            CHECK(same_bytes(&up_cpu, &up_hd, "resize up"));
            ffu_image_release(&cpu), ffu_image_release(&hd);
            ffu_image_release(&up_cpu), ffu_image_release(&up_hd);
        }
        ffu_image other;
        CHECK_EQ_INT(ffu_image_create(
                         &other, fmts[f] == FFU_PIX_GRAY8 ? FFU_PIX_RGB24 : FFU_PIX_GRAY8, 8, 8),
                     FFU_OK);
        CHECK_EQ_INT(hd_resize(&src, &other), FFU_ERR_INVALID); /* formats differ */
        CHECK_EQ_INT(hd_resize(&src, &src), FFU_ERR_INVALID);   /* overlap */
        ffu_image_release(&other), ffu_image_release(&src);
    }
}

/* A similarity (scale s, angle a) mapping destination pixels around (cx, cy) of the
 * destination to around (sx, sy) of the source: an alignment crop's inverse. */
static void sim_matrix(double s, double a, double sx, double sy, double cx, double cy, double m[6])
{
    double c = cos(a) * s, n = sin(a) * s;
    m[0] = c, m[1] = -n, m[2] = sx - c * cx + n * cy;
    m[3] = n, m[4] = c, m[5] = sy - n * cx - c * cy;
}

static ffu_status hd_warp(const ffu_image *src, ffu_image *dst, const double m[6],
                          ffu_interp interp, ffu_border border, const uint8_t bv[4])
{
    ffu_gpu_image s = gview(src), d = gview(dst);
    imgpu_warp_image_params p;
    ffu_status st = imgpu_plan_warp_image(&s, &d, m, interp, border, bv, &p);
    if (st < 0) return st;
    for (int y = 0; y < dst->height; y++)
        for (int x = 0; x < dst->width; x++)
            imgpu_warp_image_pixel(&p, x, y);
    return FFU_OK;
}

static void test_warp_image(void)
{
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_GRAY8, FFU_PIX_RGBA32};
    const uint8_t bv[4] = {10, 200, 30, 77};
    uint64_t seed = 11;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image src;
        CHECK(load_photo(PHOTO1, fmts[f], &src) >= 0);
        for (int k = 0; k < 12; k++) {
            double m[6];
            if (k == 0) {
                double id[6] = {1, 0, 0, 0, 1, 0};
                memcpy(m, id, sizeof m);
            } else if (k == 1) { /* a 1x1 source region stretched: far outside too */
                double big[6] = {0.01, 0, -3, 0, 0.02, src.height - 0.5};
                memcpy(m, big, sizeof m);
            } else if (k == 2) { /* NaN matrix: every sample outside */
                double bad[6] = {NAN, 0, 0, 0, 1, 0};
                memcpy(m, bad, sizeof m);
            } else {
                sim_matrix(0.3 + 2.5 * test_rand_f(&seed), 6.3 * test_rand_f(&seed),
                           src.width * (1.4 * test_rand_f(&seed) - 0.2),
                           src.height * (1.4 * test_rand_f(&seed) - 0.2), 56, 56, m);
                m[1] += 0.2 * (test_rand_f(&seed) - 0.5); /* shear: a general affine */
            }
            for (int interp = 0; interp < 2; interp++)
                for (int border = 0; border < FFU_BORDER_COUNT; border++) {
                    ffu_image cpu, hd;
                    CHECK_EQ_INT(ffu_image_create(&cpu, fmts[f], 112, 97), FFU_OK);
                    CHECK_EQ_INT(ffu_image_create(&hd, fmts[f], 112, 97), FFU_OK);
                    CHECK_EQ_INT(ffu_image_warp_affine(&src, &cpu, m, (ffu_interp)interp,
                                                       (ffu_border)border, k & 1 ? bv : NULL),
                                 FFU_OK);
                    CHECK_EQ_INT(hd_warp(&src, &hd, m, (ffu_interp)interp, (ffu_border)border,
                                         k & 1 ? bv : NULL),
                                 FFU_OK);
                    if (!same_bytes(&cpu, &hd, "warp")) {
                        fprintf(stderr, "  fmt %s matrix %d interp %d border %d\n",
                                ffu_pixfmt_name(fmts[f]), k, interp, border);
                        CHECK(0);
                    }
                    ffu_image_release(&cpu), ffu_image_release(&hd);
                }
        }
        /* Tiny sources: 1x1 and 2x1 with every border rule. */
        for (int w = 1; w <= 2; w++) {
            ffu_image tiny, cpu, hd, view;
            CHECK_EQ_INT(ffu_image_view(&view, &src, 10, 10, w, 1), FFU_OK);
            CHECK_EQ_INT(ffu_image_clone(&tiny, &view), FFU_OK);
            double m[6] = {0.37, 0.05, -2.2, -0.11, 0.29, -1.7};
            for (int border = 0; border < FFU_BORDER_COUNT; border++) {
                CHECK_EQ_INT(ffu_image_create(&cpu, fmts[f], 23, 19), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&hd, fmts[f], 23, 19), FFU_OK);
                CHECK_EQ_INT(ffu_image_warp_affine(&tiny, &cpu, m, FFU_INTERP_BILINEAR,
                                                   (ffu_border)border, bv),
                             FFU_OK);
                CHECK_EQ_INT(hd_warp(&tiny, &hd, m, FFU_INTERP_BILINEAR, (ffu_border)border, bv),
                             FFU_OK);
                CHECK(same_bytes(&cpu, &hd, "tiny warp"));
                ffu_image_release(&cpu), ffu_image_release(&hd);
            }
            ffu_image_release(&tiny);
        }
        double m[6] = {1, 0, 0, 0, 1, 0};
        CHECK_EQ_INT(hd_warp(&src, &src, m, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT, NULL),
                     FFU_ERR_INVALID);
        ffu_image other;
        CHECK_EQ_INT(ffu_image_create(&other, fmts[f], 8, 8), FFU_OK);
        CHECK_EQ_INT(hd_warp(&src, &other, NULL, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT, NULL),
                     FFU_ERR_INVALID);
        CHECK_EQ_INT(hd_warp(&src, &other, m, FFU_INTERP_AREA, FFU_BORDER_CONSTANT, NULL),
                     FFU_ERR_INVALID);
        CHECK_EQ_INT(hd_warp(&src, &other, m, FFU_INTERP_BILINEAR, (ffu_border)9, NULL),
                     FFU_ERR_INVALID);
        ffu_image_release(&other), ffu_image_release(&src);
    }
}

/* ---- warp + normalise into a tensor ------------------------------------------------ */

/* Emulates ffu_gpu_image_warp_to_tensor: plan, chunks of jobs, every pixel of each. */
static ffu_status hd_warp_tensor(const ffu_gpu_image *srcs, int n_srcs,
                                 const ffu_gpu_warp_job *jobs, int n_jobs,
                                 const ffu_gpu_warp_opts *o, const ffu_gpu_tensor_view *t)
{
    imgpu_warp_params p;
    imgpu_warp_item items[FFU_GPU_WARP_JOBS_PER_LAUNCH];
    ffu_status st = imgpu_plan_warp_tensor(srcs, n_srcs, jobs, n_jobs, o, t, &p);
    if (st < 0) return st;
    for (int j0 = 0; j0 < n_jobs; j0 += FFU_GPU_WARP_JOBS_PER_LAUNCH) {
        int n =
            n_jobs - j0 < FFU_GPU_WARP_JOBS_PER_LAUNCH ? n_jobs - j0 : FFU_GPU_WARP_JOBS_PER_LAUNCH;
        for (int i = 0; i < n; i++)
            imgpu_warp_item_init(&items[i], srcs, &jobs[j0 + i]);
        for (int z = 0; z < n; z++)
            for (int y = 0; y < p.H; y++)
                for (int x = 0; x < p.W; x++)
                    imgpu_warp_tensor_pixel(&p, &items[z], x, y);
    }
    return FFU_OK;
}

/* Compares slot b of the HD output with the CPU's f32 slot (f16: rounded by nn's
 * converter) bit for bit. */
static int slot_equal(const void *hd, const ffu_tensor_view *cpu, int f16, int b)
{
    for (int c = 0; c < cpu->c; c++)
        for (int y = 0; y < cpu->h; y++)
            for (int x = 0; x < cpu->w; x++) {
                float v = *ffu_tensor_at(cpu, b, c, y, x);
                size_t i = (size_t)(ffu_tensor_at(cpu, b, c, y, x) - cpu->data);
                int ok = f16 ? ((const uint16_t *)hd)[i] == nn_f32_to_f16(v)
                             : memcmp((const float *)hd + i, &v, 4) == 0;
                if (!ok) {
                    fprintf(stderr, "  slot %d c %d (%d,%d): cpu %.9g\n", b, c, x, y, v);
                    return 0;
                }
            }
    return 1;
}

static void test_warp_tensor(void)
{
    ffu_image photo, bgr, rgba, nv12;
    CHECK(load_photo(PHOTO1, FFU_PIX_RGB24, &photo) >= 0);
    CHECK(load_photo(PHOTO2, FFU_PIX_BGR24, &bgr) >= 0);
    CHECK(load_photo(PHOTO2, FFU_PIX_RGBA32, &rgba) >= 0);
    CHECK_EQ_INT(ffu_image_create(&nv12, FFU_PIX_NV12, photo.width, photo.height), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&photo, &nv12), FFU_OK);
    const ffu_image *hsrc[4] = {&photo, &bgr, &rgba, &nv12};
    ffu_gpu_image srcs[4];
    for (int i = 0; i < 4; i++)
        srcs[i] = gview(hsrc[i]);

    /* 40 jobs (two launches' worth), every source, some slots left out. */
    enum { NB = 44, NJ = 40, TW = 61, TH = 53 };
    ffu_gpu_warp_job jobs[NJ];
    uint64_t seed = 3;
    for (int j = 0; j < NJ; j++) {
        jobs[j].src = j % 4;
        jobs[j].batch_index = (j * 7) % NB; /* distinct: 7 and 44 are coprime */
        const ffu_image *s = hsrc[j % 4];
        sim_matrix(0.4 + 3 * test_rand_f(&seed), j % 3 ? 0.8 * (test_rand_f(&seed) - 0.5) : 0,
                   s->width * (1.2 * test_rand_f(&seed) - 0.1),
                   s->height * (1.2 * test_rand_f(&seed) - 0.1), TW / 2.0, TH / 2.0, jobs[j].m);
    }
    /* A letterbox job: the whole source scaled into the tensor, padded. */
    double sc = fmin((double)TW / nv12.width, (double)TH / nv12.height);
    double px = (TW - nv12.width * sc) / 2, py = (TH - nv12.height * sc) / 2;
    double lb[6] = {1 / sc, 0, -px / sc, 0, 1 / sc, -py / sc};
    memcpy(jobs[3].m, lb, sizeof lb);

    size_t nelem = (size_t)NB * 3 * TH * TW;
    float *cpu = malloc(nelem * 4);
    void *hd = malloc(nelem * 4);
    CHECK(cpu && hd);
    for (int cfg = 0; cfg < 12; cfg++) {
        ffu_gpu_warp_opts o;
        CHECK_EQ_INT(warp_test_opts(cfg, &o), FFU_OK);
        int C = o.norm.gray ? 1 : 3, f16 = cfg & 2 ? 1 : 0;
        ffu_tensor_layout layout = cfg & 8 ? FFU_LAYOUT_NHWC : FFU_LAYOUT_NCHW;
        ffu_tensor_view tc = {cpu, layout, NB, C, TH, TW};
        ffu_gpu_tensor_view th = {hd, f16 ? FFU_DTYPE_F16 : FFU_DTYPE_F32, layout, NB, C, TH, TW};
        memset(hd, 0xA5, nelem * 4); /* sentinel: untouched slots keep it */
        CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, NJ, &o, &th), FFU_OK);
        for (int j = 0; j < NJ; j++)
            CHECK_EQ_INT(cpu_job(hsrc[jobs[j].src], jobs[j].m, &o, &tc, jobs[j].batch_index),
                         FFU_OK);
        for (int j = 0; j < NJ; j++)
            if (!slot_equal(hd, &tc, f16, jobs[j].batch_index)) {
                fprintf(stderr, "  cfg %d job %d (source %s)\n", cfg, j,
                        ffu_pixfmt_name(hsrc[jobs[j].src]->fmt));
                CHECK(0);
            }
        /* Slots no job names are untouched. */
        size_t per = (size_t)C * TH * TW * (f16 ? 2 : 4);
        for (int b = 0; b < NB; b++) {
            int used = 0;
            for (int j = 0; j < NJ; j++)
                used |= jobs[j].batch_index == b;
            if (used) continue;
            const uint8_t *p = (const uint8_t *)hd + b * per; /* both layouts: slot-major */
            for (size_t i = 0; i < per; i++)
                CHECK_EQ_INT(p[i], 0xA5);
        }
    }

    /* Refusals, each with nothing written. */
    ffu_gpu_warp_opts o;
    memset(&o, 0, sizeof o);
    o.interp = FFU_INTERP_BILINEAR;
    CHECK_EQ_INT(ffu_norm_preset(&o.norm, "unit"), FFU_OK);
    ffu_gpu_tensor_view t = {hd, FFU_DTYPE_F32, FFU_LAYOUT_NCHW, NB, 3, TH, TW};
    memset(hd, 0xA5, nelem * 4);
    ffu_gpu_warp_job bad = jobs[0];
    bad.src = 4;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, &bad, 1, &o, &t), FFU_ERR_INVALID);
    bad = jobs[0], bad.batch_index = NB;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, &bad, 1, &o, &t), FFU_ERR_INVALID);
    bad.batch_index = -1;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, &bad, 1, &o, &t), FFU_ERR_INVALID);
    ffu_gpu_tensor_view t2 = t;
    t2.dtype = FFU_DTYPE_BF16;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o, &t2), FFU_ERR_INVALID);
    t2 = t, t2.c = 1; /* colour into one channel */
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o, &t2), FFU_ERR_INVALID);
    t2 = t, t2.layout = (ffu_tensor_layout)5;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o, &t2), FFU_ERR_INVALID);
    t2 = t, t2.data = NULL;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o, &t2), FFU_ERR_INVALID);
    t2 = t, t2.w = 0;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o, &t2), FFU_ERR_INVALID);
    ffu_gpu_warp_opts o2 = o;
    o2.interp = FFU_INTERP_AREA;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o2, &t), FFU_ERR_INVALID);
    o2 = o, o2.range = (ffu_yuv_range)3;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o2, &t), FFU_ERR_INVALID);
    o2 = o, o2.matrix = FFU_YUV_MATRIX_COUNT;
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, &o2, &t), FFU_ERR_INVALID);
    ffu_gpu_image bad_src[2] = {srcs[0], srcs[3]};
    bad_src[1].width = 7; /* odd NV12 */
    CHECK_EQ_INT(hd_warp_tensor(bad_src, 2, jobs, 1, &o, &t), FFU_ERR_INVALID);
    bad_src[1] = srcs[0], bad_src[1].fmt = FFU_PIX_GRAY8;
    CHECK_EQ_INT(hd_warp_tensor(bad_src, 2, jobs, 1, &o, &t), FFU_ERR_UNSUPPORTED);
    CHECK_EQ_INT(hd_warp_tensor(NULL, 0, jobs, 1, &o, &t), FFU_ERR_INVALID);
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, jobs, 1, NULL, &t), FFU_ERR_INVALID);
    CHECK_EQ_INT(hd_warp_tensor(srcs, 4, NULL, 0, &o, &t), FFU_OK); /* nothing to do */
    for (size_t i = 0; i < nelem * 4; i++)
        CHECK_EQ_INT(((uint8_t *)hd)[i], 0xA5);

    free(cpu), free(hd);
    for (int i = 0; i < 4; i++)
        ffu_image_release((ffu_image *)hsrc[i]);
}

/* ---- drawing ------------------------------------------------------------------------- */

/* Emulates ffu_gpu_image_draw: plan, chunks, each chunk over its clipped box only. */
static ffu_status hd_draw(ffu_image *img, const ffu_gpu_shape *shapes, int n)
{
    ffu_gpu_image g = gview(img);
    imgpu_draw_params p;
    ffu_status st = imgpu_plan_draw(&g, shapes, n, &p);
    if (st < 0) return st;
    for (int i0 = 0; i0 < n; i0 += FFU_GPU_DRAW_SHAPES_PER_LAUNCH) {
        int k = n - i0 < FFU_GPU_DRAW_SHAPES_PER_LAUNCH ? n - i0 : FFU_GPU_DRAW_SHAPES_PER_LAUNCH;
        int box[4];
        if (!imgpu_plan_draw_chunk(&g, shapes + i0, k, &p, box)) continue;
        for (int y = box[1]; y < box[3]; y++)
            for (int x = box[0]; x < box[2]; x++)
                imgpu_draw_pixel(&p, x, y);
    }
    return FFU_OK;
}

static void test_draw(void)
{
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32, FFU_PIX_GRAY8};
    enum { NS = 150 }; /* three chunks */
    ffu_gpu_shape shapes[NS];
    uint64_t seed = 17;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image cpu, hd;
        CHECK(load_photo(PHOTO2, fmts[f], &cpu) >= 0);
        CHECK_EQ_INT(ffu_image_clone(&hd, &cpu), FFU_OK);
        random_shapes(shapes, NS, cpu.width, cpu.height, 90, 30, -3, 25, 20, &seed);
        /* Some ordinary boxes and landmarks that surely land inside. */
        shapes[0] = (ffu_gpu_shape){FFU_GPU_SHAPE_RECT, 20, 30, 100, 80, 3, 0, {255, 0, 0, 255}};
        shapes[1] = (ffu_gpu_shape){FFU_GPU_SHAPE_POINT, 60, 60, 0, 0, 0, 4, {0, 255, 0, 255}};
        shapes[2] = (ffu_gpu_shape){FFU_GPU_SHAPE_RECT, 40, 40, 6, 50, 3, 0, {0, 0, 255, 9}};
        CHECK_EQ_INT(cpu_draw(&cpu, shapes, NS), FFU_OK);
        CHECK_EQ_INT(hd_draw(&hd, shapes, NS), FFU_OK);
        CHECK(same_bytes(&cpu, &hd, ffu_pixfmt_name(fmts[f])));
        ffu_gpu_shape bad = shapes[0];
        bad.kind = (ffu_gpu_shape_kind)7;
        CHECK_EQ_INT(hd_draw(&hd, &bad, 1), FFU_ERR_INVALID);
        CHECK_EQ_INT(hd_draw(&hd, NULL, 2), FFU_ERR_INVALID);
        CHECK_EQ_INT(hd_draw(&hd, NULL, 0), FFU_OK);
        ffu_image_release(&cpu), ffu_image_release(&hd);
    }
    ffu_image nv;
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, 8, 8), FFU_OK);
    CHECK_EQ_INT(hd_draw(&nv, shapes, 1), FFU_ERR_INVALID); /* packed images only */
    ffu_image_release(&nv);
}

/* The public entry points exist in every build; without CUDA they say so, and with CUDA
 * they check arguments before touching a device. */
static void test_entry_points(void)
{
    ffu_image im;
    CHECK_EQ_INT(ffu_image_create(&im, FFU_PIX_RGB24, 8, 8), FFU_OK);
    ffu_gpu_image g = gview(&im);
    ffu_gpu_shape s = {FFU_GPU_SHAPE_POINT, 1, 1, 0, 0, 0, 1, {1, 2, 3, 4}};
    ffu_status st = ffu_gpu_image_draw(NULL, &g, &s, 1);
    CHECK(st == FFU_ERR_UNSUPPORTED || st == FFU_ERR_INVALID);
    CHECK(strlen(ffu_error_message()) > 0);
    st = ffu_gpu_image_resize(NULL, &g, NULL);
    CHECK(st == FFU_ERR_UNSUPPORTED || st == FFU_ERR_INVALID);
    ffu_image_release(&im);
}

TEST_MAIN(test_constants, test_f16, test_convert, test_resize, test_warp_image, test_warp_tensor,
          test_draw, test_entry_points)
