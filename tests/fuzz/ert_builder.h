/* A writer for dlib's serialisation of a shape_predictor, for the ERT test and the
 * fuzzer's seed corpus: integers (control byte with sign and byte count, then the
 * magnitude little-endian), floats (mantissa and exponent as integers), column
 * matrices (negated row and column counts), and whole models, either hand-written
 * piece by piece or generated from a small spec with deterministic values.
 * Header-only (static inline functions). */
#ifndef FFU_TESTS_ERT_BUILDER_H
#define FFU_TESTS_ERT_BUILDER_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byte_writer.h"

typedef byte_writer eb;

static inline void eb_bytes(eb *b, const void *d, size_t n) { bw_bytes(b, d, n); }

static inline void eb_int(eb *b, int64_t v)
{
    uint8_t buf[9];
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    unsigned n = 0;
    do {
        buf[1 + n++] = (uint8_t)(mag & 0xff);
        mag >>= 8;
    } while (mag);
    buf[0] = (uint8_t)(n | (v < 0 ? 0x80 : 0));
    eb_bytes(b, buf, 1 + n);
}

static inline void eb_float(eb *b, float v)
{
    int e = 0;
    double f = frexp((double)v, &e); /* v = f * 2^e, 0.5 <= |f| < 1 */
    eb_int(b, (int64_t)ldexp(f, 24));
    eb_int(b, v == 0 ? 0 : e - 24);
}

/* The exponent codes dlib uses for +inf, -inf and NaN */
static inline void eb_special(eb *b, int code)
{
    eb_int(b, 0);
    eb_int(b, code);
}

static inline void eb_column(eb *b, long rows)
{
    eb_int(b, -rows);
    eb_int(b, -1);
}

typedef struct ert_spec {
    int parts, cascades, trees, depth, feats;
    uint64_t seed;
} ert_spec;

static inline float eb_rand(uint64_t *s, float lo, float hi)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((*s >> 40) & 0xffffff) / 16777216.0f;
}

/* A model with `parts` points on a circle, random splits, leaves and feature pixels. */
static inline void eb_model(eb *b, const ert_spec *sp)
{
    uint64_t s = sp->seed;
    int ns = (1 << sp->depth) - 1;
    eb_int(b, 1);
    eb_column(b, 2 * sp->parts);
    for (int i = 0; i < sp->parts; i++) {
        double a = 6.283185307 * i / sp->parts;
        eb_float(b, (float)(0.5 + 0.3 * cos(a)));
        eb_float(b, (float)(0.5 + 0.3 * sin(a)));
    }
    eb_int(b, sp->cascades);
    for (int c = 0; c < sp->cascades; c++) {
        eb_int(b, sp->trees);
        for (int t = 0; t < sp->trees; t++) {
            eb_int(b, ns);
            for (int k = 0; k < ns; k++) {
                eb_int(b, (int64_t)eb_rand(&s, 0, (float)sp->feats));
                eb_int(b, (int64_t)eb_rand(&s, 0, (float)sp->feats));
                eb_float(b, eb_rand(&s, -40, 40));
            }
            eb_int(b, ns + 1);
            for (int l = 0; l <= ns; l++) {
                eb_column(b, 2 * sp->parts);
                for (int k = 0; k < 2 * sp->parts; k++)
                    eb_float(b, eb_rand(&s, -0.01f, 0.01f));
            }
        }
    }
    eb_int(b, sp->cascades);
    for (int c = 0; c < sp->cascades; c++) {
        eb_int(b, sp->feats);
        for (int k = 0; k < sp->feats; k++)
            eb_int(b, (int64_t)eb_rand(&s, 0, (float)sp->parts));
    }
    eb_int(b, sp->cascades);
    for (int c = 0; c < sp->cascades; c++) {
        eb_int(b, sp->feats);
        for (int k = 0; k < sp->feats; k++) {
            eb_float(b, eb_rand(&s, -0.2f, 0.2f));
            eb_float(b, eb_rand(&s, -0.2f, 0.2f));
        }
    }
}

#endif
