/* Sessions (src/nn/session.c) end to end: hand-built graphs run on the ref backend and
 * give the right numbers; inputs are planned per shape (dynamic batch, explicit
 * shapes, concrete errors); a session asked for some outputs computes only those;
 * constant chains fold at plan time; and after the first run
 * a session allocates nothing -- counted with a malloc wrapper in plain builds (the
 * sanitizer builds own malloc, so there the test checks that the buffers and plan do
 * not move). With ../shared/models present, real models run: MobileFaceNet gives a
 * finite 128-d embedding and UltraFace's Shape -> Gather chains fold away. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "test.h"

#include "nn/backend.h"
#include "nn/nn_internal.h"

/* ---- malloc counting -------------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_MALLOC 0
#endif
#endif
#ifndef COUNT_MALLOC
#define COUNT_MALLOC 1
#endif

static atomic_int counting;
static atomic_long allocations;      /* every allocation while counting */
static atomic_long own_allocations;  /* those made by facefuse code (this executable) */
static void *_Atomic first_caller;   /* who allocated first while counting */

#if COUNT_MALLOC
/* glibc's own entry points; every allocation of this process goes through ours. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
/* the executable's code, which holds the statically linked library */
extern char __executable_start[], etext[];

#define note()                                                                           \
    do {                                                                                 \
        if (atomic_load_explicit(&counting, memory_order_relaxed)) {                     \
            char *caller_ = __builtin_return_address(0);                                 \
            if (atomic_fetch_add(&allocations, 1) == 0) atomic_store(&first_caller, caller_); \
            if (caller_ >= __executable_start && caller_ < etext)                        \
                atomic_fetch_add(&own_allocations, 1);                                   \
        }                                                                                \
    } while (0)
void *malloc(size_t n)
{
    note();
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    note();
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    note();
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t al, size_t n)
{
    note();
    return __libc_memalign(al, n);
}
void *memalign(size_t al, size_t n)
{
    note();
    return __libc_memalign(al, n);
}
int posix_memalign(void **out, size_t al, size_t n)
{
    note();
    void *p = __libc_memalign(al, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
void free(void *p) { __libc_free(p); }
#endif

/* ---- helpers -------------------------------------------------------------------------- */

static int tensor(nn_graph *g, const char *name, int rank, const int64_t *d)
{
    nn_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.d[i] = d[i];
    return nn_graph_add_tensor(g, name, FFU_DTYPE_F32, &s);
}

static int node(nn_graph *g, nn_op op, const int *in, int nin, int out)
{
    return nn_graph_add_node(g, op, "", in, nin, &out, 1);
}

/* y = relu(relu(x) + c) - chain of n Relu on the way, x: [?, 4] with a dynamic batch */
static ffu_nn_model *chain_model(int n)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    int64_t d[2] = {-1, 4};
    int x = tensor(g, "x", 2, d);
    nn_graph_mark_input(g, x);
    float cv[4] = {1, -2, 3, -4};
    nn_shape cs = {.rank = 1, .d = {4}};
    int c = nn_graph_add_const(g, "c", FFU_DTYPE_F32, &cs, cv, sizeof cv, NN_COPY);
    int t = x;
    for (int i = 0; i < n; i++) {
        int o = tensor(g, "", -1, NULL);
        g->tensors[o].shape.rank = -1;
        node(g, NN_OP_RELU, &t, 1, o);
        t = o;
    }
    int s = tensor(g, "", 0, NULL);
    g->tensors[s].shape.rank = -1;
    int in[2] = {t, c};
    node(g, NN_OP_ADD, in, 2, s);
    int y = tensor(g, "y", 0, NULL);
    g->tensors[y].shape.rank = -1;
    node(g, NN_OP_RELU, &s, 1, y);
    nn_graph_mark_output(g, y);
    ffu_nn_model *m;
    return nn_model_from_graph(g, &m) == FFU_OK ? m : NULL;
}

static float ref_chain(float x, float c) { return fmaxf(fmaxf(x, 0) + c, 0); }

/* ---- tests ------------------------------------------------------------------------------ */

static void test_chain_runs(void)
{
    if (!nn_op_get(NN_OP_RELU) || !nn_op_get(NN_OP_ADD)) TEST_SKIP("Relu/Add not implemented");
    ffu_nn_model *m = chain_model(5);
    CHECK(m);
    CHECK_EQ_INT(ffu_nn_model_num_inputs(m), 1);
    CHECK_EQ_INT(ffu_nn_model_num_outputs(m), 1);
    CHECK_EQ_INT(ffu_nn_model_find_input(m, "x"), 0);
    CHECK_EQ_INT(ffu_nn_model_find_output(m, "y"), 0);
    CHECK_EQ_INT(ffu_nn_model_find_input(m, "nope"), -1);
    ffu_nn_tensor info;
    CHECK(ffu_nn_model_input(m, 0, &info) == FFU_OK);
    CHECK_EQ_INT(info.rank, 2);
    CHECK_EQ_INT(info.dims[0], -1);

    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    o.batch = 3;
    ffu_nn_session *s;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    ffu_nn_tensor in, out;
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    CHECK_EQ_INT(in.rank, 2);
    CHECK_EQ_INT(in.dims[0], 3); /* the dynamic batch */
    CHECK_EQ_INT(in.nbytes, 3 * 4 * sizeof(float));
    float *x = in.data;
    const float c[4] = {1, -2, 3, -4};
    for (int i = 0; i < 12; i++) x[i] = (float)(i - 6) * 0.75f;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 3);
    CHECK_EQ_INT(out.dims[1], 4);
    const float *y = out.data;
    for (int i = 0; i < 12; i++) CHECK_NEAR(y[i], ref_chain(x[i], c[i % 4]), 1e-6);
    /* the input was not overwritten by the in-place chain */
    for (int i = 0; i < 12; i++) CHECK_NEAR(x[i], (float)(i - 6) * 0.75f, 0);
    CHECK(ffu_nn_session_peak_bytes(s) > 0);
    /* a chain of same-size ops fits in the dedicated in/out plus one working buffer */
    CHECK(ffu_nn_session_peak_bytes(s) <= 3 * 64);

    /* a new shape re-plans */
    int64_t d[2] = {5, 4};
    CHECK(ffu_nn_session_set_input_shape(s, 0, 2, d) == FFU_OK);
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    CHECK_EQ_INT(in.dims[0], 5);
    x = in.data;
    for (int i = 0; i < 20; i++) x[i] = (float)(i % 7) - 3;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.dims[0], 5);
    y = out.data;
    for (int i = 0; i < 20; i++) CHECK_NEAR(y[i], ref_chain(x[i], c[i % 4]), 1e-6);

    /* bad shapes are refused with a reason */
    int64_t bad[2] = {5, 3};
    CHECK(ffu_nn_session_set_input_shape(s, 0, 2, bad) == FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "fixed at 4") != NULL);
    CHECK(ffu_nn_session_set_input_shape(s, 0, 3, bad) == FFU_ERR_INVALID);
    CHECK(ffu_nn_session_set_input_shape(s, 1, 2, d) == FFU_ERR_INVALID);

    ffu_jw *w;
    CHECK(ffu_jw_create(&w, 0) == FFU_OK);
    CHECK(ffu_nn_session_describe(s, w) == FFU_OK);
    const char *txt = ffu_jw_text(w, NULL);
    CHECK(txt && strstr(txt, "\"backend\":\"ref\""));
    CHECK(strstr(txt, "\"peak_bytes\""));
    ffu_jw_reset(w);
    CHECK(ffu_nn_model_describe(m, w) == FFU_OK);
    txt = ffu_jw_text(w, NULL);
    /* rewrites may merge the Relu chain and fuse the last one into the Add */
    CHECK(txt && strstr(txt, "\"Relu\":") && strstr(txt, "\"Add\":1"));
    CHECK(strstr(txt, "\"param_bytes\":16"));
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);

    /* free_dims lets the declared 4 change; this graph's [4] constant really needs it,
     * so the plan refuses with a reason instead of computing garbage */
    o.free_dims = 1;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    CHECK(ffu_nn_session_set_input_shape(s, 0, 2, bad) == FFU_OK);
    CHECK(ffu_nn_session_input(s, 0, &in) < 0);
    CHECK(ffu_error_message()[0] != 0);
    CHECK(ffu_nn_session_set_input_shape(s, 0, 2, d) == FFU_OK); /* back to 4: runs */
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
    ffu_nn_session_destroy(NULL);
    ffu_nn_model_destroy(NULL);
}

/* x: [?, 4] -> Relu -> a, and x -> Sigmoid -> Neg -> b: two outputs on separate branches */
static ffu_nn_model *two_heads_model(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    int64_t d[2] = {-1, 4};
    int x = tensor(g, "x", 2, d);
    nn_graph_mark_input(g, x);
    int a = tensor(g, "a", -1, NULL), s = tensor(g, "", -1, NULL), b = tensor(g, "b", -1, NULL);
    node(g, NN_OP_RELU, &x, 1, a);
    node(g, NN_OP_SIGMOID, &x, 1, s);
    node(g, NN_OP_NEG, &s, 1, b);
    nn_graph_mark_output(g, a);
    nn_graph_mark_output(g, b);
    ffu_nn_model *m;
    return nn_model_from_graph(g, &m) == FFU_OK ? m : NULL;
}

static int plan_has_op(const ffu_nn_session *s, nn_op op)
{
    const nn_graph *g = nn_session_graph(s);
    for (int i = 0; g && i < g->nnodes; i++)
        if (g->nodes[i].op == op) return 1;
    return 0;
}

/* opts.outputs: only the asked outputs are computed, the others' nodes are not planned,
 * and the model's output indices stay as they are. */
static void test_output_subset(void)
{
    if (!nn_op_get(NN_OP_RELU) || !nn_op_get(NN_OP_SIGMOID) || !nn_op_get(NN_OP_NEG))
        TEST_SKIP("Relu/Sigmoid/Neg not implemented");
    ffu_nn_model *m = two_heads_model();
    CHECK(m);
    CHECK_EQ_INT(ffu_nn_model_num_outputs(m), 2);
    const char *backends[2] = {"ref", "cpu"};
    for (int k = 0; k < 2; k++) {
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = backends[k];
        o.batch = 2;
        const char *want[1] = {"b"};
        o.outputs = want;
        o.noutputs = 1;
        ffu_nn_session *s;
        ffu_status st = ffu_nn_session_create(m, &o, &s);
        if (st == FFU_ERR_UNSUPPORTED && k == 1) break; /* built without oneDNN */
        CHECK(st == FFU_OK);
        ffu_nn_tensor in, out;
        CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
        float *x = in.data;
        for (int i = 0; i < 8; i++)
            x[i] = (float)i - 3.5f;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 1, &out) == FFU_OK);
        CHECK(!strcmp(out.name, "b"));
        CHECK_EQ_INT(out.dims[0], 2);
        for (int i = 0; i < 8; i++)
            CHECK_NEAR(((const float *)out.data)[i], -1 / (1 + expf(3.5f - (float)i)), 1e-6);
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_ERR_INVALID);
        CHECK(strstr(ffu_error_message(), "'a'") != NULL);
        CHECK(ffu_nn_session_output(s, 2, &out) == FFU_ERR_INVALID);
        CHECK(!plan_has_op(s, NN_OP_RELU));
        CHECK(plan_has_op(s, NN_OP_SIGMOID) || plan_has_op(s, NN_OP_NEG));
        ffu_nn_session_destroy(s);

        /* both named, in any order: the whole model */
        const char *both[2] = {"b", "a"};
        o.outputs = both;
        o.noutputs = 2;
        CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
        CHECK(!strcmp(out.name, "a"));
        CHECK(plan_has_op(s, NN_OP_RELU));
        ffu_nn_session_destroy(s);

        const char *bad[1] = {"c"};
        o.outputs = bad;
        o.noutputs = 1;
        CHECK(ffu_nn_session_create(m, &o, &s) == FFU_ERR_NOT_FOUND);
        CHECK(strstr(ffu_error_message(), "'c'") != NULL);
        o.noutputs = -1;
        CHECK(ffu_nn_session_create(m, &o, &s) == FFU_ERR_INVALID);
    }
    ffu_nn_model_destroy(m);
}

/* free_dims and Reshapes whose constant target was computed for the declared size
 * (BlazeFace's heads): the model notes each one's declared shapes at load, and a plan at
 * another size re-derives the target where that is unambiguous (nn_reshape_rederive),
 * and refuses, naming the node, where it is not. */
static void test_free_dims_reshape(void)
{
    int64_t t[4];
    /* the rule alone: a merge and an inner split, trailing 1s, a batch */
    const int64_t s0[4] = {1, 16, 16, 32}, t0[3] = {1, 512, 16}, s1[4] = {1, 12, 16, 32};
    CHECK(nn_reshape_rederive(s0, s1, 4, t0, 3, t) == 1);
    CHECK(t[0] == 1 && t[1] == 384 && t[2] == 16);
    const int64_t c0[4] = {1, 16, 16, 2}, ct[3] = {1, 512, 1}, c1[4] = {1, 16, 12, 2};
    CHECK(nn_reshape_rederive(c0, c1, 4, ct, 3, t) == 1);
    CHECK(t[0] == 1 && t[1] == 384 && t[2] == 1);
    const int64_t b1[4] = {3, 12, 16, 32};
    CHECK(nn_reshape_rederive(s0, b1, 4, t0, 3, t) == 1);
    CHECK(t[0] == 3 && t[1] == 384 && t[2] == 16);
    /* ambiguous: a changed dim split in two, a changed innermost dim under a split */
    const int64_t p0[3] = {1, 16, 8}, pt[4] = {1, 4, 4, 8}, p1[3] = {1, 12, 8};
    CHECK(nn_reshape_rederive(p0, p1, 3, pt, 4, t) == 0);
    const int64_t i1[4] = {1, 16, 16, 24};
    CHECK(nn_reshape_rederive(s0, i1, 4, t0, 3, t) == 0);

    /* in a model: x [1,4,4,8] -> relu -> reshape to [1,32,4] and to [1,4,32] */
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t dx[4] = {1, 4, 4, 8};
    int x = tensor(g, "x", 4, dx);
    nn_graph_mark_input(g, x);
    int r = tensor(g, "r", 4, dx);
    node(g, NN_OP_RELU, &x, 1, r);
    const int64_t tv[2][3] = {{1, 32, 4}, {1, 4, 32}};
    nn_shape ts = {.rank = 1, .d = {3}};
    for (int k = 0; k < 2; k++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", k);
        int c = nn_graph_add_const(g, name, FFU_DTYPE_I64, &ts, tv[k], sizeof tv[k], NN_COPY);
        snprintf(name, sizeof name, "y%d", k);
        int y = tensor(g, name, 3, tv[k]);
        int in[2] = {r, c};
        node(g, NN_OP_RESHAPE, in, 2, y);
        nn_graph_mark_output(g, y);
    }
    ffu_nn_model *m;
    CHECK(nn_model_from_graph(g, &m) == FFU_OK);
    for (int b = 0; b < 2; b++) {
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = b ? "cpu" : "ref";
        o.free_dims = 1;
        ffu_nn_session *s;
        CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
        int64_t d[4] = {1, 3, 4, 8}; /* three rows */
        CHECK(ffu_nn_session_set_input_shape(s, 0, 4, d) == FFU_OK);
        ffu_nn_tensor in, y0, y1;
        CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
        float *xv = in.data;
        for (int i = 0; i < 96; i++) xv[i] = (float)(i % 11) - 4;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &y0) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 1, &y1) == FFU_OK);
        CHECK(y0.rank == 3 && y0.dims[0] == 1 && y0.dims[1] == 24 && y0.dims[2] == 4);
        CHECK(y1.rank == 3 && y1.dims[0] == 1 && y1.dims[1] == 3 && y1.dims[2] == 32);
        for (int i = 0; i < 96; i++) {
            CHECK_NEAR(((float *)y0.data)[i], fmaxf(xv[i], 0), 0);
            CHECK_NEAR(((float *)y1.data)[i], fmaxf(xv[i], 0), 0);
        }
        /* six channels: [1,32,4] split the changed innermost dim, so nothing says
         * which target dim should change */
        int64_t d6[4] = {1, 4, 4, 6};
        CHECK(ffu_nn_session_set_input_shape(s, 0, 4, d6) == FFU_OK);
        CHECK(ffu_nn_session_input(s, 0, &in) < 0);
        CHECK(strstr(ffu_error_message(), "Reshape") != NULL);
        ffu_nn_session_destroy(s);
    }
    ffu_nn_model_destroy(m);
}

/* After the first run, runs allocate nothing and the plan does not move. */
static void test_no_allocation_after_first_run(void)
{
    if (!nn_op_get(NN_OP_RELU) || !nn_op_get(NN_OP_ADD)) TEST_SKIP("Relu/Add not implemented");
    ffu_nn_model *m = chain_model(20);
    CHECK(m);
    const char *backends[2] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = backends[b];
        o.threads = 1;
        o.batch = 64;
        ffu_nn_session *s;
        CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
        ffu_nn_tensor in, out, in2, out2;
        CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
        for (size_t i = 0; i < in.nbytes / 4; i++) ((float *)in.data)[i] = (float)i - 100;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
        size_t peak = ffu_nn_session_peak_bytes(s);
        atomic_store(&allocations, 0);
        atomic_store(&own_allocations, 0);
        atomic_store(&counting, 1);
        ffu_status st = FFU_OK;
        for (int r = 0; r < 50 && st == FFU_OK; r++) st = ffu_nn_session_run(s);
        atomic_store(&counting, 0);
        CHECK(st == FFU_OK);
        long all = atomic_load(&allocations), own = atomic_load(&own_allocations);
        if (COUNT_MALLOC && all != 0) {
            Dl_info di = {0};
            void *caller = atomic_load(&first_caller);
            dladdr(caller, &di);
            fprintf(stderr,
                    "backend %s: %ld allocations in 50 runs, %ld by facefuse code; the first "
                    "from %p (%s in %s)\n",
                    backends[b], all, own, caller, di.dli_sname ? di.dli_sname : "?",
                    di.dli_fname ? di.dli_fname : "?");
        }
        /* our code never allocates per run; on ref nothing else runs, so nothing at all
         * may allocate. oneDNN's dnnl_primitive_execute builds a C++ argument map per
         * call (operator new inside libdnnl), which only that library can change. */
        CHECK_EQ_INT(own, 0);
        if (b == 0) CHECK_EQ_INT(all, 0);
        CHECK(ffu_nn_session_input(s, 0, &in2) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &out2) == FFU_OK);
        CHECK(in2.data == in.data && out2.data == out.data);
        CHECK_EQ_INT(ffu_nn_session_peak_bytes(s), peak);
        const float *y = out.data;
        const float c[4] = {1, -2, 3, -4};
        for (int i = 0; i < 256; i++) CHECK_NEAR(y[i], ref_chain((float)i - 100, c[i % 4]), 1e-5);
        ffu_nn_session_destroy(s);
    }
    ffu_nn_model_destroy(m);
}

/* Non-batch dynamic dims need set_input_shape; the error names input and dim. */
static void test_dynamic_dims_need_shapes(void)
{
    if (!nn_op_get(NN_OP_RELU)) TEST_SKIP("Relu is not implemented yet");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t d[3] = {-1, 3, -1};
    int x = tensor(g, "pixels", 3, d);
    nn_graph_mark_input(g, x);
    int y = tensor(g, "y", 3, d);
    node(g, NN_OP_RELU, &x, 1, y);
    nn_graph_mark_output(g, y);
    ffu_nn_model *m;
    CHECK(nn_model_from_graph(g, &m) == FFU_OK);
    ffu_nn_session *s;
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    CHECK(ffu_nn_session_run(s) == FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "input 'pixels' needs a fixed shape: dim 2 is dynamic"));
    int64_t fix[3] = {2, 3, 7};
    CHECK(ffu_nn_session_set_input_shape(s, 0, 3, fix) == FFU_OK);
    ffu_nn_tensor in;
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    CHECK_EQ_INT(in.nbytes, 2 * 3 * 7 * 4);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    ffu_nn_session_destroy(s);
    /* unknown backends are refused */
    o.backend = "tpu";
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_ERR_INVALID);
    CHECK(s == NULL);
    ffu_nn_model_destroy(m);
}

/* Shape -> Gather -> Unsqueeze -> Concat -> Reshape resolves to a constant at plan
 * time; only the data-moving Reshape (a view) and the Relu remain. */
static void test_shape_chain_folds(void)
{
    nn_op need[] = {NN_OP_SHAPE, NN_OP_GATHER, NN_OP_UNSQUEEZE, NN_OP_CONCAT, NN_OP_RESHAPE,
                    NN_OP_RELU};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!nn_op_get(need[i])) TEST_SKIP("Shape/Gather/Unsqueeze/Concat/Reshape not all implemented");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t d[4] = {-1, 2, 3, 5};
    int x = tensor(g, "x", 4, d);
    nn_graph_mark_input(g, x);
    nn_shape i64v = {.rank = 1, .d = {-1}}, scal = {.rank = 0};
    int shp = nn_graph_add_tensor(g, "shp", FFU_DTYPE_I64, &i64v);
    nn_graph_add_node(g, NN_OP_SHAPE, "shape", &x, 1, &shp, 1);
    int64_t zero = 0, minus1 = -1;
    int idx0 = nn_graph_add_const(g, "zero", FFU_DTYPE_I64, &scal, &zero, 8, NN_COPY);
    int gin[2] = {shp, idx0};
    int batch = nn_graph_add_tensor(g, "batch", FFU_DTYPE_I64, NULL);
    nn_graph_add_node(g, NN_OP_GATHER, "gather", gin, 2, &batch, 1);
    nn_shape one = {.rank = 1, .d = {1}};
    int axes = nn_graph_add_const(g, "axes", FFU_DTYPE_I64, &one, &zero, 8, NN_COPY);
    int uin[2] = {batch, axes};
    int b1 = nn_graph_add_tensor(g, "b1", FFU_DTYPE_I64, NULL);
    nn_graph_add_node(g, NN_OP_UNSQUEEZE, "unsq", uin, 2, &b1, 1);
    int m1 = nn_graph_add_const(g, "m1", FFU_DTYPE_I64, &one, &minus1, 8, NN_COPY);
    int cin[2] = {b1, m1};
    int newshape = nn_graph_add_tensor(g, "newshape", FFU_DTYPE_I64, NULL);
    int cn = nn_graph_add_node(g, NN_OP_CONCAT, "concat", cin, 2, &newshape, 1);
    nn_node_set_int(g, cn, "axis", 0);
    int rin[2] = {x, newshape};
    int flat = nn_graph_add_tensor(g, "flat", FFU_DTYPE_F32, NULL);
    nn_graph_add_node(g, NN_OP_RESHAPE, "reshape", rin, 2, &flat, 1);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_F32, NULL);
    nn_graph_add_node(g, NN_OP_RELU, "relu", &flat, 1, &y, 1);
    nn_graph_mark_output(g, y);
    ffu_nn_model *m;
    CHECK(nn_model_from_graph(g, &m) == FFU_OK);
    ffu_nn_session *s;
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    o.batch = 2;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    ffu_nn_tensor in, out;
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    for (int i = 0; i < 60; i++) ((float *)in.data)[i] = (float)(i - 30);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 30);
    for (int i = 0; i < 60; i++) CHECK_NEAR(((float *)out.data)[i], fmaxf((float)(i - 30), 0), 0);
    ffu_jw *w;
    CHECK(ffu_jw_create(&w, 0) == FFU_OK);
    CHECK(ffu_nn_session_describe(s, w) == FFU_OK);
    const char *txt = ffu_jw_text(w, NULL);
    CHECK(strstr(txt, "\"folded_nodes\":4"));
    CHECK(!strstr(txt, "\"op\":\"Shape\"") && !strstr(txt, "\"op\":\"Gather\""));
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

/* Load passes: Identity nodes go, dead branches go, graph outputs stay. */
static void test_load_passes(void)
{
    if (!nn_op_get(NN_OP_RELU) || !nn_op_get(NN_OP_IDENTITY)) TEST_SKIP("Relu/Identity missing");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t d[1] = {8};
    int x = tensor(g, "x", 1, d);
    nn_graph_mark_input(g, x);
    int a = tensor(g, "a", 1, d), b = tensor(g, "b", 1, d), dead = tensor(g, "dead", 1, d);
    int y = tensor(g, "y", 1, d);
    node(g, NN_OP_IDENTITY, &x, 1, a);
    node(g, NN_OP_RELU, &a, 1, b);
    node(g, NN_OP_RELU, &a, 1, dead);
    node(g, NN_OP_IDENTITY, &b, 1, y);
    nn_graph_mark_output(g, y);
    ffu_nn_model *m;
    CHECK(nn_model_from_graph(g, &m) == FFU_OK);
    CHECK_EQ_INT(m->g->nnodes, 1);
    CHECK_EQ_INT(m->g->nodes[0].op, NN_OP_RELU);
    CHECK_EQ_INT(m->g->nodes[0].inputs[0], x);
    CHECK_EQ_INT(m->g->nodes[0].outputs[0], y);
    ffu_nn_model_destroy(m);
}


/* A shape fed as a graph input (Reshape's shape): the session binds the small integer
 * input, plans at run time with its value, and re-plans only when the value changes. */
static void test_value_bound_inputs(void)
{
    if (!nn_op_get(NN_OP_RESHAPE) || !nn_op_get(NN_OP_RELU)) TEST_SKIP("Reshape/Relu missing");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t d[2] = {3, 4};
    int x = tensor(g, "x", 2, d);
    nn_shape sv = {.rank = 1, .d = {2}};
    int shp = nn_graph_add_tensor(g, "shape", FFU_DTYPE_I64, &sv);
    nn_graph_mark_input(g, x);
    nn_graph_mark_input(g, shp);
    int r = nn_graph_add_tensor(g, "r", FFU_DTYPE_F32, NULL);
    int in[2] = {x, shp};
    nn_graph_add_node(g, NN_OP_RESHAPE, "reshape", in, 2, &r, 1);
    int y = nn_graph_add_tensor(g, "y", FFU_DTYPE_F32, NULL);
    nn_graph_add_node(g, NN_OP_RELU, "relu", &r, 1, &y, 1);
    nn_graph_mark_output(g, y);
    ffu_nn_model *m;
    CHECK(nn_model_from_graph(g, &m) == FFU_OK);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    ffu_nn_session *s;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    ffu_nn_tensor tx, ts, out;
    CHECK(ffu_nn_session_input(s, 0, &tx) == FFU_OK);
    CHECK(ffu_nn_session_input(s, 1, &ts) == FFU_OK);
    CHECK_EQ_INT(ts.nbytes, 16);
    for (int i = 0; i < 12; i++) ((float *)tx.data)[i] = (float)(i - 5);
    ((int64_t *)ts.data)[0] = 2, ((int64_t *)ts.data)[1] = 6;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 6);
    for (int i = 0; i < 12; i++) CHECK_NEAR(((float *)out.data)[i], fmaxf((float)(i - 5), 0), 0);
    /* same value: no re-plan, no allocation */
    atomic_store(&allocations, 0);
    atomic_store(&counting, 1);
    ffu_status st = ffu_nn_session_run(s);
    atomic_store(&counting, 0);
    CHECK(st == FFU_OK);
    CHECK_EQ_INT(atomic_load(&allocations), 0);
    /* new value: new output shape; x's data (staged) is still used */
    ((int64_t *)ts.data)[0] = 4, ((int64_t *)ts.data)[1] = -1;
    ((float *)tx.data)[11] = 100;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.dims[0], 4);
    CHECK_EQ_INT(out.dims[1], 3);
    CHECK_NEAR(((float *)out.data)[11], 100, 0);
    /* an impossible value is an error, not a crash */
    ((int64_t *)ts.data)[0] = 5, ((int64_t *)ts.data)[1] = 5;
    CHECK(ffu_nn_session_run(s) < 0);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

/* Sessions of one workspace give what private sessions give, run in any order; a
 * session planned later with a bigger arena grows the workspace and the earlier ones
 * follow it to the new block (a stale pointer is a use-after-free under ASan); the
 * workspace holds what the largest session needs, not the sum. */
static void workspace_fill(ffu_nn_session *s, const ffu_nn_workspace *ws, int salt, float **x,
                           int *n)
{
    ffu_nn_tensor in = {0};
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    /* in the workspace's current block */
    CHECK((unsigned char *)in.data >= ws->buf &&
          (unsigned char *)in.data + in.nbytes <= ws->buf + ws->bytes);
    *x = in.data;
    *n = (int)(in.nbytes / sizeof(float));
    for (int i = 0; i < *n; i++) (*x)[i] = (float)((i * 7 + salt) % 13) - 6;
}

static void workspace_check(ffu_nn_session *s, const ffu_nn_workspace *ws, int salt)
{
    const float c[4] = {1, -2, 3, -4};
    float *x = NULL;
    int n = 0;
    workspace_fill(s, ws, salt, &x, &n);
    float *want = malloc(sizeof(float) * (size_t)(n ? n : 1));
    CHECK(want);
    for (int i = 0; i < n; i++) want[i] = ref_chain(x[i], c[i % 4]);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    ffu_nn_tensor out;
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.nbytes, n * sizeof(float));
    for (int i = 0; i < n; i++) CHECK_NEAR(((const float *)out.data)[i], want[i], 0);
    free(want);
}

static void test_workspace(void)
{
    if (!nn_op_get(NN_OP_RELU) || !nn_op_get(NN_OP_ADD)) TEST_SKIP("Relu/Add not implemented");
    ffu_nn_model *m = chain_model(5);
    CHECK(m);
    const char *backends[2] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        ffu_nn_workspace *ws;
        CHECK(ffu_nn_workspace_create(&ws) == FFU_OK);
        CHECK_EQ_INT(ffu_nn_workspace_bytes(ws), 0);
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = backends[b];
        o.workspace = ws;
        ffu_nn_session *s[3];
        const int batch[3] = {3, 2, 1000};
        for (int k = 0; k < 3; k++) {
            o.batch = batch[k];
            CHECK(ffu_nn_session_create(m, &o, &s[k]) == FFU_OK);
        }
        workspace_check(s[0], ws, 1);
        workspace_check(s[1], ws, 2);
        workspace_check(s[0], ws, 3);
        size_t small = ffu_nn_workspace_bytes(ws);
        CHECK(small >= ffu_nn_session_peak_bytes(s[0]));
        CHECK(small >= ffu_nn_session_peak_bytes(s[1]));
        workspace_check(s[2], ws, 4); /* 1000 rows: the block grows */
        size_t big = ffu_nn_workspace_bytes(ws);
        CHECK(big > small);
        CHECK(big >= ffu_nn_session_peak_bytes(s[2]));
        CHECK(big < ffu_nn_session_peak_bytes(s[0]) + ffu_nn_session_peak_bytes(s[1]) +
                        ffu_nn_session_peak_bytes(s[2]) + 4096);
        workspace_check(s[1], ws, 5); /* planned on the old block */
        workspace_check(s[0], ws, 6);
        workspace_check(s[2], ws, 7);
        /* a new shape re-plans inside the workspace */
        int64_t d[2] = {7, 4};
        CHECK(ffu_nn_session_set_input_shape(s[0], 0, 2, d) == FFU_OK);
        workspace_check(s[0], ws, 8);
        workspace_check(s[1], ws, 9);
        CHECK_EQ_INT(ffu_nn_workspace_bytes(ws), big);
        for (int k = 0; k < 3; k++) ffu_nn_session_destroy(s[k]);
        ffu_nn_workspace_destroy(ws);
    }
    ffu_nn_workspace_destroy(NULL);
    CHECK(ffu_nn_workspace_create(NULL) == FFU_ERR_INVALID);
    ffu_nn_model_destroy(m);
}

/* ---- real models ------------------------------------------------------------------------ */

static void test_mobilefacenet(void)
{
    char path[1024];
    if (!test_shared_path("models/mobilefacenet_insightface_pytorch.onnx", path, sizeof path))
        TEST_SKIP("shared models absent");
    ffu_nn_model *m;
    ffu_status st = ffu_nn_model_load(path, &m);
    if (st == FFU_ERR_UNSUPPORTED) TEST_SKIP("ONNX loader or an op is not there yet");
    CHECK(st == FFU_OK);
    const char *backends[2] = {"ref", "cpu"};
    float emb[2][128];
    for (int b = 0; b < 2; b++) {
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = backends[b];
        ffu_nn_session *s;
        CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
        ffu_nn_tensor in, out;
        st = ffu_nn_session_input(s, 0, &in);
        if (st < 0) fprintf(stderr, "%s\n", ffu_error_message());
        CHECK(st == FFU_OK);
        CHECK_EQ_INT(in.nbytes, 3 * 112 * 112 * 4);
        uint64_t seed = 7;
        for (size_t i = 0; i < in.nbytes / 4; i++) ((float *)in.data)[i] = test_rand_f(&seed) * 2 - 1;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
        CHECK_EQ_INT(out.rank, 2);
        CHECK_EQ_INT(out.dims[1], 128);
        double n2 = 0;
        for (int i = 0; i < 128; i++) {
            float v = ((float *)out.data)[i];
            CHECK(isfinite(v));
            n2 += (double)v * v;
            emb[b][i] = v;
        }
        CHECK(n2 > 1e-6); /* L2-normalisable */
        ffu_nn_session_destroy(s);
    }
    /* the two backends agree: cosine of the embeddings */
    double dot = 0, na = 0, nb = 0;
    for (int i = 0; i < 128; i++)
        dot += (double)emb[0][i] * emb[1][i], na += (double)emb[0][i] * emb[0][i],
            nb += (double)emb[1][i] * emb[1][i];
    CHECK(dot / sqrt(na * nb) > 0.9999);
    ffu_nn_model_destroy(m);
}

/* The session's describe, parsed (NULL on any failure; free with ffu_json_free). */
static ffu_json *describe_json(const ffu_nn_session *s)
{
    ffu_jw *w;
    ffu_json *d = NULL;
    if (ffu_jw_create(&w, 0) != FFU_OK) return NULL;
    const char *t = ffu_nn_session_describe(s, w) == FFU_OK ? ffu_jw_text(w, NULL) : NULL;
    if (t && ffu_json_parse(t, strlen(t), &d) != FFU_OK) d = NULL;
    ffu_jw_destroy(w);
    return d;
}

/* ffu_nn_session_profile: per-node mean times after profiled runs (none before, none
 * after a restart), per-node FLOPs that add up to the model's, and the same outputs
 * as unprofiled runs. */
static int64_t describe_profile(ffu_nn_session *s, int *timed, int *views, double *sum_ms,
                                int64_t *sum_flops)
{
    int64_t runs = -1;
    *timed = *views = 0;
    *sum_ms = 0;
    *sum_flops = 0;
    ffu_json *d = describe_json(s);
    if (d) {
        runs = ffu_json_int(ffu_json_get(d, "profiled_runs"), 0);
        const ffu_json *nodes = ffu_json_get(d, "nodes");
        for (size_t i = 0; i < ffu_json_len(nodes); i++) {
            const ffu_json *n = ffu_json_at(nodes, i), *ms = ffu_json_get(n, "ms");
            int view = strcmp(ffu_json_string(ffu_json_get(n, "backend")), "view") == 0;
            *views += view;
            *timed += ms != NULL;
            if (view && ms) runs = -2; /* a view runs nothing: no time */
            *sum_ms += ffu_json_number(ms, 0);
            *sum_flops += ffu_json_int(ffu_json_get(n, "flops"), 0);
        }
    }
    ffu_json_free(d);
    return runs;
}

static void test_profile(void)
{
    char path[1024];
    if (!test_shared_path("models/mobilefacenet_insightface_pytorch.onnx", path, sizeof path))
        TEST_SKIP("shared models absent");
    ffu_nn_model *m;
    CHECK(ffu_nn_model_load(path, &m) == FFU_OK);
    ffu_jw *w;
    ffu_json *md = NULL;
    CHECK(ffu_jw_create(&w, 0) == FFU_OK);
    CHECK(ffu_nn_model_describe(m, w) == FFU_OK);
    CHECK(ffu_json_parse(ffu_jw_text(w, NULL), strlen(ffu_jw_text(w, NULL)), &md) == FFU_OK);
    int64_t model_flops = ffu_json_int(ffu_json_get(md, "flops"), -1);
    ffu_json_free(md);
    ffu_jw_destroy(w);
    CHECK(model_flops > 400000000); /* 0.47 GFLOP (docs/BENCHMARKS.md) */

    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.threads = 1;
    ffu_nn_session *s;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    ffu_nn_tensor in, out;
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    uint64_t seed = 11;
    for (size_t i = 0; i < in.nbytes / 4; i++) ((float *)in.data)[i] = test_rand_f(&seed) * 2 - 1;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    float plain[128];
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK && out.nbytes == sizeof plain);
    memcpy(plain, out.data, sizeof plain);
    int timed, views;
    double ms;
    int64_t flops;
    CHECK_EQ_INT(describe_profile(s, &timed, &views, &ms, &flops), 0); /* not profiled yet */
    CHECK_EQ_INT(timed, 0);
    CHECK_EQ_INT(flops, model_flops); /* the plan's nodes carry all the model's FLOPs */

    /* ffu_nn_flops_done counts every run's FLOPs (this test runs on one thread) */
    uint64_t done = ffu_nn_flops_done();
    CHECK(ffu_nn_session_profile(s, 1) == FFU_OK);
    for (int r = 0; r < 3; r++) CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_profile(s, 0) == FFU_OK);
    CHECK(ffu_nn_session_run(s) == FFU_OK); /* not counted */
    CHECK(ffu_nn_flops_done() - done == 4 * (uint64_t)model_flops);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK(memcmp(out.data, plain, sizeof plain) == 0);
    CHECK_EQ_INT(describe_profile(s, &timed, &views, &ms, &flops), 3);
    CHECK(timed > 50); /* every node that runs (a view would have no time: -2 above) */
    CHECK(ms > 0);

    CHECK(ffu_nn_session_profile(s, 1) == FFU_OK); /* a restart clears */
    CHECK_EQ_INT(describe_profile(s, &timed, &views, &ms, &flops), 0);
    CHECK_EQ_INT(timed, 0);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK_EQ_INT(describe_profile(s, &timed, &views, &ms, &flops), 1);
    int64_t d[4] = {2, 3, 112, 112}; /* a re-plan too */
    CHECK(ffu_nn_session_set_input_shape(s, 0, 4, d) == FFU_OK);
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    CHECK_EQ_INT(describe_profile(s, &timed, &views, &ms, &flops), 0);
    CHECK_EQ_INT(flops, 2 * model_flops);
    done = ffu_nn_flops_done();
    CHECK(ffu_nn_session_run(s) == FFU_OK); /* the new plan's count: two items */
    CHECK(ffu_nn_flops_done() - done == 2 * (uint64_t)model_flops);
    CHECK(ffu_nn_session_profile(NULL, 1) == FFU_ERR_INVALID);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

/* Profiles inside band pipelines and thread strips (cpu backend): the last member runs
 * every member, and its time is split among them (per-member seconds measured in the
 * pipeline), so each member has a time of its own and the last no longer holds the
 * group's. YuNet has a 15- and a 3-member pipeline at one thread, strips at two.
 * *heavy counts the groups whose last member has half the group's time or more: what
 * the last would have if it still held the group's total, and what a profile of a few
 * runs can also show when this shared 2-core host stops a thread for a millisecond
 * inside one member, so the caller measures again before calling that a failure. */
static void profile_groups(ffu_nn_session *s, const char *kind, int *groups, int *heavy)
{
    *groups = 0;
    ffu_json *d = describe_json(s);
    CHECK(d != NULL);
    const ffu_json *nodes = ffu_json_get(d, "nodes");
    double sum = 0, last = 0;
    int seen = 0;
    for (size_t i = 0; i < ffu_json_len(nodes); i++) {
        const ffu_json *n = ffu_json_at(nodes, i);
        const char *impl = ffu_json_string(ffu_json_get(n, "impl"));
        int k, of;
        char fmt[32];
        snprintf(fmt, sizeof fmt, "%s %%d/%%d", kind);
        if (!impl || sscanf(impl, fmt, &k, &of) != 2) continue;
        double ms = ffu_json_number(ffu_json_get(n, "ms"), -1);
        CHECK(ms > 0);
        CHECK_EQ_INT(k, seen + 1); /* members in run order */
        seen = k;
        sum += ms;
        if (k < of) continue;
        last = ms;
        (*groups)++;
        if (last >= 0.5 * sum) {
            (*heavy)++;
            printf("%s of %d members: the last has %.3f of %.3f ms\n", kind, of, last, sum);
        }
        sum = 0, seen = 0;
    }
    CHECK_EQ_INT(seen, 0); /* every group ended */
    ffu_json_free(d);
}

static void test_profile_in_groups(void)
{
    char path[1024];
    if (!test_shared_path("models/face_detection_yunet_2023mar.onnx", path, sizeof path))
        TEST_SKIP("shared models absent");
    ffu_nn_model *m;
    CHECK(ffu_nn_model_load(path, &m) == FFU_OK);
    for (int threads = 1; threads <= 2; threads++) {
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.threads = threads;
        ffu_nn_session *s;
        if (ffu_nn_session_create(m, &o, &s) != FFU_OK) {
            CHECK(0);
            continue;
        }
        ffu_nn_tensor in;
        CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
        uint64_t seed = 5;
        for (size_t i = 0; i < in.nbytes / 4; i++)
            ((float *)in.data)[i] = test_rand_f(&seed) * 255;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        int bands = 0, strips = 0, heavy = 1;
        for (int attempt = 0; attempt < 3 && heavy; attempt++) {
            CHECK(ffu_nn_session_profile(s, 1) == FFU_OK); /* a restart clears */
            for (int r = 0; r < 3; r++)
                CHECK(ffu_nn_session_run(s) == FFU_OK);
            CHECK(ffu_nn_session_profile(s, 0) == FFU_OK);
            heavy = 0;
            profile_groups(s, "band", &bands, &heavy);
            profile_groups(s, "strip", &strips, &heavy);
        }
        CHECK_EQ_INT(heavy, 0); /* three profiles in a row: the split is missing */
        printf("%d thread(s): %d band pipelines, %d strip groups profiled per member\n", threads,
               bands, strips);
        if (threads == 1) CHECK_EQ_INT(bands, 2);
        ffu_nn_session_destroy(s);
    }
    ffu_nn_model_destroy(m);
}

static void test_ultraface_folds(void)
{
    char path[1024];
    if (!test_shared_path("models/ultraface_version-RFB-320.onnx", path, sizeof path))
        TEST_SKIP("shared models absent");
    ffu_nn_model *m;
    ffu_status st = ffu_nn_model_load(path, &m);
    if (st == FFU_ERR_UNSUPPORTED) TEST_SKIP("ONNX loader or an op is not there yet");
    CHECK(st == FFU_OK);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "ref";
    ffu_nn_session *s;
    CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
    ffu_nn_tensor in, scores, boxes;
    st = ffu_nn_session_input(s, 0, &in);
    if (st < 0) fprintf(stderr, "%s\n", ffu_error_message());
    CHECK(st == FFU_OK);
    for (size_t i = 0; i < in.nbytes / 4; i++) ((float *)in.data)[i] = 0.1f;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &scores) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 1, &boxes) == FFU_OK);
    CHECK_EQ_INT(scores.dims[1], 4420);
    CHECK_EQ_INT(boxes.dims[2], 4);
    for (int i = 0; i < 4420; i++) {
        float p0 = ((float *)scores.data)[2 * i], p1 = ((float *)scores.data)[2 * i + 1];
        CHECK_NEAR(p0 + p1, 1.0, 1e-4); /* softmax over two classes */
    }
    ffu_jw *w;
    CHECK(ffu_jw_create(&w, 0) == FFU_OK);
    CHECK(ffu_nn_session_describe(s, w) == FFU_OK);
    const char *txt = ffu_jw_text(w, NULL);
    CHECK(!strstr(txt, "\"op\":\"Shape\"") && !strstr(txt, "\"op\":\"Gather\""));
    CHECK(!strstr(txt, "\"folded_nodes\":0,"));
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

/* A node whose outputs hold no values is not run (fuzz_tflite found a Softmax over
 * 2^27 empty rows that ref looped through for seconds): the session describes it as
 * "empty", runs the nodes beside it, and its output has no bytes. */
static void test_empty_nodes_skipped(void)
{
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t de[3] = {2, 1 << 26, 0}, dz[2] = {2, 3};
    int x = tensor(g, "x", 3, de), z = tensor(g, "z", 2, dz);
    nn_graph_mark_input(g, x);
    nn_graph_mark_input(g, z);
    int y = tensor(g, "y", 3, de), w = tensor(g, "w", 2, dz);
    node(g, NN_OP_SOFTMAX, &x, 1, y);
    node(g, NN_OP_RELU, &z, 1, w);
    nn_graph_mark_output(g, y);
    nn_graph_mark_output(g, w);
    ffu_nn_model *m;
    CHECK(nn_model_from_graph(g, &m) == FFU_OK);
    const char *backends[] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        ffu_nn_session *s;
        ffu_nn_session_opts o;
        ffu_nn_session_opts_default(&o);
        o.backend = backends[b];
        if (ffu_nn_session_create(m, &o, &s) != FFU_OK) continue; /* cpu not built */
        ffu_nn_tensor t;
        CHECK(ffu_nn_session_input(s, 1, &t) == FFU_OK);
        for (int i = 0; i < 6; i++)
            ((float *)t.data)[i] = (float)i - 2.5f;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &t) == FFU_OK);
        CHECK_EQ_INT(t.nbytes, 0);
        CHECK(ffu_nn_session_output(s, 1, &t) == FFU_OK);
        CHECK(((float *)t.data)[0] == 0 && ((float *)t.data)[5] == 2.5f);
        ffu_json *d = describe_json(s);
        CHECK(d != NULL);
        const ffu_json *nodes = ffu_json_get(d, "nodes");
        CHECK_EQ_INT(ffu_json_len(nodes), 2);
        for (size_t i = 0; i < ffu_json_len(nodes); i++) {
            const ffu_json *n = ffu_json_at(nodes, i);
            int softmax = strcmp(ffu_json_string(ffu_json_get(n, "op")), "Softmax") == 0;
            const char *be = ffu_json_string(ffu_json_get(n, "backend"));
            CHECK(softmax ? strcmp(be, "empty") == 0 : strcmp(be, "empty") != 0);
        }
        ffu_json_free(d);
        ffu_nn_session_destroy(s);
    }
    ffu_nn_model_destroy(m);
}

/* A cpu session of two threads runs a graph of small nodes on one (cpu_backend.c
 * graph_threads), with the one-thread session's numbers bit for bit, unless its backend
 * is told to split small plans too (NN_CPU_SPLIT_SMALL, as the fuzzers do); a graph of
 * a large convolution runs on two, and given 1000 threads on one per MFLOP of its
 * average node. Split plans agree with one thread's within rounding. */
static void conv_graph(int c, int hw, ffu_nn_model **out)
{
    nn_graph *g;
    *out = NULL;
    if (nn_graph_create(&g) < 0) return;
    int64_t xd[4] = {1, c, hw, hw};
    int x = tensor(g, "x", 4, xd), y = tensor(g, "y", 4, xd), r = tensor(g, "r", 4, xd);
    nn_graph_mark_input(g, x);
    size_t nw = (size_t)c * (size_t)c * 9;
    float *w = malloc(nw * sizeof *w);
    for (size_t i = 0; i < nw; i++)
        w[i] = (float)((int)(i * 37 % 17) - 8) / 64;
    nn_shape ws = {.rank = 4, .d = {c, c, 3, 3}};
    int wt = nn_graph_add_const(g, "w", FFU_DTYPE_F32, &ws, w, nw * sizeof *w, NN_COPY);
    free(w);
    int in[2] = {x, wt};
    int k = node(g, NN_OP_CONV, in, 2, y);
    int64_t pads[4] = {1, 1, 1, 1};
    nn_node_set_ints(g, k, "pads", pads, 4);
    node(g, NN_OP_RELU, &y, 1, r);
    nn_graph_mark_output(g, r);
    if (nn_model_from_graph(g, out) < 0) *out = NULL;
}

static void test_threads_used(void)
{
    const int sizes[2][2] = {{4, 8}, {64, 48}}; /* 0.02 MFLOP a node; 130 MFLOP */
    for (int big = 0; big < 2; big++) {
        ffu_nn_model *m;
        conv_graph(sizes[big][0], sizes[big][1], &m);
        CHECK(m);
        float *outs[3] = {NULL, NULL, NULL};
        size_t n = 0;
        for (int t = 1; t <= 3; t++) { /* 3: two threads, small plans split too */
            ffu_nn_session_opts o;
            ffu_nn_session_opts_default(&o);
            o.backend = "cpu";
            o.threads = t < 3 ? t : 2;
            ffu_nn_session *s = NULL;
            nn_backend *cpu = NULL;
            if (nn_backend_cpu_create(&cpu, o.threads,
                                      NN_CPU_WINOGRAD | NN_CPU_BANDS |
                                          (t == 3 ? NN_CPU_SPLIT_SMALL : 0)) != FFU_OK) {
                ffu_nn_model_destroy(m); /* cpu not built */
                TEST_SKIP("no cpu backend");
            }
            CHECK(nn_session_create_with(m, &o, cpu, &s) == FFU_OK);
            CHECK_EQ_INT(ffu_nn_session_threads_used(s), 0); /* not planned yet */
            ffu_nn_tensor ti, to;
            CHECK(ffu_nn_session_input(s, 0, &ti) == FFU_OK);
            n = ti.nbytes / sizeof(float);
            for (size_t i = 0; i < n; i++)
                ((float *)ti.data)[i] = (float)((int)(i * 13 % 29) - 14) / 8;
            CHECK(ffu_nn_session_run(s) == FFU_OK);
            CHECK_EQ_INT(ffu_nn_session_threads_used(s), t == 1 || (t == 2 && !big) ? 1 : 2);
            CHECK(ffu_nn_session_output(s, 0, &to) == FFU_OK);
            outs[t - 1] = malloc(to.nbytes);
            memcpy(outs[t - 1], to.data, to.nbytes);
            ffu_nn_session_destroy(s);
        }
        if (!big) CHECK(memcmp(outs[0], outs[1], n * sizeof(float)) == 0);
        if (big) { /* many threads: each gets at least 1 MFLOP of the average node */
            ffu_nn_session_opts o;
            ffu_nn_session_opts_default(&o);
            o.backend = "cpu";
            o.threads = 1000;
            ffu_nn_session *s;
            ffu_nn_tensor ti;
            CHECK(ffu_nn_session_create(m, &o, &s) == FFU_OK);
            CHECK(ffu_nn_session_input(s, 0, &ti) == FFU_OK); /* plans */
            /* 170 MFLOP in one node (the Relu fuses into the Conv): 170 threads */
            int used = ffu_nn_session_threads_used(s);
            CHECK(used > 100 && used < 1000);
            ffu_nn_session_destroy(s);
        }
        for (int k = 1; k < 3; k++) {
            double err = 0, mag = 0;
            for (size_t i = 0; i < n; i++) {
                err = fmax(err, fabs((double)outs[0][i] - outs[k][i]));
                mag = fmax(mag, fabs((double)outs[0][i]));
            }
            CHECK(mag > 0.5 && err <= 1e-5 * mag);
        }
        free(outs[0]), free(outs[1]), free(outs[2]);
        ffu_nn_model_destroy(m);
    }
}

enum { STRIP_RELU, STRIP_LINEAR, STRIP_PRELU };

/* A Conv of `in` (ci channels) into a new tensor of shape od: a k x k window, pads
 * k / 2, weights and bias from *seed; then, when res >= 0, an Add of res, and the
 * activation act: a Relu, none, or a PRelu with a slope per channel (fused into the
 * Conv by the plan; oneDNN runs PReLU as a step of its own after it). Returns the last
 * tensor. */
static int strip_conv(nn_graph *g, uint64_t *seed, const char *name, int in, int64_t ci,
                      const int64_t *od, int64_t k, int64_t stride, int64_t group, int res, int act)
{
    int64_t co = od[1], cig = ci / group;
    size_t nw = (size_t)(co * cig * k * k);
    float *w = malloc(nw * sizeof *w), b[64];
    for (size_t i = 0; i < nw; i++)
        w[i] = (test_rand_f(seed) * 2 - 1) / (float)(cig * k);
    for (int i = 0; i < co; i++)
        b[i] = test_rand_f(seed) * 0.2f - 0.1f;
    nn_shape ws = {.rank = 4, .d = {co, cig, k, k}}, bs = {.rank = 1, .d = {co}};
    char wn[32], bn[32], yn[32], an[32];
    snprintf(wn, sizeof wn, "%s_w", name), snprintf(bn, sizeof bn, "%s_b", name);
    snprintf(yn, sizeof yn, "%s_conv", name), snprintf(an, sizeof an, "%s_add", name);
    int in3[3] = {
        in, nn_graph_add_const(g, wn, FFU_DTYPE_F32, &ws, w, nw * sizeof *w, NN_COPY),
        nn_graph_add_const(g, bn, FFU_DTYPE_F32, &bs, b, (size_t)co * sizeof *b, NN_COPY)};
    free(w);
    int y = tensor(g, yn, 4, od);
    int kn = node(g, NN_OP_CONV, in3, 3, y);
    int64_t pads[4] = {k / 2, k / 2, k / 2, k / 2}, st[2] = {stride, stride};
    nn_node_set_ints(g, kn, "pads", pads, 4);
    nn_node_set_ints(g, kn, "strides", st, 2);
    nn_node_set_int(g, kn, "group", group);
    /* off our Winograd kernel, which strips do not cut (the 7x20 3x3 would take F(2x2)) */
    nn_node_set_int(g, kn, "_cpu_wino", 0);
    if (res >= 0) {
        int z = tensor(g, an, 4, od), ab[2] = {y, res};
        node(g, NN_OP_ADD, ab, 2, z);
        y = z;
    }
    if (act == STRIP_RELU) {
        int z = tensor(g, name, 4, od);
        node(g, NN_OP_RELU, &y, 1, z);
        y = z;
    } else if (act == STRIP_PRELU) {
        float sl[64];
        for (int i = 0; i < co; i++)
            sl[i] = test_rand_f(seed) * 0.5f;
        nn_shape ss = {.rank = 3, .d = {co, 1, 1}};
        char sn[32];
        snprintf(sn, sizeof sn, "%s_slope", name);
        int z = tensor(g, name, 4, od);
        int pin[2] = {
            y, nn_graph_add_const(g, sn, FFU_DTYPE_F32, &ss, sl, (size_t)co * sizeof *sl, NN_COPY)};
        node(g, NN_OP_PRELU, pin, 2, z);
        y = z;
    }
    return y;
}

/* Thread strips (src/nn/cpu/cpu_strips.c): a MobileFaceNet-like run of convolutions
 * after a first layer: 1x1 expansions (one with a PRelu), 3x3 depthwise layers (one at
 * stride 2), 1x1 projections (one adding the block's input), a dense 3x3 layer; 13 rows
 * then 7, so two and three threads get uneven strips; 40 columns, so our depthwise
 * kernel takes the stride-1 one. y [1, 16, 7, 20]. */
static ffu_nn_model *strips_model(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    int64_t xd[4] = {1, 3, 13, 40}, ad[4] = {1, 32, 13, 40}, ed[4] = {1, 64, 13, 40};
    int64_t e2d[4] = {1, 64, 7, 20}, pd[4] = {1, 48, 7, 20}, yd[4] = {1, 16, 7, 20};
    int x = tensor(g, "x", 4, xd);
    nn_graph_mark_input(g, x);
    uint64_t seed = 11;
    int a = strip_conv(g, &seed, "first", x, 3, ad, 3, 1, 1, -1, STRIP_RELU);
    int e = strip_conv(g, &seed, "expand1", a, 32, ed, 1, 1, 1, -1, STRIP_RELU);
    int d = strip_conv(g, &seed, "dw1", e, 64, ed, 3, 1, 64, -1, STRIP_RELU);
    int p = strip_conv(g, &seed, "project1", d, 64, ad, 1, 1, 1, a, STRIP_LINEAR);
    e = strip_conv(g, &seed, "expand2", p, 32, ed, 1, 1, 1, -1, STRIP_PRELU);
    d = strip_conv(g, &seed, "dw2", e, 64, e2d, 3, 2, 64, -1, STRIP_RELU);
    p = strip_conv(g, &seed, "project2", d, 64, pd, 1, 1, 1, -1, STRIP_LINEAR);
    int q = strip_conv(g, &seed, "dense", p, 48, pd, 3, 1, 1, -1, STRIP_RELU);
    int y = strip_conv(g, &seed, "y", q, 48, yd, 1, 1, 1, -1, STRIP_LINEAR);
    nn_graph_mark_output(g, y);
    ffu_nn_model *m = NULL;
    if (nn_model_from_graph(g, &m) < 0) return NULL;
    return m;
}

/* libgomp's entry points, as the cpu backend calls them */
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
int omp_get_thread_num(void);

typedef struct {
    ffu_nn_session *s;
    ffu_status st;
} outer_run;

static void run_on_thread0(void *arg)
{
    outer_run *r = arg;
    if (omp_get_thread_num() == 0) r->st = ffu_nn_session_run(r->s);
}

/* Runs s: from the calling thread, or (inside) from the first thread of a two-thread
 * OpenMP parallel region, as a host running its own OpenMP code would (the backend's
 * regions inside get one thread each: nesting is off). */
static ffu_status strips_session_run(ffu_nn_session *s, int inside)
{
    if (!inside) return ffu_nn_session_run(s);
    outer_run r = {s, FFU_ERR_INTERNAL};
    GOMP_parallel(run_on_thread0, &r, 2, 0);
    return r.st;
}

/* A session of m on a cpu backend of `threads` with `flags`; its input filled from a
 * fixed seed, run twice (inside a parallel region when inside); returns the output
 * (malloc'ed, *n values) and, in *strips, how many of its nodes ran in thread strips
 * (describe's strip_nodes). */
static float *strips_run(const ffu_nn_model *m, int threads, unsigned flags, int inside, size_t *n,
                         int *strips)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "cpu";
    o.threads = threads;
    nn_backend *cpu = NULL;
    ffu_nn_session *s = NULL;
    if (nn_backend_cpu_create(&cpu, threads, flags) != FFU_OK) return NULL;
    if (nn_session_create_with(m, &o, cpu, &s) != FFU_OK) return NULL;
    ffu_nn_tensor ti, to;
    float *out = NULL;
    if (ffu_nn_session_input(s, 0, &ti) == FFU_OK) {
        uint64_t seed = 5;
        for (size_t i = 0; i < ti.nbytes / 4; i++)
            ((float *)ti.data)[i] = test_rand_f(&seed) * 2 - 1;
        /* twice: the second run reuses the barriers worked out in the first */
        if (strips_session_run(s, inside) == FFU_OK && strips_session_run(s, inside) == FFU_OK &&
            ffu_nn_session_output(s, 0, &to) == FFU_OK && (out = malloc(to.nbytes))) {
            memcpy(out, to.data, to.nbytes);
            *n = to.nbytes / sizeof(float);
        }
    }
    ffu_json *d = describe_json(s);
    *strips = d ? (int)ffu_json_int(ffu_json_get(d, "strip_nodes"), -1) : -1;
    ffu_json_free(d);
    ffu_nn_session_destroy(s);
    return out;
}

/* The largest difference from ref relative to ref's largest value (-1: sizes differ). */
static double rel_diff(const float *ref, const float *got, size_t n)
{
    double err = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs((double)ref[i] - got[i]));
        mag = fmax(mag, fabs((double)ref[i]));
    }
    return mag > 0 ? err / mag : -1;
}

static void test_thread_strips(void)
{
    nn_backend *probe = NULL;
    if (nn_backend_cpu_create(&probe, 1, 0) != FFU_OK) TEST_SKIP("no cpu backend");
    probe->ops->destroy(probe);
    ffu_nn_model *m = strips_model();
    CHECK(m);
    size_t n0 = 0, n = 0;
    int strips = -1;
    /* one thread, every node on its own: the reference */
    float *ref = strips_run(m, 1, NN_CPU_WINOGRAD, 0, &n0, &strips);
    CHECK(ref && n0 == 16 * 7 * 20);
    CHECK_EQ_INT(strips, 0);
    double mag = 0;
    for (size_t i = 0; i < n0; i++)
        mag = fmax(mag, fabs((double)ref[i]));
    CHECK(mag > 0.01);
    for (int t = 2; t <= 3; t++) {
        /* all seven convolutions after the first layer, on uneven strips */
        float *got =
            strips_run(m, t, NN_CPU_WINOGRAD | NN_CPU_BANDS | NN_CPU_SPLIT_SMALL, 0, &n, &strips);
        CHECK(got && n == n0);
        CHECK_EQ_INT(strips, 7);
        double e = rel_diff(ref, got, n);
        CHECK(e >= 0 && e <= 1e-5);
        free(got);
        /* without bands (the session's no_bands) every node runs on its own */
        got = strips_run(m, t, NN_CPU_WINOGRAD | NN_CPU_SPLIT_SMALL, 0, &n, &strips);
        CHECK(got && n == n0);
        CHECK_EQ_INT(strips, 0);
        CHECK(rel_diff(ref, got, n) <= 1e-5);
        free(got);
    }
    /* from inside a host's parallel region each thread of the backend's regions is
     * alone: one runs every strip in turn */
    float *got =
        strips_run(m, 3, NN_CPU_WINOGRAD | NN_CPU_BANDS | NN_CPU_SPLIT_SMALL, 1, &n, &strips);
    CHECK(got && n == n0);
    CHECK_EQ_INT(strips, 7);
    CHECK(rel_diff(ref, got, n) <= 1e-5);
    free(got);
    /* one thread: nothing to cut */
    got = strips_run(m, 1, NN_CPU_WINOGRAD | NN_CPU_BANDS | NN_CPU_SPLIT_SMALL, 0, &n, &strips);
    CHECK(got && strips == 0);
    free(got);
    free(ref);
    ffu_nn_model_destroy(m);

    /* the ONNX fuzzer's seed for strips (tests/fuzz/onnx_builder.h ob_seed_strips):
     * the four convolutions between the first layer and the last (which writes the
     * graph output, NCHW) run in strips on a split backend */
    CHECK(ffu_nn_model_load(FFU_TEST_SOURCE_DIR "/tests/fixtures/corpus/onnx/strips.onnx", &m) ==
          FFU_OK);
    ref = strips_run(m, 1, NN_CPU_WINOGRAD, 0, &n0, &strips);
    CHECK(ref && n0 == 8 * 7 * 5 && strips == 0);
    got = strips_run(m, 2, NN_CPU_WINOGRAD | NN_CPU_BANDS | NN_CPU_SPLIT_SMALL, 0, &n, &strips);
    CHECK(got && n == n0);
    CHECK_EQ_INT(strips, 4);
    CHECK(rel_diff(ref, got, n) <= 1e-5);
    free(got);
    free(ref);
    ffu_nn_model_destroy(m);

    /* MobileFaceNet on two threads: strips give node-by-node's embedding */
    char path[1024];
    if (!test_shared_path("models/mobilefacenet_insightface_pytorch.onnx", path, sizeof path))
        TEST_SKIP("shared models absent");
    CHECK(ffu_nn_model_load(path, &m) == FFU_OK);
    ref = strips_run(m, 2, NN_CPU_WINOGRAD, 0, &n0, &strips);
    CHECK(ref && n0 == 128 && strips == 0);
    got = strips_run(m, 2, NN_CPU_WINOGRAD | NN_CPU_BANDS, 0, &n, &strips);
    CHECK(got && n == n0);
    CHECK(strips >= 40); /* of its 51 convolutions */
    CHECK(rel_diff(ref, got, n) <= 1e-5);
    free(got);
    free(ref);
    ffu_nn_model_destroy(m);
}

/* ---- ffu_nn_run_side_by_side ---------------------------------------------------------- */

/* Jobs that each wait (up to 10 s) for every other job to have started, so they can
 * only all meet when they run at the same time; each also counts its calls. */
typedef struct side_meet {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int n, started, met;
    int calls[8];
} side_meet;

static void side_meet_job(void *arg, int k)
{
    side_meet *m = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&m->lock);
    if (k >= 0 && k < 8) m->calls[k]++;
    m->started++;
    pthread_cond_broadcast(&m->cv);
    int rc = 0;
    while (m->started < m->n && rc == 0)
        rc = pthread_cond_timedwait(&m->cv, &m->lock, &until);
    if (m->started >= m->n) m->met++;
    pthread_mutex_unlock(&m->lock);
}

static void side_count_job(void *arg, int k)
{
    side_meet *m = arg;
    pthread_mutex_lock(&m->lock);
    if (k >= 0 && k < 8) m->calls[k]++;
    m->started++;
    pthread_mutex_unlock(&m->lock);
}

static void side_from_thread0(void *arg)
{
    side_meet *m = arg;
    if (omp_get_thread_num() == 0) ffu_nn_run_side_by_side(m->n, side_count_job, m);
}

static int side_calls_once(const side_meet *m)
{
    int ok = m->started == m->n;
    for (int k = 0; k < 8; k++)
        ok &= m->calls[k] == (k < m->n);
    return ok;
}

/* Jobs run at the same time, on the team's threads (three jobs: three threads, on any
 * number of CPUs); each k exactly once; none for n = 0; from inside a host's parallel
 * region (where the runtime gives one thread) every k still runs, in turn. */
static void test_side_by_side(void)
{
#if !FFU_HAVE_DNNL
    TEST_SKIP("built without oneDNN: side-by-side jobs run in the caller");
#else
    for (int n = 0; n <= 3; n++) {
        side_meet m = {.n = n};
        pthread_mutex_init(&m.lock, NULL);
        pthread_cond_init(&m.cv, NULL);
        ffu_nn_run_side_by_side(n, side_meet_job, &m);
        CHECK_EQ_INT(m.met, n);
        CHECK(side_calls_once(&m));
        memset(m.calls, 0, sizeof m.calls);
        m.started = 0;
        GOMP_parallel(side_from_thread0, &m, 2, 0);
        CHECK(side_calls_once(&m));
        pthread_mutex_destroy(&m.lock);
        pthread_cond_destroy(&m.cv);
    }
#endif
}

TEST_MAIN(test_chain_runs, test_output_subset, test_free_dims_reshape, test_empty_nodes_skipped,
          test_profile, test_profile_in_groups, test_workspace, test_no_allocation_after_first_run,
          test_dynamic_dims_need_shapes, test_shape_chain_folds, test_value_bound_inputs,
          test_load_passes, test_mobilefacenet, test_ultraface_folds, test_threads_used,
          test_thread_strips, test_side_by_side)
