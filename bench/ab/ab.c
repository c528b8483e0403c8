/* Two builds of libfacefuse in one process: the same models, run in sequence as the
 * face analysis runs them, on build A and on build B, alternating per iteration (the
 * order flipped every time). This VM's speed moves between runs a minute apart, so
 * two binaries run one after the other compare badly; here both builds see the same
 * minutes, and each build's models evict the other's from the caches, as the stages
 * of an analysis do. Prints each model's median and the whole sequence's median and
 * minimum, B against A. Not a test: timings only. Loaded with dlopen (RTLD_LOCAL |
 * RTLD_DEEPBIND), so the two libraries' symbols stay apart.
 *
 * A MODEL ending in .dat is a dlib shape predictor, run by the "dlib68" landmarker (our
 * ERT) on every face of FACES (tests/fixtures/ert/dlib_points.txt: an image under DATA
 * and a box per face) once per iteration; its time is per face.
 *
 * --a-opts / --b-opts LIST set session options of one side's models (LIST: no_bands,
 * no_winograd, bf16, threads=N (default 1), comma-separated), so that one build against
 * itself compares options under the same conditions as two builds. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facefuse/face.h"
#include "facefuse/nn.h"

enum { MAX_MODELS = 16, MAX_FACES = 256 };

typedef ffu_status (*load_fn)(const char *, ffu_nn_model **);
typedef void (*opts_fn)(ffu_nn_session_opts *);
typedef ffu_status (*create_fn)(ffu_nn_model *, const ffu_nn_session_opts *, ffu_nn_session **);
typedef ffu_status (*input_fn)(ffu_nn_session *, int, ffu_nn_tensor *);
typedef ffu_status (*run_fn)(ffu_nn_session *);

typedef void (*lm_opts_fn)(ffu_landmarker_opts *);
typedef ffu_status (*lm_create_fn)(const ffu_landmarker_opts *, ffu_landmarker **);
typedef ffu_status (*lm_run_fn)(ffu_landmarker *, const ffu_image *, ffu_face *);
typedef ffu_status (*image_load_fn)(const char *, ffu_pixfmt, ffu_image *);

/* Session options that --a-opts / --b-opts can set. */
typedef struct side_opts {
    int no_bands, no_winograd, bf16;
    int threads; /* 0: one */
} side_opts;

typedef struct build {
    side_opts opts;
    input_fn input;
    run_fn run;
    lm_run_fn lm_run;
    ffu_nn_session *s[MAX_MODELS];
    ffu_landmarker *lm[MAX_MODELS]; /* set for a .dat model, instead of s */
    ffu_face face[MAX_FACES];       /* the build's own landmark buffers */
} build;

/* The faces of the ERT models: images loaded once (by the first build) and boxes. */
static ffu_image images[MAX_FACES];
static float boxes[MAX_FACES][4];
static int nfaces;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int is_ert(const char *model)
{
    size_t n = strlen(model);
    return n > 4 && !strcmp(model + n - 4, ".dat");
}

/* Reads FACES: "IMAGE LEFT TOP WIDTH HEIGHT" lines (IMAGE under data), each followed by
 * a line of points, which is skipped; '#' lines are comments. */
static int read_faces(const char *list, const char *data, image_load_fn load)
{
    FILE *f = fopen(list, "r");
    if (!f) {
        fprintf(stderr, "ab: cannot read %s\n", list);
        return -1;
    }
    char line[8192], rel[512], path[1024];
    long x, y, w, h;
    while (nfaces < MAX_FACES && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%511s %ld %ld %ld %ld", rel, &x, &y, &w, &h) != 5)
            continue;
        snprintf(path, sizeof path, "%s/%s", data, rel);
        if (load(path, FFU_PIX_RGB24, &images[nfaces]) != FFU_OK) {
            fprintf(stderr, "ab: cannot read %s\n", path);
            fclose(f);
            return -1;
        }
        boxes[nfaces][0] = (float)x, boxes[nfaces][1] = (float)y;
        boxes[nfaces][2] = (float)w, boxes[nfaces][3] = (float)h;
        nfaces++;
    }
    fclose(f);
    return nfaces ? 0 : -1;
}

/* The same deterministic values in every input, before every run. */
static void fill(build *b, int i)
{
    if (b->lm[i]) return;
    ffu_nn_tensor t;
    if (b->input(b->s[i], 0, &t) != FFU_OK) return;
    float *f = t.data;
    for (size_t k = 0; k < t.nbytes / sizeof *f; k++) f[k] = (float)(k % 97) * 0.01f;
}

/* One run of model i: the session, or the landmarker on every face from its box (no
 * keypoints, so the box is used as given; the run sets them, so they are cleared). */
static void run_model(build *b, int i)
{
    if (!b->lm[i]) {
        b->run(b->s[i]);
        return;
    }
    for (int k = 0; k < nfaces; k++) {
        ffu_face *f = &b->face[k];
        memcpy(f->box, boxes[k], sizeof f->box);
        memset(f->kps, 0, sizeof f->kps);
        b->lm_run(b->lm[i], &images[k], f);
    }
}

/* Parses LIST (see the top of the file) into *so; -1 on a name it does not know. */
static int parse_opts(const char *list, side_opts *so)
{
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == 8 && !strncmp(p, "no_bands", k)) so->no_bands = 1;
        else if (k == 11 && !strncmp(p, "no_winograd", k)) so->no_winograd = 1;
        else if (k == 4 && !strncmp(p, "bf16", k)) so->bf16 = 1;
        else if (k > 8 && !strncmp(p, "threads=", 8) && atoi(p + 8) > 0)
            so->threads = atoi(p + 8);
        else {
            fprintf(stderr,
                    "ab: unknown session option '%.*s' (no_bands, no_winograd, bf16, threads=N)\n",
                    (int)k, p);
            return -1;
        }
        p += k + (p[k] == ',');
    }
    return 0;
}

static int open_build(const char *lib, char **models, int n, build *b, const char *faces,
                      const char *data)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "ab: %s\n", dlerror());
        return -1;
    }
    load_fn load = (load_fn)dlsym(h, "ffu_nn_model_load");
    opts_fn opts_default = (opts_fn)dlsym(h, "ffu_nn_session_opts_default");
    create_fn create = (create_fn)dlsym(h, "ffu_nn_session_create");
    b->input = (input_fn)dlsym(h, "ffu_nn_session_input");
    b->run = (run_fn)dlsym(h, "ffu_nn_session_run");
    if (!load || !opts_default || !create || !b->input || !b->run) {
        fprintf(stderr, "ab: %s lacks the session API\n", lib);
        return -1;
    }
    lm_opts_fn lm_opts = (lm_opts_fn)dlsym(h, "ffu_landmarker_opts_default");
    lm_create_fn lm_create = (lm_create_fn)dlsym(h, "ffu_landmarker_create");
    image_load_fn image_load = (image_load_fn)dlsym(h, "ffu_image_load");
    b->lm_run = (lm_run_fn)dlsym(h, "ffu_landmarker_run");
    for (int i = 0; i < n; i++) {
        if (is_ert(models[i])) {
            char spec[1024];
            ffu_landmarker_opts o;
            if (!lm_opts || !lm_create || !image_load || !b->lm_run) {
                fprintf(stderr, "ab: %s lacks the landmarker API\n", lib);
                return -1;
            }
            if (!nfaces && read_faces(faces, data, image_load) < 0) return -1;
            lm_opts(&o);
            snprintf(spec, sizeof spec, "dlib68:%s", models[i]);
            o.m.model = spec;
            o.m.threads = 1;
            if (lm_create(&o, &b->lm[i]) != FFU_OK) {
                fprintf(stderr, "ab: %s cannot run %s\n", lib, models[i]);
                return -1;
            }
            run_model(b, i);
            continue;
        }
        ffu_nn_model *m;
        ffu_nn_session_opts o;
        opts_default(&o);
        o.threads = b->opts.threads ? b->opts.threads : 1;
        o.no_bands |= b->opts.no_bands;
        o.no_winograd |= b->opts.no_winograd;
        o.bf16 |= b->opts.bf16;
        if (load(models[i], &m) != FFU_OK || create(m, &o, &b->s[i]) != FFU_OK) {
            fprintf(stderr, "ab: %s cannot run %s\n", lib, models[i]);
            return -1;
        }
        for (int w = 0; w < 5; w++) {
            fill(b, i);
            b->run(b->s[i]);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static build b[2];
    while (argc > 2 && (!strcmp(argv[1], "--a-opts") || !strcmp(argv[1], "--b-opts"))) {
        if (parse_opts(argv[2], &b[argv[1][2] == 'b'].opts) < 0) return 2;
        argc -= 2, argv += 2;
    }
    if (argc < 7 || argc - 6 > MAX_MODELS) {
        fprintf(stderr, "usage: ab [--a-opts LIST] [--b-opts LIST] LIB_A LIB_B FACES DATA RUNS "
                        "MODEL... (at most %d models)\n",
                MAX_MODELS);
        return 2;
    }
    int runs = atoi(argv[5]), n = argc - 6;
    char **models = argv + 6;
    if (runs < 1) runs = 1;
    if (open_build(argv[1], models, n, &b[0], argv[3], argv[4]) < 0 ||
        open_build(argv[2], models, n, &b[1], argv[3], argv[4]) < 0)
        return 1;
    double *seq[2], *per[2][MAX_MODELS];
    for (int k = 0; k < 2; k++) {
        seq[k] = malloc(sizeof(double) * (size_t)runs);
        for (int i = 0; i < n; i++) per[k][i] = malloc(sizeof(double) * (size_t)runs);
        if (!seq[k]) return 1;
        for (int i = 0; i < n; i++)
            if (!per[k][i]) return 1;
    }
    for (int r = 0; r < runs; r++)
        for (int j = 0; j < 2; j++) {
            int k = r & 1 ? 1 - j : j;
            seq[k][r] = 0;
            for (int i = 0; i < n; i++) {
                fill(&b[k], i);
                double t0 = now_ms();
                run_model(&b[k], i);
                per[k][i][r] = now_ms() - t0;
                seq[k][r] += per[k][i][r];
            }
        }
    printf("| model | A median ms | B median ms | B / A |\n| --- | ---: | ---: | ---: |\n");
    for (int i = 0; i < n; i++) {
        qsort(per[0][i], (size_t)runs, sizeof(double), by_value);
        qsort(per[1][i], (size_t)runs, sizeof(double), by_value);
        const char *base = strrchr(models[i], '/');
        double a = per[0][i][runs / 2], bb = per[1][i][runs / 2];
        if (b[0].lm[i])
            printf("| %s (per face, %d faces) | %.4f | %.4f | %.3f |\n",
                   base ? base + 1 : models[i], nfaces, a / nfaces, bb / nfaces, bb / a);
        else
            printf("| %s | %.3f | %.3f | %.3f |\n", base ? base + 1 : models[i], a, bb, bb / a);
    }
    qsort(seq[0], (size_t)runs, sizeof(double), by_value);
    qsort(seq[1], (size_t)runs, sizeof(double), by_value);
    printf("sequence: A median %.3f min %.3f ms, B median %.3f min %.3f ms, B / A median %.3f "
           "min %.3f (%d runs each)\n",
           seq[0][runs / 2], seq[0][0], seq[1][runs / 2], seq[1][0],
           seq[1][runs / 2] / seq[0][runs / 2], seq[1][0] / seq[0][0], runs);
    return 0;
}
