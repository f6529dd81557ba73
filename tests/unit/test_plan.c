/* test_plan.c: unit tests of the kernel plan's verifier (passes/plan/plan_verify.c).
 * Each test compiles a small text-IR graph through the pipeline, checks that
 * plan_verify accepts the plan, breaks one invariant by hand and checks that the
 * verifier reports it: a node in two kernels, a gap in the cores' item ranges,
 * overlapping LX buffers (anchors, or two values of one program), overlapping DRAM ranges of live values, an access wider
 * than a (tiny) core window. Also the cores' items of a graph with symbolic dims:
 * dealt round-robin (plan_assign_cores, plan_kernel_item, plan_item_core), and over a
 * 2-d grid spread so that a box of valid items is balanced too (plan_deal). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/fe.h"
#include "ir.h"
#include "isa.h"
#include "passes/pass.h"
#include "passes/plan/plan.h"

/* A compiled graph and what compiled it. */
typedef struct {
    IrDiag d;
    IrGraph *g;
    SpyTarget t;
} Px;

/* Parse text and run the whole pipeline on it; the plan must verify. */
static void px_compile(Px *x, const char *text)
{
    ir_diag_init(&x->d, "test.ir");
    x->g = ir_parse(text, &x->d);
    assert_non_null(x->g);
    fe_default_target(&x->t);
    PassOptions po = {.opt_level = 2, .target = &x->t, .verify = true};
    bool ok = pass_run_pipeline(x->g, &po);
    if (!ok)
        ir_diag_print(&x->d, stderr);
    assert_true(ok);
    assert_true(plan_verify(x->g, &x->t, "dram_plan"));
    assert_int_equal(x->d.nerrors, 0);
}

/* Two matmul kernels whose results are live together, then a reduction kernel (with
 * the prologue add, relu) reading both. */
static const char *const GRAPH =
    "graph \"plan\" {\n"
    "  input %x: f32[64,32]\n"
    "  const %w: f32[32,32]\n"
    "  const %v: f32[32,32]\n"
    "  %m: f32[64,32] = matmul(%x, %w)\n"
    "  %n: f32[64,32] = matmul(%x, %v)\n"
    "  %a: f32[64,32] = binary(%m, %n) {fn=add}\n"
    "  %r: f32[64,32] = unary(%a) {fn=relu}\n"
    "  %s: f32[64] = reduce(%r) {fn=sum, axes=[1], keepdims=0}\n"
    "  output %s\n"
    "}\n";

/* A column sum of a 2 MiB matrix: every core reads whole columns. */
static const char *const COLUMN_SUM =
    "graph \"cols\" {\n"
    "  input %x: f32[1024,512]\n"
    "  %s: f32[512] = reduce(%x) {fn=sum, axes=[0], keepdims=0}\n"
    "  output %s\n"
    "}\n";

/* Fuse: the first matmul node listed by the reduction kernel too. */
static void node_in_two_kernels(Plan *p, SpyTarget *t)
{
    assert_int_equal(p->nkernels, 3);
    IrKernel *k2 = &p->kernels[2];
    k2->epi[k2->nepi++] = p->kernels[0].anchor;   /* room: epi holds nmem + 1 */
}

/* Divide: the last core stops one item short of the grid's end. */
static void core_range_gap(Plan *p, SpyTarget *t)
{
    IrKernel *k = &p->kernels[2];
    assert_true(k->nitems > 1);
    k->core_first[k->ncores]--;
}

/* Divide: one core's range starts before the previous one ends. */
static void core_range_overlap(Plan *p, SpyTarget *t)
{
    IrKernel *k = &p->kernels[2];
    uint32_t c = 1;
    while (c < k->ncores && k->core_first[c] == 0)
        c++;
    assert_true(c < k->ncores && k->core_first[c + 1] > k->core_first[c]);
    k->core_first[c + 1] = k->core_first[c] - 1;
}

/* Tile: the matmul's B buffer placed over its A buffer. */
static void lx_overlap(Plan *p, SpyTarget *t)
{
    IrKernel *k = &p->kernels[0];
    assert_int_equal(k->kind, IR_KK_CONTRACT);
    assert_true(k->buf_bytes[0] > 0 && k->buf_bytes[1] > 0);
    k->buf[1] = k->buf[0];
}

/* Tile: the reduction prologue's two loads (both live until its add) in one buffer. */
static void lx_values_overlap(Plan *p, SpyTarget *t)
{
    IrTileProg *tp = &p->kernels[2].tp[0];
    IrTileVal *first = NULL;
    for (uint32_t i = 0; i < tp->nvals; i++) {
        if (tp->vals[i].src != IR_TV_LOAD)
            continue;
        if (first) {
            tp->vals[i].lx = first->lx;
            return;
        }
        first = &tp->vals[i];
    }
    fail_msg("the prologue loads fewer than two values");
}

/* Tile: a kernel using more LX than the budget. */
static void lx_budget(Plan *p, SpyTarget *t)
{
    p->kernels[1].lx_bytes = t->lx_budget_bytes + 128;
}

/* DRAM plan: the second matmul's result (live with the first) moved onto the first. */
static void dram_overlap(Plan *p, SpyTarget *t)
{
    PlanValue *m = &p->val[p->kernels[0].out], *n = &p->val[p->kernels[1].out];
    assert_int_equal(m->seg, ISA_SEG_ARENA);
    assert_int_equal(n->seg, ISA_SEG_ARENA);
    assert_int_not_equal(m->dram_offset, n->dram_offset);
    n->dram_offset = m->dram_offset;
}

/* DRAM accesses: with a 1 MiB window a core's reads of the column sum's input do not
 * fit (the default 256 MiB window holds them). */
static void tiny_window(Plan *p, SpyTarget *t)
{
    t->core_window_mib = 1;
}

/* DRAM accesses: a load whose base walks past the end of its value's storage. */
static void access_outside(Plan *p, SpyTarget *t)
{
    IrTileProg *tp = &p->kernels[0].tp[0];
    uint32_t i = 0;
    while (i < tp->nvals && tp->vals[i].src != IR_TV_LOAD)
        i++;
    assert_true(i < tp->nvals);
    tp->vals[i].acc.base += 1 << 20;
}

/* One case: a graph, how to break its plan, after which pass the verifier must
 * object and with what words. */
typedef struct {
    const char *graph;
    void (*corrupt)(Plan *p, SpyTarget *t);
    const char *after, *want;
} Case;

/* Compile the case's graph (its plan verifies), break the plan, and expect the
 * verifier's message. */
static void run_case(void **st)
{
    const Case *c = *st;
    Px x;
    px_compile(&x, c->graph);
    c->corrupt(x.g->plan, &x.t);
    assert_false(plan_verify(x.g, &x.t, c->after));
    bool found = false;
    for (int i = 0; i < x.d.nmsgs; i++)
        found |= strstr(x.d.msgs[i], c->want) != NULL;
    if (!found)
        fail_msg("no message containing '%s' (first: %s)", c->want,
                 x.d.nmsgs ? x.d.msgs[0] : "-");
    ir_graph_free(x.g);
    ir_diag_free(&x.d);
}

static const Case NODE_TWICE = {GRAPH, node_in_two_kernels, "fuse", "is in 2 kernels"};
static const Case CORE_GAP = {GRAPH, core_range_gap, "divide", "cores run items"};
static const Case CORE_OVERLAP = {GRAPH, core_range_overlap, "divide", "starts at item"};
static const Case LX_OVERLAP = {GRAPH, lx_overlap, "tile", "overlap while both are live"};
static const Case LX_VALUES = {GRAPH, lx_values_overlap, "tile",
                               "overlap while both are live"};
static const Case LX_BUDGET = {GRAPH, lx_budget, "tile", "more than the budget"};
static const Case DRAM_OVERLAP = {GRAPH, dram_overlap, "dram_plan",
                                  "overlap in DRAM while both are live"};
static const Case WINDOW = {COLUMN_SUM, tiny_window, "dram_plan", "MiB window"};
static const Case OUTSIDE = {COLUMN_SUM, access_outside, "dram_plan", "outside its"};

/* Divide in a graph with symbolic dims: 100 items over the cores are dealt round-robin
 * (core c runs items c, c + cores, ...), each item once, and plan_item_core names the
 * core whose positions hold it; without symbolic dims each core's items are a range. */
static void dealt_items(void **st)
{
    Px x;
    px_compile(&x, COLUMN_SUM);
    IrKernel *k = &x.g->plan->kernels[0];
    for (int sym = 1; sym >= 0; sym--) {
        k->grid = (IrGrid){.rank = 1, .ext = {100}, .chunk = {1}};
        x.g->nsymdims = (uint32_t)sym;           /* as if an input dim were symbolic */
        plan_assign_cores(x.g, k, x.t.cores);
        x.g->nsymdims = 0;
        assert_int_equal(k->dealt, sym);
        bool seen[100] = {false};
        for (uint32_t c = 0; c < k->ncores; c++)
            for (uint64_t p = k->core_first[c]; p < k->core_first[c + 1]; p++) {
                int64_t s[IR_ITER_MAX], l[IR_ITER_MAX];
                uint64_t it = plan_kernel_item(k, p, s, l);
                assert_true(it < 100 && !seen[it]);
                seen[it] = true;
                assert_int_equal(s[0], (int64_t)it);
                assert_int_equal(l[0], 1);
                assert_int_equal(sym ? it % k->ncores : p, sym ? c : it);
                assert_int_equal(plan_item_core(k, it), c);
            }
        for (int i = 0; i < 100; i++)
            assert_true(seen[i]);
    }
    ir_graph_free(x.g);
    ir_diag_free(&x.d);
}

/* Max over the cores of kernel k's items in the box [0, b) x [0, v) of its 2-d grid
 * of one-chunk items (the items a guarded run at those sizes keeps). */
static uint32_t box_load(const IrKernel *k, int64_t b, int64_t v)
{
    uint32_t most = 0;
    for (uint32_t c = 0; c < k->ncores; c++) {
        uint32_t n = 0;
        for (uint64_t p = k->core_first[c]; p < k->core_first[c + 1]; p++) {
            int64_t s[IR_ITER_MAX], l[IR_ITER_MAX];
            plan_kernel_item(k, p, s, l);
            n += s[0] < b && s[1] < v;
        }
        most = n > most ? n : most;
    }
    return most;
}

/* Divide with symbolic dims over a 2-d grid (8 images of 24 row chunks, as a 1x1
 * convolution's in a box of 8 images): plan_deal keeps every prefix of whole images
 * as balanced as round-robin, and spreads a box of fewer chunks too: at 3 images of
 * 20 chunks (60 items) no core runs more than 2 (round-robin: cores 0..3 run 3). No
 * box of the sizes costs more than one item over its fair share. */
static void dealt_boxes(void **st)
{
    Px x;
    px_compile(&x, COLUMN_SUM);
    IrKernel *k = &x.g->plan->kernels[0];
    k->grid = (IrGrid){.rank = 2, .ext = {8, 24}, .chunk = {1, 1}};
    x.g->nsymdims = 1;
    plan_assign_cores(x.g, k, x.t.cores);
    x.g->nsymdims = 0;
    assert_non_null(k->deal);
    bool seen[192] = {false};
    for (uint32_t c = 0; c < k->ncores; c++)
        for (uint64_t p = k->core_first[c]; p < k->core_first[c + 1]; p++) {
            int64_t s[IR_ITER_MAX], l[IR_ITER_MAX];
            uint64_t it = plan_kernel_item(k, p, s, l);
            assert_true(it < 192 && !seen[it]);
            seen[it] = true;
            assert_int_equal(plan_item_core(k, it), c);
        }
    for (int64_t b = 1; b <= 8; b++) {
        int64_t fair = (b * 24 + x.t.cores - 1) / x.t.cores;
        assert_int_equal(box_load(k, b, 24), fair);
        for (int64_t v = 1; v <= 24; v++)
            assert_true(box_load(k, b, v) <= (b * v + x.t.cores - 1) / x.t.cores + 1);
    }
    assert_int_equal(box_load(k, 3, 20), 2);
    ir_graph_free(x.g);
    ir_diag_free(&x.d);
}

/* A cmocka test named after its case. */
#define CASE(c) {#c, run_case, NULL, NULL, (void *)&c}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE(NODE_TWICE),
        CASE(CORE_GAP),
        CASE(CORE_OVERLAP),
        CASE(LX_OVERLAP),
        CASE(LX_VALUES),
        CASE(LX_BUDGET),
        CASE(DRAM_OVERLAP),
        CASE(WINDOW),
        CASE(OUTSIDE),
        cmocka_unit_test(dealt_items),
        cmocka_unit_test(dealt_boxes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
