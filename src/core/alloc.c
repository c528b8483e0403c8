/* Arenas and object pools: the two allocators behind "nothing allocated per frame".
 * An arena hands out memory by bumping a pointer and frees it all at once (parsed
 * documents, per-request scratch); a pool recycles fixed-size objects through a free
 * list (queue nodes, per-track state). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "facefuse/core.h"

/* ---- large buffers ---------------------------------------------------------------- */

#define HUGE_PAGE ((size_t)2 << 20)

void *ffu_alloc_large(size_t size)
{
    void *p = NULL;
    size_t align = size < HUGE_PAGE ? 64 : HUGE_PAGE;
    if (size > SIZE_MAX - HUGE_PAGE || posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    /* only whole huge pages: a partly used one would hold memory nobody asked for;
     * advice only, so a refusal costs nothing */
    if (size >= HUGE_PAGE) (void)madvise(p, size & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
    return p;
}

/* ---- arena ---------------------------------------------------------------------- */

#define ARENA_DEFAULT_BLOCK ((size_t)64 << 10)
#define ARENA_ALIGN 16
#define ARENA_MAX_ALIGN 4096
#define ARENA_SLAB_MAX ((size_t)64 << 20)

typedef struct arena_block {
    struct arena_block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    _Alignas(ARENA_ALIGN) unsigned char data[];
} arena_block;

struct ffu_arena {
    size_t block_size;
    arena_block *head; /* ordinary blocks, kept across reset */
    arena_block *cur;  /* the block being filled; blocks after it are empty */
    arena_block *big;  /* dedicated blocks for large allocations, freed on reset */
    size_t used, reserved;
};

static void free_blocks(arena_block *b)
{
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
}

static arena_block *new_block(ffu_arena *a, size_t size)
{
    if (size > SIZE_MAX - sizeof(arena_block)) return NULL;
    arena_block *b = ffu_alloc_large(sizeof(arena_block) + size);
    if (!b) return NULL;
    b->next = NULL;
    b->size = size;
    b->used = 0;
    a->reserved += size;
    return b;
}

ffu_status ffu_arena_create(ffu_arena **out, size_t block_size)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_arena_create: out is NULL");
    *out = NULL;
    ffu_arena *a = calloc(1, sizeof *a);
    if (!a) return ffu_error_set(FFU_ERR_NOMEM, "cannot allocate an arena");
    a->block_size = block_size ? block_size : ARENA_DEFAULT_BLOCK;
    if (a->block_size < 256) a->block_size = 256;
    *out = a;
    return FFU_OK;
}

void ffu_arena_destroy(ffu_arena *a)
{
    if (!a) return;
    free_blocks(a->head);
    free_blocks(a->big);
    free(a);
}

/* Offset in b where an allocation of `size` aligned to `align` would start, or
 * SIZE_MAX when it does not fit. */
static size_t fit(const arena_block *b, size_t size, size_t align)
{
    uintptr_t base = (uintptr_t)b->data;
    uintptr_t p = (base + b->used + align - 1) & ~(uintptr_t)(align - 1);
    size_t off = (size_t)(p - base);
    if (off > b->size || b->size - off < size) return SIZE_MAX;
    return off;
}

void *ffu_arena_alloc_aligned(ffu_arena *a, size_t size, size_t align)
{
    if (!a || align == 0 || (align & (align - 1)) || align > ARENA_MAX_ALIGN) {
        ffu_error_set(FFU_ERR_INVALID, "arena: bad arena or alignment %zu", align);
        return NULL;
    }
    if (align < ARENA_ALIGN) align = ARENA_ALIGN;
    if (size == 0) size = 1; /* distinct pointers for distinct calls */
    if (size > SIZE_MAX / 2) {
        ffu_error_set(FFU_ERR_TOO_LARGE, "arena: allocation of %zu bytes", size);
        return NULL;
    }

    if (size > a->block_size / 4) { /* large: from a slab, off the reuse chain */
        arena_block *b = a->big;
        size_t off = b ? fit(b, size, align) : SIZE_MAX;
        if (off == SIZE_MAX) {
            /* slabs double with what the arena holds (to a cap), so that a graph's
             * weights lie in a few huge-page-backed runs and a small arena stays small */
            size_t want = size + align,
                   grow = a->reserved < ARENA_SLAB_MAX ? a->reserved : ARENA_SLAB_MAX;
            if (grow > sizeof(arena_block)) grow -= sizeof(arena_block); /* whole pages */
            if (!(b = new_block(a, want > grow ? want : grow))) goto nomem;
            b->next = a->big;
            a->big = b;
            off = fit(b, size, align);
        }
        b->used = off + size;
        a->used += size;
        return b->data + off;
    }
    for (;;) {
        if (a->cur) {
            size_t off = fit(a->cur, size, align);
            if (off != SIZE_MAX) {
                a->cur->used = off + size;
                a->used += size;
                return a->cur->data + off;
            }
            if (a->cur->next) { /* an emptied block kept by reset */
                a->cur = a->cur->next;
                a->cur->used = 0;
                continue;
            }
        }
        arena_block *b = new_block(a, a->block_size);
        if (!b) goto nomem;
        if (a->cur)
            a->cur->next = b;
        else
            a->head = b;
        a->cur = b;
    }
nomem:
    ffu_error_set(FFU_ERR_NOMEM, "arena: cannot allocate %zu bytes", size);
    return NULL;
}

/* Blocks from b on, up to and including `last` (NULL: to the end): blocks after the
 * current one keep the fill of before a reset, and hold nothing handed out since. */
static int block_holds(const arena_block *b, const arena_block *last, uintptr_t p, size_t size)
{
    for (; b; b = b == last ? NULL : b->next) {
        uintptr_t lo = (uintptr_t)b->data;
        if (p >= lo && p - lo <= b->used && size <= b->used - (p - lo)) return 1;
    }
    return 0;
}

int ffu_arena_owns(const ffu_arena *a, const void *p, size_t size)
{
    if (!a || !p) return 0;
    return (a->cur && block_holds(a->head, a->cur, (uintptr_t)p, size)) ||
           block_holds(a->big, NULL, (uintptr_t)p, size);
}

void *ffu_arena_alloc(ffu_arena *a, size_t size)
{
    return ffu_arena_alloc_aligned(a, size, ARENA_ALIGN);
}

void *ffu_arena_zalloc(ffu_arena *a, size_t size)
{
    void *p = ffu_arena_alloc(a, size);
    if (p) memset(p, 0, size);
    return p;
}

char *ffu_arena_strndup(ffu_arena *a, const char *s, size_t n)
{
    if (!s) return NULL;
    n = strnlen(s, n);
    char *d = ffu_arena_alloc_aligned(a, n + 1, 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *ffu_arena_strdup(ffu_arena *a, const char *s)
{
    return s ? ffu_arena_strndup(a, s, strlen(s)) : NULL;
}

void ffu_arena_reset(ffu_arena *a)
{
    if (!a) return;
    for (arena_block *b = a->big; b; b = b->next) a->reserved -= b->size;
    free_blocks(a->big);
    a->big = NULL;
    a->cur = a->head;
    if (a->cur) a->cur->used = 0;
    a->used = 0;
}

size_t ffu_arena_used(const ffu_arena *a) { return a ? a->used : 0; }
size_t ffu_arena_reserved(const ffu_arena *a) { return a ? a->reserved : 0; }

/* ---- pool ----------------------------------------------------------------------- */

#define POOL_ALIGN 16

typedef struct pool_block {
    struct pool_block *next;
    _Alignas(POOL_ALIGN) unsigned char data[];
} pool_block;

struct ffu_pool {
    pthread_mutex_t lock;
    size_t obj_size, per_block, max_objects;
    size_t total, in_use;
    pool_block *blocks;
    void *free_list; /* each free object's first word links to the next */
};

ffu_status ffu_pool_create(ffu_pool **out, size_t obj_size, size_t per_block,
                           size_t max_objects)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_pool_create: out is NULL");
    *out = NULL;
    if (obj_size == 0 || obj_size > ((size_t)1 << 30))
        return ffu_error_set(FFU_ERR_INVALID, "pool: object size %zu out of range", obj_size);
    if (obj_size < sizeof(void *)) obj_size = sizeof(void *);
    obj_size = (obj_size + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
    if (!per_block) per_block = 64;
    size_t cap = ((size_t)1 << 30) / obj_size; /* keep one block under 1 GiB */
    if (per_block > cap) per_block = cap ? cap : 1;
    ffu_pool *p = calloc(1, sizeof *p);
    if (!p) return ffu_error_set(FFU_ERR_NOMEM, "cannot allocate a pool");
    pthread_mutex_init(&p->lock, NULL);
    p->obj_size = obj_size;
    p->per_block = per_block;
    p->max_objects = max_objects;
    *out = p;
    return FFU_OK;
}

void ffu_pool_destroy(ffu_pool *p)
{
    if (!p) return;
    pool_block *b = p->blocks;
    while (b) {
        pool_block *next = b->next;
        free(b);
        b = next;
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Called with the lock held. */
static int pool_grow(ffu_pool *p)
{
    size_t n = p->per_block;
    if (p->max_objects && p->max_objects - p->total < n) n = p->max_objects - p->total;
    if (n == 0) return 0;
    pool_block *b = malloc(sizeof(pool_block) + n * p->obj_size);
    if (!b) return 0;
    b->next = p->blocks;
    p->blocks = b;
    for (size_t i = n; i-- > 0;) { /* thread the free list in address order */
        void *obj = b->data + i * p->obj_size;
        *(void **)obj = p->free_list;
        p->free_list = obj;
    }
    p->total += n;
    return 1;
}

void *ffu_pool_get(ffu_pool *p)
{
    if (!p) return NULL;
    pthread_mutex_lock(&p->lock);
    if (!p->free_list && !pool_grow(p)) {
        int full = p->max_objects && p->total >= p->max_objects;
        pthread_mutex_unlock(&p->lock);
        if (full)
            ffu_error_set(FFU_ERR_TOO_LARGE, "pool: all %zu objects are in use", p->max_objects);
        else
            ffu_error_set(FFU_ERR_NOMEM, "pool: cannot grow");
        return NULL;
    }
    void *obj = p->free_list;
    p->free_list = *(void **)obj;
    p->in_use++;
    pthread_mutex_unlock(&p->lock);
    return obj;
}

void ffu_pool_put(ffu_pool *p, void *obj)
{
    if (!p || !obj) return;
    pthread_mutex_lock(&p->lock);
    *(void **)obj = p->free_list;
    p->free_list = obj;
    p->in_use--;
    pthread_mutex_unlock(&p->lock);
}

size_t ffu_pool_in_use(const ffu_pool *p)
{
    if (!p) return 0;
    ffu_pool *mp = (ffu_pool *)p; /* the lock is not part of the logical state */
    pthread_mutex_lock(&mp->lock);
    size_t n = mp->in_use;
    pthread_mutex_unlock(&mp->lock);
    return n;
}
