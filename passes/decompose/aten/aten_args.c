/* aten_args.c: the helpers that read ATen arguments by schema name (tensor inputs
 * named by the "_in_names" attribute, scalars and lists as attributes) and the
 * recorded output types; see aten.h.
 */
#include <string.h>

#include "aten.h"

/* The "_in_names" attribute written by the frontend. */
static const IrAttr *in_names(const DecCtx *c)
{
    const IrAttr *a = ir_attr_find(c->n, ATEN_IN_NAMES);
    return a && a->kind == IR_ATTR_STRINGS && a->n == c->n->nin ? a : NULL;
}

ValId aten_in(const DecCtx *c, const char *name)
{
    ValId v;
    return aten_ins(c, name, &v, 1) > 0 ? v : IR_NONE;
}

int aten_ins(const DecCtx *c, const char *name, ValId *out, int max)
{
    const IrAttr *a = in_names(c);
    int n = 0;
    for (uint32_t i = 0; a && i < a->n && n < max; i++)
        if (strcmp(a->strings[i], name) == 0)
            out[n++] = c->n->in[i];
    return n;
}

bool aten_in_strided(const DecCtx *c, const char *name)
{
    const IrAttr *a = in_names(c), *s = ir_attr_find(c->n, ATEN_IN_STRIDED);
    if (!a || !s || s->kind != IR_ATTR_INTS || s->n != a->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (strcmp(a->strings[i], name) == 0 && s->ints[i])
            return true;
    return false;
}

bool aten_need(DecCtx *c, const char *name, ValId *out)
{
    *out = aten_in(c, name);
    if (*out == IR_NONE)
        dec_err(c, "missing tensor argument '%s'", name);
    return *out != IR_NONE;
}

bool aten_num(const DecCtx *c, const char *name, double *out)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (!a || (a->kind != IR_ATTR_INT && a->kind != IR_ATTR_FLOAT))
        return false;
    *out = a->kind == IR_ATTR_INT ? (double)a->i : a->f;
    return true;
}

int aten_ints(DecCtx *c, const char *name, int64_t *v, int max, int n)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (!a)
        return -1;
    if (a->kind == IR_ATTR_INT) { /* a bare int where a list is expected */
        for (int i = 0; i < (n > 0 ? n : 1) && i < max; i++)
            v[i] = a->i;
        return n > 0 ? n : 1;
    }
    if (a->kind != IR_ATTR_INTS || (int)a->n > max) {
        dec_err(c, "argument '%s' is not a list of at most %d ints", name, max);
        return -2;
    }
    if (a->n == 1 && n > 1) {
        for (int i = 0; i < n && i < max; i++)
            v[i] = a->ints[0];
        return n;
    }
    for (uint32_t i = 0; i < a->n; i++)
        v[i] = a->ints[i];
    return (int)a->n;
}

bool aten_sp_ints(DecCtx *c, const char *name, int n, const int64_t *dflt, int64_t *v)
{
    int got = aten_ints(c, name, v, IR_MAX_RANK, n);
    if (got == -1 || got == 0) {
        for (int i = 0; i < n; i++)
            v[i] = dflt[i];
        return true;
    }
    if (got != n) {
        if (got != -2)
            dec_err(c, "argument '%s' has %d entries, expected %d", name, got, n);
        return false;
    }
    return true;
}

const IrType *aten_oty(const DecCtx *c, int i)
{
    IR_ASSERT(i < c->n->nout);
    return ir_vtype(c->g, c->n->out[i]);
}

ValId aten_operand(DecCtx *c, const char *name, IrDType t)
{
    ValId v = aten_in(c, name);
    if (v != IR_NONE)
        return dec_cast(c, v, t);
    double x;
    if (aten_num(c, name, &x))
        return dec_scalar(c->g, t, x);
    dec_err(c, "missing argument '%s'", name);
    return IR_NONE;
}

/* Rank of a dtype in the promotion order. */
static int cat_rank(IrDType t)
{
    return ir_dtype_is_float(t) ? 2 : ir_dtype_is_int(t) ? 1 : 0;
}

IrDType aten_promote(IrDType a, IrDType b)
{
    if (cat_rank(a) != cat_rank(b))
        return cat_rank(a) > cat_rank(b) ? a : b;
    return ir_dtype_size(b) > ir_dtype_size(a) ? b : a;
}

ValId aten_like_out(DecCtx *c, ValId x, int i)
{
    return dec_cast(c, x, aten_oty(c, i)->dtype);
}
