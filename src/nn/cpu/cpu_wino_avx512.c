/* Our own Winograd F(4x4, 3x3) convolution for the cpu backend: channels-last (NHWC)
 * f32 with AVX-512, input and output channels multiples of 16, stride 1, any pads,
 * with bias, residual, activation and an optional fused 2x2 max pool.
 *
 * Why not oneDNN's (jit_wino_4x3): it transforms the whole input into one array and
 * multiplies into another before the output transform, 33 MB of traffic for gear's
 * 196x196 layer, and runs at ~450 "direct-equivalent" GFLOP/s here. Ours works on
 * blocks of 12 output tiles that stay in L1/L2 from the input transform to the store:
 * transform the 6x6 input patches of the block into V[36][12][C], multiply each of the
 * 36 points' V by the prepared weights U[36][C][K] into M[36][12][K] (16 or 24
 * accumulators in registers, each broadcast shared by 1-6 weight vectors), transform
 * back to 4x4 outputs and store them, pooled or not. Measured on gear's three big
 * layers (docs/NN_CPU.md "Winograd"): 1.6-1.9x oneDNN's kernel with its pool.
 *
 * The transforms are the standard F(4x4, 3x3) matrices (Lavin and Gray, 2016): input
 * B^T d B with points 0, +-1, +-2 and infinity; weights G g G^T, computed in double at
 * prepare; output A^T m A. Only called after a runtime AVX-512F check. */
#include <immintrin.h>
#include <stdint.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"
#include "cpu_avx512.h"

#define TB NN_CPU_WINO_TILES

void nn_cpu_wino_weights(const nn_cpu_wino *d, const float *g)
{
    static const double G[6][3] = {{1 / 4., 0, 0},           {-1 / 6., -1 / 6., -1 / 6.},
                                   {-1 / 6., 1 / 6., -1 / 6.}, {1 / 24., 1 / 12., 1 / 6.},
                                   {1 / 24., -1 / 12., 1 / 6.}, {0, 0, 1}};
    const int64_t C = d->C, K = d->K;
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++) {
            const float *w = g + (k * C + c) * 9; /* ONNX [K][C][3][3] */
            double t[6][3];
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 3; j++)
                    t[i][j] = G[i][0] * w[j] + G[i][1] * w[3 + j] + G[i][2] * w[6 + j];
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++)
                    d->U[((i * 6 + j) * C + c) * K + k] =
                        (float)(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
        }
}

/* B^T applied to six vectors, in place. */
INLINE void bt6(__m512 *p0, __m512 *p1, __m512 *p2, __m512 *p3, __m512 *p4, __m512 *p5)
{
    const __m512 d0 = *p0, d1 = *p1, d2 = *p2, d3 = *p3, d4 = *p4, d5 = *p5;
    const __m512 four = _mm512_set1_ps(4), m5 = _mm512_set1_ps(-5), m4 = _mm512_set1_ps(-4);
    const __m512 a = _mm512_fmadd_ps(m4, d2, d4), b = _mm512_fmadd_ps(m4, d1, d3);
    const __m512 c = _mm512_sub_ps(d4, d2), e = _mm512_add_ps(_mm512_sub_ps(d3, d1), _mm512_sub_ps(d3, d1));
    *p0 = _mm512_fmadd_ps(four, d0, _mm512_fmadd_ps(m5, d2, d4));
    *p1 = _mm512_add_ps(a, b);
    *p2 = _mm512_sub_ps(a, b);
    *p3 = _mm512_add_ps(c, e);
    *p4 = _mm512_sub_ps(c, e);
    *p5 = _mm512_fmadd_ps(four, d1, _mm512_fmadd_ps(m5, d3, d5));
}

/* A^T applied to six vectors: four results. */
INLINE void at6(__m512 m0, __m512 m1, __m512 m2, __m512 m3, __m512 m4, __m512 m5, __m512 *o0,
                __m512 *o1, __m512 *o2, __m512 *o3)
{
    const __m512 s12 = _mm512_add_ps(m1, m2), d12 = _mm512_sub_ps(m1, m2);
    const __m512 s34 = _mm512_add_ps(m3, m4), d34 = _mm512_sub_ps(m3, m4);
    *o0 = _mm512_add_ps(_mm512_add_ps(m0, s12), s34);
    *o1 = _mm512_fmadd_ps(_mm512_set1_ps(2), d34, d12);
    *o2 = _mm512_fmadd_ps(_mm512_set1_ps(4), s34, s12);
    *o3 = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8), d34, d12), m5);
}

/* The input transform of tile `tile` (image n, tile row ty, column tx) into row t of
 * V[36][TB][C]; pixels outside the image (pads, the last partial tiles) are zeros. */
static void in_tile(const nn_cpu_wino *d, const float *x, int64_t tile, float *V, int t)
{
    const int64_t C = d->C, IH = d->IH, IW = d->IW, per = d->TY * d->TX;
    const int64_t n = tile / per, ty = tile % per / d->TX, tx = tile % d->TX;
    const int64_t y0 = ty * 4 - d->PT, x0 = tx * 4 - d->PL;
    const int full = y0 >= 0 && x0 >= 0 && y0 + 6 <= IH && x0 + 6 <= IW;
    const float *xn = x + n * IH * IW * C;
    const int64_t vs = (int64_t)TB * C;
    float *vt = V + t * C;
    float tmp[36 * 16] __attribute__((aligned(64)));
    for (int64_t c0 = 0; c0 < C; c0 += 16) {
        for (int i = 0; i < 6; i++) { /* row i of the patch, along its columns */
            const int64_t yy = y0 + i;
            __m512 v[6];
            if (full) {
                const float *p = xn + (yy * IW + x0) * C + c0;
                for (int j = 0; j < 6; j++) v[j] = _mm512_loadu_ps(p + j * C);
            } else {
                for (int j = 0; j < 6; j++) {
                    const int64_t xx = x0 + j;
                    v[j] = yy >= 0 && yy < IH && xx >= 0 && xx < IW
                               ? _mm512_loadu_ps(xn + (yy * IW + xx) * C + c0)
                               : _mm512_setzero_ps();
                }
            }
            bt6(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
            for (int j = 0; j < 6; j++) _mm512_store_ps(tmp + (i * 6 + j) * 16, v[j]);
        }
        for (int j = 0; j < 6; j++) { /* column j, along the rows */
            __m512 v[6];
            for (int i = 0; i < 6; i++) v[i] = _mm512_load_ps(tmp + (i * 6 + j) * 16);
            bt6(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
            for (int i = 0; i < 6; i++) _mm512_storeu_ps(vt + c0 + (i * 6 + j) * vs, v[i]);
        }
    }
}

/* M[r][kb..] = sum over c of V[r][c] * U[c][kb..] for the rows and vectors named. */
#define ACC(i, j) __m512 a##i##j = _mm512_setzero_ps();
#define BC(i, j) __m512 v##i = _mm512_set1_ps(V[i * C + c]);
#define FMA(i, j) a##i##j = _mm512_fmadd_ps(v##i, u##j, a##i##j);
#define STO(i, j) _mm512_storeu_ps(M + i * K + 16 * j, a##i##j);
#define R6(X, j) X(0, j) X(1, j) X(2, j) X(3, j) X(4, j) X(5, j)
#define R12(X, j) R6(X, j) X(6, j) X(7, j) X(8, j) X(9, j) X(10, j) X(11, j)

/* six rows, four vectors (64 outputs) */
INLINE void gemm6x4(const float *V, const float *U, float *M, int64_t C, int64_t K)
{
#define ALL(X) R6(X, 0) R6(X, 1) R6(X, 2) R6(X, 3)
    ALL(ACC)
    for (int64_t c = 0; c < C; c++) {
        const float *u = U + c * K;
        const __m512 u0 = _mm512_loadu_ps(u), u1 = _mm512_loadu_ps(u + 16),
                     u2 = _mm512_loadu_ps(u + 32), u3 = _mm512_loadu_ps(u + 48);
        R6(BC, 0)
        ALL(FMA)
    }
    ALL(STO)
#undef ALL
}

/* four rows, six vectors (96 outputs) */
INLINE void gemm4x6(const float *V, const float *U, float *M, int64_t C, int64_t K)
{
#define R4(X, j) X(0, j) X(1, j) X(2, j) X(3, j)
#define ALL(X) R4(X, 0) R4(X, 1) R4(X, 2) R4(X, 3) R4(X, 4) R4(X, 5)
    ALL(ACC)
    for (int64_t c = 0; c < C; c++) {
        const float *u = U + c * K;
        const __m512 u0 = _mm512_loadu_ps(u), u1 = _mm512_loadu_ps(u + 16),
                     u2 = _mm512_loadu_ps(u + 32), u3 = _mm512_loadu_ps(u + 48),
                     u4 = _mm512_loadu_ps(u + 64), u5 = _mm512_loadu_ps(u + 80);
        R4(BC, 0)
        ALL(FMA)
    }
    ALL(STO)
#undef ALL
}

/* six rows, three vectors */
INLINE void gemm6x3(const float *V, const float *U, float *M, int64_t C, int64_t K)
{
#define ALL(X) R6(X, 0) R6(X, 1) R6(X, 2)
    ALL(ACC)
    for (int64_t c = 0; c < C; c++) {
        const float *u = U + c * K;
        const __m512 u0 = _mm512_loadu_ps(u), u1 = _mm512_loadu_ps(u + 16),
                     u2 = _mm512_loadu_ps(u + 32);
        R6(BC, 0)
        ALL(FMA)
    }
    ALL(STO)
#undef ALL
}

/* twelve rows, two vectors */
INLINE void gemm12x2(const float *V, const float *U, float *M, int64_t C, int64_t K)
{
#define ALL(X) R12(X, 0) R12(X, 1)
    ALL(ACC)
    for (int64_t c = 0; c < C; c++) {
        const __m512 u0 = _mm512_loadu_ps(U + c * K), u1 = _mm512_loadu_ps(U + c * K + 16);
        R12(BC, 0)
        ALL(FMA)
    }
    ALL(STO)
#undef ALL
}

/* twelve rows, one vector */
INLINE void gemm12x1(const float *V, const float *U, float *M, int64_t C, int64_t K)
{
#define ALL(X) R12(X, 0)
    ALL(ACC)
    for (int64_t c = 0; c < C; c++) {
        const __m512 u0 = _mm512_loadu_ps(U + c * K);
        R12(BC, 0)
        ALL(FMA)
    }
    ALL(STO)
#undef ALL
}

/* The output transform of row t of M (tile `tile`), bias, residual, activation, the
 * optional pool, and the stores of what lies inside the output. */
static void out_tile(const nn_cpu_wino *d, const float *M, int t, int64_t tile, const float *res,
                     float *y)
{
    const int64_t K = d->K, OH = d->OH, OW = d->OW, per = d->TY * d->TX;
    const int64_t n = tile / per, ty = tile % per / d->TX, tx = tile % d->TX;
    const int64_t ms = (int64_t)TB * K;
    const float *mt = M + t * K;
    const int64_t YH = d->pool ? OH / 2 : OH, YW = d->pool ? OW / 2 : OW;
    float *yn = y + n * YH * YW * K;
    const float *rn = res ? res + n * OH * OW * K : NULL;
    float tmp[24 * 16] __attribute__((aligned(64)));
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
        for (int i = 0; i < 6; i++) { /* row i of the 6x6 product, along its columns */
            const float *p = mt + k0 + i * 6 * ms;
            __m512 o0, o1, o2, o3;
            at6(_mm512_loadu_ps(p), _mm512_loadu_ps(p + ms), _mm512_loadu_ps(p + 2 * ms),
                _mm512_loadu_ps(p + 3 * ms), _mm512_loadu_ps(p + 4 * ms),
                _mm512_loadu_ps(p + 5 * ms), &o0, &o1, &o2, &o3);
            _mm512_store_ps(tmp + (i * 4 + 0) * 16, o0);
            _mm512_store_ps(tmp + (i * 4 + 1) * 16, o1);
            _mm512_store_ps(tmp + (i * 4 + 2) * 16, o2);
            _mm512_store_ps(tmp + (i * 4 + 3) * 16, o3);
        }
        const __m512 bias = _mm512_load_ps(d->b + k0);
        const actv av = {.ns = d->act.neg ? _mm512_load_ps(d->ns + k0) : _mm512_setzero_ps(),
                         .lo = _mm512_set1_ps(d->act.lo), .hi = _mm512_set1_ps(d->act.hi),
                         .neg = d->act.neg, .clamp = d->act.clamp};
        __m512 r[4][4];
        for (int j = 0; j < 4; j++) { /* column j, along the rows */
            const float *q = tmp + j * 16;
            at6(_mm512_load_ps(q), _mm512_load_ps(q + 64), _mm512_load_ps(q + 128),
                _mm512_load_ps(q + 192), _mm512_load_ps(q + 256), _mm512_load_ps(q + 320), &r[0][j],
                &r[1][j], &r[2][j], &r[3][j]);
        }
        for (int i = 0; i < 4; i++) {
            const int64_t oy = ty * 4 + i;
            for (int j = 0; j < 4; j++) {
                const int64_t ox = tx * 4 + j;
                __m512 v = _mm512_add_ps(r[i][j], bias);
                if (rn && oy < OH && ox < OW)
                    v = _mm512_add_ps(v, _mm512_loadu_ps(rn + (oy * OW + ox) * K + k0));
                r[i][j] = act(av, v);
                if (!d->pool && oy < OH && ox < OW) _mm512_storeu_ps(yn + (oy * OW + ox) * K + k0, r[i][j]);
            }
        }
        if (!d->pool) continue;
        for (int i = 0; i < 2; i++) {
            const int64_t py = ty * 2 + i;
            for (int j = 0; j < 2 && py < YH; j++) {
                const int64_t px = tx * 2 + j;
                if (px >= YW) break;
                /* MaxPool's order: the first element, then each later one if greater */
                __m512 v = r[2 * i][2 * j], u;
                u = r[2 * i][2 * j + 1], v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(u, v, _CMP_GT_OQ), u);
                u = r[2 * i + 1][2 * j], v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(u, v, _CMP_GT_OQ), u);
                u = r[2 * i + 1][2 * j + 1], v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(u, v, _CMP_GT_OQ), u);
                _mm512_storeu_ps(yn + (py * YW + px) * K + k0, v);
            }
        }
    }
}

void nn_cpu_wino_tiles_avx512(const nn_cpu_wino *d, const float *src, const float *res,
                              float *dst, int64_t t0, int64_t t1, float *scratch)
{
    const int64_t C = d->C, K = d->K;
    float *V = scratch, *M = scratch + 36 * TB * C;
    for (int64_t b0 = t0; b0 < t1; b0 += TB) {
        const int nt = (int)(t1 - b0 < TB ? t1 - b0 : TB);
        for (int t = 0; t < nt; t++) in_tile(d, src, b0 + t, V, t);
        for (int xi = 0; xi < 36; xi++) {
            const float *Vx = V + xi * TB * C, *Ux = d->U + xi * C * K;
            float *Mx = M + xi * TB * K;
            /* columns in blocks of 64 (6 rows at a time), 96 (4 rows) where 64 does not
             * divide what is left (gear's 96 and 160 outputs: 4 broadcasts per 24 FMAs
             * where 12 x 2 would need 12), then 48, 32 or 16; rows past nt hold
             * earlier tiles' values: computed, never stored */
            for (int64_t kb = 0; kb < K;) {
                const int64_t left = K - kb;
                if (left >= 96 && left % 64) {
                    for (int r0 = 0; r0 < nt; r0 += 4) gemm4x6(Vx + r0 * C, Ux + kb, Mx + r0 * K + kb, C, K);
                    kb += 96;
                } else if (left >= 64) {
                    for (int r0 = 0; r0 < nt; r0 += 6) gemm6x4(Vx + r0 * C, Ux + kb, Mx + r0 * K + kb, C, K);
                    kb += 64;
                } else if (left == 48) {
                    for (int r0 = 0; r0 < nt; r0 += 6) gemm6x3(Vx + r0 * C, Ux + kb, Mx + r0 * K + kb, C, K);
                    kb += 48;
                } else if (left == 32) {
                    gemm12x2(Vx, Ux + kb, Mx + kb, C, K);
                    kb += 32;
                } else {
                    gemm12x1(Vx, Ux + kb, Mx + kb, C, K);
                    kb += 16;
                }
            }
        }
        for (int t = 0; t < nt; t++) out_tile(d, M, t, b0 + t, res, dst);
    }
}

#endif
