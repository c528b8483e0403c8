/* ONNX face swappers in FaceFusion's conventions (MODELS.md): inswapper_128,
 * hyperswap_1a/1b/1c_256 and simswap_256. We ship none of these weights; users bring
 * the files, so this file is mostly checks that a file has the convention's inputs
 * and outputs (with messages that say what is wrong), plus the pre- and
 * post-processing each convention needs:
 *
 *   kind       template        crop  target input                 source input
 *   inswapper  arcface_128     128   RGB x / 255                   (e . emap) / |e|
 *   hyperswap  arcface_128     256   RGB (x / 255 - 0.5) / 0.5     e / |e|
 *   simswap    arcface_112_v1  256   RGB ImageNet mean / std       e / |e|
 *
 * Outputs are [1,3,S,S] RGB: inswapper and simswap give 0..1, hyperswap gives the
 * normalised range (FaceFusion maps it back by * std + mean); all are clipped to 0..1
 * and rounded to bytes. The inswapper's emap is the graph's last initializer, which
 * no node uses (the engine drops it as dead), so it is read from the file itself: a
 * scan of the protobuf wire format finds the last GraphProto.initializer without
 * parsing the rest, and only that TensorProto is decoded. The helpers at the end
 * (spec splitting, shape strings, loading) are shared with enhance.c and occlusion.c. */
#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "face/face_internal.h"
#include "nn/ir.h"
#include "nn/onnx/onnx.h"
#include "swap_internal.h"

#define SWAP_SOURCE_DIM 512 /* every supported convention takes a 512-d identity */

typedef enum swap_kind { KIND_INSWAPPER, KIND_HYPERSWAP, KIND_SIMSWAP, KIND_COUNT } swap_kind;

static const struct {
    const char *name, *tmpl;
    int size;
    const char *norm;   /* ffu_norm_preset of the target input */
    float out_scale;    /* output -> 0..1: y * out_scale + out_bias, then clipped */
    float out_bias;
} kinds[KIND_COUNT] = {
    {"inswapper", "arcface_128", 128, "unit", 1.0f, 0.0f},
    {"hyperswap", "arcface_128", 256, "symmetric", 0.5f, 0.5f},
    {"simswap", "arcface_112_v1", 256, "imagenet", 1.0f, 0.0f},
};

static const char *const kind_names[] = {"inswapper", "hyperswap", "simswap", NULL};

struct swap_net {
    swap_kind kind;
    char path[1024];
    ffu_nn_model *model;
    ffu_nn_session *session;
    int in_source, in_target, out_index;
    int dim;                /* source length */
    float *emap;            /* inswapper: emap_rows x dim, row-major */
    int emap_rows;
    ffu_norm_params norm;   /* target input */
    ffu_norm_params denorm; /* output -> bytes (ffu_tensor_to_image) */
    ffu_image aligned;      /* the aligned target crop (reused) */
};

/* ---- the last initializer, read from the file's wire format --------------------------- */

typedef struct wire {
    const uint8_t *p, *end;
} wire;

static int wire_varint(wire *w, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (w->p >= w->end)
            return -1;
        uint8_t b = *w->p++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* Next field of a message: its number, wire type and (for length-delimited fields)
 * the payload. Returns 1 for a field, 0 at the end, -1 when malformed. */
static int wire_next(wire *w, uint32_t *field, const uint8_t **data, size_t *len)
{
    if (w->p >= w->end)
        return 0;
    uint64_t key, v;
    if (wire_varint(w, &key) || key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return -1;
    *field = (uint32_t)(key >> 3);
    *data = NULL;
    *len = 0;
    switch (key & 7) {
    case 0:
        return wire_varint(w, &v) ? -1 : 1;
    case 1:
        if (w->end - w->p < 8)
            return -1;
        w->p += 8;
        return 1;
    case 5:
        if (w->end - w->p < 4)
            return -1;
        w->p += 4;
        return 1;
    case 2:
        if (wire_varint(w, &v) || v > (uint64_t)(w->end - w->p))
            return -1;
        *data = w->p;
        *len = (size_t)v;
        w->p += v;
        return 1;
    default: /* groups: not used by onnx.proto */
        return -1;
    }
}

/* The serialized last initializer of the model's graph (ModelProto.graph = 7,
 * GraphProto.initializer = 5); *len = 0 when there is none. */
static ffu_status last_initializer(const uint8_t *data, size_t size, const char *path,
                                   const uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    wire m = {data, data + size};
    uint32_t f;
    const uint8_t *d;
    size_t n;
    int r;
    while ((r = wire_next(&m, &f, &d, &n)) > 0) {
        if (f != 7 || !d)
            continue;
        wire g = {d, d + n};
        uint32_t gf;
        const uint8_t *gd;
        size_t gn;
        int gr;
        while ((gr = wire_next(&g, &gf, &gd, &gn)) > 0)
            if (gf == 5 && gd) {
                *out = gd;
                *len = gn;
            }
        if (gr < 0)
            r = -1;
    }
    if (r < 0)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: malformed protobuf while looking for the emap",
                             path);
    return FFU_OK;
}

/* Reads the last initializer as f32 (any float dtype converted). *data is malloc'd;
 * dims/rank describe it; name gets its name. No initializer: *data NULL, rank -1. */
static ffu_status read_last_initializer(const char *path, float **data, int64_t *dims, int *rank,
                                        char *name, size_t name_len)
{
    *data = NULL;
    *rank = -1;
    name[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ffu_error_set(FFU_ERR_IO, "%s: cannot open", path);
    struct stat sb;
    if (fstat(fd, &sb) || sb.st_size <= 0) {
        close(fd);
        return ffu_error_set(FFU_ERR_FORMAT, "%s: empty or unreadable file", path);
    }
    size_t size = (size_t)sb.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return ffu_error_set(FFU_ERR_IO, "%s: cannot map the file", path);
    const uint8_t *t;
    size_t tn;
    ffu_status st = last_initializer(map, size, path, &t, &tn);
    nn_graph *g = NULL;
    int idx = -1;
    if (st || !t)
        goto done;
    if ((st = nn_graph_create(&g)))
        goto done;
    if ((st = nn_onnx_read_tensor(t, tn, g, NULL, &idx)) || idx < 0) {
        char why[384]; /* copied: ffu_error_set rewrites the buffer it reads */
        snprintf(why, sizeof why, "%s", ffu_error_message());
        st = ffu_error_set(st ? st : FFU_ERR_FORMAT, "%s: the last initializer: %s", path, why);
        goto done;
    }
    const nn_tensor *c = &g->tensors[idx];
    snprintf(name, name_len, "%s", c->name ? c->name : "");
    *rank = c->shape.rank;
    size_t numel = 1;
    for (int i = 0; i < c->shape.rank; i++) {
        dims[i] = c->shape.d[i];
        numel *= (size_t)(c->shape.d[i] > 0 ? c->shape.d[i] : 0);
    }
    if (c->dtype != FFU_DTYPE_F32 && c->dtype != FFU_DTYPE_F16 && c->dtype != FFU_DTYPE_BF16 &&
        c->dtype != FFU_DTYPE_F64)
        goto done; /* not a float tensor: the caller reports the shape/type mismatch */
    if (numel == 0 || numel > ((size_t)1 << 26))
        goto done;
    *data = malloc(numel * sizeof(float));
    if (!*data) {
        st = ffu_error_set(FFU_ERR_NOMEM, "%s: emap of %zu values", path, numel);
        goto done;
    }
    if ((st = nn_convert(c->data, c->dtype, *data, FFU_DTYPE_F32, numel))) {
        free(*data);
        *data = NULL;
    }
done:
    nn_graph_destroy(g);
    munmap(map, size);
    return st;
}

/* ---- opening ------------------------------------------------------------------------ */

/* Kind from the file name: the convention's name appears in every published file. */
static int kind_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char low[256];
    size_t i = 0;
    for (; base[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)base[i]);
    low[i] = 0;
    for (int k = 0; k < KIND_COUNT; k++)
        if (strstr(low, kinds[k].name))
            return k;
    return -1;
}

/* dims[i] matches want[i] when equal, or when dynamic (-1) and i > 0 or want is 1. */
static int dims_match(const ffu_nn_tensor *t, const int64_t *want, int rank)
{
    if (t->rank != rank)
        return 0;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != want[i] && t->dims[i] != -1)
            return 0;
    return 1;
}

static ffu_status check_inputs(swap_net *n)
{
    const char *kn = kinds[n->kind].name;
    char names[512], ds[96];
    ffu_nn_tensor s, t;
    int ni = ffu_nn_model_num_inputs(n->model);
    n->in_source = ffu_nn_model_find_input(n->model, "source");
    n->in_target = ffu_nn_model_find_input(n->model, "target");
    if (n->in_source < 0 || n->in_target < 0)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: no input named `%s` (the file's inputs: %s) "
                             "(%s)", kn, n->in_source < 0 ? "source" : "target",
                             swap_input_names(n->model, names, sizeof names), n->path);
    if (ni != 2)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: the model must have exactly the inputs `source` "
                             "and `target`, this file has %s (%s)", kn,
                             swap_input_names(n->model, names, sizeof names), n->path);
    ffu_status st;
    if ((st = ffu_nn_model_input(n->model, n->in_source, &s)) ||
        (st = ffu_nn_model_input(n->model, n->in_target, &t)))
        return st;
    int64_t ws[2] = {1, SWAP_SOURCE_DIM};
    if (!dims_match(&s, ws, 2) || s.dims[1] != SWAP_SOURCE_DIM)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: input `source` must be [1,%d], this file has %s "
                             "(%s)", kn, SWAP_SOURCE_DIM, swap_dims_str(&s, ds, sizeof ds),
                             n->path);
    int S = kinds[n->kind].size;
    int64_t wt[4] = {1, 3, S, S};
    if (!dims_match(&t, wt, 4) || t.dims[1] != 3)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: input `target` must be [1,3,%d,%d], this file "
                             "has %s (%s)", kn, S, S, swap_dims_str(&t, ds, sizeof ds), n->path);
    if (s.dtype != FFU_DTYPE_F32 || t.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: inputs `source` and `target` must be f32, "
                             "this file has %s and %s (%s)", kn, ffu_dtype_name(s.dtype),
                             ffu_dtype_name(t.dtype), n->path);
    n->dim = SWAP_SOURCE_DIM;

    /* the output: `output` when there is one (hyperswap files add a mask), else the first */
    int no = ffu_nn_model_num_outputs(n->model);
    n->out_index = ffu_nn_model_find_output(n->model, "output");
    if (n->out_index < 0)
        n->out_index = 0;
    if (no < 1)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: the model has no output (%s)", kn, n->path);
    ffu_nn_tensor o;
    if ((st = ffu_nn_model_output(n->model, n->out_index, &o)))
        return st;
    if (o.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: output `%s` must be f32, this file has %s "
                             "(%s)", kn, o.name, ffu_dtype_name(o.dtype), n->path);
    if (o.rank >= 0 && !dims_match(&o, wt, 4))
        return ffu_error_set(FFU_ERR_FORMAT, "%s: output `%s` must be [1,3,%d,%d], this file has "
                             "%s (%s)", kn, o.name, S, S, swap_dims_str(&o, ds, sizeof ds),
                             n->path);
    return FFU_OK;
}

static ffu_status check_emap(swap_net *n, float *data, const int64_t *dims, int rank,
                             const char *name)
{
    char ds[96];
    if (rank < 0)
        return ffu_error_set(FFU_ERR_FORMAT, "inswapper: the file has no initializer, so no emap "
                             "(the graph's last initializer, [512,%d]) (%s)", n->dim, n->path);
    int ok = rank == 2 && dims[0] == SWAP_SOURCE_DIM && dims[1] == n->dim && data;
    if (!ok) {
        ffu_nn_tensor t = {.rank = rank};
        for (int i = 0; i < rank && i < FFU_NN_MAX_RANK; i++)
            t.dims[i] = dims[i];
        return ffu_error_set(FFU_ERR_FORMAT, "inswapper: the emap (the graph's last initializer) "
                             "must be a float [512,%d], this file's last initializer `%s` is %s "
                             "(%s)", n->dim, name, swap_dims_str(&t, ds, sizeof ds), n->path);
    }
    for (size_t i = 0; i < (size_t)SWAP_SOURCE_DIM * n->dim; i++)
        if (!isfinite(data[i]))
            return ffu_error_set(FFU_ERR_FORMAT, "inswapper: the emap `%s` holds non-finite "
                                 "values (%s)", name, n->path);
    return FFU_OK;
}

ffu_status swap_net_open(const char *spec, const ffu_face_model_opts *run, swap_net **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "swap_net_open: out is NULL");
    *out = NULL;
    if (!spec || !*spec)
        return ffu_error_set(FFU_ERR_INVALID, "no swapper model given");
    char kname[32];
    const char *path = swap_spec_split(spec, kind_names, kname, sizeof kname);
    swap_net *n = calloc(1, sizeof *n);
    if (!n)
        return ffu_error_set(FFU_ERR_NOMEM, "swapper");
    float *emap = NULL;
    ffu_status st;
    if ((size_t)snprintf(n->path, sizeof n->path, "%s", path) >= sizeof n->path) {
        st = ffu_error_set(FFU_ERR_INVALID, "swapper model path too long");
        goto fail;
    }
    if ((st = swap_model_load("swapper", n->path, &n->model)))
        goto fail;

    int kind = -1;
    for (int k = 0; k < KIND_COUNT; k++)
        if (!strcmp(kname, kinds[k].name))
            kind = k;
    int64_t edims[FFU_NN_MAX_RANK];
    int erank = -1;
    char ename[128];
    if (kind < 0)
        kind = kind_from_name(n->path);
    if (kind < 0 || kind == KIND_INSWAPPER) {
        if ((st = read_last_initializer(n->path, &emap, edims, &erank, ename, sizeof ename)))
            goto fail;
    }
    if (kind < 0) {
        /* guess from the inputs: a 512x512 last initializer is the inswapper's emap */
        ffu_nn_tensor t;
        int ti = ffu_nn_model_find_input(n->model, "target");
        int S = ti >= 0 && !ffu_nn_model_input(n->model, ti, &t) && t.rank == 4 ? (int)t.dims[3]
                                                                                 : 0;
        if (erank == 2 && edims[0] == SWAP_SOURCE_DIM && edims[1] == SWAP_SOURCE_DIM)
            kind = KIND_INSWAPPER;
        else if (S == kinds[KIND_INSWAPPER].size)
            kind = KIND_INSWAPPER; /* and the emap check below says what is missing */
        else if (S == 256) {
            st = ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: a 256x256 swapper could be hyperswap or "
                               "simswap, and the file name says neither; pass "
                               "hyperswap:PATH or simswap:PATH", n->path);
            goto fail;
        } else {
            char names[512];
            st = ffu_error_set(FFU_ERR_FORMAT, "%s: not a swapper in FaceFusion's conventions "
                               "(inputs `source` [1,512] and `target` [1,3,S,S]; this file has "
                               "%s)", n->path,
                               swap_input_names(n->model, names, sizeof names));
            goto fail;
        }
    }
    n->kind = (swap_kind)kind;
    if ((st = check_inputs(n)))
        goto fail;
    if (n->kind == KIND_INSWAPPER) {
        if ((st = check_emap(n, emap, edims, erank, ename)))
            goto fail;
        n->emap = emap;
        n->emap_rows = SWAP_SOURCE_DIM;
        emap = NULL;
    }
    free(emap);
    emap = NULL;

    if ((st = ffu_norm_preset(&n->norm, kinds[kind].norm)))
        goto fail;
    /* pixel = round(y / scale + mean) reproduces clip(y * out_scale + out_bias) * 255 */
    for (int c = 0; c < 3; c++) {
        n->denorm.scale[c] = 1.0f / (255.0f * kinds[kind].out_scale);
        n->denorm.mean[c] = 255.0f * kinds[kind].out_bias;
    }
    if ((st = swap_session_create(n->model, run, &n->session)))
        goto fail;
    int S = kinds[kind].size;
    int64_t sd[2] = {1, n->dim}, td[4] = {1, 3, S, S};
    if ((st = ffu_nn_session_set_input_shape(n->session, n->in_source, 2, sd)) ||
        (st = ffu_nn_session_set_input_shape(n->session, n->in_target, 4, td)))
        goto fail;
    *out = n;
    return FFU_OK;
fail:
    free(emap);
    swap_net_close(n);
    return st;
}

void swap_net_close(swap_net *n)
{
    if (!n)
        return;
    ffu_nn_session_destroy(n->session);
    ffu_nn_model_destroy(n->model);
    ffu_image_release(&n->aligned);
    free(n->emap);
    free(n);
}

const char *swap_net_kind(const swap_net *n) { return n ? kinds[n->kind].name : NULL; }
const char *swap_net_template(const swap_net *n) { return n ? kinds[n->kind].tmpl : NULL; }
int swap_net_size(const swap_net *n) { return n ? kinds[n->kind].size : 0; }
int swap_net_embedding_dim(const swap_net *n) { return n ? n->dim : 0; }

const ffu_image *swap_net_aligned(const swap_net *n)
{
    return n && n->aligned.data[0] ? &n->aligned : NULL;
}

/* ---- running ------------------------------------------------------------------------ */

ffu_status swap_net_source(const swap_net *n, const float *embedding, int dim, float *out)
{
    if (!n || !embedding || !out)
        return ffu_error_set(FFU_ERR_INVALID, "swap_net_source: bad arguments");
    int want = n->emap ? n->emap_rows : n->dim;
    if (dim != want)
        return ffu_error_set(FFU_ERR_INVALID, "%s takes a %d-d identity embedding, got %d-d "
                             "(use an embedder of the ArcFace convention)",
                             kinds[n->kind].name, want, dim);
    double ss = 0;
    for (int i = 0; i < dim; i++)
        ss += (double)embedding[i] * embedding[i];
    if (!(ss > 0) || !isfinite(ss))
        return ffu_error_set(FFU_ERR_INVALID, "source embedding is %s",
                             ss > 0 ? "not finite" : "zero");
    double inv = 1.0 / sqrt(ss);
    if (!n->emap) {
        for (int i = 0; i < dim; i++)
            out[i] = (float)(embedding[i] * inv);
        return FFU_OK;
    }
    /* (e . emap) / |e|: row vector times the rows x dim matrix */
    for (int j = 0; j < n->dim; j++) {
        double acc = 0;
        for (int i = 0; i < dim; i++)
            acc += (double)embedding[i] * n->emap[(size_t)i * n->dim + j];
        out[j] = (float)(acc * inv);
    }
    return FFU_OK;
}

ffu_status swap_net_run(swap_net *n, const ffu_image *frame, const ffu_face *target,
                        const float *source, ffu_image *crop, double m[6])
{
    if (m)
        memset(m, 0, 6 * sizeof *m);
    if (!n || !frame || !target || !source || !crop || !m)
        return ffu_error_set(FFU_ERR_INVALID, "swap_net_run: bad arguments");
    if (!frame->data[0] || frame->fmt != FFU_PIX_RGB24)
        return ffu_error_set(FFU_ERR_INVALID, "swap_net_run: the frame must be RGB24, not %s",
                             ffu_pixfmt_name(frame->fmt));
    for (int i = 0; i < 2 * FFU_FACE_NUM_KPS; i++)
        if (!isfinite(target->kps[i]))
            return ffu_error_set(FFU_ERR_INVALID, "target keypoint %d is not finite", i / 2);
    const int S = kinds[n->kind].size;
    double fwd[6];
    ffu_status st = ffu_face_align(frame, target->kps, kinds[n->kind].tmpl, S, &n->aligned, fwd);
    if (st)
        return st;
    ffu_nn_tensor t;
    if ((st = ffu_nn_session_input(n->session, n->in_target, &t)))
        return st;
    ffu_tensor_view v = {(float *)t.data, FFU_LAYOUT_NCHW, 1, 3, S, S};
    if ((st = ffu_image_to_tensor(&n->aligned, &n->norm, &v, 0)))
        return st;
    if ((st = ffu_nn_session_input(n->session, n->in_source, &t)))
        return st;
    if (t.nbytes != (size_t)n->dim * sizeof(float))
        return ffu_error_set(FFU_ERR_INTERNAL, "source input holds %zu bytes", t.nbytes);
    memcpy(t.data, source, (size_t)n->dim * sizeof(float));
    if ((st = ffu_nn_session_run(n->session)))
        return st;
    ffu_nn_tensor o;
    if ((st = ffu_nn_session_output(n->session, n->out_index, &o)))
        return st;
    if (o.dtype != FFU_DTYPE_F32 || o.rank != 4 || o.dims[0] != 1 || o.dims[1] != 3 ||
        o.dims[2] != S || o.dims[3] != S) {
        char ds[96];
        return ffu_error_set(FFU_ERR_FORMAT, "%s: the output is %s %s, want f32 [1,3,%d,%d] (%s)",
                             kinds[n->kind].name, ffu_dtype_name(o.dtype),
                             swap_dims_str(&o, ds, sizeof ds), S, S, n->path);
    }
    if (!crop->data[0] || crop->fmt != FFU_PIX_RGB24 || crop->width != S || crop->height != S) {
        ffu_image_release(crop);
        if ((st = ffu_image_create(crop, FFU_PIX_RGB24, S, S)))
            return st;
    }
    ffu_tensor_view ov = {(float *)o.data, FFU_LAYOUT_NCHW, 1, 3, S, S};
    if ((st = ffu_tensor_to_image(&ov, 0, &n->denorm, crop)))
        return st;
    memcpy(m, fwd, sizeof fwd);
    return FFU_OK;
}

/* ---- helpers shared with enhance.c and occlusion.c ----------------------------------- */

const char *swap_spec_split(const char *spec, const char *const *kind_list, char *kind,
                            size_t kind_len)
{
    if (kind_len)
        kind[0] = 0;
    const char *colon = strchr(spec, ':');
    if (!colon)
        return spec;
    size_t n = (size_t)(colon - spec);
    int known = n == 4 && !strncmp(spec, "onnx", 4);
    for (int i = 0; kind_list && kind_list[i] && !known; i++)
        known = strlen(kind_list[i]) == n && !strncmp(spec, kind_list[i], n);
    if (!known || n >= kind_len)
        return spec;
    memcpy(kind, spec, n);
    kind[n] = 0;
    return colon + 1;
}

const char *swap_dims_str(const ffu_nn_tensor *t, char *buf, size_t len)
{
    if (!len)
        return buf;
    if (t->rank < 0) {
        snprintf(buf, len, "(no shape)");
        return buf;
    }
    size_t k = 0;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int i = 0; i < t->rank && k < len; i++) {
        if (t->dims[i] < 0)
            k += (size_t)snprintf(buf + k, len - k, "%s?", i ? "," : "");
        else
            k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "",
                                  (long long)t->dims[i]);
    }
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

const char *swap_input_names(const ffu_nn_model *m, char *buf, size_t len)
{
    if (!len)
        return buf;
    buf[0] = 0;
    size_t k = 0;
    int n = ffu_nn_model_num_inputs(m);
    for (int i = 0; i < n && k < len; i++) {
        ffu_nn_tensor t;
        if (ffu_nn_model_input(m, i, &t))
            continue;
        k += (size_t)snprintf(buf + k, len - k, "%s`%s`", i ? ", " : "", t.name ? t.name : "");
    }
    if (n == 0)
        snprintf(buf, len, "none");
    return buf;
}

ffu_status swap_model_load(const char *what, const char *path, ffu_nn_model **out)
{
    *out = NULL;
    struct stat sb;
    if (!path || !*path)
        return ffu_error_set(FFU_ERR_INVALID, "no %s model path given", what);
    if (stat(path, &sb) || !S_ISREG(sb.st_mode))
        return ffu_error_set(FFU_ERR_NOT_FOUND, "%s model file %s not found", what, path);
    ffu_status st = ffu_nn_model_load(path, out);
    if (st) {
        char why[384]; /* copied: ffu_error_set rewrites the buffer it reads */
        snprintf(why, sizeof why, "%s", ffu_error_message());
        return ffu_error_set(st, "%s model: %s", what, why);
    }
    return FFU_OK;
}

ffu_status swap_session_create(const ffu_nn_model *m, const ffu_face_model_opts *run,
                               ffu_nn_session **out)
{
    ffu_nn_session_opts so;
    face_model_session_opts(run, &so);
    return ffu_nn_session_create(m, &so, out);
}
