/* Private structures of the engine's runtime: what a model and a session hold, and the
 * calls that tie the loaders, the passes (passes.c), the memory planner (plan.c) and
 * the sessions (session.c) together. Nothing here is public API. */
#ifndef FFU_NN_INTERNAL_H
#define FFU_NN_INTERNAL_H

#include "backend.h"

/* Largest model file we read (ONNX's protobuf limit is 2 GiB). */
#define NN_MAX_MODEL_BYTES ((size_t)2 << 30)
/* Largest TF.js weights total (all shards together). */
#define NN_MAX_WEIGHTS_BYTES ((size_t)2 << 30)
/* Largest tensor constant folding may create (bigger results stay run-time nodes). */
#define NN_MAX_FOLD_BYTES ((size_t)64 << 20)

struct ffu_nn_model {
    nn_graph *g;          /* optimised, topologically sorted; immutable after load */
    int *inputs, ninputs; /* tensor indices of the non-constant graph inputs */
    int64_t flops;        /* at declared shapes (dynamic dims = 1); -1 if unknown */
    size_t param_bytes;   /* constant data the nodes read */
    int64_t params;       /* elements of float constants */
};

/* ---- model.c ----------------------------------------------------------------------- */

/* A model around a hand-built graph (tests, tools): runs the load passes. Takes
 * ownership of g, also on error. */
ffu_status nn_model_from_graph(nn_graph *g, ffu_nn_model **out);
/* A copy of m that computes only the outputs i with keep[i] set (in m's order), without
 * the nodes that only the others need; its constants are m's, so m must outlive it.
 * Sessions opened with ffu_nn_session_opts.outputs plan it. Statistics are not
 * counted (flops -1). */
ffu_status nn_model_keep_outputs(const ffu_nn_model *m, const unsigned char *keep,
                                 ffu_nn_model **out);

/* ---- passes.c ---------------------------------------------------------------------- */

/* The load pipeline on a freshly loaded graph: toposort -> nn_rewrite_patterns ->
 * nn_rewrite_transposes -> fold constants -> nn_fuse -> Identity removal -> dead-node
 * removal. The other engineers' passes run only when they are linked in. */
ffu_status nn_passes_run(nn_graph *g);
/* Retypes f16/bf16 constants and activations to f32, keeping declared f16 inputs and
 * outputs through Cast nodes at the edges (promote.c). */
ffu_status nn_promote_f16(nn_graph *g);

/* If every input of node i is constant (and it has a ref kernel), runs shape
 * inference and the ref kernel now and turns its outputs into constants whose data
 * lives in `arena`. *folded = 1 when it did; the node itself stays (dead-node removal
 * drops it). Results over NN_MAX_FOLD_BYTES are left alone. */
ffu_status nn_fold_node(nn_graph *g, int i, ffu_arena *arena, int *folded);
/* Node i, the Where that picks an ONNX If's output (`_if`), becomes an Identity of the
 * branch's value when the condition is a constant; the other branch's nodes then feed
 * nothing and go with the dead ones. Nothing happens otherwise. */
void nn_pick_if_branch(nn_graph *g, int i);
/* A node reading a bounded tensor (ir.h NN_T_BOUNDED) is not folded; when its results
 * are at most this many bytes it still runs once at the bound, a shadow value. */
#define NN_MAX_SHADOW_BYTES 4096

/* Whether n reads a tensor marked NN_T_BOUNDED. */
int nn_reads_bounded(const nn_graph *g, const nn_node *n);
/* Marks n's outputs bounded when it reads a bounded tensor, unbounded otherwise (an op
 * with NN_OPF_DATA_SHAPE decides in its infer). */
void nn_mark_bounded(nn_graph *g, const nn_node *n);

/* Drops the nodes no graph output depends on. */
ffu_status nn_remove_dead(nn_graph *g);
/* Removes the nodes whose keep[i] is 0, preserving order and fixing producers. */
void nn_graph_compact(nn_graph *g, const unsigned char *keep);

/* Floating-point operations of one node at its current (known) shapes; 0 for data
 * movement, -1 when shapes are unknown. Multiply-adds count as 2. */
int64_t nn_node_flops(const nn_graph *g, const nn_node *n);

/* ---- session.c --------------------------------------------------------------------- */

/* Clones src, gives its non-constant inputs the shapes in in_shapes (in the order of
 * the graph's input list, constant inputs skipped), infers every shape in order,
 * folds nodes whose inputs are all constant (data in fold_arena) and drops folded and
 * dead nodes. Every remaining tensor has a known shape. *nfolded counts folded nodes.
 * values (may be NULL): per input, NULL or data that makes the input a constant for
 * this plan ("bound" inputs: shapes that depend on an input's value). When a shape
 * stays unknown because it depends on non-constant data, *data_dependent is set
 * (with FFU_ERR_UNSUPPORTED naming the node). */
ffu_status nn_graph_specialize(const nn_graph *src, const nn_shape *in_shapes,
                               void *const *values, int nin, ffu_arena *fold_arena,
                               nn_graph **out, int *nfolded, int *data_dependent);
/* nn_graph_specialize without its last steps: the graph keeps the source's nodes and
 * tensor indices (folded nodes stay until dead-node removal), for batch.c's
 * node-by-node comparison. */
ffu_status nn_graph_specialize_shapes(const nn_graph *src, const nn_shape *in_shapes,
                                      void *const *values, int nin, ffu_arena *fold_arena,
                                      nn_graph **out, int *nfolded, int *data_dependent);
/* The last steps of a specialisation (batch.c specialises graphs itself): dead-node
 * removal and the fusions that need shapes, which renumber nodes and may change
 * tensors' shapes (channel padding). */
ffu_status nn_graph_specialize_finish(nn_graph *g);

/* A session whose main backend is `main` (made by the caller, owned by the session
 * from here on, also on error) with `ref` as the fallback; o->backend is ignored.
 * Tests use it to run a plan on a backend of their own (a fake device space). */
ffu_status nn_session_create_with(const ffu_nn_model *m, const ffu_nn_session_opts *o,
                                  nn_backend *main, ffu_nn_session **out);
/* The planned graph of a session (copies and spaces included), NULL before planning. */
const nn_graph *nn_session_graph(const ffu_nn_session *s);

/* ---- batch.c ------------------------------------------------------------------------ */

/* How a session computes a batch. Inputs whose declared dim 0 is 1 or dynamic carry
 * the batch; n is the largest dim 0 they were given (an input left at 1 is shared by
 * all items). */
typedef struct nn_batch_result {
    nn_graph *g;        /* the specialised graph to plan (owned by the caller) */
    int nfolded;        /* nodes folded while specialising it */
    int data_dependent; /* as nn_graph_specialize's (only when n == 1) */
    int n;              /* items per run */
    int looped;         /* 1: g is the batch-1 plan, to run n times over input slices */
    int as_declared;    /* 1: every batch input is dynamic and g is the model's own graph
                         * for n (its semantics, not n independent items) */
    char why[200];      /* looped: why the graph could not be re-batched */
} nn_batch_result;

/* 1 when an input declared with this shape carries the batch: its dim 0 is 1 or
 * dynamic (include/facefuse/nn.h, ffu_nn_session_create). */
static inline int nn_batch_carrier(const nn_shape *declared)
{
    return declared->rank >= 1 && (declared->d[0] == 1 || declared->d[0] < 0);
}

/* 1 when an input of this type and shape may be bound (its value fixed at planning)
 * in a model whose shapes depend on input values: integer tensors up to 4096 elements,
 * and 1-D or scalar float tensors up to 16 (Resize scales). */
static inline int nn_input_bindable(ffu_dtype dtype, const nn_shape *sh)
{
    int64_t n = nn_shape_numel(sh);
    if (n < 0) return 0;
    int is_float = dtype == FFU_DTYPE_F32 || dtype == FFU_DTYPE_F64 || dtype == FFU_DTYPE_F16 ||
                   dtype == FFU_DTYPE_BF16;
    return is_float ? sh->rank <= 1 && n <= 16 : n <= 4096;
}

/* Specialises the model for the input shapes like nn_graph_specialize, re-batching
 * graphs that bake a batch of 1 into constants (see batch.c); when that cannot be
 * proven right, res->looped is set and res->g is the batch-1 graph. item[i] (one per
 * model input) is set to 1 for inputs sliced per item. */
ffu_status nn_batch_specialize(const ffu_nn_model *m, const nn_shape *shapes, ffu_arena *fold,
                               unsigned char *item, nn_batch_result *res);

/* 1 when a session given these input shapes computes each item of its batch from that
 * item's inputs alone: always where some input declared with dim 0 = 1 carries the
 * batch (re-batched by the proof, or looped), and where every batch input is dynamic
 * (the model's own semantics) only when the proof passes on the graph as declared,
 * with no constant rewritten. For checks (the fuzzers'). */
int nn_batch_independent(const ffu_nn_model *m, const nn_shape *shapes);

/* ---- plan.c ------------------------------------------------------------------------- */

typedef struct nn_plan_stats {
    size_t arena_bytes;   /* all arenas together (every space) */
    size_t space_bytes[NN_SPACE_MAX]; /* the arena of each memory space (backend.h) */
    size_t io_bytes;      /* of which dedicated to graph inputs and outputs */
    size_t naive_bytes;   /* sum of all activation sizes (what no reuse would need) */
    int ntensors;         /* activations planned */
    int nviews;           /* view nodes that alias their input (not run) */
    int ninplace;         /* elementwise nodes writing over their input */
} nn_plan_stats;

/* Plans the activation memory of a specialised graph (every shape known, nodes in
 * execution order): sets tensor->offset (bytes into the 64-byte aligned arena of the
 * tensor's memory space, tensor->space; views and in-place never cross spaces) and
 * tensor->alias (root tensor whose memory a view or in-place output shares, -1
 * otherwise; the alias carries the root's offset). Constants keep offset -1.
 * Graph inputs and outputs get dedicated regions; other blocks are reused best-fit
 * once their last reader ran. `allow_alias` 0 disables views and in-place (tests). */
ffu_status nn_plan_memory(nn_graph *g, int allow_alias, nn_plan_stats *stats);

/* Memory spaces (backend.h): node_space[i] is the space of the backend that runs node
 * i, io_space that of the graph inputs and outputs. Gives every non-constant tensor
 * the space of its producer (graph inputs and outputs: io_space) and inserts an
 * ffu.MemCopy node wherever a node reads a value from another space: once per value
 * and space, right before the first reader there; a graph output produced in another
 * space is written there under a new tensor and copied into the output after its
 * producer. Constants are left alone (sessions upload them). Graph input and output
 * tensor indices do not change. Nodes keep their order (and n->backend); copy nodes
 * get backend -1 (the session gives them to the device backend of their pair of
 * spaces). *ncopies counts the copies. */
ffu_status nn_plan_spaces(nn_graph *g, const int *node_space, int io_space, int *ncopies);

/* 1 if node i of a planned graph needs no run: a view whose output aliases input 0. */
int nn_plan_node_is_view(const nn_graph *g, const nn_node *n);

/* Bytes a tensor occupies (numel * element size), 0 if the shape is unknown. */
size_t nn_tensor_bytes(const nn_tensor *t);

/* A workspace (nn.h): one zeroed block that grows to the largest request. Growing
 * replaces the block (nothing is copied: whatever its sessions held is dead by the
 * workspace's rules) and changes `gen`, so a session planned on the old block knows to
 * take its pointers again. */
struct ffu_nn_workspace {
    unsigned char *buf;
    size_t bytes;
    uint64_t gen;
};

/* Makes w hold at least `bytes`. */
ffu_status nn_workspace_reserve(ffu_nn_workspace *w, size_t bytes);

#endif
