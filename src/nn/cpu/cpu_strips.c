/* Thread strips for the cpu backend: a run of convolutions on several threads where
 * each thread computes the same rows of every layer, in one parallel region.
 *
 * Node by node, every layer is split over the threads as its own kernel likes (oneDNN's
 * 1x1 kernels by output channels or pixel blocks, its depthwise ones by rows), and each
 * split pays a fork and a join. MobileFaceNet's 14x14 and 7x7 layers ran slower on two
 * threads than on one: most of what a thread reads, the other thread wrote, and comes
 * from the other core's cache (docs/NN_CPU.md "Thread strips"). Here thread t computes
 * output rows [OH * t / T, OH * (t + 1) / T) of every member, so a 1x1 layer reads only
 * rows its thread wrote; a layer reading rows around its own (a 3x3 window, a stride)
 * reads a row or two of the neighbour's.
 *
 * The threads meet at a barrier only where the sequential order matters: before a
 * member whose accesses conflict with one since the last barrier (a read of rows
 * another thread wrote, or a write over bytes another thread read or wrote; the memory
 * planner reuses buffers, so tensors of different shapes share bytes). Two accesses of
 * the same rows of the same buffer by every thread, as a 1x1 layer writing over its
 * residual, do not conflict. The barriers are worked out from the members' buffers at
 * the first run and again whenever the buffers change.
 *
 * Members are convolutions whose input, output and residual are stored channels-last
 * with one image and whose weights are small enough for every thread to read them all,
 * prepared either as one of our 1x1 or depthwise kernels (called with the thread's
 * rows) or as one oneDNN convolution primitive, maybe after the copy of the residual
 * into the output and before an activation step on the output (PReLU). For the latter
 * each thread gets one-thread primitives of the same steps cut to its rows: the same
 * weights, post-ops and kernel, with the pads of a strip (padding only where the strip
 * meets the image's edge).
 *
 * As with the band pipelines, the session runs the members in order: every member but
 * the last only records its buffers, the last runs them all. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"

#if FFU_HAVE_DNNL

#include "../nn_internal.h"
#include "../ops/ops_internal.h"
#include "cpu_internal.h"
#include "facefuse/core.h"

int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_get_max_threads(void);
void omp_set_num_threads(int n);
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
void GOMP_barrier(void);

enum { STRIP_DNNL = 1, STRIP_DW, STRIP_PW };

/* The most weights a member may have: every thread reads them all, where oneDNN alone
 * would split a layer by output channels (docs/NN_CPU.md "Thread strips"). */
#define STRIP_WEIGHT_BYTES (512u << 10)

/* A member's rows on one thread, and (oneDNN) its primitive for them. */
typedef struct strip_rows {
    int64_t o0, o1;     /* output rows */
    int64_t i0;         /* first input row read */
    int64_t ih, pt, pb; /* input rows read, and the pads above and below them */
    dnnl_primitive_t prim;
    int shared;                  /* prim is an earlier thread's */
    dnnl_memory_t src, dst, pad; /* bound to the thread's rows and scratchpad */
    dnnl_exec_arg_t ex[CPU_MAX_ARGS];
    /* weights converted for this strip's kernel (NULL: the node's own) */
    dnnl_memory_t wei;
    dnnl_memory_desc_t wmd;
    void *wdata;
    int owns_w; /* wdata is this thread's to free */
    /* the activation step after the convolution (PReLU, or what oneDNN would not fuse),
     * in place on the thread's output rows */
    dnnl_primitive_t act;
    int act_shared;
    dnnl_memory_t act_data, act_pad;
    dnnl_exec_arg_t act_ex[CPU_MAX_ARGS];
} strip_rows;

typedef struct strip_member {
    const nn_node *n;
    cpu_node *p;
    int kind;
    int own_in;           /* every thread reads only input rows it computed in the producer */
    int res;              /* a residual is added (input 3) */
    int copy_res;         /* oneDNN: step 0 copies the residual into the output */
    const cpu_step *conv; /* oneDNN: the convolution step */
    const cpu_step *act;  /* oneDNN: the activation step after it, or NULL */
    int64_t IH, OH, OW;
    size_t in_row, out_row, in_bytes, out_bytes, res_bytes; /* bytes */
    void *const *in, *const *out;                           /* recorded at run time */
    int barrier;    /* the threads meet before this member */
    size_t lines;   /* its scratchpad's 64-byte lines (oneDNN) */
    strip_rows *th; /* [nthr] */
} strip_member;

/* One access of a member to a buffer since the last barrier. */
typedef struct strip_access {
    const char *at;
    size_t bytes;
    size_t row;   /* own rows: each thread touches rows part(rows, t) of row bytes */
    int64_t rows; /* 0: any row (a read around the thread's own rows) */
    int write;
} strip_access;

struct nn_cpu_strips {
    int n, nthr;
    size_t area;           /* scratchpad bytes per thread (64-byte multiple) */
    dnnl_stream_t *stream; /* one per thread */
    int planned;           /* barriers worked out for the buffers in seen */
    const void **seen;     /* [3 * n]: input, output, residual of each member */
    strip_access *acc;     /* [3 * n]: plan_barriers' list */
    int failed;
    int prof;           /* this run times each member (split) */
    nn_cpu_split split; /* profiled seconds per thread and member */
    strip_member m[];
};

/* ---- planning ------------------------------------------------------------------------------ */

/* Whether node n can be a member, from its shapes and the layouts alone (finish checks
 * how it was prepared). */
static int strip_candidate(const cpu_backend *cb, const nn_graph *g, int i, int me)
{
    const nn_node *n = &g->nodes[i];
    if (n->backend != me || n->op != NN_OP_CONV || n->noutputs != 1 || n->ninputs < 2 ||
        (cb->chain_last && cb->chain_last[i] >= 0))
        return 0;
    const cpu_ctx c = {.cb = (cpu_backend *)cb, .g = g};
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0);
    if (!x || !y || x->shape.rank != 4 || y->shape.rank != 4 || x->shape.d[0] != 1 ||
        x->dtype != FFU_DTYPE_F32 || y->dtype != FFU_DTYPE_F32 ||
        !nn_cpu_layout(&c, n->inputs[0]) || nn_cpu_blocked(&c, n->inputs[0]) ||
        !nn_cpu_layout(&c, n->outputs[0]) || nn_cpu_blocked(&c, n->outputs[0]) ||
        nn_attr_int(n, "_pool", 0))
        return 0;
    const nn_tensor *w = nn_in(g, n, 1);
    if (!w || nn_tensor_bytes(w) > STRIP_WEIGHT_BYTES) return 0;
    if (n->ninputs > 3 && n->inputs[3] >= 0 &&
        (!nn_cpu_layout(&c, n->inputs[3]) || nn_cpu_blocked(&c, n->inputs[3])))
        return 0;
    return 1;
}

ffu_status nn_cpu_strips_plan(cpu_backend *cb, const nn_graph *g, int me)
{
    free(cb->strip_last);
    cb->strip_last = NULL;
    int nn = g->nnodes;
    if (!cb->bands || nn_cpu_run_threads(cb) < 2 || nn < 2) return FFU_OK;
    int *last = malloc(sizeof(int) * (size_t)nn);
    if (!last) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nn;) {
        int j = i;
        while (j < nn && strip_candidate(cb, g, j, me))
            j++;
        for (int k = i; k < j; k++)
            last[k] = j - i >= 2 ? j - 1 : -1;
        if (j == i) last[j++] = -1;
        i = j;
    }
    cb->strip_last = last;
    return FFU_OK;
}

int nn_cpu_strips_last(const cpu_ctx *c)
{
    const cpu_backend *cb = c->cb;
    int i = (int)(c->n - c->g->nodes);
    return cb->strip_last && cb->lay_g == c->g && cb->strip_last[i] == i;
}

/* Rows [a, b) of n rows on thread t of T. */
static void part(int64_t n, int t, int T, int64_t *a, int64_t *b)
{
    *a = n * t / T;
    *b = n * (t + 1) / T;
}

/* md of a channels-last (or one-block nChw16c) tensor cut to h rows; -1 when its rows
 * are not whole runs of bytes. */
static int rows_md(const dnnl_memory_desc_t *md, int64_t h, dnnl_memory_desc_t *out)
{
    if (md->ndims != 4 || md->format_kind != dnnl_blocked || md->dims[0] != 1) return -1;
    const dnnl_dims_t *s = &md->format_desc.blocking.strides;
    if ((*s)[2] != md->dims[3] * (*s)[3] || (*s)[3] < md->padded_dims[1]) return -1;
    *out = *md;
    out->dims[2] = out->padded_dims[2] = h;
    /* the dims outside the rows (the image; nChw16c's one channel block) */
    for (int d = 0; d < 2; d++)
        if ((*s)[d] >= md->dims[2] * (*s)[2]) out->format_desc.blocking.strides[d] = h * (*s)[2];
    return 0;
}

/* The primitive descriptor of op descriptor od with attr, its kernel's blocking chosen
 * for one thread (the strip's thread runs it alone); NULL when oneDNN has only its
 * reference kernel for it. */
static dnnl_primitive_desc_t one_thread_pd(const cpu_backend *cb, const void *od,
                                           const_dnnl_primitive_attr_t attr)
{
    dnnl_primitive_desc_t pd = NULL;
    int old = omp_get_max_threads();
    omp_set_num_threads(1);
    if (dnnl_primitive_desc_create(&pd, od, attr, cb->eng, NULL) != dnnl_success) pd = NULL;
    omp_set_num_threads(old);
    if (pd && nn_cpu_pd_is_ref(pd)) {
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
    }
    return pd;
}

/* The primitive descriptor of d on one thread, on one of oneDNN's JIT kernels: with the
 * weights as the node holds them where one takes them, else with the weights it wants
 * for the strip (which the caller then converts); NULL when there is none. */
static dnnl_primitive_desc_t rows_pd(const cpu_backend *cb, dnnl_convolution_desc_t *d,
                                     const_dnnl_primitive_desc_t orig)
{
    const_dnnl_primitive_attr_t attr = NULL;
    if (dnnl_primitive_desc_get_attr(orig, &attr) != dnnl_success) return NULL;
    dnnl_memory_desc_t any = d->weights_desc;
    d->weights_desc = *dnnl_primitive_desc_query_md(orig, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_t pd = one_thread_pd(cb, d, attr);
    if (!pd) {
        d->weights_desc = any;
        pd = one_thread_pd(cb, d, attr);
    }
    return pd;
}

/* Weights the strip's kernel wants in another layout than the node holds them:
 * converted once, shared by the member's threads that want the same. 0 on success. */
static int rows_weights(const cpu_backend *cb, strip_member *m, const dnnl_memory_desc_t *want,
                        strip_rows *r)
{
    for (int t = 0; m->th + t < r; t++)
        if (m->th[t].wei && m->th[t].wmd.ndims && dnnl_memory_desc_equal(&m->th[t].wmd, want)) {
            r->wmd = *want;
            return dnnl_memory_create(&r->wei, want, cb->eng, m->th[t].wdata) == dnnl_success ? 0
                                                                                              : -1;
        }
    const cpu_arg *wa = NULL;
    for (int j = 0; j < m->conv->nargs; j++)
        if (m->conv->a[j].arg == DNNL_ARG_WEIGHTS) wa = &m->conv->a[j];
    const dnnl_memory_desc_t *have = NULL;
    void *data = NULL;
    if (!wa || dnnl_memory_get_memory_desc(wa->mem, &have) != dnnl_success ||
        dnnl_memory_get_data_handle(wa->mem, &data) != dnnl_success || !data)
        return -1;
    size_t bytes = dnnl_memory_desc_get_size(want);
    r->wdata = aligned_alloc(64, (bytes + 63) / 64 * 64);
    r->wmd = *want;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t from = NULL;
    int ok = r->wdata &&
             dnnl_reorder_primitive_desc_create(&pd, have, cb->eng, want, cb->eng, NULL) ==
                 dnnl_success &&
             dnnl_primitive_create(&prim, pd) == dnnl_success &&
             dnnl_memory_create(&from, have, cb->eng, data) == dnnl_success &&
             dnnl_memory_create(&r->wei, want, cb->eng, r->wdata) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, r->wei}};
        ok = dnnl_primitive_execute(prim, cb->stream, 2, args) == dnnl_success &&
             dnnl_stream_wait(cb->stream) == dnnl_success;
    }
    if (from) dnnl_memory_destroy(from);
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
    r->owns_w = 1;
    return ok ? 0 : -1;
}

/* The oneDNN member's primitive for rows r (o0, o1 set): its scratchpad's 64-byte lines,
 * or -1 when oneDNN will not run the strip with the node's kernel. */
static int dnnl_rows(const cpu_backend *cb, strip_member *m, strip_rows *r)
{
    const_dnnl_primitive_desc_t pd = NULL;
    const dnnl_convolution_desc_t *cd = NULL;
    if (dnnl_primitive_get_primitive_desc(m->conv->prim, &pd) != dnnl_success ||
        dnnl_primitive_desc_query(pd, dnnl_query_convolution_d, 0, &cd) != dnnl_success || !cd)
        return -1;
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    if (!wmd || !smd || !dmd || cd->src_desc.ndims != 4) return -1;
    int64_t SH = cd->strides[0], PT = cd->padding[0][0];
    int64_t KH = cd->weights_desc.dims[cd->weights_desc.ndims - 2];
    int64_t eff = (KH - 1) * (cd->dilates[0] + 1) + 1;
    /* input rows [o0 * SH - PT, (o1 - 1) * SH - PT + eff), inside the image */
    int64_t lo = r->o0 * SH - PT, hi = (r->o1 - 1) * SH - PT + eff;
    int64_t i0 = lo < 0 ? 0 : lo, i1 = hi > m->IH ? m->IH : hi;
    r->i0 = i0;
    dnnl_convolution_desc_t d = *cd;
    if (rows_md(smd, i1 - i0, &d.src_desc) < 0 || rows_md(dmd, r->o1 - r->o0, &d.dst_desc) < 0)
        return -1;
    d.padding[0][0] = i0 - lo;
    d.padding[1][0] = hi - i1;
    r->ih = i1 - i0, r->pt = i0 - lo, r->pb = hi - i1;
    /* threads with the same rows, pads and so descriptors share one primitive */
    const strip_rows *same = NULL;
    for (const strip_rows *e = m->th; e < r && !same; e++)
        if (e->prim && e->ih == r->ih && e->o1 - e->o0 == r->o1 - r->o0 && e->pt == r->pt &&
            e->pb == r->pb)
            same = e;
    size_t pad = 0;
    int ok;
    if (same) {
        const dnnl_memory_desc_t *pmd = NULL;
        r->prim = same->prim, r->shared = 1;
        ok = dnnl_memory_get_memory_desc(same->pad, &pmd) == dnnl_success &&
             dnnl_memory_create(&r->pad, pmd, cb->eng, DNNL_MEMORY_NONE) == dnnl_success &&
             (!same->wei || rows_weights(cb, m, &same->wmd, r) == 0);
    } else {
        dnnl_primitive_desc_t rpd = rows_pd(cb, &d, pd);
        if (!rpd) return -1;
        const dnnl_memory_desc_t *want =
            dnnl_primitive_desc_query_md(rpd, dnnl_query_weights_md, 0);
        const dnnl_memory_desc_t *pmd =
            dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
        ok = want && pmd &&
             (dnnl_memory_desc_equal(want, wmd) || rows_weights(cb, m, want, r) == 0) &&
             dnnl_primitive_create(&r->prim, rpd) == dnnl_success &&
             dnnl_memory_create(&r->pad, pmd, cb->eng, DNNL_MEMORY_NONE) == dnnl_success;
        pad = pmd ? dnnl_memory_desc_get_size(pmd) : 0;
        dnnl_primitive_desc_destroy(rpd);
    }
    ok = ok &&
         dnnl_memory_create(&r->src, &d.src_desc, cb->eng, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&r->dst, &d.dst_desc, cb->eng, DNNL_MEMORY_NONE) == dnnl_success;
    if (!ok) return -1;
    for (int j = 0; j < m->conv->nargs; j++) {
        r->ex[j] = m->conv->ex[j];
        if (r->ex[j].arg == DNNL_ARG_SRC) r->ex[j].memory = r->src;
        if (r->ex[j].arg == DNNL_ARG_DST) r->ex[j].memory = r->dst;
        if (r->ex[j].arg == DNNL_ARG_SCRATCHPAD) r->ex[j].memory = r->pad;
        if (r->ex[j].arg == DNNL_ARG_WEIGHTS && r->wei) r->ex[j].memory = r->wei;
    }
    return (int)((pad + 63) / 64);
}

static dnnl_primitive_kind_t prim_kind(const cpu_step *s)
{
    const_dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_kind_t k = dnnl_undefined_primitive;
    if (s->prim && dnnl_primitive_get_primitive_desc(s->prim, &pd) == dnnl_success)
        dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &k);
    return k;
}

/* The one-thread primitive descriptor of the member's activation step on rows r (o0,
 * o1 set), on a JIT kernel; NULL when there is none. */
static dnnl_primitive_desc_t act_pd(const cpu_backend *cb, const strip_member *m,
                                    const strip_rows *r)
{
    const_dnnl_primitive_desc_t pd = NULL;
    const_dnnl_primitive_attr_t attr = NULL;
    const void *od = NULL;
    dnnl_prelu_desc_t pr;
    dnnl_eltwise_desc_t el;
    dnnl_memory_desc_t *data;
    if (dnnl_primitive_get_primitive_desc(m->act->prim, &pd) != dnnl_success ||
        dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success)
        return NULL;
    int prelu = prim_kind(m->act) == dnnl_prelu;
    if (dnnl_primitive_desc_query(pd, prelu ? dnnl_query_prelu_d : dnnl_query_eltwise_d, 0, &od) !=
            dnnl_success ||
        !od)
        return NULL;
    if (prelu)
        pr = *(const dnnl_prelu_desc_t *)od, data = &pr.data_desc, od = &pr;
    else
        el = *(const dnnl_eltwise_desc_t *)od, data = &el.data_desc, od = &el;
    dnnl_memory_desc_t whole = *data;
    if (rows_md(&whole, r->o1 - r->o0, data) < 0) return NULL;
    return one_thread_pd(cb, od, attr);
}

/* The member's activation step for rows r: its scratchpad's 64-byte lines, or -1 when
 * oneDNN will not run it on them with a JIT kernel. Threads with as many rows share a
 * primitive. */
static int act_rows(const cpu_backend *cb, strip_member *m, strip_rows *r)
{
    const strip_rows *same = NULL;
    for (const strip_rows *e = m->th; e < r && !same; e++)
        if (e->act && e->o1 - e->o0 == r->o1 - r->o0) same = e;
    const dnnl_memory_desc_t *pmd = NULL, *dmd = NULL;
    size_t pad = 0;
    dnnl_primitive_desc_t rpd = NULL;
    if (same) {
        r->act = same->act, r->act_shared = 1;
        if (dnnl_memory_get_memory_desc(same->act_pad, &pmd) != dnnl_success ||
            dnnl_memory_get_memory_desc(same->act_data, &dmd) != dnnl_success)
            return -1;
    } else {
        if (!(rpd = act_pd(cb, m, r))) return -1;
        pmd = dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
        dmd = dnnl_primitive_desc_query_md(rpd, dnnl_query_src_md, 0);
        pad = pmd ? dnnl_memory_desc_get_size(pmd) : 0;
        if (!pmd || !dmd || dnnl_primitive_create(&r->act, rpd) != dnnl_success) {
            dnnl_primitive_desc_destroy(rpd);
            return -1;
        }
    }
    int ok = dnnl_memory_create(&r->act_pad, pmd, cb->eng, DNNL_MEMORY_NONE) == dnnl_success &&
             dnnl_memory_create(&r->act_data, dmd, cb->eng, DNNL_MEMORY_NONE) == dnnl_success;
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (!ok) return -1;
    for (int j = 0; j < m->act->nargs; j++) {
        r->act_ex[j] = m->act->ex[j];
        int arg = r->act_ex[j].arg;
        if (arg == DNNL_ARG_SRC || arg == DNNL_ARG_DST) r->act_ex[j].memory = r->act_data;
        if (arg == DNNL_ARG_SCRATCHPAD) r->act_ex[j].memory = r->act_pad;
    }
    return (int)((pad + 63) / 64);
}

/* How member k was prepared: its kind, or 0 when it cannot be a member after all. */
static int member_kind(strip_member *m)
{
    cpu_node *p = m->p;
    if (!p || p->chain || p->view) return 0;
    if (p->kkind == NN_CPU_K_DW && p->nsteps == 1) {
        const nn_cpu_dw *d = p->kdata;
        return !d->pool && !d->sc.b && d->N == 1 ? STRIP_DW : 0;
    }
    if (p->kkind == NN_CPU_K_PW && p->nsteps == 1) {
        const nn_cpu_pw *d = p->kdata;
        return !d->sc.b ? STRIP_PW : 0;
    }
    if (p->kkind != NN_CPU_K_NONE) return 0;
    /* [the copy of the residual into the output,] the convolution[, its activation] */
    int i = 0;
    const cpu_step *s = &p->steps[0];
    if (p->nsteps > 1 && s->prim && s->skip_same && s->nargs == 2) {
        for (int j = 0; j < 2; j++)
            if (!(s->a[j].arg == DNNL_ARG_FROM && s->a[j].bind == CPU_BIND_IN &&
                  s->a[j].index == 3) &&
                !(s->a[j].arg == DNNL_ARG_TO && s->a[j].bind == CPU_BIND_OUT && s->a[j].index == 0))
                return 0;
        m->copy_res = 1;
        i = 1;
    }
    if (i >= p->nsteps || p->nsteps > i + 2 || prim_kind(&p->steps[i]) != dnnl_convolution)
        return 0;
    s = &p->steps[i];
    for (int j = 0; j < s->nargs; j++) {
        const cpu_arg *a = &s->a[j];
        int ok = a->bind == CPU_BIND_FIXED ||
                 (a->arg == DNNL_ARG_SRC && a->bind == CPU_BIND_IN && a->index == 0) ||
                 (a->arg == DNNL_ARG_DST && a->bind == CPU_BIND_OUT && a->index == 0) ||
                 (a->arg == DNNL_ARG_SCRATCHPAD && a->bind == CPU_BIND_SCRATCH) ||
                 (a->bind == CPU_BIND_IN && a->index >= 4); /* a fused scale: one value */
        if (!ok) return 0;
    }
    m->conv = s;
    if (i + 1 == p->nsteps) return STRIP_DNNL;
    s = &p->steps[i + 1];
    dnnl_primitive_kind_t k = prim_kind(s);
    if (k != dnnl_prelu && k != dnnl_eltwise) return 0;
    for (int j = 0; j < s->nargs; j++) {
        const cpu_arg *a = &s->a[j];
        int ok = a->bind == CPU_BIND_FIXED ||
                 ((a->arg == DNNL_ARG_SRC || a->arg == DNNL_ARG_DST) && a->bind == CPU_BIND_OUT &&
                  a->index == 0) ||
                 (a->arg == DNNL_ARG_SCRATCHPAD && a->bind == CPU_BIND_SCRATCH);
        if (!ok) return 0;
    }
    m->act = s;
    return STRIP_DNNL;
}

static void rows_free(strip_rows *th, int T)
{
    for (int t = 0; th && t < T; t++) {
        if (th[t].prim && !th[t].shared) dnnl_primitive_destroy(th[t].prim);
        if (th[t].src) dnnl_memory_destroy(th[t].src);
        if (th[t].dst) dnnl_memory_destroy(th[t].dst);
        if (th[t].pad) dnnl_memory_destroy(th[t].pad);
        if (th[t].wei) dnnl_memory_destroy(th[t].wei);
        if (th[t].owns_w) free(th[t].wdata);
        if (th[t].act && !th[t].act_shared) dnnl_primitive_destroy(th[t].act);
        if (th[t].act_data) dnnl_memory_destroy(th[t].act_data);
        if (th[t].act_pad) dnnl_memory_destroy(th[t].act_pad);
    }
    free(th);
}

static void strips_free(struct nn_cpu_strips *sg)
{
    if (!sg) return;
    for (int k = 0; k < sg->n; k++)
        rows_free(sg->m[k].th, sg->nthr);
    for (int t = 0; sg->stream && t < sg->nthr; t++)
        if (sg->stream[t]) dnnl_stream_destroy(sg->stream[t]);
    free(sg->stream);
    free(sg->seen);
    free(sg->acc);
    nn_cpu_split_free(&sg->split);
    free(sg);
}

/* The member's rows on each of T threads (m->th, m->lines); FFU_ERR_UNSUPPORTED when
 * oneDNN will not cut it. */
static ffu_status member_rows(const cpu_backend *cb, strip_member *m, int T)
{
    if (!(m->th = calloc((size_t)T, sizeof *m->th)))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int t = 0; t < T; t++) {
        strip_rows *r = &m->th[t];
        part(m->OH, t, T, &r->o0, &r->o1);
        if (m->kind != STRIP_DNNL || r->o0 == r->o1) continue;
        int l = dnnl_rows(cb, m, r), la = m->act && l >= 0 ? act_rows(cb, m, r) : 0;
        if (la > l) l = la;
        if (l < 0 || la < 0) {
            rows_free(m->th, T);
            m->th = NULL;
            return FFU_ERR_UNSUPPORTED;
        }
        if ((size_t)l > m->lines) m->lines = (size_t)l;
    }
    return FFU_OK;
}

/* Makes candidates [a, b) a run, if at least two (their rows pass to it); the last
 * member runs it. */
static ffu_status strips_make(const cpu_backend *cb, strip_member *cand, int a, int b)
{
    int n = b - a, T = nn_cpu_run_threads(cb);
    if (n < 2) {
        for (int k = a; k < b; k++)
            rows_free(cand[k].th, T), cand[k].th = NULL;
        return FFU_OK;
    }
    struct nn_cpu_strips *sg = calloc(1, sizeof *sg + sizeof(strip_member) * (size_t)n);
    if (!sg) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    sg->n = n, sg->nthr = T;
    memcpy(sg->m, cand + a, sizeof(strip_member) * (size_t)n);
    for (int k = a; k < b; k++)
        cand[k].th = NULL;
    sg->stream = calloc((size_t)T, sizeof *sg->stream);
    sg->seen = calloc(3 * (size_t)n, sizeof *sg->seen);
    sg->acc = calloc(3 * (size_t)n, sizeof *sg->acc);
    int ok = sg->stream && sg->seen && sg->acc && nn_cpu_split_init(&sg->split, n, T) == FFU_OK;
    for (int k = 0; ok && k < n; k++)
        sg->split.node[k] = sg->m[k].n;
    for (int t = 0; ok && t < T; t++)
        ok = dnnl_stream_create(&sg->stream[t], cb->eng, dnnl_stream_default_flags) == dnnl_success;
    if (!ok) {
        strips_free(sg);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < n; k++)
        if (sg->m[k].lines * 64 > sg->area) sg->area = sg->m[k].lines * 64;
    for (int k = 0; k < n; k++) {
        cpu_node *p = sg->m[k].p;
        char impl[sizeof p->impl + 40];
        snprintf(impl, sizeof impl, "strip %d/%d %s", k + 1, n, p->impl);
        memcpy(p->impl, impl, sizeof p->impl - 1); /* cut to fit */
        p->impl[sizeof p->impl - 1] = 0;
        p->strips = sg;
        p->strips_pos = k;
    }
    cpu_node *lp = sg->m[n - 1].p;
    size_t need = sg->area * (size_t)T + 64;
    if (need > lp->scratch_bytes) lp->scratch_bytes = need;
    return FFU_OK;
}

ffu_status nn_cpu_strips_finish(cpu_ctx *c, nn_graph *g)
{
    cpu_backend *cb = c->cb;
    int last = (int)(c->n - g->nodes), first = last, T = nn_cpu_run_threads(cb);
    while (first > 0 && cb->strip_last[first - 1] == last)
        first--;
    int nc = last - first + 1;
    strip_member *cand = calloc((size_t)nc, sizeof *cand);
    if (!cand) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = FFU_OK;
    int a = 0;
    for (int k = 0; k < nc && st == FFU_OK; k++) {
        strip_member *m = &cand[k];
        const nn_node *n = &g->nodes[first + k];
        const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0), *w = nn_in(g, n, 1);
        m->n = n, m->p = n->priv;
        m->kind = member_kind(m);
        m->IH = x->shape.d[2], m->OH = y->shape.d[2], m->OW = y->shape.d[3];
        m->in_row = sizeof(float) * (size_t)(x->shape.d[1] * x->shape.d[3]);
        m->out_row = sizeof(float) * (size_t)(y->shape.d[1] * m->OW);
        m->in_bytes = m->in_row * (size_t)m->IH;
        m->out_bytes = m->out_row * (size_t)m->OH;
        m->res = n->ninputs > 3 && n->inputs[3] >= 0;
        m->res_bytes = m->res ? nn_tensor_bytes(nn_in(g, n, 3)) : 0;
        /* a 1x1 window at stride 1 over as many rows reads each thread's own rows */
        nn_window win;
        m->own_in =
            nn_window_init(n, NN_WINDOW_CONV, 2, x->shape.d + 2, w->shape.d + 2, &win) == 0 &&
            win.k[1] == 1 && win.stride[1] == 1 && win.pad0[1] == 0 && m->IH == m->OH;
        if (m->kind && (st = member_rows(cb, m, T)) == FFU_ERR_UNSUPPORTED)
            m->kind = 0, st = FFU_OK;
        if (!m->kind && st == FFU_OK) { /* a run ends before it */
            st = strips_make(cb, cand, a, k);
            a = k + 1;
        }
    }
    if (st == FFU_OK) st = strips_make(cb, cand, a, nc);
    for (int k = 0; k < nc; k++)
        rows_free(cand[k].th, T); /* after an error */
    free(cand);
    return st;
}

void nn_cpu_strips_release(cpu_node *p)
{
    if (p && p->strips && p->strips_pos == p->strips->n - 1) strips_free(p->strips);
}

nn_cpu_split *nn_cpu_strips_split(struct nn_cpu_strips *sg) { return &sg->split; }

/* ---- running ------------------------------------------------------------------------------- */

static int conflict(const strip_access *a, const strip_access *b)
{
    if (!a->write && !b->write) return 0;
    if (a->at >= b->at + b->bytes || b->at >= a->at + a->bytes) return 0;
    /* the same rows of the same buffer on every thread */
    return !(a->rows && a->rows == b->rows && a->at == b->at && a->row == b->row);
}

/* Works out before which members the threads meet, for the buffers recorded now; -1
 * when a member's output was planned over its input. */
static int plan_barriers(struct nn_cpu_strips *sg)
{
    strip_access *acc = sg->acc;
    int na = 0;
    for (int k = 0; k < sg->n; k++) {
        strip_member *m = &sg->m[k];
        strip_access mine[3] = {
            {m->in[0], m->in_bytes, m->in_row, m->own_in ? m->IH : 0, 0},
            {m->out[0], m->out_bytes, m->out_row, m->OH, 1},
            {m->res ? m->in[3] : NULL, m->res_bytes, m->out_row, m->OH, 0},
        };
        int nm = m->res ? 3 : 2;
        if (conflict(&mine[0], &mine[1]))
            return -1; /* a thread would read rows another
                           has written over */
        m->barrier = 0;
        for (int i = 0; i < nm && !m->barrier; i++)
            for (int j = 0; j < na && !m->barrier; j++)
                m->barrier = conflict(&mine[i], &acc[j]);
        if (m->barrier) na = 0;
        for (int i = 0; i < nm; i++)
            acc[na++] = mine[i];
    }
    return 0;
}

/* Member m's strip s on thread t (its stream and scratchpad pad). */
static void run_member(struct nn_cpu_strips *sg, strip_member *m, int s, int t, char *pad)
{
    const strip_rows *r = &m->th[s];
    if (r->o0 >= r->o1) return;
    const char *x = m->in[0];
    char *y = m->out[0];
    const char *res = m->res ? m->in[3] : NULL;
    if (m->kind == STRIP_DW) {
        nn_cpu_dw_rows_avx512(m->p->kdata, (const float *)x, (const float *)res, (float *)y, r->o0,
                              r->o1, NULL);
        return;
    }
    if (m->kind == STRIP_PW) {
        nn_cpu_pw_pixels_avx512(m->p->kdata, (const float *)x, (const float *)res, (float *)y,
                                r->o0 * m->OW, r->o1 * m->OW);
        return;
    }
    if (m->copy_res && res != y)
        memcpy(y + (size_t)r->o0 * m->out_row, res + (size_t)r->o0 * m->out_row,
               (size_t)(r->o1 - r->o0) * m->out_row);
    if (dnnl_memory_set_data_handle(r->src, (void *)(x + (size_t)r->i0 * m->in_row)) !=
            dnnl_success ||
        dnnl_memory_set_data_handle(r->dst, y + (size_t)r->o0 * m->out_row) != dnnl_success ||
        dnnl_memory_set_data_handle(r->pad, pad) != dnnl_success ||
        dnnl_primitive_execute(r->prim, sg->stream[t], m->conv->nargs, r->ex) != dnnl_success ||
        (m->act && (dnnl_memory_set_data_handle(r->act_data, y + (size_t)r->o0 * m->out_row) !=
                        dnnl_success ||
                    dnnl_memory_set_data_handle(r->act_pad, pad) != dnnl_success ||
                    dnnl_primitive_execute(r->act, sg->stream[t], m->act->nargs, r->act_ex) !=
                        dnnl_success)) ||
        dnnl_stream_wait(sg->stream[t]) != dnnl_success)
        sg->failed = 1;
}

typedef struct strips_job {
    struct nn_cpu_strips *sg;
    char *area;
} strips_job;

/* Thread t of a team of nt runs strips t, t + nt, ... of every member: all of them
 * when the runtime gave fewer threads than asked (a run inside a parallel region). */
static void strips_thread(void *arg)
{
    const strips_job *j = arg;
    struct nn_cpu_strips *sg = j->sg;
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    char *pad = j->area + (size_t)t * sg->area;
    double *sec = sg->prof ? sg->split.sec + (size_t)t * (size_t)sg->n : NULL;
    for (int k = 0; k < sg->n; k++) {
        if (k > 0 && sg->m[k].barrier) GOMP_barrier();
        int64_t t0 = sec ? ffu_clock_ns() : 0;
        for (int s = t; s < sg->nthr; s += nt)
            run_member(sg, &sg->m[k], s, t, pad);
        if (sec) sec[k] += 1e-9 * (double)(ffu_clock_ns() - t0);
    }
}

ffu_status nn_cpu_strips_run(cpu_node *p, void *const *in, void *const *out, void *scratch,
                             int prof)
{
    struct nn_cpu_strips *sg = p->strips;
    strip_member *me = &sg->m[p->strips_pos];
    me->in = in, me->out = out;
    if (p->strips_pos < sg->n - 1) return FFU_OK; /* the last member runs them all */
    int same = sg->planned;
    for (int k = 0; k < sg->n; k++) {
        const strip_member *m = &sg->m[k];
        const void *now[3] = {m->in[0], m->out[0], m->res ? m->in[3] : NULL};
        for (int i = 0; i < 3; i++) {
            same &= sg->seen[3 * k + i] == now[i];
            sg->seen[3 * k + i] = now[i];
        }
        /* a fused scale's value (bound as the node input it is) */
        const cpu_step *s = m->conv;
        for (int j = 0; s && j < s->nargs; j++)
            if (s->a[j].bind == CPU_BIND_IN && s->a[j].index >= 4)
                dnnl_memory_set_data_handle(s->a[j].mem, m->in[s->a[j].index]);
    }
    if (!same) {
        if (plan_barriers(sg) < 0)
            return nn_node_error(me->n, FFU_ERR_INTERNAL,
                                 "thread strips: a member's output was planned over its input");
        sg->planned = 1;
    }
    char *area = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    strips_job j = {sg, area};
    sg->failed = 0;
    sg->prof = prof;
    GOMP_parallel(strips_thread, &j, (unsigned)sg->nthr, 0);
    if (sg->failed)
        return nn_node_error(me->n, FFU_ERR_INTERNAL, "oneDNN primitive failed in a strip");
    return FFU_OK;
}

#endif
