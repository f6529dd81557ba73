/* integrity.c: bundle integrity under damage.
 *
 *   integrity BUNDLE.sbin...
 *
 * For each (valid) bundle: every truncation is refused by spy_model_load_memory (every
 * byte for bundles up to ROBUST_TRUNC_FULL bytes, 256 KiB by default; larger ones get
 * every byte of their first 128 KiB and last 16 KiB and evenly spread cuts between,
 * unless ROBUST_FULL=1); every single-bit flip in the header and the section table is
 * refused; ROBUST_FLIPS (10000) random single-bit flips anywhere in the file are
 * refused (by a checksum or the verifier). A refusal must carry a message and a
 * SPY_E_* status other than SPY_E_NOMEM. A crash prints the damage that caused it.
 * Prints "N passed, N failed" per bundle and exits 1 on any failure.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sbin.h"
#include "spyrt.h"

static char current[256]; /* the damage being tried, for crash reports */
static long nfail;

/* On a fatal signal, say which damage caused it, then die of the signal. */
static void on_fatal(int sig)
{
    static const char head[] = "\nintegrity: fatal signal while loading: ";
    ssize_t w = write(2, head, sizeof head - 1);
    w += write(2, current, strnlen(current, sizeof current));
    w += write(2, "\n", 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* xorshift64*: deterministic pseudo-random numbers. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Read a whole file into a malloc'd buffer. */
static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = len > 0 ? malloc((size_t)len) : NULL;
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = p ? (size_t)len : 0;
    return p;
}

/* Load buf[0..n) and require a refusal with a message; report otherwise. */
static void expect_refusal(const uint8_t *buf, size_t n)
{
    spy_model *m = NULL;
    char err[512] = "";
    spy_status st = spy_model_load_memory(buf, n, &m, err, sizeof err);
    if (st == SPY_OK) {
        if (nfail++ < 20)
            printf("FAIL %s: accepted\n", current);
        spy_model_free(m);
    } else if (st == SPY_E_NOMEM || !err[0] || m) {
        if (nfail++ < 20)
            printf("FAIL %s: status %s, message '%s'\n", current, spy_status_str(st), err);
    }
}

/* Every truncation (or a spread of them for big bundles). Returns the count. */
static long truncations(const char *name, const uint8_t *buf, size_t n)
{
    const char *full = getenv("ROBUST_FULL");
    const char *lim = getenv("ROBUST_TRUNC_FULL");
    size_t full_up_to = lim ? (size_t)strtoull(lim, NULL, 10) : (size_t)256 << 10;
    size_t head = 128 << 10, tail = 16 << 10, step = 1;
    if (!(full && *full == '1') && n > full_up_to && n > head + tail)
        step = (n - head - tail) / 20000 + 1;
    long count = 0;
    for (size_t cut = 0; cut < n;) {
        snprintf(current, sizeof current, "%s truncated to %zu bytes", name, cut);
        expect_refusal(buf, cut);
        count++;
        cut += (cut < head || cut + tail >= n) ? 1 : step;
    }
    if (step > 1)
        printf("  truncation: every byte of the first %zu and last %zu bytes, every %zu-th "
               "between (ROBUST_FULL=1: all)\n",
               head, tail, step);
    return count;
}

/* Every single-bit flip in the header and the section table. */
static long header_flips(const char *name, uint8_t *buf, size_t n)
{
    const SpyHeader *h = (const SpyHeader *)buf;
    size_t end = sizeof(SpyHeader) + (size_t)h->nsections * sizeof(SpySection);
    long count = 0;
    for (size_t bit = 0; bit < end * 8 && bit / 8 < n; bit++) {
        snprintf(current, sizeof current, "%s with bit %zu of byte %zu flipped (header/table)",
                 name, bit % 8, bit / 8);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        expect_refusal(buf, n);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        count++;
    }
    return count;
}

/* Which region byte off lies in: "header", "section table", a section name, or
 * "padding" (between the table and the sections, between sections, or after them). */
static const char *region(const uint8_t *buf, size_t off)
{
    static const char *const names[] = {"?",        "STRINGS",  "TENSORS", "CONSTS",
                                        "KERNELS",  "PROGRAMS", "CODE",    "SCHEDULE",
                                        "SEGMENTS", "META",     "SELFTEST"};
    const SpyHeader *h = (const SpyHeader *)buf;
    const SpySection *s = (const SpySection *)(buf + sizeof *h);
    if (off < sizeof *h)
        return "header";
    if (off < sizeof *h + h->nsections * sizeof *s)
        return "section table";
    for (uint32_t i = 0; i < h->nsections; i++)
        if (off >= s[i].offset && off - s[i].offset < s[i].size)
            return s[i].id < sizeof names / sizeof names[0] ? names[s[i].id] : "?";
    return "padding";
}

/* ROBUST_FLIPS random single-bit flips anywhere in the file. */
static long random_flips(const char *name, uint8_t *buf, size_t n)
{
    const char *e = getenv("ROBUST_FLIPS");
    long flips = e ? atol(e) : 10000, count = 0;
    for (long i = 0; i < flips; i++) {
        size_t off = (size_t)(rng() % n);
        int bit = (int)(rng() % 8);
        snprintf(current, sizeof current, "%s with bit %d of byte %zu flipped (%s)", name, bit, off,
                 region(buf, off));
        buf[off] ^= (uint8_t)(1u << bit);
        expect_refusal(buf, n);
        buf[off] ^= (uint8_t)(1u << bit);
        count++;
    }
    return count;
}

/* All checks on one bundle file. Returns false if any failed. */
static bool check_bundle(const char *path)
{
    size_t n;
    uint8_t *buf = slurp(path, &n);
    if (!buf) {
        printf("FAIL %s: cannot read\n", path);
        return false;
    }
    spy_model *m = NULL;
    char err[512] = "";
    if (spy_model_load_memory(buf, n, &m, err, sizeof err) != SPY_OK) {
        printf("FAIL %s: the undamaged bundle does not load: %s\n", path, err);
        free(buf);
        return false;
    }
    spy_model_free(m);
    long before = nfail;
    clock_t t0 = clock();
    printf("%s: %zu bytes\n", path, n);
    long a = truncations(path, buf, n);
    long b = header_flips(path, buf, n);
    long c = random_flips(path, buf, n);
    long bad = nfail - before;
    printf("  %ld truncations, %ld header/table bit flips, %ld random bit flips: "
           "%ld passed, %ld failed (%.1f s)\n",
           a, b, c, a + b + c - bad, bad, (double)(clock() - t0) / CLOCKS_PER_SEC);
    free(buf);
    return bad == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: integrity BUNDLE.sbin...\n");
        return 2;
    }
    const char *seed = getenv("ROBUST_SEED");
    if (seed)
        rng_state ^= strtoull(seed, NULL, 0) * 0x9E3779B97F4A7C15ull;
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    signal(SIGFPE, on_fatal);
    signal(SIGABRT, on_fatal);
    signal(SIGILL, on_fatal);
    int ok = 0;
    for (int i = 1; i < argc; i++)
        ok += check_bundle(argv[i]);
    printf("integrity: %d of %d bundles passed\n", ok, argc - 1);
    return ok == argc - 1 ? 0 : 1;
}
