/* rt_crc32c.c: CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
 * spy_crc32c(0, p, n) gives the standard CRC32C of p; passing a previous result as
 * crc continues it over more data.
 *
 * On x86-64 with SSE4.2 the crc32 instruction does the work. One chain of it is bound
 * by the instruction's latency (3 cycles per 8 bytes), so long buffers are cut into
 * blocks of three equal stripes whose CRCs run as three independent chains and are
 * then joined: the raw CRC register is linear over GF(2), so the CRC of A || B is the
 * register after A shifted over |B| zero bytes (a multiplication by x^(8|B|) modulo
 * the polynomial) xor the register of B alone. That about triples the speed (the
 * loader checks multi-GiB constant sections with it). Elsewhere: slicing-by-8.
 */
#include <pthread.h>
#include <string.h>

#include "spyrt.h"

#define CRC_POLY 0x82F63B78u
#define CRC_STRIPE 32768       /* bytes per chain and block: the join costs ~1% */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* Builds the eight lookup tables (run once). */
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (CRC_POLY & (0u - (c & 1u)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

#if defined(__x86_64__) && defined(__GNUC__)
static uint32_t crc_shift1, crc_shift2; /* x^(8 * CRC_STRIPE), x^(16 * CRC_STRIPE) mod P */
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* Product of a and b modulo the polynomial, both in the reflected bit order of the
 * CRC register (bit 31 is x^0). */
static uint32_t crc_mulmod(uint32_t a, uint32_t b) {
    uint32_t p = 0;
    for (uint32_t m = 1u << 31; m; m >>= 1) {
        if (a & m)
            p ^= b;
        b = (b >> 1) ^ (CRC_POLY & (0u - (b & 1u)));
    }
    return p;
}

/* x^(8 n) modulo the polynomial: the operator that shifts a register over n zero
 * bytes (square and multiply). */
static uint32_t crc_xpow8(uint64_t n) {
    uint32_t r = 1u << 31, sq = 1u << 23;   /* x^0, x^8 */
    for (; n; n >>= 1) {
        if (n & 1)
            r = crc_mulmod(r, sq);
        sq = crc_mulmod(sq, sq);
    }
    return r;
}

/* Computes the two stripe shift operators (run once). */
static void shift_init(void) {
    crc_shift1 = crc_xpow8(CRC_STRIPE);
    crc_shift2 = crc_xpow8(2 * (uint64_t)CRC_STRIPE);
}

/* One chain of the crc32 instruction over n bytes, register c (not inverted). */
__attribute__((target("sse4.2"))) static uint32_t crc_hw1(uint32_t c, const uint8_t *p,
                                                           size_t n) {
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
    }
    c = (uint32_t)c64;
    for (; n; n--, p++)
        c = __builtin_ia32_crc32qi(c, *p);
    return c;
}

/* The crc32 instruction over n bytes: three interleaved chains per block of
 * 3 * CRC_STRIPE bytes, joined by the shift operators; one chain for the rest. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p,
                                                          size_t n) {
    if (n >= 3 * CRC_STRIPE)
        pthread_once(&shift_once, shift_init);
    for (; n >= 3 * CRC_STRIPE; n -= 3 * CRC_STRIPE, p += 3 * CRC_STRIPE) {
        uint64_t c0 = c, c1 = 0, c2 = 0, v0, v1, v2;
        for (size_t i = 0; i < CRC_STRIPE; i += 8) {
            memcpy(&v0, p + i, 8);
            memcpy(&v1, p + CRC_STRIPE + i, 8);
            memcpy(&v2, p + 2 * CRC_STRIPE + i, 8);
            c0 = __builtin_ia32_crc32di(c0, v0);
            c1 = __builtin_ia32_crc32di(c1, v1);
            c2 = __builtin_ia32_crc32di(c2, v2);
        }
        c = crc_mulmod((uint32_t)c0, crc_shift2) ^ crc_mulmod((uint32_t)c1, crc_shift1) ^
            (uint32_t)c2;
    }
    return crc_hw1(c, p, n);
}
#endif

/* CRC32C of n bytes at data, continuing from crc (0 to start). */
uint32_t spy_crc32c(uint32_t crc, const void *data, size_t n) {
    const uint8_t *p = data;
    uint32_t c = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(c, p, n);
#endif
    pthread_once(&crc_once, crc_init);
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
            crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
            crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
            crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
    return ~c;
}
