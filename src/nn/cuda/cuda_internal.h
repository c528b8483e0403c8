/* Private to the cuda backend (src/nn/cuda/): the kernels of nn_kernels.cu as plain C
 * calls, shared by the backend (C) and the kernels (CUDA C++). Every launcher queues
 * its kernel on `stream` (a cudaStream_t), returns 0 or the cudaError_t of the launch,
 * and never synchronises. Pointers are device pointers. */
#ifndef FFU_NN_CUDA_INTERNAL_H
#define FFU_NN_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NN_CU_MAX_RANK 8

/* A fused activation: y = act(x) with PReLU slopes per channel, channel of element i
 * being (i / inner) % channels. */
typedef struct nn_cu_act {
    int kind; /* NN_CU_ACT_* (nn_cuda_hd.h) */
    float alpha, beta;
    const float *slope; /* device, slope_n floats (1 or channels) */
    int64_t slope_n, channels, inner;
} nn_cu_act;

/* Sliding-window geometry, as nn_window (ops_internal.h): 3 right-aligned slots. */
typedef struct nn_cu_window {
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad0[3], pad1[3];
} nn_cu_window;

/* y[i] = unary(op, x[i]) then act (act may be NULL); x may equal y. */
int nn_cu_unary(void *stream, int op, const float *x, float *y, int64_t n, float a, float b,
                float g);
/* y = act(binary(op, a, b)) over out dims d[rank] with element strides sa, sb (0 where
 * broadcast); y may equal a or b when their strides are y's own. */
int nn_cu_binary(void *stream, int op, const float *a, const float *b, float *y, int rank,
                 const int64_t *d, const int64_t *sa, const int64_t *sb, const nn_cu_act *act);
/* y[o][c][i] = act(x[o][c][i] * scale[c * scale_step] + bias[c] + res[o][c][i]) for outer x
 * channels x inner, rounded after each operation in that order (no fused multiply-add:
 * a fused Conv scale, ir.h, must give the unfused nodes' values); scale_step 1 for a
 * value per channel, 0 for one value; scale, bias, res may be NULL; x, res may equal y. */
int nn_cu_channel_affine(void *stream, const float *x, float *y, const float *scale,
                         int64_t scale_step, const float *bias, const float *res, int64_t outer,
                         int64_t channels, int64_t inner, const nn_cu_act *act);
/* Max (max = 1) or average pooling of planes NCHW planes; include_pad: AveragePool's
 * count_include_pad. */
int nn_cu_pool(void *stream, int max, int include_pad, const float *x, float *y, int64_t planes,
               const nn_cu_window *w);
/* GlobalMax/AveragePool: one value per plane of `len` elements. */
int nn_cu_global_pool(void *stream, int max, const float *x, float *y, int64_t planes,
                      int64_t len);
/* InstanceNormalization over planes of len elements, channel = plane % channels. */
int nn_cu_instance_norm(void *stream, const float *x, float *y, const float *scale,
                        const float *bias, int64_t planes, int64_t channels, int64_t len,
                        float eps);
/* y[o] = x[base + offset(o)] for every o over out dims d[rank] with element strides st
 * (any sign, 0 = repeat): Transpose, Slice, Expand, copies. esize 1, 2, 4 or 8. */
int nn_cu_strided(void *stream, size_t esize, const void *x, void *y, int rank, const int64_t *d,
                  const int64_t *st, int64_t base);
/* Pad (mode as nn_hd_pad_src) with fill (esize bytes) for the constant mode. */
int nn_cu_pad(void *stream, size_t esize, const void *x, void *y, int rank, const int64_t *in,
              const int64_t *out, const int64_t *p0, int mode, const void *fill);
/* Resize from per-axis taps (taps: sum(out[d]) entries, axis after axis, each 4 int64
 * indices then 4 float weights; idx[0] == -1 means fill). linear: weighted sum (f32),
 * else nearest (copy of esize bytes). */
typedef struct nn_cu_tap {
    int64_t idx[4];
    float w[4];
} nn_cu_tap;
int nn_cu_resize(void *stream, size_t esize, int linear, const void *x, void *y, int rank,
                 const int64_t *in, const int64_t *out, const int *ntap, const nn_cu_tap *taps,
                 const void *fill, const float *addend);
/* Softmax / LogSoftmax over [outer][len][inner]. */
int nn_cu_softmax(void *stream, int log_form, const float *x, float *y, int64_t outer,
                  int64_t len, int64_t inner);
/* Gather along an axis: x is [outer][axis_len][inner] (esize bytes each), idx holds nidx
 * indices already made non-negative and in range; y is [outer][nidx][inner]. */
int nn_cu_gather(void *stream, size_t esize, const void *x, void *y, int64_t outer,
                 int64_t axis_len, int64_t inner, const int64_t *idx, int64_t nidx);
/* f32 <-> f16 (IEEE half, round to nearest even). */
int nn_cu_f32_to_f16(void *stream, const float *x, uint16_t *y, int64_t n);
int nn_cu_f16_to_f32(void *stream, const uint16_t *x, float *y, int64_t n);
/* Uniform values in [-1, 1) from a fixed seed (the fp16 accuracy check's input). */
int nn_cu_fill_random(void *stream, float *y, int64_t n, uint32_t seed);

#ifdef __cplusplus
}
#endif
#endif
