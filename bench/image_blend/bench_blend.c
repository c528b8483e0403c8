/* Blending benchmark: the face-swap paste-back steps on a real photo pair, timed on one
 * core against OpenCV in the same process on the same buffers:
 *   - piecewise-affine warp of a face mesh (ours vs the per-triangle warpAffine + mask
 *     loop face-swap code writes with OpenCV),
 *   - Gaussian blur of a face mask (feathering) vs cv::GaussianBlur,
 *   - Poisson seamless cloning vs cv::seamlessClone (NORMAL_CLONE),
 * with the largest and mean difference from OpenCV's output as a check against the
 * peer. Inputs: lin-manuel-miranda.png (source face) onto obama-720p.jpg (1280x720
 * frame) from ../shared/data/face_recognition_examples; the mesh and face oval are fixed
 * coordinates chosen by eye for these two photos. Build and run with
 * bench/image_blend/run. Not a test: nothing here passes or fails. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facefuse/image.h"
#include "image/blend_internal.h"
#include "image/kernels_internal.h"

void peer_cv_init(void);
const char *peer_cv_version(void);
void peer_cv_blur(const uint8_t *src, uint8_t *dst, int w, int h, int sstride, int dstride,
                  double sigma);
void peer_cv_seamless_clone(const uint8_t *src, int sw, int sh, int sstride, const uint8_t *mask,
                            int mstride, const uint8_t *dst, int dw, int dh, int dstride, int px,
                            int py, uint8_t *out, int ostride);
void peer_cv_warp_triangles(const uint8_t *src, int sw, int sh, int sstride, uint8_t *dst, int dw,
                            int dh, int dstride, const float *sxy, const float *dxy, const int *tri,
                            int ntri);

static int g_runs = 30, g_warmup = 3;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, ffu_error_message());
    exit(1);
}

/* ---- the operations, one struct of arguments for all ----------------------------- */

enum { GW = 18, GH = 21, NPTS = GW * GH, NTRI = 2 * (GW - 1) * (GH - 1) };

typedef struct {
    const ffu_image *face, *frame; /* source photo, destination frame */
    ffu_image *out, *mask, *blurred;
    const ffu_image *cmask; /* clone mask */
    float sxy[2 * NPTS], dxy[2 * NPTS];
    int tri[3 * NTRI];
    float sigma;
    int isa, px, py, cycles;
    ffu_clone_ctx *ctx;
} bench;

static void warp_ffu(bench *b)
{
    if (ffu_image_warp_piecewise_impl(b->face, b->out, b->sxy, b->dxy, NPTS, b->tri, NTRI, NULL,
                                      b->isa) < 0)
        die("warp_piecewise");
}

static void warp_cv(bench *b)
{
    peer_cv_warp_triangles(b->face->data[0], b->face->width, b->face->height, b->face->stride[0],
                           b->out->data[0], b->out->width, b->out->height, b->out->stride[0],
                           b->sxy, b->dxy, b->tri, NTRI);
}

static void blur_ffu(bench *b)
{
    if (ffu_mask_gaussian_blur_impl(b->mask, b->blurred, b->sigma, b->isa) < 0)
        die("gaussian_blur");
}

static void blur_cv(bench *b)
{
    peer_cv_blur(b->mask->data[0], b->blurred->data[0], b->mask->width, b->mask->height,
                 b->mask->stride[0], b->blurred->stride[0], b->sigma);
}

/* Both sides produce a new image from an untouched frame: OpenCV copies the frame into
 * its output, we copy it first (counted in our time). */
static void clone_ffu(bench *b)
{
    if (ffu_image_copy(b->frame, b->out) < 0) die("copy");
    if (ffu_image_seamless_clone_impl(b->ctx, b->face, b->cmask, b->out, 0, 0, FFU_CLONE_TOL,
                                      FFU_CLONE_MAX_CYCLES, &b->cycles) < 0)
        die("seamless_clone");
}

static void clone_cv(bench *b)
{
    peer_cv_seamless_clone(b->face->data[0], b->face->width, b->face->height, b->face->stride[0],
                           b->cmask->data[0], b->cmask->stride[0], b->frame->data[0],
                           b->frame->width, b->frame->height, b->frame->stride[0], b->px, b->py,
                           b->out->data[0], b->out->stride[0]);
}

/* Median milliseconds of g_runs runs after g_warmup. */
static double measure(void (*fn)(bench *), bench *b)
{
    double t[1000];
    int runs = g_runs > 1000 ? 1000 : g_runs;
    for (int i = 0; i < g_warmup; i++)
        fn(b);
    for (int i = 0; i < runs; i++) {
        double t0 = now_s();
        fn(b);
        t[i] = now_s() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    return t[runs / 2] * 1e3;
}

/* Largest and mean absolute byte difference over the pixels where sel (GRAY8, may be
 * NULL) is non-zero. */
static void diff_stats(const ffu_image *a, const ffu_image *b, const ffu_image *sel, int *maxd,
                       double *meand)
{
    int bpp = ffu_pixfmt_bpp(a->fmt), m = 0;
    double sum = 0;
    size_t n = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width; x++) {
            if (sel && !sel->data[0][(size_t)y * sel->stride[0] + x]) continue;
            for (int c = 0; c < bpp; c++) {
                int d = abs(a->data[0][(size_t)y * a->stride[0] + x * bpp + c] -
                            b->data[0][(size_t)y * b->stride[0] + x * bpp + c]);
                if (d > m) m = d;
                sum += d, n++;
            }
        }
    *maxd = m;
    *meand = n ? sum / (double)n : 0;
}

static const char *isa_name(int isa) { return isa == FFU_ISA_AVX2 ? "avx2" : "scalar"; }

static void save(const char *dir, const char *name, const ffu_image *im)
{
    if (!dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ffu_image_save(path, im, 0) < 0) fprintf(stderr, "%s\n", ffu_error_message());
}

int main(int argc, char **argv)
{
    const char *data = NULL, *outdir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            g_runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            outdir = argv[++i];
        else {
            fprintf(stderr, "usage: bench_image_blend --data DIR [--runs N] [--out DIR]\n");
            return 2;
        }
    }
    if (!data) {
        fprintf(stderr, "bench_image_blend: --data DIR (face_recognition_examples/examples)\n");
        return 2;
    }
    if (g_runs < 1) g_runs = 1;
    peer_cv_init();
    char cpu[128], feat[256], path[1024];
    ffu_cpu_name(cpu, sizeof cpu);
    ffu_cpu_features_string(ffu_cpu_features(), feat, sizeof feat);
    printf("CPU: %s (%s); one core; median of %d runs after %d warm-up; OpenCV %s\n\n", cpu, feat,
           g_runs, g_warmup, peer_cv_version());

    ffu_image face, frame, out, out_cv, mask, blurred, blurred_cv, cover, warped;
    snprintf(path, sizeof path, "%s/lin-manuel-miranda.png", data);
    if (ffu_image_load(path, FFU_PIX_RGB24, &face) < 0) die("load");
    snprintf(path, sizeof path, "%s/obama-720p.jpg", data);
    if (ffu_image_load(path, FFU_PIX_RGB24, &frame) < 0) die("load");
    int W = frame.width, H = frame.height;
    if (ffu_image_create(&out, FFU_PIX_RGB24, W, H) < 0 ||
        ffu_image_create(&out_cv, FFU_PIX_RGB24, W, H) < 0 ||
        ffu_image_create(&warped, FFU_PIX_RGB24, W, H) < 0 ||
        ffu_image_create(&mask, FFU_PIX_GRAY8, W, H) < 0 ||
        ffu_image_create(&cover, FFU_PIX_GRAY8, W, H) < 0 ||
        ffu_image_create(&blurred, FFU_PIX_GRAY8, W, H) < 0 ||
        ffu_image_create(&blurred_cv, FFU_PIX_GRAY8, W, H) < 0)
        die("create");

    static bench b;
    b.face = &face, b.frame = &frame;
    /* Mesh: a grid over the destination face box, its source a grid over the source face
     * box bent by a smooth displacement, so every triangle has its own map. */
    for (int j = 0; j < GH; j++)
        for (int i = 0; i < GW; i++) {
            double u = (double)i / (GW - 1), v = (double)j / (GH - 1), k = j * GW + i;
            b.dxy[2 * (int)k] = (float)(570 + 190 * u);
            b.dxy[2 * (int)k + 1] = (float)(45 + 255 * v);
            b.sxy[2 * (int)k] = (float)(235 + 310 * u + 9 * sin(M_PI * v) * sin(2 * M_PI * u));
            b.sxy[2 * (int)k + 1] = (float)(140 + 360 * v + 7 * sin(M_PI * u) * sin(M_PI * v));
        }
    int nt = 0;
    for (int j = 0; j + 1 < GH; j++)
        for (int i = 0; i + 1 < GW; i++) {
            int a = j * GW + i, c = a + GW;
            int t[6] = {a, a + 1, c, a + 1, c + 1, c};
            memcpy(b.tri + 3 * nt, t, sizeof t);
            nt += 2;
        }
    /* Face oval (0/255) inside the mesh. */
    float oval[2 * 64];
    for (int k = 0; k < 64; k++) {
        oval[2 * k] = (float)(665 + 82 * cos(k * 2 * M_PI / 64));
        oval[2 * k + 1] = (float)(178 + 112 * sin(k * 2 * M_PI / 64));
    }
    if (ffu_mask_fill_polygon(&mask, oval, 64, 255) < 0) die("fill_polygon");
    int best = ffu_image_isa_best();

    printf("| operation | path | facefuse ms | OpenCV ms | speed vs OpenCV (x) | max / mean abs "
           "diff vs OpenCV |\n|---|---|---:|---:|---:|---:|\n");

    /* 1. piecewise warp: both write into a copy of the frame */
    if (ffu_image_copy(&frame, &out_cv) < 0) die("copy");
    b.out = &out_cv;
    double t_cv = measure(warp_cv, &b);
    if (ffu_image_copy(&frame, &warped) < 0 ||
        ffu_image_warp_piecewise(&face, &warped, b.sxy, b.dxy, NPTS, b.tri, NTRI, &cover) < 0)
        die("warp_piecewise");
    for (int isa = best; isa >= FFU_ISA_SCALAR; isa--) {
        if (ffu_image_copy(&frame, &out) < 0) die("copy");
        b.out = &out, b.isa = isa;
        double t = measure(warp_ffu, &b);
        int md;
        double mean;
        diff_stats(&out, &out_cv, &cover, &md, &mean);
        printf("| piecewise warp, %d triangles, 190x255 px face in 1280x720 | %s | %.3f | %.3f "
               "| %.2f | %d / %.3f |\n",
               NTRI, isa_name(isa), t, t_cv, t_cv / t, md, mean);
        fflush(stdout);
    }
    save(outdir, "warped_ffu.png", &warped);
    save(outdir, "warped_cv.png", &out_cv);

    /* 2. Gaussian blur of the oval mask */
    static const float sigmas[] = {5.0f, 15.0f};
    for (int s = 0; s < 2; s++) {
        b.mask = &mask, b.sigma = sigmas[s];
        b.blurred = &blurred_cv;
        t_cv = measure(blur_cv, &b);
        for (int isa = best; isa >= FFU_ISA_SCALAR; isa--) {
            b.blurred = &blurred, b.isa = isa;
            double t = measure(blur_ffu, &b);
            int md;
            double mean;
            diff_stats(&blurred, &blurred_cv, NULL, &md, &mean);
            printf("| Gaussian blur GRAY8 1280x720, sigma %g | %s | %.3f | %.3f | %.2f | %d / "
                   "%.4f |\n",
                   (double)sigmas[s], isa_name(isa), t, t_cv, t_cv / t, md, mean);
            fflush(stdout);
        }
    }
    save(outdir, "mask_blur15.png", &blurred);

    /* 3. Poisson clone of the warped face (inside the oval) into the original frame */
    b.face = &warped, b.cmask = &mask;
    int bx0 = W, bx1 = -1, by0 = H, by1 = -1;
    for (int y = 1; y < H - 1; y++)
        for (int x = 1; x < W - 1; x++)
            if (mask.data[0][(size_t)y * mask.stride[0] + x]) {
                if (x < bx0) bx0 = x;
                if (x > bx1) bx1 = x;
                if (y < by0) by0 = y;
                by1 = y;
            }
    /* seamlessClone centres the mask's box on p: p = box corner + half its size */
    b.px = bx0 + (bx1 - bx0 + 1) / 2, b.py = by0 + (by1 - by0 + 1) / 2;
    b.out = &out_cv;
    t_cv = measure(clone_cv, &b);
    if (ffu_clone_ctx_create(&b.ctx) < 0) die("ctx");
    b.out = &out;
    double t = measure(clone_ffu, &b);
    int md_in, md_all;
    double mean_in, mean_all;
    diff_stats(&out, &out_cv, &mask, &md_in, &mean_in);
    diff_stats(&out, &out_cv, NULL, &md_all, &mean_all);
    printf("| seamless clone, %dx%d box (face oval) in 1280x720 | multigrid, %d V-cycles | "
           "%.3f | %.3f | %.2f | %d / %.3f inside the mask; %d / %.4f whole frame |\n",
           bx1 - bx0 + 1, by1 - by0 + 1, b.cycles, t, t_cv, t_cv / t, md_in, mean_in, md_all,
           mean_all);
    /* OpenCV erodes the mask by three 3x3 steps (a 7x7 square) before it mixes the
     * gradients; the same erosion on our side shows how much of the difference that is. */
    ffu_image eroded;
    if (ffu_image_create(&eroded, FFU_PIX_GRAY8, W, H) < 0) die("create");
    for (int y = 3; y < H - 3; y++)
        for (int x = 3; x < W - 3; x++) {
            int all = 1;
            for (int j = -3; j <= 3 && all; j++)
                for (int i = -3; i <= 3; i++)
                    all &= mask.data[0][(size_t)(y + j) * mask.stride[0] + x + i] != 0;
            eroded.data[0][(size_t)y * eroded.stride[0] + x] = all ? 255 : 0;
        }
    ffu_image out_e;
    if (ffu_image_create(&out_e, FFU_PIX_RGB24, W, H) < 0 || ffu_image_copy(&frame, &out_e) < 0 ||
        ffu_image_seamless_clone(b.ctx, &warped, &eroded, &out_e, 0, 0) < 0)
        die("seamless_clone");
    diff_stats(&out_e, &out_cv, &eroded, &md_in, &mean_in);
    printf("\n(with the mask eroded by 3 px as OpenCV does internally: %d / %.3f inside the "
           "eroded mask",
           md_in, mean_in);
    diff_stats(&out_e, &out_cv, &mask, &md_in, &mean_in);
    printf(", %d / %.3f inside the mask)\n", md_in, mean_in);
    save(outdir, "clone_ffu_eroded.png", &out_e);
    ffu_image_release(&eroded), ffu_image_release(&out_e);
    /* How far the two differ from a plain paste, for scale. */
    int md_paste;
    double mean_paste;
    diff_stats(&warped, &out_cv, &mask, &md_paste, &mean_paste);
    printf("(for scale: the unblended warped face differs from OpenCV's clone by %d / %.3f "
           "inside the mask)\n",
           md_paste, mean_paste);
    save(outdir, "clone_ffu.png", &out);
    save(outdir, "clone_cv.png", &out_cv);
    ffu_clone_ctx_destroy(b.ctx);

    ffu_image_release(&face), ffu_image_release(&frame), ffu_image_release(&out);
    ffu_image_release(&out_cv), ffu_image_release(&mask), ffu_image_release(&blurred);
    ffu_image_release(&blurred_cv), ffu_image_release(&cover), ffu_image_release(&warped);
    return 0;
}
