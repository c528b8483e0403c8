/* Ops that see their input as a stack of matrices (the last two dims): Trilu (keeps the
 * upper or lower triangle, zeroes the rest), EyeLike (ones on a diagonal, shaped like
 * a 2-D input) and Det (each square matrix's determinant, floats, in double). Trilu and
 * EyeLike work on any element type: a zero is all-zero bytes in every type the engine
 * has, and a one is written through nn_store_f64.
 *
 * Diagonal offsets k come from files and may be anything: they are clamped to the
 * matrix before any index arithmetic, so INT64_MIN / INT64_MAX mean "everything" or
 * "nothing" without overflow. */
#include <math.h>

#include "ops_internal.h"

/* k clamped into [-(rows + 1), cols + 1]: the same triangles, and i + k stays small. */
static int64_t clamp_k(int64_t k, int64_t rows, int64_t cols)
{
    return k < -(rows + 1) ? -(rows + 1) : k > cols + 1 ? cols + 1 : k;
}

/* ---- Trilu(input, k?) ---------------------------------------------------------------------- */

static ffu_status trilu_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *k = nn_in(g, n, 1);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input has rank %d (at least 2)", x->shape.rank);
    if (k) {
        if (!nn_dtype_is_int(k->dtype))
            return nn_node_error(n, FFU_ERR_FORMAT, "k is %s, not an integer",
                                 ffu_dtype_name(k->dtype));
        int64_t cnt = nn_numel(k);
        if (cnt >= 0 && cnt != 1)
            return nn_node_error(n, FFU_ERR_FORMAT, "k has %lld values (one)", (long long)cnt);
    }
    return nn_set_out(g, n, 0, x->dtype, x->shape.rank >= 0 ? &x->shape : NULL);
}

static ffu_status trilu_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *kt = nn_in(g, n, 1);
    int rank = x->shape.rank, upper = nn_attr_int(n, "upper", 1) != 0;
    int64_t rows = x->shape.d[rank - 2], cols = x->shape.d[rank - 1];
    int64_t mats = nn_dims_prod(&x->shape, 0, rank - 2);
    int64_t k = kt && n->ninputs > 1 && in[1] ? nn_load_int(in[1], kt->dtype, 0) : 0;
    k = clamp_k(k, rows, cols);
    size_t es = ffu_dtype_size(x->dtype);
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++) {
            /* kept columns [lo, hi): upper keeps j - i >= k, lower keeps j - i <= k */
            int64_t lo = upper ? i + k : 0, hi = upper ? cols : i + k + 1;
            lo = lo < 0 ? 0 : lo > cols ? cols : lo;
            hi = hi < lo ? lo : hi > cols ? cols : hi;
            int64_t row = (m * rows + i) * cols * (int64_t)es;
            const char *s = (const char *)in[0] + row;
            char *d = (char *)out[0] + row;
            if (hi > lo && d != s)
                memmove(d + lo * (int64_t)es, s + lo * (int64_t)es, (size_t)(hi - lo) * es);
            memset(d, 0, (size_t)lo * es);
            memset(d + hi * (int64_t)es, 0, (size_t)(cols - hi) * es);
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_trilu = {trilu_infer, trilu_run, NULL, 0};

/* ---- EyeLike(input): "dtype" (an ffu_dtype; default the input's) and "k" -------------------- */

static ffu_status eye_like_type(const nn_graph *g, const nn_node *n, ffu_dtype *dt)
{
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t t = nn_attr_int(n, "dtype", x->dtype);
    *dt = FFU_DTYPE_UNDEFINED;
    if (t <= FFU_DTYPE_UNDEFINED || t >= FFU_DTYPE_COUNT)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "output type %lld", (long long)t);
    *dt = (ffu_dtype)t;
    return FFU_OK;
}

static ffu_status eye_like_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    ffu_dtype dt;
    if ((st = eye_like_type(g, n, &dt)) < 0) return st;
    if (x->shape.rank >= 0 && x->shape.rank != 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input has rank %d (2)", x->shape.rank);
    return nn_set_out(g, n, 0, dt, x->shape.rank >= 0 ? &x->shape : NULL);
}

static ffu_status eye_like_run(const nn_graph *g, const nn_node *n, void *const *in,
                               void *const *out, void *scratch)
{
    (void)in, (void)scratch;
    const nn_tensor *o = nn_out(g, n, 0);
    int64_t rows = o->shape.d[0], cols = o->shape.d[1];
    int64_t k = clamp_k(nn_attr_int(n, "k", 0), rows, cols);
    memset(out[0], 0, (size_t)(rows * cols) * ffu_dtype_size(o->dtype));
    for (int64_t i = 0; i < rows; i++)
        if (i + k >= 0 && i + k < cols) nn_store_f64(out[0], o->dtype, i * cols + i + k, 1.0);
    return FFU_OK;
}

const nn_op_def nn_op_def_eye_like = {eye_like_infer, eye_like_run, NULL, 0};

/* ---- Det(X): [..., M, M] -> [...] ----------------------------------------------------------- */

static ffu_status det_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (x->dtype != FFU_DTYPE_F32 && x->dtype != FFU_DTYPE_F64 && x->dtype != FFU_DTYPE_F16)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    int r = x->shape.rank;
    if (r < 2 || (x->shape.d[r - 1] >= 0 && x->shape.d[r - 2] >= 0 &&
                  x->shape.d[r - 1] != x->shape.d[r - 2]))
        return nn_node_error(n, FFU_ERR_FORMAT, "input is not a stack of square matrices");
    if (x->shape.d[r - 1] > 4096)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%lldx%lld matrices",
                             (long long)x->shape.d[r - 1], (long long)x->shape.d[r - 1]);
    nn_shape s = x->shape;
    s.rank -= 2;
    return nn_set_out(g, n, 0, x->dtype, &s);
}

static size_t det_scratch(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t m = x && x->shape.rank >= 2 ? x->shape.d[x->shape.rank - 1] : 0;
    return m > 0 ? (size_t)(m * m) * sizeof(double) : 0;
}

/* Each matrix's determinant by Gaussian elimination with partial pivoting, in double:
 * the product of the pivots, negated per row swap. */
static ffu_status det_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t m = x->shape.d[x->shape.rank - 1], mats = nn_dims_prod(&x->shape, 0, x->shape.rank - 2);
    double *a = scratch;
    for (int64_t k = 0; k < mats; k++) {
        for (int64_t i = 0; i < m * m; i++)
            a[i] = nn_load_f64(in[0], x->dtype, k * m * m + i);
        double det = 1;
        for (int64_t c = 0; c < m && det != 0; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < m; r++)
                if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
            if (a[p * m + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[c * m + j];
                    a[c * m + j] = a[p * m + j], a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[c * m + c];
            for (int64_t r = c + 1; r < m; r++) {
                double f = a[r * m + c] / a[c * m + c];
                for (int64_t j = c; j < m; j++)
                    a[r * m + j] -= f * a[c * m + j];
            }
        }
        nn_store_f64(out[0], x->dtype, k, det);
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_det = {det_infer, det_run, det_scratch, 0};
