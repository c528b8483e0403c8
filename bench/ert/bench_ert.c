/* ERT 68-point benchmark: our shape predictor (src/face/ert.c) beside dlib's own
 * (Debian libdlib-dev, peer_dlib.cpp) in one process, on the same decoded pixels and
 * the same boxes: the 43 boxes of dlib's examples/faces (whose XML holds dlib's
 * points) and the 25 Helen faces of landmarks68 (box fitted to the ground truth as
 * tests/ert_data.h says, and dlib's HOG detector's boxes). Prints median time per
 * face, the largest and mean point difference from dlib, and the NME of both.
 * Not a test: driven by bench/ert/run. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ert_data.h"
#include "row_stream.h"
#include "face/ert.h"
#include "facefuse/image.h"

typedef struct peer_dlib peer_dlib;
typedef struct peer_dlib_image peer_dlib_image;
peer_dlib *peer_dlib_load(const char *path, char *err, size_t errlen);
void peer_dlib_free(peer_dlib *p);
peer_dlib_image *peer_dlib_image_new(const unsigned char *rgb, int w, int h, int stride);
void peer_dlib_image_free(peer_dlib_image *im);
int peer_dlib_predict(const peer_dlib *p, const peer_dlib_image *im, const long box[4], long *pts);
int peer_dlib_predict_float(const peer_dlib *p, const peer_dlib_image *im, const long box[4],
                            double *pts);
int peer_dlib_detect(peer_dlib *p, const peer_dlib_image *im, int upsample, long *boxes, int max);

#define MAX_FACES 128
#define MAX_IMAGES 64

typedef struct face {
    int img;   /* index into images */
    int helen; /* landmarks68 face (truth = annotation) vs dlib_faces (truth = dlib's XML) */
    long box[4];
    float truth[136];
    float ours[136];
    double dlibf[136];
    long dlibi[136];
    double t_ours, t_dlib; /* median seconds */
} face;

typedef struct image {
    char path[512];
    ffu_image rgb;
    peer_dlib_image *peer;
} image;

static image images[MAX_IMAGES];
static int nimages;
static face faces[MAX_FACES];
static int nfaces;

static int add_image(const char *path)
{
    for (int i = 0; i < nimages; i++)
        if (!strcmp(images[i].path, path)) return i;
    if (nimages == MAX_IMAGES) return -1;
    image *im = &images[nimages];
    snprintf(im->path, sizeof im->path, "%s", path);
    if (ffu_image_load(path, FFU_PIX_RGB24, &im->rgb) < 0) {
        fprintf(stderr, "bench_ert: %s\n", ffu_error_message());
        return -1;
    }
    im->peer =
        peer_dlib_image_new(im->rgb.data[0], im->rgb.width, im->rgb.height, im->rgb.stride[0]);
    return nimages++;
}

static void add_xml(const char *dir, const char *name)
{
    static ert_xml_face xf[MAX_FACES];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int n = ert_xml_read(path, xf, MAX_FACES);
    for (int i = 0; i < n && nfaces < MAX_FACES; i++) {
        if (snprintf(path, sizeof path, "%s/%s", dir, xf[i].image) >= (int)sizeof path) continue;
        int im = add_image(path);
        if (im < 0 || xf[i].nparts != 68) continue;
        face *f = &faces[nfaces++];
        memset(f, 0, sizeof *f);
        f->img = im;
        memcpy(f->box, xf[i].box, sizeof f->box);
        memcpy(f->truth, xf[i].parts, sizeof f->truth);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_helen(const char *dir, const float *mean)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[64];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".pts")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n && nfaces < MAX_FACES; i++) {
        char path[512];
        face *f = &faces[nfaces];
        memset(f, 0, sizeof *f);
        int ok = snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path &&
                 ert_pts_read(path, f->truth) == 0;
        names[i][strlen(names[i]) - 4] = 0; /* stem */
        if (ok && snprintf(path, sizeof path, "%s/%s.jpg", dir, names[i]) < (int)sizeof path) {
            f->img = add_image(path);
            if (f->img >= 0) {
                float b[4];
                ert_box_from_points(mean, f->truth, 68, b);
                for (int k = 0; k < 4; k++)
                    f->box[k] = (long)b[k];
                f->helen = 1;
                nfaces++;
            }
        }
        free(names[i]);
    }
}

static double iou(const long a[4], const long b[4])
{
    double x0 = fmax(a[0], b[0]), y0 = fmax(a[1], b[1]);
    double x1 = fmin(a[0] + a[2], b[0] + b[2]), y1 = fmin(a[1] + a[3], b[1] + b[3]);
    double in = fmax(0, x1 - x0) * fmax(0, y1 - y0);
    return in / ((double)a[2] * a[3] + (double)b[2] * b[3] - in);
}

int main(int argc, char **argv)
{
    const char *model = "/usr/share/dlib/shape_predictor_68_face_landmarks.dat";
    const char *data = FFU_BENCH_SHARED_DIR "/data";
    const char *dump = NULL;
    int runs = 21, verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else {
            fprintf(stderr,
                    "usage: bench_ert [--runs N] [--model DAT] [--data DIR] [--dump FILE] [-v]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;

    double t0 = bench_now();
    ert_model *m = NULL;
    if (ert_model_load(model, &m) < 0) {
        fprintf(stderr, "bench_ert: %s\n", ffu_error_message());
        return 1;
    }
    double t_load_ours = bench_now() - t0;
    char err[512];
    t0 = bench_now();
    peer_dlib *p = peer_dlib_load(model, err, sizeof err);
    if (!p) {
        fprintf(stderr, "bench_ert: dlib: %s\n", err);
        return 1;
    }
    double t_load_dlib = bench_now() - t0; /* two reads: shape_predictor + its parts */

    char dir[512];
    snprintf(dir, sizeof dir, "%s/dlib_faces", data);
    add_xml(dir, "training_with_face_landmarks.xml");
    add_xml(dir, "testing_with_face_landmarks.xml");
    int nxml = nfaces;
    snprintf(dir, sizeof dir, "%s/landmarks68", data);
    add_helen(dir, ert_model_mean_shape(m));
    if (!nfaces) {
        fprintf(stderr, "bench_ert: no faces under %s\n", data);
        return 1;
    }

    /* agreement */
    double maxd = 0, sumd = 0, max_xml = 0, sum_xml = 0;
    long same = 0, npts = 0, same_xml = 0, nxmlpts = 0;
    for (int i = 0; i < nfaces; i++) {
        face *f = &faces[i];
        float box[4] = {(float)f->box[0], (float)f->box[1], (float)f->box[2], (float)f->box[3]};
        if (ert_predict(m, &images[f->img].rgb, box, f->ours) < 0) {
            fprintf(stderr, "bench_ert: %s\n", ffu_error_message());
            return 1;
        }
        peer_dlib_predict(p, images[f->img].peer, f->box, f->dlibi);
        peer_dlib_predict_float(p, images[f->img].peer, f->box, f->dlibf);
        for (int k = 0; k < 68; k++) {
            double dx = f->ours[2 * k] - f->dlibf[2 * k],
                   dy = f->ours[2 * k + 1] - f->dlibf[2 * k + 1];
            double d = sqrt(dx * dx + dy * dy);
            maxd = fmax(maxd, d);
            sumd += d;
            npts++;
            same += floor(f->ours[2 * k] + 0.5) == f->dlibi[2 * k] &&
                    floor(f->ours[2 * k + 1] + 0.5) == f->dlibi[2 * k + 1];
            if (!f->helen) {
                dx = f->ours[2 * k] - f->truth[2 * k],
                dy = f->ours[2 * k + 1] - f->truth[2 * k + 1];
                d = sqrt(dx * dx + dy * dy);
                max_xml = fmax(max_xml, d);
                sum_xml += d;
                nxmlpts++;
                same_xml += floor(f->ours[2 * k] + 0.5) == f->truth[2 * k] &&
                            floor(f->ours[2 * k + 1] + 0.5) == f->truth[2 * k + 1];
            }
        }
    }

    if (dump) {
        /* dlib's float points per face: the golden file of tests/unit/test_face_ert.c */
        FILE *f = fopen(dump, "w");
        if (!f) {
            fprintf(stderr, "bench_ert: cannot write %s\n", dump);
            return 1;
        }
        fprintf(f,
                "# dlib 19.24 (Debian libdlib-dev) shape_predictor_68_face_landmarks.dat, float\n"
                "# points before dlib's final rounding, written by bench/ert/run --dump.\n"
                "# Per face: image (under shared/data), box left top width height, then\n"
                "# 68 x y pairs in dlib's pixel coordinates.\n");
        size_t dl = strlen(data);
        for (int i = 0; i < nfaces; i++) {
            const face *fc = &faces[i];
            const char *rel = images[fc->img].path;
            if (!strncmp(rel, data, dl) && rel[dl] == '/') rel += dl + 1;
            fprintf(f, "%s %ld %ld %ld %ld\n", rel, fc->box[0], fc->box[1], fc->box[2], fc->box[3]);
            for (int k = 0; k < 136; k++)
                fprintf(f, "%.4f%c", fc->dlibf[k], k == 135 ? '\n' : ' ');
        }
        fclose(f);
    }

    /* timing: faces interleaved, ours then dlib's, `runs` rounds */
    double *to = calloc((size_t)nfaces * (size_t)runs, sizeof(double));
    double *td = calloc((size_t)nfaces * (size_t)runs, sizeof(double));
    float pts[136];
    long ipts[136];
    for (int r = 0; r < runs; r++)
        for (int i = 0; i < nfaces; i++) {
            face *f = &faces[i];
            float box[4] = {(float)f->box[0], (float)f->box[1], (float)f->box[2], (float)f->box[3]};
            double a = bench_now();
            ert_predict(m, &images[f->img].rgb, box, pts);
            double b = bench_now();
            peer_dlib_predict(p, images[f->img].peer, f->box, ipts);
            double c = bench_now();
            to[(size_t)i * runs + r] = b - a;
            td[(size_t)i * runs + r] = c - b;
        }
    double fo[MAX_FACES], fd[MAX_FACES], ratio[MAX_FACES];
    for (int i = 0; i < nfaces; i++) {
        faces[i].t_ours = bench_median(to + (size_t)i * runs, runs);
        faces[i].t_dlib = bench_median(td + (size_t)i * runs, runs);
        fo[i] = faces[i].t_ours;
        fd[i] = faces[i].t_dlib;
        ratio[i] = faces[i].t_dlib / faces[i].t_ours;
    }
    double mo = bench_median(fo, nfaces), md = bench_median(fd, nfaces),
           mr = bench_median(ratio, nfaces);
    row_stream rs;
    int rs_ok = ert_row_stream(m, runs, verbose, &rs);
    /* ours with each row prefetch forced, against the one chosen at load */
    int chosen = ert_model_row_prefetch_l2(m);
    double t_hint[2];
    for (int h = 0; h < 2; h++) {
        ert_model_set_row_prefetch_l2(m, h);
        for (int r = 0; r < runs; r++)
            for (int i = 0; i < nfaces; i++) {
                face *f = &faces[i];
                float box[4] = {(float)f->box[0], (float)f->box[1], (float)f->box[2],
                                (float)f->box[3]};
                double a = bench_now();
                ert_predict(m, &images[f->img].rgb, box, pts);
                to[(size_t)i * runs + r] = bench_now() - a;
            }
        double per[MAX_FACES];
        for (int i = 0; i < nfaces; i++)
            per[i] = bench_median(to + (size_t)i * runs, runs);
        t_hint[h] = bench_median(per, nfaces);
    }
    ert_model_set_row_prefetch_l2(m, chosen);

    /* NME on Helen: our box rule, and dlib's HOG boxes (1x upsampled, as dlib's examples) */
    double nme_ours = 0, nme_dlib_gtbox = 0, nme_hog_ours = 0, nme_hog_dlib = 0;
    int nhelen = 0, nhog = 0;
    double hog_dx = 0, hog_dy = 0, hog_scale = 0;
    for (int i = 0; i < nfaces; i++) {
        face *f = &faces[i];
        if (!f->helen) continue;
        float dl[136];
        for (int k = 0; k < 136; k++)
            dl[k] = (float)f->dlibf[k];
        nme_ours += ert_nme68(f->ours, f->truth);
        nme_dlib_gtbox += ert_nme68(dl, f->truth);
        nhelen++;
        long boxes[4 * 16];
        int nd = peer_dlib_detect(p, images[f->img].peer, 1, boxes, 16), best = -1;
        double bi = 0.3;
        for (int k = 0; k < nd; k++)
            if (iou(boxes + 4 * k, f->box) > bi) bi = iou(boxes + 4 * k, f->box), best = k;
        if (best < 0) continue;
        long *hb = boxes + 4 * best;
        long ip[136];
        float hp[136], hd[136];
        float box[4] = {(float)hb[0], (float)hb[1], (float)hb[2], (float)hb[3]};
        ert_predict(m, &images[f->img].rgb, box, hp);
        peer_dlib_predict(p, images[f->img].peer, hb, ip);
        for (int k = 0; k < 136; k++)
            hd[k] = (float)ip[k];
        nme_hog_ours += ert_nme68(hp, f->truth);
        nme_hog_dlib += ert_nme68(hd, f->truth);
        hog_dx += (double)(hb[0] + hb[2] * 0.5 - (f->box[0] + f->box[2] * 0.5)) / (double)hb[2];
        hog_dy += (double)(hb[1] + hb[3] * 0.5 - (f->box[1] + f->box[3] * 0.5)) / (double)hb[3];
        hog_scale += (double)hb[2] / (double)f->box[2];
        nhog++;
    }

    char cpu[128];
    printf("ERT 68-point: %d faces (%d dlib examples/faces boxes, %d Helen), %d timed runs each\n",
           nfaces, nxml, nfaces - nxml, runs);
    printf("CPU: %s, leaf sum: %s\n\n", ffu_cpu_name(cpu, sizeof cpu),
           ert_sum_rows_pick() == ert_sum_rows_avx512 ? "avx512"
           : ert_sum_rows_pick() == ert_sum_rows_avx2 ? "avx2"
                                                      : "c");
    printf("| | facefuse | dlib 19.24 | ratio |\n|---|---:|---:|---:|\n");
    printf("| median time per face | %.1f us | %.1f us | %.2fx |\n", mo * 1e6, md * 1e6, md / mo);
    printf("| median per-face speed-up | | | %.2fx |\n", mr);
    printf("| model load | %.2f s | %.2f s (two reads) | |\n\n", t_load_ours, t_load_dlib);
    if (rs_ok == 0)
        printf(
            "Leaf rows alone (bench/ert/row_stream.c): one face's %.2f MB of rows, one at random\n"
            "per tree, stream from memory in %.1f us (%.1f GB/s; fastest scheme: %s; a\n"
            "sequential read of the leaves: %.1f GB/s). That stream is the bulk of an ERT with\n"
            "dlib's exact leaves; dlib's median above is %.2fx its time.\n\n",
            rs.bytes / 1e6, rs.best_s * 1e6, rs.rows_gbs, rs.best_scheme, rs.seq_gbs,
            md / rs.best_s);
    printf("Row prefetch chosen at load: %s. Ours with each forced (faces alone, no dlib\n"
           "between them): prefetcht0 %.1f us, prefetcht1 %.1f us per face.\n\n",
           chosen ? "prefetcht1 (L2)" : "prefetcht0 (L1)", t_hint[0] * 1e6, t_hint[1] * 1e6);
    printf("Agreement with dlib on the same boxes (%ld points):\n", npts);
    printf("- float points vs dlib's float cascade: max %.3g px, mean %.3g px\n", maxd,
           sumd / (double)npts);
    printf("- rounded points equal to dlib's public API (integer parts): %ld / %ld\n", same, npts);
    if (nxmlpts)
        printf("- vs the points in dlib's XML files: max %.3f px, mean %.3f px, rounded equal %ld "
               "/ %ld\n",
               max_xml, sum_xml / (double)nxmlpts, same_xml, nxmlpts);
    if (nhelen) {
        printf("\nNME (inter-ocular, points 36/45) on %d Helen faces:\n", nhelen);
        printf("- box fitted to the truth (tests/ert_data.h): facefuse %.4f, dlib %.4f\n",
               nme_ours / nhelen, nme_dlib_gtbox / nhelen);
        if (nhog)
            printf("- dlib HOG boxes (upsample 1; %d of %d faces found): facefuse %.4f, dlib %.4f\n"
                   "  HOG box vs fitted box: centre offset %+.3f, %+.3f box widths, scale %.3f\n",
                   nhog, nhelen, nme_hog_ours / nhog, nme_hog_dlib / nhog, hog_dx / nhog,
                   hog_dy / nhog, hog_scale / nhog);
    }
    free(to);
    free(td);
    for (int i = 0; i < nimages; i++) {
        ffu_image_release(&images[i].rgb);
        peer_dlib_image_free(images[i].peer);
    }
    peer_dlib_free(p);
    ert_model_free(m);
    return 0;
}
