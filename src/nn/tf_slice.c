/* TF StridedSlice -> ONNX Slice + Squeeze (tf_slice.h). A shrink bit takes one element
 * (begin, begin + 1; begin -1 means the last) and drops the axis; a begin/end mask bit
 * means "from the start / to the end" in the stride's direction. */
#include <stddef.h>

#include "tf_slice.h"

const char *nn_tf_strided_slice(const int64_t *begin, const int64_t *end,
                                const int64_t *strides, int n, int64_t begin_mask,
                                int64_t end_mask, int64_t shrink_mask, int64_t other_masks,
                                int64_t *starts, int64_t *ends, int64_t *axes, int64_t *steps,
                                int64_t *squeeze, int *nsq)
{
    *nsq = 0;
    if (other_masks) return "ellipsis or new-axis masks";
    for (int i = 0; i < n; i++) {
        if (!strides[i]) return "stride 0";
        axes[i] = i;
        if (shrink_mask >> i & 1) {
            starts[i] = begin[i];
            ends[i] = begin[i] == -1 ? INT64_MAX : begin[i] + 1;
            steps[i] = 1;
            squeeze[(*nsq)++] = i;
            continue;
        }
        starts[i] = (begin_mask >> i & 1) ? (strides[i] > 0 ? 0 : INT64_MAX) : begin[i];
        ends[i] = (end_mask >> i & 1) ? (strides[i] > 0 ? INT64_MAX : INT64_MIN) : end[i];
        steps[i] = strides[i];
    }
    return NULL;
}
