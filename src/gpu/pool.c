/* The caching block pool behind ffu_gpu_alloc (see gpu_pool.h). cudaMalloc and cudaFree
 * synchronise the device and cost tens of microseconds, so blocks are rounded to a size
 * class and kept for reuse. Sessions allocate their arenas once, so a pool holds tens of
 * blocks, not thousands: one array searched linearly is enough and easy to check. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_pool.h"

typedef struct pool_block {
    void *ptr;
    size_t size; /* class size */
    int in_use;
} pool_block;

struct gpu_pool {
    gpu_pool_allocator a;
    pthread_mutex_t lock;
    pool_block *blocks;
    size_t count, cap;
    ffu_gpu_pool_stats stats;
};

size_t gpu_pool_class_size(size_t bytes)
{
    if (bytes == 0) bytes = 1;
    if (bytes > ((size_t)1 << 46)) return 0;
    if (bytes <= 4096) return (bytes + 255) & ~(size_t)255;
    size_t base = (size_t)1 << (63 - __builtin_clzll((unsigned long long)bytes));
    size_t step = base / 4;
    return (bytes + step - 1) / step * step;
}

ffu_status gpu_pool_create(const gpu_pool_allocator *a, gpu_pool **out)
{
    *out = NULL;
    if (!a || !a->alloc || !a->free)
        return ffu_error_set(FFU_ERR_INVALID, "gpu pool: no allocator");
    gpu_pool *p = calloc(1, sizeof *p);
    if (!p) return ffu_error_set(FFU_ERR_NOMEM, "gpu pool: out of memory");
    p->a = *a;
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    return FFU_OK;
}

/* Gives back free blocks (all blocks when `all`); returns how many in-use ones went. */
static size_t release_blocks(gpu_pool *p, int all)
{
    size_t kept = 0, dropped_in_use = 0;
    for (size_t i = 0; i < p->count; i++) {
        pool_block *b = &p->blocks[i];
        if (b->in_use && !all) {
            p->blocks[kept++] = *b;
            continue;
        }
        if (b->in_use) {
            dropped_in_use++;
            p->stats.in_use -= b->size;
        } else {
            p->stats.cached -= b->size;
        }
        p->a.free(p->a.ctx, b->ptr);
    }
    p->count = kept;
    return dropped_in_use;
}

size_t gpu_pool_destroy(gpu_pool *p)
{
    if (!p) return 0;
    size_t n = release_blocks(p, 1);
    pthread_mutex_destroy(&p->lock);
    free(p->blocks);
    free(p);
    return n;
}

ffu_status gpu_pool_alloc(gpu_pool *p, size_t bytes, void **ptr)
{
    *ptr = NULL;
    size_t size = gpu_pool_class_size(bytes);
    if (!size) return ffu_error_set(FFU_ERR_TOO_LARGE, "gpu alloc of %zu bytes", bytes);
    ffu_status st = FFU_OK;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->count; i++) {
        pool_block *b = &p->blocks[i];
        if (!b->in_use && b->size == size) {
            b->in_use = 1;
            p->stats.cached -= size;
            p->stats.in_use += size;
            p->stats.reuses++;
            *ptr = b->ptr;
            goto done;
        }
    }
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 32;
        pool_block *nb = realloc(p->blocks, cap * sizeof *nb);
        if (!nb) {
            st = ffu_error_set(FFU_ERR_NOMEM, "gpu pool: out of host memory");
            goto done;
        }
        p->blocks = nb, p->cap = cap;
    }
    void *mem = NULL;
    st = p->a.alloc(p->a.ctx, size, &mem);
    if (st == FFU_ERR_NOMEM && p->stats.cached) {
        release_blocks(p, 0);
        st = p->a.alloc(p->a.ctx, size, &mem);
    }
    if (st < 0) goto done;
    p->stats.device_allocs++;
    p->blocks[p->count++] = (pool_block){mem, size, 1};
    p->stats.in_use += size;
    *ptr = mem;
done:
    if (p->stats.in_use > p->stats.peak_in_use) p->stats.peak_in_use = p->stats.in_use;
    pthread_mutex_unlock(&p->lock);
    return st;
}

ffu_status gpu_pool_free(gpu_pool *p, void *ptr)
{
    if (!ptr) return FFU_OK;
    ffu_status st = FFU_OK;
    pthread_mutex_lock(&p->lock);
    size_t i = 0;
    while (i < p->count && p->blocks[i].ptr != ptr) i++;
    if (i == p->count || !p->blocks[i].in_use) {
        st = ffu_error_set(FFU_ERR_INVALID, "gpu free of %p, which the pool did not hand out",
                           ptr);
    } else {
        p->blocks[i].in_use = 0;
        p->stats.in_use -= p->blocks[i].size;
        p->stats.cached += p->blocks[i].size;
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

void gpu_pool_trim(gpu_pool *p)
{
    pthread_mutex_lock(&p->lock);
    release_blocks(p, 0);
    pthread_mutex_unlock(&p->lock);
}

void gpu_pool_get_stats(gpu_pool *p, ffu_gpu_pool_stats *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->stats;
    pthread_mutex_unlock(&p->lock);
}
