/* spyrec_hash.c: BLAKE2b (RFC 7693), the hash of the compile cache's keys.
 *
 * A key names a cache entry by the content of everything that shapes a bundle (model,
 * external data, flags, target, the compiler itself), so the hash must not collide by
 * accident on gigabytes of input: BLAKE2b with a 256-bit digest, unkeyed. Files are
 * hashed in 1 MiB reads, so a model's multi-gigabyte external data never sits in
 * memory whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

#define FILE_CHUNK ((size_t)1 << 20)      /* bytes per read when hashing a file */

static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

/* The message word order of the rounds (rounds 10 and 11 use rows 0 and 1 again). */
static const uint8_t blake2b_sigma[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

/* x rotated right by n bits. */
static inline uint64_t rotr64(uint64_t x, int n)
{
    return (x >> n) | (x << (64 - n));
}

/* The little-endian 64-bit word at p. */
static inline uint64_t load64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
#endif
}

/* The mixing function G on four words of the work vector v. */
#define B2B_G(a, b, c, d, x, y)                                                            \
    do {                                                                                   \
        v[a] = v[a] + v[b] + (x);                                                          \
        v[d] = rotr64(v[d] ^ v[a], 32);                                                    \
        v[c] = v[c] + v[d];                                                                \
        v[b] = rotr64(v[b] ^ v[c], 24);                                                    \
        v[a] = v[a] + v[b] + (y);                                                          \
        v[d] = rotr64(v[d] ^ v[a], 16);                                                    \
        v[c] = v[c] + v[d];                                                                \
        v[b] = rotr64(v[b] ^ v[c], 63);                                                    \
    } while (0)

/* One round r of the compression: the columns, then the diagonals. r is a constant
 * at every use, so the message word indices fold into the code. */
#define B2B_ROUND(r)                                                                       \
    do {                                                                                   \
        const uint8_t *s_ = blake2b_sigma[(r) % 10];                                              \
        B2B_G(0, 4, 8, 12, m[s_[0]], m[s_[1]]);                                            \
        B2B_G(1, 5, 9, 13, m[s_[2]], m[s_[3]]);                                            \
        B2B_G(2, 6, 10, 14, m[s_[4]], m[s_[5]]);                                           \
        B2B_G(3, 7, 11, 15, m[s_[6]], m[s_[7]]);                                           \
        B2B_G(0, 5, 10, 15, m[s_[8]], m[s_[9]]);                                           \
        B2B_G(1, 6, 11, 12, m[s_[10]], m[s_[11]]);                                         \
        B2B_G(2, 7, 8, 13, m[s_[12]], m[s_[13]]);                                          \
        B2B_G(3, 4, 9, 14, m[s_[14]], m[s_[15]]);                                          \
    } while (0)

/* Compress the 128-byte block into the state; last marks the final block. */
static void compress(CliHash *h, const uint8_t *block, bool last)
{
    uint64_t v[16], m[16];
    for (int i = 0; i < 8; i++) {
        v[i] = h->h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= h->t[0];
    v[13] ^= h->t[1];
    if (last)
        v[14] = ~v[14];
    for (int i = 0; i < 16; i++)
        m[i] = load64(block + 8 * i);
    B2B_ROUND(0);
    B2B_ROUND(1);
    B2B_ROUND(2);
    B2B_ROUND(3);
    B2B_ROUND(4);
    B2B_ROUND(5);
    B2B_ROUND(6);
    B2B_ROUND(7);
    B2B_ROUND(8);
    B2B_ROUND(9);
    B2B_ROUND(10);
    B2B_ROUND(11);
    for (int i = 0; i < 8; i++)
        h->h[i] ^= v[i] ^ v[i + 8];
}

void cli_hash_init_len(CliHash *h, size_t outlen)
{
    memset(h, 0, sizeof *h);
    h->outlen = outlen < 1 ? 1 : outlen > 64 ? 64 : outlen;
    memcpy(h->h, blake2b_iv, sizeof h->h);
    h->h[0] ^= 0x01010000ULL ^ (uint64_t)h->outlen;   /* depth 1, fanout 1, no key */
}

void cli_hash_init(CliHash *h)
{
    cli_hash_init_len(h, CLI_HASH_BYTES);
}

/* Count one more block of 128 bytes. */
static void count_block(CliHash *h)
{
    h->t[0] += 128;
    if (h->t[0] < 128)
        h->t[1]++;
}

void cli_hash_update(CliHash *h, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        if (h->n == sizeof h->buf) {       /* a full block that is not the last one */
            count_block(h);
            compress(h, h->buf, false);
            h->n = 0;
        }
        while (h->n == 0 && n > sizeof h->buf) {   /* whole blocks straight from data */
            count_block(h);
            compress(h, p, false);
            p += sizeof h->buf;
            n -= sizeof h->buf;
        }
        size_t take = sizeof h->buf - h->n;
        if (take > n)
            take = n;
        memcpy(h->buf + h->n, p, take);
        h->n += take;
        p += take;
        n -= take;
    }
}

void cli_hash_final(CliHash *h, uint8_t *out)
{
    h->t[0] += h->n;
    if (h->t[0] < h->n)
        h->t[1]++;
    memset(h->buf + h->n, 0, sizeof h->buf - h->n);
    compress(h, h->buf, true);
    for (size_t i = 0; i < h->outlen; i++)
        out[i] = (uint8_t)(h->h[i / 8] >> (8 * (i % 8)));
}

void cli_hash_field(CliHash *h, const char *tag, const void *data, size_t n)
{
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    cli_hash_update(h, tag, strlen(tag) + 1);
    cli_hash_update(h, len, sizeof len);
    cli_hash_update(h, data, n);
}

/* Hash the rest of the open file fd with read(), adding the bytes read to *size;
 * false on a read error. */
static bool hash_reads(CliHash *h, int fd, uint64_t *size)
{
    uint8_t *buf = malloc(FILE_CHUNK);
    if (!buf)
        return false;
    bool ok = true;
    for (;;) {
        ssize_t r = read(fd, buf, FILE_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            ok = r == 0;
            break;
        }
        cli_hash_update(h, buf, (size_t)r);
        *size += (uint64_t)r;
    }
    free(buf);
    return ok;
}

bool cli_hash_file(CliHash *h, const char *tag, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    cli_hash_update(h, tag, strlen(tag) + 1);
    struct stat st;
    bool ok = fstat(fd, &st) == 0;
    uint8_t *map = ok && S_ISREG(st.st_mode) && st.st_size > 0
                       ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                       : MAP_FAILED;
    uint64_t size = 0;
    if (map != MAP_FAILED) {               /* mapped: no copy; read ahead in order */
        madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
        for (size_t off = 0; off < (size_t)st.st_size; off += FILE_CHUNK) {
            size_t n = (size_t)st.st_size - off < FILE_CHUNK ? (size_t)st.st_size - off : FILE_CHUNK;
            cli_hash_update(h, map + off, n);
        }
        munmap(map, (size_t)st.st_size);
        size = (uint64_t)st.st_size;
    } else if (ok) {
        ok = hash_reads(h, fd, &size);
    }
    close(fd);
    /* the end of the file is marked by its byte count, so that two files "AB" + "C"
     * and "A" + "BC" hash differently */
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(size >> (8 * i));
    cli_hash_update(h, len, sizeof len);
    return ok;
}

void cli_hash_hex(const uint8_t *digest, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[2 * n] = '\0';
}
