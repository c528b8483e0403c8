/* The streaming JSON writer: events, metrics and API replies are written straight
 * into one growable buffer, with the punctuation tracked by a small stack so callers
 * never place commas. Independent of jansson; reusable without reallocating
 * (ffu_jw_reset) for per-frame output. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "facefuse/core.h"

enum { LV_OBJECT = 1, LV_ITEMS = 2, LV_KEY = 4 }; /* per-level flags */

struct ffu_jw {
    char *buf; /* always NUL-terminated */
    size_t len, cap;
    ffu_status status;
    int pretty;
    int depth;
    int top_done; /* a complete top-level value has been written */
    uint8_t level[FFU_JW_MAX_DEPTH];
};

static ffu_status fail(ffu_jw *w, ffu_status s, const char *why)
{
    if (w->status == FFU_OK) w->status = s;
    return ffu_error_set(s, "JSON writer: %s", why);
}

static int reserve(ffu_jw *w, size_t n)
{
    if (w->len + n < w->cap) return 1;
    size_t cap = w->cap;
    while (w->len + n >= cap) {
        if (cap > SIZE_MAX / 2) return fail(w, FFU_ERR_NOMEM, "output too large"), 0;
        cap *= 2;
    }
    char *nb = realloc(w->buf, cap);
    if (!nb) return fail(w, FFU_ERR_NOMEM, "out of memory"), 0;
    w->buf = nb;
    w->cap = cap;
    return 1;
}

static void put(ffu_jw *w, const char *s, size_t n)
{
    if (!reserve(w, n)) return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

static void newline_indent(ffu_jw *w, int depth)
{
    if (!w->pretty || !reserve(w, 1 + 2 * (size_t)depth)) return;
    w->buf[w->len++] = '\n';
    memset(w->buf + w->len, ' ', 2 * (size_t)depth);
    w->len += 2 * (size_t)depth;
    w->buf[w->len] = 0;
}

ffu_status ffu_jw_create(ffu_jw **out, int pretty)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_jw_create: out is NULL");
    *out = NULL;
    ffu_jw *w = calloc(1, sizeof *w);
    if (w) w->buf = malloc(w->cap = 256);
    if (!w || !w->buf) {
        free(w);
        return ffu_error_set(FFU_ERR_NOMEM, "cannot allocate a JSON writer");
    }
    w->buf[0] = 0;
    w->pretty = pretty;
    *out = w;
    return FFU_OK;
}

void ffu_jw_destroy(ffu_jw *w)
{
    if (!w) return;
    free(w->buf);
    free(w);
}

void ffu_jw_reset(ffu_jw *w)
{
    if (!w) return;
    w->len = 0;
    w->buf[0] = 0;
    w->status = FFU_OK;
    w->depth = 0;
    w->top_done = 0;
}

/* Punctuation before a value; 0 if a value is not allowed here. */
static int before_value(ffu_jw *w)
{
    if (w->status != FFU_OK) return 0;
    if (w->depth == 0) {
        if (w->top_done) return fail(w, FFU_ERR_INVALID, "second top-level value"), 0;
        return 1;
    }
    uint8_t *lv = &w->level[w->depth - 1];
    if (*lv & LV_OBJECT) {
        if (!(*lv & LV_KEY)) return fail(w, FFU_ERR_INVALID, "object value without a key"), 0;
        *lv &= (uint8_t)~LV_KEY;
        return 1;
    }
    if (*lv & LV_ITEMS) put(w, ",", 1);
    *lv |= LV_ITEMS;
    newline_indent(w, w->depth);
    return 1;
}

static ffu_status after_value(ffu_jw *w)
{
    if (w->depth == 0 && w->status == FFU_OK) w->top_done = 1;
    return w->status;
}

static ffu_status begin(ffu_jw *w, int object)
{
    if (!w) return ffu_error_set(FFU_ERR_INVALID, "JSON writer is NULL");
    if (!before_value(w)) return w->status;
    if (w->depth == FFU_JW_MAX_DEPTH) return fail(w, FFU_ERR_TOO_LARGE, "nesting too deep");
    w->level[w->depth++] = object ? LV_OBJECT : 0;
    put(w, object ? "{" : "[", 1);
    return w->status;
}

static ffu_status end(ffu_jw *w, int object)
{
    if (!w) return ffu_error_set(FFU_ERR_INVALID, "JSON writer is NULL");
    if (w->status != FFU_OK) return w->status;
    if (w->depth == 0) return fail(w, FFU_ERR_INVALID, "end without a begin");
    uint8_t lv = w->level[w->depth - 1];
    if (!!(lv & LV_OBJECT) != object)
        return fail(w, FFU_ERR_INVALID, object ? "end_object closes an array" : "end_array closes an object");
    if (lv & LV_KEY) return fail(w, FFU_ERR_INVALID, "key without a value");
    w->depth--;
    if (lv & LV_ITEMS) newline_indent(w, w->depth);
    put(w, object ? "}" : "]", 1);
    return after_value(w);
}

ffu_status ffu_jw_begin_object(ffu_jw *w) { return begin(w, 1); }
ffu_status ffu_jw_end_object(ffu_jw *w) { return end(w, 1); }
ffu_status ffu_jw_begin_array(ffu_jw *w) { return begin(w, 0); }
ffu_status ffu_jw_end_array(ffu_jw *w) { return end(w, 0); }

size_t core_utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned c = s[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else
        return 0;
    if (avail < n || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

static void put_string(ffu_jw *w, const char *str, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    put(w, "\"", 1);
    size_t run = 0; /* bytes copied verbatim are flushed in runs */
    for (size_t i = 0; i < len && w->status == FFU_OK;) {
        unsigned c = s[i];
        const char *esc = NULL;
        char u[7];
        size_t n = 1;
        if (c >= 0x80) {
            n = core_utf8_seq(s + i, len - i);
            if (!n) {
                esc = "\xef\xbf\xbd"; /* U+FFFD for one bad byte */
                n = 1;
            }
        } else if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c < 0x20) {
            memcpy(u, "\\u00", 4);
            u[4] = hex[c >> 4];
            u[5] = hex[c & 15];
            u[6] = 0;
            esc = u;
        }
        if (esc) {
            put(w, (const char *)s + i - run, run);
            run = 0;
            put(w, esc, strlen(esc));
        } else {
            run += n;
        }
        i += n;
    }
    put(w, (const char *)s + len - run, run);
    put(w, "\"", 1);
}

ffu_status ffu_jw_key(ffu_jw *w, const char *key)
{
    if (!w) return ffu_error_set(FFU_ERR_INVALID, "JSON writer is NULL");
    if (w->status != FFU_OK) return w->status;
    if (!key) return fail(w, FFU_ERR_INVALID, "NULL key");
    if (w->depth == 0 || !(w->level[w->depth - 1] & LV_OBJECT))
        return fail(w, FFU_ERR_INVALID, "key outside an object");
    uint8_t *lv = &w->level[w->depth - 1];
    if (*lv & LV_KEY) return fail(w, FFU_ERR_INVALID, "two keys in a row");
    if (*lv & LV_ITEMS) put(w, ",", 1);
    *lv |= LV_ITEMS | LV_KEY;
    newline_indent(w, w->depth);
    put_string(w, key, strlen(key));
    put(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
    return w->status;
}

static ffu_status scalar(ffu_jw *w, const char *text, size_t len)
{
    if (!w) return ffu_error_set(FFU_ERR_INVALID, "JSON writer is NULL");
    if (!before_value(w)) return w->status;
    put(w, text, len);
    return after_value(w);
}

ffu_status ffu_jw_string_len(ffu_jw *w, const char *s, size_t len)
{
    if (!s) return ffu_jw_null(w);
    if (!w) return ffu_error_set(FFU_ERR_INVALID, "JSON writer is NULL");
    if (!before_value(w)) return w->status;
    put_string(w, s, len);
    return after_value(w);
}

ffu_status ffu_jw_string(ffu_jw *w, const char *s)
{
    return ffu_jw_string_len(w, s, s ? strlen(s) : 0);
}

ffu_status ffu_jw_number(ffu_jw *w, double v)
{
    if (!isfinite(v)) return ffu_jw_null(w); /* JSON has no NaN or infinity */
    char buf[32];
    int n = core_format_double(buf, sizeof buf, v);
    return scalar(w, buf, (size_t)n);
}

ffu_status ffu_jw_int(ffu_jw *w, int64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, v);
    return scalar(w, buf, (size_t)n);
}

ffu_status ffu_jw_bool(ffu_jw *w, int v) { return v ? scalar(w, "true", 4) : scalar(w, "false", 5); }
ffu_status ffu_jw_null(ffu_jw *w) { return scalar(w, "null", 4); }

const char *ffu_jw_text(const ffu_jw *w, size_t *len)
{
    if (len) *len = 0;
    if (!w || w->status != FFU_OK) return NULL;
    if (len) *len = w->len;
    return w->buf;
}

ffu_status ffu_jw_status(const ffu_jw *w) { return w ? w->status : FFU_ERR_INVALID; }
