/* The TensorFlow.js graph-model loader: model.json (a TF GraphDef written as JSON plus
 * a weights manifest) and its weights (.bin) into the engine's graph IR.
 *
 * TF.js activations are NHWC and every tensor of the loaded graph keeps TF's meaning
 * (names, shapes, axes); spatial ops (Conv, pools, Resize, DepthToSpace, ...) are
 * wrapped in Transpose(0,3,1,2) / Transpose(0,2,3,1) around the NCHW IR op, and
 * nn_rewrite_transposes (src/nn/rewrite.h) later removes the pairs that cancel.
 * docs/NN_TFJS.md lists the op mapping and the rules for inputs and outputs. */
#ifndef FFU_NN_TFJS_H
#define FFU_NN_TFJS_H

#include "../ir.h"

/* Largest node count / weight count accepted (FFU_ERR_TOO_LARGE beyond). */
#define NN_TFJS_MAX_NODES (1 << 20)
#define NN_TFJS_MAX_WEIGHTS (1 << 20)
/* Largest total of decoded constant bytes (f16 and uint8 weights grow to f32). */
#define NN_TFJS_MAX_DECODED ((size_t)4 << 30)

/* Builds a graph from model.json text (json_len bytes, need not be NUL-terminated) and
 * the weights: every shard of every weightsManifest group concatenated in manifest
 * order (both borrowed; constants are copied into the graph). The weights must be
 * exactly as long as the manifest says. On success *out is a new graph (format
 * "tfjs"), nodes in topological order, inputs = the Placeholders, outputs = the
 * signature's outputs or else every sink; on error *out is NULL and the status is
 * FFU_ERR_FORMAT / FFU_ERR_TOO_LARGE (malformed or hostile file, with a reason),
 * FFU_ERR_UNSUPPORTED (naming the op and node) or FFU_ERR_NOMEM. */
ffu_status nn_tfjs_load(const char *json, size_t json_len, const void *weights,
                        size_t weights_len, nn_graph **out);

/* face-api.js weight files (a weights manifest: a JSON list with no topology) of the
 * networks faceapi.c knows, built into a graph the same way: NHWC input, weights
 * decoded by the TF.js loader's code. Errors as nn_tfjs_load; FFU_ERR_UNSUPPORTED for
 * weights of another network. */
ffu_status nn_faceapi_load(const char *json, size_t json_len, const void *weights,
                           size_t weights_len, nn_graph **out);

#endif
