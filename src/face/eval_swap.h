/* Metrics for face swap quality (`facefuse eval swap`, docs/EVAL.md "Face swap
 * quality"), kept apart from the runner so that they work on plain images and point
 * arrays and can be tested on cases whose answer is known:
 *   - background: which pixels a swap changed outside the rectangles it was allowed to
 *     write (expected none), and the PSNR between input and output outside given
 *     rectangles (the face box grown to the mask's extent);
 *   - temporal stability: landmark jitter of a frame sequence with the face's own
 *     motion (the least-squares affine map between consecutive frames) removed, and the
 *     motion of one sequence that another does not explain;
 *   - the mesh swapper's region of interest, as the swap module defines it.
 * Identity is a cosine of embeddings (ffu_face_similarity) and needs nothing here.
 * Internal to the library (not installed); names carry the prefix swapeval_. */
#ifndef FFU_FACE_EVAL_SWAP_H
#define FFU_FACE_EVAL_SWAP_H

#include <stdint.h>

#include "facefuse/face.h"
#include "facefuse/image.h"

/* A pixel rectangle [x0, x1) x [y0, y1). */
typedef struct swapeval_rect {
    int x0, y0, x1, y1;
} swapeval_rect;

/* The region the mesh swapper may write for a target face with 468+ landmarks, as
 * src/swap/mesh_internal.h states it: the face oval's bounding box plus 2 px, clipped
 * to the width x height frame. Returns 0 (and an empty rect) when the face has no mesh
 * or the region misses the frame, 1 otherwise. */
int swapeval_mesh_roi(const ffu_face *target, int width, int height, swapeval_rect *roi);

/* The smallest rectangle holding a and b (an empty one, x1 <= x0, is ignored). */
swapeval_rect swapeval_rect_union(swapeval_rect a, swapeval_rect b);

/* A face box (x, y, w, h floats) as the pixels it touches, clipped to the frame. */
swapeval_rect swapeval_box_rect(const float box[4], int width, int height);

/* Input vs output outside a set of rectangles. */
typedef struct swapeval_diff {
    int64_t pixels;  /* pixels outside every rectangle */
    int64_t changed; /* of them, pixels where any channel differs */
    double sse;      /* sum of squared channel differences over them */
    double mse;      /* sse / (pixels x channels); 0 when there are no pixels */
    double psnr;     /* 10 log10(255^2 / mse) dB; INFINITY when mse == 0 */
} swapeval_diff;

/* Compares a and b (same size, same packed format: RGB24, BGR24, RGBA32 or GRAY8)
 * outside the n rectangles (n = 0: the whole frame). Rectangles may reach outside the
 * frame. *out is zeroed on error. */
ffu_status swapeval_diff_outside(const ffu_image *a, const ffu_image *b,
                                 const swapeval_rect *rects, int n, swapeval_diff *out);

/* PSNR in dB from a sum of squared differences over `values` channel values
 * (INFINITY when sse is 0, NAN when values is 0): pools several frames correctly. */
double swapeval_psnr(double sse, int64_t values);

/* Landmark motion of a frame sequence. pts holds `frames` frames of npts points,
 * x, y interleaved (2 * npts floats per frame); a frame whose first value is NAN has no
 * face and breaks the sequence (pairs touching it are skipped). */
typedef struct swapeval_jitter {
    int pairs;       /* consecutive frame pairs measured */
    double raw;      /* mean point displacement between consecutive frames, px */
    double residual; /* the same after removing the least-squares affine map between
                      * the two frames (head translation, turn, scale): expression and
                      * landmark noise, px; the "jitter" */
} swapeval_jitter;

/* Needs npts >= 3. *out is zeroed on error. */
ffu_status swapeval_jitter_measure(const float *pts, int frames, int npts, swapeval_jitter *out);

/* Mean over consecutive frame pairs and points of |(a_t - a_t-1) - (b_t - b_t-1)|: how
 * far sequence a moves in ways b does not (a = the output face's landmarks, b = the
 * input face's: what the swap added to the face's own motion), px. Pairs where either
 * sequence has no face are skipped; *pairs (may be NULL) gets the number used. Returns
 * NAN when no pair could be measured. */
double swapeval_excess_motion(const float *a, const float *b, int frames, int npts, int *pairs);

#endif
