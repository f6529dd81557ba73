/* test_rt_kernels.c: unit tests of the emulator's fast tile kernels, called directly on
 * a scratchpad: each result is compared bit for bit with a plain scalar reference of the
 * isa.md semantics (MATMUL blocking and AVX-512 path, MATMUL with a window B or a
 * float8 B,
 * short-row VREDUCE, DLF16 VREDUCE and VSCAN, the in-place
 * VEC path, strided VEC COPY, short DMA rows, runs of pooling and depthwise taps).
 * The vectorised EXP/TANH/ERF/SIGMOID are tested in test_rt_vmath.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dtconv.h"
#include "rt_dlf16.h"
#include "rt_exec.h"

#define LX_BYTES (1u << 20)

static uint8_t *lx;          /* scratchpad of the tests (LX_BYTES + slack) */
static RtCore core;

/* Deterministic pseudo-random float in [-2, 2) with some exact zeros. */
static float rnd(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    uint32_t v = *s >> 8;
    return (v % 17 == 0) ? 0.0f : (float)(v % 4096) / 1024.0f - 2.0f;
}

static float *fp(uint32_t off) {
    return (float *)(lx + off);
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int setup(void **state) {
    (void)state;
    lx = calloc(LX_BYTES + 256, 1);
    core = (RtCore){.lx = lx, .pack = aligned_alloc(64, RT_PACK_BYTES + RT_PACK_SLACK)};
    return lx && core.pack ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(lx);
    free(core.pack);
    return 0;
}

/* ---- MATMUL ------------------------------------------------------------------------ */

/* Reference: increasing k from 0 (or old C), one fused multiply-add per step. */
static void mm_ref(float *c, const float *a, const float *b, uint32_t m, uint32_t n, uint32_t k,
                   uint32_t lda, uint32_t ldb, uint32_t ldc, bool acc) {
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            volatile float s = acc ? c[i * ldc + j] : 0.0f;
            for (uint32_t q = 0; q < k; q++)
                s = fmaf(a[i * lda + q], b[q * ldb + j], s);
            c[i * ldc + j] = s;
        }
}

/* The F32 MATMUL kernels: the one rt_matmul picks, each vector kernel this host runs
 * (with and without a packing buffer, and taking B as read from DRAM: an activation of
 * the arena or a weight of the constants, which choose among the kernels differently;
 * with A, or B, a constant the session keeps a copy of: KEPT, BKEPT) and the portable
 * loop. */
enum { MM_PICKED, MM_512, MM_512_INPLACE, MM_512_ACT, MM_512_WEIGHT, MM_512_KEPT,
       MM_512_BKEPT, MM_256, MM_256_INPLACE, MM_256_ACT, MM_256_WEIGHT, MM_256_KEPT,
       MM_256_BKEPT, MM_PORTABLE, MM_KINDS };

/* Whether kind takes a copy the session keeps (rt_apre.c): of A, or of B. */
static bool mm_kept(int kind) {
    return kind == MM_512_KEPT || kind == MM_256_KEPT || kind == MM_512_BKEPT ||
           kind == MM_256_BKEPT;
}

/* Whether kind reads B as a weight of the constants, from DRAM. */
static bool mm_weight(int kind) {
    return kind == MM_512_WEIGHT || kind == MM_256_WEIGHT || kind == MM_512_BKEPT ||
           kind == MM_256_BKEPT;
}

/* Runs mm with kernel kind once; false when this host cannot run it. */
static bool run_mm_once(int kind, RtCore *c, const SpyMatmul *mm) {
    RtMmSrc s = {c->lx + mm->a, c->lx + mm->b, mm->lda, mm->ldb, false, false, false, false,
                 false, NULL, 0};
    s.bdram = kind == MM_512_ACT || kind == MM_256_ACT || mm_weight(kind);
    s.bconst = mm_weight(kind);
    s.aconst = kind == MM_512_KEPT || kind == MM_256_KEPT;
    switch (kind) {
#if RT_HAVE_X86_KERNELS
    case MM_512: case MM_512_INPLACE: case MM_512_ACT: case MM_512_WEIGHT: case MM_512_KEPT:
    case MM_512_BKEPT:
        return rt_mm_f32_512(c, mm, &s);
    case MM_256: case MM_256_INPLACE: case MM_256_ACT: case MM_256_WEIGHT: case MM_256_KEPT:
    case MM_256_BKEPT:
        return rt_mm_f32_256(c, mm, &s);
#endif
    case MM_PORTABLE: rt_mm_portable(c, mm, &s); return true;
    case MM_PICKED: rt_matmul(c, mm); return true;
    default: return false;
    }
}

/* Runs mm with kernel kind; false when this host cannot run it. The KEPT kinds take A
 * as a constant whose transpose a session keeps, the BKEPT kinds B as one whose packed
 * panels it keeps (rt_apre.c): run twice on the same C, the first run making the copy,
 * the second reading the one kept. */
static bool run_mm(int kind, const SpyMatmul *mm) {
    RtCore c = core;
    if (kind == MM_512_INPLACE || kind == MM_256_INPLACE)
        c.pack = NULL;
    if (!mm_kept(kind)) {
        bool ran = run_mm_once(kind, &c, mm);
        core.koff_key = c.koff_key;      /* the window offsets kept, for the next call */
        return ran;
    }
    size_t cb = ((size_t)(mm->m - 1) * mm->ldc + mm->n) * 4;
    uint8_t *c0 = malloc(cb);
    assert_non_null(c0);
    memcpy(c0, c.lx + mm->c, cb);
    c.apre = rt_apre_create((size_t)1 << 26);
    assert_non_null(c.apre);
    bool ran = run_mm_once(kind, &c, mm);
    memcpy(c.lx + mm->c, c0, cb);
    ran = ran && run_mm_once(kind, &c, mm);
    rt_apre_free(c.apre);
    free(c0);
    core.koff_key = c.koff_key;
    return ran;
}

/* One MATMUL shape with kernel kind: C equals the reference bit for bit, padding
 * intact. */
static void check_mm_kind(int kind, uint32_t m, uint32_t n, uint32_t k, uint32_t ldb,
                          uint32_t ldc, bool acc, uint32_t seed) {
    uint32_t lda = k + 3;
    uint32_t a = 64 + 4, b = a + 4 * m * lda + 12, c = b + 4 * (k * ldb + n) + 8; /* past all of B */
    uint32_t end = c + 4 * m * ldc;
    assert_true(end < LX_BYTES);
    for (uint32_t i = 0; i < (end - a) / 4; i++)
        fp(a)[i] = rnd(&seed);
    if (m > 2 && k > 1) { /* special values */
        fp(a)[1] = INFINITY;
        fp(a)[lda + 1] = NAN;
        fp(a)[2 * lda] = -0.0f;
    }
    float *ref = malloc(4 * (size_t)m * ldc);
    memcpy(ref, fp(c), 4 * (size_t)m * ldc);
    mm_ref(ref, fp(a), fp(b), m, n, k, lda, ldb, ldc, acc);
    SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                    .flags = acc ? ISA_F_ACCUM : 0, .a = a, .b = b, .c = c, .m = m, .n = n,
                    .k = k, .lda = lda, .ldb = ldb, .ldc = ldc};
    if (run_mm(kind, &mm))
        for (uint32_t i = 0; i < m * ldc; i++)
            if (bits(ref[i]) != bits(fp(c)[i]) && !(isnan(ref[i]) && isnan(fp(c)[i])))
                fail_msg("matmul kernel %d m%u n%u k%u acc%d: element %u: %a != %a", kind, m,
                         n, k, acc, i, fp(c)[i], ref[i]);
    free(ref);
}

/* One MATMUL shape with every kernel, C's rows ldc apart. */
static void check_mm_ldc(uint32_t m, uint32_t n, uint32_t k, uint32_t ldb, uint32_t ldc,
                         bool acc, uint32_t seed) {
    for (int kind = 0; kind < MM_KINDS; kind++)
        check_mm_kind(kind, m, n, k, ldb, ldc, acc, seed);
}

/* One MATMUL shape with every kernel (C padded past its columns). */
static void check_mm(uint32_t m, uint32_t n, uint32_t k, uint32_t ldb, bool acc, uint32_t seed) {
    check_mm_ldc(m, n, k, ldb, n + 5, acc, seed);
}

/* B given transposed (RtMmSrc.bt: element (k, j) at b[j * ldb + k], a deferred LOAD's
 * transposed view): the packed blocks transpose it in VL x VL blocks, the rows and
 * columns past them in 4 x 4 ones and one by one, the columns past n zero, and prefetch
 * the next block's rows of it; few rows: the one-row kernels. Each vector kernel this
 * host runs, C bit for bit the reference's. */
static void test_matmul_bt(void **state) {
    (void)state;
    static const uint32_t shapes[][3] = {{100, 500, 301}, {97, 37, 19}, {96, 45, 7},
                                         {120, 64, 512}, {3, 50, 40}, {1, 33, 260}};
    uint32_t seed = 21;
    for (unsigned sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
        uint32_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2], ldbt = k + 3;
        uint32_t a = 64, c = a + 4 * m * k + 64, ldc = n + 5;
        assert_true(c + 4 * m * ldc < LX_BYTES);
        float *bt = malloc(4 * (size_t)n * ldbt), *b = malloc(4 * (size_t)k * n);
        float *ref = calloc((size_t)m * ldc, 4);
        for (uint32_t i = 0; i < m * k; i++)
            fp(a)[i] = rnd(&seed);
        for (uint32_t j = 0; j < n; j++)
            for (uint32_t q = 0; q < ldbt; q++)
                bt[j * ldbt + q] = rnd(&seed);
        for (uint32_t q = 0; q < k; q++)
            for (uint32_t j = 0; j < n; j++)
                b[q * n + j] = bt[j * ldbt + q];
        mm_ref(ref, fp(a), b, m, n, k, k, n, ldc, false);
        SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                        .a = a, .c = c, .m = m, .n = n, .k = k, .lda = k, .ldb = ldbt,
                        .ldc = ldc};
        RtMmSrc src = {lx + a, (const uint8_t *)bt, k, ldbt, true, true, false, true, false,
                       NULL, 0};
        for (int kind = 0; kind < 2; kind++) {
            memset(fp(c), 0, 4 * (size_t)m * ldc);
            RtCore cr = core;
            bool ran = false;
#if RT_HAVE_X86_KERNELS
            ran = kind == 0 ? rt_mm_f32_512(&cr, &mm, &src) : rt_mm_f32_256(&cr, &mm, &src);
#endif
            for (uint32_t i = 0; ran && i < m; i++)
                for (uint32_t j = 0; j < n; j++)
                    if (bits(ref[i * ldc + j]) != bits(fp(c)[i * ldc + j]))
                        fail_msg("bt kernel %d m%u n%u k%u: (%u, %u): %a != %a", kind, m, n,
                                 k, i, j, fp(c)[i * ldc + j], ref[i * ldc + j]);
        }
        free(bt);
        free(b);
        free(ref);
    }
}

static void test_matmul_shapes(void **state) {
    (void)state;
    static const uint32_t shapes[][3] = {{1, 1, 1},   {1, 3136, 9}, {3, 70, 5},  {4, 128, 33},
                                         {5, 17, 3},  {7, 49, 9},   {8, 48, 16}, {9, 100, 27},
                                         {16, 385, 64}, {23, 33, 1}, {13, 129, 40}, {2, 15, 0},
                                         {29, 70, 300}, {9, 1100, 20}, {12, 32, 129},
                                         {100, 40, 140}, {97, 1030, 3}, {1, 45, 301},
                                         {30, 100, 600}, {100, 70, 600}, {120, 33, 515},
                                         /* one or two vectors of rows: channels in the
                                            lanes (rt_kern_mmc.h), pixel blocks of 1 to
                                            16 */
                                         {16, 2, 5}, {32, 57, 37}, {16, 98, 1},
                                         {32, 300, 129}, {16, 49, 2048}, {8, 23, 17},
                                         {32, 1, 9}, {16, 15, 300},
                                         /* a B past MMC_PLAIN_L2 from DRAM: an
                                            activation's taken, a weight's not */
                                         {16, 100, 1100}, {32, 57, 1200},
                                         /* and more vectors of rows over an activation
                                            up to MMC_PLAIN_ACT */
                                         {64, 49, 2048}, {48, 150, 600},
                                         /* more vectors of rows, k from 256: groups of
                                            two vectors' worth, the last of one */
                                         {64, 49, 300}, {48, 57, 256}, {128, 9, 512},
                                         /* A packed a k-chunk at a time, the next
                                            chunk's and group's lines prefetched: k
                                            chunks in groups of both widths */
                                         {80, 49, 1000}, {96, 7, 2100}, {48, 9, 2500},
                                         /* one vector of rows, A kept: pixel lanes
                                            (rt_kern_mmr.h), blocks of 3, 2 and 1
                                            vectors, the last masked (up to a third of
                                            n), k in chunks (300: 150 + 150), k 1 */
                                         {16, 196, 300}, {16, 32, 1}, {16, 49, 129},
                                         {16, 250, 7}, {16, 112, 1024}, {16, 24, 5},
                                         /* and more vectors of rows over n a whole
                                            number of vectors, not of panels: groups of
                                            32 and 16 rows of A's transpose */
                                         {48, 112, 300}, {128, 80, 64}, {32, 48, 1},
                                         /* one vector of rows, up to 4 columns past
                                            whole vectors apart (rows8_tail) */
                                         {16, 35, 3}, {16, 50, 70}, {16, 196, 1030}};
    uint32_t seed = 1;
    for (unsigned i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int acc = 0; acc < 2; acc++) {
            uint32_t n = shapes[i][1];
            check_mm(shapes[i][0], n, shapes[i][2], n + (i & 1), acc, seed++);
        }
    check_mm(3, 40, 3, 1, false, 99); /* overlapping B rows (ldb = 1) */
    for (int acc = 0; acc < 2; acc++)  /* one row over a tile of a wider weight: the BKEPT */
        check_mm(1, 256, 300, 600, acc, 98); /* kinds read its rows kept back to back */
}

/* The epilogue of test_matmul_post: its chain (RtPost) and C, for the reference. */
typedef struct {
    const RtPost *po;
    float *c;
    size_t ldc;
} PostRef;

/* Element (i, j) of C, x, through the chain po as isa.md's VECs one by one. */
static float post_ref1(const RtPost *po, float x, size_t i, size_t j) {
    for (int q = 0; q < po->n; q++) {
        const RtPostOp *o = &po->op[q];
        float y = 0.0f, a, b;
        if (o->kind == RT_PO_SCALAR)
            memcpy(&y, o->y + (int64_t)i * o->yrs, 4);
        else if (o->kind == RT_PO_ROW)
            memcpy(&y, o->y + (int64_t)i * o->yrs + 4 * (int64_t)j, 4);
        a = o->pos ? y : x, b = o->pos ? x : y;
        switch (o->fn) {
        case ISA_VF_ADD: x = a + b; break;
        case ISA_VF_SUB: x = a - b; break;
        case ISA_VF_MUL: x = a * b; break;
        case ISA_VF_DIV: x = a / b; break;
        case ISA_VF_MAX: x = (a > b || a != a) ? a : b; break;
        case ISA_VF_MIN: x = (a < b || a != a) ? a : b; break;
        case ISA_VF_RELU: x = x < 0.0f ? 0.0f : x; break;
        case ISA_VF_NEG: x = -x; break;
        default: x = fabsf(x); break;
        }
    }
    return x;
}

/* RtEpi.tile of test_matmul_post: the reference chain over a tile of C (the kernels
 * without the post form call it). */
static void post_ref_tile(void *ctx, uint32_t r0, uint32_t nr, uint32_t c0, uint32_t nc) {
    const PostRef *t = ctx;
    for (size_t i = r0; i < r0 + nr; i++)
        for (size_t j = c0; j < c0 + nc; j++)
            t->c[i * t->ldc + j] = post_ref1(t->po, t->c[i * t->ldc + j], i, j);
}

/* An operation of a post chain: fn with the chain value at pos, y a scalar per row or a
 * row (RT_PO_*) at lx offset y, rows yrs bytes apart; reg its register form (RT_PR_*). */
static RtPostOp post_op(uint16_t fn, uint8_t pos, uint8_t kind, uint8_t reg, uint32_t y,
                        int64_t yrs) {
    return (RtPostOp){fn, pos, kind, reg, 0.0f, kind ? lx + y : NULL, yrs};
}

/* A MATMUL with an epilogue chain in its post form (RtEpi.post, rt_kern_mmp.h) through
 * each vector kernel of this host, C written where the epilogue says, for four chains:
 * register forms only (a bias, a residual with NaNs and -0s, max(1, x), RELU); x *
 * residual (a -0 where it is -0 and x > 0), RELU keeping it, scalar * x, then
 * operations through the L1 cache (residual - x, NEG, MIN, DIV); NaNs through MAX and
 * MIN with the chain value first, in registers and through the L1 cache. Shapes of
 * the packed blocks (a last panel of 17 columns: one vector and a lane), B in place,
 * the channel-lane kernels (one and two groups) and the others (which run the chain
 * through RtEpi.tile), also with B's panels kept by the session (BKEPT). Every element
 * bit for bit that of the reference. */
static void test_matmul_post(void **state) {
    (void)state;
    static const uint32_t shapes[][3] = {{100, 70, 40}, {48, 81, 64}, {16, 49, 64},
                                         {64, 100, 256}, {32, 200, 300}, {7, 33, 20},
                                         {13, 24, 300}, {96, 49, 64}, {16, 196, 300},
                                         {16, 40, 20}, {80, 48, 200}, {16, 67, 150}};
    const uint32_t a = 0, b = 0x20000, c = 0x60000, r = 0x70000, sc = 0x80000, one = sc + 4096;
    uint32_t seed = 7;
    for (unsigned sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
        for (int ch = 0; ch < 4; ch++)
            for (int kind = MM_512; kind < MM_PORTABLE; kind++) {
                uint32_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
                size_t ldc = n + 3;
                for (uint32_t i = 0; i < m * k; i++)
                    fp(a)[i] = rnd(&seed);
                for (uint32_t i = 0; i < k * n; i++)
                    fp(b)[i] = rnd(&seed);
                for (uint32_t i = 0; i < m * (n + 1); i++)      /* the residual */
                    fp(r)[i] = i % 37 == 0 ? NAN : i % 41 == 0 ? -0.0f : rnd(&seed);
                for (uint32_t i = 0; i < m; i++)
                    fp(sc)[i] = rnd(&seed) + 0.5f;
                fp(one)[0] = 1.0f;
                RtPost po = {0};
                int64_t rrs = 4 * (int64_t)(n + 1);
                RtPostOp bias = post_op(ISA_VF_ADD, 0, RT_PO_SCALAR, RT_PR_ADD_S, sc, 4);
                RtPostOp resid = post_op(ISA_VF_ADD, 1, RT_PO_ROW, RT_PR_ADD_R, r, rrs);
                RtPostOp max1 = post_op(ISA_VF_MAX, 0, RT_PO_SCALAR, RT_PR_MAX_S, one, 0);
                RtPostOp max1b = post_op(ISA_VF_MAX, 1, RT_PO_SCALAR, RT_PR_MAX_S, one, 0);
                RtPostOp min1 = post_op(ISA_VF_MIN, 0, RT_PO_SCALAR, RT_PR_MIN_S, one, 0);
                RtPostOp relu = post_op(ISA_VF_RELU, 0, RT_PO_NONE, RT_PR_RELU, 0, 0);
                RtPostOp mulr = post_op(ISA_VF_MUL, 0, RT_PO_ROW, RT_PR_MUL_R, r, rrs);
                RtPostOp muls = post_op(ISA_VF_MUL, 1, RT_PO_SCALAR, RT_PR_MUL_S, sc, 4);
                RtPostOp subr = post_op(ISA_VF_SUB, 1, RT_PO_ROW, RT_PR_NONE, r, rrs);
                RtPostOp neg = post_op(ISA_VF_NEG, 0, RT_PO_NONE, RT_PR_NONE, 0, 0);
                RtPostOp mins = post_op(ISA_VF_MIN, 1, RT_PO_SCALAR, RT_PR_NONE, sc, 4);
                RtPostOp divs = post_op(ISA_VF_DIV, 0, RT_PO_SCALAR, RT_PR_NONE, sc, 4);
                const RtPostOp *ops[4][8] = {
                    {&bias, &resid, &max1b, &relu},        /* registers only */
                    {&mulr, &relu, &muls, &subr, &neg, &mins, &divs},  /* -0s, then L1 */
                    {&mulr, &max1, &muls, &min1},          /* NaNs through MAX, MIN */
                    {&mulr, &divs, &max1, &min1, &relu},   /* the same through L1 */
                };
                for (int q = 0; q < 8 && ops[ch][q]; q++) {
                    po.op[q] = *ops[ch][q];
                    po.n = q + 1;
                    if (po.nreg == q && po.op[q].reg != RT_PR_NONE)
                        po.nreg = q + 1;
                }
                for (int q = 0; q < po.n; q++)    /* an L1 operation takes the rest */
                    if (q >= po.nreg)
                        po.op[q].reg = RT_PR_NONE;
                float *ref = calloc((size_t)m * ldc, 4);
                mm_ref(ref, fp(a), fp(b), m, n, k, k, n, ldc, false);
                PostRef pr = {&po, ref, ldc};
                post_ref_tile(&pr, 0, m, 0, n);
                memset(fp(c), 0, 4 * (size_t)m * ldc);
                PostRef pt = {&po, fp(c), ldc};
                RtEpi e = {post_ref_tile, &pt, lx + c, 4 * (int64_t)ldc, &po};
                SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32,
                                .out_dtype = ISA_DT_F32, .a = a, .b = b, .c = 0, .m = m,
                                .n = n, .k = k, .lda = k, .ldb = n, .ldc = n};
                bool ak = kind == MM_512_KEPT || kind == MM_256_KEPT;
                RtMmSrc s = {lx + a, lx + b, k, n, false, kind == MM_512_ACT ||
                             kind == MM_256_ACT || mm_weight(kind), false, mm_weight(kind),
                             ak, &e, 0};
                RtCore cr = core;
                if (kind == MM_512_INPLACE || kind == MM_256_INPLACE)
                    cr.pack = NULL;
                bool ran = false;
#if RT_HAVE_X86_KERNELS
                /* BKEPT (KEPT): the first run makes B's kept panels (A's kept
                 * transpose), the second reads them */
                bool bk = kind == MM_512_BKEPT || kind == MM_256_BKEPT || ak;
                cr.apre = bk ? rt_apre_create((size_t)1 << 26) : NULL;
                for (int run = 0; run < (bk ? 2 : 1); run++) {
                    memset(fp(c), 0, 4 * (size_t)m * ldc);
                    ran = kind < MM_256 ? rt_mm_f32_512(&cr, &mm, &s)
                                        : rt_mm_f32_256(&cr, &mm, &s);
                }
                rt_apre_free(cr.apre);
#endif
                for (uint32_t i = 0; ran && i < m; i++)
                    for (uint32_t j = 0; j < ldc; j++)
                        if (bits(ref[i * ldc + j]) != bits(fp(c)[i * ldc + j]))
                            fail_msg("post kernel %d chain %d m%u n%u k%u: (%u, %u): %a != %a",
                                     kind, ch, m, n, k, i, j, fp(c)[i * ldc + j],
                                     ref[i * ldc + j]);
                free(ref);
            }
}

/* At most four columns of C and a vector of rows or more (rt_kern_mmn.h: the transposed
 * product, B^T and C^T through the packing buffer, or in place when one column is
 * contiguous): column counts 1 to 4, rows at, under and past whole vectors, k short
 * and past a vector, B's and C's strides unit or not. */
static void test_matmul_narrow(void **state) {
    (void)state;
    static const uint32_t shapes[][5] = {/* m, n, k, ldb, ldc */
                                         {40, 4, 320, 4, 4},  {320, 1, 320, 1, 1},
                                         {8, 1, 7, 1, 1},     {17, 3, 33, 5, 3},
                                         {64, 2, 1, 2, 7},    {9, 1, 300, 2, 1},
                                         {24, 1, 50, 1, 3},   {31, 4, 9, 4, 6},
                                         {16, 2, 5, 3, 2}};
    uint32_t seed = 300;
    for (unsigned i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int acc = 0; acc < 2; acc++) {
            const uint32_t *x = shapes[i];
            check_mm_ldc(x[0], x[1], x[2], x[3], x[4], acc, seed++);
        }
}

/* One convolution MATMUL with a window B (ISA_F_BWIN) over a patch [cl, rin, wp] (taps
 * kh x kw, stride st, dilation dl, on x o1 output pixels, m output channels): C equals
 * the reference on the window gathered into a dense B, bit for bit, with every kernel. */
static void check_win(uint32_t m, uint32_t cl, uint32_t kh, uint32_t kw, uint32_t st,
                      uint32_t dl, uint32_t on, uint32_t o1, bool acc, uint32_t seed) {
    uint32_t wp = (o1 - 1) * st + (kw - 1) * dl + 1 + (seed % 3), k = cl * kh * kw;
    uint32_t rin = (on - 1) * st + (kh - 1) * dl + 1, n = on * o1;
    uint32_t a = 64, b = a + 4 * m * k + 4, c = b + 4 * cl * rin * wp + 8, end = c + 4 * m * n;
    assert_true(end < LX_BYTES);
    for (uint32_t i = 0; i < (end - a) / 4; i++)
        fp(a)[i] = rnd(&seed);
    fp(b)[wp + 1] = NAN;
    fp(a)[k > 1 ? 1 : 0] = INFINITY;
    float *dense = malloc(4 * (size_t)k * n), *ref = malloc(4 * (size_t)m * n);
    for (uint32_t q = 0; q < k; q++)
        for (uint32_t p = 0; p < n; p++) {
            uint32_t ch = q / (kh * kw), i = q / kw % kh, j = q % kw, r = p / o1, o = p % o1;
            dense[q * n + p] = fp(b)[ch * rin * wp + (r * st + i * dl) * wp + o * st + j * dl];
        }
    memcpy(ref, fp(c), 4 * (size_t)m * n);
    mm_ref(ref, fp(a), dense, m, n, k, k, n, n, acc);
    SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                    .flags = (uint8_t)(ISA_F_BWIN | (acc ? ISA_F_ACCUM : 0)), .a = a, .b = b,
                    .c = c, .m = m, .n = n, .k = k, .lda = k, .ldc = n,
                    .bw_kext = {cl, kh, kw}, .bw_ks = {(int32_t)(rin * wp),
                    (int32_t)(dl * wp), (int32_t)dl}, .bw_next = {on, o1},
                    .bw_ns = {(int32_t)(st * wp), (int32_t)st}};
    float *old = malloc(4 * (size_t)m * n);
    memcpy(old, fp(c), 4 * (size_t)m * n);
    /* the picked kernel, each vector kernel this host runs (also with A a constant
     * whose transpose is kept), and the picked one without a packing buffer (the
     * vector kernels decline: B is gathered densely) */
    static const int kinds[] = {MM_PICKED,   MM_512,      MM_256,
                                MM_512_KEPT, MM_256_KEPT, MM_512_INPLACE};
    for (unsigned q = 0; q < sizeof kinds / sizeof *kinds; q++) {
        memcpy(fp(c), old, 4 * (size_t)m * n);
        if (kinds[q] == MM_512_INPLACE) {
            RtCore cc = core;
            cc.pack = NULL;
            rt_matmul(&cc, &mm);
        } else if (!run_mm(kinds[q], &mm)) {
            continue;
        }
        for (uint32_t i = 0; i < m * n; i++)
            if (bits(ref[i]) != bits(fp(c)[i]) && !(isnan(ref[i]) && isnan(fp(c)[i])))
                fail_msg("window matmul m%u c%u %ux%u s%u d%u %ux%u acc%d kernel %d: element "
                         "%u: %a != %a", m, cl, kh, kw, st, dl, on, o1, acc, kinds[q], i,
                         fp(c)[i], ref[i]);
    }
    free(old);
    free(dense);
    free(ref);
}

static void test_matmul_window(void **state) {
    (void)state;
    /* m, channels, kh, kw, stride, dilation, output rows, output columns: in place by
     * rows, on the padded-width grid (stride 1, 2 and 3), dense k-chunks, packed */
    static const uint32_t cases[][8] = {
        {1, 1, 3, 3, 1, 1, 8, 56},  {1, 1, 3, 3, 1, 1, 7, 7},   {1, 1, 3, 3, 2, 1, 7, 14},
        {2, 1, 3, 3, 2, 1, 4, 28},  {3, 2, 3, 3, 3, 1, 5, 5},   {32, 16, 3, 3, 1, 1, 14, 14},
        {20, 3, 3, 3, 3, 1, 4, 9},  {100, 4, 3, 3, 1, 1, 7, 7}, {100, 3, 3, 3, 2, 1, 5, 11},
        {97, 2, 3, 3, 3, 2, 3, 10}, {12, 5, 1, 7, 1, 1, 1, 40}, {5, 3, 5, 5, 1, 2, 6, 6},
        {64, 1, 1, 1, 1, 1, 1, 1},  {1, 300, 1, 1, 1, 1, 2, 3},
        /* one or two rows of C, several column blocks a call (rt_kern_mmw.h): full
         * groups and a partial one, in place (stride 1 and 2) and on the grid */
        {1, 3, 3, 3, 1, 1, 16, 32}, {2, 3, 3, 3, 1, 1, 7, 32},  {1, 1, 5, 5, 1, 1, 14, 28},
        {2, 6, 5, 5, 1, 1, 10, 10}, {2, 2, 3, 3, 2, 1, 5, 40},  {1, 2, 3, 3, 2, 1, 9, 20},
        {2, 8, 3, 3, 1, 1, 16, 16},
        /* dense k-chunks of stride-2 pixel rows of at most half a vector, a vector, more */
        {16, 4, 3, 3, 2, 1, 7, 7},  {24, 2, 3, 3, 2, 1, 5, 3},  {32, 3, 3, 3, 2, 1, 4, 14},
        {20, 2, 3, 3, 2, 1, 3, 20},
        /* vectors of rows (rt_kern_mmc.h): pixel rows of 2 to 56, split into equal
         * blocks of at most 16 (14 for two vectors), stride 1 and 2, dilation */
        {16, 5, 3, 3, 1, 1, 7, 7},  {16, 3, 3, 3, 2, 1, 7, 7},  {32, 4, 3, 3, 1, 1, 3, 14},
        {32, 2, 3, 3, 2, 1, 4, 15}, {16, 2, 3, 3, 1, 1, 2, 16}, {16, 1, 7, 7, 2, 1, 2, 33},
        {16, 3, 1, 1, 1, 1, 1, 2},  {32, 2, 3, 3, 1, 2, 3, 29}, {16, 2, 3, 3, 3, 1, 4, 9},
        {8, 3, 3, 3, 1, 1, 5, 13},  {16, 2, 3, 3, 1, 1, 2, 56}, {32, 1, 3, 3, 2, 1, 2, 17},
        /* more rows: groups of two vectors' worth, the last of one */
        {48, 2, 3, 3, 1, 1, 5, 9},  {80, 2, 3, 3, 2, 1, 3, 7},  {128, 3, 1, 1, 2, 1, 4, 14},
        {144, 2, 3, 3, 1, 1, 2, 5},
        /* vectors of rows over k in chunks, the running sums kept between them: one
         * vector (k past 384), two (past 128), a group of each */
        {16, 50, 3, 3, 1, 1, 7, 7}, {32, 20, 3, 3, 2, 1, 4, 14}, {48, 16, 3, 3, 1, 1, 3, 9},
        {16, 400, 1, 1, 2, 1, 3, 5},
        /* two pixel rows of at most half the accumulators a call (and a last one
         * alone): one and two vectors, stride 1 and 2, over k chunks too */
        {32, 3, 3, 3, 1, 1, 4, 7},  {32, 2, 3, 3, 2, 1, 5, 6},  {16, 2, 3, 3, 1, 1, 3, 8},
        {16, 3, 3, 3, 2, 1, 5, 2},  {32, 20, 3, 3, 1, 1, 3, 7}, {16, 50, 3, 3, 2, 1, 4, 4},
        /* A packed a k-chunk at a time (the next chunk's and group's lines prefetched):
         * groups of two vectors and a last one of one over several chunks each */
        {80, 40, 3, 3, 1, 1, 3, 7}, {112, 50, 3, 3, 2, 1, 4, 6},
        /* one vector of rows, taps in groups of seven (rows of a 7 x 7 window, chanw_*):
         * resnet50's stem (3 channels, stride 2, rows of 112 in blocks of 16), stride 1,
         * k in chunks of whole groups (8 channels: 392), a dilated window (a k row at a
         * time) */
        {16, 3, 7, 7, 2, 1, 3, 112}, {16, 2, 7, 7, 1, 1, 2, 20}, {16, 8, 7, 7, 1, 1, 2, 9},
        {16, 2, 7, 7, 2, 2, 2, 5},
        /* rows of one output pixel (a 1-d convolution: taps along the rows), taken as
         * one row of pixels the row stride apart: channel lanes, packed, gathered */
        {128, 4, 3, 1, 2, 1, 40, 1}, {32, 3, 3, 1, 1, 1, 50, 1}, {16, 2, 5, 1, 5, 1, 30, 1},
        {100, 3, 3, 1, 2, 1, 37, 1}, {2, 3, 3, 1, 1, 1, 21, 1},
        /* one vector of rows over k in groups of three taps (chant_*): chunks rounded
         * up to whole groups (k 423: 213 + 210), taps along a row alone (1 x 3), not
         * for dilated taps */
        {16, 47, 3, 3, 1, 1, 3, 9}, {16, 3, 1, 3, 1, 1, 4, 10}, {16, 2, 3, 3, 1, 2, 3, 20},
        {16, 47, 3, 3, 2, 1, 2, 7}};
    /* then again with the offsets of B's rows kept on the core (RtCore.koff): each
     * case's second run (ACCUM) finds its window's offsets kept by the first, the next
     * case's window differs; last, windows one after the other of the same k (the
     * seeds give the patch's width, (o1 - 1) * st + 3 + seed % 3): rows of another
     * width over planes of the same size, then planes of another size, rows of the
     * same width (the kept offsets of the one before must not be taken) */
    int32_t *kept = malloc(RT_KOFF_MAX * 4);
    assert_non_null(kept);
    for (int keep = 0; keep < 2; keep++) {
        uint32_t seed = 11;
        core.koff = keep ? kept : NULL;
        core.koff_key = (RtKoffKey){0};
        for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++)
            for (int acc = 0; acc < 2; acc++) {
                const uint32_t *x = cases[i];
                check_win(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], acc, seed++);
            }
        check_win(16, 2, 3, 3, 1, 1, 6, 10, false, 36);     /* patch 8 x 12 */
        check_win(16, 2, 3, 3, 1, 1, 10, 6, false, 39);     /* 12 x 8 */
        check_win(16, 2, 3, 3, 1, 1, 8, 6, false, 42);      /* 10 x 8 */
    }
    core.koff = NULL;
    free(kept);
}

/* One DLF16 window MATMUL (3x3 taps, stride st, cl channels, on x o1 pixels) in a
 * scratchpad of budget bytes followed by its widening area: through the area (A and
 * the window widened in place; A apart from the patch, or inside it when overlap) and
 * through the dense copy (wide = 0), C equals the reference on the widened operands
 * gathered into a dense B, bit for bit. */
static void check_win_dlf16(uint32_t m, uint32_t cl, uint32_t st, uint32_t on, uint32_t o1,
                            bool overlap, uint32_t seed) {
    const uint32_t budget = 1u << 18;
    uint32_t wp = (o1 - 1) * st + 3, rin = (on - 1) * st + 3, k = cl * 9, n = on * o1;
    uint32_t np = cl * rin * wp, b = 64, a = overlap ? b + 2 * 8 : b + 2 * np + 16;
    uint32_t c = (overlap ? b + 2 * np : a + 2 * m * k) + 64, wide = budget + 128;
    assert_true(c + 4 * m * n < budget && (overlap ? m * k < np - 8 : true));
    uint8_t *mem = calloc(budget + 128 + 2 * budget + 128, 1);
    float *t = malloc(4 * (size_t)(np > m * k ? np : m * k)), *dense = malloc(4 * (size_t)k * n);
    float *ref = calloc((size_t)m * n, 4), *wa = malloc(4 * (size_t)m * k);
    for (uint32_t i = 0; i < np; i++)
        t[i] = rnd(&seed);
    rt_f32_to_dlf16_n(mem + b, t, np);
    for (uint32_t i = 0; i < m * k; i++)
        t[i] = rnd(&seed);
    rt_f32_to_dlf16_n(mem + a, t, (size_t)m * k);   /* over the patch when overlap */
    rt_dlf16_to_f32_n(wa, mem + a, (size_t)m * k);
    rt_dlf16_to_f32_n(t, mem + b, np);
    for (uint32_t q = 0; q < k; q++)
        for (uint32_t p = 0; p < n; p++)
            dense[q * n + p] = t[q / 9 * rin * wp + (p / o1 * st + q / 3 % 3) * wp +
                                 p % o1 * st + q % 3];
    mm_ref(ref, wa, dense, m, n, k, k, n, n, false);
    SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_DLF16, .out_dtype = ISA_DT_F32,
                    .flags = ISA_F_BWIN, .a = a, .b = b, .c = c, .m = m, .n = n, .k = k,
                    .lda = k, .ldc = n, .bw_kext = {cl, 3, 3},
                    .bw_ks = {(int32_t)(rin * wp), (int32_t)wp, 1}, .bw_next = {on, o1},
                    .bw_ns = {(int32_t)(st * wp), (int32_t)st}};
    for (int w = 0; w < 2; w++) {
        RtCore cc = core;
        cc.lx = mem;
        cc.wide = w ? wide : 0;
        memset(mem + c, 0, 4 * (size_t)m * n);
        rt_matmul(&cc, &mm);
        for (uint32_t i = 0; i < m * n; i++) {
            float got;
            memcpy(&got, mem + c + 4 * i, 4);
            if (bits(ref[i]) != bits(got))
                fail_msg("dlf16 window matmul m%u c%u s%u %ux%u overlap %d wide %d: element "
                         "%u: %a != %a", m, cl, st, on, o1, overlap, w, i, got, ref[i]);
        }
    }
    free(mem), free(t), free(dense), free(ref), free(wa);
}

static void test_matmul_window_dlf16(void **state) {
    (void)state;
    check_win_dlf16(8, 3, 1, 6, 20, false, 5);
    check_win_dlf16(1, 1, 2, 7, 14, false, 6);      /* depthwise, stride 2 */
    check_win_dlf16(4, 4, 1, 5, 9, true, 7);        /* A inside the patch's range */
}

/* One MATMUL with a float8 e4m3 B (ISA_F_BF8: fp8 weights) on DLF16 A, strided rows,
 * with and without ACCUM and the widening area: C equals the F32 reference on the
 * exactly widened operands bit for bit (every one of the 256 byte patterns of B
 * occurs, NaN 0x7f/0xff included). */
static void check_mm_bf8(uint32_t m, uint32_t n, uint32_t k, bool acc, bool wide,
                         uint32_t seed) {
    uint32_t lda = k + 2, ldb = n + 3, ldc = n + 1;
    uint32_t a = 64, b = a + 2 * m * lda + 16, c = (b + k * ldb + 64 + 63) & ~63u; /* C aligned */
    assert_true(c + 4 * m * ldc < LX_BYTES / 2);
    float *wa = malloc(4 * (size_t)m * lda), *wb = malloc(4 * (size_t)k * ldb);
    float *ref = malloc(4 * (size_t)m * ldc);
    for (uint32_t i = 0; i < m * lda; i++)
        wa[i] = rnd(&seed);
    rt_f32_to_dlf16_n(lx + a, wa, (size_t)m * lda);
    rt_dlf16_to_f32_n(wa, lx + a, (size_t)m * lda);
    for (uint32_t i = 0; i < k * ldb; i++) {
        lx[b + i] = (uint8_t)(i * 37u + seed);
        wb[i] = spy_narrow_to_f32(lx[b + i], ISA_DT_F8E4M3FN);
    }
    for (uint32_t i = 0; i < m * ldc; i++)
        fp(c)[i] = rnd(&seed);
    memcpy(ref, fp(c), 4 * (size_t)m * ldc);
    mm_ref(ref, wa, wb, m, n, k, lda, ldb, ldc, acc);
    SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_DLF16, .out_dtype = ISA_DT_F32,
                    .flags = (uint8_t)(ISA_F_BF8 | (acc ? ISA_F_ACCUM : 0)), .a = a, .b = b,
                    .c = c, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc};
    RtCore cc = core;
    cc.wide = wide ? LX_BYTES / 2 : 0;
    rt_matmul(&cc, &mm);
    for (uint32_t i = 0; i < m * ldc; i++)
        if (bits(ref[i]) != bits(fp(c)[i]) && !(isnan(ref[i]) && isnan(fp(c)[i])))
            fail_msg("bf8 matmul m%u n%u k%u acc%d wide%d: element %u: %a != %a", m, n, k, acc,
                     wide, i, fp(c)[i], ref[i]);
    free(wa), free(wb), free(ref);
}

static void test_matmul_bf8(void **state) {
    (void)state;
    check_mm_bf8(4, 64, 32, false, false, 1);
    check_mm_bf8(7, 33, 100, true, false, 2);
    check_mm_bf8(17, 130, 9, false, true, 3);
    check_mm_bf8(1, 256, 64, true, true, 4);
}

/* ---- VREDUCE ----------------------------------------------------------------------- */

/* Reference of one F32 row (isa.md: SUM in 8 lanes, PROD/MAX/MIN in order). */
static float red_ref(int fn, const float *x, uint32_t len, int cs) {
    if (fn == ISA_RF_SUM) {
        float l[8] = {0};
        for (uint32_t i = 0; i < len; i++)
            l[i % 8] += x[(int64_t)i * cs];
        return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    }
    float acc = fn == ISA_RF_PROD ? 1.0f : fn == ISA_RF_MAX ? -INFINITY : INFINITY;
    for (uint32_t i = 0; i < len; i++) {
        float v = x[(int64_t)i * cs];
        if (fn == ISA_RF_PROD)
            acc *= v;
        else if ((fn == ISA_RF_MAX ? v > acc : v < acc) || v != v)
            acc = acc != acc ? acc : v;
    }
    return acc;
}

static void test_vreduce_rows(void **state) {
    (void)state;
    static const uint32_t lens[] = {0, 1, 3, 8, 9, 17, 64, 65};
    uint32_t seed = 7;
    for (int fn = ISA_RF_SUM; fn <= ISA_RF_MIN; fn++)
        for (unsigned li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int cs = 1; cs <= 2; cs++) {
                uint32_t len = lens[li], rows = 21, rs = len * (uint32_t)cs + 1;
                uint32_t src = 4096, dst = 64;
                for (uint32_t i = 0; i < rows * rs + 8; i++)
                    fp(src)[i] = rnd(&seed);
                fp(src)[rs + 1] = NAN; /* NaN in row 1 (when len > 0) */
                fp(src)[2 * rs] = -0.0f;
                fp(src)[3 * rs] = INFINITY;
                for (int acc = 0; acc < 2; acc++) {
                    float old[21];
                    for (uint32_t r = 0; r < rows; r++)
                        fp(dst)[2 * r] = old[r] = rnd(&seed);
                    SpyVReduce vr = {.opcode = ISA_VREDUCE, .dtype = ISA_DT_F32, .fn = (uint8_t)fn,
                                     .flags = acc ? ISA_F_ACCUM : 0, .dst = dst, .src = src,
                                     .rows = rows, .len = len, .src_rs = (int32_t)rs,
                                     .src_cs = cs, .dst_rs = 2};
                    rt_vreduce(&core, &vr);
                    for (uint32_t r = 0; r < rows; r++) {
                        float v = red_ref(fn, fp(src) + r * rs, len, cs);
                        if (acc)
                            v = fn == ISA_RF_SUM    ? old[r] + v
                                : fn == ISA_RF_PROD ? old[r] * v
                                : ((fn == ISA_RF_MAX ? v > old[r] : v < old[r]) || v != v) ? v
                                                                                           : old[r];
                        float got = fp(dst)[2 * r];
                        if (bits(got) != bits(v) && !(isnan(got) && isnan(v)))
                            fail_msg("vreduce fn %d len %u cs %d acc %d row %u: %a != %a", fn,
                                     len, cs, acc, r, got, v);
                    }
                }
            }
}

/* F32 MAX / MIN over rows longer than a chunk (the vectorised fold, rt_kern_red.c):
 * random rows, rows whose extreme is a zero (+0 and -0 both present: the first met
 * wins), a NaN in the first or the second chunk, infinities, and equal extremes; the
 * bits of the one-element-at-a-time reference. */
static void test_vreduce_maxmin_long(void **state) {
    (void)state;
    enum { LEN = 300, ROWS = 8 };
    uint32_t seed = 21, src = 4096, dst = 64;
    for (int fn = ISA_RF_MAX; fn <= ISA_RF_MIN; fn++) {
        float sg = fn == ISA_RF_MAX ? 1.0f : -1.0f;     /* mirrors the rows for MIN */
        for (uint32_t r = 0; r < ROWS; r++)
            for (uint32_t i = 0; i < LEN; i++)
                fp(src)[r * LEN + i] = rnd(&seed);
        for (uint32_t i = 0; i < LEN; i++) {            /* rows 1, 2: the extreme is a zero */
            fp(src)[LEN + i] = -sg * (1.0f + (float)(i % 7));
            fp(src)[2 * LEN + i] = -sg * (1.0f + (float)(i % 5));
        }
        fp(src)[LEN + 41] = -0.0f, fp(src)[LEN + 200] = 0.0f; /* +0 in an earlier lane */
        fp(src)[2 * LEN + 33] = 0.0f, fp(src)[2 * LEN + 290] = -0.0f;
        fp(src)[3 * LEN + 5] = NAN;                     /* row 3: NaN in the first chunk */
        fp(src)[4 * LEN + 270] = NAN;                   /* row 4: in the second */
        fp(src)[5 * LEN + 17] = sg * INFINITY;          /* row 5: two infinities */
        fp(src)[5 * LEN + 299] = sg * INFINITY;
        for (uint32_t i = 0; i < LEN; i++)              /* row 6: all the same extreme */
            fp(src)[6 * LEN + i] = sg * 1.5f;
        for (uint32_t i = 0; i < LEN; i++)              /* row 7: all -inf for MAX */
            fp(src)[7 * LEN + i] = -sg * INFINITY;
        SpyVReduce vr = {.opcode = ISA_VREDUCE, .dtype = ISA_DT_F32, .fn = (uint8_t)fn,
                         .dst = dst, .src = src, .rows = ROWS, .len = LEN, .src_rs = LEN,
                         .src_cs = 1, .dst_rs = 1};
        rt_vreduce(&core, &vr);
        for (uint32_t r = 0; r < ROWS; r++) {
            float v = red_ref(fn, fp(src) + r * LEN, LEN, 1), got = fp(dst)[r];
            if (bits(got) != bits(v) && !(isnan(got) && isnan(v)))
                fail_msg("vreduce fn %d row %u: %a != %a", fn, r, got, v);
        }
    }
}

/* DLF16 element i at LX offset off. */
static uint16_t *hp(uint32_t off) {
    return (uint16_t *)(lx + off);
}

/* DLF16 VREDUCE (short-row and per-row paths, dense and strided rows, ACCUM, dst_rs 1
 * and 2) against the F32 reference on the widened values, rounded once. */
static void test_vreduce_dlf16(void **state) {
    (void)state;
    static const uint32_t lens[] = {0, 1, 3, 9, 17, 64, 65, 300};
    uint32_t seed = 11;
    float wide[400];
    for (int fn = ISA_RF_SUM; fn <= ISA_RF_MIN; fn++)
        for (unsigned li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int cs = 1; cs <= 2; cs++)
                for (int pad = 0; pad <= 1; pad++)
                    for (int acc = 0; acc < 2; acc++) {
                        uint32_t len = lens[li], rows = 21, rs = len * (uint32_t)cs + (uint32_t)pad;
                        uint32_t src = 8192, dst = 64, drs = 1 + (uint32_t)pad;
                        for (uint32_t i = 0; i < rows * rs + 8; i++)
                            hp(src)[i] = spy_f32_to_dlf16(rnd(&seed) * (fn == ISA_RF_PROD ? 0.6f : 100.0f));
                        hp(src)[rs + 1] = 0x7fffu;          /* NINF in row 1 */
                        hp(src)[2 * rs] = 0x8000u;          /* -0 */
                        uint16_t old[21];
                        for (uint32_t r = 0; r < rows; r++)
                            hp(dst)[drs * r] = old[r] = spy_f32_to_dlf16(rnd(&seed));
                        SpyVReduce vr = {.opcode = ISA_VREDUCE, .dtype = ISA_DT_DLF16,
                                         .fn = (uint8_t)fn, .flags = acc ? ISA_F_ACCUM : 0,
                                         .dst = dst, .src = src, .rows = rows, .len = len,
                                         .src_rs = (int32_t)rs, .src_cs = cs,
                                         .dst_rs = (int32_t)drs};
                        rt_vreduce(&core, &vr);
                        for (uint32_t r = 0; r < rows; r++) {
                            for (uint32_t i = 0; i < len; i++)
                                wide[i] = spy_dlf16_to_f32(hp(src)[r * rs + i * (uint32_t)cs]);
                            float v = red_ref(fn, wide, len, 1), o = spy_dlf16_to_f32(old[r]);
                            if (acc)
                                v = fn == ISA_RF_SUM    ? o + v
                                    : fn == ISA_RF_PROD ? o * v
                                    : ((fn == ISA_RF_MAX ? v > o : v < o) || v != v) ? v : o;
                            uint16_t got = hp(dst)[drs * r], want = spy_f32_to_dlf16(v);
                            if (got != want)
                                fail_msg("dlf16 vreduce fn %d len %u cs %d pad %d acc %d row %u: "
                                         "%04x != %04x", fn, len, cs, pad, acc, r, got, want);
                        }
                    }
}

/* DLF16 VSCAN (inclusive / exclusive, forward / reverse, in place, rows longer than a
 * chunk) against an F32 scan of the widened values with each output rounded. */
static void test_vscan_dlf16(void **state) {
    (void)state;
    uint32_t seed = 5, len = 300, rows = 3, src = 8192, dst = 65536;
    for (int flags = 0; flags < 4; flags++)
        for (int inplace = 0; inplace < 2; inplace++) {
            uint16_t in[900];
            for (uint32_t i = 0; i < rows * len; i++)
                hp(src)[i] = in[i] = spy_f32_to_dlf16(rnd(&seed));
            uint32_t d = inplace ? src : dst;
            SpyVScan sc = {.opcode = ISA_VSCAN, .dtype = ISA_DT_DLF16, .flags = (uint8_t)flags,
                           .dst = d, .src = src, .rows = rows, .len = len,
                           .src_rs = (int32_t)len, .dst_rs = (int32_t)len};
            rt_vscan(&core, &sc);
            bool rev = flags & ISA_F_REV, excl = flags & ISA_F_EXCL;
            for (uint32_t r = 0; r < rows; r++) {
                float a = 0.0f;
                for (uint32_t k = 0; k < len; k++) {
                    uint32_t i = rev ? len - 1 - k : k;
                    float x = spy_dlf16_to_f32(in[r * len + i]);
                    a += excl ? 0.0f : x;
                    uint16_t want = spy_f32_to_dlf16(a), got = hp(d)[r * len + i];
                    if (got != want)
                        fail_msg("dlf16 vscan flags %d inplace %d row %u i %u: %04x != %04x",
                                 flags, inplace, r, i, got, want);
                    a += excl ? x : 0.0f;
                }
            }
        }
}

/* ---- VEC: in-place path, strided copies -------------------------------------------- */

/* Reference of one element of the binary / unary functions of the direct path. */
static float vec_ref(int fn, float a, float b) {
    switch (fn) {
    case ISA_VF_ADD: return a + b;
    case ISA_VF_SUB: return a - b;
    case ISA_VF_MUL: return a * b;
    case ISA_VF_DIV: return a / b;
    case ISA_VF_MAX: return ((a > b) | (a != a)) ? a : b;
    case ISA_VF_MIN: return ((a < b) | (a != a)) ? a : b;
    case ISA_VF_RELU: return a < 0.0f ? 0.0f : a;
    case ISA_VF_NEG: return -a;
    default: return fabsf(a);
    }
}

/* One VEC of fn over rows x cols with operand kinds (0 row, 1 column-broadcast, 2 IMM,
 * 3 IMM_A) and in-place or separate destination; compares with the reference. */
static void check_vec(int fn, int kind, bool inplace, uint32_t rows, uint32_t cols, uint32_t *seed) {
    bool unary = fn == ISA_VF_RELU || fn == ISA_VF_NEG || fn == ISA_VF_ABS;
    uint32_t s0 = 8192, s1 = 65536, d = inplace ? s0 : 131072, rs = cols + 3;
    for (uint32_t i = 0; i < rows * rs + 16; i++) {
        fp(s0)[i] = rnd(seed);
        fp(s1)[i] = rnd(seed);
        fp(131072)[i] = 1234.0f;
    }
    fp(s0)[1] = NAN, fp(s1)[2] = NAN, fp(s0)[3] = -0.0f, fp(s1)[4] = 0.0f;
    float *a0 = malloc(4 * (size_t)rows * rs), *b0 = malloc(4 * (size_t)rows * rs);
    memcpy(a0, fp(s0), 4 * (size_t)rows * rs);
    memcpy(b0, fp(s1), 4 * (size_t)rows * rs);
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                .fn = (uint16_t)fn, .nsrc = unary ? 1 : 2, .dst = d, .rows = rows,
                .cols = cols, .dst_rs = (int32_t)rs};
    v.src[0] = s0, v.src_rs[0] = (int32_t)rs, v.src_cs[0] = 1;
    v.src[1] = s1, v.src_rs[1] = (int32_t)rs, v.src_cs[1] = kind == 1 ? 0 : 1;
    float imm = 0.75f;
    if (kind == 2)
        v.flags = ISA_F_IMM;
    if (kind == 3)
        v.flags = ISA_F_IMM_A, v.src[1] = s1;
    memcpy(&v.imm, &imm, 4);
    assert_int_equal(rt_vec(&core, &v), RT_XOK);
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < cols; c++) {
            float a = kind == 3 ? imm : a0[r * rs + c];
            float b = kind == 2 ? imm : kind == 1 ? b0[r * rs] : kind == 3 ? b0[r * rs + c]
                                                                          : b0[r * rs + c];
            float want = vec_ref(fn, a, b), got = fp(d)[r * rs + c];
            if (bits(got) != bits(want) && !(isnan(got) && isnan(want)))
                fail_msg("vec fn %d kind %d inplace %d [%u,%u]: %a != %a", fn, kind, inplace, r,
                         c, got, want);
        }
    if (!inplace) /* padding of the destination rows untouched */
        assert_true(fp(d)[cols] == 1234.0f);
    free(a0);
    free(b0);
}

static void test_vec_direct(void **state) {
    (void)state;
    static const int fns[] = {ISA_VF_ADD, ISA_VF_SUB, ISA_VF_MUL, ISA_VF_DIV, ISA_VF_MAX,
                              ISA_VF_MIN, ISA_VF_RELU, ISA_VF_NEG, ISA_VF_ABS};
    uint32_t seed = 3;
    for (unsigned f = 0; f < sizeof fns / sizeof *fns; f++)
        for (int kind = 0; kind < 4; kind++)
            for (int ip = 0; ip < 2; ip++) {
                if (kind && (fns[f] == ISA_VF_RELU || fns[f] == ISA_VF_NEG || fns[f] == ISA_VF_ABS))
                    continue;
                check_vec(fns[f], kind, ip, 5, 37, &seed);
                check_vec(fns[f], kind, ip, 1, 300, &seed);
            }
}

/* F32 SELECT on a BOOL condition (the masks of dynamic dimensions, taken by the direct
 * path): condition a row or a scalar (its true bytes 1 to 0xff), the values rows or
 * scalars, in place or apart;
 * every element the bits of the operand the condition picks (NaN payloads too), the
 * padding of the destination rows untouched. */
static void test_vec_select(void **state) {
    (void)state;
    uint32_t seed = 7, rows = 3, cols = 45, rs = cols + 5;
    uint32_t m = 4096, s1 = 8192, s2 = 65536;
    for (int kinds = 0; kinds < 8; kinds++)
        for (int ip = 0; ip < 2; ip++) {
            uint32_t d = ip ? s1 : 131072;
            for (uint32_t i = 0; i < rows * rs + 16; i++) {
                static const uint8_t trues[] = {1, 2, 3, 0x10, 0x80, 0xff}; /* any byte */
                core.lx[m + i] = rnd(&seed) > 0.0f ? trues[i % 6] : 0;
                fp(s1)[i] = rnd(&seed);
                fp(s2)[i] = rnd(&seed);
                fp(131072)[i] = 1234.0f;
            }
            uint32_t nan = 0x7fc01234u;
            memcpy(&fp(s1)[2], &nan, 4);
            fp(s2)[0] = -0.0f;
            float *a0 = malloc(4 * (size_t)rows * rs), *b0 = malloc(4 * (size_t)rows * rs);
            uint8_t *m0 = malloc((size_t)rows * rs);
            memcpy(a0, fp(s1), 4 * (size_t)rows * rs);
            memcpy(b0, fp(s2), 4 * (size_t)rows * rs);
            memcpy(m0, core.lx + m, (size_t)rows * rs);
            bool ms = kinds & 1, as = kinds & 2, bs = kinds & 4;   /* scalar operands */
            SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                        .fn = ISA_VF_SELECT, .nsrc = 3, .dst = d, .rows = rows, .cols = cols,
                        .dst_rs = (int32_t)rs};
            uint32_t src[3] = {m, s1, s2};
            bool sc[3] = {ms, as, bs};
            for (int q = 0; q < 3; q++)
                v.src[q] = src[q], v.src_rs[q] = (int32_t)rs, v.src_cs[q] = sc[q] ? 0 : 1;
            assert_int_equal(rt_vec(&core, &v), RT_XOK);
            for (uint32_t r = 0; r < rows; r++)
                for (uint32_t c = 0; c < cols; c++) {
                    uint32_t at = r * rs;
                    bool cond = m0[at + (ms ? 0 : c)] != 0;
                    float want = cond ? a0[at + (as ? 0 : c)] : b0[at + (bs ? 0 : c)];
                    if (bits(fp(d)[at + c]) != bits(want))
                        fail_msg("select kinds %d inplace %d [%u,%u]: %08x != %08x", kinds, ip,
                                 r, c, bits(fp(d)[at + c]), bits(want));
                }
            if (!ip)
                assert_true(fp(d)[cols] == 1234.0f);
            free(a0);
            free(b0);
            free(m0);
        }
}

static void test_vec_copy_strided(void **state) {
    (void)state;
    static const int strides[] = {0, 2, 3, 4, 5, -1, -3};
    for (unsigned si = 0; si < sizeof strides / sizeof *strides; si++) {
        int cs = strides[si];
        uint32_t rows = 4, cols = 29, src = 40000, dst = 200, rs = 200;
        for (uint32_t i = 0; i < 4000; i++)
            fp(src - 4 * 1000)[i] = (float)i;
        SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                    .fn = ISA_VF_COPY, .nsrc = 1, .dst = dst, .rows = rows, .cols = cols,
                    .dst_rs = (int32_t)cols};
        v.src[0] = src, v.src_rs[0] = (int32_t)rs, v.src_cs[0] = cs;
        assert_int_equal(rt_vec(&core, &v), RT_XOK);
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t c = 0; c < cols; c++)
                assert_true(fp(dst)[r * cols + c] == (float)(1000 + r * rs + (int64_t)c * cs));
    }
    /* a row overlapping its source: element by element in increasing order */
    float sim[64];
    for (uint32_t i = 0; i < 64; i++)
        fp(1024)[i] = sim[i] = (float)i;
    for (int j = 0; j < 10; j++)
        sim[1 + j] = sim[2 * j];
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                .fn = ISA_VF_COPY, .nsrc = 1, .dst = 1024 + 4, .rows = 1, .cols = 10,
                .dst_rs = 10};
    v.src[0] = 1024, v.src_cs[0] = 2;
    assert_int_equal(rt_vec(&core, &v), RT_XOK);
    assert_memory_equal(fp(1024), sim, sizeof sim);
}

/* ---- strip-mined runs of in-place VECs --------------------------------------------- */

/* A VEC of fn on the region [rows, cols] at dst (row stride rs), operand 1 at s1 with
 * strides (rs1, cs1), or the immediate when s1 is 0. */
static SpyInsn vec_insn(int fn, uint32_t dst, uint32_t rows, uint32_t cols, uint32_t rs,
                        uint32_t s1, int32_t rs1, int32_t cs1, float imm) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    v->opcode = ISA_VEC, v->dtype = ISA_DT_F32, v->src_dtype = ISA_DT_F32;
    v->fn = (uint16_t)fn, v->nsrc = 2, v->dst = dst, v->rows = rows, v->cols = cols;
    v->dst_rs = (int32_t)rs;
    v->src[0] = dst, v->src_rs[0] = (int32_t)rs, v->src_cs[0] = 1;
    if (s1)
        v->src[1] = s1, v->src_rs[1] = rs1, v->src_cs[1] = cs1;
    else
        v->flags = ISA_F_IMM, memcpy(&v->imm, &imm, 4);
    return in;
}

/* Runs prog[0..n) through the interpreter and one instruction at a time from the same
 * start (with nans, some inputs NaN of either sign); the results must be equal bit for
 * bit. A VEC COPY of the bytes to LX byte 600000 ends the program, so that every
 * result is read after the run (LX is undefined after a program: a run may leave out
 * what nothing reads, rt_fuse.c). */
static bool fill_ties;       /* check_strip's data: zeros of both signs, the rest negative
                                (a MAX's result mostly a tie between +0 and -0) */
static void check_strip(const SpyInsn *prog, uint32_t n, uint32_t bytes, uint32_t *seed,
                        bool nans) {
    uint8_t *init = malloc(bytes), *one = malloc(bytes);
    SpyInsn *all = malloc((n + 1) * sizeof *all);
    memcpy(all, prog, n * sizeof *all);
    memset(&all[n], 0, sizeof all[n]);
    all[n].vec = (SpyVec){.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                          .fn = ISA_VF_COPY, .nsrc = 1, .dst = 600000, .rows = 1,
                          .cols = bytes / 4, .dst_rs = (int32_t)(bytes / 4)};
    all[n].vec.src_cs[0] = 1;
    assert_true(600000 + bytes <= LX_BYTES);
    for (uint32_t i = 0; i < bytes / 4; i++)
        fp(0)[i] = nans && i % 97 == 5 ? NAN : nans && i % 89 == 7 ? -NAN : rnd(seed);
    for (uint32_t i = 0; fill_ties && i < bytes / 4; i++)
        fp(0)[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? 0.0f : -fabsf(fp(0)[i]);
    memcpy(init, lx, bytes);
    for (uint32_t i = 0; i <= n; i++)
        assert_int_equal(rt_vec(&core, &all[i].vec), RT_XOK);
    memcpy(one, lx, bytes);
    memcpy(lx, init, bytes);
    assert_int_equal(rt_exec_program(&core, all, n + 1), RT_XOK);
    assert_memory_equal(lx, one, bytes);
    free(init);
    free(one);
    free(all);
}

static void test_strip_mined_runs(void **state) {
    (void)state;
    uint32_t seed = 11, d = 4096, rows = 40, cols = 300, rs = 304;
    SpyInsn p[4];
    p[0] = vec_insn(ISA_VF_ADD, d, rows, cols, rs, 64, 1, 0, 0); /* per-row bias */
    p[1] = vec_insn(ISA_VF_MAX, d, rows, cols, rs, 0, 0, 0, 0.0f);
    p[2] = vec_insn(ISA_VF_MIN, d, rows, cols, rs, 0, 0, 0, 0.5f);
    p[3] = vec_insn(ISA_VF_MUL, d, rows, cols, rs, 200000, (int32_t)cols, 1, 0);
    check_strip(p, 4, 300000, &seed, false);
    /* one row: blocks of columns */
    SpyInsn q[2] = {vec_insn(ISA_VF_ADD, d, 1, 20000, 20000, 64, 0, 0, 0),
                    vec_insn(ISA_VF_MUL, d, 1, 20000, 20000, 0, 0, 0, 3.0f)};
    check_strip(q, 2, 100000, &seed, false);
    /* operand 1 overlaps the region (shifted by one row): no strip-mining, same result */
    p[3] = vec_insn(ISA_VF_ADD, d, rows, cols, rs, d + 4 * rs, (int32_t)rs, 1, 0);
    check_strip(p, 4, 300000, &seed, false);
}

/* ---- the direct VEC path over many rows ------------------------------------------ */

/* An ADD over rows x 3 (rows 4 floats apart, so they do not merge into one) in place at
 * 0, its other operand from s1 (row stride rs1, column stride cs1: 0 a scalar per row):
 * planned the direct way exactly when fast says, and the sums right either way. */
static void fast_rows_case(uint32_t rows, uint32_t s1, int32_t rs1, int32_t cs1, bool fast) {
    SpyInsn in = vec_insn(ISA_VF_ADD, 0, rows, 3, 4, s1, rs1, cs1, 0);
    uint32_t seed = 9;
    float *ref = malloc((size_t)rows * 4 * sizeof *ref);
    for (uint32_t i = 0; i < LX_BYTES / 4; i++)
        fp(0)[i] = rnd(&seed);
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < 4; c++)
            ref[r * 4 + c] = c < 3 ? fp(0)[r * 4 + c] + fp(s1)[r * rs1 + c * cs1] : fp(0)[r * 4 + c];
    RtPrep pl;
    rt_exec_prep_vec(&in, 1, &pl);
    assert_int_equal(pl.how == RT_PH_FAST, fast);
    assert_int_equal(rt_exec_program(&core, &in, 1), RT_XOK);
    assert_memory_equal(fp(0), ref, (size_t)rows * 4 * sizeof *ref);
    free(ref);
}

/* Past FAST_CHECK_ROWS rows (rt_kern_vfast.c) the direct path checks its operands
 * against the destination once, not row by row (a fuzzed bundle's VEC of millions of
 * rows took 15 s to load): a row operand with the destination's row stride, apart, is
 * taken, as are scalars outside the destination's span; another row stride, and
 * scalars inside the span (here in the gaps between its rows), go the general way. */
static void test_fast_many_rows(void **state) {
    (void)state;
    fast_rows_case(3000, 0x10000, 4, 1, true);
    fast_rows_case(3000, 0x10000, 5, 1, false);
    fast_rows_case(3000, 0x20000, 1, 0, true);
    fast_rows_case(3000, 12, 4, 0, false);
    fast_rows_case(500, 12, 4, 0, true);     /* few rows: checked row by row, apart */
}

/* ---- runs of pooling taps (VEC MAX / MIN) ------------------------------------------ */

/* The taps of a kh x kw pooling window with column stride cs over a patch at src (row
 * pitch pitch, output rows at row stride sr) into [rows, cols] at dst: MAX / MIN of the
 * first two taps, then of the result and each further tap (codegen/cg_reduce.c). */
static uint32_t pool_prog(SpyInsn *p, int fn, uint32_t dst, uint32_t src, uint32_t rows,
                          uint32_t cols, uint32_t pitch, uint32_t sr, uint32_t cs, uint32_t kh,
                          uint32_t kw) {
    uint32_t n = 0;
    for (uint32_t t = 1; t < kh * kw; t++, n++) {
        uint32_t at = src + 4 * ((t / kw) * pitch + t % kw);
        p[n] = vec_insn(fn, dst, rows, cols, cols, at, (int32_t)(sr * pitch), (int32_t)cs, 0);
        if (t == 1)
            p[n].vec.src[0] = src, p[n].vec.src_rs[0] = (int32_t)(sr * pitch),
            p[n].vec.src_cs[0] = (int32_t)cs;
    }
    return n;
}

/* The pooling run prog (n instructions) by rt_vec_pool_portable against the
 * instructions one by one, on random data (with NaNs when nans): the rows hosts
 * without AVX-512 run, which rt_vec_pool does not take on hosts with it. */
static void check_pool_portable(const SpyInsn *prog, uint32_t n, uint32_t bytes,
                                uint32_t *seed, bool nans) {
    uint8_t *init = malloc(bytes), *one = malloc(bytes);
    for (uint32_t i = 0; i < bytes / 4; i++)
        fp(0)[i] = nans && i % 97 == 5 ? NAN : nans && i % 89 == 7 ? -NAN : rnd(seed);
    memcpy(init, lx, bytes);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(rt_vec(&core, &prog[i].vec), RT_XOK);
    memcpy(one, lx, bytes);
    memcpy(lx, init, bytes);
    rt_vec_pool_portable(&core, prog, n);
    assert_memory_equal(lx, one, bytes);
    free(init);
    free(one);
}

/* A pooling run (pool_prog's arguments) is one run, and both the interpreter and the
 * portable rows give the instructions' bits one by one. */
static void pool_case(int fn, uint32_t rows, uint32_t cols, uint32_t pitch, uint32_t sr,
                      uint32_t cs, uint32_t k, uint32_t *seed, bool nans) {
    SpyInsn p[RT_TAPS_MAX];
    uint32_t n = pool_prog(p, fn, 64, 20000, rows, cols, pitch, sr, cs, k, k);
    assert_int_equal(rt_vec_pool_run(p, n), n);
    check_strip(p, n, 80000, seed, nans);
    check_pool_portable(p, n, 80000, seed, nans);
}

static void test_pool_runs(void **state) {
    (void)state;
    uint32_t seed = 5;
    SpyInsn p[RT_TAPS_MAX];
    /* 3x3 stride 2 (55 x 55 from 111 x 111), 2x2 stride 2, 3x3 stride 1; MAX and MIN */
    pool_case(ISA_VF_MAX, 55, 55, 111, 2, 2, 3, &seed, true);
    pool_case(ISA_VF_MIN, 13, 9, 18, 2, 2, 2, &seed, true);
    pool_case(ISA_VF_MAX, 14, 14, 16, 1, 1, 3, &seed, true);
    /* without NaNs (one VMAXPS / VMINPS a tap, rt_kern_vpool512.c) over ties of +0 and
     * -0, whose winner (the later tap) tells the operands' order; rows of 55 and 70
     * results (whole and partial blocks), and ties under the NaNs' exact path */
    fill_ties = true;
    pool_case(ISA_VF_MAX, 55, 55, 111, 2, 2, 3, &seed, false);
    pool_case(ISA_VF_MIN, 20, 70, 141, 2, 2, 3, &seed, false);
    pool_case(ISA_VF_MAX, 14, 70, 72, 1, 1, 3, &seed, false);
    pool_case(ISA_VF_MAX, 55, 55, 111, 2, 2, 3, &seed, true);
    /* a grid of 2 x 3 taps at row stride 1 (each tap row folded once for the two output
     * rows over it: rt_pool_grid512) over 100 columns (a pass of four blocks, then one
     * of three), with and without NaNs */
    uint32_t n = pool_prog(p, ISA_VF_MAX, 64, 20000, 12, 100, 104, 1, 1, 2, 3);
    check_strip(p, n, 80000, &seed, false);
    check_strip(p, n, 80000, &seed, true);
    n = pool_prog(p, ISA_VF_MIN, 64, 20000, 12, 40, 90, 1, 2, 2, 3);
    check_strip(p, n, 80000, &seed, false);
    /* grids of other widths (the fold's taps shifted across vectors: 3 x 5 at column
     * stride 2, its last taps two lanes on; 2 x 5 at stride 1 over 70 columns; 3 x 2 at
     * stride 2), with and without NaNs */
    static const uint32_t grids[][8] = {{10, 37, 120, 1, 2, 3, 5, ISA_VF_MAX},
                                        {9, 70, 80, 1, 1, 2, 5, ISA_VF_MIN},
                                        {9, 20, 50, 2, 2, 3, 2, ISA_VF_MAX}};
    for (size_t gi = 0; gi < sizeof grids / sizeof *grids; gi++) {
        const uint32_t *g = grids[gi];
        n = pool_prog(p, (int)g[7], 64, 20000, g[0], g[1], g[2], g[3], g[4], g[5], g[6]);
        assert_int_equal(rt_vec_pool_run(p, n), n);
        check_strip(p, n, 80000, &seed, false);
        check_strip(p, n, 80000, &seed, true);
    }
    fill_ties = false;
    /* ADD (average pooling's sums): the additions in tap order, the same bits; without
     * NaNs, whose payload when both operands are NaN isa.md leaves open (the AVX-512 row
     * keeps the sum's, a -O0 build of the one-by-one path the other's) */
    pool_case(ISA_VF_ADD, 35, 35, 37, 1, 1, 3, &seed, false);
    pool_case(ISA_VF_ADD, 13, 9, 18, 2, 2, 2, &seed, false);
    /* a tap that reads the region is no pooling run */
    n = pool_prog(p, ISA_VF_MAX, 64, 20000, 14, 14, 16, 1, 1, 3, 3);
    p[3].vec.src[1] = 64 + 8;
    assert_int_equal(rt_vec_pool_run(p, n), 3);
}

/* The nt taps of a depthwise convolution (codegen/cg_contract.c) on [rows, cols] at dst:
 * tap t reads the patch at src + 4 * t with column stride cs and row stride pitch, times
 * the per-row weight at w + 4 * t (row stride nt); a MUL, then FMAs into dst. */
static uint32_t dw_prog(SpyInsn *p, uint32_t nt, uint32_t dst, uint32_t src, uint32_t w,
                        uint32_t rows, uint32_t cols, uint32_t pitch, uint32_t cs) {
    for (uint32_t t = 0; t < nt; t++) {
        p[t] = vec_insn(t ? ISA_VF_FMA : ISA_VF_MUL, dst, rows, cols, cols, w + 4 * t,
                        (int32_t)nt, 0, 0);
        SpyVec *v = &p[t].vec;
        v->src[0] = src + 4 * t, v->src_rs[0] = (int32_t)pitch, v->src_cs[0] = (int32_t)cs;
        if (t)
            v->nsrc = 3, v->src[2] = dst, v->src_rs[2] = (int32_t)cols, v->src_cs[2] = 1;
    }
    return nt;
}

static void test_dw_tap_runs(void **state) {
    (void)state;
    uint32_t seed = 9;
    SpyInsn p[RT_TAPS_MAX];
    uint32_t n = dw_prog(p, 9, 64, 20000, 60000, 7, 40, 100, 2);   /* 16 + 16 + 8 lanes */
    assert_int_equal(rt_vec_taps_run(p, n), n);
    check_strip(p, n, 80000, &seed, false);
    n = dw_prog(p, 5, 64, 20000, 60000, 5, 37, 60, 1);             /* a scalar tail */
    assert_int_equal(rt_vec_taps_run(p, n), n);
    check_strip(p, n, 80000, &seed, false);
    n = dw_prog(p, 9, 64, 20000, 60000, 3, 150, 320, 2); /* four vectors a step, then one */
    assert_int_equal(rt_vec_taps_run(p, n), n);
    check_strip(p, n, 80000, &seed, false);
}

/* A 7 x 7 depthwise kernel's 49 taps: a run of RT_TAPS_MAX, then one that starts with an
 * FMA and adds the rest to the sums in the region; the same bits as one VEC at a time. */
static void test_dw_tap_runs_long(void **state) {
    (void)state;
    uint32_t seed = 13;
    SpyInsn p[64];
    uint32_t n = dw_prog(p, 49, 64, 20000, 60000, 6, 70, 140, 1);  /* four vectors, a tail */
    assert_int_equal(rt_vec_taps_run(p, n), RT_TAPS_MAX);
    assert_int_equal(rt_vec_taps_run(p + RT_TAPS_MAX, n - RT_TAPS_MAX), n - RT_TAPS_MAX);
    check_strip(p, n, 80000, &seed, false);
    n = dw_prog(p, 49, 64, 20000, 60000, 4, 37, 100, 2);           /* stride 2 */
    check_strip(p, n, 80000, &seed, false);
    /* an FMA that reads the region (not its addend) starts no run */
    p[RT_TAPS_MAX].vec.src[0] = 64 + 4;
    assert_int_equal(rt_vec_taps_run(p + RT_TAPS_MAX, n - RT_TAPS_MAX), 0);
    check_strip(p, n, 80000, &seed, false);
}

/* ---- DMA: short rows ---------------------------------------------------------------- */

static uint8_t dram[1 << 18];    /* DRAM segment 0 of the DMA tests */
static uint8_t *dram_segs[1] = {dram};

/* Binds dram as segment 0 and fills it with the bytes i * mul + add. */
static void dram_fill(unsigned mul, unsigned add) {
    core.seg = dram_segs;
    for (unsigned i = 0; i < sizeof dram; i++)
        dram[i] = (uint8_t)(i * mul + add);
}

static void test_dma_short_rows(void **state) {
    (void)state;
    dram_fill(7, 1);
    /* window loads: dims [3, 5, w]; from 8 floats (32 bytes) up the rows go through
     * rt_copy512.c on AVX-512 hosts: whole 64-byte blocks and a masked tail, which
     * must not write past a row (the byte after the last row stays 0) */
    static const uint32_t widths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 17, 28, 31, 32, 33,
                                      56, 100, 130};
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
        uint32_t w = widths[wi];
        SpyDma d = {.opcode = ISA_LOAD, .esize = 4, .ndim = 3, .seg = 0, .dram_off = 12, .lx = 64};
        for (int i = 0; i < ISA_MAX_DIMS; i++)
            d.dims[i] = 1;
        d.dims[0] = 3, d.dims[1] = 5, d.dims[2] = w;
        d.dram_stride[0] = 400, d.dram_stride[1] = 22, d.dram_stride[2] = 1;
        d.lx_stride[0] = (int32_t)(5 * w), d.lx_stride[1] = (int32_t)w, d.lx_stride[2] = 1;
        memset(lx, 0, 8192);
        rt_dma(&core, &d, false);
        for (uint32_t a = 0; a < 3; a++)
            for (uint32_t b = 0; b < 5; b++)
                for (uint32_t c = 0; c < w; c++)
                    assert_memory_equal(lx + 64 + 4 * ((a * 5 + b) * w + c),
                                        dram + 12 + 4 * (a * 400 + b * 22 + c), 4);
        assert_int_equal(lx[64 + 4 * 15 * w], 0);
    }
    core.seg = NULL;
}

/* ---- pooling taps read in place from a deferred LOAD ------------------------------- */

/* A pooling run over a patch of ph x pw floats LOADed (one row of bytes, deferred) from
 * the end of segment 0, so that a read past the patch's last element leaves the
 * segment (ASan), with, when clobber, a STORE over the patch's DRAM between the LOAD
 * and the run (the run must see the loaded values). Checked against the run's
 * instructions one by one on a copy of the patch in LX. */
static void check_pool_in_place(int fn, uint32_t rows, uint32_t cols, uint32_t ph, uint32_t pw,
                                uint32_t sr, uint32_t cs, uint32_t k, bool clobber) {
    uint32_t seed = 9, src = 20000, dst = 64, other = 400000, bytes = 4 * ph * pw;
    uint32_t off = (uint32_t)sizeof dram - bytes;
    float *patch = (float *)(dram + off);
    core.seg = dram_segs;
    for (uint32_t i = 0; i < ph * pw; i++)
        patch[i] = fn != ISA_VF_ADD && i % 97 == 5   ? NAN   /* ADD: see test_pool_runs */
                   : fn != ISA_VF_ADD && i % 89 == 7 ? -NAN
                   : i % 83 == 1                     ? -0.0f
                                                     : rnd(&seed);
    SpyInsn p[RT_TAPS_MAX + 2];
    memset(p, 0, sizeof p);
    SpyDma *ld = &p[0].dma, *st = &p[1].dma;
    *ld = (SpyDma){.opcode = ISA_LOAD, .esize = 4, .ndim = 1, .seg = 0, .dram_off = off,
                   .lx = src};
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        ld->dims[i] = 1, ld->dram_stride[i] = ld->lx_stride[i] = 1;
    ld->dims[0] = ph * pw;
    *st = *ld;
    st->opcode = ISA_STORE, st->lx = other;
    uint32_t b = clobber ? 2 : 1;
    uint32_t n = pool_prog(p + b, fn, dst, src, rows, cols, pw, sr, cs, k, k) + b;
    /* expected: the instructions one by one on the patch copied to LX */
    memcpy(lx + src, patch, bytes);
    for (uint32_t i = b; i < n; i++)
        assert_int_equal(rt_vec(&core, &p[i].vec), RT_XOK);
    uint8_t *want = malloc(4 * rows * cols);
    memcpy(want, lx + dst, 4 * rows * cols);
    /* the program: LX's patch poisoned, its DRAM the only copy */
    memset(lx + src, 0xff, bytes);
    memset(lx + dst, 0, 4 * rows * cols);
    for (uint32_t i = 0; i < ph * pw; i++)
        ((float *)(lx + other))[i] = 1e30f;
    uint8_t *keep = malloc(bytes);
    memcpy(keep, patch, bytes);
    assert_int_equal(rt_exec_program(&core, p, n), RT_XOK);
    assert_memory_equal(lx + dst, want, 4 * rows * cols);
    if (!clobber && rt_host_has(RT_HOST_AVX512))   /* read in place: never copied */
        for (uint32_t i = 0; i < bytes; i++)
            assert_int_equal(lx[src + i], 0xff);
    if (clobber)
        assert_int_equal(memcmp(patch, keep, bytes) != 0, 1);   /* the STORE ran */
    free(want);
    free(keep);
    core.seg = NULL;
}

static void test_pool_in_place(void **state) {
    (void)state;
    check_pool_in_place(ISA_VF_MAX, 55, 55, 111, 111, 2, 2, 3, false);   /* squeezenet's */
    check_pool_in_place(ISA_VF_MIN, 38, 38, 40, 40, 1, 1, 3, false);
    check_pool_in_place(ISA_VF_MAX, 9, 13, 19, 27, 2, 2, 2, false);
    check_pool_in_place(ISA_VF_ADD, 35, 35, 37, 37, 1, 1, 3, false);   /* average pooling */
    check_pool_in_place(ISA_VF_ADD, 9, 13, 19, 27, 2, 2, 2, false);
    check_pool_in_place(ISA_VF_MAX, 55, 55, 111, 111, 2, 2, 3, true);
}

/* A LOAD of dims (outermost first, the rest 1) with DRAM / LX strides in elements. */
static SpyDma dma_load(int n, const uint32_t *dims, const int32_t *ds, const int32_t *ls) {
    SpyDma d = {.opcode = ISA_LOAD, .esize = 4, .ndim = (uint8_t)n, .seg = 0, .dram_off = 8,
                .lx = 128};
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        d.dims[i] = 1, d.dram_stride[i] = d.lx_stride[i] = 1;
    for (int i = 0; i < n; i++)
        d.dims[i] = dims[i], d.dram_stride[i] = ds[i], d.lx_stride[i] = ls[i];
    return d;
}

static void test_dma_transpose_blocks(void **state) {
    (void)state;
    dram_fill(13, 5);
    static const uint32_t sizes[][2] = {{4, 4}, {37, 9}, {16, 33}, {3, 7}, {50, 2}, {5, 5}};
    for (unsigned t = 0; t < sizeof sizes / sizeof *sizes; t++) { /* LX[r][i] = DRAM[i][r] */
        uint32_t nr = sizes[t][0], len = sizes[t][1], dims[2] = {nr, len};
        int32_t ds[2] = {1, 301}, ls[2] = {(int32_t)len + 3, 1};
        SpyDma d = dma_load(2, dims, ds, ls);
        memset(lx, 0, 65536);
        rt_dma(&core, &d, false);
        for (uint32_t r = 0; r < nr; r++)
            for (uint32_t i = 0; i < len; i++)
                assert_memory_equal(lx + 128 + 4 * (r * (len + 3) + i),
                                    dram + 8 + 4 * (i * 301 + r), 4);
    }
    /* pooling windows: [channels, out cols, window rows, window cols] */
    uint32_t dims[4] = {3, 7, 3, 3};
    int32_t ds[4] = {900, 2, 30, 1}, ls[4] = {63, 9, 3, 1};
    SpyDma d = dma_load(4, dims, ds, ls);
    rt_dma(&core, &d, false);
    for (uint32_t a = 0; a < 3; a++)
        for (uint32_t b = 0; b < 7; b++)
            for (uint32_t r = 0; r < 3; r++)
                for (uint32_t c = 0; c < 3; c++)
                    assert_memory_equal(lx + 128 + 4 * (a * 63 + b * 9 + r * 3 + c),
                                        dram + 8 + 4 * (a * 900 + b * 2 + r * 30 + c), 4);
    core.seg = NULL;
}

static void test_vec_copy_rows(void **state) {
    (void)state;
    static const uint32_t shapes[][3] = {{6, 13, 13}, {5, 10, 14}, {3, 70, 80}, {2, 1, 3}};
    for (unsigned t = 0; t < sizeof shapes / sizeof *shapes; t++) {
        uint32_t rows = shapes[t][0], cols = shapes[t][1], rs = shapes[t][2];
        for (uint32_t i = 0; i < 4000; i++)
            fp(20000)[i] = (float)i, fp(100)[i] = -1.0f;
        SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                    .fn = ISA_VF_COPY, .nsrc = 1, .dst = 400, .rows = rows, .cols = cols,
                    .dst_rs = (int32_t)cols};
        v.src[0] = 20000, v.src_rs[0] = (int32_t)rs, v.src_cs[0] = 1;
        assert_int_equal(rt_vec(&core, &v), RT_XOK);
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t c = 0; c < cols; c++)
                assert_true(fp(400)[r * cols + c] == (float)(r * rs + c));
        assert_true(fp(400)[rows * cols] == -1.0f);
    }
    /* rows overlapping their source (a shift down by one row): row by row, in order */
    float sim[64];
    for (uint32_t i = 0; i < 64; i++)
        fp(1024)[i] = sim[i] = (float)i;
    for (uint32_t r = 0; r < 3; r++)
        memmove(sim + 8 * r + 4, sim + 8 * r, 6 * sizeof *sim);
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                .fn = ISA_VF_COPY, .nsrc = 1, .dst = 1024 + 16, .rows = 3, .cols = 6,
                .dst_rs = 8};
    v.src[0] = 1024, v.src_rs[0] = 8, v.src_cs[0] = 1;
    assert_int_equal(rt_vec(&core, &v), RT_XOK);
    assert_memory_equal(fp(1024), sim, sizeof sim);
}

/* ---- vectorised transcendental functions -------------------------------------------- */

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_matmul_bt),
        cmocka_unit_test(test_matmul_post),     cmocka_unit_test(test_vreduce_rows),
        cmocka_unit_test(test_vec_direct),      cmocka_unit_test(test_vec_select),      cmocka_unit_test(test_vec_copy_strided),
        cmocka_unit_test(test_dma_short_rows),
        cmocka_unit_test(test_strip_mined_runs), cmocka_unit_test(test_dma_transpose_blocks),
        cmocka_unit_test(test_vec_copy_rows),   cmocka_unit_test(test_matmul_window),
        cmocka_unit_test(test_matmul_narrow),
        cmocka_unit_test(test_vreduce_dlf16),   cmocka_unit_test(test_vscan_dlf16),
        cmocka_unit_test(test_matmul_window_dlf16), cmocka_unit_test(test_matmul_bf8),
        cmocka_unit_test(test_fast_many_rows), cmocka_unit_test(test_pool_runs),       cmocka_unit_test(test_dw_tap_runs),
        cmocka_unit_test(test_pool_in_place),
        cmocka_unit_test(test_vreduce_maxmin_long),
        cmocka_unit_test(test_dw_tap_runs_long),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
