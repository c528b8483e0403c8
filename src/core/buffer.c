/* Reference-counted, 64-byte aligned heap buffers: the one owner type behind images,
 * tensors and frames. The count is atomic so buffers can cross threads; a buffer is
 * writable only while one reference exists (copy-on-write is the caller's choice). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/core.h"

struct ffu_buffer {
    atomic_int refs;
    size_t size;
    uint8_t *data; /* aligned, inside the same allocation */
};

#define BUFFER_ALIGN 64

ffu_status ffu_buffer_create(ffu_buffer **out, size_t size, int zero)
{
    *out = NULL;
    size_t head = (sizeof(ffu_buffer) + BUFFER_ALIGN - 1) & ~(size_t)(BUFFER_ALIGN - 1);
    if (size > SIZE_MAX - head - BUFFER_ALIGN)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "buffer of %zu bytes is too large", size);
    size_t total = head + ((size + BUFFER_ALIGN - 1) & ~(size_t)(BUFFER_ALIGN - 1));
    ffu_buffer *b = ffu_alloc_large(total);
    if (!b) return ffu_error_set(FFU_ERR_NOMEM, "cannot allocate %zu bytes", size);
    atomic_init(&b->refs, 1);
    b->size = size;
    b->data = (uint8_t *)b + head;
    if (zero) memset(b->data, 0, size);
    *out = b;
    return FFU_OK;
}

ffu_buffer *ffu_buffer_ref(ffu_buffer *buf)
{
    if (buf) atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
    return buf;
}

void ffu_buffer_unref(ffu_buffer **buf)
{
    if (!buf || !*buf) return;
    ffu_buffer *b = *buf;
    *buf = NULL;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) free(b);
}

uint8_t *ffu_buffer_data(const ffu_buffer *buf) { return buf ? buf->data : NULL; }
size_t ffu_buffer_size(const ffu_buffer *buf) { return buf ? buf->size : 0; }

int ffu_buffer_is_writable(const ffu_buffer *buf)
{
    return buf && atomic_load_explicit(&((ffu_buffer *)buf)->refs, memory_order_acquire) == 1;
}
