/* Fuzz target for the TF.js loaders (a graph-model model.json, or a face-api.js weights
 * manifest) and the rewrite passes. Input format: the JSON bytes, one NUL byte, then the
 * weights (.bin) bytes; without a NUL the whole input is the JSON and the weights are
 * empty (JSON text never holds a raw NUL). The loader is picked as src/nn/model.c picks
 * it: after a UTF-8 BOM and white space, a JSON text starting with '[' is a face-api.js
 * manifest (nn_faceapi_load), anything else goes to nn_tfjs_load. A load must either
 * fail with *out == NULL or give a graph the rewrite passes accept or reject without
 * crashing; the same bytes then go through ffu_nn_model_load_memory (every load-time
 * pass), and a model small enough is planned and run on ref and cpu (plan_check.h).
 * Seeds: tests/fixtures/corpus/tfjs/ (faceapi_tiny.bin is made by
 * tests/unit/test_nn_faceapi.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn/rewrite.h"
#include "nn/tfjs/tfjs.h"

#include "plan_check.h"

/* The first character of the JSON text after a BOM and white space (0 if none). */
static int json_start(const uint8_t *p, size_t size)
{
    size_t i = 0;
    if (size >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) i = 3;
    while (i < size && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    return i < size ? p[i] : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *sep = memchr(data, 0, size);
    size_t jl = sep ? (size_t)(sep - data) : size;
    const uint8_t *w = sep ? sep + 1 : NULL;
    size_t wl = sep ? size - jl - 1 : 0;
    nn_graph *g = NULL;
    ffu_status st = json_start(data, jl) == '[' ? nn_faceapi_load((const char *)data, jl, w, wl, &g)
                                                : nn_tfjs_load((const char *)data, jl, w, wl, &g);
    if (st < 0) {
        if (g) abort(); /* out-param must be NULL on error */
        return 0;
    }
    if (!g || g->noutputs < 1) abort();
    if (nn_rewrite_transposes(g) == FFU_OK) nn_rewrite_patterns(g);
    nn_graph_destroy(g);
    ffu_nn_model *m = NULL;
    if (ffu_nn_model_load_memory(data, jl, w, wl, &m) < 0 && m) abort();
    check_plans(m, data, size);
    ffu_nn_model_destroy(m);
    return 0;
}
