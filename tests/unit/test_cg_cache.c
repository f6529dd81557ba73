/* test_cg_cache.c: unit tests of the code generator's load cache (codegen/cg_dma.c).
 * A LOAD whose data is still in LX is skipped; an instruction that writes LX must
 * forget every cached load its written bytes overlap, not only the one starting where
 * it writes: a shared tile is loaded in pieces (cg_load_shared), and a step that writes
 * its result in place over the first piece can reach into the next ones (a bool mask
 * over an int32 position tile). A stale piece made the next work item of a dynamic
 * BERT's attention read overwritten positions (wrong softmax at 4x40 of seq 2..40).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/cg_internal.h"
#include "frontend/fe.h"

/* An emitter with the default target and no code yet. */
static void emitter(CgEmit *e, SpyTarget *t)
{
    memset(e, 0, sizeof *e);
    fe_default_target(t);
    e->t = t;
}

/* Cached LOAD of 8 int32 elements at DRAM offset off into LX at lx. */
static void load8(CgEmit *e, int64_t off, uint32_t lx)
{
    CgDims d = {0};
    cg_dims_add(&d, 8, 1, 1);
    cg_load_cached(e, 0, off, lx, 4, &d);
}

/* The two pieces of a shared tile: 8 int32 (32 bytes) each at 0x100 and 0x120. */
static void load_pieces(CgEmit *e)
{
    load8(e, 0, 0x100);
    load8(e, 32, 0x120);
}

/* Two pieces of 8 int32 (32 bytes each) at 0x100 and 0x120; a 40-byte write at 0x100
 * covers the first and 8 bytes of the second: both are loaded again. */
static void test_overlapping_write_forgets_pieces(void **state)
{
    (void)state;
    CgEmit e;
    SpyTarget t;
    emitter(&e, &t);
    load_pieces(&e);
    assert_int_equal(e.n, 2);
    load_pieces(&e);                           /* still there: skipped */
    assert_int_equal(e.n, 2);
    cg_cache_invalidate(&e, 0x100, 40);
    load_pieces(&e);
    assert_int_equal(e.n, 4);
    free(e.code);
}

/* A write that ends where a cached piece starts, or starts where it ends, leaves it. */
static void test_adjacent_write_keeps_piece(void **state)
{
    (void)state;
    CgEmit e;
    SpyTarget t;
    emitter(&e, &t);
    load8(&e, 32, 0x120);
    cg_cache_invalidate(&e, 0x100, 32);
    cg_cache_invalidate(&e, 0x140, 16);
    load8(&e, 32, 0x120);
    assert_int_equal(e.n, 1);
    free(e.code);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlapping_write_forgets_pieces),
        cmocka_unit_test(test_adjacent_write_keeps_piece),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
