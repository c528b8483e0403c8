/* The analyzer (src/face/analyzer.c) against its stages run one by one: every stage's
 * models share one workspace inside the analyzer (nn.h), and the faces it gives must
 * be exactly those of separate handles that each hold their own memory, over photos of
 * three sizes in turn (each re-plans the detector, and the workspace grows when a
 * stage needs more than it holds). Also with a workspace the caller owns, and with the
 * default embedder's two members side by side (embed threads 2: each member one thread,
 * the second on its own memory while the first uses the workspace). Needs the default
 * models and ../shared photos; skips without them. */
#include <string.h>

#include "facefuse/face.h"
#include "facefuse/nn.h"
#include "test.h"

static const char *const photos[] = {
    "data/face_recognition_examples/examples/obama_small.jpg",
    "data/face_recognition_examples/examples/two_people.jpg",
    "data/face_recognition_examples/examples/biden.jpg",
};
#define NUM_PHOTOS ((int)(sizeof photos / sizeof photos[0]))

#define ALL_STAGES                                                                       \
    (FFU_STAGE_LANDMARKS | FFU_STAGE_QUALITY | FFU_STAGE_LIVENESS | FFU_STAGE_ATTRIBUTES | \
     FFU_STAGE_EMBED)

typedef struct stages {
    ffu_detector *det;
    ffu_landmarker *lm;
    ffu_liveness *live;
    ffu_attributes *attr;
    ffu_embedder *emb;
} stages;

static void stages_close(stages *s)
{
    ffu_detector_destroy(s->det);
    ffu_landmarker_destroy(s->lm);
    ffu_liveness_destroy(s->live);
    ffu_attributes_destroy(s->attr);
    ffu_embedder_destroy(s->emb);
}

/* The default models as separate handles, one thread, no workspace. */
static ffu_status stages_open(stages *s)
{
    memset(s, 0, sizeof *s);
    ffu_face_model_opts m = {.threads = 1};
    ffu_detector_opts d;
    ffu_landmarker_opts l;
    ffu_detector_opts_default(&d);
    ffu_landmarker_opts_default(&l);
    d.m = m;
    l.m = m;
    ffu_status st;
    if ((st = ffu_detector_create(&d, &s->det)) || (st = ffu_landmarker_create(&l, &s->lm)) ||
        (st = ffu_liveness_create(&m, &s->live)) || (st = ffu_attributes_create(&m, &s->attr)) ||
        (st = ffu_embedder_create(&m, &s->emb)))
        stages_close(s);
    return st;
}

/* What ffu_analyzer_run does, stage by stage. */
static ffu_status stages_run(stages *s, const ffu_image *img, ffu_face_list *out)
{
    ffu_status st = ffu_detector_detect(s->det, img, out);
    for (int i = 0; !st && i < out->count; i++) {
        ffu_face *f = &out->faces[i];
        if (!(st = ffu_landmarker_run(s->lm, img, f)) &&
            !(st = ffu_face_quality_compute(img, f)) && !(st = ffu_liveness_run(s->live, img, f)))
            st = ffu_attributes_run(s->attr, img, f);
    }
    if (!st && out->count)
        st = ffu_embedder_run(s->emb, img, out->faces, out->count);
    return st;
}

/* Bit for bit, every field a stage writes. */
static void check_same_faces(const ffu_face_list *a, const ffu_face_list *b)
{
    CHECK_EQ_INT(a->count, b->count);
    for (int i = 0; i < a->count && i < b->count; i++) {
        const ffu_face *x = &a->faces[i], *y = &b->faces[i];
        CHECK(!memcmp(x->box, y->box, sizeof x->box));
        CHECK(!memcmp(x->kps, y->kps, sizeof x->kps));
        CHECK(x->score == y->score);
        CHECK_EQ_INT(x->num_landmarks, y->num_landmarks);
        CHECK(x->num_landmarks > 0);
        CHECK(!memcmp(x->landmarks, y->landmarks, sizeof(float) * 3 * (size_t)x->num_landmarks));
        CHECK(!memcmp(&x->quality, &y->quality, sizeof x->quality));
        CHECK_EQ_INT(x->embedding_dim, y->embedding_dim);
        CHECK(x->embedding_dim > 0);
        CHECK(!memcmp(x->embedding, y->embedding, sizeof(float) * (size_t)x->embedding_dim));
        CHECK(x->liveness == y->liveness && isfinite(x->liveness));
        CHECK(!memcmp(&x->attr, &y->attr, sizeof x->attr));
        CHECK(isfinite(x->attr.age));
    }
}

static void test_analyzer_equals_stages(void)
{
    ffu_image img[NUM_PHOTOS];
    memset(img, 0, sizeof img);
    for (int i = 0; i < NUM_PHOTOS; i++) {
        char path[1024];
        if (!test_shared_path(photos[i], path, sizeof path))
            TEST_SKIP("face_recognition_examples missing");
        CHECK(ffu_image_load(path, FFU_PIX_RGB24, &img[i]) == FFU_OK);
    }
    stages s;
    if (stages_open(&s))
        TEST_SKIP("default models not installed");
    ffu_nn_workspace *own = NULL;
    CHECK(ffu_nn_workspace_create(&own) == FFU_OK);
    ffu_analyzer *an[4] = {NULL};
    for (int k = 0; k < 4; k++) { /* its own workspace, the caller's; members side by side */
        ffu_analyzer_opts o;
        ffu_analyzer_opts_default(&o);
        o.stages = ALL_STAGES;
        o.detect.m.threads = 1;
        o.detect.m.workspace = k & 1 ? own : NULL;
        o.embed.threads = k >= 2 ? 2 : 0;
        CHECK(ffu_analyzer_create(&o, &an[k]) == FFU_OK);
    }
    ffu_face_list want = {0}, got = {0};
    int faces = 0;
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < NUM_PHOTOS; i++) {
            CHECK(stages_run(&s, &img[i], &want) == FFU_OK);
            faces += want.count;
            for (int k = 0; k < 4; k++) {
                CHECK(ffu_analyzer_run(an[k], &img[i], &got) == FFU_OK);
                check_same_faces(&want, &got);
            }
        }
    CHECK(faces >= 2 * NUM_PHOTOS + 2); /* two_people has two */
    /* the caller's workspace holds the largest stage's activations: megabytes */
    CHECK(ffu_nn_workspace_bytes(own) > ((size_t)1 << 20));
    ffu_face_list_free(&want);
    ffu_face_list_free(&got);
    for (int k = 0; k < 4; k++)
        ffu_analyzer_destroy(an[k]);
    ffu_nn_workspace_destroy(own);
    stages_close(&s);
    for (int i = 0; i < NUM_PHOTOS; i++) ffu_image_release(&img[i]);
}

TEST_MAIN(test_analyzer_equals_stages)
