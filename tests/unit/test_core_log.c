/* Logging: level filtering, the callback sink, the default stderr format, long-line
 * truncation and that concurrent loggers reach the sink one at a time. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "facefuse/core.h"
#include "test.h"

typedef struct capture {
    int count;
    ffu_log_level level;
    const ffu_class *cls;
    const void *obj;
    char msg[2048];
} capture;

static void capture_sink(void *user, ffu_log_level level, const ffu_class *cls, const void *obj,
                         const char *msg)
{
    capture *c = user;
    c->count++;
    c->level = level;
    c->cls = cls;
    c->obj = obj;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
}

typedef struct decoder {
    const ffu_class *cls;
    const char *name;
} decoder;

static const char *decoder_name(const void *obj) { return ((const decoder *)obj)->name; }
static const ffu_class decoder_class = {"decoder", decoder_name};

static void test_level(void)
{
    ffu_log_set_level(FFU_LOG_DEBUG);
    CHECK_EQ_INT(ffu_log_get_level(), FFU_LOG_DEBUG);
    ffu_log_set_level((ffu_log_level)99); /* clamped */
    CHECK_EQ_INT(ffu_log_get_level(), FFU_LOG_TRACE);
    ffu_log_set_level((ffu_log_level)-7);
    CHECK_EQ_INT(ffu_log_get_level(), FFU_LOG_QUIET);
    CHECK_STR(ffu_log_level_name(FFU_LOG_WARN), "warn");
    CHECK_STR(ffu_log_level_name((ffu_log_level)42), "unknown");
    ffu_log_set_level(FFU_LOG_INFO);
}

static int side_effects;
static int bump(void) { return ++side_effects; }

static void test_callback_and_filter(void)
{
    capture c = {0};
    ffu_log_set_callback(capture_sink, &c);
    ffu_log_set_level(FFU_LOG_WARN);
    decoder d = {&decoder_class, "cam1"};

    ffu_log(&d, FFU_LOG_ERROR, "lost %d packets\n", 3);
    CHECK_EQ_INT(c.count, 1);
    CHECK_EQ_INT(c.level, FFU_LOG_ERROR);
    CHECK(c.cls == &decoder_class);
    CHECK(c.obj == &d);
    CHECK_STR(c.msg, "lost 3 packets"); /* trailing newline removed */

    ffu_log(NULL, FFU_LOG_INFO, "filtered");
    CHECK_EQ_INT(c.count, 1);
    FFU_LOG(NULL, FFU_LOG_DEBUG, "x %d", bump()); /* the macro must not format */
    CHECK_EQ_INT(side_effects, 0);
    FFU_LOG(NULL, FFU_LOG_WARN, "x %d", bump());
    CHECK_EQ_INT(side_effects, 1);
    CHECK_EQ_INT(c.count, 2);
    CHECK(c.cls == NULL);
    ffu_log(NULL, FFU_LOG_QUIET, "never"); /* QUIET is not a message level */
    CHECK_EQ_INT(c.count, 2);

    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ffu_log(NULL, FFU_LOG_ERROR, "%s", big);
    size_t n = strlen(c.msg);
    CHECK(n > 500 && n < 2000);
    CHECK(strcmp(c.msg + n - 3, "...") == 0);

    ffu_log_set_callback(NULL, NULL);
    ffu_log(NULL, FFU_LOG_ERROR, "to stderr");
    CHECK_EQ_INT(c.count, 3); /* the old sink is no longer called */
    ffu_log_set_level(FFU_LOG_INFO);
}

/* Runs the default sink with stderr redirected into a temporary file. */
static void test_default_sink_format(void)
{
    FILE *tmp = tmpfile();
    CHECK(tmp);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fileno(tmp), STDERR_FILENO);
    decoder d = {&decoder_class, "cam1"};
    static const ffu_class anon = {"store", NULL};
    const ffu_class *anon_obj = &anon;
    ffu_log(&d, FFU_LOG_WARN, "reconnecting in %d s", 2);
    ffu_log(&anon_obj, FFU_LOG_ERROR, "db down");
    ffu_log(NULL, FFU_LOG_INFO, "plain");
    ffu_log(NULL, FFU_LOG_DEBUG, "hidden");
    dup2(saved, STDERR_FILENO);
    close(saved);
    char text[512] = {0};
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    fclose(tmp);
    text[n] = 0;
    CHECK_STR(text, "[warn] [decoder cam1] reconnecting in 2 s\n[error] [store] db down\n[info] plain\n");
}

typedef struct stress {
    atomic_int inside; /* >1 means two threads were in the sink at once */
    int overlap, count;
} stress;

static void stress_sink(void *user, ffu_log_level level, const ffu_class *cls, const void *obj,
                        const char *msg)
{
    stress *s = user;
    if (atomic_fetch_add(&s->inside, 1) != 0) s->overlap = 1;
    s->count++; /* plain int: safe only because calls are serialised */
    atomic_fetch_sub(&s->inside, 1);
}

static void *log_thread(void *arg)
{
    for (int i = 0; i < 2000; i++) ffu_log(NULL, FFU_LOG_INFO, "line %d", i);
    return arg;
}

static void test_threads(void)
{
    stress s = {0};
    ffu_log_set_callback(stress_sink, &s);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, log_thread, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    ffu_log_set_callback(NULL, NULL);
    CHECK_EQ_INT(s.count, 8000);
    CHECK_EQ_INT(s.overlap, 0);
}

/* The per-thread error detail: set, named by ffu_error_prefix once (a caller that
 * names the file after a callee that already did does not name it twice), and a
 * detail at the buffer's length cut, not overrun. */
static void test_error_detail(void)
{
    CHECK_EQ_INT(ffu_error_set(FFU_ERR_FORMAT, "bad marker %d", 7), FFU_ERR_FORMAT);
    CHECK(strcmp(ffu_error_message(), "bad marker 7") == 0);
    CHECK_EQ_INT(ffu_error_prefix(FFU_ERR_FORMAT, "a.jpg"), FFU_ERR_FORMAT);
    CHECK(strcmp(ffu_error_message(), "a.jpg: bad marker 7") == 0);
    CHECK_EQ_INT(ffu_error_prefix(FFU_ERR_IO, "a.jpg"), FFU_ERR_IO);
    CHECK(strcmp(ffu_error_message(), "a.jpg: bad marker 7") == 0);
    ffu_error_prefix(FFU_ERR_FORMAT, "dir");
    CHECK(strcmp(ffu_error_message(), "dir: a.jpg: bad marker 7") == 0);
    ffu_error_prefix(FFU_ERR_FORMAT, "a.jp"); /* a shorter name is not the same name */
    CHECK(strcmp(ffu_error_message(), "a.jp: dir: a.jpg: bad marker 7") == 0);
    ffu_error_prefix(FFU_ERR_FORMAT, NULL);
    CHECK(strcmp(ffu_error_message(), "a.jp: dir: a.jpg: bad marker 7") == 0);
    ffu_error_set(FFU_ERR_NOMEM, NULL); /* no detail: the status's words */
    ffu_error_prefix(FFU_ERR_NOMEM, "model.onnx");
    CHECK(strcmp(ffu_error_message(), "model.onnx: out of memory") == 0);
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ffu_error_set(FFU_ERR_FORMAT, "%s", big);
    ffu_error_prefix(FFU_ERR_FORMAT, big);
    size_t n = strlen(ffu_error_message());
    CHECK(n > 100 && n < sizeof big);
    ffu_error_clear();
    CHECK(strcmp(ffu_error_message(), "success") == 0);
}

TEST_MAIN(test_level, test_callback_and_filter, test_default_sink_format, test_threads,
          test_error_detail)
