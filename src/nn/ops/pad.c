/* Pad: shape inference and the reference kernel (opset-18 form: pads, constant_value and
 * axes as inputs; modes constant, reflect, edge and wrap). Negative pads crop. Data of
 * any element type is moved by element size; the fill value is constant_value's bytes
 * (same type as the data), or the legacy "value" attribute, or zero. */
#include <string.h>

#include "ops_internal.h"

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

typedef struct pad_geom {
    int mode;
    int known;                   /* pads (and axes) are constant */
    int64_t p0[FFU_NN_MAX_RANK]; /* per dim of the data */
    int64_t p1[FFU_NN_MAX_RANK];
} pad_geom;

static ffu_status pad_geom_init(const nn_graph *g, const nn_node *n, int rank, pad_geom *pg)
{
    memset(pg, 0, sizeof *pg);
    const char *m = nn_attr_string(n, "mode", "constant");
    if (strcmp(m, "constant") == 0)
        pg->mode = PAD_CONSTANT;
    else if (strcmp(m, "reflect") == 0)
        pg->mode = PAD_REFLECT;
    else if (strcmp(m, "edge") == 0)
        pg->mode = PAD_EDGE;
    else if (strcmp(m, "wrap") == 0)
        pg->mode = PAD_WRAP;
    else
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "mode '%s'", m);

    int64_t pads[2 * FFU_NN_MAX_RANK], axes[FFU_NN_MAX_RANK];
    int npads = 0, naxes = rank;
    const nn_tensor *pt = nn_in(g, n, 1), *at = nn_in(g, n, 3);
    if (pt) {
        int r = nn_const_ints(n, pt, pads, 2 * FFU_NN_MAX_RANK, &npads);
        if (r <= 0) return r;
    } else {
        const int64_t *a = nn_attr_ints(n, "pads", &npads);
        if (npads > 2 * FFU_NN_MAX_RANK) return nn_node_error(n, FFU_ERR_FORMAT, "too many pads");
        for (int i = 0; i < npads; i++)
            pads[i] = a[i];
    }
    if (at && nn_numel(at) != 0) {
        int r = nn_const_ints(n, at, axes, FFU_NN_MAX_RANK, &naxes);
        if (r <= 0) return r;
        ffu_status e = nn_norm_axes(n, axes, naxes, rank);
        if (e < 0) return e;
    } else {
        for (int i = 0; i < rank; i++)
            axes[i] = i;
    }
    if (npads != 2 * naxes)
        return nn_node_error(n, FFU_ERR_FORMAT, "%d pads for %d axes", npads, naxes);
    for (int i = 0; i < naxes; i++) {
        pg->p0[axes[i]] = pads[i];
        pg->p1[axes[i]] = pads[naxes + i];
    }
    pg->known = 1;
    return FFU_OK;
}

static ffu_status pad_infer(nn_graph *g, nn_node *n)
{
    ffu_status e = nn_check_inputs(g, n, 1, 4);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0), *cv = nn_in(g, n, 2);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (cv && cv->dtype != x->dtype)
        return nn_node_error(n, FFU_ERR_FORMAT, "constant_value of type %s for %s data",
                             ffu_dtype_name(cv->dtype), ffu_dtype_name(x->dtype));
    if (cv && nn_numel(cv) > 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "constant_value has %lld values",
                             (long long)nn_numel(cv));
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    pad_geom pg;
    if ((e = pad_geom_init(g, n, x->shape.rank, &pg)) < 0) return e;
    nn_shape s = x->shape;
    for (int i = 0; i < s.rank; i++) {
        if (!pg.known) {
            s.d[i] = -1;
            continue;
        }
        if (s.d[i] < 0) continue;
        int64_t o = s.d[i] + pg.p0[i] + pg.p1[i];
        if (o < 0) return nn_node_error(n, FFU_ERR_FORMAT, "pads crop dim %d below zero", i);
        if (pg.mode != PAD_CONSTANT && s.d[i] == 0 && o > 0)
            return nn_node_error(n, FFU_ERR_FORMAT, "cannot %s-pad an empty dim",
                                 pg.mode == PAD_EDGE ? "edge" : "reflect");
        s.d[i] = o;
    }
    return nn_set_out(g, n, 0, x->dtype, &s);
}

/* Source index along one dim for output index o, or -1 for the fill value. */
static int64_t src_index(int64_t o, int64_t p0, int64_t in, int mode)
{
    int64_t i = o - p0;
    if (i >= 0 && i < in) return i;
    if (in <= 0) return -1;
    switch (mode) {
    case PAD_EDGE:
        return i < 0 ? 0 : in - 1;
    case PAD_WRAP:
        return ((i % in) + in) % in;
    case PAD_REFLECT: {
        if (in == 1) return 0;
        int64_t period = 2 * (in - 1);
        i = ((i % period) + period) % period;
        return i < in ? i : period - i;
    }
    default:
        return -1;
    }
}

ffu_status nn_pad_geom(const nn_graph *g, const nn_node *n, int rank, int *mode, int64_t *p0,
                       int64_t *p1)
{
    pad_geom pg;
    ffu_status e = pad_geom_init(g, n, rank, &pg);
    if (e < 0) return e;
    if (!pg.known) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "pads are not constant");
    *mode = pg.mode;
    memcpy(p0, pg.p0, sizeof pg.p0);
    memcpy(p1, pg.p1, sizeof pg.p1);
    return FFU_OK;
}

static ffu_status pad_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0), *cv = nn_in(g, n, 2);
    pad_geom pg;
    ffu_status e = pad_geom_init(g, n, x->shape.rank, &pg);
    if (e < 0) return e;
    if (!pg.known) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "pads are not constant");
    size_t esz = ffu_dtype_size(x->dtype);
    unsigned char fill[16] = {0};
    if (cv && nn_numel(cv) == 1 && esz <= sizeof fill) {
        memcpy(fill, in[2], esz);
    } else if (!cv && nn_node_attr(n, "value") && esz <= sizeof fill) {
        float v = nn_attr_float(n, "value", 0.0f);
        if ((e = nn_convert(&v, FFU_DTYPE_F32, fill, x->dtype, 1)) < 0) return e;
    }
    const unsigned char *X = in[0];
    unsigned char *Y = out[0];
    int r = x->shape.rank;
    int64_t numel = nn_numel(y);
    if (numel == 0) return FFU_OK;
    if (r == 0) {
        memcpy(Y, X, esz);
        return FFU_OK;
    }
    int64_t xs[FFU_NN_MAX_RANK], idx[FFU_NN_MAX_RANK] = {0};
    nn_strides(&x->shape, xs);
    int64_t W = y->shape.d[r - 1], IW = x->shape.d[r - 1], rows = numel / W;
    for (int64_t row = 0; row < rows; row++) {
        unsigned char *yr = Y + (size_t)(row * W) * esz;
        /* the source row, or none when any outer dim falls in the constant fill */
        int64_t off = 0;
        int fill_row = 0;
        for (int d = 0; d < r - 1 && !fill_row; d++) {
            int64_t s = src_index(idx[d], pg.p0[d], x->shape.d[d], pg.mode);
            if (s < 0)
                fill_row = 1;
            else
                off += s * xs[d];
        }
        for (int64_t o = 0; o < W; o++) {
            int64_t s = fill_row ? -1 : src_index(o, pg.p0[r - 1], IW, pg.mode);
            if (s < 0) {
                memcpy(yr + (size_t)o * esz, fill, esz);
            } else if (s == o - pg.p0[r - 1]) {
                /* a run of interior elements: copy it in one go */
                int64_t end = IW + pg.p0[r - 1];
                if (end > W) end = W;
                memcpy(yr + (size_t)o * esz, X + (size_t)(off + s) * esz, (size_t)(end - o) * esz);
                o = end - 1;
            } else {
                memcpy(yr + (size_t)o * esz, X + (size_t)(off + s) * esz, esz);
            }
        }
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < y->shape.d[d]) break;
            idx[d] = 0;
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_pad = {pad_infer, pad_run, NULL, 0};
