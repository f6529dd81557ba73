/* test_rt_defer.c: unit tests of deferred LOADs (rt_defer.c) and of the other plans
 * that change the order or place of the interpreter's work (a MATMUL's C written
 * straight to its STORE's DRAM, with the chain after it run on its tiles: rt_prep.c
 * RT_PH_EPI). Each program runs twice
 * on the same DRAM contents: through rt_exec_program (LOADs deferred as views, MATMUL
 * operands read from DRAM) and instruction by instruction with every LOAD copied at
 * once (rt_dma); the DRAM each leaves behind must be the same bytes. The programs
 * (their LOADs of at least RT_DEFER_MIN bytes are the deferred ones) cover what must
 * carry a deferred LOAD out: a later LOAD partly over it, a STORE overwriting its DRAM
 * source (a widening ISA_F_F32 one too), VEC / GATHER / MATMUL-C accesses to its LX
 * bytes (a VEC's immediate operand is none), more LOADs than view slots, operands that
 * do not match the view's rows; and what reads it straight from
 * DRAM: row and 1-d views as A and B, transposed views (alone or two joined side by
 * side) as B, at products of 1, 3, 8 and 100 rows; the A of a window product (its B read
 * in LX, the views under its range carried out) and its B from a view of one row per
 * channel (read in DRAM); LOADs in pieces joined into one view;
 * LOADs over part of a view of rows (the rows they rewrite cut out of it); a VFILL
 * filling only the gaps the LOADs after it leave (rt_fill.c); a STORE of a pad's tile
 * from its LOAD's DRAM and LX's border (rt_defer_store.c); the plans of
 * rt_prep.c (runs of LOADs merged into one copy, rows of LOADs and STOREs). And the
 * transposed B of each F32
 * kernel (streamed and packed) against a scalar reference.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_exec.h"

#define LX_BYTES (1u << 20)
#define DRAM_BYTES (1u << 20)
#define MAXP 32

static uint8_t *lx, *dram, *dram0;
static uint8_t *segs[1];
static RtCore core;

static int setup(void **state) {
    (void)state;
    lx = calloc(LX_BYTES + RT_LX_SLACK, 1);
    dram = malloc(DRAM_BYTES);
    dram0 = malloc(DRAM_BYTES);
    segs[0] = dram;
    core = (RtCore){.lx = lx, .seg = segs, .pack = aligned_alloc(64, RT_PACK_BYTES + RT_PACK_SLACK)};
    return lx && dram && dram0 && core.pack ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(lx);
    free(dram);
    free(dram0);
    free(core.pack);
    return 0;
}

/* A program under construction. */
typedef struct {
    SpyInsn in[MAXP];
    uint32_t n;
} Prog;

/* Appends a LOAD or STORE of dims d0 x d1 (elements of 4 bytes) with the given strides. */
static void dma(Prog *p, bool store, uint32_t lxo, int64_t off, uint32_t d0, uint32_t d1,
                int32_t ds0, int32_t ds1, int32_t ls0, int32_t ls1) {
    SpyDma x = {.opcode = store ? ISA_STORE : ISA_LOAD, .esize = 4, .ndim = 2, .lx = lxo,
                .dram_off = off};
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        x.dims[i] = 1;
    x.dims[0] = d0, x.dims[1] = d1;
    x.dram_stride[0] = ds0, x.dram_stride[1] = ds1;
    x.lx_stride[0] = ls0, x.lx_stride[1] = ls1;
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].dma = x;
}

/* Appends an F32 MATMUL. */
static void mm(Prog *p, uint32_t a, uint32_t b, uint32_t c, uint32_t m, uint32_t n,
               uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, bool acc) {
    SpyMatmul x = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                   .flags = acc ? ISA_F_ACCUM : 0, .a = a, .b = b, .c = c, .m = m, .n = n,
                   .k = k, .lda = lda, .ldb = ldb, .ldc = ldc};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].mm = x;
}

/* Appends an F32 VEC ADD of a rows x cols region at dst with the immediate 1.0. */
static void vadd(Prog *p, uint32_t dst, uint32_t rows, uint32_t cols, int32_t rs) {
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .fn = ISA_VF_ADD, .nsrc = 2,
                .flags = ISA_F_IMM, .dst = dst, .src = {dst}, .rows = rows, .cols = cols,
                .dst_rs = rs, .src_rs = {rs}, .src_cs = {1}, .imm = 0x3f800000u};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].vec = v;
}

/* Appends a GATHER of nidx rows of len elements from DRAM row 0.. (indices at idx). */
static void gather(Prog *p, uint32_t dst, uint32_t idx, uint32_t nidx, uint32_t len) {
    SpyGather g = {.opcode = ISA_GATHER, .esize = 4, .dram_off = 0, .row_stride = len,
                   .lx_dst = dst, .lx_idx = idx, .nidx = nidx, .row_elems = len,
                   .bound = 64, .dst_row_stride = len};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].gather = g;
}

/* DRAM bytes [fill_nan_lo, fill_nan_hi) get a NaN or a -0 among their floats (every
 * 37th is a NaN, every 41st -0) when fill_nan_hi is not 0. */
static uint32_t fill_nan_lo, fill_nan_hi;

/* Fills DRAM with small floats (exact sums in any order would hide nothing: the values
 * make rounding matter) and a few whole numbers below 64 for GATHER indices. */
static void fill(uint32_t seed) {
    for (uint32_t i = 0; i < DRAM_BYTES / 4; i++) {
        seed = seed * 1664525u + 1013904223u;
        float f = (float)((seed >> 8) % 8192) / 1024.0f - 4.0f + 1.0f / 3.0f;
        if (4 * i >= fill_nan_lo && 4 * i < fill_nan_hi)
            f = i % 37 == 0 ? NAN : i % 41 == 0 ? -0.0f : f;
        memcpy(dram0 + 4 * i, &f, 4);
    }
    for (int32_t i = 0; i < 16; i++)
        memcpy(dram0 + 4 * (DRAM_BYTES / 4 - 16 + i), &(int32_t){(i * 7) % 64}, 4);
}

/* Runs p both ways from the DRAM of fill(seed) and compares the DRAM they leave. */
static void check(const Prog *p, uint32_t seed) {
    fill(seed);
    memcpy(dram, dram0, DRAM_BYTES);
    memset(lx, 0xff, LX_BYTES);
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->in[i].opcode == ISA_LOAD || p->in[i].opcode == ISA_STORE)
            rt_dma(&core, &p->in[i].dma, p->in[i].opcode == ISA_STORE);
        else
            assert_int_equal(rt_exec_program(&core, &p->in[i], 1), RT_XOK);
    }
    uint8_t *want = malloc(DRAM_BYTES);
    assert_non_null(want);
    memcpy(want, dram, DRAM_BYTES);
    memcpy(dram, dram0, DRAM_BYTES);
    memset(lx, 0xff, LX_BYTES);
    assert_int_equal(rt_exec_program(&core, p->in, p->n), RT_XOK);
    assert_memory_equal(dram, want, DRAM_BYTES);
    free(want);
}

#define OUT 0x80000 /* DRAM bytes where the programs store their results */

/* A (1-d view) times B (rows of a wider DRAM matrix), m rows, stored. */
static void prog_rows(Prog *p, uint32_t m, uint32_t n, uint32_t k, bool acc) {
    p->n = 0;
    dma(p, false, 0, 0, m, k, (int32_t)k, 1, (int32_t)k, 1);               /* A, 1-d */
    dma(p, false, 0x40000, 0x20000, k, n, (int32_t)n + 40, 1, (int32_t)n, 1); /* B rows */
    mm(p, 0, 0x40000, 0xc0000, m, n, k, k, n, n, false);
    if (acc)
        mm(p, 0, 0x40000, 0xc0000, m, n, k, k, n, n, true);
    dma(p, true, 0xc0000, OUT, m, n, (int32_t)n, 1, (int32_t)n, 1);
}

static void test_defer_matmul_rows(void **state) {
    (void)state;
    Prog p;
    const uint32_t ms[] = {1, 3, 8, 100};
    for (int i = 0; i < 4; i++) {
        prog_rows(&p, ms[i], 70, 45, false);
        check(&p, 1 + (uint32_t)i);
        prog_rows(&p, ms[i], 37, 130, true);
        check(&p, 5 + (uint32_t)i);
    }
    /* B at an offset inside its view, and A with lda wider than k */
    p.n = 0;
    dma(&p, false, 0, 0, 1, 4000, 0, 1, 0, 1);
    dma(&p, false, 0x40000, 0x20000, 50, 64, 100, 1, 64, 1);
    mm(&p, 8, 0x40000 + 4 * (64 * 3 + 5), 0xc0000, 3, 20, 40, 100, 64, 20, false);
    dma(&p, true, 0xc0000, OUT, 3, 20, 20, 1, 20, 1);
    check(&p, 9);
    /* the same B with a row stride its view does not have: carried out, same result */
    p.in[2].mm.ldb = 32;
    p.in[2].mm.k = 20;
    check(&p, 10);
}

/* B loaded transposed (DRAM columns contiguous), m rows. */
static void prog_t(Prog *p, uint32_t m, uint32_t n, uint32_t k) {
    p->n = 0;
    dma(p, false, 0, 0, m, k, (int32_t)k, 1, (int32_t)k, 1);
    dma(p, false, 0x40000, 0x20000, k, n, 1, (int32_t)k + 3, (int32_t)n, 1); /* transpose */
    mm(p, 0, 0x40000, 0xc0000, m, n, k, k, n, n, false);
    dma(p, true, 0xc0000, OUT, m, n, (int32_t)n, 1, (int32_t)n, 1);
}

/* B loaded transposed in two pieces of n / 2 columns side by side (an attention head's
 * K^T, tokens in pieces), joined into one view; with touch, a VEC then reads part of
 * the joined view in LX (carried out element by element) before the MATMUL. */
static void prog_t2(Prog *p, uint32_t m, uint32_t n, uint32_t k, bool touch) {
    uint32_t h = n / 2, ld = k + 3;
    p->n = 0;
    dma(p, false, 0, 0, m, k, (int32_t)k, 1, (int32_t)k, 1);
    dma(p, false, 0x40000, 0x20000, k, h, 1, (int32_t)ld, (int32_t)n, 1);
    dma(p, false, 0x40000 + 4 * h, 0x20000 + 4 * (int64_t)h * ld, k, h, 1, (int32_t)ld,
        (int32_t)n, 1);
    if (touch)
        vadd(p, 0x40000 + 4 * n * 2, 1, n, (int32_t)n);
    mm(p, 0, 0x40000, 0xc0000, m, n, k, k, n, n, false);
    dma(p, true, 0xc0000, OUT, m, n, (int32_t)n, 1, (int32_t)n, 1);
    dma(p, true, 0x40000, OUT + 0x40000, k, n, (int32_t)n, 1, (int32_t)n, 1);
}

/* The two transposed pieces of prog_t2 make one view of all n columns. */
static void test_defer_join_transposed(void **state) {
    (void)state;
    Prog p;
    prog_t2(&p, 3, 128, 64, false);
    RtDefer d = {0};
    rt_defer_load(&core, &d, &p.in[1].dma);
    rt_defer_load(&core, &d, &p.in[2].dma);
    assert_int_equal(d.n, 1);
    assert_true(d.v[0].t);
    assert_int_equal(d.v[0].rowb, 128 * 4);
}

static void test_defer_matmul_transposed(void **state) {
    (void)state;
    Prog p;
    const uint32_t ms[] = {1, 3, 8, 100};
    for (int i = 0; i < 4; i++) {
        prog_t(&p, ms[i], 45, 600);   /* n not a multiple of the vector width, k > block */
        check(&p, 20 + (uint32_t)i);
        prog_t(&p, ms[i], 64, 9);
        check(&p, 30 + (uint32_t)i);
        prog_t2(&p, ms[i], 128, 64, false);
        check(&p, 60 + (uint32_t)i);
        prog_t2(&p, ms[i], 90, 33, true);
        check(&p, 70 + (uint32_t)i);
    }
}

/* What must carry the LOAD out first. */
static void test_defer_flushes(void **state) {
    (void)state;
    Prog p;
    /* a STORE overwrites the LOAD's DRAM source before the MATMUL and a VEC read it */
    p.n = 0;
    dma(&p, false, 0, 0, 1, 64, 0, 1, 0, 1);
    dma(&p, false, 0x1000, 0x100, 64, 16, 16, 1, 16, 1);
    dma(&p, true, 0, 0x100, 1, 64, 0, 1, 0, 1);               /* writes B's source */
    dma(&p, false, 0x1000, 0x40000, 1, 8, 0, 1, 0, 1);        /* partly over B in LX */
    mm(&p, 0, 0x1000, 0x8000, 1, 16, 64, 64, 16, 16, false);
    vadd(&p, 0x1000, 64, 16, 16);
    dma(&p, true, 0x1000, OUT, 64, 16, 16, 1, 16, 1);
    dma(&p, true, 0x8000, OUT + 0x8000, 1, 16, 0, 1, 0, 1);
    check(&p, 40);
    /* a VEC on part of a view, then a MATMUL reading all of it; C over a view */
    p.n = 0;
    dma(&p, false, 0x10000, 0, 32, 64, 64, 1, 64, 1);
    dma(&p, false, 0x1000, 0x2000, 64, 16, 40, 1, 16, 1);
    vadd(&p, 0x1000 + 4 * 16 * 10, 2, 16, 16);
    dma(&p, false, 0x8000, 0x9000, 32, 16, 16, 1, 16, 1);     /* C's old value */
    mm(&p, 0x10000, 0x1000, 0x8000, 32, 16, 64, 64, 16, 16, true);
    dma(&p, true, 0x8000, OUT, 32, 16, 16, 1, 16, 1);
    check(&p, 41);
    /* a GATHER into a view, more LOADs than view slots, a LOAD rewriting a view */
    p.n = 0;
    dma(&p, false, 0x100, DRAM_BYTES - 64, 1, 16, 0, 1, 0, 1);  /* indices */
    for (uint32_t i = 0; i < RT_MAX_VIEWS + 2; i++)
        dma(&p, false, 0x1000 + 0x1000 * i, 0x3000 + 0x800 * i, 16, 32, 48, 1, 32, 1);
    gather(&p, 0x2000 + 64, 0x100, 3, 8);
    dma(&p, false, 0x3000, 0x30000, 16, 32, 32, 1, 32, 1);      /* rewrites view 2 */
    mm(&p, 0x1000, 0x2000, 0x20000, 8, 32, 8, 32, 32, 32, false);
    mm(&p, 0x3000, 0x4000, 0x20000, 8, 32, 8, 32, 32, 32, true);
    dma(&p, true, 0x20000, OUT, 8, 32, 32, 1, 32, 1);
    dma(&p, true, 0x2000, OUT + 0x4000, 1, 256, 0, 1, 0, 1);
    check(&p, 42);
    /* a LOAD over part of a view (rows view, then a 1-d one): the rest must survive */
    p.n = 0;
    dma(&p, false, 0x1000, 0x2000, 16, 32, 40, 1, 32, 1);
    dma(&p, false, 0x1000 + 4 * 32 * 3, 0x9000, 1, 40, 0, 1, 0, 1);
    dma(&p, false, 0x4000, 0x6000, 1, 512, 0, 1, 0, 1);
    dma(&p, false, 0x4000 + 64, 0xa000, 2, 8, 32, 1, 16, 1);
    dma(&p, true, 0x1000, OUT, 1, 512, 0, 1, 0, 1);
    dma(&p, true, 0x4000, OUT + 0x1000, 1, 512, 0, 1, 0, 1);
    check(&p, 43);
    /* a STORE that widens DLFloat16 to float32 (ISA_F_F32: 4 DRAM bytes an element)
     * overwrites the view's source only with the upper half of its DRAM bytes */
    p.n = 0;
    dma(&p, false, 0x8000, 0x9000, 1, 128, 0, 1, 0, 1);         /* 256 halves to store */
    dma(&p, false, 0x1000, 0x2000, 16, 32, 32, 1, 32, 1);
    dma(&p, true, 0x8000, 0x2000 - 0x200, 1, 256, 0, 1, 0, 1);
    p.in[p.n - 1].dma.flags = ISA_F_F32, p.in[p.n - 1].dma.esize = 2;
    vadd(&p, 0x1000, 16, 32, 32);
    dma(&p, true, 0x1000, OUT, 16, 32, 32, 1, 32, 1);
    check(&p, 44);
}

/* A VEC's immediate operand reads no LX: a view under the LX address its src field
 * holds (0) is kept, not carried out (bert_base's GELU: x / sqrt 2 carried out the
 * 384 KiB activation loaded at LX 0 in every core); the same field as an LX operand
 * carries it out. */
static void test_defer_immediate(void **state) {
    (void)state;
    Prog p;
    p.n = 0;
    dma(&p, false, 0, 0, 64, 64, 64, 1, 64, 1);             /* a view at LX 0 */
    vadd(&p, 0x10000, 16, 16, 16);                          /* x + 1.0: src[1] = 0 */
    for (int imm = 1; imm >= 0; imm--) {
        RtDefer d = {0};
        fill(50);
        memcpy(dram, dram0, DRAM_BYTES);
        rt_defer_load(&core, &d, &p.in[0].dma);
        assert_int_equal(d.n, 1);
        SpyInsn v = p.in[1];
        if (!imm)
            v.vec.flags &= (uint8_t)~ISA_F_IMM;
        rt_defer_before(&core, &d, &v, NULL);
        assert_int_equal(d.n, imm);
    }
}

/* Appends an F32 MATMUL whose B is a 3 x 3 window (ISA_F_BWIN) over a patch of ch
 * channels of h x w at b: k = ch * 9, n = (h - 2) x (w - 2). */
static void mmwin(Prog *p, uint32_t a, uint32_t b, uint32_t c, uint32_t m, uint32_t ch,
                  uint32_t h, uint32_t w) {
    uint32_t k = ch * 9, n = (h - 2) * (w - 2);
    SpyMatmul x = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                   .flags = ISA_F_BWIN, .a = a, .b = b, .c = c, .m = m, .n = n, .k = k,
                   .lda = k, .ldc = n, .bw_kext = {ch, 3, 3},
                   .bw_ks = {(int32_t)(h * w), (int32_t)w, 1}, .bw_next = {h - 2, w - 2},
                   .bw_ns = {(int32_t)w, 1}};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].mm = x;
}

/* A window MATMUL (an implicit-GEMM convolution): its A read from a deferred LOAD's
 * DRAM, the LOADs under its window range and under C carried out first, a view
 * elsewhere kept for a later product; at 1, 20 and 100 rows of C. */
static void test_defer_window(void **state) {
    (void)state;
    Prog p;
    const uint32_t ms[] = {1, 20, 100};
    for (int i = 0; i < 3; i++) {
        uint32_t m = ms[i], ch = 4, h = 12, w = 16, k = ch * 9, n = (h - 2) * (w - 2);
        p.n = 0;
        dma(&p, false, 0, 0, 1, m * k < 600 ? 600 : m * k, 0, 1, 0, 1);    /* A, 1-d */
        dma(&p, false, 0x40000, 0x20000, ch * h, w, (int32_t)w + 4, 1, (int32_t)w, 1);
        dma(&p, false, 0x60000, 0x30000, 16, 160, 170, 1, 160, 1);     /* another view */
        dma(&p, false, 0x80000, 0x38000, m, n, (int32_t)n, 1, (int32_t)n, 1);  /* old C */
        mmwin(&p, 0, 0x40000, 0x80000, m, ch, h, w);
        p.in[p.n - 1].mm.flags |= ISA_F_ACCUM;
        mm(&p, 0, 0x60000, 0xc0000, 2, 160, 16, 16, 160, 160, false);
        dma(&p, true, 0x80000, OUT, m, n, (int32_t)n, 1, (int32_t)n, 1);
        dma(&p, true, 0xc0000, OUT + 0x40000, 2, 160, 160, 1, 160, 1);
        check(&p, 60 + (uint32_t)i);
    }
}

/* A window MATMUL whose B lies in a view of one row per channel (rt_defer_window), over
 * a LOAD of ch channels of h x w, DRAM rows farther apart than LX's: a 1 x 1 window at
 * stride 2 (a quarter of each row read) is read from DRAM, so the LOAD is never
 * carried out (its LX bytes keep check's fill); a 3 x 3 one (all of each row) from the
 * copy in LX. C is the bits of the copy's product either way. At 1, 16, 20 and 64 rows
 * of C (the channel-lane kernels take 16 and 64). */
static void test_defer_window_view(void **state) {
    (void)state;
    Prog p;
    const uint32_t ms[] = {1, 16, 20, 64};
    const uint32_t ch = 8, h = 8, w = 12, hw = h * w;   /* over RT_DEFER_MIN bytes */
    for (int i = 0; i < 4; i++)
        for (int stride2 = 0; stride2 < 2; stride2++) {
            uint32_t m = ms[i], k = stride2 ? ch : ch * 9;
            uint32_t n = stride2 ? (h / 2) * (w / 2) : (h - 2) * (w - 2);
            p.n = 0;
            dma(&p, false, 0, 0, 1, m * k < 600 ? 600 : m * k, 0, 1, 0, 1);  /* A, 1-d */
            dma(&p, false, 0x40000, 0x20000, ch, hw, (int32_t)hw + 12, 1, (int32_t)hw, 1);
            mmwin(&p, 0, 0x40000, 0x80000, m, ch, h, w);
            SpyMatmul *x = &p.in[p.n - 1].mm;
            if (stride2) {    /* 1 x 1 at stride 2: every other pixel of every other row */
                x->k = k, x->n = n, x->lda = k, x->ldc = n;
                x->bw_kext[1] = x->bw_kext[2] = 1;
                x->bw_next[0] = h / 2, x->bw_next[1] = w / 2;
                x->bw_ns[0] = (int32_t)(2 * w), x->bw_ns[1] = 2;
            }
            dma(&p, true, 0x80000, OUT, m, n, (int32_t)n, 1, (int32_t)n, 1);
            check(&p, 90 + (uint32_t)(2 * i + stride2));
            for (uint32_t c = 0; c < ch; c++)   /* stride 2: never copied; 3 x 3: copied */
                for (uint32_t b = 0; b < hw * 4; b++)
                    assert_int_equal(lx[0x40000 + c * hw * 4 + b],
                                     stride2 ? 0xff : dram[0x20000 + c * (hw + 12) * 4 + b]);
        }
}

/* Appends a 3-d LOAD (4-byte elements) of d0 x d1 x d2 with the given strides. */
static void dma3(Prog *p, uint32_t lxo, int64_t off, const uint32_t d[3], const int32_t ds[3],
                 const int32_t ls[3]) {
    dma(p, false, lxo, off, d[1], d[2], ds[1], ds[2], ls[1], ls[2]);
    SpyDma *x = &p->in[p->n - 1].dma;
    x->ndim = 3;
    x->dims[2] = x->dims[1], x->dims[1] = x->dims[0], x->dims[0] = d[0];
    x->dram_stride[2] = ds[2], x->dram_stride[1] = ds[1], x->dram_stride[0] = ds[0];
    x->lx_stride[2] = ls[2], x->lx_stride[1] = ls[1], x->lx_stride[0] = ls[0];
}

/* Appends a VFILL of n elements of dtype dt with value v. */
static void vfill(Prog *p, uint32_t dst, uint32_t n, int dt, uint32_t v) {
    SpyVFill f = {.opcode = ISA_VFILL, .dtype = (uint8_t)dt, .dst = dst, .n = n, .value = v};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].fill = f;
}

/* LOADs in pieces that continue each other in LX and in DRAM (joined into one view):
 * A in four 1-d pieces, B in two pieces of rows, read by one MATMUL; the same pieces
 * loaded last one first; a VEC over part of a joined view; a STORE over the DRAM source
 * of its second piece; pieces that continue in LX only (not joined). */
static void test_defer_joined(void **state) {
    (void)state;
    Prog p;
    for (int v = 0; v < 5; v++) {
        p.n = 0;
        for (int q = 0; q < 4; q++) {
            int i = v == 1 ? 3 - q : q;
            int64_t src = v == 4 ? 0x3000 * i : 0x800 * i;
            dma(&p, false, 0x800 * (uint32_t)i, src, 1, 512, 0, 1, 0, 1);
        }
        for (int q = 0; q < 2; q++) {
            int i = v == 1 ? 1 - q : q;
            dma(&p, false, 0x10000 + 64 * 40 * 4 * (uint32_t)i, 0x20000 + 64 * 50 * 4 * i, 64,
                40, 50, 1, 40, 1);
        }
        if (v == 2)
            vadd(&p, 0x800 + 4 * 100, 1, 600, 600);
        if (v == 3)
            dma(&p, true, 0x30000, 0x800 + 64, 1, 16, 0, 1, 0, 1);
        mm(&p, 0, 0x10000, 0x30000, 16, 40, 128, 128, 40, 40, false);
        dma(&p, true, 0x30000, OUT, 16, 40, 40, 1, 40, 1);
        check(&p, 70 + (uint32_t)v);
    }
}

/* LOADs over part of a pending view of rows (rt_defer.c cut_rows): a tile of A loaded
 * again in pieces over the one a product read (the next k block), the old rows still
 * read by a VEC and a product before the pieces reach them; a piece in the middle of a
 * view (the view split in two), a 1-d LOAD over whole rows with gaps between them,
 * and one over part of a row only (the view carried out). */
static void test_defer_cut(void **state) {
    (void)state;
    Prog p;
    for (int v = 0; v < 4; v++) {
        p.n = 0;
        for (uint32_t q = 0; q < 4; q++)     /* A: 32 x 64, pieces of 8 rows */
            dma(&p, false, 0x1000 + 8 * 64 * 4 * q, 0x1000 * q, 8, 64, 128, 1, 64, 1);
        dma(&p, false, 0x10000, 0x40000, 64, 48, 48, 1, 48, 1);      /* B */
        mm(&p, 0x1000, 0x10000, 0x30000, 32, 48, 64, 64, 48, 48, false);
        uint32_t row0 = v == 1 ? 12 : 0;                             /* 8 rows over row0.. */
        if (v == 2)       /* 1-d over rows 4..8 of a view with gaps (LX pitch 80) */
            dma(&p, false, 0x20000, 0x50000, 16, 64, 64, 1, 80, 1);
        if (v == 2)
            dma(&p, false, 0x20000 + 80 * 4 * 4, 0x60000, 1, 80 * 4, 0, 1, 0, 1);
        else if (v == 3)  /* part of a row only */
            dma(&p, false, 0x1000 + 64 * 4 * 9 + 32, 0x60000, 1, 600, 0, 1, 0, 1);
        else
            dma(&p, false, 0x1000 + 64 * 4 * row0, 0x20000, 8, 64, 64, 1, 64, 1);
        vadd(&p, 0x1000 + 64 * 4 * 24, 2, 64, 64);                   /* old rows 24..26 */
        mm(&p, 0x1000, 0x10000, 0x30000, 32, 48, 64, 64, 48, 48, true);
        if (v == 2)
            mm(&p, 0x20000, 0x10000, 0x38000, 16, 48, 64, 80, 48, 48, false);
        dma(&p, true, 0x30000, OUT, 32, 48, 48, 1, 48, 1);
        dma(&p, true, 0x38000, OUT + 0x8000, 16, 48, 48, 1, 48, 1);
        dma(&p, true, 0x1000, OUT + 0x10000, 1, 32 * 64, 0, 1, 0, 1);
        check(&p, 90 + (uint32_t)v);
    }
}

/* The plans of rt_prep.c: one-row LOADs continuing each other in LX and DRAM form one
 * run (not across a DRAM gap, a 2-d LOAD, nor a STORE); LOADs and STOREs of rows get
 * their row bytes and strides, strided or overlapping ones none. Then programs with such
 * runs, below and above RT_DEFER_MIN bytes, read by a VEC, a MATMUL (A over a merged
 * run), partly overwritten by a later LOAD, run as the copies would. */
static void test_prep_merged(void **state) {
    (void)state;
    Prog p = {.n = 0};
    for (uint32_t q = 0; q < 3; q++)               /* 0..2: one run of 3 x 512 B */
        dma(&p, false, 0x200 * q, 0x1000 + 0x200 * q, 1, 128, 0, 1, 0, 1);
    dma(&p, false, 0x600, 0x1700, 1, 128, 0, 1, 0, 1);   /* 3: DRAM gap: a new run */
    dma(&p, false, 0x800, 0x1900, 1, 128, 0, 1, 0, 1);   /* 4: continues 3 */
    dma(&p, false, 0xa00, 0x1b00, 4, 32, 64, 1, 32, 1);  /* 5: rows of 128 B */
    dma(&p, false, 0xc00, 0x1d00, 4, 32, 64, 2, 32, 1);  /* 6: strided elements */
    dma(&p, false, 0xe00, 0x1f00, 4, 32, 64, 1, 16, 1);  /* 7: LX rows overlap */
    dma(&p, true, 0xa00, OUT, 4, 32, 48, 1, 32, 1);      /* 8: STORE of rows */
    RtPrep pl[MAXP];
    rt_prep_code(p.in, p.n, pl);
    assert_int_equal(pl[0].how, RT_PH_ROWS);
    assert_int_equal(pl[0].run, 3);
    assert_int_equal(pl[0].merged, 3 * 512);
    assert_int_equal(pl[1].run, 2);
    assert_int_equal(pl[3].run, 2);
    assert_int_equal(pl[3].merged, 2 * 512);
    assert_int_equal(pl[4].run, 1);
    assert_int_equal(pl[5].how, RT_PH_ROWS);
    assert_int_equal(pl[5].rows, 4);
    assert_int_equal(pl[5].rowb, 128);
    assert_int_equal(pl[5].drs, 256);
    assert_int_equal(pl[5].lrs, 128);
    assert_int_equal(pl[6].how, RT_PH_NONE);
    assert_int_equal(pl[7].how, RT_PH_NONE);
    assert_int_equal(pl[8].how, RT_PH_ROWS);
    assert_int_equal(pl[8].drs, 192);
    check(&p, 90);
    for (int v = 0; v < 3; v++) {
        p.n = 0;
        uint32_t pieces = v == 0 ? 3 : 8;        /* 1.5 KB: copied; 4 KB: a view */
        for (uint32_t q = 0; q < pieces; q++)
            dma(&p, false, 0x200 * q, 0x4000 + 0x200 * q, 1, 128, 0, 1, 0, 1);
        dma(&p, false, 0x10000, 0x20000, 128, 40, 50, 1, 40, 1);
        if (v == 2)                              /* partly over the merged run */
            dma(&p, false, 0x300, 0x9000, 1, 64, 0, 1, 0, 1);
        if (v == 0)
            vadd(&p, 0x100, 1, 200, 200);
        mm(&p, 0, 0x10000, 0x30000, pieces / 4 ? pieces / 4 : 1, 40, 128, 128, 40, 40,
           false);
        dma(&p, true, 0x30000, OUT, 2, 40, 40, 1, 40, 1);
        dma(&p, true, 0, OUT + 0x1000, 1, 128 * pieces, 0, 1, 0, 1);
        check(&p, 91 + (uint32_t)v);
    }
}

/* A view made from a LOAD's plan (rt_defer_rows: a merged run of one-row LOADs, or a
 * LOAD of rows) keeps the DRAM segment it reads, which a MATMUL operand over it reports
 * (RtOperand.seg): the kernels tell a weight (segment 0, the constants) from an
 * activation by it (rt_kern_mmc.h plain_chan). */
static void test_defer_rows_seg(void **state) {
    (void)state;
    uint8_t *two[2] = {dram, dram0};
    RtCore c = core;
    c.seg = two;
    for (int v = 0; v < 2; v++) {
        Prog p = {.n = 0};
        if (v == 0)                              /* 8 one-row LOADs: one merged run */
            for (uint32_t q = 0; q < 8; q++)
                dma(&p, false, 0x200 * q, 0x4000 + 0x200 * q, 1, 128, 0, 1, 0, 1);
        else                                     /* a LOAD of 8 rows */
            dma(&p, false, 0, 0x4000, 8, 128, 256, 1, 128, 1);
        for (uint32_t i = 0; i < p.n; i++)
            p.in[i].dma.seg = 1;
        RtPrep pl[MAXP];
        rt_prep_code(p.in, p.n, pl);
        assert_int_equal(pl[0].how, RT_PH_ROWS);
        RtDefer d = {.n = 0};
        rt_defer_rows(&c, &d, &p.in[0].dma, &pl[0]);
        assert_int_equal(d.n, 1);
        RtOperand o = rt_defer_operand(&c, &d, 0, 8, 128, 128, 4, false, true);
        assert_int_equal(o.seg, 1);
        assert_ptr_equal(o.p, dram0 + 0x4000);
    }
}

/* Appends an F32 VEC fn over rows x cols: dst = fn(x, y), y the immediate 1.0 when
 * y is UINT32_MAX (row strides rs elements everywhere). */
static void vbin(Prog *p, uint16_t fn, uint32_t dst, uint32_t x, uint32_t y, uint32_t rows,
                 uint32_t cols, int32_t rs) {
    bool imm = y == UINT32_MAX;
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .fn = fn, .nsrc = 2,
                .flags = imm ? ISA_F_IMM : 0, .dst = dst, .src = {x, imm ? 0 : y},
                .rows = rows, .cols = cols, .dst_rs = rs, .src_rs = {rs, imm ? 0 : rs},
                .src_cs = {1, imm ? 0 : 1}, .imm = 0x3f800000u};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].vec = v;
}

/* A chain of VECs with a STORE (rt_fuse.c) over LOADs left pending as views: the
 * input and a residual read from their DRAM (rows of a wider matrix, and one
 * contiguous run); the STORE writing over the residual's DRAM one row on (its view
 * carried out first); a result kept in LX for a later STORE (the view under it carried
 * out); the chain in place on the residual's region; a residual whose view holds only
 * half of each row (carried out, read in LX). Every byte of DRAM as with the
 * instructions one by one. */
static void test_defer_chain(void **state) {
    (void)state;
    const uint32_t rows = 64, cols = 80, X = 0x10000, R = 0x30000, O = 0x50000;
    for (int v = 0; v < 5; v++) {
        Prog p = {.n = 0};
        int32_t w = (int32_t)cols;
        dma(&p, false, X, 0x4000, rows, cols, w + 16, 1, w, 1);          /* rows, wider */
        if (v == 4) {                                                    /* half rows */
            dma(&p, false, R, 0x40000, rows, cols / 2, w, 1, w, 1);
            dma(&p, false, R + 2 * cols, 0x48000, rows, cols / 2, w, 1, w, 1);
        } else {
            dma(&p, false, R, 0x40000, 1, rows * cols, 0, 1, 0, 1);      /* contiguous */
        }
        uint32_t d = v == 3 ? R : O, y = v == 3 ? X : R, x0 = v == 3 ? R : X;
        vbin(&p, ISA_VF_ADD, d, x0, UINT32_MAX, rows, cols, w);
        vbin(&p, ISA_VF_MUL, d, d, y, rows, cols, w);
        vbin(&p, ISA_VF_ADD, d, d, R + (v == 3 ? 0 : 0), rows, cols, w);
        int64_t out = v == 1 ? 0x40000 + 4 * (int64_t)cols : OUT;       /* over R's DRAM */
        dma(&p, true, d, out, rows, cols, w, 1, w, 1);
        if (v == 2)                                                      /* d read again */
            dma(&p, true, d, OUT + 0x10000, 1, rows * cols, 0, 1, 0, 1);
        RtPrep pl[MAXP];
        rt_prep_code(p.in, p.n, pl);
        uint32_t first = v == 4 ? 3 : 2;
        assert_int_equal(pl[first].how, RT_PH_FUSE);
        check(&p, 120 + (uint32_t)v);
    }
}

/* Appends an F32 VEC fn over rows x cols: dst = fn(x, y), y a scalar per row at y
 * (one float a row, ys floats apart), x and dst rows rs elements apart. */
static void vrow(Prog *p, uint16_t fn, uint32_t dst, uint32_t x, uint32_t y, int32_t ys,
                 uint32_t rows, uint32_t cols, int32_t rs) {
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .fn = fn, .nsrc = 2, .dst = dst,
                .src = {x, y}, .rows = rows, .cols = cols, .dst_rs = rs, .src_rs = {rs, ys},
                .src_cs = {1, 0}};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].vec = v;
}

/* Appends an F32 RELU in place over rows x cols at x (rows rs elements apart). */
static void vrelu(Prog *p, uint32_t x, uint32_t rows, uint32_t cols, int32_t rs) {
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .fn = ISA_VF_RELU, .nsrc = 1, .dst = x,
                .src = {x}, .rows = rows, .cols = cols, .dst_rs = rs, .src_rs = {rs},
                .src_cs = {1}};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].vec = v;
}

/* The products of the epilogue tests: m x n x k, a 3 x 3 window over ch channels of
 * h x w when ch (n then (h - 2) x (w - 2)), picked so that each F32 kernel runs one: the
 * packed blocks (m >= 96), B in place in k blocks (k > 256), the channel-lane kernels
 * (16 or 32 rows, plain and window; 64 rows: two groups), the narrow and one-row
 * products, the pixel-lane window kernels. */
typedef struct {
    uint32_t m, n, k, ch, h, w;
} EpiShape;
static const EpiShape epi_shapes[] = {
    {100, 70, 40, 0, 0, 0}, {40, 120, 300, 0, 0, 0}, {16, 49, 64, 0, 0, 0},
    {32, 200, 300, 0, 0, 0}, {24, 3, 40, 0, 0, 0},  {1, 70, 40, 0, 0, 0},
    {16, 0, 0, 8, 9, 11},   {16, 0, 0, 4, 20, 20},  {100, 0, 0, 4, 12, 16},
    {5, 0, 0, 4, 6, 30},    {64, 100, 256, 0, 0, 0}, {64, 0, 0, 4, 12, 16},
};
#define EPI_A 0x0            /* LX of A (its DRAM at 0) */
#define EPI_B 0x40000        /* LX of B (its DRAM at 0x20000, rows 8 floats wider) */
#define EPI_C 0x90000        /* LX of C */
#define EPI_S 0xd0000        /* LX of the scalars (DRAM 0x70000) and residual (0x78000) */

/* The start of an epilogue test's program for shape e (LOADs of A and B, the MATMUL);
 * its n and k. */
static void epi_product(Prog *p, const EpiShape *e, uint32_t *n, uint32_t *k) {
    p->n = 0;
    *k = e->ch ? e->ch * 9 : e->k;
    *n = e->ch ? (e->h - 2) * (e->w - 2) : e->n;
    dma(p, false, EPI_A, 0, e->m, *k, (int32_t)*k, 1, (int32_t)*k, 1);
    if (e->ch) {
        dma(p, false, EPI_B, 0x20000, e->ch * e->h, e->w, (int32_t)e->w + 8, 1, (int32_t)e->w,
            1);
        mmwin(p, EPI_A, EPI_B, EPI_C, e->m, e->ch, e->h, e->w);
    } else {
        dma(p, false, EPI_B, 0x20000, *k, *n, (int32_t)*n + 8, 1, (int32_t)*n, 1);
        mm(p, EPI_A, EPI_B, EPI_C, e->m, *n, *k, *k, *n, *n, false);
    }
}

/* The start of an epilogue test's program for shape s of epi_shapes (epi_product):
 * the shape, its n and k, and the MATMUL's index. */
static const EpiShape *epi_start(Prog *p, size_t s, uint32_t *n, uint32_t *k, uint32_t *mi) {
    epi_product(p, &epi_shapes[s], n, k);
    *mi = p->n - 1;
    return &epi_shapes[s];
}

/* A MATMUL whose C the STORE right after it stores (rt_prep.c RT_PH_EPI, kinds 0): C
 * written straight to the STORE's DRAM, for a product of every F32 kernel, rows apart
 * and (C contiguous) as one row; not when C accumulates over an older C (ACCUM) or an
 * instruction after the STORE reads C in LX. Every byte of DRAM as with the
 * instructions one by one. */
static void test_epi_store(void **state) {
    (void)state;
    for (size_t s = 0; s < sizeof epi_shapes / sizeof epi_shapes[0]; s++)
        for (int v = 0; v < 4; v++) {
            const EpiShape *e = &epi_shapes[s];
            Prog p;
            uint32_t n, k;
            epi_product(&p, e, &n, &k);
            uint32_t mi = p.n - 1;
            if (v == 2)
                p.in[mi].mm.flags |= ISA_F_ACCUM;
            if (v == 1)      /* one row of m * n floats */
                dma(&p, true, EPI_C, OUT, 1, e->m * n, 0, 1, 0, 1);
            else
                dma(&p, true, EPI_C, OUT, e->m, n, (int32_t)n + 3, 1, (int32_t)n, 1);
            if (v == 3) {    /* C read again in LX */
                vadd(&p, EPI_C, e->m, n, (int32_t)n);
                dma(&p, true, EPI_C, OUT + 0x20000, e->m, n, (int32_t)n, 1, (int32_t)n, 1);
            }
            RtPrep pl[MAXP];
            rt_prep_code(p.in, p.n, pl);
            assert_int_equal(pl[mi].how == RT_PH_EPI, v < 2);
            check(&p, 200 + (uint32_t)(s * 4 + (size_t)v));
        }
}

/* A MATMUL, LOADs of a bias (a scalar per row) and a residual, and a chain that adds
 * them to C, takes the MAX with 0 or a RELU, and STOREs (RT_PH_EPI, kinds 1): C to the
 * STORE's DRAM and the chain run there on each final tile, for a product of every F32
 * kernel, a C under rt_fuse_prep's minimum too (rt_prep.c prep_mm_epi); the residual a pending LOAD (read from its DRAM) or already in LX; the chain
 * in place on C or into another region. Not when a LOAD between them writes over B, a
 * chain's row operand is C itself, or C is read after the chain. Every byte of DRAM as
 * with the instructions one by one. */
static void test_epi_chain(void **state) {
    (void)state;
    for (size_t s = 0; s < sizeof epi_shapes / sizeof epi_shapes[0]; s++)
        for (int v = 0; v < 6; v++) {
            Prog p;
            uint32_t n, k, mi, r = EPI_S + 0x1000;
            const EpiShape *e = epi_start(&p, s, &n, &k, &mi);
            uint32_t rs = n;
            if (v == 3)      /* over B: the LOAD must come after the product */
                dma(&p, false, EPI_B, 0x70000, 1, 64, 0, 1, 0, 1);
            dma(&p, false, EPI_S, 0x70000, 1, e->m, 0, 1, 0, 1);
            dma(&p, false, r, 0x78000, e->m, n, (int32_t)n + 5, 1, (int32_t)n, 1);
            uint32_t d = v == 2 ? EPI_S + 0x20000 : EPI_C;
            vrow(&p, ISA_VF_ADD, d, EPI_C, EPI_S, 1, e->m, n, (int32_t)rs);
            vbin(&p, ISA_VF_ADD, d, d, v == 4 ? EPI_C : r, e->m, n, (int32_t)rs);
            if (v == 1)
                vrelu(&p, d, e->m, n, (int32_t)rs);
            else
                vbin(&p, ISA_VF_MAX, d, d, UINT32_MAX, e->m, n, (int32_t)rs);
            dma(&p, true, d, OUT, e->m, n, (int32_t)n + 3, 1, (int32_t)n, 1);
            if (v == 5)      /* C read again in LX */
                dma(&p, true, EPI_C, OUT + 0x20000, e->m, n, (int32_t)n, 1, (int32_t)n, 1);
            RtPrep pl[MAXP];
            rt_prep_code(p.in, p.n, pl);
            assert_int_equal(pl[mi].how == RT_PH_EPI, v < 3);   /* C of any size */
            check(&p, 300 + (uint32_t)(s * 6 + (size_t)v));
        }
}

/* Appends an F32 VEC fn over rows x cols into dst (rows rs elements apart): operand q
 * at src[q] with row stride srs[q] and column stride scs[q] (elements), the immediate
 * 1.0 for operand 0 (ISA_F_IMM_A) or 1 (ISA_F_IMM) as flags say; nsrc operands. */
static void vgen(Prog *p, uint16_t fn, uint32_t dst, uint32_t rows, uint32_t cols, int32_t rs,
                 uint8_t nsrc, uint8_t flags, const uint32_t src[2], const int32_t srs[2],
                 const int32_t scs[2]) {
    SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .fn = fn, .nsrc = nsrc,
                .flags = flags, .dst = dst, .src = {src[0], src[1]}, .rows = rows,
                .cols = cols, .dst_rs = rs, .src_rs = {srs[0], srs[1]},
                .src_cs = {scs[0], scs[1]}, .imm = 0x3f800000u};
    memset(&p->in[p->n], 0, sizeof p->in[p->n]);
    p->in[p->n++].vec = v;
}

/* The epilogue chains of test_epi_post, a VEC each: the function, the chain value's
 * operand (0 or 1; the other one's kind: 'c' the chain value, 's' the scalar per row,
 * 'r' the residual's row, 'i' the immediate, '-' none). */
typedef struct {
    uint16_t fn;
    char a, b;
} EpiStep;
static const EpiStep epi_chains[][4] = {
    /* all with a register form: bias, residual (its NaNs), max(x, 1), RELU */
    {{ISA_VF_ADD, 'c', 's'}, {ISA_VF_ADD, 'c', 'r'}, {ISA_VF_MAX, 'c', 'i'},
     {ISA_VF_RELU, 'c', '-'}},
    /* register forms, the chain value second in two: x * residual, residual + x,
     * max(1, x), min(x, 1) (a chain's input is the first VEC's first operand) */
    {{ISA_VF_MUL, 'c', 'r'}, {ISA_VF_ADD, 'r', 'c'}, {ISA_VF_MAX, 'i', 'c'},
     {ISA_VF_MIN, 'c', 'i'}},
    /* a bias, then operations through the L1 cache: ABS, residual - x, NEG */
    {{ISA_VF_ADD, 's', 'c'}, {ISA_VF_ABS, 'c', '-'}, {ISA_VF_SUB, 'r', 'c'},
     {ISA_VF_NEG, 'c', '-'}},
    /* none in registers: x / scalar, then + 1 */
    {{ISA_VF_DIV, 'c', 's'}, {ISA_VF_ADD, 'c', 'i'}, {0, 0, 0}, {0, 0, 0}},
    /* x * residual (a -0 where it is -0 and x > 0), RELU (keeps -0 and NaN), scalar *
     * x (the sign of a 0 kept) */
    {{ISA_VF_MUL, 'c', 'r'}, {ISA_VF_RELU, 'c', '-'}, {ISA_VF_MUL, 's', 'c'}, {0, 0, 0}},
    /* the same through the L1 cache: min(x, residual) (-0 where it is -0), RELU,
     * scalar * x */
    {{ISA_VF_MIN, 'c', 'r'}, {ISA_VF_RELU, 'c', '-'}, {ISA_VF_MUL, 's', 'c'}, {0, 0, 0}},
};

/* A MATMUL and an epilogue chain of each kind of operation (epi_chains) that its
 * vector kernels run on each tile as they store it (RtEpi.post, rt_kern_mmp.h: in
 * registers, or through the L1 cache from the first operation without a register
 * form), with the chain value as either operand, over the residual's NaNs and -0s,
 * for a product of every F32 kernel (the kernels without the post form run the chain
 * as before). Every byte of DRAM as with the instructions one by one. */
static void test_epi_post(void **state) {
    (void)state;
    fill_nan_lo = 0x78000, fill_nan_hi = 0x80000;
    for (size_t s = 0; s < sizeof epi_shapes / sizeof epi_shapes[0]; s++)
        for (size_t ch = 0; ch < sizeof epi_chains / sizeof epi_chains[0]; ch++) {
            Prog p;
            uint32_t n, k, mi, r = EPI_S + 0x1000;
            const EpiShape *e = epi_start(&p, s, &n, &k, &mi);
            int32_t w = (int32_t)n;
            dma(&p, false, EPI_S, 0x70000, 1, e->m, 0, 1, 0, 1);
            dma(&p, false, r, 0x78000, e->m, n, w + 5, 1, w, 1);
            for (int q = 0; q < 4 && epi_chains[ch][q].fn; q++) {
                const EpiStep *t = &epi_chains[ch][q];
                char kinds[2] = {t->a, t->b};
                uint32_t src[2] = {0, 0};
                int32_t srs[2] = {0, 0}, scs[2] = {0, 0};
                uint8_t flags = 0;
                for (int o = 0; o < 2; o++) {
                    if (kinds[o] == 'c' || kinds[o] == 'r')
                        src[o] = kinds[o] == 'c' ? EPI_C : r, srs[o] = w, scs[o] = 1;
                    else if (kinds[o] == 's')
                        src[o] = EPI_S, srs[o] = 1;
                    else if (kinds[o] == 'i')
                        flags |= o ? ISA_F_IMM : ISA_F_IMM_A;
                }
                vgen(&p, t->fn, EPI_C, e->m, n, w, t->b == '-' ? 1 : 2, flags, src, srs, scs);
            }
            dma(&p, true, EPI_C, OUT, e->m, n, w + 3, 1, w, 1);
            RtPrep pl[MAXP];
            rt_prep_code(p.in, p.n, pl);
            assert_int_equal(pl[mi].how, RT_PH_EPI);   /* C of any size */
            check(&p, 400 + (uint32_t)(s * 8 + ch));
        }
    fill_nan_lo = fill_nan_hi = 0;
}

/* A MATMUL whose chain comes after a VEC that does not read C (RT_PH_EPI with VECs
 * run before the MATMUL, rt_prep.c runs_before): a downsampling block's epilogue adds
 * the other branch's bias to its result (a pending LOAD), then the chain adds C's bias
 * and that result to C, RELU, STORE. The VEC before the chain may not write A or B
 * (v 1: over B), read C (v 2: C added before its bias; no RT_PH_EPI), nor be a chain
 * with a STORE (v 3: its STORE before the product would reorder it with the LOADs of A
 * and B). Every byte of DRAM as with the instructions one by one, for a product of
 * every F32 kernel. */
static void test_epi_pre_vec(void **state) {
    (void)state;
    for (size_t s = 0; s < sizeof epi_shapes / sizeof epi_shapes[0]; s++)
        for (int v = 0; v < 4; v++) {
            Prog p;
            uint32_t n, k, mi, r = EPI_S + 0x1000;
            const EpiShape *e = epi_start(&p, s, &n, &k, &mi);
            int32_t w = (int32_t)n;
            dma(&p, false, r, 0x78000, e->m, n, w + 5, 1, w, 1);      /* the other branch */
            dma(&p, false, EPI_S, 0x70000, 1, e->m, 0, 1, 0, 1);     /* its bias */
            dma(&p, false, EPI_S + 0x800, 0x70800, 1, e->m, 0, 1, 0, 1);  /* C's bias */
            uint32_t pre = v == 1 ? EPI_B : r;
            if (v == 2)
                vbin(&p, ISA_VF_ADD, r, r, EPI_C, e->m, n, w);
            else
                vrow(&p, ISA_VF_ADD, pre, pre, EPI_S, 1, e->m, n, w);
            if (v == 3)
                dma(&p, true, r, OUT + 0x20000, e->m, n, w, 1, w, 1);
            vrow(&p, ISA_VF_ADD, EPI_C, EPI_C, EPI_S + 0x800, 1, e->m, n, w);
            vbin(&p, ISA_VF_ADD, r, r, EPI_C, e->m, n, w);
            vrelu(&p, r, e->m, n, w);
            dma(&p, true, r, OUT, e->m, n, w + 3, 1, w, 1);
            RtPrep pl[MAXP];
            rt_prep_code(p.in, p.n, pl);
            assert_int_equal(pl[mi].how == RT_PH_EPI, v == 0 && e->m * n * 4 >= 16384);
            check(&p, 500 + (uint32_t)(s * 4 + (size_t)v));
        }
}

/* A VFILL of a patch whose interior LOADs after it rewrite (a convolution's padding),
 * then a window MATMUL over it and a STORE of the whole patch: every byte the same as
 * with the full fill. Also fills the gaps do not apply to: a non-zero value, LOADs out
 * of address order, a LOAD reaching past the fill, a LOAD whose rows overlap. */
static void test_fill_gaps(void **state) {
    (void)state;
    Prog p;
    const uint32_t ch = 8, h = 12, w = 16, pb = 0x40000, plane = h * w;
    for (int v = 0; v < 6; v++) {
        p.n = 0;
        dma(&p, false, 0, 0, 1, 600, 0, 1, 0, 1);                          /* A */
        vfill(&p, pb, ch * plane, ISA_DT_F32, v == 1 ? 0x3f800000u : 0);
        for (uint32_t q = 0; q < 2; q++) {
            uint32_t c0 = v == 2 ? 4 - 4 * q : 4 * q;       /* v 2: second piece first */
            uint32_t d[3] = {4, h - 2, w - 2 - (v == 5 && q)};
            int32_t ds[3] = {200, 16, 1}, ls[3] = {(int32_t)plane, (int32_t)w, 1};
            if (v == 4 && q)
                ls[1] = (int32_t)(w - 4);                    /* rows overlap */
            uint32_t at = pb + 4 * (c0 * plane + w + 1) + (v == 3 && q ? 4 * plane : 0);
            dma3(&p, at, 0x10000 + 4 * 200 * c0, d, ds, ls);
        }
        if (v == 3)
            p.in[p.n - 1].dma.dims[0] = 5;                   /* past the fill's end */
        mmwin(&p, 0, pb, 0x80000, 8, ch, h, w);
        dma(&p, true, 0x80000, OUT, 8, (h - 2) * (w - 2), (h - 2) * (w - 2), 1,
            (h - 2) * (w - 2), 1);
        dma(&p, true, pb, OUT + 0x8000, 1, (ch + 3) * plane, 0, 1, 0, 1);
        check(&p, 80 + (uint32_t)v);
    }
}

/* A pad's tile (rt_defer_store.c, defer_planes of rt_defer.c): VFILL of ch planes of
 * (h + 1) x (w + 1), a LOAD of ch planes of h x w rows into it at its row pitch, a
 * STORE of the whole tile. With ch up to RT_MAX_VIEWS the LOAD stays a view per plane
 * and the STORE copies the interior from DRAM, the border from LX: LX's interior is
 * never written (still 0xff). Variants: more planes than view slots (copied), the
 * STORE in runs of rows at another pitch, a VEC over part of the interior first (that
 * plane carried out), the STORE over the LOAD's own DRAM source (carried out first),
 * and a STORE of part of a one-row view (from DRAM alone). */
static void test_defer_store(void **state) {
    (void)state;
    Prog p;
    const uint32_t h = 30, w = 40, pitch = w + 1, plane = (h + 1) * pitch, tile = 0x10000;
    for (int v = 0; v < 6; v++) {
        uint32_t ch = v == 1 ? RT_MAX_VIEWS + 2 : 2;
        uint32_t d[3] = {ch, h, w};
        int32_t ds[3] = {(int32_t)(h * w + 7), (int32_t)w, 1};
        int32_t ls[3] = {(int32_t)plane, (int32_t)pitch, 1};
        int64_t out = v == 4 ? 0x40000 + 4 * 100 : OUT;     /* v 4: over the source */
        p.n = 0;
        vfill(&p, tile, ch * plane, ISA_DT_F32, 0xff800000u);  /* -inf */
        dma3(&p, tile + 4 * (pitch + 1), 0x40000, d, ds, ls);
        if (v == 3)
            vadd(&p, tile + 4 * (plane + 5 * pitch + 1), 3, w, (int32_t)pitch);
        if (v == 2)                  /* runs of pitch elements, DRAM rows w + 3 apart */
            dma(&p, true, tile, out, ch * (h + 1), pitch, (int32_t)(w + 3), 1,
                (int32_t)pitch, 1);
        else
            dma(&p, true, tile, out, 1, ch * plane, 0, 1, 0, 1);
        check(&p, 90 + (uint32_t)v);
        if (v == 0) {                /* the interior of plane 1 not copied into LX */
            uint8_t ff[4 * 40];
            memset(ff, 0xff, sizeof ff);
            assert_memory_equal(lx + tile + 4 * (plane + 7 * pitch + 1), ff, 4 * w);
        }
    }
    p.n = 0;                         /* a one-row view, part of it stored */
    dma(&p, false, 0x20000, 0x40000, 1, 5000, 0, 1, 0, 1);
    dma(&p, true, 0x20000 + 400, OUT, 3, 1000, 1200, 1, 1100, 1);
    check(&p, 96);
}

/* Appends a pooling run of function fn over a kh x kw window: rows x cols results at
 * dst from the taps at src (row stride sr * pitch, column stride cs, element by element
 * as spyrec's codegen/cg_reduce.c writes them: the first VEC of two taps, each next
 * one of the results so far and one more tap). */
static void pool_run(Prog *p, int fn, uint32_t dst, uint32_t src, uint32_t rows, uint32_t cols,
                     uint32_t pitch, uint32_t sr, uint32_t cs, uint32_t kh, uint32_t kw) {
    for (uint32_t t = 1; t < kh * kw; t++) {
        SpyVec v = {.opcode = ISA_VEC, .dtype = ISA_DT_F32, .fn = (uint8_t)fn, .nsrc = 2,
                    .dst = dst, .rows = rows, .cols = cols, .dst_rs = (int32_t)cols,
                    .src = {dst, src + 4 * ((t / kw) * pitch + t % kw)},
                    .src_rs = {(int32_t)cols, (int32_t)(sr * pitch)}, .src_cs = {1, (int32_t)cs}};
        if (t == 1)
            v.src[0] = src, v.src_rs[0] = (int32_t)(sr * pitch), v.src_cs[0] = (int32_t)cs;
        memset(&p->in[p->n], 0, sizeof p->in[p->n]);
        p->in[p->n++].vec = v;
    }
}

/* A max (min) pool of a padded tile (rt_kern_vpool.c pool_border): a VFILL of ch planes
 * of -inf (+inf), a LOAD of ch planes of h x w into their interior (a view per plane),
 * then a 3 x 3 pool of each plane, stored. On AVX-512 hosts the taps are read in
 * place from the LOAD's DRAM inside the border's value: LX's interior is never written
 * (still 0xff). Variants: stride 2 with a border at the top and left only (resnet50's), MIN, a
 * border element changed first by a VFILL (two values: the plane is carried out, the
 * pool read in LX), NaNs among the taps (the pool then runs tap by tap), stride 1
 * with a border on every side, more planes than view slots (copied). */
static void test_pool_border(void **state) {
    (void)state;
    const uint32_t h = 30, w = 30, tile = 0x10000, outl = 0x40000;
    for (int v = 0; v < 6; v++) {
        uint32_t ch = v == 5 ? RT_MAX_VIEWS + 1 : 2, st = v == 4 ? 1 : 2;
        uint32_t pad = v == 4 ? 2 : 1, pitch = w + pad, prow = h + pad;  /* padded */
        uint32_t plane = prow * pitch, oh = (prow - 3) / st + 1, ow = (pitch - 3) / st + 1;
        uint32_t d[3] = {ch, h, w};
        int32_t ds[3] = {(int32_t)(h * w + 7), (int32_t)w, 1};
        int32_t ls[3] = {(int32_t)plane, (int32_t)pitch, 1};
        int fn = v == 1 ? ISA_VF_MIN : ISA_VF_MAX;
        fill_nan_lo = 0x20000, fill_nan_hi = v == 3 ? 0x20000 + 4 * h * w : 0;
        Prog p = {.n = 0};
        vfill(&p, tile, ch * plane, ISA_DT_F32, fn == ISA_VF_MIN ? 0x7f800000u : 0xff800000u);
        dma3(&p, tile + 4 * (pitch + 1), 0x20000, d, ds, ls);
        if (v == 2)                  /* one border element of plane 0 made 1.0 */
            vfill(&p, tile + 4 * 9 * pitch, 1, ISA_DT_F32, 0x3f800000u);
        for (uint32_t q = 0; q < (ch < 3 ? ch : 3); q++)
            pool_run(&p, fn, outl + 4 * q * oh * ow, tile + 4 * q * plane, oh, ow, pitch, st,
                     st, 3, 3);
        dma(&p, true, outl, OUT, 1, 3 * oh * ow, 0, 1, 0, 1);
        check(&p, 100 + (uint32_t)v);
        uint8_t ff[4 * 30];
        memset(ff, 0xff, sizeof ff);
        /* the taps are read in place by the AVX-512 pool kernels (rt_kern_vpool512.c);
           on other hosts the views are carried out into LX first (the same results,
           which check compared) */
        bool inplace = rt_host_has(RT_HOST_AVX512);
        if (inplace && v != 5)       /* plane 1's interior not copied into LX */
            assert_memory_equal(lx + tile + 4 * (plane + 7 * pitch + 1), ff, 4 * w);
        if (inplace && v == 0)       /* nor plane 0's */
            assert_memory_equal(lx + tile + 4 * (7 * pitch + 1), ff, 4 * w);
        if (v == 2 || v == 3)        /* plane 0 carried out: two border values, NaNs */
            assert_memory_not_equal(lx + tile + 4 * (7 * pitch + 1), ff, 4 * w);
    }
    fill_nan_hi = 0;
}

/* A B given transposed (RtMmSrc.bt) through each F32 kernel this host runs: the same
 * bits as the scalar reference (increasing k, one fused multiply-add each), from 0 or
 * accumulating onto C (odd shapes): row counts 1 to 4 (the streamed product) and
 * more, columns and k at, under and past whole vectors of 8 and 16. */
static void test_kernels_bt(void **state) {
    (void)state;
    const uint32_t shapes[][3] = {{1, 45, 600}, {3, 16, 7},   {4, 33, 513}, {2, 8, 0},
                                  {100, 45, 300}, {8, 70, 130}, {1, 1, 1},  {1, 16, 16},
                                  {2, 17, 15},  {1, 64, 256}, {3, 31, 33},  {4, 7, 9},
                                  {1, 40, 8},   {2, 24, 40},
                                  /* at most 4 columns, a vector of rows or more: the
                                     transposed product (rt_kern_mmn.h), C contiguous
                                     at one column */
                                  {40, 4, 320}, {9, 1, 17},   {16, 3, 100}, {33, 2, 9},
                                  {8, 1, 8}};
    for (int sh = 0; sh < (int)(sizeof shapes / sizeof shapes[0]); sh++) {
        uint32_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2], ldt = k + 5;
        bool acc = sh % 2;
        fill(50 + (uint32_t)sh);
        float *a = (float *)dram0, *bt = a + 65536, *c0 = bt + 65536, *want = (float *)lx;
        for (uint32_t i = 0; i < m; i++)
            for (uint32_t j = 0; j < n; j++) {
                volatile float s = acc ? c0[i * n + j] : 0.0f;
                for (uint32_t q = 0; q < k; q++)
                    s = fmaf(a[i * k + q], bt[j * ldt + q], s);
                want[i * n + j] = s;
            }
        SpyMatmul x = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                       .flags = acc ? ISA_F_ACCUM : 0, .c = 0x10000, .m = m, .n = n, .k = k,
                       .lda = k, .ldb = n, .ldc = n};
        RtMmSrc src = {(const uint8_t *)a, (const uint8_t *)bt, k, ldt, true, true, false, false, false, NULL, 0};
        for (int kind = 0; kind < 3; kind++) {
            if (acc)
                memcpy(lx + x.c, c0, 4 * m * n);
            else
                memset(lx + x.c, 0xff, 4 * m * n);
            bool ran = true;
            if (kind == 2)
                rt_mm_portable(&core, &x, &src);
#if RT_HAVE_X86_KERNELS
            else
                ran = kind == 0 ? rt_mm_f32_512(&core, &x, &src) : rt_mm_f32_256(&core, &x, &src);
#else
            else
                ran = false;
#endif
            if (ran)
                assert_memory_equal(lx + x.c, want, 4 * m * n);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defer_matmul_rows),
        cmocka_unit_test(test_defer_matmul_transposed),
        cmocka_unit_test(test_defer_join_transposed),
        cmocka_unit_test(test_defer_flushes),
        cmocka_unit_test(test_defer_immediate),
        cmocka_unit_test(test_defer_window),
        cmocka_unit_test(test_defer_window_view),
        cmocka_unit_test(test_defer_joined),
        cmocka_unit_test(test_defer_cut),
        cmocka_unit_test(test_prep_merged),
        cmocka_unit_test(test_defer_rows_seg),
        cmocka_unit_test(test_defer_chain),
        cmocka_unit_test(test_epi_store),
        cmocka_unit_test(test_epi_chain),
        cmocka_unit_test(test_epi_post),
        cmocka_unit_test(test_epi_pre_vec),
        cmocka_unit_test(test_fill_gaps),
        cmocka_unit_test(test_defer_store),
        cmocka_unit_test(test_pool_border),
        cmocka_unit_test(test_kernels_bt),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
