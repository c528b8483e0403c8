/* Builds small ONNX models in memory with protobuf-c's generated structs and packs
 * them to bytes: the seed corpus generator (make_onnx_corpus.c) and the loader's unit
 * test (tests/unit/test_nn_onnx.c) share it. Header only; every allocation is owned by
 * the ob_model and freed by ob_free. Capacities are fixed (tiny test graphs). */
#ifndef FFU_TESTS_ONNX_BUILDER_H
#define FFU_TESTS_ONNX_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

#define OB_MAX_ITEMS 64 /* nodes, initializers, inputs, outputs, node inputs, attributes */

typedef struct ob_model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[2];
    Onnx__GraphProto *cur; /* where ob_node, ob_input, ... add: g, or a subgraph */
    void **owned;
    size_t nowned, capowned;
} ob_model;

static inline void *ob_alloc(ob_model *b, size_t size)
{
    if (b->nowned == b->capowned) {
        b->capowned = b->capowned ? b->capowned * 2 : 64;
        b->owned = realloc(b->owned, b->capowned * sizeof(void *));
        if (!b->owned) abort();
    }
    void *p = calloc(1, size ? size : 1);
    if (!p) abort();
    return b->owned[b->nowned++] = p;
}

/* A copy of n bytes owned by b (n may be 0 and src NULL then). */
static inline void *ob_dup(ob_model *b, const void *src, size_t n)
{
    void *p = ob_alloc(b, n);
    if (n) memcpy(p, src, n);
    return p;
}

static inline char *ob_str(ob_model *b, const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(ob_alloc(b, n), s, n);
}

/* Graph g empty, with room for OB_MAX_ITEMS of each list. */
static inline void ob_graph_init(ob_model *b, Onnx__GraphProto *g, const char *name)
{
    g->name = ob_str(b, name);
    g->node = ob_alloc(b, OB_MAX_ITEMS * sizeof(void *));
    g->initializer = ob_alloc(b, OB_MAX_ITEMS * sizeof(void *));
    g->input = ob_alloc(b, OB_MAX_ITEMS * sizeof(void *));
    g->output = ob_alloc(b, OB_MAX_ITEMS * sizeof(void *));
    g->value_info = ob_alloc(b, OB_MAX_ITEMS * sizeof(void *));
}

/* A model with one default-domain opset and an empty graph named "g". */
static inline ob_model *ob_new(int opset)
{
    ob_model *b = calloc(1, sizeof *b);
    if (!b) abort();
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->opset);
    b->m.has_ir_version = 1;
    b->m.ir_version = 7;
    b->m.producer_name = ob_str(b, "facefuse-tests");
    b->m.producer_version = ob_str(b, "1");
    b->opset.domain = ob_str(b, "");
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opsets[0] = &b->opset;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->opsets;
    b->m.graph = &b->g;
    ob_graph_init(b, &b->g, "g");
    b->cur = &b->g;
    return b;
}

static inline void ob_free(ob_model *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->nowned; i++) free(b->owned[i]);
    free(b->owned);
    free(b);
}

/* Splits "a,,b" into {"a", "", "b"}; "" gives no item. */
static inline size_t ob_split(ob_model *b, const char *list, char ***out)
{
    *out = ob_alloc(b, OB_MAX_ITEMS * sizeof(char *));
    if (!*list) return 0;
    size_t n = 0;
    for (const char *p = list;; p++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *s = ob_alloc(b, len + 1);
        memcpy(s, p, len);
        if (n < OB_MAX_ITEMS) (*out)[n++] = s;
        if (!e) break;
        p = e;
    }
    return n;
}

/* Adds a node: inputs and outputs are comma-separated names ("" entries = omitted). */
static inline Onnx__NodeProto *ob_node(ob_model *b, const char *op, const char *name,
                                       const char *inputs, const char *outputs)
{
    Onnx__NodeProto *n = ob_alloc(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = ob_str(b, op);
    n->name = ob_str(b, name);
    n->n_input = ob_split(b, inputs, &n->input);
    n->n_output = ob_split(b, outputs, &n->output);
    n->attribute = ob_alloc(b, OB_MAX_ITEMS * sizeof(void *));
    if (b->cur->n_node < OB_MAX_ITEMS) b->cur->node[b->cur->n_node++] = n;
    return n;
}

static inline Onnx__AttributeProto *ob_attr(ob_model *b, Onnx__NodeProto *n, const char *name,
                                            Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = ob_alloc(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ob_str(b, name);
    a->has_type = 1;
    a->type = type;
    if (n->n_attribute < OB_MAX_ITEMS) n->attribute[n->n_attribute++] = a;
    return a;
}

/* An empty graph as attribute `name` of node n (an If's then_branch, ...); set b->cur
 * to it to fill it, back to &b->g after. */
static inline Onnx__GraphProto *ob_subgraph(ob_model *b, Onnx__NodeProto *n, const char *name)
{
    Onnx__GraphProto *g = ob_alloc(b, sizeof *g);
    onnx__graph_proto__init(g);
    ob_graph_init(b, g, name);
    ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = g;
    return g;
}

static inline void ob_attr_int(ob_model *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static inline void ob_attr_float(ob_model *b, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static inline void ob_attr_string(ob_model *b, Onnx__NodeProto *n, const char *name,
                                  const char *v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)ob_str(b, v);
}

static inline void ob_attr_strings(ob_model *b, Onnx__NodeProto *n, const char *name,
                                   const char *const *v, size_t count)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = count;
    a->strings = ob_alloc(b, count * sizeof *a->strings);
    for (size_t i = 0; i < count; i++) {
        a->strings[i].len = strlen(v[i]);
        a->strings[i].data = (uint8_t *)ob_str(b, v[i]);
    }
}

static inline void ob_attr_ints(ob_model *b, Onnx__NodeProto *n, const char *name,
                                const int64_t *v, size_t count)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = count;
    a->ints = ob_dup(b, v, count * sizeof *v);
}

static inline void ob_attr_floats(ob_model *b, Onnx__NodeProto *n, const char *name,
                                  const float *v, size_t count)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = count;
    a->floats = ob_dup(b, v, count * sizeof *v);
}

/* A tensor with raw (little-endian) data of `nbytes`; dims as given. */
static inline Onnx__TensorProto *ob_tensor_raw(ob_model *b, const char *name, int onnx_type,
                                               const int64_t *dims, size_t rank,
                                               const void *data, size_t nbytes)
{
    Onnx__TensorProto *t = ob_alloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = ob_str(b, name);
    t->has_data_type = 1;
    t->data_type = onnx_type;
    t->n_dims = rank;
    t->dims = ob_dup(b, dims, rank * sizeof *dims);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = ob_dup(b, data, nbytes);
    return t;
}

static inline Onnx__TensorProto *ob_tensor_attr(ob_model *b, Onnx__NodeProto *n, const char *name,
                                                Onnx__TensorProto *t)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
    return t;
}

static inline void ob_initializer(ob_model *b, Onnx__TensorProto *t)
{
    if (b->cur->n_initializer < OB_MAX_ITEMS) b->cur->initializer[b->cur->n_initializer++] = t;
}

/* A tensor value: rank < 0 gives no shape; dims of -1 become dim_param "N". */
static inline Onnx__ValueInfoProto *ob_value(ob_model *b, const char *name, int elem_type,
                                             const int64_t *dims, int rank)
{
    Onnx__ValueInfoProto *v = ob_alloc(b, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = ob_str(b, name);
    Onnx__TypeProto *tp = ob_alloc(b, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = ob_alloc(b, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = elem_type != 0;
    tt->elem_type = elem_type;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sp = ob_alloc(b, sizeof *sp);
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)rank;
        sp->dim = ob_alloc(b, (size_t)rank * sizeof(void *));
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = ob_alloc(b, sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] >= 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = ob_str(b, "N");
            }
            sp->dim[i] = d;
        }
        tt->shape = sp;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

static inline void ob_input(ob_model *b, const char *name, int elem_type, const int64_t *dims,
                            int rank)
{
    if (b->cur->n_input < OB_MAX_ITEMS)
        b->cur->input[b->cur->n_input++] = ob_value(b, name, elem_type, dims, rank);
}

static inline void ob_output(ob_model *b, const char *name, int elem_type, const int64_t *dims,
                             int rank)
{
    if (b->cur->n_output < OB_MAX_ITEMS)
        b->cur->output[b->cur->n_output++] = ob_value(b, name, elem_type, dims, rank);
}

static inline void ob_value_info(ob_model *b, const char *name, int elem_type,
                                 const int64_t *dims, int rank)
{
    if (b->cur->n_value_info < OB_MAX_ITEMS)
        b->cur->value_info[b->cur->n_value_info++] = ob_value(b, name, elem_type, dims, rank);
}

/* The serialized model (malloc'd; caller frees). */
static inline uint8_t *ob_pack(const ob_model *b, size_t *size)
{
    *size = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(*size ? *size : 1);
    if (!buf) abort();
    onnx__model_proto__pack(&b->m, buf);
    return buf;
}

static inline uint8_t *ob_pack_tensor(const Onnx__TensorProto *t, size_t *size)
{
    *size = onnx__tensor_proto__get_packed_size(t);
    uint8_t *buf = malloc(*size ? *size : 1);
    if (!buf) abort();
    onnx__tensor_proto__pack(t, buf);
    return buf;
}

/* ---- the seed models (written by make_onnx_corpus, checked by test_nn_onnx) ---------------- */

enum { OB_F32 = 1, OB_U8 = 2, OB_I8 = 3, OB_I32 = 6, OB_I64 = 7, OB_BOOL = 9, OB_F16 = 10,
       OB_F64 = 11, OB_U32 = 12, OB_U64 = 13, OB_BF16 = 16 };

static inline Onnx__TensorProto *ob_const_f32(ob_model *b, const char *name, const int64_t *dims,
                                              size_t rank, const float *v, size_t n)
{
    return ob_tensor_raw(b, name, OB_F32, dims, rank, v, n * sizeof *v);
}

static inline Onnx__TensorProto *ob_const_i64(ob_model *b, const char *name, const int64_t *v,
                                              size_t n)
{
    int64_t d = (int64_t)n;
    return ob_tensor_raw(b, name, OB_I64, &d, 1, v, n * sizeof *v);
}

/* Conv + Relu + MaxPool + Gemm-free head at opset 13: the plain modern case. */
static inline ob_model *ob_seed_conv(void)
{
    ob_model *b = ob_new(13);
    int64_t xd[] = {1, 3, 8, 8}, wd[] = {4, 3, 3, 3}, bd[] = {4}, yd[] = {1, 4, 4, 4};
    float w[108], bias[4] = {0.5f, -0.5f, 0.25f, 0};
    for (int i = 0; i < 108; i++) w[i] = (float)((i * 7) % 11 - 5) / 8;
    ob_input(b, "x", OB_F32, xd, 4);
    ob_initializer(b, ob_const_f32(b, "w", wd, 4, w, 108));
    ob_initializer(b, ob_const_f32(b, "b", bd, 1, bias, 4));
    Onnx__NodeProto *n = ob_node(b, "Conv", "conv", "x,w,b", "c");
    int64_t k3[] = {3, 3}, p1[] = {1, 1, 1, 1}, k2[] = {2, 2};
    ob_attr_ints(b, n, "kernel_shape", k3, 2);
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_node(b, "Relu", "relu", "c", "r");
    n = ob_node(b, "MaxPool", "pool", "r", "y");
    ob_attr_ints(b, n, "kernel_shape", k2, 2);
    ob_attr_ints(b, n, "strides", k2, 2);
    ob_output(b, "y", OB_F32, yd, 4);
    return b;
}

/* Opset 9: attribute forms that later opsets turned into inputs, Upsample, Dropout,
 * BatchNormalization with unused training outputs, Softmax before opset 13; nodes in
 * reverse order; an initializer also listed as graph input (IR 3 style). */
static inline ob_model *ob_seed_opset9(void)
{
    ob_model *b = ob_new(9);
    int64_t xd[] = {1, 2, 4, 4}, cd[] = {2};
    float one[2] = {1, 1}, zero[2] = {0, 0}, sc[4] = {1, 1, 2, 2};
    int64_t sd[] = {4};
    ob_input(b, "x", OB_F32, xd, 4);
    ob_input(b, "scale", OB_F32, cd, 1);
    ob_initializer(b, ob_const_f32(b, "scale", cd, 1, one, 2));
    ob_initializer(b, ob_const_f32(b, "bias", cd, 1, zero, 2));
    ob_initializer(b, ob_const_f32(b, "mean", cd, 1, zero, 2));
    ob_initializer(b, ob_const_f32(b, "var", cd, 1, one, 2));
    ob_initializer(b, ob_const_f32(b, "scales", sd, 1, sc, 4));
    Onnx__NodeProto *n;
    int64_t ax0[] = {0}, ax1[] = {1}, pads[] = {0, 0, 1, 1, 0, 0, 1, 1};
    int64_t st[] = {0}, en[] = {5}, sp[] = {1, 1}, yd[] = {1, 1, 10, 10};
    /* listed last-first: the loader must sort */
    n = ob_node(b, "Softmax", "soft", "u", "y");
    ob_attr_int(b, n, "axis", 1);
    n = ob_node(b, "Unsqueeze", "unsq", "sq", "u");
    ob_attr_ints(b, n, "axes", ax0, 1);
    n = ob_node(b, "Squeeze", "sq", "red", "sq");
    ob_attr_ints(b, n, "axes", ax0, 1);
    n = ob_node(b, "ReduceMean", "red", "cat", "red");
    ob_attr_ints(b, n, "axes", ax1, 1);
    ob_attr_int(b, n, "keepdims", 1);
    n = ob_node(b, "Concat", "cat", "s0,s1", "cat");
    ob_attr_int(b, n, "axis", 1);
    n = ob_node(b, "Split", "split", "sl", "s0,s1");
    ob_attr_int(b, n, "axis", 1);
    ob_attr_ints(b, n, "split", sp, 2);
    n = ob_node(b, "Slice", "slice", "clip", "sl");
    ob_attr_ints(b, n, "starts", st, 1);
    ob_attr_ints(b, n, "ends", en, 1);
    ob_attr_ints(b, n, "axes", ax1, 1);
    n = ob_node(b, "Clip", "clip", "pad", "clip");
    ob_attr_float(b, n, "min", -1);
    ob_attr_float(b, n, "max", 6);
    n = ob_node(b, "Pad", "pad", "up", "pad");
    ob_attr_ints(b, n, "pads", pads, 8);
    ob_attr_float(b, n, "value", 0.5f);
    ob_attr_string(b, n, "mode", "constant");
    n = ob_node(b, "Upsample", "up", "drop,scales", "up");
    ob_attr_string(b, n, "mode", "nearest");
    n = ob_node(b, "Dropout", "drop", "bn", "drop,mask");
    ob_attr_float(b, n, "ratio", 0.25f);
    n = ob_node(b, "BatchNormalization", "bn", "x,scale,bias,mean,var", "bn,rm,rv,sm,sv");
    ob_attr_float(b, n, "epsilon", 1e-5f);
    ob_output(b, "y", OB_F32, yd, 4);
    return b;
}

/* Opset 7 Upsample (scales attribute, bilinear spelling), Softmax without axis. */
static inline ob_model *ob_seed_opset7(void)
{
    ob_model *b = ob_new(7);
    int64_t xd[] = {1, 1, 2, 2}, yd[] = {1, 1, 4, 6};
    float sc[4] = {1, 1, 2, 3};
    ob_input(b, "x", OB_F32, xd, 4);
    Onnx__NodeProto *n = ob_node(b, "Upsample", "up", "x", "u");
    ob_attr_floats(b, n, "scales", sc, 4);
    ob_attr_string(b, n, "mode", "bilinear");
    ob_node(b, "LogSoftmax", "ls", "u", "y");
    ob_output(b, "y", OB_F32, yd, 4);
    return b;
}

/* Opset 10 Resize (2 inputs) and Slice with inputs. */
static inline ob_model *ob_seed_resize10(void)
{
    ob_model *b = ob_new(10);
    int64_t xd[] = {1, 1, 4, 4}, sd[] = {4};
    float sc[4] = {1, 1, 0.5f, 0.5f};
    int64_t st[] = {0}, en[] = {1}, ax[] = {3}, yd[] = {1, 1, 2, 1};
    ob_input(b, "x", OB_F32, xd, 4);
    ob_initializer(b, ob_const_f32(b, "scales", sd, 1, sc, 4));
    ob_initializer(b, ob_const_i64(b, "st", st, 1));
    ob_initializer(b, ob_const_i64(b, "en", en, 1));
    ob_initializer(b, ob_const_i64(b, "ax", ax, 1));
    Onnx__NodeProto *n = ob_node(b, "Resize", "rs", "x,scales", "r");
    ob_attr_string(b, n, "mode", "nearest");
    ob_node(b, "Slice", "sl", "r,st,en,ax", "y");
    ob_output(b, "y", OB_F32, yd, 4);
    return b;
}

/* Constant forms, ConstantOfShape, Cast, shape arithmetic (opset 12). */
static inline ob_model *ob_seed_constants(void)
{
    ob_model *b = ob_new(12);
    int64_t xd[] = {-1, 3}, two = 2, one = 1, rd[] = {-1, 1};
    float half = 0.5f;
    ob_input(b, "x", OB_F32, xd, 2);
    Onnx__NodeProto *n = ob_node(b, "Constant", "c0", "", "k");
    ob_tensor_attr(b, n, "value", ob_tensor_raw(b, "", OB_F32, NULL, 0, &half, 4));
    n = ob_node(b, "Constant", "c1", "", "idx");
    ob_attr_int(b, n, "value_int", 1);
    n = ob_node(b, "Constant", "c2", "", "shp");
    int64_t shp[] = {-1, 1};
    ob_attr_ints(b, n, "value_ints", shp, 2);
    n = ob_node(b, "Constant", "c3", "", "fl");
    ob_attr_float(b, n, "value_float", 2.0f);
    ob_node(b, "Mul", "mul", "x,k", "m");
    ob_node(b, "Add", "add", "m,fl", "a");
    ob_node(b, "Shape", "shape", "a", "s");
    ob_node(b, "Gather", "gather", "s,idx", "g");
    n = ob_node(b, "Cast", "cast", "g", "gf");
    ob_attr_int(b, n, "to", OB_F32);
    ob_node(b, "Reshape", "reshape", "a,shp", "r");
    n = ob_node(b, "ConstantOfShape", "cos", "s", "z");
    ob_tensor_attr(b, n, "value", ob_tensor_raw(b, "", OB_I64, &one, 1, &two, 8));
    ob_output(b, "r", OB_F32, rd, 2);
    ob_output(b, "gf", OB_F32, NULL, 0);
    ob_output(b, "z", OB_I64, xd, 2);
    return b;
}

/* Initializers stored in the typed fields rather than raw_data, one per field. */
static inline ob_model *ob_seed_typed(void)
{
    ob_model *b = ob_new(13);
    static float f[3] = {1.5f, -2, 3};
    static int32_t h[2] = {0x3c00, 0xc000}; /* f16 1, -2 */
    static int32_t bo[3] = {0, 1, 7};
    static int64_t l[2] = {-5, 1LL << 40};
    static double d[2] = {0.25, -1e300};
    static uint64_t u[2] = {7, 0xffffffffu};
    struct { const char *name; int type; int64_t n; } spec[] = {
        {"tf", OB_F32, 3}, {"th", OB_F16, 2}, {"tb", OB_BOOL, 3}, {"tl", OB_I64, 2},
        {"td", OB_F64, 2}, {"tu", OB_U32, 2}, {"ti8", OB_I8, 3}, {"tu64", OB_U64, 2},
    };
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        Onnx__TensorProto *t = ob_alloc(b, sizeof *t);
        onnx__tensor_proto__init(t);
        t->name = ob_str(b, spec[i].name);
        t->has_data_type = 1;
        t->data_type = spec[i].type;
        t->n_dims = 1;
        t->dims = ob_alloc(b, sizeof(int64_t));
        t->dims[0] = spec[i].n;
        switch (spec[i].type) {
        case OB_F32: t->n_float_data = 3, t->float_data = f; break;
        case OB_F16: t->n_int32_data = 2, t->int32_data = h; break;
        case OB_BOOL: case OB_I8: t->n_int32_data = 3, t->int32_data = bo; break;
        case OB_I64: t->n_int64_data = 2, t->int64_data = l; break;
        case OB_F64: t->n_double_data = 2, t->double_data = d; break;
        default: t->n_uint64_data = 2, t->uint64_data = u; break;
        }
        ob_initializer(b, t);
    }
    int64_t xd[] = {3};
    ob_input(b, "x", OB_F32, xd, 1);
    ob_node(b, "Add", "add", "x,tf", "y");
    ob_output(b, "y", OB_F32, xd, 1);
    return b;
}

/* Opset 18: Split with num_outputs (split dim known from the input), ReduceMax with an
 * axes input, Pad with axes, Resize with an empty roi and scales. */
static inline ob_model *ob_seed_opset18(void)
{
    ob_model *b = ob_new(18);
    int64_t xd[] = {1, 7, 4}, ax[] = {2}, sz[] = {1, 1, 8}, ad[] = {1, 2, 4};
    ob_input(b, "x", OB_F32, xd, 3);
    ob_initializer(b, ob_const_i64(b, "ax", ax, 1));
    ob_initializer(b, ob_const_i64(b, "sizes", sz, 3));
    ob_initializer(b, ob_tensor_raw(b, "empty", OB_F32, (int64_t[]){0}, 1, "", 0));
    Onnx__NodeProto *n = ob_node(b, "Split", "split", "x", "a,b2,c,d");
    ob_attr_int(b, n, "axis", 1);
    ob_attr_int(b, n, "num_outputs", 4);
    n = ob_node(b, "ReduceMax", "rmax", "d,ax", "m");
    ob_attr_int(b, n, "keepdims", 1);
    n = ob_node(b, "Resize", "rs", "m,empty,empty,sizes", "y");
    ob_attr_string(b, n, "mode", "linear");
    ob_output(b, "y", OB_F32, sz, 3);
    ob_output(b, "a", OB_F32, ad, 3);
    return b;
}

/* Opset 16 index and sampling ops: GridSample, TopK, ScatterND, GatherND, Trilu,
 * CumSum, OneHot, Hardmax and CastLike, their K, axis and index inputs constants. */
static inline ob_model *ob_seed_vision_ops(void)
{
    ob_model *b = ob_new(16);
    int64_t xd[] = {1, 2, 4, 4}, gd[] = {1, 3, 3, 2}, yd[] = {1, 2, 3, 3};
    int64_t k[] = {2}, axis[] = {3}, depth[] = {3}, ones[] = {1};
    int64_t idx_d[] = {2, 4}, idx[] = {0, 1, 2, 3, 0, 0, -1, 0};
    int64_t gidx_d[] = {1, 2}, gidx[] = {0, 1};
    int64_t oh_d[] = {2}, oh[] = {1, -1};
    float upd[] = {5, -5}, onoff[] = {0, 1};
    ob_input(b, "x", OB_F32, xd, 4);
    ob_input(b, "grid", OB_F32, gd, 4);
    ob_initializer(b, ob_const_i64(b, "k", k, 1));
    ob_initializer(b, ob_const_i64(b, "axis", axis, 1));
    ob_initializer(b, ob_const_i64(b, "depth", depth, 1));
    ob_initializer(b, ob_const_i64(b, "one", ones, 1));
    ob_initializer(b, ob_tensor_raw(b, "idx", OB_I64, idx_d, 2, idx, sizeof idx));
    ob_initializer(b, ob_tensor_raw(b, "gidx", OB_I64, gidx_d, 2, gidx, sizeof gidx));
    ob_initializer(b, ob_tensor_raw(b, "oh", OB_I64, oh_d, 1, oh, sizeof oh));
    ob_initializer(b, ob_const_f32(b, "upd", (int64_t[]){2}, 1, upd, 2));
    ob_initializer(b, ob_const_f32(b, "onoff", (int64_t[]){2}, 1, onoff, 2));
    Onnx__NodeProto *n = ob_node(b, "GridSample", "gs", "x,grid", "g");
    ob_attr_string(b, n, "mode", "bicubic");
    ob_attr_string(b, n, "padding_mode", "reflection");
    ob_attr_int(b, n, "align_corners", 1);
    n = ob_node(b, "TopK", "topk", "g,k", "tv,ti");
    ob_attr_int(b, n, "axis", -1);
    ob_node(b, "ScatterND", "snd", "x,idx,upd", "s");
    ob_node(b, "GatherND", "gnd", "s,gidx", "gn");
    n = ob_node(b, "Trilu", "tri", "s,one", "t");
    ob_attr_int(b, n, "upper", 0);
    n = ob_node(b, "CumSum", "cum", "t,axis", "c");
    ob_attr_int(b, n, "reverse", 1);
    n = ob_node(b, "OneHot", "onehot", "oh,depth,onoff", "o");
    ob_attr_int(b, n, "axis", 0);
    ob_node(b, "Hardmax", "hm", "g", "h");
    ob_node(b, "CastLike", "cl", "ti,grid", "tf");
    ob_output(b, "h", OB_F32, yd, 4);
    ob_output(b, "tv", OB_F32, NULL, 0);
    ob_output(b, "tf", OB_F32, NULL, 0);
    ob_output(b, "gn", OB_F32, NULL, 0);
    ob_output(b, "c", OB_F32, xd, 4);
    ob_output(b, "o", OB_F32, NULL, 0);
    return b;
}

/* Opset 13 quantisation: QuantizeLinear per channel (i8, axis 1) and back, a constant
 * u8 tensor's DequantizeLinear without a zero point (folded at load),
 * DynamicQuantizeLinear, ConvInteger, MatMulInteger (folded: constant operands) and
 * BitShift. */
static inline ob_model *ob_seed_quant(void)
{
    ob_model *b = ob_new(13);
    int64_t xd[] = {1, 3, 2, 2}, three = 3, one = 1, cd[] = {2, 2};
    float sc[] = {0.5f, 0.25f, 2.0f}, s1 = 0.1f;
    int8_t zp[] = {0, -3, 7};
    uint8_t cq[] = {0, 100, 200, 255}, cz = 128, sh[] = {1, 2, 3, 9};
    ob_input(b, "x", OB_F32, xd, 4);
    ob_initializer(b, ob_const_f32(b, "sc", &three, 1, sc, 3));
    ob_initializer(b, ob_tensor_raw(b, "zp", OB_I8, &three, 1, zp, sizeof zp));
    ob_initializer(b, ob_const_f32(b, "s1", &one, 0, &s1, 1));
    ob_initializer(b, ob_tensor_raw(b, "cq", OB_U8, cd, 2, cq, sizeof cq));
    ob_initializer(b, ob_tensor_raw(b, "cz", OB_U8, &one, 0, &cz, 1));
    ob_initializer(b, ob_tensor_raw(b, "sh", OB_U8, cd, 2, sh, sizeof sh));
    Onnx__NodeProto *n = ob_node(b, "QuantizeLinear", "q", "x,sc,zp", "xq");
    ob_attr_int(b, n, "axis", 1);
    n = ob_node(b, "DequantizeLinear", "dq", "xq,sc,zp", "xd");
    ob_attr_int(b, n, "axis", -3);
    ob_node(b, "DequantizeLinear", "cdq", "cq,s1", "c"); /* no zero point: 0 */
    ob_node(b, "DynamicQuantizeLinear", "dyn", "xd", "y,ys,yz");
    n = ob_node(b, "BitShift", "shl", "cq,sh", "cs");
    ob_attr_string(b, n, "direction", "LEFT");
    int64_t wd[] = {2, 3, 1, 1};
    uint8_t wq[] = {1, 2, 3, 250, 0, 9};
    ob_initializer(b, ob_tensor_raw(b, "wq", OB_U8, wd, 4, wq, sizeof wq));
    ob_node(b, "ConvInteger", "ci", "y,wq,yz,cz", "ci");
    ob_node(b, "MatMulInteger", "mi", "cq,sh,cz", "mi");
    ob_output(b, "xd", OB_F32, xd, 4);
    ob_output(b, "c", OB_F32, cd, 2);
    ob_output(b, "y", OB_U8, xd, 4);
    ob_output(b, "ys", OB_F32, NULL, 0);
    ob_output(b, "yz", OB_U8, NULL, 0);
    ob_output(b, "cs", OB_U8, cd, 2);
    ob_output(b, "ci", OB_I32, (int64_t[]){1, 2, 2, 2}, 4);
    ob_output(b, "mi", OB_I32, cd, 2);
    return b;
}

/* ONNX Runtime's dynamic quantisation around a Conv and a MatMul (DynamicQuantizeLinear
 * -> ConvInteger / MatMulInteger with constant i8 weights -> Cast -> Mul by the scales),
 * which the load passes turn into f32 products behind ffu.DynamicQuantizeSteps
 * (rewrite_integer.c). */
static inline ob_model *ob_seed_dynamic_quant(void)
{
    ob_model *b = ob_new(13);
    int64_t xd[] = {1, 4, 5, 6}, wd[] = {3, 4, 3, 3}, md[] = {90, 2}, one = 1;
    static int8_t w[3 * 4 * 3 * 3], m[90 * 2];
    for (int i = 0; i < 108; i++) w[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < 180; i++) m[i] = (int8_t)((i * 53) % 201 - 100);
    const float ws = 0.02f, ms = 0.01f;
    const int8_t zero = 0;
    ob_input(b, "x", OB_F32, xd, 4);
    ob_initializer(b, ob_tensor_raw(b, "w", OB_I8, wd, 4, w, sizeof w));
    ob_initializer(b, ob_tensor_raw(b, "wz", OB_I8, &one, 0, &zero, 1));
    ob_initializer(b, ob_const_f32(b, "ws", &one, 0, &ws, 1));
    ob_initializer(b, ob_tensor_raw(b, "m", OB_I8, md, 2, m, sizeof m));
    ob_initializer(b, ob_const_f32(b, "ms", &one, 0, &ms, 1));
    ob_node(b, "DynamicQuantizeLinear", "dq1", "x", "xq,xs,xz");
    Onnx__NodeProto *n = ob_node(b, "ConvInteger", "conv", "xq,w,xz,wz", "acc");
    ob_attr_ints(b, n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    n = ob_node(b, "Cast", "cast1", "acc", "accf");
    ob_attr_int(b, n, "to", OB_F32);
    ob_node(b, "Mul", "s1", "xs,ws", "sc1");
    ob_node(b, "Mul", "y", "accf,sc1", "y");
    n = ob_node(b, "Flatten", "flat", "y", "f");
    ob_attr_int(b, n, "axis", 1);
    ob_node(b, "DynamicQuantizeLinear", "dq2", "f", "fq,fs,fz");
    ob_node(b, "MatMulInteger", "mm", "fq,m,fz", "macc");
    n = ob_node(b, "Cast", "cast2", "macc", "maccf");
    ob_attr_int(b, n, "to", OB_F32);
    ob_node(b, "Mul", "s2", "fs,ms", "sc2");
    ob_node(b, "Mul", "z", "maccf,sc2", "z");
    ob_output(b, "z", OB_F32, (int64_t[]){1, 2}, 2);
    ob_output(b, "y", OB_F32, (int64_t[]){1, 3, 5, 6}, 4);
    return b;
}

/* The shapes that the fusions at planning (fuse.c nn_fuse_planned) look for: a Conv
 * without bias whose sums are scaled by a run-time value and given a per-channel bias
 * and an activation, a Conv whose output is added to a graph input (a residual), and
 * a MaxPool after it. The fuzzer plans and runs it (plan_check.h). */
static inline ob_model *ob_seed_planned(void)
{
    ob_model *b = ob_new(13);
    int64_t xd[] = {1, 4, 6, 6}, wd[] = {4, 4, 3, 3}, bd[] = {1, 4, 1, 1}, cd[] = {4}, one = 1;
    float w[144], bias[4] = {0.5f, -0.5f, 0.25f, 0};
    for (int i = 0; i < 144; i++) w[i] = (float)((i * 7) % 11 - 5) / 8;
    int64_t k3[] = {3, 3}, p1[] = {1, 1, 1, 1}, k2[] = {2, 2};
    ob_input(b, "x", OB_F32, xd, 4);
    ob_input(b, "s", OB_F32, &one, 1);
    ob_initializer(b, ob_const_f32(b, "w", wd, 4, w, 144));
    ob_initializer(b, ob_const_f32(b, "b", bd, 4, bias, 4));
    ob_initializer(b, ob_const_f32(b, "cb", cd, 1, bias, 4));
    Onnx__NodeProto *n = ob_node(b, "Conv", "conv1", "x,w", "acc");
    ob_attr_ints(b, n, "kernel_shape", k3, 2);
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_node(b, "Mul", "scale", "acc,s", "m");
    ob_node(b, "Add", "bias", "m,b", "a");
    ob_node(b, "Relu", "relu", "a", "r");
    n = ob_node(b, "Conv", "conv2", "r,w,cb", "c2");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_node(b, "Add", "residual", "c2,x", "sum");
    n = ob_node(b, "MaxPool", "pool", "sum", "y");
    ob_attr_ints(b, n, "kernel_shape", k2, 2);
    ob_attr_ints(b, n, "strides", k2, 2);
    ob_output(b, "y", OB_F32, (int64_t[]){1, 4, 3, 3}, 4);
    return b;
}

/* Weights and biases of the seeds below: value i of array f is
 * ((i * mul + f) % mod - mod / 2) / 16, a few sixteenths either side of zero. */
typedef struct {
    float *w;
    int n;
} ob_fill;

static inline void ob_fill_pattern(const ob_fill *fill, size_t nf, int mul, int mod)
{
    for (size_t f = 0; f < nf; f++)
        for (int i = 0; i < fill[f].n; i++)
            fill[f].w[i] = (float)((i * mul + (int)f) % mod - mod / 2) / 16;
}

/* A feature pyramid's top-down sums (fuse.c: Resize + Add, planned in place of the
 * operand): a 3x3 convolution into 20 channels at 16x16, pooled and 1x1-convolved to
 * 8x8, upsampled by nearest (added to the fine map, then ReLU) and by linear (added to
 * that), then a 1x1 convolution. */
static inline ob_model *ob_seed_pyramid(void)
{
    ob_model *b = ob_new(13);
    static float w0[20 * 3 * 9], w1[20 * 20], w2[20 * 20], bias[20];
    static const float scales[4] = {1, 1, 2, 2};
    const ob_fill fill[] = {{w0, 540}, {w1, 400}, {w2, 400}, {bias, 20}};
    ob_fill_pattern(fill, sizeof fill / sizeof fill[0], 5, 13);
    int64_t p1[] = {1, 1, 1, 1}, k2[] = {2, 2}, sd = 4;
    ob_input(b, "x", OB_F32, (int64_t[]){1, 3, 16, 16}, 4);
    ob_initializer(b, ob_const_f32(b, "w0", (int64_t[]){20, 3, 3, 3}, 4, w0, 540));
    ob_initializer(b, ob_const_f32(b, "w1", (int64_t[]){20, 20, 1, 1}, 4, w1, 400));
    ob_initializer(b, ob_const_f32(b, "w2", (int64_t[]){20, 20, 1, 1}, 4, w2, 400));
    ob_initializer(b, ob_const_f32(b, "b", (int64_t[]){20}, 1, bias, 20));
    ob_initializer(b, ob_const_f32(b, "scales", &sd, 1, scales, 4));
    Onnx__NodeProto *n = ob_node(b, "Conv", "fine", "x,w0,b", "fine");
    ob_attr_ints(b, n, "pads", p1, 4);
    n = ob_node(b, "MaxPool", "pool", "fine", "pooled");
    ob_attr_ints(b, n, "kernel_shape", k2, 2);
    ob_attr_ints(b, n, "strides", k2, 2);
    ob_node(b, "Conv", "coarse", "pooled,w1,b", "coarse");
    n = ob_node(b, "Resize", "up", "coarse,,scales", "up");
    ob_attr_string(b, n, "mode", "nearest");
    ob_node(b, "Add", "sum", "fine,up", "sum");
    ob_node(b, "Relu", "relu", "sum", "r");
    n = ob_node(b, "Resize", "up2", "coarse,,scales", "up2");
    ob_attr_string(b, n, "mode", "linear");
    ob_node(b, "Add", "sum2", "up2,r", "sum2");
    ob_node(b, "Conv", "out", "sum2,w2,b", "y");
    ob_output(b, "y", OB_F32, (int64_t[]){1, 20, 16, 16}, 4);
    return b;
}

/* Layers in the shapes the cpu backend gives its own kernels and oneDNN's fused forms
 * (docs/NN_CPU.md): a 3-channel stride-2 first layer, a 16 -> 16 3x3 convolution at
 * 16x16 (Winograd), a depthwise layer with PReLU, a 1x1 with ReLU6, max and average
 * pools, a strided convolution, then global pooling, Gemm and Softmax. The fuzzer runs
 * it on ref and cpu and compares them (plan_check.h). */
static inline ob_model *ob_seed_cpu_kernels(void)
{
    ob_model *b = ob_new(13);
    static float w0[16 * 3 * 9], w1[16 * 16 * 9], wd[16 * 9], wp[32 * 16], ws[16 * 32 * 9],
        wg[16 * 8], bias[32], slope[16];
    const ob_fill fill[] = {{w0, 432},  {w1, 2304}, {wd, 144},  {wp, 512},
                            {ws, 4608}, {wg, 128},  {bias, 32}, {slope, 16}};
    ob_fill_pattern(fill, sizeof fill / sizeof fill[0], 7, 11);
    int64_t p1[] = {1, 1, 1, 1}, s2[] = {2, 2}, k2[] = {2, 2}, k3[] = {3, 3};
    ob_input(b, "x", OB_F32, (int64_t[]){1, 3, 32, 32}, 4);
    ob_initializer(b, ob_const_f32(b, "w0", (int64_t[]){16, 3, 3, 3}, 4, w0, 432));
    ob_initializer(b, ob_const_f32(b, "w1", (int64_t[]){16, 16, 3, 3}, 4, w1, 2304));
    ob_initializer(b, ob_const_f32(b, "wd", (int64_t[]){16, 1, 3, 3}, 4, wd, 144));
    ob_initializer(b, ob_const_f32(b, "wp", (int64_t[]){32, 16, 1, 1}, 4, wp, 512));
    ob_initializer(b, ob_const_f32(b, "ws", (int64_t[]){16, 32, 3, 3}, 4, ws, 4608));
    ob_initializer(b, ob_const_f32(b, "wg", (int64_t[]){16, 8}, 2, wg, 128));
    ob_initializer(b, ob_const_f32(b, "b16", (int64_t[]){16}, 1, bias, 16));
    ob_initializer(b, ob_const_f32(b, "b32", (int64_t[]){32}, 1, bias, 32));
    ob_initializer(b, ob_const_f32(b, "slope", (int64_t[]){16, 1, 1}, 3, slope, 16));
    Onnx__NodeProto *n = ob_node(b, "Conv", "first", "x,w0,b16", "c0");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_attr_ints(b, n, "strides", s2, 2);
    ob_node(b, "Relu", "relu0", "c0", "r0");
    n = ob_node(b, "Conv", "conv3x3", "r0,w1,b16", "c1");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_node(b, "Relu", "relu1", "c1", "r1");
    n = ob_node(b, "Conv", "dw", "r1,wd,b16", "d");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_attr_int(b, n, "group", 16);
    ob_node(b, "PRelu", "prelu", "d,slope", "pd");
    ob_node(b, "Conv", "pw", "pd,wp,b32", "pw");
    n = ob_node(b, "Clip", "relu6", "pw", "p");
    ob_attr_float(b, n, "min", 0); /* opset 13 takes min/max as inputs: ignored here */
    n = ob_node(b, "MaxPool", "maxpool", "p", "mp");
    ob_attr_ints(b, n, "kernel_shape", k2, 2);
    ob_attr_ints(b, n, "strides", s2, 2);
    n = ob_node(b, "AveragePool", "avgpool", "p", "ap");
    ob_attr_ints(b, n, "kernel_shape", k3, 2);
    ob_attr_ints(b, n, "strides", s2, 2);
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_node(b, "Add", "sum", "mp,ap", "a");
    n = ob_node(b, "Conv", "strided", "a,ws,b16", "st");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_attr_ints(b, n, "strides", s2, 2);
    ob_node(b, "GlobalAveragePool", "gap", "st", "g");
    ob_node(b, "Flatten", "flat", "g", "f");
    ob_node(b, "Gemm", "gemm", "f,wg", "l");
    ob_node(b, "Softmax", "softmax", "l", "y");
    n = ob_node(b, "ReduceMean", "mean", "a", "m");
    ob_attr_ints(b, n, "axes", (int64_t[]){2, 3}, 2);
    ob_output(b, "y", OB_F32, (int64_t[]){1, 8}, 2);
    ob_output(b, "m", OB_F32, (int64_t[]){1, 32, 1, 1}, 4);
    return b;
}

/* Shapes computed from an input's value (the session's bound mode): k (i64 [2]; the
 * fuzzer's pattern fills it with [0, 3]) decides a Tile's repeats, a Slice's starts and
 * ends, an Expand's, a Reshape's and a Resize's target shapes, a ConstantOfShape and a
 * Range. With k = [a, b]: t = Tile(x [1,2,3], [1, 1, b+1]), y = Slice(t, a..b on axis
 * 2) + x, e = Expand(x[:, :1], [1, b+1, 3]), r = Reshape(t, [1, b+1, -1]),
 * z = Resize(x as [1,2,3,1], sizes [1, 2, a+3, b+2]), c = ConstantOfShape([a+1, b+1]),
 * n = Range(0, a+b, 1). */
static inline ob_model *ob_seed_value_shapes(void)
{
    ob_model *b = ob_new(13);
    int64_t zero = 0, one = 1, two = 2, three = 3, minus1 = -1, add[2] = {2, 1};
    float half = 0.5f;
    ob_input(b, "x", OB_F32, (int64_t[]){1, 2, 3}, 3);
    ob_input(b, "k", OB_I64, (int64_t[]){2}, 1);
    ob_initializer(b, ob_const_i64(b, "zero", &zero, 1));
    ob_initializer(b, ob_const_i64(b, "one", &one, 1));
    ob_initializer(b, ob_const_i64(b, "two", &two, 1));
    ob_initializer(b, ob_const_i64(b, "three", &three, 1));
    ob_initializer(b, ob_const_i64(b, "minus1", &minus1, 1));
    ob_initializer(b, ob_const_i64(b, "add", add, 2));
    ob_initializer(b, ob_tensor_raw(b, "s0", OB_I64, NULL, 0, &zero, 8));
    ob_initializer(b, ob_tensor_raw(b, "s1", OB_I64, NULL, 0, &one, 8));
    ob_node(b, "Add", "kp", "k,one", "kp");
    Onnx__NodeProto *n = ob_node(b, "Concat", "rep", "one,one,kp1", "rep");
    ob_attr_int(b, n, "axis", 0);
    ob_node(b, "Slice", "k0", "k,zero,one", "k0");
    ob_node(b, "Slice", "k1", "k,one,two", "k1");
    ob_node(b, "Slice", "kp1", "kp,one,two", "kp1");
    ob_node(b, "Tile", "tile", "x,rep", "t");
    ob_node(b, "Slice", "slice", "t,k0,k1,two", "s");
    ob_node(b, "Add", "y", "s,x", "y");
    ob_node(b, "Slice", "x0", "x,zero,one,one", "x0");
    n = ob_node(b, "Concat", "eshape", "one,kp1,three", "eshape");
    ob_attr_int(b, n, "axis", 0);
    ob_node(b, "Expand", "expand", "x0,eshape", "e");
    n = ob_node(b, "Concat", "rshape", "one,kp1,minus1", "rshape");
    ob_attr_int(b, n, "axis", 0);
    ob_node(b, "Reshape", "reshape", "t,rshape", "r");
    ob_node(b, "Unsqueeze", "x4", "x,three", "x4");
    ob_node(b, "Add", "hw", "kp,add", "hw");
    n = ob_node(b, "Concat", "sizes", "one,two,hw", "sizes");
    ob_attr_int(b, n, "axis", 0);
    n = ob_node(b, "Resize", "resize", "x4,,,sizes", "z");
    ob_attr_string(b, n, "mode", "linear");
    n = ob_node(b, "ConstantOfShape", "cos", "kp", "c");
    ob_tensor_attr(b, n, "value", ob_tensor_raw(b, "", OB_F32, &one, 1, &half, 4));
    n = ob_node(b, "ReduceSum", "sum", "k", "ks");
    ob_attr_int(b, n, "keepdims", 0);
    ob_node(b, "Range", "range", "s0,ks,s1", "n");
    const char *outs[] = {"y", "e", "r", "z", "c"};
    for (int i = 0; i < 5; i++)
        ob_output(b, outs[i], OB_F32, NULL, -1);
    ob_output(b, "n", OB_I64, NULL, -1);
    return b;
}

/* A run of convolutions the cpu backend runs in thread strips on two threads
 * (src/nn/cpu/cpu_strips.c): after a first layer, a 1x1 expansion with a PRelu (a step
 * of its own in oneDNN), a 3x3 depthwise layer, a 1x1 projection adding the block's
 * input, a stride-2 depthwise layer (four members), then a 1x1 layer into the graph
 * output; 13 rows, so strips are uneven, and rows read around a thread's own at both
 * depthwise layers. */
static inline ob_model *ob_seed_strips(void)
{
    ob_model *b = ob_new(13);
    static float w0[16 * 3 * 9], we[32 * 16], wd[32 * 9], wp[16 * 32], wd2[16 * 9], wo[8 * 16],
        bias[32], slope[32];
    const ob_fill fill[] = {{w0, 432},  {we, 512}, {wd, 288},  {wp, 512},
                            {wd2, 144}, {wo, 128}, {bias, 32}, {slope, 32}};
    ob_fill_pattern(fill, sizeof fill / sizeof fill[0], 5, 13);
    int64_t p1[] = {1, 1, 1, 1}, s2[] = {2, 2};
    ob_input(b, "x", OB_F32, (int64_t[]){1, 3, 13, 10}, 4);
    ob_initializer(b, ob_const_f32(b, "w0", (int64_t[]){16, 3, 3, 3}, 4, w0, 432));
    ob_initializer(b, ob_const_f32(b, "we", (int64_t[]){32, 16, 1, 1}, 4, we, 512));
    ob_initializer(b, ob_const_f32(b, "wd", (int64_t[]){32, 1, 3, 3}, 4, wd, 288));
    ob_initializer(b, ob_const_f32(b, "wp", (int64_t[]){16, 32, 1, 1}, 4, wp, 512));
    ob_initializer(b, ob_const_f32(b, "wd2", (int64_t[]){16, 1, 3, 3}, 4, wd2, 144));
    ob_initializer(b, ob_const_f32(b, "wo", (int64_t[]){8, 16, 1, 1}, 4, wo, 128));
    ob_initializer(b, ob_const_f32(b, "b16", (int64_t[]){16}, 1, bias, 16));
    ob_initializer(b, ob_const_f32(b, "b32", (int64_t[]){32}, 1, bias, 32));
    ob_initializer(b, ob_const_f32(b, "slope", (int64_t[]){32, 1, 1}, 3, slope, 32));
    Onnx__NodeProto *n = ob_node(b, "Conv", "first", "x,w0,b16", "c0");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_node(b, "Relu", "relu0", "c0", "a");
    ob_node(b, "Conv", "expand", "a,we,b32", "e0");
    ob_node(b, "PRelu", "prelu", "e0,slope", "e");
    n = ob_node(b, "Conv", "dw", "e,wd,b32", "d0");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_attr_int(b, n, "group", 32);
    ob_node(b, "Relu", "relu1", "d0", "d");
    ob_node(b, "Conv", "project", "d,wp,b16", "p");
    ob_node(b, "Add", "residual", "p,a", "r");
    n = ob_node(b, "Conv", "dw2", "r,wd2,b16", "d2");
    ob_attr_ints(b, n, "pads", p1, 4);
    ob_attr_ints(b, n, "strides", s2, 2);
    ob_attr_int(b, n, "group", 16);
    ob_node(b, "Conv", "out", "d2,wo", "y");
    ob_output(b, "y", OB_F32, (int64_t[]){1, 8, 7, 5}, 4);
    return b;
}

/* Einsum: a contraction with a constant operand (the cpu backend's strided matmul), an
 * attention-style product with a transposed output, an implicit output and a batched
 * diagonal (ref). */
static inline ob_model *ob_seed_einsum(void)
{
    ob_model *b = ob_new(12);
    int64_t xd[] = {2, 3, 4}, wd[] = {4, 5}, yd[] = {2, 3, 5}, qd[] = {2, 4, 3};
    float w[20];
    for (int i = 0; i < 20; i++)
        w[i] = (float)(i % 7) * 0.25f - 0.75f;
    ob_input(b, "x", OB_F32, xd, 3);
    ob_input(b, "q", OB_F32, qd, 3);
    ob_initializer(b, ob_const_f32(b, "w", wd, 2, w, 20));
    Onnx__NodeProto *n = ob_node(b, "Einsum", "proj", "x,w", "y");
    ob_attr_string(b, n, "equation", "bij,jk->bik");
    n = ob_node(b, "Einsum", "attn", "x,q", "a");
    ob_attr_string(b, n, "equation", "b i d , b d j -> b j i");
    n = ob_node(b, "Einsum", "implicit", "a,x", "s");
    ob_attr_string(b, n, "equation", "bji,bjk");
    n = ob_node(b, "Einsum", "diag", "a", "d");
    ob_attr_string(b, n, "equation", "...ii->...i");
    ob_output(b, "y", OB_F32, yd, 3);
    ob_output(b, "s", OB_F32, NULL, 0);
    ob_output(b, "d", OB_F32, NULL, 0);
    return b;
}

/* Sizes known only at run time (ir.h NN_T_BOUNDED): a Conv (the cpu backend's) feeds
 * NonMaxSuppression whose selections pick boxes through Gathers; NonZero of a mask is
 * transposed, then reshaped to [3, K] through a Shape -> Gather -> Unsqueeze -> Concat
 * chain of the bounded value; Compress keeps the masked scores and a ReduceSum adds
 * them; Unique counts the selected boxes. Outputs: sel [k, 3], kept [k, 4], r [3, K]
 * (i64), big [K], sum [] (f32), ub [u], ucnt [u] (i64). */
static inline ob_model *ob_seed_data_shape(void)
{
    ob_model *b = ob_new(14);
    int64_t sd[] = {1, 2, 6}, bd[] = {1, 6, 4}, wd[] = {2, 2, 1}, one[] = {1};
    float w[4] = {1, 0, 0, 1}, half = 0.5f, iou = 0.5f, smin = 0.2f;
    int64_t three[] = {3}, two[] = {2}, zero[] = {0}, flat[] = {-1};
    ob_input(b, "s", OB_F32, sd, 3);
    ob_input(b, "b", OB_F32, bd, 3);
    ob_initializer(b, ob_const_f32(b, "w", wd, 3, w, 4));
    ob_initializer(b, ob_const_f32(b, "half", NULL, 0, &half, 1));
    ob_initializer(b, ob_const_f32(b, "iou", one, 1, &iou, 1));
    ob_initializer(b, ob_const_f32(b, "smin", one, 1, &smin, 1));
    ob_initializer(b, ob_tensor_raw(b, "max", OB_I64, one, 1, three, sizeof three));
    ob_initializer(b, ob_tensor_raw(b, "two", OB_I64, NULL, 0, two, sizeof two));
    ob_initializer(b, ob_tensor_raw(b, "zero", OB_I64, NULL, 0, zero, sizeof zero));
    ob_initializer(b, ob_const_i64(b, "axes0", zero, 1));
    ob_initializer(b, ob_const_i64(b, "three", three, 1));
    ob_initializer(b, ob_const_i64(b, "flat", flat, 1));
    ob_node(b, "Conv", "conv", "s,w", "sc");
    ob_node(b, "NonMaxSuppression", "nms", "b,sc,max,iou,smin", "sel");
    Onnx__NodeProto *n = ob_node(b, "Gather", "pick", "sel,two", "bi");
    ob_attr_int(b, n, "axis", 1);
    ob_node(b, "Squeeze", "sq", "b,axes0", "b2");
    ob_node(b, "Gather", "boxes", "b2,bi", "kept");
    ob_node(b, "Greater", "gt", "s,half", "m");
    ob_node(b, "NonZero", "nz", "m", "nz");
    n = ob_node(b, "Transpose", "tr", "nz", "nzt");
    ob_attr_ints(b, n, "perm", (int64_t[]){1, 0}, 2);
    ob_node(b, "Shape", "shape", "nzt", "shp");
    ob_node(b, "Gather", "k0", "shp,zero", "k");
    ob_node(b, "Unsqueeze", "k1", "k,axes0", "k1");
    n = ob_node(b, "Concat", "cat", "three,k1", "newshape");
    ob_attr_int(b, n, "axis", 0);
    n = ob_node(b, "Reshape", "r", "nzt,newshape", "r");
    ob_attr_int(b, n, "allowzero", 1); /* K may be 0: [3, 0], not "copy dim 1" */
    ob_node(b, "Reshape", "mflat", "m,flat", "mf");
    ob_node(b, "Compress", "cmp", "s,mf", "big");
    n = ob_node(b, "ReduceSum", "sum", "big", "sum");
    ob_attr_int(b, n, "keepdims", 0);
    ob_node(b, "Unique", "uniq", "bi", "ub,ui,uinv,ucnt");
    ob_output(b, "sel", OB_I64, NULL, 0);
    ob_output(b, "kept", OB_F32, NULL, 0);
    ob_output(b, "r", OB_I64, NULL, 0);
    ob_output(b, "big", OB_F32, NULL, 0);
    ob_output(b, "sum", OB_F32, NULL, 0);
    ob_output(b, "ub", OB_I64, NULL, 0);
    ob_output(b, "ucnt", OB_I64, NULL, 0);
    return b;
}

/* MaxPool with its Indices, MaxUnpool of them, and RoiAlign over the same map. */
static inline ob_model *ob_seed_pool_roi(void)
{
    ob_model *b = ob_new(16);
    int64_t xd[] = {1, 2, 6, 6}, rd[] = {2, 4}, k[] = {2, 2}, zeros[] = {0, 0};
    float rois[8] = {0.5f, 1, 4, 5.5f, 2, 0, 3, 2};
    ob_input(b, "x", OB_F32, xd, 4);
    ob_initializer(b, ob_const_f32(b, "rois", rd, 2, rois, 8));
    ob_initializer(b, ob_const_i64(b, "bi", zeros, 2));
    Onnx__NodeProto *n = ob_node(b, "MaxPool", "pool", "x", "p,i");
    ob_attr_ints(b, n, "kernel_shape", k, 2);
    ob_attr_ints(b, n, "strides", k, 2);
    n = ob_node(b, "MaxUnpool", "unpool", "p,i", "u");
    ob_attr_ints(b, n, "kernel_shape", k, 2);
    ob_attr_ints(b, n, "strides", k, 2);
    n = ob_node(b, "RoiAlign", "roi", "x,rois,bi", "r");
    ob_attr_int(b, n, "output_height", 3);
    ob_attr_int(b, n, "output_width", 2);
    ob_attr_int(b, n, "sampling_ratio", 2);
    ob_attr_float(b, n, "spatial_scale", 0.5f);
    ob_output(b, "u", OB_F32, xd, 4);
    ob_output(b, "r", OB_F32, NULL, 0);
    return b;
}

/* The two loss ops: NegativeLogLikelihoodLoss with ignore_index and no reduction, and
 * SoftmaxCrossEntropyLoss with class weights and its log_prob output. */
static inline ob_model *ob_seed_losses(void)
{
    ob_model *b = ob_new(13);
    int64_t xd[] = {2, 3, 4}, td[] = {2, 4}, wd[] = {3};
    int64_t tgt[8] = {0, 1, 2, 1, 2, 0, 1, 1};
    float w[3] = {0.5f, 1, 2};
    ob_input(b, "x", OB_F32, xd, 3);
    ob_initializer(b, ob_tensor_raw(b, "t", OB_I64, td, 2, tgt, sizeof tgt));
    ob_initializer(b, ob_const_f32(b, "w", wd, 1, w, 3));
    Onnx__NodeProto *n = ob_node(b, "NegativeLogLikelihoodLoss", "nll", "x,t", "nll");
    ob_attr_string(b, n, "reduction", "none");
    ob_attr_int(b, n, "ignore_index", 1);
    ob_node(b, "SoftmaxCrossEntropyLoss", "sce", "x,t,w", "sce,lp");
    ob_output(b, "nll", OB_F32, td, 2);
    ob_output(b, "sce", OB_F32, NULL, 0);
    ob_output(b, "lp", OB_F32, xd, 3);
    return b;
}

/* The signal ops at opset 17: a Hann window for an STFT, a one-sided DFT of the same
 * signal, a Hamming and a Blackman window, and a MelWeightMatrix. */
static inline ob_model *ob_seed_signal(void)
{
    ob_model *b = ob_new(17);
    int64_t xd[] = {1, 32, 1}, eight = 8, four = 4, bins = 6, len = 16, rate = 8000;
    int32_t seven = 7;
    float lo = 20, hi = 3800;
    ob_input(b, "x", OB_F32, xd, 3);
    ob_initializer(b, ob_tensor_raw(b, "eight", OB_I64, NULL, 0, &eight, sizeof eight));
    ob_initializer(b, ob_tensor_raw(b, "four", OB_I64, NULL, 0, &four, sizeof four));
    ob_initializer(b, ob_tensor_raw(b, "seven", OB_I32, NULL, 0, &seven, sizeof seven));
    ob_initializer(b, ob_tensor_raw(b, "bins", OB_I64, NULL, 0, &bins, sizeof bins));
    ob_initializer(b, ob_tensor_raw(b, "len", OB_I64, NULL, 0, &len, sizeof len));
    ob_initializer(b, ob_tensor_raw(b, "rate", OB_I64, NULL, 0, &rate, sizeof rate));
    ob_initializer(b, ob_tensor_raw(b, "lo", OB_F32, NULL, 0, &lo, sizeof lo));
    ob_initializer(b, ob_tensor_raw(b, "hi", OB_F32, NULL, 0, &hi, sizeof hi));
    ob_node(b, "HannWindow", "hann", "eight", "w");
    ob_node(b, "STFT", "stft", "x,four,w", "s");
    Onnx__NodeProto *n = ob_node(b, "DFT", "dft", "x,len", "d");
    ob_attr_int(b, n, "onesided", 1);
    n = ob_node(b, "HammingWindow", "hamming", "seven", "hm");
    ob_attr_int(b, n, "periodic", 0);
    n = ob_node(b, "BlackmanWindow", "blackman", "seven", "bm");
    ob_attr_int(b, n, "output_datatype", 11);
    ob_node(b, "MelWeightMatrix", "mel", "bins,len,rate,lo,hi", "m");
    ob_output(b, "s", OB_F32, NULL, 0);
    ob_output(b, "d", OB_F32, NULL, 0);
    ob_output(b, "hm", OB_F32, NULL, 0);
    ob_output(b, "bm", OB_F64, NULL, 0);
    ob_output(b, "m", OB_F32, NULL, 0);
    return b;
}

/* The recurrent ops: a bidirectional GRU with linear_before_reset and sequence lengths,
 * an LSTM with peepholes and initial states, an RNN with clip and named activations. */
static inline ob_model *ob_seed_recurrent(void)
{
    ob_model *b = ob_new(14);
    int64_t xd[] = {4, 2, 3}, gw[] = {2, 6, 3}, gr[] = {2, 6, 2}, lw[] = {1, 8, 3},
            lr[] = {1, 8, 2}, lb[] = {1, 16}, lp[] = {1, 6}, hd[] = {1, 2, 2}, rw[] = {1, 2, 3},
            rr[] = {1, 2, 2};
    int32_t lens[2] = {4, 2};
    float v[48];
    for (int i = 0; i < 48; i++)
        v[i] = 0.05f * (float)((i * 7) % 19) - 0.4f;
    ob_input(b, "x", OB_F32, xd, 3);
    ob_initializer(b, ob_const_f32(b, "gw", gw, 3, v, 36));
    ob_initializer(b, ob_const_f32(b, "gr", gr, 3, v + 4, 24));
    ob_initializer(b, ob_tensor_raw(b, "lens", OB_I32, (int64_t[]){2}, 1, lens, sizeof lens));
    ob_initializer(b, ob_const_f32(b, "lw", lw, 3, v + 1, 24));
    ob_initializer(b, ob_const_f32(b, "lr", lr, 3, v + 2, 16));
    ob_initializer(b, ob_const_f32(b, "lb", lb, 2, v + 3, 16));
    ob_initializer(b, ob_const_f32(b, "lp", lp, 2, v + 5, 6));
    ob_initializer(b, ob_const_f32(b, "h0", hd, 3, v + 6, 4));
    ob_initializer(b, ob_const_f32(b, "rw", rw, 3, v + 7, 6));
    ob_initializer(b, ob_const_f32(b, "rr", rr, 3, v + 8, 4));
    Onnx__NodeProto *n = ob_node(b, "GRU", "gru", "x,gw,gr,,lens", "gy,gh");
    ob_attr_int(b, n, "hidden_size", 2);
    ob_attr_int(b, n, "linear_before_reset", 1);
    ob_attr_string(b, n, "direction", "bidirectional");
    n = ob_node(b, "LSTM", "lstm", "x,lw,lr,lb,,h0,h0,lp", "ly,lh,lc");
    ob_attr_int(b, n, "hidden_size", 2);
    n = ob_node(b, "RNN", "rnn", "x,rw,rr", ",rh");
    ob_attr_int(b, n, "hidden_size", 2);
    ob_attr_float(b, n, "clip", 0.5f);
    ob_attr_strings(b, n, "activations", (const char *[]){"HardSigmoid"}, 1);
    ob_output(b, "gy", OB_F32, NULL, 0);
    ob_output(b, "gh", OB_F32, NULL, 0);
    ob_output(b, "ly", OB_F32, NULL, 0);
    ob_output(b, "lc", OB_F32, NULL, 0);
    ob_output(b, "rh", OB_F32, NULL, 0);
    return b;
}

/* TfIdfVectorizer over int64 tokens: uni- to trigrams with skips, TFIDF weights. */
static inline ob_model *ob_seed_tfidf(void)
{
    ob_model *b = ob_new(9);
    int64_t xd[] = {2, 8}, pool[] = {3, 5, 3, 5, 5, 3, 1, 3, 5}, counts[] = {0, 2, 6},
            index[] = {4, 1, 0, 3, 2};
    float w[] = {0.5f, 1, 2, 0.25f, 3};
    ob_input(b, "x", OB_I64, xd, 2);
    Onnx__NodeProto *n = ob_node(b, "TfIdfVectorizer", "tfidf", "x", "y");
    ob_attr_string(b, n, "mode", "TFIDF");
    ob_attr_int(b, n, "min_gram_length", 1);
    ob_attr_int(b, n, "max_gram_length", 3);
    ob_attr_int(b, n, "max_skip_count", 2);
    ob_attr_ints(b, n, "pool_int64s", pool, 9);
    ob_attr_ints(b, n, "ngram_counts", counts, 3);
    ob_attr_ints(b, n, "ngram_indexes", index, 5);
    ob_attr_floats(b, n, "weights", w, 5);
    ob_output(b, "y", OB_F32, NULL, 0);
    return b;
}

/* y = If(c): then relu(x) + k (k a branch initializer, relu(x) from the outer graph),
 * else relu(x)^2, or, with `nested`, else If(c2): then -(relu(x)^2) else relu(x)^2 (the
 * inner branches read the else-branch's own value). Both branches name their value "t".
 * `ragged`: the else-branch gives 2 values instead of 4. `const_c`: c is an
 * initializer (true) instead of a graph input. The seeds, and tests/unit/test_nn_onnx.c's
 * If test. */
static inline ob_model *ob_if(int nested, int ragged, int const_c)
{
    int64_t xd[] = {4}, kd[] = {4}, two[] = {2}, none[] = {0};
    const float k[4] = {1, 2, 3, 4};
    ob_model *b = ob_new(13);
    ob_input(b, "x", OB_F32, xd, 1);
    if (const_c)
        ob_initializer(b, ob_tensor_raw(b, "c", OB_BOOL, none, 0, (const uint8_t[]){1}, 1));
    else
        ob_input(b, "c", OB_BOOL, none, 0);
    if (nested) ob_input(b, "c2", OB_BOOL, none, 0);
    ob_node(b, "Relu", "relu", "x", "xr");
    Onnx__NodeProto *n = ob_node(b, "If", "if0", "c", "y");
    b->cur = ob_subgraph(b, n, "then_branch");
    ob_initializer(b, ob_const_f32(b, "k", kd, 1, k, 4));
    ob_node(b, "Add", "add", "xr,k", "t");
    ob_output(b, "t", OB_F32, xd, 1);
    b->cur = ob_subgraph(b, n, "else_branch");
    ob_node(b, "Mul", "mul", "xr,xr", "t");
    if (ragged) {
        const int64_t st[] = {0}, en[] = {2};
        ob_initializer(b, ob_const_i64(b, "s0", st, 1));
        ob_initializer(b, ob_const_i64(b, "s1", en, 1));
        ob_node(b, "Slice", "cut", "t,s0,s1", "v");
        ob_output(b, "v", OB_F32, two, 1);
    } else if (nested) {
        Onnx__GraphProto *outer_else = b->cur;
        Onnx__NodeProto *in = ob_node(b, "If", "if1", "c2", "v");
        b->cur = ob_subgraph(b, in, "then_branch");
        ob_node(b, "Neg", "neg", "t", "u");
        ob_output(b, "u", OB_F32, xd, 1);
        b->cur = ob_subgraph(b, in, "else_branch");
        ob_node(b, "Identity", "same", "t", "u");
        ob_output(b, "u", OB_F32, xd, 1);
        b->cur = outer_else;
        ob_output(b, "v", OB_F32, xd, 1);
    } else {
        ob_output(b, "t", OB_F32, xd, 1);
    }
    b->cur = &b->g;
    ob_output(b, "y", OB_F32, xd, 1);
    return b;
}

static inline ob_model *ob_seed_if(void) { return ob_if(1, 0, 0); }
static inline ob_model *ob_seed_if_const(void) { return ob_if(0, 1, 1); }

/* Scan (unrolled at load) over a (a_len x 2, axis 0; a_len -1: unknown) and bt (2 x 3,
 * axis 1, last to first) with state s (2): body n1 = s + a_t, n2 = n1 * b_t, s' = n2 + w
 * (w read from the outer graph); stacked outputs n1 (axis 0) and n2 (axis -1, last to
 * first). Graph outputs: the final state sf, the stacks y1 and y2 (which = -1), or only
 * the one of index `which`. The seed, and tests/unit/test_nn_onnx.c's Scan test. */
static inline ob_model *ob_scan(int opset, int64_t a_len, int which)
{
    ob_model *b = ob_new(opset);
    int64_t sd[] = {2}, ad[] = {a_len, 2}, bd[] = {2, 3}, y1d[] = {3, 2};
    ob_input(b, "s", OB_F32, sd, 1);
    ob_input(b, "a", OB_F32, ad, 2);
    ob_input(b, "bt", OB_F32, bd, 2);
    ob_input(b, "w", OB_F32, sd, 1);
    Onnx__NodeProto *n = ob_node(b, "Scan", "scan", "s,a,bt", "sf,y1,y2");
    ob_attr_int(b, n, "num_scan_inputs", 2);
    ob_attr_ints(b, n, "scan_input_axes", (const int64_t[]){0, 1}, 2);
    ob_attr_ints(b, n, "scan_input_directions", (const int64_t[]){0, 1}, 2);
    ob_attr_ints(b, n, "scan_output_axes", (const int64_t[]){0, -1}, 2);
    ob_attr_ints(b, n, "scan_output_directions", (const int64_t[]){0, 1}, 2);
    b->cur = ob_subgraph(b, n, "body");
    ob_input(b, "st", OB_F32, sd, 1);
    ob_input(b, "ai", OB_F32, sd, 1);
    ob_input(b, "bi", OB_F32, sd, 1);
    ob_node(b, "Add", "add", "st,ai", "n1");
    ob_node(b, "Mul", "mul", "n1,bi", "n2");
    ob_node(b, "Add", "addw", "n2,w", "st2");
    ob_output(b, "st2", OB_F32, sd, 1);
    ob_output(b, "n1", OB_F32, sd, 1);
    ob_output(b, "n2", OB_F32, sd, 1);
    b->cur = &b->g;
    if (which <= 0) ob_output(b, "sf", OB_F32, sd, 1);
    if (which < 0 || which == 1) ob_output(b, "y1", OB_F32, y1d, 2);
    if (which < 0 || which == 2) ob_output(b, "y2", OB_F32, bd, 2);
    return b;
}

static inline ob_model *ob_seed_scan(void) { return ob_scan(11, 3, -1); }

typedef ob_model *(*ob_seed_fn)(void);
static const struct {
    const char *file;
    ob_seed_fn fn;
} ob_seeds[] = {
    {"conv.onnx", ob_seed_conv},
    {"opset9_upgrades.onnx", ob_seed_opset9},
    {"opset7_upsample.onnx", ob_seed_opset7},
    {"resize10.onnx", ob_seed_resize10},
    {"constants.onnx", ob_seed_constants},
    {"typed_fields.onnx", ob_seed_typed},
    {"opset18.onnx", ob_seed_opset18},
    {"vision_ops.onnx", ob_seed_vision_ops},
    {"quant.onnx", ob_seed_quant},
    {"dynamic_quant.onnx", ob_seed_dynamic_quant},
    {"planned.onnx", ob_seed_planned},
    {"cpu_kernels.onnx", ob_seed_cpu_kernels},
    {"pyramid.onnx", ob_seed_pyramid},
    {"value_shapes.onnx", ob_seed_value_shapes},
    {"strips.onnx", ob_seed_strips},
    {"einsum.onnx", ob_seed_einsum},
    {"data_shape.onnx", ob_seed_data_shape},
    {"pool_roi.onnx", ob_seed_pool_roi},
    {"losses.onnx", ob_seed_losses},
    {"signal.onnx", ob_seed_signal},
    {"recurrent.onnx", ob_seed_recurrent},
    {"tfidf.onnx", ob_seed_tfidf},
    {"if.onnx", ob_seed_if},
    {"if_const.onnx", ob_seed_if_const},
    {"scan.onnx", ob_seed_scan},
};

#endif
