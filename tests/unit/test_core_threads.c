/* Thread pool and bounded queue: every task runs once, wait covers tasks submitted by
 * tasks, parallel_for covers a range exactly once, and the queue delivers every item
 * exactly once (in per-producer order) across several producers and consumers, with
 * close/timeout semantics. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "facefuse/core.h"
#include "test.h"

static atomic_int counter;

static void inc(void *arg)
{
    (void)arg;
    atomic_fetch_add(&counter, 1);
}

static void test_cpu_count(void)
{
    CHECK(ffu_cpu_count() >= 1);
    ffu_threadpool *tp = NULL;
    CHECK_EQ_INT(ffu_threadpool_create(&tp, 0), FFU_OK);
    CHECK_EQ_INT(ffu_threadpool_size(tp), ffu_cpu_count());
    ffu_threadpool_destroy(tp);
    CHECK_EQ_INT(ffu_threadpool_create(&tp, -1), FFU_ERR_INVALID);
    CHECK(tp == NULL);
    ffu_threadpool_destroy(NULL);
}

static void test_submit_wait(void)
{
    ffu_threadpool *tp = NULL;
    CHECK_EQ_INT(ffu_threadpool_create(&tp, 4), FFU_OK);
    atomic_store(&counter, 0);
    for (int i = 0; i < 10000; i++) CHECK_EQ_INT(ffu_threadpool_submit(tp, inc, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_threadpool_wait(tp), FFU_OK);
    CHECK_EQ_INT(atomic_load(&counter), 10000);
    CHECK_EQ_INT(ffu_threadpool_wait(tp), FFU_OK); /* idle: returns at once */
    CHECK_EQ_INT(ffu_threadpool_submit(tp, NULL, NULL), FFU_ERR_INVALID);
    ffu_threadpool_destroy(tp);
}

static ffu_threadpool *fanout_pool;
static atomic_int wait_result;

static void fanout(void *arg)
{
    intptr_t depth = (intptr_t)arg;
    atomic_fetch_add(&counter, 1);
    if (depth < 6) { /* a binary tree of tasks: 127 in all */
        ffu_threadpool_submit(fanout_pool, fanout, (void *)(depth + 1));
        ffu_threadpool_submit(fanout_pool, fanout, (void *)(depth + 1));
    }
    if (depth == 0) atomic_store(&wait_result, ffu_threadpool_wait(fanout_pool));
}

static void test_tasks_submit_tasks(void)
{
    CHECK_EQ_INT(ffu_threadpool_create(&fanout_pool, 3), FFU_OK);
    atomic_store(&counter, 0);
    CHECK_EQ_INT(ffu_threadpool_submit(fanout_pool, fanout, (void *)0), FFU_OK);
    CHECK_EQ_INT(ffu_threadpool_wait(fanout_pool), FFU_OK);
    CHECK_EQ_INT(atomic_load(&counter), 127);
    CHECK_EQ_INT(atomic_load(&wait_result), FFU_ERR_INVALID); /* wait inside a worker */
    ffu_threadpool_destroy(fanout_pool);
}

static void slow_inc(void *arg)
{
    ffu_sleep_ns(100000);
    inc(arg);
}

static void test_destroy_runs_queued(void)
{
    ffu_threadpool *tp = NULL;
    CHECK_EQ_INT(ffu_threadpool_create(&tp, 2), FFU_OK);
    atomic_store(&counter, 0);
    for (int i = 0; i < 200; i++) ffu_threadpool_submit(tp, slow_inc, NULL);
    ffu_threadpool_destroy(tp);
    CHECK_EQ_INT(atomic_load(&counter), 200);
}

typedef struct range_check {
    atomic_int *hits;
    atomic_int calls;
    atomic_int bad; /* an empty or out-of-bounds chunk */
    size_t n;
} range_check;

static void mark(void *arg, size_t b, size_t e)
{
    range_check *r = arg;
    atomic_fetch_add(&r->calls, 1);
    if (b >= e || e > r->n) atomic_store(&r->bad, 1);
    for (size_t i = b; i < e && i < r->n; i++) atomic_fetch_add(&r->hits[i], 1);
}

static int run_range(ffu_threadpool *tp, size_t n)
{
    range_check r = {.n = n};
    r.hits = calloc(n ? n : 1, sizeof *r.hits);
    if (ffu_threadpool_parallel_for(tp, n, mark, &r) != FFU_OK) return 0;
    int ok = !atomic_load(&r.bad) && (n > 0 || atomic_load(&r.calls) == 0);
    for (size_t i = 0; i < n; i++) ok &= atomic_load(&r.hits[i]) == 1;
    free(r.hits);
    return ok;
}

static void test_parallel_for(void)
{
    ffu_threadpool *tp = NULL;
    CHECK_EQ_INT(ffu_threadpool_create(&tp, 4), FFU_OK);
    static const size_t sizes[] = {0, 1, 2, 3, 7, 13, 16, 17, 127, 1000, 12345};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        CHECK(run_range(tp, sizes[k]));
        CHECK(run_range(NULL, sizes[k]));
    }
    CHECK_EQ_INT(ffu_threadpool_parallel_for(tp, 10, NULL, NULL), FFU_ERR_INVALID);
    ffu_threadpool_destroy(tp);
}

static ffu_threadpool *nest_pool;
static atomic_int nest_ok;

static void nested(void *arg)
{
    (void)arg; /* from a worker: runs inline instead of deadlocking */
    if (run_range(nest_pool, 500)) atomic_fetch_add(&nest_ok, 1);
}

static void test_nested_parallel_for(void)
{
    CHECK_EQ_INT(ffu_threadpool_create(&nest_pool, 2), FFU_OK);
    atomic_store(&nest_ok, 0);
    for (int i = 0; i < 8; i++) ffu_threadpool_submit(nest_pool, nested, NULL);
    CHECK_EQ_INT(ffu_threadpool_wait(nest_pool), FFU_OK);
    CHECK_EQ_INT(atomic_load(&nest_ok), 8);
    ffu_threadpool_destroy(nest_pool);
}

/* ---- queue ---- */

#define P(x) ((void *)(uintptr_t)(x))

static void test_queue_basic(void)
{
    ffu_queue *q = NULL;
    CHECK_EQ_INT(ffu_queue_create(&q, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_queue_create(&q, 3), FFU_OK);
    CHECK_EQ_INT(ffu_queue_capacity(q), 3);
    void *it;
    CHECK_EQ_INT(ffu_queue_try_pop(q, &it), FFU_AGAIN);
    CHECK_EQ_INT(ffu_queue_pop_timeout(q, &it, 5), FFU_ERR_TIMEOUT);
    CHECK_EQ_INT(ffu_queue_pop_timeout(q, &it, 0), FFU_AGAIN);
    for (int i = 1; i <= 3; i++) CHECK_EQ_INT(ffu_queue_try_push(q, P(i)), FFU_OK);
    CHECK_EQ_INT(ffu_queue_try_push(q, P(4)), FFU_AGAIN);
    CHECK_EQ_INT(ffu_queue_size(q), 3);
    CHECK_EQ_INT(ffu_queue_pop(q, &it), FFU_OK);
    CHECK(it == P(1));
    CHECK_EQ_INT(ffu_queue_push(q, P(4)), FFU_OK); /* wraps around the ring */
    void *ev = P(99);
    CHECK_EQ_INT(ffu_queue_push_evict(q, P(5), &ev), FFU_OK);
    CHECK(ev == P(2)); /* the oldest was dropped */
    for (int want = 3; want <= 5; want++) {
        CHECK_EQ_INT(ffu_queue_pop_timeout(q, &it, 100), FFU_OK);
        CHECK(it == P(want));
    }
    CHECK_EQ_INT(ffu_queue_push_evict(q, P(6), &ev), FFU_OK);
    CHECK(ev == NULL);
    ffu_queue_close(q);
    CHECK(ffu_queue_is_closed(q));
    CHECK_EQ_INT(ffu_queue_push(q, P(7)), FFU_ERR_CLOSED);
    CHECK_EQ_INT(ffu_queue_try_push(q, P(7)), FFU_ERR_CLOSED);
    CHECK_EQ_INT(ffu_queue_pop(q, &it), FFU_OK); /* drains first */
    CHECK(it == P(6));
    CHECK_EQ_INT(ffu_queue_pop(q, &it), FFU_EOF);
    CHECK(it == NULL);
    CHECK_EQ_INT(ffu_queue_pop_timeout(q, &it, 1000), FFU_EOF);
    CHECK_EQ_INT(ffu_queue_try_pop(q, &it), FFU_EOF);
    ffu_queue_destroy(q);
    ffu_queue_destroy(NULL);
}

static void *blocked_pop(void *arg)
{
    void *it;
    return P(ffu_queue_pop(arg, &it) == FFU_EOF);
}

static void *blocked_push(void *arg)
{
    return P(ffu_queue_push(arg, P(2)) == FFU_ERR_CLOSED);
}

static void test_queue_close_wakes(void)
{
    ffu_queue *empty = NULL, *full = NULL;
    CHECK_EQ_INT(ffu_queue_create(&empty, 1), FFU_OK);
    CHECK_EQ_INT(ffu_queue_create(&full, 1), FFU_OK);
    CHECK_EQ_INT(ffu_queue_push(full, P(1)), FFU_OK);
    pthread_t a, b;
    pthread_create(&a, NULL, blocked_pop, empty);
    pthread_create(&b, NULL, blocked_push, full);
    ffu_sleep_ns(20000000); /* let them block; correctness does not depend on it */
    ffu_queue_close(empty);
    ffu_queue_close(full);
    void *ra, *rb;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    CHECK(ra == P(1));
    CHECK(rb == P(1));
    ffu_queue_destroy(empty);
    ffu_queue_destroy(full);
}

enum { PRODUCERS = 4, CONSUMERS = 4, PER_PRODUCER = 20000 };

typedef struct mpmc {
    ffu_queue *q;
    atomic_int seen[PRODUCERS * PER_PRODUCER];
    atomic_int order_bad;
    atomic_int next_producer;
} mpmc;

static void *producer(void *arg)
{
    mpmc *m = arg;
    int p = atomic_fetch_add(&m->next_producer, 1);
    for (int i = 0; i < PER_PRODUCER; i++) {
        uintptr_t v = (uintptr_t)(p * PER_PRODUCER + i) + 1; /* never NULL */
        ffu_status s = (i & 1) ? ffu_queue_push(m->q, P(v)) : ffu_queue_try_push(m->q, P(v));
        while (s == FFU_AGAIN) s = ffu_queue_push(m->q, P(v));
        if (s != FFU_OK) return P(1);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    mpmc *m = arg;
    int last[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) last[i] = -1;
    for (int n = 0;; n++) {
        void *it;
        ffu_status s = (n & 1) ? ffu_queue_pop(m->q, &it) : ffu_queue_pop_timeout(m->q, &it, 50);
        if (s == FFU_ERR_TIMEOUT) continue;
        if (s == FFU_EOF) break;
        if (s != FFU_OK) return P(1);
        int v = (int)((uintptr_t)it - 1), p = v / PER_PRODUCER, i = v % PER_PRODUCER;
        atomic_fetch_add(&m->seen[v], 1);
        if (i <= last[p]) atomic_store(&m->order_bad, 1); /* FIFO per producer */
        last[p] = i;
    }
    return NULL;
}

static void test_queue_mpmc(void)
{
    mpmc *m = calloc(1, sizeof *m);
    CHECK(m);
    CHECK_EQ_INT(ffu_queue_create(&m->q, 16), FFU_OK);
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) pthread_create(&ct[i], NULL, consumer, m);
    for (int i = 0; i < PRODUCERS; i++) pthread_create(&pt[i], NULL, producer, m);
    int bad = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        void *r;
        pthread_join(pt[i], &r);
        bad |= r != NULL;
    }
    ffu_queue_close(m->q);
    for (int i = 0; i < CONSUMERS; i++) {
        void *r;
        pthread_join(ct[i], &r);
        bad |= r != NULL;
    }
    int missing = 0, dup = 0;
    for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++) {
        int c = atomic_load(&m->seen[i]);
        missing += c == 0;
        dup += c > 1;
    }
    ffu_queue_destroy(m->q);
    int order_bad = atomic_load(&m->order_bad);
    free(m);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(missing, 0);
    CHECK_EQ_INT(dup, 0);
    CHECK_EQ_INT(order_bad, 0);
}

TEST_MAIN(test_cpu_count, test_submit_wait, test_tasks_submit_tasks, test_destroy_runs_queued,
          test_parallel_for, test_nested_parallel_for, test_queue_basic, test_queue_close_wakes,
          test_queue_mpmc)
