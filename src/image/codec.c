/* The public face of image file I/O: format sniffing, decode/encode dispatch to
 * codec_jpeg.c, codec_png.c and codec_webp.c, reading files with a size cap, and saving
 * through a temporary file in the same directory that is renamed into place, so a
 * reader never sees a half-written image. Errors from files name the path. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/codec_internal.h"

/* JPEG (FF D8 FF), PNG (the 8-byte signature) or WebP ("RIFF" size "WEBP") from the
 * first bytes; CODEC_NONE else. */
static codec_kind codec_sniff(const uint8_t *d, size_t n)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return CODEC_JPEG;
    if (n >= 8 && memcmp(d, png_sig, 8) == 0) return CODEC_PNG;
    if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) return CODEC_WEBP;
    return CODEC_NONE;
}

/* The format names ffu_image_probe and ffu_image_format_of give, by codec_kind. */
static const char *const kind_names[] = {NULL, "jpeg", "png", "webp"};

const char *ffu_image_format_of(const void *data, size_t size)
{
    return data ? kind_names[codec_sniff(data, size)] : NULL;
}

/* Formats we recognise but do not decode, for a better message than "not an image". */
static const char *other_format(const uint8_t *d, size_t n)
{
    if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) return "GIF";
    if (n >= 12 && memcmp(d + 4, "ftyp", 4) == 0) {
        if (memcmp(d + 8, "avif", 4) == 0 || memcmp(d + 8, "avis", 4) == 0) return "AVIF";
        if (memcmp(d + 8, "heic", 4) == 0 || memcmp(d + 8, "heix", 4) == 0 ||
            memcmp(d + 8, "mif1", 4) == 0)
            return "HEIF";
    }
    if (n >= 4 && (memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0)) return "TIFF";
    return NULL;
}

/* 1 when want is one of the formats decoders produce (GRAY8, RGB24, BGR24, RGBA32). */
static int codec_want_ok(ffu_pixfmt want)
{
    return want == FFU_PIX_GRAY8 || want == FFU_PIX_RGB24 || want == FFU_PIX_BGR24 ||
           want == FFU_PIX_RGBA32;
}

ffu_status codec_check_dims(uint32_t w, uint32_t h)
{
    if (w == 0 || h == 0)
        return ffu_error_set(FFU_ERR_FORMAT, "image has a zero size (%ux%u)", w, h);
    if (w > FFU_IMAGE_MAX_DIM || h > FFU_IMAGE_MAX_DIM)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "image %ux%u exceeds the %d px cap", w, h,
                             FFU_IMAGE_MAX_DIM);
    if ((uint64_t)w * h > FFU_IMAGE_MAX_PIXELS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "image %ux%u exceeds the %u Mpx cap", w, h,
                             FFU_IMAGE_MAX_PIXELS >> 20);
    return FFU_OK;
}

static ffu_status unknown_format(const uint8_t *d, size_t n)
{
    if (n == 0) return ffu_error_set(FFU_ERR_FORMAT, "empty file");
    const char *other = other_format(d, n);
    if (other)
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "%s images are not supported (JPEG, PNG and WebP are)", other);
    return ffu_error_set(FFU_ERR_FORMAT, "not a JPEG, PNG or WebP file");
}

ffu_status ffu_image_decode(const void *data, size_t size, ffu_pixfmt want, ffu_image *out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_decode: out is NULL");
    memset(out, 0, sizeof *out);
    if (!data && size) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_decode: data is NULL");
    if (!codec_want_ok(want))
        return ffu_error_set(FFU_ERR_INVALID,
                             "cannot decode to %s (use gray8, rgb24, bgr24 or rgba32)",
                             ffu_pixfmt_name(want));
    switch (codec_sniff(data, size)) {
    case CODEC_JPEG:
        return codec_jpeg_decode(data, size, want, 1, out);
    case CODEC_PNG:
        return codec_png_decode(data, size, want, 1, out);
    case CODEC_WEBP:
        return codec_webp_decode(data, size, want, 1, out);
    default:
        return unknown_format(data, size);
    }
}

ffu_status ffu_image_probe(const void *data, size_t size, const char **format, int *width,
                           int *height)
{
    int w = 0, h = 0, o = 1;
    const char *name = NULL;
    ffu_status st;
    if (!data && size) {
        st = ffu_error_set(FFU_ERR_INVALID, "ffu_image_probe: data is NULL");
    } else {
        const codec_kind kind = codec_sniff(data, size);
        name = kind_names[kind];
        switch (kind) {
        case CODEC_JPEG:
            st = codec_jpeg_probe(data, size, &w, &h, &o);
            break;
        case CODEC_PNG:
            st = codec_png_probe(data, size, &w, &h, &o);
            break;
        case CODEC_WEBP:
            st = codec_webp_probe(data, size, &w, &h, &o);
            break;
        default:
            st = unknown_format(data, size);
            break;
        }
    }
    if (st < 0) w = h = 0, name = NULL;
    if (format) *format = name;
    codec_orient_size(o, w, h, &w, &h);
    if (width) *width = w;
    if (height) *height = h;
    return st;
}

/* ---- files --------------------------------------------------------------------------- */

ffu_status ffu_image_load(const char *path, ffu_pixfmt want, ffu_image *out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_load: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_load: path is NULL");
    if (!codec_want_ok(want))
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: cannot decode to %s (use gray8, rgb24, bgr24 or rgba32)", path,
                             ffu_pixfmt_name(want));
    uint8_t *data;
    size_t size;
    ffu_status st = ffu_file_read(path, FFU_IMAGE_MAX_FILE_BYTES, &data, &size);
    if (st < 0) return st;
    st = ffu_image_decode(data, size, want, out);
    free(data);
    return st < 0 ? ffu_error_prefix(st, path) : st;
}

static ffu_status check_encodable(const ffu_image *img)
{
    if (!img || !img->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "cannot encode an empty image");
    if (!codec_want_ok(img->fmt))
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "cannot encode %s images (use gray8, rgb24, bgr24 or rgba32)",
                             ffu_pixfmt_name(img->fmt));
    if (img->width <= 0 || img->height <= 0 || img->width > FFU_IMAGE_MAX_DIM ||
        img->height > FFU_IMAGE_MAX_DIM || img->stride[0] < img->width * ffu_pixfmt_bpp(img->fmt))
        return ffu_error_set(FFU_ERR_INVALID, "cannot encode a %dx%d image with stride %d",
                             img->width, img->height, img->stride[0]);
    return FFU_OK;
}

/* The checks and the dispatch every encoder entry shares: kind's encoder on img at
 * quality (0 = default; JPEG and WebP) with text_kv. */
static ffu_status encode(codec_kind kind, const ffu_image *img, int quality,
                         const char *const *text_kv, uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    ffu_status st = check_encodable(img);
    if (st < 0) return st;
    if (quality == 0) quality = FFU_IMAGE_JPEG_QUALITY_DEFAULT;
    if (kind != CODEC_PNG && (quality < 1 || quality > 100))
        return ffu_error_set(FFU_ERR_INVALID, "%s quality %d is outside 1..100",
                             kind == CODEC_JPEG ? "JPEG" : "WebP", quality);
    switch (kind) {
    case CODEC_JPEG:
        return codec_jpeg_encode(img, quality, text_kv, out, size);
    case CODEC_PNG:
        return codec_png_encode(img, text_kv, out, size);
    default:
        return codec_webp_encode(img, quality, text_kv, out, size);
    }
}

ffu_status ffu_image_encode_jpeg(const ffu_image *img, int quality, uint8_t **out, size_t *size)
{
    if (!out || !size) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_encode_jpeg: NULL output");
    return encode(CODEC_JPEG, img, quality, NULL, out, size);
}

ffu_status ffu_image_encode_png(const ffu_image *img, const char *const *text_kv, uint8_t **out,
                                size_t *size)
{
    if (!out || !size) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_encode_png: NULL output");
    return encode(CODEC_PNG, img, 0, text_kv, out, size);
}

ffu_status ffu_image_encode_webp(const ffu_image *img, int quality, uint8_t **out, size_t *size)
{
    if (!out || !size) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_encode_webp: NULL output");
    return encode(CODEC_WEBP, img, quality, NULL, out, size);
}

/* The format a file name's extension names (any case), CODEC_NONE for others. */
static codec_kind kind_of_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *ext = strrchr(base, '.');
    if (!ext) return CODEC_NONE;
    if (strcasecmp(ext, ".jpg") == 0 || strcasecmp(ext, ".jpeg") == 0) return CODEC_JPEG;
    if (strcasecmp(ext, ".png") == 0) return CODEC_PNG;
    if (strcasecmp(ext, ".webp") == 0) return CODEC_WEBP;
    return CODEC_NONE;
}

int ffu_image_name_known(const char *path) { return path && kind_of_name(path) != CODEC_NONE; }

ffu_status ffu_image_save_with_text(const char *path, const ffu_image *img, int quality,
                                    const char *const *text_kv)
{
    if (!path) return ffu_error_set(FFU_ERR_INVALID, "ffu_image_save: path is NULL");
    const codec_kind kind = kind_of_name(path);
    if (kind == CODEC_NONE)
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "%s: unknown image extension (use .jpg, .jpeg, .png or .webp)", path);
    uint8_t *buf;
    size_t size;
    ffu_status st = encode(kind, img, quality, text_kv, &buf, &size);
    if (st < 0) return ffu_error_prefix(st, path);
    st = ffu_file_write_atomic(path, buf, size);
    free(buf);
    if (st == FFU_ERR_NOT_FOUND) { /* a missing directory is an output I/O error */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ffu_error_message());
        return ffu_error_set(FFU_ERR_IO, "%s", msg);
    }
    return st;
}

ffu_status ffu_image_save(const char *path, const ffu_image *img, int quality)
{
    return ffu_image_save_with_text(path, img, quality, NULL);
}
