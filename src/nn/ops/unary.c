/* Unary elementwise ops: activations (Relu, LeakyRelu, Clip, Sigmoid, Tanh, Elu, Selu,
 * HardSigmoid, HardSwish, Softplus, Softsign, Celu, ThresholdedRelu, Shrink, and the
 * non-ONNX Relu6), math (Sqrt, Exp, Log, Neg, Abs, Reciprocal, Erf, Floor, Ceil, Round,
 * Sign, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Rsqrt,
 * Square), Not, and the float tests IsInf and IsNaN (bool outputs).
 *
 * Each op is one expression in `v` (of compute type `ct`), expanded per dtype by the
 * macros below; <tgmath.h> picks the float or double libm function, so f32 stays f32
 * (ONNX Runtime computes in the tensor's type too). f16/bf16 compute in f32. Ops whose
 * ONNX definition takes integers (Relu, Neg, Abs, Sign, Clip, ...) get integer cases. */
#include <float.h>
#include <tgmath.h>

#include "ops_internal.h"

typedef struct uparam {
    float a, b, g;    /* alpha, beta, gamma attributes */
    float l, bias;    /* Shrink's lambd and bias */
} uparam;

#define IDN(v) (v)
#define H2F(v) nn_f16_to_f32(v)
#define F2H(v) nn_f32_to_f16(v)
#define B2F(v) nn_bf16_to_f32(v)
#define F2B(v) nn_f32_to_bf16(v)

/* One typed loop: in -> out through EXPR (v, p and the typedef ct in scope). */
#define UN_LOOP(ST, CT, LD, STO, EXPR)                                                             \
    do {                                                                                           \
        typedef CT ct __attribute__((unused));                                                     \
        const ST *x_ = in;                                                                         \
        ST *o_ = out;                                                                              \
        for (int64_t i = 0; i < cnt; i++) {                                                        \
            CT v = LD(x_[i]);                                                                      \
            o_[i] = STO(EXPR);                                                                     \
        }                                                                                          \
    } while (0)

#define FLOAT_CASES(FE)                                                                            \
    case FFU_DTYPE_F32:                                                                            \
        UN_LOOP(float, float, IDN, IDN, FE);                                                       \
        break;                                                                                     \
    case FFU_DTYPE_F64:                                                                            \
        UN_LOOP(double, double, IDN, IDN, FE);                                                     \
        break;                                                                                     \
    case FFU_DTYPE_F16:                                                                            \
        UN_LOOP(uint16_t, float, H2F, F2H, FE);                                                    \
        break;                                                                                     \
    case FFU_DTYPE_BF16:                                                                           \
        UN_LOOP(uint16_t, float, B2F, F2B, FE);                                                    \
        break;

#define INT_CASES(SE, UE)                                                                          \
    case FFU_DTYPE_I8:                                                                             \
        UN_LOOP(int8_t, int8_t, IDN, IDN, SE);                                                     \
        break;                                                                                     \
    case FFU_DTYPE_I16:                                                                            \
        UN_LOOP(int16_t, int16_t, IDN, IDN, SE);                                                   \
        break;                                                                                     \
    case FFU_DTYPE_I32:                                                                            \
        UN_LOOP(int32_t, int32_t, IDN, IDN, SE);                                                   \
        break;                                                                                     \
    case FFU_DTYPE_I64:                                                                            \
        UN_LOOP(int64_t, int64_t, IDN, IDN, SE);                                                   \
        break;                                                                                     \
    case FFU_DTYPE_U8:                                                                             \
        UN_LOOP(uint8_t, uint8_t, IDN, IDN, UE);                                                   \
        break;                                                                                     \
    case FFU_DTYPE_U16:                                                                            \
        UN_LOOP(uint16_t, uint16_t, IDN, IDN, UE);                                                 \
        break;                                                                                     \
    case FFU_DTYPE_U32:                                                                            \
        UN_LOOP(uint32_t, uint32_t, IDN, IDN, UE);                                                 \
        break;                                                                                     \
    case FFU_DTYPE_U64:                                                                            \
        UN_LOOP(uint64_t, uint64_t, IDN, IDN, UE);                                                 \
        break;

/* Which dtypes an op accepts. */
enum { UN_FLOAT = 1, UN_INT = 2, UN_BOOL = 4 };

static ffu_status unary_infer_kinds(nn_graph *g, nn_node *n, int kinds)
{
    /* Clip's optional bounds are checked by clip_infer */
    ffu_status st = nn_check_inputs(g, n, 1, n->op == NN_OP_CLIP ? 3 : 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    int ok = ((kinds & UN_FLOAT) && nn_dtype_is_float(x->dtype)) ||
             ((kinds & UN_INT) && nn_dtype_is_int(x->dtype)) ||
             ((kinds & UN_BOOL) && x->dtype == FFU_DTYPE_BOOL);
    if (!ok)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s is not supported",
                             ffu_dtype_name(x->dtype));
    return nn_set_out(g, n, 0, x->dtype, &x->shape);
}

static ffu_status infer_float(nn_graph *g, nn_node *n) { return unary_infer_kinds(g, n, UN_FLOAT); }
static ffu_status infer_num(nn_graph *g, nn_node *n)
{
    return unary_infer_kinds(g, n, UN_FLOAT | UN_INT);
}

static ffu_status unsupported(const nn_node *n, ffu_dtype t)
{
    return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s is not supported", ffu_dtype_name(t));
}

#define UN_PROLOGUE(A, B, G)                                                                       \
    (void)scratch;                                                                                 \
    const nn_tensor *t_ = nn_in(g, n, 0);                                                          \
    int64_t cnt = nn_numel(t_);                                                                    \
    const void *in = in_[0];                                                                       \
    void *out = out_[0];                                                                           \
    uparam p = {nn_attr_float(n, "alpha", A), nn_attr_float(n, "beta", B),                         \
                nn_attr_float(n, "gamma", G), nn_attr_float(n, "lambd", 0.5f),                     \
                nn_attr_float(n, "bias", 0.0f)};                                                   \
    (void)p;

/* A float-only op. A, B, G: attribute defaults. */
#define DEF_UNARY_F(sfx, A, B, G, FE)                                                              \
    static ffu_status sfx##_run(const nn_graph *g, const nn_node *n, void *const *in_,             \
                                void *const *out_, void *scratch)                                  \
    {                                                                                              \
        UN_PROLOGUE(A, B, G)                                                                       \
        switch (t_->dtype) {                                                                       \
            FLOAT_CASES(FE)                                                                        \
        default:                                                                                   \
            return unsupported(n, t_->dtype);                                                      \
        }                                                                                          \
        return FFU_OK;                                                                             \
    }                                                                                              \
    const nn_op_def nn_op_def_##sfx = {infer_float, sfx##_run, NULL, NN_OPF_ELEMENTWISE};

/* An op on floats and integers: SE for signed, UE for unsigned types. */
#define DEF_UNARY_N(sfx, A, B, G, FE, SE, UE)                                                      \
    static ffu_status sfx##_run(const nn_graph *g, const nn_node *n, void *const *in_,             \
                                void *const *out_, void *scratch)                                  \
    {                                                                                              \
        UN_PROLOGUE(A, B, G)                                                                       \
        switch (t_->dtype) {                                                                       \
            FLOAT_CASES(FE)                                                                        \
            INT_CASES(SE, UE)                                                                      \
        default:                                                                                   \
            return unsupported(n, t_->dtype);                                                      \
        }                                                                                          \
        return FFU_OK;                                                                             \
    }                                                                                              \
    const nn_op_def nn_op_def_##sfx = {infer_num, sfx##_run, NULL, NN_OPF_ELEMENTWISE};

/* log(1 + e^v) without overflow for large v */
#define SOFTPLUS(v) ((v) > 0 ? (v) + log1p(exp(-(v))) : log1p(exp(v)))
/* wrapping negation / multiplication for integers */
#define INEG(v) (0 - (uint64_t)(v))
#define IMUL(a, b) ((uint64_t)(a) * (uint64_t)(b))

DEF_UNARY_N(relu, 0, 0, 0, v > 0 ? v : (ct)0, v > 0 ? v : 0, v)
DEF_UNARY_F(leaky_relu, 0.01f, 0, 0, v < 0 ? (ct)p.a * v : v)
DEF_UNARY_F(sigmoid, 0, 0, 0, 1 / (1 + exp(-v)))
DEF_UNARY_F(tanh, 0, 0, 0, tanh(v))
DEF_UNARY_F(elu, 1.0f, 0, 0, v < 0 ? (ct)p.a * expm1(v) : v)
DEF_UNARY_F(selu, 1.67326319217681884765625f, 0, 1.05070102214813232421875f,
            v > 0 ? (ct)p.g * v : (ct)p.g * ((ct)p.a * exp(v) - (ct)p.a))
DEF_UNARY_F(hard_sigmoid, 0.2f, 0.5f, 0, fmax((ct)0, fmin((ct)1, (ct)p.a * v + (ct)p.b)))
DEF_UNARY_F(hard_swish, 0, 0, 0, v * fmax((ct)0, fmin((ct)1, v * (ct)(1.0 / 6.0) + (ct)0.5)))
DEF_UNARY_F(softplus, 0, 0, 0, SOFTPLUS(v))
DEF_UNARY_F(sqrt, 0, 0, 0, sqrt(v))
DEF_UNARY_F(exp, 0, 0, 0, exp(v))
DEF_UNARY_F(log, 0, 0, 0, log(v))
DEF_UNARY_N(neg, 0, 0, 0, -v, INEG(v), INEG(v))
DEF_UNARY_N(abs, 0, 0, 0, fabs(v), v < 0 ? INEG(v) : (uint64_t)v, v)
DEF_UNARY_F(reciprocal, 0, 0, 0, 1 / v)
DEF_UNARY_F(erf, 0, 0, 0, erf(v))
DEF_UNARY_F(floor, 0, 0, 0, floor(v))
DEF_UNARY_F(ceil, 0, 0, 0, ceil(v))
/* rint rounds half to even in the default rounding mode, as ONNX Round requires */
DEF_UNARY_F(round, 0, 0, 0, rint(v))
DEF_UNARY_N(sign, 0, 0, 0, v > 0 ? (ct)1 : v < 0 ? (ct)-1 : v, (v > 0) - (v < 0), v != 0)
DEF_UNARY_F(sin, 0, 0, 0, sin(v))
DEF_UNARY_F(cos, 0, 0, 0, cos(v))
DEF_UNARY_F(rsqrt, 0, 0, 0, 1 / sqrt(v))
DEF_UNARY_N(square, 0, 0, 0, v * v, IMUL(v, v), IMUL(v, v))
DEF_UNARY_F(tan, 0, 0, 0, tan(v))
DEF_UNARY_F(asin, 0, 0, 0, asin(v))
DEF_UNARY_F(acos, 0, 0, 0, acos(v))
DEF_UNARY_F(atan, 0, 0, 0, atan(v))
DEF_UNARY_F(sinh, 0, 0, 0, sinh(v))
DEF_UNARY_F(cosh, 0, 0, 0, cosh(v))
DEF_UNARY_F(asinh, 0, 0, 0, asinh(v))
DEF_UNARY_F(acosh, 0, 0, 0, acosh(v))
DEF_UNARY_F(atanh, 0, 0, 0, atanh(v))
DEF_UNARY_F(softsign, 0, 0, 0, v / (1 + fabs(v)))
/* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), as the ONNX function body says */
DEF_UNARY_F(celu, 1.0f, 0, 0, fmax((ct)0, v) + fmin((ct)0, (ct)p.a * expm1(v / (ct)p.a)))
DEF_UNARY_F(thresholded_relu, 1.0f, 0, 0, v > (ct)p.a ? v : (ct)0)
/* Shrink on integers computes in double (lambd and bias are floats) and converts back
 * without undefined behaviour when the result leaves the type's range */
#define SHRINK_D(x)                                                                                \
    ((x) < -(double)p.l ? (x) + (double)p.bias : (x) > (double)p.l ? (x) - (double)p.bias : 0.0)
#define SHRINK_I(v) (ct)(uint64_t)nn_f64_to_i64(SHRINK_D((double)(v)))
DEF_UNARY_N(shrink, 0, 0, 0, v < -(ct)p.l ? v + (ct)p.bias : v > (ct)p.l ? v - (ct)p.bias : (ct)0,
            SHRINK_I(v), SHRINK_I(v))
/* clang-format off */
DEF_UNARY_N(relu6, 0, 0, 0, fmin(fmax(v, (ct)0), (ct)6), v < 0 ? 0 : v > 6 ? 6 : v, v > 6 ? 6 : v)
/* clang-format on */

/* ---- Not ------------------------------------------------------------------------------- */

static ffu_status not_infer(nn_graph *g, nn_node *n) { return unary_infer_kinds(g, n, UN_BOOL); }

static ffu_status not_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    int64_t cnt = nn_numel(nn_in(g, n, 0));
    const uint8_t *x = in[0];
    uint8_t *y = out[0];
    for (int64_t i = 0; i < cnt; i++)
        y[i] = !x[i];
    return FFU_OK;
}

const nn_op_def nn_op_def_not = {not_infer, not_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- Clip(x, min?, max?): bounds are optional scalar inputs of x's type --------------- */

static ffu_status clip_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 3);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    for (int i = 1; i < n->ninputs; i++) {
        const nn_tensor *b = nn_in(g, n, i);
        if (!b) continue;
        if (b->dtype != x->dtype)
            return nn_node_error(n, FFU_ERR_FORMAT, "bound %d is %s, input is %s", i,
                                 ffu_dtype_name(b->dtype), ffu_dtype_name(x->dtype));
        if (nn_numel(b) > 1) return nn_node_error(n, FFU_ERR_FORMAT, "bound %d is not a scalar", i);
    }
    return unary_infer_kinds(g, n, UN_FLOAT | UN_INT);
}

#define CLIP_CASE(DT, T, LOW, HIGH)                                                                \
    case DT: {                                                                                     \
        const T *x = in[0];                                                                        \
        T *y = out[0];                                                                             \
        T lo = in[1] && nn_numel(nn_in(g, n, 1)) == 1 ? *(const T *)in[1] : (LOW);                 \
        T hi = in[2] && nn_numel(nn_in(g, n, 2)) == 1 ? *(const T *)in[2] : (HIGH);                \
        for (int64_t i = 0; i < cnt; i++) {                                                        \
            T v = x[i];                                                                            \
            v = v < lo ? lo : v;                                                                   \
            y[i] = v > hi ? hi : v;                                                                \
        }                                                                                          \
        break;                                                                                     \
    }

static ffu_status clip_run(const nn_graph *g, const nn_node *n, void *const *in_, void *const *out,
                           void *scratch)
{
    (void)scratch;
    const nn_tensor *t = nn_in(g, n, 0);
    int64_t cnt = nn_numel(t);
    const void *in[3] = {in_[0], n->ninputs > 1 ? in_[1] : NULL, n->ninputs > 2 ? in_[2] : NULL};
    switch (t->dtype) {
        CLIP_CASE(FFU_DTYPE_F32, float, -INFINITY, INFINITY)
        CLIP_CASE(FFU_DTYPE_F64, double, -INFINITY, INFINITY)
        CLIP_CASE(FFU_DTYPE_I8, int8_t, INT8_MIN, INT8_MAX)
        CLIP_CASE(FFU_DTYPE_I16, int16_t, INT16_MIN, INT16_MAX)
        CLIP_CASE(FFU_DTYPE_I32, int32_t, INT32_MIN, INT32_MAX)
        CLIP_CASE(FFU_DTYPE_I64, int64_t, INT64_MIN, INT64_MAX)
        CLIP_CASE(FFU_DTYPE_U8, uint8_t, 0, UINT8_MAX)
        CLIP_CASE(FFU_DTYPE_U16, uint16_t, 0, UINT16_MAX)
        CLIP_CASE(FFU_DTYPE_U32, uint32_t, 0, UINT32_MAX)
        CLIP_CASE(FFU_DTYPE_U64, uint64_t, 0, UINT64_MAX)
    case FFU_DTYPE_F16:
    case FFU_DTYPE_BF16: {
        int h = t->dtype == FFU_DTYPE_F16;
        const uint16_t *x = in[0];
        uint16_t *y = out[0];
        float lo = -INFINITY, hi = INFINITY;
        if (in[1] && nn_numel(nn_in(g, n, 1)) == 1)
            lo = h ? H2F(*(const uint16_t *)in[1]) : B2F(*(const uint16_t *)in[1]);
        if (in[2] && nn_numel(nn_in(g, n, 2)) == 1)
            hi = h ? H2F(*(const uint16_t *)in[2]) : B2F(*(const uint16_t *)in[2]);
        for (int64_t i = 0; i < cnt; i++) {
            float v = h ? H2F(x[i]) : B2F(x[i]);
            v = v < lo ? lo : v > hi ? hi : v;
            y[i] = h ? F2H(v) : F2B(v);
        }
        break;
    }
    default:
        return unsupported(n, t->dtype);
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_clip = {clip_infer, clip_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- IsInf, IsNaN: float in, bool out ------------------------------------------------- */

static ffu_status is_test_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!nn_dtype_is_float(x->dtype)) return unsupported(n, x->dtype);
    return nn_set_out(g, n, 0, FFU_DTYPE_BOOL, &x->shape);
}

static ffu_status is_test_run(const nn_graph *g, const nn_node *n, void *const *in,
                              void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t cnt = nn_numel(x);
    uint8_t *y = out[0];
    int nan = n->op == NN_OP_IS_NAN;
    int pos = nn_attr_int(n, "detect_positive", 1) != 0;
    int neg = nn_attr_int(n, "detect_negative", 1) != 0;
    for (int64_t i = 0; i < cnt; i++) {
        double v = nn_load_f64(in[0], x->dtype, i);
        y[i] = nan ? isnan(v) : isinf(v) && (v > 0 ? pos : neg);
    }
    return FFU_OK;
}

/* not NN_OPF_ELEMENTWISE: the output's elements are narrower than the input's */
const nn_op_def nn_op_def_is_inf = {is_test_infer, is_test_run, NULL, 0};
const nn_op_def nn_op_def_is_nan = {is_test_infer, is_test_run, NULL, 0};
