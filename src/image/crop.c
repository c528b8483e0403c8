/* Crops that may reach outside the image (padded with a fill colour) and plain pixel
 * copies between existing images. Face crops near the frame edge need the padding;
 * in-bounds crops can use ffu_image_view instead and copy nothing. */
#include <string.h>

#include "facefuse/image.h"

static int packed(const ffu_image *img)
{
    return img && img->data[0] && ffu_pixfmt_bpp(img->fmt) > 0 && img->width > 0 && img->height > 0;
}

static void fill_run(uint8_t *p, int count, const uint8_t *px, int bpp)
{
    if (bpp == 1) {
        memset(p, px[0], (size_t)count);
        return;
    }
    for (int i = 0; i < count; i++, p += bpp)
        memcpy(p, px, (size_t)bpp);
}

ffu_status ffu_image_crop_pad(const ffu_image *src, ffu_image *dst, int x, int y,
                              const uint8_t fill[4])
{
    if (!packed(src) || !packed(dst) || src->fmt != dst->fmt)
        return ffu_error_set(FFU_ERR_INVALID,
                             "crop_pad needs two packed images of one format "
                             "(got %s -> %s)",
                             ffu_pixfmt_name(src ? src->fmt : FFU_PIX_NONE),
                             ffu_pixfmt_name(dst ? dst->fmt : FFU_PIX_NONE));
    static const uint8_t zeros[4] = {0, 0, 0, 0};
    const uint8_t *px = fill ? fill : zeros;
    int bpp = ffu_pixfmt_bpp(src->fmt), w = dst->width;
    /* Columns of dst that see src: [c0, c1). 64-bit so x near INT_MIN/INT_MAX is fine. */
    long long c0 = -(long long)x, c1 = (long long)src->width - x;
    if (c0 < 0) c0 = 0;
    if (c1 > w) c1 = w;
    if (c1 < c0) c1 = c0 = 0;
    for (int r = 0; r < dst->height; r++) {
        uint8_t *out = dst->data[0] + (size_t)r * dst->stride[0];
        long long sy = (long long)y + r;
        if (sy < 0 || sy >= src->height || c0 == c1) {
            fill_run(out, w, px, bpp);
            continue;
        }
        const uint8_t *in = src->data[0] + (size_t)sy * src->stride[0];
        fill_run(out, (int)c0, px, bpp);
        memcpy(out + c0 * bpp, in + (c0 + x) * bpp, (size_t)(c1 - c0) * bpp);
        fill_run(out + c1 * bpp, (int)(w - c1), px, bpp);
    }
    return FFU_OK;
}

ffu_status ffu_image_copy(const ffu_image *src, ffu_image *dst)
{
    if (!src || !dst || !src->data[0] || !dst->data[0] || src->fmt != dst->fmt ||
        src->width != dst->width || src->height != dst->height)
        return ffu_error_set(FFU_ERR_INVALID, "image copy needs equal size and format");
    int w = src->width, h = src->height;
    int bytes[3] = {w * ffu_pixfmt_bpp(src->fmt), 0, 0}, rows[3] = {h, 0, 0};
    if (src->fmt == FFU_PIX_NV12) {
        bytes[0] = bytes[1] = w, rows[1] = h / 2;
    } else if (src->fmt == FFU_PIX_YUV420P) {
        bytes[0] = w, bytes[1] = bytes[2] = w / 2, rows[1] = rows[2] = h / 2;
    }
    if (bytes[0] <= 0) return ffu_error_set(FFU_ERR_INVALID, "image copy: bad format");
    for (int p = 0; p < 3 && rows[p]; p++) {
        if (!src->data[p] || !dst->data[p])
            return ffu_error_set(FFU_ERR_INVALID, "image copy: plane %d missing", p);
        for (int r = 0; r < rows[p]; r++)
            memmove(dst->data[p] + (size_t)r * dst->stride[p],
                    src->data[p] + (size_t)r * src->stride[p], (size_t)bytes[p]);
    }
    return FFU_OK;
}
