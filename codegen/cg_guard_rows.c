/* cg_guard_rows.c: the row clamps of guards (isa.h ISA_GUARD_ROWS, isa.md "Guards"): an
 * instruction whose rows are needed at the actual sizes only up to some row (the valid
 * batch items of a MATMUL over the whole batch, the valid positions of a tile along a
 * symbolic axis) runs only those rows, instead of all of them or none.
 *
 * Two pure helpers of cg_guard.c, which owns the proof: the instruction as if it were
 * one of its rows alone (so that the proof can meet the demand of each row's bytes and
 * make each row's reads needed only where that row runs), and the fit of a clamp
 * rows = clamp(size * per - off, 0, E) under the thresholds the rows' demands allow.
 */
#include "cg_internal.h"

/* x := in restricted to its row r (isa.h spy_insn_rows): extent 1, every operand that
 * moves with the row moved to row r (a broadcast operand, MATMUL's B, stay). Returns
 * false for an instruction without rows. */
bool cg_row_insn(const SpyInsn *in, uint32_t r, SpyInsn *x)
{
    *x = *in;
    int64_t rr = r;
    switch (in->opcode) {
    case ISA_VEC: {
        SpyVec *v = &x->vec;
        int sdt = v->src_dtype ? v->src_dtype : v->dtype;
        v->dst += (uint32_t)(rr * v->dst_rs * cg_dev_bytes(v->dtype));
        for (int q = 0; q < 3; q++) {
            int qdt = (v->fn == ISA_VF_SELECT && q == 0) ? ISA_DT_BOOL
                    : (v->fn == ISA_VF_FMA && q == 2) ? v->dtype : sdt;
            v->src[q] += (uint32_t)(rr * v->src_rs[q] * cg_dev_bytes(qdt));
        }
        break;
    }
    case ISA_VREDUCE: {
        SpyVReduce *d = &x->red;
        bool arg = d->fn == ISA_RF_ARGMAX || d->fn == ISA_RF_ARGMIN;
        d->src += (uint32_t)(rr * d->src_rs * cg_dev_bytes(d->dtype));
        d->dst += (uint32_t)(rr * d->dst_rs * (arg ? 4 : cg_dev_bytes(d->dtype)));
        break;
    }
    case ISA_MATMUL: {
        SpyMatmul *mm = &x->mm;
        mm->a += (uint32_t)(rr * mm->lda * cg_dev_bytes(mm->dtype));
        mm->c += (uint32_t)(rr * mm->ldc * cg_dev_bytes(mm->out_dtype));
        break;
    }
    case ISA_LOAD:
    case ISA_STORE: {
        SpyDma *d = &x->dma;
        int64_t des = (d->flags & ISA_F_F32) ? 4 : d->esize;
        d->lx += (uint32_t)(rr * d->lx_stride[0] * d->esize);
        d->dram_off += rr * d->dram_stride[0] * des;
        break;
    }
    default:
        return false;
    }
    spy_insn_set_rows(x, 1);
    return true;
}

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Whether the clamp (per, off) keeps every row r that may be needed: row r does not run
 * when the size is at most floor((r + off) / per), which must not pass t[r] (the
 * size at or under which row r is not needed; below min: needed at every size). */
static bool fit_ok(const int32_t *t, uint32_t e, int64_t per, int64_t off)
{
    for (uint32_t r = 0; r < e; r++)
        if (floor_div((int64_t)r + off, per) > t[r])
            return false;
    return true;
}

/* The clamp that follows the thresholds t[0..e) of e rows (t[r]: row r is not needed
 * when the symbol's size is at most t[r]; 0: needed at every size): rows in steps of
 * *per rows, each step one size further, the first step shortened by *off mod per.
 * Taken from the first two changes of t (a row of batch items, of positions) and
 * checked against every row; false when none fits, or when it would clamp no size of
 * [min, max] or run no row at max. *score: the rows it leaves out, summed over the
 * sizes of [min, max]. */
bool cg_row_fit(const int32_t *t, uint32_t e, int64_t min, int64_t max, uint32_t *per,
                uint32_t *off, int64_t *score)
{
    uint32_t r1 = 1, r2;
    int64_t a = t[0] < 0 ? 0 : t[0];
    while (r1 < e && t[r1] == t[0])
        r1++;
    if (r1 == e || t[r1] <= t[0])
        return false;                /* no step up */
    for (r2 = r1 + 1; r2 < e && t[r2] == t[r1]; r2++)
        ;
    int64_t cand[2] = {r2 < e ? (int64_t)(r2 - r1) : (int64_t)e, (int64_t)e};
    for (int i = 0; i < 2; i++) {
        int64_t p = cand[i], c = a * p + p - (int64_t)r1;
        if (c < 0 || c > (int64_t)UINT32_MAX || !fit_ok(t, e, p, c))
            continue;
        if (spy_clamp_rows(min, (uint32_t)p, (uint32_t)c, e) == e ||
            spy_clamp_rows(max, (uint32_t)p, (uint32_t)c, e) == 0)
            return false;
        *per = (uint32_t)p;
        *off = (uint32_t)c;
        *score = 0;                  /* row r is left out at the sizes [min, f(r)] */
        for (uint32_t r = 0; r < e; r++) {
            int64_t f = floor_div((int64_t)r + c, p);
            *score += (f < max ? f : max) >= min ? (f < max ? f : max) - min + 1 : 0;
        }
        return true;
    }
    return false;
}
