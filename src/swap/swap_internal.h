/* Private interface between the parts of the swap module: swap.c (the swapper object,
 * target selection, dispatch), mesh.c (the built-in mesh swapper), swap_onnx.c (ONNX
 * swappers in FaceFusion's conventions), enhance.c (ONNX enhancers), occlusion.c
 * (ONNX occluder), paste.c (crop-space masks and paste-back into the frame's ROI). */
#ifndef FFU_SWAP_INTERNAL_H
#define FFU_SWAP_INTERNAL_H

#include "facefuse/nn.h"
#include "facefuse/swap.h"

/* ---- paste-back (paste.c) ------------------------------------------------------------ */

/* Box mask over a size x size aligned crop (GRAY8, 255 = swapped face): the crop minus
 * padding (top, right, bottom, left in % of size), blurred by a Gaussian of
 * sigma = blur * size / 4 ... (FaceFusion: blur amount 0.5 * size * blur, sigma / 4).
 * `mask` is allocated when empty, reused when it has the right size. */
ffu_status swap_box_mask(int size, float blur, const float padding[4], ffu_image *mask);
/* Multiplies mask by other (both GRAY8, same size): mask = mask * other / 255. */
ffu_status swap_mask_multiply(ffu_image *mask, const ffu_image *other);
/* Pastes `crop` (RGB24) into frame (RGB24) through the inverse of m (frame -> crop
 * transform) with crop-space `mask` (GRAY8 of the crop's size): inside the ROI (the
 * crop's footprint in the frame, clipped) frame = frame * (1 - a) + warped * a with a
 * the warped mask; pixels outside the ROI are untouched. */
ffu_status swap_paste_back(ffu_image *frame, const ffu_image *crop, const double m[6],
                           const ffu_image *mask);

/* ---- ONNX swappers (swap_onnx.c) ---------------------------------------------------- */

typedef struct swap_net swap_net;
/* spec: "inswapper:PATH", "hyperswap:PATH", "simswap:PATH" or "onnx:PATH" (kind from
 * the file name, else from the inputs: a 512x512 last initializer = inswapper).
 * Checks the model's inputs (source [1,D], target [1,3,S,S]) and output. */
/* run: backend, threads, device and fp16 of the session (its `model` is unused); NULL =
 * the defaults. The same for the enhancer, the occluder and swap_session_create. */
ffu_status swap_net_open(const char *spec, const ffu_face_model_opts *run, swap_net **out);
void swap_net_close(swap_net *n);
const char *swap_net_kind(const swap_net *n);     /* "inswapper", "hyperswap", "simswap" */
const char *swap_net_template(const swap_net *n); /* alignment template name */
int swap_net_size(const swap_net *n);             /* crop side: 128 or 256 */
int swap_net_embedding_dim(const swap_net *n);    /* the `source` input's length */
/* Turns an identity embedding (the averaged, L2-normalised source embedding from the
 * ArcFace-convention embedder) into the model's `source` input (inswapper: emap
 * projection then normalisation). out has swap_net_embedding_dim floats. */
ffu_status swap_net_source(const swap_net *n, const float *embedding, int dim, float *out);
/* Aligns the target face (its kps) to the net's template, runs the net with `source`
 * (from swap_net_source) and writes the swapped size x size crop (RGB24; allocated when
 * empty) and the frame -> crop transform m. */
ffu_status swap_net_run(swap_net *n, const ffu_image *frame, const ffu_face *target,
                        const float *source, ffu_image *crop, double m[6]);
/* The aligned target crop of the last swap_net_run (RGB24, size x size,
 * before the swap; owned by n, valid until the next run): what masks that look at the
 * target (occlusion, FaceFusion computes it on this crop) are made from. NULL before the
 * first run. Additive (onnxswap). */
const ffu_image *swap_net_aligned(const swap_net *n);

/* ---- ONNX enhancers (enhance.c) ------------------------------------------------------ */

typedef struct swap_enhancer swap_enhancer;
/* spec: "gfpgan:PATH", "codeformer:PATH" or "onnx:PATH" (a `weight` input = codeformer). */
ffu_status swap_enhancer_open(const char *spec, const ffu_face_model_opts *run,
                              swap_enhancer **out);
void swap_enhancer_close(swap_enhancer *e);
/* Enhances the face (ffhq_512 alignment from its kps) and pastes it back into frame
 * with a box mask, mixed in at `blend` (0..1). codeformer_weight feeds `weight`. */
ffu_status swap_enhancer_run(swap_enhancer *e, ffu_image *frame, const ffu_face *face,
                             float blend, float codeformer_weight);

/* ---- ONNX occluder (occlusion.c) ----------------------------------------------------- */

typedef struct swap_occluder swap_occluder;
/* spec "onnx:PATH": input [1,S,S,3] or [1,3,S,S] RGB 0..1, output [1,S,S,1] or
 * [1,1,S,S] probability of "face, not occluded" (FaceFusion's xseg convention). */
ffu_status swap_occluder_open(const char *spec, const ffu_face_model_opts *run,
                              swap_occluder **out);
void swap_occluder_close(swap_occluder *o);
/* Mask (GRAY8, crop's size; allocated when empty) of the visible face in an aligned
 * crop: 255 = face, 0 = occluder. */
ffu_status swap_occluder_run(swap_occluder *o, const ffu_image *crop, ffu_image *mask);

/* ---- helpers shared by the ONNX parts (swap_onnx.c; additive, onnxswap) ------------- */

/* Splits a "KIND:PATH" spec: when the text before the first ':' is one of `kinds`
 * (NULL-terminated list) or "onnx", it is copied into kind and the path after it is
 * returned; otherwise kind is "" and the whole spec is the path. */
const char *swap_spec_split(const char *spec, const char *const *kinds, char *kind,
                            size_t kind_len);
/* "[1,3,128,128]" with "?" for dynamic dims; "(no shape)" for rank -1. Returns buf. */
const char *swap_dims_str(const ffu_nn_tensor *t, char *buf, size_t len);
/* "a, b, c": the model's input names, for messages. Returns buf. */
const char *swap_input_names(const ffu_nn_model *m, char *buf, size_t len);
/* Loads an ONNX model: FFU_ERR_NOT_FOUND "what model file PATH not found" when absent. */
ffu_status swap_model_load(const char *what, const char *path, ffu_nn_model **out);
ffu_status swap_session_create(const ffu_nn_model *m, const ffu_face_model_opts *run,
                               ffu_nn_session **out);

#endif
