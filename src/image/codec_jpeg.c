/* JPEG decoding and encoding with libjpeg-turbo (the jpeglib.h API).
 *
 * libjpeg reports fatal errors by calling error_exit, whose default calls exit(); here
 * error_exit and the warnings that mean "data is missing" longjmp back to the call
 * that started the work, which returns an ffu_status. Everything that must be freed
 * after such a jump lives in a context struct owned by the caller of the function that
 * holds the setjmp, so no local variable is read after a longjmp.
 *
 * Policy on damaged files: a truncated file (libjpeg's "premature end of JPEG file",
 * after which it pads the picture with grey) and corrupt entropy data are errors, not
 * half images. Harmless oddities (extra bytes between markers, unknown JFIF versions)
 * are logged at debug level and ignored. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
/* after jpeglib.h: which messages exist depends on its configuration */
#include <jerror.h>

#include "image/codec_internal.h"

typedef struct jpeg_fail {
    struct jpeg_error_mgr pub; /* first: libjpeg casts cinfo->err to this */
    jmp_buf jump;
    ffu_status status;
    char msg[JMSG_LENGTH_MAX + 32];
} jpeg_fail;

static void fail_jump(j_common_ptr cinfo, ffu_status st, const char *prefix)
{
    jpeg_fail *f = (jpeg_fail *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, text);
    f->status = st;
    snprintf(f->msg, sizeof f->msg, "%s%s", prefix, text);
    longjmp(f->jump, 1);
}

static void on_error_exit(j_common_ptr cinfo)
{
    ffu_status st = FFU_ERR_FORMAT;
    switch (cinfo->err->msg_code) {
    case JERR_OUT_OF_MEMORY:
        st = FFU_ERR_NOMEM;
        break;
    /* The memory cap (max_memory_to_use) shows as a request for a backing store. */
    case JERR_NO_BACKING_STORE:
        st = FFU_ERR_TOO_LARGE;
        break;
    case JERR_CONVERSION_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_BAD_J_COLORSPACE:
        st = FFU_ERR_UNSUPPORTED;
        break;
    default:
        break;
    }
    fail_jump(cinfo, st, cinfo->is_decompressor ? "bad JPEG: " : "JPEG encoder: ");
}

static void on_emit_message(j_common_ptr cinfo, int level)
{
    if (level >= 0) return; /* trace messages */
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
        ((jpeg_fail *)cinfo->err)->status = FFU_ERR_FORMAT;
        snprintf(((jpeg_fail *)cinfo->err)->msg, sizeof((jpeg_fail *)cinfo->err)->msg,
                 "truncated JPEG");
        longjmp(((jpeg_fail *)cinfo->err)->jump, 1);
    case JWRN_HIT_MARKER:
    case JWRN_MUST_RESYNC:
    case JWRN_HUFF_BAD_CODE:
#if JPEG_LIB_VERSION >= 70 || defined(D_ARITH_CODING_SUPPORTED)
    case JWRN_ARITH_BAD_CODE:
#endif
        fail_jump(cinfo, FFU_ERR_FORMAT, "corrupt JPEG: ");
        break;
    default: {
        char text[JMSG_LENGTH_MAX];
        cinfo->err->num_warnings++;
        if (FFU_LOG_DEBUG <= ffu_log_get_level()) {
            cinfo->err->format_message(cinfo, text);
            ffu_log(NULL, FFU_LOG_DEBUG, "jpeg: %s (ignored)", text);
        }
    }
    }
}

static void on_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void fail_init(jpeg_fail *f)
{
    jpeg_std_error(&f->pub);
    f->pub.error_exit = on_error_exit;
    f->pub.emit_message = on_emit_message;
    f->pub.output_message = on_output_message;
    f->status = FFU_ERR_FORMAT;
    f->msg[0] = 0;
}

static void on_progress(j_common_ptr cinfo)
{
    if (!cinfo->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > CODEC_JPEG_MAX_SCANS) {
        jpeg_fail *f = (jpeg_fail *)cinfo->err;
        f->status = FFU_ERR_TOO_LARGE;
        snprintf(f->msg, sizeof f->msg, "JPEG has over %d progressive scans", CODEC_JPEG_MAX_SCANS);
        longjmp(f->jump, 1);
    }
}

/* ---- decoding ------------------------------------------------------------------------ */

typedef struct jpeg_dec {
    struct jpeg_decompress_struct cinfo;
    jpeg_fail fail;
    struct jpeg_progress_mgr progress;
    int created;
    ffu_image img; /* pixels as stored */
    uint8_t *cmyk; /* one CMYK row, for CMYK/YCCK files */
    int width, height;
} jpeg_dec;

/* CMYK as Adobe writes it (inverted, flagged by the Adobe marker) or plain. */
static void cmyk_row(const uint8_t *s, uint8_t *d, int w, ffu_pixfmt want, int inverted)
{
    for (int x = 0; x < w; x++, s += 4) {
        unsigned c = s[0], m = s[1], y = s[2], k = s[3];
        if (!inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
        unsigned r = (c * k + 127) / 255, g = (m * k + 127) / 255, b = (y * k + 127) / 255;
        switch (want) {
        case FFU_PIX_GRAY8:
            d[x] = (uint8_t)((77 * r + 150 * g + 29 * b + 128) >> 8);
            break;
        case FFU_PIX_RGB24:
            d[3 * x] = r, d[3 * x + 1] = g, d[3 * x + 2] = b;
            break;
        case FFU_PIX_BGR24:
            d[3 * x] = b, d[3 * x + 1] = g, d[3 * x + 2] = r;
            break;
        default:
            d[4 * x] = r, d[4 * x + 1] = g, d[4 * x + 2] = b, d[4 * x + 3] = 255;
            break;
        }
    }
}

/* Runs below jpeg_dec_run's setjmp: a longjmp abandons this frame, so its locals are
 * never read again and everything to free is in *d. */
static ffu_status jpeg_dec_body(jpeg_dec *d, const uint8_t *data, size_t size, ffu_pixfmt want,
                                int header_only)
{
    struct jpeg_decompress_struct *ci = &d->cinfo;
    jpeg_create_decompress(ci);
    d->created = 1;
    ci->mem->max_memory_to_use = CODEC_JPEG_MAX_MEMORY;
    d->progress.progress_monitor = on_progress;
    ci->progress = &d->progress;
    jpeg_mem_src(ci, data, (unsigned long)size);
    jpeg_read_header(ci, TRUE);
    ffu_status st = codec_check_dims(ci->image_width, ci->image_height);
    if (st < 0) return st;
    d->width = (int)ci->image_width;
    d->height = (int)ci->image_height;
    if (header_only) return FFU_OK;

    int cmyk = 0;
    switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        cmyk = 1;
        break;
    default:
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "JPEG colour space %d with %d components is not supported",
                             (int)ci->jpeg_color_space, ci->num_components);
    }
    if (cmyk)
        ci->out_color_space = JCS_CMYK;
    else if (want == FFU_PIX_GRAY8)
        ci->out_color_space = JCS_GRAYSCALE;
    else if (want == FFU_PIX_RGB24)
        ci->out_color_space = JCS_EXT_RGB;
    else if (want == FFU_PIX_BGR24)
        ci->out_color_space = JCS_EXT_BGR;
    else
        ci->out_color_space = JCS_EXT_RGBA;
    ci->dct_method = JDCT_ISLOW;

    /* The output is allocated (and the caps checked) before libjpeg allocates its own
     * whole-image buffers in jpeg_start_decompress. */
    if ((st = ffu_image_create(&d->img, want, d->width, d->height)) < 0) return st;
    if (cmyk && !(d->cmyk = malloc((size_t)d->width * 4)))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a JPEG row");
    jpeg_start_decompress(ci);
    if ((int)ci->output_width != d->width || (int)ci->output_height != d->height ||
        ci->output_components != (cmyk ? 4 : ffu_pixfmt_bpp(want)))
        return ffu_error_set(FFU_ERR_INTERNAL, "libjpeg output %ux%ux%d differs from the header",
                             ci->output_width, ci->output_height, ci->output_components);
    while (ci->output_scanline < ci->output_height) {
        uint8_t *dst = d->img.data[0] + (size_t)ci->output_scanline * (size_t)d->img.stride[0];
        if (cmyk) {
            JSAMPROW row = d->cmyk;
            if (jpeg_read_scanlines(ci, &row, 1) != 1) break;
            cmyk_row(d->cmyk, dst, d->width, want, ci->saw_Adobe_marker);
        } else {
            JSAMPROW rows[8];
            JDIMENSION n = ci->output_height - ci->output_scanline;
            if (n > 8) n = 8;
            for (JDIMENSION i = 0; i < n; i++)
                rows[i] = dst + (size_t)i * (size_t)d->img.stride[0];
            if (jpeg_read_scanlines(ci, rows, n) == 0) break;
        }
    }
    if (ci->output_scanline < ci->output_height)
        return ffu_error_set(FFU_ERR_FORMAT, "truncated JPEG");
    /* Reads up to EOI, so a file cut after its last scan is reported as well. */
    jpeg_finish_decompress(ci);
    return FFU_OK;
}

static ffu_status jpeg_dec_run(jpeg_dec *d, const uint8_t *data, size_t size, ffu_pixfmt want,
                               int header_only)
{
    if (setjmp(d->fail.jump)) return ffu_error_set(d->fail.status, "%s", d->fail.msg);
    return jpeg_dec_body(d, data, size, want, header_only);
}

static void jpeg_dec_free(jpeg_dec *d)
{
    if (d->created) jpeg_destroy_decompress(&d->cinfo);
    free(d->cmyk);
    ffu_image_release(&d->img);
}

ffu_status codec_jpeg_decode(const uint8_t *data, size_t size, ffu_pixfmt want, int orient,
                             ffu_image *out)
{
    memset(out, 0, sizeof *out);
    jpeg_dec *d = calloc(1, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a JPEG decoder");
    fail_init(&d->fail);
    d->cinfo.err = &d->fail.pub;
    ffu_status st = jpeg_dec_run(d, data, size, want, 0);
    if (st >= 0) {
        int o = orient ? codec_exif_jpeg_orientation(data, size) : 1;
        if (o == 1) {
            *out = d->img;
            memset(&d->img, 0, sizeof d->img);
        } else {
            st = codec_orient_apply(&d->img, o, out);
        }
    }
    jpeg_dec_free(d);
    free(d);
    return st;
}

ffu_status codec_jpeg_probe(const uint8_t *data, size_t size, int *width, int *height,
                            int *orientation)
{
    *width = *height = 0;
    *orientation = 1;
    jpeg_dec *d = calloc(1, sizeof *d);
    if (!d) return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a JPEG decoder");
    fail_init(&d->fail);
    d->cinfo.err = &d->fail.pub;
    ffu_status st = jpeg_dec_run(d, data, size, FFU_PIX_RGB24, 1);
    if (st >= 0) {
        *width = d->width;
        *height = d->height;
        *orientation = codec_exif_jpeg_orientation(data, size);
    }
    jpeg_dec_free(d);
    free(d);
    return st;
}

/* ---- encoding ------------------------------------------------------------------------ */

typedef struct jpeg_enc {
    struct jpeg_compress_struct cinfo;
    jpeg_fail fail;
    int created;
    unsigned char *buf; /* grown by jpeg_mem_dest with malloc; ours to free on error */
    unsigned long len;
} jpeg_enc;

/* Runs below jpeg_enc_run's setjmp, like jpeg_dec_body. */
static ffu_status jpeg_enc_body(jpeg_enc *e, const ffu_image *img, int quality,
                                const char *const *text_kv)
{
    struct jpeg_compress_struct *ci = &e->cinfo;
    jpeg_create_compress(ci);
    e->created = 1;
    jpeg_mem_dest(ci, &e->buf, &e->len);
    ci->image_width = (JDIMENSION)img->width;
    ci->image_height = (JDIMENSION)img->height;
    switch (img->fmt) {
    case FFU_PIX_GRAY8:
        ci->in_color_space = JCS_GRAYSCALE, ci->input_components = 1;
        break;
    case FFU_PIX_RGB24:
        ci->in_color_space = JCS_EXT_RGB, ci->input_components = 3;
        break;
    case FFU_PIX_BGR24:
        ci->in_color_space = JCS_EXT_BGR, ci->input_components = 3;
        break;
    default:
        ci->in_color_space = JCS_EXT_RGBX, ci->input_components = 4;
        break; /* alpha dropped */
    }
    jpeg_set_defaults(ci);
    jpeg_set_quality(ci, quality, TRUE);
    ci->optimize_coding = TRUE;
    ci->dct_method = JDCT_ISLOW;
    if (quality >= 90 && ci->num_components == 3) {
        /* At high quality chroma subsampling is the largest loss left: keep full chroma. */
        for (int c = 0; c < 3; c++)
            ci->comp_info[c].h_samp_factor = ci->comp_info[c].v_samp_factor = 1;
    }
    jpeg_start_compress(ci, TRUE);
    /* Each key/value pair becomes one COM segment "key: value". */
    for (const char *const *kv = text_kv; kv && kv[0] && kv[1]; kv += 2) {
        size_t kn = strlen(kv[0]), vn = strlen(kv[1]);
        if (kn + vn + 2 > 65533)
            return ffu_error_set(FFU_ERR_INVALID, "JPEG comment \"%s\" is longer than 65533 bytes",
                                 kv[0]);
        jpeg_write_m_header(ci, JPEG_COM, (unsigned)(kn + vn + 2));
        for (size_t i = 0; i < kn; i++)
            jpeg_write_m_byte(ci, (unsigned char)kv[0][i]);
        jpeg_write_m_byte(ci, ':');
        jpeg_write_m_byte(ci, ' ');
        for (size_t i = 0; i < vn; i++)
            jpeg_write_m_byte(ci, (unsigned char)kv[1][i]);
    }
    while (ci->next_scanline < ci->image_height) {
        JSAMPROW row = img->data[0] + (size_t)ci->next_scanline * (size_t)img->stride[0];
        jpeg_write_scanlines(ci, &row, 1);
    }
    jpeg_finish_compress(ci);
    return FFU_OK;
}

static ffu_status jpeg_enc_run(jpeg_enc *e, const ffu_image *img, int quality,
                               const char *const *text_kv)
{
    if (setjmp(e->fail.jump)) /* Valid input never fails to encode: a libjpeg error here is ours. */
        return ffu_error_set(e->fail.status == FFU_ERR_FORMAT ? FFU_ERR_INTERNAL : e->fail.status,
                             "%s", e->fail.msg);
    return jpeg_enc_body(e, img, quality, text_kv);
}

ffu_status codec_jpeg_encode(const ffu_image *img, int quality, const char *const *text_kv,
                             uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    jpeg_enc *e = calloc(1, sizeof *e);
    if (!e) return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a JPEG encoder");
    fail_init(&e->fail);
    e->cinfo.err = &e->fail.pub;
    ffu_status st = jpeg_enc_run(e, img, quality, text_kv);
    if (e->created) jpeg_destroy_compress(&e->cinfo);
    if (st >= 0) {
        *out = e->buf;
        *size = e->len;
    } else {
        free(e->buf);
    }
    free(e);
    return st;
}
