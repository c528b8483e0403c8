/* The ONNX loader: reads a serialized ModelProto into the graph IR (src/nn/ir.h) and
 * rewrites every older-opset op form into the canonical (newest-opset) form the kernels
 * implement; also reads serialized TensorProtos (the conformance suite's .pb files).
 *
 * Both calls parse with protobuf-c (code generated at build time from Debian's
 * onnx.proto) under a memory cap, after a pre-pass that bounds message nesting, and
 * validate everything they keep: malformed or hostile input gives FFU_ERR_FORMAT or
 * FFU_ERR_TOO_LARGE with a one-line reason, never a crash. docs/NN_ONNX.md lists what
 * is accepted and what is upgraded. */
#ifndef FFU_NN_ONNX_H
#define FFU_NN_ONNX_H

#include "nn/ir.h"

/* Files larger than this are refused (FFU_ERR_TOO_LARGE) before parsing. */
#define NN_ONNX_MAX_FILE ((size_t)2 << 30)
/* Accepted default-domain opsets (ai.onnx); others give FFU_ERR_UNSUPPORTED. */
#define NN_ONNX_MIN_OPSET 1
#define NN_ONNX_MAX_OPSET 18

/* Parses data[0..size) (borrowed; nothing points into it afterwards) into a new graph
 * with format "onnx", the producer ("name version"), the default-domain opset, inputs
 * (graph inputs that are not initializers), outputs, constants and nodes in
 * topological order. Checks are structural: an op missing from ops.def is
 * FFU_ERR_UNSUPPORTED naming op and node, but an op listed there without a kernel
 * loads fine -- call nn_graph_check_ops for that. *out is NULL on error. */
ffu_status nn_onnx_load(const void *data, size_t size, nn_graph **out);

/* FFU_OK when every node's op has a definition (nn_op_get != NULL); otherwise
 * FFU_ERR_UNSUPPORTED "unsupported op 'X' (node 'Y')" for the first one that has not.
 * Lets a conformance runner tell "not implemented" apart from a malformed model. */
ffu_status nn_graph_check_ops(const nn_graph *g);

/* Parses a serialized TensorProto (borrowed) and adds it to g as a constant tensor
 * (NN_T_CONST; data copied into g's arena, dtype mapped to ffu_dtype, little-endian).
 * name: the tensor's name in g; NULL uses the proto's own name, or a fresh one when
 * that is empty. A name already in g is an error (use a scratch graph per test case).
 * *tensor_index receives the index (-1 on error). */
ffu_status nn_onnx_read_tensor(const void *data, size_t size, nn_graph *g, const char *name,
                               int *tensor_index);

/* ffu_dtype of an ONNX TensorProto.DataType value; FFU_DTYPE_UNDEFINED for types the
 * engine has no equivalent of (string, complex, float8, ...). */
ffu_dtype nn_onnx_dtype(int onnx_type);

#endif
