/* A growing byte buffer for the library-independent file writers of the tests
 * (gallery_builder.h, ert_builder.h) and a save for the seed-corpus generators
 * (make_*_corpus.c), so each format's writer holds only its format. Header only. Out of
 * memory aborts: these are test tools. */
#ifndef FFU_TESTS_BYTE_WRITER_H
#define FFU_TESTS_BYTE_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Start from {0}; free p when done; set n = 0 to start over with the same memory. */
typedef struct byte_writer {
    uint8_t *p;
    size_t n, cap;
} byte_writer;

/* Appends n bytes (d may be NULL when n is 0). */
static inline void bw_bytes(byte_writer *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) abort(); /* test tool: out of memory is fatal */
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

/* Writes p[0..n) to dir/name: 0 on success, 1 with the path on stderr otherwise (the
 * generators OR these into their exit status and go on with the next file). */
static inline int bw_save(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", path);
        if (f) fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

#endif
