/* Normalisation ops: BatchNormalization (inference form), InstanceNormalization,
 * LayerNormalization, LRN, Softmax, LogSoftmax, Hardmax and MeanVarianceNormalization;
 * shape inference and reference kernels (f32 data -- Hardmax and MVN take every float
 * type --, statistics accumulated in double so the oracle is as close to the exact
 * result as the output type allows). */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

static ffu_status need_f32(const nn_node *n, const nn_tensor *t, const char *what)
{
    if (t && t->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%s of type %s (only f32)", what,
                             ffu_dtype_name(t->dtype));
    return FFU_OK;
}

/* Rejects extra outputs that are present (the ONNX training / statistics outputs). */
static ffu_status only_output0(const nn_node *n, const char *what)
{
    for (int i = 1; i < n->noutputs; i++)
        if (n->outputs[i] >= 0)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%s output %d is not supported", what, i);
    return FFU_OK;
}

/* A per-channel parameter input: f32 with C values (when both are known). */
static ffu_status channel_param(const nn_graph *g, const nn_node *n, int i, int64_t C,
                                const char *what)
{
    const nn_tensor *t = nn_in(g, n, i);
    ffu_status e = need_f32(n, t, what);
    if (e < 0) return e;
    int64_t k = nn_numel(t);
    if (t && k >= 0 && C >= 0 && k != C)
        return nn_node_error(n, FFU_ERR_FORMAT, "%s has %lld values for %lld channels", what,
                             (long long)k, (long long)C);
    return FFU_OK;
}

/* ---- BatchNormalization ------------------------------------------------------------------- */

static ffu_status batch_norm_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 5, 5);
    if (e < 0) return e;
    if ((e = only_output0(n, "training")) < 0) return e;
    if (nn_attr_int(n, "training_mode", 0) != 0)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "training_mode");
    const nn_tensor *x = nn_in(g, n, 0);
    if ((e = need_f32(n, x, "input")) < 0) return e;
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input of rank %d", x->shape.rank);
    int64_t C = x->shape.rank >= 2 ? x->shape.d[1] : -1;
    static const char *const names[] = {"scale", "B", "mean", "var"};
    for (int i = 1; i < 5; i++)
        if ((e = channel_param(g, n, i, C, names[i - 1])) < 0) return e;
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, x->shape.rank >= 0 ? &x->shape : NULL);
}

static ffu_status batch_norm_run(const nn_graph *g, const nn_node *n, void *const *in,
                                 void *const *out, void *scratch)
{
    (void)scratch;
    const nn_shape *s = &nn_in(g, n, 0)->shape;
    const float *X = in[0], *scale = in[1], *B = in[2], *mean = in[3], *var = in[4];
    float *Y = out[0];
    double eps = nn_attr_float(n, "epsilon", 1e-5f);
    int64_t N = s->d[0], C = s->d[1], inner = nn_dims_prod(s, 2, s->rank);
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++) {
            double a = scale[c] / sqrt((double)var[c] + eps), m = mean[c], bias = B[c];
            const float *x = X + (b * C + c) * inner;
            float *y = Y + (b * C + c) * inner;
            for (int64_t i = 0; i < inner; i++)
                y[i] = (float)((x[i] - m) * a + bias);
        }
    nn_apply_node_act(g, n, Y, N, C, inner);
    return FFU_OK;
}

const nn_op_def nn_op_def_batch_norm = {batch_norm_infer, batch_norm_run, NULL, 0};

/* ---- InstanceNormalization ------------------------------------------------------------------ */

static ffu_status instance_norm_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 3, 3);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if ((e = need_f32(n, x, "input")) < 0) return e;
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input of rank %d", x->shape.rank);
    int64_t C = x->shape.rank >= 2 ? x->shape.d[1] : -1;
    if ((e = channel_param(g, n, 1, C, "scale")) < 0 || (e = channel_param(g, n, 2, C, "B")) < 0)
        return e;
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, x->shape.rank >= 0 ? &x->shape : NULL);
}

static ffu_status instance_norm_run(const nn_graph *g, const nn_node *n, void *const *in,
                                    void *const *out, void *scratch)
{
    (void)scratch;
    const nn_shape *s = &nn_in(g, n, 0)->shape;
    const float *X = in[0], *scale = in[1], *B = in[2];
    float *Y = out[0];
    double eps = nn_attr_float(n, "epsilon", 1e-5f);
    int64_t N = s->d[0], C = s->d[1], inner = nn_dims_prod(s, 2, s->rank);
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++) {
            const float *x = X + (b * C + c) * inner;
            float *y = Y + (b * C + c) * inner;
            double sum = 0, sq = 0;
            for (int64_t i = 0; i < inner; i++)
                sum += x[i];
            double mean = inner ? sum / (double)inner : 0;
            for (int64_t i = 0; i < inner; i++)
                sq += (x[i] - mean) * (x[i] - mean);
            double var = inner ? sq / (double)inner : 0;
            double a = scale[c] / sqrt(var + eps);
            for (int64_t i = 0; i < inner; i++)
                y[i] = (float)((x[i] - mean) * a + B[c]);
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_instance_norm = {instance_norm_infer, instance_norm_run, NULL, 0};

/* ---- LayerNormalization ------------------------------------------------------------------- */

/* Normalises over dims [axis, rank); Scale and B broadcast against X (numpy rules, as in
 * the ONNX function body). Optional outputs Mean and InvStdDev have X's shape with the
 * normalised dims set to 1. */
static ffu_status layer_norm_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 2, 3);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0), *sc = nn_in(g, n, 1), *b = nn_in(g, n, 2);
    if ((e = need_f32(n, x, "input")) < 0 || (e = need_f32(n, sc, "scale")) < 0 ||
        (e = need_f32(n, b, "B")) < 0)
        return e;
    if (x->shape.rank < 0) {
        for (int i = 0; i < n->noutputs; i++)
            if (n->outputs[i] >= 0 && (e = nn_set_out(g, n, i, FFU_DTYPE_F32, NULL)) < 0) return e;
        return FFU_OK;
    }
    int axis;
    if ((e = nn_norm_axis(n, nn_attr_int(n, "axis", -1), x->shape.rank, &axis)) < 0) return e;
    nn_shape tmp;
    for (int i = 1; i < 3; i++) {
        const nn_tensor *p = nn_in(g, n, i);
        if (p && p->shape.rank >= 0 &&
            (p->shape.rank > x->shape.rank || nn_shape_broadcast(&x->shape, &p->shape, &tmp) < 0 ||
             !nn_shape_equal(&tmp, &x->shape)))
            return nn_node_error(n, FFU_ERR_FORMAT, "%s does not broadcast to the input",
                                 i == 1 ? "Scale" : "B");
    }
    if ((e = nn_set_out(g, n, 0, FFU_DTYPE_F32, &x->shape)) < 0) return e;
    nn_shape st = x->shape;
    for (int i = axis; i < st.rank; i++)
        st.d[i] = 1;
    for (int i = 1; i < n->noutputs && i < 3; i++)
        if (n->outputs[i] >= 0 && (e = nn_set_out(g, n, i, FFU_DTYPE_F32, &st)) < 0) return e;
    return FFU_OK;
}

/* Element strides of parameter shape p broadcast against x (0 along broadcast dims). */
static void bcast_strides(const nn_shape *x, const nn_shape *p, int64_t *st)
{
    int64_t acc = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        int j = i - (x->rank - p->rank);
        int64_t d = j >= 0 ? p->d[j] : 1;
        st[i] = d == 1 ? 0 : acc;
        acc *= d;
    }
}

static ffu_status layer_norm_run(const nn_graph *g, const nn_node *n, void *const *in,
                                 void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *xt = nn_in(g, n, 0), *bt = nn_in(g, n, 2);
    const nn_shape *s = &xt->shape;
    int axis;
    ffu_status e = nn_norm_axis(n, nn_attr_int(n, "axis", -1), s->rank, &axis);
    if (e < 0) return e;
    const float *X = in[0], *scale = in[1], *B = bt ? in[2] : NULL;
    float *Y = out[0];
    float *Mean = n->noutputs > 1 && n->outputs[1] >= 0 ? out[1] : NULL;
    float *Inv = n->noutputs > 2 && n->outputs[2] >= 0 ? out[2] : NULL;
    double eps = nn_attr_float(n, "epsilon", 1e-5f);
    int64_t outer = nn_dims_prod(s, 0, axis), inner = nn_dims_prod(s, axis, s->rank);
    int64_t ss[FFU_NN_MAX_RANK], bs[FFU_NN_MAX_RANK];
    bcast_strides(s, &nn_in(g, n, 1)->shape, ss);
    if (B) bcast_strides(s, &bt->shape, bs);
    for (int64_t o = 0; o < outer; o++) {
        const float *x = X + o * inner;
        float *y = Y + o * inner;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < inner; i++)
            sum += x[i];
        double mean = inner ? sum / (double)inner : 0;
        for (int64_t i = 0; i < inner; i++)
            sq += (x[i] - mean) * (x[i] - mean);
        double inv = 1.0 / sqrt((inner ? sq / (double)inner : 0) + eps);
        for (int64_t i = 0; i < inner; i++) {
            int64_t flat = o * inner + i;
            double v = (x[i] - mean) * inv * scale[nn_hd_offset(flat, s->d, ss, s->rank)];
            if (B) v += B[nn_hd_offset(flat, s->d, bs, s->rank)];
            y[i] = (float)v;
        }
        if (Mean) Mean[o] = (float)mean;
        if (Inv) Inv[o] = (float)inv;
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_layer_norm = {layer_norm_infer, layer_norm_run, NULL, 0};

/* ---- LRN ---------------------------------------------------------------------------------- */

static ffu_status lrn_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if ((e = need_f32(n, x, "input")) < 0) return e;
    if (nn_attr_int(n, "size", 0) < 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "size is missing or < 1");
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input of rank %d", x->shape.rank);
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, x->shape.rank >= 0 ? &x->shape : NULL);
}

/* y = x / (bias + alpha / size * sum of x^2 over the channels c - floor((size-1)/2) ..
 * c + ceil((size-1)/2))^beta */
static ffu_status lrn_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    const nn_shape *s = &nn_in(g, n, 0)->shape;
    const float *X = in[0];
    float *Y = out[0];
    int64_t size = nn_attr_int(n, "size", 1);
    double alpha = nn_attr_float(n, "alpha", 1e-4f), beta = nn_attr_float(n, "beta", 0.75f);
    double bias = nn_attr_float(n, "bias", 1.0f);
    int64_t N = s->d[0], C = s->d[1], inner = nn_dims_prod(s, 2, s->rank);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++) {
            int64_t c0 = c - before < 0 ? 0 : c - before, c1 = c + after >= C ? C - 1 : c + after;
            for (int64_t i = 0; i < inner; i++) {
                double sq = 0;
                for (int64_t k = c0; k <= c1; k++) {
                    double v = X[(b * C + k) * inner + i];
                    sq += v * v;
                }
                int64_t idx = (b * C + c) * inner + i;
                Y[idx] = (float)(X[idx] / pow(bias + alpha / (double)size * sq, beta));
            }
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_lrn = {lrn_infer, lrn_run, NULL, 0};

/* ---- Softmax, LogSoftmax -------------------------------------------------------------------- */

/* The reduction as [outer][len][inner]: opset 13 reduces dim `axis` (default -1); with
 * the loader's "_coerce_2d" (older opsets) the input is flattened to 2-D at `axis`
 * (default 1) and the whole second half is one row. */
static ffu_status softmax_geom(const nn_node *n, const nn_shape *s, int64_t *outer, int64_t *len,
                               int64_t *inner)
{
    int coerce = nn_attr_int(n, "_coerce_2d", 0) != 0;
    int64_t axis = nn_attr_int(n, "axis", coerce ? 1 : -1);
    int a;
    if (coerce && axis == s->rank) {
        a = s->rank; /* allowed by the old spec: every row has one element */
    } else {
        ffu_status e = nn_norm_axis(n, axis, s->rank, &a);
        if (e < 0) return e;
    }
    *outer = nn_dims_prod(s, 0, a);
    if (coerce) {
        *len = nn_dims_prod(s, a, s->rank);
        *inner = 1;
    } else {
        *len = s->d[a];
        *inner = nn_dims_prod(s, a + 1, s->rank);
    }
    return FFU_OK;
}

ffu_status nn_softmax_geom(const nn_node *n, const nn_shape *s, int64_t *outer, int64_t *len,
                           int64_t *inner)
{
    return softmax_geom(n, s, outer, len, inner);
}

static ffu_status softmax_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if ((e = need_f32(n, x, "input")) < 0) return e;
    if (x->shape.rank == 0) return nn_node_error(n, FFU_ERR_FORMAT, "scalar input");
    if (x->shape.rank > 0) {
        int coerce = nn_attr_int(n, "_coerce_2d", 0) != 0;
        int64_t axis = nn_attr_int(n, "axis", coerce ? 1 : -1);
        int a;
        if (!(coerce && axis == x->shape.rank) &&
            (e = nn_norm_axis(n, axis, x->shape.rank, &a)) < 0)
            return e;
    }
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, x->shape.rank >= 0 ? &x->shape : NULL);
}

static ffu_status softmax_common(const nn_graph *g, const nn_node *n, const float *X, float *Y,
                                 int log_form)
{
    int64_t outer, len, inner;
    ffu_status e = softmax_geom(n, &nn_in(g, n, 0)->shape, &outer, &len, &inner);
    if (e < 0) return e;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *x = X + o * len * inner + i;
            float *y = Y + o * len * inner + i;
            float mx = -INFINITY;
            for (int64_t k = 0; k < len; k++)
                mx = x[k * inner] > mx ? x[k * inner] : mx;
            double sum = 0;
            for (int64_t k = 0; k < len; k++)
                sum += exp((double)x[k * inner] - mx);
            if (log_form) {
                double ls = log(sum);
                for (int64_t k = 0; k < len; k++)
                    y[k * inner] = (float)((double)x[k * inner] - mx - ls);
            } else {
                for (int64_t k = 0; k < len; k++)
                    y[k * inner] = (float)(exp((double)x[k * inner] - mx) / sum);
            }
        }
    return FFU_OK;
}

static ffu_status softmax_run(const nn_graph *g, const nn_node *n, void *const *in,
                              void *const *out, void *scratch)
{
    (void)scratch;
    return softmax_common(g, n, in[0], out[0], 0);
}

static ffu_status log_softmax_run(const nn_graph *g, const nn_node *n, void *const *in,
                                  void *const *out, void *scratch)
{
    (void)scratch;
    return softmax_common(g, n, in[0], out[0], 1);
}

const nn_op_def nn_op_def_softmax = {softmax_infer, softmax_run, NULL, 0};
const nn_op_def nn_op_def_log_softmax = {softmax_infer, log_softmax_run, NULL, 0};

/* ---- Hardmax: 1 at the first maximum along the axis, 0 elsewhere ----------------------------- */

static ffu_status hardmax_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!nn_dtype_is_float(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input of type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank == 0) return nn_node_error(n, FFU_ERR_FORMAT, "scalar input");
    if (x->shape.rank > 0) {
        int64_t outer, len, inner;
        if ((e = softmax_geom(n, &x->shape, &outer, &len, &inner)) < 0) return e;
    }
    return nn_set_out(g, n, 0, x->dtype, x->shape.rank >= 0 ? &x->shape : NULL);
}

static ffu_status hardmax_run(const nn_graph *g, const nn_node *n, void *const *in,
                              void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t outer, len, inner;
    ffu_status e = softmax_geom(n, &x->shape, &outer, &len, &inner);
    if (e < 0) return e;
    ffu_dtype t = x->dtype;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best = 0;
            double bv = len > 0 ? nn_load_f64(in[0], t, base) : 0;
            /* ties keep the lower index; NaN is never greater, so it is never picked
             * unless it comes first and nothing is greater than it */
            for (int64_t k = 1; k < len; k++) {
                double v = nn_load_f64(in[0], t, base + k * inner);
                if (v > bv || (bv != bv && v == v)) best = k, bv = v;
            }
            for (int64_t k = 0; k < len; k++)
                nn_store_f64(out[0], t, base + k * inner, k == best ? 1.0 : 0.0);
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_hardmax = {hardmax_infer, hardmax_run, NULL, 0};

/* ---- MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes` ------------------------ */

/* The reduced axes as a bit mask (attribute "axes", default [0, 2, 3]). */
static ffu_status mvn_mask(const nn_node *n, int rank, unsigned *mask)
{
    static const int64_t def[3] = {0, 2, 3};
    int cnt;
    const int64_t *a = nn_attr_ints(n, "axes", &cnt);
    int64_t axes[FFU_NN_MAX_RANK];
    if (!a) a = def, cnt = 3;
    if (cnt > FFU_NN_MAX_RANK) return nn_node_error(n, FFU_ERR_FORMAT, "%d axes", cnt);
    memcpy(axes, a, sizeof(int64_t) * (size_t)cnt);
    ffu_status e = nn_norm_axes(n, axes, cnt, rank);
    if (e < 0) return e;
    *mask = 0;
    for (int i = 0; i < cnt; i++)
        *mask |= 1u << axes[i];
    return FFU_OK;
}

/* Element count of the kept (not reduced) dims: one mean and one variance each. */
static int64_t mvn_groups(const nn_shape *s, unsigned mask)
{
    int64_t p = 1;
    for (int i = 0; i < s->rank; i++)
        if (!(mask & (1u << i))) p *= s->d[i];
    return p;
}

static ffu_status mvn_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!nn_dtype_is_float(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input of type %s", ffu_dtype_name(x->dtype));
    unsigned mask;
    if (x->shape.rank >= 0 && (e = mvn_mask(n, x->shape.rank, &mask)) < 0) return e;
    return nn_set_out(g, n, 0, x->dtype, x->shape.rank >= 0 ? &x->shape : NULL);
}

static size_t mvn_scratch(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *x = nn_in(g, n, 0);
    unsigned mask;
    if (!x || mvn_mask(n, x->shape.rank, &mask) < 0) {
        ffu_error_clear();
        return 0;
    }
    int64_t groups = mvn_groups(&x->shape, mask);
    return groups > 0 ? (size_t)groups * 2 * sizeof(double) : 0;
}

/* Walks every element in order with the offset of its group (kept dims only). */
#define MVN_WALK(BODY)                                                                             \
    do {                                                                                           \
        int64_t idx_[FFU_NN_MAX_RANK] = {0}, grp = 0;                                              \
        for (int64_t e_ = 0; e_ < numel; e_++) {                                                   \
            BODY;                                                                                  \
            for (int i_ = rank - 1; i_ >= 0; i_--) {                                               \
                grp += gst[i_];                                                                    \
                if (++idx_[i_] < x->shape.d[i_]) break;                                            \
                grp -= gst[i_] * x->shape.d[i_];                                                   \
                idx_[i_] = 0;                                                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static ffu_status mvn_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    const nn_tensor *x = nn_in(g, n, 0);
    int rank = x->shape.rank;
    unsigned mask;
    ffu_status e = mvn_mask(n, rank, &mask);
    if (e < 0) return e;
    int64_t numel = nn_numel(x), groups = mvn_groups(&x->shape, mask), gst[FFU_NN_MAX_RANK];
    if (numel <= 0) return FFU_OK;
    /* group strides: row-major over the kept dims, 0 along reduced ones */
    int64_t acc = 1;
    for (int i = rank - 1; i >= 0; i--) {
        gst[i] = (mask & (1u << i)) ? 0 : acc;
        if (!(mask & (1u << i))) acc *= x->shape.d[i];
    }
    double *mean = scratch, *var = mean + groups;
    double per = (double)(numel / groups);
    ffu_dtype t = x->dtype;
    memset(scratch, 0, (size_t)groups * 2 * sizeof(double));
    MVN_WALK(mean[grp] += nn_load_f64(in[0], t, e_));
    for (int64_t k = 0; k < groups; k++)
        mean[k] /= per;
    MVN_WALK({
        double d = nn_load_f64(in[0], t, e_) - mean[grp];
        var[grp] += d * d;
    });
    for (int64_t k = 0; k < groups; k++)
        var[k] = sqrt(var[k] / per) + 1e-9;
    MVN_WALK(nn_store_f64(out[0], t, e_, (nn_load_f64(in[0], t, e_) - mean[grp]) / var[grp]));
    return FFU_OK;
}

const nn_op_def nn_op_def_mvn = {mvn_infer, mvn_run, mvn_scratch, 0};
