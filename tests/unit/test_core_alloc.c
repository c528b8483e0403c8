/* Arena, pool and large buffers: alignment, no overlap between allocations, reuse after
 * reset, limits, large allocations sharing slabs, huge-page advice, the pool under
 * concurrent get/put, and reference-counted buffers (ownership, writability, counts
 * under concurrent ref/unref). */
#include <pthread.h>
#include <stdint.h>

#include "facefuse/core.h"
#include "test.h"

static void test_arena_basic(void)
{
    ffu_arena *a = NULL;
    CHECK_EQ_INT(ffu_arena_create(&a, 4096), FFU_OK);
    enum { N = 500 };
    unsigned char *p[N];
    size_t sz[N];
    uint64_t seed = 7;
    for (int i = 0; i < N; i++) {
        sz[i] = test_rand_u64(&seed) % 700; /* some exceed block/4: dedicated blocks */
        p[i] = ffu_arena_alloc(a, sz[i]);
        CHECK(p[i]);
        CHECK_EQ_INT((uintptr_t)p[i] % 16, 0);
        memset(p[i], i & 0xff, sz[i]);
    }
    for (int i = 0; i < N; i++) /* a later allocation overlapping would show here */
        for (size_t k = 0; k < sz[i]; k++) CHECK_EQ_INT(p[i][k], i & 0xff);
    size_t used = 0;
    for (int i = 0; i < N; i++) used += sz[i] ? sz[i] : 1;
    CHECK_EQ_INT(ffu_arena_used(a), used);
    CHECK(ffu_arena_reserved(a) >= used);

    void *z = ffu_arena_alloc(a, 0), *z2 = ffu_arena_alloc(a, 0);
    CHECK(z && z2 && z != z2);
    unsigned char *zz = ffu_arena_zalloc(a, 100);
    for (int i = 0; i < 100; i++) CHECK_EQ_INT(zz[i], 0);
    ffu_arena_destroy(a);
    ffu_arena_destroy(NULL);
}

static void test_arena_aligned_and_strings(void)
{
    ffu_arena *a = NULL;
    CHECK_EQ_INT(ffu_arena_create(&a, 0), FFU_OK);
    for (size_t align = 1; align <= 4096; align *= 2) {
        unsigned char *q = ffu_arena_alloc_aligned(a, 3, align);
        CHECK(q);
        CHECK_EQ_INT((uintptr_t)q % align, 0);
    }
    CHECK(ffu_arena_alloc_aligned(a, 8, 3) == NULL); /* not a power of two */
    CHECK(ffu_arena_alloc_aligned(a, 8, 8192) == NULL);
    CHECK(ffu_arena_alloc_aligned(NULL, 8, 16) == NULL);
    CHECK(ffu_arena_alloc(a, SIZE_MAX - 8) == NULL);
    CHECK_STR(ffu_arena_strdup(a, "hello"), "hello");
    CHECK_STR(ffu_arena_strndup(a, "hello", 3), "hel");
    CHECK_STR(ffu_arena_strndup(a, "hi", 10), "hi");
    CHECK(ffu_arena_strdup(a, NULL) == NULL);
    ffu_arena_destroy(a);
}

static void test_arena_reset_reuses(void)
{
    ffu_arena *a = NULL;
    CHECK_EQ_INT(ffu_arena_create(&a, 1024), FFU_OK);
    size_t kept = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 200; i++) CHECK(ffu_arena_alloc(a, 40)); /* many blocks */
        CHECK(ffu_arena_alloc(a, 100000));                            /* one big block */
        size_t reserved = ffu_arena_reserved(a);
        ffu_arena_reset(a);
        CHECK_EQ_INT(ffu_arena_used(a), 0);
        CHECK(ffu_arena_reserved(a) < reserved); /* the big block went back */
        if (round == 0) kept = ffu_arena_reserved(a);
        CHECK_EQ_INT(ffu_arena_reserved(a), kept); /* ordinary blocks reused, no growth */
    }
    ffu_arena_destroy(a);
}

/* ffu_arena_owns: every allocation, whole and its last byte, in small and dedicated
 * blocks; not one byte past an allocation's block fill, not memory of another arena or
 * the stack; after a reset, nothing from before it (stale block fills included) until
 * the memory is handed out again. */
static void test_arena_owns(void)
{
    ffu_arena *a = NULL, *b = NULL;
    CHECK_EQ_INT(ffu_arena_create(&a, 1024), FFU_OK);
    CHECK_EQ_INT(ffu_arena_create(&b, 1024), FFU_OK);
    enum { N = 60 };
    unsigned char *p[N];
    size_t sz[N];
    for (int i = 0; i < N; i++) {
        sz[i] = i % 7 == 0 ? 3000 + (size_t)i : 8 + (size_t)i * 3; /* some in slabs */
        CHECK((p[i] = ffu_arena_alloc(a, sz[i])) != NULL);
    }
    unsigned char *other = ffu_arena_alloc(b, 64), *big = ffu_arena_alloc(b, 5000);
    int local = 0;
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(ffu_arena_owns(a, p[i], sz[i]), 1);
        CHECK_EQ_INT(ffu_arena_owns(a, p[i] + sz[i] - 1, 1), 1);
        CHECK_EQ_INT(ffu_arena_owns(b, p[i], 1), 0);
    }
    /* the first slab ends with the first large allocation (and the alignment slack
     * before it): a slab is at least as large as what the arena held */
    CHECK_EQ_INT(ffu_arena_owns(a, p[0], sz[0] + 64), 0);
    CHECK_EQ_INT(ffu_arena_owns(a, other, 1), 0);
    CHECK_EQ_INT(ffu_arena_owns(a, big, 5000), 0);
    CHECK_EQ_INT(ffu_arena_owns(b, big, 5000), 1);
    CHECK_EQ_INT(ffu_arena_owns(a, &local, sizeof local), 0);
    CHECK_EQ_INT(ffu_arena_owns(a, NULL, 1), 0);
    CHECK_EQ_INT(ffu_arena_owns(NULL, p[1], 1), 0);
    /* the last small allocation's block ends where it was filled */
    unsigned char *last = ffu_arena_alloc(a, 16);
    CHECK_EQ_INT(ffu_arena_owns(a, last, 16), 1);
    CHECK_EQ_INT(ffu_arena_owns(a, last, 17), 0);
    ffu_arena_reset(a);
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(ffu_arena_owns(a, p[i], 1), 0);
    unsigned char *q = ffu_arena_alloc(a, 40);
    CHECK_EQ_INT(ffu_arena_owns(a, q, 40), 1);
    CHECK_EQ_INT(ffu_arena_owns(a, q + 40, 1), 0);
    ffu_arena_destroy(a);
    ffu_arena_destroy(b);
}

/* Large allocations (over a quarter block) share slabs that double with the arena, so a
 * graph's hundreds of weight tensors take a few system allocations: what the arena holds
 * stays within a small factor of what it handed out, nothing overlaps, and reset gives
 * the slabs back. */
static void test_arena_slabs(void)
{
    ffu_arena *a = NULL;
    CHECK_EQ_INT(ffu_arena_create(&a, 4096), FFU_OK);
    enum { N = 300 };
    unsigned char *p[N];
    size_t sz[N], used = 0;
    uint64_t seed = 11;
    for (int i = 0; i < N; i++) {
        sz[i] = 1025 + test_rand_u64(&seed) % 60000;
        CHECK((p[i] = ffu_arena_alloc_aligned(a, sz[i], 64)) != NULL);
        CHECK_EQ_INT((uintptr_t)p[i] % 64, 0);
        memset(p[i], i & 0xff, sz[i]);
        used += sz[i];
    }
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(p[i][0], i & 0xff);
        CHECK_EQ_INT(p[i][sz[i] - 1], i & 0xff);
        CHECK_EQ_INT(ffu_arena_owns(a, p[i], sz[i]), 1);
    }
    int adjacent = 0; /* allocations that start where the one before ended */
    for (int i = 1; i < N; i++)
        adjacent += p[i] == p[i - 1] + ((sz[i - 1] + 63) & ~(size_t)63);
    CHECK(adjacent > N * 3 / 4);
    CHECK_EQ_INT(ffu_arena_used(a), used);
    CHECK(ffu_arena_reserved(a) >= used);
    CHECK(ffu_arena_reserved(a) < 3 * used); /* doubling: at most about twice */
    ffu_arena_reset(a);
    CHECK_EQ_INT(ffu_arena_reserved(a), 0); /* only slabs were held: all went back */
    CHECK((p[0] = ffu_arena_alloc(a, 5000)) != NULL);
    CHECK_EQ_INT(ffu_arena_owns(a, p[0], 5000), 1);
    ffu_arena_destroy(a);
}

/* The kernel's flags of the mapping that holds p (/proc/self/smaps "VmFlags"), or ""
 * when it cannot be found. */
static void vm_flags_of(const void *p, char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return;
    char line[512];
    int inside = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line */
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            size_t n = strnlen(line + 8, cap - 1);
            memcpy(out, line + 8, n);
            out[n] = 0;
            break;
        }
    }
    fclose(f);
}

/* ffu_alloc_large: 64-byte aligned below 2 MiB; from 2 MiB up aligned to 2 MiB with
 * its whole huge pages advised (VmFlags "hg") where the kernel has transparent huge
 * pages; writable to the last byte either way. */
static void test_alloc_large(void)
{
    size_t sizes[] = {0, 1, 100, 4096 + 3, ((size_t)2 << 20) - 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *q = ffu_alloc_large(sizes[i]);
        CHECK(q);
        CHECK_EQ_INT((uintptr_t)q % 64, 0);
        memset(q, 0x5a, sizes[i]);
        free(q);
    }
    size_t big = ((size_t)5 << 20) + 12345;
    unsigned char *q = ffu_alloc_large(big);
    CHECK(q);
    CHECK_EQ_INT((uintptr_t)q % ((size_t)2 << 20), 0);
    memset(q, 0xa5, big);
    CHECK_EQ_INT(q[big - 1], 0xa5);
    char flags[256];
    vm_flags_of(q, flags, sizeof flags);
    free(q);
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char mode[128] = "";
    if (thp) {
        if (!fgets(mode, sizeof mode, thp)) mode[0] = 0;
        fclose(thp);
    }
    if (!mode[0] || strstr(mode, "[never]"))
        TEST_SKIP("the kernel has no transparent huge pages: the advice is not visible");
    CHECK(flags[0]);
    CHECK(strstr(flags, " hg") != NULL);
}

static void test_pool_basic(void)
{
    ffu_pool *p = NULL;
    CHECK_EQ_INT(ffu_pool_create(&p, 24, 4, 10), FFU_OK);
    void *o[10];
    for (int i = 0; i < 10; i++) {
        o[i] = ffu_pool_get(p);
        CHECK(o[i]);
        CHECK_EQ_INT((uintptr_t)o[i] % 16, 0);
        memset(o[i], i, 24);
        for (int k = 0; k < i; k++) CHECK(o[k] != o[i]);
    }
    CHECK_EQ_INT(ffu_pool_in_use(p), 10);
    CHECK(ffu_pool_get(p) == NULL); /* max_objects reached */
    for (int i = 0; i < 10; i++) {
        unsigned char *b = o[i];
        CHECK_EQ_INT(b[23], i);
    }
    ffu_pool_put(p, o[3]);
    CHECK_EQ_INT(ffu_pool_in_use(p), 9);
    CHECK(ffu_pool_get(p) == o[3]); /* recycled */
    ffu_pool_put(p, NULL);
    ffu_pool_destroy(p);
    ffu_pool_destroy(NULL);
    CHECK(ffu_pool_create(&p, 0, 0, 0) == FFU_ERR_INVALID);
    CHECK(p == NULL);
}

static ffu_pool *shared_pool;

static void *pool_worker(void *arg)
{
    uint64_t seed = (uintptr_t)arg + 1;
    void *held[32] = {0};
    for (int i = 0; i < 20000; i++) {
        int k = (int)(test_rand_u64(&seed) % 32);
        if (held[k]) {
            if (*(uintptr_t *)held[k] != (uintptr_t)&held[k]) return (void *)1; /* stolen */
            ffu_pool_put(shared_pool, held[k]);
            held[k] = NULL;
        } else {
            held[k] = ffu_pool_get(shared_pool);
            if (!held[k]) return (void *)1;
            *(uintptr_t *)held[k] = (uintptr_t)&held[k]; /* mark as ours */
        }
    }
    for (int k = 0; k < 32; k++) ffu_pool_put(shared_pool, held[k]);
    return NULL;
}

static void test_pool_threads(void)
{
    CHECK_EQ_INT(ffu_pool_create(&shared_pool, 64, 16, 0), FFU_OK);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, pool_worker, (void *)(uintptr_t)i);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(ffu_pool_in_use(shared_pool), 0);
    ffu_pool_destroy(shared_pool);
}

static void test_buffer_refs(void)
{
    ffu_buffer *b = NULL;
    CHECK_EQ_INT(ffu_buffer_create(&b, 1000, 1), FFU_OK);
    CHECK_EQ_INT(ffu_buffer_size(b), 1000);
    uint8_t *d = ffu_buffer_data(b);
    CHECK_EQ_INT((uintptr_t)d % 64, 0);
    int nonzero = 0;
    for (int i = 0; i < 1000; i++)
        nonzero += d[i] != 0;
    CHECK_EQ_INT(nonzero, 0);
    memset(d, 0xAB, 1000); /* the whole size is ours (ASan sees an overrun) */
    CHECK_EQ_INT(ffu_buffer_is_writable(b), 1);
    ffu_buffer *second = ffu_buffer_ref(b);
    CHECK(second == b);
    CHECK_EQ_INT(ffu_buffer_is_writable(b), 0); /* two owners: copy before writing */
    ffu_buffer_unref(&second);
    CHECK(second == NULL);
    CHECK_EQ_INT(ffu_buffer_is_writable(b), 1);
    CHECK_EQ_INT(d[999], 0xAB); /* still alive after the other reference went */
    ffu_buffer_unref(&b);
    CHECK(b == NULL);
    ffu_buffer_unref(&b); /* NULL is a no-op */
    CHECK_EQ_INT(ffu_buffer_is_writable(NULL), 0);
    CHECK_EQ_INT(ffu_buffer_size(NULL), 0);
    CHECK_EQ_INT(ffu_buffer_create(&b, SIZE_MAX - 8, 0), FFU_ERR_TOO_LARGE);
    CHECK(b == NULL);
}

/* Threads take and drop references to one buffer at once: the count must come back to
 * one (a lost update would leave it writable too early or never). */
static void *buffer_worker(void *arg)
{
    ffu_buffer *b = arg, *held[16];
    for (int round = 0; round < 20000; round++) {
        for (int k = 0; k < 16; k++)
            held[k] = ffu_buffer_ref(b);
        for (int k = 0; k < 16; k++)
            ffu_buffer_unref(&held[k]);
    }
    return NULL;
}

static void test_buffer_threads(void)
{
    ffu_buffer *b = NULL;
    CHECK_EQ_INT(ffu_buffer_create(&b, 64, 0), FFU_OK);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, buffer_worker, b);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_INT(ffu_buffer_is_writable(b), 1);
    ffu_buffer_unref(&b);
}

TEST_MAIN(test_arena_basic, test_arena_aligned_and_strings, test_arena_reset_reuses,
          test_arena_owns, test_arena_slabs, test_alloc_large, test_pool_basic, test_pool_threads,
          test_buffer_refs, test_buffer_threads)
