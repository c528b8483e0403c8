/* The leaf-row stream of one face, timed alone (row_stream.c). Bench-only. */
#ifndef FFU_BENCH_ERT_ROW_STREAM_H
#define FFU_BENCH_ERT_ROW_STREAM_H

#include "face/ert.h"

typedef struct row_stream {
    double bytes;            /* leaf-row bytes one face reads: trees x row bytes */
    double best_s;           /* median seconds of the fastest prefetch scheme */
    const char *best_scheme; /* which one */
    double rows_gbs;         /* bytes / best_s */
    double seq_gbs;          /* a sequential read of the whole leaf array */
    float check;             /* a sum, so the passes are not optimised away */
} row_stream;

/* Seconds on the monotonic clock; the median of v[0..n) (sorts v). Shared with bench_ert.c. */
double bench_now(void);
double bench_median(double *v, int n);

/* Times `rounds` passes of each scheme (verbose: each scheme's median on stderr); 0, or
 * -1 when out of memory. */
int ert_row_stream(const ert_model *m, int rounds, int verbose, row_stream *out);

#endif
