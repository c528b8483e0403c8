/* TensorFlow's StridedSlice in ONNX terms, shared by the two TensorFlow loaders (TF.js
 * and TFLite store the same op with the same masks). */
#ifndef FFU_NN_TF_SLICE_H
#define FFU_NN_TF_SLICE_H

#include <stdint.h>

/* Turns begin/end/strides (n values each) and TF's masks into ONNX Slice inputs
 * (starts, ends, axes, steps; n values each) and the axes a shrink mask removes
 * afterwards (squeeze, *nsq values; Squeeze them). Returns NULL, or why the slice is
 * refused: "stride 0" (malformed) or "ellipsis or new-axis masks" (unsupported). */
const char *nn_tf_strided_slice(const int64_t *begin, const int64_t *end,
                                const int64_t *strides, int n, int64_t begin_mask,
                                int64_t end_mask, int64_t shrink_mask, int64_t other_masks,
                                int64_t *starts, int64_t *ends, int64_t *axes, int64_t *steps,
                                int64_t *squeeze, int *nsq);

#endif
