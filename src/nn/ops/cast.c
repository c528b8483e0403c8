/* Cast and CastLike: convert any element type to any other with ONNX semantics (float
 * -> int truncates toward zero, -> bool is != 0) through nn_convert. Cast's "to"
 * attribute holds an ffu_dtype (the ONNX loader maps TensorProto's numbering);
 * CastLike takes the type of its second input (only the type: its data is not read).
 * "saturate" (opset 19, float8 only) is ignored. */
#include "ops_internal.h"

static ffu_status cast_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t to = nn_attr_int(n, "to", -1);
    if (!nn_node_attr(n, "to"))
        return nn_node_error(n, FFU_ERR_FORMAT, "the 'to' attribute is missing");
    if (to <= FFU_DTYPE_UNDEFINED || to >= FFU_DTYPE_COUNT)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "target type %lld", (long long)to);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "source type %s", ffu_dtype_name(x->dtype));
    return nn_set_out(g, n, 0, (ffu_dtype)to, &x->shape);
}

static ffu_status cast_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *o = nn_out(g, n, 0);
    int64_t cnt = nn_numel(x);
    if (cnt <= 0) return FFU_OK;
    return nn_convert(in[0], x->dtype, out[0], o->dtype, (size_t)cnt);
}

/* Not NN_OPF_ELEMENTWISE: the output may be wider than the input, so it cannot
 * always be computed in place. */
const nn_op_def nn_op_def_cast = {cast_infer, cast_run, NULL, 0};

/* ---- CastLike(input, target_type) -------------------------------------------------------- */

static ffu_status cast_like_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *like = nn_in(g, n, 1);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "source type %s", ffu_dtype_name(x->dtype));
    if (!ffu_dtype_size(like->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "target type %s",
                             ffu_dtype_name(like->dtype));
    return nn_set_out(g, n, 0, like->dtype, &x->shape);
}

const nn_op_def nn_op_def_cast_like = {cast_like_infer, cast_run, NULL, 0};
