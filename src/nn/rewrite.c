/* Graph rewrites: the transpose clean-up (layout propagation) and the arithmetic
 * pattern rewrites declared in rewrite.h. Both work on any loaded graph; the TF.js
 * loader's NHWC<->NCHW transposes and the converters' spelled-out activations and
 * batch norms are what they were written for.
 *
 * Transposes. Every tensor t gets a layout (perm P, stored tensor s) meaning
 * t == Transpose(s, P); the identity layout means t is itself available (s may be
 * another tensor that holds the same value, after two transposes cancelled). Walking
 * the nodes in order: a Transpose only composes layouts (it is dropped unless its
 * output must be materialised); a layout-agnostic op whose variable inputs share one
 * layout P runs on the stored tensors instead, with constant operands and axis
 * attributes permuted, and its output gets layout P; any other node gets its inputs
 * materialised (one Transpose per tensor, reusing the original node where there was
 * one). Graph outputs are materialised at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

#include "ops/ops_internal.h"

/* ---- shared helpers ---------------------------------------------------------------------- */

/* Number of node inputs reading each tensor; graph outputs count as many readers. */
static int *use_counts(const nn_graph *g)
{
    int *u = calloc((size_t)g->ntensors + 1, sizeof(int));
    if (!u) return NULL;
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].ninputs; j++)
            if (g->nodes[i].inputs[j] >= 0) u[g->nodes[i].inputs[j]]++;
    for (int i = 0; i < g->noutputs; i++) u[g->outputs[i]] += 1 << 20;
    return u;
}

/* Removes the nodes with keep[i] == 0, preserving order, and fixes every producer. */
static void compact(nn_graph *g, const unsigned char *keep)
{
    int k = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (keep[i]) g->nodes[k++] = g->nodes[i];
    g->nnodes = k;
    for (int t = 0; t < g->ntensors; t++) g->tensors[t].producer = -1;
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].noutputs; j++)
            if (g->nodes[i].outputs[j] >= 0) g->tensors[g->nodes[i].outputs[j]].producer = i;
}

/* Drops nodes that no graph output depends on (nothing when the graph has no outputs). */
static ffu_status sweep_dead(nn_graph *g)
{
    if (g->noutputs == 0 || g->nnodes == 0) return FFU_OK;
    unsigned char *live = calloc((size_t)g->nnodes, 1);
    int *stack = malloc((size_t)g->nnodes * sizeof(int)), sp = 0;
    if (!live || !stack) {
        free(live), free(stack);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->noutputs; i++) {
        int p = g->tensors[g->outputs[i]].producer;
        if (p >= 0 && !live[p]) live[p] = 1, stack[sp++] = p;
    }
    while (sp) {
        const nn_node *n = &g->nodes[stack[--sp]];
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j], p = t >= 0 ? g->tensors[t].producer : -1;
            if (p >= 0 && !live[p]) live[p] = 1, stack[sp++] = p;
        }
    }
    compact(g, live);
    free(live), free(stack);
    return FFU_OK;
}

/* A new tensor named "<base>#<tag>" (a number appended until the name is free). */
static int new_tensor(nn_graph *g, const char *base, const char *tag, ffu_dtype dt,
                      const nn_shape *shape)
{
    char name[256];
    for (int k = 0; k < 1000000; k++) {
        if (k) snprintf(name, sizeof name, "%.200s#%s%d", base, tag, k);
        else snprintf(name, sizeof name, "%.200s#%s", base, tag);
        if (nn_graph_find(g, name) < 0) return nn_graph_add_tensor(g, name, dt, shape);
    }
    return ffu_error_set(FFU_ERR_INTERNAL, "no free tensor name for '%.200s'", base);
}

static int new_const(nn_graph *g, const char *base, const char *tag, ffu_dtype dt,
                     const nn_shape *shape, const void *data)
{
    int t = new_tensor(g, base, tag, dt, shape); /* reserve a free name */
    if (t < 0) return t;
    /* a constant needs the const flag and data: rebuild it in place */
    size_t nb = (size_t)nn_shape_numel(shape) * ffu_dtype_size(dt);
    void *p = ffu_arena_alloc_aligned(g->arena, nb ? nb : 1, 64);
    if (!p) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    if (nb) memcpy(p, data, nb);
    g->tensors[t].data = p;
    g->tensors[t].nbytes = nb;
    g->tensors[t].flags |= NN_T_CONST;
    return t;
}

static const nn_tensor *const_f32(const nn_graph *g, int t)
{
    if (t < 0 || t >= g->ntensors) return NULL;
    const nn_tensor *c = &g->tensors[t];
    if (!(c->flags & NN_T_CONST) || c->dtype != FFU_DTYPE_F32 || c->shape.rank < 0 ||
        nn_shape_numel(&c->shape) < 0 || (size_t)nn_shape_numel(&c->shape) * 4 != c->nbytes ||
        (!c->data && c->nbytes))
        return NULL;
    return c;
}

static int scalar_f32(const nn_graph *g, int t, float *v)
{
    const nn_tensor *c = const_f32(g, t);
    if (!c || nn_shape_numel(&c->shape) != 1) return 0;
    *v = *(const float *)c->data;
    return 1;
}

static int producer(const nn_graph *g, int t)
{
    return t >= 0 && t < g->ntensors ? g->tensors[t].producer : -1;
}

/* Sets a node's inputs (a new array in the graph's arena when it must grow). */
static ffu_status set_inputs(nn_graph *g, int i, const int *in, int nin)
{
    nn_node *n = &g->nodes[i];
    if (nin > n->ninputs) {
        int *p = ffu_arena_alloc(g->arena, sizeof(int) * (size_t)nin);
        if (!p) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        n->inputs = p;
    }
    memcpy(n->inputs, in, sizeof(int) * (size_t)nin);
    n->ninputs = nin;
    return FFU_OK;
}

/* ---- transposes ---------------------------------------------------------------------------- */

typedef struct lay {
    int rank; /* 0: identity */
    int8_t p[FFU_NN_MAX_RANK];
} lay;

typedef struct tp {
    nn_graph *g;
    lay *L;
    int *stored;
    unsigned char *mat;  /* a materialising node exists for this tensor */
    int tcap;
    unsigned char *virt; /* a Transpose node bypassed by the propagation */
    int ncap;
} tp;

static ffu_status tp_grow(tp *s)
{
    nn_graph *g = s->g;
    if (g->ntensors > s->tcap) {
        int nc = g->ntensors * 2 + 16;
        lay *L = realloc(s->L, (size_t)nc * sizeof *L);
        if (L) s->L = L;
        int *st = realloc(s->stored, (size_t)nc * sizeof(int));
        if (st) s->stored = st;
        unsigned char *m = realloc(s->mat, (size_t)nc);
        if (m) s->mat = m;
        if (!L || !st || !m) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        for (int t = s->tcap; t < nc; t++) {
            s->L[t].rank = 0;
            s->stored[t] = t;
            s->mat[t] = 0;
        }
        s->tcap = nc;
    }
    if (g->nnodes > s->ncap) {
        int nc = g->nnodes * 2 + 16;
        unsigned char *v = realloc(s->virt, (size_t)nc);
        if (!v) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        memset(v + s->ncap, 0, (size_t)(nc - s->ncap));
        s->virt = v;
        s->ncap = nc;
    }
    return FFU_OK;
}

static int lay_is_identity(const lay *l)
{
    for (int i = 0; i < l->rank; i++)
        if (l->p[i] != i) return 0;
    return 1;
}

static int lay_equal(const lay *a, const lay *b)
{
    return a->rank == b->rank && memcmp(a->p, b->p, (size_t)a->rank) == 0;
}

/* A node's perm attribute (default: reversed axes of a rank-r input, r < 0 unknown). */
static int read_perm(const nn_node *n, int r, lay *out)
{
    int cnt;
    const int64_t *p = nn_attr_ints(n, "perm", &cnt);
    if (!p) {
        if (r < 1 || r > FFU_NN_MAX_RANK) return 0;
        out->rank = r;
        for (int i = 0; i < r; i++) out->p[i] = (int8_t)(r - 1 - i);
        return 1;
    }
    if (cnt < 1 || cnt > FFU_NN_MAX_RANK || (r >= 0 && cnt != r)) return 0;
    unsigned seen = 0;
    for (int i = 0; i < cnt; i++) {
        if (p[i] < 0 || p[i] >= cnt || (seen >> p[i] & 1)) return 0;
        seen |= 1u << p[i];
        out->p[i] = (int8_t)p[i];
    }
    out->rank = cnt;
    return 1;
}

static ffu_status set_perm_attr(nn_graph *g, int node, const lay *l)
{
    int64_t p[FFU_NN_MAX_RANK];
    for (int i = 0; i < l->rank; i++) p[i] = l->p[i];
    return nn_node_set_ints(g, node, "perm", p, l->rank);
}

/* The tensor holding t's true value, adding (or reviving) a Transpose if needed. */
static int materialize(tp *s, int t)
{
    nn_graph *g = s->g;
    if (s->L[t].rank == 0) return s->stored[t];
    if (s->mat[t]) return t;
    int p = g->tensors[t].producer;
    ffu_status st;
    if (p >= 0 && s->virt[p]) { /* revive the original Transpose with the composed perm */
        g->nodes[p].inputs[0] = s->stored[t];
        s->virt[p] = 0;
        if ((st = set_perm_attr(g, p, &s->L[t])) < 0) return st;
    } else {
        char name[256];
        snprintf(name, sizeof name, "%.200s#T", g->tensors[t].name);
        int in = s->stored[t];
        int k = nn_graph_add_node(g, NN_OP_TRANSPOSE, name, &in, 1, &t, 1);
        if (k < 0) return k;
        if ((st = tp_grow(s)) < 0 || (st = set_perm_attr(g, k, &s->L[t])) < 0) return st;
    }
    s->mat[t] = 1;
    return t;
}

enum { PK_NONE, PK_ELEM, PK_CLIP, PK_PAD, PK_CONCAT, PK_AXIS, PK_REDUCE };

static int push_kind(nn_op op)
{
    switch (op) {
    case NN_OP_RELU: case NN_OP_LEAKY_RELU: case NN_OP_SIGMOID: case NN_OP_TANH:
    case NN_OP_ELU: case NN_OP_SELU: case NN_OP_HARD_SIGMOID: case NN_OP_HARD_SWISH:
    case NN_OP_SOFTPLUS: case NN_OP_SQRT: case NN_OP_EXP: case NN_OP_LOG: case NN_OP_NEG:
    case NN_OP_ABS: case NN_OP_RECIPROCAL: case NN_OP_ERF: case NN_OP_FLOOR: case NN_OP_CEIL:
    case NN_OP_ROUND: case NN_OP_SIGN: case NN_OP_SIN: case NN_OP_COS: case NN_OP_NOT:
    case NN_OP_RSQRT: case NN_OP_SQUARE: case NN_OP_RELU6: case NN_OP_CAST: case NN_OP_IDENTITY:
    case NN_OP_ADD: case NN_OP_SUB: case NN_OP_MUL: case NN_OP_DIV: case NN_OP_POW:
    case NN_OP_MAX: case NN_OP_MIN: case NN_OP_SUM: case NN_OP_MEAN: case NN_OP_MOD:
    case NN_OP_PRELU: case NN_OP_EQUAL: case NN_OP_GREATER: case NN_OP_GREATER_OR_EQUAL:
    case NN_OP_LESS: case NN_OP_LESS_OR_EQUAL: case NN_OP_AND: case NN_OP_OR: case NN_OP_XOR:
    case NN_OP_WHERE:
        return PK_ELEM;
    case NN_OP_CLIP: return PK_CLIP;
    case NN_OP_PAD: return PK_PAD;
    case NN_OP_CONCAT: return PK_CONCAT;
    case NN_OP_SOFTMAX: case NN_OP_LOG_SOFTMAX: return PK_AXIS;
    case NN_OP_REDUCE_MEAN: case NN_OP_REDUCE_SUM: case NN_OP_REDUCE_MAX: case NN_OP_REDUCE_MIN:
    case NN_OP_REDUCE_PROD: case NN_OP_REDUCE_L1: case NN_OP_REDUCE_L2:
    case NN_OP_REDUCE_SUM_SQUARE:
        return PK_REDUCE;
    default: return PK_NONE;
    }
}

/* Is input j of a node of this kind a value that follows the layout? */
static int is_data_input(int kind, int j)
{
    return kind == PK_ELEM || kind == PK_CONCAT || j == 0;
}

/* A constant of rank <= r broadcasting against a tensor with layout P, permuted so
 * that it broadcasts the same way against the stored tensor. */
static int permute_const(nn_graph *g, int t, const lay *P)
{
    const nn_tensor *c = &g->tensors[t];
    int r = P->rank;
    int64_t numel = nn_shape_numel(&c->shape);
    if (numel <= 1) return t; /* rank <= r with one element broadcasts identically */
    int64_t src_d[FFU_NN_MAX_RANK], dst_d[FFU_NN_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int k = i - (r - c->shape.rank);
        src_d[i] = k >= 0 ? c->shape.d[k] : 1;
    }
    int inv[FFU_NN_MAX_RANK];
    for (int i = 0; i < r; i++) inv[P->p[i]] = i;
    for (int j = 0; j < r; j++) dst_d[j] = src_d[inv[j]];
    size_t es = ffu_dtype_size(c->dtype);
    uint8_t *buf = malloc((size_t)numel * es);
    if (!buf) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    int64_t sstride[FFU_NN_MAX_RANK];
    sstride[r - 1] = 1;
    for (int i = r - 2; i >= 0; i--) sstride[i] = sstride[i + 1] * src_d[i + 1];
    int64_t idx[FFU_NN_MAX_RANK] = {0};
    for (int64_t o = 0; o < numel; o++) {
        int64_t off = 0; /* dst axis j walks src axis inv[j] */
        for (int j = 0; j < r; j++) off += idx[j] * sstride[inv[j]];
        memcpy(buf + o * (int64_t)es, (const uint8_t *)c->data + off * (int64_t)es, es);
        for (int j = r - 1; j >= 0; j--) {
            if (++idx[j] < dst_d[j]) break;
            idx[j] = 0;
        }
    }
    nn_shape ns = {.rank = r};
    for (int j = 0; j < r; j++) ns.d[j] = dst_d[j];
    int nt = new_const(g, c->name, "perm", c->dtype, &ns, buf);
    free(buf);
    return nt;
}

static int const_ints(const nn_graph *g, int t, int64_t *v, int max)
{
    if (t < 0) return -1;
    const nn_tensor *c = &g->tensors[t];
    int64_t n = nn_shape_numel(&c->shape);
    if (!(c->flags & NN_T_CONST) || n < 0 || n > max || c->shape.rank > 1) return -1;
    if (c->dtype != FFU_DTYPE_I64 && c->dtype != FFU_DTYPE_I32) return -1;
    for (int64_t i = 0; i < n; i++)
        v[i] = c->dtype == FFU_DTYPE_I64 ? ((const int64_t *)c->data)[i]
                                         : ((const int32_t *)c->data)[i];
    return (int)n;
}

/* Tries to run node i on the stored tensors. 1 = done, 0 = not applicable, < 0 error. */
static int try_push(tp *s, int i)
{
    nn_graph *g = s->g;
    nn_node *n = &g->nodes[i];
    int kind = push_kind(n->op);
    if (kind == PK_NONE || n->noutputs != 1 || n->act.kind == NN_ACT_PRELU) return 0;
    const lay *P = NULL;
    for (int j = 0; j < n->ninputs; j++) {
        int t = n->inputs[j];
        if (t < 0 || !is_data_input(kind, j) || s->L[t].rank == 0) continue;
        if (P && !lay_equal(P, &s->L[t])) return 0;
        P = &s->L[t];
    }
    if (!P) return 0;
    lay Pv = *P;
    int r = Pv.rank;
    /* check every input first, then rewrite */
    for (int j = 0; j < n->ninputs; j++) {
        int t = n->inputs[j];
        if (t < 0) continue;
        if (is_data_input(kind, j)) {
            if (s->L[t].rank) continue;
            const nn_tensor *c = &g->tensors[t];
            if (!(c->flags & NN_T_CONST) || c->shape.rank < 0 || c->shape.rank > r ||
                nn_shape_numel(&c->shape) < 0 || (!c->data && c->nbytes))
                return 0;
            if (kind == PK_CONCAT && c->shape.rank != r) return 0;
        } else if (kind == PK_PAD) {
            int64_t v[2 * FFU_NN_MAX_RANK];
            if ((j == 1 && const_ints(g, t, v, 2 * FFU_NN_MAX_RANK) != 2 * r) || j == 3) return 0;
        } else if (kind == PK_REDUCE && j == 1) {
            int64_t v[FFU_NN_MAX_RANK];
            int na = const_ints(g, t, v, FFU_NN_MAX_RANK);
            if (na < 0) return 0;
            for (int k = 0; k < na; k++)
                if (v[k] < -r || v[k] >= r) return 0;
        }
    }
    int64_t axis = 0;
    if (kind == PK_CONCAT || kind == PK_AXIS) {
        if (kind == PK_AXIS && nn_attr_int(n, "_coerce_2d", 0)) return 0;
        axis = nn_attr_int(n, "axis", kind == PK_AXIS ? -1 : 0);
        if (axis < -r || axis >= r) return 0;
        if (axis < 0) axis += r;
    }
    if (kind == PK_REDUCE && nn_attr_int(n, "keepdims", 1) != 1) return 0;

    int in[16];
    if (n->ninputs > 16) return 0;
    for (int j = 0; j < n->ninputs; j++) {
        int t = g->nodes[i].inputs[j];
        in[j] = t;
        if (t < 0) continue;
        if (is_data_input(kind, j)) {
            in[j] = s->L[t].rank ? s->stored[t] : permute_const(g, t, &Pv);
        } else if (kind == PK_PAD && j == 1) {
            int64_t p[2 * FFU_NN_MAX_RANK], q[2 * FFU_NN_MAX_RANK];
            const_ints(g, t, p, 2 * FFU_NN_MAX_RANK);
            for (int a = 0; a < r; a++) q[Pv.p[a]] = p[a], q[r + Pv.p[a]] = p[r + a];
            nn_shape ps = {.rank = 1, .d = {2 * r}};
            in[j] = new_const(g, g->tensors[t].name, "perm", FFU_DTYPE_I64, &ps, q);
        } else if (kind == PK_REDUCE && j == 1) {
            int64_t a[FFU_NN_MAX_RANK];
            int na = const_ints(g, t, a, FFU_NN_MAX_RANK);
            for (int k = 0; k < na; k++) a[k] = Pv.p[a[k] < 0 ? a[k] + r : a[k]];
            nn_shape as = {.rank = 1, .d = {na}};
            in[j] = new_const(g, g->tensors[t].name, "perm", FFU_DTYPE_I64, &as, a);
        } else {
            in[j] = materialize(s, t);
        }
        if (in[j] < 0) return in[j];
    }
    ffu_status st;
    if ((st = tp_grow(s)) < 0) return st;
    int o = g->nodes[i].outputs[0];
    nn_shape os = {.rank = -1};
    if (g->tensors[o].shape.rank == r) {
        os.rank = r;
        for (int a = 0; a < r; a++) os.d[Pv.p[a]] = g->tensors[o].shape.d[a];
    }
    int o2 = new_tensor(g, g->tensors[o].name, "t", g->tensors[o].dtype, &os);
    if (o2 < 0) return o2;
    if ((st = tp_grow(s)) < 0) return st;
    n = &g->nodes[i];
    memcpy(n->inputs, in, sizeof(int) * (size_t)n->ninputs);
    if (kind == PK_CONCAT || kind == PK_AXIS)
        if ((st = nn_node_set_int(g, i, "axis", Pv.p[axis])) < 0) return st;
    n->outputs[0] = o2;
    g->tensors[o2].producer = i;
    g->tensors[o].producer = -1;
    s->L[o] = Pv;
    s->stored[o] = o2;
    return 1;
}

ffu_status nn_rewrite_transposes(nn_graph *g)
{
    ffu_status st = nn_graph_toposort(g);
    if (st < 0) return st;
    tp s = {.g = g};
    unsigned char *keep = NULL;
    if ((st = tp_grow(&s)) < 0) goto out;
    int n0 = g->nnodes;
    for (int i = 0; i < n0; i++) {
        nn_node *n = &g->nodes[i];
        if (n->op == NN_OP_TRANSPOSE && n->ninputs >= 1 && n->inputs[0] >= 0 && n->noutputs == 1 &&
            n->act.kind == NN_ACT_NONE) {
            int u = n->inputs[0], v = n->outputs[0];
            const lay *Lu = &s.L[u];
            lay P, Lv;
            int r = Lu->rank ? Lu->rank : g->tensors[u].shape.rank;
            if (read_perm(n, r, &P)) {
                if (Lu->rank == 0) {
                    Lv = P;
                } else {
                    Lv.rank = P.rank;
                    for (int k = 0; k < P.rank; k++) Lv.p[k] = Lu->p[P.p[k]];
                }
                if (lay_is_identity(&Lv)) Lv.rank = 0;
                s.L[v] = Lv;
                s.stored[v] = s.stored[u];
                s.virt[i] = 1;
                continue;
            }
        }
        int pushed = try_push(&s, i);
        if (pushed < 0) {
            st = pushed;
            goto out;
        }
        if (pushed) continue;
        for (int j = 0; j < g->nodes[i].ninputs; j++) {
            int t = g->nodes[i].inputs[j];
            if (t < 0) continue;
            int m = materialize(&s, t);
            if (m < 0) {
                st = m;
                goto out;
            }
            g->nodes[i].inputs[j] = m;
        }
    }
    for (int k = 0; k < g->noutputs; k++) {
        int t = g->outputs[k];
        if (s.L[t].rank) {
            int m = materialize(&s, t);
            if (m < 0) {
                st = m;
                goto out;
            }
        } else if (s.stored[t] != t) { /* cancelled transposes: keep the name via Identity */
            int p = g->tensors[t].producer;
            if (p >= 0 && s.virt[p]) {
                g->nodes[p].op = NN_OP_IDENTITY;
                g->nodes[p].inputs[0] = s.stored[t];
                g->nodes[p].ninputs = 1;
                g->nodes[p].nattrs = 0;
                s.virt[p] = 0;
            }
        }
    }
    keep = malloc((size_t)g->nnodes + 1);
    if (!keep) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < g->nnodes; i++) keep[i] = !s.virt[i];
    compact(g, keep);
    if ((st = sweep_dead(g)) < 0) goto out;
    st = nn_graph_toposort(g);
out:
    free(s.L), free(s.stored), free(s.mat), free(s.virt), free(keep);
    return st;
}

/* ---- derived shapes (for broadcast checks before inference has run) ----------------------- */

static void derive_shape(const nn_graph *g, int t, nn_shape *s, int depth);

/* derive_shape through t's producer n, ignoring t's own shape */
static void derive_from_producer(const nn_graph *g, const nn_node *n, nn_shape *s, int depth)
{
    nn_shape in;
    int kind = push_kind(n->op);
    const nn_tensor *w = nn_in(g, n, 1);
    s->rank = -1;
    if (n->ninputs < 1) return;
    switch (n->op) {
    case NN_OP_CONV:
    case NN_OP_CONV_TRANSPOSE: /* weights [M, C/group, k...] and [C, M/group, k...] */
        if (!w || w->shape.rank < 3 || w->shape.rank > FFU_NN_MAX_RANK) return;
        s->rank = w->shape.rank;
        for (int i = 0; i < s->rank; i++) s->d[i] = -1;
        s->d[1] = n->op == NN_OP_CONV ? w->shape.d[0]
                                      : w->shape.d[1] * nn_attr_int(n, "group", 1);
        return;
    case NN_OP_GEMM: /* [M, N]: N from B, [K, N] or (transB) [N, K] */
        if (n->ninputs < 2) return;
        derive_shape(g, n->inputs[1], &in, depth + 1);
        if (in.rank != 2) return;
        s->rank = 2;
        s->d[0] = -1;
        s->d[1] = in.d[nn_attr_int(n, "transB", 0) ? 0 : 1];
        return;
    case NN_OP_MAX_POOL: /* batch and channels kept, spatial dims unknown (or 1) */
    case NN_OP_AVERAGE_POOL:
    case NN_OP_GLOBAL_AVERAGE_POOL:
    case NN_OP_GLOBAL_MAX_POOL:
        derive_shape(g, n->inputs[0], &in, depth + 1);
        if (in.rank < 3) return;
        *s = in;
        for (int i = 2; i < s->rank; i++)
            s->d[i] = n->op == NN_OP_GLOBAL_AVERAGE_POOL || n->op == NN_OP_GLOBAL_MAX_POOL ? 1 : -1;
        return;
    case NN_OP_PAD: { /* TF.js models pad channels so a residual matches a wider block */
        int mode;
        int64_t p0[FFU_NN_MAX_RANK], p1[FFU_NN_MAX_RANK];
        derive_shape(g, n->inputs[0], &in, depth + 1);
        if (in.rank < 1 || nn_pad_geom(g, n, in.rank, &mode, p0, p1) < 0) {
            ffu_error_clear(); /* pads not known at load time: the shape is not either */
            return;
        }
        *s = in;
        for (int i = 0; i < s->rank; i++)
            if (s->d[i] >= 0) s->d[i] += p0[i] + p1[i];
        return;
    }
    case NN_OP_TRANSPOSE: {
        lay P;
        derive_shape(g, n->inputs[0], &in, depth + 1);
        if (in.rank < 0 || !read_perm(n, in.rank, &P)) return;
        s->rank = in.rank;
        for (int i = 0; i < in.rank; i++) s->d[i] = in.d[(int)P.p[i]];
        return;
    }
    default:
        break;
    }
    if (kind != PK_ELEM && kind != PK_CLIP && kind != PK_AXIS && n->op != NN_OP_BATCH_NORM) return;
    int nin = kind == PK_ELEM ? n->ninputs : 1;
    for (int j = 0; j < nin; j++) {
        nn_shape b;
        derive_shape(g, n->inputs[j], &in, depth + 1);
        if (in.rank < 0) {
            s->rank = -1;
            return;
        }
        if (j == 0) {
            *s = in;
            continue;
        }
        /* broadcast keeping unknown dims unknown */
        int r = s->rank > in.rank ? s->rank : in.rank;
        b.rank = r;
        for (int i = 0; i < r; i++) {
            int ia = i - (r - s->rank), ib = i - (r - in.rank);
            int64_t da = ia >= 0 ? s->d[ia] : 1, db = ib >= 0 ? in.d[ib] : 1;
            b.d[i] = da == db ? da : da == 1 ? db : db == 1 ? da : -1;
        }
        *s = b;
    }
}

/* What is known of t's shape: its own, with dims it leaves unknown taken from what its
 * producer implies (Conv, ConvTranspose: the weight's rank and channels; Gemm: rank 2,
 * columns from B; pools: batch and channels kept; Pad with constant pads; Transpose:
 * permuted; shape-keeping and broadcasting ops: their inputs'). Unknown dims are -1,
 * an unknown rank -1. */
static void derive_shape(const nn_graph *g, int t, nn_shape *s, int depth)
{
    s->rank = -1;
    if (t < 0 || t >= g->ntensors || depth > 64) return;
    const nn_tensor *x = &g->tensors[t];
    if (nn_shape_known(&x->shape)) {
        *s = x->shape;
        return;
    }
    if (x->producer >= 0) derive_from_producer(g, &g->nodes[x->producer], s, depth);
    if (x->shape.rank < 0) return;
    if (s->rank != x->shape.rank) {
        *s = x->shape;
        return;
    }
    for (int i = 0; i < s->rank; i++)
        if (x->shape.d[i] >= 0) s->d[i] = x->shape.d[i];
}

void nn_derive_shape(const nn_graph *g, int t, nn_shape *s)
{
    derive_shape(g, t, s, 0);
}

/* 1 if constant c broadcasts into x's shape without changing it. */
static int fits_into(const nn_graph *g, const nn_tensor *c, int x)
{
    if (nn_shape_numel(&c->shape) == 1 && c->shape.rank == 0) return 1;
    nn_shape xs;
    derive_shape(g, x, &xs, 0);
    if (xs.rank < c->shape.rank) return 0;
    for (int i = 0; i < c->shape.rank; i++) {
        int64_t cd = c->shape.d[c->shape.rank - 1 - i], xd = xs.d[xs.rank - 1 - i];
        if (cd != 1 && cd != xd) return 0;
    }
    return 1;
}

/* ---- patterns -------------------------------------------------------------------------------- */

typedef struct pat {
    nn_graph *g;
    int *uses; /* per tensor of the round's start (nt of them): its readers */
    int nt;
    unsigned char *dead, *touched;
    int *rep; /* tensor -> the tensor that replaces it for readers (-1: none) */
} pat;

/* t is read by exactly one node and is not a graph output; its producer is free. */
static int private_value(const pat *s, int t)
{
    int p = producer(s->g, t);
    return p >= 0 && t < s->nt && s->uses[t] == 1 && !s->dead[p] && !s->touched[p] &&
           s->g->nodes[p].noutputs == 1 && s->g->nodes[p].act.kind == NN_ACT_NONE;
}

/* Node p as a clamp x -> min(max(x, lo), hi). */
static int as_clamp(const nn_graph *g, int p, int *x, float *lo, float *hi)
{
    const nn_node *n = &g->nodes[p];
    float v;
    if (n->act.kind != NN_ACT_NONE || n->noutputs != 1 || n->ninputs < 1 || n->inputs[0] < 0)
        return 0;
    switch (n->op) {
    case NN_OP_RELU:
    case NN_OP_RELU6:
        if (n->ninputs != 1) return 0;
        *x = n->inputs[0], *lo = 0, *hi = n->op == NN_OP_RELU ? INFINITY : 6;
        return 1;
    case NN_OP_MAX:
    case NN_OP_MIN:
        if (n->ninputs != 2 || n->inputs[1] < 0) return 0;
        for (int k = 0; k < 2; k++) {
            int c = n->inputs[k], o = n->inputs[1 - k];
            if (scalar_f32(g, c, &v) && v == v && fits_into(g, &g->tensors[c], o)) {
                *x = o;
                *lo = n->op == NN_OP_MAX ? v : -INFINITY;
                *hi = n->op == NN_OP_MAX ? INFINITY : v;
                return 1;
            }
        }
        return 0;
    case NN_OP_CLIP: {
        float l = -INFINITY, h = INFINITY;
        if (n->ninputs > 3) return 0;
        if (n->ninputs > 1 && n->inputs[1] >= 0 && !scalar_f32(g, n->inputs[1], &l)) return 0;
        if (n->ninputs > 2 && n->inputs[2] >= 0 && !scalar_f32(g, n->inputs[2], &h)) return 0;
        if (!(l <= h)) return 0;
        if (n->ninputs == 1) return 0; /* no bounds: type unknown, leave it */
        *x = n->inputs[0], *lo = l, *hi = h;
        return 1;
    }
    default: return 0;
    }
}

static float clampf(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }

/* Rewrites node i into Relu(x) / Clip(x, lo, hi) / Identity(x). */
static ffu_status make_clamp(nn_graph *g, int i, int x, float lo, float hi)
{
    int in[3] = {x, -1, -1}, nin = 1;
    nn_op op;
    if (lo == 0 && hi == INFINITY) {
        op = NN_OP_RELU;
    } else if (lo == -INFINITY && hi == INFINITY) {
        op = NN_OP_IDENTITY;
    } else {
        op = NN_OP_CLIP;
        nn_shape sc = {.rank = 0};
        const char *base = g->tensors[g->nodes[i].outputs[0]].name;
        if (lo > -INFINITY && (in[1] = new_const(g, base, "lo", FFU_DTYPE_F32, &sc, &lo)) < 0)
            return in[1];
        if (hi < INFINITY && (in[2] = new_const(g, base, "hi", FFU_DTYPE_F32, &sc, &hi)) < 0)
            return in[2];
        nin = in[2] >= 0 ? 3 : 2;
    }
    ffu_status st = set_inputs(g, i, in, nin);
    if (st < 0) return st;
    g->nodes[i].op = op;
    g->nodes[i].nattrs = 0;
    return FFU_OK;
}

/* Top node i of a clamp chain: merges the private clamps below it. */
static int rw_clamp_chain(pat *s, int i)
{
    nn_graph *g = s->g;
    int x, merged = 0;
    float lo, hi;
    if (!as_clamp(g, i, &x, &lo, &hi)) return 0;
    int top_is_max0 = g->nodes[i].op == NN_OP_MAX && lo == 0 && hi == INFINITY;
    for (;;) {
        int p = producer(g, x), y;
        float l1, h1;
        if (!private_value(s, x) || !as_clamp(g, p, &y, &l1, &h1)) break;
        float L = clampf(l1, lo, hi), H = clampf(h1, lo, hi);
        lo = L, hi = H;
        s->dead[p] = 1;
        x = y;
        merged++;
    }
    if (!merged && !top_is_max0) return 0;
    ffu_status st = make_clamp(g, i, x, lo, hi);
    if (st < 0) return st;
    s->touched[i] = 1;
    return 1;
}

/* The Neg of Relu(Neg(x)) that t is (min(x, 0) as the TF port of MTCNN writes it), or
 * -1. */
static int neg_relu_neg(const pat *s, int t, int *x)
{
    const nn_graph *g = s->g;
    int p = producer(g, t), y, r;
    float lo, hi;
    if (p < 0 || g->nodes[p].op != NN_OP_NEG || g->nodes[p].ninputs != 1) return -1;
    r = g->nodes[p].inputs[0];
    if (!private_value(s, r) || !as_clamp(g, producer(g, r), &y, &lo, &hi) || lo != 0 ||
        hi != INFINITY || g->nodes[producer(g, r)].op != NN_OP_RELU || !private_value(s, y))
        return -1;
    const nn_node *inner = &g->nodes[producer(g, y)];
    if (inner->op != NN_OP_NEG || inner->ninputs != 1 || inner->inputs[0] < 0) return -1;
    *x = inner->inputs[0];
    return p;
}

/* t = Min(x, 0) or -Relu(-x) (k = 1), or x - |x| (k = 2), privately. */
static int neg_part(const pat *s, int t, int *x, float *k)
{
    const nn_graph *g = s->g;
    if (!private_value(s, t)) return 0;
    int p = producer(g, t);
    const nn_node *n = &g->nodes[p];
    float lo, hi;
    if ((n->op == NN_OP_MIN && as_clamp(g, p, x, &lo, &hi) && lo == -INFINITY && hi == 0) ||
        neg_relu_neg(s, t, x) >= 0) {
        *k = 1;
        return 1;
    }
    if (n->op == NN_OP_SUB && n->ninputs == 2 && n->inputs[1] >= 0) {
        int a = n->inputs[1], pa = producer(g, a);
        if (private_value(s, a) && g->nodes[pa].op == NN_OP_ABS && g->nodes[pa].ninputs == 1 &&
            g->nodes[pa].inputs[0] == n->inputs[0]) {
            *x = n->inputs[0];
            *k = 2;
            return 1;
        }
    }
    return 0;
}

static void kill_neg_part(pat *s, int t)
{
    const nn_graph *g = s->g;
    int p = producer(g, t), x;
    if (neg_relu_neg(s, t, &x) >= 0) {
        int r = producer(g, g->nodes[p].inputs[0]);
        s->dead[r] = 1;
        s->dead[producer(g, g->nodes[r].inputs[0])] = 1;
    }
    s->dead[p] = 1;
    if (g->nodes[p].op == NN_OP_SUB) s->dead[producer(g, g->nodes[p].inputs[1])] = 1;
}

/* Add(pos, Mul(neg(x), a)) -> PRelu(x, slope): pos = Relu(x) (or Max(x, 0)) gives
 * slope k*a; pos = x itself gives 1 + k*a (x = relu(x) + min(x, 0)). */
static int rw_prelu(pat *s, int i)
{
    nn_graph *g = s->g;
    const nn_node *n = &g->nodes[i];
    if (n->op != NN_OP_ADD || n->ninputs != 2 || n->act.kind != NN_ACT_NONE || n->inputs[0] < 0 ||
        n->inputs[1] < 0)
        return 0;
    for (int k = 0; k < 2; k++) {
        int pos = n->inputs[k], neg = n->inputs[1 - k], pm, x;
        float kk;
        if (!private_value(s, neg) || g->nodes[pm = producer(g, neg)].op != NN_OP_MUL ||
            g->nodes[pm].ninputs != 2)
            continue;
        for (int m = 0; m < 2; m++) {
            int u = g->nodes[pm].inputs[m], ct = g->nodes[pm].inputs[1 - m];
            const nn_tensor *c = const_f32(g, ct);
            if (!c || !neg_part(s, u, &x, &kk) || !fits_into(g, c, x)) continue;
            int px = -1, x2;
            float lo, hi, add = 1;
            if (pos != x) {
                px = producer(g, pos);
                if (!private_value(s, pos) || !as_clamp(g, px, &x2, &lo, &hi) || x2 != x ||
                    lo != 0 || hi != INFINITY)
                    continue;
                add = 0;
            }
            int slope = ct;
            if (kk != 1 || add != 0) {
                int64_t ne = nn_shape_numel(&c->shape);
                float *v = malloc((size_t)ne * 4 + 4);
                if (!v) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
                for (int64_t e = 0; e < ne; e++) v[e] = add + kk * ((const float *)c->data)[e];
                nn_shape cs = c->shape;
                slope = new_const(g, c->name, "slope", FFU_DTYPE_F32, &cs, v);
                free(v);
                if (slope < 0) return slope;
            }
            kill_neg_part(s, u);
            s->dead[pm] = 1;
            if (px >= 0) s->dead[px] = 1;
            int in[2] = {x, slope};
            ffu_status st = set_inputs(g, i, in, 2);
            if (st < 0) return st;
            g->nodes[i].op = NN_OP_PRELU;
            g->nodes[i].nattrs = 0;
            s->touched[i] = 1;
            return 1;
        }
    }
    return 0;
}

/* The one axis a reduction with keepdims reduces over (axes as input or attribute; as
 * given, so possibly negative): 1, or 0 when it is not such a reduction. */
static int reduce_axis(const nn_graph *g, const nn_node *n, int64_t *axis)
{
    int64_t v[2];
    int cnt = 0;
    if (nn_attr_int(n, "keepdims", 1) == 0 || n->noutputs != 1 || n->act.kind != NN_ACT_NONE)
        return 0;
    if (n->ninputs == 2 && n->inputs[1] >= 0) {
        if (const_ints(g, n->inputs[1], v, 2) != 1) return 0;
    } else {
        const int64_t *a = nn_attr_ints(n, "axes", &cnt);
        if (n->ninputs != 1 || !a || cnt != 1) return 0;
        v[0] = a[0];
    }
    *axis = v[0];
    return 1;
}

/* Div(e, ReduceSum(e)) with e = Exp(Sub(x, ReduceMax(x))), all over one axis and kept
 * (the softmax the TF port of MTCNN writes out) -> Softmax(x, axis). */
static int rw_softmax(pat *s, int i)
{
    nn_graph *g = s->g;
    const nn_node *n = &g->nodes[i];
    if (n->op != NN_OP_DIV || n->ninputs != 2 || n->act.kind != NN_ACT_NONE || n->inputs[0] < 0 ||
        n->inputs[1] < 0)
        return 0;
    int e = n->inputs[0], sum = n->inputs[1];
    int pe = producer(g, e), ps = producer(g, sum);
    if (pe < 0 || ps < 0 || !private_value(s, sum) || s->uses[e] != 2 || s->dead[pe] ||
        s->touched[pe] || g->nodes[pe].op != NN_OP_EXP || g->nodes[pe].ninputs != 1 ||
        g->nodes[pe].act.kind != NN_ACT_NONE || g->nodes[ps].op != NN_OP_REDUCE_SUM ||
        g->nodes[ps].inputs[0] != e)
        return 0;
    int d = g->nodes[pe].inputs[0], pd = producer(g, d);
    if (!private_value(s, d) || g->nodes[pd].op != NN_OP_SUB || g->nodes[pd].ninputs != 2)
        return 0;
    int x = g->nodes[pd].inputs[0], mx = g->nodes[pd].inputs[1], pm = producer(g, mx);
    if (x < 0 || !private_value(s, mx) || g->nodes[pm].op != NN_OP_REDUCE_MAX ||
        g->nodes[pm].inputs[0] != x)
        return 0;
    int64_t axis, axis2;
    if (!reduce_axis(g, &g->nodes[pm], &axis) || !reduce_axis(g, &g->nodes[ps], &axis2) ||
        axis != axis2)
        return 0;
    s->dead[pe] = s->dead[ps] = s->dead[pd] = s->dead[pm] = 1;
    ffu_status st = set_inputs(g, i, &x, 1);
    if (st < 0) return st;
    g->nodes[i].op = NN_OP_SOFTMAX;
    g->nodes[i].nattrs = 0;
    if ((st = nn_node_set_int(g, i, "axis", axis)) < 0) return st;
    s->touched[i] = 1;
    return 1;
}

/* PRelu / LeakyRelu of a value that is never negative (Relu, Clip with lo >= 0) does
 * nothing: its readers read that value instead. */
static int rw_redundant_slope(pat *s, int i)
{
    nn_graph *g = s->g;
    const nn_node *n = &g->nodes[i];
    if ((n->op != NN_OP_PRELU && n->op != NN_OP_LEAKY_RELU) || n->act.kind != NN_ACT_NONE ||
        n->ninputs < 1 || n->noutputs != 1)
        return 0;
    int y = n->inputs[0], p = producer(g, y), x, out = n->outputs[0];
    float lo, hi;
    if (p < 0 || s->dead[p] || !as_clamp(g, p, &x, &lo, &hi) || !(lo >= 0)) return 0;
    if (g->tensors[out].flags & NN_T_OUTPUT) return 0;
    /* the slope must not broadcast the value to a larger shape */
    if (n->op == NN_OP_PRELU) {
        const nn_tensor *c = n->ninputs > 1 && n->inputs[1] >= 0 ? &g->tensors[n->inputs[1]] : NULL;
        if (!c || c->shape.rank < 0 || !fits_into(g, c, y)) return 0;
    }
    s->rep[out] = y;
    s->dead[i] = 1;
    return 1;
}

/* Conv -> MaxPool -> Relu (or Clip, or LeakyRelu with a slope >= 0) becomes Conv ->
 * Relu -> MaxPool, so that the activation fuses into the Conv (nn_fuse) instead of
 * taking a pass of its own: a non-decreasing function commutes with a maximum, value for
 * value, so the outputs do not change (Keras models that pool before their Activation
 * layer: the antispoof net). */
static int rw_act_before_pool(pat *s, int i)
{
    nn_graph *g = s->g;
    nn_node *a = &g->nodes[i];
    int monotone = a->op == NN_OP_RELU || a->op == NN_OP_CLIP ||
                   (a->op == NN_OP_LEAKY_RELU && nn_attr_float(a, "alpha", 0.01f) >= 0);
    if (!monotone || a->act.kind != NN_ACT_NONE || a->ninputs < 1 || a->noutputs != 1) return 0;
    int t = a->inputs[0], p = producer(g, t);
    if (p < 0 || !private_value(s, t) || g->nodes[p].op != NN_OP_MAX_POOL ||
        g->nodes[p].ninputs != 1 || g->nodes[p].noutputs != 1)
        return 0;
    int x = g->nodes[p].inputs[0], c = producer(g, x);
    if (c < 0 || !private_value(s, x) || g->nodes[c].op != NN_OP_CONV) return 0;
    int mid = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    if (mid < 0) return mid;
    int y = a->outputs[0];
    a->inputs[0] = x, a->outputs[0] = mid;
    g->nodes[p].inputs[0] = mid, g->nodes[p].outputs[0] = y;
    g->tensors[mid].producer = i;
    g->tensors[y].producer = p;
    g->tensors[t].producer = -1;
    s->touched[i] = s->touched[p] = 1;
    return 1;
}

/* Pad(x, spatial zeros) -> Conv: the padding moves into the Conv's pads. */
static int rw_fold_pad(pat *s, int i)
{
    nn_graph *g = s->g;
    const nn_node *cv = &g->nodes[i];
    if (cv->op != NN_OP_CONV || cv->ninputs < 2) return 0;
    int xp = cv->inputs[0], p = producer(g, xp), tr = -1;
    lay P = {0};
    /* also through a Transpose: Conv(Transpose(Pad(x))) -> Conv(Transpose(x)) */
    if (p >= 0 && g->nodes[p].op == NN_OP_TRANSPOSE && private_value(s, xp) &&
        g->nodes[p].ninputs == 1 && read_perm(&g->nodes[p], -1, &P)) {
        tr = p;
        xp = g->nodes[p].inputs[0];
        p = producer(g, xp);
    }
    if (p < 0 || g->nodes[p].op != NN_OP_PAD || !private_value(s, xp)) return 0;
    const nn_node *pd = &g->nodes[p];
    const nn_tensor *w = nn_in(g, cv, 1);
    if (!w || w->shape.rank < 3 || pd->ninputs < 2 || pd->inputs[0] < 0) return 0;
    if (strcmp(nn_attr_string(pd, "mode", "constant"), "constant") != 0) return 0;
    if (pd->ninputs > 3 && pd->inputs[3] >= 0) return 0; /* axes */
    float v = 0;
    if (pd->ninputs > 2 && pd->inputs[2] >= 0 && (!scalar_f32(g, pd->inputs[2], &v) || v != 0))
        return 0;
    const char *ap = nn_attr_string(cv, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0) return 0;
    int R = w->shape.rank, nsp = R - 2, cnt;
    int64_t q[2 * FFU_NN_MAX_RANK], pads[2 * FFU_NN_MAX_RANK] = {0};
    if (const_ints(g, pd->inputs[1], q, 2 * FFU_NN_MAX_RANK) != 2 * R) return 0;
    if (tr >= 0) { /* pads of the Conv input's axis i are the Pad's of axis P[i] */
        int64_t u[2 * FFU_NN_MAX_RANK];
        if (P.rank != R) return 0;
        for (int a = 0; a < R; a++) u[a] = q[P.p[a]], u[R + a] = q[R + P.p[a]];
        memcpy(q, u, sizeof(int64_t) * 2 * (size_t)R);
    }
    if (q[0] || q[1] || q[R] || q[R + 1]) return 0; /* batch and channels untouched */
    const int64_t *cp = nn_attr_ints(cv, "pads", &cnt);
    if (cp && cnt != 2 * nsp) return 0;
    for (int k = 0; k < nsp; k++) {
        int64_t b = q[2 + k], e = q[R + 2 + k];
        if (b < 0 || e < 0) return 0;
        pads[k] = b + (cp ? cp[k] : 0);
        pads[nsp + k] = e + (cp ? cp[nsp + k] : 0);
    }
    ffu_status st = nn_node_set_ints(g, i, "pads", pads, 2 * nsp);
    if (st >= 0 && strcmp(ap, "VALID") == 0) st = nn_node_set_string(g, i, "auto_pad", "NOTSET");
    if (st < 0) return st;
    if (tr >= 0) {
        g->nodes[tr].inputs[0] = g->nodes[p].inputs[0];
        s->touched[tr] = 1;
    } else {
        g->nodes[i].inputs[0] = g->nodes[p].inputs[0];
    }
    s->dead[p] = 1;
    s->touched[i] = 1;
    return 1;
}

/* A per-channel constant for a rank-R tensor whose C channels lie on axis `caxis`
 * (1: NCHW): the values (numel 1 or C) or NULL. */
static const float *axis_const(const nn_graph *g, int t, int R, int caxis, int64_t C, int64_t *n)
{
    const nn_tensor *c = const_f32(g, t);
    if (!c || c->shape.rank > R) return NULL;
    for (int i = 0; i < c->shape.rank; i++) {
        int axis = R - c->shape.rank + i;
        if (c->shape.d[i] != 1 && !(axis == caxis && c->shape.d[i] == C)) return NULL;
    }
    *n = nn_shape_numel(&c->shape);
    return c->data;
}

/* Per-output-channel constant for a Conv output of rank R and C channels. */
static const float *channel_const(const nn_graph *g, int t, int R, int64_t C, int64_t *n)
{
    return axis_const(g, t, R, 1, C, n);
}

/* Conv -> (Mul|Add|Sub|Div by a per-channel constant | constant BatchNormalization). */
static int rw_fold_affine(pat *s, int i)
{
    nn_graph *g = s->g;
    const nn_node *m = &g->nodes[i];
    if (m->act.kind != NN_ACT_NONE || m->noutputs != 1 || m->ninputs < 2) return 0;
    int yk = -1;
    if (m->op == NN_OP_BATCH_NORM) {
        if (m->ninputs != 5 || nn_attr_int(m, "training_mode", 0)) return 0;
        yk = 0;
    } else if (m->op == NN_OP_MUL || m->op == NN_OP_ADD) {
        if (m->ninputs != 2) return 0;
        for (int k = 0; k < 2 && yk < 0; k++)
            if (producer(g, m->inputs[k]) >= 0 && g->nodes[producer(g, m->inputs[k])].op == NN_OP_CONV)
                yk = k;
    } else if (m->op == NN_OP_SUB || m->op == NN_OP_DIV) {
        if (m->ninputs != 2) return 0;
        yk = 0;
    } else {
        return 0;
    }
    if (yk < 0) return 0;
    int y = m->inputs[yk], cp = producer(g, y);
    if (cp < 0 || g->nodes[cp].op != NN_OP_CONV || !private_value(s, y)) return 0;
    const nn_node *cv = &g->nodes[cp];
    if (cv->ninputs < 2) return 0;
    const nn_tensor *w = const_f32(g, cv->inputs[1]);
    const nn_tensor *b = cv->ninputs > 2 && cv->inputs[2] >= 0 ? const_f32(g, cv->inputs[2]) : NULL;
    if (!w || w->shape.rank < 3 || (cv->ninputs > 2 && cv->inputs[2] >= 0 && !b)) return 0;
    int R = w->shape.rank;
    int64_t C = w->shape.d[0], per = C ? nn_shape_numel(&w->shape) / C : 0;
    if (C < 1 || (b && nn_shape_numel(&b->shape) != C)) return 0;
    /* per-channel scale a and shift d: y' = y*a + d */
    float *a = malloc((size_t)C * 4), *d = malloc((size_t)C * 4);
    int ok = a && d;
    for (int64_t o = 0; ok && o < C; o++) a[o] = 1, d[o] = 0;
    if (ok && m->op == NN_OP_BATCH_NORM) {
        int64_t n[4];
        const float *v[4];
        for (int k = 0; k < 4 && ok; k++) {
            const nn_tensor *t = const_f32(g, m->inputs[1 + k]);
            v[k] = t ? t->data : NULL;
            n[k] = t ? nn_shape_numel(&t->shape) : 0;
            ok = t && t->shape.rank == 1 && n[k] == C;
        }
        float eps = nn_attr_float(m, "epsilon", 1e-5f);
        for (int64_t o = 0; ok && o < C; o++) {
            a[o] = v[0][o] / sqrtf(v[3][o] + eps);
            d[o] = v[1][o] - v[2][o] * a[o];
        }
    } else if (ok) {
        int64_t n;
        const float *v = channel_const(g, m->inputs[1 - yk], R, C, &n);
        ok = v != NULL;
        for (int64_t o = 0; ok && o < C; o++) {
            float cvv = v[n == 1 ? 0 : o];
            if (m->op == NN_OP_MUL) a[o] = cvv;
            else if (m->op == NN_OP_ADD) d[o] = cvv;
            else if (m->op == NN_OP_SUB) d[o] = -cvv;
            else if (cvv != 0) a[o] = 1 / cvv;
            else ok = 0;
        }
    }
    int st = 0;
    if (ok) {
        /* The weights change only under a scale (an Add or Sub moves the bias alone),
         * and are scaled where they lie when this graph's arena holds them, this Conv is
         * their one reader and no other graph borrows them (g->exclusive): copying them
         * at every fold took 44.6 MB and a fifth of dlib-resnet's load (two folds on
         * each of 29 convolutions). Otherwise, a copy. */
        const int wt = cv->inputs[1];
        int scale = 0;
        for (int64_t o = 0; o < C; o++)
            scale |= a[o] != 1;
        const int in_place =
            !scale || (s->uses[wt] == 1 && !(w->flags & NN_T_OUTPUT) && g->exclusive &&
                       ffu_arena_owns(g->arena, w->data, w->nbytes));
        float *nw = in_place ? NULL : malloc((size_t)(C * per) * 4 + 4);
        float *nb = malloc((size_t)C * 4);
        if ((!in_place && !nw) || !nb) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        } else {
            const float *wv = w->data, *bv = b ? b->data : NULL;
            float *ow = in_place ? (float *)w->data : nw;
            for (int64_t o = 0; o < C; o++) {
                if (scale)
                    for (int64_t k = 0; k < per; k++)
                        ow[o * per + k] = wv[o * per + k] * a[o];
                nb[o] = (bv ? bv[o] : 0) * a[o] + d[o];
            }
            nn_shape bs = {.rank = 1, .d = {C}};
            int tw = wt;
            if (!in_place) { /* w's fields first: adding a tensor may move the table */
                nn_shape ws = w->shape;
                const char *wname = w->name;
                /* 8-bit codes stay codes under a per-output-channel scale (ir.h, NN_T_Q8) */
                const int q8 = w->flags & NN_T_Q8;
                const float q8s = w->q8_scale, q8m = w->q8_min;
                tw = new_const(g, wname, "fold", FFU_DTYPE_F32, &ws, nw);
                if (tw >= 0 && q8) {
                    g->tensors[tw].flags |= NN_T_Q8;
                    g->tensors[tw].q8_scale = q8s, g->tensors[tw].q8_min = q8m;
                }
            }
            int tb = tw >= 0 ? new_const(g, g->tensors[tw].name, "bias", FFU_DTYPE_F32, &bs, nb)
                             : tw;
            if (tb < 0) {
                st = tb;
            } else {
                int in[3] = {g->nodes[cp].inputs[0], tw, tb}, out = g->nodes[i].outputs[0];
                st = set_inputs(g, cp, in, 3);
                if (st >= 0) {
                    g->nodes[cp].outputs[0] = out;
                    g->tensors[out].producer = cp;
                    g->tensors[y].producer = -1;
                    s->dead[i] = 1;
                    s->touched[cp] = 1;
                    st = 1;
                }
            }
        }
        free(nw), free(nb);
    }
    free(a), free(d);
    return st;
}

/* Per-channel Mul / Add / Sub constants, optionally a Transpose, optionally a MaxPool,
 * then a Conv without padding:
 * x -> a*x + d -> [Transpose] -> [MaxPool] -> Conv  becomes
 * x -> [Transpose] -> [MaxPool] -> Conv' with W'[o,c,k] = W[o,c,k] * a[c] and
 * b'[o] = b[o] + sum_c d[c] * sum_k W[o,c,k]. Exact only without padding (a padded Conv
 * sees zeros where the original saw a*0 + d), and through a max pool only where every
 * a >= 0 (then max(a*x + d) = a*max(x) + d). Before a Transpose the constants run
 * along the axis that becomes the channels. Keras models that put BatchNormalization
 * after the activation (GEAR, the liveness net) have this shape, and so does an NHWC
 * input normalised per channel before an unpadded first Conv (dlib-resnet: (x - mean)
 * * scale): it saves two passes over each such activation. */
static int rw_fold_input_affine(pat *s, int i)
{
    nn_graph *g = s->g;
    const nn_node *cv = &g->nodes[i];
    if (cv->op != NN_OP_CONV || cv->ninputs < 2 || nn_attr_int(cv, "group", 1) != 1) return 0;
    const nn_tensor *w = const_f32(g, cv->inputs[1]);
    const nn_tensor *b = cv->ninputs > 2 && cv->inputs[2] >= 0 ? const_f32(g, cv->inputs[2]) : NULL;
    if (!w || w->shape.rank < 3 || (cv->ninputs > 2 && cv->inputs[2] >= 0 && !b)) return 0;
    const char *ap = nn_attr_string(cv, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0) return 0;
    int cnt = 0;
    const int64_t *pads = nn_attr_ints(cv, "pads", &cnt);
    for (int k = 0; pads && k < cnt; k++)
        if (pads[k]) return 0;
    int R = w->shape.rank;
    int64_t M = w->shape.d[0], C = w->shape.d[1];
    if (M < 1 || C < 1 || (b && nn_shape_numel(&b->shape) != M)) return 0;
    int64_t per = nn_shape_numel(&w->shape) / (M * C);
    /* top: the node that reads the chain's result (its input 0) */
    int u = cv->inputs[0], pool = -1, top = i, caxis = 1, p = producer(g, u);
    if (p >= 0 && g->nodes[p].op == NN_OP_MAX_POOL && g->nodes[p].ninputs == 1 &&
        private_value(s, u)) {
        pool = top = p;
        u = g->nodes[p].inputs[0];
    }
    p = producer(g, u);
    if (p >= 0 && g->nodes[p].op == NN_OP_TRANSPOSE && private_value(s, u)) {
        int np = 0;
        const int64_t *perm = nn_attr_ints(&g->nodes[p], "perm", &np);
        if (!perm || np != R || perm[1] < 0 || perm[1] >= R) return 0;
        caxis = (int)perm[1];
        top = p;
        u = g->nodes[p].inputs[0];
    }
    /* the affine chain above, nearest first */
    int chain[8], kc[8], nc = 0;
    while (nc < 8 && (p = producer(g, u)) >= 0 && private_value(s, u)) {
        const nn_node *m = &g->nodes[p];
        if ((m->op != NN_OP_MUL && m->op != NN_OP_ADD && m->op != NN_OP_SUB) || m->ninputs != 2)
            break;
        int k = const_f32(g, m->inputs[1]) ? 1 : const_f32(g, m->inputs[0]) ? 0 : -1;
        int64_t n;
        if (k < 0 || (m->op == NN_OP_SUB && k != 1) || const_f32(g, m->inputs[1 - k]))
            break;
        int xr = g->tensors[m->inputs[1 - k]].shape.rank; /* < 0: not known yet */
        if ((xr >= 0 && xr != R) || !axis_const(g, m->inputs[k], R, caxis, C, &n)) break;
        chain[nc] = p, kc[nc++] = k;
        u = m->inputs[1 - k];
    }
    if (!nc) return 0;
    float *a = malloc((size_t)C * 4), *d = malloc((size_t)C * 4);
    float *nw = malloc((size_t)(M * C * per) * 4), *nb = malloc((size_t)M * 4);
    int ok = a && d && nw && nb, st = 0;
    for (int64_t c = 0; ok && c < C; c++) a[c] = 1, d[c] = 0;
    for (int j = nc - 1; ok && j >= 0; j--) { /* applied top down */
        const nn_node *m = &g->nodes[chain[j]];
        int64_t n = 0;
        const float *v = axis_const(g, m->inputs[kc[j]], R, caxis, C, &n);
        for (int64_t c = 0; c < C; c++) {
            float k = v[n == 1 ? 0 : c];
            if (m->op == NN_OP_MUL) a[c] *= k, d[c] *= k;
            else if (m->op == NN_OP_SUB) d[c] -= k;
            else d[c] += k;
        }
    }
    for (int64_t c = 0; ok && c < C; c++)
        ok = isfinite(a[c]) && isfinite(d[c]) && (pool < 0 || a[c] >= 0);
    if (ok) {
        const float *wv = w->data, *bv = b ? b->data : NULL;
        for (int64_t o = 0; o < M; o++) {
            double acc = bv ? bv[o] : 0;
            for (int64_t c = 0; c < C; c++) {
                const float *src = wv + (o * C + c) * per;
                float *dst = nw + (o * C + c) * per;
                double sum = 0;
                for (int64_t k = 0; k < per; k++) sum += src[k], dst[k] = src[k] * a[c];
                acc += sum * d[c];
            }
            nb[o] = (float)acc;
        }
        nn_shape ws = w->shape, bs = {.rank = 1, .d = {M}};
        int tw = new_const(g, w->name, "infold", FFU_DTYPE_F32, &ws, nw);
        int tb = tw >= 0 ? new_const(g, g->tensors[tw].name, "bias", FFU_DTYPE_F32, &bs, nb) : tw;
        if (tb < 0) {
            st = tb;
        } else {
            int in[3] = {top != i ? g->nodes[i].inputs[0] : u, tw, tb};
            st = set_inputs(g, i, in, 3);
            if (st >= 0) {
                if (top != i) g->nodes[top].inputs[0] = u, s->touched[top] = 1;
                for (int j = 0; j < nc; j++) s->dead[chain[j]] = 1;
                s->touched[i] = 1;
                st = 1;
            }
        }
    }
    free(a), free(d), free(nw), free(nb);
    return st;
}

/* A Conv that is a plain 1x1 matrix product: one group, stride 1, no pads, no fused
 * activation or residual; its weight is an f32 constant [O, C, 1, 1] (not 8-bit codes,
 * which a kernel rebuilds bit for bit) and its bias, if any, an f32 constant [O]. */
static const nn_tensor *plain_1x1(const nn_graph *g, const nn_node *n, const nn_tensor **b)
{
    if (n->op != NN_OP_CONV || n->act.kind != NN_ACT_NONE || n->ninputs < 2 || n->ninputs > 3 ||
        nn_attr_int(n, "group", 1) != 1 || nn_attr_int(n, "_pool", 0) > 1)
        return NULL;
    const nn_tensor *w = const_f32(g, n->inputs[1]);
    *b = n->ninputs > 2 && n->inputs[2] >= 0 ? const_f32(g, n->inputs[2]) : NULL;
    if (!w || (w->flags & NN_T_Q8) || w->shape.rank != 4 || w->shape.d[2] != 1 ||
        w->shape.d[3] != 1 || (n->ninputs > 2 && n->inputs[2] >= 0 && !*b) ||
        (*b && nn_shape_numel(&(*b)->shape) != w->shape.d[0]))
        return NULL;
    /* any auto_pad: SAME pads a 1x1 kernel at stride 1 by nothing */
    int cnt;
    const int64_t *v = nn_attr_ints(n, "strides", &cnt);
    for (int k = 0; k < cnt; k++)
        if (v[k] != 1) return NULL;
    v = nn_attr_ints(n, "pads", &cnt);
    for (int k = 0; k < cnt; k++)
        if (v[k] != 0) return NULL;
    return w;
}

/* row[c] += a * w[c] in double (each product exact, one rounding per sum), in the
 * widest vectors the CPU has (GCC's target_clones, picked at load time): the
 * baseline's two doubles per instruction were 2-4% of a `facefuse compare`. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
add_scaled_row(double *row, double a, const float *w, int64_t n)
{
    for (int64_t c = 0; c < n; c++)
        row[c] += a * w[c];
}

/* Two 1x1 convolutions in a row, the first read only by the second and with nothing
 * between them: W2 (W1 x + b1) + b2 = (W2 W1) x + (W2 b1 + b2), one convolution, done
 * where it has fewer multiply-adds per pixel (O2 C1 < C2 C1 + O2 C2). MobileFaceNet_TF
 * ends each separable block in a linear 64 -> 64 1x1 that feeds the next 64 -> 128
 * expansion. The sums are reassociated (the product in double, rounded once), so
 * results move by rounding only. */
static int rw_merge_1x1(pat *s, int i)
{
    nn_graph *g = s->g;
    const nn_tensor *b1, *b2, *w2 = plain_1x1(g, &g->nodes[i], &b2);
    if (!w2) return 0;
    int y = g->nodes[i].inputs[0], cp = producer(g, y);
    if (cp < 0 || !private_value(s, y)) return 0;
    const nn_tensor *w1 = plain_1x1(g, &g->nodes[cp], &b1);
    if (!w1 || w2->shape.d[1] != w1->shape.d[0]) return 0;
    int64_t O = w2->shape.d[0], M = w2->shape.d[1], C = w1->shape.d[1];
    if (O * C >= M * C + O * M) return 0;
    float *nw = malloc((size_t)(O * C) * 4 + 4), *nb = malloc((size_t)O * 4 + 4);
    double *row = malloc((size_t)C * sizeof(double) + 8);
    int st = 0;
    if (!nw || !nb || !row) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    } else {
        const float *a = w2->data, *w = w1->data;
        for (int64_t o = 0; o < O; o++) {
            double bias = b2 ? ((const float *)b2->data)[o] : 0;
            for (int64_t m = 0; m < M; m++)
                bias += (double)a[o * M + m] * (b1 ? ((const float *)b1->data)[m] : 0);
            nb[o] = (float)bias;
            /* row o of W2 W1, the sums over m in order (W1's rows read contiguously:
             * a column at a time took 50 ms of MobileFaceNet_TF's load) */
            for (int64_t c = 0; c < C; c++)
                row[c] = 0;
            for (int64_t m = 0; m < M; m++)
                add_scaled_row(row, a[o * M + m], w + m * C, C);
            for (int64_t c = 0; c < C; c++)
                nw[o * C + c] = (float)row[c];
        }
        nn_shape ws = {.rank = 4, .d = {O, C, 1, 1}}, bs = {.rank = 1, .d = {O}};
        const char *base = g->tensors[g->nodes[i].outputs[0]].name;
        int tw = new_const(g, base, "merged_w", FFU_DTYPE_F32, &ws, nw);
        int tb = tw >= 0 ? new_const(g, base, "merged_b", FFU_DTYPE_F32, &bs, nb) : tw;
        if (tb < 0) {
            st = tb;
        } else {
            int in[3] = {g->nodes[cp].inputs[0], tw, tb};
            st = set_inputs(g, i, in, 3);
            if (st >= 0) {
                g->tensors[y].producer = -1;
                s->dead[cp] = 1;
                s->touched[i] = 1;
                st = 1;
            }
        }
    }
    free(nw), free(nb), free(row);
    return st;
}

ffu_status nn_rewrite_patterns(nn_graph *g)
{
    /* the patterns are matched next to the Conv they follow, i.e. after the layout
     * clean-up; running it here makes the order of the two passes irrelevant */
    ffu_status st = nn_rewrite_transposes(g);
    if (st < 0) return st;
    for (int round = 0; round < 32; round++) {
        pat s = {.g = g, .uses = use_counts(g), .nt = g->ntensors};
        s.dead = calloc((size_t)g->nnodes + 1, 1);
        s.touched = calloc((size_t)g->nnodes + 1, 1);
        s.rep = malloc(((size_t)g->ntensors + 1) * sizeof(int));
        int changed = 0, nt0 = g->ntensors;
        if (!s.uses || !s.dead || !s.touched || !s.rep)
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        else
            for (int t = 0; t < nt0; t++) s.rep[t] = -1;
        /* last node first: a clamp chain is merged from its top in one go */
        for (int i = g->nnodes - 1; i >= 0 && st >= 0; i--) {
            if (s.dead[i] || s.touched[i]) continue;
            int r = rw_clamp_chain(&s, i);
            if (r == 0) r = rw_prelu(&s, i);
            if (r == 0) r = rw_fold_affine(&s, i);
            if (r == 0) r = rw_fold_pad(&s, i);
            if (r == 0) r = rw_fold_input_affine(&s, i);
            if (r == 0) r = rw_redundant_slope(&s, i);
            if (r == 0) r = rw_act_before_pool(&s, i);
            if (r == 0) r = rw_merge_1x1(&s, i);
            if (r == 0) r = rw_softmax(&s, i);
            if (r < 0) st = r;
            changed |= r > 0;
        }
        if (st >= 0 && changed) {
            /* readers of replaced tensors read the replacement (chains resolved) */
            for (int i = 0; i < g->nnodes; i++)
                for (int j = 0; j < g->nodes[i].ninputs; j++) {
                    int t = g->nodes[i].inputs[j];
                    for (int hops = 0; t >= 0 && t < nt0 && s.rep[t] >= 0 && hops < nt0; hops++)
                        t = s.rep[t];
                    g->nodes[i].inputs[j] = t;
                }
            for (int i = 0; i < g->nnodes; i++) s.dead[i] = !s.dead[i]; /* keep flags */
            compact(g, s.dead);
        }
        free(s.uses), free(s.dead), free(s.touched), free(s.rep);
        if (st < 0 || !changed) break;
        if ((st = nn_graph_toposort(g)) < 0) break;
    }
    if (st >= 0) st = sweep_dead(g);
    if (st >= 0) st = nn_graph_toposort(g);
    return st;
}
