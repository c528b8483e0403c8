/* Half-precision graphs run in f32: the reference kernels and the f32 oneDNN paths
 * compute in f32, so a model stored in f16/bf16 (MediaPipe's FaceLandmarker has f16
 * weights, activations and I/O) is promoted at load time. Constants are converted,
 * internal tensors retyped, Cast-to-half becomes Cast-to-f32, and the graph's own
 * f16 inputs and outputs keep their declared type through Cast nodes at the edges,
 * so callers still feed and read what the model declares. */
#include <stdio.h>
#include <string.h>

#include "nn_internal.h"

static int is_half(ffu_dtype t) { return t == FFU_DTYPE_F16 || t == FFU_DTYPE_BF16; }

static ffu_status convert_const(nn_graph *g, int t)
{
    nn_tensor *c = &g->tensors[t];
    size_t n = c->nbytes / ffu_dtype_size(c->dtype);
    float *f = ffu_arena_alloc_aligned(g->arena, n ? n * sizeof(float) : 1, 64);
    if (!f) return ffu_error_set(FFU_ERR_NOMEM, "out of memory promoting '%s' to f32", c->name);
    ffu_status st = nn_convert(c->data, c->dtype, f, FFU_DTYPE_F32, n);
    if (st < 0) return st;
    c = &g->tensors[t];
    c->data = f;
    c->nbytes = n * sizeof(float);
    c->dtype = FFU_DTYPE_F32;
    return FFU_OK;
}

/* Adds Cast(src -> dst tensor) with "to" = dtype. */
static ffu_status add_cast(nn_graph *g, int src, int dst, ffu_dtype to)
{
    char name[300];
    snprintf(name, sizeof name, "%s/promote_cast", g->tensors[dst].name);
    int n = nn_graph_add_node(g, NN_OP_CAST, name, &src, 1, &dst, 1);
    if (n < 0) return (ffu_status)n;
    return nn_node_set_int(g, n, "to", to);
}

ffu_status nn_promote_f16(nn_graph *g)
{
    int ntensors = g->ntensors, nnodes = g->nnodes, changed = 0;
    ffu_status st;
    for (int t = 0; t < ntensors; t++) {
        if (!is_half(g->tensors[t].dtype)) continue;
        changed = 1;
        int flags = g->tensors[t].flags;
        if (flags & NN_T_CONST) {
            if ((st = convert_const(g, t)) < 0) return st;
        } else if (flags & NN_T_INPUT) {
            /* consumers read an f32 copy made by a Cast right after the input; an input
             * nobody reads stays as it is */
            int used = 0;
            for (int i = 0; i < nnodes && !used; i++)
                for (int j = 0; j < g->nodes[i].ninputs; j++) used |= g->nodes[i].inputs[j] == t;
            if (!used) continue;
            char name[300];
            snprintf(name, sizeof name, "%s/f32", g->tensors[t].name);
            nn_shape shape = g->tensors[t].shape;
            int f = nn_graph_add_tensor(g, name, FFU_DTYPE_F32, &shape);
            if (f < 0) return (ffu_status)f;
            for (int i = 0; i < nnodes; i++)
                for (int j = 0; j < g->nodes[i].ninputs; j++)
                    if (g->nodes[i].inputs[j] == t) g->nodes[i].inputs[j] = f;
            for (int o = 0; o < g->noutputs; o++)
                if (g->outputs[o] == t) return FFU_OK; /* input passed straight out: leave */
            if ((st = add_cast(g, t, f, FFU_DTYPE_F32)) < 0) return st;
        } else if (flags & NN_T_OUTPUT) {
            /* the producer writes an f32 tensor; a Cast gives the declared type back */
            char name[300];
            snprintf(name, sizeof name, "%s/f32", g->tensors[t].name);
            nn_shape shape = g->tensors[t].shape;
            ffu_dtype declared = g->tensors[t].dtype;
            int f = nn_graph_add_tensor(g, name, FFU_DTYPE_F32, &shape);
            if (f < 0) return (ffu_status)f;
            int p = g->tensors[t].producer;
            if (p >= 0) {
                for (int j = 0; j < g->nodes[p].noutputs; j++)
                    if (g->nodes[p].outputs[j] == t) g->nodes[p].outputs[j] = f;
                g->tensors[f].producer = p;
            }
            for (int i = 0; i < nnodes; i++)
                for (int j = 0; j < g->nodes[i].ninputs; j++)
                    if (g->nodes[i].inputs[j] == t) g->nodes[i].inputs[j] = f;
            if ((st = add_cast(g, f, t, declared)) < 0) return st;
        } else {
            g->tensors[t].dtype = FFU_DTYPE_F32;
        }
    }
    if (!changed) return FFU_OK;
    /* Casts (and EyeLike's output type) inside the graph now target f32; ConstantOfShape
     * values were constants. */
    for (int i = 0; i < nnodes; i++) {
        nn_node *n = &g->nodes[i];
        const char *attr = n->op == NN_OP_CAST ? "to" : n->op == NN_OP_EYE_LIKE ? "dtype" : NULL;
        if (!attr) continue;
        int64_t to = nn_attr_int(n, attr, 0);
        const nn_tensor *o = nn_out(g, n, 0);
        if (is_half((ffu_dtype)to) && o && !(o->flags & NN_T_OUTPUT) &&
            (st = nn_node_set_int(g, i, attr, FFU_DTYPE_F32)) < 0)
            return st;
    }
    return nn_graph_toposort(g);
}
