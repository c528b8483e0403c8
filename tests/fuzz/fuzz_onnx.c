/* Fuzz target for the ONNX loader: any bytes go through nn_onnx_load (and, as a
 * TensorProto, through nn_onnx_read_tensor). A loaded graph must be consistent --
 * constants sized by their shapes, nodes in topological order -- and survive a clone,
 * and the same bytes must survive ffu_nn_model_load_memory, which runs every load-time
 * pass (shape inference, constant folding through the ops' kernels, fusions) on what
 * the loader made, and a model small enough is planned and run on ref and cpu
 * (plan_check.h); anything else aborts so libFuzzer reports it. Seeds:
 * tests/fixtures/corpus/onnx, written by make_onnx_corpus. */
#include <stdint.h>
#include <stdlib.h>

#include "facefuse/nn.h"
#include "nn/onnx/onnx.h"

#include "graph_check.h"
#include "plan_check.h"

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
        ffu_nn_model *m = NULL;
        if (ffu_nn_model_load_memory(data, size, NULL, 0, &m) < 0 && m) abort();
        check_plans(m, data, size);
        ffu_nn_model_destroy(m);
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
