/* Colour matching for face swaps: sRGB <-> CIE L*a*b* (D65) and Reinhard-style
 * statistics transfer (E. Reinhard et al., "Color Transfer between Images", 2001): each
 * channel of a region is shifted and scaled so its mean and standard deviation become
 * those of a reference region. Lab keeps lightness apart from colour, so a face takes
 * the target's skin tone and lighting without tinting; the RGB variant is the cheap
 * fallback (one lookup table per channel).
 *
 * Conversions follow the usual definitions with OpenCV's float constants: sRGB gamma,
 * the sRGB/D65 matrix, white point Xn = 0.950456, Zn = 1.088754; L in 0..100, a and b
 * roughly -128..127. Gamma decoding is a 256-entry table, encoding a 4096-interval
 * linear-interpolated table (error below 0.01 level), both built once under
 * pthread_once and read-only afterwards. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "facefuse/image.h"

#define ENC_N 4096

typedef struct {
    float lin[256];       /* sRGB byte -> linear 0..1 */
    float enc[ENC_N + 2]; /* linear i / ENC_N -> sRGB 0..255 (float) */
    float fwd[9], inv[9]; /* linear RGB -> XYZ / white, and back */
} colour_tables;

static colour_tables g_tab;
static pthread_once_t g_tab_once = PTHREAD_ONCE_INIT;

static const double XN = 0.950456, ZN = 1.088754;

static void tables_init(void)
{
    for (int i = 0; i < 256; i++) {
        double s = i / 255.0;
        g_tab.lin[i] = (float)(s <= 0.04045 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4));
    }
    for (int i = 0; i <= ENC_N + 1; i++) {
        double l = (double)(i > ENC_N ? ENC_N : i) / ENC_N;
        double s = l <= 0.0031308 ? 12.92 * l : 1.055 * pow(l, 1 / 2.4) - 0.055;
        g_tab.enc[i] = (float)(s * 255.0);
    }
    const double m[9] = {0.412453, 0.357580, 0.180423, 0.212671, 0.715160,
                         0.072169, 0.019334, 0.119193, 0.950227};
    double a[9];
    for (int k = 0; k < 3; k++) { /* fold the white point into the rows */
        double wn = k == 0 ? XN : k == 2 ? ZN : 1.0;
        for (int j = 0; j < 3; j++)
            a[3 * k + j] = m[3 * k + j] / wn;
    }
    double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
                 a[2] * (a[3] * a[7] - a[4] * a[6]);
    double inv[9] = {
        a[4] * a[8] - a[5] * a[7], a[2] * a[7] - a[1] * a[8], a[1] * a[5] - a[2] * a[4],
        a[5] * a[6] - a[3] * a[8], a[0] * a[8] - a[2] * a[6], a[2] * a[3] - a[0] * a[5],
        a[3] * a[7] - a[4] * a[6], a[1] * a[6] - a[0] * a[7], a[0] * a[4] - a[1] * a[3]};
    for (int k = 0; k < 9; k++)
        g_tab.fwd[k] = (float)a[k], g_tab.inv[k] = (float)(inv[k] / det);
}

static const colour_tables *tables(void)
{
    pthread_once(&g_tab_once, tables_init);
    return &g_tab;
}

/* Lab's f(t) and its inverse, with the linear toe below (6/29)^3. */
static float lab_f(float t) { return t > 0.008856452f ? cbrtf(t) : t * 7.787037f + 16.0f / 116.0f; }

static float lab_finv(float t)
{
    return t > 0.20689656f ? t * t * t : (t - 16.0f / 116.0f) * (1.0f / 7.787037f);
}

static void rgb_to_lab(const colour_tables *T, int r, int g, int b, float lab[3])
{
    float R = T->lin[r], G = T->lin[g], B = T->lin[b];
    const float *m = T->fwd;
    float fx = lab_f(m[0] * R + m[1] * G + m[2] * B);
    float fy = lab_f(m[3] * R + m[4] * G + m[5] * B);
    float fz = lab_f(m[6] * R + m[7] * G + m[8] * B);
    lab[0] = 116.0f * fy - 16.0f;
    lab[1] = 500.0f * (fx - fy);
    lab[2] = 200.0f * (fy - fz);
}

static uint8_t encode(const colour_tables *T, float l)
{
    if (!(l > 0)) return 0; /* NaN too */
    if (l >= 1) return 255;
    float t = l * ENC_N;
    int i = (int)t;
    float v = T->enc[i] + (T->enc[i + 1] - T->enc[i]) * (t - (float)i);
    int q = (int)(v + 0.5f);
    return (uint8_t)(q > 255 ? 255 : q);
}

static void lab_to_rgb(const colour_tables *T, const float lab[3], uint8_t rgb[3])
{
    float fy = (lab[0] + 16.0f) * (1.0f / 116.0f);
    float fx = fy + lab[1] * (1.0f / 500.0f), fz = fy - lab[2] * (1.0f / 200.0f);
    float X = lab_finv(fx), Y = lab_finv(fy), Z = lab_finv(fz);
    const float *m = T->inv;
    rgb[0] = encode(T, m[0] * X + m[1] * Y + m[2] * Z);
    rgb[1] = encode(T, m[3] * X + m[4] * Y + m[5] * Z);
    rgb[2] = encode(T, m[6] * X + m[7] * Y + m[8] * Z);
}

void ffu_color_rgb_to_lab(const uint8_t rgb[3], float lab[3])
{
    rgb_to_lab(tables(), rgb[0], rgb[1], rgb[2], lab);
}

void ffu_color_lab_to_rgb(const float lab[3], uint8_t rgb[3]) { lab_to_rgb(tables(), lab, rgb); }

/* Byte offsets of R, G, B inside a pixel; 0 when the format has no colour. */
static int rgb_order(ffu_pixfmt f, int off[3])
{
    switch (f) {
    case FFU_PIX_RGB24:
    case FFU_PIX_RGBA32:
        off[0] = 0, off[1] = 1, off[2] = 2;
        return 1;
    case FFU_PIX_BGR24:
        off[0] = 2, off[1] = 1, off[2] = 0;
        return 1;
    default:
        return 0;
    }
}

static ffu_status check_colour(const ffu_image *img, const char *op, int off[3])
{
    if (!img || !rgb_order(img->fmt, off))
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: needs an RGB24, BGR24 or RGBA32 image, "
                             "got %s",
                             op, img ? ffu_pixfmt_name(img->fmt) : "NULL");
    int bpp = ffu_pixfmt_bpp(img->fmt);
    if (!img->data[0] || img->width <= 0 || img->height <= 0 || img->width > FFU_IMAGE_MAX_DIM ||
        img->height > FFU_IMAGE_MAX_DIM || img->stride[0] < img->width * bpp)
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad image %dx%d stride %d", op, img->width,
                             img->height, img->stride[0]);
    return FFU_OK;
}

ffu_status ffu_image_to_lab(const ffu_image *img, float *lab, int lab_stride)
{
    int off[3];
    ffu_status st = check_colour(img, "image_to_lab", off);
    if (st < 0) return st;
    if (!lab || lab_stride < 3 * img->width)
        return ffu_error_set(FFU_ERR_INVALID,
                             "image_to_lab: output stride %d floats < 3 x "
                             "width %d",
                             lab_stride, img->width);
    const colour_tables *T = tables();
    int bpp = ffu_pixfmt_bpp(img->fmt);
    for (int y = 0; y < img->height; y++) {
        const uint8_t *p = img->data[0] + (size_t)y * img->stride[0];
        float *o = lab + (size_t)y * lab_stride;
        for (int x = 0; x < img->width; x++, p += bpp)
            rgb_to_lab(T, p[off[0]], p[off[1]], p[off[2]], o + 3 * x);
    }
    return FFU_OK;
}

ffu_status ffu_image_from_lab(const float *lab, int lab_stride, ffu_image *img)
{
    int off[3];
    ffu_status st = check_colour(img, "image_from_lab", off);
    if (st < 0) return st;
    if (!lab || lab_stride < 3 * img->width)
        return ffu_error_set(FFU_ERR_INVALID,
                             "image_from_lab: input stride %d floats < 3 x "
                             "width %d",
                             lab_stride, img->width);
    const colour_tables *T = tables();
    int bpp = ffu_pixfmt_bpp(img->fmt);
    for (int y = 0; y < img->height; y++) {
        uint8_t *p = img->data[0] + (size_t)y * img->stride[0];
        const float *o = lab + (size_t)y * lab_stride;
        for (int x = 0; x < img->width; x++, p += bpp) {
            uint8_t rgb[3];
            lab_to_rgb(T, o + 3 * x, rgb);
            p[off[0]] = rgb[0], p[off[1]] = rgb[1], p[off[2]] = rgb[2];
            if (bpp == 4) p[3] = 255;
        }
    }
    return FFU_OK;
}

/* ---- statistics transfer --------------------------------------------------------------- */

ffu_status ffu_image_color_stats(const ffu_image *img, const ffu_image *mask, ffu_color_space space,
                                 ffu_color_stats *out)
{
    if (out) memset(out, 0, sizeof *out);
    int off[3];
    ffu_status st = check_colour(img, "color_stats", off);
    if (st < 0) return st;
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "color_stats: NULL output");
    if ((unsigned)space >= FFU_COLOR_SPACE_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "color_stats: unknown colour space %d", (int)space);
    if (mask && (mask->fmt != FFU_PIX_GRAY8 || !mask->data[0] || mask->width != img->width ||
                 mask->height != img->height))
        return ffu_error_set(FFU_ERR_INVALID, "color_stats: mask must be GRAY8 %dx%d", img->width,
                             img->height);
    const colour_tables *T = tables();
    int bpp = ffu_pixfmt_bpp(img->fmt);
    /* Weighted sums in double: a region of millions of pixels keeps full precision. */
    double sw = 0, s1[3] = {0}, s2[3] = {0};
    for (int y = 0; y < img->height; y++) {
        const uint8_t *p = img->data[0] + (size_t)y * img->stride[0];
        const uint8_t *m = mask ? mask->data[0] + (size_t)y * mask->stride[0] : NULL;
        for (int x = 0; x < img->width; x++, p += bpp) {
            double wgt = m ? m[x] / 255.0 : 1.0;
            if (wgt == 0) continue;
            float v[3];
            if (space == FFU_COLOR_LAB)
                rgb_to_lab(T, p[off[0]], p[off[1]], p[off[2]], v);
            else
                v[0] = p[off[0]], v[1] = p[off[1]], v[2] = p[off[2]];
            sw += wgt;
            for (int c = 0; c < 3; c++) {
                s1[c] += wgt * v[c];
                s2[c] += wgt * (double)v[c] * v[c];
            }
        }
    }
    if (sw <= 0) return ffu_error_set(FFU_ERR_INVALID, "color_stats: the mask selects no pixel");
    out->space = space;
    out->weight = sw;
    for (int c = 0; c < 3; c++) {
        double mean = s1[c] / sw, var = s2[c] / sw - mean * mean;
        out->mean[c] = mean;
        out->std[c] = var > 0 ? sqrt(var) : 0;
    }
    return FFU_OK;
}

/* Below this spread a region is flat: shift it, do not scale noise up. */
#define FLAT_STD 1e-3

ffu_status ffu_image_color_apply(ffu_image *img, const ffu_color_stats *cur,
                                 const ffu_color_stats *want)
{
    int off[3];
    ffu_status st = check_colour(img, "color_apply", off);
    if (st < 0) return st;
    if (!cur || !want || cur->space != want->space || (unsigned)cur->space >= FFU_COLOR_SPACE_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "color_apply: needs two statistics of one colour "
                                              "space");
    float scale[3], shift[3];
    for (int c = 0; c < 3; c++) {
        if (!isfinite(cur->mean[c]) || !isfinite(cur->std[c]) || !isfinite(want->mean[c]) ||
            !isfinite(want->std[c]) || cur->std[c] < 0 || want->std[c] < 0)
            return ffu_error_set(FFU_ERR_INVALID, "color_apply: statistics not finite");
        double k = cur->std[c] < FLAT_STD ? 1.0 : want->std[c] / cur->std[c];
        scale[c] = (float)k;
        shift[c] = (float)(want->mean[c] - cur->mean[c] * k);
    }
    int bpp = ffu_pixfmt_bpp(img->fmt);
    if (cur->space == FFU_COLOR_RGB) {
        uint8_t lut[3][256];
        for (int c = 0; c < 3; c++)
            for (int v = 0; v < 256; v++) {
                long q = lrintf((float)v * scale[c] + shift[c]);
                lut[c][v] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
            }
        for (int y = 0; y < img->height; y++) {
            uint8_t *p = img->data[0] + (size_t)y * img->stride[0];
            for (int x = 0; x < img->width; x++, p += bpp)
                for (int c = 0; c < 3; c++)
                    p[off[c]] = lut[c][p[off[c]]];
        }
        return FFU_OK;
    }
    const colour_tables *T = tables();
    for (int y = 0; y < img->height; y++) {
        uint8_t *p = img->data[0] + (size_t)y * img->stride[0];
        for (int x = 0; x < img->width; x++, p += bpp) {
            float lab[3];
            uint8_t rgb[3];
            rgb_to_lab(T, p[off[0]], p[off[1]], p[off[2]], lab);
            for (int c = 0; c < 3; c++)
                lab[c] = lab[c] * scale[c] + shift[c];
            lab_to_rgb(T, lab, rgb);
            p[off[0]] = rgb[0], p[off[1]] = rgb[1], p[off[2]] = rgb[2];
        }
    }
    return FFU_OK;
}

ffu_status ffu_image_color_transfer(ffu_image *img, const ffu_image *img_mask, const ffu_image *ref,
                                    const ffu_image *ref_mask, ffu_color_space space)
{
    ffu_color_stats cur, want;
    ffu_status st = ffu_image_color_stats(img, img_mask, space, &cur);
    if (st < 0) return st;
    if ((st = ffu_image_color_stats(ref, ref_mask, space, &want)) < 0) return st;
    return ffu_image_color_apply(img, &cur, &want);
}
