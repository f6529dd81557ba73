/* requant.c: fuse_fold_requant, the round trip of a requantization inside a kernel.
 *
 * A QDQ model quantizes a float value and dequantizes it again at every point it
 * names (the output of each operator between two contractions: the bias add, each
 * step of GELU, the scaled scores, the masked scores). Decomposed, a QuantizeLinear
 * ends in round(t) + zq, clamped to [lo, hi], then a CAST to int8 / uint8; a
 * DequantizeLinear begins with a CAST back to float32, subtracts zd and multiplies by
 * the scale. When the 8-bit value never leaves the kernel (all its readers are those
 * CASTs back, in the same kernel), the pair is computed without it:
 *
 *     clamp(r + zq, lo, hi) - zd  ==  clamp(r, lo - zq, hi - zq) - (zd - zq)
 *
 * exactly: r = round(t) is an integer, r + zq is exact below 2^24 and beyond that both
 * sides saturate; the clamped value is an integer in the 8-bit range, so the CASTs to
 * 8 bits and back give it unchanged. Three vector operations of the seven go (the add
 * of zq and the two CASTs), four when zd equals zq (the subtraction too) or zq is 0 and
 * nothing is subtracted. A NaN now stays NaN (dequantized), where the CAST to 8 bits
 * made it 0. It runs in the fuser once the kernels' members are known (an 8-bit value
 * that crosses kernels must stay: it is what DRAM moves), before the kernels are built.
 * The zero points and clamp bounds are scalars (per-tensor quantization) or vectors along
 * the last axis (the per-column constants of sibling products merged by qsiblings.c);
 * the identity holds element by element.
 */
#include <math.h>

#include "pass.h"
#include "plan/plan.h"
#include "requant.h"

/* A float32 constant read element by element along the last axis: n values, or one
 * (a scalar). */
typedef struct {
    const float *p;
    int64_t n;
} QVec;

static const float rq_zero = 0.0f;

static float qv_at(const QVec *x, int64_t j)
{
    return x->p[x->n == 1 ? 0 : j];
}

/* Constant v as a QVec: a float32 constant with data of one element, or whose dims
 * but the last are 1; false otherwise. */
static bool col_f32(IrGraph *g, ValId v, QVec *x)
{
    const IrValue *cv = ir_val(g, v);
    if (cv->kind != IR_VAL_CONST || cv->type.dtype != IR_DT_F32 || !cv->data)
        return false;
    for (int i = 0; i + 1 < cv->type.rank; i++)
        if (cv->type.dims[i] != 1)
            return false;
    x->p = cv->data;
    x->n = plan_numel(&cv->type);
    return x->n >= 1;
}

/* The operand index of node n that is a float32 column constant (in *x), the other one
 * being an activation; -1 when n has no such operand. */
static int const_side(IrGraph *g, const IrNode *n, QVec *x)
{
    if (n->nin != 2)
        return -1;
    for (int i = 0; i < 2; i++)
        if (col_f32(g, n->in[i], x) && ir_val(g, n->in[1 - i])->kind == IR_VAL_ACT)
            return i;
    return -1;
}

/* The common length of vectors a[0..na) (1 when all are scalars); 0 when two vectors
 * differ in length. */
static int64_t qv_len(const QVec *a, int na)
{
    int64_t n = 1;
    for (int i = 0; i < na; i++) {
        if (a[i].n == 1)
            continue;
        if (n != 1 && n != a[i].n)
            return 0;
        n = a[i].n;
    }
    return n;
}

/* The constant a - b (element by element, n values): a scalar when n is 1. */
static ValId qv_sub(IrGraph *g, const QVec *a, const QVec *b, int64_t n)
{
    if (n == 1)
        return ir_const_scalar_f32(g, qv_at(a, 0) - qv_at(b, 0));
    float *d = ir_scratch(g, (size_t)n * sizeof *d);
    for (int64_t j = 0; j < n; j++)
        d[j] = qv_at(a, j) - qv_at(b, j);
    IrType t = {.dtype = IR_DT_F32, .rank = 1, .dims = {n}};
    return ir_add_const(g, ir_fresh_name(g, "c"), &t, d);
}

/* Whether a and b hold the same n values. */
static bool qv_eq(const QVec *a, const QVec *b, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        if (qv_at(a, j) != qv_at(b, j))
            return false;
    return true;
}

/* The live node defining v if it is a BINARY with function fn, or IR_NONE. */
static NodeId def_binary(IrGraph *g, ValId v, int fn)
{
    NodeId d = ir_val(g, v)->def;
    if (d == IR_NONE || g->nodes[d].dead || g->nodes[d].op != IR_OP_BINARY ||
        ir_attr_get_int(&g->nodes[d], "fn", -1) != fn)
        return IR_NONE;
    return d;
}

/* A QuantizeLinear's tail ending at CAST node qn: min (node), max, the optional add of
 * zq and the rounded value r; false when qn is not one whose clamp keeps the 8-bit
 * range (lo, hi integers in it) and whose intermediates are read by the tail only. */
typedef struct {
    NodeId add, max, min;
    int cmax, cmin;                        /* operand index of the clamp constants */
    ValId r;
    QVec zq, lo, hi;
    int64_t n;                             /* their common length */
} QTail;

static bool match_tail(IrGraph *g, const uint32_t *nuse, NodeId qn, QTail *t)
{
    const IrNode *q = &g->nodes[qn];
    IrDType to = q->nout == 1 ? ir_vtype(g, q->out[0])->dtype : IR_DT_UNDEF;
    if (q->op != IR_OP_CAST || q->nin != 1 || (to != IR_DT_I8 && to != IR_DT_U8) ||
        ir_vtype(g, q->in[0])->dtype != IR_DT_F32)
        return false;
    double tmin = to == IR_DT_I8 ? -128 : 0, tmax = to == IR_DT_I8 ? 127 : 255;
    t->zq = (QVec){&rq_zero, 1};
    t->min = def_binary(g, q->in[0], IR_BIN_MIN);
    if (t->min == IR_NONE || nuse[q->in[0]] != 1 ||
        (t->cmin = const_side(g, &g->nodes[t->min], &t->hi)) < 0)
        return false;
    ValId v = g->nodes[t->min].in[1 - t->cmin];
    t->max = def_binary(g, v, IR_BIN_MAX);
    if (t->max == IR_NONE || nuse[v] != 1 ||
        (t->cmax = const_side(g, &g->nodes[t->max], &t->lo)) < 0)
        return false;
    ValId u = g->nodes[t->max].in[1 - t->cmax];
    int cz;
    t->add = def_binary(g, u, IR_BIN_ADD);
    t->r = u;
    if (t->add != IR_NONE) {
        if (nuse[u] != 1 || (cz = const_side(g, &g->nodes[t->add], &t->zq)) < 0)
            return false;
        t->r = g->nodes[t->add].in[1 - cz];
    }
    NodeId rn = ir_val(g, t->r)->def;
    QVec all[3] = {t->zq, t->lo, t->hi};
    if (rn == IR_NONE || g->nodes[rn].op != IR_OP_UNARY ||
        ir_attr_get_int(&g->nodes[rn], "fn", -1) != IR_UN_ROUND || (t->n = qv_len(all, 3)) == 0)
        return false;
    for (int64_t j = 0; j < t->n; j++) {
        double lo = qv_at(&t->lo, j), hi = qv_at(&t->hi, j), zq = qv_at(&t->zq, j);
        if (lo != floor(lo) || hi != floor(hi) || zq != floor(zq) || fabs(zq) > 256 ||
            lo < tmin || hi > tmax || lo > hi)
            return false;
    }
    return true;
}

bool fuse_uses_inside(const FoldUses *u, ValId v, uint32_t gi)
{
    if (u->is_out[v])
        return false;
    for (uint32_t i = u->ufirst[v]; i < u->ufirst[v + 1]; i++)
        if (u->grp[u->ulist[i]] != gi)
            return false;
    return true;
}

/* Whether CAST node fn (8 bits to float32, in group gi) can read the clamped value
 * instead: its one reader subtracts a column constant zd (*sub: that node; *zd its
 * values) whose length agrees with the tail's, or zq is 0 and its readers take the
 * value as it is (*sub = IR_NONE). */
static bool match_head(IrGraph *g, const FoldUses *u, NodeId fn, uint32_t gi, const QTail *t,
                       NodeId *sub, QVec *zd)
{
    const IrNode *c = &g->nodes[fn];
    *sub = IR_NONE;
    if (c->op != IR_OP_CAST || c->nout != 1 || ir_vtype(g, c->out[0])->dtype != IR_DT_F32 ||
        u->grp[fn] != gi || !fuse_uses_inside(u, c->out[0], gi))
        return false;
    ValId f = c->out[0];
    if (u->ufirst[f + 1] - u->ufirst[f] == 1) {
        NodeId s = u->ulist[u->ufirst[f]];
        const IrNode *sn = &g->nodes[s];
        QVec both[2] = {t->zq, {0}};
        if (sn->op == IR_OP_BINARY && ir_attr_get_int(sn, "fn", -1) == IR_BIN_SUB &&
            sn->in[0] == f && col_f32(g, sn->in[1], zd)) {
            both[1] = *zd;
            if (qv_len(both, 2) == 0 || (t->n > 1 && zd->n > 1 && zd->n != t->n))
                return false;
            *sub = s;
            return true;
        }
    }
    QVec zero = {&rq_zero, 1};
    return qv_eq(&t->zq, &zero, t->n);
}

/* Fold the requantization round trip whose 8-bit value is made by CAST node qn, when
 * all of it lies in qn's group (the file's comment); true when folded. */
static bool fold_one(IrGraph *g, const FoldUses *u, NodeId qn)
{
    QTail t;
    uint32_t gi = u->grp[qn];
    ValId q = g->nodes[qn].out[0];
    if (gi == IR_NONE || !match_tail(g, u->nuse, qn, &t) || u->grp[t.min] != gi ||
        u->grp[t.max] != gi || (t.add != IR_NONE && u->grp[t.add] != gi) ||
        u->ufirst[q + 1] == u->ufirst[q] || !fuse_uses_inside(u, q, gi))
        return false;
    NodeId sub;
    QVec zd;
    for (uint32_t i = u->ufirst[q]; i < u->ufirst[q + 1]; i++)
        if (!match_head(g, u, u->ulist[i], gi, &t, &sub, &zd))
            return false;
    ValId w = g->nodes[t.min].out[0];
    for (uint32_t i = u->ufirst[q]; i < u->ufirst[q + 1]; i++) {
        NodeId fn = u->ulist[i];
        ValId f = g->nodes[fn].out[0];
        match_head(g, u, fn, gi, &t, &sub, &zd);
        QVec both[2] = {t.zq, zd};
        int64_t n = sub != IR_NONE ? qv_len(both, 2) : 1;
        /* the subtraction stays (w - (zd - zq)) unless zd == zq and its result is read
         * only inside the group: a result the kernel stores for another keeps its node */
        if (sub != IR_NONE &&
            (!qv_eq(&zd, &t.zq, n) || !fuse_uses_inside(u, g->nodes[sub].out[0], gi))) {
            g->nodes[sub].in[0] = w;
            g->nodes[sub].in[1] = qv_sub(g, &zd, &t.zq, n);
        } else {
            if (sub != IR_NONE) {          /* zd == zq: the subtraction goes too */
                f = g->nodes[sub].out[0];
                g->nodes[sub].dead = true;
                u->grp[sub] = IR_NONE;
            }
            for (uint32_t j = u->ufirst[f]; j < u->ufirst[f + 1]; j++)
                for (int k = 0; k < g->nodes[u->ulist[j]].nin; k++)
                    if (g->nodes[u->ulist[j]].in[k] == f)
                        g->nodes[u->ulist[j]].in[k] = w;
        }
        g->nodes[fn].dead = true;
        u->grp[fn] = IR_NONE;
    }
    IrNode *mx = &g->nodes[t.max], *mn = &g->nodes[t.min];
    mx->in[1 - t.cmax] = t.r;
    mx->in[t.cmax] = qv_sub(g, &t.lo, &t.zq, t.n);
    mn->in[t.cmin] = qv_sub(g, &t.hi, &t.zq, t.n);
    if (t.add != IR_NONE) {
        g->nodes[t.add].dead = true;
        u->grp[t.add] = IR_NONE;
    }
    g->nodes[qn].dead = true;
    u->grp[qn] = IR_NONE;
    return true;
}

uint32_t fuse_fold_requant(IrGraph *g, const FoldUses *u)
{
    uint32_t nvals = g->nvals, folded = 0;
    for (NodeId n = 0; n < g->nnodes; n++)
        if (!g->nodes[n].dead && fold_one(g, u, n))
            folded++;
    if (g->nvals != nvals)
        plan_add_vals(g, g->plan);         /* the new clamp and offset constants */
    return folded;
}
