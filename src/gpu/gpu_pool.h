/* Private to src/gpu: the caching block pool behind ffu_gpu_alloc. It is plain C over an
 * allocator given as two callbacks, so the unit tests run the very same pool over
 * malloc on machines without a GPU, and the device uses it over cudaMalloc. */
#ifndef FFU_GPU_POOL_H
#define FFU_GPU_POOL_H

#include "facefuse/gpu.h"

typedef struct gpu_pool_allocator {
    void *ctx;
    /* Returns FFU_OK and a block of exactly `bytes`, or an error (FFU_ERR_NOMEM when
     * the device is full: the pool then trims its cache and tries once more). */
    ffu_status (*alloc)(void *ctx, size_t bytes, void **ptr);
    void (*free)(void *ctx, void *ptr);
} gpu_pool_allocator;

typedef struct gpu_pool gpu_pool;

ffu_status gpu_pool_create(const gpu_pool_allocator *a, gpu_pool **out);
/* Gives back every cached block; blocks still in use are given back too (and counted in
 * the return value), since nothing can use them once their context is gone. */
size_t gpu_pool_destroy(gpu_pool *p);
ffu_status gpu_pool_alloc(gpu_pool *p, size_t bytes, void **ptr);
/* FFU_ERR_INVALID for a pointer this pool did not hand out (nothing is freed then). */
ffu_status gpu_pool_free(gpu_pool *p, void *ptr);
void gpu_pool_trim(gpu_pool *p);
void gpu_pool_get_stats(gpu_pool *p, ffu_gpu_pool_stats *out);

/* The size class a request is rounded up to: 256-byte steps up to 4 KiB, then four
 * classes per power of two (so at most 25% is wasted). 0 for requests too large. */
size_t gpu_pool_class_size(size_t bytes);

#endif
