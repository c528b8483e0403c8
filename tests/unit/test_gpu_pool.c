/* The GPU memory pool's logic over a host allocator (it is the same code the device runs
 * over cudaMalloc): size classes, reuse, statistics, trimming, the out-of-memory retry
 * and refusal of foreign pointers. Runs everywhere; no GPU needed. */
#include <stdlib.h>

#include "gpu/gpu_pool.h"
#include "test.h"

typedef struct fake_device {
    size_t budget, used; /* bytes the "device" can hold, and holds now */
    int allocs, frees;
} fake_device;

static ffu_status fake_alloc(void *ctx, size_t bytes, void **ptr)
{
    fake_device *d = ctx;
    if (d->used + bytes > d->budget) return ffu_error_set(FFU_ERR_NOMEM, "fake device full");
    /* The size lives in front of the block so free can give it back. */
    size_t *p = malloc(bytes + 16);
    if (!p) return FFU_ERR_NOMEM;
    p[0] = bytes;
    d->used += bytes;
    d->allocs++;
    *ptr = (char *)p + 16;
    return FFU_OK;
}

static void fake_free(void *ctx, void *ptr)
{
    fake_device *d = ctx;
    size_t *p = (size_t *)((char *)ptr - 16);
    d->used -= p[0];
    d->frees++;
    free(p);
}

static void test_class_sizes(void)
{
    CHECK_EQ_INT((int)gpu_pool_class_size(0), 256);
    CHECK_EQ_INT((int)gpu_pool_class_size(1), 256);
    CHECK_EQ_INT((int)gpu_pool_class_size(256), 256);
    CHECK_EQ_INT((int)gpu_pool_class_size(257), 512);
    CHECK_EQ_INT((int)gpu_pool_class_size(4096), 4096);
    CHECK_EQ_INT((int)gpu_pool_class_size(4097), 5120);
    CHECK_EQ_INT((int)gpu_pool_class_size(1 << 20), 1 << 20);
    CHECK_EQ_INT((int)gpu_pool_class_size((1 << 20) + 1), (1 << 20) + (1 << 18));
    CHECK(gpu_pool_class_size((size_t)1 << 50) == 0);
    /* Every class holds its request, wastes at most a quarter, and is a fixed point. */
    uint64_t seed = 7;
    for (int i = 0; i < 100000; i++) {
        size_t n = (size_t)(test_rand_u64(&seed) >> (20 + test_rand_u64(&seed) % 40)) + 1;
        size_t c = gpu_pool_class_size(n);
        CHECK(c >= n);
        CHECK(n <= 4096 ? c - n < 256 : (c - n) * 4 <= n);
        CHECK(gpu_pool_class_size(c) == c);
        CHECK(c % 256 == 0);
    }
}

static void test_reuse_and_stats(void)
{
    fake_device d = {.budget = (size_t)1 << 30};
    gpu_pool_allocator a = {&d, fake_alloc, fake_free};
    gpu_pool *p;
    CHECK_EQ_INT(gpu_pool_create(&a, &p), FFU_OK);
    void *x, *y, *z;
    CHECK_EQ_INT(gpu_pool_alloc(p, 1000, &x), FFU_OK);
    CHECK_EQ_INT(gpu_pool_alloc(p, 5000, &y), FFU_OK);
    CHECK(x && y && x != y);
    ffu_gpu_pool_stats s;
    gpu_pool_get_stats(p, &s);
    CHECK_EQ_INT((int)s.in_use, 1024 + 5120);
    CHECK_EQ_INT((int)s.device_allocs, 2);
    CHECK_EQ_INT(gpu_pool_free(p, x), FFU_OK);
    /* A request of the same class gets the same block back without a device call. */
    CHECK_EQ_INT(gpu_pool_alloc(p, 800, &z), FFU_OK);
    CHECK(z == x);
    gpu_pool_get_stats(p, &s);
    CHECK_EQ_INT((int)s.reuses, 1);
    CHECK_EQ_INT(d.allocs, 2);
    /* Another class does not take it. */
    CHECK_EQ_INT(gpu_pool_free(p, z), FFU_OK);
    CHECK_EQ_INT(gpu_pool_alloc(p, 100, &z), FFU_OK);
    CHECK(z != x);
    gpu_pool_get_stats(p, &s);
    CHECK_EQ_INT((int)s.cached, 1024);
    CHECK_EQ_INT((int)s.in_use, 256 + 5120);
    CHECK_EQ_INT((int)s.peak_in_use, 1024 + 5120);
    /* Double free and foreign pointers are refused and change nothing. */
    CHECK_EQ_INT(gpu_pool_free(p, x), FFU_ERR_INVALID);
    int local;
    CHECK_EQ_INT(gpu_pool_free(p, &local), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "did not hand out") != NULL);
    CHECK_EQ_INT(gpu_pool_free(p, NULL), FFU_OK);
    gpu_pool_trim(p);
    gpu_pool_get_stats(p, &s);
    CHECK_EQ_INT((int)s.cached, 0);
    CHECK_EQ_INT(d.frees, 1);
    /* Destroy gives back the two blocks still in use and says so. */
    CHECK_EQ_INT((int)gpu_pool_destroy(p), 2);
    CHECK_EQ_INT((int)d.used, 0);
    CHECK_EQ_INT(d.allocs, d.frees);
}

static void test_out_of_memory_retry(void)
{
    fake_device d = {.budget = 3 << 20};
    gpu_pool_allocator a = {&d, fake_alloc, fake_free};
    gpu_pool *p;
    CHECK_EQ_INT(gpu_pool_create(&a, &p), FFU_OK);
    void *b[3];
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(gpu_pool_alloc(p, 1 << 20, &b[i]), FFU_OK);
    void *big;
    CHECK_EQ_INT(gpu_pool_alloc(p, 2 << 20, &big), FFU_ERR_NOMEM);
    CHECK(big == NULL);
    /* With two cached blocks of another class, the pool trims them and succeeds. */
    CHECK_EQ_INT(gpu_pool_free(p, b[0]), FFU_OK);
    CHECK_EQ_INT(gpu_pool_free(p, b[1]), FFU_OK);
    CHECK_EQ_INT(gpu_pool_alloc(p, 2 << 20, &big), FFU_OK);
    ffu_gpu_pool_stats s;
    gpu_pool_get_stats(p, &s);
    CHECK_EQ_INT((int)s.cached, 0);
    CHECK_EQ_INT((int)s.in_use, 3 << 20);
    CHECK_EQ_INT((int)d.used, 3 << 20);
    CHECK_EQ_INT(gpu_pool_free(p, big), FFU_OK);
    CHECK_EQ_INT(gpu_pool_free(p, b[2]), FFU_OK);
    CHECK_EQ_INT((int)gpu_pool_destroy(p), 0);
    CHECK_EQ_INT((int)d.used, 0);
}

static void test_bad_allocator(void)
{
    gpu_pool *p = (gpu_pool *)1;
    gpu_pool_allocator a = {NULL, NULL, NULL};
    CHECK_EQ_INT(gpu_pool_create(&a, &p), FFU_ERR_INVALID);
    CHECK(p == NULL);
    CHECK_EQ_INT((int)gpu_pool_destroy(NULL), 0);
}

TEST_MAIN(test_class_sizes, test_reuse_and_stats, test_out_of_memory_retry, test_bad_allocator)
