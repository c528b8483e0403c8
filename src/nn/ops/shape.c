/* Graph plumbing ops: Constant, Identity, Shape, Size, ConstantOfShape and Range.
 * Shape and Size read only the input's shape, never its data, so the session can fold
 * them as soon as shapes are known; with Gather / Concat / Unsqueeze / Slice / Cast on
 * small i64 tensors they make up the shape-computation chains that constant folding
 * removes before planning. */
#include <math.h>

#include "ops_internal.h"

/* ---- Constant --------------------------------------------------------------------------- */

/* The loader turns Constant nodes into constant tensors; this definition exists so a
 * graph built by hand (or a future loader) still runs. "value" is a graph tensor;
 * value_float(s) / value_int(s) are the scalar and list forms. */
static ffu_status constant_infer(nn_graph *g, nn_node *n)
{
    const nn_attr *a;
    nn_shape s = {.rank = 0};
    if ((a = nn_node_attr(n, "value")) && a->type == NN_ATTR_TENSOR) {
        if (a->tensor < 0 || a->tensor >= g->ntensors || !nn_is_const(&g->tensors[a->tensor]))
            return nn_node_error(n, FFU_ERR_FORMAT, "value is not a constant tensor");
        const nn_tensor *t = &g->tensors[a->tensor];
        return nn_set_out(g, n, 0, t->dtype, &t->shape);
    }
    if ((a = nn_node_attr(n, "value_float")) && a->type == NN_ATTR_FLOAT)
        return nn_set_out(g, n, 0, FFU_DTYPE_F32, &s);
    if ((a = nn_node_attr(n, "value_int")) && a->type == NN_ATTR_INT)
        return nn_set_out(g, n, 0, FFU_DTYPE_I64, &s);
    if ((a = nn_node_attr(n, "value_floats")) && a->type == NN_ATTR_FLOATS) {
        s.rank = 1;
        s.d[0] = a->n;
        return nn_set_out(g, n, 0, FFU_DTYPE_F32, &s);
    }
    if ((a = nn_node_attr(n, "value_ints")) && a->type == NN_ATTR_INTS) {
        s.rank = 1;
        s.d[0] = a->n;
        return nn_set_out(g, n, 0, FFU_DTYPE_I64, &s);
    }
    return nn_node_error(n, FFU_ERR_UNSUPPORTED, "no supported value attribute");
}

static ffu_status constant_run(const nn_graph *g, const nn_node *n, void *const *in,
                               void *const *out, void *scratch)
{
    (void)in, (void)scratch;
    const nn_attr *a;
    if ((a = nn_node_attr(n, "value")) && a->type == NN_ATTR_TENSOR) {
        const nn_tensor *t = &g->tensors[a->tensor];
        if (t->nbytes) memcpy(out[0], t->data, t->nbytes);
    } else if ((a = nn_node_attr(n, "value_float")) && a->type == NN_ATTR_FLOAT) {
        *(float *)out[0] = a->f;
    } else if ((a = nn_node_attr(n, "value_int")) && a->type == NN_ATTR_INT) {
        *(int64_t *)out[0] = a->i;
    } else if ((a = nn_node_attr(n, "value_floats")) && a->type == NN_ATTR_FLOATS) {
        if (a->n) memcpy(out[0], a->floats, sizeof(float) * (size_t)a->n);
    } else if ((a = nn_node_attr(n, "value_ints")) && a->type == NN_ATTR_INTS) {
        if (a->n) memcpy(out[0], a->ints, sizeof(int64_t) * (size_t)a->n);
    } else {
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "no supported value attribute");
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_constant = {constant_infer, constant_run, NULL, 0};

/* ---- Identity ------------------------------------------------------------------------- */

static ffu_status identity_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    return nn_set_out(g, n, 0, x->dtype, &x->shape);
}

/* Copies input 0 to output 0 unless the planner made them share memory. Shared by the
 * views (Identity, Reshape, Flatten, Squeeze, Unsqueeze) through ops_internal.h's
 * contract: same bytes, another shape. */
static ffu_status identity_run(const nn_graph *g, const nn_node *n, void *const *in,
                               void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    size_t bytes = (size_t)nn_numel(x) * ffu_dtype_size(x->dtype);
    if (out[0] != in[0] && bytes) memmove(out[0], in[0], bytes);
    return FFU_OK;
}

const nn_op_def nn_op_def_identity = {identity_infer, identity_run, NULL, NN_OPF_VIEW};

/* ---- Shape (opset 15: start / end attributes) and Size -------------------------------- */

/* The [start, end) window of dims Shape reports, clamped like Slice. */
static void shape_window(const nn_node *n, int rank, int *start, int *end)
{
    int64_t s = nn_attr_int(n, "start", 0), e = nn_attr_int(n, "end", INT64_MAX);
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *start = (int)s;
    *end = (int)(e < s ? s : e);
}

static ffu_status shape_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    nn_shape s = {.rank = 1, .d = {-1}};
    if (x->shape.rank >= 0) {
        int a, b;
        shape_window(n, x->shape.rank, &a, &b);
        s.d[0] = b - a;
    }
    return nn_set_out(g, n, 0, FFU_DTYPE_I64, &s);
}

/* Reads only the input's shape: in[0] may be NULL when the session folds it. */
static ffu_status shape_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)in, (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int a, b;
    shape_window(n, x->shape.rank, &a, &b);
    int64_t *o = out[0];
    for (int i = a; i < b; i++)
        o[i - a] = x->shape.d[i];
    return FFU_OK;
}

const nn_op_def nn_op_def_shape = {shape_infer, shape_run, NULL, 0};

static ffu_status size_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    nn_shape s = {.rank = 0};
    return nn_set_out(g, n, 0, FFU_DTYPE_I64, &s);
}

static ffu_status size_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    (void)in, (void)scratch;
    *(int64_t *)out[0] = nn_numel(nn_in(g, n, 0));
    return FFU_OK;
}

const nn_op_def nn_op_def_size = {size_infer, size_run, NULL, 0};

/* ---- ConstantOfShape ---------------------------------------------------------------------- */

/* The fill value: the "value" tensor attribute (1 element), else f32 0. */
static const nn_tensor *cos_value(const nn_graph *g, const nn_node *n)
{
    const nn_attr *a = nn_node_attr(n, "value");
    if (!a || a->type != NN_ATTR_TENSOR || a->tensor < 0 || a->tensor >= g->ntensors) return NULL;
    return &g->tensors[a->tensor];
}

static ffu_status constant_of_shape_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *v = cos_value(g, n), *sh = nn_in(g, n, 0);
    if (nn_node_attr(n, "value") && !v)
        return nn_node_error(n, FFU_ERR_FORMAT, "value is not a tensor");
    if (v && (!nn_is_const(v) || nn_numel(v) != 1))
        return nn_node_error(n, FFU_ERR_FORMAT, "value must be a constant with one element");
    ffu_dtype dt = v ? v->dtype : FFU_DTYPE_F32;
    if (!ffu_dtype_size(dt))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "value type %s", ffu_dtype_name(dt));
    if (!nn_dtype_is_int(sh->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "shape is %s", ffu_dtype_name(sh->dtype));
    if (sh->shape.rank > 1) return nn_node_error(n, FFU_ERR_FORMAT, "shape input must be 1-D");
    nn_shape s = {.rank = -1};
    int64_t dims[FFU_NN_MAX_RANK];
    int cnt;
    int r = nn_const_ints(n, sh, dims, FFU_NN_MAX_RANK, &cnt);
    if (r < 0) return r;
    if (r) {
        s.rank = cnt;
        for (int i = 0; i < cnt; i++) {
            if (dims[i] < 0)
                return nn_node_error(n, FFU_ERR_FORMAT, "negative dimension %lld",
                                     (long long)dims[i]);
            s.d[i] = dims[i];
        }
    } else if (sh->shape.rank == 1 && sh->shape.d[0] >= 0) {
        if (sh->shape.d[0] > FFU_NN_MAX_RANK)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "rank %lld is too large",
                                 (long long)sh->shape.d[0]);
        s.rank = (int)sh->shape.d[0];
        for (int i = 0; i < s.rank; i++)
            s.d[i] = -1;
    }
    return nn_set_out(g, n, 0, dt, &s);
}

static ffu_status constant_of_shape_run(const nn_graph *g, const nn_node *n, void *const *in,
                                        void *const *out, void *scratch)
{
    (void)in, (void)scratch;
    const nn_tensor *v = cos_value(g, n), *o = nn_out(g, n, 0);
    int64_t cnt = nn_numel(o);
    size_t es = ffu_dtype_size(o->dtype);
    static const float zero = 0;
    const void *val = v ? v->data : &zero;
    char *p = out[0];
    if (es == 4) {
        uint32_t x;
        memcpy(&x, val, 4);
        for (int64_t i = 0; i < cnt; i++)
            ((uint32_t *)out[0])[i] = x;
    } else {
        for (int64_t i = 0; i < cnt; i++)
            memcpy(p + i * (int64_t)es, val, es);
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_constant_of_shape = {constant_of_shape_infer, constant_of_shape_run, NULL,
                                               0};

/* ---- Range(start, limit, delta) ---------------------------------------------------------- */

static double range_scalar(const nn_tensor *t, const void *data)
{
    switch (t->dtype) {
    case FFU_DTYPE_F32:
        return *(const float *)data;
    case FFU_DTYPE_F64:
        return *(const double *)data;
    default:
        return (double)nn_load_int(data, t->dtype, 0);
    }
}

/* ONNX: max(ceil((limit - start) / delta), 0) elements. Integer ranges are counted
 * in integers so large i64 values stay exact. */
static int64_t range_count(ffu_dtype t, const void *s, const void *l, const void *d)
{
    if (nn_dtype_is_int(t)) {
        int64_t a = nn_load_int(s, t, 0), b = nn_load_int(l, t, 0), c = nn_load_int(d, t, 0);
        int64_t diff;
        if (c == 0 || __builtin_sub_overflow(b, a, &diff)) return -1;
        if ((diff > 0) != (c > 0) || diff == 0) return 0;
        int64_t q = diff / c;
        if (q * c != diff) q++;
        return q;
    }
    double a = t == FFU_DTYPE_F32 ? *(const float *)s : *(const double *)s;
    double b = t == FFU_DTYPE_F32 ? *(const float *)l : *(const double *)l;
    double c = t == FFU_DTYPE_F32 ? *(const float *)d : *(const double *)d;
    if (c == 0 || !isfinite(a) || !isfinite(b) || !isfinite(c)) return -1;
    double q = ceil((b - a) / c);
    return q > 0 ? (int64_t)q : 0;
}

static ffu_status range_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 3, 3);
    if (st < 0) return st;
    const nn_tensor *s = nn_in(g, n, 0), *l = nn_in(g, n, 1), *d = nn_in(g, n, 2);
    ffu_dtype t = s->dtype;
    if (l->dtype != t || d->dtype != t)
        return nn_node_error(n, FFU_ERR_FORMAT, "start, limit and delta differ in type");
    if (t != FFU_DTYPE_F32 && t != FFU_DTYPE_F64 && t != FFU_DTYPE_I16 && t != FFU_DTYPE_I32 &&
        t != FFU_DTYPE_I64)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(t));
    for (int i = 0; i < 3; i++) {
        const nn_tensor *x = nn_in(g, n, i);
        if (x->shape.rank >= 0 && nn_numel(x) != 1 && nn_numel(x) >= 0)
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d is not a scalar", i);
    }
    nn_shape o = {.rank = 1, .d = {-1}};
    if (nn_is_const(s) && nn_is_const(l) && nn_is_const(d) && nn_numel(s) == 1 &&
        nn_numel(l) == 1 && nn_numel(d) == 1) {
        int64_t cnt = range_count(t, s->data, l->data, d->data);
        if (cnt < 0) return nn_node_error(n, FFU_ERR_FORMAT, "delta is zero or not finite");
        o.d[0] = cnt;
    }
    return nn_set_out(g, n, 0, t, &o);
}

static ffu_status range_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    const nn_tensor *o = nn_out(g, n, 0), *s = nn_in(g, n, 0);
    ffu_dtype t = s->dtype;
    int64_t cnt = range_count(t, in[0], in[1], in[2]);
    if (cnt < 0 || cnt != o->shape.d[0])
        return nn_node_error(n, FFU_ERR_FORMAT, "range has %lld elements, planned %lld",
                             (long long)cnt, (long long)o->shape.d[0]);
    if (nn_dtype_is_int(t)) {
        int64_t a = nn_load_int(in[0], t, 0), c = nn_load_int(in[2], t, 0);
        for (int64_t i = 0; i < cnt; i++) {
            int64_t v = (int64_t)((uint64_t)a + (uint64_t)i * (uint64_t)c); /* wraps */
            if (t == FFU_DTYPE_I64)
                ((int64_t *)out[0])[i] = v;
            else if (t == FFU_DTYPE_I32)
                ((int32_t *)out[0])[i] = (int32_t)v;
            else
                ((int16_t *)out[0])[i] = (int16_t)v;
        }
    } else if (t == FFU_DTYPE_F32) {
        /* accumulate like the ONNX reference (start + i * delta) in float */
        float a = *(const float *)in[0], c = *(const float *)in[2];
        for (int64_t i = 0; i < cnt; i++)
            ((float *)out[0])[i] = a + (float)i * c;
    } else {
        double a = range_scalar(s, in[0]), c = range_scalar(s, in[2]);
        for (int64_t i = 0; i < cnt; i++)
            ((double *)out[0])[i] = a + (double)i * c;
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_range = {range_infer, range_run, NULL, 0};
