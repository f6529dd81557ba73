/* halfwiden.c: float16/bfloat16 arithmetic computed in float32.
 *
 * The device stores float16, bfloat16 (and float8/float4) tensors and converts them
 * with CAST, but its arithmetic runs in float32. Each frontend operator that computes
 * on such values is evaluated in float32 and its half-precision results are rounded
 * once (CAST, round to nearest even), as onnxruntime and the ONNX reference do.
 *
 * This file is the one place that decides how half-precision arithmetic is computed:
 * which dtypes count as half (is_half), which nodes compute on them (computes_half)
 * and how they are rewritten (emit). Only operators whose definition fixes an
 * intermediate precision (FlexAttention's softmax_precision, dec_flexattn.c) round
 * inside their own lowering.
 * The rule has two entry points:
 *
 *  - pass_halfwiden_group, the per-operator step: the decomposition calls it right
 *    after each frontend node's handler (dec_run). The core nodes the node lowered to
 *    are re-emitted with every half operand widened to float32 (exact), intermediate
 *    values kept in float32, and only the node's own results rounded back to their
 *    declared dtype. This rounding point, one per ONNX operator, is why the step runs
 *    during decomposition and not as marks for the pass: the widened nodes, the
 *    constants they fold to and the rounding casts must be created right after the
 *    operator they belong to, before the next operator is lowered. Constants are laid
 *    out in value order (dram_plan.c), so creating them later would reorder the
 *    constant segment of every multi-operator float16 model.
 *  - pass_halfwiden, a pass right after decomposition, applies the rule per core node
 *    (rounding every result) to the arithmetic still on half values: graphs built from
 *    core ops directly (.ir files) and operators whose lowering kept a foreign node.
 *
 * The fp16 precision mode computes float16 natively (in DLFloat16, fp16.c): there
 * is_half excludes float16 (g->half_native), and both entry points follow it.
 *
 * "Arithmetic" means elementwise, reduction and contraction nodes other than CAST;
 * data movement stays in the stored dtype. A value widened for several users is
 * widened once. The maps of a rewrite live in the scratch arena of the running pass.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/decompose/dec.h"
#include "dtconv.h"
#include "pass.h"

typedef struct {
    ValId base;                            /* first value id with a slot in rep/wide */
    uint32_t cap;                          /* slots allocated */
    ValId *rep;                            /* [v - base]: replacement of v (IR_NONE: none) */
    ValId *wide;                           /* [v - base]: float32 copy of half value v */
    ValId *outer;                          /* pairs (v, float32 copy) for v < base */
    uint32_t nouter, capouter;
    IrGraph *g;                            /* arrays live in its scratch arena */
} HwMap;

/* Whether dtype t is a float type the device only stores (float16, bfloat16, the
 * float8 variants, float4e2m1) in graph g. In fp16 mode (g->half_native) float16 is
 * not one: its arithmetic stays float16 here and fp16.c computes it in DLFloat16. */
static bool is_half(const IrGraph *g, IrDType t)
{
    return (t == IR_DT_F16 && !g->half_native) || t == IR_DT_BF16 || spy_dt_narrow_float(t);
}

/* Whether node n computes on (reads or writes) a float16/bfloat16 value. */
static bool computes_half(IrGraph *g, const IrNode *n)
{
    IrOpClass c = ir_op_info[n->op].cls;
    if (n->dead || n->op == IR_OP_CAST ||
        (c != IR_CLS_ELEM && c != IR_CLS_REDUCE && c != IR_CLS_CONTRACT))
        return false;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] != IR_NONE && is_half(g, ir_vtype(g, n->in[i])->dtype))
            return true;
    for (int i = 0; i < n->nout; i++)
        if (is_half(g, ir_vtype(g, n->out[i])->dtype))
            return true;
    return false;
}

enum { REP, WIDE };

/* Slot of value v >= m->base in array `which` (REP or WIDE), grown on demand. */
static ValId *slot(HwMap *m, int which, ValId v)
{
    uint32_t i = v - m->base;
    if (i >= m->cap) {
        uint32_t cap = (i + 1) * 2;
        ValId *r = ir_scratch(m->g, cap * sizeof *r), *w = ir_scratch(m->g, cap * sizeof *w);
        if (m->cap) {
            memcpy(r, m->rep, m->cap * sizeof *r);
            memcpy(w, m->wide, m->cap * sizeof *w);
        }
        m->rep = r;
        m->wide = w;
        for (uint32_t k = m->cap; k < cap; k++)
            m->rep[k] = m->wide[k] = IR_NONE;
        m->cap = cap;
    }
    return which == REP ? &m->rep[i] : &m->wide[i];
}

/* Value that replaces v (v itself when none). */
static ValId mapped(HwMap *m, ValId v)
{
    if (v == IR_NONE || v < m->base || v - m->base >= m->cap)
        return v;
    ValId r = m->rep[v - m->base];
    return r == IR_NONE ? v : r;
}

/* Replacement of graph output value v (ctx: the HwMap). */
static ValId mapped_out(void *ctx, ValId v)
{
    return mapped(ctx, v);
}

/* The float32 copy of half value v (a CAST created on first use). */
static ValId widened(IrGraph *g, HwMap *m, ValId v, const IrOrigin *o)
{
    if (v < m->base) {
        for (uint32_t i = 0; i < m->nouter; i++)
            if (m->outer[2 * i] == v)
                return m->outer[2 * i + 1];
        if (m->nouter == m->capouter) {
            m->capouter = m->capouter ? 2 * m->capouter : 8;
            ValId *p = ir_scratch(g, 2 * m->capouter * sizeof *p);
            if (m->nouter)
                memcpy(p, m->outer, 2 * m->nouter * sizeof *p);
            m->outer = p;
        }
        ValId w = ir_cast(g, v, IR_DT_F32, o);
        m->outer[2 * m->nouter] = v;
        m->outer[2 * m->nouter++ + 1] = w;
        return w;
    }
    ValId w = *slot(m, WIDE, v);
    if (w == IR_NONE) {
        w = ir_cast(g, v, IR_DT_F32, o);
        *slot(m, WIDE, v) = w;
    }
    return w;
}

/* Re-emit node n with inputs replaced per m; if it computes on half values, those
 * operands are widened and it computes in float32. A data movement node that gets a
 * float32 replacement for some half input has its other half inputs widened too (a
 * CONCAT needs one dtype). New results (or, when `round`, their values rounded back to
 * the old half dtypes) become the replacements of the old results. Returns false when
 * building failed (reported). */
static bool emit(IrGraph *g, HwMap *m, const IrNode *n, bool round)
{
    ValId in[64], outs[16];
    IR_ASSERT(n->nin <= 64 && n->nout <= 16);
    bool half = computes_half(g, n), changed = false;
    for (int i = 0; i < n->nin; i++) {
        in[i] = mapped(m, n->in[i]);
        /* a BITCAST reinterprets the stored (rounded) half bits, never a float32 copy */
        if (n->op == IR_OP_BITCAST && in[i] != n->in[i] &&
            ir_vtype(g, in[i])->dtype != ir_vtype(g, n->in[i])->dtype)
            in[i] = ir_cast(g, in[i], ir_vtype(g, n->in[i])->dtype, &n->origin);
        half |= n->op != IR_OP_CAST && in[i] != n->in[i] &&
                ir_vtype(g, in[i])->dtype != ir_vtype(g, n->in[i])->dtype;
    }
    for (int i = 0; i < n->nin; i++) {
        if (half && in[i] != IR_NONE && is_half(g, ir_vtype(g, in[i])->dtype))
            in[i] = widened(g, m, in[i], &n->origin);
        changed |= in[i] != n->in[i];
    }
    if (!changed || n->op == IR_OP_FOREIGN) {
        IrNode cp = *n;
        cp.in = in;
        ir_readd_node(g, &cp);
        return true;
    }
    NodeId id = ir_add_node(g, n->op, in, n->nin, n->attrs, n->nattrs, &n->origin);
    if (ir_failed(g))
        return false;
    memcpy(outs, g->nodes[id].out, (size_t)n->nout * sizeof *outs);
    for (int k = 0; k < n->nout; k++) {
        ValId res = outs[k];
        IrDType t = ir_vtype(g, n->out[k])->dtype;
        if (round && is_half(g, t) && ir_vtype(g, res)->dtype != t)
            res = ir_cast(g, res, t, &n->origin);
        if (n->out[k] >= m->base)
            *slot(m, REP, n->out[k]) = res;
        else
            ir_replace_uses(g, n->out[k], res);
    }
    return true;
}

void pass_halfwiden_group(IrGraph *g, uint32_t first, ValId first_val, ValId *out, int nout)
{
    bool any = false;
    for (uint32_t i = first; i < g->nnodes; i++) {
        if (g->nodes[i].op == IR_OP_FOREIGN)
            return;                        /* left to pass_halfwiden */
        any |= computes_half(g, &g->nodes[i]);
    }
    if (!any)
        return;
    uint32_t n = g->nnodes - first;
    IrNode *tail = ir_scratch(g, n * sizeof *tail);
    memcpy(tail, g->nodes + first, n * sizeof *tail);
    g->nnodes = first;
    HwMap m = {.base = first_val, .g = g};
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++)
        if (!tail[i].dead)
            ok = emit(g, &m, &tail[i], false);
    for (int k = 0; k < nout && ok; k++) {
        ValId v = out[k], r = mapped(&m, v);
        if (v == IR_NONE || r == v)
            continue;
        IrDType t = ir_vtype(g, v)->dtype;
        out[k] = is_half(g, t) && ir_vtype(g, r)->dtype != t ? ir_cast(g, r, t, &tail[0].origin) : r;
    }
}

bool pass_halfwiden(IrGraph *g, const PassOptions *opt)
{
    g->half_native = pass_prec_half(opt->precision);
    bool any = false;
    for (NodeId i = 0; i < g->nnodes && !any; i++)
        any = computes_half(g, &g->nodes[i]);
    if (!any)
        return true;
    HwMap m = {.base = 0, .g = g};
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++)
        if (!old[i].dead)
            ok = emit(g, &m, &old[i], true);
    if (ok)
        ir_replace_outputs(g, mapped_out, &m);
    return ok && !ir_failed(g);
}
