/* The backend interface of the engine, private to src/nn. A session owns one or more
 * backends (the chosen one, then `ref` as the fallback): during planning each node is
 * given to the first backend whose supports() accepts it, which prepare()s it once the
 * shapes are final; running the plan calls run() node by node. Backends are vtables,
 * like ggml's: `ref` (src/nn/ref/), `cpu` on oneDNN (src/nn/cpu/), and later `cuda`.
 *
 * Memory: the session plans one activation arena; a backend's run() receives plain
 * pointers into it (inputs, outputs) and a scratch area of scratch_bytes(). Anything a
 * backend keeps per node (a primitive, reordered weights) hangs on node->priv and is
 * freed by release(). */
#ifndef FFU_NN_BACKEND_H
#define FFU_NN_BACKEND_H

#include "ir.h"

typedef struct nn_backend nn_backend;

typedef struct nn_backend_ops {
    const char *name;
    /* 1 if this backend runs node n as its inputs and outputs are typed and shaped
     * now (after shape inference), else 0. Must not fail. */
    int (*supports)(nn_backend *b, const nn_graph *g, const nn_node *n);
    /* Per-node set-up after shapes are final (may allocate; called once per plan). */
    ffu_status (*prepare)(nn_backend *b, nn_graph *g, nn_node *n);
    /* Scratch bytes the node needs at run time (may be 0). */
    size_t (*scratch_bytes)(nn_backend *b, const nn_graph *g, const nn_node *n);
    /* Runs one node. in[i] is NULL for omitted inputs; constant inputs point at their
     * data. Must not allocate. */
    ffu_status (*run)(nn_backend *b, const nn_graph *g, const nn_node *n, void *const *in,
                      void *const *out, void *scratch);
    /* Frees node->priv (sets it to NULL). */
    void (*release)(nn_backend *b, nn_node *n);
    void (*destroy)(nn_backend *b);
    /* Optional (NULL: nothing to tell), for describe: the implementation a prepared
     * node runs ("brgconv_1x1:avx512_core", "" when none) and how many layout
     * conversions (reorders between NCHW and the backend's layout) each run makes.
     * A node that computes in bf16 (the session's bf16 option) has an impl starting
     * with "bf16 " (describe counts those). */
    void (*node_info)(nn_backend *b, const nn_node *n, const char **impl, int *reorders);
} nn_backend_ops;

struct nn_backend {
    const nn_backend_ops *ops;
    int threads; /* worker threads it may use */
    int bf16;    /* bf16 compute allowed where the accuracy check passed */
};

/* Constructors; each returns FFU_ERR_UNSUPPORTED when the backend is not built in. */
ffu_status nn_backend_ref_create(nn_backend **out);
ffu_status nn_backend_cpu_create(nn_backend **out, int threads, int bf16);

#endif
