/* Fuzz target for the TensorFlow Lite loader (src/nn/tflite): any bytes go through
 * nn_tflite_load. A failed load must leave *out NULL; a loaded graph must be
 * consistent (constants sized by their shapes, nodes in topological order, tensor
 * indices in range), survive a clone and the rewrite passes, and the same bytes must
 * also survive ffu_nn_model_load_memory, which runs every load-time pass (folding,
 * fusions) on what the loader made; a model small enough is planned and run on ref and
 * cpu (plan_check.h). Anything else aborts so libFuzzer reports it.
 * Seeds: tests/fixtures/corpus/tflite, written by make_tflite_corpus.c. */
#include <stdint.h>
#include <stdlib.h>

#include "facefuse/nn.h"
#include "nn/rewrite.h"
#include "nn/tflite/tflite.h"

#include "graph_check.h"
#include "plan_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nn_graph *g = NULL;
    if (nn_tflite_load(data, size, &g) < 0) {
        if (g) abort(); /* out-parameters are NULL on error */
        return 0;
    }
    if (g->noutputs < 1) abort(); /* the loader refuses a subgraph without outputs */
    check_graph(g);
    nn_graph *c = NULL;
    if (nn_graph_clone(g, &c) == FFU_OK) {
        if (nn_rewrite_transposes(c) == FFU_OK) nn_rewrite_patterns(c);
        nn_graph_destroy(c);
    }
    nn_graph_destroy(g);
    ffu_nn_model *m = NULL;
    if (ffu_nn_model_load_memory(data, size, NULL, 0, &m) < 0 && m) abort();
    check_plans(m, data, size);
    ffu_nn_model_destroy(m);
    return 0;
}
