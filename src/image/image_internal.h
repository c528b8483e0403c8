/* Private to the library: image geometry shared by host images (image.c) and device
 * images (src/gpu/gpu.c), so both lay planes out by one rule. */
#ifndef FFU_IMAGE_INTERNAL_H
#define FFU_IMAGE_INTERNAL_H

#include "facefuse/image.h"

/* Checks format and size (caps, even sizes for planar formats) and gives each plane's
 * stride (rounded up to `align` bytes) and rows, and the bytes of all planes together. */
ffu_status image_plane_layout(ffu_pixfmt fmt, int width, int height, int align,
                              int strides[3], int rows[3], size_t *total);

#endif
