/* Locale-independent number <-> text for JSON and option values: a host program may
 * call setlocale(LC_ALL, "de_DE.UTF-8"), after which plain strtod/printf would use a
 * decimal comma. We use a "C" locale object created once. */
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core_internal.h"

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

static locale_t get_c_locale(void)
{
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale; /* (locale_t)0 if newlocale failed: fall back to the current one */
}

double core_strtod(const char *s, char **end)
{
    locale_t c = get_c_locale();
    return c ? strtod_l(s, end, c) : strtod(s, end);
}

int core_format_double(char *buf, size_t len, double v)
{
    if (!buf || len < 2) return 0;
    locale_t c = get_c_locale(), old = c ? uselocale(c) : (locale_t)0;
    int n = 0;
    /* %g drops trailing zeros, so 15 digits is already shortest for short values */
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, len, "%.*g", prec, v);
        if (core_strtod(buf, NULL) == v) break;
    }
    if (c) uselocale(old);
    return n;
}
