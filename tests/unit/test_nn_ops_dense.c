/* Reference kernels of the dense, normalisation, pooling, reduction, resize, pad,
 * depth/space and grid-sampling ops (src/nn/ops/{conv,gemm,norm,pool,reduce,resize,
 * pad,space,grid_sample}.c).
 *
 * Each op is run through its nn_op_def (infer, then run on our own buffers) on tiny
 * graphs and compared with hand-computed values and with a second, deliberately naive
 * implementation written here straight from the ONNX operator text (one output element
 * at a time, no tricks), on odd shapes with a fixed seed. */
#include "test.h"

#include "nn/ir.h"


/* ---- a tiny graph around one node ------------------------------------------------------- */

typedef struct tg {
    nn_graph *g;
    nn_op op;
    int nin, nout, node;
    int in[8], out[4];
    void *outbuf[4];
} tg;

static nn_shape shp(int rank, const int64_t *d)
{
    nn_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++)
        s.d[i] = d[i];
    return s;
}

#define SHAPE(...)                                                                                 \
    shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static void tg_begin(tg *t, nn_op op, int nout)
{
    memset(t, 0, sizeof *t);
    nn_graph_create(&t->g);
    t->op = op;
    t->nout = nout;
}

/* A runtime (non-constant) input whose data is the caller's buffer, copied as a
 * constant only when is_const (shape-as-data inputs). */
static void tg_in(tg *t, ffu_dtype dt, nn_shape s, const void *data, int is_const)
{
    int64_t numel = nn_shape_numel(&s);
    int id = is_const ? nn_graph_add_const(t->g, "", dt, &s, data,
                                           (size_t)numel * ffu_dtype_size(dt), NN_COPY)
                      : nn_graph_add_tensor(t->g, "", dt, &s);
    if (!is_const && id >= 0) {
        /* keep the pointer for run(): stash it in the tensor's data field */
        t->g->tensors[id].data = (void *)data;
    }
    t->in[t->nin++] = id;
}

static void tg_omit(tg *t) { t->in[t->nin++] = -1; }

static int tg_node(tg *t)
{
    for (int i = 0; i < t->nout; i++)
        t->out[i] = nn_graph_add_tensor(t->g, "", FFU_DTYPE_F32, NULL);
    t->node = nn_graph_add_node(t->g, t->op, "n", t->in, t->nin, t->out, t->nout);
    return t->node;
}

static nn_node *tg_n(tg *t) { return &t->g->nodes[t->node]; }

/* infer + run; output buffers are malloc'd (freed by tg_end). */
static ffu_status tg_run(tg *t)
{
    const nn_op_def *d = nn_op_get(t->op);
    if (!d) return FFU_ERR_UNSUPPORTED;
    ffu_status st = d->infer(t->g, tg_n(t));
    if (st < 0) return st;
    void *in[8], *out[4];
    for (int i = 0; i < t->nin; i++)
        in[i] = t->in[i] >= 0 ? t->g->tensors[t->in[i]].data : NULL;
    for (int i = 0; i < t->nout; i++) {
        nn_tensor *o = &t->g->tensors[t->out[i]];
        int64_t numel = nn_shape_numel(&o->shape);
        if (numel < 0) return FFU_ERR_INVALID;
        /* a sentinel-filled buffer with a guard zone after it */
        size_t bytes = (size_t)numel * ffu_dtype_size(o->dtype);
        unsigned char *b = malloc(bytes + 64);
        memset(b, 0xA5, bytes + 64);
        t->outbuf[i] = out[i] = b;
    }
    size_t sb = d->scratch_bytes ? d->scratch_bytes(t->g, tg_n(t)) : 0;
    void *scratch = sb ? malloc(sb) : NULL;
    st = d->run(t->g, tg_n(t), in, out, scratch);
    free(scratch);
    for (int i = 0; i < t->nout && st >= 0; i++) {
        nn_tensor *o = &t->g->tensors[t->out[i]];
        size_t bytes = (size_t)nn_shape_numel(&o->shape) * ffu_dtype_size(o->dtype);
        for (int k = 0; k < 64; k++)
            if (((unsigned char *)t->outbuf[i])[bytes + k] != 0xA5) return FFU_ERR_INVALID;
    }
    return st;
}

static const nn_shape *tg_oshape(tg *t, int i) { return &t->g->tensors[t->out[i]].shape; }

static void tg_end(tg *t)
{
    for (int i = 0; i < t->nout; i++)
        free(t->outbuf[i]);
    nn_graph_destroy(t->g);
}

static float *rand_buf(uint64_t *seed, int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = test_rand_f(seed) * 2.0f - 1.0f;
    return p;
}

/* max |a - b| relative to max(1, |b|) */
static double max_err(const float *a, const float *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]) / fmax(1.0, fabs((double)b[i]));
        if (!(d <= m)) m = isnan(d) ? INFINITY : d;
    }
    return m;
}

#define CHECK_SHAPE(s, ...)                                                                        \
    do {                                                                                           \
        nn_shape e_ = SHAPE(__VA_ARGS__);                                                          \
        char a_[64], b_[64];                                                                       \
        if (!nn_shape_equal((s), &e_)) {                                                           \
            fprintf(stderr, "%s:%d: shape %s, expected %s\n", __FILE__, __LINE__,                  \
                    nn_shape_str((s), a_, sizeof a_), nn_shape_str(&e_, b_, sizeof b_));           \
            test_failed_ = 1;                                                                      \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* ---- naive Conv / ConvTranspose (2-D, from the ONNX definitions) --------------------------- */

typedef struct cparams {
    int64_t N, C, H, W, M, KH, KW, group, sh, sw, dh, dw, pt, pl, pb, pr;
} cparams;

static int64_t conv_out(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t d, int64_t s)
{
    return (in + p0 + p1 - ((k - 1) * d + 1)) / s + 1;
}

/* y[n,m,oh,ow] = b[m] + sum_{c in group, kh, kw} x[n, g*C/G + c, oh*sh - pt + kh*dh,
 * ow*sw - pl + kw*dw] * w[m, c, kh, kw] */
static void naive_conv(const cparams *p, const float *x, const float *w, const float *b, float *y)
{
    int64_t OH = conv_out(p->H, p->pt, p->pb, p->KH, p->dh, p->sh);
    int64_t OW = conv_out(p->W, p->pl, p->pr, p->KW, p->dw, p->sw);
    int64_t cg = p->C / p->group, mg = p->M / p->group;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = b ? b[m] : 0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t kh = 0; kh < p->KH; kh++)
                            for (int64_t kw = 0; kw < p->KW; kw++) {
                                int64_t ih = oh * p->sh - p->pt + kh * p->dh;
                                int64_t iw = ow * p->sw - p->pl + kw * p->dw;
                                if (ih < 0 || ih >= p->H || iw < 0 || iw >= p->W) continue;
                                int64_t ci = (m / mg) * cg + c;
                                s += (double)x[((n * p->C + ci) * p->H + ih) * p->W + iw] *
                                     w[((m * cg + c) * p->KH + kh) * p->KW + kw];
                            }
                    y[((n * p->M + m) * OH + oh) * OW + ow] = (float)s;
                }
}

/* ConvTranspose as the adjoint of Conv: every input pixel x[n,c,ih,iw] adds
 * x * w[c, m, kh, kw] to y[n, g*M/G + m, ih*sh - pt + kh*dh, iw*sw - pl + kw*dw]. */
static void naive_conv_transpose(const cparams *p, int64_t OH, int64_t OW, const float *x,
                                 const float *w, const float *b, float *y)
{
    int64_t cg = p->C / p->group, mg = p->M / p->group;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t i = 0; i < OH * OW; i++)
                y[(n * p->M + m) * OH * OW + i] = b ? b[m] : 0;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t ih = 0; ih < p->H; ih++)
                for (int64_t iw = 0; iw < p->W; iw++)
                    for (int64_t m = 0; m < mg; m++)
                        for (int64_t kh = 0; kh < p->KH; kh++)
                            for (int64_t kw = 0; kw < p->KW; kw++) {
                                int64_t oh = ih * p->sh - p->pt + kh * p->dh;
                                int64_t ow = iw * p->sw - p->pl + kw * p->dw;
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                                int64_t mo = (c / cg) * mg + m;
                                y[((n * p->M + mo) * OH + oh) * OW + ow] +=
                                    x[((n * p->C + c) * p->H + ih) * p->W + iw] *
                                    w[((c * mg + m) * p->KH + kh) * p->KW + kw];
                            }
}

static int run_conv_case(const cparams *p, int with_bias, int transpose, uint64_t seed, double *err)
{
    int64_t wsz = transpose ? p->C * (p->M / p->group) * p->KH * p->KW
                            : p->M * (p->C / p->group) * p->KH * p->KW;
    float *x = rand_buf(&seed, p->N * p->C * p->H * p->W), *w = rand_buf(&seed, wsz);
    float *b = rand_buf(&seed, p->M);
    tg t;
    tg_begin(&t, transpose ? NN_OP_CONV_TRANSPOSE : NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(p->N, p->C, p->H, p->W), x, 0);
    if (transpose)
        tg_in(&t, FFU_DTYPE_F32, SHAPE(p->C, p->M / p->group, p->KH, p->KW), w, 1);
    else
        tg_in(&t, FFU_DTYPE_F32, SHAPE(p->M, p->C / p->group, p->KH, p->KW), w, 1);
    if (with_bias) tg_in(&t, FFU_DTYPE_F32, SHAPE(p->M), b, 1);
    tg_node(&t);
    int64_t pads[4] = {p->pt, p->pl, p->pb, p->pr}, st[2] = {p->sh, p->sw}, dl[2] = {p->dh, p->dw};
    nn_node_set_ints(t.g, t.node, "pads", pads, 4);
    nn_node_set_ints(t.g, t.node, "strides", st, 2);
    nn_node_set_ints(t.g, t.node, "dilations", dl, 2);
    nn_node_set_int(t.g, t.node, "group", p->group);
    int rc = tg_run(&t) < 0 ? -1 : 0;
    int64_t OH, OW;
    if (transpose) {
        OH = (p->H - 1) * p->sh + (p->KH - 1) * p->dh + 1 - p->pt - p->pb;
        OW = (p->W - 1) * p->sw + (p->KW - 1) * p->dw + 1 - p->pl - p->pr;
    } else {
        OH = conv_out(p->H, p->pt, p->pb, p->KH, p->dh, p->sh);
        OW = conv_out(p->W, p->pl, p->pr, p->KW, p->dw, p->sw);
    }
    nn_shape want = SHAPE(p->N, p->M, OH, OW);
    if (rc == 0 && !nn_shape_equal(tg_oshape(&t, 0), &want)) rc = -2;
    if (rc == 0) {
        float *ref = malloc(sizeof(float) * (size_t)(p->N * p->M * OH * OW));
        const float *bb = with_bias ? b : NULL;
        if (transpose)
            naive_conv_transpose(p, OH, OW, x, w, bb, ref);
        else
            naive_conv(p, x, w, bb, ref);
        *err = max_err(t.outbuf[0], ref, p->N * p->M * OH * OW);
        free(ref);
    }
    tg_end(&t);
    free(x);
    free(w);
    free(b);
    return rc;
}

static void test_conv_hand(void)
{
    /* 1x1x3x3 input 1..9, 2x2 ones kernel, stride 1, no pad: sums of 2x2 blocks */
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, b[1] = {0.5f};
    tg t;
    tg_begin(&t, NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 3, 3), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2), w, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1), b, 1);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 2, 2);
    const float *y = t.outbuf[0];
    CHECK_NEAR(y[0], 12.5, 1e-6);
    CHECK_NEAR(y[1], 16.5, 1e-6);
    CHECK_NEAR(y[2], 24.5, 1e-6);
    CHECK_NEAR(y[3], 28.5, 1e-6);
    tg_end(&t);

    /* same input, SAME_UPPER with stride 2: out 2x2, total pad 1 goes to the end */
    tg_begin(&t, NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 3, 3), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2), w, 1);
    tg_node(&t);
    int64_t st[2] = {2, 2};
    nn_node_set_ints(t.g, t.node, "strides", st, 2);
    nn_node_set_string(t.g, t.node, "auto_pad", "SAME_UPPER");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 2, 2);
    y = t.outbuf[0];
    CHECK_NEAR(y[0], 12, 1e-6); /* 1+2+4+5 */
    CHECK_NEAR(y[1], 9, 1e-6);  /* 3+6 (right column padded) */
    CHECK_NEAR(y[2], 15, 1e-6); /* 7+8 */
    CHECK_NEAR(y[3], 9, 1e-6);  /* 9 */
    tg_end(&t);

    /* SAME_LOWER puts the pad first */
    tg_begin(&t, NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 3, 3), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2), w, 1);
    tg_node(&t);
    nn_node_set_ints(t.g, t.node, "strides", st, 2);
    nn_node_set_string(t.g, t.node, "auto_pad", "SAME_LOWER");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    y = t.outbuf[0];
    CHECK_NEAR(y[0], 1, 1e-6);
    CHECK_NEAR(y[1], 5, 1e-6);  /* 2+3 */
    CHECK_NEAR(y[2], 11, 1e-6); /* 4+7 */
    CHECK_NEAR(y[3], 28, 1e-6); /* 5+6+8+9 */
    tg_end(&t);
}

static void test_conv_vs_naive(void)
{
    static const cparams cases[] = {
        /* N C  H  W  M KH KW g sh sw dh dw pt pl pb pr */
        {1, 3, 13, 17, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 4, 13, 17, 6, 3, 5, 2, 3, 2, 1, 1, 2, 0, 1, 3}, /* groups, stride 3, asym */
        {1, 6, 11, 9, 6, 3, 3, 6, 1, 1, 2, 2, 2, 2, 2, 2},  /* depthwise, dilation 2 */
        {1, 5, 7, 12, 4, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},  /* 1x1, stride 2 */
        {1, 2, 9, 9, 3, 4, 2, 1, 2, 3, 2, 1, 0, 3, 1, 0},
        {1, 8, 5, 6, 4, 2, 2, 4, 1, 1, 1, 3, 1, 0, 0, 1}, /* groups of 2 in, 1 out */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double err = -1;
        CHECK_EQ_INT(run_conv_case(&cases[i], (int)(i % 2 == 0), 0, 1000 + i, &err), 0);
        if (err > 1e-5) fprintf(stderr, "conv case %zu: err %g\n", i, err);
        CHECK(err >= 0 && err <= 1e-5);
    }
}

static void test_conv_transpose_vs_naive(void)
{
    static const cparams cases[] = {
        {1, 3, 5, 7, 2, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1},
        {2, 4, 4, 5, 6, 3, 2, 2, 3, 2, 1, 2, 0, 1, 2, 0},
        {1, 4, 6, 3, 4, 4, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1}, /* depthwise upsampler */
        {1, 2, 3, 3, 3, 3, 3, 1, 1, 1, 2, 2, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double err = -1;
        CHECK_EQ_INT(run_conv_case(&cases[i], (int)(i % 2), 1, 2000 + i, &err), 0);
        if (err > 1e-5) fprintf(stderr, "convT case %zu: err %g\n", i, err);
        CHECK(err >= 0 && err <= 1e-5);
    }
}

static void test_conv_transpose_output_shape(void)
{
    /* 1x1x3x3 ones, 3x3 ones kernel, stride 2: full output 7x7; output_shape 8x8 adds
     * output padding; output_padding 1 does the same */
    float x[9], w[9];
    for (int i = 0; i < 9; i++)
        x[i] = w[i] = 1;
    for (int mode = 0; mode < 2; mode++) {
        tg t;
        tg_begin(&t, NN_OP_CONV_TRANSPOSE, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 3, 3), x, 0);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 3, 3), w, 1);
        tg_node(&t);
        int64_t st[2] = {2, 2}, os[2] = {8, 8}, op[2] = {1, 1};
        nn_node_set_ints(t.g, t.node, "strides", st, 2);
        if (mode == 0)
            nn_node_set_ints(t.g, t.node, "output_shape", os, 2);
        else
            nn_node_set_ints(t.g, t.node, "output_padding", op, 2);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 8, 8);
        const float *y = t.outbuf[0];
        CHECK_NEAR(y[0], 1, 1e-6);
        CHECK_NEAR(y[2], 2, 1e-6); /* two kernels overlap at x=2 */
        CHECK_NEAR(y[2 * 8 + 2], 4, 1e-6);
        CHECK_NEAR(y[7], 0, 1e-6); /* the padded column */
        CHECK_NEAR(y[7 * 8 + 7], 0, 1e-6);
        tg_end(&t);
    }
}

static void test_conv_1d_3d(void)
{
    /* 1-D: x = 1..6, kernel [1, -1], dilation 2, pads 1/0 */
    float x[6] = {1, 2, 3, 4, 5, 6}, w[2] = {1, -1};
    tg t;
    tg_begin(&t, NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 6), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2), w, 1);
    tg_node(&t);
    int64_t dl[1] = {2}, pads[2] = {1, 0};
    nn_node_set_ints(t.g, t.node, "dilations", dl, 1);
    nn_node_set_ints(t.g, t.node, "pads", pads, 2);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 5);
    const float *y = t.outbuf[0];
    /* y[o] = x[o-1] - x[o+1] with x[-1] = 0 */
    CHECK_NEAR(y[0], -2, 1e-6);
    CHECK_NEAR(y[1], -2, 1e-6);
    CHECK_NEAR(y[4], -2, 1e-6);
    tg_end(&t);

    /* 3-D: 2x3x4 input, 2x2x2 ones kernel = block sums */
    float x3[24], w3[8];
    for (int i = 0; i < 24; i++)
        x3[i] = (float)i;
    for (int i = 0; i < 8; i++)
        w3[i] = 1;
    tg_begin(&t, NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 3, 4), x3, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2, 2), w3, 1);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 1, 2, 3);
    y = t.outbuf[0];
    CHECK_NEAR(y[0], 0 + 1 + 4 + 5 + 12 + 13 + 16 + 17, 1e-5);
    CHECK_NEAR(y[5], 6 + 7 + 10 + 11 + 18 + 19 + 22 + 23, 1e-5);
    tg_end(&t);
}

static void test_conv_fused_act_and_errors(void)
{
    float x[4] = {1, -2, 3, -4}, w[2] = {1, 2}, slope[2] = {0.5f, 0.25f};
    tg t;
    tg_begin(&t, NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 1, 1, 1), w, 1);
    tg_node(&t);
    nn_shape ss = SHAPE(2);
    int sl = nn_graph_add_const(t.g, "slope", FFU_DTYPE_F32, &ss, slope, sizeof slope, NN_COPY);
    tg_n(&t)->act.kind = NN_ACT_PRELU;
    tg_n(&t)->act.slope = sl;
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    const float *y = t.outbuf[0];
    CHECK_NEAR(y[0], 1, 1e-6);
    CHECK_NEAR(y[1], -1, 1e-6); /* -2 * 0.5 */
    CHECK_NEAR(y[5], -1, 1e-6); /* -4 * 0.25 */
    CHECK_NEAR(y[6], 6, 1e-6);
    tg_end(&t);

    /* channel mismatch: 3 input channels, weights for 2 */
    float wbad[2 * 2] = {0};
    tg_begin(&t, NN_OP_CONV, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 3, 2, 2), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 2, 1, 1), wbad, 1);
    tg_node(&t);
    CHECK_EQ_INT(nn_op_get(NN_OP_CONV)->infer(t.g, tg_n(&t)), FFU_ERR_FORMAT);
    tg_end(&t);
}

/* ---- Gemm / MatMul --------------------------------------------------------------------------- */

static void test_gemm(void)
{
    uint64_t seed = 7;
    const int64_t M = 5, N = 7, K = 3;
    for (int variant = 0; variant < 8; variant++) {
        int ta = variant & 1, tb = (variant >> 1) & 1, cmode = variant >> 2 ? 2 : variant % 3;
        float *a = rand_buf(&seed, M * K), *b = rand_buf(&seed, K * N), *c = rand_buf(&seed, M * N);
        tg t;
        tg_begin(&t, NN_OP_GEMM, 1);
        tg_in(&t, FFU_DTYPE_F32, ta ? SHAPE(K, M) : SHAPE(M, K), a, 0);
        tg_in(&t, FFU_DTYPE_F32, tb ? SHAPE(N, K) : SHAPE(K, N), b, 1);
        /* C: full [M,N], row vector [N], or column [M,1] */
        nn_shape cs = cmode == 0 ? SHAPE(M, N) : cmode == 1 ? SHAPE(N) : SHAPE(M, 1);
        tg_in(&t, FFU_DTYPE_F32, cs, c, 1);
        tg_node(&t);
        nn_node_set_int(t.g, t.node, "transA", ta);
        nn_node_set_int(t.g, t.node, "transB", tb);
        nn_node_set_float(t.g, t.node, "alpha", 0.5f);
        nn_node_set_float(t.g, t.node, "beta", -2.0f);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 0), M, N);
        const float *y = t.outbuf[0];
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += (double)(ta ? a[k * M + i] : a[i * K + k]) *
                         (tb ? b[j * K + k] : b[k * N + j]);
                double cv = cmode == 0 ? c[i * N + j] : cmode == 1 ? c[j] : c[i];
                CHECK_NEAR(y[i * N + j], 0.5 * s - 2.0 * cv, 1e-5);
            }
        tg_end(&t);
        free(a);
        free(b);
        free(c);
    }
}

static void test_matmul_broadcast(void)
{
    uint64_t seed = 11;
    /* [2,1,3,4] x [3,4,5] -> [2,3,3,5]; then 1-D operands */
    float *a = rand_buf(&seed, 2 * 3 * 4), *b = rand_buf(&seed, 3 * 4 * 5);
    tg t;
    tg_begin(&t, NN_OP_MATMUL, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 1, 3, 4), a, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(3, 4, 5), b, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 3, 3, 5);
    const float *y = t.outbuf[0];
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 5; j++) {
                    double s = 0;
                    for (int k = 0; k < 4; k++)
                        s += (double)a[(p * 3 + i) * 4 + k] * b[(q * 4 + k) * 5 + j];
                    CHECK_NEAR(y[((p * 3 + q) * 3 + i) * 5 + j], s, 1e-5);
                }
    tg_end(&t);

    /* [4] x [3,4,5] -> [3,5]; [3,4,5] x [5] -> [3,4]; [4] x [4] -> scalar */
    tg_begin(&t, NN_OP_MATMUL, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(4), a, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(3, 4, 5), b, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 3, 5);
    y = t.outbuf[0];
    for (int q = 0; q < 3; q++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++)
                s += (double)a[k] * b[(q * 4 + k) * 5 + j];
            CHECK_NEAR(y[q * 5 + j], s, 1e-5);
        }
    tg_end(&t);

    tg_begin(&t, NN_OP_MATMUL, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(3, 4, 5), b, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(5), a, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 3, 4);
    tg_end(&t);

    tg_begin(&t, NN_OP_MATMUL, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(4), a, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(4), a, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_EQ_INT(tg_oshape(&t, 0)->rank, 0);
    double s = 0;
    for (int k = 0; k < 4; k++)
        s += (double)a[k] * a[k];
    CHECK_NEAR(((float *)t.outbuf[0])[0], s, 1e-5);
    tg_end(&t);

    /* incompatible inner dims */
    tg_begin(&t, NN_OP_MATMUL, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), a, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(4, 2), b, 0);
    tg_node(&t);
    CHECK_EQ_INT(nn_op_get(NN_OP_MATMUL)->infer(t.g, tg_n(&t)), FFU_ERR_FORMAT);
    tg_end(&t);
    free(a);
    free(b);
}

/* ---- Einsum ------------------------------------------------------------------------------- */

/* An Einsum node over f32 inputs a (shape sa) and, when b, b (shape sb); runs it. */
static ffu_status einsum_case(tg *t, const char *eq, nn_shape sa, const float *a, nn_shape sb,
                              const float *b)
{
    tg_begin(t, NN_OP_EINSUM, 1);
    tg_in(t, FFU_DTYPE_F32, sa, a, 0);
    if (b) tg_in(t, FFU_DTYPE_F32, sb, b, 0);
    tg_node(t);
    nn_node_set_string(t->g, t->node, "equation", eq);
    return tg_run(t);
}

static void test_einsum(void)
{
    uint64_t seed = 29;
    float *a = rand_buf(&seed, 2 * 3 * 4 * 5), *b = rand_buf(&seed, 2 * 3 * 4 * 5);
    tg t;
    /* implicit output: letters used once, in ASCII order (upper case first): "kB,ij"
     * is B, i, j, k, and a transposed copy of the 2-D operand interleaved */
    CHECK_EQ_INT(einsum_case(&t, "kB, ij", SHAPE(4, 2), a, SHAPE(3, 5), b), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 3, 5, 4);
    const float *y = t.outbuf[0];
    for (int B = 0; B < 2; B++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++)
                for (int k = 0; k < 4; k++)
                    CHECK_NEAR(y[((B * 3 + i) * 5 + j) * 4 + k],
                               (double)a[k * 2 + B] * b[i * 5 + j], 1e-6);
    tg_end(&t);

    /* a trace in implicit mode ("ii" is used twice: summed) and a diagonal kept */
    CHECK_EQ_INT(einsum_case(&t, "ii", SHAPE(4, 4), a, SHAPE(0), NULL), FFU_OK);
    CHECK_EQ_INT(tg_oshape(&t, 0)->rank, 0);
    CHECK_NEAR(((float *)t.outbuf[0])[0], (double)a[0] + a[5] + a[10] + a[15], 1e-6);
    tg_end(&t);
    CHECK_EQ_INT(einsum_case(&t, "...ii->...i", SHAPE(2, 3, 3), a, SHAPE(0), NULL), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 3);
    y = t.outbuf[0];
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 3; i++)
            CHECK_NEAR(y[p * 3 + i], a[p * 9 + i * 4], 0);
    tg_end(&t);

    /* ellipses broadcast right-aligned, size-1 dims too: [3,1,4] . [2,1,4,5] over j */
    CHECK_EQ_INT(einsum_case(&t, "...ij,...jk->...ik", SHAPE(3, 1, 4), a, SHAPE(2, 1, 4, 5), b),
                 FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 3, 1, 5);
    y = t.outbuf[0];
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++)
            for (int k = 0; k < 5; k++) {
                double sum = 0;
                for (int j = 0; j < 4; j++)
                    sum += (double)a[q * 4 + j] * b[(p * 4 + j) * 5 + k];
                CHECK_NEAR(y[(p * 3 + q) * 5 + k], sum, 1e-5);
            }
    tg_end(&t);

    /* three operands, a summed index in one of them, and an empty sum */
    float *c = rand_buf(&seed, 8);
    tg_begin(&t, NN_OP_EINSUM, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), a, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(3, 4), b, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(4, 2), c, 0);
    tg_node(&t);
    nn_node_set_string(t.g, t.node, "equation", "ij,jk,kl->i");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2);
    y = t.outbuf[0];
    for (int i = 0; i < 2; i++) {
        double sum = 0;
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 2; l++)
                    sum += (double)a[i * 3 + j] * b[j * 4 + k] * c[k * 2 + l];
        CHECK_NEAR(y[i], sum, 1e-5);
    }
    tg_end(&t);
    CHECK_EQ_INT(einsum_case(&t, "ij->i", SHAPE(3, 0), a, SHAPE(0), NULL), FFU_OK);
    for (int i = 0; i < 3; i++)
        CHECK_NEAR(((float *)t.outbuf[0])[i], 0, 0);
    tg_end(&t);

    /* integers sum exactly in 64 bits */
    int64_t big[2] = {(int64_t)1 << 40, 3}, w[2] = {1 << 20, 5};
    tg_begin(&t, NN_OP_EINSUM, 1);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(2), big, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(2), w, 0);
    tg_node(&t);
    nn_node_set_string(t.g, t.node, "equation", "i,i->");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK(((int64_t *)t.outbuf[0])[0] == ((int64_t)1 << 60) + 15);
    tg_end(&t);

    /* malformed equations and operands */
    static const struct {
        const char *eq;
        int64_t da[3], db[3];
        int ra, rb;
        ffu_status want;
    } bad[] = {
        {"ij,jk->ik", {2, 3}, {4, 5}, 2, 2, FFU_ERR_FORMAT},  /* j is 3 and 4 */
        {"ij,jk->iz", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},  /* z in no input */
        {"ij,jk->ii", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},  /* output repeats */
        {"ijk,jk->i", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},  /* rank 2 for 3 letters */
        {"i1,jk", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},      /* not a letter */
        {"i..j,jk", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},    /* a lone '.' */
        {"...i...,jk", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT}, /* two ellipses */
        {"ij", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},         /* one term, two inputs */
        {"ij,jk,kl", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},   /* three terms */
        {"ij,jk-ik", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT},   /* '-' without '>' */
        {"ij,jk->ik,", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT}, /* text after the output */
        {"...j,jk->k", {2, 3}, {3, 5}, 2, 2, FFU_ERR_FORMAT}, /* output drops 1 dim */
        {"ii,ik->k", {2, 3}, {2, 5}, 2, 2, FFU_ERR_FORMAT},   /* 2x3 diagonal */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nn_shape sa = {.rank = bad[i].ra}, sb = {.rank = bad[i].rb};
        memcpy(sa.d, bad[i].da, sizeof bad[i].da);
        memcpy(sb.d, bad[i].db, sizeof bad[i].db);
        ffu_status st = einsum_case(&t, bad[i].eq, sa, a, sb, b);
        if (st != bad[i].want) printf("equation '%s': %d\n", bad[i].eq, st);
        CHECK_EQ_INT(st, bad[i].want);
        tg_end(&t);
    }
    /* the same equation is fine with one dim of 1 broadcasting */
    CHECK_EQ_INT(einsum_case(&t, "ij,jk->ik", SHAPE(2, 1), a, SHAPE(4, 5), b), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 5);
    tg_end(&t);
    free(a);
    free(b);
    free(c);
}

/* ---- normalisation ------------------------------------------------------------------------- */

static void test_batch_instance_layer_norm(void)
{
    uint64_t seed = 21;
    const int64_t N = 2, C = 3, H = 5, W = 7, HW = H * W;
    float *x = rand_buf(&seed, N * C * HW), *sc = rand_buf(&seed, C), *bi = rand_buf(&seed, C);
    float *mean = rand_buf(&seed, C), *var = rand_buf(&seed, C);
    for (int c = 0; c < C; c++)
        var[c] = fabsf(var[c]) + 0.1f;

    tg t;
    tg_begin(&t, NN_OP_BATCH_NORM, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(N, C, H, W), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(C), sc, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(C), bi, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(C), mean, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(C), var, 1);
    tg_node(&t);
    nn_node_set_float(t.g, t.node, "epsilon", 1e-3f);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    const float *y = t.outbuf[0];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < HW; i++) {
                int64_t k = (n * C + c) * HW + i;
                double want = (x[k] - mean[c]) / sqrt(var[c] + 1e-3f) * sc[c] + bi[c];
                CHECK_NEAR(y[k], want, 1e-5);
            }
    tg_end(&t);

    tg_begin(&t, NN_OP_INSTANCE_NORM, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(N, C, H, W), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(C), sc, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(C), bi, 1);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    y = t.outbuf[0];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            const float *p = x + (n * C + c) * HW;
            double m = 0, v = 0;
            for (int64_t i = 0; i < HW; i++)
                m += p[i];
            m /= HW;
            for (int64_t i = 0; i < HW; i++)
                v += (p[i] - m) * (p[i] - m);
            v /= HW;
            for (int64_t i = 0; i < HW; i++)
                CHECK_NEAR(y[(n * C + c) * HW + i], (p[i] - m) / sqrt(v + 1e-5) * sc[c] + bi[c],
                           1e-5);
        }
    tg_end(&t);

    /* LayerNorm over the last two dims (axis -2), Scale [H,W], B [W] broadcast */
    float *lsc = rand_buf(&seed, HW), *lb = rand_buf(&seed, W);
    tg_begin(&t, NN_OP_LAYER_NORM, 3);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(N, C, H, W), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(H, W), lsc, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(W), lb, 1);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "axis", -2);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 1), N, C, 1, 1);
    y = t.outbuf[0];
    const float *ym = t.outbuf[1], *yi = t.outbuf[2];
    for (int64_t r = 0; r < N * C; r++) {
        const float *p = x + r * HW;
        double m = 0, v = 0;
        for (int64_t i = 0; i < HW; i++)
            m += p[i];
        m /= HW;
        for (int64_t i = 0; i < HW; i++)
            v += (p[i] - m) * (p[i] - m);
        double inv = 1 / sqrt(v / HW + 1e-5);
        CHECK_NEAR(ym[r], m, 1e-6);
        CHECK_NEAR(yi[r], inv, 1e-4);
        for (int64_t i = 0; i < HW; i++)
            CHECK_NEAR(y[r * HW + i], (p[i] - m) * inv * lsc[i] + lb[i % W], 1e-5);
    }
    tg_end(&t);
    free(lsc);
    free(lb);

    /* BatchNorm training outputs are refused */
    tg_begin(&t, NN_OP_BATCH_NORM, 3);
    for (int i = 0; i < 5; i++)
        tg_in(&t, FFU_DTYPE_F32, i ? SHAPE(C) : SHAPE(N, C, H, W), x, 1);
    tg_node(&t);
    CHECK_EQ_INT(nn_op_get(NN_OP_BATCH_NORM)->infer(t.g, tg_n(&t)), FFU_ERR_UNSUPPORTED);
    tg_end(&t);
    free(x);
    free(sc);
    free(bi);
    free(mean);
    free(var);
}

static void test_lrn(void)
{
    uint64_t seed = 31;
    const int64_t C = 6, HW = 4;
    float *x = rand_buf(&seed, C * HW);
    tg t;
    tg_begin(&t, NN_OP_LRN, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, C, 2, 2), x, 0);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "size", 4);
    nn_node_set_float(t.g, t.node, "alpha", 0.01f);
    nn_node_set_float(t.g, t.node, "beta", 0.6f);
    nn_node_set_float(t.g, t.node, "bias", 2.0f);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    const float *y = t.outbuf[0];
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < HW; i++) {
            double sq = 0;
            /* size 4: channels c-1 .. c+2 */
            for (int64_t k = c - 1; k <= c + 2; k++)
                if (k >= 0 && k < C) sq += (double)x[k * HW + i] * x[k * HW + i];
            CHECK_NEAR(y[c * HW + i], x[c * HW + i] / pow(2.0 + 0.01f / 4 * sq, 0.6f), 1e-6);
        }
    tg_end(&t);
    free(x);
}

static void test_softmax(void)
{
    uint64_t seed = 41;
    float *x = rand_buf(&seed, 2 * 3 * 4);
    for (int i = 0; i < 24; i++)
        x[i] *= 30; /* large values: needs the max shift */
    for (int variant = 0; variant < 4; variant++) {
        int coerce = variant & 1, is_log = variant >> 1;
        tg t;
        tg_begin(&t, is_log ? NN_OP_LOG_SOFTMAX : NN_OP_SOFTMAX, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3, 4), x, 0);
        tg_node(&t);
        nn_node_set_int(t.g, t.node, "axis", 1);
        if (coerce) nn_node_set_int(t.g, t.node, "_coerce_2d", 1);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        const float *y = t.outbuf[0];
        /* opset 13: over dim 1 (3 values per (n, k)); coerced: over 12 values per n */
        for (int n = 0; n < 2; n++)
            for (int k = 0; k < (coerce ? 1 : 4); k++) {
                int len = coerce ? 12 : 3, stride = coerce ? 1 : 4;
                const float *p = x + n * 12 + k;
                double mx = -1e30, s = 0;
                for (int j = 0; j < len; j++)
                    mx = fmax(mx, p[j * stride]);
                for (int j = 0; j < len; j++)
                    s += exp(p[j * stride] - mx);
                for (int j = 0; j < len; j++) {
                    double want =
                        is_log ? p[j * stride] - mx - log(s) : exp(p[j * stride] - mx) / s;
                    CHECK_NEAR(y[n * 12 + k + j * stride], want, 1e-5);
                }
            }
        tg_end(&t);
    }
    free(x);
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on 2 samples of 3 classes by
 * hand: weights, ignore_index (also out of the class range), the three reductions, the
 * log_prob output, and a target outside [0, C) refused when it is not ignored. */
static void test_losses(void)
{
    const float x[6] = {-0.5f, -1.5f, -2.0f, -3.0f, -0.25f, -1.0f}; /* [2, 3] */
    const float w[3] = {0.5f, 2.0f, 1.0f};
    const int64_t tgt[2] = {0, 1}, tgt_ii[2] = {7, 1}, tgt_bad[2] = {3, 1};
    static const char *const reds[3] = {"none", "sum", "mean"};
    for (int sce = 0; sce < 2; sce++)
        for (int r = 0; r < 3; r++)
            for (int variant = 0; variant < 3; variant++) { /* plain, weights, ii = 7 */
                tg t;
                tg_begin(&t, sce ? NN_OP_SOFTMAX_CROSS_ENTROPY_LOSS : NN_OP_NLL_LOSS, sce ? 2 : 1);
                tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
                tg_in(&t, FFU_DTYPE_I64, SHAPE(2), variant == 2 ? tgt_ii : tgt, 0);
                if (variant >= 1) tg_in(&t, FFU_DTYPE_F32, SHAPE(3), w, 0);
                tg_node(&t);
                nn_node_set_string(t.g, t.node, "reduction", reds[r]);
                if (variant == 2) nn_node_set_int(t.g, t.node, "ignore_index", 7);
                CHECK_EQ_INT(tg_run(&t), FFU_OK);
                /* log probabilities: x itself, or x minus each row's log-sum-exp */
                double lp[6], loss[2], wt[2];
                for (int n = 0; n < 2; n++) {
                    double lse = log(exp(x[3 * n]) + exp(x[3 * n + 1]) + exp(x[3 * n + 2]));
                    for (int c = 0; c < 3; c++)
                        lp[3 * n + c] = x[3 * n + c] - (sce ? lse : 0);
                    const int64_t *tt = variant == 2 ? tgt_ii : tgt;
                    int ignored = variant == 2 && tt[n] == 7;
                    wt[n] = ignored ? 0 : variant >= 1 ? w[tt[n]] : 1;
                    loss[n] = ignored ? 0 : -wt[n] * lp[3 * n + tt[n]];
                }
                const float *y = t.outbuf[0];
                if (r == 0) {
                    CHECK(tg_oshape(&t, 0)->rank == 1 && tg_oshape(&t, 0)->d[0] == 2);
                    CHECK_NEAR(y[0], loss[0], 1e-6);
                    CHECK_NEAR(y[1], loss[1], 1e-6);
                } else {
                    CHECK_EQ_INT(tg_oshape(&t, 0)->rank, 0);
                    double sum = loss[0] + loss[1];
                    CHECK_NEAR(y[0],
                               r == 1    ? sum
                               : variant ? sum / (wt[0] + wt[1])
                                         : sum / 2,
                               1e-6);
                }
                if (sce)
                    for (int i = 0; i < 6; i++)
                        CHECK_NEAR(((const float *)t.outbuf[1])[i], lp[i], 1e-6);
                tg_end(&t);
            }
    tg t;
    tg_begin(&t, NN_OP_NLL_LOSS, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(2), tgt_bad, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "target 3 outside [0, 3)") != NULL);
    tg_end(&t);
    tg_begin(&t, NN_OP_NLL_LOSS, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(2), tgt, 0);
    tg_node(&t);
    nn_node_set_string(t.g, t.node, "reduction", "average");
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_FORMAT);
    tg_end(&t);
}

/* DFT, STFT and the windows against sums written out here: a cosine's two spectral
 * lines, the inverse giving the signal back, a zero-padded one-sided transform, and STFT
 * frames as windowed DFTs. */
static void dft_naive(const double *x, int64_t L, int64_t N, double *re, double *im)
{
    for (int64_t k = 0; k < N; k++) {
        re[k] = im[k] = 0;
        for (int64_t j = 0; j < L && j < N; j++) {
            double a = -2 * M_PI * (double)j * (double)k / (double)N;
            re[k] += x[2 * j] * cos(a) - x[2 * j + 1] * sin(a);
            im[k] += x[2 * j] * sin(a) + x[2 * j + 1] * cos(a);
        }
    }
}

static void test_signal_ops(void)
{
    /* a cosine of 3 cycles in 12 samples: lines of 6 at bins 3 and 9 */
    float cs[12];
    for (int j = 0; j < 12; j++)
        cs[j] = (float)cos(2 * M_PI * 3 * j / 12);
    tg t;
    tg_begin(&t, NN_OP_DFT, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 12, 1), cs, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    const float *y = t.outbuf[0];
    for (int k = 0; k < 12; k++) {
        CHECK_NEAR(y[2 * k], k == 3 || k == 9 ? 6.0 : 0.0, 1e-5);
        CHECK_NEAR(y[2 * k + 1], 0.0, 1e-5);
    }
    float spec[24];
    memcpy(spec, y, sizeof spec);
    tg_end(&t);
    /* the inverse gives the cosine back, as a complex signal */
    tg_begin(&t, NN_OP_DFT, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 12, 2), spec, 0);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "inverse", 1);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    y = t.outbuf[0];
    for (int j = 0; j < 12; j++) {
        CHECK_NEAR(y[2 * j], cs[j], 1e-6);
        CHECK_NEAR(y[2 * j + 1], 0.0, 1e-6);
    }
    tg_end(&t);
    /* 10 random samples, dft_length 16 (zero padding), one-sided: bins 0..8 */
    uint64_t seed = 77;
    float *x = rand_buf(&seed, 64);
    double xd[32] = {0}, re[16], im[16];
    for (int j = 0; j < 10; j++)
        xd[2 * j] = x[j];
    dft_naive(xd, 10, 16, re, im);
    int64_t len = 16;
    tg_begin(&t, NN_OP_DFT, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 10, 1), x, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(1), &len, 1);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "onesided", 1);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK(tg_oshape(&t, 0)->rank == 3 && tg_oshape(&t, 0)->d[1] == 9 &&
          tg_oshape(&t, 0)->d[2] == 2);
    y = t.outbuf[0];
    for (int k = 0; k < 9; k++) {
        CHECK_NEAR(y[2 * k], re[k], 1e-5);
        CHECK_NEAR(y[2 * k + 1], im[k], 1e-5);
    }
    tg_end(&t);
    /* Hann window of 8 (periodic), then STFT of 64 samples in frames of 8 every 4 */
    int64_t wsize = 8, step = 4;
    tg_begin(&t, NN_OP_HANN_WINDOW, 1);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(1), &wsize, 1);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    float win[8];
    for (int j = 0; j < 8; j++) {
        win[j] = ((const float *)t.outbuf[0])[j];
        CHECK_NEAR(win[j], 0.5 - 0.5 * cos(2 * M_PI * j / 8), 1e-7);
    }
    tg_end(&t);
    tg_begin(&t, NN_OP_STFT, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 64, 1), x, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(1), &step, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(8), win, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    const nn_shape *os = tg_oshape(&t, 0);
    CHECK(os->rank == 4 && os->d[0] == 1 && os->d[1] == 15 && os->d[2] == 5 && os->d[3] == 2);
    y = t.outbuf[0];
    for (int f = 0; f < 15; f++) {
        double fr[16] = {0};
        for (int j = 0; j < 8; j++)
            fr[2 * j] = (double)win[j] * x[4 * f + j];
        dft_naive(fr, 8, 8, re, im);
        for (int k = 0; k < 5; k++) {
            CHECK_NEAR(y[(f * 5 + k) * 2], re[k], 1e-5);
            CHECK_NEAR(y[(f * 5 + k) * 2 + 1], im[k], 1e-5);
        }
    }
    tg_end(&t);
    free(x);
    /* 70,000 samples into 70,000 bins is 4.9e9 multiply-adds: refused at inference */
    tg_begin(&t, NN_OP_DFT, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 70000, 1), NULL, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(ffu_error_message(), "O(n^2)") != NULL);
    tg_end(&t);
}

/* RNN, GRU and LSTM: one unit, one step, by hand (clip and a chosen activation,
 * linear_before_reset, input_forget); then, on random weights, the reverse direction is
 * the forward one over time-reversed input, a bidirectional node is the two side by
 * side, and a shorter sequence_lens stops an item early with zeros after. */
typedef struct rnn_io {
    float y[2 * 4 * 2 * 3], yh[2 * 2 * 3]; /* [S=4, D<=2, B=2, H=3], [D, B, H] */
} rnn_io;

static ffu_status rnn_case(nn_op op, const float *x, int64_t S, int64_t I, const float *w,
                           const float *r, const float *b, int D, int64_t H, const char *dir,
                           const int32_t *lens, rnn_io *o)
{
    int G = op == NN_OP_RNN ? 1 : op == NN_OP_GRU ? 3 : 4;
    tg t;
    tg_begin(&t, op, 2);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(S, 2, I), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(D, G * H, I), w, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(D, G * H, H), r, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(D, 2 * G * H), b, 1);
    if (lens) tg_in(&t, FFU_DTYPE_I32, SHAPE(2), lens, 0);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "hidden_size", H);
    nn_node_set_string(t.g, t.node, "direction", dir);
    ffu_status st = tg_run(&t);
    if (st == FFU_OK) {
        memcpy(o->y, t.outbuf[0], sizeof(float) * (size_t)(S * D * 2 * H));
        memcpy(o->yh, t.outbuf[1], sizeof(float) * (size_t)(D * 2 * H));
    }
    tg_end(&t);
    return st;
}

static double sigm(double v) { return 1 / (1 + exp(-v)); }

static void test_recurrent(void)
{
    /* one unit, one step, batch 1: x = 0.5, h0 = 0.3 (c0 = -0.2), W = 0.7, R = -0.4 */
    const float x1 = 0.5f, h0 = 0.3f, c0 = -0.2f;
    for (int k = 0; k < 4; k++) {
        nn_op op = k == 0 ? NN_OP_RNN : k <= 2 ? NN_OP_GRU : NN_OP_LSTM;
        int G = op == NN_OP_RNN ? 1 : op == NN_OP_GRU ? 3 : 4;
        float w[4], r[4], b[8];
        for (int i = 0; i < G; i++)
            w[i] = 0.7f - 0.1f * (float)i, r[i] = -0.4f + 0.2f * (float)i;
        for (int i = 0; i < 2 * G; i++)
            b[i] = 0.05f * (float)(i + 1);
        tg t;
        tg_begin(&t, op, 2);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1), &x1, 0);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, G, 1), w, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, G, 1), r, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 2 * G), b, 1);
        tg_omit(&t);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1), &h0, 0);
        if (op == NN_OP_LSTM) tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1), &c0, 0);
        tg_node(&t);
        nn_node_set_int(t.g, t.node, "hidden_size", 1);
        double want;
        if (k == 0) { /* RNN: LeakyRelu(0.3) of the sum clipped to 0.1 */
            const char *acts[1] = {"LeakyRelu"};
            const float al[1] = {0.3f};
            nn_node_set_strings(t.g, t.node, "activations", acts, 1);
            nn_node_set_floats(t.g, t.node, "activation_alpha", al, 1);
            nn_node_set_float(t.g, t.node, "clip", 0.1f);
            double a = (double)x1 * w[0] + (double)h0 * r[0] + b[0] + b[1];
            a = fmax(-0.1, fmin(0.1, a));
            want = a >= 0 ? a : 0.3 * a;
        } else if (k == 1) { /* GRU with linear_before_reset */
            nn_node_set_int(t.g, t.node, "linear_before_reset", 1);
            double z = sigm((double)x1 * w[0] + (double)h0 * r[0] + b[0] + b[3]);
            double rr = sigm((double)x1 * w[1] + (double)h0 * r[1] + b[1] + b[4]);
            double n = tanh((double)x1 * w[2] + b[2] + rr * ((double)h0 * r[2] + b[5]));
            want = (1 - z) * n + z * h0;
        } else if (k == 2) { /* GRU without */
            double z = sigm((double)x1 * w[0] + (double)h0 * r[0] + b[0] + b[3]);
            double rr = sigm((double)x1 * w[1] + (double)h0 * r[1] + b[1] + b[4]);
            double n = tanh((double)x1 * w[2] + rr * h0 * r[2] + b[2] + b[5]);
            want = (1 - z) * n + z * h0;
        } else { /* LSTM with input_forget: f = 1 - i */
            nn_node_set_int(t.g, t.node, "input_forget", 1);
            double g4[4];
            for (int i = 0; i < 4; i++)
                g4[i] = (double)x1 * w[i] + (double)h0 * r[i] + b[i] + b[4 + i];
            double ig = sigm(g4[0]), cc = tanh(g4[3]), cn = (1 - ig) * c0 + ig * cc;
            want = sigm(g4[1]) * tanh(cn);
        }
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_NEAR(((const float *)t.outbuf[0])[0], want, 1e-6);
        CHECK_NEAR(((const float *)t.outbuf[1])[0], want, 1e-6);
        tg_end(&t);
    }
    /* random weights: directions and sequence lengths */
    uint64_t seed = 99;
    float *x = rand_buf(&seed, 4 * 2 * 2), xr[16];
    for (int t = 0; t < 4; t++)
        memcpy(xr + t * 4, x + (3 - t) * 4, 4 * sizeof(float));
    for (int k = 0; k < 3; k++) {
        nn_op op = k == 0 ? NN_OP_RNN : k == 1 ? NN_OP_GRU : NN_OP_LSTM;
        int G = op == NN_OP_RNN ? 1 : op == NN_OP_GRU ? 3 : 4;
        float *w = rand_buf(&seed, 2 * G * 3 * 2), *r = rand_buf(&seed, 2 * G * 3 * 3);
        float *b = rand_buf(&seed, 2 * 2 * G * 3);
        rnn_io fw, rv, rv_on_r, bi, cut;
        CHECK_EQ_INT(rnn_case(op, x, 4, 2, w, r, b, 1, 3, "forward", NULL, &fw), FFU_OK);
        CHECK_EQ_INT(rnn_case(op, xr, 4, 2, w, r, b, 1, 3, "reverse", NULL, &rv_on_r), FFU_OK);
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < 6; i++)
                CHECK_NEAR(rv_on_r.y[t * 6 + i], fw.y[(3 - t) * 6 + i], 1e-6);
        for (int i = 0; i < 6; i++)
            CHECK_NEAR(rv_on_r.yh[i], fw.yh[i], 1e-6);
        /* bidirectional: direction 0 with the first weights, 1 with the second */
        CHECK_EQ_INT(rnn_case(op, x, 4, 2, w, r, b, 2, 3, "bidirectional", NULL, &bi), FFU_OK);
        CHECK_EQ_INT(rnn_case(op, x, 4, 2, w + G * 3 * 2, r + G * 3 * 3, b + 2 * G * 3, 1, 3,
                              "reverse", NULL, &rv),
                     FFU_OK);
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < 6; i++) {
                CHECK_NEAR(bi.y[(t * 2 + 0) * 6 + i], fw.y[t * 6 + i], 1e-6);
                CHECK_NEAR(bi.y[(t * 2 + 1) * 6 + i], rv.y[t * 6 + i], 1e-6);
            }
        for (int i = 0; i < 6; i++) {
            CHECK_NEAR(bi.yh[i], fw.yh[i], 1e-6);
            CHECK_NEAR(bi.yh[6 + i], rv.yh[i], 1e-6);
        }
        /* item 1 stops after 2 steps: its first two outputs as before, then zeros */
        const int32_t lens[2] = {4, 2};
        CHECK_EQ_INT(rnn_case(op, x, 4, 2, w, r, b, 1, 3, "forward", lens, &cut), FFU_OK);
        for (int t = 0; t < 4; t++)
            for (int u = 0; u < 3; u++) {
                CHECK_NEAR(cut.y[t * 6 + u], fw.y[t * 6 + u], 1e-6);
                CHECK_NEAR(cut.y[t * 6 + 3 + u], t < 2 ? fw.y[t * 6 + 3 + u] : 0.0, 1e-6);
            }
        for (int u = 0; u < 3; u++)
            CHECK_NEAR(cut.yh[3 + u], fw.y[1 * 6 + 3 + u], 1e-6);
        const int32_t bad[2] = {5, 1};
        CHECK_EQ_INT(rnn_case(op, x, 4, 2, w, r, b, 1, 3, "forward", bad, &cut), FFU_ERR_INVALID);
        free(w), free(r), free(b);
    }
    free(x);
}

/* TfIdfVectorizer by hand on two rows: unigrams {4, 9}, bigram (4, 9) and trigram
 * (1, 4, 9) with skips up to 1, in the three modes, with weights and shuffled columns. */
static void test_tfidf(void)
{
    /* row 0: 4 9 4 1 9 9 -> unigram 4: 2, 9: 3; (4,9): skip 0 at 0, skip 1 at 2; (1,4,9): 0
     * row 1: 1 4 9 4 0 9 -> 4: 2, 9: 2; (4,9): skip 0 at 1, skip 1 at 3; (1,4,9): skip 0 */
    const int64_t x[12] = {4, 9, 4, 1, 9, 9, 1, 4, 9, 4, 0, 9};
    const int64_t pool[7] = {4, 9, 4, 9, 1, 4, 9}, counts[3] = {0, 2, 4}, index[4] = {3, 0, 2, 1};
    const float weights[4] = {0.5f, 2.0f, 3.0f, 0.25f};
    const double tf[2][4] = {{2, 3, 2, 0}, {2, 2, 2, 1}}; /* per pool n-gram */
    static const char *const modes[3] = {"TF", "IDF", "TFIDF"};
    for (int m = 0; m < 3; m++) {
        tg t;
        tg_begin(&t, NN_OP_TFIDF_VECTORIZER, 1);
        tg_in(&t, FFU_DTYPE_I64, SHAPE(2, 6), x, 0);
        tg_node(&t);
        nn_node_set_string(t.g, t.node, "mode", modes[m]);
        nn_node_set_int(t.g, t.node, "min_gram_length", 1);
        nn_node_set_int(t.g, t.node, "max_gram_length", 3);
        nn_node_set_int(t.g, t.node, "max_skip_count", 1);
        nn_node_set_ints(t.g, t.node, "pool_int64s", pool, 7);
        nn_node_set_ints(t.g, t.node, "ngram_counts", counts, 3);
        nn_node_set_ints(t.g, t.node, "ngram_indexes", index, 4);
        if (m) nn_node_set_floats(t.g, t.node, "weights", weights, 4);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 0), 2, 4);
        const float *y = t.outbuf[0];
        for (int r = 0; r < 2; r++)
            for (int o = 0; o < 4; o++) {
                double c = tf[r][o], w = weights[o];
                double want = m == 0 ? c : m == 1 ? (c > 0 ? w : 0) : c * w;
                CHECK_NEAR(y[r * 4 + index[o]], want, 1e-6);
            }
        tg_end(&t);
    }
}

/* ---- pooling ------------------------------------------------------------------------------ */

typedef struct pparams {
    int64_t H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
    int ceil_mode, include_pad;
} pparams;

/* Window positions follow the ONNX text: out = floor or ceil((in + pads - eff) / s) + 1,
 * dropping a last window that starts in the end padding. */
static int64_t pool_out(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t d, int64_t s,
                        int ceil_mode)
{
    int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
    int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p0) o--;
    return o;
}

static void naive_pool(const pparams *p, int is_max, const float *x, float *y, int64_t OH,
                       int64_t OW)
{
    for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
            double s = 0, m = -INFINITY;
            int64_t n = 0, npad = 0;
            for (int64_t kh = 0; kh < p->KH; kh++)
                for (int64_t kw = 0; kw < p->KW; kw++) {
                    int64_t ih = oh * p->sh - p->pt + kh * p->dh;
                    int64_t iw = ow * p->sw - p->pl + kw * p->dw;
                    if (ih >= -p->pt && ih < p->H + p->pb && iw >= -p->pl && iw < p->W + p->pr)
                        npad++;
                    if (ih < 0 || ih >= p->H || iw < 0 || iw >= p->W) continue;
                    s += x[ih * p->W + iw];
                    m = fmax(m, x[ih * p->W + iw]);
                    n++;
                }
            y[oh * OW + ow] = (float)(is_max ? m : s / (double)(p->include_pad ? npad : n));
        }
}

static void test_pool_vs_naive(void)
{
    static const pparams cases[] = {
        /* H  W KH KW sh sw dh dw pt pl pb pr ceil incl */
        {13, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, {13, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0},
        {13, 17, 3, 2, 3, 2, 1, 1, 0, 1, 2, 0, 1, 1}, {9, 10, 2, 3, 1, 2, 2, 2, 1, 0, 0, 1, 0, 1},
        {8, 8, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0},   {7, 11, 5, 5, 3, 3, 1, 1, 2, 2, 2, 2, 1, 1},
        {8, 9, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, 1, 0}, /* last window would start in pad */
    };
    uint64_t seed = 51;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const pparams *p = &cases[ci];
        const int64_t N = 2, C = 3, plane = p->H * p->W;
        float *x = rand_buf(&seed, N * C * plane);
        int64_t OH = pool_out(p->H, p->pt, p->pb, p->KH, p->dh, p->sh, p->ceil_mode);
        int64_t OW = pool_out(p->W, p->pl, p->pr, p->KW, p->dw, p->sw, p->ceil_mode);
        float *ref = malloc(sizeof(float) * (size_t)(OH * OW));
        for (int is_max = 0; is_max < 2; is_max++) {
            tg t;
            tg_begin(&t, is_max ? NN_OP_MAX_POOL : NN_OP_AVERAGE_POOL, 1);
            tg_in(&t, FFU_DTYPE_F32, SHAPE(N, C, p->H, p->W), x, 0);
            tg_node(&t);
            int64_t k[2] = {p->KH, p->KW}, st[2] = {p->sh, p->sw}, dl[2] = {p->dh, p->dw};
            int64_t pads[4] = {p->pt, p->pl, p->pb, p->pr};
            nn_node_set_ints(t.g, t.node, "kernel_shape", k, 2);
            nn_node_set_ints(t.g, t.node, "strides", st, 2);
            nn_node_set_ints(t.g, t.node, "dilations", dl, 2);
            nn_node_set_ints(t.g, t.node, "pads", pads, 4);
            nn_node_set_int(t.g, t.node, "ceil_mode", p->ceil_mode);
            nn_node_set_int(t.g, t.node, "count_include_pad", p->include_pad);
            CHECK_EQ_INT(tg_run(&t), FFU_OK);
            CHECK_SHAPE(tg_oshape(&t, 0), N, C, OH, OW);
            for (int64_t pl = 0; pl < N * C; pl++) {
                naive_pool(p, is_max, x + pl * plane, ref, OH, OW);
                double err = max_err((float *)t.outbuf[0] + pl * OH * OW, ref, OH * OW);
                if (err > 1e-6) fprintf(stderr, "pool case %zu max %d: err %g\n", ci, is_max, err);
                CHECK(err <= 1e-6);
            }
            tg_end(&t);
        }
        free(ref);
        free(x);
    }
}

static void test_pool_misc(void)
{
    /* MaxPool on u8 with SAME_UPPER, 1-D average with ceil_mode, global pools */
    uint8_t xb[12] = {1, 9, 3, 4, 200, 6, 7, 8, 0, 10, 11, 12};
    tg t;
    tg_begin(&t, NN_OP_MAX_POOL, 1);
    tg_in(&t, FFU_DTYPE_U8, SHAPE(1, 1, 3, 4), xb, 0);
    tg_node(&t);
    int64_t k[2] = {2, 2}, st[2] = {2, 2};
    nn_node_set_ints(t.g, t.node, "kernel_shape", k, 2);
    nn_node_set_ints(t.g, t.node, "strides", st, 2);
    nn_node_set_string(t.g, t.node, "auto_pad", "SAME_UPPER");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 2, 2);
    CHECK_EQ_INT(t.g->tensors[t.out[0]].dtype, FFU_DTYPE_U8);
    const uint8_t *yb = t.outbuf[0];
    CHECK_EQ_INT(yb[0], 200);
    CHECK_EQ_INT(yb[1], 8);
    CHECK_EQ_INT(yb[2], 10);
    CHECK_EQ_INT(yb[3], 12);
    tg_end(&t);

    float x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    tg_begin(&t, NN_OP_AVERAGE_POOL, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 5), x, 0);
    tg_node(&t);
    int64_t k1[1] = {2}, s1[1] = {2};
    nn_node_set_ints(t.g, t.node, "kernel_shape", k1, 1);
    nn_node_set_ints(t.g, t.node, "strides", s1, 1);
    nn_node_set_int(t.g, t.node, "ceil_mode", 1);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 3);
    const float *y = t.outbuf[0];
    CHECK_NEAR(y[0], 1.5, 1e-6);
    CHECK_NEAR(y[2], 5, 1e-6); /* the partial window averages its one real value */
    tg_end(&t);

    for (int is_max = 0; is_max < 2; is_max++) {
        tg_begin(&t, is_max ? NN_OP_GLOBAL_MAX_POOL : NN_OP_GLOBAL_AVERAGE_POOL, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 2, 5), x, 0);
        tg_node(&t);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 0), 1, 2, 1);
        y = t.outbuf[0];
        CHECK_NEAR(y[0], is_max ? 5 : 3, 1e-6);
        CHECK_NEAR(y[1], is_max ? 10 : 8, 1e-6);
        tg_end(&t);
    }

    /* the Indices output: offsets into the whole input (plane 1 starts at 6), the first
     * of equal maxima; row-major, then each plane column-major (h + w * H); MaxUnpool of
     * the row-major ones */
    const float xi[12] = {4, 9, 9, 1, 9, 2, 14, 19, 19, 11, 19, 12};
    int64_t k22[2] = {2, 2};
    for (int order = 0; order < 2; order++) {
        tg_begin(&t, NN_OP_MAX_POOL, 2);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 1, 2, 3), xi, 0);
        tg_node(&t);
        nn_node_set_ints(t.g, t.node, "kernel_shape", k22, 2);
        nn_node_set_int(t.g, t.node, "storage_order", order);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 1), 2, 1, 1, 2);
        CHECK_EQ_INT(t.g->tensors[t.out[1]].dtype, FFU_DTYPE_I64);
        const int64_t *ix = t.outbuf[1];
        const int64_t want = order ? 2 : 1; /* (h 0, w 1) */
        CHECK(ix[0] == want && ix[1] == want && ix[2] == 6 + want && ix[3] == 6 + want);
        CHECK_NEAR(((float *)t.outbuf[0])[3], 19, 0);
        int64_t idx[4];
        float pooled[4];
        memcpy(idx, ix, sizeof idx);
        memcpy(pooled, t.outbuf[0], sizeof pooled);
        tg_end(&t);
        if (order) continue;
        /* MaxUnpool puts each maximum back where it was, zeros elsewhere; an index past
         * the tensor is malformed */
        for (int past = 0; past < 2; past++) {
            idx[3] = past ? 12 : idx[3];
            tg_begin(&t, NN_OP_MAX_UNPOOL, 1);
            tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 1, 1, 2), pooled, 0);
            tg_in(&t, FFU_DTYPE_I64, SHAPE(2, 1, 1, 2), idx, 0);
            tg_node(&t);
            nn_node_set_ints(t.g, t.node, "kernel_shape", k22, 2);
            CHECK_EQ_INT(tg_run(&t), past ? FFU_ERR_FORMAT : FFU_OK);
            if (!past) {
                CHECK_SHAPE(tg_oshape(&t, 0), 2, 1, 2, 3);
                for (int i = 0; i < 12; i++)
                    CHECK_NEAR(((float *)t.outbuf[0])[i], i == 1 ? 9 : i == 7 ? 19 : 0, 0);
            }
            tg_end(&t);
        }
    }
}

/* ---- reductions ------------------------------------------------------------------------- */

static void test_reduce_vs_naive(void)
{
    static const nn_op ops[] = {NN_OP_REDUCE_MEAN, NN_OP_REDUCE_SUM,       NN_OP_REDUCE_MAX,
                                NN_OP_REDUCE_MIN,  NN_OP_REDUCE_PROD,      NN_OP_REDUCE_L1,
                                NN_OP_REDUCE_L2,   NN_OP_REDUCE_SUM_SQUARE};
    const int64_t D0 = 2, D1 = 3, D2 = 4, D3 = 5;
    uint64_t seed = 61;
    float *x = rand_buf(&seed, D0 * D1 * D2 * D3);
    /* axes sets as bit masks over the 4 dims; 0 = "all" (no axes input) */
    static const unsigned masks[] = {0x1, 0x2, 0x8, 0x5, 0xA, 0x6, 0xF, 0};
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
        for (size_t mi = 0; mi < sizeof masks / sizeof masks[0]; mi++)
            for (int keep = 0; keep < 2; keep++) {
                unsigned mask = masks[mi] ? masks[mi] : 0xF;
                int64_t axes[4];
                int na = 0;
                for (int a = 0; a < 4; a++)
                    if (mask & (1u << a)) axes[na++] = a - (mi % 2 ? 4 : 0); /* some negative */
                tg t;
                tg_begin(&t, ops[oi], 1);
                tg_in(&t, FFU_DTYPE_F32, SHAPE(D0, D1, D2, D3), x, 0);
                if (masks[mi]) tg_in(&t, FFU_DTYPE_I64, SHAPE(na), axes, 1);
                tg_node(&t);
                nn_node_set_int(t.g, t.node, "keepdims", keep);
                CHECK_EQ_INT(tg_run(&t), FFU_OK);
                const nn_shape *os = tg_oshape(&t, 0);
                int64_t dims[4] = {D0, D1, D2, D3};
                int r = 0;
                for (int a = 0; a < 4; a++) {
                    if (!(mask & (1u << a)))
                        CHECK_EQ_INT(os->d[r++], dims[a]);
                    else if (keep)
                        CHECK_EQ_INT(os->d[r++], 1);
                }
                CHECK_EQ_INT(os->rank, r);
                /* naive: for every output element, visit all inputs that map to it */
                const float *y = t.outbuf[0];
                int64_t on = nn_shape_numel(os);
                for (int64_t o = 0; o < on; o++) {
                    double acc = ops[oi] == NN_OP_REDUCE_PROD  ? 1
                                 : ops[oi] == NN_OP_REDUCE_MAX ? -INFINITY
                                 : ops[oi] == NN_OP_REDUCE_MIN ? INFINITY
                                                               : 0;
                    int64_t cnt = 0;
                    for (int64_t i = 0; i < D0 * D1 * D2 * D3; i++) {
                        int64_t id[4] = {i / (D1 * D2 * D3), i / (D2 * D3) % D1, i / D3 % D2,
                                         i % D3};
                        int64_t flat = 0;
                        for (int a = 0; a < 4; a++)
                            if (!(mask & (1u << a))) flat = flat * dims[a] + id[a];
                        if (flat != o) continue;
                        double v = x[i];
                        cnt++;
                        switch (ops[oi]) {
                        case NN_OP_REDUCE_MAX:
                            acc = fmax(acc, v);
                            break;
                        case NN_OP_REDUCE_MIN:
                            acc = fmin(acc, v);
                            break;
                        case NN_OP_REDUCE_PROD:
                            acc *= v;
                            break;
                        case NN_OP_REDUCE_L1:
                            acc += fabs(v);
                            break;
                        case NN_OP_REDUCE_L2:
                        case NN_OP_REDUCE_SUM_SQUARE:
                            acc += v * v;
                            break;
                        default:
                            acc += v;
                            break;
                        }
                    }
                    if (ops[oi] == NN_OP_REDUCE_MEAN) acc /= (double)cnt;
                    if (ops[oi] == NN_OP_REDUCE_L2) acc = sqrt(acc);
                    CHECK_NEAR(y[o], acc, 1e-5 * fmax(1, fabs(acc)));
                }
                tg_end(&t);
            }
    free(x);
}

static void test_reduce_misc(void)
{
    /* noop_with_empty_axes, empty axes = all, i64 data, ArgMax/ArgMin with ties */
    float x[6] = {1, 5, 5, 2, 2, 0};
    int64_t none[1] = {0};
    for (int noop = 0; noop < 2; noop++) {
        tg t;
        tg_begin(&t, NN_OP_REDUCE_SUM, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
        tg_in(&t, FFU_DTYPE_I64, SHAPE(0), none, 1);
        tg_node(&t);
        nn_node_set_int(t.g, t.node, "noop_with_empty_axes", noop);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        if (noop) {
            CHECK_SHAPE(tg_oshape(&t, 0), 2, 3);
            CHECK_NEAR(((float *)t.outbuf[0])[4], 2, 0);
        } else {
            CHECK_SHAPE(tg_oshape(&t, 0), 1, 1);
            CHECK_NEAR(((float *)t.outbuf[0])[0], 15, 0);
        }
        tg_end(&t);
    }

    int64_t xi[6] = {3, 1000000000000LL, 2, 4, 5, 6}, ax[1] = {1};
    tg t;
    tg_begin(&t, NN_OP_REDUCE_PROD, 1);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(2, 3), xi, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(1), ax, 1);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "keepdims", 0);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2);
    CHECK_EQ_INT(((int64_t *)t.outbuf[0])[0], 6000000000000LL);
    CHECK_EQ_INT(((int64_t *)t.outbuf[0])[1], 120);
    tg_end(&t);

    for (int variant = 0; variant < 4; variant++) {
        int is_max = variant & 1, last = variant >> 1;
        tg_begin(&t, is_max ? NN_OP_ARGMAX : NN_OP_ARGMIN, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
        tg_node(&t);
        nn_node_set_int(t.g, t.node, "axis", -1);
        nn_node_set_int(t.g, t.node, "select_last_index", last);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 0), 2, 1);
        CHECK_EQ_INT(t.g->tensors[t.out[0]].dtype, FFU_DTYPE_I64);
        const int64_t *y = t.outbuf[0];
        /* rows {1,5,5} and {2,2,0} */
        if (is_max) {
            CHECK_EQ_INT(y[0], last ? 2 : 1);
            CHECK_EQ_INT(y[1], last ? 1 : 0);
        } else {
            CHECK_EQ_INT(y[0], 0);
            CHECK_EQ_INT(y[1], 2);
        }
        tg_end(&t);
    }
}

/* ---- resize ---------------------------------------------------------------------------- */

/* Runs Resize on a 1x1xHxW f32 input with scales (sizes NULL) or sizes. */
static ffu_status resize_case(tg *t, const float *x, int64_t H, int64_t W, const float *scales,
                              const int64_t *sizes, const char *mode, const char *ct,
                              const char *nearest)
{
    tg_begin(t, NN_OP_RESIZE, 1);
    tg_in(t, FFU_DTYPE_F32, SHAPE(1, 1, H, W), x, 0);
    tg_omit(t);
    if (scales)
        tg_in(t, FFU_DTYPE_F32, SHAPE(4), scales, 1);
    else
        tg_omit(t);
    if (sizes) tg_in(t, FFU_DTYPE_I64, SHAPE(4), sizes, 1);
    tg_node(t);
    nn_node_set_string(t->g, t->node, "mode", mode);
    nn_node_set_string(t->g, t->node, "coordinate_transformation_mode", ct);
    if (nearest) nn_node_set_string(t->g, t->node, "nearest_mode", nearest);
    return tg_run(t);
}

static void test_resize_hand(void)
{
    const float x[4] = {1, 2, 3, 4};
    const float up2[4] = {1, 1, 2, 2};
    tg t;
    /* bilinear x2, half_pixel: rows (1 1.25 1.75 2), (1.5 1.75 2.25 2.5), ... */
    CHECK_EQ_INT(resize_case(&t, x, 2, 2, up2, NULL, "linear", "half_pixel", NULL), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 4, 4);
    static const float want_hp[16] = {1,    1.25f, 1.75f, 2,    1.5f, 1.75f, 2.25f, 2.5f,
                                      2.5f, 2.75f, 3.25f, 3.5f, 3,    3.25f, 3.75f, 4};
    CHECK(max_err(t.outbuf[0], want_hp, 16) < 1e-6);
    tg_end(&t);

    /* align_corners: corners kept, thirds between */
    CHECK_EQ_INT(resize_case(&t, x, 2, 2, up2, NULL, "linear", "align_corners", NULL), FFU_OK);
    const float *y = t.outbuf[0];
    CHECK_NEAR(y[0], 1, 1e-6);
    CHECK_NEAR(y[1], 1 + 1.0 / 3, 1e-6);
    CHECK_NEAR(y[15], 4, 1e-6);
    CHECK_NEAR(y[5], 1 + 1.0 / 3 + 2.0 / 3, 1e-6);
    tg_end(&t);

    /* nearest x2 asymmetric floor: pixel replication */
    CHECK_EQ_INT(resize_case(&t, x, 2, 2, up2, NULL, "nearest", "asymmetric", "floor"), FFU_OK);
    static const float want_nn[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    CHECK(max_err(t.outbuf[0], want_nn, 16) == 0);
    tg_end(&t);

    /* sizes 1x1x1x3 from 1x4 (nearest, half_pixel, round_prefer_ceil):
     * x = (o + .5) * 4/3 - .5 = 0.1667, 1.5, 2.833 -> 0, 2, 3 */
    const float row[4] = {10, 20, 30, 40};
    const int64_t sz[4] = {1, 1, 1, 3};
    CHECK_EQ_INT(resize_case(&t, row, 1, 4, NULL, sz, "nearest", "half_pixel", "round_prefer_ceil"),
                 FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, 1, 3);
    y = t.outbuf[0];
    CHECK_NEAR(y[0], 10, 0);
    CHECK_NEAR(y[1], 30, 0);
    CHECK_NEAR(y[2], 40, 0);
    tg_end(&t);
    /* the same with round_prefer_floor picks 20 for the tie at 1.5 */
    CHECK_EQ_INT(resize_case(&t, row, 1, 4, NULL, sz, "nearest", "half_pixel", NULL), FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[1], 20, 0);
    tg_end(&t);

    /* cubic, identity scale: exact copy */
    const float one[4] = {1, 1, 1, 1};
    CHECK_EQ_INT(resize_case(&t, x, 2, 2, one, NULL, "cubic", "half_pixel", NULL), FFU_OK);
    CHECK(max_err(t.outbuf[0], x, 4) < 1e-7);
    tg_end(&t);

    /* antialias is refused */
    tg_begin(&t, NN_OP_RESIZE, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2), x, 0);
    tg_omit(&t);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(4), up2, 1);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "antialias", 1);
    CHECK_EQ_INT(nn_op_get(NN_OP_RESIZE)->infer(t.g, tg_n(&t)), FFU_ERR_UNSUPPORTED);
    tg_end(&t);
}

/* Separable 1-D interpolation written from the ONNX reference: coordinate, then the
 * coefficients of the 2 or 4 neighbours with edge clamping. */
static double interp_1d(const float *v, int64_t n, double xo, int cubic_mode, double A)
{
    double fl = floor(xo), r = xo - fl;
    int64_t i0 = (int64_t)fl;
    if (!cubic_mode) {
        int64_t a = i0 < 0    ? 0
                    : i0 >= n ? n - 1
                              : i0,
                b = i0 + 1 < 0    ? 0
                    : i0 + 1 >= n ? n - 1
                                  : i0 + 1;
        return v[a] * (1 - r) + v[b] * r;
    }
    double c[4] = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
                   ((A + 2) * r - (A + 3)) * r * r + 1,
                   ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
                   ((A * (2 - r) - 5 * A) * (2 - r) + 8 * A) * (2 - r) - 4 * A};
    double s = 0;
    for (int j = 0; j < 4; j++) {
        int64_t k = i0 - 1 + j;
        k = k < 0 ? 0 : k >= n ? n - 1 : k;
        s += c[j] * v[k];
    }
    return s;
}

static void test_resize_vs_separable(void)
{
    uint64_t seed = 71;
    const int64_t H = 5, W = 7;
    float *x = rand_buf(&seed, H * W);
    static const char *const cts[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                      "asymmetric"};
    static const float sc[][2] = {{2.0f, 3.0f}, {0.6f, 0.5f}, {1.7f, 0.8f}};
    for (int cubic_mode = 0; cubic_mode < 2; cubic_mode++)
        for (size_t ci = 0; ci < 4; ci++)
            for (size_t si = 0; si < 3; si++) {
                const float scales[4] = {1, 1, sc[si][0], sc[si][1]};
                tg t;
                CHECK_EQ_INT(resize_case(&t, x, H, W, scales, NULL, cubic_mode ? "cubic" : "linear",
                                         cts[ci], NULL),
                             FFU_OK);
                int64_t OH = (int64_t)floor(H * (double)scales[2]);
                int64_t OW = (int64_t)floor(W * (double)scales[3]);
                CHECK_SHAPE(tg_oshape(&t, 0), 1, 1, OH, OW);
                /* interpolate rows first (along W), then along H */
                float *tmp = malloc(sizeof(float) * (size_t)(H * OW));
                for (int64_t h = 0; h < H; h++)
                    for (int64_t o = 0; o < OW; o++) {
                        double len = W * (double)scales[3], s = scales[3], xo;
                        if (ci == 0)
                            xo = (o + 0.5) / s - 0.5;
                        else if (ci == 1)
                            xo = len > 1 ? (o + 0.5) / s - 0.5 : 0;
                        else if (ci == 2)
                            xo = len == 1 ? 0 : o * (W - 1) / (len - 1);
                        else
                            xo = o / s;
                        tmp[h * OW + o] = (float)interp_1d(x + h * W, W, xo, cubic_mode, -0.75);
                    }
                const float *y = t.outbuf[0];
                for (int64_t o = 0; o < OH; o++) {
                    double len = H * (double)scales[2], s = scales[2], xo;
                    if (ci == 0)
                        xo = (o + 0.5) / s - 0.5;
                    else if (ci == 1)
                        xo = len > 1 ? (o + 0.5) / s - 0.5 : 0;
                    else if (ci == 2)
                        xo = len == 1 ? 0 : o * (H - 1) / (len - 1);
                    else
                        xo = o / s;
                    for (int64_t w = 0; w < OW; w++) {
                        float col[16];
                        for (int64_t h = 0; h < H; h++)
                            col[h] = tmp[h * OW + w];
                        double want = interp_1d(col, H, xo, cubic_mode, -0.75);
                        if (fabs(y[o * OW + w] - want) > 1e-5)
                            fprintf(stderr, "resize %s cubic %d scale %zu at %lld,%lld: %g vs %g\n",
                                    cts[ci], cubic_mode, si, (long long)o, (long long)w,
                                    y[o * OW + w], want);
                        CHECK_NEAR(y[o * OW + w], want, 1e-5);
                    }
                }
                free(tmp);
                tg_end(&t);
            }
    free(x);
}

static void test_resize_crop_and_upsample(void)
{
    /* tf_crop_and_resize: roi on W only covers [0.25, 1.25] of a 1x5 row -> 5 outputs
     * from x = 1 to x = 5 in steps of 1; the last is beyond the edge -> extrapolated */
    const float row[5] = {0, 10, 20, 30, 40};
    const float roi[8] = {0, 0, 0, 0.25f, 1, 1, 1, 1.25f};
    const int64_t sz[4] = {1, 1, 1, 5};
    tg t;
    tg_begin(&t, NN_OP_RESIZE, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1, 5), row, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(8), roi, 1);
    tg_omit(&t);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(4), sz, 1);
    tg_node(&t);
    nn_node_set_string(t.g, t.node, "mode", "linear");
    nn_node_set_string(t.g, t.node, "coordinate_transformation_mode", "tf_crop_and_resize");
    nn_node_set_float(t.g, t.node, "extrapolation_value", -1);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    const float *y = t.outbuf[0];
    CHECK_NEAR(y[0], 10, 1e-5);
    CHECK_NEAR(y[3], 40, 1e-5);
    CHECK_NEAR(y[4], -1, 0);
    tg_end(&t);

    /* Upsample (opset 9 form): nearest x2 on H and W */
    const float x[4] = {1, 2, 3, 4}, sc[4] = {1, 1, 2, 2};
    tg_begin(&t, NN_OP_UPSAMPLE, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2), x, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(4), sc, 1);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    static const float want_nn[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    CHECK(max_err(t.outbuf[0], want_nn, 16) == 0);
    tg_end(&t);

    /* Upsample linear with the scales attribute (opset 7): asymmetric bilinear */
    tg_begin(&t, NN_OP_UPSAMPLE, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 2, 2), x, 0);
    tg_node(&t);
    nn_node_set_floats(t.g, t.node, "scales", sc, 4);
    nn_node_set_string(t.g, t.node, "mode", "linear");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    y = t.outbuf[0];
    CHECK_NEAR(y[0], 1, 1e-6);
    CHECK_NEAR(y[1], 1.5, 1e-6);
    CHECK_NEAR(y[3], 2, 1e-6);
    CHECK_NEAR(y[4], 2, 1e-6); /* row 0.5: between 1 and 3 */
    CHECK_NEAR(y[15], 4, 1e-6);
    tg_end(&t);
}

/* ---- Pad ---------------------------------------------------------------------------------- */

static void test_pad(void)
{
    /* 1-D row 1 2 3 4, pads (3, 2) in three modes; then a crop */
    const float x[4] = {1, 2, 3, 4};
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    static const float want[4][9] = {
        {9, 9, 9, 1, 2, 3, 4, 9, 9},
        {4, 3, 2, 1, 2, 3, 4, 3, 2},
        {1, 1, 1, 1, 2, 3, 4, 4, 4},
        {2, 3, 4, 1, 2, 3, 4, 1, 2},
    };
    for (int m = 0; m < 4; m++) {
        const int64_t pads[2] = {3, 2};
        const float cv = 9;
        tg t;
        tg_begin(&t, NN_OP_PAD, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(4), x, 0);
        tg_in(&t, FFU_DTYPE_I64, SHAPE(2), pads, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1), &cv, 1);
        tg_node(&t);
        nn_node_set_string(t.g, t.node, "mode", modes[m]);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 0), 9);
        CHECK(max_err(t.outbuf[0], want[m], 9) == 0);
        tg_end(&t);
    }

    /* 2-D i32 with axes [-1] only: pad W by (1, -2) (the negative end crops) */
    const int32_t xi[6] = {1, 2, 3, 4, 5, 6};
    const int64_t pads[2] = {1, -2}, axes[1] = {-1};
    tg t;
    tg_begin(&t, NN_OP_PAD, 1);
    tg_in(&t, FFU_DTYPE_I32, SHAPE(2, 3), xi, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(2), pads, 1);
    tg_omit(&t);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(1), axes, 1);
    tg_node(&t);
    nn_node_set_string(t.g, t.node, "mode", "edge");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 2);
    const int32_t *yi = t.outbuf[0];
    CHECK_EQ_INT(yi[0], 1);
    CHECK_EQ_INT(yi[1], 1);
    CHECK_EQ_INT(yi[2], 4);
    CHECK_EQ_INT(yi[3], 4);
    tg_end(&t);

    /* 4-D NCHW reflect on H and W, against a naive index mirror */
    uint64_t seed = 81;
    float *x4 = rand_buf(&seed, 2 * 3 * 4 * 5);
    const int64_t p4[8] = {0, 0, 2, 1, 0, 0, 3, 4};
    tg_begin(&t, NN_OP_PAD, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3, 4, 5), x4, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(8), p4, 1);
    tg_node(&t);
    nn_node_set_string(t.g, t.node, "mode", "reflect");
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 3, 9, 10);
    const float *y = t.outbuf[0];
    for (int64_t pl = 0; pl < 6; pl++)
        for (int64_t h = 0; h < 9; h++)
            for (int64_t w = 0; w < 10; w++) {
                int64_t sh = h - 2, sw = w - 1;
                if (sh < 0) sh = -sh;
                if (sh > 3) sh = 6 - sh;
                if (sw < 0) sw = -sw;
                if (sw > 4) sw = 8 - sw;
                CHECK_NEAR(y[(pl * 9 + h) * 10 + w], x4[(pl * 4 + sh) * 5 + sw], 0);
            }
    tg_end(&t);
    free(x4);
}

/* ---- DepthToSpace / SpaceToDepth --------------------------------------------------------------
 */

static void test_depth_space(void)
{
    /* N=1, C=8, H=2, W=3, blocksize 2, values 0..47 */
    const int64_t C = 8, H = 2, W = 3, B = 2, OC = C / (B * B);
    float x[48];
    for (int i = 0; i < 48; i++)
        x[i] = (float)i;
    for (int crd = 0; crd < 2; crd++) {
        tg t;
        tg_begin(&t, NN_OP_DEPTH_TO_SPACE, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(1, C, H, W), x, 0);
        tg_node(&t);
        nn_node_set_int(t.g, t.node, "blocksize", B);
        if (crd) nn_node_set_string(t.g, t.node, "mode", "CRD");
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK_SHAPE(tg_oshape(&t, 0), 1, OC, H * B, W * B);
        const float *y = t.outbuf[0];
        /* the spec's reshape + transpose: DCR views x as [b1, b2, c, h, w] and writes
         * y[c, h, b1, w, b2]; CRD views it as [c, b1, b2, h, w] */
        for (int64_t i = 0; i < 48; i++) {
            int64_t w = i % W, h = i / W % H, ch = i / (W * H), c, b1, b2;
            if (crd) {
                c = ch / (B * B);
                b1 = ch / B % B;
                b2 = ch % B;
            } else {
                b1 = ch / (B * OC);
                b2 = ch / OC % B;
                c = ch % OC;
            }
            int64_t o = ((c * H + h) * B + b1) * W * B + w * B + b2;
            CHECK_NEAR(y[o], x[i], 0);
        }
        /* SpaceToDepth undoes DCR DepthToSpace */
        if (!crd) {
            tg u;
            tg_begin(&u, NN_OP_SPACE_TO_DEPTH, 1);
            tg_in(&u, FFU_DTYPE_F32, SHAPE(1, OC, H * B, W * B), t.outbuf[0], 0);
            tg_node(&u);
            nn_node_set_int(u.g, u.node, "blocksize", B);
            CHECK_EQ_INT(tg_run(&u), FFU_OK);
            CHECK_SHAPE(tg_oshape(&u, 0), 1, C, H, W);
            CHECK(max_err(u.outbuf[0], x, 48) == 0);
            tg_end(&u);
        }
        tg_end(&t);
    }
}

/* ---- Hardmax, MeanVarianceNormalization, ReduceLogSum(Exp) ----------------------------------- */

static void test_hardmax_mvn(void)
{
    float x[6] = {1, 3, 3, 2, 0, 1};
    tg t;
    tg_begin(&t, NN_OP_HARDMAX, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK); /* axis -1; the tie in row 0 picks index 1 */
    CHECK(memcmp(t.outbuf[0], (float[]){0, 1, 0, 1, 0, 0}, 24) == 0);
    tg_end(&t);
    tg_begin(&t, NN_OP_HARDMAX, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "axis", 0);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK(memcmp(t.outbuf[0], (float[]){0, 1, 1, 1, 0, 0}, 24) == 0);
    tg_end(&t);
    /* the opset < 13 form: rows are everything from axis on */
    double xd[6] = {1, 3, 3, 2, 0, 4};
    tg_begin(&t, NN_OP_HARDMAX, 1);
    tg_in(&t, FFU_DTYPE_F64, SHAPE(1, 2, 3), xd, 0);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "_coerce_2d", 1);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK(memcmp(t.outbuf[0], (double[]){0, 0, 0, 0, 0, 1}, 48) == 0);
    tg_end(&t);
    int32_t xi[2] = {1, 2};
    tg_begin(&t, NN_OP_HARDMAX, 1);
    tg_in(&t, FFU_DTYPE_I32, SHAPE(2), xi, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_UNSUPPORTED);
    tg_end(&t);
    tg_begin(&t, NN_OP_HARDMAX, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), x, 0);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "axis", 2);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_FORMAT);
    tg_end(&t);

    /* MVN over the default axes [0, 2, 3]: per channel, against a naive two-pass */
    uint64_t seed = 77;
    float *m = rand_buf(&seed, 2 * 3 * 5 * 7);
    tg_begin(&t, NN_OP_MVN, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3, 5, 7), m, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    double worst = 0;
    for (int c = 0; c < 3; c++) {
        double sum = 0, sq = 0;
        for (int n = 0; n < 2; n++)
            for (int k = 0; k < 35; k++)
                sum += m[(n * 3 + c) * 35 + k];
        double mean = sum / 70;
        for (int n = 0; n < 2; n++)
            for (int k = 0; k < 35; k++)
                sq += (m[(n * 3 + c) * 35 + k] - mean) * (m[(n * 3 + c) * 35 + k] - mean);
        double sd = sqrt(sq / 70) + 1e-9;
        for (int n = 0; n < 2; n++)
            for (int k = 0; k < 35; k++) {
                int64_t i = (n * 3 + c) * 35 + k;
                double d = fabs(((float *)t.outbuf[0])[i] - (m[i] - mean) / sd);
                worst = d > worst ? d : worst;
            }
    }
    CHECK(worst < 1e-5);
    tg_end(&t);
    /* explicit axes [-1] on a matrix: each row to mean 0, deviation 1 */
    float r[6] = {1, 2, 3, 10, 10, 10};
    tg_begin(&t, NN_OP_MVN, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), r, 0);
    tg_node(&t);
    nn_node_set_ints(t.g, t.node, "axes", (int64_t[]){-1}, 1);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[0], -sqrt(1.5), 1e-6);
    CHECK_NEAR(((float *)t.outbuf[0])[1], 0, 1e-7);
    CHECK_NEAR(((float *)t.outbuf[0])[4], 0, 0); /* a constant row: 0 / 1e-9 */
    tg_end(&t);
    /* the default axes need rank 4 */
    tg_begin(&t, NN_OP_MVN, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 3), r, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_FORMAT);
    tg_end(&t);
    free(m);
}

static void test_reduce_log_sum(void)
{
    float x[4] = {1, 2, 3, 4};
    int64_t ax1[1] = {1};
    tg t;
    tg_begin(&t, NN_OP_REDUCE_LOG_SUM, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 2), x, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(1), ax1, 1);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 1);
    CHECK_NEAR(((float *)t.outbuf[0])[0], log(3.0), 1e-6);
    CHECK_NEAR(((float *)t.outbuf[0])[1], log(7.0), 1e-6);
    tg_end(&t);
    /* LogSumExp does not overflow on large inputs; all axes by default */
    float big[4] = {1000, 1000, -INFINITY, 1000};
    tg_begin(&t, NN_OP_REDUCE_LOG_SUM_EXP, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 2), big, 0);
    tg_node(&t);
    nn_node_set_int(t.g, t.node, "keepdims", 0);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_EQ_INT(tg_oshape(&t, 0)->rank, 0);
    CHECK_NEAR(((float *)t.outbuf[0])[0], 1000 + log(3.0), 1e-3);
    tg_end(&t);
    /* an empty reduction is log(0) = -inf for both */
    for (int k = 0; k < 2; k++) {
        tg_begin(&t, k ? NN_OP_REDUCE_LOG_SUM_EXP : NN_OP_REDUCE_LOG_SUM, 1);
        tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 0), x, 0);
        tg_in(&t, FFU_DTYPE_I64, SHAPE(1), ax1, 1);
        tg_node(&t);
        CHECK_EQ_INT(tg_run(&t), FFU_OK);
        CHECK(isinf(((float *)t.outbuf[0])[1]) && ((float *)t.outbuf[0])[1] < 0);
        tg_end(&t);
    }
    /* integers compute in double and truncate: log(e^1 + e^2) = 2.31 -> 2 */
    int32_t xi[2] = {1, 2};
    tg_begin(&t, NN_OP_REDUCE_LOG_SUM_EXP, 1);
    tg_in(&t, FFU_DTYPE_I32, SHAPE(2), xi, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_EQ_INT(((int32_t *)t.outbuf[0])[0], 2);
    tg_end(&t);
    /* an axis out of range */
    int64_t ax5[1] = {5};
    tg_begin(&t, NN_OP_REDUCE_LOG_SUM, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 2), x, 0);
    tg_in(&t, FFU_DTYPE_I64, SHAPE(1), ax5, 1);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_FORMAT);
    tg_end(&t);
}

/* ---- GridSample ------------------------------------------------------------------------------ */

/* GridSample on x [1, C, H, W] with grid [1, Ho, Wo, 2] (x, y pairs). */
static ffu_status gs_case(tg *t, const float *x, int64_t C, int64_t H, int64_t W,
                          const float *grid, int64_t Ho, int64_t Wo, const char *mode,
                          const char *pad, int align)
{
    tg_begin(t, NN_OP_GRID_SAMPLE, 1);
    tg_in(t, FFU_DTYPE_F32, SHAPE(1, C, H, W), x, 0);
    tg_in(t, FFU_DTYPE_F32, SHAPE(1, Ho, Wo, 2), grid, 0);
    tg_node(t);
    if (mode) nn_node_set_string(t->g, t->node, "mode", mode);
    if (pad) nn_node_set_string(t->g, t->node, "padding_mode", pad);
    nn_node_set_int(t->g, t->node, "align_corners", align);
    return tg_run(t);
}

static void test_grid_sample(void)
{
    /* a 2-channel 3x4 image; the identity grid with align_corners=1 returns it in every
     * mode and padding (pixel centres: bicubic's weights there are 0, 1, 0, 0) */
    float x[24], grid[24], shift[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)(i * i % 17) - 3.0f;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            grid[(i * 4 + j) * 2] = -1.0f + 2.0f * j / 3;
            grid[(i * 4 + j) * 2 + 1] = -1.0f + 2.0f * i / 2;
            shift[(i * 4 + j) * 2] = -1.0f + 2.0f * (j + 1) / 3; /* one pixel right */
            shift[(i * 4 + j) * 2 + 1] = grid[(i * 4 + j) * 2 + 1];
        }
    static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    tg t;
    for (int m = 0; m < 3; m++)
        for (int p = 0; p < 3; p++) {
            CHECK_EQ_INT(gs_case(&t, x, 2, 3, 4, grid, 3, 4, modes[m], pads[p], 1), FFU_OK);
            CHECK_SHAPE(tg_oshape(&t, 0), 1, 2, 3, 4);
            CHECK(max_err(t.outbuf[0], x, 24) < 1e-6);
            tg_end(&t);
            /* shifted: column j reads j + 1; the last column is past the edge: 0 for
             * zeros, the edge (column 3) for border, its mirror (column 2) for reflection */
            CHECK_EQ_INT(gs_case(&t, x, 2, 3, 4, shift, 3, 4, modes[m], pads[p], 1), FFU_OK);
            const float *y = t.outbuf[0];
            for (int c = 0; c < 2; c++)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++) {
                        int src = j + 1 < 4 ? j + 1 : p == 1 ? 3 : 2;
                        float want = j + 1 < 4 || p ? x[(c * 3 + i) * 4 + src] : 0.0f;
                        CHECK_NEAR(y[(c * 3 + i) * 4 + j], want, 1e-5);
                    }
            tg_end(&t);
        }
    /* align_corners=0: -1 is the outer edge of pixel 0 (x = -0.5): bilinear reads half a
     * pixel of padding -- 0 for zeros, pixel 0 itself for border and reflection */
    float row[4] = {10, 20, 30, 40}, g1[2] = {-1.0f, 0.0f};
    for (int p = 0; p < 3; p++) {
        CHECK_EQ_INT(gs_case(&t, row, 1, 1, 4, g1, 1, 1, "bilinear", pads[p], 0), FFU_OK);
        CHECK_NEAR(((float *)t.outbuf[0])[0], p ? 10 : 5, 1e-6);
        tg_end(&t);
    }
    /* nearest rounds half to even: x = 0.5 -> 0 (10), x = 1.5 -> 2 (30) */
    float gh[4] = {-0.5f, 0.0f, 0.0f, 0.0f};
    CHECK_EQ_INT(gs_case(&t, row, 1, 1, 4, gh, 1, 2, "nearest", NULL, 0), FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[0], 10, 0);
    CHECK_NEAR(((float *)t.outbuf[0])[1], 30, 0);
    tg_end(&t);
    /* bicubic between pixels 1 and 2 of x^3 = {0, 1, 8, 27}: Keys' weights at distances
     * 1.5, .5, .5, 1.5 with A = -.75 are -.09375, .59375, .59375, -.09375 -> 2.8125 */
    float cube[4] = {0, 1, 8, 27}, gmid[2] = {0.0f, 0.0f};
    CHECK_EQ_INT(gs_case(&t, cube, 1, 1, 4, gmid, 1, 1, "bicubic", NULL, 1), FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[0], 2.8125, 1e-6);
    tg_end(&t);
    /* reflection far outside folds back and forth: x = -3.5 (align 1, W 4: g = -3.333)
     * mirrors at 0 to 3.5, then at 3 to 2.5: halfway between 30 and 40 */
    float gfar[2] = {-1.0f - 2.0f * 3.5f / 3, 0.0f};
    CHECK_EQ_INT(gs_case(&t, row, 1, 1, 4, gfar, 1, 1, "bilinear", "reflection", 1), FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[0], 35, 1e-4);
    tg_end(&t);
    /* hostile grids: NaN gives NaN; infinity reads nothing (zeros), the edge (border),
     * NaN (reflection: no mirror image); huge finite values stay defined */
    float ghost[8] = {NAN, 0.0f, INFINITY, 0.0f, -INFINITY, 0.0f, 1e30f, -1e30f};
    for (int p = 0; p < 3; p++)
        for (int m = 0; m < 3; m++) {
            CHECK_EQ_INT(gs_case(&t, row, 1, 1, 4, ghost, 1, 4, modes[m], pads[p], 0), FFU_OK);
            const float *y = t.outbuf[0];
            CHECK(isnan(y[0]));
            if (p == 0) CHECK(y[1] == 0 && y[2] == 0 && y[3] == 0);
            if (p == 1) CHECK_NEAR(y[1], 40, 1e-4);
            if (p == 1) CHECK_NEAR(y[2], 10, 1e-4);
            if (p == 2) CHECK(isnan(y[1]) && isnan(y[2]));
            CHECK(isnan(y[3]) || (y[3] >= -20 && y[3] <= 70)); /* within the taps' hull */
            tg_end(&t);
        }
    /* rejections: batch mismatch, grid pairs of 3, rank 5, unknown mode and padding */
    tg_begin(&t, NN_OP_GRID_SAMPLE, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(2, 1, 1, 4), row, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1, 2), g1, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_FORMAT);
    tg_end(&t);
    tg_begin(&t, NN_OP_GRID_SAMPLE, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1, 4), row, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1, 3), ghost, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_FORMAT);
    tg_end(&t);
    tg_begin(&t, NN_OP_GRID_SAMPLE, 1);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1, 1, 4), row, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1, 1, 3), ghost, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_ERR_UNSUPPORTED);
    tg_end(&t);
    CHECK_EQ_INT(gs_case(&t, row, 1, 1, 4, g1, 1, 1, "area", NULL, 0), FFU_ERR_UNSUPPORTED);
    tg_end(&t);
    CHECK_EQ_INT(gs_case(&t, row, 1, 1, 4, g1, 1, 1, NULL, "wrap", 0), FFU_ERR_UNSUPPORTED);
    tg_end(&t);
    /* integer images sample in double and truncate at the end; an empty image is 0 */
    uint8_t u[2] = {10, 21};
    float gq[2] = {0.0f, 0.0f};
    tg_begin(&t, NN_OP_GRID_SAMPLE, 1);
    tg_in(&t, FFU_DTYPE_U8, SHAPE(1, 1, 1, 2), u, 0);
    tg_in(&t, FFU_DTYPE_F32, SHAPE(1, 1, 1, 2), gq, 0);
    tg_node(&t);
    CHECK_EQ_INT(tg_run(&t), FFU_OK);
    CHECK_EQ_INT(((uint8_t *)t.outbuf[0])[0], 15); /* 15.5 */
    tg_end(&t);
    CHECK_EQ_INT(gs_case(&t, row, 1, 0, 4, g1, 1, 1, "bilinear", "border", 0), FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[0], 0, 0);
    tg_end(&t);
}

/* ---- RoiAlign ------------------------------------------------------------------------------ */

static ffu_status roi_case(tg *t, const float *x, nn_shape xs, const float *rois, int k,
                           const int64_t *bi, const char *mode, const char *ctm, int oh, int ow)
{
    tg_begin(t, NN_OP_ROI_ALIGN, 1);
    tg_in(t, FFU_DTYPE_F32, xs, x, 0);
    tg_in(t, FFU_DTYPE_F32, SHAPE(k, 4), rois, 0);
    tg_in(t, FFU_DTYPE_I64, SHAPE(k), bi, 0);
    tg_node(t);
    nn_node_set_string(t->g, t->node, "mode", mode);
    nn_node_set_string(t->g, t->node, "coordinate_transformation_mode", ctm);
    nn_node_set_int(t->g, t->node, "output_height", oh);
    nn_node_set_int(t->g, t->node, "output_width", ow);
    return tg_run(t);
}

static void test_roi_align(void)
{
    /* a constant map averages to itself anywhere inside; a region far outside is 0 */
    float c[2 * 2 * 5 * 6];
    for (int i = 0; i < 60; i++) c[i] = 3;
    for (int i = 60; i < 120; i++) c[i] = -2;
    const float rois[8] = {1, 1, 4, 3.5f, 20, 20, 30, 30};
    const int64_t bi[2] = {1, 0};
    tg t;
    CHECK_EQ_INT(roi_case(&t, c, SHAPE(2, 2, 5, 6), rois, 2, bi, "avg", "half_pixel", 3, 2), FFU_OK);
    CHECK_SHAPE(tg_oshape(&t, 0), 2, 2, 3, 2);
    const float *y = t.outbuf[0];
    for (int i = 0; i < 12; i++) CHECK_NEAR(y[i], -2, 1e-6); /* roi 0 reads batch 1 */
    for (int i = 12; i < 24; i++) CHECK_NEAR(y[i], 0, 0);     /* roi 1 is off the map */
    tg_end(&t);
    /* max mode: one sample at (0.5, 0.5) of a unit region (output_half_pixel, no shift):
     * the largest corner term, a quarter of the largest of the four pixels */
    float m[4] = {1, 7, -3, 5};
    const float unit[4] = {0, 0, 1, 1};
    const int64_t b0[1] = {0};
    CHECK_EQ_INT(roi_case(&t, m, SHAPE(1, 1, 2, 2), unit, 1, b0, "max", "output_half_pixel", 1, 1),
                 FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[0], 7 * 0.25, 1e-6);
    tg_end(&t);
    CHECK_EQ_INT(roi_case(&t, m, SHAPE(1, 1, 2, 2), unit, 1, b0, "avg", "output_half_pixel", 1, 1),
                 FFU_OK);
    CHECK_NEAR(((float *)t.outbuf[0])[0], (1 + 7 - 3 + 5) * 0.25, 1e-6);
    tg_end(&t);
    /* a batch index outside the batch, an unknown mode */
    const int64_t bad[1] = {1};
    CHECK_EQ_INT(roi_case(&t, m, SHAPE(1, 1, 2, 2), unit, 1, bad, "avg", "half_pixel", 1, 1),
                 FFU_ERR_FORMAT);
    tg_end(&t);
    CHECK_EQ_INT(roi_case(&t, m, SHAPE(1, 1, 2, 2), unit, 1, b0, "median", "half_pixel", 1, 1),
                 FFU_ERR_UNSUPPORTED);
    tg_end(&t);
}

TEST_MAIN(test_conv_hand, test_conv_vs_naive, test_conv_transpose_vs_naive,
          test_conv_transpose_output_shape, test_conv_1d_3d, test_conv_fused_act_and_errors,
          test_gemm, test_matmul_broadcast, test_einsum, test_batch_instance_layer_norm, test_lrn,
          test_softmax, test_losses, test_signal_ops, test_recurrent, test_tfidf,
          test_pool_vs_naive, test_pool_misc, test_reduce_vs_naive, test_reduce_misc,
          test_resize_hand, test_resize_vs_separable, test_resize_crop_and_upsample, test_pad,
          test_depth_space, test_hardmax_mvn, test_reduce_log_sum, test_grid_sample, test_roi_align)
