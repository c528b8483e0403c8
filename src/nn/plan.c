/* The memory planner: every activation of a specialised graph gets a byte offset in
 * one arena, decided once per input shape so that running the graph allocates
 * nothing. The approach is ggml-alloc's: walk the nodes in execution order, give each
 * output the best-fitting free block, and return a block to the free list after its
 * last reader ran. On top of that:
 *   - views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, and nodes whose backend
 *     stores the output as input 0's bytes: nn_node.view) alias their input: no copy,
 *     no node run, and the input's lifetime grows to cover the view's readers;
 *   - elementwise ops write over an input that dies at that node (same dtype and size,
 *     not a graph input, output or constant), and so does a Conv over its fused
 *     residual input (ir.h);
 *   - graph inputs and outputs get dedicated regions, so the caller may fill inputs
 *     before any run and outputs survive until the next run;
 *   - a backend may ask at prepare for a value to live longer than its readers say
 *     (keep_to: a pipeline reads it at a later node) or for none at all (unbacked:
 *     a pipeline keeps it in its own rows; ir.h);
 *   - each memory space (host, a device backend's memory; backend.h) has its own
 *     arena and free list, and nn_plan_spaces inserts the copies between spaces
 *     before memory is planned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

#define ALIGN 64

static size_t align_up(size_t v) { return (v + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

size_t nn_tensor_bytes(const nn_tensor *t)
{
    int64_t n = nn_shape_numel(&t->shape);
    if (n < 0) return 0;
    return (size_t)n * ffu_dtype_size(t->dtype);
}

/* ---- the free list ------------------------------------------------------------------ */

typedef struct block {
    size_t off, size;
} block;

typedef struct freelist {
    block *b;
    int n, cap;
    size_t end; /* high-water mark: the arena size so far */
} freelist;

static size_t fl_alloc(freelist *fl, size_t size)
{
    int best = -1;
    for (int i = 0; i < fl->n; i++)
        if (fl->b[i].size >= size && (best < 0 || fl->b[i].size < fl->b[best].size)) best = i;
    if (best >= 0) {
        size_t off = fl->b[best].off;
        fl->b[best].off += size;
        fl->b[best].size -= size;
        if (!fl->b[best].size) {
            memmove(&fl->b[best], &fl->b[best + 1], sizeof(block) * (size_t)(fl->n - best - 1));
            fl->n--;
        }
        return off;
    }
    /* nothing fits: grow the arena, starting inside a free block at its end if any */
    if (fl->n && fl->b[fl->n - 1].off + fl->b[fl->n - 1].size == fl->end) {
        size_t off = fl->b[fl->n - 1].off;
        fl->n--;
        fl->end = off + size;
        return off;
    }
    size_t off = fl->end;
    fl->end += size;
    return off;
}

/* Returns a block; keeps the list sorted by offset and merges neighbours. */
static int fl_free(freelist *fl, size_t off, size_t size)
{
    int i = 0;
    while (i < fl->n && fl->b[i].off < off) i++;
    int merge_prev = i > 0 && fl->b[i - 1].off + fl->b[i - 1].size == off;
    int merge_next = i < fl->n && off + size == fl->b[i].off;
    if (merge_prev && merge_next) {
        fl->b[i - 1].size += size + fl->b[i].size;
        memmove(&fl->b[i], &fl->b[i + 1], sizeof(block) * (size_t)(fl->n - i - 1));
        fl->n--;
    } else if (merge_prev) {
        fl->b[i - 1].size += size;
    } else if (merge_next) {
        fl->b[i].off = off;
        fl->b[i].size += size;
    } else {
        if (fl->n == fl->cap) {
            int nc = fl->cap ? fl->cap * 2 : 64;
            block *nb = realloc(fl->b, sizeof(block) * (size_t)nc);
            if (!nb) return -1;
            fl->b = nb;
            fl->cap = nc;
        }
        memmove(&fl->b[i + 1], &fl->b[i], sizeof(block) * (size_t)(fl->n - i));
        fl->b[i].off = off;
        fl->b[i].size = size;
        fl->n++;
    }
    return 0;
}

/* ---- planning ------------------------------------------------------------------------ */

static int op_flags(nn_op op)
{
    const nn_op_def *d = nn_op_get(op);
    return d ? d->flags : 0;
}

int nn_plan_node_is_view(const nn_graph *g, const nn_node *n)
{
    if (!((op_flags(n->op) & NN_OPF_VIEW) || n->view) || n->ninputs < 1 || n->inputs[0] < 0)
        return 0;
    const nn_tensor *o = nn_out(g, n, 0);
    if (!o || o->alias < 0) return 0;
    const nn_tensor *in = &g->tensors[n->inputs[0]];
    int root = in->alias >= 0 ? in->alias : n->inputs[0];
    return o->alias == root;
}

static int needs_memory(const nn_tensor *t)
{
    return !(t->flags & NN_T_CONST) && !t->unbacked &&
           (t->producer >= 0 || (t->flags & NN_T_INPUT));
}

/* The input a node adds to its output element by element, which its kernels read
 * before they write that element (ir.h): a Conv's residual, a Resize's fused Add
 * operand; -1 for none. */
static int fused_addend(const nn_node *n)
{
    if (n->op == NN_OP_CONV && n->ninputs > 3) return n->inputs[3];
    if (n->op == NN_OP_RESIZE && n->ninputs > 4) return n->inputs[4];
    return -1;
}

ffu_status nn_plan_memory(nn_graph *g, int allow_alias, nn_plan_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    int nt = g->ntensors, nn = g->nnodes;
    int *last = malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    unsigned char *done = calloc((size_t)(nt ? nt : 1), 1);
    freelist fls[NN_SPACE_MAX];
    memset(fls, 0, sizeof fls);
    ffu_status st = FFU_OK;
    if (!last || !done) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory planning %d tensors", nt);
        goto out;
    }
    for (int t = 0; t < nt; t++) {
        nn_tensor *x = &g->tensors[t];
        x->offset = -1;
        x->alias = -1;
        last[t] = x->producer > x->keep_to ? x->producer : x->keep_to;
        if (x->space < 0 || x->space >= NN_SPACE_MAX) {
            st = ffu_error_set(FFU_ERR_INTERNAL, "tensor '%s' is in memory space %d", x->name,
                               x->space);
            goto out;
        }
        if (needs_memory(x)) {
            if (!nn_shape_known(&x->shape)) {
                st = ffu_error_set(FFU_ERR_INTERNAL, "tensor '%s' has no known shape to plan",
                                   x->name);
                goto out;
            }
            x->nbytes = nn_tensor_bytes(x);
        }
    }
    for (int i = 0; i < nn; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] >= 0 && last[n->inputs[j]] < i) last[n->inputs[j]] = i;
    }

    /* views and in-place: decide aliases in execution order; a root's lifetime grows
     * to cover its aliases' readers */
    for (int i = 0; allow_alias && i < nn; i++) {
        const nn_node *n = &g->nodes[i];
        int fl_op = op_flags(n->op);
        int o = n->outputs[0];
        nn_tensor *out = &g->tensors[o];
        if (out->flags & (NN_T_OUTPUT | NN_T_INPUT | NN_T_CONST) || !needs_memory(out)) continue;
        if ((fl_op & NN_OPF_VIEW) || n->view) {
            int in = n->ninputs > 0 ? n->inputs[0] : -1;
            if (in < 0 || !needs_memory(&g->tensors[in])) continue;
            if (nn_tensor_bytes(&g->tensors[in]) != out->nbytes) continue;
            if (g->tensors[in].space != out->space) continue;
            int root = g->tensors[in].alias >= 0 ? g->tensors[in].alias : in;
            out->alias = root;
            if (last[o] > last[root]) last[root] = last[o];
            stats->nviews++;
        } else if (fused_addend(n) >= 0) {
            /* a Conv with a fused residual, or a Resize with a fused Add (ir.h), writes
             * over the addend when it dies here: the sum then needs no copy. Not when
             * the data input shares that memory (the node would read what it
             * overwrites). */
            int in = fused_addend(n);
            const nn_tensor *x = &g->tensors[in];
            int root = x->alias >= 0 ? x->alias : in;
            const nn_tensor *r = &g->tensors[root];
            int x0 = n->inputs[0] >= 0 && g->tensors[n->inputs[0]].alias >= 0
                         ? g->tensors[n->inputs[0]].alias
                         : n->inputs[0];
            if (needs_memory(x) && !(r->flags & (NN_T_INPUT | NN_T_OUTPUT)) && x0 != root &&
                !x->keep_to && !r->keep_to &&
                r->space == out->space &&
                x->dtype == out->dtype && x->nbytes == out->nbytes && last[root] == i) {
                out->alias = root;
                last[root] = last[o] > i ? last[o] : i;
                stats->ninplace++;
            }
        } else if (fl_op & NN_OPF_ELEMENTWISE) {
            /* variadic ops (Sum, Mean, Max, Min) fold their inputs into the output one
             * at a time (ref and cuda alike): from the third input on, an input that
             * shared the output's memory would be read after the fold overwrote it */
            for (int j = 0; j < n->ninputs && j < 2; j++) {
                int in = n->inputs[j];
                if (in < 0) continue;
                const nn_tensor *x = &g->tensors[in];
                int root = x->alias >= 0 ? x->alias : in;
                const nn_tensor *r = &g->tensors[root];
                if (!needs_memory(x) || (r->flags & (NN_T_INPUT | NN_T_OUTPUT))) continue;
                if (x->keep_to || r->keep_to) continue; /* a pipeline reads it later */
                if (x->dtype != out->dtype || x->nbytes != out->nbytes) continue;
                if (r->space != out->space) continue;
                if (last[root] != i) continue; /* someone reads it later */
                out->alias = root;
                last[root] = last[o] > i ? last[o] : i;
                stats->ninplace++;
                break;
            }
        }
    }

    /* dedicated regions first: inputs, then outputs (a tensor that is both gets one) */
    for (int pass = 0; pass < 2; pass++) {
        int cnt = pass ? g->noutputs : g->ninputs;
        const int *list = pass ? g->outputs : g->inputs;
        for (int k = 0; k < cnt; k++) {
            nn_tensor *x = &g->tensors[list[k]];
            if (!needs_memory(x) || x->offset >= 0) continue;
            freelist *fl = &fls[x->space];
            x->offset = (int64_t)fl->end;
            fl->end += align_up(x->nbytes ? x->nbytes : 1);
            done[list[k]] = 1;
            stats->ntensors++;
            stats->naive_bytes += x->nbytes;
        }
    }
    for (int sp = 0; sp < NN_SPACE_MAX; sp++) stats->io_bytes += fls[sp].end;

    for (int i = 0; i < nn; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->noutputs; j++) {
            int o = n->outputs[j];
            nn_tensor *x = &g->tensors[o];
            if (!needs_memory(x) || x->offset >= 0 || x->alias >= 0) continue;
            x->offset = (int64_t)fl_alloc(&fls[x->space], align_up(x->nbytes ? x->nbytes : 1));
            stats->ntensors++;
            stats->naive_bytes += x->nbytes;
        }
        for (int j = 0; j < n->noutputs; j++) {
            nn_tensor *x = &g->tensors[n->outputs[j]];
            if (x->alias >= 0) {
                x->offset = g->tensors[x->alias].offset;
                stats->naive_bytes += x->nbytes;
            }
        }
        /* blocks whose root's last reader is this node go back to the free list */
        for (int pass = 0; pass < 2; pass++) {
            int cnt = pass ? n->noutputs : n->ninputs;
            const int *list = pass ? n->outputs : n->inputs;
            for (int j = 0; j < cnt; j++) {
                int t = list[j];
                if (t < 0) continue;
                int root = g->tensors[t].alias >= 0 ? g->tensors[t].alias : t;
                nn_tensor *r = &g->tensors[root];
                if (done[root] || !needs_memory(r) || r->offset < 0 || last[root] > i) continue;
                done[root] = 1;
                if (fl_free(&fls[r->space], (size_t)r->offset,
                            align_up(r->nbytes ? r->nbytes : 1)) < 0) {
                    st = ffu_error_set(FFU_ERR_NOMEM, "out of memory planning");
                    goto out;
                }
            }
        }
    }
    for (int sp = 0; sp < NN_SPACE_MAX; sp++) {
        stats->space_bytes[sp] = fls[sp].end;
        stats->arena_bytes += fls[sp].end;
    }
out:
    free(last);
    free(done);
    for (int sp = 0; sp < NN_SPACE_MAX; sp++) free(fls[sp].b);
    return st;
}

/* ---- memory spaces --------------------------------------------------------------------- */

/* A copy node to place next to an original node of the graph. */
typedef struct copy_at {
    int node;   /* index of the copy node (appended) */
    int anchor; /* original node it goes next to */
    int after;  /* 1: after the anchor (an output's copy), 0: before (a reader's) */
} copy_at;

/* A fresh tensor like t (dtype, shape) in space sp; its index or < 0. */
static int shadow_tensor(nn_graph *g, int t, int sp)
{
    char name[160];
    snprintf(name, sizeof name, "%.120s@space%d", g->tensors[t].name, sp);
    int r = nn_graph_find(g, name) < 0 ? nn_graph_add_tensor(g, name, FFU_DTYPE_UNDEFINED, NULL)
                                       : nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    if (r < 0) return r;
    nn_tensor *x = &g->tensors[r], *src = &g->tensors[t]; /* re-read: add may realloc */
    x->dtype = src->dtype;
    x->shape = src->shape;
    x->space = sp;
    return r;
}

static int add_copy(nn_graph *g, int from, int to, copy_at **list, int *n, int *cap, int anchor,
                    int after)
{
    char name[160];
    snprintf(name, sizeof name, "copy:%.120s", g->tensors[to].name);
    int node = nn_graph_add_node(g, NN_OP_MEM_COPY, name, &from, 1, &to, 1);
    if (node < 0) return node;
    g->nodes[node].backend = -1;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        copy_at *nl = realloc(*list, sizeof(copy_at) * (size_t)nc);
        if (!nl) return ffu_error_set(FFU_ERR_NOMEM, "out of memory placing copies");
        *list = nl;
        *cap = nc;
    }
    (*list)[(*n)++] = (copy_at){node, anchor, after};
    return node;
}

ffu_status nn_plan_spaces(nn_graph *g, const int *node_space, int io_space, int *ncopies)
{
    *ncopies = 0;
    int nt0 = g->ntensors, nn0 = g->nnodes;
    ffu_status st = FFU_OK;
    /* var[t * NN_SPACE_MAX + sp]: the tensor holding t's value in space sp, or -1 */
    int *var = malloc(sizeof(int) * (size_t)(nt0 ? nt0 : 1) * NN_SPACE_MAX);
    int *home = malloc(sizeof(int) * (size_t)(nt0 ? nt0 : 1)); /* where t's value is made */
    copy_at *cl = NULL;
    int ncl = 0, capcl = 0;
    nn_node *order = NULL;
    if (!var || !home) goto nomem;
    for (int i = 0; i < nt0 * NN_SPACE_MAX; i++) var[i] = -1;
    for (int i = 0; i < nn0; i++)
        if (node_space[i] < 0 || node_space[i] >= NN_SPACE_MAX) {
            st = ffu_error_set(FFU_ERR_INTERNAL, "node %d is in memory space %d", i, node_space[i]);
            goto out;
        }
    /* where each value is produced; outputs made elsewhere get a shadow + a copy */
    for (int t = 0; t < nt0; t++) {
        nn_tensor *x = &g->tensors[t];
        home[t] = -1;
        if (x->flags & NN_T_CONST) continue;
        int p = x->producer;
        if (p < 0 && !(x->flags & NN_T_INPUT)) continue; /* never written: nothing to do */
        int sp = p >= 0 ? node_space[p] : io_space;
        home[t] = sp;
        x->space = sp;
        var[t * NN_SPACE_MAX + sp] = t;
        if (p >= 0 && (x->flags & NN_T_OUTPUT) && sp != io_space) {
            int sh = shadow_tensor(g, t, sp);
            if (sh < 0) {
                st = sh;
                goto out;
            }
            nn_node *pn = &g->nodes[p];
            for (int j = 0; j < pn->noutputs; j++)
                if (pn->outputs[j] == t) pn->outputs[j] = sh;
            g->tensors[sh].producer = p;
            g->tensors[t].space = io_space;
            var[t * NN_SPACE_MAX + sp] = sh;
            var[t * NN_SPACE_MAX + io_space] = t;
            int c = add_copy(g, sh, t, &cl, &ncl, &capcl, p, 1);
            if (c < 0) {
                st = c;
                goto out;
            }
        }
    }
    /* every reader in another space reads a copy made right before the first of them */
    for (int i = 0; i < nn0; i++) {
        int sp = node_space[i];
        for (int j = 0; j < g->nodes[i].ninputs; j++) {
            int t = g->nodes[i].inputs[j];
            if (t < 0 || t >= nt0 || home[t] < 0) continue;
            int *v = &var[t * NN_SPACE_MAX + sp];
            if (*v < 0) {
                int src = var[t * NN_SPACE_MAX + home[t]];
                int sh = shadow_tensor(g, t, sp);
                if (sh < 0) {
                    st = sh;
                    goto out;
                }
                int c = add_copy(g, src, sh, &cl, &ncl, &capcl, i, 0);
                if (c < 0) {
                    st = c;
                    goto out;
                }
                *v = sh;
            }
            g->nodes[i].inputs[j] = *v;
        }
    }
    if (!ncl) goto out;
    /* the new order: copies next to their anchors (in the order they were made) */
    order = malloc(sizeof(nn_node) * (size_t)g->nnodes);
    if (!order) goto nomem;
    int k = 0;
    for (int i = 0; i < nn0; i++) {
        for (int c = 0; c < ncl; c++)
            if (cl[c].anchor == i && !cl[c].after) order[k++] = g->nodes[cl[c].node];
        order[k++] = g->nodes[i];
        for (int c = 0; c < ncl; c++)
            if (cl[c].anchor == i && cl[c].after) order[k++] = g->nodes[cl[c].node];
    }
    memcpy(g->nodes, order, sizeof(nn_node) * (size_t)k);
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].noutputs; j++)
            if (g->nodes[i].outputs[j] >= 0) g->tensors[g->nodes[i].outputs[j]].producer = i;
    *ncopies = ncl;
    goto out;
nomem:
    st = ffu_error_set(FFU_ERR_NOMEM, "out of memory placing copies between memory spaces");
out:
    free(var);
    free(home);
    free(cl);
    free(order);
    return st;
}
