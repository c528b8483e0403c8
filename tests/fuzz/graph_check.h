/* What every loader's graph must satisfy, for the loader fuzzers (fuzz_onnx.c,
 * fuzz_tflite.c): constants sized by their shapes, only canonical ops (no Constant or
 * Upsample nodes left), tensor indices in range, nodes in topological order with their
 * producers set. A violation aborts, so libFuzzer reports the input. */
#ifndef FFU_FUZZ_GRAPH_CHECK_H
#define FFU_FUZZ_GRAPH_CHECK_H

#include <stdint.h>
#include <stdlib.h>

#include "nn/ir.h"

static void check_graph(const nn_graph *g)
{
    for (int i = 0; i < g->ntensors; i++) {
        const nn_tensor *t = &g->tensors[i];
        if ((t->flags & NN_T_CONST) &&
            (uint64_t)nn_shape_numel(&t->shape) * ffu_dtype_size(t->dtype) != t->nbytes)
            abort();
    }
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        if (n->op <= NN_OP_NONE || n->op >= NN_OP_COUNT || n->op == NN_OP_CONSTANT ||
            n->op == NN_OP_UPSAMPLE)
            abort();
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t < -1 || t >= g->ntensors) abort();
            if (t >= 0 && !(g->tensors[t].flags & (NN_T_INPUT | NN_T_CONST)) &&
                g->tensors[t].producer >= i)
                abort();
        }
        for (int j = 0; j < n->noutputs; j++)
            if (n->outputs[j] < 0 || n->outputs[j] >= g->ntensors ||
                g->tensors[n->outputs[j]].producer != i)
                abort();
    }
}

#endif
