/* The GPU gallery search's kernels: one pass of a batch of probes against a
 * device-resident gallery (src/gallery/gallery_gpu.c drives it).
 *
 *   normalise  one thread per probe: gallery_gpu_normalize, zeros for a bad probe
 *   sims       probes x templates, a 32 x 128 tile per block, 4 x 4 per thread, fp32
 *              accumulation in element order (gallery_gpu_mac); fp16 templates are
 *              widened as the tile is staged in shared memory
 *   select     one thread per (probe, segment of identities): identity scores and the
 *              segment's top k (gallery_gpu_select_segment)
 *   merge      one block per probe: a merge tree over the segment lists, then the
 *              answer slots (gallery_gpu_merge_pair, gallery_gpu_finish)
 *
 * All per-element arithmetic is in ../gallery_gpu_hd.h, shared with the host reference
 * (gallery_gpu_reference_search) that the unit tests check against the CPU search;
 * the GPU test checks this file's results against that reference bit for bit. */
#include <cuda_runtime.h>

#include "gallery/gallery_gpu_internal.h"

namespace {

constexpr int kTileQ = 32;   /* probes per sims block */
constexpr int kTileR = 128;  /* templates per sims block */
constexpr int kTileK = 32;   /* elements per shared-memory stage */
constexpr int kSimsThreads = 256; /* 32 x 8: each thread 4 probes x 4 templates */
constexpr int kSelectThreads = 128;
constexpr int kMergeThreads = 128;
constexpr int kNormThreads = 128;

ffu_status cuda_check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess) return FFU_OK;
    (void)cudaGetLastError(); /* clear it so the next call starts clean */
    return ffu_error_set(FFU_ERR_DEVICE, "gallery gpu: %s failed: %s", what,
                         cudaGetErrorString(err));
}

__global__ void normalize_kernel(const float *__restrict__ probes, int nq, int dim,
                                 float *__restrict__ unit, int *__restrict__ valid)
{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= nq) return;
    float *u = unit + (size_t)q * dim;
    int ok = gallery_gpu_normalize(probes + (size_t)q * dim, dim, u);
    if (!ok)
        for (int d = 0; d < dim; d++) u[d] = 0.0f;
    valid[q] = ok;
}

template <typename T> __device__ __forceinline__ float widen(T v);
template <> __device__ __forceinline__ float widen<float>(float v) { return v; }
template <> __device__ __forceinline__ float widen<uint16_t>(uint16_t v)
{
    return gallery_gpu_f16_to_f32(v);
}

/* sims[q * ntpl + r] = dot(unit[q], tpl[r]). Element d of every dot is added at step d
 * (stages in order, kk in order), and the zero padding past dim adds exact zeros, so
 * each result is gallery_gpu_dot_f32/_f16's. The +1 columns keep the transposing
 * stores free of bank conflicts. */
template <typename T>
__global__ void __launch_bounds__(kSimsThreads)
sims_kernel(const float *__restrict__ unit, int nq, const T *__restrict__ tpl, int ntpl,
            int dim, float *__restrict__ sims)
{
    __shared__ float qs[kTileK][kTileQ + 1];
    __shared__ float ts[kTileK][kTileR + 1];
    const int tid = threadIdx.x, tx = tid & 31, ty = tid >> 5;
    const int q0 = blockIdx.y * kTileQ, r0 = blockIdx.x * kTileR;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;

    for (int d0 = 0; d0 < dim; d0 += kTileK) {
        /* a warp stages kTileK consecutive elements of one row: coalesced reads */
#pragma unroll
        for (int i = 0; i < kTileQ * kTileK / kSimsThreads; i++) {
            int e = i * kSimsThreads + tid, qq = e / kTileK, kk = e % kTileK;
            int q = q0 + qq, d = d0 + kk;
            qs[kk][qq] = q < nq && d < dim ? unit[(size_t)q * dim + d] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < kTileR * kTileK / kSimsThreads; i++) {
            int e = i * kSimsThreads + tid, rr = e / kTileK, kk = e % kTileK;
            int r = r0 + rr, d = d0 + kk;
            ts[kk][rr] = r < ntpl && d < dim ? widen<T>(tpl[(size_t)r * dim + d]) : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < kTileK; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = qs[kk][ty + 8 * i];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = ts[kk][tx + 32 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = gallery_gpu_mac(acc[i][j], a[i], b[j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int q = q0 + ty + 8 * i;
        if (q >= nq) continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int r = r0 + tx + 32 * j;
            if (r < ntpl) sims[(size_t)q * ntpl + r] = acc[i][j];
        }
    }
}

__global__ void select_kernel(const float *__restrict__ sims, int nq, int ntpl,
                              const int *__restrict__ first, const int *__restrict__ count,
                              int nid, int seg, int nseg, int k, ffu_gallery_match *cand,
                              int *cnt)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x, q = blockIdx.y;
    if (s >= nseg || q >= nq) return;
    size_t list = (size_t)q * nseg + s;
    cnt[list] = gallery_gpu_select_segment(sims + (size_t)q * ntpl, first, count, nid, s, seg,
                                           k, cand + list * k);
}

/* One block per probe. After each round every list the next round reads is written
 * (the barrier also orders global memory within the block), and the round after that
 * writes only lists this round has finished reading. */
__global__ void merge_kernel(ffu_gallery_match *cand0, int *cnt0, ffu_gallery_match *cand1,
                             int *cnt1, int nq, int nseg, int k, const int *__restrict__ valid,
                             ffu_gallery_match *out, int *counts)
{
    int q = blockIdx.x;
    if (q >= nq) return;
    size_t lists = (size_t)q * nseg;
    ffu_gallery_match *src = cand0 + lists * k, *dst = cand1 + lists * k;
    int *sn = cnt0 + lists, *dn = cnt1 + lists;
    for (int w = 1; w < nseg; w *= 2) {
        int pairs = gallery_gpu_merge_pairs(nseg, w);
        for (int p = threadIdx.x; p < pairs; p += blockDim.x)
            gallery_gpu_merge_pair(src, sn, dst, dn, nseg, k, w, p);
        __syncthreads();
        ffu_gallery_match *t = src;
        src = dst, dst = t;
        int *tn = sn;
        sn = dn, dn = tn;
    }
    if (threadIdx.x == 0)
        counts[q] = gallery_gpu_finish(src, nseg ? sn[0] : 0, valid[q], k, out + (size_t)q * k);
}

} // namespace

extern "C" ffu_status gallery_gpu_launch(void *stream, const gallery_gpu_launch_args *a)
{
    if (!a || a->nq < 1 || a->nq > GALLERY_GPU_MAX_CHUNK || a->dim < 1 || a->k < 1 ||
        a->nseg < 0 || (a->nseg > 0 && (!a->tpl || !a->first || !a->count || a->ntpl < 1)))
        return ffu_error_set(FFU_ERR_INTERNAL, "gallery gpu: bad launch arguments");
    cudaStream_t st = (cudaStream_t)stream;
    normalize_kernel<<<(a->nq + kNormThreads - 1) / kNormThreads, kNormThreads, 0, st>>>(
        a->probes, a->nq, a->dim, a->unit, a->valid);
    if (a->nseg > 0) {
        dim3 grid((unsigned)((a->ntpl + kTileR - 1) / kTileR), (unsigned)((a->nq + kTileQ - 1) / kTileQ));
        if (a->f16)
            sims_kernel<uint16_t><<<grid, kSimsThreads, 0, st>>>(
                a->unit, a->nq, (const uint16_t *)a->tpl, a->ntpl, a->dim, a->sims);
        else
            sims_kernel<float><<<grid, kSimsThreads, 0, st>>>(
                a->unit, a->nq, (const float *)a->tpl, a->ntpl, a->dim, a->sims);
        dim3 sgrid((unsigned)((a->nseg + kSelectThreads - 1) / kSelectThreads), (unsigned)a->nq);
        select_kernel<<<sgrid, kSelectThreads, 0, st>>>(a->sims, a->nq, a->ntpl, a->first,
                                                         a->count, a->nid, a->seg, a->nseg,
                                                         a->k, a->cand[0], a->cnt[0]);
    }
    merge_kernel<<<(unsigned)a->nq, kMergeThreads, 0, st>>>(a->cand[0], a->cnt[0], a->cand[1],
                                                             a->cnt[1], a->nq, a->nseg, a->k,
                                                             a->valid, a->out, a->counts);
    return cuda_check(cudaGetLastError(), "launching the search kernels");
}
