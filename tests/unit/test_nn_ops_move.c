/* Reference kernels of the data-movement ops (src/nn/ops/movement.c): Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Gather,
 * GatherElements, Expand, Tile. Shapes from constant and non-constant shape inputs,
 * negative axes, the Slice clamping rules, every element size, and Transpose against
 * an index-by-index reference for every 4-D permutation. */
#include <math.h>

#include "nn/ir.h"
#include "test.h"
#include "test_nn_ops.h"


static int64_t *iota64(int64_t n)
{
    int64_t *p = malloc(sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = i;
    return p;
}

static int shape_is(const nn_tensor *t, int rank, const int64_t *d)
{
    if (t->shape.rank != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (t->shape.d[i] != d[i]) return 0;
    return 1;
}

/* ---- views ------------------------------------------------------------------------------- */

static void test_reshape(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int64_t *x = iota64(24);
    int xi = tin(t.g, FFU_DTYPE_I64, DIMS(2, 3, 4));
    int s1 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){0, -1});
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){xi, s1}, 2, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2, 12)));
    CHECK(memcmp(t.out[0], x, 24 * 8) == 0);
    CHECK(nn_op_get(NN_OP_RESHAPE)->flags & NN_OPF_VIEW);
    int s2 = tconst(t.g, FFU_DTYPE_I32, DIMS(4), (int32_t[]){-1, 1, 2, 3});
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){xi, s2}, 2, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(4, 1, 2, 3)));
    /* allowzero: 0 is a real zero */
    int e = tin(t.g, FFU_DTYPE_F32, DIMS(0, 3));
    int s3 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){3, 0});
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){e, s3}, 2, 1);
    nn_node_set_int(t.g, t.node, "allowzero", 1);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, 0)));
    /* without allowzero, 0 copies the input dim: [3, 3] for 0 elements is an error */
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){e, s3}, 2, 1);
    CHECK(nn_op_get(NN_OP_RESHAPE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    /* wrong element count, two -1 */
    int s4 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){5, -1});
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){xi, s4}, 2, 1);
    CHECK(nn_op_get(NN_OP_RESHAPE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    int s5 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){-1, -1});
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){xi, s5}, 2, 1);
    CHECK(nn_op_get(NN_OP_RESHAPE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    /* a computed shape: rank known from its length, dims not */
    int sv = tin(t.g, FFU_DTYPE_I64, DIMS(3));
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){xi, sv}, 2, 1);
    CHECK(nn_op_get(NN_OP_RESHAPE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(-1, -1, -1)));
    /* dynamic input dim with 0 and -1 */
    int dyn = tin(t.g, FFU_DTYPE_F32, DIMS(-1, 3, 4));
    t.node = tnode(t.g, NN_OP_RESHAPE, (int[]){dyn, s1}, 2, 1);
    CHECK(nn_op_get(NN_OP_RESHAPE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(-1, -1)));
    free(x);
    tfree(&t);
}

static void test_flatten_squeeze_unsqueeze(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3, 4, 5));
    static const struct {
        int64_t axis;
        int64_t a, b;
    } fl[] = {{0, 1, 120}, {1, 2, 60}, {3, 24, 5}, {4, 120, 1}, {-1, 24, 5}, {-4, 1, 120}};
    for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
        t.node = tnode(t.g, NN_OP_FLATTEN, (int[]){xi}, 1, 1);
        nn_node_set_int(t.g, t.node, "axis", fl[k].axis);
        CHECK(nn_op_get(NN_OP_FLATTEN)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
        CHECK(shape_is(tout(&t, 0), DIMS(fl[k].a, fl[k].b)));
    }
    t.node = tnode(t.g, NN_OP_FLATTEN, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "axis", 5);
    CHECK(nn_op_get(NN_OP_FLATTEN)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);

    int yi = tin(t.g, FFU_DTYPE_U8, DIMS(1, 3, 1, 2));
    uint8_t y[6] = {1, 2, 3, 4, 5, 6};
    t.node = tnode(t.g, NN_OP_SQUEEZE, (int[]){yi}, 1, 1);
    CHECK(trun(&t, (void *[]){y}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, 2)));
    CHECK(memcmp(t.out[0], y, 6) == 0);
    int ax = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){-2});
    t.node = tnode(t.g, NN_OP_SQUEEZE, (int[]){yi, ax}, 2, 1);
    CHECK(trun(&t, (void *[]){y}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(1, 3, 2)));
    int bad = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){1});
    t.node = tnode(t.g, NN_OP_SQUEEZE, (int[]){yi, bad}, 2, 1);
    CHECK(nn_op_get(NN_OP_SQUEEZE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);

    int zi = tin(t.g, FFU_DTYPE_F32, DIMS(3, 4));
    int u1 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){-1, 0});
    t.node = tnode(t.g, NN_OP_UNSQUEEZE, (int[]){zi, u1}, 2, 1);
    CHECK(nn_op_get(NN_OP_UNSQUEEZE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(1, 3, 4, 1)));
    int u2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){2, 0});
    t.node = tnode(t.g, NN_OP_UNSQUEEZE, (int[]){zi, u2}, 2, 1);
    CHECK(nn_op_get(NN_OP_UNSQUEEZE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(1, 3, 1, 4)));
    int u3 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){3});
    t.node = tnode(t.g, NN_OP_UNSQUEEZE, (int[]){zi, u3}, 2, 1);
    CHECK(nn_op_get(NN_OP_UNSQUEEZE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    int u4 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){1, 1});
    t.node = tnode(t.g, NN_OP_UNSQUEEZE, (int[]){zi, u4}, 2, 1);
    CHECK(nn_op_get(NN_OP_UNSQUEEZE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    /* scalar -> [1] (shape chains do this constantly) */
    int sc = tin(t.g, FFU_DTYPE_I64, SCALAR);
    int u5 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){0});
    t.node = tnode(t.g, NN_OP_UNSQUEEZE, (int[]){sc, u5}, 2, 1);
    int64_t seven = 7;
    CHECK(trun(&t, (void *[]){&seven}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(1)));
    CHECK_EQ_INT(((int64_t *)t.out[0])[0], 7);
    /* the attribute form (graphs built without the loader's upgrade) */
    t.node = tnode(t.g, NN_OP_UNSQUEEZE, (int[]){zi}, 1, 1);
    nn_node_set_ints(t.g, t.node, "axes", (int64_t[]){1}, 1);
    CHECK(nn_op_get(NN_OP_UNSQUEEZE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, 1, 4)));
    tfree(&t);
}

/* ---- Transpose --------------------------------------------------------------------------- */

/* Runs Transpose(perm) on a tensor of dims d filled with 0..n-1 in dtype dt and checks
 * every output element against the explicit index map. */
static int check_transpose(ffu_dtype dt, int rank, const int64_t *d, const int *perm)
{
    tg t = {0};
    nn_graph_create(&t.g);
    nn_shape s = shp(rank, d);
    int64_t n = nn_shape_numel(&s);
    int64_t *idx = iota64(n);
    void *x = malloc((size_t)(n + 1) * 8);
    nn_convert(idx, FFU_DTYPE_I64, x, dt, (size_t)n);
    int xi = tin(t.g, dt, rank, d);
    t.node = tnode(t.g, NN_OP_TRANSPOSE, (int[]){xi}, 1, 1);
    int64_t p64[8];
    for (int i = 0; i < rank; i++)
        p64[i] = perm[i];
    nn_node_set_ints(t.g, t.node, "perm", p64, rank);
    int bad = trun(&t, (void *[]){x}) != FFU_OK;
    /* the expected output: input index of each output element, in dt, compared bitwise */
    int64_t *want = malloc((size_t)(n + 1) * 8);
    void *wantx = malloc((size_t)(n + 1) * 8);
    int64_t ist[8], acc = 1;
    for (int i = rank - 1; i >= 0; i--)
        ist[i] = acc, acc *= d[i];
    for (int64_t o = 0; o < n; o++) {
        int64_t rem = o, off = 0;
        for (int i = rank - 1; i >= 0; i--) {
            int64_t od = d[perm[i]];
            off += (rem % od) * ist[perm[i]];
            rem /= od;
        }
        want[o] = off;
    }
    nn_convert(want, FFU_DTYPE_I64, wantx, dt, (size_t)n);
    size_t es = ffu_dtype_size(dt);
    for (int64_t o = 0; !bad && o < n; o++)
        if (memcmp((char *)t.out[0] + o * (int64_t)es, (char *)wantx + o * (int64_t)es, es)) {
            fprintf(stderr, "transpose %s elem %lld differs (want input %lld)\n",
                    ffu_dtype_name(dt), (long long)o, (long long)want[o]);
            bad = 1;
        }
    free(idx), free(x), free(want), free(wantx);
    tfree(&t);
    return bad;
}

static void test_transpose_all_4d(void)
{
    static const ffu_dtype types[] = {FFU_DTYPE_U8, FFU_DTYPE_F16, FFU_DTYPE_F32, FFU_DTYPE_I64};
    int perm[4];
    int count = 0;
    for (perm[0] = 0; perm[0] < 4; perm[0]++)
        for (perm[1] = 0; perm[1] < 4; perm[1]++)
            for (perm[2] = 0; perm[2] < 4; perm[2]++)
                for (perm[3] = 0; perm[3] < 4; perm[3]++) {
                    if (perm[0] == perm[1] || perm[0] == perm[2] || perm[0] == perm[3] ||
                        perm[1] == perm[2] || perm[1] == perm[3] || perm[2] == perm[3])
                        continue;
                    count++;
                    for (int k = 0; k < 4; k++)
                        CHECK(!check_transpose(types[k], DIMS(2, 3, 4, 5), perm));
                    CHECK(!check_transpose(FFU_DTYPE_F32, DIMS(1, 3, 1, 5), perm));
                    CHECK(!check_transpose(FFU_DTYPE_F32, DIMS(3, 1, 7, 1), perm));
                }
    CHECK_EQ_INT(count, 24);
}

static void test_transpose_layouts(void)
{
    /* NCHW <-> NHWC at sizes that are not tile multiples */
    CHECK(!check_transpose(FFU_DTYPE_F32, DIMS(2, 37, 9, 35), (int[]){0, 2, 3, 1}));
    CHECK(!check_transpose(FFU_DTYPE_F32, DIMS(2, 9, 35, 37), (int[]){0, 3, 1, 2}));
    CHECK(!check_transpose(FFU_DTYPE_U8, DIMS(65, 33), (int[]){1, 0}));
    CHECK(!check_transpose(FFU_DTYPE_I64, DIMS(2, 3, 2, 3, 2, 3), (int[]){5, 0, 3, 1, 4, 2}));
    CHECK(!check_transpose(FFU_DTYPE_F32, DIMS(1, 1, 1), (int[]){2, 0, 1}));
    CHECK(!check_transpose(FFU_DTYPE_F32, DIMS(4, 0, 3), (int[]){2, 0, 1}));
    /* default perm reverses */
    tg t = {0};
    nn_graph_create(&t.g);
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3, 4));
    t.node = tnode(t.g, NN_OP_TRANSPOSE, (int[]){xi}, 1, 1);
    CHECK(nn_op_get(NN_OP_TRANSPOSE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(4, 3, 2)));
    nn_node_set_ints(t.g, t.node, "perm", (int64_t[]){0, 0, 1}, 3);
    CHECK(nn_op_get(NN_OP_TRANSPOSE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    tfree(&t);
}

/* ---- Concat / Split ----------------------------------------------------------------------- */

static void test_concat(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float a[4] = {1, 2, 3, 4}, b[6] = {5, 6, 7, 8, 9, 10};
    int ia = tin(t.g, FFU_DTYPE_F32, DIMS(2, 2)), ib = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3)),
        ie = tin(t.g, FFU_DTYPE_F32, DIMS(2, 0));
    t.node = tnode(t.g, NN_OP_CONCAT, (int[]){ia, ie, ib}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", -1);
    CHECK(trun(&t, (void *[]){a, NULL, b}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2, 5)));
    CHECK(memcmp(t.out[0], (float[]){1, 2, 5, 6, 7, 3, 4, 8, 9, 10}, 40) == 0);
    t.node = tnode(t.g, NN_OP_CONCAT, (int[]){ia, ib}, 2, 1); /* axis 0: 2 vs 3 columns */
    CHECK(nn_op_get(NN_OP_CONCAT)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    /* i64 1-D, as in Shape -> Concat -> Reshape chains */
    int c1 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){-1});
    int c2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){3, 4});
    t.node = tnode(t.g, NN_OP_CONCAT, (int[]){c1, c2}, 2, 1);
    CHECK(trun(&t, (void *[]){NULL, NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int64_t[]){-1, 3, 4}, 24) == 0);
    int ii = tin(t.g, FFU_DTYPE_I32, DIMS(2, 2));
    t.node = tnode(t.g, NN_OP_CONCAT, (int[]){ia, ii}, 2, 1);
    CHECK(nn_op_get(NN_OP_CONCAT)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    tfree(&t);
}

static void test_split(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int64_t *x = iota64(14);
    int xi = tin(t.g, FFU_DTYPE_I64, DIMS(2, 7));
    t.node = tnode(t.g, NN_OP_SPLIT, (int[]){xi}, 1, 3);
    nn_node_set_int(t.g, t.node, "axis", -1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    /* 7 in 3 parts: 3, 3, 1 (opset 18's rule for num_outputs) */
    CHECK(shape_is(tout(&t, 0), DIMS(2, 3)));
    CHECK(shape_is(tout(&t, 2), DIMS(2, 1)));
    CHECK(memcmp(t.out[0], (int64_t[]){0, 1, 2, 7, 8, 9}, 48) == 0);
    CHECK(memcmp(t.out[2], (int64_t[]){6, 13}, 16) == 0);
    int sp = tconst(t.g, FFU_DTYPE_I64, DIMS(3), (int64_t[]){2, 0, 5});
    t.node = tnode(t.g, NN_OP_SPLIT, (int[]){xi, sp}, 2, 3);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 1), DIMS(2, 0)));
    CHECK(memcmp(t.out[0], (int64_t[]){0, 1, 7, 8}, 32) == 0);
    CHECK(memcmp(t.out[2], (int64_t[]){2, 3, 4, 5, 6, 9, 10, 11, 12, 13}, 80) == 0);
    int bad = tconst(t.g, FFU_DTYPE_I64, DIMS(3), (int64_t[]){2, 2, 2});
    t.node = tnode(t.g, NN_OP_SPLIT, (int[]){xi, bad}, 2, 3);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK(nn_op_get(NN_OP_SPLIT)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_SPLIT, (int[]){xi}, 1, 2); /* axis 0 in halves */
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(shape_is(tout(&t, 1), DIMS(1, 7)));
    CHECK(memcmp(t.out[1], x + 7, 56) == 0);
    free(x);
    tfree(&t);
}

/* ---- Slice -------------------------------------------------------------------------------- */

/* 1-D slice of 0..9; want[] terminated by -1. */
static int check_slice1(int64_t s, int64_t e, int64_t step, const int64_t *want)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int64_t *x = iota64(10);
    int xi = tin(t.g, FFU_DTYPE_I64, DIMS(10));
    int is = tconst(t.g, FFU_DTYPE_I64, DIMS(1), &s), ie = tconst(t.g, FFU_DTYPE_I64, DIMS(1), &e),
        ia = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){0}),
        ip = tconst(t.g, FFU_DTYPE_I64, DIMS(1), &step);
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, is, ie, ia, ip}, 5, 1);
    int bad = trun(&t, (void *[]){x}) != FFU_OK;
    int64_t n = 0;
    while (want[n] >= 0)
        n++;
    if (!bad && tout(&t, 0)->shape.d[0] != n) {
        fprintf(stderr, "slice %lld:%lld:%lld has %lld elements, want %lld\n", (long long)s,
                (long long)e, (long long)step, (long long)tout(&t, 0)->shape.d[0], (long long)n);
        bad = 1;
    }
    if (!bad && n && memcmp(t.out[0], want, (size_t)n * 8) != 0) bad = 1;
    free(x);
    tfree(&t);
    return bad;
}

static void test_slice_1d(void)
{
    CHECK(!check_slice1(1, 8, 3, (int64_t[]){1, 4, 7, -1}));
    CHECK(!check_slice1(-1, INT64_MIN, -1, (int64_t[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0, -1}));
    CHECK(!check_slice1(8, 1, -3, (int64_t[]){8, 5, 2, -1}));
    CHECK(!check_slice1(20, 30, 1, (int64_t[]){-1}));
    CHECK(!check_slice1(-20, 3, 1, (int64_t[]){0, 1, 2, -1}));
    CHECK(!check_slice1(5, INT64_MAX, 2, (int64_t[]){5, 7, 9, -1}));
    CHECK(!check_slice1(INT64_MAX, -20, -4, (int64_t[]){9, 5, 1, -1}));
    CHECK(!check_slice1(0, -1, 1, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, -1}));
    CHECK(!check_slice1(3, 3, 1, (int64_t[]){-1}));
    CHECK(!check_slice1(3, 5, -1, (int64_t[]){-1}));
    CHECK(!check_slice1(-3, -1, INT64_MAX, (int64_t[]){7, -1}));
    CHECK(!check_slice1(2, 0, INT64_MIN, (int64_t[]){2, -1}));
}

static void test_slice_nd(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int64_t *x = iota64(60);
    int xi = tin(t.g, FFU_DTYPE_I64, DIMS(3, 4, 5));
    /* axes [-1, 0], steps [-2, 2]: rows 0 and 2, columns 4, 2, 0 */
    int is = tconst(t.g, FFU_DTYPE_I32, DIMS(2), (int32_t[]){-1, 0});
    int ie = tconst(t.g, FFU_DTYPE_I32, DIMS(2), (int32_t[]){-100, 100});
    int ia = tconst(t.g, FFU_DTYPE_I32, DIMS(2), (int32_t[]){-1, 0});
    int ip = tconst(t.g, FFU_DTYPE_I32, DIMS(2), (int32_t[]){-2, 2});
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, is, ie, ia, ip}, 5, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2, 4, 3)));
    int64_t *o = t.out[0];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 3; c++)
                CHECK_EQ_INT(o[(a * 4 + b) * 3 + c], (a * 2) * 20 + b * 5 + (4 - 2 * c));
    /* no axes, no steps: the first dims */
    int s2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){1, 1});
    int e2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){2, 3});
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, s2, e2}, 3, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(1, 2, 5)));
    CHECK(memcmp(t.out[0], x + 25, 80) == 0);
    /* omitted axes (-1) with steps given */
    int p2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){1, 2});
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, s2, e2, -1, p2}, 5, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(1, 1, 5)));
    CHECK(memcmp(t.out[0], x + 25, 40) == 0);
    /* non-constant starts: only the sliced dims are unknown */
    int sv = tin(t.g, FFU_DTYPE_I64, DIMS(1));
    int a1 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){1});
    int e1 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){3});
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, sv, e1, a1}, 4, 1);
    CHECK(nn_op_get(NN_OP_SLICE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, -1, 5)));
    /* errors: step 0, repeated axis, length mismatch */
    int z = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){0});
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, a1, e1, a1, z}, 5, 1);
    CHECK(nn_op_get(NN_OP_SLICE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    int rep = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){1, -2});
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, s2, e2, rep}, 4, 1);
    CHECK(nn_op_get(NN_OP_SLICE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_SLICE, (int[]){xi, s2, e1}, 3, 1);
    CHECK(nn_op_get(NN_OP_SLICE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    free(x);
    tfree(&t);
}

/* ---- Gather / GatherElements ---------------------------------------------------------------- */

static void test_gather(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[12] = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(3, 4));
    int idx = tconst(t.g, FFU_DTYPE_I64, DIMS(2, 2), (int64_t[]){0, -1, 2, 1});
    t.node = tnode(t.g, NN_OP_GATHER, (int[]){xi, idx}, 2, 1);
    nn_node_set_int(t.g, t.node, "axis", -1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, 2, 2)));
    CHECK(memcmp(t.out[0], (float[]){0, 3, 2, 1, 10, 13, 12, 11, 20, 23, 22, 21}, 48) == 0);
    int sc = tconst(t.g, FFU_DTYPE_I32, SCALAR, (int32_t[]){-2});
    t.node = tnode(t.g, NN_OP_GATHER, (int[]){xi, sc}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(4)));
    CHECK(memcmp(t.out[0], x + 4, 16) == 0);
    int oob = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){3});
    t.node = tnode(t.g, NN_OP_GATHER, (int[]){xi, oob}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_ERR_FORMAT);
    /* Shape -> Gather(axis 0, scalar) on i64 */
    int sh = tconst(t.g, FFU_DTYPE_I64, DIMS(4), (int64_t[]){1, 3, 224, 224});
    int two = tconst(t.g, FFU_DTYPE_I64, SCALAR, (int64_t[]){2});
    t.node = tnode(t.g, NN_OP_GATHER, (int[]){sh, two}, 2, 1);
    CHECK(trun(&t, (void *[]){NULL, NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.rank, 0);
    CHECK_EQ_INT(((int64_t *)t.out[0])[0], 224);
    tfree(&t);
}

static void test_gather_elements(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int32_t x[4] = {1, 2, 3, 4};
    int xi = tin(t.g, FFU_DTYPE_I32, DIMS(2, 2));
    int idx = tconst(t.g, FFU_DTYPE_I64, DIMS(2, 2), (int64_t[]){0, 0, 1, 0});
    t.node = tnode(t.g, NN_OP_GATHER_ELEMENTS, (int[]){xi, idx}, 2, 1);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int32_t[]){1, 1, 4, 3}, 16) == 0);
    int neg = tconst(t.g, FFU_DTYPE_I32, DIMS(1, 2), (int32_t[]){-1, 0});
    t.node = tnode(t.g, NN_OP_GATHER_ELEMENTS, (int[]){xi, neg}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(1, 2)));
    CHECK(memcmp(t.out[0], (int32_t[]){3, 2}, 8) == 0);
    int oob = tconst(t.g, FFU_DTYPE_I64, DIMS(1, 1), (int64_t[]){2});
    t.node = tnode(t.g, NN_OP_GATHER_ELEMENTS, (int[]){xi, oob}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_ERR_FORMAT);
    tfree(&t);
}

/* ---- Expand / Tile -------------------------------------------------------------------------- */

static void test_expand(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[3] = {1, 2, 3};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(3, 1));
    int s = tconst(t.g, FFU_DTYPE_I64, DIMS(3), (int64_t[]){2, 1, 4});
    t.node = tnode(t.g, NN_OP_EXPAND, (int[]){xi, s}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2, 3, 4)));
    float *o = t.out[0];
    for (int i = 0; i < 24; i++)
        CHECK_NEAR(o[i], x[(i / 4) % 3], 0);
    /* a shorter target keeps the input's dims (bidirectional broadcast) */
    int s1 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){1});
    t.node = tnode(t.g, NN_OP_EXPAND, (int[]){xi, s1}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, 1)));
    CHECK(memcmp(t.out[0], x, 12) == 0);
    uint8_t b = 1;
    int bi = tin(t.g, FFU_DTYPE_BOOL, SCALAR);
    int s2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){2, 3});
    t.node = tnode(t.g, NN_OP_EXPAND, (int[]){bi, s2}, 2, 1);
    CHECK(trun(&t, (void *[]){&b, NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){1, 1, 1, 1, 1, 1}, 6) == 0);
    int s3 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){2, 2});
    t.node = tnode(t.g, NN_OP_EXPAND, (int[]){xi, s3}, 2, 1);
    CHECK(nn_op_get(NN_OP_EXPAND)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    tfree(&t);
}

static void test_tile(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    uint16_t x[6] = {1, 2, 3, 4, 5, 6};
    int xi = tin(t.g, FFU_DTYPE_F16, DIMS(2, 3));
    int r = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){2, 2});
    t.node = tnode(t.g, NN_OP_TILE, (int[]){xi, r}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(4, 6)));
    uint16_t *o = t.out[0];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            CHECK_EQ_INT(o[i * 6 + j], x[(i % 2) * 3 + j % 3]);
    int r0 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){0, 3});
    t.node = tnode(t.g, NN_OP_TILE, (int[]){xi, r0}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(0, 9)));
    int r1 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){2});
    t.node = tnode(t.g, NN_OP_TILE, (int[]){xi, r1}, 2, 1);
    CHECK(nn_op_get(NN_OP_TILE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    int rv = tin(t.g, FFU_DTYPE_I64, DIMS(2));
    t.node = tnode(t.g, NN_OP_TILE, (int[]){xi, rv}, 2, 1);
    CHECK(nn_op_get(NN_OP_TILE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(-1, -1)));
    tfree(&t);
}

TEST_MAIN(test_reshape, test_flatten_squeeze_unsqueeze, test_transpose_all_4d,
          test_transpose_layouts, test_concat, test_split, test_slice_1d, test_slice_nd,
          test_gather, test_gather_elements, test_expand, test_tile)
