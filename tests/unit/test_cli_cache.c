/* test_cli_cache.c: unit tests of the compile cache's building blocks: SHA-256
 * (cli/spyrec_hash.c), through the SHA extensions where the processor has them and
 * through the portable code, against the FIPS 180-4 examples and digests computed
 * independently (Python's hashlib), at every split of the input and around the
 * padding's block boundaries; file
 * digests (mapped, and read from a pipe; pieces hashed by two threads, 16 side by side)
 * equal to their definition computed here; 16 messages hashed side by side (AVX-512)
 * equal to each hashed alone;
 * the --cache-max sizes (cli/spyrec_cache.c); digests taken from the cache's stat
 * records only while the file's stat matches (cli/spyrec_cachestat.c). The cache as a whole (hits, misses,
 * damaged entries, eviction, concurrency) is tested through spyrec in make check's
 * tools part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"

/* The hex digest of data, hashed in pieces of step bytes. */
static void digest_hex(const uint8_t *data, size_t len, size_t step, char *hex)
{
    CliHash h;
    uint8_t d[CLI_HASH_BYTES];
    cli_hash_init(&h);
    for (size_t off = 0; off < len; off += step)
        cli_hash_update(&h, data + off, len - off < step ? len - off : step);
    cli_hash_final(&h, d);
    cli_hash_hex(d, sizeof d, hex);
}

/* The bytes i % 251 for i < 1000. */
static const uint8_t *pattern(void)
{
    static uint8_t b[1000];
    for (int i = 0; i < 1000; i++)
        b[i] = (uint8_t)(i % 251);
    return b;
}

/* FIPS 180-4's examples: "abc", the two-block message, and the empty message. */
static void vectors(void)
{
    static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char hex[65];
    digest_hex((const uint8_t *)"abc", 3, 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    digest_hex((const uint8_t *)two, strlen(two), 5, hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    digest_hex(NULL, 0, 1, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* Around the padding's limits (55, 56 bytes), one block, two, and a long message:
 * every way of cutting the input gives the same digest. */
static void blocks_and_pieces(void)
{
    static const struct {
        size_t len;
        const char *hex;
    } cases[] = {
        {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
        {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
        {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
        {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
        {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
        {128, "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"},
        {1000, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"},
    };
    static const size_t steps[] = {1, 7, 63, 64, 65, 129, 1000};
    char hex[65];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            digest_hex(pattern(), cases[c].len, steps[s], hex);
            assert_string_equal(hex, cases[c].hex);
        }
}

/* The digests through the processor's SHA extensions (when it has them) and through
 * the portable code. */
static void test_digests(void **state)
{
    for (int portable = 0; portable < 2; portable++) {
        cli_hash_use_portable(portable);
        vectors();
        blocks_and_pieces();
    }
    cli_hash_use_portable(false);
}

/* The digest cli_hash_files gives the file at path, as hex. */
static bool file_hex(const char *path, char *hex)
{
    uint8_t d[1][CLI_HASH_BYTES] = {{0}};
    bool ok = false;
    assert_true(cli_hash_files(&path, 1, d, &ok));
    cli_hash_hex(d[0], CLI_HASH_BYTES, hex);
    return ok;
}

/* The definition of a file's digest, computed here piece by piece: SHA-256 of the tag,
 * the byte count and the SHA-256 of each 1 MiB piece of the n bytes p. */
static void want_hex(const uint8_t *p, size_t n, char *hex)
{
    static const char tag[] = "spyrec file digest 2";
    const size_t piece = (size_t)1 << 20;
    uint8_t len[8], d[CLI_HASH_BYTES];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    CliHash h, ph;
    cli_hash_init(&h);
    cli_hash_update(&h, tag, sizeof tag);
    cli_hash_update(&h, len, 8);
    for (size_t off = 0; off < n; off += piece) {
        cli_hash_init(&ph);
        cli_hash_update(&ph, p + off, n - off < piece ? n - off : piece);
        cli_hash_final(&ph, d);
        cli_hash_update(&h, d, sizeof d);
    }
    cli_hash_final(&h, d);
    cli_hash_hex(d, sizeof d, hex);
}

/* Write n bytes to path (a file or a fifo). */
static void put_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* A file's digest (cli_hash_files) is its definition, for an empty file, one piece and
 * three pieces (the last one short, hashed by two threads), whether it is mapped (a
 * regular file) or read (a pipe); several files at once give each its own digest; a
 * missing file is reported. */
static void test_file(void **state)
{
    char dir[] = "/tmp/test_cli_cache.XXXXXX", path[64], fifo[64], want[65], got[65];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f", dir);
    size_t big = ((size_t)9 << 20) + 5, x16 = ((size_t)17 << 20) + 5;
    size_t sizes[4] = {0, 1000, x16, big};
    uint8_t *data = malloc(x16);
    assert_non_null(data);
    for (size_t i = 0; i < x16; i++)
        data[i] = (uint8_t)(i % 251 + i / 4093);
    for (int k = 0; k < 4; k++) {          /* x16: one job of 16 full pieces, one of 2 */
        put_file(path, data, sizes[k]);
        want_hex(data, sizes[k], want);
        assert_true(file_hex(path, got));
        assert_string_equal(got, want);
    }
    /* the same bytes through a pipe (not mappable): read into memory */
    snprintf(fifo, sizeof fifo, "%s/p", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    if (pid == 0) {
        put_file(fifo, data, big);
        _exit(0);
    }
    assert_true(file_hex(fifo, got));
    assert_string_equal(got, want);
    unlink(fifo);
    /* two files at once, one missing */
    const char *two[2] = {path, fifo};
    uint8_t d[2][CLI_HASH_BYTES];
    bool ok[2];
    assert_true(cli_hash_files(two, 2, d, ok));
    assert_true(ok[0]);
    assert_false(ok[1]);
    cli_hash_hex(d[0], CLI_HASH_BYTES, got);
    assert_string_equal(got, want);
    unlink(path);
    assert_false(file_hex(path, got));
    rmdir(dir);
    free(data);
}

/* 16 messages hashed side by side (cli_hash_x16) have the digests of each hashed
 * alone, at lengths around the block and padding boundaries and at odd alignments. */
static void test_x16(void **state)
{
    static const size_t lens[] = {0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 4099};
    static uint8_t buf[16 * 4200 + 16];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
        const uint8_t *p[16];
        uint8_t out[16][CLI_HASH_BYTES];
        for (int l = 0; l < 16; l++)
            p[l] = buf + l * 4200 + l % 3;
        if (!cli_hash_x16(p, lens[t], out)) {
            print_message("no AVX-512 here: the pieces are hashed one at a time\n");
            return;
        }
        for (int l = 0; l < 16; l++) {
            char want[65], got[65];
            digest_hex(p[l], lens[t], lens[t] ? lens[t] : 1, want);
            cli_hash_hex(out[l], CLI_HASH_BYTES, got);
            assert_string_equal(got, want);
        }
    }
}

/* The .stat record of a file in the cache folder dir ("" when there is none). */
static void stat_record(const char *dir, char *name, size_t n)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s | grep '\\.stat$'", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    if (!fgets(name, (int)n, p))
        name[0] = '\0';
    name[strcspn(name, "\n")] = '\0';
    pclose(p);
}

/* Digests through the cache's stat records (cli_cache_hash_files): a file that has not
 * settled gets no record; a settled one does, and while its stat matches the record's
 * digest is taken without reading the file (shown by a record forged with another
 * digest); once the file is rewritten in place with its size and modification time
 * restored (the change time moves), it is hashed again. */
static void test_stat_records(void **state)
{
    char dir[] = "/tmp/test_cli_cache.XXXXXX", cdir[64], path[64], rec[128], rpath[256];
    assert_non_null(mkdtemp(dir));
    snprintf(cdir, sizeof cdir, "%s/c", dir);
    snprintf(path, sizeof path, "%s/f", dir);
    assert_int_equal(mkdir(cdir, 0700), 0);
    size_t n = ((size_t)9 << 20) + 3;
    uint8_t *data = malloc(n), d[1][CLI_HASH_BYTES], plain[1][CLI_HASH_BYTES];
    assert_non_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i % 253);
    put_file(path, data, n);
    const char *one[1] = {path};
    bool ok[1];
    assert_true(cli_hash_files(one, 1, plain, ok) && ok[0]);
    assert_true(cli_cache_hash_files(cdir, one, 1, d, ok) && ok[0]);   /* just written */
    assert_memory_equal(d[0], plain[0], CLI_HASH_BYTES);
    stat_record(cdir, rec, sizeof rec);
    assert_string_equal(rec, "");
    cli_cache_stat_settle(0);
    assert_true(cli_cache_hash_files(cdir, one, 1, d, ok) && ok[0]);
    assert_memory_equal(d[0], plain[0], CLI_HASH_BYTES);
    stat_record(cdir, rec, sizeof rec);
    assert_int_equal(strlen(rec), 2 * CLI_HASH_BYTES + 5);
    /* forge the record's digest: a matching stat takes it */
    snprintf(rpath, sizeof rpath, "%s/%s", cdir, rec);
    const uint8_t *payload;
    size_t size, len;
    bool damaged;
    uint8_t key[CLI_HASH_BYTES], forged[88];
    for (int i = 0; i < CLI_HASH_BYTES; i++)
        sscanf(rec + 2 * i, "%2hhx", &key[i]);
    uint8_t *m = cli_cache_map_file(rpath, CLI_CACHE_STAT, key, &size, &payload, &len, &damaged);
    assert_non_null(m);
    assert_int_equal(len, sizeof forged);
    memcpy(forged, payload, len);
    munmap(m, size);
    forged[len - 1] ^= 1;
    CliPart part = {forged, sizeof forged};
    assert_true(cli_cache_write_file(rpath, CLI_CACHE_STAT, key, &part, 1, 1));
    assert_true(cli_cache_hash_files(cdir, one, 1, d, ok) && ok[0]);
    assert_memory_equal(d[0], forged + len - CLI_HASH_BYTES, CLI_HASH_BYTES);
    /* rewrite one byte in place, same size, the modification time set back */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    data[n / 2] ^= 0x55;
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, (long)(n / 2), SEEK_SET);
    fputc(data[n / 2], f);
    fclose(f);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_true(cli_hash_files(one, 1, plain, ok) && ok[0]);
    assert_true(cli_cache_hash_files(cdir, one, 1, d, ok) && ok[0]);
    assert_memory_equal(d[0], plain[0], CLI_HASH_BYTES);
    cli_cache_stat_settle(2000000000LL);
    unlink(rpath);
    stat_record(cdir, rec, sizeof rec);
    if (rec[0]) {                          /* the record written for the new bytes */
        snprintf(rpath, sizeof rpath, "%s/%s", cdir, rec);
        unlink(rpath);
    }
    rmdir(cdir);
    unlink(path);
    rmdir(dir);
    free(data);
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
        cmocka_unit_test(test_digests),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_x16),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_stat_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
