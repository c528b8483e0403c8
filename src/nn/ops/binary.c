/* Binary and variadic elementwise ops with numpy broadcasting: arithmetic (Add, Sub,
 * Mul, Div, Pow, Mod, Max, Min, Sum, Mean, PRelu), comparisons (bool out), logic (And,
 * Or, Xor), BitShift and Where. These are the reference kernels, but they also carry constant
 * folding of shape arithmetic and run inside detection heads on large tensors, so the
 * broadcast walk (ops_internal.h) merges dims and hands contiguous / scalar rows to
 * loops the compiler vectorises.
 *
 * Each op is generated per dtype from one expression per type class (float, signed,
 * unsigned); f16/bf16 compute in f32. Integer arithmetic wraps (done in uint64) rather
 * than overflowing, and integer division by zero gives 0 instead of trapping. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

typedef struct bin_ctx {
    int fmod; /* Mod: 1 = C fmod (sign of dividend), 0 = sign of divisor */
    int left; /* BitShift: 1 = LEFT, 0 = RIGHT */
} bin_ctx;

#define IDN(v) (v)
#define H2F(v) nn_f16_to_f32(v)
#define F2H(v) nn_f32_to_f16(v)
#define B2F(v) nn_bf16_to_f32(v)
#define F2B(v) nn_f32_to_bf16(v)

/* One inner row: x from a, y from b, strides 0 (broadcast) or 1 (contiguous). The
 * four cases are separate loops so each vectorises. */
#define BIN_FN(fname, ST, CT, OT, LD, STO, EXPR)                                                   \
    static void fname(void *out_, const void *const *in, const int64_t *s, int64_t len,            \
                      const void *ctx_)                                                            \
    {                                                                                              \
        const ST *a = in[0], *b = in[1];                                                           \
        OT *o = out_;                                                                              \
        const bin_ctx *ctx = ctx_;                                                                 \
        (void)ctx;                                                                                 \
        if (s[0] && s[1]) {                                                                        \
            for (int64_t i = 0; i < len; i++) {                                                    \
                CT x = LD(a[i]), y = LD(b[i]);                                                     \
                o[i] = STO(EXPR);                                                                  \
            }                                                                                      \
        } else if (s[0]) {                                                                         \
            CT y = LD(b[0]);                                                                       \
            for (int64_t i = 0; i < len; i++) {                                                    \
                CT x = LD(a[i]);                                                                   \
                o[i] = STO(EXPR);                                                                  \
            }                                                                                      \
        } else if (s[1]) {                                                                         \
            CT x = LD(a[0]);                                                                       \
            for (int64_t i = 0; i < len; i++) {                                                    \
                CT y = LD(b[i]);                                                                   \
                o[i] = STO(EXPR);                                                                  \
            }                                                                                      \
        } else {                                                                                   \
            CT x = LD(a[0]), y = LD(b[0]);                                                         \
            OT v = STO(EXPR);                                                                      \
            for (int64_t i = 0; i < len; i++)                                                      \
                o[i] = v;                                                                          \
        }                                                                                          \
    }

/* Generates op##_<dtype> for every numeric dtype and the table op##_tab. FE: float
 * expression, SE: signed integers, UE: unsigned integers (x, y, ctx in scope). OUT
 * selects the output storage: SAME (input type) or BOOL (uint8_t). */
#define OUT_SAME(T) T
#define OUT_BOOL(T) uint8_t
#define STO_SAME_H F2H
#define STO_SAME_B F2B
#define STO_BOOL_H IDN
#define STO_BOOL_B IDN

#define GEN_BIN(op, OUT, FE, SE, UE)                                                               \
    BIN_FN(op##_f32, float, float, OUT_##OUT(float), IDN, IDN, FE)                                 \
    BIN_FN(op##_f64, double, double, OUT_##OUT(double), IDN, IDN, FE)                              \
    BIN_FN(op##_f16, uint16_t, float, OUT_##OUT(uint16_t), H2F, STO_##OUT##_H, FE)                 \
    BIN_FN(op##_bf16, uint16_t, float, OUT_##OUT(uint16_t), B2F, STO_##OUT##_B, FE)                \
    BIN_FN(op##_i8, int8_t, int8_t, OUT_##OUT(int8_t), IDN, IDN, SE)                               \
    BIN_FN(op##_i16, int16_t, int16_t, OUT_##OUT(int16_t), IDN, IDN, SE)                           \
    BIN_FN(op##_i32, int32_t, int32_t, OUT_##OUT(int32_t), IDN, IDN, SE)                           \
    BIN_FN(op##_i64, int64_t, int64_t, OUT_##OUT(int64_t), IDN, IDN, SE)                           \
    BIN_FN(op##_u8, uint8_t, uint8_t, OUT_##OUT(uint8_t), IDN, IDN, UE)                            \
    BIN_FN(op##_u16, uint16_t, uint16_t, OUT_##OUT(uint16_t), IDN, IDN, UE)                        \
    BIN_FN(op##_u32, uint32_t, uint32_t, OUT_##OUT(uint32_t), IDN, IDN, UE)                        \
    BIN_FN(op##_u64, uint64_t, uint64_t, OUT_##OUT(uint64_t), IDN, IDN, UE)                        \
    static const nn_bcast_fn op##_tab[FFU_DTYPE_COUNT] = {                                         \
        [FFU_DTYPE_F32] = op##_f32,   [FFU_DTYPE_F64] = op##_f64, [FFU_DTYPE_F16] = op##_f16,      \
        [FFU_DTYPE_BF16] = op##_bf16, [FFU_DTYPE_I8] = op##_i8,   [FFU_DTYPE_I16] = op##_i16,      \
        [FFU_DTYPE_I32] = op##_i32,   [FFU_DTYPE_I64] = op##_i64, [FFU_DTYPE_U8] = op##_u8,        \
        [FFU_DTYPE_U16] = op##_u16,   [FFU_DTYPE_U32] = op##_u32, [FFU_DTYPE_U64] = op##_u64,      \
    };

/* Wrapping integer arithmetic: modulo 2^64, then truncated to the type (GCC defines
 * the narrowing conversion as modular). */
#define WRAP(op) ((uint64_t)x op(uint64_t) y)

static inline int64_t sdiv(int64_t x, int64_t y)
{
    if (y == 0) return 0;
    if (y == -1) return (int64_t)(0 - (uint64_t)x);
    return x / y;
}

/* ONNX Mod: fmod = 0 takes the sign of the divisor (Python %), 1 of the dividend. */
static inline int64_t smod(int64_t x, int64_t y, int f)
{
    if (y == 0 || y == -1) return 0;
    int64_t r = x % y;
    if (!f && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

static inline double fmod_onnx(double x, double y, int f)
{
    double r = fmod(x, y);
    if (!f && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

static inline float fmodf_onnx(float x, float y, int f)
{
    float r = fmodf(x, y);
    if (!f && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

#define FMOD_ONNX(x, y, f) _Generic((x), float : fmodf_onnx, default : fmod_onnx)(x, y, f)

GEN_BIN(add, SAME, x + y, WRAP(+), WRAP(+))
GEN_BIN(sub, SAME, x - y, WRAP(-), WRAP(-))
GEN_BIN(mul, SAME, x * y, WRAP(*), WRAP(*))
GEN_BIN(div, SAME, x / y, sdiv(x, y), (y ? x / y : 0))
GEN_BIN(max, SAME, (x != x || x > y) ? x : y, x > y ? x : y, x > y ? x : y)
GEN_BIN(min, SAME, (x != x || x < y) ? x : y, x < y ? x : y, x < y ? x : y)
GEN_BIN(mod, SAME, FMOD_ONNX(x, y, ctx->fmod), smod(x, y, ctx->fmod), (y ? x % y : 0))
GEN_BIN(prelu, SAME, x < 0 ? x * y : x, x < 0 ? WRAP(*) : (uint64_t)x, ((void)y, x))
GEN_BIN(equal, BOOL, x == y, x == y, x == y)
GEN_BIN(greater, BOOL, x > y, x > y, x > y)
GEN_BIN(greater_eq, BOOL, x >= y, x >= y, x >= y)
GEN_BIN(less, BOOL, x < y, x < y, x < y)
GEN_BIN(less_eq, BOOL, x <= y, x <= y, x <= y)

BIN_FN(and_bool, uint8_t, uint8_t, uint8_t, IDN, IDN, (x && y))
BIN_FN(or_bool, uint8_t, uint8_t, uint8_t, IDN, IDN, (x || y))
BIN_FN(xor_bool, uint8_t, uint8_t, uint8_t, IDN, IDN, ((x != 0) != (y != 0)))
/* BitShift (unsigned types only): a shift by the type's width or more gives 0, as the
 * bits all leave (a C shift by 64 or more is undefined). */
#define SHIFT_EXPR (y >= 64 ? 0 : ctx->left ? (uint64_t)x << y : (uint64_t)x >> y)
BIN_FN(bit_shift_u8, uint8_t, uint8_t, uint8_t, IDN, IDN, SHIFT_EXPR)
BIN_FN(bit_shift_u16, uint16_t, uint16_t, uint16_t, IDN, IDN, SHIFT_EXPR)
BIN_FN(bit_shift_u32, uint32_t, uint32_t, uint32_t, IDN, IDN, SHIFT_EXPR)
BIN_FN(bit_shift_u64, uint64_t, uint64_t, uint64_t, IDN, IDN, SHIFT_EXPR)
static const nn_bcast_fn bit_shift_tab[FFU_DTYPE_COUNT] = {
    [FFU_DTYPE_U8] = bit_shift_u8,
    [FFU_DTYPE_U16] = bit_shift_u16,
    [FFU_DTYPE_U32] = bit_shift_u32,
    [FFU_DTYPE_U64] = bit_shift_u64,
};
static const nn_bcast_fn and_tab[FFU_DTYPE_COUNT] = {[FFU_DTYPE_BOOL] = and_bool};
static const nn_bcast_fn or_tab[FFU_DTYPE_COUNT] = {[FFU_DTYPE_BOOL] = or_bool};
static const nn_bcast_fn xor_tab[FFU_DTYPE_COUNT] = {[FFU_DTYPE_BOOL] = xor_bool};
/* Equal also compares booleans */
static const nn_bcast_fn *equal_tab_for(ffu_dtype t)
{
    static const nn_bcast_fn eq_bool[FFU_DTYPE_COUNT] = {[FFU_DTYPE_BOOL] = equal_u8};
    return t == FFU_DTYPE_BOOL ? eq_bool : equal_tab;
}

/* ---- shared infer / run ---------------------------------------------------------------- */

/* Output shape of the broadcast of inputs [0, count). */
static ffu_status bcast_shape(const nn_graph *g, const nn_node *n, int count, nn_shape *out)
{
    *out = nn_in(g, n, 0)->shape;
    for (int i = 1; i < count; i++) {
        const nn_tensor *t = nn_in(g, n, i);
        if (!t) return nn_node_error(n, FFU_ERR_FORMAT, "input %d is missing", i);
        ffu_status st = nn_shape_broadcast(out, &t->shape, out);
        if (st < 0) return nn_node_error(n, FFU_ERR_FORMAT, "%s", ffu_error_message());
    }
    return FFU_OK;
}

/* Common infer: count inputs (-1 = variadic, at least 1) of one dtype that tab covers. */
static ffu_status infer_tab(nn_graph *g, nn_node *n, int count, const nn_bcast_fn *tab,
                            int bool_out)
{
    int req = count < 0 ? 1 : count;
    ffu_status st = nn_check_inputs(g, n, req, count < 0 ? 64 : count);
    if (st < 0) return st;
    int nin = n->ninputs;
    ffu_dtype t = nn_in(g, n, 0)->dtype;
    for (int i = 1; i < nin; i++)
        if (nn_in(g, n, i) && nn_in(g, n, i)->dtype != t)
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d is %s, input 0 is %s", i,
                                 ffu_dtype_name(nn_in(g, n, i)->dtype), ffu_dtype_name(t));
    if ((unsigned)t >= FFU_DTYPE_COUNT || !tab[t])
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s is not supported", ffu_dtype_name(t));
    nn_shape s;
    if ((st = bcast_shape(g, n, nin, &s)) < 0) return st;
    return nn_set_out(g, n, 0, bool_out ? FFU_DTYPE_BOOL : t, &s);
}

/* The fused activation on f32 outputs, laid out as [d0][d1][rest]. */
static void apply_act(const nn_graph *g, const nn_node *n, const nn_tensor *o, void *data)
{
    if (n->act.kind == NN_ACT_NONE || o->dtype != FFU_DTYPE_F32) return;
    int64_t numel = nn_numel(o), outer = 1, ch = 1, inner = numel;
    if (o->shape.rank >= 2) {
        outer = o->shape.d[0];
        ch = o->shape.d[1];
        inner = nn_dims_prod(&o->shape, 2, o->shape.rank);
    }
    const float *slope = NULL;
    int64_t sn = 0;
    if (n->act.kind == NN_ACT_PRELU && n->act.slope >= 0) {
        slope = g->tensors[n->act.slope].data;
        sn = nn_numel(&g->tensors[n->act.slope]);
    }
    nn_act_apply(&n->act, slope, sn, data, outer, ch, inner);
}

/* out = fn(a, b) where out may alias a (variadic accumulation): the walk reads each
 * element before it writes the same position. */
static void run2(const nn_shape *os, ffu_dtype ot, void *out, const nn_tensor *ta, const void *a,
                 const nn_tensor *tb, const void *b, nn_bcast_fn fn, const void *ctx)
{
    const nn_shape *sh[2] = {&ta->shape, &tb->shape};
    nn_bcast bc;
    nn_bcast_init(&bc, os, sh, 2);
    const void *ins[2] = {a, b};
    size_t es[2] = {ffu_dtype_size(ta->dtype), ffu_dtype_size(tb->dtype)};
    nn_bcast_run(&bc, out, ffu_dtype_size(ot), ins, es, fn, ctx);
}

static ffu_status run_tab(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          const nn_bcast_fn *tab, const bin_ctx *ctx)
{
    const nn_tensor *a = nn_in(g, n, 0), *b = nn_in(g, n, 1), *o = nn_out(g, n, 0);
    nn_bcast_fn fn = (unsigned)a->dtype < FFU_DTYPE_COUNT ? tab[a->dtype] : NULL;
    if (!fn)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s is not supported",
                             ffu_dtype_name(a->dtype));
    run2(&o->shape, o->dtype, out[0], a, in[0], b, in[1], fn, ctx);
    apply_act(g, n, o, out[0]);
    return FFU_OK;
}

#define DEF_BINARY(sfx, TAB, BOOL_OUT)                                                             \
    static ffu_status sfx##_infer(nn_graph *g, nn_node *n)                                         \
    {                                                                                              \
        return infer_tab(g, n, 2, TAB, BOOL_OUT);                                                  \
    }                                                                                              \
    static ffu_status sfx##_run(const nn_graph *g, const nn_node *n, void *const *in,              \
                                void *const *out, void *scratch)                                   \
    {                                                                                              \
        (void)scratch;                                                                             \
        return run_tab(g, n, in, out, TAB, NULL);                                                  \
    }                                                                                              \
    const nn_op_def nn_op_def_##sfx = {sfx##_infer, sfx##_run, NULL, NN_OPF_ELEMENTWISE};

DEF_BINARY(add, add_tab, 0)
DEF_BINARY(sub, sub_tab, 0)
DEF_BINARY(mul, mul_tab, 0)
DEF_BINARY(div, div_tab, 0)
DEF_BINARY(greater, greater_tab, 1)
DEF_BINARY(greater_or_equal, greater_eq_tab, 1)
DEF_BINARY(less, less_tab, 1)
DEF_BINARY(less_or_equal, less_eq_tab, 1)
DEF_BINARY(and, and_tab, 1)
DEF_BINARY(or, or_tab, 1)
DEF_BINARY(xor, xor_tab, 1)

/* ---- Equal (numbers and booleans) ---------------------------------------------------- */

static ffu_status equal_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    return infer_tab(g, n, 2, equal_tab_for(nn_in(g, n, 0)->dtype), 1);
}

static ffu_status equal_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    return run_tab(g, n, in, out, equal_tab_for(nn_in(g, n, 0)->dtype), NULL);
}

const nn_op_def nn_op_def_equal = {equal_infer, equal_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- Mod ---------------------------------------------------------------------------------- */

static ffu_status mod_infer(nn_graph *g, nn_node *n) { return infer_tab(g, n, 2, mod_tab, 0); }

static ffu_status mod_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    bin_ctx ctx = {.fmod = nn_attr_int(n, "fmod", 0) != 0};
    return run_tab(g, n, in, out, mod_tab, &ctx);
}

const nn_op_def nn_op_def_mod = {mod_infer, mod_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- BitShift ------------------------------------------------------------------------------ */

static ffu_status bit_shift_infer(nn_graph *g, nn_node *n)
{
    const char *dir = nn_attr_string(n, "direction", "");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "direction '%s' is not LEFT or RIGHT", dir);
    return infer_tab(g, n, 2, bit_shift_tab, 0);
}

static ffu_status bit_shift_run(const nn_graph *g, const nn_node *n, void *const *in,
                                void *const *out, void *scratch)
{
    (void)scratch;
    bin_ctx ctx = {.left = strcmp(nn_attr_string(n, "direction", ""), "LEFT") == 0};
    return run_tab(g, n, in, out, bit_shift_tab, &ctx);
}

const nn_op_def nn_op_def_bit_shift = {bit_shift_infer, bit_shift_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- PRelu: the slope broadcasts unidirectionally to x -------------------------------- */

static ffu_status prelu_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = infer_tab(g, n, 2, prelu_tab, 0);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *sl = nn_in(g, n, 1);
    nn_shape s;
    if ((st = nn_shape_broadcast(&x->shape, &sl->shape, &s)) < 0) return st;
    if (x->shape.rank >= 0 && sl->shape.rank >= 0 && nn_shape_known(&s) &&
        nn_shape_known(&x->shape) && !nn_shape_equal(&s, &x->shape))
        return nn_node_error(n, FFU_ERR_FORMAT, "slope does not broadcast to the input shape");
    return nn_set_out(g, n, 0, x->dtype, &x->shape);
}

static ffu_status prelu_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    return run_tab(g, n, in, out, prelu_tab, NULL);
}

const nn_op_def nn_op_def_prelu = {prelu_infer, prelu_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- variadic: Max, Min, Sum, Mean ------------------------------------------------------- */

/* Folds the inputs into out one at a time (out is the first operand from the second
 * step on; each step reads and writes the same element, so aliasing is safe). */
static ffu_status run_fold(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           const nn_bcast_fn *tab)
{
    const nn_tensor *o = nn_out(g, n, 0), *a = nn_in(g, n, 0);
    nn_bcast_fn fn = (unsigned)a->dtype < FFU_DTYPE_COUNT ? tab[a->dtype] : NULL;
    if (!fn)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s is not supported",
                             ffu_dtype_name(a->dtype));
    if (n->ninputs == 1) { /* a copy */
        memmove(out[0], in[0], (size_t)nn_numel(o) * ffu_dtype_size(o->dtype));
        return FFU_OK;
    }
    run2(&o->shape, o->dtype, out[0], a, in[0], nn_in(g, n, 1), in[1], fn, NULL);
    nn_tensor acc = *o;
    for (int i = 2; i < n->ninputs; i++)
        run2(&o->shape, o->dtype, out[0], &acc, out[0], nn_in(g, n, i), in[i], fn, NULL);
    return FFU_OK;
}

#define DEF_VARIADIC(sfx, TAB)                                                                     \
    static ffu_status sfx##_infer(nn_graph *g, nn_node *n) { return infer_tab(g, n, -1, TAB, 0); } \
    static ffu_status sfx##_run(const nn_graph *g, const nn_node *n, void *const *in,              \
                                void *const *out, void *scratch)                                   \
    {                                                                                              \
        (void)scratch;                                                                             \
        return run_fold(g, n, in, out, TAB);                                                       \
    }                                                                                              \
    const nn_op_def nn_op_def_##sfx = {sfx##_infer, sfx##_run, NULL, NN_OPF_ELEMENTWISE};

DEF_VARIADIC(max, max_tab)
DEF_VARIADIC(min, min_tab)
DEF_VARIADIC(sum, add_tab)

static ffu_status mean_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = infer_tab(g, n, -1, add_tab, 0);
    if (st < 0) return st;
    if (!nn_dtype_is_float(nn_in(g, n, 0)->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "Mean of %s",
                             ffu_dtype_name(nn_in(g, n, 0)->dtype));
    return FFU_OK;
}

static ffu_status mean_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    (void)scratch;
    ffu_status st = run_fold(g, n, in, out, add_tab);
    if (st < 0) return st;
    const nn_tensor *o = nn_out(g, n, 0);
    int64_t cnt = nn_numel(o);
    double inv = 1.0 / n->ninputs;
    switch (o->dtype) {
    case FFU_DTYPE_F32:
        for (int64_t i = 0; i < cnt; i++)
            ((float *)out[0])[i] *= (float)inv;
        break;
    case FFU_DTYPE_F64:
        for (int64_t i = 0; i < cnt; i++)
            ((double *)out[0])[i] *= inv;
        break;
    case FFU_DTYPE_F16: {
        uint16_t *p = out[0];
        for (int64_t i = 0; i < cnt; i++)
            p[i] = nn_f32_to_f16(nn_f16_to_f32(p[i]) * (float)inv);
        break;
    }
    case FFU_DTYPE_BF16: {
        uint16_t *p = out[0];
        for (int64_t i = 0; i < cnt; i++)
            p[i] = nn_f32_to_bf16(nn_bf16_to_f32(p[i]) * (float)inv);
        break;
    }
    default:
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "Mean of %s", ffu_dtype_name(o->dtype));
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_mean = {mean_infer, mean_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- Pow: the exponent may have another type; the output has the base's ------------- */

/* Exact integer power by squaring (negative exponents: 1/x^-e truncated). */
static int64_t ipow(int64_t base, int64_t e)
{
    if (e < 0) return base == 1 ? 1 : base == -1 ? (e & 1 ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

typedef struct pow_ctx {
    ffu_dtype bt, et;
} pow_ctx;

BIN_FN(pow_f32, float, float, float, IDN, IDN, powf(x, y))

/* Mixed / integer types go through double (or exact int64 for int^int). */
static void pow_any(void *out, const void *const *in, const int64_t *s, int64_t len,
                    const void *ctx_)
{
    const pow_ctx *c = ctx_;
    int ints = nn_dtype_is_int(c->bt) && nn_dtype_is_int(c->et);
    for (int64_t i = 0; i < len; i++) {
        if (ints) {
            int64_t r =
                ipow(nn_load_int(in[0], c->bt, i * s[0]), nn_load_int(in[1], c->et, i * s[1]));
            if (c->bt == FFU_DTYPE_I64 || c->bt == FFU_DTYPE_U64)
                ((int64_t *)out)[i] = r; /* exact, wrapping */
            else
                nn_store_f64(out, c->bt, i, (double)r);
        } else {
            double x = nn_load_f64(in[0], c->bt, i * s[0]);
            double y = nn_load_f64(in[1], c->et, i * s[1]);
            nn_store_f64(out, c->bt, i, pow(x, y));
        }
    }
}

static int pow_type_ok(ffu_dtype t) { return nn_dtype_is_float(t) || nn_dtype_is_int(t); }

static ffu_status pow_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *a = nn_in(g, n, 0), *b = nn_in(g, n, 1);
    if (!pow_type_ok(a->dtype) || !pow_type_ok(b->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "Pow of %s by %s", ffu_dtype_name(a->dtype),
                             ffu_dtype_name(b->dtype));
    nn_shape s;
    if ((st = bcast_shape(g, n, 2, &s)) < 0) return st;
    return nn_set_out(g, n, 0, a->dtype, &s);
}

static ffu_status pow_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    const nn_tensor *a = nn_in(g, n, 0), *b = nn_in(g, n, 1), *o = nn_out(g, n, 0);
    if (a->dtype == FFU_DTYPE_F32 && b->dtype == FFU_DTYPE_F32) {
        /* the common cases in models: squares and square roots */
        if (nn_numel(b) == 1 && (((float *)in[1])[0] == 2.0f || ((float *)in[1])[0] == 0.5f)) {
            const float *x = in[0];
            float *y = out[0];
            int64_t cnt = nn_numel(o);
            if (((float *)in[1])[0] == 2.0f)
                for (int64_t i = 0; i < cnt; i++)
                    y[i] = x[i] * x[i];
            else
                for (int64_t i = 0; i < cnt; i++)
                    y[i] = sqrtf(x[i]);
            return FFU_OK;
        }
        run2(&o->shape, o->dtype, out[0], a, in[0], b, in[1], pow_f32, NULL);
        return FFU_OK;
    }
    pow_ctx c = {a->dtype, b->dtype};
    run2(&o->shape, o->dtype, out[0], a, in[0], b, in[1], pow_any, &c);
    return FFU_OK;
}

const nn_op_def nn_op_def_pow = {pow_infer, pow_run, NULL, NN_OPF_ELEMENTWISE};

/* ---- Where(cond, x, y): any element type by size ------------------------------------ */

#define WHERE_FN(fname, T)                                                                         \
    static void fname(void *out_, const void *const *in, const int64_t *s, int64_t len,            \
                      const void *ctx)                                                             \
    {                                                                                              \
        (void)ctx;                                                                                 \
        const uint8_t *c = in[0];                                                                  \
        const T *x = in[1], *y = in[2];                                                            \
        T *o = out_;                                                                               \
        for (int64_t i = 0; i < len; i++)                                                          \
            o[i] = c[i * s[0]] ? x[i * s[1]] : y[i * s[2]];                                        \
    }
WHERE_FN(where_1, uint8_t)
WHERE_FN(where_2, uint16_t)
WHERE_FN(where_4, uint32_t)
WHERE_FN(where_8, uint64_t)

static ffu_status where_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 3, 3);
    if (st < 0) return st;
    const nn_tensor *c = nn_in(g, n, 0), *x = nn_in(g, n, 1), *y = nn_in(g, n, 2);
    if (c->dtype != FFU_DTYPE_BOOL)
        return nn_node_error(n, FFU_ERR_FORMAT, "condition is %s, not bool",
                             ffu_dtype_name(c->dtype));
    if (x->dtype != y->dtype)
        return nn_node_error(n, FFU_ERR_FORMAT, "X is %s but Y is %s", ffu_dtype_name(x->dtype),
                             ffu_dtype_name(y->dtype));
    size_t es = ffu_dtype_size(x->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    /* `_if` (the ONNX loader's If): X and Y are the two branches' values, one of them
     * the If's output, so they must agree; the condition is one value */
    if (nn_attr_int(n, "_if", 0) && x->shape.rank >= 0 && y->shape.rank >= 0 &&
        nn_shape_known(&x->shape) && nn_shape_known(&y->shape) &&
        !nn_shape_equal(&x->shape, &y->shape)) {
        char a[96], b[96];
        return nn_node_error(n, FFU_ERR_UNSUPPORTED,
                             "If: the branches give values of different shapes (%s and %s); "
                             "only branches of one shape are supported",
                             nn_shape_str(&x->shape, a, sizeof a),
                             nn_shape_str(&y->shape, b, sizeof b));
    }
    nn_shape s;
    if ((st = bcast_shape(g, n, 3, &s)) < 0) return st;
    return nn_set_out(g, n, 0, x->dtype, &s);
}

static ffu_status where_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    const nn_tensor *c = nn_in(g, n, 0), *x = nn_in(g, n, 1), *y = nn_in(g, n, 2),
                    *o = nn_out(g, n, 0);
    size_t es = ffu_dtype_size(x->dtype);
    nn_bcast_fn fn = es == 1 ? where_1 : es == 2 ? where_2 : es == 4 ? where_4 : where_8;
    const nn_shape *sh[3] = {&c->shape, &x->shape, &y->shape};
    nn_bcast bc;
    nn_bcast_init(&bc, &o->shape, sh, 3);
    const void *ins[3] = {in[0], in[1], in[2]};
    size_t esz[3] = {1, es, es};
    nn_bcast_run(&bc, out[0], es, ins, esz, fn, NULL);
    return FFU_OK;
}

const nn_op_def nn_op_def_where = {where_infer, where_run, NULL, NN_OPF_ELEMENTWISE};
