/* Normalisation between u8 images and f32 model tensors: every network input goes
 * through ffu_image_to_tensor, and generated faces (swapper, enhancer outputs) come back
 * through ffu_tensor_to_image. The formula is out = (pixel - mean) * scale, per tensor
 * channel; see image.h for the channel order rules. */
#include <string.h>

#include "facefuse/image.h"

/* BT.601 luma weights, also used by the colour conversions. */
#define LUMA_R 0.299f
#define LUMA_G 0.587f
#define LUMA_B 0.114f

ffu_status ffu_norm_preset(ffu_norm_params *p, const char *name)
{
    static const struct {
        const char *name;
        float mean[3], scale[3];
    } presets[] = {
        {"unit", {0, 0, 0}, {1 / 255.f, 1 / 255.f, 1 / 255.f}},
        {"symmetric", {127.5f, 127.5f, 127.5f}, {1 / 127.5f, 1 / 127.5f, 1 / 127.5f}},
        {"imagenet",
         {0.485f * 255, 0.456f * 255, 0.406f * 255},
         {1 / (0.229f * 255), 1 / (0.224f * 255), 1 / (0.225f * 255)}},
        {"raw", {0, 0, 0}, {1, 1, 1}},
    };
    if (!p) return ffu_error_set(FFU_ERR_INVALID, "norm preset: NULL params");
    memset(p, 0, sizeof *p);
    for (size_t i = 0; name && i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(name, presets[i].name) != 0) continue;
        memcpy(p->mean, presets[i].mean, sizeof p->mean);
        memcpy(p->scale, presets[i].scale, sizeof p->scale);
        return FFU_OK;
    }
    return ffu_error_set(FFU_ERR_INVALID,
                         "unknown normalisation preset \"%s\" (unit, symmetric, imagenet, raw)",
                         name ? name : "(null)");
}

static int colour_fmt(ffu_pixfmt f)
{
    return f == FFU_PIX_RGB24 || f == FFU_PIX_BGR24 || f == FFU_PIX_RGBA32;
}

/* Checks what both directions share: formats, sizes, layout and the batch slot. */
static ffu_status check(const ffu_image *img, const ffu_norm_params *p, const ffu_tensor_view *t,
                        int b, const char *what)
{
    if (!img || !p || !t || !t->data || !img->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "%s: NULL argument", what);
    if (!colour_fmt(img->fmt) && img->fmt != FFU_PIX_GRAY8)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: %s images are not supported", what,
                             ffu_pixfmt_name(img->fmt));
    if (t->layout != FFU_LAYOUT_NCHW && t->layout != FFU_LAYOUT_NHWC)
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad tensor layout %d", what, (int)t->layout);
    if (t->w != img->width || t->h != img->height)
        return ffu_error_set(FFU_ERR_INVALID, "%s: image %dx%d but tensor %dx%d", what, img->width,
                             img->height, t->w, t->h);
    if (b < 0 || b >= t->n)
        return ffu_error_set(FFU_ERR_INVALID, "%s: batch index %d outside 0..%d", what, b,
                             t->n - 1);
    if (t->c != 1 && t->c != 3)
        return ffu_error_set(FFU_ERR_INVALID, "%s: tensor has %d channels, need 1 or 3", what,
                             t->c);
    return FFU_OK;
}

/* Byte offset of red and blue within a pixel. */
static void rb_offsets(ffu_pixfmt f, int *r, int *b)
{
    *r = f == FFU_PIX_BGR24 ? 2 : 0;
    *b = 2 - *r;
}

/* The common case of every TF.js face model: 3-byte pixels in tensor channel order into
 * an NHWC tensor, i.e. each row is one run of 3W values whose mean and scale repeat
 * every 3. Blocks of 48 (a multiple of 3 and of the vector width) take the pattern
 * from a table, so the loop vectorises; the arithmetic is the general loop's. */
static ffu_status rows_nhwc3(const ffu_image *img, const ffu_norm_params *p,
                             ffu_tensor_view *t, int b)
{
    enum { BLOCK = 48 };
    float pm[BLOCK], ps[BLOCK];
    for (int j = 0; j < BLOCK; j++) pm[j] = p->mean[j % 3], ps[j] = p->scale[j % 3];
    size_t n = (size_t)img->width * 3;
    for (int y = 0; y < img->height; y++) {
        const uint8_t *in = img->data[0] + (size_t)y * img->stride[0];
        float *o = ffu_tensor_at(t, b, 0, y, 0);
        size_t k = 0;
        for (; k + BLOCK <= n; k += BLOCK)
            for (int j = 0; j < BLOCK; j++) o[k + j] = ((float)in[k + j] - pm[j]) * ps[j];
        for (; k < n; k++) o[k] = ((float)in[k] - pm[k % BLOCK]) * ps[k % BLOCK];
    }
    return FFU_OK;
}

ffu_status ffu_image_to_tensor(const ffu_image *img, const ffu_norm_params *p, ffu_tensor_view *t,
                               int batch_index)
{
    ffu_status st = check(img, p, t, batch_index, "image_to_tensor");
    if (st < 0) return st;
    int colour = colour_fmt(img->fmt), luma = colour && p->gray;
    int want = colour && !p->gray ? 3 : 1;
    if (t->c != want && !(img->fmt == FFU_PIX_GRAY8 && t->c == 3))
        return ffu_error_set(FFU_ERR_INVALID,
                             "image_to_tensor: %s%s input needs %d channels, "
                             "tensor has %d",
                             ffu_pixfmt_name(img->fmt), luma ? " (gray)" : "", want, t->c);
    int W = img->width, H = img->height, C = t->c, bpp = ffu_pixfmt_bpp(img->fmt);
    int ro, bo;
    rb_offsets(img->fmt, &ro, &bo);
    /* Byte offset inside a pixel feeding each tensor channel. */
    int off[3] = {0, 0, 0};
    if (colour && C == 3)
        for (int c = 0; c < 3; c++)
            off[c] = p->swap_rb ? 2 - c : c;
    size_t xstep = t->layout == FFU_LAYOUT_NCHW ? 1 : (size_t)C;
    if (t->layout == FFU_LAYOUT_NHWC && C == 3 && bpp == 3 && !luma && !p->swap_rb)
        return rows_nhwc3(img, p, t, batch_index);
    for (int y = 0; y < H; y++) {
        const uint8_t *row = img->data[0] + (size_t)y * img->stride[0];
        for (int c = 0; c < C; c++) {
            float *o = ffu_tensor_at(t, batch_index, c, y, 0);
            float m = p->mean[c], s = p->scale[c];
            if (luma) {
                for (int x = 0; x < W; x++) {
                    const uint8_t *px = row + (size_t)x * bpp;
                    float v = LUMA_R * px[ro] + LUMA_G * px[1] + LUMA_B * px[bo];
                    o[x * xstep] = (v - m) * s;
                }
            } else {
                const uint8_t *in = row + off[c];
                for (int x = 0; x < W; x++)
                    o[x * xstep] = ((float)in[(size_t)x * bpp] - m) * s;
            }
        }
    }
    return FFU_OK;
}

static uint8_t to_u8(float v)
{
    if (!(v > 0.f)) return 0; /* also NaN */
    if (v >= 255.f) return 255;
    return (uint8_t)(v + 0.5f);
}

ffu_status ffu_tensor_to_image(const ffu_tensor_view *t, int batch_index, const ffu_norm_params *p,
                               ffu_image *img)
{
    ffu_status st = check(img, p, t, batch_index, "tensor_to_image");
    if (st < 0) return st;
    int C = t->c;
    float inv[3], mean[3];
    for (int c = 0; c < C; c++) {
        if (!(p->scale[c] != 0.f))
            return ffu_error_set(FFU_ERR_INVALID, "tensor_to_image: scale[%d] is zero", c);
        inv[c] = 1.f / p->scale[c];
        mean[c] = p->mean[c];
    }
    int W = img->width, H = img->height, bpp = ffu_pixfmt_bpp(img->fmt);
    /* Tensor channel feeding each byte of a pixel (GRAY8 from 3 channels: see luma). */
    int src_ch[3] = {0, 0, 0};
    if (C == 3)
        for (int k = 0; k < 3; k++)
            src_ch[k] = p->swap_rb ? 2 - k : k;
    size_t xstep = t->layout == FFU_LAYOUT_NCHW ? 1 : (size_t)C;
    for (int y = 0; y < H; y++) {
        uint8_t *row = img->data[0] + (size_t)y * img->stride[0];
        const float *in[3];
        for (int c = 0; c < C; c++)
            in[c] = ffu_tensor_at(t, batch_index, c, y, 0);
        for (int x = 0; x < W; x++) {
            uint8_t *px = row + (size_t)x * bpp;
            float v[3];
            for (int c = 0; c < C; c++)
                v[c] = in[c][x * xstep] * inv[c] + mean[c];
            if (img->fmt == FFU_PIX_GRAY8) {
                /* Tensor order is R,G,B, or B,G,R with swap_rb. */
                px[0] = to_u8(
                    C == 1 ? v[0] : LUMA_R * v[src_ch[0]] + LUMA_G * v[1] + LUMA_B * v[src_ch[2]]);
                continue;
            }
            for (int k = 0; k < 3; k++)
                px[k] = to_u8(v[src_ch[k]]);
            if (bpp == 4) px[3] = 255;
        }
    }
    return FFU_OK;
}
