/* Per-camera heatmap: where tracks spent their time. A float grid at a reduced
 * resolution collects a small Gaussian per track per update (separable, so a splat
 * costs two short exp tables and one small outer product), and renders to an RGB
 * image through a colour ramp. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "track_internal.h"

#define MAX_SIGMA 64.0f

struct ffu_heatmap {
    int fw, fh;      /* frame size */
    int w, h, scale; /* grid */
    float sigma;
    int radius;
    float *acc;
    float *gx, *gy; /* 2 * radius + 2 weights each */
};

ffu_status ffu_heatmap_create(int width, int height, int scale, float sigma, ffu_heatmap **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "heatmap: out is NULL");
    *out = NULL;
    if (scale == 0) scale = 8;
    if (sigma == 0) sigma = 1.5f;
    if (width <= 0 || height <= 0 || width > FFU_IMAGE_MAX_DIM || height > FFU_IMAGE_MAX_DIM)
        return ffu_error_set(FFU_ERR_INVALID, "heatmap: frame size %dx%d", width, height);
    if (scale < 1 || scale > 1024)
        return ffu_error_set(FFU_ERR_INVALID, "heatmap: scale %d", scale);
    if (!(sigma > 0 && sigma <= MAX_SIGMA))
        return ffu_error_set(FFU_ERR_INVALID, "heatmap: sigma %g not in (0, %g]", sigma, MAX_SIGMA);
    ffu_heatmap *h = calloc(1, sizeof *h);
    if (!h) return ffu_error_set(FFU_ERR_NOMEM, "heatmap: out of memory");
    h->fw = width;
    h->fh = height;
    h->scale = scale;
    h->w = (width + scale - 1) / scale;
    h->h = (height + scale - 1) / scale;
    h->sigma = sigma;
    h->radius = (int)ceilf(3 * sigma);
    h->acc = calloc((size_t)h->w * h->h, sizeof *h->acc);
    h->gx = malloc((size_t)(2 * h->radius + 2) * sizeof *h->gx);
    h->gy = malloc((size_t)(2 * h->radius + 2) * sizeof *h->gy);
    if (!h->acc || !h->gx || !h->gy) {
        ffu_heatmap_destroy(h);
        return ffu_error_set(FFU_ERR_NOMEM, "heatmap: %dx%d grid", (width + scale - 1) / scale,
                             (height + scale - 1) / scale);
    }
    *out = h;
    return FFU_OK;
}

void ffu_heatmap_destroy(ffu_heatmap *h)
{
    if (!h) return;
    free(h->acc);
    free(h->gx);
    free(h->gy);
    free(h);
}

void ffu_heatmap_reset(ffu_heatmap *h)
{
    if (h) memset(h->acc, 0, (size_t)h->w * h->h * sizeof *h->acc);
}

/* Fills g[0..n) for cells first..first+n-1 around centre c (cell units); returns the
 * first cell. Cell i's centre is at i + 0.5. */
static int kernel(const ffu_heatmap *h, float c, int limit, float *g, int *n)
{
    int first = (int)floorf(c) - h->radius, last = (int)floorf(c) + h->radius + 1;
    if (first < 0) first = 0;
    if (last > limit - 1) last = limit - 1;
    *n = last >= first ? last - first + 1 : 0;
    float k = -0.5f / (h->sigma * h->sigma);
    for (int i = 0; i < *n; i++) {
        float d = (float)(first + i) + 0.5f - c;
        g[i] = expf(k * d * d);
    }
    return first;
}

ffu_status ffu_heatmap_add(ffu_heatmap *h, float x, float y, float weight)
{
    if (!h) return ffu_error_set(FFU_ERR_INVALID, "heatmap: NULL");
    if (!isfinite(x) || !isfinite(y) || !isfinite(weight))
        return ffu_error_set(FFU_ERR_INVALID, "heatmap: point (%g, %g) weight %g", x, y, weight);
    float cx = x / (float)h->scale, cy = y / (float)h->scale;
    /* Far outside: nothing to warm (also keeps floorf away from int overflow). */
    if (cx < -h->radius - 1 || cy < -h->radius - 1 || cx > h->w + h->radius + 1 ||
        cy > h->h + h->radius + 1)
        return FFU_OK;
    int nx, ny;
    int x0 = kernel(h, cx, h->w, h->gx, &nx), y0 = kernel(h, cy, h->h, h->gy, &ny);
    for (int j = 0; j < ny; j++) {
        float *row = h->acc + (size_t)(y0 + j) * h->w + x0, wy = weight * h->gy[j];
        for (int i = 0; i < nx; i++)
            row[i] += wy * h->gx[i];
    }
    return FFU_OK;
}

ffu_status ffu_heatmap_add_tracks(ffu_heatmap *h, const ffu_tracker *t)
{
    if (!h || !t) return ffu_error_set(FFU_ERR_INVALID, "heatmap: NULL argument");
    for (int i = 0; i < t->ntracks; i++) {
        const track *tr = t->tracks[i];
        if (tr->state != FFU_TRACK_CONFIRMED || !tr->matched) continue;
        ffu_status st = ffu_heatmap_add(h, tr->last_xy[0], tr->last_xy[1], 1.0f);
        if (st < 0) return st;
    }
    return FFU_OK;
}

const float *ffu_heatmap_data(const ffu_heatmap *h, int *w, int *hgt)
{
    if (w) *w = h ? h->w : 0;
    if (hgt) *hgt = h ? h->h : 0;
    return h ? h->acc : NULL;
}

/* Colour ramp stops (value, r, g, b): dark for rare, hot for frequent. */
static const float ramp[][4] = {
    {0.00f, 0, 0, 0},     {0.30f, 0, 0, 255},     {0.60f, 255, 0, 0},
    {0.85f, 255, 255, 0}, {1.00f, 255, 255, 255},
};

static void colour(float v, uint8_t *px)
{
    int n = (int)(sizeof ramp / sizeof ramp[0]);
    if (!(v > 0)) v = 0;
    if (v > 1) v = 1;
    int k = 1;
    while (k < n - 1 && v > ramp[k][0])
        k++;
    float a = (v - ramp[k - 1][0]) / (ramp[k][0] - ramp[k - 1][0]);
    for (int c = 0; c < 3; c++)
        px[c] = (uint8_t)lrintf(ramp[k - 1][c + 1] + a * (ramp[k][c + 1] - ramp[k - 1][c + 1]));
}

ffu_status ffu_heatmap_render(const ffu_heatmap *h, ffu_image *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!h || !out) return ffu_error_set(FFU_ERR_INVALID, "heatmap: NULL argument");
    ffu_status st = ffu_image_create(out, FFU_PIX_RGB24, h->w, h->h);
    if (st < 0) return st;
    float mx = 0;
    size_t n = (size_t)h->w * h->h;
    for (size_t i = 0; i < n; i++)
        mx = fmaxf(mx, h->acc[i]);
    float inv = mx > 0 ? 1.0f / mx : 0.0f;
    for (int y = 0; y < h->h; y++) {
        uint8_t *row = out->data[0] + (size_t)y * out->stride[0];
        for (int x = 0; x < h->w; x++)
            colour(h->acc[(size_t)y * h->w + x] * inv, row + 3 * x);
    }
    return FFU_OK;
}
