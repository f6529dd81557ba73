/* test_rt_adapt.c: the session's share policy (runtime/rt_adapt.c). The ranks follow
 * the work bounds; a choice among one policy never trials; with two, each period
 * starts with RT_HEAD runs of the best policy, trials each policy for RT_TRIAL runs in
 * a row and then runs the one of the lowest median trial time (one slow run of a trial
 * does not decide; sharing more must win by a margin), and the next period measures
 * again (the host's load changes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rt_adapt.h"

/* Runs n runs of a, the run of policy p taking us[p] microseconds; returns a bit
 * mask of the policies used. */
static uint32_t run(RtAdapt *a, int n, const double us[RT_NPOLICY]) {
    uint32_t used = 0;
    for (int i = 0; i < n; i++) {
        int p = rt_adapt_policy(a);
        used |= 1u << p;
        rt_adapt_record(a, p, us[p]);
    }
    return used;
}

static void test_ranks(void **state) {
    (void)state;
    assert_int_equal(rt_adapt_rank(1e9), 0);
    assert_int_equal(rt_adapt_rank(rt_adapt_share_work(0)), 0);
    assert_int_equal(rt_adapt_rank(rt_adapt_share_work(0) - 1), 1);
    assert_int_equal(rt_adapt_rank(rt_adapt_share_work(1)), 1);
    assert_int_equal(rt_adapt_rank(rt_adapt_share_work(2)), 2);
    assert_int_equal(rt_adapt_rank(rt_adapt_share_work(2) - 1), RT_NPOLICY);
    assert_int_equal(rt_adapt_rank(0), RT_NPOLICY);
    for (int p = 1; p < RT_NPOLICY; p++)
        assert_true(rt_adapt_share_work(p) < rt_adapt_share_work(p - 1));
}

static void test_one_policy(void **state) {
    (void)state;
    RtAdapt a;
    rt_adapt_init(&a, 0);    /* policy 0 is always there */
    assert_int_equal(run(&a, 1000, (double[]){9, 1, 1}), 1u);
}

static void test_trials(void **state) {
    (void)state;
    RtAdapt a;
    rt_adapt_init(&a, 1u << 2);   /* policies 0 and 2 */
    const double fast2[] = {10, 99, 5}, fast0[] = {5, 99, 10};
    /* the head: the default; then the trials of policy 0 and of policy 2 */
    assert_int_equal(rt_adapt_policy(&a), 0);
    assert_int_equal(run(&a, RT_HEAD + RT_TRIAL, fast2), 1u);
    for (int i = 0; i < RT_TRIAL; i++)
        assert_int_equal(run(&a, 1, fast2), 1u << 2);
    /* the rest of the period (64 runs for two policies): the faster */
    assert_int_equal(run(&a, 64 - RT_HEAD - 2 * RT_TRIAL, fast2), 1u << 2);
    /* next period: its head the best so far, then both trials again */
    assert_int_equal(run(&a, RT_HEAD, fast0), 1u << 2);
    assert_int_equal(run(&a, 2 * RT_TRIAL, fast0), 1u | 1u << 2);
    assert_int_equal(run(&a, 64 - RT_HEAD - 2 * RT_TRIAL, fast0), 1u);
}

static void test_median(void **state) {
    (void)state;
    RtAdapt a;
    rt_adapt_init(&a, 1u << 1);
    /* policy 1 is faster but one of its trial runs is very slow (a preemption) */
    int n = 0;
    for (; n < RT_HEAD + 2 * RT_TRIAL; n++) {
        int p = rt_adapt_policy(&a);
        rt_adapt_record(&a, p, p == 1 && n == RT_HEAD + RT_TRIAL ? 1e6 : p == 1 ? 5 : 10);
    }
    assert_int_equal(rt_adapt_policy(&a), 1);
    /* a run recorded under another policy than the trial's is not its sample */
    rt_adapt_init(&a, 1u << 1);
    run(&a, RT_HEAD, (double[]){10, 5, 0});
    for (int i = 0; i < RT_TRIAL; i++)
        rt_adapt_record(&a, 1, 1);          /* slots of policy 0's trial */
    run(&a, RT_TRIAL, (double[]){10, 5, 0});
    assert_int_equal(rt_adapt_policy(&a), 1);
}

static void test_margin(void **state) {
    (void)state;
    RtAdapt a;
    rt_adapt_init(&a, 1u << 1);
    /* sharing more by 1% faster: a tie, policy 0 stays */
    run(&a, RT_HEAD + 2 * RT_TRIAL, (double[]){100, 99, 0});
    assert_int_equal(rt_adapt_policy(&a), 0);
    /* by 10%: policy 1 */
    rt_adapt_init(&a, 1u << 1);
    run(&a, RT_HEAD + 2 * RT_TRIAL, (double[]){100, 90, 0});
    assert_int_equal(rt_adapt_policy(&a), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_one_policy),
        cmocka_unit_test(test_trials),
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_margin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
