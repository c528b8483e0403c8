/* Per-element arithmetic of the cuda backend's kernels (nn_kernels.cu), written once as
 * FFU_HD functions (src/gpu/gpu_hd.h) so that tests/unit/test_nn_cuda_hd.c runs the
 * very code the kernels run on the CPU and compares it with the ref kernels of
 * src/nn/ops/ (unary.c, binary.c, tensor.c's nn_act_apply) on machines without a GPU.
 * Every formula mirrors its ref twin operation for operation (float functions where
 * ref uses tgmath on f32), so the only differences left are the libm vs CUDA math
 * library ulps. Plain C11/CUDA common subset: no C++ features, no compound literals. */
#ifndef FFU_NN_CUDA_HD_H
#define FFU_NN_CUDA_HD_H

#include <math.h>
#include <stdint.h>

#include "gpu/gpu_hd.h"

/* Unary ops (the cuda backend maps nn_op onto these). */
enum {
    NN_CU_RELU = 0,
    NN_CU_LEAKY_RELU, /* a */
    NN_CU_CLIP,       /* [a, b] */
    NN_CU_SIGMOID,
    NN_CU_TANH,
    NN_CU_ELU,          /* a */
    NN_CU_SELU,         /* a, g */
    NN_CU_HARD_SIGMOID, /* a, b */
    NN_CU_HARD_SWISH,
    NN_CU_SOFTPLUS,
    NN_CU_SQRT,
    NN_CU_EXP,
    NN_CU_LOG,
    NN_CU_NEG,
    NN_CU_ABS,
    NN_CU_RECIPROCAL,
    NN_CU_ERF,
    NN_CU_FLOOR,
    NN_CU_CEIL,
    NN_CU_ROUND,
    NN_CU_SIGN,
    NN_CU_SIN,
    NN_CU_COS,
    NN_CU_RSQRT,
    NN_CU_SQUARE,
    NN_CU_RELU6,
    NN_CU_SCALE, /* v * a (Mean's division) */
    NN_CU_UNARY_COUNT,
};

/* Binary ops with broadcasting. */
enum {
    NN_CU_ADD = 0,
    NN_CU_SUB,
    NN_CU_MUL,
    NN_CU_DIV,
    NN_CU_POW,
    NN_CU_MAX,
    NN_CU_MIN,
    NN_CU_PRELU, /* x < 0 ? slope * x : x with slope the second operand */
    NN_CU_BINARY_COUNT,
};

/* Fused activations: the values of nn_act_kind (ir.h), repeated here because the .cu
 * files do not include the IR. test_nn_cuda_hd.c checks they agree. */
enum {
    NN_CU_ACT_NONE = 0,
    NN_CU_ACT_RELU,
    NN_CU_ACT_RELU6,
    NN_CU_ACT_CLIP,
    NN_CU_ACT_LEAKY_RELU,
    NN_CU_ACT_PRELU,
    NN_CU_ACT_SIGMOID,
    NN_CU_ACT_TANH,
    NN_CU_ACT_HARD_SWISH,
    NN_CU_ACT_ELU,
};

FFU_HD float nn_hd_unary(int op, float v, float a, float b, float g)
{
    switch (op) {
    case NN_CU_RELU: return v > 0 ? v : 0.0f;
    case NN_CU_LEAKY_RELU: return v < 0 ? a * v : v;
    case NN_CU_CLIP: {
        float t = v < a ? a : v;
        return t > b ? b : t;
    }
    case NN_CU_SIGMOID: return 1 / (1 + expf(-v));
    case NN_CU_TANH: return tanhf(v);
    case NN_CU_ELU: return v < 0 ? a * expm1f(v) : v;
    case NN_CU_SELU: return v > 0 ? g * v : g * (a * expf(v) - a);
    case NN_CU_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a * v + b));
    case NN_CU_HARD_SWISH: return v * fmaxf(0.0f, fminf(1.0f, v * (float)(1.0 / 6.0) + 0.5f));
    case NN_CU_SOFTPLUS: return v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v));
    case NN_CU_SQRT: return sqrtf(v);
    case NN_CU_EXP: return expf(v);
    case NN_CU_LOG: return logf(v);
    case NN_CU_NEG: return -v;
    case NN_CU_ABS: return fabsf(v);
    case NN_CU_RECIPROCAL: return 1 / v;
    case NN_CU_ERF: return erff(v);
    case NN_CU_FLOOR: return floorf(v);
    case NN_CU_CEIL: return ceilf(v);
    case NN_CU_ROUND: return rintf(v);
    case NN_CU_SIGN: return v > 0 ? 1.0f : v < 0 ? -1.0f : v;
    case NN_CU_SIN: return sinf(v);
    case NN_CU_COS: return cosf(v);
    case NN_CU_RSQRT: return 1 / sqrtf(v);
    case NN_CU_SQUARE: return v * v;
    case NN_CU_RELU6: return fminf(fmaxf(v, 0.0f), 6.0f);
    case NN_CU_SCALE: return v * a;
    default: return v;
    }
}

FFU_HD float nn_hd_binary(int op, float x, float y)
{
    switch (op) {
    case NN_CU_ADD: return x + y;
    case NN_CU_SUB: return x - y;
    case NN_CU_MUL: return x * y;
    case NN_CU_DIV: return x / y;
    case NN_CU_POW: return powf(x, y);
    case NN_CU_MAX: return (x != x || x > y) ? x : y;
    case NN_CU_MIN: return (x != x || x < y) ? x : y;
    case NN_CU_PRELU: return x < 0 ? y * x : x;
    default: return x;
    }
}

/* The fused activation of node->act (nn_act_apply in tensor.c); slope is the PReLU
 * slope of this element's channel. */
FFU_HD float nn_hd_act(int kind, float x, float alpha, float beta, float slope)
{
    switch (kind) {
    case NN_CU_ACT_RELU: return x > 0 ? x : 0;
    case NN_CU_ACT_RELU6: return fminf(fmaxf(x, 0), 6);
    case NN_CU_ACT_CLIP: return fminf(fmaxf(x, alpha), beta);
    case NN_CU_ACT_LEAKY_RELU: return x < 0 ? alpha * x : x;
    case NN_CU_ACT_PRELU: return x < 0 ? slope * x : x;
    case NN_CU_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case NN_CU_ACT_TANH: return tanhf(x);
    case NN_CU_ACT_HARD_SWISH: return x * fminf(fmaxf(x / 6.0f + 0.5f, 0), 1);
    case NN_CU_ACT_ELU: return x < 0 ? alpha * (expf(x) - 1) : x;
    default: return x;
    }
}

/* Source index of output index o along one dim of Pad (pad.c's src_index): -1 for the
 * constant fill. mode: 0 constant, 1 reflect, 2 edge, 3 wrap. */
FFU_HD int64_t nn_hd_pad_src(int64_t o, int64_t p0, int64_t in, int mode)
{
    int64_t i = o - p0;
    if (i >= 0 && i < in) return i;
    if (in <= 0) return -1;
    switch (mode) {
    case 2: return i < 0 ? 0 : in - 1;
    case 3: return ((i % in) + in) % in;
    case 1: {
        if (in == 1) return 0;
        int64_t period = 2 * (in - 1);
        i = ((i % period) + period) % period;
        return i < in ? i : period - i;
    }
    default: return -1;
    }
}

/* Range [*k0, *k1) of window taps k with lo <= start + k * dil < hi (pool.c's taps). */
FFU_HD void nn_hd_taps(int64_t start, int64_t dil, int64_t k, int64_t lo, int64_t hi, int64_t *k0,
                       int64_t *k1)
{
    int64_t a = 0, b = k;
    if (start < lo) a = (lo - start + dil - 1) / dil;
    if (start + (k - 1) * dil >= hi) b = hi - start <= 0 ? 0 : (hi - start + dil - 1) / dil;
    *k0 = a;
    *k1 = b > a ? b : a;
}

/* Offset of output element `flat` (row-major over d[rank]) in a tensor with element
 * strides st (0 for broadcast dims, any sign): Transpose, Slice, Expand, broadcasting. */
FFU_HD int64_t nn_hd_offset(int64_t flat, const int64_t *d, const int64_t *st, int rank)
{
    int64_t off = 0;
    for (int i = rank - 1; i >= 0; i--) {
        int64_t q = d[i] ? flat / d[i] : 0;
        off += (flat - q * d[i]) * st[i];
        flat = q;
    }
    return off;
}

#endif
