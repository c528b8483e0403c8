/* Private interface between the common detector (detect.c) and the per-family decoders
 * (detect_<family>.c). A family only turns the raw outputs of one batch slot into
 * candidates -- box, score, five keypoints -- in network-input pixels; everything else
 * (preprocessing, letterbox/tiles/rotations, mapping back, thresholds, NMS or merging,
 * sorting) is done once in detect.c. Adding a family is one file with one det_family. */
#ifndef FFU_DETECT_INTERNAL_H
#define FFU_DETECT_INTERNAL_H

#include "face_internal.h"

/* One raw detection. Coordinates are continuous network-input pixels (x1, y1, x2, y2)
 * before mapping back, image pixels after. */
typedef struct det_cand {
    float box[4];
    float score;
    float kps[2 * FFU_FACE_NUM_KPS];
    int rotation; /* set by the common code */
    int level;    /* set by the common code: 0 whole frame, 1.. tile levels coarse to fine */
    int voted;    /* detect.c, opts.rotations: vote holds the rotation referee's score */
    float vote;
} det_cand;

/* A grow-only candidate buffer owned by the detector (no allocation once it is big
 * enough for the images at hand). */
typedef struct det_cands {
    det_cand *v;
    int n, cap;
} det_cands;

/* Appends one candidate; NULL (error set) when out of memory. */
det_cand *det_cands_push(det_cands *c);
/* The same with its score and its box given as centre and size (the anchor decoders'
 * form). */
det_cand *det_cands_push_box(det_cands *c, float score, float cx, float cy, float w, float h);

/* Preprocessing conventions. */
typedef enum det_fit {
    DET_FIT_LETTERBOX = 0, /* fixed input: uniform scale, centred, black padding */
    DET_FIT_STRETCH,       /* fixed input: each axis scaled on its own (trained that way) */
} det_fit;

typedef struct det_family {
    const char *name;      /* zoo family name */
    float score;           /* default minimum score when the zoo row gives none */
    float nms_iou;         /* default NMS (or merge) IoU */
    int weighted_merge;    /* 1: MediaPipe score-weighted merging instead of plain NMS */
    det_fit fit;           /* fixed-input models */
    int stride;            /* dynamic-input models: input sides are multiples of this */
    int dynamic_side;      /* dynamic-input models: default longest side fed to the net */
    /* Smallest face side (network-input pixels) the family finds reliably; decides when
     * tiling is needed for opts.min_face, and the tiles' scale. Measured, not guessed:
     * the side at which `facefuse eval small-faces` finds at least 80% of clear faces of
     * opts.min_face pixels (docs/EVAL.md "Small faces in a 1080p frame"). */
    float min_face_net;
    /* Square models fed at the frame's aspect (zoo row `aspect`, detect.c): the multiple
     * the input sides must be for this model (its coarsest output grid's stride); NULL:
     * the family cannot be fed so */
    int (*align)(const void *state);
    /* Checks the model's outputs and builds per-model state (anchors, output indices);
     * *state is passed back to decode and freed with fini. May tweak n->norm (per-channel
     * means). */
    ffu_status (*init)(face_net *n, void **state);
    void (*fini)(void *state);
    /* Decodes batch slot b of the last run of n (input n->in_w x n->in_h) and appends
     * every candidate with score >= min_score to out (network-input coordinates). */
    ffu_status (*decode)(void *state, const face_net *n, int b, float min_score, det_cands *out);
    /* Cascades (MTCNN), NULL for the others: a family that searches a whole upright view
     * itself, with networks of its own besides n. open: those networks, with the
     * detector's model options (after init). search: instead of views of n and decode,
     * appends every candidate scoring at least min_score in img's pixels (img: the
     * upright view, a host image). smallest: the smallest face side search looks for in
     * a w x h view given opts.min_face (0: its default). */
    ffu_status (*open)(void *state, const face_net *n, const ffu_face_model_opts *o);
    ffu_status (*search)(void *state, face_net *n, const ffu_image *img, float min_face,
                         float min_score, det_cands *out);
    float (*smallest)(const void *state, int w, int h, int min_face);
} det_family;

extern const det_family det_family_blazeface;
extern const det_family det_family_yunet;
extern const det_family det_family_yunet2022;
extern const det_family det_family_scrfd;
extern const det_family det_family_retinaface;
extern const det_family det_family_ultraface;
extern const det_family det_family_yolo5face;
extern const det_family det_family_mtcnn;

/* Output i of the last run for batch slot b: its per-item data and the number of
 * elements per item (dims after the first). NULL with the error set when the output is
 * missing, not f32, or its first dim is not the batch. */
const float *det_output_slot(const face_net *n, int i, int b, int64_t *numel,
                             ffu_nn_tensor *t);

/* The least power of two >= k: batches padded to it, so a network sees few shapes
 * (1, 2, 4, ...) however the counts vary, and keeps one plan for each. */
static inline int det_padded_batch(int k)
{
    int p = 1;
    while (p < k)
        p *= 2;
    return p;
}

static inline float det_sigmoid(float x)
{
    if (x < -80.f)
        x = -80.f;
    if (x > 80.f)
        x = 80.f;
    return 1.f / (1.f + expf(-x));
}

#endif
