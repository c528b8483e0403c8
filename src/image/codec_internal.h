/* Private interface between the image codec files: codec.c (sniffing, dispatch, files),
 * codec_jpeg.c and codec_png.c (libjpeg-turbo / libpng behind setjmp error handling),
 * codec_webp.c (libwebp) and exif.c (the EXIF orientation parser and the pixel
 * reorientation). Unit tests include it too, to decode without applying the
 * orientation. */
#ifndef FFU_IMAGE_CODEC_INTERNAL_H
#define FFU_IMAGE_CODEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "facefuse/image.h"

/* Progressive JPEGs with more scans than this are refused: a legitimate file has about
 * ten, a hostile one can make libjpeg re-run a whole-image pass per scan. */
#define CODEC_JPEG_MAX_SCANS 256
/* Most bytes libjpeg may hold in its whole-image buffers (progressive coefficients). */
#define CODEC_JPEG_MAX_MEMORY ((long)2048 << 20)
/* Most bytes libpng may allocate for one ancillary chunk (decompressed). */
#define CODEC_PNG_MAX_CHUNK ((size_t)16 << 20)

typedef enum codec_kind { CODEC_NONE = 0, CODEC_JPEG, CODEC_PNG, CODEC_WEBP } codec_kind;

/* FFU_ERR_TOO_LARGE with "image WxH exceeds the ..." when a declared size is over the
 * image caps, FFU_ERR_FORMAT for a zero size, FFU_OK otherwise. */
ffu_status codec_check_dims(uint32_t width, uint32_t height);

/* Decoders. `orient` nonzero applies the EXIF orientation so the pixels come out
 * upright; zero returns them as stored. *out is owned on success, zeroed on error. */
ffu_status codec_jpeg_decode(const uint8_t *data, size_t size, ffu_pixfmt want, int orient,
                             ffu_image *out);
ffu_status codec_png_decode(const uint8_t *data, size_t size, ffu_pixfmt want, int orient,
                            ffu_image *out);
ffu_status codec_webp_decode(const uint8_t *data, size_t size, ffu_pixfmt want, int orient,
                             ffu_image *out);

/* Header-only reads: stored size and EXIF orientation (1 when there is none). */
ffu_status codec_jpeg_probe(const uint8_t *data, size_t size, int *width, int *height,
                            int *orientation);
ffu_status codec_png_probe(const uint8_t *data, size_t size, int *width, int *height,
                           int *orientation);
ffu_status codec_webp_probe(const uint8_t *data, size_t size, int *width, int *height,
                            int *orientation);

/* Encoders: *out is malloc'd (caller frees with free()). text_kv is NULL or a
 * NULL-terminated list of key, value strings (see ffu_image_encode_png). */
ffu_status codec_jpeg_encode(const ffu_image *img, int quality, const char *const *text_kv,
                             uint8_t **out, size_t *size);
ffu_status codec_png_encode(const ffu_image *img, const char *const *text_kv, uint8_t **out,
                            size_t *size);
/* Lossy WebP at quality 1..100; text_kv pairs with the keys Title, Author, Description,
 * Copyright, Comment, Software become an XMP packet (other keys: FFU_ERR_UNSUPPORTED). */
ffu_status codec_webp_encode(const ffu_image *img, int quality, const char *const *text_kv,
                             uint8_t **out, size_t *size);

/* ---- EXIF (exif.c) ---- */

/* Orientation 1..8 from a TIFF structure ("II*\0" / "MM\0*" header, IFD0 tag 0x0112);
 * 0 when absent or malformed. Every offset is bounds-checked against len. */
int codec_exif_orientation_tiff(const uint8_t *tiff, size_t len);
/* The same from an APP1 payload that starts with "Exif\0\0"; 0 for other APP1s. */
int codec_exif_orientation_app1(const uint8_t *payload, size_t len);
/* Scans the marker segments of a JPEG up to its first SOS for the first EXIF APP1 and
 * returns its orientation; 1 when there is none or it is invalid. */
int codec_exif_jpeg_orientation(const uint8_t *data, size_t size);

/* Size of the upright image for a stored width x height under orientation o. */
void codec_orient_size(int o, int width, int height, int *out_width, int *out_height);
/* Creates *dst holding src turned upright for orientation o (2..8; 1 copies). */
ffu_status codec_orient_apply(const ffu_image *src, int o, ffu_image *dst);

#endif
