/* Models: the public face of a loaded network. Picks the loader by content (an ONNX
 * protobuf, a TF.js model.json whose .bin shards are found from its weightsManifest,
 * or a face-api.js weights manifest), runs the load-time passes (passes.c), and answers questions about
 * the result: inputs, outputs, and a JSON summary with op counts, parameter bytes and
 * FLOPs at the declared shapes. A model is immutable once loaded, so sessions on many
 * threads may share it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nn_internal.h"

#include "onnx/onnx.h"
#include "tfjs/tfjs.h"
#include "tflite/tflite.h"

/* ---- files ------------------------------------------------------------------------------ */

/* The first character of a JSON text after a BOM and white space: '{' for a TF.js
 * model.json, '[' for a face-api.js weights manifest, anything else for ONNX. */
static int json_start(const void *data, size_t size)
{
    const unsigned char *p = data;
    size_t i = 0;
    if (size >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) i = 3; /* UTF-8 BOM */
    while (i < size && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
    return i < size ? p[i] : 0;
}

/* Bytes of one stored element of a TF.js manifest dtype; 0 when unknown. */
static size_t tfjs_dtype_bytes(const char *s)
{
    if (!s) return 0;
    if (!strcmp(s, "float32") || !strcmp(s, "int32")) return 4;
    if (!strcmp(s, "float16") || !strcmp(s, "uint16") || !strcmp(s, "int16")) return 2;
    if (!strcmp(s, "uint8") || !strcmp(s, "int8") || !strcmp(s, "bool")) return 1;
    return 0;
}

/* Bytes one manifest group's weights need, or -1 when a dtype or shape is unusable. */
static int64_t group_bytes(const ffu_json *weights)
{
    int64_t total = 0;
    for (size_t k = 0; k < ffu_json_len(weights); k++) {
        const ffu_json *w = ffu_json_at(weights, k);
        const ffu_json *q = ffu_json_get(w, "quantization");
        size_t es = tfjs_dtype_bytes(ffu_json_string(q ? ffu_json_get(q, "dtype")
                                                       : ffu_json_get(w, "dtype")));
        if (!es) return -1;
        const ffu_json *shape = ffu_json_get(w, "shape");
        int64_t n = 1;
        for (size_t d = 0; d < ffu_json_len(shape); d++) {
            int64_t v = ffu_json_int(ffu_json_at(shape, d), -1);
            if (v < 0 || (v && n > ((int64_t)1 << 40) / v)) return -1;
            n *= v;
        }
        total += n * (int64_t)es;
        if (total > ((int64_t)1 << 40)) return -1;
    }
    return total;
}

/* A manifest path must stay inside the model's folder. */
static int safe_rel_path(const char *p)
{
    if (!p || !*p || p[0] == '/') return 0;
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 2 && s[0] == '.' && s[1] == '.') return 0;
        if (!e) break;
        s = e + 1;
    }
    return 1;
}

/* Reads the .bin shards a model.json (or a face-api.js weights manifest, which is the
 * bare list) names, concatenated in manifest order. */
static ffu_status read_tfjs_weights(const char *json_path, const void *json, size_t json_size,
                                    void **out, size_t *out_size)
{
    *out = NULL;
    *out_size = 0;
    ffu_json *root = NULL;
    ffu_status st = ffu_json_parse(json, json_size, &root);
    if (st < 0) return ffu_error_prefix(st, json_path);
    char dir[4096];
    const char *slash = strrchr(json_path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - json_path + 1) : 0, json_path);
    const ffu_json *man =
        ffu_json_typeof(root) == FFU_JSON_ARRAY ? root : ffu_json_get(root, "weightsManifest");
    unsigned char *buf = NULL;
    size_t used = 0;
    if (ffu_json_typeof(man) != FFU_JSON_ARRAY) {
        st = ffu_error_set(FFU_ERR_FORMAT, "%s: no weightsManifest array", json_path);
        goto out;
    }
    for (size_t gi = 0; gi < ffu_json_len(man); gi++) {
        const ffu_json *grp = ffu_json_at(man, gi), *paths = ffu_json_get(grp, "paths");
        if (ffu_json_typeof(paths) != FFU_JSON_ARRAY) {
            st = ffu_error_set(FFU_ERR_FORMAT, "%s: weightsManifest[%zu] has no paths", json_path,
                               gi);
            goto out;
        }
        size_t group_start = used;
        for (size_t pi = 0; pi < ffu_json_len(paths); pi++) {
            const char *rel = ffu_json_string(ffu_json_at(paths, pi));
            if (!safe_rel_path(rel)) {
                st = ffu_error_set(FFU_ERR_FORMAT,
                                   "%s: weights path '%s' must be relative and stay in the "
                                   "model's folder",
                                   json_path, rel ? rel : "(not a string)");
                goto out;
            }
            char path[8192];
            snprintf(path, sizeof path, "%s%s", dir, rel);
            uint8_t *part;
            size_t psize;
            if ((st = ffu_file_read(path, NN_MAX_WEIGHTS_BYTES - used, &part, &psize)) < 0) {
                if (st == FFU_ERR_TOO_LARGE)
                    st = ffu_error_set(FFU_ERR_TOO_LARGE,
                                       "%s: weights files are over the %zu-byte limit", json_path,
                                       NN_MAX_WEIGHTS_BYTES);
                goto out;
            }
            if (!buf) { /* the first file is the buffer: most models have one */
                buf = part, used = psize;
                continue;
            }
            unsigned char *nb = realloc(buf, used + psize + 1);
            if (!nb) {
                free(part);
                st = ffu_error_set(FFU_ERR_NOMEM, "out of memory for TF.js weights");
                goto out;
            }
            buf = nb;
            memcpy(buf + used, part, psize);
            used += psize;
            free(part);
        }
        int64_t need = group_bytes(ffu_json_get(grp, "weights"));
        if (need >= 0 && (uint64_t)need != used - group_start) {
            if (ffu_json_len(paths) == 1)
                st = ffu_error_set(FFU_ERR_FORMAT,
                                   "%s: weights file '%s' is %zu bytes, the manifest needs %lld",
                                   json_path, ffu_json_string(ffu_json_at(paths, 0)),
                                   used - group_start, (long long)need);
            else
                st = ffu_error_set(FFU_ERR_FORMAT,
                                   "%s: the %zu weights files of group %zu hold %zu bytes, the "
                                   "manifest needs %lld",
                                   json_path, ffu_json_len(paths), gi, used - group_start,
                                   (long long)need);
            goto out;
        }
    }
    *out = buf;
    *out_size = used;
    buf = NULL;
out:
    free(buf);
    ffu_json_free(root);
    return st;
}

/* ---- loading ----------------------------------------------------------------------------- */

/* Notes on each Reshape of g with a constant target the shapes it has in sg (g at its
 * declared input shapes): `_declared_in` and `_declared_out` (ir.h), matched by output
 * tensor name (names are unique; sg may have folded or dropped nodes). */
static ffu_status note_reshapes(nn_graph *g, const nn_graph *sg)
{
    for (int i = 0; i < sg->nnodes; i++) {
        const nn_node *n = &sg->nodes[i];
        const nn_tensor *x = nn_in(sg, n, 0), *sh = nn_in(sg, n, 1), *y = nn_out(sg, n, 0);
        if (n->op != NN_OP_RESHAPE || !x || !sh || !y || !(sh->flags & NN_T_CONST) ||
            !nn_shape_known(&x->shape) || !nn_shape_known(&y->shape))
            continue;
        int t = nn_graph_find(g, y->name), k = t >= 0 ? g->tensors[t].producer : -1;
        if (k < 0 || g->nodes[k].op != NN_OP_RESHAPE) continue;
        ffu_status st;
        if ((st = nn_node_set_ints(g, k, "_declared_in", x->shape.d, x->shape.rank)) < 0 ||
            (st = nn_node_set_ints(g, k, "_declared_out", y->shape.d, y->shape.rank)) < 0)
            return st;
    }
    return FFU_OK;
}

static ffu_status compute_stats(ffu_nn_model *m)
{
    nn_graph *g = m->g;
    unsigned char *seen = calloc((size_t)(g->ntensors ? g->ntensors : 1), 1);
    if (!seen) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *n = &g->nodes[i];
        for (int j = 0; j <= n->ninputs; j++) {
            int t = j < n->ninputs ? n->inputs[j]
                                   : (n->act.kind == NN_ACT_PRELU ? n->act.slope : -1);
            if (t < 0 || seen[t] || !(g->tensors[t].flags & NN_T_CONST)) continue;
            seen[t] = 1;
            const nn_tensor *x = &g->tensors[t];
            m->param_bytes += x->nbytes;
            /* weights: floats, and the 8-bit integers of quantised models (not the i32
             * / i64 constants of shape arithmetic) */
            if (x->dtype == FFU_DTYPE_F32 || x->dtype == FFU_DTYPE_F16 ||
                x->dtype == FFU_DTYPE_BF16 || x->dtype == FFU_DTYPE_F64 ||
                x->dtype == FFU_DTYPE_I8 || x->dtype == FFU_DTYPE_U8)
                m->params += nn_shape_numel(&x->shape);
        }
    }
    free(seen);

    /* FLOPs at the declared shapes, dynamic dims taken as 1 */
    m->flops = -1;
    ffu_status st = FFU_OK;
    nn_shape *shapes = calloc((size_t)(m->ninputs ? m->ninputs : 1), sizeof(nn_shape));
    ffu_arena *arena = NULL;
    nn_graph *sg = NULL;
    int nfolded;
    if (!shapes || ffu_arena_create(&arena, 0) < 0) goto done;
    int declared = 1; /* every input dim declared */
    for (int i = 0; i < m->ninputs; i++) {
        shapes[i] = g->tensors[m->inputs[i]].shape;
        if (shapes[i].rank < 0) goto done;
        for (int k = 0; k < shapes[i].rank; k++)
            if (shapes[i].d[k] < 0) shapes[i].d[k] = 1, declared = 0;
    }
    int dd;
    if (nn_graph_specialize(g, shapes, NULL, m->ninputs, arena, &sg, &nfolded, &dd) < 0) goto done;
    if (declared && (st = note_reshapes(g, sg)) < 0) goto done;
    int64_t total = 0;
    for (int i = 0; i < sg->nnodes && total >= 0; i++) {
        int64_t f = nn_node_flops(sg, &sg->nodes[i]);
        total = f < 0 ? -1 : f > INT64_MAX - total ? INT64_MAX : total + f;
    }
    m->flops = total;
done:
    if (st >= 0) ffu_error_clear(); /* a model whose shapes depend on data has no count */
    nn_graph_destroy(sg);
    ffu_arena_destroy(arena);
    free(shapes);
    return st < 0 ? st : FFU_OK;
}

/* Passes, the input list and the statistics of a freshly loaded graph. */
static ffu_status finish(ffu_nn_model *m)
{
    ffu_status st;
    /* the loaders' own clones are gone and sessions come later: the passes may change
     * constants where they lie */
    m->g->exclusive = 1;
    st = nn_passes_run(m->g);
    m->g->exclusive = 0;
    if (st < 0) return st;
    m->inputs = malloc(sizeof(int) * (size_t)(m->g->ninputs ? m->g->ninputs : 1));
    if (!m->inputs) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < m->g->ninputs; i++)
        if (!(m->g->tensors[m->g->inputs[i]].flags & NN_T_CONST))
            m->inputs[m->ninputs++] = m->g->inputs[i];
    if (m->g->noutputs < 1) return ffu_error_set(FFU_ERR_FORMAT, "the model has no outputs");
    return compute_stats(m);
}

/* Takes ownership of data and weights (malloc'd) and frees them: every loader copies
 * what it keeps into the graph's arena (the TF.js ones decode each weight there), so a
 * file's bytes (6.4 MB of dlib-resnet's weights) do not live as long as the model. */
static ffu_status load_owned(void *data, size_t size, void *weights, size_t weights_size,
                             ffu_nn_model **out)
{
    ffu_status st;
    ffu_nn_model *m = calloc(1, sizeof *m);
    if (!m) {
        free(data), free(weights);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    if (nn_tflite_is(data, size))
        st = nn_tflite_load(data, size, &m->g);
    else if (json_start(data, size) == '[')
        st = nn_faceapi_load(data, size, weights, weights_size, &m->g);
    else if (json_start(data, size) == '{')
        st = nn_tfjs_load(data, size, weights, weights_size, &m->g);
    else
        st = nn_onnx_load(data, size, &m->g);
    free(data), free(weights);
    if (st < 0 || (st = finish(m)) < 0) {
        ffu_nn_model_destroy(m);
        return st;
    }
    *out = m;
    return FFU_OK;
}

ffu_status nn_model_from_graph(nn_graph *g, ffu_nn_model **out)
{
    *out = NULL;
    ffu_nn_model *m = calloc(1, sizeof *m);
    if (!m) {
        nn_graph_destroy(g);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    }
    m->g = g;
    ffu_status st = finish(m);
    if (st < 0) {
        ffu_nn_model_destroy(m);
        return st;
    }
    *out = m;
    return FFU_OK;
}

ffu_status nn_model_keep_outputs(const ffu_nn_model *m, const unsigned char *keep,
                                 ffu_nn_model **out)
{
    *out = NULL;
    ffu_nn_model *p = calloc(1, sizeof *p);
    if (!p) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    ffu_status st = nn_graph_clone(m->g, &p->g); /* borrows m's constants */
    if (st < 0) goto fail;
    nn_graph *g = p->g;
    /* unmark every dropped output first: one tensor may be listed as two outputs */
    for (int i = 0; i < g->noutputs; i++)
        if (!keep[i]) g->tensors[g->outputs[i]].flags &= ~NN_T_OUTPUT;
    int k = 0;
    for (int i = 0; i < g->noutputs; i++)
        if (keep[i]) {
            g->tensors[g->outputs[i]].flags |= NN_T_OUTPUT;
            g->outputs[k++] = g->outputs[i];
        }
    g->noutputs = k;
    if ((st = nn_remove_dead(g)) < 0) goto fail;
    p->inputs = malloc(sizeof(int) * (size_t)(m->ninputs ? m->ninputs : 1));
    if (!p->inputs) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (m->ninputs) memcpy(p->inputs, m->inputs, sizeof(int) * (size_t)m->ninputs);
    p->ninputs = m->ninputs;
    p->flops = -1;
    *out = p;
    return FFU_OK;
fail:
    ffu_nn_model_destroy(p);
    return st;
}

ffu_status ffu_nn_model_load_memory(const void *data, size_t size, const void *weights,
                                    size_t weights_size, ffu_nn_model **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_nn_model_load_memory: out is NULL");
    *out = NULL;
    if (!data || !size) return ffu_error_set(FFU_ERR_FORMAT, "the model data is empty");
    if (size > NN_MAX_MODEL_BYTES || weights_size > NN_MAX_WEIGHTS_BYTES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "the model is over the 2 GiB limit");
    void *d = malloc(size + 1), *w = weights_size ? malloc(weights_size) : NULL;
    if (!d || (weights_size && !w)) {
        free(d), free(w);
        return ffu_error_set(FFU_ERR_NOMEM, "out of memory copying the model");
    }
    memcpy(d, data, size);
    ((char *)d)[size] = 0;
    if (weights_size) memcpy(w, weights, weights_size);
    return load_owned(d, size, w, weights_size, out);
}

ffu_status ffu_nn_model_load(const char *path, ffu_nn_model **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_nn_model_load: out is NULL");
    *out = NULL;
    if (!path) return ffu_error_set(FFU_ERR_INVALID, "ffu_nn_model_load: path is NULL");
    uint8_t *data;
    void *weights = NULL;
    size_t size, wsize = 0;
    ffu_status st = ffu_file_read(path, NN_MAX_MODEL_BYTES, &data, &size);
    if (st < 0) return st;
    if ((json_start(data, size) == '{' || json_start(data, size) == '[') &&
        (st = read_tfjs_weights(path, data, size, &weights, &wsize)) < 0) {
        free(data);
        return st;
    }
    st = load_owned(data, size, weights, wsize, out);
    /* name the file, as given, in the one-line reason (the loaders see only bytes) */
    if (st < 0) ffu_error_prefix(st, path);
    return st;
}

void ffu_nn_model_destroy(ffu_nn_model *m)
{
    if (!m) return;
    nn_graph_destroy(m->g);
    free(m->inputs);
    free(m);
}

/* ---- queries ----------------------------------------------------------------------------- */

int ffu_nn_model_num_inputs(const ffu_nn_model *m) { return m ? m->ninputs : 0; }
int ffu_nn_model_num_outputs(const ffu_nn_model *m) { return m ? m->g->noutputs : 0; }

static void tensor_info(const nn_tensor *t, ffu_nn_tensor *info)
{
    memset(info, 0, sizeof *info);
    info->name = t->name;
    info->dtype = t->dtype;
    info->rank = t->shape.rank;
    for (int k = 0; k < t->shape.rank && k < FFU_NN_MAX_RANK; k++) info->dims[k] = t->shape.d[k];
    info->nbytes = nn_tensor_bytes(t);
}

ffu_status ffu_nn_model_input(const ffu_nn_model *m, int i, ffu_nn_tensor *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (!m || !info) return ffu_error_set(FFU_ERR_INVALID, "model or info is NULL");
    if (i < 0 || i >= m->ninputs)
        return ffu_error_set(FFU_ERR_INVALID, "input %d does not exist (the model has %d)", i,
                             m->ninputs);
    tensor_info(&m->g->tensors[m->inputs[i]], info);
    return FFU_OK;
}

ffu_status ffu_nn_model_output(const ffu_nn_model *m, int i, ffu_nn_tensor *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (!m || !info) return ffu_error_set(FFU_ERR_INVALID, "model or info is NULL");
    if (i < 0 || i >= m->g->noutputs)
        return ffu_error_set(FFU_ERR_INVALID, "output %d does not exist (the model has %d)", i,
                             m->g->noutputs);
    tensor_info(&m->g->tensors[m->g->outputs[i]], info);
    return FFU_OK;
}

int ffu_nn_model_find_input(const ffu_nn_model *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->ninputs; i++)
        if (!strcmp(m->g->tensors[m->inputs[i]].name, name)) return i;
    return -1;
}

int ffu_nn_model_find_output(const ffu_nn_model *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->g->noutputs; i++)
        if (!strcmp(m->g->tensors[m->g->outputs[i]].name, name)) return i;
    return -1;
}

static void write_tensors(ffu_jw *w, const nn_graph *g, const int *list, int n)
{
    ffu_jw_begin_array(w);
    for (int i = 0; i < n; i++) {
        const nn_tensor *t = &g->tensors[list[i]];
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "name"), ffu_jw_string(w, t->name);
        ffu_jw_key(w, "dtype"), ffu_jw_string(w, ffu_dtype_name(t->dtype));
        ffu_jw_key(w, "shape");
        if (t->shape.rank < 0) {
            ffu_jw_null(w);
        } else {
            ffu_jw_begin_array(w);
            for (int k = 0; k < t->shape.rank; k++) ffu_jw_int(w, t->shape.d[k]);
            ffu_jw_end_array(w);
        }
        ffu_jw_end_object(w);
    }
    ffu_jw_end_array(w);
}

ffu_status ffu_nn_model_describe(const ffu_nn_model *m, ffu_jw *w)
{
    if (!m || !w) return ffu_error_set(FFU_ERR_INVALID, "model or writer is NULL");
    const nn_graph *g = m->g;
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "format"), ffu_jw_string(w, g->format);
    ffu_jw_key(w, "producer"), ffu_jw_string(w, g->producer);
    ffu_jw_key(w, "opset"), ffu_jw_int(w, g->opset);
    ffu_jw_key(w, "nodes"), ffu_jw_int(w, g->nnodes);
    ffu_jw_key(w, "inputs"), write_tensors(w, g, m->inputs, m->ninputs);
    ffu_jw_key(w, "outputs"), write_tensors(w, g, g->outputs, g->noutputs);
    ffu_jw_key(w, "ops"), ffu_jw_begin_object(w);
    int counts[NN_OP_COUNT] = {0};
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op > 0 && g->nodes[i].op < NN_OP_COUNT) counts[g->nodes[i].op]++;
    for (int op = 1; op < NN_OP_COUNT; op++)
        if (counts[op]) ffu_jw_key(w, nn_op_name((nn_op)op)), ffu_jw_int(w, counts[op]);
    ffu_jw_end_object(w);
    ffu_jw_key(w, "params"), ffu_jw_int(w, m->params);
    ffu_jw_key(w, "param_bytes"), ffu_jw_int(w, (int64_t)m->param_bytes);
    ffu_jw_key(w, "flops");
    if (m->flops >= 0) ffu_jw_int(w, m->flops);
    else ffu_jw_null(w);
    ffu_jw_end_object(w);
    return ffu_jw_status(w);
}
