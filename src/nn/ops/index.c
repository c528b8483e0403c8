/* Ops addressed by index tensors: GatherND (with batch_dims), ScatterND and
 * ScatterElements (reduction none / add / mul / max / min), OneHot and ReverseSequence
 * (per-entry lengths). Data of any
 * element type moves by its size; reductions compute floats in double (one rounding
 * into the output type, as the type's own arithmetic would give) and integers in
 * wrapping 64-bit arithmetic.
 *
 * Indices come from files or from computations on input data, so every one is checked
 * before it is used: an index outside [-dim, dim) is FFU_ERR_FORMAT naming the node (as
 * Gather does), never a stray read or write. Negative indices count from the end, as
 * ONNX allows. OneHot is the exception the spec makes: an index outside [-depth, depth)
 * gives a row of off values. */
#include "ops_internal.h"

static ffu_status need_known(const nn_node *n, const nn_tensor *t, const char *what)
{
    if (t->shape.rank < 0) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%s rank is unknown", what);
    return FFU_OK;
}

static ffu_status index_type(const nn_node *n, const nn_tensor *t)
{
    if (t->dtype != FFU_DTYPE_I64 && t->dtype != FFU_DTYPE_I32)
        return nn_node_error(n, FFU_ERR_FORMAT, "indices are %s (i64 or i32)",
                             ffu_dtype_name(t->dtype));
    return FFU_OK;
}

/* Index k of a dim of size dim, wrapped when negative; FFU_ERR_FORMAT when outside. */
static ffu_status wrap_index(const nn_node *n, int64_t k, int64_t dim, int64_t *out)
{
    *out = 0;
    if (k < -dim || k >= dim)
        return nn_node_error(n, FFU_ERR_FORMAT, "index %lld is out of range [-%lld, %lld)",
                             (long long)k, (long long)dim, (long long)dim);
    *out = k < 0 ? k + dim : k;
    return FFU_OK;
}

/* ---- reductions of ScatterND / ScatterElements ------------------------------------------- */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static ffu_status reduction_of(const nn_node *n, int *red)
{
    const char *r = nn_attr_string(n, "reduction", "none");
    *red = RED_NONE;
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (strcmp(r, names[i]) == 0) {
            *red = i;
            return FFU_OK;
        }
    return nn_node_error(n, FFU_ERR_UNSUPPORTED, "reduction '%.40s'", r);
}

/* dst[di] = dst[di] (red) src[si] for cnt consecutive elements of type t. */
static void combine(void *dst, int64_t di, const void *src, int64_t si, int64_t cnt, ffu_dtype t,
                    int red)
{
    size_t es = ffu_dtype_size(t);
    if (red == RED_NONE) {
        memcpy((char *)dst + di * (int64_t)es, (const char *)src + si * (int64_t)es,
               (size_t)cnt * es);
        return;
    }
    for (int64_t k = 0; k < cnt; k++) {
        if (nn_dtype_is_float(t)) {
            double a = nn_load_f64(dst, t, di + k), b = nn_load_f64(src, t, si + k), r;
            switch (red) {
            case RED_ADD:
                r = a + b;
                break;
            case RED_MUL:
                r = a * b;
                break;
            case RED_MAX:
                r = a != a || a >= b ? a : b;
                break;
            default:
                r = a != a || a <= b ? a : b;
                break;
            }
            nn_store_f64(dst, t, di + k, r);
            continue;
        }
        uint64_t a = (uint64_t)nn_load_int(dst, t, di + k),
                 b = (uint64_t)nn_load_int(src, t, si + k);
        uint64_t r;
        int un = !nn_dtype_is_signed(t), less = un ? a < b : (int64_t)a < (int64_t)b;
        switch (red) {
        case RED_ADD:
            r = a + b;
            break;
        case RED_MUL:
            r = a * b;
            break;
        case RED_MAX:
            r = less ? b : a;
            break;
        default:
            r = less ? a : b;
            break;
        }
        nn_store_wrapped(dst, t, di + k, r);
    }
}

/* ---- GatherND(data, indices), batch_dims ---------------------------------------------------- */

/* The geometry shared by GatherND and ScatterND: b batch dims, k indexed dims, tuples
 * per batch item, elements per gathered slice. */
typedef struct nd_geom {
    int b, k;
    int64_t batch, tuples, slice;
} nd_geom;

static ffu_status nd_geom_init(const nn_node *n, const nn_tensor *x, const nn_tensor *idx, int b,
                               nd_geom *ng)
{
    int r = x->shape.rank, q = idx->shape.rank;
    if (r < 1 || q < 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "data rank %d and indices rank %d (at least 1)", r,
                             q);
    if (b < 0 || b >= q || b >= r)
        return nn_node_error(n, FFU_ERR_FORMAT, "batch_dims %d for ranks %d and %d", b, r, q);
    int64_t k = idx->shape.d[q - 1];
    if (k < 0) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "the last dim of indices is not known");
    if (k < 1 || k > r - b)
        return nn_node_error(n, FFU_ERR_FORMAT, "tuples of %lld indices into %d dims", (long long)k,
                             r - b);
    for (int i = 0; i < b; i++)
        if (x->shape.d[i] >= 0 && idx->shape.d[i] >= 0 && x->shape.d[i] != idx->shape.d[i])
            return nn_node_error(n, FFU_ERR_FORMAT, "batch dim %d is %lld in data, %lld in indices",
                                 i, (long long)x->shape.d[i], (long long)idx->shape.d[i]);
    ng->b = b;
    ng->k = (int)k;
    ng->batch = nn_dims_prod(&idx->shape, 0, b);
    ng->tuples = nn_dims_prod(&idx->shape, b, q - 1);
    ng->slice = nn_dims_prod(&x->shape, b + (int)k, r);
    return FFU_OK;
}

/* Element offset of tuple j of batch item bi inside data (rows of `slice`), checked. */
static ffu_status nd_offset(const nn_node *n, const nn_tensor *x, const nn_tensor *idx,
                            const void *ind, const nd_geom *ng, int64_t bi, int64_t j, int64_t *off)
{
    const int64_t *d = x->shape.d;
    int64_t o = bi;
    const int64_t base = (bi * ng->tuples + j) * ng->k;
    for (int m = 0; m < ng->k; m++) {
        int64_t v;
        ffu_status st = wrap_index(n, nn_load_int(ind, idx->dtype, base + m), d[ng->b + m], &v);
        if (st < 0) return st;
        o = o * d[ng->b + m] + v;
    }
    *off = o * ng->slice;
    return FFU_OK;
}

static ffu_status gather_nd_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    if ((st = need_known(n, x, "data")) < 0 || (st = need_known(n, idx, "indices")) < 0 ||
        (st = index_type(n, idx)) < 0)
        return st;
    int64_t b = nn_attr_int(n, "batch_dims", 0);
    if (b < 0 || b > FFU_NN_MAX_RANK)
        return nn_node_error(n, FFU_ERR_FORMAT, "batch_dims %lld", (long long)b);
    nd_geom ng;
    if ((st = nd_geom_init(n, x, idx, (int)b, &ng)) < 0) return st;
    int q = idx->shape.rank, r = x->shape.rank, orank = q - 1 + r - (int)b - ng.k;
    if (orank > FFU_NN_MAX_RANK)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "rank %d is too large", orank);
    nn_shape o = {.rank = orank};
    int j = 0;
    for (int i = 0; i < q - 1; i++)
        o.d[j++] = idx->shape.d[i];
    for (int i = (int)b + ng.k; i < r; i++)
        o.d[j++] = x->shape.d[i];
    return nn_set_out(g, n, 0, x->dtype, &o);
}

static ffu_status gather_nd_run(const nn_graph *g, const nn_node *n, void *const *in,
                                void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    nd_geom ng;
    ffu_status st = nd_geom_init(n, x, idx, (int)nn_attr_int(n, "batch_dims", 0), &ng);
    if (st < 0) return st;
    size_t es = ffu_dtype_size(x->dtype);
    int64_t row = ng.slice * (int64_t)es, o = 0;
    for (int64_t bi = 0; bi < ng.batch; bi++)
        for (int64_t j = 0; j < ng.tuples; j++, o++) {
            int64_t off;
            if ((st = nd_offset(n, x, idx, in[1], &ng, bi, j, &off)) < 0) return st;
            memcpy((char *)out[0] + o * row, (const char *)in[0] + off * (int64_t)es, (size_t)row);
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_gather_nd = {gather_nd_infer, gather_nd_run, NULL, 0};

/* ---- ScatterND(data, indices, updates), reduction ------------------------------------------- */

/* What ScatterND and ScatterElements ask alike of (data, indices, updates): known ranks,
 * integer indices, updates of the data's type, no reduction on bool data. */
static ffu_status scatter_check(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 3, 3);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1), *up = nn_in(g, n, 2);
    int red;
    if ((st = reduction_of(n, &red)) < 0) return st;
    if ((st = need_known(n, x, "data")) < 0 || (st = need_known(n, idx, "indices")) < 0 ||
        (st = need_known(n, up, "updates")) < 0 || (st = index_type(n, idx)) < 0)
        return st;
    if (up->dtype != x->dtype)
        return nn_node_error(n, FFU_ERR_FORMAT, "updates are %s, data %s",
                             ffu_dtype_name(up->dtype), ffu_dtype_name(x->dtype));
    if (red != RED_NONE && x->dtype == FFU_DTYPE_BOOL)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "a reduction on bool data");
    return FFU_OK;
}

static ffu_status scatter_nd_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = scatter_check(g, n);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1), *up = nn_in(g, n, 2);
    nd_geom ng;
    if ((st = nd_geom_init(n, x, idx, 0, &ng)) < 0) return st;
    /* updates: indices.shape[:-1] + data.shape[k:] */
    int q = idx->shape.rank, r = x->shape.rank, urank = q - 1 + r - ng.k;
    int bad = up->shape.rank != urank;
    for (int i = 0; !bad && i < urank; i++) {
        int64_t want = i < q - 1 ? idx->shape.d[i] : x->shape.d[ng.k + i - (q - 1)];
        bad = want >= 0 && up->shape.d[i] >= 0 && want != up->shape.d[i];
    }
    if (bad) {
        char a[64], b[64], c[64];
        return nn_node_error(n, FFU_ERR_FORMAT, "updates %s do not fit data %s and indices %s",
                             nn_shape_str(&up->shape, a, sizeof a),
                             nn_shape_str(&x->shape, b, sizeof b),
                             nn_shape_str(&idx->shape, c, sizeof c));
    }
    return nn_set_out(g, n, 0, x->dtype, &x->shape);
}

static ffu_status scatter_nd_run(const nn_graph *g, const nn_node *n, void *const *in,
                                 void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    nd_geom ng;
    int red;
    ffu_status st = nd_geom_init(n, x, idx, 0, &ng);
    if (st < 0 || (st = reduction_of(n, &red)) < 0) return st;
    /* every index first: an error leaves the output as a plain copy, never half done */
    for (int64_t j = 0; j < ng.tuples; j++) {
        int64_t off;
        if ((st = nd_offset(n, x, idx, in[1], &ng, 0, j, &off)) < 0) return st;
    }
    size_t bytes = (size_t)nn_numel(x) * ffu_dtype_size(x->dtype);
    if (out[0] != in[0] && bytes) memmove(out[0], in[0], bytes);
    for (int64_t j = 0; j < ng.tuples; j++) {
        int64_t off;
        nd_offset(n, x, idx, in[1], &ng, 0, j, &off);
        combine(out[0], off, in[2], j * ng.slice, ng.slice, x->dtype, red);
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_scatter_nd = {scatter_nd_infer, scatter_nd_run, NULL, 0};

/* ---- ScatterElements(data, indices, updates), axis, reduction ------------------------------- */

static ffu_status scatter_elements_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = scatter_check(g, n);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1), *up = nn_in(g, n, 2);
    int axis;
    if (x->shape.rank < 1 || idx->shape.rank != x->shape.rank || up->shape.rank != idx->shape.rank)
        return nn_node_error(n, FFU_ERR_FORMAT, "ranks %d (data), %d (indices), %d (updates)",
                             x->shape.rank, idx->shape.rank, up->shape.rank);
    if ((st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &axis)) < 0) return st;
    for (int i = 0; i < x->shape.rank; i++) {
        int64_t di = idx->shape.d[i], du = up->shape.d[i], dx = x->shape.d[i];
        if (di >= 0 && du >= 0 && di != du)
            return nn_node_error(n, FFU_ERR_FORMAT, "indices and updates differ in dim %d", i);
        if (i != axis && di >= 0 && dx >= 0 && di > dx)
            return nn_node_error(n, FFU_ERR_FORMAT, "indices exceed data in dim %d", i);
    }
    return nn_set_out(g, n, 0, x->dtype, &x->shape);
}

/* Checks every index (apply = 0), or applies every update to out (apply = 1). */
static ffu_status scatter_elements_walk(const nn_graph *g, const nn_node *n, void *const *in,
                                        void *const *out, int apply)
{
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    int rank = x->shape.rank, axis, red;
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), rank, &axis);
    if (st < 0 || (st = reduction_of(n, &red)) < 0) return st;
    int64_t xst[FFU_NN_MAX_RANK], pos[FFU_NN_MAX_RANK] = {0}, ni = nn_numel(idx);
    nn_strides(&x->shape, xst);
    for (int i = 0; i < rank; i++)
        if (i != axis && idx->shape.d[i] > x->shape.d[i])
            return nn_node_error(n, FFU_ERR_FORMAT, "indices exceed data in dim %d", i);
    for (int64_t j = 0; j < ni; j++) {
        int64_t k;
        st = wrap_index(n, nn_load_int(in[1], idx->dtype, j), x->shape.d[axis], &k);
        if (st < 0) return st;
        int64_t off = 0;
        for (int i = 0; i < rank; i++)
            off += (i == axis ? k : pos[i]) * xst[i];
        if (apply) combine(out[0], off, in[2], j, 1, x->dtype, red);
        for (int i = rank - 1; i >= 0; i--) {
            if (++pos[i] < idx->shape.d[i]) break;
            pos[i] = 0;
        }
    }
    return FFU_OK;
}

static ffu_status scatter_elements_run(const nn_graph *g, const nn_node *n, void *const *in,
                                       void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    ffu_status st = scatter_elements_walk(g, n, in, out, 0); /* check every index first */
    if (st < 0) return st;
    size_t bytes = (size_t)nn_numel(x) * ffu_dtype_size(x->dtype);
    if (out[0] != in[0] && bytes) memmove(out[0], in[0], bytes);
    return scatter_elements_walk(g, n, in, out, 1);
}

const nn_op_def nn_op_def_scatter_elements = {scatter_elements_infer, scatter_elements_run, NULL,
                                              0};

/* ---- OneHot(indices, depth, values), axis ---------------------------------------------------- */

/* depth from a one-element tensor of any numeric type (floats truncate, as ONNX says). */
static ffu_status one_hot_depth(const nn_node *n, const nn_tensor *t, const void *data,
                                int64_t *depth)
{
    if (nn_numel(t) != 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "depth has %lld values (one)",
                             (long long)nn_numel(t));
    if (!nn_dtype_is_float(t->dtype) && !nn_dtype_is_int(t->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "depth is %s", ffu_dtype_name(t->dtype));
    double v = nn_load_f64(data, t->dtype, 0);
    if (!(v >= 0)) return nn_node_error(n, FFU_ERR_FORMAT, "depth %g is negative or NaN", v);
    *depth = nn_f64_to_i64(v);
    return FFU_OK;
}

static ffu_status one_hot_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 3, 3);
    if (st < 0) return st;
    const nn_tensor *idx = nn_in(g, n, 0), *dep = nn_in(g, n, 1), *val = nn_in(g, n, 2);
    if ((st = need_known(n, idx, "indices")) < 0) return st;
    if (!nn_dtype_is_float(idx->dtype) && !nn_dtype_is_int(idx->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "indices are %s", ffu_dtype_name(idx->dtype));
    int64_t nv = nn_numel(val);
    if (nv >= 0 && nv != 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "values has %lld elements (2: off, on)",
                             (long long)nv);
    if (!ffu_dtype_size(val->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "values of type %s",
                             ffu_dtype_name(val->dtype));
    int orank = idx->shape.rank + 1, axis;
    if (orank > FFU_NN_MAX_RANK)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "rank %d is too large", orank);
    if ((st = nn_norm_axis(n, nn_attr_int(n, "axis", -1), orank, &axis)) < 0) return st;
    int64_t depth = -1;
    if (nn_is_const(dep) && (st = one_hot_depth(n, dep, dep->data, &depth)) < 0) return st;
    nn_shape o = {.rank = orank};
    for (int i = 0, j = 0; i < orank; i++)
        o.d[i] = i == axis ? depth : idx->shape.d[j++];
    /* nn_shape_numel is -1 for a product beyond int64 */
    int known = 1;
    for (int i = 0; i < orank; i++)
        known &= o.d[i] >= 0;
    int64_t numel = nn_shape_numel(&o);
    if (known && (numel < 0 || numel > INT64_MAX / (int64_t)ffu_dtype_size(val->dtype)))
        return nn_node_error(n, FFU_ERR_TOO_LARGE, "depth %lld makes the output too large",
                             (long long)depth);
    return nn_set_out(g, n, 0, val->dtype, &o);
}

static ffu_status one_hot_run(const nn_graph *g, const nn_node *n, void *const *in,
                              void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *idx = nn_in(g, n, 0), *o = nn_out(g, n, 0);
    int axis;
    int64_t depth;
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", -1), o->shape.rank, &axis);
    if (st < 0 || (st = one_hot_depth(n, nn_in(g, n, 1), in[1], &depth)) < 0) return st;
    if (depth != o->shape.d[axis])
        return nn_node_error(n, FFU_ERR_FORMAT, "depth %lld differs from the planned %lld",
                             (long long)depth, (long long)o->shape.d[axis]);
    size_t es = ffu_dtype_size(o->dtype);
    const char *off = in[2], *on = off + es;
    int64_t total = nn_numel(o);
    for (int64_t i = 0; i < total; i++)
        memcpy((char *)out[0] + i * (int64_t)es, off, es);
    int64_t outer = nn_dims_prod(&idx->shape, 0, axis);
    int64_t inner = nn_dims_prod(&idx->shape, axis, idx->shape.rank);
    int isf = nn_dtype_is_float(idx->dtype);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            int64_t j = a * inner + b;
            /* float indices truncate; NaN and values beyond int64 are simply out of range */
            double v = isf ? nn_load_f64(in[0], idx->dtype, j) : 0;
            if (v != v) continue;
            int64_t k = isf ? nn_f64_to_i64(v) : nn_load_int(in[0], idx->dtype, j);
            if (k < -depth || k >= depth) continue; /* the spec: all off values */
            if (k < 0) k += depth;
            memcpy((char *)out[0] + ((a * depth + k) * inner + b) * (int64_t)es, on, es);
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_one_hot = {one_hot_infer, one_hot_run, NULL, 0};

/* ---- ReverseSequence(input, sequence_lens): attributes batch_axis, time_axis ------------- */

/* For each batch entry b, the first sequence_lens[b] steps along the time axis come out
 * reversed, the rest as they were; a length outside [0, time steps] is FFU_ERR_FORMAT. */
static ffu_status reverse_sequence_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *lens = nn_in(g, n, 1);
    int64_t ba = nn_attr_int(n, "batch_axis", 1), ta = nn_attr_int(n, "time_axis", 0);
    if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
        return nn_node_error(n, FFU_ERR_FORMAT, "batch_axis %lld and time_axis %lld (0 and 1)",
                             (long long)ba, (long long)ta);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (!nn_dtype_is_int(lens->dtype) || (lens->shape.rank >= 0 && lens->shape.rank != 1))
        return nn_node_error(n, FFU_ERR_FORMAT, "sequence_lens must be a 1-D integer tensor");
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "input has rank %d (at least 2)", x->shape.rank);
    if (x->shape.rank >= 0 && lens->shape.rank == 1 && lens->shape.d[0] >= 0 &&
        x->shape.d[ba] >= 0 && lens->shape.d[0] != x->shape.d[ba])
        return nn_node_error(n, FFU_ERR_FORMAT, "%lld lengths for a batch of %lld",
                             (long long)lens->shape.d[0], (long long)x->shape.d[ba]);
    return nn_set_out(g, n, 0, x->dtype, x->shape.rank >= 0 ? &x->shape : NULL);
}

static ffu_status reverse_sequence_run(const nn_graph *g, const nn_node *n, void *const *in,
                                       void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *lens = nn_in(g, n, 1);
    int ba = nn_attr_int(n, "batch_axis", 1) == 1, ta = !ba;
    int64_t B = x->shape.d[ba], T = x->shape.d[ta];
    size_t row = (size_t)nn_dims_prod(&x->shape, 2, x->shape.rank) * ffu_dtype_size(x->dtype);
    for (int64_t b = 0; b < B; b++) {
        int64_t len = nn_load_int(in[1], lens->dtype, b);
        if (len < 0 || len > T)
            return nn_node_error(n, FFU_ERR_FORMAT,
                                 "sequence length %lld of entry %lld is "
                                 "outside 0..%lld",
                                 (long long)len, (long long)b, (long long)T);
        for (int64_t t = 0; t < T; t++) {
            int64_t from = t < len ? len - 1 - t : t;
            /* element (t, b) or (b, t) of the first two dims */
            size_t o = (size_t)(ta == 0 ? t * B + b : b * T + t) * row;
            size_t i = (size_t)(ta == 0 ? from * B + b : b * T + from) * row;
            memcpy((char *)out[0] + o, (const char *)in[0] + i, row);
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_reverse_sequence = {reverse_sequence_infer, reverse_sequence_run, NULL,
                                              0};
