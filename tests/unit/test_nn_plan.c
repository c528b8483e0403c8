/* The memory planner (src/nn/plan.c) on hand-built graphs: blocks are reused along a
 * chain, views and in-place ops share their input's memory, graph inputs and outputs
 * keep dedicated regions, and -- checked on random graphs -- no two tensors that are
 * alive at the same time ever overlap. Shapes are set by hand, so no kernel runs. */
#include "test.h"

#include "nn/nn_internal.h"

#define MB(x) ((size_t)(x))

static nn_shape shape2(int64_t a, int64_t b)
{
    nn_shape s = {.rank = 2, .d = {a, b}};
    return s;
}

/* Adds a node op(inputs) -> a new f32 tensor of shape s; returns the tensor. */
static int add(nn_graph *g, nn_op op, const int *in, int nin, nn_shape s)
{
    int t = nn_graph_add_tensor(g, "", FFU_DTYPE_F32, &s);
    if (t < 0) return t;
    return nn_graph_add_node(g, op, "", in, nin, &t, 1) < 0 ? -1 : t;
}

static size_t aligned(size_t v) { return (v + 63) & ~(size_t)63; }

/* Independent check of a plan: lifetimes recomputed from the graph (an alias keeps
 * its root alive), then every pair of distinct roots alive at the same node must not
 * overlap. Graph inputs and outputs are alive throughout. Returns 1 when sound. */
static int plan_is_sound(const nn_graph *g, const nn_plan_stats *st)
{
    int nt = g->ntensors, nn = g->nnodes;
    int first[512], last[512];
    if (nt > 512) return 0;
    for (int t = 0; t < nt; t++) first[t] = last[t] = -2;
    for (int i = 0; i < nn; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j < n->noutputs; j++) first[n->outputs[j]] = last[n->outputs[j]] = i;
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] >= 0 && last[n->inputs[j]] < i) last[n->inputs[j]] = i;
    }
    for (int t = 0; t < nt; t++) {
        const nn_tensor *x = &g->tensors[t];
        if (x->flags & NN_T_CONST) continue;
        if (x->flags & (NN_T_INPUT | NN_T_OUTPUT)) first[t] = -1, last[t] = nn;
        if (x->offset < 0) {
            if (first[t] != -2) return fprintf(stderr, "tensor %d has no offset\n", t), 0;
            continue;
        }
        if ((size_t)x->offset + x->nbytes > st->arena_bytes)
            return fprintf(stderr, "tensor %d ends past the arena\n", t), 0;
        if (x->offset % 64) return fprintf(stderr, "tensor %d is not 64-byte aligned\n", t), 0;
    }
    /* fold alias lifetimes into roots */
    for (int t = 0; t < nt; t++) {
        int r = g->tensors[t].alias;
        if (r < 0) continue;
        if (g->tensors[t].offset != g->tensors[r].offset)
            return fprintf(stderr, "alias %d does not share its root's offset\n", t), 0;
        if (first[t] < first[r]) first[r] = first[t];
        if (last[t] > last[r]) last[r] = last[t];
    }
    for (int a = 0; a < nt; a++)
        for (int b = a + 1; b < nt; b++) {
            const nn_tensor *x = &g->tensors[a], *y = &g->tensors[b];
            if (x->alias >= 0 || y->alias >= 0 || x->offset < 0 || y->offset < 0) continue;
            if (last[a] < first[b] || last[b] < first[a]) continue; /* not alive together */
            /* an output may take the block of an input last read by the same node only
             * through an explicit alias, never by accident */
            size_t xa = (size_t)x->offset, xe = xa + (x->nbytes ? x->nbytes : 1);
            size_t ya = (size_t)y->offset, ye = ya + (y->nbytes ? y->nbytes : 1);
            if (xa < ye && ya < xe) {
                fprintf(stderr, "tensors %d [%d,%d] and %d [%d,%d] overlap\n", a, first[a],
                        last[a], b, first[b], last[b]);
                return 0;
            }
        }
    return 1;
}

/* A chain of 12 same-size elementwise ops needs two buffers without in-place, one
 * with it, plus the dedicated input and output. */
static void test_chain_reuses_two_buffers(void)
{
    if (!nn_op_get(NN_OP_RELU)) TEST_SKIP("Relu is not implemented yet");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    nn_shape s = shape2(4, 100); /* 1600 bytes */
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &s);
    nn_graph_mark_input(g, x);
    int t = x;
    for (int i = 0; i < 12; i++) t = add(g, NN_OP_RELU, &t, 1, s);
    nn_graph_mark_output(g, t);
    nn_plan_stats st;
    CHECK(nn_plan_memory(g, 0, &st) == FFU_OK);
    size_t one = aligned(1600);
    CHECK_EQ_INT(st.io_bytes, 2 * one);
    CHECK_EQ_INT(st.arena_bytes, 4 * one); /* in, out, and two ping-pong buffers */
    CHECK_EQ_INT(st.ninplace, 0);
    CHECK(plan_is_sound(g, &st));
    CHECK(st.naive_bytes == 13 * 1600);

    CHECK(nn_plan_memory(g, 1, &st) == FFU_OK);
    CHECK_EQ_INT(st.arena_bytes, 3 * one); /* in place: one working buffer */
    CHECK_EQ_INT(st.ninplace, 10);          /* not the first (reads x) nor the last (output) */
    CHECK(plan_is_sound(g, &st));
    nn_graph_destroy(g);
}

/* Graph inputs are never written over, even by an elementwise op that is their only
 * reader; graph outputs in the middle of a chain keep their bytes to the end. */
static void test_inputs_and_outputs_are_dedicated(void)
{
    if (!nn_op_get(NN_OP_RELU) || !nn_op_get(NN_OP_ADD)) TEST_SKIP("Relu/Add not implemented");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    nn_shape s = shape2(8, 8);
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &s);
    nn_graph_mark_input(g, x);
    int a = add(g, NN_OP_RELU, &x, 1, s);
    int mid = add(g, NN_OP_RELU, &a, 1, s);
    nn_graph_mark_output(g, mid); /* an output that others still read */
    int t = mid;
    for (int i = 0; i < 6; i++) t = add(g, NN_OP_RELU, &t, 1, s);
    int pair[2] = {t, t};
    int y = add(g, NN_OP_ADD, pair, 2, s);
    nn_graph_mark_output(g, y);
    nn_plan_stats st;
    CHECK(nn_plan_memory(g, 1, &st) == FFU_OK);
    CHECK(plan_is_sound(g, &st));
    CHECK_EQ_INT(g->tensors[a].alias, -1);   /* does not alias the input x */
    CHECK_EQ_INT(g->tensors[mid].alias, -1); /* an output is never an alias */
    CHECK_EQ_INT(g->tensors[y].alias, -1);
    for (int k = 0; k < g->ntensors; k++) {
        if (k == x || g->tensors[k].offset < 0) continue;
        CHECK(g->tensors[k].offset != g->tensors[x].offset);
        if (k != mid) CHECK(g->tensors[k].offset != g->tensors[mid].offset);
    }
    /* dedicated regions come first */
    CHECK(g->tensors[x].offset < (int64_t)st.io_bytes);
    CHECK(g->tensors[mid].offset < (int64_t)st.io_bytes);
    CHECK(g->tensors[y].offset < (int64_t)st.io_bytes);
    nn_graph_destroy(g);
}

/* Reshape/Flatten alias their input (no copy, the node is not run); the input lives
 * as long as the view is read. */
static void test_views_alias(void)
{
    const nn_op_def *r = nn_op_get(NN_OP_RESHAPE), *u = nn_op_get(NN_OP_RELU);
    if (!r || !u) TEST_SKIP("Reshape/Relu not implemented yet");
    if (!(r->flags & NN_OPF_VIEW)) TEST_SKIP("Reshape is not flagged as a view");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    nn_shape s = shape2(16, 4), s2 = shape2(8, 8), s4 = shape2(4, 16);
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &s);
    nn_graph_mark_input(g, x);
    int64_t dims[2] = {8, 8};
    nn_shape ds = {.rank = 1, .d = {2}};
    int shp = nn_graph_add_const(g, "shape", FFU_DTYPE_I64, &ds, dims, sizeof dims, NN_COPY);
    int a = add(g, NN_OP_RELU, &x, 1, s);
    int rin[2] = {a, shp};
    int v = add(g, NN_OP_RESHAPE, rin, 2, s2);
    int b = add(g, NN_OP_RELU, &a, 1, s); /* a is still read after the view */
    int c = add(g, NN_OP_RELU, &v, 1, s2);
    int rin2[2] = {c, shp};
    int v2 = add(g, NN_OP_RESHAPE, rin2, 2, s4);
    int sum_in[2] = {b, v2};
    (void)sum_in;
    nn_graph_mark_output(g, b);
    nn_graph_mark_output(g, v2); /* an output view must be copied, not aliased */
    nn_plan_stats st;
    CHECK(nn_plan_memory(g, 1, &st) == FFU_OK);
    CHECK(plan_is_sound(g, &st));
    CHECK_EQ_INT(g->tensors[v].alias, a);
    CHECK_EQ_INT(g->tensors[v].offset, g->tensors[a].offset);
    CHECK(nn_plan_node_is_view(g, &g->nodes[g->tensors[v].producer]));
    CHECK_EQ_INT(g->tensors[v2].alias, -1);
    CHECK(!nn_plan_node_is_view(g, &g->nodes[g->tensors[v2].producer]));
    CHECK_EQ_INT(st.nviews, 1);
    /* c reads the view of a while b (an output) also read a: c must not land on a */
    CHECK(g->tensors[c].offset != g->tensors[a].offset || g->tensors[c].alias == a);
    nn_graph_destroy(g);
}

/* Random DAGs of Relu/Add over a few sizes: every plan is sound and never bigger
 * than the sum of all sizes. */
static void test_random_graphs_sound(void)
{
    if (!nn_op_get(NN_OP_RELU) || !nn_op_get(NN_OP_ADD)) TEST_SKIP("Relu/Add not implemented");
    uint64_t seed = 12345;
    for (int iter = 0; iter < 200; iter++) {
        nn_graph *g;
        CHECK(nn_graph_create(&g) == FFU_OK);
        nn_shape sizes[3] = {shape2(3, 5), shape2(7, 13), shape2(1, 1000)};
        int bysize[3][128], cnt[3] = {0};
        for (int k = 0; k < 3; k++) {
            char name[16];
            snprintf(name, sizeof name, "in%d", k);
            int t = nn_graph_add_tensor(g, name, FFU_DTYPE_F32, &sizes[k]);
            nn_graph_mark_input(g, t);
            bysize[k][cnt[k]++] = t;
        }
        int nodes = 5 + (int)(test_rand_u64(&seed) % 60);
        for (int i = 0; i < nodes; i++) {
            int k = (int)(test_rand_u64(&seed) % 3);
            int a = bysize[k][test_rand_u64(&seed) % (uint64_t)cnt[k]];
            int t;
            if (test_rand_u64(&seed) % 2) {
                int b = bysize[k][test_rand_u64(&seed) % (uint64_t)cnt[k]];
                int in[2] = {a, b};
                t = add(g, NN_OP_ADD, in, 2, sizes[k]);
            } else {
                t = add(g, NN_OP_RELU, &a, 1, sizes[k]);
            }
            CHECK(t >= 0);
            if (cnt[k] < 128) bysize[k][cnt[k]++] = t;
            if (test_rand_u64(&seed) % 10 == 0) nn_graph_mark_output(g, t);
        }
        nn_graph_mark_output(g, g->ntensors - 1);
        for (int alias = 0; alias < 2; alias++) {
            nn_plan_stats st;
            CHECK(nn_plan_memory(g, alias, &st) == FFU_OK);
            if (!plan_is_sound(g, &st)) {
                fprintf(stderr, "iteration %d (alias %d) is unsound\n", iter, alias);
                CHECK(0);
            }
            size_t naive = 0;
            for (int t = 0; t < g->ntensors; t++)
                if (g->tensors[t].offset >= 0 && g->tensors[t].alias < 0)
                    naive += aligned(g->tensors[t].nbytes);
            CHECK(st.arena_bytes <= naive);
        }
        nn_graph_destroy(g);
    }
}

/* Tensors nobody reads (a second output of a node) still get memory for the kernel
 * to write, and give it back right away. */
static void test_unread_outputs(void)
{
    if (!nn_op_get(NN_OP_RELU)) TEST_SKIP("Relu is not implemented yet");
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    nn_shape s = shape2(2, 32);
    int x = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &s);
    nn_graph_mark_input(g, x);
    int a = add(g, NN_OP_RELU, &x, 1, s);
    int b = add(g, NN_OP_RELU, &x, 1, s); /* dead end */
    int c = add(g, NN_OP_RELU, &a, 1, s);
    int d = add(g, NN_OP_RELU, &c, 1, s);
    nn_graph_mark_output(g, d);
    nn_plan_stats st;
    CHECK(nn_plan_memory(g, 0, &st) == FFU_OK);
    CHECK(g->tensors[b].offset >= 0);
    CHECK(plan_is_sound(g, &st));
    CHECK_EQ_INT(st.arena_bytes, 4 * aligned(256)); /* x, d, a, and b reused for c */
    nn_graph_destroy(g);
}

/* x -> t[1] -> ... -> t[n], n ReLUs of shape 4x100, t[n] the output; t[0] is x. */
static nn_graph *relu_chain(int n, int *t)
{
    nn_graph *g;
    if (nn_graph_create(&g) != FFU_OK) return NULL;
    nn_shape s = shape2(4, 100);
    t[0] = nn_graph_add_tensor(g, "x", FFU_DTYPE_F32, &s);
    nn_graph_mark_input(g, t[0]);
    for (int i = 1; i <= n; i++) t[i] = add(g, NN_OP_RELU, &t[i - 1], 1, s);
    nn_graph_mark_output(g, t[n]);
    return g;
}

/* What a backend may ask at prepare (backend.h; the cpu band pipelines do): x -> a -> b ->
 * c -> d -> e with b and c unbacked gets no memory for them, and a kept through the node
 * that makes d does not share its block with d; without keep_to, d takes a's block (a's
 * last reader ran before), which is what a pipeline reading a at d's node must avoid. */
static void test_backend_requests(void)
{
    if (!nn_op_get(NN_OP_RELU)) TEST_SKIP("Relu is not implemented yet");
    for (int keep = 0; keep <= 1; keep++) {
        int t[6];
        nn_graph *g = relu_chain(5, t);
        CHECK(g != NULL);
        if (!g) return;
        int a = t[1], b = t[2], c = t[3], d = t[4];
        g->tensors[b].unbacked = g->tensors[c].unbacked = 1;
        if (keep) g->tensors[a].keep_to = g->tensors[d].producer;
        nn_plan_stats st;
        CHECK(nn_plan_memory(g, 0, &st) == FFU_OK);
        CHECK(g->tensors[b].offset == -1 && g->tensors[c].offset == -1);
        CHECK(g->tensors[a].offset >= 0 && g->tensors[d].offset >= 0);
        CHECK_EQ_INT(g->tensors[a].offset == g->tensors[d].offset, !keep);
        CHECK_EQ_INT(st.arena_bytes, (keep ? 4 : 3) * aligned(1600)); /* x, e, a, d */
        nn_graph_destroy(g);
    }
}

/* A value a backend keeps through a node (keep_to) is read there in the backend's own
 * order (a band pipeline), so that node's output is never planned over it in place:
 * x -> a -> b -> c with aliasing on; without keep_to, b writes over a. */
static void test_keep_to_not_in_place(void)
{
    if (!nn_op_get(NN_OP_RELU)) TEST_SKIP("Relu is not implemented yet");
    for (int keep = 0; keep <= 1; keep++) {
        int t[4];
        nn_graph *g = relu_chain(3, t);
        CHECK(g != NULL);
        if (!g) return;
        int a = t[1], b = t[2];
        if (keep) g->tensors[a].keep_to = g->tensors[b].producer;
        nn_plan_stats st;
        CHECK(nn_plan_memory(g, 1, &st) == FFU_OK);
        CHECK(g->tensors[a].offset >= 0 && g->tensors[b].offset >= 0);
        CHECK_EQ_INT(g->tensors[b].offset == g->tensors[a].offset, !keep);
        CHECK_EQ_INT(st.ninplace, keep ? 0 : 1);
        nn_graph_destroy(g);
    }
}

TEST_MAIN(test_chain_reuses_two_buffers, test_inputs_and_outputs_are_dedicated, test_views_alias,
          test_random_graphs_sound, test_unread_outputs, test_backend_requests,
          test_keep_to_not_in_place)
