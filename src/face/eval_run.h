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


#endif
