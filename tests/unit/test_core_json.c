/* JSON: parsing (accessors, order, exact integers, error messages with positions,
 * size/NUL/depth caps, files), the writer (escaping, UTF-8 repair, numbers, pretty
 * layout, misuse) and write -> parse -> write round trips. */
#include <locale.h>
#include <math.h>
#include <stdint.h>

#include "facefuse/core.h"
#include "test.h"

static ffu_json *parse(const char *s)
{
    ffu_json *j = NULL;
    ffu_json_parse(s, strlen(s), &j);
    return j;
}

static void test_parse_access(void)
{
    ffu_json *j = parse("{\"z\": 1, \"a\": [true, false, null, 2.5, \"x\"], \"m\": {\"k\": \"v\"},"
                        " \"big\": 9007199254740993, \"neg\": -12}");
    CHECK(j);
    CHECK_EQ_INT(ffu_json_typeof(j), FFU_JSON_OBJECT);
    CHECK_EQ_INT(ffu_json_len(j), 5);
    const ffu_json *v;
    CHECK_STR(ffu_json_key_at(j, 0, &v), "z"); /* document order */
    CHECK_EQ_INT(ffu_json_int(v, -1), 1);
    CHECK_STR(ffu_json_key_at(j, 1, NULL), "a");
    CHECK_STR(ffu_json_key_at(j, 2, NULL), "m");
    CHECK(ffu_json_key_at(j, 5, &v) == NULL && v == NULL);
    const ffu_json *a = ffu_json_get(j, "a");
    CHECK_EQ_INT(ffu_json_typeof(a), FFU_JSON_ARRAY);
    CHECK_EQ_INT(ffu_json_len(a), 5);
    CHECK_EQ_INT(ffu_json_bool(ffu_json_at(a, 0), -1), 1);
    CHECK_EQ_INT(ffu_json_bool(ffu_json_at(a, 1), -1), 0);
    CHECK_EQ_INT(ffu_json_typeof(ffu_json_at(a, 2)), FFU_JSON_NULL);
    CHECK_NEAR(ffu_json_number(ffu_json_at(a, 3), 0), 2.5, 0);
    CHECK(!ffu_json_is_integer(ffu_json_at(a, 3)));
    CHECK_EQ_INT(ffu_json_int(ffu_json_at(a, 3), 77), 77); /* not integral */
    CHECK_STR(ffu_json_string(ffu_json_at(a, 4)), "x");
    CHECK(ffu_json_at(a, 5) == NULL);
    CHECK(ffu_json_key_at(a, 0, NULL) == NULL); /* arrays have no keys */
    CHECK_STR(ffu_json_string(ffu_json_get(ffu_json_get(j, "m"), "k")), "v");
    CHECK(ffu_json_get(j, "missing") == NULL);
    CHECK(ffu_json_get(a, "z") == NULL);
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "big"), 0), 9007199254740993LL); /* exact */
    CHECK(ffu_json_is_integer(ffu_json_get(j, "big")));
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "neg"), 0), -12);
    /* wrong types and NULL give fallbacks */
    CHECK(ffu_json_string(a) == NULL);
    CHECK_NEAR(ffu_json_number(NULL, 4.5), 4.5, 0);
    CHECK_EQ_INT(ffu_json_bool(ffu_json_get(j, "z"), 3), 3);
    CHECK_EQ_INT(ffu_json_len(ffu_json_get(j, "z")), 0);
    CHECK_EQ_INT(ffu_json_typeof(NULL), FFU_JSON_NULL);
    ffu_json_free((ffu_json *)a); /* not a root: refused, nothing breaks */
    ffu_json_free(j);
    ffu_json_free(NULL);

    /* an integer beyond int64 is still a number; smaller integers stay exact up to 2^53 */
    j = parse("[123456789012345678901234567890, -5, 9007199254740992, 2.5]");
    CHECK(j);
    CHECK_NEAR(ffu_json_number(ffu_json_at(j, 0), 0), 1.2345678901234568e29, 1e14);
    CHECK_EQ_INT(ffu_json_int(ffu_json_at(j, 0), 5), 5);
    CHECK(ffu_json_is_integer(ffu_json_at(j, 1)));
    CHECK_EQ_INT(ffu_json_int(ffu_json_at(j, 1), 0), -5);
    CHECK_EQ_INT(ffu_json_int(ffu_json_at(j, 2), 0), 9007199254740992LL);
    CHECK(!ffu_json_is_integer(ffu_json_at(j, 3)));
    ffu_json_free(j);

    j = parse("  \"top-level scalar\" ");
    CHECK_STR(ffu_json_string(j), "top-level scalar");
    ffu_json_free(j);
    j = parse("\"\\u00e9\\ud83d\\ude00\\n\"");
    CHECK_STR(ffu_json_string(j), "\xc3\xa9\xf0\x9f\x98\x80\n");
    ffu_json_free(j);
}

static void expect_error(const char *text, size_t len, ffu_status want, const char *fragment)
{
    ffu_json *j = (ffu_json *)1;
    ffu_status s = ffu_json_parse(text, len, &j);
    if (s != want || j != NULL || !strstr(ffu_error_message(), fragment)) {
        fprintf(stderr, "input %.40s: status %d, message '%s', wanted %d '%s'\n", text ? text : "(null)", s,
                ffu_error_message(), want, fragment);
        test_failed_ = 1;
    }
}

static void test_parse_errors(void)
{
    expect_error("{\"a\": }", 7, FFU_ERR_FORMAT, "line 1, column");
    expect_error("[1, 2]\n  x", 10, FFU_ERR_FORMAT, "line 2");
    expect_error("{\"a\":1,\"a\":2}", 13, FFU_ERR_FORMAT, "duplicate");
    expect_error("[1, 2", 5, FFU_ERR_FORMAT, "line 1");
    expect_error("", 0, FFU_ERR_FORMAT, "line");
    expect_error("\"a\\u0000b\"", 10, FFU_ERR_FORMAT, "line 1");
    expect_error("[\"a\0b\"]", 7, FFU_ERR_FORMAT, "NUL byte");
    expect_error("\"\xff\"", 3, FFU_ERR_FORMAT, "line 1");
    expect_error("[1e999]", 7, FFU_ERR_FORMAT, "line 1");
    expect_error("{}", FFU_JSON_MAX_SIZE + 1, FFU_ERR_TOO_LARGE, "MiB"); /* not read */
    expect_error(NULL, 5, FFU_ERR_INVALID, "NULL");
    if (test_failed_) return;

    /* depth: exactly the cap parses, one more fails (brackets inside strings don't count) */
    char *deep = malloc(6 * FFU_JSON_MAX_DEPTH + 32);
    CHECK(deep);
    size_t n = 0;
    for (int i = 0; i < FFU_JSON_MAX_DEPTH; i++) deep[n++] = '[';
    for (int i = 0; i < FFU_JSON_MAX_DEPTH; i++) deep[n++] = ']';
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(deep, n, &j), FFU_OK);
    ffu_json_free(j);
    n = 0;
    deep[n++] = '[';
    memcpy(deep + n, "\"[[[\\\"[[\",", 10);
    n += 10;
    for (int i = 0; i < FFU_JSON_MAX_DEPTH - 1; i++) deep[n++] = '{', deep[n++] = '"', deep[n++] = 'k',
                                                     deep[n++] = '"', deep[n++] = ':';
    deep[n++] = '1';
    /* not balanced; only depth matters here */
    ffu_status s = ffu_json_parse(deep, n, &j);
    CHECK_EQ_INT(s, FFU_ERR_FORMAT);
    CHECK(strstr(ffu_error_message(), "nesting") == NULL); /* depth == cap, truncated input */
    n = 0;
    for (int i = 0; i <= FFU_JSON_MAX_DEPTH; i++) deep[n++] = '[';
    s = ffu_json_parse(deep, n, &j);
    free(deep);
    CHECK_EQ_INT(s, FFU_ERR_FORMAT);
    CHECK(strstr(ffu_error_message(), "nesting deeper than"));
}

static void test_parse_file(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/test_core_json.tmp.json", FFU_TEST_BINARY_DIR);
    FILE *f = fopen(path, "wb");
    CHECK(f);
    fputs("{\"fps\": 25,\n \"name\": \"cam\"}\n", f);
    fclose(f);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse_file(path, &j), FFU_OK);
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "fps"), 0), 25);
    ffu_json_free(j);
    f = fopen(path, "wb");
    fputs("{\"fps\": 25,\n \"name\": }\n", f);
    fclose(f);
    CHECK_EQ_INT(ffu_json_parse_file(path, &j), FFU_ERR_FORMAT);
    CHECK(j == NULL);
    CHECK(strstr(ffu_error_message(), path));
    CHECK(strstr(ffu_error_message(), "line 2"));
    remove(path);
    CHECK_EQ_INT(ffu_json_parse_file(path, &j), FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), path));
}

static const char *write_one(ffu_jw *w, double v)
{
    ffu_jw_reset(w);
    ffu_jw_number(w, v);
    return ffu_jw_text(w, NULL);
}

static void test_writer(void)
{
    ffu_jw *w = NULL;
    CHECK_EQ_INT(ffu_jw_create(&w, 0), FFU_OK);
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "a");
    ffu_jw_int(w, 1);
    ffu_jw_key(w, "list");
    ffu_jw_begin_array(w);
    ffu_jw_bool(w, 1);
    ffu_jw_bool(w, 0);
    ffu_jw_null(w);
    ffu_jw_begin_object(w);
    ffu_jw_end_object(w);
    ffu_jw_begin_array(w);
    ffu_jw_end_array(w);
    ffu_jw_end_array(w);
    ffu_jw_key(w, "s\"k");
    ffu_jw_string(w, "q\"\\/\n\r\t\b\f\x01\x1f\x7f");
    ffu_jw_key(w, "n");
    ffu_jw_string(w, NULL);
    ffu_jw_end_object(w);
    CHECK_EQ_INT(ffu_jw_status(w), FFU_OK);
    size_t len;
    const char *t = ffu_jw_text(w, &len);
    const char *want = "{\"a\":1,\"list\":[true,false,null,{},[]],\"s\\\"k\":"
                       "\"q\\\"\\\\/\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\",\"n\":null}";
    CHECK_STR(t, want);
    CHECK_EQ_INT(len, strlen(want));
    ffu_json *j = parse(t);
    CHECK(j);
    CHECK_STR(ffu_json_string(ffu_json_get(j, "s\"k")), "q\"\\/\n\r\t\b\f\x01\x1f\x7f");
    ffu_json_free(j);

    /* invalid UTF-8 repaired, valid kept */
    ffu_jw_reset(w);
    ffu_jw_string(w, "a\xff" "b\xc0\xaf" "c\xed\xa0\x80" "d\xf0\x9f\x98\x80" "e\xc3");
    CHECK_STR(ffu_jw_text(w, NULL), "\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd"
                                    "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                    "d\xf0\x9f\x98\x80" "e\xef\xbf\xbd\"");
    ffu_jw_reset(w);
    ffu_jw_string_len(w, "a\0b", 3);
    CHECK_STR(ffu_jw_text(w, NULL), "\"a\\u0000b\"");

    /* numbers: shortest text that reads back exactly */
    CHECK_STR(write_one(w, 0.1), "0.1");
    CHECK_STR(write_one(w, 1.0 / 3.0), "0.3333333333333333");
    CHECK_STR(write_one(w, 1e300), "1e+300");
    CHECK_STR(write_one(w, -0.0), "-0");
    CHECK(strtod(write_one(w, 5e-324), NULL) == 5e-324); /* denormal min */
    CHECK_STR(write_one(w, 123456789), "123456789");
    CHECK_STR(write_one(w, NAN), "null");
    CHECK_STR(write_one(w, -INFINITY), "null");
    uint64_t seed = 11;
    for (int i = 0; i < 2000; i++) {
        union { uint64_t u; double d; } x = {test_rand_u64(&seed)};
        if (!isfinite(x.d)) continue;
        const char *s = write_one(w, x.d);
        CHECK(s && strtod(s, NULL) == x.d);
    }
    ffu_jw_reset(w);
    ffu_jw_int(w, INT64_MIN);
    CHECK_STR(ffu_jw_text(w, NULL), "-9223372036854775808");
    ffu_jw_destroy(w);
    ffu_jw_destroy(NULL);
}

static void test_writer_locale(void)
{
    /* a host program's locale must not turn 0.5 into 0,5 */
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", NULL};
    const char *got = NULL;
    for (int i = 0; names[i] && !got; i++) got = setlocale(LC_NUMERIC, names[i]);
    if (!got) TEST_SKIP("no locale with a decimal comma installed");
    ffu_jw *w = NULL;
    ffu_jw_create(&w, 0);
    const char *t = write_one(w, 0.5);
    int ok = t && strcmp(t, "0.5") == 0;
    ffu_jw_destroy(w);
    setlocale(LC_NUMERIC, "C");
    CHECK(ok);
}

static void test_writer_pretty(void)
{
    ffu_jw *w = NULL;
    CHECK_EQ_INT(ffu_jw_create(&w, 1), FFU_OK);
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "a");
    ffu_jw_begin_array(w);
    ffu_jw_int(w, 1);
    ffu_jw_int(w, 2);
    ffu_jw_end_array(w);
    ffu_jw_key(w, "e");
    ffu_jw_begin_object(w);
    ffu_jw_end_object(w);
    ffu_jw_end_object(w);
    CHECK_STR(ffu_jw_text(w, NULL), "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {}\n}");
    ffu_jw_destroy(w);
}

static void test_writer_misuse(void)
{
    ffu_jw *w = NULL;
    CHECK_EQ_INT(ffu_jw_create(&w, 0), FFU_OK);
    ffu_jw_begin_object(w);
    CHECK_EQ_INT(ffu_jw_int(w, 1), FFU_ERR_INVALID); /* value without key */
    CHECK_EQ_INT(ffu_jw_status(w), FFU_ERR_INVALID);
    CHECK(ffu_jw_text(w, NULL) == NULL);
    CHECK_EQ_INT(ffu_jw_key(w, "k"), FFU_ERR_INVALID); /* sticky */
    ffu_jw_reset(w);
    CHECK_EQ_INT(ffu_jw_status(w), FFU_OK);
    CHECK_EQ_INT(ffu_jw_key(w, "k"), FFU_ERR_INVALID); /* key outside an object */
    ffu_jw_reset(w);
    ffu_jw_begin_array(w);
    CHECK_EQ_INT(ffu_jw_end_object(w), FFU_ERR_INVALID);
    ffu_jw_reset(w);
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "k");
    CHECK_EQ_INT(ffu_jw_key(w, "k2"), FFU_ERR_INVALID);
    ffu_jw_reset(w);
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "k");
    CHECK_EQ_INT(ffu_jw_end_object(w), FFU_ERR_INVALID);
    ffu_jw_reset(w);
    ffu_jw_int(w, 1);
    CHECK_EQ_INT(ffu_jw_int(w, 2), FFU_ERR_INVALID); /* two top-level values */
    ffu_jw_reset(w);
    CHECK_EQ_INT(ffu_jw_end_array(w), FFU_ERR_INVALID);
    ffu_jw_reset(w);
    for (int i = 0; i < FFU_JW_MAX_DEPTH; i++) ffu_jw_begin_array(w);
    CHECK_EQ_INT(ffu_jw_status(w), FFU_OK);
    CHECK_EQ_INT(ffu_jw_begin_array(w), FFU_ERR_TOO_LARGE);
    ffu_jw_destroy(w);
    CHECK_EQ_INT(ffu_jw_int(NULL, 1), FFU_ERR_INVALID);
}

/* Writes a random document; strings include escapes and multi-byte characters. */
static void random_value(ffu_jw *w, uint64_t *seed, int depth)
{
    static const char *const strs[] = {"", "plain", "tab\there", "quote\"", "\xc3\xa9t\xc3\xa9",
                                       "\xe2\x82\xac\xf0\x9f\x98\x80", "ctl\x01\x1f", "back\\slash"};
    int kind = (int)(test_rand_u64(seed) % (depth > 4 ? 5 : 7));
    switch (kind) {
    case 0: ffu_jw_null(w); break;
    case 1: ffu_jw_bool(w, (int)(test_rand_u64(seed) & 1)); break;
    case 2: ffu_jw_int(w, (int64_t)test_rand_u64(seed)); break;
    case 3: ffu_jw_number(w, (test_rand_f(seed) - 0.5) * pow(10, (double)(test_rand_u64(seed) % 40) - 20)); break;
    case 4: ffu_jw_string(w, strs[test_rand_u64(seed) % 8]); break;
    case 5: {
        ffu_jw_begin_array(w);
        int n = (int)(test_rand_u64(seed) % 5);
        for (int i = 0; i < n; i++) random_value(w, seed, depth + 1);
        ffu_jw_end_array(w);
        break;
    }
    default: {
        ffu_jw_begin_object(w);
        int n = (int)(test_rand_u64(seed) % 5);
        for (int i = 0; i < n; i++) {
            char key[16];
            snprintf(key, sizeof key, "k%d%s", i, strs[i % 8]);
            ffu_jw_key(w, key);
            random_value(w, seed, depth + 1);
        }
        ffu_jw_end_object(w);
    }
    }
}

/* Writes a parsed tree back out. */
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
            const ffu_json *v;
            ffu_jw_key(w, ffu_json_key_at(j, i, &v));
            write_tree(w, v);
        }
        ffu_jw_end_object(w);
        break;
    }
}

static void test_round_trip(void)
{
    uint64_t seed = 2024;
    ffu_jw *w1 = NULL, *w2 = NULL;
    CHECK_EQ_INT(ffu_jw_create(&w1, 0), FFU_OK);
    CHECK_EQ_INT(ffu_jw_create(&w2, 1), FFU_OK);
    for (int round = 0; round < 300; round++) {
        ffu_jw_reset(w1);
        random_value(w1, &seed, 0);
        size_t len;
        const char *t1 = ffu_jw_text(w1, &len);
        CHECK(t1);
        ffu_json *j = NULL;
        CHECK_EQ_INT(ffu_json_parse(t1, len, &j), FFU_OK);
        ffu_jw_reset(w2); /* pretty, then parse that and compare compact forms */
        write_tree(w2, j);
        ffu_json_free(j);
        const char *t2 = ffu_jw_text(w2, &len);
        CHECK(t2);
        CHECK_EQ_INT(ffu_json_parse(t2, len, &j), FFU_OK);
        ffu_jw *w3 = NULL;
        ffu_jw_create(&w3, 0);
        write_tree(w3, j);
        ffu_json_free(j);
        int same = strcmp(ffu_jw_text(w3, NULL), t1) == 0;
        if (!same) fprintf(stderr, "round trip differs:\n%s\n%s\n", t1, ffu_jw_text(w3, NULL));
        ffu_jw_destroy(w3);
        CHECK(same);
    }
    ffu_jw_destroy(w1);
    ffu_jw_destroy(w2);
}

TEST_MAIN(test_parse_access, test_parse_errors, test_parse_file, test_writer,
          test_writer_locale, test_writer_pretty, test_writer_misuse, test_round_trip)
