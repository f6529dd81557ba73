/* test_rt_vecone.c: unit tests of the one-element VEC path (RT_PH_ONE, rt_vec_one in
 * runtime/rt_kern_vec.c): every F32 function of one or two operands, its operands an
 * element of LX (column stride 0 or 1), an immediate in either position, on ordinary
 * values, signed zeros, infinities and NaNs, run through the interpreter (planned
 * with rt_prep_code) and through rt_vec (the general kernel) from the same scratchpad:
 * the results must be equal bit for bit. Also which VECs the path takes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_exec.h"

#define LX_BYTES (64u << 10)
#define OFF_A 256u           /* operand 0 */
#define OFF_B 512u           /* operand 1 */
#define OFF_D 768u           /* destination */

static uint8_t *lx;
static RtCore core;

static int setup(void **state) {
    (void)state;
    lx = calloc(LX_BYTES + RT_LX_SLACK, 1);
    core = (RtCore){.lx = lx};
    return lx ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(lx);
    return 0;
}

/* An F32 VEC of fn over one element writing OFF_D: operand q at OFF_A / OFF_B with
 * column stride cs, or the immediate imm in position immq (-1: none). */
static SpyInsn one_vec(int fn, int cs, int immq, float imm) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    int ar = rt_vecfn_arity(fn);
    v->opcode = ISA_VEC, v->dtype = ISA_DT_F32, v->src_dtype = ISA_DT_F32;
    v->fn = (uint16_t)fn, v->nsrc = (uint8_t)ar, v->dst = OFF_D, v->rows = 1, v->cols = 1;
    v->dst_rs = 1;
    v->src[0] = OFF_A, v->src[1] = OFF_B;
    for (int q = 0; q < ar; q++)
        v->src_rs[q] = cs, v->src_cs[q] = cs;
    if (immq >= 0) {
        v->flags = immq ? ISA_F_IMM : ISA_F_IMM_A;
        v->src[immq] = 0, v->src_rs[immq] = v->src_cs[immq] = 0;
        memcpy(&v->imm, &imm, 4);
    }
    return in;
}

/* The interesting operand values. */
static const float vals[] = {0.0f,  -0.0f,    1.0f,      -1.0f,    0.5f,  -2.5f,  3.0e-39f,
                             1e30f, -1e-30f,  88.75f,    -104.5f,  7.25f, 0.625f, INFINITY,
                             -INFINITY, NAN,  -NAN,      0.9f,     -0.3f, 42.0f};
#define NVALS (sizeof vals / sizeof vals[0])

/* Runs in on a and b through the planned interpreter and through rt_vec, and checks
 * the destination's bits agree; returns the plan the interpreter used. */
static int check_one(const SpyInsn *in, float a, float b) {
    RtPrep p;
    rt_prep_code(in, 1, &p);
    uint32_t got, want;
    memcpy(lx + OFF_A, &a, 4);
    memcpy(lx + OFF_B, &b, 4);
    memset(lx + OFF_D, 0x5a, 4);
    assert_int_equal(rt_exec_prepared(&core, in, &p, 1), RT_XOK);
    memcpy(&got, lx + OFF_D, 4);
    memset(lx + OFF_D, 0xa5, 4);
    assert_int_equal(rt_vec(&core, &in->vec), RT_XOK);
    memcpy(&want, lx + OFF_D, 4);
    if (got != want)
        fail_msg("fn %d flags %d a %a b %a: %08x, general kernel %08x", in->vec.fn,
                 in->vec.flags, (double)a, (double)b, got, want);
    return p.how;
}

/* Whether fn computes in the float domain from F32 operands to an F32 result. */
static bool float_fn(int fn) {
    switch (fn) {
    case ISA_VF_COPY: case ISA_VF_CAST: case ISA_VF_SELECT: case ISA_VF_FMA: case ISA_VF_NOT:
    case ISA_VF_AND: case ISA_VF_OR: case ISA_VF_XOR: case ISA_VF_SHL: case ISA_VF_SHR:
        return false;
    default: return !rt_vecfn_compare(fn) && rt_vecfn_arity(fn) >= 1 && rt_vecfn_arity(fn) <= 2;
    }
}

/* Every float function, every operand form, every pair of values: the same bits as
 * the general kernel; lone elements with no operand row take RT_PH_ONE. */
static void test_one_element(void **state) {
    (void)state;
    int ones = 0;
    for (int fn = 0; fn < ISA_VF_COUNT; fn++) {
        if (!float_fn(fn))
            continue;
        int ar = rt_vecfn_arity(fn);
        for (int form = 0; form < (ar == 2 ? 4 : 2); form++) {
            int cs = form & 1, immq = form < 2 ? -1 : form - 2;
            for (size_t i = 0; i < NVALS; i++)
                for (size_t j = 0; j < (ar == 2 ? NVALS : 1); j++) {
                    SpyInsn in = one_vec(fn, cs, immq, vals[j]);
                    int how = check_one(&in, vals[i], vals[j]);
                    ones += how == RT_PH_ONE;
                    if (!cs)             /* nothing for the direct path: every operand a
                                            scalar, or a unary function it lacks */
                        assert_true(how == RT_PH_ONE || how == RT_PH_FAST);
                }
        }
    }
    assert_true(ones > 1000);
}

/* VECs the path must leave alone: more than one element, non-F32 types, comparisons,
 * CAST, SELECT and FMA. */
static void test_one_declines(void **state) {
    (void)state;
    SpyInsn in = one_vec(ISA_VF_MUL, 0, 1, 2.0f);
    assert_true(rt_vec_one_ok(&in.vec));
    in.vec.cols = 2;
    assert_false(rt_vec_one_ok(&in.vec));
    in = one_vec(ISA_VF_MUL, 0, 1, 2.0f);
    in.vec.rows = 0;
    assert_false(rt_vec_one_ok(&in.vec));
    in = one_vec(ISA_VF_MUL, 0, 1, 2.0f);
    in.vec.dtype = ISA_DT_I32, in.vec.src_dtype = ISA_DT_I32;
    assert_false(rt_vec_one_ok(&in.vec));
    in = one_vec(ISA_VF_MUL, 0, 1, 2.0f);
    in.vec.src_dtype = ISA_DT_DLF16;
    assert_false(rt_vec_one_ok(&in.vec));
    static const int no[] = {ISA_VF_LT, ISA_VF_ISNAN, ISA_VF_CAST, ISA_VF_SELECT, ISA_VF_FMA,
                             ISA_VF_COPY};
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) {
        in = one_vec(no[k], 0, -1, 0.0f);
        assert_false(rt_vec_one_ok(&in.vec));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_element),
        cmocka_unit_test(test_one_declines),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
