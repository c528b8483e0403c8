/* The two loaders against each other: MediaPipe BlazeFace "back" as a TF.js graph
 * model (human-models blazeface-back.json) and as ONNX (keijiro's
 * face_detection_back_256x256_barracuda.onnx) are the same network (MODELS.md), so
 * both must give the same outputs for the same NHWC input, on the ref backend and on
 * the default (cpu) backend. Skips while the model cache, the ONNX loader or an op is
 * missing. Outputs are matched by shape (the four heads' shapes are distinct). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/nn.h"
#include "test.h"
#include "test_nn_run.h"

typedef struct twin {
    ffu_nn_model *m;
    ffu_nn_session *s;
} twin;

/* Loads and plans one model; 0 = ok, 1 = skip (reason printed), -1 = failure. */
static int twin_open(twin *t, const char *path, const char *backend)
{
    memset(t, 0, sizeof *t);
    ffu_status st = ffu_nn_model_load(path, &t->m);
    if (st == FFU_ERR_UNSUPPORTED || st == FFU_ERR_NOT_FOUND) {
        printf("  skip %s: %s\n", path, ffu_error_message());
        return 1;
    }
    if (st < 0) {
        fprintf(stderr, "%s: %s\n", path, ffu_error_message());
        return -1;
    }
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 2;
    st = ffu_nn_session_create(t->m, &o, &t->s);
    if (st == FFU_ERR_UNSUPPORTED) {
        printf("  skip %s on %s: %s\n", path, backend, ffu_error_message());
        return 1;
    }
    if (st < 0) fprintf(stderr, "%s: session: %s\n", path, ffu_error_message());
    return st < 0 ? -1 : 0;
}

static void twin_close(twin *t)
{
    ffu_nn_session_destroy(t->s);
    ffu_nn_model_destroy(t->m);
}

static int twin_run(twin *t, const float *x, size_t n)
{
    ffu_nn_tensor in;
    if (ffu_nn_session_input(t->s, 0, &in) < 0 || in.nbytes != n * sizeof(float) ||
        in.dtype != FFU_DTYPE_F32) {
        fprintf(stderr, "input: %s (%zu bytes)\n", ffu_error_message(), in.nbytes);
        return -1;
    }
    memcpy(in.data, x, in.nbytes);
    if (ffu_nn_session_run(t->s) < 0) {
        fprintf(stderr, "run: %s\n", ffu_error_message());
        return -1;
    }
    return 0;
}

static int same_dims(const ffu_nn_tensor *a, const ffu_nn_tensor *b)
{
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

static void compare_backend(const char *backend)
{
    char dir[512], jp[1024], op[1024];
    test_model_dir(dir, sizeof dir);
    snprintf(jp, sizeof jp, "%s/blazeface-back.json", dir);
    snprintf(op, sizeof op, "%s/face_detection_back_256x256_barracuda.onnx", dir);
    FILE *f1 = fopen(jp, "rb"), *f2 = fopen(op, "rb");
    if (f1) fclose(f1);
    if (f2) fclose(f2);
    if (!f1 || !f2) TEST_SKIP("blazeface-back / keijiro ONNX twin not in the model cache");
    twin a, b;
    int ra = twin_open(&a, jp, backend);
    int rb = ra == 0 ? twin_open(&b, op, backend) : 1;
    if (ra < 0 || rb < 0) {
        if (ra == 0) twin_close(&a);
        CHECK(0);
    }
    if (ra || rb) {
        if (ra == 0) twin_close(&a);
        TEST_SKIP("a loader, op or backend is missing");
    }
    CHECK_EQ_INT(ffu_nn_model_num_outputs(a.m), 4);
    CHECK_EQ_INT(ffu_nn_model_num_outputs(b.m), 4);
    size_t n = 256 * 256 * 3;
    float *x = malloc(n * sizeof(float));
    uint64_t seed = 99;
    /* a smooth image-like input in [-1, 1] (x/127.5 - 1), plus a little noise */
    for (size_t i = 0; i < n; i++) {
        size_t px = i / 3, yy = px / 256, xx = px % 256, c = i % 3;
        x[i] = (float)(0.6 * sin(0.05 * (double)xx + (double)c) * cos(0.031 * (double)yy) +
                       0.2 * (test_rand_f(&seed) - 0.5));
    }
    int ok = twin_run(&a, x, n) == 0 && twin_run(&b, x, n) == 0;
    free(x);
    if (!ok) {
        twin_close(&a), twin_close(&b);
        CHECK(0);
    }
    int matched = 0;
    double worst = 0;
    for (int i = 0; i < 4; i++) {
        ffu_nn_tensor ta;
        CHECK_EQ_INT(ffu_nn_session_output(a.s, i, &ta), FFU_OK);
        for (int j = 0; j < 4; j++) {
            ffu_nn_tensor tb;
            CHECK_EQ_INT(ffu_nn_session_output(b.s, j, &tb), FFU_OK);
            if (!same_dims(&ta, &tb)) continue;
            const float *pa = ta.data, *pb = tb.data;
            size_t cnt = ta.nbytes / sizeof(float);
            double mag = 0, diff = 0;
            for (size_t k = 0; k < cnt; k++) {
                mag = fmax(mag, fabs(pa[k]));
                diff = fmax(diff, fabs((double)pa[k] - pb[k]));
            }
            printf("  %s: %s (%s) vs %s (%s): max |diff| %.3g, max |value| %.3g\n", backend,
                   ta.name, "tfjs", tb.name, "onnx", diff, mag);
            worst = fmax(worst, diff / fmax(mag, 1.0));
            matched++;
        }
    }
    twin_close(&a), twin_close(&b);
    CHECK_EQ_INT(matched, 4);
    CHECK(worst < 1e-3);
}

static void test_blazeface_twins_ref(void) { compare_backend("ref"); }
static void test_blazeface_twins_cpu(void) { compare_backend("cpu"); }

TEST_MAIN(test_blazeface_twins_ref, test_blazeface_twins_cpu)
