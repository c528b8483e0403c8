/* The GPU gallery search on a device (skipped without one): ffu_gallery_gpu_search
 * against the host replay of the device algorithm (gallery_gpu_reference_search, bit
 * for bit: same identities, same float bits) and against the CPU search
 * (ffu_gallery_search: same identities in the same order, fp32; within the fp16
 * bound, fp16), with host and device probes and answers, on the default stream and on
 * a stream, in one pass and in many, with k across the segment sizes, on an empty
 * gallery and on a larger one (20000 identities, many segments and merge rounds);
 * snapshots and sync; no device allocation once the pool is warm. Without a device it
 * checks that asking does not crash and that the calls fail with a reason. */
#include "facefuse/gallery.h"
#include "facefuse/gpu.h"
#include "gallery/gallery_gpu_internal.h"
#include "test.h"
#include "unit/test_gallery_gpu_data.h"

static const int ks[] = {1, 2, 5, 64, 65, 130, 1024};
enum { KMAX = 1024 };

/* Searches probes on gg every way the API allows and checks each against the host
 * replay bit for bit. */
static int check_against_reference(ffu_gpu *gpu, ffu_gpu_stream *s, ffu_gallery_gpu *gg,
                                   const ffu_gallery *g, ffu_gallery_gpu_storage storage,
                                   const float *probes, int nq, int k)
{
    int dim = ffu_gallery_dim(g), ok = 1;
    size_t out_bytes = sizeof(ffu_gallery_match) * (size_t)nq * (size_t)k;
    ffu_gallery_match *ref = malloc(out_bytes), *got = malloc(out_bytes);
    int *cref = malloc(sizeof(int) * (size_t)nq), *cgot = malloc(sizeof(int) * (size_t)nq);
    void *d_probes = NULL, *d_out = NULL, *d_counts = NULL;
    if (!ref || !got || !cref || !cgot ||
        gallery_gpu_reference_search(g, storage, probes, nq, k, ref, cref) != FFU_OK) {
        ok = 0;
        goto done;
    }
    char what[96];
    /* 1: host probes, host answers, default stream */
    memset(got, 0x5a, out_bytes);
    ffu_status st = ffu_gallery_gpu_search(gg, NULL, probes, nq, k, got, cgot);
    if (st != FFU_OK) {
        fprintf(stderr, "search: %s\n", ffu_error_message());
        ok = 0;
        goto done;
    }
    snprintf(what, sizeof what, "%s device vs replay (host, default stream)",
             storage == FFU_GALLERY_GPU_F16 ? "fp16" : "fp32");
    ok &= ggd_same(what, got, cgot, ref, cref, nq, k, 0, 0);
    /* 2: device probes and answers on a stream: the engine's embeddings stay put */
    if (ffu_gpu_alloc(gpu, sizeof(float) * (size_t)nq * (size_t)dim, &d_probes) != FFU_OK ||
        ffu_gpu_alloc(gpu, out_bytes, &d_out) != FFU_OK ||
        ffu_gpu_alloc(gpu, sizeof(int) * (size_t)nq, &d_counts) != FFU_OK ||
        ffu_gpu_copy(NULL, d_probes, probes, sizeof(float) * (size_t)nq * (size_t)dim) != FFU_OK) {
        ok = 0;
        goto done;
    }
    st = ffu_gallery_gpu_search(gg, s, d_probes, nq, k, d_out, d_counts);
    memset(got, 0x5a, out_bytes);
    memset(cgot, 0x5a, sizeof(int) * (size_t)nq);
    if (st != FFU_OK || ffu_gpu_copy(NULL, got, d_out, out_bytes) != FFU_OK ||
        ffu_gpu_copy(NULL, cgot, d_counts, sizeof(int) * (size_t)nq) != FFU_OK) {
        fprintf(stderr, "device search: %s\n", ffu_error_message());
        ok = 0;
        goto done;
    }
    snprintf(what, sizeof what, "%s device vs replay (device memory, stream)",
             storage == FFU_GALLERY_GPU_F16 ? "fp16" : "fp32");
    ok &= ggd_same(what, got, cgot, ref, cref, nq, k, 0, 0);
    /* 3: many passes of a few queries (a tiny workspace), counts not wanted */
    gallery_gpu_set_workspace(gg, 1);
    memset(got, 0x5a, out_bytes);
    st = ffu_gallery_gpu_search(gg, s, probes, nq, k, got, NULL);
    gallery_gpu_set_workspace(gg, GALLERY_GPU_WORKSPACE);
    if (st != FFU_OK) {
        ok = 0;
        goto done;
    }
    snprintf(what, sizeof what, "%s device vs replay (one query per pass)",
             storage == FFU_GALLERY_GPU_F16 ? "fp16" : "fp32");
    ok &= ggd_same(what, got, cref, ref, cref, nq, k, 0, 0);
done:
    ffu_gpu_free(gpu, d_probes);
    ffu_gpu_free(gpu, d_out);
    ffu_gpu_free(gpu, d_counts);
    free(ref), free(got), free(cref), free(cgot);
    return ok;
}

static void test_gallery_gpu(void)
{
    int n = ffu_gpu_device_count();
    CHECK(n >= 0);
    ffu_gpu *gpu = NULL;
    if (n == 0) {
        ffu_status st = ffu_gpu_open(0, &gpu);
        CHECK(st == FFU_ERR_DEVICE || st == FFU_ERR_UNSUPPORTED);
        CHECK(gpu == NULL && strlen(ffu_error_message()) > 0);
        TEST_SKIP("no CUDA device");
    }
    CHECK_EQ_INT(ffu_gpu_open(0, &gpu), FFU_OK);
    ffu_gpu_device_info info;
    if (ffu_gpu_device_info_get(0, &info) == FFU_OK)
        printf("  device: %s (sm_%d%d)\n", info.name, info.cc_major, info.cc_minor);
    ffu_gpu_stream *s = NULL;
    CHECK_EQ_INT(ffu_gpu_stream_create(gpu, &s), FFU_OK);

    float *tpl0 = malloc(sizeof(float) * GGD_DIM * GGD_NID);
    float *probes = malloc(sizeof(float) * GGD_DIM * GGD_NQ);
    ffu_gallery_match *cpu = malloc(sizeof *cpu * GGD_NQ * KMAX);
    ffu_gallery_match *got = malloc(sizeof *got * GGD_NQ * KMAX);
    int ccpu[GGD_NQ], cgot[GGD_NQ];
    CHECK(tpl0 && probes && cpu && got);
    ffu_gallery *g = ggd_gallery(GGD_DIM, 2024, tpl0);
    CHECK(g);
    ggd_probes(tpl0, GGD_DIM, 77, probes);

    for (int storage = 0; storage < FFU_GALLERY_GPU_STORAGE_COUNT; storage++) {
        ffu_gallery_gpu *gg = NULL;
        CHECK_EQ_INT(ffu_gallery_gpu_create(gpu, g, (ffu_gallery_gpu_storage)storage, &gg), FFU_OK);
        CHECK_EQ_INT(ffu_gallery_gpu_identity_count(gg), GGD_NID);
        CHECK_EQ_INT(ffu_gallery_gpu_template_count(gg), ffu_gallery_template_count(g));
        CHECK_EQ_INT(ffu_gallery_gpu_dim(gg), GGD_DIM);
        for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
            int k = ks[t];
            CHECK(check_against_reference(gpu, s, gg, g, (ffu_gallery_gpu_storage)storage,
                                          probes, GGD_NQ, k));
            ggd_cpu_search(g, probes, GGD_NQ, k, cpu, ccpu);
            CHECK_EQ_INT(ffu_gallery_gpu_search(gg, s, probes, GGD_NQ, k, got, cgot), FFU_OK);
            if (storage == FFU_GALLERY_GPU_F32) {
                CHECK(ggd_same("fp32 device vs CPU search", got, cgot, cpu, ccpu, GGD_NQ, k, 2e-6,
                               k <= 130 ? 0 : 2e-6));
            } else {
                for (int q = 0; q < GGD_NQ; q++) {
                    CHECK_EQ_INT(cgot[q], ccpu[q]);
                    for (int j = 0; j < cgot[q]; j++)
                        CHECK_NEAR(got[(size_t)q * k + j].similarity,
                                   cpu[(size_t)q * k + j].similarity, 5e-4);
                }
            }
        }
        /* steady state: the same search again allocates nothing on the device */
        ffu_gpu_pool_stats before, after;
        ffu_gpu_pool_get_stats(gpu, &before);
        for (int rep = 0; rep < 3; rep++)
            CHECK_EQ_INT(ffu_gallery_gpu_search(gg, s, probes, GGD_NQ, 10, got, cgot), FFU_OK);
        ffu_gpu_pool_get_stats(gpu, &after);
        CHECK(after.device_allocs == before.device_allocs);
        /* bad arguments are refused */
        CHECK_EQ_INT(ffu_gallery_gpu_search(gg, s, probes, GGD_NQ, 0, got, cgot), FFU_ERR_INVALID);
        CHECK_EQ_INT(ffu_gallery_gpu_search(gg, s, probes, GGD_NQ, KMAX + 1, got, cgot),
                     FFU_ERR_INVALID);
        CHECK_EQ_INT(ffu_gallery_gpu_search(gg, s, NULL, 1, 1, got, cgot), FFU_ERR_INVALID);
        CHECK_EQ_INT(ffu_gallery_gpu_search(gg, s, probes, -1, 1, got, cgot), FFU_ERR_INVALID);
        CHECK_EQ_INT(ffu_gallery_gpu_search(gg, s, probes, 0, 1, got, cgot), FFU_OK);
        ffu_gallery_gpu_destroy(gg);
    }
    CHECK_EQ_INT(ffu_gallery_gpu_create(gpu, g, FFU_GALLERY_GPU_STORAGE_COUNT, NULL),
                 FFU_ERR_INVALID);
    ffu_gallery_destroy(g);
    free(tpl0), free(probes), free(cpu), free(got);
    ffu_gpu_stream_destroy(s);
    ffu_gpu_close(gpu);
}

/* A snapshot stays what it was until sync; sync to a grown gallery sees the new
 * templates; an empty gallery answers nothing. */
static void test_gallery_gpu_sync(void)
{
    if (ffu_gpu_device_count() == 0)
        TEST_SKIP("no CUDA device");
    ffu_gpu *gpu = NULL;
    CHECK_EQ_INT(ffu_gpu_open(0, &gpu), FFU_OK);
    ffu_gallery *g = NULL;
    CHECK_EQ_INT(ffu_gallery_create(64, "m", &g), FFU_OK);
    ffu_gallery_gpu *gg = NULL;
    CHECK_EQ_INT(ffu_gallery_gpu_create(gpu, g, FFU_GALLERY_GPU_F32, &gg), FFU_OK);
    CHECK_EQ_INT(ffu_gallery_gpu_identity_count(gg), 0);
    uint64_t seed = 8;
    float v[3][64];
    for (int i = 0; i < 3; i++)
        ggd_rand_vec(&seed, v[i], 64);
    ffu_gallery_match m[4];
    int c[2] = {7, 7};
    float two[128];
    memcpy(two, v[0], sizeof v[0]);
    memcpy(two + 64, v[1], sizeof v[1]);
    CHECK_EQ_INT(ffu_gallery_gpu_search(gg, NULL, two, 1, 4, m, c), FFU_OK);
    CHECK(c[0] == 0 && m[0].identity == -1 && m[3].similarity == -1.0f);

    CHECK_EQ_INT(ffu_gallery_add(g, "a", v[0], NULL, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_gallery_add(g, "b", v[2], NULL, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_gallery_gpu_search(gg, NULL, two, 1, 4, m, c), FFU_OK);
    CHECK_EQ_INT(c[0], 0); /* still the empty snapshot */
    CHECK_EQ_INT(ffu_gallery_gpu_sync(gg, g), FFU_OK);
    CHECK_EQ_INT(ffu_gallery_gpu_identity_count(gg), 2);
    CHECK_EQ_INT(ffu_gallery_gpu_search(gg, NULL, two, 2, 2, m, c), FFU_OK);
    CHECK(c[0] == 2 && m[0].identity == 0 && m[0].similarity > 0.9999f);
    /* "b" gets v[1] as a second template: the probe v[1] finds it after sync only */
    CHECK(c[1] == 2 && m[2].similarity < 0.9f);
    CHECK_EQ_INT(ffu_gallery_add(g, "b", v[1], NULL, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_gallery_gpu_sync(gg, g), FFU_OK);
    CHECK_EQ_INT(ffu_gallery_gpu_template_count(gg), 3);
    CHECK_EQ_INT(ffu_gallery_gpu_search(gg, NULL, two, 2, 2, m, c), FFU_OK);
    CHECK(m[2].identity == 1 && m[2].similarity > 0.9999f);
    /* another dim is refused and the snapshot kept */
    ffu_gallery *other = NULL;
    CHECK_EQ_INT(ffu_gallery_create(32, "m", &other), FFU_OK);
    CHECK_EQ_INT(ffu_gallery_gpu_sync(gg, other), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gallery_gpu_template_count(gg), 3);
    ffu_gallery_destroy(other);
    ffu_gallery_gpu_destroy(gg);
    ffu_gallery_destroy(g);
    ffu_gpu_close(gpu);
}

/* 20000 identities (21000 templates) of dim 128 (313 segments at k 10: nine merge rounds, 157 tiles of
 * templates), 100 probes: device vs replay bit for bit, fp32 and fp16. */
static void test_gallery_gpu_large(void)
{
    if (ffu_gpu_device_count() == 0)
        TEST_SKIP("no CUDA device");
    enum { DIM = 128, NID = 20000, NQ = 100 };
    ffu_gpu *gpu = NULL;
    CHECK_EQ_INT(ffu_gpu_open(0, &gpu), FFU_OK);
    ffu_gallery *g = NULL;
    CHECK_EQ_INT(ffu_gallery_create(DIM, "m", &g), FFU_OK);
    uint64_t seed = 99;
    float v[DIM];
    char name[32];
    for (int i = 0; i < NID; i++) {
        snprintf(name, sizeof name, "id%d", i);
        for (int t = 0; t < 1 + (i % 20 == 0); t++) { /* every 20th has two templates */
            ggd_rand_vec(&seed, v, DIM);
            CHECK_EQ_INT(ffu_gallery_add(g, name, v, NULL, NULL), FFU_OK);
        }
    }
    float *probes = malloc(sizeof(float) * NQ * DIM);
    CHECK(probes);
    for (int q = 0; q < NQ; q++)
        ggd_rand_vec(&seed, probes + (size_t)q * DIM, DIM);
    ffu_gpu_stream *s = NULL;
    CHECK_EQ_INT(ffu_gpu_stream_create(gpu, &s), FFU_OK);
    for (int storage = 0; storage < FFU_GALLERY_GPU_STORAGE_COUNT; storage++) {
        ffu_gallery_gpu *gg = NULL;
        CHECK_EQ_INT(ffu_gallery_gpu_create(gpu, g, (ffu_gallery_gpu_storage)storage, &gg), FFU_OK);
        static const int kk[] = {1, 10, 100};
        for (int t = 0; t < 3; t++)
            CHECK(check_against_reference(gpu, s, gg, g, (ffu_gallery_gpu_storage)storage, probes,
                                          NQ, kk[t]));
        ffu_gallery_gpu_destroy(gg);
    }
    ffu_gpu_stream_destroy(s);
    free(probes);
    ffu_gallery_destroy(g);
    ffu_gpu_close(gpu);
}

TEST_MAIN(test_gallery_gpu, test_gallery_gpu_sync, test_gallery_gpu_large)
