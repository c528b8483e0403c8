/* Band pipelines for the cpu backend: a chain of convolutions run a row at a time, so
 * that the large tensors between them never leave the core's L2 cache.
 *
 * YuNet's stem is fifteen convolutions at 320x320, 160x160 and 80x80 (its first layer,
 * then 1x1 and 3x3 depthwise layers, two with a fused 2x2 max pool). Node by node, each
 * layer reads and writes 1.6-6.5 MB: more than a 2 MiB L2 holds, so every one of them
 * streams from L3, and on the Intel host the depthwise layers ran at 31-37 GFLOP/s there
 * against 76 on tensors that fit (docs/NN_CPU.md "Band pipelines").
 *
 * Here the chain's last member computes its output row by row; before each row, every
 * member pulls from the one before it the rows that row reads and that it has not
 * computed yet, one row at a time, so each value between members lives in a ring of
 * as many rows as one row of the next member reads (row r in slot r mod cap). Our
 * kernels take their input rows by pointer (nn_cpu_dw_ring_row_avx512, the first-layer
 * kernel reading the image) or as a run of pixels (nn_cpu_pw_pixels_avx512), so they
 * read rings directly. With T threads the last member's rows are cut into T strips,
 * each a pipeline of its own (the rows above a strip's start are computed twice).
 *
 * A chain ends at the member that reads its last large value: later members work on
 * tensors that stay in L2 anyway and would only pay the row-by-row overhead.
 *
 * A ring whose channels do not fill whole vectors (BlazeFace's 24) holds planar rows
 * (cpu_planar_avx512.c: a plane of pixels per channel) when its writer and readers have
 * planar kernels; rows are converted where planar meets channels-last. Such a value is
 * worth a pipeline even when small, for the faster kernels.
 *
 * A 1x1 member may add a residual (BlazeFace's blocks: depthwise -> 1x1 + the block's
 * input): read from its buffer when the pipeline does not compute it, else from the
 * ring of the member that does, which then keeps every row computed since the row the
 * adding member reads.
 *
 * A value may also have two readers in one pipeline (a fork, on one thread): a stride-2
 * depthwise stage and a 2x2 max pool whose output the next 1x1 stage adds (BlazeFace's
 * stride-2 blocks). The pool is a stage of its own beside the depthwise one; each stage
 * names the stage it reads (src), and a stage adding a ring's rows pulls them first.
 *
 * A row whose inputs are all one row repeated (the bands of one colour of a letterboxed
 * image) is the row above copied rather than computed (same_as_above).
 *
 * The members are planned as usual (their builders prefer our kernels,
 * nn_cpu_chain_member) and the session runs them in order: every member but the last
 * only records its buffers, the last runs the pipeline. The planner is told that the
 * values between members need no memory and that the chain's input lives until the
 * last member (else it could put the output over the input, which the first member was
 * the last to read). */
#include <stdatomic.h>
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
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);

enum { RES_NONE = -1, RES_BUFFER = -2 };

/* Chains shorter than this, or whose tensors all fit in L2 anyway, are not worth it. */
#define CHAIN_MIN_NODES 3
#define CHAIN_MIN_TENSOR (1u << 20)

typedef struct chain_stage {
    int kind;         /* NN_CPU_K_* */
    const void *k;    /* the member's kernel data */
    const nn_node *n; /* the member */
    cpu_node *p;
    int64_t IC, IH, IW, OC, OH, OW; /* per image; OH: stored rows (pooled with a pool) */
    /* output rows [a, b) read input rows [a * scale - pt, (b - 1) * scale - pt + ext) */
    int64_t scale, pt, ext;
    int64_t cap;      /* ring rows (0 for the last stage: it writes the output) */
    int src;          /* the stage whose output it reads (-1: the pipeline's input) */
    /* the residual a 1x1 member adds: RES_NONE, RES_BUFFER (a value outside the
     * pipeline, read where it is stored) or the earlier stage whose ring holds it */
    int res;
    size_t ring;      /* offset of the ring in a thread's area, floats */
    int planar;       /* the ring holds planar rows (cpu_planar_avx512.c) */
    int64_t rowf;     /* floats per ring row */
    void *const *in, *const *out; /* recorded at run time */
} chain_stage;

struct nn_cpu_chain {
    int n;
    int64_t N;
    int nthr;
    size_t area, tmp; /* floats per thread; offset of the pool's two conv rows */
    size_t conv, convf; /* offset of two rows for layout conversions, and their floats */
    size_t prep;        /* offset of a planar head's prepared input rows */
    size_t same;        /* offset of the rows' "same as the row above" bytes */
    nn_cpu_split split; /* profiled seconds per thread and member */
    chain_stage st[];
};

/* ---- planning ------------------------------------------------------------------------------ */

/* 1 when a first layer reading an NHWC image of 3 channels, into K outputs OW wide at
 * column stride SW, has the planar kernel (cpu_planar_avx512.c): SW 1 or 2, 17-24
 * outputs (the accumulators of a block fill the registers), OW a multiple of 16. */
static int planar_head(int64_t K, int64_t OW, int64_t SW)
{
    return K >= 17 && K <= 24 && OW % 16 == 0 && SW <= 2;
}

/* NN_CPU_K_POOL when MaxPool node n is one our 2x2 kernel runs (cpu_misc.c build_pool2)
 * on channels-last tensors of even sizes: a pipeline may take it in beside a stride-2
 * depthwise stage reading the same value (a fork, nn_cpu_chain_plan). */
static int pool_stage(const cpu_ctx *c, const nn_node *n)
{
    const nn_graph *g = c->g;
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0);
    nn_window win;
    if (n->ninputs != 1 || n->noutputs != 1 || n->act.kind != NN_ACT_NONE || !x || !y ||
        x->dtype != FFU_DTYPE_F32 || x->shape.rank != 4 || !nn_shape_known(&x->shape) ||
        !nn_shape_known(&y->shape) || !nn_cpu_stored_nhwc(c, n->inputs[0]) ||
        !nn_cpu_stored_nhwc(c, n->outputs[0]) ||
        nn_window_init(n, NN_WINDOW_POOL, 2, &x->shape.d[2], NULL, &win) != FFU_OK ||
        !nn_cpu_pool2_window(&win) || win.in[1] % 2 || win.in[2] % 2)
        return NN_CPU_K_NONE;
    return NN_CPU_K_POOL;
}

/* The kind of stage Conv node n can be (NN_CPU_K_NONE: none), from its shape alone (or
 * MaxPool node n: pool_stage); the member's builder still decides (nn_cpu_chain_finish
 * checks what it chose). */
static int stage_kind(const cpu_ctx *c, const nn_node *n, int me)
{
    const nn_graph *g = c->g;
    if (n->backend == me && n->op == NN_OP_MAX_POOL) return pool_stage(c, n);
    /* a fused scale (input 4, ir.h): its epilogue runs on finished rows (nn_cpu_scaled),
     * not on a pipeline's ring rows */
    if (n->backend != me || n->op != NN_OP_CONV || n->ninputs < 2 || n->ninputs > 4 ||
        n->noutputs != 1)
        return NN_CPU_K_NONE;
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, 1), *y = nn_out(g, n, 0);
    const nn_tensor *b = n->ninputs > 2 ? nn_in(g, n, 2) : NULL;
    /* a fused residual (1x1 members only): stored as the output is */
    int res = n->ninputs > 3 && n->inputs[3] >= 0;
    const nn_tensor *r = res ? nn_in(g, n, 3) : NULL;
    if (res && (!r || r->dtype != FFU_DTYPE_F32 || nn_cpu_is_const(r) ||
                !nn_cpu_stored_nhwc(c, n->inputs[3])))
        return NN_CPU_K_NONE;
    if (!x || !w || !y || x->dtype != FFU_DTYPE_F32 || y->dtype != FFU_DTYPE_F32 ||
        x->shape.rank != 4 || y->shape.rank != 4 || w->shape.rank != 4 ||
        !nn_cpu_is_const(w) || (b && !nn_cpu_is_const(b)) ||
        !nn_shape_known(&x->shape) || !nn_shape_known(&y->shape) ||
        !nn_cpu_stored_nhwc(c, n->outputs[0]))
        return NN_CPU_K_NONE;
    /* a plain input: a first layer (the kernel reads NCHW), which can only head a
     * chain; one reading an NHWC image runs alone (as fast either way in BlazeFace) */
    int plain_in = !nn_cpu_layout(c, n->inputs[0]);
    if (!plain_in && !nn_cpu_stored_nhwc(c, n->inputs[0])) return NN_CPU_K_NONE;
    nn_window win; /* spatial dims right-aligned: [1] rows, [2] columns */
    if (nn_window_init(n, NN_WINDOW_CONV, 2, &x->shape.d[2], &w->shape.d[2], &win) != FFU_OK ||
        win.dil[1] != 1 || win.dil[2] != 1)
        return NN_CPU_K_NONE;
    int64_t C = x->shape.d[1], M = y->shape.d[1], group = nn_attr_int(n, "group", 1);
    int64_t pool = nn_attr_int(n, "_pool", 0);
    int first = !res && group == 1 && !pool && C <= 4 && (M <= 32 || M == 64) && win.k[1] <= 7 &&
                win.k[2] <= 7 && (win.stride[2] == 1 || win.stride[2] == 2);
    if (plain_in) return first ? NN_CPU_K_CF : NN_CPU_K_NONE;
    /* one reading an NHWC image heads a pipeline only with planar output rows (a planar
     * head, planar_node) */
    if (first && C == 3 && planar_head(M, y->shape.d[3], win.stride[2])) return NN_CPU_K_CF;
    if (group == 1 && win.k[1] == 1 && win.k[2] == 1 && win.stride[1] == 1 && win.stride[2] == 1 &&
        !win.pad0[1] && !win.pad0[2] && !win.pad1[1] && !win.pad1[2] && !pool &&
        nn_cpu_pw_outputs(M) && C <= 256)
        return NN_CPU_K_PW;
    if (!res && group == C && M == C && w->shape.d[1] == 1 && win.k[1] * win.k[2] <= 64 &&
        (pool == 0 || pool == 2))
        return NN_CPU_K_DW;
    return NN_CPU_K_NONE;
}

/* 1 when a ring of C channels may be planar (cpu_planar_avx512.c): they do not fill
 * whole vectors and are more than 16 (BlazeFace's 24). Where they fill them, channels-
 * last measured as fast or faster (YuNet's 16-64 channels 3% slower in planar rings),
 * and so were the 8 of MediaPipe's full-range detector (half vectors, between
 * 32-channel values that would be converted). */
static int planar_channels(int64_t C) { return C > 16 && C % 16; }

/* 1 when node n, a linked stage of kind k, will have a planar kernel (what planar_kernel
 * checks on the built stage): a 1x1 layer, or a 3x3 depthwise one without a pool, at
 * stride 1 with one column of padding either side or at stride 2 with at most one on
 * the left, the output width a multiple of 16; or a first layer reading an NHWC image
 * (planar_head). A fork's pool is never linked, so never asked. */
static int planar_node(const cpu_ctx *c, const nn_node *n, int k)
{
    const nn_graph *g = c->g;
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, 1), *y = nn_out(g, n, 0);
    int64_t W = y->shape.d[3];
    nn_window win;
    if (nn_window_init(n, NN_WINDOW_CONV, 2, &x->shape.d[2], &w->shape.d[2], &win) != FFU_OK)
        return 0;
    if (k == NN_CPU_K_CF) /* a planar head (stage_kind), not one reading a plain input */
        return nn_cpu_layout(c, n->inputs[0]) && planar_head(y->shape.d[1], W, win.stride[2]);
    if (W % 16) return 0;
    if (k == NN_CPU_K_DW && win.stride[1] == 2 && win.stride[2] == 2) /* planar_kernel's */
        return x->shape.d[3] == 2 * W && !nn_attr_int(n, "_pool", 0) && win.k[1] == 3 &&
               win.k[2] == 3 && win.pad0[2] <= 1;
    if (x->shape.d[3] != W) return 0;
    if (k == NN_CPU_K_PW) return 1;
    return k == NN_CPU_K_DW && !nn_attr_int(n, "_pool", 0) && win.k[1] == 3 && win.k[2] == 3 &&
           win.stride[1] == 1 && win.stride[2] == 1 && win.pad0[2] == 1;
}

/* 1 when node i and the next stage can pass its value in planar rows: both have planar
 * kernels, and the value and the next stage's output have planar channels (a reader
 * whose output fills whole vectors does as well channels-last: MediaPipe's TF.js
 * full-range detector, 48 -> 24 -> 24 -> 48 channels at 48x48 in a pipeline with its
 * two 24-channel values planar, ran 3-5% slower than without). */
static int planar_link(const cpu_ctx *c, const unsigned char *kind, const int *next, int i)
{
    const nn_graph *g = c->g;
    int r = i >= 0 ? next[i] : -1;
    return r >= 0 && planar_channels(g->tensors[g->nodes[i].outputs[0]].shape.d[1]) &&
           planar_channels(g->tensors[g->nodes[r].outputs[0]].shape.d[1]) &&
           planar_node(c, &g->nodes[i], kind[i]) && planar_node(c, &g->nodes[r], kind[r]);
}

/* 1 when the value node i passes to the next stage is worth a pipeline: over 1 MiB (it
 * would leave L2), or one of at least two values in a row that can pass in planar
 * rows, whose kernels are faster (a lone one pays two conversions for one faster
 * layer: MediaPipe's short-range detector, first layer -> depthwise -> 1x1 at 64x64,
 * ran 1% slower in such a pipeline than without). */
static int worth_banding(const cpu_ctx *c, const unsigned char *kind, const int *next, int i)
{
    const nn_graph *g = c->g;
    if (nn_tensor_bytes(&g->tensors[g->nodes[i].outputs[0]]) >= CHAIN_MIN_TENSOR) return 1;
    if (!planar_link(c, kind, next, i)) return 0;
    int prev = -1;
    for (int k = 0; k < g->nnodes && prev < 0; k++)
        if (next[k] == i) prev = k;
    return planar_link(c, kind, next, next[i]) || planar_link(c, kind, next, prev);
}

/* 1 when following the links from node k reaches node s. */
static int follows(const int *next, int k, int s)
{
    for (int steps = 0; k >= 0 && steps <= NN_CPU_CHAIN_MAX; k = next[k], steps++)
        if (k == s) return 1;
    return 0;
}

/* has_prev[k] = 1 for every node some link leads to (the others head their chains). */
static void mark_linked(const int *next, int nn, unsigned char *has_prev)
{
    memset(has_prev, 0, (size_t)nn);
    for (int i = 0; i < nn; i++)
        if (next[i] >= 0) has_prev[next[i]] = 1;
}

/* Forks (BlazeFace's stride-2 blocks): a value t read only by a stride-2 depthwise stage
 * D and a 2x2 max pool A, whose output only the 1x1 stage K reading D's output adds. A
 * joins the pipeline beside D (fork[D] = A), so t counts as D's alone (data[t] = D). */
static void find_forks(const nn_graph *g, const unsigned char *kind, int *data, const int *added,
                       int *fork)
{
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *A = &g->nodes[i];
        if (kind[i] != NN_CPU_K_POOL) continue;
        int t = A->inputs[0], q = A->outputs[0], k = added[q], d = -1, readers = 0;
        if (k < 0 || kind[k] != NN_CPU_K_PW || data[q] != -1 || (g->tensors[q].flags & NN_T_OUTPUT))
            continue;
        for (int j = 0; j < g->nnodes; j++)
            for (int m = 0; m < g->nodes[j].ninputs; m++)
                if (g->nodes[j].inputs[m] == t) {
                    readers++;
                    if (j != i && m == 0) d = j;
                }
        if (readers != 2 || d < 0 || kind[d] != NN_CPU_K_DW ||
            g->nodes[k].inputs[0] != g->nodes[d].outputs[0])
            continue;
        const nn_shape *ds = &nn_out(g, &g->nodes[d], 0)->shape, *qs = &g->tensors[q].shape;
        if (ds->d[2] != qs->d[2] || ds->d[3] != qs->d[3]) continue;
        data[t] = d;
        fork[d] = i;
    }
}

/* Drops the fork at D (and the link into D, so that t is stored for A to read). */
static void drop_fork(const nn_graph *g, int *next, int *fork, int d)
{
    int p = g->tensors[g->nodes[d].inputs[0]].producer;
    if (p >= 0 && next[p] == d) next[p] = -1;
    fork[d] = -1;
}

ffu_status nn_cpu_chain_plan(cpu_backend *cb, const nn_graph *g, int me)
{
    int nn = g->nnodes, nt = g->ntensors;
    free(cb->chain_last);
    cb->chain_last = cb->chain_next = cb->chain_first = NULL;
    if (!cb->bands || cb->base.bf16 || !(ffu_cpu_features() & FFU_CPU_AVX512F) ||
        nn < CHAIN_MIN_NODES)
        return FFU_OK;
    int *a = malloc(sizeof(int) * 3 * (size_t)nn), *data = malloc(sizeof(int) * 2 * (size_t)nt);
    int *fork = malloc(sizeof(int) * (size_t)nn);
    unsigned char *kind = malloc((size_t)nn), *has_prev = malloc((size_t)nn);
    if (!a || !data || !fork || !kind || !has_prev) {
        free(a), free(data), free(fork), free(kind), free(has_prev);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    int *last = a, *next = a + nn, *first = a + 2 * nn, *added = data + nt;
    const cpu_ctx ctx = {.cb = cb, .g = g}; /* the layouts just planned (layout_plan) */
    /* data[t]: the one node that reads t as its data input (-1 none, -2 several, or t is
     * also read otherwise); added[t]: the one Conv that adds t as its fused residual (-1
     * none, -2 several) */
    for (int t = 0; t < nt; t++) data[t] = added[t] = -1;
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].ninputs; j++) {
            int t = g->nodes[i].inputs[j];
            if (t < 0) continue;
            if (j == 3 && g->nodes[i].op == NN_OP_CONV)
                added[t] = added[t] == -1 ? i : -2;
            else
                data[t] = data[t] == -1 && j == 0 ? i : -2;
        }
    for (int i = 0; i < nn; i++) {
        last[i] = first[i] = fork[i] = -1;
        kind[i] = (unsigned char)stage_kind(&ctx, &g->nodes[i], me);
    }
    /* forks (find_forks), on one thread only: a pipeline cut into strips computes the
     * rows above each strip's start twice, through every member, and a fork joins two
     * pipelines into one (BlazeFace at two threads 2.24 -> 2.49 ms with them) */
    if (nn_cpu_run_threads(cb) == 1) find_forks(g, kind, data, added, fork);
    /* links: a stage's output read by one later stage only (the session runs that one
     * after it; nodes between them do not see the value), and at most added as the
     * residual of one 1x1 stage; a pool only ever joins beside a fork's D */
    for (int i = 0; i < nn; i++) {
        int t = kind[i] ? g->nodes[i].outputs[0] : -1, r = t >= 0 ? data[t] : -1;
        int ok = r > i && kind[r] && kind[r] != NN_CPU_K_CF && /* a first layer heads */
                 kind[i] != NN_CPU_K_POOL && kind[r] != NN_CPU_K_POOL &&
                 !(g->tensors[t].flags & NN_T_OUTPUT) &&
                 (added[t] == -1 || (added[t] >= 0 && kind[added[t]] == NN_CPU_K_PW));
        next[i] = ok ? r : -1;
    }
    /* Drop links until the rules hold (dropping a link can break any of them elsewhere):
     * a fork holds while D reads t from its producer's ring and K reads D's output; a
     * value between members lives only in its pipeline's rings, so the stage adding it
     * must come later in the same pipeline; a pipeline ends at the reader of its last
     * large value, since members on small tensors, which stay in L2 anyway, only pay
     * the row-by-row overhead (MediaPipe's full-range detector: a pipeline of 20
     * reaching into its 48x48 layers ran 3% slower than none); and one too long with
     * its pools loses a fork (else it would not be a pipeline at all). */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int d = 0; d < nn; d++) {
            if (fork[d] < 0) continue;
            int p = g->tensors[g->nodes[d].inputs[0]].producer;
            if (p >= 0 && next[p] == d && next[d] == added[g->nodes[fork[d]].outputs[0]]) continue;
            drop_fork(g, next, fork, d);
            changed = 1;
        }
        for (int i = 0; i < nn; i++) {
            int t = g->nodes[i].outputs[0];
            if (next[i] >= 0 && added[t] >= 0 && !follows(next, next[i], added[t])) {
                next[i] = -1;
                changed = 1;
            }
        }
        mark_linked(next, nn, has_prev);
        for (int i = 0; i < nn; i++) {
            if (!kind[i] || has_prev[i]) continue;
            int end = -1, len = 1, d = -1;
            for (int k = i, steps = 0; next[k] >= 0 && steps <= NN_CPU_CHAIN_MAX;
                 k = next[k], steps++) {
                if (worth_banding(&ctx, kind, next, k)) end = next[k];
                len += 1 + (fork[k] >= 0);
                if (fork[k] >= 0 && d < 0) d = k;
            }
            if (end >= 0 && next[end] >= 0) {
                next[end] = -1;
                changed = 1;
            } else if (len > NN_CPU_CHAIN_MAX && d >= 0) { /* too long with its pools */
                drop_fork(g, next, fork, d);
                changed = 1;
            }
        }
    }
    mark_linked(next, nn, has_prev);
    for (int i = 0; i < nn; i++) {
        if (!kind[i] || has_prev[i]) continue;
        int len = 1, j = i, worth = 0;
        for (; next[j] >= 0; j = next[j], len++) {
            worth |= worth_banding(&ctx, kind, next, j);
            len += fork[j] >= 0;
        }
        if (len < CHAIN_MIN_NODES || len > NN_CPU_CHAIN_MAX || !worth) continue;
        for (int k = i; k >= 0; k = next[k]) {
            last[k] = j, first[k] = i;
            if (fork[k] >= 0) last[fork[k]] = j, first[fork[k]] = i;
        }
    }
    /* the members in run order for nn_cpu_chain_finish: a fork's A right after D */
    for (int d = 0; d < nn; d++)
        if (fork[d] >= 0 && last[d] >= 0) {
            next[fork[d]] = next[d];
            next[d] = fork[d];
        }
    free(data), free(fork), free(kind), free(has_prev);
    cb->chain_last = last, cb->chain_next = next, cb->chain_first = first;
    return FFU_OK;
}

int nn_cpu_chain_member(const cpu_ctx *c)
{
    const cpu_backend *cb = c->cb;
    return cb->chain_last && cb->lay_g == c->g && cb->chain_last[c->n - c->g->nodes] >= 0;
}

/* Output rows [a, b) of stage s read its input rows [*lo, *hi). */
static void in_rows(const chain_stage *s, int64_t a, int64_t b, int64_t *lo, int64_t *hi)
{
    *lo = a * s->scale - s->pt;
    *hi = (b - 1) * s->scale - s->pt + s->ext;
    if (*lo < 0) *lo = 0;
    if (*hi > s->IH) *hi = s->IH;
}

/* 1 when stage s has a planar kernel (cpu_planar_avx512.c): a 1x1 layer, a 3x3
 * depthwise one without a pool, stride 1 keeping the width or stride 2 halving it with
 * at most a column of padding on the left, or the 2x2 max pool, the output width a
 * multiple of 16; or a planar head. */
static int planar_kernel(const chain_stage *s)
{
    if (s->kind == NN_CPU_K_CF) {
        const nn_cpu_cf *d = s->k;
        return d->nhwc && d->C == 3 && !d->pool && planar_head(d->K, d->OW, d->SW);
    }
    if (s->OW % 16) return 0;
    if (s->kind == NN_CPU_K_POOL) return s->IW == 2 * s->OW;
    if (s->kind == NN_CPU_K_DW && ((const nn_cpu_dw *)s->k)->SW == 2) {
        const nn_cpu_dw *d = s->k; /* nn_cpu_dw2_planar_avx512 */
        return s->IW == 2 * s->OW && d->KH == 3 && d->KW == 3 && d->SH == 2 && d->PL <= 1 &&
               !d->pool;
    }
    if (s->OW != s->IW) return 0;
    if (s->kind == NN_CPU_K_PW) return 1;
    if (s->kind != NN_CPU_K_DW) return 0;
    const nn_cpu_dw *d = s->k;
    return d->KH == 3 && d->KW == 3 && d->SH == 1 && d->SW == 1 && d->PL == 1 && !d->pool;
}

/* Floats a thread's area needs with the rings sized as now (and places them). */
static size_t place_rings(struct nn_cpu_chain *ch)
{
    size_t at = 0, tmp = 0, conv = 0;
    for (int s = 0; s < ch->n; s++) {
        chain_stage *st = &ch->st[s];
        st->rowf = st->planar ? st->OC * (st->OW + 2 * NN_CPU_PLANAR_MARGIN) : st->OW * st->OC;
        st->ring = at;
        at += ((size_t)(st->cap * st->rowf) + 15) / 16 * 16;
        /* with planar rings: a row converted on its way in or out, and a residual */
        size_t f = (size_t)(st->OC * (st->OW + 2 * NN_CPU_PLANAR_MARGIN));
        if (f > conv) conv = f;
        if (st->kind == NN_CPU_K_DW && ((const nn_cpu_dw *)st->k)->pool) {
            const nn_cpu_dw *d = st->k;
            size_t t = (size_t)(2 * d->OW * d->C);
            if (t > tmp) tmp = t;
        }
    }
    ch->tmp = at;
    at += (tmp + 15) / 16 * 16;
    /* a planar head's prepared input rows: KH slots and the padded row they come from */
    const chain_stage *s0 = &ch->st[0];
    ch->prep = at;
    if (s0->kind == NN_CPU_K_CF && s0->planar) {
        const nn_cpu_cf *d = s0->k;
        at += (size_t)(d->KH * NN_CPU_CF_PLANAR_SLOT(d) + NN_CPU_CF_PLANAR_PAD + 15) / 16 * 16;
    }
    int planar = 0;
    for (int s = 0; s < ch->n; s++) planar |= ch->st[s].planar;
    ch->conv = at, ch->convf = planar ? (conv + 15) / 16 * 16 : 0;
    at += 2 * ch->convf;
    /* a byte per input row and per row of each stage (same_as_above) */
    size_t rows = (size_t)s0->IH;
    for (int s = 0; s < ch->n; s++)
        rows += (size_t)ch->st[s].OH;
    ch->same = at;
    return at + (rows + 63) / 64 * 16;
}

ffu_status nn_cpu_chain_finish(cpu_ctx *c, nn_graph *g)
{
    cpu_backend *cb = c->cb;
    int me = (int)(c->n - g->nodes);
    if (!cb->chain_last || cb->chain_last[me] != me) return FFU_OK;
    int first = cb->chain_first[me], n = 0;
    for (int k = first; k >= 0; k = cb->chain_next[k]) n++;
    struct nn_cpu_chain *ch = calloc(1, sizeof *ch + sizeof(chain_stage) * (size_t)n);
    if (!ch) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ch->n = n;
    ch->nthr = nn_cpu_run_threads(cb);
    for (int k = 0, i = first; k < n; k++, i = cb->chain_next[i]) {
        const nn_node *m = &g->nodes[i];
        cpu_node *p = m->priv;
        chain_stage *s = &ch->st[k];
        /* the member must run one of our kernels straight from and into its tensors */
        if (!p || !p->kdata || p->kkind == NN_CPU_K_NONE) {
            free(ch);
            return FFU_OK;
        }
        const nn_tensor *x = nn_in(g, m, 0), *y = nn_out(g, m, 0);
        s->kind = p->kkind, s->k = p->kdata, s->n = m, s->p = p;
        s->IC = x->shape.d[1], s->IH = x->shape.d[2], s->IW = x->shape.d[3];
        s->OC = y->shape.d[1], s->OH = y->shape.d[2], s->OW = y->shape.d[3];
        ch->N = x->shape.d[0];
        s->src = -1;
        for (int j = 0; j < k; j++)
            if (ch->st[j].n->outputs[0] == m->inputs[0]) s->src = j;
        if (k > 0 && s->src < 0) { /* not a pipeline's shape */
            free(ch);
            return FFU_OK;
        }
        if (s->kind == NN_CPU_K_PW) {
            s->scale = 1, s->pt = 0, s->ext = 1;
        } else if (s->kind == NN_CPU_K_POOL) {
            s->scale = 2, s->pt = 0, s->ext = 2;
        } else if (s->kind == NN_CPU_K_CF) {
            const nn_cpu_cf *d = s->k;
            s->scale = d->SH, s->pt = d->PT, s->ext = d->KH;
        } else {
            const nn_cpu_dw *d = s->k;
            s->scale = d->pool ? 2 * d->SH : d->SH, s->pt = d->PT;
            s->ext = d->pool ? d->SH + d->KH : d->KH;
            if (s->ext > NN_CPU_DW_MAX_KH + 2) {
                free(ch);
                return FFU_OK;
            }
        }
    }
    /* a ring holds the rows one output row of the next stage reads; of a fork's two
     * readers (at one stride, pulled for the same row) the rows either reads */
    for (int k = 0; k + 1 < n; k++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN, scale = 0;
        for (int q = k + 1; q < n; q++) {
            const chain_stage *r = &ch->st[q];
            if (r->src != k) continue;
            if (scale && r->scale != scale) {
                free(ch);
                return FFU_OK;
            }
            scale = r->scale;
            if (-r->pt < lo) lo = -r->pt;
            if (r->ext - r->pt > hi) hi = r->ext - r->pt;
        }
        ch->st[k].cap = scale ? hi - lo : 0;
    }
    /* and, for a residual added later, every row computed since the row the adding
     * stage reads: when stage s computes row r, stage j (stride 1 up to s) has computed
     * rows up to r + lead, lead the sum of ext - 1 - pt of the stages between */
    for (int k = 0; k < n; k++) {
        chain_stage *s = &ch->st[k];
        const nn_node *m = s->n;
        s->res = RES_NONE;
        if (m->ninputs <= 3 || m->inputs[3] < 0) continue;
        s->res = RES_BUFFER;
        for (int j = 0; j < k; j++)
            if (ch->st[j].n->outputs[0] == m->inputs[3]) s->res = j;
        if (s->res == RES_BUFFER) {
            nn_tensor *r = &g->tensors[m->inputs[3]];
            if (r->keep_to < me) r->keep_to = me; /* read when the pipeline runs */
            continue;
        }
        int64_t lead = 0, ok = 1;
        for (int q = s->res + 1; q < k; q++) {
            ok &= ch->st[q].scale == 1;
            lead += ch->st[q].ext - 1 - ch->st[q].pt;
        }
        if (!ok || lead < 0) { /* not a residual block's shape: members run one by one */
            free(ch);
            return FFU_OK;
        }
        if (ch->st[s->res].cap < lead + 1) ch->st[s->res].cap = lead + 1;
    }
    /* a ring is planar when its channels and its readers' outputs suit (planar_channels),
     * its writer and every reader (the stages reading it, stages adding it) have planar
     * kernels, and so does the ring before or after it (as planar_link and
     * worth_banding); rows are converted where planar meets channels-last */
    unsigned char ok[NN_CPU_CHAIN_MAX] = {0};
    for (int k = 0; k + 1 < n; k++) {
        ok[k] = planar_channels(ch->st[k].OC) && planar_kernel(&ch->st[k]);
        for (int q = k + 1; q < n; q++) {
            const chain_stage *r = &ch->st[q];
            if (r->src == k) ok[k] &= planar_channels(r->OC) && planar_kernel(r);
            if (r->res == k) ok[k] &= planar_kernel(r);
        }
    }
    for (int k = 0; k + 1 < n; k++)
        ch->st[k].planar = ok[k] && ((k > 0 && ok[k - 1]) || ok[k + 1]);
    ffu_status st = nn_cpu_split_init(&ch->split, n, ch->nthr);
    if (st < 0) {
        free(ch);
        return st;
    }
    for (int k = 0; k < n; k++)
        ch->split.node[k] = ch->st[k].n;
    size_t area = place_rings(ch);
    ch->area = area;
    cpu_node *lp = c->p;
    size_t need = area * sizeof(float) * (size_t)ch->nthr + 64;
    if (need > lp->scratch_bytes) lp->scratch_bytes = need;
    /* the input lives until the pipeline has run; the values between members are
     * only ever rows in the rings */
    nn_tensor *x0 = &g->tensors[g->nodes[first].inputs[0]];
    if (x0->keep_to < me) x0->keep_to = me;
    for (int k = 0; k + 1 < n; k++) g->tensors[ch->st[k].n->outputs[0]].unbacked = 1;
    for (int k = 0; k < n; k++) {
        cpu_node *p = ch->st[k].p;
        char impl[sizeof p->impl + 40];
        int planar = ch->st[k].planar || (k > 0 && ch->st[k - 1].planar);
        snprintf(impl, sizeof impl, "band %d/%d%s %s", k + 1, n, planar ? " planar" : "", p->impl);
        memcpy(p->impl, impl, sizeof p->impl - 1); /* cut to fit */
        p->impl[sizeof p->impl - 1] = 0;
        p->chain = ch;
        p->chain_pos = k;
    }
    return FFU_OK;
}

void nn_cpu_chain_release(cpu_node *p)
{
    if (!p || !p->chain || p->chain_pos != p->chain->n - 1) return;
    nn_cpu_split_free(&p->chain->split);
    free(p->chain);
}

nn_cpu_split *nn_cpu_chain_split(struct nn_cpu_chain *ch) { return &ch->split; }

/* ---- running ------------------------------------------------------------------------------- */

typedef struct chain_job {
    const struct nn_cpu_chain *ch;
    const float *x;
    float *y;
    float *area;
    int prof; /* time each member's rows (ch->split) */
} chain_job;

/* Row r of stage s's output in thread area a (image offset applied by the caller for
 * the last stage through y). */
static float *out_row(const struct nn_cpu_chain *ch, int s, float *a, float *y, int64_t r)
{
    const chain_stage *st = &ch->st[s];
    if (s == ch->n - 1) return y + r * st->OW * st->OC;
    return a + st->ring + (size_t)(r % st->cap) * (size_t)st->rowf;
}

static const float *in_row(const struct nn_cpu_chain *ch, int s, float *a, const float *x,
                           float *y, int64_t r)
{
    const chain_stage *st = &ch->st[s];
    if (st->src < 0) return x + r * st->IW * st->IC;
    return out_row(ch, st->src, a, y, r);
}

/* One thread's pipeline on one image: done[s] is the next row stage s computes; res[s]
 * the image's residual of a stage that reads it from its buffer. */
typedef struct chain_pull {
    const struct nn_cpu_chain *ch;
    float *a, *y;
    const float *x;
    const float *res[NN_CPU_CHAIN_MAX];
    int64_t done[NN_CPU_CHAIN_MAX];
    int64_t start[NN_CPU_CHAIN_MAX]; /* the strip's first row of each stage */
    /* same[0][i]: input row i equals row i - 1; same[s + 1][r]: stage s's row r does
     * (computed rows only: from start[s] on) */
    unsigned char *same[NN_CPU_CHAIN_MAX + 1];
    int64_t reused;  /* rows copied from the row above instead of computed */
    int64_t prepped; /* a planar head: input rows below this are in their slots */
    double *sec;     /* profiling: this thread's seconds per stage, else NULL */
} chain_pull;

/* Rows reused by every pipeline of this process (nn_cpu_rows_reused). */
static _Atomic uint64_t rows_reused;

uint64_t nn_cpu_rows_reused(void) { return rows_reused; }

/* Row r of a planar head (stage 0) into dst: the input rows it reads that are not in
 * their slots yet are split into phases first (row ih in slot ih mod KH; the rows come
 * in order, so the KH rows one output row reads are always there). */
static void head_row(chain_pull *c, int64_t r, float *dst)
{
    const chain_stage *st = &c->ch->st[0];
    const nn_cpu_cf *d = st->k;
    float *slots = c->a + c->ch->prep, *pad = slots + d->KH * NN_CPU_CF_PLANAR_SLOT(d);
    const float *rows[7];
    int64_t lo = r * d->SH - d->PT, hi = lo + d->KH;
    if (c->prepped < lo) c->prepped = lo;
    for (; c->prepped < hi; c->prepped++) {
        int64_t ih = c->prepped;
        if (ih >= 0 && ih < d->IH)
            nn_cpu_cf_planar_prep_avx512(d, c->x + ih * d->IW * 3,
                                         slots + ih % d->KH * NN_CPU_CF_PLANAR_SLOT(d), pad);
    }
    for (int64_t k = 0; k < d->KH; k++) {
        int64_t ih = lo + k;
        rows[k] = ih >= 0 && ih < d->IH ? slots + ih % d->KH * NN_CPU_CF_PLANAR_SLOT(d) : NULL;
    }
    nn_cpu_cf_planar_row_avx512(d, rows, dst);
}

/* Row r of stage s. A stage whose input and output rows differ in layout (planar or
 * channels-last) computes in its input's layout into a conversion row and converts it;
 * a residual stored in the other layout is converted into the second one. */
static void stage_row(chain_pull *c, int s, int64_t r)
{
    const struct nn_cpu_chain *ch = c->ch;
    const chain_stage *st = &ch->st[s];
    float *a = c->a, *y = c->y, *dst = out_row(ch, s, a, y, r);
    const float *x = c->x;
    if (st->kind == NN_CPU_K_CF && st->planar) {
        head_row(c, r, dst);
        return;
    }
    const int pin = st->src >= 0 && ch->st[st->src].planar, convert = pin != st->planar;
    float *kd = convert ? a + ch->conv : dst;
    if (st->kind == NN_CPU_K_CF) { /* the first stage: x is the image */
        nn_cpu_cf_row_avx512(st->k, x, kd, r);
    } else if (st->kind == NN_CPU_K_PW) {
        const float *res = st->res == RES_NONE     ? NULL
                           : st->res == RES_BUFFER ? c->res[s] + r * st->OW * st->OC
                                                   : out_row(ch, st->res, a, y, r);
        int res_planar = st->res >= 0 && ch->st[st->res].planar;
        if (res && res_planar != pin) {
            float *t = a + ch->conv + ch->convf;
            if (pin) nn_cpu_planar_from_nhwc_avx512(res, st->OC, st->OW, t);
            else nn_cpu_planar_to_nhwc_avx512(res, st->OC, st->OW, t);
            res = t;
        }
        if (pin) nn_cpu_pw_planar_avx512(st->k, in_row(ch, s, a, x, y, r), res, kd, st->OW);
        else nn_cpu_pw_pixels_avx512(st->k, in_row(ch, s, a, x, y, r), res, kd, 0, st->OW);
    } else if (st->kind == NN_CPU_K_POOL) {
        const float *r0 = in_row(ch, s, a, x, y, 2 * r), *r1 = in_row(ch, s, a, x, y, 2 * r + 1);
        if (pin)
            nn_cpu_pool2_planar_avx512(r0, r1, st->OC, st->OW, kd);
        else
            nn_cpu_pool2_row_avx512(r0, r1, kd, st->OW, st->OC);
    } else {
        const float *rows[NN_CPU_DW_MAX_KH + 2];
        for (int64_t k = 0; k < st->ext; k++) {
            int64_t ih = r * st->scale - st->pt + k;
            rows[k] = ih >= 0 && ih < st->IH ? in_row(ch, s, a, x, y, ih) : NULL;
        }
        const nn_cpu_dw *d = st->k;
        if (pin && d->SW == 2)
            nn_cpu_dw2_planar_avx512(d, rows, kd);
        else if (pin)
            nn_cpu_dw_planar_avx512(d, rows, kd);
        else
            nn_cpu_dw_ring_row_avx512(d, rows, kd, a + ch->tmp);
    }
    if (convert) {
        if (st->planar) nn_cpu_planar_from_nhwc_avx512(kd, st->OC, st->OW, dst);
        else nn_cpu_planar_to_nhwc_avx512(kd, st->OC, st->OW, dst);
    }
}

/* 1 when row r of stage s must equal row r - 1, which this strip computed: the input
 * rows the two read are all one row, none of them padding, and so are the residual's.
 * A letterboxed image's bands of one colour make such rows (docs/NN_CPU.md "Rows of one
 * colour"); in a photo's rows memcmp stops at once. */
static int same_as_above(const chain_pull *c, int s, int64_t r)
{
    const chain_stage *st = &c->ch->st[s];
    if (r <= c->start[s]) return 0;
    int64_t lo = (r - 1) * st->scale - st->pt, hi = r * st->scale - st->pt + st->ext;
    if (lo < 0 || hi > st->IH) return 0;
    for (int64_t i = lo + 1; i < hi; i++)
        if (!c->same[st->src + 1][i]) return 0;
    if (st->res == RES_NONE) return 1;
    if (st->res >= 0) return r > c->start[st->res] && c->same[st->res + 1][r];
    const float *b = c->res[s] + r * st->OW * st->OC;
    return memcmp(b, b - st->OW * st->OC, sizeof(float) * (size_t)(st->OW * st->OC)) == 0;
}

/* 1 when row i of the image x that stage 0 reads equals row i - 1: as stored, planes
 * (a first layer reading an NCHW image) or channels-last. */
static int input_same_as_above(const chain_stage *s0, const float *x, int64_t i)
{
    if (i == 0) return 0;
    int planes = s0->kind == NN_CPU_K_CF && !((const nn_cpu_cf *)s0->k)->nhwc;
    int64_t n = planes ? s0->IW : s0->IW * s0->IC, step = planes ? s0->IH * s0->IW : 0;
    for (int64_t c = 0; c < (planes ? s0->IC : 1); c++) {
        const float *row = x + c * step + i * n;
        if (memcmp(row, row - n, sizeof(float) * (size_t)n)) return 0;
    }
    return 1;
}

/* Row r of stage s as a copy of row r - 1 (a ring of one row holds it already). */
static void copy_above(chain_pull *c, int s, int64_t r)
{
    const struct nn_cpu_chain *ch = c->ch;
    const chain_stage *st = &ch->st[s];
    int last = s == ch->n - 1;
    if (!last && st->cap < 2) return;
    size_t floats = last ? (size_t)(st->OW * st->OC) : (size_t)st->rowf;
    memcpy(out_row(ch, s, c->a, c->y, r), out_row(ch, s, c->a, c->y, r - 1),
           sizeof(float) * floats);
}

/* Row r of stage s, computed or (same_as_above) copied. */
static void make_row(chain_pull *c, int s, int64_t r)
{
    int same = same_as_above(c, s, r);
    c->same[s + 1][r] = (unsigned char)same;
    if (!same) {
        stage_row(c, s, r);
        return;
    }
    copy_above(c, s, r);
    c->reused++;
}

/* Computes stage s up to row r (exclusive), one row at a time, each after the rows of
 * the stage before that it reads: no ring ever holds more than one row's window. */
static void pull(chain_pull *c, int s, int64_t r)
{
    const chain_stage *st = &c->ch->st[s];
    for (; c->done[s] < r; c->done[s]++) {
        int64_t q = c->done[s], lo, hi;
        if (st->src >= 0) {
            in_rows(st, q, q + 1, &lo, &hi);
            pull(c, st->src, hi);
        }
        /* a residual from a ring: already there when the adder's input path passes
         * through its writer; a fork's pool is computed here */
        if (st->res >= 0) pull(c, st->res, q + 1);
        if (!c->sec) {
            make_row(c, s, q);
            continue;
        }
        int64_t t0 = ffu_clock_ns();
        make_row(c, s, q);
        c->sec[s] += 1e-9 * (double)(ffu_clock_ns() - t0);
    }
}

/* Thread t of nthr runs strips t, t + nthr, ... of the ch->nthr that the scratch was
 * sized for (fewer threads than planned still cover every row). */
static void chain_strips(const chain_job *j, int t, int nthr)
{
    const struct nn_cpu_chain *ch = j->ch;
    int L = ch->n - 1;
    if (t >= ch->nthr) return;
    const chain_stage *s0 = &ch->st[0], *sl = &ch->st[L];
    chain_pull c = {.ch = ch,
                    .a = j->area + (size_t)t * ch->area,
                    .sec = j->prof ? ch->split.sec + (size_t)t * (size_t)ch->n : NULL};
    for (int s = 0; s < L; s++) { /* the scratch is shared: margins are zeroed each run */
        const chain_stage *st = &ch->st[s];
        for (int64_t k = 0; st->planar && k < st->cap; k++)
            nn_cpu_planar_margins(c.a + st->ring + k * st->rowf, st->OC, st->OW);
    }
    c.same[0] = (unsigned char *)(c.a + ch->same);
    for (int s = 0; s <= L; s++)
        c.same[s + 1] = c.same[s] + (s ? ch->st[s - 1].OH : s0->IH);
    for (int64_t img = 0; img < ch->N; img++) {
        c.x = j->x + img * s0->IC * s0->IH * s0->IW;
        c.y = j->y + img * sl->OC * sl->OH * sl->OW;
        for (int64_t i = 0; i < s0->IH; i++)
            c.same[0][i] = input_same_as_above(s0, c.x, i);
        for (int s = 0; s <= L; s++) {
            const chain_stage *st = &ch->st[s];
            c.res[s] = st->res == RES_BUFFER
                           ? (const float *)st->in[3] + img * st->OC * st->OH * st->OW
                           : NULL;
        }
        for (int strip = t; strip < ch->nthr; strip += nthr) {
            int64_t y0 = sl->OH * strip / ch->nthr, ye = sl->OH * (strip + 1) / ch->nthr;
            if (y0 >= ye) continue;
            /* each stage starts at the first row any of its readers reads (for its own
             * first row, back from the strip's first output row) */
            for (int s = 0; s < L; s++)
                c.start[s] = INT64_MAX;
            c.start[L] = y0;
            c.prepped = INT64_MIN;
            for (int s = L; s >= 0; s--) {
                const chain_stage *st = &ch->st[s];
                int64_t lo, hi;
                if (c.start[s] == INT64_MAX) continue; /* read by no stage: never pulled */
                in_rows(st, c.start[s], c.start[s] + 1, &lo, &hi);
                if (st->src >= 0 && lo < c.start[st->src]) c.start[st->src] = lo;
                if (st->res >= 0 && c.start[s] < c.start[st->res]) c.start[st->res] = c.start[s];
                c.done[s] = c.start[s];
            }
            pull(&c, L, ye);
        }
    }
    if (c.reused) atomic_fetch_add_explicit(&rows_reused, (uint64_t)c.reused, memory_order_relaxed);
}

/* A thread of the pipeline's team. */
static void chain_thread(void *arg)
{
    chain_strips(arg, omp_get_thread_num(), omp_get_num_threads());
}

/* 1 when [a, a + na) and [b, b + nb) share a byte. */
static int overlap(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + nb && y < x + na;
}

ffu_status nn_cpu_chain_run(cpu_node *p, void *const *in, void *const *out, void *scratch, int prof)
{
    struct nn_cpu_chain *ch = p->chain;
    chain_stage *me = &ch->st[p->chain_pos];
    me->in = in, me->out = out;
    if (p->chain_pos < ch->n - 1) return FFU_OK; /* the last member runs them all */
    const chain_stage *s0 = &ch->st[0], *sl = &ch->st[ch->n - 1];
    const float *x = s0->in[0];
    float *y = sl->out[0];
    size_t xb = sizeof(float) * (size_t)(ch->N * s0->IC * s0->IH * s0->IW);
    size_t yb = sizeof(float) * (size_t)(ch->N * sl->OC * sl->OH * sl->OW);
    /* the planner keeps the input, and residuals read from their buffers, alive through
     * the last member and writes nothing over them (keep_to) */
    int over = overlap(x, xb, y, yb);
    for (int s = 0; s < ch->n; s++) {
        const chain_stage *st = &ch->st[s];
        size_t rb = sizeof(float) * (size_t)(ch->N * st->OC * st->OH * st->OW);
        if (st->res == RES_BUFFER) over |= overlap(st->in[3], rb, y, yb);
    }
    if (over)
        return nn_node_error(sl->n, FFU_ERR_INTERNAL, "a band pipeline's output was planned "
                             "over its input");
    float *area = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    chain_job j = {ch, x, y, area, prof};
    if (ch->nthr <= 1) {
        /* no team: all of it on this thread, which may be thread 1 of someone else's
         * (ensemble members side by side, ffu_nn_run_side_by_side) */
        chain_strips(&j, 0, 1);
        return FFU_OK;
    }
    GOMP_parallel(chain_thread, &j, (unsigned)ch->nthr, 0);
    return FFU_OK;
}

#else /* !FFU_HAVE_DNNL */

uint64_t nn_cpu_rows_reused(void) { return 0; }

#endif
