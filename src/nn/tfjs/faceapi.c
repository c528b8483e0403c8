/* face-api.js weight files: a TF.js weights manifest (a JSON list of weight groups)
 * and its .bin, with no topology, because face-api.js writes its networks in
 * JavaScript. This file knows the topology of the one we use, the face recognition
 * network (`face_recognition_model`: dlib's 29-layer ResNet, 150x150 RGB in, a
 * 128-d descriptor out), and builds it in the IR from the weights the manifest names.
 * The weights are read and decoded by the TF.js loader's own code (uint8 quantisation
 * included), so only the wiring lives here.
 *
 * The network, as published with dlib (dnn_face_recognition_ex.cpp) and face-api.js:
 *   input 0..255 RGB, minus the mean colour (122.782, 117.001, 104.298), over 256;
 *   conv 7x7/2 (valid) 32, max-pool 3x3/2 (valid);
 *   3 residual blocks of 32; a down block to 64 and 3 of 64; down to 128 and 2 of 128;
 *   down to 256 and 2 of 256; a last down block of 256;
 *   mean over H and W; a 256x128 matrix.
 * Every "conv" is a convolution with bias, then a per-channel scale and shift (dlib's
 * affine layer), then ReLU (except the second of a block, which is added first).
 * A block: conv 3x3 -> conv 3x3 (no ReLU) -> + input -> ReLU. A down block: its first
 * conv is 3x3/2 valid; the shortcut is a 2x2/2 average pool of the input with zero
 * channels appended up to the block's width; where the pooled shortcut is larger than
 * the block's output (odd sizes), the output gets zero rows and columns at the bottom
 * and right (dlib's add_prev does the same). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfjs_internal.h"

#define FA_INPUT_SIZE 150

typedef struct fa_builder {
    tf_ctx *c;
    int x;       /* current tensor (NCHW) */
    int64_t ch;  /* its channels */
    int64_t hw;  /* its height = width */
    int serial;  /* for unique helper names */
} fa_builder;

static ffu_status fa_error(const char *problem, const char *what)
{
    return ffu_error_set(FFU_ERR_FORMAT, "face-api.js weights: %s '%.200s'", problem, what);
}

/* One node with one new output, both named prefix#Op<serial>; *node gets the node index
 * (may be NULL). */
static int fa_node(fa_builder *b, const char *prefix, nn_op op, const int *in, int nin,
                   int *node)
{
    char name[256];
    snprintf(name, sizeof name, "%.200s#%s%d", prefix, nn_op_name(op), b->serial++);
    int t = nn_graph_add_tensor(b->c->g, name, FFU_DTYPE_F32, NULL);
    if (t < 0) return t;
    int k = nn_graph_add_node(b->c->g, op, name, in, nin, &t, 1);
    if (k < 0) return k;
    if (node) *node = k;
    return t;
}

static int fa_const_i64(fa_builder *b, const char *prefix, const int64_t *v, int n)
{
    char name[256];
    snprintf(name, sizeof name, "%.200s#i64_%d", prefix, b->serial++);
    nn_shape s = {.rank = 1, .d = {n}};
    return nn_graph_add_const(b->c->g, name, FFU_DTYPE_I64, &s, v, (size_t)n * 8, NN_COPY);
}

/* The weight "prefix/suffix", checked to be rank 1 of n values (n < 0: any rank). */
static const tf_weight *fa_weight(fa_builder *b, const char *prefix, const char *suffix,
                                  int64_t n)
{
    char name[256];
    snprintf(name, sizeof name, "%.200s/%s", prefix, suffix);
    const tf_weight *w = tf_find_weight(b->c, name);
    if (!w) {
        fa_error("no weight", name);
        return NULL;
    }
    if (w->dtype != FFU_DTYPE_F32 || (n >= 0 && (w->shape.rank != 1 || w->shape.d[0] != n))) {
        fa_error("unexpected type or shape of", name);
        return NULL;
    }
    return w;
}

/* conv(k x k, stride, valid or same) + bias, scale, shift, optional ReLU. Reads
 * prefix/conv/filters [k,k,C,N], prefix/conv/bias, prefix/scale/weights, .../biases. */
static ffu_status fa_conv(fa_builder *b, const char *prefix, int stride, int relu)
{
    char p[256];
    snprintf(p, sizeof p, "%.200s/conv", prefix);
    const tf_weight *f = fa_weight(b, p, "filters", -1);
    if (!f) return FFU_ERR_FORMAT;
    if (f->shape.rank != 4 || f->shape.d[0] != f->shape.d[1] || f->shape.d[0] < 1 ||
        f->shape.d[0] > 7 || !(f->shape.d[0] & 1) || f->shape.d[2] != b->ch ||
        f->shape.d[3] < 1 || f->shape.d[3] > 4096)
        return fa_error("filters do not fit the network at", prefix);
    int64_t k = f->shape.d[0], n = f->shape.d[3];
    const tf_weight *bias = fa_weight(b, p, "bias", n);
    snprintf(p, sizeof p, "%.200s/scale", prefix);
    const tf_weight *sw = bias ? fa_weight(b, p, "weights", n) : NULL;
    const tf_weight *sb = sw ? fa_weight(b, p, "biases", n) : NULL;
    if (!sb) return FFU_ERR_FORMAT;
    int in[3], node = -1, t;
    in[0] = b->x;
    if ((in[1] = tf_weight_tensor(b->c, f, TF_ROLE_OIHW)) < 0) return in[1];
    if ((in[2] = tf_weight_tensor(b->c, bias, TF_ROLE_RAW)) < 0) return in[2];
    if ((t = fa_node(b, prefix, NN_OP_CONV, in, 3, &node)) < 0) return t;
    int64_t pad = stride == 1 ? k / 2 : 0; /* "same" at stride 1, "valid" at stride 2 */
    if (b->hw + 2 * pad < k)
        return fa_error("the kernel is larger than the feature map at", prefix);
    int64_t ks[2] = {k, k}, st[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    ffu_status s;
    if ((s = nn_node_set_ints(b->c->g, node, "kernel_shape", ks, 2)) < 0 ||
        (s = nn_node_set_ints(b->c->g, node, "strides", st, 2)) < 0 ||
        (s = nn_node_set_ints(b->c->g, node, "pads", pads, 4)) < 0)
        return s;
    in[0] = t;
    if ((in[1] = tf_weight_tensor(b->c, sw, TF_ROLE_NCHW)) < 0) return in[1];
    if ((t = fa_node(b, prefix, NN_OP_MUL, in, 2, NULL)) < 0) return t;
    in[0] = t;
    if ((in[1] = tf_weight_tensor(b->c, sb, TF_ROLE_NCHW)) < 0) return in[1];
    if ((t = fa_node(b, prefix, NN_OP_ADD, in, 2, NULL)) < 0) return t;
    if (relu && (t = fa_node(b, prefix, NN_OP_RELU, &t, 1, NULL)) < 0) return t;
    b->x = t;
    b->ch = n;
    b->hw = (b->hw + 2 * pad - k) / stride + 1;
    return FFU_OK;
}

/* 2-D pooling, no padding. */
static ffu_status fa_pool(fa_builder *b, const char *prefix, nn_op op, int k, int stride)
{
    int node = -1, t = fa_node(b, prefix, op, &b->x, 1, &node);
    if (t < 0) return t;
    int64_t ks[2] = {k, k}, st[2] = {stride, stride};
    ffu_status s;
    if ((s = nn_node_set_ints(b->c->g, node, "kernel_shape", ks, 2)) < 0 ||
        (s = nn_node_set_ints(b->c->g, node, "strides", st, 2)) < 0)
        return s;
    if (b->hw < k)
        return fa_error("the pooling window is larger than the feature map at", prefix);
    b->x = t;
    b->hw = (b->hw - k) / stride + 1;
    return FFU_OK;
}

/* Zero padding at the end of the channel and spatial axes (NCHW). */
static int fa_pad_end(fa_builder *b, const char *prefix, int x, int64_t dc, int64_t dhw)
{
    int64_t pads[8] = {0, 0, 0, 0, 0, dc, dhw, dhw};
    int in[2] = {x, fa_const_i64(b, prefix, pads, 8)}, node = -1, t;
    if (in[1] < 0) return in[1];
    if ((t = fa_node(b, prefix, NN_OP_PAD, in, 2, &node)) < 0) return t;
    ffu_status s = nn_node_set_string(b->c->g, node, "mode", "constant");
    return s < 0 ? s : t;
}

static ffu_status fa_residual(fa_builder *b, const char *prefix, int down)
{
    char p[256];
    int shortcut = b->x, t;
    int64_t ch = b->ch, hw = b->hw;
    ffu_status s;
    snprintf(p, sizeof p, "%.200s/conv1", prefix);
    if ((s = fa_conv(b, p, down ? 2 : 1, 1)) < 0) return s;
    snprintf(p, sizeof p, "%.200s/conv2", prefix);
    if ((s = fa_conv(b, p, 1, 0)) < 0) return s;
    int out = b->x;
    if (down) {
        fa_builder pb = *b; /* the shortcut: pool the block's input */
        pb.x = shortcut, pb.ch = ch, pb.hw = hw;
        if ((s = fa_pool(&pb, prefix, NN_OP_AVERAGE_POOL, 2, 2)) < 0) return s;
        b->serial = pb.serial;
        if (pb.hw < b->hw || pb.hw > b->hw + 1 || ch > b->ch)
            return fa_error("block shapes do not fit at", prefix);
        shortcut = pb.x;
        if (b->ch > ch && (shortcut = fa_pad_end(b, prefix, shortcut, b->ch - ch, 0)) < 0)
            return shortcut;
        if (pb.hw > b->hw && (out = fa_pad_end(b, prefix, out, 0, pb.hw - b->hw)) < 0)
            return out;
        b->hw = pb.hw;
    } else if (b->ch != ch || b->hw != hw) {
        return fa_error("block shapes do not fit at", prefix);
    }
    int in[2] = {out, shortcut};
    if ((t = fa_node(b, prefix, NN_OP_ADD, in, 2, NULL)) < 0) return t;
    if ((t = fa_node(b, prefix, NN_OP_RELU, &t, 1, NULL)) < 0) return t;
    b->x = t;
    return FFU_OK;
}

static ffu_status build_recognition(tf_ctx *c)
{
    nn_graph *g = c->g;
    fa_builder b = {.c = c, .ch = 3, .hw = FA_INPUT_SIZE};
    ffu_status s;
    int t, node = -1;
    /* input: N x 150 x 150 x 3, RGB 0..255, NHWC like every TF.js model */
    nn_shape is = {.rank = 4, .d = {-1, FA_INPUT_SIZE, FA_INPUT_SIZE, 3}};
    int x = nn_graph_add_tensor(g, "input", FFU_DTYPE_F32, &is);
    if (x < 0) return x;
    if ((s = nn_graph_mark_input(g, x)) < 0) return s;
    static const int64_t to_nchw[4] = {0, 3, 1, 2};
    if ((t = fa_node(&b, "input", NN_OP_TRANSPOSE, &x, 1, &node)) < 0) return t;
    if ((s = nn_node_set_ints(g, node, "perm", to_nchw, 4)) < 0) return s;
    static const float mean[3] = {122.782f, 117.001f, 104.298f}, inv256 = 1.0f / 256.0f;
    nn_shape ms = {.rank = 4, .d = {1, 3, 1, 1}}, ss = {.rank = 0};
    int in[2] = {t, nn_graph_add_const(g, "input#mean", FFU_DTYPE_F32, &ms, mean, sizeof mean,
                                       NN_COPY)};
    if (in[1] < 0) return in[1];
    if ((t = fa_node(&b, "input", NN_OP_SUB, in, 2, NULL)) < 0) return t;
    in[0] = t;
    if ((in[1] = nn_graph_add_const(g, "input#scale", FFU_DTYPE_F32, &ss, &inv256, 4,
                                    NN_COPY)) < 0)
        return in[1];
    if ((b.x = fa_node(&b, "input", NN_OP_MUL, in, 2, NULL)) < 0) return b.x;

    if ((s = fa_conv(&b, "conv32_down", 2, 1)) < 0) return s;
    if ((s = fa_pool(&b, "conv32_down", NN_OP_MAX_POOL, 3, 2)) < 0) return s;
    static const struct {
        const char *name;
        int down;
    } blocks[] = {
        {"conv32_1", 0},    {"conv32_2", 0},  {"conv32_3", 0},     {"conv64_down", 1},
        {"conv64_1", 0},    {"conv64_2", 0},  {"conv64_3", 0},     {"conv128_down", 1},
        {"conv128_1", 0},   {"conv128_2", 0}, {"conv256_down", 1}, {"conv256_1", 0},
        {"conv256_2", 0},   {"conv256_down_out", 1},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if ((s = fa_residual(&b, blocks[i].name, blocks[i].down)) < 0) return s;

    /* mean over H, W -> N x C; times fc [C, D] */
    static const int64_t hw_axes[2] = {2, 3};
    in[0] = b.x;
    if ((in[1] = fa_const_i64(&b, "pool", hw_axes, 2)) < 0) return in[1];
    if ((t = fa_node(&b, "pool", NN_OP_REDUCE_MEAN, in, 2, &node)) < 0) return t;
    if ((s = nn_node_set_int(g, node, "keepdims", 0)) < 0) return s;
    const tf_weight *fc = tf_find_weight(c, "fc");
    if (!fc || fc->dtype != FFU_DTYPE_F32 || fc->shape.rank != 2 || fc->shape.d[0] != b.ch ||
        fc->shape.d[1] < 1)
        return fa_error("missing or misshapen weight", "fc");
    in[0] = t;
    if ((in[1] = tf_weight_tensor(c, fc, TF_ROLE_RAW)) < 0) return in[1];
    int y = nn_graph_add_tensor(g, "descriptor", FFU_DTYPE_F32, NULL);
    if (y < 0) return y;
    if ((node = nn_graph_add_node(g, NN_OP_MATMUL, "fc", in, 2, &y, 1)) < 0) return node;
    return nn_graph_mark_output(g, y);
}

ffu_status nn_faceapi_load(const char *json, size_t json_len, const void *weights,
                           size_t weights_len, nn_graph **out)
{
    *out = NULL;
    if (!json || (!weights && weights_len))
        return ffu_error_set(FFU_ERR_INVALID, "nn_faceapi_load: NULL buffer");
    ffu_json *root = NULL;
    tf_ctx c = {0};
    ffu_status st = ffu_json_parse(json, json_len, &root);
    if (st < 0) goto done;
    if (ffu_json_typeof(root) != FFU_JSON_ARRAY) {
        st = ffu_error_set(FFU_ERR_FORMAT, "a face-api.js weights manifest is a JSON list");
        goto done;
    }
    if ((st = tf_parse_manifest(&c, root, weights, weights_len)) < 0) goto done;
    if (!tf_find_weight(&c, "conv32_down/conv/filters")) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED,
                           "face-api.js weights of a network facefuse does not know (known: "
                           "face_recognition_model)");
        goto done;
    }
    if ((st = nn_graph_create(&c.g)) < 0) goto done;
    c.g->format = "tfjs";
    c.g->producer = "face-api.js face_recognition_model";
    if ((st = build_recognition(&c)) < 0) goto done;
    *out = c.g;
    c.g = NULL;
    st = FFU_OK;
done:
    nn_graph_destroy(c.g);
    free(c.weights);
    free(c.nbuf);
    free(c.wbuf);
    ffu_json_free(root);
    return st;
}
