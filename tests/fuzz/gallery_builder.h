/* A writer of FFGL gallery files (docs/GALLERY.md) that does not use the library, for
 * the gallery test and the fuzzer's seed corpus: it lets a test write files the library
 * would never write (bad counts, NaN, duplicate names) with a correct CRC, so each check
 * of the reader can be reached behind the checksum. Its CRC-32 is the plain bit-by-bit
 * form, a cross-check of the library's table-driven one. Header-only. */
#ifndef FFU_TESTS_GALLERY_BUILDER_H
#define FFU_TESTS_GALLERY_BUILDER_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byte_writer.h"

typedef byte_writer gb;

static inline void gb_bytes(gb *b, const void *d, size_t n) { bw_bytes(b, d, n); }

static inline void gb_u16(gb *b, unsigned v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    gb_bytes(b, x, 2);
}

static inline void gb_u32(gb *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    gb_bytes(b, x, 4);
}

static inline void gb_f32(gb *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    gb_u32(b, u);
}

/* u16 length + bytes (no NUL) */
static inline void gb_str(gb *b, const char *s)
{
    size_t n = strlen(s);
    gb_u16(b, (unsigned)n);
    gb_bytes(b, s, n);
}

static inline uint32_t gb_crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

/* Magic, version and a payload length to be filled by gb_finish. */
static inline void gb_begin(gb *b, uint32_t version)
{
    b->n = 0;
    gb_bytes(b, "FFGL", 4);
    gb_u32(b, version);
    gb_u32(b, 0);
    gb_u32(b, 0);
}

/* Fills the payload length and appends the CRC of everything before it. */
static inline void gb_finish(gb *b)
{
    uint64_t plen = b->n - 16;
    for (int i = 0; i < 8; i++)
        b->p[8 + i] = (uint8_t)(plen >> (8 * i));
    gb_u32(b, gb_crc32(b->p, b->n));
}

/* The payload's fixed part: dim, counts, model. */
static inline void gb_head(gb *b, uint32_t dim, uint32_t nid, uint32_t ntpl, const char *model)
{
    gb_u32(b, dim);
    gb_u32(b, nid);
    gb_u32(b, ntpl);
    gb_str(b, model);
}

/* A deterministic unit vector: template `t` of a gallery (distinct per t). */
static inline void gb_unit(float *v, int dim, int t)
{
    double ss = 0;
    for (int d = 0; d < dim; d++) {
        v[d] = (float)sin(1.0 + 0.7 * d + 2.3 * t) + (d == t % dim ? 1.5f : 0.0f);
        ss += (double)v[d] * v[d];
    }
    for (int d = 0; d < dim; d++)
        v[d] = (float)(v[d] / sqrt(ss));
}

/* A whole valid file: nid identities named names[i] with counts[i] templates each,
 * template t from gb_unit, source "photo/<t>.jpg" for odd t and none for even t. */
static inline void gb_gallery(gb *b, int dim, const char *model, int nid,
                              const char *const *names, const int *counts)
{
    int ntpl = 0;
    for (int i = 0; i < nid; i++)
        ntpl += counts[i];
    gb_begin(b, 1);
    gb_head(b, (uint32_t)dim, (uint32_t)nid, (uint32_t)ntpl, model);
    for (int i = 0; i < nid; i++) {
        gb_str(b, names[i]);
        gb_u32(b, (uint32_t)counts[i]);
    }
    for (int t = 0; t < ntpl; t++) {
        char src[32];
        snprintf(src, sizeof src, "photo/%d.jpg", t);
        gb_str(b, t % 2 ? src : "");
    }
    float *v = malloc(sizeof(float) * (size_t)dim);
    if (!v) abort();
    for (int t = 0; t < ntpl; t++) {
        gb_unit(v, dim, t);
        for (int d = 0; d < dim; d++)
            gb_f32(b, v[d]);
    }
    free(v);
    gb_finish(b);
}

#endif
