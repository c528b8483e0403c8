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

/* ---- JPEG / PNG / WebP I/O (src/image/codec_*.c) ----------------------------------- */
/* sections below are filled by the codec and kernel files */

/* Decoding gives upright 8-bit pixels in the wanted format (GRAY8, RGB24, BGR24 or
 * RGBA32) whatever the file holds: JPEG gray/YCbCr/RGB/CMYK, PNG gray/RGB/palette at
 * any bit depth, with or without alpha or tRNS (16-bit samples are rounded to 8 bits;
 * alpha is dropped, or set opaque for RGBA32 when the file has none), still WebP (lossy
 * or lossless, with or without alpha). The EXIF orientation (JPEG APP1, PNG eXIf, WebP
 * EXIF chunk) is applied. Damaged input is an error, never a partial image: truncated
 * files, corrupt JPEG entropy data, PNG CRC mismatches and corrupt WebP bitstreams give
 * FFU_ERR_FORMAT. Declared sizes over FFU_IMAGE_MAX_DIM / FFU_IMAGE_MAX_PIXELS give
 * FFU_ERR_TOO_LARGE before any pixel memory is allocated. Other formats (GIF, animated
 * WebP, HEIF, TIFF) give FFU_ERR_UNSUPPORTED, anything else FFU_ERR_FORMAT. `data` is
 * borrowed; *out is owned by the caller (ffu_image_release) and zeroed on error. */
FFU_API ffu_status ffu_image_decode(const void *data, size_t size, ffu_pixfmt want,
                                    ffu_image *out);

/* Largest file ffu_image_load reads (checked before reading). */
#define FFU_IMAGE_MAX_FILE_BYTES ((size_t)512 << 20)

/* Reads and decodes a file; error details start with the path ("x.jpg: truncated
 * JPEG"). Missing file: FFU_ERR_NOT_FOUND; unreadable: FFU_ERR_IO; a folder:
 * FFU_ERR_INVALID; over FFU_IMAGE_MAX_FILE_BYTES: FFU_ERR_TOO_LARGE. */
FFU_API ffu_status ffu_image_load(const char *path, ffu_pixfmt want, ffu_image *out);

/* Reads only the headers: *format = "jpeg", "png" or "webp" (static string), and the
 * size the decoded image will have (orientation applied). Any out-pointer may be NULL. */
FFU_API ffu_status ffu_image_probe(const void *data, size_t size, const char **format,
                                   int *width, int *height);

/* "jpeg", "png" or "webp" (static string) when the first bytes (12 suffice) are those of
 * a format the decoders read, NULL otherwise: a look at the signature, nothing decoded. */
FFU_API const char *ffu_image_format_of(const void *data, size_t size);

/* 1 when a file name ends in an extension the encoders and decoders handle (.jpg,
 * .jpeg, .png, .webp, any case), so folder listings and output names agree. */
FFU_API int ffu_image_name_known(const char *path);

/* Quality used when 0 is passed to the JPEG and WebP encoders. */
#define FFU_IMAGE_JPEG_QUALITY_DEFAULT 92

/* Encoders for GRAY8, RGB24, BGR24 and RGBA32 images (any stride; JPEG drops alpha).
 * *out is malloc'd and freed by the caller with free(); set to NULL/0 on error.
 * JPEG quality is 1..100 (0 = default); from 90 up chroma is not subsampled. */
FFU_API ffu_status ffu_image_encode_jpeg(const ffu_image *img, int quality, uint8_t **out,
                                         size_t *size);
/* text_kv: NULL, or a NULL-terminated list of key, value pairs written as PNG text
 * chunks (tEXt for ASCII values, iTXt for UTF-8), e.g.
 *   const char *kv[] = {"Software", "facefuse 0.1", "Comment", "swapped", NULL};
 * Keys must be 1-79 printable Latin-1 characters (FFU_ERR_INVALID otherwise). */
FFU_API ffu_status ffu_image_encode_png(const ffu_image *img, const char *const *text_kv,
                                        uint8_t **out, size_t *size);
/* Lossy WebP (libwebp's default method) at quality 1..100 (0 = default); alpha is kept.
 * A WebP holds at most 16383 px a side (FFU_ERR_UNSUPPORTED over that). */
FFU_API ffu_status ffu_image_encode_webp(const ffu_image *img, int quality, uint8_t **out,
                                         size_t *size);

/* Encodes by the path's extension (.jpg, .jpeg, .png, .webp, any case; others:
 * FFU_ERR_UNSUPPORTED) and writes through a temporary file in the same directory that is
 * renamed over path, so path is never half-written; on failure (FFU_ERR_IO) no temporary
 * file is left. quality applies to JPEG and WebP (0 = default). */
FFU_API ffu_status ffu_image_save(const char *path, const ffu_image *img, int quality);
/* The same with text: PNG text chunks as in ffu_image_encode_png; for JPEG each pair
 * becomes a comment (COM) segment "key: value"; for WebP an XMP packet holds the pairs
 * whose keys are Title, Author, Description, Copyright, Comment or Software (another
 * key is FFU_ERR_UNSUPPORTED). */
FFU_API ffu_status ffu_image_save_with_text(const char *path, const ffu_image *img,
                                            int quality, const char *const *text_kv);

/* ---- transform estimation, crop/pad, normalisation, drawing ------------------------ */
/* (src/image/transform.c, crop.c, normalize.c, draw.c, font.c) */

/* Transforms are 2x3 row-major matrices in the FORWARD direction, src -> dst:
 *   x' = m[0]*x + m[1]*y + m[2],   y' = m[3]*x + m[4]*y + m[5].
 * Warps take the opposite direction (dst pixel -> src sample), so a face is aligned by
 * M = ffu_estimate_similarity(landmarks -> template), then warping with the inverse
 * (ffu_affine_invert). Points are n interleaved pairs x0,y0,x1,y1,... */

/* Least-squares similarity (rotation, uniform scale, translation; never a reflection),
 * Umeyama's closed form. n >= 2; FFU_ERR_INVALID when the src or dst points all
 * coincide. m is zeroed on error. */
FFU_API ffu_status ffu_estimate_similarity(const float *src_xy, const float *dst_xy, int n,
                                           double m[6]);
/* Least-squares affine (6 DoF). n >= 3; FFU_ERR_INVALID when the src points are
 * (nearly) collinear. m is zeroed on error. */
FFU_API ffu_status ffu_estimate_affine(const float *src_xy, const float *dst_xy, int n,
                                       double m[6]);
/* Applies the forward transform to one point. */
FFU_API void ffu_transform_point(const double m[6], float x, float y, float *ox, float *oy);

/* Copies the rectangle (x, y, dst->width, dst->height) of src into dst. The rectangle
 * may reach outside src, or miss it entirely: those pixels are set to `fill`, the bytes
 * of one pixel in the format's memory order (GRAY8 uses fill[0]; NULL = zeros). Packed
 * formats only, same format on both sides; src and dst must not overlap. */
FFU_API ffu_status ffu_image_crop_pad(const ffu_image *src, ffu_image *dst, int x, int y,
                                      const uint8_t fill[4]);
/* Copies pixels between two existing images of the same size and format (any format). */
FFU_API ffu_status ffu_image_copy(const ffu_image *src, ffu_image *dst);

/* Normalisation of u8 pixels into a model's f32 input:   out = (pixel - mean) * scale
 * and back (ffu_tensor_to_image):  pixel = round(out / scale + mean), clamped to 0..255.
 * Tensor channels come in the image's memory order (R,G,B for RGB24 and RGBA32, B,G,R
 * for BGR24), reversed when swap_rb is set; mean[c] and scale[c] are indexed by tensor
 * channel. gray = 1 makes one channel of BT.601 luma from a colour image. */
typedef struct ffu_norm_params {
    float mean[3];
    float scale[3];
    int swap_rb;
    int gray;
} ffu_norm_params;

/* Fills p with a preset (swap_rb and gray cleared):
 *   "unit"      x / 255                        -> [0, 1]
 *   "symmetric" x / 127.5 - 1                  -> [-1, 1]
 *   "imagenet"  (x / 255 - mean_c) / std_c, mean 0.485 0.456 0.406, std 0.229 0.224 0.225
 *                (in R,G,B tensor order)
 *   "raw"       x                              -> [0, 255]
 * Unknown name -> FFU_ERR_INVALID. */
FFU_API ffu_status ffu_norm_preset(ffu_norm_params *p, const char *name);
/* Writes img (GRAY8, RGB24, BGR24, RGBA32; alpha dropped) into batch slot batch_index
 * of t (NCHW or NHWC). The image size must equal t->w x t->h; t->c must be 3 for colour,
 * 1 with gray (or for a GRAY8 image), or 3 for a GRAY8 image (replicated). */
FFU_API ffu_status ffu_image_to_tensor(const ffu_image *img, const ffu_norm_params *p,
                                       ffu_tensor_view *t, int batch_index);
/* The inverse: slot batch_index of t into img (same size). t->c == 3 fills colour images
 * (GRAY8 gets BT.601 luma); t->c == 1 is replicated into every colour channel; RGBA32
 * alpha is set to 255. NaN becomes 0. gray is ignored. Every scale must be non-zero. */
FFU_API ffu_status ffu_tensor_to_image(const ffu_tensor_view *t, int batch_index,
                                       const ffu_norm_params *p, ffu_image *img);

/* Drawing on packed u8 images (GRAY8, RGB24, BGR24, RGBA32), for previews and debug
 * output. Colours are RGB(A); they are stored in the image's channel order, as BT.601
 * luma in GRAY8, and `a` is written (not blended) into RGBA32 alpha. Every call clips:
 * any coordinates, INT_MIN..INT_MAX included, only touch pixels inside the image.
 * Errors only for a missing or non-packed image or bad arguments. */
typedef struct ffu_color {
    uint8_t r, g, b, a;
} ffu_color;

/* Outline of the rectangle (x, y, w, h), `thickness` pixels wide (< 1 counts as 1),
 * drawn inside it. */
FFU_API ffu_status ffu_draw_rect(ffu_image *img, int x, int y, int w, int h, int thickness,
                                 ffu_color c);
FFU_API ffu_status ffu_draw_fill_rect(ffu_image *img, int x, int y, int w, int h,
                                      ffu_color c);
/* A line from (x0, y0) to (x1, y1) inclusive; thickness > 1 stamps a disc of that
 * diameter along it (clamped to 1..FFU_DRAW_MAX_THICKNESS). */
#define FFU_DRAW_MAX_THICKNESS 255
FFU_API ffu_status ffu_draw_line(ffu_image *img, int x0, int y0, int x1, int y1,
                                 int thickness, ffu_color c);
/* A filled disc: the pixels within `radius` of (x, y); radius <= 0 is one pixel. */
FFU_API ffu_status ffu_draw_point(ffu_image *img, int x, int y, int radius, ffu_color c);
/* Lines through n points xy[2i], xy[2i+1]; closed joins the last to the first. */
FFU_API ffu_status ffu_draw_polyline(ffu_image *img, const int *xy, int n, int closed,
                                     int thickness, ffu_color c);
/* Text in the built-in 6x10 cell bitmap font, top-left at (x, y), each font pixel a
 * scale x scale block (scale 1..FFU_IMAGE_MAX_DIM). Printable ASCII is drawn; '\n'
 * starts a new line; any other byte or UTF-8 sequence shows as a box. bg (NULL =
 * transparent) fills each character cell first. */
FFU_API ffu_status ffu_draw_text(ffu_image *img, int x, int y, const char *text, int scale,
                                 ffu_color fg, const ffu_color *bg);
/* The size ffu_draw_text covers (saturated at INT_MAX); 0 x 0 for NULL, "" or a bad
 * scale. */
FFU_API void ffu_text_size(const char *text, int scale, int *w, int *h);
/* A label for a box whose top-left corner is (x, y): text on a filled bg box sitting on
 * top of the box edge, or inside the box at its top (or the image's) when there is no
 * room above. */
FFU_API ffu_status ffu_draw_label(ffu_image *img, int x, int y, const char *text, int scale,
                                  ffu_color fg, ffu_color bg);

/* ---- colour conversion, resize, warp (src/image/convert.c, resize.c, warp.c) -------- */

/* Colour conversion between images of the same size (dst allocated by the caller):
 *   GRAY8, RGB24, BGR24, RGBA32 <-> each other (RGBA32 alpha written as 255, dropped
 *     when read); gray = BT.601 luma, (4899 R + 9617 G + 1868 B + 8192) >> 14.
 *   NV12, YUV420P -> GRAY8, RGB24, BGR24, RGBA32, and NV12 <-> YUV420P.
 *   GRAY8, RGB24, BGR24, RGBA32 -> NV12, YUV420P (chroma = the mean of each 2x2 block).
 * ffu_image_convert codes YUV as BT.601 limited ("video", "TV") range, Y 16..235 and
 * U, V 16..240; ffu_image_convert_range chooses the range (full = JPEG-style 0..255),
 * ffu_image_convert_yuv the matrix too (HD video is BT.709: ffu_video_reader_color
 * says which a stream uses). YUV -> GRAY8 is the scaled Y, the matrix's own luma.
 * Same format = copy. Size or format mismatches and unsupported pairs ->
 * FFU_ERR_INVALID / FFU_ERR_UNSUPPORTED. The integers are 16-bit fixed point, the same
 * ones the GPU twins (image_gpu.h) use. */
typedef enum ffu_yuv_range {
    FFU_YUV_LIMITED = 0, /* "TV" range */
    FFU_YUV_FULL = 1,    /* full range (JFIF) */
} ffu_yuv_range;
/* The RGB <-> YUV matrix, by its luma weights Kr, Kb. */
typedef enum ffu_yuv_matrix {
    FFU_YUV_BT601 = 0,  /* Kr 0.299, Kb 0.114: SD video, JPEG; the default */
    FFU_YUV_BT709 = 1,  /* Kr 0.2126, Kb 0.0722: HD video */
    FFU_YUV_BT2020 = 2, /* Kr 0.2627, Kb 0.0593 (non-constant luminance): UHD video */
    FFU_YUV_MATRIX_COUNT,
} ffu_yuv_matrix;
/* How an image's YUV is coded. {0} is BT.601 limited, ffu_image_convert's coding. */
typedef struct ffu_yuv_coding {
    ffu_yuv_matrix matrix;
    ffu_yuv_range range;
} ffu_yuv_coding;
FFU_API ffu_status ffu_image_convert(const ffu_image *src, ffu_image *dst);
FFU_API ffu_status ffu_image_convert_range(const ffu_image *src, ffu_image *dst,
                                           ffu_yuv_range range);
FFU_API ffu_status ffu_image_convert_yuv(const ffu_image *src, ffu_image *dst,
                                         ffu_yuv_coding coding);
/* The coding ffu_video_reader_color reports: matrix 709 -> BT709, 2020 -> BT2020,
 * anything else BT601; full_range != 0 -> FFU_YUV_FULL. */
FFU_API ffu_yuv_coding ffu_image_yuv_coding(int matrix, int full_range);

typedef enum ffu_interp {
    FFU_INTERP_NEAREST = 0,  /* pixel centres: src = floor((dst + 0.5) * scale) */
    FFU_INTERP_BILINEAR = 1, /* OpenCV INTER_LINEAR convention (see ffu_image_resize) */
    FFU_INTERP_AREA = 2,     /* exact box filter when shrinking; bilinear when growing */
    FFU_INTERP_COUNT,
} ffu_interp;

/* Resizes src into dst (packed GRAY8, RGB24, BGR24 or RGBA32, same format both sides,
 * any sizes; the images must not overlap). dst's size is the output size.
 * - BILINEAR: half-pixel centres, src = (dst + 0.5) * (src_size / dst_size) - 0.5,
 *   clamped to the edge; 11-bit fixed-point weights (OpenCV's INTER_LINEAR numbers),
 *   so results equal OpenCV's within +-1 (most pixels exactly).
 * - AREA: each output pixel is the mean of the source area it covers (partial pixels
 *   weighted by coverage), as OpenCV INTER_AREA; rounded to nearest. When either axis
 *   grows, the whole resize is BILINEAR instead.
 * - NEAREST: the source pixel whose centre is nearest the output pixel's centre (OpenCV
 *   INTER_NEAREST_EXACT; not INTER_NEAREST, which drops the half-pixel offset).
 * Uses AVX2 where the CPU has it (see ffu_cpu_features / FFU_CPU_MASK); every path gives
 * the same bytes. Allocates nothing: coefficient tables live in a few KB of stack. */
FFU_API ffu_status ffu_image_resize(const ffu_image *src, ffu_image *dst, ffu_interp interp);

typedef enum ffu_border {
    FFU_BORDER_CONSTANT = 0,    /* outside pixels are border_value */
    FFU_BORDER_REPLICATE = 1,   /* aaaaaa|abcdefgh|hhhhhhh */
    FFU_BORDER_REFLECT_101 = 2, /* gfedcb|abcdefgh|gfedcba (OpenCV BORDER_REFLECT_101,
                                   its BORDER_DEFAULT; the edge pixel is not repeated) */
    FFU_BORDER_REFLECT = FFU_BORDER_REFLECT_101, /* the same mode, shorter name */
    FFU_BORDER_COUNT = 3,
} ffu_border;

/* Affine warp. m maps a DESTINATION pixel (x, y) to the SOURCE position it samples:
 *   sx = m[0]*x + m[1]*y + m[2],   sy = m[3]*x + m[4]*y + m[5]
 * (pixel centres at integer coordinates, as OpenCV warpAffine with WARP_INVERSE_MAP).
 * To apply a forward transform F (src -> dst), pass ffu_affine_invert(F).
 * Packed GRAY8, RGB24, BGR24, RGBA32, same format both sides, any sizes, no overlap.
 * NEAREST or BILINEAR (AREA -> FFU_ERR_INVALID). Positions are quantised to 1/32 pixel
 * and bilinear weights are exact integers, as OpenCV does, so results equal OpenCV's
 * within +-1. border_value[c] is channel c's value (memory order) for
 * FFU_BORDER_CONSTANT; NULL means zeros. */
FFU_API ffu_status ffu_image_warp_affine(const ffu_image *src, ffu_image *dst, const double m[6],
                                         ffu_interp interp, ffu_border border,
                                         const uint8_t border_value[4]);
/* Inverse of a 2x3 affine map (either direction). FFU_ERR_INVALID when it is singular
 * (|det| tiny against its entries) or not finite; out is zeroed then. in == out is fine. */
FFU_API ffu_status ffu_affine_invert(const double m[6], double out[6]);

/* CUDA twin of bilinear resize (src/image/cuda/resize_bilinear.cu): host buffers in
 * and out, the same convention and fixed-point numbers as ffu_image_resize (results
 * equal the CPU's within +-1). channels 1..4; strides in bytes. Copies in, runs,
 * copies out: a correctness twin and pattern, not a fast path (it allocates device
 * memory per call). FFU_ERR_DEVICE with CUDA's message when the GPU fails or is
 * absent; FFU_ERR_UNSUPPORTED in builds without CUDA. */
FFU_API ffu_status ffu_cuda_resize_bilinear_u8(const uint8_t *h_src, int sw, int sh,
                                               int sstride, uint8_t *h_dst, int dw, int dh,
                                               int dstride, int channels);
/* Devices: ffu_gpu_device_count (gpu.h). Device-resident image kernels: image_gpu.h. */

/* ---- piecewise-affine warp, masks, blending, colour transfer ----------------------- */
/* (src/image/piecewise.c, blend.c, colour.c; method and accuracy in docs/IMAGE_BLEND.md)
 *
 * Points are n interleaved pairs x0,y0,x1,y1,... in pixel coordinates with pixel centres
 * at integers (as ffu_image_warp_affine and ffu_transform_point). Triangles are int
 * triples indexing the points. A pixel belongs to a triangle or polygon when its centre
 * is inside; centres exactly on an edge or vertex follow one exact tie rule (coordinates
 * rounded to 1/256 px, integer arithmetic; the centre counts as inside when a point an
 * infinitesimal step left and a smaller step down from it is strictly inside), so
 * triangles sharing an edge leave no gap and never both take a pixel, and a mesh covers
 * exactly the pixels that ffu_mask_fill_polygon gives for its outline. Coordinates are
 * clamped to +-2^20 px; NaN or infinite coordinates are FFU_ERR_INVALID. */

/* Warps src into dst triangle by triangle: every dst pixel whose centre lies in
 * triangle t (dst_xy corners) samples src bilinearly at the point the affine map of
 * that triangle (dst corners -> src_xy corners) gives, with the fixed-point numbers of
 * ffu_image_warp_affine (results within +-1 of it for the same map) and source edges
 * replicated. Pixels outside every triangle are untouched. Triangles are drawn in list
 * order (where triangles overlap, the later one wins); degenerate ones (zero area after
 * rounding) are skipped. mask (NULL or GRAY8 of dst's size) gets 255 on every pixel
 * written and is otherwise untouched (clear it first). Packed formats, same on both
 * sides, any sizes, no overlap. Errors (nothing written): bad images, n_points < 3,
 * an index outside 0..n_points-1, non-finite points. Allocates nothing. */
FFU_API ffu_status ffu_image_warp_piecewise(const ffu_image *src, ffu_image *dst,
                                            const float *src_xy, const float *dst_xy,
                                            int n_points, const int *tri, int n_tri,
                                            ffu_image *mask);
/* Sets the pixels of a GRAY8 mask whose centres lie inside the polygon of n >= 3 points
 * (non-zero winding rule, so self-overlapping outlines fill once) to value; others are
 * untouched. Allocates only for n > 256. */
FFU_API ffu_status ffu_mask_fill_polygon(ffu_image *mask, const float *xy, int n,
                                         uint8_t value);
/* The same for a triangle list (pixels ffu_image_warp_piecewise would write). */
FFU_API ffu_status ffu_mask_fill_triangles(ffu_image *mask, const float *xy, int n_points,
                                           const int *tri, int n_tri, uint8_t value);

/* Separable Gaussian blur of a GRAY8 image (for feathering a mask) into another of the
 * same size (no overlap). Kernel as OpenCV GaussianBlur for 8-bit images: size
 * round(6 sigma + 1) made odd, weights exp(-k^2 / (2 sigma^2)) normalised; borders
 * reflected without repeating the edge pixel (OpenCV BORDER_REFLECT_101). Float
 * arithmetic, rounded: within +-1 of OpenCV. sigma in (0, 100]. Allocates nothing;
 * uses AVX2 where the CPU has it (same bytes as the plain path). */
FFU_API ffu_status ffu_mask_gaussian_blur(const ffu_image *src, ffu_image *dst, float sigma);

/* Alpha blend through a mask: src and mask (GRAY8) have the same size; src's top-left
 * lands at (x, y) in dst (parts outside dst are skipped) and there
 *   dst = round((dst * (255 - m) + src * m) / 255)        (m = 0 and 255 exact)
 * for every channel. Same packed format on both sides. */
FFU_API ffu_status ffu_image_blend_mask(ffu_image *dst, const ffu_image *src,
                                        const ffu_image *mask, int x, int y);

/* Poisson seamless cloning (OpenCV seamlessClone NORMAL_CLONE semantics, with an
 * explicit placement): src and mask (GRAY8) have the same size and src's top-left lands
 * at (x, y) in dst. Inside the region O = {mask >= 128, not on the mask's one-pixel outer
 * ring, inside dst} dst becomes the solution of the Poisson equation whose guidance is
 * src's gradient and whose boundary values are dst's pixels around O; dst outside O is
 * untouched. Neighbours beyond dst's edges are left out (masks may touch the border).
 * Solved by multigrid on O's bounding box to within FFU_CLONE_TOL-sized changes (about
 * 0.02 level, see docs/IMAGE_BLEND.md), then rounded. An empty O is a no-op. Packed
 * formats, same on both sides (every channel, alpha too, is solved), no overlap.
 * ctx: NULL, or a context from ffu_clone_ctx_create that keeps the solver's memory
 * between calls (then nothing is allocated once it has grown to the largest region);
 * one context per thread. */
typedef struct ffu_clone_ctx ffu_clone_ctx;
FFU_API ffu_status ffu_clone_ctx_create(ffu_clone_ctx **ctx);
FFU_API void ffu_clone_ctx_destroy(ffu_clone_ctx *ctx); /* NULL: no-op */
FFU_API ffu_status ffu_image_seamless_clone(ffu_clone_ctx *ctx, const ffu_image *src,
                                            const ffu_image *mask, ffu_image *dst, int x,
                                            int y);

/* sRGB <-> CIE L*a*b* (D65, float; L 0..100, a and b about -128..127). Bytes are R,G,B.
 * lab -> rgb clamps to the sRGB gamut. A byte round trip returns the same bytes. */
FFU_API void ffu_color_rgb_to_lab(const uint8_t rgb[3], float lab[3]);
FFU_API void ffu_color_lab_to_rgb(const float lab[3], uint8_t rgb[3]);
/* Whole images (RGB24, BGR24, RGBA32; alpha ignored, written as 255) to and from L,a,b
 * float triples, lab_stride floats per row (>= 3 x width). */
FFU_API ffu_status ffu_image_to_lab(const ffu_image *img, float *lab, int lab_stride);
FFU_API ffu_status ffu_image_from_lab(const float *lab, int lab_stride, ffu_image *img);

typedef enum ffu_color_space {
    FFU_COLOR_LAB = 0, /* Reinhard: statistics in L*a*b* */
    FFU_COLOR_RGB = 1, /* per R, G, B channel: cheaper, tints more */
    FFU_COLOR_SPACE_COUNT,
} ffu_color_space;

/* Mean and standard deviation per channel (L,a,b or R,G,B) of a region. */
typedef struct ffu_color_stats {
    ffu_color_space space;
    double mean[3], std[3];
    double weight; /* sum of the pixel weights */
} ffu_color_stats;

/* Statistics of img's pixels weighted by mask / 255 (mask NULL: every pixel weighs 1;
 * else GRAY8 of img's size). FFU_ERR_INVALID when the mask selects nothing. */
FFU_API ffu_status ffu_image_color_stats(const ffu_image *img, const ffu_image *mask,
                                         ffu_color_space space, ffu_color_stats *out);
/* Maps every pixel of img (pass a view for a ROI) channel-wise by
 *   v' = (v - cur.mean) * want.std / cur.std + want.mean
 * (only shifted where cur.std < 0.001), clamped to the gamut. */
FFU_API ffu_status ffu_image_color_apply(ffu_image *img, const ffu_color_stats *cur,
                                         const ffu_color_stats *want);
/* Reinhard transfer in one call: img's statistics over img_mask are made those of ref
 * over ref_mask (masks may be NULL), applied to all of img. */
FFU_API ffu_status ffu_image_color_transfer(ffu_image *img, const ffu_image *img_mask,
                                            const ffu_image *ref, const ffu_image *ref_mask,
                                            ffu_color_space space);

#ifdef __cplusplus
}
#endif
#endif
