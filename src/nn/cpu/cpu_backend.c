/* The `cpu` backend: runs graph nodes with oneDNN primitives (Debian libdnnl, C API
 * v2.x) and leaves everything else to `ref`. This file holds the vtable, the engine
 * and stream, threading, and the step machinery described in cpu_internal.h; the op
 * builders live in cpu_dense.c (Conv, ConvTranspose, Gemm, MatMul) and cpu_misc.c.
 *
 * Threads: Debian's libdnnl uses the OpenMP runtime, where a primitive runs on as many
 * threads as omp_get_max_threads() says in the calling thread. That value is a
 * per-thread OpenMP setting, so the backend sets it to its own thread count around
 * primitive creation and execution and restores the caller's value afterwards: the
 * host process's other threads and its own OpenMP code never see the change. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"
#include "../nn_internal.h"

#if FFU_HAVE_DNNL

#include "cpu_internal.h"

#if defined(__has_include)
#if __has_include(<omp.h>)
#include <omp.h>
#define CPU_HAVE_OMP_H 1
#endif
#endif
#ifndef CPU_HAVE_OMP_H
/* The OpenMP runtime calls we need (libgomp's C ABI), for compilers without omp.h. */
int omp_get_max_threads(void);
void omp_set_num_threads(int n);
int omp_get_thread_num(void);
int omp_get_num_threads(void);
#endif
/* libgomp's entry point behind `#pragma omp parallel` (stable since GCC 4.9). Our own
 * kernels run on the same worker threads as oneDNN's primitives this way, without
 * compiling the library with -fopenmp. */
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);

/* ---- threads -------------------------------------------------------------------------- */

static int threads_enter(int threads)
{
    int old = omp_get_max_threads();
    if (old != threads) omp_set_num_threads(threads);
    return old;
}

static void threads_leave(int threads, int old)
{
    if (old != threads) omp_set_num_threads(old);
}

typedef struct side_job {
    ffu_nn_job_fn fn;
    void *arg;
    int n;
} side_job;

static void side_thread(void *p)
{
    const side_job *j = p;
    for (int k = omp_get_thread_num(), nt = omp_get_num_threads(); k < j->n; k += nt)
        j->fn(j->arg, k);
}

void ffu_nn_run_side_by_side(int n, ffu_nn_job_fn fn, void *arg)
{
    if (n <= 1) { /* no team for one job */
        if (n == 1) fn(arg, 0);
        return;
    }
    side_job j = {fn, arg, n};
    GOMP_parallel(side_thread, &j, (unsigned)n, 0);
}

/* The threads a graph's nodes run on: the backend's, or fewer when its nodes are small.
 * Each node split over threads pays a fork and a join (a few microseconds on the 2-vCPU
 * VM: a tiny node takes 4-5 us more on two threads than on one), so splitting wins
 * only where the nodes are large enough on average. Measured on 13 models, each alone,
 * one thread against two in one process (docs/NN_CPU.md "Threads"): every model at
 * 1.1-1.8 MFLOP per node ran 3-56% slower on two threads (MediaPipe's short-range
 * detector, FaceMesh and its iris model, the landmarks detector, both MiniFASNets,
 * Peppa), every one at 2.5 and above 8-39% faster (two UltraFaces, two YuNets, PFLD,
 * MobileFaceNet). So each thread is given at least FLOPS_PER_THREAD of the average
 * node: one thread under 2 MFLOP a node, two from there. More threads than two follow
 * the same share without having been measured (this VM has two). Deciding node by node
 * was slower still on FaceMesh: a worker idle through a run of one-thread nodes has to
 * be woken for the next split one. */
enum { FLOPS_PER_THREAD = 1000000 };

static int graph_threads(const cpu_backend *cb, const nn_graph *g, int me)
{
    int all = cb->base.threads > 1 ? cb->base.threads : 1;
    if (all == 1 || cb->split_small) return all;
    int64_t flops = 0, nodes = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].backend != me) continue;
        int64_t f = nn_node_flops(g, &g->nodes[i]);
        flops += f > 0 ? f : 0;
        nodes++;
    }
    int64_t t = nodes ? flops / nodes / FLOPS_PER_THREAD : 0;
    return t < 1 ? 1 : t < all ? (int)t : all;
}

/* ---- descriptors ------------------------------------------------------------------------ */

int nn_cpu_md_dims(dnnl_memory_desc_t *md, int rank, const int64_t *dims, dnnl_data_type_t dt)
{
    dnnl_dims_t d, strides;
    if (rank > DNNL_MAX_NDIMS) return -1;
    if (rank == 0) {
        d[0] = 1;
        strides[0] = 1;
        rank = 1;
    } else {
        int64_t s = 1;
        for (int i = rank - 1; i >= 0; i--) {
            if (dims[i] <= 0) return -1;
            d[i] = dims[i];
            strides[i] = s;
            s *= dims[i];
        }
    }
    return dnnl_memory_desc_init_by_strides(md, rank, d, dt, strides) == dnnl_success ? 0 : -1;
}

int nn_cpu_md_plain(dnnl_memory_desc_t *md, const nn_shape *s, dnnl_data_type_t dt)
{
    if (!nn_shape_known(s)) return -1;
    return nn_cpu_md_dims(md, s->rank, s->d, dt);
}

int nn_cpu_md_cl(dnnl_memory_desc_t *md, const nn_shape *s)
{
    static const dnnl_format_tag_t tags[3] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};
    if (!nn_shape_known(s) || s->rank < 3 || s->rank > 5) return -1;
    dnnl_dims_t d;
    for (int i = 0; i < s->rank; i++) d[i] = s->d[i];
    return dnnl_memory_desc_init_by_tag(md, s->rank, d, dnnl_f32, tags[s->rank - 3]) ==
                   dnnl_success
               ? 0
               : -1;
}

int nn_cpu_layout(const cpu_ctx *c, int t)
{
    const cpu_backend *cb = c->cb;
    return !c->plain && t >= 0 && cb->lay_g == c->g && t < cb->lay_nt && cb->lay[t];
}

int nn_cpu_blocked(const cpu_ctx *c, int t)
{
    const cpu_backend *cb = c->cb;
    return !c->plain && t >= 0 && cb->lay_g == c->g && t < cb->lay_nt && cb->lay[t] == 2;
}

int nn_cpu_stored_nhwc(const cpu_ctx *c, int t)
{
    return nn_cpu_layout(c, t) && (!nn_cpu_blocked(c, t) || c->g->tensors[t].shape.d[1] == 16);
}

int nn_cpu_wino_shape(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, 1), *y = nn_out(g, n, 0);
    if (n->op != NN_OP_CONV || !x || !w || !y || x->shape.rank != 4 || w->shape.rank != 4 ||
        y->shape.rank != 4 || !nn_shape_known(&y->shape))
        return 0;
    if (w->shape.d[2] != 3 || w->shape.d[3] != 3 || nn_attr_int(n, "group", 1) != 1 ||
        x->shape.d[1] < 16 || y->shape.d[2] * y->shape.d[3] < 1024 ||
        nn_attr_int(n, "_pool", 0) != 0)
        return 0;
    int k = 0;
    const int64_t *v = nn_attr_ints(n, "strides", &k);
    for (int i = 0; v && i < k; i++)
        if (v[i] != 1) return 0;
    v = nn_attr_ints(n, "dilations", &k);
    for (int i = 0; v && i < k; i++)
        if (v[i] != 1) return 0;
    return 1;
}

int nn_cpu_md_tensor(const cpu_ctx *c, int t, dnnl_memory_desc_t *md)
{
    if (t < 0 || t >= c->g->ntensors) return -1;
    const nn_tensor *x = &c->g->tensors[t];
    dnnl_data_type_t dt = x->dtype == FFU_DTYPE_F32 ? dnnl_f32 : dnnl_data_type_undef;
    if (dt == dnnl_data_type_undef) return -1;
    if (nn_cpu_blocked(c, t)) {
        dnnl_dims_t d = {x->shape.d[0], x->shape.d[1], x->shape.d[2], x->shape.d[3]};
        return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_nChw16c) == dnnl_success
                   ? 0
                   : -1;
    }
    return nn_cpu_layout(c, t) ? nn_cpu_md_cl(md, &x->shape) : nn_cpu_md_plain(md, &x->shape, dt);
}

/* The descriptor of PReLU post-op slopes: rank dims, all 1 but axis 1 (channels). */
static int nn_cpu_md_prelu(dnnl_memory_desc_t *md, int rank, int64_t channels)
{
    int64_t dims[DNNL_MAX_NDIMS];
    if (rank < 1 || rank > DNNL_MAX_NDIMS) return -1;
    for (int i = 0; i < rank; i++) dims[i] = 1;
    if (rank >= 2) dims[1] = channels;
    return nn_cpu_md_dims(md, rank, dims, dnnl_f32);
}

int nn_cpu_is_const(const nn_tensor *t) { return t && (t->flags & NN_T_CONST) && t->data; }

const nn_tensor *nn_cpu_f32_in(const cpu_ctx *c, int i)
{
    const nn_tensor *t = nn_in(c->g, c->n, i);
    if (!t || t->dtype != FFU_DTYPE_F32 || !nn_shape_known(&t->shape)) return NULL;
    if (nn_shape_numel(&t->shape) <= 0) return NULL;
    return t;
}

dnnl_primitive_attr_t nn_cpu_attr(cpu_ctx *c, int allow_bf16)
{
    dnnl_primitive_attr_t attr = NULL;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    /* bf16 is not asked for here: oneDNN 2.6 accepts fpmath_mode bf16 but its CPU
     * kernels ignore it (f32 kernels are still chosen). The builders instead create a
     * second primitive with bf16 source and weights descriptors and keep it only where
     * nn_cpu_variant_nmse's accuracy check passes (docs/NN_CPU.md "bf16"). */
    (void)allow_bf16;
    return attr;
}

/* The oneDNN eltwise form of an activation (not PReLU); 0 when there is none. */
static int act_alg(const nn_act *act, dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    *alpha = 0, *beta = 0;
    switch (act->kind) {
    case NN_ACT_RELU: *alg = dnnl_eltwise_relu; return 1;
    case NN_ACT_RELU6: *alg = dnnl_eltwise_clip, *beta = 6; return 1;
    case NN_ACT_CLIP:
        /* ref: min(max(x, lo), hi) gives hi everywhere when lo > hi; oneDNN's clip
         * would not, so only ordered bounds are claimed. */
        if (!(act->alpha <= act->beta)) return 0;
        *alg = dnnl_eltwise_clip, *alpha = act->alpha, *beta = act->beta;
        return 1;
    case NN_ACT_LEAKY_RELU: *alg = dnnl_eltwise_relu, *alpha = act->alpha; return 1;
    case NN_ACT_SIGMOID: *alg = dnnl_eltwise_logistic; return 1;
    case NN_ACT_TANH: *alg = dnnl_eltwise_tanh; return 1;
    case NN_ACT_HARD_SWISH: *alg = dnnl_eltwise_hardswish; return 1;
    case NN_ACT_ELU: *alg = dnnl_eltwise_elu, *alpha = act->alpha; return 1;
    default: return 0;
    }
}

const nn_tensor *nn_cpu_act_slopes(const cpu_ctx *c, int64_t channels)
{
    const nn_act *act = &c->n->act;
    if (act->slope < 0 || act->slope >= c->g->ntensors) return NULL;
    const nn_tensor *s = &c->g->tensors[act->slope];
    int64_t k = nn_shape_numel(&s->shape);
    if (!nn_cpu_is_const(s) || s->dtype != FFU_DTYPE_F32 || (k != 1 && k != channels))
        return NULL;
    return s;
}

static const char *pd_impl(const_dnnl_primitive_desc_t pd)
{
    const char *name = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
    return name ? name : "";
}

/* The primitive descriptor of desc with post-ops: the binary ones in bin, then a sum
 * when with_sum, then the eltwise alg when not undef. NULL when oneDNN refuses it. */
static dnnl_primitive_desc_t pd_post_ops(cpu_ctx *c, const void *desc, const cpu_binary_po *bin,
                                         int nbin, int with_sum, dnnl_alg_kind_t alg, float alpha,
                                         float beta)
{
    dnnl_primitive_attr_t attr = nn_cpu_attr(c, 0);
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int ok = attr && dnnl_post_ops_create(&po) == dnnl_success;
    for (int i = 0; ok && i < nbin; i++)
        ok = dnnl_post_ops_append_binary(po, bin[i].alg, &bin[i].md) == dnnl_success;
    if (ok && with_sum) ok = dnnl_post_ops_append_sum(po, 1.0f) == dnnl_success;
    if (ok && alg != dnnl_alg_kind_undef)
        ok = dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta) == dnnl_success;
    if (ok) ok = dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    if (ok && dnnl_primitive_desc_create(&pd, desc, attr, c->cb->eng, NULL) != dnnl_success)
        pd = NULL;
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return pd;
}

int nn_cpu_pd_is_ref(const_dnnl_primitive_desc_t pd) { return strncmp(pd_impl(pd), "ref", 3) == 0; }

ffu_status nn_cpu_pd_with_act(cpu_ctx *c, const void *desc, int allow_bf16, int with_sum,
                              dnnl_primitive_desc_t *pd, int *split)
{
    return nn_cpu_pd_with_post(c, desc, NULL, 0, with_sum, pd, split);
}

ffu_status nn_cpu_pd_with_post(cpu_ctx *c, const void *desc, const cpu_binary_po *bin, int nbin,
                               int with_sum, dnnl_primitive_desc_t *pd, int *split)
{
    const nn_act *act = &c->n->act;
    dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
    float alpha = 0, beta = 0;
    *pd = NULL;
    *split = 0;
    if (act->kind != NN_ACT_NONE && act->kind != NN_ACT_PRELU && !act_alg(act, &alg, &alpha, &beta))
        return CPU_UNSUPPORTED;
    /* with the activation (and the binary ops and sum) as post-ops */
    dnnl_primitive_desc_t fused = NULL;
    if (alg != dnnl_alg_kind_undef || with_sum || nbin) {
        fused = pd_post_ops(c, desc, bin, nbin, with_sum, alg, alpha, beta);
        if (fused && !nn_cpu_pd_is_ref(fused)) {
            *pd = fused;
            *split = alg == dnnl_alg_kind_undef && act->kind != NN_ACT_NONE; /* PReLU */
            return FFU_OK;
        }
        if (with_sum || nbin) {
            /* these must be post-ops (the sum reads dst before the activation): try
             * them alone with the activation as a second step, else take what there is */
            if (alg != dnnl_alg_kind_undef) {
                dnnl_primitive_desc_t alone =
                    pd_post_ops(c, desc, bin, nbin, with_sum, dnnl_alg_kind_undef, 0, 0);
                if (alone && !nn_cpu_pd_is_ref(alone)) {
                    if (fused) dnnl_primitive_desc_destroy(fused);
                    *pd = alone;
                    *split = 1;
                    return FFU_OK;
                }
                if (alone) dnnl_primitive_desc_destroy(alone);
            }
            if (!fused) return CPU_UNSUPPORTED;
            *pd = fused;
            *split = alg == dnnl_alg_kind_undef && act->kind != NN_ACT_NONE;
            return FFU_OK;
        }
    }
    /* without post-ops: the activation becomes a second, in-place step. oneDNN 2.6
     * has JIT kernels for PReLU as a primitive but not as a convolution post-op. */
    dnnl_primitive_desc_t plain = pd_post_ops(c, desc, NULL, 0, 0, dnnl_alg_kind_undef, 0, 0);
    if (fused && (!plain || nn_cpu_pd_is_ref(plain))) {
        if (plain) dnnl_primitive_desc_destroy(plain);
        *pd = fused;
        return FFU_OK;
    }
    if (fused) dnnl_primitive_desc_destroy(fused);
    if (!plain) return CPU_UNSUPPORTED;
    *pd = plain;
    *split = act->kind != NN_ACT_NONE;
    return FFU_OK;
}

ffu_status nn_cpu_act_step(cpu_ctx *c, const dnnl_memory_desc_t *md, int64_t channels,
                           cpu_bind bind, size_t off)
{
    const nn_act *act = &c->n->act;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t wmd;
    const nn_tensor *slopes = NULL;
    dnnl_status_t ds;
    if (act->kind == NN_ACT_PRELU) {
        slopes = nn_cpu_act_slopes(c, channels);
        if (!slopes || md->ndims < 2 ||
            nn_cpu_md_prelu(&wmd, md->ndims, nn_shape_numel(&slopes->shape) == 1 ? 1 : channels) < 0)
            return CPU_UNSUPPORTED;
        dnnl_prelu_desc_t desc;
        ds = dnnl_prelu_forward_desc_init(&desc, dnnl_forward_inference, md, &wmd);
        dnnl_primitive_attr_t attr = nn_cpu_attr(c, 0);
        if (ds == dnnl_success && attr)
            ds = dnnl_primitive_desc_create(&pd, &desc, attr, c->cb->eng, NULL);
        if (attr) dnnl_primitive_attr_destroy(attr);
    } else {
        dnnl_alg_kind_t alg;
        float alpha, beta;
        if (!act_alg(act, &alg, &alpha, &beta)) return CPU_UNSUPPORTED;
        dnnl_eltwise_desc_t desc;
        ds = dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg, md, alpha, beta);
        dnnl_primitive_attr_t attr = nn_cpu_attr(c, 0);
        if (ds == dnnl_success && attr)
            ds = dnnl_primitive_desc_create(&pd, &desc, attr, c->cb->eng, NULL);
        if (attr) dnnl_primitive_attr_destroy(attr);
    }
    if (ds != dnnl_success || !pd) return CPU_UNSUPPORTED;
    ffu_status st;
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (!s) return st;
    if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_SRC, md, bind, 0, off, NULL)) < 0 ||
        (st = nn_cpu_step_arg(c, s, DNNL_ARG_DST, md, bind, 0, off, NULL)) < 0)
        return st;
    if (slopes)
        st = nn_cpu_step_arg(c, s, DNNL_ARG_WEIGHTS, &wmd, CPU_BIND_FIXED, 0, 0, slopes->data);
    return st;
}

/* ---- steps ------------------------------------------------------------------------------- */

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

size_t nn_cpu_scratch(cpu_ctx *c, size_t bytes)
{
    size_t off = align_up(c->scratch_off, 64);
    c->scratch_off = off + align_up(bytes, 64);
    return off;
}

void nn_cpu_note_impl(cpu_ctx *c, const_dnnl_primitive_desc_t pd)
{
    const char *name = NULL;
    if (!c->p) return;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) == dnnl_success &&
        name)
        snprintf(c->p->impl, sizeof c->p->impl, "%s", name);
}

/* The scratchpad of a step goes after the node's staging buffers; the offset is
 * fixed once every step is known (finish_node). */
#define SCRATCHPAD_PENDING ((size_t)-1)

cpu_step *nn_cpu_add_kernel_step(cpu_ctx *c, cpu_kernel_fn fn, const void *kdata, ffu_status *st)
{
    *st = FFU_OK;
    if (!c->p) return NULL;
    if (c->p->nsteps >= CPU_MAX_STEPS) {
        *st = ffu_error_set(FFU_ERR_INTERNAL, "cpu backend: too many steps for one node");
        return NULL;
    }
    cpu_step *s = &c->p->steps[c->p->nsteps++];
    memset(s, 0, sizeof *s);
    s->kern = fn;
    s->kdata = kdata;
    return s;
}

cpu_step *nn_cpu_add_step(cpu_ctx *c, dnnl_primitive_desc_t pd, ffu_status *st)
{
    *st = FFU_OK;
    if (!c->p) {
        dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    if (c->p->nsteps >= CPU_MAX_STEPS) {
        dnnl_primitive_desc_destroy(pd);
        *st = ffu_error_set(FFU_ERR_INTERNAL, "cpu backend: too many steps for one node");
        return NULL;
    }
    cpu_step *s = &c->p->steps[c->p->nsteps];
    memset(s, 0, sizeof *s);
    if (dnnl_primitive_create(&s->prim, pd) != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        *st = ffu_error_set(FFU_ERR_NOMEM, "cpu backend: oneDNN could not create a primitive");
        return NULL;
    }
    c->p->nsteps++;
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t spb = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (spb) {
        *st = nn_cpu_step_arg(c, s, DNNL_ARG_SCRATCHPAD, sp, CPU_BIND_SCRATCH, 0,
                              SCRATCHPAD_PENDING, NULL);
        if (*st < 0) {
            dnnl_primitive_desc_destroy(pd);
            return NULL;
        }
    }
    dnnl_primitive_desc_destroy(pd);
    return s;
}

ffu_status nn_cpu_step_arg(cpu_ctx *c, cpu_step *s, int arg, const dnnl_memory_desc_t *md,
                           cpu_bind bind, int index, size_t offset, void *fixed)
{
    if (!s) return FFU_OK;
    if (s->nargs >= CPU_MAX_ARGS)
        return ffu_error_set(FFU_ERR_INTERNAL, "cpu backend: too many primitive arguments");
    cpu_arg *a = &s->a[s->nargs];
    memset(a, 0, sizeof *a);
    if (s->kern) { /* a kernel step takes plain pointers */
        a->arg = arg;
        a->bind = bind;
        a->index = index;
        a->offset = offset;
        a->fixed = fixed;
        s->nargs++;
        return FFU_OK;
    }
    if (!md) { /* what the primitive expects for this argument */
        const_dnnl_primitive_desc_t pd = NULL;
        if (dnnl_primitive_get_primitive_desc(s->prim, &pd) != dnnl_success ||
            !(md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg)) ||
            md->ndims == 0)
            return ffu_error_set(FFU_ERR_INTERNAL, "cpu backend: no descriptor for arg %d", arg);
    }
    if (dnnl_memory_create(&a->mem, md, c->cb->eng, bind == CPU_BIND_FIXED ? fixed : NULL) !=
        dnnl_success)
        return ffu_error_set(FFU_ERR_NOMEM, "cpu backend: oneDNN could not create a memory");
    a->arg = arg;
    a->bind = bind;
    a->index = index;
    a->offset = offset;
    s->ex[s->nargs].arg = arg;
    s->ex[s->nargs].memory = a->mem;
    s->nargs++;
    return FFU_OK;
}

void *nn_cpu_own(cpu_ctx *c, size_t bytes)
{
    /* the plan's graph is destroyed after its nodes are released (session.c
     * release_plan), and its arena puts large weights on huge pages */
    if (!c->p) return NULL;
    return ffu_arena_alloc_aligned(c->g->arena, bytes ? align_up(bytes, 64) : 64, 64);
}

/* One-off reorder at prepare into a caller buffer; 0 on success. */
static int reorder_now(cpu_ctx *c, const dnnl_memory_desc_t *from, const void *src,
                       const dnnl_memory_desc_t *to, void *dst)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t ms = NULL, md = NULL;
    int ok = dnnl_reorder_primitive_desc_create(&pd, from, c->cb->eng, to, c->cb->eng, NULL) ==
                 dnnl_success &&
             dnnl_primitive_create(&prim, pd) == dnnl_success &&
             dnnl_memory_create(&ms, from, c->cb->eng, (void *)src) == dnnl_success &&
             dnnl_memory_create(&md, to, c->cb->eng, dst) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
        ok = dnnl_primitive_execute(prim, c->cb->stream, 2, args) == dnnl_success &&
             dnnl_stream_wait(c->cb->stream) == dnnl_success;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (prim) dnnl_primitive_destroy(prim);
    if (ms) dnnl_memory_destroy(ms);
    if (md) dnnl_memory_destroy(md);
    return ok ? 0 : -1;
}

void *nn_cpu_reorder_owned(cpu_ctx *c, const dnnl_memory_desc_t *from, const void *src,
                           const dnnl_memory_desc_t *to, ffu_status *st)
{
    *st = FFU_OK;
    size_t bytes = dnnl_memory_desc_get_size(to);
    void *dst = nn_cpu_own(c, bytes);
    if (!dst) {
        *st = ffu_error_set(FFU_ERR_NOMEM, "cpu backend: out of memory for weights");
        return NULL;
    }
    memset(dst, 0, bytes); /* padded blocked layouts expect zeros in the padding */
    if (reorder_now(c, from, src, to, dst) != 0) {
        *st = ffu_error_set(FFU_ERR_INTERNAL, "cpu backend: weight reorder failed");
        return NULL;
    }
    return dst;
}

void nn_cpu_note_bf16(cpu_ctx *c)
{
    if (!c->p) return;
    /* shift the name right (a long one loses its tail) */
    size_t n = sizeof c->p->impl;
    memmove(c->p->impl + 5, c->p->impl, n - 6);
    memcpy(c->p->impl, "bf16 ", 5);
    c->p->impl[n - 1] = 0;
}

int nn_cpu_pd_is_bf16(const_dnnl_primitive_desc_t pd)
{
    const char *name = pd_impl(pd);
    return strstr(name, "bf16") != NULL || strstr(name, "amx") != NULL;
}

int nn_cpu_pd_is_winograd(const_dnnl_primitive_desc_t pd)
{
    return strstr(pd_impl(pd), "wino") != NULL;
}

/* Runs one primitive of the check: src given (laid out as the pd wants), weights
 * reordered from the user layout, dst zeroed first (a sum post-op adds it). */
static int check_run(cpu_ctx *c, const_dnnl_primitive_desc_t pd, const void *src,
                     const dnnl_memory_desc_t *wei_user, const void *wdata, const void *bias,
                     float *dst)
{
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *bmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
    const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *pmd =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t wbytes = dnnl_memory_desc_get_size(wmd);
    size_t pbytes = pmd ? dnnl_memory_desc_get_size(pmd) : 0;
    void *w = calloc(1, wbytes ? wbytes : 1), *pad = pbytes ? calloc(1, pbytes) : NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t m[5] = {0};
    dnnl_exec_arg_t a[5];
    int na = 0;
    int ok = w && (!pbytes || pad) && reorder_now(c, wei_user, wdata, wmd, w) == 0 &&
             dnnl_primitive_create(&prim, pd) == dnnl_success;
    memset(dst, 0, dnnl_memory_desc_get_size(dmd));
    if (ok) ok = dnnl_memory_create(&m[na], smd, c->cb->eng, (void *)src) == dnnl_success,
            a[na].arg = DNNL_ARG_SRC, a[na].memory = m[na], na++;
    if (ok) ok = dnnl_memory_create(&m[na], wmd, c->cb->eng, w) == dnnl_success,
            a[na].arg = DNNL_ARG_WEIGHTS, a[na].memory = m[na], na++;
    if (ok && bias)
        ok = dnnl_memory_create(&m[na], bmd, c->cb->eng, (void *)bias) == dnnl_success,
        a[na].arg = DNNL_ARG_BIAS, a[na].memory = m[na], na++;
    if (ok) ok = dnnl_memory_create(&m[na], dmd, c->cb->eng, dst) == dnnl_success,
            a[na].arg = DNNL_ARG_DST, a[na].memory = m[na], na++;
    if (ok && pbytes)
        ok = dnnl_memory_create(&m[na], pmd, c->cb->eng, pad) == dnnl_success,
        a[na].arg = DNNL_ARG_SCRATCHPAD, a[na].memory = m[na], na++;
    if (ok)
        ok = dnnl_primitive_execute(prim, c->cb->stream, na, a) == dnnl_success &&
             dnnl_stream_wait(c->cb->stream) == dnnl_success;
    for (int i = 0; i < na; i++) dnnl_memory_destroy(m[i]);
    if (prim) dnnl_primitive_destroy(prim);
    free(w);
    free(pad);
    return ok ? 0 : -1;
}

void nn_cpu_check_input(float *x, size_t n, double lo, double hi)
{
    uint32_t r = 0x9e3779b9u;
    for (size_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = (float)(lo + (hi - lo) * ((r >> 8) * (1.0 / 16777216.0)));
    }
}

double nn_cpu_variant_nmse(cpu_ctx *c, const_dnnl_primitive_desc_t p32,
                           const_dnnl_primitive_desc_t pv, const dnnl_memory_desc_t *wei_user,
                           const void *wdata, const void *bias)
{
    const dnnl_memory_desc_t *s32 = dnnl_primitive_desc_query_md(p32, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *sv = dnnl_primitive_desc_query_md(pv, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *d32 = dnnl_primitive_desc_query_md(p32, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *dv = dnnl_primitive_desc_query_md(pv, dnnl_query_dst_md, 0);
    size_t sbytes = dnnl_memory_desc_get_size(s32), dbytes = dnnl_memory_desc_get_size(d32);
    size_t vbytes = dnnl_memory_desc_get_size(dv);
    int same_dst = dnnl_memory_desc_equal(d32, dv);
    if (!sbytes || !dbytes || !vbytes) return -1;
    float *x = malloc(sbytes), *y32 = malloc(dbytes), *yv = malloc(dbytes);
    void *xv = calloc(1, dnnl_memory_desc_get_size(sv));
    float *yraw = same_dst ? yv : malloc(vbytes); /* the variant's own dst layout */
    double nmse = -1;
    if (x && y32 && yv && xv && yraw) {
        nn_cpu_check_input(x, sbytes / sizeof(float), -1, 1);
        if (reorder_now(c, s32, x, sv, xv) == 0 &&
            check_run(c, p32, x, wei_user, wdata, bias, y32) == 0 &&
            check_run(c, pv, xv, wei_user, wdata, bias, yraw) == 0 &&
            (same_dst || reorder_now(c, dv, yraw, d32, yv) == 0)) {
            double num = 0, den = 0;
            for (size_t i = 0; i < dbytes / sizeof(float); i++) {
                double d = (double)y32[i] - yv[i];
                num += d * d, den += (double)y32[i] * y32[i];
            }
            nmse = den > 0 ? num / den : num > 0 ? 1 : 0;
            if (!(nmse >= 0)) nmse = 1; /* NaN: reject */
        }
    }
    if (yraw != yv) free(yraw);
    free(x), free(y32), free(yv), free(xv);
    return nmse;
}

static ffu_status reorder_step(cpu_ctx *c, const dnnl_memory_desc_t *from, cpu_bind fb, int fi,
                               size_t foff, const dnnl_memory_desc_t *to, cpu_bind tb,
                               size_t toff, int skip_same)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = nn_cpu_attr(c, 0);
    if (!attr) return FFU_ERR_NOMEM;
    dnnl_status_t ds =
        dnnl_reorder_primitive_desc_create(&pd, from, c->cb->eng, to, c->cb->eng, attr);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) return CPU_UNSUPPORTED;
    ffu_status st;
    cpu_step *s = nn_cpu_add_step(c, pd, &st);
    if (!s) return st;
    s->skip_same = skip_same;
    if ((st = nn_cpu_step_arg(c, s, DNNL_ARG_FROM, from, fb, fi, foff, NULL)) < 0) return st;
    return nn_cpu_step_arg(c, s, DNNL_ARG_TO, to, tb, 0, toff, NULL);
}

ffu_status nn_cpu_reorder_step(cpu_ctx *c, const dnnl_memory_desc_t *from, cpu_bind fb,
                               size_t foff, const dnnl_memory_desc_t *to, cpu_bind tb,
                               size_t toff)
{
    return reorder_step(c, from, fb, 0, foff, to, tb, toff, 0);
}

ffu_status nn_cpu_stage_step(cpu_ctx *c, const dnnl_memory_desc_t *from, cpu_bind fb,
                             size_t foff, const dnnl_memory_desc_t *to, cpu_bind tb, size_t toff)
{
    if (c->p) c->p->nreorders++;
    return reorder_step(c, from, fb, 0, foff, to, tb, toff, 0);
}

ffu_status nn_cpu_copy_in_step(cpu_ctx *c, int index, const dnnl_memory_desc_t *from,
                               const dnnl_memory_desc_t *to, cpu_bind tb, size_t toff,
                               int skip_same)
{
    return reorder_step(c, from, CPU_BIND_IN, index, 0, to, tb, toff, skip_same);
}

static void node_free(cpu_node *p)
{
    if (!p) return;
    nn_cpu_chain_release(p);
    nn_cpu_strips_release(p);
    for (int i = 0; i < p->nsteps; i++) {
        cpu_step *s = &p->steps[i];
        for (int j = 0; j < s->nargs; j++)
            if (s->a[j].mem) dnnl_memory_destroy(s->a[j].mem);
        if (s->prim) dnnl_primitive_destroy(s->prim);
    }
    free(p);
}

/* Places every step's scratchpad after the staging buffers (they run one after the
 * other, so they share one region) and sets the node's scratch size. */
static void finish_node(cpu_ctx *c)
{
    cpu_node *p = c->p;
    size_t base = align_up(c->scratch_off, 64), most = 0;
    for (int i = 0; i < p->nsteps; i++)
        for (int j = 0; j < p->steps[i].nargs; j++) {
            cpu_arg *a = &p->steps[i].a[j];
            if (a->bind == CPU_BIND_SCRATCH && a->offset == SCRATCHPAD_PENDING) {
                const dnnl_memory_desc_t *md = NULL;
                dnnl_memory_get_memory_desc(a->mem, &md);
                size_t b = md ? dnnl_memory_desc_get_size(md) : 0;
                if (b > most) most = b;
                a->offset = base;
            }
        }
    /* + 64: the session's scratch pointer is aligned here, not by the caller */
    p->scratch_bytes = (base + most) ? base + most + 64 : 0;
}

/* ---- the vtable ---------------------------------------------------------------------------- */

static cpu_build_fn builder(nn_op op)
{
    switch (op) {
    case NN_OP_CONV: return nn_cpu_build_conv;
    case NN_OP_CONV_TRANSPOSE: return nn_cpu_build_conv_transpose;
    case NN_OP_GEMM: return nn_cpu_build_gemm;
    case NN_OP_MATMUL: return nn_cpu_build_matmul;
    case NN_OP_EINSUM:
        return nn_cpu_build_einsum;
    case NN_OP_MAX_POOL:
    case NN_OP_AVERAGE_POOL: return nn_cpu_build_pool;
    case NN_OP_GLOBAL_AVERAGE_POOL:
    case NN_OP_GLOBAL_MAX_POOL: return nn_cpu_build_global_pool;
    case NN_OP_RELU:
    case NN_OP_LEAKY_RELU:
    case NN_OP_CLIP:
    case NN_OP_SIGMOID:
    case NN_OP_TANH:
    case NN_OP_ELU:
    case NN_OP_SELU:
    case NN_OP_HARD_SWISH:
    case NN_OP_SOFTPLUS:
    case NN_OP_SQRT:
    case NN_OP_EXP:
    case NN_OP_NEG:
    case NN_OP_ABS:
    case NN_OP_RECIPROCAL:
    case NN_OP_ROUND:
    case NN_OP_SQUARE:
    case NN_OP_RELU6: return nn_cpu_build_eltwise;
    case NN_OP_ADD:
    case NN_OP_SUB:
    case NN_OP_MUL:
    case NN_OP_DIV:
    case NN_OP_MAX:
    case NN_OP_MIN:
    case NN_OP_SUM: return nn_cpu_build_binary;
    case NN_OP_CONCAT: return nn_cpu_build_concat;
    case NN_OP_SOFTMAX:
    case NN_OP_LOG_SOFTMAX: return nn_cpu_build_softmax;
    case NN_OP_RESIZE: return nn_cpu_build_resize;
    case NN_OP_BATCH_NORM: return nn_cpu_build_batch_norm;
    case NN_OP_PRELU: return nn_cpu_build_prelu;
    case NN_OP_LRN: return nn_cpu_build_lrn;
    case NN_OP_REDUCE_MEAN:
    case NN_OP_REDUCE_SUM:
    case NN_OP_REDUCE_MAX:
    case NN_OP_REDUCE_MIN:
    case NN_OP_REDUCE_PROD:
    case NN_OP_REDUCE_L1:
    case NN_OP_REDUCE_L2:
    case NN_OP_REDUCE_SUM_SQUARE: return nn_cpu_build_reduce;
    case NN_OP_TRANSPOSE: return nn_cpu_build_transpose;
    case NN_OP_PAD: return nn_cpu_build_pad;
    case NN_OP_SPLIT: return nn_cpu_build_split;
    case NN_OP_DYNAMIC_QUANTIZE_STEPS: return nn_cpu_build_qsteps;
    default: return NULL;
    }
}

static cpu_build_fn builder(nn_op op);

/* ---- activation layouts ------------------------------------------------------------------ */

/* Ops whose builders take channels-last activations. */
static int cl_op(nn_op op)
{
    switch (op) {
    case NN_OP_CONV: case NN_OP_CONV_TRANSPOSE: case NN_OP_MAX_POOL: case NN_OP_AVERAGE_POOL:
    case NN_OP_GLOBAL_AVERAGE_POOL: case NN_OP_GLOBAL_MAX_POOL: case NN_OP_RELU:
    case NN_OP_LEAKY_RELU: case NN_OP_CLIP: case NN_OP_SIGMOID: case NN_OP_TANH: case NN_OP_ELU:
    case NN_OP_SELU: case NN_OP_HARD_SWISH: case NN_OP_SOFTPLUS: case NN_OP_SQRT: case NN_OP_EXP:
    case NN_OP_NEG: case NN_OP_ABS: case NN_OP_RECIPROCAL: case NN_OP_ROUND:
    case NN_OP_SQUARE: case NN_OP_RELU6: case NN_OP_ADD: case NN_OP_SUB: case NN_OP_MUL:
    case NN_OP_DIV: case NN_OP_MAX: case NN_OP_MIN: case NN_OP_SUM: case NN_OP_CONCAT:
    case NN_OP_RESIZE: case NN_OP_BATCH_NORM: case NN_OP_PRELU: case NN_OP_LRN:
    case NN_OP_TRANSPOSE: case NN_OP_PAD: case NN_OP_SPLIT: case NN_OP_REDUCE_MEAN:
    case NN_OP_REDUCE_SUM: case NN_OP_REDUCE_MAX: case NN_OP_REDUCE_MIN: case NN_OP_REDUCE_PROD:
    case NN_OP_REDUCE_L1: case NN_OP_REDUCE_L2: case NN_OP_REDUCE_SUM_SQUARE:
    case NN_OP_DYNAMIC_QUANTIZE_STEPS:
        return 1;
    default: return 0;
    }
}

/* Ops whose output must share the layout of their same-rank inputs (the rest convert:
 * convolutions reorder at their boundaries, oneDNN's concat takes mixed inputs). */
static int tied_op(nn_op op)
{
    return cl_op(op) && op != NN_OP_CONV && op != NN_OP_CONV_TRANSPOSE && op != NN_OP_CONCAT &&
           op != NN_OP_GLOBAL_AVERAGE_POOL && op != NN_OP_GLOBAL_MAX_POOL &&
           op != NN_OP_TRANSPOSE && op != NN_OP_SPLIT;
}

/* A tensor whose spatial dims are all 1 has the same bytes in both layouts. */
static int layout_free(const nn_tensor *t)
{
    for (int i = 2; i < t->shape.rank; i++)
        if (t->shape.d[i] != 1) return 0;
    return 1;
}

/* Node i reads tensor t only as input 0. */
static int reads_only_as_data(const nn_node *n, int t)
{
    for (int j = 1; j < n->ninputs; j++)
        if (n->inputs[j] == t) return 0;
    return n->ninputs > 0 && n->inputs[0] == t;
}

/* Without AVX-512 (where our own Winograd kernel, channels-last, takes these layers):
 * among the channels-last tensors, those that pass between Winograd-shaped
 * convolutions (nn_cpu_wino_shape) and the max pools between them are stored nChw16c
 * (lay 2), the layout oneDNN's Winograd kernels read and write, so the convolutions
 * need no staging reorders there (docs/NN_CPU.md "Winograd"). A tensor qualifies when
 * it is 4-D with a multiple of 16 channels, its producer is such a Conv without a
 * fused residual (whose copy-in assumes the output's layout is the residual's) or a
 * MaxPool whose input qualifies, and each reader is such a Conv (as its data input,
 * not its residual) or a MaxPool whose output qualifies. A Conv whose
 * Winograd check then fails runs direct with staging, so the choice does not depend on
 * the check. If a builder rejects the blocked layouts, none are kept. */
static void blocked_plan(cpu_backend *cb, const nn_graph *g, const unsigned char *cap)
{
    int nt = g->ntensors, nn = g->nnodes, any = 0;
    unsigned char *lay = cb->lay;
    for (int t = 0; t < nt; t++) {
        const nn_tensor *x = &g->tensors[t];
        int p = x->producer;
        if (lay[t] != 1 || x->shape.rank != 4 || x->shape.d[1] % 16 || p < 0 || p >= nn ||
            !cap[p])
            continue;
        const nn_node *n = &g->nodes[p];
        if ((n->op == NN_OP_CONV && nn_cpu_wino_shape(g, n) && n->ninputs <= 3) ||
            (n->op == NN_OP_MAX_POOL && n->noutputs == 1))
            lay[t] = 2, any = 1;
    }
    for (int changed = any; changed;) {
        changed = 0;
        for (int i = 0; i < nn; i++) {
            const nn_node *n = &g->nodes[i];
            int o = n->noutputs > 0 ? n->outputs[0] : -1;
            if (n->op == NN_OP_MAX_POOL && o >= 0 && (lay[o] == 2) != (lay[n->inputs[0]] == 2)) {
                /* a pool keeps the layout: both sides blocked or neither */
                if (lay[o] == 2) lay[o] = 1;
                if (lay[n->inputs[0]] == 2) lay[n->inputs[0]] = 1;
                changed = 1;
                continue;
            }
            for (int j = 0; j < n->ninputs; j++) {
                int t = n->inputs[j];
                if (t < 0 || lay[t] != 2) continue;
                int ok = cap[i] && ((n->op == NN_OP_CONV && nn_cpu_wino_shape(g, n) &&
                                     reads_only_as_data(n, t)) ||
                                    n->op == NN_OP_MAX_POOL);
                if (!ok) lay[t] = 1, changed = 1;
            }
        }
    }
    /* the builders must take what was chosen (dry runs) */
    for (int i = 0; any && i < nn; i++) {
        const nn_node *n = &g->nodes[i];
        int touches = 0;
        for (int j = 0; j < n->ninputs; j++) touches |= n->inputs[j] >= 0 && lay[n->inputs[j]] == 2;
        for (int j = 0; j < n->noutputs; j++)
            touches |= n->outputs[j] >= 0 && lay[n->outputs[j]] == 2;
        if (!touches) continue;
        cpu_ctx c = {.cb = cb, .g = g, .n = n, .p = NULL};
        cpu_build_fn fn = builder(n->op);
        if (!fn || fn(&c) != FFU_OK) {
            for (int t = 0; t < nt; t++)
                if (lay[t] == 2) lay[t] = 1;
            return;
        }
    }
}

/* Chooses which activations are stored channels-last: those that only nodes of this
 * backend write and read (graph inputs and outputs, and anything ref or a view reads,
 * stay NCHW as the IR says). oneDNN 2.6 runs f32 convolutions 5-30x faster on NHWC
 * than on NCHW on AVX-512 (brgemm kernels vs im2col + GEMM), and NHWC takes exactly
 * the bytes NCHW takes, so the memory plan does not change. A node whose builder
 * rejects the chosen layouts is taken out of the set and the choice is redone. */
static ffu_status layout_plan(cpu_backend *cb, const nn_graph *g, int me)
{
    int nt = g->ntensors, nn = g->nnodes;
    unsigned char *lay = calloc((size_t)(nt ? nt : 1), 1), *bad = malloc((size_t)(nt ? nt : 1));
    unsigned char *cap = malloc((size_t)(nn ? nn : 1));
    if (!lay || !bad || !cap) {
        free(lay), free(bad), free(cap);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nn; i++) cap[i] = g->nodes[i].backend == me && cl_op(g->nodes[i].op);
    free(cb->lay);
    cb->lay = lay;
    cb->lay_g = g;
    cb->lay_nt = nt;
    cb->base.plan_threads = graph_threads(cb, g, me);
    for (int round = 0; round <= nn; round++) {
        memset(bad, 0, (size_t)(nt ? nt : 1));
        for (int i = 0; i < nn; i++)
            for (int j = 0; j < g->nodes[i].ninputs; j++) {
                int t = g->nodes[i].inputs[j];
                if (t >= 0 && !cap[i]) bad[t] = 1;
            }
        for (int t = 0; t < nt; t++) {
            const nn_tensor *x = &g->tensors[t];
            lay[t] = !bad[t] && x->dtype == FFU_DTYPE_F32 && x->shape.rank >= 3 &&
                     x->shape.rank <= 5 && nn_shape_known(&x->shape) &&
                     !(x->flags & (NN_T_INPUT | NN_T_OUTPUT | NN_T_CONST)) && x->producer >= 0 &&
                     x->producer < nn && cap[x->producer];
        }
        for (int changed = 1; changed;) {
            changed = 0;
            for (int i = 0; i < nn; i++) {
                const nn_node *n = &g->nodes[i];
                int o = n->noutputs > 0 ? n->outputs[0] : -1;
                if (cap[i] && n->op == NN_OP_CONV && n->ninputs > 3 && n->inputs[3] >= 0 &&
                    o >= 0 && lay[o] != lay[n->inputs[3]]) {
                    /* a fused residual shares the output's layout (the output may be
                     * planned in its place) */
                    lay[o] = lay[n->inputs[3]] = 0;
                    changed = 1;
                    continue;
                }
                if (!cap[i] || !tied_op(n->op) || o < 0) continue;
                int r = g->tensors[o].shape.rank, any1 = 0, any0 = 0;
                if (!layout_free(&g->tensors[o])) any1 = lay[o], any0 = !lay[o];
                for (int j = 0; j < n->ninputs; j++) {
                    int t = n->inputs[j];
                    if (t < 0 || (g->tensors[t].flags & NN_T_CONST) ||
                        g->tensors[t].shape.rank != r || layout_free(&g->tensors[t]))
                        continue;
                    any1 |= lay[t], any0 |= !lay[t];
                }
                if (!(any1 && any0)) continue;
                if (!layout_free(&g->tensors[o])) lay[o] = 0;
                for (int j = 0; j < n->ninputs; j++)
                    if (n->inputs[j] >= 0 && g->tensors[n->inputs[j]].shape.rank == r &&
                        !layout_free(&g->tensors[n->inputs[j]]))
                        lay[n->inputs[j]] = 0;
                changed = 1;
            }
        }
        int dropped = 0;
        for (int i = 0; i < nn; i++) {
            const nn_node *n = &g->nodes[i];
            int uses = 0;
            for (int j = 0; j < n->ninputs; j++) uses |= n->inputs[j] >= 0 && lay[n->inputs[j]];
            for (int j = 0; j < n->noutputs; j++) uses |= n->outputs[j] >= 0 && lay[n->outputs[j]];
            if (!uses || !cap[i]) continue;
            cpu_ctx c = {.cb = cb, .g = g, .n = n, .p = NULL};
            cpu_build_fn fn = builder(n->op);
            if (!fn || fn(&c) != FFU_OK) cap[i] = 0, dropped = 1;
        }
        if (!dropped) break;
    }
    /* with AVX-512 our own Winograd kernel (channels-last) takes these layers */
    if (cb->base.winograd && !(ffu_cpu_features() & FFU_CPU_AVX512F)) blocked_plan(cb, g, cap);
    free(bad);
    free(cap);
    ffu_status st = nn_cpu_chain_plan(cb, g, me);
    return st < 0 ? st : nn_cpu_strips_plan(cb, g, me);
}

/* Every output must be shaped and non-empty (oneDNN has no use for empty tensors). */
static int outputs_ok(const nn_graph *g, const nn_node *n)
{
    for (int i = 0; i < n->noutputs; i++) {
        const nn_tensor *t = nn_out(g, n, i);
        if (!t) continue;
        if (!nn_shape_known(&t->shape) || nn_shape_numel(&t->shape) <= 0) return 0;
    }
    return n->noutputs > 0 && nn_out(g, n, 0) != NULL;
}

static int cpu_supports(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    cpu_build_fn fn = builder(n->op);
    if (!fn || !outputs_ok(g, n)) return 0;
    cpu_ctx c = {.cb = (cpu_backend *)b, .g = g, .n = n, .p = NULL, .plain = 1};
    return fn(&c) == FFU_OK;
}

static void cpu_release(nn_backend *b, nn_node *n)
{
    cpu_backend *cb = (cpu_backend *)b;
    if (!n->priv) return;
    node_free(n->priv);
    n->priv = NULL;
    cb->lay_g = NULL; /* a released plan's layouts must not outlive it */
}

static ffu_status cpu_prepare(nn_backend *b, nn_graph *g, nn_node *n)
{
    cpu_backend *cb = (cpu_backend *)b;
    cpu_release(b, n);
    cpu_build_fn fn = builder(n->op);
    if (!fn || !outputs_ok(g, n))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "the cpu backend does not run this node");
    if (cb->lay_g != g || cb->lay_nt != g->ntensors) {
        ffu_status lst = layout_plan(cb, g, n->backend);
        if (lst < 0) return lst;
    }
    cpu_node *p = calloc(1, sizeof *p);
    if (!p) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    cpu_ctx c = {.cb = cb, .g = g, .n = n, .p = p};
    int threads = nn_cpu_run_threads(cb);
    int old = threads_enter(threads); /* kernels pick their blocking for this count */
    ffu_status st = fn(&c);
    threads_leave(threads, old);
    if (st == FFU_OK && p->nsteps == 0)
        st = nn_node_error(n, FFU_ERR_INTERNAL, "the cpu backend built no primitive");
    if (st < 0) {
        node_free(p);
        if (st == FFU_ERR_UNSUPPORTED)
            return nn_node_error(n, st, "the cpu backend cannot run this node exactly");
        return st;
    }
    finish_node(&c);
    n->priv = p;
    n->view = p->view;
    st = nn_cpu_chain_member(&c) ? nn_cpu_chain_finish(&c, g) : FFU_OK;
    if (st == FFU_OK && nn_cpu_strips_last(&c)) st = nn_cpu_strips_finish(&c, g);
    return st;
}

static size_t cpu_scratch_bytes(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    (void)b, (void)g;
    const cpu_node *p = n->priv;
    return p ? p->scratch_bytes : 0;
}

/* Whether a copy step's source and destination are one buffer. */
static int same_buffers(const cpu_step *s, void *const *ptr)
{
    void *from = NULL, *to = NULL;
    for (int j = 0; j < s->nargs; j++) {
        if (s->a[j].arg == DNNL_ARG_FROM) from = ptr[j];
        if (s->a[j].arg == DNNL_ARG_TO) to = ptr[j];
    }
    return from && from == to;
}

typedef struct kern_job {
    const cpu_step *s;
    void *const *ptr;
} kern_job;

static void kern_thread(void *arg)
{
    const kern_job *j = arg;
    j->s->kern(j->s->kdata, j->ptr, omp_get_thread_num(), omp_get_num_threads());
}

/* Runs a kernel step on the plan's threads (the calling thread is one of them). */
static void run_kernel(int threads, const cpu_step *s, void *const *ptr)
{
    if (threads <= 1) {
        s->kern(s->kdata, ptr, 0, 1);
        return;
    }
    kern_job j = {s, ptr};
    GOMP_parallel(kern_thread, &j, (unsigned)threads, 0);
}

static ffu_status run_steps(cpu_backend *cb, const nn_node *n, cpu_node *p, void *const *in,
                           void *const *out, void *scratch)
{
    char *sc = scratch ? (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63) : NULL;
    ffu_status st = FFU_OK;
    for (int i = 0; i < p->nsteps && st == FFU_OK; i++) {
        cpu_step *s = &p->steps[i];
        void *ptr[CPU_MAX_ARGS];
        for (int j = 0; j < s->nargs; j++) {
            cpu_arg *a = &s->a[j];
            switch (a->bind) {
            case CPU_BIND_IN: ptr[j] = in[a->index]; break;
            case CPU_BIND_OUT: ptr[j] = out[a->index]; break;
            case CPU_BIND_SCRATCH: ptr[j] = sc + a->offset; break;
            default: ptr[j] = a->fixed; continue;
            }
            if (a->mem) dnnl_memory_set_data_handle(a->mem, ptr[j]);
        }
        if (s->skip_same && same_buffers(s, ptr)) continue;
        if (s->kern) {
            /* oneDNN's queue must be drained before our kernel reads its results */
            if (i > 0 && p->steps[i - 1].prim && dnnl_stream_wait(cb->stream) != dnnl_success)
                st = nn_node_error(n, FFU_ERR_INTERNAL, "oneDNN stream failed");
            run_kernel(nn_cpu_run_threads(cb), s, ptr);
            continue;
        }
        if (dnnl_primitive_execute(s->prim, cb->stream, s->nargs, s->ex) != dnnl_success)
            st = nn_node_error(n, FFU_ERR_INTERNAL, "oneDNN primitive failed");
    }
    if (dnnl_stream_wait(cb->stream) != dnnl_success && st == FFU_OK)
        st = nn_node_error(n, FFU_ERR_INTERNAL, "oneDNN stream failed");
    return st;
}

static ffu_status cpu_run(nn_backend *b, const nn_graph *g, const nn_node *n, void *const *in,
                          void *const *out, void *scratch)
{
    cpu_backend *cb = (cpu_backend *)b;
    cpu_node *p = n->priv;
    (void)g;
    if (!p) return nn_node_error(n, FFU_ERR_INVALID, "run before prepare on the cpu backend");
    if (p->scratch_bytes && !scratch)
        return nn_node_error(n, FFU_ERR_INVALID, "the cpu backend needs scratch memory");
    int threads = nn_cpu_run_threads(cb);
    int old = threads_enter(threads);
    ffu_status st = p->chain    ? nn_cpu_chain_run(p, in, out, scratch, b->profile)
                    : p->strips ? nn_cpu_strips_run(p, in, out, scratch, b->profile)
                                : run_steps(cb, n, p, in, out, scratch);
    threads_leave(threads, old);
    return st;
}

static void cpu_node_info(nn_backend *b, const nn_node *n, const char **impl, int *reorders)
{
    (void)b;
    const cpu_node *p = n->priv;
    *impl = p ? p->impl : NULL;
    *reorders = p ? p->nreorders : 0;
}

/* ---- profiling members one node runs ------------------------------------------------------ */

ffu_status nn_cpu_split_init(nn_cpu_split *sp, int n, int nthr)
{
    sp->n = n, sp->nthr = nthr;
    sp->sec = calloc((size_t)n * (size_t)nthr, sizeof *sp->sec);
    sp->node = calloc((size_t)n, sizeof *sp->node);
    if (sp->sec && sp->node) return FFU_OK;
    nn_cpu_split_free(sp);
    return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
}

void nn_cpu_split_free(nn_cpu_split *sp)
{
    free(sp->sec);
    free(sp->node);
    sp->sec = NULL, sp->node = NULL;
}

static void nn_cpu_split_zero(nn_cpu_split *sp)
{
    memset(sp->sec, 0, sizeof *sp->sec * (size_t)sp->n * (size_t)sp->nthr);
}

/* sec[i]: node i's profiled seconds (g's nodes), the last member's split among all. */
static void nn_cpu_split_apply(const nn_cpu_split *sp, const nn_graph *g, double *sec)
{
    double all = 0;
    for (int i = 0; i < sp->n * sp->nthr; i++)
        all += sp->sec[i];
    if (all <= 0) return;
    const int64_t last = sp->node[sp->n - 1] - g->nodes;
    const double total = sec[last];
    for (int k = 0; k < sp->n; k++) {
        double mine = 0;
        for (int t = 0; t < sp->nthr; t++)
            mine += sp->sec[t * sp->n + k];
        const int64_t i = sp->node[k] - g->nodes;
        /* an earlier member's own run (recording its buffers) stays its own */
        sec[i] = (k == sp->n - 1 ? 0 : sec[i]) + total * mine / all;
    }
}

/* The last member of a band pipeline or of thread strips splits its time (the others
 * have nothing to do). */
static void cpu_profile(nn_backend *b, const nn_graph *g, const nn_node *n, int start, double *sec)
{
    (void)b;
    const cpu_node *p = n->priv;
    nn_cpu_split *sp = !p          ? NULL
                       : p->chain  ? nn_cpu_chain_split(p->chain)
                       : p->strips ? nn_cpu_strips_split(p->strips)
                                   : NULL;
    if (!sp || sp->node[sp->n - 1] != n) return;
    if (start)
        nn_cpu_split_zero(sp);
    else
        nn_cpu_split_apply(sp, g, sec);
}

static void cpu_destroy(nn_backend *b)
{
    cpu_backend *cb = (cpu_backend *)b;
    if (!cb) return;
    free(cb->lay);
    free(cb->chain_last);
    free(cb->strip_last);
    if (cb->stream) dnnl_stream_destroy(cb->stream);
    if (cb->eng) dnnl_engine_destroy(cb->eng);
    free(cb);
}

static const nn_backend_ops cpu_ops = {
    .name = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .scratch_bytes = cpu_scratch_bytes,
    .run = cpu_run,
    .release = cpu_release,
    .destroy = cpu_destroy,
    .node_info = cpu_node_info,
    .profile = cpu_profile,
};

ffu_status nn_backend_cpu_create(nn_backend **out, int threads, unsigned flags)
{
    *out = NULL;
    cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    cb->base.ops = &cpu_ops;
    cb->base.threads = threads > 0 ? threads : ffu_cpu_count();
    if (cb->base.threads < 1) cb->base.threads = 1;
    /* bf16 is only worth asking for where the CPU has native bf16 dot products */
    cb->base.bf16 = (flags & NN_CPU_BF16) && (ffu_cpu_features() & FFU_CPU_AVX512BF16) ? 1 : 0;
    cb->base.winograd = (flags & NN_CPU_WINOGRAD) != 0;
    cb->bands = (flags & NN_CPU_BANDS) != 0;
    cb->split_small = (flags & NN_CPU_SPLIT_SMALL) != 0;
    if (dnnl_engine_create(&cb->eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&cb->stream, cb->eng, dnnl_stream_default_flags) != dnnl_success) {
        cpu_destroy(&cb->base);
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "oneDNN: no CPU engine");
    }
    *out = &cb->base;
    return FFU_OK;
}

#else /* !FFU_HAVE_DNNL */

void ffu_nn_run_side_by_side(int n, ffu_nn_job_fn fn, void *arg)
{
    for (int k = 0; k < n; k++)
        fn(arg, k);
}

ffu_status nn_backend_cpu_create(nn_backend **out, int threads, unsigned flags)
{
    (void)threads, (void)flags;
    *out = NULL;
    return ffu_error_set(FFU_ERR_UNSUPPORTED, "the cpu backend was built without oneDNN");
}

#endif
