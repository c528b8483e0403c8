/* Writes a dynamically quantised copy of an ONNX model, in the form ONNX Runtime's
 * quantize_dynamic gives Conv layers: every Conv whose weights are an f32 initializer
 * becomes
 *     DynamicQuantizeLinear(x) -> xq, xs, xz
 *     ConvInteger(xq, wq, xz, wz) -> Cast to f32 -> Mul by xs * ws [-> Add the bias]
 * with the weights as int8 codes, symmetric (zero point 0, codes -127..127), one scale
 * for the whole tensor (ONNX Runtime's default) or, with --per-channel, one per output
 * channel; with --u8, as uint8 codes over the weights' range (0 included), one scale
 * and the zero point that puts 0 on a code (ONNX Runtime's QUInt8 weight type). The repository
 * holds no quantised model and Python's quantisation tools are not a dependency; this makes the
 * benchmark's and the tests' quantised models from the f32 files (docs/NN_ONNX.md "Quantised
 * models").
 *
 *   quantize_onnx [--per-channel | --u8] IN.onnx OUT.onnx
 *
 * A tool: it trusts its input file no more than needed to fail cleanly. The new nodes
 * and tensors point into the unpacked model (names, Conv attributes) but are the
 * tool's own allocations: the model gets its own arrays back before protobuf-c frees
 * it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

typedef struct grow {
    void **v;
    size_t n, cap;
} grow;

static void push(grow *a, void *p)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        void **v = realloc(a->v, a->cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "quantize_onnx: out of memory\n");
            exit(1);
        }
        a->v = v;
    }
    a->v[a->n++] = p;
}

/* Everything the tool allocates for the new nodes and tensors, freed at the end. */
static grow owned;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "quantize_onnx: out of memory\n");
        exit(1);
    }
    push(&owned, p);
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = xcalloc(strlen(s) + 1, 1);
    memcpy(p, s, strlen(s));
    return p;
}

static char *name2(const char *base, const char *tag)
{
    char *p = xcalloc(strlen(base) + strlen(tag) + 2, 1);
    sprintf(p, "%s_%s", base, tag);
    return p;
}

static Onnx__TensorProto *find_init(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name))
            return g->initializer[i];
    return NULL;
}

/* The f32 values of an initializer (raw_data or float_data), or NULL. */
static const float *f32_values(const Onnx__TensorProto *t, size_t *count)
{
    if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) return NULL;
    size_t n = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || (t->dims[i] > 0 && n > ((size_t)1 << 31) / (size_t)t->dims[i]))
            return NULL; /* no weight is 2^31 values: a hostile file */
        n *= (size_t)t->dims[i];
    }
    *count = n;
    if (t->has_raw_data && t->raw_data.len == n * sizeof(float)) {
        float *v = xcalloc(n, sizeof *v);
        memcpy(v, t->raw_data.data, n * sizeof *v);
        return v;
    }
    return t->n_float_data == n ? t->float_data : NULL;
}

static Onnx__TensorProto *tensor(const char *name, int type, const int64_t *dims, size_t rank,
                                 const void *data, size_t bytes)
{
    Onnx__TensorProto *t = xcalloc(1, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = xstrdup(name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = rank;
    t->dims = xcalloc(rank, sizeof *t->dims);
    memcpy(t->dims, dims, rank * sizeof *dims);
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = xcalloc(bytes, 1);
    memcpy(t->raw_data.data, data, bytes);
    return t;
}

static Onnx__NodeProto *node(const char *op, const char *name, char **in, size_t nin, char **out,
                             size_t nout)
{
    Onnx__NodeProto *n = xcalloc(1, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = xstrdup(op);
    n->name = xstrdup(name);
    n->n_input = nin;
    n->input = xcalloc(nin, sizeof *n->input);
    for (size_t i = 0; i < nin; i++)
        n->input[i] = in[i];
    n->n_output = nout;
    n->output = xcalloc(nout, sizeof *n->output);
    for (size_t i = 0; i < nout; i++)
        n->output[i] = out[i];
    return n;
}

/* Conv node c -> its quantised nodes in `nodes`, new initializers in `inits`; 0 when c
 * is left as it is. */
typedef struct qopts {
    int per_channel, u8;
} qopts;

static int quantize_conv(const Onnx__GraphProto *g, Onnx__NodeProto *c, const qopts *op,
                         grow *nodes, grow *inits)
{
    if (c->n_input < 2 || c->n_output != 1) return 0;
    const Onnx__TensorProto *wt = find_init(g, c->input[1]);
    const Onnx__TensorProto *bt =
        c->n_input > 2 && c->input[2][0] ? find_init(g, c->input[2]) : NULL;
    size_t count, bcount = 0;
    const float *w = wt ? f32_values(wt, &count) : NULL;
    const float *b = bt ? f32_values(bt, &bcount) : NULL;
    if (!w || wt->n_dims < 3 || wt->dims[0] < 1 || (bt && (!b || bcount != (size_t)wt->dims[0])) ||
        (c->n_input > 2 && c->input[2][0] && !bt))
        return 0;
    int64_t O = wt->dims[0];
    size_t per = count / (size_t)O;
    uint8_t *q = xcalloc(count, 1);
    float *scale = xcalloc((size_t)O, sizeof *scale);
    uint8_t zero[1] = {0};
    int pc = op->per_channel;
    for (int64_t o = 0; o < (pc ? O : 1); o++) {
        float mn = 0, mx = 0;
        size_t lo = pc ? (size_t)o * per : 0, hi = pc ? lo + per : count;
        for (size_t i = lo; i < hi; i++)
            mn = fminf(mn, w[i]), mx = fmaxf(mx, w[i]);
        if (op->u8) {
            scale[o] = mx > mn ? (mx - mn) / 255.0f : 1.0f;
            zero[0] = (uint8_t)fminf(255, fmaxf(0, nearbyintf(-mn / scale[o])));
        } else {
            float m = fmaxf(mx, -mn);
            scale[o] = m > 0 ? m / 127.0f : 1.0f;
        }
    }
    for (size_t i = 0; i < count; i++) {
        float v = nearbyintf(w[i] / scale[pc ? i / per : 0]);
        if (op->u8)
            q[i] = (uint8_t)fminf(255, fmaxf(0, v + zero[0]));
        else
            q[i] = (uint8_t)(int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
    }
    int qt = op->u8 ? ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 : ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
    const char *y = c->output[0];
    char *xq = name2(y, "xq"), *xs = name2(y, "xs"), *xz = name2(y, "xz"), *wq = name2(y, "wq"),
         *ws = name2(y, "ws"), *wz = name2(y, "wz"), *acc = name2(y, "acc"),
         *accf = name2(y, "accf"), *sc = name2(y, "scale"), *yb = name2(y, "nobias");
    int64_t sdims[4] = {1, O, 1, 1}, one = 1;
    push(inits, tensor(wq, qt, wt->dims, wt->n_dims, q, count));
    push(inits,
         pc ? tensor(ws, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, sdims, 4, scale,
                     (size_t)O * sizeof(float))
            : tensor(ws, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, &one, 0, scale, sizeof(float)));
    /* one zero point either way: ONNX Runtime 1.30's ConvInteger takes no other */
    push(inits, tensor(wz, qt, &one, 0, zero, 1));
    char *dq_out[3] = {xq, xs, xz}, *ci_in[4] = {xq, wq, xz, wz};
    push(nodes,
         node("DynamicQuantizeLinear", name2(y, "dq"), (char *[]){c->input[0]}, 1, dq_out, 3));
    Onnx__NodeProto *ci = node("ConvInteger", c->name ? c->name : y, ci_in, 4, &acc, 1);
    ci->n_attribute = c->n_attribute;
    ci->attribute = c->attribute;
    push(nodes, ci);
    Onnx__NodeProto *cast = node("Cast", name2(y, "cast"), &acc, 1, &accf, 1);
    Onnx__AttributeProto *to = xcalloc(1, sizeof *to);
    onnx__attribute_proto__init(to);
    to->name = xstrdup("to");
    to->has_type = 1;
    to->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    to->has_i = 1;
    to->i = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    cast->n_attribute = 1;
    cast->attribute = xcalloc(1, sizeof *cast->attribute);
    cast->attribute[0] = to;
    push(nodes, cast);
    push(nodes, node("Mul", name2(y, "scales"), (char *[]){xs, ws}, 2, &sc, 1));
    if (!bt) {
        push(nodes, node("Mul", name2(y, "mul"), (char *[]){accf, sc}, 2, c->output, 1));
        return 1;
    }
    char *bias = name2(y, "bias");
    push(inits, tensor(bias, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, sdims, 4, b,
                       (size_t)O * sizeof(float)));
    push(nodes, node("Mul", name2(y, "mul"), (char *[]){accf, sc}, 2, &yb, 1));
    push(nodes, node("Add", name2(y, "add"), (char *[]){yb, bias}, 2, c->output, 1));
    return 1;
}

static int used(const grow *nodes, const char *name)
{
    for (size_t i = 0; i < nodes->n; i++) {
        const Onnx__NodeProto *n = nodes->v[i];
        for (size_t j = 0; j < n->n_input; j++)
            if (!strcmp(n->input[j], name)) return 1;
    }
    return 0;
}

static int usage(FILE *f, const char *me, int status)
{
    fprintf(f, "usage: %s [--per-channel | --u8] IN.onnx OUT.onnx\n", me);
    if (status == 0)
        fputs("\nWrites IN's dynamically quantised copy: every Conv with f32 weights as\n"
              "DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul [-> Add], as ONNX\n"
              "Runtime's quantize_dynamic does. Weights int8 with one scale per tensor\n"
              "(default) or per output channel (--per-channel), or uint8 with a zero\n"
              "point (--u8).\n",
              f);
    return status;
}

int main(int argc, char **argv)
{
    qopts op = {0};
    int a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "--per-channel"))
            op.per_channel = 1;
        else if (!strcmp(argv[a], "--u8"))
            op.u8 = 1;
        else if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help"))
            return usage(stdout, argv[0], 0);
        else
            break;
    }
    /* ONNX Runtime 1.30's ConvInteger takes one weight zero point per tensor only */
    if (argc - a != 2 || (op.u8 && op.per_channel)) {
        return usage(stderr, argv[0], 2);
    }
    const char *inp = argv[a], *outp = argv[a + 1];
    FILE *f = fopen(inp, "rb");
    if (!f) {
        fprintf(stderr, "quantize_onnx: cannot open %s\n", inp);
        return 1;
    }
    unsigned char *data = NULL, chunk[65536];
    size_t size = 0;
    for (size_t r; (r = fread(chunk, 1, sizeof chunk, f)) > 0;) {
        unsigned char *p = realloc(data, size + r);
        if (!p) return fprintf(stderr, "quantize_onnx: out of memory\n"), 1;
        memcpy(p + size, chunk, r);
        data = p;
        size += r;
    }
    fclose(f);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    if (!m || !m->graph) {
        fprintf(stderr, "quantize_onnx: %s is not an ONNX model\n", inp);
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        free(data);
        return 1;
    }
    Onnx__GraphProto *g = m->graph;
    grow nodes = {0}, inits = {0};
    int done = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        if (n->op_type && !strcmp(n->op_type, "Conv") && (!n->domain || !n->domain[0]) &&
            quantize_conv(g, n, &op, &nodes, &inits))
            done++;
        else
            push(&nodes, n);
    }
    /* the f32 weights that no node reads any more are dropped */
    for (size_t i = 0; i < g->n_initializer; i++)
        if (used(&nodes, g->initializer[i]->name)) push(&inits, g->initializer[i]);
    size_t n_node = g->n_node, n_init = g->n_initializer;
    Onnx__NodeProto **node0 = g->node;
    Onnx__TensorProto **init0 = g->initializer;
    g->n_node = nodes.n;
    g->node = (Onnx__NodeProto **)nodes.v;
    g->n_initializer = inits.n;
    g->initializer = (Onnx__TensorProto **)inits.v;
    /* DynamicQuantizeLinear came with opset 11; Conv is the same from 1 to 11 */
    for (size_t i = 0; i < m->n_opset_import; i++) {
        Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if ((!o->domain || !o->domain[0]) && o->version < 11) o->version = 11;
    }
    size_t out_size = onnx__model_proto__get_packed_size(m);
    unsigned char *out = xcalloc(out_size, 1);
    onnx__model_proto__pack(m, out);
    f = fopen(outp, "wb");
    int bad = !f || fwrite(out, 1, out_size, f) != out_size;
    if (f && fclose(f) != 0) bad = 1;
    if (bad)
        fprintf(stderr, "quantize_onnx: cannot write %s\n", outp);
    else
        printf("%s: %d Conv layers quantised (%s weights, %s scales) -> %s\n", inp, done,
               op.u8 ? "u8" : "i8", op.per_channel ? "per-channel" : "per-tensor", outp);
    g->n_node = n_node, g->node = node0;
    g->n_initializer = n_init, g->initializer = init0;
    onnx__model_proto__free_unpacked(m, NULL);
    for (size_t i = 0; i < owned.n; i++)
        free(owned.v[i]);
    free(owned.v), free(nodes.v), free(inits.v), free(data);
    return bad;
}
