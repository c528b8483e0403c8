/* The arithmetic of the GPU gallery search, shared by the CUDA kernels
 * (src/gallery/cuda/gallery_search.cu), the host reference that replays the device
 * algorithm step by step (gallery_gpu_reference_search in gallery_gpu.c) and the unit
 * tests, which run without a GPU. Everything a kernel decides per element lives here:
 * normalising a probe, one multiply-add of a dot product, fp16 decoding, an identity's
 * score (max over its templates), and the top-k insertion and merge rules with their
 * tie rule. The tests check these against the CPU search (ffu_gallery_search), so the
 * same code the GPU runs is proven on the CPU; only launches and copies are left for
 * the GPU test.
 *
 * Exactness: every step is one correctly rounded IEEE operation in a fixed order
 * (explicit _rn intrinsics on the device so nvcc cannot fuse or reorder), so the
 * device's similarities equal the host reference's bit for bit. They differ from the
 * CPU search's by rounding only (its AVX2 kernel sums in another order).
 *
 * Order: candidates are ranked by similarity, higher first, and equal similarities by
 * identity index, lower first: exactly the order ffu_gallery_search produces. */
#ifndef FFU_GALLERY_GPU_HD_H
#define FFU_GALLERY_GPU_HD_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "facefuse/gallery.h"
#include "gpu/gpu_hd.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

/* Identities per select thread for k <= GALLERY_GPU_SEG_MIN; larger k use segments of
 * k identities, so the candidate lists (k per segment) never outgrow the scores. */
#define GALLERY_GPU_SEG_MIN 64

FFU_HD int gallery_gpu_segment_size(int k)
{
    return k <= GALLERY_GPU_SEG_MIN ? GALLERY_GPU_SEG_MIN : k;
}

/* ---- exact IEEE steps: the device spells out the rounding so nvcc cannot contract ---- */

FFU_HD double gallery_gpu_dmul(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

FFU_HD double gallery_gpu_dadd(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

/* acc + q * t with one rounding: one step of every dot product, in element order. */
FFU_HD float gallery_gpu_mac(float acc, float q, float t)
{
#ifdef __CUDA_ARCH__
    return __fmaf_rn(q, t, acc);
#else
    return fmaf(q, t, acc);
#endif
}

/* ---- probes ------------------------------------------------------------------------- */

/* gallery_normalize's arithmetic, step for step (double sum of squares in element
 * order, one reciprocal square root in double, each element scaled in double and
 * rounded to float), so a probe normalised on the device is the CPU's unit vector bit
 * for bit. Returns 0 (and leaves out alone) when v is all zero or not finite. */
FFU_HD int gallery_gpu_normalize(const float *v, int dim, float *out)
{
    double ss = 0;
    for (int i = 0; i < dim; i++)
        ss = gallery_gpu_dadd(ss, gallery_gpu_dmul((double)v[i], (double)v[i]));
    if (!(ss > 0 && ss <= DBL_MAX))
        return 0;
#ifdef __CUDA_ARCH__
    double inv = __ddiv_rn(1.0, __dsqrt_rn(ss));
#else
    double inv = 1.0 / sqrt(ss);
#endif
    for (int i = 0; i < dim; i++)
        out[i] = (float)gallery_gpu_dmul((double)v[i], inv);
    return 1;
}

/* ---- fp16 storage ------------------------------------------------------------------- */

FFU_HD uint32_t gallery_gpu_f32_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

/* IEEE binary16 from float, round to nearest even (what the hardware converters do):
 * templates are converted on the host when a gallery is uploaded. Overflow gives
 * infinity, tiny values become subnormals or zero, NaN stays NaN. */
FFU_HD uint16_t gallery_gpu_f32_to_f16(float f)
{
    uint32_t x = gallery_gpu_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* infinity, or NaN kept quiet */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) /* >= 65520: past the midpoint above 65504 */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half, units of 2^-24 */
        if (ax <= 0x33000000u) /* <= 2^-25: zero (the midpoint goes to the even zero) */
            return (uint16_t)sign;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(ax >> 23); /* 14..24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++; /* may reach 0x400, the smallest normal: still the right encoding */
        return (uint16_t)(sign | q);
    }
    uint32_t q = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
        q++; /* a carry into the exponent is the right rounding */
    return (uint16_t)(sign | q);
}

/* float from IEEE binary16 (exact). The device uses its converter, which the unit test
 * shows equal to this bit code for all 65536 inputs through the compiler's _Float16. */
FFU_HD float gallery_gpu_f16_to_f32(uint16_t h)
{
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f)
        x = sign | 0x7f800000u | (m << 13);
    else if (e)
        x = sign | ((e + 112u) << 23) | (m << 13);
    else if (!m)
        x = sign;
    else {
        uint32_t s = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            s++;
        }
        x = sign | ((113u - s) << 23) | ((m & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
#endif
}

/* ---- dot products, as the tiled kernel accumulates them (element order, fp32) --------- */

FFU_HD float gallery_gpu_dot_f32(const float *q, const float *t, int dim)
{
    float acc = 0.0f;
    for (int d = 0; d < dim; d++)
        acc = gallery_gpu_mac(acc, q[d], t[d]);
    return acc;
}

FFU_HD float gallery_gpu_dot_f16(const float *q, const uint16_t *t, int dim)
{
    float acc = 0.0f;
    for (int d = 0; d < dim; d++)
        acc = gallery_gpu_mac(acc, q[d], gallery_gpu_f16_to_f32(t[d]));
    return acc;
}

/* ---- ranking ------------------------------------------------------------------------ */

/* Does (sa, ia) rank before (sb, ib)? Higher similarity first, then lower index. */
FFU_HD int gallery_gpu_before(float sa, int ia, float sb, int ib)
{
    return sa > sb || (sa == sb && ia < ib);
}

/* An identity's score: the max over its rows' similarities, clamped to [-1, 1]
 * against rounding (ffu_gallery_search's rule). */
FFU_HD float gallery_gpu_identity_score(const float *sims, int first, int count)
{
    float best = -FLT_MAX;
    for (int r = first; r < first + count; r++)
        best = sims[r] > best ? sims[r] : best;
    return best > 1.0f ? 1.0f : best < -1.0f ? -1.0f : best;
}

/* Inserts (s, id) into list (n entries, ranked, room for k); returns the new n. An
 * entry that does not rank before the last of a full list is dropped, so with
 * identities offered in index order this is ffu_gallery_search's insertion exactly. */
FFU_HD int gallery_gpu_insert(ffu_gallery_match *list, int n, int k, int id, float s)
{
    if (n == k && !gallery_gpu_before(s, id, list[k - 1].similarity, list[k - 1].identity))
        return n;
    int p = n < k ? n++ : k - 1;
    while (p > 0 && gallery_gpu_before(s, id, list[p - 1].similarity, list[p - 1].identity)) {
        list[p] = list[p - 1];
        p--;
    }
    list[p].identity = id;
    list[p].similarity = s;
    return n;
}

/* The best k of two ranked lists of distinct identities, ranked, into out (not
 * overlapping either); returns how many. */
FFU_HD int gallery_gpu_merge(const ffu_gallery_match *a, int na, const ffu_gallery_match *b,
                             int nb, int k, ffu_gallery_match *out)
{
    int i = 0, j = 0, n = 0;
    while (n < k && (i < na || j < nb)) {
        if (j >= nb || (i < na && gallery_gpu_before(a[i].similarity, a[i].identity,
                                                     b[j].similarity, b[j].identity)))
            out[n++] = a[i++];
        else
            out[n++] = b[j++];
    }
    return n;
}

/* One select thread's work: the top k of identities seg*size .. (seg+1)*size-1 (fewer
 * at the end) of one query, whose row similarities are sims[0..ntpl). first/count are
 * the identities' row ranges. Writes list (room for k), returns its length. */
FFU_HD int gallery_gpu_select_segment(const float *sims, const int *first, const int *count,
                                      int nid, int seg, int size, int k,
                                      ffu_gallery_match *list)
{
    int n = 0, lo = seg * size, hi = lo + size < nid ? lo + size : nid;
    for (int id = lo; id < hi; id++)
        n = gallery_gpu_insert(list, n, k, id, gallery_gpu_identity_score(sims, first[id], count[id]));
    return n;
}

/* One pair of one round of the merge tree over one query's nseg segment lists (list i
 * at src + i*k, its length at src_n[i]): pair p merges lists 2pw and 2pw + w into dst
 * at list 2pw; a left list without a partner is copied. Rounds w = 1, 2, 4, ... while
 * w < nseg, swapping src and dst after each, leave the answer in list 0. */
FFU_HD void gallery_gpu_merge_pair(const ffu_gallery_match *src, const int *src_n,
                                   ffu_gallery_match *dst, int *dst_n, int nseg, int k,
                                   int w, int p)
{
    int left = 2 * p * w, right = left + w;
    if (left >= nseg)
        return;
    const ffu_gallery_match *a = src + (size_t)left * (size_t)k;
    ffu_gallery_match *o = dst + (size_t)left * (size_t)k;
    if (right < nseg) {
        dst_n[left] = gallery_gpu_merge(a, src_n[left], src + (size_t)right * (size_t)k,
                                        src_n[right], k, o);
    } else {
        for (int i = 0; i < src_n[left]; i++)
            o[i] = a[i];
        dst_n[left] = src_n[left];
    }
}

/* Pairs in the round of width w over nseg lists. */
FFU_HD int gallery_gpu_merge_pairs(int nseg, int w)
{
    return (nseg + 2 * w - 1) / (2 * w);
}

/* Writes a query's k answer slots like ffu_gallery_search: the n best, then
 * identity -1 / similarity -1; an invalid probe (valid == 0) finds nothing. Returns
 * the count reported for the query. */
FFU_HD int gallery_gpu_finish(const ffu_gallery_match *best, int n, int valid, int k,
                              ffu_gallery_match *out)
{
    if (!valid)
        n = 0;
    for (int j = 0; j < k; j++) {
        if (j < n) {
            out[j] = best[j];
        } else {
            out[j].identity = -1;
            out[j].similarity = -1.0f;
        }
    }
    return n;
}

#endif
