/* facefuse swap: face swapping for images and video frames. A swapper holds a source
 * identity (from one or more photos), finds the target faces in a frame (selection:
 * one / many / reference; ordering; gender and age filters), and pastes the source
 * identity onto each: the built-in mesh swapper (no network weights: FaceMesh-468
 * geometry of the target, source texture warped triangle by triangle, region mask,
 * colour matching, Poisson or feathered blending) or a user-supplied ONNX swapper in
 * FaceFusion's conventions (inswapper_128, hyperswap_*_256, simswap_256), optionally
 * followed by an ONNX face enhancer (GFPGAN / CodeFormer conventions); masks are
 * box, region (from landmarks) and occlusion (user ONNX occluder); paste-back touches
 * the face's region of interest only.
 *
 * A frame is swapped in two steps so that video can smooth landmarks over time in
 * frame order while the expensive parts run on many threads:
 *
 *   ffu_swapper_find_targets(sw, frame, &targets);  // detect + select + landmarks
 *   ffu_swap_smoother_apply(sm, &targets, time);    // video only, in frame order
 *   ffu_swapper_apply(sw, frame, &targets);          // swap + mask + blend, in place
 *
 * ffu_swapper_swap_image does both for a still image. Video files: ffu_swap_video.
 * A swapper is used by one thread at a time (create one per worker thread). */
#ifndef FACEFUSE_SWAP_H
#define FACEFUSE_SWAP_H

#include "core.h"
#include "face.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ffu_swap_select {
    FFU_SWAP_SELECT_ONE = 0,   /* the first face in `order` (default: the largest) */
    FFU_SWAP_SELECT_MANY,      /* every face passing the filters */
    FFU_SWAP_SELECT_REFERENCE, /* faces whose distance to the reference face is below
                                * reference_distance */
} ffu_swap_select;

typedef enum ffu_swap_order {
    FFU_SWAP_ORDER_LARGE_SMALL = 0, /* default */
    FFU_SWAP_ORDER_SMALL_LARGE,
    FFU_SWAP_ORDER_LEFT_RIGHT,
    FFU_SWAP_ORDER_RIGHT_LEFT,
    FFU_SWAP_ORDER_TOP_BOTTOM,
    FFU_SWAP_ORDER_BOTTOM_TOP,
    FFU_SWAP_ORDER_BEST_WORST, /* detector score */
    FFU_SWAP_ORDER_WORST_BEST,
} ffu_swap_order;

enum {
    FFU_SWAP_MASK_BOX = 1 << 0,       /* the aligned crop, padded and blurred */
    FFU_SWAP_MASK_REGION = 1 << 1,    /* face oval from landmarks (eyes/mouth optional) */
    FFU_SWAP_MASK_OCCLUSION = 1 << 2, /* user ONNX occluder (hands, hair, glasses...) */
};

typedef enum ffu_swap_colour {
    FFU_SWAP_COLOUR_NONE = 0,
    FFU_SWAP_COLOUR_LAB,        /* Reinhard: Lab mean/std of the swapped face -> target's */
    FFU_SWAP_COLOUR_MULTISCALE, /* low-frequency colour of the target kept (band split) */
} ffu_swap_colour;

typedef enum ffu_swap_blend {
    FFU_SWAP_BLEND_FEATHER = 0, /* alpha blend through the blurred mask */
    FFU_SWAP_BLEND_POISSON,     /* seamless clone at the boundary */
} ffu_swap_blend;

typedef struct ffu_swapper_opts {
    /* "mesh" (NULL, default), or an ONNX swapper: "inswapper:PATH", "hyperswap:PATH",
     * "simswap:PATH", or "onnx:PATH" (convention guessed from the file name and the
     * model's inputs). */
    const char *swapper;
    const char *enhancer;    /* NULL = none; "gfpgan:PATH", "codeformer:PATH", "onnx:PATH" */
    float enhancer_blend;    /* 0..1 share of the enhanced face; 0 = 0.8 */
    float codeformer_weight; /* CodeFormer fidelity `weight` input; 0 = 0.5 */
    const char *occluder;    /* "onnx:PATH" for FFU_SWAP_MASK_OCCLUSION */
    unsigned masks;          /* FFU_SWAP_MASK_* bits; 0 = region for mesh, box for ONNX */
    float mask_blur;         /* box mask blur as a share of the crop side; 0 = 0.3 */
    float mask_padding[4];   /* box mask padding top, right, bottom, left, % of the crop */
    int keep_mouth;          /* region mask leaves the target's mouth interior */
    int keep_eyes;           /* region mask leaves the target's eyes */
    ffu_swap_colour colour;  /* ffu_swapper_opts_default: LAB (0 is NONE) */
    ffu_swap_blend blend;    /* 0 = FEATHER, the default: docs/SWAP.md measures it as good
                              * at the seam as Poisson and far cheaper */
    /* Target selection */
    ffu_swap_select select;
    ffu_swap_order order;
    const char *gender;       /* NULL, "male" or "female" */
    float age_min, age_max;   /* 0 = no limit (needs the attributes model when set) */
    float reference_distance; /* select=reference: (1 - cos) / 2 below this; 0 = the
                               * embedder's calibrated threshold as a distance (faceres:
                               * 0.24; FaceFusion's 0.3 is for ArcFace embeddings) */
    /* Models of the analysis stages (detector, landmarks, embedder) */
    ffu_detector_opts detect;
    ffu_face_model_opts embed;
    ffu_face_model_opts landmarks;
    const char *backend; /* "cpu" (default), "ref" or "cuda", for every model it opens */
    int threads;         /* intra-op threads per model; 0 = all cores */
    int device;          /* cuda: the CUDA device */
    int fp16;            /* cuda: fp16 compute where each layer's accuracy check passes */
    int bf16;            /* cpu: bf16 compute where each layer's accuracy check passes */
    int watermark;       /* 1: a visible "synthetic" mark in the frame's corner */
} ffu_swapper_opts;

/* Time spent per stage since create (or ffu_swapper_timing_reset), milliseconds. */
typedef struct ffu_swap_timing {
    int64_t frames, faces;
    double detect_ms, landmarks_ms, select_ms; /* find_targets */
    double warp_ms, swap_net_ms, enhance_ms, mask_ms, colour_ms, blend_ms; /* apply */
} ffu_swap_timing;

typedef struct ffu_swapper ffu_swapper;

FFU_API void ffu_swapper_opts_default(ffu_swapper_opts *o);
/* Opens the models the options need. FFU_ERR_NOT_FOUND names a missing model file;
 * FFU_ERR_FORMAT / FFU_ERR_UNSUPPORTED an ONNX file that does not have the convention's
 * inputs and outputs. */
FFU_API ffu_status ffu_swapper_create(const ffu_swapper_opts *o, ffu_swapper **out);
FFU_API void ffu_swapper_destroy(ffu_swapper *sw);

/* Sets the source identity from n photos (RGB24): the largest face of each; the
 * embeddings are averaged (ONNX swappers); the mesh swapper takes its texture from the
 * most frontal, largest of them. FFU_ERR_NOT_FOUND ("no face in source 2 (path?)")
 * when a photo has no face: the message names the index. */
FFU_API ffu_status ffu_swapper_set_source(ffu_swapper *sw, const ffu_image *images, int n);
/* Copies the source of another swapper with the same options (worker threads share
 * one analysed source instead of each detecting it again). */
FFU_API ffu_status ffu_swapper_copy_source(ffu_swapper *dst, const ffu_swapper *src);
/* select = reference: the face to look for, the largest in img unless face_index >= 0
 * (index in the detector's score order). */
FFU_API ffu_status ffu_swapper_set_reference(ffu_swapper *sw, const ffu_image *img,
                                             int face_index);

/* Detects faces in frame (RGB24), applies selection, order and filters, and computes
 * what apply needs (landmarks; embeddings when selection or filters need them).
 * targets is cleared first. No face selected is not an error (count 0). */
FFU_API ffu_status ffu_swapper_find_targets(ffu_swapper *sw, const ffu_image *frame,
                                            ffu_face_list *targets);
/* Swaps the source onto each target face of frame (RGB24, changed in place: only the
 * faces' regions of interest are written). */
FFU_API ffu_status ffu_swapper_apply(ffu_swapper *sw, ffu_image *frame,
                                     const ffu_face_list *targets);
/* find_targets + apply; *swapped (may be NULL) gets the number of faces swapped. */
FFU_API ffu_status ffu_swapper_swap_image(ffu_swapper *sw, ffu_image *frame, int *swapped);

FFU_API void ffu_swapper_timing_get(const ffu_swapper *sw, ffu_swap_timing *t);
FFU_API void ffu_swapper_timing_reset(ffu_swapper *sw);
/* "mesh", "inswapper", "hyperswap", "simswap". */
FFU_API const char *ffu_swapper_kind(const ffu_swapper *sw);
/* The swapper's face detector, for queries such as ffu_detector_smallest_face; owned by
 * the swapper, used under its rules. */
FFU_API ffu_detector *ffu_swapper_detector(ffu_swapper *sw);

/* ---- temporal smoothing of target landmarks (video) -------------------------------- */

typedef struct ffu_swap_smoother ffu_swap_smoother;
/* strength 0..1 (0 = 0.5): how much landmark jitter is removed; fast motion is still
 * followed (the filter adapts its cut-off to speed). */
FFU_API ffu_status ffu_swap_smoother_create(float strength, ffu_swap_smoother **out);
FFU_API void ffu_swap_smoother_destroy(ffu_swap_smoother *sm);
/* Matches targets to the previous frame's faces (box IoU) and filters their keypoints
 * and landmarks in place. Call in frame order; time in seconds, increasing. */
FFU_API ffu_status ffu_swap_smoother_apply(ffu_swap_smoother *sm, ffu_face_list *targets,
                                           double time);
FFU_API void ffu_swap_smoother_reset(ffu_swap_smoother *sm);

/* ---- provenance -------------------------------------------------------------------- */

/* The tag every output carries: "synthetic: faces swapped by facefuse <version>
 * (swapper <kind>)". Written into buf (NUL-terminated, truncated to size). */
FFU_API void ffu_swap_provenance(const ffu_swapper *sw, char *buf, size_t size);
/* Draws the visible "SYNTHETIC" mark in the bottom-right corner. */
FFU_API ffu_status ffu_swap_draw_watermark(ffu_image *frame);

/* ---- video ------------------------------------------------------------------------- */

typedef struct ffu_swap_progress {
    int64_t frames_done, frames_total; /* total 0 when unknown */
    double elapsed_s, eta_s;           /* eta < 0 when unknown */
    double fps;
} ffu_swap_progress;

/* What a finished (or stopped) ffu_swap_video did, for reports and benchmarks. */
typedef struct ffu_swap_video_stats {
    int64_t frames;               /* frames written (or processed before a stop) */
    int64_t frames_without_face;  /* frames in which no target was selected */
    int64_t faces;                /* faces swapped, all frames together */
    int width, height;            /* the frames' size */
    int threads;                  /* worker swappers used */
    double seconds, fps;          /* wall time of the whole call; frames / seconds */
    /* Coordinating thread: decode (ffu_video_reader_read), smoothing, encode
     * (ffu_video_writer_write + close), milliseconds. */
    double decode_ms, smooth_ms, encode_ms;
    ffu_swap_timing swap;         /* ffu_swapper_timing_get summed over the workers */
} ffu_swap_video_stats;

typedef struct ffu_swap_video_opts {
    int threads;          /* worker threads (one swapper each); 0 = cores */
    float smooth;         /* landmark smoothing strength; 0 = 0.5, < 0 = off */
    const char *codec;    /* encoder; NULL = libx264 */
    int crf;              /* 0 = 18 */
    const char *preset;   /* NULL = "veryfast" */
    int keep_audio;       /* 1 (default through opts_default): audio copied */
    int64_t max_frames;   /* 0 = all */
    int hwaccel;          /* ffu_video_hwaccel for decoding the input: 0 = CPU */
    int hw_device;        /* CUDA device for hwaccel */
    /* Called on the calling thread about every 0.25 s and at the end; a non-zero
     * answer stops the job (FFU_ERR_CLOSED; no output is left). */
    int (*progress)(void *user, const ffu_swap_progress *p);
    void *user;
    ffu_swap_video_stats *stats; /* NULL, or filled when ffu_swap_video returns (also on
                                  * error: what was done until then) */
} ffu_swap_video_opts;

FFU_API void ffu_swap_video_opts_default(ffu_swap_video_opts *o);
/* Swaps every frame of in_path into out_path (frame rate kept, audio copied, the
 * provenance tag in the container's "comment"). sw is the configured swapper with its
 * source; worker swappers are created from `opts` (the same options sw was created
 * with) and share its source. out_path appears only when the whole video succeeded. */
FFU_API ffu_status ffu_swap_video(ffu_swapper *sw, const ffu_swapper_opts *opts,
                                  const char *in_path, const char *out_path,
                                  const ffu_swap_video_opts *vo);

#ifdef __cplusplus
}
#endif
#endif
