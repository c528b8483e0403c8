/* Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX opset 12/13).
 * Exported training graphs and the ONNX conformance suite carry them; a face model does
 * not, so they run on ref only.
 *
 * Both read scores X [N, C, d1..dk] (C classes on axis 1), integer targets T [N, d1..dk]
 * and optional class weights W [C]. NegativeLogLikelihoodLoss takes X as log
 * probabilities; SoftmaxCrossEntropyLoss first takes LogSoftmax over axis 1 (its second,
 * optional output) and then is the same loss. Per element, with the ONNX reference's
 * rules:
 *   w    = W[t] (1 without W), 0 where t == ignore_index (when the attribute is given)
 *   loss = -w * X[n, t, d]   (0 where ignored: t need not be a class then)
 * reduction "none" keeps the [N, d1..dk] losses, "sum" adds them, "mean" (the default)
 * divides the sum by the sum of w when W or ignore_index is given, else by their count.
 * A target outside [0, C) that is not ignored is an error. Arithmetic in double. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

static int is_float(ffu_dtype t)
{
    return t == FFU_DTYPE_F32 || t == FFU_DTYPE_F16 || t == FFU_DTYPE_F64 || t == FFU_DTYPE_BF16;
}

/* 0 none, 1 sum, 2 mean; -1 for anything else */
static int reduction_of(const nn_node *n)
{
    const char *r = nn_attr_string(n, "reduction", "mean");
    return !strcmp(r, "none") ? 0 : !strcmp(r, "sum") ? 1 : !strcmp(r, "mean") ? 2 : -1;
}

static ffu_status loss_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 3);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *t = nn_in(g, n, 1), *w = nn_in(g, n, 2);
    if (!is_float(x->dtype) || (w && w->dtype != x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "scores of type %s, weights of type %s",
                             ffu_dtype_name(x->dtype), w ? ffu_dtype_name(w->dtype) : "-");
    if (t->dtype != FFU_DTYPE_I32 && t->dtype != FFU_DTYPE_I64)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "targets of type %s",
                             ffu_dtype_name(t->dtype));
    int red = reduction_of(n);
    if (red < 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "reduction '%s' (none, sum or mean)",
                             nn_attr_string(n, "reduction", ""));
    int sce = n->op == NN_OP_SOFTMAX_CROSS_ENTROPY_LOSS;
    if (!sce && n->noutputs > 1 && n->outputs[1] >= 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "one output");
    if (x->shape.rank < 0 || t->shape.rank < 0) {
        if ((st = nn_set_out(g, n, 0, x->dtype, NULL)) < 0) return st;
        return sce && nn_out(g, n, 1) ? nn_set_out(g, n, 1, x->dtype, NULL) : FFU_OK;
    }
    const nn_shape *xs = &x->shape, *ts = &t->shape;
    int ok = xs->rank >= 2 && ts->rank == xs->rank - 1 && xs->d[1] >= 1;
    for (int i = 0; ok && i < ts->rank; i++) {
        int64_t a = ts->d[i], b = xs->d[i ? i + 1 : 0];
        ok = a < 0 || b < 0 || a == b;
    }
    if (!ok)
        return nn_node_error(n, FFU_ERR_FORMAT,
                             "scores [N, C, d...] and targets [N, d...] do not match");
    if (w && w->shape.rank >= 0 &&
        (w->shape.rank != 1 || (w->shape.d[0] >= 0 && xs->d[1] >= 0 && w->shape.d[0] != xs->d[1])))
        return nn_node_error(n, FFU_ERR_FORMAT, "weights are not [C]");
    nn_shape o = {.rank = 0};
    if (red == 0) {
        o.rank = ts->rank;
        for (int i = 0; i < ts->rank; i++)
            o.d[i] = xs->d[i ? i + 1 : 0];
    }
    if ((st = nn_set_out(g, n, 0, x->dtype, &o)) < 0) return st;
    return sce && nn_out(g, n, 1) ? nn_set_out(g, n, 1, x->dtype, xs) : FFU_OK;
}

static ffu_status loss_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *t = nn_in(g, n, 1), *w = nn_in(g, n, 2);
    ffu_dtype dt = x->dtype;
    int sce = n->op == NN_OP_SOFTMAX_CROSS_ENTROPY_LOSS, red = reduction_of(n);
    int has_ii = nn_node_attr(n, "ignore_index") != NULL;
    int64_t ii = nn_attr_int(n, "ignore_index", 0);
    int64_t N = x->shape.d[0], C = x->shape.d[1], D = nn_dims_prod(&x->shape, 2, x->shape.rank);
    void *log_prob = sce && n->noutputs > 1 && n->outputs[1] >= 0 ? out[1] : NULL;
    double sum = 0, wsum = 0;
    for (int64_t b = 0; b < N; b++)
        for (int64_t d = 0; d < D; d++) {
            const int64_t at = b * C * D + d; /* X[b, 0, d]; class c at + c * D */
            double shift = 0; /* SoftmaxCrossEntropyLoss: log_prob = x - max - log(sum exp) */
            if (sce) {
                double mx = -INFINITY, se = 0;
                for (int64_t c = 0; c < C; c++)
                    mx = fmax(mx, nn_load_f64(in[0], dt, at + c * D));
                for (int64_t c = 0; c < C; c++)
                    se += exp(nn_load_f64(in[0], dt, at + c * D) - mx);
                shift = mx + log(se);
                if (log_prob)
                    for (int64_t c = 0; c < C; c++)
                        nn_store_f64(log_prob, dt, at + c * D,
                                     nn_load_f64(in[0], dt, at + c * D) - shift);
            }
            int64_t k = b * D + d, cls = nn_load_int(in[1], t->dtype, k);
            double wt = 0, loss = 0;
            if (!(has_ii && cls == ii)) {
                if (cls < 0 || cls >= C)
                    return nn_node_error(n, FFU_ERR_INVALID, "target %lld outside [0, %lld)",
                                         (long long)cls, (long long)C);
                wt = w ? nn_load_f64(in[2], dt, cls) : 1.0;
                loss = -wt * (nn_load_f64(in[0], dt, at + cls * D) - shift);
            }
            if (red == 0) nn_store_f64(out[0], dt, k, loss);
            sum += loss;
            wsum += wt;
        }
    if (red == 1) nn_store_f64(out[0], dt, 0, sum);
    if (red == 2) nn_store_f64(out[0], dt, 0, w || has_ii ? sum / wsum : sum / (double)(N * D));
    return FFU_OK;
}

const nn_op_def nn_op_def_nll_loss = {loss_infer, loss_run, NULL, 0};
const nn_op_def nn_op_def_softmax_cross_entropy_loss = {loss_infer, loss_run, NULL, 0};
