/* CPU feature detection: which SIMD paths (AVX2, AVX-512, AMX) this process may use.
 * A set counts only when CPUID reports it *and* the OS saves its registers (XCR0),
 * otherwise the first instruction faults. FFU_CPU_MASK lets tests and benchmarks
 * force the scalar or AVX2 paths on a machine that has more. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/core.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPU_X86 1
#else
#define CPU_X86 0
#endif

static const char *const feature_names[FFU_CPU_FEATURE_COUNT] = {
    "sse42",      "avx2",     "fma",      "avx512f",  "avx512bw", "avx512vnni",
    "avx512bf16", "amx_tile", "amx_bf16", "amx_int8", "sha",
};

#define AVX512_ALL (FFU_CPU_AVX512F | FFU_CPU_AVX512BW | FFU_CPU_AVX512VNNI | FFU_CPU_AVX512BF16)
#define AMX_ALL (FFU_CPU_AMX_TILE | FFU_CPU_AMX_BF16 | FFU_CPU_AMX_INT8)

#if CPU_X86
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static unsigned detect(void)
{
    unsigned f = 0;
#if CPU_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (c & (1u << 20)) f |= FFU_CPU_SSE42;
    int osxsave = (c & (1u << 27)) != 0, avx = (c & (1u << 28)) != 0, fma = (c & (1u << 12)) != 0;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    int os_avx = (xcr0 & 0x6) == 0x6;                      /* XMM + YMM state */
    int os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;       /* opmask, ZMM_Hi256, Hi16_ZMM */
    int os_amx = (xcr0 & (3ull << 17)) == (3ull << 17);    /* XTILECFG + XTILEDATA */
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (!avx || !os_avx) return f; /* everything below needs AVX state */
    if (fma) f |= FFU_CPU_FMA;
    if (max_leaf < 7) return f;
    unsigned b7, c7, d7, a71 = 0;
    __cpuid_count(7, 0, a, b7, c7, d7);
    unsigned max_sub7 = a;
    if (max_sub7 >= 1) __cpuid_count(7, 1, a71, b, c, d);
    if (b7 & (1u << 5)) f |= FFU_CPU_AVX2;
    if (b7 & (1u << 29)) f |= FFU_CPU_SHA; /* on SSE registers: needs only SSE4.x */
    if (os_avx512 && (b7 & (1u << 16))) {
        f |= FFU_CPU_AVX512F;
        if (b7 & (1u << 30)) f |= FFU_CPU_AVX512BW;
        if (c7 & (1u << 11)) f |= FFU_CPU_AVX512VNNI;
        if (a71 & (1u << 5)) f |= FFU_CPU_AVX512BF16;
    }
    if (os_amx && (d7 & (1u << 24))) {
        f |= FFU_CPU_AMX_TILE;
        if (d7 & (1u << 22)) f |= FFU_CPU_AMX_BF16;
        if (d7 & (1u << 25)) f |= FFU_CPU_AMX_INT8;
    }
#endif
    return f;
}

/* Sets that only make sense on top of others: code picks the widest path and
 * assumes the narrower ones exist. */
static unsigned close_dependencies(unsigned f)
{
    if (!(f & FFU_CPU_SSE42)) f = 0;
    if (!(f & FFU_CPU_AVX2)) f &= ~(unsigned)(AVX512_ALL | AMX_ALL);
    if (!(f & FFU_CPU_AVX512F)) f &= ~(unsigned)AVX512_ALL;
    if (!(f & FFU_CPU_AMX_TILE)) f &= ~(unsigned)AMX_ALL;
    return f;
}

unsigned ffu_cpu_features_mask(unsigned features, const char *mask)
{
    if (!mask) return features;
    const char *p = mask;
    while (*p) {
        size_t n = strcspn(p, ", ");
        if (n == 3 && strncmp(p, "all", 3) == 0) features = 0;
        for (int i = 0; n && i < FFU_CPU_FEATURE_COUNT; i++)
            if (strncmp(feature_names[i], p, n) == 0) features &= ~(1u << i);
        p += n;
        p += strspn(p, ", ");
    }
    return close_dependencies(features);
}

static unsigned detected, effective;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_features(void)
{
    detected = detect();
    effective = ffu_cpu_features_mask(detected, getenv("FFU_CPU_MASK"));
}

unsigned ffu_cpu_features(void)
{
    pthread_once(&once, init_features);
    return effective;
}

unsigned ffu_cpu_features_detected(void)
{
    pthread_once(&once, init_features);
    return detected;
}

const char *ffu_cpu_feature_name(unsigned one_flag)
{
    for (int i = 0; i < FFU_CPU_FEATURE_COUNT; i++)
        if (one_flag == 1u << i) return feature_names[i];
    return NULL;
}

char *ffu_cpu_features_string(unsigned features, char *buf, size_t len)
{
    if (!buf || !len) return buf;
    size_t pos = 0;
    buf[0] = 0;
    for (int i = 0; i < FFU_CPU_FEATURE_COUNT; i++) {
        if (!(features & (1u << i))) continue;
        int n = snprintf(buf + pos, len - pos, "%s%s", pos ? " " : "", feature_names[i]);
        if (n < 0 || (size_t)n >= len - pos) break; /* truncated; still terminated */
        pos += (size_t)n;
    }
    if (pos == 0) snprintf(buf, len, "none");
    return buf;
}

char *ffu_cpu_name(char *buf, size_t len)
{
    if (!buf || !len) return buf;
    snprintf(buf, len, "unknown");
#if CPU_X86
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000004u) return buf;
    unsigned r[12];
    for (unsigned i = 0; i < 3; i++)
        __cpuid(0x80000002u + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
    char brand[49];
    memcpy(brand, r, 48);
    brand[48] = 0;
    const char *s = brand;
    while (*s == ' ') s++;
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ') n--;
    /* family and model tell hosts apart where the brand is generic ("Intel(R) Xeon(R)
     * Processor" in a VM); the display values as the vendors define them */
    unsigned a, b, c, d;
    __cpuid(1, a, b, c, d);
    unsigned fam = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
    if (fam == 0xf) fam += (a >> 20) & 0xff;
    if (fam == 0x6 || fam >= 0xf) model |= ((a >> 16) & 0xf) << 4;
    if (n) snprintf(buf, len, "%.*s (family %u, model %u)", (int)n, s, fam, model);
#endif
    return buf;
}
