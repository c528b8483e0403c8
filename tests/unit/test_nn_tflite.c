/* Tests of the TensorFlow Lite loader (src/nn/tflite). Small models written here with
 * tflite_builder.h load through ffu_nn_model_load_memory and run on the ref and cpu
 * backends; their outputs are checked against the TF semantics computed directly in
 * NHWC in this file (SAME padding with the odd pad at the end, option field order,
 * filter layouts, fused activations, average pooling that leaves the padding out of
 * the count, FULLY_CONNECTED flattening, softmax beta, f16 weights behind DEQUANTIZE).
 * The model API declares the outputs' shapes. The batch rule: a model exported at
 * batch 2 whose ops keep items apart loads with a dynamic dim 0 and gives the same
 * per-item results at batch 1, 2 and 3 (also through FULLY_CONNECTED keep_num_dims and
 * a shape_signature file's RESHAPEs); one that mixes items, or has a constant with a
 * row per exported item, keeps its batch. Malformed files (every truncation, byte
 * flips, bad indices, sizes and vtables) and what the engine refuses (custom ops,
 * quantized tensors, unknown builtins, other schema versions) fail with a reason and
 * never crash. With the model cache present, MobileFaceNet (mobilefacenet-expo.tflite)
 * loads and runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/tflite_builder.h"
#include "facefuse/nn.h"
#include "nn/ir.h"
#include "nn/rewrite.h"
#include "nn/tflite/tflite.h"
#include "test.h"

/* ---- helpers ---------------------------------------------------------------------------- */

#define D(...) ((const int32_t[]){__VA_ARGS__})

static const char *const BACKENDS[] = {"ref", "cpu"};

static size_t numel(int rank, const int32_t *d)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)d[i];
    return n;
}

static int f32_const(tb_model *m, const char *name, int rank, const int32_t *d, const float *v)
{
    return tb_const(m, name, TB_F32, rank, d, v, numel(rank, d) * 4);
}

static int i32_const(tb_model *m, const char *name, int rank, const int32_t *d, const int32_t *v)
{
    return tb_const(m, name, TB_I32, rank, d, v, numel(rank, d) * 4);
}

static int act(tb_model *m, const char *name, int rank, const int32_t *d)
{
    return tb_tensor_add(m, name, TB_F32, rank, d);
}

static void fill(float *p, size_t n, float lo, float hi, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * test_rand_f(&seed);
}

static ffu_nn_model *load_model(const tb_model *tm)
{
    size_t n;
    uint8_t *p = tb_pack(tm, &n);
    ffu_nn_model *m = NULL;
    if (ffu_nn_model_load_memory(p, n, NULL, 0, &m) < 0)
        fprintf(stderr, "load: %s\n", ffu_error_message());
    free(p);
    return m;
}

/* nn_tflite_load on exactly size bytes of heap (so ASan sees any read past the end). */
static ffu_status load_graph(const uint8_t *p, size_t size, nn_graph **g)
{
    uint8_t *q = malloc(size ? size : 1);
    if (!q) return FFU_ERR_NOMEM;
    memcpy(q, p, size);
    ffu_status st = nn_tflite_load(q, size, g);
    free(q);
    return st;
}

/* The status and message of loading tm with nn_tflite_load (the graph is dropped). */
static ffu_status try_load(const tb_model *tm, char *msg, size_t len)
{
    size_t n;
    uint8_t *p = tb_pack(tm, &n);
    nn_graph *g = (nn_graph *)&g;
    ffu_status st = load_graph(p, n, &g);
    snprintf(msg, len, "%s", st < 0 ? ffu_error_message() : "");
    if (st < 0 && g) st = FFU_ERR_INTERNAL; /* out-parameters are NULL on error */
    nn_graph_destroy(g);
    free(p);
    return st;
}

typedef struct out_buf {
    float v[4096];
    size_t n;
    int rank;
    int64_t dims[FFU_NN_MAX_RANK];
} out_buf;

/* Runs m on backend at `batch` items with input 0 = x (xn floats); outputs 0..nout-1
 * into out. */
static ffu_status run_model(const ffu_nn_model *m, const char *backend, int batch,
                            const float *x, size_t xn, out_buf *out, int nout)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 1;
    o.batch = batch;
    ffu_nn_session *s = NULL;
    ffu_nn_tensor t;
    ffu_status st = ffu_nn_session_create(m, &o, &s);
    if (st >= 0) st = ffu_nn_session_input(s, 0, &t);
    if (st >= 0 && t.nbytes != xn * 4) {
        fprintf(stderr, "input holds %zu bytes, %zu expected\n", t.nbytes, xn * 4);
        st = FFU_ERR_INTERNAL;
    }
    if (st >= 0) memcpy(t.data, x, xn * 4);
    if (st >= 0) st = ffu_nn_session_run(s);
    for (int k = 0; k < nout && st >= 0; k++) {
        st = ffu_nn_session_output(s, k, &t);
        if (st >= 0 && (t.dtype != FFU_DTYPE_F32 || t.nbytes > sizeof out[k].v)) {
            fprintf(stderr, "output %d: %s, %zu bytes\n", k, ffu_dtype_name(t.dtype), t.nbytes);
            st = FFU_ERR_INTERNAL;
        }
        if (st < 0) break;
        out[k].n = t.nbytes / 4;
        out[k].rank = t.rank;
        memcpy(out[k].dims, t.dims, sizeof t.dims);
        memcpy(out[k].v, t.data, t.nbytes);
    }
    if (st < 0) fprintf(stderr, "%s run: %s\n", backend, ffu_error_message());
    ffu_nn_session_destroy(s);
    return st;
}

/* 1 when got[0..n) matches want within tol * (1 + |want|); else prints the first miss. */
static int close_to(const char *what, const float *got, const float *want, size_t n, float tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i])))) {
            fprintf(stderr, "%s: [%zu] = %.7g, expected %.7g\n", what, i, got[i], want[i]);
            return 0;
        }
    return 1;
}

static int dims_are(const out_buf *o, int rank, const int64_t *d)
{
    if (o->rank != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (o->dims[i] != d[i]) return 0;
    return 1;
}

/* ---- the TF semantics, directly in NHWC ---------------------------------------------------- */

static float act_f(float v, int a)
{
    if (a == TB_ACT_RELU) return v > 0 ? v : 0;
    if (a == TB_ACT_RELU6) return v < 0 ? 0 : v > 6 ? 6 : v;
    if (a == TB_ACT_RELU_N1_TO_1) return v < -1 ? -1 : v > 1 ? 1 : v;
    return v;
}

/* One spatial axis: the output size and the padding before it. TF's SAME gives
 * ceil(in / stride) outputs and puts the odd pad at the end; VALID pads nothing. */
static void axis_geom(int in, int k, int stride, int dil, int same, int *out, int *before)
{
    int ek = (k - 1) * dil + 1;
    if (same) {
        *out = (in + stride - 1) / stride;
        int total = (*out - 1) * stride + ek - in;
        *before = total > 0 ? total / 2 : 0;
    } else {
        *out = (in - ek) / stride + 1;
        *before = 0;
    }
}

typedef struct conv_p {
    int kh, kw, sh, sw, dh, dw, same, depthwise, a;
} conv_p;

/* x [N,H,W,C]; filter [O,KH,KW,C] (depthwise: [1,KH,KW,C], O = C); y [N,OH,OW,O]. */
static void ref_conv(const float *x, int N, int H, int W, int C, const float *f,
                     const float *bias, int O, const conv_p *p, float *y)
{
    int OH, OW, ph, pw;
    axis_geom(H, p->kh, p->sh, p->dh, p->same, &OH, &ph);
    axis_geom(W, p->kw, p->sw, p->dw, p->same, &OW, &pw);
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
                for (int o = 0; o < O; o++) {
                    float acc = bias ? bias[o] : 0;
                    for (int kh = 0; kh < p->kh; kh++)
                        for (int kw = 0; kw < p->kw; kw++) {
                            int ih = oh * p->sh - ph + kh * p->dh;
                            int iw = ow * p->sw - pw + kw * p->dw;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            const float *xp = x + ((size_t)(n * H + ih) * W + iw) * C;
                            if (p->depthwise)
                                acc += xp[o] * f[(kh * p->kw + kw) * O + o];
                            else
                                for (int i = 0; i < C; i++)
                                    acc += xp[i] * f[((o * p->kh + kh) * p->kw + kw) * C + i];
                        }
                    y[((size_t)(n * OH + oh) * OW + ow) * O + o] = act_f(acc, p->a);
                }
}

/* Pooling on [N,H,W,C]; the average counts only the cells inside the input. */
static void ref_pool(const float *x, int N, int H, int W, int C, const conv_p *p, int is_max,
                     float *y)
{
    int OH, OW, ph, pw;
    axis_geom(H, p->kh, p->sh, 1, p->same, &OH, &ph);
    axis_geom(W, p->kw, p->sw, 1, p->same, &OW, &pw);
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
                for (int c = 0; c < C; c++) {
                    float acc = is_max ? -INFINITY : 0;
                    int cnt = 0;
                    for (int kh = 0; kh < p->kh; kh++)
                        for (int kw = 0; kw < p->kw; kw++) {
                            int ih = oh * p->sh - ph + kh, iw = ow * p->sw - pw + kw;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            float v = x[((size_t)(n * H + ih) * W + iw) * C + c];
                            acc = is_max ? (v > acc ? v : acc) : acc + v;
                            cnt++;
                        }
                    y[((size_t)(n * OH + oh) * OW + ow) * C + c] = is_max ? acc : acc / (float)cnt;
                }
}

/* y[r, o] = act(b[o] + sum_i x[r, i] w[o, i]) for rows r of x. */
static void ref_fc(const float *x, int rows, int in, const float *w, const float *b, int out,
                   int a, float *y)
{
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            float acc = b ? b[o] : 0;
            for (int i = 0; i < in; i++) acc += x[r * in + i] * w[o * in + i];
            y[r * out + o] = act_f(acc, a);
        }
}

static void ref_softmax(float *v, int rows, int n, float beta)
{
    for (int r = 0; r < rows; r++) {
        float *p = v + r * n, mx = p[0], sum = 0;
        for (int i = 1; i < n; i++) mx = p[i] > mx ? p[i] : mx;
        for (int i = 0; i < n; i++) sum += p[i] = expf(beta * (p[i] - mx));
        for (int i = 0; i < n; i++) p[i] /= sum;
    }
}

/* Loads tm, runs it on ref and cpu at batch 1 and compares each output with want.
 * Returns 1 when everything matched (the reason of a miss is on stderr). */
static int run_and_compare(const tb_model *tm, const float *x, size_t xn, int nout,
                           const float *const *want, const size_t *wn,
                           const int64_t (*wdims)[FFU_NN_MAX_RANK], const int *wrank, float tol)
{
    ffu_nn_model *m = load_model(tm);
    if (!m) return 0;
    out_buf *o = malloc(sizeof(out_buf) * (size_t)nout);
    int ok = o != NULL;
    for (int b = 0; b < 2 && ok; b++) {
        ok = run_model(m, BACKENDS[b], 1, x, xn, o, nout) == FFU_OK;
        for (int k = 0; k < nout && ok; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s output %d", BACKENDS[b], k);
            if (o[k].n != wn[k] || !dims_are(&o[k], wrank[k], wdims[k])) {
                fprintf(stderr, "%s: %zu values of rank %d (dims %lld %lld %lld %lld)\n", what,
                        o[k].n, o[k].rank, (long long)o[k].dims[0], (long long)o[k].dims[1],
                        (long long)o[k].dims[2], (long long)o[k].dims[3]);
                ok = 0;
            } else {
                ok = close_to(what, o[k].v, want[k], wn[k], tol);
            }
        }
    }
    free(o);
    ffu_nn_model_destroy(m);
    return ok;
}

/* One output version of run_and_compare. */
static int run1(const tb_model *tm, const float *x, size_t xn, const float *want, size_t wn,
                int rank, const int64_t *dims)
{
    int64_t d[1][FFU_NN_MAX_RANK] = {{0}};
    for (int i = 0; i < rank; i++) d[0][i] = dims[i];
    const float *w[1] = {want};
    return run_and_compare(tm, x, xn, 1, w, &wn, d, &rank, 1e-4f);
}

/* ---- ops against the direct computation ---------------------------------------------------- */

/* CONV_2D 3x3, stride h 2 / w 1, SAME (H 4: pads 0 and 1; W 5: 1 and 1), fused RELU6;
 * also the graph's names, format and producer. */
static void test_conv_relu6(void)
{
    static float x[40], w[54], b[3];
    fill(x, 40, -2, 2, 1);
    fill(w, 54, -1, 1, 2);
    fill(b, 3, -0.5f, 0.5f, 3);
    tb_model tm = {.description = "test conv"};
    int xi = act(&tm, "x", 4, D(1, 4, 5, 2));
    int wi = f32_const(&tm, "w", 4, D(3, 3, 3, 2), w);
    int bi = f32_const(&tm, "b", 1, D(3), b);
    int yi = act(&tm, "y", 4, D(1, 2, 5, 3));
    tb_conv_opts(tb_op_add(&tm, TB_CONV_2D, D(xi, wi, bi), 3, yi), TB_SAME, 1, 2, TB_ACT_RELU6, 1,
                 1);
    tb_input(&tm, xi);
    tb_output(&tm, yi);

    size_t n;
    uint8_t *p = tb_pack(&tm, &n);
    nn_graph *g = NULL;
    ffu_status st = load_graph(p, n, &g);
    free(p);
    if (st < 0) fprintf(stderr, "load: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_STR(g->format, "tflite");
    CHECK_STR(g->producer, "test conv");
    CHECK(g->ninputs == 1 && g->noutputs == 1);
    CHECK_STR(g->tensors[g->inputs[0]].name, "x");
    CHECK_STR(g->tensors[g->outputs[0]].name, "y");
    const nn_shape *xs = &g->tensors[g->inputs[0]].shape;
    CHECK(xs->rank == 4 && xs->d[0] == 1 && xs->d[1] == 4 && xs->d[2] == 5 && xs->d[3] == 2);
    nn_graph_destroy(g);

    static float want[30];
    conv_p cp = {3, 3, 2, 1, 1, 1, 1, 0, TB_ACT_RELU6};
    ref_conv(x, 1, 4, 5, 2, w, b, 3, &cp, want);
    int clipped = 0;
    for (int i = 0; i < 30; i++) clipped += want[i] == 0 || want[i] == 6;
    CHECK(clipped > 0 && clipped < 30); /* the activation matters */
    CHECK(run1(&tm, x, 40, want, 30, 4, (const int64_t[]){1, 2, 5, 3}));
}

/* DEPTHWISE_CONV_2D 3x3, multiplier 1, VALID, stride w 2 / h 1, dilation h 2 / w 1, then
 * ADD of a per-channel constant with a fused RELU. */
static void test_depthwise_add(void)
{
    static float x[108], w[27], b[3], c[3] = {0.5f, -1.0f, 0.25f};
    fill(x, 108, -1, 1, 4);
    fill(w, 27, -1, 1, 5);
    fill(b, 3, -0.2f, 0.2f, 6);
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 6, 6, 3));
    int wi = f32_const(&tm, "dw_w", 4, D(1, 3, 3, 3), w);
    int bi = f32_const(&tm, "dw_b", 1, D(3), b);
    int ci = f32_const(&tm, "c", 1, D(3), c);
    int di = act(&tm, "dw", 4, D(1, 2, 2, 3));
    int yi = act(&tm, "y", 4, D(1, 2, 2, 3));
    tb_dwconv_opts(tb_op_add(&tm, TB_DEPTHWISE_CONV_2D, D(xi, wi, bi), 3, di), TB_VALID, 2, 1, 1,
                   TB_ACT_NONE, 1, 2);
    tb_arith_opts(tb_op_add(&tm, TB_ADD, D(di, ci), 2, yi), TB_ADD, TB_ACT_RELU);
    tb_input(&tm, xi);
    tb_output(&tm, yi);
    float want[12];
    conv_p cp = {3, 3, 1, 2, 2, 1, 0, 1, TB_ACT_NONE};
    ref_conv(x, 1, 6, 6, 3, w, b, 3, &cp, want);
    for (int i = 0; i < 12; i++) want[i] = act_f(want[i] + c[i % 3], TB_ACT_RELU);
    CHECK(run1(&tm, x, 108, want, 12, 4, (const int64_t[]){1, 2, 2, 3}));
}

/* AVERAGE_POOL_2D 3x3 stride 2 SAME (the border averages leave the padding out) and
 * MAX_POOL_2D filter w 3 / h 2, stride w 2 / h 1, VALID, as two outputs. */
static void test_pools(void)
{
    static float x[40];
    fill(x, 40, -3, 3, 7);
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 4, 5, 2));
    int ai = act(&tm, "avg", 4, D(1, 2, 3, 2));
    int mi = act(&tm, "max", 4, D(1, 3, 2, 2));
    tb_pool_opts(tb_op_add(&tm, TB_AVERAGE_POOL_2D, D(xi), 1, ai), TB_SAME, 2, 2, 3, 3,
                 TB_ACT_NONE);
    tb_pool_opts(tb_op_add(&tm, TB_MAX_POOL_2D, D(xi), 1, mi), TB_VALID, 2, 1, 3, 2, TB_ACT_NONE);
    tb_input(&tm, xi);
    tb_output(&tm, ai);
    tb_output(&tm, mi);
    float wa[12], wm[12];
    conv_p pa = {3, 3, 2, 2, 1, 1, 1, 0, 0}, pm = {2, 3, 1, 2, 1, 1, 0, 0, 0};
    ref_pool(x, 1, 4, 5, 2, &pa, 0, wa);
    ref_pool(x, 1, 4, 5, 2, &pm, 1, wm);
    const float *want[2] = {wa, wm};
    size_t wn[2] = {12, 12};
    int64_t wd[2][FFU_NN_MAX_RANK] = {{1, 2, 3, 2}, {1, 3, 2, 2}};
    int wr[2] = {4, 4};
    CHECK(run_and_compare(&tm, x, 40, 2, want, wn, wd, wr, 1e-5f));
}

/* FULLY_CONNECTED on a [1,2,2,3] input (flattened to 12, keep_num_dims false) with bias,
 * then SOFTMAX with beta 0.5. */
static void test_fc_softmax(void)
{
    static float x[12], w[48], b[4];
    fill(x, 12, -1, 1, 8);
    fill(w, 48, -1, 1, 9);
    fill(b, 4, -1, 1, 10);
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 2, 2, 3));
    int wi = f32_const(&tm, "fc_w", 2, D(4, 12), w);
    int bi = f32_const(&tm, "fc_b", 1, D(4), b);
    int fi = act(&tm, "fc", 2, D(1, 4));
    int yi = act(&tm, "prob", 2, D(1, 4));
    tb_fc_opts(tb_op_add(&tm, TB_FULLY_CONNECTED, D(xi, wi, bi), 3, fi), TB_ACT_NONE, 0);
    tb_softmax_opts(tb_op_add(&tm, TB_SOFTMAX, D(fi), 1, yi), 0.5f);
    tb_input(&tm, xi);
    tb_output(&tm, yi);
    float want[4];
    ref_fc(x, 1, 12, w, b, 4, TB_ACT_NONE, want);
    ref_softmax(want, 1, 4, 0.5f);
    CHECK(run1(&tm, x, 12, want, 4, 2, (const int64_t[]){1, 4}));
}

/* FULLY_CONNECTED over the last axis of [1,3,5] with keep_num_dims, no bias, fused RELU:
 * [1,3,2]. */
static void test_fc_keep_dims(void)
{
    static float x[15], w[10];
    fill(x, 15, -1, 1, 11);
    fill(w, 10, -1, 1, 12);
    tb_model tm = {0};
    int xi = act(&tm, "x", 3, D(1, 3, 5));
    int wi = f32_const(&tm, "w", 2, D(2, 5), w);
    int yi = act(&tm, "y", 3, D(1, 3, 2));
    tb_op *op = tb_op_add(&tm, TB_FULLY_CONNECTED, D(xi, wi, -1), 3, yi);
    tb_fc_opts(op, TB_ACT_RELU, 1);
    tb_input(&tm, xi);
    tb_output(&tm, yi);
    float want[6];
    ref_fc(x, 3, 5, w, NULL, 2, TB_ACT_RELU, want);
    CHECK(run1(&tm, x, 15, want, 6, 3, (const int64_t[]){1, 3, 2}));
}

/* PRELU (alpha per channel, both signs), LEAKY_RELU 0.1, MUL by a per-channel constant,
 * SUB of a scalar with a fused RELU, DIV by a per-channel constant with a fused
 * RELU_N1_TO_1. */
static void test_prelu_arith(void)
{
    static float x[12], alpha[3] = {0.25f, -0.5f, 2.0f}, mc[3] = {1.5f, -2.0f, 0.5f};
    static float sc[1] = {-0.3f}, dc[3] = {0.5f, 4.0f, -0.8f};
    fill(x, 12, -2, 2, 13);
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 2, 2, 3));
    int ai = f32_const(&tm, "alpha", 3, D(1, 1, 3), alpha);
    int mci = f32_const(&tm, "mc", 1, D(3), mc);
    int sci = f32_const(&tm, "sc", 0, NULL, sc);
    int dci = f32_const(&tm, "dc", 1, D(3), dc);
    int p = act(&tm, "prelu", 4, D(1, 2, 2, 3)), l = act(&tm, "leaky", 4, D(1, 2, 2, 3));
    int mu = act(&tm, "mul", 4, D(1, 2, 2, 3)), su = act(&tm, "sub", 4, D(1, 2, 2, 3));
    int y = act(&tm, "y", 4, D(1, 2, 2, 3));
    tb_op_add(&tm, TB_PRELU, D(xi, ai), 2, p);
    tb_leaky_relu_opts(tb_op_add(&tm, TB_LEAKY_RELU, D(p), 1, l), 0.1f);
    tb_arith_opts(tb_op_add(&tm, TB_MUL, D(l, mci), 2, mu), TB_MUL, TB_ACT_NONE);
    tb_arith_opts(tb_op_add(&tm, TB_SUB, D(mu, sci), 2, su), TB_SUB, TB_ACT_RELU);
    tb_arith_opts(tb_op_add(&tm, TB_DIV, D(su, dci), 2, y), TB_DIV, TB_ACT_RELU_N1_TO_1);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    float want[12];
    int clipped = 0;
    for (int i = 0; i < 12; i++) {
        int c = i % 3;
        float v = x[i] < 0 ? alpha[c] * x[i] : x[i];
        v = v < 0 ? 0.1f * v : v;
        v = act_f(v * mc[c] - sc[0], TB_ACT_RELU);
        want[i] = act_f(v / dc[c], TB_ACT_RELU_N1_TO_1);
        clipped += want[i] == -1 || want[i] == 1;
    }
    CHECK(clipped > 0);
    CHECK(run1(&tm, x, 12, want, 12, 4, (const int64_t[]){1, 2, 2, 3}));
}

/* PAD [1,2,3,2] by (1,0) on H and (0,2) on W, MEAN over H and W with keep_dims (the zeros
 * count), CONCATENATION on axis 3 with a constant and a fused RELU. */
static void test_pad_mean_concat(void)
{
    static float x[12], k[2] = {-1.0f, 0.5f};
    static const int32_t pads[8] = {0, 0, 1, 0, 0, 2, 0, 0}, axes[2] = {1, 2};
    fill(x, 12, -1, 2, 14);
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 2, 3, 2));
    int pi = i32_const(&tm, "pads", 2, D(4, 2), pads);
    int ai = i32_const(&tm, "axes", 1, D(2), axes);
    int ki = f32_const(&tm, "k", 4, D(1, 1, 1, 2), k);
    int pd = act(&tm, "padded", 4, D(1, 3, 5, 2)), mn = act(&tm, "mean", 4, D(1, 1, 1, 2));
    int y = act(&tm, "y", 4, D(1, 1, 1, 4));
    tb_op_add(&tm, TB_PAD, D(xi, pi), 2, pd);
    tb_reducer_opts(tb_op_add(&tm, TB_MEAN, D(pd, ai), 2, mn), 1);
    tb_concat_opts(tb_op_add(&tm, TB_CONCATENATION, D(mn, ki), 2, y), 3, TB_ACT_RELU);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    float want[4] = {0, 0, 0, 0.5f};
    for (int i = 0; i < 12; i++) want[i % 2] += x[i] / 15;
    for (int c = 0; c < 2; c++) want[c] = act_f(want[c], TB_ACT_RELU);
    CHECK(run1(&tm, x, 12, want, 4, 4, (const int64_t[]){1, 1, 1, 4}));
}

/* SUM, REDUCE_MAX and REDUCE_MIN over the channels of [1,2,3,4] with keep_dims, then
 * the softmax as MTCNN's TF port writes it (exp(x - max) / sum, over the channels),
 * which the loader's graph rewrites into one Softmax: every output against the direct
 * computation. */
static void test_reductions(void)
{
    static float x[24];
    static const int32_t axes[1] = {3};
    fill(x, 24, -3, 3, 19);
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 2, 3, 4));
    int ai = i32_const(&tm, "axes", 1, D(1), axes);
    int sum = act(&tm, "sum", 4, D(1, 2, 3, 1)), mx = act(&tm, "max", 4, D(1, 2, 3, 1));
    int mn = act(&tm, "min", 4, D(1, 2, 3, 1)), d = act(&tm, "d", 4, D(1, 2, 3, 4));
    int e = act(&tm, "e", 4, D(1, 2, 3, 4)), es = act(&tm, "es", 4, D(1, 2, 3, 1));
    int sm = act(&tm, "softmax", 4, D(1, 2, 3, 4)), mx2 = act(&tm, "max2", 4, D(1, 2, 3, 1));
    tb_reducer_opts(tb_op_add(&tm, TB_SUM, D(xi, ai), 2, sum), 1);
    tb_reducer_opts(tb_op_add(&tm, TB_REDUCE_MAX, D(xi, ai), 2, mx), 1);
    tb_reducer_opts(tb_op_add(&tm, TB_REDUCE_MIN, D(xi, ai), 2, mn), 1);
    /* the softmax's own maximum: one that is also an output could not be dropped */
    tb_reducer_opts(tb_op_add(&tm, TB_REDUCE_MAX, D(xi, ai), 2, mx2), 1);
    tb_arith_opts(tb_op_add(&tm, TB_SUB, D(xi, mx2), 2, d), TB_SUB, TB_ACT_NONE);
    tb_op_add(&tm, 47 /* EXP */, D(d), 1, e);
    tb_reducer_opts(tb_op_add(&tm, TB_SUM, D(e, ai), 2, es), 1);
    tb_arith_opts(tb_op_add(&tm, TB_DIV, D(e, es), 2, sm), TB_DIV, TB_ACT_NONE);
    tb_input(&tm, xi);
    tb_output(&tm, sum);
    tb_output(&tm, mx);
    tb_output(&tm, mn);
    tb_output(&tm, sm);
    static float want[4][24];
    for (int p = 0; p < 6; p++) {
        const float *v = x + 4 * p;
        float s = 0, hi = v[0], lo = v[0], es_ = 0;
        for (int c = 0; c < 4; c++) s += v[c], hi = fmaxf(hi, v[c]), lo = fminf(lo, v[c]);
        for (int c = 0; c < 4; c++) es_ += expf(v[c] - hi);
        want[0][p] = s, want[1][p] = hi, want[2][p] = lo;
        for (int c = 0; c < 4; c++) want[3][4 * p + c] = expf(v[c] - hi) / es_;
    }
    const float *w[4] = {want[0], want[1], want[2], want[3]};
    size_t wn[4] = {6, 6, 6, 24};
    int64_t wd[4][FFU_NN_MAX_RANK] = {{1, 2, 3, 1}, {1, 2, 3, 1}, {1, 2, 3, 1}, {1, 2, 3, 4}};
    int wr[4] = {4, 4, 4, 4};
    CHECK(run_and_compare(&tm, x, 24, 4, w, wn, wd, wr, 1e-5f));
    /* the spelled-out softmax becomes one node (the others' reductions stay) */
    size_t n;
    uint8_t *bytes = tb_pack(&tm, &n);
    nn_graph *g = NULL;
    CHECK_EQ_INT(load_graph(bytes, n, &g), FFU_OK);
    free(bytes);
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    int softmax = 0, exps = 0;
    for (int i = 0; i < g->nnodes; i++)
        softmax += g->nodes[i].op == NN_OP_SOFTMAX, exps += g->nodes[i].op == NN_OP_EXP;
    CHECK_EQ_INT(softmax, 1);
    CHECK_EQ_INT(exps, 0);
    nn_graph_destroy(g);
}

/* RESHAPE by a shape input [1,6,4], then by ReshapeOptions.new_shape [1,-1] alone, then
 * TANH so the values pass through an op. */
static void test_reshape(void)
{
    static float x[24];
    static const int32_t shape[3] = {1, 6, 4}, flat[2] = {1, -1};
    fill(x, 24, -2, 2, 15);
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 2, 3, 4));
    int si = i32_const(&tm, "shape", 1, D(3), shape);
    int r1 = act(&tm, "r1", 3, D(1, 6, 4)), r2 = act(&tm, "r2", 2, D(1, 24));
    int y = act(&tm, "y", 2, D(1, 24));
    tb_op_add(&tm, TB_RESHAPE, D(xi, si), 2, r1);
    tb_reshape_opts(tb_op_add(&tm, TB_RESHAPE, D(r1), 1, r2), flat, 2);
    tb_op_add(&tm, TB_TANH, D(r2), 1, y);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    float want[24];
    for (int i = 0; i < 24; i++) want[i] = tanhf(x[i]);
    CHECK(run1(&tm, x, 24, want, 24, 2, (const int64_t[]){1, 24}));
}

/* f16 conv weights through DEQUANTIZE into CONV_2D 3x3 SAME stride 1; the expected
 * values use the f16-rounded weights. */
static void test_f16_dequantize(void)
{
    static float x[18], w[36], wr[36], b[2] = {0.1f, -0.2f};
    static uint16_t wh[36];
    fill(x, 18, -1, 1, 16);
    fill(w, 36, -1, 1, 17);
    for (int i = 0; i < 36; i++) {
        wh[i] = nn_f32_to_f16(w[i]);
        wr[i] = nn_f16_to_f32(wh[i]);
    }
    tb_model tm = {0};
    int xi = act(&tm, "x", 4, D(1, 3, 3, 2));
    int hi = tb_const(&tm, "w_f16", TB_F16, 4, D(2, 3, 3, 2), wh, sizeof wh);
    int wi = act(&tm, "w", 4, D(2, 3, 3, 2));
    int bi = f32_const(&tm, "b", 1, D(2), b);
    int y = act(&tm, "y", 4, D(1, 3, 3, 2));
    tb_op_add(&tm, TB_DEQUANTIZE, D(hi), 1, wi);
    tb_conv_opts(tb_op_add(&tm, TB_CONV_2D, D(xi, wi, bi), 3, y), TB_SAME, 1, 1, TB_ACT_NONE, 1,
                 1);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    float want[18];
    conv_p cp = {3, 3, 1, 1, 1, 1, 1, 0, TB_ACT_NONE};
    ref_conv(x, 1, 3, 3, 2, wr, b, 2, &cp, want);
    CHECK(run1(&tm, x, 18, want, 18, 4, (const int64_t[]){1, 3, 3, 2}));
}

/* HARD_SWISH, LOGISTIC, ABS, NEG and EXP of one input, as five outputs. */
static void test_unary(void)
{
    static float x[12];
    fill(x, 12, -4, 4, 18);
    static const int32_t codes[5] = {TB_HARD_SWISH, TB_LOGISTIC, 101 /* ABS */, 59 /* NEG */,
                                     47 /* EXP */};
    static const char *const names[5] = {"hswish", "sigmoid", "abs", "neg", "exp"};
    tb_model tm = {0};
    int xi = act(&tm, "x", 3, D(1, 3, 4));
    tb_input(&tm, xi);
    for (int k = 0; k < 5; k++) {
        int y = act(&tm, names[k], 3, D(1, 3, 4));
        tb_op_add(&tm, codes[k], D(xi), 1, y);
        tb_output(&tm, y);
    }
    static float want[5][12];
    for (int i = 0; i < 12; i++) {
        float v = x[i], r6 = v + 3 < 0 ? 0 : v + 3 > 6 ? 6 : v + 3;
        want[0][i] = v * r6 / 6;
        want[1][i] = 1 / (1 + expf(-v));
        want[2][i] = fabsf(v);
        want[3][i] = -v;
        want[4][i] = expf(v);
    }
    const float *w[5] = {want[0], want[1], want[2], want[3], want[4]};
    size_t wn[5] = {12, 12, 12, 12, 12};
    int64_t wd[5][FFU_NN_MAX_RANK] = {{1, 3, 4}, {1, 3, 4}, {1, 3, 4}, {1, 3, 4}, {1, 3, 4}};
    int wr[5] = {3, 3, 3, 3, 3};
    CHECK(run_and_compare(&tm, x, 12, 5, w, wn, wd, wr, 1e-5f));
}

/* The model API reports each output's type and shape as the file declares them (with
 * dim 0 dynamic where the batch rule made the inputs' dynamic), before any session. */
static void test_output_info(void)
{
    static tb_model tm;
    memset(&tm, 0, sizeof tm);
    int xi = act(&tm, "x", 4, D(1, 4, 6, 2)), yi = act(&tm, "y", 4, D(1, 2, 3, 2));
    tb_pool_opts(tb_op_add(&tm, TB_MAX_POOL_2D, D(xi), 1, yi), TB_SAME, 2, 2, 2, 2, TB_ACT_NONE);
    tb_input(&tm, xi);
    tb_output(&tm, yi);
    ffu_nn_model *m = load_model(&tm);
    CHECK(m != NULL);
    ffu_nn_tensor o;
    ffu_status st = ffu_nn_model_output(m, 0, &o);
    ffu_nn_model_destroy(m);
    CHECK_EQ_INT(st, FFU_OK);
    printf("declared output: %s rank %d [%lld %lld %lld %lld]\n", ffu_dtype_name(o.dtype),
           o.rank, (long long)o.dims[0], (long long)o.dims[1], (long long)o.dims[2],
           (long long)o.dims[3]);
    CHECK_EQ_INT(o.dtype, FFU_DTYPE_F32);
    CHECK_EQ_INT(o.rank, 4);
    CHECK(o.dims[0] == 1 && o.dims[1] == 2 && o.dims[2] == 3 && o.dims[3] == 2);
    /* exported at batch 2, item-safe: [-1, 2, 3, 2] */
    tm.tensors[xi].shape[0] = 2, tm.tensors[yi].shape[0] = 2;
    m = load_model(&tm);
    CHECK(m != NULL);
    st = ffu_nn_model_output(m, 0, &o);
    ffu_nn_model_destroy(m);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(o.rank, 4);
    CHECK(o.dims[0] == -1 && o.dims[1] == 2 && o.dims[2] == 3 && o.dims[3] == 2);
}

/* ---- the batch rule -------------------------------------------------------------------------- */

/* x[B,4,4,3] -> CONV 3x3 SAME RELU -> MEAN(1,2, keep) -> RESHAPE [B,4] -> FC 5 -> SOFTMAX:
 * every op keeps the items apart. */
static float bw_w[108], bw_b[4], bw_fw[20], bw_fb[5];

static void batch_model(tb_model *tm, int batch)
{
    static int32_t shape[2], axes[2] = {1, 2};
    shape[0] = batch, shape[1] = 4;
    memset(tm, 0, sizeof *tm);
    int xi = act(tm, "x", 4, D(batch, 4, 4, 3));
    int wi = f32_const(tm, "w", 4, D(4, 3, 3, 3), bw_w);
    int bi = f32_const(tm, "b", 1, D(4), bw_b);
    int ai = i32_const(tm, "axes", 1, D(2), axes);
    int si = i32_const(tm, "shape", 1, D(2), shape);
    int fwi = f32_const(tm, "fw", 2, D(5, 4), bw_fw);
    int fbi = f32_const(tm, "fb", 1, D(5), bw_fb);
    int c = act(tm, "conv", 4, D(batch, 4, 4, 4)), mn = act(tm, "mean", 4, D(batch, 1, 1, 4));
    int r = act(tm, "flat", 2, D(batch, 4)), f = act(tm, "fc", 2, D(batch, 5));
    int y = act(tm, "prob", 2, D(batch, 5));
    tb_conv_opts(tb_op_add(tm, TB_CONV_2D, D(xi, wi, bi), 3, c), TB_SAME, 1, 1, TB_ACT_RELU, 1, 1);
    tb_reducer_opts(tb_op_add(tm, TB_MEAN, D(c, ai), 2, mn), 1);
    tb_op_add(tm, TB_RESHAPE, D(mn, si), 2, r);
    tb_fc_opts(tb_op_add(tm, TB_FULLY_CONNECTED, D(r, fwi, fbi), 3, f), TB_ACT_NONE, 0);
    tb_softmax_opts(tb_op_add(tm, TB_SOFTMAX, D(f), 1, y), 1.0f);
    tb_input(tm, xi);
    tb_output(tm, y);
}

static void batch_expected(const float *x, int n, float *y)
{
    static float conv[3 * 64], mean[3 * 4];
    conv_p cp = {3, 3, 1, 1, 1, 1, 1, 0, TB_ACT_RELU};
    ref_conv(x, n, 4, 4, 3, bw_w, bw_b, 4, &cp, conv);
    for (int b = 0; b < n; b++)
        for (int c = 0; c < 4; c++) {
            float s = 0;
            for (int i = 0; i < 16; i++) s += conv[(b * 16 + i) * 4 + c];
            mean[b * 4 + c] = s / 16;
        }
    ref_fc(mean, n, 4, bw_fw, bw_fb, 5, TB_ACT_NONE, y);
    ref_softmax(y, n, 5, 1.0f);
}

static void test_batch_dynamic(void)
{
    fill(bw_w, 108, -1, 1, 20);
    fill(bw_b, 4, -0.5f, 0.5f, 21);
    fill(bw_fw, 20, -2, 2, 22);
    fill(bw_fb, 5, -1, 1, 23);
    static tb_model tm;
    batch_model(&tm, 2);
    ffu_nn_model *m = load_model(&tm);
    CHECK(m != NULL);
    ffu_nn_tensor info;
    CHECK_EQ_INT(ffu_nn_model_input(m, 0, &info), FFU_OK);
    int dyn = info.rank == 4 && info.dims[0] == -1 && info.dims[1] == 4 && info.dims[2] == 4 &&
              info.dims[3] == 3;
    if (!dyn) {
        fprintf(stderr, "input dims %lld %lld %lld %lld\n", (long long)info.dims[0],
                (long long)info.dims[1], (long long)info.dims[2], (long long)info.dims[3]);
        ffu_nn_model_destroy(m);
    }
    CHECK(dyn);
    static float x[3 * 48], want[15];
    fill(x, 3 * 48, -1, 1, 24);
    batch_expected(x, 3, want);
    static out_buf o1, o2, o3, o1c;
    int ok = 1;
    for (int b = 0; b < 2 && ok; b++) {
        const char *be = BACKENDS[b];
        ok = run_model(m, be, 2, x, 96, &o2, 1) == FFU_OK &&
             run_model(m, be, 3, x, 144, &o3, 1) == FFU_OK &&
             run_model(m, be, 1, x, 48, &o1, 1) == FFU_OK &&
             run_model(m, be, 1, x + 96, 48, &o1c, 1) == FFU_OK;
        ok = ok && dims_are(&o2, 2, (const int64_t[]){2, 5}) &&
             dims_are(&o3, 2, (const int64_t[]){3, 5}) && dims_are(&o1, 2, (const int64_t[]){1, 5});
        /* the batch-2 run is right, and every item equals its batch-2 / batch-3 twin */
        ok = ok && close_to("batch 2 vs direct", o2.v, want, 10, 1e-4f) &&
             close_to("batch 3 vs 2", o3.v, o2.v, 10, 1e-5f) &&
             close_to("batch 1 vs 2", o1.v, o2.v, 5, 1e-5f) &&
             close_to("batch 1 vs 3", o1c.v, o3.v + 10, 5, 1e-5f) &&
             close_to("batch 3 vs direct", o3.v + 10, want + 10, 5, 1e-4f);
        if (!ok) fprintf(stderr, "backend %s\n", be);
    }
    ffu_nn_model_destroy(m);
    CHECK(ok);
}

/* Input dim 0 as the model declares it after loading tm (-99 when it does not load). */
static int64_t loaded_batch(const tb_model *tm)
{
    ffu_nn_model *m = load_model(tm);
    ffu_nn_tensor info;
    int64_t d = -99;
    if (m && ffu_nn_model_input(m, 0, &info) == FFU_OK && info.rank > 0) d = info.dims[0];
    ffu_nn_model_destroy(m);
    return d;
}

/* Ops that mix the items keep the exported batch; a shape_signature of -1 makes even a
 * batch-1 file dynamic; a batch-1 file without one stays 1. */
static void test_batch_fixed(void)
{
    static float x[6] = {1, 2, 3, 4, 5, 6};
    static const int32_t axis0[1] = {0};
    static tb_model tm;
    /* CONCATENATION on axis 0 */
    memset(&tm, 0, sizeof tm);
    int xi = act(&tm, "x", 2, D(2, 3)), y = act(&tm, "y", 2, D(4, 3));
    tb_concat_opts(tb_op_add(&tm, TB_CONCATENATION, D(xi, xi), 2, y), 0, TB_ACT_NONE);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    CHECK_EQ_INT(loaded_batch(&tm), 2);
    ffu_nn_model *m = load_model(&tm);
    CHECK(m != NULL);
    static out_buf o;
    ffu_status st = run_model(m, "ref", 1, x, 6, &o, 1);
    ffu_nn_model_destroy(m);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK(dims_are(&o, 2, (const int64_t[]){4, 3}));
    for (int i = 0; i < 12; i++) CHECK_NEAR(o.v[i], x[i % 6], 0);
    /* the same with axis -2 (axis 0 counted from the end) */
    tm.ops[0].opts.n = 0;
    tb_concat_opts(&tm.ops[0], -2, TB_ACT_NONE);
    CHECK_EQ_INT(loaded_batch(&tm), 2);
    /* MEAN over axis 0 */
    memset(&tm, 0, sizeof tm);
    xi = act(&tm, "x", 2, D(2, 3));
    int ai = i32_const(&tm, "axes", 1, D(1), axis0);
    y = act(&tm, "y", 1, D(3));
    tb_reducer_opts(tb_op_add(&tm, TB_MEAN, D(xi, ai), 2, y), 0);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    CHECK_EQ_INT(loaded_batch(&tm), 2);
    /* a SOFTMAX over a rank-1 tensor, which is all batch */
    memset(&tm, 0, sizeof tm);
    xi = act(&tm, "x", 1, D(2));
    y = act(&tm, "y", 1, D(2));
    tb_softmax_opts(tb_op_add(&tm, TB_SOFTMAX, D(xi), 1, y), 1.0f);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    CHECK_EQ_INT(loaded_batch(&tm), 2);
    /* batch 1 with and without a dynamic shape_signature */
    memset(&tm, 0, sizeof tm);
    xi = act(&tm, "x", 2, D(1, 3));
    y = act(&tm, "y", 2, D(1, 3));
    tb_op_add(&tm, TB_RELU, D(xi), 1, y);
    tb_input(&tm, xi);
    tb_output(&tm, y);
    CHECK_EQ_INT(loaded_batch(&tm), 1);
    tm.tensors[xi].sig_rank = 2;
    tm.tensors[xi].sig[0] = -1, tm.tensors[xi].sig[1] = 3;
    CHECK_EQ_INT(loaded_batch(&tm), -1);
}

/* Runs m at `batch` items of x on ref; 1 when the output has dims d (rank r) and matches
 * want. */
static int batch_run_ok(const ffu_nn_model *m, int batch, const float *x, size_t xn,
                        const float *want, int r, const int64_t *d)
{
    static out_buf o;
    if (run_model(m, "ref", batch, x, xn, &o, 1) < 0) return 0;
    if (!dims_are(&o, r, d)) {
        fprintf(stderr, "batch %d: output rank %d [%lld %lld %lld]\n", batch, o.rank,
                (long long)o.dims[0], (long long)o.dims[1], (long long)o.dims[2]);
        return 0;
    }
    return close_to("output", o.v, want, o.n, 1e-5f);
}

/* FULLY_CONNECTED with keep_num_dims on [2,3,5] (item-safe: dim 0 stays the batch): the
 * result [B,3,2] at the exported batch and at batch 3. */
static void test_batch_fc_keep_dims(void)
{
    static float x[45], w[10], want[18];
    fill(x, 45, -1, 1, 50);
    fill(w, 10, -1, 1, 51);
    static tb_model tm;
    memset(&tm, 0, sizeof tm);
    int xi = act(&tm, "x", 3, D(2, 3, 5)), wi = f32_const(&tm, "w", 2, D(2, 5), w);
    int yi = act(&tm, "y", 3, D(2, 3, 2));
    tb_fc_opts(tb_op_add(&tm, TB_FULLY_CONNECTED, D(xi, wi, -1), 3, yi), TB_ACT_NONE, 1);
    tb_input(&tm, xi);
    tb_output(&tm, yi);
    ref_fc(x, 9, 5, w, NULL, 2, TB_ACT_NONE, want);
    ffu_nn_model *m = load_model(&tm);
    CHECK(m != NULL);
    int ok2 = batch_run_ok(m, 2, x, 30, want, 3, (const int64_t[]){2, 3, 2});
    int ok3 = batch_run_ok(m, 3, x, 45, want, 3, (const int64_t[]){3, 3, 2});
    ffu_nn_model_destroy(m);
    CHECK(ok2);
    CHECK(ok3);
}

/* CONCATENATION on axis 1 of x [2,3] and a constant [2,1]: the constant holds one row
 * per exported item, so the model must keep batch 2 (like ADD with such a constant). */
static void test_batch_concat_const(void)
{
    static float x[6] = {1, 2, 3, 4, 5, 6}, k[2] = {-1, -2};
    static const float want[8] = {1, 2, 3, -1, 4, 5, 6, -2};
    static tb_model tm;
    memset(&tm, 0, sizeof tm);
    int xi = act(&tm, "x", 2, D(2, 3)), ki = f32_const(&tm, "k", 2, D(2, 1), k);
    int yi = act(&tm, "y", 2, D(2, 4));
    tb_concat_opts(tb_op_add(&tm, TB_CONCATENATION, D(xi, ki), 2, yi), 1, TB_ACT_NONE);
    tb_input(&tm, xi);
    tb_output(&tm, yi);
    CHECK_EQ_INT(loaded_batch(&tm), 2);
    ffu_nn_model *m = load_model(&tm);
    CHECK(m != NULL);
    int ok = batch_run_ok(m, 1, x, 6, want, 2, (const int64_t[]){2, 4});
    ffu_nn_model_destroy(m);
    CHECK(ok);
}

/* A batch-1 file whose shape_signature makes dim 0 dynamic, with RESHAPE [4,1] then
 * RESHAPE [1,4]: the second target's leading 1 is not the batch of a [4,1] tensor, so
 * the result must be x as [1,4]. */
static void test_signature_reshape(void)
{
    static float x[4] = {1, 2, 3, 4};
    static const int32_t s1[2] = {4, 1}, s2[2] = {1, 4};
    static tb_model tm;
    memset(&tm, 0, sizeof tm);
    int xi = act(&tm, "x", 2, D(1, 4));
    tm.tensors[xi].sig_rank = 2, tm.tensors[xi].sig[0] = -1, tm.tensors[xi].sig[1] = 4;
    int a = i32_const(&tm, "s1", 1, D(2), s1), b = i32_const(&tm, "s2", 1, D(2), s2);
    int r = act(&tm, "r", 2, D(4, 1)), yi = act(&tm, "y", 2, D(1, 4));
    tb_op_add(&tm, TB_RESHAPE, D(xi, a), 2, r);
    tb_op_add(&tm, TB_RESHAPE, D(r, b), 2, yi);
    tb_input(&tm, xi);
    tb_output(&tm, yi);
    ffu_nn_model *m = load_model(&tm);
    CHECK(m != NULL);
    int ok = batch_run_ok(m, 1, x, 4, x, 2, (const int64_t[]){1, 4});
    ffu_nn_model_destroy(m);
    CHECK(ok);
}

/* ---- malformed and refused files ------------------------------------------------------------ */

/* The small valid model the damage tests start from: conv + relu6 (bias, options). */
static float mw[54], mb[3];

static void small_model(tb_model *tm)
{
    fill(mw, 54, -1, 1, 30);
    fill(mb, 3, -1, 1, 31);
    memset(tm, 0, sizeof *tm);
    tm->description = "small";
    int xi = act(tm, "x", 4, D(1, 4, 4, 2));
    int wi = f32_const(tm, "w", 4, D(3, 3, 3, 2), mw);
    int bi = f32_const(tm, "b", 1, D(3), mb);
    int ci = act(tm, "c", 4, D(1, 2, 2, 3));
    int yi = act(tm, "y", 4, D(1, 2, 2, 3));
    tb_conv_opts(tb_op_add(tm, TB_CONV_2D, D(xi, wi, bi), 3, ci), TB_SAME, 2, 2, TB_ACT_NONE, 1,
                 1);
    tb_op_add(tm, TB_RELU6, D(ci), 1, yi);
    tb_input(tm, xi);
    tb_output(tm, yi);
}

/* Every prefix of the file fails with FFU_ERR_FORMAT and a NULL graph (the last bytes
 * are a buffer's data, so no prefix is a whole FlatBuffer); the whole file loads. */
static void test_truncated(void)
{
    static tb_model tm;
    small_model(&tm);
    size_t n;
    uint8_t *p = tb_pack(&tm, &n);
    int bad = -1;
    for (size_t len = 0; len < n && bad < 0; len++) {
        nn_graph *g = (nn_graph *)p;
        ffu_status st = load_graph(p, len, &g);
        if (st != FFU_ERR_FORMAT || g) bad = (int)len;
        nn_graph_destroy(st < 0 ? NULL : g);
        ffu_nn_model *m = (ffu_nn_model *)p;
        if (bad < 0 && (ffu_nn_model_load_memory(p, len, NULL, 0, &m) >= 0 || m)) {
            bad = (int)len;
            if (m != (ffu_nn_model *)p) ffu_nn_model_destroy(m);
        }
    }
    nn_graph *g = NULL;
    ffu_status st = load_graph(p, n, &g);
    nn_graph_destroy(g);
    free(p);
    if (bad >= 0) fprintf(stderr, "a prefix of %d of %zu bytes loaded\n", bad, n);
    CHECK_EQ_INT(bad, -1);
    CHECK_EQ_INT(st, FFU_OK);
}

/* Each byte set to 0x00, 0xff and 0x80 in turn: a clean failure (NULL out) or a graph
 * the engine's passes accept or reject; never a crash (ASan watches). */
static void test_byte_flips(void)
{
    static tb_model tm;
    small_model(&tm);
    size_t n;
    uint8_t *p = tb_pack(&tm, &n);
    static const uint8_t vals[3] = {0x00, 0xff, 0x80};
    int loaded = 0, bad = -1;
    for (size_t i = 0; i < n && bad < 0; i++)
        for (int k = 0; k < 3 && bad < 0; k++) {
            uint8_t keep = p[i];
            p[i] = vals[k];
            nn_graph *g = (nn_graph *)p;
            ffu_status st = load_graph(p, n, &g);
            if (st < 0 && g) bad = (int)i;
            if (st >= 0) {
                loaded++;
                nn_graph_destroy(g);
                ffu_nn_model *m = (ffu_nn_model *)p;
                if (ffu_nn_model_load_memory(p, n, NULL, 0, &m) < 0 && m) bad = (int)i;
                ffu_nn_model_destroy(m);
            }
            p[i] = keep;
        }
    free(p);
    printf("byte flips: %d of %zu variants loaded\n", loaded, 3 * n);
    CHECK_EQ_INT(bad, -1);
    CHECK(loaded > 0); /* some bytes (data, names) do not matter */
}

static void test_bad_indices(void)
{
    static tb_model tm;
    char msg[512];
    /* an operator input past the tensor list */
    small_model(&tm);
    tm.ops[1].in[0] = 42;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_FORMAT);
    CHECK(strstr(msg, "tensor index 42") != NULL);
    /* a negative graph output */
    small_model(&tm);
    tm.outputs[0] = -3;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_FORMAT);
    /* a buffer past the buffer list */
    small_model(&tm);
    tm.tensors[1].buffer = 99;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_FORMAT);
    CHECK(strstr(msg, "buffer 99") != NULL);
    /* an operator code past the list */
    small_model(&tm);
    tm.ops[0].opcode = 7;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_FORMAT);
    CHECK(strstr(msg, "opcode 7") != NULL);
    /* an operator reading a tensor nothing wrote */
    small_model(&tm);
    tm.ops[0].in[0] = 4; /* y, written by the later RELU6 */
    CHECK(try_load(&tm, msg, sizeof msg) < 0);
}

static void test_bad_sizes(void)
{
    static tb_model tm;
    char msg[512];
    /* weights with 4 bytes fewer than their shape needs */
    small_model(&tm);
    tm.tensors[1].nbytes -= 4;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_FORMAT);
    CHECK(strstr(msg, "'w'") != NULL && strstr(msg, "data bytes") != NULL);
    /* a negative dimension */
    small_model(&tm);
    tm.tensors[4].shape[1] = -2;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_FORMAT);
    /* a filter of rank 3 */
    small_model(&tm);
    tm.tensors[1].rank = 3, tm.tensors[1].shape[2] = 6;
    CHECK(try_load(&tm, msg, sizeof msg) < 0);
    /* weights whose element count overflows 64 bits */
    small_model(&tm);
    for (int i = 0; i < 4; i++) tm.tensors[1].shape[i] = 0x7fffffff;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_FORMAT);
    /* an input of 2^62 elements: whatever the model loader says, it says it cleanly */
    small_model(&tm);
    tm.tensors[0].shape[1] = tm.tensors[0].shape[2] = 1 << 30;
    ffu_nn_model *m = (ffu_nn_model *)&tm;
    size_t n;
    uint8_t *p = tb_pack(&tm, &n);
    ffu_status st = ffu_nn_model_load_memory(p, n, NULL, 0, &m);
    free(p);
    printf("2^62-element input: %s\n", st < 0 ? ffu_error_message() : "loaded");
    CHECK(st < 0 ? m == NULL : m != NULL);
    ffu_nn_model_destroy(m);
}

/* FlatBuffer damage: the root table's vtable outside the file, a field offset beyond
 * its table, a vector count beyond the file. */
static void test_bad_flatbuffer(void)
{
    static tb_model tm;
    small_model(&tm);
    size_t n;
    uint8_t *p = tb_pack(&tm, &n);
    uint32_t root;
    memcpy(&root, p, 4);
    int32_t soff, keep;
    memcpy(&keep, p + root, 4);
    nn_graph *g = (nn_graph *)p;
    /* vtable = table - soffset: past the end, then before the start */
    soff = -(int32_t)(n + 64);
    memcpy(p + root, &soff, 4);
    CHECK_EQ_INT(load_graph(p, n, &g), FFU_ERR_FORMAT);
    CHECK(g == NULL && strstr(ffu_error_message(), "vtable") != NULL);
    soff = (int32_t)root + 8;
    memcpy(p + root, &soff, 4);
    CHECK_EQ_INT(load_graph(p, n, &g), FFU_ERR_FORMAT);
    memcpy(p + root, &keep, 4);
    /* the root vtable's table size past the end of the file */
    size_t vt = (size_t)((int64_t)root - keep);
    uint16_t big = 0xfff0, old;
    memcpy(&old, p + vt + 2, 2);
    memcpy(p + vt + 2, &big, 2);
    CHECK_EQ_INT(load_graph(p, n, &g), FFU_ERR_FORMAT);
    memcpy(p + vt + 2, &old, 2);
    /* the version field's offset past the table's size */
    uint16_t off, bad = 0x200;
    memcpy(&off, p + vt + 4, 2);
    memcpy(p + vt + 4, &bad, 2);
    CHECK_EQ_INT(load_graph(p, n, &g), FFU_ERR_FORMAT);
    memcpy(p + vt + 4, &off, 2);
    /* the operator-code vector's count made huge */
    uint16_t codes_off;
    memcpy(&codes_off, p + vt + 6, 2);
    uint32_t rel, huge = 0x40000000;
    memcpy(&rel, p + root + codes_off, 4);
    size_t cv = root + codes_off + rel;
    uint32_t count;
    memcpy(&count, p + cv, 4);
    memcpy(p + cv, &huge, 4);
    CHECK_EQ_INT(load_graph(p, n, &g), FFU_ERR_FORMAT);
    memcpy(p + cv, &count, 4);
    /* restored: loads */
    CHECK_EQ_INT(load_graph(p, n, &g), FFU_OK);
    nn_graph_destroy(g);
    /* not a TFLite file */
    memcpy(p + 4, "TFL2", 4);
    CHECK(!nn_tflite_is(p, n));
    g = (nn_graph *)p;
    CHECK_EQ_INT(load_graph(p, n, &g), FFU_ERR_FORMAT);
    CHECK(g == NULL);
    free(p);
}

static void test_refused(void)
{
    static tb_model tm;
    static const int8_t q[54] = {1};
    char msg[512];
    /* a custom operator, named in the error */
    small_model(&tm);
    tm.codes[tm.ncodes].builtin = TB_CUSTOM;
    tm.codes[tm.ncodes].custom = "FaceMagic";
    tm.ops[1].opcode = tm.ncodes++;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(msg, "FaceMagic") != NULL);
    /* int8 weights with quantization scales */
    small_model(&tm);
    tm.tensors[1].type = TB_I8, tm.tensors[1].data = q, tm.tensors[1].nbytes = sizeof q;
    tm.tensors[1].quant = 1;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(msg, "quantized") != NULL);
    /* a quantized int8 input */
    small_model(&tm);
    tm.tensors[0].type = TB_I8, tm.tensors[0].quant = 1;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(msg, "quantized") != NULL);
    /* an unknown builtin code */
    small_model(&tm);
    tm.codes[tm.ops[1].opcode].builtin = 200;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(msg, "200") != NULL);
    /* schema version 2 (and 4) */
    small_model(&tm);
    tm.version = 2;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(msg, "version 2") != NULL);
    tm.version = 4;
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_ERR_UNSUPPORTED);
    /* the unchanged model loads */
    small_model(&tm);
    CHECK_EQ_INT(try_load(&tm, msg, sizeof msg), FFU_OK);
}

/* ---- MobileFaceNet from the model cache ------------------------------------------------------ */

static const char *cache_model(const char *file, char *buf, size_t len)
{
    const char *env = getenv("FFU_MODEL_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (env && *env) snprintf(buf, len, "%s/%s", env, file);
    else if (xdg && *xdg) snprintf(buf, len, "%s/facefuse/models/%s", xdg, file);
    else snprintf(buf, len, "%s/.cache/facefuse/models/%s", home ? home : ".", file);
    struct stat st;
    return stat(buf, &st) == 0 ? buf : NULL;
}

static void test_mobilefacenet(void)
{
    char path[4096];
    if (!cache_model("mobilefacenet-expo.tflite", path, sizeof path))
        TEST_SKIP("no mobilefacenet-expo.tflite in the model cache");
    ffu_nn_model *m = NULL;
    ffu_status st = ffu_nn_model_load(path, &m);
    if (st < 0) fprintf(stderr, "load: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    ffu_nn_tensor in, out;
    CHECK_EQ_INT(ffu_nn_model_num_inputs(m), 1);
    CHECK_EQ_INT(ffu_nn_model_num_outputs(m), 1);
    CHECK_EQ_INT(ffu_nn_model_input(m, 0, &in), FFU_OK);
    CHECK_EQ_INT(ffu_nn_model_output(m, 0, &out), FFU_OK);
    int ok = in.rank == 4 && in.dims[0] == -1 && in.dims[1] == 112 && in.dims[2] == 112 &&
             in.dims[3] == 3 && in.dtype == FFU_DTYPE_F32;
    /* the declared output, [batch, 192], is checked last so a miss there does not hide
     * the runs' results */
    int declared = out.rank == 2 && out.dims[0] == -1 && out.dims[1] == 192;
    /* the ops: a summary of a TFLite graph with convolutions */
    ffu_jw *w = NULL;
    if (ok && ffu_jw_create(&w, 0) == FFU_OK && ffu_nn_model_describe(m, w) == FFU_OK) {
        const char *t = ffu_jw_text(w, NULL);
        printf("mobilefacenet: %.400s\n", t);
        ok = strstr(t, "\"tflite\"") != NULL && strstr(t, "Conv") != NULL;
    }
    ffu_jw_destroy(w);
    if (!ok) {
        fprintf(stderr, "input rank %d [%lld %lld %lld %lld], output rank %d [%lld %lld]\n",
                in.rank, (long long)in.dims[0], (long long)in.dims[1], (long long)in.dims[2],
                (long long)in.dims[3], out.rank, (long long)out.dims[0], (long long)out.dims[1]);
        ffu_nn_model_destroy(m);
    }
    CHECK(ok);
    size_t item = 112 * 112 * 3;
    float *x = malloc(2 * item * sizeof(float));
    static out_buf o2, oa, ob;
    ok = x != NULL;
    if (ok) {
        fill(x, 2 * item, -1, 1, 40);
        ok = run_model(m, "cpu", 2, x, 2 * item, &o2, 1) == FFU_OK &&
             run_model(m, "cpu", 1, x, item, &oa, 1) == FFU_OK &&
             run_model(m, "cpu", 1, x + item, item, &ob, 1) == FFU_OK;
    }
    if (ok) {
        float mag = 0, diff = 0;
        for (int i = 0; i < 192; i++) {
            mag = fmaxf(mag, fabsf(oa.v[i]));
            diff = fmaxf(diff, fabsf(oa.v[i] - ob.v[i]));
            ok = ok && isfinite(oa.v[i]) && isfinite(ob.v[i]);
        }
        printf("mobilefacenet: |y| max %.4g, two inputs differ by up to %.4g\n", mag, diff);
        ok = ok && dims_are(&oa, 2, (const int64_t[]){1, 192}) &&
             dims_are(&o2, 2, (const int64_t[]){2, 192}) && mag > 0 && diff > 1e-3f * mag;
        ok = ok && close_to("batch 2 item 0 vs batch 1", o2.v, oa.v, 192, 2e-4f) &&
             close_to("batch 2 item 1 vs batch 1", o2.v + 192, ob.v, 192, 2e-4f);
    }
    free(x);
    ffu_nn_model_destroy(m);
    CHECK(ok);
    if (!declared)
        fprintf(stderr, "declared output: rank %d [%lld %lld], expected [-1 192]\n", out.rank,
                (long long)out.dims[0], (long long)out.dims[1]);
    CHECK(declared);
}

TEST_MAIN(test_conv_relu6, test_depthwise_add, test_pools, test_fc_softmax, test_fc_keep_dims,
          test_reductions,
          test_prelu_arith, test_pad_mean_concat, test_reshape, test_f16_dequantize, test_unary,
          test_output_info, test_batch_dynamic, test_batch_fixed, test_batch_fc_keep_dims,
          test_batch_concat_const, test_signature_reshape, test_truncated, test_byte_flips,
          test_bad_indices, test_bad_sizes, test_bad_flatbuffer, test_refused, test_mobilefacenet)
