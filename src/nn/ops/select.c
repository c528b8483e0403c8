/* Ops whose output size depends on the input values: NonZero, Compress,
 * NonMaxSuppression and Unique (ir.h NN_OPF_DATA_SHAPE). Their infer gives the exact shape when
 * the values that decide it are known at planning time (constant, not bounded), and an
 * upper bound otherwise, marking the outputs NN_T_BOUNDED: sessions then plan buffers
 * for the bound, run these nodes and everything downstream on ref, and take each run's
 * actual sizes from here: every kernel below writes its outputs' actual dims into the
 * graph (docs/NN.md "Sizes known at run time").
 *
 * NonMaxSuppression follows ONNX Runtime where the ONNX text leaves room: a box is a
 * candidate when its score is above score_threshold (strictly), it is suppressed when
 * its IoU with a kept box of its class is above iou_threshold (strictly), candidates
 * are visited by score, highest first, ties in box order; corners may come in either
 * order (center_point_box 0), a box of no area overlaps nothing and a NaN score is
 * never a candidate. */
#include <math.h>
#include <stdlib.h>

#include "ops_internal.h"

/* An input whose values are known now: constant and not a bound. */
static int value_known(const nn_tensor *t)
{
    return t && nn_is_const(t) && !(t->flags & NN_T_BOUNDED);
}

/* Output i with the given dtype and shape, bounded or exact. */
static ffu_status set_out_bounded(nn_graph *g, nn_node *n, int i, ffu_dtype dt, const nn_shape *s,
                                  int bounded)
{
    ffu_status st = nn_set_out(g, n, i, dt, s);
    nn_tensor *o = nn_out(g, n, i);
    if (st >= 0 && o) o->flags = bounded ? o->flags | NN_T_BOUNDED : o->flags & ~NN_T_BOUNDED;
    return st;
}

/* X as [outer][len][inner] around attribute axis; without one X flattened (axis -1). */
typedef struct axis_split {
    int64_t outer, len, inner;
    int axis;
} axis_split;

static ffu_status split_axis(const nn_node *n, const nn_tensor *x, axis_split *s)
{
    memset(s, 0, sizeof *s);
    s->axis = -1;
    if (x->shape.rank < 0) return FFU_OK;
    if (!nn_node_attr(n, "axis")) {
        s->outer = s->inner = 1;
        s->len = nn_numel(x);
        return FFU_OK;
    }
    ffu_status st = nn_norm_axis(n, nn_attr_int(n, "axis", 0), x->shape.rank, &s->axis);
    if (st < 0) return st;
    s->outer = nn_dims_prod(&x->shape, 0, s->axis);
    s->len = x->shape.d[s->axis];
    s->inner = nn_dims_prod(&x->shape, s->axis + 1, x->shape.rank);
    return FFU_OK;
}

/* X's shape with `kept` of its slices along the split's axis (flattened: [kept]). */
static nn_shape kept_shape(const nn_tensor *x, const axis_split *c, int64_t kept)
{
    nn_shape s = {.rank = 1, .d = {kept}};
    if (c->axis >= 0) {
        s = x->shape;
        s.d[c->axis] = kept;
    }
    return s;
}

/* ---- NonZero(X) -> [rank, count] i64 ----------------------------------------------------- */

static int64_t count_nonzero(const void *x, ffu_dtype t, int64_t numel)
{
    int64_t c = 0;
    for (int64_t i = 0; i < numel; i++)
        c += nn_load_f64(x, t, i) != 0.0;
    return c;
}

static ffu_status nonzero_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!nn_dtype_is_float(x->dtype) && !nn_dtype_is_int(x->dtype) && x->dtype != FFU_DTYPE_BOOL)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank < 0) return set_out_bounded(g, n, 0, FFU_DTYPE_I64, NULL, 1);
    int64_t numel = nn_numel(x);
    int known = value_known(x) && numel >= 0;
    /* a scalar is read as one element of rank 1, as numpy does */
    nn_shape s = {.rank = 2, .d = {x->shape.rank ? x->shape.rank : 1, numel}};
    if (known) s.d[1] = count_nonzero(x->data, x->dtype, numel);
    return set_out_bounded(g, n, 0, FFU_DTYPE_I64, &s, !known);
}

static ffu_status nonzero_run(const nn_graph *g, const nn_node *n, void *const *in,
                              void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    nn_tensor *y = nn_out(g, n, 0);
    int rank = x->shape.rank;
    int64_t numel = nn_numel(x), count = count_nonzero(in[0], x->dtype, numel);
    int64_t *o = out[0], idx[FFU_NN_MAX_RANK] = {0}, k = 0;
    for (int64_t i = 0; i < numel; i++) {
        if (nn_load_f64(in[0], x->dtype, i) != 0.0) {
            for (int d = 0; d < rank; d++)
                o[d * count + k] = idx[d];
            if (!rank) o[k] = 0;
            k++;
        }
        for (int d = rank - 1; d >= 0 && ++idx[d] == x->shape.d[d]; d--)
            idx[d] = 0;
    }
    y->shape.rank = 2;
    y->shape.d[0] = rank ? rank : 1;
    y->shape.d[1] = count;
    return FFU_OK;
}

const nn_op_def nn_op_def_non_zero = {nonzero_infer, nonzero_run, NULL, NN_OPF_DATA_SHAPE};

/* ---- Compress(input, condition), attribute axis (absent: the input flattened) ----------- */

/* The input split around the axis, and how many condition values are used: the
 * condition's length, which may be short of the axis but not beyond it. */
static ffu_status compress_geom(const nn_graph *g, const nn_node *n, axis_split *c, int64_t *conds)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *cond = nn_in(g, n, 1);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (cond->shape.rank >= 0 && cond->shape.rank != 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "condition has rank %d (1)", cond->shape.rank);
    if (!nn_dtype_is_int(cond->dtype) && cond->dtype != FFU_DTYPE_BOOL &&
        !nn_dtype_is_float(cond->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "condition is %s", ffu_dtype_name(cond->dtype));
    if ((st = split_axis(n, x, c)) < 0) return st;
    int64_t nc = cond->shape.rank == 1 ? cond->shape.d[0] : -1;
    if (nc >= 0 && c->len >= 0 && nc > c->len)
        return nn_node_error(n, FFU_ERR_FORMAT, "condition has %lld values for %lld slices",
                             (long long)nc, (long long)c->len);
    *conds = nc < 0 ? c->len : nc;
    return FFU_OK;
}

static ffu_status compress_infer(nn_graph *g, nn_node *n)
{
    axis_split c;
    int64_t conds;
    ffu_status st = compress_geom(g, n, &c, &conds);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *cond = nn_in(g, n, 1);
    if (x->shape.rank < 0) return set_out_bounded(g, n, 0, x->dtype, NULL, 1);
    int known = value_known(cond) && conds >= 0;
    nn_shape s = kept_shape(x, &c, known ? count_nonzero(cond->data, cond->dtype, conds) : conds);
    return set_out_bounded(g, n, 0, x->dtype, &s, !known);
}

static ffu_status compress_run(const nn_graph *g, const nn_node *n, void *const *in,
                               void *const *out, void *scratch)
{
    (void)scratch;
    axis_split c;
    int64_t conds;
    ffu_status st = compress_geom(g, n, &c, &conds);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *cond = nn_in(g, n, 1);
    size_t es = ffu_dtype_size(x->dtype), row = (size_t)c.inner * es;
    int64_t kept = count_nonzero(in[1], cond->dtype, conds);
    char *o = out[0];
    for (int64_t a = 0; a < c.outer; a++)
        for (int64_t i = 0; i < conds; i++)
            if (nn_load_f64(in[1], cond->dtype, i) != 0.0) {
                memcpy(o, (const char *)in[0] + ((size_t)(a * c.len + i)) * row, row);
                o += row;
            }
    nn_out(g, n, 0)->shape = kept_shape(x, &c, kept);
    return FFU_OK;
}

const nn_op_def nn_op_def_compress = {compress_infer, compress_run, NULL, NN_OPF_DATA_SHAPE};

/* ---- NonMaxSuppression(boxes, scores, max_output_boxes_per_class?, iou_threshold?,
 *      score_threshold?) -> selected_indices [count, 3] i64 --------------------------------- */

typedef struct nms_geom {
    int64_t batches, classes, boxes;
    int64_t per_class; /* selections per batch and class at most (the bound when not known) */
} nms_geom;

static ffu_status nms_geom_init(const nn_graph *g, const nn_node *n, nms_geom *m)
{
    ffu_status st = nn_check_inputs(g, n, 2, 5);
    if (st < 0) return st;
    const nn_tensor *b = nn_in(g, n, 0), *s = nn_in(g, n, 1), *mx = nn_in(g, n, 2);
    if (b->dtype != FFU_DTYPE_F32 || s->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "boxes and scores must be f32");
    for (int i = 3; i < 5; i++) {
        const nn_tensor *t = nn_in(g, n, i);
        if (t && (t->dtype != FFU_DTYPE_F32 || nn_numel(t) > 1))
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d is not one f32 value", i);
    }
    if (mx && (!nn_dtype_is_int(mx->dtype) || nn_numel(mx) > 1))
        return nn_node_error(n, FFU_ERR_FORMAT, "max_output_boxes_per_class is not one integer");
    int64_t cpb = nn_attr_int(n, "center_point_box", 0);
    if (cpb != 0 && cpb != 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "center_point_box %lld (0 or 1)", (long long)cpb);
    memset(m, 0, sizeof *m);
    if (b->shape.rank < 0 || s->shape.rank < 0) return FFU_OK;
    if (b->shape.rank != 3 || b->shape.d[2] != 4 || s->shape.rank != 3)
        return nn_node_error(n, FFU_ERR_FORMAT,
                             "boxes must be [batches, boxes, 4] and scores "
                             "[batches, classes, boxes]");
    m->batches = b->shape.d[0], m->boxes = b->shape.d[1], m->classes = s->shape.d[1];
    if ((s->shape.d[0] >= 0 && m->batches >= 0 && s->shape.d[0] != m->batches) ||
        (s->shape.d[2] >= 0 && m->boxes >= 0 && s->shape.d[2] != m->boxes))
        return nn_node_error(n, FFU_ERR_FORMAT, "scores and boxes disagree on batches or boxes");
    /* the limit: absent means none selected; unknown now means the box count */
    m->per_class = m->boxes;
    if (!mx || nn_numel(mx) == 0)
        m->per_class = 0;
    else if (value_known(mx)) {
        int64_t v = nn_load_int(mx->data, mx->dtype, 0);
        m->per_class = v < 0 ? 0 : v < m->per_class ? v : m->per_class;
    }
    return FFU_OK;
}

static ffu_status nms_infer(nn_graph *g, nn_node *n)
{
    nms_geom m;
    ffu_status st = nms_geom_init(g, n, &m);
    if (st < 0) return st;
    if (nn_in(g, n, 0)->shape.rank < 0 || nn_in(g, n, 1)->shape.rank < 0)
        return set_out_bounded(g, n, 0, FFU_DTYPE_I64, NULL, 1);
    int64_t cap = -1;
    if (m.batches >= 0 && m.classes >= 0 && m.boxes >= 0) {
        if ((double)m.batches * (double)m.classes * (double)m.per_class > 0x1p40)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%lld x %lld x %lld selections",
                                 (long long)m.batches, (long long)m.classes,
                                 (long long)m.per_class);
        cap = m.batches * m.classes * m.per_class;
    }
    nn_shape s = {.rank = 2, .d = {cap, 3}};
    /* the count needs the selection itself: known only once it ran (folding clears the
     * bound, passes.c) */
    return set_out_bounded(g, n, 0, FFU_DTYPE_I64, &s, 1);
}

typedef struct nms_box {
    float y0, x0, y1, x1, area;
} nms_box;

static nms_box nms_corners(const float *b, int center)
{
    nms_box r;
    if (center) {
        r.x0 = b[0] - b[2] / 2, r.x1 = b[0] + b[2] / 2;
        r.y0 = b[1] - b[3] / 2, r.y1 = b[1] + b[3] / 2;
    } else {
        r.y0 = fminf(b[0], b[2]), r.y1 = fmaxf(b[0], b[2]);
        r.x0 = fminf(b[1], b[3]), r.x1 = fmaxf(b[1], b[3]);
    }
    r.area = (r.x1 - r.x0) * (r.y1 - r.y0);
    return r;
}

static float nms_iou(const nms_box *a, const nms_box *b)
{
    float w = fminf(a->x1, b->x1) - fmaxf(a->x0, b->x0);
    float h = fminf(a->y1, b->y1) - fmaxf(a->y0, b->y0);
    if (!(w > 0) || !(h > 0) || !(a->area > 0) || !(b->area > 0)) return 0;
    float inter = w * h, uni = a->area + b->area - inter;
    return uni > 0 ? inter / uni : 0;
}

/* Candidates come out of a heap, best first: the higher score, then the lower box
 * index. A heap rather than a sort: once the limit is reached the rest is never
 * ordered (4420 boxes to 200: 1.05x ONNX Runtime's time sorted, 0.50x from the heap;
 * docs/BENCHMARKS.md "Ops beyond the face models"). */
typedef struct nms_cand {
    float score;
    int64_t box;
} nms_cand;

static int nms_better(const nms_cand *a, const nms_cand *b)
{
    return a->score > b->score || (a->score == b->score && a->box < b->box);
}

static void nms_sift(nms_cand *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t best = i, l = 2 * i + 1, r = l + 1;
        if (l < n && nms_better(&h[l], &h[best])) best = l;
        if (r < n && nms_better(&h[r], &h[best])) best = r;
        if (best == i) return;
        nms_cand t = h[i];
        h[i] = h[best], h[best] = t;
        i = best;
    }
}

static size_t nms_scratch(const nn_graph *g, const nn_node *n)
{
    nms_geom m;
    if (nms_geom_init(g, n, &m) < 0 || m.boxes < 0) {
        ffu_error_clear();
        return 0;
    }
    /* candidates, then the boxes kept so far */
    return (size_t)m.boxes * (sizeof(nms_cand) + sizeof(nms_box));
}

static ffu_status nms_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    nms_geom m;
    ffu_status st = nms_geom_init(g, n, &m);
    if (st < 0) return st;
    const float *boxes = in[0], *scores = in[1];
    float iou_max = n->ninputs > 3 && in[3] && nn_numel(nn_in(g, n, 3)) ? *(const float *)in[3] : 0;
    int has_min = n->ninputs > 4 && in[4] && nn_numel(nn_in(g, n, 4));
    float score_min = has_min ? *(const float *)in[4] : 0;
    int center = nn_attr_int(n, "center_point_box", 0) == 1;
    /* this run's limit (the geometry's is the bound when the value was not known) */
    const nn_tensor *mx = nn_in(g, n, 2);
    int64_t limit = mx && in[2] && nn_numel(mx) ? nn_load_int(in[2], mx->dtype, 0) : 0;
    limit = limit < 0 ? 0 : limit > m.per_class ? m.per_class : limit;
    nms_cand *cand = scratch;
    nms_box *kept = (nms_box *)(cand + m.boxes);
    int64_t *o = out[0], count = 0;
    for (int64_t b = 0; b < m.batches; b++)
        for (int64_t c = 0; c < m.classes && limit > 0; c++) {
            const float *sc = scores + (b * m.classes + c) * m.boxes;
            int64_t nc = 0, nk = 0;
            for (int64_t i = 0; i < m.boxes; i++) /* a NaN score is never a candidate */
                if (sc[i] == sc[i] && (!has_min || sc[i] > score_min))
                    cand[nc++] = (nms_cand){sc[i], i};
            for (int64_t i = nc / 2 - 1; i >= 0; i--)
                nms_sift(cand, nc, i);
            while (nc > 0 && nk < limit) {
                int64_t box = cand[0].box;
                cand[0] = cand[--nc];
                nms_sift(cand, nc, 0);
                nms_box x = nms_corners(boxes + (b * m.boxes + box) * 4, center);
                int keep = 1;
                for (int64_t k = 0; k < nk && keep; k++)
                    keep = !(nms_iou(&x, &kept[k]) > iou_max);
                if (!keep) continue;
                kept[nk++] = x;
                o[count * 3] = b, o[count * 3 + 1] = c, o[count * 3 + 2] = box;
                count++;
            }
        }
    nn_tensor *y = nn_out(g, n, 0);
    y->shape.rank = 2;
    y->shape.d[0] = count;
    y->shape.d[1] = 3;
    return FFU_OK;
}

const nn_op_def nn_op_def_non_max_suppression = {nms_infer, nms_run, nms_scratch,
                                                 NN_OPF_DATA_SHAPE};

/* ---- Unique(X), attributes axis (absent: X flattened) and sorted -> Y, indices,
 *      inverse_indices, counts ------------------------------------------------------------ */

/* The slices of X along the axis (axis_split; all of X's elements without one) are what
 * is made unique, compared element by element (outer first, then inner), numerically;
 * NaN sorts above every number and equals NaN. */
static ffu_status unique_geom(const nn_graph *g, const nn_node *n, axis_split *u)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!nn_dtype_is_float(x->dtype) && !nn_dtype_is_int(x->dtype) && x->dtype != FFU_DTYPE_BOOL)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (n->noutputs > 4)
        return nn_node_error(n, FFU_ERR_FORMAT, "has %d outputs (1..4)", n->noutputs);
    return split_axis(n, x, u);
}

/* Output shapes for `count` unique slices. */
static void unique_shapes(const nn_tensor *x, const axis_split *u, int64_t count, nn_shape *s)
{
    s[0] = kept_shape(x, u, count);
    s[1] = s[3] = (nn_shape){.rank = 1, .d = {count}};
    s[2] = (nn_shape){.rank = 1, .d = {u->len}};
}

static ffu_status unique_infer(nn_graph *g, nn_node *n)
{
    axis_split u;
    ffu_status st = unique_geom(g, n, &u);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    nn_shape s[4];
    unique_shapes(x, &u, u.len, s);
    /* the count needs the work itself: bounded until folded (passes.c) */
    for (int i = 0; i < n->noutputs && st >= 0; i++)
        if (nn_out(g, n, i))
            st = set_out_bounded(g, n, i, i ? FFU_DTYPE_I64 : x->dtype,
                                 x->shape.rank < 0 ? NULL : &s[i], i != 2);
    return st;
}

typedef struct unique_ctx {
    const void *x;
    ffu_dtype t;
    axis_split u;
} unique_ctx;

/* -1, 0, 1: slice a against slice b */
static int slice_cmp(const unique_ctx *c, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < c->u.outer; o++)
        for (int64_t j = 0; j < c->u.inner; j++) {
            double p = nn_load_f64(c->x, c->t, (o * c->u.len + a) * c->u.inner + j);
            double q = nn_load_f64(c->x, c->t, (o * c->u.len + b) * c->u.inner + j);
            int pn = p != p, qn = q != q;
            if (pn || qn) {
                if (pn != qn) return pn ? 1 : -1;
                continue;
            }
            if (p != q) return p < q ? -1 : 1;
        }
    return 0;
}

/* Stable merge sort of idx[0..n) by slice, ties by index (tmp: n more). */
static void sort_slices(const unique_ctx *c, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = slice_cmp(c, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, sizeof *idx * (size_t)n);
    }
}

static size_t unique_scratch(const nn_graph *g, const nn_node *n)
{
    axis_split u;
    if (unique_geom(g, n, &u) < 0 || u.len < 0) {
        ffu_error_clear();
        return 0;
    }
    return (size_t)u.len * 4 * sizeof(int64_t);
}

static ffu_status unique_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    axis_split u;
    ffu_status st = unique_geom(g, n, &u);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    unique_ctx c = {in[0], x->dtype, u};
    int64_t L = u.len, *order = scratch, *tmp = order + L, *first = tmp + L, *group = first + L;
    for (int64_t i = 0; i < L; i++)
        order[i] = i;
    sort_slices(&c, order, tmp, L);
    /* groups of equal slices, in sorted order: first[g] its smallest index */
    int64_t U = 0;
    for (int64_t i = 0; i < L; i++) {
        if (i == 0 || slice_cmp(&c, order[i - 1], order[i]) != 0) first[U++] = order[i];
        group[order[i]] = U - 1;
    }
    /* order[k]: the group at output place k (unsorted: by first occurrence); tmp maps a
     * group to its place */
    if (nn_attr_int(n, "sorted", 1) == 0) {
        /* first indices are distinct: one pass over the slices orders the groups */
        for (int64_t i = 0; i < L; i++)
            tmp[i] = -1;
        for (int64_t k = 0; k < U; k++)
            tmp[first[k]] = k;
        for (int64_t i = 0, k = 0; i < L; i++)
            if (tmp[i] >= 0) order[k++] = tmp[i];
        for (int64_t k = 0; k < U; k++)
            tmp[order[k]] = k;
    } else {
        for (int64_t k = 0; k < U; k++)
            order[k] = k, tmp[k] = k;
    }
    size_t es = ffu_dtype_size(x->dtype), row = (size_t)u.inner * es;
    int64_t *idx = n->noutputs > 1 ? out[1] : NULL, *inv = n->noutputs > 2 ? out[2] : NULL;
    int64_t *cnt = n->noutputs > 3 ? out[3] : NULL;
    for (int64_t k = 0; k < U; k++) {
        int64_t r = first[order[k]];
        for (int64_t o = 0; o < u.outer; o++)
            memcpy((char *)out[0] + (size_t)(o * U + k) * row,
                   (const char *)in[0] + (size_t)(o * L + r) * row, row);
        if (idx) idx[k] = r;
        if (cnt) cnt[k] = 0;
    }
    for (int64_t i = 0; i < L; i++) {
        if (inv) inv[i] = tmp[group[i]];
        if (cnt) cnt[tmp[group[i]]]++;
    }
    nn_shape s[4];
    unique_shapes(x, &u, U, s);
    for (int i = 0; i < n->noutputs; i++)
        if (nn_out(g, n, i)) nn_out(g, n, i)->shape = s[i];
    return FFU_OK;
}

const nn_op_def nn_op_def_unique = {unique_infer, unique_run, unique_scratch, NN_OPF_DATA_SHAPE};
