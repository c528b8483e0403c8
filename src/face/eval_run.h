/* Runs the face pipeline over an evaluation set and hands the raw scores to the metric
 * code in eval.h: for LFW, detect -> embed -> cosine similarity per pair. Kept apart
 * from eval.h so the metrics stay free of models and images (and testable on plain
 * arrays). Internal to the library; `facefuse eval lfw` and the tests build on it. */
#ifndef FFU_FACE_EVAL_RUN_H
#define FFU_FACE_EVAL_RUN_H

#include "eval.h"
#include "facefuse/face.h"

/* The face of an image a verification pipeline uses when the detector finds several:
 * the one whose box centre is nearest the image centre; among centres within half a
 * pixel of each other, the largest box. LFW photos are cropped around their subject,
 * so the centre face is the labelled person even when others are in the frame.
 * Returns the index into list, -1 for an empty list. */
int lfw_pick_face(const ffu_face_list *list, int width, int height);

/* Keypoints used when lfw_run_pairs gets no detector: the mean positions of the five points
 * in the deep-funneled 250x250 LFW images (measured on the average of 800 of them).
 * Good enough to compare embedders' normalisation, not to report accuracy. */
extern const float lfw_fixed_kps[2 * FFU_FACE_NUM_KPS];

/* Per-run counters (optional). */
typedef struct lfw_run_stats {
    int images;       /* distinct images embedded (3811 on the shared subset) */
    int nofaces;      /* of them, images without a usable face */
    int multi;        /* images where the detector found more than one face */
    double detect_s;  /* seconds in the detector (decode excluded) */
    double landmark_s; /* seconds in the landmarker */
    double embed_s;   /* seconds in the embedder */
    double total_s;   /* wall time of the whole run, decoding included */
} lfw_run_stats;

/* Embeds every distinct image of the pair set once (det finds the face, see
 * lfw_pick_face; det NULL uses lfw_fixed_kps; lm, may be NULL, refines the face's
 * keypoints from its landmarks first, as the analyzer does) and writes sims[i] = cosine similarity
 * of pair i, NAN when either image has no face (lfw_eval counts those as errors).
 * sims needs room for p->count values. stats may be NULL. An unreadable image is an
 * error (the data set is broken), not a missing face. */
ffu_status lfw_run_pairs(const lfw_pairs *p, ffu_detector *det, ffu_landmarker *lm,
                         ffu_embedder *emb, float *sims, lfw_run_stats *stats);

/* ---- small faces (eval_small.c) ----------------------------------------------------------
 * Clear faces pasted at a chosen size into a 1080p frame: how small a face a detector,
 * with its min_face tiling, still finds. WIDER's small faces are also blurred, occluded
 * and crowded; these are the same photos' faces made small and nothing else, which is
 * what the min_face option promises to find. */

#define SMALL_FRAME_W 1920
#define SMALL_FRAME_H 1080
#define SMALL_PER_FRAME 24 /* a 6 x 4 grid of 320 x 270 cells, one face each */
#define SMALL_MAX_SIDE 120 /* largest face side a cell holds (its cut is twice that) */

/* A face cut from a photo: the square of twice its box's longer side around the box's
 * centre (padded grey where it leaves the photo), and the box inside that square. */
typedef struct small_face {
    ffu_image cut; /* RGB24 */
    float box[4];  /* x, y, w, h in cut's pixels */
} small_face;

void small_face_release(small_face *f);

/* Cuts the face nearest the centre (lfw_pick_face) of `photos` LFW photos spread over
 * p's pairs (the first image of pair i * count / photos), as det finds it, into
 * faces[0..*n), at most cap of them; a photo without a face, or with a second face in
 * the cut, is left out. An unreadable photo is an error (none kept, *n = 0). */
ffu_status small_faces_from_lfw(const lfw_pairs *p, ffu_detector *det, int photos, int cap,
                                small_face *faces, int *n);

/* A SMALL_FRAME_W x SMALL_FRAME_H RGB24 frame: bg (any size, stretched to the frame)
 * with faces[0..n) (n <= SMALL_PER_FRAME) scaled so each box's longer side is `side`
 * pixels (area-averaged, as a camera's sensor would), one per grid cell at a position
 * drawn from `seed`; gt[i] receives face i's box in the frame. */
ffu_status small_faces_frame(const ffu_image *bg, const small_face *faces, int n, int side,
                             uint32_t seed, ffu_image *frame, float (*gt)[4]);

/* Matches detections (best first, as the detector sorts them) to the n pasted boxes:
 * each takes the free box it overlaps most at IoU >= 0.5; *found counts the boxes taken,
 * *false_dets the detections that took none (a second hit on a taken box included). */
void small_faces_match(const ffu_face_list *l, const float (*gt)[4], int n, int *found,
                       int *false_dets);

#endif
