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
#include <cpuid.h>
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

#ifdef HAVE_SHA_NI
/* Transpose the 16x16 matrix of 32-bit words r[row] in place (r[c] becomes column c):
 * pairs of words, then pairs of pairs within 128-bit lanes, then the lanes. */
__attribute__((target("avx512f"))) static void transpose16(__m512i *r)
{
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {          /* u[i + j]: column j of rows i..i+3 */
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int j = 0; j < 4; j++) {              /* lane k of each: column 4k + j */
        __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
        __m512i x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
        __m512i y0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
        __m512i y1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
        r[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[4 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[8 + j] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        r[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
}

#define X16_XOR3(a, b, c) _mm512_ternarylogic_epi32(a, b, c, 0x96)
#define X16_ROR(x, n) _mm512_ror_epi32(x, n)
#define X16_ROUND(a, b, c, d, e, f, g, h, i)                                                  \
    do {                                                                                      \
        __m512i t1_ = _mm512_add_epi32(                                                       \
            _mm512_add_epi32(h, X16_XOR3(X16_ROR(e, 6), X16_ROR(e, 11), X16_ROR(e, 25))),     \
            _mm512_add_epi32(_mm512_ternarylogic_epi32(e, f, g, 0xCA),                        \
                             _mm512_add_epi32(_mm512_set1_epi32((int)sha256_k[i]),            \
                                              w[(i) & 15])));                                 \
        d = _mm512_add_epi32(d, t1_);                                                         \
        h = _mm512_add_epi32(                                                                 \
            t1_, _mm512_add_epi32(X16_XOR3(X16_ROR(a, 2), X16_ROR(a, 13), X16_ROR(a, 22)),    \
                                  _mm512_ternarylogic_epi32(a, b, c, 0xE8)));                 \
    } while (0)

/* Compress n 64-byte blocks of each of 16 messages p[0..16) at once, one per 32-bit
 * lane of AVX-512 registers: st[k][lane] is word k of that message's state. The same
 * arithmetic as blocks_portable, so the same digests. */
__attribute__((target("avx512f,avx512bw"))) static void blocks_x16(uint32_t (*st)[16],
                                                                   const uint8_t *const *p,
                                                                   size_t n)
{
    const __m512i bswap = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
    __m512i a = _mm512_loadu_si512(st[0]), b = _mm512_loadu_si512(st[1]);
    __m512i c = _mm512_loadu_si512(st[2]), d = _mm512_loadu_si512(st[3]);
    __m512i e = _mm512_loadu_si512(st[4]), f = _mm512_loadu_si512(st[5]);
    __m512i g = _mm512_loadu_si512(st[6]), h = _mm512_loadu_si512(st[7]);
    for (size_t blk = 0; blk < n; blk++) {
        __m512i w[16], sa = a, sb = b, sc = c, sd = d, se = e, sf = f, sg = g, sh = h;
        for (int l = 0; l < 16; l++)
            w[l] = _mm512_loadu_si512(p[l] + 64 * blk);
        transpose16(w);
        for (int k = 0; k < 16; k++)
            w[k] = _mm512_shuffle_epi8(w[k], bswap);
#pragma GCC unroll 8
        for (int i = 0; i < 64; i += 8) {
            if (i >= 16)
                for (int k = i; k < i + 8; k++) {
                    __m512i w15 = w[(k - 15) & 15], w2 = w[(k - 2) & 15];
                    __m512i s0 = X16_XOR3(X16_ROR(w15, 7), X16_ROR(w15, 18),
                                          _mm512_srli_epi32(w15, 3));
                    __m512i s1 = X16_XOR3(X16_ROR(w2, 17), X16_ROR(w2, 19),
                                          _mm512_srli_epi32(w2, 10));
                    w[k & 15] = _mm512_add_epi32(_mm512_add_epi32(w[k & 15], s0),
                                                 _mm512_add_epi32(w[(k - 7) & 15], s1));
                }
            X16_ROUND(a, b, c, d, e, f, g, h, i);
            X16_ROUND(h, a, b, c, d, e, f, g, i + 1);
            X16_ROUND(g, h, a, b, c, d, e, f, i + 2);
            X16_ROUND(f, g, h, a, b, c, d, e, i + 3);
            X16_ROUND(e, f, g, h, a, b, c, d, i + 4);
            X16_ROUND(d, e, f, g, h, a, b, c, i + 5);
            X16_ROUND(c, d, e, f, g, h, a, b, i + 6);
            X16_ROUND(b, c, d, e, f, g, h, a, i + 7);
        }
        a = _mm512_add_epi32(a, sa), b = _mm512_add_epi32(b, sb);
        c = _mm512_add_epi32(c, sc), d = _mm512_add_epi32(d, sd);
        e = _mm512_add_epi32(e, se), f = _mm512_add_epi32(f, sf);
        g = _mm512_add_epi32(g, sg), h = _mm512_add_epi32(h, sh);
    }
    _mm512_storeu_si512(st[0], a), _mm512_storeu_si512(st[1], b);
    _mm512_storeu_si512(st[2], c), _mm512_storeu_si512(st[3], d);
    _mm512_storeu_si512(st[4], e), _mm512_storeu_si512(st[5], f);
    _mm512_storeu_si512(st[6], g), _mm512_storeu_si512(st[7], h);
}
#endif

static bool portable_only;                /* cli_hash_use_portable: tests */

bool cli_hash_x16(const uint8_t *const *p, size_t len, uint8_t (*out)[CLI_HASH_BYTES])
{
#ifdef HAVE_SHA_NI
    if (portable_only || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
        return false;
    uint32_t st[8][16];
    for (int k = 0; k < 8; k++)
        for (int l = 0; l < 16; l++)
            st[k][l] = sha256_h0[k];
    size_t whole = len / 64;
    blocks_x16(st, p, whole);
    for (int l = 0; l < 16; l++) {         /* the tail and the padding: one at a time */
        CliHash h;
        cli_hash_init(&h);
        for (int k = 0; k < 8; k++)
            h.h[k] = st[k][l];
        h.total = whole * 64;
        cli_hash_update(&h, p[l] + whole * 64, len - whole * 64);
        cli_hash_final(&h, out[l]);
    }
    return true;
#else
    (void)p, (void)len, (void)out;
    return false;
#endif
}

void cli_hash_use_portable(bool on)
{
    portable_only = on;
}

#ifdef HAVE_SHA_NI
/* Whether the processor has the SHA extensions (CPUID leaf 7, EBX bit 29) and SSE4.1
 * (leaf 1, ECX bit 19), read with cpuid: not every compiler's __builtin_cpu_supports
 * knows "sha" (clang 14 refuses it). */
static bool has_sha_ni(void)
{
    static int known = -1;
    if (known < 0) {
        unsigned a, b, c, d;
        bool sse41 = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19));
        known = sse41 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
    }
    return known;
}
#endif

/* Compress n blocks with the fastest code this processor runs. */
static void blocks(CliHash *h, const uint8_t *p, size_t n)
{
#ifdef HAVE_SHA_NI
    if (!portable_only && has_sha_ni()) {
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
