/* test_arena.c: the offline placement of the activation arena (passes/arena_fit.c).
 * A hand-made lifetime set on which kernel-order first fit fragments (a large block
 * written late does not fit the hole a smaller dead one left) must be packed to its
 * liveness bound; on pseudo-random lifetime sets every placement must keep blocks live
 * together disjoint and aligned, report its largest end and never be larger than the
 * kernel-order first fit (arbitrary lifetimes can defeat any greedy order, so the 1.1x
 * bound is checked on the hand-made sets here and on the models by make check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "passes/arena_fit.h"

enum { ALIGN = 128 };

/* Largest sum of the sizes of the blocks live at one kernel. */
static uint64_t bound(const ArenaBlock *b, uint32_t n)
{
    uint32_t kmax = 0;
    for (uint32_t i = 0; i < n; i++)
        kmax = b[i].last > kmax ? b[i].last : kmax;
    uint64_t best = 0;
    for (uint32_t k = 0; k <= kmax; k++) {
        uint64_t live = 0;
        for (uint32_t i = 0; i < n; i++)
            live += b[i].first <= k && k <= b[i].last ? b[i].size : 0;
        best = live > best ? live : best;
    }
    return best;
}

/* Reference online plan: blocks in order of their first kernel, each at the lowest
 * offset free of the blocks placed so far that it meets; returns the largest end. */
static uint64_t kernel_first_fit(const ArenaBlock *b, uint32_t n)
{
    uint64_t *off = calloc(n, sizeof *off), peak = 0;
    uint32_t *ord = calloc(n, sizeof *ord), m = 0;
    for (uint32_t k = 0; m < n; k++)           /* ord: by first kernel, then index */
        for (uint32_t i = 0; i < n; i++)
            if (b[i].first == k)
                ord[m++] = i;
    for (uint32_t a = 0; a < n; a++) {
        uint32_t x = ord[a];
        uint64_t at = 0;
        for (bool moved = true; moved;) {       /* bump past every conflict */
            moved = false;
            for (uint32_t c = 0; c < a; c++) {
                uint32_t y = ord[c];
                if (b[y].first <= b[x].last && b[x].first <= b[y].last &&
                    off[y] < at + b[x].size && at < off[y] + b[y].size)
                    at = off[y] + b[y].size, moved = true;
            }
        }
        off[x] = at;
        peak = at + b[x].size > peak ? at + b[x].size : peak;
    }
    free(off);
    free(ord);
    return peak;
}

/* Run the planner and check its invariants; returns the arena size. */
static uint64_t fit_checked(ArenaBlock *b, uint32_t n)
{
    void *work = malloc(pass_arena_fit_work(n));
    uint64_t peak = pass_arena_fit(b, n, work), top = 0;
    free(work);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(b[i].off % ALIGN, 0);
        top = b[i].off + b[i].size > top ? b[i].off + b[i].size : top;
        for (uint32_t j = i + 1; j < n; j++) {
            bool meet = b[i].first <= b[j].last && b[j].first <= b[i].last;
            bool share = b[i].off < b[j].off + b[j].size && b[j].off < b[i].off + b[i].size;
            if (meet && share)
                fail_msg("blocks %u and %u are live together and overlap", i, j);
        }
    }
    assert_int_equal(peak, top);
    assert_true(peak >= bound(b, n));
    return peak;
}

/* x (2 sticks) dies at kernel 1, y (1 stick) lives on; z (3 sticks), written at kernel
 * 2, does not fit x's hole, so kernel-order first fit needs 6 sticks where 4 do. */
static void test_fragmenting_set(void **st)
{
    ArenaBlock b[] = {{2 * ALIGN, 0, 1, 0}, {1 * ALIGN, 1, 3, 0}, {3 * ALIGN, 2, 3, 0}};
    assert_int_equal(bound(b, 3), 4 * ALIGN);
    assert_int_equal(kernel_first_fit(b, 3), 6 * ALIGN);
    assert_int_equal(fit_checked(b, 3), 4 * ALIGN);
}

/* A transformer block's pattern repeated: residual stream h, a 4x-wide hidden activation
 * u and its GELU g (each live for two kernels), attention scores s; first fit leaves
 * the freed 1x holes under every wide block. */
static void test_transformer_pattern(void **st)
{
    enum { L = 6, H = 8 * ALIGN };
    ArenaBlock b[6 * L];
    uint32_t n = 0, k = 0;
    for (int l = 0; l < L; l++, k += 6) {
        b[n++] = (ArenaBlock){H, k, k + 2, 0};              /* layer norm out */
        b[n++] = (ArenaBlock){2 * H, k + 1, k + 2, 0};      /* scores */
        b[n++] = (ArenaBlock){H, k + 2, k + 6, 0};          /* residual */
        b[n++] = (ArenaBlock){4 * H, k + 3, k + 4, 0};      /* up projection */
        b[n++] = (ArenaBlock){4 * H, k + 4, k + 5, 0};      /* GELU */
        b[n++] = (ArenaBlock){H, k + 5, k + 6, 0};          /* down projection */
    }
    uint64_t lb = bound(b, n), ff = kernel_first_fit(b, n), p = fit_checked(b, n);
    print_message("bound %llu first fit %llu offline %llu\n", (unsigned long long)lb,
                  (unsigned long long)ff, (unsigned long long)p);
    assert_true(ff > lb * 11 / 10);
    assert_true(p * 10 <= lb * 11);
}

/* Pseudo-random chains of blocks: mostly short lifetimes, some long (skip
 * connections), sizes from one stick to a few thousand. */
static void test_random_sets(void **st)
{
    uint32_t seed = 12345, better = 0;
    for (int round = 0; round < 40; round++) {
        uint32_t n = 20 + (uint32_t)round * 5;
        ArenaBlock *b = calloc(n, sizeof *b);
        for (uint32_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            uint32_t span = (seed >> 24) % 8 == 0 ? 1 + (seed >> 8) % 12 : 1 + (seed >> 8) % 3;
            seed = seed * 1664525u + 1013904223u;
            b[i] = (ArenaBlock){(uint64_t)(1 + (seed >> 12) % 3000) * ALIGN, i, i + span, 0};
        }
        uint64_t ff = kernel_first_fit(b, n), p = fit_checked(b, n);
        if (p > ff)
            fail_msg("round %d: arena %llu larger than first fit's %llu", round,
                     (unsigned long long)p, (unsigned long long)ff);
        better += p < ff;
        free(b);
    }
    assert_true(better > 0);                   /* the offline orders do win somewhere */
}

/* No blocks: an empty arena. */
static void test_empty(void **st)
{
    ArenaBlock b[1];
    assert_int_equal(fit_checked(b, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fragmenting_set),
        cmocka_unit_test(test_transformer_pattern),
        cmocka_unit_test(test_random_sets),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
