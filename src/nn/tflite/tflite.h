/* The TensorFlow Lite loader: a .tflite file (a FlatBuffer, identifier "TFL3") into the
 * engine's graph IR, for float models (f32 tensors, f16 weights behind DEQUANTIZE).
 *
 * Like TF.js, TFLite is NHWC: every IR tensor that stands for a TFLite tensor keeps its
 * meaning and name, and spatial ops are wrapped in Transpose pairs around the NCHW IR op
 * that nn_rewrite_transposes later cancels. TFLite files fix the batch they were
 * exported with; the loader declares it dynamic where every op keeps batch items
 * apart, so a session can run any batch (docs/NN_TFLITE.md: op mapping, batch rule,
 * what is refused). */
#ifndef FFU_NN_TFLITE_H
#define FFU_NN_TFLITE_H

#include "../ir.h"

/* Largest tensor / operator count accepted (FFU_ERR_TOO_LARGE beyond). */
#define NN_TFLITE_MAX_TENSORS (1 << 20)
#define NN_TFLITE_MAX_OPS (1 << 20)

/* 1 when data looks like a TFLite model (the "TFL3" file identifier at byte 4). */
int nn_tflite_is(const void *data, size_t size);

/* Builds a graph (format "tflite") from the file bytes (borrowed; constants are
 * copied). Inputs and outputs are the first subgraph's. On error *out is NULL and the
 * status is FFU_ERR_FORMAT / FFU_ERR_TOO_LARGE (malformed or hostile file, with a
 * reason), FFU_ERR_UNSUPPORTED (naming the op, or quantized tensors) or
 * FFU_ERR_NOMEM. */
ffu_status nn_tflite_load(const void *data, size_t size, nn_graph **out);

#endif
