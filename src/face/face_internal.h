/* Private pieces shared by the face stages: face_net, the one way a stage opens a zoo
 * model and feeds it. A stage resolves its model spec, gets a session with the model's
 * layout (NCHW or NHWC, read from the declared input shape) and normalisation, fills
 * batch slots from image regions through an affine warp (alignment crops, detector
 * letterboxes, rotated crops all use the same call) and reads f32 outputs.
 *
 * With backend "cuda" the same calls run on the GPU (docs/FACE.md, "GPU"): the session
 * keeps its inputs and outputs in device memory, a fill uploads the host image (once
 * per image and run) and runs image_gpu.h's warp-to-tensor kernel into the input slot,
 * face_net_fill_warp_gpu does the same from a frame already on the device, and a run
 * copies the outputs into pinned host mirrors, so face_net_output still gives host
 * floats and no stage's decoding knows where the network ran. */
#ifndef FFU_FACE_INTERNAL_H
#define FFU_FACE_INTERNAL_H

#include "facefuse/face.h"
#include "facefuse/gpu.h"
#include "facefuse/image_gpu.h"
#include "facefuse/nn.h"

#define FACE_NET_SPARES 7

typedef struct face_net {
    ffu_zoo_entry entry;   /* entry.file points at path */
    char path[1024];
    ffu_nn_model *model;
    ffu_nn_session *session;
    ffu_tensor_layout layout;
    int in_c, in_w, in_h; /* current input size */
    int batch;            /* current batch */
    int dynamic_hw;       /* the model accepts any input size */
    ffu_norm_params norm; /* for an RGB-ordered image; face_net_fill swaps for BGR */
    ffu_image scratch;    /* one in_w x in_h crop */
    /* backend "cuda" only (gpu != NULL): */
    ffu_gpu *gpu;
    ffu_gpu_stream *stream; /* fills, runs and output copies, in this order */
    ffu_nn_session_opts so; /* to reopen the session with host I/O (host_io) */
    int host_io;   /* the model cannot keep its I/O on the device (values needed at planning,
                      looped batches): inputs and outputs are host buffers of the session */
    ffu_gpu_image up; /* device copy of the host image filled from last in this run */
    const uint8_t *up_src; /* ... which host pixels it holds (NULL: none) */
    int up_stride;
    void **mirror;       /* pinned host copies of the outputs of the last run */
    size_t *mirror_cap;
    int nmirror;
    int out_ready;       /* the mirrors hold the outputs of the last run */
    float *h_slot;       /* pinned: one slot filled on the CPU (grey images) */
    size_t h_slot_cap;
    void *d_stage;       /* host_io: one slot filled on the GPU, copied into the host input */
    size_t d_stage_cap;
    /* models that change input size on the CPU (dynamic_hw): the sessions of the last
     * sizes used besides the current one, most recent first, so that photos of a few
     * aspect ratios in turn do not re-plan for each (face_net_reshape) */
    struct face_plan {
        ffu_nn_session *session;
        int batch, w, h;
    } spare[FACE_NET_SPARES];
    int nspare;
    char backend[8];          /* the host session's backend, for opening spares */
    unsigned char *keep;      /* face_net_keep_outputs: per output, 1 when computed; NULL: all */
    const char **keep_names;  /* ... their names, for so.outputs */
    ffu_nn_workspace *own_ws; /* the spares' shared activations when the caller gave none */
} face_net;

/* The engine session options a model's ffu_face_model_opts asks for (backend, threads,
 * device, fp16; NULL: the defaults): face_net's sessions and the swap models' use it. */
void face_model_session_opts(const ffu_face_model_opts *o, ffu_nn_session_opts *so);
/* Resolves o->model (NULL = the role's default) and opens a session: batch 1, the zoo
 * entry's input size for dynamic models (or the declared one). face_net_load then
 * face_net_start. */
ffu_status face_net_open(face_net *n, ffu_face_role role, const ffu_face_model_opts *o);
/* face_net_open in two steps, for a stage that first looks at the model (outputs,
 * input size) and chooses what its sessions compute (face_net_keep_outputs), so that
 * they are planned once. Load: the model, its input layout and size, the session
 * options; no session (closes n on failure). free_dims: the session may change any
 * input dim (free_dims, nn.h) also when the zoo row gives a size: face_net_reshape
 * then asks for sizes the model did not declare, and planning says whether the graph
 * can run there. Start: the session, at batch 1 and the input size (a cuda net plans
 * here); on failure the caller closes n. */
ffu_status face_net_load(face_net *n, ffu_face_role role, const ffu_face_model_opts *o,
                         int free_dims);
ffu_status face_net_start(face_net *n);
void face_net_close(face_net *n); /* zeroed or closed: no-op */
/* Changes batch and (for dynamic models) input size; a no-op when unchanged. */
ffu_status face_net_reshape(face_net *n, int batch, int w, int h);
/* Fills batch slot b: m maps network-input coordinates to image coordinates, both in
 * the face module's continuous convention (pixel i covers [i, i+1)); bilinear, black
 * outside the image. */
ffu_status face_net_fill_warp(face_net *n, int b, const ffu_image *img, const double m[6]);
/* The same for an axis-aligned box of img (x, y, w, h in image pixels) stretched to the
 * input; returns the input -> image map in m_out (may be NULL). */
ffu_status face_net_fill_box(face_net *n, int b, const ffu_image *img, const float box[4],
                             double m_out[6]);
/* Fills batch slot b from a frame in device memory (RGB24, BGR24, RGBA32 or NV12 with
 * video range; m as for face_net_fill_warp). cuda nets only: FFU_ERR_UNSUPPORTED on
 * others. The frame must stay valid until face_net_run returns. */
ffu_status face_net_fill_warp_gpu(face_net *n, int b, const ffu_gpu_image *img, const double m[6]);
/* Zeroes every slot of the input (a blank run). */
ffu_status face_net_clear_input(face_net *n);
/* 1 when n runs on the cuda backend. */
int face_net_on_gpu(const face_net *n);
/* What face_net_fill_warp(_gpu) hands the warp-to-tensor kernel for slot b of a source
 * of format fmt (NV12: coded as `yuv`, the frame's ffu_gpu_image.yuv): one job
 * (source 0), the sampling and normalisation options and the view of the input tensor
 * at `data`. Plain C, so that a unit test can run the kernel's
 * per-pixel body (image_gpu_hd.h) with these on the CPU and compare with the CPU fill:
 * the matrices and normalisation of both paths must mean the same thing. */
void face_net_warp_setup(const face_net *n, int b, ffu_pixfmt fmt, ffu_yuv_coding yuv,
                         const double m[6], void *data, ffu_gpu_warp_job *job,
                         ffu_gpu_warp_opts *o, ffu_gpu_tensor_view *t);
/* Runs the network; with cuda the outputs are on the host when it returns. */
ffu_status face_net_run(face_net *n);
/* Output i of the last run as f32 (NULL with the error set for other dtypes); t may be
 * NULL. */
const float *face_net_output(const face_net *n, int i, ffu_nn_tensor *t);
/* Index of the output with this name, or -1. */
int face_net_output_index(const face_net *n, const char *name);
int face_net_num_outputs(const face_net *n);
/* Computes only the outputs i with keep[i] set from here on (NULL or all set: every
 * one): the nodes only the others need are not run (ffu_nn_session_opts.outputs), and
 * face_net_output fails for the others. Output indices stay the model's. Best between
 * face_net_load and face_net_start; on a started net it reopens the sessions (a cuda
 * net plans again). */
ffu_status face_net_keep_outputs(face_net *n, const unsigned char *keep);
/* The same, for the outputs listed in outs[0..count) (indices out of range ignored). */
ffu_status face_net_keep_only(face_net *n, const int *outs, int count);

/* Turns a crop -> image map in continuous coordinates into the map that
 * ffu_image_warp_affine takes (pixel centres at integers). */
void face_warp_map(const double g[6], double m[6]);

/* Forward similarity image -> size x size crop (continuous coordinates) that puts kps
 * on the named template. */
ffu_status face_align_transform(const float kps[10], const char *template_name, int size,
                                double fwd[6]);

/* ---- face boxes (x, y, w, h), for the modules that match or pick faces -------------- */

/* Intersection over union; 0 when the boxes do not overlap. One definition for the
 * tracker, the swap smoother and the swap evaluation, so that "the same face in the
 * next frame" is measured the same way everywhere. */
float face_box_iou(const float a[4], const float b[4]);
/* Index of the face with the largest box area (the first of equals; 0 when the list is
 * empty): the one face of a photo that enrolment, swap sources and the evaluations
 * use. */
int face_list_largest(const ffu_face_list *l);

/* ---- multi-image entry points for the video pipeline (src/pipeline) ---------------- */

/* ffu_embedder_run for n faces that come from different images: face i is aligned from
 * imgs[i] (borrowed, RGB24/BGR24/RGBA32/GRAY8) and gets its embedding; runs in batches
 * of up to 32 faces. Results equal ffu_embedder_run's for the same face and image. */
ffu_status face_embedder_run_multi(ffu_embedder *e, const ffu_image *const *imgs,
                                   ffu_face *const *faces, int n);

/* 1 when ffu_detector_detect of any image is one network run of the whole frame (a
 * fixed-input model, no tiling, no rotations), so frames of different streams can share
 * one batched run: face_detector_detect_multi. */
int face_detector_batchable(const ffu_detector *d);
/* ffu_detector_detect on n images: outs[i] gets the faces of imgs[i], the same faces
 * detect would give. When the detector is batchable the images go through the network
 * together (up to 8 per run), else one after the other. */
ffu_status face_detector_detect_multi(ffu_detector *d, const ffu_image *const *imgs,
                                      ffu_face_list *const *outs, int n);
/* The same two on frames in device memory (ffu_detector_detect_gpu and
 * ffu_embedder_run_gpu of several frames at once; cuda handles only). */
ffu_status face_detector_detect_multi_gpu(ffu_detector *d, const ffu_gpu_image *const *imgs,
                                          ffu_face_list *const *outs, int n);
ffu_status face_embedder_run_multi_gpu(ffu_embedder *e, const ffu_gpu_image *const *imgs,
                                       ffu_face *const *faces, int n);
/* 1 when the handle runs on the cuda backend (so it takes GPU frames). */
int face_detector_on_gpu(const ffu_detector *d);
int face_embedder_on_gpu(const ffu_embedder *e);

#endif
