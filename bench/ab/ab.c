/* Two builds of libfacefuse in one process: the same models, run in sequence as the
 * face analysis runs them, on build A and on build B, alternating per iteration (the
 * order flipped every time). This VM's speed moves between runs a minute apart, so
 * two binaries run one after the other compare badly; here both builds see the same
 * minutes, and each build's models evict the other's from the caches, as the stages
 * of an analysis do. Prints each model's median and the whole sequence's median and
 * minimum, B against A. Not a test: timings only. Loaded with dlopen (RTLD_LOCAL |
 * RTLD_DEEPBIND), so the two libraries' symbols stay apart. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facefuse/nn.h"

enum { MAX_MODELS = 16 };

typedef ffu_status (*load_fn)(const char *, ffu_nn_model **);
typedef void (*opts_fn)(ffu_nn_session_opts *);
typedef ffu_status (*create_fn)(ffu_nn_model *, const ffu_nn_session_opts *, ffu_nn_session **);
typedef ffu_status (*input_fn)(ffu_nn_session *, int, ffu_nn_tensor *);
typedef ffu_status (*run_fn)(ffu_nn_session *);

typedef struct build {
    input_fn input;
    run_fn run;
    ffu_nn_session *s[MAX_MODELS];
} build;

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

/* The same deterministic values in every input, before every run. */
static void fill(build *b, int i)
{
    ffu_nn_tensor t;
    if (b->input(b->s[i], 0, &t) != FFU_OK) return;
    float *f = t.data;
    for (size_t k = 0; k < t.nbytes / sizeof *f; k++) f[k] = (float)(k % 97) * 0.01f;
}

static int open_build(const char *lib, char **models, int n, build *b)
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
    for (int i = 0; i < n; i++) {
        ffu_nn_model *m;
        ffu_nn_session_opts o;
        opts_default(&o);
        o.threads = 1;
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
    if (argc < 5 || argc - 4 > MAX_MODELS) {
        fprintf(stderr, "usage: ab LIB_A LIB_B RUNS MODEL... (at most %d models)\n", MAX_MODELS);
        return 2;
    }
    int runs = atoi(argv[3]), n = argc - 4;
    if (runs < 1) runs = 1;
    static build b[2];
    if (open_build(argv[1], argv + 4, n, &b[0]) < 0 ||
        open_build(argv[2], argv + 4, n, &b[1]) < 0)
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
                b[k].run(b[k].s[i]);
                per[k][i][r] = now_ms() - t0;
                seq[k][r] += per[k][i][r];
            }
        }
    printf("| model | A median ms | B median ms | B / A |\n| --- | ---: | ---: | ---: |\n");
    for (int i = 0; i < n; i++) {
        qsort(per[0][i], (size_t)runs, sizeof(double), by_value);
        qsort(per[1][i], (size_t)runs, sizeof(double), by_value);
        const char *base = strrchr(argv[4 + i], '/');
        double a = per[0][i][runs / 2], bb = per[1][i][runs / 2];
        printf("| %s | %.3f | %.3f | %.3f |\n", base ? base + 1 : argv[4 + i], a, bb, bb / a);
    }
    qsort(seq[0], (size_t)runs, sizeof(double), by_value);
    qsort(seq[1], (size_t)runs, sizeof(double), by_value);
    printf("sequence: A median %.3f min %.3f ms, B median %.3f min %.3f ms, B / A median %.3f "
           "min %.3f (%d runs each)\n",
           seq[0][runs / 2], seq[0][0], seq[1][runs / 2], seq[1][0],
           seq[1][runs / 2] / seq[0][runs / 2], seq[1][0] / seq[0][0], runs);
    return 0;
}
