/* A tiny harness shared by the reference-kernel tests: one-node graphs built by hand,
 * run through the op's own infer + run with malloc'd outputs, and a seeded filler. */
#ifndef FFU_TEST_NN_OPS_H
#define FFU_TEST_NN_OPS_H

#include "nn/ir.h"
#include "test.h"

typedef struct tg {
    nn_graph *g;
    int node;
    void *out[4];
} tg;

static inline nn_shape shp(int rank, const int64_t *d)
{
    nn_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++)
        s.d[i] = d[i];
    return s;
}

#define DIMS(...)                                                                                  \
    (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]) { __VA_ARGS__ }
#define SCALAR 0, NULL

static inline int tin(nn_graph *g, ffu_dtype t, int rank, const int64_t *d)
{
    nn_shape s = shp(rank, d);
    return nn_graph_add_tensor(g, "", t, &s);
}

static inline int tconst(nn_graph *g, ffu_dtype t, int rank, const int64_t *d, const void *data)
{
    nn_shape s = shp(rank, d);
    return nn_graph_add_const(g, "", t, &s, data, (size_t)nn_shape_numel(&s) * ffu_dtype_size(t),
                              NN_COPY);
}

static inline int tnode(nn_graph *g, nn_op op, const int *ins, int nin, int nout)
{
    int outs[4];
    for (int i = 0; i < nout; i++)
        outs[i] = nn_graph_add_tensor(g, "", FFU_DTYPE_UNDEFINED, NULL);
    return nn_graph_add_node(g, op, "", ins, nin, outs, nout);
}

static nn_tensor *tout(const tg *t, int i) { return nn_out(t->g, &t->g->nodes[t->node], i); }

/* Infers, allocates outputs, runs. data[i] feeds non-constant input i. */
static inline ffu_status trun(tg *t, void *const *data)
{
    nn_node *n = &t->g->nodes[t->node];
    const nn_op_def *d = nn_op_get(n->op);
    if (!d || !d->infer || !d->run) return FFU_ERR_UNSUPPORTED;
    ffu_status st = d->infer(t->g, n);
    if (st < 0) return st;
    void *in[8] = {0};
    for (int i = 0; i < n->ninputs; i++) {
        nn_tensor *x = nn_in(t->g, n, i);
        in[i] = !x ? NULL : (x->flags & NN_T_CONST) ? x->data : data[i];
    }
    for (int i = 0; i < n->noutputs; i++) {
        nn_tensor *o = nn_out(t->g, n, i);
        int64_t cnt = nn_shape_numel(&o->shape);
        if (cnt < 0) return FFU_ERR_INVALID;
        free(t->out[i]);
        t->out[i] = calloc((size_t)cnt + 1, ffu_dtype_size(o->dtype) + 8);
    }
    size_t sb = d->scratch_bytes ? d->scratch_bytes(t->g, n) : 0;
    void *scratch = sb ? malloc(sb) : NULL;
    st = d->run(t->g, n, in, t->out, scratch);
    free(scratch);
    return st;
}

static inline void tfree(tg *t)
{
    for (int i = 0; i < 4; i++)
        free(t->out[i]);
    nn_graph_destroy(t->g);
    memset(t, 0, sizeof *t);
}

static inline void fill_f(float *p, int64_t n, uint64_t *seed, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * test_rand_f(seed);
}

#endif
