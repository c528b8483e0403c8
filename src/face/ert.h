/* dlib's ensemble-of-regression-trees shape predictor (Kazemi & Sullivan 2014), read
 * from dlib's own serialisation (the 68-point shape_predictor_68_face_landmarks.dat
 * that Debian ships in libdlib-data, or any shape_predictor file dlib writes) and run
 * so that the points equal dlib's on the same image and box (see docs/EVAL.md).
 *
 * Coordinates here are dlib's, not the face module's: pixel (i, j) is centred on the
 * integer point (i, j), and a box {x, y, w, h} means dlib's rectangle with left = x,
 * top = y, right = x + w - 1, bottom = y + h - 1 (the normalised shape space maps
 * (0, 0) to (left, top) and (1, 1) to (right, bottom)). A face-module box [X, Y, W, H]
 * (pixel i covering [i, i+1)) is passed as is; add 0.5 to the returned points to get
 * face-module coordinates.
 *
 * A loaded model is immutable: any number of threads may call ert_predict on it at
 * once. ert_predict allocates nothing (its scratch lives on the stack, bounded by the
 * load-time caps below). */
#ifndef FFU_FACE_ERT_H
#define FFU_FACE_ERT_H

#include <stddef.h>
#include <stdint.h>

#include "facefuse/core.h"
#include "facefuse/face.h"
#include "facefuse/image.h"

/* Load-time caps: a file beyond them is refused with FFU_ERR_TOO_LARGE. The real
 * 68-point model has 68 parts, 15 cascades of 500 depth-4 trees, 500 pixels each. */
#define ERT_MAX_PARTS 512
#define ERT_MAX_CASCADES 64
#define ERT_MAX_TREES 20000                        /* per cascade */
#define ERT_MAX_FEATURES 2048                      /* feature pixels per cascade */
#define ERT_MAX_SPLITS 4095                        /* per tree (depth 12) */
#define ERT_MAX_LEAF_BYTES (1024u * 1024u * 1024u) /* all leaves together */
#define ERT_MAX_FILE_BYTES ((size_t)2 << 30)

typedef struct ert_model ert_model;

/* Reads a dlib shape_predictor file. *out is NULL on error. Errors: FFU_ERR_IO /
 * FFU_ERR_NOT_FOUND (file), FFU_ERR_FORMAT (malformed, with the byte offset),
 * FFU_ERR_TOO_LARGE (beyond the caps), FFU_ERR_NOMEM. */
ffu_status ert_model_load(const char *path, ert_model **out);
/* The same from bytes in memory (borrowed; not kept after the call). */
ffu_status ert_model_load_mem(const void *data, size_t size, ert_model **out);
void ert_model_free(ert_model *m); /* NULL: no-op */

int ert_model_num_parts(const ert_model *m);
int ert_model_num_cascades(const ert_model *m);
/* The initial (mean) shape, 2 * num_parts floats in normalised box coordinates. */
const float *ert_model_mean_shape(const ert_model *m);
/* Total number of trees over all cascades. */
size_t ert_model_num_trees(const ert_model *m);
/* Total number of leaves (rows of 2 * num_parts values) over all trees. */
size_t ert_model_num_leaves(const ert_model *m);

/* Where leaf rows are prefetched to: 1 = L2 (prefetcht1), 0 = L1 (prefetcht0), chosen
 * at load by timing both on this CPU (ert.c, choose_row_prefetch). The setter, for
 * benchmarks, overrides it; call it before the model is shared between threads. The
 * points are the same either way. */
int ert_model_row_prefetch_l2(const ert_model *m);
void ert_model_set_row_prefetch_l2(ert_model *m, int l2);

/* Predicts the model's parts inside box (x, y, w, h in dlib's convention, see above)
 * of img and writes 2 * num_parts floats (x0, y0, x1, y1, ...) to pts, in dlib's
 * pixel coordinates. img may be GRAY8 (used as is), RGB24/BGR24/RGBA32 (grey =
 * (r + g + b) / 3 rounded down, as dlib converts) or NV12/YUV420P (the Y plane).
 * Pixels outside the image read as 0. Only the ~500 sampled pixels per cascade are
 * read, so no grey copy of the image is made. */
ffu_status ert_predict(const ert_model *m, const ffu_image *img, const float box[4], float *pts);

/* ---- kernels: the leaf sum, the bulk of the run time ------------------------------ */

/* shape[j] += rows[r][j] for r = 0..n-1 in that order, j < stride (a multiple of 16);
 * shape and rows 64-byte aligned. Every version adds the same floats in the same order,
 * so all give bit-identical results. The SIMD ones live in ert_avx2.c / ert_avx512.c
 * and are only called when the CPU has the instructions. */
typedef void (*ert_sum_rows_fn)(float *shape, const float *const *rows, int n, int stride);
void ert_sum_rows_c(float *shape, const float *const *rows, int n, int stride);
void ert_sum_rows_avx2(float *shape, const float *const *rows, int n, int stride);
void ert_sum_rows_avx512(float *shape, const float *const *rows, int n, int stride);
/* The fastest version this CPU runs (honours FFU_CPU_MASK). */
ert_sum_rows_fn ert_sum_rows_pick(void);

/* ---- kernels: where a cascade's feature pixels fall ------------------------------- */

/* One cascade's feature pixels for the current shape. Feature i hangs from shape point
 * anchor2[i] / 2 at offset (dx[i], dy[i]) in the mean shape's normalised space; the
 * offset is turned by [[a00, a01], [a10, a11]] and added to the point in float, each
 * product rounded and the sums formed in dlib's order (a00 * dx + a01 * dy, then the
 * point), and the result is mapped to the image in double and rounded half up as
 * dlib does: x = floor(ox + sx * v.x + 0.5), y = floor(oy + sy * v.y + 0.5). */
typedef struct ert_feature_job {
    const float *dx, *dy;
    const uint32_t *anchor2; /* 2 * the anchor's part index */
    uint32_t n;
    const float *shape;
    float a00, a01, a10, a11;
    double ox, oy, sx, sy;
    int w, h; /* the image */
} ert_feature_job;
/* px[i], py[i] = feature i's pixel when it lies in the w x h image, px[i] = -1 when it
 * does not (NaN included). px and py have room for n rounded up to 16. Every version
 * gives the same pixels; the SIMD ones run only on CPUs with the instructions. It is a
 * quarter of a face's time in plain C (15 cascades of 500 pixels, docs/BENCHMARKS.md
 * "dlib 68-point ERT"). */
typedef void (*ert_feature_xy_fn)(const ert_feature_job *j, int32_t *px, int32_t *py);
void ert_feature_xy_c(const ert_feature_job *j, int32_t *px, int32_t *py);
void ert_feature_xy_avx2(const ert_feature_job *j, int32_t *px, int32_t *py);
void ert_feature_xy_avx512(const ert_feature_job *j, int32_t *px, int32_t *py);

/* ---- the face module's "dlib68" landmarker (landmark_dlib.c) --------------------- */

/* Runs a 68-point model on the face: face->landmarks = 68 (x, y, 0) in the face
 * module's coordinates, face->kps recomputed from them. */
ffu_status ert_face_run(const ert_model *m, const ffu_image *img, ffu_face *f);

#endif
