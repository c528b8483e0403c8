/* Fuzz target for the TF.js graph-model loader and the rewrite passes. Input format:
 * model.json bytes, one NUL byte, then the weights (.bin) bytes; without a NUL the
 * whole input is the JSON and the weights are empty (JSON text never holds a raw NUL).
 * A load must either fail with *out == NULL or give a graph the rewrite passes accept
 * or reject without crashing. Seeds: tests/fixtures/corpus/tfjs/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn/rewrite.h"
#include "nn/tfjs/tfjs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *sep = memchr(data, 0, size);
    size_t jl = sep ? (size_t)(sep - data) : size;
    const uint8_t *w = sep ? sep + 1 : NULL;
    size_t wl = sep ? size - jl - 1 : 0;
    nn_graph *g = NULL;
    ffu_status st = nn_tfjs_load((const char *)data, jl, w, wl, &g);
    if (st < 0) {
        if (g) abort(); /* out-param must be NULL on error */
        return 0;
    }
    if (!g || g->noutputs < 1) abort();
    if (nn_rewrite_transposes(g) == FFU_OK) nn_rewrite_patterns(g);
    nn_graph_destroy(g);
    return 0;
}
