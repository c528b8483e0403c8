/* The measured f32 multiply-add peak of one thread, reported by the benchmarks next to
 * their timings. The VMs this project runs on are not one machine: the same 2-vCPU
 * guest has come up on an AMD EPYC host at about 257 GFLOP/s and on an Intel Xeon at
 * about 177, which moves every compute-bound figure by that ratio. A figure that names
 * the peak it was measured at can be read across days; one that does not cannot. */
#include <stdlib.h>

#include "core_internal.h"
#include "facefuse/core.h"

static volatile float core_fma_sink; /* keeps the chains' result alive */

double ffu_cpu_fma_peak_gflops(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned f = ffu_cpu_features();
    int lanes = (f & FFU_CPU_AVX512F) ? 16 : (f & FFU_CPU_AVX2) && (f & FFU_CPU_FMA) ? 8 : 0;
    if (!lanes) return 0;
    float (*chains)(long) = lanes == 16 ? core_fma_chains_avx512 : core_fma_chains_avx2;
    const long n = 200000; /* 2.4 M FMA instructions: about 0.5-1 ms a round */
    chains(n / 10);        /* wake the vector unit (its clock and power state) */
    double best = 0;
    for (int r = 0; r < 7; r++) {
        double t = ffu_clock_sec();
        core_fma_sink = chains(n);
        t = ffu_clock_sec() - t;
        if (t > 0 && (best == 0 || t < best)) best = t;
    }
    return best > 0 ? (double)n * 12 * lanes * 2 / best * 1e-9 : 0;
#else
    return 0;
#endif
}

/* The fastest of five alternating rounds of each chain kind, n steps of twelve FMAs. */
static int time_halves(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned f = ffu_cpu_features();
    if (!(f & FFU_CPU_AVX512F) || !(f & FFU_CPU_AVX2) || !(f & FFU_CPU_FMA)) return 0;
    const long n = 20000; /* 240 k FMA instructions: 30-130 us a round */
    core_fma_sink = core_fma_chains_avx512(n / 10);
    double best[2] = {0, 0};
    for (int r = 0; r < 10; r++) {
        double t = ffu_clock_sec();
        core_fma_sink = r & 1 ? core_fma_chains_avx512(n) : core_fma_chains_avx2(n);
        t = ffu_clock_sec() - t;
        if (t > 0 && (best[r & 1] == 0 || t < best[r & 1])) best[r & 1] = t;
    }
    /* the same instruction count: about 2x the time when 512 bits take two slots */
    return best[0] > 0 && best[1] > 1.5 * best[0];
#else
    return 0;
#endif
}

int ffu_cpu_fma512_halves(void)
{
    static volatile int known = -1; /* a race only measures twice */
    const char *e = getenv("FFU_CPU_FMA512_HALVES");
    if (e && (e[0] == '0' || e[0] == '1') && !e[1]) return e[0] == '1';
    if (known < 0) known = time_halves();
    return known;
}
