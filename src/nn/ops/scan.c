/* Ops that walk one axis of their input in order: CumSum (running sums; exclusive,
 * reverse) and TopK (the K largest or smallest values and their indices). The axis of
 * CumSum and the K of TopK are inputs; they are read from constants in infer (TopK's K
 * decides the output shape) and from the data at run time.
 *
 * TopK sorts each row with a stable merge sort of (value, index) pairs, so equal values
 * come out lower index first, as ONNX requires. NaN orders above every number (as
 * numpy's sort puts it last): largest=1 returns NaNs first. The output is always sorted;
 * sorted=0 only says the caller does not need it. */
#include <math.h>

#include "ops_internal.h"

static int numeric(ffu_dtype t) { return nn_dtype_is_float(t) || nn_dtype_is_int(t); }

/* ---- CumSum(x, axis), exclusive, reverse ---------------------------------------------------- */

static ffu_status cum_sum_axis(const nn_node *n, const nn_tensor *at, const void *data, int rank,
                               int *axis)
{
    if (!nn_dtype_is_int(at->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "axis is %s", ffu_dtype_name(at->dtype));
    if (at->shape.rank > 1 || nn_numel(at) != 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "axis must be one value");
    return nn_norm_axis(n, nn_load_int(data, at->dtype, 0), rank, axis);
}

static ffu_status cum_sum_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *at = nn_in(g, n, 1);
    if (!numeric(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank == 0) return nn_node_error(n, FFU_ERR_FORMAT, "scalar input");
    int axis;
    if (x->shape.rank > 0 && nn_is_const(at) &&
        (st = cum_sum_axis(n, at, at->data, x->shape.rank, &axis)) < 0)
        return st;
    return nn_set_out(g, n, 0, x->dtype, x->shape.rank >= 0 ? &x->shape : NULL);
}

/* Element e of integer data with es-byte elements = the low bits of v. */
static void store_low(void *p, size_t es, int64_t e, uint64_t v)
{
    switch (es) {
    case 1:
        ((uint8_t *)p)[e] = (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)p)[e] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)p)[e] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)p)[e] = v;
        break;
    }
}

static ffu_status cum_sum_run(const nn_graph *g, const nn_node *n, void *const *in,
                              void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int axis;
    ffu_status st = cum_sum_axis(n, nn_in(g, n, 1), in[1], x->shape.rank, &axis);
    if (st < 0) return st;
    int excl = nn_attr_int(n, "exclusive", 0) != 0, rev = nn_attr_int(n, "reverse", 0) != 0;
    int64_t outer = nn_dims_prod(&x->shape, 0, axis), len = x->shape.d[axis];
    int64_t inner = nn_dims_prod(&x->shape, axis + 1, x->shape.rank);
    ffu_dtype t = x->dtype;
    int isf = nn_dtype_is_float(t);
    size_t es = ffu_dtype_size(t);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double f = 0;
            uint64_t v = 0; /* integers wrap instead of overflowing */
            for (int64_t s = 0; s < len; s++) {
                int64_t k = rev ? len - 1 - s : s, e = (o * len + k) * inner + i;
                double fx = isf ? nn_load_f64(in[0], t, e) : 0;
                uint64_t vx = isf ? 0 : (uint64_t)nn_load_int(in[0], t, e);
                if (!excl) f += fx, v += vx;
                if (isf)
                    nn_store_f64(out[0], t, e, f);
                else
                    store_low(out[0], es, e, v);
                if (excl) f += fx, v += vx;
            }
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_cum_sum = {cum_sum_infer, cum_sum_run, NULL, 0};

/* ---- TopK(x, K), axis, largest, sorted --------------------------------------------------------
 */

typedef struct tk_item {
    double f;   /* float key */
    int64_t v;  /* integer key (u64 compared unsigned) */
    int64_t at; /* index along the axis */
} tk_item;

typedef struct tk_order {
    int isf, un, largest;
} tk_order;

/* a strictly before b in the output order (ties: neither, so the stable sort keeps the
 * lower index first) */
static int tk_before(const tk_item *a, const tk_item *b, const tk_order *o)
{
    int gt, lt;
    if (o->isf) {
        int an = isnan(a->f), bn = isnan(b->f);
        gt = (an && !bn) || (!an && !bn && a->f > b->f);
        lt = (!an && bn) || (!an && !bn && a->f < b->f);
    } else if (o->un) {
        gt = (uint64_t)a->v > (uint64_t)b->v, lt = (uint64_t)a->v < (uint64_t)b->v;
    } else {
        gt = a->v > b->v, lt = a->v < b->v;
    }
    return o->largest ? gt : lt;
}

/* Stable bottom-up merge sort of a[0..n) using tmp[0..n). */
static void tk_sort(tk_item *a, tk_item *tmp, int64_t n, const tk_order *o)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = tk_before(&a[j], &a[i], o) ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, sizeof *a * (size_t)n);
    }
}

/* K from a one-element integer tensor, checked against the axis' size dim (-1: unknown). */
static ffu_status top_k_k(const nn_node *n, const nn_tensor *kt, const void *data, int64_t dim,
                          int64_t *k)
{
    if (!nn_dtype_is_int(kt->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "K is %s", ffu_dtype_name(kt->dtype));
    if (nn_numel(kt) != 1) return nn_node_error(n, FFU_ERR_FORMAT, "K must be one value");
    *k = nn_load_int(data, kt->dtype, 0);
    if (*k < 0 || (dim >= 0 && *k > dim))
        return nn_node_error(n, FFU_ERR_FORMAT, "K %lld is outside [0, %lld]", (long long)*k,
                             (long long)dim);
    return FFU_OK;
}

static ffu_status top_k_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *kt = nn_in(g, n, 1);
    if (!numeric(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (n->noutputs > 2) return nn_node_error(n, FFU_ERR_FORMAT, "%d outputs (2)", n->noutputs);
    if (x->shape.rank < 0) {
        st = nn_set_out(g, n, 0, x->dtype, NULL);
        return st < 0 || !nn_out(g, n, 1) ? st : nn_set_out(g, n, 1, FFU_DTYPE_I64, NULL);
    }
    if (x->shape.rank == 0) return nn_node_error(n, FFU_ERR_FORMAT, "scalar input");
    int axis;
    if ((st = nn_norm_axis(n, nn_attr_int(n, "axis", -1), x->shape.rank, &axis)) < 0) return st;
    int64_t k = -1;
    if (nn_is_const(kt) && (st = top_k_k(n, kt, kt->data, x->shape.d[axis], &k)) < 0) return st;
    nn_shape o = x->shape;
    o.d[axis] = k;
    if ((st = nn_set_out(g, n, 0, x->dtype, &o)) < 0) return st;
    return nn_out(g, n, 1) ? nn_set_out(g, n, 1, FFU_DTYPE_I64, &o) : FFU_OK;
}

static int top_k_axis(const nn_graph *g, const nn_node *n, int *axis)
{
    const nn_tensor *x = nn_in(g, n, 0);
    return x && x->shape.rank > 0 &&
           nn_norm_axis(n, nn_attr_int(n, "axis", -1), x->shape.rank, axis) >= 0;
}

static size_t top_k_scratch(const nn_graph *g, const nn_node *n)
{
    int axis;
    if (!top_k_axis(g, n, &axis)) {
        ffu_error_clear();
        return 0;
    }
    int64_t len = nn_in(g, n, 0)->shape.d[axis];
    return len > 0 ? (size_t)len * 2 * sizeof(tk_item) : 0;
}

static ffu_status top_k_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0), *yi = nn_out(g, n, 1);
    int axis;
    if (!top_k_axis(g, n, &axis)) return nn_node_error(n, FFU_ERR_FORMAT, "bad axis");
    int64_t len = x->shape.d[axis], k;
    ffu_status st = top_k_k(n, nn_in(g, n, 1), in[1], len, &k);
    if (st < 0) return st;
    if (y && k != y->shape.d[axis])
        return nn_node_error(n, FFU_ERR_FORMAT, "K %lld differs from the planned %lld",
                             (long long)k, (long long)y->shape.d[axis]);
    int64_t outer = nn_dims_prod(&x->shape, 0, axis);
    int64_t inner = nn_dims_prod(&x->shape, axis + 1, x->shape.rank);
    ffu_dtype t = x->dtype;
    size_t es = ffu_dtype_size(t);
    tk_order ord = {nn_dtype_is_float(t), !nn_dtype_is_signed(t),
                    nn_attr_int(n, "largest", 1) != 0};
    tk_item *a = scratch, *tmp = a + len;
    if (k == 0 || len == 0) return FFU_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t s = 0; s < len; s++) {
                int64_t e = (o * len + s) * inner + i;
                a[s].f = ord.isf ? nn_load_f64(in[0], t, e) : 0;
                a[s].v = ord.isf ? 0 : nn_load_int(in[0], t, e);
                a[s].at = s;
            }
            tk_sort(a, tmp, len, &ord);
            for (int64_t s = 0; s < k; s++) {
                int64_t e = (o * k + s) * inner + i;
                if (out[0])
                    memcpy((char *)out[0] + e * (int64_t)es,
                           (const char *)in[0] + ((o * len + a[s].at) * inner + i) * (int64_t)es,
                           es);
                if (yi && n->noutputs > 1 && out[1]) ((int64_t *)out[1])[e] = a[s].at;
            }
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_top_k = {top_k_infer, top_k_run, top_k_scratch, 0};
