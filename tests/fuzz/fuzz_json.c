/* Fuzz target for the JSON reader and writer. Any input: parse it; if it parses, walk
 * every node, write it back with ffu_jw, parse that and require the same tree. Also
 * writes the raw bytes as a JSON string, which must always parse back (to the same
 * bytes when they are valid UTF-8). Aborts on any mismatch so libFuzzer reports it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/core.h"

static void write_tree(ffu_jw *w, const ffu_json *j)
{
    switch (ffu_json_typeof(j)) {
    case FFU_JSON_NULL: ffu_jw_null(w); break;
    case FFU_JSON_BOOL: ffu_jw_bool(w, ffu_json_bool(j, 0)); break;
    case FFU_JSON_NUMBER:
        if (ffu_json_is_integer(j)) ffu_jw_int(w, ffu_json_int(j, 0));
        else ffu_jw_number(w, ffu_json_number(j, 0));
        break;
    case FFU_JSON_STRING: ffu_jw_string(w, ffu_json_string(j)); break;
    case FFU_JSON_ARRAY:
        ffu_jw_begin_array(w);
        for (size_t i = 0; i < ffu_json_len(j); i++) write_tree(w, ffu_json_at(j, i));
        ffu_jw_end_array(w);
        break;
    case FFU_JSON_OBJECT:
        ffu_jw_begin_object(w);
        for (size_t i = 0; i < ffu_json_len(j); i++) {
            const ffu_json *v = NULL;
            const char *k = ffu_json_key_at(j, i, &v);
            if (!k || !v || ffu_json_get(j, k) != v) abort(); /* keys unique, lookup agrees */
            ffu_jw_key(w, k);
            write_tree(w, v);
        }
        ffu_jw_end_object(w);
        break;
    }
}

static int same_tree(const ffu_json *a, const ffu_json *b)
{
    ffu_json_type t = ffu_json_typeof(a);
    if (t != ffu_json_typeof(b)) return 0;
    switch (t) {
    case FFU_JSON_NULL: return 1;
    case FFU_JSON_BOOL: return ffu_json_bool(a, 0) == ffu_json_bool(b, 1);
    case FFU_JSON_NUMBER:
        if (ffu_json_is_integer(a) && ffu_json_is_integer(b)) return ffu_json_int(a, 0) == ffu_json_int(b, 1);
        return ffu_json_number(a, 0) == ffu_json_number(b, 1);
    case FFU_JSON_STRING: return strcmp(ffu_json_string(a), ffu_json_string(b)) == 0;
    case FFU_JSON_ARRAY:
    case FFU_JSON_OBJECT:
        if (ffu_json_len(a) != ffu_json_len(b)) return 0;
        for (size_t i = 0; i < ffu_json_len(a); i++) {
            const ffu_json *va, *vb;
            const char *ka = ffu_json_key_at(a, i, &va), *kb = ffu_json_key_at(b, i, &vb);
            if (t == FFU_JSON_ARRAY) va = ffu_json_at(a, i), vb = ffu_json_at(b, i);
            else if (strcmp(ka, kb) != 0) return 0;
            if (!same_tree(va, vb)) return 0;
        }
        return 1;
    }
    return 0;
}

static int has_fffd(const char *s, size_t n) /* memmem is a GNU extension */
{
    for (size_t i = 0; i + 3 <= n; i++)
        if (memcmp(s + i, "\xef\xbf\xbd", 3) == 0) return 1;
    return 0;
}

static int valid_utf8_no_nul(const uint8_t *s, size_t n)
{
    ffu_jw *w = NULL; /* the writer is the UTF-8 judge: unchanged bytes mean valid */
    if (memchr(s, 0, n) || ffu_jw_create(&w, 0) != FFU_OK) return 0;
    ffu_jw_string_len(w, (const char *)s, n);
    size_t len;
    const char *t = ffu_jw_text(w, &len);
    int ok = t && !has_fffd(t, len) && !has_fffd((const char *)s, n);
    ffu_jw_destroy(w);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ffu_json *root = NULL;
    if (ffu_json_parse((const char *)data, size, &root) == FFU_OK) {
        ffu_jw *w = NULL;
        if (ffu_jw_create(&w, (int)(size & 1)) != FFU_OK) abort();
        write_tree(w, root);
        size_t len;
        const char *text = ffu_jw_text(w, &len);
        if (!text) abort();
        ffu_json *again = NULL;
        if (ffu_json_parse(text, len, &again) != FFU_OK || !same_tree(root, again)) abort();
        ffu_json_free(again);
        ffu_jw_destroy(w);
        ffu_json_free(root);
    } else if (root) {
        abort(); /* out-param must be NULL on error */
    }

    /* the raw bytes as a string value */
    ffu_jw *w = NULL;
    if (ffu_jw_create(&w, 0) != FFU_OK) abort();
    ffu_jw_begin_array(w);
    ffu_jw_string_len(w, (const char *)data, size);
    ffu_jw_end_array(w);
    size_t len;
    const char *text = ffu_jw_text(w, &len);
    if (!text) abort();
    ffu_json *arr = NULL;
    ffu_status s = ffu_json_parse(text, len, &arr);
    int has_nul = memchr(data, 0, size) != NULL; /* written as \u0000, which we reject */
    if (!has_nul && s != FFU_OK) abort();
    if (s == FFU_OK && valid_utf8_no_nul(data, size)) {
        const char *back = ffu_json_string(ffu_json_at(arr, 0));
        if (!back || strlen(back) != size || memcmp(back, data, size) != 0) abort();
    }
    ffu_json_free(arr);
    ffu_jw_destroy(w);
    return 0;
}
