/* test_dlf16.c: unit tests of DLFloat16, the card's 16-bit float: the scalar
 * reference conversions of dtconv.h against the format's definition (every code,
 * every tie between neighbours, the edges of the range, NaN, infinities, signed
 * zeros), the vectorised array conversions of runtime/rt_dlf16.c against the scalar
 * ones bit for bit on every fp32 bit pattern and every DLFloat16 code at each SIMD
 * level the host has, the compiler's saturating array conversion (ir_dtype.c) against
 * its scalar reference on the same patterns, VEC instructions on DLF16 operands, and
 * LOAD / STORE with the float32 <-> DLFloat16 conversion (ISA_F_F32).
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dtconv.h"
#include "ir.h"
#include "rt_dlf16.h"
#include "rt_exec.h"

/* float with bit pattern b. */
static float fbits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* Bit pattern of float f. */
static uint32_t bitsf(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* The value of a finite non-zero DLFloat16 code from the format's definition. */
static double dlf_value(uint16_t h) {
    int e = (h >> 9) & 63, m = h & 511;
    double v = ldexp(1.0 + m / 512.0, e - 31);
    return (h & 0x8000) ? -v : v;
}

/* Decoding: every code against the definition; zeros and NINF. */
static void test_decode_all(void **st) {
    (void)st;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = spy_dlf16_to_f32((uint16_t)h);
        uint32_t v = h & 0x7fff;
        if (v == 0) {
            assert_true(f == 0.0f);
            assert_int_equal(signbit(f) != 0, (h & 0x8000) != 0);
        } else if (v == SPY_DLF16_NINF) {
            assert_true(isnan(f));
            assert_int_equal(signbit(f) != 0, (h & 0x8000) != 0);
        } else {
            assert_true((double)f == dlf_value((uint16_t)h));
            assert_int_equal(spy_f32_to_dlf16(f), h); /* exact values encode to themselves */
        }
    }
    assert_true(spy_dlf16_to_f32(0x7ffe) == ldexpf(1.0f + 510.0f / 512.0f, 32));
    assert_true(spy_dlf16_to_f32(0x0001) == ldexpf(1.0f + 1.0f / 512.0f, -31));
    assert_true(spy_dlf16_to_f32(0x3e00) == 1.0f);   /* e = 31 */
}

/* Ties between every pair of neighbouring positive codes (within and across binades)
 * round away from zero, both signs; the float just inside rounds to the nearer. */
static void test_ties_all(void **st) {
    (void)st;
    for (uint16_t c = 1; c < 0x7ffe; c++) {
        float lo = spy_dlf16_to_f32(c), hi = spy_dlf16_to_f32((uint16_t)(c + 1));
        float mid = (float)(((double)lo + (double)hi) / 2); /* 11 significant bits: exact */
        assert_true((double)mid == ((double)lo + (double)hi) / 2);
        assert_int_equal(spy_f32_to_dlf16(mid), c + 1);
        assert_int_equal(spy_f32_to_dlf16(-mid), 0x8000 | (c + 1));
        assert_int_equal(spy_f32_to_dlf16(nextafterf(mid, 0.0f)), c);
        assert_int_equal(spy_f32_to_dlf16(-nextafterf(mid, 0.0f)), 0x8000 | c);
        assert_int_equal(spy_f32_to_dlf16(nextafterf(lo, hi)), c);
    }
    /* a few by hand: 1 + 0.5/512 is a tie between 1 and 1 + 1/512 */
    assert_int_equal(spy_f32_to_dlf16(1.0f + 1.0f / 1024.0f), 0x3e01);
    assert_int_equal(spy_f32_to_dlf16(-(1.0f + 1.0f / 1024.0f)), 0xbe01);
    assert_int_equal(spy_f32_to_dlf16(1.0f + 3.0f / 1024.0f), 0x3e02); /* not to even */
    assert_int_equal(spy_f32_to_dlf16(2.0f - 1.0f / 1024.0f), 0x4000);  /* carries to 2 */
}

/* The top of the range: the largest finite value, the largest float that still rounds
 * down to it, the tie above it (rounds away: NINF), infinities, NaN. */
static void test_range_top(void **st) {
    (void)st;
    float max = ldexpf(1.0f + 510.0f / 512.0f, 32), tie = ldexpf(1.0f + 1021.0f / 1024.0f, 32);
    assert_int_equal(spy_f32_to_dlf16(max), 0x7ffe);
    assert_int_equal(spy_f32_to_dlf16(-max), 0xfffe);
    assert_int_equal(bitsf(nextafterf(tie, 0.0f)), 0x4fff9fffu);
    assert_int_equal(spy_f32_to_dlf16(nextafterf(tie, 0.0f)), 0x7ffe);
    assert_int_equal(spy_f32_to_dlf16(-nextafterf(tie, 0.0f)), 0xfffe);
    assert_int_equal(spy_f32_to_dlf16(tie), 0x7fff);
    assert_int_equal(spy_f32_to_dlf16(-tie), 0xffff);
    assert_int_equal(spy_f32_to_dlf16(ldexpf(1.0f, 33)), 0x7fff);
    assert_int_equal(spy_f32_to_dlf16(FLT_MAX), 0x7fff);
    assert_int_equal(spy_f32_to_dlf16(INFINITY), 0x7fff);
    assert_int_equal(spy_f32_to_dlf16(-INFINITY), 0xffff);
    assert_int_equal(spy_f32_to_dlf16(NAN), 0x7fff);
    assert_int_equal(spy_f32_to_dlf16(-NAN), 0xffff);
    assert_int_equal(spy_f32_to_dlf16(fbits(0x7f800001u)), 0x7fff); /* signalling NaN */
    assert_int_equal(spy_f32_to_dlf16(fbits(0xffffffffu)), 0xffff);
    assert_int_equal(bitsf(spy_dlf16_to_f32(0x7fff)), 0x7fc00000u);
    assert_int_equal(bitsf(spy_dlf16_to_f32(0xffff)), 0xffc00000u);
}

/* The bottom of the range: 2^-31 has the zero pattern, so the smallest magnitude is
 * 2^-31 (1 + 1/512); the tie half way to it rounds up (rounding before the flush),
 * anything smaller, subnormal floats included, is zero with its sign. */
static void test_range_bottom(void **st) {
    (void)st;
    float p31 = ldexpf(1.0f, -31), min = ldexpf(1.0f + 1.0f / 512.0f, -31);
    float tie = ldexpf(1.0f + 1.0f / 1024.0f, -31);
    assert_int_equal(spy_f32_to_dlf16(min), 0x0001);
    assert_int_equal(spy_f32_to_dlf16(-min), 0x8001);
    assert_int_equal(spy_f32_to_dlf16(tie), 0x0001);
    assert_int_equal(spy_f32_to_dlf16(-tie), 0x8001);
    assert_int_equal(spy_f32_to_dlf16(nextafterf(tie, 0.0f)), 0x0000);
    assert_int_equal(spy_f32_to_dlf16(-nextafterf(tie, 0.0f)), 0x8000);
    assert_int_equal(spy_f32_to_dlf16(p31), 0x0000);
    assert_int_equal(spy_f32_to_dlf16(-p31), 0x8000);
    assert_int_equal(spy_f32_to_dlf16(nextafterf(p31, 0.0f)), 0x0000); /* rounds to 2^-31 */
    assert_int_equal(spy_f32_to_dlf16(-nextafterf(p31, 0.0f)), 0x8000);
    assert_int_equal(spy_f32_to_dlf16(ldexpf(1.0f, -32)), 0x0000);
    assert_int_equal(spy_f32_to_dlf16(FLT_MIN), 0x0000);
    assert_int_equal(spy_f32_to_dlf16(-fbits(1)), 0x8000);     /* subnormal */
    assert_int_equal(spy_f32_to_dlf16(0.0f), 0x0000);
    assert_int_equal(spy_f32_to_dlf16(-0.0f), 0x8000);
    assert_int_equal(bitsf(spy_dlf16_to_f32(0x8000)), 0x80000000u);
    assert_int_equal(bitsf(spy_dlf16_to_f32(0x0000)), 0u);
}

/* Levels to test: the automatic choice and each forced level up to the host's. */
static int host_levels(void) {
    rt_dlf16_force_level(-1);
    const char *isa = rt_dlf16_isa();
    return strcmp(isa, "avx512f") == 0 ? 3 : strcmp(isa, "avx2") == 0 ? 2 : 1;
}

/* Array decode of all 65536 codes (at odd offsets and lengths) equals the scalar. */
static void test_bulk_decode(void **st) {
    (void)st;
    uint16_t *h = malloc(2 * 65536 + 8);
    float *f = malloc(4 * 65536 + 16);
    assert_non_null(h);
    assert_non_null(f);
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    for (int lvl = 0; lvl < host_levels(); lvl++) {
        rt_dlf16_force_level(lvl);
        rt_dlf16_to_f32_n(f, h, 65536);
        for (uint32_t i = 0; i < 65536; i++)
            assert_int_equal(bitsf(f[i]), bitsf(spy_dlf16_to_f32((uint16_t)i)));
        for (size_t off = 1; off < 4; off++) { /* unaligned, every tail length */
            memset(f, 0xee, 64 * 4);
            rt_dlf16_to_f32_n((uint8_t *)f + off, (uint8_t *)h + 2 * off, 37 + off);
            for (size_t i = 0; i < 37 + off; i++) {
                uint32_t b;
                memcpy(&b, (uint8_t *)f + off + 4 * i, 4);
                assert_int_equal(b, bitsf(spy_dlf16_to_f32((uint16_t)(off + i))));
            }
            assert_int_equal(((uint8_t *)f)[off + 4 * (37 + off)], 0xee);
        }
    }
    rt_dlf16_force_level(-1);
    free(h);
    free(f);
}

/* Input k of the encode test: every fp32 pattern when all (k < 2^32), otherwise the
 * 2^19 patterns of the bits rounding looks at (31..13) each with the low 13 bits 0,
 * 0x1fff, 0x1000 and a pseudo-random value (k < 2^21). */
static uint32_t enc_input(uint64_t k, bool all) {
    if (all)
        return (uint32_t)k;
    uint32_t hi = (uint32_t)(k & ((1u << 19) - 1)) << 13, sel = (uint32_t)(k >> 19);
    return hi | (sel == 0 ? 0u : sel == 1 ? 0x1fffu : sel == 2 ? 0x1000u
                                                   : (hi * 2654435761u >> 7) & 0x1fffu);
}

/* Array encode equals the scalar bit for bit at each level the host has: on the
 * patterns of enc_input (all 2^32 with SPY_DLF16_EXHAUSTIVE=1 in the environment,
 * some seconds), and on every tail length with an unaligned destination. */
static void test_bulk_encode(void **st) {
    (void)st;
    enum { B = 1 << 20 };
    bool all = getenv("SPY_DLF16_EXHAUSTIVE") != NULL;
    uint32_t *x = malloc(4 * B);
    uint16_t *got = malloc(2 * B + 2), *want = malloc(2 * B);
    assert_non_null(x);
    assert_non_null(got);
    assert_non_null(want);
    for (int lvl = host_levels() - 1; lvl >= 0; lvl--) {
        rt_dlf16_force_level(lvl);
        for (uint64_t base = 0; base < (all ? 1ull << 32 : 1ull << 21); base += B) {
            for (uint32_t i = 0; i < B; i++) {
                x[i] = enc_input(base + i, all);
                want[i] = spy_f32_to_dlf16(fbits(x[i]));
            }
            rt_f32_to_dlf16_n(got, x, B);
            for (uint32_t i = 0; i < B; i++)
                if (got[i] != want[i])
                    fail_msg("level %d: 0x%08x -> 0x%04x, scalar 0x%04x", lvl, x[i], got[i],
                             want[i]);
        }
        for (size_t n = 0; n < 40; n++) { /* tails, unaligned destination */
            memset(got, 0xee, 2 * 48 + 2);
            rt_f32_to_dlf16_n((uint8_t *)got + 1, x + 7, n);
            for (size_t i = 0; i < n; i++) {
                uint16_t h;
                memcpy(&h, (uint8_t *)got + 1 + 2 * i, 2);
                assert_int_equal(h, spy_f32_to_dlf16(fbits(x[7 + i])));
            }
            assert_int_equal(((uint8_t *)got)[1 + 2 * n], 0xee);
        }
    }
    rt_dlf16_force_level(-1);
    free(x);
    free(got);
    free(want);
}

/* ir_f32_to_dlf16_sat_n (the compiler's constants): spy_f32_to_dlf16_sat bit for bit
 * on the patterns test_bulk_encode uses, and on tails of every length below 40. */
static void test_bulk_encode_sat(void **st) {
    (void)st;
    enum { B = 1 << 20 };
    bool all = getenv("SPY_DLF16_EXHAUSTIVE") != NULL;
    uint32_t *x = malloc(4 * B);
    uint16_t *got = malloc(2 * B);
    assert_non_null(x);
    assert_non_null(got);
    for (uint64_t base = 0; base < (all ? 1ull << 32 : 1ull << 21); base += B) {
        for (uint32_t i = 0; i < B; i++)
            x[i] = enc_input(base + i, all);
        ir_f32_to_dlf16_sat_n(got, (const float *)x, B);
        for (uint32_t i = 0; i < B; i++)
            if (got[i] != spy_f32_to_dlf16_sat(fbits(x[i])))
                fail_msg("0x%08x -> 0x%04x, scalar 0x%04x", x[i], got[i],
                         spy_f32_to_dlf16_sat(fbits(x[i])));
    }
    for (size_t n = 0; n < 40; n++) {
        memset(got, 0xee, 2 * 48);
        ir_f32_to_dlf16_sat_n(got, (const float *)x + 5, n);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(got[i], spy_f32_to_dlf16_sat(fbits(x[5 + i])));
        assert_int_equal(got[n], 0xeeee);
    }
    free(x);
    free(got);
}

/* VEC on DLF16: operands widened exactly, computed in F32, the result rounded to
 * DLFloat16 when the destination is DLF16 (also from F32 operands); CAST both ways;
 * an immediate in DLF16 bits; contiguous and strided rows. */
static void test_vec_dlf16(void **st) {
    (void)st;
    uint8_t *lx = calloc(1 << 16, 1);
    assert_non_null(lx);
    RtCore c = {.lx = lx};
    enum { N = 45, A = 0, B = 4096, D = 8192, F = 16384 };
    uint16_t a[N], b[N];
    for (int i = 0; i < N; i++) {
        a[i] = spy_f32_to_dlf16((float)(i - 20) * 0.37f);
        b[i] = spy_f32_to_dlf16(1.0f + (float)i * 1e-3f);
    }
    memcpy(lx + A, a, sizeof a);
    memcpy(lx + B, b, sizeof b);
    SpyVec v = {.fn = ISA_VF_MUL, .dtype = ISA_DT_DLF16, .src_dtype = ISA_DT_DLF16,
                .nsrc = 2, .rows = 1, .cols = N, .dst = D, .dst_rs = N,
                .src = {A, B}, .src_rs = {N, N}, .src_cs = {1, 1}};
    const char *why = "";
    assert_true(rt_vecfn_types_ok(v.fn, v.dtype, v.src_dtype, &why));
    assert_int_equal(rt_vec(&c, &v), RT_XOK);
    for (int i = 0; i < N; i++) {
        uint16_t h;
        memcpy(&h, lx + D + 2 * i, 2);
        float want = spy_dlf16_to_f32(a[i]) * spy_dlf16_to_f32(b[i]);
        assert_int_equal(h, spy_f32_to_dlf16(want));
    }
    /* F32 operands, DLF16 result; second operand an immediate in F32 bits */
    for (int i = 0; i < N; i++) {
        float x = (float)i / 3.0f;
        memcpy(lx + F + 4 * i, &x, 4);
    }
    float k = 1.001f;
    SpyVec w = {.fn = ISA_VF_ADD, .dtype = ISA_DT_DLF16, .src_dtype = ISA_DT_F32,
                .flags = ISA_F_IMM, .nsrc = 1, .rows = 1, .cols = N, .dst = D, .dst_rs = N,
                .src = {F}, .src_rs = {N}, .src_cs = {1}};
    memcpy(&w.imm, &k, 4);
    assert_true(rt_vecfn_types_ok(w.fn, w.dtype, w.src_dtype, &why));
    assert_int_equal(rt_vec(&c, &w), RT_XOK);
    for (int i = 0; i < N; i++) {
        uint16_t h;
        memcpy(&h, lx + D + 2 * i, 2);
        assert_int_equal(h, spy_f32_to_dlf16((float)i / 3.0f + k));
    }
    /* strided DLF16 operand (every other element), DLF16 immediate, F32 result */
    SpyVec s = {.fn = ISA_VF_SUB, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_DLF16,
                .flags = ISA_F_IMM, .nsrc = 1, .rows = 1, .cols = N / 2, .dst = F,
                .dst_rs = N, .src = {A}, .src_rs = {N}, .src_cs = {2},
                .imm = spy_f32_to_dlf16(0.5f)};
    assert_true(rt_vecfn_types_ok(s.fn, s.dtype, s.src_dtype, &why));
    assert_int_equal(rt_vec(&c, &s), RT_XOK);
    for (int i = 0; i < N / 2; i++) {
        float r;
        memcpy(&r, lx + F + 4 * i, 4);
        assert_true(r == spy_dlf16_to_f32(a[2 * i]) - 0.5f);
    }
    /* integers are not computed in DLF16 */
    assert_false(rt_vecfn_types_ok(ISA_VF_ADD, ISA_DT_I32, ISA_DT_DLF16, &why));
    assert_false(rt_vecfn_types_ok(ISA_VF_AND, ISA_DT_DLF16, ISA_DT_DLF16, &why));
    assert_true(rt_vecfn_types_ok(ISA_VF_CAST, ISA_DT_I32, ISA_DT_DLF16, &why));
    assert_true(rt_vecfn_types_ok(ISA_VF_LT, ISA_DT_BOOL, ISA_DT_DLF16, &why));
    free(lx);
}

/* LOAD / STORE with ISA_F_F32: float32 in DRAM, DLFloat16 in LX, converted bit for bit
 * like the scalar reference; contiguous rows (the vectorised path, with a tail), a
 * strided (transposed) DRAM side, one element; specials (NaN, infinities, beyond the
 * range, below the smallest normal) included. */
static void test_dma_f32(void **st) {
    (void)st;
    enum { R = 5, C = 37 };
    float src[R * C], back[R * C];
    uint8_t *lx = calloc(1 << 16, 1);
    assert_non_null(lx);
    for (int i = 0; i < R * C; i++)
        src[i] = (float)(i - 90) * 1.37e-2f * (i % 7 == 0 ? 1e9f : 1.0f);
    src[3] = NAN, src[4] = INFINITY, src[5] = -INFINITY, src[6] = 1e-12f, src[7] = -0.0f;
    uint8_t *segs[1] = {(uint8_t *)src};
    RtCore c = {.lx = lx, .seg = segs};
    SpyDma d = {.opcode = ISA_LOAD, .esize = 2, .ndim = 2, .flags = ISA_F_F32, .seg = 0,
                .dram_off = 0, .lx = 256};
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        d.dims[i] = 1, d.dram_stride[i] = d.lx_stride[i] = 1;
    d.dims[0] = R, d.dims[1] = C, d.dram_stride[0] = C, d.lx_stride[0] = C + 3;
    rt_dma(&c, &d, false);
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) {
            uint16_t h;
            memcpy(&h, lx + 256 + 2 * (r * (C + 3) + j), 2);
            assert_int_equal(h, spy_f32_to_dlf16(src[r * C + j]));
        }
    /* transposed: LX[j][r] = DRAM[r][j] */
    d.dims[0] = C, d.dims[1] = R, d.dram_stride[0] = 1, d.dram_stride[1] = C;
    d.lx_stride[0] = R, d.lx_stride[1] = 1;
    rt_dma(&c, &d, false);
    for (int j = 0; j < C; j++)
        for (int r = 0; r < R; r++) {
            uint16_t h;
            memcpy(&h, lx + 256 + 2 * (j * R + r), 2);
            assert_int_equal(h, spy_f32_to_dlf16(src[r * C + j]));
        }
    /* STORE back (exact widening) into another segment, then one element */
    segs[0] = (uint8_t *)back;
    memset(back, 0, sizeof back);
    d.opcode = ISA_STORE;
    rt_dma(&c, &d, true);
    for (int j = 0; j < C; j++)
        for (int r = 0; r < R; r++) {
            uint16_t h;
            memcpy(&h, lx + 256 + 2 * (j * R + r), 2);
            float w = spy_dlf16_to_f32(h);
            assert_memory_equal(&back[r * C + j], &w, 4);
        }
    SpyDma one = d;
    one.ndim = 0, one.dims[0] = one.dims[1] = 1, one.dram_off = 4 * 11, one.lx = 4000;
    memcpy(lx + 4000, &(uint16_t){0x7fff}, 2);
    rt_dma(&c, &one, true);
    assert_true(isnan(back[11]));
    free(lx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_all),   cmocka_unit_test(test_ties_all),
        cmocka_unit_test(test_range_top),    cmocka_unit_test(test_range_bottom),
        cmocka_unit_test(test_bulk_decode),  cmocka_unit_test(test_bulk_encode),
        cmocka_unit_test(test_bulk_encode_sat),
        cmocka_unit_test(test_vec_dlf16),    cmocka_unit_test(test_dma_f32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
