/* The `cuda` backend: runs graph nodes on an NVIDIA GPU with cuDNN 9 (convolutions, with
 * bias and activation fused where cuDNN allows it), cuBLAS (Gemm, MatMul) and our own
 * kernels (nn_kernels.cu: elementwise ops with broadcasting, pooling, normalisation,
 * data movement, resize, softmax). Its memory space is device memory (backend.h): the
 * session plans the activations there, uploads the weights once and puts copies around
 * the nodes that fall back to ref on the host. cuDNN and cuBLAS are dlopen'ed
 * (cuda_libs.h); without them convolutions and GEMMs fall back too.
 *
 * Per session (one backend object per session): a CUDA stream of its own (or the
 * caller's, set_stream), cuDNN and cuBLAS handles bound to it, a cuBLAS workspace; the
 * cuDNN workspace is the node's share of the session's device scratch. Algorithms are
 * chosen once per plan at prepare. fp16 (session option): a convolution keeps fp16
 * weights and runs cuDNN in fp16 with fp32 accumulation when, at prepare, its output on
 * a fixed random input stays within NN_CUDA_FP16_NMSE of the fp32 path. CUDA graphs:
 * when every node of a plan is ours, the second run is captured and later runs replay
 * it (execute()). docs/NN_CUDA.md has the design and what was never run on a GPU.
 *
 * Builds without CUDA get only nn_backend_cuda_create, which says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffu_config.h"

#include "../backend.h"

#if !FFU_HAVE_CUDA

ffu_status nn_backend_cuda_create(nn_backend **out, const nn_cuda_opts *o)
{
    (void)o;
    if (out) *out = NULL;
    /* to the user this is "no usable device", as on a machine without a GPU (the CLI
     * maps both to the same exit status) */
    return ffu_error_set(FFU_ERR_DEVICE, "backend 'cuda': no CUDA device (this build of "
                         "facefuse has no CUDA support)");
}

#else

#include <cuda_runtime_api.h>

#include "facefuse/gpu.h"

#include "../nn_internal.h"
#include "../ops/ops_internal.h"
#include "cuda_internal.h"
#include "cuda_libs.h"
#include "nn_cuda_hd.h"

/* The NMSE an fp16 convolution may have against the fp32 one (the cpu backend's bf16
 * gate uses the same bound). */
#define NN_CUDA_FP16_NMSE 1e-5
/* Largest cuDNN workspace an algorithm may ask for. */
#define NN_CUDA_MAX_WS ((size_t)256 << 20)
#define NN_CUDA_BLAS_WS ((size_t)32 << 20)
#define MAX_OWNED 4

typedef struct cu_backend {
    nn_backend base;
    ffu_gpu *gpu;
    ffu_gpu_stream *own;
    cudaStream_t stream; /* where work goes now: own's, or the caller's */
    cudaEvent_t ev;      /* orders a new stream after the old one */
    const nn_cuda_libs *L;
    cudnnHandle_t dnn;    /* NULL: no cuDNN for this backend (convolutions go to ref) */
    cublasHandle_t blas;  /* NULL: no cuBLAS (Gemm, MatMul go to ref) */
    void *blas_ws;
    int cc_major;
    /* CUDA graphs (execute) */
    int graphs;
    uint64_t gplan;
    int gruns, gfailed;
    cudaGraphExec_t gexec;
    int in_exec; /* inside execute(): the device is current, a capture may be running */
} cu_backend;

enum {
    K_CONV = 1,
    K_GEMM,
    K_MATMUL,
    K_UNARY,
    K_BINARY,
    K_AFFINE, /* BatchNorm: x * a[c] + b[c] */
    K_POOL,
    K_GPOOL,
    K_INORM,
    K_STRIDED, /* Transpose, Slice, Expand */
    K_PIECES,  /* Concat (p->op 0), Split (p->op 1) */
    K_COPY,    /* views that were not aliased */
    K_PAD,
    K_RESIZE,
    K_SOFTMAX,
    K_GATHER,
};

typedef struct cu_node {
    int kind;
    char impl[64];
    void *dev[MAX_OWNED]; /* device buffers the node owns (from the pool) */
    int ndev;
    nn_cu_act act;
    size_t scratch;
    /* elementwise / movement */
    int op, max, incl, log_form, mode;
    float a, b, g;
    int rank;
    int64_t d[NN_CU_MAX_RANK], s0[NN_CU_MAX_RANK], s1[NN_CU_MAX_RANK], p0[NN_CU_MAX_RANK];
    int64_t base, outer, len, inner, channels, n;
    size_t esize;
    unsigned char fill[16];
    nn_cu_window w;
    int ntap[NN_CU_MAX_RANK];
    /* conv */
    cudnnTensorDescriptor_t xd, yd, bd, xd16, yd16;
    cudnnFilterDescriptor_t wd, wd16;
    cudnnConvolutionDescriptor_t cd, cd16;
    cudnnActivationDescriptor_t ad;
    cudnnConvolutionFwdAlgo_t algo, algo16;
    size_t ws, ws16;
    int fused;      /* cudnnConvolutionBiasActivationForward (relu, bias) */
    int pool;       /* _pool = 2 */
    int prepad;     /* asymmetric pads: the input is padded into scratch first */
    int have16;     /* the fp16 descriptors and algorithm exist */
    int use16;      /* the fp16 path passed its check */
    int exact;      /* integer-valued operands whose sums must stay exact (the node's
                       `_exact` attribute, rewrite_integer.c): no Winograd or FFT */
    void *w16;      /* its fp16 weights (owned: one of dev[]) */
    int64_t N, C, H, W, M, OH, OW, KH, KW;
    int64_t pt, pl, pb, pr; /* pads */
    size_t x_off, y_off, y16_off, x16_off, t_off; /* scratch layout */
    /* gemm / matmul */
    int ta, tb, has_c;
    int64_t gM, gN, gK, batch, sA, sB;
    float alpha, beta;
} cu_node;

static ffu_status cuda_err(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return FFU_OK;
    (void)cudaGetLastError();
    return ffu_error_set(FFU_ERR_DEVICE, "CUDA %s failed: %s", what, cudaGetErrorString(e));
}

static ffu_status dnn_err(const cu_backend *cb, cudnnStatus_t s, const char *what)
{
    if (s == CUDNN_STATUS_SUCCESS) return FFU_OK;
    return ffu_error_set(FFU_ERR_DEVICE, "cuDNN %s failed: %s", what, cb->L->cudnnGetErrorString(s));
}

static ffu_status blas_err(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS) return FFU_OK;
    return ffu_error_set(FFU_ERR_DEVICE, "cuBLAS %s failed: status %d", what, (int)s);
}

#define LAUNCH(call) cuda_err((cudaError_t)(call), #call)

/* ---- helpers ---------------------------------------------------------------------------- */

static int is_const(const nn_tensor *t) { return t && (t->flags & NN_T_CONST) && t->data; }

static const nn_tensor *f32_in(const nn_graph *g, const nn_node *n, int i)
{
    const nn_tensor *t = nn_in(g, n, i);
    if (!t || t->dtype != FFU_DTYPE_F32 || !nn_shape_known(&t->shape)) return NULL;
    return t;
}

/* Copies host data into a new device buffer owned by the node. */
static ffu_status own_upload(cu_backend *cb, cu_node *p, const void *h, size_t bytes, void **d)
{
    *d = NULL;
    if (p->ndev >= MAX_OWNED) return ffu_error_set(FFU_ERR_INTERNAL, "cuda node owns too much");
    ffu_status st = ffu_gpu_alloc(cb->gpu, bytes ? bytes : 4, d);
    if (st < 0) return st;
    p->dev[p->ndev++] = *d;
    if (bytes && (st = LAUNCH(cudaMemcpyAsync(*d, h, bytes, cudaMemcpyHostToDevice, cb->stream))) < 0)
        return st;
    /* h may be a stack buffer: finish the copy before returning */
    return LAUNCH(cudaStreamSynchronize(cb->stream));
}

/* The node's fused activation as a kernel parameter, with PReLU slopes uploaded. The
 * channel axis is dim 1 of the output (outer = dim 0, inner = the rest), as ref's. */
static int act_ok(const nn_graph *g, const nn_node *n)
{
    if (n->act.kind == NN_ACT_NONE) return 1;
    if (n->act.kind < 0 || n->act.kind >= NN_ACT_COUNT) return 0;
    if (n->act.kind != NN_ACT_PRELU) return 1;
    if (n->act.slope < 0 || n->act.slope >= g->ntensors) return 0;
    const nn_tensor *s = &g->tensors[n->act.slope];
    return is_const(s) && s->dtype == FFU_DTYPE_F32;
}

static ffu_status make_act(cu_backend *cb, const nn_graph *g, const nn_node *n, cu_node *p,
                           const nn_shape *out)
{
    memset(&p->act, 0, sizeof p->act);
    p->act.kind = (int)n->act.kind;
    p->act.alpha = n->act.alpha;
    p->act.beta = n->act.beta;
    p->act.channels = out->rank >= 2 ? out->d[1] : 1;
    p->act.inner = out->rank >= 2 ? nn_dims_prod(out, 2, out->rank) : nn_shape_numel(out);
    if (p->act.inner < 1) p->act.inner = 1;
    if (p->act.channels < 1) p->act.channels = 1;
    if (n->act.kind == NN_ACT_PRELU) {
        const nn_tensor *s = &g->tensors[n->act.slope];
        void *d;
        ffu_status st = own_upload(cb, p, s->data, s->nbytes, &d);
        if (st < 0) return st;
        p->act.slope = d;
        p->act.slope_n = nn_shape_numel(&s->shape);
    }
    return FFU_OK;
}

static void node_free(cu_backend *cb, cu_node *p)
{
    if (!p) return;
    const nn_cuda_libs *L = cb->L;
    if (cb->dnn) {
        if (p->xd) L->cudnnDestroyTensorDescriptor(p->xd);
        if (p->yd) L->cudnnDestroyTensorDescriptor(p->yd);
        if (p->bd) L->cudnnDestroyTensorDescriptor(p->bd);
        if (p->xd16) L->cudnnDestroyTensorDescriptor(p->xd16);
        if (p->yd16) L->cudnnDestroyTensorDescriptor(p->yd16);
        if (p->wd) L->cudnnDestroyFilterDescriptor(p->wd);
        if (p->wd16) L->cudnnDestroyFilterDescriptor(p->wd16);
        if (p->cd) L->cudnnDestroyConvolutionDescriptor(p->cd);
        if (p->cd16) L->cudnnDestroyConvolutionDescriptor(p->cd16);
        if (p->ad) L->cudnnDestroyActivationDescriptor(p->ad);
    }
    for (int i = 0; i < p->ndev; i++) ffu_gpu_free(cb->gpu, p->dev[i]);
    free(p);
}

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

/* ---- convolution (cuDNN) ---------------------------------------------------------------- */

/* Structural checks shared by supports and prepare: 1-D or 2-D, f32, constant weights
 * (and bias), groups dividing the channels, an activation we can apply. */
static int conv_shape_ok(const cu_backend *cb, const nn_graph *g, const nn_node *n)
{
    if (!cb->dnn) return 0;
    const nn_tensor *x = f32_in(g, n, 0), *w = f32_in(g, n, 1), *y = nn_out(g, n, 0);
    if (!x || !w || !is_const(w) || !y || y->dtype != FFU_DTYPE_F32) return 0;
    if (x->shape.rank != 4 && x->shape.rank != 3) return 0;
    if (w->shape.rank != x->shape.rank) return 0;
    if (n->ninputs > 2 && n->inputs[2] >= 0) {
        const nn_tensor *b = f32_in(g, n, 2);
        if (!b || !is_const(b)) return 0;
    }
    if (n->ninputs > 3 && n->inputs[3] >= 0 && !f32_in(g, n, 3)) return 0;
    if (nn_attr_int(n, "_pool", 0) && n->ninputs > 3 && n->inputs[3] >= 0) return 0;
    /* a fused scale (input 4, ir.h): one f32 value, never with a residual */
    if (n->ninputs > 4 && n->inputs[4] >= 0) {
        const nn_tensor *s = f32_in(g, n, 4);
        if (!s || nn_shape_numel(&s->shape) != 1 || n->inputs[3] >= 0) return 0;
    }
    if (n->ninputs > 5) return 0;
    if (!act_ok(g, n)) return 0;
    for (int i = 0; i < x->shape.rank; i++)
        if (x->shape.d[i] <= 0 || x->shape.d[i] > 0x7fffffff) return 0;
    return 1;
}

static ffu_status conv_geometry(const nn_graph *g, const nn_node *n, cu_node *p)
{
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, 1), *y = nn_out(g, n, 0);
    int nd = x->shape.rank - 2;
    int64_t in[3], k[3];
    for (int i = 0; i < nd; i++) in[i] = x->shape.d[2 + i], k[i] = w->shape.d[2 + i];
    nn_window win;
    ffu_status st = nn_window_init(n, NN_WINDOW_CONV, nd, in, k, &win);
    if (st < 0) return st;
    /* slots 1 and 2 are H and W (a 1-D conv has H = 1) */
    p->N = x->shape.d[0];
    p->C = x->shape.d[1];
    p->M = w->shape.d[0];
    p->H = win.in[1];
    p->W = win.in[2];
    p->KH = win.k[1];
    p->KW = win.k[2];
    p->OH = win.out[1];
    p->OW = win.out[2];
    p->pt = win.pad0[1], p->pb = win.pad1[1], p->pl = win.pad0[2], p->pr = win.pad1[2];
    memset(&p->w, 0, sizeof p->w);
    int64_t groups = nn_attr_int(n, "group", 1);
    if (groups < 1 || p->C % groups || p->M % groups || w->shape.d[1] != p->C / groups)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "cuda: groups");
    p->pool = nn_attr_int(n, "_pool", 0) == 2;
    p->prepad = p->pt != p->pb || p->pl != p->pr || p->pt < 0 || p->pl < 0;
    (void)y;
    /* cuDNN's legacy 4-D descriptors hold at most 2^31 - 1 elements per tensor (and take
     * int dims): bigger convolutions are left to ref rather than failing at run time */
    int64_t ih = p->H + (p->prepad ? p->pt + p->pb : 0), iw = p->W + (p->prepad ? p->pl + p->pr : 0);
    const int64_t lim = 0x7fffffff;
    if (p->OH < 1 || p->OW < 1 || p->M < 1 || p->N > lim / p->C || p->N * p->C > lim / (ih * iw) ||
        p->N > lim / p->M || p->N * p->M > lim / (p->OH * p->OW) ||
        p->M > lim / ((p->C / groups) * p->KH * p->KW))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "cuda: convolution too large for cuDNN");
    /* remember the rest for descriptors */
    p->s0[0] = win.stride[1], p->s0[1] = win.stride[2];
    p->s1[0] = win.dil[1], p->s1[1] = win.dil[2];
    p->d[0] = groups;
    return FFU_OK;
}

/* Creates the descriptors of one precision (dt) and picks the algorithm. */
static ffu_status conv_descs(cu_backend *cb, cu_node *p, cudnnDataType_t dt,
                             cudnnTensorDescriptor_t *xd, cudnnTensorDescriptor_t *yd,
                             cudnnFilterDescriptor_t *wd, cudnnConvolutionDescriptor_t *cd,
                             cudnnConvolutionFwdAlgo_t *algo, size_t *ws)
{
    const nn_cuda_libs *L = cb->L;
    ffu_status st;
    int64_t ih = p->prepad ? p->H + p->pt + p->pb : p->H, iw = p->prepad ? p->W + p->pl + p->pr : p->W;
    int ph = p->prepad ? 0 : (int)p->pt, pw = p->prepad ? 0 : (int)p->pl;
    if ((st = dnn_err(cb, L->cudnnCreateTensorDescriptor(xd), "tensor descriptor")) < 0) return st;
    if ((st = dnn_err(cb, L->cudnnCreateTensorDescriptor(yd), "tensor descriptor")) < 0) return st;
    if ((st = dnn_err(cb, L->cudnnCreateFilterDescriptor(wd), "filter descriptor")) < 0) return st;
    if ((st = dnn_err(cb, L->cudnnCreateConvolutionDescriptor(cd), "conv descriptor")) < 0) return st;
    if ((st = dnn_err(cb, L->cudnnSetTensor4dDescriptor(*xd, CUDNN_TENSOR_NCHW, dt, (int)p->N, (int)p->C,
                                                        (int)ih, (int)iw), "input")) < 0)
        return st;
    if ((st = dnn_err(cb, L->cudnnSetTensor4dDescriptor(*yd, CUDNN_TENSOR_NCHW, dt, (int)p->N, (int)p->M,
                                                        (int)p->OH, (int)p->OW), "output")) < 0)
        return st;
    if ((st = dnn_err(cb, L->cudnnSetFilter4dDescriptor(*wd, dt, CUDNN_TENSOR_NCHW, (int)p->M,
                                                        (int)(p->C / p->d[0]), (int)p->KH, (int)p->KW),
                      "filter")) < 0)
        return st;
    /* fp32 accumulation in both precisions (fp16: "pseudo half") */
    if ((st = dnn_err(cb, L->cudnnSetConvolution2dDescriptor(*cd, ph, pw, (int)p->s0[0], (int)p->s0[1],
                                                             (int)p->s1[0], (int)p->s1[1],
                                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                      "conv")) < 0)
        return st;
    if ((st = dnn_err(cb, L->cudnnSetConvolutionGroupCount(*cd, (int)p->d[0]), "groups")) < 0) return st;
    /* fp32 stays fp32 (no TF32: results must match the other backends); fp16 may use
     * tensor cores */
    if ((st = dnn_err(cb, L->cudnnSetConvolutionMathType(
                              *cd, dt == CUDNN_DATA_HALF ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
                      "math type")) < 0)
        return st;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int cnt = 0;
    if ((st = dnn_err(cb, L->cudnnGetConvolutionForwardAlgorithm_v7(cb->dnn, *xd, *wd, *cd, *yd,
                                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                    &cnt, perf),
                      "algorithm heuristics")) < 0)
        return st;
    for (int i = 0; i < cnt; i++) {
        size_t need = 0;
        if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
        /* fp32: only FMA kernels (tensor-op ones would round operands to TF32/fp16) */
        if (dt != CUDNN_DATA_HALF && perf[i].mathType != CUDNN_FMA_MATH &&
            perf[i].mathType != CUDNN_DEFAULT_MATH)
            continue;
        /* transforms round what would be exact integer sums */
        if (p->exact && (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
                         perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED ||
                         perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
                         perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING))
            continue;
        if (L->cudnnGetConvolutionForwardWorkspaceSize(cb->dnn, *xd, *wd, *cd, *yd, perf[i].algo,
                                                       &need) != CUDNN_STATUS_SUCCESS)
            continue;
        if (need > NN_CUDA_MAX_WS) continue;
        *algo = perf[i].algo;
        *ws = need;
        return FFU_OK;
    }
    return ffu_error_set(FFU_ERR_UNSUPPORTED, "cuDNN has no forward algorithm for this convolution");
}

/* Runs the convolution of p: x (device, NCHW), weights w (f32 or fp16 per use16),
 * scale (the fused one, ir.h: one value applied before the bias; may be NULL), bias
 * (may be NULL), residual r (may be NULL, may be y), output y; scratch is the node's
 * scratch. */
static ffu_status conv_exec(cu_backend *cb, cu_node *p, const float *x, const void *w,
                            const float *scale, const float *bias, const float *r, float *y,
                            unsigned char *scratch, int use16)
{
    const nn_cuda_libs *L = cb->L;
    ffu_status st;
    const float one = 1.0f, zero = 0.0f;
    size_t ybytes = (size_t)(p->N * p->M * p->OH * p->OW) * 4;
    float *target = p->pool ? (float *)(scratch + p->y_off) : y;
    const float *xin = x;
    if (p->prepad) {
        int64_t in[4] = {p->N, p->C, p->H, p->W};
        int64_t out[4] = {p->N, p->C, p->H + p->pt + p->pb, p->W + p->pl + p->pr};
        int64_t p0[4] = {0, 0, p->pt, p->pl};
        float fz = 0;
        if ((st = LAUNCH(nn_cu_pad(cb->stream, 4, x, scratch + p->x_off, 4, in, out, p0, 0, &fz))) < 0)
            return st;
        xin = (const float *)(scratch + p->x_off);
    }
    int64_t xn = p->N * p->C * (p->prepad ? (p->H + p->pt + p->pb) * (p->W + p->pl + p->pr) : p->H * p->W);
    int64_t yn = p->N * p->M * p->OH * p->OW;
    if (use16) {
        uint16_t *x16 = (uint16_t *)(scratch + p->x16_off), *y16 = (uint16_t *)(scratch + p->y16_off);
        float *t = (float *)(scratch + p->t_off);
        if ((st = LAUNCH(nn_cu_f32_to_f16(cb->stream, xin, x16, xn))) < 0) return st;
        if ((st = dnn_err(cb, L->cudnnConvolutionForward(cb->dnn, &one, p->xd16, x16, p->wd16, w, p->cd16,
                                                         p->algo16, scratch, p->ws16, &zero, p->yd16, y16),
                          "fp16 convolution")) < 0)
            return st;
        if ((st = LAUNCH(nn_cu_f16_to_f32(cb->stream, y16, t, yn))) < 0) return st;
        /* reads t and r element by element before writing: r may be target */
        if ((st = LAUNCH(nn_cu_channel_affine(cb->stream, t, target, scale, 0, bias, r, p->N, p->M,
                                              p->OH * p->OW, &p->act))) < 0)
            return st;
    } else {
        /* y = act(conv + alpha2 * z + bias), z = the residual. cuDNN documents z and y as
         * separate tensors, so a residual written over in place (z == y, the planner's
         * usual choice) takes the unfused path below, for this call only. Without a
         * residual, alpha2 = 0 and z = y (not read, as for beta = 0). */
        if (p->fused && bias && (!r || r != target)) {
            const float a2 = r ? 1.0f : 0.0f;
            cudnnStatus_t s = L->cudnnConvolutionBiasActivationForward(
                cb->dnn, &one, p->xd, xin, p->wd, w, p->cd, p->algo, scratch, p->ws, &a2, p->yd,
                r ? (const void *)r : (const void *)target, p->bd, bias, p->ad, p->yd, target);
            if (s == CUDNN_STATUS_SUCCESS) goto pooled;
            if (s != CUDNN_STATUS_NOT_SUPPORTED) return dnn_err(cb, s, "fused convolution");
            p->fused = 0; /* this configuration: convolution, then our epilogue */
            snprintf(p->impl, sizeof p->impl, "cudnn conv algo %d + epilogue", (int)p->algo);
        }
        float beta = 0.0f;
        if (r) {
            if (r != target &&
                (st = LAUNCH(cudaMemcpyAsync(target, r, ybytes, cudaMemcpyDeviceToDevice, cb->stream))) < 0)
                return st;
            beta = 1.0f;
        }
        if ((st = dnn_err(cb, L->cudnnConvolutionForward(cb->dnn, &one, p->xd, xin, p->wd, w, p->cd,
                                                         p->algo, scratch, p->ws, &beta, p->yd, target),
                          "convolution")) < 0)
            return st;
        if ((scale || bias || p->act.kind != NN_CU_ACT_NONE) &&
            (st = LAUNCH(nn_cu_channel_affine(cb->stream, target, target, scale, 0, bias, NULL,
                                              p->N, p->M, p->OH * p->OW, &p->act))) < 0)
            return st;
    }
pooled:
    if (p->pool) {
        nn_cu_window pw = {{1, p->OH, p->OW}, {1, p->OH / 2, p->OW / 2}, {1, 2, 2}, {1, 2, 2},
                           {1, 1, 1}, {0, 0, 0}, {0, 0, 0}};
        if ((st = LAUNCH(nn_cu_pool(cb->stream, 1, 0, target, y, p->N * p->M, &pw))) < 0) return st;
    }
    return FFU_OK;
}

/* Normalised mean squared error of b against a. */
static double nmse_f32(const float *a, const float *b, size_t n)
{
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        if (d != d) return 1e30;
        e += d * d;
        r += (double)a[i] * a[i];
    }
    return r > 0 ? e / r : e;
}

/* The fp16 gate: both paths on one fixed-seed input; 1 when fp16 may be used. */
static int conv_fp16_check(cu_backend *cb, cu_node *p, const void *w32, const void *w16,
                           const float *bias, double *err)
{
    int64_t xn = p->N * p->C * p->H * p->W, yn = p->N * p->M * p->OH * p->OW;
    if (p->pool) yn = p->N * p->M * (p->OH / 2) * (p->OW / 2);
    void *x = NULL, *y32 = NULL, *y16 = NULL, *scr = NULL;
    float *h32 = malloc((size_t)yn * 4), *h16 = malloc((size_t)yn * 4);
    int ok = 0;
    *err = -1;
    if (!h32 || !h16) goto out;
    if (ffu_gpu_alloc(cb->gpu, (size_t)xn * 4, &x) < 0 || ffu_gpu_alloc(cb->gpu, (size_t)yn * 4, &y32) < 0 ||
        ffu_gpu_alloc(cb->gpu, (size_t)yn * 4, &y16) < 0 ||
        ffu_gpu_alloc(cb->gpu, p->scratch ? p->scratch : 256, &scr) < 0)
        goto out;
    if (nn_cu_fill_random(cb->stream, x, xn, 0x5eedu) != 0) goto out;
    if (conv_exec(cb, p, x, w32, NULL, bias, NULL, y32, scr, 0) < 0) goto out;
    if (conv_exec(cb, p, x, w16, NULL, bias, NULL, y16, scr, 1) < 0) goto out;
    if (cudaMemcpyAsync(h32, y32, (size_t)yn * 4, cudaMemcpyDeviceToHost, cb->stream) != cudaSuccess ||
        cudaMemcpyAsync(h16, y16, (size_t)yn * 4, cudaMemcpyDeviceToHost, cb->stream) != cudaSuccess ||
        cudaStreamSynchronize(cb->stream) != cudaSuccess)
        goto out;
    *err = nmse_f32(h32, h16, (size_t)yn);
    ok = *err <= NN_CUDA_FP16_NMSE;
out:
    (void)cudaGetLastError();
    ffu_error_clear();
    cudaStreamSynchronize(cb->stream);
    ffu_gpu_free(cb->gpu, x);
    ffu_gpu_free(cb->gpu, y32);
    ffu_gpu_free(cb->gpu, y16);
    ffu_gpu_free(cb->gpu, scr);
    free(h32);
    free(h16);
    return ok;
}

static ffu_status build_conv(cu_backend *cb, const nn_graph *g, const nn_node *n, cu_node *p,
                             int prepare)
{
    const nn_cuda_libs *L = cb->L;
    ffu_status st;
    if ((st = conv_geometry(g, n, p)) < 0) return st;
    p->exact = nn_attr_int(n, "_exact", 0) != 0;
    const nn_tensor *y = nn_out(g, n, 0);
    const nn_tensor *b = n->ninputs > 2 && n->inputs[2] >= 0 ? nn_in(g, n, 2) : NULL;
    if ((st = conv_descs(cb, p, CUDNN_DATA_FLOAT, &p->xd, &p->yd, &p->wd, &p->cd, &p->algo, &p->ws)) < 0)
        return st;
    if (prepare && (st = make_act(cb, g, n, p, &y->shape)) < 0) return st;
    /* for the pool, the activation is on the full-size convolution output */
    p->act.channels = p->M;
    p->act.inner = p->OH * p->OW;
    /* cuDNN fuses bias + ReLU (identity only with one algorithm: not worth a special case) */
    p->fused = n->act.kind == NN_ACT_RELU && b && !(n->ninputs > 4 && n->inputs[4] >= 0);
    if (p->fused) {
        if ((st = dnn_err(cb, L->cudnnCreateTensorDescriptor(&p->bd), "bias descriptor")) < 0 ||
            (st = dnn_err(cb, L->cudnnSetTensor4dDescriptor(p->bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                                            (int)p->M, 1, 1), "bias")) < 0 ||
            (st = dnn_err(cb, L->cudnnCreateActivationDescriptor(&p->ad), "activation")) < 0 ||
            (st = dnn_err(cb, L->cudnnSetActivationDescriptor(p->ad, CUDNN_ACTIVATION_RELU,
                                                              CUDNN_NOT_PROPAGATE_NAN, 0.0), "relu")) < 0)
            return st;
    }
    /* scratch: [cuDNN workspace][padded input][fp16 x][fp16 y][f32 t][pool input] */
    size_t at = align256(p->ws);
    int64_t xn = p->N * p->C * (p->prepad ? (p->H + p->pt + p->pb) * (p->W + p->pl + p->pr) : p->H * p->W);
    int64_t yn = p->N * p->M * p->OH * p->OW;
    if (p->prepad) p->x_off = at, at += align256((size_t)xn * 4);
    if (p->pool) p->y_off = at, at += align256((size_t)yn * 4);
    snprintf(p->impl, sizeof p->impl, "cudnn conv algo %d%s%s", (int)p->algo,
             p->fused ? " +bias+relu" : " + epilogue", p->prepad ? " (padded)" : "");
    /* fp16: descriptors, fp16 weights, the accuracy check */
    if (cb->base.fp16) {
        if (conv_descs(cb, p, CUDNN_DATA_HALF, &p->xd16, &p->yd16, &p->wd16, &p->cd16, &p->algo16,
                       &p->ws16) == FFU_OK) {
            p->have16 = 1;
            size_t ws = p->ws16 > p->ws ? p->ws16 : p->ws;
            size_t at16 = align256(ws);
            if (p->prepad) p->x_off = at16, at16 += align256((size_t)xn * 4);
            if (p->pool) p->y_off = at16, at16 += align256((size_t)yn * 4);
            p->x16_off = at16, at16 += align256((size_t)xn * 2);
            p->y16_off = at16, at16 += align256((size_t)yn * 2);
            p->t_off = at16, at16 += align256((size_t)yn * 4);
            at = at16;
        } else {
            ffu_error_clear();
        }
    }
    p->scratch = at;
    return FFU_OK;
}

/* prepare only: weights and bias for the fp16 path and its gate. The f32 weights and
 * bias are the session's uploaded constants (run()'s inputs). */
static ffu_status conv_prepare16(cu_backend *cb, const nn_graph *g, const nn_node *n, cu_node *p)
{
    /* xd16 alone does not say the fp16 set-up worked: conv_descs may fail after making it */
    /* fp16 rounds what would be exact integer sums */
    if (!cb->base.fp16 || !p->have16 || p->exact) return FFU_OK;
    const nn_tensor *w = nn_in(g, n, 1);
    const nn_tensor *b = n->ninputs > 2 && n->inputs[2] >= 0 ? nn_in(g, n, 2) : NULL;
    int64_t wn = nn_shape_numel(&w->shape);
    uint16_t *h16 = malloc((size_t)wn * 2);
    if (!h16) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < wn; i++) h16[i] = nn_f32_to_f16(((const float *)w->data)[i]);
    void *w16 = NULL, *w32 = NULL, *bd = NULL;
    ffu_status st = own_upload(cb, p, h16, (size_t)wn * 2, &w16);
    free(h16);
    if (st < 0) return st;
    /* f32 copies for the check (freed with the node) */
    if ((st = own_upload(cb, p, w->data, w->nbytes, &w32)) < 0) return st;
    if (b && (st = own_upload(cb, p, b->data, b->nbytes, &bd)) < 0) return st;
    double err;
    p->use16 = conv_fp16_check(cb, p, w32, w16, bd, &err);
    /* the check's buffers are not needed any more (w16 stays: dev[idx of w16]) */
    ffu_gpu_free(cb->gpu, w32);
    ffu_gpu_free(cb->gpu, bd);
    for (int i = 0; i < p->ndev; i++)
        if (p->dev[i] == w32 || (bd && p->dev[i] == bd)) p->dev[i] = p->dev[--p->ndev], i--;
    p->w16 = w16;
    if (p->use16) {
        snprintf(p->impl, sizeof p->impl, "fp16 cudnn conv algo %d (nmse %.1e)", (int)p->algo16, err);
        p->fused = 0;
    }
    return FFU_OK;
}

/* ---- GEMM / MatMul (cuBLAS) ------------------------------------------------------------- */

static int build_gemm(cu_backend *cb, const nn_graph *g, const nn_node *n, cu_node *p)
{
    if (!cb->blas || !act_ok(g, n)) return 0;
    const nn_tensor *a = f32_in(g, n, 0), *b = f32_in(g, n, 1), *y = nn_out(g, n, 0);
    if (!a || !b || a->shape.rank != 2 || b->shape.rank != 2 || !y) return 0;
    p->ta = nn_attr_int(n, "transA", 0) != 0;
    p->tb = nn_attr_int(n, "transB", 0) != 0;
    p->gM = p->ta ? a->shape.d[1] : a->shape.d[0];
    p->gK = p->ta ? a->shape.d[0] : a->shape.d[1];
    p->gN = p->tb ? b->shape.d[0] : b->shape.d[1];
    p->alpha = nn_attr_float(n, "alpha", 1.0f);
    p->beta = nn_attr_float(n, "beta", 1.0f);
    p->has_c = n->ninputs > 2 && n->inputs[2] >= 0;
    /* empty operands are ref's (cuBLAS rejects ld = 0, and K = 0 must still write C) */
    if (p->gM < 1 || p->gN < 1 || p->gK < 1) return 0;
    if (p->gM > 0x7fffffff || p->gN > 0x7fffffff || p->gK > 0x7fffffff) return 0;
    if (p->has_c) {
        const nn_tensor *c = f32_in(g, n, 2);
        if (!c || c->shape.rank > 2) return 0;
        /* C broadcast to [M, N] (numpy rules, right-aligned) */
        int64_t cm = c->shape.rank == 2 ? c->shape.d[0] : 1;
        int64_t cn = c->shape.rank >= 1 ? c->shape.d[c->shape.rank - 1] : 1;
        if ((cm != 1 && cm != p->gM) || (cn != 1 && cn != p->gN)) return 0;
        p->rank = 2;
        p->d[0] = p->gM, p->d[1] = p->gN;
        p->s0[0] = cm == 1 ? 0 : cn;
        p->s0[1] = cn == 1 ? 0 : 1;
    }
    p->kind = K_GEMM;
    p->batch = 1;
    snprintf(p->impl, sizeof p->impl, "cublas sgemm");
    return 1;
}

static int build_matmul(cu_backend *cb, const nn_graph *g, const nn_node *n, cu_node *p)
{
    if (!cb->blas || !act_ok(g, n)) return 0;
    const nn_tensor *a = f32_in(g, n, 0), *b = f32_in(g, n, 1), *y = nn_out(g, n, 0);
    if (!a || !b || !y || a->shape.rank < 1 || b->shape.rank < 1) return 0;
    const nn_shape *sa = &a->shape, *sb = &b->shape;
    int a1 = sa->rank == 1, b1 = sb->rank == 1;
    p->gM = a1 ? 1 : sa->d[sa->rank - 2];
    p->gK = sa->d[sa->rank - 1];
    p->gN = b1 ? 1 : sb->d[sb->rank - 1];
    if (p->gM < 1 || p->gN < 1 || p->gK < 1) return 0; /* empty: ref */
    if (p->gM > 0x7fffffff || p->gN > 0x7fffffff || p->gK > 0x7fffffff) return 0;
    /* batch: each operand's batch dims are either all 1 (shared) or the output's */
    int ra = a1 ? 0 : sa->rank - 2, rb = b1 ? 0 : sb->rank - 2;
    int64_t na = 1, nb = 1;
    for (int i = 0; i < ra; i++) na *= sa->d[i];
    for (int i = 0; i < rb; i++) nb *= sb->d[i];
    int64_t nbatch = na > nb ? na : nb;
    if ((na != 1 && na != nbatch) || (nb != 1 && nb != nbatch)) return 0;
    if (na == nbatch && nb == nbatch && na > 1 && ra != rb) {
        /* same count but maybe a different broadcast: require equal dims */
        return 0;
    }
    if (na > 1 && nb > 1)
        for (int i = 0; i < ra; i++)
            if (sa->d[i] != sb->d[i]) return 0;
    /* cuBLAS takes an int batch count; M * N per item is its int64 stride */
    if (nbatch < 1 || nbatch > 0x7fffffff) return 0;
    p->batch = nbatch;
    p->sA = na == 1 ? 0 : p->gM * p->gK;
    p->sB = nb == 1 ? 0 : p->gK * p->gN;
    p->alpha = 1.0f;
    p->beta = 0.0f;
    p->kind = K_MATMUL;
    snprintf(p->impl, sizeof p->impl, "cublas sgemm batched x%lld", (long long)nbatch);
    return 1;
}

/* Y[M,N] (row-major) = op(A) op(B), as column-major Y^T = op(B)^T op(A)^T. */
static ffu_status gemm_exec(cu_backend *cb, cu_node *p, const float *A, const float *B, float *Y,
                            float beta)
{
    int M = (int)p->gM, N = (int)p->gN, K = (int)p->gK;
    cublasOperation_t opb = p->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = p->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb = p->tb ? K : N, lda = p->ta ? M : K;
    return blas_err(cb->L->cublasSgemmStridedBatched(cb->blas, opb, opa, N, M, K, &p->alpha, B, ldb,
                                                     p->sB, A, lda, p->sA, &beta, Y, N,
                                                     (long long)M * N, (int)p->batch),
                    "sgemm");
}

/* ---- the other ops ---------------------------------------------------------------------- */

static int unary_code(nn_op op)
{
    switch (op) {
    case NN_OP_RELU: return NN_CU_RELU;
    case NN_OP_LEAKY_RELU: return NN_CU_LEAKY_RELU;
    case NN_OP_CLIP: return NN_CU_CLIP;
    case NN_OP_SIGMOID: return NN_CU_SIGMOID;
    case NN_OP_TANH: return NN_CU_TANH;
    case NN_OP_ELU: return NN_CU_ELU;
    case NN_OP_SELU: return NN_CU_SELU;
    case NN_OP_HARD_SIGMOID: return NN_CU_HARD_SIGMOID;
    case NN_OP_HARD_SWISH: return NN_CU_HARD_SWISH;
    case NN_OP_SOFTPLUS: return NN_CU_SOFTPLUS;
    case NN_OP_SQRT: return NN_CU_SQRT;
    case NN_OP_EXP: return NN_CU_EXP;
    case NN_OP_LOG: return NN_CU_LOG;
    case NN_OP_NEG: return NN_CU_NEG;
    case NN_OP_ABS: return NN_CU_ABS;
    case NN_OP_RECIPROCAL: return NN_CU_RECIPROCAL;
    case NN_OP_ERF: return NN_CU_ERF;
    case NN_OP_FLOOR: return NN_CU_FLOOR;
    case NN_OP_CEIL: return NN_CU_CEIL;
    case NN_OP_ROUND: return NN_CU_ROUND;
    case NN_OP_SIGN: return NN_CU_SIGN;
    case NN_OP_SIN: return NN_CU_SIN;
    case NN_OP_COS: return NN_CU_COS;
    case NN_OP_RSQRT: return NN_CU_RSQRT;
    case NN_OP_SQUARE: return NN_CU_SQUARE;
    case NN_OP_RELU6: return NN_CU_RELU6;
    default: return -1;
    }
}

static int binary_code(nn_op op)
{
    switch (op) {
    case NN_OP_ADD: case NN_OP_SUM: case NN_OP_MEAN: return NN_CU_ADD;
    case NN_OP_SUB: return NN_CU_SUB;
    case NN_OP_MUL: return NN_CU_MUL;
    case NN_OP_DIV: return NN_CU_DIV;
    case NN_OP_POW: return NN_CU_POW;
    case NN_OP_MAX: return NN_CU_MAX;
    case NN_OP_MIN: return NN_CU_MIN;
    case NN_OP_PRELU: return NN_CU_PRELU;
    default: return -1;
    }
}

/* Element strides of input shape s broadcast to out (right-aligned; 0 where broadcast). */
static void bcast_strides(const nn_shape *s, const nn_shape *out, int64_t *st)
{
    int64_t acc = 1;
    for (int i = out->rank - 1, j = s->rank - 1; i >= 0; i--, j--) {
        if (j < 0) {
            st[i] = 0;
            continue;
        }
        st[i] = s->d[j] == 1 && out->d[i] != 1 ? 0 : acc;
        acc *= s->d[j];
    }
}

static int all_f32(const nn_graph *g, const nn_node *n)
{
    for (int i = 0; i < n->ninputs; i++)
        if (n->inputs[i] >= 0 && !f32_in(g, n, i)) return 0;
    const nn_tensor *y = nn_out(g, n, 0);
    return y && y->dtype == FFU_DTYPE_F32 && nn_shape_known(&y->shape);
}

static int dtype_movable(ffu_dtype t)
{
    size_t s = ffu_dtype_size(t);
    return s == 1 || s == 2 || s == 4 || s == 8;
}

/* Fills p for node n (or only checks when the op needs nothing at prepare). Returns 1
 * when this backend runs n. Device buffers are made only with `prepare`. */
static int build(cu_backend *cb, const nn_graph *g, const nn_node *n, cu_node *p, int prepare,
                 ffu_status *err)
{
    *err = FFU_OK;
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0);
    if (!y || !nn_shape_known(&y->shape) || n->noutputs < 1) return 0;
    for (int j = 1; j < n->noutputs; j++) /* one output, but for Split */
        if (n->outputs[j] >= 0 && n->op != NN_OP_SPLIT) return 0;
    if (y->shape.rank > NN_CU_MAX_RANK) return 0;
    int u = unary_code(n->op), bc = binary_code(n->op);
    memset(p, 0, sizeof *p);
    if (n->op == NN_OP_CONV) {
        if (!conv_shape_ok(cb, g, n)) return 0;
        p->kind = K_CONV;
        if ((*err = build_conv(cb, g, n, p, prepare)) < 0) {
            if (*err == FFU_ERR_UNSUPPORTED) ffu_error_clear(), *err = FFU_OK;
            return 0;
        }
        return 1;
    }
    if (n->op == NN_OP_GEMM) return build_gemm(cb, g, n, p);
    if (n->op == NN_OP_MATMUL) return build_matmul(cb, g, n, p);
    if (u >= 0) {
        if (!all_f32(g, n) || n->act.kind != NN_ACT_NONE) return 0;
        p->kind = K_UNARY;
        p->op = u;
        p->n = nn_shape_numel(&y->shape);
        switch (n->op) {
        case NN_OP_LEAKY_RELU: p->a = nn_attr_float(n, "alpha", 0.01f); break;
        case NN_OP_ELU: p->a = nn_attr_float(n, "alpha", 1.0f); break;
        case NN_OP_SELU:
            p->a = nn_attr_float(n, "alpha", 1.67326319217681884765625f);
            p->g = nn_attr_float(n, "gamma", 1.05070102214813232421875f);
            break;
        case NN_OP_HARD_SIGMOID:
            p->a = nn_attr_float(n, "alpha", 0.2f);
            p->b = nn_attr_float(n, "beta", 0.5f);
            break;
        case NN_OP_CLIP: {
            p->a = -INFINITY, p->b = INFINITY;
            for (int i = 1; i < n->ninputs && i < 3; i++) {
                const nn_tensor *t = n->inputs[i] >= 0 ? nn_in(g, n, i) : NULL;
                if (!t) continue;
                if (!is_const(t)) return 0; /* bounds are read at prepare */
                if (nn_shape_numel(&t->shape) != 1) continue;
                *(i == 1 ? &p->a : &p->b) = *(const float *)t->data;
            }
            break;
        }
        default: break;
        }
        snprintf(p->impl, sizeof p->impl, "kernel unary");
        return 1;
    }
    if (bc >= 0) {
        if (!all_f32(g, n) || n->ninputs < 1 || !act_ok(g, n)) return 0;
        if ((n->op != NN_OP_SUM && n->op != NN_OP_MEAN && n->op != NN_OP_MAX && n->op != NN_OP_MIN) &&
            n->ninputs != 2)
            return 0;
        for (int i = 0; i < n->ninputs; i++)
            if (n->inputs[i] < 0 || nn_in(g, n, i)->shape.rank > y->shape.rank) return 0;
        p->kind = K_BINARY;
        p->op = bc;
        p->rank = y->shape.rank;
        memcpy(p->d, y->shape.d, sizeof(int64_t) * (size_t)p->rank);
        p->n = nn_shape_numel(&y->shape);
        if (n->op == NN_OP_MEAN) p->a = (float)(1.0 / n->ninputs);
        if (prepare && (*err = make_act(cb, g, n, p, &y->shape)) < 0) return 0;
        snprintf(p->impl, sizeof p->impl, "kernel binary");
        return 1;
    }
    switch (n->op) {
    case NN_OP_BATCH_NORM: {
        if (!all_f32(g, n) || n->ninputs != 5 || !act_ok(g, n) || x->shape.rank < 2) return 0;
        for (int i = 1; i < 5; i++)
            if (!is_const(nn_in(g, n, i)) || nn_shape_numel(&nn_in(g, n, i)->shape) != x->shape.d[1]) return 0;
        p->kind = K_AFFINE;
        p->outer = x->shape.d[0];
        p->channels = x->shape.d[1];
        p->inner = nn_dims_prod(&x->shape, 2, x->shape.rank);
        if (prepare) {
            int64_t C = p->channels;
            float *ab = malloc((size_t)C * 8);
            if (!ab) return *err = ffu_error_set(FFU_ERR_NOMEM, "out of memory"), 0;
            const float *sc = nn_in(g, n, 1)->data, *B = nn_in(g, n, 2)->data,
                        *mean = nn_in(g, n, 3)->data, *var = nn_in(g, n, 4)->data;
            double eps = nn_attr_float(n, "epsilon", 1e-5f);
            for (int64_t c = 0; c < C; c++) {
                double a = sc[c] / sqrt((double)var[c] + eps);
                ab[c] = (float)a;
                ab[C + c] = (float)(B[c] - mean[c] * a);
            }
            void *d;
            *err = own_upload(cb, p, ab, (size_t)C * 8, &d);
            free(ab);
            if (*err < 0) return 0;
            if ((*err = make_act(cb, g, n, p, &y->shape)) < 0) return 0;
        }
        snprintf(p->impl, sizeof p->impl, "kernel channel affine");
        return 1;
    }
    case NN_OP_INSTANCE_NORM: {
        if (!all_f32(g, n) || n->ninputs != 3 || x->shape.rank < 3 || n->act.kind != NN_ACT_NONE) return 0;
        if (!is_const(nn_in(g, n, 1)) || !is_const(nn_in(g, n, 2))) return 0;
        p->kind = K_INORM;
        p->channels = x->shape.d[1];
        p->outer = x->shape.d[0] * p->channels;
        p->len = nn_dims_prod(&x->shape, 2, x->shape.rank);
        p->a = nn_attr_float(n, "epsilon", 1e-5f);
        snprintf(p->impl, sizeof p->impl, "kernel instance norm");
        return 1;
    }
    case NN_OP_MAX_POOL:
    case NN_OP_AVERAGE_POOL: {
        if (!all_f32(g, n) || x->shape.rank < 3 || x->shape.rank > 5 || n->act.kind != NN_ACT_NONE) return 0;
        int nd = x->shape.rank - 2;
        int64_t in[3];
        for (int i = 0; i < nd; i++) in[i] = x->shape.d[2 + i];
        nn_window w;
        if (nn_window_init(n, NN_WINDOW_POOL, nd, in, NULL, &w) < 0) {
            ffu_error_clear();
            return 0;
        }
        p->kind = K_POOL;
        p->max = n->op == NN_OP_MAX_POOL;
        p->incl = nn_attr_int(n, "count_include_pad", 0) != 0;
        for (int i = 0; i < 3; i++) {
            p->w.in[i] = w.in[i], p->w.out[i] = w.out[i], p->w.k[i] = w.k[i];
            p->w.stride[i] = w.stride[i], p->w.dil[i] = w.dil[i];
            p->w.pad0[i] = w.pad0[i], p->w.pad1[i] = w.pad1[i];
        }
        p->outer = x->shape.d[0] * x->shape.d[1];
        snprintf(p->impl, sizeof p->impl, "kernel %s pool", p->max ? "max" : "average");
        return 1;
    }
    case NN_OP_GLOBAL_AVERAGE_POOL:
    case NN_OP_GLOBAL_MAX_POOL:
        if (!all_f32(g, n) || x->shape.rank < 3) return 0;
        p->kind = K_GPOOL;
        p->max = n->op == NN_OP_GLOBAL_MAX_POOL;
        p->outer = x->shape.d[0] * x->shape.d[1];
        p->len = nn_dims_prod(&x->shape, 2, x->shape.rank);
        snprintf(p->impl, sizeof p->impl, "kernel global pool");
        return 1;
    case NN_OP_SOFTMAX:
    case NN_OP_LOG_SOFTMAX:
        if (!all_f32(g, n) || n->act.kind != NN_ACT_NONE) return 0;
        if (nn_softmax_geom(n, &x->shape, &p->outer, &p->len, &p->inner) < 0) {
            ffu_error_clear();
            return 0;
        }
        p->kind = K_SOFTMAX;
        p->log_form = n->op == NN_OP_LOG_SOFTMAX;
        snprintf(p->impl, sizeof p->impl, "kernel softmax");
        return 1;
    case NN_OP_TRANSPOSE: {
        if (!x || !dtype_movable(x->dtype) || !nn_shape_known(&x->shape)) return 0;
        int r = x->shape.rank, cnt = 0;
        const int64_t *perm = nn_attr_ints(n, "perm", &cnt);
        int64_t xs[NN_CU_MAX_RANK];
        nn_strides(&x->shape, xs);
        p->rank = r;
        for (int i = 0; i < r; i++) {
            int64_t a = cnt == r ? perm[i] : r - 1 - i;
            if (a < 0) a += r;
            if (a < 0 || a >= r) return 0;
            p->d[i] = y->shape.d[i];
            p->s0[i] = xs[a];
        }
        p->kind = K_STRIDED;
        p->esize = ffu_dtype_size(x->dtype);
        snprintf(p->impl, sizeof p->impl, "kernel transpose");
        return 1;
    }
    case NN_OP_EXPAND: {
        if (!x || !dtype_movable(x->dtype) || x->shape.rank > y->shape.rank) return 0;
        p->rank = y->shape.rank;
        memcpy(p->d, y->shape.d, sizeof(int64_t) * (size_t)p->rank);
        bcast_strides(&x->shape, &y->shape, p->s0);
        p->kind = K_STRIDED;
        p->esize = ffu_dtype_size(x->dtype);
        snprintf(p->impl, sizeof p->impl, "kernel expand");
        return 1;
    }
    case NN_OP_CONCAT:
    case NN_OP_SPLIT: { /* pieces of one tensor along an axis: the inputs into the output, or
                         * the input into the outputs (every output present) */
        int split = n->op == NN_OP_SPLIT, npieces = split ? n->noutputs : n->ninputs;
        const nn_tensor *whole = split ? x : y;
        if (!whole || !dtype_movable(whole->dtype) || !nn_shape_known(&whole->shape)) return 0;
        int64_t axis = nn_attr_int(n, "axis", 0);
        if (axis < 0) axis += whole->shape.rank;
        if (axis < 0 || axis >= whole->shape.rank) return 0;
        int64_t sum = 0;
        for (int i = 0; i < npieces; i++) {
            const nn_tensor *t = split ? nn_out(g, n, i) : nn_in(g, n, i);
            if (!t || t->dtype != whole->dtype || !nn_shape_known(&t->shape) ||
                t->shape.rank != whole->shape.rank)
                return 0;
            sum += t->shape.d[axis];
        }
        if (sum != whole->shape.d[axis]) return 0;
        p->kind = K_PIECES;
        p->op = split;
        p->esize = ffu_dtype_size(whole->dtype);
        p->outer = nn_dims_prod(&whole->shape, 0, (int)axis);
        p->inner = nn_dims_prod(&whole->shape, (int)axis + 1, whole->shape.rank);
        p->len = whole->shape.d[axis];
        p->rank = (int)axis;
        snprintf(p->impl, sizeof p->impl, "memcpy2d %s", split ? "split" : "concat");
        return 1;
    }
    case NN_OP_RESHAPE:
    case NN_OP_FLATTEN:
    case NN_OP_SQUEEZE:
    case NN_OP_UNSQUEEZE:
    case NN_OP_IDENTITY:
        if (!x || nn_tensor_bytes(x) != nn_tensor_bytes(y)) return 0;
        p->kind = K_COPY;
        p->n = (int64_t)nn_tensor_bytes(y);
        snprintf(p->impl, sizeof p->impl, "view copy");
        return 1;
    case NN_OP_PAD: {
        if (!x || !dtype_movable(x->dtype) || x->shape.rank > NN_CU_MAX_RANK) return 0;
        int64_t p1[FFU_NN_MAX_RANK];
        if (nn_pad_geom(g, n, x->shape.rank, &p->mode, p->p0, p1) < 0) {
            ffu_error_clear();
            return 0;
        }
        for (int i = 0; i < x->shape.rank; i++)
            if (x->shape.d[i] == 0 && y->shape.d[i] > 0 && p->mode != 0) return 0;
        p->kind = K_PAD;
        p->esize = ffu_dtype_size(x->dtype);
        p->rank = x->shape.rank;
        memset(p->fill, 0, sizeof p->fill);
        if (p->mode == 0 && n->ninputs > 2 && n->inputs[2] >= 0) {
            const nn_tensor *v = nn_in(g, n, 2);
            if (!is_const(v) || v->dtype != x->dtype) return 0;
            if (nn_shape_numel(&v->shape) >= 1) memcpy(p->fill, v->data, p->esize);
        }
        snprintf(p->impl, sizeof p->impl, "kernel pad");
        return 1;
    }
    case NN_OP_SLICE: {
        /* the ref kernel is a strided copy too: the same offsets from the same helper */
        if (!x || !dtype_movable(x->dtype)) return 0;
        for (int i = 1; i < n->ninputs; i++)
            if (n->inputs[i] >= 0 && !is_const(nn_in(g, n, i))) return 0;
        /* starts/ends/axes/steps, ONNX clamping (movement.c does the same) */
        int64_t st[FFU_NN_MAX_RANK], en[FFU_NN_MAX_RANK], ax[FFU_NN_MAX_RANK], sp[FFU_NN_MAX_RANK];
        int ns = 0, ne = 0, na = 0, nsp = 0, r = x->shape.rank;
        if (n->ninputs < 3) return 0; /* opset < 10 attributes: left to ref */
        if (nn_const_ints(n, nn_in(g, n, 1), st, FFU_NN_MAX_RANK, &ns) <= 0 ||
            nn_const_ints(n, nn_in(g, n, 2), en, FFU_NN_MAX_RANK, &ne) <= 0 || ns != ne) {
            ffu_error_clear();
            return 0;
        }
        if (n->ninputs > 3 && n->inputs[3] >= 0) {
            if (nn_const_ints(n, nn_in(g, n, 3), ax, FFU_NN_MAX_RANK, &na) <= 0 || na != ns) {
                ffu_error_clear();
                return 0;
            }
        } else {
            for (int i = 0; i < ns; i++) ax[i] = i;
        }
        if (n->ninputs > 4 && n->inputs[4] >= 0) {
            if (nn_const_ints(n, nn_in(g, n, 4), sp, FFU_NN_MAX_RANK, &nsp) <= 0 || nsp != ns) {
                ffu_error_clear();
                return 0;
            }
        } else {
            for (int i = 0; i < ns; i++) sp[i] = 1;
        }
        int64_t xs[NN_CU_MAX_RANK], start[NN_CU_MAX_RANK] = {0}, step[NN_CU_MAX_RANK];
        nn_strides(&x->shape, xs);
        for (int i = 0; i < r; i++) step[i] = 1;
        for (int i = 0; i < ns; i++) {
            int64_t a = ax[i] < 0 ? ax[i] + r : ax[i], dim;
            if (a < 0 || a >= r || sp[i] == 0) return 0;
            dim = x->shape.d[a];
            int64_t s = st[i] < 0 ? st[i] + dim : st[i];
            if (sp[i] > 0) s = s < 0 ? 0 : s > dim ? dim : s;
            else s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            start[a] = s;
            step[a] = sp[i];
        }
        p->rank = r;
        p->base = 0;
        for (int i = 0; i < r; i++) {
            p->d[i] = y->shape.d[i];
            p->s0[i] = xs[i] * step[i];
            if (p->d[i] > 0) p->base += start[i] * xs[i];
        }
        p->kind = K_STRIDED;
        p->esize = ffu_dtype_size(x->dtype);
        snprintf(p->impl, sizeof p->impl, "kernel slice");
        return 1;
    }
    case NN_OP_GATHER: {
        const nn_tensor *ix = nn_in(g, n, 1);
        if (!x || !ix || !dtype_movable(x->dtype) || !is_const(ix)) return 0;
        if (ix->dtype != FFU_DTYPE_I64 && ix->dtype != FFU_DTYPE_I32) return 0;
        int64_t axis = nn_attr_int(n, "axis", 0);
        if (axis < 0) axis += x->shape.rank;
        if (axis < 0 || axis >= x->shape.rank) return 0;
        int64_t ni = nn_shape_numel(&ix->shape), len = x->shape.d[axis];
        p->kind = K_GATHER;
        p->esize = ffu_dtype_size(x->dtype);
        p->outer = nn_dims_prod(&x->shape, 0, (int)axis);
        p->inner = nn_dims_prod(&x->shape, (int)axis + 1, x->shape.rank);
        p->len = len;
        p->n = ni;
        int64_t *h = malloc((size_t)(ni ? ni : 1) * 8);
        if (!h) return 0;
        for (int64_t i = 0; i < ni; i++) {
            int64_t v = nn_load_int(ix->data, ix->dtype, i);
            if (v < 0) v += len;
            if (v < 0 || v >= len) { /* ref reports the error */
                free(h);
                return 0;
            }
            h[i] = v;
        }
        if (prepare) {
            void *d;
            *err = own_upload(cb, p, h, (size_t)ni * 8, &d);
        }
        free(h);
        snprintf(p->impl, sizeof p->impl, "kernel gather");
        return *err == FFU_OK;
    }
    case NN_OP_RESIZE:
    case NN_OP_UPSAMPLE: {
        if (!x || !dtype_movable(x->dtype) || x->shape.rank > NN_CU_MAX_RANK) return 0;
        /* a fused Add (ir.h): the sum in the resize kernel, then the activation in place */
        const int sum = n->ninputs > 4 && n->inputs[4] >= 0;
        if (n->ninputs > 5 || (sum && (!f32_in(g, n, 0) || !f32_in(g, n, 4) || !act_ok(g, n))))
            return 0;
        const nn_op_def *def = nn_op_get(n->op);
        size_t tb = def->scratch_bytes ? def->scratch_bytes(g, n) : 0;
        nn_resize_tap *tab = malloc(tb ? tb : sizeof(nn_resize_tap));
        nn_resize_info info;
        if (!tab) return 0;
        if (nn_resize_taps(g, n, &info, tab) < 0 || (info.linear && x->dtype != FFU_DTYPE_F32)) {
            ffu_error_clear();
            free(tab);
            return 0;
        }
        p->kind = K_RESIZE;
        p->n = nn_shape_numel(&nn_out(g, n, 0)->shape);
        p->esize = ffu_dtype_size(x->dtype);
        p->rank = info.rank;
        p->op = info.linear;
        int64_t total = 0;
        for (int d = 0; d < info.rank; d++) {
            p->d[d] = info.out[d];
            p->s0[d] = info.in[d];
            p->ntap[d] = info.ntap[d];
            total += info.out[d];
        }
        memcpy(p->fill, info.fill, sizeof p->fill);
        if (prepare) {
            nn_cu_tap *ct = malloc(sizeof(nn_cu_tap) * (size_t)(total ? total : 1));
            if (!ct) {
                free(tab);
                *err = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
                return 0;
            }
            for (int64_t i = 0; i < total; i++)
                for (int j = 0; j < 4; j++) ct[i].idx[j] = tab[i].idx[j], ct[i].w[j] = (float)tab[i].w[j];
            void *d;
            *err = own_upload(cb, p, ct, sizeof(nn_cu_tap) * (size_t)total, &d);
            free(ct);
        }
        free(tab);
        /* after the taps: they are dev[0] (a PReLU's slopes come next) */
        if (sum && prepare && *err == FFU_OK) *err = make_act(cb, g, n, p, &nn_out(g, n, 0)->shape);
        snprintf(p->impl, sizeof p->impl, "kernel resize %s%s", info.linear ? "linear" : "nearest",
                 sum ? " + add" : "");
        return *err == FFU_OK;
    }
    default:
        return 0;
    }
}

/* ---- the vtable -------------------------------------------------------------------------- */

static int cu_supports(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    cu_backend *cb = (cu_backend *)b;
    /* build() queries cuDNN heuristics with the backend's handle: its device must be
     * current on this thread */
    if (ffu_gpu_make_current(cb->gpu) < 0) {
        ffu_error_clear();
        return 0;
    }
    cu_node *p = calloc(1, sizeof *p);
    if (!p) return 0;
    ffu_status err;
    int ok = build(cb, g, n, p, 0, &err);
    node_free(cb, p);
    ffu_error_clear();
    return ok && err == FFU_OK;
}

static ffu_status cu_prepare(nn_backend *b, nn_graph *g, nn_node *n)
{
    cu_backend *cb = (cu_backend *)b;
    ffu_status st = ffu_gpu_make_current(cb->gpu);
    if (st < 0) return st;
    cu_node *p = calloc(1, sizeof *p);
    if (!p) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    if (!build(cb, g, n, p, 1, &st)) {
        node_free(cb, p);
        return st < 0 ? st : nn_node_error(n, FFU_ERR_INTERNAL, "cuda: supported, then not");
    }
    if (p->kind == K_CONV && (st = conv_prepare16(cb, g, n, p)) < 0) {
        node_free(cb, p);
        return st;
    }
    if ((p->kind == K_GEMM || p->kind == K_MATMUL) &&
        (st = make_act(cb, g, n, p, &nn_out(g, n, 0)->shape)) < 0) {
        node_free(cb, p);
        return st;
    }
    n->priv = p;
    return FFU_OK;
}

static size_t cu_scratch_bytes(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    const cu_node *p = n->priv;
    return p ? p->scratch : 0;
}

/* The node's fused activation applied to its own output (variadic Sum/Mean/Max/Min,
 * whose binary kernel steps cannot carry it on every step). */
static ffu_status fused_act_in_place(cudaStream_t s, const cu_node *p, float *y)
{
    if (p->act.kind == NN_CU_ACT_NONE) return FFU_OK;
    int64_t per = p->act.channels * p->act.inner;
    return LAUNCH(nn_cu_channel_affine(s, y, y, NULL, 0, NULL, NULL, per ? p->n / per : 0,
                                       p->act.channels, p->act.inner, &p->act));
}

static ffu_status cu_run(nn_backend *b, const nn_graph *g, const nn_node *n, void *const *in,
                         void *const *out, void *scratch)
{
    cu_backend *cb = (cu_backend *)b;
    cu_node *p = n->priv;
    if (!p) return nn_node_error(n, FFU_ERR_INVALID, "cuda: run before prepare");
    cudaStream_t s = cb->stream;
    ffu_status st = FFU_OK;
    /* CUDA's current device is per thread and sessions may run on any thread: a plan
     * that mixes backends calls run() directly (execute() has made it current already,
     * and a capture may be running there) */
    if (!cb->in_exec && (st = ffu_gpu_make_current(cb->gpu)) < 0) return st;
    switch (p->kind) {
    case K_CONV: {
        const float *bias = n->ninputs > 2 ? in[2] : NULL;
        const float *r = n->ninputs > 3 ? in[3] : NULL;
        const float *scale = n->ninputs > 4 ? in[4] : NULL;
        const void *w = p->use16 ? p->w16 : in[1];
        return conv_exec(cb, p, in[0], w, scale, bias, r, out[0], scratch, p->use16);
    }
    case K_GEMM: {
        float beta = 0.0f;
        if (p->has_c && in[2]) {
            if ((st = LAUNCH(nn_cu_strided(s, 4, in[2], out[0], 2, p->d, p->s0, 0))) < 0) return st;
            beta = p->beta;
        }
        if ((st = gemm_exec(cb, p, in[0], in[1], out[0], beta)) < 0) return st;
        goto gemm_act;
    }
    case K_MATMUL:
        if ((st = gemm_exec(cb, p, in[0], in[1], out[0], 0.0f)) < 0) return st;
    gemm_act:
        if (p->act.kind != NN_CU_ACT_NONE) {
            int64_t total = p->gM * p->gN * p->batch, per = p->act.channels * p->act.inner;
            st = LAUNCH(nn_cu_channel_affine(s, out[0], out[0], NULL, 0, NULL, NULL,
                                             per ? total / per : 0, p->act.channels, p->act.inner,
                                             &p->act));
        }
        return st;
    case K_UNARY:
        return LAUNCH(nn_cu_unary(s, p->op, in[0], out[0], p->n, p->a, p->b, p->g));
    case K_BINARY: {
        const nn_tensor *y = nn_out(g, n, 0);
        int64_t sa[NN_CU_MAX_RANK], sb[NN_CU_MAX_RANK], sy[NN_CU_MAX_RANK];
        nn_strides(&y->shape, sy);
        nn_cu_act none = {0}, *act = &none;
        if (n->ninputs == 1) { /* Sum/Max/Min/Mean of one: a copy, then the fused act */
            if (out[0] != in[0] &&
                (st = LAUNCH(cudaMemcpyAsync(out[0], in[0], nn_tensor_bytes(y), cudaMemcpyDeviceToDevice, s))) < 0)
                return st;
            return fused_act_in_place(s, p, out[0]);
        }
        for (int i = 1; i < n->ninputs; i++) {
            const float *a = i == 1 ? in[0] : out[0];
            if (i == 1) bcast_strides(&nn_in(g, n, 0)->shape, &y->shape, sa);
            else memcpy(sa, sy, sizeof sa);
            bcast_strides(&nn_in(g, n, i)->shape, &y->shape, sb);
            int last = i == n->ninputs - 1;
            act = last && n->op != NN_OP_MEAN ? &p->act : &none;
            if ((st = LAUNCH(nn_cu_binary(s, p->op, a, in[i], out[0], p->rank, p->d, sa, sb, act))) < 0)
                return st;
        }
        if (n->op == NN_OP_MEAN) {
            if ((st = LAUNCH(nn_cu_unary(s, NN_CU_SCALE, out[0], out[0], p->n, p->a, 0, 0))) < 0) return st;
            st = fused_act_in_place(s, p, out[0]);
        }
        return st;
    }
    case K_AFFINE: {
        const float *ab = p->dev[0];
        return LAUNCH(nn_cu_channel_affine(s, in[0], out[0], ab, 1, ab + p->channels, NULL,
                                           p->outer, p->channels, p->inner, &p->act));
    }
    case K_INORM:
        return LAUNCH(nn_cu_instance_norm(s, in[0], out[0], in[1], in[2], p->outer, p->channels, p->len, p->a));
    case K_POOL:
        return LAUNCH(nn_cu_pool(s, p->max, p->incl, in[0], out[0], p->outer, &p->w));
    case K_GPOOL:
        return LAUNCH(nn_cu_global_pool(s, p->max, in[0], out[0], p->outer, p->len));
    case K_SOFTMAX:
        return LAUNCH(nn_cu_softmax(s, p->log_form, in[0], out[0], p->outer, p->len, p->inner));
    case K_STRIDED:
        return LAUNCH(nn_cu_strided(s, p->esize, in[0], out[0], p->rank, p->d, p->s0, p->base));
    case K_PIECES: { /* one 2-D copy per piece, its columns of the whole tensor's rows */
        size_t es = p->esize, done = 0, pitch = (size_t)(p->len * p->inner) * es;
        int npieces = p->op ? n->noutputs : n->ninputs;
        for (int i = 0; i < npieces; i++) {
            const nn_tensor *t = p->op ? nn_out(g, n, i) : nn_in(g, n, i);
            size_t w = (size_t)(t->shape.d[p->rank] * p->inner) * es;
            char *whole = (char *)(p->op ? in[0] : out[0]) + done;
            if (w && p->outer &&
                (st = LAUNCH(p->op ? cudaMemcpy2DAsync(out[i], w, whole, pitch, w, (size_t)p->outer,
                                                       cudaMemcpyDeviceToDevice, s)
                                   : cudaMemcpy2DAsync(whole, pitch, in[i], w, w, (size_t)p->outer,
                                                       cudaMemcpyDeviceToDevice, s))) < 0)
                return st;
            done += w;
        }
        return FFU_OK;
    }
    case K_COPY:
        if (in[0] == out[0] || !p->n) return FFU_OK;
        return LAUNCH(cudaMemcpyAsync(out[0], in[0], (size_t)p->n, cudaMemcpyDeviceToDevice, s));
    case K_PAD: {
        const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0);
        return LAUNCH(nn_cu_pad(s, p->esize, in[0], out[0], p->rank, x->shape.d, y->shape.d, p->p0,
                                p->mode, p->fill));
    }
    case K_GATHER:
        return LAUNCH(nn_cu_gather(s, p->esize, in[0], out[0], p->outer, p->len, p->inner, p->dev[0], p->n));
    case K_RESIZE: {
        const float *addend = n->ninputs > 4 && n->inputs[4] >= 0 ? in[4] : NULL;
        if ((st = LAUNCH(nn_cu_resize(s, p->esize, p->op, in[0], out[0], p->rank, p->s0, p->d,
                                      p->ntap, p->dev[0], p->fill, addend))) < 0 ||
            !addend)
            return st;
        return fused_act_in_place(s, p, out[0]);
    }
    default:
        return nn_node_error(n, FFU_ERR_INTERNAL, "cuda: node kind %d", p->kind);
    }
}

static void cu_release(nn_backend *b, nn_node *n)
{
    node_free((cu_backend *)b, n->priv);
    n->priv = NULL;
}

static void cu_node_info(nn_backend *b, const nn_node *n, const char **impl, int *reorders)
{
    const cu_node *p = n->priv;
    *impl = p ? p->impl : "";
    *reorders = 0;
}

static ffu_status cu_mem_alloc(nn_backend *b, size_t bytes, void **p)
{
    return ffu_gpu_alloc(((cu_backend *)b)->gpu, bytes, p);
}

static void cu_mem_free(nn_backend *b, void *p) { ffu_gpu_free(((cu_backend *)b)->gpu, p); }

static ffu_status cu_host_alloc(nn_backend *b, size_t bytes, void **p)
{
    return ffu_gpu_host_alloc(bytes, p);
}

static void cu_host_free(nn_backend *b, void *p) { ffu_gpu_host_free(p); }

static ffu_status cu_copy(nn_backend *b, void *dst, int dst_space, const void *src, int src_space,
                          size_t bytes)
{
    cu_backend *cb = (cu_backend *)b;
    (void)dst_space, (void)src_space;
    if (!bytes) return FFU_OK;
    ffu_status st;
    if (!cb->in_exec && (st = ffu_gpu_make_current(cb->gpu)) < 0) return st;
    return LAUNCH(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cb->stream));
}

static ffu_status cu_sync(nn_backend *b)
{
    cu_backend *cb = (cu_backend *)b;
    ffu_status st = ffu_gpu_make_current(cb->gpu);
    if (st < 0) return st;
    return LAUNCH(cudaStreamSynchronize(cb->stream));
}

static ffu_status bind_stream(cu_backend *cb, cudaStream_t s)
{
    ffu_status st = FFU_OK;
    if (cb->L->have_dnn && cb->dnn)
        st = dnn_err(cb, cb->L->cudnnSetStream(cb->dnn, s), "set stream");
    if (st == FFU_OK && cb->L->have_blas && cb->blas)
        st = blas_err(cb->L->cublasSetStream_v2(cb->blas, s), "set stream");
    return st;
}

static ffu_status cu_set_stream(nn_backend *b, void *stream)
{
    cu_backend *cb = (cu_backend *)b;
    cudaStream_t s = stream ? (cudaStream_t)ffu_gpu_stream_handle(stream)
                            : (cudaStream_t)ffu_gpu_stream_handle(cb->own);
    if (s == cb->stream) return FFU_OK;
    ffu_status st = ffu_gpu_make_current(cb->gpu);
    if (st < 0) return st;
    /* the new stream starts after what the old one has queued (arena, workspace) */
    if ((st = LAUNCH(cudaEventRecord(cb->ev, cb->stream))) < 0) return st;
    if ((st = LAUNCH(cudaStreamWaitEvent(s, cb->ev, 0))) < 0) return st;
    cb->stream = s;
    return bind_stream(cb, s);
}

static void drop_graph(cu_backend *cb)
{
    if (cb->gexec) cudaGraphExecDestroy(cb->gexec);
    cb->gexec = NULL;
}

/* body(ctx) with run() and copy() told not to touch the current device (no CUDA call
 * but the work itself while a capture may be running). */
static ffu_status exec_body(cu_backend *cb, ffu_status (*body)(void *), void *ctx)
{
    cb->in_exec = 1;
    ffu_status st = body(ctx);
    cb->in_exec = 0;
    return st;
}

/* First run of a plan: eager (lazy library set-up, cuDNN fusions settle). Second run:
 * captured into a CUDA graph, which this and later runs launch. A capture that fails
 * leaves the plan eager for good. */
static ffu_status cu_execute(nn_backend *b, uint64_t plan_id, ffu_status (*body)(void *), void *ctx)
{
    cu_backend *cb = (cu_backend *)b;
    ffu_status st = ffu_gpu_make_current(cb->gpu);
    if (st < 0) return st;
    if (!cb->graphs) return exec_body(cb, body, ctx);
    if (plan_id != cb->gplan) {
        drop_graph(cb);
        cb->gplan = plan_id;
        cb->gruns = 0;
        cb->gfailed = 0;
    }
    if (cb->gexec) return LAUNCH(cudaGraphLaunch(cb->gexec, cb->stream));
    if (cb->gruns++ < 1 || cb->gfailed) return exec_body(cb, body, ctx);
    if (cudaStreamBeginCapture(cb->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        (void)cudaGetLastError();
        cb->gfailed = 1;
        return exec_body(cb, body, ctx);
    }
    st = exec_body(cb, body, ctx);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(cb->stream, &graph);
    if (st < 0 || e != cudaSuccess || !graph) {
        /* said once per plan: the first GPU runs must show why a plan stays eager */
        FFU_LOG(NULL, FFU_LOG_WARN, "cuda backend: CUDA graph capture failed (%s); this plan "
                "runs eagerly", st < 0 ? ffu_error_message() : cudaGetErrorString(e));
        (void)cudaGetLastError();
        if (graph) cudaGraphDestroy(graph);
        cb->gfailed = 1;
        ffu_error_clear();
        return exec_body(cb, body, ctx); /* nothing ran while capturing: run it now */
    }
    e = cudaGraphInstantiate(&cb->gexec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        FFU_LOG(NULL, FFU_LOG_WARN, "cuda backend: cudaGraphInstantiate failed (%s); this plan "
                "runs eagerly", cudaGetErrorString(e));
        (void)cudaGetLastError();
        cb->gexec = NULL;
        cb->gfailed = 1;
        return exec_body(cb, body, ctx);
    }
    return LAUNCH(cudaGraphLaunch(cb->gexec, cb->stream));
}

static void cu_destroy(nn_backend *b)
{
    cu_backend *cb = (cu_backend *)b;
    if (!cb) return;
    if (cb->gpu) ffu_gpu_make_current(cb->gpu);
    if (cb->stream) cudaStreamSynchronize(cb->stream);
    drop_graph(cb);
    if (cb->dnn) cb->L->cudnnDestroy(cb->dnn);
    if (cb->blas) cb->L->cublasDestroy_v2(cb->blas);
    if (cb->blas_ws) ffu_gpu_free(cb->gpu, cb->blas_ws);
    if (cb->ev) cudaEventDestroy(cb->ev);
    ffu_gpu_stream_destroy(cb->own);
    ffu_gpu_close(cb->gpu);
    free(cb);
}

static const nn_backend_ops cu_ops = {
    .name = "cuda",
    .supports = cu_supports,
    .prepare = cu_prepare,
    .scratch_bytes = cu_scratch_bytes,
    .run = cu_run,
    .release = cu_release,
    .destroy = cu_destroy,
    .node_info = cu_node_info,
    .mem_alloc = cu_mem_alloc,
    .mem_free = cu_mem_free,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .copy = cu_copy,
    .sync = cu_sync,
    .set_stream = cu_set_stream,
    .execute = cu_execute,
};

ffu_status nn_backend_cuda_create(nn_backend **out, const nn_cuda_opts *o)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "nn_backend_cuda_create: out is NULL");
    *out = NULL;
    nn_cuda_opts def = {0, 0, 1};
    if (!o) o = &def;
    int count = ffu_gpu_device_count();
    if (count <= 0) return ffu_error_set(FFU_ERR_DEVICE, "backend 'cuda': no CUDA device");
    if (o->device < 0 || o->device >= count)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "backend 'cuda': CUDA device %d does not exist "
                             "(there are %d)", o->device, count);
    cu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    cb->base.ops = &cu_ops;
    cb->base.threads = 1;
    cb->base.space = NN_SPACE_DEVICE;
    cb->graphs = o->graphs;
    cb->L = nn_cuda_libs_get();
    ffu_status st;
    ffu_gpu_device_info info;
    if ((st = ffu_gpu_open(o->device, &cb->gpu)) < 0) goto fail;
    if ((st = ffu_gpu_make_current(cb->gpu)) < 0) goto fail;
    if ((st = ffu_gpu_device_info_get(o->device, &info)) < 0) goto fail;
    cb->cc_major = info.cc_major;
    if ((st = ffu_gpu_stream_create(cb->gpu, &cb->own)) < 0) goto fail;
    cb->stream = (cudaStream_t)ffu_gpu_stream_handle(cb->own);
    if ((st = LAUNCH(cudaEventCreateWithFlags(&cb->ev, cudaEventDisableTiming))) < 0) goto fail;
    /* A library that is present but cannot start here (a build for another CUDA, no
     * memory) leaves its ops to ref with a warning, like a missing one: the backend
     * still runs the rest. */
    if (cb->L->have_dnn) {
        cudnnStatus_t ds = cb->L->cudnnCreate(&cb->dnn);
        if (ds != CUDNN_STATUS_SUCCESS) {
            cb->dnn = NULL;
            FFU_LOG(NULL, FFU_LOG_WARN, "cuda backend: cudnnCreate failed (%s); convolutions "
                    "run on the CPU", cb->L->cudnnGetErrorString(ds));
        }
    } else {
        FFU_LOG(NULL, FFU_LOG_WARN, "cuda backend: no cuDNN (%s); convolutions run on the CPU", cb->L->why_dnn);
    }
    if (cb->L->have_blas) {
        /* a workspace of our own: cuBLAS then allocates nothing while a graph is captured;
         * pedantic math: plain fp32 (no TF32, no reduced-precision emulation), like
         * cuDNN's FMA math in conv_descs (results must match the other backends) */
        cublasStatus_t bs = cb->L->cublasCreate_v2(&cb->blas);
        const char *what = "cublasCreate";
        if (bs != CUBLAS_STATUS_SUCCESS) cb->blas = NULL;
        if (bs == CUBLAS_STATUS_SUCCESS) {
            what = "the cuBLAS workspace";
            if (ffu_gpu_alloc(cb->gpu, NN_CUDA_BLAS_WS, &cb->blas_ws) < 0) {
                ffu_error_clear();
                bs = CUBLAS_STATUS_ALLOC_FAILED;
            } else if ((bs = cb->L->cublasSetWorkspace_v2(cb->blas, cb->blas_ws, NN_CUDA_BLAS_WS)) ==
                       CUBLAS_STATUS_SUCCESS) {
                what = "cublasSetMathMode";
                bs = cb->L->cublasSetMathMode(cb->blas, CUBLAS_PEDANTIC_MATH);
            }
        }
        if (bs != CUBLAS_STATUS_SUCCESS) {
            if (cb->blas) cb->L->cublasDestroy_v2(cb->blas);
            ffu_gpu_free(cb->gpu, cb->blas_ws);
            cb->blas = NULL, cb->blas_ws = NULL;
            FFU_LOG(NULL, FFU_LOG_WARN, "cuda backend: %s failed (status %d); Gemm and MatMul "
                    "run on the CPU", what, (int)bs);
        }
    } else {
        FFU_LOG(NULL, FFU_LOG_WARN, "cuda backend: no cuBLAS (%s); Gemm and MatMul run on the CPU", cb->L->why_blas);
    }
    /* fp16 with fp32 accumulation needs tensor cores to be worth it (Volta and later) */
    cb->base.fp16 = o->fp16 && cb->cc_major >= 7 && cb->dnn;
    if ((st = bind_stream(cb, cb->stream)) < 0) goto fail;
    *out = &cb->base;
    return FFU_OK;
fail:
    cu_destroy(&cb->base);
    return st;
}

#endif
