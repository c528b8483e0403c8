/* Face swap quality metrics (eval_swap.h): background change outside rectangles, PSNR,
 * landmark jitter with the face's own motion removed, and the mesh swapper's region of
 * interest. Plain loops over images and point arrays; `facefuse eval swap` runs the
 * swapper and the analysis models and hands their outputs here. */
#include <math.h>
#include <string.h>

#include "eval_swap.h"
#include "swap/mesh_internal.h"

/* mesh.c's margin around the oval's bounding box (MESH_ROI_MARGIN, private to it; the
 * number is part of mesh_swap_face's documented contract in mesh_internal.h) */
#define EVAL_MESH_ROI_MARGIN 2

static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int swapeval_mesh_roi(const ffu_face *target, int width, int height, swapeval_rect *roi)
{
    swapeval_rect empty = {0, 0, 0, 0};
    if (roi)
        *roi = empty;
    if (!target || !roi || target->num_landmarks < MESH_N || !target->landmarks || width < 1 ||
        height < 1)
        return 0;
    float b[4];
    float ow = mesh_oval_bounds(target->landmarks, b);
    if (!(ow >= 0) || !isfinite(b[1]) || !isfinite(b[3]))
        return 0;
    float fw = (float)width, fh = (float)height;
    if (b[2] < 0 || b[3] < 0 || b[0] > fw || b[1] > fh)
        return 0;
    int x0 = (int)floorf(clampf(b[0], 0, fw)) - EVAL_MESH_ROI_MARGIN;
    int y0 = (int)floorf(clampf(b[1], 0, fh)) - EVAL_MESH_ROI_MARGIN;
    int x1 = (int)ceilf(clampf(b[2], 0, fw)) + EVAL_MESH_ROI_MARGIN;
    int y1 = (int)ceilf(clampf(b[3], 0, fh)) + EVAL_MESH_ROI_MARGIN;
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > width ? width : x1, y1 = y1 > height ? height : y1;
    if (x1 <= x0 || y1 <= y0)
        return 0;
    roi->x0 = x0, roi->y0 = y0, roi->x1 = x1, roi->y1 = y1;
    return 1;
}

swapeval_rect swapeval_rect_union(swapeval_rect a, swapeval_rect b)
{
    if (a.x1 <= a.x0 || a.y1 <= a.y0)
        return b;
    if (b.x1 <= b.x0 || b.y1 <= b.y0)
        return a;
    swapeval_rect r = {a.x0 < b.x0 ? a.x0 : b.x0, a.y0 < b.y0 ? a.y0 : b.y0,
                       a.x1 > b.x1 ? a.x1 : b.x1, a.y1 > b.y1 ? a.y1 : b.y1};
    return r;
}

swapeval_rect swapeval_box_rect(const float box[4], int width, int height)
{
    swapeval_rect r = {0, 0, 0, 0};
    if (!box || !isfinite(box[0]) || !isfinite(box[1]) || !isfinite(box[2]) ||
        !isfinite(box[3]) || width < 1 || height < 1)
        return r;
    float fw = (float)width, fh = (float)height;
    r.x0 = (int)floorf(clampf(box[0], 0, fw));
    r.y0 = (int)floorf(clampf(box[1], 0, fh));
    r.x1 = (int)ceilf(clampf(box[0] + box[2], 0, fw));
    r.y1 = (int)ceilf(clampf(box[1] + box[3], 0, fh));
    if (r.x1 <= r.x0 || r.y1 <= r.y0)
        r.x0 = r.y0 = r.x1 = r.y1 = 0;
    return r;
}

double swapeval_psnr(double sse, int64_t values)
{
    if (values <= 0)
        return NAN;
    if (!(sse > 0))
        return INFINITY;
    double mse = sse / (double)values;
    return 10.0 * log10(255.0 * 255.0 / mse);
}

static int inside_any(const swapeval_rect *r, int n, int x, int y)
{
    for (int i = 0; i < n; i++)
        if (x >= r[i].x0 && x < r[i].x1 && y >= r[i].y0 && y < r[i].y1)
            return 1;
    return 0;
}

ffu_status swapeval_diff_outside(const ffu_image *a, const ffu_image *b,
                                 const swapeval_rect *rects, int n, swapeval_diff *out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "swap eval: NULL output");
    memset(out, 0, sizeof *out);
    if (!a || !b || !a->data[0] || !b->data[0] || n < 0 || (n > 0 && !rects))
        return ffu_error_set(FFU_ERR_INVALID, "swap eval: diff needs two images");
    if (a->fmt != b->fmt || a->width != b->width || a->height != b->height)
        return ffu_error_set(FFU_ERR_INVALID, "swap eval: images differ in size or format "
                                              "(%dx%d %s, %dx%d %s)", a->width, a->height,
                             ffu_pixfmt_name(a->fmt), b->width, b->height,
                             ffu_pixfmt_name(b->fmt));
    int ch = a->fmt == FFU_PIX_GRAY8 ? 1 : a->fmt == FFU_PIX_RGBA32 ? 4
             : (a->fmt == FFU_PIX_RGB24 || a->fmt == FFU_PIX_BGR24) ? 3 : 0;
    if (!ch)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "swap eval: diff of %s images",
                             ffu_pixfmt_name(a->fmt));
    int64_t pixels = 0, changed = 0;
    double sse = 0;
    for (int y = 0; y < a->height; y++) {
        const uint8_t *p = a->data[0] + (size_t)y * a->stride[0];
        const uint8_t *q = b->data[0] + (size_t)y * b->stride[0];
        for (int x = 0; x < a->width; x++, p += ch, q += ch) {
            if (n && inside_any(rects, n, x, y))
                continue;
            pixels++;
            int diff = 0;
            for (int c = 0; c < ch; c++) {
                int d = (int)p[c] - (int)q[c];
                diff |= d;
                sse += (double)(d * d);
            }
            changed += diff != 0;
        }
    }
    out->pixels = pixels;
    out->changed = changed;
    out->sse = sse;
    out->mse = pixels ? sse / ((double)pixels * ch) : 0;
    out->psnr = pixels ? swapeval_psnr(sse, pixels * ch) : NAN;
    return FFU_OK;
}

/* Mean distance of c_i from the least-squares affine image of p_i (affine = 0: from p_i
 * itself). Centred coordinates keep the 2x2 normal equations well conditioned. */
static double pair_motion(const float *p, const float *c, int n, int affine)
{
    double pmx = 0, pmy = 0, cmx = 0, cmy = 0;
    for (int i = 0; i < n; i++) {
        pmx += p[2 * i], pmy += p[2 * i + 1];
        cmx += c[2 * i], cmy += c[2 * i + 1];
    }
    pmx /= n, pmy /= n, cmx /= n, cmy /= n;
    /* A = (sum c' p'^T) (sum p' p'^T)^-1; identity when not affine or degenerate */
    double a = 1, b = 0, d = 0, e = 1, tx = 0, ty = 0;
    if (affine) {
        double sxx = 0, sxy = 0, syy = 0, cxx = 0, cxy = 0, cyx = 0, cyy = 0;
        for (int i = 0; i < n; i++) {
            double px = p[2 * i] - pmx, py = p[2 * i + 1] - pmy;
            double qx = c[2 * i] - cmx, qy = c[2 * i + 1] - cmy;
            sxx += px * px, sxy += px * py, syy += py * py;
            cxx += qx * px, cxy += qx * py, cyx += qy * px, cyy += qy * py;
        }
        double det = sxx * syy - sxy * sxy;
        if (fabs(det) > 1e-9 * (sxx * syy + 1e-30)) {
            a = (cxx * syy - cxy * sxy) / det;
            b = (cxy * sxx - cxx * sxy) / det;
            d = (cyx * syy - cyy * sxy) / det;
            e = (cyy * sxx - cyx * sxy) / det;
        }
        tx = cmx, ty = cmy;
    } else {
        tx = pmx, ty = pmy; /* plain displacement: c - p */
    }
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double px = p[2 * i] - pmx, py = p[2 * i + 1] - pmy;
        double fx = a * px + b * py + tx, fy = d * px + e * py + ty;
        sum += hypot(c[2 * i] - fx, c[2 * i + 1] - fy);
    }
    return sum / n;
}

static int frame_ok(const float *f)
{
    return isfinite(f[0]);
}

ffu_status swapeval_jitter_measure(const float *pts, int frames, int npts, swapeval_jitter *out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "swap eval: NULL output");
    memset(out, 0, sizeof *out);
    if (!pts || frames < 0 || npts < 3)
        return ffu_error_set(FFU_ERR_INVALID, "swap eval: jitter needs frames of at least 3 "
                                              "points (%d)", npts);
    double raw = 0, res = 0;
    int pairs = 0;
    size_t stride = 2 * (size_t)npts;
    for (int t = 1; t < frames; t++) {
        const float *p = pts + (size_t)(t - 1) * stride, *c = pts + (size_t)t * stride;
        if (!frame_ok(p) || !frame_ok(c))
            continue;
        raw += pair_motion(p, c, npts, 0);
        res += pair_motion(p, c, npts, 1);
        pairs++;
    }
    out->pairs = pairs;
    out->raw = pairs ? raw / pairs : NAN;
    out->residual = pairs ? res / pairs : NAN;
    return FFU_OK;
}

double swapeval_excess_motion(const float *a, const float *b, int frames, int npts, int *pairs)
{
    if (pairs)
        *pairs = 0;
    if (!a || !b || frames < 2 || npts < 1)
        return NAN;
    size_t stride = 2 * (size_t)npts;
    double sum = 0;
    int np = 0;
    for (int t = 1; t < frames; t++) {
        const float *a0 = a + (size_t)(t - 1) * stride, *a1 = a + (size_t)t * stride;
        const float *b0 = b + (size_t)(t - 1) * stride, *b1 = b + (size_t)t * stride;
        if (!frame_ok(a0) || !frame_ok(a1) || !frame_ok(b0) || !frame_ok(b1))
            continue;
        double s = 0;
        for (int i = 0; i < npts; i++) {
            double dx = (double)(a1[2 * i] - a0[2 * i]) - (double)(b1[2 * i] - b0[2 * i]);
            double dy = (double)(a1[2 * i + 1] - a0[2 * i + 1]) -
                        (double)(b1[2 * i + 1] - b0[2 * i + 1]);
            s += hypot(dx, dy);
        }
        sum += s / npts;
        np++;
    }
    if (pairs)
        *pairs = np;
    return np ? sum / np : NAN;
}
