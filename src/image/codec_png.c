/* PNG decoding and encoding with libpng 1.6.
 *
 * libpng reports errors through a callback that must not return; ours records the
 * message and longjmps to the setjmp in png_dec_run / png_enc_run (png_jmpbuf). As in
 * codec_jpeg.c, the work runs in a separate function below the setjmp and everything
 * to free lives in a context struct, so nothing is read from an abandoned frame.
 *
 * Every PNG is decoded to 8-bit GRAY8/RGB24/BGR24/RGBA32: palettes, low bit depths and
 * tRNS are expanded, 16-bit samples are scaled (rounded) to 8 bits, alpha is dropped or
 * added (opaque) as the wanted format says. CRC errors in any chunk are errors; chunks
 * we have no use for (text, ICC profiles, ...) are skipped after their CRC check, so
 * their decompressors never run. */
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "image/codec_internal.h"

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    FFU_LOG(NULL, FFU_LOG_DEBUG, "png: %s (ignored)", msg);
}

/* ---- decoding ------------------------------------------------------------------------ */

typedef struct png_dec {
    png_structp png;
    png_infop info;
    const uint8_t *data;
    size_t size, pos;
    ffu_status fail; /* status for a libpng error: FFU_ERR_FORMAT unless set otherwise */
    char msg[256];
    ffu_image img; /* pixels as stored */
    png_bytep *rows;
    int width, height, orientation;
} png_dec;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_dec *d = png_get_error_ptr(png);
    snprintf(d->msg, sizeof d->msg, "bad PNG: %s", msg);
    png_longjmp(png, 1);
}

static void png_read_mem(png_structp png, png_bytep dst, size_t n)
{
    png_dec *d = png_get_io_ptr(png);
    if (n > d->size - d->pos) {
        d->fail = FFU_ERR_FORMAT;
        snprintf(d->msg, sizeof d->msg, "truncated PNG");
        png_longjmp(png, 1);
    }
    memcpy(dst, d->data + d->pos, n);
    d->pos += n;
}

/* Chunks never needed for pixels; libpng skips them (after the CRC check). */
static const png_byte skipped_chunks[] = "iCCP\0iTXt\0zTXt\0tEXt\0sPLT\0hIST\0pCAL\0sCAL\0"
                                         "tIME\0bKGD\0pHYs\0oFFs\0cHRM\0sRGB\0gAMA\0sBIT\0";

/* Runs below png_dec_run's setjmp (see the file comment). */
static ffu_status png_dec_body(png_dec *d, ffu_pixfmt want, int header_only)
{
    png_structp png = d->png;
    png_infop info = d->info;
    png_set_read_fn(png, d, png_read_mem);
    png_set_user_limits(png, FFU_IMAGE_MAX_DIM, FFU_IMAGE_MAX_DIM);
    png_set_chunk_malloc_max(png, CODEC_PNG_MAX_CHUNK);
    png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, skipped_chunks,
                                (int)(sizeof skipped_chunks / 5));
    png_read_info(png, info);

    png_uint_32 w, h;
    int depth, ctype, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    ffu_status st = codec_check_dims(w, h);
    if (st < 0) return st;
    d->width = (int)w;
    d->height = (int)h;
    d->orientation = 1;
#ifdef PNG_eXIf_SUPPORTED
    {
        png_uint_32 n = 0;
        png_bytep exif = NULL;
        if (png_get_eXIf_1(png, info, &n, &exif) && exif) {
            int o = codec_exif_orientation_tiff(exif, n);
            if (o) d->orientation = o;
        }
    }
#endif
    if (header_only) return FFU_OK;

    int has_color = (ctype & PNG_COLOR_MASK_COLOR) != 0; /* palettes count as colour */
    int has_alpha = (ctype & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
    png_set_expand(png); /* palette -> RGB, gray < 8 bits -> 8 bits, tRNS -> alpha */
    if (depth == 16) png_set_scale_16(png);
    if (want == FFU_PIX_GRAY8) {
        if (has_color)
            png_set_rgb_to_gray(png, PNG_ERROR_ACTION_NONE, PNG_RGB_TO_GRAY_DEFAULT,
                                PNG_RGB_TO_GRAY_DEFAULT);
        if (has_alpha) png_set_strip_alpha(png);
    } else {
        if (!has_color) png_set_gray_to_rgb(png);
        if (want == FFU_PIX_RGBA32) {
            if (!has_alpha) png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
        } else if (has_alpha) {
            png_set_strip_alpha(png);
        }
        if (want == FFU_PIX_BGR24) png_set_bgr(png);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int bpp = ffu_pixfmt_bpp(want);
    if (png_get_bit_depth(png, info) != 8 || png_get_channels(png, info) != bpp ||
        png_get_rowbytes(png, info) != (size_t)w * (size_t)bpp)
        return ffu_error_set(FFU_ERR_INTERNAL, "libpng gave %d channels of %d bits, wanted %s",
                             png_get_channels(png, info), png_get_bit_depth(png, info),
                             ffu_pixfmt_name(want));

    if ((st = ffu_image_create(&d->img, want, d->width, d->height)) < 0) return st;
    if (!(d->rows = malloc((size_t)h * sizeof *d->rows)))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory for PNG row pointers");
    for (png_uint_32 y = 0; y < h; y++)
        d->rows[y] = d->img.data[0] + (size_t)y * (size_t)d->img.stride[0];
    png_read_image(png, d->rows);
    /* Reads and CRC-checks the chunks up to IEND: a file cut after its pixel data is
     * reported as truncated too. */
    png_read_end(png, NULL);
    return FFU_OK;
}

static ffu_status png_dec_run(png_dec *d, ffu_pixfmt want, int header_only)
{
    if (setjmp(png_jmpbuf(d->png))) return ffu_error_set(d->fail, "%s", d->msg);
    return png_dec_body(d, want, header_only);
}

/* CRC-32 as PNG defines it, bit by bit: only used on the 17 bytes of IHDR. */
static uint32_t ihdr_crc(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The shared start of decode and probe: the IHDR caps are checked from the raw bytes
 * first, so an oversized image is FFU_ERR_TOO_LARGE rather than libpng's limit error.
 * Only an intact IHDR (right length and CRC) counts; a damaged one is libpng's to
 * report as corrupt. */
static ffu_status png_dec_open(png_dec *d, const uint8_t *data, size_t size)
{
    memset(d, 0, sizeof *d);
    d->data = data;
    d->size = size;
    d->fail = FFU_ERR_FORMAT;
    if (size >= 33 && be32(data + 8) == 13 && memcmp(data + 12, "IHDR", 4) == 0 &&
        be32(data + 29) == ihdr_crc(data + 12, 17)) {
        uint32_t w = be32(data + 16), h = be32(data + 20);
        if (w && h && w <= 0x7fffffffu && h <= 0x7fffffffu) {
            ffu_status st = codec_check_dims(w, h);
            if (st < 0) return st;
        }
    }
    d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, on_png_error, on_png_warning);
    if (!d->png || !(d->info = png_create_info_struct(d->png)))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a PNG decoder");
    return FFU_OK;
}

static void png_dec_close(png_dec *d)
{
    if (d->png) png_destroy_read_struct(&d->png, d->info ? &d->info : NULL, NULL);
    free(d->rows);
    ffu_image_release(&d->img);
}

ffu_status codec_png_decode(const uint8_t *data, size_t size, ffu_pixfmt want, int orient,
                            ffu_image *out)
{
    memset(out, 0, sizeof *out);
    png_dec *d = malloc(sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a PNG decoder");
    ffu_status st = png_dec_open(d, data, size);
    if (st >= 0) st = png_dec_run(d, want, 0);
    if (st >= 0) {
        if (!orient || d->orientation == 1) {
            *out = d->img;
            memset(&d->img, 0, sizeof d->img);
        } else {
            st = codec_orient_apply(&d->img, d->orientation, out);
        }
    }
    png_dec_close(d);
    free(d);
    return st;
}

ffu_status codec_png_probe(const uint8_t *data, size_t size, int *width, int *height,
                           int *orientation)
{
    *width = *height = 0;
    *orientation = 1;
    png_dec *d = malloc(sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a PNG decoder");
    ffu_status st = png_dec_open(d, data, size);
    if (st >= 0) st = png_dec_run(d, FFU_PIX_RGB24, 1);
    if (st >= 0) {
        *width = d->width;
        *height = d->height;
        *orientation = d->orientation;
    }
    png_dec_close(d);
    free(d);
    return st;
}

/* ---- encoding ------------------------------------------------------------------------ */

typedef struct png_enc {
    png_structp png;
    png_infop info;
    uint8_t *buf;
    size_t len, cap;
    ffu_status fail;
    char msg[256];
    png_text *text;
} png_enc;

static void on_png_enc_error(png_structp png, png_const_charp msg)
{
    png_enc *e = png_get_error_ptr(png);
    if (!e->msg[0]) snprintf(e->msg, sizeof e->msg, "PNG encoder: %s", msg);
    png_longjmp(png, 1);
}

static void png_write_mem(png_structp png, png_bytep src, size_t n)
{
    png_enc *e = png_get_io_ptr(png);
    if (n > e->cap - e->len) {
        size_t cap = e->cap ? e->cap : 65536;
        while (cap - e->len < n) {
            if (cap > SIZE_MAX / 2)
                cap = SIZE_MAX;
            else
                cap *= 2;
        }
        uint8_t *nb = realloc(e->buf, cap);
        if (!nb) {
            e->fail = FFU_ERR_NOMEM;
            snprintf(e->msg, sizeof e->msg, "out of memory for %zu bytes of PNG", cap);
            png_error(png, e->msg);
        }
        e->buf = nb;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, src, n);
    e->len += n;
}

static void png_flush_mem(png_structp png) { (void)png; }

/* PNG keywords: 1-79 Latin-1 printable characters, no leading, trailing or double
 * spaces. */
static int keyword_ok(const char *k)
{
    size_t n = strlen(k);
    if (n < 1 || n > 79 || k[0] == ' ' || k[n - 1] == ' ') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)k[i];
        if (c < 32 || (c > 126 && c < 161)) return 0;
        if (c == ' ' && k[i + 1] == ' ') return 0;
    }
    return 1;
}

static int is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80) return 0;
    return 1;
}

static ffu_status png_enc_body(png_enc *e, const ffu_image *img, const char *const *text_kv)
{
    png_structp png = e->png;
    png_infop info = e->info;
    png_set_write_fn(png, e, png_write_mem, png_flush_mem);
    int ctype = img->fmt == FFU_PIX_GRAY8    ? PNG_COLOR_TYPE_GRAY
                : img->fmt == FFU_PIX_RGBA32 ? PNG_COLOR_TYPE_RGB_ALPHA
                                             : PNG_COLOR_TYPE_RGB;
    png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8, ctype,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    int ntext = 0;
    for (const char *const *kv = text_kv; kv && kv[0] && kv[1]; kv += 2)
        ntext++;
    if (ntext) {
        if (!(e->text = calloc((size_t)ntext, sizeof *e->text)))
            return ffu_error_set(FFU_ERR_NOMEM, "out of memory for PNG text");
        for (int i = 0; i < ntext; i++) {
            const char *k = text_kv[2 * i], *v = text_kv[2 * i + 1];
            /* UTF-8 values go to iTXt; tEXt is Latin-1 and plain ASCII fits both. */
            e->text[i].compression =
                is_ascii(v) ? PNG_TEXT_COMPRESSION_NONE : PNG_ITXT_COMPRESSION_NONE;
            e->text[i].key = (png_charp)k;
            e->text[i].text = (png_charp)v;
            e->text[i].text_length = strlen(v);
            e->text[i].lang = (png_charp) "";
            e->text[i].lang_key = (png_charp) "";
        }
        png_set_text(png, info, e->text, ntext);
    }
    png_write_info(png, info);
    if (img->fmt == FFU_PIX_BGR24) png_set_bgr(png);
    for (int y = 0; y < img->height; y++)
        png_write_row(png, img->data[0] + (size_t)y * (size_t)img->stride[0]);
    png_write_end(png, info);
    return FFU_OK;
}

static ffu_status png_enc_run(png_enc *e, const ffu_image *img, const char *const *text_kv)
{
    if (setjmp(png_jmpbuf(e->png))) return ffu_error_set(e->fail, "%s", e->msg);
    return png_enc_body(e, img, text_kv);
}

ffu_status codec_png_encode(const ffu_image *img, const char *const *text_kv, uint8_t **out,
                            size_t *size)
{
    *out = NULL;
    *size = 0;
    for (const char *const *kv = text_kv; kv && kv[0] && kv[1]; kv += 2)
        if (!keyword_ok(kv[0]))
            return ffu_error_set(FFU_ERR_INVALID,
                                 "\"%s\" is not a valid PNG text keyword "
                                 "(1-79 printable Latin-1 characters)",
                                 kv[0]);
    png_enc *e = calloc(1, sizeof *e);
    if (!e) return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a PNG encoder");
    e->fail = FFU_ERR_INTERNAL; /* valid input never fails to encode */
    ffu_status st;
    e->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, on_png_enc_error, on_png_warning);
    if (!e->png || !(e->info = png_create_info_struct(e->png)))
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory for a PNG encoder");
    else
        st = png_enc_run(e, img, text_kv);
    if (e->png) png_destroy_write_struct(&e->png, e->info ? &e->info : NULL);
    free(e->text);
    if (st >= 0) {
        *out = e->buf;
        *size = e->len;
    } else {
        free(e->buf);
    }
    free(e);
    return st;
}
