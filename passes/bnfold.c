/* bnfold.c: pass_bnfold, folding of per-channel affine chains into contractions.
 *
 * A CONV with constant weights (or a MATMUL with a constant 2-D right operand)
 * followed by a chain of BINARY ops with constants that are per output channel
 * (CONV: axis 1; MATMUL: the last axis) or scalars -- add, sub, mul, div, each the
 * only user of the previous value -- computes y = conv(x, W) * s + t per channel.
 * The chain is replaced by conv(x, W * s) + t: the weights are scaled at compile
 * time and one bias add remains (none if t is zero). This is what inference
 * BatchNormalization (and a Gemm's alpha/beta) decompose into.
 */
#include <stdio.h>
#include <string.h>

#include "passes/decompose/dec.h"
#include "pass.h"

enum { ROLE_NONE, ROLE_HEAD, ROLE_SKIP };

typedef struct {
    uint32_t last;                         /* old index of the chain's last node */
    int64_t m;                             /* channels */
    double *s, *t;                         /* y = z * s + t per channel */
} Chain;

typedef struct {
    uint32_t *uses;                        /* per value */
    uint32_t *consumer;                    /* per value: a node (old index) using it */
    bool *is_out;
    uint8_t *role;                         /* per old node */
    Chain *chain;                          /* per old node (heads only) */
} Bn;

/* Per-channel vector of constant k for an output of rank r with m channels on
 * axis ax; false when k varies along any other axis or is not f32. */
static bool chan_vec(IrGraph *g, ValId k, int r, int ax, int64_t m, double *out)
{
    if (!ir_is_const(g, k))
        return false;
    const IrType *t = ir_vtype(g, k);
    if (t->dtype != IR_DT_F32 || t->rank > r)
        return false;
    bool per = false;
    for (int j = 0; j < t->rank; j++) {
        int oa = j + r - t->rank;
        if (t->dims[j] == 1)
            continue;
        if (oa != ax || t->dims[j] != m)
            return false;
        per = true;
    }
    const float *d = ir_val(g, k)->data;
    for (int64_t i = 0; i < m; i++)
        out[i] = per ? d[i] : d[0];
    return true;
}

/* Apply one BINARY node u (z on side `zi`, constant kv) to the affine map (s, t).
 * Returns false when the op is not affine in z. */
static bool apply_op(int fn, int zi, const double *kv, int64_t m, double *s, double *t)
{
    if (fn != IR_BIN_ADD && fn != IR_BIN_MUL && fn != IR_BIN_SUB && fn != IR_BIN_DIV)
        return false;
    for (int64_t i = 0; fn == IR_BIN_DIV && i < m; i++)
        if (zi != 0 || kv[i] == 0)
            return false;
    for (int64_t i = 0; i < m; i++) {
        double k = kv[i];
        switch (fn) {
        case IR_BIN_ADD: t[i] += k; break;
        case IR_BIN_MUL: s[i] *= k; t[i] *= k; break;
        case IR_BIN_SUB:
            if (zi == 0) {
                t[i] -= k;
            } else {
                s[i] = -s[i];
                t[i] = k - t[i];
            }
            break;
        case IR_BIN_DIV:
            s[i] /= k;
            t[i] /= k;
            break;
        default: return false;
        }
    }
    return true;
}

/* Channel axis and count of a foldable head node, or false. */
static bool head_info(IrGraph *g, const IrNode *n, int *ax, int64_t *m)
{
    if (n->dead || (n->op != IR_OP_CONV && n->op != IR_OP_MATMUL) || !ir_is_const(g, n->in[1]))
        return false;
    const IrType *tw = ir_vtype(g, n->in[1]), *to = ir_vtype(g, n->out[0]);
    if (tw->dtype != IR_DT_F32 || to->dtype != IR_DT_F32)
        return false;
    if (n->op == IR_OP_CONV) {
        *ax = 1;
        *m = tw->dims[0];
        return true;
    }
    if (tw->rank != 2)
        return false;
    *ax = to->rank - 1;
    *m = tw->dims[1];
    return true;
}

/* Follow the single-use chain of per-channel affine ops after head node h. */
static void find_chain(IrGraph *g, Bn *b, uint32_t h)
{
    const IrNode *n = &g->nodes[h];
    int ax;
    int64_t m;
    if (!head_info(g, n, &ax, &m))
        return;
    double *s = ir_scratch(g, sizeof(double) * (size_t)m), *t = ir_scratch(g, sizeof(double) * (size_t)m);
    double *kv = ir_scratch(g, sizeof(double) * (size_t)m);
    for (int64_t i = 0; i < m; i++)
        s[i] = 1;
    ValId v = n->out[0];
    const IrType *ty = ir_vtype(g, v);
    uint32_t last = h, len = 0;
    bool scaled = false;
    while (b->uses[v] == 1 && !b->is_out[v] && b->consumer[v] != IR_NONE) {
        const IrNode *u = &g->nodes[b->consumer[v]];
        if (u->op != IR_OP_BINARY || !ir_type_eq(ir_vtype(g, u->out[0]), ty))
            break;
        int zi = u->in[0] == v ? 0 : 1, fn = (int)ir_attr_get_int(u, "fn", -1);
        if (u->in[0] == u->in[1] || !chan_vec(g, u->in[1 - zi], ty->rank, ax, m, kv) ||
            !apply_op(fn, zi, kv, m, s, t))
            break;
        scaled |= fn != IR_BIN_ADD && !(fn == IR_BIN_SUB && zi == 0);
        last = b->consumer[v];
        v = u->out[0];
        len++;
    }
    if (len == 0 || (!scaled && len < 2))
        return;
    b->role[h] = ROLE_HEAD;
    b->chain[h] = (Chain){.last = last, .m = m, .s = s, .t = t};
    for (ValId w = n->out[0]; w != g->nodes[last].out[0];) {
        uint32_t u = b->consumer[w];
        b->role[u] = ROLE_SKIP;
        w = g->nodes[u].out[0];
    }
}

/* Scaled copy of the weights: per output channel (CONV: dim 0; MATMUL: dim 1). */
static ValId scaled_weights(IrGraph *g, const IrNode *n, const double *s)
{
    ValId w = n->in[1];
    const IrType *t = ir_vtype(g, w);
    int64_t numel = ir_type_numel(t);
    float *d = ir_scratch(g, sizeof(float) * (size_t)(numel + 1));  /* ir_add_const copies */
    const float *src = ir_val(g, w)->data;
    int64_t inner = n->op == IR_OP_CONV ? numel / t->dims[0] : 1, m = n->op == IR_OP_CONV ? t->dims[0] : t->dims[1];
    for (int64_t i = 0; i < numel; i++) {
        int64_t ch = n->op == IR_OP_CONV ? i / inner : i % m;
        d[i] = (float)(src[i] * s[ch]);
    }
    char name[64];
    snprintf(name, sizeof name, "%s_folded", ir_val(g, w)->name);
    return ir_add_const(g, name, t, d);
}

/* Emit the folded form of the chain headed by n (old node, arena memory). */
static void emit_chain(IrGraph *g, IrNode *n, const Chain *c, const IrNode *last)
{
    IrNode head = *n;
    head.in = ir_alloc(g, sizeof(ValId) * n->nin);
    memcpy(head.in, n->in, sizeof(ValId) * n->nin);
    head.in[1] = scaled_weights(g, n, c->s);
    bool zero = true;
    for (int64_t i = 0; i < c->m; i++)
        zero &= c->t[i] == 0;
    if (zero) {
        head.out = ir_alloc(g, sizeof(ValId));
        head.out[0] = last->out[0];
        ir_readd_node(g, &head);
        return;
    }
    ir_readd_node(g, &head);
    const IrType *to = ir_vtype(g, n->out[0]);
    int64_t dims[IR_MAX_RANK];
    int r = n->op == IR_OP_CONV ? to->rank : 1;
    for (int i = 0; i < r; i++)
        dims[i] = 1;
    dims[n->op == IR_OP_CONV ? 1 : 0] = c->m;
    ValId tc = dec_const(g, IR_DT_F32, dims, r, c->t);
    IrNode add = {.op = IR_OP_BINARY, .nin = 2, .nout = 1, .nattrs = 1,
                  .origin = last->origin};
    add.in = ir_alloc(g, sizeof(ValId) * 2);
    add.in[0] = n->out[0];
    add.in[1] = tc;
    add.out = ir_alloc(g, sizeof(ValId));
    add.out[0] = last->out[0];
    add.attrs = ir_alloc(g, sizeof(IrAttr));
    add.attrs[0] = ir_attr_int("fn", IR_BIN_ADD);
    ir_readd_node(g, &add);
}

/* The pass. */
bool pass_bnfold(IrGraph *g, const PassOptions *opt)
{
    (void)opt;
    uint32_t nn = g->nnodes;
    Bn b;
    b.uses = ir_use_counts(g);
    b.consumer = ir_scratch(g, sizeof(uint32_t) * (g->nvals + 1));
    b.is_out = ir_scratch(g, sizeof(bool) * (g->nvals + 1));
    b.role = ir_scratch(g, nn + 1);
    b.chain = ir_scratch(g, sizeof(Chain) * (nn + 1));
    for (uint32_t v = 0; v < g->nvals; v++)
        b.consumer[v] = IR_NONE;
    for (uint32_t i = 0; i < g->noutputs; i++)
        b.is_out[g->outputs[i]] = true;
    for (uint32_t i = 0; i < nn; i++)
        for (int k = 0; !g->nodes[i].dead && k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] != IR_NONE)
                b.consumer[g->nodes[i].in[k]] = i;
    bool any = false;
    for (uint32_t i = 0; i < nn; i++) {
        if (b.role[i] == ROLE_NONE)
            find_chain(g, &b, i);
        any |= b.role[i] == ROLE_HEAD;
    }
    if (!any)
        return !ir_failed(g);
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (old[i].dead || b.role[i] == ROLE_SKIP)
            continue;
        if (b.role[i] == ROLE_HEAD)
            emit_chain(g, &old[i], &b.chain[i], &old[b.chain[i].last]);
        else
            ir_readd_node(g, &old[i]);
    }
    return !ir_failed(g);
}
