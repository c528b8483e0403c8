/* ffu.MemCopy: the node the planner inserts where a value crosses from one memory space
 * to another (host <-> a device backend's memory; plan.c, backend.h). Sessions run it
 * through the device backend's copy(); this reference kernel is the host-to-host case
 * (and what constant folding would use), so the op is as well-defined as any other. */
#include "ops_internal.h"

static ffu_status mem_copy_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    return nn_set_out(g, n, 0, x->dtype, &x->shape);
}

static ffu_status mem_copy_run(const nn_graph *g, const nn_node *n, void *const *in,
                               void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    size_t bytes = (size_t)nn_numel(x) * ffu_dtype_size(x->dtype);
    if (out[0] != in[0] && bytes) memcpy(out[0], in[0], bytes);
    return FFU_OK;
}

/* Neither a view nor elementwise: input and output live in different spaces, so the
 * planner must never let them share memory. */
const nn_op_def nn_op_def_mem_copy = {mem_copy_infer, mem_copy_run, NULL, 0};
