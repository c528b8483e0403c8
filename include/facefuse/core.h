/* facefuse core: status codes, error details, logging, allocation, threads, queues,
 * clocks, JSON and option tables. Every other module builds on this header.
 *
 * Conventions (see docs/API.md): functions return ffu_status; FFU_OK is 0, flow values
 * (FFU_AGAIN, FFU_EOF) are positive, errors negative. A failing call may leave a
 * one-line detail for the calling thread, read with ffu_error_message(). Out-parameters
 * are set to NULL/0 on error. destroy(NULL) and unref(NULL) are no-ops. */
#ifndef FACEFUSE_CORE_H
#define FACEFUSE_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FFU_BUILDING_LIBRARY)
#define FFU_API __attribute__((visibility("default")))
#else
#define FFU_API
#endif

#if defined(__GNUC__)
#define FFU_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define FFU_PRINTF(fmt, args)
#endif

/* ---- status codes ---------------------------------------------------------------- */

typedef enum ffu_status {
    FFU_OK = 0,
    FFU_AGAIN = 1, /* try again later (queue empty/full in a try call) */
    FFU_EOF = 2,   /* end of stream / queue closed and drained */

    FFU_ERR_NOMEM = -1,       /* allocation failed */
    FFU_ERR_INVALID = -2,     /* invalid argument (a caller bug or bad option value) */
    FFU_ERR_IO = -3,          /* file or socket I/O failed (see detail for errno text) */
    FFU_ERR_FORMAT = -4,      /* malformed or corrupt input data */
    FFU_ERR_UNSUPPORTED = -5, /* valid input that this build cannot handle */
    FFU_ERR_TOO_LARGE = -6,   /* input exceeds a size or dimension cap */
    FFU_ERR_NOT_FOUND = -7,   /* file, key, model or device not found */
    FFU_ERR_CLOSED = -8,      /* object was closed (queue, stream) */
    FFU_ERR_TIMEOUT = -9,     /* a wait timed out */
    FFU_ERR_DEVICE = -10,     /* GPU/driver error or no GPU */
    FFU_ERR_INTERNAL = -11,   /* bug: an invariant did not hold */
} ffu_status;

/* A stable short message for a status ("out of memory", "malformed data", ...). */
FFU_API const char *ffu_status_str(ffu_status s);

/* The detail of the last failure on this thread: the message given to ffu_error_set,
 * or ffu_status_str of the last status when no detail was given. Never NULL. */
FFU_API const char *ffu_error_message(void);

/* Records a detail for this thread and returns `s` so callers can write
 * `return ffu_error_set(FFU_ERR_FORMAT, "%s: bad marker", path);`. */
FFU_API ffu_status ffu_error_set(ffu_status s, const char *fmt, ...) FFU_PRINTF(2, 3);
/* Names what failed in the last failure's detail: the detail becomes "what: detail"
 * (unless it already starts with "what: "), the status becomes `s`, which is returned:
 * `return ffu_error_prefix(st, path);` after a parser that does not know the file. */
FFU_API ffu_status ffu_error_prefix(ffu_status s, const char *what);
FFU_API void ffu_error_clear(void);

/* ---- logging ----------------------------------------------------------------------- */

typedef enum ffu_log_level {
    FFU_LOG_QUIET = -1,
    FFU_LOG_ERROR = 0,
    FFU_LOG_WARN = 1,
    FFU_LOG_INFO = 2,
    FFU_LOG_DEBUG = 3,
    FFU_LOG_TRACE = 4,
    FFU_LOG_LEVEL_COUNT = 5,
} ffu_log_level;

/* Every object that logs starts with a pointer to a class, so a log line can name the
 * object: "[decoder cam1] reconnecting". item_name may be NULL (class name only). */
typedef struct ffu_class {
    const char *name;
    const char *(*item_name)(const void *obj);
} ffu_class;

/* The sink receives every line at or below the current level. obj may be NULL. */
typedef void (*ffu_log_fn)(void *user, ffu_log_level level, const ffu_class *cls,
                           const void *obj, const char *msg);

FFU_API void ffu_log_set_level(ffu_log_level level);
FFU_API ffu_log_level ffu_log_get_level(void);
/* NULL restores the default sink (stderr). Thread-safe. */
FFU_API void ffu_log_set_callback(ffu_log_fn fn, void *user);
/* The default sink ("[level] [class item] message", one write per line on stderr; user
 * unused): for a callback that does something first, then prints as usual. */
FFU_API void ffu_log_to_stderr(void *user, ffu_log_level level, const ffu_class *cls,
                               const void *obj, const char *msg);
/* obj is NULL or a pointer to a struct whose first member is `const ffu_class *`. */
FFU_API void ffu_log(const void *obj, ffu_log_level level, const char *fmt, ...)
    FFU_PRINTF(3, 4);
FFU_API void ffu_vlog(const void *obj, ffu_log_level level, const char *fmt, va_list ap);
FFU_API const char *ffu_log_level_name(ffu_log_level level);

/* The macro checks the level before formatting anything. */
#define FFU_LOG(obj, level, ...)                                                       \
    do {                                                                               \
        if ((int)(level) <= (int)ffu_log_get_level()) ffu_log((obj), (level), __VA_ARGS__); \
    } while (0)

/* ---- reference-counted buffers ----------------------------------------------------- */

/* A heap block with an atomic reference count, 64-byte aligned. Writable only while
 * the caller holds the only reference (ffu_buffer_is_writable). */
typedef struct ffu_buffer ffu_buffer;

/* Allocates `size` bytes (zeroed when `zero`), refcount 1. */
FFU_API ffu_status ffu_buffer_create(ffu_buffer **out, size_t size, int zero);
FFU_API ffu_buffer *ffu_buffer_ref(ffu_buffer *buf); /* returns buf */
FFU_API void ffu_buffer_unref(ffu_buffer **buf);     /* sets *buf to NULL */
FFU_API uint8_t *ffu_buffer_data(const ffu_buffer *buf);
FFU_API size_t ffu_buffer_size(const ffu_buffer *buf);
FFU_API int ffu_buffer_is_writable(const ffu_buffer *buf);

/* ---- SHA-256 (src/core/sha256.c) ------------------------------------------------------ */

typedef struct ffu_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t block[64];
    size_t fill;
} ffu_sha256;

FFU_API void ffu_sha256_init(ffu_sha256 *s);
FFU_API void ffu_sha256_update(ffu_sha256 *s, const void *data, size_t len);
FFU_API void ffu_sha256_final(ffu_sha256 *s, uint8_t out[32]);
FFU_API void ffu_sha256_hex(const uint8_t digest[32], char hex[65]);
FFU_API ffu_status ffu_sha256_file(const char *path, uint8_t out[32]);

/* ---- files (src/core/file.c) ----------------------------------------------------------- */

/* Reads a whole file (regular, pipe, /proc) of at most cap bytes into a malloc'd buffer
 * (free it) with a NUL byte after the size bytes, so text can be parsed in place.
 * FFU_ERR_NOT_FOUND, FFU_ERR_TOO_LARGE, FFU_ERR_IO with the path and reason;
 * FFU_ERR_INVALID for a folder (a file was asked for). */
FFU_API ffu_status ffu_file_read(const char *path, size_t cap, uint8_t **out, size_t *size);
/* Creates an empty file beside path, exclusively: "<dir>/.<name>.tmp-<pid>-<n>" (mode
 * 0666 less the umask), to be written and then renamed over path so that path is never
 * seen half-written. *tmp gets its malloc'd name; *fd its descriptor, or fd NULL to have
 * it closed (for writers that open by name). */
FFU_API ffu_status ffu_file_create_temp(const char *path, char **tmp, int *fd);
/* Writes data to a temporary file beside path, fsyncs it and renames it over path:
 * afterwards path holds either its old content or all of data. */
FFU_API ffu_status ffu_file_write_atomic(const char *path, const void *data, size_t size);
/* The names of dir's entries, hidden ones (a leading '.') left out, sorted by strcmp,
 * as a malloc'd array of malloc'd strings (ffu_dir_list_free); keep, when not NULL,
 * chooses them (nonzero keeps; it gets dir, the name and ctx). FFU_ERR_NOT_FOUND or
 * FFU_ERR_IO with the path and reason. */
FFU_API ffu_status ffu_dir_list(const char *dir,
                                int (*keep)(const char *dir, const char *name, void *ctx),
                                void *ctx, char ***names, int *count);
FFU_API void ffu_dir_list_free(char **names, int count);
/* Creates the folder dir and its missing parents (mode 0777 less the umask); FFU_OK when
 * dir is then a folder, else FFU_ERR_IO with the path and reason ("Not a directory" when
 * a file is in the way), so that work that writes there can refuse it before it starts. */
FFU_API ffu_status ffu_dir_make(const char *dir);
/* 1 when a and b both name one existing file (the same device and inode: links and
 * other spellings of a path included), else 0. Work that reads one file and writes
 * another checks it so that an output never replaces its own input. */
FFU_API int ffu_same_file(const char *a, const char *b);

/* Memory for one large buffer (weights, activations, images, file contents), released
 * with free(); 64-byte aligned. From 2 MiB up it is 2 MiB-aligned and the kernel is
 * asked to back it with huge pages (MADV_HUGEPAGE), so that filling it takes a page
 * fault per 2 MiB rather than per 4 KiB. NULL when out of memory. */
FFU_API void *ffu_alloc_large(size_t size);

/* ---- arena and object pool ------------------------------------------------------- */

/* A bump allocator: many small allocations, freed all at once by reset or destroy.
 * Not thread-safe (one owner at a time). Memory comes in blocks of `block_size`
 * bytes; allocations larger than a quarter block come from slabs that double with what
 * the arena holds (up to 64 MiB; ffu_alloc_large, so big ones are on huge pages), which
 * reset returns to the system while ordinary blocks are kept for reuse. */
typedef struct ffu_arena ffu_arena;

/* block_size 0 = 64 KiB. */
FFU_API ffu_status ffu_arena_create(ffu_arena **out, size_t block_size);
FFU_API void ffu_arena_destroy(ffu_arena *a);
/* Alignment 16. NULL on failure (with ffu_error_message set); size 0 gives a valid
 * unique pointer. The memory is not zeroed. */
FFU_API void *ffu_arena_alloc(ffu_arena *a, size_t size);
/* align: a power of two, at most 4096. */
FFU_API void *ffu_arena_alloc_aligned(ffu_arena *a, size_t size, size_t align);
FFU_API void *ffu_arena_zalloc(ffu_arena *a, size_t size); /* zeroed */
FFU_API char *ffu_arena_strdup(ffu_arena *a, const char *s); /* NULL s -> NULL */
FFU_API char *ffu_arena_strndup(ffu_arena *a, const char *s, size_t n);
/* Invalidates every pointer handed out; keeps ordinary blocks for reuse. */
FFU_API void ffu_arena_reset(ffu_arena *a);
FFU_API size_t ffu_arena_used(const ffu_arena *a);     /* bytes handed out since reset */
FFU_API size_t ffu_arena_reserved(const ffu_arena *a); /* bytes held from the system */
/* 1 when [p, p + size) lies inside memory this arena has handed out since its last
 * reset (so its owner may write it), else 0. Walks the arena's blocks. */
FFU_API int ffu_arena_owns(const ffu_arena *a, const void *p, size_t size);

/* A pool of fixed-size objects with a free list: get/put are O(1) and allocate only
 * when the pool grows by a block. Thread-safe (a mutex guards the free list).
 * Objects are 16-byte aligned and not zeroed. */
typedef struct ffu_pool ffu_pool;

/* per_block 0 = 64 objects per block; max_objects 0 = no limit. */
FFU_API ffu_status ffu_pool_create(ffu_pool **out, size_t obj_size, size_t per_block,
                                   size_t max_objects);
/* Frees every block, including objects still handed out. */
FFU_API void ffu_pool_destroy(ffu_pool *p);
/* NULL when max_objects are in use (FFU_ERR_TOO_LARGE detail) or out of memory. */
FFU_API void *ffu_pool_get(ffu_pool *p);
/* obj must come from this pool's ffu_pool_get; NULL is a no-op. */
FFU_API void ffu_pool_put(ffu_pool *p, void *obj);
FFU_API size_t ffu_pool_in_use(const ffu_pool *p);

/* ---- threads ---------------------------------------------------------------------- */

/* Number of CPUs this process may run on (affinity mask), at least 1. */
FFU_API int ffu_cpu_count(void);

/* A fixed set of worker threads running submitted functions in FIFO order.
 * All functions are thread-safe. Work may submit more work. ffu_threadpool_wait and
 * ffu_threadpool_destroy must not be called from a worker (wait returns
 * FFU_ERR_INVALID there); parallel_for called from a worker runs in the caller. */
typedef struct ffu_threadpool ffu_threadpool;
typedef void (*ffu_task_fn)(void *arg);
typedef void (*ffu_range_fn)(void *arg, size_t begin, size_t end);

/* nthreads 0 = ffu_cpu_count(); at most 1024. */
FFU_API ffu_status ffu_threadpool_create(ffu_threadpool **out, int nthreads);
/* Runs every task still queued, then joins the workers. */
FFU_API void ffu_threadpool_destroy(ffu_threadpool *tp);
FFU_API int ffu_threadpool_size(const ffu_threadpool *tp);
/* Queues fn(arg). The queue grows as needed (no allocation in steady state). */
FFU_API ffu_status ffu_threadpool_submit(ffu_threadpool *tp, ffu_task_fn fn, void *arg);
/* Blocks until every task submitted so far (and any they submitted) has finished. */
FFU_API ffu_status ffu_threadpool_wait(ffu_threadpool *tp);
/* Calls fn(arg, begin, end) over disjoint chunks covering [0, n) on the workers and
 * the calling thread, and returns when all are done. Other submitted work is not
 * waited for. tp NULL runs fn(arg, 0, n) in the caller. */
FFU_API ffu_status ffu_threadpool_parallel_for(ffu_threadpool *tp, size_t n,
                                               ffu_range_fn fn, void *arg);

/* ---- bounded queue ------------------------------------------------------------------ */

/* A bounded multi-producer multi-consumer FIFO of pointers; all calls thread-safe.
 * Closing wakes every waiter: pushes then fail with FFU_ERR_CLOSED, pops drain the
 * remaining items and then return FFU_EOF. The queue never owns the items: whoever
 * destroys a non-empty queue must drain it first if the items need freeing. */
typedef struct ffu_queue ffu_queue;

FFU_API ffu_status ffu_queue_create(ffu_queue **out, size_t capacity);
/* No thread may be waiting on q when it is destroyed (close, join, then destroy). */
FFU_API void ffu_queue_destroy(ffu_queue *q);
FFU_API ffu_status ffu_queue_push(ffu_queue *q, void *item);     /* blocks while full */
FFU_API ffu_status ffu_queue_try_push(ffu_queue *q, void *item); /* FFU_AGAIN if full */
/* Never blocks: when full, removes the oldest item into *evicted (else NULL) to make
 * room, so a slow consumer sees the newest items. */
FFU_API ffu_status ffu_queue_push_evict(ffu_queue *q, void *item, void **evicted);
FFU_API ffu_status ffu_queue_pop(ffu_queue *q, void **item);     /* blocks while empty */
FFU_API ffu_status ffu_queue_try_pop(ffu_queue *q, void **item); /* FFU_AGAIN if empty */
/* timeout_ms < 0 waits forever; 0 is try_pop; FFU_ERR_TIMEOUT when nothing came. */
FFU_API ffu_status ffu_queue_pop_timeout(ffu_queue *q, void **item, int timeout_ms);
FFU_API void ffu_queue_close(ffu_queue *q);
FFU_API int ffu_queue_is_closed(const ffu_queue *q);
FFU_API size_t ffu_queue_size(const ffu_queue *q);
FFU_API size_t ffu_queue_capacity(const ffu_queue *q);

/* ---- clocks ------------------------------------------------------------------------- */

FFU_API int64_t ffu_clock_ns(void);  /* CLOCK_MONOTONIC: for durations and deadlines */
FFU_API double ffu_clock_sec(void);  /* the same in seconds */
FFU_API int64_t ffu_time_unix_ns(void); /* wall clock, ns since 1970-01-01 UTC */
/* "2024-05-01T12:34:56.789Z" (UTC, milliseconds, floor). Returns buf. */
FFU_API char *ffu_time_iso8601(char buf[32], int64_t unix_ns);
FFU_API void ffu_sleep_ns(int64_t ns);

/* ---- CPU features --------------------------------------------------------------------- */

/* Instruction sets usable by this process: present in CPUID *and* enabled by the OS
 * (XCR0), minus those named in the environment variable FFU_CPU_MASK, read once:
 * comma-separated names or name prefixes to disable ("avx512,amx"; "all" disables
 * every flag). Disabling a set disables the sets that build on it (no AVX2 -> no
 * AVX-512 or AMX; no AVX512F -> no other AVX-512). AMX code must still ask Linux
 * for permission (arch_prctl ARCH_REQ_XCOMP_PERM) before using tiles. */
enum {
    FFU_CPU_SSE42 = 1u << 0,
    FFU_CPU_AVX2 = 1u << 1,
    FFU_CPU_FMA = 1u << 2,
    FFU_CPU_AVX512F = 1u << 3,
    FFU_CPU_AVX512BW = 1u << 4,
    FFU_CPU_AVX512VNNI = 1u << 5,
    FFU_CPU_AVX512BF16 = 1u << 6,
    FFU_CPU_AMX_TILE = 1u << 7,
    FFU_CPU_AMX_BF16 = 1u << 8,
    FFU_CPU_AMX_INT8 = 1u << 9,
    FFU_CPU_SHA = 1u << 10, /* SHA-256 instructions (SHA-NI) */
    FFU_CPU_FEATURE_COUNT = 11,
};
FFU_API unsigned ffu_cpu_features(void);
/* What the hardware and OS offer, ignoring FFU_CPU_MASK. */
FFU_API unsigned ffu_cpu_features_detected(void);
/* Applies a mask text as FFU_CPU_MASK would (pure; for tests and tools). Unknown
 * names are ignored. */
FFU_API unsigned ffu_cpu_features_mask(unsigned features, const char *mask);
/* Lowercase names separated by spaces ("sse42 avx2 fma avx512f"), "none" if empty.
 * Returns buf (always NUL-terminated when len > 0). */
FFU_API char *ffu_cpu_features_string(unsigned features, char *buf, size_t len);
FFU_API const char *ffu_cpu_feature_name(unsigned one_flag); /* NULL if not a flag */
/* The CPU brand string with its family and model numbers ("Intel(R) Xeon(R) Processor
 * (family 6, model 207)"), or "unknown". Returns buf. */
FFU_API char *ffu_cpu_name(char *buf, size_t len);
/* One thread's measured f32 multiply-add rate in GFLOP/s with the widest vector ISA
 * ffu_cpu_features() allows (AVX-512, else AVX2 + FMA; 0 with neither): seven rounds of
 * independent FMA chains, the fastest, about 5-10 ms in all. Benchmarks report it beside
 * their timings so that figures from different hosts can be told apart. */
FFU_API double ffu_cpu_fma_peak_gflops(void);
/* 1 when this core issues 512-bit FMAs at half the rate of 256-bit ones (AMD Zen 4 runs
 * each as two halves; parts with one 512-bit FMA unit behave alike), 0 where both issue
 * at the same rate (Intel Xeons with two 512-bit units, Zen 5) or without AVX-512: two
 * FMA chains timed once per process (about 0.5 ms), the answer kept. A kernel may pick
 * its register blocking by it (docs/NN_CPU.md "Planar rows"). FFU_CPU_FMA512_HALVES=0 or
 * 1 overrides it (tests). */
FFU_API int ffu_cpu_fma512_halves(void);

/* ---- JSON reading --------------------------------------------------------------------- */

/* A parsed, immutable JSON document (parsed by jansson, kept in a compact tree).
 * Every node is owned by its root; free only roots. Safe to read from many threads.
 * Numbers: integers are kept exactly (int64), other numbers as double; in a document
 * holding an integer beyond int64, integers are exact only up to 2^53. Strings are
 * valid UTF-8 without NUL bytes (input "\u0000" is rejected). Object keys are unique
 * (duplicates are rejected) and iterate in document order. */
typedef struct ffu_json ffu_json;
typedef enum ffu_json_type {
    FFU_JSON_NULL,
    FFU_JSON_BOOL,
    FFU_JSON_NUMBER,
    FFU_JSON_STRING,
    FFU_JSON_ARRAY,
    FFU_JSON_OBJECT,
} ffu_json_type;

#define FFU_JSON_MAX_SIZE ((size_t)64 << 20) /* larger input -> FFU_ERR_TOO_LARGE */
#define FFU_JSON_MAX_DEPTH 512               /* deeper nesting -> FFU_ERR_FORMAT */

/* Errors: FFU_ERR_FORMAT with "line L, column C: reason"; FFU_ERR_TOO_LARGE. */
FFU_API ffu_status ffu_json_parse(const char *text, size_t len, ffu_json **out);
/* As ffu_json_parse; details start with the path. Missing file: FFU_ERR_NOT_FOUND. */
FFU_API ffu_status ffu_json_parse_file(const char *path, ffu_json **out);
FFU_API void ffu_json_free(ffu_json *root);

/* Accessors accept NULL and nodes of the wrong type (returning NULL/0/fallback), so
 * lookups chain: ffu_json_number(ffu_json_get(cfg, "fps"), 25). */
FFU_API ffu_json_type ffu_json_typeof(const ffu_json *j); /* NULL -> FFU_JSON_NULL */
FFU_API const ffu_json *ffu_json_get(const ffu_json *obj, const char *key);
FFU_API size_t ffu_json_len(const ffu_json *arr_or_obj);
FFU_API const ffu_json *ffu_json_at(const ffu_json *arr_or_obj, size_t i);
/* Key i of an object (document order); *value gets its value when value != NULL. */
FFU_API const char *ffu_json_key_at(const ffu_json *obj, size_t i, const ffu_json **value);
FFU_API double ffu_json_number(const ffu_json *j, double fallback);
/* The integer value of an integral number that fits in int64, else fallback. */
FFU_API int64_t ffu_json_int(const ffu_json *j, int64_t fallback);
FFU_API int ffu_json_is_integer(const ffu_json *j); /* an integer held exactly */
FFU_API const char *ffu_json_string(const ffu_json *j);
FFU_API int ffu_json_bool(const ffu_json *j, int fallback);

/* ---- JSON writing ----------------------------------------------------------------------- */

/* A streaming JSON writer into a growable string. Commas, colons and (when pretty)
 * newlines with two-space indents are inserted automatically. Misuse (a value where a
 * key is due, unbalanced ends, two top-level values) and allocation failure make the
 * writer's status sticky: later calls do nothing and ffu_jw_text returns NULL.
 * Not thread-safe. */
typedef struct ffu_jw ffu_jw;

#define FFU_JW_MAX_DEPTH 1024

FFU_API ffu_status ffu_jw_create(ffu_jw **out, int pretty);
FFU_API void ffu_jw_destroy(ffu_jw *w);
FFU_API void ffu_jw_reset(ffu_jw *w); /* empty again, keeping the buffer */
FFU_API ffu_status ffu_jw_begin_object(ffu_jw *w);
FFU_API ffu_status ffu_jw_end_object(ffu_jw *w);
FFU_API ffu_status ffu_jw_begin_array(ffu_jw *w);
FFU_API ffu_status ffu_jw_end_array(ffu_jw *w);
FFU_API ffu_status ffu_jw_key(ffu_jw *w, const char *key);
/* Escapes quotes, backslashes and control characters; invalid UTF-8 bytes become
 * U+FFFD. NULL writes null. */
FFU_API ffu_status ffu_jw_string(ffu_jw *w, const char *s);
FFU_API ffu_status ffu_jw_string_len(ffu_jw *w, const char *s, size_t len);
/* Shortest text that reads back as the same double; NaN and infinities as null. */
FFU_API ffu_status ffu_jw_number(ffu_jw *w, double v);
FFU_API ffu_status ffu_jw_int(ffu_jw *w, int64_t v);
FFU_API ffu_status ffu_jw_bool(ffu_jw *w, int v);
FFU_API ffu_status ffu_jw_null(ffu_jw *w);
/* The text so far (NUL-terminated; complete once every container is closed), or NULL
 * after an error. Valid until the next call on w. len may be NULL. */
FFU_API const char *ffu_jw_text(const ffu_jw *w, size_t *len);
FFU_API ffu_status ffu_jw_status(const ffu_jw *w);

/* ---- option tables ---------------------------------------------------------------------- */

/* One table gives CLI parsing, JSON config parsing, range checks and help text, the
 * way FFmpeg's AVOption tables do. Names match with '-' and '_' treated as equal. */
typedef enum ffu_opt_type {
    FFU_OPT_BOOL,
    FFU_OPT_INT,
    FFU_OPT_FLOAT,
    FFU_OPT_STRING,
    FFU_OPT_ENUM,
    FFU_OPT_STRING_LIST
} ffu_opt_type;
typedef struct ffu_option {
    const char *name;      /* long name: "--min-score" on the CLI; "min_score" or "min-score" in JSON */
    char short_name;       /* 0 for none, e.g. 'o' for -o */
    ffu_opt_type type;
    size_t offset;         /* offsetof(struct, field): int for BOOL/INT/ENUM, double for FLOAT, char * for STRING (owned, strdup'ed), ffu_strlist for STRING_LIST */
    const char *help;
    const char *def;       /* default as text ("0.5", "true", "mesh"); NULL = 0/false/NULL/empty */
    double min, max;       /* range for INT/FLOAT, checked when min < max */
    const char *const *choices; /* ENUM: NULL-terminated names, stored as the index */
    const char *metavar;   /* "S", "PATH" in help; NULL = derived from type */
} ffu_option;
typedef struct ffu_strlist { char **items; int count; } ffu_strlist; /* repeated --input A --input B */
/* tables end with an entry whose name is NULL */

/* Sets every field to its default (a STRING_LIST default is comma-separated). The
 * fields are overwritten, not freed: call on a fresh object or after
 * ffu_options_free. A bad default in the table -> FFU_ERR_INVALID naming it. */
FFU_API ffu_status ffu_options_init(const ffu_option *opts, void *obj);
/* Sets one option from text; BOOL accepts true/false/yes/no/on/off/1/0 (NULL value =
 * true); a STRING_LIST value is appended. */
FFU_API ffu_status ffu_options_set(const ffu_option *opts, void *obj, const char *name, const char *value);
/* Parses argv[0..argc) (no program/command name in it): --name value, --name=value, -x value, bare --flag for BOOL (and --no-flag), "--" ends options. Positional arguments are moved, in order, to the front of argv and counted in *npositional. Unknown option -> FFU_ERR_INVALID with "unknown option --foo (see --help)"; missing value, bad number, out of range, bad choice ("--select: 'x' is not one of reference, one, many") likewise. Does not handle --help itself. */
/* The option tokens follow the positionals in argv, so no pointer is lost. The first
 * use of a STRING_LIST option in a call replaces the list (default or config);
 * repeats append. Short flags: -x value, -xvalue, -abc for several BOOL flags. */
FFU_API ffu_status ffu_options_parse_args(const ffu_option *opts, void *obj, int argc, char **argv, int *npositional);
/* JSON types: BOOL bool, INT integral number, FLOAT number, STRING string, ENUM
 * string (a choice), STRING_LIST array of strings or one string (replaces). null
 * leaves the field as it is. */
FFU_API ffu_status ffu_options_apply_json(const ffu_option *opts, void *obj, const ffu_json *object); /* unknown keys -> error naming the key */
FFU_API void ffu_options_print_help(const ffu_option *opts, FILE *out); /* aligned "  -o, --output PATH   help (default: x)" lines, choices listed */
FFU_API void ffu_options_free(const ffu_option *opts, void *obj);        /* frees strings and lists */
FFU_API void ffu_strlist_free(ffu_strlist *l);

#ifdef __cplusplus
}
#endif
#endif
