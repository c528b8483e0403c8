/* The unit-test harness: a few CHECK macros and a runner, header only.
 *
 * A test file defines functions `static void test_xxx(void)` and lists them in
 * `TEST_MAIN(test_a, test_b, ...)`. A failed CHECK prints file:line and the values,
 * marks the current test failed and returns from it. TEST_SKIP("why") makes the whole
 * program exit 77 (ctest reports "skipped") when no test failed. Helpers give a fixed
 * seed RNG and the path of ../shared data (tests skip where it is absent). */
#ifndef FFU_TEST_H
#define FFU_TEST_H

#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int test_failed_;       /* the current test failed */
static int test_total_failed_; /* number of failed tests */
static int test_skips_;
static const char *test_skip_why_;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            test_failed_ = 1;                                                          \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                             \
    do {                                                                               \
        long long a_ = (long long)(a), b_ = (long long)(b);                            \
        if (a_ != b_) {                                                                \
            fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s == %lld, %s == %lld\n",    \
                    __FILE__, __LINE__, #a, a_, #b, b_);                               \
            test_failed_ = 1;                                                          \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                          \
    do {                                                                               \
        double a_ = (double)(a), b_ = (double)(b);                                     \
        if (!(fabs(a_ - b_) <= (tol))) {                                               \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s == %.9g, %s == %.9g (tol %g)\n", \
                    __FILE__, __LINE__, #a, a_, #b, b_, (double)(tol));                \
            test_failed_ = 1;                                                          \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                \
    do {                                                                               \
        const char *a_ = (a), *b_ = (b);                                               \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                       \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s == \"%s\", %s == \"%s\"\n",   \
                    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", #b, b_ ? b_ : "(null)"); \
            test_failed_ = 1;                                                          \
            return;                                                                    \
        }                                                                              \
    } while (0)

/* Skip the whole program (exit 77) unless something already failed. */
#define TEST_SKIP(why)                                                                 \
    do {                                                                               \
        test_skips_++;                                                                 \
        test_skip_why_ = (why);                                                        \
        return;                                                                        \
    } while (0)

typedef void (*test_fn_)(void);

static inline int test_run_(const char *names, test_fn_ *fns, int n)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", names);
    char *save = NULL, *tok = strtok_r(buf, ", ", &save);
    int passed = 0;
    for (int i = 0; i < n; i++) {
        const char *name = tok ? tok : "?";
        int skips_before = test_skips_;
        test_failed_ = 0;
        fns[i]();
        if (test_failed_) {
            printf("FAIL %s\n", name);
            test_total_failed_++;
        } else if (test_skips_ > skips_before) {
            printf("SKIP %s: %s\n", name, test_skip_why_);
        } else {
            printf("ok   %s\n", name);
            passed++;
        }
        tok = strtok_r(NULL, ", ", &save);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, test_total_failed_, test_skips_);
    if (test_total_failed_) return 1;
    if (test_skips_ && passed == 0) return 77;
    return 0;
}

#define TEST_MAIN(...)                                                                 \
    int main(void)                                                                     \
    {                                                                                  \
        test_fn_ fns_[] = {__VA_ARGS__};                                               \
        return test_run_(#__VA_ARGS__, fns_, (int)(sizeof fns_ / sizeof fns_[0]));     \
    }

/* xorshift64*: the fixed-seed RNG every test uses. */
static inline uint64_t test_rand_u64(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}
static inline float test_rand_f(uint64_t *s) /* [0, 1) */
{
    return (float)(test_rand_u64(s) >> 40) / (float)(1u << 24);
}

/* The whole file in a malloc'd buffer (free it), NULL when it cannot be read. */
static inline uint8_t *test_read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* Writes size bytes to path; 0 on success. */
static inline int test_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = fwrite(data, 1, size, f);
    int bad = fclose(f) != 0;
    return n == size && !bad ? 0 : -1;
}

/* Path of a file under ../shared, or NULL when shared data is absent. */
static inline const char *test_shared_path(const char *rel, char *buf, size_t len)
{
#ifdef FFU_TEST_SHARED_DIR
    const char *env = getenv("FFU_SHARED_DIR");
    snprintf(buf, len, "%s/%s", env ? env : FFU_TEST_SHARED_DIR, rel);
    struct stat st;
    return stat(buf, &st) == 0 ? buf : NULL;
#else
    (void)rel; (void)buf; (void)len;
    return NULL;
#endif
}

/* A fresh directory under /tmp for this test program, removed with everything in it
 * when the program exits; NULL when it cannot be made. */
static inline char *test_tmpdir_buf_(void)
{
    static char buf[64];
    return buf;
}
static inline int test_rm_one_(const char *path, const struct stat *st, int flag,
                               struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}
static inline void test_rm_tmpdir_(void)
{
    if (test_tmpdir_buf_()[0])
        nftw(test_tmpdir_buf_(), test_rm_one_, 16, FTW_DEPTH | FTW_PHYS);
}
static inline const char *test_tmpdir_auto(void)
{
    char *buf = test_tmpdir_buf_();
    if (!buf[0]) {
        snprintf(buf, 64, "/tmp/ffu_test_XXXXXX");
        if (!mkdtemp(buf)) {
            buf[0] = 0;
            return NULL;
        }
        atexit(test_rm_tmpdir_);
    }
    return buf;
}

#endif
