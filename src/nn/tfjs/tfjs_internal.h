/* Private to the TF.js loader: the loading context that tfjs_load.c (JSON, weights
 * manifest, graph order, inputs and outputs) shares with tfjs_ops.c (one translator per
 * TF op), and the helpers the translators use to read attributes, constants and emit
 * IR nodes. */
#ifndef FFU_NN_TFJS_INTERNAL_H
#define FFU_NN_TFJS_INTERNAL_H

#include "tfjs.h"

/* How a weight's value is derived from the stored bytes. */
typedef enum tf_store {
    TF_STORE_F32,
    TF_STORE_F16,  /* IEEE half, decoded to f32 */
    TF_STORE_U8Q,  /* q * scale + min */
    TF_STORE_U16Q, /* q * scale + min */
    TF_STORE_I32,
    TF_STORE_BOOL,
} tf_store;

/* Converted forms of a weight that translators ask for; each is built once. */
enum {
    TF_ROLE_RAW,   /* as stored (f32, i32 or bool) */
    TF_ROLE_OIHW,  /* Conv2D filter HWIO -> OIHW */
    TF_ROLE_DW,    /* depthwise filter [kh,kw,C,M] -> [C*M,1,kh,kw] */
    TF_ROLE_NCHW,  /* an NHWC-broadcastable per-channel constant -> [1,C,1,1] layout */
    TF_ROLE_COUNT,
};

typedef struct tf_weight {
    const char *name;
    ffu_dtype dtype;   /* value type after decoding: f32, i32 or bool */
    nn_shape shape;
    tf_store store;
    const uint8_t *src; /* stored bytes inside the weights buffer */
    size_t nbytes;      /* stored byte count */
    float scale, min;   /* uint8 / uint16 quantisation */
    int tensor[TF_ROLE_COUNT]; /* IR constant per role, -1 until built */
} tf_weight;

typedef struct tf_node {
    const char *name, *op;
    const ffu_json *attr; /* may be NULL */
    int ninputs;          /* data inputs ("^ctrl" inputs are dropped) */
    int *src;             /* producing node of each data input */
    int *port;            /* output index of each data input */
    int weight;           /* Const: index into weights, else -1 */
} tf_node;

typedef struct tf_ctx {
    nn_graph *g;
    tf_node *nodes;
    int nnodes;
    tf_weight *weights;
    int nweights;
    size_t decoded; /* constant bytes built so far (capped by NN_TFJS_MAX_DECODED) */
    char *nbuf;     /* name scratch */
    size_t ncap;
    void *wbuf; /* a weight decoded before it is rearranged (tf_weight_tensor) */
    size_t wcap;
} tf_ctx;

/* Translates TF node ni into IR nodes whose final tensors are named like the TF
 * outputs ("name", "name:1"). FFU_ERR_UNSUPPORTED for ops it does not know. */
ffu_status tf_translate(tf_ctx *c, int ni);

/* ---- helpers (tfjs_load.c) ---------------------------------------------------------- */

/* Reads a weightsManifest list (NULL = no weights) over the concatenated weight bytes
 * into c->weights, sorted by name; the bytes must be exactly what it describes. */
ffu_status tf_parse_manifest(tf_ctx *c, const ffu_json *manifest, const uint8_t *weights,
                             size_t weights_len);
/* The weight with this name, or NULL. */
tf_weight *tf_find_weight(tf_ctx *c, const char *name);

/* "node" or "node#suffix" in the context's scratch (valid until the next call). */
const char *tf_name(tf_ctx *c, int ni, const char *suffix);
/* Error naming the TF node: "TF.js node 'x' (Conv2D): reason". */
ffu_status tf_error(tf_ctx *c, int ni, ffu_status s, const char *fmt, ...) FFU_PRINTF(4, 5);

/* IR tensor of data input i (constants are built on first use). < 0 on error. */
int tf_input(tf_ctx *c, int ni, int i);
/* The weight behind data input i when it is a Const (seen through Identity), else NULL. */
const tf_weight *tf_input_weight(tf_ctx *c, int ni, int i);
/* IR constant of a weight in a role (built once). < 0 on error. */
int tf_weight_tensor(tf_ctx *c, const tf_weight *w, int role);
/* Integer values of a constant input (at most max): FFU_ERR_UNSUPPORTED if the input is
 * not constant, FFU_ERR_FORMAT if it is not integral or longer than max. */
ffu_status tf_input_ints(tf_ctx *c, int ni, int i, int64_t *v, int max, int *count);
/* Float values of a constant input into a malloc'd array (*count elements). */
ffu_status tf_input_floats(tf_ctx *c, int ni, int i, float **v, int64_t *count);

/* Adds a constant named tf_name(ni, suffix); data is copied. < 0 on error. */
int tf_const(tf_ctx *c, int ni, const char *suffix, ffu_dtype dt, const nn_shape *shape,
             const void *data);
/* A shared f32 scalar constant (rank 0). */
int tf_scalar_f32(tf_ctx *c, float v);

/* Attributes in TF's JSON form. The getters return the fallback when absent; a value of
 * the wrong form is an error (FFU_ERR_FORMAT naming the node). */
ffu_status tf_attr_int(tf_ctx *c, int ni, const char *key, int64_t fallback, int64_t *v);
ffu_status tf_attr_float(tf_ctx *c, int ni, const char *key, float fallback, float *v);
ffu_status tf_attr_bool(tf_ctx *c, int ni, const char *key, int fallback, int *v);
/* Decoded base64 string into buf (NUL-terminated); fallback when absent. */
ffu_status tf_attr_str(tf_ctx *c, int ni, const char *key, const char *fallback, char *buf,
                       size_t len);
/* list.i into v (at most max; *count = -1 when absent). */
ffu_status tf_attr_ints(tf_ctx *c, int ni, const char *key, int64_t *v, int max, int *count);
/* list.s into bufs[i] (each len bytes; at most max; *count = -1 when absent). */
ffu_status tf_attr_strs(tf_ctx *c, int ni, const char *key, char (*bufs)[32], int max,
                        int *count);
/* {"type": "DT_FLOAT"} -> ffu_dtype (FFU_DTYPE_UNDEFINED when absent). */
ffu_status tf_attr_type(tf_ctx *c, int ni, const char *key, ffu_dtype *t);

/* {"shape": {"dim": [...]}} -> shape (rank -1 when absent or unknown). */
ffu_status tf_attr_shape(tf_ctx *c, int ni, const char *key, nn_shape *s);

/* Base64 (standard alphabet, '=' padding optional) into out; *n = bytes written.
 * FFU_ERR_FORMAT on bad characters or when the result does not fit. */
ffu_status tf_base64_decode(const char *s, uint8_t *out, size_t cap, size_t *n);

#endif
