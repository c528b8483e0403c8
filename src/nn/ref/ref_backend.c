/* The `ref` backend: runs every node with its op's plain-C reference kernel (the
 * oracle the other backends are tested against). It keeps no per-node state, so
 * prepare and release do nothing; it is always available and every session keeps one
 * as the fallback for nodes a faster backend does not take. */
#include <stdlib.h>

#include "../backend.h"

static int ref_supports(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    /* shape inference already accepted the node when the session asks */
    const nn_op_def *d = nn_op_get(n->op);
    return d && d->infer && d->run;
}

static ffu_status ref_prepare(nn_backend *b, nn_graph *g, nn_node *n) { return FFU_OK; }

static size_t ref_scratch_bytes(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    const nn_op_def *d = nn_op_get(n->op);
    return d && d->scratch_bytes ? d->scratch_bytes(g, n) : 0;
}

static ffu_status ref_run(nn_backend *b, const nn_graph *g, const nn_node *n, void *const *in,
                          void *const *out, void *scratch)
{
    const nn_op_def *d = nn_op_get(n->op);
    if (!d || !d->run)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "no reference kernel");
    return d->run(g, n, in, out, scratch);
}

static void ref_release(nn_backend *b, nn_node *n) { n->priv = NULL; }

static void ref_destroy(nn_backend *b) { free(b); }

static const nn_backend_ops ref_ops = {
    .name = "ref",
    .supports = ref_supports,
    .prepare = ref_prepare,
    .scratch_bytes = ref_scratch_bytes,
    .run = ref_run,
    .release = ref_release,
    .destroy = ref_destroy,
};

ffu_status nn_backend_ref_create(nn_backend **out)
{
    *out = NULL;
    nn_backend *b = calloc(1, sizeof *b);
    if (!b) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    b->ops = &ref_ops;
    b->threads = 1;
    *out = b;
    return FFU_OK;
}
