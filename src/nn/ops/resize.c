/* Resize (opset 11+ form: X, roi?, scales?, sizes?) and Upsample: shape inference and
 * the reference kernel.
 *
 * Modes nearest (round_prefer_floor, round_prefer_ceil, floor, ceil), linear and cubic
 * (cubic_coeff_a, exclude_outside), on any number of axes at once (N-linear, N-cubic);
 * every coordinate_transformation_mode (half_pixel, half_pixel_symmetric,
 * pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
 * tf_crop_and_resize with roi and extrapolation_value). Opset-18 `axes` is honoured;
 * antialias and keep_aspect_ratio_policy other than "stretch" are not supported.
 *
 * How it works: for every resized axis and output index the kernel builds a small tap
 * table in scratch (up to 4 input indices and weights, following the ONNX reference:
 * taps beyond the edge are clamped, or dropped and the rest renormalised with
 * exclude_outside); an output element is then the tensor-product sum over the axes'
 * taps. Coordinates are computed in double from the scale as given (or out/in when
 * sizes are given), as the ONNX reference does. Nearest works on any element type,
 * linear and cubic on f32. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };
enum {
    CT_HALF_PIXEL,
    CT_HALF_PIXEL_SYMMETRIC,
    CT_PYTORCH_HALF_PIXEL,
    CT_ALIGN_CORNERS,
    CT_ASYMMETRIC,
    CT_TF_HALF_PIXEL_FOR_NN,
    CT_TF_CROP_AND_RESIZE,
};
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

typedef struct resize_geom {
    int mode, ct, nearest, exclude_outside;
    int known; /* scales/sizes (and roi when needed) are constant: out[] is set */
    double cubic_a, extrapolation;
    int rank;
    double scale[FFU_NN_MAX_RANK];  /* as given, or out/in for sizes */
    double length[FFU_NN_MAX_RANK]; /* resized length for the coordinate transform */
    double roi0[FFU_NN_MAX_RANK], roi1[FFU_NN_MAX_RANK];
    int64_t in[FFU_NN_MAX_RANK], out[FFU_NN_MAX_RANK];
} resize_geom;

/* Element i of a float tensor (f32, f64, f16) as double. */
static double load_real(const nn_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case FFU_DTYPE_F32:
        return ((const float *)t->data)[i];
    case FFU_DTYPE_F64:
        return ((const double *)t->data)[i];
    case FFU_DTYPE_F16:
        return nn_f16_to_f32(((const uint16_t *)t->data)[i]);
    default:
        return 0;
    }
}

static int is_real(ffu_dtype t)
{
    return t == FFU_DTYPE_F32 || t == FFU_DTYPE_F64 || t == FFU_DTYPE_F16;
}

static int pick(const char *s, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* Present and not empty (exporters pass empty tensors for unused inputs). */
static const nn_tensor *given(const nn_graph *g, const nn_node *n, int i)
{
    const nn_tensor *t = nn_in(g, n, i);
    if (!t || (t->shape.rank >= 0 && nn_numel(t) == 0)) return NULL;
    return t;
}

static ffu_status resize_geom_init(const nn_graph *g, const nn_node *n, resize_geom *rg)
{
    int upsample = n->op == NN_OP_UPSAMPLE;
    /* Resize's input 4 is a fused Add's other operand (ir.h) */
    ffu_status e = nn_check_inputs(g, n, 1, upsample ? 2 : 5);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    memset(rg, 0, sizeof *rg);
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    const char *m = nn_attr_string(n, "mode", "nearest");
    rg->mode = pick(m, modes, 3);
    if (rg->mode < 0 && upsample && strcmp(m, "bilinear") == 0) rg->mode = RZ_LINEAR;
    if (rg->mode < 0) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "mode '%s'", m);
    if (rg->mode != RZ_NEAREST && x->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%s mode on type %s (only f32)", m,
                             ffu_dtype_name(x->dtype));
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (upsample) {
        rg->ct = CT_ASYMMETRIC;
        rg->nearest = NM_SIMPLE;
    } else {
        static const char *const cts[] = {
            "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
            "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
        static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
        const char *ct = nn_attr_string(n, "coordinate_transformation_mode", "half_pixel");
        const char *nm = nn_attr_string(n, "nearest_mode", "round_prefer_floor");
        rg->ct = pick(ct, cts, 7);
        rg->nearest = pick(nm, nms, 4);
        if (rg->ct < 0)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "coordinate_transformation_mode '%s'", ct);
        if (rg->nearest < 0) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "nearest_mode '%s'", nm);
        if (nn_attr_int(n, "antialias", 0) != 0)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "antialias");
        const char *pol = nn_attr_string(n, "keep_aspect_ratio_policy", "stretch");
        if (strcmp(pol, "stretch") != 0)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "keep_aspect_ratio_policy '%s'", pol);
    }
    rg->cubic_a = nn_attr_float(n, "cubic_coeff_a", -0.75f);
    rg->exclude_outside = nn_attr_int(n, "exclude_outside", 0) != 0;
    rg->extrapolation = nn_attr_float(n, "extrapolation_value", 0.0f);
    rg->rank = x->shape.rank;
    if (rg->rank < 0) return FFU_OK;
    int rank = rg->rank;

    /* which axes the scales/sizes/roi lists describe */
    int64_t axes[FFU_NN_MAX_RANK];
    int naxes = rank, cnt;
    const int64_t *aa = upsample ? NULL : nn_attr_ints(n, "axes", &cnt);
    if (aa) {
        if (cnt > rank) return nn_node_error(n, FFU_ERR_FORMAT, "%d axes for rank %d", cnt, rank);
        memcpy(axes, aa, sizeof(int64_t) * (size_t)cnt);
        naxes = cnt;
        if ((e = nn_norm_axes(n, axes, naxes, rank)) < 0) return e;
    } else {
        for (int i = 0; i < rank; i++)
            axes[i] = i;
    }
    for (int i = 0; i < rank; i++) {
        rg->in[i] = x->shape.d[i];
        rg->scale[i] = 1.0;
        rg->roi0[i] = 0.0;
        rg->roi1[i] = 1.0;
    }

    const nn_tensor *scales = given(g, n, upsample ? 1 : 2),
                    *sizes = upsample ? NULL : given(g, n, 3);
    const nn_tensor *roi = upsample ? NULL : given(g, n, 1);
    const float *ascales = NULL;
    if (upsample && !scales) {
        ascales = nn_attr_floats(n, "scales", &cnt);
        if (!ascales) return nn_node_error(n, FFU_ERR_FORMAT, "scales are missing");
        if (cnt != rank)
            return nn_node_error(n, FFU_ERR_FORMAT, "%d scales for rank %d", cnt, rank);
    }
    if (!ascales && !scales && !sizes)
        return nn_node_error(n, FFU_ERR_FORMAT, "neither scales nor sizes are given");
    if (scales && sizes) return nn_node_error(n, FFU_ERR_FORMAT, "both scales and sizes are given");
    if (scales && !is_real(scales->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "scales of type %s", ffu_dtype_name(scales->dtype));
    if (rg->ct == CT_TF_CROP_AND_RESIZE && roi) {
        if (!nn_is_const(roi)) return FFU_OK;
        if (!is_real(roi->dtype) || nn_numel(roi) != 2 * naxes)
            return nn_node_error(n, FFU_ERR_FORMAT, "roi must have %d float values", 2 * naxes);
        for (int i = 0; i < naxes; i++) {
            rg->roi0[axes[i]] = load_real(roi, i);
            rg->roi1[axes[i]] = load_real(roi, naxes + i);
        }
    }
    if (sizes) {
        int64_t v[FFU_NN_MAX_RANK];
        int r = nn_const_ints(n, sizes, v, FFU_NN_MAX_RANK, &cnt);
        if (r <= 0) return r;
        if (cnt != naxes)
            return nn_node_error(n, FFU_ERR_FORMAT, "%d sizes for %d axes", cnt, naxes);
        for (int i = 0; i < rank; i++)
            rg->out[i] = rg->in[i];
        for (int i = 0; i < naxes; i++) {
            int a = (int)axes[i];
            if (v[i] < 0) return nn_node_error(n, FFU_ERR_FORMAT, "negative size");
            rg->out[a] = v[i];
            rg->scale[a] = rg->in[a] > 0 ? (double)v[i] / (double)rg->in[a] : 1.0;
        }
        for (int i = 0; i < rank; i++)
            rg->length[i] = (double)rg->out[i];
    } else {
        if (scales) {
            if (!nn_is_const(scales)) return FFU_OK;
            if (nn_numel(scales) != naxes)
                return nn_node_error(n, FFU_ERR_FORMAT, "%lld scales for %d axes",
                                     (long long)nn_numel(scales), naxes);
        }
        for (int i = 0; i < naxes; i++) {
            double s = ascales ? ascales[i] : load_real(scales, i);
            if (!(s > 0) || !(s < 1e6)) return nn_node_error(n, FFU_ERR_FORMAT, "scale %g", s);
            rg->scale[axes[i]] = s;
        }
        for (int i = 0; i < rank; i++) {
            /* the ONNX reference: resized length = in * scale, output = floor of it */
            rg->length[i] = rg->in[i] >= 0 ? (double)rg->in[i] * rg->scale[i] : -1;
            rg->out[i] = rg->in[i] >= 0 ? (int64_t)floor(rg->length[i]) : -1;
        }
    }
    rg->known = 1;
    return FFU_OK;
}

static ffu_status resize_infer(nn_graph *g, nn_node *n)
{
    resize_geom rg;
    ffu_status e = resize_geom_init(g, n, &rg);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (rg.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    nn_shape s = {.rank = rg.rank};
    for (int i = 0; i < rg.rank; i++)
        s.d[i] = rg.known ? rg.out[i] : -1;
    if ((e = nn_set_out(g, n, 0, x->dtype, &s)) < 0) return e;
    const nn_tensor *r = n->ninputs > 4 ? nn_in(g, n, 4) : NULL, *y = nn_out(g, n, 0);
    if (r && (r->dtype != FFU_DTYPE_F32 || x->dtype != FFU_DTYPE_F32 ||
              (nn_shape_known(&r->shape) && nn_shape_known(&y->shape) &&
               !nn_shape_equal(&r->shape, &y->shape))))
        return nn_node_error(n, FFU_ERR_FORMAT,
                             "the fused addend must be f32 with the output's shape");
    return FFU_OK;
}

/* ---- taps -------------------------------------------------------------------------------- */

/* one output index's input taps (ops_internal.h) */
typedef nn_resize_tap rz_tap;

static size_t resize_scratch(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *y = nn_out(g, n, 0);
    size_t total = 0;
    if (!y || nn_shape_numel(&y->shape) <= 0) return 0; /* nothing to compute: no taps */
    for (int i = 0; i < y->shape.rank; i++)
        if (y->shape.d[i] > 0) total += (size_t)y->shape.d[i];
    return total * sizeof(rz_tap);
}

/* The input coordinate of output index o along axis d. */
static double source_coord(const resize_geom *rg, int d, int64_t o)
{
    double s = rg->scale[d], len = rg->length[d], in = (double)rg->in[d], x = (double)o;
    switch (rg->ct) {
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adj = len / (s * in), center = in / 2;
        return center * (1 - adj) + (x + 0.5) / s - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL:
        return len > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case CT_ALIGN_CORNERS:
        return len == 1 ? 0.0 : x * (in - 1) / (len - 1);
    case CT_ASYMMETRIC:
        return x / s;
    case CT_TF_HALF_PIXEL_FOR_NN:
        return (x + 0.5) / s;
    case CT_TF_CROP_AND_RESIZE: {
        double r0 = rg->roi0[d], r1 = rg->roi1[d];
        return len > 1 ? r0 * (in - 1) + x * (r1 - r0) * (in - 1) / (len - 1)
                       : 0.5 * (r0 + r1) * (in - 1);
    }
    default:
        return (x + 0.5) / s - 0.5;
    }
}

static int64_t clamp_idx(int64_t i, int64_t in) { return i < 0 ? 0 : i >= in ? in - 1 : i; }

static double cubic(double t, double a)
{
    t = fabs(t);
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

/* Fills tab[0..out-1] for axis d; returns the taps per entry (1, 2 or 4), reduced to 1
 * when every entry has a single non-zero weight (axes that are not really resized). */
static int build_taps(const resize_geom *rg, int d, rz_tap *tab)
{
    int64_t in = rg->in[d], out = rg->out[d];
    int ntap = rg->mode == RZ_NEAREST ? 1 : rg->mode == RZ_LINEAR ? 2 : 4;
    for (int64_t o = 0; o < out; o++) {
        rz_tap *t = &tab[o];
        memset(t, 0, sizeof *t);
        double x = source_coord(rg, d, o);
        if (rg->ct == CT_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1))) {
            t->idx[0] = -1;
            t->w[0] = 1;
            continue;
        }
        double fl = floor(x), r = x - fl;
        int64_t i0 = (int64_t)fl;
        if (rg->mode == RZ_NEAREST) {
            int64_t k;
            switch (rg->nearest) {
            case NM_ROUND_PREFER_CEIL:
                k = r >= 0.5 ? i0 + 1 : i0;
                break;
            case NM_FLOOR:
                k = i0;
                break;
            case NM_CEIL:
                k = r > 0 ? i0 + 1 : i0;
                break;
            case NM_SIMPLE:
                k = rg->scale[d] < 1 && r > 0 ? i0 + 1 : i0;
                break;
            default:
                k = r > 0.5 ? i0 + 1 : i0;
                break;
            }
            t->idx[0] = clamp_idx(k, in);
            t->w[0] = 1;
            continue;
        }
        int64_t first = rg->mode == RZ_LINEAR ? i0 : i0 - 1;
        double sum = 0;
        for (int j = 0; j < ntap; j++) {
            int64_t k = first + j;
            double w = rg->mode == RZ_LINEAR ? (j == 0 ? 1 - r : r) : cubic(r + 1 - j, rg->cubic_a);
            if (rg->exclude_outside && (k < 0 || k >= in)) w = 0;
            t->idx[j] = clamp_idx(k, in);
            t->w[j] = w;
            sum += w;
        }
        if (rg->exclude_outside && sum != 0)
            for (int j = 0; j < ntap; j++)
                t->w[j] /= sum;
    }
    if (ntap == 1) return 1;
    /* collapse when no entry mixes two inputs */
    for (int64_t o = 0; o < out; o++) {
        int nz = 0;
        for (int j = 0; j < ntap; j++)
            nz += tab[o].w[j] != 0;
        if (nz > 1) return ntap;
    }
    for (int64_t o = 0; o < out; o++) {
        rz_tap *t = &tab[o];
        if (t->idx[0] == -1) continue;
        for (int j = 1; j < ntap; j++)
            if (t->w[j] != 0) {
                t->idx[0] = t->idx[j];
                t->w[0] = t->w[j];
            }
    }
    return 1;
}

static ffu_status resize_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    resize_geom rg;
    ffu_status e = resize_geom_init(g, n, &rg);
    if (e < 0) return e;
    if (!rg.known) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "scales or sizes not constant");
    const nn_tensor *x = nn_in(g, n, 0);
    int rank = rg.rank;
    size_t esz = ffu_dtype_size(x->dtype);
    int64_t numel = 1;
    for (int d = 0; d < rank; d++)
        numel *= rg.out[d];
    if (numel == 0) return FFU_OK;
    for (int d = 0; d < rank; d++)
        if (rg.in[d] == 0) return nn_node_error(n, FFU_ERR_FORMAT, "resizing an empty dim");

    rz_tap *tab[FFU_NN_MAX_RANK];
    int ntap[FFU_NN_MAX_RANK];
    rz_tap *p = scratch;
    for (int d = 0; d < rank; d++) {
        tab[d] = p;
        ntap[d] = build_taps(&rg, d, p);
        p += rg.out[d];
    }
    int64_t xs[FFU_NN_MAX_RANK], idx[FFU_NN_MAX_RANK] = {0};
    nn_strides(&x->shape, xs);
    unsigned char fill[16] = {0};
    float ev = (float)rg.extrapolation;
    if (esz <= sizeof fill && (e = nn_convert(&ev, FFU_DTYPE_F32, fill, x->dtype, 1)) < 0) return e;
    const unsigned char *X = in[0];
    unsigned char *Y = out[0];
    /* a fused Add's operand (ir.h, f32): may be Y itself, so each element is read
     * before that output element is written */
    const float *R = n->ninputs > 4 && n->inputs[4] >= 0 ? in[4] : NULL;
    for (int64_t o = 0; o < numel; o++) {
        int outside = 0;
        for (int d = 0; d < rank; d++)
            outside |= tab[d][idx[d]].idx[0] == -1;
        if (outside) {
            if (R)
                ((float *)Y)[o] = ev + R[o];
            else
                memcpy(Y + (size_t)o * esz, fill, esz);
        } else if (rg.mode == RZ_NEAREST) {
            int64_t off = 0;
            for (int d = 0; d < rank; d++)
                off += tab[d][idx[d]].idx[0] * xs[d];
            if (R)
                ((float *)Y)[o] = ((const float *)X)[off] + R[o];
            else
                memcpy(Y + (size_t)o * esz, X + (size_t)off * esz, esz);
        } else {
            /* tensor-product sum over every axis's taps */
            int c[FFU_NN_MAX_RANK] = {0};
            double acc = 0;
            for (;;) {
                double w = 1;
                int64_t off = 0;
                for (int d = 0; d < rank; d++) {
                    const rz_tap *t = &tab[d][idx[d]];
                    w *= t->w[c[d]];
                    off += t->idx[c[d]] * xs[d];
                }
                if (w != 0) acc += w * ((const float *)X)[off];
                int d = rank - 1;
                for (; d >= 0; d--) {
                    if (++c[d] < ntap[d]) break;
                    c[d] = 0;
                }
                if (d < 0) break;
            }
            ((float *)Y)[o] = R ? (float)acc + R[o] : (float)acc;
        }
        for (int d = rank - 1; d >= 0; d--) {
            if (++idx[d] < rg.out[d]) break;
            idx[d] = 0;
        }
    }
    if (R) {
        int64_t inner = 1;
        for (int d = 2; d < rank; d++)
            inner *= rg.out[d];
        nn_apply_node_act(g, n, (float *)Y, rank > 0 ? rg.out[0] : 1, rank > 1 ? rg.out[1] : 1,
                          inner);
    }
    return FFU_OK;
}

ffu_status nn_resize_taps(const nn_graph *g, const nn_node *n, nn_resize_info *info,
                          nn_resize_tap *tab)
{
    resize_geom rg;
    memset(info, 0, sizeof *info);
    ffu_status e = resize_geom_init(g, n, &rg);
    if (e < 0) return e;
    if (!rg.known) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "scales or sizes not constant");
    if (rg.mode == RZ_CUBIC) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "cubic mode");
    const nn_tensor *x = nn_in(g, n, 0);
    info->rank = rg.rank;
    info->linear = rg.mode == RZ_LINEAR;
    float ev = (float)rg.extrapolation;
    if (ffu_dtype_size(x->dtype) <= sizeof info->fill &&
        (e = nn_convert(&ev, FFU_DTYPE_F32, info->fill, x->dtype, 1)) < 0)
        return e;
    for (int d = 0; d < rg.rank; d++) {
        if (rg.in[d] == 0 && rg.out[d])
            return nn_node_error(n, FFU_ERR_FORMAT, "resizing an empty dim");
        info->in[d] = rg.in[d];
        info->out[d] = rg.out[d];
        info->ntap[d] = build_taps(&rg, d, tab);
        tab += rg.out[d];
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_resize = {resize_infer, resize_run, resize_scratch, 0};
const nn_op_def nn_op_def_upsample = {resize_infer, resize_run, resize_scratch, 0};
