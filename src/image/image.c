/* The image type: allocation with dimension caps, borrowed views and wraps, deep
 * copies, and tensor element addressing. Owned pixels live in one ffu_buffer. */
#include <string.h>

#include "facefuse/image.h"
#include "image_internal.h"

static const struct {
    const char *name;
    int bpp;
} pixfmt_info[FFU_PIX_COUNT] = {
    [FFU_PIX_NONE] = {"none", 0},      [FFU_PIX_GRAY8] = {"gray8", 1},
    [FFU_PIX_RGB24] = {"rgb24", 3},    [FFU_PIX_BGR24] = {"bgr24", 3},
    [FFU_PIX_RGBA32] = {"rgba32", 4},  [FFU_PIX_NV12] = {"nv12", 0},
    [FFU_PIX_YUV420P] = {"yuv420p", 0},
};
_Static_assert(FFU_PIX_COUNT == 7, "pixfmt_info must list every pixel format");

const char *ffu_pixfmt_name(ffu_pixfmt fmt)
{
    return (unsigned)fmt < FFU_PIX_COUNT ? pixfmt_info[fmt].name : "invalid";
}

int ffu_pixfmt_bpp(ffu_pixfmt fmt)
{
    return (unsigned)fmt < FFU_PIX_COUNT ? pixfmt_info[fmt].bpp : 0;
}

static int is_planar(ffu_pixfmt fmt) { return fmt == FFU_PIX_NV12 || fmt == FFU_PIX_YUV420P; }

static ffu_status check_dims(ffu_pixfmt fmt, int width, int height)
{
    if (fmt <= FFU_PIX_NONE || fmt >= FFU_PIX_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "invalid pixel format %d", (int)fmt);
    if (width <= 0 || height <= 0)
        return ffu_error_set(FFU_ERR_INVALID, "invalid image size %dx%d", width, height);
    if (width > FFU_IMAGE_MAX_DIM || height > FFU_IMAGE_MAX_DIM ||
        (uint64_t)width * (uint64_t)height > FFU_IMAGE_MAX_PIXELS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "image %dx%d exceeds the %d px / %u Mpx cap",
                             width, height, FFU_IMAGE_MAX_DIM, FFU_IMAGE_MAX_PIXELS >> 20);
    if (is_planar(fmt) && ((width | height) & 1))
        return ffu_error_set(FFU_ERR_INVALID, "%s needs even dimensions, got %dx%d",
                             ffu_pixfmt_name(fmt), width, height);
    return FFU_OK;
}

static int align_up(int v, int a) { return (v + a - 1) / a * a; }

ffu_status image_plane_layout(ffu_pixfmt fmt, int width, int height, int align,
                              int strides[3], int rows[3], size_t *total)
{
    for (int p = 0; p < 3; p++) strides[p] = rows[p] = 0;
    *total = 0;
    ffu_status st = check_dims(fmt, width, height);
    if (st < 0) return st;
    if (fmt == FFU_PIX_NV12) {
        strides[0] = align_up(width, align), rows[0] = height;
        strides[1] = align_up(width, align), rows[1] = height / 2;
    } else if (fmt == FFU_PIX_YUV420P) {
        strides[0] = align_up(width, align), rows[0] = height;
        strides[1] = strides[2] = align_up(width / 2, align), rows[1] = rows[2] = height / 2;
    } else {
        strides[0] = align_up(width * ffu_pixfmt_bpp(fmt), align), rows[0] = height;
    }
    for (int p = 0; p < 3; p++) *total += (size_t)strides[p] * (size_t)rows[p];
    return FFU_OK;
}

ffu_status ffu_image_create(ffu_image *img, ffu_pixfmt fmt, int width, int height)
{
    memset(img, 0, sizeof *img);
    int strides[3], rows[3];
    size_t total;
    ffu_status st = image_plane_layout(fmt, width, height, 64, strides, rows, &total);
    if (st < 0) return st;
    ffu_buffer *buf;
    if ((st = ffu_buffer_create(&buf, total, 1)) < 0) return st;
    uint8_t *base = ffu_buffer_data(buf);
    for (int p = 0; p < 3 && strides[p]; p++) {
        img->data[p] = base;
        img->stride[p] = strides[p];
        base += (size_t)strides[p] * (size_t)rows[p];
    }
    img->fmt = fmt;
    img->width = width;
    img->height = height;
    img->owner = buf;
    return FFU_OK;
}

void ffu_image_release(ffu_image *img)
{
    if (!img) return;
    ffu_buffer *buf = img->owner;
    ffu_buffer_unref(&buf);
    memset(img, 0, sizeof *img);
}

ffu_status ffu_image_wrap(ffu_image *img, ffu_pixfmt fmt, int width, int height, void *data,
                          int stride)
{
    memset(img, 0, sizeof *img);
    ffu_status st = check_dims(fmt, width, height);
    if (st < 0) return st;
    if (is_planar(fmt) || !data || stride < width * ffu_pixfmt_bpp(fmt))
        return ffu_error_set(FFU_ERR_INVALID, "cannot wrap %s %dx%d with stride %d",
                             ffu_pixfmt_name(fmt), width, height, stride);
    img->fmt = fmt;
    img->width = width;
    img->height = height;
    img->data[0] = data;
    img->stride[0] = stride;
    return FFU_OK;
}

ffu_status ffu_image_view(ffu_image *view, const ffu_image *src, int x, int y, int width,
                          int height)
{
    ffu_image v = {0};
    if (x < 0 || y < 0 || width <= 0 || height <= 0 || x > src->width - width ||
        y > src->height - height)
        return ffu_error_set(FFU_ERR_INVALID, "view %dx%d+%d+%d outside %dx%d image", width,
                             height, x, y, src->width, src->height);
    v.fmt = src->fmt;
    v.width = width;
    v.height = height;
    if (is_planar(src->fmt)) {
        if ((x | y | width | height) & 1)
            return ffu_error_set(FFU_ERR_INVALID, "planar views need even offsets and sizes");
        v.data[0] = src->data[0] + (size_t)y * src->stride[0] + x;
        v.stride[0] = src->stride[0];
        if (src->fmt == FFU_PIX_NV12) {
            v.data[1] = src->data[1] + (size_t)(y / 2) * src->stride[1] + x;
            v.stride[1] = src->stride[1];
        } else {
            for (int p = 1; p < 3; p++) {
                v.data[p] = src->data[p] + (size_t)(y / 2) * src->stride[p] + x / 2;
                v.stride[p] = src->stride[p];
            }
        }
    } else {
        v.data[0] = src->data[0] + (size_t)y * src->stride[0] + (size_t)x * ffu_pixfmt_bpp(src->fmt);
        v.stride[0] = src->stride[0];
    }
    *view = v;
    return FFU_OK;
}

static void copy_plane(uint8_t *dst, int dstride, const uint8_t *src, int sstride, int bytes,
                       int rows)
{
    for (int y = 0; y < rows; y++)
        memcpy(dst + (size_t)y * dstride, src + (size_t)y * sstride, (size_t)bytes);
}

ffu_status ffu_image_clone(ffu_image *dst, const ffu_image *src)
{
    ffu_status st = ffu_image_create(dst, src->fmt, src->width, src->height);
    if (st < 0) return st;
    int w = src->width, h = src->height;
    switch (src->fmt) {
    case FFU_PIX_NV12:
        copy_plane(dst->data[0], dst->stride[0], src->data[0], src->stride[0], w, h);
        copy_plane(dst->data[1], dst->stride[1], src->data[1], src->stride[1], w, h / 2);
        break;
    case FFU_PIX_YUV420P:
        copy_plane(dst->data[0], dst->stride[0], src->data[0], src->stride[0], w, h);
        for (int p = 1; p < 3; p++)
            copy_plane(dst->data[p], dst->stride[p], src->data[p], src->stride[p], w / 2, h / 2);
        break;
    default:
        copy_plane(dst->data[0], dst->stride[0], src->data[0], src->stride[0],
                   w * ffu_pixfmt_bpp(src->fmt), h);
    }
    return FFU_OK;
}

float *ffu_tensor_at(const ffu_tensor_view *t, int b, int ch, int y, int x)
{
    size_t i = t->layout == FFU_LAYOUT_NCHW
                   ? (((size_t)b * t->c + ch) * t->h + y) * t->w + x
                   : (((size_t)b * t->h + y) * t->w + x) * t->c + ch;
    return t->data + i;
}
