/* Element types and shapes: dtype names and sizes, half/bfloat16 conversion, Cast
 * semantics, shape arithmetic and broadcasting, and fused activations. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

static const struct {
    const char *name;
    size_t size;
} dtype_info[FFU_DTYPE_COUNT] = {
    [FFU_DTYPE_UNDEFINED] = {"undefined", 0}, [FFU_DTYPE_F32] = {"f32", 4},
    [FFU_DTYPE_F16] = {"f16", 2},             [FFU_DTYPE_BF16] = {"bf16", 2},
    [FFU_DTYPE_F64] = {"f64", 8},             [FFU_DTYPE_I8] = {"i8", 1},
    [FFU_DTYPE_U8] = {"u8", 1},               [FFU_DTYPE_I16] = {"i16", 2},
    [FFU_DTYPE_U16] = {"u16", 2},             [FFU_DTYPE_I32] = {"i32", 4},
    [FFU_DTYPE_U32] = {"u32", 4},             [FFU_DTYPE_I64] = {"i64", 8},
    [FFU_DTYPE_U64] = {"u64", 8},             [FFU_DTYPE_BOOL] = {"bool", 1},
};
_Static_assert(FFU_DTYPE_COUNT == 14, "dtype_info must list every dtype");

const char *ffu_dtype_name(ffu_dtype t)
{
    return (unsigned)t < FFU_DTYPE_COUNT ? dtype_info[t].name : "invalid";
}

size_t ffu_dtype_size(ffu_dtype t) { return (unsigned)t < FFU_DTYPE_COUNT ? dtype_info[t].size : 0; }

/* ---- half and bfloat16 ------------------------------------------------------------------ */

/* A half's float without branches, so that loops over it vectorise: a normal or
 * infinite/NaN half moves its bits and rebiases the exponent (by 112, or to 255 for
 * exponent 31); a subnormal is its mantissa times 2^-24, both exact in f32. */
static inline float widen_half(uint32_t h)
{
    const uint32_t em = h & 0x7fff, sign = (h & 0x8000) << 16;
    const uint32_t special = 0u - (em >= 0x7c00), sub = 0u - (em < 0x400); /* masks */
    const uint32_t moved = (em << 13) + (112u << 23) + (special & 112u << 23);
    union {
        float f;
        uint32_t u;
    } small = {(float)(int32_t)em * 0x1p-24f}, out;
    out.u = sign | (sub & small.u) | (~sub & moved);
    return out.f;
}

float nn_f16_to_f32(uint16_t h) { return widen_half(h); }

void nn_f16_to_f32_n(const uint8_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = widen_half((uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8);
}

uint16_t nn_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t man = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - exp;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | (uint32_t)exp << 10 | man >> 13, rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exp: fine */
    return (uint16_t)half;
}

float nn_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t nn_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- Cast -------------------------------------------------------------------------------- */

static double load_f64(const void *p, ffu_dtype t, size_t i)
{
    switch (t) {
    case FFU_DTYPE_F32: return ((const float *)p)[i];
    case FFU_DTYPE_F16: return nn_f16_to_f32(((const uint16_t *)p)[i]);
    case FFU_DTYPE_BF16: return nn_bf16_to_f32(((const uint16_t *)p)[i]);
    case FFU_DTYPE_F64: return ((const double *)p)[i];
    case FFU_DTYPE_I8: return ((const int8_t *)p)[i];
    case FFU_DTYPE_U8: return ((const uint8_t *)p)[i];
    case FFU_DTYPE_I16: return ((const int16_t *)p)[i];
    case FFU_DTYPE_U16: return ((const uint16_t *)p)[i];
    case FFU_DTYPE_I32: return ((const int32_t *)p)[i];
    case FFU_DTYPE_U32: return ((const uint32_t *)p)[i];
    case FFU_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case FFU_DTYPE_U64: return (double)((const uint64_t *)p)[i];
    case FFU_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

static int is_int(ffu_dtype t)
{
    return t == FFU_DTYPE_I8 || t == FFU_DTYPE_U8 || t == FFU_DTYPE_I16 || t == FFU_DTYPE_U16 ||
           t == FFU_DTYPE_I32 || t == FFU_DTYPE_U32 || t == FFU_DTYPE_I64 || t == FFU_DTYPE_U64;
}

/* Integer to integer goes through int64 so large values stay exact. */
static int64_t load_i64(const void *p, ffu_dtype t, size_t i)
{
    switch (t) {
    case FFU_DTYPE_I64: return ((const int64_t *)p)[i];
    case FFU_DTYPE_U64: return (int64_t)((const uint64_t *)p)[i];
    case FFU_DTYPE_U32: return ((const uint32_t *)p)[i];
    default: return (int64_t)load_f64(p, t, i);
    }
}

/* Float to integer: truncate toward zero, saturate instead of invoking UB. */
static int64_t f64_to_i64(double v)
{
    if (v != v) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

ffu_status nn_convert(const void *src, ffu_dtype st, void *dst, ffu_dtype dt, size_t n)
{
    if (!ffu_dtype_size(st) || !ffu_dtype_size(dt))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "cannot convert %s to %s", ffu_dtype_name(st),
                             ffu_dtype_name(dt));
    if (st == dt) {
        memmove(dst, src, n * ffu_dtype_size(st));
        return FFU_OK;
    }
    if (st == FFU_DTYPE_F16 && dt == FFU_DTYPE_F32 && (const void *)src != dst) {
        nn_f16_to_f32_n(src, dst, n); /* every f16 model's weights: the fast path */
        return FFU_OK;
    }
    int int_path = is_int(st) && is_int(dt);
    for (size_t i = 0; i < n; i++) {
        double v = int_path ? 0 : load_f64(src, st, i);
        int64_t iv = int_path ? load_i64(src, st, i) : f64_to_i64(v);
        switch (dt) {
        case FFU_DTYPE_F32: ((float *)dst)[i] = (float)v; break;
        case FFU_DTYPE_F16: ((uint16_t *)dst)[i] = nn_f32_to_f16((float)v); break;
        case FFU_DTYPE_BF16: ((uint16_t *)dst)[i] = nn_f32_to_bf16((float)v); break;
        case FFU_DTYPE_F64: ((double *)dst)[i] = v; break;
        case FFU_DTYPE_I8: ((int8_t *)dst)[i] = (int8_t)iv; break;
        case FFU_DTYPE_U8: ((uint8_t *)dst)[i] = (uint8_t)iv; break;
        case FFU_DTYPE_I16: ((int16_t *)dst)[i] = (int16_t)iv; break;
        case FFU_DTYPE_U16: ((uint16_t *)dst)[i] = (uint16_t)iv; break;
        case FFU_DTYPE_I32: ((int32_t *)dst)[i] = (int32_t)iv; break;
        case FFU_DTYPE_U32: ((uint32_t *)dst)[i] = (uint32_t)iv; break;
        case FFU_DTYPE_I64: ((int64_t *)dst)[i] = iv; break;
        case FFU_DTYPE_U64: ((uint64_t *)dst)[i] = (uint64_t)iv; break;
        case FFU_DTYPE_BOOL:
            ((uint8_t *)dst)[i] = int_path ? iv != 0 : v != 0;
            break;
        default: break;
        }
    }
    return FFU_OK;
}

/* ---- shapes ------------------------------------------------------------------------------ */

int64_t nn_shape_numel(const nn_shape *s)
{
    if (!s || s->rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->d[i] < 0) return -1;
        if (s->d[i] && n > INT64_MAX / s->d[i]) return -1;
        n *= s->d[i];
    }
    return n;
}

int nn_shape_known(const nn_shape *s) { return s->rank >= 0 && nn_shape_numel(s) >= 0; }

int nn_shape_equal(const nn_shape *a, const nn_shape *b)
{
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

ffu_status nn_shape_broadcast(const nn_shape *a, const nn_shape *b, nn_shape *out)
{
    if (a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return FFU_OK;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    nn_shape o = {.rank = r};
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da == db || db == 1) o.d[i] = da;
        else if (da == 1) o.d[i] = db;
        else if (da < 0 || db < 0) o.d[i] = -1;
        else {
            char sa[64], sb[64];
            return ffu_error_set(FFU_ERR_FORMAT, "shapes %s and %s do not broadcast",
                                 nn_shape_str(a, sa, sizeof sa), nn_shape_str(b, sb, sizeof sb));
        }
    }
    *out = o;
    return FFU_OK;
}

char *nn_shape_str(const nn_shape *s, char *buf, size_t len)
{
    if (s->rank < 0) {
        snprintf(buf, len, "(unknown rank)");
        return buf;
    }
    if (s->rank == 0) {
        snprintf(buf, len, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < s->rank && used < len; i++) {
        int n = s->d[i] >= 0 ? snprintf(buf + used, len - used, "%s%lld", i ? "x" : "",
                                        (long long)s->d[i])
                             : snprintf(buf + used, len - used, "%s?", i ? "x" : "");
        if (n < 0) break;
        used += (size_t)n;
    }
    return buf;
}

/* ---- fused activations --------------------------------------------------------------------- */

void nn_act_apply(const nn_act *a, const float *slope, int64_t slope_numel, float *x,
                  int64_t outer, int64_t channels, int64_t inner)
{
    if (a->kind == NN_ACT_NONE) return;
    int64_t n = outer * channels * inner;
    switch (a->kind) {
    case NN_ACT_RELU:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
        break;
    case NN_ACT_RELU6:
        for (int64_t i = 0; i < n; i++) x[i] = fminf(fmaxf(x[i], 0), 6);
        break;
    case NN_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) x[i] = fminf(fmaxf(x[i], a->alpha), a->beta);
        break;
    case NN_ACT_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < 0 ? a->alpha * x[i] : x[i];
        break;
    case NN_ACT_PRELU:
        for (int64_t o = 0; o < outer; o++)
            for (int64_t c = 0; c < channels; c++) {
                float s = slope ? slope[slope_numel == channels ? c : 0] : 0;
                float *p = x + (o * channels + c) * inner;
                for (int64_t i = 0; i < inner; i++) p[i] = p[i] < 0 ? s * p[i] : p[i];
            }
        break;
    case NN_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) x[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    case NN_ACT_TANH:
        for (int64_t i = 0; i < n; i++) x[i] = tanhf(x[i]);
        break;
    case NN_ACT_HARD_SWISH:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] * fminf(fmaxf(x[i] / 6.0f + 0.5f, 0), 1);
        break;
    case NN_ACT_ELU:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] < 0 ? a->alpha * (expf(x[i]) - 1) : x[i];
        break;
    default: break;
    }
}
