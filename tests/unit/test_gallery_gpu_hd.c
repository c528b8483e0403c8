/* The GPU gallery search's arithmetic, checked on the CPU (no GPU needed): the FFU_HD
 * steps of src/gallery/gallery_gpu_hd.h that the kernels run (probe normalisation,
 * fp16 conversion, dot steps, identity scores, top-k insertion and merge with their tie
 * rule) against the CPU gallery code and the compiler's own _Float16, the workspace
 * plan, and the whole device algorithm replayed on the host
 * (gallery_gpu_reference_search) against ffu_gallery_search on a realistic gallery:
 * identical identities in identical order, similarities within rounding (fp32), or
 * within the fp16 bound (fp16). */
#include "facefuse/gallery.h"
#include "gallery/gallery_gpu_internal.h"
#include "gallery/gallery_internal.h"
#include "test.h"
#include "unit/test_gallery_gpu_data.h"

/* ---- fp16 ------------------------------------------------------------------------------ */

/* the checks against the compiler's _Float16, where it has one (GCC 12; clang 14 has
 * none on x86) */
#ifdef __FLT16_MANT_DIG__
static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f16_bits(_Float16 h)
{
    uint16_t u;
    memcpy(&u, &h, sizeof u);
    return u;
}
#endif

static void test_f16_decode_all(void)
{
    int nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = gallery_gpu_f16_to_f32((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            CHECK(isnan(f));
            nan++;
            continue;
        }
#ifdef __FLT16_MANT_DIG__
        _Float16 ref;
        uint16_t hb = (uint16_t)h;
        memcpy(&ref, &hb, sizeof ref);
        if (bits_of(f) != bits_of((float)ref)) {
            fprintf(stderr, "half 0x%04x: %a vs %a\n", h, f, (float)ref);
            CHECK(0);
        }
#endif
        /* and back: every half survives the round trip */
        CHECK_EQ_INT(gallery_gpu_f32_to_f16(f), h);
    }
    CHECK_EQ_INT(nan, 2 * 1023);
    CHECK(gallery_gpu_f16_to_f32(0x3c00) == 1.0f && gallery_gpu_f16_to_f32(0xc000) == -2.0f);
    CHECK(gallery_gpu_f16_to_f32(0x0001) == ldexpf(1, -24)); /* smallest subnormal */
    CHECK(gallery_gpu_f16_to_f32(0x7bff) == 65504.0f);
}

static void test_f16_encode(void)
{
#ifdef __FLT16_MANT_DIG__
    /* every midpoint between neighbouring halves and the floats either side of it:
     * where round-to-nearest-even decides */
    long checked = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float lo = gallery_gpu_f16_to_f32((uint16_t)h), hi = gallery_gpu_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)(((double)lo + (double)hi) / 2); /* exact: 12 significant bits */
        for (int sign = 0; sign < 2; sign++)
            for (int dm = -2; dm <= 2; dm++) {
                float x = float_of(bits_of(mid) + (uint32_t)dm);
                if (dm < 0 && bits_of(mid) < 2)
                    continue;
                if (sign)
                    x = -x;
                uint16_t got = gallery_gpu_f32_to_f16(x), want = f16_bits((_Float16)x);
                if (got != want) {
                    fprintf(stderr, "float %a: 0x%04x vs 0x%04x\n", x, got, want);
                    CHECK(0);
                }
                checked++;
            }
    }
    /* random bit patterns over the whole float range, and the edges */
    uint64_t seed = 11;
    for (int i = 0; i < 2000000; i++) {
        float x = float_of((uint32_t)(test_rand_u64(&seed) >> 32));
        if (isnan(x))
            continue;
        if (gallery_gpu_f32_to_f16(x) != f16_bits((_Float16)x)) {
            fprintf(stderr, "float %a: 0x%04x vs 0x%04x\n", x, gallery_gpu_f32_to_f16(x),
                    f16_bits((_Float16)x));
            CHECK(0);
        }
    }
    const float edge[] = {0.0f, -0.0f, 65504.0f, 65519.996f, 65520.0f, 1e9f, INFINITY,
                          -INFINITY, ldexpf(1, -24), ldexpf(1, -25), ldexpf(1.0000001f, -25),
                          ldexpf(3, -26), ldexpf(1, -14), ldexpf(1023, -24), FLT_MIN};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        CHECK_EQ_INT(gallery_gpu_f32_to_f16(edge[i]), f16_bits((_Float16)edge[i]));
    printf("  %ld midpoints and 2M random floats match _Float16\n", checked);
#else
    CHECK_EQ_INT(gallery_gpu_f32_to_f16(1.0f), 0x3c00);
    CHECK_EQ_INT(gallery_gpu_f32_to_f16(65520.0f), 0x7c00);
#endif
    CHECK(isnan(gallery_gpu_f16_to_f32(gallery_gpu_f32_to_f16(NAN))));
    CHECK_EQ_INT(gallery_gpu_f32_to_f16(-INFINITY), 0xfc00);
}

/* ---- normalise, dot, score ------------------------------------------------------------- */

static void test_normalize_matches_cpu(void)
{
    static const int dims[] = {1, 3, 16, 127, 512, GALLERY_MAX_DIM};
    uint64_t seed = 5;
    float v[GALLERY_MAX_DIM], a[GALLERY_MAX_DIM], b[GALLERY_MAX_DIM];
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++)
        for (int rep = 0; rep < 50; rep++) {
            int dim = dims[t];
            float scale = rep % 5 == 0 ? 1e30f : rep % 5 == 1 ? 1e-30f : 1.0f;
            for (int d = 0; d < dim; d++)
                v[d] = (test_rand_f(&seed) * 2 - 1) * scale;
            CHECK_EQ_INT(gallery_gpu_normalize(v, dim, a), gallery_normalize(v, dim, b));
            CHECK(!memcmp(a, b, sizeof(float) * (size_t)dim)); /* bit for bit */
        }
    memset(v, 0, sizeof v);
    CHECK(!gallery_gpu_normalize(v, 8, a));
    v[0] = NAN;
    CHECK(!gallery_gpu_normalize(v, 8, a));
    v[0] = INFINITY;
    CHECK(!gallery_gpu_normalize(v, 8, a));
    v[0] = 3e38f, v[1] = 3e38f; /* overflows float, not the double sum */
    CHECK(gallery_gpu_normalize(v, 8, a) && fabsf(a[0] - 0.70710677f) < 1e-7f);
}

static void test_dot_and_score(void)
{
    uint64_t seed = 9;
    float q[512], t[512];
    uint16_t th[512];
    for (int rep = 0; rep < 200; rep++) {
        int dim = rep % 2 ? 512 : 1 + rep;
        ggd_rand_vec(&seed, q, dim);
        ggd_rand_vec(&seed, t, dim);
        gallery_gpu_normalize(q, dim, q);
        gallery_gpu_normalize(t, dim, t);
        double ref = 0;
        for (int d = 0; d < dim; d++) {
            ref += (double)q[d] * t[d];
            th[d] = gallery_gpu_f32_to_f16(t[d]);
        }
        /* fp32: within the sum's rounding; fp16: within the documented 5e-4 */
        CHECK_NEAR(gallery_gpu_dot_f32(q, t, dim), ref, 1e-6);
        CHECK_NEAR(gallery_gpu_dot_f16(q, th, dim), ref, 5e-4);
        CHECK_NEAR(gallery_gpu_dot_f32(q, t, dim), gallery_dot_c(q, t, dim), 1e-6);
    }
    CHECK(gallery_gpu_mac(1.0f, ldexpf(1, -13) + ldexpf(1, -26), ldexpf(1, -12)) ==
          fmaf(ldexpf(1, -13) + ldexpf(1, -26), ldexpf(1, -12), 1.0f)); /* one rounding */
    const float sims[] = {0.1f, 0.7f, -0.2f, 1.0000002f, -3.0f};
    CHECK(gallery_gpu_identity_score(sims, 0, 3) == 0.7f);
    CHECK(gallery_gpu_identity_score(sims, 2, 2) == 1.0f);  /* clamped */
    CHECK(gallery_gpu_identity_score(sims, 4, 1) == -1.0f); /* clamped */
    CHECK(gallery_gpu_identity_score(sims, 2, 1) == -0.2f);
}

/* ---- ranking --------------------------------------------------------------------------- */

static int cmp_rank(const void *pa, const void *pb)
{
    const ffu_gallery_match *a = pa, *b = pb;
    return gallery_gpu_before(a->similarity, a->identity, b->similarity, b->identity) ? -1
         : gallery_gpu_before(b->similarity, b->identity, a->similarity, a->identity) ? 1 : 0;
}

static void test_insert_and_merge(void)
{
    uint64_t seed = 3;
    enum { N = 300 };
    ffu_gallery_match all[N], sorted[N], list[N], a[N], b[N], m[N];
    for (int rep = 0; rep < 300; rep++) {
        int n = 1 + (int)(test_rand_u64(&seed) % N), k = 1 + (int)(test_rand_u64(&seed) % 40);
        /* few distinct values: many ties */
        for (int i = 0; i < n; i++) {
            all[i].identity = i;
            all[i].similarity = (float)(test_rand_u64(&seed) % 7) / 7.0f - 0.5f;
        }
        memcpy(sorted, all, sizeof all[0] * (size_t)n);
        qsort(sorted, (size_t)n, sizeof sorted[0], cmp_rank);
        int want = n < k ? n : k;
        /* in index order, as one select thread and the CPU search offer them */
        int c = 0;
        for (int i = 0; i < n; i++)
            c = gallery_gpu_insert(list, c, k, all[i].identity, all[i].similarity);
        CHECK_EQ_INT(c, want);
        CHECK(!memcmp(list, sorted, sizeof list[0] * (size_t)c));
        /* in reverse order too: the rule does not rely on the order of arrival */
        c = 0;
        for (int i = n - 1; i >= 0; i--)
            c = gallery_gpu_insert(list, c, k, all[i].identity, all[i].similarity);
        CHECK(c == want && !memcmp(list, sorted, sizeof list[0] * (size_t)c));
        /* merging the top k of any split of the identities */
        int na = 0, nb = 0;
        for (int i = 0; i < n; i++) {
            if (test_rand_u64(&seed) & 1)
                na = gallery_gpu_insert(a, na, k, all[i].identity, all[i].similarity);
            else
                nb = gallery_gpu_insert(b, nb, k, all[i].identity, all[i].similarity);
        }
        c = gallery_gpu_merge(a, na, b, nb, k, m);
        CHECK(c == want && !memcmp(m, sorted, sizeof m[0] * (size_t)c));
        c = gallery_gpu_merge(b, nb, a, na, k, m);
        CHECK(c == want && !memcmp(m, sorted, sizeof m[0] * (size_t)c));
    }
    /* the CPU search's own tie rule: equal scores rank by index */
    ffu_gallery_match l[2];
    int c = gallery_gpu_insert(l, 0, 2, 5, 0.5f);
    c = gallery_gpu_insert(l, c, 2, 9, 0.5f);
    c = gallery_gpu_insert(l, c, 2, 2, 0.5f);
    CHECK(c == 2 && l[0].identity == 2 && l[1].identity == 5);
    ffu_gallery_match out[4];
    CHECK_EQ_INT(gallery_gpu_finish(l, 2, 1, 4, out), 2);
    CHECK(out[1].identity == 5 && out[2].identity == -1 && out[3].similarity == -1.0f);
    CHECK_EQ_INT(gallery_gpu_finish(l, 2, 0, 4, out), 0);
    CHECK(out[0].identity == -1 && out[0].similarity == -1.0f);
}

/* The merge tree over nseg lists, as the merge kernel runs it, for every nseg up to 40:
 * the result is the top k of everything. */
static void test_merge_tree(void)
{
    uint64_t seed = 17;
    enum { MAXSEG = 40, K = 6 };
    ffu_gallery_match cand[2][MAXSEG * K], all[MAXSEG * K];
    int cnt[2][MAXSEG];
    for (int nseg = 1; nseg <= MAXSEG; nseg++) {
        int n = 0;
        for (int s = 0; s < nseg; s++) {
            int len = (int)(test_rand_u64(&seed) % (K + 1)); /* short and empty lists too */
            cnt[0][s] = 0;
            for (int i = 0; i < len; i++) {
                int id = s * K + i;
                float sim = (float)(test_rand_u64(&seed) % 5) / 5.0f;
                cnt[0][s] = gallery_gpu_insert(cand[0] + s * K, cnt[0][s], K, id, sim);
                all[n].identity = id;
                all[n++].similarity = sim;
            }
        }
        qsort(all, (size_t)n, sizeof all[0], cmp_rank);
        int src = 0;
        for (int w = 1; w < nseg; w *= 2) {
            for (int p = 0; p < gallery_gpu_merge_pairs(nseg, w); p++)
                gallery_gpu_merge_pair(cand[src], cnt[src], cand[!src], cnt[!src], nseg, K, w, p);
            src = !src;
        }
        CHECK_EQ_INT(cnt[src][0], n < K ? n : K);
        CHECK(!memcmp(cand[src], all, sizeof all[0] * (size_t)cnt[src][0]));
    }
    CHECK_EQ_INT(gallery_gpu_segment_size(1), GALLERY_GPU_SEG_MIN);
    CHECK_EQ_INT(gallery_gpu_segment_size(200), 200);
}

/* ---- the workspace plan ------------------------------------------------------------------ */

static void test_plan(void)
{
    gallery_gpu_plan p;
    CHECK_EQ_INT(gallery_gpu_plan_make(0, 5, 10, 10, 8, 1 << 20, &p), FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_plan_make(1, 0, 10, 10, 8, 1 << 20, &p), FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_plan_make(1, FFU_GALLERY_GPU_MAX_K + 1, 10, 10, 8, 1 << 20, &p),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_plan_make(1, 5, 10, 9, 8, 1 << 20, &p), FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_plan_make(1, 5, 0, 3, 8, 1 << 20, &p), FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_plan_make(1, 5, 10, 10, 0, 1 << 20, &p), FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_plan_make(1, 5, 10, 10, 8, 1 << 20, NULL), FFU_ERR_INVALID);

    static const int cases[][6] = {
        /* nq, k, nid, ntpl, dim, budget KiB */
        {1, 1, 1, 1, 1, 1},          {100, 5, 1000, 1077, 512, 262144},
        {100000, 10, 100000, 100000, 512, 262144}, {7, 1024, 3000, 9000, 128, 1},
        {70000, 1, 10, 10, 4, 1 << 20}, {33, 65, 0, 0, 512, 64}, {5, 3, 200, 200, 17, 40},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int *x = cases[c];
        size_t budget = (size_t)x[5] << 10;
        CHECK_EQ_INT(gallery_gpu_plan_make(x[0], x[1], x[2], x[3], x[4], budget, &p), FFU_OK);
        CHECK(p.chunk >= 1 && p.chunk <= x[0] && p.chunk <= GALLERY_GPU_MAX_CHUNK);
        CHECK(p.chunk == 1 || p.bytes <= budget);
        CHECK_EQ_INT(p.seg, gallery_gpu_segment_size(x[1]));
        CHECK_EQ_INT(p.nseg, (x[2] + p.seg - 1) / p.seg);
        /* a bigger chunk would not fit (or there is no bigger one) */
        gallery_gpu_plan bigger;
        if (p.chunk < x[0] && p.chunk < GALLERY_GPU_MAX_CHUNK) {
            CHECK_EQ_INT(gallery_gpu_plan_make(p.chunk + 1, x[1], x[2], x[3], x[4], (size_t)-1,
                                               &bigger), FFU_OK);
            CHECK(bigger.bytes > budget);
        }
        /* the buffers, each aligned, in order, none overlapping, all inside */
        size_t cq = (size_t)p.chunk, lists = cq * (size_t)p.nseg;
        const size_t off[] = {p.off_probes, p.off_unit, p.off_valid, p.off_sims,
                              p.off_cand[0], p.off_cand[1], p.off_cnt[0], p.off_cnt[1],
                              p.off_out, p.off_counts, p.bytes};
        const size_t need[] = {cq * x[4] * 4, cq * x[4] * 4, cq * 4, cq * x[3] * 4,
                               lists * x[1] * 8, lists * x[1] * 8, lists * 4, lists * 4,
                               cq * x[1] * 8, cq * 4};
        for (int i = 0; i < 10; i++) {
            CHECK_EQ_INT(off[i] % GALLERY_GPU_ALIGN, 0);
            CHECK(off[i] + need[i] <= off[i + 1]);
        }
    }
    /* the grid's limit */
    CHECK_EQ_INT(gallery_gpu_plan_make(70000, 1, 10, 10, 4, (size_t)-1, &p), FFU_OK);
    CHECK_EQ_INT(p.chunk, GALLERY_GPU_MAX_CHUNK);
}

/* ---- the device algorithm on the host vs the CPU search ------------------------------- */

static void test_reference_vs_cpu(void)
{
    float *tpl0 = malloc(sizeof(float) * GGD_DIM * GGD_NID);
    float *probes = malloc(sizeof(float) * GGD_DIM * GGD_NQ);
    CHECK(tpl0 && probes);
    ffu_gallery *g = ggd_gallery(GGD_DIM, 2024, tpl0);
    CHECK(g);
    CHECK_EQ_INT(ffu_gallery_identity_count(g), GGD_NID);
    int ntpl = ffu_gallery_template_count(g);
    CHECK(ntpl > GGD_NID + 40);
    ggd_probes(tpl0, GGD_DIM, 77, probes);

    static const int ks[] = {1, 2, 5, 64, 65, 130, 1024};
    enum { KMAX = 1024 };
    ffu_gallery_match *cpu = malloc(sizeof *cpu * GGD_NQ * KMAX);
    ffu_gallery_match *ref = malloc(sizeof *ref * GGD_NQ * KMAX);
    ffu_gallery_match *full = malloc(sizeof *full * GGD_NQ * KMAX);
    int ccpu[GGD_NQ], cref[GGD_NQ], cfull[GGD_NQ];
    CHECK(cpu && ref && full);
    /* every identity's CPU score, for the fp16 bound */
    ggd_cpu_search(g, probes, GGD_NQ, KMAX, full, cfull);
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        int k = ks[t];
        ggd_cpu_search(g, probes, GGD_NQ, k, cpu, ccpu);
        CHECK_EQ_INT(gallery_gpu_reference_search(g, FFU_GALLERY_GPU_F32, probes, GGD_NQ, k, ref,
                                                  cref), FFU_OK);
        /* identical for short lists; a full ranking of 1001 random identities has
         * neighbours within an ulp or two, where the two summation orders may differ */
        CHECK(ggd_same("fp32 replay vs CPU search", ref, cref, cpu, ccpu, GGD_NQ, k, 2e-6,
                       k <= 130 ? 0 : 2e-6));

        /* fp16: each answer's score within 5e-4 of the identity's CPU score, and the
         * j-th best score within 5e-4 of the CPU's j-th best */
        CHECK_EQ_INT(gallery_gpu_reference_search(g, FFU_GALLERY_GPU_F16, probes, GGD_NQ, k, ref,
                                                  cref), FFU_OK);
        int same_top1 = 0, clear_top1 = 0;
        for (int q = 0; q < GGD_NQ; q++) {
            CHECK_EQ_INT(cref[q], ccpu[q]);
            for (int j = 0; j < cref[q]; j++) {
                const ffu_gallery_match *r = ref + (size_t)q * k + j;
                CHECK_NEAR(r->similarity, cpu[(size_t)q * k + j].similarity, 5e-4);
                float exact = NAN;
                for (int i = 0; i < cfull[q]; i++)
                    if (full[(size_t)q * KMAX + i].identity == r->identity)
                        exact = full[(size_t)q * KMAX + i].similarity;
                CHECK_NEAR(r->similarity, exact, 5e-4);
            }
            if (cref[q] >= 2 && ccpu[q] >= 2 && k >= 2) {
                const ffu_gallery_match *c = cpu + (size_t)q * k;
                if (c[0].similarity - c[1].similarity > 1e-3f) {
                    clear_top1++;
                    same_top1 += ref[(size_t)q * k].identity == c[0].identity;
                }
            }
        }
        CHECK_EQ_INT(same_top1, clear_top1);
    }

    /* what the data is meant to hold: ties broken by index, nothing for bad probes */
    ggd_cpu_search(g, probes, GGD_NQ, 2, cpu, ccpu);
    int ties = 0;
    for (int q = 0; q < GGD_NQ; q++) {
        const ffu_gallery_match *c = cpu + (size_t)q * 2;
        if (q % 8 == 4 || q % 8 == 5) {
            CHECK(c[0].similarity == c[1].similarity && c[0].identity < c[1].identity);
            CHECK(c[0].similarity > 0.9999f && c[1].identity >= 950);
            ties++;
        }
    }
    CHECK(ties >= 8);
    CHECK(ccpu[GGD_NQ - 1] == 0 && ccpu[GGD_NQ - 2] == 0);

    /* empty gallery, and bad arguments */
    ffu_gallery *e = NULL;
    CHECK_EQ_INT(ffu_gallery_create(GGD_DIM, "m", &e), FFU_OK);
    CHECK_EQ_INT(gallery_gpu_reference_search(e, FFU_GALLERY_GPU_F32, probes, 3, 4, ref, cref),
                 FFU_OK);
    CHECK(cref[0] == 0 && cref[2] == 0 && ref[11].identity == -1 && ref[11].similarity == -1.0f);
    CHECK_EQ_INT(gallery_gpu_reference_search(e, FFU_GALLERY_GPU_F32, probes, 3, 0, ref, cref),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_reference_search(NULL, FFU_GALLERY_GPU_F32, probes, 3, 4, ref, cref),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(gallery_gpu_reference_search(e, FFU_GALLERY_GPU_STORAGE_COUNT, probes, 3, 4, ref,
                                              cref), FFU_ERR_INVALID);
    ffu_gallery_destroy(e);
    ffu_gallery_destroy(g);
    free(cpu), free(ref), free(full), free(tpl0), free(probes);
}

/* The public API's argument checks need no device. */
static void test_api_without_device(void)
{
    ffu_gallery *g = NULL;
    CHECK_EQ_INT(ffu_gallery_create(4, "m", &g), FFU_OK);
    ffu_gallery_gpu *gg = (ffu_gallery_gpu *)1;
    CHECK_EQ_INT(ffu_gallery_gpu_create(NULL, g, FFU_GALLERY_GPU_F32, &gg), FFU_ERR_INVALID);
    CHECK(gg == NULL);
    CHECK_EQ_INT(ffu_gallery_gpu_create(NULL, g, FFU_GALLERY_GPU_F32, NULL), FFU_ERR_INVALID);
    CHECK(strlen(ffu_error_message()) > 0);
    ffu_gallery_gpu_destroy(NULL);
    CHECK(ffu_gallery_gpu_identity_count(NULL) == 0 && ffu_gallery_gpu_template_count(NULL) == 0 &&
          ffu_gallery_gpu_dim(NULL) == 0);
    ffu_gallery_match m[2];
    float p[4] = {1, 0, 0, 0};
    CHECK_EQ_INT(ffu_gallery_gpu_search(NULL, NULL, p, 1, 2, m, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gallery_gpu_sync(NULL, g), FFU_ERR_INVALID);
    ffu_gallery_destroy(g);
}

TEST_MAIN(test_f16_decode_all, test_f16_encode, test_normalize_matches_cpu, test_dot_and_score,
          test_insert_and_merge, test_merge_tree, test_plan, test_reference_vs_cpu,
          test_api_without_device)
