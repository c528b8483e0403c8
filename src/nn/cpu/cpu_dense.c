/* The cpu backend's dense ops on oneDNN: Conv and ConvTranspose (convolution /
 * deconvolution primitives, grouped and depthwise, dilated, strided, asymmetric pads)
 * and Gemm / MatMul (matmul primitive with transposes through strides and batch
 * broadcasting), each with bias and the node's fused activation as post-ops.
 *
 * Constant weights are reordered once at prepare into the layout the primitive picked
 * (format "any"), so a run touches only activations. The window geometry comes from
 * nn_window_init, the function the reference kernels use, so both backends agree on
 * pads, auto_pad and output sizes by construction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "../ops/ops_internal.h"
#include "cpu_internal.h"

/* The accuracy tolerance a rounding variant (Winograd, bf16) of node n must meet: the
 * node's attribute `attr` (tests), else def; 0, which no variant meets, for a node whose
 * integer-valued sums must stay exact (`_exact`, set by rewrite_integer.c). */
static double variant_tol(const nn_node *n, const char *attr, double def)
{
    return nn_attr_int(n, "_exact", 0) ? 0.0 : nn_attr_float(n, attr, (float)def);
}

/* ---- our depthwise kernel ------------------------------------------------------------------ */

static void dw_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const nn_cpu_dw *d = kd;
    if (d->sc.b) {
        /* four rows at a time, then their epilogue while they are in L2; the scale is
         * the step's last argument (a scaled node has no residual and no pool) */
        const float s = *(const float *)ptr[2];
        int64_t rows = d->N * d->OH, r0 = rows * ithr / nthr, r1 = rows * (ithr + 1) / nthr;
        for (int64_t r = r0; r < r1; r += 4) {
            int64_t e = r + 4 < r1 ? r + 4 : r1;
            nn_cpu_dw_rows_avx512(d, ptr[0], NULL, ptr[1], r, e, NULL);
            nn_cpu_scale_avx512(&d->sc, s, (float *)ptr[1] + r * d->OW * d->C, (e - r) * d->OW);
        }
        return;
    }
    int64_t rows = d->N * (d->pool ? d->OH / 2 : d->OH);
    int64_t r0 = rows * ithr / nthr, r1 = rows * (ithr + 1) / nthr;
    /* with a pool, argument 2 is the threads' row buffers (two conv rows each) */
    float *tmp = d->pool ? (float *)ptr[2] + (size_t)ithr * 2 * (size_t)(d->OW * d->C) : NULL;
    nn_cpu_dw_rows_avx512(d, ptr[0], d->res ? ptr[2] : NULL, ptr[1], r0, r1, tmp);
}

/* The activation of the node in our kernels' form; 0 when it has none for it. Its
 * slopes: *nslopes -1 for Leaky ReLU's one alpha, else 0, 1 or C values at *slopes. */
static int conv_act(const cpu_ctx *c, int64_t C, nn_cpu_act *d, const float **slopes,
                    int64_t *nslopes)
{
    const nn_act *a = &c->n->act;
    d->neg = d->clamp = 0;
    d->lo = -INFINITY, d->hi = INFINITY;
    *slopes = NULL, *nslopes = 0;
    switch (a->kind) {
    case NN_ACT_NONE: return 1;
    case NN_ACT_RELU: d->clamp = 1, d->lo = 0; return 1;
    case NN_ACT_RELU6: d->clamp = 1, d->lo = 0, d->hi = 6; return 1;
    case NN_ACT_CLIP: d->clamp = 1, d->lo = a->alpha, d->hi = a->beta; return 1;
    case NN_ACT_LEAKY_RELU: d->neg = 1; *nslopes = -1; return 1;
    case NN_ACT_PRELU: {
        if (a->slope < 0 || a->slope >= c->g->ntensors) return 0;
        const nn_tensor *t = &c->g->tensors[a->slope];
        int64_t k = nn_shape_numel(&t->shape);
        if (!nn_cpu_is_const(t) || t->dtype != FFU_DTYPE_F32 || (k != 1 && k != C)) return 0;
        d->neg = 1;
        *slopes = t->data, *nslopes = k;
        return 1;
    }
    default: return 0;
    }
}

/* Our kernels' per-channel bias (zeros without one) and slopes, for C channels. */
static void conv_epilogue(const cpu_ctx *c, const nn_tensor *b, const float *slopes,
                          int64_t nslopes, int64_t C, float *bias, float *ns)
{
    for (int64_t ch = 0; ch < C; ch++) {
        bias[ch] = b ? ((const float *)b->data)[ch] : 0.0f;
        ns[ch] = nslopes < 0 ? c->n->act.alpha : slopes ? slopes[nslopes == 1 ? 0 : ch] : 1.0f;
    }
}

/* How one of our NHWC kernels meets a Conv node's tensors: each one not stored NHWC
 * is staged through scratch (counted as a layout conversion of the node). */
typedef struct nhwc_io {
    dnnl_memory_desc_t src_t, dst_t, res_t; /* as stored */
    dnnl_memory_desc_t src_md, dst_md;      /* NHWC */
    int xl, yl, rl;                         /* input, output, residual stored NHWC */
} nhwc_io;

/* CPU_UNSUPPORTED when the node's tensors cannot be staged so. */
static ffu_status nhwc_io_init(cpu_ctx *c, const nn_tensor *x, const nn_tensor *y,
                               const nn_tensor *r, nhwc_io *io)
{
    const nn_node *n = c->n;
    io->xl = nn_cpu_stored_nhwc(c, n->inputs[0]);
    io->yl = nn_cpu_stored_nhwc(c, n->outputs[0]);
    io->rl = r && nn_cpu_stored_nhwc(c, n->inputs[3]);
    if (nn_cpu_md_tensor(c, n->inputs[0], &io->src_t) < 0 ||
        nn_cpu_md_tensor(c, n->outputs[0], &io->dst_t) < 0 ||
        nn_cpu_md_cl(&io->src_md, &x->shape) < 0 || nn_cpu_md_cl(&io->dst_md, &y->shape) < 0 ||
        (r && nn_cpu_md_tensor(c, n->inputs[3], &io->res_t) < 0))
        return CPU_UNSUPPORTED;
    /* a staged residual goes where the output is computed (the kernel may read and
     * write one buffer), which needs a staged output too (layout_plan gives both one
     * layout, so this does not happen) */
    if (r && !io->rl && io->yl) return CPU_UNSUPPORTED;
    return FFU_OK;
}

/* Whether the Conv being built has a fused scale (input 4, ir.h). */
static int node_scale(const cpu_ctx *c) { return nn_in(c->g, c->n, 4) != NULL; }

/* Moves a kernel's bias b and activation *act (slopes ns; [Cp] each) to the scaled
 * epilogue e (nn_cpu_scaled), its arrays at mem (2 x Cp floats, 64-byte aligned): the
 * kernel then computes bare sums. */
static void scaled_epilogue(nn_cpu_scaled *e, int64_t C, int64_t Cp, float *mem, nn_cpu_act *act,
                            float *b, const float *ns)
{
    e->C = C;
    e->act = *act;
    e->b = mem, e->ns = mem + Cp;
    memcpy(e->b, b, sizeof(float) * (size_t)Cp);
    memcpy(e->ns, ns, sizeof(float) * (size_t)Cp);
    memset(b, 0, sizeof(float) * (size_t)Cp);
    *act = (nn_cpu_act){.lo = -INFINITY, .hi = INFINITY};
}

/* The node's steps around kernel fn with data kd: staging in, the kernel step (its
 * arguments: input, output, then the residual when res, then tmp_bytes of scratch
 * when nonzero, then the fused scale when the node has one), staging out. */
static ffu_status nhwc_kernel_steps(cpu_ctx *c, const nhwc_io *io, cpu_kernel_fn fn,
                                    const void *kd, int res, size_t tmp_bytes)
{
    ffu_status st;
    size_t tmp_off = tmp_bytes ? nn_cpu_scratch(c, tmp_bytes) : 0;
    size_t in_off = !io->xl ? nn_cpu_scratch(c, dnnl_memory_desc_get_size(&io->src_md)) : 0;
    size_t out_off = !io->yl ? nn_cpu_scratch(c, dnnl_memory_desc_get_size(&io->dst_md)) : 0;
    int res_staged = res && !io->rl;
    if (!io->xl && (st = nn_cpu_stage_step(c, &io->src_t, CPU_BIND_IN, 0, &io->src_md,
                                           CPU_BIND_SCRATCH, in_off)) < 0)
        return st;
    if (res_staged) {
        if ((st = nn_cpu_copy_in_step(c, 3, &io->res_t, &io->dst_md, CPU_BIND_SCRATCH, out_off,
                                      0)) < 0)
            return st;
        c->p->nreorders++;
    }
    cpu_step *s = nn_cpu_add_kernel_step(c, fn, kd, &st);
    if (!s) return st;
    cpu_bind ob = io->yl ? CPU_BIND_OUT : CPU_BIND_SCRATCH;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, io->xl ? CPU_BIND_IN : CPU_BIND_SCRATCH, 0, in_off,
                              NULL)) < 0 ||
        (st = nn_cpu_step_arg(c, s, 1, NULL, ob, 0, out_off, NULL)) < 0)
        return st;
    int arg = 2;
    if (res && (st = res_staged
                         ? nn_cpu_step_arg(c, s, arg, NULL, CPU_BIND_SCRATCH, 0, out_off, NULL)
                         : nn_cpu_step_arg(c, s, arg, NULL, CPU_BIND_IN, 3, 0, NULL)) < 0)
        return st;
    arg += res;
    if (tmp_bytes &&
        (st = nn_cpu_step_arg(c, s, arg++, NULL, CPU_BIND_SCRATCH, 0, tmp_off, NULL)) < 0)
        return st;
    /* the node's fused scale (input 4, ir.h) last: read by the kernels that take one */
    if (node_scale(c) && (st = nn_cpu_step_arg(c, s, arg, NULL, CPU_BIND_IN, 4, 0, NULL)) < 0)
        return st;
    if (!io->yl)
        return nn_cpu_stage_step(c, &io->dst_md, CPU_BIND_SCRATCH, out_off, &io->dst_t,
                                 CPU_BIND_OUT, 0);
    return FFU_OK;
}

/* nhwc_kernel_steps for our kernel of kind (NN_CPU_K_*); a node that is that one step,
 * straight from its input into its output (and, for a 1x1 kernel, from its residual;
 * other kernels without one), is marked as such (a band pipeline may take the kernel
 * over, cpu_chain.c). */
static ffu_status our_kernel_steps(cpu_ctx *c, const nhwc_io *io, cpu_kernel_fn fn, int kind,
                                   const void *kd, int res, size_t tmp_bytes)
{
    ffu_status st = nhwc_kernel_steps(c, io, fn, kd, res, tmp_bytes);
    if (st == FFU_OK && io->xl && io->yl && (!res || (kind == NN_CPU_K_PW && io->rl)))
        c->p->kkind = kind, c->p->kdata = kd;
    return st;
}

/* Memory the node owns for one of our kernels: a header of head bytes, then n floats
 * at *tail, 64-byte aligned; the header and the tail's first zeroed floats are zeros,
 * the rest is the caller's to write. NULL when out of memory (the error is set). */
static void *own_kernel_data(cpu_ctx *c, size_t head, size_t n, size_t zeroed, float **tail)
{
    head = (head + 63) / 64 * 64;
    size_t bytes = head + sizeof(float) * n;
    char *p = nn_cpu_own(c, bytes);
    if (!p) {
        ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memset(p, 0, head + sizeof(float) * (zeroed < n ? zeroed : n));
    *tail = (float *)(p + head);
    return p;
}

/* What our kernels' builders need after their shape rules: the node's activation in
 * our form (its slopes for conv_epilogue) and the staging of its tensors. */
typedef struct our_conv {
    nn_cpu_act av;
    const float *slopes;
    int64_t nslopes;
    nhwc_io io;
} our_conv;

/* 0 when the activation or the staging is missing. */
static int our_conv_io(cpu_ctx *c, const nn_tensor *x, const nn_tensor *y, const nn_tensor *r,
                       int64_t channels, our_conv *k)
{
    return conv_act(c, channels, &k->av, &k->slopes, &k->nslopes) &&
           nhwc_io_init(c, x, y, r, &k->io) == FFU_OK;
}

/* Depthwise Conv (group = channels, one filter each, no dilation) on our AVX-512
 * kernel, channels-last; NCHW tensors are staged through scratch like the oneDNN path.
 * CPU_UNSUPPORTED sends the node to oneDNN. */
static ffu_status build_dw_custom(cpu_ctx *c, const nn_tensor *x, const nn_tensor *w,
                                  const nn_tensor *b, const nn_tensor *r, const nn_tensor *y,
                                  const nn_window *win)
{
    const nn_node *n = c->n;
    int64_t C = x->shape.d[1];
    int pool = nn_attr_int(n, "_pool", 0) == 2;
    if (x->shape.rank != 4 || nn_attr_int(n, "group", 1) != C || y->shape.d[1] != C ||
        w->shape.d[0] != C || w->shape.d[1] != 1 || win->dil[1] != 1 || win->dil[2] != 1 ||
        win->k[1] * win->k[2] > 64 || !(ffu_cpu_features() & FFU_CPU_AVX512F))
        return CPU_UNSUPPORTED;
    /* Measured (docs/NN_CPU.md): ours wins on wide stride-1 3x3 layers (1.2-1.5x on
     * 16-64 channels at 32-320 columns); oneDNN's brdgmm_dw is faster on narrow rows
     * with many channels (MobileFaceNet's 14x14x256) and on strided layers. The
     * node's `_cpu_dw` attribute (tests) forces the choice: 1 ours, 0 oneDNN; a node of
     * a band pipeline (cpu_chain.c) takes ours. */
    int64_t force = nn_attr_int(n, "_cpu_dw", -1);
    if (force == 0) return CPU_UNSUPPORTED;
    if (force < 0 && !nn_cpu_chain_member(c) &&
        !(win->k[1] == 3 && win->k[2] == 3 && win->stride[2] == 1 && win->stride[1] == 1 &&
          win->out[2] >= 32))
        return CPU_UNSUPPORTED;
    /* a fused scale: rows of sums, then nn_cpu_scale_avx512 (not with a pool) */
    int scaled = node_scale(c);
    if (scaled && pool) return CPU_UNSUPPORTED;
    our_conv oc;
    if (!our_conv_io(c, x, y, r, C, &oc)) return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK; /* dry: nothing can fail from here on but memory */

    int64_t Cp = (C + 15) / 16 * 16, K = win->k[1] * win->k[2];
    /* pixel pairs (cpu_dw_avx512.c, blk_pair_k3s1) */
    int pairs = C % 16 == 8 && win->k[2] == 3 && win->stride[2] == 1;
    float *tail;
    size_t head = (size_t)((Cp + (pairs ? 2 * C : 0)) * (K + 2)); /* w, b, ns (w2, b2, ns2) */
    nn_cpu_dw *d =
        own_kernel_data(c, sizeof *d, head + (scaled ? 2 * (size_t)Cp : 0), SIZE_MAX, &tail);
    if (!d) return FFU_ERR_NOMEM;
    d->act = oc.av;
    d->N = x->shape.d[0], d->C = C, d->Cp = Cp;
    d->IH = x->shape.d[2], d->IW = x->shape.d[3], d->OH = win->out[1], d->OW = win->out[2];
    d->pool = pool;
    d->KH = (int)win->k[1], d->KW = (int)win->k[2];
    d->SH = (int)win->stride[1], d->SW = (int)win->stride[2];
    d->PT = (int)win->pad0[1], d->PL = (int)win->pad0[2];
    d->w = tail;
    d->b = d->w + Cp * K;
    d->ns = d->b + Cp;
    d->res = r != NULL;
    const float *wd = w->data;
    for (int64_t ch = 0; ch < C; ch++)
        for (int64_t k = 0; k < K; k++) d->w[k * Cp + ch] = wd[ch * K + k];
    conv_epilogue(c, b, oc.slopes, oc.nslopes, C, d->b, d->ns);
    if (scaled) scaled_epilogue(&d->sc, C, Cp, tail + head, &d->act, d->b, d->ns);
    if (pairs) {
        d->w2 = d->ns + Cp;
        d->b2 = d->w2 + 2 * C * K;
        d->ns2 = d->b2 + 2 * C;
        for (int64_t i = 0; i < 2 * C; i++) {
            for (int64_t k = 0; k < K; k++) d->w2[k * 2 * C + i] = d->w[k * Cp + i % C];
            d->b2[i] = d->b[i % C];
            d->ns2[i] = d->ns[i % C];
        }
    }
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:dw_avx512");
    /* with a pool, the threads' row buffers (two conv rows each) */
    size_t tmp = pool ? sizeof(float) * 2 * (size_t)(d->OW * C) * (size_t)c->cb->base.threads : 0;
    return our_kernel_steps(c, &oc.io, dw_kernel, NN_CPU_K_DW, d, r != NULL, tmp);
}

/* ---- our 1x1 kernel ------------------------------------------------------------------------ */

static void pw_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const nn_cpu_pw *d = kd;
    /* whole blocks of sixteen pixels per thread where there are enough */
    int64_t blocks = (d->P + 15) / 16;
    int64_t p0 = blocks * ithr / nthr * 16, p1 = blocks * (ithr + 1) / nthr * 16;
    if (p1 > d->P) p1 = d->P;
    if (d->sc.b) {
        /* 64 pixels at a time, then their epilogue; the scale is the step's last
         * argument (a scaled node has no residual) */
        const float s = *(const float *)ptr[2];
        for (int64_t p = p0; p < p1; p += 64) {
            int64_t e = p + 64 < p1 ? p + 64 : p1;
            nn_cpu_pw_pixels_avx512(d, ptr[0], NULL, ptr[1], p, e);
            nn_cpu_scale_avx512(&d->sc, s, (float *)ptr[1] + p * d->Co, e - p);
        }
        return;
    }
    if (p0 < p1) nn_cpu_pw_pixels_avx512(d, ptr[0], d->res ? ptr[2] : NULL, ptr[1], p0, p1);
}

/* A 1x1 Conv (stride 1, no pads, one group) into at most 64 channels on our AVX-512
 * kernel; tensors not stored NHWC are staged as for the depthwise kernel. Into 33-64
 * channels it runs only when forced or on a node of a band pipeline (cpu_chain.c).
 * CPU_UNSUPPORTED sends the node to oneDNN. */
static ffu_status build_pw_custom(cpu_ctx *c, const nn_tensor *x, const nn_tensor *w,
                                  const nn_tensor *b, const nn_tensor *r, const nn_tensor *y,
                                  const nn_window *win)
{
    const nn_node *n = c->n;
    int64_t C = x->shape.d[1], M = y->shape.d[1];
    if (x->shape.rank != 4 || nn_attr_int(n, "group", 1) != 1 || nn_attr_int(n, "_pool", 0) ||
        w->shape.d[2] != 1 || w->shape.d[3] != 1 || win->stride[1] != 1 || win->stride[2] != 1 ||
        win->pad0[1] || win->pad0[2] || win->pad1[1] || win->pad1[2] || !nn_cpu_pw_outputs(M) ||
        C > 256 || !(ffu_cpu_features() & FFU_CPU_AVX512F))
        return CPU_UNSUPPORTED;
    /* Measured (docs/NN_CPU.md "Our 1x1 kernel"): ours wins where oneDNN leaves lanes
     * empty (24 outputs: 1.15-1.2x) and on small 16-channel layers (96x96: 2.6x); on
     * large 16- and 32-channel layers (160x160 and up) they tie or oneDNN's blocked
     * kernel wins (320x320 16 -> 16: 0.27 vs 0.32 ms). The node's `_cpu_pw` attribute
     * (tests) forces the choice: 1 ours, 0 oneDNN. Into 33-64 channels (and multiples of
     * 64) oneDNN stays the default, but for a node with PReLU or in a band pipeline. */
    int64_t force = nn_attr_int(n, "_cpu_pw", -1);
    if (force < 0 && nn_cpu_chain_member(c)) force = 1;
    /* with PReLU, which oneDNN runs as a second pass over the output, ours wherever it
     * takes the outputs (MobileFaceNet's expansions: 28x28 64 -> 128 0.131 -> 0.117 ms,
     * 14x14 128 -> 256 0.125 -> 0.120) */
    if (force < 0 && n->act.kind == NN_ACT_PRELU && M > 32) force = 1;
    int scaled = node_scale(c);
    int64_t P = x->shape.d[0] * x->shape.d[2] * x->shape.d[3];
    if (force == 0 || (force < 0 && (M > 32 || (M % 16 == 0 && P > 128 * 128))))
        return CPU_UNSUPPORTED;
    our_conv oc;
    if (!our_conv_io(c, x, y, r, M, &oc)) return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK; /* dry: nothing can fail from here on but memory */

    /* 24 outputs: rows stored twice over, 48 wide (cpu_pw_avx512.c, blk24) */
    int64_t Cop = M == 24 ? 48 : (M + 15) / 16 * 16;
    float *tail;
    nn_cpu_pw *d =
        own_kernel_data(c, sizeof *d, (size_t)(Cop * (C + 2 + 2 * scaled)), SIZE_MAX, &tail);
    if (!d) return FFU_ERR_NOMEM;
    d->act = oc.av;
    d->P = P;
    d->Ci = C, d->Co = M, d->Cop = Cop;
    d->wide = ffu_cpu_fma512_halves();
    d->w = tail;
    d->b = d->w + Cop * C;
    d->ns = d->b + Cop;
    d->res = r != NULL;
    const float *wd = w->data; /* [M][C][1][1] */
    for (int64_t o = 0; o < Cop; o++)
        for (int64_t ch = 0; ch < C; ch++)
            d->w[ch * Cop + o] = o < M ? wd[o * C + ch] : M == 24 ? wd[(o - M) * C + ch] : 0.0f;
    conv_epilogue(c, b, oc.slopes, oc.nslopes, M, d->b, d->ns);
    if (M == 24) { /* stored twice over, as the weights */
        memcpy(d->b + 24, d->b, 24 * sizeof(float));
        memcpy(d->ns + 24, d->ns, 24 * sizeof(float));
    }
    if (scaled) scaled_epilogue(&d->sc, M, Cop, d->ns + Cop, &d->act, d->b, d->ns);
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:pw_avx512");
    return our_kernel_steps(c, &oc.io, pw_kernel, NN_CPU_K_PW, d, r != NULL, 0);
}

/* ---- our first-layer kernel ---------------------------------------------------------------- */

static void cf_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const nn_cpu_cf *d = kd;
    /* stored rows (pooled with a pool) and pixels per row */
    const int64_t OH = d->pool ? d->OH / 2 : d->OH, OW = d->pool ? d->OW / 2 : d->OW;
    int64_t rows = d->N * OH, r0 = rows * ithr / nthr, r1 = rows * (ithr + 1) / nthr;
    const float *src = ptr[0];
    float *dst = ptr[1];
    /* with a pool, argument 2 is the threads' row buffers (two conv rows each) */
    float *tmp = d->pool ? (float *)ptr[2] + (size_t)ithr * 2 * (size_t)(d->OW * d->K) : NULL;
    for (int64_t r = r0; r < r1; r++) {
        const float *img = src + r / OH * d->C * d->IH * d->IW;
        if (d->pool) nn_cpu_cf_pooled_row_avx512(d, img, dst + r * OW * d->K, r % OH, tmp);
        else nn_cpu_cf_row_avx512(d, img, dst + r * OW * d->K, r % OH);
        /* a fused scale (never with a pool): the step's last argument */
        if (d->sc.b) nn_cpu_scale_avx512(&d->sc, *(const float *)ptr[2], dst + r * OW * d->K, OW);
    }
}

/* A first layer (a plain NCHW input of at most 4 channels or an NHWC-stored one of 3,
 * one group, into at most 32 channels or 64, kernel up to 7x7, column stride 1 or 2, no
 * dilation, no residual, optionally a fused 2x2 pool) on our AVX-512 kernel, which reads
 * the input as stored and writes NHWC (staged when the output is stored otherwise).
 * CPU_UNSUPPORTED sends the node to our other kernels or oneDNN. */
static ffu_status build_cf_custom(cpu_ctx *c, const nn_tensor *x, const nn_tensor *w,
                                  const nn_tensor *b, const nn_tensor *r, const nn_tensor *y,
                                  const nn_window *win)
{
    const nn_node *n = c->n;
    int64_t C = x->shape.d[1], M = y->shape.d[1], pool = nn_attr_int(n, "_pool", 0);
    int in_layout = nn_cpu_layout(c, n->inputs[0]);
    if (x->shape.rank != 4 || r || nn_attr_int(n, "group", 1) != 1 || (pool && pool != 2) ||
        C > 4 || (M > 32 && M != 64) || win->k[1] > 7 || win->k[2] > 7 || win->dil[1] != 1 ||
        win->dil[2] != 1 || (win->stride[2] != 1 && win->stride[2] != 2) ||
        (in_layout && !(in_layout == 1 && C == 3)) || !(ffu_cpu_features() & FFU_CPU_AVX512F))
        return CPU_UNSUPPORTED;
    /* Measured (1 thread, ms per node in `bench nn --profile`, oneDNN vs ours): into
     * exactly 16 channels stored NHWC, with an activation oneDNN fuses, oneDNN's direct
     * kernel writing nChw16c (the first-layer path below) is faster (YuNet 640x640
     * 0.62-0.66 vs 0.74, UltraFace 320x240 0.12-0.13 vs 0.14-0.15); ours wins where
     * that path is not taken: other channel counts (BlazeFace 3 -> 24 5x5 0.155 vs
     * 0.148-0.154, 3 -> 32 0.16-0.17 vs 0.13) and PReLU, which oneDNN runs as a second
     * pass (FaceMesh 3 -> 16 0.12-0.18 vs 0.07-0.09). On NHWC images (TF.js models),
     * against oneDNN's brgconv reading the image as stored, whole models tie (gear,
     * BlazeFace, dlib-resnet, within 2%) except with PReLU (FaceMesh 0.98 -> 0.91 ms)
     * and with a fused pool, whose unpooled rows never leave the cache with ours (the
     * liveness model's 3 -> 64 3x3 at 126x126: 0.84 vs 0.60 per node): ours takes those
     * two there (the TFLite MobileFaceNet's 3 -> 64 3x3 stride 2 at 56x56 with PReLU,
     * Intel host: 0.106-0.109 vs 0.112-0.139 ms in three rounds). On NCHW images ours
     * takes 64 outputs too, whatever the activation (the ONNX MobileFaceNet's 3 -> 64
     * stride-2 stem with ReLU6, AMD Turin host: 0.082 vs 0.104 ms; the model
     * 0.979-0.993x, PFLD's with ReLU 0.985-0.989x in bench/ab). The node's `_cpu_cf` attribute (tests)
     * forces the choice: 1 ours, 0 not; the first node of a band pipeline
     * (cpu_chain.c) takes ours as if forced, and one that forces our 1x1 or 8-bit
     * kernel is left to it. */
    int64_t force = nn_attr_int(n, "_cpu_cf", -1);
    if (force < 0 && nn_cpu_chain_member(c)) force = 1;
    /* A fused scale (not with a pool): ours, since oneDNN's per-channel bias post-op
     * is slow there (YuNet u8's 3 -> 16 at 640x640: 0.92 ms, 0.57 without the bias) */
    int scaled = node_scale(c);
    if (scaled && pool) return CPU_UNSUPPORTED;
    if (force < 0 && scaled) force = 1;
    if (force < 0 && (nn_attr_int(n, "_cpu_pw", -1) == 1 || nn_attr_int(n, "_cpu_q8", -1) == 1))
        force = 0;
    int prelu = n->act.kind == NN_ACT_PRELU;
    if (force == 0 || (force < 0 && ((M == 16 && nn_cpu_layout(c, n->outputs[0]) && !prelu) ||
                                     (in_layout && !pool && !prelu))))
        return CPU_UNSUPPORTED;
    our_conv oc;
    if (!our_conv_io(c, x, y, NULL, M, &oc)) return CPU_UNSUPPORTED;
    oc.io.xl = 1; /* the kernel reads the input as stored (NCHW or NHWC): no staging */
    if (!c->p) return FFU_OK; /* dry: nothing can fail from here on but memory */

    int64_t Kp = (M + 15) / 16 * 16, KH = win->k[1], KW = win->k[2], taps = KH * KW * C;
    float *tail;
    nn_cpu_cf *d =
        own_kernel_data(c, sizeof *d, (size_t)(Kp * (taps + 2 + 2 * scaled)), SIZE_MAX, &tail);
    if (!d) return FFU_ERR_NOMEM;
    d->act = oc.av;
    d->N = x->shape.d[0], d->C = C, d->K = M, d->Kp = Kp;
    d->IH = x->shape.d[2], d->IW = x->shape.d[3], d->OH = win->out[1], d->OW = win->out[2];
    d->KH = (int)KH, d->KW = (int)KW;
    d->SH = (int)win->stride[1], d->SW = (int)win->stride[2];
    d->PT = (int)win->pad0[1], d->PL = (int)win->pad0[2];
    d->nhwc = in_layout == 1, d->pool = pool == 2;
    d->w = tail;
    d->b = d->w + Kp * taps;
    d->ns = d->b + Kp;
    const float *wd = w->data; /* [M][C][KH][KW] */
    for (int64_t o = 0; o < M; o++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t k = 0; k < KH * KW; k++)
                d->w[(k * C + ch) * Kp + o] = wd[(o * C + ch) * KH * KW + k];
    conv_epilogue(c, b, oc.slopes, oc.nslopes, M, d->b, d->ns);
    if (scaled) scaled_epilogue(&d->sc, M, Kp, d->ns + Kp, &d->act, d->b, d->ns);
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:cf_avx512");
    size_t tmp = d->pool ? sizeof(float) * 2 * (size_t)(d->OW * M) * (size_t)c->cb->base.threads
                         : 0;
    return our_kernel_steps(c, &oc.io, cf_kernel, d->pool ? NN_CPU_K_NONE : NN_CPU_K_CF, d, 0,
                            tmp);
}

/* ---- our Winograd kernel ------------------------------------------------------------------ */

static void wino_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const nn_cpu_wino *d = kd;
    /* an even share of the tiles per thread, in blocks of d->tb; argument 2 is the
     * residual when there is one, then the threads' scratch */
    int64_t tiles = d->N * d->TY * d->TX;
    int64_t t0 = tiles * ithr / nthr, t1 = tiles * (ithr + 1) / nthr;
    float *scratch = (float *)ptr[2 + d->res] + (size_t)ithr * NN_CPU_WINO_SCRATCH(d);
    if (t0 < t1)
        nn_cpu_wino_tiles_avx512(d, ptr[0], d->res ? ptr[2] : NULL, ptr[1], t0, t1, scratch);
}

/* Each block of tiles reads all of U once. U up to 1.5 MB stays in a core's 2 MB L2
 * between blocks, and blocks of 12 keep the transforms' working set (V and M) small
 * beside it. A larger U comes from L3 for every block: there, when a thread's share of
 * the tiles fits in one block whose V and M take at most 1.5 MB, it goes in that one
 * block. Measured (docs/NN_CPU.md "Winograd"): gear's 20x20 layer (25 tiles, U 2.9 MB)
 * 1.15-1.24 -> 0.80-0.88 ms at one thread; blocks of 24 on its 44x44 layer (64 tiles,
 * two blocks a thread) were slower at 2 threads, so larger shares keep 12. */
int nn_cpu_wino_block(const nn_cpu_wino *d, int threads)
{
    const double l2 = 1.5 * 1024 * 1024, P = (double)NN_CPU_WINO_POINTS(d);
    const int64_t share = (d->N * d->TY * d->TX + threads - 1) / threads;
    const int64_t tb = (share + 11) / 12 * 12;
    if (P * (double)(d->C * d->K) * 4 <= l2 || (double)tb * P * (double)(d->C + d->K) * 4 > l2)
        return 12;
    return (int)tb;
}

/* The sum of x[i] * w[i] in double, in eight partial sums (each product exact), in the
 * widest vectors the CPU has (GCC's target_clones): the Winograd check's reference. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static double
dot_f64(const float *x, const float *w, int64_t n)
{
    double s[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += (double)x[i + j] * w[i + j];
    for (; i < n; i++)
        s[0] += (double)x[i] * w[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* NMSE of our Winograd convolution (plus bias) against a direct one in double, on
 * 64 output pixels (the borders among them) of one image with a fixed-seed input in
 * [0, 1): the accuracy check that keeps a node on it. The image is cut to at most
 * 26x26 input pixels with the node's pads (the arithmetic per tile does not depend on
 * the image size; an enhancer's 512x512 layer would otherwise need 100+ MB here). -1
 * when out of memory. */
static double wino_check(const nn_cpu_wino *d, const float *w, const float *bias)
{
    nn_cpu_wino t = *d;
    t.N = 1, t.res = 0, t.pool = 0;
    t.act = (nn_cpu_act){.lo = -INFINITY, .hi = INFINITY};
    /* OH = IH + PT + PB - 2 gives the bottom (right) pad; keep it with a smaller input */
    int64_t pb = d->OH - d->IH - d->PT + 2, pr = d->OW - d->IW - d->PL + 2;
    if (t.IH > 26 && 26 + t.PT + pb - 2 >= 1) t.IH = 26, t.OH = 26 + t.PT + pb - 2;
    if (t.IW > 26 && 26 + t.PL + pr - 2 >= 1) t.IW = 26, t.OW = 26 + t.PL + pr - 2;
    t.TY = (t.OH + t.m - 1) / t.m, t.TX = (t.OW + t.m - 1) / t.m;
    const int64_t C = t.C, K = t.K;
    size_t nx = (size_t)(t.IH * t.IW * C), ny = (size_t)(t.OH * t.OW * K);
    size_t nw = (size_t)(K * 9 * C), ns = (size_t)NN_CPU_WINO_SCRATCH(&t);
    float *x = malloc(sizeof(float) * (nx + ny + nw + ns));
    if (!x) return -1;
    float *y = x + nx, *wt = y + ny, *scratch = wt + nw;
    nn_cpu_check_input(x, nx, 0, 1);
    nn_cpu_wino_tiles_avx512(&t, x, NULL, y, 0, t.TY * t.TX, scratch);
    /* the weights as [K][3][3][C], so that a tap's sum over channels reads both operands
     * in order, in partial sums (one chain of adds at stride 9 was a tenth of
     * dlib-resnet's plan) */
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++)
            for (int tap = 0; tap < 9; tap++)
                wt[(k * 9 + tap) * C + c] = w[(k * C + c) * 9 + tap];
    double num = 0, den = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            int64_t oy = i * (t.OH - 1) / 7, ox = j * (t.OW - 1) / 7;
            for (int64_t k = 0; k < K; k++) {
                double r = bias ? bias[k] : 0;
                for (int ky = 0; ky < 3; ky++) {
                    int64_t iy = oy - t.PT + ky;
                    for (int kx = 0; kx < 3 && iy >= 0 && iy < t.IH; kx++) {
                        int64_t ix = ox - t.PL + kx;
                        if (ix < 0 || ix >= t.IW) continue;
                        const float *xp = x + (iy * t.IW + ix) * C;
                        r += dot_f64(xp, wt + (k * 9 + ky * 3 + kx) * C, C);
                    }
                }
                double e = y[(oy * t.OW + ox) * K + k] - r;
                num += e * e, den += r * r;
            }
        }
    free(x);
    return den > 0 ? num / den : num;
}

/* A 3x3 Conv (stride 1, undilated, one group, channels in and out multiples of 16) on
 * our Winograd kernel, where the session allows Winograd and the accuracy check
 * passes; tensors not stored NHWC are staged as for the depthwise kernel.
 * CPU_UNSUPPORTED sends the node to oneDNN. */
static ffu_status build_wino_custom(cpu_ctx *c, const nn_tensor *x, const nn_tensor *w,
                                    const nn_tensor *b, const nn_tensor *r, const nn_tensor *y,
                                    const nn_window *win)
{
    const nn_node *n = c->n;
    int64_t C = x->shape.d[1], M = w->shape.d[0];
    int pool = nn_attr_int(n, "_pool", 0) == 2;
    if (!c->cb->base.winograd || x->shape.rank != 4 || nn_attr_int(n, "group", 1) != 1 ||
        win->k[1] != 3 || win->k[2] != 3 || win->stride[1] != 1 || win->stride[2] != 1 ||
        win->dil[1] != 1 || win->dil[2] != 1 || C % 16 || M % 16 ||
        !(ffu_cpu_features() & FFU_CPU_AVX512F))
        return CPU_UNSUPPORTED;
    /* Measured (docs/NN_CPU.md "Winograd"): U is 16/9 to 64/9 times the direct weights
     * and edge tiles are partly empty, so small layers take the smallest tiles and the
     * smallest lose: per call, F(4x4) vs oneDNN's direct, dlib-resnet at batch 2: 17x17
     * 0.108 vs 0.163 ms, 8x8 0.150 vs 0.143, 4x4 0.42 vs 0.20; F(2x2) at one thread:
     * dlib-resnet's 8x8 (128 -> 128) 0.094 vs 0.151, gear's 8x8 (192 outputs) 0.22 vs
     * 0.34. So at least 64 output pixels per run, F(2x2) under 256. The node's
     * `_cpu_wino` attribute (tests) forces the choice: 1 ours (still checked), 0 not. */
    int64_t force = nn_attr_int(n, "_cpu_wino", -1);
    const int64_t pixels = x->shape.d[0] * win->out[1] * win->out[2];
    if (force == 0 || (force < 0 && pixels < 64)) return CPU_UNSUPPORTED;
    our_conv oc;
    if (!our_conv_io(c, x, y, r, M, &oc)) return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK; /* dry: the oneDNN path takes the node if the check fails */

    /* F(6x6, 3x3) multiplies 64/36 per output where F(4x4, 3x3) needs 36/16, but its
     * bigger tiles overhang the edges more and its transforms cost more: measured
     * (docs/NN_CPU.md "Winograd") it wins by 10-33% on gear's 194..45 and dlib-resnet's
     * 35 and 17 outputs, loses on 20x20 (0.26 vs 0.22 ms) and 28x28 (0.033 vs 0.031).
     * So 6 where its multiplies over the padded tiles are under 0.9x F(4x4)'s, and 2
     * (above) under 256 output pixels. The `_cpu_wino_m` node attribute (tests) forces
     * 2, 4 or 6. */
    /* the outputs the tiles must cover: under a pool, not the last row (column) of an
     * odd height (width), which no pooled output reads (antispoof's 61x61 layer: 10x10
     * tiles of F(6x6), not 11x11) */
    const int64_t TH = pool ? win->out[1] / 2 * 2 : win->out[1];
    const int64_t TW = pool ? win->out[2] / 2 * 2 : win->out[2];
    int64_t a4 = (TH + 3) / 4 * 4 * ((TW + 3) / 4 * 4);
    int64_t a6 = (TH + 5) / 6 * 6 * ((TW + 5) / 6 * 6);
    int m = a6 * 64 * 16 < 0.9 * (double)(a4 * 36 * 36) ? 6 : 4;
    int64_t fm = nn_attr_int(n, "_cpu_wino_m", 0);
    if (pixels < 256) {
        /* a bf16 session runs such a layer in bf16 where its check passes, faster than
         * F(2x2) in f32 (dlib-resnet's 128-channel layers: the analysis' embed stage
         * 6.87-6.93 ms against 7.12-7.20 with them on F(2x2)) */
        if (c->cb->base.bf16 && force < 0) return CPU_UNSUPPORTED;
        m = 2;
    }
    if (fm == 2 || fm == 4 || fm == 6) m = (int)fm;
    /* U is (m + 2)^2 / 9 times the weights: at most 16 MB a node (an enhancer's 512 ->
     * 512 layer would hold 38 MB with F(4x4), 67 with F(6x6)); F(4x4) where F(6x6)
     * would pass that, oneDNN beyond it */
    const double cap = 16.0 * 1024 * 1024, wbytes = 4.0 * (double)C * (double)M;
    if (m == 6 && fm != 6 && 64 * wbytes > cap) m = 4;
    if (force < 0 && (m + 2) * (m + 2) * wbytes > cap) return CPU_UNSUPPORTED;
    int64_t P = (m + 2) * (m + 2);
    float *tail;
    /* U is all written by nn_cpu_wino_weights: only the bias and slopes start as zeros */
    nn_cpu_wino *d =
        own_kernel_data(c, sizeof *d, (size_t)(2 * M + P * C * M), 2 * (size_t)M, &tail);
    if (!d) return FFU_ERR_NOMEM;
    d->act = oc.av;
    d->N = x->shape.d[0], d->C = C, d->K = M;
    d->IH = x->shape.d[2], d->IW = x->shape.d[3], d->OH = win->out[1], d->OW = win->out[2];
    d->PT = (int)win->pad0[1], d->PL = (int)win->pad0[2];
    d->pool = pool, d->res = r != NULL;
    d->b = tail;
    d->ns = d->b + M;
    d->U = d->ns + M; /* M is a multiple of 16: U stays 64-byte aligned */
    conv_epilogue(c, b, oc.slopes, oc.nslopes, M, d->b, d->ns);
    double tol = variant_tol(n, "_cpu_wino_nmse", NN_CPU_WINO_NMSE);
    for (;;) {
        d->m = m;
        d->TY = (TH + m - 1) / m, d->TX = (TW + m - 1) / m;
        d->tb = nn_cpu_wino_block(d, c->cb->base.threads);
        nn_cpu_wino_weights(d, w->data);
        double e = wino_check(d, w->data, b ? b->data : NULL);
        if (e < 0) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        if (e < tol) break;
        /* F(6x6) rounds about 5x more than F(4x4): where it fails, try the smaller
         * tiles in the same memory before leaving the node to oneDNN (F(4x4) and
         * F(2x2) go to oneDNN) */
        if (m != 6 || fm == 6) return CPU_UNSUPPORTED;
        m = 4;
    }
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:wino%dx%d_avx512", m, m);
    size_t tmp = sizeof(float) * NN_CPU_WINO_SCRATCH(d) * (size_t)c->cb->base.threads;
    return nhwc_kernel_steps(c, &oc.io, wino_kernel, d, r != NULL, tmp);
}

/* ---- our kernel for 8-bit weights ---------------------------------------------------------- */

static void q8_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const nn_cpu_q8 *d = kd;
    /* whole blocks of pixels per thread; argument 2 is the residual when there is one,
     * then the threads' scratch */
    int64_t P = d->N * d->OH * d->OW, blocks = (P + NN_CPU_Q8_PIXELS - 1) / NN_CPU_Q8_PIXELS;
    int64_t p0 = blocks * ithr / nthr * NN_CPU_Q8_PIXELS;
    int64_t p1 = blocks * (ithr + 1) / nthr * NN_CPU_Q8_PIXELS;
    if (p1 > P) p1 = P;
    float *scratch = (float *)ptr[2 + d->res] + (size_t)ithr * NN_CPU_Q8_SCRATCH(d);
    if (p0 < p1) nn_cpu_q8_pixels_avx512(d, ptr[0], d->res ? ptr[2] : NULL, ptr[1], p0, p1, scratch);
}

/* A Conv (one group, undilated, output channels a multiple of 16) whose weights were
 * made from 8-bit codes (NN_T_Q8), on our kernel that rebuilds them from the codes,
 * where its weights outweigh its activations and the rebuild is bit for bit; tensors
 * not stored NHWC are staged as for the depthwise kernel. CPU_UNSUPPORTED sends the
 * node to oneDNN. */
static ffu_status build_q8_custom(cpu_ctx *c, const nn_tensor *x, const nn_tensor *w,
                                  const nn_tensor *b, const nn_tensor *r, const nn_tensor *y,
                                  const nn_window *win)
{
    const nn_node *n = c->n;
    int64_t C = x->shape.d[1], M = y->shape.d[1];
    if (!(w->flags & NN_T_Q8) || x->shape.rank != 4 || nn_attr_int(n, "group", 1) != 1 ||
        nn_attr_int(n, "_pool", 0) || win->dil[1] != 1 || win->dil[2] != 1 || M % 16 ||
        win->k[1] * win->k[2] > 64 ||
        !(ffu_cpu_features() & FFU_CPU_AVX512F))
        return CPU_UNSUPPORTED;
    /* Measured (docs/NN_CPU.md "8-bit weights"): dlib-resnet's 256-channel layers, 32
     * and 18 output pixels at batch 2 with 1.2-2.4 MB of f32 weights each, wait on the
     * weights; its 8x8 layers (128 pixels, 0.6 MB) do not. So at most 64 output pixels
     * per run and at least 1 MB of f32 weights. The node's `_cpu_q8` attribute (tests)
     * forces the choice: 1 ours (when the codes check out), 0 not. */
    int64_t force = nn_attr_int(n, "_cpu_q8", -1);
    int64_t KK = C * win->k[1] * win->k[2], P = x->shape.d[0] * win->out[1] * win->out[2];
    if (force == 0 || (force < 0 && (P > 64 || 4 * KK * M < 1024 * 1024))) return CPU_UNSUPPORTED;
    our_conv oc;
    if (!our_conv_io(c, x, y, r, M, &oc)) return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK; /* dry: the oneDNN path takes the node if the check fails */

    int64_t Kp = (M + 31) / 32 * 32;
    float *tail;
    nn_cpu_q8 *d = own_kernel_data(c, sizeof *d, (size_t)(3 * Kp + Kp * KK / 4), SIZE_MAX, &tail);
    if (!d) return FFU_ERR_NOMEM;
    d->mul = tail, d->b = d->mul + Kp, d->ns = d->b + Kp;
    uint8_t *q = (uint8_t *)(d->ns + Kp), *qk = malloc((size_t)KK);
    if (!qk) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    float u[256];
    d->scale = w->q8_scale, d->min = w->q8_min;
    for (int c8 = 0; c8 < 256; c8++) u[c8] = (float)c8 * d->scale + d->min; /* tfjs_load.c */
    const float *wd = w->data; /* [M][C][KH][KW] */
    const int KH = (int)win->k[1], KW = (int)win->k[2];
    d->KH = KH, d->KW = KW, d->C = C, d->q = q;
    int ok = 1;
    for (int64_t k = 0; ok && k < M; k++) {
        ok = nn_cpu_q8_channel_avx512(wd + k * KK, KK, u, d->scale, d->min, &d->mul[k], qk);
        uint8_t *qo = q + k / 32 * 32 * KK + k % 32;
        for (int64_t ch = 0; ok && ch < C; ch++)
            for (int tap = 0; tap < KH * KW; tap++)
                qo[(tap * C + ch) * 32] = qk[ch * KH * KW + tap];
    }
    free(qk);
    if (!ok) return CPU_UNSUPPORTED;
    d->act = oc.av;
    d->N = x->shape.d[0], d->K = M, d->Kp = Kp;
    d->IH = x->shape.d[2], d->IW = x->shape.d[3], d->OH = win->out[1], d->OW = win->out[2];
    d->SH = (int)win->stride[1], d->SW = (int)win->stride[2];
    d->PT = (int)win->pad0[1], d->PL = (int)win->pad0[2];
    d->res = r != NULL;
    conv_epilogue(c, b, oc.slopes, oc.nslopes, M, d->b, d->ns);
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:q8_avx512");
    size_t tmp_bytes = sizeof(float) * NN_CPU_Q8_SCRATCH(d) * (size_t)c->cb->base.threads;
    return nhwc_kernel_steps(c, &oc.io, q8_kernel, d, r != NULL, tmp_bytes);
}

/* ---- our kernel for heads with f16 weights ----------------------------------------------- */

static void h16_kernel(const void *kd, void *const *ptr, int ithr, int nthr)
{
    const nn_cpu_h16 *d = kd;
    int64_t n0 = d->N * ithr / nthr, n1 = d->N * (ithr + 1) / nthr;
    if (n0 < n1) nn_cpu_h16_heads_avx512(d, ptr[0], ptr[1], n0, n1);
}

/* 1 when f16 holds v exactly (finite; its bits, not a conversion and back, which cost
 * FaceMesh's plan 13 ms run in both the dry and the real build): normal f16 values keep
 * 10 mantissa bits, subnormal ones (2^-24 .. 2^-14) fewer. */
static int f16_exact(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    int e = (int)((u >> 23) & 0xff) - 127;
    uint32_t mant = u & 0x7fffff;
    if (e == -127) return mant == 0; /* zero (f32 subnormals are far below f16's) */
    if (e > 15) return 0;            /* too large, infinite or NaN */
    if (e >= -14) return (mant & 0x1fff) == 0;
    if (e >= -24) return (mant & ((1u << (13 + (-14 - e))) - 1)) == 0;
    return 0;
}

/* 1 when every one of n weights is an f16 value. */
static int all_f16_exact(const float *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!f16_exact(w[i])) return 0;
    return 1;
}

/* Whether a layer of KK inputs into M outputs goes on f16 weights: the node's
 * `_cpu_h16` attribute (tests) forces the choice (1 ours when the weights are f16 values,
 * 0 not); else at least 256 KB of f32 weights, all f16 values. The dry build does not
 * read the weights (it answers whether the node runs at all, and oneDNN runs it where
 * the weights are not f16 values): once per plan is enough for 0.8M of them. */
static int h16_wanted(const cpu_ctx *c, const float *w, int64_t KK, int64_t M)
{
    int64_t force = nn_attr_int(c->n, "_cpu_h16", -1);
    if (force == 0 || (force < 0 && 4 * KK * M < 256 * 1024)) return 0;
    return (ffu_cpu_features() & FFU_CPU_AVX512F) &&
           (!c->p || all_f16_exact(w, (size_t)(KK * M)));
}

/* The kernel data of an f16 layer for N images from weights wf, where output o's input
 * kk sits at wf[o * ostride + at[kk]]; b the bias (NULL: none), the activation as
 * our_conv_io gives it. NULL when out of memory (the error is set). */
static nn_cpu_h16 *h16_layer(cpu_ctx *c, const float *wf, int64_t ostride, const int64_t *at,
                             int64_t N, int64_t KK, int64_t M, const nn_tensor *b,
                             const our_conv *oc)
{
    int64_t Mp = (M + 15) / 16 * 16;
    float *tail;
    /* b and ns [Mp], then the halves (KK * Mp, 2 per float) in blocks of 64 outputs */
    nn_cpu_h16 *d = own_kernel_data(c, sizeof *d, (size_t)(2 * Mp + KK * Mp / 2), SIZE_MAX, &tail);
    float row[64];
    uint16_t h[64];
    if (!d) return NULL;
    d->b = tail, d->ns = tail + Mp;
    uint16_t *wh = (uint16_t *)(tail + 2 * Mp);
    for (int64_t o0 = 0; o0 < Mp; o0 += 64) { /* a block's halves, input by input */
        int64_t width = Mp - o0 < 64 ? Mp - o0 : 64;
        for (int64_t kk = 0; kk < KK; kk++) {
            for (int64_t j = 0; j < width; j++)
                row[j] = o0 + j < M ? wf[(o0 + j) * ostride + at[kk]] : 0.0f;
            nn_convert(row, FFU_DTYPE_F32, h, FFU_DTYPE_F16, (size_t)width);
            memcpy(wh + o0 * KK + kk * width, h, sizeof *h * (size_t)width);
        }
    }
    d->w = wh;
    d->N = N, d->KK = KK, d->M = M, d->Mp = Mp;
    d->act = oc->av;
    conv_epilogue(c, b, oc->slopes, oc->nslopes, M, d->b, d->ns);
    snprintf(c->p->impl, sizeof c->p->impl, "facefuse:h16_avx512");
    return d;
}

/* A Conv whose window is its whole input (one output pixel per image; no pads, group,
 * dilation, pool or residual) with weights that are f16 values (h16_wanted): ours, on
 * the f16 weights (cpu_h16_avx512.c). */
static ffu_status build_h16_custom(cpu_ctx *c, const nn_tensor *x, const nn_tensor *w,
                                   const nn_tensor *b, const nn_tensor *r, const nn_tensor *y,
                                   const nn_window *win)
{
    const nn_node *n = c->n;
    int64_t C = x->shape.d[1], M = y->shape.d[1];
    if (r || x->shape.rank != 4 || nn_attr_int(n, "group", 1) != 1 || nn_attr_int(n, "_pool", 0) ||
        win->out[1] != 1 || win->out[2] != 1 || win->k[1] != x->shape.d[2] ||
        win->k[2] != x->shape.d[3] || win->pad0[1] || win->pad0[2] || win->pad1[1] ||
        win->pad1[2] || win->dil[1] != 1 || win->dil[2] != 1)
        return CPU_UNSUPPORTED;
    const int64_t KH = win->k[1], KW = win->k[2], KK = C * KH * KW;
    our_conv oc;
    if (!h16_wanted(c, w->data, KK, M) || !our_conv_io(c, x, y, NULL, M, &oc))
        return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK; /* dry: nothing can fail from here on but memory */
    /* [M][C][KH][KW] read in the NHWC input's order, [KH][KW][C] */
    int64_t *at = malloc(sizeof *at * (size_t)KK);
    if (!at) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int64_t ky = 0, i = 0; ky < KH; ky++)
        for (int64_t kx = 0; kx < KW; kx++)
            for (int64_t ch = 0; ch < C; ch++) at[i++] = (ch * KH + ky) * KW + kx;
    nn_cpu_h16 *d = h16_layer(c, w->data, KK, at, x->shape.d[0], KK, M, b, &oc);
    free(at);
    if (!d) return FFU_ERR_NOMEM;
    return nhwc_kernel_steps(c, &oc.io, h16_kernel, d, 0, 0);
}

/* ---- Conv / ConvTranspose ------------------------------------------------------------------ */

/* The fused 2x2 stride-2 max pool of a convolution computed into scratch (from, at
 * off): a pooling step into the output, through a second staging buffer when the
 * output is stored NCHW (pooling keeps the layout). */
static ffu_status pool_step(cpu_ctx *c, const dnnl_memory_desc_t *from, size_t off,
                            const dnnl_memory_desc_t *out_t, const nn_tensor *y, int yl)
{
    dnnl_memory_desc_t to = *out_t;
    size_t to_off = 0;
    if (!yl) {
        if (nn_cpu_md_cl(&to, &y->shape) < 0) return CPU_UNSUPPORTED;
        to_off = nn_cpu_scratch(c, dnnl_memory_desc_get_size(&to));
    }
    dnnl_dims_t k = {2, 2}, st2 = {2, 2}, dil = {0, 0}, pad = {0, 0};
    dnnl_pooling_v2_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = nn_cpu_attr(c, 0);
    if (!attr) return FFU_ERR_NOMEM;
    int ok = dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, dnnl_pooling_max, from,
                                               &to, st2, k, dil, pad, pad) == dnnl_success &&
             dnnl_primitive_desc_create(&pd, &desc, attr, c->cb->eng, NULL) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (!ok) return CPU_UNSUPPORTED;
    ffu_status st;
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (s && ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC, from, CPU_BIND_SCRATCH, 0, off, NULL)) < 0 ||
              (st = nn_cpu_step_arg(c, s, DNNL_ARG_DST, &to, yl ? CPU_BIND_OUT : CPU_BIND_SCRATCH, 0,
                                    to_off, NULL)) < 0))
        return st;
    if (st < 0) return st;
    if (!yl) return nn_cpu_stage_step(c, &to, CPU_BIND_SCRATCH, to_off, out_t, CPU_BIND_OUT, 0);
    return FFU_OK;
}

static ffu_status build_conv_common(cpu_ctx *c, int transpose)
{
    const nn_graph *g = c->g;
    const nn_node *n = c->n;
    const nn_tensor *x = nn_cpu_f32_in(c, 0), *w = nn_cpu_f32_in(c, 1);
    const nn_tensor *b = nn_in(g, n, 2), *y = nn_out(g, n, 0);
    /* input 3: the residual a fused Add contributes (ir.h), added before the activation */
    const nn_tensor *r = transpose ? NULL : nn_in(g, n, 3);
    /* input 4: a fused scale that multiplies the sums before the bias is added (ir.h):
     * oneDNN binary post-ops (mul by it, add the bias), or our first-layer, depthwise
     * and 1x1 kernels with the scaled epilogue (nn_cpu_scaled) */
    const nn_tensor *sc = transpose ? NULL : nn_in(g, n, 4);
    if (!x || !w || !nn_cpu_is_const(w) || y->dtype != FFU_DTYPE_F32 ||
        n->ninputs > (transpose ? 3 : 5))
        return CPU_UNSUPPORTED;
    if (sc && (r || sc->dtype != FFU_DTYPE_F32 || nn_shape_numel(&sc->shape) != 1))
        return CPU_UNSUPPORTED;
    if (r && (r->dtype != FFU_DTYPE_F32 || !nn_shape_equal(&r->shape, &y->shape) ||
              n->inputs[3] == n->inputs[0]))
        return CPU_UNSUPPORTED;
    /* a fused 2x2 max pool (ir.h): the convolution's own output is ys, twice y */
    int pool = !transpose && nn_attr_int(n, "_pool", 0) == 2;
    if (pool && (r || y->shape.rank != 4)) return CPU_UNSUPPORTED;
    nn_shape ys = y->shape;
    int rank = x->shape.rank, nd = rank - 2;
    if (rank < 3 || rank > 5 || w->shape.rank != rank || y->shape.rank != rank)
        return CPU_UNSUPPORTED;
    int64_t G = nn_attr_int(n, "group", 1);
    int64_t N = x->shape.d[0], C = x->shape.d[1], M = y->shape.d[1];
    if (G < 1 || C % G || M % G || y->shape.d[0] != N) return CPU_UNSUPPORTED;
    /* ONNX weights: Conv [M, C/G, k..], ConvTranspose [C, M/G, k..] */
    if (!transpose && (w->shape.d[0] != M || w->shape.d[1] * G != C)) return CPU_UNSUPPORTED;
    if (transpose && (w->shape.d[0] != C || w->shape.d[1] * G != M)) return CPU_UNSUPPORTED;
    if (b && (b->dtype != FFU_DTYPE_F32 || !nn_cpu_is_const(b) || nn_shape_numel(&b->shape) != M))
        return CPU_UNSUPPORTED;

    nn_window win;
    if (nn_window_init(n, transpose ? NN_WINDOW_CONV_TRANSPOSE : NN_WINDOW_CONV, nd,
                       x->shape.d + 2, w->shape.d + 2, &win) < 0)
        return CPU_UNSUPPORTED;
    dnnl_dims_t strides, dil, pl, pr;
    for (int i = 0; i < nd; i++) {
        int s = 3 - nd + i;
        int64_t eff = (win.k[s] - 1) * win.dil[s] + 1;
        if (pool) ys.d[2 + i] = win.out[s];
        if ((pool ? win.out[s] / 2 : win.out[s]) != y->shape.d[2 + i]) return CPU_UNSUPPORTED;
        strides[i] = win.stride[s];
        dil[i] = win.dil[s] - 1;
        pl[i] = win.pad0[s];
        if (!transpose) {
            /* oneDNN: out = (in + pl + pr - eff) / stride + 1 with floor division */
            pr[i] = win.pad1[s];
            if ((win.in[s] + pl[i] + pr[i] - eff) / strides[i] + 1 != win.out[s])
                return CPU_UNSUPPORTED;
        } else {
            /* oneDNN: out = (in - 1) * stride + eff - pl - pr; output_padding and
             * output_shape both show up as a smaller right pad */
            pr[i] = (win.in[s] - 1) * strides[i] + eff - pl[i] - win.out[s];
            if (pr[i] < 0) return CPU_UNSUPPORTED;
        }
    }

    if (!transpose) {
        /* ours for a first layer before the others: it reads the plain input as stored
         * (before the first-layer path of oneDNN below, too); of ours the first-layer,
         * depthwise and 1x1 kernels take a fused scale */
        ffu_status cst = build_cf_custom(c, x, w, b, r, y, &win);
        if (cst == CPU_UNSUPPORTED) cst = build_dw_custom(c, x, w, b, r, y, &win);
        if (cst == CPU_UNSUPPORTED) cst = build_pw_custom(c, x, w, b, r, y, &win);
        if (cst == CPU_UNSUPPORTED && !sc) cst = build_q8_custom(c, x, w, b, r, y, &win);
        if (cst == CPU_UNSUPPORTED && !sc) cst = build_h16_custom(c, x, w, b, r, y, &win);
        if (cst == CPU_UNSUPPORTED && !sc) cst = build_wino_custom(c, x, w, b, r, y, &win);
        if (cst != CPU_UNSUPPORTED) return cst;
    }

    dnnl_memory_desc_t wei_any, wei_user, bias_md;
    int64_t wd[DNNL_MAX_NDIMS];
    int wr = 0;
    if (G > 1) wd[wr++] = G;
    wd[wr++] = M / G;
    wd[wr++] = C / G;
    for (int i = 0; i < nd; i++) wd[wr++] = w->shape.d[2 + i];
    if (dnnl_memory_desc_init_by_tag(&wei_any, wr, wd, dnnl_f32, dnnl_format_tag_any) !=
        dnnl_success)
        return CPU_UNSUPPORTED;
    /* the user weights as they sit in the ONNX tensor */
    static const dnnl_format_tag_t conv_tags[2][3] = {
        {dnnl_oiw, dnnl_oihw, dnnl_oidhw}, {dnnl_goiw, dnnl_goihw, dnnl_goidhw}};
    static const dnnl_format_tag_t deconv_tags[2][3] = {
        {dnnl_bac, dnnl_iohw, dnnl_iodhw}, {dnnl_acbd, dnnl_giohw, dnnl_giodhw}};
    dnnl_format_tag_t utag = (transpose ? deconv_tags : conv_tags)[G > 1][nd - 1];
    if (dnnl_memory_desc_init_by_tag(&wei_user, wr, wd, dnnl_f32, utag) != dnnl_success)
        return CPU_UNSUPPORTED;
    int64_t bd = M;
    if (b && nn_cpu_md_dims(&bias_md, 1, &bd, dnnl_f32) < 0) return CPU_UNSUPPORTED;
    /* with a scale the bias is the second binary post-op, not the primitive's bias */
    const nn_tensor *db = sc ? NULL : b;
    cpu_binary_po po[2];
    int npo = 0;
    if (sc) {
        int64_t ones[DNNL_MAX_NDIMS], per_ch[DNNL_MAX_NDIMS];
        for (int i = 0; i < rank; i++)
            ones[i] = 1, per_ch[i] = i == 1 ? M : 1;
        po[0].alg = dnnl_binary_mul;
        if (nn_cpu_md_dims(&po[npo++].md, rank, ones, dnnl_f32) < 0) return CPU_UNSUPPORTED;
        po[1].alg = dnnl_binary_add;
        if (b && nn_cpu_md_dims(&po[npo++].md, rank, per_ch, dnnl_f32) < 0) return CPU_UNSUPPORTED;
    }

    /* The primitive computes channels-last (oneDNN's fast f32 kernels); where the
     * tensors are NCHW, reorder steps convert at the node's boundary. Plain compute is
     * the fallback when no channels-last kernel exists (it then gets the reorders). */
    dnnl_memory_desc_t src_t, dst_t, src_md, dst_md;
    int xl = nn_cpu_layout(c, n->inputs[0]), yl = nn_cpu_layout(c, n->outputs[0]);
    if (nn_cpu_md_tensor(c, n->inputs[0], &src_t) < 0 ||
        nn_cpu_md_tensor(c, n->outputs[0], &dst_t) < 0)
        return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd = NULL, ref_pd = NULL;
    dnnl_memory_desc_t ref_src, ref_dst;
    int split = 0, ref_split = 0, cl = 1, src_cl = -1;
    ffu_status st = CPU_UNSUPPORTED;
    /* A first layer (few input channels, NCHW image in) with 16 outputs going to a
     * channels-last tensor: oneDNN's direct kernel reads NCHW and writes nChw16c,
     * which for exactly 16 channels is the NHWC byte layout, so neither side needs a
     * reorder (the 640x640 input reorder alone costs about as much as the conv). */
    if (!transpose && !r && !pool && !xl && yl && M == 16 && C <= 4 && G == 1 && rank == 4) {
        dnnl_dims_t dd = {y->shape.d[0], 16, y->shape.d[2], y->shape.d[3]};
        dnnl_convolution_desc_t desc;
        if (nn_cpu_md_plain(&src_md, &x->shape, dnnl_f32) == 0 &&
            dnnl_memory_desc_init_by_tag(&dst_md, 4, dd, dnnl_f32, dnnl_nChw16c) == dnnl_success &&
            dnnl_dilated_convolution_forward_desc_init(
                &desc, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wei_any,
                db ? &bias_md : NULL, &dst_md, strides, dil, pl, pr) == dnnl_success &&
            nn_cpu_pd_with_post(c, &desc, po, npo, r != NULL, &pd, &split) == FFU_OK) {
            const char *impl = NULL;
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            if (impl && strncmp(impl, "ref", 3) != 0 && strncmp(impl, "x64:gemm", 8) != 0) {
                src_cl = 0;
                cl = 2; /* the loop below is skipped and cl++ leaves 1 for the output */
            } else {
                dnnl_primitive_desc_destroy(pd);
                pd = NULL;
            }
        }
    }
    /* 16 channels in and out: nChw16c is byte for byte NHWC, and oneDNN's blocked
     * 1x1 kernel beats its NHWC one by ~8% there (YuNet's 320x320 and 160x160 layers) */
    int blk16 = !transpose && G == 1 && C == 16 && M == 16 && rank == 4 && w->shape.d[2] == 1 &&
                w->shape.d[3] == 1 && strides[0] == 1 && strides[1] == 1 && pl[0] == 0 &&
                pl[1] == 0 && pr[0] == 0 && pr[1] == 0;
    for (; cl >= 0 && cl <= 1 && !pd; cl--) {
        if (cl && blk16) {
            dnnl_dims_t sd = {x->shape.d[0], 16, x->shape.d[2], x->shape.d[3]};
            dnnl_dims_t dd = {ys.d[0], 16, ys.d[2], ys.d[3]};
            if (dnnl_memory_desc_init_by_tag(&src_md, 4, sd, dnnl_f32, dnnl_nChw16c) !=
                    dnnl_success ||
                dnnl_memory_desc_init_by_tag(&dst_md, 4, dd, dnnl_f32, dnnl_nChw16c) !=
                    dnnl_success)
                continue;
        } else if (cl ? nn_cpu_md_cl(&src_md, &x->shape) < 0 || nn_cpu_md_cl(&dst_md, &ys) < 0
                      : nn_cpu_md_plain(&src_md, &x->shape, dnnl_f32) < 0 ||
                            nn_cpu_md_plain(&dst_md, &ys, dnnl_f32) < 0) {
            continue;
        }
        dnnl_convolution_desc_t desc;
        dnnl_status_t ds =
            transpose
                ? dnnl_dilated_deconvolution_forward_desc_init(
                      &desc, dnnl_forward_inference, dnnl_deconvolution_direct, &src_md,
                      &wei_any, b ? &bias_md : NULL, &dst_md, strides, dil, pl, pr)
                : dnnl_dilated_convolution_forward_desc_init(
                      &desc, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wei_any,
                      db ? &bias_md : NULL, &dst_md, strides, dil, pl, pr);
        if (ds != dnnl_success) continue;
        if ((st = nn_cpu_pd_with_post(c, &desc, po, npo, r != NULL, &pd, &split)) == FFU_ERR_NOMEM)
            break;
        const char *impl = NULL;
        if (pd) dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        if (pd && cl && impl && strncmp(impl, "ref", 3) == 0) {
            /* only the reference kernel in channels-last: see whether plain has better */
            ref_pd = pd, ref_src = src_md, ref_dst = dst_md, ref_split = split;
            pd = NULL;
        }
    }
    if (cl != 2) cl++; /* the loop stepped past the layout it settled on */
    else cl = 1;
    if (!pd && ref_pd) {
        pd = ref_pd, src_md = ref_src, dst_md = ref_dst, split = ref_split, cl = 1;
    } else if (ref_pd) {
        dnnl_primitive_desc_destroy(ref_pd);
    }
    if (!pd) return st == FFU_ERR_NOMEM ? st : CPU_UNSUPPORTED;
    if (src_cl < 0) src_cl = cl;
    /* oneDNN's Winograd variant, where ours (build_wino_custom) did not take the node
     * (docs/NN_CPU.md "Winograd"): 3x3, stride 1, undilated, ungrouped, at least 16
     * input channels (with fewer oneDNN's direct kernel is faster), at least 32x32
     * output pixels, no fused pool. Winograd trades weight traffic (its transformed
     * weights are 16/9 or 36/9 times larger) and partly empty output tiles for fewer
     * multiplies, which pays only where each weight is reused over many pixels: dlib's
     * ResNet ran its 17x17 and smaller layers slower with it, its 35x35 ones 1.4x
     * faster. oneDNN's Winograd kernels read and write nChw16c: without AVX-512 tensors
     * between such layers are stored that way (blocked_plan), the others are staged (a
     * JIT reorder each; none for exactly 16 channels in channels-last, which is the same
     * bytes). Kept where oneDNN picks a Winograd kernel with the same post-ops and its
     * output matches the direct primitive's. */
    int blocked = 0;
    if (c->p && c->cb->base.winograd && !sc && nn_cpu_wino_shape(g, n)) {
        dnnl_dims_t sd = {x->shape.d[0], C, x->shape.d[2], x->shape.d[3]};
        dnnl_dims_t dd = {ys.d[0], M, ys.d[2], ys.d[3]};
        dnnl_memory_desc_t sw, dw;
        dnnl_convolution_desc_t desc;
        dnnl_primitive_desc_t pdw = NULL;
        int splitw = 0;
        if (dnnl_memory_desc_init_by_tag(&sw, 4, sd, dnnl_f32, dnnl_nChw16c) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&dw, 4, dd, dnnl_f32, dnnl_nChw16c) == dnnl_success &&
            dnnl_dilated_convolution_forward_desc_init(
                &desc, dnnl_forward_inference, dnnl_convolution_winograd, &sw, &wei_any,
                b ? &bias_md : NULL, &dw, strides, dil, pl, pr) == dnnl_success &&
            nn_cpu_pd_with_act(c, &desc, 0, r != NULL, &pdw, &splitw) == FFU_OK) {
            /* the node attribute (tests) overrides the tolerance */
            double tol = variant_tol(n, "_cpu_wino_nmse", NN_CPU_WINO_NMSE);
            if (splitw == split && nn_cpu_pd_is_winograd(pdw)) {
                double e = nn_cpu_variant_nmse(c, pd, pdw, &wei_user, w->data, b ? b->data : NULL);
                if (e >= 0 && e < tol) {
                    dnnl_primitive_desc_destroy(pd);
                    pd = pdw, pdw = NULL, src_md = sw, dst_md = dw, blocked = 1;
                }
            }
            if (pdw) dnnl_primitive_desc_destroy(pdw);
        }
    }
    /* The bf16 variant (docs/NN_CPU.md "bf16"): bf16 source and weights, f32 bias,
     * accumulation and output, in the layouts settled on above. Kept only where oneDNN
     * runs it on a bf16 kernel and the node's accuracy check passes; depthwise layers
     * are memory-bound and would only pay for the extra conversion. */
    dnnl_memory_desc_t src_f32 = src_md;
    int bf16 = 0;
    if (c->p && c->cb->base.bf16 && !blocked && !sc && !(G > 1 && C / G == 1)) {
        dnnl_memory_desc_t sb = src_md, wb = wei_any;
        sb.data_type = dnnl_bf16, wb.data_type = dnnl_bf16;
        dnnl_convolution_desc_t desc;
        dnnl_primitive_desc_t pdb = NULL;
        int splitb = 0;
        dnnl_status_t ds =
            transpose
                ? dnnl_dilated_deconvolution_forward_desc_init(
                      &desc, dnnl_forward_inference, dnnl_deconvolution_direct, &sb, &wb,
                      b ? &bias_md : NULL, &dst_md, strides, dil, pl, pr)
                : dnnl_dilated_convolution_forward_desc_init(
                      &desc, dnnl_forward_inference, dnnl_convolution_direct, &sb, &wb,
                      b ? &bias_md : NULL, &dst_md, strides, dil, pl, pr);
        if (ds == dnnl_success &&
            nn_cpu_pd_with_act(c, &desc, 1, r != NULL, &pdb, &splitb) == FFU_OK) {
            /* the node attribute (tests) overrides the tolerance */
            double tol = variant_tol(n, "_cpu_bf16_nmse", NN_CPU_BF16_NMSE);
            if (splitb == split && nn_cpu_pd_is_bf16(pdb)) {
                double e = nn_cpu_variant_nmse(c, pd, pdb, &wei_user, w->data, b ? b->data : NULL);
                if (e >= 0 && e < tol) {
                    dnnl_primitive_desc_destroy(pd);
                    pd = pdb, pdb = NULL, src_md = sb, bf16 = 1;
                }
            }
            if (pdb) dnnl_primitive_desc_destroy(pdb);
        }
    }
    nn_cpu_note_impl(c, pd);
    if (bf16) nn_cpu_note_bf16(c);
    dnnl_memory_desc_t wei_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    /* a tensor whose spatial dims are all 1 has the same bytes in both layouts */
    int x_free = 1, y_free = 1;
    for (int i = 2; i < rank; i++) x_free &= x->shape.d[i] == 1, y_free &= ys.d[i] == 1;
    /* tensors stored nChw16c (layout_plan: between Winograd layers) are the blocked
     * kernels' own layout, and need staging for a direct one */
    int xb = nn_cpu_blocked(c, n->inputs[0]), yb = nn_cpu_blocked(c, n->outputs[0]);
    int relayout = (xl != src_cl || xb) && !x_free;
    int stage_out = ((yl != cl || yb) && !y_free) || pool;
    if (blocked)
        relayout = !(xb || (xl && C == 16)), stage_out = !(yb || (yl && M == 16));
    int stage_in = relayout || bf16; /* bf16: the input is converted into scratch */
    size_t in_off = stage_in ? nn_cpu_scratch(c, dnnl_memory_desc_get_size(&src_md)) : 0;
    size_t out_off = stage_out ? nn_cpu_scratch(c, dnnl_memory_desc_get_size(&dst_md)) : 0;
    if (stage_in &&
        (st = relayout ? nn_cpu_stage_step(c, &src_t, CPU_BIND_IN, 0, &src_md, CPU_BIND_SCRATCH,
                                           in_off)
                       : nn_cpu_reorder_step(c, &src_f32, CPU_BIND_IN, 0, &src_md,
                                             CPU_BIND_SCRATCH, in_off)) < 0) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    cpu_bind ob = stage_out ? CPU_BIND_SCRATCH : CPU_BIND_OUT;
    /* The output as the other steps see it: computed channels-last it is NHWC (the
     * blocked 16-channel forms used above are byte for byte NHWC), but oneDNN has only reference kernels for some primitives on it (a
     * PReLU step: 3 ms instead of 20 us) and for reorders between the two tags. */
    dnnl_memory_desc_t dst_alt = dst_md;
    if (cl && (!blocked || M == 16) && nn_cpu_md_cl(&dst_alt, &ys) < 0) dst_alt = dst_md;
    if (r) {
        /* the sum post-op adds what dst holds: put the residual there first (nothing
         * to do when the planner gave the output the residual's buffer) */
        dnnl_memory_desc_t res_t;
        int rl = nn_cpu_layout(c, n->inputs[3]);
        if (nn_cpu_md_tensor(c, n->inputs[3], &res_t) < 0 || (!stage_out && rl != yl && !y_free)) {
            dnnl_primitive_desc_destroy(pd);
            return CPU_UNSUPPORTED;
        }
        /* Copy between descriptors oneDNN sees as the same layout: the blocked
         * 16-channel form is byte for byte NHWC, but a reorder between the two tags is
         * oneDNN's generic reference loop (100x slower than a copy). */
        const dnnl_memory_desc_t *to = &dst_alt, *from = &res_t;
        if (!stage_out) from = to; /* same layout, same bytes (checked above) */
        if ((st = nn_cpu_copy_in_step(c, 3, from, to, ob, out_off, !stage_out)) < 0) {
            dnnl_primitive_desc_destroy(pd);
            return st;
        }
        if (stage_out && c->p) c->p->nreorders++;
    }
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (s) {
        void *wdata = nn_cpu_reorder_owned(c, &wei_user, w->data, &wei_md, &st);
        if (!wdata) return st;
        if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC, &src_md,
                                  stage_in ? CPU_BIND_SCRATCH : CPU_BIND_IN, 0, in_off, NULL)) < 0 ||
            (st = nn_cpu_step_arg(c, s, DNNL_ARG_WEIGHTS, &wei_md, CPU_BIND_FIXED, 0, 0, wdata)) <
                0 ||
            (db && (st = nn_cpu_step_arg(c, s, DNNL_ARG_BIAS, &bias_md, CPU_BIND_FIXED, 0, 0,
                                         db->data)) < 0) ||
            (st = nn_cpu_step_arg(c, s, DNNL_ARG_DST, &dst_md, ob, 0, out_off, NULL)) < 0)
            return st;
        /* the scale (input 4) and the bias as the binary post-ops' second operands */
        if (sc && ((st = nn_cpu_step_arg(c, s, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                                         &po[0].md, CPU_BIND_IN, 4, 0, NULL)) < 0 ||
                   (npo > 1 &&
                    (st = nn_cpu_step_arg(c, s, DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1,
                                          &po[1].md, CPU_BIND_FIXED, 0, 0, b->data)) < 0)))
            return st;
    } else if (st < 0) {
        return st;
    }
    if (split && (st = nn_cpu_act_step(c, &dst_alt, M, ob, out_off)) < 0) return st;
    if (pool) return pool_step(c, &dst_alt, out_off, &dst_t, y, yl);
    if (stage_out)
        return nn_cpu_stage_step(c, &dst_md, CPU_BIND_SCRATCH, out_off, &dst_t, CPU_BIND_OUT, 0);
    return FFU_OK;
}

ffu_status nn_cpu_build_conv(cpu_ctx *c) { return build_conv_common(c, 0); }
ffu_status nn_cpu_build_conv_transpose(cpu_ctx *c) { return build_conv_common(c, 1); }

/* ---- Gemm / MatMul ----------------------------------------------------------------------- */

typedef struct mm_spec {
    int rank;                                            /* of every descriptor */
    int64_t a[DNNL_MAX_NDIMS], as[DNNL_MAX_NDIMS];       /* src dims and strides */
    int64_t b[DNNL_MAX_NDIMS], bs[DNNL_MAX_NDIMS];       /* weights dims and strides */
    int64_t d[DNNL_MAX_NDIMS];                           /* dst dims */
    int64_t ds[DNNL_MAX_NDIMS];                          /* dst strides (all 0: dense) */
    int swap;                                            /* src is input 1, weights input 0 */
    const nn_tensor *bias;                               /* Gemm C or NULL */
    int64_t cd[DNNL_MAX_NDIMS];                          /* bias dims */
    float alpha, beta;
    int64_t channels;                                    /* of the fused activation */
    int act_rank;
} mm_spec;

static int md_strided(dnnl_memory_desc_t *md, int rank, const int64_t *d, const int64_t *s)
{
    dnnl_dims_t dd, ss;
    for (int i = 0; i < rank; i++) dd[i] = d[i], ss[i] = s[i];
    return dnnl_memory_desc_init_by_strides(md, rank, dd, dnnl_f32, ss) == dnnl_success ? 0 : -1;
}

/* Builds the matmul primitive: src = input 0, weights = input 1 (the other way round
 * with m->swap; reordered once when constant, scaled by alpha), bias = input 2 (scaled
 * by beta; constant unless beta is 1), dst = output 0. */
static ffu_status build_mm(cpu_ctx *c, const mm_spec *m)
{
    const nn_node *n = c->n;
    const int src_in = m->swap ? 1 : 0, wei_in = 1 - src_in;
    const nn_tensor *wt = nn_in(c->g, n, wei_in);
    int r = m->rank, wconst = nn_cpu_is_const(wt);
    if (!wconst && m->alpha != 1.0f) return CPU_UNSUPPORTED;
    if (m->bias && !nn_cpu_is_const(m->bias) && m->beta != 1.0f) return CPU_UNSUPPORTED;
    dnnl_memory_desc_t src_md, wei_user, wei_md, dst_md, bias_md;
    if (md_strided(&src_md, r, m->a, m->as) < 0 || md_strided(&wei_user, r, m->b, m->bs) < 0 ||
        (m->ds[r - 1] ? md_strided(&dst_md, r, m->d, m->ds)
                      : nn_cpu_md_dims(&dst_md, r, m->d, dnnl_f32)) < 0)
        return CPU_UNSUPPORTED;
    wei_md = wei_user;
    if (wconst) {
        dnnl_dims_t bd;
        for (int i = 0; i < r; i++) bd[i] = m->b[i];
        if (dnnl_memory_desc_init_by_tag(&wei_md, r, bd, dnnl_f32, dnnl_format_tag_any) !=
            dnnl_success)
            return CPU_UNSUPPORTED;
    }
    if (m->bias && nn_cpu_md_dims(&bias_md, r, m->cd, dnnl_f32) < 0) return CPU_UNSUPPORTED;
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &src_md, &wei_md, m->bias ? &bias_md : NULL, &dst_md) !=
        dnnl_success)
        return CPU_UNSUPPORTED;
    if (c->n->act.kind == NN_ACT_PRELU && m->act_rank != r) return CPU_UNSUPPORTED;
    dnnl_primitive_desc_t pd = NULL;
    int split;
    ffu_status st = nn_cpu_pd_with_act(c, &desc, 1, 0, &pd, &split);
    if (st < 0) return st;
    /* The bf16 variant (docs/NN_CPU.md "bf16"), as for convolutions: constant weights
     * (and bias) only, unscaled, kept where a bf16 kernel runs it and the accuracy
     * check passes; the input is converted into scratch by a reorder step. */
    dnnl_memory_desc_t src_f32 = src_md;
    int bf16 = 0;
    if (c->p && c->cb->base.bf16 && wconst && m->alpha == 1.0f &&
        (!m->bias || (nn_cpu_is_const(m->bias) && m->beta == 1.0f))) {
        dnnl_memory_desc_t sb = src_md, wb = wei_md;
        sb.data_type = dnnl_bf16, wb.data_type = dnnl_bf16;
        dnnl_matmul_desc_t descb;
        dnnl_primitive_desc_t pdb = NULL;
        int splitb = 0;
        if (dnnl_matmul_desc_init(&descb, &sb, &wb, m->bias ? &bias_md : NULL, &dst_md) ==
                dnnl_success &&
            nn_cpu_pd_with_act(c, &descb, 1, 0, &pdb, &splitb) == FFU_OK) {
            double tol = variant_tol(n, "_cpu_bf16_nmse", NN_CPU_BF16_NMSE);
            if (splitb == split && nn_cpu_pd_is_bf16(pdb)) {
                double e = nn_cpu_variant_nmse(c, pd, pdb, &wei_user, wt->data,
                                            m->bias ? m->bias->data : NULL);
                if (e >= 0 && e < tol) {
                    dnnl_primitive_desc_destroy(pd);
                    pd = pdb, pdb = NULL, src_md = sb, bf16 = 1;
                }
            }
            if (pdb) dnnl_primitive_desc_destroy(pdb);
        }
    }
    nn_cpu_note_impl(c, pd);
    if (bf16) nn_cpu_note_bf16(c);
    if (wconst) wei_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    size_t in_off = 0;
    if (bf16) {
        in_off = nn_cpu_scratch(c, dnnl_memory_desc_get_size(&src_md));
        if ((st = nn_cpu_reorder_step(c, &src_f32, CPU_BIND_IN, src_in, &src_md, CPU_BIND_SCRATCH,
                                      in_off)) < 0) {
            dnnl_primitive_desc_destroy(pd);
            return st;
        }
    }
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (!s) return st < 0 ? st : split ? nn_cpu_act_step(c, &dst_md, m->channels, CPU_BIND_OUT, 0) : FFU_OK;

    if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC, &src_md, bf16 ? CPU_BIND_SCRATCH : CPU_BIND_IN,
                              src_in, in_off, NULL)) < 0)
        return st;
    if (wconst) {
        const void *wsrc = wt->data;
        if (m->alpha != 1.0f) { /* fold alpha into a scaled copy of the weights */
            size_t cnt = wt->nbytes / sizeof(float);
            float *scaled = nn_cpu_own(c, wt->nbytes);
            if (!scaled) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            for (size_t i = 0; i < cnt; i++) scaled[i] = m->alpha * ((const float *)wt->data)[i];
            wsrc = scaled;
        }
        void *wdata = nn_cpu_reorder_owned(c, &wei_user, wsrc, &wei_md, &st);
        if (!wdata) return st;
        st = nn_cpu_step_arg(c, s, DNNL_ARG_WEIGHTS, &wei_md, CPU_BIND_FIXED, 0, 0, wdata);
    } else {
        st = nn_cpu_step_arg(c, s, DNNL_ARG_WEIGHTS, &wei_md, CPU_BIND_IN, wei_in, 0, NULL);
    }
    if (st < 0) return st;
    if (m->bias) {
        if (nn_cpu_is_const(m->bias)) {
            const void *bsrc = m->bias->data;
            if (m->beta != 1.0f) {
                size_t cnt = m->bias->nbytes / sizeof(float);
                float *scaled = nn_cpu_own(c, m->bias->nbytes);
                if (!scaled) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
                for (size_t i = 0; i < cnt; i++)
                    scaled[i] = m->beta * ((const float *)m->bias->data)[i];
                bsrc = scaled;
            }
            st = nn_cpu_step_arg(c, s, DNNL_ARG_BIAS, &bias_md, CPU_BIND_FIXED, 0, 0,
                                 (void *)bsrc);
        } else {
            st = nn_cpu_step_arg(c, s, DNNL_ARG_BIAS, &bias_md, CPU_BIND_IN, 2, 0, NULL);
        }
        if (st < 0) return st;
    }
    if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_DST, &dst_md, CPU_BIND_OUT, 0, 0, NULL)) < 0)
        return st;
    return split ? nn_cpu_act_step(c, &dst_md, m->channels, CPU_BIND_OUT, 0) : FFU_OK;
}

/* A Gemm of a plain [rows, K] input with constant weights that are f16 values
 * (h16_wanted: the antispoofing model's 3136 -> 128 layer), unscaled, with one bias per
 * output or none: ours on the f16 weights (cpu_h16_avx512.c), each row an image. */
static ffu_status build_h16_gemm(cpu_ctx *c, const mm_spec *m)
{
    const nn_node *n = c->n;
    const nn_tensor *w = nn_in(c->g, n, 1);
    const int64_t rows = m->a[0], K = m->a[1], N = m->b[1];
    if (m->as[1] != 1 || !nn_cpu_is_const(w) || m->alpha != 1.0f ||
        nn_cpu_layout(c, n->inputs[0]) || nn_cpu_layout(c, n->outputs[0]) ||
        (m->bias && (m->beta != 1.0f || !nn_cpu_is_const(m->bias) || m->cd[0] != 1 ||
                     m->cd[1] != N)))
        return CPU_UNSUPPORTED;
    if (n->act.kind == NN_ACT_PRELU) { /* slopes along the outputs, or one */
        const nn_tensor *t = n->act.slope >= 0 && n->act.slope < c->g->ntensors
                                 ? &c->g->tensors[n->act.slope]
                                 : NULL;
        int64_t k = t ? nn_shape_numel(&t->shape) : 0;
        if (k != 1 && (k != N || t->shape.d[t->shape.rank - 1] != N)) return CPU_UNSUPPORTED;
    }
    our_conv oc;
    if (!h16_wanted(c, w->data, K, N) || !conv_act(c, N, &oc.av, &oc.slopes, &oc.nslopes))
        return CPU_UNSUPPORTED;
    if (!c->p) return FFU_OK; /* dry: nothing can fail from here on but memory */
    /* output o's input k at o * bs[1] + k * bs[0], the strides build_mm reads B with */
    int64_t *at = malloc(sizeof *at * (size_t)K);
    if (!at) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < K; k++) at[k] = k * m->bs[0];
    nn_cpu_h16 *d = h16_layer(c, w->data, m->bs[1], at, rows, K, N, m->bias, &oc);
    free(at);
    if (!d) return FFU_ERR_NOMEM;
    ffu_status st;
    cpu_step *s = nn_cpu_add_kernel_step(c, h16_kernel, d, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, 0, NULL, CPU_BIND_IN, 0, 0, NULL)) < 0) return st;
    return nn_cpu_step_arg(c, s, 1, NULL, CPU_BIND_OUT, 0, 0, NULL);
}

ffu_status nn_cpu_build_gemm(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *a = nn_cpu_f32_in(c, 0), *b = nn_cpu_f32_in(c, 1);
    const nn_tensor *cc = nn_in(c->g, n, 2), *y = nn_out(c->g, n, 0);
    if (!a || !b || a->shape.rank != 2 || b->shape.rank != 2 || y->dtype != FFU_DTYPE_F32 ||
        y->shape.rank != 2 || n->ninputs > 3)
        return CPU_UNSUPPORTED;
    int ta = nn_attr_int(n, "transA", 0) != 0, tb = nn_attr_int(n, "transB", 0) != 0;
    mm_spec m = {.rank = 2, .alpha = nn_attr_float(n, "alpha", 1), .beta = nn_attr_float(n, "beta", 1)};
    int64_t M = ta ? a->shape.d[1] : a->shape.d[0], K = ta ? a->shape.d[0] : a->shape.d[1];
    int64_t N = tb ? b->shape.d[0] : b->shape.d[1], K2 = tb ? b->shape.d[1] : b->shape.d[0];
    if (K != K2 || y->shape.d[0] != M || y->shape.d[1] != N) return CPU_UNSUPPORTED;
    m.a[0] = M, m.a[1] = K;
    m.as[0] = ta ? 1 : K, m.as[1] = ta ? M : 1;
    m.b[0] = K, m.b[1] = N;
    m.bs[0] = tb ? 1 : N, m.bs[1] = tb ? K : 1;
    m.d[0] = M, m.d[1] = N;
    if (cc && m.beta != 0.0f) {
        if (cc->dtype != FFU_DTYPE_F32 || !nn_shape_known(&cc->shape) || cc->shape.rank > 2)
            return CPU_UNSUPPORTED;
        /* right-aligned numpy broadcast of C onto [M, N] */
        m.cd[0] = cc->shape.rank == 2 ? cc->shape.d[0] : 1;
        m.cd[1] = cc->shape.rank >= 1 ? cc->shape.d[cc->shape.rank - 1] : 1;
        if ((m.cd[0] != 1 && m.cd[0] != M) || (m.cd[1] != 1 && m.cd[1] != N))
            return CPU_UNSUPPORTED;
        m.bias = cc;
    }
    m.channels = N;
    m.act_rank = 2;
    ffu_status st = build_h16_gemm(c, &m);
    return st == CPU_UNSUPPORTED ? build_mm(c, &m) : st;
}

ffu_status nn_cpu_build_matmul(cpu_ctx *c)
{
    const nn_tensor *a = nn_cpu_f32_in(c, 0), *b = nn_cpu_f32_in(c, 1);
    const nn_tensor *y = nn_out(c->g, c->n, 0);
    if (!a || !b || y->dtype != FFU_DTYPE_F32 || c->n->ninputs != 2) return CPU_UNSUPPORTED;
    int ra = a->shape.rank, rb = b->shape.rank;
    if (ra < 1 || rb < 1) return CPU_UNSUPPORTED;
    /* 1-D operands get a unit M or N dimension, as numpy does */
    int64_t ad[DNNL_MAX_NDIMS], bd[DNNL_MAX_NDIMS];
    int ra2 = ra == 1 ? 2 : ra, rb2 = rb == 1 ? 2 : rb;
    if (ra2 > DNNL_MAX_NDIMS || rb2 > DNNL_MAX_NDIMS) return CPU_UNSUPPORTED;
    if (ra == 1) ad[0] = 1, ad[1] = a->shape.d[0];
    else memcpy(ad, a->shape.d, sizeof(int64_t) * (size_t)ra);
    if (rb == 1) bd[0] = b->shape.d[0], bd[1] = 1;
    else memcpy(bd, b->shape.d, sizeof(int64_t) * (size_t)rb);
    mm_spec m = {.alpha = 1, .beta = 1};
    int r = ra2 > rb2 ? ra2 : rb2;
    m.rank = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra2), ib = i - (r - rb2);
        m.a[i] = ia >= 0 ? ad[ia] : 1;
        m.b[i] = ib >= 0 ? bd[ib] : 1;
    }
    int64_t M = m.a[r - 2], K = m.a[r - 1], N = m.b[r - 1];
    if (m.b[r - 2] != K) return CPU_UNSUPPORTED;
    int64_t numel = M * N;
    for (int i = 0; i < r - 2; i++) {
        if (m.a[i] != m.b[i] && m.a[i] != 1 && m.b[i] != 1) return CPU_UNSUPPORTED;
        m.d[i] = m.a[i] > m.b[i] ? m.a[i] : m.b[i];
        numel *= m.d[i];
    }
    m.d[r - 2] = M, m.d[r - 1] = N;
    if (numel != nn_shape_numel(&y->shape)) return CPU_UNSUPPORTED;
    int64_t sa = 1, sb = 1;
    for (int i = r - 1; i >= 0; i--) {
        m.as[i] = sa, m.bs[i] = sb;
        sa *= m.a[i], sb *= m.b[i];
    }
    /* the activation's channel axis is output axis 1 (see nn_apply_node_act) */
    m.act_rank = y->shape.rank;
    m.channels = y->shape.rank >= 2 ? y->shape.d[1] : 1;
    if (c->n->act.kind == NN_ACT_PRELU && (ra == 1 || rb == 1)) {
        const nn_tensor *s = c->n->act.slope >= 0 ? &c->g->tensors[c->n->act.slope] : NULL;
        if (!s || nn_shape_numel(&s->shape) != 1) return CPU_UNSUPPORTED;
        m.act_rank = r;
    }
    return build_mm(c, &m);
}

/* ---- Einsum ------------------------------------------------------------------------------- */

/* One role's labels (einsum.c) merged into one matmul dim: the innermost labels that
 * follow each other in memory, in one order, in each of the nt tensors that hold them
 * (label steps st[t][l]); the labels outside that run go to rest[] (*nrest). Labels of
 * size 1 are left out; none at all gives a dim of 1. */
typedef struct mm_group {
    int64_t size, step[2];
} mm_group;

static void merge_group(const nn_einsum *e, const int *lab, int n, const int64_t *const *st, int nt,
                        mm_group *gr, int *rest, int *nrest)
{
    int ord[NN_EINSUM_MAX_LABELS], k = 0;
    for (int i = 0; i < n; i++)
        if (e->size[lab[i]] != 1) ord[k++] = lab[i];
    /* outermost first by the first tensor's steps */
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && st[0][ord[j]] > st[0][ord[j - 1]]; j--) {
            int t = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = t;
        }
    gr->size = 1;
    gr->step[0] = gr->step[1] = 1;
    int first = k; /* the run is ord[first..k-1] */
    while (first > 0) {
        int l = ord[first - 1], ok = 1;
        for (int t = 0; t < nt; t++)
            ok &= st[t][l] != 0 &&
                  (first == k || st[t][l] == e->size[ord[first]] * st[t][ord[first]]);
        if (!ok) break;
        first--;
        gr->size *= e->size[l];
    }
    for (int t = 0; first < k && t < nt; t++)
        gr->step[t] = st[t][ord[k - 1]];
    *nrest = first;
    memcpy(rest, ord, sizeof(int) * (size_t)first);
}

/* An Einsum of two f32 operands without diagonals whose every index is a batch index
 * (in both operands and the output), a row index (first operand and output), a column
 * index (second operand and output) or a contracted one (both operands only): one
 * batched matmul with strided operands and output, no transposes. The innermost run of
 * row indices that merges into one dim is the matmul's rows (merge_group), the other
 * row indices become batch dims the second operand broadcasts; the same for columns;
 * contracted indices must all merge. Where the output's rows are its inner dim, the
 * product is computed transposed (src and weights swapped), which oneDNN's fast
 * kernels want. The rest (a single operand, three, an index summed within one
 * operand, a diagonal) runs on ref. */
ffu_status nn_cpu_build_einsum(cpu_ctx *c)
{
    const nn_node *n = c->n;
    const nn_tensor *y = nn_out(c->g, n, 0);
    nn_einsum e;
    if (n->ninputs != 2 || !nn_cpu_f32_in(c, 0) || !nn_cpu_f32_in(c, 1) ||
        y->dtype != FFU_DTYPE_F32 || nn_shape_numel(&y->shape) <= 0)
        return CPU_UNSUPPORTED;
    if (nn_einsum_geom(c->g, n, &e) < 0) {
        ffu_error_clear();
        return CPU_UNSUPPORTED;
    }
    if (e.diag[0] || e.diag[1]) return CPU_UNSUPPORTED;
    /* steps: [0] first operand, [1] second, [2] the dense output */
    int64_t st[3][NN_EINSUM_MAX_LABELS];
    memcpy(st[0], e.step[0], sizeof st[0]);
    memcpy(st[1], e.step[1], sizeof st[1]);
    int64_t o = 1;
    for (int l = e.nlabels - 1; l >= 0; l--) {
        st[2][l] = l < e.nout ? o : 0;
        if (l < e.nout) o *= e.size[l];
    }
    int bl[NN_EINSUM_MAX_LABELS], ml[NN_EINSUM_MAX_LABELS], nl[NN_EINSUM_MAX_LABELS],
        kl[NN_EINSUM_MAX_LABELS], nb = 0, nm = 0, nn = 0, nk = 0;
    for (int l = 0; l < e.nlabels; l++) {
        int a = e.has[0][l], b = e.has[1][l], out = l < e.nout;
        if (e.size[l] == 1) continue;
        if (a && b && out)
            bl[nb++] = l;
        else if (a && out)
            ml[nm++] = l;
        else if (b && out)
            nl[nn++] = l;
        else if (a && b)
            kl[nk++] = l;
        else
            return CPU_UNSUPPORTED;
    }
    /* rows live in the first operand and the output, columns in the second and the
     * output, contracted indices in both operands */
    const int64_t *rows[2] = {st[0], st[2]}, *cols[2] = {st[1], st[2]}, *inner[2] = {st[0], st[1]};
    mm_group gm, gn, gk;
    int rest, more;
    merge_group(&e, ml, nm, rows, 2, &gm, bl + nb, &more);
    nb += more;
    merge_group(&e, nl, nn, cols, 2, &gn, bl + nb, &more);
    nb += more;
    merge_group(&e, kl, nk, inner, 2, &gk, kl, &rest);
    if (rest || nb + 2 > DNNL_MAX_NDIMS) return CPU_UNSUPPORTED;
    mm_spec m = {.rank = nb + 2, .alpha = 1, .beta = 1, .channels = 1};
    m.act_rank = m.rank;
    /* transposed when the output's column step is not 1 and its row step is */
    m.swap = gn.step[1] != 1 && gm.step[1] == 1 && gm.size > 1;
    const int sa = m.swap, sb = 1 - sa; /* the operands as src and weights */
    for (int i = 0; i < nb; i++) {
        int l = bl[i];
        /* a batch index one operand lacks or broadcasts (step 0) is a dim of 1 there */
        m.a[i] = st[sa][l] ? e.size[l] : 1, m.as[i] = st[sa][l] ? st[sa][l] : 1;
        m.b[i] = st[sb][l] ? e.size[l] : 1, m.bs[i] = st[sb][l] ? st[sb][l] : 1;
        m.d[i] = e.size[l], m.ds[i] = st[2][l];
    }
    const mm_group *gr = m.swap ? &gn : &gm, *gc = m.swap ? &gm : &gn;
    int r = nb;
    m.a[r] = gr->size, m.as[r] = gr->step[0], m.a[r + 1] = gk.size, m.as[r + 1] = gk.step[sa];
    m.b[r] = gk.size, m.bs[r] = gk.step[sb], m.b[r + 1] = gc->size, m.bs[r + 1] = gc->step[0];
    m.d[r] = gr->size, m.ds[r] = gr->step[1], m.d[r + 1] = gc->size, m.ds[r + 1] = gc->step[1];
    return build_mm(c, &m);
}

#endif
