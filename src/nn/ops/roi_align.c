/* RoiAlign(X, rois, batch_indices): for each region of interest, an output_height x
 * output_width grid of bins over X's feature map, each bin the mean (or max) of
 * bilinear samples taken on a regular sub-grid inside it. Two-stage detectors and face
 * parsers that crop regions from a backbone's features carry it.
 *
 * The geometry is ONNX Runtime's (which is Detectron's): corners scaled by
 * spatial_scale and, with coordinate_transformation_mode "half_pixel" (opset 16's
 * default), shifted by half a pixel; with "output_half_pixel" (opset 10's behaviour) a
 * region is at least 1x1. sampling_ratio 0 takes ceil(region / output) samples per bin
 * side. A sample more than one pixel outside the map is 0; otherwise it is clamped to the
 * map and interpolated. "max" mode keeps, per bin, the largest of the four weighted
 * corner terms of any sample, as ONNX Runtime does. f32 only, computed in double. An
 * adaptive grid is capped at ROI_MAX_GRID samples a side (ONNX Runtime has no cap). */
#include <math.h>

#include "ops_internal.h"

#define ROI_MAX_GRID 1024

typedef struct roi_attrs {
    int max_mode, half_pixel;
    int64_t oh, ow, ratio;
    double scale;
} roi_attrs;

static ffu_status roi_read_attrs(const nn_node *n, roi_attrs *a)
{
    const char *mode = nn_attr_string(n, "mode", "avg");
    const char *ctm = nn_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "mode '%s' (avg or max)", mode);
    if (strcmp(ctm, "half_pixel") != 0 && strcmp(ctm, "output_half_pixel") != 0)
        return nn_node_error(
            n, FFU_ERR_UNSUPPORTED,
            "coordinate_transformation_mode '%s' (half_pixel or output_half_pixel)", ctm);
    a->max_mode = mode[0] == 'm';
    a->half_pixel = strcmp(ctm, "half_pixel") == 0;
    a->oh = nn_attr_int(n, "output_height", 1);
    a->ow = nn_attr_int(n, "output_width", 1);
    a->ratio = nn_attr_int(n, "sampling_ratio", 0);
    a->scale = nn_attr_float(n, "spatial_scale", 1.0f);
    if (a->oh < 1 || a->ow < 1 || a->oh > 4096 || a->ow > 4096 || a->ratio < 0 || a->ratio > 64)
        return nn_node_error(n, FFU_ERR_FORMAT, "output %lldx%lld, sampling_ratio %lld",
                             (long long)a->oh, (long long)a->ow, (long long)a->ratio);
    if (!isfinite(a->scale)) return nn_node_error(n, FFU_ERR_FORMAT, "spatial_scale is not finite");
    return FFU_OK;
}

static ffu_status roi_align_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 3, 3);
    if (st < 0) return st;
    roi_attrs a;
    if ((st = roi_read_attrs(n, &a)) < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *r = nn_in(g, n, 1), *b = nn_in(g, n, 2);
    if (x->dtype != FFU_DTYPE_F32 || r->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "X and rois must be f32");
    if (!nn_dtype_is_int(b->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "batch_indices is %s", ffu_dtype_name(b->dtype));
    if ((x->shape.rank >= 0 && x->shape.rank != 4) || (r->shape.rank >= 0 && r->shape.rank != 2) ||
        (b->shape.rank >= 0 && b->shape.rank != 1))
        return nn_node_error(n, FFU_ERR_FORMAT, "X must be 4-D, rois 2-D and batch_indices 1-D");
    if (x->shape.rank < 0 || r->shape.rank < 0) return nn_set_out(g, n, 0, FFU_DTYPE_F32, NULL);
    int64_t k = r->shape.d[0];
    if ((r->shape.d[1] >= 0 && r->shape.d[1] != 4) ||
        (b->shape.rank == 1 && k >= 0 && b->shape.d[0] >= 0 && b->shape.d[0] != k))
        return nn_node_error(n, FFU_ERR_FORMAT, "rois must be [k, 4] with k batch indices");
    nn_shape s = {.rank = 4, .d = {k, x->shape.d[1], a.oh, a.ow}};
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, &s);
}

/* One sample of channel map m (H x W) at (y, x): the four corner terms, or 0 outside. */
static void roi_sample(const float *m, int64_t H, int64_t W, double y, double x, double t[4])
{
    t[0] = t[1] = t[2] = t[3] = 0;
    if (y < -1.0 || y > (double)H || x < -1.0 || x > (double)W || H < 1 || W < 1) return;
    y = y < 0 ? 0 : y;
    x = x < 0 ? 0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= H - 1)
        y0 = y1 = H - 1, y = (double)y0;
    else
        y1 = y0 + 1;
    if (x0 >= W - 1)
        x0 = x1 = W - 1, x = (double)x0;
    else
        x1 = x0 + 1;
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    t[0] = hy * hx * m[y0 * W + x0];
    t[1] = hy * lx * m[y0 * W + x1];
    t[2] = ly * hx * m[y1 * W + x0];
    t[3] = ly * lx * m[y1 * W + x1];
}

static ffu_status roi_align_run(const nn_graph *g, const nn_node *n, void *const *in,
                                void *const *out, void *scratch)
{
    (void)scratch;
    roi_attrs a;
    ffu_status st = roi_read_attrs(n, &a);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *bt = nn_in(g, n, 2);
    const int64_t N = x->shape.d[0], C = x->shape.d[1], H = x->shape.d[2], W = x->shape.d[3];
    const int64_t K = nn_out(g, n, 0)->shape.d[0];
    const float *X = in[0], *rois = in[1];
    float *Y = out[0];
    const double off = a.half_pixel ? 0.5 : 0.0;
    for (int64_t k = 0; k < K; k++) {
        int64_t b = nn_load_int(in[2], bt->dtype, k);
        if (b < 0 || b >= N)
            return nn_node_error(n, FFU_ERR_FORMAT,
                                 "batch index %lld of roi %lld is outside 0..%lld", (long long)b,
                                 (long long)k, (long long)N - 1);
        const float *r = rois + k * 4;
        double x0 = r[0] * a.scale - off, y0 = r[1] * a.scale - off;
        double rw = r[2] * a.scale - off - x0, rh = r[3] * a.scale - off - y0;
        if (!a.half_pixel) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
        if (!isfinite(x0) || !isfinite(y0) || !isfinite(rw) || !isfinite(rh))
            return nn_node_error(n, FFU_ERR_FORMAT, "roi %lld is not finite", (long long)k);
        double bh = rh / (double)a.oh, bw = rw / (double)a.ow;
        /* samples per bin side: the ratio, or as many as the bin is wide; at most
         * ROI_MAX_GRID (a bin of a region 1024 times the output's size: no real map, and a
         * bound on what a hostile file can ask) */
        int64_t gh =
            a.ratio ? a.ratio : (int64_t)fmin(ROI_MAX_GRID, fmax(1, ceil(rh / (double)a.oh)));
        int64_t gw =
            a.ratio ? a.ratio : (int64_t)fmin(ROI_MAX_GRID, fmax(1, ceil(rw / (double)a.ow)));
        double count = (double)(gh * gw);
        for (int64_t c = 0; c < C; c++) {
            const float *m = X + (b * C + c) * H * W;
            float *y = Y + ((k * C + c) * a.oh) * a.ow;
            for (int64_t ph = 0; ph < a.oh; ph++)
                for (int64_t pw = 0; pw < a.ow; pw++) {
                    double acc = a.max_mode ? -INFINITY : 0, t[4];
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double sy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double sx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            roi_sample(m, H, W, sy, sx, t);
                            if (a.max_mode)
                                acc = fmax(acc, fmax(fmax(t[0], t[1]), fmax(t[2], t[3])));
                            else
                                acc += t[0] + t[1] + t[2] + t[3];
                        }
                    }
                    y[ph * a.ow + pw] = (float)(a.max_mode ? acc : acc / count);
                }
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_roi_align = {roi_align_infer, roi_align_run, NULL, 0};
