/* cg_guard_rows.c: the row clamps of guards (isa.h ISA_GUARD_ROWS, isa.md "Guards"): an
 * instruction whose rows are needed at the actual sizes only up to some row (the valid
 * batch items of a MATMUL over the whole batch, the valid positions of a tile along a
 * symbolic axis) runs only those rows, instead of all of them or none.
 *
 * The step of the proof (cg_guard.c) for such an instruction: the instruction as if it
 * were one of its rows alone, so that the demand of each row's bytes is met on its own;
 * the fit of a clamp rows = clamp(size * per - off, 0, E) under the thresholds those
 * demands allow; and each row's reads made needed only where that row runs.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_guard.h"

/* v's destination and operands moved by r rows and c columns (an immediate's slot
 * moves too, unread: gd_accesses skips it). */
static void vec_move(SpyVec *v, int64_t r, int64_t c)
{
    int sdt = v->src_dtype ? v->src_dtype : v->dtype;
    v->dst += (uint32_t)((r * v->dst_rs + c) * cg_dev_bytes(v->dtype));
    for (int q = 0; q < 3; q++) {
        int qdt = (v->fn == ISA_VF_SELECT && q == 0) ? ISA_DT_BOOL
                : (v->fn == ISA_VF_FMA && q == 2) ? v->dtype : sdt;
        v->src[q] += (uint32_t)((r * v->src_rs[q] + c * v->src_cs[q]) * cg_dev_bytes(qdt));
    }
}

/* x := in restricted to its row r (isa.h spy_insn_rows): extent 1, every operand that
 * moves with the row moved to row r (a broadcast operand, MATMUL's B, stay). Returns
 * false for an instruction without rows. */
static bool row_insn(const SpyInsn *in, uint32_t r, SpyInsn *x)
{
    *x = *in;
    int64_t rr = r;
    switch (in->opcode) {
    case ISA_VEC:
        vec_move(&x->vec, rr, 0);
        break;
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
static bool row_fit(const int32_t *t, uint32_t e, int64_t min, int64_t max, uint32_t *per,
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

#define ROWS_MAX 65536                /* rows of an instruction a row clamp is tried on */

/* Room in d for the per-row demands of an instruction of e rows. */
static bool rows_room(Gd *d, uint32_t e)
{
    if (e <= d->row_cap)
        return true;
    Dem *a = realloc(d->rowdem, e * sizeof *a);
    if (a)
        d->rowdem = a;
    int32_t *b = realloc(d->rowt, e * sizeof *b);
    if (b)
        d->rowt = b;
    if (!a || !b)
        return false;
    d->row_cap = e;
    return true;
}

void gd_row_acc(const SpyInsn *in, GdRowAcc *ra)
{
    SpyInsn x;
    Acc r1[ACC_MAX], w1[ACC_MAX];
    int nw1;
    row_insn(in, 0, &x);
    ra->nr = gd_accesses(&x, ra->r, ra->w, &ra->nw);
    row_insn(in, 1, &x);
    gd_accesses(&x, r1, w1, &nw1);
    for (int i = 0; i < ra->nr; i++)
        ra->dr[i] = r1[i].sp.lo - ra->r[i].sp.lo;
    for (int i = 0; i < ra->nw; i++)
        ra->dw[i] = w1[i].sp.lo - ra->w[i].sp.lo;
}

/* The meet of the demand of the bytes row r of ra writes into *m; false when one is
 * untracked. */
static bool row_meet(Gd *d, const GdRowAcc *ra, uint32_t r, Dem *m)
{
    *m = gd_never;
    Visit v = {.d = d, .op = OP_MEET, .dem = m};
    for (int i = 0; i < ra->nw; i++) {
        Acc x = ra->w[i];
        x.sp.lo += (int64_t)r * ra->dw[i];
        gd_visit(&v, &x);
    }
    return !v.hit;
}

/* The meet of the demand of the bytes row r of in writes; false when one is untracked. */
static bool one_row_meet(Gd *d, const SpyInsn *in, uint32_t r, Dem *m)
{
    SpyInsn x;
    Acc rd[ACC_MAX], wr[ACC_MAX];
    int nw;
    *m = gd_never;
    row_insn(in, r, &x);
    gd_accesses(&x, rd, wr, &nw);
    Visit v = {.d = d, .op = OP_MEET, .dem = m};
    for (int i = 0; i < nw; i++)
        gd_visit(&v, &wr[i]);
    return !v.hit;
}

/* Whether a clamp may leave out a row of in's e rows: some byte its last row writes is
 * needed only at some sizes within the bounds (a clamp leaves out the last row first),
 * and its first row's demand is not the same (else the skip guard of their meet already
 * skips every row where the last one is not needed). Checked before the rows'
 * accesses are made (most instructions fail). */
static bool rows_may_clamp(Gd *d, const SpyInsn *in, uint32_t e)
{
    Dem last, first;
    if (!one_row_meet(d, in, e - 1, &last) || !one_row_meet(d, in, 0, &first) ||
        !memcmp(&last, &first, sizeof last))
        return false;
    for (int s = 0; s < d->ns; s++)
        if (last.t[s] >= d->min[s])
            return true;
    return false;
}

bool gd_rows_fit(Gd *d, const Dem *rowdem, uint32_t e, SpyGuard *g)
{
    uint32_t per = 0, off = 0;
    int best = -1;
    int64_t best_score = 0;
    for (int s = 0; s < d->ns; s++) {
        uint32_t p, o;
        int64_t score;
        for (uint32_t r = 0; r < e; r++)        /* sizes are >= min: any less is min - 1 */
            d->rowt[r] = rowdem[r].t[s] < d->min[s] - 1 ? (int32_t)(d->min[s] - 1)
                                                         : rowdem[r].t[s];
        if (row_fit(d->rowt, e, d->min[s], d->max[s], &p, &o, &score) &&
            score > best_score)
            best = s, best_score = score, per = p, off = o;
    }
    if (best < 0)
        return false;
    SpyGuard c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < (g->n & ISA_GUARD_NMASK) && !c.n; i++)
        if (g->sym[i] != best)
            c.n = 1, c.sym[0] = g->sym[i], c.lo[0] = g->lo[i];
    c.n |= ISA_GUARD_ROWS;
    c.sym[1] = (uint8_t)best;
    c.lo[1] = per;
    c.lo[2] = off;
    *g = c;
    return true;
}

/* Whether in has rows a clamp may be tried on (at least 2, at most ROWS_MAX) and d
 * room for their demands. */
static bool clampable(Gd *d, const SpyInsn *in)
{
    uint32_t e = spy_insn_rows(in);
    return e >= 2 && e <= ROWS_MAX && rows_room(d, e);
}

bool gd_row_demands(Gd *d, const SpyInsn *in, GdRowAcc *ra, Dem *rowdem)
{
    if (!clampable(d, in) || !rows_may_clamp(d, in, spy_insn_rows(in)))
        return false;
    gd_row_acc(in, ra);
    for (uint32_t r = 0, e = spy_insn_rows(in); r < e; r++)
        if (!row_meet(d, ra, r, &rowdem[r]))
            return false;
    return true;
}

/* The row clamp of in (isa.h ISA_GUARD_ROWS) over the skip guard *g:
 * per row the meet of the demand of the bytes it writes, per symbol the fit of a clamp
 * to those thresholds (gd_rows_fit); *ra gets in's row accesses when the last row is
 * conditional. Returns false (g unchanged) when no clamp fits, a row writes an
 * untracked byte or the last row is needed at every size. A LOAD over the ring may get
 * one: the LOAD that sends its tile then runs each row wherever it does
 * (cg_guard.c ring_sources). */
bool gd_row_clamp(Gd *d, const SpyInsn *in, GdRowAcc *ra, SpyGuard *g)
{
    return clampable(d, in) && gd_row_demands(d, in, ra, d->rowdem) &&
           gd_rows_fit(d, d->rowdem, spy_insn_rows(in), g);
}

/* The reads of a row-clamped instruction in (guard g, accesses ra), backward: those
 * of row r needed where it runs (its symbol above floor((r + off) / per), and g's skip
 * condition not holding). A read that does not move with the row (MATMUL's B, a
 * broadcast operand) is made once, under row 0's demand (the least). */
void gd_row_reads(Gd *d, const SpyInsn *in, const GdRowAcc *ra, const SpyGuard *g,
                  const GdMask *m, int sel)
{
    for (uint32_t r = 0, e = spy_insn_rows(in); r < e; r++) {
        Dem dem = gd_always;
        if (g->n & ISA_GUARD_NMASK)
            dem.t[g->sym[0]] = (int32_t)g->lo[0];
        int64_t f = ((int64_t)r + g->lo[2]) / g->lo[1];
        dem.t[g->sym[1]] = f > INT32_MAX - 1 ? INT32_MAX - 1 : (int32_t)f;
        Visit gen = {.d = d, .op = OP_GEN, .dem = &dem};
        for (int i = 0; i < ra->nr; i++) {
            if (i == sel) {                      /* a SELECT's x: where it is picked */
                gd_mask_read(d, in, m, r, 1, &dem);
                continue;
            }
            if (r > 0 && ra->dr[i] == 0)
                continue;                        /* did not move: made at row 0 */
            Acc x = ra->r[i];
            x.sp.lo += (int64_t)r * ra->dr[i];
            gd_visit(&gen, &x);
        }
    }
}

#define COLS_MAX 1024                 /* columns of a one-row VEC read column by column */

/* Whether dt is a float device dtype (a VEC on such elements raises nothing). */
static bool is_float(int dt)
{
    return dt == ISA_DT_F32 || dt == ISA_DT_F16 || dt == ISA_DT_BF16 || dt == ISA_DT_DLF16;
}

bool gd_cols_prep(Gd *d, const SpyInsn *in)
{
    const SpyVec *v = &in->vec;
    int sdt = v->src_dtype ? v->src_dtype : v->dtype;
    if (in->opcode != ISA_VEC || v->rows != 1 || v->cols < 2 || v->cols > COLS_MAX ||
        !is_float(v->dtype) || !is_float(sdt) || !rows_room(d, v->cols))
        return false;
    int64_t es = cg_dev_bytes(v->dtype), one = 1;
    for (uint32_t c = 0; c < v->cols; c++) {
        Acc x = {.seg = -1};
        cg_span_make(&x.sp, v->dst + c * es, (unsigned)es, 1, &one, &one);
        d->rowdem[c] = gd_never;
        Visit m = {.d = d, .op = OP_MEET, .dem = &d->rowdem[c]};
        gd_visit(&m, &x);
        if (m.hit)
            return false;
    }
    return memcmp(&d->rowdem[0], &d->rowdem[v->cols - 1], sizeof d->rowdem[0]) != 0;
}

void gd_cols_reads(Gd *d, const SpyInsn *in, const Dem *eff)
{
    for (uint32_t c = 0; c < in->vec.cols; c++) {
        Dem dem = *eff;
        gd_dem_or(&dem, &d->rowdem[c]);
        SpyInsn x = *in;                     /* in restricted to its column c */
        vec_move(&x.vec, 0, c);
        x.vec.cols = 1;
        Acc r[ACC_MAX], w[ACC_MAX];
        int nw, nr = gd_accesses(&x, r, w, &nw);
        Visit gen = {.d = d, .op = OP_GEN, .dem = &dem};
        for (int i = 0; i < nr; i++)
            gd_visit(&gen, &r[i]);
    }
}
