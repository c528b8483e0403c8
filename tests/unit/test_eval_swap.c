/* Face swap quality metrics (src/face/eval_swap.c) on cases whose answer is known:
 * changed pixels and PSNR outside rectangles on synthetic images, landmark jitter of
 * still and rigidly moving point sets (zero once the affine motion is removed), the
 * motion one sequence adds to another; then on real data (skipped without
 * ../shared/data or the default models): a photo swapped onto itself keeps its identity
 * and changes nothing outside the mesh swapper's region, a still frame repeated has zero
 * landmark jitter, and `facefuse eval swap --limit 1 --frames 5 --json` gives every key
 * with values in range. */
#include <unistd.h>

#include "face/eval_swap.h"
#include "facefuse/facefuse.h"
#include "swap/mesh_internal.h"
#include "test.h"
#include "test_cli.h"

static void fill(ffu_image *img, uint64_t seed)
{
    uint64_t s = seed;
    for (int y = 0; y < img->height; y++) {
        uint8_t *p = img->data[0] + (size_t)y * img->stride[0];
        for (int x = 0; x < img->width * 3; x++)
            p[x] = (uint8_t)(test_rand_u64(&s) >> 56);
    }
}

static uint8_t *px(ffu_image *img, int x, int y)
{
    return img->data[0] + (size_t)y * img->stride[0] + 3 * (size_t)x;
}

static void test_diff_outside(void)
{
    ffu_image a = {0}, b = {0}, g = {0};
    CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_RGB24, 40, 30), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&b, FFU_PIX_RGB24, 40, 30), FFU_OK);
    fill(&a, 7);
    CHECK_EQ_INT(ffu_image_copy(&a, &b), FFU_OK);
    swapeval_diff d;
    /* identical: nothing changed, infinite PSNR */
    CHECK_EQ_INT(swapeval_diff_outside(&a, &b, NULL, 0, &d), FFU_OK);
    CHECK_EQ_INT(d.pixels, 1200);
    CHECK_EQ_INT(d.changed, 0);
    CHECK(isinf(d.psnr) && d.psnr > 0);
    /* a change inside the rectangle does not count; one outside does, exactly */
    swapeval_rect r = {10, 5, 20, 15};
    px(&b, 12, 7)[0] ^= 0x40;
    px(&b, 3, 2)[0] = (uint8_t)(px(&a, 3, 2)[0] < 128 ? px(&a, 3, 2)[0] + 3 : px(&a, 3, 2)[0] - 3);
    px(&b, 3, 2)[2] = (uint8_t)(px(&a, 3, 2)[2] < 128 ? px(&a, 3, 2)[2] + 4 : px(&a, 3, 2)[2] - 4);
    CHECK_EQ_INT(swapeval_diff_outside(&a, &b, &r, 1, &d), FFU_OK);
    CHECK_EQ_INT(d.pixels, 1200 - 100);
    CHECK_EQ_INT(d.changed, 1);
    CHECK_NEAR(d.sse, 25.0, 0);
    CHECK_NEAR(d.mse, 25.0 / (1100 * 3), 1e-12);
    CHECK_NEAR(d.psnr, 10 * log10(255.0 * 255.0 * 3300 / 25.0), 1e-9);
    CHECK_NEAR(swapeval_psnr(d.sse, 3300), d.psnr, 1e-12);
    /* the whole frame sees both changes */
    CHECK_EQ_INT(swapeval_diff_outside(&a, &b, NULL, 0, &d), FFU_OK);
    CHECK_EQ_INT(d.changed, 2);
    /* two rectangles covering both changes, one reaching outside the frame */
    swapeval_rect two[2] = {{10, 5, 20, 15}, {-5, -5, 4, 3}};
    CHECK_EQ_INT(swapeval_diff_outside(&a, &b, two, 2, &d), FFU_OK);
    CHECK_EQ_INT(d.changed, 0);
    CHECK_EQ_INT(d.pixels, 1200 - 100 - 12);
    /* mismatched images are refused, the output zeroed */
    CHECK_EQ_INT(ffu_image_create(&g, FFU_PIX_GRAY8, 40, 30), FFU_OK);
    CHECK(swapeval_diff_outside(&a, &g, NULL, 0, &d) == FFU_ERR_INVALID);
    CHECK_EQ_INT(d.pixels, 0);
    CHECK(swapeval_diff_outside(NULL, &b, NULL, 0, &d) == FFU_ERR_INVALID);
    CHECK(isnan(swapeval_psnr(0, 0)));
    ffu_image_release(&a);
    ffu_image_release(&b);
    ffu_image_release(&g);
}

static void test_rects(void)
{
    float box[4] = {-3.5f, 10.2f, 20.0f, 200.0f};
    swapeval_rect r = swapeval_box_rect(box, 100, 50);
    CHECK(r.x0 == 0 && r.y0 == 10 && r.x1 == 17 && r.y1 == 50);
    swapeval_rect e = {0, 0, 0, 0}, u = swapeval_rect_union(e, r);
    CHECK(u.x0 == r.x0 && u.y0 == r.y0 && u.x1 == r.x1 && u.y1 == r.y1);
    swapeval_rect s = {30, 2, 40, 12};
    u = swapeval_rect_union(r, s);
    CHECK(u.x0 == 0 && u.y0 == 2 && u.x1 == 40 && u.y1 == 50);
    float nan_box[4] = {NAN, 0, 10, 10};
    r = swapeval_box_rect(nan_box, 100, 50);
    CHECK(r.x1 <= r.x0);

    /* the mesh ROI: the oval's bounding box plus 2 px, clipped */
    ffu_face f;
    memset(&f, 0, sizeof f);
    ffu_face_init(&f);
    CHECK(!swapeval_mesh_roi(&f, 100, 100, &r)); /* no mesh */
    CHECK_EQ_INT(ffu_face_set_landmarks(&f, MESH_N), FFU_OK);
    uint64_t seed = 3;
    for (int i = 0; i < MESH_N; i++) {
        f.landmarks[3 * i] = 40 + 20 * test_rand_f(&seed);
        f.landmarks[3 * i + 1] = 30 + 25 * test_rand_f(&seed);
        f.landmarks[3 * i + 2] = 0;
    }
    float b[4];
    mesh_oval_bounds(f.landmarks, b);
    CHECK(swapeval_mesh_roi(&f, 100, 100, &r));
    CHECK_EQ_INT(r.x0, (int)floorf(b[0]) - 2);
    CHECK_EQ_INT(r.y0, (int)floorf(b[1]) - 2);
    CHECK_EQ_INT(r.x1, (int)ceilf(b[2]) + 2);
    CHECK_EQ_INT(r.y1, (int)ceilf(b[3]) + 2);
    CHECK(swapeval_mesh_roi(&f, 45, 100, &r));
    CHECK_EQ_INT(r.x1, 45);
    CHECK(!swapeval_mesh_roi(&f, 30, 20, &r)); /* off the frame */
    free(f.landmarks);
}

#define NP 50
#define NF 12

static void test_jitter(void)
{
    static float seq[NF * 2 * NP], other[NF * 2 * NP];
    float base[2 * NP];
    uint64_t s = 11;
    for (int i = 0; i < 2 * NP; i++)
        base[i] = 100 + 80 * test_rand_f(&s);
    swapeval_jitter j;
    /* a still face: no motion at all */
    for (int t = 0; t < NF; t++)
        memcpy(seq + t * 2 * NP, base, sizeof base);
    CHECK_EQ_INT(swapeval_jitter_measure(seq, NF, NP, &j), FFU_OK);
    CHECK_EQ_INT(j.pairs, NF - 1);
    CHECK_NEAR(j.raw, 0, 0);
    CHECK_NEAR(j.residual, 0, 0);
    /* a rigidly moving face (turn, scale, shift per frame): the motion is all affine */
    for (int t = 0; t < NF; t++) {
        double a = 0.03 * t, k = 1 + 0.02 * t, tx = 3.0 * t, ty = -2.0 * t;
        for (int i = 0; i < NP; i++) {
            double x = base[2 * i] - 140, y = base[2 * i + 1] - 140;
            seq[t * 2 * NP + 2 * i] = (float)(k * (cos(a) * x - sin(a) * y) + 140 + tx);
            seq[t * 2 * NP + 2 * i + 1] = (float)(k * (sin(a) * x + cos(a) * y) + 140 + ty);
        }
    }
    CHECK_EQ_INT(swapeval_jitter_measure(seq, NF, NP, &j), FFU_OK);
    CHECK(j.raw > 3);
    CHECK(j.residual < 1e-3);
    /* the same motion plus +-0.5 px noise in x, alternating: the residual sees it */
    memcpy(other, seq, sizeof seq);
    for (int t = 0; t < NF; t++)
        for (int i = 0; i < NP; i++)
            other[t * 2 * NP + 2 * i] += ((t + i) & 1) ? 0.5f : -0.5f;
    CHECK_EQ_INT(swapeval_jitter_measure(other, NF, NP, &j), FFU_OK);
    CHECK(j.residual > 0.8 && j.residual < 1.01); /* each point moves 1 px against the fit */
    /* excess motion: other moves +-1 px per frame more than seq, every point */
    int pairs;
    CHECK_NEAR(swapeval_excess_motion(other, seq, NF, NP, &pairs), 1.0, 1e-4);
    CHECK_EQ_INT(pairs, NF - 1);
    CHECK_NEAR(swapeval_excess_motion(seq, seq, NF, NP, &pairs), 0, 0);
    /* a constant offset is not motion */
    for (int k = 0; k < NF * 2 * NP; k++)
        other[k] = seq[k] + 7;
    CHECK_NEAR(swapeval_excess_motion(other, seq, NF, NP, NULL), 0, 1e-4);
    /* a frame without a face breaks the chain: 2 pairs fewer */
    other[5 * 2 * NP] = NAN;
    CHECK_EQ_INT(swapeval_jitter_measure(other, NF, NP, &j), FFU_OK);
    CHECK_EQ_INT(j.pairs, NF - 3);
    swapeval_excess_motion(other, seq, NF, NP, &pairs);
    CHECK_EQ_INT(pairs, NF - 3);
    /* nothing to measure */
    CHECK_EQ_INT(swapeval_jitter_measure(other, 1, NP, &j), FFU_OK);
    CHECK_EQ_INT(j.pairs, 0);
    CHECK(isnan(j.residual));
    CHECK(isnan(swapeval_excess_motion(other, seq, 1, NP, NULL)));
    CHECK(swapeval_jitter_measure(seq, NF, 2, &j) == FFU_ERR_INVALID);
}

/* ---- real data -------------------------------------------------------------------------- */

static int open_models(ffu_detector **det, ffu_landmarker **lm, ffu_embedder **emb)
{
    ffu_detector_opts d;
    ffu_detector_opts_default(&d);
    ffu_landmarker_opts l;
    ffu_landmarker_opts_default(&l);
    d.m.threads = l.m.threads = 1;
    ffu_face_model_opts e = {.model = NULL, .backend = NULL, .threads = 1};
    if (ffu_detector_create(&d, det) || ffu_landmarker_create(&l, lm) ||
        ffu_embedder_create(&e, emb)) {
        ffu_detector_destroy(*det);
        ffu_landmarker_destroy(*lm);
        *det = NULL, *lm = NULL;
        return 0;
    }
    return 1;
}

/* The largest face of img, with landmarks and embedding; NULL when none. */
static ffu_face *analyse(ffu_detector *det, ffu_landmarker *lm, ffu_embedder *emb,
                         const ffu_image *img, ffu_face_list *l)
{
    if (ffu_detector_detect(det, img, l) || l->count == 0)
        return NULL;
    int best = 0;
    for (int i = 1; i < l->count; i++)
        if (l->faces[i].box[2] * l->faces[i].box[3] > l->faces[best].box[2] * l->faces[best].box[3])
            best = i;
    ffu_face *f = &l->faces[best];
    if (ffu_landmarker_run(lm, img, f) || (emb && ffu_embedder_run(emb, img, f, 1)))
        return NULL;
    return f;
}

static void test_swap_onto_itself(void)
{
    char path[4096];
    if (!test_shared_path("data/face_recognition_examples/examples/obama.jpg", path, sizeof path))
        TEST_SKIP("../shared/data/face_recognition_examples not available");
    ffu_detector *det = NULL;
    ffu_landmarker *lm = NULL;
    ffu_embedder *emb = NULL;
    if (!open_models(&det, &lm, &emb))
        TEST_SKIP("default models not installed");
    ffu_image in = {0}, out = {0}, src = {0};
    ffu_swapper *sw = NULL;
    ffu_face_list targets = {0}, l1 = {0}, l2 = {0};
    ffu_swapper_opts o;
    ffu_swapper_opts_default(&o);
    o.threads = 1;
    int ok = 0;
    do {
        if (ffu_image_load(path, FFU_PIX_RGB24, &in) || ffu_swapper_create(&o, &sw) ||
            ffu_swapper_set_source(sw, &in, 1) || ffu_swapper_find_targets(sw, &in, &targets) ||
            targets.count != 1 || ffu_image_create(&out, FFU_PIX_RGB24, in.width, in.height) ||
            ffu_image_copy(&in, &out) || ffu_swapper_apply(sw, &out, &targets))
            break;
        /* background: nothing outside the ROI, infinite PSNR outside box + ROI */
        swapeval_rect roi, grown;
        if (!swapeval_mesh_roi(&targets.faces[0], in.width, in.height, &roi))
            break;
        grown = swapeval_rect_union(swapeval_box_rect(targets.faces[0].box, in.width, in.height),
                                    roi);
        swapeval_diff d, whole;
        if (swapeval_diff_outside(&in, &out, &roi, 1, &d) ||
            swapeval_diff_outside(&in, &out, &grown, 1, &whole))
            break;
        CHECK_EQ_INT(d.changed, 0);
        CHECK(d.pixels > 0);
        CHECK(isinf(whole.psnr));
        /* the face is redrawn from itself: (nearly) nothing changes anywhere (the
         * texture's warp is the identity and the colour statistics agree) */
        if (swapeval_diff_outside(&in, &out, NULL, 0, &whole))
            break;
        CHECK(whole.psnr > 40);
        /* identity: source and target are the same face, the output stays it */
        ffu_face *fs = analyse(det, lm, emb, &in, &l1), *fo = analyse(det, lm, emb, &out, &l2);
        if (!fs || !fo)
            break;
        int dim = ffu_embedder_dim(emb);
        float os = ffu_face_similarity(fo->embedding, fs->embedding, dim);
        CHECK(os >= ffu_embedder_threshold(emb));
        CHECK(os > 0.8f);
        /* a still frame repeated: the landmarker gives the same points, zero jitter */
        static float seq[5 * 2 * MESH_N];
        for (int t = 0; t < 5; t++) {
            ffu_face *f = analyse(det, lm, NULL, &in, &l1);
            if (!f)
                break;
            for (int i = 0; i < MESH_N; i++) {
                seq[t * 2 * MESH_N + 2 * i] = f->landmarks[3 * i];
                seq[t * 2 * MESH_N + 2 * i + 1] = f->landmarks[3 * i + 1];
            }
        }
        swapeval_jitter j;
        if (swapeval_jitter_measure(seq, 5, MESH_N, &j))
            break;
        CHECK_EQ_INT(j.pairs, 4);
        CHECK_NEAR(j.raw, 0, 0);
        CHECK_NEAR(j.residual, 0, 0);
        /* another source onto the same target: the face changes, the pixels outside the
         * ROI still do not */
        char other[4096];
        ffu_image_release(&src);
        if (!test_shared_path("data/face_recognition_examples/examples/biden.jpg", other,
                              sizeof other) ||
            ffu_image_load(other, FFU_PIX_RGB24, &src) || ffu_swapper_set_source(sw, &src, 1) ||
            ffu_image_copy(&in, &out) || ffu_swapper_apply(sw, &out, &targets) ||
            swapeval_diff_outside(&in, &out, &roi, 1, &d) ||
            swapeval_diff_outside(&in, &out, NULL, 0, &whole))
            break;
        CHECK_EQ_INT(d.changed, 0);
        CHECK(whole.changed > 1000);
        CHECK(whole.psnr > 15 && isfinite(whole.psnr));
        ok = 1;
    } while (0);
    if (!ok)
        fprintf(stderr, "swap onto itself: %s\n", ffu_error_message());
    ffu_image_release(&src);
    ffu_face_list_free(&targets);
    ffu_face_list_free(&l1);
    ffu_face_list_free(&l2);
    ffu_swapper_destroy(sw);
    ffu_image_release(&in);
    ffu_image_release(&out);
    ffu_detector_destroy(det);
    ffu_landmarker_destroy(lm);
    ffu_embedder_destroy(emb);
    CHECK(ok);
}

static int in_range(const ffu_json *o, const char *key, double lo, double hi)
{
    const ffu_json *v = ffu_json_get(o, key);
    double x = ffu_json_number(v, NAN);
    if (!(x >= lo && x <= hi)) {
        fprintf(stderr, "%s = %g outside %g..%g\n", key, x, lo, hi);
        return 0;
    }
    return 1;
}

/* The keys every row (photo variant or video) carries, and their ranges. */
static int row_ok(const ffu_json *r)
{
    int outputs = (int)ffu_json_int(ffu_json_get(r, "outputs"), -1);
    int found = (int)ffu_json_int(ffu_json_get(r, "outputs_with_face"), -1);
    if (outputs < 1 || found < 1 || found > outputs)
        return 0;
    /* the background outside the swap's region is untouched: exactly 0, PSNR infinite */
    if (ffu_json_int(ffu_json_get(r, "changed_outside_roi"), -1) != 0 ||
        ffu_json_number(ffu_json_get(r, "mse_outside_box_mask"), -1) != 0 ||
        ffu_json_typeof(ffu_json_get(r, "psnr_outside_box_mask_db")) != FFU_JSON_NULL)
        return 0;
    const ffu_json *pb = ffu_json_get(r, "psnr_outside_box_db");
    if (ffu_json_typeof(pb) != FFU_JSON_NULL && !in_range(r, "psnr_outside_box_db", 20, 200))
        return 0;
    return in_range(r, "sim_out_source", -1, 1) && in_range(r, "sim_out_target", -1, 1) &&
           in_range(r, "sim_target_source", -1, 1) && in_range(r, "transfer_rate", 0, 1) &&
           ffu_json_get(r, "sim_out_source_other") && ffu_json_get(r, "transfer_rate_other");
}

static void test_cli(void)
{
    char data[4096];
    if (!test_shared_path("data/videos/sadtalker_WDA_AlexandriaOcasioCortez_000.mp4", data,
                          sizeof data) ||
        !test_shared_path("data", data, sizeof data))
        TEST_SKIP("../shared/data not available");
    if (access(FACEFUSE, X_OK))
        TEST_SKIP("facefuse not built");
    ffu_detector *det = NULL;
    ffu_landmarker *lm = NULL;
    ffu_embedder *emb = NULL;
    if (!open_models(&det, &lm, &emb))
        TEST_SKIP("default models not installed");
    ffu_detector_destroy(det);
    ffu_landmarker_destroy(lm);
    ffu_embedder_destroy(emb);
    static run_result r;
    const char *args[] = {"eval", "swap", "--limit", "1", "--frames", "5", "--videos",
                          "sadtalker", "--data", data, "--json", "-q", NULL};
    run(&r, args);
    if (r.code)
        fprintf(stderr, "%s", r.err);
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    int ok = 0;
    do {
        if (strcmp(ffu_json_string(ffu_json_get(j, "swapper")), "mesh") ||
            !ffu_json_string(ffu_json_get(j, "embedder")) ||
            !in_range(j, "embedder_threshold", 0, 1) ||
            ffu_json_len(ffu_json_get(j, "identities")) < 2)
            break;
        const ffu_json *ph = ffu_json_get(j, "photos");
        if (ffu_json_len(ph) != 6)
            break;
        size_t i;
        for (i = 0; i < 6; i++) {
            const ffu_json *v = ffu_json_at(ph, i);
            if (ffu_json_int(ffu_json_get(v, "pairs"), -1) != 1 || !row_ok(v))
                break;
        }
        if (i < 6 || strcmp(ffu_json_string(ffu_json_get(ffu_json_at(ph, 0), "variant")),
                            "feather+lab"))
            break;
        const ffu_json *vids = ffu_json_get(j, "videos");
        if (ffu_json_len(vids) != 1)
            break;
        const ffu_json *v = ffu_json_at(vids, 0);
        if (ffu_json_int(ffu_json_get(v, "frames"), -1) != 5 ||
            ffu_json_int(ffu_json_get(v, "sources"), -1) != 1 ||
            ffu_json_int(ffu_json_get(v, "outputs"), -1) != 5 || !row_ok(v) ||
            ffu_json_int(ffu_json_get(v, "changed_outside_roi_unsmoothed"), -1) != 0)
            break;
        /* a talking head moves: motion > 0; jitter values are px, ratios positive */
        if (!in_range(v, "motion_in_px", 1e-3, 100) || !in_range(v, "jitter_in_px", 1e-4, 100) ||
            !in_range(v, "jitter_out_px", 1e-4, 100) || !in_range(v, "jitter_ratio", 0.01, 100) ||
            !in_range(v, "jitter_out_unsmoothed_px", 1e-4, 100) ||
            !in_range(v, "jitter_ratio_unsmoothed", 0.01, 100) ||
            !in_range(v, "excess_motion_px", 0, 100) ||
            !in_range(v, "excess_motion_unsmoothed_px", 0, 100) || !in_range(j, "seconds", 0, 1e5))
            break;
        ok = 1;
    } while (0);
    ffu_json_free(j);
    CHECK(ok);
    /* bad command lines: usage errors */
    const char *bad[] = {"eval", "swap", "--frames", "1", NULL};
    run(&r, bad);
    CHECK_EQ_INT(r.code, 2);
    const char *extra[] = {"eval", "swap", "stray", NULL};
    run(&r, extra);
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "facefuse eval swap:") != NULL);
}

TEST_MAIN(test_diff_outside, test_rects, test_jitter, test_swap_onto_itself, test_cli)
