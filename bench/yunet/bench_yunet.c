/* YuNet detection benchmark, facefuse side: times ffu_detector_detect through the
 * public API (one thread) on each image given, and prints the median and the faces
 * found, so that bench/yunet/run can set them beside OpenCV's (peer_opencv.py) on the
 * same pixels. Not a test: timings only.
 *
 *   bench_yunet [--model yunet|yunet-dynamic] [--runs N] [--warmup N] IMAGE...
 *
 * Output, one block per image:
 *   img PATH W H MEDIAN_MS NFACES
 *   face X Y W H SCORE          (NFACES lines, best first)
 * With yunet-dynamic the net is fed the image's own size (input_size = longest side),
 * as OpenCV's FaceDetectorYN does after setInputSize(image size). */
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

static int bench_one(const char *model, const char *path, int runs, int warmup)
{
    ffu_image img;
    ffu_status st = ffu_image_load(path, FFU_PIX_BGR24, &img);
    if (st) {
        fprintf(stderr, "bench_yunet: %s\n", ffu_error_message());
        return 1;
    }
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = model;
    o.m.threads = 1;
    o.min_score = 0.75f; /* OpenCV zoo demo settings, the same on the peer side */
    o.nms_iou = 0.3f;
    if (!strcmp(model, "yunet-dynamic"))
        o.input_size = img.width > img.height ? img.width : img.height;
    ffu_detector *d = NULL;
    ffu_face_list faces = {0};
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
    const char *model = "yunet";
    int runs = 30, warmup = 5, rc = 0, first = 1;
    for (; first < argc && !strncmp(argv[first], "--", 2); first += 2) {
        if (first + 1 >= argc)
            break;
        if (!strcmp(argv[first], "--model"))
            model = argv[first + 1];
        else if (!strcmp(argv[first], "--runs"))
            runs = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--warmup"))
            warmup = atoi(argv[first + 1]);
        else
            break;
    }
    if (first >= argc || runs < 1 || warmup < 0) {
        fprintf(stderr, "usage: bench_yunet [--model yunet|yunet-dynamic] [--runs N] "
                        "[--warmup N] IMAGE...\n");
        return 2;
    }
    for (int i = first; i < argc; i++)
        rc |= bench_one(model, argv[i], runs, warmup);
    return rc;
}
