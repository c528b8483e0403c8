/* Writes the seed corpus of the ERT fuzzer (fuzz_ert.c) into the folder given
 * (normally tests/fixtures/corpus/ert): tiny dlib shape_predictor files from
 * ert_builder.h, valid ones of a few shapes and damaged ones that reach each check of
 * the reader. Not part of the build; run by hand when the seeds change:
 *   cc -O2 -Itests tests/fuzz/make_ert_corpus.c -lm -o /tmp/make_ert_corpus &&
 *   /tmp/make_ert_corpus tests/fixtures/corpus/ert */
#include <stdio.h>

#include "fuzz/ert_builder.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static const struct {
        const char *name;
        ert_spec s;
    } valid[] = {
        {"tiny.dat", {2, 1, 1, 1, 2, 1}},
        {"small.dat", {5, 2, 3, 2, 6, 2}},
        {"stumps.dat", {3, 2, 2, 0, 1, 3}}, /* depth 0: one leaf, no split */
        {"deep.dat", {4, 1, 2, 4, 8, 4}},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        eb b = {0};
        eb_model(&b, &valid[i].s);
        rc |= bw_save(argv[1], valid[i].name, b.p, b.n);
        if (i == 1) {
            /* damaged copies of small.dat */
            rc |= bw_save(argv[1], "truncated.dat", b.p, b.n / 2);
            uint8_t *c = malloc(b.n);
            memcpy(c, b.p, b.n);
            c[b.n / 3] ^= 0x40; /* a control byte with the text-format bits, or a bad value */
            rc |= bw_save(argv[1], "flipped.dat", c, b.n);
            free(c);
        }
        free(b.p);
    }
    /* a NaN in the initial shape */
    eb b = {0};
    eb_int(&b, 1);
    eb_column(&b, 2);
    eb_float(&b, 0.5f);
    eb_special(&b, 32002);
    rc |= bw_save(argv[1], "nan.dat", b.p, b.n);
    /* a cascade count far beyond the file */
    b.n = 0;
    eb_int(&b, 1);
    eb_column(&b, 2);
    eb_float(&b, 0.25f);
    eb_float(&b, 0.75f);
    eb_int(&b, 40);
    eb_int(&b, 1000000);
    rc |= bw_save(argv[1], "huge_count.dat", b.p, b.n);
    free(b.p);
    return rc;
}
