/* Shared by the ONNX loader's files (onnx_tensor.c: parsing under limits and
 * TensorProto decoding; onnx_load.c: model to graph). Not part of the loader's API
 * (that is onnx.h); this is the only place that sees protobuf-c's generated types. */
#ifndef FFU_NN_ONNX_INTERNAL_H
#define FFU_NN_ONNX_INTERNAL_H

#include "onnx.h"
#include "onnx/onnx.pb-c.h" /* generated at build time into <build>/generated/onnx/ */

/* Total bytes protobuf-c may allocate for one parse: a 2 GiB file of tiny repeated
 * messages expands several times in memory, and hostile files must fail cleanly. */
#define ONNX_ALLOC_CAP ((size_t)4 << 30)
/* Deepest message nesting accepted (subgraphs in attributes, nested TypeProtos);
 * protobuf-c recurses once per level, so this bounds its stack use. */
#define ONNX_MAX_DEPTH 64
/* Upper bound on list lengths kept in the graph (nodes, tensors, node inputs,
 * attribute lists): real models stay far below; indices stay int. */
#define ONNX_MAX_ITEMS (1 << 22)

/* protobuf-c allocator that counts what it hands out and refuses past cap. */
typedef struct onnx_alloc {
    ProtobufCAllocator pa;
    size_t used, cap;
    int refused; /* an allocation was refused because of the cap */
} onnx_alloc;

void onnx_alloc_init(onnx_alloc *a, size_t cap);

/* Checks nesting depth and wire-format sanity, then unpacks `desc` from data with
 * a. Errors: FFU_ERR_FORMAT (malformed; detail names `what`), FFU_ERR_TOO_LARGE
 * (nesting or memory cap). Free the result with protobuf_c_message_free_unpacked(m,
 * &a->pa). */
ffu_status onnx_unpack(const ProtobufCMessageDescriptor *desc, const void *data, size_t size,
                       onnx_alloc *a, const char *what, ProtobufCMessage **out);

/* Adds the TensorProto t to g as a constant named name (copied). `what` names it in
 * errors ("initializer 'w'"). Validates data type, dims, rank, data location and that
 * the bytes present match the shape. Returns the tensor index or a negative status. */
int onnx_tensor_add(nn_graph *g, const Onnx__TensorProto *t, const char *name, const char *what);

/* base if no tensor of g has that name, else base#1, base#2, ... (written to buf). */
const char *onnx_unique_name(const nn_graph *g, const char *base, char *buf, size_t len);

/* Never-NULL view of protobuf-c's optional strings (NULL when absent in proto2). */
static inline const char *onnx_str(const char *s) { return s ? s : ""; }

#endif
