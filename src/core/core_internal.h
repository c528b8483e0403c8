/* Helpers shared by the core's own files and a few others (not installed):
 * locale-independent number text, because a host application may call setlocale() and
 * JSON, option values and config files always use '.' as the decimal point; UTF-8
 * validation for the text formats we write (JSON, a WebP's XMP). */
#ifndef FFU_CORE_INTERNAL_H
#define FFU_CORE_INTERNAL_H

#include <stddef.h>

/* strtod in the "C" locale. */
double core_strtod(const char *s, char **end);
/* Shortest "%.Ng" text (N = 15..17, trailing zeros dropped) that reads back as v; v must be finite.
 * buf needs 32 bytes. Returns the length. */
int core_format_double(char *buf, size_t len, double v);

/* Length of a valid multi-byte UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, at most U+10FFFF), or 0 (ASCII bytes included: callers take those
 * themselves). */
size_t core_utf8_seq(const unsigned char *s, size_t avail);

/* n rounds of twelve independent f32 FMA chains (cpu_peak_*.c); only call the variant
 * whose ISA ffu_cpu_features() reports. */
float core_fma_chains_avx512(long n);
float core_fma_chains_avx2(long n);

#endif
