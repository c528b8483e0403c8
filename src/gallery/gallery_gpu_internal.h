/* Private to the GPU gallery search: the workspace plan (plain C, unit-tested without a
 * GPU), the one launcher the CUDA file exports (gallery_gpu_stub.c stands in for it in
 * builds without CUDA), and the host reference that replays the device algorithm.
 * Included by gallery_gpu.c, gallery_gpu_stub.c, cuda/gallery_search.cu and the tests. */
#ifndef FFU_GALLERY_GPU_INTERNAL_H
#define FFU_GALLERY_GPU_INTERNAL_H

#include <stddef.h>

#include "facefuse/gallery.h"
#include "gallery_gpu_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch per search pass. Larger batches run in passes of plan.chunk queries. */
#define GALLERY_GPU_WORKSPACE ((size_t)256 << 20)
/* Every scratch buffer starts on this boundary (the pool's alignment). */
#define GALLERY_GPU_ALIGN 256
/* Queries per pass at most: the grid's y dimension. */
#define GALLERY_GPU_MAX_CHUNK 65535

/* One pass's scratch, as byte offsets into one pool block. Per query: the probe as
 * given, its unit vector, a valid flag, one similarity per template, two candidate
 * buffers (the merge tree ping-pongs) of nseg lists of k, their lengths, the answer
 * slots and the count. */
typedef struct gallery_gpu_plan {
    int chunk;      /* queries per pass, 1..GALLERY_GPU_MAX_CHUNK */
    int seg, nseg;  /* identities per select thread; select threads per query */
    size_t off_probes, off_unit, off_valid, off_sims, off_cand[2], off_cnt[2], off_out,
        off_counts;
    size_t bytes; /* the whole block */
} gallery_gpu_plan;

/* Plans a search of nq >= 1 queries with k answers over nid identities / ntpl
 * templates of dim floats: as many queries per pass as fit in budget bytes (at least
 * one, whatever its size). FFU_ERR_INVALID on bad sizes. */
ffu_status gallery_gpu_plan_make(int nq, int k, int nid, int ntpl, int dim, size_t budget,
                                 gallery_gpu_plan *plan);

/* One pass, as device pointers (a plan's buffers and the snapshot's arrays). */
typedef struct gallery_gpu_launch_args {
    const float *probes; /* nq x dim, as given */
    int nq, dim;
    float *unit; /* nq x dim */
    int *valid;  /* nq */
    const void *tpl; /* ntpl x dim, float or binary16 (f16 != 0) */
    int f16, ntpl;
    const int *first, *count; /* nid row ranges */
    int nid;
    float *sims; /* nq x ntpl */
    int seg, nseg, k;
    ffu_gallery_match *cand[2]; /* nq x nseg x k each */
    int *cnt[2];                /* nq x nseg each */
    ffu_gallery_match *out;     /* nq x k */
    int *counts;                /* nq */
} gallery_gpu_launch_args;

/* Queues the pass's kernels on stream (a cudaStream_t, NULL for the default stream):
 * normalise, similarities, per-segment select, merge + finish. Reports launch errors;
 * errors while running show at the next synchronising call. */
ffu_status gallery_gpu_launch(void *stream, const gallery_gpu_launch_args *a);

/* Sets the scratch budget of gg's searches (GALLERY_GPU_WORKSPACE by default), so tests
 * can force a batch into several passes. Not thread-safe against running searches. */
void gallery_gpu_set_workspace(ffu_gallery_gpu *gg, size_t bytes);

/* The device algorithm replayed on the host with the same FFU_HD steps in the same
 * order (unit vectors, fp16 round trip when storage is F16, fmaf dot products in
 * element order, segment lists, the merge tree): what ffu_gallery_gpu_search must
 * return, bit for bit. Same arguments as the search, host memory only. */
ffu_status gallery_gpu_reference_search(const ffu_gallery *g, ffu_gallery_gpu_storage storage,
                                        const float *probes, int nq, int k,
                                        ffu_gallery_match *out, int *counts);

#ifdef __cplusplus
}
#endif

#endif
