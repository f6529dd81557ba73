/* spyrec_hash.c: SHA-256 (FIPS 180-4), the hash of the compile cache's keys.
 *
 * A key names a cache entry by the content of everything that shapes a bundle (model,
 * external data, flags, target, the compiler itself), so the hash must not collide by
 * accident on gigabytes of input: a 256-bit cryptographic digest. A cache hit costs
 * little more than hashing the inputs, so the speed of the hash is the speed of a hit:
 * on x86-64 processors with the SHA extensions (AMD Zen, Intel Ice Lake and later)
 * the blocks go through them (about 2 GB/s), elsewhere through portable C (the same
 * digest, several times slower). Files are hashed by spyrec_hashfiles.c.
 */
#include <string.h>

#include "cli/cli.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_SHA_NI 1
#endif


static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t sha256_h0[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* x rotated right by n bits. */
static inline uint32_t rotr32(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

/* The big-endian 32-bit word at p. */
static inline uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Compress n 64-byte blocks into the state, in portable C. */
static void blocks_portable(uint32_t *st, const uint8_t *p, size_t n)
{
    for (; n > 0; n--, p += 64) {
        uint32_t w[64], s[8];
        for (int i = 0; i < 16; i++)
            w[i] = load_be32(p + 4 * i);
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = rotr32(w[i - 15], 7) ^ rotr32(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = rotr32(w[i - 2], 17) ^ rotr32(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        memcpy(s, st, sizeof s);
        for (int i = 0; i < 64; i++) {
            uint32_t e = s[4], a = s[0];
            uint32_t t1 = s[7] + (rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25)) +
                          ((e & s[5]) ^ (~e & s[6])) + sha256_k[i] + w[i];
            uint32_t t2 = (rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22)) +
                          ((a & s[1]) ^ (a & s[2]) ^ (s[1] & s[2]));
            memmove(s + 1, s, 7 * sizeof *s);
            s[4] += t1;
            s[0] = t1 + t2;
        }
        for (int i = 0; i < 8; i++)
            st[i] += s[i];
    }
}

#ifdef HAVE_SHA_NI
/* Compress n 64-byte blocks into the state with the x86 SHA extensions. The state
 * lives in two registers as ABEF and CDGH; each group of four rounds adds four
 * message words (m[g % 4]) and the message schedule runs three groups ahead. */
__attribute__((target("sha,sse4.1"))) static void blocks_sha_ni(uint32_t *st, const uint8_t *p,
                                                                  size_t n)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[0]), 0xB1);
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[4]), 0x1B);
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);         /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);              /* CDGH */
    for (; n > 0; n--, p += 64) {
        __m128i abef = s0, cdgh = s1, m[4], msg;
        for (int i = 0; i < 4; i++)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++) {
            msg = _mm_add_epi32(m[g % 4], _mm_loadu_si128((const __m128i *)&sha256_k[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
            if (g >= 3 && g <= 14) {
                __m128i t = _mm_alignr_epi8(m[g % 4], m[(g + 3) % 4], 4);
                m[(g + 1) % 4] = _mm_add_epi32(m[(g + 1) % 4], t);
                m[(g + 1) % 4] = _mm_sha256msg2_epu32(m[(g + 1) % 4], m[g % 4]);
            }
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(msg, 0x0E));
            if (g >= 1 && g <= 12)
                m[(g + 3) % 4] = _mm_sha256msg1_epu32(m[(g + 3) % 4], m[g % 4]);
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    tmp = _mm_shuffle_epi32(s0, 0x1B);                /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);                 /* DCHG */
    _mm_storeu_si128((__m128i *)&st[0], _mm_blend_epi16(tmp, s1, 0xF0));  /* DCBA */
    _mm_storeu_si128((__m128i *)&st[4], _mm_alignr_epi8(s1, tmp, 8));     /* HGFE */
}
#endif

static bool portable_only;                /* cli_hash_use_portable: tests */

void cli_hash_use_portable(bool on)
{
    portable_only = on;
}

/* Compress n blocks with the fastest code this processor runs. */
static void blocks(CliHash *h, const uint8_t *p, size_t n)
{
#ifdef HAVE_SHA_NI
    if (!portable_only && __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1")) {
        blocks_sha_ni(h->h, p, n);
        return;
    }
#endif
    blocks_portable(h->h, p, n);
}

void cli_hash_init(CliHash *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->h, sha256_h0, sizeof h->h);
}

void cli_hash_update(CliHash *h, const void *data, size_t n)
{
    const uint8_t *p = data;
    h->total += n;
    if (h->n > 0) {                        /* fill the pending block first */
        size_t take = sizeof h->buf - h->n < n ? sizeof h->buf - h->n : n;
        memcpy(h->buf + h->n, p, take);
        h->n += take;
        p += take;
        n -= take;
        if (h->n < sizeof h->buf)
            return;
        blocks(h, h->buf, 1);
        h->n = 0;
    }
    size_t whole = n / sizeof h->buf;      /* whole blocks straight from data */
    if (whole)
        blocks(h, p, whole);
    p += whole * sizeof h->buf;
    n -= whole * sizeof h->buf;
    memcpy(h->buf, p, n);
    h->n = n;
}

void cli_hash_final(CliHash *h, uint8_t *out)
{
    uint64_t bits = h->total * 8;
    uint8_t pad[72] = {0x80};
    size_t npad = (h->n < 56 ? 56 : 120) - h->n;
    for (int i = 0; i < 8; i++)
        pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
    cli_hash_update(h, pad, npad + 8);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++)
            out[4 * i + b] = (uint8_t)(h->h[i] >> (24 - 8 * b));
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

void cli_hash_hex(const uint8_t *digest, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[2 * n] = '\0';
}
