/* The batch dimension. Most face models declare a fixed batch of 1 and bake that 1
 * into constants (Reshape to [1,-1], Resize sizes [1,C,H,W], a zero block concatenated
 * as padding). A session asked for N items plans the graph for N anyway:
 *
 *  - "batched": the graph is specialised with dim 0 = N after rewriting the constants
 *    that encode the old batch, and every step is checked against the batch-1
 *    specialisation (same tensor indices): each tensor is either item-shaped (dim 0 is
 *    N where it was 1, other dims equal) or batch-invariant (same shape, computed from
 *    no item data). Anything else -- a Reshape that flattens the batch, a reduction or
 *    softmax across it, a Transpose that moves it -- makes the proof fail;
 *  - "looped": then the session runs the batch-1 plan N times over slices of the
 *    inputs and stacks the outputs (session.c).
 *
 * Which inputs carry the batch: those whose declared dim 0 is 1 or dynamic. An input
 * left at dim 0 = 1 while others have N is shared by every item. A model whose batch
 * inputs are all dynamic is first planned as it is (its own semantics); the re-batching
 * proof runs only when that fails. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "ops/ops_internal.h"

/* per-tensor facts of the batch-N walk */
enum {
    T_ITEM = 1, /* dim 0 carries the batch: slice b belongs to item b */
    T_NVAL = 2, /* the value depends on N (a Shape of an item tensor and what follows) */
};

typedef struct walk {
    nn_graph *g;         /* the clone being specialised at batch n */
    const nn_graph *ref; /* the batch-1 specialisation: reference shapes */
    int n;
    int as_declared; /* check the graph as it is: no constants rewritten */
    unsigned char *f; /* T_* per tensor of g (grows with g) */
    int cap;
    nn_batch_result *res;
} walk;

/* Returned by the walk when the graph cannot be re-batched: not an error for the
 * caller (the session loops instead), so it is positive, unlike an ffu_status. */
#define REFUSED 1

/* Records why the graph cannot be re-batched and returns REFUSED. */
static int refuse(walk *w, const nn_node *n, const char *fmt, ...) FFU_PRINTF(3, 4);
static int refuse(walk *w, const nn_node *n, const char *fmt, ...)
{
    int k = snprintf(w->res->why, sizeof w->res->why, "%s '%.60s': ", nn_op_name(n->op), n->name);
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < sizeof w->res->why)
        vsnprintf(w->res->why + k, sizeof w->res->why - (size_t)k, fmt, ap);
    va_end(ap);
    return REFUSED;
}

/* Inputs read for their value as shape data (at inference time), not as tensors. */
static int is_shape_input(nn_op op, int j)
{
    switch (op) {
    case NN_OP_RESHAPE:
    case NN_OP_EXPAND:
    case NN_OP_TILE:
    case NN_OP_SQUEEZE:
    case NN_OP_UNSQUEEZE:
    case NN_OP_SPLIT:
    case NN_OP_UPSAMPLE:
    case NN_OP_REDUCE_MEAN:
    case NN_OP_REDUCE_SUM:
    case NN_OP_REDUCE_MAX:
    case NN_OP_REDUCE_MIN:
    case NN_OP_REDUCE_PROD:
    case NN_OP_REDUCE_L1:
    case NN_OP_REDUCE_L2:
    case NN_OP_REDUCE_SUM_SQUARE:
    case NN_OP_REDUCE_LOG_SUM:
    case NN_OP_REDUCE_LOG_SUM_EXP:
    case NN_OP_TOP_K:     /* K */
    case NN_OP_CUM_SUM:   /* axis */
    case NN_OP_ONE_HOT:   /* depth */
        return j == 1;
    case NN_OP_CONSTANT_OF_SHAPE:
        return j == 0;
    case NN_OP_SLICE:
    case NN_OP_RESIZE:
        return j >= 1;
    case NN_OP_PAD:
        return j == 1 || j == 3;
    case NN_OP_SHAPE:
    case NN_OP_SIZE:
        return j == 0; /* only the shape is read */
    default:
        return 0;
    }
}

static int64_t geti(const nn_tensor *t, int64_t k)
{
    return t->dtype == FFU_DTYPE_I32 ? ((const int32_t *)t->data)[k]
                                     : ((const int64_t *)t->data)[k];
}

static void seti(nn_tensor *t, int64_t k, int64_t v)
{
    if (t->dtype == FFU_DTYPE_I32)
        ((int32_t *)t->data)[k] = (int32_t)(v > INT32_MAX ? INT32_MAX : v);
    else
        ((int64_t *)t->data)[k] = v;
}

/* A constant 1-D i32/i64 input of n, or NULL. */
static nn_tensor *int_const(const nn_graph *g, const nn_node *n, int j)
{
    nn_tensor *t = nn_in(g, n, j);
    if (!t || !(t->flags & NN_T_CONST) || !t->data || t->shape.rank != 1 ||
        (t->dtype != FFU_DTYPE_I32 && t->dtype != FFU_DTYPE_I64))
        return NULL;
    return t;
}

/* Replaces input j of node ni by a private copy of its constant, repeated `times`
 * along dim 0 (which is 1), and returns the copy's index or an ffu_status. Other
 * readers keep the original. */
static int private_copy(walk *w, int ni, int j, int times)
{
    nn_graph *g = w->g;
    const nn_tensor *t = nn_in(g, &g->nodes[ni], j);
    nn_shape sh = t->shape;
    size_t nb = t->nbytes * (size_t)times;
    if (times > 1) sh.d[0] = times;
    void *buf = ffu_arena_alloc(g->arena, nb ? nb : 1);
    if (!buf) return ffu_error_set(FFU_ERR_NOMEM, "out of memory re-batching a constant");
    for (int k = 0; k < times; k++)
        memcpy((char *)buf + (size_t)k * t->nbytes, t->data, t->nbytes);
    int r = nn_graph_add_const(g, "", t->dtype, &sh, buf, nb, NN_BORROW); /* the arena is g's */
    if (r < 0) return r;
    g->nodes[ni].inputs[j] = r;
    if (g->ntensors > w->cap) {
        int cap = g->ntensors * 2;
        unsigned char *f = realloc(w->f, (size_t)cap);
        if (!f) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        memset(f + w->cap, 0, (size_t)(cap - w->cap));
        w->f = f, w->cap = cap;
    }
    w->f[r] = times > 1 ? T_ITEM : 0;
    return r;
}

/* Before node ni runs at batch N: rewrites constants that encode the old batch of 1
 * where the node reads item data. 0 or a negative ffu_status. */
static int rewrite_node(walk *w, int ni)
{
    nn_graph *g = w->g;
    nn_node *n = &g->nodes[ni];
    const nn_tensor *x = nn_in(g, n, 0);
    int xitem = n->ninputs > 0 && n->inputs[0] >= 0 && (w->f[n->inputs[0]] & T_ITEM);
    nn_tensor *c;
    int r;
    switch (n->op) {
    case NN_OP_RESHAPE: /* [1, ...] -> [N, ...]: row-major order keeps item b's block */
        if (xitem && (c = int_const(g, n, 1)) && c->shape.d[0] >= 1 && geti(c, 0) == 1) {
            if ((r = private_copy(w, ni, 1, 1)) < 0) return r;
            seti(&g->tensors[r], 0, w->n);
        }
        break;
    case NN_OP_RESIZE: /* sizes [1, C, H, W] -> [N, C, H, W] */
        if (xitem && (c = int_const(g, n, 3)) && c->shape.d[0] >= 1 && geti(c, 0) == 1) {
            if ((r = private_copy(w, ni, 3, 1)) < 0) return r;
            seti(&g->tensors[r], 0, w->n);
        }
        break;
    case NN_OP_SLICE: {
        /* a slice that kept the whole batch of 1 keeps the whole batch of N */
        nn_tensor *st = int_const(g, n, 1), *en = int_const(g, n, 2), *ax = NULL, *sp = NULL;
        int has_ax = n->ninputs > 3 && n->inputs[3] >= 0,
            has_sp = n->ninputs > 4 && n->inputs[4] >= 0;
        if (has_ax) ax = int_const(g, n, 3);
        if (has_sp) sp = int_const(g, n, 4);
        const nn_shape *o1 = &w->ref->tensors[n->outputs[0]].shape;
        if (!xitem || !st || !en || st->shape.d[0] != en->shape.d[0] || (has_ax && !ax) ||
            (has_sp && !sp) || o1->rank < 1 || o1->d[0] != 1)
            break;
        for (int64_t k = 0; k < st->shape.d[0]; k++) {
            int64_t a = ax && k < ax->shape.d[0] ? geti(ax, k) : k;
            if (a < 0) a += x->shape.rank;
            if (a != 0 || (sp && k < sp->shape.d[0] && geti(sp, k) != 1)) continue;
            int rs = private_copy(w, ni, 1, 1);
            if (rs < 0) return rs;
            int re = private_copy(w, ni, 2, 1);
            if (re < 0) return re;
            seti(&g->tensors[rs], k, 0);
            seti(&g->tensors[re], k, INT64_MAX);
            break;
        }
        break;
    }
    case NN_OP_CONCAT: {
        /* a constant block of batch 1 beside item data (BlazeFace's channel padding)
         * is repeated for every item */
        int anyitem = 0;
        for (int j = 0; j < n->ninputs; j++)
            anyitem |= n->inputs[j] >= 0 && (w->f[n->inputs[j]] & T_ITEM);
        int64_t axis = nn_attr_int(n, "axis", 0);
        if (!anyitem || !x || (axis < 0 ? axis + x->shape.rank : axis) == 0) break;
        for (int j = 0; j < n->ninputs; j++) {
            const nn_tensor *t = nn_in(g, n, j);
            if (!t || (w->f[n->inputs[j]] & T_ITEM) || !(t->flags & NN_T_CONST) ||
                t->shape.rank != x->shape.rank || t->shape.d[0] != 1)
                continue;
            if ((r = private_copy(w, ni, j, w->n)) < 0) return r;
        }
        break;
    }
    default:
        break;
    }
    return 0;
}

/* Ops that normalise along an axis without changing shapes: the shape check cannot
 * see that axis 0 would mix items. */
static int normalises_batch_axis(const nn_graph *g, const nn_node *n)
{
    int64_t axis;
    switch (n->op) {
    case NN_OP_SOFTMAX:
    case NN_OP_LOG_SOFTMAX:
        axis = nn_attr_int(n, "axis", nn_attr_int(n, "_coerce_2d", 0) ? 1 : -1);
        break;
    case NN_OP_LAYER_NORM:
        axis = nn_attr_int(n, "axis", -1);
        break;
    default:
        return 0;
    }
    const nn_tensor *x = nn_in(g, n, 0);
    if (x && axis < 0) axis += x->shape.rank;
    return axis == 0;
}

/* 1 unless each output j along dim 0 of a Resize or Upsample (at batch N) is input j
 * alone: a copy of it, or a weight of 1 on it. A scale of 1.0000073 on dim 0 keeps the
 * shape but puts 7e-6 of item 0 into item 1 (linear), or copies item 0 into item 1
 * (nearest, rounding down); a crop box on dim 0 fills items with the extrapolation
 * value. Cubic taps, or sizes that are not known: assume the worst. */
static int resize_mixes_items(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *y = nn_out(g, n, 0);
    if (!y || y->shape.rank < 1 || !nn_shape_known(&y->shape)) return 1;
    if (nn_shape_numel(&y->shape) == 0) return 0; /* nothing read; a dim may be 2^48 */
    size_t ntab = 0;
    for (int d = 0; d < y->shape.rank; d++)
        ntab += (size_t)y->shape.d[d];
    nn_resize_tap *tab = malloc(sizeof *tab * ntab);
    if (!tab) return 1;
    nn_resize_info info;
    int mixes = nn_resize_taps(g, n, &info, tab) < 0;
    ffu_error_clear();
    for (int64_t j = 0; !mixes && j < info.out[0]; j++) {
        if (!info.linear) mixes = tab[j].idx[0] != j;
        for (int k = 0; info.linear && k < info.ntap[0]; k++)
            mixes |= tab[j].w[k] != 0 && (tab[j].idx[k] != j || tab[j].w[k] != 1);
    }
    free(tab);
    return mixes;
}

/* Ops whose outputs keep dim 0's size but whose element b would read other items'
 * elements at batch N (the shape check cannot see it): a scan, sort or arg-max along
 * axis 0, a triangle whose rows are dim 0, a diagonal, scatters whose indices address
 * dim 0, a Resize that interpolates along dim 0, recurrences and sequence reversals
 * whose time axis is dim 0, a DFT along it, a quantisation range over the whole
 * tensor, and gathers along dim 0 of item data by indices computed from item data
 * (each item's indices are 0 there at batch 1, so at batch N every item would read
 * item 0). */
static int crosses_items(const walk *w, const nn_node *n)
{
    const nn_graph *g = w->g;
    const nn_tensor *x = nn_in(g, n, 0);
    int rank = x ? x->shape.rank : -1;
    int item[3] = {0, 0, 0};
    for (int j = 0; j < 3 && j < n->ninputs; j++)
        item[j] = n->inputs[j] >= 0 && (w->f[n->inputs[j]] & T_ITEM);
    int64_t axis = 0;
    switch (n->op) {
    case NN_OP_CUM_SUM: {
        const nn_tensor *a = nn_in(g, n, 1);
        if (!item[0]) return 0;
        if (!a || !(a->flags & NN_T_CONST) || !a->data || nn_shape_numel(&a->shape) != 1)
            return 1; /* the axis is not known: assume the worst */
        axis = a->dtype == FFU_DTYPE_I32 ? *(const int32_t *)a->data : *(const int64_t *)a->data;
        break;
    }
    case NN_OP_TOP_K:
        if (!item[0]) return 0;
        axis = nn_attr_int(n, "axis", -1);
        break;
    case NN_OP_HARDMAX:
        if (!item[0]) return 0;
        axis = nn_attr_int(n, "axis", nn_attr_int(n, "_coerce_2d", 0) ? 1 : -1);
        break;
    case NN_OP_MVN: {
        int cnt;
        const int64_t *ax = nn_attr_ints(n, "axes", &cnt);
        if (!item[0]) return 0;
        if (!ax) return 1; /* the default [0, 2, 3] */
        for (int i = 0; i < cnt; i++)
            if (ax[i] == 0 || (rank > 0 && ax[i] == -rank)) return 1;
        return 0;
    }
    case NN_OP_TRILU:
        return item[0] && rank <= 2;
    case NN_OP_EYE_LIKE:
        return item[0];
    case NN_OP_SCATTER_ND:
        return item[0] || item[1] || item[2];
    case NN_OP_SCATTER_ELEMENTS:
        if (!(item[0] || item[1] || item[2])) return 0;
        if (!(item[0] && item[1] && item[2])) return 1;
        axis = nn_attr_int(n, "axis", 0);
        break;
    case NN_OP_GATHER_ND:
        return item[0] && nn_attr_int(n, "batch_dims", 0) == 0;
    case NN_OP_RESIZE:
    case NN_OP_UPSAMPLE:
        return item[0] && resize_mixes_items(g, n);
    case NN_OP_RNN:
    case NN_OP_GRU:
    case NN_OP_LSTM: /* layout 0: X is [seq, batch, input] */
        return item[0] && nn_attr_int(n, "layout", 0) == 0;
    case NN_OP_REVERSE_SEQUENCE:
        return item[0] && nn_attr_int(n, "time_axis", 0) == 0;
    case NN_OP_DFT:
        if (!item[0]) return 0;
        axis = nn_attr_int(n, "axis", 1);
        break;
    case NN_OP_DYNAMIC_QUANTIZE_LINEAR:
    case NN_OP_DYNAMIC_QUANTIZE_STEPS:
        return item[0];
    case NN_OP_GATHER:
    case NN_OP_GATHER_ELEMENTS:
        if (!(item[0] && item[1])) return 0;
        axis = nn_attr_int(n, "axis", 0);
        break;
    default:
        return 0;
    }
    if (rank > 0 && axis < 0) axis += rank;
    return axis == 0;
}

static int item_shaped(const nn_shape *a, const nn_shape *r, int n)
{
    if (a->rank != r->rank || a->rank < 1 || a->d[0] != n || r->d[0] != 1) return 0;
    for (int k = 1; k < a->rank; k++)
        if (a->d[k] != r->d[k]) return 0;
    return 1;
}

/* Node ni at batch N after the rewrites: fold or infer, then classify its outputs
 * against the batch-1 reference. */
static int walk_node(walk *w, int ni, ffu_arena *fold, int *nfolded)
{
    nn_graph *g = w->g;
    int r = w->as_declared ? 0 : rewrite_node(w, ni);
    if (r != 0) return r;
    nn_node *n = &g->nodes[ni];
    const nn_op_def *d = nn_op_get(n->op);
    int folded = 0;
    ffu_status st = nn_fold_node(g, ni, fold, &folded);
    if (st == FFU_ERR_NOMEM) return st;
    if (st >= 0 && !folded) st = d->infer(g, n);
    if (st >= 0 && !folded) nn_mark_bounded(g, n);
    if (st < 0) {
        snprintf(w->res->why, sizeof w->res->why, "%s", ffu_error_message());
        ffu_error_clear();
        return REFUSED;
    }
    *nfolded += folded;
    int item_in = 0, nval_in = 0;
    for (int j = 0; j < n->ninputs; j++) {
        int t = n->inputs[j];
        if (t < 0) continue;
        if (n->op == NN_OP_SHAPE || n->op == NN_OP_SIZE) {
            nval_in |= (w->f[t] & (T_ITEM | T_NVAL)) != 0;
            continue;
        }
        if (is_shape_input(n->op, j)) continue; /* a shape that follows N is what we want */
        item_in |= w->f[t] & T_ITEM;
        nval_in |= w->f[t] & T_NVAL;
    }
    if (nval_in && !folded && n->op != NN_OP_SHAPE && n->op != NN_OP_SIZE)
        return refuse(w, n, "computes with the batch size as data");
    if (item_in && normalises_batch_axis(g, n))
        return refuse(w, n, "normalises along the batch axis");
    if (crosses_items(w, n)) return refuse(w, n, "reads across the batch axis");
    for (int j = 0; j < n->noutputs; j++) {
        int t = n->outputs[j];
        if (t < 0) continue;
        const nn_shape *a = &g->tensors[t].shape, *ref = &w->ref->tensors[t].shape;
        char b1[64], b2[64];
        if (item_shaped(a, ref, w->n) && !nval_in) {
            w->f[t] = T_ITEM;
        } else if (nn_shape_equal(a, ref) && !item_in) {
            w->f[t] = nval_in ? T_NVAL : 0;
        } else {
            return refuse(w, n, "output '%s' is %s at batch %d but %s at batch 1",
                          g->tensors[t].name, nn_shape_str(a, b1, sizeof b1), w->n,
                          nn_shape_str(ref, b2, sizeof b2));
        }
    }
    return 0;
}

/* The proof: specialise a clone at batch N with rewrites, checking every node. */
static ffu_status rebatch(const ffu_nn_model *m, const nn_shape *shapes, const unsigned char *item,
                          const nn_graph *ref, ffu_arena *fold, nn_batch_result *res,
                          int as_declared)
{
    walk w = {.ref = ref, .n = res->n, .res = res, .as_declared = as_declared};
    ffu_status st = nn_graph_clone(m->g, &w.g);
    if (st < 0) return st;
    w.cap = w.g->ntensors + 16;
    if (!(w.f = calloc((size_t)w.cap, 1))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < m->ninputs; i++) {
        w.g->tensors[m->inputs[i]].shape = shapes[i];
        if (item[i]) w.f[m->inputs[i]] = T_ITEM;
    }
    int nfolded = 0;
    for (int i = 0; i < w.g->nnodes; i++) {
        int r = walk_node(&w, i, fold, &nfolded);
        if (r == REFUSED) goto out; /* st stays FFU_OK, res->g stays NULL */
        if (r < 0) {
            st = r;
            goto out;
        }
    }
    for (int k = 0; k < w.g->noutputs; k++) {
        int t = w.g->outputs[k];
        if (!(w.f[t] & T_ITEM)) {
            char b[64];
            snprintf(res->why, sizeof res->why,
                     "output '%.80s' is %s: its dim 0 does not carry "
                     "the batch",
                     w.g->tensors[t].name, nn_shape_str(&w.g->tensors[t].shape, b, sizeof b));
            goto out;
        }
    }
    if ((st = nn_graph_specialize_finish(w.g)) < 0) goto out;
    res->g = w.g, w.g = NULL;
    res->nfolded = nfolded;
out:
    nn_graph_destroy(w.g);
    free(w.f);
    return st;
}

/* nn_batch_specialize; with `prove`, where every batch input is dynamic, the proof
 * runs on the graph as declared, without rewriting constants (nn_batch_independent). */
static ffu_status specialize(const ffu_nn_model *m, const nn_shape *shapes, ffu_arena *fold,
                             unsigned char *item, nn_batch_result *res, int prove)
{
    memset(res, 0, sizeof *res);
    res->n = 1;
    int fixed = 0; /* some input declared with dim 0 = 1 carries N > 1 */
    for (int i = 0; i < m->ninputs; i++) {
        const nn_shape *decl = &m->g->tensors[m->inputs[i]].shape;
        item[i] = 0;
        if (nn_batch_carrier(decl) && shapes[i].rank >= 1 && shapes[i].d[0] > res->n)
            res->n = (int)shapes[i].d[0];
    }
    if (res->n == 1) /* nothing carries a batch: the plain specialisation */
        return nn_graph_specialize(m->g, shapes, NULL, m->ninputs, fold, &res->g, &res->nfolded,
                                   &res->data_dependent);
    nn_shape *one = malloc(sizeof(nn_shape) * (size_t)m->ninputs);
    if (!one) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < m->ninputs; i++) {
        const nn_tensor *t = &m->g->tensors[m->inputs[i]];
        one[i] = shapes[i];
        if (!nn_batch_carrier(&t->shape)) continue;
        if (shapes[i].d[0] == res->n) {
            item[i] = 1;
            one[i].d[0] = 1;
            fixed |= t->shape.d[0] == 1;
        } else if (shapes[i].d[0] != 1) {
            free(one);
            return ffu_error_set(FFU_ERR_INVALID,
                                 "input '%s' has batch %lld but another input has %d (give "
                                 "each batch input dim 0 = %d, or 1 to share it)",
                                 t->name, (long long)shapes[i].d[0], res->n, res->n);
        }
    }
    ffu_status st;
    if (!fixed && !prove) {
        /* every batch input is dynamic: the model defines what N means */
        int dd = 0;
        st = nn_graph_specialize(m->g, shapes, NULL, m->ninputs, fold, &res->g, &res->nfolded, &dd);
        if (st >= 0 || dd) {
            res->data_dependent = dd;
            res->as_declared = 1;
            free(one);
            return st;
        }
        ffu_error_clear();
    }
    nn_graph *ref = NULL;
    int nfolded1 = 0, dd = 0;
    st = nn_graph_specialize_shapes(m->g, one, NULL, m->ninputs, fold, &ref, &nfolded1, &dd);
    free(one);
    if (st < 0) {
        if (!dd) return st;
        char msg[200]; /* the message is rewritten: copy it out of the error buffer first */
        snprintf(msg, sizeof msg, "%s", ffu_error_message());
        return ffu_error_set(st,
                             "batch %d: %s (shapes that depend on input values cannot be "
                             "batched)",
                             res->n, msg);
    }
    st = rebatch(m, shapes, item, ref, fold, res, prove && !fixed);
    if (st < 0 || res->g) {
        nn_graph_destroy(ref);
        return st;
    }
    /* the proof failed: run the batch-1 plan once per item */
    if ((st = nn_graph_specialize_finish(ref)) < 0) {
        nn_graph_destroy(ref);
        return st;
    }
    res->g = ref;
    res->nfolded = nfolded1;
    res->looped = 1;
    return FFU_OK;
}

ffu_status nn_batch_specialize(const ffu_nn_model *m, const nn_shape *shapes, ffu_arena *fold,
                               unsigned char *item, nn_batch_result *res)
{
    return specialize(m, shapes, fold, item, res, 0);
}

int nn_batch_independent(const ffu_nn_model *m, const nn_shape *shapes)
{
    ffu_arena *fold = NULL;
    unsigned char *item = malloc((size_t)m->ninputs + 1);
    nn_batch_result res;
    int independent = 0;
    if (item && ffu_arena_create(&fold, 0) == FFU_OK &&
        specialize(m, shapes, fold, item, &res, 0) == FFU_OK) {
        independent = !res.as_declared;
        nn_graph_destroy(res.g);
        if (res.as_declared && specialize(m, shapes, fold, item, &res, 1) == FFU_OK) {
            independent = res.g && !res.looped;
            nn_graph_destroy(res.g);
        }
    }
    ffu_error_clear();
    ffu_arena_destroy(fold);
    free(item);
    return independent;
}
