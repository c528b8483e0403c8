/* Test helper for graph-level tests of the engine: runs a graph node by node with the
 * op definitions' shape inference and reference kernels (nn_op_get(op)->infer/->run),
 * without the session, so loaders and rewrite passes can be checked numerically while
 * the runtime is built separately. It marks every computed tensor constant as it goes
 * (run it on a throwaway clone). Header only. */
#ifndef FFU_TEST_NN_RUN_H
#define FFU_TEST_NN_RUN_H

#include <stdlib.h>
#include <string.h>

#include "nn/ir.h"

typedef struct test_nn_run {
    void **buf; /* per tensor: malloc'd activation (NULL for constants / unused) */
    int n;
    int failed_node; /* node whose infer or run failed, -1 */
} test_nn_run;

static inline void test_nn_run_free(test_nn_run *r)
{
    for (int i = 0; r->buf && i < r->n; i++) free(r->buf[i]);
    free(r->buf);
    r->buf = NULL;
    r->n = 0;
}

/* The name of the first op of g without an infer or run function, or NULL. */
static inline const char *test_nn_missing_op(const nn_graph *g)
{
    for (int i = 0; i < g->nnodes; i++) {
        const nn_op_def *d = nn_op_get(g->nodes[i].op);
        if (!d || !d->infer || !d->run) return nn_op_name(g->nodes[i].op);
    }
    return NULL;
}

/* 1 if every node of g has an infer and a run function. */
static inline int test_nn_runnable(const nn_graph *g) { return test_nn_missing_op(g) == NULL; }

/* Runs g: input k of the graph gets the shape in_shapes[k] (f32) and the data
 * inputs[k]. Returns FFU_OK, FFU_ERR_UNSUPPORTED when an op has no kernel yet, or the
 * kernel's error. Activations stay in r (test_nn_run_free). */
static inline ffu_status test_nn_run_graph(nn_graph *g, const nn_shape *in_shapes,
                                           const float *const *inputs, test_nn_run *r)
{
    memset(r, 0, sizeof *r);
    r->failed_node = -1;
    if (!test_nn_runnable(g)) return FFU_ERR_UNSUPPORTED;
    r->n = g->ntensors;
    r->buf = calloc((size_t)r->n, sizeof(void *));
    if (!r->buf) return FFU_ERR_NOMEM;
    for (int k = 0; k < g->ninputs; k++) {
        nn_tensor *t = &g->tensors[g->inputs[k]];
        if (t->flags & NN_T_CONST) continue;
        t->shape = in_shapes[k];
        t->dtype = FFU_DTYPE_F32;
        size_t nb = (size_t)nn_shape_numel(&t->shape) * 4;
        r->buf[g->inputs[k]] = malloc(nb ? nb : 1);
        if (!r->buf[g->inputs[k]]) return FFU_ERR_NOMEM;
        memcpy(r->buf[g->inputs[k]], inputs[k], nb);
    }
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        const nn_op_def *d = nn_op_get(n->op);
        r->failed_node = i;
        ffu_status st = d->infer(g, n);
        if (st < 0) return st;
        void *in[64], *out[16];
        if (n->ninputs > 64 || n->noutputs > 16) return FFU_ERR_UNSUPPORTED;
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            in[j] = t < 0 ? NULL : (g->tensors[t].flags & NN_T_CONST) ? g->tensors[t].data
                                                                      : r->buf[t];
        }
        for (int j = 0; j < n->noutputs; j++) {
            nn_tensor *o = &g->tensors[n->outputs[j]];
            int64_t numel = nn_shape_numel(&o->shape);
            if (numel < 0) return ffu_error_set(FFU_ERR_FORMAT, "output shape not inferred");
            size_t nb = (size_t)numel * ffu_dtype_size(o->dtype);
            free(r->buf[n->outputs[j]]);
            out[j] = r->buf[n->outputs[j]] = malloc(nb ? nb : 1);
            if (!out[j]) return FFU_ERR_NOMEM;
        }
        size_t sb = d->scratch_bytes ? d->scratch_bytes(g, n) : 0;
        void *scratch = sb ? malloc(sb) : NULL;
        st = d->run(g, n, in, out, scratch);
        free(scratch);
        if (st < 0) return st;
        /* computed values become constants, so the shape inference of later nodes can
         * read shape-like data (Resize sizes, Reshape shapes), as the session's
         * constant folding would */
        for (int j = 0; j < n->noutputs; j++) {
            nn_tensor *o = &g->tensors[n->outputs[j]];
            o->flags |= NN_T_CONST;
            o->data = out[j];
            o->nbytes = (size_t)nn_shape_numel(&o->shape) * ffu_dtype_size(o->dtype);
        }
    }
    r->failed_node = -1;
    return FFU_OK;
}

/* Data of graph output k after test_nn_run_graph (constants: their data). */
static inline const float *test_nn_output(const nn_graph *g, const test_nn_run *r, int k)
{
    int t = g->outputs[k];
    return (g->tensors[t].flags & NN_T_CONST) ? g->tensors[t].data : r->buf[t];
}

static inline int test_nn_count_op(const nn_graph *g, nn_op op)
{
    int c = 0;
    for (int i = 0; i < g->nnodes; i++) c += g->nodes[i].op == op;
    return c;
}

/* Reads a whole file (malloc'd, NUL-terminated); NULL if it cannot. */
static inline char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        p[n] = 0;
        *len = (size_t)n;
    }
    return p;
}

/* The model cache: $FFU_MODEL_DIR, else ~/.cache/facefuse/models. */
static inline const char *test_model_dir(char *buf, size_t len)
{
    const char *env = getenv("FFU_MODEL_DIR");
    if (env && *env) snprintf(buf, len, "%s", env);
    else snprintf(buf, len, "%s/.cache/facefuse/models", getenv("HOME") ? getenv("HOME") : ".");
    return buf;
}

#endif
