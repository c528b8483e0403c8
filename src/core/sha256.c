/* SHA-256 (FIPS 180-4), used to verify model files against the pinned manifest and,
 * later, to hash template references. Written from the standard's description; on
 * CPUs with the SHA extensions the blocks go through their instructions (`facefuse
 * info` checks ~200 MB of models, 0.6 s in the portable code). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "facefuse/core.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SHA_X86 1
#else
#define SHA_X86 0
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

#if SHA_X86
/* n blocks with the SHA extensions. The state is held as the instructions want it:
 * (A, B, E, F) and (C, D, G, H), highest word first. sha256rnds2 does two rounds from
 * the low two words of a message-plus-constant vector; sha256msg1/msg2 with one
 * alignr compute the next four schedule words from the previous sixteen. */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_ni(uint32_t h[8], const uint8_t *p,
                                                                    size_t n)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)h),
            hgfe = _mm_loadu_si128((const __m128i *)(h + 4));
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xb1), efgh = _mm_shuffle_epi32(hgfe, 0x1b);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8), cdgh = _mm_blend_epi16(efgh, cdab, 0xf0);
    for (; n; n--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m[4];
        for (int g = 0; g < 16; g++) {
            __m128i w;
            if (g < 4) {
                w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
            } else { /* words 4g..4g+3 from the groups g-4..g-1, kept in m[g % 4] */
                __m128i t = _mm_sha256msg1_epu32(m[g % 4], m[(g + 1) % 4]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(m[(g + 3) % 4], m[(g + 2) % 4], 4));
                w = _mm_sha256msg2_epu32(t, m[(g + 3) % 4]);
            }
            m[g % 4] = w;
            __m128i wk = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)(K + 4 * g)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));
        }
        abef = _mm_add_epi32(abef, abef0), cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1b), dchg = _mm_shuffle_epi32(cdgh, 0xb1);
    _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xf0));
    _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}
#endif

/* n whole blocks at p. */
static void compress_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
#if SHA_X86
    if (ffu_cpu_features() & FFU_CPU_SHA) {
        compress_ni(h, p, n);
        return;
    }
#endif
    for (; n; n--, p += 64)
        compress(h, p);
}

void ffu_sha256_init(ffu_sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->fill = 0;
}

void ffu_sha256_update(ffu_sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->len += len;
    if (s->fill) {
        size_t take = 64 - s->fill < len ? 64 - s->fill : len;
        memcpy(s->block + s->fill, p, take);
        s->fill += take, p += take, len -= take;
        if (s->fill < 64) return;
        compress_blocks(s->h, s->block, 1);
        s->fill = 0;
    }
    compress_blocks(s->h, p, len / 64);
    p += len / 64 * 64, len %= 64;
    memcpy(s->block, p, len);
    s->fill = len;
}

void ffu_sha256_final(ffu_sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->len * 8;
    uint8_t pad = 0x80, zero = 0;
    ffu_sha256_update(s, &pad, 1);
    while (s->fill != 56) ffu_sha256_update(s, &zero, 1);
    uint8_t be[8];
    for (int i = 0; i < 8; i++) be[i] = (uint8_t)(bits >> (56 - 8 * i));
    ffu_sha256_update(s, be, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

void ffu_sha256_hex(const uint8_t digest[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = 0;
}

ffu_status ffu_sha256_file(const char *path, uint8_t out[32])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ffu_error_set(errno == ENOENT ? FFU_ERR_NOT_FOUND : FFU_ERR_IO, "%s: %s", path,
                             strerror(errno));
    ffu_sha256 s;
    ffu_sha256_init(&s);
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) ffu_sha256_update(&s, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return ffu_error_set(FFU_ERR_IO, "%s: read error", path);
    ffu_sha256_final(&s, out);
    return FFU_OK;
}
