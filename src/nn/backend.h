/* The backend interface of the engine, private to src/nn. A session owns one or more
 * backends (the chosen one, then `ref` as the fallback): during planning each node is
 * given to the first backend whose supports() accepts it, which prepare()s it once the
 * shapes are final; running the plan calls run() node by node. Backends are vtables,
 * like ggml's: `ref` (src/nn/ref/), `cpu` on oneDNN (src/nn/cpu/), `cuda` (src/nn/cuda/).
 *
 * Memory spaces: a backend reads and writes memory of one space. NN_SPACE_HOST is
 * ordinary memory; a backend with its own space (cuda: device memory) also provides
 * the memory calls below. The session plans one activation arena per space, gives
 * every tensor the space of the node that produces it (graph inputs and outputs: the
 * session's I/O space, host unless device I/O was asked for), and where a node reads a
 * value that lives in another space the planner inserts an ffu.MemCopy node (plan.c,
 * nn_plan_spaces): device -> host before a host node that falls back to ref, host ->
 * device after it. Constants are uploaded once per plan into the space of the nodes
 * that read them. So run() only ever sees pointers of its own space: in[i] and out[i]
 * in its arena or constant region, scratch in its space (scratch_bytes() of it).
 * prepare() still sees host data in g->tensors[t].data (weights to convert or upload).
 *
 * Ordering: device backends queue work (runs, copies) asynchronously in order on their
 * stream; the session calls sync() before a host node reads what a copy produced or
 * writes host memory a queued copy may still read, and at the end of a host-I/O run.
 *
 * Anything a backend keeps per node (a primitive, reordered weights) hangs on
 * node->priv and is freed by release(). */
#ifndef FFU_NN_BACKEND_H
#define FFU_NN_BACKEND_H

#include "ir.h"

/* Memory spaces. Device backends take ids from NN_SPACE_DEVICE up; a session has at
 * most NN_SPACE_MAX of them (host included). */
enum { NN_SPACE_HOST = 0, NN_SPACE_DEVICE = 1, NN_SPACE_MAX = 4 };

typedef struct nn_backend nn_backend;

typedef struct nn_backend_ops {
    const char *name;
    /* 1 if this backend runs node n as its inputs and outputs are typed and shaped
     * now (after shape inference), else 0. Must not fail. */
    int (*supports)(nn_backend *b, const nn_graph *g, const nn_node *n);
    /* Per-node set-up after shapes are final (may allocate; called once per plan).
     * Nodes are prepared in run order, before memory is planned: prepare may set a
     * tensor's keep_to (the value must stay allocated, and not be written over in
     * place, through a later node) or
     * unbacked (no run reads or writes it: no memory; run() then sees NULL for it), and
     * the node's view (its output, as this backend stores it, is input 0's bytes: the
     * plan makes it a view of input 0 where it can, and then the node does not run). */
    ffu_status (*prepare)(nn_backend *b, nn_graph *g, nn_node *n);
    /* Scratch bytes the node needs at run time (may be 0), in the backend's space. */
    size_t (*scratch_bytes)(nn_backend *b, const nn_graph *g, const nn_node *n);
    /* Runs one node. in[i] is NULL for omitted inputs; constant inputs point at their
     * data (in this backend's space). Must not allocate. */
    ffu_status (*run)(nn_backend *b, const nn_graph *g, const nn_node *n, void *const *in,
                      void *const *out, void *scratch);
    /* Frees node->priv (sets it to NULL). */
    void (*release)(nn_backend *b, nn_node *n);
    void (*destroy)(nn_backend *b);
    /* Optional (NULL: nothing to tell), for describe: the implementation a prepared
     * node runs ("brgconv_1x1:avx512_core", "" when none) and how many layout
     * conversions (reorders between NCHW and the backend's layout) each run makes.
     * A node that computes in bf16 (the session's bf16 option) has an impl starting
     * with "bf16 " (describe counts those), in fp16 with "fp16 "; one that runs in a
     * cpu band pipeline with "band " (docs/NN_CPU.md "Band pipelines"), in cpu thread
     * strips with "strip " ("Thread strips"). */
    void (*node_info)(nn_backend *b, const nn_node *n, const char **impl, int *reorders);
    /* Optional, for profiled runs (the session sets b->profile while it profiles), once
     * per node n of this backend. start: profiling begins, so zero what the backend
     * times itself (sec unused). Else sec[i] is node i's seconds as the session timed
     * them, summed over the profiled runs: where n's run computes other nodes too (cpu
     * band pipelines and thread strips, whose last member runs them all), the backend
     * gives each its share of n's time. */
    void (*profile)(nn_backend *b, const nn_graph *g, const nn_node *n, int start, double *sec);

    /* ---- memory of a device space (required when b->space != NN_SPACE_HOST) ---- */
    /* bytes (> 0) of the backend's space, 256-byte aligned. */
    ffu_status (*mem_alloc)(nn_backend *b, size_t bytes, void **p);
    void (*mem_free)(nn_backend *b, void *p); /* NULL is a no-op */
    /* Optional: host memory the backend copies from and to fastest (pinned), for the
     * session's host arena; NULL: the session uses ffu_alloc_large. */
    ffu_status (*host_alloc)(nn_backend *b, size_t bytes, void **p);
    void (*host_free)(nn_backend *b, void *p);
    /* Copies bytes between the host and the backend's space (or within it), queued in
     * order with its runs. src may be read until the next sync(). */
    ffu_status (*copy)(nn_backend *b, void *dst, int dst_space, const void *src, int src_space,
                       size_t bytes);
    /* Waits until every queued run and copy has finished. */
    ffu_status (*sync)(nn_backend *b);
    /* Optional: the queue (a cudaStream_t) the next runs use; NULL = the backend's own.
     * The backend orders work on the new queue after what it queued on the old one. */
    ffu_status (*set_stream)(nn_backend *b, void *stream);
    /* Optional: runs a whole plan section whose every node (copies included) is this
     * backend's: body(ctx) issues the runs. A backend may capture the first runs of a
     * plan and replay them (CUDA graphs) while plan_id stays the same; a new plan_id
     * means the plan changed. body is always called on the calling thread. */
    ffu_status (*execute)(nn_backend *b, uint64_t plan_id, ffu_status (*body)(void *ctx),
                          void *ctx);
} nn_backend_ops;

struct nn_backend {
    const nn_backend_ops *ops;
    int threads; /* worker threads it may use */
    int bf16;    /* bf16 compute allowed where the accuracy check passed */
    int winograd; /* cpu: Winograd convolution allowed where the accuracy check passed */
    int fp16;    /* fp16 (fp32 accumulation) allowed where the accuracy check passed */
    int space;   /* NN_SPACE_HOST, or the device space its run() works in */
    int profile; /* the session is profiling (ops->profile) */
    int plan_threads; /* threads the current plan's nodes run on: at most threads, fewer
                         for a plan of small nodes (cpu: cpu_backend.c graph_threads);
                         0 = threads (backends that do not decide, or before a plan) */
};

/* Constructors; each returns FFU_ERR_UNSUPPORTED when the backend is not built in. */
ffu_status nn_backend_ref_create(nn_backend **out);
/* flags: NN_CPU_BF16 (bf16 compute where the CPU has it and each node's check passes),
 * NN_CPU_WINOGRAD (Winograd 3x3 convolutions where each node's check passes),
 * NN_CPU_BANDS (band pipelines: runs of convolutions computed band by band; thread
 * strips: runs of convolutions on several threads, each the same rows of every layer),
 * NN_CPU_SPLIT_SMALL (every plan on all threads, however small its nodes: tests and
 * fuzzers, so that the split kernels run on small graphs) */
enum { NN_CPU_BF16 = 1u, NN_CPU_WINOGRAD = 2u, NN_CPU_BANDS = 4u, NN_CPU_SPLIT_SMALL = 8u };
ffu_status nn_backend_cpu_create(nn_backend **out, int threads, unsigned flags);
/* Rows that the cpu backend's band pipelines copied from the row above instead of
 * computing them (rows of one colour: cpu_chain.c), in every run of this process so
 * far; 0 in builds without the backend. */
uint64_t nn_cpu_rows_reused(void);

/* The CUDA backend (src/nn/cuda/) on device `device`: FFU_ERR_DEVICE ("no CUDA device")
 * on machines without one and in builds without CUDA. fp16 asks
 * for fp16 compute with fp32 accumulation where each node's accuracy check passes;
 * graphs (1) captures fixed-shape plans into CUDA graphs. */
typedef struct nn_cuda_opts {
    int device;
    int fp16;
    int graphs;
} nn_cuda_opts;
ffu_status nn_backend_cuda_create(nn_backend **out, const nn_cuda_opts *o);

#endif
