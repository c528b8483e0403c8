/* facefuse face: face analysis on top of the inference engine. A model zoo (names ->
 * files, input sizes, normalisation, licences), detectors (anchor/grid decoding per
 * family + NMS or score-weighted merging, tiling for small faces, rotated photos),
 * landmarkers (FaceMesh 468 + iris, dlib's 68-point ERT, ONNX 68-point models),
 * alignment to the standard templates, embedders with a calibrated threshold, liveness,
 * attributes and quality, and one analyzer that runs the stages it is asked for.
 *
 * Coordinates are continuous image coordinates of the image given, x right, y down:
 * pixel (i, j) covers [i, i+1) x [j, j+1), so a box [0, 0, W, H] is the whole image. Keypoint order everywhere: image-left eye, image-right eye, nose tip,
 * image-left mouth corner, image-right mouth corner.
 *
 * Thread-safety: every handle (detector, landmarker, embedder, ...) is used by one
 * thread at a time; create one per thread to run in parallel (they share nothing
 * mutable). Handles allocate nothing per call once they have seen an image of the
 * size at hand, except the face list growing. */
#ifndef FACEFUSE_FACE_H
#define FACEFUSE_FACE_H

#include <math.h>

#include "core.h"
#include "gpu.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- faces ------------------------------------------------------------------------- */

#define FFU_FACE_NUM_KPS 5
#define FFU_FACE_MAX_EMBED 1024

typedef struct ffu_face_quality {
    float size;      /* inter-ocular distance in pixels */
    float sharpness; /* variance of the Laplacian over the aligned grey crop */
    float yaw, pitch, roll; /* degrees; roll from the eyes, yaw/pitch from landmarks */
    float score;     /* 0..1 combined (higher is better); NAN when not computed */
} ffu_face_quality;

typedef struct ffu_face_attributes {
    float age;              /* years, NAN when not computed */
    float gender_male;      /* probability the face is male, NAN when not computed */
    int race;               /* index into ffu_face_race_names, -1 when not computed */
    float race_prob[5];
    int emotion;            /* index into ffu_face_emotion_names, -1 when not computed */
    float emotion_prob[7];
} ffu_face_attributes;

typedef struct ffu_face {
    float box[4];  /* x, y, w, h */
    float score;   /* detector confidence 0..1 */
    float kps[2 * FFU_FACE_NUM_KPS];
    int rotation;  /* 0/90/180/270: the face appears turned this many degrees clockwise */
    /* Dense landmarks (x, y, z per point, z = 0 for 2-D models), owned by the list. */
    int num_landmarks; /* 0, 68, 468 or 478 (mesh + iris) */
    float *landmarks;
    ffu_face_quality quality;
    int embedding_dim; /* 0 when not computed */
    float embedding[FFU_FACE_MAX_EMBED]; /* L2-normalised */
    float liveness;    /* 0..1, 1 = live; NAN when not computed */
    ffu_face_attributes attr;
} ffu_face;

/* A growable list of faces; ffu_face_list_free releases faces and their landmarks. */
typedef struct ffu_face_list {
    ffu_face *faces;
    int count, capacity;
} ffu_face_list;

/* Appends a face with every optional field marked "not computed"; returns it, NULL on
 * out of memory (error set). The pointer is valid until the next push. */
FFU_API ffu_face *ffu_face_list_push(ffu_face_list *l);
FFU_API void ffu_face_list_clear(ffu_face_list *l); /* count = 0, memory kept */
FFU_API void ffu_face_list_free(ffu_face_list *l);
/* Sets a face's optional fields to "not computed" (NAN / -1 / 0). */
FFU_API void ffu_face_init(ffu_face *f);
/* Gives f room for n landmarks (f->num_landmarks = n). */
FFU_API ffu_status ffu_face_set_landmarks(ffu_face *f, int n);

FFU_API const char *ffu_face_race_name(int i);    /* white black asian indian other */
FFU_API const char *ffu_face_emotion_name(int i); /* angry disgust fear happy sad surprise neutral */

/* Writes one face as a JSON object: box [x,y,w,h], score, keypoints [[x,y],...], and
 * every computed optional field. */
FFU_API ffu_status ffu_face_write_json(const ffu_face *f, ffu_jw *w);

/* ---- model zoo --------------------------------------------------------------------- */

typedef enum ffu_face_role {
    FFU_ROLE_DETECT = 0,
    FFU_ROLE_LANDMARKS,
    FFU_ROLE_EMBED,
    FFU_ROLE_LIVENESS,
    FFU_ROLE_ATTRIBUTES,
    FFU_ROLE_COUNT,
} ffu_face_role;

/* One named model. Package-shipped entries name their file in the model cache
 * (models/manifest.tsv); eval-only entries name a file under ../shared/models. */
typedef struct ffu_zoo_entry {
    const char *name;    /* "blazeface", "yunet", "mobilefacenet", ... */
    ffu_face_role role;
    const char *family;  /* decoder / convention: "blazeface", "yunet", "scrfd", ... */
    const char *file;    /* model file (cache name, or shared/ relative path) */
    int input_w, input_h; /* 0 = dynamic (chosen by the stage) */
    float norm_mean, norm_std; /* input = (pixel - mean) / std, pixel 0..255 */
    int bgr;             /* 1: the model wants B,G,R channel order */
    int gray;            /* 1: one grey channel (BT.601 luma) */
    const char *align_template; /* embedders: template name; NULL otherwise */
    float threshold;     /* embedders: cosine threshold for "same"; detectors: score */
    int is_default;      /* the default for its role */
    const char *licence; /* "Apache-2.0", "MIT", "non-commercial (iBUG 300-W)", ... */
    const char *origin;  /* package or project it comes from */
    int flip;            /* embedders: also embed the mirrored crop and average the two */
    /* embedders: standard deviation of its cosine similarity over the LFW pairs; an
     * ensemble (family "ensemble", file "A+B": member names) weighs each member's
     * cosine by 1 / spread. 0 = not measured (cannot be a member). */
    float spread;
    /* detectors with a square input: 1 = fed at the frame's aspect ratio (the square's
     * side along the longer axis) where the graph plans there, instead of a letterbox;
     * set where WIDER FACE measured no loss (docs/EVAL.md "Detectors at the frame's
     * aspect") */
    int aspect;
} ffu_zoo_entry;

FFU_API int ffu_zoo_count(void);
FFU_API const ffu_zoo_entry *ffu_zoo_get(int i);
FFU_API const ffu_zoo_entry *ffu_zoo_find(const char *name);
FFU_API const ffu_zoo_entry *ffu_zoo_default(ffu_face_role role);
/* Member i (from 0) of an ensemble row (family "ensemble", file "A+B"): the zoo row it
 * names, or NULL past the last member, for a name the zoo lacks, or for a row that is
 * not an ensemble. */
FFU_API const ffu_zoo_entry *ffu_zoo_member(const ffu_zoo_entry *e, int i);
FFU_API const char *ffu_face_role_name(ffu_face_role r);
/* Resolves a model spec: "NAME" (a zoo entry), "FAMILY:PATH" (a user file decoded as
 * FAMILY, other fields from the family's zoo entry) or NULL (the role's default).
 * Writes the entry into *out (strings borrowed from the zoo or from spec) and the file's
 * full path into path. FFU_ERR_NOT_FOUND when the name is unknown or the file absent
 * (the message says how to install it). */
FFU_API ffu_status ffu_zoo_resolve(ffu_face_role role, const char *spec, ffu_zoo_entry *out,
                                   char *path, size_t path_len);

/* Options shared by every model-backed stage. */
typedef struct ffu_face_model_opts {
    const char *model;   /* spec for ffu_zoo_resolve; NULL = default */
    const char *backend; /* "cpu" (default), "ref" or "cuda" (NVIDIA GPU) */
    int threads;         /* 0 = all cores */
    int device;          /* cuda: the CUDA device index */
    int fp16;            /* cuda: fp16 compute where each node's accuracy check passes */
    int bf16;            /* cpu: bf16 compute (AVX512-BF16) where each node's accuracy check
                            against f32 passes; ignored elsewhere (docs/NN_CPU.md "bf16") */
    /* cpu: activation memory shared with the models of other handles given the same
     * workspace (nn.h "workspaces"); those handles are then used by one thread, one
     * call at a time. NULL: the handle's own. The analyzer makes one for its stages. */
    struct ffu_nn_workspace *workspace;
} ffu_face_model_opts;

/* ---- detection --------------------------------------------------------------------- */

typedef struct ffu_detector_opts {
    ffu_face_model_opts m;
    float min_score;  /* 0 = the family's default */
    float nms_iou;    /* 0 = the family's default */
    int min_face;     /* smallest face to find, pixels of the image: tiles are scaled so
                         that at least 80% of clear faces that small are found (docs/EVAL.md
                         "Small faces in a 1080p frame"); 0 = no tiling. A level that
                         would need over 4096 tiles fails with FFU_ERR_TOO_LARGE */
    int max_faces;    /* 0 = all */
    int rotations;    /* 1: photos turned as a whole by 90, 180 or 270 degrees: unless
                         the short-range BlazeFace confirms the upright search's best
                         face (four small runs), the image is also searched turned,
                         and a face seen in several turns goes to the turn that model
                         sees it best in; 2-2.3 times the cost of one search on
                         upright photos (docs/EVAL.md "Rotated photos") */
    int input_size;   /* dynamic-input models: longest side fed to the net; 0 = family default */
} ffu_detector_opts;

typedef struct ffu_detector ffu_detector;

FFU_API void ffu_detector_opts_default(ffu_detector_opts *o);
FFU_API ffu_status ffu_detector_create(const ffu_detector_opts *o, ffu_detector **out);
FFU_API void ffu_detector_destroy(ffu_detector *d);
/* Detects faces in img (RGB24, BGR24, RGBA32 or GRAY8); clears `out` first and appends
 * faces sorted by score, best first. */
FFU_API ffu_status ffu_detector_detect(ffu_detector *d, const ffu_image *img, ffu_face_list *out);
FFU_API const ffu_zoo_entry *ffu_detector_model(const ffu_detector *d);
/* The side (image pixels) of the smallest face the detector is built to find in a
 * width x height image with its options: faces this small are found at least 80% of
 * the time when clear (each family's measured limit, docs/EVAL.md "Small faces"), and
 * smaller ones mostly not. Without min_face that is the whole-frame view's limit (150 px
 * for the default detector in a 1080p frame), with it about min_face. Fails as a
 * detect call on that size would (FFU_ERR_TOO_LARGE: too many tiles). */
FFU_API ffu_status ffu_detector_smallest_face(ffu_detector *d, int width, int height, float *side);

/* ---- landmarks --------------------------------------------------------------------- */

typedef struct ffu_landmarker ffu_landmarker;
/* model: "facemesh" (468; + iris -> 478 when `iris` is set), "dlib68" (ERT),
 * "pfld:PATH"/"peppa:PATH" (68-point ONNX). */
typedef struct ffu_landmarker_opts {
    ffu_face_model_opts m;
    int iris;
} ffu_landmarker_opts;

FFU_API void ffu_landmarker_opts_default(ffu_landmarker_opts *o);
FFU_API ffu_status ffu_landmarker_create(const ffu_landmarker_opts *o, ffu_landmarker **out);
FFU_API void ffu_landmarker_destroy(ffu_landmarker *l);
/* Fills face->landmarks from the face's box and keypoints, and refines face->kps from
 * the landmarks (five points as MODELS.md defines them). */
FFU_API ffu_status ffu_landmarker_run(ffu_landmarker *l, const ffu_image *img, ffu_face *face);

/* ---- alignment --------------------------------------------------------------------- */

/* Template points (normalised 0..1, five x,y pairs) by name: arcface_112_v1,
 * arcface_112_v2, arcface_128, ffhq_512, mtcnn_512, dlib_150. NULL when unknown. */
FFU_API const float *ffu_align_template(const char *name);
/* Warps the face to a size x size crop (same pixel format as img) by the similarity
 * that maps kps onto the template. m_out (may be NULL) gets the forward transform
 * image -> crop. */
FFU_API ffu_status ffu_face_align(const ffu_image *img, const float kps[2 * FFU_FACE_NUM_KPS],
                                  const char *template_name, int size, ffu_image *crop,
                                  double m_out[6]);

/* ---- embeddings -------------------------------------------------------------------- */

typedef struct ffu_embedder ffu_embedder;
FFU_API ffu_status ffu_embedder_create(const ffu_face_model_opts *o, ffu_embedder **out);
FFU_API void ffu_embedder_destroy(ffu_embedder *e);
FFU_API int ffu_embedder_dim(const ffu_embedder *e);
/* Cosine similarity at or above which two faces are called the same person. */
FFU_API float ffu_embedder_threshold(const ffu_embedder *e);
/* A similarity step that counts as clearly more alike on this embedder's scale: a fifth
 * of the way from its threshold to 1 (faceres 0.096, dlib-resnet 0.018; 0 when the
 * threshold is 1). Embedders spread their cosines very differently (on LFW strangers
 * average 0.38 with faceres and 0.84 with dlib-resnet), so margins must not be fixed
 * numbers: the pipeline's open-set margin and the tracker's vote weight use this. */
FFU_API float ffu_embedder_margin(const ffu_embedder *e);
FFU_API const ffu_zoo_entry *ffu_embedder_model(const ffu_embedder *e);
/* Aligns each face by its keypoints and fills face->embedding (n faces, batched). */
FFU_API ffu_status ffu_embedder_run(ffu_embedder *e, const ffu_image *img, ffu_face *faces,
                                    int n);

/* ---- frames already on the GPU -------------------------------------------------------- */

/* With backend "cuda" the detector and the embedder also take a frame that is in device
 * memory (gpu.h: an NVDEC surface, or an image uploaded once per frame): crops, resizes
 * and normalisation run on the GPU (image_gpu.h's warp-to-tensor kernel), the networks
 * read their inputs where the kernel wrote them, and only boxes, keypoints and
 * embeddings come back to the host. Formats: RGB24, BGR24, RGBA32 and NV12. The faces
 * are those the host calls give for the same pixels, within the backend's numerical
 * tolerance. Handles of other backends answer FFU_ERR_UNSUPPORTED. The calls return
 * when the results are on the host; the frame must stay valid until then. */
FFU_API ffu_status ffu_detector_detect_gpu(ffu_detector *d, const ffu_gpu_image *img,
                                           ffu_face_list *out);
FFU_API ffu_status ffu_embedder_run_gpu(ffu_embedder *e, const ffu_gpu_image *img,
                                        ffu_face *faces, int n);
/* Cosine similarity of two embeddings of the same dimension. */
FFU_API float ffu_face_similarity(const float *a, const float *b, int dim);

/* ---- liveness, attributes, quality ------------------------------------------------- */

typedef struct ffu_liveness ffu_liveness;
FFU_API ffu_status ffu_liveness_create(const ffu_face_model_opts *o, ffu_liveness **out);
FFU_API void ffu_liveness_destroy(ffu_liveness *l);
/* face->liveness = one combined live score 0..1. */
FFU_API ffu_status ffu_liveness_run(ffu_liveness *l, const ffu_image *img, ffu_face *face);

typedef struct ffu_attributes ffu_attributes;
FFU_API ffu_status ffu_attributes_create(const ffu_face_model_opts *o, ffu_attributes **out);
FFU_API void ffu_attributes_destroy(ffu_attributes *a);
/* face->attr: age, gender, race (GEAR) and emotion. */
FFU_API ffu_status ffu_attributes_run(ffu_attributes *a, const ffu_image *img, ffu_face *face);

/* face->quality from the image and the face's keypoints/landmarks (no model). */
FFU_API ffu_status ffu_face_quality_compute(const ffu_image *img, ffu_face *face);

/* ---- analyzer ---------------------------------------------------------------------- */

enum {
    FFU_STAGE_LANDMARKS = 1 << 0,
    FFU_STAGE_EMBED = 1 << 1,
    FFU_STAGE_LIVENESS = 1 << 2,
    FFU_STAGE_ATTRIBUTES = 1 << 3,
    FFU_STAGE_QUALITY = 1 << 4,
};

typedef struct ffu_analyzer_opts {
    ffu_detector_opts detect;
    unsigned stages;               /* FFU_STAGE_* bits; detection always runs */
    ffu_landmarker_opts landmarks;
    ffu_face_model_opts embed, liveness, attributes;
} ffu_analyzer_opts;

typedef struct ffu_analyzer ffu_analyzer;
FFU_API void ffu_analyzer_opts_default(ffu_analyzer_opts *o);
FFU_API ffu_status ffu_analyzer_create(const ffu_analyzer_opts *o, ffu_analyzer **out);
FFU_API void ffu_analyzer_destroy(ffu_analyzer *a);
/* Image in, faces out, every stage asked for run on every face. The stages' models
 * share one workspace (the caller's, if detect.m.workspace is set): each starts on
 * memory the one before left in the caches. One call at a time per analyzer; analyzers
 * created separately run at once on different threads and give the faces each gives
 * alone, bit for bit (tests/unit/test_face_analyzer.c). */
FFU_API ffu_status ffu_analyzer_run(ffu_analyzer *a, const ffu_image *img, ffu_face_list *out);
/* The analyzer's detector, for queries such as ffu_detector_smallest_face; owned by the
 * analyzer (not to be destroyed), and used under the analyzer's one-call-at-a-time rule. */
FFU_API ffu_detector *ffu_analyzer_detector(ffu_analyzer *a);

#ifdef __cplusplus
}
#endif
#endif
