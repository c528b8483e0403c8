/* Test data shared by test_gallery_gpu_hd.c (the GPU search's arithmetic on the CPU)
 * and test_gallery_gpu.c (the search on a device): a realistic gallery of random unit
 * vectors with identities of several templates, added out of order so rows get moved,
 * exact duplicates under other names (true ties), and a probe set of noisy copies,
 * exact copies of duplicated templates, random and scaled probes, a zero and a NaN
 * probe. Also the comparisons both tests make. Header only, static functions. */
#ifndef FFU_TEST_GALLERY_GPU_DATA_H
#define FFU_TEST_GALLERY_GPU_DATA_H

#include <stdio.h>

#include "facefuse/gallery.h"
#include "test.h"

/* dim 512; identities 0..899 one template; 900..949 two or three (the extra ones added
 * after later identities exist); 950..999 exact copies of identity (id - 950) * 7's
 * template; 1000 has three templates, so the CPU kernel's 4-row tail (ntpl % 4 rows,
 * summed another way) holds none of the duplicated rows and ties stay exact there. */
#define GGD_DIM 512
#define GGD_NID 1001
#define GGD_NQ 40

static void ggd_rand_vec(uint64_t *s, float *v, int dim)
{
    for (int d = 0; d < dim; d++)
        v[d] = test_rand_f(s) * 2 - 1;
}

/* Builds the gallery (dim <= GGD_DIM); tpl0 (GGD_NID x dim, may be NULL) gets each identity's first
 * template as added (unnormalised). */
static ffu_gallery *ggd_gallery(int dim, uint64_t seed, float *tpl0)
{
    ffu_gallery *g = NULL;
    if (ffu_gallery_create(dim, "test-embedder", &g) != FFU_OK)
        return NULL;
    float *v = malloc(sizeof *v * (size_t)dim * GGD_NID);
    char name[32];
    int ok = v != NULL;
    for (int id = 0; ok && id < GGD_NID; id++) {
        float *row = v + (size_t)id * dim;
        if (id >= 950 && id < 1000)
            memcpy(row, v + (size_t)(id - 950) * 7 * dim, sizeof *row * (size_t)dim);
        else
            ggd_rand_vec(&seed, row, dim);
        snprintf(name, sizeof name, id >= 950 && id < 1000 ? "dup%04d" : "person%04d", id);
        ok = ffu_gallery_add(g, name, row, NULL, NULL) == FFU_OK;
        /* a second template for an earlier identity once later ones exist: rows move */
        if (ok && id >= 920 && id < 970) {
            float w[GGD_DIM];
            int back = id - 20; /* 900..949 */
            for (int d = 0; d < dim; d++)
                w[d] = v[(size_t)back * dim + d] + 0.8f * (test_rand_f(&seed) * 2 - 1);
            snprintf(name, sizeof name, "person%04d", back);
            ok = ffu_gallery_add(g, name, w, NULL, NULL) == FFU_OK;
            if (ok && back % 3 == 0) {
                ggd_rand_vec(&seed, w, dim);
                ok = ffu_gallery_add(g, name, w, NULL, NULL) == FFU_OK;
            }
        }
    }
    if (ok) { /* identity 1000's last two templates */
        float w[GGD_DIM];
        for (int i = 0; ok && i < 2; i++) {
            ggd_rand_vec(&seed, w, dim);
            ok = ffu_gallery_add(g, "person1000", w, NULL, NULL) == FFU_OK;
        }
    }
    if (ok && tpl0)
        memcpy(tpl0, v, sizeof *v * (size_t)dim * GGD_NID);
    free(v);
    if (!ok) {
        ffu_gallery_destroy(g);
        return NULL;
    }
    return g;
}

/* GGD_NQ probes of dim floats from the first templates tpl0. */
static void ggd_probes(const float *tpl0, int dim, uint64_t seed, float *p)
{
    for (int q = 0; q < GGD_NQ; q++) {
        float *row = p + (size_t)q * dim;
        int kind = q % 8, src = (int)(test_rand_u64(&seed) % 950);
        if (q == GGD_NQ - 2) { /* zero probe: finds nothing */
            memset(row, 0, sizeof *row * (size_t)dim);
        } else if (q == GGD_NQ - 1) { /* non-finite probe: finds nothing */
            ggd_rand_vec(&seed, row, dim);
            row[dim / 2] = NAN;
        } else if (kind < 4) { /* a new photo of an enrolled person */
            for (int d = 0; d < dim; d++)
                row[d] = tpl0[(size_t)src * dim + d] + 0.5f * (test_rand_f(&seed) * 2 - 1);
        } else if (kind < 6) { /* exactly a duplicated template: a two-way tie at the top */
            int o = (int)(test_rand_u64(&seed) % 50) * 7;
            float scale = kind == 4 ? 1.0f : 1000.0f;
            for (int d = 0; d < dim; d++)
                row[d] = tpl0[(size_t)o * dim + d] * scale;
        } else if (kind == 6) { /* nobody */
            ggd_rand_vec(&seed, row, dim);
        } else { /* a tiny-scaled copy */
            for (int d = 0; d < dim; d++)
                row[d] = tpl0[(size_t)src * dim + d] * 1e-3f;
        }
    }
}

/* The CPU search of every probe: out nq x k, counts nq. */
static void ggd_cpu_search(const ffu_gallery *g, const float *probes, int nq, int k,
                           ffu_gallery_match *out, int *counts)
{
    int dim = ffu_gallery_dim(g);
    for (int q = 0; q < nq; q++)
        counts[q] = ffu_gallery_search(g, probes + (size_t)q * dim, out + (size_t)q * k, k);
}

/* Is list (n answers) ranked: similarities not increasing, equal ones by index? */
static int ggd_ranked(const ffu_gallery_match *l, int n)
{
    for (int j = 1; j < n; j++)
        if (l[j].similarity > l[j - 1].similarity ||
            (l[j].similarity == l[j - 1].similarity && l[j].identity <= l[j - 1].identity))
            return 0;
    return 1;
}

/* Compares two answer sets: counts equal, both ranked, identities equal slot for slot,
 * similarities within tol (0: bit for bit). With swap_tol > 0, two identities whose
 * scores differ by at most swap_tol may trade places (rounding decides such near ties;
 * exact ties must still agree): the identity must then appear in the other list within
 * swap_tol of its score, or score within swap_tol of the other list's last answer.
 * Prints the first difference. Returns 1 when the sets agree. */
static int ggd_same(const char *what, const ffu_gallery_match *a, const int *ca,
                    const ffu_gallery_match *b, const int *cb, int nq, int k, double tol,
                    double swap_tol)
{
    double worst = 0;
    int swaps = 0;
    for (int q = 0; q < nq; q++) {
        const ffu_gallery_match *la = a + (size_t)q * k, *lb = b + (size_t)q * k;
        if (ca[q] != cb[q] || !ggd_ranked(la, ca[q]) || !ggd_ranked(lb, cb[q])) {
            fprintf(stderr, "%s: query %d: %d vs %d answers, or not ranked\n", what, q, ca[q],
                    cb[q]);
            return 0;
        }
        for (int j = 0; j < k; j++) {
            const ffu_gallery_match *x = la + j, *y = lb + j;
            double d = fabs((double)x->similarity - (double)y->similarity);
            int ok = d <= tol && (tol > 0 || !memcmp(&x->similarity, &y->similarity, sizeof(float)));
            if (ok && x->identity != y->identity) {
                ok = 0;
                if (swap_tol > 0 && x->similarity != y->similarity && j < ca[q]) {
                    for (int i = 0; i < cb[q]; i++)
                        ok |= lb[i].identity == x->identity &&
                              fabs((double)lb[i].similarity - x->similarity) <= swap_tol;
                    ok |= fabs((double)lb[cb[q] - 1].similarity - x->similarity) <= swap_tol;
                    swaps += ok;
                }
            }
            if (!ok) {
                fprintf(stderr, "%s: query %d slot %d (k %d): identity %d (%.9g) vs %d (%.9g)\n",
                        what, q, j, k, x->identity, x->similarity, y->identity, y->similarity);
                return 0;
            }
            worst = d > worst ? d : worst;
        }
    }
    printf("  %s, k %d: same answers%s, largest similarity difference %.3g", what, k,
           swaps ? " but for near ties" : "", worst);
    if (swaps)
        printf(" (%d slots hold the other of two scores within %.3g)", swaps, swap_tol);
    printf("\n");
    return 1;
}

#endif
