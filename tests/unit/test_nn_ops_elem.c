/* Reference kernels of the elementwise ops (src/nn/ops/unary.c, binary.c, cast.c,
 * shape.c; CastLike, IsInf and IsNaN among them): each op is built into a one-node
 * graph, shape-inferred and run on our own buffers, and compared with values computed
 * here independently -- broadcasting by explicit coordinates, the math by libm in
 * double. Fixed seeds, odd shapes, every dtype path, empty tensors. */
#include <math.h>

#include "nn/ir.h"
#include "test.h"
#include "test_nn_ops.h"


/* Offset in a broadcast input of output element `flat` (explicit coordinates). */
static int64_t bidx(const nn_shape *o, const nn_shape *s, int64_t flat)
{
    int64_t coord[8], off = 0, stride = 1;
    for (int i = o->rank - 1; i >= 0; i--) {
        coord[i] = flat % o->d[i];
        flat /= o->d[i];
    }
    for (int i = s->rank - 1; i >= 0; i--) {
        int oi = i + o->rank - s->rank;
        off += (s->d[i] == 1 ? 0 : coord[oi]) * stride;
        stride *= s->d[i];
    }
    return off;
}

/* ---- binary f32 against an explicit broadcast --------------------------------------------- */

static double ref_bin(nn_op op, double x, double y)
{
    switch (op) {
    case NN_OP_ADD:
        return x + y;
    case NN_OP_SUB:
        return x - y;
    case NN_OP_MUL:
        return x * y;
    case NN_OP_DIV:
        return x / y;
    case NN_OP_MAX:
        return x > y ? x : y;
    case NN_OP_MIN:
        return x < y ? x : y;
    case NN_OP_POW:
        return pow(x, y);
    case NN_OP_PRELU:
        return x < 0 ? x * y : x;
    default:
        return NAN;
    }
}

static int check_bcast_f32(nn_op op, int ra, const int64_t *da, int rb, const int64_t *db,
                           uint64_t seed)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int a = tin(t.g, FFU_DTYPE_F32, ra, da), b = tin(t.g, FFU_DTYPE_F32, rb, db);
    t.node = tnode(t.g, op, (int[]){a, b}, 2, 1);
    nn_shape sa = shp(ra, da), sb = shp(rb, db), so;
    nn_shape_broadcast(&sa, &sb, &so);
    int64_t na = nn_shape_numel(&sa), nb = nn_shape_numel(&sb), no = nn_shape_numel(&so);
    float *xa = malloc(sizeof(float) * (size_t)(na + 1)),
          *xb = malloc(sizeof(float) * (size_t)(nb + 1));
    fill_f(xa, na, &seed, op == NN_OP_POW ? 0.1f : -2, 2);
    fill_f(xb, nb, &seed, op == NN_OP_POW ? -2 : 0.25f, 2);
    int bad = trun(&t, (void *[]){xa, xb}) < 0;
    if (!bad) bad = !nn_shape_equal(&tout(&t, 0)->shape, &so);
    for (int64_t i = 0; !bad && i < no; i++) {
        double want = ref_bin(op, xa[bidx(&so, &sa, i)], xb[bidx(&so, &sb, i)]);
        double got = ((float *)t.out[0])[i];
        if (fabs(got - want) > 1e-5 * (1 + fabs(want))) {
            fprintf(stderr, "%s elem %lld: %g vs %g\n", nn_op_name(op), (long long)i, got, want);
            bad = 1;
        }
    }
    free(xa), free(xb);
    tfree(&t);
    return bad;
}

static void test_broadcast_f32(void)
{
    static const nn_op ops[] = {NN_OP_ADD, NN_OP_SUB, NN_OP_MUL, NN_OP_DIV,
                                NN_OP_MAX, NN_OP_MIN, NN_OP_POW};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        nn_op op = ops[k];
        uint64_t s = 1234 + k;
        CHECK(!check_bcast_f32(op, DIMS(3, 5, 7), DIMS(3, 5, 7), s)); /* same shape */
        CHECK(!check_bcast_f32(op, DIMS(3, 5, 7), SCALAR, s));        /* scalar */
        CHECK(!check_bcast_f32(op, SCALAR, DIMS(3, 5, 7), s));
        CHECK(!check_bcast_f32(op, DIMS(2, 13, 5, 3), DIMS(1, 13, 1, 1), s)); /* channel */
        CHECK(!check_bcast_f32(op, DIMS(2, 13, 5, 3), DIMS(13, 1, 1), s));
        CHECK(!check_bcast_f32(op, DIMS(4, 1), DIMS(5), s));             /* outer */
        CHECK(!check_bcast_f32(op, DIMS(2, 3, 4, 5), DIMS(3, 1, 5), s)); /* mixed */
        CHECK(!check_bcast_f32(op, DIMS(1, 3, 1, 5), DIMS(2, 1, 4, 1), s));
        CHECK(!check_bcast_f32(op, DIMS(6, 7), DIMS(7), s)); /* trailing */
        CHECK(!check_bcast_f32(op, DIMS(1, 1), DIMS(1), s));
        CHECK(!check_bcast_f32(op, DIMS(0, 3), DIMS(3), s)); /* empty */
        CHECK(!check_bcast_f32(op, DIMS(2, 1, 3, 1, 2, 1, 3), DIMS(2, 1, 3, 1, 2, 1), s));
    }
}

/* ---- integer paths --------------------------------------------------------------------- */

static ffu_status run_bin_typed(nn_op op, ffu_dtype ta, ffu_dtype tb, const void *a, const void *b,
                                int64_t n, tg *t)
{
    nn_graph_create(&t->g);
    int x = tin(t->g, ta, DIMS(n)), y = tin(t->g, tb, DIMS(n));
    t->node = tnode(t->g, op, (int[]){x, y}, 2, 1);
    return trun(t, (void *[]){(void *)a, (void *)b});
}

static void test_int_div_mod(void)
{
    int32_t a[] = {-7, 7, -7, 7, 5, INT32_MIN, 9, -9};
    int32_t b[] = {2, -2, -2, 2, 0, -1, 4, 4};
    tg t = {0};
    CHECK(run_bin_typed(NN_OP_DIV, FFU_DTYPE_I32, FFU_DTYPE_I32, a, b, 8, &t) == FFU_OK);
    int32_t *o = t.out[0];
    /* truncation toward zero; division by zero gives 0; INT_MIN / -1 wraps */
    int32_t want_div[] = {-3, -3, 3, 3, 0, INT32_MIN, 2, -2};
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(o[i], want_div[i]);
    tfree(&t);

    CHECK(run_bin_typed(NN_OP_MOD, FFU_DTYPE_I32, FFU_DTYPE_I32, a, b, 8, &t) == FFU_OK);
    o = t.out[0];
    int32_t want_mod[] = {1, -1, -1, 1, 0, 0, 1, 3}; /* sign of the divisor */
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(o[i], want_mod[i]);
    tfree(&t);

    nn_graph_create(&t.g);
    int x = tin(t.g, FFU_DTYPE_I32, DIMS(8)), y = tin(t.g, FFU_DTYPE_I32, DIMS(8));
    t.node = tnode(t.g, NN_OP_MOD, (int[]){x, y}, 2, 1);
    nn_node_set_int(t.g, t.node, "fmod", 1);
    CHECK(trun(&t, (void *[]){a, b}) == FFU_OK);
    o = t.out[0];
    int32_t want_fmod[] = {-1, 1, -1, 1, 0, 0, 1, -1}; /* sign of the dividend */
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(o[i], want_fmod[i]);
    tfree(&t);

    float fa[] = {-4.3f, 4.3f, -4.3f, 4.3f}, fb[] = {2.1f, -2.1f, -2.1f, 2.1f};
    CHECK(run_bin_typed(NN_OP_MOD, FFU_DTYPE_F32, FFU_DTYPE_F32, fa, fb, 4, &t) == FFU_OK);
    float *fo = t.out[0];
    CHECK_NEAR(fo[0], 2.0, 1e-5); /* python: -4.3 % 2.1 = 2.0 */
    CHECK_NEAR(fo[1], -2.0, 1e-5);
    CHECK_NEAR(fo[2], -0.1, 1e-5);
    CHECK_NEAR(fo[3], 0.1, 1e-5);
    tfree(&t);

    uint8_t ua[] = {200, 100, 7, 255}, ub[] = {100, 200, 0, 2};
    CHECK(run_bin_typed(NN_OP_DIV, FFU_DTYPE_U8, FFU_DTYPE_U8, ua, ub, 4, &t) == FFU_OK);
    uint8_t *uo = t.out[0];
    CHECK_EQ_INT(uo[0], 2);
    CHECK_EQ_INT(uo[1], 0);
    CHECK_EQ_INT(uo[2], 0);
    CHECK_EQ_INT(uo[3], 127);
    tfree(&t);
    CHECK(run_bin_typed(NN_OP_ADD, FFU_DTYPE_U8, FFU_DTYPE_U8, ua, ub, 4, &t) == FFU_OK);
    uo = t.out[0];
    CHECK_EQ_INT(uo[0], 44); /* wraps modulo 256 */
    CHECK_EQ_INT(uo[3], 1);
    tfree(&t);
}

static void test_int64_arith(void)
{
    /* shape arithmetic must be exact for large values */
    int64_t a[] = {INT64_C(1) << 40, -5, INT64_MAX, 3}, b[] = {3, 7, 1, -9};
    tg t = {0};
    CHECK(run_bin_typed(NN_OP_MUL, FFU_DTYPE_I64, FFU_DTYPE_I64, a, b, 4, &t) == FFU_OK);
    int64_t *o = t.out[0];
    CHECK(o[0] == (INT64_C(3) << 40));
    CHECK_EQ_INT(o[1], -35);
    CHECK(o[2] == INT64_MAX);
    CHECK_EQ_INT(o[3], -27);
    tfree(&t);
    CHECK(run_bin_typed(NN_OP_ADD, FFU_DTYPE_I64, FFU_DTYPE_I64, a, b, 4, &t) == FFU_OK);
    o = t.out[0];
    CHECK(o[0] == (INT64_C(1) << 40) + 3);
    CHECK(o[2] == INT64_MIN); /* wraps, no UB */
    tfree(&t);
    CHECK(run_bin_typed(NN_OP_SUB, FFU_DTYPE_I64, FFU_DTYPE_I64, a, b, 4, &t) == FFU_OK);
    CHECK_EQ_INT(((int64_t *)t.out[0])[3], 12);
    tfree(&t);
    CHECK(run_bin_typed(NN_OP_MAX, FFU_DTYPE_I64, FFU_DTYPE_I64, a, b, 4, &t) == FFU_OK);
    CHECK_EQ_INT(((int64_t *)t.out[0])[1], 7);
    tfree(&t);
    /* f64 */
    double da[] = {1.5, -2.25}, db[] = {0.5, 4};
    CHECK(run_bin_typed(NN_OP_DIV, FFU_DTYPE_F64, FFU_DTYPE_F64, da, db, 2, &t) == FFU_OK);
    CHECK(((double *)t.out[0])[0] == 3.0 && ((double *)t.out[0])[1] == -0.5625);
    tfree(&t);
}

static void test_pow_types(void)
{
    tg t = {0};
    float base[] = {2, 3, -2, 0.5f};
    int64_t e64[] = {3, 0, 3, -1};
    CHECK(run_bin_typed(NN_OP_POW, FFU_DTYPE_F32, FFU_DTYPE_I64, base, e64, 4, &t) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_F32);
    float *fo = t.out[0];
    CHECK_NEAR(fo[0], 8, 0);
    CHECK_NEAR(fo[1], 1, 0);
    CHECK_NEAR(fo[2], -8, 0);
    CHECK_NEAR(fo[3], 2, 0);
    tfree(&t);
    int32_t ib[] = {2, -3, 5, 7}, ie[] = {10, 3, 0, 2};
    CHECK(run_bin_typed(NN_OP_POW, FFU_DTYPE_I32, FFU_DTYPE_I32, ib, ie, 4, &t) == FFU_OK);
    int32_t *io = t.out[0];
    CHECK_EQ_INT(io[0], 1024);
    CHECK_EQ_INT(io[1], -27);
    CHECK_EQ_INT(io[2], 1);
    CHECK_EQ_INT(io[3], 49);
    tfree(&t);
    int64_t lb[] = {2, 3};
    float fe[] = {0.5f, 2};
    CHECK(run_bin_typed(NN_OP_POW, FFU_DTYPE_I64, FFU_DTYPE_F32, lb, fe, 2, &t) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_I64);
    CHECK_EQ_INT(((int64_t *)t.out[0])[0], 1); /* sqrt(2) truncated */
    CHECK_EQ_INT(((int64_t *)t.out[0])[1], 9);
    tfree(&t);
    /* scalar exponent fast paths */
    nn_graph_create(&t.g);
    float two = 2, half = 0.5f, xs[] = {3, 4, 0.25f};
    int x = tin(t.g, FFU_DTYPE_F32, DIMS(3)), e = tconst(t.g, FFU_DTYPE_F32, SCALAR, &two);
    t.node = tnode(t.g, NN_OP_POW, (int[]){x, e}, 2, 1);
    CHECK(trun(&t, (void *[]){xs, NULL}) == FFU_OK);
    CHECK_NEAR(((float *)t.out[0])[1], 16, 0);
    tfree(&t);
    nn_graph_create(&t.g);
    x = tin(t.g, FFU_DTYPE_F32, DIMS(3));
    e = tconst(t.g, FFU_DTYPE_F32, DIMS(1, 1), &half);
    t.node = tnode(t.g, NN_OP_POW, (int[]){x, e}, 2, 1);
    CHECK(trun(&t, (void *[]){xs, NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.rank, 2);
    CHECK_NEAR(((float *)t.out[0])[2], 0.5, 1e-7);
    tfree(&t);
}

static void test_all_int_dtypes(void)
{
    /* Max / Min / Sub over every integer width through the same generator */
    static const ffu_dtype types[] = {FFU_DTYPE_I8,  FFU_DTYPE_U8,  FFU_DTYPE_I16, FFU_DTYPE_U16,
                                      FFU_DTYPE_I32, FFU_DTYPE_U32, FFU_DTYPE_I64, FFU_DTYPE_U64};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        ffu_dtype dt = types[k];
        uint64_t a64[3] = {5, 100, 7}, b64[3] = {9, 3, 7};
        uint8_t a[24], b[24];
        CHECK(nn_convert(a64, FFU_DTYPE_U64, a, dt, 3) == FFU_OK);
        CHECK(nn_convert(b64, FFU_DTYPE_U64, b, dt, 3) == FFU_OK);
        tg t = {0};
        CHECK(run_bin_typed(NN_OP_MAX, dt, dt, a, b, 3, &t) == FFU_OK);
        int64_t r[3];
        CHECK(nn_convert(t.out[0], dt, r, FFU_DTYPE_I64, 3) == FFU_OK);
        CHECK(r[0] == 9 && r[1] == 100 && r[2] == 7);
        tfree(&t);
        CHECK(run_bin_typed(NN_OP_MIN, dt, dt, a, b, 3, &t) == FFU_OK);
        CHECK(nn_convert(t.out[0], dt, r, FFU_DTYPE_I64, 3) == FFU_OK);
        CHECK(r[0] == 5 && r[1] == 3 && r[2] == 7);
        tfree(&t);
        CHECK(run_bin_typed(NN_OP_SUB, dt, dt, b, a, 3, &t) == FFU_OK);
        CHECK(nn_convert(t.out[0], dt, r, FFU_DTYPE_I64, 3) == FFU_OK);
        CHECK(r[0] == 4 && r[2] == 0);
        tfree(&t);
        CHECK(run_bin_typed(NN_OP_GREATER, dt, dt, a, b, 3, &t) == FFU_OK);
        CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_BOOL);
        uint8_t *bo = t.out[0];
        CHECK(bo[0] == 0 && bo[1] == 1 && bo[2] == 0);
        tfree(&t);
    }
}

static void test_f16_add(void)
{
    uint16_t a[3], b[3];
    float fa[] = {1.5f, -2, 1000}, fb[] = {0.25f, 0.5f, 24};
    CHECK(nn_convert(fa, FFU_DTYPE_F32, a, FFU_DTYPE_F16, 3) == FFU_OK);
    CHECK(nn_convert(fb, FFU_DTYPE_F32, b, FFU_DTYPE_F16, 3) == FFU_OK);
    tg t = {0};
    CHECK(run_bin_typed(NN_OP_ADD, FFU_DTYPE_F16, FFU_DTYPE_F16, a, b, 3, &t) == FFU_OK);
    uint16_t *o = t.out[0];
    CHECK_NEAR(nn_f16_to_f32(o[0]), 1.75, 0);
    CHECK_NEAR(nn_f16_to_f32(o[1]), -1.5, 0);
    CHECK_NEAR(nn_f16_to_f32(o[2]), 1024, 0);
    tfree(&t);
}

/* Every half widened (nn_f16_to_f32_n, nn_f16_to_f32 and nn_convert) against the
 * value its fields give, computed here with ldexp: signed zeros, subnormals, infinities,
 * and NaNs keeping their sign and payload. */
static void test_f16_widen_all(void)
{
    static uint8_t src[2 * 65536];
    static uint16_t halves[65536];
    static float got[65536], conv[65536];
    for (int h = 0; h < 65536; h++) {
        src[2 * h] = (uint8_t)(h & 255), src[2 * h + 1] = (uint8_t)(h >> 8);
        halves[h] = (uint16_t)h;
    }
    nn_f16_to_f32_n(src, got, 65536);
    CHECK(nn_convert(halves, FFU_DTYPE_F16, conv, FFU_DTYPE_F32, 65536) == FFU_OK);
    int bad = 0;
    for (int h = 0; h < 65536; h++) {
        const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
        uint32_t gb, cb;
        memcpy(&gb, &got[h], 4);
        memcpy(&cb, &conv[h], 4);
        int ok;
        if (e == 31 && m) {
            ok = isnan(got[h]) && (gb >> 31) == (uint32_t)sign &&
                 (gb & 0x7fffff) == (uint32_t)m << 13;
        } else {
            double v = e == 0 ? ldexp(m, -24) : e == 31 ? INFINITY : ldexp(1024 + m, e - 25);
            ok = got[h] == (float)(sign ? -v : v) && !signbit(got[h]) == !sign;
        }
        const float one = nn_f16_to_f32((uint16_t)h);
        ok = ok && gb == cb && memcmp(&one, &got[h], 4) == 0;
        if (!ok && bad++ < 5) fprintf(stderr, "half %04x -> %08x (convert %08x)\n", h, gb, cb);
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_compare_logic_where(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float xa[6] = {1, 2, 3, 4, 5, 6}, xb[3] = {2, 2, 7};
    int a = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3)), b = tin(t.g, FFU_DTYPE_F32, DIMS(3));
    static const nn_op ops[] = {NN_OP_EQUAL, NN_OP_GREATER, NN_OP_GREATER_OR_EQUAL, NN_OP_LESS,
                                NN_OP_LESS_OR_EQUAL};
    static const uint8_t want[5][6] = {{0, 1, 0, 0, 0, 0},
                                       {0, 0, 0, 1, 1, 0},
                                       {0, 1, 0, 1, 1, 0},
                                       {1, 0, 1, 0, 0, 1},
                                       {1, 1, 1, 0, 0, 1}};
    for (int k = 0; k < 5; k++) {
        t.node = tnode(t.g, ops[k], (int[]){a, b}, 2, 1);
        CHECK(trun(&t, (void *[]){xa, xb}) == FFU_OK);
        CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_BOOL);
        CHECK(memcmp(t.out[0], want[k], 6) == 0);
    }
    tfree(&t);

    uint8_t p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
    static const nn_op lops[] = {NN_OP_AND, NN_OP_OR, NN_OP_XOR};
    static const uint8_t lwant[3][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
    for (int k = 0; k < 3; k++) {
        CHECK(run_bin_typed(lops[k], FFU_DTYPE_BOOL, FFU_DTYPE_BOOL, p, q, 4, &t) == FFU_OK);
        CHECK(memcmp(t.out[0], lwant[k], 4) == 0);
        tfree(&t);
    }
    CHECK(run_bin_typed(NN_OP_EQUAL, FFU_DTYPE_BOOL, FFU_DTYPE_BOOL, p, q, 4, &t) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){1, 0, 0, 1}, 4) == 0);
    tfree(&t);
    /* And on floats is a type error, not a crash */
    nn_graph_create(&t.g);
    a = tin(t.g, FFU_DTYPE_F32, DIMS(2));
    t.node = tnode(t.g, NN_OP_AND, (int[]){a, a}, 2, 1);
    CHECK(trun(&t, (void *[]){xa, xa}) == FFU_ERR_UNSUPPORTED);
    tfree(&t);

    /* Where with three-way broadcasting on i64 */
    nn_graph_create(&t.g);
    uint8_t cond[3] = {1, 0, 1};
    int64_t x[2] = {10, 20}, y = -1;
    int c = tin(t.g, FFU_DTYPE_BOOL, DIMS(1, 3)), xi = tin(t.g, FFU_DTYPE_I64, DIMS(2, 1)),
        yi = tin(t.g, FFU_DTYPE_I64, SCALAR);
    t.node = tnode(t.g, NN_OP_WHERE, (int[]){c, xi, yi}, 3, 1);
    CHECK(trun(&t, (void *[]){cond, x, &y}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.rank, 2);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[0], 2);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[1], 3);
    int64_t wwant[6] = {10, -1, 10, 20, -1, 20};
    CHECK(memcmp(t.out[0], wwant, sizeof wwant) == 0);
    tfree(&t);
}

static void test_variadic(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, -20, 30}, c[2] = {100, -100};
    int ia = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3)), ib = tin(t.g, FFU_DTYPE_F32, DIMS(3)),
        ic = tin(t.g, FFU_DTYPE_F32, DIMS(2, 1));
    /* the first two inputs broadcast to less than the output: [3] and [2,1] */
    t.node = tnode(t.g, NN_OP_SUM, (int[]){ib, ic, ia}, 3, 1);
    CHECK(trun(&t, (void *[]){b, c, a}) == FFU_OK);
    float *o = t.out[0];
    float want_sum[6] = {111, 82, 133, -86, -115, -64};
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(o[i], want_sum[i], 1e-5);
    t.node = tnode(t.g, NN_OP_MEAN, (int[]){ib, ic, ia}, 3, 1);
    CHECK(trun(&t, (void *[]){b, c, a}) == FFU_OK);
    o = t.out[0];
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(o[i], want_sum[i] / 3, 1e-5);
    t.node = tnode(t.g, NN_OP_MAX, (int[]){ib, ic, ia}, 3, 1);
    CHECK(trun(&t, (void *[]){b, c, a}) == FFU_OK);
    o = t.out[0];
    float want_max[6] = {100, 100, 100, 10, 5, 30};
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(o[i], want_max[i], 0);
    t.node = tnode(t.g, NN_OP_MIN, (int[]){ia}, 1, 1);
    CHECK(trun(&t, (void *[]){a}) == FFU_OK);
    CHECK(memcmp(t.out[0], a, sizeof a) == 0);
    tfree(&t);
}

static void test_prelu_and_fused_act(void)
{
    uint64_t seed = 77;
    CHECK(!check_bcast_f32(NN_OP_PRELU, DIMS(2, 5, 3, 3), DIMS(5, 1, 1), seed));
    CHECK(!check_bcast_f32(NN_OP_PRELU, DIMS(2, 5, 3, 3), DIMS(1), seed));
    /* slope must broadcast to x, not grow it */
    tg t = {0};
    nn_graph_create(&t.g);
    int x = tin(t.g, FFU_DTYPE_F32, DIMS(3)), s = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3));
    t.node = tnode(t.g, NN_OP_PRELU, (int[]){x, s}, 2, 1);
    CHECK(nn_op_get(NN_OP_PRELU)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    tfree(&t);

    /* Add with a fused ReLU and a fused per-channel PReLU */
    nn_graph_create(&t.g);
    float xa[8] = {-1, 2, -3, 4, -5, 6, -7, 8}, xb[8] = {0};
    float slope[2] = {0.5f, 0.25f};
    int a = tin(t.g, FFU_DTYPE_F32, DIMS(1, 2, 2, 2)),
        b = tin(t.g, FFU_DTYPE_F32, DIMS(1, 2, 2, 2));
    int sl = tconst(t.g, FFU_DTYPE_F32, DIMS(2), slope);
    t.node = tnode(t.g, NN_OP_ADD, (int[]){a, b}, 2, 1);
    t.g->nodes[t.node].act.kind = NN_ACT_RELU;
    CHECK(trun(&t, (void *[]){xa, xb}) == FFU_OK);
    float *o = t.out[0];
    for (int i = 0; i < 8; i++)
        CHECK_NEAR(o[i], xa[i] > 0 ? xa[i] : 0, 0);
    t.g->nodes[t.node].act.kind = NN_ACT_PRELU;
    t.g->nodes[t.node].act.slope = sl;
    CHECK(trun(&t, (void *[]){xa, xb}) == FFU_OK);
    o = t.out[0];
    CHECK_NEAR(o[0], -0.5, 0);
    CHECK_NEAR(o[4], -1.25, 0);
    CHECK_NEAR(o[5], 6, 0);
    tfree(&t);
}

static void test_binary_errors(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int a = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3)), b = tin(t.g, FFU_DTYPE_F32, DIMS(4)),
        c = tin(t.g, FFU_DTYPE_I64, DIMS(2, 3));
    t.node = tnode(t.g, NN_OP_ADD, (int[]){a, b}, 2, 1);
    CHECK(nn_op_get(NN_OP_ADD)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    CHECK(strstr(ffu_error_message(), "broadcast") != NULL);
    t.node = tnode(t.g, NN_OP_MUL, (int[]){a, c}, 2, 1);
    CHECK(nn_op_get(NN_OP_MUL)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    t.node = tnode(t.g, NN_OP_SUB, (int[]){a}, 1, 1);
    CHECK(nn_op_get(NN_OP_SUB)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    /* unknown dims stay unknown */
    int u = tin(t.g, FFU_DTYPE_F32, DIMS(-1, 3));
    t.node = tnode(t.g, NN_OP_ADD, (int[]){u, a}, 2, 1);
    CHECK(nn_op_get(NN_OP_ADD)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[0], -1);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[1], 3);
    tfree(&t);
}

/* ---- unary ----------------------------------------------------------------------------- */

static double ref_unary(nn_op op, double x)
{
    switch (op) {
    case NN_OP_RELU:
        return x > 0 ? x : 0;
    /* attributes are floats in ONNX: the defaults are float constants, also in f64 */
    case NN_OP_LEAKY_RELU:
        return x < 0 ? (double)0.01f * x : x;
    case NN_OP_SIGMOID:
        return 1 / (1 + exp(-x));
    case NN_OP_TANH:
        return tanh(x);
    case NN_OP_ELU:
        return x < 0 ? exp(x) - 1 : x;
    case NN_OP_SELU:
        return (double)1.0507009873554804934193349852946f *
               (x > 0 ? x : (double)1.6732632423543772848170429916717f * (exp(x) - 1));
    case NN_OP_HARD_SIGMOID:
        return fmax(0, fmin(1, (double)0.2f * x + 0.5));
    case NN_OP_HARD_SWISH:
        return x * fmax(0, fmin(1, x / 6 + 0.5));
    case NN_OP_SOFTPLUS:
        return log(1 + exp(x));
    case NN_OP_SQRT:
        return sqrt(fabs(x));
    case NN_OP_EXP:
        return exp(x);
    case NN_OP_LOG:
        return log(fabs(x));
    case NN_OP_NEG:
        return -x;
    case NN_OP_ABS:
        return fabs(x);
    case NN_OP_RECIPROCAL:
        return 1 / x;
    case NN_OP_ERF:
        return erf(x);
    case NN_OP_FLOOR:
        return floor(x);
    case NN_OP_CEIL:
        return ceil(x);
    case NN_OP_ROUND:
        return nearbyint(x);
    case NN_OP_SIGN:
        return x > 0 ? 1 : x < 0 ? -1 : 0;
    case NN_OP_SIN:
        return sin(x);
    case NN_OP_COS:
        return cos(x);
    case NN_OP_RSQRT:
        return 1 / sqrt(fabs(x));
    case NN_OP_SQUARE:
        return x * x;
    case NN_OP_RELU6:
        return fmin(fmax(x, 0), 6);
    default:
        return NAN;
    }
}

static void test_unary_float(void)
{
    static const nn_op ops[] = {
        NN_OP_RELU, NN_OP_LEAKY_RELU,   NN_OP_SIGMOID,    NN_OP_TANH,     NN_OP_ELU,
        NN_OP_SELU, NN_OP_HARD_SIGMOID, NN_OP_HARD_SWISH, NN_OP_SOFTPLUS, NN_OP_SQRT,
        NN_OP_EXP,  NN_OP_LOG,          NN_OP_NEG,        NN_OP_ABS,      NN_OP_RECIPROCAL,
        NN_OP_ERF,  NN_OP_FLOOR,        NN_OP_CEIL,       NN_OP_ROUND,    NN_OP_SIGN,
        NN_OP_SIN,  NN_OP_COS,          NN_OP_RSQRT,      NN_OP_SQUARE,   NN_OP_RELU6};
    enum { N = 67 };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        nn_op op = ops[k];
        int pos = op == NN_OP_SQRT || op == NN_OP_LOG || op == NN_OP_RSQRT;
        for (int dt = 0; dt < 2; dt++) {
            uint64_t seed = 99 + k;
            float xf[N];
            double xd[N];
            fill_f(xf, N, &seed, pos ? 0.01f : -8, 8);
            xf[0] = 0.5f, xf[1] = -2.5f; /* rounding ties */
            if (pos) xf[0] = 0.5f, xf[1] = 2.5f;
            for (int i = 0; i < N; i++)
                xd[i] = xf[i];
            tg t = {0};
            nn_graph_create(&t.g);
            int x = tin(t.g, dt ? FFU_DTYPE_F64 : FFU_DTYPE_F32, DIMS(1, N));
            t.node = tnode(t.g, op, (int[]){x}, 1, 1);
            ffu_status st = trun(&t, (void *[]){dt ? (void *)xd : (void *)xf});
            if (st != FFU_OK) fprintf(stderr, "%s: %s\n", nn_op_name(op), ffu_error_message());
            CHECK(st == FFU_OK);
            CHECK_EQ_INT(tout(&t, 0)->dtype, dt ? FFU_DTYPE_F64 : FFU_DTYPE_F32);
            for (int i = 0; i < N; i++) {
                double want = ref_unary(op, xd[i]);
                double got = dt ? ((double *)t.out[0])[i] : ((float *)t.out[0])[i];
                double tol = dt ? 1e-12 : 3e-6;
                if (!(fabs(got - want) <= tol * (1 + fabs(want))))
                    fprintf(stderr, "%s %s x=%g: %.9g vs %.9g\n", nn_op_name(op),
                            dt ? "f64" : "f32", xd[i], got, want);
                CHECK(fabs(got - want) <= tol * (1 + fabs(want)));
            }
            tfree(&t);
        }
    }
}

static void test_unary_attrs_and_round(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[6] = {-2.5f, -0.5f, 0.5f, 1.5f, 2.5f, -3};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(6));
    t.node = tnode(t.g, NN_OP_ROUND, (int[]){xi}, 1, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    float want[6] = {-2, -0.0f, 0, 2, 2, -3};
    for (int i = 0; i < 6; i++)
        CHECK(((float *)t.out[0])[i] == want[i]);
    t.node = tnode(t.g, NN_OP_LEAKY_RELU, (int[]){xi}, 1, 1);
    nn_node_set_float(t.g, t.node, "alpha", 0.1f);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK_NEAR(((float *)t.out[0])[0], -0.25, 1e-7);
    t.node = tnode(t.g, NN_OP_HARD_SIGMOID, (int[]){xi}, 1, 1);
    nn_node_set_float(t.g, t.node, "alpha", 0.5f);
    nn_node_set_float(t.g, t.node, "beta", 0.6f);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK_NEAR(((float *)t.out[0])[1], 0.35, 1e-7);
    CHECK_NEAR(((float *)t.out[0])[4], 1, 0);
    t.node = tnode(t.g, NN_OP_ELU, (int[]){xi}, 1, 1);
    nn_node_set_float(t.g, t.node, "alpha", 2);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK_NEAR(((float *)t.out[0])[5], 2 * (exp(-3) - 1), 1e-6);
    /* Not */
    uint8_t b[3] = {0, 1, 0};
    int bi = tin(t.g, FFU_DTYPE_BOOL, DIMS(3));
    t.node = tnode(t.g, NN_OP_NOT, (int[]){bi}, 1, 1);
    CHECK(trun(&t, (void *[]){b}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){1, 0, 1}, 3) == 0);
    /* float-only ops reject integers */
    int ii = tin(t.g, FFU_DTYPE_I32, DIMS(3));
    t.node = tnode(t.g, NN_OP_EXP, (int[]){ii}, 1, 1);
    CHECK(nn_op_get(NN_OP_EXP)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_UNSUPPORTED);
    tfree(&t);
}

static void test_unary_int(void)
{
    int32_t x[5] = {-7, 0, 5, INT32_MIN, 9};
    tg t = {0};
    nn_graph_create(&t.g);
    int xi = tin(t.g, FFU_DTYPE_I32, DIMS(5));
    static const nn_op ops[] = {NN_OP_ABS, NN_OP_NEG, NN_OP_RELU, NN_OP_SIGN, NN_OP_RELU6};
    static const int32_t want[5][5] = {{7, 0, 5, INT32_MIN, 9},
                                       {7, 0, -5, INT32_MIN, -9},
                                       {0, 0, 5, 0, 9},
                                       {-1, 0, 1, -1, 1},
                                       {0, 0, 5, 0, 6}};
    for (int k = 0; k < 5; k++) {
        t.node = tnode(t.g, ops[k], (int[]){xi}, 1, 1);
        CHECK(trun(&t, (void *[]){x}) == FFU_OK);
        for (int i = 0; i < 5; i++)
            CHECK_EQ_INT(((int32_t *)t.out[0])[i], want[k][i]);
    }
    uint8_t u[3] = {0, 3, 250};
    int ui = tin(t.g, FFU_DTYPE_U8, DIMS(3));
    t.node = tnode(t.g, NN_OP_SIGN, (int[]){ui}, 1, 1);
    CHECK(trun(&t, (void *[]){u}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){0, 1, 1}, 3) == 0);
    tfree(&t);
}

static void test_clip(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[5] = {-3, -1, 0, 1, 3}, lo = -1.5f, hi = 2;
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(5)), l = tconst(t.g, FFU_DTYPE_F32, SCALAR, &lo),
        h = tconst(t.g, FFU_DTYPE_F32, SCALAR, &hi);
    t.node = tnode(t.g, NN_OP_CLIP, (int[]){xi, l, h}, 3, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){-1.5f, -1, 0, 1, 2}, sizeof x) == 0);
    t.node = tnode(t.g, NN_OP_CLIP, (int[]){xi, -1, h}, 3, 1); /* no min */
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){-3, -1, 0, 1, 2}, sizeof x) == 0);
    t.node = tnode(t.g, NN_OP_CLIP, (int[]){xi}, 1, 1); /* no bounds: a copy */
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], x, sizeof x) == 0);
    int8_t xi8[4] = {-128, -5, 5, 127}, lo8 = -4;
    int x8 = tin(t.g, FFU_DTYPE_I8, DIMS(4)), l8 = tconst(t.g, FFU_DTYPE_I8, SCALAR, &lo8);
    t.node = tnode(t.g, NN_OP_CLIP, (int[]){x8, l8}, 2, 1);
    CHECK(trun(&t, (void *[]){xi8}) == FFU_OK);
    CHECK(memcmp(t.out[0], (int8_t[]){-4, -4, 5, 127}, 4) == 0);
    /* a bound of another type is an error */
    t.node = tnode(t.g, NN_OP_CLIP, (int[]){x8, l}, 2, 1);
    CHECK(nn_op_get(NN_OP_CLIP)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    tfree(&t);
}

static void test_empty_unary(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(3, 0, 2));
    t.node = tnode(t.g, NN_OP_SIGMOID, (int[]){xi}, 1, 1);
    float dummy = 0;
    CHECK(trun(&t, (void *[]){&dummy}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[1], 0);
    tfree(&t);
}

/* ---- Cast and plumbing -------------------------------------------------------------------- */

static void test_cast(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[5] = {-2.7f, -0.5f, 0, 1.9f, 300.25f};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(5));
    t.node = tnode(t.g, NN_OP_CAST, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "to", FFU_DTYPE_I32);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_I32);
    CHECK(memcmp(t.out[0], (int32_t[]){-2, 0, 0, 1, 300}, 20) == 0);
    nn_node_set_int(t.g, t.node, "to", FFU_DTYPE_BOOL);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){1, 1, 0, 1, 1}, 5) == 0);
    nn_node_set_int(t.g, t.node, "to", FFU_DTYPE_F16);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK_NEAR(nn_f16_to_f32(((uint16_t *)t.out[0])[4]), 300.25, 0);
    nn_node_set_int(t.g, t.node, "to", 99);
    CHECK(nn_op_get(NN_OP_CAST)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_UNSUPPORTED);
    t.node = tnode(t.g, NN_OP_CAST, (int[]){xi}, 1, 1); /* no "to" */
    CHECK(nn_op_get(NN_OP_CAST)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    tfree(&t);
}

static void test_shape_size(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(2, 3, 4, 5));
    t.node = tnode(t.g, NN_OP_SHAPE, (int[]){xi}, 1, 1);
    /* run never reads the data: pass NULL */
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_I64);
    CHECK(memcmp(t.out[0], (int64_t[]){2, 3, 4, 5}, 32) == 0);
    static const struct {
        int64_t start, end;
        int set_start, set_end;
        int n;
        int64_t first;
    } cases[] = {{1, 0, 1, 0, 3, 3},   {0, -1, 0, 1, 3, 2}, {-1, 0, 1, 0, 1, 5}, {1, 2, 1, 1, 1, 3},
                 {-10, 0, 1, 0, 4, 2}, {0, 10, 0, 1, 4, 2}, {3, 1, 1, 1, 0, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        t.node = tnode(t.g, NN_OP_SHAPE, (int[]){xi}, 1, 1);
        if (cases[k].set_start) nn_node_set_int(t.g, t.node, "start", cases[k].start);
        if (cases[k].set_end) nn_node_set_int(t.g, t.node, "end", cases[k].end);
        CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
        CHECK_EQ_INT(tout(&t, 0)->shape.d[0], cases[k].n);
        if (cases[k].n) CHECK_EQ_INT(((int64_t *)t.out[0])[0], cases[k].first);
    }
    t.node = tnode(t.g, NN_OP_SIZE, (int[]){xi}, 1, 1);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.rank, 0);
    CHECK_EQ_INT(((int64_t *)t.out[0])[0], 120);
    /* unknown rank: Shape's length is unknown too */
    int ui = nn_graph_add_tensor(t.g, "", FFU_DTYPE_F32, NULL);
    t.node = tnode(t.g, NN_OP_SHAPE, (int[]){ui}, 1, 1);
    CHECK(nn_op_get(NN_OP_SHAPE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[0], -1);
    tfree(&t);
}

static void test_constant_of_shape_range(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    int64_t dims[3] = {2, 0, 3}, dims2[2] = {2, 3};
    int s0 = tconst(t.g, FFU_DTYPE_I64, DIMS(3), dims),
        s1 = tconst(t.g, FFU_DTYPE_I64, DIMS(2), dims2);
    t.node = tnode(t.g, NN_OP_CONSTANT_OF_SHAPE, (int[]){s0}, 1, 1);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_F32);
    CHECK_EQ_INT(tout(&t, 0)->shape.rank, 3);
    CHECK_EQ_INT(nn_shape_numel(&tout(&t, 0)->shape), 0);
    int32_t seven = 7;
    int v = tconst(t.g, FFU_DTYPE_I32, DIMS(1), &seven);
    t.node = tnode(t.g, NN_OP_CONSTANT_OF_SHAPE, (int[]){s1}, 1, 1);
    nn_node_set_tensor(t.g, t.node, "value", v);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_I32);
    CHECK(memcmp(t.out[0], (int32_t[]){7, 7, 7, 7, 7, 7}, 24) == 0);
    /* a non-constant shape of known length: rank known, dims unknown */
    int sv = tin(t.g, FFU_DTYPE_I64, DIMS(4));
    t.node = tnode(t.g, NN_OP_CONSTANT_OF_SHAPE, (int[]){sv}, 1, 1);
    CHECK(nn_op_get(NN_OP_CONSTANT_OF_SHAPE)->infer(t.g, &t.g->nodes[t.node]) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.rank, 4);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[2], -1);

    int32_t a = 10, b = 3, d = -3;
    int ia = tconst(t.g, FFU_DTYPE_I32, SCALAR, &a), ib = tconst(t.g, FFU_DTYPE_I32, SCALAR, &b),
        id = tconst(t.g, FFU_DTYPE_I32, SCALAR, &d);
    t.node = tnode(t.g, NN_OP_RANGE, (int[]){ia, ib, id}, 3, 1);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[0], 3);
    CHECK(memcmp(t.out[0], (int32_t[]){10, 7, 4}, 12) == 0);
    float fa = 1, fb = 2, fd = 0.3f;
    int fia = tconst(t.g, FFU_DTYPE_F32, SCALAR, &fa),
        fib = tconst(t.g, FFU_DTYPE_F32, SCALAR, &fb),
        fid = tconst(t.g, FFU_DTYPE_F32, SCALAR, &fd);
    t.node = tnode(t.g, NN_OP_RANGE, (int[]){fia, fib, fid}, 3, 1);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[0], 4);
    CHECK_NEAR(((float *)t.out[0])[3], 1.9, 1e-6);
    t.node = tnode(t.g, NN_OP_RANGE, (int[]){ib, ia, id}, 3, 1); /* empty */
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->shape.d[0], 0);
    int32_t zero = 0;
    int iz = tconst(t.g, FFU_DTYPE_I32, SCALAR, &zero);
    t.node = tnode(t.g, NN_OP_RANGE, (int[]){ia, ib, iz}, 3, 1);
    CHECK(nn_op_get(NN_OP_RANGE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);

    /* Constant and Identity */
    float cv[3] = {1, 2, 3};
    int c = tconst(t.g, FFU_DTYPE_F32, DIMS(3), cv);
    t.node = tnode(t.g, NN_OP_CONSTANT, NULL, 0, 1);
    nn_node_set_tensor(t.g, t.node, "value", c);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], cv, sizeof cv) == 0);
    t.node = tnode(t.g, NN_OP_CONSTANT, NULL, 0, 1);
    nn_node_set_ints(t.g, t.node, "value_ints", (int64_t[]){4, 5}, 2);
    CHECK(trun(&t, (void *[]){NULL}) == FFU_OK);
    CHECK_EQ_INT(tout(&t, 0)->dtype, FFU_DTYPE_I64);
    CHECK_EQ_INT(((int64_t *)t.out[0])[1], 5);
    int xi = tin(t.g, FFU_DTYPE_U8, DIMS(3));
    t.node = tnode(t.g, NN_OP_IDENTITY, (int[]){xi}, 1, 1);
    CHECK(trun(&t, (void *[]){(uint8_t[]){9, 8, 7}}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){9, 8, 7}, 3) == 0);
    CHECK(nn_op_get(NN_OP_IDENTITY)->flags & NN_OPF_VIEW);
    tfree(&t);
}

/* ---- the trigonometric / hyperbolic ops and the newer activations ---------------------------- */

static void test_unary_more(void)
{
    /* libm in double against each op in f32, f64 and f16 (in range for every op) */
    static const float xs[6] = {-0.9f, -0.3f, 0.0f, 0.25f, 0.6f, 0.95f};
    static const nn_op ops[] = {NN_OP_TAN,   NN_OP_ASIN,  NN_OP_ACOS,    NN_OP_ATAN,
                                NN_OP_SINH,  NN_OP_COSH,  NN_OP_ASINH,   NN_OP_ATANH,
                                NN_OP_SOFTSIGN, NN_OP_CELU, NN_OP_THRESHOLDED_RELU};
    tg t = {0};
    nn_graph_create(&t.g);
    int xf = tin(t.g, FFU_DTYPE_F32, DIMS(6)), xd = tin(t.g, FFU_DTYPE_F64, DIMS(6));
    int xh = tin(t.g, FFU_DTYPE_F16, DIMS(6));
    double d[6];
    uint16_t h[6];
    for (int i = 0; i < 6; i++)
        d[i] = xs[i], h[i] = nn_f32_to_f16(xs[i]);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        double want[6];
        for (int i = 0; i < 6; i++) {
            double v = xs[i];
            switch (ops[k]) {
            case NN_OP_TAN: want[i] = tan(v); break;
            case NN_OP_ASIN: want[i] = asin(v); break;
            case NN_OP_ACOS: want[i] = acos(v); break;
            case NN_OP_ATAN: want[i] = atan(v); break;
            case NN_OP_SINH: want[i] = sinh(v); break;
            case NN_OP_COSH: want[i] = cosh(v); break;
            case NN_OP_ASINH: want[i] = log(v + sqrt(v * v + 1)); break;
            case NN_OP_ATANH: want[i] = 0.5 * log((1 + v) / (1 - v)); break;
            case NN_OP_SOFTSIGN: want[i] = v / (1 + fabs(v)); break;
            case NN_OP_CELU: want[i] = v > 0 ? v : exp(v) - 1; break; /* alpha 1 */
            default: want[i] = v > 1.0 ? v : 0; break;                /* alpha 1 */
            }
        }
        t.node = tnode(t.g, ops[k], (int[]){xf}, 1, 1);
        CHECK(trun(&t, (void *[]){(void *)xs}) == FFU_OK);
        for (int i = 0; i < 6; i++)
            CHECK_NEAR(((float *)t.out[0])[i], want[i], 1e-6);
        t.node = tnode(t.g, ops[k], (int[]){xd}, 1, 1);
        CHECK(trun(&t, (void *[]){d}) == FFU_OK);
        for (int i = 0; i < 6; i++)
            CHECK_NEAR(((double *)t.out[0])[i], want[i], 1e-12);
        t.node = tnode(t.g, ops[k], (int[]){xh}, 1, 1);
        CHECK(trun(&t, (void *[]){h}) == FFU_OK);
        for (int i = 0; i < 6; i++)
            CHECK_NEAR(nn_f16_to_f32(((uint16_t *)t.out[0])[i]), want[i], 4e-3);
    }
    /* acosh needs x >= 1; out of domain is NaN, not an error */
    float xa[3] = {1.0f, 2.0f, 0.5f};
    int ai = tin(t.g, FFU_DTYPE_F32, DIMS(3));
    t.node = tnode(t.g, NN_OP_ACOSH, (int[]){ai}, 1, 1);
    CHECK(trun(&t, (void *[]){xa}) == FFU_OK);
    CHECK_NEAR(((float *)t.out[0])[0], 0, 0);
    CHECK_NEAR(((float *)t.out[0])[1], log(2 + sqrt(3.0)), 1e-6);
    CHECK(isnan(((float *)t.out[0])[2]));
    /* attributes: Celu alpha 2 is 2 * (exp(x / 2) - 1) below 0; ThresholdedRelu alpha .5
     * keeps only x > .5 (not x == .5) */
    float xc[4] = {-1.0f, 0.5f, 0.6f, 3.0f};
    int ci = tin(t.g, FFU_DTYPE_F32, DIMS(4));
    t.node = tnode(t.g, NN_OP_CELU, (int[]){ci}, 1, 1);
    nn_node_set_float(t.g, t.node, "alpha", 2.0f);
    CHECK(trun(&t, (void *[]){xc}) == FFU_OK);
    CHECK_NEAR(((float *)t.out[0])[0], 2 * (exp(-0.5) - 1), 1e-6);
    CHECK_NEAR(((float *)t.out[0])[3], 3, 0);
    t.node = tnode(t.g, NN_OP_THRESHOLDED_RELU, (int[]){ci}, 1, 1);
    nn_node_set_float(t.g, t.node, "alpha", 0.5f);
    CHECK(trun(&t, (void *[]){xc}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){0, 0, 0.6f, 3.0f}, 16) == 0);
    /* float-only: integers are refused at inference */
    int ii = tin(t.g, FFU_DTYPE_I32, DIMS(3));
    t.node = tnode(t.g, NN_OP_TAN, (int[]){ii}, 1, 1);
    CHECK(nn_op_get(NN_OP_TAN)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_UNSUPPORTED);
    tfree(&t);
}

static void test_shrink(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    /* defaults lambd .5, bias 0: |x| <= .5 becomes 0 */
    float x[6] = {-2.0f, -0.5f, -0.4f, 0.0f, 0.5f, 1.5f};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(6));
    t.node = tnode(t.g, NN_OP_SHRINK, (int[]){xi}, 1, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){-2.0f, 0, 0, 0, 0, 1.5f}, 24) == 0);
    /* soft shrink: lambd 1, bias 1 */
    t.node = tnode(t.g, NN_OP_SHRINK, (int[]){xi}, 1, 1);
    nn_node_set_float(t.g, t.node, "lambd", 1.0f);
    nn_node_set_float(t.g, t.node, "bias", 1.0f);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (float[]){-1.0f, 0, 0, 0, 0, 0.5f}, 24) == 0);
    /* integers: computed in double, wrapped into the type (no overflow UB) */
    int8_t xb[5] = {-128, -3, 0, 2, 127};
    int bi = tin(t.g, FFU_DTYPE_I8, DIMS(5));
    t.node = tnode(t.g, NN_OP_SHRINK, (int[]){bi}, 1, 1);
    nn_node_set_float(t.g, t.node, "lambd", 1.5f);
    nn_node_set_float(t.g, t.node, "bias", -2.0f);
    CHECK(trun(&t, (void *[]){xb}) == FFU_OK);
    /* -128 + -2 = -130 wraps to 126; 127 - -2 = 129 wraps to -127 */
    CHECK(memcmp(t.out[0], (int8_t[]){126, -5, 0, 4, -127}, 5) == 0);
    uint8_t xu[3] = {0, 1, 200};
    int ui = tin(t.g, FFU_DTYPE_U8, DIMS(3));
    t.node = tnode(t.g, NN_OP_SHRINK, (int[]){ui}, 1, 1);
    nn_node_set_float(t.g, t.node, "bias", 0.5f);
    CHECK(trun(&t, (void *[]){xu}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){0, 0, 199}, 3) == 0); /* 199.5 truncates */
    int bo = tin(t.g, FFU_DTYPE_BOOL, DIMS(3));
    t.node = tnode(t.g, NN_OP_SHRINK, (int[]){bo}, 1, 1);
    CHECK(nn_op_get(NN_OP_SHRINK)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_UNSUPPORTED);
    tfree(&t);
}

static void test_isinf_isnan(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[5] = {1.0f, INFINITY, -INFINITY, NAN, -0.0f};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(5));
    t.node = tnode(t.g, NN_OP_IS_INF, (int[]){xi}, 1, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(tout(&t, 0)->dtype == FFU_DTYPE_BOOL);
    CHECK(memcmp(t.out[0], (uint8_t[]){0, 1, 1, 0, 0}, 5) == 0);
    t.node = tnode(t.g, NN_OP_IS_INF, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "detect_negative", 0);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){0, 1, 0, 0, 0}, 5) == 0);
    t.node = tnode(t.g, NN_OP_IS_INF, (int[]){xi}, 1, 1);
    nn_node_set_int(t.g, t.node, "detect_positive", 0);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){0, 0, 1, 0, 0}, 5) == 0);
    t.node = tnode(t.g, NN_OP_IS_NAN, (int[]){xi}, 1, 1);
    CHECK(trun(&t, (void *[]){x}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){0, 0, 0, 1, 0}, 5) == 0);
    /* f16 infinities and NaN survive the conversion */
    uint16_t h[3] = {0x7c00, 0xfe00, 0x3c00};
    int hi = tin(t.g, FFU_DTYPE_F16, DIMS(3));
    t.node = tnode(t.g, NN_OP_IS_NAN, (int[]){hi}, 1, 1);
    CHECK(trun(&t, (void *[]){h}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){0, 1, 0}, 3) == 0);
    t.node = tnode(t.g, NN_OP_IS_INF, (int[]){hi}, 1, 1);
    CHECK(trun(&t, (void *[]){h}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){1, 0, 0}, 3) == 0);
    int ii = tin(t.g, FFU_DTYPE_I32, DIMS(3));
    t.node = tnode(t.g, NN_OP_IS_NAN, (int[]){ii}, 1, 1);
    CHECK(nn_op_get(NN_OP_IS_NAN)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_UNSUPPORTED);
    tfree(&t);
}

static void test_cast_like(void)
{
    tg t = {0};
    nn_graph_create(&t.g);
    float x[4] = {1.9f, -2.7f, 0.0f, 300.0f};
    int xi = tin(t.g, FFU_DTYPE_F32, DIMS(4));
    /* the target's shape does not matter, only its type */
    int like = tin(t.g, FFU_DTYPE_I32, DIMS(7, 1));
    t.node = tnode(t.g, NN_OP_CAST_LIKE, (int[]){xi, like}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(tout(&t, 0)->dtype == FFU_DTYPE_I32);
    CHECK(tout(&t, 0)->shape.rank == 1 && tout(&t, 0)->shape.d[0] == 4);
    CHECK(memcmp(t.out[0], (int32_t[]){1, -2, 0, 300}, 16) == 0);
    int lh = tin(t.g, FFU_DTYPE_F16, SCALAR);
    t.node = tnode(t.g, NN_OP_CAST_LIKE, (int[]){xi, lh}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK_NEAR(nn_f16_to_f32(((uint16_t *)t.out[0])[1]), -2.7, 2e-3);
    int lb = tin(t.g, FFU_DTYPE_BOOL, DIMS(1));
    t.node = tnode(t.g, NN_OP_CAST_LIKE, (int[]){xi, lb}, 2, 1);
    CHECK(trun(&t, (void *[]){x, NULL}) == FFU_OK);
    CHECK(memcmp(t.out[0], (uint8_t[]){1, 1, 0, 1}, 4) == 0);
    /* a target of unknown type, or a missing target, is refused */
    int lu = tin(t.g, FFU_DTYPE_UNDEFINED, DIMS(1));
    t.node = tnode(t.g, NN_OP_CAST_LIKE, (int[]){xi, lu}, 2, 1);
    CHECK(nn_op_get(NN_OP_CAST_LIKE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_UNSUPPORTED);
    t.node = tnode(t.g, NN_OP_CAST_LIKE, (int[]){xi}, 1, 1);
    CHECK(nn_op_get(NN_OP_CAST_LIKE)->infer(t.g, &t.g->nodes[t.node]) == FFU_ERR_FORMAT);
    tfree(&t);
}

TEST_MAIN(test_broadcast_f32, test_int_div_mod, test_int64_arith, test_pow_types,
          test_all_int_dtypes, test_f16_add, test_f16_widen_all, test_compare_logic_where,
          test_variadic, test_prelu_and_fused_act, test_binary_errors, test_unary_float,
          test_unary_attrs_and_round, test_unary_int, test_clip, test_empty_unary, test_cast,
          test_shape_size, test_constant_of_shape_range, test_unary_more, test_shrink,
          test_isinf_isnan, test_cast_like)
