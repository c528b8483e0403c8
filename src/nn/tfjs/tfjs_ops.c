/* TF op -> IR translation for the TF.js loader, one translator per TF op family.
 *
 * Every IR tensor that stands for a TF output keeps TF's meaning and name ("node",
 * "node:1"); helper tensors are named "node#suffix" ('#' cannot occur in TF names).
 * TF is NHWC while the IR's spatial ops are ONNX's NCHW, so spatial ops are emitted as
 * Transpose(0,3,1,2) -> op -> Transpose(0,2,3,1); fused activations go between the op
 * and the trailing transpose (in NCHW) so the later fusion pass finds Conv -> act.
 * Weights are converted once at load: HWIO -> OIHW, depthwise [kh,kw,C,M] ->
 * [C*M,1,kh,kw] with group C, per-channel NHWC constants -> [1,C,1,1].
 * Shape-like int32 inputs (reshape shapes, axes, pads) become i64 constants as ONNX
 * wants; when they are computed at run time a Cast to i64 is inserted instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tf_slice.h"
#include "tfjs_internal.h"

#define TRY(x)                                                                                 \
    do {                                                                                       \
        ffu_status st_ = (x);                                                                  \
        if (st_ < 0) return st_;                                                               \
    } while (0)
/* v = x, returning x when it is a (negative) error */
#define TRYV(v, x)                                                                             \
    do {                                                                                       \
        v = (x);                                                                               \
        if (v < 0) return v;                                                                   \
    } while (0)

static const int64_t TO_NCHW[4] = {0, 3, 1, 2}, TO_NHWC[4] = {0, 2, 3, 1};

static const tf_node *node_of(tf_ctx *c, int ni) { return &c->nodes[ni]; }

static int is_op(tf_ctx *c, int ni, const char *op) { return strcmp(c->nodes[ni].op, op) == 0; }

static ffu_status need_inputs(tf_ctx *c, int ni, int min, int max)
{
    int n = node_of(c, ni)->ninputs;
    if (n < min || (max >= 0 && n > max))
        return tf_error(c, ni, FFU_ERR_FORMAT, "has %d inputs, expects %d..%d", n, min, max);
    return FFU_OK;
}

/* The type of the node's first output as the attributes say (a hint for the API before
 * shape inference runs; inference sets the real one). */
static ffu_dtype out_dtype(tf_ctx *c, int ni)
{
    static const char *const bool_ops[] = {"Equal", "NotEqual", "Greater", "GreaterEqual",
                                           "Less", "LessEqual", "LogicalNot", "LogicalAnd",
                                           "LogicalOr"};
    for (size_t i = 0; i < sizeof bool_ops / sizeof bool_ops[0]; i++)
        if (is_op(c, ni, bool_ops[i])) return FFU_DTYPE_BOOL;
    static const char *const keys[] = {"out_type", "output_type", "DstT", "T", "dtype"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        ffu_dtype t;
        if (ffu_json_get(node_of(c, ni)->attr, keys[i]) && tf_attr_type(c, ni, keys[i], &t) == FFU_OK)
            return t;
    }
    return FFU_DTYPE_UNDEFINED;
}

/* Emits one node with one new output tensor named tf_name(ni, suffix); suffix NULL
 * names it like the TF node's output 0. Returns the tensor (or < 0); *node = node. */
static int emit(tf_ctx *c, int ni, const char *suffix, nn_op op, const int *in, int nin,
                int *node)
{
    ffu_dtype dt = suffix ? FFU_DTYPE_UNDEFINED : out_dtype(c, ni);
    const char *name = tf_name(c, ni, suffix);
    if (!name) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    int t = nn_graph_add_tensor(c->g, name, dt, NULL);
    if (t < 0) return t;
    name = tf_name(c, ni, suffix);
    int k = nn_graph_add_node(c->g, op, name, in, nin, &t, 1);
    if (k < 0) return k;
    if (node) *node = k;
    return t;
}

static int emit1(tf_ctx *c, int ni, const char *suffix, nn_op op, int x)
{
    return emit(c, ni, suffix, op, &x, 1, NULL);
}

static int emit_transpose(tf_ctx *c, int ni, const char *suffix, int x, const int64_t *perm,
                          int rank)
{
    int node = -1, t;
    TRYV(t, emit(c, ni, suffix, NN_OP_TRANSPOSE, &x, 1, &node));
    TRY(nn_node_set_ints(c->g, node, "perm", perm, rank));
    return t;
}

static int const_i64(tf_ctx *c, int ni, const char *suffix, const int64_t *v, int n)
{
    nn_shape s = {.rank = 1, .d = {n}};
    return tf_const(c, ni, suffix, FFU_DTYPE_I64, &s, v);
}

/* An integer input as the i64 tensor ONNX wants: a new constant, or a Cast node. */
static int input_i64(tf_ctx *c, int ni, int i, const char *suffix)
{
    if (tf_input_weight(c, ni, i)) {
        int64_t v[64];
        int n;
        TRY(tf_input_ints(c, ni, i, v, 64, &n));
        return const_i64(c, ni, suffix, v, n);
    }
    int x, node, t;
    TRYV(x, tf_input(c, ni, i));
    TRYV(t, emit(c, ni, suffix, NN_OP_CAST, &x, 1, &node));
    TRY(nn_node_set_int(c->g, node, "to", FFU_DTYPE_I64));
    return t;
}

/* ---- simple ops ------------------------------------------------------------------------- */

static const struct {
    const char *tf;
    nn_op op;
} unary_ops[] = {
    {"Relu", NN_OP_RELU},         {"Sigmoid", NN_OP_SIGMOID},    {"Tanh", NN_OP_TANH},
    {"Abs", NN_OP_ABS},           {"Square", NN_OP_SQUARE},      {"Rsqrt", NN_OP_RSQRT},
    {"Sqrt", NN_OP_SQRT},         {"Exp", NN_OP_EXP},            {"Log", NN_OP_LOG},
    {"Neg", NN_OP_NEG},           {"Reciprocal", NN_OP_RECIPROCAL}, {"Inv", NN_OP_RECIPROCAL},
    {"Floor", NN_OP_FLOOR},       {"Ceil", NN_OP_CEIL},          {"Round", NN_OP_ROUND},
    {"Sign", NN_OP_SIGN},         {"Sin", NN_OP_SIN},            {"Cos", NN_OP_COS},
    {"Erf", NN_OP_ERF},           {"Softplus", NN_OP_SOFTPLUS},  {"Elu", NN_OP_ELU},
    {"Selu", NN_OP_SELU},         {"LogicalNot", NN_OP_NOT},     {"Identity", NN_OP_IDENTITY},
    {"StopGradient", NN_OP_IDENTITY}, {"Snapshot", NN_OP_IDENTITY},
    {"PlaceholderWithDefault", NN_OP_IDENTITY},
};

static const struct {
    const char *tf;
    nn_op op;
} binary_ops[] = {
    {"Add", NN_OP_ADD},         {"AddV2", NN_OP_ADD},          {"Sub", NN_OP_SUB},
    {"Mul", NN_OP_MUL},         {"RealDiv", NN_OP_DIV},        {"Div", NN_OP_DIV},
    {"Maximum", NN_OP_MAX},     {"Minimum", NN_OP_MIN},        {"Pow", NN_OP_POW},
    {"Prelu", NN_OP_PRELU},     {"Equal", NN_OP_EQUAL},        {"Greater", NN_OP_GREATER},
    {"GreaterEqual", NN_OP_GREATER_OR_EQUAL}, {"Less", NN_OP_LESS},
    {"LessEqual", NN_OP_LESS_OR_EQUAL},       {"LogicalAnd", NN_OP_AND},
    {"LogicalOr", NN_OP_OR},
};

static ffu_status tr_unary(tf_ctx *c, int ni, nn_op op)
{
    int x, t;
    TRY(need_inputs(c, ni, 1, 1));
    TRYV(x, tf_input(c, ni, 0));
    TRYV(t, emit1(c, ni, NULL, op, x));
    return FFU_OK;
}

static ffu_status tr_binary(tf_ctx *c, int ni, nn_op op)
{
    int in[2], t;
    TRY(need_inputs(c, ni, 2, 2));
    if (op == NN_OP_DIV) { /* TF's integer Div floors; ONNX's truncates */
        ffu_dtype dt;
        TRY(tf_attr_type(c, ni, "T", &dt));
        if (dt != FFU_DTYPE_UNDEFINED && dt != FFU_DTYPE_F32 && dt != FFU_DTYPE_F16 &&
            dt != FFU_DTYPE_F64 && dt != FFU_DTYPE_BF16)
            return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "integer division");
    }
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], tf_input(c, ni, 1));
    TRYV(t, emit(c, ni, NULL, op, in, 2, NULL));
    return FFU_OK;
}

/* Clip with scalar bounds (Relu6 is Clip 0..6). */
static int emit_clip(tf_ctx *c, int ni, const char *suffix, int x, float lo, float hi)
{
    int in[3] = {x, -1, -1};
    TRYV(in[1], tf_scalar_f32(c, lo));
    TRYV(in[2], tf_scalar_f32(c, hi));
    return emit(c, ni, suffix, NN_OP_CLIP, in, 3, NULL);
}

static ffu_status tr_relu6(tf_ctx *c, int ni)
{
    int x, t;
    TRY(need_inputs(c, ni, 1, 1));
    TRYV(x, tf_input(c, ni, 0));
    TRYV(t, emit_clip(c, ni, NULL, x, 0, 6));
    return FFU_OK;
}

static ffu_status tr_leaky_relu(tf_ctx *c, int ni)
{
    int x, t, node = -1;
    float alpha;
    TRY(need_inputs(c, ni, 1, 1));
    TRY(tf_attr_float(c, ni, "alpha", 0.2f, &alpha));
    TRYV(x, tf_input(c, ni, 0));
    TRYV(t, emit(c, ni, NULL, NN_OP_LEAKY_RELU, &x, 1, &node));
    TRY(nn_node_set_float(c->g, node, "alpha", alpha));
    return FFU_OK;
}

static ffu_status tr_softmax(tf_ctx *c, int ni)
{
    int x, t, node = -1;
    TRY(need_inputs(c, ni, 1, 1));
    TRYV(x, tf_input(c, ni, 0));
    TRYV(t, emit(c, ni, NULL, is_op(c, ni, "Softmax") ? NN_OP_SOFTMAX : NN_OP_LOG_SOFTMAX, &x, 1,
                 &node));
    TRY(nn_node_set_int(c->g, node, "axis", -1));
    return FFU_OK;
}

static ffu_status tr_squared_difference(tf_ctx *c, int ni)
{
    int in[2], d, t;
    TRY(need_inputs(c, ni, 2, 2));
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], tf_input(c, ni, 1));
    TRYV(d, emit(c, ni, "diff", NN_OP_SUB, in, 2, NULL));
    in[0] = in[1] = d;
    TRYV(t, emit(c, ni, NULL, NN_OP_MUL, in, 2, NULL));
    return FFU_OK;
}

static ffu_status tr_not_equal(tf_ctx *c, int ni)
{
    int in[2], e, t;
    TRY(need_inputs(c, ni, 2, 2));
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], tf_input(c, ni, 1));
    TRYV(e, emit(c, ni, "eq", NN_OP_EQUAL, in, 2, NULL));
    TRYV(t, emit1(c, ni, NULL, NN_OP_NOT, e));
    return FFU_OK;
}

static ffu_status tr_select(tf_ctx *c, int ni)
{
    int in[3], t;
    TRY(need_inputs(c, ni, 3, 3));
    for (int i = 0; i < 3; i++) TRYV(in[i], tf_input(c, ni, i));
    TRYV(t, emit(c, ni, NULL, NN_OP_WHERE, in, 3, NULL));
    return FFU_OK;
}

static ffu_status tr_add_n(tf_ctx *c, int ni)
{
    int n = node_of(c, ni)->ninputs, t;
    TRY(need_inputs(c, ni, 1, 4096));
    int *in = malloc((size_t)n * sizeof(int));
    if (!in) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = FFU_OK;
    for (int i = 0; i < n && st >= 0; i++) st = in[i] = tf_input(c, ni, i);
    if (st >= 0) st = (t = emit(c, ni, NULL, NN_OP_SUM, in, n, NULL)) < 0 ? t : FFU_OK;
    free(in);
    return st;
}

/* Einsum: TF's equation language is numpy's, as ONNX's is (src/nn/ops/einsum.c). */
static ffu_status tr_einsum(tf_ctx *c, int ni)
{
    int in[8], n = node_of(c, ni)->ninputs, node = -1, y;
    char eq[256];
    TRY(need_inputs(c, ni, 1, 8));
    TRY(tf_attr_str(c, ni, "equation", "", eq, sizeof eq));
    for (int i = 0; i < n; i++)
        TRYV(in[i], tf_input(c, ni, i));
    TRYV(y, emit(c, ni, NULL, NN_OP_EINSUM, in, n, &node));
    (void)y;
    return nn_node_set_string(c->g, node, "equation", eq);
}

static ffu_status tr_identity_n(tf_ctx *c, int ni)
{
    for (int i = 0; i < node_of(c, ni)->ninputs; i++) {
        int x, node, t;
        char port[24];
        snprintf(port, sizeof port, "%d", i);
        TRYV(x, tf_input(c, ni, i));
        /* output i of the TF node is "name:i" (output 0 is plain "name") */
        char *name = strdup(tf_name(c, ni, NULL));
        if (!name) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        size_t len = strlen(name) + sizeof port + 2;
        char *full = malloc(len);
        if (!full) {
            free(name);
            return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        }
        if (i) snprintf(full, len, "%s:%s", name, port);
        else snprintf(full, len, "%s", name);
        free(name);
        t = nn_graph_add_tensor(c->g, full, FFU_DTYPE_UNDEFINED, NULL);
        node = t >= 0 ? nn_graph_add_node(c->g, NN_OP_IDENTITY, full, &x, 1, &t, 1) : t;
        free(full);
        if (node < 0) return node;
    }
    return FFU_OK;
}

static ffu_status tr_placeholder(tf_ctx *c, int ni)
{
    ffu_dtype dt;
    nn_shape s;
    TRY(tf_attr_type(c, ni, "dtype", &dt));
    TRY(tf_attr_shape(c, ni, "shape", &s));
    if (dt == FFU_DTYPE_UNDEFINED) dt = FFU_DTYPE_F32;
    int t;
    TRYV(t, nn_graph_add_tensor(c->g, tf_name(c, ni, NULL), dt, &s));
    return nn_graph_mark_input(c->g, t);
}

static ffu_status tr_cast(tf_ctx *c, int ni)
{
    int x, t, node = -1;
    ffu_dtype dt;
    TRY(need_inputs(c, ni, 1, 1));
    TRY(tf_attr_type(c, ni, "DstT", &dt));
    if (dt == FFU_DTYPE_UNDEFINED) return tf_error(c, ni, FFU_ERR_FORMAT, "DstT is missing");
    TRYV(x, tf_input(c, ni, 0));
    TRYV(t, emit(c, ni, NULL, NN_OP_CAST, &x, 1, &node));
    TRY(nn_node_set_int(c->g, node, "to", dt));
    return FFU_OK;
}

/* ---- convolution, matmul, activations --------------------------------------------------- */

typedef struct spatial {
    int nchw;
    int64_t k[2], stride[2], dil[2], pads[4]; /* pads: top, left, bottom, right */
    int same;
} spatial;

/* A 4-value NHWC/NCHW list attribute; batch and channel entries must be 1. */
static ffu_status spatial_list(tf_ctx *c, int ni, const char *key, int nchw, int64_t *hw)
{
    int64_t v[4];
    int n;
    hw[0] = hw[1] = 1;
    TRY(tf_attr_ints(c, ni, key, v, 4, &n));
    if (n < 0) return FFU_OK;
    if (n != 4) return tf_error(c, ni, FFU_ERR_FORMAT, "%s has %d values, expected 4", key, n);
    int h = nchw ? 2 : 1, w = h + 1, ch = nchw ? 1 : 3;
    if (v[0] != 1 || v[ch] != 1)
        return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "%s over batch or channels", key);
    for (int i = 0; i < 2; i++) {
        hw[i] = v[h + i];
        if (hw[i] < 1 || hw[i] > (1 << 20))
            return tf_error(c, ni, FFU_ERR_FORMAT, "%s value %lld is out of range", key,
                            (long long)hw[i]);
    }
    (void)w;
    return FFU_OK;
}

static ffu_status read_spatial(tf_ctx *c, int ni, int pool, spatial *s)
{
    char fmt[16], pad[16];
    memset(s, 0, sizeof *s);
    TRY(tf_attr_str(c, ni, "data_format", "NHWC", fmt, sizeof fmt));
    if (!strcmp(fmt, "NCHW")) s->nchw = 1;
    else if (strcmp(fmt, "NHWC") != 0)
        return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "data_format %s", fmt);
    TRY(spatial_list(c, ni, "strides", s->nchw, s->stride));
    TRY(spatial_list(c, ni, "dilations", s->nchw, s->dil));
    if (pool) TRY(spatial_list(c, ni, "ksize", s->nchw, s->k));
    TRY(tf_attr_str(c, ni, "padding", "VALID", pad, sizeof pad));
    if (!strcmp(pad, "SAME")) {
        s->same = 1;
    } else if (!strcmp(pad, "EXPLICIT")) {
        int64_t v[8];
        int n;
        TRY(tf_attr_ints(c, ni, "explicit_paddings", v, 8, &n));
        if (n != 8) return tf_error(c, ni, FFU_ERR_FORMAT, "explicit_paddings needs 8 values");
        int h = s->nchw ? 2 : 1;
        s->pads[0] = v[2 * h], s->pads[2] = v[2 * h + 1];
        s->pads[1] = v[2 * h + 2], s->pads[3] = v[2 * h + 3];
        for (int i = 0; i < 4; i++)
            if (s->pads[i] < 0 || s->pads[i] > (1 << 20))
                return tf_error(c, ni, FFU_ERR_FORMAT, "explicit padding out of range");
    } else if (strcmp(pad, "VALID") != 0) {
        return tf_error(c, ni, FFU_ERR_FORMAT, "padding '%s'", pad);
    }
    return FFU_OK;
}

static ffu_status set_spatial(tf_ctx *c, int node, const spatial *s, int conv)
{
    nn_graph *g = c->g;
    TRY(nn_node_set_ints(g, node, "kernel_shape", s->k, 2));
    TRY(nn_node_set_ints(g, node, "strides", s->stride, 2));
    if (conv) TRY(nn_node_set_ints(g, node, "dilations", s->dil, 2));
    /* SAME needs the input size; resolve_same_pads makes it explicit after loading */
    if (s->same) return nn_node_set_string(g, node, "auto_pad", "SAME_UPPER");
    return nn_node_set_ints(g, node, "pads", s->pads, 4);
}

/* Emits a TF fused activation on y. nchw: y is the NCHW side of a spatial op, so a
 * PReLU alpha (NHWC-broadcastable) is converted to [1,C,1,1]. */
static int emit_act(tf_ctx *c, int ni, const char *suffix, int y, const char *act, int alpha_in,
                    int nchw)
{
    if (!strcmp(act, "Relu")) return emit1(c, ni, suffix, NN_OP_RELU, y);
    if (!strcmp(act, "Relu6")) return emit_clip(c, ni, suffix, y, 0, 6);
    if (!strcmp(act, "Elu")) return emit1(c, ni, suffix, NN_OP_ELU, y);
    if (!strcmp(act, "Selu")) return emit1(c, ni, suffix, NN_OP_SELU, y);
    if (!strcmp(act, "Sigmoid")) return emit1(c, ni, suffix, NN_OP_SIGMOID, y);
    if (!strcmp(act, "Tanh")) return emit1(c, ni, suffix, NN_OP_TANH, y);
    if (!strcmp(act, "LeakyRelu")) {
        float alpha;
        int node = -1, t;
        TRY(tf_attr_float(c, ni, "leakyrelu_alpha", 0.2f, &alpha));
        TRYV(t, emit(c, ni, suffix, NN_OP_LEAKY_RELU, &y, 1, &node));
        TRY(nn_node_set_float(c->g, node, "alpha", alpha));
        return t;
    }
    if (!strcmp(act, "Prelu")) {
        int in[2] = {y, -1};
        if (alpha_in < 0 || alpha_in >= node_of(c, ni)->ninputs)
            return tf_error(c, ni, FFU_ERR_FORMAT, "Prelu needs an alpha argument");
        if (nchw) {
            const tf_weight *w = tf_input_weight(c, ni, alpha_in);
            if (!w) return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "PReLU alpha must be a constant");
            TRYV(in[1], tf_weight_tensor(c, w, TF_ROLE_NCHW));
        } else {
            TRYV(in[1], tf_input(c, ni, alpha_in));
        }
        return emit(c, ni, suffix, NN_OP_PRELU, in, 2, NULL);
    }
    return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "fused activation '%s'", act);
}

/* Folds a FusedBatchNorm (args scale, offset, mean, variance) into OIHW weights. */
static ffu_status fold_batch_norm(tf_ctx *c, int ni, int first_arg, int *w_t, int *b_t)
{
    float *v[4] = {0};
    int64_t n[4];
    float eps;
    ffu_status st = tf_attr_float(c, ni, "epsilon", 1e-3f, &eps);
    const nn_tensor *w = &c->g->tensors[*w_t];
    int64_t oc = w->shape.d[0], per = oc ? nn_shape_numel(&w->shape) / oc : 0;
    for (int i = 0; i < 4 && st >= 0; i++) {
        st = tf_input_floats(c, ni, first_arg + i, &v[i], &n[i]);
        if (st >= 0 && n[i] != oc)
            st = tf_error(c, ni, FFU_ERR_FORMAT, "batch-norm argument %d has %lld values, the "
                          "filter %lld outputs", i, (long long)n[i], (long long)oc);
    }
    float *nw = NULL, *nb = NULL;
    if (st >= 0) {
        nw = malloc((size_t)(oc * per) * sizeof(float) + 1);
        nb = malloc((size_t)oc * sizeof(float) + 1);
        if (!nw || !nb) st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    if (st >= 0) {
        const float *src = w->data;
        for (int64_t o = 0; o < oc; o++) {
            float s = v[0][o] / sqrtf(v[3][o] + eps);
            for (int64_t k = 0; k < per; k++) nw[o * per + k] = src[o * per + k] * s;
            nb[o] = v[1][o] - v[2][o] * s;
        }
        nn_shape bs = {.rank = 1, .d = {oc}};
        nn_shape ws = w->shape;
        int t = tf_const(c, ni, "w", FFU_DTYPE_F32, &ws, nw);
        if (t >= 0) *w_t = t, t = tf_const(c, ni, "b", FFU_DTYPE_F32, &bs, nb);
        if (t >= 0) *b_t = t;
        else st = t;
    }
    for (int i = 0; i < 4; i++) free(v[i]);
    free(nw);
    free(nb);
    return st;
}

/* Conv2D, _FusedConv2D, DepthwiseConv2dNative, FusedDepthwiseConv2dNative. */
static ffu_status tr_conv(tf_ctx *c, int ni)
{
    const char *op = node_of(c, ni)->op;
    int depthwise = strstr(op, "Depthwise") != NULL;
    int fused = op[0] == '_' || !strncmp(op, "Fused", 5);
    spatial s;
    TRY(need_inputs(c, ni, 2, fused ? 16 : 2));
    TRY(read_spatial(c, ni, 0, &s));
    const tf_weight *fw = tf_input_weight(c, ni, 1);
    if (!fw) return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "the filter must be a constant");
    if (fw->shape.rank != 4)
        return tf_error(c, ni, FFU_ERR_FORMAT, "filter has rank %d, expected 4", fw->shape.rank);
    int w, b = -1, alpha_in = -1;
    TRYV(w, tf_weight_tensor(c, fw, depthwise ? TF_ROLE_DW : TF_ROLE_OIHW));
    s.k[0] = fw->shape.d[0], s.k[1] = fw->shape.d[1];
    const char *act = NULL;
    char fo[4][32];
    if (fused) {
        int nfo;
        int64_t nargs;
        TRY(tf_attr_strs(c, ni, "fused_ops", fo, 4, &nfo));
        TRY(tf_attr_int(c, ni, "num_args", 0, &nargs));
        if (nargs != node_of(c, ni)->ninputs - 2)
            return tf_error(c, ni, FFU_ERR_FORMAT, "num_args %lld but %d inputs", (long long)nargs,
                            node_of(c, ni)->ninputs);
        if (nfo < 1 || nfo > 2)
            return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "%d fused ops", nfo);
        int next = 3;
        if (!strcmp(fo[0], "BiasAdd")) {
            if (nargs < 1) return tf_error(c, ni, FFU_ERR_FORMAT, "BiasAdd without a bias");
            TRYV(b, tf_input(c, ni, 2));
        } else if (!strncmp(fo[0], "FusedBatchNorm", 14)) {
            if (nargs < 4) return tf_error(c, ni, FFU_ERR_FORMAT, "FusedBatchNorm needs 4 args");
            TRY(fold_batch_norm(c, ni, 2, &w, &b));
            next = 6;
        } else {
            return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "fused op '%s'", fo[0]);
        }
        if (nfo == 2) {
            act = fo[1];
            alpha_in = next;
        }
    }
    int x, xt, y, node = -1;
    TRYV(x, tf_input(c, ni, 0));
    xt = x;
    if (!s.nchw) TRYV(xt, emit_transpose(c, ni, "in", x, TO_NCHW, 4));
    int in[3] = {xt, w, b};
    int last = s.nchw && !act; /* the Conv itself is the TF output */
    TRYV(y, emit(c, ni, last ? NULL : "conv", NN_OP_CONV, in, b >= 0 ? 3 : 2, &node));
    TRY(set_spatial(c, node, &s, 1));
    TRY(nn_node_set_int(c->g, node, "group", depthwise ? fw->shape.d[2] : 1));
    if (act) TRYV(y, emit_act(c, ni, s.nchw ? NULL : "act", y, act, alpha_in, 1));
    if (!s.nchw) TRYV(y, emit_transpose(c, ni, NULL, y, TO_NHWC, 4));
    return FFU_OK;
}

/* MatMul and _FusedMatMul -> Gemm (TF's MatMul is 2-D); BatchMatMul -> MatMul. */
static ffu_status tr_matmul(tf_ctx *c, int ni)
{
    int fused = is_op(c, ni, "_FusedMatMul");
    int batch = !strncmp(node_of(c, ni)->op, "BatchMatMul", 11);
    int ta, tb, in[3] = {-1, -1, -1}, y, node = -1;
    TRY(need_inputs(c, ni, 2, fused ? 8 : 2));
    TRY(tf_attr_bool(c, ni, batch ? "adj_x" : "transpose_a", 0, &ta));
    TRY(tf_attr_bool(c, ni, batch ? "adj_y" : "transpose_b", 0, &tb));
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], tf_input(c, ni, 1));
    if (batch) {
        if (ta || tb) return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "adj_x / adj_y");
        TRYV(y, emit(c, ni, NULL, NN_OP_MATMUL, in, 2, NULL));
        return FFU_OK;
    }
    const char *act = NULL;
    char fo[4][32];
    int alpha_in = -1;
    if (fused) {
        int nfo;
        int64_t nargs;
        TRY(tf_attr_strs(c, ni, "fused_ops", fo, 4, &nfo));
        TRY(tf_attr_int(c, ni, "num_args", 0, &nargs));
        if (nargs != node_of(c, ni)->ninputs - 2)
            return tf_error(c, ni, FFU_ERR_FORMAT, "num_args %lld but %d inputs", (long long)nargs,
                            node_of(c, ni)->ninputs);
        if (nfo < 1 || nfo > 2 || strcmp(fo[0], "BiasAdd") != 0 || nargs < 1)
            return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "fused ops other than BiasAdd[+act]");
        TRYV(in[2], tf_input(c, ni, 2));
        if (nfo == 2) act = fo[1], alpha_in = 3;
    }
    TRYV(y, emit(c, ni, act ? "gemm" : NULL, NN_OP_GEMM, in, in[2] >= 0 ? 3 : 2, &node));
    if (ta) TRY(nn_node_set_int(c->g, node, "transA", 1));
    if (tb) TRY(nn_node_set_int(c->g, node, "transB", 1));
    if (act) TRYV(y, emit_act(c, ni, NULL, y, act, alpha_in, 0));
    return FFU_OK;
}

static ffu_status tr_bias_add(tf_ctx *c, int ni)
{
    char fmt[16];
    int in[2], t;
    TRY(need_inputs(c, ni, 2, 2));
    TRY(tf_attr_str(c, ni, "data_format", "NHWC", fmt, sizeof fmt));
    TRYV(in[0], tf_input(c, ni, 0));
    if (!strcmp(fmt, "NCHW")) {
        const tf_weight *w = tf_input_weight(c, ni, 1);
        if (!w) return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "NCHW bias must be a constant");
        TRYV(in[1], tf_weight_tensor(c, w, TF_ROLE_NCHW));
    } else {
        TRYV(in[1], tf_input(c, ni, 1));
    }
    TRYV(t, emit(c, ni, NULL, NN_OP_ADD, in, 2, NULL));
    return FFU_OK;
}

/* FusedBatchNorm (inference) -> Mul + Add with per-channel constants. */
static ffu_status tr_batch_norm(tf_ctx *c, int ni)
{
    int training;
    float eps;
    char fmt[16];
    TRY(need_inputs(c, ni, 5, 5));
    TRY(tf_attr_bool(c, ni, "is_training", 0, &training));
    if (training) return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "is_training = true");
    TRY(tf_attr_float(c, ni, "epsilon", 1e-3f, &eps));
    TRY(tf_attr_str(c, ni, "data_format", "NHWC", fmt, sizeof fmt));
    float *v[4] = {0};
    int64_t n[4];
    ffu_status st = FFU_OK;
    for (int i = 0; i < 4 && st >= 0; i++) {
        st = tf_input_floats(c, ni, 1 + i, &v[i], &n[i]);
        if (st >= 0 && n[i] != n[0]) st = tf_error(c, ni, FFU_ERR_FORMAT, "argument sizes differ");
    }
    if (st >= 0) {
        for (int64_t k = 0; k < n[0]; k++) {
            float s = v[0][k] / sqrtf(v[3][k] + eps);
            v[1][k] -= v[2][k] * s;
            v[0][k] = s;
        }
        nn_shape cs = {.rank = 1, .d = {n[0]}};
        if (!strcmp(fmt, "NCHW")) cs = (nn_shape){.rank = 3, .d = {n[0], 1, 1}};
        int in[2], m, t;
        st = in[0] = tf_input(c, ni, 0);
        if (st >= 0) st = in[1] = tf_const(c, ni, "scale", FFU_DTYPE_F32, &cs, v[0]);
        if (st >= 0) st = m = emit(c, ni, "mul", NN_OP_MUL, in, 2, NULL);
        if (st >= 0) in[0] = m, st = in[1] = tf_const(c, ni, "shift", FFU_DTYPE_F32, &cs, v[1]);
        if (st >= 0) st = t = emit(c, ni, NULL, NN_OP_ADD, in, 2, NULL);
        if (st > 0) st = FFU_OK;
    }
    for (int i = 0; i < 4; i++) free(v[i]);
    return st;
}

/* ---- pooling, resize, depth/space -------------------------------------------------------- */

static ffu_status tr_pool(tf_ctx *c, int ni)
{
    int avg = is_op(c, ni, "AvgPool");
    spatial s;
    int x, y, node = -1;
    TRY(need_inputs(c, ni, 1, 1));
    TRY(read_spatial(c, ni, 1, &s));
    TRYV(x, tf_input(c, ni, 0));
    if (!s.nchw) TRYV(x, emit_transpose(c, ni, "in", x, TO_NCHW, 4));
    TRYV(y, emit(c, ni, s.nchw ? NULL : "pool", avg ? NN_OP_AVERAGE_POOL : NN_OP_MAX_POOL, &x, 1,
                 &node));
    TRY(set_spatial(c, node, &s, 0));
    if (avg) TRY(nn_node_set_int(c->g, node, "count_include_pad", 0));
    if (!s.nchw) TRYV(y, emit_transpose(c, ni, NULL, y, TO_NHWC, 4));
    return FFU_OK;
}

static ffu_status tr_resize(tf_ctx *c, int ni)
{
    int bilinear = is_op(c, ni, "ResizeBilinear");
    int align, half;
    TRY(need_inputs(c, ni, 2, 2));
    TRY(tf_attr_bool(c, ni, "align_corners", 0, &align));
    TRY(tf_attr_bool(c, ni, "half_pixel_centers", 0, &half));
    int x, xt, size, shape, nc, sizes, y, node = -1;
    TRYV(x, tf_input(c, ni, 0));
    TRYV(size, input_i64(c, ni, 1, "size"));
    TRYV(xt, emit_transpose(c, ni, "in", x, TO_NCHW, 4));
    /* sizes = [N, C] of the input ++ [h, w]; folded once the input shape is known */
    TRYV(shape, emit1(c, ni, "shape", NN_OP_SHAPE, xt));
    int64_t zero = 0, two = 2;
    int sl[3] = {shape, -1, -1};
    TRYV(sl[1], const_i64(c, ni, "nc_start", &zero, 1));
    TRYV(sl[2], const_i64(c, ni, "nc_end", &two, 1));
    TRYV(nc, emit(c, ni, "nc", NN_OP_SLICE, sl, 3, NULL));
    int cat[2] = {nc, size};
    TRYV(sizes, emit(c, ni, "sizes", NN_OP_CONCAT, cat, 2, &node));
    TRY(nn_node_set_int(c->g, node, "axis", 0));
    int rin[4] = {xt, -1, -1, sizes};
    TRYV(y, emit(c, ni, "resize", NN_OP_RESIZE, rin, 4, &node));
    const char *ctm = align ? "align_corners" : half ? (bilinear ? "half_pixel" : "tf_half_pixel_for_nn")
                                                     : "asymmetric";
    TRY(nn_node_set_string(c->g, node, "mode", bilinear ? "linear" : "nearest"));
    TRY(nn_node_set_string(c->g, node, "coordinate_transformation_mode", ctm));
    /* TF nearest: floor without align_corners, round (half away from zero) with it */
    if (!bilinear)
        TRY(nn_node_set_string(c->g, node, "nearest_mode", align ? "round_prefer_ceil" : "floor"));
    TRYV(y, emit_transpose(c, ni, NULL, y, TO_NHWC, 4));
    return FFU_OK;
}

static ffu_status tr_depth_space(tf_ctx *c, int ni)
{
    int d2s = is_op(c, ni, "DepthToSpace");
    int64_t bs;
    char fmt[16];
    int x, y, node = -1;
    TRY(need_inputs(c, ni, 1, 1));
    TRY(tf_attr_int(c, ni, "block_size", 0, &bs));
    TRY(tf_attr_str(c, ni, "data_format", "NHWC", fmt, sizeof fmt));
    if (bs < 1 || bs > 4096) return tf_error(c, ni, FFU_ERR_FORMAT, "block_size %lld", (long long)bs);
    int nchw = !strcmp(fmt, "NCHW");
    if (!nchw && strcmp(fmt, "NHWC") != 0)
        return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "data_format %s", fmt);
    TRYV(x, tf_input(c, ni, 0));
    if (!nchw) TRYV(x, emit_transpose(c, ni, "in", x, TO_NCHW, 4));
    TRYV(y, emit(c, ni, nchw ? NULL : "d2s", d2s ? NN_OP_DEPTH_TO_SPACE : NN_OP_SPACE_TO_DEPTH, &x,
                 1, &node));
    TRY(nn_node_set_int(c->g, node, "blocksize", bs));
    /* TF's channel order (row, column, then channel) is ONNX's DCR */
    if (d2s) TRY(nn_node_set_string(c->g, node, "mode", "DCR"));
    if (!nchw) TRYV(y, emit_transpose(c, ni, NULL, y, TO_NHWC, 4));
    return FFU_OK;
}

/* ---- reductions and data movement ----------------------------------------------------------- */

static ffu_status tr_reduce(tf_ctx *c, int ni, nn_op op)
{
    int keep, in[2], t, node = -1;
    TRY(need_inputs(c, ni, 2, 2));
    TRY(tf_attr_bool(c, ni, "keep_dims", 0, &keep));
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], input_i64(c, ni, 1, "axes"));
    TRYV(t, emit(c, ni, NULL, op, in, 2, &node));
    TRY(nn_node_set_int(c->g, node, "keepdims", keep));
    /* TF reduces nothing for an empty axis list; ONNX would reduce everything */
    TRY(nn_node_set_int(c->g, node, "noop_with_empty_axes", 1));
    return FFU_OK;
}

static ffu_status tr_pad(tf_ctx *c, int ni)
{
    int mirror = is_op(c, ni, "MirrorPad"), v2 = is_op(c, ni, "PadV2");
    int64_t p[16], pads[16];
    int n, in[3] = {-1, -1, -1}, t, node = -1;
    TRY(need_inputs(c, ni, 2, v2 ? 3 : 2));
    TRY(tf_input_ints(c, ni, 1, p, 16, &n));
    if (n % 2) return tf_error(c, ni, FFU_ERR_FORMAT, "paddings has %d values", n);
    int r = n / 2;
    for (int i = 0; i < r; i++) pads[i] = p[2 * i], pads[r + i] = p[2 * i + 1];
    const char *mode = "constant";
    if (mirror) {
        char m[16];
        TRY(tf_attr_str(c, ni, "mode", "REFLECT", m, sizeof m));
        if (strcmp(m, "REFLECT") != 0)
            return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "MirrorPad mode %s", m);
        mode = "reflect";
    }
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], const_i64(c, ni, "pads", pads, n));
    if (v2) TRYV(in[2], tf_input(c, ni, 2));
    TRYV(t, emit(c, ni, NULL, NN_OP_PAD, in, v2 ? 3 : 2, &node));
    TRY(nn_node_set_string(c->g, node, "mode", mode));
    return FFU_OK;
}

static ffu_status tr_concat(tf_ctx *c, int ni)
{
    int v2 = is_op(c, ni, "ConcatV2");
    int n = node_of(c, ni)->ninputs - 1, t, node = -1;
    int64_t axis;
    int cnt;
    TRY(need_inputs(c, ni, 2, 4096));
    TRY(tf_input_ints(c, ni, v2 ? n : 0, &axis, 1, &cnt));
    if (cnt != 1) return tf_error(c, ni, FFU_ERR_FORMAT, "axis must be one value");
    int *in = malloc((size_t)n * sizeof(int));
    if (!in) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = FFU_OK;
    for (int i = 0; i < n && st >= 0; i++) st = in[i] = tf_input(c, ni, v2 ? i : i + 1);
    if (st >= 0) st = t = emit(c, ni, NULL, NN_OP_CONCAT, in, n, &node);
    if (st >= 0) st = nn_node_set_int(c->g, node, "axis", axis);
    free(in);
    return st < 0 ? st : FFU_OK;
}

static ffu_status tr_reshape(tf_ctx *c, int ni)
{
    int in[2], t, node = -1;
    TRY(need_inputs(c, ni, 2, 2));
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], input_i64(c, ni, 1, "shape"));
    TRYV(t, emit(c, ni, NULL, NN_OP_RESHAPE, in, 2, &node));
    /* a 0 in a TF shape is an empty dimension, not ONNX's "copy this dim" */
    const nn_tensor *s = &c->g->tensors[in[1]];
    if (s->flags & NN_T_CONST)
        for (int64_t i = 0; i < nn_shape_numel(&s->shape); i++)
            if (((const int64_t *)s->data)[i] == 0) {
                TRY(nn_node_set_int(c->g, node, "allowzero", 1));
                break;
            }
    return FFU_OK;
}

static ffu_status tr_squeeze(tf_ctx *c, int ni)
{
    int64_t axes[FFU_NN_MAX_RANK];
    int n, in[2] = {-1, -1}, t;
    TRY(need_inputs(c, ni, 1, 1));
    TRY(tf_attr_ints(c, ni, "squeeze_dims", axes, FFU_NN_MAX_RANK, &n));
    if (n < 0) TRY(tf_attr_ints(c, ni, "axis", axes, FFU_NN_MAX_RANK, &n));
    TRYV(in[0], tf_input(c, ni, 0));
    if (n > 0) TRYV(in[1], const_i64(c, ni, "axes", axes, n));
    TRYV(t, emit(c, ni, NULL, NN_OP_SQUEEZE, in, n > 0 ? 2 : 1, NULL));
    return FFU_OK;
}

static ffu_status tr_expand_dims(tf_ctx *c, int ni)
{
    int in[2], t;
    TRY(need_inputs(c, ni, 2, 2));
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], input_i64(c, ni, 1, "axes"));
    TRYV(t, emit(c, ni, NULL, NN_OP_UNSQUEEZE, in, 2, NULL));
    return FFU_OK;
}

static ffu_status tr_transpose(tf_ctx *c, int ni)
{
    int64_t perm[FFU_NN_MAX_RANK];
    int n, x, t, node = -1;
    TRY(need_inputs(c, ni, 2, 2));
    TRY(tf_input_ints(c, ni, 1, perm, FFU_NN_MAX_RANK, &n));
    TRYV(x, tf_input(c, ni, 0));
    TRYV(t, emit(c, ni, NULL, NN_OP_TRANSPOSE, &x, 1, &node));
    TRY(nn_node_set_ints(c->g, node, "perm", perm, n));
    return FFU_OK;
}

static ffu_status tr_strided_slice(tf_ctx *c, int ni)
{
    int64_t b[FFU_NN_MAX_RANK], e[FFU_NN_MAX_RANK], s[FFU_NN_MAX_RANK];
    int64_t starts[FFU_NN_MAX_RANK], ends[FFU_NN_MAX_RANK], axes[FFU_NN_MAX_RANK],
        steps[FFU_NN_MAX_RANK], squeeze[FFU_NN_MAX_RANK];
    int nb, ne, ns, nsq = 0;
    int64_t bm, em, elm, nam, sam;
    TRY(need_inputs(c, ni, 4, 4));
    TRY(tf_input_ints(c, ni, 1, b, FFU_NN_MAX_RANK, &nb));
    TRY(tf_input_ints(c, ni, 2, e, FFU_NN_MAX_RANK, &ne));
    TRY(tf_input_ints(c, ni, 3, s, FFU_NN_MAX_RANK, &ns));
    TRY(tf_attr_int(c, ni, "begin_mask", 0, &bm));
    TRY(tf_attr_int(c, ni, "end_mask", 0, &em));
    TRY(tf_attr_int(c, ni, "ellipsis_mask", 0, &elm));
    TRY(tf_attr_int(c, ni, "new_axis_mask", 0, &nam));
    TRY(tf_attr_int(c, ni, "shrink_axis_mask", 0, &sam));
    if (nb != ne || nb != ns || nb < 1)
        return tf_error(c, ni, FFU_ERR_FORMAT, "begin/end/strides lengths %d/%d/%d", nb, ne, ns);
    const char *why = nn_tf_strided_slice(b, e, s, nb, bm, em, sam, elm | nam, starts, ends,
                                          axes, steps, squeeze, &nsq);
    if (why)
        return tf_error(c, ni, strcmp(why, "stride 0") ? FFU_ERR_UNSUPPORTED : FFU_ERR_FORMAT,
                        "%s", why);
    int in[5], y, t;
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], const_i64(c, ni, "starts", starts, nb));
    TRYV(in[2], const_i64(c, ni, "ends", ends, nb));
    TRYV(in[3], const_i64(c, ni, "axes", axes, nb));
    TRYV(in[4], const_i64(c, ni, "steps", steps, nb));
    TRYV(y, emit(c, ni, nsq ? "slice" : NULL, NN_OP_SLICE, in, 5, NULL));
    if (nsq) {
        int sq[2] = {y, -1};
        TRYV(sq[1], const_i64(c, ni, "squeeze", squeeze, nsq));
        TRYV(t, emit(c, ni, NULL, NN_OP_SQUEEZE, sq, 2, NULL));
    }
    return FFU_OK;
}

static ffu_status tr_slice(tf_ctx *c, int ni)
{
    int64_t b[FFU_NN_MAX_RANK], sz[FFU_NN_MAX_RANK], ends[FFU_NN_MAX_RANK];
    int nb, ns, in[3], t;
    TRY(need_inputs(c, ni, 3, 3));
    TRY(tf_input_ints(c, ni, 1, b, FFU_NN_MAX_RANK, &nb));
    TRY(tf_input_ints(c, ni, 2, sz, FFU_NN_MAX_RANK, &ns));
    if (nb != ns) return tf_error(c, ni, FFU_ERR_FORMAT, "begin and size lengths differ");
    for (int i = 0; i < nb; i++) {
        if (b[i] < 0 || sz[i] < -1) return tf_error(c, ni, FFU_ERR_FORMAT, "bad begin or size");
        ends[i] = sz[i] == -1 ? INT64_MAX : b[i] + sz[i];
    }
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], const_i64(c, ni, "starts", b, nb));
    TRYV(in[2], const_i64(c, ni, "ends", ends, nb));
    TRYV(t, emit(c, ni, NULL, NN_OP_SLICE, in, 3, NULL));
    return FFU_OK;
}

static ffu_status tr_pack(tf_ctx *c, int ni)
{
    int n = node_of(c, ni)->ninputs, t, node, ax;
    int64_t axis;
    TRY(need_inputs(c, ni, 1, 4096));
    TRY(tf_attr_int(c, ni, "axis", 0, &axis));
    if (axis < -FFU_NN_MAX_RANK || axis > FFU_NN_MAX_RANK)
        return tf_error(c, ni, FFU_ERR_FORMAT, "axis %lld", (long long)axis);
    TRYV(ax, const_i64(c, ni, "axis", &axis, 1));
    if (n == 1) {
        int in[2] = {-1, ax};
        TRYV(in[0], tf_input(c, ni, 0));
        TRYV(t, emit(c, ni, NULL, NN_OP_UNSQUEEZE, in, 2, NULL));
        return FFU_OK;
    }
    int *parts = malloc((size_t)n * sizeof(int));
    if (!parts) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = FFU_OK;
    for (int i = 0; i < n && st >= 0; i++) {
        char sfx[24];
        snprintf(sfx, sizeof sfx, "u%d", i);
        int in[2] = {-1, ax};
        st = in[0] = tf_input(c, ni, i);
        if (st >= 0) st = parts[i] = emit(c, ni, sfx, NN_OP_UNSQUEEZE, in, 2, NULL);
    }
    if (st >= 0) st = t = emit(c, ni, NULL, NN_OP_CONCAT, parts, n, &node);
    if (st >= 0) st = nn_node_set_int(c->g, node, "axis", axis);
    free(parts);
    return st < 0 ? st : FFU_OK;
}

static ffu_status tr_shape(tf_ctx *c, int ni)
{
    ffu_dtype dt;
    int x, y, node = -1;
    TRY(need_inputs(c, ni, 1, 1));
    TRY(tf_attr_type(c, ni, "out_type", &dt));
    if (dt == FFU_DTYPE_UNDEFINED) dt = FFU_DTYPE_I32;
    TRYV(x, tf_input(c, ni, 0));
    if (dt == FFU_DTYPE_I64) {
        TRYV(y, emit1(c, ni, NULL, NN_OP_SHAPE, x));
        return FFU_OK;
    }
    TRYV(y, emit1(c, ni, "i64", NN_OP_SHAPE, x));
    TRYV(y, emit(c, ni, NULL, NN_OP_CAST, &y, 1, &node));
    TRY(nn_node_set_int(c->g, node, "to", dt));
    return FFU_OK;
}

static ffu_status tr_gather(tf_ctx *c, int ni)
{
    int v2 = is_op(c, ni, "GatherV2");
    int64_t axis = 0, bd;
    int cnt, in[2], t, node = -1;
    TRY(need_inputs(c, ni, v2 ? 3 : 2, v2 ? 3 : 2));
    TRY(tf_attr_int(c, ni, "batch_dims", 0, &bd));
    if (bd) return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "batch_dims %lld", (long long)bd);
    if (v2) {
        TRY(tf_input_ints(c, ni, 2, &axis, 1, &cnt));
        if (cnt != 1) return tf_error(c, ni, FFU_ERR_FORMAT, "axis must be one value");
    }
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], tf_input(c, ni, 1));
    TRYV(t, emit(c, ni, NULL, NN_OP_GATHER, in, 2, &node));
    TRY(nn_node_set_int(c->g, node, "axis", axis));
    return FFU_OK;
}

static ffu_status tr_fill(tf_ctx *c, int ni)
{
    int in[2], t;
    TRY(need_inputs(c, ni, 2, 2));
    TRYV(in[0], tf_input(c, ni, 1)); /* value, broadcast to dims */
    TRYV(in[1], input_i64(c, ni, 0, "dims"));
    TRYV(t, emit(c, ni, NULL, NN_OP_EXPAND, in, 2, NULL));
    return FFU_OK;
}

static ffu_status tr_tile(tf_ctx *c, int ni)
{
    int in[2], t;
    TRY(need_inputs(c, ni, 2, 2));
    TRYV(in[0], tf_input(c, ni, 0));
    TRYV(in[1], input_i64(c, ni, 1, "repeats"));
    TRYV(t, emit(c, ni, NULL, NN_OP_TILE, in, 2, NULL));
    return FFU_OK;
}

static ffu_status tr_argmax(tf_ctx *c, int ni)
{
    int64_t axis;
    int cnt, x, y, node = -1;
    ffu_dtype dt;
    TRY(need_inputs(c, ni, 2, 2));
    TRY(tf_input_ints(c, ni, 1, &axis, 1, &cnt));
    if (cnt != 1) return tf_error(c, ni, FFU_ERR_FORMAT, "dimension must be one value");
    TRY(tf_attr_type(c, ni, "output_type", &dt));
    if (dt == FFU_DTYPE_UNDEFINED) dt = FFU_DTYPE_I64;
    TRYV(x, tf_input(c, ni, 0));
    int cast = dt != FFU_DTYPE_I64;
    TRYV(y, emit(c, ni, cast ? "i64" : NULL, is_op(c, ni, "ArgMax") ? NN_OP_ARGMAX : NN_OP_ARGMIN,
                 &x, 1, &node));
    TRY(nn_node_set_int(c->g, node, "axis", axis));
    TRY(nn_node_set_int(c->g, node, "keepdims", 0));
    if (cast) {
        TRYV(y, emit(c, ni, NULL, NN_OP_CAST, &y, 1, &node));
        TRY(nn_node_set_int(c->g, node, "to", dt));
    }
    return FFU_OK;
}

/* ---- dispatch ---------------------------------------------------------------------------------- */

typedef ffu_status (*tr_fn)(tf_ctx *c, int ni);

static const struct {
    const char *tf;
    tr_fn fn;
} special[] = {
    {"Placeholder", tr_placeholder},
    {"Conv2D", tr_conv},
    {"_FusedConv2D", tr_conv},
    {"DepthwiseConv2dNative", tr_conv},
    {"FusedDepthwiseConv2dNative", tr_conv},
    {"MatMul", tr_matmul},
    {"_FusedMatMul", tr_matmul},
    {"BatchMatMul", tr_matmul},
    {"BatchMatMulV2", tr_matmul},
    {"BiasAdd", tr_bias_add},
    {"FusedBatchNorm", tr_batch_norm},
    {"FusedBatchNormV2", tr_batch_norm},
    {"FusedBatchNormV3", tr_batch_norm},
    {"Relu6", tr_relu6},
    {"LeakyRelu", tr_leaky_relu},
    {"Softmax", tr_softmax},
    {"LogSoftmax", tr_softmax},
    {"SquaredDifference", tr_squared_difference},
    {"NotEqual", tr_not_equal},
    {"Select", tr_select},
    {"SelectV2", tr_select},
    {"AddN", tr_add_n},
    {"Einsum", tr_einsum},
    {"IdentityN", tr_identity_n},
    {"Cast", tr_cast},
    {"MaxPool", tr_pool},
    {"AvgPool", tr_pool},
    {"ResizeBilinear", tr_resize},
    {"ResizeNearestNeighbor", tr_resize},
    {"DepthToSpace", tr_depth_space},
    {"SpaceToDepth", tr_depth_space},
    {"Pad", tr_pad},
    {"PadV2", tr_pad},
    {"MirrorPad", tr_pad},
    {"ConcatV2", tr_concat},
    {"Concat", tr_concat},
    {"Reshape", tr_reshape},
    {"Squeeze", tr_squeeze},
    {"ExpandDims", tr_expand_dims},
    {"Transpose", tr_transpose},
    {"StridedSlice", tr_strided_slice},
    {"Slice", tr_slice},
    {"Pack", tr_pack},
    {"Shape", tr_shape},
    {"Gather", tr_gather},
    {"GatherV2", tr_gather},
    {"Fill", tr_fill},
    {"Tile", tr_tile},
    {"ArgMax", tr_argmax},
    {"ArgMin", tr_argmax},
};

static const struct {
    const char *tf;
    nn_op op;
} reduce_ops[] = {
    {"Mean", NN_OP_REDUCE_MEAN}, {"Sum", NN_OP_REDUCE_SUM}, {"Max", NN_OP_REDUCE_MAX},
    {"Min", NN_OP_REDUCE_MIN},   {"Prod", NN_OP_REDUCE_PROD},
};

ffu_status tf_translate(tf_ctx *c, int ni)
{
    const char *op = node_of(c, ni)->op;
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        if (!strcmp(op, special[i].tf)) return special[i].fn(c, ni);
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (!strcmp(op, unary_ops[i].tf)) return tr_unary(c, ni, unary_ops[i].op);
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
        if (!strcmp(op, binary_ops[i].tf)) return tr_binary(c, ni, binary_ops[i].op);
    for (size_t i = 0; i < sizeof reduce_ops / sizeof reduce_ops[0]; i++)
        if (!strcmp(op, reduce_ops[i].tf)) return tr_reduce(c, ni, reduce_ops[i].op);
    return ffu_error_set(FFU_ERR_UNSUPPORTED, "TF.js op '%.60s' (node '%.200s') is not supported",
                         op, node_of(c, ni)->name);
}
