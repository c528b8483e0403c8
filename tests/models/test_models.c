/* Model-level golden test: every face model the product needs, run by facefuse on both
 * backends (ref and cpu) and by its peer on the same real input -- ONNX Runtime
 * (onnxruntime-node 1.30) for ONNX files, TensorFlow.js (@tensorflow/tfjs, pure-JS CPU
 * backend) for TF.js graph models, face-api.js (@vladmandic/face-api 1.7.15 on that
 * TF.js) for its weights-manifest models, whose topology lives in face-api's
 * JavaScript and in facefuse's loader, LiteRT.js (@litertjs/core 2.5.3, the TensorFlow
 * Lite runtime in WebAssembly, CPU) for .tflite files. Each output is compared by name,
 * element by element:
 *
 *   rel_i = |ffu_i - peer_i| / max(|peer_i|, floor),
 *   floor = max(FLOOR_FRAC * max_j |peer_j|, FLOOR_ABS)   (per output tensor)
 *
 * and max_i rel_i must be <= 1e-4 (one f16 ulp for the f16 model). Why a floor: an
 * output element is a long sum whose rounding error scales with the magnitude of its
 * terms -- the tensor's scale -- not with the element, so an element that cancels to
 * ~0 cannot be held to a relative bound of its own. The floor's size is measured, not
 * guessed (tests/models/peer_noise.js): ONNX Runtime run twice on the same input
 * (graph optimisations "all" vs "disabled") disagrees with itself by up to 0.12 with a
 * floor of 1e-3 x max, 1.2e-3 with 0.1 x max, 2.2e-4 with max(1e-2 x max, 1e-2) and
 * 3.5e-5 with the floor used here, the smallest decade where ORT passes its own 1e-4
 * (docs/EVAL.md has the table).
 * FLOOR_ABS covers sigmoid outputs whose values are all tiny (YuNet's objectness at a
 * stride with no face, max 1.5e-3): ORT's logistic kernel has an absolute error of
 * ~1.8e-7 whatever the value, so there 1e-4 relative means 1e-6 absolute at most.
 * Each row also shows, not asserted, the error under a strict floor of 1e-3 x max
 * (STRICT_FRAC, no absolute part), which ORT fails against itself on 14 of its 28
 * models (docs/EVAL.md lists it per model): the number to watch for drift.
 *
 * The input is a real photo (../shared/data/face_recognition_examples/examples/
 * obama.jpg; the astronaut in the model cache where shared data is absent): the whole
 * picture for detectors, the face (or an eye for iris models) for crop models, resized
 * with the library (ffu_image_resize) and normalised as each model expects
 * (ffu_image_to_tensor). The tensor is written to a temp file, and
 * tests/models/run_peer.js runs the peer in node and writes its outputs back.
 *
 * Needs: node on PATH (or $FFU_NODE) and the peers that tests/models/setup-peers
 * installs ($FFU_PEERS_DIR, default ${XDG_CACHE_HOME:-~/.cache}/facefuse/npm-peers).
 * Without them, or without the models, it exits 77 (skipped). Prints one row per
 * output: model, output, peer, max |peer|, then max abs and max rel error per backend. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "facefuse/image.h"
#include "facefuse/nn.h"
#include "nn/ir.h"
#include "test.h"

#ifndef FFU_TEST_BINARY_DIR
#define FFU_TEST_BINARY_DIR "build"
#endif

#define TOL_F32 1e-4
/* The FaceLandmarker model is stored, fed and read in f16; facefuse promotes it to f32
 * with Casts at the edges. ORT's CPU provider wraps ops it has no f16 kernel for in
 * Casts too, so the f16 outputs can differ only where an f32 result rounds to a
 * neighbouring half: one ulp, 2^-10 relative (measured: bit-identical). */
#define TOL_F16 1e-3
#define FLOOR_FRAC 0.1
#define FLOOR_ABS 1e-2
#define STRICT_FRAC 1e-3 /* reported only */

/* SRC_QUANT: a copy of a ../shared/models file quantised by tools/quantize-onnx the way
 * ONNX Runtime's quantize_dynamic does it; the file name is "i8_" or "u8_" (the weight
 * type: quantize_onnx's default or --u8) and the shared file's name. */
enum { SRC_SHARED, SRC_CACHE, SRC_QUANT };
/* ROI_FACE_PAIR: the face and its mirror, a batch of 2 where dim 0 is dynamic (the
 * TFLite MobileFaceNet fixes batch 2: its peer runs exactly that, and facefuse makes
 * such a batch dynamic, docs/NN_TFLITE.md) */
enum { ROI_FULL, ROI_FACE, ROI_EYE, ROI_FACE_PAIR };

typedef struct model_spec {
    const char *file; /* under ../shared/models (SRC_SHARED), the model cache, or a quantised
                         copy of a shared one (SRC_QUANT) */
    int src;
    const char *peer; /* "ort", "tfjs", "faceapi" or "tflite" (run_peer.js's modes) */
    int roi;          /* which part of the photo */
    float mean[3];    /* out = (pixel - mean) * scale, per tensor channel */
    float scale;
    int bgr;  /* tensor channels B,G,R */
    int gray; /* one luma channel */
    int h, w; /* size for dynamic H/W dims */
} model_spec;

/* Normalisations (MODELS.md and the models' projects). What the test needs is only
 * that both engines see the same tensor; realistic values keep the activations in
 * the ranges the weights were trained for. */
#define UNIT {0, 0, 0}, 1.0f / 255
#define SYMM {127.5f, 127.5f, 127.5f}, 1.0f / 127.5f
#define RAW {0, 0, 0}, 1.0f
#define INSIGHT {127.5f, 127.5f, 127.5f}, 1.0f / 128
#define ULTRA {127, 127, 127}, 1.0f / 128
#define RETINA {104, 117, 123}, 1.0f /* B, G, R means, BGR tensor */
#define EMOTION {127.5f, 127.5f, 127.5f}, 2.0f / 255

static const model_spec ONNX_SHARED[] = {
    {"face_detection_yunet_2022mar.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 0, 0},
    {"face_detection_yunet_2023mar.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 0, 0},
    {"yunet_legacy_final_320_320.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 0, 0},
    {"yunet_n_320_320.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 0, 0},
    {"yunet_n_640_640.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 0, 0},
    {"yunet_n_dynamic.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 480, 640},
    {"yunet_s_320_320.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 0, 0},
    {"yunet_s_dynamic.onnx", SRC_SHARED, "ort", ROI_FULL, RAW, 1, 0, 480, 640},
    {"ultraface_version-RFB-320.onnx", SRC_SHARED, "ort", ROI_FULL, ULTRA, 0, 0, 0, 0},
    {"ultraface_version-RFB-320_simplified.onnx", SRC_SHARED, "ort", ROI_FULL, ULTRA, 0, 0, 0, 0},
    {"ultraface_version-RFB-640.onnx", SRC_SHARED, "ort", ROI_FULL, ULTRA, 0, 0, 0, 0},
    {"ultraface_version-slim-320.onnx", SRC_SHARED, "ort", ROI_FULL, ULTRA, 0, 0, 0, 0},
    {"ultraface_version-slim-320_simplified.onnx", SRC_SHARED, "ort", ROI_FULL, ULTRA, 0, 0, 0, 0},
    {"scrfd_500m_bnkps.onnx", SRC_SHARED, "ort", ROI_FULL, INSIGHT, 0, 0, 480, 640},
    {"retinaface_mbnet0.25.onnx", SRC_SHARED, "ort", ROI_FULL, RETINA, 1, 0, 480, 640},
    {"yolo5face_500m_320x320.onnx", SRC_SHARED, "ort", ROI_FULL, UNIT, 0, 0, 320, 320},
    {"mediapipe_face_detection_short_range.onnx", SRC_SHARED, "ort", ROI_FULL, SYMM, 0, 0, 0, 0},
    {"mediapipe_face_detection_full_range.onnx", SRC_SHARED, "ort", ROI_FULL, SYMM, 0, 0, 0, 0},
    {"faceonnx_landmarks_68_pfld.onnx", SRC_SHARED, "ort", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"peppa_slim_160_latest.onnx", SRC_SHARED, "ort", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"mediapipe_face_landmark.onnx", SRC_SHARED, "ort", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"mediapipe_face_landmarks_detector.onnx", SRC_SHARED, "ort", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"mediapipe_iris_landmark.onnx", SRC_SHARED, "ort", ROI_EYE, UNIT, 0, 0, 0, 0},
    {"mobilefacenet_insightface_pytorch.onnx", SRC_SHARED, "ort", ROI_FACE, INSIGHT, 0, 0, 0, 0},
    {"minifasnet_v1se_4_0_0_80x80.onnx", SRC_SHARED, "ort", ROI_FACE, RAW, 1, 0, 0, 0},
    {"minifasnet_v2_2.7_80x80.onnx", SRC_SHARED, "ort", ROI_FACE, RAW, 1, 0, 0, 0},
};

static const model_spec ONNX_CACHE[] = {
    {"face_detection_back_256x256_barracuda.onnx", SRC_CACHE, "ort", ROI_FULL, SYMM, 0, 0, 0, 0},
    {"face_detection_front_128x128_barracuda.onnx", SRC_CACHE, "ort", ROI_FULL, SYMM, 0, 0, 0, 0},
};

static const model_spec TFJS[] = {
    {"blazeface.json", SRC_CACHE, "tfjs", ROI_FULL, SYMM, 0, 0, 0, 0},
    {"blazeface-back.json", SRC_CACHE, "tfjs", ROI_FULL, SYMM, 0, 0, 0, 0},
    {"facemesh-detection-full.json", SRC_CACHE, "tfjs", ROI_FULL, UNIT, 0, 0, 0, 0},
    {"facemesh-detection-short.json", SRC_CACHE, "tfjs", ROI_FULL, UNIT, 0, 0, 0, 0},
    {"facemesh.json", SRC_CACHE, "tfjs", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"iris.json", SRC_CACHE, "tfjs", ROI_EYE, UNIT, 0, 0, 0, 0},
    {"mobilefacenet.json", SRC_CACHE, "tfjs", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"mobileface.json", SRC_CACHE, "tfjs", ROI_FACE, RAW, 0, 0, 0, 0},
    {"faceres.json", SRC_CACHE, "tfjs", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"antispoof.json", SRC_CACHE, "tfjs", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"liveness.json", SRC_CACHE, "tfjs", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"gear.json", SRC_CACHE, "tfjs", ROI_FACE, UNIT, 0, 0, 0, 0},
    {"emotion.json", SRC_CACHE, "tfjs", ROI_FACE, EMOTION, 0, 1, 0, 0},
};

/* face-api.js's weights manifests (a JSON list; the .bin beside it). The face
 * recognition net (dlib's ResNet) takes ?x150x150x3 RGB 0..255 and normalises inside
 * the graph, so the input is RAW; run_peer.js corrects for @vladmandic/face-api's
 * /255 where dlib and facefuse divide by 256. */
static const model_spec FACEAPI[] = {
    {"face_recognition_model-weights_manifest.json", SRC_CACHE, "faceapi", ROI_FACE, RAW, 0, 0, 0,
     0},
};

/* TensorFlow Lite files, run by LiteRT.js with the file's own input shapes. */
static const model_spec TFLITE[] = {
    {"mobilefacenet-expo.tflite", SRC_CACHE, "tflite", ROI_FACE_PAIR, INSIGHT, 0, 0, 0, 0},
    /* MTCNN's stages (their inputs transposed in use; here the photo as it is): P-Net at
     * its declared 1280x960, R-Net and O-Net on a face */
    {"mtcnn-pnet-expo.tflite", SRC_CACHE, "tflite", ROI_FULL, INSIGHT, 0, 0, 0, 0},
    {"mtcnn-rnet-expo.tflite", SRC_CACHE, "tflite", ROI_FACE, INSIGHT, 0, 0, 0, 0},
    {"mtcnn-onet-expo.tflite", SRC_CACHE, "tflite", ROI_FACE, INSIGHT, 0, 0, 0, 0},
};

/* Dynamically quantised copies (ConvInteger, run as exact f32 convolutions:
 * docs/NN_ONNX.md "Quantised models"). Every quantised layer sees the same input as in
 * ONNX Runtime, so the outputs differ only by what ORT's Sigmoid / Softmax approximations
 * do at the heads. (YOLO5Face is not here: its SiLU puts ORT's Sigmoid inside the
 * network, and last-ulp differences there flip codes downstream.) */
static const model_spec QUANTISED[] = {
    {"i8_mobilefacenet_insightface_pytorch.onnx", SRC_QUANT, "ort", ROI_FACE, INSIGHT, 0, 0, 0, 0},
    {"u8_mobilefacenet_insightface_pytorch.onnx", SRC_QUANT, "ort", ROI_FACE, INSIGHT, 0, 0, 0, 0},
    {"u8_face_detection_yunet_2023mar.onnx", SRC_QUANT, "ort", ROI_FULL, RAW, 1, 0, 0, 0},
    {"i8_scrfd_500m_bnkps.onnx", SRC_QUANT, "ort", ROI_FULL, INSIGHT, 0, 0, 480, 640},
};

/* ---- shared state of the run ------------------------------------------------------ */

typedef struct photo {
    const char *name; /* under ../shared, or in the model cache */
    int in_cache;
    int face[4], eye[4]; /* x, y, w, h in the photo */
} photo;

/* The face and left-eye boxes were read off the photos by eye. */
static const photo PHOTOS[] = {
    {"data/face_recognition_examples/examples/obama.jpg",
     0,
     {320, 60, 340, 340},
     {380, 150, 100, 100}},
    {"astronaut.png", 1, {165, 45, 130, 130}, {180, 80, 50, 50}},
};

static struct {
    int ready; /* 1 ok, -1 skip */
    char why[1200];
    char node[512], peers[1024], script[1024], tmp[512];
    int keep;      /* FFU_GOLDEN_KEEP: tmp is the caller's, not removed */
    ffu_image img; /* RGB24 */
    const photo *ph;
    int rows, failed, models, strict_over;
} G;

/* ---- helpers ----------------------------------------------------------------------- */

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Runs argv with NODE_PATH set, stdout and stderr into log; the exit status or -1. */
static int run_cmd(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        char np[1100];
        snprintf(np, sizeof np, "%s/node_modules", G.peers);
        setenv("NODE_PATH", np, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void print_log_tail(const char *log)
{
    FILE *f = fopen(log, "rb");
    if (!f) return;
    char buf[4096];
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, n > (long)sizeof buf - 1 ? n - (long)sizeof buf + 1 : 0, SEEK_SET);
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = 0;
    fclose(f);
    fprintf(stderr, "---- %s ----\n%s\n----\n", log, buf);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static void rm_tree(const char *p)
{
    if (p && *p) nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t k = fwrite(p, 1, n, f);
    return (fclose(f) == 0 && k == n) ? 0 : -1;
}

static void *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        ((char *)p)[len] = 0;
        *n = (size_t)len;
    }
    return p;
}

static void model_dir(char *buf, size_t len)
{
    const char *env = getenv("FFU_MODEL_DIR");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else
        snprintf(buf, len, "%s/.cache/facefuse/models", getenv("HOME") ? getenv("HOME") : ".");
}

/* Finds node, the peers, the photo, and makes the temp dir; fills G.why on skip. */
static void setup(void)
{
    if (G.ready) return;
    G.ready = -1;
    const char *node = getenv("FFU_NODE");
    snprintf(G.node, sizeof G.node, "%s", node && *node ? node : "node");
    const char *pd = getenv("FFU_PEERS_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME") ? getenv("HOME") : ".";
    if (pd && *pd)
        snprintf(G.peers, sizeof G.peers, "%s", pd);
    else if (xdg && *xdg)
        snprintf(G.peers, sizeof G.peers, "%s/facefuse/npm-peers", xdg);
    else
        snprintf(G.peers, sizeof G.peers, "%s/.cache/facefuse/npm-peers", home);
    snprintf(G.script, sizeof G.script, "%s/tests/models/run_peer.js", FFU_TEST_SOURCE_DIR);

    char p[1200];
    snprintf(p, sizeof p, "%s/node_modules/onnxruntime-node/package.json", G.peers);
    char q[1200];
    snprintf(q, sizeof q, "%s/node_modules/@tensorflow/tfjs/package.json", G.peers);
    if (!file_exists(p) || !file_exists(q)) {
        snprintf(G.why, sizeof G.why,
                 "peers not installed in %.1000s (run tests/models/setup-peers)", G.peers);
        return;
    }
    const char *tmpdir = getenv("TMPDIR"), *keep = getenv("FFU_GOLDEN_KEEP");
    if (keep && *keep) {
        /* keep every model's input and peer outputs there, for debugging */
        G.keep = 1;
        snprintf(G.tmp, sizeof G.tmp, "%s", keep);
        if (mkdir(G.tmp, 0700) < 0 && errno != EEXIST) {
            snprintf(G.why, sizeof G.why, "FFU_GOLDEN_KEEP: %.300s: %s", keep, strerror(errno));
            G.tmp[0] = 0;
            return;
        }
    } else if (snprintf(G.tmp, sizeof G.tmp, "%s/ffu-golden-XXXXXX",
                        tmpdir && *tmpdir ? tmpdir : "/tmp"),
               !mkdtemp(G.tmp)) {
        snprintf(G.why, sizeof G.why, "cannot make a temp dir: %s", strerror(errno));
        G.tmp[0] = 0;
        return;
    }
    char *vargv[] = {G.node, "--version", NULL};
    snprintf(p, sizeof p, "%s/node.log", G.tmp);
    if (run_cmd(vargv, p) != 0) {
        snprintf(G.why, sizeof G.why, "node not found (%.500s)", G.node);
        return;
    }
    char buf[1024], md[900];
    model_dir(md, sizeof md);
    for (size_t i = 0; i < sizeof PHOTOS / sizeof PHOTOS[0] && !G.ph; i++) {
        const char *path = buf;
        if (PHOTOS[i].in_cache)
            snprintf(buf, sizeof buf, "%s/%s", md, PHOTOS[i].name);
        else
            path = test_shared_path(PHOTOS[i].name, buf, sizeof buf);
        if (path && file_exists(path) && ffu_image_load(path, FFU_PIX_RGB24, &G.img) == FFU_OK) {
            G.ph = &PHOTOS[i];
            printf("input photo: %s (%dx%d)\n", path, G.img.width, G.img.height);
        }
    }
    if (!G.ph) {
        snprintf(G.why, sizeof G.why, "no input photo (../shared data or the model cache)");
        return;
    }
    printf("peers: %s\nrel = |ffu - peer| / max(|peer|, %g x max|peer|, %g); max rel <= %g "
           "(f16 model %g)\n",
           G.peers, FLOOR_FRAC, FLOOR_ABS, TOL_F32, TOL_F16);
    printf("strict = the same with the floor %g x max|peer| only (reported, not checked)\n",
           STRICT_FRAC);
    printf("%-44s %-28s %-4s %10s | %10s %10s %10s | %10s %10s %10s |\n", "model", "output",
           "peer", "max|peer|", "ref abs", "ref rel", "ref strict", "cpu abs", "cpu rel",
           "cpu strict");
    G.ready = 1;
}

/* ---- peer outputs ------------------------------------------------------------------ */

typedef struct peer_out {
    char name[256];
    int rank;
    int64_t dims[FFU_NN_MAX_RANK];
    float *data;
    size_t n;
    int used;
} peer_out;

static void peer_free(peer_out *o, int n)
{
    for (int i = 0; i < n; i++)
        free(o[i].data);
}

/* Reads OUTDIR/outputs.tsv and the files it names; the number read or -1. */
static int peer_read(const char *dir, peer_out *o, int max)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/outputs.tsv", dir);
    size_t len;
    char *txt = read_file(path, &len);
    if (!txt) return -1;
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (n == max) break;
        char *f[4], *s2 = NULL;
        int k = 0;
        for (char *t = strtok_r(line, "\t", &s2); t && k < 4; t = strtok_r(NULL, "\t", &s2))
            f[k++] = t;
        if (k != 4) continue;
        peer_out *p = &o[n];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", f[0]);
        size_t numel = 1;
        char *d = f[2], *e;
        while (*d && p->rank < FFU_NN_MAX_RANK) {
            p->dims[p->rank] = strtoll(d, &e, 10);
            numel *= (size_t)p->dims[p->rank++];
            d = *e == 'x' ? e + 1 : e;
            if (e == d && *d) break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, f[3]);
        size_t nb;
        p->data = read_file(path, &nb);
        if (!p->data || nb != numel * sizeof(float)) {
            fprintf(stderr, "%s: %zu bytes, want %zu\n", path, p->data ? nb : 0,
                    numel * sizeof(float));
            free(p->data);
            p->data = NULL;
            free(txt);
            peer_free(o, n);
            return -1;
        }
        p->n = numel;
        n++;
    }
    free(txt);
    return n;
}

/* The peer output facefuse's output `name` corresponds to: the same name, or TF.js's
 * "node:0" for facefuse's "node" (docs/NN_TFJS.md: output 0 keeps the node name). */
static peer_out *peer_find(peer_out *o, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(o[i].name, name)) return &o[i];
    size_t len = strlen(name);
    for (int i = 0; i < n; i++)
        if (!strncmp(o[i].name, name, len) && !strcmp(o[i].name + len, ":0")) return &o[i];
    return NULL;
}

/* ---- one model --------------------------------------------------------------------- */

typedef struct cmp_result {
    double max_abs, max_rel, strict_rel;
    int ok;
    char err[200];
} cmp_result;

static void compare(const float *a, const float *b, size_t n, double tol, cmp_result *r)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
    double floor_ = fmax(FLOOR_FRAC * scale, FLOOR_ABS);
    double strict_floor = fmax(STRICT_FRAC * scale, 1e-300);
    r->max_abs = r->max_rel = r->strict_rel = 0;
    for (size_t i = 0; i < n; i++) {
        double x = a[i], y = b[i], d;
        if (isnan(x) || isnan(y))
            d = isnan(x) && isnan(y) ? 0 : INFINITY;
        else
            d = fabs(x - y);
        double rel = d / fmax(fabs(y), floor_);
        if (d > r->max_abs) r->max_abs = d;
        if (rel > r->max_rel || isnan(rel)) r->max_rel = isnan(rel) ? INFINITY : rel;
        double strict = d == 0 ? 0 : d / fmax(fabs(y), strict_floor);
        if (strict > r->strict_rel || isnan(strict))
            r->strict_rel = isnan(strict) ? INFINITY : strict;
    }
    r->ok = r->max_rel <= tol;
}

typedef struct ffu_run {
    ffu_nn_model *m;
    ffu_nn_session *s;
} ffu_run;

/* Runs the model on one backend with the prepared input; 0 or -1 (reason in err). */
static int ffu_run_backend(ffu_run *r, const char *backend, int rank, const int64_t *dims,
                           const void *in, size_t in_bytes, char *err, size_t errlen)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 2;
    ffu_nn_tensor t;
    if (ffu_nn_session_create(r->m, &o, &r->s) < 0 ||
        ffu_nn_session_set_input_shape(r->s, 0, rank, dims) < 0 ||
        ffu_nn_session_input(r->s, 0, &t) < 0) {
        snprintf(err, errlen, "%s", ffu_error_message());
        return -1;
    }
    if (t.nbytes != in_bytes) {
        snprintf(err, errlen, "input is %zu bytes, prepared %zu", t.nbytes, in_bytes);
        return -1;
    }
    memcpy(t.data, in, in_bytes);
    if (ffu_nn_session_run(r->s) < 0) {
        snprintf(err, errlen, "run: %s", ffu_error_message());
        return -1;
    }
    return 0;
}

static void dims_str(char *buf, size_t len, int rank, const int64_t *d)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < rank && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "x" : "", (long long)d[i]);
}

static void row(const char *model, const char *out, const char *peer, double scale,
                const cmp_result *r, int nr, const char *note)
{
    printf("%-44s %-28s %-4s %10.4g |", model, out, peer, scale);
    for (int b = 0; b < nr; b++) {
        if (r[b].err[0])
            printf(" %32s |", "error");
        else
            printf(" %10.3g %10.3g %10.3g |", r[b].max_abs, r[b].max_rel, r[b].strict_rel);
    }
    int ok = 1, strict_ok = 1;
    for (int b = 0; b < nr; b++)
        ok &= r[b].ok, strict_ok &= r[b].err[0] || r[b].strict_rel <= TOL_F32;
    if (!strict_ok) G.strict_over++;
    printf(" %s%s%s\n", ok ? "ok" : "FAIL", note && *note ? ": " : "", note ? note : "");
    for (int b = 0; b < nr; b++)
        if (r[b].err[0]) printf("    %s: %s\n", b ? "cpu" : "ref", r[b].err);
    G.rows++;
    if (!ok) G.failed++;
}

/* The npm package a peer mode needs beyond the two setup() requires, or NULL. */
static const char *peer_package(const char *peer)
{
    return !strcmp(peer, "faceapi")  ? "@vladmandic/face-api"
           : !strcmp(peer, "tflite") ? "@litertjs/core"
                                     : NULL;
}

/* Prepares the input, runs the peer and facefuse, compares; counts failures in G. */
static void check_model(const model_spec *sp)
{
    char path[1400], md[900], buf[1200];
    if (sp->src == SRC_SHARED || sp->src == SRC_QUANT) {
        snprintf(buf, sizeof buf, "models/%s", sp->src == SRC_QUANT ? sp->file + 3 : sp->file);
        if (!test_shared_path(buf, path, sizeof path)) {
            printf("%-44s (not found: skipped)\n", sp->file);
            return;
        }
    } else {
        model_dir(md, sizeof md);
        snprintf(path, sizeof path, "%s/%s", md, sp->file);
        if (!file_exists(path)) {
            printf("%-44s (not found: skipped)\n", sp->file);
            return;
        }
    }
    const char *pkg = peer_package(sp->peer);
    if (pkg) { /* an older peers cache may lack it: setup-peers installs it */
        snprintf(buf, sizeof buf, "%s/node_modules/%s/package.json", G.peers, pkg);
        if (!file_exists(buf)) {
            printf("%-44s (peer %s not installed: skipped; run tests/models/setup-peers)\n",
                   sp->file, pkg);
            return;
        }
    }
    if (sp->src == SRC_QUANT) { /* path: the shared f32 file -> its quantised copy */
        char tool[900], cmd[4200], out[1400];
        snprintf(tool, sizeof tool, "%s/quantize_onnx", FFU_TEST_BINARY_DIR);
        snprintf(out, sizeof out, "%s/%s.model", G.tmp, sp->file);
        if (!file_exists(tool)) {
            printf("%-44s (%s not built: skipped)\n", sp->file, tool);
            return;
        }
        snprintf(cmd, sizeof cmd, "'%s' %s '%s' '%s' > /dev/null", tool,
                 strncmp(sp->file, "u8_", 3) ? "" : "--u8", path, out);
        if (system(cmd) != 0) {
            printf("%-44s (quantize_onnx failed)\n", sp->file);
            G.failed++;
            return;
        }
        snprintf(path, sizeof path, "%s", out);
    }
    G.models++;
    cmp_result none[2] = {{0, 0, 0, 0, ""}, {0, 0, 0, 0, ""}};
    ffu_nn_model *m = NULL;
    if (ffu_nn_model_load(path, &m) < 0) {
        snprintf(none[0].err, sizeof none[0].err, "load: %s", ffu_error_message());
        row(sp->file, "-", sp->peer, 0, none, 1, "");
        return;
    }
    ffu_nn_tensor info;
    ffu_nn_model_input(m, 0, &info);
    int rank = info.rank;
    int64_t dims[FFU_NN_MAX_RANK];
    memcpy(dims, info.dims, sizeof dims);
    ffu_dtype in_dtype = info.dtype;
    char in_name[256];
    snprintf(in_name, sizeof in_name, "%s", info.name);
    const char *why = NULL;
    if (rank != 4 || ffu_nn_model_num_inputs(m) != 1)
        why = "not one rank-4 input";
    else if (in_dtype != FFU_DTYPE_F32 && in_dtype != FFU_DTYPE_F16)
        why = "input not f32/f16";
    /* NHWC when the last dim is the channel count (TF.js, keijiro), else NCHW */
    int nhwc = dims[3] == 1 || dims[3] == 3;
    int hax = nhwc ? 1 : 2, wax = nhwc ? 2 : 3, cax = nhwc ? 3 : 1;
    if (dims[0] < 0) dims[0] = sp->roi == ROI_FACE_PAIR ? 2 : 1;
    if (dims[hax] < 0) dims[hax] = sp->h;
    if (dims[wax] < 0) dims[wax] = sp->w;
    if (dims[cax] < 0) dims[cax] = sp->gray ? 1 : 3;
    if (!why && (dims[hax] <= 0 || dims[wax] <= 0)) why = "dynamic H/W without a size in the table";
    if (why) {
        snprintf(none[0].err, sizeof none[0].err, "%s", why);
        row(sp->file, "-", sp->peer, 0, none, 1, "");
        ffu_nn_model_destroy(m);
        return;
    }
    int N = (int)dims[0], H = (int)dims[hax], W = (int)dims[wax], C = (int)dims[cax];

    /* the photo region, resized and normalised by the library */
    const int *roi = sp->roi == ROI_FACE || sp->roi == ROI_FACE_PAIR ? G.ph->face
                     : sp->roi == ROI_EYE                            ? G.ph->eye
                                                                     : NULL;
    ffu_image view, sized = {0};
    size_t numel = (size_t)N * H * W * C;
    float *x = malloc(numel * sizeof(float));
    uint16_t *xh = NULL;
    ffu_tensor_view tv = {x, nhwc ? FFU_LAYOUT_NHWC : FFU_LAYOUT_NCHW, N, C, H, W};
    ffu_norm_params np;
    memset(&np, 0, sizeof np);
    for (int c = 0; c < 3; c++)
        np.mean[c] = sp->mean[c], np.scale[c] = sp->scale;
    np.swap_rb = sp->bgr;
    np.gray = sp->gray;
    ffu_status st = x ? FFU_OK : FFU_ERR_NOMEM;
    if (st == FFU_OK)
        st = roi ? ffu_image_view(&view, &G.img, roi[0], roi[1], roi[2], roi[3])
                 : ffu_image_view(&view, &G.img, 0, 0, G.img.width, G.img.height);
    if (st == FFU_OK) st = ffu_image_create(&sized, FFU_PIX_RGB24, W, H);
    if (st == FFU_OK) st = ffu_image_resize(&view, &sized, FFU_INTERP_AREA);
    if (st == FFU_OK) st = ffu_image_to_tensor(&sized, &np, &tv, 0);
    /* the other items of a batch: the region, mirrored in odd items */
    for (int b = 1; st == FFU_OK && b < N; b++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int i = 0; i < W; i++)
                    *ffu_tensor_at(&tv, b, c, y, i) =
                        *ffu_tensor_at(&tv, 0, c, y, b % 2 ? W - 1 - i : i);
    ffu_image_release(&sized);
    const void *in = x;
    size_t in_bytes = numel * sizeof(float);
    if (st == FFU_OK && in_dtype == FFU_DTYPE_F16) {
        /* the model wants f16: both engines get the same half values */
        xh = malloc(numel * sizeof(uint16_t));
        st = xh ? nn_convert(x, FFU_DTYPE_F32, xh, FFU_DTYPE_F16, numel) : FFU_ERR_NOMEM;
        in = xh;
        in_bytes = numel * sizeof(uint16_t);
    }
    /* files under TMP/MODEL/: input.bin, peer.log, out/ (the peer's outputs) */
    char mdir[700], in_path[800], out_dir[800], log[800], spec[1600], dstr[128];
    snprintf(mdir, sizeof mdir, "%s/%s", G.tmp, sp->file);
    snprintf(in_path, sizeof in_path, "%s/input.bin", mdir);
    snprintf(out_dir, sizeof out_dir, "%s/out", mdir);
    snprintf(log, sizeof log, "%s/peer.log", mdir);
    if (st == FFU_OK && mkdir(mdir, 0700) < 0 && errno != EEXIST) st = FFU_ERR_IO;
    if (st == FFU_OK && write_file(in_path, in, in_bytes) < 0) st = FFU_ERR_IO;
    if (st < 0) {
        snprintf(none[0].err, sizeof none[0].err, "input: %s", ffu_error_message());
        row(sp->file, "-", sp->peer, 0, none, 1, "");
        goto done;
    }

    /* the peer */
    rm_tree(out_dir);
    dims_str(dstr, sizeof dstr, rank, dims);
    snprintf(spec, sizeof spec, "%s=%s:%s:%s", in_name, in_dtype == FFU_DTYPE_F16 ? "f16" : "f32",
             dstr, in_path);
    char *argv[] = {G.node, G.script, (char *)sp->peer, path, out_dir, spec, NULL};
    peer_out po[32];
    int npo = -1;
    if (G.keep) { /* how the peer was run, for tests/models/peer_noise.js */
        char fp[900];
        snprintf(fp, sizeof fp, "%s/run.tsv", mdir);
        FILE *f = fopen(fp, "w");
        if (f) fprintf(f, "%s\t%s\t%s\n", sp->peer, path, spec);
        if (f) fclose(f);
    }
    int rc = run_cmd(argv, log);
    if (rc == 0) npo = peer_read(out_dir, po, 32);
    if (npo < 0) {
        print_log_tail(log);
        snprintf(none[0].err, sizeof none[0].err, "peer %s failed (exit %d)", sp->peer, rc);
        row(sp->file, "-", sp->peer, 0, none, 1, "");
        goto done;
    }

    /* facefuse, both backends */
    ffu_run runs[2] = {{m, NULL}, {m, NULL}};
    const char *backends[2] = {"ref", "cpu"};
    char berr[2][200] = {"", ""};
    for (int b = 0; b < 2; b++)
        ffu_run_backend(&runs[b], backends[b], rank, dims, in, in_bytes, berr[b], sizeof berr[b]);
    double tol = in_dtype == FFU_DTYPE_F16 ? TOL_F16 : TOL_F32;
    int nout = ffu_nn_model_num_outputs(m);
    for (int k = 0; k < nout; k++) {
        ffu_nn_tensor oi;
        ffu_nn_model_output(m, k, &oi);
        peer_out *p = peer_find(po, npo, oi.name);
        cmp_result r[2];
        memset(r, 0, sizeof r);
        char note[160] = "";
        if (!p) {
            snprintf(r[0].err, sizeof r[0].err, "the peer has no output '%s'", oi.name);
            row(sp->file, oi.name, sp->peer, 0, r, 1, "");
            continue;
        }
        p->used = 1;
        double scale = 0;
        for (size_t i = 0; i < p->n; i++)
            scale = fmax(scale, fabs((double)p->data[i]));
        for (int b = 0; b < 2; b++) {
            ffu_nn_tensor t;
            if (berr[b][0]) {
                snprintf(r[b].err, sizeof r[b].err, "%.190s", berr[b]);
                continue;
            }
            if (ffu_nn_session_output(runs[b].s, k, &t) < 0) {
                snprintf(r[b].err, sizeof r[b].err, "output: %s", ffu_error_message());
                continue;
            }
            size_t n = t.nbytes / (ffu_dtype_size(t.dtype) ? ffu_dtype_size(t.dtype) : 1);
            int same = t.rank == p->rank && n == p->n;
            for (int i = 0; same && i < t.rank; i++)
                same = t.dims[i] == p->dims[i];
            if (!same) {
                char a[128], c[128];
                dims_str(a, sizeof a, t.rank, t.dims);
                dims_str(c, sizeof c, p->rank, p->dims);
                snprintf(r[b].err, sizeof r[b].err, "shape %.60s, peer %.60s", a, c);
                continue;
            }
            float *f = malloc((n ? n : 1) * sizeof(float));
            if (!f || nn_convert(t.data, t.dtype, f, FFU_DTYPE_F32, n) < 0) {
                snprintf(r[b].err, sizeof r[b].err, "cannot read a %s output",
                         ffu_dtype_name(t.dtype));
                free(f);
                continue;
            }
            if (G.keep) { /* facefuse's outputs beside the peer's, as f32 */
                char fp[900];
                snprintf(fp, sizeof fp, "%s/%s_%d.f32", mdir, backends[b], k);
                write_file(fp, f, n * sizeof(float));
                snprintf(fp, sizeof fp, "%s/facefuse.tsv", mdir);
                FILE *idx = fopen(fp, k == 0 && b == 0 ? "w" : "a");
                if (idx) fprintf(idx, "%s\t%s_%d.f32\t%s\n", oi.name, backends[b], k, p->name);
                if (idx) fclose(idx);
            }
            compare(f, p->data, n, tol, &r[b]);
            free(f);
        }
        if (tol != TOL_F32) snprintf(note, sizeof note, "f16 model, tolerance %g", tol);
        row(sp->file, oi.name, sp->peer, scale, r, 2, note);
    }
    for (int i = 0; i < npo; i++)
        if (!po[i].used) {
            cmp_result r = {0, 0, 0, 0, ""};
            snprintf(r.err, sizeof r.err, "facefuse has no output for the peer's '%.100s'",
                     po[i].name);
            row(sp->file, po[i].name, sp->peer, 0, &r, 1, "");
        }
    for (int b = 0; b < 2; b++)
        ffu_nn_session_destroy(runs[b].s);
    peer_free(po, npo);
done:
    free(x);
    free(xh);
    ffu_nn_model_destroy(m);
}

static void check_list(const model_spec *list, size_t n)
{
    setup();
    if (G.ready < 0) TEST_SKIP(G.why);
    int failed = G.failed, models = G.models;
    for (size_t i = 0; i < n; i++)
        check_model(&list[i]);
    if (G.models == models) TEST_SKIP("none of these models (or its peer package) is present");
    CHECK_EQ_INT(G.failed - failed, 0);
}

static void test_onnx_shared(void)
{
    check_list(ONNX_SHARED, sizeof ONNX_SHARED / sizeof ONNX_SHARED[0]);
}
static void test_onnx_keijiro(void)
{
    check_list(ONNX_CACHE, sizeof ONNX_CACHE / sizeof ONNX_CACHE[0]);
}
static void test_tfjs(void) { check_list(TFJS, sizeof TFJS / sizeof TFJS[0]); }
static void test_faceapi(void) { check_list(FACEAPI, sizeof FACEAPI / sizeof FACEAPI[0]); }
static void test_tflite(void) { check_list(TFLITE, sizeof TFLITE / sizeof TFLITE[0]); }
static void test_onnx_quantised(void)
{
    check_list(QUANTISED, sizeof QUANTISED / sizeof QUANTISED[0]);
}

/* Not a test: releases what setup() made (kept in the list so it runs last). */
static void test_cleanup(void)
{
    if (G.tmp[0] && !G.keep) rm_tree(G.tmp);
    ffu_image_release(&G.img);
    if (G.ready < 0) TEST_SKIP(G.why);
    printf("%d outputs compared in %d models, %d over the tolerance (%d over %g with the strict "
           "floor, not checked)\n",
           G.rows, G.models, G.failed, G.strict_over, TOL_F32);
}

TEST_MAIN(test_onnx_shared, test_onnx_keijiro, test_tfjs, test_faceapi, test_tflite,
          test_onnx_quantised, test_cleanup)
