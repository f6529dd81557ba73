/* test_cli_buckets.c: unit tests of size buckets (spyrec --dim-buckets). The grid
 * (cli/spyrec_buckets.c): per symbol min, the powers of two between and max; the bounds'
 * own box left out; coarsening, one value at a time, of the symbol with the most values
 * while the product is above the limit (the value between the closest neighbours, min
 * when only min and max are left); boxes ordered by product, then lexicographically.
 * The runtime's choice (runtime/rt_variants.c): the first bucket whose box holds every
 * input's size on its symbolic axes, else the bounds. */
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

/* Box k's caps must be want[0..n). */
static void expect_box(const int64_t *boxes, int n, int k, const int64_t *want)
{
    for (int s = 0; s < n; s++)
        assert_int_equal(boxes[(size_t)k * (size_t)n + (size_t)s], want[s]);
}

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

/* batch 1..8, seq 2..128, 16 buckets: seq loses 4, 16 and 64 (4 x 4 = 16 boxes; the
 * bounds' own one is the bundle itself: 15). */
static void test_two_symbols(void **st)
{
    (void)st;
    int64_t boxes[64 * 2];
    int nb = cli_bucket_grid((int64_t[]){1, 2}, (int64_t[]){8, 128}, 2, 16, boxes, 64);
    assert_int_equal(nb, 15);
    expect_ordered(boxes, 2, nb);
    expect_box(boxes, 2, 0, (int64_t[]){1, 2});
    expect_box(boxes, 2, 1, (int64_t[]){2, 2});
    expect_box(boxes, 2, 2, (int64_t[]){1, 8});
    expect_box(boxes, 2, 14, (int64_t[]){4, 128});
    for (int k = 0; k < nb; k++) {
        int64_t b = boxes[2 * k], q = boxes[2 * k + 1];
        assert_true(b == 1 || b == 2 || b == 4 || b == 8);
        assert_true(q == 2 || q == 8 || q == 32 || q == 128);
        assert_false(b == 8 && q == 128);
    }
    /* room for all 28: nothing coarsened */
    assert_int_equal(cli_bucket_grid((int64_t[]){1, 2}, (int64_t[]){8, 128}, 2, 28, boxes, 64),
                     27);
}

/* One symbol: min not a power of two, coarsening by closest neighbours. */
static void test_one_symbol(void **st)
{
    (void)st;
    int64_t boxes[64];
    int nb = cli_bucket_grid((int64_t[]){32}, (int64_t[]){512}, 1, 16, boxes, 64);
    assert_int_equal(nb, 4);
    expect_box(boxes, 1, 0, (int64_t[]){32});
    expect_box(boxes, 1, 3, (int64_t[]){256});
    /* 3, 4, 8, 16, 32, 64, 100 -> 4 left: 4 (8/3), then 64 (100/32), then 16 (32/8) go */
    nb = cli_bucket_grid((int64_t[]){3}, (int64_t[]){100}, 1, 4, boxes, 64);
    assert_int_equal(nb, 3);
    expect_box(boxes, 1, 0, (int64_t[]){3});
    expect_box(boxes, 1, 1, (int64_t[]){8});
    expect_box(boxes, 1, 2, (int64_t[]){32});
    /* two values left, one more to go: min goes, max stays: no bucket */
    assert_int_equal(cli_bucket_grid((int64_t[]){3}, (int64_t[]){100}, 1, 1, boxes, 64), 0);
}

/* A limit of 1 leaves the bounds only; a fixed-size symbol (min = max) has one value;
 * the cap on the number of boxes is kept. */
static void test_limits(void **st)
{
    (void)st;
    int64_t boxes[256 * 3];
    assert_int_equal(cli_bucket_grid((int64_t[]){1, 2}, (int64_t[]){8, 128}, 2, 1, boxes, 64), 0);
    int nb = cli_bucket_grid((int64_t[]){5, 1}, (int64_t[]){5, 4}, 2, 16, boxes, 64);
    assert_int_equal(nb, 2);
    expect_box(boxes, 2, 0, (int64_t[]){5, 1});
    expect_box(boxes, 2, 1, (int64_t[]){5, 2});
    nb = cli_bucket_grid((int64_t[]){1, 32, 32}, (int64_t[]){8, 512, 512}, 3, 16, boxes, 256);
    assert_true(nb >= 1 && nb <= 15);
    expect_ordered(boxes, 3, nb);
    expect_box(boxes, 3, 0, (int64_t[]){1, 32, 32});
    nb = cli_bucket_grid((int64_t[]){1, 32, 32}, (int64_t[]){8, 512, 512}, 3, 256, boxes, 10);
    assert_int_equal(nb, 10);
}

/* The choice among the buckets of the grid of test_two_symbols: an input ids[b, q]
 * (tensor 0, symbols 0 and 1) runs in the first box, in grid order, that holds it. */
static void test_choice(void **st)
{
    (void)st;
    int64_t boxes[64 * 2];
    int nb = cli_bucket_grid((int64_t[]){1, 2}, (int64_t[]){8, 128}, 2, 16, boxes, 64);
    spy_model bk[64], outer, *vars[64];
    SpyDimRef refs[64][2];
    memset(&outer, 0, sizeof outer);
    for (int v = 0; v < nb; v++) {
        memset(&bk[v], 0, sizeof bk[v]);
        refs[v][0] = (SpyDimRef){0, 0, 0, 0, 1, boxes[2 * v]};
        refs[v][1] = (SpyDimRef){0, 1, 1, 0, 2, boxes[2 * v + 1]};
        bk[v].dimrefs = refs[v];
        bk[v].ndimrefs = 2;
        bk[v].nvis_in = 1;
        vars[v] = &bk[v];
    }
    outer.variants = vars;
    outer.nvariants = (uint32_t)nb;
    static const struct {
        int64_t b, q;
        int64_t want_b, want_q;   /* the box that must run; 8, 128: the bounds */
    } cases[] = {{1, 2, 1, 2},  {1, 5, 1, 8},    {2, 2, 2, 2},    {2, 5, 2, 8},
                 {3, 5, 4, 8},  {1, 9, 1, 32},   {3, 40, 4, 128}, {5, 2, 8, 2},
                 {5, 3, 8, 8},  {8, 33, 8, 128}, {4, 128, 4, 128}, {1, 128, 1, 128}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t dims[SPY_MAX_RANK] = {cases[i].b, cases[i].q};
        int v = rt_variant_pick(&outer, dims);
        int64_t gb = v < 0 ? 8 : boxes[2 * v], gq = v < 0 ? 128 : boxes[2 * v + 1];
        if (gb != cases[i].want_b || gq != cases[i].want_q)
            fail_msg("[%lld, %lld] ran in [%lld, %lld], not [%lld, %lld]",
                     (long long)cases[i].b, (long long)cases[i].q, (long long)gb,
                     (long long)gq, (long long)cases[i].want_b, (long long)cases[i].want_q);
        for (int w = 0; w < v; w++)          /* no earlier box holds it */
            assert_false(cases[i].b <= boxes[2 * w] && cases[i].q <= boxes[2 * w + 1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_symbols),
        cmocka_unit_test(test_one_symbol),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
