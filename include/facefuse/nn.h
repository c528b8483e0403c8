/* facefuse nn: the inference engine. Loads ONNX, TensorFlow.js graph models and float
 * TensorFlow Lite files into one graph IR, optimises it, plans its memory once per input shape, and runs it on a
 * backend: `ref` (plain C, the oracle), `cpu` (oneDNN, falling back to ref per op) or
 * `cuda` (cuDNN, cuBLAS and our kernels on an NVIDIA GPU; ref on the host per op where
 * it has no kernel, with the copies planned; docs/NN_CUDA.md).
 *
 * Lifecycle: ffu_nn_model_load -> ffu_nn_session_create (choose backend, threads,
 * input shapes) -> fill inputs (ffu_nn_session_input gives the buffer) ->
 * ffu_nn_session_run -> read outputs (ffu_nn_session_output) -> ... ->
 * ffu_nn_session_destroy -> ffu_nn_model_destroy.
 *
 * Thread-safety: a model is immutable after loading and may be shared by sessions on
 * many threads; a session is used by one thread at a time. The model must outlive its
 * sessions. After the first run a session allocates nothing. */
#ifndef FACEFUSE_NN_H
#define FACEFUSE_NN_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. The numbering is ours (not ONNX's); loaders map theirs onto it. */
typedef enum ffu_dtype {
    FFU_DTYPE_UNDEFINED = 0,
    FFU_DTYPE_F32,
    FFU_DTYPE_F16,
    FFU_DTYPE_BF16,
    FFU_DTYPE_F64,
    FFU_DTYPE_I8,
    FFU_DTYPE_U8,
    FFU_DTYPE_I16,
    FFU_DTYPE_U16,
    FFU_DTYPE_I32,
    FFU_DTYPE_U32,
    FFU_DTYPE_I64,
    FFU_DTYPE_U64,
    FFU_DTYPE_BOOL, /* one byte, 0 or 1 */
    FFU_DTYPE_COUNT,
} ffu_dtype;

FFU_API const char *ffu_dtype_name(ffu_dtype t); /* "f32", "i64", ... */
FFU_API size_t ffu_dtype_size(ffu_dtype t);      /* bytes per element; 0 if undefined */

#define FFU_NN_MAX_RANK 8

/* A tensor as the API shows it. dims[i] == -1 means "not known yet" (a dynamic
 * dimension before the session fixed it). data is borrowed from the session. */
typedef struct ffu_nn_tensor {
    const char *name;
    ffu_dtype dtype;
    int rank;
    int64_t dims[FFU_NN_MAX_RANK];
    void *data;
    size_t nbytes;
} ffu_nn_tensor;

typedef struct ffu_nn_model ffu_nn_model;
typedef struct ffu_nn_session ffu_nn_session;
typedef struct ffu_gpu_stream ffu_gpu_stream; /* facefuse/gpu.h */

/* ---- models ------------------------------------------------------------------------ */

/* Loads an ONNX file (.onnx), a TensorFlow.js graph model (model.json with its .bin
 * beside it) or a float TensorFlow Lite file (.tflite), chosen by content. Malformed or hostile files give FFU_ERR_FORMAT or
 * FFU_ERR_TOO_LARGE with a reason; an op the engine cannot run gives
 * FFU_ERR_UNSUPPORTED naming the op and node. The model runs load-time passes
 * (constant folding, fusions, dead-node removal). */
FFU_API ffu_status ffu_nn_model_load(const char *path, ffu_nn_model **out);
/* The same from memory; `weights` is the .bin of a TF.js model (NULL otherwise). Both
 * buffers are borrowed (copied where needed). */
FFU_API ffu_status ffu_nn_model_load_memory(const void *data, size_t size,
                                            const void *weights, size_t weights_size,
                                            ffu_nn_model **out);
FFU_API void ffu_nn_model_destroy(ffu_nn_model *m);

FFU_API int ffu_nn_model_num_inputs(const ffu_nn_model *m);
FFU_API int ffu_nn_model_num_outputs(const ffu_nn_model *m);
/* Name, dtype and declared shape (-1 for dynamic dims); data is NULL. */
FFU_API ffu_status ffu_nn_model_input(const ffu_nn_model *m, int i, ffu_nn_tensor *info);
FFU_API ffu_status ffu_nn_model_output(const ffu_nn_model *m, int i, ffu_nn_tensor *info);
/* Index of the input/output with this name, or -1. */
FFU_API int ffu_nn_model_find_input(const ffu_nn_model *m, const char *name);
FFU_API int ffu_nn_model_find_output(const ffu_nn_model *m, const char *name);

/* Summary for `facefuse nn info`: format ("onnx", "tfjs"), producer, opset, node
 * count, ops used (name and count), parameter bytes, FLOPs at the declared shapes
 * (dynamic dims taken as 1). Written as JSON into w. */
FFU_API ffu_status ffu_nn_model_describe(const ffu_nn_model *m, ffu_jw *w);

/* ---- workspaces -------------------------------------------------------------------- */

/* Host memory for the activations and scratch of several sessions that run one at a
 * time, such as the stages of one face analysis: together they hold only what the
 * largest needs, and each finds the memory the one before it wrote still in the CPU's
 * caches instead of fetching its own from DRAM (docs/NN.md "Workspaces"). The rules:
 * sessions of one workspace never run at the same time, and the pointers that
 * ffu_nn_session_input and ffu_nn_session_output give stay valid only until another
 * session of the workspace is planned or run (fill a session's inputs, run it, read
 * its outputs, then go on to the next). Sessions whose host memory comes from a device
 * backend (cuda) keep their own. Destroy a workspace after its sessions. */
typedef struct ffu_nn_workspace ffu_nn_workspace;

FFU_API ffu_status ffu_nn_workspace_create(ffu_nn_workspace **out);
FFU_API void ffu_nn_workspace_destroy(ffu_nn_workspace *w);
/* Bytes the workspace holds now: the most any of its sessions asked for. */
FFU_API size_t ffu_nn_workspace_bytes(const ffu_nn_workspace *w);

/* ---- sessions ---------------------------------------------------------------------- */

typedef struct ffu_nn_session_opts {
    const char *backend; /* "ref", "cpu" (oneDNN where it can, ref elsewhere), "cuda" (GPU
                            where it can, ref elsewhere), NULL = "cpu" */
    int threads;         /* 0 = ffu_cpu_count() */
    int batch;           /* items per run: dim 0 of every input declared 1 or dynamic; 0 = 1 */
    int bf16;            /* 1: allow bf16 compute where the backend's accuracy check passes */
    int no_winograd;     /* cpu: 1 = direct convolution only. By default 3x3 stride-1
                            Convs run Winograd (ours on AVX-512 where the channels are
                            multiples of 16 and the output has >= 256 pixels per run,
                            oneDNN's on other large ones) where its output matches a direct
                            convolution to NMSE < 1e-10 on a check at planning (up to 2x
                            faster; docs/NN_CPU.md "Winograd") */
    int no_bands;        /* cpu: 1 = every node on its own. By default a run of 1x1 and
                            depthwise convolutions whose tensors outgrow the L2 cache is
                            computed band by band, the values between them held in a few
                            rows (YuNet's stem; docs/NN_CPU.md "Band pipelines"), and on
                            several threads a run of convolutions in thread strips, each
                            thread the same rows of every layer ("Thread strips") */
    int free_dims;       /* 1: ffu_nn_session_set_input_shape may change any declared input
                            dim, for models exported at one size that compute their shapes
                            at run time (OpenCV's YuNet 2022mar) or that bake them into
                            Reshape targets which only merge dims and split the innermost
                            one (BlazeFace's heads: re-derived for the new size); a graph
                            that really needs its declared size then fails at planning,
                            naming the node */
    const char *const *outputs; /* NULL: compute every output of the model; else the names
                                   of the `noutputs` outputs to compute: the nodes only the
                                   others need are not run, and ffu_nn_session_output fails
                                   for the others (indices stay the model's) */
    int noutputs;
    /* cuda only */
    int fp16;            /* 1: fp16 compute with fp32 accumulation where each node's accuracy
                            check against fp32 passes (fp32 elsewhere) */
    int device;          /* CUDA device index (0 = the first) */
    int device_io;       /* 1: inputs and outputs live in device memory: the data pointers of
                            ffu_nn_session_input/_output are device pointers (never touch
                            them on the CPU); fill them with GPU kernels, run with
                            ffu_nn_session_run_device so frames never leave the GPU */
    int no_cuda_graphs;  /* 1: do not capture fixed-shape plans into CUDA graphs */
    ffu_nn_workspace *workspace; /* NULL: the session's own activation memory; else shared
                                    with the workspace's other sessions (its rules above) */
} ffu_nn_session_opts;

FFU_API void ffu_nn_session_opts_default(ffu_nn_session_opts *o);

/* Plans the model for concrete shapes: dim 0 of every input declared 1 or dynamic
 * becomes `batch`; other dynamic dims must be fixed with ffu_nn_session_set_input_shape
 * before the first run (FFU_ERR_INVALID names the input). Models that bake a batch of
 * 1 into constants still run N items: outputs get dim 0 = N, item b's slice equals the
 * batch-1 result for item b (one plan for all items where that can be proven, else N
 * runs of the batch-1 plan; ffu_nn_session_describe says which). */
FFU_API ffu_status ffu_nn_session_create(const ffu_nn_model *m, const ffu_nn_session_opts *o,
                                         ffu_nn_session **out);
FFU_API void ffu_nn_session_destroy(ffu_nn_session *s);
/* Changes one input's shape; the next run re-plans (this may allocate). A declared
 * dim 0 of 1 may take any value (the batch); an input left at 1 while others carry N
 * is shared by all items. */
FFU_API ffu_status ffu_nn_session_set_input_shape(ffu_nn_session *s, int i, int rank,
                                                  const int64_t *dims);
/* The input buffer to fill before ffu_nn_session_run (valid until the next
 * set_input_shape or destroy). Plans the session if needed. */
FFU_API ffu_status ffu_nn_session_input(ffu_nn_session *s, int i, ffu_nn_tensor *t);
FFU_API ffu_status ffu_nn_session_run(ffu_nn_session *s);
/* cuda: queues one run on `stream` (NULL: the session's own) after the work already
 * there and returns without waiting (only nodes that fall back to the CPU make it
 * wait). The outputs are ready once the stream reaches this point; until then do not
 * touch inputs or outputs (host I/O: pinned buffers the GPU copies from and into).
 * FFU_ERR_INVALID on sessions without a device backend. */
FFU_API ffu_status ffu_nn_session_run_device(ffu_nn_session *s, ffu_gpu_stream *stream);
/* Waits for the session's queued GPU work (after ffu_nn_session_run_device on its own
 * stream); a no-op for CPU backends. */
FFU_API ffu_status ffu_nn_session_sync(ffu_nn_session *s);
/* Output i of the last run; the data stays valid until the next run. */
FFU_API ffu_status ffu_nn_session_output(const ffu_nn_session *s, int i, ffu_nn_tensor *t);
/* Bytes of activation memory planned for one run (inputs and outputs included). */
FFU_API size_t ffu_nn_session_peak_bytes(const ffu_nn_session *s);
/* FLOPs (two per multiply-add, convolutions in direct form, as `describe`'s per-node
 * "flops") of every run of every session in this process so far: benchmarks read it
 * before and after a piece of work to know the arithmetic it did (`facefuse bench
 * face`'s "at peak" column). Thread-safe; it counts all threads' runs. */
FFU_API uint64_t ffu_nn_flops_done(void);
/* Threads the planned session's nodes run on: opts.threads, or fewer where the plan's
 * nodes are too small to be worth splitting (the cpu backend gives each thread at
 * least 1 MFLOP of the average node, so a plan averaging under 2 MFLOP a node runs on
 * one: docs/NN_CPU.md "Threads"). 0 before planning. */
FFU_API int ffu_nn_session_threads_used(const ffu_nn_session *s);
/* Which backend ran each node of the plan, as JSON (for `facefuse nn info`; "view"
 * and "empty" for nodes not run: aliases of their input, outputs with no values). After
 * profiled runs each node also has "ms", its mean wall time per run, and the object
 * "profiled_runs". */
FFU_API ffu_status ffu_nn_session_describe(const ffu_nn_session *s, ffu_jw *w);
/* on = 1: time every node of the following runs (clearing earlier times); on = 0:
 * stop. Costs two clock reads per node on the CPU; on a device backend each node is
 * waited for, so profiled runs are slower there (and CUDA graphs are not used). A
 * re-plan (new shapes) clears the times. */
FFU_API ffu_status ffu_nn_session_profile(ffu_nn_session *s, int on);

/* Calls fn(arg, k) for every k in [0, n) side by side, each call on a thread of the
 * calling thread's team of CPU engine threads (the OpenMP team the cpu backend's
 * sessions run on), and returns when all have returned. For independent models too
 * small to scale over threads, such as an ensemble's members: give each a cpu session
 * of one thread and its own activation memory (sessions that run at once must not
 * share a workspace). Where the runtime gives fewer threads than n (a call from inside
 * a host's parallel region), each thread takes several k in turn; built without
 * oneDNN, the caller makes every call. A team's idle threads spin for a while after
 * each job, so threads of the caller's own (a thread pool) would compete with them
 * for the cores: this uses the team instead. */
typedef void (*ffu_nn_job_fn)(void *arg, int k);
FFU_API void ffu_nn_run_side_by_side(int n, ffu_nn_job_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
