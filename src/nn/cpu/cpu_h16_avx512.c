/* Our kernel for a model's head on its last feature map: a convolution whose window is
 * the whole input, so each image gives one output pixel and every weight is read once
 * per image. FaceMesh's 1404 mesh coordinates come so from a 3x3x32 map (1.6 MB of f32
 * weights): oneDNN streamed them at 10 GFLOP/s, the speed of memory, and more slowly
 * when the analysis's other models had pushed them out of the caches. The weights ship
 * as f16 in the TF.js file, and when every one is exactly an f16 value the builder
 * keeps them so: half the bytes, and vcvtph2ps gives back the same floats. Per image,
 * blocks of 64 outputs take four accumulators over all KK inputs, each input broadcast
 * once per block; the tail block is masked. The sum runs over KK in the input's order
 * (another order than oneDNN's, as between any two kernels). A Gemm on f16 weights (the
 * antispoof model's 3136 -> 128 layer) runs here too, each row of its input an image. */
#include <immintrin.h>
#include <stdint.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"
#include "cpu_avx512.h"

INLINE __m512 h16_load(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)p));
}

/* Outputs [o, o + 16 * nv) of one image (nv 1-4), stored up to M. The block's weights
 * are one stream, [KK][16 * nv] from d->w + o * KK: a stride of the whole width between
 * inputs left the prefetcher behind (10 → 1 GB/s). */
INLINE void h16_block(const nn_cpu_h16 *d, const float *x, float *y, int64_t o, int nv)
{
    const int64_t Mp = 16 * nv, KK = d->KK;
    const uint16_t *w = d->w + o * KK;
    __m512 a0 = _mm512_load_ps(d->b + o), a1 = a0, a2 = a0, a3 = a0;
    if (nv > 1) a1 = _mm512_load_ps(d->b + o + 16);
    if (nv > 2) a2 = _mm512_load_ps(d->b + o + 32);
    if (nv > 3) a3 = _mm512_load_ps(d->b + o + 48);
    for (int64_t k = 0; k < KK; k++, w += Mp) {
        const __m512 v = _mm512_set1_ps(x[k]);
        a0 = _mm512_fmadd_ps(v, h16_load(w), a0);
        if (nv > 1) a1 = _mm512_fmadd_ps(v, h16_load(w + 16), a1);
        if (nv > 2) a2 = _mm512_fmadd_ps(v, h16_load(w + 32), a2);
        if (nv > 3) a3 = _mm512_fmadd_ps(v, h16_load(w + 48), a3);
    }
    const __m512 acc[4] = {a0, a1, a2, a3};
    for (int j = 0; j < nv; j++) {
        int64_t c0 = o + 16 * j;
        __mmask16 m;
        int mode = slice_mode(d->M, c0, &m);
        actv av = act_init(&d->act, d->ns + c0);
        st(y + c0, act(av, acc[j]), mode, m);
    }
}

void nn_cpu_h16_heads_avx512(const nn_cpu_h16 *d, const float *src, float *dst, int64_t n0,
                             int64_t n1)
{
    for (int64_t n = n0; n < n1; n++) {
        const float *x = src + n * d->KK;
        float *y = dst + n * d->M;
        int64_t o = 0;
        for (; o + 64 <= d->Mp; o += 64) h16_block(d, x, y, o, 4);
        if (o < d->Mp) h16_block(d, x, y, o, (int)((d->Mp - o) / 16));
    }
}

#endif
