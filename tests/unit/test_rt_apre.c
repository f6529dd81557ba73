/* test_rt_apre.c: a session's copies of constant A operands (runtime/rt_apre.c).
 *
 * The table: a first request gets room to fill; until it is published, a request for
 * the same key gets nothing (the caller transposes for itself), after it the same
 * floats; other keys (another address, row stride, rows, k or layout) their own
 * copies; a request past the budget nothing, and many keys (the table grows) each
 * their own copy, also once the huge-page arena they are cut from is full. The kernels' use of the copies is checked bit for bit in
 * test_rt_kernels (kinds MM_*_KEPT). A thread's trail (rt_apre_take_on) learns which
 * copy it read after which, per end of the program lists it takes from, and offers it
 * the next time, once published.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_exec.h"

static void test_apre_fill_publish(void **state) {
    (void)state;
    static float a[64];
    RtApre *t = rt_apre_create(4096);
    assert_non_null(t);
    RtAKey k = {a, 16, 4, 16, RT_APRE_CHAN | 16};
    bool fill;
    float *p = rt_apre_take(t, &k, 256, &fill);
    assert_non_null(p);
    assert_true(fill);
    for (int i = 0; i < 64; i++)
        p[i] = (float)i;
    assert_null(rt_apre_take(t, &k, 256, &fill));   /* not published yet */
    assert_false(fill);
    rt_apre_filled(t, &k);
    float *q = rt_apre_take(t, &k, 256, &fill);
    assert_ptr_equal(q, p);
    assert_false(fill);
    assert_true(q[63] == 63.0f);
    RtAKey other[] = {{a + 1, 16, 4, 16, k.kb}, {a, 17, 4, 16, k.kb}, {a, 16, 3, 16, k.kb},
                      {a, 16, 4, 15, k.kb}, {a, 16, 4, 16, 256}};
    for (unsigned i = 0; i < sizeof other / sizeof *other; i++) {
        float *o = rt_apre_take(t, &other[i], 256, &fill);
        assert_non_null(o);
        assert_true(fill);
        assert_ptr_not_equal(o, p);
        rt_apre_filled(t, &other[i]);
    }
    RtAKey big = {a + 2, 16, 4, 16, k.kb};   /* 6 x 256 bytes used of 4096 */
    assert_null(rt_apre_take(t, &big, 4096, &fill));
    assert_false(fill);
    rt_apre_free(t);
    rt_apre_free(NULL);
    assert_null(rt_apre_take(NULL, &k, 256, &fill));
}

static void test_apre_many(void **state) {
    (void)state;
    static float a[1000];
    RtApre *t = rt_apre_create(1000 * 64);
    assert_non_null(t);
    bool fill;
    for (int i = 0; i < 1000; i++) {   /* the table grows past its first 64 slots */
        RtAKey k = {a + i, 1, 4, 4, RT_APRE_CHAN | 16};
        float *p = rt_apre_take(t, &k, 64, &fill);
        assert_non_null(p);
        assert_true(fill);
        p[0] = (float)i;
        rt_apre_filled(t, &k);
    }
    for (int i = 0; i < 1000; i++) {
        RtAKey k = {a + i, 1, 4, 4, RT_APRE_CHAN | 16};
        float *p = rt_apre_take(t, &k, 64, &fill);
        assert_non_null(p);
        assert_false(fill);
        assert_true(p[0] == (float)i);
    }
    rt_apre_free(t);
}

/* Copies of 100 bytes (cut 128 apart from the huge-page arena) up to a budget of
 * 2 MiB: the arena fills before the budget, the rest are allocated alone; every copy
 * 64-aligned and its own (distinct contents survive), all freed with the table. */
static void test_apre_arena_full(void **state) {
    (void)state;
    enum { N = 20000, F = 25 };
    static float a[N];
    RtApre *t = rt_apre_create((size_t)2 << 20);
    assert_non_null(t);
    bool fill;
    for (int i = 0; i < N; i++) {
        RtAKey k = {a + i, 1, 5, 5, RT_APRE_CHAN | 16};
        float *p = rt_apre_take(t, &k, F * 4, &fill);
        assert_non_null(p);
        assert_true(fill);
        assert_int_equal((uintptr_t)p % 64, 0);
        for (int j = 0; j < F; j++)
            p[j] = (float)(i * F + j);
        rt_apre_filled(t, &k);
    }
    for (int i = 0; i < N; i++) {
        RtAKey k = {a + i, 1, 5, 5, RT_APRE_CHAN | 16};
        float *p = rt_apre_take(t, &k, F * 4, &fill);
        assert_non_null(p);
        for (int j = 0; j < F; j++)
            assert_true(p[j] == (float)(i * F + j));
    }
    rt_apre_free(t);
}

/* Takes key k on trail tr, published at once when it is the first request; its floats,
 * the copy offered as next in *next. */
static float *take_on(RtApre *t, RtApreTrail *tr, const RtAKey *k, const float **next) {
    bool fill;
    size_t nb;
    float *p = rt_apre_take_on(t, tr, k, 256, &fill, next, &nb);
    assert_non_null(p);
    assert_true(*next ? nb == 256 : nb == 0);
    if (fill)
        rt_apre_filled(t, k);
    return p;
}

static void test_apre_trail(void **state) {
    (void)state;
    static float a[64];
    RtApre *t = rt_apre_create(1 << 20);
    assert_non_null(t);
    RtAKey k[3] = {{a, 16, 4, 16, RT_APRE_CHAN | 16}, {a + 16, 16, 4, 16, RT_APRE_CHAN | 16},
                   {a + 32, 16, 4, 16, RT_APRE_CHAN | 16}};
    RtApreTrail front = {NULL, 0}, back = {NULL, 1};
    const float *nx;
    float *p[3];
    for (int i = 0; i < 3; i++) {            /* first pass: nothing learnt yet */
        p[i] = take_on(t, &front, &k[i], &nx);
        assert_null(nx);
    }
    front.last = NULL;                       /* the next inference: 0 -> 1 -> 2 again */
    assert_ptr_equal(take_on(t, &front, &k[0], &nx), p[0]);
    assert_ptr_equal(nx, p[1]);
    assert_ptr_equal(take_on(t, &front, &k[0], &nx), p[0]);   /* the same copy again */
    assert_ptr_equal(nx, p[1]);
    take_on(t, &front, &k[1], &nx);
    assert_ptr_equal(nx, p[2]);
    take_on(t, &front, &k[2], &nx);
    assert_null(nx);                         /* the last: nothing read after it */
    take_on(t, &back, &k[2], &nx);           /* the other end: its own links */
    assert_null(nx);
    take_on(t, &back, &k[0], &nx);
    back.last = NULL;
    take_on(t, &back, &k[2], &nx);
    assert_ptr_equal(nx, p[0]);
    front.last = NULL;                       /* which the front's trail does not see */
    take_on(t, &front, &k[2], &nx);
    assert_null(nx);
    bool fill;                               /* a next copy not yet published: none */
    size_t nb;
    RtAKey k3 = {a + 48, 16, 4, 16, RT_APRE_CHAN | 16};
    assert_non_null(rt_apre_take_on(t, &front, &k3, 256, &fill, &nx, &nb));
    assert_true(fill);
    front.last = NULL;
    take_on(t, &front, &k[2], &nx);
    assert_null(nx);
    rt_apre_filled(t, &k3);
    take_on(t, &front, &k[2], &nx);
    assert_ptr_equal(nx, rt_apre_take(t, &k3, 256, &fill));
    rt_apre_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apre_fill_publish),
        cmocka_unit_test(test_apre_many),
        cmocka_unit_test(test_apre_arena_full),
        cmocka_unit_test(test_apre_trail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
