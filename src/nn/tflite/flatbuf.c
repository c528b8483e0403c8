/* FlatBuffers reading with every offset checked (flatbuf.h). Layout facts: a uoffset
 * (u32) points forward from where it is stored; a table starts with an soffset (i32)
 * back to its vtable; a vtable is u16 vtable bytes, u16 table bytes, then one u16 field
 * offset per field (0 = absent); a vector or string is a u32 count followed by the
 * elements (strings also by a NUL the reader does not rely on). */
#include <string.h>

#include "flatbuf.h"

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static ffu_status bad(const char *what)
{
    return ffu_error_set(FFU_ERR_FORMAT, "TFLite: %s lies outside the file", what);
}

/* The table at pos, with its vtable checked. */
static ffu_status table_at(const fb_buf *b, size_t pos, fb_table *t)
{
    memset(t, 0, sizeof *t);
    if (pos > b->n || b->n - pos < 4) return bad("a table");
    int64_t vt = (int64_t)pos - (int32_t)rd32(b->p + pos);
    if (vt < 0 || (uint64_t)vt > b->n || b->n - (size_t)vt < 4) return bad("a vtable");
    uint32_t vtlen = rd16(b->p + vt), tlen = rd16(b->p + vt + 2);
    if (vtlen < 4 || (vtlen & 1) || (size_t)vtlen > b->n - (size_t)vt) return bad("a vtable");
    if (tlen < 4 || (size_t)tlen > b->n - pos) return bad("a table's fields");
    t->b = b, t->pos = pos, t->vt = (size_t)vt, t->vtlen = vtlen, t->tlen = tlen;
    t->present = 1;
    return FFU_OK;
}

/* Where the uoffset stored at pos points, checked to leave room for `need` bytes. */
static ffu_status follow(const fb_buf *b, size_t pos, size_t need, size_t *to, const char *what)
{
    *to = 0;
    if (pos > b->n || b->n - pos < 4) return bad(what);
    uint64_t t = (uint64_t)pos + rd32(b->p + pos);
    if (t > b->n || b->n - t < need) return bad(what);
    *to = (size_t)t;
    return FFU_OK;
}

ffu_status fb_root(const fb_buf *b, fb_table *t)
{
    size_t pos = 0;
    ffu_status st = follow(b, 0, 4, &pos, "the root table");
    return st < 0 ? st : table_at(b, pos, t);
}

/* Offset of field within the table (0 = absent); checks size bytes fit the table. */
static ffu_status field_at(const fb_table *t, int field, size_t size, size_t *at)
{
    *at = 0;
    if (!t->present || field < 0) return FFU_OK;
    size_t slot = 4 + 2 * (size_t)field;
    if (slot + 2 > t->vtlen) return FFU_OK;
    uint32_t off = rd16(t->b->p + t->vt + slot);
    if (!off) return FFU_OK;
    if (off < 4 || off + size > t->tlen) return bad("a field");
    *at = t->pos + off;
    return FFU_OK;
}

int fb_has(const fb_table *t, int field)
{
    size_t at;
    return field_at(t, field, 1, &at) == FFU_OK && at != 0;
}

#define SCALAR(fn, type, size, read)                                                          \
    ffu_status fn(const fb_table *t, int field, type def, type *v)                             \
    {                                                                                          \
        size_t at;                                                                             \
        ffu_status st = field_at(t, field, size, &at);                                         \
        if (st < 0) return st;                                                                 \
        if (!at) {                                                                             \
            *v = def;                                                                          \
        } else {                                                                               \
            read;                                                                              \
        }                                                                                      \
        return FFU_OK;                                                                         \
    }

SCALAR(fb_u8, uint8_t, 1, *v = t->b->p[at])
SCALAR(fb_u32, uint32_t, 4, *v = rd32(t->b->p + at))
SCALAR(fb_i32, int32_t, 4, *v = (int32_t)rd32(t->b->p + at))
SCALAR(fb_f32, float, 4, memcpy(v, t->b->p + at, 4))

ffu_status fb_table_field(const fb_table *t, int field, fb_table *out)
{
    size_t at, to = 0;
    ffu_status st = field_at(t, field, 4, &at);
    memset(out, 0, sizeof *out);
    if (st < 0 || !at) return st;
    if ((st = follow(t->b, at, 4, &to, "a sub-table")) < 0) return st;
    return table_at(t->b, to, out);
}

ffu_status fb_vector(const fb_table *t, int field, size_t elem, fb_vec *out)
{
    size_t at, to = 0;
    ffu_status st = field_at(t, field, 4, &at);
    memset(out, 0, sizeof *out);
    out->b = t->b, out->elem = elem;
    if (st < 0 || !at) return st;
    if ((st = follow(t->b, at, 4, &to, "a vector")) < 0) return st;
    uint32_t n = rd32(t->b->p + to);
    if ((uint64_t)n * elem > t->b->n - to - 4) return bad("a vector's elements");
    out->pos = to + 4, out->n = n;
    return FFU_OK;
}

ffu_status fb_string(const fb_table *t, int field, const char **s, uint32_t *len)
{
    fb_vec v;
    ffu_status st = fb_vector(t, field, 1, &v);
    *s = st < 0 || !v.n ? "" : (const char *)t->b->p + v.pos;
    *len = st < 0 ? 0 : v.n;
    return st;
}

ffu_status fb_vec_table(const fb_vec *v, uint32_t i, fb_table *out)
{
    size_t to = 0;
    ffu_status st = follow(v->b, v->pos + 4 * (size_t)i, 4, &to, "a table in a vector");
    if (st < 0) {
        memset(out, 0, sizeof *out);
        return st;
    }
    return table_at(v->b, to, out);
}

int32_t fb_vec_i32(const fb_vec *v, uint32_t i)
{
    return (int32_t)rd32(v->b->p + v->pos + 4 * (size_t)i);
}

const uint8_t *fb_vec_bytes(const fb_vec *v) { return v->b->p + v->pos; }
