/* The batch dimension (src/nn/batch.c): sessions run models that declare a batch of 1
 * on N items. Hand-built graphs check both modes -- a Reshape [1,-1] with a constant
 * block concatenated beside the data re-batches ("batched"); a Reshape that flattens
 * the batch, or a Softmax across it, falls back to N runs of the batch-1 plan
 * ("looped"), which allocates nothing after its first run -- plus shared inputs and
 * the set_input_shape rules. With the model data present, real models run N = 3
 * distinct random inputs and every item's outputs must equal the batch-1 run of that
 * item: bit for bit on ref, within 1e-5 of the output's magnitude on cpu. A model whose
 * shapes depend on input values is not batched: an error says so. */
#include <dlfcn.h>
#include <stdatomic.h>

#include "test.h"
#include "test_nn_run.h"

#include "nn/nn_internal.h"

/* ---- malloc counting (as in test_nn_session.c) --------------------------------------- */

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
static atomic_long allocations;

#if COUNT_MALLOC
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
#define note()                                                                                     \
    (atomic_load_explicit(&counting, memory_order_relaxed)                                         \
         ? (void)atomic_fetch_add(&allocations, 1)                                                 \
         : (void)0)
void *malloc(size_t n) { return note(), __libc_malloc(n); }
void *calloc(size_t a, size_t b) { return note(), __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return note(), __libc_realloc(p, n); }
void *aligned_alloc(size_t al, size_t n) { return note(), __libc_memalign(al, n); }
void *memalign(size_t al, size_t n) { return note(), __libc_memalign(al, n); }
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
    for (int i = 0; i < rank; i++)
        s.d[i] = d[i];
    return nn_graph_add_tensor(g, name, FFU_DTYPE_F32, &s);
}

static int i64_const(nn_graph *g, const int64_t *v, int n)
{
    nn_shape s = {.rank = 1, .d = {n}};
    return nn_graph_add_const(g, "", FFU_DTYPE_I64, &s, v, sizeof(int64_t) * (size_t)n, NN_COPY);
}

static ffu_nn_session *open_session(const ffu_nn_model *m, const char *backend, int batch)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 1;
    o.batch = batch;
    ffu_nn_session *s = NULL;
    if (ffu_nn_session_create(m, &o, &s) < 0) fprintf(stderr, "create: %s\n", ffu_error_message());
    return s;
}

/* "batched" or "looped", from describe (the session must be planned). */
static const char *batch_mode(const ffu_nn_session *s, char *buf, size_t len)
{
    ffu_jw *w;
    snprintf(buf, len, "?");
    if (ffu_jw_create(&w, 0) < 0) return buf;
    if (ffu_nn_session_describe(s, w) == FFU_OK) {
        const char *t = ffu_jw_text(w, NULL);
        if (strstr(t, "\"batch_mode\":\"batched\""))
            snprintf(buf, len, "batched");
        else if (strstr(t, "\"batch_mode\":\"looped\""))
            snprintf(buf, len, "looped");
    }
    ffu_jw_destroy(w);
    return buf;
}

static void fill_item(float *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = test_rand_f(&seed) * 2 - 1;
}

/* ---- hand-built graphs -------------------------------------------------------------------- */

/* Marks y as g's output and makes g a model; NULL (the error printed) when it fails. */
static ffu_nn_model *model_with_output(nn_graph *g, int y)
{
    nn_graph_mark_output(g, y);
    ffu_nn_model *m = NULL;
    if (nn_model_from_graph(g, &m) < 0) fprintf(stderr, "%s\n", ffu_error_message());
    return m;
}

/* A model of one node `op` reading graph inputs a and b and writing the output y. */
static ffu_nn_model *one_node_model(nn_graph *g, nn_op op, int a, int b, int y)
{
    nn_graph_mark_input(g, a);
    nn_graph_mark_input(g, b);
    int in[2] = {a, b};
    nn_graph_add_node(g, op, "", in, 2, &y, 1);
    return model_with_output(g, y);
}

/* y = Reshape(Concat(x, zeros [1,2,3], axis 1), [1,-1]) + bias: the shape constant and
 * the zero block both encode the batch of 1 */
static ffu_nn_model *reshape_model(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    int64_t xd[3] = {1, 2, 3}, cd[3] = {1, 4, 3}, rd[2] = {1, 12};
    int x = tensor(g, "x", 3, xd);
    nn_graph_mark_input(g, x);
    float zeros[6] = {0}, bias[12];
    for (int i = 0; i < 12; i++)
        bias[i] = (float)i * 0.5f;
    nn_shape zs = {.rank = 3, .d = {1, 2, 3}}, bs = {.rank = 1, .d = {12}};
    int z = nn_graph_add_const(g, "zeros", FFU_DTYPE_F32, &zs, zeros, sizeof zeros, NN_COPY);
    int b = nn_graph_add_const(g, "bias", FFU_DTYPE_F32, &bs, bias, sizeof bias, NN_COPY);
    int64_t shape[2] = {1, -1};
    int sh = i64_const(g, shape, 2);
    int cat = tensor(g, "cat", 3, cd), r = tensor(g, "r", 2, rd), y = tensor(g, "y", 2, rd);
    int cin[2] = {x, z}, rin[2] = {cat, sh}, ain[2] = {r, b};
    int c = nn_graph_add_node(g, NN_OP_CONCAT, "cat", cin, 2, &cat, 1);
    nn_node_set_int(g, c, "axis", 1);
    nn_graph_add_node(g, NN_OP_RESHAPE, "flat", rin, 2, &r, 1);
    nn_graph_add_node(g, NN_OP_ADD, "add", ain, 2, &y, 1);
    return model_with_output(g, y);
}

static void test_reshape_rebatches(void)
{
    ffu_nn_model *m = reshape_model();
    CHECK(m);
    const char *backends[2] = {"ref", "cpu"};
    for (int be = 0; be < 2; be++) {
        ffu_nn_session *s = open_session(m, backends[be], 3);
        CHECK(s);
        ffu_nn_tensor in, out;
        CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
        CHECK_EQ_INT(in.dims[0], 3);
        CHECK_EQ_INT(in.nbytes, 3 * 6 * 4);
        float *x = in.data;
        for (int i = 0; i < 18; i++)
            x[i] = (float)i - 7;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        char mode[16];
        CHECK_STR(batch_mode(s, mode, sizeof mode), "batched");
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
        CHECK_EQ_INT(out.rank, 2);
        CHECK_EQ_INT(out.dims[0], 3);
        CHECK_EQ_INT(out.dims[1], 12);
        const float *y = out.data;
        for (int b = 0; b < 3; b++)
            for (int k = 0; k < 12; k++) {
                /* item b: its 6 values, then 6 zeros, plus the bias */
                float want = (k < 6 ? x[b * 6 + k] : 0) + (float)k * 0.5f;
                CHECK_NEAR(y[b * 12 + k], want, 1e-6);
            }
        ffu_nn_session_destroy(s);
    }
    ffu_nn_model_destroy(m);
}

/* y = Relu(Reshape(x [1,2,3], [-1])): the batch is flattened into the only axis. */
static ffu_nn_model *flatten_model(void)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return NULL;
    int64_t xd[3] = {1, 2, 3}, fd[1] = {6};
    int x = tensor(g, "x", 3, xd);
    nn_graph_mark_input(g, x);
    int64_t shape[1] = {-1};
    int sh = i64_const(g, shape, 1);
    int f = tensor(g, "f", 1, fd), y = tensor(g, "y", 1, fd);
    int rin[2] = {x, sh};
    nn_graph_add_node(g, NN_OP_RESHAPE, "flatten_all", rin, 2, &f, 1);
    nn_graph_add_node(g, NN_OP_RELU, "relu", &f, 1, &y, 1);
    return model_with_output(g, y);
}

static void test_flatten_loops(void)
{
    ffu_nn_model *m = flatten_model();
    CHECK(m);
    const char *backends[2] = {"ref", "cpu"};
    for (int be = 0; be < 2; be++) {
        ffu_nn_session *s = open_session(m, backends[be], 5);
        CHECK(s);
        ffu_nn_tensor in, out, in2, out2;
        CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
        CHECK_EQ_INT(in.rank, 3);
        CHECK_EQ_INT(in.dims[0], 5);
        CHECK_EQ_INT(in.nbytes, 5 * 6 * 4);
        float *x = in.data;
        for (int i = 0; i < 30; i++)
            x[i] = (float)i - 14;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        char mode[16];
        CHECK_STR(batch_mode(s, mode, sizeof mode), "looped");
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
        /* the batch-1 output [6] gets a batch axis: [5, 6] */
        CHECK_EQ_INT(out.rank, 2);
        CHECK_EQ_INT(out.dims[0], 5);
        CHECK_EQ_INT(out.dims[1], 6);
        CHECK_EQ_INT(out.nbytes, 5 * 6 * 4);
        for (int i = 0; i < 30; i++)
            CHECK_NEAR(((float *)out.data)[i], fmaxf(x[i], 0), 0);
        /* the loop copies slices in and out of buffers made when planning */
        size_t peak = ffu_nn_session_peak_bytes(s);
        for (int i = 0; i < 30; i++)
            x[i] = (float)(29 - i);
        atomic_store(&allocations, 0);
        atomic_store(&counting, 1);
        ffu_status st = FFU_OK;
        for (int r = 0; r < 20 && st == FFU_OK; r++)
            st = ffu_nn_session_run(s);
        atomic_store(&counting, 0);
        CHECK(st == FFU_OK);
        if (be == 0) CHECK_EQ_INT(atomic_load(&allocations), 0); /* oneDNN allocates inside */
        CHECK(ffu_nn_session_input(s, 0, &in2) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &out2) == FFU_OK);
        CHECK(in2.data == in.data && out2.data == out.data);
        CHECK_EQ_INT(ffu_nn_session_peak_bytes(s), peak);
        for (int i = 0; i < 30; i++)
            CHECK_NEAR(((float *)out.data)[i], (float)(29 - i), 0);
        ffu_nn_session_destroy(s);
    }
    ffu_nn_model_destroy(m);
}

/* Softmax over axis 0 keeps shapes but would mix items: must loop. Per item the
 * softmax is over one value, so every output is exactly 1. */
static void test_softmax_over_batch_loops(void)
{
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t xd[2] = {1, 4};
    int x = tensor(g, "x", 2, xd), y = tensor(g, "y", 2, xd);
    nn_graph_mark_input(g, x);
    int k = nn_graph_add_node(g, NN_OP_SOFTMAX, "sm", &x, 1, &y, 1);
    nn_node_set_int(g, k, "axis", 0);
    ffu_nn_model *m = model_with_output(g, y);
    CHECK(m);
    ffu_nn_session *s = open_session(m, "ref", 3);
    ffu_nn_tensor in, out;
    CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
    for (int i = 0; i < 12; i++)
        ((float *)in.data)[i] = (float)i * 0.25f;
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    char mode[16];
    CHECK_STR(batch_mode(s, mode, sizeof mode), "looped");
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.dims[0], 3);
    for (int i = 0; i < 12; i++)
        CHECK_NEAR(((float *)out.data)[i], 1.0f, 0);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

/* Opens m (one input of 3x4 values at batch 3) on `backend` for a batch of 3 as *ps
 * (the caller destroys it), fills the input with 1, 2, ..., 12, runs it and checks the
 * batch mode; *out is the output, its nbytes 0 unless it holds nout floats. */
static void run_one_to_twelve(const ffu_nn_model *m, const char *backend, const char *want_mode,
                              size_t nout, ffu_nn_session **ps, ffu_nn_tensor *out)
{
    ffu_nn_session *s = *ps = open_session(m, backend, 3);
    ffu_nn_tensor ti;
    out->nbytes = 0;
    CHECK(s);
    CHECK(ffu_nn_session_input(s, 0, &ti) == FFU_OK);
    CHECK_EQ_INT(ti.nbytes, 12 * sizeof(float));
    for (int i = 0; i < 12; i++)
        ((float *)ti.data)[i] = (float)(i + 1);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    char mode[16];
    CHECK_STR(batch_mode(s, mode, sizeof mode), want_mode);
    ffu_nn_tensor o;
    CHECK(ffu_nn_session_output(s, 0, &o) == FFU_OK);
    CHECK_EQ_INT(o.dims[0], 3);
    CHECK_EQ_INT(o.nbytes, nout * sizeof(float));
    *out = o;
}

/* CumSum keeps its shape: along axis 0 it would add items together, so the proof must
 * refuse it (looped: each item sums only itself); along axis 1 it re-batches. */
static void test_scan_over_batch(void)
{
    for (int axis = 0; axis < 2; axis++) {
        nn_graph *g;
        CHECK(nn_graph_create(&g) == FFU_OK);
        int64_t xd[2] = {1, 4}, ax = axis;
        int x = tensor(g, "x", 2, xd), y = tensor(g, "y", 2, xd), a = i64_const(g, &ax, 1);
        nn_graph_mark_input(g, x);
        int in[2] = {x, a};
        nn_graph_add_node(g, NN_OP_CUM_SUM, "cs", in, 2, &y, 1);
        ffu_nn_model *m = model_with_output(g, y);
        CHECK(m);
        ffu_nn_session *s;
        ffu_nn_tensor to;
        run_one_to_twelve(m, "ref", axis == 0 ? "looped" : "batched", 12, &s, &to);
        for (int b = 0; to.nbytes && b < 3; b++)
            for (int j = 0; j < 4; j++) {
                float v = (float)(b * 4 + j + 1), want = v; /* axis 0: one row per item */
                if (axis == 1) want = (float)((j + 1) * (2 * (b * 4 + 1) + j)) / 2;
                CHECK_NEAR(((float *)to.data)[b * 4 + j], want, 0);
            }
        ffu_nn_session_destroy(s);
        ffu_nn_model_destroy(m);
    }
}

/* A Resize whose scale on dim 0 is 1.1 keeps a batch of 3 at 3 (floor(3.3)) but reads
 * across items: linear output 1 along dim 0 takes 0.14 of item 0, nearest rounding
 * down copies item 0. The proof must refuse it (looped), and then each item of a
 * batch of one is resized from a dim of 1 to 1: a copy of itself. Scales of exactly 1
 * on dim 0 re-batch. */
static void test_resize_over_batch(void)
{
    for (int v = 0; v < 3; v++) { /* linear, nearest (floor), linear with scale 1 */
        nn_graph *g;
        CHECK(nn_graph_create(&g) == FFU_OK);
        int64_t xd[4] = {1, 1, 2, 2};
        float scales[4] = {v == 2 ? 1.0f : 1.1f, 1, 1, 1};
        nn_shape ss = {.rank = 1, .d = {4}};
        int x = tensor(g, "x", 4, xd), y = tensor(g, "y", 4, xd);
        nn_graph_mark_input(g, x);
        int in[3] = {x, -1,
                     nn_graph_add_const(g, "", FFU_DTYPE_F32, &ss, scales, sizeof scales, NN_COPY)};
        int k = nn_graph_add_node(g, NN_OP_RESIZE, "rs", in, 3, &y, 1);
        nn_node_set_string(g, k, "mode", v == 1 ? "nearest" : "linear");
        nn_node_set_string(g, k, "nearest_mode", "floor");
        ffu_nn_model *m = model_with_output(g, y);
        CHECK(m);
        const char *backends[2] = {"ref", "cpu"};
        for (int be = 0; be < 2; be++) {
            ffu_nn_session *s;
            ffu_nn_tensor to;
            run_one_to_twelve(m, backends[be], v == 2 ? "batched" : "looped", 12, &s, &to);
            for (int i = 0; to.nbytes && i < 12; i++)
                CHECK_NEAR(((float *)to.data)[i], (float)(i + 1), 0);
            ffu_nn_session_destroy(s);
        }
        ffu_nn_model_destroy(m);
    }
}

/* Two ops whose outputs stay item-shaped at batch N but read other items: an LSTM
 * whose X is [seq, batch, input] (layout 0: dim 0 is time, so a batch of 3 would be a
 * sequence of 3 and item 1 would start from item 0's state), and a GatherElements
 * along dim 0 whose indices come from item data (x * 0 cast to integers: 0 at batch 1
 * as they must be, and still 0 at batch 3, so every item would read item 0). Both
 * must loop, and each item must then equal its batch-1 run: the LSTM from a zero
 * state (y = o * tanh(c), c = i * g with all weights 0.5: checked against the formula),
 * the gather giving x back. */
static void test_sequence_and_gather_over_batch(void)
{
    for (int v = 0; v < 2; v++) {
        nn_graph *g;
        CHECK(nn_graph_create(&g) == FFU_OK);
        int64_t xd[3] = {1, 1, 4};
        int x = tensor(g, "x", 3, xd), y = nn_graph_add_tensor(g, "y", FFU_DTYPE_UNDEFINED, NULL);
        nn_graph_mark_input(g, x);
        if (v == 0) { /* LSTM, hidden size 1: W [1, 4, 4], R [1, 4, 1] */
            static const float w[16] = {.5f, .5f, .5f, .5f, .5f, .5f, .5f, .5f,
                                        .5f, .5f, .5f, .5f, .5f, .5f, .5f, .5f};
            static const float r[4] = {.5f, .5f, .5f, .5f};
            nn_shape ws = {.rank = 3, .d = {1, 4, 4}}, rs = {.rank = 3, .d = {1, 4, 1}};
            int in[3] = {x, nn_graph_add_const(g, "", FFU_DTYPE_F32, &ws, w, sizeof w, NN_COPY),
                         nn_graph_add_const(g, "", FFU_DTYPE_F32, &rs, r, sizeof r, NN_COPY)};
            int k = nn_graph_add_node(g, NN_OP_LSTM, "lstm", in, 3, &y, 1);
            nn_node_set_int(g, k, "hidden_size", 1);
        } else {
            float zero = 0;
            nn_shape ss = {.rank = 0};
            int t0 = nn_graph_add_tensor(g, "x0", FFU_DTYPE_UNDEFINED, NULL),
                t1 = nn_graph_add_tensor(g, "idx", FFU_DTYPE_UNDEFINED, NULL);
            int min[2] = {x, nn_graph_add_const(g, "", FFU_DTYPE_F32, &ss, &zero, sizeof zero,
                                                NN_COPY)};
            nn_graph_add_node(g, NN_OP_MUL, "times0", min, 2, &t0, 1);
            int k = nn_graph_add_node(g, NN_OP_CAST, "cast", &t0, 1, &t1, 1);
            nn_node_set_int(g, k, "to", FFU_DTYPE_I64);
            int gin[2] = {x, t1};
            k = nn_graph_add_node(g, NN_OP_GATHER_ELEMENTS, "gather", gin, 2, &y, 1);
            nn_node_set_int(g, k, "axis", 0);
        }
        ffu_nn_model *m = model_with_output(g, y);
        CHECK(m);
        const char *backends[2] = {"ref", "cpu"};
        for (int be = 0; be < 2; be++) {
            ffu_nn_session *s;
            ffu_nn_tensor to;
            run_one_to_twelve(m, backends[be], "looped", v == 0 ? 3 : 12, &s, &to);
            for (int b = 0; v == 0 && to.nbytes && b < 3; b++) {
                float sum = 0; /* item b's inputs 4b+1 .. 4b+4 */
                for (int j = 0; j < 4; j++)
                    sum += 0.5f * (float)(4 * b + j + 1);
                float gate = 1 / (1 + expf(-sum)), c = gate * tanhf(sum);
                CHECK_NEAR(((float *)to.data)[b], gate * tanhf(c), 1e-5);
            }
            for (int i = 0; v == 1 && to.nbytes && i < 12; i++)
                CHECK_NEAR(((float *)to.data)[i], (float)(i + 1), 0);
            ffu_nn_session_destroy(s);
        }
        ffu_nn_model_destroy(m);
    }
}

/* set_input_shape may change a declared batch of 1 (and nothing else); an input left
 * at 1 is shared by every item; batch inputs must agree. */
static void test_shared_input_and_shapes(void)
{
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t d[2] = {1, 3};
    int x = tensor(g, "x", 2, d), w = tensor(g, "w", 2, d), y = tensor(g, "y", 2, d);
    ffu_nn_model *m = one_node_model(g, NN_OP_MUL, x, w, y);
    CHECK(m);
    ffu_nn_session *s = open_session(m, "ref", 1);
    int64_t x4[2] = {4, 3}, bad[2] = {1, 5}, w2[2] = {2, 3};
    CHECK(ffu_nn_session_set_input_shape(s, 0, 2, x4) == FFU_OK);
    CHECK(ffu_nn_session_set_input_shape(s, 0, 2, bad) == FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "fixed at 3") != NULL);
    ffu_nn_tensor a, b, out;
    CHECK(ffu_nn_session_input(s, 0, &a) == FFU_OK);
    CHECK(ffu_nn_session_input(s, 1, &b) == FFU_OK);
    CHECK_EQ_INT(a.dims[0], 4);
    CHECK_EQ_INT(b.dims[0], 1);
    for (int i = 0; i < 12; i++)
        ((float *)a.data)[i] = (float)i;
    for (int i = 0; i < 3; i++)
        ((float *)b.data)[i] = (float)(i + 2);
    CHECK(ffu_nn_session_run(s) == FFU_OK);
    CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
    CHECK_EQ_INT(out.dims[0], 4);
    for (int i = 0; i < 12; i++)
        CHECK_NEAR(((float *)out.data)[i], (float)i * (float)(i % 3 + 2), 0);
    /* 2 items in w and 4 in x: no batch to agree on */
    CHECK(ffu_nn_session_set_input_shape(s, 1, 2, w2) == FFU_OK);
    CHECK(ffu_nn_session_run(s) == FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "batch") != NULL);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

/* A dynamic batch is the model's own business (x [?,2,3] -> Reshape [1,-1] stays
 * [1, 6N]), unless that plan fails: Reshape [1,6] cannot take 6N values, so the graph
 * is re-batched (yolo5face declares a dynamic batch and reshapes to [1,2,32,40,40]). */
static void test_dynamic_batch(void)
{
    for (int explicit6 = 0; explicit6 < 2; explicit6++) {
        nn_graph *g;
        CHECK(nn_graph_create(&g) == FFU_OK);
        int64_t xd[3] = {-1, 2, 3}, yd[2] = {1, -1};
        int x = tensor(g, "x", 3, xd), y = tensor(g, "y", 2, yd);
        nn_graph_mark_input(g, x);
        int64_t shape[2] = {1, explicit6 ? 6 : -1};
        int rin[2] = {x, i64_const(g, shape, 2)};
        nn_graph_add_node(g, NN_OP_RESHAPE, "r", rin, 2, &y, 1);
        ffu_nn_model *m = model_with_output(g, y);
        CHECK(m);
        ffu_nn_session *s = open_session(m, "ref", 4);
        ffu_nn_tensor in, out;
        CHECK(ffu_nn_session_input(s, 0, &in) == FFU_OK);
        for (int i = 0; i < 24; i++)
            ((float *)in.data)[i] = (float)i;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
        CHECK_EQ_INT(out.dims[0], explicit6 ? 4 : 1);
        CHECK_EQ_INT(out.dims[1], explicit6 ? 6 : 24);
        for (int i = 0; i < 24; i++)
            CHECK_NEAR(((float *)out.data)[i], (float)i, 0);
        /* only the re-batched plan computes 4 items apart (what the fuzzers compare) */
        nn_shape four = {.rank = 3, .d = {4, 2, 3}};
        CHECK_EQ_INT(nn_batch_independent(m, &four), explicit6);
        ffu_nn_session_destroy(s);
        ffu_nn_model_destroy(m);
    }
}

/* ---- real models -------------------------------------------------------------------------- */

/* Runs `path` on `backend` with N items of distinct random data, then each item alone
 * on a batch-1 session, and compares every output slice. Counts the models it ran. */
static void check_model(const char *path, const char *backend, int n, const char *want_mode,
                        int *ran)
{
    FILE *f = fopen(path, "rb");
    if (!f) return;
    fclose(f);
    (*ran)++;
    ffu_nn_model *m = NULL;
    ffu_status lst = ffu_nn_model_load(path, &m);
    if (lst < 0) fprintf(stderr, "%s: %s\n", path, ffu_error_message());
    CHECK(lst == FFU_OK);
    ffu_nn_session *sn = open_session(m, backend, n), *s1 = open_session(m, backend, 1);
    CHECK(sn && s1);
    int nin = ffu_nn_model_num_inputs(m), nout = ffu_nn_model_num_outputs(m);
    for (int i = 0; i < nin; i++) {
        ffu_nn_tensor t;
        CHECK(ffu_nn_session_input(sn, i, &t) == FFU_OK);
        CHECK(t.dtype == FFU_DTYPE_F32);
        CHECK_EQ_INT(t.dims[0], n);
        size_t per = t.nbytes / 4 / (size_t)n;
        for (int b = 0; b < n; b++)
            fill_item((float *)t.data + per * (size_t)b, per,
                      1000u * (unsigned)i + (unsigned)b + 1);
    }
    ffu_status st = ffu_nn_session_run(sn);
    if (st < 0) fprintf(stderr, "%s batch %d: %s\n", path, n, ffu_error_message());
    CHECK(st == FFU_OK);
    char mode[16];
    batch_mode(sn, mode, sizeof mode);
    if (strcmp(mode, want_mode) != 0)
        fprintf(stderr, "%s on %s: batch mode %s, expected %s\n", path, backend, mode, want_mode);
    CHECK_STR(mode, want_mode);
    double worst = 0;
    for (int b = 0; b < n; b++) {
        for (int i = 0; i < nin; i++) {
            ffu_nn_tensor t;
            CHECK(ffu_nn_session_input(s1, i, &t) == FFU_OK);
            CHECK_EQ_INT(t.dims[0], 1);
            fill_item(t.data, t.nbytes / 4, 1000u * (unsigned)i + (unsigned)b + 1);
        }
        CHECK(ffu_nn_session_run(s1) == FFU_OK);
        for (int o = 0; o < nout; o++) {
            ffu_nn_tensor tn, t1;
            CHECK(ffu_nn_session_output(sn, o, &tn) == FFU_OK);
            CHECK(ffu_nn_session_output(s1, o, &t1) == FFU_OK);
            CHECK_EQ_INT(tn.dims[0], n);
            CHECK_EQ_INT(tn.nbytes, t1.nbytes * (size_t)n);
            if (tn.nbytes != t1.nbytes * (size_t)n) continue;
            const float *a = (const float *)tn.data + t1.nbytes / 4 * (size_t)b, *r = t1.data;
            size_t cnt = t1.nbytes / 4;
            if (strcmp(backend, "ref") == 0) {
                int same = memcmp(a, r, t1.nbytes) == 0;
                if (!same)
                    fprintf(stderr, "%s: output %s of item %d differs on ref\n", path, t1.name, b);
                CHECK(same);
                continue;
            }
            double mag = 0, diff = 0;
            for (size_t k = 0; k < cnt; k++) {
                mag = fmax(mag, fabs(r[k]));
                diff = fmax(diff, fabs((double)a[k] - r[k]));
            }
            worst = fmax(worst, diff / (mag > 0 ? mag : 1));
        }
    }
    if (worst > 1e-5)
        fprintf(stderr, "%s on %s: items differ by %g relative\n", path, backend, worst);
    CHECK(worst <= 1e-5);
    ffu_nn_session_destroy(sn);
    ffu_nn_session_destroy(s1);
    ffu_nn_model_destroy(m);
}

/* A model whose shapes come from an input's value (bound mode, test_nn_session.c) is
 * not batched: y = Reshape(x, k) runs for one item on both backends, and a batch of 2
 * is an error that says why (docs/NN.md), not a plan whose items mix. */
static void test_bound_input_not_batched(void)
{
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    int64_t xd[3] = {1, 2, 3}, yd[2] = {-1, -1};
    nn_shape ks = {.rank = 1, .d = {2}};
    int x = tensor(g, "x", 3, xd), y = tensor(g, "y", 2, yd);
    int k = nn_graph_add_tensor(g, "k", FFU_DTYPE_I64, &ks);
    ffu_nn_model *m = one_node_model(g, NN_OP_RESHAPE, x, k, y);
    CHECK(m);
    const char *backends[2] = {"ref", "cpu"};
    for (int be = 0; be < 2; be++) {
        ffu_nn_session *s = open_session(m, backends[be], 1);
        CHECK(s);
        ffu_nn_tensor tx, tk, out;
        CHECK(ffu_nn_session_input(s, 0, &tx) == FFU_OK);
        CHECK(ffu_nn_session_input(s, 1, &tk) == FFU_OK);
        for (int i = 0; i < 6; i++)
            ((float *)tx.data)[i] = (float)i;
        ((int64_t *)tk.data)[0] = 3, ((int64_t *)tk.data)[1] = -1;
        CHECK(ffu_nn_session_run(s) == FFU_OK);
        CHECK(ffu_nn_session_output(s, 0, &out) == FFU_OK);
        CHECK_EQ_INT(out.rank, 2);
        CHECK_EQ_INT(out.dims[0], 3);
        CHECK_EQ_INT(out.dims[1], 2);
        for (int i = 0; i < 6; i++)
            CHECK_NEAR(((float *)out.data)[i], (float)i, 0);
        ffu_nn_session_destroy(s);
        s = open_session(m, backends[be], 2);
        CHECK(s);
        CHECK(ffu_nn_session_input(s, 0, &tx) < 0);
        CHECK(strstr(ffu_error_message(), "cannot be batched") != NULL);
        ffu_nn_session_destroy(s);
    }
    ffu_nn_model_destroy(m);
}

static void test_real_models(void)
{
    char shared[1024], dir[512], p[4][1024];
    const char *mode[4] = {"batched", "batched", "batched", "batched"};
    snprintf(
        p[0], sizeof p[0], "%s",
        test_shared_path("models/mobilefacenet_insightface_pytorch.onnx", shared, sizeof shared)
            ? shared
            : "/nonexistent");
    snprintf(p[1], sizeof p[1], "%s",
             test_shared_path("models/face_detection_yunet_2023mar.onnx", shared, sizeof shared)
                 ? shared
                 : "/nonexistent");
    test_model_dir(dir, sizeof dir);
    snprintf(p[2], sizeof p[2], "%s/mobilefacenet.json", dir);
    snprintf(p[3], sizeof p[3], "%s/face_detection_back_256x256_barracuda.onnx", dir);
    int ran = 0;
    const char *backends[2] = {"ref", "cpu"};
    for (int k = 0; k < 4; k++)
        for (int be = 0; be < 2; be++)
            check_model(p[k], backends[be], 3, mode[k], &ran);
    /* Convs padded for Winograd at planning (10 channels to 16) re-batch too */
    if (test_shared_path("models/ultraface_version-RFB-320.onnx", shared, sizeof shared))
        for (int be = 0; be < 2; be++)
            check_model(shared, backends[be], 3, "batched", &ran);
    /* outputs without a batch axis ([1076, 14]) cannot be re-batched: looped */
    if (test_shared_path("models/face_detection_yunet_2022mar.onnx", shared, sizeof shared))
        for (int be = 0; be < 2; be++)
            check_model(shared, backends[be], 3, "looped", &ran);
    if (!ran) TEST_SKIP("no models in ../shared/models or the model cache");
}

TEST_MAIN(test_reshape_rebatches, test_flatten_loops, test_softmax_over_batch_loops,
          test_scan_over_batch, test_resize_over_batch, test_sequence_and_gather_over_batch,
          test_shared_input_and_shapes, test_dynamic_batch,
          test_bound_input_not_batched, test_real_models)
