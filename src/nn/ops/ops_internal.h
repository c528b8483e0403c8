/* Helpers shared by the op definitions in src/nn/ops/: reading shape-as-data
 * inputs, normalising axes, setting output types, dtype classes, and numpy
 * broadcasting iteration. Everything is static inline so each op file stays
 * self-contained; nothing here allocates. */
#ifndef FFU_NN_OPS_INTERNAL_H
#define FFU_NN_OPS_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "../cuda/nn_cuda_hd.h"
#include "../ir.h"

/* ---- dtype classes -------------------------------------------------------------------- */

static inline int nn_dtype_is_float(ffu_dtype t)
{
    return t == FFU_DTYPE_F32 || t == FFU_DTYPE_F64 || t == FFU_DTYPE_F16 || t == FFU_DTYPE_BF16;
}

static inline int nn_dtype_is_int(ffu_dtype t)
{
    return t == FFU_DTYPE_I8 || t == FFU_DTYPE_U8 || t == FFU_DTYPE_I16 || t == FFU_DTYPE_U16 ||
           t == FFU_DTYPE_I32 || t == FFU_DTYPE_U32 || t == FFU_DTYPE_I64 || t == FFU_DTYPE_U64;
}

static inline int nn_dtype_is_signed(ffu_dtype t)
{
    return t == FFU_DTYPE_I8 || t == FFU_DTYPE_I16 || t == FFU_DTYPE_I32 || t == FFU_DTYPE_I64;
}

/* ---- tensors and outputs -------------------------------------------------------------- */

static inline int nn_is_const(const nn_tensor *t)
{
    return t && (t->flags & NN_T_CONST) && (t->data || t->nbytes == 0);
}

/* Sets output i's dtype and shape (shape NULL: unknown rank). */
static inline ffu_status nn_set_out(nn_graph *g, nn_node *n, int i, ffu_dtype dtype,
                                    const nn_shape *shape)
{
    nn_tensor *o = nn_out(g, n, i);
    if (!o) return nn_node_error(n, FFU_ERR_FORMAT, "output %d is missing", i);
    o->dtype = dtype;
    if (shape)
        o->shape = *shape;
    else
        o->shape.rank = -1;
    return FFU_OK;
}

/* Checks input count bounds and that input 0..required-1 are present. */
static inline ffu_status nn_check_inputs(const nn_graph *g, const nn_node *n, int required,
                                         int max)
{
    if (n->ninputs < required || (max >= 0 && n->ninputs > max))
        return nn_node_error(n, FFU_ERR_FORMAT, "has %d inputs, expects %d..%d", n->ninputs,
                             required, max);
    for (int i = 0; i < required; i++)
        if (!nn_in(g, n, i)) return nn_node_error(n, FFU_ERR_FORMAT, "input %d is missing", i);
    if (n->noutputs < 1 || !nn_out(g, n, 0))
        return nn_node_error(n, FFU_ERR_FORMAT, "has no output");
    return FFU_OK;
}

/* Element count of a tensor's shape (-1 if not known). */
static inline int64_t nn_numel(const nn_tensor *t) { return nn_shape_numel(&t->shape); }

/* ---- shape-as-data inputs ------------------------------------------------------------- */

/* Reads element i of integer (or bool / float, truncated) data as int64. */
static inline int64_t nn_load_int(const void *p, ffu_dtype t, int64_t i)
{
    switch (t) {
    case FFU_DTYPE_I64: return ((const int64_t *)p)[i];
    case FFU_DTYPE_I32: return ((const int32_t *)p)[i];
    case FFU_DTYPE_U64: return (int64_t)((const uint64_t *)p)[i];
    case FFU_DTYPE_U32: return ((const uint32_t *)p)[i];
    case FFU_DTYPE_I16: return ((const int16_t *)p)[i];
    case FFU_DTYPE_U16: return ((const uint16_t *)p)[i];
    case FFU_DTYPE_I8: return ((const int8_t *)p)[i];
    case FFU_DTYPE_U8:
    case FFU_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case FFU_DTYPE_F32: return (int64_t)((const float *)p)[i];
    case FFU_DTYPE_F64: return (int64_t)((const double *)p)[i];
    default: return 0;
    }
}

/* Reads element i of numeric data (any float or integer type, bool as 0/1) as double.
 * For kernels that compute every type in double; i64 beyond 2^53 loses precision. */
static inline double nn_load_f64(const void *p, ffu_dtype t, int64_t i)
{
    switch (t) {
    case FFU_DTYPE_F32: return ((const float *)p)[i];
    case FFU_DTYPE_F64: return ((const double *)p)[i];
    case FFU_DTYPE_F16: return nn_f16_to_f32(((const uint16_t *)p)[i]);
    case FFU_DTYPE_BF16: return nn_bf16_to_f32(((const uint16_t *)p)[i]);
    case FFU_DTYPE_U64: return (double)((const uint64_t *)p)[i];
    default: return (double)nn_load_int(p, t, i);
    }
}

/* Converts a double to int64 the defined way: truncation toward zero, saturated at the
 * int64 range, NaN to 0 (a plain cast of an out-of-range double is undefined). */
static inline int64_t nn_f64_to_i64(double v)
{
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

/* Writes v into element i of data of type t: floats round to nearest, integers take
 * nn_f64_to_i64's value wrapped to their width (as a C integer conversion does), bool
 * is v != 0. */
static inline void nn_store_f64(void *p, ffu_dtype t, int64_t i, double v)
{
    switch (t) {
    case FFU_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case FFU_DTYPE_F64: ((double *)p)[i] = v; break;
    case FFU_DTYPE_F16: ((uint16_t *)p)[i] = nn_f32_to_f16((float)v); break;
    case FFU_DTYPE_BF16: ((uint16_t *)p)[i] = nn_f32_to_bf16((float)v); break;
    case FFU_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case FFU_DTYPE_U64:
        ((uint64_t *)p)[i] = v >= 18446744073709551615.0 ? UINT64_MAX
                             : v > 0                      ? (uint64_t)v
                                                          : (uint64_t)nn_f64_to_i64(v);
        break;
    default: {
        uint64_t u = (uint64_t)nn_f64_to_i64(v);
        switch (t) {
        case FFU_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)u; break;
        case FFU_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)u; break;
        case FFU_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)u; break;
        case FFU_DTYPE_U16: ((uint16_t *)p)[i] = (uint16_t)u; break;
        case FFU_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)u; break;
        case FFU_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)u; break;
        case FFU_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)u; break;
        default: break;
        }
    }
    }
}

/* Writes v into element i of integer (or bool) data of type t, wrapped to the type's
 * width as a C conversion does (bool: v != 0): for kernels that compute integers in
 * 64-bit wrapping arithmetic, exact where a double would round. */
static inline void nn_store_wrapped(void *p, ffu_dtype t, int64_t i, uint64_t v)
{
    switch (ffu_dtype_size(t)) {
    case 1:
        ((uint8_t *)p)[i] = t == FFU_DTYPE_BOOL ? v != 0 : (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)p)[i] = v;
        break;
    }
}

/* Reads an integer list from data of dtype t with numel elements into out[max].
 * FFU_ERR_UNSUPPORTED for non-integer dtypes, FFU_ERR_FORMAT when longer than max. */
static inline ffu_status nn_read_ints(const nn_node *n, const void *data, ffu_dtype t,
                                      int64_t numel, int64_t *out, int max, int *count)
{
    *count = 0;
    if (!nn_dtype_is_int(t))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "integer list of type %s",
                             ffu_dtype_name(t));
    if (numel < 0 || numel > max)
        return nn_node_error(n, FFU_ERR_FORMAT, "integer list of %lld values (at most %d)",
                             (long long)numel, max);
    for (int64_t i = 0; i < numel; i++) out[i] = nn_load_int(data, t, i);
    *count = (int)numel;
    return FFU_OK;
}

/* Reads a constant integer input (any integer dtype) into out[max].
 * Returns 1 when read, 0 when the tensor is not constant (or its size unknown),
 * a negative status on a bad list. */
static inline int nn_const_ints(const nn_node *n, const nn_tensor *t, int64_t *out, int max,
                                int *count)
{
    *count = 0;
    if (!nn_is_const(t)) return 0;
    int64_t numel = nn_numel(t);
    if (numel < 0) return 0;
    ffu_status st = nn_read_ints(n, t->data, t->dtype, numel, out, max, count);
    return st < 0 ? st : 1;
}

/* Normalises axis into [0, rank); FFU_ERR_FORMAT names the node when out of range. */
static inline ffu_status nn_norm_axis(const nn_node *n, int64_t axis, int rank, int *out)
{
    *out = 0;
    if (axis < -(int64_t)rank || axis >= rank)
        return nn_node_error(n, FFU_ERR_FORMAT, "axis %lld is out of range for rank %d",
                             (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return FFU_OK;
}

/* Normalises a list of axes in place (into [0, rank)), rejecting duplicates. */
static inline ffu_status nn_norm_axes(const nn_node *n, int64_t *axes, int count, int rank)
{
    unsigned seen = 0;
    for (int i = 0; i < count; i++) {
        int a;
        ffu_status st = nn_norm_axis(n, axes[i], rank, &a);
        if (st < 0) return st;
        if (seen & (1u << a))
            return nn_node_error(n, FFU_ERR_FORMAT, "axis %d is repeated", a);
        seen |= 1u << a;
        axes[i] = a;
    }
    return FFU_OK;
}

/* Product of dims [from, to) of a known shape (1 when empty). */
static inline int64_t nn_dims_prod(const nn_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= s->d[i];
    return p;
}

/* Row-major element strides of a shape. */
static inline void nn_strides(const nn_shape *s, int64_t *st)
{
    int64_t acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->d[i];
    }
}

/* ---- broadcasting ---------------------------------------------------------------------- */

#define NN_BCAST_MAX_IN 4

/* An output shape and per-input element strides (0 along broadcast dims), with runs
 * of dims that broadcast the same way merged: same-shape operands become rank 1, a
 * per-channel [1,C,1,1] operand on NCHW becomes [N, C, H*W] with strides [0, 1, 0].
 * Loops walk every dim but the last with an index counter and hand the last one to an
 * inner loop with strides 0 or 1. */
typedef struct nn_bcast {
    int rank;  /* >= 1 */
    int nin;
    int64_t d[FFU_NN_MAX_RANK];
    int64_t st[NN_BCAST_MAX_IN][FFU_NN_MAX_RANK];
    int64_t numel;
} nn_bcast;

/* Sets up iteration of `out` (the broadcast of ins[0..nin-1], every shape known). */
static inline void nn_bcast_init(nn_bcast *b, const nn_shape *out, const nn_shape *const *ins,
                                 int nin)
{
    int r = out->rank;
    int64_t d[FFU_NN_MAX_RANK], st[NN_BCAST_MAX_IN][FFU_NN_MAX_RANK];
    b->nin = nin;
    b->numel = nn_shape_numel(out);
    for (int k = 0; k < nin; k++) {
        const nn_shape *s = ins[k];
        int64_t acc = 1;
        for (int i = r - 1; i >= 0; i--) {
            int j = i - (r - s->rank);
            int64_t dim = j >= 0 ? s->d[j] : 1;
            st[k][i] = dim == 1 ? 0 : acc;
            acc *= dim;
        }
    }
    for (int i = 0; i < r; i++) d[i] = out->d[i];
    /* merge: drop dims of size 1, then fuse neighbours that every input either
     * broadcasts in both or walks contiguously in both */
    int m = 0;
    for (int i = 0; i < r; i++) {
        if (d[i] == 1) continue;
        if (m > 0) {
            int ok = 1;
            for (int k = 0; k < nin && ok; k++) {
                int64_t prev = b->st[k][m - 1];
                if (prev == 0 && st[k][i] == 0) continue;
                if (prev != 0 && st[k][i] != 0 && prev == st[k][i] * d[i]) continue;
                ok = 0;
            }
            if (ok) {
                b->d[m - 1] *= d[i];
                for (int k = 0; k < nin; k++) b->st[k][m - 1] = st[k][i];
                continue;
            }
        }
        b->d[m] = d[i];
        for (int k = 0; k < nin; k++) b->st[k][m] = st[k][i];
        m++;
    }
    if (m == 0) { /* scalar or all-ones: one element */
        b->d[0] = b->numel == 0 ? 0 : 1;
        for (int k = 0; k < nin; k++) b->st[k][0] = 0;
        m = 1;
    }
    b->rank = m;
}

/* Inner loop over `len` elements: out[i] from in[k][i * sin[k]]. After merging the
 * last dim's strides are always 0 (broadcast: in[k][0] for every i) or 1 (contiguous),
 * so an inner loop may branch on that and let the compiler vectorise each case. */
typedef void (*nn_bcast_fn)(void *out, const void *const *in, const int64_t *sin, int64_t len,
                            const void *ctx);

/* Runs fn over the whole broadcast, rows of the merged last dim at a time. esz_out and
 * esz_in[k] are element sizes in bytes. */
static inline void nn_bcast_run(const nn_bcast *b, void *out, size_t esz_out,
                                const void *const *in, const size_t *esz_in, nn_bcast_fn fn,
                                const void *ctx)
{
    if (b->numel <= 0) return;
    int r = b->rank, nin = b->nin;
    int64_t len = b->d[r - 1], idx[FFU_NN_MAX_RANK] = {0};
    int64_t sin[NN_BCAST_MAX_IN], off[NN_BCAST_MAX_IN] = {0};
    for (int k = 0; k < nin; k++) sin[k] = b->st[k][r - 1];
    int64_t rows = b->numel / len;
    char *o = out;
    const void *p[NN_BCAST_MAX_IN];
    for (int64_t row = 0; row < rows; row++) {
        for (int k = 0; k < nin; k++) p[k] = (const char *)in[k] + off[k] * (int64_t)esz_in[k];
        fn(o + row * len * (int64_t)esz_out, p, sin, len, ctx);
        /* advance the counter over dims [0, r-1) */
        for (int i = r - 2; i >= 0; i--) {
            for (int k = 0; k < nin; k++) off[k] += b->st[k][i];
            if (++idx[i] < b->d[i]) break;
            for (int k = 0; k < nin; k++) off[k] -= b->st[k][i] * b->d[i];
            idx[i] = 0;
        }
    }
}

/* ---- strided copies (Slice, Transpose, Expand, ...) ----------------------------------- */

/* Copies a row of len elements of size es from in (element stride st, may be 0 or
 * negative) to contiguous out. */
static inline void nn_copy_row(void *out, const void *in, size_t es, int64_t len, int64_t st)
{
    if (st == 1) {
        memcpy(out, in, (size_t)len * es);
        return;
    }
#define NN_ROW_(T)                                                                         \
    do {                                                                                   \
        const T *s_ = in;                                                                  \
        T *o_ = out;                                                                       \
        for (int64_t i_ = 0; i_ < len; i_++) o_[i_] = s_[i_ * st];                         \
    } while (0)
    switch (es) {
    case 1: NN_ROW_(uint8_t); break;
    case 2: NN_ROW_(uint16_t); break;
    case 4: NN_ROW_(uint32_t); break;
    case 8: NN_ROW_(uint64_t); break;
    default:
        for (int64_t i = 0; i < len; i++)
            memcpy((char *)out + i * (int64_t)es, (const char *)in + i * st * (int64_t)es, es);
    }
#undef NN_ROW_
}

/* Fills contiguous out (dims d[rank], row-major) from in, where output index
 * (i0..ir-1) reads in + sum(ik * st[k]) elements. Strides may be 0 (broadcast) or
 * negative (reversed slices). rank 0 copies one element. */
static inline void nn_strided_copy(void *out, const void *in, size_t es, int rank,
                                   const int64_t *d, const int64_t *st)
{
    int64_t total = 1;
    for (int i = 0; i < rank; i++) total *= d[i];
    if (total <= 0) return;
    if (rank == 0) {
        memcpy(out, in, es);
        return;
    }
    int64_t len = d[rank - 1], rows = total / len, idx[FFU_NN_MAX_RANK] = {0}, off = 0;
    char *o = out;
    for (int64_t r = 0; r < rows; r++) {
        nn_copy_row(o + r * len * (int64_t)es, (const char *)in + off * (int64_t)es, es, len,
                    st[rank - 1]);
        for (int i = rank - 2; i >= 0; i--) {
            off += st[i];
            if (++idx[i] < d[i]) break;
            off -= st[i] * d[i];
            idx[i] = 0;
        }
    }
}

/* Offsets of broadcast inputs for kernels that index directly: nn_hd_offset, the one
 * definition the CUDA kernels use too. */

/* ---- dense, pooling and normalisation helpers (conv.c, pool.c, gemm.c, norm.c) ------- */

/* Applies node n's fused activation (if any) to f32 output data laid out
 * [outer][channels][inner]; PReLU slopes come from the constant tensor n->act.slope. */
static inline void nn_apply_node_act(const nn_graph *g, const nn_node *n, float *y,
                                     int64_t outer, int64_t channels, int64_t inner)
{
    if (n->act.kind == NN_ACT_NONE) return;
    const float *slope = NULL;
    int64_t slope_numel = 0;
    if (n->act.slope >= 0 && n->act.slope < g->ntensors) {
        const nn_tensor *s = &g->tensors[n->act.slope];
        if (s->dtype == FFU_DTYPE_F32 && s->data) {
            slope = s->data;
            slope_numel = nn_shape_numel(&s->shape);
        }
    }
    nn_act_apply(&n->act, slope, slope_numel, y, outer, channels, inner);
}

/* Geometry of a sliding window over the spatial dims of an N x C x D1..Dk tensor
 * (k = 1..3), shared by Conv, ConvTranspose, MaxPool and AveragePool. Dims are stored
 * right-aligned in 3 slots (a 2-D op uses slots 1 and 2; slot 0 is a dim of size 1)
 * so kernels can loop over depth, height and width without special cases. */
typedef struct nn_window {
    int nd;                                  /* spatial dims of the op (1..3) */
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad0[3], pad1[3];
} nn_window;

enum { NN_WINDOW_CONV = 0, NN_WINDOW_POOL = 1, NN_WINDOW_CONV_TRANSPOSE = 2 };

/* Fills w from the node's attributes (kernel_shape, strides, dilations, pads, auto_pad,
 * and for pools ceil_mode; for ConvTranspose output_padding and output_shape) and the
 * input spatial dims in[0..nd-1]; kernel[0..nd-1] is the kernel size when it comes
 * from a weight tensor (NULL: from kernel_shape). Output dims are -1 where an input dim
 * is unknown. Defined in conv.c. */
ffu_status nn_window_init(const nn_node *n, int kind, int nd, const int64_t *in,
                          const int64_t *kernel, nn_window *w);

/* numpy matmul: 1-D operands get a dim of 1 prepended (A) or appended (B) that is
 * removed from the result; leading dims broadcast. */
typedef struct nn_matmul_geom {
    int64_t M, N, K;
    int a1d, b1d;
    nn_shape batch;              /* broadcast batch dims */
    int64_t sa[FFU_NN_MAX_RANK]; /* batch strides in matrices (0 = broadcast) */
    int64_t sb[FFU_NN_MAX_RANK];
    nn_shape out;
} nn_matmul_geom;

/* Checks a MatMul's (or MatMulInteger's and QLinearMatMul's: u8 / i8 operands) inputs
 * and fills mg; out.rank is -1 while an operand's rank is unknown. Defined in gemm.c. */
ffu_status nn_matmul_geom_init(const nn_graph *g, const nn_node *n, nn_matmul_geom *mg);

/* Einsum's equation resolved against its operand shapes (einsum.c). Labels are the
 * distinct indices (a letter, or one dim an ellipsis stands for): the output's first,
 * in its order, then the summed ones. */
#define NN_EINSUM_MAX_IN 8
#define NN_EINSUM_MAX_LABELS (52 + FFU_NN_MAX_RANK)
typedef struct nn_einsum {
    int nin, nlabels, nout;
    int64_t size[NN_EINSUM_MAX_LABELS];
    /* per operand and label: the element step (the sum of the strides of the dims with
     * that label; 0 where a size-1 dim broadcasts) and whether a dim has the label */
    int64_t step[NN_EINSUM_MAX_IN][NN_EINSUM_MAX_LABELS];
    unsigned char has[NN_EINSUM_MAX_IN][NN_EINSUM_MAX_LABELS];
    int diag[NN_EINSUM_MAX_IN]; /* the operand repeats a letter */
    nn_shape out;               /* rank -1 while an input's rank is unknown */
} nn_einsum;

/* Checks an Einsum node (equation, input count and types, ranks and sizes) and fills e. */
ffu_status nn_einsum_geom(const nn_graph *g, const nn_node *n, nn_einsum *e);

/* ---- geometry for other backends (the cuda backend computes exactly what ref does) --- */

/* Pad's mode (0 constant, 1 reflect, 2 edge, 3 wrap) and per-dim pads for an input of
 * this rank, from constant inputs or attributes (pad.c); FFU_ERR_UNSUPPORTED when the
 * pads are not constant. The rank is the caller's: at load time (rewrite.c's shape
 * derivation) the input's own shape may not be known yet. */
ffu_status nn_pad_geom(const nn_graph *g, const nn_node *n, int rank, int *mode, int64_t *p0,
                       int64_t *p1);

/* Softmax / LogSoftmax as [outer][len][inner] (norm.c). */
ffu_status nn_softmax_geom(const nn_node *n, const nn_shape *s, int64_t *outer, int64_t *len,
                           int64_t *inner);

/* Resize (nearest and linear): the per-axis tap tables resize_run builds (resize.c). */
typedef struct nn_resize_tap {
    int64_t idx[4]; /* idx[0] == -1: outside the crop box (the fill value) */
    double w[4];
} nn_resize_tap;
typedef struct nn_resize_info {
    int rank, linear;               /* linear: a weighted sum of taps; else copy idx[0] */
    int ntap[FFU_NN_MAX_RANK];      /* taps per entry of each axis (1, 2) */
    int64_t in[FFU_NN_MAX_RANK], out[FFU_NN_MAX_RANK];
    unsigned char fill[16];         /* extrapolation value in the tensor's type */
} nn_resize_info;
/* tab receives sum(out[d]) entries, axis after axis (the ref kernel's scratch size).
 * FFU_ERR_UNSUPPORTED for cubic mode or sizes that are not constant. */
ffu_status nn_resize_taps(const nn_graph *g, const nn_node *n, nn_resize_info *info,
                          nn_resize_tap *tab);

#endif
