/* TFLite -> IR (tflite.h). One pass over the first subgraph's operators, which TFLite
 * stores in execution order: each operator's inputs must be graph inputs, constants
 * (a tensor whose buffer holds data, added on first use) or outputs of earlier
 * operators. Every IR tensor that stands for a TFLite tensor has its name; helper
 * tensors are "name#suffix". Schema facts (field numbers, operator codes, option
 * tables) are TensorFlow's schema.fbs; docs/NN_TFLITE.md lists the mapping. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tf_slice.h"
#include "flatbuf.h"
#include "tflite.h"

#define TRY(x)                                                                                 \
    do {                                                                                       \
        ffu_status st_ = (x);                                                                  \
        if (st_ < 0) return st_;                                                               \
    } while (0)
#define TRYV(v, x)                                                                             \
    do {                                                                                       \
        v = (x);                                                                               \
        if (v < 0) return v;                                                                   \
    } while (0)

/* ---- schema ------------------------------------------------------------------------- */

enum { M_VERSION = 0, M_OPCODES = 1, M_SUBGRAPHS = 2, M_DESCRIPTION = 3, M_BUFFERS = 4 };
enum { OC_DEPRECATED = 0, OC_CUSTOM = 1, OC_BUILTIN = 3 };
enum { SG_TENSORS = 0, SG_INPUTS = 1, SG_OUTPUTS = 2, SG_OPS = 3 };
enum { T_SHAPE = 0, T_TYPE = 1, T_BUFFER = 2, T_NAME = 3, T_QUANT = 4, T_SPARSITY = 6,
       T_SIGNATURE = 7 };
enum { Q_SCALE = 2 };
enum { OP_OPCODE = 0, OP_INPUTS = 1, OP_OUTPUTS = 2, OP_OPTIONS = 4 };
enum { BUF_DATA = 0, BUF_OFFSET = 1 };

enum {
    ADD = 0, AVERAGE_POOL_2D = 1, CONCATENATION = 2, CONV_2D = 3, DEPTHWISE_CONV_2D = 4,
    DEQUANTIZE = 6, FULLY_CONNECTED = 9, LOGISTIC = 14, MAX_POOL_2D = 17, MUL = 18, RELU = 19,
    RELU6 = 21, RESHAPE = 22, SOFTMAX = 25, TANH = 28, CUSTOM = 32, PAD = 34, MEAN = 40,
    SUB = 41, DIV = 42, STRIDED_SLICE = 45, EXP = 47, CAST = 53, PRELU = 54, LESS = 58, NEG = 59,
    PADV2 = 60, GREATER = 61, GREATER_EQUAL = 62, LESS_EQUAL = 63, EQUAL = 71, SQRT = 75,
    SUM = 74, RSQRT = 76, REDUCE_MAX = 82, REDUCE_MIN = 89, LEAKY_RELU = 98, ABS = 101, HARD_SWISH = 117,
};

/* fused_activation_function */
enum { ACT_NONE = 0, ACT_RELU = 1, ACT_RELU_N1_TO_1 = 2, ACT_RELU6 = 3, ACT_TANH = 4 };

static const int64_t TO_NCHW[4] = {0, 3, 1, 2}, TO_NHWC[4] = {0, 2, 3, 1};

/* ---- loading context -------------------------------------------------------------------- */

typedef struct tl_ctx {
    nn_graph *g;
    fb_buf b;
    fb_vec tensors, buffers;
    int32_t *codes; /* builtin code of each operator code, CUSTOM for custom ones */
    uint32_t ncodes;
    int *ir; /* IR tensor of each TFLite tensor, -1 until defined */
    uint32_t nt;
    int dyn;       /* dim 0 of the inputs is declared dynamic */
    int64_t batch; /* the batch the file was exported with */
    uint32_t uniq; /* numbers names that clash */
    char name[320];
} tl_ctx;

typedef struct tl_tensor {
    char name[256];
    int type; /* TFLite TensorType */
    ffu_dtype dt;
    nn_shape shape;
    const uint8_t *data; /* constant bytes (NULL for activations) */
    size_t nbytes;
    int quantized, dyn0; /* integer tensor with scales; shape_signature dim 0 is -1 */
} tl_tensor;

typedef struct tl_op {
    uint32_t index;
    int32_t code;
    fb_table opts;
    fb_vec in, out;
    char name[256]; /* output 0's name: the node's name */
} tl_op;

static ffu_status op_error(const tl_op *op, ffu_status s, const char *fmt, ...) FFU_PRINTF(3, 4);
static ffu_status op_error(const tl_op *op, ffu_status s, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ffu_error_set(s, "TFLite operator %u (builtin %d, '%s'): %s", op->index, op->code,
                         op->name, msg);
}

static ffu_dtype map_type(int type)
{
    switch (type) {
    case 0: return FFU_DTYPE_F32;
    case 1: return FFU_DTYPE_F16;
    case 2: return FFU_DTYPE_I32;
    case 3: return FFU_DTYPE_U8;
    case 4: return FFU_DTYPE_I64;
    case 6: return FFU_DTYPE_BOOL;
    case 7: return FFU_DTYPE_I16;
    case 9: return FFU_DTYPE_I8;
    case 10: return FFU_DTYPE_F64;
    default: return FFU_DTYPE_UNDEFINED;
    }
}

/* A shape vector field into s. An absent shape is a scalar (as the TFLite interpreter
 * reads it); an absent signature is rank -1. signature: -1 allowed. */
static ffu_status read_dims(const fb_table *t, int field, int signature, nn_shape *s)
{
    fb_vec v;
    TRY(fb_vector(t, field, 4, &v));
    s->rank = signature ? -1 : 0;
    if (!fb_has(t, field)) return FFU_OK;
    if (v.n > FFU_NN_MAX_RANK)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite: a tensor of rank %u", v.n);
    s->rank = (int)v.n;
    for (uint32_t i = 0; i < v.n; i++) {
        int32_t d = fb_vec_i32(&v, i);
        if (d < (signature ? -1 : 0))
            return ffu_error_set(FFU_ERR_FORMAT, "TFLite: a tensor dimension is %d", d);
        s->d[i] = d;
    }
    return FFU_OK;
}

static ffu_status read_tensor(tl_ctx *c, int32_t i, tl_tensor *t)
{
    memset(t, 0, sizeof *t);
    if (i < 0 || (uint32_t)i >= c->nt)
        return ffu_error_set(FFU_ERR_FORMAT, "TFLite: tensor index %d of %u", i, c->nt);
    fb_table tt, q, buf;
    uint8_t type;
    uint32_t bi, len;
    const char *name;
    nn_shape sig;
    TRY(fb_vec_table(&c->tensors, (uint32_t)i, &tt));
    TRY(fb_string(&tt, T_NAME, &name, &len));
    snprintf(t->name, sizeof t->name, "%.*s", (int)(len < 200 ? len : 200), name);
    if (!t->name[0] || strchr(t->name, '#')) snprintf(t->name, sizeof t->name, "tensor_%d", i);
    TRY(fb_u8(&tt, T_TYPE, 0, &type));
    t->type = type;
    t->dt = map_type(type);
    if (t->dt == FFU_DTYPE_UNDEFINED)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite tensor '%s': type %d", t->name, type);
    TRY(read_dims(&tt, T_SHAPE, 0, &t->shape));
    TRY(read_dims(&tt, T_SIGNATURE, 1, &sig));
    t->dyn0 = sig.rank > 0 && sig.d[0] == -1;
    if (fb_has(&tt, T_SPARSITY))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite tensor '%s' is sparse", t->name);
    TRY(fb_table_field(&tt, T_QUANT, &q));
    if (q.present && t->dt != FFU_DTYPE_F32 && t->dt != FFU_DTYPE_F16) {
        fb_vec scale;
        TRY(fb_vector(&q, Q_SCALE, 4, &scale));
        t->quantized = scale.n > 0;
    }
    TRY(fb_u32(&tt, T_BUFFER, 0, &bi));
    if (bi >= c->buffers.n)
        return ffu_error_set(FFU_ERR_FORMAT, "TFLite tensor '%s': buffer %u of %u", t->name, bi,
                             c->buffers.n);
    if (bi == 0) return FFU_OK; /* buffer 0 is the empty sentinel */
    TRY(fb_vec_table(&c->buffers, bi, &buf));
    fb_vec data;
    TRY(fb_vector(&buf, BUF_DATA, 1, &data));
    if (!data.n && fb_has(&buf, BUF_OFFSET))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite tensor '%s': data outside the "
                             "FlatBuffer (a model over 2 GiB)", t->name);
    if (!data.n) return FFU_OK;
    int64_t numel = nn_shape_numel(&t->shape);
    if (numel < 0 || (uint64_t)numel > data.n ||
        (uint64_t)numel * ffu_dtype_size(t->dt) != data.n)
        return ffu_error_set(FFU_ERR_FORMAT, "TFLite tensor '%s': %u data bytes for its shape",
                             t->name, data.n);
    t->data = fb_vec_bytes(&data);
    t->nbytes = data.n;
    return FFU_OK;
}

/* A name not yet in the graph: `base` or `base#suffix`, else that with a number from a
 * counter (a file may name many tensors alike: no search over candidates). */
static const char *fresh_name(tl_ctx *c, const char *base, const char *suffix)
{
    if (suffix) snprintf(c->name, sizeof c->name, "%s#%s", base, suffix);
    else snprintf(c->name, sizeof c->name, "%s", base);
    while (nn_graph_find(c->g, c->name) >= 0)
        snprintf(c->name, sizeof c->name, "%s#%s%u", base, suffix ? suffix : "", ++c->uniq);
    return c->name;
}

/* The IR tensor of TFLite tensor i read by an operator: defined earlier, or a constant
 * added now. */
static int value(tl_ctx *c, const tl_op *op, int32_t i)
{
    if (i >= 0 && (uint32_t)i < c->nt && c->ir[i] >= 0) return c->ir[i];
    tl_tensor t;
    TRY(read_tensor(c, i, &t));
    if (t.quantized)
        return op_error(op, FFU_ERR_UNSUPPORTED, "quantized tensor '%s' (float models only)",
                        t.name);
    if (!t.data)
        return op_error(op, FFU_ERR_FORMAT, "reads '%s' before any operator writes it", t.name);
    int k;
    TRYV(k, nn_graph_add_const(c->g, fresh_name(c, t.name, NULL), t.dt, &t.shape, t.data,
                               t.nbytes, NN_COPY));
    return c->ir[i] = k;
}

/* Input j of the operator (-1 when omitted or absent). */
static int32_t in_index(const tl_op *op, uint32_t j)
{
    return j < op->in.n ? fb_vec_i32(&op->in, j) : -1;
}

static int input(tl_ctx *c, const tl_op *op, uint32_t j)
{
    int32_t i = in_index(op, j);
    if (i < 0) return op_error(op, FFU_ERR_FORMAT, "input %u is missing", j);
    return value(c, op, i);
}

/* The file's view of input j (shape, constant data). */
static ffu_status in_tensor(tl_ctx *c, const tl_op *op, uint32_t j, tl_tensor *t)
{
    int32_t i = in_index(op, j);
    if (i < 0) return op_error(op, FFU_ERR_FORMAT, "input %u is missing", j);
    return read_tensor(c, i, t);
}

/* Emits one node with one new output. suffix NULL: the output is the operator's output
 * 0 (named after it); else a helper "name#suffix". Returns the tensor or < 0. */
static int emit(tl_ctx *c, const tl_op *op, const char *suffix, nn_op kind, const int *in,
                int nin, int *node)
{
    int32_t o = fb_vec_i32(&op->out, 0);
    ffu_dtype dt = FFU_DTYPE_UNDEFINED; /* a hint for the API; inference sets the real one */
    if (!suffix) {
        tl_tensor ot;
        if (c->ir[o] >= 0) return op_error(op, FFU_ERR_FORMAT, "writes a tensor twice");
        TRY(read_tensor(c, o, &ot));
        dt = ot.dt;
    }
    int t, k;
    TRYV(t, nn_graph_add_tensor(c->g, fresh_name(c, op->name, suffix), dt, NULL));
    TRYV(k, nn_graph_add_node(c->g, kind, c->g->tensors[t].name, in, nin, &t, 1));
    if (node) *node = k;
    if (!suffix) c->ir[o] = t;
    return t;
}

static int emit1(tl_ctx *c, const tl_op *op, const char *suffix, nn_op kind, int x)
{
    return emit(c, op, suffix, kind, &x, 1, NULL);
}

static int emit_transpose(tl_ctx *c, const tl_op *op, const char *suffix, int x,
                          const int64_t *perm)
{
    int node = -1, t;
    TRYV(t, emit(c, op, suffix, NN_OP_TRANSPOSE, &x, 1, &node));
    TRY(nn_node_set_ints(c->g, node, "perm", perm, 4));
    return t;
}

static int const_i64(tl_ctx *c, const tl_op *op, const char *suffix, const int64_t *v, int n)
{
    nn_shape s = {.rank = 1, .d = {n}};
    return nn_graph_add_const(c->g, fresh_name(c, op->name, suffix), FFU_DTYPE_I64, &s, v,
                              (size_t)n * sizeof *v, NN_COPY);
}

static int const_f32(tl_ctx *c, const tl_op *op, const char *suffix, float v)
{
    nn_shape s = {.rank = 0};
    return nn_graph_add_const(c->g, fresh_name(c, op->name, suffix), FFU_DTYPE_F32, &s, &v,
                              sizeof v, NN_COPY);
}

/* Integer values of constant input j (int32 or int64) into v (at most max). */
static ffu_status in_ints(tl_ctx *c, const tl_op *op, uint32_t j, int64_t *v, int max, int *n)
{
    tl_tensor t;
    TRY(in_tensor(c, op, j, &t));
    if (!t.data || (t.dt != FFU_DTYPE_I32 && t.dt != FFU_DTYPE_I64))
        return op_error(op, FFU_ERR_UNSUPPORTED, "input %u must be an integer constant", j);
    size_t es = ffu_dtype_size(t.dt), cnt = t.nbytes / es;
    if (cnt > (size_t)max) return op_error(op, FFU_ERR_FORMAT, "input %u has %zu values", j, cnt);
    for (size_t k = 0; k < cnt; k++) {
        if (es == 4) {
            int32_t x;
            memcpy(&x, t.data + 4 * k, 4);
            v[k] = x;
        } else {
            memcpy(&v[k], t.data + 8 * k, 8);
        }
    }
    *n = (int)cnt;
    return FFU_OK;
}

/* ---- activations -------------------------------------------------------------------- */

static int emit_clip(tl_ctx *c, const tl_op *op, const char *suffix, int x, float lo, float hi)
{
    int in[3] = {x, -1, -1};
    TRYV(in[1], const_f32(c, op, "lo", lo));
    TRYV(in[2], const_f32(c, op, "hi", hi));
    return emit(c, op, suffix, NN_OP_CLIP, in, 3, NULL);
}

/* A fused activation on y; suffix as in emit. ACT_NONE returns y (suffix must then be a
 * helper name the caller does not need). */
static int emit_act(tl_ctx *c, const tl_op *op, const char *suffix, int y, uint8_t act)
{
    switch (act) {
    case ACT_NONE: return y;
    case ACT_RELU: return emit1(c, op, suffix, NN_OP_RELU, y);
    case ACT_RELU_N1_TO_1: return emit_clip(c, op, suffix, y, -1, 1);
    case ACT_RELU6: return emit_clip(c, op, suffix, y, 0, 6);
    case ACT_TANH: return emit1(c, op, suffix, NN_OP_TANH, y);
    default: return op_error(op, FFU_ERR_UNSUPPORTED, "fused activation %d", act);
    }
}

/* Emits kind(in) then the fused activation; the last node writes the operator output. */
static ffu_status emit_with_act(tl_ctx *c, const tl_op *op, nn_op kind, const int *in, int nin,
                                uint8_t act, int *node)
{
    int y;
    TRYV(y, emit(c, op, act ? "op" : NULL, kind, in, nin, node));
    if (act) TRYV(y, emit_act(c, op, NULL, y, act));
    return FFU_OK;
}

/* ---- translators ------------------------------------------------------------------------ */

static ffu_status tr_unary(tl_ctx *c, const tl_op *op)
{
    static const struct {
        int32_t code;
        nn_op op;
    } map[] = {{RELU, NN_OP_RELU},   {LOGISTIC, NN_OP_SIGMOID}, {TANH, NN_OP_TANH},
               {ABS, NN_OP_ABS},     {NEG, NN_OP_NEG},          {EXP, NN_OP_EXP},
               {SQRT, NN_OP_SQRT},   {RSQRT, NN_OP_RSQRT},      {HARD_SWISH, NN_OP_HARD_SWISH}};
    int x, y;
    TRYV(x, input(c, op, 0));
    if (op->code == RELU6) {
        TRYV(y, emit_clip(c, op, NULL, x, 0, 6));
        return FFU_OK;
    }
    if (op->code == LEAKY_RELU) {
        float alpha;
        int node = -1;
        TRY(fb_f32(&op->opts, 0, 0.2f, &alpha));
        TRYV(y, emit(c, op, NULL, NN_OP_LEAKY_RELU, &x, 1, &node));
        return nn_node_set_float(c->g, node, "alpha", alpha);
    }
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].code == op->code) {
            TRYV(y, emit1(c, op, NULL, map[i].op, x));
            return FFU_OK;
        }
    return op_error(op, FFU_ERR_UNSUPPORTED, "not a unary op");
}

/* ADD, SUB, MUL, DIV (options field 0: fused activation), PRELU, comparisons. */
static ffu_status tr_binary(tl_ctx *c, const tl_op *op)
{
    static const struct {
        int32_t code;
        nn_op op;
        int act; /* options field 0 is a fused activation */
    } map[] = {{ADD, NN_OP_ADD, 1},         {SUB, NN_OP_SUB, 1},
               {MUL, NN_OP_MUL, 1},         {DIV, NN_OP_DIV, 1},
               {PRELU, NN_OP_PRELU, 0},     {LESS, NN_OP_LESS, 0},
               {LESS_EQUAL, NN_OP_LESS_OR_EQUAL, 0}, {GREATER, NN_OP_GREATER, 0},
               {GREATER_EQUAL, NN_OP_GREATER_OR_EQUAL, 0}, {EQUAL, NN_OP_EQUAL, 0}};
    size_t m = 0;
    while (m < sizeof map / sizeof map[0] - 1 && map[m].code != op->code) m++;
    nn_op kind = map[m].op;
    uint8_t act = 0;
    int in[2];
    if (map[m].act) TRY(fb_u8(&op->opts, 0, 0, &act));
    TRYV(in[0], input(c, op, 0));
    TRYV(in[1], input(c, op, 1));
    return emit_with_act(c, op, kind, in, 2, act, NULL);
}

/* A 4-D f32 constant permuted (out dim i = in dim perm[i]); a Transpose node when the
 * weight is computed (DEQUANTIZE of f16 weights), which constant folding then folds. */
static int weight(tl_ctx *c, const tl_op *op, uint32_t j, const int64_t *perm, nn_shape *shape)
{
    tl_tensor t;
    TRY(in_tensor(c, op, j, &t));
    if (t.shape.rank != 4)
        return op_error(op, FFU_ERR_FORMAT, "the filter has rank %d, expected 4", t.shape.rank);
    for (int i = 0; i < 4; i++) shape->d[i] = t.shape.d[perm[i]];
    shape->rank = 4;
    if (!t.data || t.dt != FFU_DTYPE_F32) {
        int w;
        TRYV(w, input(c, op, j));
        return emit_transpose(c, op, "w", w, perm);
    }
    int64_t n = nn_shape_numel(&t.shape), src_stride[4], k = 0;
    float *dst = malloc((size_t)n * sizeof(float) + 1);
    if (!dst) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    src_stride[3] = 1;
    for (int i = 2; i >= 0; i--) src_stride[i] = src_stride[i + 1] * t.shape.d[i + 1];
    for (int64_t a = 0; a < shape->d[0]; a++)
        for (int64_t b = 0; b < shape->d[1]; b++)
            for (int64_t d = 0; d < shape->d[2]; d++)
                for (int64_t e = 0; e < shape->d[3]; e++, k++) {
                    int64_t idx[4] = {a, b, d, e}, s = 0;
                    for (int i = 0; i < 4; i++) s += idx[i] * src_stride[perm[i]];
                    memcpy(&dst[k], t.data + 4 * s, 4);
                }
    int r = nn_graph_add_const(c->g, fresh_name(c, op->name, "w"), FFU_DTYPE_F32, shape, dst,
                               (size_t)n * sizeof(float), NN_COPY);
    free(dst);
    return r;
}

typedef struct spatial {
    uint8_t padding; /* 0 SAME, 1 VALID */
    int32_t stride[2], dil[2], k[2];
} spatial;

static ffu_status set_spatial(tl_ctx *c, const tl_op *op, int node, const spatial *s, int conv)
{
    int64_t k[2] = {s->k[0], s->k[1]}, st[2] = {s->stride[0], s->stride[1]};
    int64_t dil[2] = {s->dil[0], s->dil[1]}, pads[4] = {0, 0, 0, 0};
    for (int i = 0; i < 2; i++)
        if (st[i] < 1 || st[i] > 4096 || dil[i] < 1 || dil[i] > 4096 || k[i] < 1)
            return op_error(op, FFU_ERR_FORMAT, "stride %lld, dilation %lld, kernel %lld",
                            (long long)st[i], (long long)dil[i], (long long)k[i]);
    if (s->padding > 1) return op_error(op, FFU_ERR_FORMAT, "padding %d", s->padding);
    TRY(nn_node_set_ints(c->g, node, "kernel_shape", k, 2));
    TRY(nn_node_set_ints(c->g, node, "strides", st, 2));
    if (conv) TRY(nn_node_set_ints(c->g, node, "dilations", dil, 2));
    /* TF's SAME puts the odd pad at the end: ONNX SAME_UPPER */
    if (s->padding == 0) return nn_node_set_string(c->g, node, "auto_pad", "SAME_UPPER");
    return nn_node_set_ints(c->g, node, "pads", pads, 4);
}

/* NHWC x -> Transpose -> kind (NCHW) -> activation -> Transpose back. */
static ffu_status emit_spatial(tl_ctx *c, const tl_op *op, nn_op kind, int *in, int nin,
                               const spatial *s, uint8_t act, int64_t group)
{
    int y, node = -1;
    TRYV(in[0], emit_transpose(c, op, "in", in[0], TO_NCHW));
    TRYV(y, emit(c, op, "op", kind, in, nin, &node));
    TRY(set_spatial(c, op, node, s, kind == NN_OP_CONV));
    if (group > 1) TRY(nn_node_set_int(c->g, node, "group", group));
    if (act) TRYV(y, emit_act(c, op, "act", y, act));
    TRYV(y, emit_transpose(c, op, NULL, y, TO_NHWC));
    return FFU_OK;
}

/* CONV_2D: Conv2DOptions {padding, stride_w, stride_h, act, dilation_w, dilation_h}, filter
 * [O,kh,kw,I]. DEPTHWISE_CONV_2D: {padding, stride_w, stride_h, depth_multiplier, act,
 * dilation_w, dilation_h}, filter [1,kh,kw,C*M]. */
static ffu_status tr_conv(tl_ctx *c, const tl_op *op)
{
    static const int64_t OHWI_TO_OIHW[4] = {0, 3, 1, 2}, DW_TO_OIHW[4] = {3, 0, 1, 2};
    int dw = op->code == DEPTHWISE_CONV_2D;
    spatial s;
    uint8_t act;
    int32_t mult = 0;
    TRY(fb_u8(&op->opts, 0, 0, &s.padding));
    TRY(fb_i32(&op->opts, 1, 1, &s.stride[1]));
    TRY(fb_i32(&op->opts, 2, 1, &s.stride[0]));
    TRY(fb_i32(&op->opts, dw ? 3 : 5, 1, dw ? &mult : &s.dil[0]));
    TRY(fb_u8(&op->opts, dw ? 4 : 3, 0, &act));
    TRY(fb_i32(&op->opts, dw ? 5 : 4, 1, &s.dil[1]));
    if (dw) TRY(fb_i32(&op->opts, 6, 1, &s.dil[0]));
    nn_shape ws;
    int in[3] = {-1, -1, -1};
    TRYV(in[0], input(c, op, 0));
    TRYV(in[1], weight(c, op, 1, dw ? DW_TO_OIHW : OHWI_TO_OIHW, &ws));
    if (in_index(op, 2) >= 0) TRYV(in[2], input(c, op, 2));
    s.k[0] = (int32_t)ws.d[2], s.k[1] = (int32_t)ws.d[3];
    int64_t group = 1;
    if (dw) {
        /* channels in: the input's file shape, else out / depth_multiplier */
        tl_tensor x;
        TRY(in_tensor(c, op, 0, &x));
        group = x.shape.rank == 4 && x.shape.d[3] > 0 ? x.shape.d[3]
                : mult > 0                               ? ws.d[0] / mult
                                                         : 0;
        if (group < 1 || ws.d[0] % group)
            return op_error(op, FFU_ERR_FORMAT, "%lld filter channels for %lld inputs",
                            (long long)ws.d[0], (long long)group);
    }
    return emit_spatial(c, op, NN_OP_CONV, in, in[2] >= 0 ? 3 : 2, &s, act, group);
}

/* Pool2DOptions {padding, stride_w, stride_h, filter_width, filter_height, act}. */
static ffu_status tr_pool(tl_ctx *c, const tl_op *op)
{
    spatial s = {.dil = {1, 1}};
    uint8_t act;
    TRY(fb_u8(&op->opts, 0, 0, &s.padding));
    TRY(fb_i32(&op->opts, 1, 1, &s.stride[1]));
    TRY(fb_i32(&op->opts, 2, 1, &s.stride[0]));
    TRY(fb_i32(&op->opts, 3, 0, &s.k[1]));
    TRY(fb_i32(&op->opts, 4, 0, &s.k[0]));
    TRY(fb_u8(&op->opts, 5, 0, &act));
    int in[1];
    TRYV(in[0], input(c, op, 0));
    return emit_spatial(c, op, op->code == MAX_POOL_2D ? NN_OP_MAX_POOL : NN_OP_AVERAGE_POOL, in,
                        1, &s, act, 1);
}

/* A Reshape to the given dims. keeps_batch: the file's shapes have the batch as dim 0 of
 * both the input and the output; with a dynamic batch, that dim 0 becomes 0, ONNX's
 * "copy dim 0". */
static int emit_reshape(tl_ctx *c, const tl_op *op, const char *suffix, int x, int64_t *dims,
                        int n, int keeps_batch)
{
    if (c->dyn && keeps_batch && n > 0 && dims[0] == c->batch) dims[0] = 0;
    int in[2] = {x, -1};
    TRYV(in[1], const_i64(c, op, suffix ? "tshape" : "shape", dims, n));
    return emit(c, op, suffix, NN_OP_RESHAPE, in, 2, NULL);
}

/* RESHAPE: the shape input, else ReshapeOptions.new_shape, else the output's shape. */
static ffu_status tr_reshape(tl_ctx *c, const tl_op *op)
{
    int64_t dims[FFU_NN_MAX_RANK];
    int n = -1, x;
    if (in_index(op, 1) >= 0) {
        TRY(in_ints(c, op, 1, dims, FFU_NN_MAX_RANK, &n));
    } else if (fb_has(&op->opts, 0)) {
        fb_vec v;
        TRY(fb_vector(&op->opts, 0, 4, &v));
        if (v.n > FFU_NN_MAX_RANK) return op_error(op, FFU_ERR_UNSUPPORTED, "rank %u", v.n);
        for (n = 0; (uint32_t)n < v.n; n++) dims[n] = fb_vec_i32(&v, (uint32_t)n);
    } else {
        tl_tensor o;
        TRY(read_tensor(c, fb_vec_i32(&op->out, 0), &o));
        for (n = 0; n < o.shape.rank; n++) dims[n] = o.shape.d[n];
    }
    for (int i = 0; i < n; i++)
        if (dims[i] == 0 || dims[i] < -1)
            return op_error(op, FFU_ERR_UNSUPPORTED, "target dimension %lld", (long long)dims[i]);
    tl_tensor xt, o;
    TRY(in_tensor(c, op, 0, &xt));
    TRY(read_tensor(c, fb_vec_i32(&op->out, 0), &o));
    int keeps = xt.shape.rank > 0 && o.shape.rank > 0 && xt.shape.d[0] == c->batch &&
                o.shape.d[0] == c->batch;
    TRYV(x, input(c, op, 0));
    TRYV(x, emit_reshape(c, op, NULL, x, dims, n, keeps));
    return FFU_OK;
}

/* ConcatenationOptions {axis, act}. */
static ffu_status tr_concat(tl_ctx *c, const tl_op *op)
{
    int32_t axis;
    uint8_t act;
    TRY(fb_i32(&op->opts, 0, 0, &axis));
    TRY(fb_u8(&op->opts, 1, 0, &act));
    if (op->in.n < 1 || op->in.n > 4096) return op_error(op, FFU_ERR_FORMAT, "%u inputs", op->in.n);
    int *in = malloc(op->in.n * sizeof(int)), node = -1;
    if (!in) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = FFU_OK;
    for (uint32_t j = 0; j < op->in.n && st >= 0; j++) st = in[j] = input(c, op, j);
    if (st >= 0) st = emit_with_act(c, op, NN_OP_CONCAT, in, (int)op->in.n, act, &node);
    if (st >= 0) st = nn_node_set_int(c->g, node, "axis", axis);
    free(in);
    return st;
}

/* FullyConnectedOptions {act, weights_format, keep_num_dims}: x flattened to [-1, in],
 * Gemm with the [out, in] weights transposed, bias optional. */
static ffu_status tr_fully_connected(tl_ctx *c, const tl_op *op)
{
    uint8_t act, format, keep;
    TRY(fb_u8(&op->opts, 0, 0, &act));
    TRY(fb_u8(&op->opts, 1, 0, &format));
    TRY(fb_u8(&op->opts, 2, 0, &keep));
    if (format) return op_error(op, FFU_ERR_UNSUPPORTED, "weights_format %d", format);
    tl_tensor w, o;
    TRY(in_tensor(c, op, 1, &w));
    TRY(read_tensor(c, fb_vec_i32(&op->out, 0), &o));
    if (w.shape.rank != 2 || w.shape.d[1] < 1)
        return op_error(op, FFU_ERR_FORMAT, "weights of rank %d", w.shape.rank);
    int in[3] = {-1, -1, -1}, node = -1, y;
    int64_t flat[2] = {-1, w.shape.d[1]};
    TRYV(in[0], input(c, op, 0));
    TRYV(in[0], emit_reshape(c, op, "flat", in[0], flat, 2, 0));
    TRYV(in[1], input(c, op, 1));
    if (in_index(op, 2) >= 0) TRYV(in[2], input(c, op, 2));
    int last = !act && !keep;
    TRYV(y, emit(c, op, last ? NULL : "gemm", NN_OP_GEMM, in, in[2] >= 0 ? 3 : 2, &node));
    TRY(nn_node_set_int(c->g, node, "transB", 1));
    if (act) TRYV(y, emit_act(c, op, keep ? "act" : NULL, y, act));
    if (keep) {
        int64_t dims[FFU_NN_MAX_RANK];
        if (o.shape.rank < 1) return op_error(op, FFU_ERR_FORMAT, "keep_num_dims on a scalar");
        /* rows of the Gemm: whatever the batch makes of them */
        dims[0] = -1;
        for (int i = 1; i < o.shape.rank; i++) dims[i] = o.shape.d[i];
        TRYV(y, emit_reshape(c, op, NULL, y, dims, o.shape.rank, 0));
    }
    return FFU_OK;
}

/* SoftmaxOptions {beta}: softmax(beta * x) over the last axis. */
static ffu_status tr_softmax(tl_ctx *c, const tl_op *op)
{
    float beta;
    int x, y, node = -1;
    TRY(fb_f32(&op->opts, 0, 1.0f, &beta));
    TRYV(x, input(c, op, 0));
    if (beta != 1.0f) {
        int in[2] = {x, -1};
        TRYV(in[1], const_f32(c, op, "beta", beta));
        TRYV(x, emit(c, op, "scaled", NN_OP_MUL, in, 2, NULL));
    }
    TRYV(y, emit(c, op, NULL, NN_OP_SOFTMAX, &x, 1, &node));
    return nn_node_set_int(c->g, node, "axis", -1);
}

/* MEAN, SUM, REDUCE_MAX, REDUCE_MIN: axes input, ReducerOptions {keep_dims}. */
static ffu_status tr_reduce(tl_ctx *c, const tl_op *op)
{
    nn_op type = op->code == SUM          ? NN_OP_REDUCE_SUM
                      : op->code == REDUCE_MAX ? NN_OP_REDUCE_MAX
                      : op->code == REDUCE_MIN ? NN_OP_REDUCE_MIN
                                               : NN_OP_REDUCE_MEAN;
    uint8_t keep;
    int64_t axes[FFU_NN_MAX_RANK];
    int n, in[2], y, node = -1;
    TRY(fb_u8(&op->opts, 0, 0, &keep));
    TRY(in_ints(c, op, 1, axes, FFU_NN_MAX_RANK, &n));
    TRYV(in[0], input(c, op, 0));
    TRYV(in[1], const_i64(c, op, "axes", axes, n));
    TRYV(y, emit(c, op, NULL, type, in, 2, &node));
    TRY(nn_node_set_int(c->g, node, "keepdims", keep));
    /* TF reduces nothing for an empty axis list; ONNX would reduce everything */
    return nn_node_set_int(c->g, node, "noop_with_empty_axes", 1);
}

/* PAD / PADV2: paddings [rank, 2] (begin, end per dim), PADV2's constant value. */
static ffu_status tr_pad(tl_ctx *c, const tl_op *op)
{
    int64_t p[2 * FFU_NN_MAX_RANK], pads[2 * FFU_NN_MAX_RANK];
    int n, in[3] = {-1, -1, -1}, y, node = -1;
    TRY(in_ints(c, op, 1, p, 2 * FFU_NN_MAX_RANK, &n));
    if (n % 2) return op_error(op, FFU_ERR_FORMAT, "paddings has %d values", n);
    for (int i = 0; i < n / 2; i++) pads[i] = p[2 * i], pads[n / 2 + i] = p[2 * i + 1];
    TRYV(in[0], input(c, op, 0));
    TRYV(in[1], const_i64(c, op, "pads", pads, n));
    if (op->code == PADV2 && in_index(op, 2) >= 0) TRYV(in[2], input(c, op, 2));
    TRYV(y, emit(c, op, NULL, NN_OP_PAD, in, in[2] >= 0 ? 3 : 2, &node));
    return nn_node_set_string(c->g, node, "mode", "constant");
}

/* CAST to the output tensor's type. */
static ffu_status tr_cast(tl_ctx *c, const tl_op *op)
{
    tl_tensor o;
    int x, y, node = -1;
    TRY(read_tensor(c, fb_vec_i32(&op->out, 0), &o));
    TRYV(x, input(c, op, 0));
    TRYV(y, emit(c, op, NULL, NN_OP_CAST, &x, 1, &node));
    return nn_node_set_int(c->g, node, "to", o.dt);
}

/* STRIDED_SLICE: begin, end, strides inputs; StridedSliceOptions {begin_mask, end_mask,
 * ellipsis_mask, new_axis_mask, shrink_axis_mask, offset}. */
static ffu_status tr_strided_slice(tl_ctx *c, const tl_op *op)
{
    int64_t b[FFU_NN_MAX_RANK], e[FFU_NN_MAX_RANK], s[FFU_NN_MAX_RANK];
    int64_t starts[FFU_NN_MAX_RANK], ends[FFU_NN_MAX_RANK], axes[FFU_NN_MAX_RANK],
        steps[FFU_NN_MAX_RANK], squeeze[FFU_NN_MAX_RANK];
    int32_t mask[5];
    uint8_t offset;
    int nb, ne, ns, nsq;
    TRY(in_ints(c, op, 1, b, FFU_NN_MAX_RANK, &nb));
    TRY(in_ints(c, op, 2, e, FFU_NN_MAX_RANK, &ne));
    TRY(in_ints(c, op, 3, s, FFU_NN_MAX_RANK, &ns));
    for (int i = 0; i < 5; i++) TRY(fb_i32(&op->opts, i, 0, &mask[i]));
    TRY(fb_u8(&op->opts, 5, 0, &offset));
    if (nb != ne || nb != ns || nb < 1)
        return op_error(op, FFU_ERR_FORMAT, "begin/end/strides lengths %d/%d/%d", nb, ne, ns);
    const char *why = nn_tf_strided_slice(b, e, s, nb, mask[0], mask[1], mask[4],
                                          mask[2] | mask[3] | offset, starts, ends, axes,
                                          steps, squeeze, &nsq);
    if (why)
        return op_error(op, strcmp(why, "stride 0") ? FFU_ERR_UNSUPPORTED : FFU_ERR_FORMAT,
                        "%s%s", why, offset ? " (or offset)" : "");
    int in[5], y;
    TRYV(in[0], input(c, op, 0));
    TRYV(in[1], const_i64(c, op, "starts", starts, nb));
    TRYV(in[2], const_i64(c, op, "ends", ends, nb));
    TRYV(in[3], const_i64(c, op, "axes", axes, nb));
    TRYV(in[4], const_i64(c, op, "steps", steps, nb));
    TRYV(y, emit(c, op, nsq ? "slice" : NULL, NN_OP_SLICE, in, 5, NULL));
    if (nsq) {
        int sq[2] = {y, -1};
        TRYV(sq[1], const_i64(c, op, "squeeze", squeeze, nsq));
        TRYV(y, emit(c, op, NULL, NN_OP_SQUEEZE, sq, 2, NULL));
    }
    return FFU_OK;
}

/* DEQUANTIZE of f16 weights: a Cast, folded at load. */
static ffu_status tr_dequantize(tl_ctx *c, const tl_op *op)
{
    tl_tensor t;
    TRY(in_tensor(c, op, 0, &t));
    if (t.dt != FFU_DTYPE_F16)
        return op_error(op, FFU_ERR_UNSUPPORTED, "DEQUANTIZE of a %s tensor (float models only)",
                        ffu_dtype_name(t.dt));
    int x, y, node = -1;
    TRYV(x, input(c, op, 0));
    TRYV(y, emit(c, op, NULL, NN_OP_CAST, &x, 1, &node));
    return nn_node_set_int(c->g, node, "to", FFU_DTYPE_F32);
}

static const struct {
    int32_t code;
    const char *name;
    ffu_status (*fn)(tl_ctx *, const tl_op *);
} translators[] = {
    {ADD, "ADD", tr_binary},
    {AVERAGE_POOL_2D, "AVERAGE_POOL_2D", tr_pool},
    {CONCATENATION, "CONCATENATION", tr_concat},
    {CONV_2D, "CONV_2D", tr_conv},
    {DEPTHWISE_CONV_2D, "DEPTHWISE_CONV_2D", tr_conv},
    {DEQUANTIZE, "DEQUANTIZE", tr_dequantize},
    {FULLY_CONNECTED, "FULLY_CONNECTED", tr_fully_connected},
    {LOGISTIC, "LOGISTIC", tr_unary},
    {MAX_POOL_2D, "MAX_POOL_2D", tr_pool},
    {MUL, "MUL", tr_binary},
    {RELU, "RELU", tr_unary},
    {RELU6, "RELU6", tr_unary},
    {RESHAPE, "RESHAPE", tr_reshape},
    {SOFTMAX, "SOFTMAX", tr_softmax},
    {TANH, "TANH", tr_unary},
    {PAD, "PAD", tr_pad},
    {MEAN, "MEAN", tr_reduce},
    {SUM, "SUM", tr_reduce},
    {REDUCE_MAX, "REDUCE_MAX", tr_reduce},
    {REDUCE_MIN, "REDUCE_MIN", tr_reduce},
    {SUB, "SUB", tr_binary},
    {DIV, "DIV", tr_binary},
    {EXP, "EXP", tr_unary},
    {PRELU, "PRELU", tr_binary},
    {NEG, "NEG", tr_unary},
    {PADV2, "PADV2", tr_pad},
    {SQRT, "SQRT", tr_unary},
    {RSQRT, "RSQRT", tr_unary},
    {LEAKY_RELU, "LEAKY_RELU", tr_unary},
    {ABS, "ABS", tr_unary},
    {HARD_SWISH, "HARD_SWISH", tr_unary},
    {STRIDED_SLICE, "STRIDED_SLICE", tr_strided_slice},
    {CAST, "CAST", tr_cast},
    {LESS, "LESS", tr_binary},
    {LESS_EQUAL, "LESS_EQUAL", tr_binary},
    {GREATER, "GREATER", tr_binary},
    {GREATER_EQUAL, "GREATER_EQUAL", tr_binary},
    {EQUAL, "EQUAL", tr_binary},
};

/* ---- the batch rule ------------------------------------------------------------------- */

/* 1 when a constant input of the operator has dim 0 of an output of rank out_rank that is
 * not 1: it holds one row per exported item, so it cannot follow another batch size. */
static int const_spans_batch(tl_ctx *c, const tl_op *op, int out_rank)
{
    tl_tensor k;
    for (uint32_t j = 0; j < op->in.n; j++) {
        if (in_index(op, j) < 0) continue;
        if (read_tensor(c, in_index(op, j), &k) < 0) return 1;
        if (k.data && k.shape.rank >= out_rank && k.shape.rank > 0 && k.shape.d[0] != 1)
            return 1;
    }
    return 0;
}

/* 1 when the operator keeps the items of a batch of c->batch apart at any batch size,
 * judged from the file's shapes (docs/NN_TFLITE.md "Batch"). */
static int item_safe(tl_ctx *c, const tl_op *op)
{
    tl_tensor x, o;
    int64_t v[2 * FFU_NN_MAX_RANK];
    int n;
    if (read_tensor(c, in_index(op, 0), &x) < 0 || op->out.n < 1 ||
        read_tensor(c, fb_vec_i32(&op->out, 0), &o) < 0)
        return 0;
    switch (op->code) {
    case CONV_2D: case DEPTHWISE_CONV_2D: case AVERAGE_POOL_2D: case MAX_POOL_2D: case RELU:
    case RELU6: case LOGISTIC: case TANH: case ABS: case NEG: case EXP: case SQRT: case RSQRT:
    case HARD_SWISH: case LEAKY_RELU: case DEQUANTIZE: case CAST:
        return 1;
    case SOFTMAX:
        return x.shape.rank >= 2;
    case ADD: case SUB: case MUL: case DIV: case PRELU: case LESS: case LESS_EQUAL:
    case GREATER: case GREATER_EQUAL: case EQUAL:
        return !const_spans_batch(c, op, o.shape.rank);
    case RESHAPE:
    case FULLY_CONNECTED:
        /* dim 0 stays the batch, and each item's values stay together */
        return x.shape.rank > 0 && o.shape.rank > 0 && x.shape.d[0] == c->batch &&
               o.shape.d[0] == c->batch;
    case CONCATENATION: {
        int32_t axis;
        return fb_i32(&op->opts, 0, 0, &axis) == FFU_OK && axis != 0 &&
               axis != -o.shape.rank && !const_spans_batch(c, op, o.shape.rank);
    }
    case MEAN: case SUM: case REDUCE_MAX: case REDUCE_MIN:
        if (in_ints(c, op, 1, v, FFU_NN_MAX_RANK, &n) < 0) return 0;
        for (int i = 0; i < n; i++)
            if (v[i] == 0 || v[i] == -x.shape.rank) return 0;
        return 1;
    case PAD: case PADV2:
        return in_ints(c, op, 1, v, 2 * FFU_NN_MAX_RANK, &n) == FFU_OK && n >= 2 && !v[0] && !v[1];
    default:
        return 0;
    }
}

/* ---- the model ------------------------------------------------------------------------- */

static ffu_status read_op(tl_ctx *c, const fb_vec *ops, uint32_t i, tl_op *op)
{
    fb_table t;
    uint32_t oc;
    memset(op, 0, sizeof *op);
    op->index = i;
    TRY(fb_vec_table(ops, i, &t));
    TRY(fb_u32(&t, OP_OPCODE, 0, &oc));
    if (oc >= c->ncodes)
        return ffu_error_set(FFU_ERR_FORMAT, "TFLite operator %u: opcode %u of %u", i, oc,
                             c->ncodes);
    op->code = c->codes[oc];
    TRY(fb_vector(&t, OP_INPUTS, 4, &op->in));
    TRY(fb_vector(&t, OP_OUTPUTS, 4, &op->out));
    TRY(fb_table_field(&t, OP_OPTIONS, &op->opts));
    if (op->out.n != 1)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite operator %u (builtin %d): %u outputs",
                             i, op->code, op->out.n);
    tl_tensor o;
    TRY(read_tensor(c, fb_vec_i32(&op->out, 0), &o));
    snprintf(op->name, sizeof op->name, "%s", o.name);
    return FFU_OK;
}

static ffu_status load(tl_ctx *c)
{
    fb_table model, sg;
    fb_vec codes, subgraphs, ins, outs, ops;
    uint32_t version;
    TRY(fb_root(&c->b, &model));
    TRY(fb_u32(&model, M_VERSION, 0, &version));
    if (version != 3)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite schema version %u (3 is read)", version);
    TRY(fb_vector(&model, M_OPCODES, 4, &codes));
    TRY(fb_vector(&model, M_SUBGRAPHS, 4, &subgraphs));
    TRY(fb_vector(&model, M_BUFFERS, 4, &c->buffers));
    if (subgraphs.n < 1) return ffu_error_set(FFU_ERR_FORMAT, "TFLite: no subgraph");
    c->ncodes = codes.n;
    if (!(c->codes = malloc(((size_t)codes.n + 1) * sizeof *c->codes)))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < codes.n; i++) {
        fb_table t;
        uint8_t dep;
        int32_t code;
        TRY(fb_vec_table(&codes, i, &t));
        TRY(fb_u8(&t, OC_DEPRECATED, 0, &dep));
        TRY(fb_i32(&t, OC_BUILTIN, 0, &code));
        /* files before schema 3a set only the byte; later ones both, the byte capped */
        c->codes[i] = code > (int32_t)(int8_t)dep ? code : (int8_t)dep;
        if (c->codes[i] == CUSTOM || fb_has(&t, OC_CUSTOM)) {
            const char *s;
            uint32_t len;
            TRY(fb_string(&t, OC_CUSTOM, &s, &len));
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite custom operator '%.*s'",
                                 (int)(len < 64 ? len : 64), s);
        }
    }
    TRY(fb_vec_table(&subgraphs, 0, &sg));
    TRY(fb_vector(&sg, SG_TENSORS, 4, &c->tensors));
    TRY(fb_vector(&sg, SG_INPUTS, 4, &ins));
    TRY(fb_vector(&sg, SG_OUTPUTS, 4, &outs));
    TRY(fb_vector(&sg, SG_OPS, 4, &ops));
    if (c->tensors.n > NN_TFLITE_MAX_TENSORS || ops.n > NN_TFLITE_MAX_OPS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "TFLite: %u tensors, %u operators", c->tensors.n,
                             ops.n);
    c->nt = c->tensors.n;
    if (!(c->ir = malloc(((size_t)c->nt + 1) * sizeof *c->ir)))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < c->nt; i++) c->ir[i] = -1;

    /* the batch: every input's dim 0 alike; dynamic when the file says so, or when it
     * is over 1 and every operator keeps items apart (batch 1 re-batches in batch.c) */
    int dyn_sig = 0;
    c->batch = -1;
    for (uint32_t i = 0; i < ins.n; i++) {
        tl_tensor t;
        TRY(read_tensor(c, fb_vec_i32(&ins, i), &t));
        int64_t b = t.shape.rank > 0 ? t.shape.d[0] : -2;
        c->batch = i == 0 || b == c->batch ? b : -2;
        dyn_sig |= t.dyn0;
    }
    c->dyn = dyn_sig && c->batch >= 1;
    if (!c->dyn && c->batch > 1) {
        c->dyn = 1;
        for (uint32_t i = 0; i < ops.n && c->dyn; i++) {
            tl_op op;
            c->dyn = read_op(c, &ops, i, &op) == FFU_OK && item_safe(c, &op);
        }
        ffu_error_clear();
    }

    for (uint32_t i = 0; i < ins.n; i++) {
        tl_tensor t;
        int32_t ti = fb_vec_i32(&ins, i);
        TRY(read_tensor(c, ti, &t));
        if (t.quantized)
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "TFLite input '%s' is quantized", t.name);
        if (c->ir[ti] >= 0) continue;
        if (c->dyn) t.shape.d[0] = -1;
        int k;
        TRYV(k, nn_graph_add_tensor(c->g, fresh_name(c, t.name, NULL), t.dt, &t.shape));
        TRY(nn_graph_mark_input(c->g, k));
        c->ir[ti] = k;
    }
    for (uint32_t i = 0; i < ops.n; i++) {
        tl_op op;
        TRY(read_op(c, &ops, i, &op));
        size_t k = 0;
        while (k < sizeof translators / sizeof translators[0] && translators[k].code != op.code)
            k++;
        if (k == sizeof translators / sizeof translators[0])
            return op_error(&op, FFU_ERR_UNSUPPORTED, "unsupported TFLite builtin operator %d",
                            op.code);
        TRY(translators[k].fn(c, &op));
        if (c->ir[fb_vec_i32(&op.out, 0)] < 0)
            return op_error(&op, FFU_ERR_FORMAT, "%s wrote no output", translators[k].name);
    }
    if (outs.n < 1) return ffu_error_set(FFU_ERR_FORMAT, "TFLite: the subgraph has no outputs");
    for (uint32_t i = 0; i < outs.n; i++) {
        int32_t ti = fb_vec_i32(&outs, i);
        tl_op none = {.index = ops.n, .code = -1, .name = "outputs"};
        int k;
        TRYV(k, value(c, &none, ti));
        TRY(nn_graph_mark_output(c->g, k));
        /* the file's type and shape until inference runs; a dynamic batch stays open */
        nn_tensor *t = &c->g->tensors[k];
        if (t->shape.rank < 0) {
            tl_tensor ft;
            TRY(read_tensor(c, ti, &ft));
            t->shape = ft.shape;
            if (c->dyn && ft.shape.rank > 0 && ft.shape.d[0] == c->batch) t->shape.d[0] = -1;
        }
    }
    const char *desc;
    uint32_t len;
    TRY(fb_string(&model, M_DESCRIPTION, &desc, &len));
    char prod[128];
    snprintf(prod, sizeof prod, "%.*s", (int)(len < 100 ? len : 100), desc);
    c->g->format = "tflite";
    if (!(c->g->producer = ffu_arena_strdup(c->g->arena, prod)))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    return nn_graph_toposort(c->g);
}

int nn_tflite_is(const void *data, size_t size)
{
    return data && size >= 8 && memcmp((const uint8_t *)data + 4, "TFL3", 4) == 0;
}

ffu_status nn_tflite_load(const void *data, size_t size, nn_graph **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "nn_tflite_load: out is NULL");
    *out = NULL;
    if (!nn_tflite_is(data, size))
        return ffu_error_set(FFU_ERR_FORMAT, "not a TFLite model (no TFL3 identifier)");
    if (size > ((size_t)2 << 30)) return ffu_error_set(FFU_ERR_TOO_LARGE, "TFLite: over 2 GiB");
    tl_ctx c = {.b = {.p = data, .n = size}};
    ffu_status st = nn_graph_create(&c.g);
    if (st >= 0) st = load(&c);
    free(c.codes);
    free(c.ir);
    if (st < 0) {
        nn_graph_destroy(c.g);
        return st;
    }
    *out = c.g;
    return FFU_OK;
}
