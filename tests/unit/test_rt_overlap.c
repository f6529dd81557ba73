/* test_rt_overlap.c: what each program waits for when a schedule entry starts before
 * the one before it is complete (runtime/rt_overlap.c), and runs that use it.
 *
 * Two bottleneck blocks (1 x 1, 3 x 3 and 1 x 1 convolutions with a residual add; the
 * second one's shortcut a 1 x 1 convolution that writes the buffer the kernel before it
 * read), the first one's result also an output that the next kernel reads from the
 * caller's buffer, then three 1 x 1 convolutions, cut over the 32 cores by output
 * channels and by pixels. For every pair of programs of consecutive entries,
 * every DRAM byte of every LOAD and STORE, element by element: a program that reads a
 * byte the other wrote, or writes a byte the other read or wrote, must have the other
 * in its mask; some programs must wait for only part of the entry before (else nothing
 * overlaps). Runs at two threads (overlapped) give the bits of a run at one thread and
 * of one that poisons LX before every program, every time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"
#include "rt_exec.h"
#include "rt_model.h"
#include "spyrt.h"
#include "unit_util.h"

enum { C = 64, CM = 32, H = 28, W = 28, RUNS = 40 };
enum { NB = CM * C + CM * CM * 9 + C * CM, NW = 2 * NB + 2 * C * C }; /* weights: a block's, all */

static const IrOrigin O = {"n", "Test", NULL};

/* relu(s + conv1(relu(conv3(relu(conv1(a)))))), weights from w (CM x C, CM x CM x 9,
 * C x CM floats, in that order); the shortcut s is a, or with ws a 1 x 1 convolution
 * of a (C x C weights), which spyrec schedules after the 3 x 3 one, into the buffer
 * the 3 x 3 one read. */
static ValId block(IrGraph *g, ValId a, const float *w, const float *ws) {
    ValId v1 = ut_const(g, IR_DT_F32, 4, (const int64_t[]){CM, C, 1, 1}, w);
    ValId v3 = ut_const(g, IR_DT_F32, 4, (const int64_t[]){CM, CM, 3, 3}, w + CM * C);
    ValId v2 = ut_const(g, IR_DT_F32, 4, (const int64_t[]){C, CM, 1, 1},
                        w + CM * C + CM * CM * 9);
    ValId h = ir_unary(g, IR_UN_RELU, ut_conv(g, a, v1, 0), &O);
    h = ir_unary(g, IR_UN_RELU, ut_conv(g, h, v3, 1), &O);
    h = ut_conv(g, h, v2, 0);
    ValId sc = a;
    if (ws)
        sc = ut_conv(g, a, ut_const(g, IR_DT_F32, 4, (const int64_t[]){C, C, 1, 1}, ws), 0);
    return ir_unary(g, IR_UN_RELU, ir_binary(g, IR_BIN_ADD, sc, h, &O), &O);
}

/* Two blocks after a relu of the input (which puts it in the arena), the first
 * block's result an output too (read from a caller buffer by the next kernel), then
 * three 1 x 1 convolutions in a row (two buffers of the arena in turn: each kernel
 * writes what the one before it read). */
static IrGraph *build(IrDiag *diag, const float *w) {
    IrGraph *g = ir_graph_new(diag);
    ValId x = ut_input(g, "x", IR_DT_F32, 4, (const int64_t[]){1, C, H, W});
    ValId a = ir_unary(g, IR_UN_RELU, x, &O);
    ValId y1 = block(g, a, w, NULL);
    ir_add_output(g, y1);
    ValId t = block(g, y1, w + NB, w + 2 * NB + C * C);
    ValId v = ut_const(g, IR_DT_F32, 4, (const int64_t[]){C, C, 1, 1}, w + 2 * NB);
    for (int i = 0; i < 3; i++)
        t = ir_unary(g, IR_UN_RELU, ut_conv(g, t, v, 0), &O);
    ir_add_output(g, t);
    return g;
}

/* Per DRAM byte of the arena and of the caller buffers (one byte for all of them: they
 * may be one memory), the programs of an entry that read and that wrote it. */
typedef struct {
    uint64_t *r, *w;         /* [arena bytes] */
    uint64_t ior, iow;
    uint64_t size;
} Bytes;

/* Each element of x's DRAM side marked (bit) or looked up (adding conflicts to *dep). */
static void dma_elems(const spy_model *m, Bytes *b, const SpyDma *x, bool write, uint64_t bit,
                      uint64_t *dep) {
    if (m->segs[x->seg].kind == SPY_SEGK_CONST)
        return;
    bool arena = m->segs[x->seg].kind == SPY_SEGK_ARENA;
    int64_t es = (x->flags & ISA_F_F32) ? 4 : x->esize;
    uint32_t i[ISA_MAX_DIMS] = {0};
    for (;;) {
        int64_t off = x->dram_off;
        for (int d = 0; d < ISA_MAX_DIMS; d++)
            off += (int64_t)i[d] * x->dram_stride[d] * es;
        for (int64_t e = 0; e < es; e++) {
            uint64_t *r = arena ? &b->r[off + e] : &b->ior, *w = arena ? &b->w[off + e] : &b->iow;
            assert_true(!arena || (uint64_t)(off + e) < b->size);
            if (bit)
                *(write ? w : r) |= bit;
            else
                *dep |= *w | (write ? *r : 0);
        }
        int d = ISA_MAX_DIMS - 1;
        for (; d >= 0 && ++i[d] == x->dims[d]; d--)
            i[d] = 0;
        if (d < 0)
            return;
    }
}

/* Marks (bit) or looks up (bit 0: into *dep) every LOAD and STORE of program pd. */
static void program_elems(const spy_model *m, Bytes *b, const SpyProgramDesc *pd, uint64_t bit,
                          uint64_t *dep) {
    for (uint32_t i = 0; i < pd->ninsns; i++) {
        const SpyInsn *in = &m->code[pd->first_insn + i];
        assert_true(in->opcode != ISA_GATHER && in->opcode != ISA_SCATTER);
        if (in->opcode == ISA_LOAD || in->opcode == ISA_STORE)
            dma_elems(m, b, &in->dma, in->opcode == ISA_STORE, bit, dep);
    }
}

/* The program at active position q of schedule entry pos. */
static const SpyProgramDesc *prog(const spy_model *m, uint32_t pos, uint32_t q) {
    uint32_t k = m->schedule[pos];
    return &m->programs[m->kernels[k].first_program + m->active[m->active_first[k] + q]];
}

static uint32_t nactive(const spy_model *m, uint32_t pos) {
    uint32_t k = m->schedule[pos];
    return m->active_first[k + 1] - m->active_first[k];
}

/* Checks every overlapped entry's masks against the bytes; counts the programs whose
 * mask leaves out part of the entry before, and the conflicts found. */
static void expect_sound(const spy_model *m, uint32_t *partial, uint32_t *conflicts) {
    Bytes b = {0};
    for (uint32_t s = 0; s < m->nsegs; s++)
        if (m->segs[s].kind == SPY_SEGK_ARENA)
            b.size = m->segs[s].size;
    b.r = calloc(b.size + 1, sizeof *b.r);
    b.w = calloc(b.size + 1, sizeof *b.w);
    *partial = *conflicts = 0;
    assert_non_null(m->odep_first);
    for (uint32_t pos = 1; pos < m->nsched; pos++) {
        uint32_t np = nactive(m, pos - 1), na = nactive(m, pos);
        assert_true(np > 64 || na > 64 || np == 0 || na == 0 ||
                    m->odep_first[pos] != RT_OV_BARRIER);
        if (m->odep_first[pos] == RT_OV_BARRIER)
            continue;
        memset(b.r, 0, b.size * sizeof *b.r);
        memset(b.w, 0, b.size * sizeof *b.w);
        b.ior = b.iow = 0;
        for (uint32_t q = 0; q < np; q++)
            program_elems(m, &b, prog(m, pos - 1, q), 1ull << q, NULL);
        uint64_t all = np == 64 ? ~0ull : (1ull << np) - 1;
        for (uint32_t j = 0; j < na; j++) {
            uint64_t dep = 0, have = m->odep[m->odep_first[pos] + j];
            program_elems(m, &b, prog(m, pos, j), 0, &dep);
            if (dep & ~have)
                print_message("entry %u program %u: needs %llx, waits for %llx\n", pos, j,
                              (unsigned long long)dep, (unsigned long long)have);
            assert_int_equal(dep & ~have, 0);
            assert_int_equal(have & ~all, 0);
            *partial += have != all;
            *conflicts += (uint32_t)__builtin_popcountll(dep);
        }
    }
    free(b.r);
    free(b.w);
}

/* Runs m once on x with the session options so into y (both outputs, one after the
 * other). */
static void run(spy_model *m, const spy_session_options *so, const float *x, float *y) {
    spy_session *s = NULL;
    size_t nx = (size_t)C * H * W;
    assert_int_equal(spy_session_create(m, so, &s), SPY_OK);
    assert_int_equal(spy_session_run(s, (const void *[]){x}, (void *[]){y, y + nx}), SPY_OK);
    spy_session_free(s);
}

static void test_overlap(void **state) {
    (void)state;
    size_t nx = (size_t)C * H * W;
    float *w = malloc(NW * 4), *x = malloc(nx * 4), *ref = malloc(2 * nx * 4);
    float *y = malloc(2 * nx * 4);
    ut_fill(w, NW, 0.2f, 0.0f);
    ut_fill(x, (int64_t)nx, 1.0f, 0.1f);
    IrDiag diag;
    ir_diag_init(&diag, "overlap.ir");
    IrGraph *g = build(&diag, w);
    uint8_t *buf = NULL;
    spy_model *m = ut_compile_load(g, &buf);

    uint32_t partial, conflicts;
    expect_sound(m, &partial, &conflicts);
    print_message("%u entries; programs waiting for part of the entry before: %u; "
                  "conflicting pairs: %u\n", m->nsched, partial, conflicts);
    assert_true(partial > 0);                  /* something overlaps */
    assert_true(conflicts > 0);                /* and the check saw dependences */

    spy_session_options poison = {.num_threads = 2, .debug_lx_poison = 1};
    spy_session_options one = {.num_threads = 1}, two = {.num_threads = 2};
    run(m, &poison, x, ref);
    run(m, &one, x, y);
    assert_memory_equal(y, ref, 2 * nx * 4);
    spy_session *s = NULL;                     /* overlapped, run after run */
    assert_int_equal(spy_session_create(m, &two, &s), SPY_OK);
    for (int t = 0; t < RUNS; t++) {
        memset(y, 0xff, 2 * nx * 4);
        assert_int_equal(spy_session_run(s, (const void *[]){x}, (void *[]){y, y + nx}),
                         SPY_OK);
        assert_memory_equal(y, ref, 2 * nx * 4);
    }
    spy_session_free(s);
    spy_model_free(m);
    free(buf);
    ir_graph_free(g);
    ir_diag_free(&diag);
    free(w), free(x), free(ref), free(y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
