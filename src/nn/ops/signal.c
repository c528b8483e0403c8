/* Signal-processing ops (ONNX opset 17): the Hann, Hamming and Blackman windows, DFT,
 * STFT and MelWeightMatrix. Audio front ends exported to ONNX carry them; they run on
 * ref, in double.
 *
 * Sizes come from input values (a window's size, DFT's dft_length, STFT's frame step
 * and length, MelWeightMatrix's bin counts): the output shape is known when those inputs
 * are constants (as the session makes small integer inputs), else its dims are unknown.
 * Complex tensors are ONNX's: a last dim of 2 (real, imaginary); DFT and STFT also take
 * a real signal as a last dim of 1. The transforms are plain O(n^2) sums: these ops size
 * audio frames (hundreds of samples), not images. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

#define TAU 6.283185307179586476925286766559
/* The most complex multiply-adds one DFT or STFT node may take (about a second here):
 * beyond, these sums are the wrong tool, and a hostile file must not hang a process. */
#define MAX_DFT_WORK ((int64_t)1 << 30)

/* 1 when lines * bins * samples multiply-adds stay under MAX_DFT_WORK (unknown: -1s) */
static int dft_work_ok(int64_t lines, int64_t bins, int64_t samples)
{
    if (lines < 0 || bins < 0 || samples < 0) return 1;
    double w = (double)lines * (double)bins * (double)samples;
    return w <= (double)MAX_DFT_WORK;
}

/* The integer value of constant scalar input i, or -1 (absent, not constant, not one
 * value). */
static int64_t const_scalar(const nn_graph *g, const nn_node *n, int i)
{
    const nn_tensor *t = nn_in(g, n, i);
    if (!t || !nn_is_const(t) || nn_numel(t) != 1 || !nn_dtype_is_int(t->dtype)) return -1;
    return nn_load_int(t->data, t->dtype, 0);
}

static int float_type(ffu_dtype t)
{
    return t == FFU_DTYPE_F32 || t == FFU_DTYPE_F16 || t == FFU_DTYPE_F64 || t == FFU_DTYPE_BF16;
}

/* ---- HannWindow, HammingWindow, BlackmanWindow (size) -> [size] -------------------------- */

/* The output type: attribute "dtype" (the loader's translation of output_datatype) */
static ffu_status window_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    ffu_dtype dt = (ffu_dtype)nn_attr_int(n, "dtype", FFU_DTYPE_F32);
    if (!nn_dtype_is_int(x->dtype) || !float_type(dt))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "size of type %s, output of type %s",
                             ffu_dtype_name(x->dtype), ffu_dtype_name(dt));
    int64_t size = const_scalar(g, n, 0);
    if (nn_is_const(x) && (nn_numel(x) != 1 || size < 0 || size > (1 << 24)))
        return nn_node_error(n, FFU_ERR_FORMAT, "window size %lld", (long long)size);
    nn_shape o = {.rank = 1, .d = {size}};
    return nn_set_out(g, n, 0, dt, &o);
}

/* a0 - a1 cos(tau n / D) + a2 cos(2 tau n / D), D = size (periodic) or size - 1 */
static ffu_status window_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    (void)in, (void)scratch;
    const nn_tensor *o = nn_out(g, n, 0);
    int64_t size = o->shape.d[0];
    double a0 = 0.5, a1 = 0.5, a2 = 0;
    if (n->op == NN_OP_HAMMING_WINDOW) a0 = 25.0 / 46, a1 = 21.0 / 46;
    if (n->op == NN_OP_BLACKMAN_WINDOW) a0 = 0.42, a1 = 0.5, a2 = 0.08;
    double D = (double)(nn_attr_int(n, "periodic", 1) ? size : size - 1);
    for (int64_t i = 0; i < size; i++) {
        double a = TAU * (double)i / D;
        nn_store_f64(out[0], o->dtype, i, a0 - a1 * cos(a) + a2 * cos(2 * a));
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_hann_window = {window_infer, window_run, NULL, 0};
const nn_op_def nn_op_def_hamming_window = {window_infer, window_run, NULL, 0};
const nn_op_def nn_op_def_blackman_window = {window_infer, window_run, NULL, 0};

/* ---- DFT(input, dft_length?) ---------------------------------------------------------------- */

/* X [..., L, ..., 1|2] with the signal on `axis` (a dim before the last) -> Y [..., K, ..., 2]:
 * K = dft_length (default L; the signal is cut or padded with zeros to it), or
 * dft_length / 2 + 1 with onesided. */
static ffu_status dft_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 2);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!float_type(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    int r = x->shape.rank;
    int64_t axis = nn_attr_int(n, "axis", 1);
    if (axis < 0) axis += r;
    if (r < 2 || axis < 0 || axis >= r - 1 || (x->shape.d[r - 1] != 1 && x->shape.d[r - 1] != 2))
        return nn_node_error(n, FFU_ERR_FORMAT,
                             "input [..., 1 or 2] with the signal on axis "
                             "%lld before the last",
                             (long long)nn_attr_int(n, "axis", 1));
    if (nn_attr_int(n, "inverse", 0) && nn_attr_int(n, "onesided", 0))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "inverse with onesided");
    int64_t len = x->shape.d[axis];
    if (nn_in(g, n, 1)) {
        len = const_scalar(g, n, 1);
        if (nn_is_const(nn_in(g, n, 1)) && len < 1)
            return nn_node_error(n, FFU_ERR_FORMAT, "dft_length %lld", (long long)len);
    }
    nn_shape o = x->shape;
    o.d[axis] = len < 0 ? -1 : nn_attr_int(n, "onesided", 0) ? len / 2 + 1 : len;
    o.d[r - 1] = 2;
    int64_t lines = nn_shape_known(&x->shape) ? nn_dims_prod(&x->shape, 0, (int)axis) *
                                                    nn_dims_prod(&x->shape, (int)axis + 1, r - 1)
                                              : -1;
    int64_t taps = len < 0 ? -1 : x->shape.d[axis] < len ? x->shape.d[axis] : len;
    if (!dft_work_ok(lines, o.d[axis], taps))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED,
                             "a DFT of %lld lines of %lld samples into "
                             "%lld bins: over the %lld multiply-adds this O(n^2) op takes",
                             (long long)lines, (long long)taps, (long long)o.d[axis],
                             (long long)MAX_DFT_WORK);
    return nn_set_out(g, n, 0, x->dtype, &o);
}

/* Y[k] = sum_j X[j] e^(-+i tau j k / N) over the first min(L, N) samples (N = the
 * transform's length), / N when inverse. x and y are strided views of one line. */
static void dft_line(const void *x, ffu_dtype xt, int64_t x0, int64_t xstep, int complex_in,
                     int64_t L, void *y, ffu_dtype yt, int64_t y0, int64_t ystep, int64_t K,
                     int64_t N, int inverse)
{
    double sign = inverse ? 1 : -1;
    int64_t m = L < N ? L : N;
    for (int64_t k = 0; k < K; k++) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < m; j++) {
            double a = sign * TAU * (double)((j * k) % N) / (double)N, c = cos(a), s = sin(a);
            double xr = nn_load_f64(x, xt, x0 + j * xstep);
            double xi = complex_in ? nn_load_f64(x, xt, x0 + j * xstep + 1) : 0;
            re += xr * c - xi * s;
            im += xr * s + xi * c;
        }
        if (inverse) re /= (double)N, im /= (double)N;
        nn_store_f64(y, yt, y0 + k * ystep, re);
        nn_store_f64(y, yt, y0 + k * ystep + 1, im);
    }
}

static ffu_status dft_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0);
    int r = x->shape.rank;
    int64_t axis = nn_attr_int(n, "axis", 1);
    if (axis < 0) axis += r;
    int64_t N = nn_in(g, n, 1) ? nn_load_int(in[1], nn_in(g, n, 1)->dtype, 0) : x->shape.d[axis];
    int64_t L = x->shape.d[axis], K = y->shape.d[axis], C = x->shape.d[r - 1];
    int64_t outer = nn_dims_prod(&x->shape, 0, (int)axis);
    int64_t inner = nn_dims_prod(&x->shape, (int)axis + 1, r - 1); /* without the last */
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            dft_line(in[0], x->dtype, (o * L * inner + i) * C, inner * C, C == 2, L, out[0],
                     y->dtype, (o * K * inner + i) * 2, inner * 2, K, N,
                     (int)nn_attr_int(n, "inverse", 0));
    return FFU_OK;
}

const nn_op_def nn_op_def_dft = {dft_infer, dft_run, NULL, 0};

/* ---- STFT(signal, frame_step, window?, frame_length?) --------------------------------------- */

/* signal [B, L, 1|2] -> [B, frames, K, 2]: frame f is the DFT of samples f * step ...
 * f * step + F - 1 times the window (ones without one), F = the window's length or
 * frame_length; frames = (L - F) / step + 1, K = F / 2 + 1 (onesided, the default) or F. */
static int64_t stft_frame_length(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *w = nn_in(g, n, 2);
    if (w) return w->shape.rank == 1 ? w->shape.d[0] : -1;
    return nn_in(g, n, 3) ? const_scalar(g, n, 3) : -1;
}

static ffu_status stft_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 2, 4);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, 2);
    if (!float_type(x->dtype) || (w && w->dtype != x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    if (x->shape.rank >= 0 && (x->shape.rank != 3 || (x->shape.d[2] != 1 && x->shape.d[2] != 2)))
        return nn_node_error(n, FFU_ERR_FORMAT, "signal is not [batch, length, 1 or 2]");
    if (!w && !nn_in(g, n, 3))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "neither a window nor a frame_length");
    int64_t step = const_scalar(g, n, 1), F = stft_frame_length(g, n);
    if (w && nn_in(g, n, 3) && nn_is_const(nn_in(g, n, 3)) && const_scalar(g, n, 3) != F)
        return nn_node_error(n, FFU_ERR_FORMAT, "frame_length differs from the window's");
    if ((nn_is_const(nn_in(g, n, 1)) && step < 1) || F == 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "frame step %lld, frame length %lld",
                             (long long)step, (long long)F);
    nn_shape o = {.rank = 4, .d = {-1, -1, -1, 2}};
    if (x->shape.rank == 3) {
        o.d[0] = x->shape.d[0];
        if (step > 0 && F > 0 && x->shape.d[1] >= 0) {
            if (x->shape.d[1] < F)
                return nn_node_error(n, FFU_ERR_FORMAT, "signal of %lld samples, frames of %lld",
                                     (long long)x->shape.d[1], (long long)F);
            o.d[1] = (x->shape.d[1] - F) / step + 1;
        }
    }
    if (F > 0) o.d[2] = nn_attr_int(n, "onesided", 1) ? F / 2 + 1 : F;
    if (!dft_work_ok(o.d[0] >= 0 && o.d[1] >= 0 ? o.d[0] * o.d[1] : -1, o.d[2], F))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED,
                             "an STFT of %lld x %lld frames of %lld "
                             "samples: over the %lld multiply-adds this O(n^2) op takes",
                             (long long)o.d[0], (long long)o.d[1], (long long)F,
                             (long long)MAX_DFT_WORK);
    return nn_set_out(g, n, 0, x->dtype, &o);
}

static ffu_status stft_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0), *w = nn_in(g, n, 2);
    ffu_dtype dt = x->dtype;
    int64_t B = x->shape.d[0], L = x->shape.d[1], C = x->shape.d[2];
    int64_t frames = y->shape.d[1], K = y->shape.d[2];
    int64_t F = w ? w->shape.d[0] : nn_load_int(in[3], nn_in(g, n, 3)->dtype, 0);
    int64_t step = nn_load_int(in[1], nn_in(g, n, 1)->dtype, 0);
    double *frame = scratch; /* F complex samples, windowed */
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t j = 0; j < F; j++) {
                int64_t at = f * step + j;
                double wj = w ? nn_load_f64(in[2], dt, j) : 1;
                frame[2 * j] = at < L ? wj * nn_load_f64(in[0], dt, (b * L + at) * C) : 0;
                frame[2 * j + 1] =
                    at < L && C == 2 ? wj * nn_load_f64(in[0], dt, (b * L + at) * C + 1) : 0;
            }
            dft_line(frame, FFU_DTYPE_F64, 0, 2, 1, F, out[0], dt, ((b * frames + f) * K) * 2, 2, K,
                     F, 0);
        }
    return FFU_OK;
}

static size_t stft_scratch(const nn_graph *g, const nn_node *n)
{
    int64_t F = stft_frame_length(g, n);
    return F > 0 ? (size_t)F * 2 * sizeof(double) : 0;
}

const nn_op_def nn_op_def_stft = {stft_infer, stft_run, stft_scratch, 0};

/* ---- MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_hz, upper_hz) ------------- */

/* [dft_length / 2 + 1, num_mel_bins] triangles, as the ONNX reference builds them: the
 * num_mel_bins + 2 edges are equally spaced in mel (m = 2595 log10(1 + hz / 700)) from
 * lower to upper by (upper - lower) / (num_mel_bins + 2) (sic), each turned into a
 * spectrogram bin floor((dft_length + 1) * hz / sample_rate); triangle i rises from edge
 * i to edge i + 1 and falls to edge i + 2. */
static ffu_status mel_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 5, 5);
    if (st < 0) return st;
    ffu_dtype dt = (ffu_dtype)nn_attr_int(n, "dtype", FFU_DTYPE_F32);
    if (!float_type(dt))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "output of type %s", ffu_dtype_name(dt));
    for (int i = 0; i < 5; i++) {
        const nn_tensor *t = nn_in(g, n, i);
        if (i < 3 ? !nn_dtype_is_int(t->dtype) : !float_type(t->dtype))
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input %d of type %s", i,
                                 ffu_dtype_name(t->dtype));
    }
    int64_t bins = const_scalar(g, n, 0), len = const_scalar(g, n, 1);
    if ((nn_is_const(nn_in(g, n, 0)) && (bins < 1 || bins > 65536)) ||
        (nn_is_const(nn_in(g, n, 1)) && (len < 1 || len > (1 << 24))))
        return nn_node_error(n, FFU_ERR_FORMAT, "%lld mel bins, dft_length %lld", (long long)bins,
                             (long long)len);
    nn_shape o = {.rank = 2, .d = {len < 0 ? -1 : len / 2 + 1, bins}};
    return nn_set_out(g, n, 0, dt, &o);
}

static ffu_status mel_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    (void)scratch;
    const nn_tensor *o = nn_out(g, n, 0);
    int64_t rows = o->shape.d[0], bins = o->shape.d[1];
    int64_t len = nn_load_int(in[1], nn_in(g, n, 1)->dtype, 0);
    double rate = (double)nn_load_int(in[2], nn_in(g, n, 2)->dtype, 0);
    double lo = nn_load_f64(in[3], nn_in(g, n, 3)->dtype, 0);
    double hi = nn_load_f64(in[4], nn_in(g, n, 4)->dtype, 0);
    if (!(rate > 0)) return nn_node_error(n, FFU_ERR_INVALID, "sample rate %g", rate);
    double mlo = 2595 * log10(1 + lo / 700), mhi = 2595 * log10(1 + hi / 700);
    double step = (mhi - mlo) / (double)(bins + 2);
    memset(out[0], 0, (size_t)(rows * bins) * ffu_dtype_size(o->dtype));
    int64_t e[3];
    for (int64_t i = 0; i < bins; i++) {
        for (int j = 0; j < 3; j++) {
            double hz = 700 * (pow(10, ((double)(i + j) * step + mlo) / 2595) - 1);
            e[j] = (int64_t)floor((double)(len + 1) * hz / rate);
        }
        if (e[0] < 0 || e[2] >= rows || e[0] > e[1] || e[1] > e[2])
            return nn_node_error(n, FFU_ERR_INVALID,
                                 "mel bin %lld falls on spectrogram bins "
                                 "%lld..%lld of %lld",
                                 (long long)i, (long long)e[0], (long long)e[2], (long long)rows);
        if (e[1] == e[0]) {
            nn_store_f64(out[0], o->dtype, e[1] * bins + i, 1);
        } else {
            for (int64_t k = e[0]; k <= e[1]; k++)
                nn_store_f64(out[0], o->dtype, k * bins + i,
                             (double)(k - e[0]) / (double)(e[1] - e[0]));
        }
        for (int64_t k = e[1]; k < e[2]; k++)
            nn_store_f64(out[0], o->dtype, k * bins + i,
                         (double)(e[2] - k) / (double)(e[2] - e[1]));
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_mel_weight_matrix = {mel_infer, mel_run, NULL, 0};
