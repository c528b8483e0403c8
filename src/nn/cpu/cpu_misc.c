/* The cpu backend's other oneDNN ops: pooling (Max/Average/Global), standalone
 * activations (eltwise), broadcasting binary arithmetic, Concat, Softmax/LogSoftmax,
 * Resize (only the nearest/linear cases whose coordinates oneDNN computes exactly as
 * ONNX does), BatchNormalization, PRelu, LRN, the Reduce family and f32 Transpose (a
 * reorder, which also converts between plain and channels-last storage: the NHWC
 * input of a TF-converted model, transposed to NCHW for a channels-last convolution,
 * becomes a plain copy).
 *
 * Every builder claims a node only when oneDNN computes what the ONNX definition (and
 * so the ref kernel) computes; anything else answers CPU_UNSUPPORTED and runs on ref. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "../ops/ops_internal.h"
#include "../ops/quant_math.h"
#include "cpu_internal.h"

/* Creates pd from desc with the attribute, or CPU_UNSUPPORTED. */
static ffu_status make_pd(cpu_ctx *c, const void *desc, dnnl_primitive_attr_t attr,
                          dnnl_primitive_desc_t *pd)
{
    dnnl_status_t ds = dnnl_primitive_desc_create(pd, desc, attr, c->cb->eng, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) return CPU_UNSUPPORTED;
    nn_cpu_note_impl(c, *pd);
    return FFU_OK;
}

/* The one-step "src -> dst" pattern most ops share. */
static ffu_status simple_step(cpu_ctx *c, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *src,
                              const dnnl_memory_desc_t *dst, cpu_step **out)
{
    ffu_status st;
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (out) *out = s;
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC, src, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
    return nn_cpu_step_arg(c, s, DNNL_ARG_DST, dst, CPU_BIND_OUT, 0, 0, NULL);
}

static const nn_tensor *f32_out(const cpu_ctx *c)
{
    const nn_tensor *y = nn_out(c->g, c->n, 0);
    return y && y->dtype == FFU_DTYPE_F32 ? y : NULL;
}

/* ---- pooling ------------------------------------------------------------------------------ */

static void pool2_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const nn_cpu_pool2 *d = kd;
    int64_t rows = d->N * d->OH;
    nn_cpu_pool2_rows_avx512(d, ptr[0], ptr[1], rows * ithr / nthr, rows * (ithr + 1) / nthr);
}

int nn_cpu_pool2_window(const nn_window *win)
{
    for (int s = 1; s <= 2; s++)
        if (win->k[s] != 2 || win->stride[s] != 2 || win->dil[s] != 1 || win->pad0[s] ||
            win->pad1[s] || win->out[s] != win->in[s] / 2)
            return 0;
    return 1;
}

/* Our kernel for a 2x2 stride-2 max pool without padding on channels-last tensors
 * (BlazeFace's residual branches): two rows in, one out, sixteen channels at a time.
 * oneDNN's took 0.12 ms for 128x128x24 -> 64x64 on the Intel host (one thread, `bench
 * nn --profile`), about four times the time to read the input from L2. */
static ffu_status build_pool2(cpu_ctx *c, const nn_window *win, int *taken)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_in(c->g, n, 0), *y = nn_out(c->g, n, 0);
    *taken = 0;
    if (n->op != NN_OP_MAX_POOL || x->shape.rank != 4 || n->act.kind != NN_ACT_NONE ||
        !(ffu_cpu_features() & FFU_CPU_AVX512F) || !nn_cpu_stored_nhwc(c, n->inputs[0]) ||
        !nn_cpu_stored_nhwc(c, n->outputs[0]))
        return FFU_OK;
    if (!nn_cpu_pool2_window(win)) return FFU_OK;
    *taken = 1;
    if (!c->p) return FFU_OK;
    nn_cpu_pool2 *d = nn_cpu_own(c, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    *d = (nn_cpu_pool2){.N = x->shape.d[0], .C = x->shape.d[1], .IH = x->shape.d[2],
                        .IW = x->shape.d[3], .OH = y->shape.d[2], .OW = y->shape.d[3]};
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, pool2_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:pool2");
    c->p->kkind = NN_CPU_K_POOL, c->p->kdata = d; /* a band pipeline may take it over */
    return nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_OUT, 0, 0, NULL);
}

ffu_status nn_cpu_build_pool(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || n->ninputs != 1 || nn_out(c->g, n, 1)) return CPU_UNSUPPORTED;
    int rank = x->shape.rank, nd = rank - 2, avg = n->op == NN_OP_AVERAGE_POOL;
    if (rank < 3 || rank > 5 || y->shape.rank != rank) return CPU_UNSUPPORTED;
    nn_window win;
    if (nn_window_init(n, NN_WINDOW_POOL, nd, x->shape.d + 2, NULL, &win) < 0)
        return CPU_UNSUPPORTED;
    int include = avg && nn_attr_int(n, "count_include_pad", 0) != 0, taken;
    ffu_status st = build_pool2(c, &win, &taken);
    if (st < 0 || taken) return st;
    dnnl_dims_t strides, kernel, dil, pl, pr;
    for (int i = 0; i < nd; i++) {
        int s = 3 - nd + i;
        int64_t eff = (win.k[s] - 1) * win.dil[s] + 1;
        if (win.out[s] != y->shape.d[2 + i]) return CPU_UNSUPPORTED;
        strides[i] = win.stride[s], kernel[i] = win.k[s], dil[i] = win.dil[s] - 1;
        pl[i] = win.pad0[s];
        pr[i] = win.pad1[s];
        if ((win.in[s] + pl[i] + pr[i] - eff) / strides[i] + 1 != win.out[s]) {
            /* ceil_mode: extend the right pad so the last window fits. Those cells are
             * never counted as padding by ONNX, so include-padding averages differ. */
            pr[i] = (win.out[s] - 1) * strides[i] + eff - win.in[s] - pl[i];
            if (include || pr[i] < win.pad1[s]) return CPU_UNSUPPORTED;
        }
        /* every window must see real data (ONNX drops windows inside the padding) */
        if ((win.out[s] - 1) * strides[i] - pl[i] >= win.in[s]) return CPU_UNSUPPORTED;
        if (pl[i] >= eff || pr[i] >= eff) return CPU_UNSUPPORTED;
    }
    dnnl_memory_desc_t src_md, dst_md;
    if (nn_cpu_md_tensor(c, c->n->inputs[0], &src_md) < 0 ||
        nn_cpu_md_tensor(c, c->n->outputs[0], &dst_md) < 0)
        return CPU_UNSUPPORTED;
    dnnl_alg_kind_t alg = !avg      ? dnnl_pooling_max
                          : include ? dnnl_pooling_avg_include_padding
                                    : dnnl_pooling_avg_exclude_padding;
    dnnl_pooling_v2_desc_t desc;
    if (dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, &src_md, &dst_md,
                                          strides, kernel, dil, pl, pr) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    if ((st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd)) < 0) return st;
    return simple_step(c, pd, &src_md, &dst_md, NULL);
}

ffu_status nn_cpu_build_global_pool(cpu_ctx *c)
{
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y) return CPU_UNSUPPORTED;
    int rank = x->shape.rank, nd = rank - 2;
    if (rank < 3 || rank > 5 || y->shape.rank != rank) return CPU_UNSUPPORTED;
    dnnl_dims_t strides, kernel, dil, pl, pr;
    for (int i = 0; i < nd; i++) {
        if (y->shape.d[2 + i] != 1) return CPU_UNSUPPORTED;
        strides[i] = 1, kernel[i] = x->shape.d[2 + i], dil[i] = 0, pl[i] = pr[i] = 0;
    }
    dnnl_memory_desc_t src_md, dst_md;
    if (nn_cpu_md_tensor(c, c->n->inputs[0], &src_md) < 0 ||
        nn_cpu_md_tensor(c, c->n->outputs[0], &dst_md) < 0)
        return CPU_UNSUPPORTED;
    dnnl_pooling_v2_desc_t desc;
    dnnl_alg_kind_t alg =
        c->n->op == NN_OP_GLOBAL_MAX_POOL ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
    if (dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, &src_md, &dst_md,
                                          strides, kernel, dil, pl, pr) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd);
    if (st < 0) return st;
    return simple_step(c, pd, &src_md, &dst_md, NULL);
}

/* ---- eltwise ---------------------------------------------------------------------------- */

/* A scalar f32 constant input (Clip's min / max); 1 when present and read. */
static int const_scalar(const cpu_ctx *c, int i, float *v, int *bad)
{
    const nn_tensor *t = nn_in(c->g, c->n, i);
    if (!t) return 0;
    if (t->dtype != FFU_DTYPE_F32 || !nn_cpu_is_const(t) || nn_shape_numel(&t->shape) != 1) {
        *bad = 1;
        return 0;
    }
    *v = *(const float *)t->data;
    return 1;
}

ffu_status nn_cpu_build_eltwise(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || !nn_shape_equal(&x->shape, &y->shape)) return CPU_UNSUPPORTED;
    if (n->op != NN_OP_CLIP && n->ninputs != 1) return CPU_UNSUPPORTED;
    dnnl_alg_kind_t alg;
    float alpha = 0, beta = 0, post_scale = 0;
    switch (n->op) {
    case NN_OP_RELU: alg = dnnl_eltwise_relu; break;
    case NN_OP_LEAKY_RELU: alg = dnnl_eltwise_relu, alpha = nn_attr_float(n, "alpha", 0.01f); break;
    case NN_OP_CLIP: {
        int bad = 0;
        alpha = -INFINITY, beta = INFINITY;
        const_scalar(c, 1, &alpha, &bad);
        const_scalar(c, 2, &beta, &bad);
        if (bad || n->ninputs > 3 || !(alpha <= beta)) return CPU_UNSUPPORTED;
        alg = dnnl_eltwise_clip;
        break;
    }
    case NN_OP_RELU6: alg = dnnl_eltwise_clip, alpha = 0, beta = 6; break;
    case NN_OP_SIGMOID: alg = dnnl_eltwise_logistic; break;
    case NN_OP_TANH: alg = dnnl_eltwise_tanh; break;
    case NN_OP_ELU: alg = dnnl_eltwise_elu, alpha = nn_attr_float(n, "alpha", 1.0f); break;
    /* Selu is left to ref: oneDNN 2.6's elu with a linear post-op returns 0 on rank-1
     * tensors (ONNX test_selu_example); Selu is in no model we run. */
    case NN_OP_HARD_SWISH: alg = dnnl_eltwise_hardswish; break;
    case NN_OP_SOFTPLUS: alg = dnnl_eltwise_soft_relu; break;
    case NN_OP_SQRT: alg = dnnl_eltwise_sqrt; break;
    case NN_OP_EXP: alg = dnnl_eltwise_exp; break;
    /* Log is left to ref: oneDNN's polynomial log is ~1e-6 off at x = 1 (log 1 = 0),
     * which the ONNX conformance tolerance (1e-7 absolute) does not accept. */
    case NN_OP_NEG: alg = dnnl_eltwise_linear, alpha = -1, beta = 0; break;
    case NN_OP_ABS: alg = dnnl_eltwise_abs; break;
    case NN_OP_RECIPROCAL: alg = dnnl_eltwise_pow, alpha = 1, beta = -1; break;
    case NN_OP_ROUND: alg = dnnl_eltwise_round; break;
    case NN_OP_SQUARE: alg = dnnl_eltwise_square; break;
    default: return CPU_UNSUPPORTED;
    }
    dnnl_memory_desc_t md;
    if (nn_cpu_md_tensor(c, c->n->inputs[0], &md) < 0) return CPU_UNSUPPORTED;
    dnnl_eltwise_desc_t desc;
    if (dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg, &md, alpha, beta) !=
        dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_attr_t attr = nn_cpu_attr(c, 0);
    if (!attr) return FFU_ERR_NOMEM;
    if (post_scale != 0) { /* Selu = gamma * Elu(alpha) */
        dnnl_post_ops_t po;
        int ok = dnnl_post_ops_create(&po) == dnnl_success;
        ok = ok && dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, post_scale, 0) ==
                       dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
        if (po) dnnl_post_ops_destroy(po);
        if (!ok) {
            dnnl_primitive_attr_destroy(attr);
            return CPU_UNSUPPORTED;
        }
    }
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, attr, &pd);
    if (st < 0) return st;
    return simple_step(c, pd, &md, &md, NULL);
}

/* ---- binary ------------------------------------------------------------------------------ */

/* A binary op whose broadcast operand is a scalar or repeats with a short period along
 * the flat (plain) output: oneDNN 2.6's binary kernel vectorises over the innermost
 * dim, so an innermost dim of 2 or 3 (UltraFace's [N,17640,2] box arithmetic, an NHWC
 * image minus a per-channel mean) runs 10-50x slower than a plain loop (`bench nn
 * --profile`: UltraFace-640's four such nodes 0.107-0.137 ms each, dlib-resnet's input
 * Sub 0.30 ms at batch 2; docs/NN_CPU.md).
 * y = outer runs of n values, read against the pattern repeated to len values (whole
 * periods, a multiple of 16 and of n); rev: the pattern is the left operand. */
typedef struct cpu_bcast {
    nn_op op;
    int rev;
    int64_t n, total, len; /* n = 1: a scalar */
    int built;             /* argument 1 is the repeated pattern (a constant, built once) */
} cpu_bcast;

enum { BCAST_MAX_PERIOD = 256, BCAST_BUF = BCAST_MAX_PERIOD * 16 };

/* the reference's expressions (ops/binary.c), x the left operand and y the right */
#define BCAST_OPS(LOOP)                                                                      \
    switch (op) {                                                                            \
    case NN_OP_ADD: case NN_OP_SUM: LOOP(x + y) break;                                       \
    case NN_OP_SUB: LOOP(x - y) break;                                                       \
    case NN_OP_MUL: LOOP(x * y) break;                                                       \
    case NN_OP_DIV: LOOP(x / y) break;                                                       \
    case NN_OP_MAX: LOOP((x != x || x > y) ? x : y) break;                                   \
    case NN_OP_MIN: LOOP((x != x || x < y) ? x : y) break;                                   \
    default: break;                                                                          \
    }
#define BCAST_FWD(E)                                                                         \
    for (int64_t i = 0; i < cnt; i++) {                                                      \
        float x = a[i], y = p[i];                                                            \
        d[i] = E;                                                                            \
    }
#define BCAST_REV(E)                                                                         \
    for (int64_t i = 0; i < cnt; i++) {                                                      \
        float x = p[i], y = a[i];                                                            \
        d[i] = E;                                                                            \
    }

/* d[i] = a[i] op p[i] (p[i] op a[i] when rev), i < cnt. Compiled for AVX-512 and AVX2
 * too, picked at load time (GCC's target_clones): the baseline's SSE2 loop was half as
 * fast as oneDNN's on long scalar operations. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void bcast_span(nn_op op, int rev, const float *a, const float *p, float *d, int64_t cnt)
{
    if (rev) {
        BCAST_OPS(BCAST_REV)
    } else {
        BCAST_OPS(BCAST_FWD)
    }
}

static void bcast_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_bcast *k = kd;
    const float *a = ptr[0], *pat = ptr[1];
    float *y = ptr[2];
    int64_t len = k->len, total = k->total;
    float buf[BCAST_BUF];
    if (!k->built) { /* a pattern computed at run time: repeat its n values here */
        memcpy(buf, pat, sizeof(float) * (size_t)k->n);
        for (int64_t have = k->n; have < len; have *= 2) /* doubling copies */
            memcpy(buf + have, buf, sizeof(float) * (size_t)(have < len - have ? have : len - have));
        pat = buf;
    }
    int64_t chunks = total / len, c0 = chunks * ithr / nthr, c1 = chunks * (ithr + 1) / nthr;
    for (int64_t ch = c0; ch < c1; ch++)
        bcast_span(k->op, k->rev, a + ch * len, pat, y + ch * len, len);
    if (ithr == nthr - 1 && total > chunks * len) /* the tail is whole periods plus a part */
        bcast_span(k->op, k->rev, a + chunks * len, pat, y + chunks * len, total - chunks * len);
}

/* Our kernel for y = full op pattern (or pattern op full), operand `full` having y's
 * shape and the other one dims pd (right-aligned to y): taken when pd is all 1 (a
 * scalar) or its dims that are not 1 form one block of axes [k1, k2) equal to y's
 * there, with a period n = prod(y[k1..r)) of at most BCAST_MAX_PERIOD and fewer than
 * 16 values per pattern value (each is repeated prod(y[k2..r)) times; a constant
 * then, expanded once). Every tensor plain, no fused activation. */
static ffu_status build_bcast(cpu_ctx *c, int full, const int64_t *pd, int *taken)
{
    const nn_node *n = c->n;
    const nn_tensor *y = nn_out(c->g, n, 0), *pt = nn_in(c->g, n, 1 - full);
    int r = y->shape.rank;
    *taken = 0;
    if (n->act.kind != NN_ACT_NONE || nn_cpu_layout(c, n->outputs[0]) ||
        nn_cpu_layout(c, n->inputs[full]) || (!nn_cpu_is_const(pt) && nn_cpu_layout(c, n->inputs[1 - full])))
        return FFU_OK;
    int k1 = r, k2 = 0;
    for (int i = 0; i < r; i++)
        if (pd[i] != 1) {
            if (i < k1) k1 = i;
            k2 = i + 1;
        }
    int64_t mid = 1, inner = 1;
    for (int i = k1; i < k2; i++) {
        if (pd[i] != y->shape.d[i]) return FFU_OK;
        mid *= pd[i];
    }
    for (int i = k2 > k1 ? k2 : r; i < r; i++) inner *= y->shape.d[i];
    /* a scalar, or a period short enough to repeat; per-channel runs of >= 16 values
     * (NCHW bias-like) are oneDNN's strength */
    int64_t period = k2 > k1 ? mid * inner : 1;
    if (k2 > k1 && (inner >= 16 || period > BCAST_MAX_PERIOD)) return FFU_OK;
    /* a pattern known only at run time is repeated then, from its n values: each must
     * stand for one output value */
    int cnst = nn_cpu_is_const(pt);
    if (period > 1 && inner > 1 && !cnst) return FFU_OK;
    *taken = 1;
    if (!c->p) return FFU_OK;
    int64_t g = period, m = 16;
    while (m) {
        int64_t t = g % m;
        g = m;
        m = t;
    } /* gcd(period, 16) */
    int64_t len = period * 16 / g;
    len *= BCAST_BUF / len; /* as many whole lcm(period, 16) blocks as the buffer holds */
    cpu_bcast *d = nn_cpu_own(c, sizeof *d);
    float *rep = cnst ? nn_cpu_own(c, sizeof(float) * (size_t)len) : NULL;
    if (!d || (cnst && !rep)) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    *d = (cpu_bcast){.op = n->op, .rev = full == 1, .n = period, .len = len, .built = cnst,
                     .total = nn_shape_numel(&y->shape)};
    if (rep) { /* each of the mid values `inner` times, then that period repeated */
        const float *v = pt->data;
        for (int64_t i = 0; i < len; i++) rep[i] = v[(i % period) / inner];
    }
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, bcast_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, full, 0, NULL)) < 0) return st;
    st = rep ? nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_FIXED, 0, 0, rep)
             : nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_IN, 1 - full, 0, NULL);
    if (st < 0) return st;
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:bcast");
    return nn_cpu_step_arg(c, s, 2, NULL, CPU_BIND_OUT, 0, 0, NULL);
}

ffu_status nn_cpu_build_binary(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *a = nn_cpu_f32_in(c, 0), *b = nn_cpu_f32_in(c, 1), *y = f32_out(c);
    if (!a || !b || !y || n->ninputs != 2) return CPU_UNSUPPORTED;
    int r = y->shape.rank;
    if (r < 1 || r > DNNL_MAX_NDIMS || a->shape.rank > r || b->shape.rank > r)
        return CPU_UNSUPPORTED;
    dnnl_alg_kind_t alg;
    int commutative = 1;
    switch (n->op) {
    case NN_OP_ADD:
    case NN_OP_SUM: alg = dnnl_binary_add; break;
    case NN_OP_MUL: alg = dnnl_binary_mul; break;
    case NN_OP_MAX: alg = dnnl_binary_max; break;
    case NN_OP_MIN: alg = dnnl_binary_min; break;
    case NN_OP_SUB: alg = dnnl_binary_sub, commutative = 0; break;
    case NN_OP_DIV: alg = dnnl_binary_div, commutative = 0; break;
    default: return CPU_UNSUPPORTED;
    }
    /* right-align both shapes to the output rank */
    int64_t ad[DNNL_MAX_NDIMS], bd[DNNL_MAX_NDIMS];
    int a_full = 1, b_full = 1;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->shape.rank), ib = i - (r - b->shape.rank);
        ad[i] = ia >= 0 ? a->shape.d[ia] : 1;
        bd[i] = ib >= 0 ? b->shape.d[ib] : 1;
        if (ad[i] != y->shape.d[i]) a_full = 0;
        if (bd[i] != y->shape.d[i]) b_full = 0;
        if ((ad[i] != 1 && ad[i] != y->shape.d[i]) || (bd[i] != 1 && bd[i] != y->shape.d[i]))
            return CPU_UNSUPPORTED;
    }
    if (a_full != b_full) {
        int taken;
        ffu_status st = build_bcast(c, a_full ? 0 : 1, a_full ? bd : ad, &taken);
        if (st < 0 || taken) return st;
    }
    /* oneDNN broadcasts src1 only: the full-shaped operand must be src0 */
    int swap = 0;
    if (!a_full) {
        if (!b_full || !commutative) return CPU_UNSUPPORTED;
        swap = 1;
    }
    /* operands of the output's rank are described as stored (maybe channels-last);
     * lower-rank ones are plain with leading unit dims */
    dnnl_memory_desc_t md_a, md_b, s0, s1, dst;
    if ((a->shape.rank == r ? nn_cpu_md_tensor(c, n->inputs[0], &md_a)
                            : nn_cpu_md_dims(&md_a, r, ad, dnnl_f32)) < 0 ||
        (b->shape.rank == r ? nn_cpu_md_tensor(c, n->inputs[1], &md_b)
                            : nn_cpu_md_dims(&md_b, r, bd, dnnl_f32)) < 0 ||
        nn_cpu_md_tensor(c, n->outputs[0], &dst) < 0)
        return CPU_UNSUPPORTED;
    s0 = swap ? md_b : md_a;
    s1 = swap ? md_a : md_b;
    dnnl_binary_desc_t desc;
    if (dnnl_binary_desc_init(&desc, alg, &s0, &s1, &dst) != dnnl_success) return CPU_UNSUPPORTED;
    int64_t ch = r >= 2 ? y->shape.d[1] : 1;
    dnnl_primitive_desc_t pd;
    int split;
    ffu_status st = nn_cpu_pd_with_act(c, &desc, 0, 0, &pd, &split);
    if (st < 0) return st;
    nn_cpu_note_impl(c, pd);
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (!s) return st < 0 ? st : split ? nn_cpu_act_step(c, &dst, ch, CPU_BIND_OUT, 0) : FFU_OK;
    if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC_0, &s0, CPU_BIND_IN, swap, 0, NULL)) < 0 ||
        (st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC_1, &s1, CPU_BIND_IN, !swap, 0, NULL)) < 0 ||
        (st = nn_cpu_step_arg(c, s, DNNL_ARG_DST, &dst, CPU_BIND_OUT, 0, 0, NULL)) < 0)
        return st;
    return split ? nn_cpu_act_step(c, &dst, ch, CPU_BIND_OUT, 0) : FFU_OK;
}

/* ---- Concat ------------------------------------------------------------------------------ */

/* Concat as copies: every input and the output in one layout, the result is rows of
 * contiguous chunks, one per input. oneDNN's concat is a reference loop when the
 * layouts differ (BlazeFace pads channels by concatenating a constant zero tensor, which
 * is stored NCHW, to a channels-last one: 40-80 us a node) and a slow generic copy for
 * plain outputs (UltraFace's heads). Constant inputs are converted once at prepare. */
typedef struct cpu_concat {
    int n;
    int64_t outer, out_chunk, chunk[CPU_MAX_ARGS], off[CPU_MAX_ARGS]; /* floats */
} cpu_concat;

/* count runs of k floats, src every ss floats to dst every ds. Runs under 16 floats (a
 * channels-last tensor's few channels per pixel: YuNet's heads) go in a loop, not a
 * memcpy call each: YuNet's 80x80 split 0.082 -> 0.023 ms (docs/NN_CPU.md "Ops and
 * exactness rules"). */
static void copy_runs(float *dst, int64_t ds, const float *src, int64_t ss, int64_t k,
                      int64_t count)
{
    if (k >= 16) {
        for (int64_t o = 0; o < count; o++, src += ss, dst += ds)
            memcpy(dst, src, sizeof(float) * (size_t)k);
        return;
    }
    for (int64_t o = 0; o < count; o++, src += ss, dst += ds)
        for (int64_t j = 0; j < k; j++)
            dst[j] = src[j];
}

static void concat_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_concat *d = kd;
    float *y = ptr[d->n];
    int64_t o0 = d->outer * ithr / nthr, o1 = d->outer * (ithr + 1) / nthr;
    for (int i = 0; i < d->n; i++)
        copy_runs(y + o0 * d->out_chunk + d->off[i], d->out_chunk,
                  (const float *)ptr[i] + o0 * d->chunk[i], d->chunk[i], d->chunk[i], o1 - o0);
}

static int spatial_ones(const nn_tensor *t)
{
    for (int i = 2; i < t->shape.rank; i++)
        if (t->shape.d[i] != 1) return 0;
    return 1;
}

static ffu_status build_concat_copy(cpu_ctx *c, int64_t axis)
{
    const nn_node *n = c->n;
    const nn_tensor *y = nn_out(c->g, n, 0);
    int r = y->shape.rank, yl = nn_cpu_layout(c, n->outputs[0]);
    /* position of the axis in the stored order (channels-last: 0, 2.., r-1, 1) */
    int pos = !yl ? (int)axis : axis == 0 ? 0 : axis == 1 ? r - 1 : (int)axis - 1;
    int64_t sd[FFU_NN_MAX_RANK];
    for (int k = 0; k < r; k++) sd[k] = y->shape.d[!yl ? k : k == 0 ? 0 : k == r - 1 ? 1 : k + 1];
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < pos; k++) outer *= sd[k];
    for (int k = pos + 1; k < r; k++) inner *= sd[k];
    int idx[CPU_MAX_ARGS], k = 0;
    for (int i = 0; i < n->ninputs; i++) {
        const nn_tensor *t = nn_in(c->g, n, i);
        if (nn_shape_numel(&t->shape) == 0) continue;
        if (k >= CPU_MAX_ARGS - 1) return CPU_UNSUPPORTED;
        /* a non-constant input must be stored as the output is */
        if (!nn_cpu_is_const(t) && yl && !nn_cpu_layout(c, n->inputs[i]) && !spatial_ones(t))
            return CPU_UNSUPPORTED;
        if (!nn_cpu_is_const(t) && !yl && nn_cpu_layout(c, n->inputs[i]) && !spatial_ones(t))
            return CPU_UNSUPPORTED;
        idx[k++] = i;
    }
    if (k == 0) return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK;
    cpu_concat *d = nn_cpu_own(c, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    memset(d, 0, sizeof *d);
    d->n = k, d->outer = outer, d->out_chunk = sd[pos] * inner;
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, concat_kernel, d, &st);
    if (!s) return st;
    int64_t off = 0;
    for (int j = 0; j < k; j++) {
        const nn_tensor *t = nn_in(c->g, n, idx[j]);
        d->chunk[j] = t->shape.d[axis] * inner;
        d->off[j] = off;
        off += d->chunk[j];
        if (nn_cpu_is_const(t)) {
            void *data = t->data;
            if (yl && !spatial_ones(t)) { /* once, into the output's layout */
                dnnl_memory_desc_t from, to;
                if (nn_cpu_md_plain(&from, &t->shape, dnnl_f32) < 0 || nn_cpu_md_cl(&to, &t->shape) < 0)
                    return CPU_UNSUPPORTED;
                if (!(data = nn_cpu_reorder_owned(c, &from, t->data, &to, &st))) return st;
            }
            st = nn_cpu_step_arg(c, s, j, NULL, CPU_BIND_FIXED, 0, 0, data);
        } else {
            st = nn_cpu_step_arg(c, s, j, NULL, CPU_BIND_IN, idx[j], 0, NULL);
        }
        if (st < 0) return st;
    }
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:concat");
    return nn_cpu_step_arg(c, s, k, NULL, CPU_BIND_OUT, 0, 0, NULL);
}

/* Split as copies, the inverse of build_concat_copy: the input and every output in
 * one layout (YuNet's merged head convolutions are split back into their parts). */
static void split_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_concat *d = kd;
    const float *x = ptr[0];
    int64_t o0 = d->outer * ithr / nthr, o1 = d->outer * (ithr + 1) / nthr;
    for (int i = 0; i < d->n; i++)
        copy_runs((float *)ptr[1 + i] + o0 * d->chunk[i], d->chunk[i],
                  x + o0 * d->out_chunk + d->off[i], d->out_chunk, d->chunk[i], o1 - o0);
}

ffu_status nn_cpu_build_split(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0);
    if (!x || n->noutputs < 1 || n->noutputs > CPU_MAX_ARGS - 1) return CPU_UNSUPPORTED;
    int r = x->shape.rank, xl = nn_cpu_layout(c, n->inputs[0]);
    int64_t axis = nn_attr_int(n, "axis", 0);
    if (axis < 0) axis += r;
    if (r < 1 || axis < 0 || axis >= r) return CPU_UNSUPPORTED;
    int64_t total = 0;
    for (int i = 0; i < n->noutputs; i++) {
        const nn_tensor *t = nn_out(c->g, n, i);
        if (!t || t->dtype != FFU_DTYPE_F32 || t->shape.rank != r || !nn_shape_known(&t->shape))
            return CPU_UNSUPPORTED;
        for (int k = 0; k < r; k++)
            if (k != axis && t->shape.d[k] != x->shape.d[k]) return CPU_UNSUPPORTED;
        if (nn_cpu_layout(c, n->outputs[i]) != xl && !spatial_ones(t)) return CPU_UNSUPPORTED;
        total += t->shape.d[axis];
    }
    if (total != x->shape.d[axis]) return CPU_UNSUPPORTED;
    int pos = !xl ? (int)axis : axis == 0 ? 0 : axis == 1 ? r - 1 : (int)axis - 1;
    int64_t sd[FFU_NN_MAX_RANK];
    for (int k = 0; k < r; k++) sd[k] = x->shape.d[!xl ? k : k == 0 ? 0 : k == r - 1 ? 1 : k + 1];
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < pos; k++) outer *= sd[k];
    for (int k = pos + 1; k < r; k++) inner *= sd[k];
    if (!c->p) return FFU_OK;
    cpu_concat *d = nn_cpu_own(c, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    memset(d, 0, sizeof *d);
    d->n = n->noutputs, d->outer = outer, d->out_chunk = sd[pos] * inner;
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, split_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
    int64_t off = 0;
    for (int i = 0; i < n->noutputs; i++) {
        d->chunk[i] = nn_out(c->g, n, i)->shape.d[axis] * inner;
        d->off[i] = off;
        off += d->chunk[i];
        if ((st = nn_cpu_step_arg(c, s, 1 + i, NULL, CPU_BIND_OUT, i, 0, NULL)) < 0) return st;
    }
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:split");
    return FFU_OK;
}

ffu_status nn_cpu_build_concat(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *y = f32_out(c);
    if (!y || n->ninputs < 1) return CPU_UNSUPPORTED;
    int r = y->shape.rank;
    int64_t axis = nn_attr_int(n, "axis", 0);
    if (axis < 0) axis += r;
    if (r < 1 || axis < 0 || axis >= r) return CPU_UNSUPPORTED;
    dnnl_memory_desc_t src[CPU_MAX_ARGS], dst;
    int idx[CPU_MAX_ARGS], k = 0;
    for (int i = 0; i < n->ninputs; i++) {
        const nn_tensor *t = nn_in(c->g, n, i);
        if (!t || t->dtype != FFU_DTYPE_F32 || t->shape.rank != r || !nn_shape_known(&t->shape))
            return CPU_UNSUPPORTED;
        if (nn_shape_numel(&t->shape) == 0) continue; /* empty inputs add nothing */
        if (k >= CPU_MAX_ARGS - 2) return CPU_UNSUPPORTED;
        if (nn_cpu_md_tensor(c, n->inputs[i], &src[k]) < 0) return CPU_UNSUPPORTED;
        idx[k++] = i;
    }
    if (k == 0 || nn_cpu_md_tensor(c, n->outputs[0], &dst) < 0) return CPU_UNSUPPORTED;
    ffu_status cst = build_concat_copy(c, axis);
    if (cst != CPU_UNSUPPORTED) return cst;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_attr_t attr = nn_cpu_attr(c, 0);
    if (!attr) return FFU_ERR_NOMEM;
    dnnl_status_t ds =
        dnnl_concat_primitive_desc_create(&pd, &dst, k, (int)axis, src, attr, c->cb->eng);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) return CPU_UNSUPPORTED;
    nn_cpu_note_impl(c, pd);
    ffu_status st;
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (!s) return st;
    for (int i = 0; i < k; i++)
        if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_MULTIPLE_SRC + i, &src[i], CPU_BIND_IN, idx[i],
                                  0, NULL)) < 0)
            return st;
    return nn_cpu_step_arg(c, s, DNNL_ARG_DST, &dst, CPU_BIND_OUT, 0, 0, NULL);
}

/* ---- Softmax / LogSoftmax ---------------------------------------------------------------- */

/* Softmax over an axis with positions inside it (inner > 1): oneDNN's reference loop
 * there, our AVX-512 kernel (cpu_softmax_avx512.c) where the CPU has it. Threads take
 * runs of inner positions of the outer slices. */
typedef struct cpu_softmax {
    int64_t outer, len, inner, blocks; /* blocks of 16 inner positions a slice */
} cpu_softmax;

static void softmax_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_softmax *d = kd;
    const int64_t total = d->outer * d->blocks, slice = d->len * d->inner;
    int64_t b0 = total * ithr / nthr, b1 = total * (ithr + 1) / nthr;
    for (int64_t b = b0; b < b1;) {
        int64_t o = b / d->blocks, first = b % d->blocks;
        int64_t last = o == b1 / d->blocks ? b1 % d->blocks : d->blocks;
        int64_t i1 = last * 16 < d->inner ? last * 16 : d->inner;
        nn_cpu_softmax_inner_avx512((const float *)ptr[0] + o * slice, (float *)ptr[1] + o * slice,
                                    d->len, d->inner, first * 16, i1);
        b += last - first;
    }
}

static ffu_status build_softmax_inner(cpu_ctx *c, int64_t outer, int64_t len, int64_t inner)
{
    if (!c->p) return FFU_OK;
    cpu_softmax *d = nn_cpu_own(c, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    *d = (cpu_softmax){.outer = outer, .len = len, .inner = inner, .blocks = (inner + 15) / 16};
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, softmax_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:softmax_inner");
    return nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_OUT, 0, 0, NULL);
}

ffu_status nn_cpu_build_softmax(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || !nn_shape_equal(&x->shape, &y->shape) || x->shape.rank < 1)
        return CPU_UNSUPPORTED;
    int r = x->shape.rank, coerce = nn_attr_int(n, "_coerce_2d", 0) != 0;
    int64_t axis = nn_attr_int(n, "axis", coerce ? 1 : -1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return CPU_UNSUPPORTED;
    if (n->op == NN_OP_SOFTMAX && !coerce && axis < r - 1 &&
        (ffu_cpu_features() & FFU_CPU_AVX512F)) {
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < r; i++)
            if (i < axis) outer *= x->shape.d[i];
            else if (i > axis) inner *= x->shape.d[i];
        if (inner > 1) return build_softmax_inner(c, outer, x->shape.d[axis], inner);
    }
    dnnl_memory_desc_t md;
    if (coerce) { /* opset < 13: flatten to [outer, inner] at axis, softmax over inner */
        int64_t d2[2] = {1, 1};
        for (int i = 0; i < r; i++) d2[i < axis ? 0 : 1] *= x->shape.d[i];
        if (nn_cpu_md_dims(&md, 2, d2, dnnl_f32) < 0) return CPU_UNSUPPORTED;
        axis = 1;
    } else if (nn_cpu_md_plain(&md, &x->shape, dnnl_f32) < 0) {
        return CPU_UNSUPPORTED;
    }
    dnnl_softmax_v2_desc_t desc;
    dnnl_alg_kind_t alg = n->op == NN_OP_LOG_SOFTMAX ? dnnl_softmax_log : dnnl_softmax_accurate;
    if (dnnl_softmax_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, &md, &md,
                                          (int)axis) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd);
    if (st < 0) return st;
    return simple_step(c, pd, &md, &md, NULL);
}

/* ---- Resize -------------------------------------------------------------------------------- */

/* A nearest-neighbour integer upscale of an NHWC tensor plus a fused Add's other
 * operand (ir.h), then the activation: one pass that reads the small input and the
 * addend and writes the output. oneDNN 2.6 runs resampling with a binary post-op on its
 * reference loop (YuNet's 80x80x64 FPN sum: 16.7 ms; this kernel about 0.05). */
typedef struct cpu_upadd {
    int64_t N, OH, OW, C, IH, IW, kh, kw;
    nn_act act;
    const float *slope;
    int64_t slope_n;
    int avx512;
} cpu_upadd;

static void upadd_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_upadd *d = kd;
    const float *x = ptr[0], *r = ptr[1];
    float *y = ptr[2];
    const int64_t rows = d->N * d->OH, C = d->C, row = d->OW * C;
    for (int64_t i = rows * ithr / nthr; i < rows * (ithr + 1) / nthr; i++) {
        const int64_t n = i / d->OH, oh = i % d->OH;
        const float *xr = x + (n * d->IH + oh / d->kh) * d->IW * C;
        const float *rr = r + i * row;
        float *yr = y + i * row;
        if (d->avx512) {
            nn_cpu_upadd_row_avx512(xr, rr, yr, d->OW, C, d->kw);
        } else {
            for (int64_t ow = 0; ow < d->OW; ow++) {
                const float *xp = xr + ow / d->kw * C, *rp = rr + ow * C;
                float *yp = yr + ow * C;
                for (int64_t c = 0; c < C; c++)
                    yp[c] = xp[c] + rp[c];
            }
        }
        if (d->act.kind != NN_ACT_NONE)
            nn_act_apply(&d->act, d->slope, d->slope_n, yr, d->OW, C, 1);
    }
}

static ffu_status build_upadd(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_in(c->g, n, 0), *y = nn_out(c->g, n, 0);
    if (!c->p) return FFU_OK;
    cpu_upadd *d = nn_cpu_own(c, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    *d = (cpu_upadd){.N = y->shape.d[0],
                     .C = y->shape.d[1],
                     .OH = y->shape.d[2],
                     .OW = y->shape.d[3],
                     .IH = x->shape.d[2],
                     .IW = x->shape.d[3],
                     .act = n->act,
                     .avx512 = (ffu_cpu_features() & FFU_CPU_AVX512F) != 0};
    d->kh = d->OH / d->IH, d->kw = d->OW / d->IW;
    const nn_tensor *sl = n->act.kind == NN_ACT_PRELU ? nn_cpu_act_slopes(c, d->C) : NULL;
    if (sl) d->slope = sl->data, d->slope_n = nn_shape_numel(&sl->shape);
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, upadd_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0 ||
        (st = nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_IN, 4, 0, NULL)) < 0)
        return st;
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:upsample_add");
    return nn_cpu_step_arg(c, s, 2, NULL, CPU_BIND_OUT, 0, 0, NULL);
}

/* A Resize with a fused Add (ir.h) on oneDNN: resampling into scratch, then a binary
 * add of that and the operand into the output, with the activation. The output may be
 * the operand's own buffer, so the resampling cannot write there first. */
static ffu_status resize_add_steps(cpu_ctx *c, dnnl_primitive_desc_t rpd,
                                   const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst)
{
    const nn_node *n = c->n;
    ffu_status st;
    const size_t off = nn_cpu_scratch(c, dnnl_memory_desc_get_size(dst));
    cpu_step *s = nn_cpu_add_step(c, rpd, &st);
    if (s && ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC, src, CPU_BIND_IN, 0, 0, NULL)) < 0 ||
              (st = nn_cpu_step_arg(c, s, DNNL_ARG_DST, dst, CPU_BIND_SCRATCH, 0, off, NULL)) < 0))
        return st;
    if (st < 0) return st;
    dnnl_memory_desc_t r;
    dnnl_binary_desc_t desc;
    if (nn_cpu_md_tensor(c, n->inputs[4], &r) < 0 ||
        dnnl_binary_desc_init(&desc, dnnl_binary_add, dst, &r, dst) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    int split;
    if ((st = nn_cpu_pd_with_act(c, &desc, 0, 0, &pd, &split)) < 0) return st;
    const int64_t ch = nn_out(c->g, n, 0)->shape.d[1];
    s = nn_cpu_add_step(c, pd, &st);
    if (s &&
        ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC_0, dst, CPU_BIND_SCRATCH, 0, off, NULL)) < 0 ||
         (st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC_1, &r, CPU_BIND_IN, 4, 0, NULL)) < 0 ||
         (st = nn_cpu_step_arg(c, s, DNNL_ARG_DST, dst, CPU_BIND_OUT, 0, 0, NULL)) < 0))
        return st;
    if (st < 0) return st;
    return split ? nn_cpu_act_step(c, dst, ch, CPU_BIND_OUT, 0) : FFU_OK;
}

/* oneDNN resampling maps output o to input (o + 0.5) * in / out - 0.5 (ONNX
 * half_pixel with scale out/in); nearest rounds that, linear clamps at the borders as
 * ONNX does. Claimed: linear with half_pixel (pytorch_half_pixel when out > 1) and a
 * scale equal to out/in; nearest for integer upscales with asymmetric + floor or
 * half_pixel + round_prefer_floor/ceil, where the source index is o / k for both. */
ffu_status nn_cpu_build_resize(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    /* a fused Add's other operand (ir.h) */
    const int sum = n->ninputs > 4 && n->inputs[4] >= 0;
    if (!x || !y || y->shape.rank != x->shape.rank || n->ninputs > 5 ||
        (sum && !nn_cpu_f32_in(c, 4)))
        return CPU_UNSUPPORTED;
    int r = x->shape.rank, nd = r - 2;
    if (r < 3 || r > 5) return CPU_UNSUPPORTED;
    const char *mode = nn_attr_string(n, "mode", "nearest");
    const char *ctm = nn_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    const char *nm = nn_attr_string(n, "nearest_mode", "round_prefer_floor");
    if (nn_attr_int(n, "antialias", 0) != 0) return CPU_UNSUPPORTED;
    const nn_tensor *sc = nn_in(c->g, n, 2);
    const float *scales = NULL;
    if (sc && nn_shape_numel(&sc->shape) > 0) {
        if (sc->dtype != FFU_DTYPE_F32 || !nn_cpu_is_const(sc) || nn_shape_numel(&sc->shape) != r)
            return CPU_UNSUPPORTED;
        scales = sc->data;
    }
    /* keep_aspect_ratio_policy and axes (opset 18) change how sizes map to scales */
    if (nn_node_attr(n, "axes") || strcmp(nn_attr_string(n, "keep_aspect_ratio_policy",
                                                         "stretch"), "stretch") != 0)
        return CPU_UNSUPPORTED;
    int linear = strcmp(mode, "linear") == 0, nearest = strcmp(mode, "nearest") == 0;
    if (!linear && !nearest) return CPU_UNSUPPORTED;
    /* oneDNN keeps batch and channels: so must the node (a scale of 1.001 on a dim of
     * 9 keeps its size but maps output 8 to input 7) */
    for (int i = 0; i < 2; i++)
        if (y->shape.d[i] != x->shape.d[i] || (scales && scales[i] != 1.0f))
            return CPU_UNSUPPORTED;
    for (int i = 2; i < r; i++) {
        int64_t in = x->shape.d[i], out = y->shape.d[i];
        float s = scales ? scales[i] : (float)out / (float)in;
        if (linear) {
            int hp = strcmp(ctm, "half_pixel") == 0 ||
                     (strcmp(ctm, "pytorch_half_pixel") == 0 && out > 1);
            if (!hp || s != (float)out / (float)in) return CPU_UNSUPPORTED;
        } else {
            if (out % in != 0 || s != (float)(out / in)) return CPU_UNSUPPORTED;
            int ok = (strcmp(ctm, "asymmetric") == 0 && strcmp(nm, "floor") == 0) ||
                     ((strcmp(ctm, "half_pixel") == 0 || strcmp(ctm, "pytorch_half_pixel") == 0) &&
                      (strcmp(nm, "round_prefer_floor") == 0 ||
                       strcmp(nm, "round_prefer_ceil") == 0));
            if (!ok && out != in) return CPU_UNSUPPORTED;
        }
    }
    (void)nd;
    dnnl_memory_desc_t src_md, dst_md;
    if (nn_cpu_md_tensor(c, c->n->inputs[0], &src_md) < 0 ||
        nn_cpu_md_tensor(c, c->n->outputs[0], &dst_md) < 0)
        return CPU_UNSUPPORTED;
    dnnl_resampling_desc_t desc;
    if (dnnl_resampling_forward_desc_init(&desc, dnnl_forward_inference,
                                          linear ? dnnl_resampling_linear : dnnl_resampling_nearest,
                                          NULL, &src_md, &dst_md) != dnnl_success)
        return CPU_UNSUPPORTED;
    if (sum && nearest && r == 4 && nn_cpu_stored_nhwc(c, n->inputs[0]) &&
        nn_cpu_stored_nhwc(c, n->inputs[4]) && nn_cpu_stored_nhwc(c, n->outputs[0]) &&
        (n->act.kind != NN_ACT_PRELU || nn_cpu_act_slopes(c, y->shape.d[1])))
        return build_upadd(c);
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd);
    if (st < 0) return st;
    return sum ? resize_add_steps(c, pd, &src_md, &dst_md)
               : simple_step(c, pd, &src_md, &dst_md, NULL);
}

/* ---- BatchNormalization ---------------------------------------------------------------------- */

ffu_status nn_cpu_build_batch_norm(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || n->ninputs != 5 || !nn_shape_equal(&x->shape, &y->shape)) return CPU_UNSUPPORTED;
    if (n->noutputs > 1 && nn_out(c->g, n, 1)) return CPU_UNSUPPORTED;
    int r = x->shape.rank;
    if (r < 2 || r > 5) return CPU_UNSUPPORTED;
    int64_t C = x->shape.d[1];
    const nn_tensor *p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = nn_in(c->g, n, i + 1);
        if (!p[i] || p[i]->dtype != FFU_DTYPE_F32 || !nn_cpu_is_const(p[i]) ||
            nn_shape_numel(&p[i]->shape) != C)
            return CPU_UNSUPPORTED;
    }
    unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
    if (n->act.kind == NN_ACT_RELU) flags |= dnnl_fuse_norm_relu;
    else if (n->act.kind != NN_ACT_NONE) return CPU_UNSUPPORTED;
    dnnl_memory_desc_t md, cmd;
    if (nn_cpu_md_tensor(c, c->n->inputs[0], &md) < 0 || nn_cpu_md_dims(&cmd, 1, &C, dnnl_f32) < 0)
        return CPU_UNSUPPORTED;
    dnnl_batch_normalization_desc_t desc;
    if (dnnl_batch_normalization_forward_desc_init(&desc, dnnl_forward_inference, &md,
                                                   nn_attr_float(n, "epsilon", 1e-5f),
                                                   flags) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd);
    if (st < 0) return st;
    cpu_step *s;
    if ((st = simple_step(c, pd, &md, &md, &s)) < 0 || !s) return st;
    static const int args[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (int i = 0; i < 4; i++)
        if ((st = nn_cpu_step_arg(c, s, args[i], &cmd, CPU_BIND_FIXED, 0, 0, p[i]->data)) < 0)
            return st;
    return FFU_OK;
}

/* ---- PRelu -------------------------------------------------------------------------------- */

ffu_status nn_cpu_build_prelu(cpu_ctx *c)
{
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *sl = nn_cpu_f32_in(c, 1), *y = f32_out(c);
    if (!x || !sl || !y || !nn_shape_equal(&x->shape, &y->shape)) return CPU_UNSUPPORTED;
    int r = x->shape.rank;
    if (r < 1 || sl->shape.rank > r) return CPU_UNSUPPORTED;
    int64_t wd[DNNL_MAX_NDIMS];
    for (int i = 0; i < r; i++) {
        int j = i - (r - sl->shape.rank);
        wd[i] = j >= 0 ? sl->shape.d[j] : 1;
        if (wd[i] != 1 && wd[i] != x->shape.d[i]) return CPU_UNSUPPORTED;
    }
    dnnl_memory_desc_t md, wmd;
    if (nn_cpu_md_tensor(c, c->n->inputs[0], &md) < 0 || nn_cpu_md_dims(&wmd, r, wd, dnnl_f32) < 0)
        return CPU_UNSUPPORTED;
    dnnl_prelu_desc_t desc;
    if (dnnl_prelu_forward_desc_init(&desc, dnnl_forward_inference, &md, &wmd) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd);
    if (st < 0) return st;
    cpu_step *s;
    if ((st = simple_step(c, pd, &md, &md, &s)) < 0 || !s) return st;
    if (nn_cpu_is_const(sl))
        return nn_cpu_step_arg(c, s, DNNL_ARG_WEIGHTS, &wmd, CPU_BIND_FIXED, 0, 0, sl->data);
    return nn_cpu_step_arg(c, s, DNNL_ARG_WEIGHTS, &wmd, CPU_BIND_IN, 1, 0, NULL);
}

/* ---- LRN ------------------------------------------------------------------------------------ */

ffu_status nn_cpu_build_lrn(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || !nn_shape_equal(&x->shape, &y->shape) || x->shape.rank < 3)
        return CPU_UNSUPPORTED;
    int64_t size = nn_attr_int(n, "size", 0);
    /* ONNX's window is [c - (size-1)/2, c + ceil((size-1)/2)]: symmetric only when odd */
    if (size < 1 || size % 2 == 0) return CPU_UNSUPPORTED;
    dnnl_memory_desc_t md;
    if (nn_cpu_md_tensor(c, c->n->inputs[0], &md) < 0) return CPU_UNSUPPORTED;
    dnnl_lrn_desc_t desc;
    if (dnnl_lrn_forward_desc_init(&desc, dnnl_forward_inference, dnnl_lrn_across_channels, &md,
                                   size, nn_attr_float(n, "alpha", 1e-4f),
                                   nn_attr_float(n, "beta", 0.75f),
                                   nn_attr_float(n, "bias", 1.0f)) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd);
    if (st < 0) return st;
    return simple_step(c, pd, &md, &md, NULL);
}

/* ---- Reduce --------------------------------------------------------------------------------- */

/* The axes of a rank-r tensor from outermost to innermost as stored: plain row-major,
 * or channels-last (cl: axis 1 innermost). */
static void stored_order(int r, int cl, int *order)
{
    int n = 0;
    if (cl) {
        order[n++] = 0;
        for (int i = 2; i < r; i++) order[n++] = i;
        order[n++] = 1;
    } else {
        for (int i = 0; i < r; i++) order[n++] = i;
    }
}

/* ReduceMean / Sum / Max / Min over axes that are one block in the stored order: the
 * input as outer x mid x inner (stored), mid reduced. oneDNN 2.6 has only its reference
 * kernel for several of these shapes (`ref:any`: faceres's global mean over 7x7x1024
 * 0.60 ms, 10% of the model; GEAR's global max, dlib-resnet's global mean); this loop
 * takes 1-2% of that. Sums accumulate in double and max/min treat NaN as the
 * reference does (ops/reduce.c), so the results are the reference's. */
typedef struct cpu_reduce {
    nn_op op;
    int64_t outer, mid, inner; /* block form: the reduced axes are one block */
    int block;
    /* general form (block = 0): kept and reduced dims of the stored order, outermost
     * first, with their element strides in the input; outputs follow the kept dims */
    int nk, nr;
    int64_t kd[FFU_NN_MAX_RANK], ks[FFU_NN_MAX_RANK], rd[FFU_NN_MAX_RANK], rs[FFU_NN_MAX_RANK];
} cpu_reduce;

/* Max (mx) or Min of the running value f and a, as ops/reduce.c: a NaN, once met, stays. */
static inline float reduce_pick(int mx, float f, float a)
{
    int take = mx ? a > f : a < f;
    return (take || a != a) && f == f ? a : f;
}

/* One output of the general form: the reduction over the dims rd/rs from x. */
static float reduce_one(const cpu_reduce *k, const float *x)
{
    int64_t idx[FFU_NN_MAX_RANK] = {0}, off = 0, count = 1;
    for (int j = 0; j < k->nr; j++) count *= k->rd[j];
    int sum = k->op == NN_OP_REDUCE_MEAN || k->op == NN_OP_REDUCE_SUM, mx = k->op == NN_OP_REDUCE_MAX;
    double acc = 0;
    float f = mx ? -INFINITY : INFINITY;
    for (int64_t n = 0; n < count; n++) {
        float a = x[off];
        if (sum) acc += a;
        else f = reduce_pick(mx, f, a);
        for (int j = k->nr - 1; j >= 0; j--) { /* next index, innermost first */
            off += k->rs[j];
            if (++idx[j] < k->rd[j]) break;
            off -= k->rs[j] * k->rd[j];
            idx[j] = 0;
        }
    }
    if (!sum) return f;
    return (float)(k->op == NN_OP_REDUCE_MEAN ? acc / (double)count : acc);
}

enum { REDUCE_BLOCK = 64 }; /* inner values one work item accumulates */

static void reduce_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_reduce *k = kd;
    const float *x = ptr[0];
    float *y = ptr[1];
    if (!k->block) {
        int64_t total = 1;
        for (int j = 0; j < k->nk; j++) total *= k->kd[j];
        int64_t o0 = total * ithr / nthr, o1 = total * (ithr + 1) / nthr;
        for (int64_t o = o0; o < o1; o++) {
            int64_t rest = o, off = 0;
            for (int j = k->nk - 1; j >= 0; j--) {
                off += (rest % k->kd[j]) * k->ks[j];
                rest /= k->kd[j];
            }
            y[o] = reduce_one(k, x + off);
        }
        return;
    }
    int64_t blocks = (k->inner + REDUCE_BLOCK - 1) / REDUCE_BLOCK, items = k->outer * blocks;
    int64_t i0 = items * ithr / nthr, i1 = items * (ithr + 1) / nthr;
    int sum = k->op == NN_OP_REDUCE_MEAN || k->op == NN_OP_REDUCE_SUM;
    for (int64_t it = i0; it < i1; it++) {
        int64_t o = it / blocks, b0 = (it % blocks) * REDUCE_BLOCK;
        int64_t nb = k->inner - b0 < REDUCE_BLOCK ? k->inner - b0 : REDUCE_BLOCK;
        const float *xo = x + o * k->mid * k->inner + b0;
        float *yo = y + o * k->inner + b0;
        if (sum) {
            double acc[REDUCE_BLOCK] = {0};
            for (int64_t m = 0; m < k->mid; m++)
                for (int64_t i = 0; i < nb; i++) acc[i] += xo[m * k->inner + i];
            double scale = k->op == NN_OP_REDUCE_MEAN ? 1.0 / (double)k->mid : 1.0;
            for (int64_t i = 0; i < nb; i++) yo[i] = (float)(acc[i] * scale);
        } else {
            int mx = k->op == NN_OP_REDUCE_MAX;
            float acc[REDUCE_BLOCK];
            for (int64_t i = 0; i < nb; i++) acc[i] = mx ? -INFINITY : INFINITY;
            for (int64_t m = 0; m < k->mid; m++)
                for (int64_t i = 0; i < nb; i++) acc[i] = reduce_pick(mx, acc[i], xo[m * k->inner + i]);
            for (int64_t i = 0; i < nb; i++) yo[i] = acc[i];
        }
    }
}

/* The reduction in the input's stored order (channels-last when xl): outer x mid x
 * inner when the reduced axes (ignoring size-1 ones) are one block there, else the
 * general form. */
static void reduce_geometry(const nn_shape *s, const int *reduce, int xl, cpu_reduce *k)
{
    int r = s->rank, order[FFU_NN_MAX_RANK];
    stored_order(r, xl, order);
    int first = -1, last = -1;
    for (int p = 0; p < r; p++)
        if (reduce[order[p]] && s->d[order[p]] != 1) {
            if (first < 0) first = p;
            last = p;
        }
    k->outer = k->mid = k->inner = 1;
    k->block = 1;
    k->nk = k->nr = 0;
    int64_t stride[FFU_NN_MAX_RANK], acc = 1;
    for (int p = r - 1; p >= 0; p--) {
        stride[p] = acc;
        acc *= s->d[order[p]];
    }
    for (int p = 0; p < r; p++) {
        int64_t d = s->d[order[p]];
        int red = reduce[order[p]] && d != 1;
        if (first < 0 || p < first) k->outer *= d;
        else if (p <= last) {
            if (!red && d != 1) k->block = 0; /* a kept axis inside the reduced span */
            k->mid *= d;
        } else k->inner *= d;
        if (d == 1) continue;
        if (red) k->rd[k->nr] = d, k->rs[k->nr++] = stride[p];
        else k->kd[k->nk] = d, k->ks[k->nk++] = stride[p];
    }
}

ffu_status nn_cpu_build_reduce(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || n->ninputs > 2) return CPU_UNSUPPORTED;
    int r = x->shape.rank;
    if (r < 1 || r > DNNL_MAX_NDIMS) return CPU_UNSUPPORTED;
    int reduce[DNNL_MAX_NDIMS] = {0}, naxes = 0;
    const nn_tensor *ax = nn_in(c->g, n, 1);
    if (ax && nn_shape_numel(&ax->shape) > 0) {
        if (ax->dtype != FFU_DTYPE_I64 || !nn_cpu_is_const(ax)) return CPU_UNSUPPORTED;
        const int64_t *a = ax->data;
        naxes = (int)nn_shape_numel(&ax->shape);
        for (int i = 0; i < naxes; i++) {
            int64_t v = a[i] < 0 ? a[i] + r : a[i];
            if (v < 0 || v >= r) return CPU_UNSUPPORTED;
            reduce[v] = 1;
        }
    } else {
        int cnt;
        const int64_t *a = nn_attr_ints(n, "axes", &cnt);
        if (a && cnt > 0) { /* tolerate the attribute form too */
            for (int i = 0; i < cnt; i++) {
                int64_t v = a[i] < 0 ? a[i] + r : a[i];
                if (v < 0 || v >= r) return CPU_UNSUPPORTED;
                reduce[v] = 1;
            }
            naxes = cnt;
        } else {
            if (nn_attr_int(n, "noop_with_empty_axes", 0)) return CPU_UNSUPPORTED;
            for (int i = 0; i < r; i++) reduce[i] = 1;
            naxes = r;
        }
    }
    int64_t dd[DNNL_MAX_NDIMS], numel = 1;
    for (int i = 0; i < r; i++) {
        dd[i] = reduce[i] ? 1 : x->shape.d[i];
        numel *= dd[i];
    }
    if (numel != nn_shape_numel(&y->shape)) return CPU_UNSUPPORTED;
    dnnl_alg_kind_t alg;
    float p = 0;
    switch (n->op) {
    case NN_OP_REDUCE_MEAN: alg = dnnl_reduction_mean; break;
    case NN_OP_REDUCE_SUM: alg = dnnl_reduction_sum; break;
    case NN_OP_REDUCE_MAX: alg = dnnl_reduction_max; break;
    case NN_OP_REDUCE_MIN: alg = dnnl_reduction_min; break;
    case NN_OP_REDUCE_PROD: alg = dnnl_reduction_mul; break;
    case NN_OP_REDUCE_L1: alg = dnnl_reduction_norm_lp_sum, p = 1; break;
    case NN_OP_REDUCE_L2: alg = dnnl_reduction_norm_lp_sum, p = 2; break;
    case NN_OP_REDUCE_SUM_SQUARE: alg = dnnl_reduction_norm_lp_power_p_sum, p = 2; break;
    default: return CPU_UNSUPPORTED;
    }
    /* A channels-last input: the result is computed channels-last too (oneDNN's dst
     * with the reduced dims 1). That is the output's bytes when the output is stored
     * channels-last, or, for a plain output, when the channels or every spatial axis
     * are reduced away (the order of what is left is then the same in both). */
    int xl = r >= 3 && nn_cpu_layout(c, n->inputs[0]);
    /* an output whose spatial dims are all 1 has the same bytes in both layouts */
    int yl = y->shape.rank == r && nn_cpu_layout(c, n->outputs[0]) && !spatial_ones(y);
    int c_left = r >= 2 && !reduce[1] && x->shape.d[1] != 1, sp_left = 0;
    for (int i = 2; i < r; i++) sp_left |= !reduce[i] && x->shape.d[i] != 1;
    if ((yl && !xl) || (xl && !yl && c_left && sp_left)) return CPU_UNSUPPORTED;
    cpu_reduce kr;
    if ((n->op == NN_OP_REDUCE_MEAN || n->op == NN_OP_REDUCE_SUM || n->op == NN_OP_REDUCE_MAX ||
         n->op == NN_OP_REDUCE_MIN) &&
        nn_shape_numel(&x->shape) > 0) {
        reduce_geometry(&x->shape, reduce, xl, &kr);
        if (!c->p) return FFU_OK;
        cpu_reduce *d = nn_cpu_own(c, sizeof *d);
        if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        *d = kr;
        d->op = n->op;
        ffu_status st;
        cpu_step *s = nn_cpu_add_kernel_step(c, reduce_kernel, d, &st);
        if (!s) return st;
        if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
        snprintf(c->p->impl, sizeof c->p->impl, "facefuse:reduce");
        return nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_OUT, 0, 0, NULL);
    }
    nn_shape ds = {.rank = r};
    for (int i = 0; i < r; i++) ds.d[i] = dd[i];
    dnnl_memory_desc_t src_md, dst_md;
    if (xl ? nn_cpu_md_cl(&src_md, &x->shape) < 0 || nn_cpu_md_cl(&dst_md, &ds) < 0
           : nn_cpu_md_plain(&src_md, &x->shape, dnnl_f32) < 0 ||
                 nn_cpu_md_dims(&dst_md, r, dd, dnnl_f32) < 0)
        return CPU_UNSUPPORTED;
    dnnl_reduction_desc_t desc;
    if (dnnl_reduction_desc_init(&desc, alg, &src_md, &dst_md, p, 0.0f) != dnnl_success)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd;
    ffu_status st = make_pd(c, &desc, nn_cpu_attr(c, 0), &pd);
    if (st < 0) return st;
    return simple_step(c, pd, &src_md, &dst_md, NULL);
}

/* ---- Transpose ------------------------------------------------------------------------------ */

/* Element strides of tensor t as stored (plain row-major, or channels-last: axis 1
 * innermost), by logical axis. */
static void stored_strides(const cpu_ctx *c, int t, int64_t *st)
{
    const nn_shape *s = &c->g->tensors[t].shape;
    int r = s->rank;
    int order[FFU_NN_MAX_RANK];
    stored_order(r, nn_cpu_layout(c, t), order);
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        st[order[i]] = acc;
        acc *= s->d[order[i]];
    }
}

/* memcpy of *kd bytes from ptr[0] to ptr[1], in one 64-byte aligned share per thread */
static void copy_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    size_t bytes = *(const size_t *)kd, lines = (bytes + 63) / 64;
    size_t b0 = lines * (size_t)ithr / (size_t)nthr * 64, b1 = lines * (size_t)(ithr + 1) / (size_t)nthr * 64;
    if (b1 > bytes) b1 = bytes;
    if (b0 < b1) memcpy((char *)ptr[1] + b0, (const char *)ptr[0] + b0, b1 - b0);
}

ffu_status nn_cpu_build_transpose(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || n->ninputs != 1) return CPU_UNSUPPORTED;
    int r = x->shape.rank, perm[FFU_NN_MAX_RANK];
    if (r < 1 || r > DNNL_MAX_NDIMS || y->shape.rank != r) return CPU_UNSUPPORTED;
    int cnt;
    const int64_t *p = nn_attr_ints(n, "perm", &cnt);
    if (p && cnt != r) return CPU_UNSUPPORTED;
    unsigned seen = 0;
    for (int i = 0; i < r; i++) {
        perm[i] = p ? (int)p[i] : r - 1 - i;
        if (perm[i] < 0 || perm[i] >= r || (seen & (1u << perm[i]))) return CPU_UNSUPPORTED;
        seen |= 1u << perm[i];
        if (y->shape.d[i] != x->shape.d[perm[i]]) return CPU_UNSUPPORTED;
    }
    /* the input's memory described with the output's dims: output axis i walks input
     * axis perm[i]; a reorder then writes the output as it is stored */
    int64_t xs[FFU_NN_MAX_RANK];
    stored_strides(c, n->inputs[0], xs);
    dnnl_dims_t d, s;
    for (int i = 0; i < r; i++) d[i] = y->shape.d[i], s[i] = xs[perm[i]];
    dnnl_memory_desc_t src_md, dst_md;
    if (dnnl_memory_desc_init_by_strides(&src_md, r, d, dnnl_f32, s) != dnnl_success ||
        nn_cpu_md_tensor(c, n->outputs[0], &dst_md) < 0)
        return CPU_UNSUPPORTED;
    if (dnnl_memory_desc_equal(&src_md, &dst_md)) {
        /* the same bytes (an NHWC input transposed to NCHW and stored channels-last):
         * a plain copy, which oneDNN would do with its generic reorder at half speed */
        if (!c->p) return FFU_OK;
        size_t *bytes = nn_cpu_own(c, sizeof *bytes);
        if (!bytes) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        *bytes = (size_t)nn_shape_numel(&y->shape) * sizeof(float);
        snprintf(c->p->impl, sizeof c->p->impl, "facefuse:copy");
        c->p->view = 1; /* the copy is not even needed where the output can be a view */
        ffu_status st;
        cpu_step *cs = nn_cpu_add_kernel_step(c, copy_kernel, bytes, &st);
        if (!cs) return st;
        if ((st = nn_cpu_step_arg(c, cs, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
        return nn_cpu_step_arg(c, cs, 1, NULL, CPU_BIND_OUT, 0, 0, NULL);
    }
    return nn_cpu_reorder_step(c, &src_md, CPU_BIND_IN, 0, &dst_md, CPU_BIND_OUT, 0);
}

/* ---- Pad (constant) ---------------------------------------------------------------------------- */

/* Constant Pad of f32 data in either layout (input and output share it: layout_plan
 * ties them), as rows of the innermost stored axis: a row whose outer coordinates fall
 * in the input is the fill, a copy, the fill; any other row is all fill. FaceMesh pads
 * its residual branches' channels this way; run by ref, the NCHW result forced every
 * neighbouring convolution to convert layouts (60 reorders per run). */
typedef struct cpu_pad {
    int rank;
    int64_t od[FFU_NN_MAX_RANK], id[FFU_NN_MAX_RANK], p0[FFU_NN_MAX_RANK]; /* stored order */
    float v;
    /* only the innermost stored axis is padded: row i of y is row i of x (a channel pad
     * stored channels-last: FaceMesh's and BlazeFace's skip paths; the per-row index
     * arithmetic took three quarters of such a node) */
    int inner_only;
} cpu_pad;

static void pad_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_pad *d = kd;
    const float *x = ptr[0];
    float *y = ptr[1];
    int r = d->rank;
    int64_t rows = 1, il = d->id[r - 1], ol = d->od[r - 1], p0 = d->p0[r - 1];
    for (int k = 0; k < r - 1; k++) rows *= d->od[k];
    int64_t r0 = rows * ithr / nthr, r1 = rows * (ithr + 1) / nthr;
    if (d->inner_only) { /* row i of y is row i of x, padded (channels, channels-last) */
        for (int64_t row = r0; row < r1; row++) {
            float *yr = y + row * ol;
            const float *xr = x + row * il;
            for (int64_t j = 0; j < p0; j++)
                yr[j] = d->v;
            for (int64_t j = 0; j < il; j++)
                yr[p0 + j] = xr[j];
            for (int64_t j = p0 + il; j < ol; j++)
                yr[j] = d->v;
        }
        return;
    }
    for (int64_t row = r0; row < r1; row++) {
        float *yr = y + row * ol;
        int64_t rest = row, src = 0, scale = 1, inside = 1;
        for (int k = r - 2; k >= 0; k--) { /* outer coordinates, innermost first */
            int64_t o = rest % d->od[k], i = o - d->p0[k];
            rest /= d->od[k];
            if (i < 0 || i >= d->id[k]) inside = 0;
            src += i * scale;
            scale *= d->id[k];
        }
        if (!inside) {
            for (int64_t j = 0; j < ol; j++) yr[j] = d->v;
            continue;
        }
        for (int64_t j = 0; j < p0; j++) yr[j] = d->v;
        memcpy(yr + p0, x + src * il, sizeof(float) * (size_t)il);
        for (int64_t j = p0 + il; j < ol; j++) yr[j] = d->v;
    }
}

ffu_status nn_cpu_build_pad(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || n->ninputs < 2 || n->ninputs > 4 || !nn_shape_known(&y->shape))
        return CPU_UNSUPPORTED;
    if (strcmp(nn_attr_string(n, "mode", "constant"), "constant") != 0) return CPU_UNSUPPORTED;
    int r = x->shape.rank;
    if (r < 1 || y->shape.rank != r) return CPU_UNSUPPORTED;
    const nn_tensor *pt = nn_in(c->g, n, 1), *vt = nn_in(c->g, n, 2), *at = nn_in(c->g, n, 3);
    int64_t pads[2 * FFU_NN_MAX_RANK], axes[FFU_NN_MAX_RANK], p0[FFU_NN_MAX_RANK] = {0};
    int npads = 0, naxes = r;
    if (!pt || !nn_cpu_is_const(pt) || nn_const_ints(n, pt, pads, 2 * FFU_NN_MAX_RANK, &npads) <= 0)
        return CPU_UNSUPPORTED;
    if (at && nn_numel(at) != 0) {
        if (!nn_cpu_is_const(at) || nn_const_ints(n, at, axes, FFU_NN_MAX_RANK, &naxes) <= 0 ||
            nn_norm_axes(n, axes, naxes, r) < 0)
            return CPU_UNSUPPORTED;
    } else {
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (npads != 2 * naxes) return CPU_UNSUPPORTED;
    for (int i = 0; i < naxes; i++) {
        if (pads[i] < 0 || pads[naxes + i] < 0) return CPU_UNSUPPORTED; /* crops */
        p0[axes[i]] = pads[i];
    }
    float v = 0;
    if (vt && nn_numel(vt) != 0) {
        if (!nn_cpu_is_const(vt) || vt->dtype != FFU_DTYPE_F32 || nn_numel(vt) != 1)
            return CPU_UNSUPPORTED;
        v = *(const float *)vt->data;
    }
    int xl = nn_cpu_layout(c, n->inputs[0]), yl = nn_cpu_layout(c, n->outputs[0]);
    /* an input with spatial dims of 1 has the same bytes in both layouts (dlib's
     * ResNet pads a 1x1 branch to 2x2 before its last Add) */
    if (xl != yl && !spatial_ones(x)) return CPU_UNSUPPORTED;
    xl = yl;
    if (!c->p) return FFU_OK;
    cpu_pad *d = nn_cpu_own(c, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    memset(d, 0, sizeof *d);
    d->rank = r;
    d->v = v;
    for (int k = 0; k < r; k++) {
        int a = !xl ? k : k == 0 ? 0 : k == r - 1 ? 1 : k + 1; /* stored order -> axis */
        d->od[k] = y->shape.d[a], d->id[k] = x->shape.d[a], d->p0[k] = p0[a];
    }
    d->inner_only = 1;
    for (int k = 0; k < r - 1; k++)
        d->inner_only &= d->od[k] == d->id[k] && d->p0[k] == 0;
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:pad");
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, pad_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
    return nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_OUT, 0, 0, NULL);
}

/* ---- ffu.DynamicQuantizeSteps ---------------------------------------------------------- */

/* libgomp's barrier (stable C ABI): kernel steps run inside GOMP_parallel, every thread
 * of the team calling the kernel, so the team may meet at a barrier there. */
void GOMP_barrier(void);

/* One step: the input's range in QSTEPS_CHUNKS chunks (whole multiples of 16 values),
 * each thread taking a run of them, so that no partial range depends on the thread
 * count; the threads meet; then each turns the values of its own chunks (still in its
 * caches) into steps with the scale and zero point of the whole range. The loops are
 * the reference's arithmetic (cpu_quant_avx512.c): the bits are ref's. A range and an
 * elementwise map do not care how the values are laid out, so the output keeps the
 * input's layout (channels-last between convolutions). */
enum { QSTEPS_CHUNKS = 32 };

typedef struct cpu_qsteps {
    int64_t n;
} cpu_qsteps;

/* Start of chunk k of n values: equal runs of whole multiples of 16. */
static int64_t qsteps_at(int64_t n, int k)
{
    int64_t per = ((n + QSTEPS_CHUNKS - 1) / QSTEPS_CHUNKS + 15) / 16 * 16;
    return k * per < n ? k * per : n;
}

static void qsteps_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const cpu_qsteps *d = kd;
    const float *x = ptr[0];
    float *part = ptr[1];
    int k0 = QSTEPS_CHUNKS * ithr / nthr, k1 = QSTEPS_CHUNKS * (ithr + 1) / nthr;
    for (int k = k0; k < k1; k++) {
        int64_t a = qsteps_at(d->n, k), b = qsteps_at(d->n, k + 1);
        float mn = 0.0f, mx = 0.0f;
        nn_cpu_qsteps_range_avx512(x + a, b - a, &mn, &mx);
        part[2 * k] = mn;
        part[2 * k + 1] = mx;
    }
    if (nthr > 1) GOMP_barrier();
    float mn = 0.0f, mx = 0.0f, scale, zp;
    for (int k = 0; k < QSTEPS_CHUNKS; k++) {
        mn = part[2 * k] < mn ? part[2 * k] : mn;
        mx = part[2 * k + 1] > mx ? part[2 * k + 1] : mx;
    }
    qm_dynamic_params(mn, mx, &scale, &zp);
    if (ithr == 0) {
        *(float *)ptr[3] = scale;
        *(uint8_t *)ptr[4] = (uint8_t)zp;
    }
    int64_t a = qsteps_at(d->n, k0), b = qsteps_at(d->n, k1);
    nn_cpu_qsteps_avx512(x + a, b - a, scale, zp, (float *)ptr[2] + a);
}

ffu_status nn_cpu_build_qsteps(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *y = f32_out(c);
    if (!x || !y || n->noutputs != 3 || !nn_out(c->g, n, 1) || !nn_out(c->g, n, 2) ||
        n->act.kind != NN_ACT_NONE || !(ffu_cpu_features() & FFU_CPU_AVX512F) ||
        nn_cpu_blocked(c, n->inputs[0]) || nn_cpu_blocked(c, n->outputs[0]) ||
        nn_cpu_layout(c, n->inputs[0]) != nn_cpu_layout(c, n->outputs[0]))
        return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK;
    cpu_qsteps *d = nn_cpu_own(c, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    d->n = nn_shape_numel(&x->shape);
    size_t part = nn_cpu_scratch(c, 2 * QSTEPS_CHUNKS * sizeof(float));
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, qsteps_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0 ||
        (st = nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_SCRATCH, 0, part, NULL)) < 0)
        return st;
    for (int i = 0; i < 3; i++)
        if ((st = nn_cpu_step_arg(c, s, 2 + i, NULL, CPU_BIND_OUT, i, 0, NULL)) < 0) return st;
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:qsteps_avx512");
    return FFU_OK;
}

#endif
