/* Reference kernels of the data-movement ops (src/nn/ops/movement.c): Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Gather,
 * GatherElements, Expand, Tile; and of the index, scan and matrix ops (index.c,
 * scan.c, matrix.c): GatherND, ScatterND, ScatterElements, OneHot, CumSum, TopK,
 * Trilu, EyeLike -- hand-checked examples, hostile indices and attributes. Shapes from
 * constant and non-constant shape inputs, negative axes, the Slice clamping rules, every
 * element size, and Transpose against an index-by-index reference for every 4-D
 * permutation. */
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

/* ---- Trilu, EyeLike -------------------------------------------------------------------------- */

/* Shape inference alone (rejection cases). */
static ffu_status infer_only(tg *t)
{
    nn_node *n = &t->g->nodes[t->node];
    return nn_op_get(n->op)->infer(t->g, n);
}

static void test_trilu_eye_like(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int32_t x[12];
    for (int i = 0; i < 12; i++)
        x[i] = i + 1;
    int xi = tin(t.g, FFU_DTYPE_I32, DIMS(3, 4));
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){xi}, 1, 1); /* upper, k = 0: j >= i */
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int32_t[]){1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}, 48) == 0);
    int km1 = tconst(t.g, FFU_DTYPE_I64, SCALAR, (int64_t[]){-1});
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){xi, km1}, 2, 1); /* lower, k = -1: j <= i - 1 */
    nn_node_set_int(t.g, t.node, "upper", 0);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int32_t[]){0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}, 48) == 0);
    /* k from the data at run time; extreme k keeps all or nothing without overflow */
    int kv = tin(t.g, FFU_DTYPE_I64, DIMS(1));
    int64_t kbig = INT64_MAX, ksmall = INT64_MIN, k2 = 2;
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){xi, kv}, 2, 1);
    CHECK(trun(&t, (void *[]){x, &k2}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int32_t[]){0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}, 48) == 0);
    CHECK(trun(&t, (void *[]){x, &kbig}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int32_t[12]){0}, 48) == 0);
    CHECK(trun(&t, (void *[]){x, &ksmall}) == FFU_OK);
    CHECK(memcmp(t.out[0], x, 48) == 0);
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){xi, kv}, 2, 1);
    nn_node_set_int(t.g, t.node, "upper", 0);
    CHECK(trun(&t, (void *[]){x, &kbig}) == FFU_OK);
    CHECK(memcmp(t.out[0], x, 48) == 0);
    /* a stack of matrices, f16 (bytes move unchanged), and empty rows */
    uint16_t h[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int hi = tin(t.g, FFU_DTYPE_F16, DIMS(2, 2, 2));
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){hi}, 1, 1);
    nn_node_set_int(t.g, t.node, "upper", 0);
    CHECK(trun(&t, (void *[]){h}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint16_t[]){1, 0, 3, 4, 5, 0, 7, 8}, 16) == 0);
    int ei = tin(t.g, FFU_DTYPE_F32, DIMS(0, 3));
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){ei}, 1, 1);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    /* rejections: rank 1, k of two values, a float k */
    int r1 = tin(t.g, FFU_DTYPE_F32, DIMS(4));
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){r1}, 1, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int k2v = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){0, 1});
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){xi, k2v}, 2, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int kf = tconst(t.g, FFU_DTYPE_F32, SCALAR, (float[]){1});
    t.node = tnode(t.g, NN_OP_TRILU, (int[]){xi, kf}, 2, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);

    /* EyeLike: ones where j - i == k, in the input's type or "dtype" */
    t.node = tnode(t.g, NN_OP_EYE_LIKE, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "k", 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int32_t[]){0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 48) == 0);
    t.node = tnode(t.g, NN_OP_EYE_LIKE, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "k", -2);
    nn_node_set_int(t.g, t.node, "dtype", FFU_DTYPE_F32);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(tout(&t, 0)->dtype == FFU_DTYPE_F32);
    CHECK(memcmp(t.out[0], (float[]){0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, 48) == 0);
    t.node = tnode(t.g, NN_OP_EYE_LIKE, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "k", INT64_MIN);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int32_t[12]){0}, 48) == 0);
    t.node = tnode(t.g, NN_OP_EYE_LIKE, (int[]){hi}, 1, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT); /* rank 3 */
    t.node = tnode(t.g, NN_OP_EYE_LIKE, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "dtype", 99);
    CHECK(infer_only(&t) == FFU_ERR_UNSUPPORTED);
    tfree(&t);
}

/* ---- GatherND, ScatterND --------------------------------------------------------------------- */

static void test_gather_nd(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int32_t d[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int x2 = tin(t.g, FFU_DTYPE_I32, DIMS(2, 2)), x3 = tin(t.g, FFU_DTYPE_I32, DIMS(2, 2, 2));
    /* full tuples pick elements, short ones pick rows */
    int i1 = tconst(t.g, FFU_DTYPE_I64, DIMS(2, 2), (int64_t[]){0, 0, 1, 1});
    t.node = tnode(t.g, NN_OP_GATHER_ND, (int[]){x2, i1}, 2, 1);
    CHECK(trun(&t, (void *[]){d, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2)));
    CHECK(memcmp(t.out[0], (int32_t[]){0, 3}, 8) == 0);
    int i2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2, 1), (int64_t[]){1, 0});
    t.node = tnode(t.g, NN_OP_GATHER_ND, (int[]){x2, i2}, 2, 1);
    CHECK(trun(&t, (void *[]){d, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2, 2)));
    CHECK(memcmp(t.out[0], (int32_t[]){2, 3, 0, 1}, 16) == 0);
    /* batch_dims = 1: item b's tuple indexes item b */
    t.node = tnode(t.g, NN_OP_GATHER_ND, (int[]){x3, i2}, 2, 1);
    nn_node_set_int(t.g, t.node, "batch_dims", 1);
    CHECK(trun(&t, (void *[]){d, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2, 2)));
    CHECK(memcmp(t.out[0], (int32_t[]){2, 3, 4, 5}, 16) == 0);
    /* negative indices count from the end; out of range is an error at run time */
    int iv = tin(t.g, FFU_DTYPE_I64, DIMS(1, 2));
    t.node = tnode(t.g, NN_OP_GATHER_ND, (int[]){x2, iv}, 2, 1);
    int64_t neg[2] = {-1, -2}, bad[2] = {2, 0}, worse[2] = {0, INT64_MIN};
    CHECK(trun(&t, (void *[]){d, neg}) == FFU_OK);
    CHECK_EQ_INT(((int32_t *)t.out[0])[0], 2);
    CHECK(trun(&t, (void *[]){d, bad}) == FFU_ERR_FORMAT);
    CHECK(trun(&t, (void *[]){d, worse}) == FFU_ERR_FORMAT);
    /* rejections: tuples longer than the rank, batch_dims too large, float indices */
    int i3 = tconst(t.g, FFU_DTYPE_I64, DIMS(1, 3), (int64_t[]){0, 0, 0});
    t.node = tnode(t.g, NN_OP_GATHER_ND, (int[]){x2, i3}, 2, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_GATHER_ND, (int[]){x2, i2}, 2, 1);
    nn_node_set_int(t.g, t.node, "batch_dims", 2);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int fi = tin(t.g, FFU_DTYPE_F32, DIMS(2, 1));
    t.node = tnode(t.g, NN_OP_GATHER_ND, (int[]){x2, fi}, 2, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    tfree(&t);
}

static void test_scatter_nd(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float d[8] = {1, 2, 3, 4, 5, 6, 7, 8}, u[4] = {9, 10, 11, 12};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(8)), ui = tin(t.g, FFU_DTYPE_F32, DIMS(4));
    int ii = tconst(t.g, FFU_DTYPE_I64, DIMS(4, 1), (int64_t[]){4, 3, 1, 7});
    t.node = tnode(t.g, NN_OP_SCATTER_ND, (int[]){xi, ii, ui}, 3, 1);
    CHECK(trun(&t, (void *[]){d, NULL, u}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){1, 11, 3, 10, 9, 6, 7, 12}, 32) == 0);
    CHECK(memcmp(d, (float[]){1, 2, 3, 4, 5, 6, 7, 8}, 32) == 0); /* the input is kept */
    static const char *const reds[] = {"add", "mul", "max", "min"};
    static const float want[4][8] = {{1, 13, 3, 14, 14, 6, 7, 20},
                                     {1, 22, 3, 40, 45, 6, 7, 96},
                                     {1, 11, 3, 10, 9, 6, 7, 12},
                                     {1, 2, 3, 4, 5, 6, 7, 8}};
    for (int r = 0; r < 4; r++) {
        t.node = tnode(t.g, NN_OP_SCATTER_ND, (int[]){xi, ii, ui}, 3, 1);
        nn_node_set_string(t.g, t.node, "reduction", reds[r]);
        CHECK(trun(&t, (void *[]){d, NULL, u}) == FFU_OK);
        CHECK(memcmp(t.out[0], want[r], 32) == 0);
    }
    /* rows of a 2-D tensor, duplicates accumulating, negative indices, int64 wrapping */
    int64_t m[6] = {1, 2, 3, 4, 5, 6}, mu[6] = {10, 20, 30, INT64_MAX, 1, 1};
    int mi = tin(t.g, FFU_DTYPE_I64, DIMS(3, 2)), mui = tin(t.g, FFU_DTYPE_I64, DIMS(3, 2));
    int rows = tconst(t.g, FFU_DTYPE_I32, DIMS(3, 1), (int32_t[]){-1, 0, 2});
    t.node = tnode(t.g, NN_OP_SCATTER_ND, (int[]){mi, rows, mui}, 3, 1);
    nn_node_set_string(t.g, t.node, "reduction", "add");
    CHECK(trun(&t, (void *[]){m, NULL, mu}) == FFU_OK);
    /* row 2 gets [10, 20] and [1, 1]; row 0's 2 + INT64_MAX wraps to INT64_MIN + 1 */
    CHECK(memcmp(t.out[0], (int64_t[]){31, INT64_MIN + 1, 3, 4, 16, 27}, 48) == 0);
    /* an index out of range is an error, whatever its size */
    int iv = tin(t.g, FFU_DTYPE_I64, DIMS(1, 1));
    float one = 1;
    int u1 = tin(t.g, FFU_DTYPE_F32, DIMS(1));
    t.node = tnode(t.g, NN_OP_SCATTER_ND, (int[]){xi, iv, u1}, 3, 1);
    int64_t big = 8, huge = INT64_MAX, low = -9;
    CHECK(trun(&t, (void *[]){d, &big, &one}) == FFU_ERR_FORMAT);
    CHECK(trun(&t, (void *[]){d, &huge, &one}) == FFU_ERR_FORMAT);
    CHECK(trun(&t, (void *[]){d, &low, &one}) == FFU_ERR_FORMAT);
    /* rejections: updates of the wrong shape, an unknown reduction, bool with add */
    int u3 = tin(t.g, FFU_DTYPE_F32, DIMS(3));
    t.node = tnode(t.g, NN_OP_SCATTER_ND, (int[]){xi, ii, u3}, 3, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_SCATTER_ND, (int[]){xi, ii, ui}, 3, 1);
    nn_node_set_string(t.g, t.node, "reduction", "xor");
    CHECK(infer_only(&t) == FFU_ERR_UNSUPPORTED);
    int bi = tin(t.g, FFU_DTYPE_BOOL, DIMS(8)), bu = tin(t.g, FFU_DTYPE_BOOL, DIMS(4));
    t.node = tnode(t.g, NN_OP_SCATTER_ND, (int[]){bi, ii, bu}, 3, 1);
    nn_node_set_string(t.g, t.node, "reduction", "add");
    CHECK(infer_only(&t) == FFU_ERR_UNSUPPORTED);
    tfree(&t);
}

static void test_scatter_elements(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float d[5] = {1, 2, 3, 4, 5}, u[2] = {1.1f, 2.1f};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(1, 5)), ui = tin(t.g, FFU_DTYPE_F32, DIMS(1, 2));
    int ii = tconst(t.g, FFU_DTYPE_I64, DIMS(1, 2), (int64_t[]){1, 3});
    t.node = tnode(t.g, NN_OP_SCATTER_ELEMENTS, (int[]){xi, ii, ui}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK(trun(&t, (void *[]){d, NULL, u}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){1, 1.1f, 3, 2.1f, 5}, 20) == 0);
    /* duplicates with add; negative index */
    int dup = tconst(t.g, FFU_DTYPE_I32, DIMS(1, 2), (int32_t[]){-4, 1});
    t.node = tnode(t.g, NN_OP_SCATTER_ELEMENTS, (int[]){xi, dup, ui}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", -1);
    nn_node_set_string(t.g, t.node, "reduction", "add");
    CHECK(trun(&t, (void *[]){d, NULL, u}) == FFU_OK);
    CHECK_NEAR(((float *)t.out[0])[1], 2 + 1.1f + 2.1f, 1e-6);
    /* axis 0 on 3x3 (the ONNX example) */
    float z[9] = {0}, u2[6] = {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f};
    int zi = tin(t.g, FFU_DTYPE_F32, DIMS(3, 3)), u2i = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3));
    int i2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2, 3), (int64_t[]){1, 0, 2, 0, 2, 1});
    t.node = tnode(t.g, NN_OP_SCATTER_ELEMENTS, (int[]){zi, i2, u2i}, 3, 1);
    CHECK(trun(&t, (void *[]){z, NULL, u2}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}, 36) == 0);
    /* out of range: an error, the output untouched by half an update */
    int iv = tin(t.g, FFU_DTYPE_I64, DIMS(1, 2));
    int64_t bad[2] = {0, 5};
    t.node = tnode(t.g, NN_OP_SCATTER_ELEMENTS, (int[]){xi, iv, ui}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK(trun(&t, (void *[]){d, bad, u}) == FFU_ERR_FORMAT);
    /* rejections: ranks differ, axis out of range, indices larger than data */
    int r1 = tin(t.g, FFU_DTYPE_I64, DIMS(2));
    t.node = tnode(t.g, NN_OP_SCATTER_ELEMENTS, (int[]){xi, r1, ui}, 3, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_SCATTER_ELEMENTS, (int[]){xi, ii, ui}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", 2);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int big = tin(t.g, FFU_DTYPE_I64, DIMS(2, 2)), bigu = tin(t.g, FFU_DTYPE_F32, DIMS(2, 2));
    t.node = tnode(t.g, NN_OP_SCATTER_ELEMENTS, (int[]){xi, big, bigu}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    tfree(&t);
}

static void test_one_hot(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int64_t idx[4] = {1, 9, -1, 0};
    int ii = tin(t.g, FFU_DTYPE_I64, DIMS(4));
    int dep = tconst(t.g, FFU_DTYPE_I64, SCALAR, (int64_t[]){3});
    int val = tconst(t.g, FFU_DTYPE_I32, DIMS(2), (int32_t[]){0, 5});
    t.node = tnode(t.g, NN_OP_ONE_HOT, (int[]){ii, dep, val}, 3, 1);
    CHECK(trun(&t, (void *[]){idx, NULL, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(4, 3)));
    /* 9 is outside [-3, 3): a row of off values, as the spec says */
    CHECK(memcmp(t.out[0], (int32_t[]){0, 5, 0, 0, 0, 0, 0, 0, 5, 5, 0, 0}, 48) == 0);
    t.node = tnode(t.g, NN_OP_ONE_HOT, (int[]){ii, dep, val}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", 0);
    CHECK(trun(&t, (void *[]){idx, NULL, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, 4)));
    CHECK(memcmp(t.out[0], (int32_t[]){0, 0, 0, 5, 5, 0, 0, 0, 0, 0, 5, 0}, 48) == 0);
    /* float indices and depth truncate; NaN is out of range */
    float fi[3] = {1.7f, NAN, -0.5f};
    int fii = tin(t.g, FFU_DTYPE_F32, DIMS(3));
    int fd = tconst(t.g, FFU_DTYPE_F32, DIMS(1), (float[]){2.9f});
    int fv = tconst(t.g, FFU_DTYPE_F32, DIMS(2), (float[]){-1, 1});
    t.node = tnode(t.g, NN_OP_ONE_HOT, (int[]){fii, fd, fv}, 3, 1);
    CHECK(trun(&t, (void *[]){fi, NULL, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3, 2)));
    CHECK(memcmp(t.out[0], (float[]){-1, 1, -1, -1, 1, -1}, 24) == 0);
    /* rejections: negative depth, three values, axis out of range, a huge depth */
    int nd = tconst(t.g, FFU_DTYPE_I64, SCALAR, (int64_t[]){-2});
    t.node = tnode(t.g, NN_OP_ONE_HOT, (int[]){ii, nd, val}, 3, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int v3 = tconst(t.g, FFU_DTYPE_I32, DIMS(3), (int32_t[]){0, 1, 2});
    t.node = tnode(t.g, NN_OP_ONE_HOT, (int[]){ii, dep, v3}, 3, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_ONE_HOT, (int[]){ii, dep, val}, 3, 1);
    nn_node_set_int(t.g, t.node, "axis", 2);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int hd = tconst(t.g, FFU_DTYPE_I64, SCALAR, (int64_t[]){(int64_t)1 << 62});
    t.node = tnode(t.g, NN_OP_ONE_HOT, (int[]){ii, hd, val}, 3, 1);
    CHECK(infer_only(&t) == FFU_ERR_TOO_LARGE);
    tfree(&t);
}

/* ---- CumSum, TopK ---------------------------------------------------------------------------- */

static void test_cum_sum(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    double x[5] = {1, 2, 3, 4, 5};
    int xi = tin(t.g, FFU_DTYPE_F64, DIMS(5));
    int a0 = tconst(t.g, FFU_DTYPE_I32, SCALAR, (int32_t[]){0});
    static const double want[4][5] = {{1, 3, 6, 10, 15}, {0, 1, 3, 6, 10},
                                      {15, 14, 12, 9, 5}, {14, 12, 9, 5, 0}};
    for (int k = 0; k < 4; k++) {
        t.node = tnode(t.g, NN_OP_CUM_SUM, (int[]){xi, a0}, 2, 1);
        nn_node_set_int(t.g, t.node, "exclusive", k & 1);
        nn_node_set_int(t.g, t.node, "reverse", k >> 1);
        CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
        CHECK(memcmp(t.out[0], want[k], 40) == 0);
    }
    /* 2-D along each axis (the axis a run-time input); i8 wraps instead of overflowing */
    int8_t m[6] = {1, 2, 3, 100, 100, 100};
    int mi = tin(t.g, FFU_DTYPE_I8, DIMS(2, 3)), av = tin(t.g, FFU_DTYPE_I64, DIMS(1));
    t.node = tnode(t.g, NN_OP_CUM_SUM, (int[]){mi, av}, 2, 1);
    int64_t ax0 = 0, axm1 = -1, ax2 = 2;
    CHECK(trun(&t, (void *[]){m, &ax0}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int8_t[]){1, 2, 3, 101, 102, 103}, 6) == 0);
    CHECK(trun(&t, (void *[]){m, &axm1}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int8_t[]){1, 3, 6, 100, -56, 44}, 6) == 0);
    CHECK(trun(&t, (void *[]){m, &ax2}) == FFU_ERR_FORMAT);
    /* rejections: a constant axis out of range, two axes, a float axis */
    int a5 = tconst(t.g, FFU_DTYPE_I64, SCALAR, (int64_t[]){INT64_MIN});
    t.node = tnode(t.g, NN_OP_CUM_SUM, (int[]){mi, a5}, 2, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int a2 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){0, 1});
    t.node = tnode(t.g, NN_OP_CUM_SUM, (int[]){mi, a2}, 2, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int af = tconst(t.g, FFU_DTYPE_F32, SCALAR, (float[]){0});
    t.node = tnode(t.g, NN_OP_CUM_SUM, (int[]){mi, af}, 2, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    tfree(&t);
}

static void test_top_k(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[5] = {3, 1, 3, 2, 3};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(5));
    int k2 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){2});
    int k3 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){3});
    /* ties: the lower index first */
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){xi, k2}, 2, 2);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2)) && tout(&t, 1)->dtype == FFU_DTYPE_I64);
    CHECK(memcmp(t.out[0], (float[]){3, 3}, 8) == 0);
    CHECK(memcmp(t.out[1], (int64_t[]){0, 2}, 16) == 0);
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){xi, k3}, 2, 2);
    nn_node_set_int(t.g, t.node, "largest", 0);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){1, 2, 3}, 12) == 0);
    CHECK(memcmp(t.out[1], (int64_t[]){1, 3, 0}, 24) == 0);
    /* along axis 0 of a 3x2 matrix */
    int32_t m[6] = {5, 1, 7, 1, 6, 9};
    int mi = tin(t.g, FFU_DTYPE_I32, DIMS(3, 2));
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){mi, k2}, 2, 2);
    nn_node_set_int(t.g, t.node, "axis", 0);
    CHECK(trun(&t, (void *[]){m, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(2, 2)));
    CHECK(memcmp(t.out[0], (int32_t[]){7, 9, 6, 1}, 16) == 0);
    CHECK(memcmp(t.out[1], (int64_t[]){1, 2, 2, 0}, 32) == 0);
    /* NaN orders above every number; i64 and u64 compare exactly (not through double) */
    float xn[3] = {1, NAN, 2};
    int ni = tin(t.g, FFU_DTYPE_F32, DIMS(3));
    int k1 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){1});
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){ni, k1}, 2, 2);
    CHECK(trun(&t, (void *[]){xn, NULL}) == FFU_OK);
    CHECK(isnan(((float *)t.out[0])[0]) && ((int64_t *)t.out[1])[0] == 1);
    int64_t big[2] = {INT64_MAX - 1, INT64_MAX};
    int bi = tin(t.g, FFU_DTYPE_I64, DIMS(2));
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){bi, k1}, 2, 2);
    CHECK(trun(&t, (void *[]){big, NULL}) == FFU_OK);
    CHECK_EQ_INT(((int64_t *)t.out[1])[0], 1);
    uint64_t ub[2] = {1, UINT64_MAX};
    int ubi = tin(t.g, FFU_DTYPE_U64, DIMS(2));
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){ubi, k1}, 2, 2);
    CHECK(trun(&t, (void *[]){ub, NULL}) == FFU_OK);
    CHECK_EQ_INT(((int64_t *)t.out[1])[0], 1);
    /* K = 0 gives empty outputs; K beyond the dim and negative K are errors */
    int k0 = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){0});
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){xi, k0}, 2, 2);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(0)));
    int kh = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){INT64_MAX});
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){xi, kh}, 2, 2);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    int kn = tconst(t.g, FFU_DTYPE_I64, DIMS(1), (int64_t[]){-1});
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){xi, kn}, 2, 2);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    /* a K known only at run time: the output dim is unknown until then */
    int kv = tin(t.g, FFU_DTYPE_I64, DIMS(1));
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){xi, kv}, 2, 2);
    CHECK(infer_only(&t) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(-1)));
    int sc = tin(t.g, FFU_DTYPE_F32, SCALAR);
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){sc, k1}, 2, 2);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_TOP_K, (int[]){xi, k1}, 2, 2);
    nn_node_set_int(t.g, t.node, "axis", 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    tfree(&t);
}

/* ---- ReverseSequence, Det ------------------------------------------------------------------- */

static void test_reverse_sequence_det(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    /* [time 3][batch 2][2]: entry 0 reverses its first 3 steps, entry 1 its first 1 */
    float x[12] = {0, 1, 10, 11, 2, 3, 12, 13, 4, 5, 14, 15};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(3, 2, 2));
    int li = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){3, 1});
    t.node = tnode(t.g, NN_OP_REVERSE_SEQUENCE, (int[]){xi, li}, 2, 1);
    nn_node_set_int(t.g, t.node, "time_axis", 0);
    nn_node_set_int(t.g, t.node, "batch_axis", 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){4, 5, 10, 11, 2, 3, 12, 13, 0, 1, 14, 15}, 48) == 0);
    /* a length beyond the time steps */
    int bad = tconst(t.g, FFU_DTYPE_I64, DIMS(2), (int64_t[]){4, 0});
    t.node = tnode(t.g, NN_OP_REVERSE_SEQUENCE, (int[]){xi, bad}, 2, 1);
    nn_node_set_int(t.g, t.node, "time_axis", 0);
    nn_node_set_int(t.g, t.node, "batch_axis", 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_ERR_FORMAT);
    /* Det of a stack: a known 3x3 (row swaps needed), a singular one, the identity */
    double m[27] = {0, 2, 1, 3, 1, 0, 1, 1, 1, /* det = 0*1 - 2*3 + 1*2 = -4 */
                    1, 2, 3, 2, 4, 6, 7, 8, 9, /* rows 1 and 2 proportional: 0 */
                    1, 0, 0, 0, 1, 0, 0, 0, 1};
    int mi = tin(t.g, FFU_DTYPE_F64, DIMS(3, 3, 3));
    t.node = tnode(t.g, NN_OP_DET, (int[]){mi}, 1, 1);
    CHECK(trun(&t, (void *[]){m}) == FFU_OK);
    CHECK(shape_is(tout(&t, 0), DIMS(3)));
    const double *d = t.out[0];
    CHECK(fabs(d[0] + 4) < 1e-12 && d[1] == 0 && fabs(d[2] - 1) < 1e-15);
    int ns = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3));
    t.node = tnode(t.g, NN_OP_DET, (int[]){ns}, 1, 1);
    CHECK(infer_only(&t) == FFU_ERR_FORMAT);
    tfree(&t);
}

TEST_MAIN(test_reshape, test_flatten_squeeze_unsqueeze, test_transpose_all_4d,
          test_transpose_layouts, test_concat, test_split, test_slice_1d, test_slice_nd,
          test_gather, test_gather_elements, test_expand, test_tile, test_trilu_eye_like,
          test_gather_nd, test_scatter_nd, test_scatter_elements, test_one_hot, test_cum_sum,
          test_top_k, test_reverse_sequence_det)
