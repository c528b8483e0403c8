/* Graph construction and queries: tensors, nodes, attributes, the name index, clone
 * and topological sort. See ir.h for the ownership rules. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static const char *const op_names[NN_OP_COUNT] = {
    [NN_OP_NONE] = "?",
#define NN_OP(e, name, def) [NN_OP_##e] = name,
#include "ops.def"
#undef NN_OP
};

const char *nn_op_name(nn_op op) { return op > 0 && op < NN_OP_COUNT ? op_names[op] : "?"; }

nn_op nn_op_from_name(const char *name)
{
    for (int op = 1; op < NN_OP_COUNT; op++)
        if (strcmp(op_names[op], name) == 0) return (nn_op)op;
    return NN_OP_NONE;
}

const nn_op_def *nn_op_get(nn_op op)
{
    static const nn_op_def *const defs[NN_OP_COUNT] = {
        [NN_OP_NONE] = NULL,
#define NN_OP(e, name, def) [NN_OP_##e] = &nn_op_def_##def,
#include "ops.def"
#undef NN_OP
    };
    return op > 0 && op < NN_OP_COUNT ? defs[op] : NULL;
}

ffu_status nn_node_error(const nn_node *n, ffu_status s, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ffu_error_set(s, "%s '%s': %s", nn_op_name(n->op), n->name ? n->name : "", msg);
}

/* ---- creation ------------------------------------------------------------------------- */

ffu_status nn_graph_create(nn_graph **out)
{
    *out = NULL;
    nn_graph *g = calloc(1, sizeof *g);
    if (!g) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = ffu_arena_create(&g->arena, 0);
    if (st < 0) {
        free(g);
        return st;
    }
    g->format = "";
    g->producer = "";
    *out = g;
    return FFU_OK;
}

void nn_graph_destroy(nn_graph *g)
{
    if (!g) return;
    free(g->tensors);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->name_slots);
    ffu_arena_destroy(g->arena);
    free(g);
}

/* Grows a malloc'd array of `size`-byte items to hold at least need items. */
static int grow(void **arr, int *cap, int need, size_t size)
{
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * size);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int index_insert(nn_graph *g, int t)
{
    if ((g->ntensors + 1) * 2 > g->cap_slots) {
        int nc = g->cap_slots ? g->cap_slots * 2 : 64;
        int *slots = malloc((size_t)nc * sizeof *slots);
        if (!slots) return -1;
        for (int i = 0; i < nc; i++) slots[i] = -1;
        free(g->name_slots);
        g->name_slots = slots;
        g->cap_slots = nc;
        for (int i = 0; i < g->ntensors; i++)
            if (i != t) index_insert(g, i);
    }
    uint32_t mask = (uint32_t)g->cap_slots - 1, h = hash_name(g->tensors[t].name) & mask;
    while (g->name_slots[h] >= 0) h = (h + 1) & mask;
    g->name_slots[h] = t;
    return 0;
}

int nn_graph_find(const nn_graph *g, const char *name)
{
    if (!g->cap_slots || !name) return -1;
    uint32_t mask = (uint32_t)g->cap_slots - 1, h = hash_name(name) & mask;
    for (int t; (t = g->name_slots[h]) >= 0; h = (h + 1) & mask)
        if (strcmp(g->tensors[t].name, name) == 0) return t;
    return -1;
}

int nn_graph_add_tensor(nn_graph *g, const char *name, ffu_dtype dtype, const nn_shape *shape)
{
    char fresh[32];
    if (!name || !*name) {
        snprintf(fresh, sizeof fresh, "_t%d", g->ntensors);
        name = fresh;
    }
    if (nn_graph_find(g, name) >= 0)
        return ffu_error_set(FFU_ERR_FORMAT, "tensor name '%s' is defined twice", name);
    if (grow((void **)&g->tensors, &g->cap_tensors, g->ntensors + 1, sizeof(nn_tensor)) < 0)
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    nn_tensor *t = &g->tensors[g->ntensors];
    memset(t, 0, sizeof *t);
    t->name = ffu_arena_strdup(g->arena, name);
    if (!t->name) return FFU_ERR_NOMEM;
    t->dtype = dtype;
    if (shape)
        t->shape = *shape;
    else
        t->shape.rank = -1;
    t->producer = -1;
    t->offset = -1;
    t->alias = -1;
    if (index_insert(g, g->ntensors) < 0) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    return g->ntensors++;
}

int nn_graph_add_const(nn_graph *g, const char *name, ffu_dtype dtype, const nn_shape *shape,
                       const void *data, size_t nbytes, int mode)
{
    int64_t numel = nn_shape_numel(shape);
    if (numel < 0 || (uint64_t)numel * ffu_dtype_size(dtype) != nbytes)
        return ffu_error_set(FFU_ERR_FORMAT, "constant '%s': %zu bytes do not match its shape",
                             name ? name : "", nbytes);
    int t = nn_graph_add_tensor(g, name, dtype, shape);
    if (t < 0) return t;
    void *p = (void *)data;
    if (mode == NN_COPY) {
        p = ffu_arena_alloc_aligned(g->arena, nbytes ? nbytes : 1, 64);
        if (!p) return FFU_ERR_NOMEM;
        if (nbytes) memcpy(p, data, nbytes);
    }
    g->tensors[t].data = p;
    g->tensors[t].nbytes = nbytes;
    g->tensors[t].flags |= NN_T_CONST;
    return t;
}

int nn_graph_add_node(nn_graph *g, nn_op op, const char *name, const int *inputs, int ninputs,
                      const int *outputs, int noutputs)
{
    if (ninputs < 0 || noutputs < 1)
        return ffu_error_set(FFU_ERR_INVALID, "node '%s' needs outputs", name ? name : "");
    for (int i = 0; i < ninputs; i++)
        if (inputs[i] < -1 || inputs[i] >= g->ntensors)
            return ffu_error_set(FFU_ERR_INVALID, "node '%s': bad input index", name ? name : "");
    for (int i = 0; i < noutputs; i++)
        if (outputs[i] < 0 || outputs[i] >= g->ntensors)
            return ffu_error_set(FFU_ERR_INVALID, "node '%s': bad output index", name ? name : "");
    if (grow((void **)&g->nodes, &g->cap_nodes, g->nnodes + 1, sizeof(nn_node)) < 0)
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    nn_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    char fresh[32];
    if (!name || !*name) {
        snprintf(fresh, sizeof fresh, "_n%d", g->nnodes);
        name = fresh;
    }
    n->name = ffu_arena_strdup(g->arena, name);
    n->inputs = ffu_arena_alloc(g->arena, sizeof(int) * (size_t)(ninputs ? ninputs : 1));
    n->outputs = ffu_arena_alloc(g->arena, sizeof(int) * (size_t)noutputs);
    if (!n->name || !n->inputs || !n->outputs) return FFU_ERR_NOMEM;
    if (ninputs) memcpy(n->inputs, inputs, sizeof(int) * (size_t)ninputs);
    memcpy(n->outputs, outputs, sizeof(int) * (size_t)noutputs);
    n->ninputs = ninputs;
    n->noutputs = noutputs;
    n->act.kind = NN_ACT_NONE;
    n->act.slope = -1;
    n->backend = -1;
    for (int i = 0; i < noutputs; i++) g->tensors[outputs[i]].producer = g->nnodes;
    return g->nnodes++;
}

static ffu_status add_index(int **arr, int *n, int *cap, int t)
{
    if (grow((void **)arr, cap, *n + 1, sizeof(int)) < 0)
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    (*arr)[(*n)++] = t;
    return FFU_OK;
}

ffu_status nn_graph_mark_input(nn_graph *g, int t)
{
    if (t < 0 || t >= g->ntensors) return FFU_ERR_INVALID;
    g->tensors[t].flags |= NN_T_INPUT;
    return add_index(&g->inputs, &g->ninputs, &g->cap_inputs, t);
}

ffu_status nn_graph_mark_output(nn_graph *g, int t)
{
    if (t < 0 || t >= g->ntensors) return FFU_ERR_INVALID;
    g->tensors[t].flags |= NN_T_OUTPUT;
    return add_index(&g->outputs, &g->noutputs, &g->cap_outputs, t);
}

/* ---- attributes ------------------------------------------------------------------------ */

static nn_attr *new_attr(nn_graph *g, int node, const char *name, nn_attr_type type)
{
    if (node < 0 || node >= g->nnodes) return NULL;
    nn_node *n = &g->nodes[node];
    nn_attr *a = NULL;
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) a = &n->attrs[i];
    if (!a) {
        /* attributes live in the arena: copy the array one larger */
        nn_attr *na = ffu_arena_alloc(g->arena, sizeof(nn_attr) * (size_t)(n->nattrs + 1));
        if (!na) return NULL;
        if (n->nattrs) memcpy(na, n->attrs, sizeof(nn_attr) * (size_t)n->nattrs);
        n->attrs = na;
        a = &na[n->nattrs++];
        a->name = ffu_arena_strdup(g->arena, name);
        if (!a->name) return NULL;
    }
    const char *keep = a->name;
    memset(a, 0, sizeof *a);
    a->name = keep;
    a->type = type;
    a->tensor = -1;
    return a;
}

ffu_status nn_node_set_int(nn_graph *g, int node, const char *name, int64_t v)
{
    nn_attr *a = new_attr(g, node, name, NN_ATTR_INT);
    if (!a) return FFU_ERR_NOMEM;
    a->i = v;
    return FFU_OK;
}

ffu_status nn_node_set_float(nn_graph *g, int node, const char *name, float v)
{
    nn_attr *a = new_attr(g, node, name, NN_ATTR_FLOAT);
    if (!a) return FFU_ERR_NOMEM;
    a->f = v;
    return FFU_OK;
}

ffu_status nn_node_set_string(nn_graph *g, int node, const char *name, const char *v)
{
    nn_attr *a = new_attr(g, node, name, NN_ATTR_STRING);
    if (!a || !(a->s = ffu_arena_strdup(g->arena, v ? v : ""))) return FFU_ERR_NOMEM;
    return FFU_OK;
}

ffu_status nn_node_set_ints(nn_graph *g, int node, const char *name, const int64_t *v, int n)
{
    nn_attr *a = new_attr(g, node, name, NN_ATTR_INTS);
    if (!a || n < 0) return FFU_ERR_NOMEM;
    a->ints = ffu_arena_alloc(g->arena, sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!a->ints) return FFU_ERR_NOMEM;
    if (n) memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
    a->n = n;
    return FFU_OK;
}

ffu_status nn_node_set_floats(nn_graph *g, int node, const char *name, const float *v, int n)
{
    nn_attr *a = new_attr(g, node, name, NN_ATTR_FLOATS);
    if (!a || n < 0) return FFU_ERR_NOMEM;
    a->floats = ffu_arena_alloc(g->arena, sizeof(float) * (size_t)(n ? n : 1));
    if (!a->floats) return FFU_ERR_NOMEM;
    if (n) memcpy(a->floats, v, sizeof(float) * (size_t)n);
    a->n = n;
    return FFU_OK;
}

ffu_status nn_node_set_strings(nn_graph *g, int node, const char *name, const char *const *v,
                               int n)
{
    nn_attr *a = new_attr(g, node, name, NN_ATTR_STRINGS);
    if (!a || n < 0) return FFU_ERR_NOMEM;
    a->strings = ffu_arena_alloc(g->arena, sizeof(char *) * (size_t)(n ? n : 1));
    if (!a->strings) return FFU_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        if (!(a->strings[i] = ffu_arena_strdup(g->arena, v[i] ? v[i] : ""))) return FFU_ERR_NOMEM;
    a->n = n;
    return FFU_OK;
}

ffu_status nn_node_set_tensor(nn_graph *g, int node, const char *name, int tensor)
{
    nn_attr *a = new_attr(g, node, name, NN_ATTR_TENSOR);
    if (!a) return FFU_ERR_NOMEM;
    a->tensor = tensor;
    return FFU_OK;
}

const nn_attr *nn_node_attr(const nn_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t nn_attr_int(const nn_node *n, const char *name, int64_t fallback)
{
    const nn_attr *a = nn_node_attr(n, name);
    return a && a->type == NN_ATTR_INT ? a->i : fallback;
}

float nn_attr_float(const nn_node *n, const char *name, float fallback)
{
    const nn_attr *a = nn_node_attr(n, name);
    if (a && a->type == NN_ATTR_FLOAT) return a->f;
    if (a && a->type == NN_ATTR_INT) return (float)a->i;
    return fallback;
}

const char *nn_attr_string(const nn_node *n, const char *name, const char *fallback)
{
    const nn_attr *a = nn_node_attr(n, name);
    return a && a->type == NN_ATTR_STRING ? a->s : fallback;
}

const int64_t *nn_attr_ints(const nn_node *n, const char *name, int *count)
{
    const nn_attr *a = nn_node_attr(n, name);
    if (a && a->type == NN_ATTR_INTS) {
        *count = a->n;
        return a->ints;
    }
    *count = 0;
    return NULL;
}

const float *nn_attr_floats(const nn_node *n, const char *name, int *count)
{
    const nn_attr *a = nn_node_attr(n, name);
    if (a && a->type == NN_ATTR_FLOATS) {
        *count = a->n;
        return a->floats;
    }
    *count = 0;
    return NULL;
}

nn_tensor *nn_in(const nn_graph *g, const nn_node *n, int i)
{
    if (i < 0 || i >= n->ninputs || n->inputs[i] < 0) return NULL;
    return &g->tensors[n->inputs[i]];
}

nn_tensor *nn_out(const nn_graph *g, const nn_node *n, int i)
{
    if (i < 0 || i >= n->noutputs || n->outputs[i] < 0) return NULL;
    return &g->tensors[n->outputs[i]];
}

/* ---- clone and order ------------------------------------------------------------------- */

ffu_status nn_graph_clone(const nn_graph *src, nn_graph **out)
{
    nn_graph *g;
    ffu_status st = nn_graph_create(&g);
    if (st < 0) return st;
    *out = NULL;
    for (int i = 0; i < src->ntensors; i++) {
        const nn_tensor *t = &src->tensors[i];
        int r = (t->flags & NN_T_CONST)
                    ? nn_graph_add_const(g, t->name, t->dtype, &t->shape, t->data, t->nbytes,
                                         NN_BORROW)
                    : nn_graph_add_tensor(g, t->name, t->dtype, &t->shape);
        if (r < 0) {
            st = r;
            goto fail_st;
        }
        g->tensors[r].flags = t->flags & ~(NN_T_INPUT | NN_T_OUTPUT);
        g->tensors[r].q8_scale = t->q8_scale, g->tensors[r].q8_min = t->q8_min;
    }
    for (int i = 0; i < src->nnodes; i++) {
        const nn_node *n = &src->nodes[i];
        int r = nn_graph_add_node(g, n->op, n->name, n->inputs, n->ninputs, n->outputs,
                                  n->noutputs);
        if (r < 0) {
            st = r;
            goto fail_st;
        }
        nn_node *c = &g->nodes[r];
        c->act = n->act;
        c->attrs = ffu_arena_alloc(g->arena, sizeof(nn_attr) * (size_t)(n->nattrs + 1));
        if (!c->attrs) goto nomem;
        /* attribute payloads are immutable: share them with the source */
        if (n->nattrs) memcpy(c->attrs, n->attrs, sizeof(nn_attr) * (size_t)n->nattrs);
        c->nattrs = n->nattrs;
    }
    for (int i = 0; i < src->ninputs; i++)
        if ((st = nn_graph_mark_input(g, src->inputs[i])) < 0) goto fail_st;
    for (int i = 0; i < src->noutputs; i++)
        if ((st = nn_graph_mark_output(g, src->outputs[i])) < 0) goto fail_st;
    g->format = src->format;
    g->producer = src->producer;
    g->opset = src->opset;
    *out = g;
    return FFU_OK;
nomem:
    st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
fail_st:
    nn_graph_destroy(g);
    return st;
}

ffu_status nn_graph_toposort(nn_graph *g)
{
    int nn = g->nnodes, nt = g->ntensors;
    if (nn <= 0) return FFU_OK;
    /* Kahn's algorithm over a consumer list in CSR form: O(nodes + edges), so a hostile
     * file with many nodes cannot make loading quadratic. */
    size_t edges = 0;
    for (int i = 0; i < nn; i++) edges += (size_t)g->nodes[i].ninputs;
    int *pending = calloc((size_t)nn, sizeof(int));  /* unresolved inputs per node */
    int *order = malloc((size_t)nn * sizeof(int));
    int *first = calloc((size_t)nt + 1, sizeof(int)); /* consumers of tensor t: */
    int *cons = malloc((edges ? edges : 1) * sizeof(int)); /* cons[first[t]..first[t+1]) */
    int *fill = calloc((size_t)nt, sizeof(int));
    nn_node *sorted = malloc((size_t)nn * sizeof(nn_node));
    ffu_status st = FFU_OK;
    if (!pending || !order || !first || !cons || !fill || !sorted) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < nn; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t < 0) continue;
            if (g->tensors[t].producer >= 0) {
                pending[i]++;
                first[t + 1]++;
            } else if (!(g->tensors[t].flags & (NN_T_INPUT | NN_T_CONST))) {
                st = nn_node_error(n, FFU_ERR_FORMAT, "input '%s' is never produced",
                                   g->tensors[t].name);
                goto out;
            }
        }
    }
    for (int t = 0; t < nt; t++) first[t + 1] += first[t];
    for (int i = 0; i < nn; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t >= 0 && g->tensors[t].producer >= 0) cons[first[t] + fill[t]++] = i;
        }
    }
    int done = 0;
    for (int i = 0; i < nn; i++)
        if (!pending[i]) order[done++] = i;
    for (int head = 0; head < done; head++) {
        const nn_node *n = &g->nodes[order[head]];
        for (int j = 0; j < n->noutputs; j++) {
            int t = n->outputs[j];
            for (int k = first[t]; k < first[t + 1]; k++)
                if (--pending[cons[k]] == 0) order[done++] = cons[k];
        }
    }
    if (done != nn) {
        st = ffu_error_set(FFU_ERR_FORMAT, "the graph has a cycle");
        goto out;
    }
    for (int i = 0; i < nn; i++) sorted[i] = g->nodes[order[i]];
    memcpy(g->nodes, sorted, (size_t)nn * sizeof(nn_node));
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].noutputs; j++)
            g->tensors[g->nodes[i].outputs[j]].producer = i;
out:
    free(pending), free(order), free(first), free(cons), free(fill), free(sorted);
    return st;
}
