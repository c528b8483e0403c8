/* Face swap benchmark, facefuse side: one video through the mesh swapper as a plain
 * sequential loop on the calling thread (decode -> find_targets -> smooth -> apply ->
 * encode, every model, the decoder and the encoder on one thread), timing each stage
 * per frame. facefuse swap runs the same stages on a thread pool (ffu_swap_video); this
 * loop exists because per-stage numbers from a pool are wall clock summed over
 * threads that wait for each other's cores, while here each frame's stages are
 * measured one after the other, in wall time and in CPU time of this thread.
 *
 * It also writes what the OpenCV peer (peer_opencv.py) needs to do the same work: the
 * source photo's FaceMesh points and, per frame, the target's points after smoothing,
 * i.e. exactly the geometry our apply used.
 *
 *   bench_swap --source PHOTO --video IN --out OUT.mp4 [--preset P] [--blend B]
 *              [--frames N] [--dump POINTS.txt]
 *
 * Prints "per_frame_apply MS..." (apply's wall time, frame by frame), one line per
 * stage: "stage NAME median_ms mean_ms cpu_median_ms cpu_mean_ms" (cpu is -1 for the
 * inner swap stages, which the library times in wall clock only), then "frames N",
 * "faces N", "loop_s S", "loop_cpu_s S", "fps F". Not a test: driven by bench/swap/run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facefuse/swap.h"
#include "facefuse/video.h"

enum {
    S_DECODE,
    S_DETECT,
    S_LANDMARKS,
    S_SELECT,
    S_SMOOTH,
    S_WARP,
    S_MASK,
    S_COLOUR,
    S_BLEND,
    S_APPLY,
    S_ENCODE,
    S_TOTAL,
    S_COUNT
};
static const char *stage_names[S_COUNT] = {"decode", "detect", "landmarks", "select",
                                           "smooth", "warp",   "mask",      "colour",
                                           "blend",  "apply",  "encode",    "total"};
/* Stages with their own CPU-time measurement (top-level calls on this thread). */
static const int has_cpu[S_COUNT] = {1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1};

static double wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n <= 0) return -1;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n > 0 ? s / n : -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_swap --source PHOTO --video IN --out OUT.mp4 [--preset P]\n"
                    "                  [--blend feather|poisson] [--frames N] [--dump FILE]\n");
    exit(2);
}

static int fail(const char *what, ffu_status st)
{
    fprintf(stderr, "bench_swap: %s: %s (%d)\n", what, ffu_error_message(), (int)st);
    return 1;
}

/* The points a face's 468 FaceMesh landmarks put in the frame, x y pairs. */
static void dump_points(FILE *f, const ffu_face *face)
{
    for (int i = 0; i < 468; i++)
        fprintf(f, "%s%.3f %.3f", i ? " " : "", (double)face->landmarks[3 * i],
                (double)face->landmarks[3 * i + 1]);
    fputc('\n', f);
}

int main(int argc, char **argv)
{
    const char *source = NULL, *video = NULL, *out = NULL, *preset = "veryfast";
    const char *blend = NULL, *dump = NULL;
    long max_frames = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage();
        if (!strcmp(a, "--source"))
            source = argv[++i];
        else if (!strcmp(a, "--video"))
            video = argv[++i];
        else if (!strcmp(a, "--out"))
            out = argv[++i];
        else if (!strcmp(a, "--preset"))
            preset = argv[++i];
        else if (!strcmp(a, "--blend"))
            blend = argv[++i];
        else if (!strcmp(a, "--frames"))
            max_frames = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--dump"))
            dump = argv[++i];
        else
            usage();
    }
    if (!source || !video || !out) usage();

    /* What `facefuse swap --threads 1 --model-threads 1` configures, on this thread. */
    ffu_swapper_opts so;
    ffu_swapper_opts_default(&so);
    so.threads = 1;
    so.detect.m.threads = 1;
    so.landmarks.threads = 1;
    so.embed.threads = 1;
    if (blend) {
        if (strcmp(blend, "feather") && strcmp(blend, "poisson")) usage();
        so.blend = strcmp(blend, "poisson") ? FFU_SWAP_BLEND_FEATHER : FFU_SWAP_BLEND_POISSON;
    }
    ffu_swapper *sw = NULL, *probe = NULL;
    ffu_image photo = {0};
    ffu_status st;
    if ((st = ffu_image_load(source, FFU_PIX_RGB24, &photo)) < 0) return fail(source, st);
    if ((st = ffu_swapper_create(&so, &sw)) < 0 || (st = ffu_swapper_create(&so, &probe)) < 0)
        return fail("swapper", st);
    if ((st = ffu_swapper_set_source(sw, &photo, 1)) < 0) return fail("source", st);

    FILE *df = NULL;
    if (dump) {
        /* The source's points as set_source finds them: the largest face, with the
         * same detector and landmarker. */
        ffu_face_list src = {0};
        if ((st = ffu_swapper_find_targets(probe, &photo, &src)) < 0 || src.count < 1)
            return fail("source points", st < 0 ? st : FFU_ERR_NOT_FOUND);
        if (!(df = fopen(dump, "w"))) {
            perror(dump);
            return 1;
        }
        fprintf(df, "source %d %d\n", photo.width, photo.height);
        dump_points(df, &src.faces[0]);
        ffu_face_list_free(&src);
    }
    ffu_swapper_destroy(probe);

    ffu_video_reader_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.pixfmt = FFU_PIX_RGB24;
    ro.threads = 1;
    ffu_video_reader *rd = NULL;
    if ((st = ffu_video_reader_open(&rd, video, &ro)) < 0) return fail(video, st);
    const ffu_video_info *in = ffu_video_reader_info(rd);
    long cap = in->frame_count > 0 ? (long)in->frame_count + 16 : 4096;
    if (max_frames > 0 && max_frames < cap) cap = max_frames;
    ffu_video_writer_opts wo;
    memset(&wo, 0, sizeof wo);
    wo.width = in->width;
    wo.height = in->height;
    wo.fps_num = in->fps_num > 0 ? in->fps_num : 25;
    wo.fps_den = in->fps_num > 0 && in->fps_den > 0 ? in->fps_den : 1;
    wo.crf = 18;
    wo.preset = preset;
    wo.threads = 1;
    wo.format = "mp4";
    ffu_video_writer *wr = NULL;
    if ((st = ffu_video_writer_open(&wr, out, &wo)) < 0) return fail(out, st);
    ffu_swap_smoother *sm = NULL;
    if ((st = ffu_swap_smoother_create(0.5f, &sm)) < 0) return fail("smoother", st);

    double *wall[S_COUNT], *cpu[S_COUNT];
    for (int s = 0; s < S_COUNT; s++) {
        wall[s] = calloc((size_t)cap, sizeof(double));
        cpu[s] = calloc((size_t)cap, sizeof(double));
        if (!wall[s] || !cpu[s]) return fail("memory", FFU_ERR_NOMEM);
    }
    if (df) fprintf(df, "video %d %d\n", in->width, in->height);

    ffu_image frame = {0};
    ffu_face_list targets = {0};
    long n = 0, faces = 0;
    double loop_w0 = wall_ms(), loop_c0 = cpu_ms();
    for (; n < cap; n++) {
        double pts, w0 = wall_ms(), c0 = cpu_ms();
        st = ffu_video_reader_read(rd, &frame, &pts);
        if (st == FFU_EOF) break;
        if (st < 0) return fail("decode", st);
        double w1 = wall_ms(), c1 = cpu_ms();
        ffu_swap_timing a, b;
        ffu_swapper_timing_get(sw, &a);
        if ((st = ffu_swapper_find_targets(sw, &frame, &targets)) < 0)
            return fail("find_targets", st);
        double w2 = wall_ms(), c2 = cpu_ms();
        if ((st = ffu_swap_smoother_apply(sm, &targets, pts)) < 0) return fail("smooth", st);
        double w3 = wall_ms(), c3 = cpu_ms();
        if (targets.count > 0 && (st = ffu_swapper_apply(sw, &frame, &targets)) < 0)
            return fail("apply", st);
        double w4 = wall_ms(), c4 = cpu_ms();
        ffu_swapper_timing_get(sw, &b);
        if ((st = ffu_video_writer_write(wr, &frame, pts)) < 0) return fail("encode", st);
        double w5 = wall_ms(), c5 = cpu_ms();
        faces += targets.count;
        if (df) {
            fprintf(df, "frame %ld %d\n", n, targets.count);
            for (int i = 0; i < targets.count; i++)
                dump_points(df, &targets.faces[i]);
        }
        wall[S_DECODE][n] = w1 - w0, cpu[S_DECODE][n] = c1 - c0;
        wall[S_DETECT][n] = b.detect_ms - a.detect_ms;
        wall[S_LANDMARKS][n] = b.landmarks_ms - a.landmarks_ms;
        wall[S_SELECT][n] = b.select_ms - a.select_ms;
        wall[S_SMOOTH][n] = w3 - w2, cpu[S_SMOOTH][n] = c3 - c2;
        wall[S_WARP][n] = b.warp_ms - a.warp_ms;
        wall[S_MASK][n] = b.mask_ms - a.mask_ms;
        wall[S_COLOUR][n] = b.colour_ms - a.colour_ms;
        wall[S_BLEND][n] = b.blend_ms - a.blend_ms;
        wall[S_APPLY][n] = w4 - w3, cpu[S_APPLY][n] = c4 - c3;
        wall[S_ENCODE][n] = w5 - w4, cpu[S_ENCODE][n] = c5 - c4;
        wall[S_TOTAL][n] = w5 - w0, cpu[S_TOTAL][n] = c5 - c0;
        (void)c2;
    }
    /* The encoder's flush belongs to the run: counted in the loop's totals. */
    if ((st = ffu_video_writer_close(wr)) < 0) return fail("encoder flush", st);
    double loop_w = wall_ms() - loop_w0, loop_c = cpu_ms() - loop_c0;
    if (df && fclose(df) != 0) {
        perror(dump);
        return 1;
    }
    /* per frame, for medians over the frames the peer ran too */
    printf("per_frame_apply");
    for (long i = 0; i < n; i++)
        printf(" %.3f", wall[S_APPLY][i]);
    printf("\n");
    for (int s = 0; s < S_COUNT; s++) {
        double mw = mean(wall[s], (int)n), mc = has_cpu[s] ? mean(cpu[s], (int)n) : -1;
        double dw = median(wall[s], (int)n), dc = has_cpu[s] ? median(cpu[s], (int)n) : -1;
        printf("stage %s %.3f %.3f %.3f %.3f\n", stage_names[s], dw, mw, dc, mc);
        free(wall[s]);
        free(cpu[s]);
    }
    printf("frames %ld\nfaces %ld\nloop_s %.3f\nloop_cpu_s %.3f\nfps %.2f\n", n, faces,
           loop_w * 1e-3, loop_c * 1e-3, n > 0 ? n / (loop_w * 1e-3) : 0);
    ffu_face_list_free(&targets);
    ffu_image_release(&frame);
    ffu_image_release(&photo);
    ffu_swap_smoother_destroy(sm);
    ffu_video_reader_close(rd);
    ffu_swapper_destroy(sw);
    return 0;
}
