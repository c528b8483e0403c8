/* WebP decoding and encoding with libwebp (Debian libwebp-dev): still images, lossy and
 * lossless, with or without alpha. Photos saved from web pages and chat apps arrive as
 * WebP, so `facefuse detect photo.webp` must work like a JPEG does.
 *
 * libwebp decodes straight into our image's rows (external memory), reports damage
 * through a status code rather than a callback, and checks that the whole file is there
 * before it starts (a truncated file is VP8_STATUS_NOT_ENOUGH_DATA, never a half image).
 * The EXIF orientation lives in the extended format's "EXIF" chunk, which libwebp leaves
 * alone; we find it with a bounds-checked walk over the RIFF chunks and apply it as for
 * JPEG and PNG. Animated files are refused (which frame would a face be in?).
 *
 * Encoding is lossy at the caller's quality through libwebp's one-call encoders; text
 * pairs (the swap's "synthetic" label) go into an XMP packet, written by libwebpmux. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/encode.h>
#include <webp/mux.h>

#include "core/core_internal.h"
#include "image/codec_internal.h"

/* ---- decoding ------------------------------------------------------------------------ */

static uint32_t rd_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The orientation in the first "EXIF" chunk of a RIFF WebP, 1 when there is none or it
 * is invalid. The chunk holds a TIFF structure; some writers put JPEG's "Exif\0\0" before
 * it, which is accepted too. Every length is checked against the RIFF size and the
 * buffer. */
static int webp_orientation(const uint8_t *d, size_t n)
{
    if (n < 12) return 1;
    size_t end = (size_t)rd_le32(d + 4);
    end = end > n - 8 ? n : end + 8;
    for (size_t p = 12; p + 8 <= end;) {
        size_t len = rd_le32(d + p + 4);
        if (len > end - p - 8) return 1;
        if (memcmp(d + p, "EXIF", 4) == 0) {
            const uint8_t *e = d + p + 8;
            int o = len >= 6 && memcmp(e, "Exif\0\0", 6) == 0 ? codec_exif_orientation_app1(e, len)
                                                              : codec_exif_orientation_tiff(e, len);
            return o ? o : 1;
        }
        p += 8 + len + (len & 1);
    }
    return 1;
}

/* libwebp's status as one of ours, with a message that says what happened. */
static ffu_status webp_error(VP8StatusCode vs)
{
    switch (vs) {
    case VP8_STATUS_OUT_OF_MEMORY:
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory decoding a WebP");
    case VP8_STATUS_NOT_ENOUGH_DATA:
        return ffu_error_set(FFU_ERR_FORMAT, "truncated WebP");
    case VP8_STATUS_UNSUPPORTED_FEATURE:
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "WebP feature not supported by libwebp");
    default:
        return ffu_error_set(FFU_ERR_FORMAT, "corrupt WebP (libwebp status %d)", (int)vs);
    }
}

/* Header facts: stored size, and refusals that need no pixels (animation, caps). */
static ffu_status webp_header(const uint8_t *data, size_t size, WebPBitstreamFeatures *f)
{
    VP8StatusCode vs = WebPGetFeatures(data, size, f);
    if (vs != VP8_STATUS_OK) return webp_error(vs);
    if (f->has_animation)
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "animated WebP images are not supported (save one frame)");
    return codec_check_dims((uint32_t)f->width, (uint32_t)f->height);
}

ffu_status codec_webp_decode(const uint8_t *data, size_t size, ffu_pixfmt want, int orient,
                             ffu_image *out)
{
    memset(out, 0, sizeof *out);
    WebPDecoderConfig cfg;
    if (!WebPInitDecoderConfig(&cfg))
        return ffu_error_set(FFU_ERR_INTERNAL, "libwebp's decoder has another ABI version");
    ffu_status st = webp_header(data, size, &cfg.input);
    if (st < 0) return st;
    /* GRAY8 is decoded as RGB24 and converted with the library's one BT.601 luma. */
    const ffu_pixfmt dec = want == FFU_PIX_GRAY8 ? FFU_PIX_RGB24 : want;
    ffu_image img;
    if ((st = ffu_image_create(&img, dec, cfg.input.width, cfg.input.height)) < 0) return st;
    cfg.output.colorspace = dec == FFU_PIX_RGBA32  ? MODE_RGBA
                            : dec == FFU_PIX_BGR24 ? MODE_BGR
                                                   : MODE_RGB;
    cfg.output.is_external_memory = 1;
    cfg.output.u.RGBA.rgba = img.data[0];
    cfg.output.u.RGBA.stride = img.stride[0];
    cfg.output.u.RGBA.size = (size_t)img.stride[0] * (size_t)img.height;
    VP8StatusCode vs = WebPDecode(data, size, &cfg);
    WebPFreeDecBuffer(&cfg.output); /* external memory: frees nothing of ours */
    if (vs != VP8_STATUS_OK) {
        ffu_image_release(&img);
        return webp_error(vs);
    }
    if (want == FFU_PIX_GRAY8) {
        ffu_image gray;
        st = ffu_image_create(&gray, FFU_PIX_GRAY8, img.width, img.height);
        if (st >= 0 && (st = ffu_image_convert(&img, &gray)) < 0) ffu_image_release(&gray);
        ffu_image_release(&img);
        if (st < 0) return st;
        img = gray;
    }
    const int o = orient ? webp_orientation(data, size) : 1;
    if (o == 1) {
        *out = img;
        return FFU_OK;
    }
    st = codec_orient_apply(&img, o, out);
    ffu_image_release(&img);
    return st;
}

ffu_status codec_webp_probe(const uint8_t *data, size_t size, int *width, int *height,
                            int *orientation)
{
    *width = *height = 0;
    *orientation = 1;
    WebPBitstreamFeatures f;
    ffu_status st = webp_header(data, size, &f);
    if (st < 0) return st;
    *width = f.width;
    *height = f.height;
    *orientation = webp_orientation(data, size);
    return FFU_OK;
}

/* ---- encoding ------------------------------------------------------------------------ */

/* Character data: <, > and & escaped (quotes need no escape outside attributes).
 * XML 1.0 cannot hold control characters other than tab and newline, nor invalid UTF-8,
 * so those are refused (-1). */
static int xmp_put_text(FILE *f, const char *v)
{
    const unsigned char *s = (const unsigned char *)v;
    size_t len = strlen(v);
    for (size_t i = 0; i < len;) {
        const unsigned char c = s[i];
        const char *e = c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : NULL;
        size_t n = c < 0x80 ? 1 : core_utf8_seq(s + i, len - i);
        if ((c < 0x20 && c != '\t' && c != '\n') || n == 0) return -1;
        if (e)
            fputs(e, f);
        else
            fwrite(v + i, 1, n, f);
        i += n;
    }
    return 0;
}

/* The PNG keywords a WebP can carry, and the XMP property each becomes (Dublin Core,
 * XMP basic and EXIF schemas), with the markup around its value: a language
 * alternative, an ordered list, or plain text. */
#define XMP_ALT "<rdf:Alt><rdf:li xml:lang=\"x-default\">", "</rdf:li></rdf:Alt>"
#define XMP_SEQ "<rdf:Seq><rdf:li>", "</rdf:li></rdf:Seq>"
#define XMP_TEXT "", ""
static const struct {
    const char *key, *property, *open, *close;
} xmp_keys[] = {
    {"Title", "dc:title", XMP_ALT},
    {"Author", "dc:creator", XMP_SEQ},
    {"Description", "dc:description", XMP_ALT},
    {"Copyright", "dc:rights", XMP_ALT},
    {"Comment", "exif:UserComment", XMP_ALT},
    {"Software", "xmp:CreatorTool", XMP_TEXT},
};

/* An XMP packet (malloc'd string, written through a memory stream) holding text_kv's
 * pairs, or an error for a key no property stands for or a value XML cannot hold. */
static ffu_status xmp_packet(const char *const *text_kv, char **out)
{
    size_t len;
    *out = NULL;
    FILE *f = open_memstream(out, &len);
    if (!f) return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a WebP's XMP packet");
    fputs("<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n"
          "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n"
          " <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n"
          "  <rdf:Description rdf:about=\"\"\n"
          "    xmlns:dc=\"http://purl.org/dc/elements/1.1/\"\n"
          "    xmlns:xmp=\"http://ns.adobe.com/xap/1.0/\"\n"
          "    xmlns:exif=\"http://ns.adobe.com/exif/1.0/\">\n",
          f);
    ffu_status st = FFU_OK;
    for (size_t i = 0; !st && text_kv[i] && text_kv[i + 1]; i += 2) {
        size_t k = 0, nkeys = sizeof xmp_keys / sizeof xmp_keys[0];
        while (k < nkeys && strcmp(xmp_keys[k].key, text_kv[i]) != 0)
            k++;
        if (k == nkeys) {
            st = ffu_error_set(FFU_ERR_UNSUPPORTED,
                               "WebP text key \"%s\" is not supported (Title, Author, "
                               "Description, Copyright, Comment, Software are)",
                               text_kv[i]);
            break;
        }
        fprintf(f, "   <%s>%s", xmp_keys[k].property, xmp_keys[k].open);
        if (xmp_put_text(f, text_kv[i + 1]) < 0)
            st = ffu_error_set(FFU_ERR_INVALID,
                               "WebP text \"%s\" holds a control character or invalid UTF-8",
                               text_kv[i]);
        fprintf(f, "%s</%s>\n", xmp_keys[k].close, xmp_keys[k].property);
    }
    fputs("  </rdf:Description>\n </rdf:RDF>\n</x:xmpmeta>\n<?xpacket end=\"w\"?>", f);
    const int failed = ferror(f);
    if (fclose(f) || failed)
        st = st ? st : ffu_error_set(FFU_ERR_NOMEM, "out of memory for a WebP's XMP packet");
    if (st) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* The encoded file with an "XMP " chunk added (libwebpmux writes the VP8X header that
 * announces it). *out is libwebp's (WebPDataClear). */
static ffu_status webp_add_xmp(const uint8_t *bits, size_t n, const char *xmp, WebPData *out)
{
    WebPDataInit(out);
    const WebPData image = {bits, n}, chunk = {(const uint8_t *)xmp, strlen(xmp)};
    WebPMux *mux = WebPMuxCreate(&image, 0);
    if (!mux) return ffu_error_set(FFU_ERR_NOMEM, "out of memory adding XMP to a WebP");
    WebPMuxError me = WebPMuxSetChunk(mux, "XMP ", &chunk, 0);
    if (me == WEBP_MUX_OK) me = WebPMuxAssemble(mux, out);
    WebPMuxDelete(mux);
    if (me != WEBP_MUX_OK)
        return ffu_error_set(me == WEBP_MUX_MEMORY_ERROR ? FFU_ERR_NOMEM : FFU_ERR_INTERNAL,
                             "libwebpmux could not add XMP (error %d)", (int)me);
    return FFU_OK;
}

ffu_status codec_webp_encode(const ffu_image *img, int quality, const char *const *text_kv,
                             uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    if (img->width > WEBP_MAX_DIMENSION || img->height > WEBP_MAX_DIMENSION)
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "a WebP holds at most %d px a side (the image is %dx%d)",
                             WEBP_MAX_DIMENSION, img->width, img->height);
    char *xmp = NULL;
    ffu_status st = text_kv && text_kv[0] ? xmp_packet(text_kv, &xmp) : FFU_OK;
    if (st < 0) return st;
    ffu_image rgb = {0};
    const ffu_image *src = img;
    if (img->fmt == FFU_PIX_GRAY8) { /* libwebp has no gray input */
        if ((st = ffu_image_create(&rgb, FFU_PIX_RGB24, img->width, img->height)) < 0 ||
            (st = ffu_image_convert(img, &rgb)) < 0) {
            ffu_image_release(&rgb);
            free(xmp);
            return st;
        }
        src = &rgb;
    }
    uint8_t *bits = NULL;
    const float q = (float)quality;
    const uint8_t *p = src->data[0];
    const int w = src->width, h = src->height, stride = src->stride[0];
    size_t n = src->fmt == FFU_PIX_RGBA32  ? WebPEncodeRGBA(p, w, h, stride, q, &bits)
               : src->fmt == FFU_PIX_BGR24 ? WebPEncodeBGR(p, w, h, stride, q, &bits)
                                           : WebPEncodeRGB(p, w, h, stride, q, &bits);
    ffu_image_release(&rgb);
    if (!n) {
        WebPFree(bits);
        free(xmp);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory encoding a %dx%d WebP", w, h);
    }
    WebPData with_xmp;
    WebPDataInit(&with_xmp);
    const int has_xmp = xmp != NULL;
    if (has_xmp) st = webp_add_xmp(bits, n, xmp, &with_xmp);
    free(xmp);
    const uint8_t *file = has_xmp ? with_xmp.bytes : bits;
    const size_t file_size = has_xmp ? with_xmp.size : n;
    if (st >= 0) {
        *out = malloc(file_size); /* the caller frees with free(), not WebPFree */
        if (*out) {
            memcpy(*out, file, file_size);
            *size = file_size;
        } else {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory for a %zu-byte WebP", file_size);
        }
    }
    WebPDataClear(&with_xmp);
    WebPFree(bits);
    return st;
}
