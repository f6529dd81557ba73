/* test_guard.c: unit tests of guards (isa.md "Guards", codegen/cg_guard.c): in a bundle
 * with a symbolic axis, the instructions that only compute padding at small sizes are
 * skipped then. A row-wise network (x f32[1..96, 64] -> MatMul -> Relu -> MatMul) is
 * compiled at its bound and must
 *   - carry guards (the feature bit, guarded instructions) and give, at every size, the
 *     values a C reference computes, bit for bit those of the same bundle with every
 *     instruction the size skips replaced by a NOP and every one its row clamp shortens
 *     written with the rows that run, also when one session runs the sizes in any
 *     order;
 *   - model, at a small size, less time than at the bound (not in proportion: the split
 *     over cores is the bound's, and the core that holds the first rows does its whole
 *     share), and exactly the time of that rewritten bundle (the sum over the
 *     instructions that run, at the rows they run);
 *   - be refused at load when a guard is malformed, naming the kernel, the core and the
 *     instruction's offset.
 * And the guard pass's read set of a MATMUL with a window B (gd_accesses) holds every
 * byte the window reads: exactly those of a sparse (dilated) window, the bounding range
 * of a dense one.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/cg_guard.h"
#include "ir.h"
#include "isa.h"
#include "sbin.h"
#include "spyrt.h"
#include "unit_util.h"

#define ROWS 96
#define K 64
#define H 80
#define N 24

/* Deterministic weights. */
static void weights(float *w1, float *w2)
{
    for (int i = 0; i < K * H; i++)
        w1[i] = (float)((i * 37 % 101) - 50) / 400.0f;
    for (int i = 0; i < H * N; i++)
        w2[i] = (float)((i * 53 % 97) - 48) / 300.0f;
}

/* The network's result for n rows of x. */
static void reference(const float *x, int n, const float *w1, const float *w2, float *y)
{
    for (int r = 0; r < n; r++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int h = 0; h < H; h++) {
                double t = 0;
                for (int k = 0; k < K; k++)
                    t += (double)x[r * K + k] * w1[k * H + h];
                acc += (t > 0 ? t : 0) * w2[h * N + j];
            }
            y[r * N + j] = (float)acc;
        }
}

/* Compiles the network with rows symbolic in [1, ROWS]; returns the bundle. */
static uint8_t *compile_mlp(UtFx *f, size_t *len)
{
    float w1[K * H], w2[H * N];
    weights(w1, w2);
    ValId x = ut_input(f->g, "x", IR_DT_F32, 2, (int64_t[]){ROWS, K});
    ir_sym_add(f->g, x, 0, 1, ROWS, "rows");
    ValId a = ut_const(f->g, IR_DT_F32, 2, (int64_t[]){K, H}, w1);
    ValId b = ut_const(f->g, IR_DT_F32, 2, (int64_t[]){H, N}, w2);
    ValId h = ut_onnx_op(f->g, "MatMul", 13, (ValId[]){x, a}, 2, NULL, 0);
    ValId r = ut_onnx_op(f->g, "Relu", 14, &h, 1, NULL, 0);
    ir_add_output(f->g, ut_onnx_op(f->g, "MatMul", 13, (ValId[]){r, b}, 2, NULL, 0));
    ut_decompose_ok(f);
    uint8_t *buf = ut_compile(f->g, len);
    assert_non_null(buf);
    return buf;
}

/* The CODE section of bundle buf: its instructions and their count. */
static SpyInsn *code_of(uint8_t *buf, uint64_t *n)
{
    const SpyHeader *h = (const SpyHeader *)buf;
    const SpySection *st = (const SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (st[i].id == SPY_SEC_CODE) {
            *n = st[i].size / sizeof(SpyInsn);
            return (SpyInsn *)(buf + st[i].offset);
        }
    fail_msg("no CODE section");
    return NULL;
}

/* A copy of bundle buf as the size n of the one symbol runs it: every instruction that
 * n skips a NOP, every one its row clamp shortens written with the rows that run (no
 * guard left on either). */
static uint8_t *as_run(const uint8_t *buf, size_t len, int32_t n)
{
    uint8_t *c = malloc(len);
    assert_non_null(c);
    memcpy(c, buf, len);
    uint64_t cnt;
    SpyInsn *code = code_of(c, &cnt);
    for (uint64_t i = 0; i < cnt; i++) {
        uint32_t rows = spy_guard_rows(&code[i], &n);
        if (rows == 0) {
            memset(&code[i], 0, sizeof code[i]);
        } else if (rows != UINT32_MAX) {
            spy_insn_set_rows(&code[i], rows);
            memset(code[i].raw + ISA_GUARD_OFF, 0, sizeof(SpyGuard));
        }
    }
    ut_fix_crcs(c);
    return c;
}

/* Runs session s at n rows of x into y (at most ROWS * ny floats). */
static void run_ny(spy_session *s, const float *x, int n, float *y, size_t ny)
{
    assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){n, K}), SPY_OK);
    const void *ins[1] = {x};
    void *outs[1] = {y};
    memset(y, 0x5a, sizeof(float) * ROWS * ny);
    assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
}

/* Runs session s of compile_mlp at n rows of x into y. */
static void run_rows(spy_session *s, const float *x, int n, float *y)
{
    run_ny(s, x, n, y, N);
}

/* Expects y, the result of n rows of x (n * ny floats), bit for bit from bundle keep
 * (len bytes) rewritten as size n runs it (as_run). */
static void expect_as_run(const uint8_t *keep, size_t len, const float *x, int n,
                          const float *y, size_t ny)
{
    static float y2[ROWS * H];
    spy_model *m2;
    spy_session *s2;
    ut_open(as_run(keep, len, n), len, &m2, &s2);
    run_ny(s2, x, n, y2, ny);
    assert_memory_equal(y, y2, sizeof(float) * (size_t)n * ny);
    spy_session_free(s2);
    spy_model_free(m2);
}

/* Guards are there, and every size gives the reference's values, the same bits as the
 * bundle with the skipped instructions made NOPs, and its modelled time. */
static void test_guarded_every_size(void **state)
{
    UtFx *f = *state;
    size_t len = 0;
    uint8_t *buf = compile_mlp(f, &len);
    assert_true(((const SpyHeader *)buf)->features & SPY_FEAT_GUARDS);
    uint64_t cnt, guarded = 0, clamped = 0;
    SpyInsn *code = code_of(buf, &cnt);
    for (uint64_t i = 0; i < cnt; i++) {
        guarded += spy_insn_guard(&code[i]).n > 0;
        clamped += (spy_insn_guard(&code[i]).n & ISA_GUARD_ROWS) != 0;
    }
    assert_true(guarded > 0);
    assert_true(clamped > 0);         /* a core's 3 rows of 96 run in part at some sizes */
    static float x[ROWS * K], y[ROWS * N], y2[ROWS * N], want[ROWS * N];
    float w1[K * H], w2[H * N];
    weights(w1, w2);
    ut_fill(x, ROWS * K, 0.37f, -0.1f);
    uint8_t *keep = malloc(len);
    assert_non_null(keep);
    memcpy(keep, buf, len);
    spy_model *m;
    spy_session *s;
    ut_open(buf, len, &m, &s);
    double bound_us = spy_model_device_us(m), small_us = 0;
    for (int n = 1; n <= ROWS; n += (n < 8 ? 1 : 7)) {
        run_rows(s, x, n, y);
        reference(x, n, w1, w2, want);
        ut_expect_close(y, want, (int64_t)n * N, 1e-4);
        double us = spy_session_device_us(s);
        assert_true(us <= bound_us * (1 + 1e-12));
        int64_t at[SPY_MAX_RANK] = {n, K};      /* the same figure without a run */
        assert_true(fabs(spy_model_device_us_at(m, at) - us) <= 1e-9 * us);
        if (n == 1)
            small_us = us;
        spy_model *m2;
        spy_session *s2;
        ut_open(as_run(keep, len, n), len, &m2, &s2);
        run_rows(s2, x, n, y2);
        assert_memory_equal(y, y2, sizeof(float) * (size_t)n * N);
        assert_true(fabs(spy_model_device_us(m2) - us) <= 1e-9 * us);
        assert_true(fabs(spy_session_device_us(s2) - us) <= 1e-9 * us);
        spy_session_free(s2);
        spy_model_free(m2);
    }
    /* sizes out of order on the same session: the programs specialised to the sizes
     * of the last run (runtime/rt_special.c) are remade for each new size */
    static const int again[] = {50, 2, 96, 2, 17};
    for (size_t i = 0; i < sizeof again / sizeof *again; i++) {
        int n = again[i];
        run_rows(s, x, n, y);
        expect_as_run(keep, len, x, n, y, N);
    }
    int64_t out[SPY_MAX_RANK] = {ROWS + 1, K};         /* outside the bounds */
    assert_true(spy_model_device_us_at(m, out) == -1);
    assert_true(spy_model_device_us_at(m, NULL) == -1);
    run_rows(s, x, ROWS, y);                           /* the bound: nothing skipped */
    assert_true(fabs(spy_session_device_us(s) - bound_us) <= 1e-9 * bound_us);
    assert_true(small_us < bound_us);                  /* one row of 96: less work */
    free(keep);
    spy_session_free(s);
    spy_model_free(m);
}

/* Compiles softmax over the rows (symbolic in [1, ROWS]) of x @ w1, as attention's
 * scores over the keys: along the last axis of its transpose. The product's rows past
 * the size reach only the padding that symdim's SELECT(mask, ., -inf), in the product's
 * epilogue, replaces (codegen/cg_guard_mask.c). */
static uint8_t *compile_masked(UtFx *f, size_t *len)
{
    float w1[K * H], w2[H * N];
    weights(w1, w2);
    ValId x = ut_input(f->g, "x", IR_DT_F32, 2, (int64_t[]){ROWS, K});
    ir_sym_add(f->g, x, 0, 1, ROWS, "rows");
    ValId a = ut_const(f->g, IR_DT_F32, 2, (int64_t[]){K, H}, w1);
    ValId h = ut_onnx_op(f->g, "MatMul", 13, (ValId[]){x, a}, 2, NULL, 0);
    IrAttr perm = ir_attr_ints(f->g, "perm", (int64_t[]){1, 0}, 2);
    ValId t = ut_onnx_op(f->g, "Transpose", 13, &h, 1, &perm, 1);
    ir_add_output(f->g, ut_onnx_op(f->g, "Softmax", 13, &t, 1, NULL, 0));
    ut_decompose_ok(f);
    uint8_t *buf = ut_compile(f->g, len);
    assert_non_null(buf);
    return buf;
}

/* Softmax over the n rows of x @ w1, per column, transposed: y[j, r]. */
static void masked_reference(const float *x, int n, const float *w1, float *y)
{
    for (int j = 0; j < H; j++) {
        double mx = -INFINITY, sum = 0, t[ROWS];
        for (int r = 0; r < n; r++) {
            t[r] = 0;
            for (int k = 0; k < K; k++)
                t[r] += (double)x[r * K + k] * w1[k * H + j];
            mx = t[r] > mx ? t[r] : mx;
        }
        for (int r = 0; r < n; r++)
            sum += exp(t[r] - mx);
        for (int r = 0; r < n; r++)
            y[j * n + r] = (float)(exp(t[r] - mx) / sum);
    }
}

/* A product whose rows reach a reduction only through a mask of padding gets row
 * clamps (before the masks' values were followed, its every row was needed at every
 * size), and every size still gives the reference's values, bit for bit those of the
 * rewritten bundle, at no more modelled time than the bound's. */
static void test_masked_rows_clamped(void **state)
{
    UtFx *f = *state;
    size_t len = 0;
    uint8_t *buf = compile_masked(f, &len);
    uint64_t cnt, mm_clamped = 0;
    SpyInsn *code = code_of(buf, &cnt);
    for (uint64_t i = 0; i < cnt; i++)
        mm_clamped += code[i].opcode == ISA_MATMUL &&
                      (spy_insn_guard(&code[i]).n & ISA_GUARD_ROWS);
    assert_true(mm_clamped > 0);
    static float x[ROWS * K], y[ROWS * H], want[ROWS * H];
    float w1[K * H], w2[H * N];
    weights(w1, w2);
    ut_fill(x, ROWS * K, 0.37f, -0.1f);
    uint8_t *keep = malloc(len);
    assert_non_null(keep);
    memcpy(keep, buf, len);
    spy_model *m;
    spy_session *s;
    ut_open(buf, len, &m, &s);
    double bound_us = spy_model_device_us(m);
    for (int n = 1; n <= ROWS; n += (n < 8 ? 1 : 11)) {
        run_ny(s, x, n, y, H);
        masked_reference(x, n, w1, want);
        ut_expect_close(y, want, (int64_t)n * H, 1e-4);
        assert_true(spy_session_device_us(s) <= bound_us * (1 + 1e-12));
        expect_as_run(keep, len, x, n, y, H);
    }
    free(keep);
    spy_session_free(s);
    spy_model_free(m);
}

/* A row clamp on a LOAD over the ring is refused in a bundle without the feature bit
 * SPY_FEAT_RING_CLAMP (a reader from before it refuses the bit at the header). */
static void test_ring_clamp_needs_feature(void **state)
{
    UtFx *f = *state;
    size_t len = 0;
    uint8_t *buf = compile_masked(f, &len);
    uint64_t cnt, ring = 0;
    SpyInsn *code = code_of(buf, &cnt);
    for (uint64_t i = 0; i < cnt; i++)
        ring += code[i].opcode == ISA_LOAD && (code[i].dma.flags & ISA_F_RING) &&
                (spy_insn_guard(&code[i]).n & ISA_GUARD_ROWS);
    assert_true(ring > 0);
    assert_true(((const SpyHeader *)buf)->features & SPY_FEAT_RING_CLAMP);
    ((SpyHeader *)buf)->features &= ~SPY_FEAT_RING_CLAMP;
    ut_fix_crcs(buf);
    ut_expect_refused(buf, len, "over the ring (without feature bit SPY_FEAT_RING_CLAMP)");
    ((SpyHeader *)buf)->features |= SPY_FEAT_RING_CLAMP;
    ((SpyHeader *)buf)->features &= ~SPY_FEAT_GUARDS;
    ut_fix_crcs(buf);
    ut_expect_refused(buf, len, "RING_CLAMP without GUARDS and RING");
    free(buf);
}

/* The first guarded instruction of buf, and its index. */
static SpyInsn *first_guarded(uint8_t *buf, uint64_t *at)
{
    uint64_t cnt;
    SpyInsn *code = code_of(buf, &cnt);
    for (uint64_t i = 0; i < cnt; i++)
        if (spy_insn_guard(&code[i]).n) {
            *at = i;
            return &code[i];
        }
    fail_msg("no guarded instruction");
    return NULL;
}

/* Writes guard g into in. */
static void set_guard(SpyInsn *in, const SpyGuard *g)
{
    memcpy(in->raw + ISA_GUARD_OFF, g, sizeof *g);
}

/* Malformed guards are refused at load, naming the instruction and what is wrong. */
static void test_malformed_guard_refused(void **state)
{
    UtFx *f = *state;
    size_t len = 0;
    uint8_t *buf = compile_mlp(f, &len);
    const struct {
        SpyGuard g;
        const char *why;
    } bad[] = {
        {{1, {1, 0, 0}, {4, 0, 0}}, "symbol 1 past the 1 symbols"},
        {{1, {0, 0, 0}, {ROWS, 0, 0}}, "outside [1, 96)"},
        {{1, {0, 0, 0}, {0, 0, 0}}, "outside [1, 96)"},
        {{4, {0, 0, 0}, {4, 0, 0}}, "4 conditions"},
        {{1, {0, 0, 0}, {4, 7, 0}}, "past its 1 conditions is not zero"},
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        uint8_t *c = malloc(len);
        assert_non_null(c);
        memcpy(c, buf, len);
        uint64_t at;
        set_guard(first_guarded(c, &at), &bad[b].g);
        ut_fix_crcs(c);
        char where[64];
        snprintf(where, sizeof where, "(CODE %llu, offset ", (unsigned long long)at);
        ut_expect_refused(c, len, where);
        ut_expect_refused(c, len, bad[b].why);
        free(c);
    }
    const struct {
        SpyGuard g;
        const char *why;
    } badrows[] = {                                    /* row clamps (ISA_GUARD_ROWS) */
        {{ISA_GUARD_ROWS, {0, 1, 0}, {0, 4, 0}}, "symbol 1 of 1"},
        {{ISA_GUARD_ROWS, {0, 0, 0}, {0, 0, 0}}, "0 rows per step"},
        {{ISA_GUARD_ROWS, {0, 0, 0}, {0, 1, 1000}}, "all or none"},
        {{ISA_GUARD_ROWS, {0, 0, 0}, {0, 1000, 0}}, "all or none"},
        {{ISA_GUARD_ROWS | 2, {0, 0, 0}, {4, 1, 0}}, "2 conditions (at most 1)"},
        {{ISA_GUARD_ROWS, {0, 0, 1}, {0, 1, 0}}, "slot 2 symbol 1"},
        {{ISA_GUARD_ROWS, {0, 0, 0}, {4, 1, 0}}, "no skip condition) is not zero"},
    };
    for (size_t b = 0; b < sizeof badrows / sizeof badrows[0]; b++) {
        uint8_t *c = malloc(len);
        assert_non_null(c);
        memcpy(c, buf, len);
        uint64_t cnt, at = 0;
        SpyInsn *code = code_of(c, &cnt);
        while (at < cnt && !(spy_insn_guard(&code[at]).n & ISA_GUARD_ROWS))
            at++;
        assert_true(at < cnt);
        set_guard(&code[at], &badrows[b].g);
        ut_fix_crcs(c);
        ut_expect_refused(c, len, badrows[b].why);
        free(c);
    }
    uint8_t *c = malloc(len);                          /* a guard on a BARRIER */
    assert_non_null(c);
    memcpy(c, buf, len);
    uint64_t cnt;
    SpyInsn *code = code_of(c, &cnt);
    for (uint64_t i = 0; i < cnt; i++)
        if (code[i].opcode == ISA_BARRIER) {
            set_guard(&code[i], &(SpyGuard){1, {0, 0, 0}, {4, 0, 0}});
            break;
        }
    ut_fix_crcs(c);
    ut_expect_refused(c, len, "guard on a BARRIER");
    memcpy(c, buf, len);                               /* the feature without DYNDIM */
    ((SpyHeader *)c)->features &= ~SPY_FEAT_DYNDIM;
    ut_fix_crcs(c);
    ut_expect_refused(c, len, "");
    free(c);
    free(buf);
}

#define WIN_LX 65536                 /* LX bytes the window tests look at */
#define WIN_B 8192                   /* where their window B starts */

/* Marks in seen the bytes of access x (an LX one). */
static void mark_access(const Acc *x, uint8_t *seen)
{
    const CgSpan *s = &x->sp;
    int64_t idx[CG_DIMS_MAX] = {0};
    assert_int_equal(x->seg, -1);
    for (;;) {
        int64_t a = s->lo;
        for (int i = 0; i < s->n; i++)
            a += idx[i] * s->stride[i];
        assert_true(a >= 0 && a + s->width <= WIN_LX);
        memset(seen + a, 1, (size_t)s->width);
        int i = s->n - 1;
        while (i >= 0 && ++idx[i] == s->len[i])
            idx[i--] = 0;
        if (i < 0)
            return;
    }
}

/* gd_accesses' read of window B of a MATMUL at LX byte WIN_B (taps kext/ks, pixels
 * next/ns, elements): compared byte by byte with the window's own elements. */
static void check_window(const uint32_t *kext, const int32_t *ks, const uint32_t *next,
                         const int32_t *ns, bool exact)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyMatmul *mm = &in.mm;
    mm->opcode = ISA_MATMUL, mm->dtype = mm->out_dtype = ISA_DT_F32, mm->flags = ISA_F_BWIN;
    mm->a = 0, mm->b = WIN_B, mm->c = 60000, mm->m = 1, mm->lda = 1;
    mm->k = kext[0] * kext[1] * kext[2], mm->n = next[0] * next[1], mm->ldc = mm->n;
    memcpy(mm->bw_kext, kext, sizeof mm->bw_kext), memcpy(mm->bw_ks, ks, sizeof mm->bw_ks);
    memcpy(mm->bw_next, next, sizeof mm->bw_next), memcpy(mm->bw_ns, ns, sizeof mm->bw_ns);
    uint8_t *want = calloc(WIN_LX, 1), *got = calloc(WIN_LX, 1);
    int64_t lo = WIN_LX, hi = 0;
    for (uint32_t i0 = 0; i0 < kext[0]; i0++)
        for (uint32_t i1 = 0; i1 < kext[1]; i1++)
            for (uint32_t i2 = 0; i2 < kext[2]; i2++)
                for (uint32_t j0 = 0; j0 < next[0]; j0++)
                    for (uint32_t j1 = 0; j1 < next[1]; j1++) {
                        int64_t e = (int64_t)i0 * ks[0] + (int64_t)i1 * ks[1] +
                                    (int64_t)i2 * ks[2] + (int64_t)j0 * ns[0] + (int64_t)j1 * ns[1];
                        int64_t b = WIN_B + 4 * e;
                        memset(want + b, 1, 4);
                        lo = b < lo ? b : lo, hi = b + 4 > hi ? b + 4 : hi;
                    }
    Acc r[ACC_MAX], w[ACC_MAX];
    int nw, nr = gd_accesses(&in, r, w, &nw);
    assert_int_equal(nr, 2);                           /* A, then B */
    mark_access(&r[1], got);
    for (int64_t b = 0; b < WIN_LX; b++)
        assert_int_equal(got[b], exact ? want[b] : b >= lo && b < hi);
    free(want);
    free(got);
}

/* A dilated 3 x 3 window over 8 channels (dilation 6 in a 40-wide row, 10 pixels) reads
 * 720 floats of a 21,000-byte range: the read set is those floats alone. A dense 3 x 3
 * one (stride 1, 3 x 8 pixels) reads its whole bounding range; so does one with a
 * negative tap stride (a flipped kernel). */
static void test_window_read_set(void **state)
{
    (void)state;
    check_window((uint32_t[]){8, 3, 3}, (int32_t[]){1600, 240, 6}, (uint32_t[]){1, 10},
                 (int32_t[]){40, 1}, true);
    check_window((uint32_t[]){4, 3, 3}, (int32_t[]){100, 10, 1}, (uint32_t[]){3, 8},
                 (int32_t[]){10, 1}, false);
    check_window((uint32_t[]){2, 3, 3}, (int32_t[]){-1600, 240, 6}, (uint32_t[]){1, 10},
                 (int32_t[]){40, 1}, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_guarded_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_malformed_guard_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_masked_rows_clamped, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_ring_clamp_needs_feature, ut_setup, ut_teardown),
        cmocka_unit_test(test_window_read_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
