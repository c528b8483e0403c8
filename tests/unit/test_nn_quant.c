/* Dynamically quantised copies of a real model: MobileFaceNet from ../shared/models, made
 * by tools/quantize-onnx in its three forms (i8 weights with one scale, one scale per
 * channel, u8 weights with a zero point), each ConvInteger of which the load-time
 * rewrite turns into an f32 Conv (rewrite_integer.c). On a real face the cpu backend,
 * whose kernels sum in other orders than ref's, must give ref's output bit for bit (the
 * rewrite's claim: every partial sum is an exact integer); the embedding must stay
 * near the float model's (how near is what 8-bit quantisation costs, not the engine).
 * Skipped without the shared model and image. */
#include "facefuse/facefuse.h"
#include "test.h"

#ifndef FFU_TEST_BINARY_DIR
#define FFU_TEST_BINARY_DIR "build"
#endif

enum { DIM = 128, SIDE = 112 };

/* The model's output for the input x on backend, into y (DIM floats); its
 * description's ops go to ops. */
static ffu_status embed(const char *path, const char *backend, const float *x, float *y, char *ops,
                        size_t ops_size)
{
    ffu_nn_model *m = NULL;
    ffu_nn_session *s = NULL;
    ffu_status st = ffu_nn_model_load(path, &m);
    if (st < 0) return st;
    ffu_jw *w = NULL;
    ops[0] = 0;
    if (ffu_jw_create(&w, 0) == FFU_OK && ffu_nn_model_describe(m, w) == FFU_OK) {
        const char *o = strstr(ffu_jw_text(w, NULL), "\"ops\":");
        snprintf(ops, ops_size, "%s", o ? o : "");
    }
    ffu_jw_destroy(w);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 2;
    ffu_nn_tensor t;
    if ((st = ffu_nn_session_create(m, &o, &s)) < 0 || (st = ffu_nn_session_input(s, 0, &t)) < 0)
        goto out;
    if (t.nbytes != sizeof(float) * 3 * SIDE * SIDE) {
        st = ffu_error_set(FFU_ERR_INTERNAL, "input of %zu bytes", t.nbytes);
        goto out;
    }
    memcpy(t.data, x, t.nbytes);
    if ((st = ffu_nn_session_run(s)) < 0 || (st = ffu_nn_session_output(s, 0, &t)) < 0) goto out;
    if (t.nbytes != sizeof(float) * DIM) {
        st = ffu_error_set(FFU_ERR_INTERNAL, "output of %zu bytes", t.nbytes);
        goto out;
    }
    memcpy(y, t.data, t.nbytes);
out:
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
    return st;
}

static double cosine(const float *a, const float *b)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < DIM; i++)
        ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / sqrt(aa * bb);
}

static void test_quantised_mobilefacenet(void)
{
    char model[4096], photo[4096], tool[4096];
    if (!test_shared_path("models/mobilefacenet_insightface_pytorch.onnx", model, sizeof model) ||
        !test_shared_path("data/lfw/images/Aaron_Sorkin/Aaron_Sorkin_0001.jpg", photo,
                          sizeof photo)) {
        TEST_SKIP("no shared MobileFaceNet or LFW photo");
        return;
    }
    snprintf(tool, sizeof tool, "%s/quantize_onnx", FFU_TEST_BINARY_DIR);
    const char *dir = test_tmpdir_auto();
    CHECK(dir != NULL);
    /* the photo as the embedder takes it: 112 x 112 RGB, x / 127.5 - 1, NCHW */
    static float x[3 * SIDE * SIDE];
    ffu_image img = {0}, small = {0};
    CHECK_EQ_INT(ffu_image_load(photo, FFU_PIX_RGB24, &img), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&small, FFU_PIX_RGB24, SIDE, SIDE), FFU_OK);
    CHECK_EQ_INT(ffu_image_resize(&img, &small, FFU_INTERP_AREA), FFU_OK);
    ffu_norm_params norm;
    CHECK_EQ_INT(ffu_norm_preset(&norm, "symmetric"), FFU_OK);
    ffu_tensor_view tv = {x, FFU_LAYOUT_NCHW, 1, 3, SIDE, SIDE};
    CHECK_EQ_INT(ffu_image_to_tensor(&small, &norm, &tv, 0), FFU_OK);
    ffu_image_release(&img);
    ffu_image_release(&small);

    float ref_f32[DIM], ref_q[DIM], cpu_q[DIM];
    char ops[1024];
    CHECK_EQ_INT(embed(model, "ref", x, ref_f32, ops, sizeof ops), FFU_OK);
    /* measured: cosine 0.891, 0.993 and 0.940 (one i8 scale for a depthwise layer's
     * channels is coarse); the floors catch an engine error, which lands near 0 */
    const char *forms[3] = {"", "--per-channel", "--u8"};
    const double floor_cos[3] = {0.85, 0.98, 0.90};
    for (int f = 0; f < 3; f++) {
        char out[4200], cmd[16384];
        snprintf(out, sizeof out, "%s/q%d.onnx", dir, f);
        snprintf(cmd, sizeof cmd, "'%s' %s '%s' '%s' > /dev/null", tool, forms[f], model, out);
        CHECK_EQ_INT(system(cmd), 0);
        CHECK_EQ_INT(embed(out, "ref", x, ref_q, ops, sizeof ops), FFU_OK);
        printf("quantised %s: %.200s\n", f ? forms[f] : "(i8)", ops);
        CHECK(strstr(ops, "\"ffu.DynamicQuantizeSteps\":51") != NULL);
        CHECK(strstr(ops, "ConvInteger") == NULL);
        ffu_status st = embed(out, "cpu", x, cpu_q, ops, sizeof ops);
        if (st == FFU_ERR_UNSUPPORTED) {
            printf("quantised %s: cpu backend not built, skipped\n", forms[f]);
            continue;
        }
        CHECK_EQ_INT(st, FFU_OK);
        CHECK(memcmp(ref_q, cpu_q, sizeof ref_q) == 0);
        double c = cosine(ref_q, ref_f32);
        printf("quantised %s: cosine to the float model %.4f\n", f ? forms[f] : "(i8)", c);
        CHECK(c > floor_cos[f]);
    }
}

TEST_MAIN(test_quantised_mobilefacenet)
