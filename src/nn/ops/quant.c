/* ONNX's linear quantisation ops, so that models quantised in ONNX Runtime's QDQ format
 * (8-bit weights and activations around float ops) load and run:
 *   QuantizeLinear(x, scale, zero_point?)   y = saturate(round(x / scale) + zero_point)
 *   DequantizeLinear(x, scale, zero_point?) y = (x - zero_point) * scale
 *   DynamicQuantizeLinear(x) -> y, scale, zero_point   (u8, range from x's min and max)
 *   ffu.DynamicQuantizeSteps(x) -> the same with y as f32 (y - zero_point): what the
 *     integer products that read y see once rewrite_integer.c made them f32 products
 * Rounding is to nearest, ties to even; the arithmetic is f32, as in the ONNX reference
 * and ONNX Runtime. Scale and zero point are one value (per tensor) or one per index of
 * `axis` (opset 13, default 1). A weight's DequantizeLinear has constant inputs, so
 * constant folding turns it into f32 weights at load and the backends see a float
 * model; what runs per inference is the activations' quantise-dequantise pairs. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"
#include "quant_math.h"

/* ---- scale and zero point ------------------------------------------------------------- */

/* The layout of x around the quantisation axis: outer x dim x inner elements; dim = 1
 * for one scale for the whole tensor. */
typedef struct qaxis {
    int64_t outer, dim, inner;
} qaxis;

/* Checks scale (input 1) and zero point (input 2, optional) against x (input 0) and
 * finds the axis layout; *zp_type is the zero point's dtype (u8 without one). */
static ffu_status q_params(const nn_graph *g, const nn_node *n, ffu_dtype *zp_type, qaxis *ax)
{
    const nn_tensor *x = nn_in(g, n, 0), *sc = nn_in(g, n, 1), *zp = nn_in(g, n, 2);
    if (sc->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "scale of type %s (f32 only)",
                             ffu_dtype_name(sc->dtype));
    *zp_type = zp ? zp->dtype : FFU_DTYPE_U8;
    int64_t ns = nn_numel(sc);
    if (zp && sc->shape.rank >= 0 && zp->shape.rank >= 0 && nn_numel(zp) != ns)
        return nn_node_error(n, FFU_ERR_FORMAT, "scale has %lld values, zero point %lld",
                             (long long)ns, (long long)nn_numel(zp));
    *ax = (qaxis){.outer = 1, .dim = 1, .inner = nn_numel(x)};
    if (sc->shape.rank > 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "scale has rank %d (0 or 1)", sc->shape.rank);
    if (sc->shape.rank <= 0 || ns == 1) return FFU_OK;
    if (x->shape.rank < 0) return FFU_OK; /* checked again once shapes are known */
    int a;
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", 1), x->shape.rank, &a);
    if (st < 0) return st;
    if (ns >= 0 && x->shape.d[a] >= 0 && ns != x->shape.d[a])
        return nn_node_error(n, FFU_ERR_FORMAT, "%lld scales for axis %d of size %lld",
                             (long long)ns, a, (long long)x->shape.d[a]);
    *ax = (qaxis){nn_dims_prod(&x->shape, 0, a), x->shape.d[a],
                  nn_dims_prod(&x->shape, a + 1, x->shape.rank)};
    return FFU_OK;
}

static int q_range(ffu_dtype t, float *lo, float *hi)
{
    if (t == FFU_DTYPE_U8) return *lo = 0.0f, *hi = 255.0f, 1;
    if (t == FFU_DTYPE_I8) return *lo = -128.0f, *hi = 127.0f, 1;
    return 0;
}

/* y[0, n) = qm_value(x[k]) as t (u8 or i8). */
static void q_span(const float *x, int64_t n, float scale, float zp, ffu_dtype t, void *y)
{
    float lo, hi;
    q_range(t, &lo, &hi);
    if (t == FFU_DTYPE_U8) {
        uint8_t *p = y;
        for (int64_t k = 0; k < n; k++) p[k] = (uint8_t)qm_value(x[k], scale, zp, lo, hi);
    } else {
        int8_t *p = y;
        for (int64_t k = 0; k < n; k++) p[k] = (int8_t)qm_value(x[k], scale, zp, lo, hi);
    }
}

static void q_store(void *y, ffu_dtype t, int64_t i, float v)
{
    if (t == FFU_DTYPE_U8)
        ((uint8_t *)y)[i] = (uint8_t)v;
    else
        ((int8_t *)y)[i] = (int8_t)v;
}

/* y[0, n) = (x[k] - zp) * scale for x of type t (u8, i8 or i32). */
static void dq_span(const void *x, ffu_dtype t, int64_t n, float scale, float zp, float *y)
{
    if (t == FFU_DTYPE_U8) {
        const uint8_t *p = x;
        for (int64_t k = 0; k < n; k++) y[k] = ((float)p[k] - zp) * scale;
    } else if (t == FFU_DTYPE_I8) {
        const int8_t *p = x;
        for (int64_t k = 0; k < n; k++) y[k] = ((float)p[k] - zp) * scale;
    } else {
        const int32_t *p = x;
        for (int64_t k = 0; k < n; k++) y[k] = ((float)p[k] - zp) * scale;
    }
}

/* ---- QuantizeLinear ------------------------------------------------------------------- */

static ffu_status quantize_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 3);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (x->dtype != FFU_DTYPE_F32 && x->dtype != FFU_DTYPE_I32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input of type %s (f32 or i32)",
                             ffu_dtype_name(x->dtype));
    ffu_dtype zt;
    qaxis ax;
    if ((st = q_params(g, n, &zt, &ax)) < 0) return st;
    float lo, hi;
    if (!q_range(zt, &lo, &hi))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "zero point of type %s (u8 or i8)",
                             ffu_dtype_name(zt));
    return nn_set_out(g, n, 0, zt, &x->shape);
}

/* ---- DequantizeLinear ----------------------------------------------------------------- */

static ffu_status dequantize_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 3);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *zp = nn_in(g, n, 2);
    ffu_dtype t = x->dtype;
    if (t != FFU_DTYPE_U8 && t != FFU_DTYPE_I8 && t != FFU_DTYPE_I32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input of type %s (u8, i8 or i32)",
                             ffu_dtype_name(t));
    if (zp && zp->dtype != t)
        return nn_node_error(n, FFU_ERR_FORMAT, "zero point is %s, input %s",
                             ffu_dtype_name(zp->dtype), ffu_dtype_name(t));
    ffu_dtype zt;
    qaxis ax;
    if ((st = q_params(g, n, &zt, &ax)) < 0) return st;
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, &x->shape);
}

/* QuantizeLinear and DequantizeLinear: one scale and zero point per index of the axis. */
static ffu_status qdq_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    ffu_dtype zt;
    qaxis ax;
    ffu_status st = q_params(g, n, &zt, &ax);
    if (st < 0) return st;
    int quantize = n->op == NN_OP_QUANTIZE_LINEAR;
    float lo = 0.0f, hi = 0.0f;
    if (quantize && !q_range(zt, &lo, &hi))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "zero point type");
    const float *sc = in[1];
    const void *zp = n->ninputs > 2 ? in[2] : NULL; /* in[] holds ninputs pointers */
    size_t xsize = ffu_dtype_size(x->dtype), ysize = ffu_dtype_size(nn_out(g, n, 0)->dtype);
    for (int64_t o = 0, i = 0; o < ax.outer; o++)
        for (int64_t c = 0; c < ax.dim; c++, i += ax.inner) {
            float s = sc[c], z = zp ? (float)nn_load_int(zp, zt, c) : 0.0f;
            const void *xi = (const unsigned char *)in[0] + (size_t)i * xsize;
            void *yi = (unsigned char *)out[0] + (size_t)i * ysize;
            if (!quantize) {
                dq_span(xi, x->dtype, ax.inner, s, z, yi);
            } else if (x->dtype == FFU_DTYPE_F32) {
                q_span(xi, ax.inner, s, z, zt, yi);
            } else {
                for (int64_t k = 0; k < ax.inner; k++)
                    q_store(yi, zt, k, qm_value((float)((const int32_t *)xi)[k], s, z, lo, hi));
            }
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_quantize_linear = {quantize_infer, qdq_run, NULL, 0};
const nn_op_def nn_op_def_dequantize_linear = {dequantize_infer, qdq_run, NULL, 0};

/* ---- DynamicQuantizeLinear ------------------------------------------------------------ */

static ffu_status dyn_quantize_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (x->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input of type %s (f32 only)",
                             ffu_dtype_name(x->dtype));
    if (n->noutputs != 3 || !nn_out(g, n, 1) || !nn_out(g, n, 2))
        return nn_node_error(n, FFU_ERR_FORMAT, "needs its three outputs");
    nn_shape scalar = {.rank = 0};
    ffu_dtype yt = n->op == NN_OP_DYNAMIC_QUANTIZE_STEPS ? FFU_DTYPE_F32 : FFU_DTYPE_U8;
    if ((st = nn_set_out(g, n, 0, yt, &x->shape)) < 0) return st;
    if ((st = nn_set_out(g, n, 1, FFU_DTYPE_F32, &scalar)) < 0) return st;
    return nn_set_out(g, n, 2, FFU_DTYPE_U8, &scalar);
}

/* The range always holds 0, so that 0 is exact; an all-zero input gets scale 0, zero
 * point 0 and zeros. The loops are quant_math.h's. */
static ffu_status dyn_quantize_run(const nn_graph *g, const nn_node *n, void *const *in,
                                   void *const *out, void *scratch)
{
    (void)scratch;
    const float *x = in[0];
    int64_t cnt = nn_numel(nn_in(g, n, 0));
    float mn = 0.0f, mx = 0.0f, scale, zp;
    qm_minmax(x, cnt, &mn, &mx);
    qm_dynamic_params(mn, mx, &scale, &zp);
    if (n->op == NN_OP_DYNAMIC_QUANTIZE_STEPS)
        qm_steps(x, cnt, scale, zp, out[0]);
    else if (scale > 0.0f)
        q_span(x, cnt, scale, zp, FFU_DTYPE_U8, out[0]);
    else
        memset(out[0], 0, (size_t)cnt);
    *(float *)out[1] = scale;
    *(uint8_t *)out[2] = (uint8_t)zp;
    return FFU_OK;
}

const nn_op_def nn_op_def_dynamic_quantize_linear = {dyn_quantize_infer, dyn_quantize_run, NULL, 0};
const nn_op_def nn_op_def_dynamic_quantize_steps = {dyn_quantize_infer, dyn_quantize_run, NULL, 0};
