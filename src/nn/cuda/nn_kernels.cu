/* The cuda backend's own kernels: everything cuDNN and cuBLAS do not do for us
 * (elementwise ops with broadcasting, fused epilogues, pooling, normalisation, data
 * movement, resize, softmax, conversions). Per-element arithmetic comes from
 * nn_cuda_hd.h, which the CPU tests check against the ref kernels; what is left here is
 * indexing and launch geometry, which only the GPU tests (test_ops, test_nn_cuda) see.
 *
 * Every kernel walks its elements with a grid-stride loop over 64-bit indices, so any
 * tensor size launches with a bounded grid; launchers return the launch's cudaError_t. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda_internal.h"
#include "nn_cuda_hd.h"

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n)
{
    int64_t b = (n + kThreads - 1) / kThreads;
    if (b < 1) b = 1;
    return (int)(b > 65535 * 8 ? 65535 * 8 : b);
}

int launched() { return (int)cudaGetLastError(); }

#define GRID_LOOP(i, n)                                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                  \
         i += (int64_t)blockDim.x * gridDim.x)

struct dims_t {
    int rank;
    int64_t d[NN_CU_MAX_RANK];
};

struct strides_t {
    int64_t s[NN_CU_MAX_RANK];
};

__device__ float act_at(const nn_cu_act &a, int64_t i, float v)
{
    if (a.kind == NN_CU_ACT_NONE) return v;
    float slope = 0;
    if (a.kind == NN_CU_ACT_PRELU && a.slope) {
        int64_t c = a.channels > 0 && a.inner > 0 ? (i / a.inner) % a.channels : 0;
        slope = a.slope[a.slope_n == a.channels ? c : 0];
    }
    return nn_hd_act(a.kind, v, a.alpha, a.beta, slope);
}

__global__ void k_unary(int op, const float *x, float *y, int64_t n, float a, float b, float g)
{
    GRID_LOOP(i, n) y[i] = nn_hd_unary(op, x[i], a, b, g);
}

__global__ void k_binary(int op, const float *a, const float *b, float *y, dims_t d, strides_t sa,
                         strides_t sb, int64_t n, nn_cu_act act)
{
    GRID_LOOP(i, n)
    {
        float x = a[nn_hd_offset(i, d.d, sa.s, d.rank)];
        float z = b[nn_hd_offset(i, d.d, sb.s, d.rank)];
        y[i] = act_at(act, i, nn_hd_binary(op, x, z));
    }
}

__global__ void k_affine(const float *x, float *y, const float *scale, int64_t scale_step,
                         const float *bias, const float *res, int64_t n, int64_t channels,
                         int64_t inner, nn_cu_act act)
{
    GRID_LOOP(i, n)
    {
        int64_t c = (i / inner) % channels;
        float v = x[i];
        /* explicit roundings: nvcc would contract v * s + b into one fma */
        if (scale) v = __fmul_rn(v, scale[c * scale_step]);
        if (bias) v = __fadd_rn(v, bias[c]);
        if (res) v = __fadd_rn(v, res[i]);
        y[i] = act_at(act, i, v);
    }
}

/* pool.c's loops for one output element */
__global__ void k_pool(int is_max, int include_pad, const float *X, float *Y, int64_t planes,
                       nn_cu_window w)
{
    int64_t oplane = w.out[0] * w.out[1] * w.out[2], iplane = w.in[0] * w.in[1] * w.in[2];
    GRID_LOOP(i, planes * oplane)
    {
        int64_t p = i / oplane, r = i - p * oplane;
        int64_t ow = r % w.out[2], oh = (r / w.out[2]) % w.out[1], od = r / (w.out[2] * w.out[1]);
        const float *x = X + p * iplane;
        int64_t sd = od * w.stride[0] - w.pad0[0], sh = oh * w.stride[1] - w.pad0[1],
                sw = ow * w.stride[2] - w.pad0[2];
        int64_t d0, d1, h0, h1, x0, x1;
        nn_hd_taps(sd, w.dil[0], w.k[0], 0, w.in[0], &d0, &d1);
        nn_hd_taps(sh, w.dil[1], w.k[1], 0, w.in[1], &h0, &h1);
        nn_hd_taps(sw, w.dil[2], w.k[2], 0, w.in[2], &x0, &x1);
        if (is_max) {
            float m = -INFINITY;
            for (int64_t kd = d0; kd < d1; kd++)
                for (int64_t kh = h0; kh < h1; kh++) {
                    const float *row =
                        x + ((sd + kd * w.dil[0]) * w.in[1] + sh + kh * w.dil[1]) * w.in[2] + sw;
                    for (int64_t kw = x0; kw < x1; kw++) {
                        float v = row[kw * w.dil[2]];
                        if (v > m || v != v) m = v;
                    }
                }
            Y[i] = m;
        } else {
            double sum = 0;
            for (int64_t kd = d0; kd < d1; kd++)
                for (int64_t kh = h0; kh < h1; kh++) {
                    const float *row =
                        x + ((sd + kd * w.dil[0]) * w.in[1] + sh + kh * w.dil[1]) * w.in[2] + sw;
                    for (int64_t kw = x0; kw < x1; kw++) sum += row[kw * w.dil[2]];
                }
            int64_t cnt;
            if (include_pad) {
                int64_t pd0, pd1, ph0, ph1, px0, px1;
                nn_hd_taps(sd, w.dil[0], w.k[0], -w.pad0[0], w.in[0] + w.pad1[0], &pd0, &pd1);
                nn_hd_taps(sh, w.dil[1], w.k[1], -w.pad0[1], w.in[1] + w.pad1[1], &ph0, &ph1);
                nn_hd_taps(sw, w.dil[2], w.k[2], -w.pad0[2], w.in[2] + w.pad1[2], &px0, &px1);
                cnt = (pd1 - pd0) * (ph1 - ph0) * (px1 - px0);
            } else {
                cnt = (d1 - d0) * (h1 - h0) * (x1 - x0);
            }
            Y[i] = cnt > 0 ? (float)(sum / (double)cnt) : 0.0f;
        }
    }
}

/* one block per plane; a shared-memory tree reduction */
__global__ void k_global_pool(int is_max, const float *x, float *y, int64_t len)
{
    __shared__ double acc[kThreads];
    const float *p = x + (int64_t)blockIdx.x * len;
    double v = is_max ? -INFINITY : 0.0;
    int nan = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
        float e = p[i];
        if (is_max) {
            nan |= e != e;
            v = (double)e > v ? (double)e : v;
        } else {
            v += e;
        }
    }
    if (nan) v = NAN;
    acc[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            double a = acc[threadIdx.x], b = acc[threadIdx.x + s];
            acc[threadIdx.x] = is_max ? (a != a || a > b ? a : b) : a + b;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = is_max ? (float)acc[0] : (float)(acc[0] / (double)len);
}

__device__ double block_sum(double v, double *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

/* norm.c's InstanceNormalization: mean and variance in double, one block per plane */
__global__ void k_instance_norm(const float *X, float *Y, const float *scale, const float *bias,
                                int64_t channels, int64_t len, float eps)
{
    __shared__ double sh[kThreads];
    int64_t p = blockIdx.x, c = p % channels;
    const float *x = X + p * len;
    float *y = Y + p * len;
    double s = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) s += x[i];
    double mean = len ? block_sum(s, sh) / (double)len : 0;
    double q = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) q += (x[i] - mean) * (x[i] - mean);
    double var = len ? block_sum(q, sh) / (double)len : 0;
    double a = scale[c] / sqrt(var + (double)eps);
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
        y[i] = (float)((x[i] - mean) * a + bias[c]);
}

template <typename T>
__global__ void k_strided(const T *x, T *y, dims_t d, strides_t st, int64_t base, int64_t n)
{
    GRID_LOOP(i, n) y[i] = x[base + nn_hd_offset(i, d.d, st.s, d.rank)];
}

template <typename T>
__global__ void k_pad(const T *x, T *y, dims_t in, dims_t out, strides_t p0, int mode, T fill,
                      int64_t n)
{
    GRID_LOOP(i, n)
    {
        int64_t flat = i, off = 0, stride = 1;
        int outside = 0;
        for (int k = out.rank - 1; k >= 0; k--) {
            int64_t q = flat / out.d[k], o = flat - q * out.d[k];
            flat = q;
            int64_t s = nn_hd_pad_src(o, p0.s[k], in.d[k], mode);
            outside |= s < 0;
            off += s * stride;
            stride *= in.d[k];
        }
        y[i] = outside ? fill : x[off];
    }
}

struct resize_t {
    int rank, linear;
    int64_t in[NN_CU_MAX_RANK], out[NN_CU_MAX_RANK], xs[NN_CU_MAX_RANK], tab0[NN_CU_MAX_RANK];
    int ntap[NN_CU_MAX_RANK];
};

/* resize.c's resize_run for one output element; R (f32 only, or NULL) a fused Add's
 * operand, which may be Y itself: each element is read before it is written */
template <typename T>
__global__ void k_resize(const T *X, T *Y, resize_t r, const nn_cu_tap *tab, T fill, int64_t n,
                         const T *R)
{
    GRID_LOOP(o, n)
    {
        int64_t idx[NN_CU_MAX_RANK], flat = o;
        int outside = 0;
        for (int d = r.rank - 1; d >= 0; d--) {
            int64_t q = flat / r.out[d];
            idx[d] = flat - q * r.out[d];
            flat = q;
            outside |= tab[r.tab0[d] + idx[d]].idx[0] == -1;
        }
        if (outside) {
            Y[o] = R ? (T)(fill + R[o]) : fill;
            continue;
        }
        if (!r.linear) {
            int64_t off = 0;
            for (int d = 0; d < r.rank; d++) off += tab[r.tab0[d] + idx[d]].idx[0] * r.xs[d];
            Y[o] = R ? (T)(X[off] + R[o]) : X[off];
            continue;
        }
        int c[NN_CU_MAX_RANK] = {0};
        double acc = 0;
        for (;;) {
            double w = 1;
            int64_t off = 0;
            for (int d = 0; d < r.rank; d++) {
                const nn_cu_tap *t = &tab[r.tab0[d] + idx[d]];
                w *= t->w[c[d]];
                off += t->idx[c[d]] * r.xs[d];
            }
            if (w != 0) acc += w * (double)X[off];
            int d = r.rank - 1;
            for (; d >= 0; d--) {
                if (++c[d] < r.ntap[d]) break;
                c[d] = 0;
            }
            if (d < 0) break;
        }
        Y[o] = R ? (T)((T)acc + R[o]) : (T)acc;
    }
}

/* norm.c's softmax_common for one (outer, inner) row */
__global__ void k_softmax(int log_form, const float *X, float *Y, int64_t outer, int64_t len,
                          int64_t inner)
{
    GRID_LOOP(r, outer * inner)
    {
        int64_t o = r / inner, i = r - o * inner;
        const float *x = X + o * len * inner + i;
        float *y = Y + o * len * inner + i;
        float mx = -INFINITY;
        for (int64_t k = 0; k < len; k++) mx = x[k * inner] > mx ? x[k * inner] : mx;
        double sum = 0;
        for (int64_t k = 0; k < len; k++) sum += exp((double)x[k * inner] - mx);
        if (log_form) {
            double ls = log(sum);
            for (int64_t k = 0; k < len; k++) y[k * inner] = (float)((double)x[k * inner] - mx - ls);
        } else {
            for (int64_t k = 0; k < len; k++)
                y[k * inner] = (float)(exp((double)x[k * inner] - mx) / sum);
        }
    }
}

template <typename T>
__global__ void k_gather(const T *x, T *y, int64_t axis_len, int64_t inner, const int64_t *idx,
                         int64_t nidx, int64_t n)
{
    GRID_LOOP(i, n)
    {
        int64_t in_ = i % inner, r = i / inner, k = r % nidx, o = r / nidx;
        y[i] = x[(o * axis_len + idx[k]) * inner + in_];
    }
}

__global__ void k_f32_to_f16(const float *x, __half *y, int64_t n)
{
    GRID_LOOP(i, n) y[i] = __float2half_rn(x[i]);
}

__global__ void k_f16_to_f32(const __half *x, float *y, int64_t n)
{
    GRID_LOOP(i, n) y[i] = __half2float(x[i]);
}

__global__ void k_fill_random(float *y, int64_t n, uint32_t seed)
{
    GRID_LOOP(i, n)
    {
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull + seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        y[i] = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
    }
}

dims_t make_dims(int rank, const int64_t *d)
{
    dims_t r;
    r.rank = rank;
    for (int i = 0; i < NN_CU_MAX_RANK; i++) r.d[i] = i < rank ? d[i] : 1;
    return r;
}

strides_t make_strides(int rank, const int64_t *s)
{
    strides_t r;
    for (int i = 0; i < NN_CU_MAX_RANK; i++) r.s[i] = i < rank && s ? s[i] : 0;
    return r;
}

int64_t numel(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

nn_cu_act no_act()
{
    nn_cu_act a = {};
    a.kind = NN_CU_ACT_NONE;
    return a;
}

} // namespace

extern "C" {

int nn_cu_unary(void *stream, int op, const float *x, float *y, int64_t n, float a, float b,
                float g)
{
    if (n <= 0) return 0;
    k_unary<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, x, y, n, a, b, g);
    return launched();
}

int nn_cu_binary(void *stream, int op, const float *a, const float *b, float *y, int rank,
                 const int64_t *d, const int64_t *sa, const int64_t *sb, const nn_cu_act *act)
{
    int64_t n = numel(rank, d);
    if (n <= 0) return 0;
    k_binary<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        op, a, b, y, make_dims(rank, d), make_strides(rank, sa), make_strides(rank, sb), n,
        act ? *act : no_act());
    return launched();
}

int nn_cu_channel_affine(void *stream, const float *x, float *y, const float *scale,
                         int64_t scale_step, const float *bias, const float *res, int64_t outer,
                         int64_t channels, int64_t inner, const nn_cu_act *act)
{
    int64_t n = outer * channels * inner;
    if (n <= 0) return 0;
    k_affine<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        x, y, scale, scale_step, bias, res, n, channels > 0 ? channels : 1, inner > 0 ? inner : 1,
        act ? *act : no_act());
    return launched();
}

int nn_cu_pool(void *stream, int max, int include_pad, const float *x, float *y, int64_t planes,
               const nn_cu_window *w)
{
    int64_t n = planes * w->out[0] * w->out[1] * w->out[2];
    if (n <= 0) return 0;
    k_pool<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(max, include_pad, x, y, planes,
                                                                 *w);
    return launched();
}

int nn_cu_global_pool(void *stream, int max, const float *x, float *y, int64_t planes,
                      int64_t len)
{
    if (planes <= 0) return 0;
    if (planes > 0x7fffffff) return (int)cudaErrorInvalidValue;
    k_global_pool<<<(unsigned)planes, kThreads, 0, (cudaStream_t)stream>>>(max, x, y, len);
    return launched();
}

int nn_cu_instance_norm(void *stream, const float *x, float *y, const float *scale,
                        const float *bias, int64_t planes, int64_t channels, int64_t len,
                        float eps)
{
    if (planes <= 0) return 0;
    if (planes > 0x7fffffff) return (int)cudaErrorInvalidValue;
    k_instance_norm<<<(unsigned)planes, kThreads, 0, (cudaStream_t)stream>>>(x, y, scale, bias,
                                                                             channels, len, eps);
    return launched();
}

int nn_cu_strided(void *stream, size_t esize, const void *x, void *y, int rank, const int64_t *d,
                  const int64_t *st, int64_t base)
{
    int64_t n = numel(rank, d);
    if (n <= 0) return 0;
    dims_t dd = make_dims(rank, d);
    strides_t ss = make_strides(rank, st);
    cudaStream_t s = (cudaStream_t)stream;
    switch (esize) {
    case 1: k_strided<<<blocks_for(n), kThreads, 0, s>>>((const uint8_t *)x, (uint8_t *)y, dd, ss, base, n); break;
    case 2: k_strided<<<blocks_for(n), kThreads, 0, s>>>((const uint16_t *)x, (uint16_t *)y, dd, ss, base, n); break;
    case 4: k_strided<<<blocks_for(n), kThreads, 0, s>>>((const uint32_t *)x, (uint32_t *)y, dd, ss, base, n); break;
    case 8: k_strided<<<blocks_for(n), kThreads, 0, s>>>((const uint64_t *)x, (uint64_t *)y, dd, ss, base, n); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launched();
}

int nn_cu_pad(void *stream, size_t esize, const void *x, void *y, int rank, const int64_t *in,
              const int64_t *out, const int64_t *p0, int mode, const void *fill)
{
    int64_t n = numel(rank, out);
    if (n <= 0) return 0;
    dims_t di = make_dims(rank, in), dout = make_dims(rank, out);
    strides_t pp = make_strides(rank, p0);
    cudaStream_t s = (cudaStream_t)stream;
    switch (esize) {
    case 1: k_pad<<<blocks_for(n), kThreads, 0, s>>>((const uint8_t *)x, (uint8_t *)y, di, dout, pp, mode, *(const uint8_t *)fill, n); break;
    case 2: k_pad<<<blocks_for(n), kThreads, 0, s>>>((const uint16_t *)x, (uint16_t *)y, di, dout, pp, mode, *(const uint16_t *)fill, n); break;
    case 4: k_pad<<<blocks_for(n), kThreads, 0, s>>>((const uint32_t *)x, (uint32_t *)y, di, dout, pp, mode, *(const uint32_t *)fill, n); break;
    case 8: k_pad<<<blocks_for(n), kThreads, 0, s>>>((const uint64_t *)x, (uint64_t *)y, di, dout, pp, mode, *(const uint64_t *)fill, n); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launched();
}

int nn_cu_resize(void *stream, size_t esize, int linear, const void *x, void *y, int rank,
                 const int64_t *in, const int64_t *out, const int *ntap, const nn_cu_tap *taps,
                 const void *fill, const float *addend)
{
    int64_t n = numel(rank, out);
    if (n <= 0) return 0;
    resize_t r = {};
    r.rank = rank;
    r.linear = linear;
    int64_t s = 1, t0 = 0;
    for (int d = rank - 1; d >= 0; d--) {
        r.xs[d] = s;
        s *= in[d];
    }
    for (int d = 0; d < rank; d++) {
        r.in[d] = in[d];
        r.out[d] = out[d];
        r.ntap[d] = ntap[d];
        r.tab0[d] = t0;
        t0 += out[d];
    }
    cudaStream_t st = (cudaStream_t)stream;
    if (linear || addend) {
        if (esize != 4) return (int)cudaErrorInvalidValue;
        k_resize<<<blocks_for(n), kThreads, 0, st>>>((const float *)x, (float *)y, r, taps,
                                                     *(const float *)fill, n, addend);
        return launched();
    }
    switch (esize) {
    case 1: k_resize<<<blocks_for(n), kThreads, 0, st>>>((const uint8_t *)x, (uint8_t *)y, r, taps, *(const uint8_t *)fill, n, (const uint8_t *)nullptr); break;
    case 2: k_resize<<<blocks_for(n), kThreads, 0, st>>>((const uint16_t *)x, (uint16_t *)y, r, taps, *(const uint16_t *)fill, n, (const uint16_t *)nullptr); break;
    case 4: k_resize<<<blocks_for(n), kThreads, 0, st>>>((const uint32_t *)x, (uint32_t *)y, r, taps, *(const uint32_t *)fill, n, (const uint32_t *)nullptr); break;
    case 8: k_resize<<<blocks_for(n), kThreads, 0, st>>>((const uint64_t *)x, (uint64_t *)y, r, taps, *(const uint64_t *)fill, n, (const uint64_t *)nullptr); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launched();
}

int nn_cu_softmax(void *stream, int log_form, const float *x, float *y, int64_t outer,
                  int64_t len, int64_t inner)
{
    int64_t n = outer * inner;
    if (n <= 0) return 0;
    k_softmax<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(log_form, x, y, outer, len,
                                                                     inner);
    return launched();
}

int nn_cu_gather(void *stream, size_t esize, const void *x, void *y, int64_t outer,
                 int64_t axis_len, int64_t inner, const int64_t *idx, int64_t nidx)
{
    int64_t n = outer * nidx * inner;
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (esize) {
    case 1: k_gather<<<blocks_for(n), kThreads, 0, s>>>((const uint8_t *)x, (uint8_t *)y, axis_len, inner, idx, nidx, n); break;
    case 2: k_gather<<<blocks_for(n), kThreads, 0, s>>>((const uint16_t *)x, (uint16_t *)y, axis_len, inner, idx, nidx, n); break;
    case 4: k_gather<<<blocks_for(n), kThreads, 0, s>>>((const uint32_t *)x, (uint32_t *)y, axis_len, inner, idx, nidx, n); break;
    case 8: k_gather<<<blocks_for(n), kThreads, 0, s>>>((const uint64_t *)x, (uint64_t *)y, axis_len, inner, idx, nidx, n); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launched();
}

int nn_cu_f32_to_f16(void *stream, const float *x, uint16_t *y, int64_t n)
{
    if (n <= 0) return 0;
    k_f32_to_f16<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(x, (__half *)y, n);
    return launched();
}

int nn_cu_f16_to_f32(void *stream, const uint16_t *x, float *y, int64_t n)
{
    if (n <= 0) return 0;
    k_f16_to_f32<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>((const __half *)x, y, n);
    return launched();
}

int nn_cu_fill_random(void *stream, float *y, int64_t n, uint32_t seed)
{
    if (n <= 0) return 0;
    k_fill_random<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(y, n, seed);
    return launched();
}

} // extern "C"
