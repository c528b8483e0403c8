/* Load-time graph passes and the one function that orders them (nn_passes_run):
 *
 *   load -> nn_promote_f16 -> nn_rewrite_integer_products -> nn_rewrite_patterns
 *        -> nn_rewrite_transposes -> fold constants -> nn_fuse -> Identity removal
 *        -> dead-node removal
 *
 * The pattern/transpose rewrites live in rewrite.c, the integer products' rewrite in
 * rewrite_integer.c, the fusion pass in fuse.c. Constant folding runs a node's
 * reference kernel on constant inputs
 * (the same call sessions use at plan time, when input shapes are known and whole
 * Shape -> Gather -> Concat -> Reshape chains become constants). Also here: op checks
 * and the FLOP count `nn info` reports. */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

#include "fuse.h"
#include "ops/ops_internal.h"
#include "rewrite.h"

/* FFU_ERR_UNSUPPORTED naming the first op (and node) without a definition. */
static ffu_status nn_check_ops(const nn_graph *g)
{
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        const nn_op_def *d = nn_op_get(n->op);
        if (!d || !d->infer || !d->run)
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "unsupported op '%s' (node '%s')",
                                 nn_op_name(n->op), n->name ? n->name : "");
    }
    return FFU_OK;
}

/* ---- constant folding ------------------------------------------------------------------ */

int nn_reads_bounded(const nn_graph *g, const nn_node *n)
{
    for (int j = 0; j < n->ninputs; j++)
        if (n->inputs[j] >= 0 && (g->tensors[n->inputs[j]].flags & NN_T_BOUNDED)) return 1;
    return 0;
}

void nn_mark_bounded(nn_graph *g, const nn_node *n)
{
    const nn_op_def *d = nn_op_get(n->op);
    if (d && (d->flags & NN_OPF_DATA_SHAPE)) return; /* its infer decides */
    int b = nn_reads_bounded(g, n);
    for (int j = 0; j < n->noutputs; j++) {
        nn_tensor *o = nn_out(g, n, j);
        if (o) o->flags = b ? o->flags | NN_T_BOUNDED : o->flags & ~NN_T_BOUNDED;
    }
}

ffu_status nn_fold_node(nn_graph *g, int i, ffu_arena *arena, int *folded)
{
    *folded = 0;
    nn_node *n = &g->nodes[i];
    const nn_op_def *d = nn_op_get(n->op);
    if (!d || !d->infer || !d->run) return FFU_OK;
    /* Shape and Size read only their input's shape: known is enough (the kernel gets
     * a NULL data pointer) */
    int shape_only = n->op == NN_OP_SHAPE || n->op == NN_OP_SIZE;
    /* Downstream of a size known only at run time the node stays, but a small result
     * is computed at the bound anyway (a shadow: NN_T_CONST | NN_T_BOUNDED) so that the
     * shapes it feeds can be bounded (ir.h NN_T_BOUNDED). */
    int shadow = nn_reads_bounded(g, n);
    if (shadow && (d->flags & NN_OPF_DATA_SHAPE)) return FFU_OK;
    for (int j = 0; j < n->ninputs; j++) {
        int t = n->inputs[j];
        if (t < 0 || (g->tensors[t].flags & NN_T_CONST)) continue;
        if (!(shape_only && j == 0 && nn_shape_known(&g->tensors[t].shape))) return FFU_OK;
    }
    /* a fused PReLU slope is an extra input in all but name */
    if (n->act.kind == NN_ACT_PRELU && n->act.slope >= 0 &&
        !(g->tensors[n->act.slope].flags & NN_T_CONST))
        return FFU_OK;
    ffu_status st = d->infer(g, n);
    if (st < 0) return st;
    size_t total = 0;
    for (int j = 0; j < n->noutputs; j++) {
        const nn_tensor *o = nn_out(g, n, j);
        if (!o) continue;
        if (!nn_shape_known(&o->shape) || !ffu_dtype_size(o->dtype)) return FFU_OK;
        total += nn_tensor_bytes(o);
    }
    if (total > (shadow ? NN_MAX_SHADOW_BYTES : NN_MAX_FOLD_BYTES)) return FFU_OK;

    enum { SMALL = 16 };
    void *in_small[SMALL], *out_small[SMALL];
    void **in = n->ninputs <= SMALL ? in_small : malloc(sizeof(void *) * (size_t)n->ninputs);
    void **out = n->noutputs <= SMALL ? out_small : malloc(sizeof(void *) * (size_t)n->noutputs);
    size_t sbytes = d->scratch_bytes ? d->scratch_bytes(g, n) : 0;
    void *scratch = sbytes ? aligned_alloc(64, (sbytes + 63) & ~(size_t)63) : NULL;
    if (!in || !out || (sbytes && !scratch)) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory folding node '%s'", n->name);
        goto out;
    }
    for (int j = 0; j < n->ninputs; j++)
        in[j] = n->inputs[j] >= 0 && (g->tensors[n->inputs[j]].flags & NN_T_CONST)
                    ? g->tensors[n->inputs[j]].data
                    : NULL;
    for (int j = 0; j < n->noutputs; j++) {
        const nn_tensor *o = nn_out(g, n, j);
        size_t nb = o ? nn_tensor_bytes(o) : 0;
        out[j] = o ? ffu_arena_alloc_aligned(arena, nb ? nb : 1, 64) : NULL;
        if (o && !out[j]) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory folding node '%s'", n->name);
            goto out;
        }
    }
    if ((st = d->run(g, n, in, out, scratch)) < 0) goto out;
    for (int j = 0; j < n->noutputs; j++) {
        nn_tensor *o = nn_out(g, n, j);
        if (!o) continue;
        o->data = out[j];
        o->nbytes = nn_tensor_bytes(o);
        /* folded, a data-dependent size is known: the kernel wrote it (ir.h) */
        o->flags =
            shadow ? o->flags | NN_T_CONST | NN_T_BOUNDED : (o->flags | NN_T_CONST) & ~NN_T_BOUNDED;
        if (!shadow) o->producer = -1;
    }
    *folded = !shadow;
out:
    if (in != in_small) free(in);
    if (out != out_small) free(out);
    free(scratch);
    return st;
}

void nn_pick_if_branch(nn_graph *g, int i)
{
    nn_node *n = &g->nodes[i];
    if (n->op != NN_OP_WHERE || n->ninputs != 3 || !nn_attr_int(n, "_if", 0)) return;
    const nn_tensor *c = nn_in(g, n, 0);
    if (!c || !(c->flags & NN_T_CONST) || c->dtype != FFU_DTYPE_BOOL ||
        nn_shape_numel(&c->shape) != 1 || !c->data)
        return;
    n->inputs[0] = n->inputs[*(const uint8_t *)c->data ? 1 : 2];
    n->ninputs = 1;
    n->op = NN_OP_IDENTITY;
}

/* ---- graph surgery ----------------------------------------------------------------------- */

void nn_graph_compact(nn_graph *g, const unsigned char *keep)
{
    int k = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (keep[i]) g->nodes[k++] = g->nodes[i];
    g->nnodes = k;
    for (int t = 0; t < g->ntensors; t++) g->tensors[t].producer = -1;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < g->nodes[i].noutputs; j++) {
            int t = g->nodes[i].outputs[j];
            if (t >= 0 && !(g->tensors[t].flags & NN_T_CONST)) g->tensors[t].producer = i;
        }
}

static void replace_uses(nn_graph *g, int from, int to)
{
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] == from) n->inputs[j] = to;
    }
}

/* Drops Identity nodes, rewiring their consumers. */
static ffu_status nn_remove_identity(nn_graph *g)
{
    int nn = g->nnodes, removed = 0;
    unsigned char *keep = malloc((size_t)(nn ? nn : 1));
    if (!keep) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    memset(keep, 1, (size_t)(nn ? nn : 1));
    for (int i = 0; i < nn; i++) {
        nn_node *n = &g->nodes[i];
        if (n->op != NN_OP_IDENTITY || n->ninputs < 1 || n->inputs[0] < 0 || n->noutputs != 1)
            continue;
        int x = n->inputs[0], y = n->outputs[0];
        const nn_tensor *tx = &g->tensors[x], *ty = &g->tensors[y];
        if (!(ty->flags & NN_T_OUTPUT)) {
            /* readers of y read x instead */
            replace_uses(g, y, x);
        } else if (tx->producer >= 0 && !(tx->flags & (NN_T_OUTPUT | NN_T_INPUT | NN_T_CONST))) {
            /* y is a graph output: x's producer writes y directly */
            nn_node *p = &g->nodes[tx->producer];
            for (int j = 0; j < p->noutputs; j++)
                if (p->outputs[j] == x) p->outputs[j] = y;
            n->inputs[0] = -1;
            replace_uses(g, x, y);
        } else {
            continue;
        }
        keep[i] = 0;
        removed++;
    }
    if (removed) nn_graph_compact(g, keep);
    free(keep);
    return FFU_OK;
}

ffu_status nn_remove_dead(nn_graph *g)
{
    int nn = g->nnodes, nt = g->ntensors;
    unsigned char *keep = calloc((size_t)(nn ? nn : 1), 1);
    unsigned char *live = calloc((size_t)(nt ? nt : 1), 1);
    if (!keep || !live) {
        free(keep), free(live);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < g->noutputs; k++) live[g->outputs[k]] = 1;
    int removed = 0;
    for (int i = nn - 1; i >= 0; i--) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->noutputs && !keep[i]; j++) {
            int t = n->outputs[j];
            if (t >= 0 && live[t] && !(g->tensors[t].flags & NN_T_CONST)) keep[i] = 1;
        }
        if (!keep[i]) {
            removed++;
            continue;
        }
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] >= 0) live[n->inputs[j]] = 1;
        if (n->act.kind == NN_ACT_PRELU && n->act.slope >= 0) live[n->act.slope] = 1;
    }
    if (removed) nn_graph_compact(g, keep);
    free(keep);
    free(live);
    return FFU_OK;
}

/* ---- the load pipeline ---------------------------------------------------------------- */

static ffu_status fold_all(nn_graph *g)
{
    for (int i = 0; i < g->nnodes; i++) {
        int folded;
        nn_pick_if_branch(g, i);
        ffu_status st = nn_fold_node(g, i, g->arena, &folded);
        /* a node that cannot be evaluated yet is not an error at load time: the
         * session infers with real shapes and reports it there */
        if (st < 0 && st != FFU_ERR_NOMEM) {
            ffu_error_clear();
            continue;
        }
        if (st < 0) return st;
    }
    return FFU_OK;
}

ffu_status nn_passes_run(nn_graph *g)
{
    ffu_status st;
    if ((st = nn_graph_toposort(g)) < 0) return st;
    if ((st = nn_promote_f16(g)) < 0) return st;
    if ((st = nn_rewrite_integer_products(g)) < 0) return st;
    if ((st = nn_rewrite_patterns(g)) < 0) return st;
    if ((st = nn_graph_toposort(g)) < 0) return st;
    if ((st = nn_rewrite_transposes(g)) < 0) return st;
    if ((st = nn_graph_toposort(g)) < 0) return st;
    if ((st = nn_check_ops(g)) < 0) return st;
    if ((st = fold_all(g)) < 0) return st;
    if ((st = nn_remove_dead(g)) < 0) return st;
    if ((st = nn_fuse(g)) < 0) return st;
    if ((st = nn_graph_toposort(g)) < 0) return st;
    if ((st = nn_remove_identity(g)) < 0) return st;
    if ((st = nn_remove_dead(g)) < 0) return st;
    return nn_graph_toposort(g);
}

/* ---- FLOPs ------------------------------------------------------------------------------- */

/* In double: a hostile file's shapes can make the products overflow int64_t. */
static double node_flops(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *o = nn_out(g, n, 0), *a = nn_in(g, n, 0), *w = nn_in(g, n, 1);
    int64_t on = o ? nn_shape_numel(&o->shape) : -1;
    int64_t an = a ? nn_shape_numel(&a->shape) : -1;
    switch (n->op) {
    case NN_OP_CONSTANT: case NN_OP_IDENTITY: case NN_OP_SHAPE: case NN_OP_SIZE:
    case NN_OP_CONSTANT_OF_SHAPE: case NN_OP_CAST: case NN_OP_RANGE: case NN_OP_RESHAPE:
    case NN_OP_FLATTEN: case NN_OP_SQUEEZE: case NN_OP_UNSQUEEZE: case NN_OP_TRANSPOSE:
    case NN_OP_CONCAT: case NN_OP_SPLIT: case NN_OP_SLICE: case NN_OP_GATHER:
    case NN_OP_GATHER_ELEMENTS: case NN_OP_EXPAND: case NN_OP_TILE: case NN_OP_PAD:
    case NN_OP_DEPTH_TO_SPACE: case NN_OP_SPACE_TO_DEPTH:
        return 0;
    case NN_OP_CONV: {
        int64_t wn = w ? nn_shape_numel(&w->shape) : -1;
        if (on < 0 || wn < 0 || w->shape.rank < 1 || w->shape.d[0] <= 0) return -1;
        if (nn_attr_int(n, "_pool", 0) <= 1)
            return 2.0 * (double)on * (double)(wn / w->shape.d[0]);
        /* a fused 2x2 max pool (`_pool`, ir.h): the Conv's own outputs, then the pool's
         * four comparisons per output kept */
        int nd = a->shape.rank - 2;
        nn_window win;
        if (nd < 1 || w->shape.rank != nd + 2 ||
            nn_window_init(n, NN_WINDOW_CONV, nd, a->shape.d + 2, w->shape.d + 2, &win) < 0)
            return -1;
        double conv_out = (double)a->shape.d[0] * (double)w->shape.d[0] * (double)win.out[0] *
                          (double)win.out[1] * (double)win.out[2];
        return 2.0 * conv_out * (double)(wn / w->shape.d[0]) + 4.0 * (double)on;
    }
    case NN_OP_CONV_INTEGER: case NN_OP_QLINEAR_CONV: { /* weights: input 1 or 3 */
        const nn_tensor *qw = n->op == NN_OP_CONV_INTEGER ? w : nn_in(g, n, 3);
        int64_t wn = qw ? nn_shape_numel(&qw->shape) : -1;
        if (on < 0 || wn < 0 || qw->shape.rank < 1 || qw->shape.d[0] <= 0) return -1;
        return 2.0 * (double)on * (double)(wn / qw->shape.d[0]);
    }
    case NN_OP_CONV_TRANSPOSE: {
        int64_t wn = w ? nn_shape_numel(&w->shape) : -1;
        if (an < 0 || wn < 0 || w->shape.rank < 1 || w->shape.d[0] <= 0) return -1;
        return 2.0 * (double)an * (double)(wn / w->shape.d[0]);
    }
    case NN_OP_GEMM: {
        if (on < 0 || !a || a->shape.rank != 2) return -1;
        int64_t k = nn_attr_int(n, "transA", 0) ? a->shape.d[0] : a->shape.d[1];
        return 2.0 * (double)on * (double)k;
    }
    case NN_OP_MATMUL: case NN_OP_MATMUL_INTEGER: case NN_OP_QLINEAR_MATMUL:
        if (on < 0 || !a || a->shape.rank < 1) return -1;
        return 2.0 * (double)on * (double)a->shape.d[a->shape.rank - 1];
    case NN_OP_EINSUM: { /* per combination of indices: a product of the operands and a sum */
        nn_einsum e;
        if (nn_einsum_geom(g, n, &e) < 0 || e.out.rank < 0) {
            ffu_error_clear();
            return -1;
        }
        double p = e.nin;
        for (int l = 0; l < e.nlabels; l++)
            p *= (double)(e.size[l] < 0 ? 0 : e.size[l]);
        return p;
    }
    case NN_OP_MAX_POOL: case NN_OP_AVERAGE_POOL: {
        int cnt;
        const int64_t *k = nn_attr_ints(n, "kernel_shape", &cnt);
        double p = 1;
        for (int i = 0; i < cnt; i++) p *= (double)k[i];
        return on < 0 ? -1 : (double)on * p;
    }
    case NN_OP_GLOBAL_AVERAGE_POOL: case NN_OP_GLOBAL_MAX_POOL: case NN_OP_REDUCE_MEAN:
    case NN_OP_REDUCE_SUM: case NN_OP_REDUCE_MAX: case NN_OP_REDUCE_MIN: case NN_OP_REDUCE_PROD:
    case NN_OP_REDUCE_L1: case NN_OP_REDUCE_L2: case NN_OP_REDUCE_SUM_SQUARE: case NN_OP_ARGMAX:
    case NN_OP_ARGMIN:
        return (double)an;
    case NN_OP_BATCH_NORM: case NN_OP_INSTANCE_NORM: case NN_OP_LAYER_NORM:
        return on < 0 ? -1 : 2.0 * (double)on;
    default:
        return (double)on;
    }
}

int64_t nn_node_flops(const nn_graph *g, const nn_node *n)
{
    double f = node_flops(g, n);
    return f < 0 ? -1 : f >= 0x1p62 ? (int64_t)1 << 62 : (int64_t)f;
}
