/* Evaluation metrics for face detection (WIDER FACE AP) and face verification (LFW),
 * as plain C over plain arrays: no detector, embedder or image code is involved, so a
 * caller runs any model over the listed images, hands over boxes or similarities and
 * gets the numbers the papers report. `facefuse eval` and the tests build on this.
 * Internal to the library (not installed); names carry the dataset as prefix. */
#ifndef FFU_FACE_EVAL_H
#define FFU_FACE_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "facefuse/core.h"

/* ==== WIDER FACE (eval_wider.c) ======================================================= */

enum { WIDER_EASY = 0, WIDER_MEDIUM = 1, WIDER_HARD = 2, WIDER_SETTINGS = 3 };

/* Number of score thresholds of the official PR curve (1 - t/1000, t = 1..1000). */
#define WIDER_THRESHOLDS 1000
/* A face is "small" for wider_result.small_recall when max(w, h) < this (pixels). */
#define WIDER_SMALL_FACE_PX 32
/* Bands of face size, max(w, h) in pixels, for wider_result.size_recall: under 16,
 * 16-24, 24-32, 32-64, 64 and up (wider_size_band_from gives each band's lower edge). */
#define WIDER_SIZE_BANDS 5
/* Caps that keep hostile files from asking for absurd amounts of memory. */
#define WIDER_MAX_FACES 100000 /* per image */
#define WIDER_MAX_FILE_BYTES (256u << 20)

/* One ground-truth face as written in wider_face_val_bbx_gt.txt. */
typedef struct wider_face {
    float x, y, w, h;                                                 /* pixels, w and h >= 0 */
    uint8_t blur, expression, illumination, invalid, occlusion, pose; /* as in the file */
    uint8_t keep; /* bit (1 << WIDER_EASY/MEDIUM/HARD): the face counts in that setting */
} wider_face;

typedef struct wider_image {
    const char *name; /* "0--Parade/0_Parade_Parade_0_102.jpg" (relative, no "..") */
    int nfaces;       /* 0 for a zero-face image (its all-zero placeholder line dropped) */
    wider_face *faces;
} wider_image;

/* The parsed ground truth; fields are read-only for callers. */
typedef struct wider_gt {
    int count; /* images, in gt.txt order */
    wider_image *images;
    const char *dir;  /* dataset folder (images under dir/images/), NULL if parsed from memory */
    ffu_arena *arena; /* owns everything above */
} wider_gt;

/* Loads dir/gt.txt (official wider_face_val_bbx_gt.txt format: name line, count line,
 * count lines "x y w h blur expression illumination invalid occlusion pose"; a
 * zero-face image has one all-zero placeholder line) and dir/difficulty.txt (per
 * image "NAME easy=LIST medium=LIST hard=LIST", LIST = "-" or 1-based face indices
 * joined by commas: the official wider_{easy,medium,hard}_val.mat keep-lists). Every
 * image of gt.txt needs a difficulty line; lines for other images are ignored.
 * *out is NULL on error. */
ffu_status wider_gt_load(const char *dir, wider_gt **out);
/* The same from memory (texts need not be NUL-terminated). diff_text NULL: every face
 * counts in all three settings. dir (may be NULL) is copied, for wider_gt_image_path. */
ffu_status wider_gt_parse(const char *gt_text, size_t gt_len, const char *diff_text,
                          size_t diff_len, const char *dir, wider_gt **out);
void wider_gt_free(wider_gt *gt); /* NULL is a no-op */

int wider_gt_count(const wider_gt *gt);                     /* 0 for NULL */
const char *wider_gt_image_name(const wider_gt *gt, int i); /* NULL when out of range */
/* "DIR/images/NAME" (just NAME when dir is NULL) into buf; FFU_ERR_TOO_LARGE when it
 * does not fit, FFU_ERR_INVALID for a bad index. */
ffu_status wider_gt_image_path(const wider_gt *gt, int i, char *buf, size_t len);

/* One detection in image pixels; higher score = more confident (any scale: scores are
 * normalised over the whole prediction set as the official code does). */
typedef struct wider_det {
    float x, y, w, h, score;
} wider_det;

/* The detections of one image (borrowed; any order, count 0 allowed with dets NULL). */
typedef struct wider_pred {
    const wider_det *dets;
    int count;
} wider_pred;

typedef struct wider_result {
    double ap[WIDER_SETTINGS]; /* easy, medium, hard; NAN where a setting has no faces */
    int faces[WIDER_SETTINGS]; /* kept ground-truth faces per setting (recall denominators) */
    int dets;                  /* detections evaluated, all images */
    /* Operating point on the hard setting's official PR curve: the threshold with the
     * best F1 (the first of equal ones, i.e. the strictest). */
    double best_f1, best_precision, best_recall;
    double best_score; /* that threshold in the caller's score units */
    /* The curve's last point, every detection given counted: the precision and recall of
     * a detector run at the lowest score in preds (the hard setting; NAN without faces). */
    double all_precision, all_recall;
    /* Recall at best_score over the hard setting's faces with max(w, h) <
     * WIDER_SMALL_FACE_PX; NAN when there are none. */
    double small_recall;
    int small_faces;
    /* The same recall per size band over all the hard setting's faces (NAN for an empty
     * band): how small a face the detector still finds; and size_found, the share of each
     * band matched by any detection at all (the lowest threshold: the detector's ceiling). */
    double size_recall[WIDER_SIZE_BANDS], size_found[WIDER_SIZE_BANDS];
    int size_faces[WIDER_SIZE_BANDS];
} wider_result;

/* WIDER FACE AP, the official protocol (WiderFace-Evaluation / eval_tools .m):
 * preds[i] holds the detections of gt->images[i]. Fails with FFU_ERR_INVALID (and a
 * reason) for a NaN/infinite coordinate or score or a negative size; r zeroed on
 * error. Deterministic; allocates scratch proportional to the largest image. */
ffu_status wider_eval(const wider_gt *gt, const wider_pred *preds, wider_result *r);

/* Detections made elsewhere, for wider_eval: one block per image, as WIDER's own
 * submission files hold them, concatenated: the image's name as in gt (a line),
 * the count (a line), then that many lines "x y w h score" (pixels, w and h >= 0). An
 * image of gt without a block has no detections. A name gt does not hold, a block
 * given twice, a missing or malformed line fails with FFU_ERR_FORMAT naming the line.
 * *out (wider_dets_free) has one prediction per image of gt, in gt's order. */
typedef struct wider_dets {
    wider_pred *preds; /* gt->count entries */
    wider_det *all;    /* every detection; preds point into it */
    int count;         /* detections in all */
} wider_dets;
ffu_status wider_dets_parse(const wider_gt *gt, const char *text, size_t len,
                            wider_dets **out);
void wider_dets_free(wider_dets *d); /* NULL is a no-op */

/* The lower edge of size band b (pixels; 0 for the first band, -1 when b is out of range). */
float wider_size_band_from(int b);

/* The official overlap of two x,y,w,h boxes (see eval_wider.c for the +1 convention). */
double wider_iou(const float a[4], const float b[4]);

/* ==== LFW verification (eval_lfw.c) =================================================== */

#define LFW_MAX_FOLDS 10
#define LFW_MAX_PER_FOLD 100000 /* pairs of one kind per fold */

typedef struct lfw_pair {
    const char *name1, *name2; /* person folder names (no '/'); equal for same pairs */
    int num1, num2;            /* image numbers, 1-based */
    int same;                  /* 1: same person */
    int fold;                  /* 0-based */
} lfw_pair;

typedef struct lfw_pairs {
    int count; /* folds * 2 * per_fold */
    int folds, per_fold;
    lfw_pair *pairs;  /* in file order */
    const char *dir;  /* dataset folder, NULL if parsed from memory */
    ffu_arena *arena; /* owns everything above */
} lfw_pairs;

/* Loads dir/pairs.txt (View-2 format: "FOLDS N", then per fold N lines "Name i j"
 * and N lines "Name1 i Name2 j", whitespace separated). Each fold must hold N same
 * and N different pairs. *out is NULL on error. */
ffu_status lfw_pairs_load(const char *dir, lfw_pairs **out);
ffu_status lfw_pairs_parse(const char *text, size_t len, const char *dir, lfw_pairs **out);
void lfw_pairs_free(lfw_pairs *p); /* NULL is a no-op */

/* Image `which` (0 or 1) of pair i: "DIR/images/Name/Name_%04d.jpg" (no "DIR/" when
 * dir is NULL). FFU_ERR_TOO_LARGE when it does not fit, FFU_ERR_INVALID for bad i/which. */
ffu_status lfw_pair_path(const lfw_pairs *p, int i, int which, char *buf, size_t len);

/* Results. Decision rule everywhere: "same" when similarity >= threshold (higher =
 * more alike; pass -distance for distances). A NAN similarity (no face found in one
 * of the images) is a WRONG decision at every threshold: a false reject for a same
 * pair, a false accept for a different pair. That is the honest count: a system that
 * cannot see a face has not verified anyone, and a pipeline that drops such pairs
 * would look better than it is. */
typedef struct lfw_result {
    int pairs, same, diff;  /* counts */
    int nan_same, nan_diff; /* pairs with a NAN similarity */
    int folds;
    double fold_acc[LFW_MAX_FOLDS]; /* accuracy on fold k at fold_thr[k] */
    double fold_thr[LFW_MAX_FOLDS]; /* best threshold on the other folds */
    double acc_mean, acc_std;       /* over folds; std is the population std (ddof 0) */
    double best_thr, best_acc;      /* best threshold on all pairs (to calibrate a default) */
    double tar_far1e3, thr_far1e3;  /* TAR at FAR <= 1e-3 and its threshold */
    double tar_far1e2, thr_far1e2;  /* TAR at FAR <= 1e-2 */
    double auc;                     /* area under the ROC (FAR on x) */
} lfw_result;

/* k-fold accuracy (threshold chosen on the other folds, measured on the held-out
 * one), best threshold, TAR@FAR and AUC. sim[i] belongs to p->pairs[i]. r zeroed on
 * error (FFU_ERR_INVALID for an infinite similarity or a pair set lacking either kind). */
ffu_status lfw_eval(const lfw_pairs *p, const float *sim, lfw_result *r);
/* The same over bare labels: same[i] 0/1, fold[i] in [0, folds) (fold NULL or
 * folds < 2: no k-fold part, fold_acc empty and acc_mean = best_acc). */
ffu_status lfw_eval_labels(int n, const uint8_t *same, const int *fold, int folds, const float *sim,
                           lfw_result *r);

/* TAR at FAR <= far over all pairs (NAN rule above): the most same pairs accepted by a
 * threshold that accepts at most floor(far * diff) different pairs. *thr is the
 * threshold (+INFINITY when no threshold meets the FAR, tar 0 then). */
ffu_status lfw_tar_at_far(int n, const uint8_t *same, const float *sim, double far, double *tar,
                          double *thr);

typedef struct lfw_roc_point {
    double thr, far, tar;
} lfw_roc_point;

/* The ROC over all pairs, thresholds descending: the first point rejects every
 * finite similarity (thr +INFINITY), then one point per distinct finite similarity.
 * Writes at most cap points and sets *npoints to the number the full curve has
 * (n + 1 is always enough). */
ffu_status lfw_roc(int n, const uint8_t *same, const float *sim, lfw_roc_point *pts, int cap,
                   int *npoints);

/* ==== liveness / presentation-attack detection (eval_pad.c) ======================== */

typedef struct eval_pad {
    double auc;                     /* P(live score > spoof score), ties count half */
    double thr, apcer, bpcer, acer; /* at the given threshold (live = score >= thr) */
    /* at the ACER-minimising threshold, searched over every score and "above all" (ties
     * towards the lower threshold): optimistic, chosen on the data itself */
    double best_thr, best_apcer, best_bpcer, best_acer;
} eval_pad;

/* ISO/IEC 30107-3 rates: APCER = share of spoofs accepted as live, BPCER = share of live
 * faces rejected, ACER their mean. s: n scores (1 = live), live: n labels (1 live, 0
 * spoof). Rates are NAN when a class is empty. */
eval_pad eval_pad_rates(const float *s, const int *live, int n, double thr);

#endif
