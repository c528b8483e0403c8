/* The fusion passes (src/nn/fuse.c): which patterns they fuse, which they must leave
 * alone, and that a fused graph computes what the unfused one did (both run on the ref
 * kernels, node by node, on the same data; the residual fusion also through whole
 * sessions on both backends). Conv + BatchNormalization is folded by
 * the pattern rewrites before nn_fuse runs; the first test runs both, as
 * nn_passes_run does. */
#include "nn/fuse.h"
#include "nn/ir.h"
#include "nn/nn_internal.h"
#include "nn/rewrite.h"
#include "test.h"

#include <sys/wait.h>
#include <unistd.h>


#define C_ 4
static float wconv[C_ * 3 * 3 * 3], bconv[C_], bn[4][C_], slope[C_], clip_lo = 0, clip_hi = 6;

static void init_data(void)
{
    uint64_t s = 99;
    for (size_t i = 0; i < sizeof wconv / sizeof wconv[0]; i++) wconv[i] = test_rand_f(&s) - 0.5f;
    for (int c = 0; c < C_; c++) {
        bconv[c] = test_rand_f(&s) - 0.5f;
        bn[0][c] = 0.5f + test_rand_f(&s); /* scale */
        bn[1][c] = test_rand_f(&s) - 0.5f; /* shift */
        bn[2][c] = test_rand_f(&s) - 0.5f; /* mean */
        bn[3][c] = 0.1f + test_rand_f(&s); /* var */
        slope[c] = 0.1f * (float)(c + 1);
    }
}

/* x [1,3,7,9] -> Conv(+bias) -> t1 ; returns the conv node, *t1 its output */
static int add_conv(nn_graph *g, int x, int *t1)
{
    nn_shape ws = {.rank = 4, .d = {C_, 3, 3, 3}}, bs = {.rank = 1, .d = {C_}};
    int w = nn_graph_add_const(g, "w", FFU_DTYPE_F32, &ws, wconv, sizeof wconv, NN_BORROW);
    int b = nn_graph_add_const(g, "b", FFU_DTYPE_F32, &bs, bconv, sizeof bconv, NN_BORROW);
    *t1 = nn_graph_add_tensor(g, "t1", FFU_DTYPE_UNDEFINED, NULL);
    int in[3] = {x, w, b};
    int n = nn_graph_add_node(g, NN_OP_CONV, "conv", in, 3, t1, 1);
    int64_t pads[4] = {1, 1, 1, 1};
    nn_node_set_ints(g, n, "pads", pads, 4);
    return n;
}

static nn_graph *new_graph(int *x)
{
    nn_graph *g;
    *x = -1;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {1, 3, 7, 9}};
    *x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, *x);
    return g;
}

/* Runs a graph on the ref kernels (infer + run in order); returns output 0's data
 * (malloc'd) or NULL. */
static float *run_ref(nn_graph *g, const float *xdata, size_t *n_out)
{
    void **buf = calloc((size_t)g->ntensors, sizeof(void *));
    float *res = NULL;
    if (!buf) return NULL;
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].flags & NN_T_CONST) buf[t] = g->tensors[t].data;
    buf[g->inputs[0]] = (void *)xdata;
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        const nn_op_def *d = nn_op_get(n->op);
        if (!d || d->infer(g, n) < 0) goto out;
        void *in[8] = {0}, *out[4] = {0};
        for (int j = 0; j < n->ninputs; j++) in[j] = n->inputs[j] >= 0 ? buf[n->inputs[j]] : NULL;
        for (int j = 0; j < n->noutputs; j++) {
            nn_tensor *o = &g->tensors[n->outputs[j]];
            buf[n->outputs[j]] = malloc((size_t)nn_shape_numel(&o->shape) * 4);
            out[j] = buf[n->outputs[j]];
        }
        size_t sb = d->scratch_bytes ? d->scratch_bytes(g, n) : 0;
        void *scratch = malloc(sb ? sb : 1);
        ffu_status st = d->run(g, n, in, out, scratch);
        free(scratch);
        if (st < 0) goto out;
    }
    const nn_tensor *o = &g->tensors[g->outputs[0]];
    *n_out = (size_t)nn_shape_numel(&o->shape);
    res = malloc(*n_out * 4);
    if (res) memcpy(res, buf[g->outputs[0]], *n_out * 4);
out:
    for (int t = 0; t < g->ntensors; t++)
        if (!(g->tensors[t].flags & NN_T_CONST) && t != g->inputs[0]) free(buf[t]);
    free(buf);
    return res;
}

/* The largest difference of b from a over n values, relative to 1 + |a| (1 when either
 * is missing). */
static double worst_rel(const float *a, const float *b, size_t n)
{
    if (!a || !b) return 1;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)a[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

/* Runs a (as built) and b (fused) on ref over nx inputs in [-1, 1) drawn from seed: 1
 * when both give want values and agree within 1e-6 (worst_rel). */
static int ref_agree(nn_graph *a, nn_graph *b, size_t nx, uint64_t seed, size_t want)
{
    float *x = malloc(sizeof(float) * nx);
    if (!x) return 0;
    for (size_t i = 0; i < nx; i++) x[i] = 2.0f * test_rand_f(&seed) - 1.0f;
    size_t na = 0, nb = 0;
    float *ra = run_ref(a, x, &na), *rb = run_ref(b, x, &nb);
    int ok = ra && rb && na == nb && na == want && worst_rel(ra, rb, na) < 1e-6;
    free(x), free(ra), free(rb);
    return ok;
}

static int count_op(const nn_graph *g, nn_op op)
{
    int k = 0;
    for (int i = 0; i < g->nnodes; i++) k += g->nodes[i].op == op;
    return k;
}

/* Builds the same graph twice with `build`, fuses one, runs both on ref; the results
 * must agree to rounding. */
typedef nn_graph *(*build_fn)(void);

static double fused_vs_plain(build_fn build, nn_graph **fused_out)
{
    nn_graph *a = build(), *b = build();
    float xdata[3 * 7 * 9];
    uint64_t s = 7;
    for (int i = 0; i < 3 * 7 * 9; i++) xdata[i] = 2.0f * test_rand_f(&s) - 1.0f;
    double worst = -1;
    if (!a || !b || nn_rewrite_patterns(b) < 0 || nn_graph_toposort(b) < 0 || nn_fuse(b) < 0 ||
        nn_graph_toposort(b) < 0)
        goto out;
    size_t na = 0, nb = 0;
    float *ra = run_ref(a, xdata, &na), *rb = run_ref(b, xdata, &nb);
    if (ra && rb && na == nb) worst = worst_rel(ra, rb, na);
    free(ra), free(rb);
out:
    nn_graph_destroy(a);
    *fused_out = b;
    return worst;
}

/* conv -> BN -> Clip(0,6) */
static nn_graph *g_conv_bn_relu6(void)
{
    int x = -1, t1 = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &t1);
    nn_shape cs = {.rank = 1, .d = {C_}}, sc = {.rank = 0};
    int p[5] = {t1};
    const char *names[4] = {"scale", "shift", "mean", "var"};
    for (int i = 0; i < 4; i++)
        p[i + 1] = nn_graph_add_const(g, names[i], FFU_DTYPE_F32, &cs, bn[i], sizeof bn[i], NN_BORROW);
    int t2 = nn_graph_add_tensor(g, "t2", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_BATCH_NORM, "bn", p, 5, &t2, 1);
    int lo = nn_graph_add_const(g, "lo", FFU_DTYPE_F32, &sc, &clip_lo, 4, NN_BORROW);
    int hi = nn_graph_add_const(g, "hi", FFU_DTYPE_F32, &sc, &clip_hi, 4, NN_BORROW);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int ci[3] = {t2, lo, hi};
    nn_graph_add_node(g, NN_OP_CLIP, "clip", ci, 3, &y, 1);
    nn_graph_mark_output(g, y);
    return g;
}

static void test_conv_bn_clip(void)
{
    init_data();
    nn_graph *g;
    double err = fused_vs_plain(g_conv_bn_relu6, &g);
    CHECK(g);
    CHECK_EQ_INT(g->nnodes, 1);
    CHECK_EQ_INT(g->nodes[0].op, NN_OP_CONV);
    CHECK_EQ_INT(g->nodes[0].act.kind, NN_ACT_RELU6);
    CHECK_EQ_INT(g->nodes[0].ninputs, 3);
    CHECK_STR(g->tensors[g->nodes[0].outputs[0]].name, "y");
    CHECK(err >= 0 && err < 1e-5);
    nn_graph_destroy(g);
}

/* conv -> PRelu(slope [C,1,1]) */
static nn_graph *g_conv_prelu(void)
{
    int x = -1, t1 = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &t1);
    nn_shape ss = {.rank = 3, .d = {C_, 1, 1}};
    int sl = nn_graph_add_const(g, "slope", FFU_DTYPE_F32, &ss, slope, sizeof slope, NN_BORROW);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int in[2] = {t1, sl};
    nn_graph_add_node(g, NN_OP_PRELU, "prelu", in, 2, &y, 1);
    nn_graph_mark_output(g, y);
    return g;
}

static void test_conv_prelu(void)
{
    init_data();
    nn_graph *g;
    double err = fused_vs_plain(g_conv_prelu, &g);
    CHECK(g);
    CHECK_EQ_INT(g->nnodes, 1);
    CHECK_EQ_INT(g->nodes[0].act.kind, NN_ACT_PRELU);
    CHECK_STR(g->tensors[g->nodes[0].act.slope].name, "slope");
    CHECK(err >= 0 && err < 1e-6);
    nn_graph_destroy(g);
}

/* conv + Pad(x, one more channel) -> Add -> PRelu(slope [C,1,1]): the Add's channels
 * are known through the Pad (FaceMesh's blocks that widen), so the PRelu fuses into it */
static nn_graph *g_conv_add_padded_prelu(void)
{
    int x = -1, t1 = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &t1);
    static const int64_t pads[8] = {0, 0, 0, 0, 0, C_ - 3, 0, 0};
    nn_shape ps = {.rank = 1, .d = {8}}, ss = {.rank = 3, .d = {C_, 1, 1}};
    int pc = nn_graph_add_const(g, "pads", FFU_DTYPE_I64, &ps, pads, sizeof pads, NN_BORROW);
    int xp = nn_graph_add_tensor(g, "xp", FFU_DTYPE_UNDEFINED, NULL);
    int pin[2] = {x, pc};
    nn_graph_add_node(g, NN_OP_PAD, "pad", pin, 2, &xp, 1);
    int s = nn_graph_add_tensor(g, "s", FFU_DTYPE_UNDEFINED, NULL);
    int ain[2] = {t1, xp};
    nn_graph_add_node(g, NN_OP_ADD, "add", ain, 2, &s, 1);
    int sl = nn_graph_add_const(g, "slope", FFU_DTYPE_F32, &ss, slope, sizeof slope, NN_BORROW);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int in[2] = {s, sl};
    nn_graph_add_node(g, NN_OP_PRELU, "prelu", in, 2, &y, 1);
    nn_graph_mark_output(g, y);
    return g;
}

static void test_add_padded_prelu(void)
{
    init_data();
    nn_graph *g;
    double err = fused_vs_plain(g_conv_add_padded_prelu, &g);
    CHECK(g);
    CHECK_EQ_INT(count_op(g, NN_OP_PRELU), 0);
    int add = -1;
    for (int i = 0; g && i < g->nnodes; i++)
        if (g->nodes[i].op == NN_OP_ADD) add = i;
    CHECK(add >= 0 && g->nodes[add].act.kind == NN_ACT_PRELU);
    CHECK(err >= 0 && err < 1e-6);
    nn_graph_destroy(g);
}

/* conv -> PRelu with slopes on the wrong axis ([1,1,9]: per column): not fusable */
static float slope9[9] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f};
static nn_graph *g_conv_prelu_cols(void)
{
    int x = -1, t1 = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &t1);
    nn_shape ss = {.rank = 3, .d = {1, 1, 9}};
    int sl = nn_graph_add_const(g, "slope", FFU_DTYPE_F32, &ss, slope9, sizeof slope9, NN_BORROW);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int in[2] = {t1, sl};
    nn_graph_add_node(g, NN_OP_PRELU, "prelu", in, 2, &y, 1);
    nn_graph_mark_output(g, y);
    return g;
}

static void test_prelu_wrong_axis_not_fused(void)
{
    init_data();
    nn_graph *g;
    double err = fused_vs_plain(g_conv_prelu_cols, &g);
    CHECK(g);
    CHECK_EQ_INT(g->nnodes, 2);
    CHECK_EQ_INT(count_op(g, NN_OP_PRELU), 1);
    CHECK_EQ_INT(g->nodes[0].act.kind, NN_ACT_NONE);
    CHECK(err == 0);
    nn_graph_destroy(g);
}

/* conv output read twice (Relu and Add) or a graph output: nothing fuses */
static nn_graph *g_conv_two_readers(void)
{
    int x = -1, t1 = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &t1);
    int r = nn_graph_add_tensor(g, "r", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_RELU, "relu", &t1, 1, &r, 1);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int in[2] = {r, t1};
    nn_graph_add_node(g, NN_OP_ADD, "add", in, 2, &y, 1);
    nn_graph_mark_output(g, y);
    return g;
}

static nn_graph *g_conv_output_relu(void)
{
    int x = -1, t1 = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &t1);
    nn_graph_mark_output(g, t1); /* the conv result itself is wanted */
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_RELU, "relu", &t1, 1, &y, 1);
    nn_graph_mark_output(g, y);
    return g;
}

static void test_not_fused_when_shared(void)
{
    init_data();
    nn_graph *g;
    double err = fused_vs_plain(g_conv_two_readers, &g);
    CHECK(g);
    CHECK_EQ_INT(g->nnodes, 3);
    CHECK_EQ_INT(g->nodes[0].act.kind, NN_ACT_NONE);
    CHECK(err == 0);
    nn_graph_destroy(g);
    g = g_conv_output_relu();
    CHECK(g && nn_fuse(g) == FFU_OK);
    CHECK_EQ_INT(g->nnodes, 2);
    CHECK_EQ_INT(g->nodes[0].act.kind, NN_ACT_NONE);
    nn_graph_destroy(g);
}

/* conv -> Add(residual x-like tensor) -> Relu: the Relu fuses into the Add */
static nn_graph *g_add_relu(void)
{
    int x = -1, t1 = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &t1);
    int s = nn_graph_add_tensor(g, "s", FFU_DTYPE_UNDEFINED, NULL);
    int in[2] = {t1, t1};
    nn_graph_add_node(g, NN_OP_ADD, "add", in, 2, &s, 1);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_LEAKY_RELU, "lrelu", &s, 1, &y, 1);
    nn_node_set_float(g, 2, "alpha", 0.2f);
    nn_graph_mark_output(g, y);
    return g;
}

static void test_add_act(void)
{
    init_data();
    nn_graph *g;
    double err = fused_vs_plain(g_add_relu, &g);
    CHECK(g);
    CHECK_EQ_INT(g->nnodes, 2);
    CHECK_EQ_INT(g->nodes[1].op, NN_OP_ADD);
    CHECK_EQ_INT(g->nodes[1].act.kind, NN_ACT_LEAKY_RELU);
    CHECK_NEAR(g->nodes[1].act.alpha, 0.2, 1e-7);
    CHECK(err >= 0 && err < 1e-6);
    nn_graph_destroy(g);
}

/* ---- plan time: Conv + residual Add (nn_fuse_planned) ------------------------------------ */

static float wdw[C_ * 9], w1x1[C_ * C_], b1x1[C_];

/* A BlazeFace block: x -> conv(+relu) = r -> depthwise 3x3 -> 1x1 conv = t -> Add(t, r)
 * -> Relu -> y -> Sigmoid -> z. variant 1: the 1x1 conv has its own Relu before the Add; 2: the Add's
 * other operand is a per-channel [1,C,1,1] mean of r (broadcast); 3: t is also a
 * graph output; 4: Add(r, t) (operands swapped). */
static nn_graph *g_block(int variant)
{
    int x = -1, r = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &r);
    int r2 = nn_graph_add_tensor(g, "r2", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_RELU, "relu0", &r, 1, &r2, 1);
    nn_shape dws = {.rank = 4, .d = {C_, 1, 3, 3}}, ws = {.rank = 4, .d = {C_, C_, 1, 1}},
             bs = {.rank = 1, .d = {C_}};
    int wd = nn_graph_add_const(g, "wdw", FFU_DTYPE_F32, &dws, wdw, sizeof wdw, NN_BORROW);
    int w1 = nn_graph_add_const(g, "w1", FFU_DTYPE_F32, &ws, w1x1, sizeof w1x1, NN_BORROW);
    int b1 = nn_graph_add_const(g, "b1", FFU_DTYPE_F32, &bs, b1x1, sizeof b1x1, NN_BORROW);
    int d = nn_graph_add_tensor(g, "d", FFU_DTYPE_UNDEFINED, NULL);
    int t = nn_graph_add_tensor(g, "t", FFU_DTYPE_UNDEFINED, NULL);
    int in_dw[2] = {r2, wd}, in_pw[3] = {d, w1, b1};
    int n = nn_graph_add_node(g, NN_OP_CONV, "dw", in_dw, 2, &d, 1);
    int64_t pads[4] = {1, 1, 1, 1};
    nn_node_set_ints(g, n, "pads", pads, 4);
    nn_node_set_int(g, n, "group", C_);
    nn_graph_add_node(g, NN_OP_CONV, "pw", in_pw, 3, &t, 1);
    if (variant == 1) {
        int t2 = nn_graph_add_tensor(g, "t2", FFU_DTYPE_UNDEFINED, NULL);
        nn_graph_add_node(g, NN_OP_RELU, "relu1", &t, 1, &t2, 1);
        t = t2;
    }
    int other = r2;
    if (variant == 2) {
        other = nn_graph_add_tensor(g, "m", FFU_DTYPE_UNDEFINED, NULL);
        nn_graph_add_node(g, NN_OP_GLOBAL_AVERAGE_POOL, "gap", &r2, 1, &other, 1);
    }
    if (variant == 3) nn_graph_mark_output(g, t);
    int s = nn_graph_add_tensor(g, "s", FFU_DTYPE_UNDEFINED, NULL);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int in_add[2] = {t, other};
    if (variant == 4) in_add[0] = other, in_add[1] = t;
    nn_graph_add_node(g, NN_OP_ADD, "add", in_add, 2, &s, 1);
    nn_graph_add_node(g, NN_OP_RELU, "relu2", &s, 1, &y, 1);
    /* a last op, so that the block's result is not a graph output (those get their
     * own memory; the fused Conv can then write over r2) */
    int z = nn_graph_add_tensor(g, "z", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_SIGMOID, "sig", &y, 1, &z, 1);
    nn_graph_mark_output(g, z);
    /* z first: run_ref returns graph output 0 */
    if (variant == 3) g->outputs[0] = z, g->outputs[1] = t;
    return g;
}

/* The load-time passes, then shape inference and nn_fuse_planned as a session does. */
static int fuse_both(nn_graph *g)
{
    if (nn_graph_toposort(g) < 0 || nn_fuse(g) < 0 || nn_graph_toposort(g) < 0) return -1;
    for (int i = 0; i < g->nnodes; i++)
        if (nn_op_get(g->nodes[i].op)->infer(g, &g->nodes[i]) < 0) return -1;
    return nn_fuse_planned(g) < 0 ? -1 : 0;
}

static void init_block(void)
{
    uint64_t s = 5;
    init_data();
    for (size_t i = 0; i < sizeof wdw / sizeof wdw[0]; i++) wdw[i] = test_rand_f(&s) - 0.5f;
    for (size_t i = 0; i < sizeof w1x1 / sizeof w1x1[0]; i++) w1x1[i] = test_rand_f(&s) - 0.5f;
    for (int c = 0; c < C_; c++) b1x1[c] = test_rand_f(&s) - 0.5f;
}

static void test_residual_fused(void)
{
    init_block();
    for (int variant = 0; variant <= 4; variant++) {
        nn_graph *a = g_block(variant), *b = g_block(variant);
        CHECK(a && b);
        if (!a || !b) break;
        CHECK_EQ_INT(fuse_both(b), 0);
        int fused = variant == 0 || variant == 4;
        /* fused: conv(+relu), dw, pw with the residual; else the Add stays */
        CHECK_EQ_INT(count_op(b, NN_OP_ADD), fused ? 0 : 1);
        const nn_node *pw = NULL;
        for (int i = 0; i < b->nnodes; i++)
            if (b->nodes[i].op == NN_OP_CONV && b->nodes[i].ninputs == 4) pw = &b->nodes[i];
        CHECK(fused ? pw != NULL : pw == NULL);
        if (pw) {
            CHECK(strcmp(b->tensors[pw->inputs[3]].name, "r2") == 0);
            CHECK_EQ_INT(pw->act.kind, NN_ACT_RELU);
            CHECK(strcmp(b->tensors[pw->outputs[0]].name, "y") == 0);
        }
        CHECK(ref_agree(a, b, 3 * 7 * 9, 11, C_ * 7 * 9));
        nn_graph_destroy(a), nn_graph_destroy(b);
    }
}

/* Runs graph g (consumed) in a session with options o on input x (xbytes), or on an
 * input uniform in [-1, 1) (fixed seed) when x is NULL; returns its outputs one after
 * the other (malloc'd; *n floats) or NULL when the session fails, and in *desc the
 * session's describe JSON (parsed: ffu_json_free it; NULL when there is none). */
static float *run_graph(nn_graph *g, const ffu_nn_session_opts *o, const float *x,
                        size_t xbytes, size_t *n, ffu_json **desc)
{
    ffu_nn_model *m = NULL;
    *desc = NULL;
    *n = 0;
    if (nn_model_from_graph(g, &m) != FFU_OK) return NULL;
    ffu_nn_session *ss = NULL;
    float *y = NULL;
    if (ffu_nn_session_create(m, o, &ss) == FFU_OK) {
        ffu_nn_tensor in, out;
        uint64_t s = 21;
        int ok = ffu_nn_session_input(ss, 0, &in) == FFU_OK && in.data &&
                 (!x || in.nbytes == xbytes);
        if (ok && x) memcpy(in.data, x, xbytes);
        for (size_t i = 0; ok && !x && i < in.nbytes / 4; i++)
            ((float *)in.data)[i] = 2.0f * test_rand_f(&s) - 1.0f;
        size_t total = 0;
        int no = ffu_nn_model_num_outputs(m);
        ok = ok && ffu_nn_session_run(ss) == FFU_OK;
        for (int k = 0; ok && k < no; k++) {
            float *grown;
            ok = ffu_nn_session_output(ss, k, &out) == FFU_OK &&
                 (grown = realloc(y, total + out.nbytes)) != NULL;
            if (ok) {
                y = grown;
                memcpy((char *)y + total, out.data, out.nbytes);
                total += out.nbytes;
            }
        }
        if (!ok) free(y), y = NULL;
        *n = y ? total / 4 : 0;
        ffu_jw *w = NULL;
        const char *text;
        if (ffu_jw_create(&w, 0) == FFU_OK && ffu_nn_session_describe(ss, w) == FFU_OK &&
            (text = ffu_jw_text(w, NULL)) != NULL && ffu_json_parse(text, strlen(text), desc) < 0)
            *desc = NULL;
        ffu_jw_destroy(w);
        ffu_nn_session_destroy(ss);
    }
    ffu_nn_model_destroy(m);
    return y;
}

/* An integer field of a describe JSON, or -1. */
static int desc_int(const ffu_json *d, const char *key)
{
    return (int)ffu_json_int(ffu_json_get(d, key), -1);
}

/* 1 when the plan put nodes on the cpu backend (there is one: oneDNN is built in). */
static int desc_on_cpu(const ffu_json *d)
{
    return ffu_json_get(ffu_json_get(d, "nodes_per_backend"), "cpu") != NULL;
}

/* 1 when a node of the plan runs op. */
static int desc_has_op(const ffu_json *d, const char *op)
{
    const ffu_json *nodes = ffu_json_get(d, "nodes");
    for (size_t i = 0; i < ffu_json_len(nodes); i++) {
        const char *name = ffu_json_string(ffu_json_get(ffu_json_at(nodes, i), "op"));
        if (name && !strcmp(name, op)) return 1;
    }
    return 0;
}

/* Runs g (taken) in a session on `backend` (2 threads) with input x and compares its
 * one output with want: *worst is the largest |want - got| / (1 + |want|), *desc the
 * session's describe JSON. Returns 1, 0 when the cpu backend is not built in, -1 on
 * failure. */
static int run_session(nn_graph *g, const char *backend, const float *x, size_t xbytes,
                       const float *want, size_t nw, double *worst, ffu_json **desc)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 2;
    size_t n = 0;
    float *y = run_graph(g, &o, x, xbytes, &n, desc);
    int rc = -1;
    if (strcmp(backend, "ref") != 0 && *desc && !desc_on_cpu(*desc)) {
        rc = 0;
    } else if (y && n == nw && *desc) {
        *worst = 0;
        for (size_t i = 0; i < nw; i++) {
            double d = fabs((double)want[i] - y[i]) / (1.0 + fabs(want[i]));
            if (d > *worst) *worst = d;
        }
        rc = 1;
    }
    free(y);
    return rc;
}

/* The same block through whole sessions on both backends: the plan puts the fused
 * Conv's output in place of the residual, the cpu backend turns it into a sum post-op,
 * and both give the unfused numbers. */
static void test_residual_sessions(void)
{
    init_block();
    float xdata[3 * 7 * 9];
    uint64_t s = 13;
    for (int i = 0; i < 3 * 7 * 9; i++) xdata[i] = 2.0f * test_rand_f(&s) - 1.0f;
    nn_graph *plain = g_block(0);
    size_t nw = 0;
    float *want = run_ref(plain, xdata, &nw);
    nn_graph_destroy(plain);
    CHECK(want != NULL);
    const char *backends[2] = {"ref", "cpu"};
    for (int k = 0; k < 2 && want; k++) {
        double worst = 1;
        ffu_json *d = NULL;
        int r = run_session(g_block(0), backends[k], xdata, sizeof xdata, want, nw, &worst, &d);
        int ok = r == 1 && worst < 1e-5 && !desc_has_op(d, "Add") /* the Add is gone */
                 && desc_int(d, "inplace_nodes") == 1; /* the pw conv writes over r2 */
        ffu_json_free(d);
        if (r == 0) break; /* built without oneDNN */
        if (!ok) free(want);
        CHECK(ok);
    }
    free(want);
}

/* ---- plan time: sibling pointwise convolutions (detection heads) ------------------------- */

static float hw[6 * C_], hb[6], hdw[6 * 9], hdb[6];

/* x -> conv(+relu) = r -> three 1x1 convs of r (1, 2 and 3 channels), each followed by a
 * depthwise 3x3 -> Concat of the three -> z. variant 1: the second head's pointwise
 * output is also a graph output (no depthwise merge); 2: the third pointwise conv has a
 * Relu (a different activation: only the first two merge); 3: as 0 with the pointwise
 * convs saying SAME_UPPER, as TFLite files do (a 1x1 window pads nothing: merged). */
static nn_graph *g_heads(int variant)
{
    int x = -1, r = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &r);
    int r2 = nn_graph_add_tensor(g, "r2", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_RELU, "relu0", &r, 1, &r2, 1);
    int outs[3], at = 0, dat = 0;
    for (int h = 0; h < 3; h++) {
        int m = h + 1;
        char name[16];
        nn_shape ws = {.rank = 4, .d = {m, C_, 1, 1}}, bs = {.rank = 1, .d = {m}},
                 ds = {.rank = 4, .d = {m, 1, 3, 3}};
        int w = nn_graph_add_const(g, "", FFU_DTYPE_F32, &ws, hw + at * C_, sizeof(float) * (size_t)(m * C_), NN_BORROW);
        int b = nn_graph_add_const(g, "", FFU_DTYPE_F32, &bs, hb + at, sizeof(float) * (size_t)m, NN_BORROW);
        int wd = nn_graph_add_const(g, "", FFU_DTYPE_F32, &ds, hdw + dat, sizeof(float) * (size_t)(m * 9), NN_BORROW);
        int bd = nn_graph_add_const(g, "", FFU_DTYPE_F32, &bs, hdb + at, sizeof(float) * (size_t)m, NN_BORROW);
        at += m, dat += m * 9;
        snprintf(name, sizeof name, "p%d", h);
        int p = nn_graph_add_tensor(g, name, FFU_DTYPE_UNDEFINED, NULL);
        int pin[3] = {r2, w, b};
        int pn = nn_graph_add_node(g, NN_OP_CONV, name, pin, 3, &p, 1);
        if (variant == 3) nn_node_set_string(g, pn, "auto_pad", "SAME_UPPER");
        if (variant == 2 && h == 2) g->nodes[pn].act.kind = NN_ACT_RELU;
        if (variant == 1 && h == 1) nn_graph_mark_output(g, p);
        snprintf(name, sizeof name, "d%d", h);
        outs[h] = nn_graph_add_tensor(g, name, FFU_DTYPE_UNDEFINED, NULL);
        int din[3] = {p, wd, bd};
        int dn = nn_graph_add_node(g, NN_OP_CONV, name, din, 3, &outs[h], 1);
        int64_t pads[4] = {1, 1, 1, 1};
        nn_node_set_ints(g, dn, "pads", pads, 4);
        nn_node_set_int(g, dn, "group", m);
    }
    int z = nn_graph_add_tensor(g, "z", FFU_DTYPE_UNDEFINED, NULL);
    int cn = nn_graph_add_node(g, NN_OP_CONCAT, "cat", outs, 3, &z, 1);
    nn_node_set_int(g, cn, "axis", 1);
    nn_graph_mark_output(g, z);
    if (variant == 1) g->outputs[0] = z, g->outputs[1] = nn_graph_find(g, "p1");
    return g;
}

static void test_heads_merged(void)
{
    init_block();
    uint64_t s = 17;
    for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++) hw[i] = test_rand_f(&s) - 0.5f;
    for (size_t i = 0; i < sizeof hdw / sizeof hdw[0]; i++) hdw[i] = test_rand_f(&s) - 0.5f;
    for (int i = 0; i < 6; i++) hb[i] = test_rand_f(&s) - 0.5f, hdb[i] = test_rand_f(&s) - 0.5f;
    for (int variant = 0; variant <= 3; variant++) {
        nn_graph *a = g_heads(variant), *b = g_heads(variant);
        CHECK(a && b);
        if (!a || !b) break;
        CHECK_EQ_INT(fuse_both(b), 0);
        /* 0: conv, merged pointwise, merged depthwise, split, concat; 1: no depthwise
         * merge (3 depthwise stay); 2: two heads merge, the third stays apart */
        int convs = count_op(b, NN_OP_CONV), splits = count_op(b, NN_OP_SPLIT);
        CHECK_EQ_INT(splits, 1);
        CHECK_EQ_INT(convs, variant == 0 || variant == 3 ? 3 : 5);
        for (int i = 0; i < b->nnodes; i++)
            if (b->nodes[i].op == NN_OP_SPLIT)
                CHECK_EQ_INT(b->nodes[i].noutputs, variant == 2 ? 2 : 3);
        CHECK(ref_agree(a, b, 3 * 7 * 9, 19, 6 * 7 * 9));
        nn_graph_destroy(a), nn_graph_destroy(b);
    }
    /* through sessions on both backends (the cpu backend splits channels-last data) */
    float xdata[3 * 7 * 9];
    uint64_t s3 = 23;
    for (int i = 0; i < 3 * 7 * 9; i++) xdata[i] = 2.0f * test_rand_f(&s3) - 1.0f;
    nn_graph *plain = g_heads(0);
    size_t nw = 0;
    float *want = run_ref(plain, xdata, &nw);
    nn_graph_destroy(plain);
    CHECK(want != NULL);
    const char *backends[2] = {"ref", "cpu"};
    for (int k = 0; k < 2 && want; k++) {
        double worst = 1;
        ffu_json *d = NULL;
        int r = run_session(g_heads(0), backends[k], xdata, sizeof xdata, want, nw, &worst, &d);
        int ok = r == 1 && worst < 1e-5 && desc_has_op(d, "Split");
        ffu_json_free(d);
        if (r == 0) break; /* built without oneDNN */
        if (!ok) free(want);
        CHECK(ok);
    }
    free(want);
}

/* ---- plan time: depthwise Conv + 2x2 MaxPool -------------------------------------------- */

/* x -> conv = r -> depthwise 3x3 (+relu) -> MaxPool -> y. variant 0: 2x2 stride 2 (fused);
 * 1: 3x3 windows (not fused); 2: the depthwise output is also a graph output; 3: a
 * dense 3x3 Conv instead of the depthwise one (fused: the Winograd shape); 4: a dense
 * 3x3 Conv with stride 2 (not fused); 5: the pool says SAME_UPPER over the 7x9 map (it
 * pads a row and a column: not fused); 6: SAME_UPPER over a 6x8 map (the depthwise
 * Conv padded at the start only), where it pads nothing (fused). */
static float wdense[C_ * C_ * 9];
static nn_graph *g_dw_pool(int variant)
{
    int x = -1, r = -1;
    nn_graph *g = new_graph(&x);
    add_conv(g, x, &r);
    int dense = variant >= 3;
    nn_shape dws = {.rank = 4, .d = {C_, dense ? C_ : 1, 3, 3}};
    int wd = dense ? nn_graph_add_const(g, "wdense", FFU_DTYPE_F32, &dws, wdense, sizeof wdense,
                                        NN_BORROW)
                   : nn_graph_add_const(g, "wdw", FFU_DTYPE_F32, &dws, wdw, sizeof wdw, NN_BORROW);
    int d = nn_graph_add_tensor(g, "d", FFU_DTYPE_UNDEFINED, NULL);
    int in_dw[2] = {r, wd};
    int n = nn_graph_add_node(g, NN_OP_CONV, "dw", in_dw, 2, &d, 1);
    int64_t pads[4] = {1, 1, 1, 1}, pads_start[4] = {1, 1, 0, 0}, k2[2] = {2, 2}, k3[2] = {3, 3};
    nn_node_set_ints(g, n, "pads", variant == 6 ? pads_start : pads, 4);
    if (!dense) nn_node_set_int(g, n, "group", C_);
    if (variant == 4) nn_node_set_ints(g, n, "strides", k2, 2);
    int d2 = nn_graph_add_tensor(g, "d2", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_RELU, "relu", &d, 1, &d2, 1);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    n = nn_graph_add_node(g, NN_OP_MAX_POOL, "mp", &d2, 1, &y, 1);
    nn_node_set_ints(g, n, "kernel_shape", variant == 1 ? k3 : k2, 2);
    nn_node_set_ints(g, n, "strides", k2, 2);
    if (variant >= 5) nn_node_set_string(g, n, "auto_pad", "SAME_UPPER");
    nn_graph_mark_output(g, y);
    if (variant == 2) nn_graph_mark_output(g, d2);
    return g;
}

static void test_dw_pool_fused(void)
{
    init_block();
    uint64_t ws = 31;
    for (size_t i = 0; i < sizeof wdense / 4; i++) wdense[i] = test_rand_f(&ws) - 0.5f;
    for (int variant = 0; variant <= 6; variant++) {
        nn_graph *a = g_dw_pool(variant), *b = g_dw_pool(variant);
        CHECK(a && b);
        if (!a || !b) break;
        int fused = variant == 0 || variant == 3 || variant == 6;
        CHECK_EQ_INT(fuse_both(b), 0);
        CHECK_EQ_INT(count_op(b, NN_OP_MAX_POOL), fused ? 0 : 1);
        int pooled = 0;
        for (int i = 0; i < b->nnodes; i++) pooled += nn_attr_int(&b->nodes[i], "_pool", 0) == 2;
        CHECK_EQ_INT(pooled, fused ? 1 : 0);
        if (variant == 0) {
            /* the fused node counts the depthwise Conv's FLOPs at its own 7x9 output
             * plus the pool's 2x2 comparisons, as the two nodes did */
            CHECK(nn_graph_toposort(a) == FFU_OK);
            int64_t fa = 0, fb = -1;
            for (int i = 0; i < a->nnodes; i++) {
                nn_node *n = &a->nodes[i];
                CHECK(nn_op_get(n->op)->infer(a, n) == FFU_OK);
                if (!strcmp(n->name, "dw") || !strcmp(n->name, "mp")) fa += nn_node_flops(a, n);
            }
            for (int i = 0; i < b->nnodes; i++)
                if (nn_attr_int(&b->nodes[i], "_pool", 0) == 2) fb = nn_node_flops(b, &b->nodes[i]);
            CHECK_EQ_INT(fa, 2 * C_ * 7 * 9 * 9 + C_ * 3 * 4 * 4);
            CHECK_EQ_INT(fb, fa);
        }
        size_t want = variant == 4 ? C_ * 2 * 2 : variant == 5 ? C_ * 4 * 5 : C_ * 3 * 4;
        CHECK(ref_agree(a, b, 3 * 7 * 9, 29, want));
        nn_graph_destroy(a), nn_graph_destroy(b);
    }
}

/* ---- the cpu backend's bf16 mode ----------------------------------------------------------- */

/* x [1,32,12,12] -> Conv 1x1 (64, bias, ReLU) -> Conv 3x3 pad 1 (32, bias): big enough
 * for oneDNN's bf16 kernels. tol >= 0 sets both nodes' bf16 tolerance (the test hook
 * _cpu_bf16_nmse). */
static float bw1[64 * 32], bb1[64], bw2[32 * 64 * 9], bb2[32];
static nn_graph *g_bf16(float tol)
{
    uint64_t s = 5;
    for (size_t i = 0; i < 64 * 32; i++) bw1[i] = (test_rand_f(&s) - 0.5f) * 0.3f;
    for (size_t i = 0; i < 32 * 64 * 9; i++) bw2[i] = (test_rand_f(&s) - 0.5f) * 0.1f;
    for (int i = 0; i < 64; i++) bb1[i] = test_rand_f(&s) - 0.5f;
    for (int i = 0; i < 32; i++) bb2[i] = test_rand_f(&s) - 0.5f;
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {1, 32, 12, 12}};
    nn_shape w1s = {.rank = 4, .d = {64, 32, 1, 1}}, b1s = {.rank = 1, .d = {64}};
    nn_shape w2s = {.rank = 4, .d = {32, 64, 3, 3}}, b2s = {.rank = 1, .d = {32}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int w1 = nn_graph_add_const(g, "w1", FFU_DTYPE_F32, &w1s, bw1, sizeof bw1, NN_BORROW);
    int b1 = nn_graph_add_const(g, "b1", FFU_DTYPE_F32, &b1s, bb1, sizeof bb1, NN_BORROW);
    int w2 = nn_graph_add_const(g, "w2", FFU_DTYPE_F32, &w2s, bw2, sizeof bw2, NN_BORROW);
    int b2 = nn_graph_add_const(g, "b2", FFU_DTYPE_F32, &b2s, bb2, sizeof bb2, NN_BORROW);
    int t1 = nn_graph_add_tensor(g, "t1", FFU_DTYPE_UNDEFINED, NULL);
    int t2 = nn_graph_add_tensor(g, "t2", FFU_DTYPE_UNDEFINED, NULL);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int in1[3] = {x, w1, b1}, in3[1] = {t1}, in2[3] = {t2, w2, b2};
    int n1 = nn_graph_add_node(g, NN_OP_CONV, "pw", in1, 3, &t1, 1);
    nn_graph_add_node(g, NN_OP_RELU, "relu", in3, 1, &t2, 1);
    int n2 = nn_graph_add_node(g, NN_OP_CONV, "conv", in2, 3, &y, 1);
    int64_t pads[4] = {1, 1, 1, 1};
    nn_node_set_ints(g, n2, "pads", pads, 4);
    if (tol >= 0) {
        nn_node_set_float(g, n1, "_cpu_bf16_nmse", tol);
        nn_node_set_float(g, n2, "_cpu_bf16_nmse", tol);
    }
    nn_graph_mark_output(g, y);
    return g;
}

/* Runs g_bf16(tol) on the cpu backend; returns the output (malloc'd; *n floats) and
 * the describe JSON's bf16_nodes / bf16_granted; NULL without oneDNN. */
static float *run_bf16_opts(int bf16, float tol, int winograd, size_t *n, int *nodes, int *granted)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "cpu";
    o.threads = 1;
    o.bf16 = bf16;
    o.no_winograd = !winograd;
    ffu_json *d;
    float *y = run_graph(g_bf16(tol), &o, NULL, 0, n, &d);
    *nodes = desc_int(d, "bf16_nodes");
    *granted = d ? ffu_json_bool(ffu_json_get(d, "bf16_granted"), 0) : -1;
    ffu_json_free(d);
    return y;
}

/* Direct f32 where a layer does not run bf16: an f32 session with Winograd would take
 * F(2x2) for these 12x12 layers, which a bf16 session leaves to bf16 (or, failing its
 * check, to direct) */
static float *run_bf16(int bf16, float tol, size_t *n, int *nodes, int *granted)
{
    return run_bf16_opts(bf16, tol, 0, n, nodes, granted);
}

static double nmse(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d, den += (double)a[i] * a[i];
    }
    return den > 0 ? num / den : num;
}

/* Runs body in a child process whose CPU features have AVX-512 masked out
 * (FFU_CPU_MASK, read once per process: the parent must not have read the features
 * yet, so the tests that use this run first). 1 when body returned 1. */
static int in_child_without_avx512(int (*body)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        setenv("FFU_CPU_MASK", "avx512", 1);
        _exit(body() ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Without AVX512-BF16 bf16 is not granted and the session computes exactly what f32
 * does. */
static int bf16_refused_body(void)
{
    size_t n0 = 0, n1 = 0;
    int nodes0, g0, nodes1, g1;
    float *a = run_bf16(0, -1, &n0, &nodes0, &g0), *b = run_bf16(1, -1, &n1, &nodes1, &g1);
    int ok = !a || (b && n0 == n1 && !memcmp(a, b, n0 * 4) && nodes1 == 0 && g1 == 0);
    free(a), free(b);
    return ok;
}

static void test_bf16_refused_without_isa(void)
{
    CHECK(in_child_without_avx512(bf16_refused_body));
}

/* With AVX512-BF16 both convolutions run bf16 (their check passes), the result is
 * within bf16 accuracy of f32 but not identical (bf16 really ran); a zero tolerance
 * makes every node fail its check and gives exactly the f32 numbers. */
static void test_bf16_session(void)
{
    size_t n0 = 0, n1 = 0, n2 = 0;
    int nodes0, g0, nodes1, g1, nodes2, g2;
    float *a = run_bf16(0, -1, &n0, &nodes0, &g0);
    if (!a) TEST_SKIP("built without oneDNN");
    float *b = run_bf16(1, -1, &n1, &nodes1, &g1), *c = run_bf16(1, 0, &n2, &nodes2, &g2);
    CHECK(b && c && n0 == n1 && n0 == n2 && n0 == 32 * 12 * 12);
    CHECK(nodes0 == 0 && g0 == 0);
    int isa = (ffu_cpu_features() & FFU_CPU_AVX512BF16) != 0;
    CHECK(g1 == isa && g2 == isa);
    if (b && c && n0 == n1 && n0 == n2) {
        double e = nmse(a, b, n0);
        printf("bf16 session: %d nodes bf16, nmse %.3g vs f32\n", nodes1, e);
        CHECK(e < 1e-4);
        if (isa) CHECK(nodes1 == 2 && e > 0);
        else CHECK(nodes1 == 0 && e == 0);
        CHECK(nodes2 == 0 && !memcmp(a, c, n0 * 4));
    }
    free(a), free(b), free(c);
    /* with Winograd allowed the bf16 session still runs both layers in bf16: F(2x2),
     * which an f32 session would use for them, leaves them to bf16 */
    int nodes3 = -1, g3 = -1;
    size_t n3 = 0;
    float *d = run_bf16_opts(1, -1, 1, &n3, &nodes3, &g3);
    CHECK(d && n3 == n0);
    CHECK_EQ_INT(nodes3, isa ? 2 : 0);
    free(d);
}

/* ---- the cpu backend's Winograd convolutions -------------------------------------------- */

/* x [1,16,34,34] -> Conv 3x3 pad 1 (48, bias, ReLU) = a -> Conv 3x3 pad 1 (48) + a
 * (the fused residual), ReLU -> Conv 3x3 valid (16, bias) = y [1,16,32,32]. Every Conv
 * qualifies for Winograd (>= 16 channels in, >= 32x32 out) and the three cover the
 * staged and unstaged input and output (16 channels blocked are NHWC's bytes), the
 * residual copied into a blocked output and a fused activation. tol >= 0 sets each
 * node's Winograd tolerance (the test hook _cpu_wino_nmse). */
static float ww1[48 * 16 * 9], wb1[48], ww2[48 * 48 * 9], ww3[16 * 48 * 9], wb3[16];
static nn_graph *g_wino(float tol)
{
    uint64_t s = 11;
    for (size_t i = 0; i < sizeof ww1 / 4; i++) ww1[i] = (test_rand_f(&s) - 0.5f) * 0.2f;
    for (size_t i = 0; i < sizeof ww2 / 4; i++) ww2[i] = (test_rand_f(&s) - 0.5f) * 0.1f;
    for (size_t i = 0; i < sizeof ww3 / 4; i++) ww3[i] = (test_rand_f(&s) - 0.5f) * 0.1f;
    for (int i = 0; i < 48; i++) wb1[i] = test_rand_f(&s) - 0.5f;
    for (int i = 0; i < 16; i++) wb3[i] = test_rand_f(&s) - 0.5f;
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {1, 16, 34, 34}};
    nn_shape w1s = {.rank = 4, .d = {48, 16, 3, 3}}, b1s = {.rank = 1, .d = {48}};
    nn_shape w2s = {.rank = 4, .d = {48, 48, 3, 3}};
    nn_shape w3s = {.rank = 4, .d = {16, 48, 3, 3}}, b3s = {.rank = 1, .d = {16}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int w1 = nn_graph_add_const(g, "w1", FFU_DTYPE_F32, &w1s, ww1, sizeof ww1, NN_BORROW);
    int b1 = nn_graph_add_const(g, "b1", FFU_DTYPE_F32, &b1s, wb1, sizeof wb1, NN_BORROW);
    int w2 = nn_graph_add_const(g, "w2", FFU_DTYPE_F32, &w2s, ww2, sizeof ww2, NN_BORROW);
    int w3 = nn_graph_add_const(g, "w3", FFU_DTYPE_F32, &w3s, ww3, sizeof ww3, NN_BORROW);
    int b3 = nn_graph_add_const(g, "b3", FFU_DTYPE_F32, &b3s, wb3, sizeof wb3, NN_BORROW);
    int t[5], y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        t[i] = nn_graph_add_tensor(g, name, FFU_DTYPE_UNDEFINED, NULL);
    }
    int in1[3] = {x, w1, b1}, in2[2] = {t[1], w2}, in_add[2] = {t[2], t[1]};
    int in3[3] = {t[4], w3, b3};
    int64_t pads[4] = {1, 1, 1, 1};
    int n[3];
    n[0] = nn_graph_add_node(g, NN_OP_CONV, "c1", in1, 3, &t[0], 1);
    nn_graph_add_node(g, NN_OP_RELU, "r1", &t[0], 1, &t[1], 1);
    n[1] = nn_graph_add_node(g, NN_OP_CONV, "c2", in2, 2, &t[2], 1);
    nn_graph_add_node(g, NN_OP_ADD, "add", in_add, 2, &t[3], 1);
    nn_graph_add_node(g, NN_OP_RELU, "r2", &t[3], 1, &t[4], 1);
    n[2] = nn_graph_add_node(g, NN_OP_CONV, "c3", in3, 3, &y, 1);
    nn_node_set_ints(g, n[0], "pads", pads, 4);
    nn_node_set_ints(g, n[1], "pads", pads, 4);
    for (int i = 0; tol >= 0 && i < 3; i++) nn_node_set_float(g, n[i], "_cpu_wino_nmse", tol);
    nn_graph_mark_output(g, y);
    return g;
}

/* Runs g_wino(tol) on backend be (no_winograd as given); returns the output (malloc'd,
 * *n floats) and the describe JSON's winograd_nodes; NULL when the session fails. */
static float *run_wino(const char *be, int no_winograd, float tol, size_t *n, int *nodes)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = be;
    o.threads = 1;
    o.no_winograd = no_winograd;
    ffu_json *d;
    float *y = run_graph(g_wino(tol), &o, NULL, 0, n, &d);
    *nodes = desc_int(d, "winograd_nodes");
    ffu_json_free(d);
    return y;
}

/* By default all three convolutions run Winograd: within f32 rounding of the ref
 * kernels and of the direct primitives, but not bit-identical to direct (Winograd
 * really ran). no_winograd, or a zero tolerance (every node fails its check), gives
 * exactly the direct numbers. */
static void test_winograd_session(void)
{
    size_t nr = 0, nd = 0, nw = 0, nz = 0;
    int kr, kd, kw, kz;
    float *d = run_wino("cpu", 1, -1, &nd, &kd);
    if (!d) TEST_SKIP("built without oneDNN");
    float *r = run_wino("ref", 0, -1, &nr, &kr), *w = run_wino("cpu", 0, -1, &nw, &kw);
    float *z = run_wino("cpu", 0, 0, &nz, &kz);
    CHECK(r && w && z && nr == nd && nw == nd && nz == nd && nd == 16 * 32 * 32);
    CHECK_EQ_INT(kd, 0);
    CHECK_EQ_INT(kw, 3);
    CHECK_EQ_INT(kz, 0);
    if (r && w && z && nr == nd && nw == nd && nz == nd) {
        double e_ref = nmse(r, w, nd), e_direct = nmse(d, w, nd);
        printf("winograd session: %d nodes, nmse %.3g vs ref, %.3g vs direct\n", kw, e_ref,
               e_direct);
        CHECK(e_ref < 1e-9 && e_direct < 1e-10);
        CHECK(e_direct > 0);
        CHECK(!memcmp(d, z, nd * 4));
        CHECK(nmse(r, d, nd) < 1e-9);
    }
    free(r), free(d), free(w), free(z);
}

/* x [1,16,66,66] -> Conv 3x3 pad 1 (32, ReLU) -> MaxPool 2x2 -> Conv 3x3 pad 1 (32, ReLU)
 * -> Conv 3x3 pad 1 (16) = y [1,16,33,33]: three Winograd nodes, and the plan converts
 * layouts only at the graph's input and output (2 reorders): with AVX-512 on our
 * kernel (the pool fused into the first Conv, channels-last between), without it on
 * oneDNN's with the tensors between stored nChw16c (layout_plan's blocked tensors;
 * staging at every Winograd node would need 6). Numbers as ref's. */
static float lw1[32 * 16 * 9], lw2[32 * 32 * 9], lw3[16 * 32 * 9];
static nn_graph *g_wino_chain(void)
{
    uint64_t s = 13;
    for (size_t i = 0; i < sizeof lw1 / 4; i++) lw1[i] = (test_rand_f(&s) - 0.5f) * 0.2f;
    for (size_t i = 0; i < sizeof lw2 / 4; i++) lw2[i] = (test_rand_f(&s) - 0.5f) * 0.15f;
    for (size_t i = 0; i < sizeof lw3 / 4; i++) lw3[i] = (test_rand_f(&s) - 0.5f) * 0.15f;
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {1, 16, 66, 66}};
    nn_shape w1s = {.rank = 4, .d = {32, 16, 3, 3}}, w2s = {.rank = 4, .d = {32, 32, 3, 3}};
    nn_shape w3s = {.rank = 4, .d = {16, 32, 3, 3}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int w[3] = {nn_graph_add_const(g, "w1", FFU_DTYPE_F32, &w1s, lw1, sizeof lw1, NN_BORROW),
                nn_graph_add_const(g, "w2", FFU_DTYPE_F32, &w2s, lw2, sizeof lw2, NN_BORROW),
                nn_graph_add_const(g, "w3", FFU_DTYPE_F32, &w3s, lw3, sizeof lw3, NN_BORROW)};
    int t[5], y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        t[i] = nn_graph_add_tensor(g, name, FFU_DTYPE_UNDEFINED, NULL);
    }
    int64_t pads[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    int in1[2] = {x, w[0]}, in2[2] = {t[2], w[1]}, in3[2] = {t[4], w[2]};
    int n1 = nn_graph_add_node(g, NN_OP_CONV, "c1", in1, 2, &t[0], 1);
    nn_graph_add_node(g, NN_OP_RELU, "r1", &t[0], 1, &t[1], 1);
    int np = nn_graph_add_node(g, NN_OP_MAX_POOL, "pool", &t[1], 1, &t[2], 1);
    int n2 = nn_graph_add_node(g, NN_OP_CONV, "c2", in2, 2, &t[3], 1);
    nn_graph_add_node(g, NN_OP_RELU, "r2", &t[3], 1, &t[4], 1);
    int n3 = nn_graph_add_node(g, NN_OP_CONV, "c3", in3, 2, &y, 1);
    nn_node_set_ints(g, n1, "pads", pads, 4);
    nn_node_set_ints(g, n2, "pads", pads, 4);
    nn_node_set_ints(g, n3, "pads", pads, 4);
    nn_node_set_ints(g, np, "kernel_shape", k2, 2);
    nn_node_set_ints(g, np, "strides", k2, 2);
    nn_graph_mark_output(g, y);
    return g;
}

/* Runs the graph build() makes on cpu and on ref (one thread each, run_graph). Returns
 * 0 with both outputs (*n floats each, ref's NULL if it failed) and cpu's describe
 * JSON, or -1 when there is no cpu backend (every node would run on ref). */
static int cpu_and_ref(nn_graph *(*build)(void), float **yc, float **yr, size_t *n,
                       ffu_json **desc)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.threads = 1;
    o.backend = "cpu";
    size_t nr = 0;
    ffu_json *dr = NULL;
    *yc = run_graph(build(), &o, NULL, 0, n, desc);
    if (!*yc || !desc_on_cpu(*desc)) {
        free(*yc), ffu_json_free(*desc);
        return -1;
    }
    o.backend = "ref";
    *yr = run_graph(build(), &o, NULL, 0, &nr, &dr);
    ffu_json_free(dr);
    if (*yr && nr != *n) free(*yr), *yr = NULL;
    return 0;
}

/* How many nodes of describe JSON d ran an implementation whose name contains part. */
static int desc_impls(const ffu_json *d, const char *part)
{
    const ffu_json *nodes = ffu_json_get(d, "nodes");
    int k = 0;
    for (size_t i = 0; i < ffu_json_len(nodes); i++) {
        const char *impl = ffu_json_string(ffu_json_get(ffu_json_at(nodes, i), "impl"));
        k += impl && strstr(impl, part);
    }
    return k;
}

/* Runs build's graph on cpu and ref: n_out outputs that match (NMSE under 1e-10), and
 * ours_expected nodes on an implementation named with `impl` (none without AVX-512,
 * which all of ours named here need). */
static void check_ours(nn_graph *(*build)(void), const char *what, const char *impl,
                       size_t n_out, int ours_expected)
{
    float *yc, *yr;
    size_t n = 0;
    ffu_json *d;
    if (cpu_and_ref(build, &yc, &yr, &n, &d) < 0) TEST_SKIP("built without oneDNN");
    int ours = desc_impls(d, impl);
    double e = yr ? nmse(yr, yc, n) : 1;
    printf("%s: %d of ours, nmse %.3g\n", what, ours, e);
    CHECK(yr != NULL && n == n_out);
    CHECK(e < 1e-10);
    CHECK_EQ_INT(ours, ffu_cpu_features() & FFU_CPU_AVX512F ? ours_expected : 0);
    free(yc), free(yr), ffu_json_free(d);
}

/* Without AVX-512 our Winograd kernel is off and the same chain runs oneDNN's (which
 * picks kernels by its own detection, so its AVX-512 Winograd still runs: what is
 * tested is our plan for it). The first Conv carries the fused pool, which oneDNN's
 * Winograd path does not take, so it runs direct: two Winograd nodes, none of ours,
 * and three reorders (the graph's input, the second Conv's input, the output), the
 * tensor between the second and third Conv stored nChw16c (five without that). */
static int wino_chain_body(void)
{
    float *yc, *yr;
    size_t n = 0;
    ffu_json *d;
    if (cpu_and_ref(g_wino_chain, &yc, &yr, &n, &d) < 0) return 1; /* no oneDNN */
    int ok = yr && n == 16 * 33 * 33 && desc_int(d, "winograd_nodes") == 2 &&
             desc_impls(d, "facefuse:wino") == 0 && desc_int(d, "reorders") == 3 &&
             nmse(yr, yc, n) < 1e-9;
    if (!ok)
        fprintf(stderr, "without AVX-512: %d Winograd nodes, %d ours, %d reorders\n",
                desc_int(d, "winograd_nodes"), desc_impls(d, "facefuse:wino"),
                desc_int(d, "reorders"));
    free(yc), free(yr), ffu_json_free(d);
    return ok;
}

static void test_winograd_chain_without_avx512(void)
{
    CHECK(in_child_without_avx512(wino_chain_body));
}

static void test_winograd_blocked_chain(void)
{
    float *yc, *yr;
    size_t n = 0;
    ffu_json *d;
    if (cpu_and_ref(g_wino_chain, &yc, &yr, &n, &d) < 0) TEST_SKIP("built without oneDNN");
    CHECK(yr && n == 16 * 33 * 33);
    int wino = desc_int(d, "winograd_nodes"), reorders = desc_int(d, "reorders");
    CHECK_EQ_INT(wino, 3);
    CHECK_EQ_INT(reorders, 2);
    CHECK_EQ_INT(desc_impls(d, "facefuse:wino"), ffu_cpu_features() & FFU_CPU_AVX512F ? 3 : 0);
    if (yr) {
        double e = nmse(yr, yc, n);
        printf("winograd chain: %d nodes, %d reorders, nmse %.3g vs ref\n", wino, reorders, e);
        CHECK(e < 1e-9);
    }
    free(yc), free(yr), ffu_json_free(d);
}

/* Our Winograd kernel holds U, 36/9 or 64/9 times a layer's weights: above 16 MB a node
 * (an enhancer's 512 -> 512 layer) it leaves the layer to oneDNN. x [1,C,18,18] -> Conv
 * 3x3 pad 1 (C outputs): C = 96 runs ours (U 2.4 MB with F(6x6)), C = 352 does not
 * (F(4x4)'s U would be 17.8 MB); both give ref's numbers. */
static int cap_c;
static nn_graph *g_wino_cap(void)
{
    static float *w;
    free(w);
    w = malloc(sizeof(float) * 9 * (size_t)cap_c * (size_t)cap_c);
    if (!w) return NULL;
    uint64_t s = 19;
    for (size_t i = 0; i < 9 * (size_t)cap_c * (size_t)cap_c; i++) w[i] = (test_rand_f(&s) - 0.5f) * 0.1f;
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {1, cap_c, 18, 18}}, ws = {.rank = 4, .d = {cap_c, cap_c, 3, 3}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int wt = nn_graph_add_const(g, "w", FFU_DTYPE_F32, &ws, w, sizeof(float) * 9 * (size_t)cap_c * (size_t)cap_c, NN_BORROW);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int in[2] = {x, wt};
    int n = nn_graph_add_node(g, NN_OP_CONV, "c", in, 2, &y, 1);
    int64_t pads[4] = {1, 1, 1, 1};
    nn_node_set_ints(g, n, "pads", pads, 4);
    nn_graph_mark_output(g, y);
    return g;
}

static void test_winograd_memory_cap(void)
{
    int avx512 = (ffu_cpu_features() & FFU_CPU_AVX512F) != 0;
    for (int i = 0; i < 2; i++) {
        cap_c = i ? 352 : 96;
        float *yc, *yr;
        size_t n = 0;
        ffu_json *d;
        if (cpu_and_ref(g_wino_cap, &yc, &yr, &n, &d) < 0) TEST_SKIP("built without oneDNN");
        CHECK(yr && n == (size_t)cap_c * 18 * 18);
        printf("winograd memory cap: %d channels, %d of ours\n", cap_c, desc_impls(d, "facefuse:wino"));
        CHECK_EQ_INT(desc_impls(d, "facefuse:wino"), avx512 && !i ? 1 : 0);
        if (yr) CHECK(nmse(yr, yc, n) < 1e-9);
        free(yc), free(yr), ffu_json_free(d);
    }
}

/* Reductions read channels-last tensors where they can (layout_plan): x [1,8,9,10] ->
 * Conv 3x3 pad 1 (16, ReLU) = b; ReduceMean(b, spatial, keepdims 0) = y1 [1,16];
 * ReduceMax(b, channels, keepdims 1) = c [1,1,9,10] -> Conv 1x1 (4) = y2. b and c stay
 * channels-last: the plan converts layouts only where the two Convs meet the graph's
 * plain input and output (2), where a reduction on ref or in NCHW would force b to
 * NCHW and add a conversion after the first Conv. Numbers as ref's. */
static float rw1[16 * 8 * 9], rw2[4];
static nn_graph *g_reduce_cl(void)
{
    uint64_t s = 17;
    for (size_t i = 0; i < sizeof rw1 / 4; i++) rw1[i] = test_rand_f(&s) - 0.5f;
    for (size_t i = 0; i < sizeof rw2 / 4; i++) rw2[i] = test_rand_f(&s) - 0.5f;
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {1, 8, 9, 10}}, w1s = {.rank = 4, .d = {16, 8, 3, 3}};
    nn_shape w2s = {.rank = 4, .d = {4, 1, 1, 1}}, a2s = {.rank = 1, .d = {2}};
    nn_shape a1s = {.rank = 1, .d = {1}};
    static const int64_t sp[2] = {2, 3}, ch[1] = {1};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int w1 = nn_graph_add_const(g, "w1", FFU_DTYPE_F32, &w1s, rw1, sizeof rw1, NN_BORROW);
    int w2 = nn_graph_add_const(g, "w2", FFU_DTYPE_F32, &w2s, rw2, sizeof rw2, NN_BORROW);
    int ax_sp = nn_graph_add_const(g, "ax_sp", FFU_DTYPE_I64, &a2s, sp, sizeof sp, NN_BORROW);
    int ax_ch = nn_graph_add_const(g, "ax_ch", FFU_DTYPE_I64, &a1s, ch, sizeof ch, NN_BORROW);
    int a = nn_graph_add_tensor(g, "a", FFU_DTYPE_UNDEFINED, NULL);
    int b = nn_graph_add_tensor(g, "b", FFU_DTYPE_UNDEFINED, NULL);
    int c = nn_graph_add_tensor(g, "c", FFU_DTYPE_UNDEFINED, NULL);
    int y1 = nn_graph_add_tensor(g, "y1", FFU_DTYPE_UNDEFINED, NULL);
    int y2 = nn_graph_add_tensor(g, "y2", FFU_DTYPE_UNDEFINED, NULL);
    int in1[2] = {x, w1}, in_m[2] = {b, ax_sp}, in_x[2] = {b, ax_ch}, in2[2] = {c, w2};
    int64_t pads[4] = {1, 1, 1, 1};
    int n1 = nn_graph_add_node(g, NN_OP_CONV, "c1", in1, 2, &a, 1);
    nn_node_set_ints(g, n1, "pads", pads, 4);
    nn_graph_add_node(g, NN_OP_RELU, "r", &a, 1, &b, 1);
    int nm = nn_graph_add_node(g, NN_OP_REDUCE_MEAN, "mean", in_m, 2, &y1, 1);
    nn_node_set_int(g, nm, "keepdims", 0);
    nn_graph_add_node(g, NN_OP_REDUCE_MAX, "max", in_x, 2, &c, 1);
    nn_graph_add_node(g, NN_OP_CONV, "c2", in2, 2, &y2, 1);
    nn_graph_mark_output(g, y1);
    nn_graph_mark_output(g, y2);
    return g;
}

static void test_reduce_channels_last(void)
{
    float *yc, *yr;
    size_t n = 0;
    ffu_json *d;
    if (cpu_and_ref(g_reduce_cl, &yc, &yr, &n, &d) < 0) TEST_SKIP("built without oneDNN");
    CHECK(yr && n == 16 + 4 * 9 * 10); /* y1 then y2 */
    int reorders = desc_int(d, "reorders");
    int on_cpu = (int)ffu_json_int(ffu_json_get(ffu_json_get(d, "nodes_per_backend"), "cpu"), -1);
    printf("reductions channels-last: %d reorders, %d nodes on cpu\n", reorders, on_cpu);
    CHECK_EQ_INT(reorders, 2);
    CHECK_EQ_INT(on_cpu, 4); /* Conv + ReLU fused, both reductions, the second Conv */
    if (yr) CHECK(nmse(yr, yc, n) < 1e-10);
    free(yc), free(yr), ffu_json_free(d);
}

static void test_empty_and_null(void)
{
    CHECK(nn_fuse_planned(NULL) == FFU_OK);
    CHECK(nn_fuse(NULL) == FFU_OK);
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    CHECK(nn_fuse(g) == FFU_OK);
    nn_graph_destroy(g);
}

/* ---- band pipelines (src/nn/cpu/cpu_chain.c) ---------------------------------------------- */

/* A Conv of x into m channels (group 1 or depthwise), k x k, pads p, activation act;
 * weights and bias uniform in [-0.5, 0.5) from *seed, copied into the graph. Returns its
 * output tensor; *node the node. */
static int chain_conv(nn_graph *g, int x, int64_t c, int64_t m, int dw, int64_t k, int64_t p,
                      nn_act_kind act, uint64_t *seed, int *node)
{
    int64_t nw = m * (dw ? 1 : c) * k * k;
    float *w = malloc(sizeof(float) * (size_t)(nw + m));
    if (!w) return -1;
    for (int64_t i = 0; i < nw + m; i++) w[i] = test_rand_f(seed) - 0.5f;
    nn_shape ws = {.rank = 4, .d = {m, dw ? 1 : c, k, k}}, bs = {.rank = 1, .d = {m}};
    int wt = nn_graph_add_const(g, "", FFU_DTYPE_F32, &ws, w, sizeof(float) * (size_t)nw, NN_COPY);
    int bt = nn_graph_add_const(g, "", FFU_DTYPE_F32, &bs, w + nw, sizeof(float) * (size_t)m,
                                NN_COPY);
    free(w);
    int y = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    int in[3] = {x, wt, bt};
    int n = nn_graph_add_node(g, NN_OP_CONV, "", in, 3, &y, 1);
    int64_t pads[4] = {p, p, p, p};
    nn_node_set_ints(g, n, "pads", pads, 4);
    if (dw) nn_node_set_int(g, n, "group", c);
    g->nodes[n].act.kind = act;
    g->nodes[n].act.alpha = act == NN_ACT_CLIP ? 0.0f : 0.1f;
    g->nodes[n].act.beta = 6.0f;
    if (node) *node = n;
    return y;
}

/* A 2x2 stride-2 MaxPool of t; returns its output. */
static int chain_max_pool(nn_graph *g, int t)
{
    static const int64_t k2[2] = {2, 2};
    int y = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    int mp = nn_graph_add_node(g, NN_OP_MAX_POOL, "", &t, 1, &y, 1);
    nn_node_set_ints(g, mp, "kernel_shape", k2, 2);
    nn_node_set_ints(g, mp, "strides", k2, 2);
    return y;
}

/* A new graph whose input x is an [N,3,H,W] image. */
static nn_graph *image_graph(int64_t N, int64_t H, int64_t W, int *x)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {N, 3, H, W}};
    *x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, *x);
    return g;
}

/* x [N,3,H,W] -> [dense 3x3 3->16 (a first layer) -> 1x1 16->32 relu -> dw 3x3 leaky ->
 * 1x1 32->64 -> dw 3x3, MaxPool 2x2 -> 1x1 64->48 clip -> dw 5x5 pads 2] -> dense 3x3 ->
 * y: seven pipeline members and a convolution that is not one (the sizes below keep the
 * values after the pool over 1 MiB, so the pipeline is not cut short after it). variant
 * 1: the third member's output is also a graph output: stored NCHW, it cuts the run in
 * two parts; the first is too short, the second (depthwise with the pool, 1x1,
 * depthwise 5x5) is a pipeline of three. */
static nn_graph *g_chain(int64_t N, int64_t H, int64_t W, int variant)
{
    int x;
    nn_graph *g = image_graph(N, H, W, &x);
    if (!g) return NULL;
    uint64_t seed = 41;
    int t = chain_conv(g, x, 3, 16, 0, 3, 1, NN_ACT_RELU, &seed, NULL);
    t = chain_conv(g, t, 16, 32, 0, 1, 0, NN_ACT_RELU, &seed, NULL);
    int second = t = chain_conv(g, t, 32, 32, 1, 3, 1, NN_ACT_LEAKY_RELU, &seed, NULL);
    t = chain_conv(g, t, 32, 64, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 64, 64, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, chain_max_pool(g, t), 64, 48, 0, 1, 0, NN_ACT_CLIP, &seed, NULL);
    t = chain_conv(g, t, 48, 48, 1, 5, 2, NN_ACT_NONE, &seed, NULL);
    int y = chain_conv(g, t, 48, 8, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    if (variant == 1) nn_graph_mark_output(g, second);
    return g;
}

/* The worst error of got (n floats) against the first nw of want, relative to 1 + |want|;
 * 1 when got is missing or shorter. */
static double worst_error(const float *want, size_t nw, const float *got, size_t n)
{
    double worst = got && n >= nw ? 0 : 1;
    for (size_t i = 0; worst < 1 && i < nw; i++) {
        double e = fabs((double)want[i] - got[i]) / (1.0 + fabs(want[i]));
        if (e > worst) worst = e;
    }
    return worst;
}

/* The pipeline computes what the reference kernels compute, on one and two threads
 * (two strips, the rows above the second one computed twice), for odd sizes (edge
 * columns, an odd row left over by the pool) and a batch of two; with an intermediate
 * that is also a graph output it is cut in two, with the session's no_bands there is
 * none, and where the values after the pool are small it ends early; the numbers are
 * the same. */
static void test_band_pipeline(void)
{
    static const int64_t shapes[4][3] = {{1, 171, 131}, {2, 121, 93}, {1, 110, 200}, {1, 97, 75}};
    /* members per variant; at 97x75 the values after the pool are under 1 MiB: the
     * pipeline ends at the depthwise layer with the pool, which reads the last large one */
    static const int members[4][3] = {{7, 3, 0}, {7, 3, 0}, {7, 3, 0}, {5, 0, 0}};
    for (int si = 0; si < 4; si++) {
        const int64_t N = shapes[si][0], H = shapes[si][1], W = shapes[si][2];
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = "ref";
        size_t nw = 0, n = 0;
        ffu_json *d = NULL;
        float *want = run_graph(g_chain(N, H, W, 0), &o, NULL, 0, &nw, &d);
        ffu_json_free(d);
        CHECK(want != NULL && nw > 0);
        /* variant 2: the graph of variant 0 with the session's no_bands */
        for (int variant = 0; variant <= 2 && want; variant++)
            for (int threads = 1; threads <= 2; threads++) {
                o.backend = "cpu";
                o.threads = threads;
                o.no_bands = variant == 2;
                float *got = run_graph(g_chain(N, H, W, variant & 1), &o, NULL, 0, &n, &d);
                if (d && !desc_on_cpu(d)) { /* no oneDNN in this build */
                    ffu_json_free(d), free(got);
                    continue;
                }
                double worst = worst_error(want, nw, got, n); /* variant 1: y, then more */
                int bands = desc_int(d, "band_nodes");
                int expect = ffu_cpu_features() & FFU_CPU_AVX512F ? members[si][variant] : 0;
                printf("band pipeline %lldx%lldx%lld variant %d, %d threads: %d nodes in it, "
                       "worst %.3g\n", (long long)N, (long long)H, (long long)W, variant,
                       threads, bands, worst);
                CHECK(worst < 1e-4);
                CHECK_EQ_INT(bands, expect);
                ffu_json_free(d), free(got);
            }
        free(want);
    }
}

/* Makes a convolution node stride 2 in both directions. */
static void stride2(nn_graph *g, int node)
{
    static const int64_t s2[2] = {2, 2};
    nn_node_set_ints(g, node, "strides", s2, 2);
}

/* x [1,3,639,481] -> [5x5 stride 2 first layer 3->24 relu6 -> 1x1 24->40 -> dw 3x3
 * stride 2 relu -> 1x1 40->56 leaky -> dw 3x3, MaxPool 2x2 -> 1x1 56->24] -> dense 3x3
 * -> y: strided members, 8-lane channel tails, odd sizes at every stride (the value
 * after the pool just over 1 MiB, so the pipeline runs to the end). */
static nn_graph *g_chain_strided(void)
{
    int x, node;
    nn_graph *g = image_graph(1, 639, 481, &x);
    if (!g) return NULL;
    uint64_t seed = 43;
    int t = chain_conv(g, x, 3, 24, 0, 5, 2, NN_ACT_RELU6, &seed, &node);
    stride2(g, node);
    t = chain_conv(g, t, 24, 40, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 40, 40, 1, 3, 1, NN_ACT_RELU, &seed, &node);
    stride2(g, node);
    t = chain_conv(g, t, 40, 56, 0, 1, 0, NN_ACT_LEAKY_RELU, &seed, NULL);
    t = chain_conv(g, t, 56, 56, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, chain_max_pool(g, t), 56, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    int y = chain_conv(g, t, 24, 4, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    return g;
}

/* x [1,3,111,113] -> [3x3 stride 2 first layer 3->64 relu -> dw 3x3 leaky -> 1x1
 * 64->128 relu6 -> dw 3x3 stride 2] -> 1x1 128->64 -> y: MobileFaceNet's first block,
 * a 1x1 member into a multiple of 64 outputs (64 at a time; the value after it over
 * 1 MiB, the one after the strided layer not, so the pipeline ends there). */
static nn_graph *g_chain_wide(void)
{
    int x, node;
    nn_graph *g = image_graph(1, 111, 113, &x);
    if (!g) return NULL;
    uint64_t seed = 47;
    int t = chain_conv(g, x, 3, 64, 0, 3, 1, NN_ACT_RELU, &seed, &node);
    stride2(g, node);
    t = chain_conv(g, t, 64, 64, 1, 3, 1, NN_ACT_LEAKY_RELU, &seed, NULL);
    t = chain_conv(g, t, 64, 128, 0, 1, 0, NN_ACT_RELU6, &seed, NULL);
    t = chain_conv(g, t, 128, 128, 1, 3, 1, NN_ACT_NONE, &seed, &node);
    stride2(g, node);
    int y = chain_conv(g, t, 128, 64, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    return g;
}

/* build()'s graph on 1 and 2 threads against ref, with `members` nodes in pipelines. */
static void check_band_graph(nn_graph *(*build)(void), const char *label, int members)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    size_t nw = 0, n = 0;
    ffu_json *d = NULL;
    float *want = run_graph(build(), &o, NULL, 0, &nw, &d);
    ffu_json_free(d);
    CHECK(want != NULL && nw > 0);
    for (int threads = 1; threads <= 2 && want; threads++) {
        o.backend = "cpu";
        o.threads = threads;
        float *got = run_graph(build(), &o, NULL, 0, &n, &d);
        if (d && !desc_on_cpu(d)) { /* no oneDNN in this build */
            ffu_json_free(d), free(got);
            continue;
        }
        double worst = n == nw ? worst_error(want, nw, got, n) : 1;
        int bands = desc_int(d, "band_nodes");
        printf("%s band pipeline, %d threads: %d nodes in it, worst %.3g\n", label, threads, bands,
               worst);
        CHECK(worst < 1e-4);
        CHECK_EQ_INT(bands, ffu_cpu_features() & FFU_CPU_AVX512F ? members : 0);
        ffu_json_free(d), free(got);
    }
    free(want);
}

/* The strided graph in one pipeline of six; MobileFaceNet's block in one of four. */
static void test_band_pipeline_strided(void)
{
    check_band_graph(g_chain_strided, "strided", 6);
    check_band_graph(g_chain_wide, "64 -> 128", 4);
}

typedef struct side_run {
    float *y[2];
    size_t n[2];
    int bands[2];
} side_run;

static void side_job(void *arg, int k)
{
    side_run *r = arg;
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "cpu";
    o.threads = 1;
    ffu_json *d = NULL;
    r->y[k] = run_graph(g_chain_wide(), &o, NULL, 0, &r->n[k], &d);
    r->bands[k] = d && desc_on_cpu(d) ? desc_int(d, "band_nodes") : -1;
    ffu_json_free(d);
}

/* One-thread sessions with a pipeline run side by side (as an ensemble's members) give
 * what one of them gives alone: the second runs as thread 1 of the side-by-side team
 * and must still compute every row (it once returned at once, leaving its output as
 * it was). */
static void test_band_pipeline_side_by_side(void)
{
    side_run alone = {0}, side = {0};
    side_job(&alone, 0);
    if (alone.bands[0] < 0) { /* no oneDNN in this build */
        free(alone.y[0]);
        TEST_SKIP("cpu backend without oneDNN");
    }
    ffu_nn_run_side_by_side(2, side_job, &side);
    for (int k = 0; k < 2; k++) {
        CHECK(alone.y[0] && side.y[k] && side.n[k] == alone.n[0]);
        CHECK(side.y[k] && alone.y[0] &&
              !memcmp(side.y[k], alone.y[0], sizeof(float) * alone.n[0]));
        CHECK_EQ_INT(side.bands[k], alone.bands[0]);
        free(side.y[k]);
    }
    printf("side by side: %d nodes in pipelines each, outputs equal\n", alone.bands[0]);
    free(alone.y[0]);
}

/* t + r, then ReLU: a residual Add the plan fuses into the Conv that produced t. */
static int chain_add_relu(nn_graph *g, int t, int r)
{
    int in[2] = {t, r};
    int s = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    int y = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_ADD, "", in, 2, &s, 1);
    nn_graph_add_node(g, NN_OP_RELU, "", &s, 1, &y, 1);
    return y;
}

/* x [1,3,H,W] -> [first layer 3x3 3->24 relu -> (dw 3x3 -> 1x1 24->24, + a branch's
 * value) -> (dw 5x5 -> 1x1, + the block's input b1) = b2 -> (1x1 -> dw 3x3 -> 1x1 ->
 * dw 3x3 -> 1x1, + b2) -> dw 3x3 -> 1x1 24->16] -> dense 3x3 -> y, the branch a dense
 * 3x3 3->24 of x: residuals read from a buffer and from rings two and five stages back
 * (BlazeFace's blocks, and one whose ring must hold more rows than the 1x1 after it
 * reads: one row fewer fails this test, checked). variant 1: a depthwise Conv after the
 * last one also adds b2 (a residual no member takes), so that value leaves the
 * pipeline: one pipeline ends at b2 and the next reads it from its buffer. variant 2: a
 * second output, a 1x1 Conv of the branch adding q (the long block's first 1x1), then
 * a depthwise and a dense Conv: q's adder, a 1x1 that could be a member, is in no
 * pipeline with q, so q leaves it; then so does b2 (its adder now in the next
 * pipeline): pipelines of five (to b2) and six (after q). */
static nn_graph *g_chain_res(int64_t N, int64_t H, int64_t W, int variant)
{
    int x;
    nn_graph *g = image_graph(N, H, W, &x);
    if (!g) return NULL;
    uint64_t seed = 47;
    int branch = chain_conv(g, x, 3, 24, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    int t = chain_conv(g, x, 3, 24, 0, 3, 1, NN_ACT_RELU, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    int b1 = t = chain_add_relu(g, t, branch);
    t = chain_conv(g, t, 24, 24, 1, 5, 2, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    int b2 = t = chain_add_relu(g, t, b1);
    int q = t = chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_RELU, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    t = chain_add_relu(g, t, b2);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    if (variant == 1) {
        int u = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
        t = chain_add_relu(g, u, b2);
    }
    t = chain_conv(g, t, 24, 16, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    int y = chain_conv(g, t, 16, 8, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    if (variant == 2) { /* a 1x1 of the branch adds q, then a depthwise and a dense Conv */
        int u = chain_conv(g, branch, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
        u = chain_add_relu(g, u, q);
        u = chain_conv(g, u, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
        nn_graph_mark_output(g, chain_conv(g, u, 24, 4, 0, 3, 1, NN_ACT_NONE, &seed, NULL));
    }
    return g;
}

/* Residuals in pipelines: the graph above in one pipeline of twelve on 1 and 2 threads,
 * also with a batch of two (each image's residual from its own buffer), and in variants
 * 1 and 2 in two of five and six, against ref. */
static void test_band_pipeline_residual(void)
{
    /* variant, batch, members, pipelines */
    static const int cases[4][4] = {{0, 1, 12, 1}, {1, 1, 11, 2}, {0, 2, 12, 1}, {2, 1, 11, 2}};
    for (int v = 0; v < 4; v++) {
        const int variant = cases[v][0];
        const int64_t N = cases[v][1];
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = "ref";
        size_t nw = 0, n = 0;
        ffu_json *d = NULL;
        float *want = run_graph(g_chain_res(N, 163, 97, variant), &o, NULL, 0, &nw, &d);
        ffu_json_free(d);
        CHECK(want != NULL && nw > 0);
        for (int threads = 1; threads <= 2 && want; threads++) {
            o.backend = "cpu";
            o.threads = threads;
            float *got = run_graph(g_chain_res(N, 163, 97, variant), &o, NULL, 0, &n, &d);
            if (d && !desc_on_cpu(d)) { /* no oneDNN in this build */
                ffu_json_free(d), free(got);
                continue;
            }
            double worst = n == nw ? worst_error(want, nw, got, n) : 1;
            int bands = desc_int(d, "band_nodes"), pipes = desc_impls(d, "band 1/");
            int planar = desc_impls(d, " planar ");
            printf("residual band pipeline variant %d, batch %d, %d threads: %d nodes in %d, "
                   "%d planar, worst %.3g\n", variant, (int)N, threads, bands, pipes, planar,
                   worst);
            int avx512 = (ffu_cpu_features() & FFU_CPU_AVX512F) != 0;
            CHECK(worst < 1e-4);
            CHECK_EQ_INT(bands, avx512 ? cases[v][2] : 0);
            CHECK_EQ_INT(pipes, avx512 ? cases[v][3] : 0);
            CHECK_EQ_INT(planar, 0); /* 97 columns: not a multiple of 16 */
            ffu_json_free(d), free(got);
        }
        free(want);
    }
}

/* A random chain of pipeline-shaped layers from seed: x [1,3,112,96] -> a first layer
 * 3x3 into C channels, then 6-13 steps, each a depthwise Conv (3x3 or 5x5; now and then
 * stride 2 or with a 2x2 MaxPool the plan fuses, at most twice), a 1x1 Conv into
 * 16-64 channels, or a 1x1 Conv whose output gets a residual Add of a random earlier
 * value of its shape (then ReLU); now and then a value is also a graph output. Ends in
 * a dense 3x3 Conv. What runs where is up to the planner: the test is that the numbers
 * do not depend on it. */
static nn_graph *g_chain_random(uint64_t seed)
{
    static const int64_t widths[6] = {16, 24, 32, 40, 48, 64};
    enum { MAXV = 32 };
    int x, node;
    nn_graph *g = image_graph(1, 112, 96, &x);
    if (!g) return NULL;
    /* values so far with their channels and size (for residuals) */
    int val[MAXV], nv = 0, shrinks = 0;
    int64_t vc[MAXV], vh[MAXV];
    int64_t C = widths[test_rand_u64(&seed) % 6], H = 112;
    int t = chain_conv(g, x, 3, C, 0, 3, 1, NN_ACT_RELU, &seed, NULL);
    val[nv] = t, vc[nv] = C, vh[nv++] = H;
    int steps = 6 + (int)(test_rand_u64(&seed) % 8);
    for (int i = 0; i < steps && nv < MAXV; i++) {
        uint64_t r = test_rand_u64(&seed) % 10;
        if (r < 4) { /* depthwise */
            int k5 = test_rand_u64(&seed) % 4 == 0, shrink = shrinks < 2 && r == 0;
            int pool = shrink && test_rand_u64(&seed) % 2;
            t = chain_conv(g, t, C, C, 1, k5 ? 5 : 3, k5 ? 2 : 1,
                           pool ? NN_ACT_RELU : NN_ACT_NONE, &seed, &node);
            if (shrink && !pool) {
                int64_t s2[2] = {2, 2};
                nn_node_set_ints(g, node, "strides", s2, 2);
            }
            if (pool) t = chain_max_pool(g, t);
            if (shrink) H = (H + (pool ? 0 : 1)) / 2, shrinks++;
        } else { /* 1x1, with a residual of an earlier value of its shape when r >= 7 */
            int64_t M = widths[test_rand_u64(&seed) % 6];
            int res = -1;
            if (r >= 7)
                for (int k = 0, tries = 0; tries < 8 && res < 0; tries++) {
                    k = (int)(test_rand_u64(&seed) % (uint64_t)nv);
                    if (vh[k] == H && val[k] != t) res = k;
                }
            if (res >= 0) M = vc[res];
            int u = chain_conv(g, t, C, M, 0, 1, 0, res >= 0 ? NN_ACT_NONE : NN_ACT_LEAKY_RELU,
                               &seed, NULL);
            t = res >= 0 ? chain_add_relu(g, u, val[res]) : u;
            C = M;
        }
        val[nv] = t, vc[nv] = C, vh[nv++] = H;
        if (test_rand_u64(&seed) % 12 == 0) nn_graph_mark_output(g, t);
    }
    int y = chain_conv(g, t, C, 8, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    return g;
}

/* Random chains (g_chain_random) compute on cpu, on 1 and 2 threads, what ref computes,
 * to 1e-4; across the set, pipelines form (with residuals among their members). */
static void test_band_pipeline_random(void)
{
    int total = 0, ran = 0, planar = 0;
    for (uint64_t k = 0; k < 12; k++) {
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = "ref";
        size_t nw = 0, n = 0;
        ffu_json *d = NULL;
        float *want = run_graph(g_chain_random(1000 + k), &o, NULL, 0, &nw, &d);
        ffu_json_free(d);
        CHECK(want != NULL && nw > 0);
        for (int threads = 1; threads <= 2 && want; threads++) {
            o.backend = "cpu";
            o.threads = threads;
            float *got = run_graph(g_chain_random(1000 + k), &o, NULL, 0, &n, &d);
            if (d && !desc_on_cpu(d)) { /* no oneDNN in this build */
                ffu_json_free(d), free(got);
                continue;
            }
            double worst = n == nw ? worst_error(want, nw, got, n) : 1;
            int bands = desc_int(d, "band_nodes");
            planar += desc_impls(d, " planar ");
            if (worst >= 1e-4)
                printf("random chain %d, %d threads: %d nodes in pipelines, worst %.3g\n",
                       (int)k, threads, bands, worst);
            CHECK(worst < 1e-4);
            total += bands, ran++;
            ffu_json_free(d), free(got);
        }
        free(want);
    }
    printf("random chains: %d runs, %d convolutions in pipelines in all, %d on planar rows\n",
           ran, total, planar);
    if (ran && (ffu_cpu_features() & FFU_CPU_AVX512F)) CHECK(total > 0 && planar > 0);
}

/* x [N,3,H,W] -> [first layer 3x3 3->24 relu -> dw 3x3 -> 1x1 24->24 = a -> dw 3x3 leaky
 * -> dw 5x5 -> (1x1 24->24, + a) -> dw 3x3 relu6 -> 1x1 24->40 prelu -> dw 3x3 -> 1x1
 * 40->24] -> dense 3x3 -> y: with W a multiple of 16, the 24- and 40-channel values
 * between 1x1 and 3x3 depthwise members pass in planar rows (cpu_planar_avx512.c), the
 * others channels-last, so rows are converted on the way in (the first depthwise
 * layer's output), for a residual (a, planar, added by a 1x1 reading the 5x5 layer's
 * channels-last rows) and on the way out (the last 1x1); 40 channels split 12 + 12 + 8
 * + 8 in the 1x1 kernel and 16 + 16 + 8 in the conversions. Then BlazeFace's stride-2
 * block, whose residual is a 2x2 max pool of channels-last tensors (our pool2 kernel). */
static nn_graph *g_chain_planar(int64_t N, int64_t H, int64_t W)
{
    int x;
    nn_graph *g = image_graph(N, H, W, &x);
    if (!g) return NULL;
    uint64_t seed = 53;
    int t = chain_conv(g, x, 3, 24, 0, 3, 1, NN_ACT_RELU, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    int a = t = chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_LEAKY_RELU, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 1, 5, 2, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    t = chain_add_relu(g, t, a);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_CLIP, &seed, NULL);
    int node;
    t = chain_conv(g, t, 24, 40, 0, 1, 0, NN_ACT_NONE, &seed, &node);
    /* PReLU with a slope per channel */
    float sl[40];
    for (int i = 0; i < 40; i++) sl[i] = 0.05f * (float)(i % 7) - 0.1f;
    nn_shape ss = {.rank = 3, .d = {40, 1, 1}};
    int st = nn_graph_add_const(g, "", FFU_DTYPE_F32, &ss, sl, sizeof sl, NN_COPY);
    int pin[2] = {t, st}, pt = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    nn_graph_add_node(g, NN_OP_PRELU, "", pin, 2, &pt, 1);
    t = chain_conv(g, pt, 40, 40, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_conv(g, t, 40, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    /* BlazeFace's stride-2 block: dw 3x3 stride 2 -> 1x1, + the 2x2 max pool of its input */
    int u = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, &node);
    int64_t s2[2] = {2, 2}, p0101[4] = {0, 0, 1, 1};
    nn_node_set_ints(g, node, "strides", s2, 2);
    nn_node_set_ints(g, node, "pads", p0101, 4);
    u = chain_conv(g, u, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    t = chain_add_relu(g, u, chain_max_pool(g, t));
    int y = chain_conv(g, t, 24, 8, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    return g;
}

/* make(args) on the ref backend: its outputs (*nw floats), or NULL. */
static float *ref_outputs(nn_graph *(*make)(const int64_t *), const int64_t *args, size_t *nw)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    ffu_json *d = NULL;
    float *want = run_graph(make(args), &o, NULL, 0, nw, &d);
    ffu_json_free(d);
    return want;
}

/* make(args) on cpu at `threads` against want (nw floats): *worst its worst error and
 * *d the session's description; 1 when the build has no oneDNN (nothing to check, *d
 * NULL), -1 when the session did not run, else 0. */
static int cpu_against(nn_graph *(*make)(const int64_t *), const int64_t *args, int threads,
                       const float *want, size_t nw, double *worst, ffu_json **d)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "cpu";
    o.threads = threads;
    size_t n = 0;
    float *got = run_graph(make(args), &o, NULL, 0, &n, d);
    *worst = n == nw ? worst_error(want, nw, got, n) : 1;
    free(got);
    if (!*d) return -1;
    if (desc_on_cpu(*d)) return 0;
    ffu_json_free(*d), *d = NULL;
    return 1;
}

/* Runs the graph make(args) builds on ref, then on cpu with one and two threads: the
 * outputs agree to 1e-4, and with AVX-512 `bands` nodes run in pipelines, `planar` of
 * them on planar rows and `nimpl` have an impl containing `impl` (none without it). */
static void pipeline_vs_ref(nn_graph *(*make)(const int64_t *), const int64_t *args,
                            const char *label, int bands, int planar, const char *impl, int nimpl)
{
    size_t nw = 0;
    float *want = ref_outputs(make, args, &nw);
    CHECK(want != NULL && nw > 0);
    for (int threads = 1; threads <= 2 && want; threads++) {
        ffu_json *d = NULL;
        double worst;
        int r = cpu_against(make, args, threads, want, nw, &worst, &d);
        CHECK(r >= 0);
        if (r) continue; /* no oneDNN in this build */
        int nb = desc_int(d, "band_nodes"), np = desc_impls(d, " planar ");
        int ni = desc_impls(d, impl);
        printf("%s, %d threads: %d nodes in pipelines, %d planar, %d %s, worst %.3g\n", label,
               threads, nb, np, ni, impl, worst);
        int avx512 = (ffu_cpu_features() & FFU_CPU_AVX512F) != 0;
        CHECK(worst < 1e-4);
        CHECK_EQ_INT(nb, avx512 ? bands : 0);
        CHECK_EQ_INT(np, avx512 ? planar : 0);
        CHECK_EQ_INT(ni, avx512 ? nimpl : 0);
        ffu_json_free(d);
    }
    free(want);
}

static nn_graph *chain_planar_of(const int64_t *a) { return g_chain_planar(a[0], a[1], a[2]); }

/* Planar rows in a pipeline compute what ref computes, on one and two threads, for a
 * batch of two and widths of 128, 48 and 16 columns (one vector a plane): ten members,
 * eight of them reading or writing planar rows (all but the first layer and the 5x5
 * layer, which read and write channels-last); with 40 columns, not a multiple of 16,
 * nothing is planar, and values under 1 MiB are then not worth a pipeline. */
static void test_band_pipeline_planar(void)
{
    /* N, H, W, members, planar members */
    static const int64_t cases[4][5] = {{1, 67, 128, 10, 8}, {2, 40, 48, 10, 8},
                                        {1, 33, 16, 10, 8}, {1, 61, 40, 0, 0}};
    for (int v = 0; v < 4; v++) {
        char label[96];
        snprintf(label, sizeof label, "planar band pipeline %lldx%lldx%lld",
                 (long long)cases[v][0], (long long)cases[v][1], (long long)cases[v][2]);
        pipeline_vs_ref(chain_planar_of, cases[v], label, (int)cases[v][3], (int)cases[v][4],
                        "facefuse:pool2", 1);
    }
}

/* The planar 1x1 kernel's wide groups (up to 24 outputs on one vector of pixels, chosen
 * on cores that run a 512-bit FMA as two halves; FFU_CPU_FMA512_HALVES forces either way)
 * make every sum in the same order as its groups of twelve: the pipeline of
 * test_band_pipeline_planar (24 -> 24, 24 -> 40 and 40 -> 40 -> 24 members on planar rows)
 * gives the same bytes both ways, and what ref gives. */
static void test_planar_wide_groups(void)
{
    static const int64_t args[3] = {1, 67, 128};
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    size_t nw = 0, n[2] = {0, 0};
    ffu_json *d = NULL;
    float *want = run_graph(chain_planar_of(args), &o, NULL, 0, &nw, &d);
    ffu_json_free(d);
    float *got[2] = {NULL, NULL};
    o.backend = "cpu";
    o.threads = 1;
    int planar = 0;
    for (int wide = 0; wide < 2; wide++) {
        setenv("FFU_CPU_FMA512_HALVES", wide ? "1" : "0", 1);
        got[wide] = run_graph(chain_planar_of(args), &o, NULL, 0, &n[wide], &d);
        planar = d ? desc_impls(d, " planar ") : 0;
        ffu_json_free(d);
    }
    unsetenv("FFU_CPU_FMA512_HALVES");
    CHECK(want && got[0] && got[1] && n[0] == nw && n[1] == nw);
    if (want && got[0] && got[1] && n[0] == nw && n[1] == nw) {
        double w0 = worst_error(want, nw, got[0], nw), w1 = worst_error(want, nw, got[1], nw);
        printf("planar 1x1 groups of 12 and wide: %d planar members, worst %.3g and %.3g\n", planar,
               w0, w1);
        CHECK(w0 < 1e-4 && w1 < 1e-4);
        CHECK(memcmp(got[0], got[1], nw * sizeof(float)) == 0);
        if (ffu_cpu_features() & FFU_CPU_AVX512F) CHECK_EQ_INT(planar, 8);
    }
    free(want), free(got[0]), free(got[1]);
}

/* A graph whose input x is an NHWC image [N,H,W,3], transposed to NCHW in *t (stored
 * channels-last: the image as it came, as TF.js models start). */
static nn_graph *nhwc_image_graph(int64_t N, int64_t H, int64_t W, int *t)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {N, H, W, 3}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    *t = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    int tr = nn_graph_add_node(g, NN_OP_TRANSPOSE, "", &x, 1, t, 1);
    int64_t perm[4] = {0, 3, 1, 2};
    nn_node_set_ints(g, tr, "perm", perm, 4);
    return g;
}

/* x [N,H,W,3] -> Transpose to NCHW (the image as it came, channels-last) -> [first layer
 * 3 -> K relu (5x5 stride 2 pads 1,1,2,2 as BlazeFace's, or 3x3 stride 1 pads 1) -> dw
 * 3x3 -> (1x1 K->K, + the first layer's output) relu -> dw 3x3 -> 1x1 K->8] -> y: a
 * planar head (cpu_planar_avx512.c) writing planar rows that the depthwise layer and
 * the residual read. */
static nn_graph *g_head_planar(int64_t N, int64_t H, int64_t W, int64_t K, int stride)
{
    int t, node;
    nn_graph *g = nhwc_image_graph(N, H, W, &t);
    if (!g) return NULL;
    uint64_t seed = 61;
    int a = t = chain_conv(g, t, 3, K, 0, stride == 2 ? 5 : 3, 1, NN_ACT_RELU, &seed, &node);
    if (stride == 2) {
        int64_t s2[2] = {2, 2}, pads[4] = {1, 1, 2, 2};
        nn_node_set_ints(g, node, "strides", s2, 2);
        nn_node_set_ints(g, node, "pads", pads, 4);
    }
    t = chain_conv(g, t, K, K, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_add_relu(g, chain_conv(g, t, K, K, 0, 1, 0, NN_ACT_NONE, &seed, NULL), a);
    t = chain_conv(g, t, K, K, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    int y = chain_conv(g, t, K, 8, 0, 1, 0, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    return g;
}

static nn_graph *head_planar_of(const int64_t *a)
{
    return g_head_planar(a[0], a[1], a[2], a[3], (int)a[4]);
}

/* A first layer reading an NHWC image heads a pipeline of planar rows and computes what
 * ref computes, on one and two threads: stride 2 into 24 (BlazeFace's; 128 and 32
 * columns, a batch of two) and stride 1 into 20; the pipeline is the first four layers
 * (the last 1x1, into 8, reads a value under 1 MiB that has no planar reader: not worth
 * a member), all reading or writing planar rows, the last depthwise layer converting its
 * rows to channels-last on the way out. */
static void test_band_pipeline_planar_head(void)
{
    /* N, H, W, K, stride */
    static const int64_t cases[3][5] = {{1, 61, 256, 24, 2}, {2, 37, 64, 24, 2},
                                        {1, 29, 48, 20, 1}};
    for (int v = 0; v < 3; v++) {
        char label[96];
        snprintf(label, sizeof label, "planar head %lldx%lldx%lld into %lld, stride %lld",
                 (long long)cases[v][0], (long long)cases[v][1], (long long)cases[v][2],
                 (long long)cases[v][3], (long long)cases[v][4]);
        pipeline_vs_ref(head_planar_of, cases[v], label, 4, 4,
                        "band 1/4 planar facefuse:cf_avx512", 1);
    }
}

/* ---- forks: a stride-2 block's max pool in the pipeline ------------------------------------ */

/* x [N,H,W,3] NHWC -> [first layer 5x5 stride 2 into C (BlazeFace's) -> two blocks (dw 3x3
 * -> 1x1, + the block's input) -> a stride-2 block: dw 3x3 stride 2 (pads 0,0,1,1 as
 * TF's SAME, or 1,1,1,1) -> 1x1 + MaxPool 2x2 of the block's input -> two blocks] ->
 * dense 3x3 into 8 -> y: BlazeFace's stride-2 boundary, where the value before it has
 * two readers, the depthwise layer and the pool. */
static nn_graph *g_fork(int64_t N, int64_t H, int64_t W, int64_t C, int same_pads)
{
    int t, node;
    nn_graph *g = nhwc_image_graph(N, H, W, &t);
    if (!g) return NULL;
    uint64_t seed = 97;
    t = chain_conv(g, t, 3, C, 0, 5, 1, NN_ACT_RELU, &seed, &node);
    int64_t s2[2] = {2, 2}, head_pads[4] = {1, 1, 2, 2}, tf[4] = {0, 0, 1, 1};
    nn_node_set_ints(g, node, "strides", s2, 2);
    nn_node_set_ints(g, node, "pads", head_pads, 4);
    for (int b = 0; b < 5; b++) {
        int in = t;
        if (b == 2) {
            t = chain_conv(g, t, C, C, 1, 3, 1, NN_ACT_NONE, &seed, &node);
            nn_node_set_ints(g, node, "strides", s2, 2);
            if (same_pads) nn_node_set_ints(g, node, "pads", tf, 4);
            in = chain_max_pool(g, in);
        } else {
            t = chain_conv(g, t, C, C, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
        }
        t = chain_add_relu(g, chain_conv(g, t, C, C, 0, 1, 0, NN_ACT_NONE, &seed, NULL), in);
    }
    nn_graph_mark_output(g, chain_conv(g, t, C, 8, 0, 3, 1, NN_ACT_NONE, &seed, NULL));
    return g;
}

static nn_graph *fork_of(const int64_t *a) { return g_fork(a[0], a[1], a[2], a[3], (int)a[4]); }

/* On one thread the pool joins the pipeline beside the stride-2 depthwise layer, which
 * then reads the value before it from a ring instead of memory: one pipeline of 12 (the
 * head, 4 + 2 + 4 layers and the pool, 7th) where two of 5 and 6 were, and ref's
 * numbers; with TF's pads and symmetric ones, 24 channels in planar rows (stride-2 and
 * pool rows split into even and odd columns) and 32 channels-last (whose first layer
 * runs alone: 11 and 10), a batch of two. On
 * two threads strips would compute the rows above the second strip's start through the
 * whole longer pipeline, so there the pool stays out and there are two pipelines.
 * (A stride-2 tap off by a column either side, a pool missing its last pixel, or the
 * pool's rows never pulled fails this test; checked.) */
static void test_band_pipeline_fork(void)
{
    /* N, H, W, C, TF pads */
    static const int64_t cases[3][5] = {
        {1, 144, 256, 24, 1}, {2, 80, 128, 24, 0}, {1, 260, 512, 32, 0}};
    int avx512 = (ffu_cpu_features() & FFU_CPU_AVX512F) != 0;
    for (int v = 0; v < 3; v++) {
        const int64_t *a = cases[v];
        size_t nw = 0;
        float *want = ref_outputs(fork_of, a, &nw);
        CHECK(want != NULL && nw > 0);
        for (int threads = 1; threads <= 2 && want; threads++) {
            ffu_json *d = NULL;
            double worst;
            int r = cpu_against(fork_of, a, threads, want, nw, &worst, &d);
            CHECK(r >= 0);
            if (r) continue; /* no oneDNN in this build */
            int bands = desc_int(d, "band_nodes"), pipes = desc_impls(d, "band 1/");
            /* 24 channels: the planar head is a member; 32: the first layer runs alone */
            int head = a[3] == 24, members = 11 + head;
            char at[32];
            snprintf(at, sizeof at, "band %d/%d ", 6 + head, members);
            int planar = desc_impls(d, " planar "), pool = desc_impls(d, at);
            printf("fork %lldx%lldx%lld, %lld channels, %s pads, %d threads: %d nodes in %d "
                   "pipelines, %d planar, pool %s, worst %.3g\n",
                   (long long)a[0], (long long)a[1], (long long)a[2], (long long)a[3],
                   a[4] ? "TF" : "symmetric", threads, bands, pipes, planar, pool ? "in" : "out",
                   worst);
            CHECK(worst < 1e-4);
            int joined = avx512 && threads == 1;
            CHECK_EQ_INT(bands, avx512 ? members - !joined : 0);
            CHECK_EQ_INT(pipes, avx512 ? 2 - joined : 0);
            CHECK_EQ_INT(pool, joined);
            CHECK_EQ_INT(desc_impls(d, "pool2"), 1);
            CHECK_EQ_INT(planar, avx512 && head ? members - !joined : 0);
            ffu_json_free(d);
        }
        free(want);
    }
}

/* ---- rows of one colour: copied, not computed -------------------------------------------- */

/* An image [N,3,H,W] (nhwc: [N,H,W,3]) of random values, except that rows [0, H / 5),
 * rows [H / 2, H / 2 + 9) and rows [H - H / 6, H) are each one row repeated: the bands
 * of one colour a letterboxed frame has, and one inside. */
static float *banded_image(int64_t N, int64_t H, int64_t W, int nhwc, size_t *bytes)
{
    size_t n = (size_t)(N * 3 * H * W);
    float *x = malloc(sizeof(float) * n), *row = malloc(sizeof(float) * (size_t)(4 * 3 * W));
    if (!x || !row) {
        free(x), free(row);
        return NULL;
    }
    uint64_t seed = 83;
    for (int64_t b = 0; b < N; b++) {
        for (int64_t i = 0; i < 4 * 3 * W; i++)
            row[i] = 2.0f * test_rand_f(&seed) - 1.0f;
        for (int64_t h = 0; h < H; h++) {
            int band = h < H / 5 ? 1 : h >= H / 2 && h < H / 2 + 9 ? 2 : h >= H - H / 6 ? 3 : 0;
            for (int64_t c = 0; c < 3; c++)
                for (int64_t w = 0; w < W; w++) {
                    float v = band ? row[(band * 3 + c) * W + w] : 2.0f * test_rand_f(&seed) - 1.0f;
                    x[nhwc ? ((b * H + h) * W + w) * 3 + c : ((b * 3 + c) * H + h) * W + w] = v;
                }
        }
    }
    free(row);
    *bytes = sizeof(float) * n;
    return x;
}

/* x [N,3,H,W] -> [first layer 3x3 3->24 relu -> dw 3x3 -> (1x1, + r) -> dw 3x3] ->
 * dense 3x3 -> y, r = dense 5x5 (dense 3x3 x): a residual from a buffer that reads more
 * rows of x than the member adding it does. */
static nn_graph *g_res_wide(int64_t N, int64_t H, int64_t W)
{
    int x;
    nn_graph *g = image_graph(N, H, W, &x);
    if (!g) return NULL;
    uint64_t seed = 89;
    int r = chain_conv(g, x, 3, 24, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    r = chain_conv(g, r, 24, 24, 0, 5, 2, NN_ACT_NONE, &seed, NULL);
    int t = chain_conv(g, x, 3, 24, 0, 3, 1, NN_ACT_RELU, &seed, NULL);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    t = chain_add_relu(g, chain_conv(g, t, 24, 24, 0, 1, 0, NN_ACT_NONE, &seed, NULL), r);
    t = chain_conv(g, t, 24, 24, 1, 3, 1, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, chain_conv(g, t, 24, 8, 0, 3, 1, NN_ACT_NONE, &seed, NULL));
    return g;
}

static nn_graph *same_rows_graph(const int64_t *a)
{
    return a[0] == 0   ? g_head_planar(a[1], a[2], a[3], 24, 2)
           : a[0] == 1 ? g_chain_res(a[1], a[2], a[3], 0)
           : a[0] == 2 ? g_chain(a[1], a[2], a[3], 0)
           : a[0] == 3 ? g_chain_planar(a[1], a[2], a[3])
           : a[0] == 4 ? g_res_wide(a[1], a[2], a[3])
                       : g_fork(a[1], a[2], a[3], 24, 1);
}

/* In an image with bands of one colour, a pipeline copies each row whose inputs are one
 * row repeated from the row above instead of computing it (cpu_chain.c same_as_above),
 * and the numbers are still ref's, on one and two threads (the second strip's first rows
 * are computed): a planar head at stride 2 (BlazeFace's first layers), residuals from a
 * buffer and from rings, a fused pool and a 5x5 layer, planar rows, a residual whose rows
 * differ where the adding member's inputs do not, a fork (a stride-2 block's pool in
 * the pipeline, on one thread); batches of two.
 * With random images no row is copied. (Copying from two rows above, from the slot the
 * row is about to take, or not comparing the residual's rows fails this test; checked.) */
static void test_band_pipeline_same_rows(void)
{
    /* graph (same_rows_graph), N, H, W */
    static const int64_t cases[7][4] = {{0, 1, 61, 256}, {0, 2, 37, 64},  {1, 2, 163, 97},
                                        {2, 1, 131, 83}, {3, 1, 67, 128}, {4, 1, 163, 97},
                                        {5, 1, 144, 256}};
    int avx512 = (ffu_cpu_features() & FFU_CPU_AVX512F) != 0;
    for (int v = 0; v < 7; v++) {
        const int64_t *a = cases[v];
        size_t xb = 0, nw = 0, n = 0;
        float *x = banded_image(a[1], a[2], a[3], a[0] == 0 || a[0] == 5, &xb);
        CHECK(x != NULL);
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = "ref";
        ffu_json *d = NULL;
        float *want = x ? run_graph(same_rows_graph(a), &o, x, xb, &nw, &d) : NULL;
        ffu_json_free(d);
        CHECK(want != NULL && nw > 0);
        for (int threads = 1; threads <= 2 && want; threads++) {
            o.backend = "cpu";
            o.threads = threads;
            uint64_t r0 = nn_cpu_rows_reused();
            float *got = run_graph(same_rows_graph(a), &o, x, xb, &n, &d);
            uint64_t reused = nn_cpu_rows_reused() - r0;
            if (d && !desc_on_cpu(d)) { /* no oneDNN in this build */
                ffu_json_free(d), free(got);
                continue;
            }
            double worst = n == nw ? worst_error(want, nw, got, n) : 1;
            int bands = desc_int(d, "band_nodes");
            ffu_json_free(d), free(got);
            r0 = nn_cpu_rows_reused();
            got = run_graph(same_rows_graph(a), &o, NULL, 0, &n, &d); /* random rows */
            uint64_t random_reused = nn_cpu_rows_reused() - r0;
            printf("rows of one colour, graph %d, %lldx%lldx%lld, %d threads: %d nodes in "
                   "pipelines, %llu rows copied (%llu with random rows), worst %.3g\n",
                   (int)a[0], (long long)a[1], (long long)a[2], (long long)a[3], threads, bands,
                   (unsigned long long)reused, (unsigned long long)random_reused, worst);
            CHECK(worst < 1e-4);
            CHECK(avx512 ? bands > 0 && reused > 0 : reused == 0);
            CHECK(random_reused == 0);
            ffu_json_free(d), free(got);
        }
        free(want), free(x);
    }
}

/* ---- our first-layer kernel on an NHWC image (TF.js models) ------------------------------- */

static int cf_nhwc_variant;

/* x [N,H,W,3] -> Transpose to NCHW (stored channels-last: the image as it came) -> Conv
 * 3 -> M -> y. Variant 0: 3x3 valid into 64 + ReLU, then a 2x2 MaxPool the plan fuses
 * (the liveness model's layer: ours by default); 1: 5x5 stride 2 pads 1,1,2,2 into 24,
 * leaky (BlazeFace's, forced with _cpu_cf); 2: 3x3 pads 1 into 32 with a batch of 2,
 * forced. */
static nn_graph *g_cf_nhwc(void)
{
    static const int64_t dims[4][3] = {{1, 45, 37}, {1, 39, 51}, {2, 23, 41}, {1, 26, 41}};
    const int v = cf_nhwc_variant;
    int t, node;
    nn_graph *g = nhwc_image_graph(dims[v][0], dims[v][1], dims[v][2], &t);
    if (!g) return NULL;
    uint64_t seed = 53;
    int y;
    if (v == 0) {
        y = chain_max_pool(g, chain_conv(g, t, 3, 64, 0, 3, 0, NN_ACT_RELU, &seed, NULL));
    } else if (v == 1) {
        y = chain_conv(g, t, 3, 24, 0, 5, 1, NN_ACT_LEAKY_RELU, &seed, &node);
        int64_t s2[2] = {2, 2}, pads[4] = {1, 1, 2, 2};
        nn_node_set_ints(g, node, "strides", s2, 2);
        nn_node_set_ints(g, node, "pads", pads, 4);
        nn_node_set_int(g, node, "_cpu_cf", 1);
    } else if (v == 2) {
        y = chain_conv(g, t, 3, 32, 0, 3, 1, NN_ACT_NONE, &seed, &node);
        nn_node_set_int(g, node, "_cpu_cf", 1);
    } else { /* MTCNN's P-Net: 3 -> 10, pooled (one slice, the pool in registers) */
        y = chain_max_pool(g, chain_conv(g, t, 3, 10, 0, 3, 0, NN_ACT_LEAKY_RELU, &seed, NULL));
    }
    nn_graph_mark_output(g, y);
    return g;
}

/* Our first-layer kernel reads the NHWC image where it is stored (three channels a
 * pixel apart) and matches ref, with and without a fused pool and 64 outputs; the
 * Transpose before it, whose output is stored as the image is, is a view of the
 * image. */
static void test_first_layer_nhwc(void)
{
    for (cf_nhwc_variant = 0; cf_nhwc_variant < 4; cf_nhwc_variant++) {
        float *yc, *yr;
        size_t n = 0;
        ffu_json *d;
        if (cpu_and_ref(g_cf_nhwc, &yc, &yr, &n, &d) < 0) TEST_SKIP("built without oneDNN");
        int ours = desc_impls(d, "facefuse:cf_avx512"), views = desc_int(d, "view_nodes");
        double e = yr ? nmse(yr, yc, n) : 1;
        printf("first layer on an NHWC image, variant %d: %d of ours, %d views, nmse %.3g\n",
               cf_nhwc_variant, ours, views, e);
        CHECK(yr != NULL);
        CHECK(e < 1e-10);
        CHECK_EQ_INT(views, 1); /* the Transpose: the image's own bytes, not a copy */
        CHECK_EQ_INT(ours, (ffu_cpu_features() & FFU_CPU_AVX512F) ? 1 : 0);
        free(yc), free(yr), ffu_json_free(d);
    }
}

/* ---- channels padded to 16 for a Winograd layer ------------------------------------------ */

static int padwin_variant;

/* x [1,3,20,22] -> Conv 3x3 3 -> 10 (0: LeakyReLU; 1: PReLU, a slope per channel; 2:
 * its output also a graph output) -> Conv 3x3 10 -> 16 -> y, as MTCNN's P-Net begins.
 * Variant 3: x [4,3,6,6], 36 output pixels an image (under the rule's 64, though 144
 * in all: whether a layer is padded must not depend on the batch). */
static nn_graph *g_padwin(void)
{
    int x, na;
    nn_graph *g = padwin_variant == 3 ? image_graph(4, 6, 6, &x) : image_graph(1, 20, 22, &x);
    if (!g) return NULL;
    uint64_t seed = 61;
    const int v = padwin_variant;
    int t = chain_conv(g, x, 3, 10, 0, 3, 1, v == 1 ? NN_ACT_PRELU : NN_ACT_LEAKY_RELU, &seed,
                       &na);
    if (v == 1) {
        static float slopes[10];
        for (int i = 0; i < 10; i++) slopes[i] = 0.05f * (float)(i + 1);
        nn_shape ss = {.rank = 3, .d = {10, 1, 1}};
        g->nodes[na].act.slope = nn_graph_add_const(g, "", FFU_DTYPE_F32, &ss, slopes,
                                                    sizeof slopes, NN_COPY);
    }
    int y = chain_conv(g, t, 10, 16, 0, 3, 1, NN_ACT_NONE, &seed, NULL);
    nn_graph_mark_output(g, y);
    if (v == 2) nn_graph_mark_output(g, t);
    return g;
}

/* The first Conv gets six zero filters and the second zero weights for them, so the
 * second takes Winograd (16 input channels); the results are ref's, through the graph
 * and through cpu sessions; a value someone else reads is left as it is. */
static void test_pad_for_winograd(void)
{
    for (padwin_variant = 0; padwin_variant < 4; padwin_variant++) {
        nn_graph *a = g_padwin(), *b = g_padwin();
        const size_t nx = padwin_variant == 3 ? 4 * 3 * 6 * 6 : 3 * 20 * 22,
                     ny = padwin_variant == 3 ? 4 * 16 * 6 * 6 : 16 * 20 * 22;
        CHECK(a && b);
        if (!a || !b) break;
        CHECK_EQ_INT(fuse_both(b), 0);
        int padded = padwin_variant < 2, convs = 0;
        for (int i = 0; i < b->nnodes; i++) {
            const nn_node *n = &b->nodes[i];
            if (n->op != NN_OP_CONV) continue;
            const nn_tensor *w = &b->tensors[n->inputs[1]];
            CHECK_EQ_INT((int)w->shape.d[convs ? 1 : 0], padded ? 16 : 10);
            if (!convs && padwin_variant == 1)
                CHECK_EQ_INT((int)nn_shape_numel(&b->tensors[n->act.slope].shape),
                             padded ? 16 : 10);
            convs++;
        }
        CHECK_EQ_INT(convs, 2);
        CHECK(ref_agree(a, b, nx, 67, ny));
        nn_graph_destroy(a), nn_graph_destroy(b);
        char what[64];
        snprintf(what, sizeof what, "padded for Winograd, variant %d", padwin_variant);
        /* variant 2's first Conv output is the second output, after y */
        check_ours(g_padwin, what, "facefuse:wino", ny + (padwin_variant == 2 ? 10 * 20 * 22 : 0),
                   padded);
    }
}

/* ---- our kernel for heads with f16 weights ------------------------------------------------ */

static int h16_exact; /* the weights are f16 values (else f32 ones, which it refuses) */

/* x [2,20,3,3] -> Conv 3x3 valid into 100 (one pixel per image: a head) + PReLU per
 * channel, forced onto ours with _cpu_h16 (its weights are under the 256 KB rule). */
static nn_graph *g_h16_head(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {2, 20, 3, 3}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    enum { M = 100, NW = M * 20 * 9 };
    static float w[NW + M], slopes[M];
    static uint16_t h[NW];
    uint64_t seed = 71;
    for (int i = 0; i < NW + M; i++) w[i] = test_rand_f(&seed) - 0.5f;
    for (int i = 0; i < M; i++) slopes[i] = 0.05f * (float)(i % 7);
    if (h16_exact) { /* round every weight to the nearest f16 value */
        nn_convert(w, FFU_DTYPE_F32, h, FFU_DTYPE_F16, NW);
        nn_convert(h, FFU_DTYPE_F16, w, FFU_DTYPE_F32, NW);
    }
    nn_shape ws = {.rank = 4, .d = {M, 20, 3, 3}}, bs = {.rank = 1, .d = {M}},
             ss = {.rank = 3, .d = {M, 1, 1}};
    int in[3] = {x, nn_graph_add_const(g, "", FFU_DTYPE_F32, &ws, w, sizeof(float) * NW, NN_COPY),
                 nn_graph_add_const(g, "", FFU_DTYPE_F32, &bs, w + NW, sizeof(float) * M, NN_COPY)};
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int n = nn_graph_add_node(g, NN_OP_CONV, "", in, 3, &y, 1);
    nn_node_set_int(g, n, "_cpu_h16", 1);
    g->nodes[n].act.kind = NN_ACT_PRELU;
    g->nodes[n].act.slope = nn_graph_add_const(g, "", FFU_DTYPE_F32, &ss, slopes, sizeof slopes,
                                               NN_COPY);
    nn_graph_mark_output(g, y);
    return g;
}

/* A head whose weights are f16 values runs on ours and matches ref (a batch of 2, 100
 * outputs: one block of 64, a tail of 36 with a masked store); with f32 weights it is
 * left to oneDNN. */
static void test_h16_head(void)
{
    for (h16_exact = 1; h16_exact >= 0; h16_exact--)
        check_ours(g_h16_head, h16_exact ? "head, f16 weights" : "head, f32 weights",
                   "facefuse:h16_avx512", 200, h16_exact);
}

static int h16_trans_b; /* the Gemm's weights [N][K] (transB), else [K][N] */

/* x [3,50] -> Gemm into 100 (f16 values, transB per h16_trans_b) + bias + ReLU, forced
 * onto ours with _cpu_h16. */
static nn_graph *g_h16_gemm(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 2, .d = {3, 50}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    enum { K = 50, N = 100, NW = K * N };
    static float w[NW + N];
    static uint16_t h[NW];
    uint64_t seed = 73;
    for (int i = 0; i < NW + N; i++) w[i] = test_rand_f(&seed) - 0.5f;
    nn_convert(w, FFU_DTYPE_F32, h, FFU_DTYPE_F16, NW);
    nn_convert(h, FFU_DTYPE_F16, w, FFU_DTYPE_F32, NW);
    nn_shape ws = {.rank = 2, .d = {h16_trans_b ? N : K, h16_trans_b ? K : N}},
             bs = {.rank = 1, .d = {N}};
    int in[3] = {x, nn_graph_add_const(g, "", FFU_DTYPE_F32, &ws, w, sizeof(float) * NW, NN_COPY),
                 nn_graph_add_const(g, "", FFU_DTYPE_F32, &bs, w + NW, sizeof(float) * N, NN_COPY)};
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
    int n = nn_graph_add_node(g, NN_OP_GEMM, "", in, 3, &y, 1);
    nn_node_set_int(g, n, "transB", h16_trans_b);
    nn_node_set_int(g, n, "_cpu_h16", 1);
    g->nodes[n].act.kind = NN_ACT_RELU;
    nn_graph_mark_output(g, y);
    return g;
}

/* A Gemm on f16 values runs on ours, each row an image, with its weights either way
 * round, and matches ref. */
static void test_h16_gemm(void)
{
    for (h16_trans_b = 0; h16_trans_b <= 1; h16_trans_b++)
        check_ours(g_h16_gemm, h16_trans_b ? "gemm, weights [N][K]" : "gemm, weights [K][N]",
                   "facefuse:h16_avx512", 300, 1);
}

/* ---- Resize + Add (a feature pyramid's top-down sum) ------------------------------------------
 */

#define FK 20 /* channels: a whole vector and a masked tail of four */
static float fw3[FK * 3 * 9], fb3[FK], fw1[FK * FK], fslope[FK], fx[3 * 6 * 8];

static void init_fpn(void)
{
    uint64_t s = 41;
    for (size_t i = 0; i < sizeof fw3 / 4; i++)
        fw3[i] = test_rand_f(&s) - 0.5f;
    for (size_t i = 0; i < sizeof fw1 / 4; i++)
        fw1[i] = (test_rand_f(&s) - 0.5f) * 0.5f;
    for (int c = 0; c < FK; c++)
        fb3[c] = test_rand_f(&s) - 0.5f, fslope[c] = 0.05f * (float)c;
    for (size_t i = 0; i < sizeof fx / 4; i++)
        fx[i] = 2.0f * test_rand_f(&s) - 1.0f;
}

/* x [1,3,6,8] -> Conv 3x3 pad 1 (FK) = fine; MaxPool 2x2 -> Conv 1x1 = coarse [1,FK,3,4];
 * Resize x2 (nearest; variant 2 linear) = up; Add(fine, up) (variant 3: Add(up, fine))
 * -> Relu (variant 4: PRelu, a slope per channel) -> Conv 1x1 = y (the sum stays inside
 * the cpu backend, which may then store it channels-last). Variant 1 also outputs up. */
static nn_graph *g_fpn(int variant)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    nn_shape xs = {.rank = 4, .d = {1, 3, 6, 8}}, w3s = {.rank = 4, .d = {FK, 3, 3, 3}};
    nn_shape bs = {.rank = 1, .d = {FK}}, w1s = {.rank = 4, .d = {FK, FK, 1, 1}};
    nn_shape ss = {.rank = 1, .d = {4}}, sls = {.rank = 3, .d = {FK, 1, 1}};
    static const float scales[4] = {1, 1, 2, 2};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int w3 = nn_graph_add_const(g, "w3", FFU_DTYPE_F32, &w3s, fw3, sizeof fw3, NN_BORROW);
    int b3 = nn_graph_add_const(g, "b3", FFU_DTYPE_F32, &bs, fb3, sizeof fb3, NN_BORROW);
    int w1 = nn_graph_add_const(g, "w1", FFU_DTYPE_F32, &w1s, fw1, sizeof fw1, NN_BORROW);
    int sc = nn_graph_add_const(g, "scales", FFU_DTYPE_F32, &ss, scales, sizeof scales, NN_BORROW);
    const char *names[7] = {"fine", "pooled", "coarse", "up", "sum", "act", "y"};
    int t[7];
    for (int k = 0; k < 7; k++)
        t[k] = nn_graph_add_tensor(g, names[k], FFU_DTYPE_UNDEFINED, NULL);
    int64_t pads[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    int in1[3] = {x, w3, b3}, in2[2] = {t[1], w1}, in3[3] = {t[2], -1, sc};
    int n = nn_graph_add_node(g, NN_OP_CONV, "conv3", in1, 3, &t[0], 1);
    nn_node_set_ints(g, n, "pads", pads, 4);
    n = nn_graph_add_node(g, NN_OP_MAX_POOL, "pool", &t[0], 1, &t[1], 1);
    nn_node_set_ints(g, n, "kernel_shape", k2, 2);
    nn_node_set_ints(g, n, "strides", k2, 2);
    nn_graph_add_node(g, NN_OP_CONV, "conv1", in2, 2, &t[2], 1);
    n = nn_graph_add_node(g, NN_OP_RESIZE, "resize", in3, 3, &t[3], 1);
    nn_node_set_string(g, n, "mode", variant == 2 ? "linear" : "nearest");
    int in4[2] = {variant == 3 ? t[3] : t[0], variant == 3 ? t[0] : t[3]};
    nn_graph_add_node(g, NN_OP_ADD, "add", in4, 2, &t[4], 1);
    if (variant == 4) {
        int sl =
            nn_graph_add_const(g, "slope", FFU_DTYPE_F32, &sls, fslope, sizeof fslope, NN_BORROW);
        int in5[2] = {t[4], sl};
        nn_graph_add_node(g, NN_OP_PRELU, "prelu", in5, 2, &t[5], 1);
    } else {
        nn_graph_add_node(g, NN_OP_RELU, "relu", &t[4], 1, &t[5], 1);
    }
    int in6[2] = {t[5], w1};
    nn_graph_add_node(g, NN_OP_CONV, "conv_out", in6, 2, &t[6], 1);
    nn_graph_mark_output(g, t[6]);
    if (variant == 1) nn_graph_mark_output(g, t[3]);
    return g;
}

/* The fusion takes the Add (and its activation) into the Resize unless the upsampled map
 * is read elsewhere; the fused graph gives the unfused one's values bit for bit on ref,
 * and sessions on both backends (which fuse at plan time, and put the sum in place of
 * the fine map) give them too, the cpu backend through its one-pass kernel where the
 * upscale is nearest (linear: oneDNN's resampling into scratch, then a binary step). With no_avx512
 * only the cpu session of variant 0 runs (in a child without AVX-512: the kernel's plain loop). 1
 * when every check passed. */
static int resize_add_variants(int no_avx512)
{
    init_fpn();
    int ok = 1;
    for (int variant = 0; variant <= 4 && ok; variant++) {
        if (no_avx512 && variant) break;
        nn_graph *a = g_fpn(variant), *b = g_fpn(variant);
        ok = a && b && fuse_both(b) == 0;
        int fused = variant != 1, with_sum = 0;
        for (int i = 0; ok && i < b->nnodes; i++)
            with_sum += b->nodes[i].op == NN_OP_RESIZE && b->nodes[i].ninputs == 5 &&
                        b->nodes[i].inputs[4] >= 0;
        ok = ok && with_sum == fused && count_op(b, NN_OP_ADD) == !fused;
        size_t na = 0, nb = 0;
        float *ra = ok ? run_ref(a, fx, &na) : NULL, *rb = ok ? run_ref(b, fx, &nb) : NULL;
        ok = ok && ra && rb && na == FK * 6 * 8 && nb == na && !memcmp(ra, rb, na * 4);
        if (!ok)
            fprintf(stderr, "resize + add variant %d: fused %d, %zu / %zu values\n", variant,
                    with_sum, na, nb);
        for (int k = no_avx512; ok && variant != 1 && k < 2; k++) {
            const char *backend = k ? "cpu" : "ref";
            ffu_json *d = NULL;
            double worst = 1;
            int rc = run_session(g_fpn(variant), backend, fx, sizeof fx, ra, na, &worst, &d);
            int ours = desc_impls(d, "facefuse:upsample_add");
            int inplace = desc_int(d, "inplace_nodes");
            /* the sum is planned over the fine map, which dies there */
            ok =
                rc == 0 || (rc == 1 && worst < 1e-5 && ours == (k && variant != 2) && inplace >= 1);
            if (!ok)
                fprintf(stderr,
                        "resize + add variant %d on %s: rc %d, worst %g, kernel %d, %d in place\n",
                        variant, backend, rc, worst, ours, inplace);
            ffu_json_free(d);
        }
        free(ra), free(rb);
        nn_graph_destroy(a), nn_graph_destroy(b);
    }
    return ok;
}

static int resize_add_without_avx512_body(void) { return resize_add_variants(1); }

static void test_resize_add_without_avx512(void)
{
    CHECK(in_child_without_avx512(resize_add_without_avx512_body));
}

static void test_resize_add_fused(void) { CHECK(resize_add_variants(0)); }

TEST_MAIN(test_bf16_refused_without_isa, test_winograd_chain_without_avx512,
          test_resize_add_without_avx512, test_bf16_session, test_conv_bn_clip, test_conv_prelu,
          test_add_padded_prelu, test_prelu_wrong_axis_not_fused, test_not_fused_when_shared,
          test_add_act, test_residual_fused, test_residual_sessions, test_heads_merged,
          test_dw_pool_fused, test_pad_for_winograd, test_winograd_session,
          test_winograd_memory_cap,
          test_winograd_blocked_chain, test_reduce_channels_last, test_empty_and_null,
          test_band_pipeline, test_band_pipeline_strided, test_band_pipeline_side_by_side,
          test_band_pipeline_residual, test_band_pipeline_same_rows, test_band_pipeline_fork,
          test_band_pipeline_random, test_band_pipeline_planar, test_planar_wide_groups,
          test_band_pipeline_planar_head, test_first_layer_nhwc, test_h16_head, test_h16_gemm,
          test_resize_add_fused)
