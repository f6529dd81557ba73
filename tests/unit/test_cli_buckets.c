/* test_cli_buckets.c: unit tests of size buckets (spyrec --dim-buckets). The grid
 * (cli/spyrec_bucketgrid.c): symbols bounded alike form one class and take one value
 * per box; a class takes min, max and the numbers between with at most three
 * significant bits; from the bounds' box, boxes are added one at a time, each the one
 * that lowers the expected waste (box volume over size volume, sizes log-uniform per
 * class) the most, the last place kept for the minimum's box; the bounds' own box
 * left out; boxes ordered by product, then
 * lexicographically. The waste is computed here again, size by size, independently of
 * the grid's own bookkeeping.
 * The runtime's choice (runtime/rt_variants.c): of the buckets whose box holds every
 * input's size on its symbolic axes (and the bounds) and holds no other such box, the
 * one with the least modelled time at that size, the first of a tie. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/spyrec_buckets.h"
#include "rt_model.h"

/* Are the boxes in order: product, then lexicographic (no box twice)? */
static void expect_ordered(const int64_t *boxes, int n, int nb)
{
    for (int k = 1; k < nb; k++) {
        const int64_t *a = boxes + (size_t)(k - 1) * (size_t)n, *b = a + n;
        double pa = 1, pb = 1;
        for (int s = 0; s < n; s++)
            pa *= (double)a[s], pb *= (double)b[s];
        assert_true(pa <= pb);
        if (pa == pb)
            assert_true(memcmp(a, b, (size_t)n * sizeof *a) != 0);
    }
}

/* Is x min, max, or a number between with at most three significant bits? */
static bool grid_value(int64_t x, int64_t min, int64_t max)
{
    if (x == min || x == max)
        return x >= min && x <= max;
    while (x >= 8 && x % 2 == 0)
        x /= 2;
    return x < 8;
}

/* Every box within the bounds, on the grid, not the bounds' own, in order. */
static void expect_valid(const int64_t *boxes, int nb, int n, const int64_t *min,
                         const int64_t *max)
{
    expect_ordered(boxes, n, nb);
    for (int k = 0; k < nb; k++) {
        bool bounds = true;
        for (int s = 0; s < n; s++) {
            int64_t v = boxes[(size_t)k * (size_t)n + (size_t)s];
            assert_true(v >= min[s] && v <= max[s]);
            assert_true(grid_value(v, min[s], max[s]));
            bounds &= v == max[s];
        }
        assert_false(bounds);
    }
}

/* The expected waste of boxes (nb of two symbols, plus the bounds) over every size
 * [a, b] within the bounds, each of weight 1/(a*b): the smallest box holding the size,
 * its volume over a*b. */
static double waste2(const int64_t *boxes, int nb, const int64_t *min, const int64_t *max)
{
    double sum = 0, norm = 0;
    for (int64_t a = min[0]; a <= max[0]; a++)
        for (int64_t b = min[1]; b <= max[1]; b++) {
            double best = (double)(max[0] * max[1]);
            for (int k = 0; k < nb; k++)
                if (a <= boxes[2 * k] && b <= boxes[2 * k + 1] &&
                    (double)(boxes[2 * k] * boxes[2 * k + 1]) < best)
                    best = (double)(boxes[2 * k] * boxes[2 * k + 1]);
            sum += best / (double)(a * b) / (double)(a * b);
            norm += 1 / (double)(a * b);
        }
    return sum / norm;
}

/* Drops box [1, 2] (the minimum's) from boxes (nb of two symbols); returns how many
 * are left. */
static int drop_min(int64_t *boxes, int nb)
{
    int n = 0;
    for (int k = 0; k < nb; k++)
        if (boxes[2 * k] != 1 || boxes[2 * k + 1] != 2) {
            boxes[2 * n] = boxes[2 * k], boxes[2 * n + 1] = boxes[2 * k + 1];
            n++;
        }
    return n;
}

/* batch 1..8, seq 2..128 (two classes): the minimum's box [1, 2] comes last; the
 * others of limit L + 1 are those of limit L and one more, which lowers the waste at
 * least as much as any other box of the grid would (brute force over every pair of
 * grid values). */
static void test_greedy(void **st)
{
    (void)st;
    const int64_t min[2] = {1, 2}, max[2] = {8, 128};
    int64_t prev[16 * 2], next[17 * 2];
    int np = cli_bucket_grid(min, max, 2, 6, prev, 16);
    assert_int_equal(np, 5);
    expect_valid(prev, np, 2, min, max);
    assert_memory_equal(prev, min, sizeof min);           /* the smallest: first */
    np = drop_min(prev, np);
    assert_int_equal(np, 4);
    int nn = cli_bucket_grid(min, max, 2, 7, next, 17);
    assert_int_equal(nn, 6);
    expect_valid(next, nn, 2, min, max);
    nn = drop_min(next, nn);
    assert_int_equal(nn, 5);
    int found = 0;                         /* every old box is still there */
    for (int i = 0; i < np; i++)
        for (int k = 0; k < nn; k++)
            found += !memcmp(prev + 2 * i, next + 2 * k, 2 * sizeof *prev);
    assert_int_equal(found, np);
    double got = waste2(next, nn, min, max), best = waste2(prev, np, min, max);
    assert_true(got < best);
    for (int64_t a = 1; a <= 8; a++)
        for (int64_t b = 2; b <= 128; b++) {
            if (!grid_value(b, 2, 128) || (a == 8 && b == 128))
                continue;
            prev[2 * np] = a, prev[2 * np + 1] = b;
            double w = waste2(prev, np + 1, min, max);
            if (w < got - 1e-9 * got)
                fail_msg("adding [%lld, %lld] gives waste %.6f, the grid's choice %.6f",
                         (long long)a, (long long)b, w, got);
        }
    /* room for more: more boxes, less waste */
    int64_t many[64 * 2];
    int nm = cli_bucket_grid(min, max, 2, 16, many, 64);
    assert_int_equal(nm, 15);
    expect_valid(many, nm, 2, min, max);
    assert_true(waste2(many, nm, min, max) < waste2(next, nn, min, max));
}

/* Symbols bounded alike (h and w of an image) take one value in every box: diagonal
 * boxes; batch, bounded otherwise, its own. */
static void test_classes(void **st)
{
    (void)st;
    const int64_t min[3] = {1, 32, 32}, max[3] = {8, 512, 512};
    int64_t boxes[64 * 3];
    for (int limit = 2; limit <= 16; limit += 7) {
        int nb = cli_bucket_grid(min, max, 3, limit, boxes, 64);
        assert_int_equal(nb, limit - 1);
        expect_valid(boxes, nb, 3, min, max);
        for (int k = 0; k < nb; k++)
            assert_int_equal(boxes[3 * k + 1], boxes[3 * k + 2]);
        assert_memory_equal(boxes, min, sizeof min);   /* the minimum's box first */
    }
    /* h and w bounded differently: two classes, boxes need not be diagonal */
    const int64_t max2[3] = {8, 512, 256};
    int nb = cli_bucket_grid(min, max2, 3, 16, boxes, 64);
    assert_int_equal(nb, 15);
    expect_valid(boxes, nb, 3, min, max2);
    int off = 0;
    for (int k = 0; k < nb; k++)
        off += boxes[3 * k + 1] != boxes[3 * k + 2];
    assert_true(off > 0);
}

/* One symbol: with a limit of 2 the box is the minimum's; with 3, the minimum's and
 * the value that minimises the waste (brute force over every grid value between 3 and
 * 100), chosen before the minimum's. */
static void test_one_symbol(void **st)
{
    (void)st;
    int64_t boxes[64], best = 0;
    double least = 0;
    for (int64_t v = 3; v < 100; v++) {
        if (!grid_value(v, 3, 100))
            continue;
        double sum = 0, norm = 0;
        for (int64_t x = 3; x <= 100; x++) {
            sum += (double)(x <= v ? v : 100) / (double)x / (double)x;
            norm += 1 / (double)x;
        }
        if (best == 0 || sum / norm < least)
            least = sum / norm, best = v;
    }
    assert_int_equal(cli_bucket_grid((int64_t[]){3}, (int64_t[]){100}, 1, 2, boxes, 64), 1);
    assert_int_equal(boxes[0], 3);
    assert_int_equal(cli_bucket_grid((int64_t[]){3}, (int64_t[]){100}, 1, 3, boxes, 64), 2);
    assert_int_equal(boxes[0], 3);
    assert_int_equal(boxes[1], best);
    /* every grid value 3..100 is a bucket when the limit allows: 3 4 5 6 7 8 10 12 14 16
     * 20 24 28 32 40 48 56 64 80 96 (20) and the bounds */
    int nb = cli_bucket_grid((int64_t[]){3}, (int64_t[]){100}, 1, 64, boxes, 64);
    assert_int_equal(nb, 20);
    expect_valid(boxes, nb, 1, (int64_t[]){3}, (int64_t[]){100});
}

/* A limit of 1 leaves the bounds only; a fixed-size symbol (min = max) has one value;
 * the cap on the number of boxes is kept; wide ranges of many symbols are thinned to a
 * grid the choice can afford. */
static void test_limits(void **st)
{
    (void)st;
    int64_t boxes[256 * 4];
    assert_int_equal(cli_bucket_grid((int64_t[]){1, 2}, (int64_t[]){8, 128}, 2, 1, boxes, 64), 0);
    int nb = cli_bucket_grid((int64_t[]){5, 1}, (int64_t[]){5, 4}, 2, 16, boxes, 64);
    assert_int_equal(nb, 3);
    for (int k = 0; k < nb; k++)
        assert_int_equal(boxes[2 * k], 5);
    nb = cli_bucket_grid((int64_t[]){1, 32, 32}, (int64_t[]){8, 512, 512}, 3, 256, boxes, 10);
    assert_int_equal(nb, 10);
    const int64_t min[4] = {1, 1, 2, 1}, max[4] = {64, 4096, 1 << 20, 1000};
    nb = cli_bucket_grid(min, max, 4, 255, boxes, 256);
    assert_true(nb >= 1 && nb <= 254);
    expect_valid(boxes, nb, 4, min, max);
}

/* Fills model x as a box [b, q] (tensor 0's axes 0 and 1, symbols 0 and 1) without
 * guards, whose modelled time is us at every size; refs: its two DIMREFS entries. */
static void make_box(spy_model *x, SpyDimRef *refs, int64_t b, int64_t q, double us)
{
    memset(x, 0, sizeof *x);
    refs[0] = (SpyDimRef){0, 0, 0, 0, 1, b};
    refs[1] = (SpyDimRef){0, 1, 1, 0, 2, q};
    x->dimrefs = refs;
    x->ndimrefs = 2;
    x->nsyms = 2;
    x->nvis_in = 1;
    x->device_us = us;
}

/* The runtime's table of boxes (nb of [b, q]) in m, whose bounds are [8, 128]: each
 * box's modelled time its volume, or us[v] where us is given. */
static void make_table(spy_model *m, spy_model *bk, spy_model **vars, SpyDimRef (*refs)[2],
                       const int64_t *boxes, int nb, const double *us)
{
    make_box(m, refs[nb], 8, 128, 8 * 128);
    for (int v = 0; v < nb; v++) {
        make_box(&bk[v], refs[v], boxes[2 * v], boxes[2 * v + 1],
                 us ? us[v] : (double)(boxes[2 * v] * boxes[2 * v + 1]));
        vars[v] = &bk[v];
    }
    m->variants = vars;
    m->nvariants = (uint32_t)nb;
}

/* The box a run of ids[b, q] takes in m (its table boxes): [b, q] of it into got. */
static void picked(const spy_model *m, const int64_t *boxes, int64_t b, int64_t q,
                   int64_t *got)
{
    RtPick memo = {0};
    int64_t dims[SPY_MAX_RANK] = {b, q};
    int v = rt_variant_pick(m, dims, &memo);
    got[0] = v < 0 ? 8 : boxes[2 * v];
    got[1] = v < 0 ? 128 : boxes[2 * v + 1];
    assert_int_equal(rt_variant_pick(m, dims, &memo), v);      /* the memo: the same */
}

/* The choice among a table of boxes (any boxes within the bounds are valid: here batch
 * 1, 2, 4, 8 times seq 2, 8, 32, 128, by product), each as costly as its volume: an
 * input ids[b, q] runs in the first box that holds it; then, for the grid's own boxes,
 * every size runs in a box that holds it and that no earlier box holds. */
static void test_choice(void **st)
{
    (void)st;
    static const int64_t table[15 * 2] = {1, 2,  2, 2,  1, 8,   4, 2,  2, 8,
                                          8, 2,  1, 32, 4, 8,   2, 32, 8, 8,
                                          1, 128, 4, 32, 2, 128, 8, 32, 4, 128};
    spy_model bk[64], outer, *vars[64];
    SpyDimRef refs[65][2];
    make_table(&outer, bk, vars, refs, table, 15, NULL);
    static const struct {
        int64_t b, q;
        int64_t want_b, want_q;   /* the box that must run; 8, 128: the bounds */
    } cases[] = {{1, 2, 1, 2},  {1, 5, 1, 8},    {2, 2, 2, 2},    {2, 5, 2, 8},
                 {3, 5, 4, 8},  {1, 9, 1, 32},   {3, 40, 4, 128}, {5, 2, 8, 2},
                 {5, 3, 8, 8},  {8, 33, 8, 128}, {4, 128, 4, 128}, {1, 128, 1, 128}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got[2];
        picked(&outer, table, cases[i].b, cases[i].q, got);
        if (got[0] != cases[i].want_b || got[1] != cases[i].want_q)
            fail_msg("[%lld, %lld] ran in [%lld, %lld], not [%lld, %lld]",
                     (long long)cases[i].b, (long long)cases[i].q, (long long)got[0],
                     (long long)got[1], (long long)cases[i].want_b, (long long)cases[i].want_q);
    }
    int64_t dims[SPY_MAX_RANK] = {9, 2};                 /* outside: the bounds refuse it */
    RtPick memo = {0};
    assert_int_equal(rt_variant_pick(&outer, dims, &memo), -1);
    assert_true(spy_model_device_us_at(&outer, dims) == -1);
    int64_t boxes[64 * 2];
    int nb = cli_bucket_grid((int64_t[]){1, 2}, (int64_t[]){8, 128}, 2, 16, boxes, 64);
    make_table(&outer, bk, vars, refs, boxes, nb, NULL);
    for (int64_t b = 1; b <= 8; b++)
        for (int64_t q = 2; q <= 128; q++) {
            int64_t d2[SPY_MAX_RANK] = {b, q};
            int v = rt_variant_pick(&outer, d2, &memo);
            if (v >= 0)
                assert_true(b <= boxes[2 * v] && q <= boxes[2 * v + 1]);
            for (int w = 0; w < (v < 0 ? nb : v); w++)   /* no earlier box holds it */
                assert_false(b <= boxes[2 * w] && q <= boxes[2 * w + 1]);
            double want = v < 0 ? 8 * 128 : (double)(boxes[2 * v] * boxes[2 * v + 1]);
            assert_true(spy_model_device_us_at(&outer, d2) == want);
        }
}

/* The choice by modelled time: of the boxes that hold a size and hold no other that
 * does, the one with the least time (the first of a tie); a box around another that
 * holds the size is not taken even when its time is less. */
static void test_choice_by_time(void **st)
{
    (void)st;
    static const int64_t table[3 * 2] = {4, 32, 2, 128, 8, 32};
    spy_model bk[3], outer, *vars[3];
    SpyDimRef refs[4][2];
    int64_t got[2];
    make_table(&outer, bk, vars, refs, table, 3, (double[]){500, 256, 100});
    picked(&outer, table, 2, 20, got);          /* 4x32 (500) or 2x128 (256): 8x32 is */
    assert_true(got[0] == 2 && got[1] == 128);  /* around 4x32 */
    picked(&outer, table, 3, 20, got);          /* 4x32 alone: 8x32 is around it */
    assert_true(got[0] == 4 && got[1] == 32);
    make_table(&outer, bk, vars, refs, table, 3, (double[]){200, 256, 100});
    picked(&outer, table, 2, 20, got);
    assert_true(got[0] == 4 && got[1] == 32);
    int64_t dims[SPY_MAX_RANK] = {2, 20};
    assert_true(spy_model_device_us_at(&outer, dims) == 200);
    make_table(&outer, bk, vars, refs, table, 3, (double[]){256, 256, 100});
    picked(&outer, table, 2, 20, got);          /* a tie: the first (smaller product) */
    assert_true(got[0] == 4 && got[1] == 32);
    make_table(&outer, bk, vars, refs, table, 2, (double[]){2000, 2000});
    picked(&outer, table, 5, 20, got);          /* only the bounds hold it */
    assert_true(got[0] == 8 && got[1] == 128);
    picked(&outer, table, 2, 20, got);          /* the bounds are around both */
    assert_true(got[0] == 4 && got[1] == 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_one_symbol),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_choice_by_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
