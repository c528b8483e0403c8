/* A writer of TensorFlow Lite files (FlatBuffers, identifier "TFL3") for the loader's
 * unit test and the fuzzer's seed corpus: a model is described in a tb_model (tensors,
 * operator codes, operators with their builtin options, one subgraph) and tb_pack lays
 * it out. Header only, independent of the library, so the tests do not read the files
 * with the code that they check.
 *
 * Layout: written front to back. Each table is its vtable then the table (the soffset
 * at the table's start points back to the vtable); its offset fields are left as slots
 * and patched once the child (a table, vector or string) has been written after it, so
 * every uoffset points forward as FlatBuffers requires. Tables are 4-byte aligned,
 * 4-byte fields come first; little-endian throughout. Buffer 0 is the empty sentinel;
 * each tensor with data gets its own buffer. Out of memory aborts (a test tool). */
#ifndef FFU_TESTS_TFLITE_BUILDER_H
#define FFU_TESTS_TFLITE_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byte_writer.h"

/* TensorType */
enum { TB_F32 = 0, TB_F16 = 1, TB_I32 = 2, TB_U8 = 3, TB_I64 = 4, TB_I8 = 9 };
/* BuiltinOperator (the ones the tests use; any int32 may be given) */
enum {
    TB_ADD = 0, TB_AVERAGE_POOL_2D = 1, TB_CONCATENATION = 2, TB_CONV_2D = 3,
    TB_DEPTHWISE_CONV_2D = 4, TB_DEQUANTIZE = 6, TB_FULLY_CONNECTED = 9, TB_LOGISTIC = 14,
    TB_MAX_POOL_2D = 17, TB_MUL = 18, TB_RELU = 19, TB_RELU6 = 21, TB_RESHAPE = 22,
    TB_SOFTMAX = 25, TB_TANH = 28, TB_CUSTOM = 32, TB_PAD = 34, TB_MEAN = 40, TB_SUB = 41,
    TB_DIV = 42, TB_PRELU = 54, TB_SUM = 74, TB_REDUCE_MAX = 82, TB_REDUCE_MIN = 89,
    TB_LEAKY_RELU = 98, TB_HARD_SWISH = 117,
};
/* BuiltinOptions union tags */
enum {
    TB_OPT_CONV = 1, TB_OPT_DWCONV = 2, TB_OPT_POOL = 5, TB_OPT_FC = 8, TB_OPT_SOFTMAX = 9,
    TB_OPT_CONCAT = 10, TB_OPT_ADD = 11, TB_OPT_RESHAPE = 17, TB_OPT_MUL = 21, TB_OPT_PAD = 22,
    TB_OPT_REDUCER = 27, TB_OPT_SUB = 28, TB_OPT_DIV = 29, TB_OPT_LEAKY_RELU = 75,
};
/* Padding, ActivationFunctionType */
enum { TB_SAME = 0, TB_VALID = 1 };
enum { TB_ACT_NONE = 0, TB_ACT_RELU = 1, TB_ACT_RELU_N1_TO_1 = 2, TB_ACT_RELU6 = 3 };

#define TB_MAX_TENSORS 64
#define TB_MAX_OPS 32
#define TB_MAX_CODES 16
#define TB_MAX_FIELDS 12

typedef struct tb_tensor {
    const char *name;
    int type;          /* TB_F32, ... */
    int rank;          /* -1: no shape field */
    int32_t shape[8];
    int sig_rank;      /* > 0: a shape_signature of these dims */
    int32_t sig[8];
    const void *data;  /* constant bytes (borrowed until tb_pack), NULL for activations */
    size_t nbytes;
    int buffer;        /* 0: automatic; > 0: this buffer index and no data written (for
                          broken files) */
    int quant;         /* 1: quantization parameters with one scale and zero point */
} tb_tensor;

/* One scalar or int-vector field of an options table. */
typedef struct tb_field {
    int id;
    char kind; /* 'b' u8, 'i' i32, 'f' f32, 'v' vector of i32 */
    int32_t i;
    float f;
    int nv;
    int32_t v[8];
} tb_field;

typedef struct tb_opts {
    int type; /* BuiltinOptions tag, 0: none */
    int n;
    tb_field f[TB_MAX_FIELDS];
} tb_opts;

typedef struct tb_op {
    int opcode; /* index into codes */
    int nin, nout;
    int32_t in[8], out[4]; /* -1 in `in`: an omitted optional input */
    tb_opts opts;
} tb_op;

typedef struct tb_code {
    int32_t builtin;
    const char *custom; /* non-NULL: a custom_code string */
} tb_code;

typedef struct tb_model {
    uint32_t version; /* 0: 3 */
    const char *description;
    int ncodes, ntensors, nops, ninputs, noutputs;
    tb_code codes[TB_MAX_CODES];
    tb_tensor tensors[TB_MAX_TENSORS];
    tb_op ops[TB_MAX_OPS];
    int32_t inputs[8], outputs[8];
} tb_model;

/* ---- describing a model ---------------------------------------------------------------- */

/* An activation tensor of the given shape; returns its index. */
static inline int tb_tensor_add(tb_model *m, const char *name, int type, int rank,
                                const int32_t *dims)
{
    if (m->ntensors >= TB_MAX_TENSORS) abort();
    tb_tensor *t = &m->tensors[m->ntensors];
    memset(t, 0, sizeof *t);
    t->name = name, t->type = type, t->rank = rank;
    for (int i = 0; i < rank && i < 8; i++) t->shape[i] = dims[i];
    return m->ntensors++;
}

/* A constant (data borrowed until tb_pack; nbytes as given, so tests can lie). */
static inline int tb_const(tb_model *m, const char *name, int type, int rank,
                           const int32_t *dims, const void *data, size_t nbytes)
{
    int k = tb_tensor_add(m, name, type, rank, dims);
    m->tensors[k].data = data, m->tensors[k].nbytes = nbytes;
    return k;
}

static inline void tb_input(tb_model *m, int t) { m->inputs[m->ninputs++] = t; }
static inline void tb_output(tb_model *m, int t) { m->outputs[m->noutputs++] = t; }

/* The operator-code index of a builtin (shared between operators of one code). */
static inline int tb_code_of(tb_model *m, int32_t builtin)
{
    for (int i = 0; i < m->ncodes; i++)
        if (m->codes[i].builtin == builtin && !m->codes[i].custom) return i;
    if (m->ncodes >= TB_MAX_CODES) abort();
    m->codes[m->ncodes].builtin = builtin;
    m->codes[m->ncodes].custom = NULL;
    return m->ncodes++;
}

/* An operator with one output; returns it so options can be set. */
static inline tb_op *tb_op_add(tb_model *m, int32_t builtin, const int32_t *in, int nin,
                               int32_t out)
{
    if (m->nops >= TB_MAX_OPS || nin > 8) abort();
    tb_op *op = &m->ops[m->nops++];
    memset(op, 0, sizeof *op);
    op->opcode = tb_code_of(m, builtin);
    op->nin = nin, op->nout = 1, op->out[0] = out;
    for (int i = 0; i < nin; i++) op->in[i] = in[i];
    return op;
}

static inline void tb_opt_u8(tb_opts *o, int id, int v)
{
    o->f[o->n++] = (tb_field){.id = id, .kind = 'b', .i = v};
}
static inline void tb_opt_i32(tb_opts *o, int id, int32_t v)
{
    o->f[o->n++] = (tb_field){.id = id, .kind = 'i', .i = v};
}
static inline void tb_opt_f32(tb_opts *o, int id, float v)
{
    o->f[o->n++] = (tb_field){.id = id, .kind = 'f', .f = v};
}
static inline void tb_opt_vec(tb_opts *o, int id, const int32_t *v, int n)
{
    tb_field f = {.id = id, .kind = 'v', .nv = n};
    for (int i = 0; i < n && i < 8; i++) f.v[i] = v[i];
    o->f[o->n++] = f;
}

/* The option tables, fields in schema order. */
static inline void tb_conv_opts(tb_op *op, int padding, int stride_w, int stride_h, int act,
                                int dil_w, int dil_h)
{
    tb_opts *o = &op->opts;
    o->type = TB_OPT_CONV;
    tb_opt_u8(o, 0, padding);
    tb_opt_i32(o, 1, stride_w);
    tb_opt_i32(o, 2, stride_h);
    tb_opt_u8(o, 3, act);
    tb_opt_i32(o, 4, dil_w);
    tb_opt_i32(o, 5, dil_h);
}
static inline void tb_dwconv_opts(tb_op *op, int padding, int stride_w, int stride_h,
                                  int multiplier, int act, int dil_w, int dil_h)
{
    tb_opts *o = &op->opts;
    o->type = TB_OPT_DWCONV;
    tb_opt_u8(o, 0, padding);
    tb_opt_i32(o, 1, stride_w);
    tb_opt_i32(o, 2, stride_h);
    tb_opt_i32(o, 3, multiplier);
    tb_opt_u8(o, 4, act);
    tb_opt_i32(o, 5, dil_w);
    tb_opt_i32(o, 6, dil_h);
}
static inline void tb_pool_opts(tb_op *op, int padding, int stride_w, int stride_h,
                                int filter_w, int filter_h, int act)
{
    tb_opts *o = &op->opts;
    o->type = TB_OPT_POOL;
    tb_opt_u8(o, 0, padding);
    tb_opt_i32(o, 1, stride_w);
    tb_opt_i32(o, 2, stride_h);
    tb_opt_i32(o, 3, filter_w);
    tb_opt_i32(o, 4, filter_h);
    tb_opt_u8(o, 5, act);
}
static inline void tb_fc_opts(tb_op *op, int act, int keep_num_dims)
{
    op->opts.type = TB_OPT_FC;
    tb_opt_u8(&op->opts, 0, act);
    tb_opt_u8(&op->opts, 1, 0); /* weights_format DEFAULT */
    tb_opt_u8(&op->opts, 2, keep_num_dims);
}
static inline void tb_reshape_opts(tb_op *op, const int32_t *shape, int n)
{
    op->opts.type = TB_OPT_RESHAPE;
    tb_opt_vec(&op->opts, 0, shape, n);
}
static inline void tb_concat_opts(tb_op *op, int axis, int act)
{
    op->opts.type = TB_OPT_CONCAT;
    tb_opt_i32(&op->opts, 0, axis);
    tb_opt_u8(&op->opts, 1, act);
}
static inline void tb_softmax_opts(tb_op *op, float beta)
{
    op->opts.type = TB_OPT_SOFTMAX;
    tb_opt_f32(&op->opts, 0, beta);
}
/* ADD, SUB, MUL, DIV: the tag follows the operator's code. */
static inline void tb_arith_opts(tb_op *op, int32_t builtin, int act)
{
    op->opts.type = builtin == TB_ADD ? TB_OPT_ADD : builtin == TB_SUB ? TB_OPT_SUB
                  : builtin == TB_MUL ? TB_OPT_MUL : TB_OPT_DIV;
    tb_opt_u8(&op->opts, 0, act);
}
static inline void tb_leaky_relu_opts(tb_op *op, float alpha)
{
    op->opts.type = TB_OPT_LEAKY_RELU;
    tb_opt_f32(&op->opts, 0, alpha);
}
static inline void tb_reducer_opts(tb_op *op, int keep_dims)
{
    op->opts.type = TB_OPT_REDUCER;
    tb_opt_u8(&op->opts, 0, keep_dims);
}

/* ---- FlatBuffers writing ----------------------------------------------------------------- */

static inline void tb_pad_to(byte_writer *b, size_t align)
{
    static const uint8_t zero[16];
    while (b->n % align) bw_bytes(b, zero, 1);
}

static inline void tb_put32(byte_writer *b, uint32_t v)
{
    uint8_t d[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    bw_bytes(b, d, 4);
}

static inline void tb_set32(byte_writer *b, size_t at, uint32_t v)
{
    b->p[at] = (uint8_t)v, b->p[at + 1] = (uint8_t)(v >> 8);
    b->p[at + 2] = (uint8_t)(v >> 16), b->p[at + 3] = (uint8_t)(v >> 24);
}

/* Points the uoffset slot at `slot` to `to` (written after it). */
static inline void tb_patch(byte_writer *b, size_t slot, size_t to)
{
    if (to <= slot) abort(); /* uoffsets point forward */
    tb_set32(b, slot, (uint32_t)(to - slot));
}

/* A table under construction: scalar fields with their bytes, offset fields as slots. */
typedef struct tb_tab {
    int n;
    struct {
        int id, size, off; /* off: 1 for a uoffset slot */
        uint8_t v[4];
    } f[TB_MAX_FIELDS];
} tb_tab;

static inline void tab_scalar(tb_tab *t, int id, int size, uint32_t v)
{
    t->f[t->n].id = id, t->f[t->n].size = size, t->f[t->n].off = 0;
    for (int i = 0; i < 4; i++) t->f[t->n].v[i] = (uint8_t)(v >> (8 * i));
    t->n++;
}
static inline void tab_u8(tb_tab *t, int id, int v) { tab_scalar(t, id, 1, (uint32_t)v); }
static inline void tab_u32(tb_tab *t, int id, uint32_t v) { tab_scalar(t, id, 4, v); }
static inline void tab_f32(tb_tab *t, int id, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    tab_scalar(t, id, 4, u);
}
static inline void tab_off(tb_tab *t, int id)
{
    tab_scalar(t, id, 4, 0);
    t->f[t->n - 1].off = 1;
}

/* Writes the vtable and the table; slot[id] gets the position of each offset field
 * (slot has room for the largest id + 1). Returns the table's position. */
static inline size_t tb_table(byte_writer *b, const tb_tab *t, size_t *slot)
{
    int nf = 0;
    for (int i = 0; i < t->n; i++)
        if (t->f[i].id + 1 > nf) nf = t->f[i].id + 1;
    uint16_t vt[4 + TB_MAX_FIELDS * 4] = {0}, at = 4;
    for (int pass = 4; pass >= 1; pass -= 3) /* 4-byte fields, then bytes */
        for (int i = 0; i < t->n; i++)
            if (t->f[i].size == pass) vt[2 + t->f[i].id] = at, at = (uint16_t)(at + pass);
    at = (uint16_t)((at + 3) & ~3);
    size_t vtlen = 4 + 2 * (size_t)nf;
    tb_pad_to(b, 2);
    while ((b->n + vtlen) % 4) bw_bytes(b, "\0", 1);
    size_t vpos = b->n;
    vt[0] = (uint16_t)vtlen, vt[1] = at;
    for (int i = 0; i < 2 + nf; i++) {
        uint8_t d[2] = {(uint8_t)vt[i], (uint8_t)(vt[i] >> 8)};
        bw_bytes(b, d, 2);
    }
    size_t pos = b->n;
    tb_put32(b, (uint32_t)(pos - vpos)); /* soffset: vtable = table - soffset */
    uint8_t zero[64] = {0};
    bw_bytes(b, zero, at - 4u);
    for (int i = 0; i < t->n; i++) {
        size_t fp = pos + vt[2 + t->f[i].id];
        memcpy(b->p + fp, t->f[i].v, (size_t)t->f[i].size);
        if (t->f[i].off && slot) slot[t->f[i].id] = fp;
    }
    return pos;
}

/* A vector of n elements of `elem` bytes (little-endian host data assumed, as on every
 * machine the tests run on); returns the position of its count. */
static inline size_t tb_vector(byte_writer *b, const void *d, uint32_t n, size_t elem,
                               size_t align)
{
    tb_pad_to(b, 4);
    while ((b->n + 4) % align) bw_bytes(b, "\0", 1);
    size_t pos = b->n;
    tb_put32(b, n);
    bw_bytes(b, d, (size_t)n * elem);
    return pos;
}

static inline size_t tb_string(byte_writer *b, const char *s)
{
    size_t pos = tb_vector(b, s, (uint32_t)strlen(s), 1, 4);
    bw_bytes(b, "\0", 1);
    return pos;
}

/* A vector of n table slots; returns its position (element i's slot is pos + 4 + 4i). */
static inline size_t tb_table_vector(byte_writer *b, uint32_t n)
{
    tb_pad_to(b, 4);
    size_t pos = b->n;
    tb_put32(b, n);
    for (uint32_t i = 0; i < n; i++) tb_put32(b, 0);
    return pos;
}

/* A tensor table and its children; returns the table's position. */
static inline size_t tb_write_tensor(byte_writer *b, const tb_tensor *t, uint32_t buffer)
{
    tb_tab tab = {0};
    size_t slot[8] = {0};
    if (t->rank >= 0) tab_off(&tab, 0);
    tab_u8(&tab, 1, t->type);
    tab_u32(&tab, 2, buffer);
    tab_off(&tab, 3);
    if (t->quant) tab_off(&tab, 4);
    if (t->sig_rank > 0) tab_off(&tab, 7);
    size_t pos = tb_table(b, &tab, slot);
    if (t->rank >= 0) tb_patch(b, slot[0], tb_vector(b, t->shape, (uint32_t)t->rank, 4, 4));
    tb_patch(b, slot[3], tb_string(b, t->name ? t->name : ""));
    if (t->quant) { /* QuantizationParameters {min, max, scale = 2, zero_point = 3} */
        tb_tab q = {0};
        size_t qs[4] = {0};
        float scale = 0.05f;
        int64_t zp = 0;
        tab_off(&q, 2);
        tab_off(&q, 3);
        tb_patch(b, slot[4], tb_table(b, &q, qs));
        tb_patch(b, qs[2], tb_vector(b, &scale, 1, 4, 4));
        tb_patch(b, qs[3], tb_vector(b, &zp, 1, 8, 8));
    }
    if (t->sig_rank > 0) tb_patch(b, slot[7], tb_vector(b, t->sig, (uint32_t)t->sig_rank, 4, 4));
    return pos;
}

/* An operator table and its children; returns the table's position. */
static inline size_t tb_write_op(byte_writer *b, const tb_op *op)
{
    tb_tab tab = {0};
    size_t slot[8] = {0};
    tab_u32(&tab, 0, (uint32_t)op->opcode);
    tab_off(&tab, 1);
    tab_off(&tab, 2);
    if (op->opts.type || op->opts.n) {
        tab_u8(&tab, 3, op->opts.type);
        tab_off(&tab, 4);
    }
    size_t pos = tb_table(b, &tab, slot);
    tb_patch(b, slot[1], tb_vector(b, op->in, (uint32_t)op->nin, 4, 4));
    tb_patch(b, slot[2], tb_vector(b, op->out, (uint32_t)op->nout, 4, 4));
    if (!(op->opts.type || op->opts.n)) return pos;
    tb_tab o = {0};
    size_t os[TB_MAX_FIELDS] = {0};
    for (int i = 0; i < op->opts.n; i++) {
        const tb_field *f = &op->opts.f[i];
        if (f->kind == 'b') tab_u8(&o, f->id, f->i);
        else if (f->kind == 'i') tab_u32(&o, f->id, (uint32_t)f->i);
        else if (f->kind == 'f') tab_f32(&o, f->id, f->f);
        else tab_off(&o, f->id);
    }
    tb_patch(b, slot[4], tb_table(b, &o, os));
    for (int i = 0; i < op->opts.n; i++)
        if (op->opts.f[i].kind == 'v')
            tb_patch(b, os[op->opts.f[i].id],
                     tb_vector(b, op->opts.f[i].v, (uint32_t)op->opts.f[i].nv, 4, 4));
    return pos;
}

/* The file (malloc'd, *size bytes). */
static inline uint8_t *tb_pack(const tb_model *m, size_t *size)
{
    byte_writer b = {0};
    uint32_t buffer_of[TB_MAX_TENSORS], nbuffers = 1;
    for (int i = 0; i < m->ntensors; i++) {
        const tb_tensor *t = &m->tensors[i];
        buffer_of[i] = t->buffer > 0 ? (uint32_t)t->buffer : t->data ? nbuffers++ : 0;
    }
    tb_put32(&b, 0); /* root uoffset */
    bw_bytes(&b, "TFL3", 4);
    tb_tab root = {0};
    size_t rs[8] = {0};
    tab_u32(&root, 0, m->version ? m->version : 3);
    tab_off(&root, 1);
    tab_off(&root, 2);
    if (m->description) tab_off(&root, 3);
    tab_off(&root, 4);
    tb_patch(&b, 0, tb_table(&b, &root, rs));

    /* operator codes */
    size_t v = tb_table_vector(&b, (uint32_t)m->ncodes);
    tb_patch(&b, rs[1], v);
    for (int i = 0; i < m->ncodes; i++) {
        tb_tab t = {0};
        size_t s[4] = {0};
        int32_t code = m->codes[i].builtin;
        tab_u8(&t, 0, code < 127 ? code : 127); /* deprecated_builtin_code, capped */
        if (m->codes[i].custom) tab_off(&t, 1);
        tab_u32(&t, 2, 1);
        tab_u32(&t, 3, (uint32_t)code);
        tb_patch(&b, v + 4 + 4 * (size_t)i, tb_table(&b, &t, s));
        if (m->codes[i].custom) tb_patch(&b, s[1], tb_string(&b, m->codes[i].custom));
    }

    /* the subgraph */
    v = tb_table_vector(&b, 1);
    tb_patch(&b, rs[2], v);
    tb_tab sg = {0};
    size_t ss[8] = {0};
    for (int i = 0; i < 5; i++) tab_off(&sg, i);
    tb_patch(&b, v + 4, tb_table(&b, &sg, ss));
    size_t tv = tb_table_vector(&b, (uint32_t)m->ntensors);
    tb_patch(&b, ss[0], tv);
    for (int i = 0; i < m->ntensors; i++) {
        tb_patch(&b, tv + 4 + 4 * (size_t)i, tb_write_tensor(&b, &m->tensors[i], buffer_of[i]));
    }
    tb_patch(&b, ss[1], tb_vector(&b, m->inputs, (uint32_t)m->ninputs, 4, 4));
    tb_patch(&b, ss[2], tb_vector(&b, m->outputs, (uint32_t)m->noutputs, 4, 4));
    size_t ov = tb_table_vector(&b, (uint32_t)m->nops);
    tb_patch(&b, ss[3], ov);
    for (int i = 0; i < m->nops; i++) {
        tb_patch(&b, ov + 4 + 4 * (size_t)i, tb_write_op(&b, &m->ops[i]));
    }
    tb_patch(&b, ss[4], tb_string(&b, "main"));
    if (m->description) tb_patch(&b, rs[3], tb_string(&b, m->description));

    /* buffers: 0 empty, then one per constant */
    size_t bv = tb_table_vector(&b, nbuffers);
    tb_patch(&b, rs[4], bv);
    tb_tab empty = {0};
    tb_patch(&b, bv + 4, tb_table(&b, &empty, NULL));
    for (int i = 0, k = 1; i < m->ntensors; i++) {
        const tb_tensor *t = &m->tensors[i];
        if (!t->data || t->buffer > 0) continue;
        tb_tab bt = {0};
        size_t s[2] = {0};
        tab_off(&bt, 0);
        tb_patch(&b, bv + 4 + 4 * (size_t)k++, tb_table(&b, &bt, s));
        tb_patch(&b, s[0], tb_vector(&b, t->data, (uint32_t)t->nbytes, 1, 16));
    }
    *size = b.n;
    return b.p;
}

#endif
