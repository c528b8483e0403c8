/* Reductions: ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp (opset-18
 * form: axes as an optional input, keepdims, noop_with_empty_axes) and ArgMax/ArgMin
 * (axis, keepdims, select_last_index; i64 indices); shape inference and reference
 * kernels.
 *
 * Float data (f32, f64) accumulates in double; integer data (i32, i64, u8, i8) in
 * int64 so shape arithmetic folded through ReduceProd/ReduceSum stays exact, except for
 * LogSum and LogSumExp, which compute in double for every type (a logarithm is not an
 * integer anyway; the result is truncated into integer outputs). LogSumExp subtracts
 * the maximum first so large inputs do not overflow exp(). */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

enum red_kind {
    RED_MEAN,
    RED_SUM,
    RED_MAX,
    RED_MIN,
    RED_PROD,
    RED_L1,
    RED_L2,
    RED_SUM_SQUARE,
    RED_LOG_SUM,
    RED_LOG_SUM_EXP,
};

static int red_kind_of(nn_op op)
{
    switch (op) {
    case NN_OP_REDUCE_MEAN:
        return RED_MEAN;
    case NN_OP_REDUCE_SUM:
        return RED_SUM;
    case NN_OP_REDUCE_MAX:
        return RED_MAX;
    case NN_OP_REDUCE_MIN:
        return RED_MIN;
    case NN_OP_REDUCE_PROD:
        return RED_PROD;
    case NN_OP_REDUCE_L1:
        return RED_L1;
    case NN_OP_REDUCE_L2:
        return RED_L2;
    case NN_OP_REDUCE_LOG_SUM:
        return RED_LOG_SUM;
    case NN_OP_REDUCE_LOG_SUM_EXP:
        return RED_LOG_SUM_EXP;
    default:
        return RED_SUM_SQUARE;
    }
}

static int supported_type(ffu_dtype t)
{
    return t == FFU_DTYPE_F32 || t == FFU_DTYPE_F64 || t == FFU_DTYPE_I32 || t == FFU_DTYPE_I64 ||
           t == FFU_DTYPE_U8 || t == FFU_DTYPE_I8;
}

static void store(void *p, ffu_dtype t, int64_t i, double f, int64_t v)
{
    switch (t) {
    case FFU_DTYPE_F32:
        ((float *)p)[i] = (float)f;
        break;
    case FFU_DTYPE_F64:
        ((double *)p)[i] = f;
        break;
    case FFU_DTYPE_I64:
        ((int64_t *)p)[i] = v;
        break;
    case FFU_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case FFU_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case FFU_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    default:
        break;
    }
}

/* Integer accumulation wraps like two's complement instead of overflowing (hostile
 * data must not be undefined behaviour). */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* Which dims a reduce node reduces. *known = 0 when the axes input is not constant. */
typedef struct red_geom {
    unsigned mask; /* bit i: dim i is reduced */
    int noop;      /* empty axes with noop_with_empty_axes: output = input */
    int known;
} red_geom;

static ffu_status red_geom_init(const nn_graph *g, const nn_node *n, int rank, red_geom *rg)
{
    memset(rg, 0, sizeof *rg);
    int64_t axes[FFU_NN_MAX_RANK];
    int cnt = 0;
    const nn_tensor *at = nn_in(g, n, 1);
    if (at) {
        int r = nn_const_ints(n, at, axes, FFU_NN_MAX_RANK, &cnt);
        if (r < 0) return r;
        if (r == 0) return FFU_OK; /* not constant: dims unknown */
    } else {
        /* older opsets carry axes as an attribute; accept it as well */
        const int64_t *a = nn_attr_ints(n, "axes", &cnt);
        if (cnt > FFU_NN_MAX_RANK) return nn_node_error(n, FFU_ERR_FORMAT, "too many axes");
        for (int i = 0; i < cnt; i++)
            axes[i] = a[i];
    }
    rg->known = 1;
    if (cnt == 0) {
        if (nn_attr_int(n, "noop_with_empty_axes", 0) != 0)
            rg->noop = 1;
        else
            rg->mask = (1u << rank) - 1;
        return FFU_OK;
    }
    ffu_status e = nn_norm_axes(n, axes, cnt, rank);
    if (e < 0) return e;
    for (int i = 0; i < cnt; i++)
        rg->mask |= 1u << axes[i];
    return FFU_OK;
}

static ffu_status reduce_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 2);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!supported_type(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    red_geom rg;
    if ((e = red_geom_init(g, n, x->shape.rank, &rg)) < 0) return e;
    int keep = nn_attr_int(n, "keepdims", 1) != 0;
    nn_shape s = {.rank = 0};
    if (!rg.known) {
        if (!keep) return nn_set_out(g, n, 0, x->dtype, NULL);
        s.rank = x->shape.rank;
        for (int i = 0; i < s.rank; i++)
            s.d[i] = -1;
    } else if (rg.noop) {
        s = x->shape;
    } else {
        for (int i = 0; i < x->shape.rank; i++) {
            if (rg.mask & (1u << i)) {
                if (keep) s.d[s.rank++] = 1;
            } else {
                s.d[s.rank++] = x->shape.d[i];
            }
        }
    }
    return nn_set_out(g, n, 0, x->dtype, &s);
}

/* Splits the input's dims into kept ones (output order) and reduced ones, each with
 * its input stride; unit dims are dropped. */
typedef struct red_loop {
    int nk, nr;
    int64_t kd[FFU_NN_MAX_RANK], ks[FFU_NN_MAX_RANK];
    int64_t rd[FFU_NN_MAX_RANK], rs[FFU_NN_MAX_RANK];
    int64_t nout, count; /* output elements, elements per reduction */
} red_loop;

static void red_loop_init(const nn_shape *s, unsigned mask, red_loop *l)
{
    int64_t st[FFU_NN_MAX_RANK];
    nn_strides(s, st);
    memset(l, 0, sizeof *l);
    l->nout = l->count = 1;
    for (int i = 0; i < s->rank; i++) {
        if (mask & (1u << i)) {
            l->count *= s->d[i];
            if (s->d[i] != 1) {
                l->rd[l->nr] = s->d[i];
                l->rs[l->nr++] = st[i];
            }
        } else {
            l->nout *= s->d[i];
            if (s->d[i] != 1) {
                l->kd[l->nk] = s->d[i];
                l->ks[l->nk++] = st[i];
            }
        }
    }
}

/* Advances a counter idx over dims d (strides st) and returns the offset change. */
static int64_t step(int64_t *idx, const int64_t *d, const int64_t *st, int nd)
{
    int64_t delta = 0;
    for (int i = nd - 1; i >= 0; i--) {
        delta += st[i];
        if (++idx[i] < d[i]) return delta;
        delta -= st[i] * d[i];
        idx[i] = 0;
    }
    return delta;
}

static ffu_status reduce_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    red_geom rg;
    ffu_status e = red_geom_init(g, n, x->shape.rank, &rg);
    if (e < 0) return e;
    if (!rg.known) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "axes are not constant");
    ffu_dtype t = x->dtype;
    int64_t numel = nn_numel(x);
    if (rg.noop) {
        if (in[0] != out[0]) memmove(out[0], in[0], (size_t)numel * ffu_dtype_size(t));
        return FFU_OK;
    }
    int kind = red_kind_of(n->op), logk = kind == RED_LOG_SUM || kind == RED_LOG_SUM_EXP;
    int isf = t == FFU_DTYPE_F32 || t == FFU_DTYPE_F64 || logk;
    red_loop l;
    red_loop_init(&x->shape, rg.mask, &l);
    int64_t kidx[FFU_NN_MAX_RANK] = {0}, base = 0;
    for (int64_t o = 0; o < l.nout; o++) {
        int64_t ridx[FFU_NN_MAX_RANK] = {0}, off = base;
        double f = kind == RED_PROD  ? 1.0
                   : kind == RED_MAX ? -INFINITY
                   : kind == RED_MIN ? INFINITY
                                     : 0.0;
        int64_t v = kind == RED_PROD  ? 1
                    : kind == RED_MAX ? INT64_MIN
                    : kind == RED_MIN ? INT64_MAX
                                      : 0;
        double mx = -INFINITY; /* LogSumExp: the largest input (NaN if any is NaN) */
        if (kind == RED_LOG_SUM_EXP) {
            int64_t pidx[FFU_NN_MAX_RANK] = {0}, poff = base;
            for (int64_t r = 0; r < l.count; r++) {
                double a = nn_load_f64(in[0], t, poff);
                mx = isnan(a) || isnan(mx) ? NAN : a > mx ? a : mx;
                poff += step(pidx, l.rd, l.rs, l.nr);
            }
        }
        for (int64_t r = 0; r < l.count; r++) {
            if (isf) {
                double a = nn_load_f64(in[0], t, off);
                switch (kind) {
                case RED_MAX:
                    f = (a > f || isnan(a)) && !isnan(f) ? a : f;
                    break;
                case RED_MIN:
                    f = (a < f || isnan(a)) && !isnan(f) ? a : f;
                    break;
                case RED_PROD:
                    f *= a;
                    break;
                case RED_L1:
                    f += fabs(a);
                    break;
                case RED_L2:
                case RED_SUM_SQUARE:
                    f += a * a;
                    break;
                case RED_LOG_SUM_EXP:
                    f += exp(a - mx);
                    break;
                default:
                    f += a;
                    break;
                }
            } else {
                int64_t a = nn_load_int(in[0], t, off);
                switch (kind) {
                case RED_MAX:
                    v = a > v ? a : v;
                    break;
                case RED_MIN:
                    v = a < v ? a : v;
                    break;
                case RED_PROD:
                    v = wrap_mul(v, a);
                    break;
                case RED_L1:
                    v = wrap_add(v, a < 0 ? wrap_mul(a, -1) : a);
                    break;
                case RED_L2:
                case RED_SUM_SQUARE:
                    v = wrap_add(v, wrap_mul(a, a));
                    break;
                default:
                    v = wrap_add(v, a);
                    break;
                }
            }
            off += step(ridx, l.rd, l.rs, l.nr);
        }
        if (kind == RED_MEAN) {
            f = l.count ? f / (double)l.count : NAN;
            v = l.count ? v / l.count : 0;
        } else if (kind == RED_L2) {
            f = sqrt(f);
            v = (int64_t)sqrt((double)v);
        } else if (kind == RED_LOG_SUM) {
            f = log(f);
        } else if (kind == RED_LOG_SUM_EXP) {
            /* an infinite maximum is the result (exp(inf - inf) would be NaN) */
            f = isinf(mx) || isnan(mx) ? mx : mx + log(f);
        }
        if (logk) v = nn_f64_to_i64(f);
        store(out[0], t, o, f, v);
        base += step(kidx, l.kd, l.ks, l.nk);
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_reduce_mean = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_sum = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_max = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_min = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_prod = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_l1 = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_l2 = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_sum_square = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_log_sum = {reduce_infer, reduce_run, NULL, 0};
const nn_op_def nn_op_def_reduce_log_sum_exp = {reduce_infer, reduce_run, NULL, 0};

/* ---- ArgMax, ArgMin -------------------------------------------------------------------------- */

static ffu_status arg_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!supported_type(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, FFU_DTYPE_I64, NULL);
    int axis;
    if ((e = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &axis)) < 0) return e;
    int keep = nn_attr_int(n, "keepdims", 1) != 0;
    nn_shape s = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++) {
        if (i != axis)
            s.d[s.rank++] = x->shape.d[i];
        else if (keep)
            s.d[s.rank++] = 1;
    }
    return nn_set_out(g, n, 0, FFU_DTYPE_I64, &s);
}

static ffu_status arg_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int axis;
    ffu_status e = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &axis);
    if (e < 0) return e;
    int is_max = n->op == NN_OP_ARGMAX, last = nn_attr_int(n, "select_last_index", 0) != 0;
    int isf = x->dtype == FFU_DTYPE_F32 || x->dtype == FFU_DTYPE_F64;
    int64_t outer = nn_dims_prod(&x->shape, 0, axis), len = x->shape.d[axis];
    int64_t inner = nn_dims_prod(&x->shape, axis + 1, x->shape.rank);
    int64_t *Y = out[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best = 0;
            for (int64_t k = 1; k < len; k++) {
                int64_t a = base + k * inner, b = base + best * inner;
                int better, equal;
                if (isf) {
                    double va = nn_load_f64(in[0], x->dtype, a);
                    double vb = nn_load_f64(in[0], x->dtype, b);
                    better = is_max ? va > vb : va < vb;
                    equal = va == vb;
                } else {
                    int64_t va = nn_load_int(in[0], x->dtype, a),
                            vb = nn_load_int(in[0], x->dtype, b);
                    better = is_max ? va > vb : va < vb;
                    equal = va == vb;
                }
                if (better || (last && equal)) best = k;
            }
            Y[o * inner + i] = best;
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_argmax = {arg_infer, arg_run, NULL, 0};
const nn_op_def nn_op_def_argmin = {arg_infer, arg_run, NULL, 0};
