/* YuNet detection benchmark, facefuse side: times ffu_detector_detect through the
 * public API (one thread) on each image given, and prints the median and the faces
 * found, so that bench/yunet/run can set them beside OpenCV's (peer_opencv.py) on the
 * same pixels. Not a test: timings only.
 *
 *   bench_yunet [--model SPEC] [--runs N] [--warmup N] [--score S] [--nms IOU]
 *               [--own-size 0|1] IMAGE...
 *
 * SPEC is a zoo name or FAMILY:PATH (yunet, yunet-dynamic, yunet2022); score
 * and NMS default to the OpenCV zoo demo's 0.75 and 0.3.
 *
 * Output, one block per image:
 *   img PATH W H MEDIAN_MS NFACES
 *   face X Y W H SCORE          (NFACES lines, best first)
 * With --own-size 1 (the default for yunet-dynamic) a dynamic-input net is fed the
 * image's own size (input_size = longest side, sides rounded up to 32), as OpenCV's
 * FaceDetectorYN does after setInputSize(image size). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facefuse/face.h"
#include "facefuse/image.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct bench_cfg {
    const char *model;
    int runs, warmup, own_size;
    float score, nms;
} bench_cfg;

static int bench_one(const bench_cfg *c, const char *path)
{
    ffu_image img;
    ffu_status st = ffu_image_load(path, FFU_PIX_BGR24, &img);
    if (st) {
        fprintf(stderr, "bench_yunet: %s\n", ffu_error_message());
        return 1;
    }
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = c->model;
    o.m.threads = 1;
    o.min_score = c->score; /* the same on the peer side */
    o.nms_iou = c->nms;
    if (c->own_size)
        o.input_size = img.width > img.height ? img.width : img.height;
    ffu_detector *d = NULL;
    ffu_face_list faces = {0};
    int runs = c->runs, warmup = c->warmup;
    double *t = calloc((size_t)runs, sizeof *t);
    int rc = 1;
    if (!t || (st = ffu_detector_create(&o, &d))) {
        fprintf(stderr, "bench_yunet: %s\n", t ? ffu_error_message() : "out of memory");
        goto done;
    }
    for (int i = 0; i < warmup + runs; i++) {
        double t0 = now_ms();
        st = ffu_detector_detect(d, &img, &faces);
        double t1 = now_ms();
        if (st) {
            fprintf(stderr, "bench_yunet: %s: %s\n", path, ffu_error_message());
            goto done;
        }
        if (i >= warmup)
            t[i - warmup] = t1 - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double med = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
    printf("img %s %d %d %.3f %d\n", path, img.width, img.height, med, faces.count);
    for (int i = 0; i < faces.count; i++) {
        const ffu_face *f = &faces.faces[i];
        printf("face %.2f %.2f %.2f %.2f %.4f\n", f->box[0], f->box[1], f->box[2], f->box[3],
               f->score);
    }
    fflush(stdout);
    rc = 0;
done:
    free(t);
    ffu_face_list_free(&faces);
    ffu_detector_destroy(d);
    ffu_image_release(&img);
    return rc;
}

int main(int argc, char **argv)
{
    bench_cfg c = {"yunet", 30, 5, -1, 0.75f, 0.3f};
    int rc = 0, first = 1;
    for (; first < argc && !strncmp(argv[first], "--", 2); first += 2) {
        if (first + 1 >= argc)
            break;
        if (!strcmp(argv[first], "--model"))
            c.model = argv[first + 1];
        else if (!strcmp(argv[first], "--runs"))
            c.runs = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--warmup"))
            c.warmup = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--score"))
            c.score = (float)atof(argv[first + 1]);
        else if (!strcmp(argv[first], "--nms"))
            c.nms = (float)atof(argv[first + 1]);
        else if (!strcmp(argv[first], "--own-size"))
            c.own_size = atoi(argv[first + 1]);
        else
            break;
    }
    if (first >= argc || c.runs < 1 || c.warmup < 0 || !(c.score >= 0 && c.score <= 1) ||
        !(c.nms >= 0 && c.nms <= 1)) {
        fprintf(stderr, "usage: bench_yunet [--model SPEC] [--runs N] [--warmup N] "
                        "[--score S] [--nms IOU] [--own-size 0|1] IMAGE...\n");
        return 2;
    }
    if (c.own_size < 0)
        c.own_size = !strcmp(c.model, "yunet-dynamic");
    for (int i = first; i < argc; i++)
        rc |= bench_one(&c, argv[i]);
    return rc;
}
