/* test_rt_fuse.c: unit tests of the fused VEC chains (runtime/rt_fuse.c): random chains
 * of F32 VECs over one shape (in place, into a second region, with immediates, scalars
 * per row and rows as the other operand, the chain value first or second; EXP, TANH,
 * ERF and SIGMOID; SELECTs on
 * BOOL conditions of bytes 0, 1 and others, a row per row, one row for all or a
 * scalar per row), with and without the STORE after them, run through the interpreter and one instruction at a
 * time (rt_vec, rt_dma) from the same start: DRAM, and LX wherever an instruction
 * after the chain reads it, must be equal bit for bit; regions that overlap in part,
 * conditions that the chain writes, and regions of fewer than 16 KiB, are not fused
 * and give the same bits too.
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

#define LX_BYTES (2u << 20)
#define DRAM_BYTES (1u << 20)
#define REG_C 4096u          /* the chain's first region */
#define REG_R 300000u        /* a second region (the residual tile of conv_add_add) */
#define REG_Y 500000u        /* rows read as the other operand */
#define REG_S 64u            /* scalars per row */
#define REG_M 280000u        /* SELECT conditions (BOOL bytes) */
#define SINK 560000u         /* bytes [0, SINK) a closing copy reads, writing past them */

static uint8_t *lx, *dram;
static uint8_t *segs[1];
static RtCore core;

/* Deterministic pseudo-random numbers: 32 bits, and floats in [-2, 2) with exact
 * zeros and (nans) NaNs of either sign. */
static uint32_t rnd32(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static float rndf(uint32_t *s, bool nans) {
    uint32_t v = rnd32(s);
    if (nans && (v % 97 == 5 || v % 89 == 7))
        return v % 97 == 5 ? NAN : -NAN;
    return v % 17 == 0 ? 0.0f : (float)(v % 4096) / 1024.0f - 2.0f;
}

static int setup(void **state) {
    (void)state;
    lx = calloc(LX_BYTES + RT_LX_SLACK, 1);
    dram = calloc(DRAM_BYTES, 1);
    segs[0] = dram;
    core = (RtCore){.lx = lx, .seg = segs};
    return lx && dram ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(lx);
    free(dram);
    return 0;
}

/* The shape of a chain: rows x cols at row stride rs (elements) in every region. */
typedef struct {
    uint32_t rows, cols, rs;
} Shape;

/* An F32 VEC of fn writing region dst from the chain value at region x (operand pos)
 * and, for a binary fn, the other operand: kind 0 an immediate, 1 a scalar per row,
 * 2 a row of region y. */
static SpyInsn chain_vec(const Shape *sh, int fn, uint32_t dst, uint32_t x, int pos, int kind,
                         uint32_t y, float imm) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    bool unary = fn == ISA_VF_RELU || fn == ISA_VF_NEG || fn == ISA_VF_ABS ||
                 fn == ISA_VF_EXP || fn == ISA_VF_TANH || fn == ISA_VF_ERF ||
                 fn == ISA_VF_SIGMOID;
    v->opcode = ISA_VEC, v->dtype = ISA_DT_F32, v->src_dtype = ISA_DT_F32;
    v->fn = (uint16_t)fn, v->nsrc = unary ? 1 : 2, v->dst = dst, v->rows = sh->rows;
    v->cols = sh->cols, v->dst_rs = (int32_t)sh->rs;
    int q = unary ? 0 : pos, o = 1 - q;
    v->src[q] = x, v->src_rs[q] = (int32_t)sh->rs, v->src_cs[q] = 1;
    if (unary)
        return in;
    if (kind == 0) {
        v->flags = o ? ISA_F_IMM : ISA_F_IMM_A;
        memcpy(&v->imm, &imm, 4);
    } else if (kind == 1) {
        v->src[o] = REG_S, v->src_rs[o] = 1, v->src_cs[o] = 0;
    } else {
        v->src[o] = y, v->src_rs[o] = (int32_t)sh->rs, v->src_cs[o] = 1;
    }
    return in;
}

/* Mask forms of select_vec: a row per row, one row for every row, a scalar per row. */
enum { MK_ROWS, MK_ONE_ROW, MK_SCALAR };

/* An F32 SELECT writing region dst from the condition at m (form mk) and the chain
 * value at region x as operand pos (1: chosen where the condition is set, 2: where
 * not), the other value operand of kind as chain_vec's (an immediate only as
 * operand 1: with the chain value second). */
static SpyInsn select_vec(const Shape *sh, uint32_t dst, uint32_t x, int pos, int kind,
                          uint32_t y, float imm, uint32_t m, int mk) {
    SpyInsn in = chain_vec(sh, ISA_VF_ADD, dst, x, 0, 1, 0, 0);
    SpyVec *v = &in.vec;
    int o = 3 - pos;
    v->fn = ISA_VF_SELECT, v->nsrc = 3;
    v->src[0] = m, v->src_cs[0] = mk == MK_SCALAR ? 0 : 1;
    v->src_rs[0] = mk == MK_ROWS ? (int32_t)sh->rs : mk == MK_ONE_ROW ? 0 : 1;
    v->src[pos] = x, v->src_rs[pos] = (int32_t)sh->rs, v->src_cs[pos] = 1;
    if (kind == 0 && o == 1) {
        v->flags = ISA_F_IMM;
        memcpy(&v->imm, &imm, 4);
    } else if (kind != 2) {
        v->src[o] = REG_S, v->src_rs[o] = 1, v->src_cs[o] = 0;
    } else {
        v->src[o] = y, v->src_rs[o] = (int32_t)sh->rs, v->src_cs[o] = 1;
    }
    return in;
}

/* A STORE of region a (rows x cols at row stride rs) to DRAM byte 128, rows 8 apart
 * beyond cols (or the whole region as one row when contiguous and one_row). */
static SpyInsn store_insn(const Shape *sh, uint32_t a, bool one_row) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyDma *d = &in.dma;
    d->opcode = ISA_STORE, d->esize = 4, d->ndim = 2, d->seg = 0, d->dram_off = 128, d->lx = a;
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        d->dims[i] = 1, d->dram_stride[i] = d->lx_stride[i] = 1;
    if (one_row) {
        d->ndim = 1, d->dims[0] = sh->rows * sh->cols;
        return in;
    }
    d->dims[0] = sh->rows, d->dims[1] = sh->cols;
    d->dram_stride[0] = (int32_t)(sh->cols + 8), d->lx_stride[0] = (int32_t)sh->rs;
    return in;
}

/* A random chain of n VECs over sh (the first reads REG_C; one in four moves the
 * chain value to the other of REG_C / REG_R, the rest stay in place), its last region
 * in *last. */
static uint32_t random_chain(SpyInsn *p, uint32_t n, const Shape *sh, uint32_t *seed,
                             uint32_t *last) {
    static const int fns[] = {ISA_VF_ADD, ISA_VF_SUB, ISA_VF_MUL, ISA_VF_DIV,
                              ISA_VF_MAX, ISA_VF_MIN, ISA_VF_RELU, ISA_VF_NEG,
                              ISA_VF_ABS, ISA_VF_SELECT, ISA_VF_EXP, ISA_VF_TANH,
                              ISA_VF_ERF, ISA_VF_SIGMOID};
    uint32_t x = REG_C;
    for (uint32_t i = 0; i < n; i++) {
        int fn = fns[rnd32(seed) % (sizeof fns / sizeof fns[0])];
        uint32_t dst = rnd32(seed) % 4 == 0 ? (x == REG_C ? REG_R : REG_C) : x;
        if (i > 0 && dst != x && dst == REG_C)
            dst = x;                 /* REG_C was written: it stays the chain's */
        int pos = (int)(rnd32(seed) % 2), kind = (int)(rnd32(seed) % 3);
        float imm = (float)(rnd32(seed) % 7) - 3.0f;
        if (i == 0 && (fn == ISA_VF_MAX || fn == ISA_VF_MIN) && kind == 2)
            kind = 1;                /* two rows: a pooling tap, planned as those */
        if (fn == ISA_VF_SELECT)
            p[i] = select_vec(sh, dst, x, pos + 1, kind, REG_Y, imm, REG_M,
                              (int)(rnd32(seed) % 3));
        else
            p[i] = chain_vec(sh, fn, dst, x, pos, kind, REG_Y, imm);
        x = dst;
    }
    *last = x;
    return n;
}

/* Fills LX's regions and DRAM with random bits (LX from seed; DRAM a fixed pattern).
 * NaNs of either sign only in the chain's input (and those its own 0/0 or inf - inf
 * make): which of two NaN operands an ADD or MUL passes on is the host's (the compiler
 * orders a commutative operation's operands as it likes, in the direct path's code as
 * here), so the other operand is never a NaN. */
static void fill(const Shape *sh, uint32_t *seed) {
    size_t rb = (size_t)sh->rows * sh->rs * 4;
    for (size_t i = 0; i < rb / 4; i++) {
        ((float *)(lx + REG_C))[i] = rndf(seed, true);
        ((float *)(lx + REG_R))[i] = rndf(seed, false);
        ((float *)(lx + REG_Y))[i] = rndf(seed, false);
    }
    for (uint32_t r = 0; r < sh->rows; r++)
        ((float *)(lx + REG_S))[r] = rndf(seed, false);
    static const uint8_t conds[] = {0, 1, 0, 1, 0, 1, 2, 0x80, 0xff, 0x10};
    for (size_t i = 0; i < rb / 4; i++)
        lx[REG_M + i] = conds[rnd32(seed) % 10];
    for (size_t i = 0; i < DRAM_BYTES; i++)
        dram[i] = (uint8_t)(i * 13 + 5);
}

/* Runs p[0..n) both ways from the same LX and DRAM and compares DRAM, and LX over
 * [0, SINK) when the program ends with a copy reading all of it (sink). */
static void check_both(const SpyInsn *p, uint32_t n, bool sink) {
    uint8_t *lx0 = malloc(LX_BYTES), *dr0 = malloc(DRAM_BYTES);
    uint8_t *lx1 = malloc(LX_BYTES), *dr1 = malloc(DRAM_BYTES);
    memcpy(lx0, lx, LX_BYTES);
    memcpy(dr0, dram, DRAM_BYTES);
    for (uint32_t i = 0; i < n; i++)
        if (p[i].opcode == ISA_STORE)
            rt_dma(&core, &p[i].dma, true);
        else
            assert_int_equal(rt_vec(&core, &p[i].vec), RT_XOK);
    memcpy(lx1, lx, LX_BYTES);
    memcpy(dr1, dram, DRAM_BYTES);
    memcpy(lx, lx0, LX_BYTES);
    memcpy(dram, dr0, DRAM_BYTES);
    assert_int_equal(rt_exec_program(&core, p, n), RT_XOK);
    assert_memory_equal(dram, dr1, DRAM_BYTES);
    if (sink)
        assert_memory_equal(lx, lx1, SINK);
    free(lx0);
    free(dr0);
    free(lx1);
    free(dr1);
}

/* The plan rt_prep_code makes of p[0] (in a program of n instructions). */
static RtPrep plan_of(const SpyInsn *p, uint32_t n) {
    RtPrep *pl = malloc(n * sizeof *pl);
    rt_prep_code(p, n, pl);
    RtPrep r = pl[0];
    free(pl);
    return r;
}

/* A VEC COPY of LX [0, SINK) to SINK: every byte is read after what comes before. */
static SpyInsn sink_insn(void) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    in.vec = (SpyVec){.opcode = ISA_VEC, .dtype = ISA_DT_F32, .src_dtype = ISA_DT_F32,
                      .fn = ISA_VF_COPY, .nsrc = 1, .dst = SINK, .rows = 1, .cols = SINK / 4,
                      .dst_rs = SINK / 4};
    in.vec.src_cs[0] = 1;
    return in;
}

static void test_random_chains(void **state) {
    (void)state;
    static const Shape shapes[] = {{40, 300, 304}, {90, 49, 49}, {1, 5000, 5000}, {70, 64, 64},
                                   {900, 5, 8},    {40, 130, 136}, {60, 88, 88}};
    uint32_t seed = 3;
    SpyInsn p[RT_FUSE_MAX + 2];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        for (int trial = 0; trial < 12; trial++) {
            uint32_t n = 1 + rnd32(&seed) % RT_FUSE_MAX, last;
            random_chain(p, n, sh, &seed, &last);
            bool one_row = sh->rs == sh->cols && trial % 2;
            p[n] = store_insn(sh, last, one_row);
            bool sink = trial % 3 == 0;
            if (sink)
                p[n + 1] = sink_insn();
            fill(sh, &seed);
            RtPrep pl = plan_of(p, n + 1 + sink);
            assert_int_equal(pl.how, RT_PH_FUSE);
            assert_int_equal(pl.run, n + 1);     /* the STORE with it */
            check_both(p, n + 1 + sink, sink);
        }
    }
}

/* Fills LX and DRAM for sh (seed), checks the plan of p[0..n): a chain of run
 * instructions, or (run 0) none, then runs p both ways (sink: LX compared too);
 * returns the plan. */
static RtPrep expect_run(const SpyInsn *p, uint32_t n, const Shape *sh, uint32_t *seed,
                         uint32_t run, bool sink) {
    fill(sh, seed);
    RtPrep pl = plan_of(p, n);
    if (run) {
        assert_int_equal(pl.how, RT_PH_FUSE);
        assert_int_equal(pl.run, run);
    } else {
        assert_int_not_equal(pl.how, RT_PH_FUSE);
    }
    check_both(p, n, sink);
    return pl;
}

/* conv_add_add (mobilenet_v2): the bias added in place, then the result added into the
 * residual tile, which is stored; a chain of two VECs without a STORE, and one over a
 * region whose other operand overlaps it in part (not fused). */
static void test_chain_forms(void **state) {
    (void)state;
    Shape sh = {24, 224, 224};
    uint32_t seed = 8;
    SpyInsn p[4];
    p[0] = chain_vec(&sh, ISA_VF_ADD, REG_C, REG_C, 0, 1, 0, 0);
    p[1] = chain_vec(&sh, ISA_VF_ADD, REG_R, REG_C, 1, 2, REG_R, 0);
    p[2] = store_insn(&sh, REG_R, false);
    assert_int_equal(expect_run(p, 3, &sh, &seed, 3, false).keep, 0); /* none read after */
    p[2] = sink_insn();                          /* no STORE: both regions kept */
    assert_int_equal(expect_run(p, 3, &sh, &seed, 2, true).keep, 3);
    /* the other operand one row into the region: no chain */
    p[1] = chain_vec(&sh, ISA_VF_MUL, REG_C, REG_C, 0, 2, REG_C + 4 * sh.rs, 0);
    p[2] = store_insn(&sh, REG_C, false);
    expect_run(p, 3, &sh, &seed, 0, false);
    /* one row, its operands' row strides 0 (a depthwise convolution's epilogue) */
    Shape row = {1, 12544, 12544};
    p[0] = chain_vec(&row, ISA_VF_ADD, REG_C, REG_C, 0, 1, 0, 0);
    p[1] = chain_vec(&row, ISA_VF_MIN, REG_C, REG_C, 0, 0, 0, 6.0f);
    p[0].vec.src_rs[0] = p[0].vec.src_rs[1] = p[1].vec.src_rs[0] = 0;
    p[2] = store_insn(&row, REG_C, false);
    expect_run(p, 3, &row, &seed, 3, false);
    /* a region of fewer than 16 KiB: its VECs one by one */
    Shape small = {4, 100, 100};
    p[0] = chain_vec(&small, ISA_VF_ADD, REG_C, REG_C, 0, 1, 0, 0);
    p[1] = chain_vec(&small, ISA_VF_MAX, REG_C, REG_C, 0, 0, 0, 0);
    p[2] = store_insn(&small, REG_C, false);
    expect_run(p, 3, &small, &seed, 0, false);
}

/* GELU as spyrec emits it (bert_base): x / sqrt 2, ERF, + 1, 0.5 *, times x (the chain's
 * input region read again as the other operand), then the STORE; and a row whose
 * length leaves a partial vector. */
static void test_gelu_chain(void **state) {
    (void)state;
    static const Shape shapes[] = {{4, 3072, 3072}, {40, 130, 136}};
    uint32_t seed = 34;
    SpyInsn p[6];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        p[0] = chain_vec(sh, ISA_VF_DIV, REG_R, REG_C, 0, 0, 0, 1.41421354f);
        p[1] = chain_vec(sh, ISA_VF_ERF, REG_R, REG_R, 0, 0, 0, 0);
        p[2] = chain_vec(sh, ISA_VF_ADD, REG_R, REG_R, 0, 0, 0, 1.0f);
        p[3] = chain_vec(sh, ISA_VF_MUL, REG_R, REG_R, 1, 0, 0, 0.5f);
        p[4] = chain_vec(sh, ISA_VF_MUL, REG_C, REG_C, 0, 2, REG_R, 0);
        p[4].vec.src[1] = REG_R, p[4].vec.src[0] = REG_C;
        p[5] = store_insn(sh, REG_C, sh->rs == sh->cols);
        expect_run(p, 6, sh, &seed, 6, false);
    }
}

/* The epilogue of a bundle with bounded dynamic dimensions: bias, max, min, then the
 * SELECT that zeroes the padding columns (its condition one row for every row, a row
 * per row or a scalar per row; the fill a scalar in LX), and the STORE or not; the
 * SELECT in the middle of a chain, into another region, with an immediate. */
static void test_select_chains(void **state) {
    (void)state;
    static const Shape shapes[] = {{32, 144, 144}, {24, 224, 224}, {40, 130, 136}};
    uint32_t seed = 21;
    SpyInsn p[6];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        for (int mk = MK_ROWS; mk <= MK_SCALAR; mk++) {
            p[0] = chain_vec(sh, ISA_VF_ADD, REG_C, REG_C, 0, 2, REG_Y, 0);
            p[1] = chain_vec(sh, ISA_VF_MAX, REG_C, REG_C, 0, 0, 0, 0.0f);
            p[2] = chain_vec(sh, ISA_VF_MIN, REG_C, REG_C, 0, 0, 0, 6.0f);
            p[3] = select_vec(sh, REG_C, REG_C, 1, 1, 0, 0, REG_M, mk);
            p[3].vec.src_rs[2] = 0;              /* the fill: one scalar */
            p[4] = store_insn(sh, REG_C, false);
            expect_run(p, 5, sh, &seed, 5, false);
            p[4] = sink_insn();                  /* no STORE: the region kept */
            assert_int_equal(expect_run(p, 5, sh, &seed, 4, true).keep, 8);
            /* in the middle, into the second region, the chain value where not set */
            p[1] = select_vec(sh, REG_R, REG_C, 2, 0, 0, -1.5f, REG_M, mk);
            p[2] = chain_vec(sh, ISA_VF_MUL, REG_R, REG_R, 1, 2, REG_Y, 0);
            p[3] = select_vec(sh, REG_R, REG_R, 2, 2, REG_Y, 0, REG_M, mk);
            p[4] = store_insn(sh, REG_R, sh->rs == sh->cols);
            expect_run(p, 5, sh, &seed, 5, false);
        }
    }
}

/* SELECTs whose condition the chain writes are not taken into it (before the SELECT,
 * by the SELECT itself, after it), nor one on an immediate condition; the same bits. */
static void test_select_clashes(void **state) {
    (void)state;
    Shape sh = {24, 224, 224};
    uint32_t seed = 34;
    SpyInsn p[4];
    /* the condition in the region that VEC 1, after the SELECT, writes */
    p[0] = select_vec(&sh, REG_C, REG_C, 2, 0, 0, 3.0f, REG_R + 64, MK_ROWS);
    p[1] = chain_vec(&sh, ISA_VF_ADD, REG_R, REG_C, 0, 2, REG_Y, 0);
    p[2] = store_insn(&sh, REG_R, false);
    expect_run(p, 3, &sh, &seed, 0, false);
    /* the condition in the first region, which VEC 0 writes: the chain stops there */
    p[0] = chain_vec(&sh, ISA_VF_ADD, REG_C, REG_C, 0, 1, 0, 0);
    p[1] = chain_vec(&sh, ISA_VF_MAX, REG_R, REG_C, 0, 0, 0, 0.0f);
    p[2] = select_vec(&sh, REG_R, REG_R, 1, 1, 0, 0, REG_C + 4 * sh.rs, MK_ONE_ROW);
    p[3] = store_insn(&sh, REG_R, false);
    expect_run(p, 4, &sh, &seed, 2, false);
    /* the condition in the SELECT's own region (a scalar, its last byte) */
    p[2] = select_vec(&sh, REG_R, REG_R, 1, 1, 0, 0, REG_R + 4 * sh.rs * sh.rows - 1,
                      MK_SCALAR);
    p[2].vec.src_rs[0] = 0;
    expect_run(p, 4, &sh, &seed, 2, false);
    /* the condition an immediate */
    p[0] = select_vec(&sh, REG_C, REG_C, 2, 1, 0, 0, REG_M, MK_ROWS);
    p[0].vec.flags = ISA_F_IMM_A;
    p[0].vec.imm = 1;
    p[1] = store_insn(&sh, REG_C, false);
    expect_run(p, 2, &sh, &seed, 0, false);
}

/* VECs over an empty region (no columns under 2^32 - 1 rows, or no rows) do nothing
 * and take no time: no plan, no row loop (a bundle the fuzzer made gave a VEC 2^30
 * rows of 0 columns, which the verifier accepts: it processes no element). */
static void test_empty_regions(void **state) {
    (void)state;
    Shape sh = {UINT32_MAX, 0, 0};
    SpyInsn p[3];
    p[0] = chain_vec(&sh, ISA_VF_ADD, REG_C, REG_C, 0, 1, 0, 0);
    p[1] = chain_vec(&sh, ISA_VF_RELU, REG_C, REG_C, 0, 0, 0, 0);
    p[1].vec.fn = ISA_VF_COPY;
    p[2] = chain_vec(&sh, ISA_VF_MUL, REG_R, REG_C, 0, 2, REG_Y, 0);
    p[2].vec.rows = 0, p[2].vec.cols = UINT32_MAX;
    uint8_t *before = malloc(LX_BYTES);
    assert_non_null(before);
    memset(lx, 0x5a, LX_BYTES);
    memcpy(before, lx, LX_BYTES);
    for (int i = 0; i < 3; i++) {
        RtPrep pl = plan_of(&p[i], 1);
        assert_int_equal(pl.how, RT_PH_NONE);
        assert_int_equal(pl.run, 1);
    }
    assert_int_equal(rt_exec_program(&core, p, 3), RT_XOK);
    assert_memory_equal(lx, before, LX_BYTES);
    free(before);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_chains),
        cmocka_unit_test(test_chain_forms),
        cmocka_unit_test(test_select_chains),
        cmocka_unit_test(test_gelu_chain),
        cmocka_unit_test(test_select_clashes),
        cmocka_unit_test(test_empty_regions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
