/* symdim_mask.c: the masks of pass_symdim (passes/symdim.c): the actual size of each
 * symbol on the device (a slice of the dims input, or derived from another size by a
 * window's arithmetic), the bool mask of an axis's valid positions, the SELECT that
 * replaces padding by a neutral element (where a viewed value is computed when it can:
 * symdim_source.c), and the actual divisor of a mean.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "symdim.h"

/* The actual size of symbol k as an i32 tensor of rank r with every dim 1. */
ValId pass_symdim_count(Sd *d, int k, int r, const IrOrigin *og)
{
    if (d->count[k] == IR_NONE && k >= d->nbase) {
        const SdDerived *dv = &d->der[k - d->nbase];
        IrType ct = {.dtype = IR_DT_I32, .rank = 1, .dims = {1}};
        int32_t add = (int32_t)dv->add, div = (int32_t)dv->div, mul = (int32_t)dv->mul, one = 1;
        ValId c = pass_symdim_count(d, dv->parent, 1, og);
        if (mul != 1)
            c = ir_binary(d->g, IR_BIN_MUL, c,
                          ir_add_const(d->g, ir_fresh_name(d->g, "sym_mul"), &ct, &mul), og);
        c = ir_binary(d->g, IR_BIN_ADD, c, ir_add_const(d->g, ir_fresh_name(d->g, "sym_add"),
                                                        &ct, &add), og);
        c = ir_binary(d->g, IR_BIN_DIV, c, ir_add_const(d->g, ir_fresh_name(d->g, "sym_div"),
                                                        &ct, &div), og);
        d->count[k] = ir_binary(d->g, IR_BIN_ADD, c,
                                ir_add_const(d->g, ir_fresh_name(d->g, "sym_one"), &ct, &one),
                                og);
    }
    if (d->count[k] == IR_NONE) {
        int64_t st = k, sp = 1, sz = 1;
        IrAttr at[3] = {ir_attr_ints_ref("starts", &st, 1), ir_attr_ints_ref("steps", &sp, 1),
                        ir_attr_ints_ref("sizes", &sz, 1)};
        NodeId sl = ir_add_node(d->g, IR_OP_SLICE, &d->syms, 1, at, 3, og);
        d->count[k] = d->g->nodes[sl].out[0];
    }
    int64_t ones[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        ones[i] = 1;
    return r == 1 ? d->count[k] : ir_reshape(d->g, d->count[k], ones, r, og);
}

ValId pass_symdim_extent(Sd *d, const SdAxis *x, int64_t ext, const IrOrigin *og)
{
    IrGraph *g = d->g;
    IrType ct = {.dtype = IR_DT_I32, .rank = 1, .dims = {1}};
    int32_t stat = x ? (int32_t)(x->plo + x->phi) : (int32_t)ext, mul = 1;
    ValId n = IR_NONE;
    for (int f = 0; x && f < x->n; f++) {
        if (x->sym[f] < 0) {
            mul *= (int32_t)x->size[f];
            continue;
        }
        ValId c = pass_symdim_count(d, x->sym[f], 1, og);
        n = n == IR_NONE ? c : ir_binary(g, IR_BIN_MUL, n, c, og);
    }
    if (x && n == IR_NONE)                 /* no symbol: the static extent */
        stat = (int32_t)ext, mul = 1;
    if (n != IR_NONE && mul != 1)
        n = ir_binary(g, IR_BIN_MUL, n, ir_add_const(g, ir_fresh_name(g, "sym_extent"), &ct,
                                                     &mul), og);
    if (n != IR_NONE && stat == 0)
        return n;
    ValId k = ir_add_const(g, ir_fresh_name(g, "sym_extent"), &ct, &stat);
    return n == IR_NONE ? k : ir_binary(g, IR_BIN_ADD, n, k, og);
}

/* Bool mask of the valid positions of axis a (factors x) of a rank-r value: shape
 * [1.., dims[a], ..1], true where every symbolic factor's coordinate is below its
 * actual size. */
ValId pass_symdim_axis_mask(Sd *d, const SdAxis *x, int a, int r, int64_t len,
                            const IrOrigin *og)
{
    ValId m = IR_NONE;
    int64_t inner = 1;
    for (int f = x->n - 1; f >= 0; f--) {
        if (x->sym[f] >= 0) {
            IrType ct = {.dtype = IR_DT_I32, .rank = r};
            for (int i = 0; i < r; i++)
                ct.dims[i] = i == a ? len : 1;
            int32_t *c = ir_alloc(d->g, (size_t)len * sizeof *c);
            for (int64_t i = 0; i < len; i++)
                c[i] = (int32_t)((i / inner) % x->size[f]);
            ValId coord = ir_add_const(d->g, ir_fresh_name(d->g, "sym_pos"), &ct, c);
            ValId lt = ir_binary(d->g, IR_BIN_LT, coord, pass_symdim_count(d, x->sym[f], r, og), og);
            m = m == IR_NONE ? lt : ir_binary(d->g, IR_BIN_AND, m, lt, og);
        }
        inner *= x->size[f];
    }
    return m;
}

/* Does dtype t have the scalar constants of pass_symdim_neutral? */
static bool has_neutral(IrDType t)
{
    return t == IR_DT_F32 || t == IR_DT_I32 || t == IR_DT_I64 || t == IR_DT_I8;
}

/* The scalar constant neutral of v's dtype, or IR_NONE for a dtype without one. */
ValId pass_symdim_neutral(Sd *d, ValId v, double neutral)
{
    const IrType *t = ir_vtype(d->g, v);
    IrType st = {.dtype = t->dtype, .rank = 0};
    uint8_t buf[8] = {0};
    if (!has_neutral(t->dtype))
        return IR_NONE;
    if (t->dtype == IR_DT_F32) {
        float f = (float)neutral;
        memcpy(buf, &f, 4);
    } else if (t->dtype == IR_DT_I32) {
        int32_t i = isinf(neutral) ? (neutral > 0 ? INT32_MAX : INT32_MIN) : (int32_t)neutral;
        memcpy(buf, &i, 4);
    } else if (t->dtype == IR_DT_I64) {
        int64_t i = isinf(neutral) ? (neutral > 0 ? INT64_MAX : INT64_MIN) : (int64_t)neutral;
        memcpy(buf, &i, 8);
    } else if (t->dtype == IR_DT_I8) {   /* an int8 product's depth (dec_int_matmul) */
        int8_t i = neutral >= 127 ? 127 : neutral <= -128 ? -128 : (int8_t)neutral;
        memcpy(buf, &i, 1);
    }
    return ir_add_const(d->g, ir_fresh_name(d->g, "sym_pad"), &st, buf);
}

/* v with its padding along axis a (factors x) replaced by the scalar neutral: at the
 * source of a view (symdim_source.c) when it can be, else by a SELECT on v (its masked
 * source's value when v is one). The planning walk only records the source's need. */
ValId pass_symdim_mask(Sd *d, ValId v, const SdAxis *x, int a, double neutral,
                       const IrOrigin *og)
{
    const IrType *t = ir_vtype(d->g, v);
    if (!has_neutral(t->dtype) || x->np)   /* a concatenated axis: no prefix to keep */
        return IR_NONE;
    if (d->plan) {
        pass_symdim_plan_source(d, v, x, neutral);
        return v;
    }
    ValId r = pass_symdim_at_source(d, v, x, neutral, og);
    if (r != IR_NONE)
        return r;
    ValId nv = pass_symdim_neutral(d, v, neutral);
    return ir_select(d->g, pass_symdim_axis_mask(d, x, a, t->rank, t->dims[a], og),
                     pass_symdim_now(d, v), nv, og);
}

ValId pass_symdim_mask_pad(Sd *d, ValId v, const SdVal *s, const bool *axes, double neutral,
                           const IrOrigin *og)
{
    IrGraph *g = d->g;
    const IrNode *p = ir_val(g, v)->def != IR_NONE ? ir_node(g, ir_val(g, v)->def) : NULL;
    if (p && (p->op == IR_OP_RESHAPE || p->op == IR_OP_TRANSPOSE || p->op == IR_OP_SLICE))
        return IR_NONE;                    /* a view: masked at its source, axis by axis */
    if (ir_val(g, v)->kind == IR_VAL_INPUT && neutral == 0 && !signbit(neutral))
        return v;                          /* the runtime zeroes an input's padding (sbin.md) */
    const IrType *t = ir_vtype(g, v);
    SdMask want = {.rank = t->rank, .mask = IR_NONE};
    for (int a = 0; a < t->rank; a++) {
        want.dims[a] = axes[a] ? t->dims[a] : 1;
        want.sym[a] = axes[a] ? s->ax[a].sym[0] : -1;
        if (axes[a] && (s->ax[a].n != 1 || want.sym[a] < 0))
            return IR_NONE;
    }
    if (!has_neutral(t->dtype))
        return IR_NONE;
    if (d->plan)
        return v;                          /* the planning walk makes no node */
    int ks[IR_MAX_RANK], nk = 0;
    for (int a = 0; a < t->rank; a++)
        if (axes[a])
            ks[nk++] = want.sym[a];
    ValId done = pass_symdim_masked(d, v, ks, nk, neutral);
    if (done != IR_NONE)
        return done;                       /* masked at its source for all its users */
    ValId nv = pass_symdim_neutral(d, v, neutral);
    for (int i = 0; i < d->nmasks && want.mask == IR_NONE; i++)
        if (d->masks[i].rank == want.rank &&
            !memcmp(d->masks[i].dims, want.dims, (size_t)want.rank * sizeof want.dims[0]) &&
            !memcmp(d->masks[i].sym, want.sym, (size_t)want.rank * sizeof want.sym[0]))
            want.mask = d->masks[i].mask;
    if (want.mask == IR_NONE) {
        for (int a = 0; a < t->rank; a++) {
            if (!axes[a])
                continue;
            ValId m = pass_symdim_axis_mask(d, &s->ax[a], a, t->rank, t->dims[a], og);
            want.mask = want.mask == IR_NONE ? m : ir_binary(g, IR_BIN_AND, want.mask, m, og);
        }
        if (want.mask == IR_NONE)
            return IR_NONE;
        if (d->nmasks < SD_MAXMASKS)
            d->masks[d->nmasks++] = want;
    }
    return ir_select(g, want.mask, pass_symdim_now(d, v), nv, og);
}

/* A multiplication of a sum over symbolic axes (SdSum) by the constant 1 / (its element
 * count at the bounds): a mean, whose divisor becomes the actual count, computed on the
 * device. Replaces that operand of n; false when n is no such product. */
bool pass_symdim_mean(Sd *d, IrNode *n)
{
    if (n->op != IR_OP_BINARY || ir_attr_get_int(n, "fn", -1) != IR_BIN_MUL)
        return false;
    for (int i = 0; i < 2; i++) {
        const SdSum *m = n->in[i] < d->nvals ? d->sum[n->in[i]] : NULL;
        ValId c = n->in[1 - i];
        const IrValue *cv = ir_val(d->g, c);
        if (!m || cv->kind != IR_VAL_CONST || cv->type.dtype != IR_DT_F32 ||
            ir_type_numel(&cv->type) != 1)
            continue;
        float f = *(const float *)cv->data;
        if (fabs(f * m->bound_count - 1.0) > 1e-6)
            continue;
        IrType ct = {.dtype = IR_DT_I32, .rank = 1, .dims = {1}};
        int32_t sc = (int32_t)m->static_count;
        float one = 1.0f;
        ValId cnt = ir_add_const(d->g, ir_fresh_name(d->g, "sym_cnt"), &ct, &sc);
        for (int j = 0; j < m->nsym; j++)
            cnt = ir_binary(d->g, IR_BIN_MUL, cnt, pass_symdim_count(d, m->sym[j], 1, &n->origin),
                            &n->origin);
        ct.dtype = IR_DT_F32;
        ValId one_v = ir_add_const(d->g, ir_fresh_name(d->g, "sym_one"), &ct, &one);
        ValId recip = ir_binary(d->g, IR_BIN_DIV, one_v,     /* the constant first, always */
                                ir_cast(d->g, cnt, IR_DT_F32, &n->origin), &n->origin);
        n->in[1 - i] = recip;
        return true;
    }
    return false;
}

