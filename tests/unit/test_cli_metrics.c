/* test_cli_metrics.c: unit tests of spyrun --check's accuracy metrics
 * (cli/spyrun_metrics.c): relative L2 error and cosine similarity against values
 * worked out by hand, zero and non-finite tensors, accumulation in double precision,
 * top-1 agreement with the 1% ambiguity rule at its boundary, and the --metric
 * parser and thresholds. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"

/* Metrics of two float vectors with the given last-axis length. */
static CliMetrics met(const float *got, const float *exp, size_t n, int64_t row_len)
{
    CliMetrics m;
    cli_metrics(IR_DT_F32, got, exp, n, row_len, &m);
    return m;
}

/* rel-l2 and cosine of small vectors, by hand. */
static void test_l2_cosine(void **st)
{
    (void)st;
    float e[2] = {3, 4}, g[2] = {3, 4.5f}, o[2] = {-4, 3};
    CliMetrics m = met(g, e, 2, 0);
    assert_float_equal(m.rel_l2, 0.5 / 5.0, 1e-15);
    assert_float_equal(m.cosine, (9 + 18) / (5.0 * sqrt(9 + 20.25)), 1e-15);
    assert_false(m.has_top1);
    m = met(e, e, 2, 0);
    assert_true(m.rel_l2 == 0 && m.cosine == 1.0);
    m = met(o, e, 2, 0); /* orthogonal */
    assert_float_equal(m.cosine, 0.0, 1e-15);
    assert_float_equal(m.rel_l2, sqrt(49 + 1) / 5.0, 1e-15);
    float z[2] = {0, 0};
    m = met(z, z, 2, 0);
    assert_true(m.rel_l2 == 0 && m.cosine == 1.0);
    m = met(g, z, 2, 0);
    assert_true(isinf(m.rel_l2) && m.cosine == 0.0);
    m = met(z, e, 2, 0);
    assert_true(m.rel_l2 == 1.0 && m.cosine == 0.0);
    m = met(z, z, 0, 0); /* empty tensor */
    assert_true(m.rel_l2 == 0 && m.cosine == 1.0);
}

/* NaN in both at the same place (and equal infinities) is left out; any other
 * non-finite value fails every threshold. */
static void test_nonfinite(void **st)
{
    (void)st;
    float e[3] = {1, NAN, INFINITY}, g[3] = {1, NAN, INFINITY}, h[3] = {1, 2, INFINITY};
    CliMetrics m = met(g, e, 3, 0);
    assert_true(m.rel_l2 == 0 && m.cosine == 1.0);
    m = met(h, e, 3, 0);
    assert_true(isinf(m.rel_l2) && isnan(m.cosine));
    CliMetricSpec spec = {0};
    char why[64];
    assert_true(cli_metric_parse("cosine=0", &spec));
    assert_false(cli_metrics_pass(&m, &spec, why, sizeof why));
}

/* Sums in double: a million ones against ones plus 2^-20 (a float sum of the squared
 * differences would stall long before the end). */
static void test_double_accumulation(void **st)
{
    (void)st;
    enum { N = 1 << 20 };
    float *e = malloc(N * sizeof *e), *g = malloc(N * sizeof *g);
    assert_non_null(e);
    assert_non_null(g);
    for (int i = 0; i < N; i++) {
        e[i] = 1.0f;
        g[i] = 1.0f + 0x1p-20f;
    }
    CliMetrics m = met(g, e, N, 0);
    assert_float_equal(m.rel_l2, 0x1p-20, 1e-15);
    free(e);
    free(g);
}

/* Top-1 per row: agreement, disagreement, ties and gaps under 1% of |top-1| are
 * ambiguous, a gap of exactly 1% counts, negative rows, NaN in the golden row. */
static void test_top1(void **st)
{
    (void)st;
    float e[7][3] = {{0.1f, 0.9f, 0},      /* agrees */
                     {0.9f, 0.1f, 0},      /* got says 1: disagrees */
                     {0.5f, 0.5f, 0},      /* tie: ambiguous */
                     {100, 99.0625f, 0},   /* gap 0.94% : ambiguous */
                     {100, 99, 0},         /* gap exactly 1%: counted, agrees */
                     {-3, -1, -2},         /* top-1 index 1, gap 1: counted, agrees */
                     {NAN, 1, 0}};         /* NaN: ambiguous */
    float g[7][3] = {{0.2f, 0.8f, 0},   {0.1f, 0.9f, 0}, {0.4f, 0.6f, 0}, {99, 100, 0},
                     {100, 99.5f, 0},   {-3, -1.5f, -2}, {0, 1, 0}};
    CliMetrics m = met(&g[0][0], &e[0][0], 21, 3);
    assert_true(m.has_top1);
    assert_int_equal(m.top1_rows, 4);
    assert_int_equal(m.top1_agree, 3);
    assert_int_equal(m.top1_ambiguous, 3);
    CliMetricSpec spec = {0};
    char why[64] = "";
    assert_true(cli_metric_parse("top1=0.75", &spec));
    assert_true(cli_metrics_pass(&m, &spec, why, sizeof why));
    assert_true(cli_metric_parse("top1=1", &spec));
    assert_false(cli_metrics_pass(&m, &spec, why, sizeof why));
    assert_string_equal(why, "top1 3/4 < 1");
    /* a NaN in the got row disagrees */
    float gn[3] = {0.1f, NAN, 0};
    m = met(gn, &e[0][0], 3, 3);
    assert_int_equal(m.top1_rows, 1);
    assert_int_equal(m.top1_agree, 0);
    m = met(&g[0][0], &e[0][0], 3, 1); /* last axis of 1: no top-1 */
    assert_false(m.has_top1);
}

/* --metric parsing and thresholds: every given one must hold. */
static void test_spec(void **st)
{
    (void)st;
    CliMetricSpec spec = {0};
    assert_false(cli_metric_any(&spec));
    assert_true(cli_metric_parse("rel-l2=0.02", &spec));
    assert_true(cli_metric_parse("cosine=0.999", &spec));
    assert_true(cli_metric_any(&spec));
    assert_false(cli_metric_parse("rel-l2", &spec));
    assert_false(cli_metric_parse("rel-l2=", &spec));
    assert_false(cli_metric_parse("rel-l2=-1", &spec));
    assert_false(cli_metric_parse("rel-l2=1x", &spec));
    assert_false(cli_metric_parse("cosine=1.5", &spec));
    assert_false(cli_metric_parse("top1=2", &spec));
    assert_false(cli_metric_parse("rel=0.1", &spec));
    assert_false(cli_metric_parse("rel-l22=0.1", &spec));
    assert_false(cli_metric_parse("cosine=nan", &spec));
    CliMetrics m = {.rel_l2 = 0.01, .cosine = 0.9995};
    char why[64] = "";
    assert_true(cli_metrics_pass(&m, &spec, why, sizeof why));
    m.rel_l2 = 0.03;
    assert_false(cli_metrics_pass(&m, &spec, why, sizeof why));
    assert_string_equal(why, "rel-l2 0.03 > 0.02");
    m.rel_l2 = 0.02;
    m.cosine = 0.998;
    assert_false(cli_metrics_pass(&m, &spec, why, sizeof why));
    assert_string_equal(why, "cosine 0.99800000 < 0.999");
    assert_true(cli_metric_parse("top1=1", &spec)); /* no top-1 rows: holds */
    m.cosine = 0.999;
    assert_true(cli_metrics_pass(&m, &spec, why, sizeof why));
}

/* Elements of other host dtypes are read as their values. */
static void test_elem(void **st)
{
    (void)st;
    uint16_t h[2] = {0x3c00, 0xc000}; /* f16 1, -2 */
    assert_true(cli_elem_f(IR_DT_F16, h, 0) == 1.0 && cli_elem_f(IR_DT_F16, h, 1) == -2.0);
    uint16_t b[1] = {0x3f80};          /* bf16 1 */
    assert_true(cli_elem_f(IR_DT_BF16, b, 0) == 1.0);
    double d[1] = {0.1};
    assert_true(cli_elem_f(IR_DT_F64, d, 0) == 0.1);
    CliMetrics m;
    uint16_t g[2] = {0x3c00, 0xc000};
    cli_metrics(IR_DT_F16, g, h, 2, 2, &m);
    assert_true(m.rel_l2 == 0 && m.top1_agree == 1);
    assert_float_equal(m.cosine, 1.0, 1e-15);
}

/* META's half_outputs line (spyrec's fe_half_outputs): the listed outputs, only from a
 * line of its own, indices past 63 and a stray character end nothing else. */
static void test_half_outputs(void **st)
{
    (void)st;
    assert_true(cli_half_outputs_mask(NULL) == 0);
    assert_true(cli_half_outputs_mask("compiler=spyrec 1\nflags=\n") == 0);
    assert_true(cli_half_outputs_mask("compiler=spyrec 1\nflags=\nhalf_outputs=0,2\n") == 5);
    assert_true(cli_half_outputs_mask("half_outputs=63,64,1\n") == ((1ull << 63) | 2));
    assert_true(cli_half_outputs_mask("half_outputs=3\nother=1,2\n") == 8);
    assert_true(cli_half_outputs_mask("flags=--x half_outputs=1\n") == 0);   /* not a line */
    assert_true(cli_half_outputs_mask("half_outputs=x\n") == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_l2_cosine),  cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_double_accumulation), cmocka_unit_test(test_top1),
        cmocka_unit_test(test_spec),       cmocka_unit_test(test_elem),
        cmocka_unit_test(test_half_outputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
