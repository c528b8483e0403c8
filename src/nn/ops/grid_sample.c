/* GridSample (opset 16 form; opset 20's "linear" / "cubic" names are accepted too):
 * Y[n, c, i, j] = X[n, c] sampled at the normalised location grid[n, i, j] = (x, y),
 * x along W and y along H, both in [-1, 1] for the image. Used by warping and
 * face-reenactment models (2-D motion warps, spatial transformers). 4-D inputs only:
 * the volumetric (5-D) form, which LivePortrait's warping module uses, is refused at
 * load with its rank named.
 *
 * The geometry follows the ONNX operator (the same as ONNX Runtime's kernel and
 * torch.nn.functional.grid_sample for in-range points):
 *  - a location maps to pixel coordinates with align_corners=1 as (g + 1) / 2 * (size -
 *    1) (-1 and 1 are the corner pixels' centres), else ((g + 1) * size - 1) / 2 (-1
 *    and 1 are the corner pixels' outer edges);
 *  - nearest rounds half to even (rint), then padding applies to the rounded location;
 *  - a location outside [0, size - 1] (align_corners=1) or [-0.5, size - 0.5] (0) is
 *    moved in first: clamped to [0, size - 1] for "border", mirrored at those bounds
 *    until inside for "reflection"; "zeros" leaves it;
 *  - then bilinear reads 2x2 and bicubic 4x4 neighbours (Keys' cubic, A = -0.75); a
 *    neighbour outside the image reads 0 ("zeros"), the nearest edge pixel ("border")
 *    or its mirror image ("reflection").
 * Sampling computes in double; integer X converts at the end (truncating, saturated).
 *
 * Grid values are data: NaN (or an infinity under "reflection", where no mirror image
 * exists) yields NaN for that point; infinities and huge values under "zeros" read
 * nothing (0) and under "border" read the edge. No grid value leads to an index outside
 * X. Each grid point's taps and weights are computed once and used for all channels. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

enum { GS_BILINEAR, GS_NEAREST, GS_BICUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

typedef struct gs_attrs {
    int mode, pad, align;
} gs_attrs;

static ffu_status gs_read_attrs(const nn_node *n, gs_attrs *a)
{
    const char *m = nn_attr_string(n, "mode", "bilinear");
    const char *p = nn_attr_string(n, "padding_mode", "zeros");
    if (!strcmp(m, "bilinear") || !strcmp(m, "linear"))
        a->mode = GS_BILINEAR;
    else if (!strcmp(m, "nearest"))
        a->mode = GS_NEAREST;
    else if (!strcmp(m, "bicubic") || !strcmp(m, "cubic"))
        a->mode = GS_BICUBIC;
    else
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "mode '%.40s'", m);
    if (!strcmp(p, "zeros"))
        a->pad = GS_ZEROS;
    else if (!strcmp(p, "border"))
        a->pad = GS_BORDER;
    else if (!strcmp(p, "reflection"))
        a->pad = GS_REFLECTION;
    else
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "padding_mode '%.40s'", p);
    a->align = nn_attr_int(n, "align_corners", 0) != 0;
    return FFU_OK;
}

static ffu_status grid_sample_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *grid = nn_in(g, n, 1);
    gs_attrs a;
    if ((st = gs_read_attrs(n, &a)) < 0) return st;
    if (!nn_dtype_is_float(x->dtype) && !nn_dtype_is_int(x->dtype) && x->dtype != FFU_DTYPE_BOOL)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input of type %s", ffu_dtype_name(x->dtype));
    if (!nn_dtype_is_float(grid->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "grid of type %s (a float type)",
                             ffu_dtype_name(grid->dtype));
    if (x->shape.rank < 0 || grid->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    if (x->shape.rank != 4 || grid->shape.rank != 4)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED,
                             "input rank %d, grid rank %d (only 4-D: N x C x H x W and "
                             "N x H_out x W_out x 2)",
                             x->shape.rank, grid->shape.rank);
    const int64_t *xd = x->shape.d, *gd = grid->shape.d;
    if (gd[3] >= 0 && gd[3] != 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "grid's last dim is %lld (2: x, y)",
                             (long long)gd[3]);
    if (xd[0] >= 0 && gd[0] >= 0 && xd[0] != gd[0])
        return nn_node_error(n, FFU_ERR_FORMAT, "batch %lld in the input, %lld in the grid",
                             (long long)xd[0], (long long)gd[0]);
    nn_shape o = {.rank = 4, .d = {xd[0] >= 0 ? xd[0] : gd[0], xd[1], gd[1], gd[2]}};
    return nn_set_out(g, n, 0, x->dtype, &o);
}

/* Mirrors x at lo and hi until it lies in [lo, hi]; NaN for NaN and infinities. */
static double gs_reflect(double x, double lo, double hi)
{
    if (x >= lo && x <= hi) return x;
    double span = hi - lo;
    if (!(span > 0)) return x == x && !isinf(x) ? lo : NAN;
    int below = x < lo;
    double d = below ? lo - x : x - hi; /* distance past the bound it crossed */
    double flips = floor(d / span);     /* whole spans travelled: each flips direction */
    double r = d - flips * span;
    int odd = fmod(flips, 2.0) != 0;
    if (below) return odd ? hi - r : lo + r;
    return odd ? lo + r : hi - r;
}

/* Keys' cubic convolution weight at distance d from the sample point, A = -0.75. */
static double gs_keys(double d)
{
    const double A = -0.75;
    d = fabs(d);
    if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
    if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
    return 0;
}

/* One axis of the sampling: the tap indices (-1: reads zero) and their weights. */
typedef struct gs_axis {
    int64_t size;
    double lo, hi; /* the in-bounds range of a location */
} gs_axis;

/* The index a neighbour at integer position i reads under the padding mode (-1: 0). */
static int64_t gs_tap(const gs_axis *ax, int pad, int64_t i)
{
    if (i >= 0 && i < ax->size) return i;
    if (pad == GS_ZEROS) return -1;
    if (pad == GS_BORDER) return i < 0 ? 0 : ax->size - 1;
    double r = gs_reflect((double)i, ax->lo, ax->hi);
    int64_t k = (int64_t)floor(r + 0.5); /* r is a whole number up to rounding */
    return k < 0 ? 0 : k >= ax->size ? ax->size - 1 : k;
}

/* Fills idx[] / w[] for one coordinate g (normalised); returns the tap count, 0 when
 * the location is NaN (the point's output is NaN). */
static int gs_taps(const gs_axis *ax, const gs_attrs *a, double g, int64_t *idx, double *w)
{
    double s = (double)ax->size;
    double x = a->align ? (g + 1) / 2 * (s - 1) : ((g + 1) * s - 1) / 2;
    if (a->mode == GS_NEAREST) x = rint(x);
    if (x != x) return 0;
    if (x < ax->lo || x > ax->hi) {
        if (a->pad == GS_BORDER)
            x = x < 0 ? 0 : x > s - 1 ? s - 1 : x;
        else if (a->pad == GS_REFLECTION)
            x = gs_reflect(x, ax->lo, ax->hi);
        else /* every tap of a location this far out is outside: keep it representable */
            x = x < -4 ? -4 : x > s + 3 ? s + 3 : x;
        if (x != x) return 0;
    }
    double f = floor(x), t = x - f;
    int64_t i0 = (int64_t)f;
    switch (a->mode) {
    case GS_NEAREST:
        idx[0] = gs_tap(ax, a->pad, i0), w[0] = 1;
        return 1;
    case GS_BILINEAR:
        idx[0] = gs_tap(ax, a->pad, i0), w[0] = 1 - t;
        idx[1] = gs_tap(ax, a->pad, i0 + 1), w[1] = t;
        return 2;
    default:
        for (int k = 0; k < 4; k++) {
            idx[k] = gs_tap(ax, a->pad, i0 - 1 + k);
            w[k] = gs_keys(t - (k - 1));
        }
        return 4;
    }
}

static ffu_status grid_sample_run(const nn_graph *g, const nn_node *n, void *const *in,
                                  void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *grid = nn_in(g, n, 1);
    gs_attrs a;
    ffu_status st = gs_read_attrs(n, &a);
    if (st < 0) return st;
    int64_t N = x->shape.d[0], C = x->shape.d[1], H = x->shape.d[2], W = x->shape.d[3];
    int64_t Ho = grid->shape.d[1], Wo = grid->shape.d[2], plane = H * W, opl = Ho * Wo;
    gs_axis ax = {W, a.align ? 0 : -0.5, a.align ? (double)W - 1 : (double)W - 0.5};
    gs_axis ay = {H, a.align ? 0 : -0.5, a.align ? (double)H - 1 : (double)H - 0.5};
    ffu_dtype xt = x->dtype, gt = grid->dtype;
    for (int64_t b = 0; b < N; b++)
        for (int64_t p = 0; p < opl; p++) {
            int64_t gi = (b * opl + p) * 2, ix[4], iy[4];
            double wx[4], wy[4];
            int nx = 0, ny = 0;
            if (plane > 0) {
                nx = gs_taps(&ax, &a, nn_load_f64(in[1], gt, gi), ix, wx);
                ny = gs_taps(&ay, &a, nn_load_f64(in[1], gt, gi + 1), iy, wy);
            }
            for (int64_t c = 0; c < C; c++) {
                int64_t base = (b * C + c) * plane;
                /* an empty image (H or W = 0) has no taps and samples as zeros */
                double v = plane > 0 && (nx == 0 || ny == 0) ? NAN : 0;
                for (int j = 0; j < ny; j++) {
                    double row = 0;
                    for (int i = 0; i < nx; i++)
                        if (ix[i] >= 0 && iy[j] >= 0)
                            row += wx[i] * nn_load_f64(in[0], xt, base + iy[j] * W + ix[i]);
                    v += wy[j] * row;
                }
                nn_store_f64(out[0], xt, (b * C + c) * opl + p, v);
            }
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_grid_sample = {grid_sample_infer, grid_sample_run, NULL, 0};
