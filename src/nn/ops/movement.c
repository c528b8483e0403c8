/* Data movement ops: Reshape, Flatten, Squeeze, Unsqueeze (views: the output is the
 * input's bytes with another shape), Transpose, Concat, Split, Slice, Gather,
 * GatherElements, Expand and Tile. They work on any element type by its size.
 *
 * Shape-as-data inputs (Reshape's shape, Slice's starts/ends, Squeeze's axes, ...)
 * are read in infer when constant; otherwise the dims they decide are left -1 (the
 * session folds constants before planning, so they are constant by then). */
#include "ops_internal.h"

/* Integer list from an optional input (index i) or, for graphs built without the
 * loader's upgrade, an attribute of the same name. Returns 1 when present and read,
 * 0 when absent, 2 when given by a non-constant input, < 0 on error. */
static int list_arg(const nn_graph *g, const nn_node *n, int i, const char *attr, int64_t *out,
                    int max, int *count)
{
    *count = 0;
    const nn_tensor *t = nn_in(g, n, i);
    if (t) {
        int r = nn_const_ints(n, t, out, max, count);
        return r < 0 ? r : r ? 1 : 2;
    }
    const int64_t *v = attr ? nn_attr_ints(n, attr, count) : NULL;
    if (!v) return 0;
    if (*count > max)
        return nn_node_error(n, FFU_ERR_FORMAT, "%s has %d values (at most %d)", attr, *count, max);
    memcpy(out, v, sizeof(int64_t) * (size_t)*count);
    return 1;
}

/* The view run: copies unless the planner made output and input share memory. */
static ffu_status view_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    size_t bytes = (size_t)nn_numel(x) * ffu_dtype_size(x->dtype);
    if (out[0] != in[0] && bytes) memmove(out[0], in[0], bytes);
    return FFU_OK;
}

static ffu_status need_rank(const nn_node *n, const nn_tensor *x)
{
    if (x->shape.rank < 0) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input rank is unknown");
    return FFU_OK;
}

/* ---- Reshape ---------------------------------------------------------------------------- */

int nn_reshape_rederive(const int64_t *s0, const int64_t *s, int r, const int64_t *t0, int q,
                        int64_t *t)
{
    int i = 0, j = 0;
    while (i < r || j < q) {
        if (i == r || j == q) { /* trailing 1s on one side only */
            if (i < r && (s0[i] != 1 || s[i] != 1)) return 0;
            if (j < q) {
                if (t0[j] != 1) return 0;
                t[j] = 1;
            }
            i += i < r, j += j < q;
            continue;
        }
        int a = i, c = j;
        if (s0[i] <= 0 || t0[j] <= 0) return 0;
        int64_t ps = s0[i], pt = t0[j];
        while (ps != pt) {
            if (ps < pt) {
                if (++i == r || s0[i] <= 0 || ps > INT64_MAX / s0[i]) return 0;
                ps *= s0[i];
            } else {
                if (++j == q || t0[j] <= 0 || pt > INT64_MAX / t0[j]) return 0;
                pt *= t0[j];
            }
        }
        int b = i++, d = j++; /* the block: source [a, b], target [c, d] */
        int changed = 0;
        int64_t pn = 1;
        for (int k = a; k <= b; k++) {
            if (s[k] <= 0 || pn > INT64_MAX / s[k]) return 0;
            changed |= s[k] != s0[k];
            pn *= s[k];
        }
        if (!changed) {
            for (int k = c; k <= d; k++)
                t[k] = t0[k];
        } else if (c == d) {
            t[c] = pn;
        } else {
            int64_t inner = 1;
            for (int k = c + 1; k <= d; k++)
                inner *= t0[k];
            if (a == b || s[b] != s0[b] || s0[b] % inner) return 0;
            t[c] = pn / inner;
            for (int k = c + 1; k <= d; k++)
                t[k] = t0[k];
        }
    }
    return 1;
}

/* A constant target that no longer fits the input (a session with free_dims planned
 * at another size): re-derived from the shapes noted at load, or 0. */
static int rederive_target(const nn_node *n, const nn_shape *x, const int64_t *v, int cnt,
                           nn_shape *o)
{
    int r, q;
    const int64_t *s0 = nn_attr_ints(n, "_declared_in", &r);
    const int64_t *t0 = nn_attr_ints(n, "_declared_out", &q);
    if (!s0 || !t0 || r != x->rank || q != cnt) return 0;
    for (int k = 0; k < q; k++)
        if (v[k] <= 0) return 0; /* -1 and 0 adapt by themselves */
    return nn_reshape_rederive(s0, x->d, r, t0, q, o->d);
}

static ffu_status reshape_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *sh = nn_in(g, n, 1);
    int allowzero = nn_attr_int(n, "allowzero", 0) != 0;
    if (sh->shape.rank > 1) return nn_node_error(n, FFU_ERR_FORMAT, "shape must be 1-D");
    int64_t v[FFU_NN_MAX_RANK];
    int cnt;
    int r = nn_const_ints(n, sh, v, FFU_NN_MAX_RANK, &cnt);
    if (r < 0) return r;
    nn_shape o = {.rank = -1};
    if (!r) {
        if (sh->shape.rank == 1 && sh->shape.d[0] >= 0 && sh->shape.d[0] <= FFU_NN_MAX_RANK) {
            o.rank = (int)sh->shape.d[0];
            for (int i = 0; i < o.rank; i++)
                o.d[i] = -1;
        }
        return nn_set_out(g, n, 0, x->dtype, &o);
    }
    o.rank = cnt;
    int infer_at = -1;
    int64_t known = 1;
    int unknown = 0;
    for (int i = 0; i < cnt; i++) {
        int64_t d = v[i];
        if (d == -1) {
            if (infer_at >= 0) return nn_node_error(n, FFU_ERR_FORMAT, "more than one -1");
            infer_at = i;
            continue;
        }
        if (d < -1) return nn_node_error(n, FFU_ERR_FORMAT, "dimension %lld", (long long)d);
        if (d == 0 && !allowzero) {
            if (x->shape.rank < 0) {
                unknown = 1;
                o.d[i] = -1;
                continue;
            }
            if (i >= x->shape.rank)
                return nn_node_error(n, FFU_ERR_FORMAT, "0 at %d copies a missing dim", i);
            d = x->shape.d[i];
            if (d < 0) {
                unknown = 1;
                o.d[i] = -1;
                continue;
            }
        }
        o.d[i] = d;
        if (d && known > INT64_MAX / d)
            return nn_node_error(n, FFU_ERR_FORMAT, "shape is too large");
        known *= d;
    }
    if (allowzero && infer_at >= 0 && known == 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "-1 with a 0 dim and allowzero");
    int64_t in_numel = nn_numel(x);
    if (infer_at >= 0) {
        if (in_numel < 0 || unknown)
            o.d[infer_at] = -1;
        else if (known == 0 || in_numel % known)
            return nn_node_error(n, FFU_ERR_FORMAT, "cannot reshape %lld elements",
                                 (long long)in_numel);
        else
            o.d[infer_at] = in_numel / known;
    } else if (in_numel >= 0 && !unknown && known != in_numel) {
        if (rederive_target(n, &x->shape, v, cnt, &o)) return nn_set_out(g, n, 0, x->dtype, &o);
        char a[64];
        return nn_node_error(n, FFU_ERR_FORMAT, "cannot reshape %s into %lld elements",
                             nn_shape_str(&x->shape, a, sizeof a), (long long)known);
    }
    return nn_set_out(g, n, 0, x->dtype, &o);
}

const nn_op_def nn_op_def_reshape = {reshape_infer, view_run, NULL, NN_OPF_VIEW};

/* ---- Flatten -------------------------------------------------------------------------- */

static ffu_status flatten_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if ((st = need_rank(n, x)) < 0) return st;
    int r = x->shape.rank, axis;
    int64_t a = nn_attr_int(n, "axis", 1);
    if (a < -r || a > r)
        return nn_node_error(n, FFU_ERR_FORMAT, "axis %lld for rank %d", (long long)a, r);
    axis = (int)(a < 0 ? a + r : a);
    nn_shape o = {.rank = 2, .d = {1, 1}};
    for (int i = 0; i < r; i++) {
        int j = i < axis ? 0 : 1;
        if (x->shape.d[i] < 0 || o.d[j] < 0)
            o.d[j] = -1;
        else
            o.d[j] *= x->shape.d[i];
    }
    return nn_set_out(g, n, 0, x->dtype, &o);
}

const nn_op_def nn_op_def_flatten = {flatten_infer, view_run, NULL, NN_OPF_VIEW};

/* ---- Squeeze / Unsqueeze -------------------------------------------------------------- */

static ffu_status squeeze_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t axes[FFU_NN_MAX_RANK];
    int cnt;
    int r = list_arg(g, n, 1, "axes", axes, FFU_NN_MAX_RANK, &cnt);
    if (r < 0) return r;
    if (r == 2 || x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    int rank = x->shape.rank;
    unsigned drop = 0;
    if (r == 1) {
        if ((st = nn_norm_axes(n, axes, cnt, rank)) < 0) return st;
        for (int i = 0; i < cnt; i++) {
            int64_t d = x->shape.d[axes[i]];
            if (d != 1 && d != -1)
                return nn_node_error(n, FFU_ERR_FORMAT, "dim %lld has size %lld, not 1",
                                     (long long)axes[i], (long long)d);
            drop |= 1u << axes[i];
        }
    } else {
        for (int i = 0; i < rank; i++) {
            if (x->shape.d[i] < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
            if (x->shape.d[i] == 1) drop |= 1u << i;
        }
    }
    nn_shape o = {.rank = 0};
    for (int i = 0; i < rank; i++)
        if (!(drop & (1u << i))) o.d[o.rank++] = x->shape.d[i];
    return nn_set_out(g, n, 0, x->dtype, &o);
}

const nn_op_def nn_op_def_squeeze = {squeeze_infer, view_run, NULL, NN_OPF_VIEW};

static ffu_status unsqueeze_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t axes[FFU_NN_MAX_RANK];
    int cnt;
    int r = list_arg(g, n, 1, "axes", axes, FFU_NN_MAX_RANK, &cnt);
    if (r < 0) return r;
    if (r == 0) return nn_node_error(n, FFU_ERR_FORMAT, "axes are missing");
    if (r == 2 || x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    int orank = x->shape.rank + cnt;
    if (orank > FFU_NN_MAX_RANK)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "rank %d is too large", orank);
    if ((st = nn_norm_axes(n, axes, cnt, orank)) < 0) return st;
    unsigned ins = 0;
    for (int i = 0; i < cnt; i++)
        ins |= 1u << axes[i];
    nn_shape o = {.rank = orank};
    for (int i = 0, j = 0; i < orank; i++)
        o.d[i] = (ins & (1u << i)) ? 1 : x->shape.d[j++];
    return nn_set_out(g, n, 0, x->dtype, &o);
}

const nn_op_def nn_op_def_unsqueeze = {unsqueeze_infer, view_run, NULL, NN_OPF_VIEW};

/* ---- Transpose ---------------------------------------------------------------------------- */

static ffu_status get_perm(const nn_node *n, int rank, int *perm)
{
    int cnt;
    const int64_t *p = nn_attr_ints(n, "perm", &cnt);
    if (!p) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return FFU_OK;
    }
    if (cnt != rank)
        return nn_node_error(n, FFU_ERR_FORMAT, "perm has %d values for rank %d", cnt, rank);
    unsigned seen = 0;
    for (int i = 0; i < rank; i++) {
        if (p[i] < 0 || p[i] >= rank || (seen & (1u << p[i])))
            return nn_node_error(n, FFU_ERR_FORMAT, "perm is not a permutation");
        seen |= 1u << p[i];
        perm[i] = (int)p[i];
    }
    return FFU_OK;
}

static ffu_status transpose_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if ((st = need_rank(n, x)) < 0) return st;
    int perm[FFU_NN_MAX_RANK];
    if ((st = get_perm(n, x->shape.rank, perm)) < 0) return st;
    nn_shape o = {.rank = x->shape.rank};
    for (int i = 0; i < o.rank; i++)
        o.d[i] = x->shape.d[perm[i]];
    return nn_set_out(g, n, 0, x->dtype, &o);
}

/* Batched 2-D transpose: in is [b][rows][cols], out [b][cols][rows], in 16x16 tiles
 * so both sides stay in cache (16 measured about twice as fast as 32 on NCHW->NHWC of
 * 64x160x160 f32). */
#define TRANSPOSE2D(T)                                                                             \
    do {                                                                                           \
        const T *s = in;                                                                           \
        T *o = out;                                                                                \
        for (int64_t bi = 0; bi < batch; bi++, s += rows * cols, o += rows * cols)                 \
            for (int64_t r0 = 0; r0 < rows; r0 += 16)                                              \
                for (int64_t c0 = 0; c0 < cols; c0 += 16) {                                        \
                    int64_t r1 = r0 + 16 < rows ? r0 + 16 : rows;                                  \
                    int64_t c1 = c0 + 16 < cols ? c0 + 16 : cols;                                  \
                    for (int64_t c = c0; c < c1; c++)                                              \
                        for (int64_t r = r0; r < r1; r++)                                          \
                            o[c * rows + r] = s[r * cols + c];                                     \
                }                                                                                  \
    } while (0)

static int transpose2d(void *out, const void *in, size_t es, int64_t batch, int64_t rows,
                       int64_t cols)
{
    switch (es) {
    case 1:
        TRANSPOSE2D(uint8_t);
        return 1;
    case 2:
        TRANSPOSE2D(uint16_t);
        return 1;
    case 4:
        TRANSPOSE2D(uint32_t);
        return 1;
    case 8:
        TRANSPOSE2D(uint64_t);
        return 1;
    default:
        return 0;
    }
}

/* Transposes by first simplifying the permutation: size-1 dims go, and input dims that
 * stay neighbours in the output merge. NCHW<->NHWC (0,2,3,1 and 0,3,1,2) become a
 * batched 2-D transpose; anything else is a strided copy. */
static ffu_status transpose_run(const nn_graph *g, const nn_node *n, void *const *in,
                                void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int rank = x->shape.rank, perm[FFU_NN_MAX_RANK];
    ffu_status st = get_perm(n, rank, perm);
    if (st < 0) return st;
    size_t es = ffu_dtype_size(x->dtype);
    int64_t total = nn_numel(x);
    if (total <= 0) return FFU_OK;
    /* drop size-1 input dims: renumber the remaining ones */
    int newid[FFU_NN_MAX_RANK], r = 0;
    int64_t d[FFU_NN_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        newid[i] = -1;
        if (x->shape.d[i] != 1) {
            newid[i] = r;
            d[r++] = x->shape.d[i];
        }
    }
    int p[FFU_NN_MAX_RANK], pr = 0;
    for (int i = 0; i < rank; i++)
        if (newid[perm[i]] >= 0) p[pr++] = newid[perm[i]];
    /* merge runs p[i], p[i]+1, ... into one dim (in both orders) */
    int64_t md[FFU_NN_MAX_RANK]; /* merged input dims, indexed by merged id */
    int group[FFU_NN_MAX_RANK];  /* input dim -> merged id */
    int mp[FFU_NN_MAX_RANK], m = 0;
    int starts[FFU_NN_MAX_RANK];
    for (int i = 0; i < pr; i++) {
        if (i > 0 && p[i] == p[i - 1] + 1) continue;
        starts[m++] = p[i];
    }
    /* merged ids in input order */
    int order[FFU_NN_MAX_RANK];
    for (int i = 0; i < m; i++)
        order[i] = starts[i];
    for (int i = 1; i < m; i++) /* insertion sort, m <= 8 */
        for (int j = i; j > 0 && order[j - 1] > order[j]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int k = 0; k < m; k++) {
        md[k] = 1;
        int end = k + 1 < m ? order[k + 1] : r;
        for (int i = order[k]; i < end; i++) {
            md[k] *= d[i];
            group[i] = k;
        }
    }
    for (int i = 0; i < m; i++)
        mp[i] = group[starts[i]];
    int identity = 1;
    for (int i = 0; i < m; i++)
        if (mp[i] != i) identity = 0;
    if (identity) {
        if (out[0] != in[0]) memmove(out[0], in[0], (size_t)total * es);
        return FFU_OK;
    }
    /* batched 2-D: leading dims in place, last two swapped */
    int batched = m >= 2 && mp[m - 1] == m - 2 && mp[m - 2] == m - 1;
    for (int i = 0; i < m - 2 && batched; i++)
        if (mp[i] != i) batched = 0;
    if (batched) {
        int64_t b = 1;
        for (int i = 0; i < m - 2; i++)
            b *= md[i];
        if (transpose2d(out[0], in[0], es, b, md[m - 2], md[m - 1])) return FFU_OK;
    }
    int64_t ist[FFU_NN_MAX_RANK], od[FFU_NN_MAX_RANK], ost[FFU_NN_MAX_RANK];
    nn_shape ms = {.rank = m};
    for (int i = 0; i < m; i++)
        ms.d[i] = md[i];
    nn_strides(&ms, ist);
    for (int i = 0; i < m; i++) {
        od[i] = md[mp[i]];
        ost[i] = ist[mp[i]];
    }
    nn_strided_copy(out[0], in[0], es, m, od, ost);
    return FFU_OK;
}

const nn_op_def nn_op_def_transpose = {transpose_infer, transpose_run, NULL, 0};

/* ---- Concat ------------------------------------------------------------------------------- */

static ffu_status concat_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1 << 20);
    if (st < 0) return st;
    const nn_tensor *x0 = nn_in(g, n, 0);
    for (int i = 0; i < n->ninputs; i++) {
        const nn_tensor *t = nn_in(g, n, i);
        if (!t) return nn_node_error(n, FFU_ERR_FORMAT, "input %d is missing", i);
        if (t->dtype != x0->dtype)
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d is %s, input 0 is %s", i,
                                 ffu_dtype_name(t->dtype), ffu_dtype_name(x0->dtype));
        if ((st = need_rank(n, t)) < 0) return st;
        if (t->shape.rank != x0->shape.rank)
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d has rank %d, input 0 %d", i,
                                 t->shape.rank, x0->shape.rank);
    }
    int rank = x0->shape.rank, axis;
    if (rank == 0) return nn_node_error(n, FFU_ERR_FORMAT, "cannot concatenate scalars");
    if ((st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), rank, &axis)) < 0) return st;
    nn_shape o = x0->shape;
    o.d[axis] = 0;
    for (int i = 0; i < n->ninputs; i++) {
        const nn_tensor *t = nn_in(g, n, i);
        for (int k = 0; k < rank; k++) {
            if (k == axis) continue;
            if (o.d[k] < 0)
                o.d[k] = t->shape.d[k];
            else if (t->shape.d[k] >= 0 && t->shape.d[k] != o.d[k])
                return nn_node_error(n, FFU_ERR_FORMAT, "input %d differs in dim %d", i, k);
        }
        if (o.d[axis] >= 0) o.d[axis] = t->shape.d[axis] < 0 ? -1 : o.d[axis] + t->shape.d[axis];
    }
    return nn_set_out(g, n, 0, x0->dtype, &o);
}

static ffu_status concat_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    (void)scratch;
    const nn_tensor *o = nn_out(g, n, 0);
    int rank = o->shape.rank, axis;
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), rank, &axis);
    if (st < 0) return st;
    size_t es = ffu_dtype_size(o->dtype);
    int64_t outer = nn_dims_prod(&o->shape, 0, axis);
    int64_t inner = nn_dims_prod(&o->shape, axis + 1, rank) * (int64_t)es;
    int64_t orow = o->shape.d[axis] * inner;
    int64_t off = 0;
    for (int i = 0; i < n->ninputs; i++) {
        int64_t row = nn_in(g, n, i)->shape.d[axis] * inner;
        if (row) {
            const char *s = in[i];
            char *dst = (char *)out[0] + off;
            for (int64_t k = 0; k < outer; k++)
                memcpy(dst + k * orow, s + k * row, (size_t)row);
        }
        off += row;
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_concat = {concat_infer, concat_run, NULL, 0};

/* ---- Split ------------------------------------------------------------------------------- */

/* Sizes of the parts along the axis: the split input (or attribute), else equal parts
 * (the last smaller when num_outputs does not divide the dim, as opset 18 says).
 * Returns 1 when known, 0 when they depend on unknown data or dims. */
static int split_sizes(const nn_graph *g, const nn_node *n, int axis, int64_t *sizes,
                       ffu_status *err)
{
    const nn_tensor *x = nn_in(g, n, 0);
    int cnt, nout = n->noutputs;
    *err = FFU_OK;
    int64_t *tmp = sizes;
    int r = list_arg(g, n, 1, "split", tmp, nout, &cnt);
    if (r < 0) {
        *err = r;
        return 0;
    }
    if (r == 2) return 0;
    int64_t dim = x->shape.d[axis];
    if (r == 1) {
        if (cnt != nout) {
            *err =
                nn_node_error(n, FFU_ERR_FORMAT, "split has %d values for %d outputs", cnt, nout);
            return 0;
        }
        int64_t sum = 0;
        for (int i = 0; i < cnt; i++) {
            if (sizes[i] < 0) {
                *err = nn_node_error(n, FFU_ERR_FORMAT, "negative split size");
                return 0;
            }
            sum += sizes[i];
        }
        if (dim >= 0 && sum != dim) {
            *err = nn_node_error(n, FFU_ERR_FORMAT, "split sizes add up to %lld, dim is %lld",
                                 (long long)sum, (long long)dim);
            return 0;
        }
        return 1;
    }
    if (dim < 0) return 0;
    int64_t part = (dim + nout - 1) / nout;
    for (int i = 0; i < nout; i++) {
        int64_t left = dim - part * i;
        sizes[i] = left < 0 ? 0 : left < part ? left : part;
    }
    return 1;
}

static ffu_status split_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if ((st = need_rank(n, x)) < 0) return st;
    int axis;
    if ((st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &axis)) < 0) return st;
    int64_t stack[16], *sizes = n->noutputs <= 16 ? stack : NULL;
    if (!sizes) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "more than 16 outputs");
    int known = split_sizes(g, n, axis, sizes, &st);
    if (st < 0) return st;
    for (int i = 0; i < n->noutputs; i++) {
        nn_shape o = x->shape;
        o.d[axis] = known ? sizes[i] : -1;
        if (nn_out(g, n, i) && (st = nn_set_out(g, n, i, x->dtype, &o)) < 0) return st;
    }
    return FFU_OK;
}

static ffu_status split_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int rank = x->shape.rank, axis;
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), rank, &axis);
    if (st < 0) return st;
    size_t es = ffu_dtype_size(x->dtype);
    int64_t outer = nn_dims_prod(&x->shape, 0, axis);
    int64_t inner = nn_dims_prod(&x->shape, axis + 1, rank) * (int64_t)es;
    int64_t irow = x->shape.d[axis] * inner, off = 0;
    for (int i = 0; i < n->noutputs; i++) {
        /* the planned output shapes carry the sizes */
        const nn_tensor *o = nn_out(g, n, i);
        int64_t part = o ? o->shape.d[axis] : 0;
        if (!o) {
            int64_t stack[16];
            if (n->noutputs <= 16 && split_sizes(g, n, axis, stack, &st)) part = stack[i];
            if (st < 0) return st;
        }
        int64_t row = part * inner;
        if (o && row) {
            char *dst = out[i];
            const char *s = (const char *)in[0] + off;
            for (int64_t k = 0; k < outer; k++)
                memcpy(dst + k * row, s + k * irow, (size_t)row);
        }
        off += row;
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_split = {split_infer, split_run, NULL, 0};

/* ---- Slice ---------------------------------------------------------------------------- */

/* Per-dim start and step of a slice; sizes go into the output shape. */
typedef struct slice_plan {
    int64_t start[FFU_NN_MAX_RANK], step[FFU_NN_MAX_RANK], size[FFU_NN_MAX_RANK];
} slice_plan;

enum { ARG_ABSENT = -100 };

/* Input i of Slice as an integer list: from data[i] at run time, from a constant in
 * infer. 1 = read, 0 = not constant yet, ARG_ABSENT, or a negative status. */
static int slice_arg(const nn_graph *g, const nn_node *n, int i, void *const *data, int64_t *buf,
                     int *cnt)
{
    const nn_tensor *t = nn_in(g, n, i);
    *cnt = 0;
    if (!t) return ARG_ABSENT;
    if (!data) return nn_const_ints(n, t, buf, FFU_NN_MAX_RANK, cnt);
    ffu_status st = nn_read_ints(n, data[i], t->dtype, nn_numel(t), buf, FFU_NN_MAX_RANK, cnt);
    return st < 0 ? st : 1;
}

/* Fills p for input shape xs (data: the run-time inputs, NULL in infer). Returns 1
 * when every size is known, 0 when some depend on inputs not constant yet (those
 * sizes are -1), < 0 on error. Clamping follows the ONNX spec: start and end are
 * clamped to [0, dim] for positive steps and [0, dim-1] / [-1, dim-1] for negative
 * ones, so INT64_MAX and INT64_MIN ends mean "to the end". */
static int slice_compute(const nn_graph *g, const nn_node *n, const nn_shape *xs, void *const *data,
                         slice_plan *p)
{
    int rank = xs->rank;
    for (int i = 0; i < rank; i++) {
        p->start[i] = 0;
        p->step[i] = 1;
        p->size[i] = xs->d[i];
    }
    int64_t starts[FFU_NN_MAX_RANK], ends[FFU_NN_MAX_RANK], axes[FFU_NN_MAX_RANK],
        steps[FFU_NN_MAX_RANK];
    int ns, ne, na, nst;
    int rs = slice_arg(g, n, 1, data, starts, &ns), re = slice_arg(g, n, 2, data, ends, &ne);
    int ra = slice_arg(g, n, 3, data, axes, &na), rp = slice_arg(g, n, 4, data, steps, &nst);
    if (rs < 0 && rs != ARG_ABSENT) return rs;
    if (re < 0 && re != ARG_ABSENT) return re;
    if (ra < 0 && ra != ARG_ABSENT) return ra;
    if (rp < 0 && rp != ARG_ABSENT) return rp;
    int known = rs == 1 && re == 1 && ra != 0 && rp != 0;
    if (ra == 0) { /* which axes change is unknown */
        for (int i = 0; i < rank; i++)
            p->size[i] = -1;
        return 0;
    }
    /* the number of sliced axes: from whichever list is known, else starts' shape */
    int count = rs == 1 ? ns : re == 1 ? ne : ra == 1 ? na : -1;
    if (count < 0) {
        const nn_tensor *ts = nn_in(g, n, 1);
        if (ts->shape.rank == 1 && ts->shape.d[0] >= 0 && ts->shape.d[0] <= rank)
            count = (int)ts->shape.d[0];
    }
    if (count < 0) {
        for (int i = 0; i < rank; i++)
            p->size[i] = -1;
        return 0;
    }
    if ((rs == 1 && ns != count) || (re == 1 && ne != count) || (ra == 1 && na != count) ||
        (rp == 1 && nst != count))
        return nn_node_error(n, FFU_ERR_FORMAT, "starts, ends, axes and steps differ in length");
    if (ra == 1) {
        int st = nn_norm_axes(n, axes, na, rank);
        if (st < 0) return st;
    } else {
        if (count > rank)
            return nn_node_error(n, FFU_ERR_FORMAT, "%d starts for rank %d", count, rank);
        for (int i = 0; i < count; i++)
            axes[i] = i;
    }
    for (int k = 0; k < count; k++) {
        int ax = (int)axes[k];
        int64_t dim = xs->d[ax];
        int64_t step = rp == 1 ? steps[k] : 1;
        if (step == 0) return nn_node_error(n, FFU_ERR_FORMAT, "step is 0");
        if (step == INT64_MIN) step = -INT64_MAX; /* same result, and -step stays defined */
        if (!known || dim < 0) {
            p->size[ax] = -1;
            known = 0;
            continue;
        }
        int64_t s = starts[k], e = ends[k];
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        /* (e - s) cannot overflow: both are clamped into [-1, dim] */
        int64_t size;
        if (step > 0)
            size = e > s ? (e - s - 1) / step + 1 : 0;
        else
            size = s > e ? (s - e - 1) / -step + 1 : 0;
        p->start[ax] = s;
        p->step[ax] = step;
        p->size[ax] = size;
    }
    return known;
}

static ffu_status slice_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 3, 5);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if ((st = need_rank(n, x)) < 0) return st;
    for (int i = 1; i < n->ninputs; i++) {
        const nn_tensor *t = nn_in(g, n, i);
        if (t && !nn_dtype_is_int(t->dtype))
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d is %s", i, ffu_dtype_name(t->dtype));
    }
    slice_plan p;
    int r = slice_compute(g, n, &x->shape, NULL, &p);
    if (r < 0) return r;
    nn_shape o = {.rank = x->shape.rank};
    for (int i = 0; i < o.rank; i++)
        o.d[i] = p.size[i];
    return nn_set_out(g, n, 0, x->dtype, &o);
}

static ffu_status slice_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *o = nn_out(g, n, 0);
    slice_plan p;
    int r = slice_compute(g, n, &x->shape, in, &p);
    if (r < 0) return r;
    int rank = x->shape.rank;
    for (int i = 0; i < rank; i++)
        if (p.size[i] != o->shape.d[i])
            return nn_node_error(n, FFU_ERR_FORMAT, "slice size %lld differs from planned %lld",
                                 (long long)p.size[i], (long long)o->shape.d[i]);
    size_t es = ffu_dtype_size(x->dtype);
    int64_t ist[FFU_NN_MAX_RANK], st[FFU_NN_MAX_RANK], off = 0;
    nn_strides(&x->shape, ist);
    for (int i = 0; i < rank; i++) {
        off += p.start[i] * ist[i];
        st[i] = p.step[i] * ist[i];
    }
    if (nn_numel(o) > 0)
        nn_strided_copy(out[0], (const char *)in[0] + off * (int64_t)es, es, rank, p.size, st);
    return FFU_OK;
}

const nn_op_def nn_op_def_slice = {slice_infer, slice_run, NULL, 0};

/* ---- Gather ------------------------------------------------------------------------------ */

static ffu_status gather_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    if ((st = need_rank(n, x)) < 0 || (st = need_rank(n, idx)) < 0) return st;
    if (idx->dtype != FFU_DTYPE_I64 && idx->dtype != FFU_DTYPE_I32)
        return nn_node_error(n, FFU_ERR_FORMAT, "indices are %s", ffu_dtype_name(idx->dtype));
    int axis;
    if ((st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &axis)) < 0) return st;
    int orank = x->shape.rank - 1 + idx->shape.rank;
    if (orank > FFU_NN_MAX_RANK)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "rank %d is too large", orank);
    nn_shape o = {.rank = orank};
    int k = 0;
    for (int i = 0; i < axis; i++)
        o.d[k++] = x->shape.d[i];
    for (int i = 0; i < idx->shape.rank; i++)
        o.d[k++] = idx->shape.d[i];
    for (int i = axis + 1; i < x->shape.rank; i++)
        o.d[k++] = x->shape.d[i];
    return nn_set_out(g, n, 0, x->dtype, &o);
}

static ffu_status gather_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    int axis;
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &axis);
    if (st < 0) return st;
    size_t es = ffu_dtype_size(x->dtype);
    int64_t outer = nn_dims_prod(&x->shape, 0, axis), dim = x->shape.d[axis];
    int64_t inner = nn_dims_prod(&x->shape, axis + 1, x->shape.rank) * (int64_t)es;
    int64_t ni = nn_numel(idx);
    const char *s = in[0];
    char *o = out[0];
    for (int64_t j = 0; j < ni; j++) {
        int64_t k = nn_load_int(in[1], idx->dtype, j);
        if (k < -dim || k >= dim)
            return nn_node_error(n, FFU_ERR_FORMAT, "index %lld is out of range [-%lld, %lld)",
                                 (long long)k, (long long)dim, (long long)dim);
    }
    for (int64_t b = 0; b < outer; b++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = nn_load_int(in[1], idx->dtype, j);
            if (k < 0) k += dim;
            memcpy(o + (b * ni + j) * inner, s + (b * dim + k) * inner, (size_t)inner);
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_gather = {gather_infer, gather_run, NULL, 0};

/* ---- GatherElements --------------------------------------------------------------------- */

static ffu_status gather_elements_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    if ((st = need_rank(n, x)) < 0 || (st = need_rank(n, idx)) < 0) return st;
    if (idx->dtype != FFU_DTYPE_I64 && idx->dtype != FFU_DTYPE_I32)
        return nn_node_error(n, FFU_ERR_FORMAT, "indices are %s", ffu_dtype_name(idx->dtype));
    if (idx->shape.rank != x->shape.rank || x->shape.rank == 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "indices rank %d, data rank %d", idx->shape.rank,
                             x->shape.rank);
    int axis;
    if ((st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &axis)) < 0) return st;
    return nn_set_out(g, n, 0, x->dtype, &idx->shape);
}

static ffu_status gather_elements_run(const nn_graph *g, const nn_node *n, void *const *in,
                                      void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *idx = nn_in(g, n, 1);
    int rank = x->shape.rank, axis;
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), rank, &axis);
    if (st < 0) return st;
    size_t es = ffu_dtype_size(x->dtype);
    int64_t xst[FFU_NN_MAX_RANK], pos[FFU_NN_MAX_RANK] = {0}, ni = nn_numel(idx);
    nn_strides(&x->shape, xst);
    int64_t dim = x->shape.d[axis];
    for (int i = 0; i < rank; i++)
        if (i != axis && idx->shape.d[i] > x->shape.d[i])
            return nn_node_error(n, FFU_ERR_FORMAT, "indices exceed data in dim %d", i);
    for (int64_t j = 0; j < ni; j++) {
        int64_t k = nn_load_int(in[1], idx->dtype, j);
        if (k < -dim || k >= dim)
            return nn_node_error(n, FFU_ERR_FORMAT, "index %lld is out of range", (long long)k);
        if (k < 0) k += dim;
        int64_t off = 0;
        for (int i = 0; i < rank; i++)
            off += (i == axis ? k : pos[i]) * xst[i];
        memcpy((char *)out[0] + j * (int64_t)es, (const char *)in[0] + off * (int64_t)es, es);
        for (int i = rank - 1; i >= 0; i--) {
            if (++pos[i] < idx->shape.d[i]) break;
            pos[i] = 0;
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_gather_elements = {gather_elements_infer, gather_elements_run, NULL, 0};

/* ---- Expand (bidirectional broadcast to a shape) ---------------------------------------- */

static ffu_status expand_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *sh = nn_in(g, n, 1);
    if (sh->shape.rank > 1) return nn_node_error(n, FFU_ERR_FORMAT, "shape must be 1-D");
    int64_t v[FFU_NN_MAX_RANK];
    int cnt;
    int r = nn_const_ints(n, sh, v, FFU_NN_MAX_RANK, &cnt);
    if (r < 0) return r;
    nn_shape o = {.rank = -1};
    if (!r) {
        if (sh->shape.rank == 1 && sh->shape.d[0] >= 0 && x->shape.rank >= 0) {
            int64_t len = sh->shape.d[0];
            o.rank = (int)(len > x->shape.rank ? len : x->shape.rank);
            if (o.rank > FFU_NN_MAX_RANK) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "rank");
            for (int i = 0; i < o.rank; i++)
                o.d[i] = -1;
        }
        return nn_set_out(g, n, 0, x->dtype, &o);
    }
    nn_shape target = {.rank = cnt};
    for (int i = 0; i < cnt; i++) {
        if (v[i] < 0) return nn_node_error(n, FFU_ERR_FORMAT, "negative dim in shape");
        target.d[i] = v[i];
    }
    if (nn_shape_broadcast(&x->shape, &target, &o) < 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "%s", ffu_error_message());
    return nn_set_out(g, n, 0, x->dtype, &o);
}

static void copy_elem_fn(void *out, const void *const *in, const int64_t *s, int64_t len,
                         const void *ctx)
{
    size_t es = *(const size_t *)ctx;
    nn_copy_row(out, in[0], es, len, s[0]);
}

static ffu_status expand_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *o = nn_out(g, n, 0);
    size_t es = ffu_dtype_size(x->dtype);
    const nn_shape *sh[1] = {&x->shape};
    nn_bcast bc;
    nn_bcast_init(&bc, &o->shape, sh, 1);
    const void *ins[1] = {in[0]};
    nn_bcast_run(&bc, out[0], es, ins, &es, copy_elem_fn, &es);
    return FFU_OK;
}

const nn_op_def nn_op_def_expand = {expand_infer, expand_run, NULL, 0};

/* ---- Tile -------------------------------------------------------------------------------- */

static ffu_status tile_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *rep = nn_in(g, n, 1);
    if ((st = need_rank(n, x)) < 0) return st;
    int64_t v[FFU_NN_MAX_RANK];
    int cnt;
    int r = nn_const_ints(n, rep, v, FFU_NN_MAX_RANK, &cnt);
    if (r < 0) return r;
    nn_shape o = x->shape;
    if (!r) {
        for (int i = 0; i < o.rank; i++)
            o.d[i] = -1;
        return nn_set_out(g, n, 0, x->dtype, &o);
    }
    if (cnt != x->shape.rank)
        return nn_node_error(n, FFU_ERR_FORMAT, "%d repeats for rank %d", cnt, x->shape.rank);
    for (int i = 0; i < cnt; i++) {
        if (v[i] < 0) return nn_node_error(n, FFU_ERR_FORMAT, "negative repeat");
        o.d[i] = o.d[i] < 0 ? -1 : o.d[i] * v[i];
    }
    return nn_set_out(g, n, 0, x->dtype, &o);
}

/* Writes the tile of input dim `dim` onwards: the input block repeated reps[dim]
 * times, each block built recursively; returns bytes written. */
static int64_t tile_rec(const nn_shape *xs, const int64_t *reps, int dim, const char *src,
                        char *dst, size_t es, const int64_t *ist)
{
    int64_t d = xs->d[dim];
    int64_t w = 0;
    if (dim == xs->rank - 1) {
        memcpy(dst, src, (size_t)d * es);
        w = d * (int64_t)es;
    } else {
        for (int64_t i = 0; i < d; i++)
            w += tile_rec(xs, reps, dim + 1, src + i * ist[dim] * (int64_t)es, dst + w, es, ist);
    }
    for (int64_t r = 1; r < reps[dim]; r++)
        memcpy(dst + r * w, dst, (size_t)w);
    return w * reps[dim];
}

static ffu_status tile_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *o = nn_out(g, n, 0);
    size_t es = ffu_dtype_size(x->dtype);
    if (nn_numel(o) <= 0) return FFU_OK;
    if (x->shape.rank == 0) {
        memcpy(out[0], in[0], es);
        return FFU_OK;
    }
    int64_t reps[FFU_NN_MAX_RANK], ist[FFU_NN_MAX_RANK];
    for (int i = 0; i < x->shape.rank; i++)
        reps[i] = o->shape.d[i] / x->shape.d[i];
    nn_strides(&x->shape, ist);
    tile_rec(&x->shape, reps, 0, in[0], out[0], es, ist);
    return FFU_OK;
}

const nn_op_def nn_op_def_tile = {tile_infer, tile_run, NULL, 0};
