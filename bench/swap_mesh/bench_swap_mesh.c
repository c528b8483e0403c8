/* Mesh swapper benchmark: per-stage times of find_targets and apply on a 720p frame with
 * one face, and the blending choice (feather vs Poisson, with each colour mode) measured
 * for quality and speed on real photo pairs:
 *   - identity: cosine similarity (default embedder) of the output face to the source
 *     and to the original target;
 *   - seam: mean gradient magnitude in the band just inside the face oval (where the
 *     blend meets the frame), output over original: 1.00 = no added edges;
 *   - colour: distance in Lab between the means of the output and of the original
 *     target over the face (how well the swapped skin matches the frame).
 * Inputs from ../shared/data/face_recognition_examples. Not a test: nothing here passes
 * or fails. Build and run with bench/swap_mesh/run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/facefuse.h"
#include "face/face_internal.h"
#include "swap/mesh_internal.h"

static char g_data[1024] = "../shared/data/face_recognition_examples/examples";
static int g_runs = 40;

static int load(const char *name, ffu_image *img)
{
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", g_data, name);
    if (ffu_image_load(p, FFU_PIX_RGB24, img) != FFU_OK) {
        fprintf(stderr, "bench: %s\n", ffu_error_message());
        return 0;
    }
    return 1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n ? v[n / 2] : 0;
}

/* ---- per-stage times on a 720p frame -------------------------------------------------- */

enum { S_DET, S_LM, S_SEL, S_WARP, S_MASK, S_COL, S_BLEND, S_FIND, S_APPLY, S_N };
static const char *stage_names[S_N] = {"detect", "landmarks", "select",       "warp", "mask",
                                       "colour", "blend",     "find_targets", "apply"};

static void stage_times(const char *title, ffu_swapper_opts *o, const ffu_image *src,
                        const ffu_image *frame)
{
    ffu_swapper *sw;
    if (ffu_swapper_create(o, &sw) || ffu_swapper_set_source(sw, src, 1)) {
        fprintf(stderr, "bench: %s\n", ffu_error_message());
        return;
    }
    static double v[S_N][1000];
    ffu_image work = {0};
    ffu_image_clone(&work, frame);
    ffu_face_list t = {0};
    int n = 0;
    for (int r = 0; r < g_runs + 3 && n < 1000; r++) {
        ffu_image_copy(frame, &work);
        ffu_swap_timing a, b;
        ffu_swapper_timing_get(sw, &a);
        int64_t t0 = ffu_clock_ns();
        ffu_swapper_find_targets(sw, &work, &t);
        int64_t t1 = ffu_clock_ns();
        ffu_swapper_apply(sw, &work, &t);
        int64_t t2 = ffu_clock_ns();
        ffu_swapper_timing_get(sw, &b);
        if (r < 3) continue; /* warm-up: models and scratch sized */
        v[S_DET][n] = b.detect_ms - a.detect_ms;
        v[S_LM][n] = b.landmarks_ms - a.landmarks_ms;
        v[S_SEL][n] = b.select_ms - a.select_ms;
        v[S_WARP][n] = b.warp_ms - a.warp_ms;
        v[S_MASK][n] = b.mask_ms - a.mask_ms;
        v[S_COL][n] = b.colour_ms - a.colour_ms;
        v[S_BLEND][n] = b.blend_ms - a.blend_ms;
        v[S_FIND][n] = (double)(t1 - t0) * 1e-6;
        v[S_APPLY][n] = (double)(t2 - t1) * 1e-6;
        n++;
    }
    float bx[4];
    float ow = t.count ? mesh_oval_bounds(t.faces[0].landmarks, bx) : 0;
    printf("\n%s: %dx%d frame, %d face(s), oval %.0f px wide, median of %d runs (ms)\n\n", title,
           frame->width, frame->height, t.count, (double)ow, n);
    printf("| stage | ms |\n| --- | ---: |\n");
    for (int s = 0; s < S_N; s++)
        printf("| %s%s%s | %s%.2f%s |\n", s >= S_FIND ? "**" : "", stage_names[s],
               s >= S_FIND ? "**" : "", s >= S_FIND ? "**" : "", median(v[s], n),
               s >= S_FIND ? "**" : "");
    ffu_face_list_free(&t);
    ffu_image_release(&work);
    ffu_swapper_destroy(sw);
}

/* ---- quality of the blending choices --------------------------------------------------- */

typedef struct idtool {
    ffu_detector *det;
    ffu_landmarker *lm;
    ffu_embedder *emb;
    ffu_face_list l;
} idtool;

static int embed(idtool *t, const ffu_image *img, float *e)
{
    if (ffu_detector_detect(t->det, img, &t->l) || t->l.count == 0) return 0;
    ffu_face *f = &t->l.faces[face_list_largest(&t->l)];
    if (ffu_landmarker_run(t->lm, img, f) || ffu_embedder_run(t->emb, img, f, 1)) return 0;
    memcpy(e, f->embedding, (size_t)f->embedding_dim * sizeof *e);
    return f->embedding_dim;
}

/* seam: gradient in the band inside the oval (oval mask blurred below 90%), output over
 * original; colour: Lab distance of the means over the oval */
static void seam_colour(const ffu_image *orig, const ffu_image *out, const ffu_face *f,
                        double *seam, double *colour)
{
    float b[4];
    float ow = mesh_oval_bounds(f->landmarks, b);
    int x0 = (int)b[0] - 2, y0 = (int)b[1] - 2, x1 = (int)b[2] + 3, y1 = (int)b[3] + 3;
    x0 = x0 < 1 ? 1 : x0, y0 = y0 < 1 ? 1 : y0;
    x1 = x1 > orig->width - 1 ? orig->width - 1 : x1,
    y1 = y1 > orig->height - 1 ? orig->height - 1 : y1;
    ffu_image m = {0}, bl = {0};
    ffu_image_create(&m, FFU_PIX_GRAY8, orig->width, orig->height);
    ffu_image_create(&bl, FFU_PIX_GRAY8, orig->width, orig->height);
    float pts[2 * MESH_OVAL_N];
    for (int i = 0; i < MESH_OVAL_N; i++) {
        pts[2 * i] = f->landmarks[3 * mesh_oval[i]] - 0.5f;
        pts[2 * i + 1] = f->landmarks[3 * mesh_oval[i] + 1] - 0.5f;
    }
    ffu_mask_fill_polygon(&m, pts, MESH_OVAL_N, 255);
    ffu_mask_gaussian_blur(&m, &bl, fminf(100.0f, 0.04f * ow));
    double g_out = 0, g_org = 0, lo[3] = {0}, lt[3] = {0};
    long nb = 0, nf = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            size_t mi = (size_t)y * m.stride[0] + x;
            if (!m.data[0][mi]) continue;
            const uint8_t *po = out->data[0] + (size_t)y * out->stride[0] + 3 * x;
            const uint8_t *pt = orig->data[0] + (size_t)y * orig->stride[0] + 3 * x;
            float a[3], c[3];
            ffu_color_rgb_to_lab(po, a);
            ffu_color_rgb_to_lab(pt, c);
            for (int k = 0; k < 3; k++)
                lo[k] += a[k], lt[k] += c[k];
            nf++;
            if (bl.data[0][mi] >= 230) continue;
            for (int k = 0; k < 3; k++) {
                g_out += fabs((double)po[k + 3] - po[k - 3]) +
                         fabs((double)po[k + out->stride[0]] - po[k - out->stride[0]]);
                g_org += fabs((double)pt[k + 3] - pt[k - 3]) +
                         fabs((double)pt[k + orig->stride[0]] - pt[k - orig->stride[0]]);
            }
            nb++;
        }
    *seam = g_org > 0 ? g_out / g_org : 0;
    double d2 = 0;
    for (int k = 0; k < 3; k++)
        d2 += (lo[k] / nf - lt[k] / nf) * (lo[k] / nf - lt[k] / nf);
    *colour = sqrt(d2);
    ffu_image_release(&m);
    ffu_image_release(&bl);
}

static void quality(void)
{
    static const char *pairs[][2] = {
        {"obama.jpg", "biden.jpg"},
        {"biden.jpg", "obama2.jpg"},
        {"lin-manuel-miranda.png", "obama-720p.jpg"},
        {"alex-lacamoire.png", "knn_examples/train/rose_leslie/img1.jpg"},
        {"knn_examples/train/kit_harington/john1.jpeg", "knn_examples/train/biden/biden2.jpg"},
    };
    const int np = 5;
    idtool id = {0};
    ffu_detector_opts d;
    ffu_detector_opts_default(&d);
    ffu_landmarker_opts lo;
    ffu_landmarker_opts_default(&lo);
    ffu_face_model_opts e = {0};
    if (ffu_detector_create(&d, &id.det) || ffu_landmarker_create(&lo, &id.lm) ||
        ffu_embedder_create(&e, &id.emb)) {
        fprintf(stderr, "bench: %s\n", ffu_error_message());
        return;
    }
    printf("\nBlending and colour on %d real pairs (means; apply ms = colour + blend stages)\n\n",
           np);
    printf(
        "| blend | colour | sim to source | sim to target | seam (1 = none) | colour dist (Lab) | "
        "colour+blend ms |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    double before = 0;
    for (int v = 0; v < 6; v++) {
        double s_src = 0, s_tgt = 0, seam = 0, col = 0, ms = 0;
        int ok = 0;
        for (int p = 0; p < np; p++) {
            ffu_image src = {0}, tgt = {0}, out = {0};
            if (!load(pairs[p][0], &src) || !load(pairs[p][1], &tgt)) continue;
            ffu_swapper_opts o;
            ffu_swapper_opts_default(&o);
            o.threads = 1;
            o.blend = v >= 3 ? FFU_SWAP_BLEND_POISSON : FFU_SWAP_BLEND_FEATHER;
            o.colour = (ffu_swap_colour)(v % 3);
            ffu_swapper *sw;
            ffu_face_list t = {0};
            if (ffu_swapper_create(&o, &sw) || ffu_swapper_set_source(sw, &src, 1) ||
                ffu_image_clone(&out, &tgt) || ffu_swapper_find_targets(sw, &out, &t) || !t.count) {
                fprintf(stderr, "bench: %s: %s\n", pairs[p][1], ffu_error_message());
                continue;
            }
            ffu_swap_timing a, b;
            double best = 1e30;
            for (int r = 0; r < 5; r++) { /* the fastest of 5: the least disturbed */
                ffu_image_copy(&tgt, &out);
                ffu_swapper_timing_get(sw, &a);
                ffu_swapper_apply(sw, &out, &t);
                ffu_swapper_timing_get(sw, &b);
                double c = b.colour_ms - a.colour_ms + b.blend_ms - a.blend_ms;
                best = c < best ? c : best;
            }
            float es[FFU_FACE_MAX_EMBED], et[FFU_FACE_MAX_EMBED], eo[FFU_FACE_MAX_EMBED];
            int dim = embed(&id, &src, es);
            if (dim && embed(&id, &tgt, et) == dim && embed(&id, &out, eo) == dim) {
                s_src += ffu_face_similarity(eo, es, dim);
                s_tgt += ffu_face_similarity(eo, et, dim);
                if (v == 0) before += ffu_face_similarity(et, es, dim);
                double sm, cd;
                seam_colour(&tgt, &out, &t.faces[0], &sm, &cd);
                seam += sm, col += cd, ms += best;
                ok++;
            }
            ffu_face_list_free(&t);
            ffu_swapper_destroy(sw);
            ffu_image_release(&src);
            ffu_image_release(&tgt);
            ffu_image_release(&out);
        }
        static const char *cn[] = {"none", "lab", "multiscale"};
        if (ok)
            printf("| %s | %s | %.3f | %.3f | %.2f | %.1f | %.2f |\n",
                   v >= 3 ? "poisson" : "feather", cn[v % 3], s_src / ok, s_tgt / ok, seam / ok,
                   col / ok, ms / ok);
        if (v == 0 && ok) printf("| (input) | | %.3f | 1 | 1 | 0 | |\n", before / ok);
    }
    ffu_face_list_free(&id.l);
    ffu_detector_destroy(id.det);
    ffu_landmarker_destroy(id.lm);
    ffu_embedder_destroy(id.emb);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            snprintf(g_data, sizeof g_data, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            g_runs = atoi(argv[++i]);
    }
    ffu_image src = {0}, frame = {0};
    if (!load("lin-manuel-miranda.png", &src) || !load("obama-720p.jpg", &frame)) return 1;
    ffu_swapper_opts o;
    ffu_swapper_opts_default(&o);
    o.threads = 1; /* one worker per core in video: each model on one thread */
    stage_times("Default mesh swapper (feather, Lab), one thread", &o, &src, &frame);
    o.blend = FFU_SWAP_BLEND_POISSON;
    stage_times("Poisson blending, Lab, one thread", &o, &src, &frame);
    o.blend = FFU_SWAP_BLEND_FEATHER;
    o.colour = FFU_SWAP_COLOUR_MULTISCALE;
    stage_times("Feather, multi-scale colour, one thread", &o, &src, &frame);
    quality();
    ffu_image_release(&src);
    ffu_image_release(&frame);
    return 0;
}
