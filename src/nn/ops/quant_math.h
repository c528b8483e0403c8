/* The arithmetic of linear quantisation, as static inline loops shared by the reference
 * kernels (quant.c) and the cpu backend's (cpu_quant_avx512.c, which compiles the same
 * loops for AVX-512): one definition, so both give the same bits. Written without
 * branches or library calls inside the loops so that compilers can vectorise them. */
#ifndef FFU_NN_QUANT_MATH_H
#define FFU_NN_QUANT_MATH_H

#include <math.h>
#include <stdint.h>

/* 1.5 * 2^23: v + QM_ROUND_MAGIC - QM_ROUND_MAGIC is v rounded to nearest, ties to even
 * (the default rounding mode), for |v| < 2^22. */
#define QM_ROUND_MAGIC 12582912.0f

/* round(x / scale) + zp, saturated to [lo, hi] (NaN gives the zero point). x / scale is
 * first clamped to just outside what can land in the range, where the rounding above
 * is exact. */
static inline float qm_value(float x, float scale, float zp, float lo, float hi)
{
    float v = x / scale;
    v = v == v ? v : 0.0f;
    v = v < lo - zp - 1.0f ? lo - zp - 1.0f : v;
    v = v > hi - zp + 1.0f ? hi - zp + 1.0f : v;
    v = (v + QM_ROUND_MAGIC) - QM_ROUND_MAGIC + zp;
    return v < lo ? lo : v > hi ? hi : v;
}

/* Folds x[0, n) into *mn and *mx (NaN never wins a comparison). GCC leaves this scalar
 * (it does not vectorise select-based min/max reductions); the cpu backend's version is
 * in intrinsics (cpu_quant_avx512.c), the same comparisons. */
static inline void qm_minmax(const float *x, int64_t n, float *mn, float *mx)
{
    for (int64_t i = 0; i < n; i++) {
        *mn = x[i] < *mn ? x[i] : *mn;
        *mx = x[i] > *mx ? x[i] : *mx;
    }
}

/* DynamicQuantizeLinear's u8 scale and zero point for the range [mn, mx] (which holds
 * 0): scale 0 and zero point 0 when both are 0. */
static inline void qm_dynamic_params(float mn, float mx, float *scale, float *zp)
{
    *scale = (mx - mn) / 255.0f;
    *zp = 0.0f;
    if (*scale > 0.0f) {
        float z = nearbyintf(0.0f - mn / *scale);
        *zp = z < 0.0f ? 0.0f : z > 255.0f ? 255.0f : z;
    }
}

/* y[0, n) = the u8 code of x[k] minus the zero point, as f32 (0 where scale is 0). */
static inline void qm_steps(const float *x, int64_t n, float scale, float zp, float *y)
{
    if (!(scale > 0.0f)) {
        for (int64_t k = 0; k < n; k++) y[k] = 0.0f;
        return;
    }
    for (int64_t k = 0; k < n; k++) y[k] = qm_value(x[k], scale, zp, 0.0f, 255.0f) - zp;
}

#endif
