/* Our own Winograd convolution for the cpu backend, F(2x2, 3x3), F(4x4, 3x3) and
 * F(6x6, 3x3): channels-last (NHWC) f32 with AVX-512, input and output channels
 * multiples of 16, stride 1, any pads, with bias, residual, activation and an optional
 * fused 2x2 max pool.
 *
 * Why not oneDNN's (jit_wino_4x3): it transforms the whole input into one array and
 * multiplies into another before the output transform, 33 MB of traffic for gear's
 * 196x196 layer, and runs at ~450 "direct-equivalent" GFLOP/s here. Ours works on
 * blocks of tb output tiles (m x m each; 12, or more where U outgrows L2) that stay in
 * L1/L2 from the input transform to the store: transform the (m + 2)^2 input patches of
 * the block into V[P][tb][C], multiply each of the P points' V by the prepared weights
 * U[P][C][K] into M[P][tb][K] (at most 24 accumulators in registers, each broadcast
 * shared by 1-6 weight vectors), transform back to m x m outputs and store them, pooled
 * or not. Measured on gear's three big layers (docs/NN_CPU.md "Winograd"): about 2x
 * oneDNN's kernel with its pool.
 *
 * F(2x2, 3x3) and F(4x4, 3x3) use the usual hand-written matrices (Lavin and Gray,
 * 2016; points 0, +-1 and infinity, F(4x4) also +-2); F(2x2) serves small images,
 * where U (16/9 of the weights against F(4x4)'s 4x) is read for few tiles (an 8x8
 * output: 16 tiles, or 4 of F(4x4)). F(6x6, 3x3) builds its own from the points 0,
 * +-1, +-2, +-1/2 and infinity (f63_matrices). Weights G g G^T are computed in double
 * at prepare. Only called after a runtime AVX-512F check. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"
#include "cpu_avx512.h"

#ifndef WINO_PF_HINT
#define WINO_PF_HINT _MM_HINT_T1
#endif

/* F(6, 3) from its interpolation points 0, +-1, +-2, +-1/2 and infinity (Toom-Cook):
 * A^T[i][j] = p_j^i; G[j][k] = p_j^k / prod over l != j of (p_j - p_l); B^T row j the
 * coefficients of prod over l != j of (x - p_l), the last row those of the product
 * over all points. Each pair +-a shares B^T's even columns and negates its odd ones,
 * and A^T's columns of a pair agree on even rows and differ in sign on odd rows: the
 * transforms below add and subtract the pair's halves. */
static void f63_matrices(double G[8][3], double BT[8][8], double AT[6][8])
{
    static const double p[7] = {0, 1, -1, 2, -2, 0.5, -0.5};
    memset(G, 0, sizeof(double) * 24), memset(BT, 0, sizeof(double) * 64);
    memset(AT, 0, sizeof(double) * 48);
    for (int j = 0; j < 8; j++) {
        double c[8] = {1}, f = 1;
        int deg = 0;
        for (int l = 0; l < 7; l++) {
            if (l == j) continue;
            for (int k = deg + 1; k > 0; k--) c[k] = c[k - 1] - p[l] * c[k];
            c[0] *= -p[l];
            deg++;
            if (j < 7) f *= p[j] - p[l];
        }
        for (int i = 0; i < 8; i++) BT[j][i] = c[i];
        for (int k = 0; k < 3; k++) G[j][k] = j < 7 ? pow(p[j], k) / f : k == 2;
    }
    for (int i = 0; i < 6; i++) {
        for (int j = 0; j < 7; j++) AT[i][j] = pow(p[j], i);
        AT[i][7] = i == 5;
    }
}

void nn_cpu_wino_weights(nn_cpu_wino *d, const float *g)
{
    static const double G2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
    static const double G4[6][3] = {{1 / 4., 0, 0},           {-1 / 6., -1 / 6., -1 / 6.},
                                    {-1 / 6., 1 / 6., -1 / 6.}, {1 / 24., 1 / 12., 1 / 6.},
                                    {1 / 24., -1 / 12., 1 / 6.}, {0, 0, 1}};
    double G6[8][3], BT[8][8], AT[6][8];
    const int n = d->m + 2;
    if (d->m == 6) {
        f63_matrices(G6, BT, AT);
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++) d->bt[i][j] = (float)BT[i][j];
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 8; j++) d->at[i][j] = (float)AT[i][j];
    }
    /* sixteen output channels at a time, so that U is written a line at a time (one
     * channel at a time wrote one float to each of U's n * n * C lines: 16.8 MB for a
     * 256-channel layer, out of every cache, a tenth of dlib-resnet's plan) */
    const int64_t C = d->C, K = d->K;
    float blk[64][16];
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
        const int64_t kn = K - k0 < 16 ? K - k0 : 16;
        for (int64_t c = 0; c < C; c++) {
            for (int64_t kk = 0; kk < kn; kk++) {
                const float *w = g + ((k0 + kk) * C + c) * 9; /* ONNX [K][C][3][3] */
                double t[8][3];
                for (int i = 0; i < n; i++) {
                    const double *Gi = d->m == 6 ? G6[i] : d->m == 4 ? G4[i] : G2[i];
                    for (int j = 0; j < 3; j++)
                        t[i][j] = Gi[0] * w[j] + Gi[1] * w[3 + j] + Gi[2] * w[6 + j];
                }
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < n; j++) {
                        const double *Gj = d->m == 6 ? G6[j] : d->m == 4 ? G4[j] : G2[j];
                        blk[i * n + j][kk] =
                            (float)(t[i][0] * Gj[0] + t[i][1] * Gj[1] + t[i][2] * Gj[2]);
                    }
            }
            for (int ij = 0; ij < n * n; ij++)
                memcpy(d->U + (ij * C + c) * K + k0, blk[ij], sizeof(float) * (size_t)kn);
        }
    }
}

/* B^T applied to six vectors, in place. */
INLINE void bt6(__m512 *p0, __m512 *p1, __m512 *p2, __m512 *p3, __m512 *p4, __m512 *p5)
{
    const __m512 d0 = *p0, d1 = *p1, d2 = *p2, d3 = *p3, d4 = *p4, d5 = *p5;
    const __m512 four = _mm512_set1_ps(4), m5 = _mm512_set1_ps(-5), m4 = _mm512_set1_ps(-4);
    const __m512 a = _mm512_fmadd_ps(m4, d2, d4), b = _mm512_fmadd_ps(m4, d1, d3);
    const __m512 c = _mm512_sub_ps(d4, d2), h = _mm512_sub_ps(d3, d1), e = _mm512_add_ps(h, h);
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

/* F(6, 3)'s B^T applied to eight vectors (v in, o out): row 0 from the even inputs,
 * the pairs as even part +- odd part, the last row from the odd inputs. */
INLINE void bt8(const nn_cpu_wino *d, const __m512 *v, __m512 *o)
{
#define K_(i, j) _mm512_set1_ps(d->bt[i][j])
    o[0] = _mm512_fmadd_ps(K_(0, 6), v[6], _mm512_fmadd_ps(K_(0, 4), v[4],
                          _mm512_fmadd_ps(K_(0, 2), v[2], _mm512_mul_ps(K_(0, 0), v[0]))));
    for (int j = 1; j < 7; j += 2) {
        const __m512 e = _mm512_fmadd_ps(
            K_(j, 6), v[6], _mm512_fmadd_ps(K_(j, 4), v[4], _mm512_mul_ps(K_(j, 2), v[2])));
        const __m512 q = _mm512_fmadd_ps(
            K_(j, 5), v[5], _mm512_fmadd_ps(K_(j, 3), v[3], _mm512_mul_ps(K_(j, 1), v[1])));
        o[j] = _mm512_add_ps(e, q);
        o[j + 1] = _mm512_sub_ps(e, q);
    }
    o[7] = _mm512_fmadd_ps(K_(7, 7), v[7], _mm512_fmadd_ps(K_(7, 5), v[5],
                          _mm512_fmadd_ps(K_(7, 3), v[3], _mm512_mul_ps(K_(7, 1), v[1]))));
#undef K_
}

/* F(6, 3)'s A^T applied to eight vectors: six results. */
INLINE void at8(const nn_cpu_wino *d, const __m512 *m, __m512 *o)
{
    __m512 sp[3], dp[3];
    for (int p = 0; p < 3; p++) {
        sp[p] = _mm512_add_ps(m[2 * p + 1], m[2 * p + 2]);
        dp[p] = _mm512_sub_ps(m[2 * p + 1], m[2 * p + 2]);
    }
    for (int i = 0; i < 6; i++) {
        const __m512 *h = i % 2 ? dp : sp;
        const __m512 a1 = _mm512_set1_ps(d->at[i][1]), a3 = _mm512_set1_ps(d->at[i][3]),
                     a5 = _mm512_set1_ps(d->at[i][5]);
        __m512 r = _mm512_fmadd_ps(a5, h[2], _mm512_fmadd_ps(a3, h[1], _mm512_mul_ps(a1, h[0])));
        if (i == 0) r = _mm512_add_ps(r, m[0]);
        if (i == 5) r = _mm512_add_ps(r, m[7]);
        o[i] = r;
    }
}

/* F(2, 3)'s B^T applied to four vectors (points 0, +-1 and infinity). */
INLINE void bt4(const __m512 *v, __m512 *o)
{
    o[0] = _mm512_sub_ps(v[0], v[2]);
    o[1] = _mm512_add_ps(v[1], v[2]);
    o[2] = _mm512_sub_ps(v[2], v[1]);
    o[3] = _mm512_sub_ps(v[1], v[3]);
}

/* B^T of F(m, 3) applied to m + 2 vectors (v in, o out). */
INLINE void bt_m(const nn_cpu_wino *d, __m512 *v, __m512 *o, const int m)
{
    if (m == 6) {
        bt8(d, v, o);
        return;
    }
    if (m == 2) {
        bt4(v, o);
        return;
    }
    bt6(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    for (int i = 0; i < 6; i++) o[i] = v[i];
}

/* The input transform of tile `tile` (image n, tile row ty, column tx) into row t of
 * V[(m + 2)^2][tb][C]; pixels outside the image (pads, the last partial tiles) are
 * zeros. */
INLINE void in_patch(const nn_cpu_wino *d, const float *x, int64_t tile, float *V, int t,
                     const int m)
{
    const int np = m + 2;
    const int64_t C = d->C, IH = d->IH, IW = d->IW, per = d->TY * d->TX;
    const int64_t n = tile / per, ty = tile % per / d->TX, tx = tile % d->TX;
    const int64_t y0 = ty * m - d->PT, x0 = tx * m - d->PL;
    const int full = y0 >= 0 && x0 >= 0 && y0 + np <= IH && x0 + np <= IW;
    const float *xn = x + n * IH * IW * C;
    const int64_t vs = (int64_t)d->tb * C;
    float *vt = V + t * C;
    float tmp[64 * 16] __attribute__((aligned(64)));
    for (int64_t c0 = 0; c0 < C; c0 += 16) {
        for (int i = 0; i < np; i++) { /* row i of the patch, along its columns */
            const int64_t yy = y0 + i;
            __m512 v[8], o[8];
            for (int j = 0; j < np; j++) {
                const int64_t xx = x0 + j;
                v[j] = full || (yy >= 0 && yy < IH && xx >= 0 && xx < IW)
                           ? _mm512_loadu_ps(xn + (yy * IW + xx) * C + c0)
                           : _mm512_setzero_ps();
            }
            bt_m(d, v, o, m);
            for (int j = 0; j < np; j++) _mm512_store_ps(tmp + (i * np + j) * 16, o[j]);
        }
        for (int j = 0; j < np; j++) { /* column j, along the rows */
            __m512 v[8], o[8];
            for (int i = 0; i < np; i++) v[i] = _mm512_load_ps(tmp + (i * np + j) * 16);
            bt_m(d, v, o, m);
            for (int i = 0; i < np; i++) _mm512_storeu_ps(vt + c0 + (i * np + j) * vs, o[i]);
        }
    }
}

static void in_tile2(const nn_cpu_wino *d, const float *x, int64_t tile, float *V, int t)
{
    in_patch(d, x, tile, V, t, 2);
}

static void in_tile4(const nn_cpu_wino *d, const float *x, int64_t tile, float *V, int t)
{
    in_patch(d, x, tile, V, t, 4);
}

static void in_tile6(const nn_cpu_wino *d, const float *x, int64_t tile, float *V, int t)
{
    in_patch(d, x, tile, V, t, 6);
}

/* The multiply micro-kernels: M[r][kb..] = sum over c of V[r][c] * U[c][kb..] for a
 * block of rows (R4, R6, R12) by 16-wide vectors (V1..V6), all accumulators in
 * registers, one broadcast of V per row shared by the row's vectors. X(i, j) below is
 * row i, vector j. Row by row: each row's broadcast is used and dropped before the
 * next, so 24 accumulators, the row of U and one broadcast fit the 32 registers; with
 * every row's broadcast loaded first (34 live vectors in the 6 x 4 kernel) GCC spilled
 * two accumulators to the stack inside the loop (seen in `perf annotate`). */
#define ACC(i, j) __m512 a##i##j = _mm512_setzero_ps();
#define LD(i, j) const __m512 u##j = _mm512_loadu_ps(u + 16 * j);
#define FMA(i, j) a##i##j = _mm512_fmadd_ps(v, u##j, a##i##j);
#define ROW(i, VECS)                                     \
    {                                                    \
        __m512 v = _mm512_set1_ps(V[i * C + c]);         \
        PIN(v);                                          \
        VECS(FMA, i)                                     \
    }
#define STO(i, j) _mm512_storeu_ps(M + i * K + 16 * j, a##i##j);
#define R1(X, j) X(0, j)
#define R2(X, j) X(0, j) X(1, j)
#define R3(X, j) R2(X, j) X(2, j)
#define R4(X, j) R3(X, j) X(3, j)
#define R6(X, j) R4(X, j) X(4, j) X(5, j)
#define R12(X, j) R6(X, j) X(6, j) X(7, j) X(8, j) X(9, j) X(10, j) X(11, j)
#define V1(R, X) R(X, 0)
#define V2(R, X) V1(R, X) R(X, 1)
#define V3(R, X) V2(R, X) R(X, 2)
#define V4(R, X) V3(R, X) R(X, 3)
#define V6(R, X) V4(R, X) R(X, 4) R(X, 5)
/* pf, where not NULL, is the next point's U: each row of it is asked into L2 as this
 * point's row is loaded (one point's U is 16 KB and more, pages at whose ends the
 * hardware prefetcher stops: without this the loads of U were 60% of dlib-resnet's 6 x 4
 * kernel in `perf annotate`). */
#define PF(i, j) _mm_prefetch((const char *)(pf + c * K + 16 * j), WINO_PF_HINT);
#define GEMM_KERNEL(name, ROWS, VECS)                                                      \
    static void name(const float *V, const float *U, float *M, int64_t C, int64_t K,       \
                     const float *pf)                                                      \
    {                                                                                      \
        VECS(ROWS, ACC)                                                                    \
        for (int64_t c = 0; c < C; c++) {                                                  \
            const float *u = U + c * K;                                                    \
            VECS(R1, LD)                                                                   \
            if (pf) VECS(R1, PF)                                                           \
            ROWS(ROW, VECS)                                                                \
        }                                                                                  \
        VECS(ROWS, STO)                                                                    \
    }
typedef void (*gemm_fn)(const float *V, const float *U, float *M, int64_t C, int64_t K,
                        const float *pf);
GEMM_KERNEL(gemm6x4, R6, V4)   /* 64 outputs at a time */
GEMM_KERNEL(gemm4x6, R4, V6)   /* 96 */
GEMM_KERNEL(gemm6x3, R6, V3)   /* 48 */
GEMM_KERNEL(gemm12x2, R12, V2) /* 32 */
GEMM_KERNEL(gemm12x1, R12, V1) /* 16 */
/* the same with half the rows, for a last row block that needs no more */
GEMM_KERNEL(gemm3x4, R3, V4)
GEMM_KERNEL(gemm2x6, R2, V6)
GEMM_KERNEL(gemm3x3, R3, V3)
GEMM_KERNEL(gemm6x2, R6, V2)
GEMM_KERNEL(gemm6x1, R6, V1)
GEMM_KERNEL(gemm4x4, R4, V4) /* a last row block of four for 64 outputs */

/* Where a tile's outputs go: image n's output (or pooled output) and residual, at
 * channel k0, with the slice's bias and activation. */
typedef struct tile_out {
    float *y;
    const float *res;
    int64_t K, OH, OW, YW;
    __m512 bias;
    actv av;
} tile_out;

INLINE tile_out tile_out_of(const nn_cpu_wino *d, int64_t n, int64_t k0, const float *res,
                            float *y)
{
    const int64_t K = d->K, OH = d->OH, OW = d->OW;
    const int64_t YH = d->pool ? OH / 2 : OH, YW = d->pool ? OW / 2 : OW;
    tile_out o = {.y = y + n * YH * YW * K + k0,
                  .res = res ? res + n * OH * OW * K + k0 : NULL,
                  .K = K, .OH = OH, .OW = OW, .YW = YW,
                  .bias = _mm512_load_ps(d->b + k0),
                  .av = act_init(&d->act, d->ns + k0)};
    return o;
}

/* Output (oy, ox) from its transformed value: bias, residual, activation. */
INLINE __m512 epilogue(const tile_out *o, __m512 v, int64_t oy, int64_t ox)
{
    v = _mm512_add_ps(v, o->bias);
    if (o->res && oy < o->OH && ox < o->OW)
        v = _mm512_add_ps(v, _mm512_loadu_ps(o->res + (oy * o->OW + ox) * o->K));
    return act(o->av, v);
}

INLINE void store_out(const tile_out *o, __m512 v, int64_t oy, int64_t ox)
{
    if (oy < o->OH && ox < o->OW) _mm512_storeu_ps(o->y + (oy * o->OW + ox) * o->K, v);
}

/* The 2x2 max pool of a (row 2i, column 2j), b (2i, 2j + 1), c (2i + 1, 2j), e (2i + 1,
 * 2j + 1) stored at pooled (py, px) when inside, in MaxPool's order. */
INLINE void store_pool(const tile_out *o, __m512 a, __m512 b, __m512 c, __m512 e, int64_t py,
                       int64_t px)
{
    if (py >= o->OH / 2 || px >= o->YW) return;
    _mm512_storeu_ps(o->y + (py * o->YW + px) * o->K, pool_max(pool_max(pool_max(a, b), c), e));
}

/* Columns j and j + 1 (a and b, m rows each) of tile (ty, tx): the epilogue, then the
 * stores, or the pooled stores of their row pairs. */
INLINE void emit_columns(const nn_cpu_wino *d, const tile_out *o, __m512 *a, __m512 *b, const int m,
                         int64_t ty, int64_t tx, int j)
{
    const int64_t ox = tx * m + j;
    for (int i = 0; i < m; i++) {
        const int64_t oy = ty * m + i;
        a[i] = epilogue(o, a[i], oy, ox);
        b[i] = epilogue(o, b[i], oy, ox + 1);
        if (!d->pool) store_out(o, a[i], oy, ox), store_out(o, b[i], oy, ox + 1);
    }
    if (d->pool)
        for (int i = 0; i < m; i += 2)
            store_pool(o, a[i], b[i], a[i + 1], b[i + 1], (ty * m + i) / 2, ox / 2);
}

/* A^T of F(m, 3) applied to m + 2 vectors: m results. */
INLINE void at_m(const nn_cpu_wino *d, const __m512 *v, __m512 *o, const int m)
{
    if (m == 6) at8(d, v, o);
    else if (m == 2) { /* F(2, 3): two results */
        o[0] = _mm512_add_ps(_mm512_add_ps(v[0], v[1]), v[2]);
        o[1] = _mm512_sub_ps(_mm512_sub_ps(v[1], v[2]), v[3]);
    } else
        at6(v[0], v[1], v[2], v[3], v[4], v[5], &o[0], &o[1], &o[2], &o[3]);
}

/* The output transform of row t of M[(m + 2)^2][tb][K] (tile `tile`), bias, residual,
 * activation, the optional pool, and the stores of what lies inside the output. */
INLINE void out_patch(const nn_cpu_wino *d, const float *M, int t, int64_t tile,
                      const float *res, float *y, const int m)
{
    const int np = m + 2;
    const int64_t K = d->K, per = d->TY * d->TX;
    const int64_t n = tile / per, ty = tile % per / d->TX, tx = tile % d->TX;
    const int64_t ms = (int64_t)d->tb * K;
    const float *mt = M + t * K;
    float tmp[48 * 16] __attribute__((aligned(64)));
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
        for (int i = 0; i < np; i++) { /* row i of the product, along its columns */
            __m512 v[8], o[6];
            for (int j = 0; j < np; j++) v[j] = _mm512_loadu_ps(mt + k0 + (i * np + j) * ms);
            at_m(d, v, o, m);
            for (int j = 0; j < m; j++) _mm512_store_ps(tmp + (i * m + j) * 16, o[j]);
        }
        const tile_out o = tile_out_of(d, n, k0, res, y);
        for (int j = 0; j < m; j += 2) { /* columns j and j + 1, along the rows */
            __m512 v[8], a[6], b[6];
            for (int i = 0; i < np; i++) v[i] = _mm512_load_ps(tmp + (i * m + j) * 16);
            at_m(d, v, a, m);
            for (int i = 0; i < np; i++) v[i] = _mm512_load_ps(tmp + (i * m + j + 1) * 16);
            at_m(d, v, b, m);
            emit_columns(d, &o, a, b, m, ty, tx, j);
        }
    }
}

static void out_tile2(const nn_cpu_wino *d, const float *M, int t, int64_t tile, const float *res,
                      float *y)
{
    out_patch(d, M, t, tile, res, y, 2);
}

static void out_tile4(const nn_cpu_wino *d, const float *M, int t, int64_t tile, const float *res,
                      float *y)
{
    out_patch(d, M, t, tile, res, y, 4);
}

static void out_tile6(const nn_cpu_wino *d, const float *M, int t, int64_t tile, const float *res,
                      float *y)
{
    out_patch(d, M, t, tile, res, y, 6);
}

void nn_cpu_wino_tiles_avx512(const nn_cpu_wino *d, const float *src, const float *res,
                              float *dst, int64_t t0, int64_t t1, float *scratch)
{
    const int64_t C = d->C, K = d->K, P = NN_CPU_WINO_POINTS(d);
    const int TB = d->tb;
    float *V = scratch, *M = scratch + P * TB * C;
    /* the transforms of the tile size (each an instance with m a constant) */
    void (*in_tile)(const nn_cpu_wino *, const float *, int64_t, float *, int) =
        d->m == 6   ? in_tile6
        : d->m == 4 ? in_tile4
                    : in_tile2;
    void (*out_tile)(const nn_cpu_wino *, const float *, int, int64_t, const float *, float *) =
        d->m == 6   ? out_tile6
        : d->m == 4 ? out_tile4
                    : out_tile2;
    for (int64_t b0 = t0; b0 < t1; b0 += TB) {
        const int nt = (int)(t1 - b0 < TB ? t1 - b0 : TB);
        for (int t = 0; t < nt; t++)
            in_tile(d, src, b0 + t, V, t);
        for (int xi = 0; xi < P; xi++) {
            const float *Vx = V + xi * TB * C, *Ux = d->U + xi * C * K;
            float *Mx = M + xi * TB * K;
            /* columns in blocks of 64 (6 rows at a time), 96 (4 rows) where 64 does not
             * divide what is left (gear's 96 and 160 outputs: 4 broadcasts per 24 FMAs
             * where 12 x 2 would need 12), then 48, 32 or 16; a last row block takes the
             * smallest kernel of the width that covers it (half the rows, or four of six
             * at 64: F(2x2)'s 16 tiles are 12 + 4); rows past nt it still covers hold
             * earlier tiles' values: computed, never stored */
            for (int64_t kb = 0; kb < K;) {
                const int64_t left = K - kb;
                gemm_fn fn = gemm12x1, half = gemm6x1, four = NULL;
                int rows = 12, width = 16;
                if (left >= 96 && left % 64) fn = gemm4x6, half = gemm2x6, rows = 4, width = 96;
                else if (left >= 64)
                    fn = gemm6x4, four = gemm4x4, half = gemm3x4, rows = 6, width = 64;
                else if (left == 48) fn = gemm6x3, half = gemm3x3, rows = 6, width = 48;
                else if (left == 32) fn = gemm12x2, half = gemm6x2, width = 32;
                for (int r0 = 0; r0 < nt; r0 += rows) {
                    /* the first block asks for the next point's U */
                    const float *pf = r0 == 0 && xi + 1 < P ? Ux + C * K + kb : NULL;
                    const int n = nt - r0;
                    gemm_fn g = n <= rows / 2 ? half : four && n <= 4 ? four : fn;
                    g(Vx + r0 * C, Ux + kb, Mx + r0 * K + kb, C, K, pf);
                }
                kb += width;
            }
        }
        for (int t = 0; t < nt; t++)
            out_tile(d, M, t, b0 + t, res, dst);
    }
}

#endif
