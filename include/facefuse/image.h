/* facefuse image: image buffers, JPEG/PNG I/O, colour conversion, resize, warps,
 * transform estimation, crop/pad, normalisation into model tensors, drawing.
 *
 * An ffu_image is a plain struct describing pixels it may or may not own: images made
 * by ffu_image_create / ffu_image_load own a reference-counted buffer and are released
 * with ffu_image_release; views (ffu_image_view, ffu_image_wrap) borrow memory and
 * release is a no-op for them. Kernels never allocate: the caller supplies the output
 * image with the wanted size and format. */
#ifndef FACEFUSE_IMAGE_H
#define FACEFUSE_IMAGE_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- image type --------------------------------------------------------------------- */

typedef enum ffu_pixfmt {
    FFU_PIX_NONE = 0,
    FFU_PIX_GRAY8,   /* 1 byte per pixel */
    FFU_PIX_RGB24,   /* packed R,G,B */
    FFU_PIX_BGR24,   /* packed B,G,R */
    FFU_PIX_RGBA32,  /* packed R,G,B,A */
    FFU_PIX_NV12,    /* Y plane, then interleaved UV plane at half resolution */
    FFU_PIX_YUV420P, /* Y, U, V planes; U and V at half resolution */
    FFU_PIX_COUNT,
} ffu_pixfmt;

/* Hard caps applied to every decoded or created image: a hostile file cannot make us
 * allocate more than this. */
#define FFU_IMAGE_MAX_DIM 32768
#define FFU_IMAGE_MAX_PIXELS (256u * 1024u * 1024u)

typedef struct ffu_image {
    ffu_pixfmt fmt;
    int width, height;
    uint8_t *data[3]; /* planes; packed formats use data[0] only */
    int stride[3];    /* bytes per row of each plane */
    void *owner;      /* internal: the ref-counted buffer, NULL for views */
} ffu_image;

FFU_API const char *ffu_pixfmt_name(ffu_pixfmt fmt);
/* Bytes per pixel of packed formats (1, 3, 4); 0 for planar formats. */
FFU_API int ffu_pixfmt_bpp(ffu_pixfmt fmt);

/* Allocates a zeroed image (rows aligned to 64 bytes). Checks the caps. */
FFU_API ffu_status ffu_image_create(ffu_image *img, ffu_pixfmt fmt, int width, int height);
/* Releases an owned image and zeroes the struct; a no-op on views and zeroed structs. */
FFU_API void ffu_image_release(ffu_image *img);
/* Wraps caller memory of a packed format (borrowed; release does nothing). */
FFU_API ffu_status ffu_image_wrap(ffu_image *img, ffu_pixfmt fmt, int width, int height,
                                  void *data, int stride);
/* A view of a rectangle of a packed or planar image (borrowed). The rectangle must lie
 * inside the image; planar formats need even x, y. */
FFU_API ffu_status ffu_image_view(ffu_image *view, const ffu_image *src, int x, int y,
                                  int width, int height);
/* Deep copy into a new owned image. */
FFU_API ffu_status ffu_image_clone(ffu_image *dst, const ffu_image *src);

/* ---- f32 tensor views --------------------------------------------------------------- */

typedef enum ffu_tensor_layout { FFU_LAYOUT_NCHW = 0, FFU_LAYOUT_NHWC = 1 } ffu_tensor_layout;

/* A borrowed view of a float tensor holding a batch of images. */
typedef struct ffu_tensor_view {
    float *data;
    ffu_tensor_layout layout;
    int n, c, h, w;
} ffu_tensor_view;

/* Pointer to element (b, ch, y, x) whatever the layout. */
FFU_API float *ffu_tensor_at(const ffu_tensor_view *t, int b, int ch, int y, int x);

/* ---- JPEG / PNG I/O (src/image/codec_*.c) ------------------------------------------- */
/* sections below are filled by the codec and kernel files */

#ifdef __cplusplus
}
#endif
#endif
