/* test_eval_move.c: reference evaluation of TRANSPOSE and SLICE (ir/ir_eval_move.c,
 * which copies planes of the output in tiles of rows) against an element-by-element
 * copy computed here: every permutation of ranks 1 to 4 and some of rank 5 and 6, on
 * shapes with axes of 1, of fewer and of more than a tile's 16 rows, for elements of
 * 1, 2, 4 and 8 bytes; slices with positive and negative steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"
#include "unit_util.h"

static const IrOrigin O = {"n", "Test", NULL};

/* Fill n bytes with a pattern that differs from byte to byte. */
static void fill(uint8_t *p, size_t n)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

/* The element offset in a tensor of dims (row-major) of index idx. */
static int64_t offset_of(const int64_t *idx, const int64_t *dims, int rank)
{
    int64_t off = 0;
    for (int i = 0; i < rank; i++)
        off = off * dims[i] + idx[i];
    return off;
}

/* Evaluate node n on in; the output's bytes (in the graph's arena). */
static void *eval_one(IrGraph *g, NodeId n, const void *in)
{
    const void *ins[1] = {in};
    void *out[1] = {NULL};
    assert_true(ir_eval_node(g, &g->nodes[n], ins, out));
    return out[0];
}

/* One TRANSPOSE of a tensor of dims by perm, with elements of dtype dt. */
static void check_transpose(const int64_t *dims, int rank, const int64_t *perm, IrDType dt)
{
    UtFx f;
    ut_fx_begin(&f);
    IrType t = {.dtype = dt, .rank = rank};
    memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
    ValId x = ir_add_input(f.g, "x", &t);
    IrAttr at = ir_attr_ints(f.g, "perm", perm, rank);
    NodeId n = ir_add_node(f.g, IR_OP_TRANSPOSE, &x, 1, &at, 1, &O);
    assert_false(ir_failed(f.g));
    size_t es = ir_dtype_size(dt), ne = (size_t)ir_type_numel(&t);
    uint8_t *in = malloc(ne * es + 1);
    fill(in, ne * es);
    uint8_t *out = eval_one(f.g, n, in);
    int64_t od[IR_MAX_RANK], idx[IR_MAX_RANK] = {0}, src[IR_MAX_RANK];
    for (int i = 0; i < rank; i++)
        od[i] = dims[perm[i]];
    for (size_t k = 0; k < ne; k++) {
        for (int i = 0; i < rank; i++)
            src[perm[i]] = idx[i];
        assert_memory_equal(out + k * es, in + (size_t)offset_of(src, dims, rank) * es, es);
        for (int i = rank - 1; i >= 0 && ++idx[i] == od[i]; i--)
            idx[i] = 0;
    }
    free(in);
    ut_fx_end(&f);
}

/* Next permutation of p (lexicographic); false after the last. */
static bool next_perm(int64_t *p, int n)
{
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (p[j] <= p[i])
        j--;
    int64_t t = p[i];
    p[i] = p[j], p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--)
        t = p[a], p[a] = p[b], p[b] = t;
    return true;
}

static void test_transpose_all_perms(void **st)
{
    (void)st;
    static const int64_t shapes[][4] = {{37, 1, 5, 17}, {3, 20, 2, 33}, {16, 16, 1, 1},
                                        {1, 40, 7, 3}};
    static const IrDType dts[] = {IR_DT_U8, IR_DT_F16, IR_DT_F32, IR_DT_I64};
    for (int rank = 1; rank <= 4; rank++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
                int64_t p[4] = {0, 1, 2, 3};
                do
                    check_transpose(shapes[s], rank, p, dts[d]);
                while (next_perm(p, rank));
            }
}

static void test_transpose_high_rank(void **st)
{
    (void)st;
    static const int64_t d5[5] = {2, 3, 17, 4, 18}, d6[6] = {2, 1, 3, 19, 2, 5};
    static const int64_t p5[][5] = {{4, 3, 2, 1, 0}, {0, 2, 4, 1, 3}, {1, 0, 2, 4, 3}};
    static const int64_t p6[][6] = {{5, 4, 3, 2, 1, 0}, {0, 3, 1, 5, 2, 4}};
    for (int i = 0; i < 3; i++)
        check_transpose(d5, 5, p5[i], IR_DT_F32);
    for (int i = 0; i < 2; i++)
        check_transpose(d6, 6, p6[i], IR_DT_F16);
}

/* A SLICE of a [5, 40, 9] f32 tensor: starts, steps (negative too) and sizes. */
static void check_slice(const int64_t *starts, const int64_t *steps, const int64_t *sizes)
{
    static const int64_t dims[3] = {5, 40, 9};
    UtFx f;
    ut_fx_begin(&f);
    IrType t = {.dtype = IR_DT_F32, .rank = 3, .dims = {5, 40, 9}};
    ValId x = ir_add_input(f.g, "x", &t);
    IrAttr at[3] = {ir_attr_ints(f.g, "starts", starts, 3), ir_attr_ints(f.g, "steps", steps, 3),
                    ir_attr_ints(f.g, "sizes", sizes, 3)};
    NodeId n = ir_add_node(f.g, IR_OP_SLICE, &x, 1, at, 3, &O);
    assert_false(ir_failed(f.g));
    float in[5 * 40 * 9];
    for (int i = 0; i < 5 * 40 * 9; i++)
        in[i] = (float)i;
    float *out = eval_one(f.g, n, in);
    size_t k = 0;
    for (int64_t a = 0; a < sizes[0]; a++)
        for (int64_t b = 0; b < sizes[1]; b++)
            for (int64_t c = 0; c < sizes[2]; c++) {
                int64_t idx[3] = {starts[0] + a * steps[0], starts[1] + b * steps[1],
                                  starts[2] + c * steps[2]};
                assert_true(out[k++] == in[offset_of(idx, dims, 3)]);
            }
    ut_fx_end(&f);
}

static void test_slice(void **st)
{
    (void)st;
    check_slice((int64_t[]){0, 0, 0}, (int64_t[]){1, 1, 1}, (int64_t[]){5, 40, 9});
    check_slice((int64_t[]){1, 3, 2}, (int64_t[]){2, 2, 3}, (int64_t[]){2, 18, 3});
    check_slice((int64_t[]){4, 39, 8}, (int64_t[]){-1, -2, -1}, (int64_t[]){5, 20, 9});
    check_slice((int64_t[]){2, 30, 0}, (int64_t[]){1, -1, 4}, (int64_t[]){1, 25, 3});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transpose_all_perms),
        cmocka_unit_test(test_transpose_high_rank),
        cmocka_unit_test(test_slice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
