/* Tests of the graph rewrites (src/nn/rewrite.c) on small graphs built by hand: the
 * transpose clean-up (NHWC chains around NCHW convs, residual adds, Pad / Concat /
 * Softmax / reductions with remapped axes, graph outputs keeping their names) and each
 * arithmetic pattern (the three PReLU spellings, ReLU6 chains, per-channel affine and
 * BatchNormalization folding into Conv, a per-channel affine folded into the next
 * Conv through a max pool, Pad folding, redundant PReLU, an activation moved before a
 * max pool, a spelled-out softmax), plus patterns
 * that must NOT fire. Every rewritten graph is run with the reference kernels against
 * the original on random data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/fuse.h"
#include "nn/ir.h"
#include "nn/rewrite.h"
#include "test.h"
#include "test_nn_run.h"

static uint64_t seed = 42;

static int tensor(nn_graph *g, const char *name)
{
    return nn_graph_add_tensor(g, name, FFU_DTYPE_F32, NULL);
}

static int input(nn_graph *g, const char *name, nn_shape s)
{
    int t = nn_graph_add_tensor(g, name, FFU_DTYPE_F32, &s);
    nn_graph_mark_input(g, t);
    return t;
}

/* A random f32 constant (values in [lo, hi)). */
static int rconst(nn_graph *g, const char *name, nn_shape s, float lo, float hi)
{
    int64_t n = nn_shape_numel(&s);
    float *v = malloc((size_t)n * 4 + 4);
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * test_rand_f(&seed);
    int t = nn_graph_add_const(g, name, FFU_DTYPE_F32, &s, v, (size_t)n * 4, NN_COPY);
    free(v);
    return t;
}

static int fconst(nn_graph *g, const char *name, float v)
{
    nn_shape s = {.rank = 0};
    return nn_graph_add_const(g, name, FFU_DTYPE_F32, &s, &v, 4, NN_COPY);
}

static int iconst(nn_graph *g, const char *name, const int64_t *v, int n)
{
    nn_shape s = {.rank = 1, .d = {n}};
    return nn_graph_add_const(g, name, FFU_DTYPE_I64, &s, v, (size_t)n * 8, NN_COPY);
}

/* Adds node op(in...) -> new tensor `out`; returns the tensor. */
static int node(nn_graph *g, nn_op op, const char *out, const int *in, int nin)
{
    int t = tensor(g, out);
    nn_graph_add_node(g, op, out, in, nin, &t, 1);
    return t;
}

static int node1(nn_graph *g, nn_op op, const char *out, int a) { return node(g, op, out, &a, 1); }

static int node2(nn_graph *g, nn_op op, const char *out, int a, int b)
{
    int in[2] = {a, b};
    return node(g, op, out, in, 2);
}

static int transpose(nn_graph *g, const char *out, int x, const int64_t *perm)
{
    int t = node1(g, NN_OP_TRANSPOSE, out, x);
    nn_node_set_ints(g, g->nnodes - 1, "perm", perm, 4);
    return t;
}

static const int64_t TO_NCHW[4] = {0, 3, 1, 2}, TO_NHWC[4] = {0, 2, 3, 1};

/* Conv with a random weight [co, ci, k, k] and bias, pads k/2. */
static int conv(nn_graph *g, const char *out, int x, int ci, int co, int k)
{
    char wn[64], bn[64];
    snprintf(wn, sizeof wn, "%s.w", out);
    snprintf(bn, sizeof bn, "%s.b", out);
    int in[3] = {x, rconst(g, wn, (nn_shape){.rank = 4, .d = {co, ci, k, k}}, -0.5f, 0.5f),
                 rconst(g, bn, (nn_shape){.rank = 1, .d = {co}}, -0.2f, 0.2f)};
    int t = node(g, NN_OP_CONV, out, in, 3);
    int64_t pads[4] = {k / 2, k / 2, k / 2, k / 2}, ks[2] = {k, k};
    nn_node_set_ints(g, g->nnodes - 1, "pads", pads, 4);
    nn_node_set_ints(g, g->nnodes - 1, "kernel_shape", ks, 2);
    return t;
}

/* Runs `before` and `after` on the same random input; max |diff| over all outputs,
 * or -1 when the reference kernels are not all there (numeric part skipped). */
static double compare(nn_graph *before, nn_graph *after, nn_shape in)
{
    int64_t n = nn_shape_numel(&in);
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = test_rand_f(&seed) * 4 - 2;
    const float *ins[1] = {x};
    nn_shape shapes[1] = {in};
    test_nn_run r0, r1;
    nn_graph *b = NULL, *a = NULL;
    nn_graph_clone(before, &b);
    nn_graph_clone(after, &a);
    double worst = -1;
    ffu_status s0 = test_nn_run_graph(b, shapes, ins, &r0);
    ffu_status s1 = s0 == FFU_OK ? test_nn_run_graph(a, shapes, ins, &r1) : s0;
    if (s0 == FFU_OK && s1 == FFU_OK && a->noutputs == b->noutputs) {
        worst = 0;
        for (int k = 0; k < b->noutputs; k++) {
            const nn_tensor *tb = &b->tensors[b->outputs[k]], *ta = &a->tensors[a->outputs[k]];
            if (!nn_shape_equal(&tb->shape, &ta->shape)) return 1e30;
            const float *pb = test_nn_output(b, &r0, k), *pa = test_nn_output(a, &r1, k);
            for (int64_t i = 0; i < nn_shape_numel(&tb->shape); i++)
                worst = fmax(worst, fabs((double)pb[i] - pa[i]));
        }
    } else if (s0 != FFU_ERR_UNSUPPORTED && s1 != FFU_ERR_UNSUPPORTED) {
        fprintf(stderr, "run failed: %s\n", ffu_error_message());
        worst = 1e30;
    } else {
        printf("  (numeric check skipped: no ref kernel for %s)\n",
               test_nn_missing_op(b) ? test_nn_missing_op(b) : test_nn_missing_op(a));
    }
    test_nn_run_free(&r0);
    if (s0 == FFU_OK) test_nn_run_free(&r1);
    nn_graph_destroy(a);
    nn_graph_destroy(b);
    free(x);
    return worst;
}

static int count(const nn_graph *g, nn_op op) { return test_nn_count_op(g, op); }

/* ---- transposes ---------------------------------------------------------------------------- */

/* NHWC in -> T -> Conv -> T -> +bias[C] -> Relu -> T -> Conv -> T -> + residual -> Sigmoid */
static void test_transposes_chain(void)
{
    nn_graph *g;
    CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
    nn_shape in = {.rank = 4, .d = {1, 5, 6, 3}};
    int x = input(g, "x", in);
    int c1 = conv(g, "c1", transpose(g, "t1", x, TO_NCHW), 3, 4, 3);
    int y1 = transpose(g, "y1", c1, TO_NHWC);
    int a = node2(g, NN_OP_ADD, "a", y1, rconst(g, "bias", (nn_shape){.rank = 1, .d = {4}}, -1, 1));
    int r = node1(g, NN_OP_RELU, "r", a);
    int c2 = conv(g, "c2", transpose(g, "t2", r, TO_NCHW), 4, 4, 1);
    int y2 = transpose(g, "y2", c2, TO_NHWC);
    int s = node2(g, NN_OP_ADD, "s", y2, r);
    int out = node1(g, NN_OP_SIGMOID, "out", s);
    nn_graph_mark_output(g, out);
    nn_graph *orig;
    CHECK_EQ_INT(nn_graph_clone(g, &orig), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_TRANSPOSE), 4);
    CHECK_EQ_INT(nn_rewrite_transposes(g), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_TRANSPOSE), 2);
    CHECK_EQ_INT(g->nnodes, 8); /* T Conv Add Relu Conv Add Sigmoid T */
    CHECK_STR(g->tensors[g->outputs[0]].name, "out");
    CHECK_EQ_INT(g->nodes[g->tensors[g->outputs[0]].producer].op, NN_OP_TRANSPOSE);
    /* the bias was permuted to broadcast over NCHW */
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == NN_OP_ADD && g->tensors[g->nodes[i].inputs[1]].flags & NN_T_CONST) {
            const nn_shape *bs = &g->tensors[g->nodes[i].inputs[1]].shape;
            CHECK(bs->rank == 4 && bs->d[1] == 4 && bs->d[2] == 1 && bs->d[3] == 1);
        }
    /* idempotent */
    CHECK_EQ_INT(nn_rewrite_transposes(g), FFU_OK);
    CHECK_EQ_INT(g->nnodes, 8);
    double d = compare(orig, g, in);
    CHECK(d < 1e-6);
    nn_graph_destroy(orig);
    nn_graph_destroy(g);
}

/* Pad, Concat, Softmax and a keepdims ReduceMean are pushed with their axes remapped;
 * a final transpose back to NCHW cancels, leaving an Identity that keeps the name. */
static void test_transposes_axes(void)
{
    nn_graph *g;
    CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
    nn_shape in = {.rank = 4, .d = {1, 3, 4, 5}}; /* NCHW input */
    int x = input(g, "x", in);
    int h = transpose(g, "h", x, TO_NHWC); /* NHWC view */
    int64_t pads[8] = {0, 1, 0, 0, 0, 0, 2, 1}; /* H before 1, W after 2, C after 1 */
    int p = node2(g, NN_OP_PAD, "p", h, iconst(g, "pads", pads, 8));
    int sm = node1(g, NN_OP_SOFTMAX, "sm", p); /* axis -1: channels */
    int64_t ax[2] = {1, 2};
    int m = node2(g, NN_OP_REDUCE_MEAN, "m", sm, iconst(g, "axes", ax, 2)); /* keepdims 1 */
    int e = node2(g, NN_OP_MUL, "e", sm, m);
    int cat_in[2] = {e, p};
    int cat = node(g, NN_OP_CONCAT, "cat", cat_in, 2);
    nn_node_set_int(g, g->nnodes - 1, "axis", 3);
    int back = transpose(g, "back", cat, TO_NCHW);
    nn_graph_mark_output(g, back);
    nn_graph *orig;
    CHECK_EQ_INT(nn_graph_clone(g, &orig), FFU_OK);
    CHECK_EQ_INT(nn_rewrite_transposes(g), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_TRANSPOSE), 0);
    CHECK_EQ_INT(count(g, NN_OP_IDENTITY), 1);
    CHECK_STR(g->tensors[g->outputs[0]].name, "back");
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        if (n->op == NN_OP_CONCAT || n->op == NN_OP_SOFTMAX) CHECK_EQ_INT(nn_attr_int(n, "axis", -9), 1);
        if (n->op == NN_OP_PAD) {
            const int64_t *q = g->tensors[n->inputs[1]].data;
            int64_t want[8] = {0, 0, 1, 0, 0, 1, 0, 2}; /* NCHW order */
            for (int k = 0; k < 8; k++) CHECK_EQ_INT(q[k], want[k]);
        }
    }
    double d = compare(orig, g, in);
    CHECK(d < 1e-6);
    nn_graph_destroy(orig);
    nn_graph_destroy(g);
}

/* A transposed value read by a layout-sensitive op and also a graph output keeps one
 * materialised transpose with its name; a non-constant NHWC operand blocks pushing. */
static void test_transposes_blocked(void)
{
    nn_graph *g;
    CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
    nn_shape in = {.rank = 4, .d = {2, 3, 4, 5}};
    int x = input(g, "x", in);
    int h = transpose(g, "h", x, TO_NHWC);
    int64_t shape[2] = {2, 60};
    int flat = node2(g, NN_OP_RESHAPE, "flat", h, iconst(g, "shape", shape, 2));
    int r = node1(g, NN_OP_RELU, "r", h);
    int other = input(g, "z", (nn_shape){.rank = 4, .d = {2, 4, 5, 3}});
    int s = node2(g, NN_OP_ADD, "s", r, other); /* z is NHWC, not constant: no push */
    nn_graph_mark_output(g, flat);
    nn_graph_mark_output(g, h);
    nn_graph_mark_output(g, s);
    CHECK_EQ_INT(nn_rewrite_transposes(g), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_TRANSPOSE), 2); /* h, and Relu's result for the Add */
    CHECK_STR(g->tensors[g->outputs[1]].name, "h");
    CHECK_EQ_INT(g->nodes[g->tensors[g->outputs[1]].producer].op, NN_OP_TRANSPOSE);
    CHECK(g->nodes[g->tensors[flat].producer].inputs[0] == h);
    CHECK_EQ_INT(g->nodes[g->tensors[s].producer].op, NN_OP_ADD);
    CHECK(g->nodes[g->tensors[s].producer].inputs[1] == other);
    nn_graph_destroy(g);
}

/* ---- patterns ------------------------------------------------------------------------------ */

static const nn_shape IN4 = {.rank = 4, .d = {1, 3, 5, 6}};

/* Conv(x) as the value the patterns apply to. */
static nn_graph *conv_graph(int *y)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    int x = input(g, "x", IN4);
    *y = conv(g, "y", x, 3, 4, 3);
    return g;
}

static void finish(nn_graph *g, nn_graph **orig, int out)
{
    nn_graph_mark_output(g, out);
    nn_graph_clone(g, orig);
}

static void test_prelu_mobilefacenet(void)
{
    int y;
    nn_graph *g = conv_graph(&y), *orig;
    CHECK(g != NULL);
    int r = node1(g, NN_OP_RELU, "relu", y);
    int ab = node1(g, NN_OP_ABS, "abs", y);
    int sb = node2(g, NN_OP_SUB, "sub", y, ab);
    int mu = node2(g, NN_OP_MUL, "mul", sb,
                   rconst(g, "alpha", (nn_shape){.rank = 3, .d = {4, 1, 1}}, -0.3f, 0.3f));
    int out = node2(g, NN_OP_ADD, "out", r, mu);
    finish(g, &orig, out);
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    CHECK_EQ_INT(g->nnodes, 2);
    CHECK_EQ_INT(g->nodes[1].op, NN_OP_PRELU);
    CHECK_STR(g->tensors[g->nodes[1].outputs[0]].name, "out");
    const float *slope = g->tensors[g->nodes[1].inputs[1]].data;
    const float *alpha = g->tensors[nn_graph_find(g, "alpha")].data;
    CHECK(slope[2] == 2 * alpha[2]);
    double d = compare(orig, g, IN4);
    CHECK(d < 1e-5);
    nn_graph_destroy(orig);
    nn_graph_destroy(g);
}

/* The TF spelling after a fully connected layer (MTCNN's R-Net and O-Net: Gemm with B
 * [N, K] and transB, or B [K, N]), whose output shape is not inferred at load time:
 * the columns come from B. The PRelu then joins the Gemm as its activation (nn_fuse). */
static void test_prelu_after_gemm(void)
{
    for (int transb = 0; transb < 2; transb++) {
        nn_graph *g, *orig;
        CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
        const nn_shape in = {.rank = 2, .d = {3, 6}};
        int x = input(g, "x", in);
        nn_shape ws = {.rank = 2, .d = {transb ? 5 : 6, transb ? 6 : 5}};
        int y = node2(g, NN_OP_GEMM, "fc", x, rconst(g, "w", ws, -1, 1));
        if (transb) nn_node_set_int(g, g->tensors[y].producer, "transB", 1);
        int alpha = rconst(g, "alpha", (nn_shape){.rank = 1, .d = {5}}, 0.1f, 0.3f);
        int neg = node1(g, NN_OP_NEG, "neg2",
                        node1(g, NN_OP_RELU, "relu_neg", node1(g, NN_OP_NEG, "neg", y)));
        int out = node2(g, NN_OP_ADD, "out", node1(g, NN_OP_RELU, "relu", y),
                        node2(g, NN_OP_MUL, "mul", alpha, neg));
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        CHECK_EQ_INT(count(g, NN_OP_PRELU), 1);
        CHECK_EQ_INT(g->nnodes, 2);
        CHECK_EQ_INT(nn_fuse(g), FFU_OK);
        CHECK_EQ_INT(g->nnodes, 1);
        CHECK_EQ_INT(g->nodes[0].act.kind, NN_ACT_PRELU);
        double d = compare(orig, g, in);
        CHECK(d >= 0 && d < 1e-5);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* A PRelu joins the Add before it when the Add's channels can be derived at load time
 * (nn_derive_shape): here one operand comes through a MaxPool of a Transpose of an
 * NHWC input (the shape of a tf2onnx graph before its transposes are eliminated). Not
 * derived, the PRelu would stay a node of its own (FaceMesh's landmark detector had
 * ten such). */
static void test_prelu_after_transposed_add(void)
{
    nn_graph *g, *orig;
    CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
    const nn_shape in = {.rank = 4, .d = {1, 6, 6, 4}};
    int64_t nchw[4] = {0, 3, 1, 2}, k2[2] = {2, 2};
    int x = input(g, "x", in);
    int p = node1(g, NN_OP_MAX_POOL, "pool", transpose(g, "t", x, nchw));
    nn_node_set_ints(g, g->nnodes - 1, "kernel_shape", k2, 2);
    nn_node_set_ints(g, g->nnodes - 1, "strides", k2, 2);
    int a = node2(g, NN_OP_ADD, "sum", conv(g, "c", p, 4, 4, 1), p);
    int out = node2(g, NN_OP_PRELU, "out", a,
                    rconst(g, "alpha", (nn_shape){.rank = 3, .d = {4, 1, 1}}, 0.1f, 0.3f));
    finish(g, &orig, out);
    CHECK_EQ_INT(nn_fuse(g), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_PRELU), 0);
    const nn_node *add = &g->nodes[g->tensors[g->outputs[0]].producer];
    CHECK_EQ_INT(add->op, NN_OP_ADD);
    CHECK_EQ_INT(add->act.kind, NN_ACT_PRELU);
    double d = compare(orig, g, in);
    CHECK(d >= 0 && d < 1e-5);
    nn_graph_destroy(orig);
    nn_graph_destroy(g);
}

/* x + a*(x - |x|) (the depthwise blocks of MobileFaceNet_TF) and Max(0,x) + a*Min(0,x). */
static void test_prelu_variants(void)
{
    for (int v = 0; v < 2; v++) {
        int y;
        nn_graph *g = conv_graph(&y), *orig;
        CHECK(g != NULL);
        int alpha = rconst(g, "alpha", (nn_shape){.rank = 4, .d = {1, 4, 1, 1}}, -0.3f, 0.3f);
        int out;
        if (v == 0) {
            int sb = node2(g, NN_OP_SUB, "sub", y, node1(g, NN_OP_ABS, "abs", y));
            out = node2(g, NN_OP_ADD, "out", node2(g, NN_OP_MUL, "mul", alpha, sb), y);
        } else {
            int mx = node2(g, NN_OP_MAX, "max", fconst(g, "zero", 0), y);
            int mn = node2(g, NN_OP_MIN, "min", fconst(g, "zero2", 0), y);
            out = node2(g, NN_OP_ADD, "out", mx, node2(g, NN_OP_MUL, "mul", alpha, mn));
        }
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        CHECK_EQ_INT(g->nnodes, 2);
        CHECK_EQ_INT(g->nodes[1].op, NN_OP_PRELU);
        CHECK(g->nodes[1].inputs[0] == y);
        double d = compare(orig, g, IN4);
        CHECK(d < 1e-5);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* Relu(x) + a * -Relu(-x), the TF port of MTCNN's spelling (alpha first or second), and
 * the same with the inner Relu also read elsewhere, which must stay as it is. */
static void test_prelu_neg_relu_neg(void)
{
    for (int v = 0; v < 3; v++) {
        int y;
        nn_graph *g = conv_graph(&y), *orig;
        CHECK(g != NULL);
        int alpha = rconst(g, "alpha", (nn_shape){.rank = 4, .d = {1, 4, 1, 1}}, -0.3f, 0.3f);
        int rn = node1(g, NN_OP_RELU, "relu_neg", node1(g, NN_OP_NEG, "neg", y));
        int neg = node1(g, NN_OP_NEG, "neg2", rn);
        int mul = v == 1 ? node2(g, NN_OP_MUL, "mul", neg, alpha)
                         : node2(g, NN_OP_MUL, "mul", alpha, neg);
        int out = node2(g, NN_OP_ADD, "out", node1(g, NN_OP_RELU, "relu", y), mul);
        if (v == 2) nn_graph_mark_output(g, rn);
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        CHECK_EQ_INT(count(g, NN_OP_PRELU), v < 2 ? 1 : 0);
        CHECK_EQ_INT(g->nnodes, v < 2 ? 2 : 7);
        double d = compare(orig, g, IN4);
        CHECK(d >= 0 && d < 1e-5);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* Div(e, ReduceSum(e)), e = Exp(x - ReduceMax(x)) over one kept axis -> Softmax; not
 * when the two reductions take different axes or the max is of another value. */
static void test_softmax_spelled_out(void)
{
    for (int v = 0; v < 4; v++) {
        int y;
        nn_graph *g = conv_graph(&y), *orig;
        CHECK(g != NULL);
        int64_t a1 = 1, a2 = v == 2 ? 2 : 1;
        int mx = node2(g, NN_OP_REDUCE_MAX, "max", v == 3 ? node1(g, NN_OP_RELU, "r", y) : y,
                       iconst(g, "axes", &a1, 1));
        int e = node1(g, NN_OP_EXP, "exp", node2(g, NN_OP_SUB, "sub", y, mx));
        int sum = v == 1 ? node(g, NN_OP_REDUCE_SUM, "sum", &e, 1)
                         : node2(g, NN_OP_REDUCE_SUM, "sum", e, iconst(g, "axes2", &a2, 1));
        if (v == 1) {
            int64_t ax = 1;
            nn_node_set_ints(g, g->nnodes - 1, "axes", &ax, 1);
        }
        int out = node2(g, NN_OP_DIV, "out", e, sum);
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        CHECK_EQ_INT(count(g, NN_OP_SOFTMAX), v < 2 ? 1 : 0);
        if (v < 2) {
            CHECK_EQ_INT(g->nnodes, 2);
            CHECK_EQ_INT(nn_attr_int(&g->nodes[1], "axis", -9), 1);
            CHECK_STR(g->tensors[g->nodes[1].outputs[0]].name, "out");
        }
        double d = compare(orig, g, IN4);
        CHECK(d >= 0 && d < 1e-6);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* Max(Min(Relu(x), 6), 0) (faceres) -> Clip(x, 0, 6); Min(Max(x, 0), 6) too. */
static void test_relu6(void)
{
    for (int v = 0; v < 2; v++) {
        int y;
        nn_graph *g = conv_graph(&y), *orig;
        CHECK(g != NULL);
        int out;
        if (v == 0) {
            int mn = node2(g, NN_OP_MIN, "min", node1(g, NN_OP_RELU, "relu", y), fconst(g, "six", 6));
            out = node2(g, NN_OP_MAX, "out", mn, fconst(g, "zero", 0));
        } else {
            int mx = node2(g, NN_OP_MAX, "max", y, fconst(g, "zero", 0));
            out = node2(g, NN_OP_MIN, "out", fconst(g, "six", 6), mx);
        }
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        CHECK_EQ_INT(g->nnodes, 2);
        const nn_node *c = &g->nodes[1];
        CHECK_EQ_INT(c->op, NN_OP_CLIP);
        CHECK(c->inputs[0] == y && c->ninputs == 3);
        CHECK(*(const float *)g->tensors[c->inputs[1]].data == 0);
        CHECK(*(const float *)g->tensors[c->inputs[2]].data == 6);
        double d = compare(orig, g, IN4);
        CHECK(d < 1e-6);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
    /* a lone Max(x, 0) is a Relu; a lone Min(x, 6) stays */
    int y;
    nn_graph *g = conv_graph(&y);
    CHECK(g != NULL);
    int mx = node2(g, NN_OP_MAX, "max", y, fconst(g, "zero", 0));
    int out = node2(g, NN_OP_MIN, "out", node1(g, NN_OP_SIGMOID, "sig", mx), fconst(g, "six", 6));
    nn_graph_mark_output(g, out);
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_RELU), 1);
    CHECK_EQ_INT(count(g, NN_OP_MIN), 1);
    nn_graph_destroy(g);
}

/* Conv -> Mul(per-channel) -> Add(per-channel) and Conv -> BatchNormalization. */
static void test_fold_affine(void)
{
    for (int v = 0; v < 3; v++) {
        int y;
        nn_graph *g = conv_graph(&y), *orig;
        CHECK(g != NULL);
        int out;
        if (v == 0) {
            int m = node2(g, NN_OP_MUL, "m", y,
                          rconst(g, "scale", (nn_shape){.rank = 3, .d = {4, 1, 1}}, 0.5f, 2));
            out = node2(g, NN_OP_ADD, "out",
                        rconst(g, "shift", (nn_shape){.rank = 4, .d = {1, 4, 1, 1}}, -1, 1), m);
        } else if (v == 1) {
            int in[5] = {y, rconst(g, "s", (nn_shape){.rank = 1, .d = {4}}, 0.5f, 2),
                         rconst(g, "b", (nn_shape){.rank = 1, .d = {4}}, -1, 1),
                         rconst(g, "mean", (nn_shape){.rank = 1, .d = {4}}, -1, 1),
                         rconst(g, "var", (nn_shape){.rank = 1, .d = {4}}, 0.1f, 3)};
            out = node(g, NN_OP_BATCH_NORM, "out", in, 5);
        } else { /* Sub and Div by per-channel constants, scalar Add */
            int s = node2(g, NN_OP_SUB, "s", y,
                          rconst(g, "c", (nn_shape){.rank = 3, .d = {4, 1, 1}}, -1, 1));
            int d = node2(g, NN_OP_DIV, "d", s, fconst(g, "two", 2));
            out = node2(g, NN_OP_ADD, "out", d, fconst(g, "one", 1));
        }
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        CHECK_EQ_INT(g->nnodes, 1);
        CHECK_EQ_INT(g->nodes[0].op, NN_OP_CONV);
        CHECK_STR(g->tensors[g->nodes[0].outputs[0]].name, "out");
        double d = compare(orig, g, IN4);
        CHECK(d < 1e-5);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* A copy of g whose constants are its own (a clone whose constants are then copied):
 * the numeric reference for rewrites that may change g's constants where they lie. */
static nn_graph *detached_copy(const nn_graph *g)
{
    nn_graph *c = NULL;
    if (nn_graph_clone(g, &c) < 0) return NULL;
    for (int t = 0; t < c->ntensors; t++) {
        nn_tensor *k = &c->tensors[t];
        if (!(k->flags & NN_T_CONST) || !k->nbytes) continue;
        void *own = ffu_arena_alloc_aligned(c->arena, k->nbytes, 64);
        if (!own) {
            nn_graph_destroy(c);
            return NULL;
        }
        memcpy(own, k->data, k->nbytes);
        k->data = own;
    }
    return c;
}

/* Conv -> Mul(per channel) -> Add, the Conv's weights in four situations. Where the
 * graph is exclusive (no other graph borrows its constants: a model during its load
 * passes), its arena holds the weights and only this Conv reads them, the scale is
 * applied where they lie: the same tensor and bytes, each value weight * scale exactly,
 * and the arena does not grow by a copy (v 0). Otherwise they are copied and the
 * original bytes stay as they were: weights in the caller's memory (v 1, NN_BORROW),
 * weights a second Conv also reads (v 2), a graph not marked exclusive (v 3, as every
 * graph is by default, a clone's source among them). Each case computes what the
 * graph did before. */
static void test_fold_in_place(void)
{
    enum { CO = 4, PER = 3 * 3 * 3 };
    static float caller[CO * PER];
    for (int v = 0; v < 4; v++) {
        nn_graph *g = NULL;
        CHECK(nn_graph_create(&g) == FFU_OK);
        int x = input(g, "x", IN4);
        int y = conv(g, "y", x, 3, CO, 3), conv_node = g->nnodes - 1;
        int wt = g->nodes[conv_node].inputs[1];
        if (v == 1) { /* the same values, in the caller's memory */
            memcpy(caller, g->tensors[wt].data, sizeof caller);
            nn_shape ws = g->tensors[wt].shape;
            wt = nn_graph_add_const(g, "caller.w", FFU_DTYPE_F32, &ws, caller, sizeof caller,
                                    NN_BORROW);
            g->nodes[conv_node].inputs[1] = wt;
        }
        if (v == 2) { /* a second Conv reads the same weights: a second output */
            int in[2] = {x, wt};
            int y2 = node(g, NN_OP_CONV, "y2", in, 2);
            int64_t pads[4] = {1, 1, 1, 1}, ks[2] = {3, 3};
            nn_node_set_ints(g, g->nnodes - 1, "pads", pads, 4);
            nn_node_set_ints(g, g->nnodes - 1, "kernel_shape", ks, 2);
            nn_graph_mark_output(g, y2);
        }
        int sc = rconst(g, "scale", (nn_shape){.rank = 3, .d = {CO, 1, 1}}, 0.5f, 2);
        int out = node2(g, NN_OP_ADD, "out", node2(g, NN_OP_MUL, "m", y, sc),
                        rconst(g, "shift", (nn_shape){.rank = 3, .d = {CO, 1, 1}}, -1, 1));
        nn_graph_mark_output(g, out);
        float before[CO * PER], scale[CO];
        memcpy(before, g->tensors[wt].data, sizeof before);
        memcpy(scale, g->tensors[sc].data, sizeof scale);
        const void *where = g->tensors[wt].data;
        nn_graph *ref = detached_copy(g);
        CHECK(ref != NULL);
        g->exclusive = v != 3;
        const int in_place = v == 0;
        size_t used = ffu_arena_used(g->arena);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        g->exclusive = 0;
        CHECK_EQ_INT(count(g, NN_OP_MUL) + count(g, NN_OP_ADD), 0);
        int cv = -1;
        for (int i = 0; i < g->nnodes; i++)
            if (g->nodes[i].op == NN_OP_CONV &&
                !strcmp(g->tensors[g->nodes[i].outputs[0]].name, "out"))
                cv = i;
        CHECK(cv >= 0);
        int nw = g->nodes[cv].inputs[1];
        const float *got = g->tensors[nw].data;
        int exact = 1;
        for (int o = 0; o < CO; o++)
            for (int k = 0; k < PER; k++)
                exact &= got[o * PER + k] == before[o * PER + k] * scale[o];
        CHECK(exact);
        CHECK_EQ_INT(nw == wt, in_place);
        CHECK_EQ_INT((const void *)got == where, in_place);
        if (in_place) /* the new bias, not a copy of the weights */
            CHECK(ffu_arena_used(g->arena) - used < sizeof before);
        else /* the weights as they were, where they were */
            CHECK(!memcmp(where, before, sizeof before));
        double d = compare(ref, g, IN4);
        printf("  fold case %d: %s, max diff %.2e\n", v, in_place ? "in place" : "copied", d);
        CHECK(d >= 0 && d < 1e-5);
        nn_graph_destroy(ref);
        nn_graph_destroy(g);
    }
}

/* Things that must stay: a constant over W (not per channel), an intermediate that is
 * also a graph output, a constant on the wrong side of Sub, a PReLU on a value that
 * has other readers. */
static void test_no_fold(void)
{
    int y;
    nn_graph *g = conv_graph(&y);
    CHECK(g != NULL);
    int m = node2(g, NN_OP_MUL, "m", y, rconst(g, "w6", (nn_shape){.rank = 1, .d = {6}}, 1, 2));
    nn_graph_mark_output(g, m);
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    CHECK_EQ_INT(g->nnodes, 2);
    nn_graph_destroy(g);

    g = conv_graph(&y);
    int a = node2(g, NN_OP_ADD, "a", y, rconst(g, "c", (nn_shape){.rank = 3, .d = {4, 1, 1}}, 1, 2));
    nn_graph_mark_output(g, a);
    nn_graph_mark_output(g, y); /* y is read outside the pattern */
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    CHECK_EQ_INT(g->nnodes, 2);
    nn_graph_destroy(g);

    g = conv_graph(&y);
    int s = node2(g, NN_OP_SUB, "s", rconst(g, "c", (nn_shape){.rank = 3, .d = {4, 1, 1}}, 1, 2), y);
    nn_graph_mark_output(g, s);
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    CHECK_EQ_INT(g->nnodes, 2);
    nn_graph_destroy(g);

    g = conv_graph(&y);
    int r = node1(g, NN_OP_RELU, "relu", y);
    int sb = node2(g, NN_OP_SUB, "sub", y, node1(g, NN_OP_ABS, "abs", y));
    int mu = node2(g, NN_OP_MUL, "mul", sb, rconst(g, "al", (nn_shape){.rank = 3, .d = {4, 1, 1}}, 0, 1));
    int out = node2(g, NN_OP_ADD, "out", r, mu);
    nn_graph_mark_output(g, out);
    nn_graph_mark_output(g, r); /* the Relu has another reader */
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_PRELU), 0);
    nn_graph_destroy(g);
}

/* Conv -> Relu -> Mul -> Add (per-channel, BatchNormalization after the activation)
 * -> [MaxPool 2x2] -> unpadded Conv: the affine moves into the second Conv's weights.
 * Variants: 0 through the pool, 1 straight into the Conv, and three that must stay:
 * 2 a negative scale before the pool, 3 a padded second Conv, 4 the Add's output is
 * also a graph output. IN4 is 5x6; the first Conv keeps it, the pool halves it to
 * 2x3, so the second Conv is 1x1 after a pool and 3x3 without one. */
static void test_fold_input_affine(void)
{
    for (int v = 0; v < 5; v++) {
        int y;
        nn_graph *g = conv_graph(&y), *orig;
        CHECK(g != NULL);
        int r = node1(g, NN_OP_RELU, "relu", y);
        /* v 2: negative scales, which a max pool does not commute with (every one
         * negative, so that no draw of the random values can make the fold legal) */
        float lo = v == 2 ? -1.0f : 0.5f, hi = v == 2 ? -0.5f : 2.0f;
        int m = node2(g, NN_OP_MUL, "m", r,
                      rconst(g, "scale", (nn_shape){.rank = 3, .d = {4, 1, 1}}, lo, hi));
        int a = node2(g, NN_OP_ADD, "a",
                      rconst(g, "shift", (nn_shape){.rank = 4, .d = {1, 4, 1, 1}}, -1, 1), m);
        int p = a;
        if (v != 1 && v != 3) {
            p = node1(g, NN_OP_MAX_POOL, "pool", a);
            int64_t k2[2] = {2, 2};
            nn_node_set_ints(g, g->nnodes - 1, "kernel_shape", k2, 2);
            nn_node_set_ints(g, g->nnodes - 1, "strides", k2, 2);
        }
        int k = v == 1 || v == 3 ? 3 : 1;
        int out = conv(g, "out", p, 4, 5, k);
        int64_t zero[4] = {0, 0, 0, 0};
        if (v != 3) nn_node_set_ints(g, g->nnodes - 1, "pads", zero, 4);
        if (v == 4) nn_graph_mark_output(g, a);
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        int folded = v <= 1;
        CHECK_EQ_INT(count(g, NN_OP_MUL), folded ? 0 : 1);
        CHECK_EQ_INT(count(g, NN_OP_ADD), folded ? 0 : 1);
        CHECK_EQ_INT(count(g, NN_OP_MAX_POOL), v == 1 || v == 3 ? 0 : 1);
        double d = compare(orig, g, IN4);
        CHECK(d < 1e-5);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* Pad(zeros, spatial) -> Conv, also seen through the leading NHWC->NCHW transpose;
 * PRelu after Relu disappears. */
static void test_fold_pad_and_slope(void)
{
    nn_graph *g, *orig;
    CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
    nn_shape in = {.rank = 4, .d = {1, 7, 6, 3}};
    int x = input(g, "x", in);
    int64_t pads[8] = {0, 1, 2, 0, 0, 0, 1, 0}; /* NHWC: H (1,0) W (2,1) */
    int p = node2(g, NN_OP_PAD, "p", x, iconst(g, "pads", pads, 8));
    int t = transpose(g, "t", p, TO_NCHW);
    int c = conv(g, "c", t, 3, 4, 3);
    int r = node1(g, NN_OP_RELU, "r", c);
    int pr = node2(g, NN_OP_PRELU, "pr", r, rconst(g, "sl", (nn_shape){.rank = 3, .d = {4, 1, 1}}, 0, 1));
    int out = node1(g, NN_OP_SIGMOID, "out", pr);
    finish(g, &orig, out);
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    CHECK_EQ_INT(count(g, NN_OP_PAD), 0);
    CHECK_EQ_INT(count(g, NN_OP_PRELU), 0);
    CHECK_EQ_INT(g->nnodes, 4); /* Transpose Conv Relu Sigmoid */
    int ci = g->tensors[c].producer;
    int n;
    const int64_t *cp = nn_attr_ints(&g->nodes[ci], "pads", &n);
    CHECK(n == 4 && cp[0] == 2 && cp[1] == 3 && cp[2] == 1 && cp[3] == 2);
    double d = compare(orig, g, in);
    CHECK(d < 1e-6);
    nn_graph_destroy(orig);
    nn_graph_destroy(g);
}

/* An NHWC input normalised per channel, (x - mean) * scale, then the NHWC->NCHW
 * Transpose and an unpadded Conv (dlib-resnet's input): Sub and Mul fold into the Conv
 * through the Transpose. With a padded Conv nothing folds; with a Sub whose constant
 * comes first (mean - x) only the scale after it does. */
static void test_fold_input_normalisation(void)
{
    for (int v = 0; v < 3; v++) {
        nn_graph *g, *orig;
        CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
        nn_shape in = {.rank = 4, .d = {2, 9, 8, 3}};
        int x = input(g, "x", in);
        int mean = rconst(g, "mean", (nn_shape){.rank = 1, .d = {3}}, 0.2f, 0.7f);
        int sub = v == 2 ? node2(g, NN_OP_SUB, "sub", mean, x) : node2(g, NN_OP_SUB, "sub", x, mean);
        int mul = node2(g, NN_OP_MUL, "mul", sub,
                        rconst(g, "scale", (nn_shape){.rank = 4, .d = {1, 1, 1, 3}}, 0.5f, 2));
        int t = transpose(g, "t", mul, TO_NCHW);
        int out = conv(g, "out", t, 3, 4, 3);
        int64_t zero[4] = {0, 0, 0, 0};
        if (v != 1) nn_node_set_ints(g, g->nnodes - 1, "pads", zero, 4);
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        int folded = v == 0;
        CHECK_EQ_INT(count(g, NN_OP_SUB), folded ? 0 : 1);
        CHECK_EQ_INT(count(g, NN_OP_MUL), v == 1 ? 1 : 0);
        CHECK_EQ_INT(count(g, NN_OP_TRANSPOSE), 1);
        double d = compare(orig, g, in);
        CHECK(d < 1e-5);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* Conv -> MaxPool -> activation: a ReLU (after a 2x2 pool) and a Clip (after a padded
 * 3x3 one) move before the pool, where they can fuse into the Conv, and the numbers are
 * the same to the bit; a LeakyRelu with a negative slope (not monotone), a Sigmoid (not
 * worth it: it would then run on four times the values without fusing) and a Conv
 * output read elsewhere stay. */
static void test_act_before_pool(void)
{
    for (int v = 0; v < 5; v++) {
        nn_graph *g, *orig;
        CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
        nn_shape in = {.rank = 4, .d = {2, 3, 9, 8}};
        int x = input(g, "x", in);
        int c = conv(g, "c", x, 3, 4, 3);
        int p = node1(g, NN_OP_MAX_POOL, "p", c);
        int64_t k2[2] = {2, 2}, k3[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
        nn_node_set_ints(g, g->nnodes - 1, "kernel_shape", v == 1 ? k3 : k2, 2);
        nn_node_set_ints(g, g->nnodes - 1, "strides", k2, 2);
        if (v == 1) nn_node_set_ints(g, g->nnodes - 1, "pads", pads, 4);
        int out;
        if (v == 1) {
            int in3[3] = {p, fconst(g, "lo", 0.1f), fconst(g, "hi", 0.6f)};
            out = node(g, NN_OP_CLIP, "out", in3, 3);
        } else if (v == 2) {
            out = node1(g, NN_OP_LEAKY_RELU, "out", p);
            nn_node_set_float(g, g->nnodes - 1, "alpha", -0.5f);
        } else {
            out = node1(g, v == 3 ? NN_OP_SIGMOID : NN_OP_RELU, "out", p);
        }
        if (v == 4) out = node2(g, NN_OP_ADD, "sum", out, node1(g, NN_OP_REDUCE_MAX, "m", c));
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        /* moved: the pool reads the activation, which reads the Conv */
        int pi = -1;
        for (int i = 0; i < g->nnodes; i++)
            if (g->nodes[i].op == NN_OP_MAX_POOL) pi = i;
        CHECK(pi >= 0);
        int src = pi >= 0 ? g->tensors[g->nodes[pi].inputs[0]].producer : -1;
        int moved = src >= 0 && g->nodes[src].op != NN_OP_CONV;
        CHECK_EQ_INT(moved, v <= 1);
        if (moved)
            CHECK(g->tensors[g->nodes[src].inputs[0]].producer >= 0 &&
                  g->nodes[g->tensors[g->nodes[src].inputs[0]].producer].op == NN_OP_CONV);
        double d = compare(orig, g, in);
        printf("  act_before_pool case %d: %s, max diff %.2e\n", v, moved ? "moved" : "kept", d);
        CHECK(d == 0);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

/* Two 1x1 convolutions in a row become one where that is less work: 16 -> 16 -> 32 (the
 * MobileFaceNet_TF shape) merges, with results moved by rounding only; a bottleneck
 * 32 -> 8 -> 32 (cheaper as two), an intermediate read twice, an activation between
 * them, a 3x3 second layer and a stride of 2 each keep both. */
static void test_merge_1x1(void)
{
    for (int v = 0; v < 6; v++) {
        nn_graph *g, *orig;
        CHECK_EQ_INT(nn_graph_create(&g), FFU_OK);
        int ci = v == 1 ? 32 : 16, mid = v == 1 ? 8 : 16, co = 32;
        nn_shape in = {.rank = 4, .d = {2, ci, 7, 6}};
        int x = input(g, "x", in);
        int a = conv(g, "a", x, ci, mid, 1);
        if (v == 5) {
            int64_t st[2] = {2, 2};
            nn_node_set_ints(g, g->nnodes - 1, "strides", st, 2);
        }
        int b = v == 3 ? node1(g, NN_OP_RELU, "r", a) : a;
        int out = conv(g, "out", b, mid, co, v == 4 ? 3 : 1);
        if (v == 2) out = node2(g, NN_OP_ADD, "sum", out, conv(g, "side", a, mid, co, 1));
        finish(g, &orig, out);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        int convs = count(g, NN_OP_CONV);
        CHECK_EQ_INT(convs, v == 0 ? 1 : v == 2 ? 3 : 2);
        double d = compare(orig, g, in);
        printf("  merge_1x1 case %d: %d convolutions, max diff %.2e\n", v, convs, d);
        CHECK(d >= 0 && d < 1e-5);
        nn_graph_destroy(orig);
        nn_graph_destroy(g);
    }
}

TEST_MAIN(test_transposes_chain, test_transposes_axes, test_transposes_blocked,
          test_prelu_mobilefacenet, test_prelu_variants, test_prelu_neg_relu_neg,
          test_prelu_after_gemm, test_prelu_after_transposed_add,
          test_softmax_spelled_out, test_relu6, test_fold_affine,
          test_fold_in_place, test_no_fold, test_fold_input_affine, test_fold_input_normalisation,
          test_fold_pad_and_slope, test_merge_1x1, test_act_before_pool)
