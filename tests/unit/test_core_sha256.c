/* SHA-256 against the FIPS 180-4 / NIST example vectors, with every split of the
 * input across update calls, and the file helper against the in-memory digest. */
#include "facefuse/core.h"
#include "test.h"

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

TEST_MAIN(test_nist_vectors, test_split_updates, test_file)
