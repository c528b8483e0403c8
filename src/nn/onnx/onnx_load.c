/* The ONNX loader's upper half: ModelProto -> nn_graph.
 *
 * Three passes over the GraphProto: (1) every named value becomes a tensor --
 * initializers and Constant nodes as constants, graph inputs, node outputs -- so nodes
 * may refer to values defined later in the file (ONNX allows any order); (2) every
 * other node becomes a graph node, rewritten into the canonical op form of ops.def
 * (the newest opset: attributes that later opsets turned into inputs become constant
 * inputs, Upsample becomes Resize, ...); (3) graph outputs are marked and the nodes are
 * sorted topologically. docs/NN_ONNX.md lists the rewrites.
 *
 * Ops that hold subgraphs are unfolded into the one graph: an If's two branches are
 * loaded into it, their values renamed under the node's name, and each output of the
 * If becomes a Where over the condition that picks the then- or the else-branch's value
 * ("If" below); a Scan's body is loaded once per step ("Scan" below). */
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnx_internal.h"

/* ---- a name -> pointer map over strings owned by the parsed message ---------------------- */

typedef struct smap {
    const char **keys;
    const void **vals;
    size_t cap; /* power of two */
} smap;

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int smap_init(smap *m, size_t n)
{
    m->cap = 16;
    while (m->cap < 2 * n + 1) m->cap *= 2;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    return m->keys && m->vals ? 0 : -1;
}

static void smap_free(smap *m)
{
    free(m->keys);
    free(m->vals);
}

/* Keeps the first value for a key (insertions never exceed the size given to init). */
static void smap_put(smap *m, const char *k, const void *v)
{
    size_t mask = m->cap - 1, h = hash_str(k) & mask;
    for (; m->keys[h]; h = (h + 1) & mask)
        if (strcmp(m->keys[h], k) == 0) return;
    m->keys[h] = k;
    m->vals[h] = v;
}

static const void *smap_get(const smap *m, const char *k)
{
    size_t mask = m->cap - 1, h = hash_str(k) & mask;
    for (; m->keys[h]; h = (h + 1) & mask)
        if (strcmp(m->keys[h], k) == 0) return m->vals[h];
    return NULL;
}

/* ---- loader state ------------------------------------------------------------------------ */

typedef struct loader {
    nn_graph *g;
    const Onnx__GraphProto *gp;
    int opset;
    smap vinfo; /* name -> ValueInfoProto (graph inputs, outputs, value_info): type hints */
    smap used;  /* names read by some node or listed as graph outputs (value: non-NULL) */
} loader;

#define S onnx_str

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *np, const char *name)
{
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i] && strcmp(S(np->attribute[i]->name), name) == 0)
            return np->attribute[i];
    return NULL;
}

static ffu_status node_err(const Onnx__NodeProto *np, ffu_status s, const char *fmt, ...)
    FFU_PRINTF(3, 4);
static ffu_status node_err(const Onnx__NodeProto *np, ffu_status s, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ffu_error_set(s, "ONNX node '%s' (%s): %s", S(np->name), S(np->op_type), msg);
}

/* Type of a ValueInfoProto: dtype (UNDEFINED when absent) and shape (rank -1 when
 * absent; dim_param and unknown dims -1). Non-tensor types are unsupported. */
static ffu_status value_type(const Onnx__ValueInfoProto *vi, const char *what, ffu_dtype *dt,
                             nn_shape *shape)
{
    *dt = FFU_DTYPE_UNDEFINED;
    shape->rank = -1;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return FFU_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s '%s' is not a tensor (sequence, map, "
                             "optional and sparse values are not supported)", what, S(vi->name));
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && tt->elem_type != 0) {
        *dt = nn_onnx_dtype(tt->elem_type);
        if (*dt == FFU_DTYPE_UNDEFINED)
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s '%s': ONNX data type %d is not supported",
                                 what, S(vi->name), tt->elem_type);
    }
    if (!tt->shape) return FFU_OK;
    if (tt->shape->n_dim > FFU_NN_MAX_RANK)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s '%s': rank %zu is above the limit of %d", what,
                             S(vi->name), tt->shape->n_dim, FFU_NN_MAX_RANK);
    shape->rank = (int)tt->shape->n_dim;
    for (int i = 0; i < shape->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        shape->d[i] = -1;
        if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return ffu_error_set(FFU_ERR_FORMAT, "%s '%s': negative dimension %lld", what,
                                     S(vi->name), (long long)d->dim_value);
            shape->d[i] = d->dim_value;
        }
    }
    return FFU_OK;
}

/* Element type of tensor t: its own, else the file's value_info (hint), else UNDEFINED. */
static ffu_dtype dtype_hint(const loader *L, int t, nn_shape *shape)
{
    const nn_tensor *x = &L->g->tensors[t];
    if (shape) *shape = x->shape;
    if (x->dtype != FFU_DTYPE_UNDEFINED) return x->dtype;
    const Onnx__ValueInfoProto *vi = smap_get(&L->vinfo, x->name);
    ffu_dtype dt = FFU_DTYPE_UNDEFINED;
    nn_shape s;
    if (vi && value_type(vi, "value", &dt, &s) == FFU_OK && shape) *shape = s;
    ffu_error_clear();
    return dt;
}

/* ---- constants made by the rewrites -------------------------------------------------------- */

static int add_const(loader *L, const Onnx__NodeProto *np, const char *what, ffu_dtype dt,
                     const nn_shape *shape, const void *data, size_t nbytes)
{
    char base[200], buf[256];
    snprintf(base, sizeof base, "%s/%s", np->name && *np->name ? np->name : S(np->op_type), what);
    return nn_graph_add_const(L->g, onnx_unique_name(L->g, base, buf, sizeof buf), dt, shape,
                              data, nbytes, NN_COPY);
}

static int add_i64s(loader *L, const Onnx__NodeProto *np, const char *what, const int64_t *v,
                    size_t n)
{
    nn_shape s = {.rank = 1, .d = {(int64_t)n}};
    return add_const(L, np, what, FFU_DTYPE_I64, &s, v, n * sizeof(int64_t));
}

static int add_f32s(loader *L, const Onnx__NodeProto *np, const char *what, const float *v,
                    size_t n)
{
    nn_shape s = {.rank = 1, .d = {(int64_t)n}};
    return add_const(L, np, what, FFU_DTYPE_F32, &s, v, n * sizeof(float));
}

/* A scalar of the element type of tensor `like` (f32 when that is not known yet):
 * Clip's min/max and Pad's value must match the data's type. */
static int add_scalar_like(loader *L, const Onnx__NodeProto *np, const char *what, float v,
                           int like)
{
    ffu_dtype dt = dtype_hint(L, like, NULL);
    if (dt == FFU_DTYPE_UNDEFINED) dt = FFU_DTYPE_F32;
    uint64_t buf = 0;
    if (nn_convert(&v, FFU_DTYPE_F32, &buf, dt, 1) < 0) return FFU_ERR_UNSUPPORTED;
    nn_shape s = {.rank = 0};
    return add_const(L, np, what, dt, &s, &buf, ffu_dtype_size(dt));
}

/* ---- pass 1: Constant nodes --------------------------------------------------------------- */

static int add_constant_node(loader *L, const Onnx__NodeProto *np)
{
    if (np->n_output != 1 || !*np->output[0])
        return node_err(np, FFU_ERR_FORMAT, "a Constant needs exactly one named output");
    const char *out = np->output[0];
    char what[300];
    snprintf(what, sizeof what, "Constant '%s'", out);
    if (np->n_attribute != 1 || !np->attribute[0])
        return node_err(np, FFU_ERR_FORMAT, "a Constant needs exactly one value attribute");
    const Onnx__AttributeProto *a = np->attribute[0];
    const char *n = S(a->name);
    if (strcmp(n, "value") == 0) {
        if (!a->t) return node_err(np, FFU_ERR_FORMAT, "'value' holds no tensor");
        return onnx_tensor_add(L->g, a->t, out, what);
    }
    nn_shape scalar = {.rank = 0}, list = {.rank = 1, .d = {0}};
    if (strcmp(n, "value_float") == 0)
        return nn_graph_add_const(L->g, out, FFU_DTYPE_F32, &scalar, &a->f, sizeof(float), NN_COPY);
    if (strcmp(n, "value_int") == 0)
        return nn_graph_add_const(L->g, out, FFU_DTYPE_I64, &scalar, &a->i, sizeof(int64_t),
                                  NN_COPY);
    if (strcmp(n, "value_floats") == 0) {
        list.d[0] = (int64_t)a->n_floats;
        return nn_graph_add_const(L->g, out, FFU_DTYPE_F32, &list, a->n_floats ? (void *)a->floats : "",
                                  a->n_floats * sizeof(float), NN_COPY);
    }
    if (strcmp(n, "value_ints") == 0) {
        list.d[0] = (int64_t)a->n_ints;
        return nn_graph_add_const(L->g, out, FFU_DTYPE_I64, &list, a->n_ints ? (void *)a->ints : "",
                                  a->n_ints * sizeof(int64_t), NN_COPY);
    }
    return node_err(np, FFU_ERR_UNSUPPORTED, "a Constant with attribute '%s' is not supported", n);
}

/* ---- pass 2: attributes --------------------------------------------------------------------- */

static const char *attr_type_name(int t)
{
    static const char *const names[] = {"undefined", "float",  "int",    "string", "tensor",
                                        "graph",     "floats", "ints",   "strings", "tensors",
                                        "graphs",    "sparse tensor", "sparse tensors",
                                        "type proto", "type protos"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

/* Copies one attribute onto node `node` (TENSOR attributes become constant tensors). */
static ffu_status copy_attr(loader *L, const Onnx__NodeProto *np, int node,
                            const Onnx__AttributeProto *a)
{
    nn_graph *g = L->g;
    const char *name = a->name;
    int type = a->has_type ? (int)a->type : 0;
    if (type == 0) { /* IR version 1 files may leave the type out: infer it */
        type = a->has_f   ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
             : a->has_i   ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
             : a->has_s   ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING
             : a->t       ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
             : a->n_floats ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
             : a->n_ints  ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
             : a->n_strings ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS
                          : 0;
        if (!type) return node_err(np, FFU_ERR_FORMAT, "attribute '%s' has no value", name);
    }
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return nn_node_set_float(g, node, name, a->f);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return nn_node_set_int(g, node, name, a->i);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        char *s = ffu_arena_strndup(g->arena, a->s.len ? (const char *)a->s.data : "", a->s.len);
        if (!s) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        return nn_node_set_string(g, node, name, s);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        if (a->n_floats > ONNX_MAX_ITEMS) break;
        return nn_node_set_floats(g, node, name, a->floats, (int)a->n_floats);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        if (a->n_ints > ONNX_MAX_ITEMS) break;
        return nn_node_set_ints(g, node, name, a->ints, (int)a->n_ints);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        if (a->n_strings > ONNX_MAX_ITEMS) break;
        const char **v = ffu_arena_alloc(g->arena, sizeof(char *) * (a->n_strings + 1));
        if (!v) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < a->n_strings; i++) {
            const ProtobufCBinaryData *b = &a->strings[i];
            v[i] = ffu_arena_strndup(g->arena, b->len ? (const char *)b->data : "", b->len);
            if (!v[i]) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        }
        return nn_node_set_strings(g, node, name, v, (int)a->n_strings);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!a->t) return node_err(np, FFU_ERR_FORMAT, "tensor attribute '%s' holds no tensor", name);
        char base[200], buf[256], what[300];
        snprintf(base, sizeof base, "%s/%s", np->name && *np->name ? np->name : S(np->op_type), name);
        onnx_unique_name(g, base, buf, sizeof buf);
        snprintf(what, sizeof what, "attribute '%s' of node '%s'", name, S(np->name));
        int t = onnx_tensor_add(g, a->t, buf, what);
        if (t < 0) return t;
        return nn_node_set_tensor(g, node, name, t);
    }
    default:
        return node_err(np, FFU_ERR_UNSUPPORTED, "attribute '%s' of type %s is not supported", name,
                        attr_type_name(type));
    }
    return node_err(np, FFU_ERR_TOO_LARGE, "attribute '%s' is too long", name);
}

/* ---- pass 2: canonical forms ---------------------------------------------------------------- */

/* A node on its way into the graph: op, inputs (grown by the rewrites), attributes the
 * rewrites consumed (not copied) and attributes they set. */
#define MAX_SKIP 8
typedef struct pending {
    nn_op op;
    int *in;
    int nin, cap_in;
    const char *skip[MAX_SKIP];
    int nskip;
} pending;

static void skip_attr(pending *p, const char *name)
{
    if (p->nskip < MAX_SKIP) p->skip[p->nskip++] = name;
}

/* Sets input slot i (growing the list with omitted inputs as needed). */
static void set_input(pending *p, int i, int t)
{
    while (p->nin <= i) p->in[p->nin++] = -1;
    p->in[i] = t;
}

static int is_reduce(nn_op op)
{
    switch (op) {
    case NN_OP_REDUCE_MEAN: case NN_OP_REDUCE_SUM: case NN_OP_REDUCE_MAX: case NN_OP_REDUCE_MIN:
    case NN_OP_REDUCE_PROD: case NN_OP_REDUCE_L1: case NN_OP_REDUCE_L2:
    case NN_OP_REDUCE_SUM_SQUARE: case NN_OP_REDUCE_LOG_SUM: case NN_OP_REDUCE_LOG_SUM_EXP:
        return 1;
    default: return 0;
    }
}

/* "ints" attribute `name` as a constant i64 input at slot; returns 1 if it was there,
 * 0 if absent, < 0 on error. */
static int ints_to_input(loader *L, const Onnx__NodeProto *np, pending *p, const char *name,
                         int slot)
{
    const Onnx__AttributeProto *a = find_attr(np, name);
    skip_attr(p, name);
    if (!a) return 0;
    if (a->n_ints > ONNX_MAX_ITEMS) return node_err(np, FFU_ERR_TOO_LARGE, "'%s' is too long", name);
    int t = add_i64s(L, np, name, a->ints, a->n_ints);
    if (t < 0) return t;
    set_input(p, slot, t);
    return 1;
}

/* Input slot holding a constant with no elements -> omitted (Resize's roi/scales). */
static void drop_empty_const(loader *L, pending *p, int slot)
{
    if (slot < p->nin && p->in[slot] >= 0) {
        const nn_tensor *t = &L->g->tensors[p->in[slot]];
        if ((t->flags & NN_T_CONST) && t->nbytes == 0) p->in[slot] = -1;
    }
}

/* Split with num_outputs (opset 18): the sizes when the split dimension is known now;
 * otherwise the attribute stays for the kernel. Returns < 0 on error. */
static int split_num_outputs(loader *L, const Onnx__NodeProto *np, pending *p, int nout)
{
    const Onnx__AttributeProto *a = find_attr(np, "num_outputs");
    if (!a || (p->nin > 1 && p->in[1] >= 0)) return 0;
    if (a->i != nout)
        return node_err(np, FFU_ERR_FORMAT, "num_outputs %lld but %d outputs", (long long)a->i,
                        nout);
    nn_shape s;
    if (p->nin < 1 || p->in[0] < 0) return 0;
    dtype_hint(L, p->in[0], &s);
    const Onnx__AttributeProto *ax = find_attr(np, "axis");
    int64_t axis = ax ? ax->i : 0;
    if (s.rank <= 0 || axis < -s.rank || axis >= s.rank) return 0;
    if (axis < 0) axis += s.rank;
    int64_t dim = s.d[axis], chunk = (dim + nout - 1) / nout;
    if (dim < 0 || dim - chunk * (nout - 1) < 0) return 0;
    int64_t sizes[64];
    if (nout > 64) return 0;
    for (int i = 0; i < nout; i++) sizes[i] = i < nout - 1 ? chunk : dim - chunk * (nout - 1);
    int t = add_i64s(L, np, "split", sizes, (size_t)nout);
    if (t < 0) return t;
    set_input(p, 1, t);
    skip_attr(p, "num_outputs");
    return 0;
}

/* ---- pass 2: opset 1-6 forms ------------------------------------------------------------- */

/* Before opset 7 these ops took `broadcast` (0: equal shapes) and `axis` attributes
 * instead of numpy broadcasting. */
static int has_legacy_broadcast(nn_op op)
{
    switch (op) {
    case NN_OP_ADD: case NN_OP_SUB: case NN_OP_MUL: case NN_OP_DIV: case NN_OP_POW:
    case NN_OP_EQUAL: case NN_OP_GREATER: case NN_OP_LESS: case NN_OP_AND: case NN_OP_OR:
    case NN_OP_XOR: return 1;
    default: return 0;
    }
}

/* Rank of tensor t as far as the file tells at load time; -1 when unknown. */
static int known_rank(const loader *L, int t)
{
    nn_shape s;
    dtype_hint(L, t, &s);
    return s.rank;
}

/* Adds an engine node op(ins) with one fresh output "<node>/<what>" (the upgrades
 * below reshape operands this way). Returns the output tensor; *node gets the node. */
static int add_aux(loader *L, const Onnx__NodeProto *np, nn_op op, const char *what,
                   const int *ins, int nin, int *node)
{
    char base[200], buf[256];
    snprintf(base, sizeof base, "%s/%s", np->name && *np->name ? np->name : S(np->op_type), what);
    int t = nn_graph_add_tensor(L->g, onnx_unique_name(L->g, base, buf, sizeof buf),
                                FFU_DTYPE_UNDEFINED, NULL);
    if (t < 0) return t;
    int k = nn_graph_add_node(L->g, op, L->g->tensors[t].name, ins, nin, &t, 1);
    if (k < 0) return k;
    if (node) *node = k;
    return t;
}

/* Tensor b (rank rb) with k trailing dimensions of size 1: a new constant when b is
 * one, else Unsqueeze(b, [rb .. rb+k-1]). */
static int append_ones(loader *L, const Onnx__NodeProto *np, int b, int rb, int64_t k)
{
    if (k <= 0) return b;
    if (rb + k > FFU_NN_MAX_RANK)
        return node_err(np, FFU_ERR_UNSUPPORTED, "broadcasting needs rank %lld, above the limit "
                        "of %d", (long long)(rb + k), FFU_NN_MAX_RANK);
    const nn_tensor *x = &L->g->tensors[b];
    if (x->flags & NN_T_CONST) {
        nn_shape s = x->shape;
        for (int64_t i = 0; i < k; i++) s.d[s.rank++] = 1;
        ffu_dtype dt = x->dtype;
        const void *data = x->data ? x->data : "";
        size_t nbytes = x->nbytes;
        return add_const(L, np, "legacy_broadcast", dt, &s, data, nbytes);
    }
    int64_t axes[FFU_NN_MAX_RANK];
    for (int64_t i = 0; i < k; i++) axes[i] = rb + i;
    int ins[2] = {b, add_i64s(L, np, "legacy_axes", axes, (size_t)k)};
    if (ins[1] < 0) return ins[1];
    return add_aux(L, np, NN_OP_UNSQUEEZE, "legacy_unsqueeze", ins, 2, NULL);
}

/* The same when a rank is not known at load time: b is reshaped to
 * concat(shape(b), ones(rank(a) - axis - rank(b))) by shape ops that the session folds
 * away once the input shapes are fixed. A negative axis counts from a's end. */
static int append_ones_dynamic(loader *L, const Onnx__NodeProto *np, int a, int b, int64_t axis)
{
    int sa, ra, sb, rb, c, k, ones, ns, node, in[2];
    if ((sa = add_aux(L, np, NN_OP_SHAPE, "legacy_shape", &a, 1, NULL)) < 0) return sa;
    if ((ra = add_aux(L, np, NN_OP_SHAPE, "legacy_rank", &sa, 1, NULL)) < 0) return ra;
    if ((sb = add_aux(L, np, NN_OP_SHAPE, "legacy_shape", &b, 1, NULL)) < 0) return sb;
    if ((rb = add_aux(L, np, NN_OP_SHAPE, "legacy_rank", &sb, 1, NULL)) < 0) return rb;
    int64_t v = axis < 0 ? -axis : axis, one = 1;
    if ((c = add_i64s(L, np, "legacy_axis", &v, 1)) < 0) return c;
    if (axis < 0) { /* rank(a) - (rank(a) + axis) - rank(b) */
        in[0] = c, in[1] = rb;
    } else {
        in[0] = ra, in[1] = rb;
        if ((in[0] = add_aux(L, np, NN_OP_SUB, "legacy_rank_diff", in, 2, NULL)) < 0) return in[0];
        in[1] = c;
    }
    if ((k = add_aux(L, np, NN_OP_SUB, "legacy_ones", in, 2, NULL)) < 0) return k;
    if ((ones = add_aux(L, np, NN_OP_CONSTANT_OF_SHAPE, "legacy_ones", &k, 1, &node)) < 0)
        return ones;
    int val = add_i64s(L, np, "legacy_one", &one, 1);
    ffu_status st;
    if (val < 0) return val;
    if ((st = nn_node_set_tensor(L->g, node, "value", val)) < 0) return st;
    in[0] = sb, in[1] = ones;
    if ((ns = add_aux(L, np, NN_OP_CONCAT, "legacy_shape", in, 2, &node)) < 0) return ns;
    if ((st = nn_node_set_int(L->g, node, "axis", 0)) < 0) return st;
    in[0] = b, in[1] = ns;
    return add_aux(L, np, NN_OP_RESHAPE, "legacy_reshape", in, 2, NULL);
}

/* Input `slot` of p, reshaped so that numpy broadcasting against tensor a lines its
 * dimensions up with a's from `axis` on: the opset 1-6 rule "B's shape is a contiguous
 * subset of A's starting at axis". Trailing ones are appended to B. */
static ffu_status align_at_axis(loader *L, const Onnx__NodeProto *np, pending *p, int slot, int a,
                                int64_t axis)
{
    int b = p->in[slot], ra = known_rank(L, a), rb = known_rank(L, b), t;
    if (ra >= 0 && rb >= 0) {
        int64_t ax = axis < 0 ? axis + ra : axis, k = ra - ax - rb;
        if (ax < 0 || k < 0)
            return node_err(np, FFU_ERR_FORMAT, "broadcast axis %lld does not fit ranks %d and %d",
                            (long long)axis, ra, rb);
        t = append_ones(L, np, b, rb, k);
    } else {
        t = append_ones_dynamic(L, np, a, b, axis);
    }
    if (t < 0) return t;
    p->in[slot] = t;
    return FFU_OK;
}

/* A one-element constant input as an integer; 0 if it is not one. */
static int const_scalar_i64(const loader *L, int t, int64_t *v)
{
    if (t < 0) return 0;
    const nn_tensor *x = &L->g->tensors[t];
    if (!(x->flags & NN_T_CONST) || nn_shape_numel(&x->shape) != 1) return 0;
    return nn_convert(x->data, x->dtype, v, FFU_DTYPE_I64, 1) == FFU_OK;
}

/* ONNX element type Cast converts to: an int from opset 6 on, the TensorProto.DataType
 * name as a string before. -1 when absent or unknown. */
static int64_t cast_target(const Onnx__NodeProto *np, int opset)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                        "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                        "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    const Onnx__AttributeProto *a = find_attr(np, "to");
    if (!a) return -1;
    if (opset >= 6 || !a->has_s) return a->i;
    for (size_t i = 1; i < sizeof names / sizeof names[0]; i++)
        if (a->s.len == strlen(names[i]) &&
            strncasecmp((const char *)a->s.data, names[i], a->s.len) == 0)
            return (int64_t)i;
    return -1;
}

/* The opset 1-6 forms of p that the canonical switch below does not know. */
static ffu_status legacy_forms(loader *L, const Onnx__NodeProto *np, pending *p)
{
    int opset = L->opset, r;
    const Onnx__AttributeProto *a, *b;
    if (has_legacy_broadcast(p->op)) {
        skip_attr(p, "broadcast");
        skip_attr(p, "axis");
        a = find_attr(np, "broadcast");
        b = find_attr(np, "axis");
        /* broadcast=0 means equal shapes and, without axis, B's shape is a suffix of A's
         * (or B has one element): numpy broadcasting gives the same result */
        if (!a || !a->i || !b) return FFU_OK;
        if (p->nin < 2 || p->in[1] < 0) return node_err(np, FFU_ERR_FORMAT, "needs two inputs");
        return align_at_axis(L, np, p, 1, p->in[0], b->i);
    }
    switch (p->op) {
    case NN_OP_GEMM: /* C broadcasts to (M, N) from opset 7 on whatever this says */
        skip_attr(p, "broadcast");
        break;
    case NN_OP_PRELU: {
        /* before opset 7 a 1-D slope is per channel (axis 1), not numpy-aligned at the end */
        if (p->nin < 2 || p->in[1] < 0) return node_err(np, FFU_ERR_FORMAT, "needs a slope");
        nn_shape s;
        dtype_hint(L, p->in[1], &s);
        if (s.rank < 0)
            return node_err(np, FFU_ERR_UNSUPPORTED, "PRelu before opset 7 applies a 1-D slope per "
                            "channel; the slope's shape must be known at load time");
        if (s.rank != 1 || s.d[0] == 1) break;
        int rx = known_rank(L, p->in[0]);
        if (rx >= 0 && rx < 2) break; /* channel axis = last axis: numpy agrees */
        return align_at_axis(L, np, p, 1, p->in[0], 1);
    }
    case NN_OP_BATCH_NORM:
        skip_attr(p, "is_test");
        if (!(a = find_attr(np, "is_test")) || !a->i)
            return node_err(np, FFU_ERR_UNSUPPORTED, "training mode (is_test=0 before opset 7: "
                            "batch statistics) is not supported");
        break;
    case NN_OP_RESHAPE:
        if (opset < 5) {
            if (!find_attr(np, "shape"))
                return node_err(np, FFU_ERR_FORMAT, "Reshape needs 'shape'");
            p->nin = 1;
            if ((r = ints_to_input(L, np, p, "shape", 1)) < 0) return r;
        }
        break;
    case NN_OP_UPSAMPLE:
        skip_attr(p, "height_scale");
        skip_attr(p, "width_scale");
        if (!(a = find_attr(np, "height_scale")) || !(b = find_attr(np, "width_scale")))
            return node_err(np, FFU_ERR_FORMAT, "Upsample needs 'height_scale' and 'width_scale'");
        { /* the ONNX version converter's mapping: 4-D, scales (1, 1, h, w) */
            float sc[4] = {1, 1, a->f, b->f};
            if ((r = add_f32s(L, np, "scales", sc, 4)) < 0) return r;
            p->nin = 1;
            set_input(p, 2, r);
        }
        break;
    case NN_OP_SPLIT:
        if (opset < 2) {
            if (!find_attr(np, "axis"))
                return node_err(np, FFU_ERR_UNSUPPORTED, "Split before opset 2 without 'axis' "
                                "(the opset defines no default) is not supported");
            if (p->nin > 1 && p->in[1] >= 0) { /* lengths as a (float) input */
                const nn_tensor *x = &L->g->tensors[p->in[1]];
                int64_t n = nn_shape_numel(&x->shape), v[64];
                double f[64];
                if (!(x->flags & NN_T_CONST) || x->shape.rank != 1 || n > 64)
                    return node_err(np, FFU_ERR_UNSUPPORTED, "a 'split' input that is not a "
                                    "constant 1-D list of up to 64 lengths is not supported");
                if (nn_convert(x->data, x->dtype, f, FFU_DTYPE_F64, (size_t)n) < 0)
                    return node_err(np, FFU_ERR_UNSUPPORTED, "'split' of type %s",
                                    ffu_dtype_name(x->dtype));
                for (int64_t i = 0; i < n; i++) {
                    if (f[i] < 0 || f[i] > 1e15 || f[i] != (double)(int64_t)f[i])
                        return node_err(np, FFU_ERR_FORMAT, "split length %g", f[i]);
                    v[i] = (int64_t)f[i];
                }
                if ((r = add_i64s(L, np, "split", v, (size_t)n)) < 0) return r;
                p->in[1] = r;
            }
        }
        break;
    case NN_OP_TILE:
        if (opset < 6) { /* Tile(input, tiles, axis): `tiles` copies along one axis */
            int64_t tiles, axis;
            if (p->nin != 3 || !const_scalar_i64(L, p->in[1], &tiles) ||
                !const_scalar_i64(L, p->in[2], &axis))
                return node_err(np, FFU_ERR_UNSUPPORTED, "Tile before opset 6 needs constant "
                                "one-element 'tiles' and 'axis' inputs");
            int rx = known_rank(L, p->in[0]);
            if (rx < 0)
                return node_err(np, FFU_ERR_UNSUPPORTED, "Tile before opset 6 needs the input's "
                                "rank at load time");
            if (axis < 0) axis += rx;
            if (axis < 0 || axis >= rx || tiles < 0)
                return node_err(np, FFU_ERR_FORMAT, "axis %lld or tiles %lld out of range",
                                (long long)axis, (long long)tiles);
            int64_t rep[FFU_NN_MAX_RANK];
            for (int i = 0; i < rx; i++) rep[i] = i == axis ? tiles : 1;
            if ((r = add_i64s(L, np, "repeats", rep, (size_t)rx)) < 0) return r;
            p->nin = 1;
            set_input(p, 1, r);
        }
        break;
    default: break;
    }
    return FFU_OK;
}

/* The attribute holding an output type in TensorProto's numbering (EyeLike's "dtype",
 * the windows' and MelWeightMatrix's "output_datatype"), set as an ffu_dtype in "dtype". */
static const char *onnx_type_attr(nn_op op)
{
    return op == NN_OP_EYE_LIKE ? "dtype" : "output_datatype";
}

/* Rewrites p (op, inputs, consumed attributes) into the canonical form for this
 * model's opset. Attributes it sets itself are applied after the copy (see below). */
static ffu_status canonicalize(loader *L, const Onnx__NodeProto *np, pending *p, int nout)
{
    int opset = L->opset;
    int r = 0;
    const Onnx__AttributeProto *a;
    if (opset < 7 && (r = legacy_forms(L, np, p)) < 0) return r;
    switch (p->op) {
    case NN_OP_CLIP:
        if (opset < 11) {
            skip_attr(p, "min");
            skip_attr(p, "max");
            if ((a = find_attr(np, "min"))) {
                if ((r = add_scalar_like(L, np, "min", a->f, p->in[0])) < 0) return r;
                set_input(p, 1, r);
            }
            if ((a = find_attr(np, "max"))) {
                if ((r = add_scalar_like(L, np, "max", a->f, p->in[0])) < 0) return r;
                set_input(p, 2, r);
            }
        }
        break;
    case NN_OP_SLICE:
        if (opset < 10) {
            if (!find_attr(np, "starts") || !find_attr(np, "ends"))
                return node_err(np, FFU_ERR_FORMAT, "Slice needs 'starts' and 'ends'");
            if ((r = ints_to_input(L, np, p, "starts", 1)) < 0 ||
                (r = ints_to_input(L, np, p, "ends", 2)) < 0 ||
                (r = ints_to_input(L, np, p, "axes", 3)) < 0)
                return r;
        }
        break;
    case NN_OP_PAD:
        if (opset < 11) {
            const char *pads = opset < 2 ? "paddings" : "pads"; /* renamed in opset 2 */
            if (!find_attr(np, pads))
                return node_err(np, FFU_ERR_FORMAT, "Pad needs '%s'", pads);
            if ((r = ints_to_input(L, np, p, pads, 1)) < 0) return r;
            skip_attr(p, "value");
            if ((a = find_attr(np, "value")) && a->f != 0) {
                if ((r = add_scalar_like(L, np, "value", a->f, p->in[0])) < 0) return r;
                set_input(p, 2, r);
            }
        }
        break;
    case NN_OP_SQUEEZE:
    case NN_OP_UNSQUEEZE:
        if (opset < 13 && (r = ints_to_input(L, np, p, "axes", 1)) < 0) return r;
        break;
    case NN_OP_SPLIT:
        if (opset < 13 && (r = ints_to_input(L, np, p, "split", 1)) < 0) return r;
        if (opset >= 18 && (r = split_num_outputs(L, np, p, nout)) < 0) return r;
        break;
    case NN_OP_UPSAMPLE:
        /* Upsample = Resize with asymmetric coordinates; nearest picks floor (the ONNX
         * version converter's mapping). Opset 7/8 carry scales as an attribute. */
        p->op = NN_OP_RESIZE;
        skip_attr(p, "mode");
        if (opset < 7) {
            /* legacy_forms made scales from height_scale and width_scale */
        } else if (opset < 9) {
            skip_attr(p, "scales");
            if (!(a = find_attr(np, "scales")))
                return node_err(np, FFU_ERR_FORMAT, "Upsample needs 'scales'");
            if ((r = add_f32s(L, np, "scales", a->floats, a->n_floats)) < 0) return r;
            p->nin = 1;
            set_input(p, 2, r);
        } else {
            if (p->nin < 2 || p->in[1] < 0)
                return node_err(np, FFU_ERR_FORMAT, "Upsample needs scales");
            int scales = p->in[1];
            p->nin = 1;
            set_input(p, 2, scales);
        }
        break;
    case NN_OP_RESIZE:
        if (opset < 11) {
            if (p->nin != 2) return node_err(np, FFU_ERR_FORMAT, "Resize-10 needs 2 inputs");
            int scales = p->in[1];
            p->nin = 1;
            set_input(p, 2, scales);
            skip_attr(p, "mode");
        }
        drop_empty_const(L, p, 1);
        drop_empty_const(L, p, 2);
        drop_empty_const(L, p, 3);
        while (p->nin > 1 && p->in[p->nin - 1] < 0) p->nin--;
        break;
    case NN_OP_SOFTMAX:
    case NN_OP_LOG_SOFTMAX:
    case NN_OP_HARDMAX:
        if (opset < 13) skip_attr(p, "axis");
        break;
    case NN_OP_TOP_K:
        if (opset < 10) { /* K was the attribute k */
            skip_attr(p, "k");
            if (!(a = find_attr(np, "k"))) return node_err(np, FFU_ERR_FORMAT, "TopK needs 'k'");
            if ((r = add_i64s(L, np, "k", &a->i, 1)) < 0) return r;
            p->nin = 1;
            set_input(p, 1, r);
        }
        break;
    case NN_OP_CAST_LIKE:
        /* with the target's type known now (a graph input, an initializer), CastLike is
         * a Cast: the target's value and shape are never read (the ONNX suite feeds
         * targets whose shape contradicts their declaration) */
        if (p->nin == 2 && p->in[1] >= 0 &&
            L->g->tensors[p->in[1]].dtype != FFU_DTYPE_UNDEFINED) {
            p->op = NN_OP_CAST;
            p->nin = 1;
        }
        break;
    case NN_OP_EYE_LIKE: /* an output type (onnx_type_attr), set as an ffu_dtype below */
    case NN_OP_HANN_WINDOW:
    case NN_OP_HAMMING_WINDOW:
    case NN_OP_BLACKMAN_WINDOW:
    case NN_OP_MEL_WEIGHT_MATRIX:
        skip_attr(p, onnx_type_attr(p->op));
        if ((a = find_attr(np, onnx_type_attr(p->op))) &&
            (a->i != (int)a->i || nn_onnx_dtype((int)a->i) == FFU_DTYPE_UNDEFINED))
            return node_err(np, FFU_ERR_UNSUPPORTED, "%s to ONNX data type %lld is not supported",
                            np->op_type, (long long)a->i);
        break;
    case NN_OP_CAST: {
        skip_attr(p, "to");
        if (!(a = find_attr(np, "to"))) return node_err(np, FFU_ERR_FORMAT, "Cast needs 'to'");
        int64_t to = cast_target(np, opset);
        if (to < 0 && opset < 6)
            return node_err(np, FFU_ERR_UNSUPPORTED, "Cast to '%.*s' is not supported",
                            (int)(a->s.len < 40 ? a->s.len : 40),
                            a->s.len ? (const char *)a->s.data : "");
        if (nn_onnx_dtype((int)to) == FFU_DTYPE_UNDEFINED || to != (int)to)
            return node_err(np, FFU_ERR_UNSUPPORTED, "Cast to ONNX data type %lld is not supported",
                            (long long)to);
        break;
    }
    case NN_OP_BATCH_NORM:
        if ((a = find_attr(np, "training_mode")) && a->i)
            return node_err(np, FFU_ERR_UNSUPPORTED, "training mode is not supported");
        if ((a = find_attr(np, "spatial")) && a->i == 0)
            return node_err(np, FFU_ERR_UNSUPPORTED, "spatial=0 is not supported");
        skip_attr(p, "spatial");
        skip_attr(p, "training_mode");
        skip_attr(p, "momentum"); /* running statistics: training only */
        break;
    default:
        if (is_reduce(p->op) && opset < (p->op == NN_OP_REDUCE_SUM ? 13 : 18) &&
            (r = ints_to_input(L, np, p, "axes", 1)) < 0)
            return r;
        break;
    }
    return FFU_OK;
}

/* Attributes the canonical form sets after the file's own were copied. */
static ffu_status canonical_attrs(loader *L, const Onnx__NodeProto *np, int node, nn_op file_op)
{
    nn_graph *g = L->g;
    nn_node *n = &g->nodes[node];
    const Onnx__AttributeProto *a;
    ffu_status st = FFU_OK;
    switch (file_op) {
    case NN_OP_UPSAMPLE:
    case NN_OP_RESIZE: {
        if (file_op == NN_OP_RESIZE && L->opset >= 11) break;
        char mode[32] = "nearest";
        if ((a = find_attr(np, "mode")) && a->has_s && a->s.len)
            snprintf(mode, sizeof mode, "%.*s", (int)(a->s.len < 31 ? a->s.len : 31),
                     (const char *)a->s.data);
        if (strcmp(mode, "bilinear") == 0) snprintf(mode, sizeof mode, "linear");
        if ((st = nn_node_set_string(g, node, "mode", mode)) < 0 ||
            (st = nn_node_set_string(g, node, "coordinate_transformation_mode", "asymmetric")) < 0)
            return st;
        if (strcmp(mode, "nearest") == 0) st = nn_node_set_string(g, node, "nearest_mode", "floor");
        break;
    }
    case NN_OP_SOFTMAX:
    case NN_OP_LOG_SOFTMAX:
    case NN_OP_HARDMAX:
        if (L->opset < 13) {
            a = find_attr(np, "axis");
            if ((st = nn_node_set_int(g, node, "axis", a ? a->i : 1)) < 0) return st;
            st = nn_node_set_int(g, node, "_coerce_2d", 1);
        }
        break;
    case NN_OP_CAST:
        st = nn_node_set_int(g, node, "to", nn_onnx_dtype((int)cast_target(np, L->opset)));
        break;
    case NN_OP_CAST_LIKE:
        if (n->op == NN_OP_CAST && np->n_input > 1) {
            int like = nn_graph_find(g, np->input[1]);
            if (like >= 0) st = nn_node_set_int(g, node, "to", g->tensors[like].dtype);
        }
        break;
    case NN_OP_EYE_LIKE:
    case NN_OP_HANN_WINDOW:
    case NN_OP_HAMMING_WINDOW:
    case NN_OP_BLACKMAN_WINDOW:
    case NN_OP_MEL_WEIGHT_MATRIX:
        if ((a = find_attr(np, onnx_type_attr(file_op))))
            st = nn_node_set_int(g, node, "dtype", nn_onnx_dtype((int)a->i));
        break;
    case NN_OP_CONCAT: /* axis was optional with default 1 before opset 4 */
        if (L->opset < 4 && !find_attr(np, "axis")) st = nn_node_set_int(g, node, "axis", 1);
        break;
    case NN_OP_SELU: /* the opset 1-5 defaults were rounded */
        if (L->opset < 6 && !find_attr(np, "alpha")) st = nn_node_set_float(g, node, "alpha", 1.6732f);
        if (st >= 0 && L->opset < 6 && !find_attr(np, "gamma"))
            st = nn_node_set_float(g, node, "gamma", 1.0507f);
        break;
    case NN_OP_CONSTANT_OF_SHAPE: {
        const nn_attr *v = nn_node_attr(n, "value");
        if (!v) { /* default: one f32 zero, so kernels always find the value */
            nn_shape s = {.rank = 1, .d = {1}};
            float zero = 0;
            int t = add_const(L, np, "value", FFU_DTYPE_F32, &s, &zero, sizeof zero);
            if (t < 0) return t;
            st = nn_node_set_tensor(g, node, "value", t);
        } else if (v->type != NN_ATTR_TENSOR || nn_shape_numel(&g->tensors[v->tensor].shape) != 1) {
            st = node_err(np, FFU_ERR_FORMAT, "'value' must be a one-element tensor");
        }
        break;
    }
    default: break;
    }
    return st;
}

/* Outputs of a node that the canonical form drops (Dropout's mask, BatchNormalization's
 * training statistics): index of the first one, or n_output when none is dropped. */
static size_t kept_outputs(nn_op op, const Onnx__NodeProto *np)
{
    if ((op == NN_OP_IDENTITY || op == NN_OP_BATCH_NORM) && np->n_output > 1) return 1;
    return np->n_output;
}

static nn_op file_op(const Onnx__NodeProto *np)
{
    const char *t = S(np->op_type);
    /* ops.def names that are not ONNX operators must not be accepted from a file */
    if (!strcmp(t, "Rsqrt") || !strcmp(t, "Square") || !strcmp(t, "Relu6") ||
        !strncmp(t, "ffu.", 4))
        return NN_OP_NONE;
    if (!strcmp(t, "Dropout")) return NN_OP_IDENTITY;
    if (!strcmp(t, "Scatter")) return NN_OP_SCATTER_ELEMENTS; /* its name before opset 11 */
    return nn_op_from_name(t);
}

/* Dropout is Identity at inference; training mode (a random mask) is refused. */
static ffu_status dropout_check(const loader *L, const Onnx__NodeProto *np, const pending *p)
{
    const Onnx__AttributeProto *a;
    if (L->opset < 7 && (!(a = find_attr(np, "is_test")) || !a->i))
        return node_err(np, FFU_ERR_UNSUPPORTED, "training mode (is_test=0 before opset 7: a "
                        "random mask) is not supported");
    if (p->nin > 2 && p->in[2] >= 0) { /* training_mode, opset 12 on */
        const nn_tensor *t = &L->g->tensors[p->in[2]];
        uint8_t on = 1;
        if (!(t->flags & NN_T_CONST) || nn_shape_numel(&t->shape) != 1 ||
            nn_convert(t->data, t->dtype, &on, FFU_DTYPE_BOOL, 1) < 0)
            return node_err(np, FFU_ERR_UNSUPPORTED, "a training_mode input that is not a constant "
                            "is not supported (training mode draws a random mask)");
        if (on)
            return node_err(np, FFU_ERR_UNSUPPORTED, "training mode (training_mode=true: a random "
                            "mask) is not supported");
    }
    return FFU_OK;
}

static ffu_status add_node(loader *L, const Onnx__NodeProto *np, int *scratch_out)
{
    nn_graph *g = L->g;
    nn_op op = file_op(np);
    int is_dropout = strcmp(S(np->op_type), "Dropout") == 0;
    pending p = {.op = op, .cap_in = (int)np->n_input + 8};
    p.in = malloc(sizeof(int) * (size_t)p.cap_in);
    if (!p.in) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = FFU_OK;
    for (size_t i = 0; i < np->n_input; i++) {
        const char *name = np->input[i];
        int t = -1;
        if (*name && (t = nn_graph_find(g, name)) < 0) {
            st = node_err(np, FFU_ERR_FORMAT, "input '%s' is not defined", name);
            goto out;
        }
        p.in[p.nin++] = t;
    }
    if (is_dropout) {
        if ((st = dropout_check(L, np, &p)) < 0) goto out;
        p.nin = p.nin ? 1 : 0; /* ratio, training_mode: not at inference */
    }
    if (p.nin < 1 || p.in[0] < 0) { /* no op of ops.def works without its first input */
        st = node_err(np, FFU_ERR_FORMAT, "first input missing");
        goto out;
    }

    /* outputs: trailing unnamed ones dropped, unnamed ones in between anonymous */
    size_t nout = kept_outputs(op, np);
    while (nout > 0 && !*np->output[nout - 1]) nout--;
    if (nout == 0) {
        st = node_err(np, FFU_ERR_FORMAT, "no outputs");
        goto out;
    }
    for (size_t j = 0; j < nout; j++) {
        int t = *np->output[j] ? nn_graph_find(g, np->output[j]) : -1;
        if (t < 0) {
            char base[200], buf[256];
            snprintf(base, sizeof base, "%s/unused%zu", np->name && *np->name ? np->name : "_", j);
            t = nn_graph_add_tensor(g, onnx_unique_name(g, base, buf, sizeof buf),
                                    FFU_DTYPE_UNDEFINED, NULL);
            if (t < 0) {
                st = t;
                goto out;
            }
        }
        scratch_out[j] = t;
    }

    if ((st = canonicalize(L, np, &p, (int)nout)) < 0) goto out;
    int node = nn_graph_add_node(g, p.op, S(np->name), p.in, p.nin, scratch_out, (int)nout);
    if (node < 0) {
        st = node;
        goto out;
    }
    if (!is_dropout) /* Dropout's ratio and seed have no meaning for Identity */
        for (size_t i = 0; i < np->n_attribute; i++) {
            const Onnx__AttributeProto *a = np->attribute[i];
            if (!a || !a->name || !*a->name) {
                st = node_err(np, FFU_ERR_FORMAT, "attribute without a name");
                goto out;
            }
            /* consumed_inputs (opset < 6) was an in-place hint of Caffe2's */
            int skip = strcmp(a->name, "consumed_inputs") == 0;
            for (int k = 0; k < p.nskip; k++) skip |= strcmp(p.skip[k], a->name) == 0;
            if (!skip && (st = copy_attr(L, np, node, a)) < 0) goto out;
        }
    st = canonical_attrs(L, np, node, op == NN_OP_IDENTITY ? NN_OP_NONE : op);
out:
    free(p.in);
    return st;
}

/* ---- the model ------------------------------------------------------------------------------- */

/* Subgraphs inside subgraphs, at most (If branches holding Ifs, Scan bodies...). */
#define ONNX_MAX_SUBGRAPH_DEPTH 16

/* The ops whose attributes hold graphs, which the loader unfolds into the graph itself
 * ("If", "Scan" below): 1 If, 2 Scan, 0 for any other node. */
static int subgraph_op(const Onnx__NodeProto *np)
{
    if (*S(np->domain) && strcmp(np->domain, "ai.onnx") != 0) return 0;
    return !strcmp(S(np->op_type), "If") ? 1 : !strcmp(S(np->op_type), "Scan") ? 2 : 0;
}

static ffu_status check_nodes(const Onnx__GraphProto *gp, int depth);

/* The graphs of an If (then_branch, else_branch) or a Scan (body), themselves checked. */
static ffu_status check_subgraphs(const Onnx__NodeProto *np, int depth)
{
    static const char *const names[3] = {"then_branch", "else_branch", "body"};
    int scan = subgraph_op(np) == 2;
    for (int b = scan ? 2 : 0; b < (scan ? 3 : 2); b++) {
        const Onnx__AttributeProto *a = find_attr(np, names[b]);
        if (!a || !a->g)
            return node_err(np, FFU_ERR_FORMAT, "%s without a %s graph", np->op_type, names[b]);
        if (depth + 1 > ONNX_MAX_SUBGRAPH_DEPTH)
            return node_err(np, FFU_ERR_TOO_LARGE, "subgraphs nested more than %d deep",
                            ONNX_MAX_SUBGRAPH_DEPTH);
        ffu_status st = check_nodes(a->g, depth + 1);
        if (st < 0) return st;
    }
    return FFU_OK;
}

static ffu_status check_node(const Onnx__NodeProto *np, int depth)
{
    const char *dom = S(np->domain);
    if (!np->op_type || !*np->op_type)
        return ffu_error_set(FFU_ERR_FORMAT, "ONNX node '%s' has no op_type", S(np->name));
    if (*dom && strcmp(dom, "ai.onnx") != 0)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "unsupported op '%s' of domain '%s' (node '%s')",
                             np->op_type, dom, S(np->name));
    if (subgraph_op(np)) return check_subgraphs(np, depth);
    if (file_op(np) == NN_OP_NONE)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "unsupported op '%s' (node '%s')", np->op_type,
                             S(np->name));
    if (np->n_input > ONNX_MAX_ITEMS || np->n_output > ONNX_MAX_ITEMS ||
        np->n_attribute > ONNX_MAX_ITEMS)
        return node_err(np, FFU_ERR_TOO_LARGE, "too many inputs, outputs or attributes");
    /* the engine's fused Conv forms take inputs 3 and 4 (ir.h): not from a file */
    if (file_op(np) == NN_OP_CONV && np->n_input > 3)
        return node_err(np, FFU_ERR_FORMAT, "Conv has %zu inputs (at most 3)", np->n_input);
    return FFU_OK;
}

/* Domains and op names first: "unsupported op" is the most useful thing to say about a
 * model that is also wrong in other ways (a conformance runner counts it as such). */
static ffu_status check_nodes(const Onnx__GraphProto *gp, int depth)
{
    if (gp->n_node > ONNX_MAX_ITEMS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "ONNX graph: more than %d nodes", ONNX_MAX_ITEMS);
    for (size_t i = 0; i < gp->n_node; i++) {
        ffu_status st = check_node(gp->node[i], depth);
        if (st < 0) return st;
    }
    return FFU_OK;
}

/* Pass 1 for one node's outputs. */
static ffu_status add_outputs(loader *L, const Onnx__NodeProto *np)
{
    nn_op op = file_op(np);
    if (op == NN_OP_CONSTANT) {
        int r = add_constant_node(L, np);
        return r < 0 ? r : FFU_OK;
    }
    size_t keep = kept_outputs(op, np);
    for (size_t j = 0; j < np->n_output; j++) {
        const char *name = np->output[j];
        if (!*name) continue;
        if (j >= keep) {
            if (smap_get(&L->used, name))
                return node_err(np, FFU_ERR_UNSUPPORTED, "output %zu ('%s') is only computed in "
                                "training and is not supported", j, name);
            continue;
        }
        int r = nn_graph_add_tensor(L->g, name, FFU_DTYPE_UNDEFINED, NULL);
        if (r < 0) return node_err(np, r, "output '%s' is defined twice", name);
    }
    return FFU_OK;
}

/* ---- If: both branches in the one graph, the outputs picked by Where ------------------------ */

/* The values of an If branch are renamed into the graph ("<If node>/then/<name>"), so
 * that they cannot meet the outer graph's names or the other branch's; a name that the
 * branch does not define is looked up in the scopes around it (ONNX's outer-scope
 * references). Every node of both branches runs, whichever way the condition goes; a
 * Where (marked `_if`: both values must have one shape) picks each output. When the
 * condition is a constant once shapes are known, the session keeps only the branch
 * taken (passes.c). */
typedef struct scope {
    const struct scope *up;
    smap names; /* name in the branch -> name in the graph */
} scope;

static const char *scope_resolve(const scope *sc, const char *name)
{
    for (; sc && *name; sc = sc->up) {
        const char *g = smap_get(&sc->names, name);
        if (g) return g;
    }
    return name;
}

static ffu_status add_subgraph_op(loader *L, const Onnx__NodeProto *np, const scope *up);

/* A copy of branch node np whose input and output names are the graph's: inputs
 * resolved through sc, outputs looked up in sc (registered by the first pass). */
typedef struct renamed {
    Onnx__NodeProto np;
    char **in, **out;
} renamed;

static ffu_status rename_node(loader *L, const Onnx__NodeProto *np, const scope *sc,
                              const char *prefix, renamed *r)
{
    r->np = *np;
    r->in = calloc(np->n_input + 1, sizeof(char *));
    r->out = calloc(np->n_output + 1, sizeof(char *));
    if (!r->in || !r->out) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < np->n_input; i++)
        r->in[i] = (char *)scope_resolve(sc, S(np->input[i]));
    for (size_t j = 0; j < np->n_output; j++)
        r->out[j] = (char *)scope_resolve(sc, S(np->output[j]));
    char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", prefix, np->name && *np->name ? np->name : S(np->op_type));
    r->np.name = ffu_arena_strdup(L->g->arena, buf);
    r->np.input = r->in;
    r->np.output = r->out;
    return r->np.name ? FFU_OK : ffu_error_set(FFU_ERR_NOMEM, "out of memory");
}

static void renamed_free(renamed *r)
{
    free(r->in);
    free(r->out);
}

/* A new name in the graph for branch value `name`, registered in sc. */
static const char *scope_define(loader *L, scope *sc, const char *prefix, const char *name)
{
    char base[512], buf[600];
    snprintf(base, sizeof base, "%s/%s", prefix, name);
    const char *g = ffu_arena_strdup(L->g->arena, onnx_unique_name(L->g, base, buf, sizeof buf));
    if (g) smap_put(&sc->names, name, g);
    return g;
}

/* Loads subgraph b of node np (an If's branch, one step of an unrolled Scan's body;
 * np's names are the graph's) into the graph, its values named "<np>/<which>/<name>":
 * its inputs are the graph's tensors named ins[0..nins), outs[j] = the tensor of its
 * output j. */
static ffu_status add_branch(loader *L, const Onnx__NodeProto *np, const Onnx__GraphProto *b,
                             const char *which, const scope *up, const char *const *ins,
                             size_t nins, int *outs)
{
    if (b->n_input != nins)
        return node_err(np, FFU_ERR_FORMAT, "its %s has %zu inputs, not %zu", which, b->n_input,
                        nins);
    if (b->n_sparse_initializer)
        return node_err(np, FFU_ERR_UNSUPPORTED, "sparse initializers are not supported");
    if (b->n_initializer > ONNX_MAX_ITEMS || b->n_output > ONNX_MAX_ITEMS)
        return node_err(np, FFU_ERR_TOO_LARGE, "its %s is too large", which);
    size_t defs = b->n_initializer + nins;
    for (size_t i = 0; i < b->n_node; i++)
        defs += b->node[i]->n_output;
    scope sc = {.up = up};
    if (smap_init(&sc.names, defs) < 0) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    char prefix[400], what[700];
    snprintf(prefix, sizeof prefix, "%s/%s", np->name && *np->name ? np->name : S(np->op_type),
             which);
    ffu_status st = FFU_OK;
    int *scratch = NULL;
    for (size_t i = 0; i < nins && st >= 0; i++) {
        if (!b->input[i]->name || !*b->input[i]->name)
            st = node_err(np, FFU_ERR_FORMAT, "input %zu of its %s has no name", i, which);
        else
            smap_put(&sc.names, b->input[i]->name, ins[i]);
    }
    /* pass 1: initializers and node outputs get their graph names and tensors */
    for (size_t i = 0; i < b->n_initializer && st >= 0; i++) {
        const Onnx__TensorProto *t = b->initializer[i];
        const char *g;
        if (!t->name || !*t->name)
            st = node_err(np, FFU_ERR_FORMAT, "an initializer of its %s has no name", which);
        else if (!(g = scope_define(L, &sc, prefix, t->name)))
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        else {
            snprintf(what, sizeof what, "ONNX initializer '%s' of %s", t->name, prefix);
            int r = onnx_tensor_add(L->g, t, g, what);
            if (r < 0) st = r;
        }
    }
    size_t maxout = 1;
    for (size_t i = 0; i < b->n_node && st >= 0; i++) {
        const Onnx__NodeProto *bn = b->node[i];
        if (bn->n_output > maxout) maxout = bn->n_output;
        for (size_t j = 0; j < bn->n_output && st >= 0; j++)
            if (*S(bn->output[j]) && !scope_define(L, &sc, prefix, bn->output[j]))
                st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        renamed r = {0};
        if (st >= 0 && (st = rename_node(L, bn, &sc, prefix, &r)) >= 0) st = add_outputs(L, &r.np);
        renamed_free(&r);
    }
    /* pass 2: the nodes, the subgraph ops among them unfolded in turn (each node is
     * renamed again: only now are all the branch's names known for its inputs) */
    if (st >= 0 && !(scratch = malloc(sizeof(int) * maxout)))
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < b->n_node && st >= 0; i++) {
        const Onnx__NodeProto *bn = b->node[i];
        renamed r = {0};
        if ((st = rename_node(L, bn, &sc, prefix, &r)) >= 0) {
            if (subgraph_op(bn))
                st = add_subgraph_op(L, &r.np, &sc);
            else if (file_op(bn) != NN_OP_CONSTANT)
                st = add_node(L, &r.np, scratch);
        }
        renamed_free(&r);
    }
    for (size_t j = 0; j < b->n_output && st >= 0; j++) {
        const char *name = S(b->output[j]->name);
        if ((outs[j] = *name ? nn_graph_find(L->g, scope_resolve(&sc, name)) : -1) < 0)
            st = node_err(np, FFU_ERR_FORMAT, "output '%s' of its %s is never produced", name,
                          which);
    }
    free(scratch);
    smap_free(&sc.names);
    return st;
}

/* If node np, its names the graph's; up: the scope its branches' outer names are
 * resolved in (NULL at the top). */
static ffu_status add_if(loader *L, const Onnx__NodeProto *np, const scope *up)
{
    nn_graph *g = L->g;
    /* both there: checked by check_subgraphs */
    const Onnx__AttributeProto *ta = find_attr(np, "then_branch"),
                               *ea = find_attr(np, "else_branch");
    if (np->n_input != 1 || !*np->input[0])
        return node_err(np, FFU_ERR_FORMAT, "If takes one input, the condition");
    int cond = nn_graph_find(g, np->input[0]);
    if (cond < 0) return node_err(np, FFU_ERR_FORMAT, "input '%s' is not defined", np->input[0]);
    size_t n = np->n_output;
    if (ta->g->n_output != n || ea->g->n_output != n)
        return node_err(np, FFU_ERR_FORMAT, "If has %zu outputs, its branches %zu and %zu", n,
                        ta->g->n_output, ea->g->n_output);
    int *outs = malloc(sizeof(int) * (2 * n + 1));
    if (!outs) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = add_branch(L, np, ta->g, "then", up, NULL, 0, outs);
    if (st >= 0) st = add_branch(L, np, ea->g, "else", up, NULL, 0, outs + n);
    /* the condition, one bool, as a scalar: Where must not broadcast it into the values */
    static const int64_t none = 0;
    int shp = -1, scalar = -1;
    const char *name = np->name && *np->name ? np->name : "If";
    char base[400], buf[500];
    if (st >= 0) {
        nn_shape s0 = {.rank = 1, .d = {0}};
        shp = add_const(L, np, "cond_shape", FFU_DTYPE_I64, &s0, &none, 0);
        snprintf(base, sizeof base, "%s/cond", name);
        scalar = nn_graph_add_tensor(g, onnx_unique_name(g, base, buf, sizeof buf),
                                     FFU_DTYPE_UNDEFINED, NULL);
        if (shp < 0 || scalar < 0) st = shp < 0 ? shp : scalar;
    }
    if (st >= 0) {
        int in[2] = {cond, shp};
        snprintf(base, sizeof base, "%s/cond", name);
        int r = nn_graph_add_node(g, NN_OP_RESHAPE, base, in, 2, &scalar, 1);
        if (r < 0) st = r;
    }
    for (size_t j = 0; j < n && st >= 0; j++) {
        if (!*np->output[j]) continue; /* an output nobody reads */
        int out = nn_graph_find(g, np->output[j]);
        if (out < 0) {
            st = node_err(np, FFU_ERR_FORMAT, "output '%s' was not declared", np->output[j]);
            break;
        }
        int in[3] = {scalar, outs[j], outs[n + j]};
        snprintf(base, sizeof base, "%s/select%zu", name, j);
        int node = nn_graph_add_node(g, NN_OP_WHERE, base, in, 3, &out, 1);
        if (node < 0 || (st = nn_node_set_int(g, node, "_if", 1)) < 0) st = node < 0 ? node : st;
    }
    free(outs);
    return st;
}

/* ---- Scan: the body unrolled ---------------------------------------------------------- */

/* Scan (opset 9 on) runs its body once per slice of its scan inputs along their axes,
 * carrying its state values from one step to the next and stacking its other outputs
 * along theirs. The number of steps is the scan inputs' length on that axis; when it is
 * known at load (declared shapes) the body is loaded that many times, as an If's
 * branches are (names "<scan>/step<t>/..."), with a Gather taking each step's slices
 * and Unsqueeze and Concat stacking the outputs; directions 1 take the slices last to
 * first and stack the outputs so. At most SCAN_MAX_NODES body nodes over all steps. */
#define SCAN_MAX_NODES (1 << 16)

static int scan_step_node(loader *L, const Onnx__NodeProto *np, nn_op op, const char *what,
                          size_t t, size_t j, const int *in, int nin, int out)
{
    char name[600];
    snprintf(name, sizeof name, "%s/step%zu/%s%zu", S(np->name), t, what, j);
    return nn_graph_add_node(L->g, op, name, in, nin, &out, 1);
}

static int scan_tensor(loader *L, const Onnx__NodeProto *np, const char *what, size_t t, size_t j)
{
    char base[600], buf[700];
    snprintf(base, sizeof base, "%s/step%zu/%s%zu", S(np->name), t, what, j);
    return nn_graph_add_tensor(L->g, onnx_unique_name(L->g, base, buf, sizeof buf),
                               FFU_DTYPE_UNDEFINED, NULL);
}

/* attribute `name` of np as n ints (missing: all 0), each checked against [lo, hi] */
static ffu_status scan_ints(const Onnx__NodeProto *np, const char *name, size_t n, int64_t lo,
                            int64_t hi, int64_t *v)
{
    const Onnx__AttributeProto *a = find_attr(np, name);
    for (size_t i = 0; i < n; i++)
        v[i] = 0;
    if (!a) return FFU_OK;
    if (a->n_ints != n)
        return node_err(np, FFU_ERR_FORMAT, "%s has %zu values, not %zu", name, a->n_ints, n);
    for (size_t i = 0; i < n; i++) {
        if (a->ints[i] < lo || a->ints[i] > hi)
            return node_err(np, FFU_ERR_FORMAT, "%s[%zu] = %lld is outside [%lld, %lld]", name, i,
                            (long long)a->ints[i], (long long)lo, (long long)hi);
        v[i] = a->ints[i];
    }
    return FFU_OK;
}

static ffu_status add_scan(loader *L, const Onnx__NodeProto *np, const scope *up)
{
    nn_graph *g = L->g;
    if (L->opset < 9)
        return node_err(np, FFU_ERR_UNSUPPORTED,
                        "Scan before opset 9 (a batch axis and sequence lengths) is not supported");
    const Onnx__GraphProto *body = find_attr(np, "body")->g; /* checked by check_subgraphs */
    const Onnx__AttributeProto *a = find_attr(np, "num_scan_inputs");
    if (!a || a->i < 1 || (uint64_t)a->i > np->n_input)
        return node_err(np, FFU_ERR_FORMAT, "num_scan_inputs is missing or not in [1, %zu]",
                        np->n_input);
    size_t m = (size_t)a->i, nst = np->n_input - m;
    if (body->n_input != np->n_input || body->n_output < nst)
        return node_err(np, FFU_ERR_FORMAT,
                        "its body has %zu inputs and %zu outputs for %zu inputs, %zu of them state",
                        body->n_input, body->n_output, np->n_input, nst);
    size_t k = body->n_output - nst;
    if (np->n_output > nst + k)
        return node_err(np, FFU_ERR_FORMAT, "%zu outputs, its body gives %zu", np->n_output,
                        nst + k);
    int64_t *iv = malloc(sizeof(int64_t) * 2 * (m + k + 1));
    int *in = malloc(sizeof(int) * (np->n_input + 1));
    const char **names = malloc(sizeof(char *) * (np->n_input + 1));
    int *outs = malloc(sizeof(int) * (nst + k + 1));
    int *steps = NULL, *cat = NULL;
    ffu_status st =
        iv && in && names && outs ? FFU_OK : ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    int64_t *in_axis = iv, *in_dir = iv + m, *out_axis = iv + 2 * m, *out_dir = iv + 2 * m + k;
    if (st >= 0)
        st = scan_ints(np, "scan_input_axes", m, -FFU_NN_MAX_RANK, FFU_NN_MAX_RANK - 1, in_axis);
    if (st >= 0) st = scan_ints(np, "scan_input_directions", m, 0, 1, in_dir);
    if (st >= 0)
        st = scan_ints(np, "scan_output_axes", k, -FFU_NN_MAX_RANK, FFU_NN_MAX_RANK - 1, out_axis);
    if (st >= 0) st = scan_ints(np, "scan_output_directions", k, 0, 1, out_dir);
    /* the inputs, and the number of steps from the scan inputs' declared shapes */
    int64_t steps_n = -1;
    for (size_t i = 0; i < np->n_input && st >= 0; i++) {
        if (!*np->input[i] || (in[i] = nn_graph_find(g, np->input[i])) < 0) {
            st = node_err(np, FFU_ERR_FORMAT, "input %zu is missing or not defined", i);
            break;
        }
        names[i] = g->tensors[in[i]].name;
        if (i < nst) continue;
        nn_shape sh;
        dtype_hint(L, in[i], &sh);
        int64_t ax = in_axis[i - nst];
        if (sh.rank > 0 && ax < 0) ax += sh.rank;
        int64_t len = sh.rank > 0 && ax >= 0 && ax < sh.rank ? sh.d[ax] : -1;
        if (len < 0) {
            st = node_err(np, FFU_ERR_UNSUPPORTED,
                          "the length of scan input '%s' is not known when the model loads "
                          "(Scan is unrolled then; its declared shape is needed)",
                          np->input[i]);
        } else if (steps_n >= 0 && len != steps_n) {
            st = node_err(np, FFU_ERR_FORMAT, "scan inputs of lengths %lld and %lld",
                          (long long)steps_n, (long long)len);
        }
        in_axis[i - nst] = ax;
        steps_n = len;
    }
    if (st >= 0 && steps_n == 0)
        st = node_err(np, FFU_ERR_UNSUPPORTED, "a Scan of no steps is not supported");
    if (st >= 0 && (uint64_t)steps_n > SCAN_MAX_NODES / (body->n_node + 1))
        st = node_err(np, FFU_ERR_TOO_LARGE,
                      "%lld steps of a %zu-node body: more than %d nodes unrolled",
                      (long long)steps_n, body->n_node, SCAN_MAX_NODES);
    size_t T = st >= 0 ? (size_t)steps_n : 0;
    if (st >= 0 &&
        (!(steps = malloc(sizeof(int) * (T * k + 1))) || !(cat = malloc(sizeof(int) * (T + 1)))))
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    /* the steps */
    for (size_t t = 0; t < T && st >= 0; t++) {
        for (size_t i = 0; i < m && st >= 0; i++) {
            int64_t idx = in_dir[i] ? (int64_t)(T - 1 - t) : (int64_t)t;
            nn_shape s0 = {.rank = 0};
            int c = add_const(L, np, "step", FFU_DTYPE_I64, &s0, &idx, sizeof idx);
            int slice = scan_tensor(L, np, "in", t, i);
            int gin[2] = {in[nst + i], c};
            int node = c < 0 || slice < 0
                           ? -1
                           : scan_step_node(L, np, NN_OP_GATHER, "slice", t, i, gin, 2, slice);
            if (c < 0 || slice < 0 || node < 0 ||
                (st = nn_node_set_int(g, node, "axis", in_axis[i])) < 0) {
                st = st < 0 ? st : c < 0 ? c : slice < 0 ? slice : node;
                break;
            }
            names[nst + i] = g->tensors[slice].name;
        }
        char which[32];
        snprintf(which, sizeof which, "step%zu", t);
        if (st >= 0) st = add_branch(L, np, body, which, up, names, np->n_input, outs);
        for (size_t j = 0; j < nst && st >= 0; j++)
            names[j] = g->tensors[outs[j]].name;
        for (size_t j = 0; j < k && st >= 0; j++)
            steps[t * k + j] = outs[nst + j];
    }
    /* the last state values; each other output stacked */
    for (size_t j = 0; j < np->n_output && st >= 0; j++) {
        if (!*np->output[j]) continue;
        int out = nn_graph_find(g, np->output[j]);
        if (out < 0) {
            st = node_err(np, FFU_ERR_FORMAT, "output '%s' was not declared", np->output[j]);
            break;
        }
        if (j < nst) {
            int x = nn_graph_find(g, names[j]);
            int r = scan_step_node(L, np, NN_OP_IDENTITY, "state", T, j, &x, 1, out);
            if (r < 0) st = r;
            continue;
        }
        size_t o = j - nst;
        int ax = add_i64s(L, np, "axes", &out_axis[o], 1);
        for (size_t s2 = 0; s2 < T && st >= 0 && ax >= 0; s2++) {
            size_t t = out_dir[o] ? T - 1 - s2 : s2;
            int u = scan_tensor(L, np, "stack", t, o);
            int uin[2] = {steps[t * k + o], ax};
            int r = u < 0 ? u : scan_step_node(L, np, NN_OP_UNSQUEEZE, "stack", t, o, uin, 2, u);
            if (r < 0) st = r;
            cat[s2] = u;
        }
        if (ax < 0) st = ax;
        if (st < 0) break;
        char name[600];
        snprintf(name, sizeof name, "%s/out%zu", S(np->name), o);
        int r = nn_graph_add_node(g, NN_OP_CONCAT, name, cat, (int)T, &out, 1);
        if (r < 0 || (st = nn_node_set_int(g, r, "axis", out_axis[o])) < 0) st = r < 0 ? r : st;
    }
    free(iv);
    free(in);
    free(names);
    free(outs);
    free(steps);
    free(cat);
    return st;
}

/* (check_subgraphs has bounded the nesting before any of this runs.) */
static ffu_status add_subgraph_op(loader *L, const Onnx__NodeProto *np, const scope *up)
{
    return subgraph_op(np) == 1 ? add_if(L, np, up) : add_scan(L, np, up);
}

static ffu_status build(loader *L, const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *gp = L->gp;
    nn_graph *g = L->g;
    ffu_status st = FFU_OK;
    char what[300];

    if (gp->n_node > ONNX_MAX_ITEMS || gp->n_initializer > ONNX_MAX_ITEMS ||
        gp->n_input > ONNX_MAX_ITEMS || gp->n_output > ONNX_MAX_ITEMS ||
        gp->n_value_info > ONNX_MAX_ITEMS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "ONNX graph: more than %d nodes or values",
                             ONNX_MAX_ITEMS);
    if (gp->n_sparse_initializer)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "ONNX graph: sparse initializers are not supported");

    /* name maps */
    size_t nvi = gp->n_input + gp->n_output + gp->n_value_info, nused = gp->n_output;
    for (size_t i = 0; i < gp->n_node; i++) nused += gp->node[i]->n_input;
    if (nused > (size_t)4 * ONNX_MAX_ITEMS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "ONNX graph: more than %d node inputs",
                             4 * ONNX_MAX_ITEMS);
    if (smap_init(&L->vinfo, nvi) < 0 || smap_init(&L->used, nused) < 0)
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    const Onnx__ValueInfoProto *const *lists[3] = {(const Onnx__ValueInfoProto *const *)gp->input,
                                                   (const Onnx__ValueInfoProto *const *)gp->output,
                                                   (const Onnx__ValueInfoProto *const *)gp->value_info};
    size_t counts[3] = {gp->n_input, gp->n_output, gp->n_value_info};
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            if (lists[l][i] && lists[l][i]->name && *lists[l][i]->name)
                smap_put(&L->vinfo, lists[l][i]->name, lists[l][i]);
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t j = 0; j < gp->node[i]->n_input; j++)
            if (*gp->node[i]->input[j]) smap_put(&L->used, gp->node[i]->input[j], L);
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && *gp->output[i]->name) smap_put(&L->used, gp->output[i]->name, L);

    /* pass 1: initializers, graph inputs, node outputs */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !*t->name)
            return ffu_error_set(FFU_ERR_FORMAT, "ONNX initializer #%zu has no name", i);
        snprintf(what, sizeof what, "ONNX initializer '%s'", t->name);
        int r = onnx_tensor_add(g, t, t->name, what);
        if (r < 0) return r;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name)
            return ffu_error_set(FFU_ERR_FORMAT, "ONNX graph input #%zu has no name", i);
        int t = nn_graph_find(g, vi->name);
        if (t >= 0) {
            if (!(g->tensors[t].flags & NN_T_CONST))
                return ffu_error_set(FFU_ERR_FORMAT, "ONNX graph input '%s' is listed twice",
                                     vi->name);
            continue; /* an initializer listed as input (IR < 4 style): a constant */
        }
        ffu_dtype dt;
        nn_shape shape;
        if ((st = value_type(vi, "ONNX graph input", &dt, &shape)) < 0) return st;
        if (dt == FFU_DTYPE_UNDEFINED)
            return ffu_error_set(FFU_ERR_FORMAT, "ONNX graph input '%s' has no element type",
                                 vi->name);
        if ((t = nn_graph_add_tensor(g, vi->name, dt, shape.rank >= 0 ? &shape : NULL)) < 0)
            return t;
        if ((st = nn_graph_mark_input(g, t)) < 0) return st;
    }
    for (size_t i = 0; i < gp->n_node; i++)
        if ((st = add_outputs(L, gp->node[i])) < 0) return st;

    /* pass 2: nodes */
    size_t maxout = 1;
    for (size_t i = 0; i < gp->n_node; i++)
        if (gp->node[i]->n_output > maxout) maxout = gp->node[i]->n_output;
    int *outs = malloc(sizeof(int) * maxout);
    if (!outs) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < gp->n_node && st >= 0; i++)
        if (subgraph_op(gp->node[i]))
            st = add_subgraph_op(L, gp->node[i], NULL);
        else if (file_op(gp->node[i]) != NN_OP_CONSTANT)
            st = add_node(L, gp->node[i], outs);
    free(outs);
    if (st < 0) return st;

    /* pass 3: outputs, order */
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        int t = nn_graph_find(g, S(vi->name));
        if (t < 0)
            return ffu_error_set(FFU_ERR_FORMAT, "ONNX graph output '%s' is never produced",
                                 S(vi->name));
        if (g->tensors[t].flags & NN_T_OUTPUT)
            return ffu_error_set(FFU_ERR_FORMAT, "ONNX graph output '%s' is listed twice", vi->name);
        ffu_dtype dt;
        nn_shape shape;
        if ((st = value_type(vi, "ONNX graph output", &dt, &shape)) < 0) return st;
        nn_tensor *x = &g->tensors[t];
        if (x->producer >= 0) { /* declared type; shape inference has the last word */
            x->dtype = dt;
            x->shape = shape;
        }
        if ((st = nn_graph_mark_output(g, t)) < 0) return st;
    }
    if ((st = nn_graph_toposort(g)) < 0) return st;

    g->format = "onnx";
    g->opset = L->opset;
    const char *pn = S(m->producer_name), *pv = S(m->producer_version);
    size_t len = strlen(pn) + strlen(pv) + 2;
    char *prod = ffu_arena_alloc(g->arena, len);
    if (!prod) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    snprintf(prod, len, "%s%s%s", pn, *pn && *pv ? " " : "", pv);
    g->producer = prod;
    return FFU_OK;
}

ffu_status nn_onnx_load(const void *data, size_t size, nn_graph **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "nn_onnx_load: out is NULL");
    *out = NULL;
    if (!data || size == 0) return ffu_error_set(FFU_ERR_FORMAT, "ONNX model: empty file");
    if (size > NN_ONNX_MAX_FILE)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "ONNX model of %zu bytes is above the limit of "
                             "%zu (external data is not supported)", size, NN_ONNX_MAX_FILE);
    onnx_alloc a;
    onnx_alloc_init(&a, ONNX_ALLOC_CAP);
    ProtobufCMessage *msg;
    ffu_status st = onnx_unpack(&onnx__model_proto__descriptor, data, size, &a, "ONNX model", &msg);
    if (st < 0) return st;
    const Onnx__ModelProto *m = (const Onnx__ModelProto *)msg;

    loader L = {.opset = -1};
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *dom = S(m->opset_import[i]->domain);
        if (!*dom || strcmp(dom, "ai.onnx") == 0) {
            L.opset = (int)m->opset_import[i]->version;
            if (m->opset_import[i]->version != (int)m->opset_import[i]->version) L.opset = INT_MAX;
        }
    }
    if (!m->graph) {
        st = ffu_error_set(FFU_ERR_FORMAT, "ONNX model has no graph (not an ONNX model?)");
    } else if ((st = check_nodes(m->graph, 0)) < 0) {
        /* the op or domain named is the useful reason */
    } else if (L.opset < 0) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "ONNX model declares no ai.onnx opset");
    } else if (L.opset < NN_ONNX_MIN_OPSET || L.opset > NN_ONNX_MAX_OPSET) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "ONNX opset %d is not supported (%d to %d are)",
                           L.opset, NN_ONNX_MIN_OPSET, NN_ONNX_MAX_OPSET);
    } else {
        L.gp = m->graph;
        if ((st = nn_graph_create(&L.g)) == FFU_OK) st = build(&L, m);
    }
    smap_free(&L.vinfo);
    smap_free(&L.used);
    protobuf_c_message_free_unpacked(msg, &a.pa);
    if (st < 0) {
        nn_graph_destroy(L.g);
        return st;
    }
    *out = L.g;
    return FFU_OK;
}

ffu_status nn_graph_check_ops(const nn_graph *g)
{
    for (int i = 0; i < g->nnodes; i++)
        if (!nn_op_get(g->nodes[i].op))
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "unsupported op '%s' (node '%s')",
                                 nn_op_name(g->nodes[i].op), g->nodes[i].name);
    return FFU_OK;
}
