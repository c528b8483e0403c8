/* Workspaces: one block of host memory that the sessions of one thread's stages take
 * their activations and scratch from in turn, so that together they hold what the
 * largest needs and each starts on memory the last one left in the caches (nn.h has
 * the rules, docs/NN.md "Workspaces" the numbers). */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

ffu_status ffu_nn_workspace_create(ffu_nn_workspace **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_nn_workspace_create: out is NULL");
    *out = calloc(1, sizeof **out);
    return *out ? FFU_OK : ffu_error_set(FFU_ERR_NOMEM, "out of memory");
}

void ffu_nn_workspace_destroy(ffu_nn_workspace *w)
{
    if (!w) return;
    free(w->buf);
    free(w);
}

size_t ffu_nn_workspace_bytes(const ffu_nn_workspace *w)
{
    return w ? w->bytes : 0;
}

ffu_status nn_workspace_reserve(ffu_nn_workspace *w, size_t bytes)
{
    if (bytes <= w->bytes && w->buf) return FFU_OK;
    bytes = bytes ? (bytes + 4095) & ~(size_t)4095 : 4096;
    unsigned char *p = ffu_alloc_large(bytes);
    if (!p)
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a %zu-byte workspace", bytes);
    /* zeroed, as a session's own arena is: a run over unfilled inputs is deterministic
     * at least until the block is shared */
    memset(p, 0, bytes);
    free(w->buf);
    w->buf = p;
    w->bytes = bytes;
    w->gen++;
    return FFU_OK;
}
