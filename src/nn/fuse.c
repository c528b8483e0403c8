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

typedef struct fuse_ctx {
    nn_graph *g;
    int *nreaders;         /* per tensor: how many node inputs (and PReLU slopes) read it */
    int *reader;           /* per tensor: the last node that reads it */
    unsigned char *keep;   /* per node */
} fuse_ctx;

static int is_const_f32(const nn_tensor *t)
{
    return t && (t->flags & NN_T_CONST) && t->data && t->dtype == FFU_DTYPE_F32 &&
           nn_shape_numel(&t->shape) >= 0;
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
 * of intermediates are not inferred yet: from the shape, or through the producer
 * (convolution weights; ops that keep their input's shape). 0 when unknown. */
static int rank_channels(const nn_graph *g, int t, int *rank, int64_t *C, int depth)
{
    if (t < 0 || t >= g->ntensors || depth > 32) return 0;
    const nn_tensor *x = &g->tensors[t];
    if (x->shape.rank >= 2 && x->shape.d[1] > 0) {
        *rank = x->shape.rank, *C = x->shape.d[1];
        return 1;
    }
    if (x->producer < 0) return 0;
    const nn_node *p = &g->nodes[x->producer];
    const nn_tensor *w = nn_in(g, p, 1);
    switch (p->op) {
    case NN_OP_CONV:
        if (!w || w->shape.rank < 3 || w->shape.d[0] <= 0) return 0;
        *rank = w->shape.rank, *C = w->shape.d[0];
        return 1;
    case NN_OP_CONV_TRANSPOSE:
        if (!w || w->shape.rank < 3 || w->shape.d[1] <= 0) return 0;
        *rank = w->shape.rank, *C = w->shape.d[1] * nn_attr_int(p, "group", 1);
        return 1;
    case NN_OP_BATCH_NORM: case NN_OP_RELU: case NN_OP_CLIP: case NN_OP_PRELU:
    case NN_OP_LEAKY_RELU: case NN_OP_SIGMOID: case NN_OP_TANH: case NN_OP_HARD_SWISH:
    case NN_OP_ELU: case NN_OP_RELU6: case NN_OP_MAX_POOL: case NN_OP_AVERAGE_POOL:
    case NN_OP_GLOBAL_AVERAGE_POOL: case NN_OP_GLOBAL_MAX_POOL:
        return p->ninputs >= 1 && rank_channels(g, p->inputs[0], rank, C, depth + 1);
    case NN_OP_ADD: case NN_OP_SUB: case NN_OP_MUL: case NN_OP_DIV: {
        /* every non-constant operand must agree; constants must not widen the rank */
        int found = 0, r0 = 0;
        int64_t c0 = 0;
        for (int j = 0; j < p->ninputs; j++) {
            int u = p->inputs[j], r;
            int64_t c;
            if (u < 0) return 0;
            if (g->tensors[u].flags & NN_T_CONST) continue;
            if (!rank_channels(g, u, &r, &c, depth + 1)) return 0;
            if (found && (r != r0 || c != c0)) return 0;
            found = 1, r0 = r, c0 = c;
        }
        for (int j = 0; found && j < p->ninputs; j++) {
            const nn_tensor *k = &g->tensors[p->inputs[j]];
            if ((k->flags & NN_T_CONST) && k->shape.rank > r0) return 0;
        }
        if (found) *rank = r0, *C = c0;
        return found;
    }
    default: return 0;
    }
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
            if (!rank_channels(g, prod->outputs[0], &rank, &C, 0) || k != C || rank < 2 ||
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

ffu_status nn_fuse_planned(nn_graph *g)
{
    if (!g || g->nnodes == 0) return FFU_OK;
    int nt = g->ntensors, nn = g->nnodes;
    int *nreaders = calloc((size_t)nt, sizeof(int)), *last = malloc(sizeof(int) * (size_t)nt);
    unsigned char *keep = malloc((size_t)nn);
    ffu_status st = FFU_OK;
    if (!nreaders || !last || !keep) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    memset(keep, 1, (size_t)nn);
    for (int t = 0; t < nt; t++) last[t] = -1;
    for (int i = 0; i < nn; i++) {
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
    int removed = 0;
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
    if (removed) nn_graph_compact(g, keep);
out:
    free(nreaders), free(last), free(keep);
    return st;
}

/* ---- the pass ----------------------------------------------------------------------------------- */

ffu_status nn_fuse(nn_graph *g)
{
    if (!g || g->nnodes == 0) return FFU_OK;
    fuse_ctx f = {.g = g};
    f.nreaders = calloc((size_t)g->ntensors, sizeof(int));
    f.reader = malloc((size_t)g->ntensors * sizeof(int));
    f.keep = malloc((size_t)g->nnodes);
    ffu_status st = FFU_OK;
    if (!f.nreaders || !f.reader || !f.keep) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    memset(f.keep, 1, (size_t)g->nnodes);
    for (int t = 0; t < g->ntensors; t++) f.reader[t] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t < 0 || t >= g->ntensors) continue;
            f.nreaders[t]++;
            f.reader[t] = i;
        }
        if (n->act.kind == NN_ACT_PRELU && n->act.slope >= 0 && n->act.slope < g->ntensors)
            f.nreaders[n->act.slope]++;
    }
    for (int i = 0; i < g->nnodes; i++)
        if (f.keep[i]) fuse_act(&f, &g->nodes[i]);
    if (st >= 0) {
        int removed = 0;
        for (int i = 0; i < g->nnodes; i++) removed += !f.keep[i];
        if (removed) nn_graph_compact(g, f.keep);
    }
out:
    free(f.nreaders), free(f.reader), free(f.keep);
    return st;
}
