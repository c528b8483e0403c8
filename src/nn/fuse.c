/* The fusion passes (see fuse.h): moves activations into the node that produces their
 * input, and (at plan time, with shapes known) residual Adds into the Conv that feeds
 * them, so that a backend runs one kernel (a oneDNN convolution with post-ops) where
 * the graph had two, and the memory planner has one activation less to place.
 *
 * Conv + BatchNormalization (and per-channel Mul/Add) folding is not here: the pattern
 * rewrites (rewrite.c, nn_rewrite_patterns) do it earlier in nn_passes_run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"
#include "nn_internal.h"
#include "rewrite.h"

typedef struct fuse_ctx {
    nn_graph *g;
    int *nreaders;         /* per tensor: how many node inputs (and PReLU slopes) read it */
    int *reader;           /* per tensor: the last node that reads it */
    unsigned char *keep;   /* per node */
} fuse_ctx;

/* Per tensor of g: how many node inputs and PReLU slopes read it (nreaders, zeroed by
 * the caller) and the last node that reads it as an input (last, -1 for none). */
static void count_readers(const nn_graph *g, int *nreaders, int *last)
{
    int nt = g->ntensors;
    for (int t = 0; t < nt; t++) last[t] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t < 0 || t >= nt) continue;
            nreaders[t]++;
            last[t] = i;
        }
        if (n->act.kind == NN_ACT_PRELU && n->act.slope >= 0 && n->act.slope < nt)
            nreaders[n->act.slope]++;
    }
}

/* Removes the nodes f no longer keeps (when removed is not 0) and frees f's arrays. */
static void fuse_ctx_close(fuse_ctx *f, int removed)
{
    if (removed) nn_graph_compact(f->g, f->keep);
    free(f->nreaders), free(f->reader), free(f->keep);
    f->nreaders = f->reader = NULL;
    f->keep = NULL;
}

/* A pass over g: readers counted (count_readers), every node kept. FFU_ERR_NOMEM (and
 * nothing to close) on failure. */
static ffu_status fuse_ctx_open(fuse_ctx *f, nn_graph *g)
{
    size_t nt = (size_t)(g->ntensors ? g->ntensors : 1), nn = (size_t)(g->nnodes ? g->nnodes : 1);
    *f = (fuse_ctx){.g = g};
    f->nreaders = calloc(nt, sizeof(int));
    f->reader = malloc(sizeof(int) * nt);
    f->keep = malloc(nn);
    if (!f->nreaders || !f->reader || !f->keep) {
        fuse_ctx_close(f, 0);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    memset(f->keep, 1, nn);
    count_readers(g, f->nreaders, f->reader);
    return FFU_OK;
}

/* Runs one plan-time pass over g with fresh reader counts; the nodes it marks as no
 * longer kept (*removed of them) are then removed. */
static ffu_status fuse_pass(nn_graph *g, ffu_status (*pass)(fuse_ctx *f, int *removed))
{
    fuse_ctx f;
    int removed = 0;
    ffu_status st = fuse_ctx_open(&f, g);
    if (st < 0) return st;
    st = pass(&f, &removed);
    fuse_ctx_close(&f, st >= 0 ? removed : 0);
    return st;
}

static int is_const_f32(const nn_tensor *t)
{
    return t && (t->flags & NN_T_CONST) && t->data && t->dtype == FFU_DTYPE_F32 &&
           nn_shape_numel(&t->shape) >= 0;
}

/* 1 when every value of n's int-list attribute `name` is v (an absent list counts). */
static int ints_all(const nn_node *n, const char *name, int64_t v)
{
    int cnt;
    const int64_t *a = nn_attr_ints(n, name, &cnt);
    for (int i = 0; a && i < cnt; i++)
        if (a[i] != v) return 0;
    return 1;
}

/* Whether window op n (Conv or pool, kernel k and stride st in both spatial dims) pads
 * nothing: explicit pads all 0 (or VALID), or SAME padding that comes to nothing on
 * its input's known height and width (TFLite writes SAME for 1x1 layers and for 2x2
 * pools of even sizes). */
static int pads_nothing(const nn_graph *g, const nn_node *n, int64_t k, int64_t st)
{
    const char *ap = nn_attr_string(n, "auto_pad", "NOTSET");
    if (!*ap || strcmp(ap, "NOTSET") == 0 || strcmp(ap, "VALID") == 0)
        return strcmp(ap, "VALID") == 0 || ints_all(n, "pads", 0);
    if (strcmp(ap, "SAME_UPPER") != 0 && strcmp(ap, "SAME_LOWER") != 0) return 0;
    const nn_tensor *x = n->ninputs > 0 && n->inputs[0] >= 0 ? &g->tensors[n->inputs[0]] : NULL;
    if (!x || x->shape.rank != 4) return 0;
    for (int i = 2; i < 4; i++) {
        int64_t d = x->shape.d[i];
        if (d <= 0 || ((d + st - 1) / st - 1) * st + k > d) return 0;
    }
    return 1;
}

/* Whether tensor t holds f32. Loaders leave intermediate dtypes undefined until a
 * session infers them, so this follows producers: float-only ops make f32, and
 * elementwise and data-movement ops keep the type of their float inputs. */
static int is_f32(const nn_graph *g, int t, int depth)
{
    if (t < 0 || t >= g->ntensors) return 0;
    const nn_tensor *x = &g->tensors[t];
    if (x->dtype != FFU_DTYPE_UNDEFINED) return x->dtype == FFU_DTYPE_F32;
    if (x->producer < 0 || depth > 16) return 0;
    const nn_node *p = &g->nodes[x->producer];
    switch (p->op) {
    case NN_OP_CONV: case NN_OP_CONV_TRANSPOSE: case NN_OP_GEMM: case NN_OP_BATCH_NORM:
    case NN_OP_INSTANCE_NORM: case NN_OP_LAYER_NORM: case NN_OP_SOFTMAX: case NN_OP_LOG_SOFTMAX:
    case NN_OP_SIGMOID: case NN_OP_TANH: case NN_OP_AVERAGE_POOL: case NN_OP_GLOBAL_AVERAGE_POOL:
    case NN_OP_HARD_SWISH: case NN_OP_ELU: case NN_OP_LEAKY_RELU:
        return 1;
    case NN_OP_MATMUL: case NN_OP_ADD: case NN_OP_SUB: case NN_OP_MUL: case NN_OP_DIV:
    case NN_OP_RELU: case NN_OP_CLIP: case NN_OP_PRELU: case NN_OP_MAX_POOL: case NN_OP_CONCAT:
    case NN_OP_RESHAPE: case NN_OP_TRANSPOSE: case NN_OP_PAD: case NN_OP_RESIZE:
    case NN_OP_GLOBAL_MAX_POOL: case NN_OP_RELU6: case NN_OP_MAX: case NN_OP_MIN:
        for (int j = 0; j < p->ninputs; j++)
            if (is_f32(g, p->inputs[j], depth + 1)) return 1;
        return 0;
    default: return 0;
    }
}

/* The single reader of a node's output 0 if fusing into it is allowed, else NULL. */
static nn_node *sole_reader(fuse_ctx *f, const nn_node *n)
{
    if (n->noutputs < 1) return NULL;
    for (int j = 1; j < n->noutputs; j++)
        if (n->outputs[j] >= 0) return NULL;
    int t = n->outputs[0];
    if (t < 0 || f->nreaders[t] != 1 || f->reader[t] < 0) return NULL;
    if (f->g->tensors[t].flags & (NN_T_OUTPUT | NN_T_INPUT | NN_T_CONST)) return NULL;
    nn_node *r = &f->g->nodes[f->reader[t]];
    if (!f->keep[f->reader[t]] || r->ninputs < 1 || r->inputs[0] != t || r->noutputs < 1)
        return NULL;
    for (int j = 1; j < r->noutputs; j++)
        if (r->outputs[j] >= 0) return NULL;
    return r;
}

/* n takes over r's output; r disappears. */
static void absorb(fuse_ctx *f, nn_node *n, nn_node *r)
{
    int ri = (int)(r - f->g->nodes);
    n->outputs[0] = r->outputs[0];
    f->g->tensors[r->outputs[0]].producer = (int)(n - f->g->nodes);
    f->keep[ri] = 0;
}

/* ---- producer + activation -------------------------------------------------------------------- */

/* Rank and axis-1 size of tensor t when they can be known at load time, where shapes
 * of intermediates are not inferred yet (nn_derive_shape). 0 when unknown. */
static int rank_channels(const nn_graph *g, int t, int *rank, int64_t *C)
{
    nn_shape s;
    nn_derive_shape(g, t, &s);
    if (s.rank < 2 || s.d[1] <= 0) return 0;
    *rank = s.rank, *C = s.d[1];
    return 1;
}

/* Fills act from an activation node, or returns 0 when r is not one we can fuse. */
static int act_of(const nn_graph *g, const nn_node *prod, const nn_node *r, nn_act *act)
{
    const nn_tensor *y = nn_out(g, r, 0);
    if (!y || (y->dtype != FFU_DTYPE_F32 && y->dtype != FFU_DTYPE_UNDEFINED)) return 0;
    memset(act, 0, sizeof *act);
    act->slope = -1;
    switch (r->op) {
    case NN_OP_RELU: act->kind = NN_ACT_RELU; break;
    case NN_OP_RELU6: act->kind = NN_ACT_RELU6; break;
    case NN_OP_SIGMOID: act->kind = NN_ACT_SIGMOID; break;
    case NN_OP_TANH: act->kind = NN_ACT_TANH; break;
    case NN_OP_HARD_SWISH: act->kind = NN_ACT_HARD_SWISH; break;
    case NN_OP_LEAKY_RELU:
        act->kind = NN_ACT_LEAKY_RELU;
        act->alpha = nn_attr_float(r, "alpha", 0.01f);
        break;
    case NN_OP_ELU:
        act->kind = NN_ACT_ELU;
        act->alpha = nn_attr_float(r, "alpha", 1.0f);
        break;
    case NN_OP_CLIP: {
        float lo = -INFINITY, hi = INFINITY;
        if (r->ninputs > 3) return 0;
        for (int i = 1; i < r->ninputs; i++) {
            const nn_tensor *t = nn_in(g, r, i);
            if (!t) continue;
            if (!is_const_f32(t) || nn_shape_numel(&t->shape) != 1) return 0;
            *(i == 1 ? &lo : &hi) = *(const float *)t->data;
        }
        if (lo == 0.0f && hi == 6.0f) {
            act->kind = NN_ACT_RELU6;
        } else {
            act->kind = NN_ACT_CLIP;
            act->alpha = lo;
            act->beta = hi;
        }
        break;
    }
    case NN_OP_PRELU: {
        if (r->ninputs != 2) return 0;
        const nn_tensor *s = nn_in(g, r, 1);
        if (!is_const_f32(s)) return 0;
        int64_t k = nn_shape_numel(&s->shape);
        if (k != 1) {
            /* the slopes must sit on axis 1 of the output: right-aligned, every other
             * dim 1, and as many as the producer has channels */
            int rank;
            int64_t C;
            if (!rank_channels(g, prod->outputs[0], &rank, &C) || k != C || rank < 2 ||
                s->shape.rank > rank)
                return 0;
            for (int i = 0; i < s->shape.rank; i++) {
                int axis = rank - s->shape.rank + i;
                if (s->shape.d[i] != (axis == 1 ? C : 1)) return 0;
            }
        }
        act->kind = NN_ACT_PRELU;
        act->slope = r->inputs[1];
        break;
    }
    default: return 0;
    }
    return 1;
}

static int carries_act(nn_op op)
{
    return op == NN_OP_CONV || op == NN_OP_CONV_TRANSPOSE || op == NN_OP_GEMM ||
           op == NN_OP_MATMUL || op == NN_OP_ADD;
}

static void fuse_act(fuse_ctx *f, nn_node *n)
{
    if (!carries_act(n->op) || n->act.kind != NN_ACT_NONE) return;
    /* the ref kernels apply act to f32 outputs only */
    if (n->noutputs < 1 || !is_f32(f->g, n->outputs[0], 0)) return;
    nn_node *r = sole_reader(f, n);
    nn_act act;
    if (!r || !act_of(f->g, n, r, &act)) return;
    n->act = act;
    absorb(f, n, r);
}

/* ---- plan time: Conv + residual Add -------------------------------------------------------- */

static int same_shape_f32(const nn_tensor *t, const nn_shape *s)
{
    return t->dtype == FFU_DTYPE_F32 && nn_shape_known(&t->shape) && nn_shape_equal(&t->shape, s);
}

/* ---- plan time: sibling 1x1 convolutions (and their depthwise followers) ----------------- */

/* Whether two nodes have the same value for an ints attribute (both absent counts). */
static int same_ints(const nn_node *a, const nn_node *b, const char *name)
{
    int na, nb;
    const int64_t *x = nn_attr_ints(a, name, &na), *y = nn_attr_ints(b, name, &nb);
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (x[i] != y[i]) return 0;
    return 1;
}

static int same_act(const nn_act *a, const nn_act *b)
{
    return a->kind == b->kind && a->kind != NN_ACT_PRELU && a->alpha == b->alpha &&
           a->beta == b->beta;
}

/* A plain pointwise Conv of x: 1x1 weights, no group, stride, pad or dilation, no
 * residual; its weights and bias constant f32. */
static int pointwise_of(const nn_graph *g, const nn_node *n, int x)
{
    if (n->op != NN_OP_CONV || n->ninputs < 2 || n->ninputs > 3 || n->noutputs != 1 ||
        n->inputs[0] != x || nn_attr_int(n, "group", 1) != 1)
        return 0;
    const nn_tensor *w = nn_in(g, n, 1), *b = nn_in(g, n, 2);
    if (!is_const_f32(w) || w->shape.rank != 4 || w->shape.d[2] != 1 || w->shape.d[3] != 1 ||
        (b && (!is_const_f32(b) || nn_shape_numel(&b->shape) != w->shape.d[0])))
        return 0;
    return ints_all(n, "strides", 1) && ints_all(n, "dilations", 1) && pads_nothing(g, n, 1, 1);
}

/* A depthwise Conv (one filter per channel, constant f32 weights and bias) of t. */
static int depthwise_of(const nn_graph *g, const nn_node *n, int t)
{
    if (n->op != NN_OP_CONV || n->ninputs < 2 || n->ninputs > 3 || n->noutputs != 1 ||
        n->inputs[0] != t)
        return 0;
    const nn_tensor *w = nn_in(g, n, 1), *b = nn_in(g, n, 2);
    int64_t C = w ? w->shape.d[0] : 0;
    return is_const_f32(w) && w->shape.rank == 4 && w->shape.d[1] == 1 &&
           nn_attr_int(n, "group", 1) == C &&
           (!b || (is_const_f32(b) && nn_shape_numel(&b->shape) == C));
}

/* Concatenates along axis 0 the weights (or biases, zeros where absent) of the nodes. */
static int concat_const(nn_graph *g, const int *nodes, int k, int input, int64_t total,
                        const nn_shape *per_channel)
{
    nn_shape s = *per_channel;
    s.d[0] = total;
    int64_t each = nn_shape_numel(per_channel);
    float *buf = calloc((size_t)(total * each), sizeof(float));
    if (!buf) return -1;
    int64_t at = 0;
    for (int i = 0; i < k; i++) {
        const nn_node *n = &g->nodes[nodes[i]];
        const nn_tensor *w = nn_in(g, n, 1), *c = nn_in(g, n, input);
        int64_t m = w->shape.d[0];
        if (c) memcpy(buf + at * each, c->data, sizeof(float) * (size_t)(m * each));
        at += m;
    }
    int t = nn_graph_add_const(g, "", FFU_DTYPE_F32, &s, buf, sizeof(float) * (size_t)(total * each),
                               NN_COPY);
    free(buf);
    return t;
}

/* Sibling pointwise Convs of one tensor with the same activation (detection heads:
 * YuNet computes 1, 4, 1 and 10 channels from each 64-channel feature map, then a
 * depthwise 3x3 on each) become one Conv with all the channels, one depthwise Conv
 * when every sibling has the same kind of depthwise follower, and a Split: one
 * well-shaped kernel instead of several that use a sixteenth of a vector each. Returns
 * 1 when it rewrote something (node indices change), 0 when not, < 0 on error. */
static int fuse_siblings(nn_graph *g)
{
    enum { MAXK = 16 };
    int nn = g->nnodes, nt = g->ntensors;
    int *nreaders = calloc((size_t)nt, sizeof(int));
    if (!nreaders) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].ninputs; j++)
            if (g->nodes[i].inputs[j] >= 0) nreaders[g->nodes[i].inputs[j]]++;
    int pw[MAXK], dw[MAXK], k = 0, with_dw = 0, x = -1;
    for (int i = 0; i < nn && k < 2; i++) {
        const nn_node *first = &g->nodes[i];
        x = first->inputs && first->ninputs > 0 ? first->inputs[0] : -1;
        if (x < 0 || !pointwise_of(g, first, x) || nreaders[x] < 2) continue;
        k = 0;
        for (int j = i; j < nn && k < MAXK; j++) {
            const nn_node *n = &g->nodes[j];
            if (pointwise_of(g, n, x) && same_act(&n->act, &first->act) &&
                nn_in(g, n, 1)->shape.d[1] == nn_in(g, first, 1)->shape.d[1])
                pw[k++] = j;
        }
        if (k < 2) continue;
        /* depthwise followers: each output read once, by the same kind of depthwise */
        with_dw = 1;
        for (int m = 0; m < k && with_dw; m++) {
            int t = g->nodes[pw[m]].outputs[0], r = -1;
            if (nreaders[t] != 1 || (g->tensors[t].flags & NN_T_OUTPUT)) with_dw = 0;
            for (int j = pw[m] + 1; j < nn && with_dw && r < 0; j++)
                for (int q = 0; q < g->nodes[j].ninputs; q++)
                    if (g->nodes[j].inputs[q] == t) r = j;
            if (r < 0 || !depthwise_of(g, &g->nodes[r], t)) with_dw = 0;
            if (with_dw && m > 0) {
                const nn_node *a = &g->nodes[dw[0]], *b = &g->nodes[r];
                const nn_tensor *wa = nn_in(g, a, 1), *wb = nn_in(g, b, 1);
                if (!same_act(&a->act, &b->act) || wa->shape.d[2] != wb->shape.d[2] ||
                    wa->shape.d[3] != wb->shape.d[3] || !same_ints(a, b, "strides") ||
                    !same_ints(a, b, "pads") || !same_ints(a, b, "dilations") ||
                    strcmp(nn_attr_string(a, "auto_pad", "NOTSET"),
                           nn_attr_string(b, "auto_pad", "NOTSET")) != 0)
                    with_dw = 0;
            }
            dw[m] = r;
        }
    }
    free(nreaders);
    if (k < 2) return 0;

    /* the merged weights, biases and tensors */
    int64_t total = 0, sizes[MAXK];
    for (int m = 0; m < k; m++) total += sizes[m] = nn_in(g, &g->nodes[pw[m]], 1)->shape.d[0];
    const nn_tensor *w0 = nn_in(g, &g->nodes[pw[0]], 1);
    nn_shape wrow = {.rank = 4, .d = {1, w0->shape.d[1], 1, 1}}, brow = {.rank = 1, .d = {1}};
    int wcat = concat_const(g, pw, k, 1, total, &wrow), bcat = concat_const(g, pw, k, 2, total, &brow);
    int dwcat = -1, dbcat = -1;
    if (with_dw) {
        const nn_tensor *wd = nn_in(g, &g->nodes[dw[0]], 1);
        nn_shape drow = {.rank = 4, .d = {1, 1, wd->shape.d[2], wd->shape.d[3]}};
        dwcat = concat_const(g, dw, k, 1, total, &drow);
        dbcat = concat_const(g, dw, k, 2, total, &brow);
    }
    nn_shape ts = g->tensors[g->nodes[pw[0]].outputs[0]].shape;
    ts.d[1] = total;
    int T = nn_graph_add_tensor(g, "", FFU_DTYPE_F32, &ts), U = -1;
    if (with_dw) {
        nn_shape us = g->tensors[g->nodes[dw[0]].outputs[0]].shape;
        us.d[1] = total;
        U = nn_graph_add_tensor(g, "", FFU_DTYPE_F32, &us);
    }
    nn_shape ss = {.rank = 1, .d = {k}};
    int split = nn_graph_add_const(g, "", FFU_DTYPE_I64, &ss, sizes, sizeof(int64_t) * (size_t)k,
                                   NN_COPY);
    int *pin = ffu_arena_alloc(g->arena, sizeof(int) * 3), *pout = ffu_arena_alloc(g->arena, sizeof(int));
    int *din = ffu_arena_alloc(g->arena, sizeof(int) * 3), *dout = ffu_arena_alloc(g->arena, sizeof(int));
    int souts[MAXK];
    if (wcat < 0 || bcat < 0 || (with_dw && (dwcat < 0 || dbcat < 0)) || T < 0 ||
        (with_dw && U < 0) || split < 0 || !pin || !pout || !din || !dout)
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int m = 0; m < k; m++) souts[m] = g->nodes[with_dw ? dw[m] : pw[m]].outputs[0];
    /* the Split goes right after the merged node it reads (the first follower's or the
     * first sibling's place): every reader of the old outputs comes later */
    int at = with_dw ? dw[0] : pw[0];
    for (int m = 1; m < k; m++) at = (with_dw ? dw[m] : pw[m]) < at ? (with_dw ? dw[m] : pw[m]) : at;
    int sin[2] = {with_dw ? U : T, split};
    int sn = nn_graph_add_node(g, NN_OP_SPLIT, g->nodes[pw[0]].name, sin, 2, souts, k);
    if (sn < 0 || nn_node_set_int(g, sn, "axis", 1) < 0) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    /* the merged pointwise Conv in the first sibling's place, the merged depthwise in
     * the first follower's place (after it: a follower comes after its sibling) */
    int first_pw = pw[0], first_dw = with_dw ? dw[0] : -1;
    for (int m = 1; m < k; m++) {
        if (pw[m] < first_pw) first_pw = pw[m];
        if (with_dw && dw[m] < first_dw) first_dw = dw[m];
    }
    nn_node *c = &g->nodes[first_pw];
    pin[0] = x, pin[1] = wcat, pin[2] = bcat, pout[0] = T;
    c->inputs = pin, c->ninputs = 3, c->outputs = pout, c->noutputs = 1;
    if (with_dw) {
        nn_node *d = &g->nodes[first_dw];
        din[0] = T, din[1] = dwcat, din[2] = dbcat, dout[0] = U;
        d->inputs = din, d->ninputs = 3, d->outputs = dout, d->noutputs = 1;
        if (nn_node_set_int(g, first_dw, "group", total) < 0)
            return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    /* move the Split into place, drop the other siblings and followers */
    nn = g->nnodes;
    unsigned char *keep = malloc((size_t)nn);
    if (!keep) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    memset(keep, 1, (size_t)nn);
    for (int m = 0; m < k; m++) {
        if (pw[m] != first_pw) keep[pw[m]] = 0;
        if (with_dw && dw[m] != first_dw) keep[dw[m]] = 0;
    }
    nn_node sp = g->nodes[sn];
    memmove(&g->nodes[at + 2], &g->nodes[at + 1], sizeof(nn_node) * (size_t)(sn - at - 1));
    memmove(&keep[at + 2], &keep[at + 1], (size_t)(sn - at - 1));
    g->nodes[at + 1] = sp;
    keep[at + 1] = 1;
    nn_graph_compact(g, keep);
    free(keep);
    /* shapes and types of the new tensors (the Split's outputs keep theirs) */
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        if (n->outputs[0] == T || n->outputs[0] == U || n->op == NN_OP_SPLIT) {
            const nn_op_def *def = nn_op_get(n->op);
            ffu_status st = def && def->infer ? def->infer(g, n) : FFU_OK;
            if (st < 0) return st;
        }
    }
    return 1;
}

/* ---- plan time: Conv * scale + per-channel bias ------------------------------------------- */

/* Whether constant c, added to a tensor of shape y, is one value per channel of axis 1
 * (right-aligned, every other dim 1) or a single value. */
static int channel_const(const nn_tensor *c, const nn_shape *y)
{
    if (!is_const_f32(c) || !nn_shape_known(&c->shape) || y->rank < 2 || c->shape.rank > y->rank)
        return 0;
    for (int i = 0; i < c->shape.rank; i++) {
        int axis = y->rank - c->shape.rank + i;
        if (c->shape.d[i] != 1 && (axis != 1 || c->shape.d[i] != y->d[1])) return 0;
    }
    return 1;
}

/* The Mul or Add node reading tensor t as one of its two operands, t its only reader
 * there; *other = the other operand. -1 when there is none. */
static int binary_reader(const nn_graph *g, const int *nreaders, const int *reader, int t, nn_op op,
                         int *other)
{
    if (t < 0 || nreaders[t] != 1 || reader[t] < 0 || (g->tensors[t].flags & NN_T_OUTPUT))
        return -1;
    const nn_node *r = &g->nodes[reader[t]];
    if (r->op != op || r->ninputs != 2 || r->noutputs != 1 || r->outputs[0] < 0) return -1;
    int k = r->inputs[0] == t ? 0 : 1;
    *other = r->inputs[1 - k];
    if (r->inputs[k] != t || *other < 0 || *other == t) return -1;
    const nn_tensor *y = &g->tensors[r->outputs[0]];
    if (y->dtype != FFU_DTYPE_F32 || !nn_shape_equal(&y->shape, &g->tensors[t].shape)) return -1;
    return reader[t];
}

/* A Conv without bias, residual, activation or pool whose only reader is a Mul by one
 * f32 value, perhaps followed by an Add of a per-channel constant (and its activation),
 * becomes the Conv with the scale as input 4 and the constant as its bias (ir.h): a
 * dynamically quantised layer (rewrite_integer.c) is the convolution of integer steps,
 * a Mul by the run-time product of the two scales and the bias Add, and two of the
 * three passes over the layer's output go. */
static ffu_status fuse_scales(fuse_ctx *f, int *nremoved)
{
    nn_graph *g = f->g;
    ffu_status st = FFU_OK;
    int nn = g->nnodes, removed = 0, *nreaders = f->nreaders, *reader = f->reader;
    unsigned char *keep = f->keep;
    for (int i = 0; i < nn; i++) {
        const nn_node *c = &g->nodes[i];
        if (!keep[i] || c->op != NN_OP_CONV || c->ninputs < 2 || c->ninputs > 3 ||
            (c->ninputs == 3 && c->inputs[2] >= 0) || c->noutputs != 1 || c->outputs[0] < 0 ||
            c->act.kind != NN_ACT_NONE || nn_attr_int(c, "_pool", 0) != 0)
            continue;
        const nn_tensor *y = &g->tensors[c->outputs[0]];
        if (y->dtype != FFU_DTYPE_F32 || !nn_shape_known(&y->shape) || y->shape.rank < 3) continue;
        int s, b = -1;
        int mul = binary_reader(g, nreaders, reader, c->outputs[0], NN_OP_MUL, &s);
        const nn_tensor *sc = mul >= 0 ? &g->tensors[s] : NULL;
        if (mul < 0 || !keep[mul] || g->nodes[mul].act.kind != NN_ACT_NONE ||
            sc->dtype != FFU_DTYPE_F32 || !nn_shape_known(&sc->shape) ||
            nn_shape_numel(&sc->shape) != 1)
            continue;
        int last = mul;
        int add = binary_reader(g, nreaders, reader, g->nodes[mul].outputs[0], NN_OP_ADD, &b);
        if (add >= 0 && keep[add] && channel_const(&g->tensors[b], &y->shape)) {
            /* the bias as the Conv's [C] input (a single value repeated) */
            int64_t C = y->shape.d[1], k = nn_shape_numel(&g->tensors[b].shape);
            float *v = malloc(sizeof(float) * (size_t)C);
            if (!v) {
                st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
                goto out;
            }
            const float *src = g->tensors[b].data;
            for (int64_t ch = 0; ch < C; ch++)
                v[ch] = src[k == 1 ? 0 : ch];
            nn_shape bs = {.rank = 1, .d = {C}};
            b = nn_graph_add_const(g, "", FFU_DTYPE_F32, &bs, v, sizeof(float) * (size_t)C,
                                   NN_COPY);
            free(v); /* y and sc may point into the moved tensors from here on: unused */
            if (b < 0) {
                st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
                goto out;
            }
            last = add;
        } else {
            b = -1;
        }
        int *in = ffu_arena_alloc(g->arena, sizeof(int) * 5);
        if (!in) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            goto out;
        }
        in[0] = c->inputs[0], in[1] = c->inputs[1], in[2] = b, in[3] = -1, in[4] = s;
        /* the Conv moves to the last fused node's place: the scale may be computed
         * after the Conv was */
        nn_node fused = *c;
        nn_node *l = &g->nodes[last];
        fused.inputs = in;
        fused.ninputs = 5;
        fused.outputs = l->outputs;
        fused.noutputs = 1;
        fused.act = l->act;
        g->tensors[l->outputs[0]].producer = last;
        *l = fused;
        keep[i] = 0;
        removed++;
        if (last == add) keep[mul] = 0, removed++;
    }
out:
    *nremoved = removed;
    return st;
}

/* ---- plan time: Resize + Add --------------------------------------------------------------- */

/* A Resize that changes its f32 input's size, without an activation, whose only reader
 * is an Add of a tensor of its output's shape becomes the Resize with that tensor as
 * input 4 and the Add's activation (ir.h). A feature pyramid's top-down path (YuNet,
 * RetinaFace: a coarse map upsampled and added to a finer one) then writes the
 * upsampled map once instead of writing it, reading it back and writing the sum. Runs
 * after the Conv + residual fusion, which takes such an Add first where a Conv made the
 * other operand for it alone (SCRFD's laterals). */
static ffu_status fuse_resize_adds(fuse_ctx *f, int *nremoved)
{
    nn_graph *g = f->g;
    ffu_status st = FFU_OK;
    int nn = g->nnodes, removed = 0, *nreaders = f->nreaders, *reader = f->reader;
    unsigned char *keep = f->keep;
    for (int i = 0; i < nn; i++) {
        const nn_node *z = &g->nodes[i];
        if (z->op != NN_OP_RESIZE || z->ninputs < 1 || z->ninputs > 4 || z->noutputs != 1 ||
            z->inputs[0] < 0 || z->outputs[0] < 0 || z->act.kind != NN_ACT_NONE)
            continue;
        const nn_tensor *x = &g->tensors[z->inputs[0]], *y = &g->tensors[z->outputs[0]];
        if (y->dtype != FFU_DTYPE_F32 || x->dtype != FFU_DTYPE_F32 || !nn_shape_known(&y->shape) ||
            nn_shape_equal(&x->shape, &y->shape))
            continue;
        int r, add = binary_reader(g, nreaders, reader, z->outputs[0], NN_OP_ADD, &r);
        if (add <= i || !keep[add] || !same_shape_f32(&g->tensors[r], &y->shape) ||
            (g->tensors[r].flags & NN_T_CONST))
            continue;
        int *in = ffu_arena_alloc(g->arena, sizeof(int) * 5);
        if (!in) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (int k = 0; k < 4; k++)
            in[k] = k < z->ninputs ? z->inputs[k] : -1;
        in[4] = r;
        /* the Resize moves to the Add's place: the addend may be computed after it */
        nn_node fused = *z, *a = &g->nodes[add];
        fused.inputs = in;
        fused.ninputs = 5;
        fused.outputs = a->outputs;
        fused.noutputs = 1;
        fused.act = a->act;
        g->tensors[a->outputs[0]].producer = add;
        *a = fused;
        keep[i] = 0;
        removed++;
    }
out:
    *nremoved = removed;
    return st;
}

/* ---- plan time: Conv + 2x2 MaxPool --------------------------------------------------------- */

/* A MaxPool with 2x2 windows, stride 2, no padding (pads_nothing), dilation or ceil
 * mode, one output. */
static int pool_2x2(const nn_graph *g, const nn_node *n)
{
    if (n->op != NN_OP_MAX_POOL || n->ninputs != 1 || (n->noutputs > 1 && n->outputs[1] >= 0) ||
        nn_attr_int(n, "ceil_mode", 0) != 0 || nn_attr_int(n, "storage_order", 0) != 0)
        return 0;
    int nk, ns;
    const int64_t *k = nn_attr_ints(n, "kernel_shape", &nk), *st = nn_attr_ints(n, "strides", &ns);
    if (!k || nk != 2 || k[0] != 2 || k[1] != 2 || !st || ns != 2 || st[0] != 2 || st[1] != 2)
        return 0;
    return pads_nothing(g, n, 2, 2) && ints_all(n, "dilations", 1);
}

/* An ungrouped 3x3 stride-1 undilated Conv with constant f32 weights: the shape of the
 * cpu backend's Winograd layers (docs/NN_CPU.md "Winograd"). */
static int winograd_shaped(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *w = nn_in(g, n, 1);
    return n->op == NN_OP_CONV && n->ninputs >= 2 && n->ninputs <= 3 && n->noutputs == 1 &&
           nn_attr_int(n, "group", 1) == 1 && is_const_f32(w) && w->shape.rank == 4 &&
           w->shape.d[2] == 3 && w->shape.d[3] == 3 && ints_all(n, "kernel_shape", 3) &&
           ints_all(n, "strides", 1) && ints_all(n, "dilations", 1);
}

/* Depthwise or Winograd-shaped Conv -> MaxPool 2x2 stride 2 becomes the Conv with
 * `_pool` = 2 (ir.h) when the Conv output has no other reader: YuNet's stages and gear's
 * first four end this way, and pooling as the cpu backend's depthwise and Winograd
 * kernels write their outputs saves writing and re-reading the largest tensors. Every
 * backend runs `_pool` on any Conv (the others as a second step). */
static ffu_status fuse_pools(nn_graph *g)
{
    int nn = g->nnodes, nt = g->ntensors, removed = 0;
    int *nreaders = calloc((size_t)nt, sizeof(int));
    unsigned char *keep = malloc((size_t)(nn ? nn : 1));
    if (!nreaders || !keep) {
        free(nreaders), free(keep);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    memset(keep, 1, (size_t)(nn ? nn : 1));
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].ninputs; j++)
            if (g->nodes[i].inputs[j] >= 0) nreaders[g->nodes[i].inputs[j]]++;
    for (int i = 0; i < nn; i++) {
        nn_node *p = &g->nodes[i];
        if (!pool_2x2(g, p)) continue;
        int t = p->inputs[0];
        const nn_tensor *x = &g->tensors[t];
        int c = x->producer;
        if (c < 0 || c >= i || !keep[c] || nreaders[t] != 1 || (x->flags & NN_T_OUTPUT) ||
            x->dtype != FFU_DTYPE_F32 || x->shape.rank != 4)
            continue;
        nn_node *cv = &g->nodes[c];
        if (cv->op != NN_OP_CONV || cv->ninputs > 3 || cv->noutputs != 1 ||
            nn_attr_int(cv, "_pool", 0) != 0 ||
            !(depthwise_of(g, cv, cv->inputs[0]) || winograd_shaped(g, cv)))
            continue;
        if (nn_node_set_int(g, c, "_pool", 2) < 0) {
            free(nreaders), free(keep);
            return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        }
        g->nodes[c].outputs[0] = p->outputs[0];
        keep[i] = 0;
        removed++;
    }
    if (removed) nn_graph_compact(g, keep);
    free(nreaders), free(keep);
    return FFU_OK;
}

/* ---- plan time: channels padded to 16 for a Winograd layer ------------------------------ */

/* A copy of constant c (rows of `row` floats, n of them) with rows [n, np) zero, in a
 * new constant of shape c's with dim `axis` np. -1 on failure. */
static int pad_rows(nn_graph *g, const nn_tensor *c, int axis, int64_t n, int64_t np, int64_t row)
{
    float *v = calloc((size_t)(np * row), sizeof(float));
    if (!v) return -1;
    memcpy(v, c->data, sizeof(float) * (size_t)(n * row));
    nn_shape sh = c->shape;
    sh.d[axis] = np;
    int t = nn_graph_add_const(g, "", FFU_DTYPE_F32, &sh, v, sizeof(float) * (size_t)(np * row),
                               NN_COPY);
    free(v);
    return t < 0 ? -1 : t;
}

/* Conv A -> (its value read by nothing else) -> Winograd-shaped Conv B whose input
 * channels C are not a multiple of 16 (MTCNN's P-Net: 3 -> 10, pooled, then 10 -> 16
 * 3x3): A gets zero filters up to the next multiple of 16 (bias and PReLU slopes padded
 * with zeros) and B zero weights for those channels, so B can run Winograd (which takes
 * multiples of 16) and A stores whole vectors. The extra channels hold act(0), which B
 * multiplies by 0: the sums gain only zero terms. B must have at least 64 output pixels
 * an image (not in the batch: a batch of two must be planned as one is, the same
 * arithmetic) and 16k outputs, A at most 64 real outputs (the padding stays under 2.5x
 * of A's work). */
static ffu_status pad_for_winograd(nn_graph *g)
{
    int nt = g->ntensors;
    int *nreaders = calloc((size_t)nt, sizeof(int)), *last = malloc(sizeof(int) * (size_t)nt);
    if (!nreaders || !last) {
        free(nreaders), free(last);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    count_readers(g, nreaders, last);
    ffu_status st = FFU_OK;
    for (int i = 0; i < g->nnodes && st >= 0; i++) {
        nn_node *b = &g->nodes[i];
        if (!winograd_shaped(g, b)) continue;
        const nn_tensor *wb = nn_in(g, b, 1), *yb = &g->tensors[b->outputs[0]];
        int t = b->inputs[0];
        const nn_tensor *x = &g->tensors[t];
        int64_t C = wb->shape.d[1], K = wb->shape.d[0], Cp = (C + 15) & ~(int64_t)15;
        if (C % 16 == 0 || C > 64 || K % 16 || nreaders[t] != 1 || (x->flags & NN_T_OUTPUT) ||
            x->dtype != FFU_DTYPE_F32 || x->shape.rank != 4 || x->shape.d[1] != C ||
            yb->shape.rank != 4 || yb->shape.d[2] * yb->shape.d[3] < 64)
            continue;
        int pa = x->producer;
        if (pa < 0 || pa >= g->nnodes) continue;
        nn_node *a = &g->nodes[pa];
        const nn_tensor *wa = a->op == NN_OP_CONV && a->ninputs >= 2 ? nn_in(g, a, 1) : NULL;
        const nn_tensor *ba = a->ninputs >= 3 ? nn_in(g, a, 2) : NULL;
        if (!wa || a->ninputs > 3 || a->noutputs != 1 || nn_attr_int(a, "group", 1) != 1 ||
            !is_const_f32(wa) || wa->shape.rank != 4 || wa->shape.d[0] != C ||
            (ba && (!is_const_f32(ba) || nn_shape_numel(&ba->shape) != C)))
            continue;
        /* a PReLU's slopes: one for all, or one per channel along one axis */
        nn_tensor sl = {0};
        int slope_axis = -1;
        if (a->act.kind == NN_ACT_PRELU) {
            if (a->act.slope < 0 || !is_const_f32(&g->tensors[a->act.slope])) continue;
            sl = g->tensors[a->act.slope];
            int64_t ne = nn_shape_numel(&sl.shape);
            for (int d = 0; d < sl.shape.rank && ne == C; d++)
                if (sl.shape.d[d] == C) slope_axis = d;
            if (ne != 1 && slope_axis < 0) continue;
        }
        /* copies: adding constants may move g->tensors (their data stays put) */
        const nn_tensor WA = *wa, WB = *wb, BA = ba ? *ba : WA;
        int slope = slope_axis >= 0 ? pad_rows(g, &sl, slope_axis, C, Cp, 1) : -2;
        int64_t arow = WA.shape.d[1] * WA.shape.d[2] * WA.shape.d[3];
        int nwa = pad_rows(g, &WA, 0, C, Cp, arow);
        int nba = ba ? pad_rows(g, &BA, 0, C, Cp, 1) : -2;
        /* B's weights: each filter's C input channels followed by Cp - C zero ones */
        int64_t kk = WB.shape.d[2] * WB.shape.d[3];
        float *v = calloc((size_t)(K * Cp * kk), sizeof(float));
        int nwb = -1;
        if (v) {
            for (int64_t k = 0; k < K; k++)
                memcpy(v + k * Cp * kk, (const float *)WB.data + k * C * kk,
                       sizeof(float) * (size_t)(C * kk));
            nn_shape sh = WB.shape;
            sh.d[1] = Cp;
            nwb = nn_graph_add_const(g, "", FFU_DTYPE_F32, &sh, v,
                                     sizeof(float) * (size_t)(K * Cp * kk), NN_COPY);
            free(v);
        }
        if (nwa < 0 || nba == -1 || nwb < 0 || slope == -1) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            break;
        }
        /* the graph's arrays may have moved: look the nodes up again */
        a = &g->nodes[pa];
        b = &g->nodes[i];
        a->inputs[1] = nwa;
        if (nba >= 0) a->inputs[2] = nba;
        if (slope >= 0) a->act.slope = slope;
        b->inputs[1] = nwb;
        g->tensors[t].shape.d[1] = Cp;
    }
    free(nreaders), free(last);
    return st;
}

/* Conv + residual Add (fuse.h). */
static ffu_status fuse_residuals(fuse_ctx *f, int *nremoved)
{
    nn_graph *g = f->g;
    ffu_status st = FFU_OK;
    int nn = g->nnodes, removed = 0, *nreaders = f->nreaders, *last = f->reader;
    unsigned char *keep = f->keep;
    for (int i = 0; i < nn; i++) {
        nn_node *add = &g->nodes[i];
        if (add->op != NN_OP_ADD || add->ninputs != 2 || add->noutputs != 1 || add->outputs[0] < 0)
            continue;
        const nn_tensor *y = &g->tensors[add->outputs[0]];
        if (y->dtype != FFU_DTYPE_F32 || !nn_shape_known(&y->shape)) continue;
        int best = -1, best_dies = 0;
        for (int k = 0; k < 2; k++) {
            int a = add->inputs[k], r = add->inputs[1 - k];
            if (a < 0 || r < 0 || a == r) continue;
            const nn_tensor *ta = &g->tensors[a], *tr = &g->tensors[r];
            if (!same_shape_f32(ta, &y->shape) || !same_shape_f32(tr, &y->shape)) continue;
            if ((ta->flags & (NN_T_INPUT | NN_T_OUTPUT | NN_T_CONST)) || (tr->flags & NN_T_CONST))
                continue;
            int p = ta->producer;
            if (p < 0 || p >= i || !keep[p] || nreaders[a] != 1) continue;
            const nn_node *c = &g->nodes[p];
            if (c->op != NN_OP_CONV || c->act.kind != NN_ACT_NONE || c->ninputs < 2 ||
                c->ninputs > 3 || c->noutputs != 1 || c->inputs[0] == r)
                continue;
            /* prefer the operand whose last reader is this Add: the output can then be
             * planned in its place */
            int dies = last[r] == i && !(tr->flags & (NN_T_INPUT | NN_T_OUTPUT));
            if (best < 0 || (dies && !best_dies)) best = k, best_dies = dies;
        }
        if (best < 0) continue;
        int a = add->inputs[best], r = add->inputs[1 - best];
        int p = g->tensors[a].producer;
        const nn_node *c = &g->nodes[p];
        int *in = ffu_arena_alloc(g->arena, sizeof(int) * 4);
        if (!in) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            goto out;
        }
        in[0] = c->inputs[0];
        in[1] = c->inputs[1];
        in[2] = c->ninputs > 2 ? c->inputs[2] : -1;
        in[3] = r;
        /* the Conv moves to the Add's place (its inputs are all ready there, and the
         * residual may be produced after the Conv was) */
        nn_node fused = *c;
        fused.inputs = in;
        fused.ninputs = 4;
        fused.outputs = add->outputs;
        fused.noutputs = 1;
        fused.act = add->act;
        *add = fused;
        keep[p] = 0;
        nreaders[a] = 0;
        removed++;
    }
out:
    *nremoved = removed;
    return st;
}

ffu_status nn_fuse_planned(nn_graph *g)
{
    if (!g || g->nnodes == 0) return FFU_OK;
    ffu_status st;
    if ((st = fuse_pass(g, fuse_residuals)) < 0 || (st = fuse_pass(g, fuse_scales)) < 0 ||
        (st = fuse_pools(g)) < 0 || (st = pad_for_winograd(g)) < 0 ||
        (st = fuse_pass(g, fuse_resize_adds)) < 0)
        return st;
    /* sibling groups, one at a time (each rewrite renumbers the nodes) */
    for (int round = 0; round < 64; round++) {
        int r = fuse_siblings(g);
        if (r <= 0) return r < 0 ? r : FFU_OK;
    }
    return FFU_OK;
}

/* ---- the pass ----------------------------------------------------------------------------------- */

ffu_status nn_fuse(nn_graph *g)
{
    if (!g || g->nnodes == 0) return FFU_OK;
    fuse_ctx f;
    ffu_status st = fuse_ctx_open(&f, g);
    if (st < 0) return st;
    int removed = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (f.keep[i]) fuse_act(&f, &g->nodes[i]);
    for (int i = 0; i < g->nnodes; i++)
        removed += !f.keep[i];
    fuse_ctx_close(&f, removed);
    return FFU_OK;
}
