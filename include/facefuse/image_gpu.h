/* facefuse GPU image kernels: the device-resident twins of the CPU image functions, so
 * decoded frames (NV12 from NVDEC, or uploaded RGB) are converted, resized, cropped,
 * aligned, normalised into a batched model input and annotated without leaving the GPU.
 *
 *   ffu_gpu_image_convert        NV12 -> RGB24 / BGR24 / RGBA32 / GRAY8 (ffu_image_convert,
 *                                ffu_gpu_image_convert_yuv: any ffu_yuv_coding)
 *   ffu_gpu_image_resize         bilinear, packed u8 (ffu_image_resize BILINEAR)
 *   ffu_gpu_image_warp_affine    packed u8 (ffu_image_warp_affine)
 *   ffu_gpu_image_warp_to_tensor affine warp + normalisation into slots of a batched f32
 *                                or f16 tensor, NCHW or NHWC, from RGB/BGR/RGBA or NV12,
 *                                many slots per launch (= ffu_image_convert, then
 *                                ffu_image_warp_affine, then ffu_image_to_tensor)
 *   ffu_gpu_image_to_tensor      the same without a warp (identity)
 *   ffu_gpu_image_draw           boxes, filled boxes, points (ffu_draw_rect,
 *                                ffu_draw_fill_rect, ffu_draw_point)
 *
 * Results: every kernel runs the CPU twin's integer and float arithmetic (same fixed
 * point, same rounding, no fused multiply-adds), so its output is meant to be byte for
 * byte the CPU twin's (f16: the CPU's f32 value rounded to nearest even). See
 * docs/IMAGE_GPU.md for what has and has not been verified on a GPU.
 *
 * Calls only queue work on the stream `s` (never NULL) and return; errors found while
 * queueing come back at once (FFU_ERR_INVALID for bad arguments, FFU_ERR_DEVICE for a
 * failed launch), errors raised while a kernel runs come back from
 * ffu_gpu_stream_sync. Images and tensors are borrowed and must stay allocated until
 * the stream has finished with them. Nothing is allocated. Builds without CUDA return
 * FFU_ERR_UNSUPPORTED from every call. */
#ifndef FACEFUSE_IMAGE_GPU_H
#define FACEFUSE_IMAGE_GPU_H

#include "core.h"
#include "gpu.h"
#include "image.h"
#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A borrowed view of a batch of images in device memory (a model input). data is a
 * device pointer; dtype FFU_DTYPE_F32 or FFU_DTYPE_F16; elements are dense in the
 * layout's order (NCHW: ((b * c + ch) * h + y) * w + x). */
typedef struct ffu_gpu_tensor_view {
    void *data;
    ffu_dtype dtype;
    ffu_tensor_layout layout;
    int n, c, h, w;
} ffu_gpu_tensor_view;

/* NV12 into an RGB24, BGR24, RGBA32 (alpha 255) or GRAY8 image of the same, even, size,
 * decoded as `coding` says (ffu_gpu_image_convert: BT.601 limited range;
 * ffu_gpu_image_convert_range: BT.601 in either range). Same bytes as
 * ffu_image_convert_yuv / ffu_image_convert / ffu_image_convert_range. Source and
 * destination must not overlap. An unknown matrix or range is FFU_ERR_INVALID. */
FFU_API ffu_status ffu_gpu_image_convert(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                         ffu_gpu_image *dst);
FFU_API ffu_status ffu_gpu_image_convert_range(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                               ffu_gpu_image *dst, ffu_yuv_range range);
FFU_API ffu_status ffu_gpu_image_convert_yuv(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                             ffu_gpu_image *dst, ffu_yuv_coding coding);

/* Bilinear resize between two packed u8 images of one format (GRAY8, RGB24, BGR24,
 * RGBA32); dst's size is the output size. Same bytes as ffu_image_resize with
 * FFU_INTERP_BILINEAR. */
FFU_API ffu_status ffu_gpu_image_resize(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                        ffu_gpu_image *dst);

/* Affine warp between two packed u8 images of one format; m maps a destination pixel to
 * the source position it samples, interp NEAREST or BILINEAR, any border mode;
 * border_value NULL = zeros. Same bytes as ffu_image_warp_affine. */
FFU_API ffu_status ffu_gpu_image_warp_affine(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                             ffu_gpu_image *dst, const double m[6],
                                             ffu_interp interp, ffu_border border,
                                             const uint8_t border_value[4]);

/* One slot of a batched warp: tensor slot `batch_index` gets source srcs[src] warped by
 * m (tensor pixel (x, y) -> source position, the ffu_image_warp_affine convention; a
 * face is aligned with ffu_affine_invert of its landmark fit, a letterbox is
 * m = {1/s, 0, -pad_x/s, 0, 1/s, -pad_y/s}). */
typedef struct ffu_gpu_warp_job {
    int src;
    int batch_index;
    double m[6];
} ffu_gpu_warp_job;

/* How sources are sampled and normalised, shared by all jobs of one call. */
typedef struct ffu_gpu_warp_opts {
    ffu_interp interp;       /* FFU_INTERP_NEAREST or FFU_INTERP_BILINEAR */
    ffu_border border;       /* where a sample falls outside its source */
    uint8_t border_value[4]; /* FFU_BORDER_CONSTANT: a pixel in the source's memory order
                                (R,G,B for NV12 sources) */
    ffu_yuv_range range;     /* NV12 sources: FFU_YUV_LIMITED (video) or FFU_YUV_FULL */
    ffu_norm_params norm;    /* mean, scale, swap_rb, gray: as ffu_image_to_tensor */
    ffu_yuv_matrix matrix;   /* NV12 sources: FFU_YUV_BT601 (0, so zeroed options keep
                                the old behaviour), BT709 for HD video, BT2020 */
} ffu_gpu_warp_opts;

/* Jobs per kernel launch; larger calls are split into launches of this many (all on s,
 * in order). */
#define FFU_GPU_WARP_JOBS_PER_LAUNCH 32

/* The general pre-processing kernel. For each job, every element of slot
 * jobs[i].batch_index of t (t->h x t->w pixels) is
 *   ffu_image_to_tensor(ffu_image_warp_affine(rgb(srcs[src]), m, interp, border), norm)
 * where rgb() is the image itself for RGB24, BGR24 and RGBA32 sources and
 * ffu_image_convert_yuv(NV12 -> RGB24, {matrix, range}) for NV12 sources (tensor channels are
 * then R,G,B, or B,G,R with norm.swap_rb). t->c is 3, or 1 with norm.gray (BT.601 luma
 * as ffu_image_to_tensor computes it). f16 tensors get the f32 value rounded to nearest
 * even. Sources may differ in size and format (many frames), or one source may feed
 * many jobs (many faces of one frame). Slots no job names are not touched; when two
 * jobs name the same slot the result is undefined. n_jobs == 0 does nothing. */
FFU_API ffu_status ffu_gpu_image_warp_to_tensor(ffu_gpu_stream *s, const ffu_gpu_image *srcs,
                                                int n_srcs, const ffu_gpu_warp_job *jobs,
                                                int n_jobs, const ffu_gpu_warp_opts *opts,
                                                const ffu_gpu_tensor_view *t);

/* ffu_image_to_tensor on the device: img (RGB24, BGR24, RGBA32, or NV12 decoded with
 * limited range) of exactly t->w x t->h into slot batch_index. */
FFU_API ffu_status ffu_gpu_image_to_tensor(ffu_gpu_stream *s, const ffu_gpu_image *img,
                                           const ffu_norm_params *p, const ffu_gpu_tensor_view *t,
                                           int batch_index);

/* ---- drawing -------------------------------------------------------------------------- */

typedef enum ffu_gpu_shape_kind {
    FFU_GPU_SHAPE_RECT = 0,      /* outline of (x, y, w, h), `thickness` wide, inside it */
    FFU_GPU_SHAPE_FILL_RECT = 1, /* the rectangle (x, y, w, h) filled */
    FFU_GPU_SHAPE_POINT = 2,     /* disc of `radius` around (x, y) (<= 0: one pixel) */
    FFU_GPU_SHAPE_COUNT,
} ffu_gpu_shape_kind;

typedef struct ffu_gpu_shape {
    ffu_gpu_shape_kind kind;
    int x, y, w, h;
    int thickness; /* RECT; < 1 counts as 1 */
    int radius;    /* POINT */
    ffu_color color;
} ffu_gpu_shape;

/* Shapes per kernel launch; larger calls are split (in order). */
#define FFU_GPU_DRAW_SHAPES_PER_LAUNCH 64

/* Draws n shapes in order (later shapes cover earlier ones) on a packed u8 device image
 * (GRAY8, RGB24, BGR24, RGBA32): the same pixels and bytes as the matching sequence of
 * ffu_draw_rect / ffu_draw_fill_rect / ffu_draw_point calls, clipping included (any int
 * coordinates). n == 0 does nothing. */
FFU_API ffu_status ffu_gpu_image_draw(ffu_gpu_stream *s, ffu_gpu_image *img,
                                      const ffu_gpu_shape *shapes, int n);

#ifdef __cplusplus
}
#endif

#endif
