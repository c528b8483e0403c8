/* A reader of FlatBuffers, the binary format TensorFlow Lite models are stored in:
 * tables found through a root offset, each with a vtable of field offsets, vectors and
 * strings found through 32-bit offsets. Nothing is copied or trusted: every offset,
 * vtable, length and field is checked against the buffer before it is read, and a bad
 * one is FFU_ERR_FORMAT naming what was being read. Little-endian reads through memcpy
 * (no alignment assumed). Only what the TFLite loader needs: scalar fields, sub-tables,
 * vectors of scalars, tables and bytes, strings. */
#ifndef FFU_NN_FLATBUF_H
#define FFU_NN_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

#include "facefuse/core.h"

typedef struct fb_buf {
    const uint8_t *p;
    size_t n;
} fb_buf;

/* A table: its position and its vtable (already checked). present = 0 for an absent
 * (optional) table, whose fields all read as their defaults. */
typedef struct fb_table {
    const fb_buf *b;
    size_t pos, vt;
    uint32_t vtlen, tlen;
    int present;
} fb_table;

/* A vector: n elements of elem bytes starting at pos (checked to lie in the buffer). */
typedef struct fb_vec {
    const fb_buf *b;
    size_t pos, elem;
    uint32_t n;
} fb_vec;

/* The root table (the uoffset at byte 0). */
ffu_status fb_root(const fb_buf *b, fb_table *t);

/* Scalar fields (field = index in the schema, from 0). An absent field reads as def;
 * a field whose bytes lie outside its table or the buffer is FFU_ERR_FORMAT. */
ffu_status fb_u8(const fb_table *t, int field, uint8_t def, uint8_t *v);
ffu_status fb_i32(const fb_table *t, int field, int32_t def, int32_t *v);
ffu_status fb_u32(const fb_table *t, int field, uint32_t def, uint32_t *v);
ffu_status fb_f32(const fb_table *t, int field, float def, float *v);
/* 1 when the field is set in the table's vtable. */
int fb_has(const fb_table *t, int field);

/* A sub-table field (absent: out->present = 0). */
ffu_status fb_table_field(const fb_table *t, int field, fb_table *out);
/* A vector field of elem-byte elements (absent: n = 0). */
ffu_status fb_vector(const fb_table *t, int field, size_t elem, fb_vec *out);
/* A string field as pointer and length (absent: "" and 0); the bytes are not
 * NUL-terminated in the buffer. */
ffu_status fb_string(const fb_table *t, int field, const char **s, uint32_t *len);

/* Element i of a vector of tables (i < v->n). */
ffu_status fb_vec_table(const fb_vec *v, uint32_t i, fb_table *out);
/* Element i of a vector of int32 (elem 4) / uint8 (elem 1); i < v->n. */
int32_t fb_vec_i32(const fb_vec *v, uint32_t i);
const uint8_t *fb_vec_bytes(const fb_vec *v);

#endif
