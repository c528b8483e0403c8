/* EXIF orientation: phones store photos as the sensor saw them and record in EXIF tag
 * 0x0112 how to turn them upright. Only that one tag is read, so the parser is small;
 * every offset comes from the file and is checked against the bytes we have. The
 * second half turns decoded pixels upright for orientations 2..8. */
#include <string.h>

#include "image/codec_internal.h"

static uint32_t rd16(const uint8_t *p, int le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : (uint32_t)p[0] << 8 | p[1];
}

static uint32_t rd32(const uint8_t *p, int le)
{
    return le ? rd16(p, 1) | rd16(p + 2, 1) << 16 : rd16(p, 0) << 16 | rd16(p + 2, 0);
}

int codec_exif_orientation_tiff(const uint8_t *t, size_t len)
{
    if (!t || len < 8) return 0;
    int le;
    if (t[0] == 'I' && t[1] == 'I')
        le = 1;
    else if (t[0] == 'M' && t[1] == 'M')
        le = 0;
    else
        return 0;
    if (rd16(t + 2, le) != 42) return 0;
    uint32_t ifd = rd32(t + 4, le);
    if (ifd < 8 || ifd > len - 2) return 0;
    size_t count = rd16(t + ifd, le);
    size_t pos = (size_t)ifd + 2;
    /* A directory cut short still yields the entries that are complete. */
    if (count > (len - pos) / 12) count = (len - pos) / 12;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *e = t + pos + 12 * i;
        if (rd16(e, le) != 0x0112) continue;
        uint32_t type = rd16(e + 2, le), n = rd32(e + 4, le);
        uint32_t v;
        if (type == 3 && n >= 1) /* SHORT, the type the standard prescribes */
            v = rd16(e + 8, le);
        else if (type == 4 && n >= 1) /* LONG, written by a few tools */
            v = rd32(e + 8, le);
        else
            return 0;
        return v >= 1 && v <= 8 ? (int)v : 0;
    }
    return 0;
}

int codec_exif_orientation_app1(const uint8_t *p, size_t len)
{
    if (!p || len < 6 || memcmp(p, "Exif\0\0", 6) != 0) return 0;
    return codec_exif_orientation_tiff(p + 6, len - 6);
}

int codec_exif_jpeg_orientation(const uint8_t *d, size_t size)
{
    if (!d || size < 4 || d[0] != 0xFF || d[1] != 0xD8) return 1;
    size_t p = 2;
    while (p + 4 <= size) {
        if (d[p] != 0xFF) return 1; /* not at a marker: let libjpeg judge the file */
        uint8_t m = d[p + 1];
        if (m == 0xFF) { /* fill byte */
            p++;
            continue;
        }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { /* markers without a length */
            p += 2;
            continue;
        }
        if (m == 0xDA || m == 0xD9) return 1; /* entropy data or the end: no EXIF */
        size_t seg = rd16(d + p + 2, 0);
        if (seg < 2 || seg > size - p - 2) return 1;
        if (m == 0xE1 && seg >= 8 && memcmp(d + p + 4, "Exif\0\0", 6) == 0) {
            int o = codec_exif_orientation_app1(d + p + 4, seg - 2);
            return o ? o : 1; /* the first EXIF block decides */
        }
        p += 2 + seg;
    }
    return 1;
}

void codec_orient_size(int o, int w, int h, int *ow, int *oh)
{
    int swap = o >= 5 && o <= 8;
    *ow = swap ? h : w;
    *oh = swap ? w : h;
}

/* For output pixel (ox, oy) the stored pixel is (ix, iy) = (ax*ox + bx*oy + cx,
 * ay*ox + by*oy + cy). Rows of the table: orientation 1..8, as the EXIF standard
 * defines where the stored row 0 / column 0 belong (e.g. 6: row 0 is the right-hand
 * side, so the picture is turned 90 degrees clockwise). c* are 0 or "size - 1" (-1). */
static const struct {
    int ax, bx, cx_w; /* cx = cx_w ? W - 1 : 0 */
    int ay, by, cy_h; /* cy = cy_h ? H - 1 : 0 */
} orient_map[9] = {
    [1] = {1, 0, 0, 0, 1, 0},   [2] = {-1, 0, 1, 0, 1, 0}, [3] = {-1, 0, 1, 0, -1, 1},
    [4] = {1, 0, 0, 0, -1, 1},  [5] = {0, 1, 0, 1, 0, 0},  [6] = {0, 1, 0, -1, 0, 1},
    [7] = {0, -1, 1, -1, 0, 1}, [8] = {0, -1, 1, 1, 0, 0},
};

ffu_status codec_orient_apply(const ffu_image *src, int o, ffu_image *dst)
{
    int bpp = ffu_pixfmt_bpp(src->fmt);
    if (o < 1 || o > 8 || bpp <= 0) {
        memset(dst, 0, sizeof *dst);
        return ffu_error_set(FFU_ERR_INVALID, "cannot orient a %s image by EXIF value %d",
                             ffu_pixfmt_name(src->fmt), o);
    }
    int w, h;
    codec_orient_size(o, src->width, src->height, &w, &h);
    ffu_status st = ffu_image_create(dst, src->fmt, w, h);
    if (st < 0) return st;
    const ptrdiff_t sstride = src->stride[0];
    const int cx = orient_map[o].cx_w ? src->width - 1 : 0;
    const int cy = orient_map[o].cy_h ? src->height - 1 : 0;
    /* Stepping ox by one moves the source pointer by a fixed amount. */
    const ptrdiff_t step =
        (ptrdiff_t)orient_map[o].ax * bpp + (ptrdiff_t)orient_map[o].ay * sstride;
    for (int oy = 0; oy < h; oy++) {
        int ix = orient_map[o].bx * oy + cx, iy = orient_map[o].by * oy + cy;
        const uint8_t *s = src->data[0] + (ptrdiff_t)iy * sstride + (ptrdiff_t)ix * bpp;
        uint8_t *d = dst->data[0] + (size_t)oy * (size_t)dst->stride[0];
        switch (bpp) {
        case 1:
            for (int ox = 0; ox < w; ox++)
                d[ox] = s[ox * step];
            break;
        case 3:
            for (int ox = 0; ox < w; ox++) {
                const uint8_t *px = s + ox * step;
                d[3 * ox] = px[0], d[3 * ox + 1] = px[1], d[3 * ox + 2] = px[2];
            }
            break;
        default:
            for (int ox = 0; ox < w; ox++)
                memcpy(d + (size_t)ox * bpp, s + ox * step, (size_t)bpp);
        }
    }
    return FFU_OK;
}
