/* ir_ext.c: the extent tags of constants (ir.h IrExt): which elements of a constant were
 * computed from the extents of values that the frontend folded at the bounds of bounded
 * symbolic dimensions (Shape(x) and Size(x) are constants there), carried through the
 * folding of the small shape arithmetic that follows them (Gather, Slice, Concat,
 * Reshape, Cast: element by element; other ops: every element computed from the first
 * tagged one). pass_symdim reads them where a live node takes such a constant as an
 * input: an extent along a symbolic axis used as a value (x.sum(1) / x.shape[1]) would
 * otherwise be the bound's at every size.
 */
#include <string.h>

#include "ir.h"

#define EXT_MAX_ELEMS 4096                 /* tagged element by element up to this many */

/* A tag of n elements (or one uniform one), every element untagged. */
static IrExt *ext_new(IrGraph *g, uint64_t n, bool uniform)
{
    uint64_t k = uniform ? 1 : n;
    IrExt *x = ir_alloc(g, sizeof *x + (size_t)k * sizeof(IrExtElem));
    x->n = k;
    x->uniform = uniform;
    for (uint64_t i = 0; i < k; i++)
        x->e[i] = (IrExtElem){.src = IR_NONE, .nstep = -1};
    return x;
}

IrExtElem ir_ext_at(const IrExt *x, uint64_t i)
{
    if (!x || (!x->uniform && i >= x->n))
        return (IrExtElem){.src = IR_NONE, .nstep = -1};
    return x->e[x->uniform ? 0 : i];
}

void ir_ext_set(IrGraph *g, ValId c, ValId x, int first, bool all)
{
    IrValue *v = ir_val(g, c);
    int64_t n = ir_type_numel(&v->type);
    if (n < 1 || n > EXT_MAX_ELEMS)
        return;
    IrExt *t = ext_new(g, (uint64_t)n, false);
    for (int64_t i = 0; i < n; i++)
        t->e[i] = (IrExtElem){.src = x, .axis = (int16_t)(all ? IR_EXT_ALL : first + i),
                               .exact = !all, .nstep = all ? -1 : 0};
    v->ext = t;
}

void ir_ext_set_uniform(IrGraph *g, ValId c, ValId x, int axis)
{
    IrExt *t = ext_new(g, 1, true);
    t->e[0] = (IrExtElem){.src = x, .axis = (int16_t)axis, .nstep = -1};
    ir_val(g, c)->ext = t;
}

/* The first tagged element of the node's inputs (src IR_NONE when none). */
static IrExtElem first_tag(IrGraph *g, const IrNode *n)
{
    for (int k = 0; k < n->nin; k++) {
        const IrExt *x = n->in[k] == IR_NONE ? NULL : ir_val(g, n->in[k])->ext;
        for (uint64_t i = 0; x && i < x->n; i++)
            if (x->e[i].src != IR_NONE)
                return x->e[i];
    }
    return (IrExtElem){.src = IR_NONE, .nstep = -1};
}

/* Index j of a GATHER's constant indices (i32 or i64), wrapped by extent n. */
static int64_t gather_index(const IrValue *idx, uint64_t j, int64_t n)
{
    int64_t k = idx->type.dtype == IR_DT_I32 ? ((const int32_t *)idx->data)[j]
                                             : ((const int64_t *)idx->data)[j];
    return k < 0 ? k + n : k;
}

/* Output element j's source element in input 0 for the moves that keep elements apart
 * on rank-1 data (GATHER, SLICE) or in order (RESHAPE, CAST, BITCAST); -1: not one. */
static int64_t moved_from(IrGraph *g, const IrNode *n, uint64_t j)
{
    const IrType *it = &ir_val(g, n->in[0])->type;
    const int64_t *st, *sp;
    switch (n->op) {
    case IR_OP_RESHAPE: case IR_OP_CAST: case IR_OP_BITCAST:
        return (int64_t)j;
    case IR_OP_GATHER: {
        const IrValue *idx = ir_val(g, n->in[1]);
        int64_t k = it->rank == 1 && idx->kind == IR_VAL_CONST
                        ? gather_index(idx, j, it->dims[0]) : -1;
        return k >= 0 && k < it->dims[0] ? k : -1;
    }
    case IR_OP_SLICE:
        if (it->rank != 1 || ir_attr_get_ints(n, "starts", &st) != 1 ||
            ir_attr_get_ints(n, "steps", &sp) != 1)
            return -1;
        return st[0] + (int64_t)j * sp[0];
    default:
        return -1;
    }
}

/* Output element j of a CONCAT of rank-1 inputs: its tag. */
static IrExtElem concat_elem(IrGraph *g, const IrNode *n, uint64_t j)
{
    for (int k = 0; k < n->nin; k++) {
        const IrValue *v = ir_val(g, n->in[k]);
        uint64_t m = (uint64_t)v->type.dims[0];
        if (j < m)
            return ir_ext_at(v->ext, j);
        j -= m;
    }
    return (IrExtElem){.src = IR_NONE, .nstep = -1};
}

int64_t ir_ext_eval(const IrExtElem *e, int64_t v)
{
    for (int i = 0; i < e->nstep && v >= 0; i++) {
        int64_t c = e->arg[i];
        v = e->step[i] == IR_EXT_ADD ? v + c : e->step[i] == IR_EXT_MUL ? v * c : v / c;
        if (v > INT32_MAX)
            return -1;
    }
    return v < 0 || e->nstep < 0 ? -1 : v;
}

/* The integer constant element j of v (one element broadcast), into *c; false when v
 * is no integer constant or the element lies outside int32. */
static bool int_elem(const IrValue *v, uint64_t j, int64_t *c)
{
    if (v->kind != IR_VAL_CONST || v->ext || (v->type.dtype != IR_DT_I64 &&
                                              v->type.dtype != IR_DT_I32))
        return false;
    uint64_t k = ir_type_numel(&v->type) == 1 ? 0 : j;
    *c = v->type.dtype == IR_DT_I64 ? ((const int64_t *)v->data)[k]
                                    : ((const int32_t *)v->data)[k];
    return *c >= INT32_MIN && *c <= INT32_MAX;
}

/* Tag e with one step more: the BINARY n (fn) of its element by the constant c (on the
 * right when right); the formula dropped (nstep -1) when the step is none of + c, - c,
 * * c, / c with c positive (an exporter's size arithmetic) or there is no room. */
static IrExtElem add_step(IrExtElem e, int fn, int64_t c, bool right)
{
    int st = fn == IR_BIN_ADD ? IR_EXT_ADD : fn == IR_BIN_SUB && right ? IR_EXT_ADD
             : fn == IR_BIN_MUL && c >= 1 ? IR_EXT_MUL : fn == IR_BIN_DIV && right && c >= 1
                                                            ? IR_EXT_DIV : -1;
    if (e.nstep < 0 || st < 0 || e.nstep == IR_EXT_STEPS) {
        e.nstep = -1;
        return e;
    }
    e.step[e.nstep] = (uint8_t)st;
    e.arg[e.nstep++] = (int32_t)(fn == IR_BIN_SUB ? -c : c);
    return e;
}

/* Element j of a pointwise node's output: the tag of the tagged input element it reads
 * (same shape, or a single element broadcast), no longer exact but for a CAST's; an
 * integer BINARY with a constant keeps the formula going (add_step). */
static IrExtElem pointwise_elem(IrGraph *g, const IrNode *n, uint64_t j, uint64_t numel)
{
    for (int k = 0; k < n->nin; k++) {
        const IrValue *v = ir_val(g, n->in[k]);
        int64_t m = ir_type_numel(&v->type);
        IrExtElem e = ir_ext_at(v->ext, m == 1 ? 0 : j);
        if (v->ext && (m == 1 || (uint64_t)m == numel) && e.src != IR_NONE) {
            int64_t c;
            e.exact = false;
            if (n->op == IR_OP_BINARY && n->nin == 2 &&
                ir_dtype_is_int(v->type.dtype) && int_elem(ir_val(g, n->in[1 - k]), j, &c))
                return add_step(e, (int)ir_attr_get_int(n, "fn", -1), c, k == 0);
            e.nstep = -1;
            return e;
        }
    }
    return (IrExtElem){.src = IR_NONE, .nstep = -1};
}

void ir_ext_fold(IrGraph *g, const IrNode *n)
{
    IrExtElem any = first_tag(g, n);
    if (any.src == IR_NONE)
        return;
    any.exact = false;
    any.nstep = -1;
    for (int o = 0; o < n->nout; o++) {
        IrValue *v = ir_val(g, n->out[o]);
        int64_t numel = ir_type_numel(&v->type);
        bool rank1 = n->nin > 0 && ir_val(g, n->in[0])->type.rank == 1;
        bool elementwise = numel >= 1 && numel <= EXT_MAX_ELEMS && n->nout == 1 &&
                           (n->op == IR_OP_RESHAPE || n->op == IR_OP_CAST ||
                            n->op == IR_OP_BITCAST || n->op == IR_OP_GATHER ||
                            n->op == IR_OP_SLICE || n->op == IR_OP_BINARY ||
                            n->op == IR_OP_UNARY || (n->op == IR_OP_CONCAT && rank1));
        if (!elementwise) {                /* every element from the first tagged one */
            IrExt *t = ext_new(g, 1, true);
            t->e[0] = any;
            v->ext = t;
            continue;
        }
        IrExt *t = ext_new(g, (uint64_t)numel, false);
        for (uint64_t j = 0; j < (uint64_t)numel; j++) {
            if (n->op == IR_OP_CONCAT) {
                t->e[j] = concat_elem(g, n, j);
            } else if (n->op == IR_OP_BINARY || n->op == IR_OP_UNARY) {
                t->e[j] = pointwise_elem(g, n, j, (uint64_t)numel);
            } else {
                int64_t k = moved_from(g, n, j);
                t->e[j] = k >= 0 ? ir_ext_at(ir_val(g, n->in[0])->ext, (uint64_t)k) : any;
            }
        }
        v->ext = t;
    }
}

bool ir_symlike_formula(const IrNode *n, IrExtElem *f)
{
    const int64_t *v;
    int k = ir_attr_get_ints(n, "formula", &v);
    *f = (IrExtElem){.src = IR_NONE, .nstep = -1};
    if (k < 2 || k % 2 || k / 2 > IR_EXT_STEPS)
        return false;
    f->nstep = 0;
    for (int i = 0; i < k; i += 2) {
        if (v[i] < IR_EXT_ADD || v[i] > IR_EXT_DIV || v[i + 1] < INT32_MIN ||
            v[i + 1] > INT32_MAX || (v[i] != IR_EXT_ADD && v[i + 1] < 1)) {
            f->nstep = -1;
            return false;
        }
        f->step[f->nstep] = (uint8_t)v[i];
        f->arg[f->nstep++] = (int32_t)v[i + 1];
    }
    return true;
}
