/* symdim_steps.c: the marker ops of a computation unrolled along a bounded symbolic
 * axis (pass_symdim, passes/symdim.c; ir/ops.def SYMLEN, SYMLIKE).
 *
 * A recurrence (RNN, GRU, LSTM) over a symbolic sequence is unrolled at the bound: its
 * steps are slices of the sequence (SLICE with padok), each step's state update masked
 * by "step < SYMLEN(sequence, axis)", so that the steps past the actual length keep
 * the state (the reverse direction then starts at the last valid step), and the
 * per-step outputs are stacked back and declared to lie along the sequence's axis
 * (SYMLIKE). The decomposition cannot name the symbol (symbols are followed only
 * here); this pass resolves both ops:
 *   - SYMLEN becomes the actual extent: the product of the axis's factors, a symbol's
 *     actual size (pass_symdim_count) for each symbolic one, or the static extent;
 *   - SYMLIKE becomes y itself (a reshape to its own shape, a view), its axis taking
 *     the factors of like's axis, or (mul > 1: an upsampling by an integer factor,
 *     onnx_resize.c) a size derived from its symbol, mul times it.
 * Both are made only in graphs with symbolic dimensions, so none reaches the back end.
 */
#include "symdim.h"

/* Node n (a copy, re-added by the caller) becomes a reshape of v to v's own shape:
 * its output, which every user reads, is v. */
static void become_view(Sd *d, IrNode *n, ValId v)
{
    const IrType *t = ir_vtype(d->g, v);
    IrAttr *at = ir_alloc(d->g, sizeof *at);
    *at = ir_attr_ints(d->g, "shape", t->dims, t->rank);
    n->op = IR_OP_RESHAPE;
    n->in[0] = v;
    n->nin = 1;
    n->attrs = at;
    n->nattrs = 1;
}

/* SYMLEN: no symbolic axis on its output; replaced by the actual extent. */
static void symlen(Sd *d, IrNode *n)
{
    d->val[n->out[0]] = NULL;
    if (d->plan)
        return;
    int a = (int)ir_attr_get_int(n, "axis", 0);
    const SdVal *s = sd_get(d, n->in[0]);
    become_view(d, n, pass_symdim_extent(d, s ? &s->ax[a] : NULL,
                                         ir_vtype(d->g, n->in[0])->dims[a], &n->origin));
}

/* Whether axis x has a symbolic factor. */
static bool is_sym(const SdAxis *x)
{
    for (int f = 0; f < x->n; f++)
        if (x->sym[f] >= 0)
            return true;
    return false;
}

/* Symbol k (extent pmax at the bound) through the steps of formula f, as sizes derived
 * from it one step at a time (+ c: (p + c - 1) / 1 + 1; * c: (p * c - 1) / 1 + 1; / c:
 * p / c + 1, then one less); -1 when one cannot be derived. */
static int formula_sym(Sd *d, int k, const IrExtElem *f, int64_t pmax)
{
    int64_t v = pmax;
    for (int i = 0; i < f->nstep && k >= 0; i++) {
        int64_t c = f->arg[i];
        if (f->step[i] == IR_EXT_ADD) {
            k = pass_symdim_derived(d, k, 1, c - 1, 1, v, v + c);
            v += c;
        } else if (f->step[i] == IR_EXT_MUL) {
            k = pass_symdim_derived(d, k, c, -1, 1, v, v * c);
            v *= c;
        } else {
            k = pass_symdim_derived(d, k, 1, 0, c, v, v / c + 1);
            k = k < 0 ? k : pass_symdim_derived(d, k, 1, -2, 1, v / c + 1, v / c);
            v /= c;
        }
    }
    return k;
}

/* SYMLIKE: y's axes, axis `axis` those of like's axis `like_axis`, or with mul > 1 a
 * size derived from its one symbol (mul times it), or with a formula that symbol
 * through its steps (formula_sym); replaced by y. False (reported) when that size
 * cannot be derived. */
static bool symlike(Sd *d, IrNode *n)
{
    const IrType *t = ir_vtype(d->g, n->out[0]);
    const SdVal *y = sd_get(d, n->in[0]), *l = sd_get(d, n->in[1]);
    int a = (int)ir_attr_get_int(n, "axis", 0), b = (int)ir_attr_get_int(n, "like_axis", 0);
    int64_t mul = ir_attr_get_int(n, "mul", 1);
    IrExtElem f;
    bool formula = ir_symlike_formula(n, &f);
    SdVal *o = ir_scratch(d->g, sizeof *o);
    for (int i = 0; i < t->rank; i++)
        o->ax[i] = y ? y->ax[i] : (SdAxis){.n = 1, .size = {t->dims[i]}, .sym = {-1}};
    if (l && is_sym(&l->ax[b]) && mul == 1 && !formula)
        o->ax[a] = l->ax[b];
    else if (l && is_sym(&l->ax[b])) {
        const SdAxis *x = &l->ax[b];
        bool one = x->n == 1 && !x->plo && !x->phi;
        int k = !one ? -1
                : formula ? formula_sym(d, x->sym[0], &f, x->size[0])
                          : pass_symdim_derived(d, x->sym[0], mul, -1, 1, x->size[0], t->dims[a]);
        if (k < 0) {
            ir_error(d->g, &n->origin, "unsupported: %s along a bounded dynamic dimension "
                     "merged with others or padded", formula ? "a size computed from the "
                     "extent" : "an upsampling");
            return false;
        }
        o->ax[a] = (SdAxis){.n = 1, .size = {t->dims[a]}, .sym = {k}};
    }
    bool sym = false;
    for (int i = 0; i < t->rank; i++)
        sym |= is_sym(&o->ax[i]);
    d->val[n->out[0]] = sym ? o : NULL;
    if (!d->plan)
        become_view(d, n, n->in[0]);
    return true;
}

bool pass_symdim_steps(Sd *d, IrNode *n, bool *ok)
{
    *ok = true;
    if (n->op == IR_OP_SYMLEN)
        symlen(d, n);
    else if (n->op == IR_OP_SYMLIKE)
        *ok = symlike(d, n);
    else
        return false;
    return true;
}
