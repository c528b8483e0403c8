/* The engine's memory promise on real models (issue #3, "after the first run an
 * inference allocates nothing"): runs 2..N of real face models (among them Winograd
 * convolutions) on the `ref` and `cpu`
 * backends, at 1 and 2 threads, counted over the whole process -- our code, oneDNN,
 * libstdc++, libgomp and its worker threads.
 *
 * What is asserted:
 * - `ref`: zero heap allocations per run.
 * - `cpu`: zero allocations made by anything but oneDNN itself. libdnnl 2.6 allocates
 *   inside every dnnl_primitive_execute call -- the C entry point copies its argument
 *   array into a std::unordered_map (one node per argument plus the bucket array), and
 *   many primitives build std::function objects and small std::vectors per call
 *   (docs/NN_CPU.md "Allocation per run" has the measured sources). No public oneDNN
 *   call executes a primitive without that, so those allocations are counted and
 *   printed, and the test checks they are transient: every block oneDNN allocates in
 *   a run is freed before the run returns (no heap growth from run to run).
 *
 * How: every allocation while counting is attributed to the first frame of its call
 * stack (backtrace()) outside the allocator -- our wrappers or hook, libasan, and
 * libstdc++ (operator new) are skipped -- and counted as oneDNN's when that frame lies
 * in libdnnl's code. In plain builds this executable defines malloc, calloc, realloc,
 * memalign, aligned_alloc, posix_memalign and free and forwards them to glibc's
 * __libc_* entry points (every library's calls bind to these, operator new included);
 * under AddressSanitizer, which owns malloc, the test installs the sanitizer's
 * allocation hooks instead, which see the same calls. A self-check first proves that
 * an allocation made here is counted and attributed to "not oneDNN".
 * FFU_NOALLOC_TRACE=1 prints each distinct call stack of the counted allocations.
 *
 * Models come from ../shared/models and ~/.cache/facefuse/models (scripts/setup);
 * absent ones are skipped. */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "test.h"

#include "facefuse/nn.h"

#if defined(__SANITIZE_ADDRESS__)
#define NOALLOC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NOALLOC_ASAN 1
#endif
#endif
#ifndef NOALLOC_ASAN
#define NOALLOC_ASAN 0
#endif

/* ---- code ranges ------------------------------------------------------------------------ */

/* The allocator-side functions of this file live in their own section, so the
 * attribution can skip them by address (the linker defines __start_/__stop_). */
#define HOOK __attribute__((section("noalloc_hooks"), noinline))
extern char __start_noalloc_hooks[], __stop_noalloc_hooks[];

enum { LIB_DNNL, LIB_STDCXX, LIB_ASAN, LIB_COUNT };
static const char *const lib_names[LIB_COUNT] = {"libdnnl.so", "libstdc++.so", "libasan.so"};

#define MAX_RANGES 8
typedef struct code_range {
    uintptr_t lo, hi;
} code_range;
static code_range ranges[LIB_COUNT][MAX_RANGES];
static int nranges[LIB_COUNT];

static int find_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    for (int l = 0; l < LIB_COUNT; l++) {
        if (!info->dlpi_name || !strstr(info->dlpi_name, lib_names[l])) continue;
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || nranges[l] >= MAX_RANGES)
                continue;
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            ranges[l][nranges[l]++] = (code_range){lo, lo + ph->p_memsz};
        }
    }
    return 0;
}

HOOK static int in_lib(int l, uintptr_t pc)
{
    for (int i = 0; i < nranges[l]; i++)
        if (pc >= ranges[l][i].lo && pc < ranges[l][i].hi) return 1;
    return 0;
}

/* ---- counting ----------------------------------------------------------------------------- */

static atomic_int counting;
static atomic_long n_total, n_dnnl, n_other;
static _Thread_local int in_hook; /* an allocation made while recording one */

/* Blocks allocated while counting and not yet freed: an open-addressing set of
 * pointers (0 empty, 1 deleted), so transience can be checked exactly. */
#define LIVE_SLOTS (1 << 16)
static _Atomic uintptr_t live_set[LIVE_SLOTS];
static atomic_long n_live, n_live_lost;

HOOK static size_t live_slot(uintptr_t p)
{
    return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> 48);
}

HOOK static void live_add(const volatile void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    if (p <= 1) return;
    for (size_t i = live_slot(p), k = 0; k < LIVE_SLOTS; k++, i = (i + 1) & (LIVE_SLOTS - 1)) {
        uintptr_t cur = atomic_load(&live_set[i]);
        if ((cur == 0 || cur == 1) && atomic_compare_exchange_strong(&live_set[i], &cur, p)) {
            atomic_fetch_add(&n_live, 1);
            return;
        }
    }
    atomic_fetch_add(&n_live_lost, 1); /* full: reported as a failure */
}

HOOK static void live_remove(const volatile void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    if (p <= 1 || atomic_load_explicit(&n_live, memory_order_relaxed) == 0) return;
    for (size_t i = live_slot(p), k = 0; k < LIVE_SLOTS; k++, i = (i + 1) & (LIVE_SLOTS - 1)) {
        uintptr_t cur = atomic_load(&live_set[i]);
        if (cur == 0) return;
        if (cur == p && atomic_compare_exchange_strong(&live_set[i], &cur, (uintptr_t)1)) {
            atomic_fetch_sub(&n_live, 1);
            return;
        }
    }
}

/* Distinct call stacks seen (FFU_NOALLOC_TRACE=1, and always for non-oneDNN ones). */
#define TRACE_MAX 64
#define TRACE_DEPTH 20
#define TRACE_KEY 8 /* frames that make a stack distinct */
typedef struct trace {
    void *pc[TRACE_DEPTH];
    int depth, dnnl;
    long count;
    size_t bytes;
} trace;
static trace traces[TRACE_MAX];
static int ntraces, tracing;
static atomic_flag trace_lock = ATOMIC_FLAG_INIT;

HOOK static void trace_note(void *const *pc, int depth, int dnnl, size_t bytes)
{
    while (atomic_flag_test_and_set(&trace_lock)) {
    }
    int key = depth < TRACE_KEY ? depth : TRACE_KEY, i;
    for (i = 0; i < ntraces; i++)
        if (traces[i].depth >= key && !memcmp(traces[i].pc, pc, (size_t)key * sizeof *pc)) break;
    if (i == ntraces && ntraces < TRACE_MAX) {
        trace *t = &traces[ntraces++];
        t->depth = depth < TRACE_DEPTH ? depth : TRACE_DEPTH;
        memcpy(t->pc, pc, (size_t)t->depth * sizeof *pc);
        t->dnnl = dnnl, t->count = 0, t->bytes = bytes;
    }
    if (i < ntraces) traces[i].count++;
    atomic_flag_clear(&trace_lock);
}

/* Called on every allocation of the process; records it while counting. */
HOOK static void note_alloc(const volatile void *p, size_t bytes)
{
    if (!atomic_load_explicit(&counting, memory_order_relaxed) || in_hook) return;
    in_hook = 1;
    atomic_fetch_add(&n_total, 1);
    live_add(p);
    void *pc[TRACE_DEPTH + 16];
    int depth = backtrace(pc, TRACE_DEPTH + 16), first = 0;
    while (first < depth) {
        uintptr_t a = (uintptr_t)pc[first];
        if (!(a >= (uintptr_t)__start_noalloc_hooks && a < (uintptr_t)__stop_noalloc_hooks) &&
            !in_lib(LIB_ASAN, a) && !in_lib(LIB_STDCXX, a))
            break;
        first++;
    }
    int dnnl = first < depth && in_lib(LIB_DNNL, (uintptr_t)pc[first]);
    atomic_fetch_add(dnnl ? &n_dnnl : &n_other, 1);
    if (tracing || !dnnl) trace_note(pc + first, depth - first, dnnl, bytes);
    in_hook = 0;
}

#if NOALLOC_ASAN
/* The sanitizer's allocation hooks (sanitizer/allocator_interface.h, which GCC does
 * not install): called on every malloc/new and free/delete of the process. */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

HOOK static void asan_malloc_hook(const volatile void *p, size_t size) { note_alloc(p, size); }
HOOK static void asan_free_hook(const volatile void *p) { live_remove(p); }

static void counter_install(void)
{
    static int done;
    if (!done) __sanitizer_install_malloc_and_free_hooks(asan_malloc_hook, asan_free_hook);
    done = 1;
}
#else
/* glibc's own entry points behind ours */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

HOOK void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    note_alloc(p, n);
    return p;
}
HOOK void *calloc(size_t a, size_t b)
{
    void *p = __libc_calloc(a, b);
    note_alloc(p, a * b);
    return p;
}
HOOK void *realloc(void *old, size_t n)
{
    live_remove(old);
    void *p = __libc_realloc(old, n);
    note_alloc(p, n);
    return p;
}
HOOK void *memalign(size_t al, size_t n)
{
    void *p = __libc_memalign(al, n);
    note_alloc(p, n);
    return p;
}
HOOK void *aligned_alloc(size_t al, size_t n)
{
    void *p = __libc_memalign(al, n);
    note_alloc(p, n);
    return p;
}
HOOK int posix_memalign(void **out, size_t al, size_t n)
{
    void *p = __libc_memalign(al, n);
    if (!p) return 12; /* ENOMEM */
    note_alloc(p, n);
    *out = p;
    return 0;
}
HOOK void free(void *p)
{
    live_remove(p);
    __libc_free(p);
}

static void counter_install(void) {}
#endif

typedef struct counts {
    long total, dnnl, other, live;
} counts;

static void counter_start(void)
{
    static int ready;
    if (!ready) {
        counter_install();
        dl_iterate_phdr(find_ranges, NULL);
        void *warm[4];
        backtrace(warm, 4); /* loads libgcc's unwinder now, not while counting */
        tracing = getenv("FFU_NOALLOC_TRACE") != NULL;
        ready = 1;
    }
    atomic_store(&n_total, 0);
    atomic_store(&n_dnnl, 0);
    atomic_store(&n_other, 0);
    atomic_store(&counting, 1);
}

static counts counter_stop(void)
{
    atomic_store(&counting, 0);
    counts c = {atomic_load(&n_total), atomic_load(&n_dnnl), atomic_load(&n_other),
                atomic_load(&n_live) + atomic_load(&n_live_lost)};
    return c;
}

/* Prints the recorded stacks (all with tracing, else the non-oneDNN ones unless
 * quiet) and forgets them and the live set. */
static void counter_report(const char *what, int quiet)
{
    for (int i = 0; i < ntraces; i++) {
        const trace *t = &traces[i];
        if (!tracing && (t->dnnl || quiet)) continue;
        fprintf(stderr, "-- %s: %ld allocation%s (%s, e.g. %zu bytes) from:\n", what, t->count,
                t->count == 1 ? "" : "s", t->dnnl ? "oneDNN" : "NOT oneDNN", t->bytes);
        fflush(stderr);
        backtrace_symbols_fd(t->pc, t->depth, STDERR_FILENO);
    }
    ntraces = 0;
    memset(live_set, 0, sizeof live_set);
    atomic_store(&n_live, 0);
    atomic_store(&n_live_lost, 0);
}

/* ---- the models ----------------------------------------------------------------------- */

typedef struct noalloc_model {
    const char *file;
    int cache; /* 1: ~/.cache/facefuse/models, 0: ../shared/models, 2: the fuzz seeds */
} noalloc_model;

static const noalloc_model models[] = {
    {"blazeface-back.json", 1},
    {"mobilefacenet.json", 1},
    {"face_detection_yunet_2023mar.onnx", 0},
    {"ultraface_version-RFB-320.onnx", 0},
    {"mediapipe_face_landmark.onnx", 0},
    {"antispoof.json", 1}, /* two Winograd convolutions (staged blocked layouts) */
    /* sizes found at run time (NonMaxSuppression, NonZero, Compress, Unique): each
     * counted run writes a new score, so the counts change from run to run */
    {"data_shape.onnx", 2},
};

static const char *model_path(const noalloc_model *m, char *buf, size_t len)
{
    if (m->cache == 2) {
        snprintf(buf, len, "%s/tests/fixtures/corpus/onnx/%s", FFU_TEST_SOURCE_DIR, m->file);
        return buf;
    }
    if (!m->cache) {
        char rel[256];
        snprintf(rel, sizeof rel, "models/%s", m->file);
        return test_shared_path(rel, buf, len);
    }
    const char *dir = getenv("FFU_MODEL_DIR"), *home = getenv("HOME");
    if (dir)
        snprintf(buf, len, "%s/%s", dir, m->file);
    else
        snprintf(buf, len, "%s/.cache/facefuse/models/%s", home ? home : ".", m->file);
    struct stat st;
    return stat(buf, &st) == 0 ? buf : NULL;
}

/* Runs counted after the first (planning) run. */
#define COUNTED_RUNS 3

typedef struct run_result {
    int ok;
    counts c;        /* over the counted runs */
    long live_after; /* blocks of a run still allocated when it returned (max over runs) */
} run_result;

/* Runs one model on one backend and thread count. */
static run_result count_runs(const ffu_nn_model *m, const char *backend, int threads)
{
    run_result r = {0};
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = threads;
    ffu_nn_session *s = NULL;
    ffu_nn_tensor in[8];
    int nin = ffu_nn_model_num_inputs(m);
    if (ffu_nn_session_create(m, &o, &s) != FFU_OK || nin > 8) goto done;
    for (int i = 0; i < nin; i++) {
        if (ffu_nn_session_input(s, i, &in[i]) != FFU_OK) goto done;
        /* a fixed, image-like pattern; inputs of other types stay zero */
        if (in[i].dtype == FFU_DTYPE_F32)
            for (size_t k = 0; k < in[i].nbytes / 4; k++)
                ((float *)in[i].data)[k] = (float)(k % 251) / 251.0f;
    }
    if (ffu_nn_session_run(s) != FFU_OK) goto done;
    ffu_status st = FFU_OK;
    for (int run = 0; run < COUNTED_RUNS && st == FFU_OK; run++) {
        /* a new input each run, as a caller writes one */
        if (in[0].dtype == FFU_DTYPE_F32) ((float *)in[0].data)[run] = (float)run;
        counter_start();
        st = ffu_nn_session_run(s);
        counts c = counter_stop();
        r.c.total += c.total, r.c.dnnl += c.dnnl, r.c.other += c.other;
        if (c.live > r.live_after) r.live_after = c.live;
    }
    r.ok = st == FFU_OK;
done:
    if (!r.ok) fprintf(stderr, "%s: %s\n", backend, ffu_error_message());
    ffu_nn_session_destroy(s);
    return r;
}

/* The counter sees an allocation made here and attributes it to "not oneDNN". */
static void test_counter_works(void)
{
    void *(*volatile alloc)(size_t) = malloc;
    void *volatile keep;
    counter_start();
    keep = alloc(100);
    counts held = counter_stop();
    free(keep);
    counts freed = counter_stop();
    counter_report("self-check (expected)", 1);
    CHECK(keep != NULL);
    CHECK_EQ_INT(held.total, 1);
    CHECK_EQ_INT(held.other, 1);
    CHECK_EQ_INT(held.dnnl, 0);
    CHECK_EQ_INT(held.live, 1);
    CHECK_EQ_INT(freed.live, 0);
}

static void test_runs_allocate_nothing(void)
{
    int tested = 0, failed = 0;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        char path[1024];
        if (!model_path(&models[k], path, sizeof path)) continue;
        ffu_nn_model *m = NULL;
        if (ffu_nn_model_load(path, &m) != FFU_OK) {
            fprintf(stderr, "%s: %s\n", models[k].file, ffu_error_message());
            CHECK(0);
        }
        static const char *const backends[2] = {"ref", "cpu"};
        for (int b = 0; b < 2; b++)
            for (int threads = 1; threads <= 2; threads++) {
                run_result r = count_runs(m, backends[b], threads);
                char what[128];
                snprintf(what, sizeof what, "%s %s %d thread%s", models[k].file, backends[b],
                         threads, threads > 1 ? "s" : "");
                printf("%-44s per run: %4ld allocations (%ld in oneDNN, %ld elsewhere), %ld "
                       "still held after a run\n",
                       what, r.c.total / COUNTED_RUNS, r.c.dnnl / COUNTED_RUNS,
                       r.c.other / COUNTED_RUNS, r.live_after);
                counter_report(what, 0);
                /* ref: nothing at all; cpu: nothing but oneDNN's own, all returned */
                int bad = !r.ok || r.c.other != 0 || r.live_after != 0 ||
                          (b == 0 && r.c.total != 0);
                if (bad) printf("  FAIL %s\n", what);
                failed += bad;
                tested++;
            }
        ffu_nn_model_destroy(m);
    }
    if (!tested) TEST_SKIP("no models (../shared/models, ~/.cache/facefuse/models)");
    CHECK_EQ_INT(failed, 0);
}

TEST_MAIN(test_counter_works, test_runs_allocate_nothing)
