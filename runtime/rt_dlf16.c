/* rt_dlf16.c: float32 <-> DLFloat16 over arrays, for the VEC loads and stores of
 * ISA_DT_DLF16 operands, with AVX-512F and AVX2 code chosen once at run time and a
 * portable loop otherwise.
 *
 * Every path computes the branch-free formula of dtconv.h's scalar reference, one
 * lane per element (encode: sign | clamp(((|x| bits + 0x2000) >> 14) - (96 << 9),
 * 0, 0x7FFF); decode: the inverse shift with zero and NINF selected), so results are
 * the same bits whatever the host. The SIMD body is written once in GCC vector
 * extensions (16 lanes) and instantiated for AVX-512F and for AVX2; blocks of 16 run
 * in it and the tail of fewer goes through the scalar reference itself.
 */
#include <stdatomic.h>
#include <string.h>

#include "dtconv.h"
#include "rt_dlf16.h"

/* The scalar reference over elements [i, n): encode (float32 -> DLFloat16) when enc,
 * else decode. */
static void conv_tail(uint8_t *d, const uint8_t *s, size_t i, size_t n, bool enc) {
    float x;
    uint16_t h;
    for (; i < n; i++) {
        if (enc) {
            memcpy(&x, s + 4 * i, 4);
            h = spy_f32_to_dlf16(x);
            memcpy(d + 2 * i, &h, 2);
        } else {
            memcpy(&h, s + 2 * i, 2);
            x = spy_dlf16_to_f32(h);
            memcpy(d + 4 * i, &x, 4);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define RT_DLF_SIMD 1

/* 16 lanes in GCC vector extensions: one body, compiled to AVX-512F or to AVX2 code by
 * the target attribute of the function it is inlined into. */
typedef uint32_t v16u __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint16_t v16h __attribute__((vector_size(32)));
#define DLF_INLINE __attribute__((always_inline)) static inline

/* Encodes whole blocks of 16 of n elements; returns how many it did. */
DLF_INLINE size_t enc_blocks(uint8_t *d, const uint8_t *s, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16u x;
        memcpy(&x, s + 4 * i, sizeof x);
        v16i t = (v16i)(((x & 0x7fffffffu) + 0x2000u) >> 14) - (96 << 9);
        t &= ~(t < 0);                                   /* below the range: zero */
        v16i over = t > 0x7fff;                          /* NINF, inf, NaN */
        t = (t & ~over) | (over & 0x7fff);
        v16h h = __builtin_convertvector((v16u)t | ((x & 0x80000000u) >> 16), v16h);
        memcpy(d + 2 * i, &h, sizeof h);
    }
    return i;
}

/* Decodes whole blocks of 16 of n elements; returns how many it did. */
DLF_INLINE size_t dec_blocks(uint8_t *d, const uint8_t *s, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16h h16;
        memcpy(&h16, s + 2 * i, sizeof h16);
        v16u h = __builtin_convertvector(h16, v16u), v = h & SPY_DLF16_NINF;
        v16u r = (v + (96u << 9)) << 14;
        r &= (v16u)(v != 0);                             /* zero */
        v16u ninf = (v16u)(v == SPY_DLF16_NINF);
        r = (r & ~ninf) | (ninf & 0x7fc00000u);          /* NINF: quiet NaN */
        r |= (h & 0x8000u) << 16;
        memcpy(d + 4 * i, &r, sizeof r);
    }
    return i;
}

/* AVX-512F encode of n elements. */
__attribute__((target("avx512f"))) static void enc_512(uint8_t *d, const uint8_t *s, size_t n) {
    conv_tail(d, s, enc_blocks(d, s, n), n, true);
}

/* AVX-512F decode of n elements. */
__attribute__((target("avx512f"))) static void dec_512(uint8_t *d, const uint8_t *s, size_t n) {
    conv_tail(d, s, dec_blocks(d, s, n), n, false);
}

/* AVX2 encode of n elements. */
__attribute__((target("avx2"))) static void enc_avx2(uint8_t *d, const uint8_t *s, size_t n) {
    conv_tail(d, s, enc_blocks(d, s, n), n, true);
}

/* AVX2 decode of n elements. */
__attribute__((target("avx2"))) static void dec_avx2(uint8_t *d, const uint8_t *s, size_t n) {
    conv_tail(d, s, dec_blocks(d, s, n), n, false);
}

/* Best level this host runs: 2 AVX-512F, 1 AVX2, 0 portable (checked once; threads
 * that race here all store the same value). */
static int host_level(void) {
    static atomic_int lvl = -1;
    int l = atomic_load_explicit(&lvl, memory_order_relaxed);
    if (l < 0) {
        __builtin_cpu_init();
        l = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
        atomic_store_explicit(&lvl, l, memory_order_relaxed);
    }
    return l;
}
#else
#define RT_DLF_SIMD 0

/* No SIMD code is built for this host. */
static int host_level(void) { return 0; }
#endif

static atomic_int forced_level = -1; /* rt_dlf16_force_level; -1: automatic */

/* The level the conversions use now. */
static int level(void) {
    int f = atomic_load_explicit(&forced_level, memory_order_relaxed), h = host_level();
    return f >= 0 && f < h ? f : h;
}

/* Forces a level (clamped to the host's) or, with -1, the automatic choice. */
void rt_dlf16_force_level(int lvl) {
    atomic_store_explicit(&forced_level, lvl < 0 ? -1 : lvl, memory_order_relaxed);
}

/* Name of the level in use. */
const char *rt_dlf16_isa(void) {
    static const char *const names[3] = {"portable", "avx2", "avx512f"};
    return names[level()];
}

typedef void DlfConv(uint8_t *d, const uint8_t *s, size_t n);

/* Portable encode of n elements. */
static void enc_portable(uint8_t *d, const uint8_t *s, size_t n) { conv_tail(d, s, 0, n, true); }

/* Portable decode of n elements. */
static void dec_portable(uint8_t *d, const uint8_t *s, size_t n) { conv_tail(d, s, 0, n, false); }

/* The encoders and decoders by level. */
#if RT_DLF_SIMD
static DlfConv *const enc_by_level[3] = {enc_portable, enc_avx2, enc_512};
static DlfConv *const dec_by_level[3] = {dec_portable, dec_avx2, dec_512};
#else
static DlfConv *const enc_by_level[1] = {enc_portable};
static DlfConv *const dec_by_level[1] = {dec_portable};
#endif

/* float32 array -> DLFloat16 array (see rt_dlf16.h). */
void rt_f32_to_dlf16_n(void *dst, const void *src, size_t n) {
    enc_by_level[level()](dst, src, n);
}

/* DLFloat16 array -> float32 array (see rt_dlf16.h). */
void rt_dlf16_to_f32_n(void *dst, const void *src, size_t n) {
    dec_by_level[level()](dst, src, n);
}
