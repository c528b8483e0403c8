/* Tests of the cross-stream batch entry points the pipeline uses (src/face:
 * face_detector_detect_multi, face_embedder_run_multi): a batch of different images
 * gives each image the faces and embeddings it gets alone, whatever its position in the
 * batch and the batch size, and bad arguments fail without touching anything. Needs the
 * default models and ../shared photos; skips without them. */
#include "face/face_internal.h"
#include "test.h"

static const char *const photos[] = {
    "data/face_recognition_examples/examples/obama-480p.jpg",
    "data/face_recognition_examples/examples/two_people.jpg",
    "data/face_recognition_examples/examples/knn_examples/test/kit_with_rose.jpg",
    "data/face_recognition_examples/examples/biden.jpg",
};
#define NPHOTOS 4

static int load_photos(ffu_image *imgs)
{
    char path[512];
    for (int i = 0; i < NPHOTOS; i++)
        if (!test_shared_path(photos[i], path, sizeof path) ||
            ffu_image_load(path, FFU_PIX_RGB24, &imgs[i]) != FFU_OK)
            return -1;
    return 0;
}

static void test_detect_multi(void)
{
    ffu_image imgs[NPHOTOS + 1] = {{0}};
    if (load_photos(imgs))
        TEST_SKIP("no ../shared photos");
    ffu_detector *d = NULL;
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.threads = 1;
    if (ffu_detector_create(&o, &d) != FFU_OK)
        TEST_SKIP("default detector not installed");
    CHECK(face_detector_batchable(d));
    /* a blank frame in the batch: no faces for it, the others unchanged */
    CHECK_EQ_INT(ffu_image_create(&imgs[NPHOTOS], FFU_PIX_RGB24, 320, 240), FFU_OK);
    ffu_face_list alone[NPHOTOS + 1] = {{0}}, multi[NPHOTOS + 1] = {{0}};
    for (int i = 0; i <= NPHOTOS; i++)
        CHECK_EQ_INT(ffu_detector_detect(d, &imgs[i], &alone[i]), FFU_OK);
    CHECK(alone[0].count >= 1 && alone[1].count >= 2);
    CHECK_EQ_INT(alone[NPHOTOS].count, 0);
    /* batches of 5 (padded to 8), 2 and 1, in shuffled order */
    static const int orders[][NPHOTOS + 1] = {{4, 2, 0, 3, 1}, {1, 0, -1, -1, -1}, {3, -1, -1, -1, -1}};
    for (int t = 0; t < 3; t++) {
        const ffu_image *in[NPHOTOS + 1];
        ffu_face_list *out[NPHOTOS + 1];
        int n = 0;
        while (n <= NPHOTOS && orders[t][n] >= 0) {
            in[n] = &imgs[orders[t][n]];
            out[n] = &multi[orders[t][n]];
            n++;
        }
        CHECK_EQ_INT(face_detector_detect_multi(d, in, out, n), FFU_OK);
        for (int k = 0; k < n; k++) {
            int i = orders[t][k];
            CHECK_EQ_INT(multi[i].count, alone[i].count);
            for (int f = 0; f < alone[i].count; f++) {
                for (int c = 0; c < 4; c++)
                    CHECK_NEAR(multi[i].faces[f].box[c], alone[i].faces[f].box[c], 0.05);
                for (int c = 0; c < 10; c++)
                    CHECK_NEAR(multi[i].faces[f].kps[c], alone[i].faces[f].kps[c], 0.05);
                CHECK_NEAR(multi[i].faces[f].score, alone[i].faces[f].score, 1e-3);
            }
        }
    }
    /* bad arguments: an error, nothing crashes */
    const ffu_image *bad[2] = {&imgs[0], NULL};
    ffu_face_list *bo[2] = {&multi[0], &multi[1]};
    CHECK(face_detector_detect_multi(d, bad, bo, 2) == FFU_ERR_INVALID);
    CHECK(face_detector_detect_multi(NULL, bad, bo, 1) == FFU_ERR_INVALID);
    CHECK_EQ_INT(face_detector_detect_multi(d, NULL, NULL, 0), FFU_OK);
    for (int i = 0; i <= NPHOTOS; i++) {
        ffu_face_list_free(&alone[i]);
        ffu_face_list_free(&multi[i]);
        ffu_image_release(&imgs[i]);
    }
    ffu_detector_destroy(d);
}

static void test_embed_multi(void)
{
    ffu_image imgs[NPHOTOS] = {{0}};
    if (load_photos(imgs))
        TEST_SKIP("no ../shared photos");
    ffu_detector *d = NULL;
    ffu_embedder *e = NULL;
    ffu_face_model_opts mo = {.model = NULL, .backend = NULL, .threads = 1};
    if (ffu_detector_create(NULL, &d) != FFU_OK || ffu_embedder_create(&mo, &e) != FFU_OK) {
        ffu_detector_destroy(d);
        TEST_SKIP("default models not installed");
    }
    /* every face of every photo, embedded alone (per image) and as one mixed batch */
    ffu_face_list lists[NPHOTOS] = {{0}};
    ffu_face mixed[16];
    const ffu_image *in[16];
    ffu_face *fp[16];
    int n = 0;
    for (int i = 0; i < NPHOTOS; i++) {
        CHECK_EQ_INT(ffu_detector_detect(d, &imgs[i], &lists[i]), FFU_OK);
        CHECK_EQ_INT(ffu_embedder_run(e, &imgs[i], lists[i].faces, lists[i].count), FFU_OK);
        for (int f = 0; f < lists[i].count && n < 16; f++) {
            mixed[n] = lists[i].faces[f];
            mixed[n].embedding_dim = 0;
            mixed[n].landmarks = NULL;
            mixed[n].num_landmarks = 0;
            in[n] = &imgs[i];
            fp[n] = &mixed[n];
            n++;
        }
    }
    CHECK(n >= 5);
    CHECK_EQ_INT(face_embedder_run_multi(e, in, fp, n), FFU_OK);
    int k = 0;
    for (int i = 0; i < NPHOTOS; i++)
        for (int f = 0; f < lists[i].count && k < n; f++, k++) {
            CHECK_EQ_INT(mixed[k].embedding_dim, ffu_embedder_dim(e));
            float sim = ffu_face_similarity(mixed[k].embedding, lists[i].faces[f].embedding,
                                            ffu_embedder_dim(e));
            CHECK(sim > 0.9999f);
        }
    /* a face without an image: an error, and no face keeps a stale embedding */
    in[1] = NULL;
    CHECK(face_embedder_run_multi(e, in, fp, 2) == FFU_ERR_INVALID);
    CHECK_EQ_INT(mixed[0].embedding_dim, 0);
    CHECK_EQ_INT(face_embedder_run_multi(e, NULL, NULL, 0), FFU_OK);
    for (int i = 0; i < NPHOTOS; i++) {
        ffu_face_list_free(&lists[i]);
        ffu_image_release(&imgs[i]);
    }
    ffu_embedder_destroy(e);
    ffu_detector_destroy(d);
}

TEST_MAIN(test_detect_multi, test_embed_multi)
