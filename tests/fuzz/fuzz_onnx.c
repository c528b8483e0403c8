/* Fuzz target for the ONNX loader: any bytes go through nn_onnx_load (and, as a
 * TensorProto, through nn_onnx_read_tensor). A loaded graph must be consistent --
 * constants sized by their shapes, nodes in topological order -- and survive a clone;
 * anything else aborts so libFuzzer reports it. Seeds: tests/fixtures/corpus/onnx,
 * written by make_onnx_corpus. */
#include <stdint.h>
#include <stdlib.h>

#include "nn/onnx/onnx.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nn_graph *g = NULL;
    if (nn_onnx_load(data, size, &g) == FFU_OK) {
        check_graph(g);
        (void)nn_graph_check_ops(g);
        nn_graph *c = NULL;
        if (nn_graph_clone(g, &c) == FFU_OK) nn_graph_destroy(c);
        nn_graph_destroy(g);
    } else if (g) {
        abort(); /* out-parameters are NULL on error */
    }
    nn_graph *s = NULL;
    if (nn_graph_create(&s) == FFU_OK) {
        int t = 0;
        if (nn_onnx_read_tensor(data, size, s, "t", &t) == FFU_OK) {
            const nn_tensor *x = &s->tensors[t];
            if ((uint64_t)nn_shape_numel(&x->shape) * ffu_dtype_size(x->dtype) != x->nbytes) abort();
        } else if (t != -1) {
            abort();
        }
        nn_graph_destroy(s);
    }
    return 0;
}
