/* TF.js graph-model loading: parses model.json with the project's JSON reader, checks
 * the weights manifest against the weights buffer (every byte accounted for, no read
 * past the end, sizes capped), orders the TF nodes topologically (cycles and dangling
 * references are format errors), hands each needed node to its translator
 * (tfjs_ops.c) and marks the graph's inputs and outputs.
 *
 * Outputs: the "signature" outputs of model.json (top level, else the one kept under
 * userDefinedMetadata), in document order; without a signature every sink node (one
 * whose outputs nothing consumes; Const, NoOp and Placeholder excluded) in document
 * order. TF.js itself uses the top-level signature the same way.
 *
 * After translation, TF "SAME" padding that was emitted as auto_pad SAME_UPPER is
 * turned into explicit pads where shape inference (the op definitions' infer, run on
 * a scratch clone) knows the spatial input size. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfjs_internal.h"

/* ---- names and errors ------------------------------------------------------------------- */

static const char *name_join(tf_ctx *c, const char *base, const char *sep, const char *suffix)
{
    size_t need = strlen(base) + (suffix ? strlen(sep) + strlen(suffix) : 0) + 1;
    if (need > c->ncap) {
        size_t nc = need * 2;
        char *p = realloc(c->nbuf, nc);
        if (!p) return NULL;
        c->nbuf = p;
        c->ncap = nc;
    }
    if (suffix)
        snprintf(c->nbuf, c->ncap, "%s%s%s", base, sep, suffix);
    else
        snprintf(c->nbuf, c->ncap, "%s", base);
    return c->nbuf;
}

const char *tf_name(tf_ctx *c, int ni, const char *suffix)
{
    return name_join(c, c->nodes[ni].name, "#", suffix);
}

ffu_status tf_error(tf_ctx *c, int ni, ffu_status s, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ffu_error_set(s, "TF.js node '%.200s' (%.60s): %s", c->nodes[ni].name,
                         c->nodes[ni].op, msg);
}

/* ---- base64 ------------------------------------------------------------------------------ */

static int b64_value(char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+' || ch == '-') return 62; /* '-' and '_': the URL-safe alphabet */
    if (ch == '/' || ch == '_') return 63;
    return -1;
}

ffu_status tf_base64_decode(const char *s, uint8_t *out, size_t cap, size_t *n)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t len = 0, i = 0;
    *n = 0;
    for (; s[i] && s[i] != '='; i++) {
        int v = b64_value(s[i]);
        if (v < 0) return ffu_error_set(FFU_ERR_FORMAT, "bad base64 character 0x%02x", (uint8_t)s[i]);
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (len >= cap) return ffu_error_set(FFU_ERR_FORMAT, "base64 value is too long");
            out[len++] = (uint8_t)(acc >> bits);
        }
    }
    /* only padding may follow; a lone trailing 6-bit group is malformed */
    for (; s[i]; i++)
        if (s[i] != '=') return ffu_error_set(FFU_ERR_FORMAT, "bad base64 padding");
    if (bits >= 6) return ffu_error_set(FFU_ERR_FORMAT, "truncated base64 value");
    *n = len;
    return FFU_OK;
}

/* ---- attributes ---------------------------------------------------------------------------- */

static const ffu_json *attr_get(tf_ctx *c, int ni, const char *key)
{
    return ffu_json_get(c->nodes[ni].attr, key);
}

/* TF writes int64 as a JSON string ("3"); accept plain integers too. */
static int json_to_i64(const ffu_json *j, int64_t *v)
{
    if (ffu_json_typeof(j) == FFU_JSON_NUMBER) {
        if (!ffu_json_is_integer(j)) return -1;
        *v = ffu_json_int(j, 0);
        return 0;
    }
    const char *s = ffu_json_string(j);
    if (!s || !*s) return -1;
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    if (!*p) return -1;
    uint64_t acc = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (acc > (UINT64_MAX - 9) / 10) return -1;
        acc = acc * 10 + (uint64_t)(*p - '0');
    }
    if (acc > (uint64_t)INT64_MAX + (uint64_t)neg) return -1;
    *v = neg ? (int64_t)(0 - acc) : (int64_t)acc;
    return 0;
}

static int json_to_f32(const ffu_json *j, float *v)
{
    if (ffu_json_typeof(j) == FFU_JSON_NUMBER) {
        *v = (float)ffu_json_number(j, 0);
        return 0;
    }
    const char *s = ffu_json_string(j); /* protobuf JSON spells non-finite values */
    if (s && strcmp(s, "NaN") == 0) *v = __builtin_nanf("");
    else if (s && strcmp(s, "Infinity") == 0) *v = __builtin_inff();
    else if (s && strcmp(s, "-Infinity") == 0) *v = -__builtin_inff();
    else return -1;
    return 0;
}

ffu_status tf_attr_int(tf_ctx *c, int ni, const char *key, int64_t fallback, int64_t *v)
{
    const ffu_json *a = attr_get(c, ni, key);
    *v = fallback;
    if (!a) return FFU_OK;
    if (json_to_i64(ffu_json_get(a, "i"), v) < 0)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not an integer", key);
    return FFU_OK;
}

ffu_status tf_attr_float(tf_ctx *c, int ni, const char *key, float fallback, float *v)
{
    const ffu_json *a = attr_get(c, ni, key);
    *v = fallback;
    if (!a) return FFU_OK;
    if (json_to_f32(ffu_json_get(a, "f"), v) < 0)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not a float", key);
    return FFU_OK;
}

ffu_status tf_attr_bool(tf_ctx *c, int ni, const char *key, int fallback, int *v)
{
    const ffu_json *a = attr_get(c, ni, key);
    *v = fallback;
    if (!a) return FFU_OK;
    const ffu_json *b = ffu_json_get(a, "b");
    if (ffu_json_typeof(b) != FFU_JSON_BOOL)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not a bool", key);
    *v = ffu_json_bool(b, 0);
    return FFU_OK;
}

static ffu_status decode_str(tf_ctx *c, int ni, const char *key, const ffu_json *j, char *buf,
                             size_t len)
{
    const char *s = ffu_json_string(j);
    size_t n;
    if (!s) return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not a string", key);
    if (tf_base64_decode(s, (uint8_t *)buf, len - 1, &n) < 0)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s': %s", key, ffu_error_message());
    buf[n] = 0;
    if (strlen(buf) != n)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' holds a NUL byte", key);
    return FFU_OK;
}

ffu_status tf_attr_str(tf_ctx *c, int ni, const char *key, const char *fallback, char *buf,
                       size_t len)
{
    const ffu_json *a = attr_get(c, ni, key);
    if (!a) {
        snprintf(buf, len, "%s", fallback);
        return FFU_OK;
    }
    return decode_str(c, ni, key, ffu_json_get(a, "s"), buf, len);
}

ffu_status tf_attr_ints(tf_ctx *c, int ni, const char *key, int64_t *v, int max, int *count)
{
    const ffu_json *a = attr_get(c, ni, key);
    *count = -1;
    if (!a) return FFU_OK;
    const ffu_json *l = ffu_json_get(a, "list");
    if (ffu_json_typeof(l) != FFU_JSON_OBJECT)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not a list", key);
    const ffu_json *arr = ffu_json_get(l, "i");
    size_t n = ffu_json_len(arr);
    if (arr && ffu_json_typeof(arr) != FFU_JSON_ARRAY)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not an integer list", key);
    if (n > (size_t)max)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' has %zu values (at most %d)", key,
                        n, max);
    for (size_t i = 0; i < n; i++)
        if (json_to_i64(ffu_json_at(arr, i), &v[i]) < 0)
            return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s'[%zu] is not an integer", key, i);
    *count = (int)n;
    return FFU_OK;
}

ffu_status tf_attr_strs(tf_ctx *c, int ni, const char *key, char (*bufs)[32], int max,
                        int *count)
{
    const ffu_json *a = attr_get(c, ni, key);
    *count = -1;
    if (!a) return FFU_OK;
    const ffu_json *l = ffu_json_get(a, "list");
    if (ffu_json_typeof(l) != FFU_JSON_OBJECT)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not a list", key);
    const ffu_json *arr = ffu_json_get(l, "s");
    size_t n = ffu_json_len(arr);
    if (arr && ffu_json_typeof(arr) != FFU_JSON_ARRAY)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not a string list", key);
    if (n > (size_t)max)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' has %zu values (at most %d)", key,
                        n, max);
    for (size_t i = 0; i < n; i++) {
        ffu_status st = decode_str(c, ni, key, ffu_json_at(arr, i), bufs[i], 32);
        if (st < 0) return st;
    }
    *count = (int)n;
    return FFU_OK;
}

static ffu_dtype dtype_from_tf_name(const char *s)
{
    static const struct {
        const char *name;
        ffu_dtype t;
    } map[] = {
        {"DT_FLOAT", FFU_DTYPE_F32},   {"DT_HALF", FFU_DTYPE_F16},   {"DT_BFLOAT16", FFU_DTYPE_BF16},
        {"DT_DOUBLE", FFU_DTYPE_F64},  {"DT_INT8", FFU_DTYPE_I8},    {"DT_UINT8", FFU_DTYPE_U8},
        {"DT_INT16", FFU_DTYPE_I16},   {"DT_UINT16", FFU_DTYPE_U16}, {"DT_INT32", FFU_DTYPE_I32},
        {"DT_UINT32", FFU_DTYPE_U32},  {"DT_INT64", FFU_DTYPE_I64},  {"DT_UINT64", FFU_DTYPE_U64},
        {"DT_BOOL", FFU_DTYPE_BOOL},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].name, s) == 0) return map[i].t;
    return FFU_DTYPE_UNDEFINED;
}

static ffu_dtype dtype_from_tf_enum(int64_t e)
{
    switch (e) {
    case 1: return FFU_DTYPE_F32;
    case 2: return FFU_DTYPE_F64;
    case 3: return FFU_DTYPE_I32;
    case 4: return FFU_DTYPE_U8;
    case 5: return FFU_DTYPE_I16;
    case 6: return FFU_DTYPE_I8;
    case 9: return FFU_DTYPE_I64;
    case 10: return FFU_DTYPE_BOOL;
    case 14: return FFU_DTYPE_BF16;
    case 17: return FFU_DTYPE_U16;
    case 19: return FFU_DTYPE_F16;
    case 22: return FFU_DTYPE_U32;
    case 23: return FFU_DTYPE_U64;
    default: return FFU_DTYPE_UNDEFINED;
    }
}

ffu_status tf_attr_type(tf_ctx *c, int ni, const char *key, ffu_dtype *t)
{
    const ffu_json *a = attr_get(c, ni, key);
    *t = FFU_DTYPE_UNDEFINED;
    if (!a) return FFU_OK;
    const ffu_json *j = ffu_json_get(a, "type");
    int64_t e;
    if (ffu_json_typeof(j) == FFU_JSON_STRING) *t = dtype_from_tf_name(ffu_json_string(j));
    else if (json_to_i64(j, &e) == 0) *t = dtype_from_tf_enum(e);
    else return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s' is not a type", key);
    if (*t == FFU_DTYPE_UNDEFINED)
        return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "attribute '%s': element type not supported",
                        key);
    return FFU_OK;
}

/* A TensorShapeProto in JSON ({"dim": [{"size": "-1"}, ...]} or {"unknownRank": true}). */
static ffu_status parse_shape(const ffu_json *sh, nn_shape *s, const char *what)
{
    s->rank = -1;
    if (!sh || ffu_json_bool(ffu_json_get(sh, "unknownRank"), 0)) return FFU_OK;
    if (ffu_json_typeof(sh) != FFU_JSON_OBJECT)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: shape is not an object", what);
    const ffu_json *dims = ffu_json_get(sh, "dim");
    if (dims && ffu_json_typeof(dims) != FFU_JSON_ARRAY)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: shape dims are not a list", what);
    size_t r = ffu_json_len(dims);
    if (r > FFU_NN_MAX_RANK)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: rank %zu (at most %d)", what, r,
                             FFU_NN_MAX_RANK);
    s->rank = (int)r;
    for (size_t i = 0; i < r; i++) {
        int64_t v = -1;
        const ffu_json *size = ffu_json_get(ffu_json_at(dims, i), "size");
        if (size && (json_to_i64(size, &v) < 0 || v < -1))
            return ffu_error_set(FFU_ERR_FORMAT, "%s: bad dimension %zu", what, i);
        s->d[i] = v; /* an absent size is unknown, as in TF */
    }
    return FFU_OK;
}

ffu_status tf_attr_shape(tf_ctx *c, int ni, const char *key, nn_shape *s)
{
    const ffu_json *a = attr_get(c, ni, key);
    s->rank = -1;
    if (!a) return FFU_OK;
    if (parse_shape(ffu_json_get(a, "shape"), s, c->nodes[ni].name) < 0)
        return tf_error(c, ni, FFU_ERR_FORMAT, "attribute '%s': %s", key, ffu_error_message());
    return FFU_OK;
}

/* ---- weights ------------------------------------------------------------------------------- */

static int cmp_weight(const void *a, const void *b)
{
    return strcmp(((const tf_weight *)a)->name, ((const tf_weight *)b)->name);
}

tf_weight *tf_find_weight(tf_ctx *c, const char *name)
{
    tf_weight key = {.name = name};
    return c->nweights ? bsearch(&key, c->weights, (size_t)c->nweights, sizeof key, cmp_weight)
                       : NULL;
}

static ffu_status parse_weight(const ffu_json *wj, tf_weight *w, size_t *offset,
                               size_t weights_len, const uint8_t *weights, size_t index)
{
    memset(w, 0, sizeof *w);
    for (int r = 0; r < TF_ROLE_COUNT; r++) w->tensor[r] = -1;
    w->name = ffu_json_string(ffu_json_get(wj, "name"));
    if (!w->name || !*w->name)
        return ffu_error_set(FFU_ERR_FORMAT, "weights manifest entry %zu has no name", index);
    const ffu_json *shape = ffu_json_get(wj, "shape");
    if (ffu_json_typeof(shape) != FFU_JSON_ARRAY)
        return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s' has no shape", w->name);
    size_t r = ffu_json_len(shape);
    if (r > FFU_NN_MAX_RANK)
        return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s' has rank %zu (at most %d)", w->name,
                             r, FFU_NN_MAX_RANK);
    w->shape.rank = (int)r;
    uint64_t numel = 1;
    for (size_t i = 0; i < r; i++) {
        const ffu_json *d = ffu_json_at(shape, i);
        int64_t v = ffu_json_is_integer(d) ? ffu_json_int(d, -1) : -1;
        if (v < 0 || v > ((int64_t)1 << 40))
            return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s': bad dimension %zu", w->name, i);
        w->shape.d[i] = v;
        numel *= (uint64_t)v;
        if (numel > ((uint64_t)1 << 40))
            return ffu_error_set(FFU_ERR_TOO_LARGE, "weight '%.200s' is too large", w->name);
    }
    const char *dt = ffu_json_string(ffu_json_get(wj, "dtype"));
    if (!dt) return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s' has no dtype", w->name);
    size_t esize;
    if (strcmp(dt, "float32") == 0) {
        w->dtype = FFU_DTYPE_F32, w->store = TF_STORE_F32, esize = 4;
    } else if (strcmp(dt, "int32") == 0) {
        w->dtype = FFU_DTYPE_I32, w->store = TF_STORE_I32, esize = 4;
    } else if (strcmp(dt, "bool") == 0) {
        w->dtype = FFU_DTYPE_BOOL, w->store = TF_STORE_BOOL, esize = 1;
    } else if (strcmp(dt, "float16") == 0) {
        w->dtype = FFU_DTYPE_F32, w->store = TF_STORE_F16, esize = 2;
    } else if (strcmp(dt, "string") == 0 || strcmp(dt, "complex64") == 0) {
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "weight '%.200s': dtype %s is not supported",
                             w->name, dt);
    } else {
        return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s': unknown dtype '%.40s'", w->name, dt);
    }
    const ffu_json *q = ffu_json_get(wj, "quantization");
    if (q) {
        const char *qd = ffu_json_string(ffu_json_get(q, "dtype"));
        if (ffu_json_typeof(q) != FFU_JSON_OBJECT || !qd)
            return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s': bad quantization", w->name);
        if (w->store != TF_STORE_F32 && w->store != TF_STORE_I32)
            return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s': %s cannot be quantized",
                                 w->name, dt);
        if (strcmp(qd, "float16") == 0) {
            if (w->store != TF_STORE_F32)
                return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s': float16 of an int32",
                                     w->name);
            w->store = TF_STORE_F16, esize = 2;
        } else if (strcmp(qd, "uint8") == 0 || strcmp(qd, "uint16") == 0) {
            double scale = ffu_json_number(ffu_json_get(q, "scale"), __builtin_nan(""));
            double min = ffu_json_number(ffu_json_get(q, "min"), __builtin_nan(""));
            if (!(scale == scale) || !(min == min) || scale > 3e38 || scale < -3e38 ||
                min > 3e38 || min < -3e38)
                return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s': bad scale or min", w->name);
            w->scale = (float)scale;
            w->min = (float)min;
            w->store = qd[4] == '8' ? TF_STORE_U8Q : TF_STORE_U16Q;
            esize = qd[4] == '8' ? 1 : 2;
        } else {
            return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s': unknown quantization '%.40s'",
                                 w->name, qd);
        }
    }
    uint64_t nbytes = numel * esize;
    if (nbytes > weights_len || *offset > weights_len - nbytes)
        return ffu_error_set(FFU_ERR_FORMAT,
                             "weight '%.200s' (%llu bytes at offset %zu) lies past the end of "
                             "the %zu weight bytes",
                             w->name, (unsigned long long)nbytes, *offset, weights_len);
    w->src = weights + *offset;
    w->nbytes = (size_t)nbytes;
    *offset += (size_t)nbytes;
    return FFU_OK;
}

ffu_status tf_parse_manifest(tf_ctx *c, const ffu_json *man, const uint8_t *weights,
                             size_t weights_len)
{
    if (man && ffu_json_typeof(man) != FFU_JSON_ARRAY)
        return ffu_error_set(FFU_ERR_FORMAT, "weightsManifest is not a list");
    size_t total = 0;
    for (size_t g = 0; g < ffu_json_len(man); g++) {
        const ffu_json *ws = ffu_json_get(ffu_json_at(man, g), "weights");
        if (ffu_json_typeof(ws) != FFU_JSON_ARRAY)
            return ffu_error_set(FFU_ERR_FORMAT, "weightsManifest[%zu] has no weights list", g);
        total += ffu_json_len(ws);
    }
    if (total > NN_TFJS_MAX_WEIGHTS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%zu weights (at most %d)", total,
                             NN_TFJS_MAX_WEIGHTS);
    c->weights = calloc(total ? total : 1, sizeof *c->weights);
    if (!c->weights) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    size_t offset = 0;
    static const uint8_t none[1];
    if (!weights) weights = none; /* no pointer arithmetic on NULL */
    for (size_t g = 0; g < ffu_json_len(man); g++) {
        const ffu_json *ws = ffu_json_get(ffu_json_at(man, g), "weights");
        for (size_t i = 0; i < ffu_json_len(ws); i++) {
            ffu_status st = parse_weight(ffu_json_at(ws, i), &c->weights[c->nweights], &offset,
                                         weights_len, weights, (size_t)c->nweights);
            if (st < 0) return st;
            c->nweights++;
        }
    }
    if (offset != weights_len)
        return ffu_error_set(FFU_ERR_FORMAT,
                             "the weights are %zu bytes but the manifest describes %zu", weights_len,
                             offset);
    qsort(c->weights, (size_t)c->nweights, sizeof *c->weights, cmp_weight);
    for (int i = 1; i < c->nweights; i++)
        if (strcmp(c->weights[i - 1].name, c->weights[i].name) == 0)
            return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s' is listed twice",
                                 c->weights[i].name);
    return FFU_OK;
}

/* Bytes weight w decodes to, or an error when the model's decoded total would pass
 * NN_TFJS_MAX_DECODED. */
static ffu_status decoded_bytes(const tf_ctx *c, const tf_weight *w, size_t *bytes)
{
    size_t nb = (size_t)nn_shape_numel(&w->shape) * ffu_dtype_size(w->dtype);
    *bytes = nb;
    if (nb > NN_TFJS_MAX_DECODED || c->decoded > NN_TFJS_MAX_DECODED - nb)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "weight '%.200s': decoded weights exceed %zu bytes",
                             w->name, NN_TFJS_MAX_DECODED);
    return FFU_OK;
}

/* Decodes w's stored bytes into p as values of its type (decoded_bytes of room). */
static void decode_into(const tf_weight *w, uint8_t *p)
{
    size_t n = (size_t)nn_shape_numel(&w->shape), nb = n * ffu_dtype_size(w->dtype);
    const uint8_t *s = w->src;
    switch (w->store) {
    case TF_STORE_F32:
    case TF_STORE_I32: memcpy(p, s, nb); break;
    case TF_STORE_BOOL:
        for (size_t i = 0; i < n; i++) p[i] = s[i] != 0;
        break;
    case TF_STORE_F16:
        nn_f16_to_f32_n(s, (float *)(void *)p, n);
        break;
    case TF_STORE_U8Q:
    case TF_STORE_U16Q: {
        /* in locals, and the common case (8-bit codes to f32) in a loop of its own that the
         * compiler vectorises: stores through p may alias w */
        const float scale = w->scale, min = w->min;
        const int wide = w->store == TF_STORE_U16Q;
        if (!wide && w->dtype != FFU_DTYPE_I32) {
            for (size_t i = 0; i < n; i++) {
                float f = (float)s[i] * scale + min;
                memcpy(p + 4 * i, &f, 4);
            }
            break;
        }
        for (size_t i = 0; i < n; i++) {
            unsigned q = wide ? (unsigned)(s[2 * i] | s[2 * i + 1] << 8) : s[i];
            float f = (float)q * scale + min;
            if (w->dtype == FFU_DTYPE_I32) {
                double r = __builtin_round((double)f);
                int32_t v = r > 2147483647.0 ? INT32_MAX : r < -2147483648.0 ? INT32_MIN : (int32_t)r;
                memcpy(p + 4 * i, &v, 4);
            } else {
                memcpy(p + 4 * i, &f, 4);
            }
        }
        break;
    }
    }
}

/* w's values in a new malloc'd buffer (free it). */
static ffu_status decode_weight(tf_ctx *c, const tf_weight *w, void **out, size_t *bytes)
{
    *out = NULL;
    ffu_status st = decoded_bytes(c, w, bytes);
    if (st < 0) return st;
    uint8_t *p = malloc(*bytes ? *bytes : 1);
    if (!p) return ffu_error_set(FFU_ERR_NOMEM, "out of memory decoding weight '%.200s'", w->name);
    decode_into(w, p);
    *out = p;
    return FFU_OK;
}

/* mode NN_BORROW: data already lies in the graph's arena (a weight decoded there) */
static int add_const_mode(tf_ctx *c, const char *name, ffu_dtype dt, const nn_shape *shape,
                          const void *data, int mode)
{
    int64_t numel = nn_shape_numel(shape);
    size_t nb = (size_t)numel * ffu_dtype_size(dt);
    if (numel < 0 || nb > NN_TFJS_MAX_DECODED || c->decoded > NN_TFJS_MAX_DECODED - nb)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "constant '%.200s' is too large", name);
    int t = nn_graph_add_const(c->g, name, dt, shape, data, nb, mode);
    if (t >= 0) c->decoded += nb;
    return t;
}

static int add_const_named(tf_ctx *c, const char *name, ffu_dtype dt, const nn_shape *shape,
                           const void *data)
{
    return add_const_mode(c, name, dt, shape, data, NN_COPY);
}

int tf_weight_tensor(tf_ctx *c, const tf_weight *wc, int role)
{
    tf_weight *w = (tf_weight *)wc;
    if (w->tensor[role] >= 0) return w->tensor[role];
    size_t nb;
    ffu_status st = decoded_bytes(c, w, &nb);
    if (st < 0) return st;
    const nn_shape *s = &w->shape;
    if (role != TF_ROLE_RAW && w->dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_FORMAT, "weight '%.200s' is %s where floats are needed",
                             w->name, ffu_dtype_name(w->dtype));
    if ((role == TF_ROLE_OIHW || role == TF_ROLE_DW) && s->rank != 4)
        return ffu_error_set(FFU_ERR_FORMAT, "filter '%.200s' has rank %d, expected 4", w->name,
                             s->rank);
    if (role == TF_ROLE_NCHW && s->rank > 4)
        return ffu_error_set(FFU_ERR_FORMAT, "per-channel constant '%.200s' has rank %d", w->name,
                             s->rank);
    /* The constant's data goes straight into the graph's arena: decoded there when it
     * is kept as stored, else decoded into the context's scratch and rearranged there
     * (no fresh memory per weight) */
    void *data = ffu_arena_alloc_aligned(c->g->arena, nb ? nb : 1, 64), *raw = data;
    if (data && role != TF_ROLE_RAW && nb > c->wcap) {
        free(c->wbuf);
        c->wcap = 0;
        if ((c->wbuf = malloc(nb))) c->wcap = nb;
    }
    if (!data || (role != TF_ROLE_RAW && !c->wbuf))
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory decoding weight '%.200s'", w->name);
    if (role != TF_ROLE_RAW) raw = c->wbuf;
    decode_into(w, raw);
    nn_shape ns = *s;
    const char *suffix = NULL;
    int t;
    if (role == TF_ROLE_OIHW || role == TF_ROLE_DW) {
        int64_t kh = s->d[0], kw = s->d[1], ci = s->d[2], co = s->d[3];
        const float *src = raw;
        float *dst = data;
        /* OIHW: dst[o][i][h][w] = src[h][w][i][o]; depthwise: out channel c*M+m, in 1.
         * Sixteen output channels at a time: each read is one line of src and the
         * sixteen rows of dst are written in order (one channel at a time wrote every
         * value to another line: a tenth of the time `bench nn` took to load and plan
         * dlib-resnet). */
        for (int64_t o0 = 0; o0 < co; o0 += 16) {
            int64_t o1 = co - o0 < 16 ? co : o0 + 16;
            for (int64_t i = 0; i < ci; i++)
                for (int64_t h = 0; h < kh; h++)
                    for (int64_t x = 0; x < kw; x++) {
                        const float *sv = src + ((h * kw + x) * ci + i) * co;
                        for (int64_t o = o0; o < o1; o++) {
                            if (role == TF_ROLE_OIHW)
                                dst[((o * ci + i) * kh + h) * kw + x] = sv[o];
                            else
                                dst[((i * co + o) * kh + h) * kw + x] = sv[o];
                        }
                    }
        }
        ns.rank = 4;
        if (role == TF_ROLE_OIHW) {
            ns.d[0] = co, ns.d[1] = ci;
            suffix = "oihw";
        } else {
            ns.d[0] = ci * co, ns.d[1] = 1;
            suffix = "dw";
        }
        ns.d[2] = kh, ns.d[3] = kw;
    } else if (role == TF_ROLE_NCHW) {
        int64_t d[4] = {1, 1, 1, 1};
        for (int i = 0; i < s->rank; i++)
            d[4 - s->rank + i] = s->d[i];
        const float *src = raw;
        float *dst = data;
        for (int64_t n = 0; n < d[0]; n++)
            for (int64_t h = 0; h < d[1]; h++)
                for (int64_t x = 0; x < d[2]; x++)
                    for (int64_t ch = 0; ch < d[3]; ch++)
                        dst[((n * d[3] + ch) * d[1] + h) * d[2] + x] =
                            src[((n * d[1] + h) * d[2] + x) * d[3] + ch];
        ns.rank = 4;
        ns.d[0] = d[0], ns.d[1] = d[3], ns.d[2] = d[1], ns.d[3] = d[2];
        suffix = "nchw";
    }
    {
        const char *name = name_join(c, w->name, "#", suffix);
        t = name ? add_const_mode(c, name, w->dtype, &ns, data, NN_BORROW)
                 : ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    if (t >= 0) w->tensor[role] = t;
    if (t >= 0 && w->store == TF_STORE_U8Q && w->dtype == FFU_DTYPE_F32) {
        /* the codes' scale and min, for kernels that rebuild the values (cpu_q8) */
        nn_tensor *tt = &c->g->tensors[t];
        tt->flags |= NN_T_Q8;
        tt->q8_scale = w->scale, tt->q8_min = w->min;
    }
    return t;
}

int tf_const(tf_ctx *c, int ni, const char *suffix, ffu_dtype dt, const nn_shape *shape,
             const void *data)
{
    const char *name = tf_name(c, ni, suffix);
    if (!name) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    return add_const_named(c, name, dt, shape, data);
}

int tf_scalar_f32(tf_ctx *c, float v)
{
    char name[32];
    uint32_t bits;
    memcpy(&bits, &v, 4);
    snprintf(name, sizeof name, "#f32:%08x", (unsigned)bits);
    int t = nn_graph_find(c->g, name);
    if (t >= 0) return t;
    nn_shape s = {.rank = 0};
    return add_const_named(c, name, FFU_DTYPE_F32, &s, &v);
}

/* ---- inputs ----------------------------------------------------------------------------------- */

static int input_src(tf_ctx *c, int ni, int i, int *port)
{
    if (i < 0 || i >= c->nodes[ni].ninputs) return -1;
    *port = c->nodes[ni].port[i];
    return c->nodes[ni].src[i];
}

const tf_weight *tf_input_weight(tf_ctx *c, int ni, int i)
{
    int port, s = input_src(c, ni, i, &port);
    /* a Const seen through Identity chains (bounded: the graph is acyclic) */
    for (int hops = 0; s >= 0 && hops < 64; hops++) {
        const tf_node *n = &c->nodes[s];
        if (port != 0) return NULL;
        if (strcmp(n->op, "Const") == 0) return n->weight >= 0 ? &c->weights[n->weight] : NULL;
        if (strcmp(n->op, "Identity") != 0 || n->ninputs < 1) return NULL;
        port = n->port[0];
        s = n->src[0];
    }
    return NULL;
}

int tf_input(tf_ctx *c, int ni, int i)
{
    int port, s = input_src(c, ni, i, &port);
    if (s < 0) return tf_error(c, ni, FFU_ERR_FORMAT, "input %d is missing", i);
    const tf_node *n = &c->nodes[s];
    if (strcmp(n->op, "Const") == 0) {
        if (port != 0) return tf_error(c, ni, FFU_ERR_FORMAT, "input %d: a Const has one output", i);
        if (n->weight < 0)
            return tf_error(c, ni, FFU_ERR_FORMAT, "input %d: Const '%.200s' has no weight in the "
                            "manifest", i, n->name);
        return tf_weight_tensor(c, &c->weights[n->weight], TF_ROLE_RAW);
    }
    char pbuf[24];
    snprintf(pbuf, sizeof pbuf, "%d", port);
    const char *name = name_join(c, n->name, ":", port ? pbuf : NULL);
    if (!name) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    int t = nn_graph_find(c->g, name);
    if (t < 0)
        return tf_error(c, ni, FFU_ERR_FORMAT, "input %d: '%.200s' has no output %d", i, n->name, port);
    return t;
}

ffu_status tf_input_ints(tf_ctx *c, int ni, int i, int64_t *v, int max, int *count)
{
    const tf_weight *w = tf_input_weight(c, ni, i);
    *count = 0;
    if (!w) {
        if (i >= c->nodes[ni].ninputs) return tf_error(c, ni, FFU_ERR_FORMAT, "input %d is missing", i);
        return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "input %d must be a constant", i);
    }
    int64_t n = nn_shape_numel(&w->shape);
    if (w->dtype != FFU_DTYPE_I32)
        return tf_error(c, ni, FFU_ERR_FORMAT, "input %d ('%.200s') is not int32", i, w->name);
    if (n > max)
        return tf_error(c, ni, FFU_ERR_FORMAT, "input %d has %lld values (at most %d)", i,
                        (long long)n, max);
    void *raw;
    size_t nb;
    ffu_status st = decode_weight(c, w, &raw, &nb);
    if (st < 0) return st;
    for (int64_t k = 0; k < n; k++) v[k] = ((const int32_t *)raw)[k];
    free(raw);
    *count = (int)n;
    return FFU_OK;
}

ffu_status tf_input_floats(tf_ctx *c, int ni, int i, float **v, int64_t *count)
{
    const tf_weight *w = tf_input_weight(c, ni, i);
    *v = NULL;
    *count = 0;
    if (!w) return tf_error(c, ni, FFU_ERR_UNSUPPORTED, "input %d must be a constant", i);
    if (w->dtype != FFU_DTYPE_F32)
        return tf_error(c, ni, FFU_ERR_FORMAT, "input %d ('%.200s') is not float", i, w->name);
    size_t nb;
    ffu_status st = decode_weight(c, w, (void **)v, &nb);
    if (st < 0) return st;
    *count = nn_shape_numel(&w->shape);
    return FFU_OK;
}

/* ---- the node list -------------------------------------------------------------------------- */

typedef struct name_ix {
    const char *name;
    int node;
} name_ix;

static int cmp_name_ix(const void *a, const void *b)
{
    return strcmp(((const name_ix *)a)->name, ((const name_ix *)b)->name);
}

static int find_node(const name_ix *ix, int n, const char *name)
{
    name_ix key = {.name = name};
    const name_ix *r = n ? bsearch(&key, ix, (size_t)n, sizeof key, cmp_name_ix) : NULL;
    return r ? r->node : -1;
}

/* Splits "node:3" into the node index and the port; "node" is port 0. */
static int resolve_ref(const name_ix *ix, int n, const char *ref, char *tmp, size_t tmplen,
                       int *port)
{
    *port = 0;
    const char *colon = strrchr(ref, ':');
    if (colon && colon[1]) {
        const char *p = colon + 1;
        int v = 0;
        for (; *p >= '0' && *p <= '9' && v < 100000; p++) v = v * 10 + (*p - '0');
        if (!*p && (size_t)(colon - ref) < tmplen) {
            memcpy(tmp, ref, (size_t)(colon - ref));
            tmp[colon - ref] = 0;
            *port = v;
            return find_node(ix, n, tmp);
        }
    }
    return find_node(ix, n, ref);
}

static ffu_status parse_nodes(tf_ctx *c, const ffu_json *nodes, name_ix **ixp)
{
    size_t nn = ffu_json_len(nodes);
    if (ffu_json_typeof(nodes) != FFU_JSON_ARRAY || nn == 0)
        return ffu_error_set(FFU_ERR_FORMAT, "modelTopology has no node list");
    if (nn > NN_TFJS_MAX_NODES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%zu nodes (at most %d)", nn, NN_TFJS_MAX_NODES);
    c->nodes = calloc(nn, sizeof *c->nodes);
    name_ix *ix = calloc(nn, sizeof *ix);
    *ixp = ix;
    if (!c->nodes || !ix) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    c->nnodes = (int)nn;
    for (size_t i = 0; i < nn; i++) {
        const ffu_json *j = ffu_json_at(nodes, i);
        tf_node *n = &c->nodes[i];
        n->name = ffu_json_string(ffu_json_get(j, "name"));
        n->op = ffu_json_string(ffu_json_get(j, "op"));
        n->attr = ffu_json_get(j, "attr");
        n->weight = -1;
        if (ffu_json_typeof(j) != FFU_JSON_OBJECT || !n->name || !*n->name || !n->op)
            return ffu_error_set(FFU_ERR_FORMAT, "node %zu has no name or op", i);
        if (strchr(n->name, ':') || n->name[0] == '^')
            return ffu_error_set(FFU_ERR_FORMAT, "node name '%.200s' is not valid", n->name);
        if (n->attr && ffu_json_typeof(n->attr) != FFU_JSON_OBJECT)
            return ffu_error_set(FFU_ERR_FORMAT, "node '%.200s': attr is not an object", n->name);
        ix[i].name = n->name;
        ix[i].node = (int)i;
    }
    qsort(ix, nn, sizeof *ix, cmp_name_ix);
    for (size_t i = 1; i < nn; i++)
        if (strcmp(ix[i - 1].name, ix[i].name) == 0)
            return ffu_error_set(FFU_ERR_FORMAT, "node name '%.200s' is used twice", ix[i].name);
    /* resolve data inputs */
    for (size_t i = 0; i < nn; i++) {
        tf_node *n = &c->nodes[i];
        const ffu_json *ins = ffu_json_get(ffu_json_at(nodes, i), "input");
        if (ins && ffu_json_typeof(ins) != FFU_JSON_ARRAY)
            return ffu_error_set(FFU_ERR_FORMAT, "node '%.200s': input is not a list", n->name);
        size_t ni = ffu_json_len(ins);
        if (ni > 100000)
            return ffu_error_set(FFU_ERR_TOO_LARGE, "node '%.200s' has %zu inputs", n->name, ni);
        if (ni) {
            n->src = malloc(ni * sizeof(int));
            n->port = malloc(ni * sizeof(int));
            if (!n->src || !n->port) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        }
        for (size_t k = 0; k < ni; k++) {
            const char *ref = ffu_json_string(ffu_json_at(ins, k));
            if (!ref) return ffu_error_set(FFU_ERR_FORMAT, "node '%.200s': input %zu is not a string",
                                           n->name, k);
            if (ref[0] == '^') continue; /* control dependency: ordering only */
            size_t len = strlen(ref) + 1;
            char *tmp = malloc(len);
            if (!tmp) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            int port, s = resolve_ref(ix, c->nnodes, ref, tmp, len, &port);
            free(tmp);
            if (s < 0)
                return ffu_error_set(FFU_ERR_FORMAT, "node '%.200s': input '%.200s' names no node",
                                     n->name, ref);
            n->src[n->ninputs] = s;
            n->port[n->ninputs++] = port;
        }
        if (strcmp(n->op, "Const") == 0) {
            tf_weight *w = tf_find_weight(c, n->name);
            n->weight = w ? (int)(w - c->weights) : -1;
        }
    }
    return FFU_OK;
}

/* Kahn's algorithm over data edges; nodes come out close to document order. */
static ffu_status topo_order(tf_ctx *c, int *order)
{
    int nn = c->nnodes;
    int *pending = calloc((size_t)nn, sizeof(int)), *start = calloc((size_t)nn + 1, sizeof(int));
    int *users = NULL, *fill = NULL;
    ffu_status st = FFU_OK;
    size_t edges = 0;
    for (int i = 0; i < nn; i++) edges += (size_t)c->nodes[i].ninputs;
    users = malloc((edges ? edges : 1) * sizeof(int));
    fill = calloc((size_t)nn, sizeof(int));
    if (!pending || !start || !users || !fill) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < nn; i++)
        for (int k = 0; k < c->nodes[i].ninputs; k++) start[c->nodes[i].src[k] + 1]++;
    for (int i = 0; i < nn; i++) start[i + 1] += start[i];
    for (int i = 0; i < nn; i++) {
        pending[i] = c->nodes[i].ninputs;
        for (int k = 0; k < c->nodes[i].ninputs; k++) {
            int s = c->nodes[i].src[k];
            users[start[s] + fill[s]++] = i;
        }
    }
    int head = 0, tail = 0;
    for (int i = 0; i < nn; i++)
        if (!pending[i]) order[tail++] = i;
    while (head < tail) {
        int i = order[head++];
        for (int k = start[i]; k < start[i + 1]; k++)
            if (--pending[users[k]] == 0) order[tail++] = users[k];
    }
    if (tail != nn) {
        int bad = 0;
        while (bad < nn && !pending[bad]) bad++;
        st = ffu_error_set(FFU_ERR_FORMAT, "the graph has a cycle through node '%.200s'",
                           c->nodes[bad < nn ? bad : 0].name);
    }
out:
    free(pending), free(start), free(users), free(fill);
    return st;
}

/* ---- outputs ------------------------------------------------------------------------------------ */

typedef struct tf_out {
    int node, port;
    const ffu_json *info; /* signature entry (dtype, tensorShape) or NULL */
} tf_out;

static ffu_status find_outputs(tf_ctx *c, const ffu_json *root, const name_ix *ix, tf_out **outp,
                               int *nout)
{
    *outp = NULL;
    *nout = 0;
    const ffu_json *sig = ffu_json_get(root, "signature");
    if (ffu_json_typeof(sig) != FFU_JSON_OBJECT)
        sig = ffu_json_get(ffu_json_get(root, "userDefinedMetadata"), "signature");
    const ffu_json *so = ffu_json_get(sig, "outputs");
    size_t ns = ffu_json_typeof(so) == FFU_JSON_OBJECT ? ffu_json_len(so) : 0;
    tf_out *o = calloc(ns + (size_t)c->nnodes, sizeof *o);
    if (!o) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    *outp = o;
    if (ns) {
        for (size_t i = 0; i < ns; i++) {
            const ffu_json *v = NULL;
            const char *key = ffu_json_key_at(so, i, &v);
            const char *ref = ffu_json_string(ffu_json_get(v, "name"));
            if (!ref) ref = key;
            size_t len = strlen(ref) + 1;
            char *tmp = malloc(len);
            if (!tmp) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            int port, s = resolve_ref(ix, c->nnodes, ref, tmp, len, &port);
            free(tmp);
            if (s < 0)
                return ffu_error_set(FFU_ERR_FORMAT, "signature output '%.200s' names no node", ref);
            o[*nout].node = s;
            o[*nout].port = port;
            o[(*nout)++].info = v;
        }
        return FFU_OK;
    }
    unsigned char *used = calloc((size_t)c->nnodes, 1);
    if (!used) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < c->nnodes; i++)
        for (int k = 0; k < c->nodes[i].ninputs; k++) used[c->nodes[i].src[k]] = 1;
    for (int i = 0; i < c->nnodes; i++) {
        const char *op = c->nodes[i].op;
        if (used[i] || !strcmp(op, "Const") || !strcmp(op, "NoOp") || !strcmp(op, "Placeholder"))
            continue;
        o[*nout].node = i;
        o[(*nout)++].port = 0;
    }
    free(used);
    if (!*nout) return ffu_error_set(FFU_ERR_FORMAT, "the graph has no outputs");
    return FFU_OK;
}

/* Marks the nodes the outputs depend on. */
static ffu_status mark_needed(tf_ctx *c, const tf_out *o, int nout, unsigned char *need)
{
    int *stack = malloc((size_t)c->nnodes * sizeof(int)), sp = 0;
    if (!stack) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nout; i++)
        if (!need[o[i].node]) need[o[i].node] = 1, stack[sp++] = o[i].node;
    while (sp) {
        const tf_node *n = &c->nodes[stack[--sp]];
        for (int k = 0; k < n->ninputs; k++)
            if (!need[n->src[k]]) need[n->src[k]] = 1, stack[sp++] = n->src[k];
    }
    free(stack);
    return FFU_OK;
}

/* ---- SAME padding ------------------------------------------------------------------------------- */

/* TF's SAME rule per spatial dim (ONNX SAME_UPPER is the same): the extra pixel goes
 * after. Runs the op definitions' shape inference on a clone to learn input sizes. */
static void resolve_same_pads(nn_graph *g)
{
    nn_graph *cl = NULL;
    if (nn_graph_clone(g, &cl) < 0) return;
    for (int i = 0; i < cl->nnodes; i++) {
        const nn_op_def *d = nn_op_get(cl->nodes[i].op);
        if (!d || !d->infer || d->infer(cl, &cl->nodes[i]) < 0) break;
    }
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        if (n->op != NN_OP_CONV && n->op != NN_OP_MAX_POOL && n->op != NN_OP_AVERAGE_POOL) continue;
        const char *ap = nn_attr_string(n, "auto_pad", "NOTSET");
        if (strcmp(ap, "SAME_UPPER") != 0) continue;
        const nn_tensor *x = nn_in(cl, &cl->nodes[i], 0);
        if (!x || x->shape.rank != 4) continue;
        int64_t k[2], cnt;
        int nk;
        if (n->op == NN_OP_CONV) {
            const nn_tensor *w = nn_in(g, n, 1);
            if (!w || w->shape.rank != 4) continue;
            k[0] = w->shape.d[2], k[1] = w->shape.d[3];
        } else {
            const int64_t *ks = nn_attr_ints(n, "kernel_shape", &nk);
            if (!ks || nk != 2) continue;
            k[0] = ks[0], k[1] = ks[1];
        }
        int ns, nd;
        const int64_t *st = nn_attr_ints(n, "strides", &ns), *dl = nn_attr_ints(n, "dilations", &nd);
        int64_t pads[4];
        int ok = 1;
        for (int s = 0; s < 2 && ok; s++) {
            int64_t in = x->shape.d[2 + s], stride = ns == 2 ? st[s] : 1, dil = nd == 2 ? dl[s] : 1;
            if (in < 0 || stride < 1 || dil < 1 || k[s] < 1 || in > ((int64_t)1 << 31) ||
                k[s] > ((int64_t)1 << 31) || dil > ((int64_t)1 << 31)) {
                ok = 0;
                break;
            }
            int64_t out = (in + stride - 1) / stride;
            cnt = (out - 1) * stride + (k[s] - 1) * dil + 1 - in;
            if (cnt < 0) cnt = 0;
            pads[s] = cnt / 2;
            pads[2 + s] = cnt - cnt / 2;
        }
        if (!ok) continue;
        if (nn_node_set_ints(g, i, "pads", pads, 4) < 0 ||
            nn_node_set_string(g, i, "auto_pad", "NOTSET") < 0)
            break;
    }
    nn_graph_destroy(cl);
}

/* ---- entry -------------------------------------------------------------------------------------- */

static ffu_status mark_outputs(tf_ctx *c, const tf_out *o, int nout)
{
    nn_graph *g = c->g;
    for (int i = 0; i < nout; i++) {
        const tf_node *n = &c->nodes[o[i].node];
        int t;
        if (!strcmp(n->op, "Const")) {
            if (o[i].port || n->weight < 0)
                return ffu_error_set(FFU_ERR_FORMAT, "output Const '%.200s' has no weight", n->name);
            t = tf_weight_tensor(c, &c->weights[n->weight], TF_ROLE_RAW);
            if (t < 0) return t;
        } else {
            char pbuf[24];
            snprintf(pbuf, sizeof pbuf, "%d", o[i].port);
            const char *name = name_join(c, n->name, ":", o[i].port ? pbuf : NULL);
            if (!name) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            t = nn_graph_find(g, name);
            if (t < 0)
                return ffu_error_set(FFU_ERR_FORMAT, "output '%.200s' does not exist", name);
        }
        if (g->tensors[t].flags & NN_T_OUTPUT) continue;
        ffu_status st = nn_graph_mark_output(g, t);
        if (st < 0) return st;
        /* the signature's declared type and shape, where inference has not run yet */
        nn_tensor *tt = &g->tensors[t];
        if (o[i].info && !(tt->flags & (NN_T_CONST | NN_T_INPUT))) {
            const char *dt = ffu_json_string(ffu_json_get(o[i].info, "dtype"));
            nn_shape s;
            if (dt && tt->dtype == FFU_DTYPE_UNDEFINED) tt->dtype = dtype_from_tf_name(dt);
            if (parse_shape(ffu_json_get(o[i].info, "tensorShape"), &s, n->name) == FFU_OK &&
                tt->shape.rank < 0)
                tt->shape = s;
        }
    }
    return FFU_OK;
}

ffu_status nn_tfjs_load(const char *json, size_t json_len, const void *weights,
                        size_t weights_len, nn_graph **out)
{
    *out = NULL;
    if (!json || (!weights && weights_len))
        return ffu_error_set(FFU_ERR_INVALID, "nn_tfjs_load: NULL buffer");
    ffu_json *root = NULL;
    tf_ctx c = {0};
    name_ix *ix = NULL;
    int *order = NULL;
    tf_out *outs = NULL;
    int nout = 0;
    unsigned char *need = NULL;
    ffu_status st = ffu_json_parse(json, json_len, &root);
    if (st < 0) goto fail;
    if (ffu_json_typeof(root) != FFU_JSON_OBJECT) {
        st = ffu_error_set(FFU_ERR_FORMAT, "model.json is not an object");
        goto fail;
    }
    const char *format = ffu_json_string(ffu_json_get(root, "format"));
    if (format && strcmp(format, "graph-model") != 0) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "TF.js format '%.60s' (only graph-model is "
                           "supported)", format);
        goto fail;
    }
    if ((st = tf_parse_manifest(&c, ffu_json_get(root, "weightsManifest"), weights, weights_len)) <
        0)
        goto fail;
    if ((st = parse_nodes(&c, ffu_json_get(ffu_json_get(root, "modelTopology"), "node"), &ix)) < 0)
        goto fail;
    order = malloc((size_t)c.nnodes * sizeof(int));
    need = calloc((size_t)c.nnodes, 1);
    if (!order || !need) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = topo_order(&c, order)) < 0) goto fail;
    if ((st = find_outputs(&c, root, ix, &outs, &nout)) < 0) goto fail;
    if ((st = mark_needed(&c, outs, nout, need)) < 0) goto fail;
    if ((st = nn_graph_create(&c.g)) < 0) goto fail;
    c.g->format = "tfjs";
    const char *prod = ffu_json_string(ffu_json_get(root, "convertedBy"));
    if (!prod) prod = ffu_json_string(ffu_json_get(root, "generatedBy"));
    if (prod && !(c.g->producer = ffu_arena_strdup(c.g->arena, prod))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int k = 0; k < c.nnodes; k++) {
        int i = order[k];
        const char *op = c.nodes[i].op;
        if (!strcmp(op, "Const") || !strcmp(op, "NoOp")) continue;
        if (!need[i] && strcmp(op, "Placeholder") != 0) continue;
        if ((st = tf_translate(&c, i)) < 0) goto fail;
    }
    if ((st = mark_outputs(&c, outs, nout)) < 0) goto fail;
    resolve_same_pads(c.g);
    *out = c.g;
    c.g = NULL;
    st = FFU_OK;
fail:
    nn_graph_destroy(c.g);
    for (int i = 0; i < c.nnodes; i++) free(c.nodes[i].src), free(c.nodes[i].port);
    free(c.nodes);
    free(c.weights);
    free(c.nbuf);
    free(c.wbuf);
    free(ix);
    free(order);
    free(outs);
    free(need);
    ffu_json_free(root);
    return st;
}
