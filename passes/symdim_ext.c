/* symdim_ext.c: extents used as values in a graph with bounded symbolic dimensions.
 *
 * The frontend folds Shape(x) and Size(x) at the bounds, and the shape arithmetic after
 * them folds too (ir_ext.c tags the results): a Reshape or Expand target, a Range end
 * or a mask's extent read from such a constant follow the symbol through pass_symdim's
 * axes. A constant that reaches a live node as an input is a value, though: the
 * length of a symbolic axis used as data (x.sum(1) / x.shape[1]) would be the bound's
 * at every size. Such an input that is the extent itself (cast at most), one element,
 * becomes the actual size (the symbol's count, cast); anything computed from it
 * (shape[1] - 1, a shape vector as data) is refused, naming the node and the dimension.
 */
#include <string.h>

#include "symdim.h"

/* Whether the extent tag e lies along a symbolic axis: 0, no (or unknown); 1, a plain
 * one of symbol *k; 2, one merged with others, padded or concatenated (*k its first
 * symbol). */
static int tag_symbol(const Sd *d, IrExtElem e, int *k)
{
    const SdVal *s = e.src == IR_NONE ? NULL : sd_get(d, e.src);
    if (!s)
        return 0;
    int rank = ir_vtype(d->g, e.src)->rank;
    for (int a = 0; a < rank; a++) {
        const SdAxis *x = &s->ax[a];
        if (e.axis != IR_EXT_ALL && e.axis != a)
            continue;
        for (int p = 0; p < x->np; p++)   /* a concatenated axis: pieces' sizes summed */
            for (int f = 0; f < x->pc[p].n; f++)
                if (x->pc[p].sym[f] >= 0) {
                    *k = x->pc[p].sym[f];
                    return 2;
                }
        for (int f = 0; f < x->n; f++)
            if (x->sym[f] >= 0) {
                *k = x->sym[f];
                return e.axis == IR_EXT_ALL || x->n != 1 || x->plo || x->phi ? 2 : 1;
            }
    }
    return 0;
}

/* The actual size of symbol k as value v's dtype and shape (one element). */
static ValId actual_extent(Sd *d, int k, ValId v, const IrOrigin *og)
{
    const IrType *t = ir_vtype(d->g, v);
    ValId c = pass_symdim_count(d, k, 1, og);
    if (t->dtype != IR_DT_I32)
        c = ir_cast(d->g, c, t->dtype, og);
    return ir_reshape(d->g, c, t->dims, t->rank, og);
}

bool pass_symdim_ext_inputs(Sd *d, IrNode *n)
{
    for (int i = 0; i < n->nin; i++) {
        ValId v = n->in[i];
        const IrValue *c = v == IR_NONE ? NULL : ir_val(d->g, v);
        if (!c || c->kind != IR_VAL_CONST || !c->ext)
            continue;
        int64_t numel = ir_type_numel(&c->type);
        int kind = 0, sym = -1;
        for (int64_t j = 0; j < numel && !kind; j++)
            kind = tag_symbol(d, ir_ext_at(c->ext, (uint64_t)j), &sym);
        if (!kind)
            continue;
        if (kind == 1 && numel == 1 && ir_ext_at(c->ext, 0).exact) {
            if (!d->plan)
                n->in[i] = actual_extent(d, sym, v, &n->origin);
            continue;
        }
        ir_error(d->g, &n->origin, "unsupported: a value computed from the extent of the "
                 "bounded dynamic dimension '%s' (Shape or Size) is used as data; at run "
                 "time it would be that of the bound (fix its size with --input-shape)",
                 pass_symdim_name(d, sym));
        return false;
    }
    return true;
}
