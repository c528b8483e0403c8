/* Memory spaces of the engine, proven on the CPU: a fake "device" backend keeps its
 * memory in a space of its own (backend.h) the way the cuda backend keeps device
 * memory, and the session must plan around it exactly as it will for a GPU.
 *
 * The fake device is strict where a careless planner would get away with it on a CPU:
 *   - its memory is mmap'd PROT_NONE except while the fake itself works on it, so a
 *     host (ref) node handed a "device" pointer crashes the test;
 *   - run() and copy() check that every pointer is in the space they were told
 *     (device pointers in its regions, host pointers outside);
 *   - it is asynchronous like a CUDA stream: runs and copies are queued and done only
 *     at sync(), so a session that reads a copy's result on the host, or overwrites host
 *     memory a queued copy still reads, before syncing gets wrong numbers.
 * Results must equal a plain `ref` session bit for bit (the fake runs the same ref
 * kernels). The planned graph must hold a copy exactly where a value changes space:
 * one per value and space that needs it, none elsewhere. */
#include <sys/mman.h>
#include <unistd.h>

#include "nn/backend.h"
#include "nn/nn_internal.h"
#include "test.h"

/* ---- the fake device backend -------------------------------------------------------- */

#define FAKE_MAX_REGIONS 256
#define FAKE_MAX_QUEUE 4096

typedef struct fake_region {
    unsigned char *p;
    size_t len;
} fake_region;

typedef struct fake_job {
    const nn_graph *g;
    const nn_node *n; /* NULL: a copy */
    void *const *in, *const *out;
    void *scratch;
    void *dst;
    const void *src;
    size_t bytes;
} fake_job;

typedef struct fake_dev {
    nn_backend base;
    fake_region reg[FAKE_MAX_REGIONS];
    int nreg;
    fake_job q[FAKE_MAX_QUEUE];
    int nq;
    int violations;     /* pointers in the wrong space */
    int runs, copies_h2d, copies_d2h, copies_d2d, syncs, executes, set_streams;
    int in_execute, syncs_in_execute; /* CUDA refuses a sync while capturing a graph */
    nn_op refuse;                     /* with nclaims -1: the one op not claimed */
    uint64_t last_plan;
    int plans_seen;
    const nn_op *claims; /* ops it runs */
    int nclaims;
} fake_dev;

static int fake_owns(const fake_dev *f, const void *p)
{
    const unsigned char *c = p;
    for (int i = 0; i < f->nreg; i++)
        if (c >= f->reg[i].p && c < f->reg[i].p + f->reg[i].len) return 1;
    return 0;
}

static void fake_protect(fake_dev *f, int prot)
{
    for (int i = 0; i < f->nreg; i++) mprotect(f->reg[i].p, f->reg[i].len, prot);
}

static int fake_supports(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    fake_dev *f = (fake_dev *)b;
    for (int i = 0; i < f->nclaims; i++)
        if (f->claims[i] == n->op) return 1;
    return f->nclaims < 0 && n->op != f->refuse; /* -1: every op but one */
}

static ffu_status fake_prepare(nn_backend *b, nn_graph *g, nn_node *n)
{
    /* like a real device backend, prepare reads weights from host memory */
    for (int j = 0; j < n->ninputs; j++) {
        const nn_tensor *t = nn_in(g, n, j);
        if (t && (t->flags & NN_T_CONST) && t->nbytes && fake_owns((fake_dev *)b, t->data))
            ((fake_dev *)b)->violations++;
    }
    return FFU_OK;
}

static size_t fake_scratch(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    const nn_op_def *d = nn_op_get(n->op);
    return d && d->scratch_bytes ? d->scratch_bytes(g, n) : 0;
}

static int fake_push(fake_dev *f, fake_job j)
{
    if (f->nq >= FAKE_MAX_QUEUE) return -1;
    f->q[f->nq++] = j;
    return 0;
}

static ffu_status fake_run(nn_backend *b, const nn_graph *g, const nn_node *n, void *const *in,
                           void *const *out, void *scratch)
{
    fake_dev *f = (fake_dev *)b;
    for (int j = 0; j < n->ninputs; j++)
        if (in[j] && !fake_owns(f, in[j])) f->violations++;
    for (int j = 0; j < n->noutputs; j++)
        if (out[j] && !fake_owns(f, out[j])) f->violations++;
    if (scratch && !fake_owns(f, scratch)) f->violations++;
    f->runs++;
    fake_job jb = {.g = g, .n = n, .in = in, .out = out, .scratch = scratch};
    return fake_push(f, jb) < 0 ? ffu_error_set(FFU_ERR_INTERNAL, "fake queue full") : FFU_OK;
}

static void fake_release(nn_backend *b, nn_node *n) { n->priv = NULL; }

static ffu_status fake_alloc(nn_backend *b, size_t bytes, void **p)
{
    fake_dev *f = (fake_dev *)b;
    *p = NULL;
    if (f->nreg >= FAKE_MAX_REGIONS) return ffu_error_set(FFU_ERR_NOMEM, "fake: too many regions");
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (bytes + page - 1) / page * page;
    void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return ffu_error_set(FFU_ERR_NOMEM, "fake: mmap failed");
    f->reg[f->nreg++] = (fake_region){m, len};
    *p = m;
    return FFU_OK;
}

static void fake_free(nn_backend *b, void *p)
{
    fake_dev *f = (fake_dev *)b;
    for (int i = 0; p && i < f->nreg; i++)
        if (f->reg[i].p == p) {
            munmap(f->reg[i].p, f->reg[i].len);
            f->reg[i] = f->reg[--f->nreg];
            return;
        }
}

static ffu_status fake_copy(nn_backend *b, void *dst, int dst_space, const void *src,
                            int src_space, size_t bytes)
{
    fake_dev *f = (fake_dev *)b;
    if ((dst_space == b->space) != fake_owns(f, dst)) f->violations++;
    if ((src_space == b->space) != fake_owns(f, src)) f->violations++;
    if (dst_space == NN_SPACE_HOST && src_space == NN_SPACE_HOST) f->violations++;
    if (dst_space == NN_SPACE_HOST) f->copies_d2h++;
    else if (src_space == NN_SPACE_HOST) f->copies_h2d++;
    else f->copies_d2d++;
    fake_job jb = {.dst = dst, .src = src, .bytes = bytes};
    return fake_push(f, jb) < 0 ? ffu_error_set(FFU_ERR_INTERNAL, "fake queue full") : FFU_OK;
}

/* Does the queued work, in order, with the device memory accessible meanwhile. */
static ffu_status fake_sync(nn_backend *b)
{
    fake_dev *f = (fake_dev *)b;
    ffu_status st = FFU_OK;
    f->syncs++;
    f->syncs_in_execute += f->in_execute;
    fake_protect(f, PROT_READ | PROT_WRITE);
    for (int i = 0; i < f->nq && st == FFU_OK; i++) {
        fake_job *j = &f->q[i];
        if (j->n) st = nn_op_get(j->n->op)->run(j->g, j->n, j->in, j->out, j->scratch);
        else if (j->bytes) memcpy(j->dst, j->src, j->bytes);
    }
    f->nq = 0;
    fake_protect(f, PROT_NONE);
    return st;
}

static ffu_status fake_set_stream(nn_backend *b, void *stream)
{
    ((fake_dev *)b)->set_streams++;
    return FFU_OK;
}

static ffu_status fake_execute(nn_backend *b, uint64_t plan_id, ffu_status (*body)(void *),
                               void *ctx)
{
    fake_dev *f = (fake_dev *)b;
    f->executes++;
    if (plan_id != f->last_plan) f->plans_seen++, f->last_plan = plan_id;
    f->in_execute = 1;
    ffu_status st = body(ctx);
    f->in_execute = 0;
    return st;
}

static void fake_destroy(nn_backend *b)
{
    fake_dev *f = (fake_dev *)b;
    while (f->nreg) fake_free(b, f->reg[0].p);
    free(f);
}

static const nn_backend_ops fake_ops = {
    .name = "fakedev",
    .supports = fake_supports,
    .prepare = fake_prepare,
    .scratch_bytes = fake_scratch,
    .run = fake_run,
    .release = fake_release,
    .destroy = fake_destroy,
    .mem_alloc = fake_alloc,
    .mem_free = fake_free,
    .copy = fake_copy,
    .sync = fake_sync,
    .set_stream = fake_set_stream,
    .execute = fake_execute,
};

static fake_dev *fake_create(const nn_op *claims, int nclaims)
{
    fake_dev *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->base.ops = &fake_ops;
    f->base.threads = 1;
    f->base.space = NN_SPACE_DEVICE;
    f->claims = claims;
    f->nclaims = nclaims;
    return f;
}

/* ---- models --------------------------------------------------------------------------- */

static int add_const(nn_graph *g, const char *name, nn_shape s, uint64_t *seed, float scale)
{
    int64_t n = nn_shape_numel(&s);
    float *d = malloc((size_t)n * 4);
    if (!d) return -1;
    for (int64_t i = 0; i < n; i++) d[i] = (2 * test_rand_f(seed) - 1) * scale;
    int t = nn_graph_add_const(g, name, FFU_DTYPE_F32, &s, d, (size_t)n * 4, NN_COPY);
    free(d);
    return t;
}

static int add_node(nn_graph *g, nn_op op, const char *name, const int *in, int nin)
{
    char tn[64];
    snprintf(tn, sizeof tn, "%s_out", name);
    int o = nn_graph_add_tensor(g, tn, FFU_DTYPE_UNDEFINED, NULL);
    if (o < 0 || nn_graph_add_node(g, op, name, in, nin, &o, 1) < 0) return -1;
    return o;
}

/* x[1,3,9,11] -> conv1 (dev) -> sig (host) -> conv2 (dev) -> add(conv2, sig) (dev)
 * -> softmax (host) -> y1; sig -> y2 (a host output also read on the device);
 * add -> gap (dev) -> y3 (a device result that is a graph output);
 * x -> mul(x, x) (dev) -> y4, x -> neg (host) -> y5 (the input read in both spaces). */
static ffu_nn_model *mixed_model(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    uint64_t seed = 77;
    nn_shape xs = {.rank = 4, .d = {1, 3, 9, 11}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int c1in[3] = {x, add_const(g, "w1", (nn_shape){.rank = 4, .d = {4, 3, 3, 3}}, &seed, 0.5f),
                   add_const(g, "b1", (nn_shape){.rank = 1, .d = {4}}, &seed, 0.1f)};
    int c1 = add_node(g, NN_OP_CONV, "conv1", c1in, 3);
    int64_t p1[4] = {1, 1, 1, 1};
    nn_node_set_ints(g, g->nnodes - 1, "pads", p1, 4);
    int sig = add_node(g, NN_OP_ERF, "sig", &c1, 1);
    int c2in[3] = {sig, add_const(g, "w2", (nn_shape){.rank = 4, .d = {4, 4, 1, 1}}, &seed, 0.5f),
                   add_const(g, "b2", (nn_shape){.rank = 1, .d = {4}}, &seed, 0.1f)};
    int c2 = add_node(g, NN_OP_CONV, "conv2", c2in, 3);
    int addin[2] = {c2, sig};
    int add = add_node(g, NN_OP_ADD, "add", addin, 2);
    int sm = add_node(g, NN_OP_SOFTMAX, "softmax", &add, 1);
    nn_node_set_int(g, g->nnodes - 1, "axis", 1);
    int gap = add_node(g, NN_OP_GLOBAL_AVERAGE_POOL, "gap", &add, 1);
    int mulin[2] = {x, x};
    int mul = add_node(g, NN_OP_MUL, "mul", mulin, 2);
    int neg = add_node(g, NN_OP_NEG, "neg", &x, 1);
    nn_graph_mark_output(g, sm);
    nn_graph_mark_output(g, sig);
    nn_graph_mark_output(g, gap);
    nn_graph_mark_output(g, mul);
    nn_graph_mark_output(g, neg);
    ffu_nn_model *m = NULL;
    if (nn_model_from_graph(g, &m) < 0) fprintf(stderr, "%s\n", ffu_error_message());
    return m;
}

/* x -> conv (dev) -> relu (dev) -> add(relu, x) (dev) -> y: every node on the device. */
static ffu_nn_model *device_model(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    uint64_t seed = 99;
    nn_shape xs = {.rank = 4, .d = {1, 4, 7, 5}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int cin[3] = {x, add_const(g, "w", (nn_shape){.rank = 4, .d = {4, 4, 3, 3}}, &seed, 0.5f),
                  add_const(g, "b", (nn_shape){.rank = 1, .d = {4}}, &seed, 0.1f)};
    int c = add_node(g, NN_OP_CONV, "conv", cin, 3);
    int64_t p1[4] = {1, 1, 1, 1};
    nn_node_set_ints(g, g->nnodes - 1, "pads", p1, 4);
    int r = add_node(g, NN_OP_TANH, "tanh", &c, 1);
    int ain[2] = {r, x};
    int y = add_node(g, NN_OP_ADD, "add", ain, 2);
    nn_graph_mark_output(g, y);
    ffu_nn_model *m = NULL;
    if (nn_model_from_graph(g, &m) < 0) fprintf(stderr, "%s\n", ffu_error_message());
    return m;
}

static const nn_op dev_ops[] = {NN_OP_CONV, NN_OP_ADD, NN_OP_GLOBAL_AVERAGE_POOL, NN_OP_MUL,
                                NN_OP_TANH, NN_OP_RESHAPE, NN_OP_FLATTEN};

/* ---- checks on a planned graph ------------------------------------------------------ */

/* The space a node runs in, from its backend name in the session's plan. */
static int node_space(const nn_graph *g, const nn_node *n, const nn_op *claims, int nclaims)
{
    (void)g;
    for (int i = 0; i < nclaims; i++)
        if (claims[i] == n->op) return NN_SPACE_DEVICE;
    return NN_SPACE_HOST;
}

/* The value a tensor carries: follows copies back to where it was made. */
static int root_of(const nn_graph *g, int t)
{
    for (int guard = 0; guard < 64; guard++) {
        int p = g->tensors[t].producer;
        if (p < 0 || g->nodes[p].op != NN_OP_MEM_COPY) return t;
        t = g->nodes[p].inputs[0];
    }
    return t;
}

/* Checks the invariants of a planned graph; returns the copy count, -1 on a failure. */
static int check_plan(const nn_graph *g, int io_space)
{
    int copies = 0, expected = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        if (n->op == NN_OP_MEM_COPY) {
            const nn_tensor *a = nn_in(g, n, 0), *b = nn_out(g, n, 0);
            if (a->space == b->space) {
                fprintf(stderr, "copy '%s' within space %d\n", n->name, a->space);
                return -1;
            }
            copies++;
            continue;
        }
        int sp = node_space(g, n, dev_ops, (int)(sizeof dev_ops / sizeof dev_ops[0]));
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j < (pass ? n->noutputs : n->ninputs); j++) {
                int t = pass ? n->outputs[j] : n->inputs[j];
                if (t < 0 || (g->tensors[t].flags & NN_T_CONST)) continue;
                if (g->tensors[t].space != sp) {
                    fprintf(stderr, "node '%s' (space %d) touches '%s' in space %d\n", n->name,
                            sp, g->tensors[t].name, g->tensors[t].space);
                    return -1;
                }
            }
    }
    for (int k = 0; k < g->ninputs; k++)
        if (!(g->tensors[g->inputs[k]].flags & NN_T_CONST) &&
            g->tensors[g->inputs[k]].space != io_space)
            return -1;
    for (int k = 0; k < g->noutputs; k++)
        if (g->tensors[g->outputs[k]].space != io_space) return -1;
    /* expected copies, counted from the values: each value is needed in the spaces of
     * its readers (and io_space when it is a graph output); every such space but the
     * one it is made in needs exactly one copy */
    for (int t = 0; t < g->ntensors; t++) {
        const nn_tensor *x = &g->tensors[t];
        if ((x->flags & NN_T_CONST) || root_of(g, t) != t) continue;
        if (x->producer < 0 && !(x->flags & NN_T_INPUT)) continue;
        int made = x->producer >= 0
                       ? node_space(g, &g->nodes[x->producer], dev_ops,
                                    (int)(sizeof dev_ops / sizeof dev_ops[0]))
                       : io_space;
        int need[NN_SPACE_MAX] = {0};
        for (int i = 0; i < g->nnodes; i++) {
            const nn_node *n = &g->nodes[i];
            if (n->op == NN_OP_MEM_COPY) continue;
            for (int j = 0; j < n->ninputs; j++)
                if (n->inputs[j] >= 0 && root_of(g, n->inputs[j]) == t)
                    need[node_space(g, n, dev_ops, (int)(sizeof dev_ops / sizeof dev_ops[0]))] = 1;
        }
        for (int k = 0; k < g->noutputs; k++)
            if (root_of(g, g->outputs[k]) == t) need[io_space] = 1;
        need[made] = 0;
        for (int sp = 0; sp < NN_SPACE_MAX; sp++) expected += need[sp];
    }
    if (expected != copies) {
        fprintf(stderr, "%d copies planned, %d needed\n", copies, expected);
        return -1;
    }
    return copies;
}

static void fill_input(ffu_nn_session *s, uint64_t seed, fake_dev *f)
{
    ffu_nn_tensor t;
    if (ffu_nn_session_input(s, 0, &t) < 0) return;
    float *h = malloc(t.nbytes);
    for (size_t i = 0; i < t.nbytes / 4; i++) h[i] = 2 * test_rand_f(&seed) - 1;
    if (f && fake_owns(f, t.data)) { /* device I/O: upload like a GPU kernel would */
        fake_copy(&f->base, t.data, NN_SPACE_DEVICE, h, NN_SPACE_HOST, t.nbytes);
        fake_sync(&f->base);
    } else {
        memcpy(t.data, h, t.nbytes);
    }
    free(h);
}

/* Output i of s, copied to host memory (device I/O outputs are downloaded). */
static float *get_output(ffu_nn_session *s, int i, fake_dev *f, size_t *n)
{
    ffu_nn_tensor t;
    if (ffu_nn_session_output(s, i, &t) < 0) return NULL;
    float *h = malloc(t.nbytes ? t.nbytes : 1);
    if (f && fake_owns(f, t.data)) {
        fake_copy(&f->base, h, NN_SPACE_HOST, t.data, NN_SPACE_DEVICE, t.nbytes);
        fake_sync(&f->base);
    } else {
        memcpy(h, t.data, t.nbytes);
    }
    *n = t.nbytes / 4;
    return h;
}

static int same_outputs(ffu_nn_session *a, ffu_nn_session *b, int nout, fake_dev *fb)
{
    for (int i = 0; i < nout; i++) {
        size_t na = 0, nb = 0;
        float *x = get_output(a, i, NULL, &na), *y = get_output(b, i, fb, &nb);
        int ok = x && y && na == nb && na > 0 && memcmp(x, y, na * 4) == 0;
        if (!ok) fprintf(stderr, "output %d differs (%zu vs %zu values)\n", i, na, nb);
        free(x);
        free(y);
        if (!ok) return 0;
    }
    return 1;
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_mixed_plan(void)
{
    ffu_nn_model *m = mixed_model();
    CHECK(m);
    fake_dev *f = fake_create(dev_ops, (int)(sizeof dev_ops / sizeof dev_ops[0]));
    CHECK(f);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    ffu_nn_session *ref = NULL, *s = NULL;
    CHECK(ffu_nn_session_create(m, &o, &ref) == FFU_OK);
    CHECK(nn_session_create_with(m, &o, &f->base, &s) == FFU_OK);
    for (int round = 0; round < 3; round++) {
        fill_input(ref, 1000 + (uint64_t)round, NULL);
        fill_input(s, 1000 + (uint64_t)round, f);
        CHECK(ffu_nn_session_run(ref) == FFU_OK);
        int runs0 = f->runs;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(f->runs > runs0);
        CHECK_EQ_INT(f->nq, 0); /* a host-I/O run ends synchronised */
        CHECK(same_outputs(ref, s, 5, f));
    }
    const nn_graph *g = nn_session_graph(s);
    CHECK(g);
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        const char *sp = n->op == NN_OP_MEM_COPY ? (nn_in(g, n, 0)->space ? "d->h" : "h->d") : "";
        printf("  %-3d %-14s %-22s %s\n", i, nn_op_name(n->op), n->name, sp);
    }
    int copies = check_plan(g, NN_SPACE_HOST);
    printf("mixed plan: %d nodes, %d copies, %d h2d + %d d2h copies per run\n", g->nnodes,
           copies, f->copies_h2d / 3, f->copies_d2h / 3);
    CHECK(copies > 0);
    /* this graph needs: x up (conv1, mul), conv1 down (sig), sig up (conv2/add),
     * add... down (softmax), gap down (y3), mul down (y4) */
    CHECK(copies >= 6);
    CHECK_EQ_INT(f->violations, 0);
    /* the description counts them */
    ffu_jw *w = NULL;
    CHECK(ffu_jw_create(&w, 0) == FFU_OK);
    CHECK(ffu_nn_session_describe(s, w) == FFU_OK);
    const char *js = ffu_jw_text(w, NULL);
    char want[64];
    snprintf(want, sizeof want, "\"copy_nodes\":%d", copies);
    CHECK(js && strstr(js, want));
    CHECK(strstr(js, "\"fakedev\""));
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);
    ffu_nn_session_destroy(ref);
    ffu_nn_model_destroy(m);
}

/* Everything on the device, host I/O: two copies (in, out), the plan goes through
 * execute() (where cuda captures a graph), run_device queues without waiting. */
static void test_device_plan(void)
{
    ffu_nn_model *m = device_model();
    CHECK(m);
    fake_dev *f = fake_create(dev_ops, (int)(sizeof dev_ops / sizeof dev_ops[0]));
    CHECK(f);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    ffu_nn_session *ref = NULL, *s = NULL;
    CHECK(ffu_nn_session_create(m, &o, &ref) == FFU_OK);
    CHECK(nn_session_create_with(m, &o, &f->base, &s) == FFU_OK);
    fill_input(ref, 5, NULL);
    fill_input(s, 5, f);
    CHECK(ffu_nn_session_run(ref) == FFU_OK);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(same_outputs(ref, s, 1, f));
    const nn_graph *g = nn_session_graph(s);
    CHECK_EQ_INT(check_plan(g, NN_SPACE_HOST), 2);
    CHECK_EQ_INT(f->executes, 1);
    CHECK_EQ_INT(f->plans_seen, 1);
    CHECK_EQ_INT(f->syncs_in_execute, 0);
    /* asynchronous: queued on return, done by ffu_nn_session_sync */
    fill_input(s, 6, f);
    fill_input(ref, 6, NULL);
    CHECK(ffu_nn_session_run(ref) == FFU_OK);
    CHECK(ffu_nn_session_run_device(s, NULL) == FFU_OK);
    CHECK(f->nq > 0);
    CHECK(f->set_streams >= 1);
    CHECK(ffu_nn_session_sync(s) == FFU_OK);
    CHECK_EQ_INT(f->nq, 0);
    CHECK(same_outputs(ref, s, 1, f));
    /* a plain run after run_device syncs what is queued before the caller's buffers are
     * touched, and a new input shape is a new plan */
    CHECK(ffu_nn_session_run_device(s, NULL) == FFU_OK);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK_EQ_INT(f->nq, 0);
    int64_t d2[4] = {2, 4, 7, 5};
    CHECK(ffu_nn_session_set_input_shape(s, 0, 4, d2) == FFU_OK);
    CHECK(ffu_nn_session_set_input_shape(ref, 0, 4, d2) == FFU_OK);
    fill_input(s, 7, f);
    fill_input(ref, 7, NULL);
    CHECK(ffu_nn_session_run(ref) == FFU_OK);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(same_outputs(ref, s, 1, f));
    CHECK_EQ_INT(f->plans_seen, 2);
    CHECK_EQ_INT(f->violations, 0);
    ffu_nn_session_destroy(s);
    ffu_nn_session_destroy(ref);
    ffu_nn_model_destroy(m);
}

/* Device I/O: inputs and outputs in device memory, no copies at all for an all-device
 * plan; with a host node in the middle, only the copies around it. */
/* A ref session on m, and one on the fake device with device I/O computing `outputs`
 * (NULL: all). */
static void open_device_io(const ffu_nn_model *m, fake_dev *f, const char *const *outputs, int n,
                           ffu_nn_session **ref, ffu_nn_session **s)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    CHECK(ffu_nn_session_create(m, &o, ref) == FFU_OK);
    o.device_io = 1;
    o.outputs = outputs;
    o.noutputs = n;
    CHECK(nn_session_create_with(m, &o, &f->base, s) == FFU_OK);
}

static void test_device_io(void)
{
    for (int mixed = 0; mixed < 2; mixed++) {
        ffu_nn_model *m = mixed ? mixed_model() : device_model();
        CHECK(m);
        fake_dev *f = fake_create(dev_ops, (int)(sizeof dev_ops / sizeof dev_ops[0]));
        CHECK(f);
        ffu_nn_session *ref = NULL, *s = NULL;
        open_device_io(m, f, NULL, 0, &ref, &s);
        ffu_nn_tensor t;
        CHECK(ffu_nn_session_input(s, 0, &t) == FFU_OK);
        CHECK(fake_owns(f, t.data)); /* a device pointer */
        fill_input(ref, 11, NULL);
        fill_input(s, 11, f);
        CHECK(ffu_nn_session_run(ref) == FFU_OK);
        int h2d = f->copies_h2d, d2h = f->copies_d2h;
        CHECK(ffu_nn_session_run_device(s, NULL) == FFU_OK);
        CHECK(ffu_nn_session_sync(s) == FFU_OK);
        h2d = f->copies_h2d - h2d, d2h = f->copies_d2h - d2h; /* the run's own copies */
        int nout = ffu_nn_model_num_outputs(m);
        CHECK(same_outputs(ref, s, nout, f));
        const nn_graph *g = nn_session_graph(s);
        int copies = check_plan(g, NN_SPACE_DEVICE);
        printf("device I/O, %s model: %d copies\n", mixed ? "mixed" : "device", copies);
        if (!mixed) {
            CHECK_EQ_INT(copies, 0);
            CHECK_EQ_INT(h2d, 0);
            CHECK_EQ_INT(d2h, 0);
        } else {
            CHECK(copies > 0);
            CHECK_EQ_INT(h2d + d2h, copies);
        }
        CHECK_EQ_INT(f->violations, 0);
        ffu_nn_session_destroy(s);
        ffu_nn_session_destroy(ref);
        ffu_nn_model_destroy(m);
    }
}

/* A device-I/O session asked for two of the mixed model's five outputs (the device's
 * pooled sum and the host's Neg of the input): those equal ref's bit for bit, the others
 * read as not computed, and the plan still holds a copy exactly where a value changes
 * space (the Softmax and the Mul are gone, and with them what only they needed). */
static void test_device_io_some_outputs(void)
{
    ffu_nn_model *m = mixed_model();
    CHECK(m);
    fake_dev *f = fake_create(dev_ops, (int)(sizeof dev_ops / sizeof dev_ops[0]));
    CHECK(f);
    ffu_nn_tensor gap, neg;
    CHECK(ffu_nn_model_output(m, 2, &gap) == FFU_OK && ffu_nn_model_output(m, 4, &neg) == FFU_OK);
    const char *want[2] = {neg.name, gap.name};
    ffu_nn_session *ref = NULL, *s = NULL;
    open_device_io(m, f, want, 2, &ref, &s);
    fill_input(ref, 12, NULL);
    fill_input(s, 12, f);
    CHECK(ffu_nn_session_run(ref) == FFU_OK);
    CHECK(ffu_nn_session_run_device(s, NULL) == FFU_OK);
    CHECK(ffu_nn_session_sync(s) == FFU_OK);
    for (int i = 0; i < ffu_nn_model_num_outputs(m); i++) {
        if (i == 2 || i == 4) {
            size_t na = 0, nb = 0;
            float *x = get_output(ref, i, NULL, &na), *y = get_output(s, i, f, &nb);
            CHECK(x && y && na == nb && na > 0 && memcmp(x, y, na * 4) == 0);
            free(x);
            free(y);
        } else {
            ffu_nn_tensor t;
            CHECK(ffu_nn_session_output(s, i, &t) == FFU_ERR_INVALID);
        }
    }
    const nn_graph *g = nn_session_graph(s);
    CHECK(check_plan(g, NN_SPACE_DEVICE) >= 0);
    for (int i = 0; g && i < g->nnodes; i++)
        CHECK(g->nodes[i].op != NN_OP_SOFTMAX && g->nodes[i].op != NN_OP_MUL);
    CHECK_EQ_INT(f->violations, 0);
    ffu_nn_session_destroy(s);
    ffu_nn_session_destroy(ref);
    ffu_nn_model_destroy(m);
}

/* device_io and run_device need a device backend; cuda without a device is a clear
 * error, not a crash. */
static void test_errors(void)
{
    ffu_nn_model *m = device_model();
    CHECK(m);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "cpu";
    o.device_io = 1;
    ffu_nn_session *s = NULL;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_ERR_INVALID);
    CHECK(s == NULL);
    CHECK(strstr(ffu_error_message(), "device"));
    o.device_io = 0;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    CHECK(ffu_nn_session_run_device(s, NULL) == FFU_ERR_INVALID);
    CHECK(ffu_nn_session_sync(s) == FFU_OK);
    ffu_nn_session_destroy(s);
    o.backend = "cuda";
    ffu_status st = ffu_nn_session_create(m, &o, &s);
    if (st == FFU_OK) { /* a machine with a GPU: the cuda tests cover it */
        ffu_nn_session_destroy(s);
    } else {
        printf("cuda here: %s\n", ffu_error_message());
        CHECK(st == FFU_ERR_DEVICE || st == FFU_ERR_UNSUPPORTED);
        CHECK(strstr(ffu_error_message(), "CUDA"));
        CHECK(s == NULL);
    }
    o.backend = "tpu";
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_ERR_INVALID);
    ffu_nn_model_destroy(m);
}

/* neg(Sum(x, x, neg(x))): the planner may put Sum's output in place of neg(x) (it dies there),
 * but the fold (ref's and the cuda kernel's) writes x + x into the output before it reads
 * the third input: an in-place third input would give 4x. Only inputs 0 and 1 of a
 * variadic op may share the output (plan.c); x + x - x = x exactly. */
static void test_variadic_not_in_place(void)
{
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    nn_shape xs = {.rank = 2, .d = {3, 50}};
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &xs);
    nn_graph_mark_input(g, x);
    int c = add_node(g, NN_OP_NEG, "neg", &x, 1);
    int sin[3] = {x, x, c};
    int y = add_node(g, NN_OP_SUM, "sum", sin, 3);
    int z = add_node(g, NN_OP_NEG, "neg2", &y, 1); /* y itself must not be an output */
    CHECK(c >= 0 && y >= 0 && z >= 0);
    nn_graph_mark_output(g, z);
    ffu_nn_model *m = NULL;
    CHECK(nn_model_from_graph(g, &m) == FFU_OK);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    ffu_nn_session *s = NULL;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    ffu_nn_tensor in, out;
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    uint64_t seed = 5;
    for (int i = 0; i < 150; i++) ((float *)in.data)[i] = 2 * test_rand_f(&seed) - 1;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    int bad = 0;
    for (int i = 0; i < 150; i++) {
        float v = ((const float *)in.data)[i];
        bad += ((const float *)out.data)[i] != -((v + v) + -v);
    }
    CHECK_EQ_INT(bad, 0);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

/* Real models, three runs each (eager, captured, replayed), host and device I/O. Wholly
 * on the device, the plan goes through execute(), where nothing may wait for the device
 * (CUDA refuses a sync while it captures a graph). With one op left to the host, a
 * mixed plan, it must not go through execute() at all: a host node there waits for the
 * device. (On the first GPU check, 2026-12-04, every mixed plan whose last nodes ran on
 * the device went through execute(), and its graph capture failed.) */
static void test_real_models_execute(void)
{
    static const char *const files[] = {"models/mobilefacenet_insightface_pytorch.onnx",
                                        "models/face_detection_yunet_2023mar.onnx"};
    static const nn_op host_ops[] = {NN_OP_CONV, NN_OP_SIGMOID};
    int ran = 0;
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char path[512];
        if (!test_shared_path(files[k], path, sizeof path)) continue;
        ffu_nn_model *m = NULL;
        CHECK(ffu_nn_model_load(path, &m) == FFU_OK);
        for (int mixed = 0; mixed < 2; mixed++)
            for (int dio = 0; dio < 2; dio++) {
                fake_dev *f = fake_create(NULL, -1);
                CHECK(f);
                f->refuse = mixed ? host_ops[k] : NN_OP_COUNT;
                ffu_nn_session_opts o;
                ffu_nn_session_opts_default(&o);
                o.device_io = dio;
                ffu_nn_session *s = NULL;
                CHECK(nn_session_create_with(m, &o, &f->base, &s) == FFU_OK);
                for (int r = 0; r < 3; r++)
                    CHECK((dio ? ffu_nn_session_run_device(s, NULL) : ffu_nn_session_run(s)) ==
                          FFU_OK);
                CHECK(ffu_nn_session_sync(s) == FFU_OK);
                CHECK_EQ_INT(f->executes, mixed ? 0 : 3);
                CHECK_EQ_INT(f->syncs_in_execute, 0);
                CHECK_EQ_INT(f->violations, 0);
                ffu_nn_session_destroy(s);
            }
        ffu_nn_model_destroy(m);
        ran++;
    }
    if (!ran) TEST_SKIP("no MobileFaceNet or YuNet 2023mar in ../shared/models");
}

TEST_MAIN(test_mixed_plan, test_device_plan, test_device_io, test_device_io_some_outputs,
          test_errors, test_variadic_not_in_place, test_real_models_execute)
