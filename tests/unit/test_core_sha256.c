/* SHA-256 against the FIPS 180-4 / NIST example vectors, with every split of the
 * input across update calls, and the file helper against the in-memory digest; the
 * SHA-extension blocks against the portable ones on the same inputs. */
#include <sys/wait.h>
#include <unistd.h>

#include "facefuse/core.h"
#include "test.h"

static const size_t lengths[] = {0,   1,   55,  56,  63,   64,   65,    119,
                                 120, 127, 128, 129, 1000, 4113, 100003};
#define NLEN (sizeof lengths / sizeof *lengths)

/* The digests of seeded bytes of each length in lengths. */
static void digests(uint8_t out[NLEN][32])
{
    static uint8_t data[100003];
    uint64_t seed = 11;
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)test_rand_u64(&seed);
    for (size_t k = 0; k < NLEN; k++) {
        ffu_sha256 s;
        ffu_sha256_init(&s);
        ffu_sha256_update(&s, data, lengths[k]);
        ffu_sha256_final(&s, out[k]);
    }
}

/* A child with FFU_CPU_MASK=sha (read once per process, so this test runs first,
 * before this process asks for the features) hashes with the portable code; this
 * process with the SHA extensions where the CPU has them. */
static void test_extensions_match_portable(void)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        setenv("FFU_CPU_MASK", "sha", 1);
        static uint8_t d[NLEN][32];
        digests(d);
        int ok =
            !(ffu_cpu_features() & FFU_CPU_SHA) && write(fds[1], d, sizeof d) == (ssize_t)sizeof d;
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    static uint8_t want[NLEN][32], got[NLEN][32];
    size_t have = 0;
    ssize_t r;
    while (have < sizeof want && (r = read(fds[0], (uint8_t *)want + have, sizeof want - have)) > 0)
        have += (size_t)r;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && have == sizeof want);
    digests(got);
    if (!(ffu_cpu_features() & FFU_CPU_SHA))
        fprintf(stderr, "note: no SHA extensions here, both sides ran the portable code\n");
    for (size_t k = 0; k < NLEN; k++)
        CHECK(memcmp(got[k], want[k], 32) == 0);
}

static void hex_of(const void *data, size_t len, char hex[65])
{
    ffu_sha256 s;
    uint8_t d[32];
    ffu_sha256_init(&s);
    ffu_sha256_update(&s, data, len);
    ffu_sha256_final(&s, d);
    ffu_sha256_hex(d, hex);
}

static void test_nist_vectors(void)
{
    char hex[65];
    hex_of("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two, strlen(two), hex);
    CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    hex_of(million, sizeof million, hex);
    CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_split_updates(void)
{
    uint8_t data[300];
    uint64_t seed = 7;
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)test_rand_u64(&seed);
    char want[65], got[65];
    hex_of(data, sizeof data, want);
    for (size_t cut = 0; cut <= sizeof data; cut += 7) {
        ffu_sha256 s;
        uint8_t d[32];
        ffu_sha256_init(&s);
        ffu_sha256_update(&s, data, cut);
        for (size_t i = cut; i < sizeof data; i++) ffu_sha256_update(&s, data + i, 1);
        ffu_sha256_final(&s, d);
        ffu_sha256_hex(d, got);
        CHECK_STR(got, want);
    }
}

static void test_file(void)
{
    char path[] = "/tmp/ffu_sha256_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    uint8_t buf[70000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 31 + 7);
    fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    uint8_t d[32];
    char want[65], got[65];
    hex_of(buf, sizeof buf, want);
    CHECK_EQ_INT(ffu_sha256_file(path, d), FFU_OK);
    ffu_sha256_hex(d, got);
    remove(path);
    CHECK_STR(got, want);
    CHECK_EQ_INT(ffu_sha256_file(path, d), FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), path) != NULL);
}

TEST_MAIN(test_extensions_match_portable, test_nist_vectors, test_split_updates, test_file)
