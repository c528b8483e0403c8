/* Image kernel benchmark: megapixels of output per second on one core for resize
 * (bilinear down and up, area down) and affine warps (a rotation, a detector's
 * letterbox with its black bars, a face crop), for every facefuse code path,
 * against OpenCV and FFmpeg's libswscale in the same process on the same input. Also
 * prints the largest difference from OpenCV's output, a correctness check against the
 * peer. --cold writes 64 MiB before every timed run, so that the source comes from
 * memory. Build and run with bench/image/run. Not a test: nothing here passes or fails. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>

#include "facefuse/image.h"
#include "image/kernels_internal.h"

void peer_cv_init(void);
const char *peer_cv_version(void);
void peer_cv_resize(const uint8_t *src, int sw, int sh, int sstride, uint8_t *dst, int dw,
                    int dh, int dstride, int cn, int interp);
void peer_cv_warp(const uint8_t *src, int sw, int sh, int sstride, uint8_t *dst, int dw,
                  int dh, int dstride, int cn, const double m[6]);

static int g_runs = 50, g_warmup = 5;
/* --cold: before every run, write a buffer larger than the caches (the source then
 * comes from memory, as a face crop's does after the analysis' models ran) */
static char *g_flush;
static size_t g_flush_bytes;

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

/* One operation under test: `run` does it once on job's buffers. */
typedef struct job job;
struct job {
    const ffu_image *src;
    ffu_image *dst;
    ffu_interp interp;
    int isa;        /* facefuse path */
    int warp;       /* affine warp instead of resize */
    const double *m;
    struct SwsContext *sws;
    void (*run)(job *j);
};

static void run_ffu(job *j)
{
    ffu_status st = j->warp ? ffu_image_warp_affine_impl(j->src, j->dst, j->m, j->interp,
                                                         FFU_BORDER_CONSTANT, NULL, j->isa)
                            : ffu_image_resize_impl(j->src, j->dst, j->interp, j->isa);
    if (st < 0) {
        fprintf(stderr, "facefuse failed: %s\n", ffu_error_message());
        exit(1);
    }
}

static void run_cv(job *j)
{
    const ffu_image *s = j->src;
    ffu_image *d = j->dst;
    int cn = ffu_pixfmt_bpp(s->fmt);
    if (j->warp)
        peer_cv_warp(s->data[0], s->width, s->height, s->stride[0], d->data[0], d->width,
                     d->height, d->stride[0], cn, j->m);
    else
        peer_cv_resize(s->data[0], s->width, s->height, s->stride[0], d->data[0], d->width,
                       d->height, d->stride[0], cn, j->interp == FFU_INTERP_AREA);
}

static void run_sws(job *j)
{
    const uint8_t *const sp[4] = {j->src->data[0], NULL, NULL, NULL};
    const int ss[4] = {j->src->stride[0], 0, 0, 0};
    uint8_t *const dp[4] = {j->dst->data[0], NULL, NULL, NULL};
    const int ds[4] = {j->dst->stride[0], 0, 0, 0};
    sws_scale(j->sws, sp, ss, 0, j->src->height, dp, ds);
}

/* Median output megapixels per second over g_runs runs after g_warmup. */
static double measure(job *j)
{
    double *t = malloc(sizeof(double) * (size_t)g_runs);
    if (!t) exit(1);
    for (int i = 0; i < g_warmup; i++) j->run(j);
    for (int i = 0; i < g_runs; i++) {
        if (g_flush) memset(g_flush, i & 0xff, g_flush_bytes);
        double t0 = now_s();
        j->run(j);
        t[i] = now_s() - t0;
    }
    qsort(t, (size_t)g_runs, sizeof *t, cmp_double);
    double med = t[g_runs / 2];
    free(t);
    return (double)j->dst->width * j->dst->height / med * 1e-6;
}

static int max_abs_diff(const ffu_image *a, const ffu_image *b, double *frac_exact)
{
    int m = 0, bpp = ffu_pixfmt_bpp(a->fmt);
    size_t same = 0, total = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * bpp; x++) {
            int d = abs(a->data[0][(size_t)y * a->stride[0] + x] -
                        b->data[0][(size_t)y * b->stride[0] + x]);
            if (d > m) m = d;
            same += d == 0, total++;
        }
    if (frac_exact) *frac_exact = (double)same / (double)total;
    return m;
}

/* Deterministic "photo-like" test image: smooth shading, fine texture, hard edges and
 * noise, so no kernel gets an easy (flat or periodic) input. */
static void make_input(ffu_image *im)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int y = 0; y < im->height; y++) {
        uint8_t *p = im->data[0] + (size_t)y * im->stride[0];
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < 3; c++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                double v = 110 + 60 * sin(0.0031 * x + 0.0047 * y + c) +
                           35 * sin(0.21 * x + 0.7 * c) * cos(0.17 * y) +
                           (((x / 97) + (y / 61)) & 1 ? 30 : -30) + (double)(s % 41) - 20;
                p[3 * x + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    }
}

static const char *isa_name(int isa)
{
    return isa == FFU_ISA_AVX512 ? "avx512" : isa == FFU_ISA_AVX2 ? "avx2" : "scalar";
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) g_runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cold"))
            g_flush_bytes = (size_t)64 << 20;
        else {
            fprintf(stderr, "usage: bench_image [--runs N] [--cold]\n");
            return 2;
        }
    }
    if (g_runs < 1) g_runs = 1;
    if (g_flush_bytes && !(g_flush = malloc(g_flush_bytes))) return 1;
    peer_cv_init();
    char cpu[128], feat[256];
    ffu_cpu_name(cpu, sizeof cpu);
    ffu_cpu_features_string(ffu_cpu_features(), feat, sizeof feat);
    printf("CPU: %s (%s); one core; median of %d runs after %d warm-up%s; OpenCV %s, "
           "swscale %d.%d.%d\n\n",
           cpu, feat, g_runs, g_warmup, g_flush ? ", 64 MiB written before each run (--cold)" : "",
           peer_cv_version(), LIBSWSCALE_VERSION_MAJOR, LIBSWSCALE_VERSION_MINOR,
           LIBSWSCALE_VERSION_MICRO);

    ffu_image src;
    if (ffu_image_create(&src, FFU_PIX_RGB24, 1920, 1080) < 0) return 1;
    make_input(&src);

    /* Rotation by 15 degrees and scale 0.9 about the image centre, as dst -> src. */
    double ang = 15.0 * M_PI / 180.0, sc = 0.9, fwd[6], inv[6];
    fwd[0] = sc * cos(ang), fwd[1] = -sc * sin(ang), fwd[3] = sc * sin(ang), fwd[4] = sc * cos(ang);
    fwd[2] = 960 - fwd[0] * 960 - fwd[1] * 540, fwd[5] = 540 - fwd[3] * 960 - fwd[4] * 540;
    if (ffu_affine_invert(fwd, inv) < 0) return 1;
    /* A detector's letterbox: the frame scaled to 256 wide and centred in a 256x256
     * square (pixel centres mapped to pixel centres), black bars above and below. */
    const double lb_s = 1920.0 / 256;
    const double letterbox[6] = {lb_s, 0, 0.5 * lb_s - 0.5,
                                 0,    lb_s, 0.5 * lb_s - 0.5 - (256 * lb_s - 1080) / 2};

    /* A face crop: 192x192 around the frame's centre, levelled by 5 degrees, 1.6 source
     * pixels per output pixel (FaceMesh's input from a face about 250 px wide). */
    const double ca = 1.6 * cos(5.0 * M_PI / 180.0), sa = 1.6 * sin(5.0 * M_PI / 180.0);
    const double crop[6] = {ca, -sa, 960 - ca * 96 + sa * 96, sa, ca, 540 - sa * 96 - ca * 96};

    const struct {
        const char *name;
        int dw, dh;
        ffu_interp interp;
        int warp;
        const double *m; /* a warp's dst -> src matrix (NULL: the rotation above) */
    } ops[] = {
        {"bilinear 1920x1080 -> 1280x720", 1280, 720, FFU_INTERP_BILINEAR, 0, NULL},
        {"bilinear 1920x1080 -> 640x360", 640, 360, FFU_INTERP_BILINEAR, 0, NULL},
        {"bilinear 1920x1080 -> 2560x1440", 2560, 1440, FFU_INTERP_BILINEAR, 0, NULL},
        {"area 1920x1080 -> 640x360", 640, 360, FFU_INTERP_AREA, 0, NULL},
        {"area 1920x1080 -> 800x450", 800, 450, FFU_INTERP_AREA, 0, NULL},
        {"warp affine 15deg x0.9 bilinear 1920x1080", 1920, 1080, FFU_INTERP_BILINEAR, 1, NULL},
        {"warp letterbox 1920x1080 -> 256x256 bilinear", 256, 256, FFU_INTERP_BILINEAR, 1,
         letterbox},
        {"warp face crop 192x192, 5deg x1.6, bilinear", 192, 192, FFU_INTERP_BILINEAR, 1, crop},
    };
    int best = ffu_image_isa_best();
    printf("| operation | path | facefuse MP/s | OpenCV MP/s | swscale MP/s | ratio vs OpenCV "
           "| max abs diff vs OpenCV (exact %%) |\n");
    printf("|---|---|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        ffu_image ours, theirs, sws_out;
        if (ffu_image_create(&ours, FFU_PIX_RGB24, ops[k].dw, ops[k].dh) < 0 ||
            ffu_image_create(&theirs, FFU_PIX_RGB24, ops[k].dw, ops[k].dh) < 0 ||
            ffu_image_create(&sws_out, FFU_PIX_RGB24, ops[k].dw, ops[k].dh) < 0)
            return 1;
        const double *m = ops[k].m ? ops[k].m : inv;
        job cv = {&src, &theirs, ops[k].interp, 0, ops[k].warp, m, NULL, run_cv};
        double cv_mps = measure(&cv);
        double sws_mps = -1;
        if (!ops[k].warp && ops[k].interp == FFU_INTERP_BILINEAR) {
            job sj = {&src, &sws_out, ops[k].interp, 0, 0, NULL, NULL, run_sws};
            sj.sws = sws_getContext(1920, 1080, AV_PIX_FMT_RGB24, ops[k].dw, ops[k].dh,
                                    AV_PIX_FMT_RGB24, SWS_BILINEAR, NULL, NULL, NULL);
            if (sj.sws) {
                sws_mps = measure(&sj);
                sws_freeContext(sj.sws);
            }
        }
        for (int isa = best; isa >= FFU_ISA_SCALAR; isa--) {
            job fj = {&src, &ours, ops[k].interp, isa, ops[k].warp, m, NULL, run_ffu};
            double mps = measure(&fj);
            double exact;
            int diff = max_abs_diff(&ours, &theirs, &exact);
            char sws_txt[32] = "-";
            if (sws_mps > 0) snprintf(sws_txt, sizeof sws_txt, "%.0f", sws_mps);
            printf("| %s | %s | %.0f | %.0f | %s | %.2f | %d (%.2f%%) |\n", ops[k].name,
                   isa_name(isa), mps, cv_mps, sws_txt, mps / cv_mps, diff, 100 * exact);
            fflush(stdout);
        }
        ffu_image_release(&ours), ffu_image_release(&theirs), ffu_image_release(&sws_out);
    }
    ffu_image_release(&src);
    return 0;
}
