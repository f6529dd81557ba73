/* test_cli_cache.c: unit tests of the compile cache's building blocks: BLAKE2b
 * (cli/spyrec_hash.c) against the RFC 7693 vector and digests computed independently
 * (Python's hashlib), at every split of the input and across block boundaries; file
 * hashing (mapped, and read from a pipe) equal to hashing the bytes and their count;
 * and the --cache-max sizes (cli/spyrec_cache.c). The cache as a whole (hits, misses,
 * damaged entries, eviction, concurrency) is tested through spyrec in make check's
 * tools part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"

/* The hex digest (n bytes) of data under BLAKE2b, hashed in pieces of step bytes. */
static void digest_hex(const uint8_t *data, size_t len, size_t n, size_t step, char *hex)
{
    CliHash h;
    uint8_t d[64];
    cli_hash_init_len(&h, n);
    for (size_t off = 0; off < len; off += step)
        cli_hash_update(&h, data + off, len - off < step ? len - off : step);
    cli_hash_final(&h, d);
    cli_hash_hex(d, n, hex);
}

/* The bytes i % 251 for i < 1000. */
static const uint8_t *pattern(void)
{
    static uint8_t b[1000];
    for (int i = 0; i < 1000; i++)
        b[i] = (uint8_t)(i % 251);
    return b;
}

/* RFC 7693 appendix A (BLAKE2b-512 of "abc") and the empty message. */
static void test_vectors(void **state)
{
    char hex[129];
    digest_hex((const uint8_t *)"abc", 3, 64, 3, hex);
    assert_string_equal(hex, "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                             "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
    digest_hex(NULL, 0, 32, 1, hex);
    assert_string_equal(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
}

/* One block, one block and a byte, two blocks, and a long message: every way of
 * cutting the input gives the same digest. */
static void test_blocks_and_pieces(void **state)
{
    static const struct {
        size_t len;
        const char *hex;
    } cases[] = {
        {128, "c3582f71ebb2be66fa5dd750f80baae97554f3b015663c8be377cfcb2488c1d1"},
        {129, "f7f3c46ba2564ff4c4c162da1f5b605f9f1c4aa6a20652a9f9a337c1a2f5b9c9"},
        {256, "582f782226018ec33076bd8d1c42413530ac7e1126260ffc0f306ba3befc3f24"},
        {1000, "b372d0608f720c8c3dd41e9c8eecb10143b41abe520b616607e754bf79c08331"},
    };
    static const size_t steps[] = {1, 7, 77, 127, 128, 129, 1000};
    char hex[65];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            digest_hex(pattern(), cases[c].len, 32, steps[s], hex);
            assert_string_equal(hex, cases[c].hex);
        }
}

/* The digest after cli_hash_file(tag, path) as hex. */
static bool file_hex(const char *path, char *hex)
{
    CliHash h;
    uint8_t d[CLI_HASH_BYTES];
    cli_hash_init(&h);
    bool ok = cli_hash_file(&h, "t", path);
    cli_hash_final(&h, d);
    cli_hash_hex(d, sizeof d, hex);
    return ok;
}

/* A file hashes as its tag, its bytes and its byte count, whether it is mapped (a
 * regular file) or read (a pipe); a missing file fails. */
static void test_file(void **state)
{
    char dir[] = "/tmp/test_cli_cache.XXXXXX", path[64], fifo[64], want[65], got[65];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(pattern(), 1, 1000, f), 1000);
    fclose(f);
    CliHash h;
    uint8_t d[CLI_HASH_BYTES], len[8] = {1000 & 0xff, 1000 >> 8};
    cli_hash_init(&h);
    cli_hash_update(&h, "t", 2);
    cli_hash_update(&h, pattern(), 1000);
    cli_hash_update(&h, len, 8);
    cli_hash_final(&h, d);
    cli_hash_hex(d, sizeof d, want);
    assert_true(file_hex(path, got));
    assert_string_equal(got, want);
    /* the same bytes through a pipe (not mappable): read in pieces */
    snprintf(fifo, sizeof fifo, "%s/p", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *w = fopen(fifo, "wb");
        fwrite(pattern(), 1, 1000, w);
        fclose(w);
        _exit(0);
    }
    assert_true(file_hex(fifo, got));
    assert_string_equal(got, want);
    unlink(fifo);
    unlink(path);
    assert_false(file_hex(path, got));
    rmdir(dir);
}

/* --cache-max values. */
static void test_sizes(void **state)
{
    uint64_t b;
    assert_true(cli_cache_parse_size("512M", &b));
    assert_true(b == 512ull << 20);
    assert_true(cli_cache_parse_size("2G", &b));
    assert_true(b == 2ull << 30);
    assert_true(cli_cache_parse_size("64KiB", &b));
    assert_true(b == 64ull << 10);
    assert_true(cli_cache_parse_size("1t", &b));
    assert_true(b == 1ull << 40);
    assert_true(cli_cache_parse_size("100000", &b));
    assert_true(b == 100000);
    const char *bad[] = {"", "0", "-1", "12Q", "G", "1.5G", "99999999999999999999", "4M "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(cli_cache_parse_size(bad[i], &b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_blocks_and_pieces),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
