/* Crop-space masks and paste-back: the last step of every crop-based swap (ONNX
 * swappers, enhancers). A network works on an aligned size x size crop; its output is
 * warped back into the frame through the inverse of the alignment and blended through
 * a crop-space mask, touching only the crop's footprint in the frame (the ROI) so the
 * rest of the frame stays byte-identical.
 *
 * The box mask follows FaceFusion's static box mask (facts from MODELS.md and its
 * behaviour): blur amount B = int(0.5 * size * blur), a zeroed margin on each side of
 * max(B / 2 (at least 1), padding% of size), then a Gaussian of sigma B / 4 with
 * OpenCV's float-image kernel (size round(8 sigma + 1) made odd, reflect-101 borders).
 * A box is separable, so the blurred mask is the outer product of two blurred 1-D
 * profiles: exact in float, any sigma, and no allocation up to 1024 pixels (the
 * profiles fit on the stack), so callers may rebuild it every frame.
 *
 * Paste-back warps and blends in one pass per ROI pixel (bilinear; the mask is zero
 * outside the crop, the crop's edge pixels are replicated), so it allocates nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swap_internal.h"

#define BOX_MAX_SIZE 4096

/* Reflect-101 index into [0, n): -1 -> 1, n -> n - 2, repeated for far indices. */
static int reflect101(int i, int n)
{
    if (n == 1)
        return 0;
    int period = 2 * (n - 1);
    i %= period;
    if (i < 0)
        i += period;
    return i < n ? i : period - i;
}

/* Masks up to this side are made with stack buffers only (no allocation per frame when
 * the caller rebuilds the mask every time); larger ones allocate. */
#define BOX_STACK_SIZE 1024

/* 1-D profile: 1 inside [lo, hi), 0 outside, blurred by a Gaussian of sigma (no blur
 * when sigma <= 0). out and tmp have n floats; w has room for the kernel
 * (round(8 sigma + 1) | 1 doubles). */
static void box_profile(int n, int lo, int hi, double sigma, float *out, float *tmp, double *w)
{
    for (int i = 0; i < n; i++)
        tmp[i] = i >= lo && i < hi ? 1.0f : 0.0f;
    if (!(sigma > 0)) {
        memcpy(out, tmp, (size_t)n * sizeof *out);
        return;
    }
    int ksize = (int)lround(sigma * 8 + 1) | 1;
    int r = ksize / 2;
    double sum = 0;
    for (int k = 0; k < ksize; k++) {
        double d = k - r;
        w[k] = exp(-d * d / (2 * sigma * sigma));
        sum += w[k];
    }
    for (int i = 0; i < n; i++) {
        double acc = 0;
        for (int k = 0; k < ksize; k++)
            acc += w[k] * tmp[reflect101(i + k - r, n)];
        out[i] = (float)(acc / sum);
    }
}

ffu_status swap_box_mask(int size, float blur, const float padding[4], ffu_image *mask)
{
    if (!mask)
        return ffu_error_set(FFU_ERR_INVALID, "swap_box_mask: mask is NULL");
    if (size < 1 || size > BOX_MAX_SIZE)
        return ffu_error_set(FFU_ERR_INVALID, "box mask size %d (want 1..%d)", size,
                             BOX_MAX_SIZE);
    if (!(blur >= 0 && blur <= 1))
        return ffu_error_set(FFU_ERR_INVALID, "box mask blur %g (want 0..1)", (double)blur);
    float pad[4] = {0, 0, 0, 0};
    for (int i = 0; padding && i < 4; i++) {
        if (!(padding[i] >= 0 && padding[i] <= 100))
            return ffu_error_set(FFU_ERR_INVALID, "box mask padding %g%% (want 0..100)",
                                 (double)padding[i]);
        pad[i] = padding[i];
    }
    if (!mask->data[0] || mask->fmt != FFU_PIX_GRAY8 || mask->width != size ||
        mask->height != size) {
        ffu_image_release(mask);
        ffu_status st = ffu_image_create(mask, FFU_PIX_GRAY8, size, size);
        if (st)
            return st;
    }
    int amount = (int)(size * 0.5 * blur);
    int area = amount / 2 > 1 ? amount / 2 : 1;
    int margin[4]; /* top, right, bottom, left */
    for (int i = 0; i < 4; i++) {
        int p = (int)(size * pad[i] / 100);
        margin[i] = p > area ? p : area;
    }
    /* sigma <= size / 8, so the kernel has at most size + 1 taps */
    double sigma = amount > 0 ? amount * 0.25 : 0;
    float sbuf[3 * BOX_STACK_SIZE];
    double swt[BOX_STACK_SIZE + 2];
    float *buf = sbuf;
    double *w = swt;
    void *heap = NULL;
    if (size > BOX_STACK_SIZE) {
        heap = malloc((size_t)size * 3 * sizeof *buf + (size_t)(size + 2) * sizeof *w);
        if (!heap)
            return ffu_error_set(FFU_ERR_NOMEM, "box mask profiles");
        w = heap;
        buf = (float *)(w + size + 2);
    }
    float *col = buf, *row = buf + size, *tmp = buf + 2 * size;
    box_profile(size, margin[0], size - margin[2], sigma, col, tmp, w); /* along y */
    box_profile(size, margin[3], size - margin[1], sigma, row, tmp, w); /* along x */
    for (int y = 0; y < size; y++) {
        uint8_t *p = mask->data[0] + (size_t)y * mask->stride[0];
        for (int x = 0; x < size; x++) {
            float v = col[y] * row[x] * 255.0f + 0.5f;
            p[x] = v >= 255 ? 255 : v <= 0 ? 0 : (uint8_t)v;
        }
    }
    free(heap);
    return FFU_OK;
}

ffu_status swap_mask_multiply(ffu_image *mask, const ffu_image *other)
{
    if (!mask || !other || !mask->data[0] || !other->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "swap_mask_multiply: missing mask");
    if (mask->fmt != FFU_PIX_GRAY8 || other->fmt != FFU_PIX_GRAY8)
        return ffu_error_set(FFU_ERR_INVALID, "swap_mask_multiply: masks are GRAY8, not %s/%s",
                             ffu_pixfmt_name(mask->fmt), ffu_pixfmt_name(other->fmt));
    if (mask->width != other->width || mask->height != other->height)
        return ffu_error_set(FFU_ERR_INVALID, "swap_mask_multiply: %dx%d vs %dx%d",
                             mask->width, mask->height, other->width, other->height);
    for (int y = 0; y < mask->height; y++) {
        uint8_t *a = mask->data[0] + (size_t)y * mask->stride[0];
        const uint8_t *b = other->data[0] + (size_t)y * other->stride[0];
        for (int x = 0; x < mask->width; x++)
            a[x] = (uint8_t)((a[x] * b[x] + 127) / 255);
    }
    return FFU_OK;
}

/* The crop's footprint in the frame: bounding box of the crop's corners mapped by inv
 * (crop -> frame, continuous coordinates), floor/ceil, clipped to the frame. Returns 0
 * when empty. */
static int paste_roi(const double inv[6], int size_w, int size_h, int fw, int fh, int roi[4])
{
    double cx[4] = {0, size_w, 0, size_w}, cy[4] = {0, 0, size_h, size_h};
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int i = 0; i < 4; i++) {
        double x = inv[0] * cx[i] + inv[1] * cy[i] + inv[2];
        double y = inv[3] * cx[i] + inv[4] * cy[i] + inv[5];
        x0 = fmin(x0, x);
        x1 = fmax(x1, x);
        y0 = fmin(y0, y);
        y1 = fmax(y1, y);
    }
    if (!(isfinite(x0) && isfinite(x1) && isfinite(y0) && isfinite(y1)))
        return 0;
    x0 = fmax(floor(x0), 0);
    y0 = fmax(floor(y0), 0);
    x1 = fmin(ceil(x1), fw);
    y1 = fmin(ceil(y1), fh);
    if (x0 >= x1 || y0 >= y1)
        return 0;
    roi[0] = (int)x0;
    roi[1] = (int)y0;
    roi[2] = (int)x1;
    roi[3] = (int)y1;
    return 1;
}

ffu_status swap_paste_back(ffu_image *frame, const ffu_image *crop, const double m[6],
                           const ffu_image *mask)
{
    if (!frame || !crop || !m || !mask || !frame->data[0] || !crop->data[0] || !mask->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "swap_paste_back: missing image");
    if (frame->fmt != crop->fmt ||
        (frame->fmt != FFU_PIX_RGB24 && frame->fmt != FFU_PIX_BGR24 &&
         frame->fmt != FFU_PIX_RGBA32))
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "paste-back takes a frame and crop of one packed colour format "
                             "(RGB24, BGR24, RGBA32), not %s and %s",
                             ffu_pixfmt_name(frame->fmt), ffu_pixfmt_name(crop->fmt));
    if (mask->fmt != FFU_PIX_GRAY8 || mask->width != crop->width ||
        mask->height != crop->height)
        return ffu_error_set(FFU_ERR_INVALID,
                             "paste-back mask must be GRAY8 %dx%d like the crop, not %s %dx%d",
                             crop->width, crop->height, ffu_pixfmt_name(mask->fmt),
                             mask->width, mask->height);
    for (int i = 0; i < 6; i++)
        if (!isfinite(m[i]))
            return ffu_error_set(FFU_ERR_INVALID, "paste-back transform is not finite");
    double inv[6];
    ffu_status st = ffu_affine_invert(m, inv);
    if (st)
        return st;
    int roi[4];
    if (!paste_roi(inv, crop->width, crop->height, frame->width, frame->height, roi))
        return FFU_OK; /* the crop lies outside the frame */
    const int bpp = ffu_pixfmt_bpp(frame->fmt), cw = crop->width, ch = crop->height;
    const int nc = bpp == 4 ? 3 : bpp; /* alpha of RGBA frames is kept */
    for (int y = roi[1]; y < roi[3]; y++) {
        uint8_t *f = frame->data[0] + (size_t)y * frame->stride[0];
        /* crop continuous position of the frame pixel centre, minus 0.5 = the crop's
         * pixel-centre coordinates that bilinear sampling indexes */
        double py = y + 0.5;
        double u = m[0] * (roi[0] + 0.5) + m[1] * py + m[2] - 0.5;
        double v = m[3] * (roi[0] + 0.5) + m[4] * py + m[5] - 0.5;
        for (int x = roi[0]; x < roi[2]; x++, u += m[0], v += m[3]) {
            if (u <= -1 || v <= -1 || u >= cw || v >= ch)
                continue; /* every tap outside the crop: mask 0 */
            int u0 = (int)floor(u), v0 = (int)floor(v);
            float fu = (float)(u - u0), fv = (float)(v - v0);
            float w[4] = {(1 - fu) * (1 - fv), fu * (1 - fv), (1 - fu) * fv, fu * fv};
            int xs[2] = {u0, u0 + 1}, ys[2] = {v0, v0 + 1};
            float a = 0;
            for (int k = 0; k < 4; k++) {
                int xx = xs[k & 1], yy = ys[k >> 1];
                if (xx >= 0 && xx < cw && yy >= 0 && yy < ch)
                    a += w[k] * mask->data[0][(size_t)yy * mask->stride[0] + xx];
            }
            a *= 1.0f / 255.0f;
            if (a <= 0.5f / 255.0f)
                continue; /* would round to the frame's own value */
            if (a > 1)
                a = 1;
            const uint8_t *p[4];
            for (int k = 0; k < 4; k++) {
                int xx = xs[k & 1], yy = ys[k >> 1]; /* replicate the crop's edge */
                xx = xx < 0 ? 0 : xx >= cw ? cw - 1 : xx;
                yy = yy < 0 ? 0 : yy >= ch ? ch - 1 : yy;
                p[k] = crop->data[0] + (size_t)yy * crop->stride[0] + (size_t)xx * bpp;
            }
            uint8_t *d = f + (size_t)x * bpp;
            for (int c = 0; c < nc; c++) {
                float s = w[0] * p[0][c] + w[1] * p[1][c] + w[2] * p[2][c] + w[3] * p[3][c];
                float o = d[c] * (1 - a) + s * a + 0.5f;
                d[c] = o >= 255 ? 255 : o <= 0 ? 0 : (uint8_t)o;
            }
        }
    }
    return FFU_OK;
}
