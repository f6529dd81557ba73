/* test_cg_cache.c: unit tests of the code generator's load cache (codegen/cg_dma.c).
 * A LOAD whose data is still in LX is skipped; an instruction that writes LX must
 * forget every cached load its written bytes overlap, not only the one starting where
 * it writes: a shared tile is loaded in pieces (cg_load_shared), and a step that writes
 * its result in place over the first piece can reach into the next ones (a bool mask
 * over an int32 position tile). A stale piece made the next work item of a dynamic
 * BERT's attention read overwritten positions (wrong softmax at 4x40 of seq 2..40).
 * Every instruction that writes LX does so through cg_push, which takes the written
 * range from the instruction's own fields (cg_lxwrite.c): MATMUL results, VFILL,
 * GATHER, VREDUCE, VSCAN and a LOAD over part of another cached piece included.
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

/* Forget the cached loads overlapping the bytes [lx, lx + bytes). */
static void invalidate_bytes(CgEmit *e, uint32_t lx, int64_t bytes)
{
    CgSpan w;
    int64_t len = bytes, ls = 1;
    cg_span_make(&w, lx, 1, 1, &len, &ls);
    cg_cache_invalidate(e, &w);
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
    invalidate_bytes(&e, 0x100, 40);
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
    invalidate_bytes(&e, 0x100, 32);
    invalidate_bytes(&e, 0x140, 16);
    load8(&e, 32, 0x120);
    assert_int_equal(e.n, 1);
    free(e.code);
}

/* Loads the pieces (load), pushes the n instructions ins, then loads the pieces
 * again; returns the LX address of each LOAD that came again (reload[], at most 2) and
 * how many did. */
static int reloads_after(void (*load)(CgEmit *), const SpyInsn *ins, size_t n,
                         uint32_t *reload)
{
    CgEmit e;
    SpyTarget t;
    emitter(&e, &t);
    load(&e);
    for (size_t i = 0; i < n; i++)
        cg_push(&e, &ins[i]);
    uint64_t first = e.n;
    load(&e);
    int k = (int)(e.n - first);
    for (int i = 0; i < k && i < 2; i++) {
        assert_int_equal(e.code[first + i].opcode, ISA_LOAD);
        reload[i] = e.code[first + i].dma.lx;
    }
    free(e.code);
    return k;
}

/* After instruction in (an LX write over bytes 0x128..) the second piece must be
 * loaded again, the first not (it lies below the write). */
static void check_write_forgets_second(const SpyInsn *in)
{
    uint32_t lx[2];
    assert_int_equal(reloads_after(load_pieces, in, 1, lx), 1);
    assert_int_equal(lx[0], 0x120);
}

/* Every kind of LX write over part of the second piece forgets it (before cg_push took
 * the written bytes from the instruction, none of these forgot anything):
 * MATMUL C [2 rows, 2 cols] F32 at 0x128 with ldc 4 (bytes 0x128..0x140); VFILL of 4
 * int32 at 0x128; GATHER of 2 rows of 2 int32 at 0x128; VREDUCE writing 3 int32 at
 * 0x138 (reaching past the piece); VSCAN of a row of 4 int32 at 0x128; an uncached
 * LOAD (cg_dma) of 4 int32 at 0x130, landing over part of the piece. */
static void test_every_lx_write_forgets(void **state)
{
    (void)state;
    const SpyInsn ins[] = {
        {.mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32, .a = 0x400,
                .b = 0x500, .c = 0x128, .m = 2, .n = 2, .k = 1, .lda = 1, .ldb = 2, .ldc = 4}},
        {.fill = {.opcode = ISA_VFILL, .dtype = ISA_DT_I32, .dst = 0x128, .n = 4}},
        {.gather = {.opcode = ISA_GATHER, .esize = 4, .lx_dst = 0x128, .lx_idx = 0x400,
                    .nidx = 2, .row_elems = 2, .bound = 8, .dst_row_stride = 2}},
        {.red = {.opcode = ISA_VREDUCE, .dtype = ISA_DT_I32, .fn = ISA_RF_SUM, .dst = 0x138,
                 .src = 0x400, .rows = 3, .len = 4, .src_rs = 4, .src_cs = 1, .dst_rs = 1}},
        {.scan = {.opcode = ISA_VSCAN, .dtype = ISA_DT_I32, .dst = 0x128, .src = 0x400,
                  .rows = 1, .len = 4, .src_rs = 4, .dst_rs = 4}},
        {.dma = {.opcode = ISA_LOAD, .esize = 4, .ndim = 1, .dram_off = 256, .lx = 0x130,
                 .dims = {4, 1, 1, 1, 1, 1}, .dram_stride = {1}, .lx_stride = {1}}},
    };
    for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
        check_write_forgets_second(&ins[i]);
}

/* A STORE (reads LX) and an LX write elsewhere leave both pieces cached. */
static void test_unrelated_insns_keep(void **state)
{
    (void)state;
    const SpyInsn ins[] = {
        {.dma = {.opcode = ISA_STORE, .esize = 4, .ndim = 1, .seg = 1, .lx = 0x100,
                 .dims = {16, 1, 1, 1, 1, 1}, .dram_stride = {1}, .lx_stride = {1}}},
        {.fill = {.opcode = ISA_VFILL, .dtype = ISA_DT_I32, .dst = 0x140, .n = 4}},
    };
    uint32_t lx[2];
    assert_int_equal(reloads_after(load_pieces, ins, 2, lx), 0);
}

/* Cached LOADs of the two interleaved pieces of a tile of 4 rows at a pitch of 8 int32
 * (32 bytes): columns 0-1 at 0x100 and columns 2-3 at 0x108. */
static void load_interleaved(CgEmit *e)
{
    for (int p = 0; p < 2; p++) {
        CgDims d = {0};
        cg_dims_add(&d, 4, 2, 8);
        cg_dims_add(&d, 2, 1, 1);
        cg_load_cached(e, 0, 8 * p, 0x100 + 8 * (uint32_t)p, 4, &d);
    }
}

/* Interleaved pieces share no byte, though their bounding ranges do: loading one keeps
 * the other, and a VEC writing column 2 of row 3 only forgets the second. */
static void test_interleaved_pieces(void **state)
{
    (void)state;
    const SpyInsn vec = {.vec = {.opcode = ISA_VEC, .dtype = ISA_DT_I32, .fn = ISA_VF_COPY,
                                 .nsrc = 1, .dst = 0x100 + 3 * 32 + 8, .src = {0x400},
                                 .rows = 1, .cols = 1, .src_cs = {1}}};
    uint32_t lx[2];
    assert_int_equal(reloads_after(load_interleaved, NULL, 0, lx), 0);
    assert_int_equal(reloads_after(load_interleaved, &vec, 1, lx), 1);
    assert_int_equal(lx[0], 0x108);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlapping_write_forgets_pieces),
        cmocka_unit_test(test_adjacent_write_keeps_piece),
        cmocka_unit_test(test_every_lx_write_forgets),
        cmocka_unit_test(test_unrelated_insns_keep),
        cmocka_unit_test(test_interleaved_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
