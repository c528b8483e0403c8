/* The analyzer (src/face/analyzer.c) against its stages run one by one: every stage's
 * models share one workspace inside the analyzer (nn.h), and the faces it gives must
 * be exactly those of separate handles that each hold their own memory, over photos of
 * three sizes in turn (each re-plans the detector, and the workspace grows when a
 * stage needs more than it holds). Also with a workspace the caller owns, and with the
 * default embedder's two members side by side (embed threads 2: each member one thread,
 * the second on its own memory while the first uses the workspace). Needs the default
 * models and ../shared photos; skips without them. */
#include <pthread.h>
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

/* Bit for bit, every field a stage writes (and each of them written). */
static int same_faces(const ffu_face_list *a, const ffu_face_list *b)
{
    if (a->count != b->count) return 0;
    for (int i = 0; i < a->count; i++) {
        const ffu_face *x = &a->faces[i], *y = &b->faces[i];
        if (memcmp(x->box, y->box, sizeof x->box) || memcmp(x->kps, y->kps, sizeof x->kps) ||
            x->score != y->score || x->num_landmarks != y->num_landmarks || x->num_landmarks <= 0 ||
            memcmp(x->landmarks, y->landmarks, sizeof(float) * 3 * (size_t)x->num_landmarks) ||
            memcmp(&x->quality, &y->quality, sizeof x->quality) ||
            x->embedding_dim != y->embedding_dim || x->embedding_dim <= 0 ||
            memcmp(x->embedding, y->embedding, sizeof(float) * (size_t)x->embedding_dim) ||
            x->liveness != y->liveness || !isfinite(x->liveness) ||
            memcmp(&x->attr, &y->attr, sizeof x->attr) || !isfinite(x->attr.age))
            return 0;
    }
    return 1;
}

/* The photos decoded: 1, 0 when ../shared lacks one, -1 when one does not decode. */
static int load_photos(ffu_image img[NUM_PHOTOS])
{
    memset(img, 0, sizeof(ffu_image) * NUM_PHOTOS);
    for (int i = 0; i < NUM_PHOTOS; i++) {
        char path[1024];
        if (!test_shared_path(photos[i], path, sizeof path)) return 0;
        if (ffu_image_load(path, FFU_PIX_RGB24, &img[i]) != FFU_OK) return -1;
    }
    return 1;
}

static void test_analyzer_equals_stages(void)
{
    ffu_image img[NUM_PHOTOS];
    const int loaded = load_photos(img);
    if (!loaded) TEST_SKIP("face_recognition_examples missing");
    CHECK(loaded == 1);
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
                CHECK(same_faces(&want, &got));
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

/* One thread's share of test_analyzers_in_parallel: its analyzer over the photos,
 * starting at photo first, rounds times; bad counts runs whose faces differ from want. */
typedef struct par_job {
    ffu_analyzer *an;
    const ffu_image *img;
    const ffu_face_list *want; /* per photo */
    int first, rounds, runs, bad;
} par_job;

static void *par_main(void *arg)
{
    par_job *j = arg;
    ffu_face_list got = {0};
    for (int r = 0; r < j->rounds; r++)
        for (int k = 0; k < NUM_PHOTOS; k++) {
            int i = (j->first + k) % NUM_PHOTOS;
            j->runs++;
            if (ffu_analyzer_run(j->an, &j->img[i], &got) != FFU_OK ||
                !same_faces(&j->want[i], &got))
                j->bad++;
        }
    ffu_face_list_free(&got);
    return NULL;
}

/* face.h's promise: handles made separately share nothing mutable, so analyzers run at
 * once on several threads give each the faces it gives alone, bit for bit. Two threads
 * (this machine has two cores), each with its own analyzer, every stage on, one on
 * dlib's 68-point ERT where the model is installed (the other on FaceMesh), over the
 * photos in different orders (each re-plans the detector at a photo's size while the
 * other thread runs). */
static void test_analyzers_in_parallel(void)
{
    ffu_image img[NUM_PHOTOS];
    const int loaded = load_photos(img);
    if (!loaded) TEST_SKIP("face_recognition_examples missing");
    CHECK(loaded == 1);
    enum { T = 2 };
    ffu_analyzer *an[T] = {NULL};
    ffu_face_list want[T][NUM_PHOTOS];
    memset(want, 0, sizeof want);
    for (int t = 0; t < T; t++) {
        ffu_analyzer_opts o;
        ffu_analyzer_opts_default(&o);
        o.stages = ALL_STAGES;
        o.detect.m.threads = o.landmarks.m.threads = 1;
        o.embed.threads = o.liveness.threads = o.attributes.threads = 1;
        if (t == 1) o.landmarks.m.model = "dlib68";
        ffu_status st = ffu_analyzer_create(&o, &an[t]);
        if (st && t == 1) { /* dlib's model is an option: FaceMesh then */
            o.landmarks.m.model = NULL;
            st = ffu_analyzer_create(&o, &an[t]);
        }
        if (st && t == 0) TEST_SKIP("default models not installed");
        CHECK(st == FFU_OK);
        for (int i = 0; i < NUM_PHOTOS; i++)
            CHECK(ffu_analyzer_run(an[t], &img[i], &want[t][i]) == FFU_OK);
    }
    par_job jobs[T];
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        jobs[t] = (par_job){.an = an[t], .img = img, .want = want[t], .first = t, .rounds = 3};
        CHECK(pthread_create(&th[t], NULL, par_main, &jobs[t]) == 0);
    }
    for (int t = 0; t < T; t++)
        CHECK(pthread_join(th[t], NULL) == 0);
    for (int t = 0; t < T; t++) {
        CHECK_EQ_INT(jobs[t].runs, 3 * NUM_PHOTOS);
        CHECK_EQ_INT(jobs[t].bad, 0);
    }
    for (int t = 0; t < T; t++) {
        ffu_analyzer_destroy(an[t]);
        for (int i = 0; i < NUM_PHOTOS; i++)
            ffu_face_list_free(&want[t][i]);
    }
    for (int i = 0; i < NUM_PHOTOS; i++)
        ffu_image_release(&img[i]);
}

TEST_MAIN(test_analyzer_equals_stages, test_analyzers_in_parallel)
