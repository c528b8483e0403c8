/* The two passes of the separable Gaussian blur (blend.c), written once and compiled
 * twice: by blend.c for the baseline ISA and by blend_avx2.c with AVX2 enabled. The
 * loops are shaped for the compiler's vectoriser (weights outer, pixels inner, no
 * reassociation: C11 mode keeps -ffp-contract=off), so both builds compute the same
 * floats in the same order and give the same bytes.
 *
 * Weights are symmetric: w[0] is the centre, w[k] the weight of offsets -k and +k; the
 * two u8 (or float) samples at +-k are added before the multiply. */
#ifndef FFU_IMAGE_BLUR_PASSES_H
#define FFU_IMAGE_BLUR_PASSES_H

#include <stdint.h>

/* out[c] = sum_k w[|k|] * rows[r + k][col0 + c], for c in 0..n-1. */
static inline void blur_vpass(const uint8_t *const *rows, int col0, const float *w, int r, int n,
                              float *restrict out)
{
    const uint8_t *mid = rows[r] + col0;
    for (int c = 0; c < n; c++)
        out[c] = w[0] * (float)mid[c];
    for (int k = 1; k <= r; k++) {
        const uint8_t *a = rows[r - k] + col0, *b = rows[r + k] + col0;
        float wk = w[k];
        for (int c = 0; c < n; c++)
            out[c] += wk * (float)(a[c] + b[c]);
    }
}

/* out[x] = round(sum_k w[|k|] * in[r + x + k]) for x in 0..n-1 (n <= 512); acc is
 * n floats of scratch. */
static inline void blur_hpass(const float *in, const float *w, int r, int n, float *restrict acc,
                              uint8_t *restrict out)
{
    const float *mid = in + r;
    for (int x = 0; x < n; x++)
        acc[x] = w[0] * mid[x];
    for (int k = 1; k <= r; k++) {
        const float *a = mid - k, *b = mid + k;
        float wk = w[k];
        for (int x = 0; x < n; x++)
            acc[x] += wk * (a[x] + b[x]);
    }
    /* The weights sum to 1 within float error, so acc stays below 255.5. */
    for (int x = 0; x < n; x++)
        out[x] = (uint8_t)(acc[x] + 0.5f);
}

#endif
