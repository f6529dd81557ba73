/* rotary.c: pass_simplify's split of rotary embeddings by halves (pass_rotary).
 *
 * A rotary position embedding rotates the two halves of the last axis of x:
 *     out = x * C + concat(-x[..., h:], x[..., :h]) * S        (h = half the axis)
 * As written, the NEG and the CONCAT are each a kernel of their own (the CONCAT's
 * inputs are a view and a NEG result, so it cannot be done in place), and the last
 * kernel reads x and the rotated copy. Per half the same values are
 *     out[..., :h] = x[..., :h] * C[..., :h] - x[..., h:] * S[..., :h]
 *     out[..., h:] = x[..., h:] * C[..., h:] + x[..., :h] * S[..., h:]
 * two pointwise kernels reading x through views, whose CONCAT is done in place by
 * them (pass_fuse). Each element gets the same operations on the same operands (a - b
 * rounds like a + -b), so the values are unchanged. The old nodes are left without
 * users for pass_dce; the ADD becomes a reshape of the concat, so output names stay.
 *
 * When a half row is not a whole number of device sticks (a head of 64 in DLFloat16:
 * 64 bytes, half a stick), each half kernel reads both halves as runs that touch a
 * whole stick each and writes half sticks: DRAM moves about three times the bytes the
 * rotation needs. There the rotated copy is instead one matrix product by a constant
 * signed permutation R [d, d] (R[j+h][j] = -1 and R[j][j+h] = 1 for j < h):
 *     out = x * C + (x @ R) * S
 * one kernel whose loads and stores are whole rows (the product's epilogue takes the
 * multiplies and the add). x @ R is exact (one product by +-1 plus zeros, accumulated
 * in float32), so the values are the split form's for finite x; a non-finite element
 * of x makes its whole rotated row NaN (inf * 0), where the split form keeps it to
 * its partner element.
 */
#include <string.h>

#include "devtype.h"
#include "pass.h"

typedef struct {
    IrGraph *g;
    const uint32_t *uses;                  /* use counts before the rewrite */
    uint32_t nvals;
    const IrOrigin *origin;                /* of the ADD being split */
    const PassOptions *opt;                /* precision and stick size: which form */
    ValId perm[2];                         /* R of the last head size perm_d[i] made */
    int64_t perm_d[2];
} Rot;

/* Live producer of value v when it is a node of op `op` (fn `fn` for pointwise ops,
 * -1: any) used only once, else NULL. */
static const IrNode *rot_single(Rot *r, ValId v, IrOp op, int64_t fn)
{
    const IrValue *val = ir_val(r->g, v);
    if (val->kind != IR_VAL_ACT || val->def == IR_NONE || val->def >= r->g->nnodes ||
        v >= r->nvals || r->uses[v] != 1)
        return NULL;
    const IrNode *p = &r->g->nodes[val->def];
    if (p->dead || p->op != op || (fn >= 0 && ir_attr_get_int(p, "fn", -1) != fn))
        return NULL;
    return p;
}

/* Whether SLICE node n takes half `half` (0: first, 1: second) of the last axis of
 * its input, whole along the other axes, with step 1. */
static bool rot_half_slice(IrGraph *g, const IrNode *n, int half)
{
    const int64_t *st, *sp, *sz;
    const IrType *t = ir_vtype(g, n->in[0]);
    int r = t->rank;
    if (n->op != IR_OP_SLICE || r < 1 || t->dims[r - 1] % 2 != 0 ||
        ir_attr_get_ints(n, "starts", &st) != r || ir_attr_get_ints(n, "steps", &sp) != r ||
        ir_attr_get_ints(n, "sizes", &sz) != r)
        return false;
    int64_t h = t->dims[r - 1] / 2;
    for (int i = 0; i < r; i++) {
        bool last = i == r - 1;
        if (sp[i] != 1 || st[i] != (last ? half * h : 0) || sz[i] != (last ? h : t->dims[i]))
            return false;
    }
    return true;
}

/* Value v (broadcast against the last axis of d elements) restricted to half `half`
 * of that axis: a SLICE when v spans the axis, v itself when it broadcasts there. */
static ValId rot_half_of(Rot *r, ValId v, int64_t d, int half)
{
    const IrType *t = ir_vtype(r->g, v);
    int rk = t->rank;
    if (rk == 0 || t->dims[rk - 1] == 1)
        return v;
    int64_t starts[IR_MAX_RANK], steps[IR_MAX_RANK], sizes[IR_MAX_RANK];
    for (int i = 0; i < rk; i++) {
        starts[i] = i == rk - 1 ? half * (d / 2) : 0;
        steps[i] = 1;
        sizes[i] = i == rk - 1 ? d / 2 : t->dims[i];
    }
    IrAttr at[3] = {ir_attr_ints_ref("starts", starts, rk), ir_attr_ints_ref("steps", steps, rk),
                    ir_attr_ints_ref("sizes", sizes, rk)};
    return ir_node(r->g, ir_add_node(r->g, IR_OP_SLICE, &v, 1, at, 3, r->origin))->out[0];
}

/* A pointwise binary node fn(a, b); returns its output. */
static ValId rot_bin(Rot *r, int64_t fn, ValId a, ValId b)
{
    ValId in[2] = {a, b};
    IrAttr at = ir_attr_int("fn", fn);
    return ir_node(r->g, ir_add_node(r->g, IR_OP_BINARY, in, 2, &at, 1, r->origin))->out[0];
}

/* Whether MUL node `mul` multiplies a single-use two-input CONCAT along the last axis
 * (*cat) by a value (*s), in either order. */
static bool rot_match_mul_cat(Rot *r, const IrNode *mul, const IrNode **cat, ValId *s)
{
    for (int i = 0; i < 2; i++) {
        const IrNode *c = rot_single(r, mul->in[i], IR_OP_CONCAT, -1);
        const IrType *ct = c ? ir_vtype(r->g, c->out[0]) : NULL;
        if (c && c->nin == 2 && ir_attr_get_int(c, "axis", -1) == ct->rank - 1) {
            *cat = c;
            *s = mul->in[1 - i];
            return true;
        }
    }
    return false;
}

/* Whether the rotary embedding of x (float32 before pass_fp16, last axis d) takes the
 * product form (header): a half row is not whole sticks at the device element size
 * (DLFloat16 when --precision makes float32 tensors 16-bit), and R is small. */
static bool rot_by_product(Rot *r, const IrType *xt, int64_t d)
{
    const SpyTarget *t = r->opt ? r->opt->target : NULL;
    if (!t || xt->dtype != IR_DT_F32 || d < 2 || d > 512 || t->stick_bytes == 0)
        return false;
    int64_t es = r->opt->precision != PASS_PREC_MODEL ? 2 : pass_dev_esize(xt->dtype);
    return es > 0 && (d / 2 * es) % t->stick_bytes != 0;
}

/* The constant signed permutation R [d, d] of the product form (header), one per head
 * size. */
static ValId rot_perm(Rot *r, int64_t d)
{
    for (int i = 0; i < 2; i++)
        if (r->perm[i] != IR_NONE && r->perm_d[i] == d)
            return r->perm[i];
    IrType t = {IR_DT_F32, 2, {d, d}};
    float *w = ir_scratch(r->g, sizeof(float) * (size_t)(d * d));
    int64_t h = d / 2;
    memset(w, 0, sizeof(float) * (size_t)(d * d));
    for (int64_t j = 0; j < h; j++) {
        w[(j + h) * d + j] = -1.0f;     /* out[j] = -x[j + h] */
        w[j * d + j + h] = 1.0f;        /* out[j + h] = x[j] */
    }
    ValId v = ir_add_const(r->g, ir_fresh_name(r->g, "rotate_half"), &t, w);
    int i = r->perm[0] == IR_NONE ? 0 : 1;
    r->perm[i] = v;
    r->perm_d[i] = d;
    return v;
}

/* The product form x * C + (x @ R) * S of a rotary embedding (header). */
static ValId rot_product(Rot *r, ValId x, ValId c, ValId s, int64_t d)
{
    ValId in[2] = {x, rot_perm(r, d)};
    ValId xr = ir_node(r->g, ir_add_node(r->g, IR_OP_MATMUL, in, 2, NULL, 0, r->origin))->out[0];
    ValId xc = rot_bin(r, IR_BIN_MUL, x, c);   /* made in this order on every compiler */
    ValId xs = rot_bin(r, IR_BIN_MUL, xr, s);
    return rot_bin(r, IR_BIN_ADD, xc, xs);
}

/* If ADD node n is a rotary embedding (header), the value of its split form. */
static ValId rot_split(Rot *r, const IrNode *n)
{
    IrGraph *g = r->g;
    if (n->op != IR_OP_BINARY || ir_attr_get_int(n, "fn", -1) != IR_BIN_ADD)
        return IR_NONE;
    for (uint32_t o = 0; o < g->noutputs; o++)
        if (g->outputs[o] == n->out[0])     /* its reshape would be a copy kernel */
            return IR_NONE;
    for (int i = 0; i < 2; i++) {
        const IrNode *m1 = rot_single(r, n->in[i], IR_OP_BINARY, IR_BIN_MUL);
        const IrNode *m2 = rot_single(r, n->in[1 - i], IR_OP_BINARY, IR_BIN_MUL);
        const IrNode *cat, *ng, *lo, *hi;
        ValId s;
        if (!m1 || !m2 || !rot_match_mul_cat(r, m2, &cat, &s) ||
            !(ng = rot_single(r, cat->in[0], IR_OP_UNARY, IR_UN_NEG)))
            continue;
        NodeId dh = ir_val(g, ng->in[0])->def, dl = ir_val(g, cat->in[1])->def;
        if (dh == IR_NONE || dl == IR_NONE || dh >= g->nnodes || dl >= g->nnodes)
            continue;
        hi = &g->nodes[dh];
        lo = &g->nodes[dl];
        if (hi->dead || lo->dead || !rot_half_slice(g, hi, 1) || !rot_half_slice(g, lo, 0) ||
            hi->in[0] != lo->in[0])
            continue;
        ValId x = lo->in[0];
        int j = m1->in[0] == x ? 0 : m1->in[1] == x ? 1 : -1;
        const IrType *ot = ir_vtype(g, n->out[0]), *xt = ir_vtype(g, x);
        if (j < 0 || xt->rank != ot->rank || memcmp(xt->dims, ot->dims, sizeof(int64_t) * ot->rank))
            continue;
        ValId c = m1->in[1 - j], vl = cat->in[1], vh = ng->in[0];
        int64_t d = ot->dims[ot->rank - 1];
        if (rot_by_product(r, xt, d))
            return rot_product(r, x, c, s, d);
        ValId c0 = rot_half_of(r, c, d, 0), c1 = rot_half_of(r, c, d, 1);
        ValId s0 = rot_half_of(r, s, d, 0), s1 = rot_half_of(r, s, d, 1);
        ValId lc = rot_bin(r, IR_BIN_MUL, vl, c0), hs = rot_bin(r, IR_BIN_MUL, vh, s0);
        ValId h0 = rot_bin(r, IR_BIN_SUB, lc, hs);
        ValId hc = rot_bin(r, IR_BIN_MUL, vh, c1), ls = rot_bin(r, IR_BIN_MUL, vl, s1);
        ValId h1 = rot_bin(r, IR_BIN_ADD, hc, ls);
        ValId in[2] = {h0, h1};
        IrAttr ax = ir_attr_int("axis", ot->rank - 1);
        return ir_node(g, ir_add_node(g, IR_OP_CONCAT, in, 2, &ax, 1, r->origin))->out[0];
    }
    return IR_NONE;
}

/* Split every rotary embedding of g by halves or take its product form (header). */
void pass_rotary(IrGraph *g, const PassOptions *opt)
{
    Rot r = {.g = g, .uses = ir_use_counts(g), .nvals = g->nvals, .opt = opt,
             .perm = {IR_NONE, IR_NONE}};
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n && !ir_failed(g); i++) {
        if (old[i].dead)
            continue;
        r.origin = &old[i].origin;
        ValId v = rot_split(&r, &old[i]);
        if (v == IR_NONE)
            ir_readd_node(g, &old[i]);
        else
            pass_readd_reshape(g, &old[i], v);
    }
}
