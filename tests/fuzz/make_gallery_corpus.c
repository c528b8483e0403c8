/* Writes the seed corpus of the gallery fuzzer (fuzz_gallery.c) into the folder given
 * (normally tests/fixtures/corpus/gallery): small valid FFGL files from
 * gallery_builder.h, and damaged ones that reach the reader's checks (truncated,
 * flipped byte, bad counts or values behind a correct CRC). Not part of the build; run
 * by hand when the seeds change:
 *   cc -O2 -Itests tests/fuzz/make_gallery_corpus.c -lm -o /tmp/make_gallery_corpus &&
 *   /tmp/make_gallery_corpus tests/fixtures/corpus/gallery */
#include <stdio.h>

#include "fuzz/gallery_builder.h"

/* One identity "a" with one template of dim 4 whose first value is f0 (0 = unit). */
static void one(gb *b, uint32_t version, uint32_t dim, uint32_t nid, uint32_t ntpl,
                const char *name, uint32_t count, float f0)
{
    float u[4];
    gb_unit(u, 4, 0);
    gb_begin(b, version);
    gb_head(b, dim, nid, ntpl, "faceres");
    gb_str(b, name);
    gb_u32(b, count);
    gb_str(b, "a.jpg");
    for (int d = 0; d < 4; d++)
        gb_f32(b, d == 0 && f0 != 0 ? f0 : u[d]);
    gb_finish(b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int rc = 0;
    gb b = {0};
    static const char *const names[4] = {"Barack Obama", "Joe Biden", "Zo\xc3\xab", "x"};
    static const int counts[4] = {2, 1, 3, 1};
    gb_gallery(&b, 4, "faceres", 2, names, counts);
    rc |= bw_save(dir, "two.ffgl", b.p, b.n);
    gb_gallery(&b, 16, "mobileface", 4, names, counts);
    rc |= bw_save(dir, "four.ffgl", b.p, b.n);
    rc |= bw_save(dir, "truncated.ffgl", b.p, b.n / 2);
    b.p[b.n / 3] ^= 0x10;
    rc |= bw_save(dir, "flipped.ffgl", b.p, b.n);
    gb_gallery(&b, 1, "m", 1, names, counts);
    rc |= bw_save(dir, "dim1.ffgl", b.p, b.n);
    gb_gallery(&b, 8, "faceres", 0, names, counts);
    rc |= bw_save(dir, "empty.ffgl", b.p, b.n);

    one(&b, 1, 4, 1, 1, "a", 1, NAN);
    rc |= bw_save(dir, "nan.ffgl", b.p, b.n);
    one(&b, 1, 4, 1, 1, "a", 1, 3.0f);
    rc |= bw_save(dir, "not_unit.ffgl", b.p, b.n);
    one(&b, 1, 4, 1000000, 1, "a", 1, 0);
    rc |= bw_save(dir, "huge_count.ffgl", b.p, b.n);
    one(&b, 1, 4, 1, 2, "a", 1, 0);
    rc |= bw_save(dir, "count_mismatch.ffgl", b.p, b.n);
    one(&b, 1, 4, 1, 1, "a\tb", 1, 0);
    rc |= bw_save(dir, "control_name.ffgl", b.p, b.n);
    one(&b, 2, 4, 1, 1, "a", 1, 0);
    rc |= bw_save(dir, "version2.ffgl", b.p, b.n);
    one(&b, 1, 3, 1, 1, "a", 1, 0); /* 4 floats where dim 3 wants 3 */
    rc |= bw_save(dir, "dim_mismatch.ffgl", b.p, b.n);
    free(b.p);
    return rc;
}
