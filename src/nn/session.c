/* Sessions: a model planned for concrete input shapes on a backend, then run many
 * times (a session asked for some of the outputs plans a copy of the model without the
 * others). Planning (once per set of input shapes) clones the model graph, fixes the
 * input shapes (a dynamic first dimension becomes the batch), infers every shape in
 * order, folds nodes whose inputs are all constant by running their reference kernel
 * (Shape -> Gather -> Concat -> Reshape chains vanish here), drops what became dead,
 * gives each node to the first backend that supports it (cpu or cuda, then ref), puts
 * copies where values cross memory spaces (a cuda node's output read by a ref node),
 * lets the backends prepare, uploads constants into the device spaces that read them,
 * and plans one activation arena per memory space (plan.c, backend.h). Running is a
 * loop over precomputed pointers: it allocates nothing. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

#include "backend.h"
#include "fuse.h"

#define MAX_BACKENDS 3

/* Why a planned node is not run (skip[]): a view aliases its input; an empty node
 * writes outputs that hold no values. */
enum { SKIP_VIEW = 1, SKIP_EMPTY = 2 };

struct ffu_nn_session {
    const ffu_nn_model *given; /* the caller's model: its output indices are the API's */
    const ffu_nn_model *m;     /* the model planned: `given`, or `pruned` */
    ffu_nn_model *pruned;      /* opts.outputs: `given` without the other outputs */
    int *out_at;               /* opts.outputs: per output of `given`, its index among m's
                                  outputs, or -1 where it is not computed */
    char backend[16];        /* what was asked for */
    int threads, batch, bf16, winograd, bands, fp16, graphs, device, free_dims;
    nn_backend *be[MAX_BACKENDS];
    int nbe;
    /* memory spaces (backend.h): the backend owning each device space, the space of the
     * graph inputs and outputs, and the backend whose host_alloc gives the host arena */
    nn_backend *space_be[NN_SPACE_MAX];
    int io_space;
    nn_backend *host_be;
    const char *note;        /* why the session runs on less than it was asked */
    nn_shape *shapes;        /* requested shape of each model input */
    int dirty;               /* the plan is out of date */
    /* the plan */
    nn_graph *g;
    ffu_arena *fold;         /* data of constants folded at plan time */
    int nfolded;
    nn_plan_stats stats;
    size_t scratch_bytes;    /* all spaces together */
    size_t scratch_sp[NN_SPACE_MAX];
    unsigned char *arena[NN_SPACE_MAX]; /* per memory space */
    /* the host arena and scratch from a workspace (nn.h): ws_gen is the block they
     * point into; when the workspace has grown since, they are taken again */
    ffu_nn_workspace *ws;
    int ws_bound;
    uint64_t ws_gen;
    void *scratch[NN_SPACE_MAX];
    unsigned char *cdata[NN_SPACE_MAX]; /* constants uploaded into a device space */
    size_t *coff;            /* per tensor: offset of its upload in cdata (see plan_nodes) */
    size_t cbytes;           /* their bytes, all spaces */
    int ncopies;             /* copy nodes between spaces in the plan */
    nn_backend *exec_be;     /* the one backend that runs every node (graphs), or NULL */
    uint64_t plan_id;        /* changes with every plan (backend.h execute) */
    uint64_t flops_plan;     /* the plan_id run_flops was counted for (0: none) */
    int64_t run_flops;       /* one run's FLOPs (ffu_nn_flops_done) */
    unsigned inflight;       /* backends (bit per index) with queued work not synced */
    void **io;               /* per node: input pointers, then output pointers */
    int *io_off;             /* node i's pointers start at io + io_off[i] */
    unsigned char *skip;     /* nodes not run: SKIP_VIEW, SKIP_EMPTY */
    /* Sizes known at run time (ir.h NN_T_BOUNDED): the nodes that read or write a
     * bounded tensor (run on ref, their shapes inferred again before each run), and
     * each bounded tensor's planned bytes, which its actual size may not exceed */
    unsigned char *tail;
    size_t *cap_bytes;
    int ntail;
    int64_t runs;
    /* ffu_nn_session_profile: per node, seconds summed over prof_runs runs */
    int profile;
    double *node_sec;
    int64_t prof_runs;
    /* Bound inputs: when shapes depend on an input's value (a Reshape shape or Resize
     * sizes fed as a graph input), small inputs are bound: the caller fills staging
     * buffers, and a run re-plans whenever a bound input's value changed, with the
     * values as constants. Unbound inputs are then copied into the arena per run. */
    int bound_mode;
    void **staging;          /* per input, caller-visible buffer in bound mode */
    void **bound;            /* per input, value the plan was made with (NULL: unbound) */
    int values_planned;      /* the plan matches the values in bound[] */
    /* Batch (batch.c): the plan computes batch_n items at once, or -- looped -- is the
     * batch-1 plan run batch_n times: inputs are filled in loop_in (item inputs hold
     * batch_n slices), outputs are stacked in loop_out. All allocated when planning. */
    int batch_n, looped;
    unsigned char *item;     /* per input: sliced per item (1) or shared (0) */
    void **loop_in, **loop_out;
    size_t loop_bytes;
    char batch_why[200];
};

/* ---- specialisation: shapes, folding ------------------------------------------------ */

ffu_status nn_graph_specialize_shapes(const nn_graph *src, const nn_shape *in_shapes,
                                      void *const *values, int nin, ffu_arena *fold_arena,
                                      nn_graph **out, int *nfolded, int *data_dependent)
{
    *out = NULL;
    *nfolded = 0;
    *data_dependent = 0;
    nn_graph *g;
    ffu_status st = nn_graph_clone(src, &g);
    if (st < 0) return st;
    int k = 0;
    for (int j = 0; j < g->ninputs; j++) {
        nn_tensor *t = &g->tensors[g->inputs[j]];
        if (t->flags & NN_T_CONST) continue;
        if (k >= nin) {
            st = ffu_error_set(FFU_ERR_INTERNAL, "more graph inputs than shapes");
            goto fail;
        }
        t->shape = in_shapes[k];
        if (values && values[k]) {
            t->flags |= NN_T_CONST;
            t->data = values[k];
            t->nbytes = nn_tensor_bytes(t);
        }
        k++;
    }
    for (int i = 0; i < g->nnodes; i++) {
        nn_pick_if_branch(g, i);
        nn_node *n = &g->nodes[i];
        const nn_op_def *d = nn_op_get(n->op);
        if (!d || !d->infer) {
            st = ffu_error_set(FFU_ERR_UNSUPPORTED, "unsupported op '%s' (node '%s')",
                               nn_op_name(n->op), n->name);
            goto fail;
        }
        int folded = 0;
        if ((st = nn_fold_node(g, i, fold_arena, &folded)) < 0) goto fail;
        if (folded) {
            (*nfolded)++;
            continue;
        }
        if ((st = d->infer(g, n)) < 0) goto fail;
        nn_mark_bounded(g, n);
        for (int j = 0; j < n->noutputs; j++) {
            const nn_tensor *o = nn_out(g, n, j);
            if (o && (!nn_shape_known(&o->shape) || !ffu_dtype_size(o->dtype))) {
                char buf[96];
                *data_dependent = 1;
                st = nn_node_error(n, FFU_ERR_UNSUPPORTED,
                                   "output '%s' has shape %s and type %s after shape "
                                   "inference (it depends on data that is not constant)",
                                   o->name, nn_shape_str(&o->shape, buf, sizeof buf),
                                   ffu_dtype_name(o->dtype));
                goto fail;
            }
        }
    }
    *out = g;
    return FFU_OK;
fail:
    nn_graph_destroy(g);
    return st;
}

ffu_status nn_graph_specialize(const nn_graph *src, const nn_shape *in_shapes,
                               void *const *values, int nin, ffu_arena *fold_arena,
                               nn_graph **out, int *nfolded, int *data_dependent)
{
    ffu_status st = nn_graph_specialize_shapes(src, in_shapes, values, nin, fold_arena, out,
                                               nfolded, data_dependent);
    if (st >= 0 && (st = nn_graph_specialize_finish(*out)) < 0) {
        nn_graph_destroy(*out);
        *out = NULL;
    }
    return st;
}

ffu_status nn_graph_specialize_finish(nn_graph *g)
{
    /* bounded values computed at the bound (shadows, passes.c) served shape inference;
     * their nodes run at every run */
    for (int t = 0; t < g->ntensors; t++) {
        nn_tensor *x = &g->tensors[t];
        if ((x->flags & NN_T_BOUNDED) && (x->flags & NN_T_CONST)) {
            x->flags &= ~NN_T_CONST;
            x->data = NULL;
            x->nbytes = 0;
        }
    }
    ffu_status st = nn_remove_dead(g);
    if (st < 0) return st;
    return nn_fuse_planned(g); /* fusions that need shapes (fuse.h) */
}

/* ---- sessions ------------------------------------------------------------------------ */

void ffu_nn_session_opts_default(ffu_nn_session_opts *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = "cpu";
}

static void reset_bound(ffu_nn_session *s)
{
    for (int i = 0; s->staging && i < s->m->ninputs; i++) free(s->staging[i]);
    for (int i = 0; s->bound && i < s->m->ninputs; i++) free(s->bound[i]);
    free(s->staging);
    free(s->bound);
    s->staging = s->bound = NULL;
    s->bound_mode = 0;
    s->values_planned = 0;
}

/* ---- memory of each space ------------------------------------------------------------- */

/* bytes of space sp: device memory from the space's backend; host memory pinned by the
 * main backend when it offers that (fast, asynchronous copies), else ffu_alloc_large. */
static void *space_alloc(ffu_nn_session *s, int sp, size_t bytes)
{
    void *p = NULL;
    bytes = bytes ? (bytes + 255) & ~(size_t)255 : 256;
    if (sp == NN_SPACE_HOST) {
        if (s->host_be) return s->host_be->ops->host_alloc(s->host_be, bytes, &p) < 0 ? NULL : p;
        return ffu_alloc_large(bytes);
    }
    nn_backend *b = s->space_be[sp];
    if (!b || b->ops->mem_alloc(b, bytes, &p) < 0) return NULL;
    return p;
}

static void space_free(ffu_nn_session *s, int sp, void *p)
{
    if (!p) return;
    if (sp == NN_SPACE_HOST) {
        if (s->host_be) s->host_be->ops->host_free(s->host_be, p);
        else free(p);
    } else if (s->space_be[sp]) {
        s->space_be[sp]->ops->mem_free(s->space_be[sp], p);
    }
}

/* Waits for every backend with queued work. */
static ffu_status sync_all(ffu_nn_session *s)
{
    ffu_status st = FFU_OK;
    for (int b = 0; b < s->nbe; b++)
        if ((s->inflight >> b) & 1u) {
            ffu_status r = s->be[b]->ops->sync ? s->be[b]->ops->sync(s->be[b]) : FFU_OK;
            if (r < 0 && st == FFU_OK) st = r;
        }
    s->inflight = 0;
    return st;
}

static void release_plan(ffu_nn_session *s)
{
    sync_all(s); /* nothing queued may still use what is released below */
    if (s->g)
        for (int i = 0; i < s->g->nnodes; i++) {
            nn_node *n = &s->g->nodes[i];
            if (n->backend >= 0 && n->backend < s->nbe && s->be[n->backend]->ops->release)
                s->be[n->backend]->ops->release(s->be[n->backend], n);
        }
    nn_graph_destroy(s->g);
    s->g = NULL;
    ffu_arena_destroy(s->fold);
    s->fold = NULL;
    for (int sp = 0; sp < NN_SPACE_MAX; sp++) {
        if (!(sp == NN_SPACE_HOST && s->ws_bound)) {
            space_free(s, sp, s->arena[sp]);
            space_free(s, sp, s->scratch[sp]);
        }
        space_free(s, sp, s->cdata[sp]);
        s->arena[sp] = NULL, s->scratch[sp] = NULL, s->cdata[sp] = NULL;
        s->scratch_sp[sp] = 0;
    }
    s->ws_bound = 0;
    s->cbytes = 0;
    free(s->coff);
    s->coff = NULL;
    s->ncopies = 0;
    s->exec_be = NULL;
    free(s->io);
    free(s->io_off);
    free(s->skip);
    s->io = NULL, s->io_off = NULL, s->skip = NULL;
    free(s->tail);
    free(s->cap_bytes);
    s->tail = NULL, s->cap_bytes = NULL, s->ntail = 0;
    free(s->node_sec);
    s->node_sec = NULL;
    s->prof_runs = 0;
    for (int i = 0; s->loop_in && i < s->m->ninputs; i++) free(s->loop_in[i]);
    for (int i = 0; s->loop_out && i < s->m->g->noutputs; i++) free(s->loop_out[i]);
    free(s->loop_in);
    free(s->loop_out);
    s->loop_in = s->loop_out = NULL;
    s->loop_bytes = 0;
    s->looped = 0;
    s->batch_n = 1;
    s->batch_why[0] = 0;
    memset(&s->stats, 0, sizeof s->stats);
    s->scratch_bytes = 0;
    s->nfolded = 0;
    s->dirty = 1;
}

/* Records the memory spaces of the session's backends (after they were created). */
static ffu_status register_spaces(ffu_nn_session *s, int device_io)
{
    for (int b = 0; b < s->nbe; b++) {
        nn_backend *be = s->be[b];
        int sp = be->space;
        if (sp < 0 || sp >= NN_SPACE_MAX)
            return ffu_error_set(FFU_ERR_INTERNAL, "backend '%s' has memory space %d",
                                 be->ops->name, sp);
        if (sp != NN_SPACE_HOST) {
            if (!be->ops->mem_alloc || !be->ops->mem_free || !be->ops->copy || !be->ops->sync)
                return ffu_error_set(FFU_ERR_INTERNAL, "backend '%s' has device memory but no "
                                     "memory calls", be->ops->name);
            if (!s->space_be[sp]) s->space_be[sp] = be;
        }
        if (!s->host_be && be->ops->host_alloc && be->ops->host_free) s->host_be = be;
    }
    s->io_space = NN_SPACE_HOST;
    if (device_io) {
        if (!s->nbe || s->be[0]->space == NN_SPACE_HOST)
            return ffu_error_set(FFU_ERR_INVALID, "device_io needs a backend with device memory "
                                 "(cuda), not '%s'", s->backend);
        s->io_space = s->be[0]->space;
    }
    return FFU_OK;
}

static ffu_status create_backends(ffu_nn_session *s)
{
    ffu_status st;
    if (strcmp(s->backend, "cuda") == 0) {
        nn_cuda_opts co = {.device = s->device, .fp16 = s->fp16, .graphs = s->graphs};
        if ((st = nn_backend_cuda_create(&s->be[s->nbe], &co)) < 0) return st;
        s->nbe++;
    } else if (strcmp(s->backend, "cpu") == 0) {
        st = nn_backend_cpu_create(&s->be[s->nbe], s->threads,
                                   (s->bf16 ? NN_CPU_BF16 : 0) | (s->winograd ? NN_CPU_WINOGRAD : 0) |
                                       (s->bands ? NN_CPU_BANDS : 0));
        if (st == FFU_OK) {
            s->nbe++;
        } else if (st == FFU_ERR_UNSUPPORTED) {
            s->note = "the cpu (oneDNN) backend is not available in this build; every node runs on ref";
            ffu_error_clear();
        } else {
            return st;
        }
    } else if (strcmp(s->backend, "ref") != 0) {
        return ffu_error_set(FFU_ERR_INVALID, "unknown backend '%s' (use ref, cpu or cuda)",
                             s->backend);
    }
    if ((st = nn_backend_ref_create(&s->be[s->nbe])) < 0) return st;
    s->nbe++;
    return FFU_OK;
}

/* opts.outputs: the session plans a copy of its model without the other outputs. */
static ffu_status keep_outputs(ffu_nn_session *s, const char *const *names, int n)
{
    const ffu_nn_model *m = s->m;
    if (n < 0 || !names)
        return ffu_error_set(FFU_ERR_INVALID, "outputs: %d names%s", n, names ? "" : ", NULL");
    int nout = m->g->noutputs;
    unsigned char *keep = calloc((size_t)nout, 1);
    s->out_at = malloc(sizeof(int) * (size_t)nout);
    if (!keep || !s->out_at) {
        free(keep);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < n; k++) {
        int i = names[k] ? ffu_nn_model_find_output(m, names[k]) : -1;
        if (i < 0) {
            free(keep);
            return ffu_error_set(FFU_ERR_NOT_FOUND, "the model has no output '%s'",
                                 names[k] ? names[k] : "(null)");
        }
        keep[i] = 1;
    }
    int at = 0;
    for (int i = 0; i < nout; i++)
        s->out_at[i] = keep[i] ? at++ : -1;
    ffu_status st = nn_model_keep_outputs(m, keep, &s->pruned);
    free(keep);
    if (st < 0) return st;
    s->m = s->pruned;
    return FFU_OK;
}

/* main (may be NULL): a backend made by the caller (tests), owned by the session from
 * here on, also on error; it replaces the one o->backend names. */
static ffu_status session_create(const ffu_nn_model *m, const ffu_nn_session_opts *o,
                                 nn_backend *main, ffu_nn_session **out)
{
    if (!out) {
        if (main) main->ops->destroy(main);
        return ffu_error_set(FFU_ERR_INVALID, "ffu_nn_session_create: out is NULL");
    }
    *out = NULL;
    if (!m) {
        if (main) main->ops->destroy(main);
        return ffu_error_set(FFU_ERR_INVALID, "ffu_nn_session_create: model is NULL");
    }
    ffu_nn_session_opts def;
    if (!o) {
        ffu_nn_session_opts_default(&def);
        o = &def;
    }
    const char *bn = main ? main->ops->name : o->backend ? o->backend : "cpu";
    ffu_status st;
    if (strlen(bn) >= sizeof((ffu_nn_session *)0)->backend) {
        st = ffu_error_set(FFU_ERR_INVALID, "unknown backend '%s' (use ref, cpu or cuda)", bn);
        goto fail_main;
    }
    if (o->batch < 0 || o->threads < 0 || o->device < 0) {
        st = ffu_error_set(FFU_ERR_INVALID, "batch, threads and device must not be negative");
        goto fail_main;
    }
    ffu_nn_session *s = calloc(1, sizeof *s);
    if (!s) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto fail_main;
    }
    s->given = s->m = m;
    if (o->noutputs && (st = keep_outputs(s, o->outputs, o->noutputs)) < 0) goto fail;
    strcpy(s->backend, bn);
    s->threads = o->threads ? o->threads : ffu_cpu_count();
    s->batch = o->batch ? o->batch : 1;
    s->bf16 = o->bf16;
    s->winograd = !o->no_winograd;
    s->bands = !o->no_bands;
    s->free_dims = o->free_dims;
    s->fp16 = o->fp16;
    s->graphs = !o->no_cuda_graphs;
    s->device = o->device;
    s->ws = o->workspace;
    s->dirty = 1;
    s->batch_n = 1;
    s->shapes = calloc((size_t)(m->ninputs ? m->ninputs : 1), sizeof(nn_shape));
    s->item = calloc((size_t)(m->ninputs ? m->ninputs : 1), 1);
    if (!s->shapes || !s->item) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < m->ninputs; i++) {
        nn_shape sh = m->g->tensors[m->inputs[i]].shape;
        /* a declared batch of 1 is a batch too (batch.c re-batches the graph) */
        if (nn_batch_carrier(&sh)) sh.d[0] = s->batch;
        s->shapes[i] = sh;
    }
    if (main) {
        s->be[s->nbe++] = main;
        main = NULL;
        if ((st = nn_backend_ref_create(&s->be[s->nbe])) < 0) goto fail;
        s->nbe++;
    } else if ((st = create_backends(s)) < 0) {
        goto fail;
    }
    if ((st = register_spaces(s, o->device_io)) < 0) goto fail;
    *out = s;
    return FFU_OK;
fail:
    ffu_nn_session_destroy(s);
    return st;
fail_main:
    if (main) main->ops->destroy(main);
    return st;
}

ffu_status ffu_nn_session_create(const ffu_nn_model *m, const ffu_nn_session_opts *o,
                                 ffu_nn_session **out)
{
    return session_create(m, o, NULL, out);
}

ffu_status nn_session_create_with(const ffu_nn_model *m, const ffu_nn_session_opts *o,
                                  nn_backend *main, ffu_nn_session **out)
{
    if (!main) return ffu_error_set(FFU_ERR_INVALID, "nn_session_create_with: no backend");
    return session_create(m, o, main, out);
}

const nn_graph *nn_session_graph(const ffu_nn_session *s)
{
    return s && !s->dirty ? s->g : NULL;
}

void ffu_nn_session_destroy(ffu_nn_session *s)
{
    if (!s) return;
    release_plan(s);
    reset_bound(s);
    for (int i = 0; i < s->nbe; i++)
        if (s->be[i] && s->be[i]->ops->destroy) s->be[i]->ops->destroy(s->be[i]);
    free(s->shapes);
    free(s->item);
    free(s->out_at);
    ffu_nn_model_destroy(s->pruned);
    free(s);
}

/* A graph input that no node reads and that is not an output: its value is dead, so
 * any shape is accepted for it (the ONNX suite feeds such inputs with shapes that
 * contradict their declaration). */
static int input_is_dead(const nn_graph *g, int t)
{
    if (g->tensors[t].flags & NN_T_OUTPUT) return 0;
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].ninputs; j++)
            if (g->nodes[i].inputs[j] == t) return 0;
    return 1;
}

ffu_status ffu_nn_session_set_input_shape(ffu_nn_session *s, int i, int rank,
                                          const int64_t *dims)
{
    if (!s) return ffu_error_set(FFU_ERR_INVALID, "session is NULL");
    if (i < 0 || i >= s->m->ninputs)
        return ffu_error_set(FFU_ERR_INVALID, "input %d does not exist (the model has %d)", i,
                             s->m->ninputs);
    const nn_tensor *t = &s->m->g->tensors[s->m->inputs[i]];
    if (rank < 0 || rank > FFU_NN_MAX_RANK || (rank && !dims))
        return ffu_error_set(FFU_ERR_INVALID, "input '%s': rank %d is out of range 0..%d",
                             t->name, rank, FFU_NN_MAX_RANK);
    int dead = input_is_dead(s->m->g, s->m->inputs[i]);
    if (!dead && t->shape.rank >= 0 && rank != t->shape.rank)
        return ffu_error_set(FFU_ERR_INVALID, "input '%s' has rank %d, not %d", t->name,
                             t->shape.rank, rank);
    nn_shape sh = {.rank = rank};
    for (int k = 0; k < rank; k++) {
        if (dims[k] < 0 || dims[k] > ((int64_t)1 << 31))
            return ffu_error_set(FFU_ERR_INVALID, "input '%s': dim %d = %lld is out of range",
                                 t->name, k, (long long)dims[k]);
        /* a declared batch of 1 may become any batch (batch.c); with free_dims any
         * declared dim may change */
        if (!dead && !s->free_dims && t->shape.rank >= 0 && t->shape.d[k] >= 0 &&
            t->shape.d[k] != dims[k] && !(k == 0 && t->shape.d[0] == 1 && dims[0] > 0))
            return ffu_error_set(FFU_ERR_INVALID, "input '%s': dim %d is fixed at %lld, not %lld",
                                 t->name, k, (long long)t->shape.d[k], (long long)dims[k]);
        sh.d[k] = dims[k];
    }
    if (nn_shape_equal(&sh, &s->shapes[i])) return FFU_OK;
    s->shapes[i] = sh;
    release_plan(s);
    reset_bound(s);
    return FFU_OK;
}

static ffu_status enter_bound_mode(ffu_nn_session *s)
{
    const ffu_nn_model *m = s->m;
    int nb = 0;
    for (int i = 0; i < m->ninputs; i++)
        nb += nn_input_bindable(m->g->tensors[m->inputs[i]].dtype, &s->shapes[i]);
    if (!nb) return FFU_OK; /* nothing to bind: the error stands */
    s->staging = calloc((size_t)m->ninputs, sizeof(void *));
    s->bound = calloc((size_t)m->ninputs, sizeof(void *));
    if (!s->staging || !s->bound) goto nomem;
    for (int i = 0; i < m->ninputs; i++) {
        const nn_tensor *t = &m->g->tensors[m->inputs[i]];
        int64_t n = nn_shape_numel(&s->shapes[i]);
        size_t bytes = (size_t)n * ffu_dtype_size(t->dtype);
        if (!(s->staging[i] = calloc(1, bytes ? bytes : 1))) goto nomem;
        if (nn_input_bindable(t->dtype, &s->shapes[i]) &&
            !(s->bound[i] = calloc(1, bytes ? bytes : 1)))
            goto nomem;
    }
    s->bound_mode = 1;
    s->values_planned = 0;
    return FFU_OK;
nomem:
    reset_bound(s);
    return ffu_error_set(FFU_ERR_NOMEM, "out of memory for bound inputs");
}

static void fill_tensor(const ffu_nn_session *s, int t, ffu_nn_tensor *out);

/* The stacked shape of a batch-1 output over n items: dim 0 becomes n (a batch axis
 * is prepended when the output has none). */
static int stacked_shape(const nn_shape *one, int n, nn_shape *out)
{
    *out = *one;
    if (one->rank >= 1 && one->d[0] == 1) {
        out->d[0] = n;
        return 1;
    }
    if (one->rank >= FFU_NN_MAX_RANK) return 0;
    out->rank = one->rank + 1;
    out->d[0] = n;
    for (int k = 0; k < one->rank; k++) out->d[k + 1] = one->d[k];
    return 1;
}

/* Looped batch: buffers for all items of every input and output, so that running
 * allocates nothing. */
static ffu_status plan_loop(ffu_nn_session *s)
{
    const ffu_nn_model *m = s->m;
    int nout = m->g->noutputs;
    s->loop_in = calloc((size_t)(m->ninputs ? m->ninputs : 1), sizeof(void *));
    s->loop_out = calloc((size_t)(nout ? nout : 1), sizeof(void *));
    if (!s->loop_in || !s->loop_out) goto nomem;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (pass ? nout : m->ninputs); i++) {
            ffu_nn_tensor t;
            fill_tensor(s, pass ? m->g->outputs[i] : m->inputs[i], &t);
            nn_shape one = {.rank = t.rank}, all;
            for (int k = 0; k < t.rank; k++) one.d[k] = t.dims[k];
            if (pass && !stacked_shape(&one, s->batch_n, &all))
                return ffu_error_set(FFU_ERR_UNSUPPORTED, "output '%s' has rank %d: no room for "
                                     "a batch axis", t.name, t.rank);
            size_t bytes = t.nbytes * (size_t)((pass || s->item[i]) ? s->batch_n : 1);
            void *p = aligned_alloc(64, bytes ? (bytes + 63) & ~(size_t)63 : 64);
            if (!p) goto nomem;
            memset(p, 0, bytes);
            (pass ? s->loop_out : s->loop_in)[i] = p;
            s->loop_bytes += bytes;
        }
    return FFU_OK;
nomem:
    return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a looped batch of %d", s->batch_n);
}

/* Constants read by nodes of a device space are uploaded once per plan into one block
 * of that space (s->coff[t]: offset of tensor t there; a constant read in two device
 * spaces is not supported, nor needed with one device backend per session). */
static ffu_status upload_constants(ffu_nn_session *s)
{
    nn_graph *g = s->g;
    size_t total[NN_SPACE_MAX] = {0};
    free(s->coff);
    s->coff = malloc(sizeof(size_t) * (size_t)(g->ntensors ? g->ntensors : 1));
    if (!s->coff) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    int *csp = malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    if (!csp) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int t = 0; t < g->ntensors; t++) csp[t] = NN_SPACE_HOST, s->coff[t] = 0;
    ffu_status st = FFU_OK;
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        int sp = s->be[n->backend]->space;
        if (sp == NN_SPACE_HOST || n->op == NN_OP_MEM_COPY) continue;
        for (int j = 0; j < n->ninputs; j++) {
            int t = n->inputs[j];
            if (t < 0 || !(g->tensors[t].flags & NN_T_CONST)) continue;
            if (csp[t] == sp) continue;
            if (csp[t] != NN_SPACE_HOST) {
                st = nn_node_error(n, FFU_ERR_UNSUPPORTED, "constant '%s' is read in two device "
                                   "memory spaces", g->tensors[t].name);
                goto out;
            }
            csp[t] = sp;
            s->coff[t] = total[sp];
            total[sp] += (g->tensors[t].nbytes + 255) & ~(size_t)255;
        }
    }
    for (int sp = 1; sp < NN_SPACE_MAX; sp++) {
        if (!total[sp]) continue;
        nn_backend *b = s->space_be[sp];
        if (!(s->cdata[sp] = space_alloc(s, sp, total[sp]))) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of device memory for %zu bytes of weights",
                               total[sp]);
            goto out;
        }
        s->cbytes += total[sp];
        for (int t = 0; t < g->ntensors; t++) {
            const nn_tensor *x = &g->tensors[t];
            if (csp[t] != sp || !x->nbytes) continue;
            if ((st = b->ops->copy(b, s->cdata[sp] + s->coff[t], sp, x->data, NN_SPACE_HOST,
                                   x->nbytes)) < 0)
                goto out;
        }
        if ((st = b->ops->sync(b)) < 0) goto out;
    }
out:
    free(csp);
    return st;
}

/* The backend of a copy node: the one owning the device side of its two spaces. */
static int copy_backend(const ffu_nn_session *s, const nn_graph *g, const nn_node *n)
{
    const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0);
    int sp = x && x->space != NN_SPACE_HOST ? x->space : y ? y->space : NN_SPACE_HOST;
    for (int b = 0; b < s->nbe; b++)
        if (s->be[b] == s->space_be[sp]) return b;
    return -1;
}

static ffu_status bind_io(ffu_nn_session *s);

/* In a workspace the host scratch follows the arena, 64-byte aligned. */
static size_t ws_arena_end(const ffu_nn_session *s)
{
    return (s->stats.space_bytes[NN_SPACE_HOST] + 63) & ~(size_t)63;
}

/* The host arena and scratch in the workspace's block. */
static void take_workspace(ffu_nn_session *s)
{
    s->arena[NN_SPACE_HOST] = s->ws->buf;
    s->scratch[NN_SPACE_HOST] = s->scratch_sp[NN_SPACE_HOST] ? s->ws->buf + ws_arena_end(s)
                                                              : NULL;
    s->ws_gen = s->ws->gen;
}

/* Before a session of a workspace hands out pointers or runs: if another session grew
 * the workspace since this one took its block, take the new one. */
static ffu_status follow_workspace(ffu_nn_session *s)
{
    if (!s->ws_bound || s->ws_gen == s->ws->gen) return FFU_OK;
    take_workspace(s);
    s->plan_id++; /* the pointers changed: a backend that captured the plan captures again */
    return bind_io(s);
}

/* Whether node n reads or writes a bounded tensor (ir.h NN_T_BOUNDED). */
static int touches_bounded(const nn_graph *g, const nn_node *n)
{
    if (nn_reads_bounded(g, n)) return 1;
    for (int j = 0; j < n->noutputs; j++)
        if (n->outputs[j] >= 0 && (g->tensors[n->outputs[j]].flags & NN_T_BOUNDED)) return 1;
    return 0;
}

/* The run-time shape bookkeeping of a plan with bounded tensors (s->tail, cap_bytes). */
static ffu_status plan_tail(ffu_nn_session *s)
{
    const nn_graph *g = s->g;
    s->ntail = 0;
    for (int i = 0; i < g->nnodes; i++)
        s->ntail += touches_bounded(g, &g->nodes[i]);
    if (!s->ntail) return FFU_OK;
    s->tail = calloc((size_t)g->nnodes, 1);
    s->cap_bytes = calloc((size_t)g->ntensors, sizeof(size_t));
    if (!s->tail || !s->cap_bytes) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->nnodes; i++)
        s->tail[i] = (unsigned char)touches_bounded(g, &g->nodes[i]);
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].flags & NN_T_BOUNDED) s->cap_bytes[t] = nn_tensor_bytes(&g->tensors[t]);
    return FFU_OK;
}

/* Before tail node i runs: its output shapes from its inputs' actual ones, with the
 * bounded inputs' current values visible to inference as constants (a Reshape's shape
 * computed from a Shape of a bounded tensor); an op with NN_OPF_DATA_SHAPE sets its
 * own when it runs. FFU_ERR_UNSUPPORTED when a value would outgrow its planned bytes
 * (an op whose sizes do not grow with its inputs'). */
static ffu_status reinfer(ffu_nn_session *s, int i)
{
    nn_graph *g = s->g;
    nn_node *n = &g->nodes[i];
    const nn_op_def *d = nn_op_get(n->op);
    if (!d || (d->flags & NN_OPF_DATA_SHAPE)) return FFU_OK;
    void *const *in = s->io + s->io_off[i];
    /* no bounded tensor is a constant in a plan (nn_graph_specialize_finish): what is
     * marked here is unmarked below */
    for (int j = 0; j < n->ninputs; j++) {
        nn_tensor *x = n->inputs[j] >= 0 ? &g->tensors[n->inputs[j]] : NULL;
        if (x && (x->flags & NN_T_BOUNDED) && !(x->flags & NN_T_CONST) && in[j]) {
            x->flags |= NN_T_CONST;
            x->data = in[j];
            x->nbytes = nn_tensor_bytes(x);
        }
    }
    ffu_status st = d->infer(g, n);
    for (int j = 0; j < n->ninputs; j++) {
        nn_tensor *x = n->inputs[j] >= 0 ? &g->tensors[n->inputs[j]] : NULL;
        if (x && (x->flags & NN_T_BOUNDED) && (x->flags & NN_T_CONST)) {
            x->flags &= ~NN_T_CONST;
            x->data = NULL;
            x->nbytes = 0;
        }
    }
    if (st < 0) return st;
    for (int j = 0; j < n->noutputs; j++) {
        const nn_tensor *o = nn_out(g, n, j);
        if (o && (o->flags & NN_T_BOUNDED) &&
            (!nn_shape_known(&o->shape) || nn_tensor_bytes(o) > s->cap_bytes[n->outputs[j]]))
            return nn_node_error(n, FFU_ERR_UNSUPPORTED,
                                 "output '%s' outgrew the %zu bytes "
                                 "planned for it (its size does not follow its inputs')",
                                 o->name, s->cap_bytes[n->outputs[j]]);
    }
    return FFU_OK;
}

/* Backends, memory spaces and copies, prepare, memory, constants and the pointer table
 * of a specialised graph (s->g). */
static ffu_status plan_nodes(ffu_nn_session *s)
{
    nn_graph *g = s->g;
    ffu_status st;
    int *nsp = malloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
    if (!nsp) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        n->backend = -1;
        /* a node touching a size known only at run time runs on ref (the last
         * backend), which takes any shape at run time */
        int from = touches_bounded(g, n) ? s->nbe - 1 : 0;
        for (int b = from; b < s->nbe && n->backend < 0; b++)
            if (s->be[b]->ops->supports(s->be[b], g, n)) n->backend = b;
        if (n->backend < 0) {
            free(nsp);
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "no backend runs this node");
        }
        nsp[i] = s->be[n->backend]->space;
    }
    /* values that cross spaces get copy nodes (plan.c) */
    st = nn_plan_spaces(g, nsp, s->io_space, &s->ncopies);
    free(nsp);
    if (st < 0) return st;
    size_t nio = 0;
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        if (n->op == NN_OP_MEM_COPY && n->backend < 0 && (n->backend = copy_backend(s, g, n)) < 0)
            return nn_node_error(n, FFU_ERR_INTERNAL, "no backend owns this copy's memory");
        nio += (size_t)n->ninputs + (size_t)n->noutputs;
    }
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        if (n->op == NN_OP_MEM_COPY) continue; /* runs through copy(): nothing to prepare */
        nn_backend *b = s->be[n->backend];
        n->view = 0;
        if (b->ops->prepare && (st = b->ops->prepare(b, g, n)) < 0) return st;
        size_t sb = b->ops->scratch_bytes ? b->ops->scratch_bytes(b, g, n) : 0;
        if (sb > s->scratch_sp[b->space]) s->scratch_sp[b->space] = sb;
    }
    if ((st = nn_plan_memory(g, 1, &s->stats)) < 0) return st;
    s->scratch_bytes = 0;
    for (int sp = 0; sp < NN_SPACE_MAX; sp++) {
        int used = sp == NN_SPACE_HOST || s->stats.space_bytes[sp] || s->scratch_sp[sp];
        if (!used) continue;
        if (sp == NN_SPACE_HOST && s->ws && !s->host_be && s->io_space == NN_SPACE_HOST) {
            if ((st = nn_workspace_reserve(s->ws, ws_arena_end(s) + s->scratch_sp[sp])) < 0)
                return st;
            s->ws_bound = 1;
            take_workspace(s);
            s->scratch_bytes += s->scratch_sp[sp];
            continue;
        }
        if (!(s->arena[sp] = space_alloc(s, sp, s->stats.space_bytes[sp])))
            return ffu_error_set(FFU_ERR_NOMEM, "out of memory for a %zu-byte activation arena "
                                 "(memory space %d)", s->stats.space_bytes[sp], sp);
        if (s->scratch_sp[sp] && !(s->scratch[sp] = space_alloc(s, sp, s->scratch_sp[sp])))
            return ffu_error_set(FFU_ERR_NOMEM, "out of memory for %zu bytes of scratch "
                                 "(memory space %d)", s->scratch_sp[sp], sp);
        s->scratch_bytes += s->scratch_sp[sp];
    }
    /* zeroed so that a run over unfilled inputs is at least deterministic (device
     * arenas: whatever the pool had, docs/NN_CUDA.md; a workspace: what its sessions
     * left) */
    if (!s->ws_bound) memset(s->arena[NN_SPACE_HOST], 0, s->stats.space_bytes[NN_SPACE_HOST]);
    if ((st = upload_constants(s)) < 0) return st;
    s->io = malloc(sizeof(void *) * (nio ? nio : 1));
    s->io_off = malloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
    s->skip = calloc((size_t)(g->nnodes ? g->nnodes : 1), 1);
    s->node_sec = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *s->node_sec);
    if (!s->io || !s->io_off || !s->skip || !s->node_sec)
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    if ((st = bind_io(s)) < 0) return st;
    if ((st = plan_tail(s)) < 0) return st;
    /* one backend runs everything: it may capture the plan (backend.h execute) */
    s->exec_be = NULL;
    int one = -1;
    for (int i = 0; i < g->nnodes && one != -2; i++) {
        if (s->skip[i]) continue;
        if (one < 0) one = g->nodes[i].backend;
        else if (one != g->nodes[i].backend)
            one = -2; /* mixed: final */
    }
    if (one >= 0 && s->be[one]->ops->execute) s->exec_be = s->be[one];
    return FFU_OK;
}

/* 1 when every output of n holds no values (a dim is 0): there is nothing to compute,
 * and a kernel could still loop over the other dims (2^28 empty softmax rows). */
static int no_values(const nn_graph *g, const nn_node *n)
{
    for (int j = 0; j < n->noutputs; j++) {
        const nn_tensor *o = nn_out(g, n, j);
        if (o && nn_shape_numel(&o->shape) != 0) return 0;
    }
    return n->noutputs > 0;
}

/* The pointer table: per node its input and output pointers (constants, arena slots),
 * taken again when a workspace moved the host arena. */
static ffu_status bind_io(ffu_nn_session *s)
{
    const nn_graph *g = s->g;
    size_t at = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        int sp = s->be[n->backend]->space, copy = n->op == NN_OP_MEM_COPY;
        s->io_off[i] = (int)at;
        for (int pass = 0; pass < 2; pass++) {
            int cnt = pass ? n->noutputs : n->ninputs;
            const int *list = pass ? n->outputs : n->inputs;
            for (int j = 0; j < cnt; j++) {
                const nn_tensor *t = list[j] >= 0 ? &g->tensors[list[j]] : NULL;
                void *p = NULL;
                if (t && (t->flags & NN_T_CONST)) {
                    p = sp == NN_SPACE_HOST ? t->data : s->cdata[sp] + s->coff[list[j]];
                } else if (t && t->offset >= 0) {
                    /* a node sees only its own space; a copy sees both of its sides */
                    if (!copy && t->space != sp)
                        return nn_node_error(n, FFU_ERR_INTERNAL, "tensor '%s' is in memory "
                                             "space %d, the node runs in %d", t->name,
                                             t->space, sp);
                    p = s->arena[t->space] + t->offset;
                }
                s->io[at++] = p;
            }
        }
        s->skip[i] = nn_plan_node_is_view(g, n) ? SKIP_VIEW : no_values(g, n) ? SKIP_EMPTY : 0;
    }
    return FFU_OK;
}

static ffu_status plan(ffu_nn_session *s)
{
    release_plan(s);
    const ffu_nn_model *m = s->m;
    for (int i = 0; i < m->ninputs; i++) {
        const nn_shape *sh = &s->shapes[i];
        const char *name = m->g->tensors[m->inputs[i]].name;
        if (sh->rank < 0)
            return ffu_error_set(FFU_ERR_INVALID,
                                 "input '%s' has no declared shape; call "
                                 "ffu_nn_session_set_input_shape", name);
        for (int k = 0; k < sh->rank; k++)
            if (sh->d[k] < 0)
                return ffu_error_set(FFU_ERR_INVALID,
                                     "input '%s' needs a fixed shape: dim %d is dynamic; call "
                                     "ffu_nn_session_set_input_shape", name, k);
    }
    ffu_status st = ffu_arena_create(&s->fold, 0);
    if (st < 0) return st;
    int dd = 0;
    if (s->bound_mode) {
        st = nn_graph_specialize(m->g, s->shapes, s->bound, m->ninputs, s->fold, &s->g,
                                 &s->nfolded, &dd);
    } else {
        nn_batch_result br;
        st = nn_batch_specialize(m, s->shapes, s->fold, s->item, &br);
        s->g = br.g, s->nfolded = br.nfolded, dd = br.data_dependent;
        s->batch_n = br.n, s->looped = br.looped;
        memcpy(s->batch_why, br.why, sizeof s->batch_why);
    }
    if (st < 0 && dd && !s->bound_mode) {
        /* shapes depend on input values: bind the small inputs and plan at run time */
        ffu_status b = enter_bound_mode(s);
        release_plan(s);
        if (b < 0) return b;
        if (s->bound_mode) {
            ffu_error_clear();
            return FFU_OK;
        }
    }
    if (st < 0) goto fail;
    if (s->io_space != NN_SPACE_HOST && (s->bound_mode || s->looped)) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "device_io: the model needs %s, which runs "
                           "on host buffers; use host I/O", s->bound_mode ?
                           "input values at planning time" : "a looped batch");
        goto fail;
    }
    if ((st = plan_nodes(s)) < 0) goto fail;
    if (s->ntail && s->looped) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED,
                           "batch %d: the model has outputs whose size "
                           "depends on the data; run one item at a time",
                           s->batch_n);
        goto fail;
    }
    if (s->looped && (st = plan_loop(s)) < 0) goto fail;
    s->dirty = 0;
    s->runs = 0;
    s->plan_id++;
    s->values_planned = s->bound_mode;
    return FFU_OK;
fail:
    release_plan(s);
    return st;
}

static ffu_status ensure_plan(ffu_nn_session *s)
{
    return s->dirty ? plan(s) : FFU_OK;
}

static void fill_tensor(const ffu_nn_session *s, int t, ffu_nn_tensor *out)
{
    const nn_tensor *x = &s->g->tensors[t];
    out->name = x->name;
    out->dtype = x->dtype;
    out->rank = x->shape.rank;
    for (int k = 0; k < x->shape.rank; k++) out->dims[k] = x->shape.d[k];
    if (x->flags & NN_T_CONST) out->data = x->data;
    else out->data = x->offset >= 0 ? s->arena[x->space] + x->offset : NULL;
    out->nbytes = nn_tensor_bytes(x);
}

/* The input as the caller sees it in bound mode: its staging buffer. */
static void staging_tensor(const ffu_nn_session *s, int i, ffu_nn_tensor *out)
{
    const nn_tensor *x = &s->m->g->tensors[s->m->inputs[i]];
    const nn_shape *sh = &s->shapes[i];
    out->name = x->name;
    out->dtype = x->dtype;
    out->rank = sh->rank;
    for (int k = 0; k < sh->rank; k++) out->dims[k] = sh->d[k];
    out->data = s->staging[i];
    out->nbytes = (size_t)nn_shape_numel(sh) * ffu_dtype_size(x->dtype);
}

ffu_status ffu_nn_session_input(ffu_nn_session *s, int i, ffu_nn_tensor *t)
{
    if (t) memset(t, 0, sizeof *t);
    if (!s || !t) return ffu_error_set(FFU_ERR_INVALID, "session or tensor is NULL");
    if (i < 0 || i >= s->m->ninputs)
        return ffu_error_set(FFU_ERR_INVALID, "input %d does not exist (the model has %d)", i,
                             s->m->ninputs);
    if (!s->bound_mode) {
        ffu_status st = ensure_plan(s);
        if (st >= 0) st = follow_workspace(s);
        if (st < 0) return st;
    }
    if (s->bound_mode) staging_tensor(s, i, t);
    else fill_tensor(s, s->m->inputs[i], t);
    if (s->looped) { /* the caller fills all items; runs copy them in slice by slice */
        t->rank = s->shapes[i].rank;
        for (int k = 0; k < t->rank; k++) t->dims[k] = s->shapes[i].d[k];
        t->nbytes *= (size_t)(s->item[i] ? s->batch_n : 1);
        t->data = s->loop_in[i];
    }
    return FFU_OK;
}

/* Bound mode, before a run: re-plan if a bound value changed, then copy the unbound
 * inputs from their staging buffers into the arena. */
static ffu_status sync_bound(ffu_nn_session *s)
{
    const ffu_nn_model *m = s->m;
    int changed = !s->values_planned || s->dirty;
    for (int i = 0; i < m->ninputs && !changed; i++) {
        if (!s->bound[i]) continue;
        ffu_nn_tensor t;
        staging_tensor(s, i, &t);
        changed = memcmp(s->bound[i], s->staging[i], t.nbytes) != 0;
    }
    if (changed) {
        for (int i = 0; i < m->ninputs; i++) {
            ffu_nn_tensor t;
            staging_tensor(s, i, &t);
            if (s->bound[i]) memcpy(s->bound[i], s->staging[i], t.nbytes);
        }
        ffu_status st = plan(s);
        if (st < 0) return st;
    }
    for (int i = 0; i < m->ninputs; i++) {
        if (s->bound[i]) continue;
        ffu_nn_tensor a, b;
        staging_tensor(s, i, &a);
        fill_tensor(s, m->inputs[i], &b);
        if (b.data && a.nbytes == b.nbytes) memcpy(b.data, a.data, a.nbytes);
    }
    return FFU_OK;
}

/* One node of the plan: a backend run or a copy between memory spaces. */
static ffu_status run_node(ffu_nn_session *s, int i)
{
    const nn_graph *g = s->g;
    const nn_node *n = &g->nodes[i];
    nn_backend *b = s->be[n->backend];
    void *const *in = s->io + s->io_off[i];
    ffu_status st;
    if (n->op == NN_OP_MEM_COPY) {
        const nn_tensor *x = nn_in(g, n, 0), *y = nn_out(g, n, 0);
        if (b->space == NN_SPACE_HOST) /* never planned: both sides on the host */
            return b->ops->run(b, g, n, in, in + 1, s->scratch[NN_SPACE_HOST]);
        if (y->space == NN_SPACE_HOST && (s->inflight & ~(1u << n->backend)) &&
            (st = sync_all(s)) < 0)
            return st;
        if ((st = b->ops->copy(b, in[1], y->space, in[0], x->space, nn_tensor_bytes(x))) < 0)
            return st;
        s->inflight |= 1u << n->backend;
        return FFU_OK;
    }
    if (b->space == NN_SPACE_HOST && s->inflight && (st = sync_all(s)) < 0) return st;
    if ((st = b->ops->run(b, g, n, in, in + n->ninputs, s->scratch[b->space])) < 0) return st;
    if (b->space != NN_SPACE_HOST) s->inflight |= 1u << n->backend;
    return FFU_OK;
}

/* The plan's nodes in order. Device work is queued; before a host node runs, every
 * backend with queued work is synchronised (the host node may read what a copy brings
 * back, or overwrite host memory a queued copy still reads). Profiling times each node,
 * waiting for device work to finish before reading the clock. */
static ffu_status run_body(void *ctx)
{
    ffu_nn_session *s = ctx;
    const nn_graph *g = s->g;
    ffu_status st;
    for (int i = 0; i < g->nnodes; i++) {
        if (s->tail && s->tail[i] && (st = reinfer(s, i)) < 0) return st;
        if (s->skip[i]) continue;
        double t0 = s->profile ? ffu_clock_sec() : 0;
        if ((st = run_node(s, i)) < 0) return st;
        if (s->profile) {
            nn_backend *b = s->be[g->nodes[i].backend];
            if (b->space != NN_SPACE_HOST && (st = sync_all(s)) < 0) return st;
            s->node_sec[i] += ffu_clock_sec() - t0;
        }
    }
    return FFU_OK;
}

/* One pass over the plan; with finish, waits until its results are in memory. */
static ffu_status run_nodes(ffu_nn_session *s, int finish)
{
    ffu_status st;
    if (s->exec_be && !s->profile) { /* a replayed graph cannot be timed per node */
        st = s->exec_be->ops->execute(s->exec_be, s->plan_id, run_body, s);
        if (s->exec_be->space != NN_SPACE_HOST)
            for (int b = 0; b < s->nbe; b++)
                if (s->be[b] == s->exec_be) s->inflight |= 1u << b;
    } else {
        st = run_body(s);
    }
    if (st < 0) {
        sync_all(s); /* leave nothing queued behind an error */
        return st;
    }
    return finish ? sync_all(s) : FFU_OK;
}

/* Looped batch: item b's input slices in, one batch-1 run, its outputs out. Shared
 * inputs are copied once: a plan never writes its inputs. */
static ffu_status run_looped(ffu_nn_session *s)
{
    const ffu_nn_model *m = s->m;
    for (int b = 0; b < s->batch_n; b++) {
        for (int i = 0; i < m->ninputs; i++) {
            ffu_nn_tensor t;
            fill_tensor(s, m->inputs[i], &t);
            if (t.data && (s->item[i] || b == 0))
                memcpy(t.data, (char *)s->loop_in[i] + (s->item[i] ? (size_t)b * t.nbytes : 0),
                       t.nbytes);
        }
        ffu_status st = run_nodes(s, 1);
        if (st < 0) return st;
        for (int i = 0; i < m->g->noutputs; i++) {
            ffu_nn_tensor t;
            fill_tensor(s, m->g->outputs[i], &t);
            if (t.data) memcpy((char *)s->loop_out[i] + (size_t)b * t.nbytes, t.data, t.nbytes);
        }
    }
    return FFU_OK;
}

/* FLOPs of all runs of all sessions (ffu_nn_flops_done). */
static _Atomic uint64_t flops_done;

uint64_t ffu_nn_flops_done(void) { return atomic_load_explicit(&flops_done, memory_order_relaxed); }

/* One run's FLOPs: the plan's nodes that run, as `describe` counts them (direct form),
 * times the items of a looped batch. */
static int64_t plan_flops(const ffu_nn_session *s)
{
    int64_t total = 0;
    for (int i = 0; s->g && i < s->g->nnodes; i++) {
        int64_t f = s->skip && s->skip[i] ? 0 : nn_node_flops(s->g, &s->g->nodes[i]);
        if (f > 0) total += f;
    }
    return s->looped ? total * s->batch_n : total;
}

static ffu_status session_run(ffu_nn_session *s, int finish)
{
    ffu_status st = s->bound_mode ? FFU_OK : ensure_plan(s);
    if (st >= 0) st = follow_workspace(s);
    if (st < 0) return st;
    /* the caller fills host inputs (and reads host outputs) between runs: nothing of an
     * earlier unfinished run may still be queued on them */
    if (s->inflight && s->io_space == NN_SPACE_HOST && (st = sync_all(s)) < 0) return st;
    if (s->bound_mode && (st = sync_bound(s)) < 0) return st;
    if ((st = s->looped ? run_looped(s) : run_nodes(s, finish)) < 0) return st;
    if (s->flops_plan != s->plan_id) {
        s->run_flops = plan_flops(s);
        s->flops_plan = s->plan_id;
    }
    atomic_fetch_add_explicit(&flops_done, (uint64_t)s->run_flops, memory_order_relaxed);
    s->runs++;
    s->prof_runs += s->profile != 0;
    return FFU_OK;
}

ffu_status ffu_nn_session_run(ffu_nn_session *s)
{
    if (!s) return ffu_error_set(FFU_ERR_INVALID, "session is NULL");
    /* waits: host outputs (or device ones, with device_io) are complete on return */
    return session_run(s, 1);
}

ffu_status ffu_nn_session_run_device(ffu_nn_session *s, ffu_gpu_stream *stream)
{
    if (!s) return ffu_error_set(FFU_ERR_INVALID, "session is NULL");
    nn_backend *b = s->nbe ? s->be[0] : NULL;
    if (!b || b->space == NN_SPACE_HOST || !b->ops->set_stream)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_nn_session_run_device needs a session on a "
                             "device backend (cuda), not '%s'", s->backend);
    ffu_status st = b->ops->set_stream(b, stream);
    if (st < 0) return st;
    st = session_run(s, 0);
    /* later plain runs go back to the session's own queue (ordered after this one) */
    ffu_status r = b->ops->set_stream(b, NULL);
    return st < 0 ? st : r;
}

ffu_status ffu_nn_session_profile(ffu_nn_session *s, int on)
{
    if (!s) return ffu_error_set(FFU_ERR_INVALID, "session is NULL");
    s->profile = on != 0;
    if (on && s->node_sec) memset(s->node_sec, 0, sizeof *s->node_sec * (size_t)s->g->nnodes);
    if (on) s->prof_runs = 0;
    for (int k = 0; k < s->nbe; k++)
        s->be[k]->profile = s->profile;
    for (int i = 0; on && s->g && i < s->g->nnodes; i++) {
        nn_backend *b = s->be[s->g->nodes[i].backend];
        if (!s->skip[i] && b->ops->profile) b->ops->profile(b, s->g, &s->g->nodes[i], 1, NULL);
    }
    return FFU_OK;
}

ffu_status ffu_nn_session_sync(ffu_nn_session *s)
{
    if (!s) return ffu_error_set(FFU_ERR_INVALID, "session is NULL");
    return sync_all(s);
}

ffu_status ffu_nn_session_output(const ffu_nn_session *s, int i, ffu_nn_tensor *t)
{
    if (t) memset(t, 0, sizeof *t);
    if (!s || !t) return ffu_error_set(FFU_ERR_INVALID, "session or tensor is NULL");
    const nn_graph *gg = s->given->g;
    if (i < 0 || i >= gg->noutputs)
        return ffu_error_set(FFU_ERR_INVALID, "output %d does not exist (the model has %d)", i,
                             gg->noutputs);
    if (s->out_at && s->out_at[i] < 0)
        return ffu_error_set(FFU_ERR_INVALID,
                             "output '%s' is not computed: the session was "
                             "opened for other outputs (ffu_nn_session_opts.outputs)",
                             gg->tensors[gg->outputs[i]].name);
    if (s->out_at) i = s->out_at[i];
    if (s->dirty || !s->g)
        return ffu_error_set(FFU_ERR_INVALID, "the session has not run with its current shapes");
    fill_tensor(s, s->m->g->outputs[i], t);
    if (s->looped) {
        nn_shape one = {.rank = t->rank}, all;
        for (int k = 0; k < t->rank; k++) one.d[k] = t->dims[k];
        stacked_shape(&one, s->batch_n, &all); /* checked when planning */
        t->rank = all.rank;
        for (int k = 0; k < all.rank; k++) t->dims[k] = all.d[k];
        t->nbytes *= (size_t)s->batch_n;
        t->data = s->loop_out[i];
    }
    return FFU_OK;
}

size_t ffu_nn_session_peak_bytes(const ffu_nn_session *s)
{
    if (!s || s->dirty) return 0;
    return s->stats.arena_bytes + s->scratch_bytes + s->loop_bytes;
}

int ffu_nn_session_threads_used(const ffu_nn_session *s)
{
    if (!s || s->dirty) return 0;
    int used = 1;
    for (int b = 0; b < s->nbe; b++) {
        int t = s->be[b]->plan_threads > 0 ? s->be[b]->plan_threads : s->be[b]->threads;
        int runs = 0;
        for (int i = 0; i < s->g->nnodes && !runs; i++)
            runs = s->g->nodes[i].backend == b && !s->skip[i];
        if (runs && t > used) used = t;
    }
    return used;
}

ffu_status ffu_nn_session_describe(const ffu_nn_session *s, ffu_jw *w)
{
    if (!s || !w) return ffu_error_set(FFU_ERR_INVALID, "session or writer is NULL");
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "backend"), ffu_jw_string(w, s->backend);
    ffu_jw_key(w, "backends"), ffu_jw_begin_array(w);
    for (int b = 0; b < s->nbe; b++) ffu_jw_string(w, s->be[b]->ops->name);
    ffu_jw_end_array(w);
    if (s->note) ffu_jw_key(w, "note"), ffu_jw_string(w, s->note);
    ffu_jw_key(w, "threads"), ffu_jw_int(w, s->threads);
    /* bf16: what was asked, and whether a backend granted it (the CPU has the
     * instructions); bf16_nodes below says where each node's accuracy check passed */
    ffu_jw_key(w, "bf16"), ffu_jw_bool(w, s->bf16 != 0);
    int bf16_ok = 0;
    for (int b = 0; b < s->nbe; b++) bf16_ok |= s->be[b]->bf16 != 0;
    ffu_jw_key(w, "bf16_granted"), ffu_jw_bool(w, bf16_ok);
    int fp16_ok = 0;
    for (int b = 0; b < s->nbe; b++) fp16_ok |= s->be[b]->fp16 != 0;
    ffu_jw_key(w, "fp16"), ffu_jw_bool(w, s->fp16 != 0);
    ffu_jw_key(w, "fp16_granted"), ffu_jw_bool(w, fp16_ok);
    ffu_jw_key(w, "io_memory"), ffu_jw_string(w, s->io_space == NN_SPACE_HOST ? "host" : "device");
    /* the outputs it computes: all of the model's, or those opts.outputs named */
    ffu_jw_key(w, "outputs"), ffu_jw_begin_array(w);
    for (int i = 0; i < s->m->g->noutputs; i++)
        ffu_jw_string(w, s->m->g->tensors[s->m->g->outputs[i]].name);
    ffu_jw_end_array(w);
    ffu_jw_key(w, "planned"), ffu_jw_bool(w, !s->dirty);
    if (!s->dirty) {
        ffu_jw_key(w, "threads_used"), ffu_jw_int(w, ffu_nn_session_threads_used(s));
        ffu_jw_key(w, "batch"), ffu_jw_int(w, s->batch_n);
        ffu_jw_key(w, "batch_mode"), ffu_jw_string(w, s->looped ? "looped" : "batched");
        if (s->looped) ffu_jw_key(w, "batch_why"), ffu_jw_string(w, s->batch_why);
        const nn_graph *g = s->g;
        ffu_jw_key(w, "peak_bytes"), ffu_jw_int(w, (int64_t)ffu_nn_session_peak_bytes(s));
        ffu_jw_key(w, "arena_bytes"), ffu_jw_int(w, (int64_t)s->stats.arena_bytes);
        ffu_jw_key(w, "io_bytes"), ffu_jw_int(w, (int64_t)s->stats.io_bytes);
        ffu_jw_key(w, "scratch_bytes"), ffu_jw_int(w, (int64_t)s->scratch_bytes);
        ffu_jw_key(w, "unshared_bytes"), ffu_jw_int(w, (int64_t)s->stats.naive_bytes);
        ffu_jw_key(w, "folded_nodes"), ffu_jw_int(w, s->nfolded);
        ffu_jw_key(w, "view_nodes"), ffu_jw_int(w, s->stats.nviews);
        ffu_jw_key(w, "inplace_nodes"), ffu_jw_int(w, s->stats.ninplace);
        /* memory spaces: device arena and uploaded weights, copies between spaces */
        size_t dev = 0;
        for (int sp = 1; sp < NN_SPACE_MAX; sp++) dev += s->stats.space_bytes[sp];
        ffu_jw_key(w, "device_arena_bytes"), ffu_jw_int(w, (int64_t)dev);
        ffu_jw_key(w, "device_weight_bytes"), ffu_jw_int(w, (int64_t)s->cbytes);
        ffu_jw_key(w, "copy_nodes"), ffu_jw_int(w, s->ncopies);
        /* nodes that read or write a size found at run time (planned for a bound) */
        ffu_jw_key(w, "run_time_sized_nodes"), ffu_jw_int(w, s->ntail);
        ffu_jw_key(w, "single_backend_plan"), ffu_jw_bool(w, s->exec_be != NULL);
        int reorders = 0, nbf16 = 0, nfp16 = 0, nwino = 0, nband = 0, nstrip = 0;
        for (int i = 0; i < g->nnodes; i++) {
            nn_backend *b = s->be[g->nodes[i].backend];
            const char *impl = NULL;
            int r = 0;
            if (!s->skip[i] && g->nodes[i].op != NN_OP_MEM_COPY && b->ops->node_info)
                b->ops->node_info(b, &g->nodes[i], &impl, &r);
            reorders += r;
            /* a backend marks a node that computes in bf16 or fp16 (backend.h) */
            nbf16 += impl && strncmp(impl, "bf16 ", 5) == 0;
            nfp16 += impl && strncmp(impl, "fp16 ", 5) == 0;
            nwino += impl && strstr(impl, "wino") != NULL; /* oneDNN's Winograd kernels */
            nband += impl && strncmp(impl, "band ", 5) == 0; /* cpu: band pipelines */
            nstrip += impl && strncmp(impl, "strip ", 6) == 0; /* cpu: thread strips */
        }
        ffu_jw_key(w, "reorders"), ffu_jw_int(w, reorders);
        ffu_jw_key(w, "bf16_nodes"), ffu_jw_int(w, nbf16);
        ffu_jw_key(w, "fp16_nodes"), ffu_jw_int(w, nfp16);
        ffu_jw_key(w, "winograd_nodes"), ffu_jw_int(w, nwino);
        ffu_jw_key(w, "band_nodes"), ffu_jw_int(w, nband);
        ffu_jw_key(w, "strip_nodes"), ffu_jw_int(w, nstrip);
        ffu_jw_key(w, "nodes_per_backend"), ffu_jw_begin_object(w);
        for (int b = 0; b < s->nbe; b++) {
            int cnt = 0;
            for (int i = 0; i < g->nnodes; i++)
                cnt += g->nodes[i].backend == b && !s->skip[i] && g->nodes[i].op != NN_OP_MEM_COPY;
            ffu_jw_key(w, s->be[b]->ops->name), ffu_jw_int(w, cnt);
        }
        ffu_jw_end_object(w);
        if (s->prof_runs) ffu_jw_key(w, "profiled_runs"), ffu_jw_int(w, s->prof_runs);
        /* each node's seconds, with what a backend ran inside another node's run given
         * to its own nodes (ops->profile) */
        double *sec = NULL;
        if (s->prof_runs && (sec = malloc(sizeof *sec * (size_t)(g->nnodes ? g->nnodes : 1)))) {
            memcpy(sec, s->node_sec, sizeof *sec * (size_t)g->nnodes);
            for (int i = 0; i < g->nnodes; i++) {
                nn_backend *b = s->be[g->nodes[i].backend];
                if (!s->skip[i] && b->ops->profile) b->ops->profile(b, g, &g->nodes[i], 0, sec);
            }
        }
        ffu_jw_key(w, "nodes"), ffu_jw_begin_array(w);
        for (int i = 0; i < g->nnodes; i++) {
            const nn_node *n = &g->nodes[i];
            char buf[96];
            const nn_tensor *o = nn_out(g, n, 0);
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "name"), ffu_jw_string(w, n->name);
            ffu_jw_key(w, "op"), ffu_jw_string(w, nn_op_name(n->op));
            int copy = n->op == NN_OP_MEM_COPY;
            ffu_jw_key(w, "backend"), ffu_jw_string(w, s->skip[i] == SKIP_VIEW    ? "view"
                                                       : s->skip[i] == SKIP_EMPTY ? "empty"
                                                       : copy                     ? "copy"
                                                              : s->be[n->backend]->ops->name);
            if (copy)
                ffu_jw_key(w, "impl"),
                    ffu_jw_string(w, nn_in(g, n, 0)->space == NN_SPACE_HOST ? "host->device"
                                                                            : "device->host");
            if (o) ffu_jw_key(w, "shape"), ffu_jw_string(w, nn_shape_str(&o->shape, buf, sizeof buf));
            /* the shape is the bound until a run, then the last run's */
            if (o && (o->flags & NN_T_BOUNDED)) ffu_jw_key(w, "bounded"), ffu_jw_bool(w, 1);
            nn_backend *b = s->be[n->backend];
            const char *impl = NULL;
            int r = 0;
            if (!s->skip[i] && !copy && b->ops->node_info) b->ops->node_info(b, n, &impl, &r);
            if (impl && *impl) ffu_jw_key(w, "impl"), ffu_jw_string(w, impl);
            if (r) ffu_jw_key(w, "reorders"), ffu_jw_int(w, r);
            int64_t flops = nn_node_flops(g, n);
            if (flops > 0) ffu_jw_key(w, "flops"), ffu_jw_int(w, flops);
            if (s->prof_runs && !s->skip[i]) /* views run nothing */
                ffu_jw_key(w, "ms"),
                    ffu_jw_number(w, 1e3 * (sec ? sec : s->node_sec)[i] / (double)s->prof_runs);
            ffu_jw_end_object(w);
        }
        ffu_jw_end_array(w);
        free(sec);
    }
    ffu_jw_end_object(w);
    return ffu_jw_status(w);
}
