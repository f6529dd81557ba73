/* ir_ident.c: the ident hooks of ops.def: when a core node computes one of its inputs
 * unchanged (reshape/expand/slice to the same shape, identity transposes, casts to the
 * same dtype, zero pads, one-input concats, x*1, 1*x, x+0, 0+x, x-0, x/1 when the other
 * operand does not broadcast x to a bigger shape). pass_simplify removes such nodes.
 */
#include "ir.h"
#include "ir_priv.h"

/* Input 0 of n when it has exactly n's (single) output type, else IR_NONE. */
static ValId same_input(IrGraph *g, const IrNode *n)
{
    ValId x = n->nin ? n->in[0] : IR_NONE;
    return x != IR_NONE && ir_type_eq(ir_vtype(g, x), ir_vtype(g, n->out[0])) ? x : IR_NONE;
}

/* Whether every element of constant v equals x (and v has elements). */
static bool const_all(IrGraph *g, ValId v, double x)
{
    if (!ir_is_const(g, v))
        return false;
    const IrType *t = ir_vtype(g, v);
    int64_t n = ir_type_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (ir_load_f(t->dtype, ir_val(g, v)->data, (size_t)i) != x)
            return false;
    return n > 0;
}

/* Whether an ints attribute is all zero (absent counts as zero). */
static bool ints_zero(const IrNode *n, const char *name)
{
    const int64_t *v;
    int k = ir_attr_get_ints(n, name, &v);
    for (int i = 0; i < k; i++)
        if (v[i] != 0)
            return false;
    return true;
}

/* Ops that never pass an input through. */
ValId ir_ident_none(IrGraph *g, const IrNode *n)
{
    (void)g;
    (void)n;
    return IR_NONE;
}

/* RESHAPE, EXPAND, CAST, BITCAST: the identity when the type does not change. */
ValId ir_ident_same(IrGraph *g, const IrNode *n)
{
    return same_input(g, n);
}

/* TRANSPOSE by the identity permutation. */
ValId ir_ident_transpose(IrGraph *g, const IrNode *n)
{
    const int64_t *p;
    int k = ir_attr_get_ints(n, "perm", &p);
    for (int i = 0; i < k; i++)
        if (p[i] != i)
            return IR_NONE;
    return same_input(g, n);
}

/* SLICE of everything from 0 by step 1. */
ValId ir_ident_slice(IrGraph *g, const IrNode *n)
{
    const int64_t *st, *sp;
    int k = ir_attr_get_ints(n, "starts", &st);
    ir_attr_get_ints(n, "steps", &sp);
    for (int i = 0; i < k; i++)
        if (st[i] != 0 || sp[i] != 1)
            return IR_NONE;
    if (ir_attr_get_int(n, "padok", 0))
        return IR_NONE;                    /* a recurrence's step: its axis is static */
    return same_input(g, n);
}

/* PAD by nothing (and not marked as holding at its extents only: attr bound). */
ValId ir_ident_pad(IrGraph *g, const IrNode *n)
{
    ValId x = same_input(g, n);
    return x != IR_NONE && ints_zero(n, "pads") && ints_zero(n, "interior") &&
                   !ir_attr_get_int(n, "bound", 0)
               ? x
               : IR_NONE;
}

/* CONCAT of one input. */
ValId ir_ident_concat(IrGraph *g, const IrNode *n)
{
    return n->nin == 1 ? same_input(g, n) : IR_NONE;
}

/* BINARY with a neutral constant operand that does not broadcast the other one. */
ValId ir_ident_binary(IrGraph *g, const IrNode *n)
{
    int fn = (int)ir_attr_get_int(n, "fn", -1);
    ValId a = n->in[0], b = n->in[1];
    const IrType *to = ir_vtype(g, n->out[0]);
    bool a_ok = ir_type_eq(ir_vtype(g, a), to), b_ok = ir_type_eq(ir_vtype(g, b), to);
    double unit;                           /* the neutral operand */
    bool either;                           /* it may stand on either side */
    switch (fn) {
    case IR_BIN_ADD: unit = 0, either = true; break;
    case IR_BIN_MUL: unit = 1, either = true; break;
    case IR_BIN_SUB: unit = 0, either = false; break;
    case IR_BIN_DIV: unit = 1, either = false; break;
    default: return IR_NONE;
    }
    if (a_ok && const_all(g, b, unit))
        return a;
    if (either && b_ok && const_all(g, a, unit))
        return b;
    return IR_NONE;
}
