/* Pooling ops: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool; shape inference
 * and reference kernels over NCHW data with 1 to 3 spatial dims (window geometry from
 * nn_window_init in conv.c: kernel, strides, dilations, pads, auto_pad, ceil_mode).
 *
 * MaxPool runs on f32, f64, i8 and u8 (only comparisons); averages are f32, summed in
 * double. MaxPool's optional Indices output holds, per output, where its maximum was:
 * the offset into the whole input tensor, row-major (storage_order 0) or with each
 * plane's two spatial dims column-major (storage_order 1, 1-D and 2-D only); the first
 * of equal maxima; MaxUnpool writes values back to such offsets. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops_internal.h"

typedef struct pool_geom {
    int64_t N, C;
    nn_window w;
} pool_geom;

static ffu_status pool_geom_init(const nn_graph *g, const nn_node *n, pool_geom *pg)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    memset(pg, 0, sizeof *pg);
    int cnt;
    if (!nn_attr_ints(n, "kernel_shape", &cnt))
        return nn_node_error(n, FFU_ERR_FORMAT, "kernel_shape is missing");
    if (x->shape.rank >= 0 && x->shape.rank != cnt + 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input of rank %d for a %d-D kernel", x->shape.rank,
                             cnt);
    int64_t in[3] = {-1, -1, -1};
    pg->N = pg->C = -1;
    if (x->shape.rank >= 0) {
        pg->N = x->shape.d[0];
        pg->C = x->shape.d[1];
        for (int i = 0; i < cnt && i < 3; i++)
            in[i] = x->shape.d[2 + i];
    }
    return nn_window_init(n, NN_WINDOW_POOL, cnt, in, NULL, &pg->w);
}

static ffu_status pool_infer_common(nn_graph *g, nn_node *n, ffu_dtype dtype)
{
    pool_geom pg;
    ffu_status e = pool_geom_init(g, n, &pg);
    if (e < 0) return e;
    nn_shape s = {.rank = pg.w.nd + 2};
    s.d[0] = pg.N;
    s.d[1] = pg.C;
    for (int i = 0; i < pg.w.nd; i++)
        s.d[2 + i] = pg.w.out[3 - pg.w.nd + i];
    return nn_set_out(g, n, 0, dtype, &s);
}

/* Range [*k0, *k1) of kernel taps k with lo <= start + k * dil < hi. */
static void taps(int64_t start, int64_t dil, int64_t k, int64_t lo, int64_t hi, int64_t *k0,
                 int64_t *k1)
{
    int64_t a = 0, b = k;
    if (start < lo) a = (lo - start + dil - 1) / dil;
    if (start + (k - 1) * dil >= hi) b = hi - start <= 0 ? 0 : (hi - start + dil - 1) / dil;
    *k0 = a;
    *k1 = b > a ? b : a;
}

/* ---- MaxPool -------------------------------------------------------------------------------- */

static ffu_status max_pool_infer(nn_graph *g, nn_node *n)
{
    if (n->noutputs > 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "has %d outputs (1 or 2)", n->noutputs);
    const nn_tensor *x = nn_in(g, n, 0);
    if (x && x->dtype != FFU_DTYPE_F32 && x->dtype != FFU_DTYPE_F64 && x->dtype != FFU_DTYPE_U8 &&
        x->dtype != FFU_DTYPE_I8)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    int64_t order = nn_attr_int(n, "storage_order", 0);
    if (order != 0 && order != 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "storage_order %lld (0 or 1)", (long long)order);
    ffu_status e = pool_infer_common(g, n, x ? x->dtype : FFU_DTYPE_F32);
    if (e < 0 || n->noutputs < 2 || !nn_out(g, n, 1)) return e;
    const nn_tensor *y = nn_out(g, n, 0);
    if (order == 1 && y->shape.rank > 4)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "storage_order 1 with 3 spatial dims");
    return nn_set_out(g, n, 1, FFU_DTYPE_I64, y->shape.rank >= 0 ? &y->shape : NULL);
}

/* One max-pool kernel per element type; padding never wins (it is skipped). */
#define DEFINE_MAX_POOL(T, NAME, LOWEST, ISNAN)                                                    \
    static void NAME(const T *X, T *Y, int64_t *I, int colmajor, const nn_window *w,               \
                     int64_t planes)                                                               \
    {                                                                                              \
        int64_t iplane = w->in[0] * w->in[1] * w->in[2];                                           \
        int64_t oplane = w->out[0] * w->out[1] * w->out[2];                                        \
        for (int64_t p = 0; p < planes; p++) {                                                     \
            const T *x = X + p * iplane;                                                           \
            T *y = Y + p * oplane;                                                                 \
            for (int64_t od = 0; od < w->out[0]; od++) {                                           \
                int64_t sd = od * w->stride[0] - w->pad0[0], d0, d1;                               \
                taps(sd, w->dil[0], w->k[0], 0, w->in[0], &d0, &d1);                               \
                for (int64_t oh = 0; oh < w->out[1]; oh++) {                                       \
                    int64_t sh = oh * w->stride[1] - w->pad0[1], h0, h1;                           \
                    taps(sh, w->dil[1], w->k[1], 0, w->in[1], &h0, &h1);                           \
                    for (int64_t ow = 0; ow < w->out[2]; ow++) {                                   \
                        int64_t sw = ow * w->stride[2] - w->pad0[2], x0, x1;                       \
                        taps(sw, w->dil[2], w->k[2], 0, w->in[2], &x0, &x1);                       \
                        T m = LOWEST;                                                              \
                        int64_t at = -1;                                                           \
                        for (int64_t kd = d0; kd < d1; kd++)                                       \
                            for (int64_t kh = h0; kh < h1; kh++) {                                 \
                                const T *r =                                                       \
                                    x +                                                            \
                                    ((sd + kd * w->dil[0]) * w->in[1] + sh + kh * w->dil[1]) *     \
                                        w->in[2] +                                                 \
                                    sw;                                                            \
                                for (int64_t kw = x0; kw < x1; kw++) {                             \
                                    T v = r[kw * w->dil[2]];                                       \
                                    if (at < 0 || ((v > m || ISNAN(v)) && !ISNAN(m))) {            \
                                        m = v;                                                     \
                                        at = (r - x) + kw * w->dil[2];                             \
                                    }                                                              \
                                }                                                                  \
                            }                                                                      \
                        int64_t yo = (od * w->out[1] + oh) * w->out[2] + ow;                       \
                        y[yo] = m;                                                                 \
                        if (I) {                                                                   \
                            at = at < 0 ? 0 : at; /* a window of padding only */                   \
                            if (colmajor) /* h + w * H in the plane (2-D; 1-D: the same) */        \
                                at = at % w->in[2] * w->in[1] + at / w->in[2] % w->in[1];          \
                            I[p * oplane + yo] = p * iplane + at;                                  \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define INT_ISNAN(v) 0
DEFINE_MAX_POOL(float, max_pool_f32, -INFINITY, isnan)
DEFINE_MAX_POOL(double, max_pool_f64, -INFINITY, isnan)
DEFINE_MAX_POOL(uint8_t, max_pool_u8, 0, INT_ISNAN)
DEFINE_MAX_POOL(int8_t, max_pool_i8, INT8_MIN, INT_ISNAN)

static ffu_status max_pool_run(const nn_graph *g, const nn_node *n, void *const *in,
                               void *const *out, void *scratch)
{
    (void)scratch;
    pool_geom pg;
    ffu_status e = pool_geom_init(g, n, &pg);
    if (e < 0) return e;
    int64_t planes = pg.N * pg.C, *I = n->noutputs > 1 ? out[1] : NULL;
    int cm = nn_attr_int(n, "storage_order", 0) == 1;
    switch (nn_in(g, n, 0)->dtype) {
    case FFU_DTYPE_F32:
        max_pool_f32(in[0], out[0], I, cm, &pg.w, planes);
        break;
    case FFU_DTYPE_F64:
        max_pool_f64(in[0], out[0], I, cm, &pg.w, planes);
        break;
    case FFU_DTYPE_U8:
        max_pool_u8(in[0], out[0], I, cm, &pg.w, planes);
        break;
    case FFU_DTYPE_I8:
        max_pool_i8(in[0], out[0], I, cm, &pg.w, planes);
        break;
    default:
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type");
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_max_pool = {max_pool_infer, max_pool_run, NULL, 0};

/* ---- AveragePool ---------------------------------------------------------------------------- */

static ffu_status average_pool_infer(nn_graph *g, nn_node *n)
{
    const nn_tensor *x = nn_in(g, n, 0);
    if (x && x->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s (only f32)",
                             ffu_dtype_name(x->dtype));
    return pool_infer_common(g, n, FFU_DTYPE_F32);
}

/* The divisor is the number of taps inside the input (count_include_pad = 0) or inside
 * the input plus its explicit pads (count_include_pad = 1); the extra row ceil_mode
 * may add is never counted. */
static ffu_status average_pool_run(const nn_graph *g, const nn_node *n, void *const *in,
                                   void *const *out, void *scratch)
{
    (void)scratch;
    pool_geom pg;
    ffu_status e = pool_geom_init(g, n, &pg);
    if (e < 0) return e;
    const nn_window *w = &pg.w;
    int include_pad = nn_attr_int(n, "count_include_pad", 0) != 0;
    const float *X = in[0];
    float *Y = out[0];
    int64_t iplane = w->in[0] * w->in[1] * w->in[2], oplane = w->out[0] * w->out[1] * w->out[2];
    for (int64_t p = 0; p < pg.N * pg.C; p++) {
        const float *x = X + p * iplane;
        float *y = Y + p * oplane;
        for (int64_t od = 0; od < w->out[0]; od++) {
            int64_t sd = od * w->stride[0] - w->pad0[0], d0, d1, pd0, pd1;
            taps(sd, w->dil[0], w->k[0], 0, w->in[0], &d0, &d1);
            taps(sd, w->dil[0], w->k[0], -w->pad0[0], w->in[0] + w->pad1[0], &pd0, &pd1);
            for (int64_t oh = 0; oh < w->out[1]; oh++) {
                int64_t sh = oh * w->stride[1] - w->pad0[1], h0, h1, ph0, ph1;
                taps(sh, w->dil[1], w->k[1], 0, w->in[1], &h0, &h1);
                taps(sh, w->dil[1], w->k[1], -w->pad0[1], w->in[1] + w->pad1[1], &ph0, &ph1);
                for (int64_t ow = 0; ow < w->out[2]; ow++) {
                    int64_t sw = ow * w->stride[2] - w->pad0[2], x0, x1, px0, px1;
                    taps(sw, w->dil[2], w->k[2], 0, w->in[2], &x0, &x1);
                    taps(sw, w->dil[2], w->k[2], -w->pad0[2], w->in[2] + w->pad1[2], &px0, &px1);
                    double sum = 0;
                    for (int64_t kd = d0; kd < d1; kd++)
                        for (int64_t kh = h0; kh < h1; kh++) {
                            const float *r =
                                x +
                                ((sd + kd * w->dil[0]) * w->in[1] + sh + kh * w->dil[1]) *
                                    w->in[2] +
                                sw;
                            for (int64_t kw = x0; kw < x1; kw++)
                                sum += r[kw * w->dil[2]];
                        }
                    int64_t cnt = include_pad ? (pd1 - pd0) * (ph1 - ph0) * (px1 - px0)
                                              : (d1 - d0) * (h1 - h0) * (x1 - x0);
                    y[(od * w->out[1] + oh) * w->out[2] + ow] =
                        cnt > 0 ? (float)(sum / (double)cnt) : 0.0f;
                }
            }
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_average_pool = {average_pool_infer, average_pool_run, NULL, 0};

/* ---- GlobalAveragePool, GlobalMaxPool ----------------------------------------------------------
 */

static ffu_status global_pool_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (x->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s (only f32)",
                             ffu_dtype_name(x->dtype));
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, FFU_DTYPE_F32, NULL);
    if (x->shape.rank < 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input of rank %d", x->shape.rank);
    nn_shape s = x->shape;
    for (int i = 2; i < s.rank; i++)
        s.d[i] = 1;
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, &s);
}

static ffu_status global_pool_run(const nn_graph *g, const nn_node *n, const float *X, float *Y,
                                  int max)
{
    const nn_shape *s = &nn_in(g, n, 0)->shape;
    int64_t planes = s->d[0] * s->d[1], inner = nn_dims_prod(s, 2, s->rank);
    for (int64_t p = 0; p < planes; p++) {
        const float *x = X + p * inner;
        if (max) {
            float m = -INFINITY;
            for (int64_t i = 0; i < inner; i++)
                if (x[i] > m || isnan(x[i])) m = x[i];
            Y[p] = m;
        } else {
            double sum = 0;
            for (int64_t i = 0; i < inner; i++)
                sum += x[i];
            Y[p] = inner ? (float)(sum / (double)inner) : 0.0f;
        }
    }
    return FFU_OK;
}

static ffu_status global_average_pool_run(const nn_graph *g, const nn_node *n, void *const *in,
                                          void *const *out, void *scratch)
{
    (void)scratch;
    return global_pool_run(g, n, in[0], out[0], 0);
}

static ffu_status global_max_pool_run(const nn_graph *g, const nn_node *n, void *const *in,
                                      void *const *out, void *scratch)
{
    (void)scratch;
    return global_pool_run(g, n, in[0], out[0], 1);
}

const nn_op_def nn_op_def_global_average_pool = {global_pool_infer, global_average_pool_run, NULL,
                                                 0};
const nn_op_def nn_op_def_global_max_pool = {global_pool_infer, global_max_pool_run, NULL, 0};

/* ---- MaxUnpool(X, I, output_shape?): attributes kernel_shape, strides, pads ------------------ */

/* The output shape: output_shape's values when given (constant), else each spatial dim
 * (in - 1) * stride + kernel - pads, as MaxPool's inverse (*def: always that one: the
 * indices address it, and a larger output_shape pads it at the end of each dim, as
 * ONNX Runtime does). */
static ffu_status max_unpool_shape(const nn_graph *g, const nn_node *n, nn_shape *s, nn_shape *def)
{
    ffu_status e = nn_check_inputs(g, n, 2, 3);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0), *ix = nn_in(g, n, 1), *os = nn_in(g, n, 2);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (!nn_dtype_is_int(ix->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "indices are %s", ffu_dtype_name(ix->dtype));
    int nk, ns, np;
    const int64_t *k = nn_attr_ints(n, "kernel_shape", &nk);
    const int64_t *st = nn_attr_ints(n, "strides", &ns), *pads = nn_attr_ints(n, "pads", &np);
    if (!k || nk < 1 || nk > 3 || (st && ns != nk) || (pads && np != 2 * nk))
        return nn_node_error(n, FFU_ERR_FORMAT, "kernel_shape, strides or pads");
    s->rank = def->rank = -1;
    if (x->shape.rank < 0) return FFU_OK;
    if (x->shape.rank != nk + 2 || (ix->shape.rank >= 0 && !nn_shape_equal(&ix->shape, &x->shape)))
        return nn_node_error(n, FFU_ERR_FORMAT,
                             "input of rank %d for a %d-D kernel, indices of "
                             "its shape",
                             x->shape.rank, nk);
    *def = x->shape;
    for (int i = 0; i < nk; i++) {
        int64_t in = x->shape.d[2 + i], stride = st ? st[i] : 1;
        int64_t p = pads ? pads[i] + pads[nk + i] : 0;
        if (k[i] < 1 || k[i] > 4096 || stride < 1 || stride > 4096 || p < 0 || p > 8192)
            return nn_node_error(n, FFU_ERR_FORMAT, "kernel %lld, stride %lld, pads %lld",
                                 (long long)k[i], (long long)stride, (long long)p);
        int64_t out = in < 0 ? -1 : (in - 1) * stride + k[i] - p;
        if (in >= 0 && (out < 0 || out > ((int64_t)1 << 31)))
            return nn_node_error(n, FFU_ERR_FORMAT, "output dim %lld", (long long)out);
        def->d[2 + i] = out;
    }
    *s = *def;
    if (os) {
        if (!nn_is_const(os)) { /* the values come at run time: the session binds them */
            for (int i = 0; i < s->rank; i++)
                s->d[i] = -1;
            return FFU_OK;
        }
        int cnt;
        int64_t v[FFU_NN_MAX_RANK];
        if ((e = nn_read_ints(n, os->data, os->dtype, nn_numel(os), v, FFU_NN_MAX_RANK, &cnt)) < 0)
            return e;
        if (cnt != x->shape.rank)
            return nn_node_error(n, FFU_ERR_FORMAT, "output_shape has %d values for rank %d", cnt,
                                 x->shape.rank);
        for (int i = 0; i < cnt; i++) {
            /* batch and channels as the input's; no spatial dim below the default */
            if ((i < 2 && v[i] != x->shape.d[i]) ||
                (i >= 2 && def->d[i] >= 0 && v[i] < def->d[i]) || v[i] > ((int64_t)1 << 31))
                return nn_node_error(n, FFU_ERR_FORMAT, "output_shape dim %d = %lld", i,
                                     (long long)v[i]);
            s->d[i] = v[i];
        }
    }
    return FFU_OK;
}

static ffu_status max_unpool_infer(nn_graph *g, nn_node *n)
{
    nn_shape s, def;
    ffu_status e = max_unpool_shape(g, n, &s, &def);
    if (e < 0) return e;
    return nn_set_out(g, n, 0, nn_in(g, n, 0)->dtype, s.rank >= 0 ? &s : NULL);
}

static ffu_status max_unpool_run(const nn_graph *g, const nn_node *n, void *const *in,
                                 void *const *out, void *scratch)
{
    (void)scratch;
    nn_shape s, def;
    ffu_status e = max_unpool_shape(g, n, &s, &def);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0), *ix = nn_in(g, n, 1), *y = nn_out(g, n, 0);
    size_t es = ffu_dtype_size(x->dtype);
    int64_t nx = nn_numel(x), ny = nn_numel(y), nd = nn_shape_numel(&def);
    memset(out[0], 0, (size_t)ny * es);
    for (int64_t j = 0; j < nx; j++) {
        int64_t at = nn_load_int(in[1], ix->dtype, j);
        if (at < 0 || at >= nd)
            return nn_node_error(n, FFU_ERR_FORMAT, "index %lld is outside the %lld values",
                                 (long long)at, (long long)nd);
        /* the same coordinates in the (perhaps larger) output */
        int64_t o = 0, rest = at, mul = 1;
        for (int d = def.rank - 1; d >= 0; d--) {
            o += rest % def.d[d] * mul;
            rest /= def.d[d];
            mul *= y->shape.d[d];
        }
        memcpy((char *)out[0] + (size_t)o * es, (const char *)in[0] + (size_t)j * es, es);
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_max_unpool = {max_unpool_infer, max_unpool_run, NULL, 0};
