/* symdim.c: bounded symbolic input dimensions (spyrec --dim, --input-shape MIN..MAX).
 *
 * The frontend types such an input at its upper bound and lists the axis in the
 * graph's symbol table (IrSymDim, ir/ir_dyn.c). The graph is computed at the bounds;
 * the runtime places an input of the actual size at the start of each bounded axis
 * (the rest zero) and gives the device the actual sizes in a hidden input (one int32
 * per symbol, SPY_TF_DIMS). This pass makes the result exact at every size: it follows
 * every symbolic axis through the final graph as a list of factors per axis (a reshape
 * may merge [batch, seq] into one row axis and split it again), and before each op that
 * combines elements along such an axis (a reduction, the K of a matrix product) it
 * replaces the padding by the op's neutral element (0 for sums and products' K, -inf
 * for max, ...) with a SELECT against the actual size (symdim_mask.c), so no padding
 * reaches a reduction, softmax, norm or attention; a mean divides by the actual count.
 * A SELECT on a view is applied to the value viewed, for all its users, right after
 * the op that computes it (symdim_source.c): a first walk over the graph only follows
 * the axes and plans those SELECTs, the second rewrites the graph.
 * Row-wise ops need nothing: padded rows are computed and thrown away, except that a
 * gather's indices along a symbolic axis are set to 0 at the padding (computed there,
 * e.g. position ids that count on through it, they could fail the device's range
 * check; real positions keep theirs, and the check). A pad on a
 * symbolic spatial axis masks its input first, and a convolution or pooling window
 * over it gives a derived size ((h + pads - extent) / stride + 1, computed on the
 * device). Graph outputs keep each symbolic axis whole (recorded as output entries of
 * the table: the runtime gives them their actual extents).
 *
 * Ops that move data along a symbolic axis other than as a whole (slices and concats
 * on it, gathers from it by data, reverse scans, a reshape that splits it) are refused
 * (a forward running sum reads only what precedes each position: it is exact), naming
 * the node and the dimension. Exceptions that are exact at every size: a slice of
 * positions below the dimension's minimum; the steps of a recurrence unrolled along it
 * (SLICE padok, SYMLEN, SYMLIKE: symdim_steps.c); a gather of constant indices counted
 * from the end, which the decomposition counts from the actual extent (inbounds); a
 * concatenation whose last piece only is symbolic along its axis (prop_concat); other
 * concatenations along it, whose result is an axis of pieces each laid out at its bound
 * (SdAxis.np), which only ops that keep it whole read and an output compacts; an
 * upsampling by interior padding (a transposed convolution) or by an integer factor
 * (Resize by scales), whose lengths are derived sizes (size * mul + add) / div + 1.
 * Constants folded from the bound (position ids, causal masks; a detector's cell grid
 * along a feature map's derived axes) are taken as the bound's row-major prefix of those
 * of a smaller size, which holds for what Range, Trilu and comparisons of positions
 * compute; an average pool's divisors that exclude its padding, which count the
 * bound's border (tagged IR_EXT_BOUND), are refused along a symbolic axis.
 *
 * A pointwise op or a concatenation may join two different sizes derived from one
 * input symbol (a U-Net's or a feature pyramid's upsampled map beside its skip
 * connection: 2 * ceil(ceil(h / 2) / 2) and ceil(h / 2)), which agree only at some
 * sizes (h a multiple of 4): the model runs at those only (onnxruntime fails at the
 * others). They are taken as one symbol (sd_join), and sd_steps finds the sizes in
 * [min, max] at which every joined pair agrees, by evaluating the derivations at each,
 * and takes the bound and every step-th size below it, the least step for which all of
 * those agree, which the runtime then requires of the input (IrSymDim.step, DIMREFS);
 * when none does, the node is refused. A size bucket keeps its bundle's step.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "symdim.h"

/* The first symbol of axis a (a concatenated one's: of its pieces), or -1. */
static int axis_sym(const SdAxis *a)
{
    for (int i = 0; i < a->n; i++)
        if (a->sym[i] >= 0)
            return a->sym[i];
    for (int p = 0; p < a->np; p++)
        for (int i = 0; i < a->pc[p].n; i++)
            if (a->pc[p].sym[i] >= 0)
                return a->pc[p].sym[i];
    return -1;
}

bool pass_symdim_ax_sym(const SdAxis *a)
{
    return a->np > 0 || axis_sym(a) >= 0;
}

/* Does axis a hold a symbolic factor? */
static bool ax_sym(const SdAxis *a)
{
    return pass_symdim_ax_sym(a);
}

/* The first symbol of value info s (NULL: none) on any axis, or -1. */
static int first_sym(const SdVal *s, int rank)
{
    for (int a = 0; s && a < rank; a++)
        if (axis_sym(&s->ax[a]) >= 0)
            return axis_sym(&s->ax[a]);
    return -1;
}

/* A fresh info for a value of type t with every axis one static factor. */
static SdVal *sd_new(Sd *d, const IrType *t)
{
    SdVal *s = ir_scratch(d->g, sizeof *s);
    for (int a = 0; a < t->rank; a++)
        s->ax[a] = (SdAxis){.n = 1, .size = {t->dims[a]}, .sym = {-1}};
    return s;
}

/* s, or NULL when no axis of the rank-r value is symbolic. */
static SdVal *sd_keep(SdVal *s, int r)
{
    return first_sym(s, r) >= 0 ? s : NULL;
}


/* The input symbol that symbol k is (a derived size: the dimension it is of). */
static int base_sym(const Sd *d, int k)
{
    while (k >= d->nbase && k - d->nbase < d->nder)
        k = d->der[k - d->nbase].parent;
    return k;
}

/* The name of symbol k, for messages. */
const char *pass_symdim_name(const Sd *d, int k)
{
    const IrGraph *g = d->g;
    k = base_sym(d, k);
    for (uint32_t i = 0; i < g->nsymdims; i++)
        if (g->symdims[i].sym == k)
            return g->symdims[i].name;
    return "?";
}

/* Whether axes x and y, symbolic and different, are taken as one (see the top of the
 * file): each one factor, unpadded, of one bound extent, derived from the same input
 * symbol; the pair is recorded, once, for sd_steps (og: the joining node). */
static bool sd_join(Sd *d, const SdAxis *x, const SdAxis *y, const IrOrigin *og)
{
    if (x->n != 1 || y->n != 1 || x->sym[0] < 0 || y->sym[0] < 0 || x->plo || x->phi ||
        y->plo || y->phi || x->size[0] != y->size[0] ||
        base_sym(d, x->sym[0]) != base_sym(d, y->sym[0]))
        return false;
    int a = x->sym[0], b = y->sym[0];
    for (int i = 0; i < d->neq; i++)
        if (!d->eq[i].mod &&
            ((d->eq[i].a == a && d->eq[i].b == b) || (d->eq[i].a == b && d->eq[i].b == a)))
            return true;
    if (d->neq == SD_MAXEQ)
        return false;
    d->eq[d->neq].a = a;
    d->eq[d->neq].b = b;
    d->eq[d->neq].add = d->eq[d->neq].mod = 0;
    d->eq[d->neq++].og = *og;
    return true;
}

/* Records, once, that a window of stride mod reading symbol a (padded by plo + phi,
 * extent e: add = plo + phi - e) must cover it exactly, for sd_steps; false when the
 * table is full. */
static bool sd_cover(Sd *d, int a, int64_t add, int64_t mod, const IrOrigin *og)
{
    for (int i = 0; i < d->neq; i++)
        if (d->eq[i].mod == mod && d->eq[i].a == a && d->eq[i].add == add)
            return true;
    if (d->neq == SD_MAXEQ)
        return false;
    d->eq[d->neq].a = d->eq[d->neq].b = a;
    d->eq[d->neq].add = add;
    d->eq[d->neq].mod = mod;
    d->eq[d->neq++].og = *og;
    return true;
}

/* Report node n, which combines elements along the bounded dimension k in a way the
 * exact-size rules do not cover. */
static bool refuse(Sd *d, const IrNode *n, int k, const char *what)
{
    ir_error(d->g, &n->origin, "unsupported: %s along the bounded dynamic dimension '%s' "
             "(fix its size with --input-shape, or use a model that keeps it whole)", what,
             pass_symdim_name(d, k));
    return false;
}

/* Pointwise (and broadcasting) node: each output axis takes the factors of an input
 * axis of the same extent that has symbols; two different ones are refused unless
 * sd_join takes them as one (the first operand's then). */
static bool prop_pointwise(Sd *d, IrNode *n, int nin)
{
    const IrType *ot = ir_vtype(d->g, n->out[0]);
    SdVal *o = sd_new(d, ot);
    for (int i = 0; i < nin; i++) {
        const SdVal *s = sd_get(d, n->in[i]);
        if (!s)
            continue;
        const IrType *t = ir_vtype(d->g, n->in[i]);
        for (int a = 0; a < t->rank; a++) {
            int oa = ot->rank - t->rank + a;
            if (!ax_sym(&s->ax[a]))
                continue;
            if (ax_sym(&o->ax[oa]) && memcmp(&o->ax[oa], &s->ax[a], sizeof s->ax[a])) {
                if (!sd_join(d, &o->ax[oa], &s->ax[a], &n->origin))
                    return refuse(d, n, first_sym(&(SdVal){.ax = {s->ax[a]}}, 1),
                                  "operands that disagree");
                continue;
            }
            o->ax[oa] = s->ax[a];
        }
    }
    for (int i = 0; i < nin; i++) {            /* divisors for the bound on a window's output */
        const IrType *t = ir_vtype(d->g, n->in[i]);
        bool bound = ir_is_const(d->g, n->in[i]) &&
                     ir_ext_at(ir_val(d->g, n->in[i])->ext, 0).axis == IR_EXT_BOUND;
        for (int a = 0; bound && a < t->rank; a++) {
            const SdAxis *x = &o->ax[ot->rank - t->rank + a];
            if (t->dims[a] <= 1 || !ax_sym(x))
                continue;
            ValId c = pass_symdim_pool_counts(d, n, i, &n->origin);
            if (c == IR_NONE)
                return refuse(d, n, axis_sym(x), "a constant computed for the bound (such as "
                              "the divisors of an average pool that excludes its padding), on a "
                              "window's output,");
            n->in[i] = c;               /* the actual counts (symdim_pool.c) */
            break;
        }
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Merge adjacent static factors of a (so that reshapes see the fewest factors). */
static void ax_norm(SdAxis *a)
{
    SdAxis r = {0};
    for (int i = 0; i < a->n; i++) {
        if (r.n && a->sym[i] < 0 && r.sym[r.n - 1] < 0)
            r.size[r.n - 1] *= a->size[i];
        else
            r.size[r.n] = a->size[i], r.sym[r.n++] = a->sym[i];
    }
    *a = r;
}

/* A concatenated input axis a among prop_reshape's factors (fy): PIECED - a. */
#define PIECED (-2)

/* Reshape: the input's factors, in order, regrouped into the output's axes; a static
 * factor may be split, a symbolic one only kept whole, and a concatenated axis only
 * kept as an axis of its own. */
static bool prop_reshape(Sd *d, const IrNode *n, const SdVal *s)
{
    const IrType *it = ir_vtype(d->g, n->in[0]), *ot = ir_vtype(d->g, n->out[0]);
    int64_t fs[IR_MAX_RANK * SD_MAXF];
    int fy[IR_MAX_RANK * SD_MAXF], nf = 0, k = 0;
    for (int a = 0; a < it->rank; a++) {
        if (s->ax[a].np)
            fs[nf] = it->dims[a], fy[nf++] = PIECED - a;
        for (int i = 0; i < s->ax[a].n; i++)
            if (s->ax[a].size[i] != 1 || s->ax[a].sym[i] >= 0)
                fs[nf] = s->ax[a].size[i], fy[nf++] = s->ax[a].sym[i];
    }
    SdVal *o = ir_scratch(d->g, sizeof *o);
    for (int a = 0; a < ot->rank; a++) {
        int64_t want = ot->dims[a];
        SdAxis *x = &o->ax[a];
        if (k < nf && fy[k] <= PIECED && x->n == 0 && want == fs[k]) {
            *x = s->ax[PIECED - fy[k++]];   /* the concatenated axis, alone */
            continue;
        }
        while (want > 1 || (want == 1 && k < nf && fs[k] == 1)) {
            if (k < nf && fy[k] <= PIECED)
                return refuse(d, n, axis_sym(&s->ax[PIECED - fy[k]]),
                              "a reshape that merges or splits a concatenated axis");
            if (k == nf || x->n == SD_MAXF)
                return refuse(d, n, first_sym(s, it->rank), "a reshape that splits it");
            if (fs[k] <= want && want % fs[k] == 0) {
                x->size[x->n] = fs[k], x->sym[x->n++] = fy[k];
                want /= fs[k++];
            } else if (fy[k] < 0 && fs[k] % want == 0) {
                x->size[x->n] = want, x->sym[x->n++] = -1;
                fs[k] /= want;
                want = 1;
            } else {
                return refuse(d, n, fy[k] >= 0 ? fy[k] : first_sym(s, it->rank),
                              "a reshape that splits it");
            }
        }
        if (x->n == 0)
            *x = (SdAxis){.n = 1, .size = {1}, .sym = {-1}};
        ax_norm(x);
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* The input's axis infos permuted by the node's "perm". */
static bool prop_transpose(Sd *d, const IrNode *n, const SdVal *s)
{
    const int64_t *perm;
    int r = ir_attr_get_ints(n, "perm", &perm);
    SdVal *o = ir_scratch(d->g, sizeof *o);
    for (int a = 0; a < r; a++)
        o->ax[a] = s->ax[perm[a]];
    d->val[n->out[0]] = sd_keep(o, r);
    return true;
}

/* Whether a slice of axis x (start, step, size) reads only positions below the least
 * extent its one symbolic factor can have (a sequence's first step): valid data at
 * every size. */
static bool below_min(const Sd *d, const SdAxis *x, int64_t start, int64_t step,
                      int64_t size)
{
    if (x->n != 1 || x->sym[0] < 0 || x->sym[0] >= d->nbase || step <= 0 || size <= 0)
        return false;
    for (uint32_t i = 0; i < d->g->nsymdims; i++)
        if (d->g->symdims[i].sym == x->sym[0] && !d->g->symdims[i].output)
            return start + (size - 1) * step < d->g->symdims[i].min;
    return false;
}

static int64_t sym_min(const Sd *d, int k);

/* Expand: the axes of its input, as a pointwise op's; and an axis broadcast to an
 * extent folded from a Shape (attr ext, dec_expand_from) that of the source's axis when
 * that one is a plain symbolic axis of the same extent (the copies past the actual size
 * are padding, masked where they are summed like any other). */
static bool prop_expand(Sd *d, IrNode *n)
{
    if (!prop_pointwise(d, n, 1))
        return false;
    const int64_t *e;
    int ne = ir_attr_get_ints(n, "ext", &e);
    const IrType *ot = ir_vtype(d->g, n->out[0]);
    SdVal *o = sd_new(d, ot);
    const SdVal *cur = sd_get(d, n->out[0]);
    if (cur)
        memcpy(o, cur, sizeof *o);
    for (int i = 0; i + 2 < ne; i += 3) {
        const SdVal *s = (ValId)e[i + 1] < d->nvals ? sd_get(d, (ValId)e[i + 1]) : NULL;
        int a = (int)e[i], sa = (int)e[i + 2];
        if (!s || a < 0 || a >= ot->rank || sa < 0 || sa >= ir_vtype(d->g, (ValId)e[i + 1])->rank)
            continue;
        const SdAxis *x = &s->ax[sa];
        if (ax_sym(x) && x->n == 1 && !x->plo && !x->phi && x->size[0] == ot->dims[a])
            o->ax[a] = *x;
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Slice: a symbolic axis must be taken whole, unless it reads below its least extent
 * (below_min), or unless the slice is one step of a
 * computation unrolled along it (padok: the steps past the actual extent are masked,
 * symdim_steps.c), whose output axis is then static, or unless its end counts from the
 * end (tail: x[:, 1:], x[:, :-1]), whose output axis is the derived size n - start - e. */
static bool prop_slice(Sd *d, const IrNode *n, const SdVal *s)
{
    const IrType *it = ir_vtype(d->g, n->in[0]), *ot = ir_vtype(d->g, n->out[0]);
    const int64_t *st, *sp;
    ir_attr_get_ints(n, "starts", &st);
    ir_attr_get_ints(n, "steps", &sp);
    bool padok = ir_attr_get_int(n, "padok", 0) != 0;
    int64_t tail = ir_attr_get_int(n, "tail", 0);
    SdVal *o = sd_new(d, ot);
    for (int a = 0; a < it->rank; a++) {
        const SdAxis *x = &s->ax[a];
        if (!ax_sym(x))
            continue;
        bool whole = st[a] == 0 && sp[a] == 1 && ot->dims[a] == it->dims[a];
        if (padok)                /* one step: static, even of a length-1 bound */
            continue;
        if (!whole && (tail >> a & 1) && x->n == 1 && !x->plo && !x->phi) {
            /* before below_min, which a size bucket whose box is the minimum meets: its
               output must be the derived axis that the bundle's is */
            int64_t cut = it->dims[a] - ot->dims[a];   /* start + e: n - cut remain */
            int ds = pass_symdim_derived(d, x->sym[0], 1, -cut - 1, 1, it->dims[a],
                                         ot->dims[a]);
            if (ds >= 0 && sym_min(d, ds) >= 1) {
                o->ax[a] = (SdAxis){.n = 1, .size = {ot->dims[a]}, .sym = {ds}};
                continue;
            }
        }
        if (!whole && below_min(d, x, st[a], sp[a], ot->dims[a]))
            continue;
        if (!whole)
            return refuse(d, n, first_sym(&(SdVal){.ax = {*x}}, 1), "a slice");
        o->ax[a] = *x;
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Reduction: padding along a reduced symbolic axis becomes the neutral element of fn
 * (the node's input is replaced; every such axis in one SELECT with a shared mask where
 * pass_symdim_mask_pad can); the output keeps the other axes. */
static bool prop_reduce(Sd *d, IrNode *n, const SdVal *s)
{
    static const double neutral[] = {[IR_RED_SUM] = 0, [IR_RED_PROD] = 1,
                                     [IR_RED_MAX] = -INFINITY, [IR_RED_MIN] = INFINITY};
    const IrType *it = ir_vtype(d->g, n->in[0]), *ot = ir_vtype(d->g, n->out[0]);
    const int64_t *axes;
    int na = ir_attr_get_ints(n, "axes", &axes);
    int fn = (int)ir_attr_get_int(n, "fn", 0);
    bool keep = ir_attr_get_int(n, "keepdims", 1) != 0, red[IR_MAX_RANK] = {false};
    for (int i = 0; i < na; i++)
        red[axes[i]] = true;
    ValId x = n->in[0], one = IR_NONE;
    bool masked = false, sym[IR_MAX_RANK] = {false};
    for (int a = 0; a < it->rank; a++) {
        sym[a] = red[a] && ax_sym(&s->ax[a]), masked |= sym[a];
        if (sym[a] && s->ax[a].np)
            return refuse(d, n, axis_sym(&s->ax[a]), "a reduction over a concatenated axis");
    }
    if (masked && fn < IR_RED_COUNT && fn <= IR_RED_MIN)   /* all axes in one SELECT */
        one = pass_symdim_mask_pad(d, x, s, sym, neutral[fn], &n->origin);
    for (int a = 0; a < it->rank && one == IR_NONE; a++) {
        if (!sym[a])
            continue;
        x = fn < IR_RED_COUNT && fn <= IR_RED_MIN ? pass_symdim_mask(d, x, &s->ax[a], a,
                                                               neutral[fn], &n->origin)
                                                  : IR_NONE;
        if (x == IR_NONE)
            return refuse(d, n, first_sym(&(SdVal){.ax = {s->ax[a]}}, 1), "a reduction");
    }
    n->in[0] = one != IR_NONE ? one : x;
    if (fn == IR_RED_SUM && masked && ir_dtype_is_float(it->dtype)) {
        SdSum *m = ir_scratch(d->g, sizeof *m);
        m->bound_count = 1;
        m->static_count = 1;
        for (int a = 0; a < it->rank; a++) {
            if (!red[a])
                continue;
            m->bound_count *= (double)it->dims[a];
            const SdAxis *ax = &s->ax[a];
            for (int f = 0; f < ax->n; f++)
                if (ax->sym[f] >= 0 && m->nsym < IR_MAX_RANK)
                    m->sym[m->nsym++] = ax->sym[f];
                else
                    m->static_count *= ax->size[f];
        }
        if (m->nsym)
            d->sum[n->out[0]] = m;
    }
    SdVal *o = sd_new(d, ot);
    for (int a = 0, oa = 0; a < it->rank; a++) {
        if (!red[a])
            o->ax[oa] = s->ax[a];
        oa += !red[a] || keep;
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Arg-reduction (ARGREDUCE) over one axis: a static axis keeps the others as they are
 * (a row's padding gives a padded index, dropped with its row); along a symbolic one
 * the padding is first masked to the value that never wins (-inf for an argmax, +inf
 * for an argmin), so the first extreme lies in the actual positions (a QA head's
 * argmax over the sequence). Taking the last extreme (select_last) is refused: where
 * every actual value is that infinity, a padded position would be the last; so is one
 * marked whole (a Hardmax's, compared with constant positions). */
static bool prop_argreduce(Sd *d, IrNode *n, const SdVal *s)
{
    const IrType *it = ir_vtype(d->g, n->in[0]), *ot = ir_vtype(d->g, n->out[0]);
    int axis = (int)ir_attr_get_int(n, "axis", 0);
    bool keep = ir_attr_get_int(n, "keepdims", 1) != 0;
    if (s->ax[axis].np)
        return refuse(d, n, axis_sym(&s->ax[axis]), "an arg-reduction over a concatenated axis");
    if (ax_sym(&s->ax[axis])) {
        bool max = ir_attr_get_int(n, "fn", IR_RED_MAX) == IR_RED_MAX;
        ValId m = ir_attr_get_int(n, "select_last", 0) || ir_attr_get_int(n, "whole", 0)
                      ? IR_NONE
                      : pass_symdim_mask(d, n->in[0], &s->ax[axis], axis,
                                         max ? -INFINITY : INFINITY, &n->origin);
        if (m == IR_NONE)
            return refuse(d, n, first_sym(&(SdVal){.ax = {s->ax[axis]}}, 1),
                          "an arg-reduction");
        n->in[0] = m;
    }
    SdVal *o = sd_new(d, ot);
    for (int a = 0, oa = 0; a < it->rank; a++) {
        if (a != axis)
            o->ax[oa] = s->ax[a];
        oa += a != axis || keep;
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Matrix product: a symbolic K zeroes the padding of both operands (0 * a finite
 * padding would do, but the padding of an activation need not be finite); M, N and the
 * broadcast batch axes carry over. */
static bool prop_matmul(Sd *d, IrNode *n)
{
    const IrType *ta = ir_vtype(d->g, n->in[0]), *tb = ir_vtype(d->g, n->in[1]);
    const IrType *ot = ir_vtype(d->g, n->out[0]);
    const SdVal *sa = sd_get(d, n->in[0]), *sb = sd_get(d, n->in[1]);
    if (ta->rank < 2 || tb->rank < 2)
        return refuse(d, n, first_sym(sa ? sa : sb, sa ? ta->rank : tb->rank),
                      "a matrix-vector product");
    const SdAxis *ka = sa ? &sa->ax[ta->rank - 1] : NULL, *kb = sb ? &sb->ax[tb->rank - 2] : NULL;
    const SdAxis *k = ka && ax_sym(ka) ? ka : kb && ax_sym(kb) ? kb : NULL;
    if ((ka && ka->np) || (kb && kb->np))
        return refuse(d, n, axis_sym(ka && ka->np ? ka : kb), "a matrix product over a "
                      "concatenated axis");
    if (k) {
        n->in[0] = pass_symdim_mask(d, n->in[0], k, ta->rank - 1, 0, &n->origin);
        n->in[1] = pass_symdim_mask(d, n->in[1], k, tb->rank - 2, 0, &n->origin);
        if (n->in[0] == IR_NONE || n->in[1] == IR_NONE)
            return refuse(d, n, first_sym(&(SdVal){.ax = {*k}}, 1), "a matrix product");
    }
    SdVal *o = sd_new(d, ot);
    for (int a = 0; a < ot->rank - 2; a++) {
        int ia = ta->rank - ot->rank + a, ib = tb->rank - ot->rank + a;
        if (sa && ia >= 0 && ta->dims[ia] == ot->dims[a] && ax_sym(&sa->ax[ia]))
            o->ax[a] = sa->ax[ia];
        else if (sb && ib >= 0 && tb->dims[ib] == ot->dims[a] && ax_sym(&sb->ax[ib]))
            o->ax[a] = sb->ax[ib];
    }
    if (sa)
        o->ax[ot->rank - 2] = sa->ax[ta->rank - 2];
    if (sb)
        o->ax[ot->rank - 1] = sb->ax[tb->rank - 1];
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Element i of the integer constant v, or -1 when v is not an i32/i64 constant. */
static int64_t const_index(IrGraph *g, ValId v, int64_t i)
{
    const IrValue *val = ir_val(g, v);
    if (val->kind != IR_VAL_CONST)
        return -1;
    if (val->type.dtype == IR_DT_I64)
        return ((const int64_t *)val->data)[i];
    if (val->type.dtype == IR_DT_I32)
        return ((const int32_t *)val->data)[i];
    return -1;
}

/* A gather from a symbolic axis x by constant indices idx that only relabels it: for
 * every symbolic factor of x some index axis a has its extent and, at every position p,
 * the index's coordinate in that factor is p[a] (a vmapped mask: rows b*S + s gathered
 * at [b, 1, 1, s]). Sets fax[f] to that axis (-1: static factor); false otherwise. */
static bool relabel_axes(IrGraph *g, ValId idx, const SdAxis *x, int *fax)
{
    const IrType *ti = ir_vtype(g, idx);
    int64_t n = ir_type_numel(ti), inner = 1;
    for (int f = x->n - 1; f >= 0; f--) {
        fax[f] = -1;
        for (int a = 0; x->sym[f] >= 0 && a < ti->rank && fax[f] < 0; a++) {
            int64_t stride = 1;
            for (int b = a + 1; b < ti->rank; b++)
                stride *= ti->dims[b];
            bool ok = ti->dims[a] == x->size[f];
            for (int64_t p = 0; ok && p < n; p++) {
                int64_t v = const_index(g, idx, p);
                ok = v >= 0 && (v / inner) % x->size[f] == (p / stride) % ti->dims[a];
            }
            if (ok)
                fax[f] = a;
        }
        if (x->sym[f] >= 0 && fax[f] < 0)
            return false;
        inner *= x->size[f];
    }
    return true;
}

/* The indices of gather n along their symbolic axes (si): at padding positions they
 * are computed from the padding (position ids counting on through it) and may lie past
 * the table, where the GATHER's range check would fault although those rows are never
 * observed; they are replaced by 0 (a valid row) with the padding mask, in one SELECT
 * where pass_symdim_mask_pad can (nothing for a graph input: its padding is zero).
 * Real positions keep their indices, and the range check. */
static bool mask_indices(Sd *d, IrNode *n, const SdVal *si)
{
    const IrType *ti = ir_vtype(d->g, n->in[1]);
    bool axes[IR_MAX_RANK] = {false}, any = false;
    for (int a = 0; a < ti->rank; a++)
        axes[a] = ax_sym(&si->ax[a]), any |= axes[a];
    ValId x = any ? pass_symdim_mask_pad(d, n->in[1], si, axes, 0, &n->origin) : n->in[1];
    if (x == IR_NONE) {                        /* a view, or several factors: axis by axis */
        x = n->in[1];
        for (int a = 0; a < ti->rank; a++)
            if (axes[a] && (x = pass_symdim_mask(d, x, &si->ax[a], a, 0, &n->origin)) == IR_NONE)
                return refuse(d, n, first_sym(si, ti->rank), "a gather's indices");
    }
    n->in[1] = x;
    return true;
}

/* Gather: the indices' axes replace the table's gathered axis, which must be static
 * or only relabelled by constant indices (relabel_axes); indices along a symbolic axis
 * are masked at its padding (mask_indices). */
static bool prop_gather(Sd *d, IrNode *n)
{
    const SdVal *st = sd_get(d, n->in[0]), *si = sd_get(d, n->in[1]);
    const IrType *tt = ir_vtype(d->g, n->in[0]), *ti = ir_vtype(d->g, n->in[1]);
    const IrType *ot = ir_vtype(d->g, n->out[0]);
    int axis = (int)ir_attr_get_int(n, "axis", 0), fax[SD_MAXF];
    SdVal *o = sd_new(d, ot);
    bool inb = ir_attr_get_int(n, "inbounds", 0) != 0;   /* gather_from_end's */
    for (int a = 0; si && a < ti->rank; a++)
        if (si->ax[a].np)
            return refuse(d, n, axis_sym(&si->ax[a]), "a gather by a concatenated axis");
    if (st && st->ax[axis].np)
        return refuse(d, n, axis_sym(&st->ax[axis]), "a gather along a concatenated axis");
    if (st && ax_sym(&st->ax[axis]) && !(inb && !si)) {
        const SdAxis *x = &st->ax[axis];
        if (si || !relabel_axes(d->g, n->in[1], x, fax))
            return refuse(d, n, first_sym(&(SdVal){.ax = {*x}}, 1), "a gather");
        for (int f = 0; f < x->n; f++)
            if (fax[f] >= 0)
                o->ax[axis + fax[f]] = (SdAxis){.n = 1, .size = {x->size[f]}, .sym = {x->sym[f]}};
    }
    for (int a = 0; a < tt->rank; a++) {
        if (a == axis || !st)
            continue;
        o->ax[a < axis ? a : a - 1 + ti->rank] = st->ax[a];
    }
    for (int a = 0; si && a < ti->rank; a++)
        o->ax[axis + a] = si->ax[a];
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return !si || mask_indices(d, n, si);
}

/* Ops that keep some leading axes as they are and work inside the others: those must
 * be static (conv: the batch axis; window: all but the trailing kernel axes; pad and
 * concat, cumsum: all but the axes they change). lead[a] says which axes carry over. */
static bool prop_lead(Sd *d, const IrNode *n, const bool *lead, const char *what)
{
    const IrType *ot = ir_vtype(d->g, n->out[0]);
    SdVal *o = sd_new(d, ot);
    for (int i = 0; i < n->nin; i++) {
        const SdVal *s = sd_get(d, n->in[i]);
        const IrType *t = ir_vtype(d->g, n->in[i]);
        for (int a = 0; s && a < t->rank; a++) {
            if (!ax_sym(&s->ax[a]))
                continue;
            if (i > 0 && n->op == IR_OP_CONV)
                return refuse(d, n, first_sym(s, t->rank), what);
            if (!lead[a])
                return refuse(d, n, first_sym(&(SdVal){.ax = {s->ax[a]}}, 1), what);
            o->ax[a] = s->ax[a];
        }
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Which axes of node n's (first) input an op of the prop_lead kind leaves alone. */
static void lead_axes(IrGraph *g, const IrNode *n, bool *lead)
{
    const IrType *t = ir_vtype(g, n->in[0]), *ot = ir_vtype(g, n->out[0]);
    const int64_t *k;
    for (int a = 0; a < IR_MAX_RANK; a++)
        lead[a] = a < t->rank && a < ot->rank && t->dims[a] == ot->dims[a];
    if (n->op == IR_OP_CONV) {
        for (int a = 1; a < t->rank; a++)
            lead[a] = false;
    } else if (n->op == IR_OP_WINDOW) {
        int nk = ir_attr_get_ints(n, "kernel", &k);
        for (int a = t->rank - nk; a < t->rank; a++)
            lead[a] = false;
    } else if (n->op == IR_OP_CONCAT || n->op == IR_OP_CUMSUM) {
        lead[ir_attr_get_int(n, "axis", 0)] = false;
    } else if (n->op != IR_OP_PAD) {
        for (int a = 0; a < IR_MAX_RANK; a++)
            lead[a] = false;
    }
}

int pass_symdim_derived(Sd *d, int parent, int64_t mul, int64_t add, int64_t div,
                        int64_t pmax, int64_t out)
{
    if ((pmax * mul + add) / div + 1 != out || pmax * mul + add < 0)
        return -1;
    while (mul == 1 && div == 1 && parent >= d->nbase && d->der[parent - d->nbase].mul == 1 &&
           d->der[parent - d->nbase].div == 1) {
        const SdDerived *p = &d->der[parent - d->nbase];  /* offsets add up: (n + 1) - 1 */
        add += p->add + 1;                                 /* is n again (a window that */
        parent = p->parent;                                /* grew the length by one, then */
    }                                                      /* a slice [:-1]) */
    if (mul == 1 && div == 1 && add == -1)
        return parent;                     /* the same size (a 'same' window) */
    for (int j = 0; j < d->nder; j++)
        if (d->der[j].parent == parent && d->der[j].mul == mul && d->der[j].add == add &&
            d->der[j].div == div)
            return d->nbase + j;
    if (d->nder == SD_MAXDER)
        return -1;
    d->der[d->nder] = (SdDerived){parent, mul, add, div};
    return d->nbase + d->nder++;
}

/* Adds the concatenation axis of an input (x, NULL when static; extent ext) to the
 * pieces of *o: a static or one-factor-list axis as one piece, a concatenated one as
 * its pieces; false when there are more than SD_MAXP or x is padded. */
static bool add_pieces(SdAxis *o, const SdAxis *x, int64_t ext)
{
    if (x && (x->plo || x->phi || x->cover))
        return false;
    int np = x && x->np ? x->np : 1;
    if (o->np + np > SD_MAXP)
        return false;
    for (int p = 0; p < np; p++) {
        SdPiece *c = &o->pc[o->np++];
        memset(c, 0, sizeof *c);
        if (x && x->np)
            *c = x->pc[p];
        else if (x && ax_sym(x)) {
            c->n = x->n;
            memcpy(c->size, x->size, sizeof c->size);
            memcpy(c->sym, x->sym, sizeof c->sym);
        } else
            c->n = 1, c->size[0] = ext, c->sym[0] = -1;
    }
    return true;
}

/* Concat: along its axis a symbolic dimension may be the last piece only (a class
 * token prepended, cat([cls, x], 1)): the output holds the static pieces' P positions,
 * then the last one's valid ones, its padding at the end, a derived size (size + P).
 * Several symbolic pieces (a detector's flattened feature maps of three strides,
 * [b, c, h8 * w8], [b, c, h16 * w16], ...) make a concatenated axis (SdAxis.np): each
 * piece laid out at its bound, as computed, which only ops that keep the axis whole
 * may read (pointwise ones, with constants folded at the bound in the same layout,
 * such as the anchors' strides) until an output compacts it (symdim_out.c). The other
 * axes carry over, symbolic ones alike in every input that has one (or joined:
 * sd_join). */
static bool prop_concat(Sd *d, const IrNode *n)
{
    const IrType *ot = ir_vtype(d->g, n->out[0]);
    int axis = (int)ir_attr_get_int(n, "axis", 0);
    SdVal *o = sd_new(d, ot);
    int64_t pre = 0;
    int nsym = 0;
    for (int i = 0; i < n->nin; i++) {
        const SdVal *s = sd_get(d, n->in[i]);
        for (int a = 0; s && a < ot->rank; a++) {
            if (a == axis || !ax_sym(&s->ax[a]))
                continue;
            if (ax_sym(&o->ax[a]) && memcmp(&o->ax[a], &s->ax[a], sizeof s->ax[a])) {
                if (!sd_join(d, &o->ax[a], &s->ax[a], &n->origin))
                    return refuse(d, n, first_sym(&(SdVal){.ax = {s->ax[a]}}, 1),
                                  "operands that disagree");
                continue;
            }
            o->ax[a] = s->ax[a];
        }
        nsym += s && ax_sym(&s->ax[axis]);
        if (i + 1 < n->nin)
            pre += ir_vtype(d->g, n->in[i])->dims[axis];
    }
    const SdVal *l = sd_get(d, n->in[n->nin - 1]);
    const SdAxis *x = l ? &l->ax[axis] : NULL;
    if (nsym == 1 && x && ax_sym(x) && x->n == 1 && !x->np && !x->plo && !x->phi) {
        int k = first_sym(&(SdVal){.ax = {*x}}, 1);
        int ds = pre ? pass_symdim_derived(d, k, 1, pre - 1, 1, x->size[0], ot->dims[axis]) : k;
        if (ds < 0)
            return refuse(d, n, k, "a concatenation");
        o->ax[axis] = (SdAxis){.n = 1, .size = {ot->dims[axis]}, .sym = {ds}};
    } else if (nsym) {
        SdAxis c;
        memset(&c, 0, sizeof c);
        for (int i = 0; i < n->nin; i++) {
            const SdVal *s = sd_get(d, n->in[i]);
            const SdAxis *y = s && ax_sym(&s->ax[axis]) ? &s->ax[axis] : NULL;
            if (!add_pieces(&c, y, ir_vtype(d->g, n->in[i])->dims[axis]))
                return refuse(d, n, y ? axis_sym(y) : first_sym(s, ot->rank),
                              "a concatenation (of more than 4 pieces, or padded ones)");
        }
        o->ax[axis] = c;
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Symbol k's size when its input symbol (base_sym) has size v: a derived size
 * through its derivations; -1 where one has no element (a window longer than its
 * input). */
static int64_t sym_at(const Sd *d, int k, int64_t v)
{
    if (k < d->nbase)
        return v;
    const SdDerived *dv = &d->der[k - d->nbase];
    int64_t p = sym_at(d, dv->parent, v);
    if (p < 0 || p * dv->mul + dv->add < 0)
        return -1;
    return (p * dv->mul + dv->add) / dv->div + 1;
}

/* The bounds of input symbol k: its input entries' least min and their max. */
static void sym_bounds(const Sd *d, int k, int64_t *min, int64_t *max)
{
    *min = INT64_MAX, *max = 0;
    for (uint32_t i = 0; i < d->g->nsymdims; i++) {
        const IrSymDim *e = &d->g->symdims[i];
        if (e->sym == k && !e->output) {
            *min = e->min < *min ? e->min : *min;
            *max = e->max > *max ? e->max : *max;
        }
    }
}

/* Smallest value symbol k takes (its bounds' min through the derivations). */
static int64_t sym_min(const Sd *d, int k)
{
    int64_t lo, hi;
    sym_bounds(d, base_sym(d, k), &lo, &hi);
    return sym_at(d, k, lo);
}

/* Pad: a symbolic axis padded at either end has its padding (from the actual size on)
 * set to the pad value first, so that the zeros (or the value) follow the actual data
 * (every such axis in one SELECT with a mask shared by the pads of that shape,
 * pass_symdim_mask_pad, where it can); the result is a padded axis, which only a
 * window may read. */
static bool prop_pad(Sd *d, IrNode *n, const SdVal *s)
{
    const IrType *it = ir_vtype(d->g, n->in[0]), *ot = ir_vtype(d->g, n->out[0]);
    const int64_t *pads, *inter;
    ir_attr_get_ints(n, "pads", &pads);
    int ni = ir_attr_get_ints(n, "interior", &inter);
    double value = ir_attr_get_float(n, "value", 0);
    int64_t bound = ir_attr_get_int(n, "bound", 0);
    for (int a = 0; a < it->rank; a++)  /* pads computed for the bound's extent: only a
                                           high one (ceil_mode), checked by the window */
        if (ax_sym(&s->ax[a]) && (bound >> a & 1) &&
            (pads[a] || (ni > a && inter[a]) || s->ax[a].n != 1))
            return refuse(d, n, first_sym(&(SdVal){.ax = {s->ax[a]}}, 1),
                          "padding computed from the extent (auto_pad SAME with a stride, "
                          "ceil_mode, or ConvTranspose output_shape)");
    SdVal *o = sd_new(d, ot);
    bool axes[IR_MAX_RANK] = {false};
    int nmask = 0;
    for (int a = 0; a < it->rank; a++)
        if (ax_sym(&s->ax[a]) && (pads[a] || pads[it->rank + a] || (ni > a && inter[a])) &&
            s->ax[a].n == 1 && !s->ax[a].plo && !s->ax[a].phi)
            axes[a] = true, nmask++;
    ValId masked = nmask ? pass_symdim_mask_pad(d, n->in[0], s, axes, value, &n->origin)
                         : IR_NONE;
    for (int a = 0; a < it->rank; a++) {
        const SdAxis *x = &s->ax[a];
        if (!ax_sym(x))
            continue;
        int k = first_sym(&(SdVal){.ax = {*x}}, 1);
        int64_t in = ni > a ? inter[a] : 0;
        if (x->plo || x->phi || ((pads[a] || pads[it->rank + a] || in) && x->n != 1))
            return refuse(d, n, k, "padding");
        if (!pads[a] && !pads[it->rank + a] && !in) {
            o->ax[a] = *x;
            o->ax[a].cover |= (bound >> a & 1) != 0;
            continue;
        }
        bool cover = (bound >> a & 1) != 0;
        if (masked == IR_NONE &&
            (x->n != 1 ||
             (n->in[0] = pass_symdim_mask(d, n->in[0], x, a, value, &n->origin)) == IR_NONE))
            return refuse(d, n, k, "padding");
        if (in) {      /* upsampled (a transposed convolution): its data (size - 1) * s + 1 */
            k = pass_symdim_derived(d, k, in + 1, -(in + 1), 1, x->size[0],
                                    (x->size[0] - 1) * (in + 1) + 1);
            if (k < 0)
                return refuse(d, n, first_sym(&(SdVal){.ax = {*x}}, 1), "padding");
        }
        o->ax[a] = (SdAxis){.n = 1, .size = {ot->dims[a]}, .sym = {k}, .plo = pads[a],
                            .phi = pads[it->rank + a], .cover = cover};
    }
    if (masked != IR_NONE)
        n->in[0] = masked;
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* Convolution (input [N, C, spatial...]) or pooling window (over the trailing kernel
 * axes): the batch (leading) axes carry over; a symbolic spatial axis of actual size
 * h, padded by plo + phi, gives (h + plo + phi - extent) / stride + 1 outputs, a derived
 * size; a window near the actual border reads the padding's zeros, as at that size. */
static bool prop_window(Sd *d, const IrNode *n, const SdVal *s)
{
    const IrType *it = ir_vtype(d->g, n->in[0]), *ot = ir_vtype(d->g, n->out[0]);
    const int64_t *k = NULL, *st, *dl;
    bool conv = n->op == IR_OP_CONV;
    int nk = conv ? it->rank - 2 : ir_attr_get_ints(n, "kernel", &k), first = it->rank - nk;
    int ns = ir_attr_get_ints(n, "strides", &st), nd = ir_attr_get_ints(n, "dilations", &dl);
    if (n->nin > 1 && sd_get(d, n->in[1]))
        return refuse(d, n, first_sym(sd_get(d, n->in[1]), ir_vtype(d->g, n->in[1])->rank),
                      "convolution weights");
    SdVal *o = sd_new(d, ot);
    for (int a = 0; a < it->rank; a++) {
        const SdAxis *x = &s->ax[a];
        int sym = first_sym(&(SdVal){.ax = {*x}}, 1);
        if (!ax_sym(x))
            continue;
        if (a < first && !x->plo && !x->phi && (!conv || a == 0)) {
            o->ax[a] = *x;
            continue;
        }
        if (a < first)
            return refuse(d, n, sym, conv ? "a convolution" : "a pooling window");
        int64_t kk = conv ? ir_vtype(d->g, n->in[1])->dims[a] : k[a - first];
        int64_t sv = ns > 0 ? st[a - first] : 1, dv = nd > 0 ? dl[a - first] : 1;
        if (kk == 1 && sv == 1 && !x->plo && !x->phi && !x->cover) {
            o->ax[a] = *x;            /* one tap a position: the axis as it is */
            continue;
        }
        if (x->n != 1)
            return refuse(d, n, sym, conv ? "a convolution" : "a pooling window");
        int64_t add = x->plo + x->phi - ((kk - 1) * dv + 1);
        /* a pad computed for the bound (ceil_mode, auto_pad SAME), only high and less
           than a stride: the window reads none of it where it covers the data exactly,
           (h - extent) % stride == 0 (the bound among those sizes), which the bundle then
           requires (sd_cover, sd_steps); there SAME pads nothing either when the extent is
           at most the stride, and with a larger one it pads low too (refused) */
        int64_t ext = (kk - 1) * dv + 1, hb = x->size[0] - x->plo - x->phi;
        if (x->cover && (x->plo || x->phi >= sv || hb < ext || (hb - ext) % sv ||
                         !sd_cover(d, sym, -ext, sv, &n->origin)))
            return refuse(d, n, sym, "padding computed from the extent (auto_pad SAME with "
                          "a stride, ceil_mode, or ConvTranspose output_shape)");
        int ds = pass_symdim_derived(d, sym, 1, add, sv, x->size[0] - x->plo - x->phi,
                                     ot->dims[a]);
        if (ds >= 0 && sym_min(d, ds) < 1) {
            ir_error(d->g, &n->origin, "the window (extent %lld, stride %lld) does not fit "
                     "where the bounded dynamic dimension '%s' is at its minimum %lld (the "
                     "input has %lld positions there along axis %d, with padding): raise "
                     "the minimum (--dim NAME=MIN..MAX)", (long long)((kk - 1) * dv + 1),
                     (long long)sv, pass_symdim_name(d, sym),
                     (long long)sym_min(d, base_sym(d, sym)),
                     (long long)(sym_min(d, sym) + x->plo + x->phi), a);
            return false;
        }
        if (ds < 0)
            return refuse(d, n, sym, "a window whose output size cannot be derived");
        o->ax[a] = (SdAxis){.n = 1, .size = {ot->dims[a]}, .sym = {ds}};
    }
    d->val[n->out[0]] = sd_keep(o, ot->rank);
    return true;
}

/* CumSum: a running sum reads only the elements before each position, so along a
 * symbolic axis of one factor (the actual data first, the padding after it) the first
 * actual-size results are exact and the rest is padding like any other (position ids
 * of RoBERTa-style models, cumsum(ids != pad)). A reverse sum reads the padding, and
 * an axis merging factors puts padding between the data: those are refused. Other
 * symbolic axes carry over. */
static bool prop_cumsum(Sd *d, const IrNode *n, const SdVal *s)
{
    int r = ir_vtype(d->g, n->in[0])->rank;
    int axis = (int)ir_attr_get_int(n, "axis", 0);
    axis = axis < 0 ? axis + r : axis;
    const SdAxis *x = &s->ax[axis];
    if (ax_sym(x) && (ir_attr_get_int(n, "reverse", 0) || x->n != 1))
        return refuse(d, n, first_sym(&(SdVal){.ax = {*x}}, 1),
                      "a reverse running sum, or one over merged dimensions,");
    SdVal *o = ir_scratch(d->g, sizeof *o);
    *o = *s;
    d->val[n->out[0]] = sd_keep(o, r);
    return true;
}

/* The symbol of the first padded axis (a window's input, plo / phi) that node n reads,
 * on any input; -1 when it reads none. */
static int padded_sym(const Sd *d, const IrNode *n)
{
    for (int i = 0; i < n->nin; i++) {
        const SdVal *s = n->in[i] != IR_NONE ? sd_get(d, n->in[i]) : NULL;
        for (int a = 0; s && a < ir_vtype(d->g, n->in[i])->rank; a++)
            if (s->ax[a].plo || s->ax[a].phi)
                return first_sym(&(SdVal){.ax = {s->ax[a]}}, 1);
    }
    return -1;
}

/* Carry the symbolic axes through node n (its inputs may be replaced by masked ones). */
static bool prop_op(Sd *d, IrNode *n);
static const SdVal *unpadded(Sd *d, ValId v, const SdVal *s, bool strict);

#define SD_UNPAD_IN 16                     /* inputs prop_unpadded takes, at most */

/* Node n (no window) reads a padded axis (a Pad's result, symbol pk): it reads that
 * value's prefix, the derived size h + plo + phi (unpadded), as every other op reads a
 * symbolic axis (MobileBERT's trigram embedding concatenates x shifted by a slice and
 * padded back with x itself); refused when the size cannot be derived. The inputs'
 * infos are swapped for the node only: the windows that read the same Pad keep its
 * padded axes. */
static bool prop_unpadded(Sd *d, IrNode *n, int pk)
{
    ValId in[SD_UNPAD_IN];
    SdVal *keep[SD_UNPAD_IN];
    if (n->nin > SD_UNPAD_IN)
        return refuse(d, n, pk, "padding");
    bool ok = true;
    for (int i = 0; i < n->nin; i++) {
        in[i] = n->in[i];
        keep[i] = in[i] != IR_NONE ? sd_get(d, in[i]) : NULL;
        const SdVal *u = keep[i] ? unpadded(d, in[i], keep[i], true) : NULL;
        ok &= !keep[i] || u;
        if (u)
            d->val[in[i]] = (SdVal *)u;
    }
    ok = ok ? prop_op(d, n) : refuse(d, n, pk, "padding");
    for (int i = n->nin - 1; i >= 0; i--)   /* backwards: an input read twice kept its own */
        if (keep[i])
            d->val[in[i]] = keep[i];
    return ok;
}

static bool prop_node(Sd *d, IrNode *n)
{
    bool any = false, lead[IR_MAX_RANK];
    bool ok = true;
    if (pass_symdim_steps(d, n, &ok))          /* SYMLEN, SYMLIKE: resolved whatever they read */
        return ok;
    if (!d->plan)
        pass_symdim_mean(d, n);                /* also when the mean has no symbolic axis left */
    for (int i = 0; i < n->nin; i++)
        any |= n->in[i] != IR_NONE && sd_get(d, n->in[i]) != NULL;
    if (n->op == IR_OP_EXPAND && ir_attr_find(n, "ext"))
        return prop_expand(d, n);              /* may take a symbol its input lacks */
    if (!any || n->nout != 1)
        return true;
    const SdVal *s = sd_get(d, n->in[0]);
    if (n->op == IR_OP_CONV || n->op == IR_OP_WINDOW) {
        if (s)
            return prop_window(d, n, s);
        lead_axes(d->g, n, lead);
        return prop_lead(d, n, lead, "convolution weights");
    }
    int pk = padded_sym(d, n);
    return pk < 0 ? prop_op(d, n) : prop_unpadded(d, n, pk);
}

/* Carry the symbolic axes through node n, no window, reading no padded axis. */
static bool prop_op(Sd *d, IrNode *n)
{
    bool lead[IR_MAX_RANK];
    const SdVal *s = sd_get(d, n->in[0]);
    const IrOpInfo *oi = &ir_op_info[n->op];
    if (n->op == IR_OP_PAD)
        return prop_pad(d, n, s);
    if ((oi->flags & IR_OPF_POINTWISE) &&
        (n->op != IR_OP_BITCAST || ir_dtype_size(ir_vtype(d->g, n->out[0])->dtype) ==
                                       ir_dtype_size(ir_vtype(d->g, n->in[0])->dtype)))
        return prop_pointwise(d, n, n->nin);
    if (n->op == IR_OP_EXPAND)
        return prop_expand(d, n);
    switch (n->op) {
    case IR_OP_RESHAPE:
        return prop_reshape(d, n, s);
    case IR_OP_TRANSPOSE:
        return prop_transpose(d, n, s);
    case IR_OP_SLICE:
        return prop_slice(d, n, s);
    case IR_OP_REDUCE:
        return prop_reduce(d, n, s);
    case IR_OP_MATMUL:
        return prop_matmul(d, n);
    case IR_OP_GATHER:
        return prop_gather(d, n);
    case IR_OP_ARGREDUCE:
        return prop_argreduce(d, n, s);
    case IR_OP_CUMSUM:
        return prop_cumsum(d, n, s);
    case IR_OP_CONCAT:
        return prop_concat(d, n);
    default:
        lead_axes(d->g, n, lead);
        return prop_lead(d, n, lead, n->op == IR_OP_CONV ? "a convolution window"
                                     : n->op == IR_OP_WINDOW ? "a pooling window"
                                                             : "data movement");
    }
}

/* Whether output v's one symbolic axis, *axis, has a size derived by windows (a
 * convolution's output width: (w + pads - extent) / stride + 1): then it is recorded
 * as a data-dependent extent (ir_dyn_add) whose count the device computes from the
 * dims input, and the runtime gives the output its actual extent (rt_dyn.c) as it does
 * NonZero's. Only an output with no other symbolic axis (one such extent an output). */
static bool derived_output(Sd *d, ValId v, const SdVal *s, int *axis)
{
    int nsym = 0;
    *axis = -1;
    for (int a = 0; a < ir_vtype(d->g, v)->rank; a++)
        if (ax_sym(&s->ax[a])) {
            nsym++;
            if (s->ax[a].n == 1 && s->ax[a].sym[0] >= d->nbase)
                *axis = a;
        }
    return nsym == 1 && *axis >= 0 && !ir_dyn_find(d->g, v);
}

/* Graph output v, or, when nodes read it too, a view of it that takes its name: the
 * view is what gets a data-dependent extent (pass_dynamic then allows only pointwise
 * ops, casts, transposes and reshapes after it), while the readers keep v, whose
 * padding the masks already handle (a mean over an upsampled length that is also an
 * output). */
static ValId output_alone(IrGraph *g, ValId v, const IrOrigin *og)
{
    bool read = false;
    for (NodeId n = 0; n < g->nnodes && !read; n++)
        for (int k = 0; k < g->nodes[n].nin && !g->nodes[n].dead; k++)
            read |= g->nodes[n].in[k] == v;
    if (!read)
        return v;
    const IrType *t = ir_vtype(g, v);
    ValId o = ir_reshape(g, v, t->dims, t->rank, og);
    const char *name = g->vals[v].name;
    ir_set_name(g, v, ir_fresh_name(g, name));
    ir_set_name(g, o, name);
    return o;
}

/* Whether output v (axes s) has a derived size on some axis beside another symbolic
 * axis (derived_output serves it alone), or an axis of several factors or pieces
 * (SdAxis.np), none padded: the outputs symdim_out.c compacts. */
static bool compacted(const Sd *d, ValId v, const SdVal *s)
{
    int nsym = 0, nder = 0, merged = 0;
    for (int a = 0; a < ir_vtype(d->g, v)->rank; a++) {
        if (!ax_sym(&s->ax[a]))
            continue;
        if (s->ax[a].plo || s->ax[a].phi)
            return false;
        nsym++;
        merged += s->ax[a].np || s->ax[a].n != 1;
        nder += s->ax[a].n == 1 && s->ax[a].sym[0] >= d->nbase;
    }
    return (merged || (nder > 0 && nsym > 1)) && !ir_dyn_find(d->g, v);
}

/* Record the symbolic axes of the graph outputs (output entries of the table); an
 * output axis that merges a symbol with other factors is refused, and so is a derived
 * size anywhere but on an output's only symbolic axis (derived_output). */
/* Info s of value v with every padded symbolic axis (a Pad's result: plo pad values, the
 * actual data and its masked rest, then phi) made the derived size h + plo + phi, whose
 * prefix that value's is (prop_pad masked the input with the pad value): a copy, or s
 * itself when no axis is padded; NULL when one cannot be derived (several factors; with
 * strict, also a pad computed for the bound). */
static const SdVal *unpadded(Sd *d, ValId v, const SdVal *s, bool strict)
{
    const IrType *t = ir_vtype(d->g, v);
    SdVal *o = NULL;
    for (int a = 0; a < t->rank; a++) {
        const SdAxis *x = &s->ax[a];
        if (!ax_sym(x) || (!x->plo && !x->phi))
            continue;
        int64_t p = x->plo + x->phi;
        int ds = x->n == 1 && !(strict && x->cover)
                     ? pass_symdim_derived(d, x->sym[0], 1, p - 1, 1, x->size[0] - p,
                                           x->size[0])
                     : -1;
        if (ds < 0)
            return NULL;
        if (!o) {
            o = sd_new(d, t);
            memcpy(o, s, sizeof *o);
        }
        o->ax[a] = (SdAxis){.n = 1, .size = {x->size[0]}, .sym = {ds}};
    }
    return o ? o : s;
}

/* *s with every padded symbolic axis of output v made its derived size (unpadded): the
 * output's actual extent. False (refused) when not derivable. */
static bool unpad_output(Sd *d, ValId v, const SdVal **s)
{
    if (!*s)
        return true;
    const SdVal *u = unpadded(d, v, *s, false);
    if (!u) {
        ir_diag_error(d->g->diag, "unsupported: output '%s' is padded along the bounded "
                      "dynamic dimension '%s', a size that cannot be derived",
                      d->g->vals[v].name,
                      pass_symdim_name(d, first_sym(*s, ir_vtype(d->g, v)->rank)));
        return false;
    }
    if (u != *s)
        *s = d->val[v] = (SdVal *)u;
    return true;
}

/* Whether every pair sd_join recorded on input symbol k agrees when k has size v, and
 * every window sd_cover recorded on it covers its axis exactly; else the first that
 * does not into *bad. */
static bool joins_agree(const Sd *d, int k, int64_t v, int *bad)
{
    for (int i = 0; i < d->neq; i++) {
        if (base_sym(d, d->eq[i].a) != k)
            continue;
        int64_t x = sym_at(d, d->eq[i].a, v), y = sym_at(d, d->eq[i].b, v);
        if (x < 1 || x != y ||
            (d->eq[i].mod && (x + d->eq[i].add < 0 || (x + d->eq[i].add) % d->eq[i].mod))) {
            *bad = i;
            return false;
        }
    }
    return true;
}

#define SD_STEP_SPAN (1 << 20)             /* sizes sd_steps evaluates a symbol at, at most */

/* The smallest step s for which every size hi - j * s down to lo is one where the
 * joined sizes agree (ok[hi - v]); 0 when only hi is (n = hi - lo + 1 sizes). */
static int64_t least_step(const bool *ok, int64_t n)
{
    for (int64_t s = 1; s < n; s++) {
        bool all = true;
        for (int64_t j = s; j < n && all; j += s)
            all = ok[j];
        if (all)
            return s;
    }
    return 0;
}

/* For each input symbol that sd_join joined sizes of: the sizes the bundle takes are
 * max and every step-th one below it down to min, step the least for which the joined
 * sizes agree at all of them (a text detector's feature pyramid: 32, its sizes
 * multiples of 32, though 3 sizes below each agree too), or a size bucket's given one;
 * the step goes to every entry of the symbol. False (reported) when they agree at the
 * bound only, or the given step fails. */
static bool sd_steps(Sd *d)
{
    IrGraph *g = d->g;
    for (int k = 0; k < d->nbase; k++) {
        int bad = -1;
        bool joined = false;
        for (int i = 0; i < d->neq; i++)
            joined |= base_sym(d, d->eq[i].a) == k;
        if (!joined)
            continue;
        int64_t lo, hi, step = 0;
        sym_bounds(d, k, &lo, &hi);
        for (uint32_t i = 0; i < g->nsymdims; i++)
            if (g->symdims[i].sym == k && g->symdims[i].step > 1)
                step = g->symdims[i].step;
        const char *nm = pass_symdim_name(d, k);
        if (hi - lo >= SD_STEP_SPAN) {
            ir_error(g, &d->eq[0].og, "unsupported: sizes derived from the bounded dynamic "
                     "dimension '%s' joined over a range of more than 2^20 sizes (give it "
                     "tighter bounds)", nm);
            return false;
        }
        int64_t n = hi - lo + 1;
        bool *ok = ir_scratch(g, (size_t)n * sizeof *ok);
        for (int64_t j = 0; j < n; j++)
            ok[j] = joins_agree(d, k, hi - j, &bad);
        for (int64_t j = 0; step && j < n; j += step)
            if (!ok[j]) {
                joins_agree(d, k, hi - j, &bad);
                ir_error(g, &d->eq[bad].og, "unsupported: sizes derived from the bounded "
                         "dynamic dimension '%s' that this node joins differ at %lld, a size "
                         "of the bundle's step %lld", nm, (long long)(hi - j), (long long)step);
                return false;
            }
        if (!step && n > 1 && !(step = least_step(ok, n))) {
            joins_agree(d, k, hi - 1, &bad);
            for (int64_t j = 1; bad < 0 && j < n; j++)
                joins_agree(d, k, hi - j, &bad);
            ir_error(g, &d->eq[bad >= 0 ? bad : 0].og, "unsupported: the sizes derived from "
                     "the bounded dynamic dimension '%s' that this node joins agree at its "
                     "bound %lld but at no regular set of sizes below it down to %lld (fix its "
                     "size with --input-shape)", nm, (long long)hi, (long long)lo);
            return false;
        }
        for (uint32_t i = 0; i < g->nsymdims; i++)
            if (g->symdims[i].sym == k)
                g->symdims[i].step = step > 1 ? step : 0;
    }
    return true;
}

static bool mark_outputs(Sd *d)
{
    IrGraph *g = d->g;
    uint32_t nin = g->nsymdims;
    for (uint32_t i = 0; i < g->noutputs - g->nhidden; i++) {
        ValId v = g->outputs[i];
        const SdVal *s = sd_get(d, v);
        int da;
        if (!unpad_output(d, v, &s))
            return false;
        if (s && derived_output(d, v, s, &da)) {
            const IrOrigin og = {g->vals[v].name, "output", NULL};
            ValId c = pass_symdim_count(d, s->ax[da].sym[0], 1, &og);
            v = g->outputs[i] = output_alone(g, v, &og);
            ir_dyn_add(g, v, da, ir_reshape(g, c, NULL, 0, &og));
            continue;
        }
        if (s && compacted(d, v, s)) {
            const IrOrigin og = {g->vals[v].name, "output", NULL};
            ValId y = pass_symdim_compact_output(d, v, s, &og);
            if (y != IR_NONE) {
                g->outputs[i] = y;
                continue;
            }
        }
        for (int a = 0; s && a < ir_vtype(g, v)->rank; a++) {
            const SdAxis *x = &s->ax[a];
            if (!ax_sym(x))
                continue;
            if (x->n != 1 || x->sym[0] >= d->nbase) {
                ir_diag_error(g->diag, "unsupported: output '%s' axis %d %s the bounded "
                              "dynamic dimension '%s'%s", g->vals[v].name, a,
                              x->n != 1 ? "merges" : "has a size derived from",
                              pass_symdim_name(d, first_sym(&(SdVal){.ax = {*x}}, 1)),
                              x->n != 1 ? " with other dimensions"
                                        : " (by a window) beside another symbolic axis: one "
                                          "derived extent an output, alone, is supported");
                return false;
            }
            const IrSymDim *src = NULL;
            for (uint32_t j = 0; j < nin; j++)
                if (g->symdims[j].sym == x->sym[0])
                    src = &g->symdims[j];
            ir_sym_add(g, v, a, src->min, src->max, src->name);
            g->symdims[g->nsymdims - 1].step = src->step;
            g->symdims[g->nsymdims - 1].output = true;
            g->symdims[g->nsymdims - 1].input = i;        /* the output's index */
        }
    }
    return true;
}

/* The symbolic axes of the graph inputs, as the symbol table gives them (d->val and
 * d->sum cleared first). */
static void sd_start(Sd *d)
{
    IrGraph *g = d->g;
    memset(d->val, 0, (d->nvals + 1) * sizeof *d->val);
    memset(d->sum, 0, (d->nvals + 1) * sizeof *d->sum);
    for (uint32_t i = 0; i < g->nsymdims; i++) {
        const IrSymDim *e = &g->symdims[i];
        if (!d->val[e->input])
            d->val[e->input] = sd_new(d, ir_vtype(g, e->input));
        d->val[e->input]->ax[e->axis] = (SdAxis){.n = 1, .size = {e->max}, .sym = {e->sym}};
    }
}

/* One walk over nodes[0..n) (copies of them: the planning walk changes nothing);
 * the rewriting walk re-adds each node after its masks, reading masked sources, and
 * masks the planned sources it computes (symdim_source.c). */
static bool sd_walk(Sd *d, const IrNode *nodes, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (nodes[i].dead)
            continue;
        IrNode nd = nodes[i];
        ValId in[16];
        if (nd.nin <= 16) {
            memcpy(in, nd.in, nd.nin * sizeof *in);
            nd.in = in;
        }
        if (!pass_symdim_ext_inputs(d, &nd) || !prop_node(d, &nd))
            return false;
        if (d->plan)
            continue;
        pass_symdim_redirect(d, &nd);
        ir_readd_node(d->g, &nd);
        pass_symdim_mask_outputs(d, &nd);
    }
    return true;
}

bool pass_symdim(IrGraph *g)
{
    int nsym = ir_sym_count(g);
    Sd d;
    memset(&d, 0, sizeof d);
    d.g = g;
    d.val = ir_scratch(g, (g->nvals + 1) * sizeof(SdVal *));
    d.sum = ir_scratch(g, (g->nvals + 1) * sizeof(SdSum *));
    d.src = ir_scratch(g, (g->nvals + 1) * sizeof(SdSource *));
    d.nvals = g->nvals;
    d.nbase = nsym;
    d.count = ir_scratch(g, (size_t)(nsym + SD_MAXDER) * sizeof(ValId));
    for (int k = 0; k < nsym + SD_MAXDER; k++)
        d.count[k] = IR_NONE;
    IrType st = {.dtype = IR_DT_I32, .rank = 1, .dims = {nsym}};
    d.syms = ir_add_input(g, "spy.dims", &st);
    g->sym_input = d.syms;
    sd_start(&d);
    d.plan = true;                             /* which sources to mask for all users */
    if (!sd_walk(&d, g->nodes, g->nnodes))
        return false;
    sd_start(&d);
    d.plan = false;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    return sd_walk(&d, old, n) && !ir_failed(g) && sd_steps(&d) && mark_outputs(&d);
}
