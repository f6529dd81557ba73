/* symdim_source.c: masking a viewed value where it is computed, for all its users
 * (pass_symdim, passes/symdim.c).
 *
 * A reduction or a matrix product that reads a view (reshape, transpose, slice) of an
 * op's result along a symbolic axis needs that view's padding set to a neutral element.
 * The SELECT is applied to the view's source, so that it joins the producing kernel
 * (a matrix product's epilogue) rather than copying a strided view. The source often
 * has other users (the Q, K and V slices of a fused QKV projection): if only the
 * masked view read the SELECT, the source would stay a value of its own and the SELECT
 * a kernel of its own that reads and writes it whole. Padding is never read by a valid
 * result (every op that combines elements along a symbolic axis masks its input
 * itself), so every user of the source may read the masked value instead.
 *
 * The pass therefore walks the graph twice. The planning walk (Sd.plan) follows the
 * symbolic axes and records, per source of a masked view, the symbols to mask and the
 * neutral element (the first request's; requests for another neutral keep SELECTs of
 * their own). The rewriting walk inserts that SELECT right after the source's
 * producer and redirects every later user to it (pass_symdim_redirect); a view whose
 * source is masked along the symbols it needs is then used as it is. Only float
 * sources computed by an op are planned: the runtime zeroes a graph input's padding,
 * which other users rely on, and the padding of an integer value could become a
 * divisor of 0 somewhere else.
 */
#include <string.h>

#include "symdim.h"

/* The value that view v is a view of, through at most 16 reshapes, transposes and
 * slices of values of the original graph (their nodes in chain[0..*n), v's first);
 * v itself when it is no such view (*n == 0). */
static ValId view_source(Sd *d, ValId v, NodeId *chain, int *n)
{
    IrGraph *g = d->g;
    *n = 0;
    while (*n < 16 && v < d->nvals && g->vals[v].def != IR_NONE) {
        const IrNode *p = ir_node(g, g->vals[v].def);
        if (p->op != IR_OP_RESHAPE && p->op != IR_OP_TRANSPOSE && p->op != IR_OP_SLICE)
            break;
        chain[(*n)++] = g->vals[v].def;
        v = p->in[0];
    }
    return v;
}

/* The symbols of factors x in ks (*nk of them); false when src (a value of the
 * original graph) does not hold one of them on any axis. */
static bool source_syms(Sd *d, ValId src, const SdAxis *x, int *ks, int *nk)
{
    const SdVal *ss = sd_get(d, src);
    int r = ir_vtype(d->g, src)->rank;
    *nk = 0;
    for (int f = 0; f < x->n; f++) {
        bool found = false;
        for (int a = 0; ss && a < r; a++)
            for (int i = 0; i < ss->ax[a].n; i++)
                found |= ss->ax[a].sym[i] == x->sym[f];
        if (x->sym[f] >= 0 && !found)
            return false;
        if (x->sym[f] >= 0)
            ks[(*nk)++] = x->sym[f];
    }
    return true;
}

/* Bool mask of the positions of src (of the original graph) that are valid along
 * each of the symbols ks: the AND of one axis mask per symbol, over the factors of
 * that symbol on the axis that holds it. IR_NONE when nk is 0. */
static ValId source_mask(Sd *d, ValId src, const int *ks, int nk, const IrOrigin *og)
{
    const SdVal *ss = sd_get(d, src);
    const IrType *st = ir_vtype(d->g, src);
    ValId m = IR_NONE;
    for (int j = 0; j < nk; j++) {
        int b = -1;
        for (int a = 0; a < st->rank && b < 0; a++)
            for (int i = 0; i < ss->ax[a].n; i++)
                b = ss->ax[a].sym[i] == ks[j] ? a : b;
        SdAxis y = ss->ax[b];                 /* only symbol ks[j]'s factors */
        for (int i = 0; i < y.n; i++)
            y.sym[i] = y.sym[i] == ks[j] ? ks[j] : -1;
        ValId mk = pass_symdim_axis_mask(d, &y, b, st->rank, st->dims[b], og);
        m = m == IR_NONE ? mk : ir_binary(d->g, IR_BIN_AND, m, mk, og);
    }
    return m;
}

/* Does source e mask symbol k? */
static bool masks_sym(const SdSource *e, int k)
{
    for (int i = 0; i < e->nsym; i++)
        if (e->sym[i] == k)
            return true;
    return false;
}

void pass_symdim_plan_source(Sd *d, ValId v, const SdAxis *x, double neutral)
{
    NodeId chain[16];
    int n, ks[SD_MAXF], nk;
    ValId src = view_source(d, v, chain, &n);
    if (!n || d->g->vals[src].def == IR_NONE || !ir_dtype_is_float(ir_vtype(d->g, src)->dtype) ||
        !source_syms(d, src, x, ks, &nk) || !nk)
        return;
    SdSource *e = d->src[src];
    if (!e) {
        e = ir_scratch(d->g, sizeof *e);
        e->neutral = neutral;
        e->masked = IR_NONE;
        d->src[src] = e;
    } else if (memcmp(&e->neutral, &neutral, sizeof neutral)) {
        return;                                /* another neutral: a SELECT of its own */
    }
    for (int j = 0; j < nk; j++)
        if (!masks_sym(e, ks[j]) && e->nsym < SD_MAXSRCSYM)
            e->sym[e->nsym++] = ks[j];
}

ValId pass_symdim_masked(Sd *d, ValId v, const int *ks, int nk, double neutral)
{
    const SdSource *e = v < d->nvals ? d->src[v] : NULL;
    if (!e || e->masked == IR_NONE || memcmp(&e->neutral, &neutral, sizeof neutral))
        return IR_NONE;
    for (int j = 0; j < nk; j++)
        if (!masks_sym(e, ks[j]))
            return IR_NONE;
    return e->masked;
}

ValId pass_symdim_now(const Sd *d, ValId v)
{
    const SdSource *e = v < d->nvals ? d->src[v] : NULL;
    return e && e->masked != IR_NONE ? e->masked : v;
}

/* The original value whose masked value is w (w itself when w is no such value). */
static ValId unmasked(Sd *d, ValId w)
{
    const IrNode *p = ir_val(d->g, w)->def != IR_NONE ? ir_node(d->g, ir_val(d->g, w)->def)
                                                      : NULL;
    if (w >= d->nvals && p && p->op == IR_OP_SELECT && p->in[1] < d->nvals &&
        pass_symdim_now(d, p->in[1]) == w)
        return p->in[1];
    return w;
}

ValId pass_symdim_at_source(Sd *d, ValId v, const SdAxis *x, double neutral,
                            const IrOrigin *og)
{
    IrGraph *g = d->g;
    NodeId chain[16];
    int n, ks[SD_MAXF], nk;
    ValId cur = view_source(d, v, chain, &n), src = unmasked(d, cur);
    if (!source_syms(d, src, x, ks, &nk) || !nk)
        return IR_NONE;
    ValId done = pass_symdim_masked(d, src, ks, nk, neutral);
    if (done != IR_NONE)
        return n ? v : done;                   /* its source is masked for all users */
    if (!n)
        return IR_NONE;
    ValId mask = source_mask(d, src, ks, nk, og);     /* before the neutral, always */
    ValId r = ir_select(g, mask, cur, pass_symdim_neutral(d, src, neutral), og);
    for (int i = n - 1; i >= 0; i--) {
        const IrNode *p = ir_node(g, chain[i]);
        NodeId nn = ir_add_node(g, p->op, &r, 1, p->attrs, p->nattrs, og);
        r = ir_node(g, nn)->out[0];
    }
    return r;
}

void pass_symdim_redirect(Sd *d, IrNode *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] != IR_NONE)
            n->in[i] = pass_symdim_now(d, n->in[i]);
}

void pass_symdim_mask_outputs(Sd *d, const IrNode *n)
{
    for (int i = 0; i < n->nout; i++) {
        ValId o = n->out[i];
        SdSource *e = o < d->nvals ? d->src[o] : NULL;
        if (!e)
            continue;
        ValId m = source_mask(d, o, e->sym, e->nsym, &n->origin);
        e->masked = ir_select(d->g, m, o, pass_symdim_neutral(d, o, e->neutral), &n->origin);
    }
}
