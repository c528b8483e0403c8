/* The ONNX loader's lower half: parsing protobuf under limits (a capped allocator and a
 * nesting pre-check, since protobuf-c itself has neither) and turning TensorProtos
 * (initializers, Constant values, the conformance suite's .pb files) into constant
 * tensors of the graph IR. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- capped allocator ------------------------------------------------------------------ */

/* Each block carries its size in a 16-byte header (keeps malloc's alignment) so free
 * can give the bytes back to the budget. */
#define HDR 16

static void *alloc_capped(void *ud, size_t size)
{
    onnx_alloc *a = ud;
    if (size > a->cap - a->used || size > SIZE_MAX - HDR) {
        a->refused = 1;
        return NULL;
    }
    unsigned char *p = malloc(size + HDR);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    a->used += size;
    return p + HDR;
}

static void free_capped(void *ud, void *ptr)
{
    if (!ptr) return;
    onnx_alloc *a = ud;
    unsigned char *p = (unsigned char *)ptr - HDR;
    size_t size;
    memcpy(&size, p, sizeof size);
    a->used -= size;
    free(p);
}

void onnx_alloc_init(onnx_alloc *a, size_t cap)
{
    memset(a, 0, sizeof *a);
    a->pa.alloc = alloc_capped;
    a->pa.free = free_capped;
    a->pa.allocator_data = a;
    a->cap = cap;
}

/* ---- wire-format pre-check --------------------------------------------------------------- */

static int read_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*i >= n) return -1;
        uint8_t b = p[(*i)++];
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1; /* more than 10 bytes */
}

/* Walks the message like protobuf-c will, descending into fields the descriptor
 * declares as messages. Returns 0, -1 (malformed) or -2 (nested too deep). Stricter
 * than protobuf-c (no groups), so whatever passes here cannot make it recurse deeper. */
static int scan(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n, int depth)
{
    if (depth > ONNX_MAX_DEPTH) return -2;
    size_t i = 0;
    while (i < n) {
        uint64_t key, v;
        if (read_varint(p, n, &i, &key) < 0 || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
            return -1;
        switch (key & 7) {
        case 0:
            if (read_varint(p, n, &i, &v) < 0) return -1;
            break;
        case 1:
            if (n - i < 8) return -1;
            i += 8;
            break;
        case 5:
            if (n - i < 4) return -1;
            i += 4;
            break;
        case 2: {
            if (read_varint(p, n, &i, &v) < 0 || v > n - i) return -1;
            const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                int r = scan(f->descriptor, p + i, (size_t)v, depth + 1);
                if (r < 0) return r;
            }
            i += (size_t)v;
            break;
        }
        default: return -1; /* groups (3, 4) and invalid wire types */
        }
    }
    return 0;
}

ffu_status onnx_unpack(const ProtobufCMessageDescriptor *desc, const void *data, size_t size,
                       onnx_alloc *a, const char *what, ProtobufCMessage **out)
{
    *out = NULL;
    if (!data && size) return ffu_error_set(FFU_ERR_INVALID, "%s: no data", what);
    int r = scan(desc, data, size, 0);
    if (r == -2)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: messages nested deeper than %d levels",
                             what, ONNX_MAX_DEPTH);
    if (r < 0) return ffu_error_set(FFU_ERR_FORMAT, "%s: malformed protobuf data", what);
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &a->pa, size, data);
    if (!m) {
        if (a->refused)
            return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: needs more than %zu MiB to parse", what,
                                 a->cap >> 20);
        return ffu_error_set(FFU_ERR_FORMAT, "%s: malformed protobuf data", what);
    }
    *out = m;
    return FFU_OK;
}

/* ---- data types -------------------------------------------------------------------------- */

ffu_dtype nn_onnx_dtype(int t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return FFU_DTYPE_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return FFU_DTYPE_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return FFU_DTYPE_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return FFU_DTYPE_U16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return FFU_DTYPE_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return FFU_DTYPE_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return FFU_DTYPE_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return FFU_DTYPE_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return FFU_DTYPE_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return FFU_DTYPE_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return FFU_DTYPE_U32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return FFU_DTYPE_U64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return FFU_DTYPE_BF16;
    default: return FFU_DTYPE_UNDEFINED;
    }
}

/* ---- TensorProto -> constant ----------------------------------------------------------------- */

const char *onnx_unique_name(const nn_graph *g, const char *base, char *buf, size_t len)
{
    snprintf(buf, len, "%s", base);
    for (int k = 1; nn_graph_find(g, buf) >= 0; k++)
        snprintf(buf, len, "%.*s#%d", (int)(len > 16 ? len - 16 : 0), base, k);
    return buf;
}

/* Narrows int32_data into the element type it carries (ONNX stores every type of 16
 * bits or less there, f16/bf16 as their bit patterns; bool as 0/1). */
static void narrow_i32(const int32_t *src, ffu_dtype dt, void *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int32_t v = src[i];
        switch (dt) {
        case FFU_DTYPE_I8: ((int8_t *)dst)[i] = (int8_t)v; break;
        case FFU_DTYPE_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
        case FFU_DTYPE_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
        case FFU_DTYPE_I16: ((int16_t *)dst)[i] = (int16_t)v; break;
        default: ((uint16_t *)dst)[i] = (uint16_t)v; break; /* u16, f16, bf16 */
        }
    }
}

int onnx_tensor_add(nn_graph *g, const Onnx__TensorProto *t, const char *name, const char *what)
{
    if ((t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
        t->n_external_data)
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "%s: data in an external file is not supported", what);
    if (t->segment) return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    int onnx_type = t->has_data_type ? t->data_type : 0;
    if (onnx_type == 0) return ffu_error_set(FFU_ERR_FORMAT, "%s has no data type", what);
    ffu_dtype dt = nn_onnx_dtype(onnx_type);
    if (dt == FFU_DTYPE_UNDEFINED)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: ONNX data type %d (%s) is not supported",
                             what, onnx_type, onnx_type == 8 ? "string" : "no engine equivalent");
    if (t->n_dims > FFU_NN_MAX_RANK)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: rank %zu is above the limit of %d", what,
                             t->n_dims, FFU_NN_MAX_RANK);
    nn_shape shape = {.rank = (int)t->n_dims};
    size_t esize = ffu_dtype_size(dt), numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return ffu_error_set(FFU_ERR_FORMAT, "%s: negative dimension %lld", what,
                                 (long long)t->dims[i]);
        shape.d[i] = t->dims[i];
        if ((uint64_t)t->dims[i] > SIZE_MAX ||
            __builtin_mul_overflow(numel, (size_t)t->dims[i], &numel))
            numel = SIZE_MAX; /* cannot match any data present: reported below */
    }
    size_t nbytes;
    if (numel == SIZE_MAX || __builtin_mul_overflow(numel, esize, &nbytes))
        return ffu_error_set(FFU_ERR_FORMAT, "%s: its dimensions overflow", what);

    const void *src = NULL;
    size_t have = 0;       /* elements (or bytes for raw data) present */
    void *owned = NULL;    /* narrowed copy of a wider typed field */
    if (t->has_raw_data) {
        src = t->raw_data.data;
        have = t->raw_data.len;
        if (have != nbytes)
            return ffu_error_set(FFU_ERR_FORMAT, "%s: %zu bytes of data, its shape needs %zu",
                                 what, have, nbytes);
    } else {
        switch (dt) {
        case FFU_DTYPE_F32: src = t->float_data, have = t->n_float_data; break;
        case FFU_DTYPE_F64: src = t->double_data, have = t->n_double_data; break;
        case FFU_DTYPE_I64: src = t->int64_data, have = t->n_int64_data; break;
        case FFU_DTYPE_U64: src = t->uint64_data, have = t->n_uint64_data; break;
        case FFU_DTYPE_I32: src = t->int32_data, have = t->n_int32_data; break;
        case FFU_DTYPE_U32: have = t->n_uint64_data; break;
        default: have = t->n_int32_data; break; /* 8/16-bit types and bool */
        }
        if (have != numel)
            return ffu_error_set(FFU_ERR_FORMAT, "%s: %zu values, its shape needs %zu", what, have,
                                 numel);
        if (!src && numel) {
            owned = malloc(nbytes);
            if (!owned) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            if (dt == FFU_DTYPE_U32)
                for (size_t i = 0; i < numel; i++)
                    ((uint32_t *)owned)[i] = (uint32_t)t->uint64_data[i];
            else
                narrow_i32(t->int32_data, dt, owned, numel);
            src = owned;
        }
    }
    static const char empty[1];
    int r = nn_graph_add_const(g, name, dt, &shape, src ? src : empty, nbytes, NN_COPY);
    free(owned);
    return r;
}

/* ---- public: one serialized TensorProto ---------------------------------------------------- */

ffu_status nn_onnx_read_tensor(const void *data, size_t size, nn_graph *g, const char *name,
                               int *tensor_index)
{
    if (tensor_index) *tensor_index = -1;
    if (!g || !tensor_index) return ffu_error_set(FFU_ERR_INVALID, "nn_onnx_read_tensor: no graph");
    if (size > NN_ONNX_MAX_FILE)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "ONNX tensor file of %zu bytes is above the "
                             "limit of %zu", size, NN_ONNX_MAX_FILE);
    onnx_alloc a;
    onnx_alloc_init(&a, ONNX_ALLOC_CAP);
    ProtobufCMessage *m;
    ffu_status st = onnx_unpack(&onnx__tensor_proto__descriptor, data, size, &a, "ONNX tensor", &m);
    if (st < 0) return st;
    const Onnx__TensorProto *t = (const Onnx__TensorProto *)m;
    char buf[256], what[300];
    if (!name) name = *onnx_str(t->name) ? t->name : onnx_unique_name(g, "tensor", buf, sizeof buf);
    snprintf(what, sizeof what, "ONNX tensor '%s'", name);
    int r = onnx_tensor_add(g, t, name, what);
    protobuf_c_message_free_unpacked(m, &a.pa);
    if (r < 0) return r;
    *tensor_index = r;
    return FFU_OK;
}
