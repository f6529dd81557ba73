/* qsiblings.c: pass_qsiblings, the merge of sibling int8 products with their epilogue
 * chains (QDQ models).
 *
 * A QDQ model's attention projections decompose (onnx_qdq.c) to int8 products of one
 * 8-bit activation by constant 8-bit weights of one depth, each followed by a chain of
 * pointwise ops on its result alone (the zero-point correction, the scale, the
 * requantization and its round trips, the offset of uint8 data into int8) whose
 * structure is the same for Q, K and V and whose constants differ. Merged, they become one
 * product of the weights side by side, followed by one chain of the same ops whose
 * constants are the members' side by side (a scalar that differs between members
 * becomes a per-column vector of the merged width; one they share stays a scalar),
 * read through a SLICE of the last axis per member, which takes over the member's
 * result and name. One kernel then reads the activation once and streams all the
 * weights, where there were a kernel and a read of the activation per member. Every
 * output column is computed by the same operations on the same operands as before,
 * so the values are unchanged. Members whose chains differ in structure are not
 * merged with each other.
 *
 * pass_siblings (siblings.c) merges float products (which have no chains yet); the
 * int8 mode of calibrated models merges before it quantizes (quant.c). Runs after dce,
 * so that the chains' use counts are those of the live graph.
 */
#include <string.h>

#include "pass.h"

#define QS_MAX 4                           /* members merged into one product */
#define QS_CHAIN 32                        /* longest epilogue chain followed */

typedef struct {
    uint32_t mm;                           /* old index of the MATMUL */
    uint32_t chain[QS_CHAIN];              /* old indices of its chain, in order */
    int8_t side[QS_CHAIN];                 /* BINARY: operand index of the constant */
    int n;                                 /* chain length */
    ValId out;                             /* the chain's last value (the result) */
    int64_t cols;                          /* N: the weight's columns */
} QSib;

typedef struct {
    IrGraph *g;
    const IrNode *old;
    uint32_t nold;
    const uint32_t *uses;                  /* old value uses (graph outputs count) */
    const uint32_t *user;                  /* a reader of each value (old index) */
    const bool *is_out;
} QsCtx;

static int64_t qs_numel(const IrType *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

/* Whether constant c can be laid side by side along the last axis of a chain value of
 * rank r and last dimension n: one element, or n elements along its last axis. */
static bool qs_col_const(IrGraph *g, ValId c, int r, int64_t n)
{
    if (!ir_is_const(g, c) || !ir_val(g, c)->data || ir_dtype_size(ir_vtype(g, c)->dtype) == 0)
        return false;
    const IrType *t = ir_vtype(g, c);
    if (qs_numel(t) == 1)
        return true;
    return t->rank >= 1 && t->rank <= r && t->dims[t->rank - 1] == n && qs_numel(t) == n;
}

/* Whether old node i is a member: an int8 product of an 8-bit activation by a constant
 * 8-bit [K, N] weight; its chain of single-use pointwise readers of the same shape
 * (each BINARY's other operand a column constant) is collected into *s. */
static bool qs_member(const QsCtx *c, uint32_t i, QSib *s)
{
    IrGraph *g = c->g;
    const IrNode *n = &c->old[i];
    if (n->dead || n->op != IR_OP_MATMUL || n->nin != 2 || ir_is_const(g, n->in[0]) ||
        !ir_is_const(g, n->in[1]) || !ir_val(g, n->in[1])->data)
        return false;
    const IrType *ta = ir_vtype(g, n->in[0]), *tb = ir_vtype(g, n->in[1]);
    if ((ta->dtype != IR_DT_I8 && ta->dtype != IR_DT_U8) ||
        (tb->dtype != IR_DT_I8 && tb->dtype != IR_DT_U8) || tb->rank != 2)
        return false;
    *s = (QSib){.mm = i, .out = n->out[0], .cols = tb->dims[1]};
    const IrType *ty = ir_vtype(g, s->out);
    while (s->n < QS_CHAIN && c->uses[s->out] == 1 && !c->is_out[s->out] &&
           c->user[s->out] != UINT32_MAX) {
        const IrNode *u = &c->old[c->user[s->out]];
        if (u->dead || u->nout != 1 ||
            (u->op != IR_OP_UNARY && u->op != IR_OP_BINARY && u->op != IR_OP_CAST))
            break;
        const IrType *tu = ir_vtype(g, u->out[0]);
        if (tu->rank != ty->rank || memcmp(tu->dims, ty->dims, sizeof(int64_t) * (size_t)ty->rank))
            break;
        int side = -1;
        if (u->op == IR_OP_BINARY) {
            if (u->nin != 2 || u->in[0] == u->in[1])
                break;
            side = u->in[0] == s->out ? 1 : 0;
            if (!qs_col_const(g, u->in[side], ty->rank, s->cols))
                break;
        }
        s->side[s->n] = (int8_t)side;
        s->chain[s->n++] = c->user[s->out];
        s->out = u->out[0];
    }
    return !c->is_out[s->out];
}

/* Whether nodes a and b have the same op, arity, function / target type and result
 * dtype. */
static bool qs_same_node(IrGraph *g, const IrNode *a, const IrNode *b)
{
    return a->op == b->op && a->nin == b->nin && a->nattrs == b->nattrs &&
           ir_attr_get_int(a, "fn", -1) == ir_attr_get_int(b, "fn", -1) &&
           ir_attr_get_int(a, "to", -1) == ir_attr_get_int(b, "to", -1) &&
           ir_vtype(g, a->out[0])->dtype == ir_vtype(g, b->out[0])->dtype;
}

/* Whether member b can join a group led by a: the same activation, weight dtype and
 * depth, and a chain of the same structure (constants of the same dtypes). */
static bool qs_compatible(const QsCtx *c, const QSib *a, const QSib *b)
{
    IrGraph *g = c->g;
    const IrNode *ma = &c->old[a->mm], *mb = &c->old[b->mm];
    const IrType *wa = ir_vtype(g, ma->in[1]), *wb = ir_vtype(g, mb->in[1]);
    if (ma->in[0] != mb->in[0] || wa->dtype != wb->dtype || wa->dims[0] != wb->dims[0] ||
        a->n != b->n || ir_vtype(g, a->out)->rank != ir_vtype(g, b->out)->rank)
        return false;
    for (int s = 0; s < a->n; s++) {
        const IrNode *na = &c->old[a->chain[s]], *nb = &c->old[b->chain[s]];
        if (!qs_same_node(g, na, nb) || a->side[s] != b->side[s])
            return false;
        if (a->side[s] >= 0 && ir_vtype(g, na->in[a->side[s]])->dtype !=
                                   ir_vtype(g, nb->in[b->side[s]])->dtype)
            return false;
    }
    return true;
}

/* The constants cv[0..nm) (column constants of members of widths m[i].cols) side by
 * side: the first one when all are the same scalar, else a [sum of widths] vector. */
static ValId qs_concat_const(IrGraph *g, const QSib *m, int nm, const ValId *cv)
{
    const IrType *t0 = ir_vtype(g, cv[0]);
    size_t es = ir_dtype_size(t0->dtype);
    bool same = true;
    int64_t total = 0;
    for (int i = 0; i < nm; i++) {
        total += m[i].cols;
        same = same && qs_numel(ir_vtype(g, cv[i])) == 1 &&
               memcmp(ir_val(g, cv[i])->data, ir_val(g, cv[0])->data, es) == 0;
    }
    if (same)
        return cv[0];
    unsigned char *d = ir_scratch(g, (size_t)total * es);
    int64_t off = 0;
    for (int i = 0; i < nm; i++) {
        const unsigned char *src = ir_val(g, cv[i])->data;
        bool scalar = qs_numel(ir_vtype(g, cv[i])) == 1;
        for (int64_t j = 0; j < m[i].cols; j++)
            memcpy(d + (size_t)(off + j) * es, src + (scalar ? 0 : (size_t)j * es), es);
        off += m[i].cols;
    }
    IrType t = {.dtype = t0->dtype, .rank = 1, .dims = {total}};
    return ir_add_const(g, ir_fresh_name(g, "merged_const"), &t, d);
}

/* The members' [K, Ni] weights side by side: [K, sum of Ni]. */
static ValId qs_concat_weights(IrGraph *g, const IrNode *old, const QSib *m, int nm)
{
    const IrType *t0 = ir_vtype(g, old[m[0].mm].in[1]);
    size_t es = ir_dtype_size(t0->dtype);
    int64_t rows = t0->dims[0], total = 0, off = 0;
    for (int i = 0; i < nm; i++)
        total += m[i].cols;
    unsigned char *d = ir_scratch(g, (size_t)(rows * total) * es);
    for (int i = 0; i < nm; i++) {
        const unsigned char *src = ir_val(g, old[m[i].mm].in[1])->data;
        for (int64_t r = 0; r < rows; r++)
            memcpy(d + (size_t)(r * total + off) * es, src + (size_t)(r * m[i].cols) * es,
                   (size_t)m[i].cols * es);
        off += m[i].cols;
    }
    IrType t = {.dtype = t0->dtype, .rank = 2, .dims = {rows, total}};
    return ir_add_const(g, ir_fresh_name(g, "merged_weight"), &t, d);
}

/* Add the merged product and chain of members m[0..nm) and a SLICE per member, which
 * takes over the member's result and name. */
static void qs_merge(const QsCtx *c, const QSib *m, int nm)
{
    IrGraph *g = c->g;
    const IrNode *f = &c->old[m[0].mm];
    ValId in[2] = {f->in[0], qs_concat_weights(g, c->old, m, nm)};
    ValId y = ir_node(g, ir_add_node(g, IR_OP_MATMUL, in, 2, f->attrs, f->nattrs,
                                     &f->origin))->out[0];
    for (int s = 0; s < m[0].n && !ir_failed(g); s++) {
        const IrNode *n0 = &c->old[m[0].chain[s]];
        ValId a[2] = {y, IR_NONE};
        if (m[0].side[s] >= 0) {
            ValId cv[QS_MAX];
            for (int i = 0; i < nm; i++)
                cv[i] = c->old[m[i].chain[s]].in[m[i].side[s]];
            a[m[0].side[s]] = qs_concat_const(g, m, nm, cv);
            a[1 - m[0].side[s]] = y;
        }
        y = ir_node(g, ir_add_node(g, n0->op, a, n0->nin, n0->attrs, n0->nattrs,
                                   &n0->origin))->out[0];
    }
    const IrType *yt = ir_vtype(g, y);
    int r = yt->rank;
    int64_t off = 0, starts[IR_MAX_RANK], steps[IR_MAX_RANK], sizes[IR_MAX_RANK];
    for (int i = 0; i < nm && !ir_failed(g); i++) {
        for (int d = 0; d < r; d++) {
            starts[d] = d == r - 1 ? off : 0;
            steps[d] = 1;
            sizes[d] = d == r - 1 ? m[i].cols : yt->dims[d];
        }
        IrAttr at[3] = {ir_attr_ints_ref("starts", starts, r),
                        ir_attr_ints_ref("steps", steps, r), ir_attr_ints_ref("sizes", sizes, r)};
        ValId v = ir_node(g, ir_add_node(g, IR_OP_SLICE, &y, 1, at, 3,
                                         &c->old[m[i].mm].origin))->out[0];
        const char *name = ir_val(g, m[i].out)->name;
        ir_replace_uses(g, m[i].out, v);
        ir_set_name(g, m[i].out, ir_fresh_name(g, "merged"));
        ir_set_name(g, v, name);
        off += m[i].cols;
        yt = ir_vtype(g, y);
    }
}

/* Marks the nodes of members m[0..nm) as done. */
static void qs_mark(uint8_t *done, const QSib *m, int nm)
{
    for (int i = 0; i < nm; i++) {
        done[m[i].mm] = 1;
        for (int s = 0; s < m[i].n; s++)
            done[m[i].chain[s]] = 1;
    }
}

/* The members after m[0] that can join its group; returns the count in m. */
static int qs_group(const QsCtx *c, const uint8_t *done, QSib *m)
{
    int nm = 1;
    for (uint32_t j = m[0].mm + 1; j < c->nold && nm < QS_MAX; j++) {
        QSib s;
        bool free = !done[j];
        if (free && c->old[j].op == IR_OP_MATMUL && c->old[j].in[0] == c->old[m[0].mm].in[0] &&
            qs_member(c, j, &s) && qs_compatible(c, &m[0], &s)) {
            for (int k = 0; k < s.n && free; k++)
                free = !done[s.chain[k]];
            if (free)
                m[nm++] = s;
        }
    }
    return nm;
}

bool pass_qsiblings(IrGraph *g, const PassOptions *opt)
{
    if (opt->keep_fp32 && opt->keep_fp32[0])
        return true;
    QsCtx c = {.g = g, .uses = ir_use_counts(g)};
    uint32_t *user = ir_scratch(g, (g->nvals + 1) * sizeof *user);
    bool *is_out = ir_scratch(g, (g->nvals + 1) * sizeof *is_out);
    memset(user, 0xff, (g->nvals + 1) * sizeof *user);
    for (uint32_t i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]] = true;
    for (uint32_t i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin && !g->nodes[i].dead; k++)
            if (g->nodes[i].in[k] < g->nvals)
                user[g->nodes[i].in[k]] = i;
    c.user = user;
    c.is_out = is_out;
    c.old = ir_rewrite_begin(g, &c.nold);
    uint8_t *done = ir_scratch(g, c.nold + 1);
    for (uint32_t i = 0; i < c.nold && !ir_failed(g); i++) {
        QSib m[QS_MAX];
        int nm = 0;
        if (!done[i] && qs_member(&c, i, &m[0]))
            nm = qs_group(&c, done, m);
        if (nm >= 2) {
            qs_mark(done, m, nm);
            qs_merge(&c, m, nm);
        } else if (!done[i] && !c.old[i].dead)
            ir_readd_node(g, &c.old[i]);
    }
    return !ir_failed(g);
}
