/* test_rt_load.c: loading bundles: CRC32C (the three-chain hardware path against a
 * bitwise reference), a bundle file mapped by spy_model_load_file against the copy of
 * spy_model_load_memory (both verified, same results), files damaged on disk
 * (truncated, a constant byte flipped) refused cleanly, a loaded model surviving the
 * removal and atomic replacement of its file, and a bundle read from a pipe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sbin.h"
#include "unit_util.h"

static const IrOrigin O = {"n", "Test", NULL};

enum { ROWS = 8, K = 96, N = 160 }; /* y[ROWS,N] = x[ROWS,K] @ w[K,N] + 1 */

/* Bitwise CRC32C, the definition the fast paths must match. */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t c = ~crc;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

/* The standard check value, and every path (lengths around the three-stripe blocks,
 * odd alignments, a CRC continued over two parts) against the reference. */
static void test_crc32c(void **state) {
    (void)state;
    assert_int_equal(spy_crc32c(0, "123456789", 9), 0xE3069283u);
    size_t cap = 3 * 32768 * 2 + 77;
    uint8_t *buf = malloc(cap + 8);
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < cap + 8; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        buf[i] = (uint8_t)r;
    }
    const size_t lens[] = {0, 1, 7, 8, 9, 4095, 98303, 98304, 98305, 2 * 98304 + 77};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (size_t off = 0; off < 4; off++) {
            size_t n = lens[li];
            uint32_t want = crc_ref(0, buf + off, n);
            assert_int_equal(spy_crc32c(0, buf + off, n), want);
            size_t cut = n / 3;
            assert_int_equal(spy_crc32c(spy_crc32c(0, buf + off, cut), buf + off + cut, n - cut),
                             want);
        }
    free(buf);
}

/* A small model with a constant: y = x @ w + 1. Returns its bundle (malloc'd). */
static uint8_t *matmul_bundle(size_t *len) {
    UtFx f;
    ut_fx_begin(&f);
    int64_t xd[2] = {ROWS, K}, wd[2] = {K, N};
    float *w = malloc(sizeof(float) * K * N);
    for (int i = 0; i < K * N; i++)
        w[i] = (float)((i * 37) % 19 - 9) / 8.0f;
    ValId x = ut_input(f.g, "x", IR_DT_F32, 2, xd);
    ValId wv = ut_const(f.g, IR_DT_F32, 2, wd, w);
    ValId y = ir_binary(f.g, IR_BIN_ADD, ir_matmul(f.g, x, wv, &O), ir_const_scalar_f32(f.g, 1),
                        &O);
    ir_add_output(f.g, y);
    uint8_t *buf = ut_compile(f.g, len);
    assert_non_null(buf);
    ut_fx_end(&f);
    free(w);
    return buf;
}

/* Runs m once on a fixed input; checks the result against the formula. */
static void run_check(const spy_model *m) {
    static float x[ROWS * K], y[ROWS * N];
    for (int i = 0; i < ROWS * K; i++)
        x[i] = (float)(i % 11) - 5.0f;
    spy_session *s = NULL;
    spy_session_options so = {.num_threads = 2};
    assert_int_equal(spy_session_create(m, &so, &s), SPY_OK);
    const void *in[1] = {x};
    void *out[1] = {y};
    memset(y, 0, sizeof y);
    assert_int_equal(spy_session_run(s, in, out), SPY_OK);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < N; c++) {
            double want = 1;
            for (int k = 0; k < K; k++)
                want += (double)x[r * K + k] * ((double)((k * N + c) * 37 % 19 - 9) / 8.0);
            if (y[r * N + c] != (float)want)
                fail_msg("y[%d,%d] = %g, want %g", r, c, (double)y[r * N + c], want);
        }
    spy_session_free(s);
}

/* Writes buf[0..len) to path (made or replaced). */
static void write_file(const char *path, const void *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Offset of a section of the bundle (0 when absent). */
static uint64_t section_offset(const uint8_t *buf, uint32_t id, uint64_t *size) {
    const SpyHeader *h = (const SpyHeader *)buf;
    const SpySection *s = (const SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (s[i].id == id) {
            *size = s[i].size;
            return s[i].offset;
        }
    return 0;
}

/* The same bundle loaded from a (mapped) file and from memory: both verified, both
 * run correctly, the memory one after the caller freed its buffer. */
static void test_file_and_memory(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = matmul_bundle(&len);
    char path[] = "/tmp/spyrt_load_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, buf, len);
    spy_model *mf = NULL, *mm = NULL;
    char err[512];
    assert_int_equal(spy_model_load_file(path, &mf, err, sizeof err), SPY_OK);
    uint8_t *copy = malloc(len);
    memcpy(copy, buf, len);
    assert_int_equal(spy_model_load_memory(copy, len, &mm, err, sizeof err), SPY_OK);
    memset(copy, 0xA5, len);                 /* the model holds its own copy */
    free(copy);
    run_check(mf);
    run_check(mm);
    assert_int_equal(spy_model_session_bytes(mf), spy_model_session_bytes(mm));
    spy_model_free(mm);
    /* the mapping outlives the file's name, and an atomic replacement (a new file
     * renamed over it, as spyrec writes bundles) leaves the loaded model intact */
    assert_int_equal(remove(path), 0);
    run_check(mf);
    char tmp[sizeof path + 4];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    uint8_t *junk = calloc(1, len);
    write_file(tmp, junk, len);
    assert_int_equal(rename(tmp, path), 0);
    run_check(mf);
    spy_model_free(mf);
    remove(path);
    free(junk);
    free(buf);
}

/* Loads path and expects a clean refusal whose message names the file and says want. */
static void expect_refused(const char *path, const char *want) {
    spy_model *m = NULL;
    char err[512] = "";
    spy_status st = spy_model_load_file(path, &m, err, sizeof err);
    if (st == SPY_OK || m || !strstr(err, path) || !strstr(err, want))
        fail_msg("status %d, message '%s', wanted '%s'", st, err, want);
}

/* A bundle truncated on disk (inside the header, the table, the constants, by one
 * byte) or with a constant byte flipped is refused before anything past the file's
 * end is touched. */
static void test_damaged_file(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = matmul_bundle(&len);
    uint64_t csize = 0, coff = section_offset(buf, SPY_SEC_CONSTS, &csize);
    assert_true(coff > 0 && csize >= sizeof(float) * K * N);
    char path[] = "/tmp/spyrt_load_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const size_t cuts[] = {0, 17, sizeof(SpyHeader) + 5, (size_t)(coff + csize / 2), len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_file(path, buf, len);
        assert_int_equal(truncate(path, (off_t)cuts[i]), 0);
        expect_refused(path, cuts[i] < sizeof(SpyHeader) ? "shorter than" : "truncated");
    }
    buf[coff + csize / 3] ^= 0x10;
    write_file(path, buf, len);
    expect_refused(path, "CRC32C mismatch");
    remove(path);
    free(buf);
}

/* A bundle that is not a regular file (a pipe) is read rather than mapped. */
static void test_pipe(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = matmul_bundle(&len);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        size_t done = 0;
        while (done < len) {
            ssize_t w = write(p[1], buf + done, len - done);
            if (w <= 0)
                _exit(1);
            done += (size_t)w;
        }
        _exit(0);
    }
    close(p[1]);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", p[0]);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(spy_model_load_file(path, &m, err, sizeof err), SPY_OK);
    close(p[0]);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    run_check(m);
    spy_model_free(m);
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_file_and_memory),
        cmocka_unit_test(test_damaged_file),
        cmocka_unit_test(test_pipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
