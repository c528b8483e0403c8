/* Clocks: a monotonic clock for durations and deadlines (never jumps when the wall
 * clock is set), the wall clock for timestamps, and ISO-8601 text for logs and JSON. */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "facefuse/core.h"

static int64_t clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t ffu_clock_ns(void) { return clock_read(CLOCK_MONOTONIC); }
double ffu_clock_sec(void) { return (double)ffu_clock_ns() * 1e-9; }
int64_t ffu_time_unix_ns(void) { return clock_read(CLOCK_REALTIME); }

char *ffu_time_iso8601(char buf[32], int64_t unix_ns)
{
    /* floor division so times before 1970 keep a non-negative millisecond part */
    int64_t sec = unix_ns / 1000000000LL, rem = unix_ns % 1000000000LL;
    if (rem < 0) {
        sec--;
        rem += 1000000000LL;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(buf, 32, "invalid-time");
        return buf;
    }
    size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, 32 - n, ".%03dZ", (int)(rem / 1000000));
    return buf;
}

void ffu_sleep_ns(int64_t ns)
{
    if (ns <= 0) return;
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
