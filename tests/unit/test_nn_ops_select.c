/* Reference kernels of the ops whose output size depends on the values (NonZero,
 * Compress, NonMaxSuppression, Unique: src/nn/ops/select.c), each against a second,
 * deliberately naive implementation written here from the ONNX operator text, on odd
 * shapes with a fixed seed; NonMaxSuppression also on the real candidates of a face
 * detector (UltraFace RFB-320 on a photo from ../shared, skipped where absent). The
 * ONNX conformance suite covers the same ops on its own small cases, and
 * tests/unit/test_nn_onnx.c their planning and running in sessions. */
#include <math.h>

#include "facefuse/image.h"
#include "facefuse/nn.h"
#include "test.h"
#include "test_nn_ops.h"

/* A node of op over the given inputs (constants when data is given and cnst), with nout
 * outputs; runs it: out[] are then the outputs at their actual sizes. */
static ffu_status run_node(tg *t, nn_op op, int nin, const ffu_dtype *dt, const nn_shape *s,
                           void *const *data, int nout)
{
    memset(t, 0, sizeof *t);
    nn_graph_create(&t->g);
    int ins[6];
    for (int i = 0; i < nin; i++)
        ins[i] = tin(t->g, dt[i], s[i].rank, s[i].d);
    t->node = tnode(t->g, op, ins, nin, nout);
    return trun(t, data);
}

/* ---- NonZero, Compress ------------------------------------------------------------------- */

static void test_nonzero_compress(void)
{
    uint64_t seed = 41;
    enum { A = 3, B = 5, C = 7 };
    float x[A * B * C];
    for (int i = 0; i < A * B * C; i++)
        x[i] = test_rand_f(&seed) < 0.3f ? 0 : test_rand_f(&seed) - 0.5f;
    x[4] = -0.0f; /* zero too */
    x[9] = NAN;   /* not zero */
    tg t;
    nn_shape s = shp(3, (int64_t[]){A, B, C});
    CHECK_EQ_INT(
        run_node(&t, NN_OP_NON_ZERO, 1, (ffu_dtype[]){FFU_DTYPE_F32}, &s, (void *[]){x}, 1),
        FFU_OK);
    /* naive: every index in row-major order whose value compares unequal to 0 */
    int64_t want[3][A * B * C], k = 0;
    for (int a = 0; a < A; a++)
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                if (x[(a * B + b) * C + c] != 0) want[0][k] = a, want[1][k] = b, want[2][k++] = c;
    const nn_tensor *o = tout(&t, 0);
    CHECK(o->dtype == FFU_DTYPE_I64 && o->shape.rank == 2 && o->shape.d[0] == 3 &&
          o->shape.d[1] == k);
    for (int d = 0; d < 3 && o->shape.d[1] == k; d++)
        for (int i = 0; i < k; i++)
            CHECK(((int64_t *)t.out[0])[d * k + i] == want[d][i]);
    tfree(&t);

    /* Compress along axis 1 with a condition shorter than the axis, then flattened */
    uint8_t cond[4] = {1, 0, 1, 1};
    nn_shape cs[2] = {s, shp(1, (int64_t[]){4})};
    ffu_dtype cd[2] = {FFU_DTYPE_F32, FFU_DTYPE_BOOL};
    for (int flat = 0; flat < 2; flat++) {
        memset(&t, 0, sizeof t);
        nn_graph_create(&t.g);
        int ins[2] = {tin(t.g, cd[0], 3, s.d), tin(t.g, cd[1], 1, cs[1].d)};
        t.node = tnode(t.g, NN_OP_COMPRESS, ins, 2, 1);
        if (!flat) nn_node_set_int(t.g, t.node, "axis", -2);
        CHECK_EQ_INT(trun(&t, (void *[]){x, cond}), FFU_OK);
        o = tout(&t, 0);
        if (!flat) {
            CHECK(o->shape.rank == 3 && o->shape.d[0] == A && o->shape.d[1] == 3 &&
                  o->shape.d[2] == C);
            const float *y = t.out[0];
            for (int a = 0; a < A; a++)
                for (int j = 0, b = 0; b < 4; b++) {
                    if (!cond[b]) continue;
                    for (int c = 0; c < C; c++)
                        CHECK(memcmp(&y[(a * 3 + j) * C + c], &x[(a * B + b) * C + c], 4) == 0);
                    j++;
                }
        } else {
            CHECK(o->shape.rank == 1 && o->shape.d[0] == 3);
            CHECK(memcmp(t.out[0], &x[0], 4) == 0 && memcmp((float *)t.out[0] + 1, &x[2], 8) == 0);
        }
        tfree(&t);
    }
    /* a condition longer than the axis is malformed */
    memset(&t, 0, sizeof t);
    nn_graph_create(&t.g);
    int ins[2] = {tin(t.g, FFU_DTYPE_F32, 1, (int64_t[]){3}),
                  tin(t.g, FFU_DTYPE_BOOL, 1, (int64_t[]){4})};
    t.node = tnode(t.g, NN_OP_COMPRESS, ins, 2, 1);
    CHECK_EQ_INT(trun(&t, (void *[]){x, cond}), FFU_ERR_FORMAT);
    tfree(&t);
}

/* ---- Unique ------------------------------------------------------------------------------ */

/* Naive: slices along the axis of x [outer][len][inner] as tuples; unique ones sorted
 * lexicographically (or by first appearance), with first index, inverse and counts. */
static int naive_unique(const float *x, int outer, int len, int inner, int sorted, int *first,
                        int *inv, int *cnt)
{
    int n = 0;
    for (int i = 0; i < len; i++) { /* find or add slice i by first appearance */
        int g = -1;
        for (int k = 0; k < n && g < 0; k++) {
            int same = 1;
            for (int o = 0; o < outer; o++)
                for (int j = 0; j < inner; j++)
                    same &= x[(o * len + i) * inner + j] == x[(o * len + first[k]) * inner + j];
            if (same) g = k;
        }
        if (g < 0) first[g = n++] = i, cnt[g] = 0;
        inv[i] = g, cnt[g]++;
    }
    if (!sorted) return n;
    /* selection sort of the groups by their slices */
    int perm[64], where[64];
    for (int k = 0; k < n; k++)
        perm[k] = k;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            int less = 0, decided = 0;
            for (int o = 0; o < outer && !decided; o++)
                for (int j = 0; j < inner && !decided; j++) {
                    float p = x[(o * len + first[perm[b]]) * inner + j];
                    float q = x[(o * len + first[perm[a]]) * inner + j];
                    if (p != q) less = p < q, decided = 1;
                }
            if (less) {
                int tmp = perm[a];
                perm[a] = perm[b], perm[b] = tmp;
            }
        }
    int f2[64], c2[64];
    for (int k = 0; k < n; k++)
        where[perm[k]] = k, f2[k] = first[perm[k]], c2[k] = cnt[perm[k]];
    for (int k = 0; k < n; k++)
        first[k] = f2[k], cnt[k] = c2[k];
    for (int i = 0; i < len; i++)
        inv[i] = where[inv[i]];
    return n;
}

static void test_unique(void)
{
    uint64_t seed = 43;
    enum { O = 2, L = 13, I = 3 };
    float x[O * L * I];
    /* few distinct values, and some slices repeated whole */
    for (int i = 0; i < O * L * I; i++)
        x[i] = (float)(int)(test_rand_f(&seed) * 3) - 1;
    for (int o = 0; o < O; o++)
        for (int j = 0; j < I; j++)
            x[(o * L + 7) * I + j] = x[(o * L + 2) * I + j];
    for (int axis = -1; axis <= 1; axis += 2) /* -1: flattened; 1: slices along axis 1 */
        for (int sorted = 0; sorted < 2; sorted++) {
            tg t;
            memset(&t, 0, sizeof t);
            nn_graph_create(&t.g);
            int in = tin(t.g, FFU_DTYPE_F32, 3, (int64_t[]){O, L, I});
            t.node = tnode(t.g, NN_OP_UNIQUE, &in, 1, 4);
            if (axis >= 0) nn_node_set_int(t.g, t.node, "axis", axis);
            nn_node_set_int(t.g, t.node, "sorted", sorted);
            CHECK_EQ_INT(trun(&t, (void *[]){x}), FFU_OK);
            int outer = axis < 0 ? 1 : O, len = axis < 0 ? O * L * I : L, inner = axis < 0 ? 1 : I;
            int first[O * L * I], inv[O * L * I], cnt[O * L * I];
            int n = naive_unique(x, outer, len, inner, sorted, first, inv, cnt);
            const nn_tensor *y = tout(&t, 0);
            CHECK(tout(&t, 1)->shape.d[0] == n && tout(&t, 3)->shape.d[0] == n);
            CHECK(tout(&t, 2)->shape.d[0] == len);
            if (axis < 0)
                CHECK(y->shape.rank == 1 && y->shape.d[0] == n);
            else
                CHECK(y->shape.rank == 3 && y->shape.d[1] == n);
            if (tout(&t, 1)->shape.d[0] != n) {
                tfree(&t);
                continue;
            }
            const int64_t *idx = t.out[1], *iv = t.out[2], *ct = t.out[3];
            for (int k = 0; k < n; k++) {
                CHECK(idx[k] == first[k]);
                CHECK(ct[k] == cnt[k]);
                for (int o = 0; o < outer; o++)
                    for (int j = 0; j < inner; j++)
                        CHECK(((float *)t.out[0])[(o * n + k) * inner + j] ==
                              x[(o * len + first[k]) * inner + j]);
            }
            for (int i = 0; i < len; i++)
                CHECK(iv[i] == inv[i]);
            tfree(&t);
        }
}

/* ---- NonMaxSuppression ---------------------------------------------------------------- */

/* Naive, from the ONNX text (with ONNX Runtime's strict comparisons): per batch and
 * class, repeatedly take the best remaining box above the score threshold (lowest
 * index on ties) and drop those whose IoU with it exceeds the IoU threshold. Returns the
 * number of (batch, class, box) rows written to sel. */
static int naive_nms(const float *boxes, const float *scores, int nb, int nc, int nbox, int limit,
                     float iou_thr, float score_thr, int center, int64_t *sel)
{
    int rows = 0;
    unsigned char *gone = malloc((size_t)nbox + 1);
    for (int b = 0; b < nb; b++)
        for (int c = 0; c < nc; c++) {
            memset(gone, 0, (size_t)nbox + 1);
            const float *sc = scores + (b * nc + c) * nbox;
            for (int taken = 0; taken < limit;) {
                int best = -1;
                for (int i = 0; i < nbox; i++)
                    if (!gone[i] && sc[i] > score_thr && (best < 0 || sc[i] > sc[best])) best = i;
                if (best < 0) break;
                gone[best] = 1;
                sel[rows * 3] = b, sel[rows * 3 + 1] = c, sel[rows * 3 + 2] = best;
                rows++, taken++;
                float p[4], q[4];
                for (int i = 0; i < nbox; i++) {
                    if (gone[i]) continue;
                    const float *u = boxes + (b * nbox + best) * 4, *v = boxes + (b * nbox + i) * 4;
                    for (int k = 0; k < 2; k++) { /* as y0, x0, y1, x1 with y0 <= y1 */
                        const float *w = k ? v : u;
                        float *r = k ? q : p;
                        if (center) {
                            r[0] = w[1] - w[3] / 2, r[2] = w[1] + w[3] / 2;
                            r[1] = w[0] - w[2] / 2, r[3] = w[0] + w[2] / 2;
                        } else {
                            r[0] = fminf(w[0], w[2]), r[2] = fmaxf(w[0], w[2]);
                            r[1] = fminf(w[1], w[3]), r[3] = fmaxf(w[1], w[3]);
                        }
                    }
                    double ih = fmin(p[2], q[2]) - fmax(p[0], q[0]);
                    double iw = fmin(p[3], q[3]) - fmax(p[1], q[1]);
                    double inter = ih > 0 && iw > 0 ? ih * iw : 0;
                    double ua = (double)(p[2] - p[0]) * (p[3] - p[1]) +
                                (double)(q[2] - q[0]) * (q[3] - q[1]) - inter;
                    if (ua > 0 && inter / ua > iou_thr) gone[i] = 1;
                }
            }
        }
    free(gone);
    return rows;
}

/* The op on boxes [nb, nbox, 4] and scores [nb, nc, nbox] against naive_nms: the same
 * rows in the same order; *rows gets their count. */
static void check_nms(const float *boxes, const float *scores, int nb, int nc, int nbox, int limit,
                      float iou, float smin, int center, int *rows)
{
    *rows = -1;
    int64_t lim = limit;
    tg t;
    memset(&t, 0, sizeof t);
    nn_graph_create(&t.g);
    int ins[5] = {tin(t.g, FFU_DTYPE_F32, 3, (int64_t[]){nb, nbox, 4}),
                  tin(t.g, FFU_DTYPE_F32, 3, (int64_t[]){nb, nc, nbox}),
                  tconst(t.g, FFU_DTYPE_I64, 1, (int64_t[]){1}, &lim),
                  tconst(t.g, FFU_DTYPE_F32, 1, (int64_t[]){1}, &iou),
                  tconst(t.g, FFU_DTYPE_F32, 1, (int64_t[]){1}, &smin)};
    t.node = tnode(t.g, NN_OP_NON_MAX_SUPPRESSION, ins, 5, 1);
    nn_node_set_int(t.g, t.node, "center_point_box", center);
    CHECK_EQ_INT(trun(&t, (void *[]){(void *)boxes, (void *)scores, NULL, NULL, NULL}), FFU_OK);
    int64_t *want = malloc(sizeof(int64_t) * 3 * (size_t)(nb * nc * nbox + 1));
    int n = *rows = naive_nms(boxes, scores, nb, nc, nbox, limit, iou, smin, center, want);
    const nn_tensor *o = tout(&t, 0);
    CHECK(o->shape.rank == 2 && o->shape.d[0] == n && o->shape.d[1] == 3);
    if (o->shape.d[0] == n) CHECK(memcmp(t.out[0], want, sizeof(int64_t) * 3 * (size_t)n) == 0);
    free(want);
    tfree(&t);
}

static void test_nms_random(void)
{
    uint64_t seed = 47;
    enum { NB = 2, NC = 3, NBOX = 97 };
    float boxes[NB * NBOX * 4], scores[NB * NC * NBOX];
    for (int center = 0; center < 2; center++) {
        for (int i = 0; i < NB * NBOX; i++) {
            float *b = boxes + i * 4;
            float y = test_rand_f(&seed) * 10, x = test_rand_f(&seed) * 10;
            float h = 0.5f + test_rand_f(&seed) * 3, w = 0.5f + test_rand_f(&seed) * 3;
            if (center)
                b[0] = x, b[1] = y, b[2] = w, b[3] = h;
            else if (i % 2)
                b[0] = y + h, b[1] = x, b[2] = y, b[3] = x + w; /* flipped */
            else
                b[0] = y, b[1] = x, b[2] = y + h, b[3] = x + w;
        }
        for (int i = 0; i < NB * NC * NBOX; i++)
            scores[i] = test_rand_f(&seed);
        scores[5] = scores[6]; /* a tie: lower index first */
        int a, b, c;
        check_nms(boxes, scores, NB, NC, NBOX, 1000, 0.4f, 0.3f, center, &a);
        check_nms(boxes, scores, NB, NC, NBOX, 4, 0.6f, 0.1f, center, &b);
        check_nms(boxes, scores, NB, NC, NBOX, 1000, 0.0f, 0.0f, center, &c);
        printf("  random boxes (%s): %d, %d and %d selected\n", center ? "centres" : "corners", a,
               b, c);
        CHECK(a > NB * NC && b == NB * NC * 4 && c > 0);
    }
}

/* UltraFace RFB-320's own candidates for a real photo: 4420 boxes as corners (x0, y0, x1,
 * y1, normalised: NMS is the same with x and y swapped) and face scores. */
static void test_nms_real_detector(void)
{
    char mp[1024], ip[1024];
    if (!test_shared_path("models/ultraface_version-RFB-320.onnx", mp, sizeof mp) ||
        !test_shared_path("data/face_recognition_examples/examples/obama-480p.jpg", ip, sizeof ip))
        TEST_SKIP("no shared models or photos");
    ffu_nn_model *m = NULL;
    ffu_nn_session *s = NULL;
    ffu_image img = {0}, small = {0};
    CHECK_EQ_INT(ffu_nn_model_load(mp, &m), FFU_OK);
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.threads = 1;
    CHECK_EQ_INT(ffu_nn_session_create(m, &o, &s), FFU_OK);
    ffu_nn_tensor in, sc, bx;
    CHECK_EQ_INT(ffu_nn_session_input(s, 0, &in), FFU_OK);
    CHECK(in.rank == 4 && in.dims[1] == 3);
    CHECK_EQ_INT(ffu_image_load(ip, FFU_PIX_RGB24, &img), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&small, FFU_PIX_RGB24, (int)in.dims[3], (int)in.dims[2]), FFU_OK);
    CHECK_EQ_INT(ffu_image_resize(&img, &small, FFU_INTERP_BILINEAR), FFU_OK);
    ffu_norm_params np = {.mean = {127, 127, 127}, .scale = {1 / 128.f, 1 / 128.f, 1 / 128.f}};
    ffu_tensor_view tv = {
        .data = in.data, .n = 1, .c = 3, .h = (int)in.dims[2], .w = (int)in.dims[3]};
    CHECK_EQ_INT(ffu_image_to_tensor(&small, &np, &tv, 0), FFU_OK);
    CHECK_EQ_INT(ffu_nn_session_run(s), FFU_OK);
    CHECK_EQ_INT(ffu_nn_session_output(s, 0, &sc), FFU_OK);
    CHECK_EQ_INT(ffu_nn_session_output(s, 1, &bx), FFU_OK);
    int n = (int)bx.dims[1];
    CHECK(sc.rank == 3 && sc.dims[1] == n && sc.dims[2] == 2 && bx.dims[2] == 4);
    float *face = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++)
        face[i] = ((float *)sc.data)[i * 2 + 1];
    int a, b;
    check_nms(bx.data, face, 1, 1, n, 200, 0.3f, 0.05f, 0, &a);
    check_nms(bx.data, face, 1, 1, n, 200, 0.3f, 0.7f, 0, &b);
    printf("  UltraFace candidates: %d kept above 0.05, %d above 0.7\n", a, b);
    CHECK(b >= 1); /* the photo shows a face */
    free(face);
    ffu_image_release(&img);
    ffu_image_release(&small);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
}

TEST_MAIN(test_nonzero_compress, test_unique, test_nms_random, test_nms_real_detector)
