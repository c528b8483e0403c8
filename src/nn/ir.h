/* The graph IR of the inference engine, private to src/nn.
 *
 * A graph is a list of tensors (values) and nodes (ops), referring to each other by
 * index. Loaders (ONNX, TF.js) build it with the nn_graph_* calls below; passes rewrite
 * it; a session clones it, fixes the input shapes, infers every shape, folds constants,
 * plans memory and runs the nodes in order on a backend.
 *
 * Ownership: everything a graph holds (names, attributes, lists, constant data it was
 * asked to copy) lives in its arena and dies with nn_graph_destroy. Constant data
 * added with NN_BORROW points at memory that must outlive the graph (a session's
 * clone borrows the model's weights this way).
 *
 * Semantics of ops are ONNX's (src/nn/ops.def): NCHW for spatial ops, ONNX attribute
 * names and defaults. Shapes use -1 for a dimension not known yet. */
#ifndef FFU_NN_IR_H
#define FFU_NN_IR_H

#include "facefuse/nn.h"

/* ---- ops ------------------------------------------------------------------------------ */

typedef enum nn_op {
    NN_OP_NONE = 0,
#define NN_OP(e, name, def) NN_OP_##e,
#include "ops.def"
#undef NN_OP
    NN_OP_COUNT,
} nn_op;

const char *nn_op_name(nn_op op);          /* "Conv"; "?" when out of range */
nn_op nn_op_from_name(const char *name);    /* NN_OP_NONE if unknown */

/* ---- shapes ----------------------------------------------------------------------------- */

typedef struct nn_shape {
    int rank;                       /* 0 = scalar */
    int64_t d[FFU_NN_MAX_RANK];     /* -1 = unknown */
} nn_shape;

int64_t nn_shape_numel(const nn_shape *s);  /* -1 if any dim unknown; 1 for scalars */
int nn_shape_known(const nn_shape *s);      /* every dim >= 0 */
int nn_shape_equal(const nn_shape *a, const nn_shape *b);
/* numpy broadcasting of a and b into out; FFU_ERR_FORMAT if incompatible. */
ffu_status nn_shape_broadcast(const nn_shape *a, const nn_shape *b, nn_shape *out);
/* "1x3x224x224", "?" for unknown dims. Returns buf. */
char *nn_shape_str(const nn_shape *s, char *buf, size_t len);

/* ---- element types ---------------------------------------------------------------------- */

float nn_f16_to_f32(uint16_t h);
/* n halves stored little-endian at src to floats, as nn_f16_to_f32 gives them. */
void nn_f16_to_f32_n(const uint8_t *src, float *dst, size_t n);
uint16_t nn_f32_to_f16(float f);   /* round to nearest even */
float nn_bf16_to_f32(uint16_t h);
uint16_t nn_f32_to_bf16(float f);  /* round to nearest even */
/* Converts n elements between any two dtypes (ONNX Cast semantics: float -> int
 * truncates toward zero, -> bool is != 0). FFU_ERR_UNSUPPORTED for undefined types. */
ffu_status nn_convert(const void *src, ffu_dtype st, void *dst, ffu_dtype dt, size_t n);

/* ---- attributes ------------------------------------------------------------------------- */

typedef enum nn_attr_type {
    NN_ATTR_INT,
    NN_ATTR_FLOAT,
    NN_ATTR_STRING,
    NN_ATTR_TENSOR, /* a constant tensor of the graph (ONNX Constant's value) */
    NN_ATTR_INTS,
    NN_ATTR_FLOATS,
    NN_ATTR_STRINGS,
} nn_attr_type;

typedef struct nn_attr {
    const char *name;
    nn_attr_type type;
    int64_t i;
    float f;
    const char *s;
    int tensor;   /* NN_ATTR_TENSOR: tensor index */
    int n;        /* element count of a list */
    int64_t *ints;
    float *floats;
    const char **strings;
} nn_attr;

/* ---- fused activations (set by the fusion pass on Conv, Gemm, MatMul, Add, ...) -------- */

typedef enum nn_act_kind {
    NN_ACT_NONE = 0,
    NN_ACT_RELU,
    NN_ACT_RELU6,
    NN_ACT_CLIP,       /* min(max(x, alpha), beta) */
    NN_ACT_LEAKY_RELU, /* x < 0 ? alpha * x : x */
    NN_ACT_PRELU,      /* x < 0 ? slope[c] * x : x, per channel (axis 1) */
    NN_ACT_SIGMOID,
    NN_ACT_TANH,
    NN_ACT_HARD_SWISH,
    NN_ACT_ELU,        /* x < 0 ? alpha * (exp(x) - 1) : x */
    NN_ACT_COUNT,
} nn_act_kind;

typedef struct nn_act {
    nn_act_kind kind;
    float alpha, beta;
    int slope; /* NN_ACT_PRELU: tensor index of the f32 slopes (numel 1 or C); else -1 */
} nn_act;

/* Applies an activation in place on f32 data laid out [outer][channels][inner]
 * (NCHW: outer = N, channels = C, inner = H*W). slope is the PReLU slope data (numel
 * 1 or channels) or NULL. */
void nn_act_apply(const nn_act *a, const float *slope, int64_t slope_numel, float *x,
                  int64_t outer, int64_t channels, int64_t inner);

/* ---- tensors and nodes -------------------------------------------------------------------- */

enum {
    NN_T_INPUT = 1,  /* a graph input, filled by the caller */
    NN_T_OUTPUT = 2, /* a graph output */
    NN_T_CONST = 4,  /* data holds the value (initializer, folded result) */
    NN_T_Q8 = 8,     /* f32 constant from 8-bit codes: q8 below (a kernel may rebuild it) */
    /* The shape is an upper bound: a node with NN_OPF_DATA_SHAPE (NonZero, ...) made
     * the value, or one downstream of such a node did. Sessions plan its buffer for the
     * bound, run the nodes that touch it on ref and infer their shapes again at each run
     * (docs/NN.md "Sizes known at run time"). While a session specialises a graph, a
     * small bounded value may also carry NN_T_CONST with its value at the bound (a
     * Shape of such a tensor), so that the shapes after it can be bounded; that is
     * dropped before planning. */
    NN_T_BOUNDED = 16,
};

typedef struct nn_tensor {
    const char *name;
    ffu_dtype dtype;
    nn_shape shape;
    int flags;     /* NN_T_* */
    void *data;    /* NN_T_CONST: the value, nbytes long */
    size_t nbytes;
    /* NN_T_Q8: every value was made as (float)q * q8_scale + q8_min, q in 0..255 (a
     * uint8-quantised TF.js weight), then perhaps scaled per output channel by a fold
     * (rewrite.c); whoever uses this checks the values bit for bit */
    float q8_scale, q8_min;
    int producer;  /* node index, -1 for inputs and constants */
    /* planning state, owned by the session (see plan.c) */
    int64_t offset;  /* byte offset in the session's activation arena; -1 = none */
    int alias;       /* tensor whose memory this one shares (Reshape, in place); -1 */
    int space;       /* memory space of its planned buffer (backend.h): 0 = host */
    /* set by a backend's prepare for the planner (backend.h) */
    int keep_to;     /* stays allocated, and nothing is written over it in place, at
                        least through node keep_to (0: no such need) */
    int unbacked;    /* never written or read by any run: gets no memory */
} nn_tensor;

/* Fused forms beyond node->act (set by the plan-time fusion in fuse.c):
 *   Conv inputs [X, W, B?, R]: R (input 3, f32, the output's shape) is the other
 *   operand of an Add that followed the Conv: Y = act(conv(X, W, B) + R). B may be
 *   omitted (-1) while R is present. R may share the output's buffer (the planner
 *   puts the output in place of a residual that dies there); kernels must read each
 *   residual element before writing that output element.
 *   Conv inputs [X, W, B?, -1, S] (never with R): S (input 4, f32, one value, known
 *   only at run time) is the other operand of a Mul that followed a Conv without
 *   bias, and B the constant of a per-channel Add after that Mul:
 *   Y = act((conv(X, W) * S) + B), two roundings in that order, so a convolution
 *   whose sums are exact (`_exact`, rewrite_integer.c) gives the unfused nodes'
 *   values bit for bit (a dynamically quantised layer's dequantisation and bias).
 *   Conv int attribute `_pool` = 2 (never with R): a MaxPool with 2x2 windows,
 *   stride 2, no padding (floor) follows the activation: Y = maxpool(act(conv(X))),
 *   so the output is half the convolution's size in H and W.
 *   Resize inputs [X, roi?, scales?, sizes?, R]: R (input 4, f32, the output's shape)
 *   is the other operand of an Add that followed the Resize: Y = act(resize(X) + R).
 *   As with a Conv's residual, R may share the output's buffer: kernels read each R
 *   element before writing that output element.
 * Reshape int-list attributes `_declared_in` and `_declared_out` (model.c, at load):
 *   the input's shape and the constant target at the model's declared input shapes, so
 *   that a session with free_dims can re-derive a target the exporter computed for that
 *   size (movement.c, nn_reshape_rederive). */
typedef struct nn_node {
    nn_op op;
    const char *name;
    int ninputs, noutputs;
    int *inputs;   /* tensor indices; -1 = omitted optional input */
    int *outputs;
    int nattrs;
    nn_attr *attrs;
    nn_act act;    /* fused activation on the (first) output, NN_ACT_NONE by default */
    /* execution state, owned by the session */
    int backend;   /* index of the backend that runs it */
    void *priv;    /* backend data for this node (a oneDNN primitive, ...) */
    int view;      /* its backend found the output to be input 0's bytes (prepare) */
} nn_node;

typedef struct nn_graph {
    ffu_arena *arena;
    nn_tensor *tensors;
    int ntensors, cap_tensors;
    nn_node *nodes;
    int nnodes, cap_nodes;
    int *inputs, ninputs, cap_inputs;    /* tensor indices, in declaration order */
    int *outputs, noutputs, cap_outputs;
    const char *format;   /* "onnx" or "tfjs" */
    const char *producer; /* producer name/version from the file, or "" */
    int opset;            /* ONNX default-domain opset; 0 for TF.js */
    /* name -> tensor index hash table (open addressing), maintained by add_tensor */
    int *name_slots;
    int cap_slots;
    /* 1 while no other graph borrows this one's constants and nothing else holds
     * pointers to them, so rewrites may change a constant where it lies (rewrite.c);
     * set by whoever knows it, around the load passes (model.c). 0 otherwise: a clone
     * shares its source's constants by pointer. */
    int exclusive;
} nn_graph;

ffu_status nn_graph_create(nn_graph **out);
void nn_graph_destroy(nn_graph *g);

/* Adds a tensor (names must be unique; "" makes a fresh unique name). shape may be
 * NULL (rank unknown: rank -1). Returns the index, or a negative ffu_status. */
int nn_graph_add_tensor(nn_graph *g, const char *name, ffu_dtype dtype, const nn_shape *shape);

enum { NN_COPY = 0, NN_BORROW = 1 };
/* Adds a constant tensor. mode NN_COPY copies data into the arena; NN_BORROW keeps the
 * pointer (the memory must outlive the graph). nbytes must equal numel * dtype size. */
int nn_graph_add_const(nn_graph *g, const char *name, ffu_dtype dtype, const nn_shape *shape,
                       const void *data, size_t nbytes, int mode);
/* Index of the tensor with this name, or -1. */
int nn_graph_find(const nn_graph *g, const char *name);

/* Adds a node; inputs may contain -1 for omitted optional inputs. Output tensors must
 * exist (their producer is set to the new node). Returns the node index or < 0. */
int nn_graph_add_node(nn_graph *g, nn_op op, const char *name, const int *inputs, int ninputs,
                      const int *outputs, int noutputs);
ffu_status nn_graph_mark_input(nn_graph *g, int tensor);
ffu_status nn_graph_mark_output(nn_graph *g, int tensor);

/* Attribute setters (the value is copied into the graph's arena). */
ffu_status nn_node_set_int(nn_graph *g, int node, const char *name, int64_t v);
ffu_status nn_node_set_float(nn_graph *g, int node, const char *name, float v);
ffu_status nn_node_set_string(nn_graph *g, int node, const char *name, const char *v);
ffu_status nn_node_set_ints(nn_graph *g, int node, const char *name, const int64_t *v, int n);
ffu_status nn_node_set_floats(nn_graph *g, int node, const char *name, const float *v, int n);
ffu_status nn_node_set_strings(nn_graph *g, int node, const char *name, const char *const *v,
                               int n);
ffu_status nn_node_set_tensor(nn_graph *g, int node, const char *name, int tensor);

/* Attribute getters: the attribute, or the fallback when absent. */
const nn_attr *nn_node_attr(const nn_node *n, const char *name);
int64_t nn_attr_int(const nn_node *n, const char *name, int64_t fallback);
float nn_attr_float(const nn_node *n, const char *name, float fallback);
const char *nn_attr_string(const nn_node *n, const char *name, const char *fallback);
/* The list and its length (*count = 0 and NULL when absent). */
const int64_t *nn_attr_ints(const nn_node *n, const char *name, int *count);
const float *nn_attr_floats(const nn_node *n, const char *name, int *count);

/* A Reshape's target for input shape s (rank r) from the shapes it had at the model's
 * declared input size: s0 (rank r) reshaped into t0 (rank q, every dim > 0). Dims are
 * grouped into the blocks whose products match in s0 and t0 (a reshape only merges and
 * splits contiguous dims); a block whose source dims did not change keeps its target
 * dims, a block with one target dim takes the product of its new source dims, and a
 * block of several source and target dims takes the change in its first target dim
 * when the others only split its innermost source dim, which did not change
 * (BlazeFace's heads: [1,16,16,32] -> [1,512,16], at 12 rows [1,384,16]). Anything
 * else is ambiguous. Returns 1 with t (rank q) filled, 0 when ambiguous. */
int nn_reshape_rederive(const int64_t *s0, const int64_t *s, int r, const int64_t *t0, int q,
                        int64_t *t);

/* The input / output tensor i of a node, or NULL when omitted or out of range. */
nn_tensor *nn_in(const nn_graph *g, const nn_node *n, int i);
nn_tensor *nn_out(const nn_graph *g, const nn_node *n, int i);

/* Records an error naming the node: "Conv 'conv1': pads must have 4 values". */
ffu_status nn_node_error(const nn_node *n, ffu_status s, const char *fmt, ...) FFU_PRINTF(3, 4);

/* A deep copy of the structure sharing constant data by pointer (NN_BORROW): the
 * source must outlive the copy, and must not be `exclusive` while it lives. Planning
 * state is reset. */
ffu_status nn_graph_clone(const nn_graph *src, nn_graph **out);

/* Node indices in an order where every node comes after the producers of its inputs;
 * FFU_ERR_FORMAT on cycles or tensors used before any producer. Rewrites g->nodes in
 * that order (and every tensor's producer). */
ffu_status nn_graph_toposort(nn_graph *g);

/* ---- op definitions --------------------------------------------------------------------- */

enum {
    NN_OPF_ELEMENTWISE = 1, /* output[i] depends on input[i] only (in-place candidate) */
    NN_OPF_VIEW = 2,        /* output is input 0's bytes with another shape (Reshape,
                               Flatten, Squeeze, Unsqueeze, Identity): no copy needed */
    NN_OPF_DATA_SHAPE = 4,  /* output sizes depend on input values (NonZero, Compress,
                               NonMaxSuppression, Unique): infer gives the exact shape
                               when the values it needs are known (constant, not
                               NN_T_BOUNDED), else an upper bound with NN_T_BOUNDED on the
                               outputs; run then writes the actual dims into its output
                               tensors (nn_out gives them writable), within the bound */
};

typedef struct nn_op_def {
    /* Sets dtype and shape of every output from the inputs. May read the data of
     * constant inputs (Reshape's shape). Errors name the node (nn_node_error):
     * FFU_ERR_UNSUPPORTED for dtypes or attribute values the op does not handle,
     * FFU_ERR_FORMAT for invalid ones. Leaves dims -1 when they depend on
     * non-constant data. */
    ffu_status (*infer)(nn_graph *g, nn_node *n);
    /* Reference kernel. in[i] / out[i] are data pointers (in[i] NULL for omitted
     * inputs), shapes and dtypes are those of the graph's tensors, scratch is
     * scratch_bytes() long. Must apply n->act when the op can carry one. */
    ffu_status (*run)(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                      void *scratch);
    /* Scratch the kernel needs for this node (NULL = none). */
    size_t (*scratch_bytes)(const nn_graph *g, const nn_node *n);
    int flags; /* NN_OPF_* */
} nn_op_def;

/* The definition of op, or NULL when it is not implemented. */
const nn_op_def *nn_op_get(nn_op op);

#define NN_OP(e, name, def) extern const nn_op_def nn_op_def_##def;
#include "ops.def"
#undef NN_OP

#endif
