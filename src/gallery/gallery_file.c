/* Gallery files (FFGL, docs/GALLERY.md has the byte layout). Everything is explicit
 * little-endian, so a file moves between hosts; the last four bytes are a CRC-32 of
 * all bytes before them, so any damage is caught before the payload is believed. The
 * reader then checks every count and string against caps and against the bytes that
 * are really there before it allocates anything, and refuses non-finite or
 * non-unit templates: a damaged or hostile file gets FFU_ERR_FORMAT with a one-line
 * reason, never a crash or a huge allocation. The writer streams through a small
 * buffer into a temporary file that is renamed into place. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gallery_internal.h"

#define FFGL_VERSION 1
#define FFGL_HEADER 16  /* magic, version, payload length */
#define FFGL_TRAILER 4  /* CRC-32 */
#define FFGL_MAX_FILE ((uint64_t)GALLERY_MAX_TEMPLATE_BYTES + ((uint64_t)1 << 30))
#define FFGL_UNIT_TOL 1e-3 /* |1 - |t|^2| allowed for a stored template */

/* ---- CRC-32 (IEEE 802.3 polynomial, reflected; the one zlib and PNG use) --------------- */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* Eight tables let the loop fold eight bytes per step ("slicing by 8"). */
static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        crc_tab[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Continues a CRC: start with crc = 0 and feed the result back for the next piece. */
uint32_t gallery_crc32(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = data;
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint32_t lo = crc ^ rd32(p), hi = rd32(p + 4);
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
              crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xff] ^
              crc_tab[2][(hi >> 8) & 0xff] ^ crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
    }
    while (len--)
        crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* A bounds-checked cursor over the payload. */
typedef struct rd {
    const uint8_t *p;
    size_t left;
} rd;

static int take(rd *r, size_t n, const uint8_t **out)
{
    if (r->left < n)
        return 0;
    *out = r->p;
    r->p += n;
    r->left -= n;
    return 1;
}

static int take_u16(rd *r, unsigned *v)
{
    const uint8_t *b;
    if (!take(r, 2, &b))
        return 0;
    *v = (unsigned)b[0] | (unsigned)b[1] << 8;
    return 1;
}

static int take_u32(rd *r, uint32_t *v)
{
    const uint8_t *b;
    if (!take(r, 4, &b))
        return 0;
    *v = rd32(b);
    return 1;
}

static float le_float(const uint8_t *b)
{
    uint32_t u = rd32(b);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#define BAD(...) ffu_error_set(FFU_ERR_FORMAT, "gallery file: " __VA_ARGS__)

/* Parses a CRC-checked payload into g (created by the caller). */
static ffu_status parse_payload(rd r, uint32_t nid, uint32_t ntpl, ffu_gallery *g)
{
    const int dim = g->dim;
    /* pass 1 over the identity table: names and counts, before anything is allocated */
    rd ids = r;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < nid; i++) {
        unsigned len;
        uint32_t count;
        const uint8_t *name;
        if (!take_u16(&r, &len) || !take(&r, len, &name) || !take_u32(&r, &count))
            return BAD("payload ends inside identity %u of %u", i, nid);
        const char *why = gallery_check_name((const char *)name, len, FFU_GALLERY_NAME_MAX);
        if (why)
            return BAD("name of identity %u is %s", i, why);
        if (count == 0)
            return BAD("identity %u has no template", i);
        sum += count;
    }
    if (sum != ntpl)
        return BAD("identities hold %llu templates, header says %u", (unsigned long long)sum,
                   ntpl);
    /* sources and floats must fit in what is left: checked before reserving */
    rd srcs = r;
    for (uint32_t t = 0; t < ntpl; t++) {
        unsigned len;
        const uint8_t *s;
        if (!take_u16(&r, &len) || !take(&r, len, &s))
            return BAD("payload ends inside the source of template %u of %u", t, ntpl);
        if (len >= GALLERY_SOURCE_MAX)
            return BAD("source of template %u is longer than %d bytes", t, GALLERY_SOURCE_MAX - 1);
        if (memchr(s, 0, len))
            return BAD("source of template %u contains a NUL byte", t);
    }
    uint64_t float_bytes = (uint64_t)ntpl * (uint64_t)dim * 4u;
    if (r.left != float_bytes)
        return BAD("%zu bytes of templates where %u x %d floats need %llu", r.left, ntpl, dim,
                   (unsigned long long)float_bytes);
    ffu_status st = gallery_reserve(g, (int)nid, (int)ntpl);
    if (st)
        return st;

    /* pass 2: insert identity by identity; rows go to the end, so nothing moves */
    float row[GALLERY_MAX_DIM];
    uint32_t t = 0;
    for (uint32_t i = 0; i < nid; i++) {
        unsigned len = 0, slen = 0;
        uint32_t count = 0;
        const uint8_t *name = NULL, *s = NULL, *fb = NULL;
        /* pass 1 checked every read of this table */
        if (!take_u16(&ids, &len) || !take(&ids, len, &name) || !take_u32(&ids, &count))
            return ffu_error_set(FFU_ERR_INTERNAL, "gallery file: identity table changed");
        char nbuf[FFU_GALLERY_NAME_MAX];
        memcpy(nbuf, name, len);
        nbuf[len] = '\0';
        if (ffu_gallery_find(g, nbuf) >= 0)
            return BAD("identity %u repeats the name \"%s\"", i, nbuf);
        for (uint32_t c = 0; c < count; c++, t++) {
            if (!take_u16(&srcs, &slen) || !take(&srcs, slen, &s) ||
                !take(&r, (size_t)dim * 4, &fb))
                return ffu_error_set(FFU_ERR_INTERNAL, "gallery file: template table changed");
            double ss = 0;
            for (int d = 0; d < dim; d++) {
                row[d] = le_float(fb + 4 * (size_t)d);
                if (!isfinite(row[d]))
                    return BAD("template %u (\"%s\") holds a non-finite value at %d", t, nbuf, d);
                ss += (double)row[d] * row[d];
            }
            if (fabs(ss - 1.0) > FFGL_UNIT_TOL)
                return BAD("template %u (\"%s\") is not unit length (|t|^2 = %g)", t, nbuf, ss);
            char *src = NULL;
            if (slen) {
                src = malloc(slen + 1);
                if (!src)
                    return ffu_error_set(FFU_ERR_NOMEM, "gallery file: source");
                memcpy(src, s, slen);
                src[slen] = '\0';
            }
            gallery_insert(g, nbuf, len, row, src);
        }
    }
    return FFU_OK;
}

ffu_status ffu_gallery_load_memory(const void *data, size_t size, ffu_gallery **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_load_memory: NULL output");
    *out = NULL;
    if (!data && size)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_load_memory: NULL data");
    const uint8_t *b = data;
    if (size < FFGL_HEADER + FFGL_TRAILER)
        return BAD("%zu bytes is too short (a gallery file has at least %d)", size,
                   FFGL_HEADER + FFGL_TRAILER);
    if (memcmp(b, "FFGL", 4) != 0)
        return BAD("not a gallery file (no FFGL magic)");
    uint64_t plen = (uint64_t)rd32(b + 8) | (uint64_t)rd32(b + 12) << 32;
    uint64_t have = size - FFGL_HEADER - FFGL_TRAILER;
    if (plen > have)
        return BAD("truncated: header announces %llu payload bytes, %llu present",
                   (unsigned long long)plen, (unsigned long long)have);
    if (plen < have)
        return BAD("%llu unexpected bytes after the payload", (unsigned long long)(have - plen));
    uint32_t crc = gallery_crc32(0, b, size - FFGL_TRAILER);
    if (crc != rd32(b + size - FFGL_TRAILER))
        return BAD("CRC mismatch (stored %08x, computed %08x): the file is damaged",
                   rd32(b + size - FFGL_TRAILER), crc);
    /* the CRC is good, so a strange version is a real one, not damage */
    uint32_t version = rd32(b + 4);
    if (version > FFGL_VERSION)
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "gallery file: version %u is newer than this build reads (%d)",
                             version, FFGL_VERSION);
    if (version == 0)
        return BAD("version 0");

    rd r = {b + FFGL_HEADER, (size_t)plen};
    uint32_t dim, nid, ntpl;
    unsigned mlen;
    const uint8_t *model;
    if (!take_u32(&r, &dim) || !take_u32(&r, &nid) || !take_u32(&r, &ntpl) ||
        !take_u16(&r, &mlen) || !take(&r, mlen, &model))
        return BAD("payload ends inside the gallery header");
    if (dim < 1 || dim > GALLERY_MAX_DIM)
        return BAD("dim %u is outside 1..%d", dim, GALLERY_MAX_DIM);
    if (nid > GALLERY_MAX_IDENTITIES)
        return BAD("%u identities (at most %d)", nid, GALLERY_MAX_IDENTITIES);
    if (ntpl > GALLERY_MAX_TEMPLATES)
        return BAD("%u templates (at most %d)", ntpl, GALLERY_MAX_TEMPLATES);
    if (nid > ntpl) /* every identity has a template: also bounds the allocation */
        return BAD("%u identities but only %u templates", nid, ntpl);
    const char *why = gallery_check_name((const char *)model, mlen, GALLERY_MODEL_MAX);
    if (why)
        return BAD("model name is %s", why);
    /* cheap early bounds: every identity takes at least 6 bytes, every template 2 + 4 dim */
    if ((uint64_t)nid * 6 + (uint64_t)ntpl * (2 + 4 * (uint64_t)dim) > r.left)
        return BAD("%u identities and %u templates of %u floats do not fit in %zu bytes", nid,
                   ntpl, dim, r.left);
    char mbuf[GALLERY_MODEL_MAX];
    memcpy(mbuf, model, mlen);
    mbuf[mlen] = '\0';
    ffu_gallery *g = NULL;
    ffu_status st = ffu_gallery_create((int)dim, mbuf, &g);
    if (!st)
        st = parse_payload(r, nid, ntpl, g);
    if (st) {
        ffu_gallery_destroy(g);
        return st;
    }
    *out = g;
    return FFU_OK;
}

ffu_status ffu_gallery_load(const char *path, ffu_gallery **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_load: NULL output");
    *out = NULL;
    uint8_t *buf;
    size_t size;
    ffu_status st = ffu_file_read(path, FFGL_MAX_FILE, &buf, &size);
    if (st)
        return st;
    st = ffu_gallery_load_memory(buf, size, out);
    if (st) ffu_error_prefix(st, path);
    free(buf);
    return st;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Serialises into one buffer of the file's exact size, keeping the running CRC. */
typedef struct wr {
    uint8_t *buf;
    size_t n;
    uint32_t crc;
} wr;

static void wr_bytes(wr *w, const void *data, size_t len)
{
    w->crc = gallery_crc32(w->crc, data, len);
    if (len) memcpy(w->buf + w->n, data, len);
    w->n += len;
}

static void wr_u16(wr *w, unsigned v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    wr_bytes(w, b, 2);
}

static void wr_u32(wr *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    wr_bytes(w, b, 4);
}

/* Payload bytes of g, as the header announces them. */
static uint64_t payload_size(const ffu_gallery *g)
{
    uint64_t n = 14 + strlen(g->model);
    for (int i = 0; i < g->nid; i++)
        n += 6 + strlen(g->ids[i].name);
    for (int t = 0; t < g->ntpl; t++)
        n += 2 + (g->src[t] ? strlen(g->src[t]) : 0);
    return n + (uint64_t)g->ntpl * (uint64_t)g->dim * 4u;
}

static void write_all(wr *w, const ffu_gallery *g)
{
    uint64_t plen = payload_size(g);
    wr_bytes(w, "FFGL", 4);
    wr_u32(w, FFGL_VERSION);
    wr_u32(w, (uint32_t)plen);
    wr_u32(w, (uint32_t)(plen >> 32));
    wr_u32(w, (uint32_t)g->dim);
    wr_u32(w, (uint32_t)g->nid);
    wr_u32(w, (uint32_t)g->ntpl);
    wr_u16(w, (unsigned)strlen(g->model));
    wr_bytes(w, g->model, strlen(g->model));
    for (int i = 0; i < g->nid; i++) {
        size_t len = strlen(g->ids[i].name);
        wr_u16(w, (unsigned)len);
        wr_bytes(w, g->ids[i].name, len);
        wr_u32(w, (uint32_t)g->ids[i].count);
    }
    for (int t = 0; t < g->ntpl; t++) {
        size_t len = g->src[t] ? strlen(g->src[t]) : 0;
        wr_u16(w, (unsigned)len);
        wr_bytes(w, g->src[t], len);
    }
    const float *f = g->tpl;
    for (size_t i = 0, n = (size_t)g->ntpl * (size_t)g->dim; i < n; i++) {
        uint32_t u;
        memcpy(&u, &f[i], sizeof u);
        wr_u32(w, u);
    }
    uint32_t crc = w->crc;
    wr_u32(w, crc);
}

ffu_status ffu_gallery_save(const ffu_gallery *g, const char *path)
{
    if (!g || !path)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_save: NULL argument");
    uint64_t total = 16 + payload_size(g) + 4; /* magic, version, length; payload; CRC */
    if (total > FFGL_MAX_FILE)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: the gallery would be %llu bytes", path,
                             (unsigned long long)total);
    wr w = {malloc((size_t)total), 0, 0};
    if (!w.buf)
        return ffu_error_set(FFU_ERR_NOMEM, "%s: %llu bytes", path, (unsigned long long)total);
    write_all(&w, g);
    ffu_status st = w.n == total ? ffu_file_write_atomic(path, w.buf, w.n)
                                 : ffu_error_set(FFU_ERR_INTERNAL, "%s: size mismatch", path);
    free(w.buf);
    return st;
}
