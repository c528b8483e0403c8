/* JSON reading: jansson parses, then the tree is copied into one arena as compact
 * immutable nodes. The copy buys O(1) indexed access to object members (jansson
 * objects are hash tables), document order, one free for the whole document, and
 * keeps jansson out of the public headers. Input is checked first for size, NUL bytes
 * and nesting depth so hostile documents fail with a clear message. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "facefuse/core.h"

struct ffu_json {
    const char *key; /* this node's key in its parent object, else NULL */
    union {
        double num;
        int64_t i;
        const char *str;
        ffu_json *kids; /* array items / object members, in order */
    } v;
    uint32_t len; /* number of kids */
    uint8_t type, is_int, b, is_root;
};

/* The root node comes first so ffu_json_free can find the arena. */
typedef struct json_doc {
    ffu_json root;
    ffu_arena *arena;
} json_doc;

/* Rejects NUL bytes and nesting deeper than FFU_JSON_MAX_DEPTH before jansson (which
 * recurses) sees the text. Writes "line L, column C: reason" into msg on failure. */
static int prescan(const char *text, size_t len, char *msg, size_t msglen)
{
    int depth = 0, in_str = 0, esc = 0;
    size_t line = 1, col = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        col++;
        if (c == 0) {
            snprintf(msg, msglen, "line %zu, column %zu: NUL byte in input", line, col);
            return 0;
        }
        if (c == '\n') {
            line++;
            col = 0;
        }
        if (in_str) {
            if (esc)
                esc = 0;
            else if (c == '\\')
                esc = 1;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > FFU_JSON_MAX_DEPTH) {
                snprintf(msg, msglen, "line %zu, column %zu: nesting deeper than %d", line,
                         col, FFU_JSON_MAX_DEPTH);
                return 0;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 1;
}

/* Copies jansson's node into dst (whose key is already set). */
static int convert(ffu_arena *a, const json_t *src, ffu_json *dst, int ints_as_real)
{
    switch (json_typeof(src)) {
    case JSON_NULL: dst->type = FFU_JSON_NULL; return 1;
    case JSON_TRUE: dst->type = FFU_JSON_BOOL; dst->b = 1; return 1;
    case JSON_FALSE: dst->type = FFU_JSON_BOOL; dst->b = 0; return 1;
    case JSON_INTEGER:
        dst->type = FFU_JSON_NUMBER;
        dst->is_int = 1;
        dst->v.i = json_integer_value(src);
        return 1;
    case JSON_REAL:
        dst->type = FFU_JSON_NUMBER;
        dst->v.num = json_real_value(src);
        /* after the int-as-real fallback, integers up to 2^53 are still exact */
        if (ints_as_real && fabs(dst->v.num) <= 9007199254740992.0 &&
            dst->v.num == floor(dst->v.num)) {
            dst->is_int = 1;
            dst->v.i = (int64_t)dst->v.num;
        }
        return 1;
    case JSON_STRING:
        dst->type = FFU_JSON_STRING;
        dst->v.str = ffu_arena_strndup(a, json_string_value(src), json_string_length(src));
        return dst->v.str != NULL;
    case JSON_ARRAY: {
        dst->type = FFU_JSON_ARRAY;
        size_t n = json_array_size(src);
        dst->len = (uint32_t)n;
        if (!n) return 1;
        dst->v.kids = ffu_arena_zalloc(a, n * sizeof(ffu_json));
        if (!dst->v.kids) return 0;
        for (size_t i = 0; i < n; i++)
            if (!convert(a, json_array_get(src, i), &dst->v.kids[i], ints_as_real)) return 0;
        return 1;
    }
    case JSON_OBJECT: {
        dst->type = FFU_JSON_OBJECT;
        size_t n = json_object_size(src);
        dst->len = (uint32_t)n;
        if (!n) return 1;
        dst->v.kids = ffu_arena_zalloc(a, n * sizeof(ffu_json));
        if (!dst->v.kids) return 0;
        size_t i = 0;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)src, key, val) {
            if (i == n) break;
            ffu_json *k = &dst->v.kids[i++];
            k->key = ffu_arena_strdup(a, key);
            if (!k->key || !convert(a, val, k, ints_as_real)) return 0;
        }
        return 1;
    }
    }
    return 0;
}

/* prefix is "" or "path: " for messages. */
static ffu_status parse(const char *text, size_t len, ffu_json **out, const char *prefix)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_json_parse: out is NULL");
    *out = NULL;
    if (!text && len) return ffu_error_set(FFU_ERR_INVALID, "ffu_json_parse: text is NULL");
    if (len > FFU_JSON_MAX_SIZE)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%sJSON text of %zu bytes exceeds %zu MiB",
                             prefix, len, FFU_JSON_MAX_SIZE >> 20);
    /* a UTF-8 byte order mark is not JSON, but editors write one; RFC 8259 lets a
     * parser ignore it */
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF)
        text += 3, len -= 3;
    char msg[256];
    if (!prescan(text, len, msg, sizeof msg))
        return ffu_error_set(FFU_ERR_FORMAT, "%s%s", prefix, msg);

    json_error_t err;
    size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY;
    json_t *j = json_loadb(text ? text : "", len, flags, &err);
    int ints_as_real = 0;
    if (!j && json_error_code(&err) == json_error_numeric_overflow) {
        /* An integer beyond int64 is still a valid JSON number. jansson can only read
         * all integers of a document as doubles then, which is exact up to 2^53. */
        ints_as_real = 1;
        j = json_loadb(text, len, flags | JSON_DECODE_INT_AS_REAL, &err);
    }
    if (!j)
        return ffu_error_set(FFU_ERR_FORMAT, "%sline %d, column %d: %s", prefix, err.line,
                             err.column, err.text);

    /* Arena blocks sized to the input: small documents cost one small block. */
    size_t block = len < 512 ? 1024 : len > (1u << 20) ? (1u << 20) : 2 * len;
    ffu_arena *a = NULL;
    json_doc *doc = NULL;
    if (ffu_arena_create(&a, block) == FFU_OK && (doc = ffu_arena_zalloc(a, sizeof *doc))) {
        doc->arena = a;
        if (convert(a, j, &doc->root, ints_as_real)) {
            json_decref(j);
            doc->root.is_root = 1;
            *out = &doc->root;
            return FFU_OK;
        }
    }
    json_decref(j);
    ffu_arena_destroy(a);
    return ffu_error_set(FFU_ERR_NOMEM, "%scannot allocate the JSON tree", prefix);
}

ffu_status ffu_json_parse(const char *text, size_t len, ffu_json **out)
{
    return parse(text, len, out, "");
}

ffu_status ffu_json_parse_file(const char *path, ffu_json **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_json_parse_file: out is NULL");
    *out = NULL;
    if (!path) return ffu_error_set(FFU_ERR_INVALID, "ffu_json_parse_file: path is NULL");
    uint8_t *buf;
    size_t len;
    ffu_status s = ffu_file_read(path, FFU_JSON_MAX_SIZE, &buf, &len);
    if (s == FFU_OK) {
        char prefix[512];
        snprintf(prefix, sizeof prefix, "%s: ", path);
        s = parse((const char *)buf, len, out, prefix);
    }
    free(buf);
    return s;
}

void ffu_json_free(ffu_json *root)
{
    if (!root) return;
    if (!root->is_root) { /* a member of some document: freeing it would corrupt it */
        ffu_log(NULL, FFU_LOG_ERROR, "ffu_json_free: not a document root; ignored");
        return;
    }
    ffu_arena_destroy(((json_doc *)root)->arena);
}

ffu_json_type ffu_json_typeof(const ffu_json *j) { return j ? (ffu_json_type)j->type : FFU_JSON_NULL; }

const ffu_json *ffu_json_get(const ffu_json *obj, const char *key)
{
    if (!obj || obj->type != FFU_JSON_OBJECT || !key) return NULL;
    for (uint32_t i = 0; i < obj->len; i++)
        if (strcmp(obj->v.kids[i].key, key) == 0) return &obj->v.kids[i];
    return NULL;
}

size_t ffu_json_len(const ffu_json *j)
{
    return j && (j->type == FFU_JSON_ARRAY || j->type == FFU_JSON_OBJECT) ? j->len : 0;
}

const ffu_json *ffu_json_at(const ffu_json *j, size_t i)
{
    return i < ffu_json_len(j) ? &j->v.kids[i] : NULL;
}

const char *ffu_json_key_at(const ffu_json *obj, size_t i, const ffu_json **value)
{
    const ffu_json *m = obj && obj->type == FFU_JSON_OBJECT ? ffu_json_at(obj, i) : NULL;
    if (value) *value = m;
    return m ? m->key : NULL;
}

double ffu_json_number(const ffu_json *j, double fallback)
{
    if (!j || j->type != FFU_JSON_NUMBER) return fallback;
    return j->is_int ? (double)j->v.i : j->v.num;
}

int64_t ffu_json_int(const ffu_json *j, int64_t fallback)
{
    if (!j || j->type != FFU_JSON_NUMBER) return fallback;
    if (j->is_int) return j->v.i;
    double d = j->v.num;
    /* 2^63 is exactly representable; anything below it and integral fits */
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double)(int64_t)d)
        return (int64_t)d;
    return fallback;
}

int ffu_json_is_integer(const ffu_json *j) { return j && j->type == FFU_JSON_NUMBER && j->is_int; }

const char *ffu_json_string(const ffu_json *j)
{
    return j && j->type == FFU_JSON_STRING ? j->v.str : NULL;
}

int ffu_json_bool(const ffu_json *j, int fallback)
{
    return j && j->type == FFU_JSON_BOOL ? j->b : fallback;
}
