/* The thread pool and the bounded queue: the two concurrency primitives the pipeline
 * is built from. Both are a mutex plus condition variables, chosen over lock-free
 * structures because their users block anyway and correctness is easy to see. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "facefuse/core.h"

int ffu_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---- thread pool ----------------------------------------------------------------- */

#define POOL_MAX_THREADS 1024

typedef struct task {
    ffu_task_fn fn;
    void *arg;
} task;

struct ffu_threadpool {
    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* a task was queued, or stop */
    pthread_cond_t idle_cv; /* pending dropped to 0 */
    task *ring;             /* FIFO of queued tasks */
    size_t cap, head, count;
    size_t pending; /* queued + running */
    int stop;
    int nthreads;
    pthread_t *threads;
};

/* The pool whose worker this thread is: wait/destroy from inside would deadlock. */
static _Thread_local const ffu_threadpool *current_pool;

static void *worker_main(void *p)
{
    ffu_threadpool *tp = p;
    current_pool = tp;
    pthread_mutex_lock(&tp->lock);
    for (;;) {
        while (!tp->count && !tp->stop) pthread_cond_wait(&tp->work_cv, &tp->lock);
        if (!tp->count) break; /* stop, and nothing left to run */
        task t = tp->ring[tp->head];
        tp->head = (tp->head + 1) % tp->cap;
        tp->count--;
        pthread_mutex_unlock(&tp->lock);
        t.fn(t.arg);
        pthread_mutex_lock(&tp->lock);
        if (--tp->pending == 0) pthread_cond_broadcast(&tp->idle_cv);
    }
    pthread_mutex_unlock(&tp->lock);
    return NULL;
}

static void pool_stop_and_join(ffu_threadpool *tp, int started)
{
    pthread_mutex_lock(&tp->lock);
    tp->stop = 1;
    pthread_cond_broadcast(&tp->work_cv);
    pthread_mutex_unlock(&tp->lock);
    for (int i = 0; i < started; i++) pthread_join(tp->threads[i], NULL);
}

static void pool_free(ffu_threadpool *tp)
{
    pthread_mutex_destroy(&tp->lock);
    pthread_cond_destroy(&tp->work_cv);
    pthread_cond_destroy(&tp->idle_cv);
    free(tp->ring);
    free(tp->threads);
    free(tp);
}

ffu_status ffu_threadpool_create(ffu_threadpool **out, int nthreads)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_threadpool_create: out is NULL");
    *out = NULL;
    if (nthreads < 0 || nthreads > POOL_MAX_THREADS)
        return ffu_error_set(FFU_ERR_INVALID, "thread pool: %d threads (0..%d)", nthreads,
                             POOL_MAX_THREADS);
    if (nthreads == 0) nthreads = ffu_cpu_count();
    if (nthreads > POOL_MAX_THREADS) nthreads = POOL_MAX_THREADS;

    ffu_threadpool *tp = calloc(1, sizeof *tp);
    if (!tp) return ffu_error_set(FFU_ERR_NOMEM, "cannot allocate a thread pool");
    pthread_mutex_init(&tp->lock, NULL);
    pthread_cond_init(&tp->work_cv, NULL);
    pthread_cond_init(&tp->idle_cv, NULL);
    tp->cap = 64;
    tp->ring = malloc(tp->cap * sizeof *tp->ring);
    tp->threads = calloc((size_t)nthreads, sizeof *tp->threads);
    if (!tp->ring || !tp->threads) {
        pool_free(tp);
        return ffu_error_set(FFU_ERR_NOMEM, "cannot allocate a thread pool");
    }
    for (int i = 0; i < nthreads; i++) {
        int err = pthread_create(&tp->threads[i], NULL, worker_main, tp);
        if (err) {
            pool_stop_and_join(tp, i);
            pool_free(tp);
            return ffu_error_set(FFU_ERR_NOMEM, "thread pool: cannot start thread %d of %d",
                                 i + 1, nthreads);
        }
    }
    tp->nthreads = nthreads;
    *out = tp;
    return FFU_OK;
}

void ffu_threadpool_destroy(ffu_threadpool *tp)
{
    if (!tp) return;
    if (current_pool == tp) { /* joining ourselves would hang: refuse loudly */
        ffu_log(NULL, FFU_LOG_ERROR, "ffu_threadpool_destroy called from its own worker");
        return;
    }
    pool_stop_and_join(tp, tp->nthreads);
    pool_free(tp);
}

int ffu_threadpool_size(const ffu_threadpool *tp) { return tp ? tp->nthreads : 0; }

ffu_status ffu_threadpool_submit(ffu_threadpool *tp, ffu_task_fn fn, void *arg)
{
    if (!tp || !fn) return ffu_error_set(FFU_ERR_INVALID, "threadpool_submit: NULL pool or fn");
    pthread_mutex_lock(&tp->lock);
    if (tp->stop) {
        pthread_mutex_unlock(&tp->lock);
        return ffu_error_set(FFU_ERR_CLOSED, "thread pool is shutting down");
    }
    if (tp->count == tp->cap) { /* grow and unwrap the ring */
        task *r = tp->cap <= SIZE_MAX / 2 / sizeof *r ? malloc(2 * tp->cap * sizeof *r) : NULL;
        if (!r) {
            pthread_mutex_unlock(&tp->lock);
            return ffu_error_set(FFU_ERR_NOMEM, "thread pool: cannot grow the task queue");
        }
        for (size_t i = 0; i < tp->count; i++) r[i] = tp->ring[(tp->head + i) % tp->cap];
        free(tp->ring);
        tp->ring = r;
        tp->head = 0;
        tp->cap *= 2;
    }
    tp->ring[(tp->head + tp->count) % tp->cap] = (task){fn, arg};
    tp->count++;
    tp->pending++;
    pthread_cond_signal(&tp->work_cv);
    pthread_mutex_unlock(&tp->lock);
    return FFU_OK;
}

ffu_status ffu_threadpool_wait(ffu_threadpool *tp)
{
    if (!tp) return ffu_error_set(FFU_ERR_INVALID, "threadpool_wait: NULL pool");
    if (current_pool == tp)
        return ffu_error_set(FFU_ERR_INVALID, "threadpool_wait called from its own worker");
    pthread_mutex_lock(&tp->lock);
    while (tp->pending) pthread_cond_wait(&tp->idle_cv, &tp->lock);
    pthread_mutex_unlock(&tp->lock);
    return FFU_OK;
}

/* One parallel_for call: chunks are claimed by index with an atomic counter, so fast
 * threads take more chunks. It lives on the caller's stack, hence the caller waits
 * until every helper task has let go of it, not only until the chunks are done. */
typedef struct pfor_job {
    ffu_range_fn fn;
    void *arg;
    size_t n, chunk, nchunks;
    atomic_size_t next;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int helpers_left;
} pfor_job;

static void pfor_run(pfor_job *j)
{
    for (;;) {
        size_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (c >= j->nchunks) return;
        size_t b = c * j->chunk;
        size_t e = j->n - b < j->chunk ? j->n : b + j->chunk;
        j->fn(j->arg, b, e);
    }
}

static void pfor_helper(void *p)
{
    pfor_job *j = p;
    pfor_run(j);
    pthread_mutex_lock(&j->lock);
    if (--j->helpers_left == 0) pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->lock);
}

ffu_status ffu_threadpool_parallel_for(ffu_threadpool *tp, size_t n, ffu_range_fn fn,
                                       void *arg)
{
    if (!fn) return ffu_error_set(FFU_ERR_INVALID, "parallel_for: NULL fn");
    if (n == 0) return FFU_OK;
    if (!tp || tp->nthreads <= 1 || n == 1 || current_pool == tp) {
        fn(arg, 0, n);
        return FFU_OK;
    }
    pfor_job j = {.fn = fn, .arg = arg, .n = n};
    size_t target = (size_t)tp->nthreads * 4; /* a few chunks per thread balance load */
    j.chunk = n / target + (n % target != 0);
    j.nchunks = n / j.chunk + (n % j.chunk != 0);
    atomic_init(&j.next, 0);
    pthread_mutex_init(&j.lock, NULL);
    pthread_cond_init(&j.cv, NULL);

    size_t want = j.nchunks - 1 < (size_t)tp->nthreads ? j.nchunks - 1 : (size_t)tp->nthreads;
    j.helpers_left = (int)want;
    size_t submitted = 0;
    for (; submitted < want; submitted++)
        if (ffu_threadpool_submit(tp, pfor_helper, &j) != FFU_OK) break;
    if (submitted < want) { /* could not queue them all: the caller does more */
        pthread_mutex_lock(&j.lock);
        j.helpers_left -= (int)(want - submitted);
        pthread_mutex_unlock(&j.lock);
    }
    pfor_run(&j);
    pthread_mutex_lock(&j.lock);
    while (j.helpers_left > 0) pthread_cond_wait(&j.cv, &j.lock);
    pthread_mutex_unlock(&j.lock);
    pthread_mutex_destroy(&j.lock);
    pthread_cond_destroy(&j.cv);
    return FFU_OK;
}

/* ---- bounded queue --------------------------------------------------------------- */

struct ffu_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full; /* both use CLOCK_MONOTONIC */
    void **ring;
    size_t cap, head, count;
    int closed;
};

ffu_status ffu_queue_create(ffu_queue **out, size_t capacity)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_queue_create: out is NULL");
    *out = NULL;
    if (capacity == 0 || capacity > ((size_t)1 << 28))
        return ffu_error_set(FFU_ERR_INVALID, "queue capacity %zu (1..2^28)", capacity);
    ffu_queue *q = calloc(1, sizeof *q);
    void **ring = calloc(capacity, sizeof *ring);
    if (!q || !ring) {
        free(q);
        free(ring);
        return ffu_error_set(FFU_ERR_NOMEM, "cannot allocate a queue of %zu", capacity);
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* timeouts immune to clock steps */
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, &ca);
    pthread_cond_init(&q->not_full, &ca);
    pthread_condattr_destroy(&ca);
    q->ring = ring;
    q->cap = capacity;
    *out = q;
    return FFU_OK;
}

void ffu_queue_destroy(ffu_queue *q)
{
    if (!q) return;
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->ring);
    free(q);
}

/* Called with the lock held and room in the ring. */
static void enqueue(ffu_queue *q, void *item)
{
    q->ring[(q->head + q->count) % q->cap] = item;
    q->count++;
    pthread_cond_signal(&q->not_empty);
}

static void *dequeue(ffu_queue *q)
{
    void *item = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    pthread_cond_signal(&q->not_full);
    return item;
}

static ffu_status push(ffu_queue *q, void *item, int block)
{
    if (!q) return ffu_error_set(FFU_ERR_INVALID, "queue push: NULL queue");
    pthread_mutex_lock(&q->lock);
    while (block && q->count == q->cap && !q->closed) pthread_cond_wait(&q->not_full, &q->lock);
    ffu_status st = FFU_OK;
    if (q->closed)
        st = FFU_ERR_CLOSED;
    else if (q->count == q->cap)
        st = FFU_AGAIN;
    else
        enqueue(q, item);
    pthread_mutex_unlock(&q->lock);
    if (st == FFU_ERR_CLOSED) ffu_error_set(st, "queue is closed");
    return st;
}

ffu_status ffu_queue_push(ffu_queue *q, void *item) { return push(q, item, 1); }
ffu_status ffu_queue_try_push(ffu_queue *q, void *item) { return push(q, item, 0); }

ffu_status ffu_queue_push_evict(ffu_queue *q, void *item, void **evicted)
{
    if (evicted) *evicted = NULL;
    if (!q) return ffu_error_set(FFU_ERR_INVALID, "queue push: NULL queue");
    pthread_mutex_lock(&q->lock);
    if (q->closed) {
        pthread_mutex_unlock(&q->lock);
        return ffu_error_set(FFU_ERR_CLOSED, "queue is closed");
    }
    if (q->count == q->cap) {
        void *old = dequeue(q);
        if (evicted) *evicted = old;
    }
    enqueue(q, item);
    pthread_mutex_unlock(&q->lock);
    return FFU_OK;
}

/* timeout_ms: < 0 forever, 0 never wait. */
static ffu_status pop(ffu_queue *q, void **item, int timeout_ms)
{
    if (item) *item = NULL;
    if (!q || !item) return ffu_error_set(FFU_ERR_INVALID, "queue pop: NULL argument");
    struct timespec deadline;
    if (timeout_ms > 0) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&q->lock);
    int timed_out = 0;
    while (!q->count && !q->closed && timeout_ms != 0 && !timed_out) {
        if (timeout_ms < 0)
            pthread_cond_wait(&q->not_empty, &q->lock);
        else
            timed_out = pthread_cond_timedwait(&q->not_empty, &q->lock, &deadline) == ETIMEDOUT;
    }
    ffu_status st;
    if (q->count) {
        *item = dequeue(q);
        st = FFU_OK;
    } else if (q->closed) {
        st = FFU_EOF;
    } else {
        st = timeout_ms == 0 ? FFU_AGAIN : FFU_ERR_TIMEOUT;
    }
    pthread_mutex_unlock(&q->lock);
    if (st == FFU_ERR_TIMEOUT) ffu_error_set(st, "queue pop timed out after %d ms", timeout_ms);
    return st;
}

ffu_status ffu_queue_pop(ffu_queue *q, void **item) { return pop(q, item, -1); }
ffu_status ffu_queue_try_pop(ffu_queue *q, void **item) { return pop(q, item, 0); }
ffu_status ffu_queue_pop_timeout(ffu_queue *q, void **item, int timeout_ms)
{
    return pop(q, item, timeout_ms);
}

void ffu_queue_close(ffu_queue *q)
{
    if (!q) return;
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->lock);
}

/* The const getters still lock: the lock is not part of the logical state. */
int ffu_queue_is_closed(const ffu_queue *q)
{
    if (!q) return 1;
    ffu_queue *m = (ffu_queue *)q;
    pthread_mutex_lock(&m->lock);
    int c = m->closed;
    pthread_mutex_unlock(&m->lock);
    return c;
}

size_t ffu_queue_size(const ffu_queue *q)
{
    if (!q) return 0;
    ffu_queue *m = (ffu_queue *)q;
    pthread_mutex_lock(&m->lock);
    size_t n = m->count;
    pthread_mutex_unlock(&m->lock);
    return n;
}

size_t ffu_queue_capacity(const ffu_queue *q) { return q ? q->cap : 0; }
