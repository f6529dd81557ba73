/* aten_nn.c: ATen contractions and layers: linear, mm/bmm/matmul, addmm/baddbmm,
 * convolutions (forward and transposed), embedding, softmax/log_softmax and
 * scaled_dot_product_attention, as MATMUL/CONV/GATHER/PAD and pointwise core ops.
 */
#include <math.h>
#include <string.h>

#include "aten.h"

/* torch.matmul: 1-D operands get a unit dim added for the MATMUL and removed after;
 * batch dimensions broadcast. */
static ValId torch_matmul(DecCtx *c, ValId a, ValId b)
{
    const IrType *ta = dec_ty(c, a), *tb = dec_ty(c, b);
    bool va = ta->rank == 1, vb = tb->rank == 1;
    if (va) {
        int64_t d[2] = {1, ta->dims[0]};
        a = dec_reshape(c, a, d, 2);
    }
    if (vb) {
        int64_t d[2] = {tb->dims[0], 1};
        b = dec_reshape(c, b, d, 2);
    }
    ValId r = ir_matmul(c->g, a, b, c->o);
    if (!va && !vb)
        return r;
    const IrType *tr = dec_ty(c, r);
    int64_t dims[IR_MAX_RANK];
    int n = 0;
    for (int i = 0; i < tr->rank; i++) {
        if ((va && i == tr->rank - 2) || (vb && i == tr->rank - 1))
            continue;
        dims[n++] = tr->dims[i];
    }
    return dec_reshape(c, r, dims, n);
}

/* linear(input, weight, bias): input @ weight^T + bias. */
bool aten_linear(DecCtx *c)
{
    ValId x, w, b = aten_in(c, "bias");
    if (!aten_need(c, "input", &x) || !aten_need(c, "weight", &w))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    x = dec_cast(c, x, t);
    w = dec_cast(c, w, t);
    if (dec_ty(c, w)->rank == 2)
        w = dec_swap_last(c, w);
    ValId r = torch_matmul(c, x, w);
    if (b != IR_NONE)
        r = dec_bin(c, IR_BIN_ADD, r, dec_cast(c, b, t));
    c->out[0] = r;
    return true;
}

/* mm(self, mat2), bmm(self, mat2). */
bool aten_mm(DecCtx *c)
{
    ValId a, b;
    if (!aten_need(c, "self", &a) || !aten_need(c, "mat2", &b))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    c->out[0] = ir_matmul(c->g, dec_cast(c, a, t), dec_cast(c, b, t), c->o);
    return true;
}

/* matmul(self, other) with torch's 1-D rules. */
bool aten_matmul(DecCtx *c)
{
    ValId a, b;
    if (!aten_need(c, "self", &a) || !aten_need(c, "other", &b))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    c->out[0] = torch_matmul(c, dec_cast(c, a, t), dec_cast(c, b, t));
    return true;
}

/* addmm(self, mat1, mat2, beta, alpha) = beta*self + alpha*(mat1 @ mat2); baddbmm
 * the same with batch1/batch2. */
bool aten_addmm(DecCtx *c)
{
    bool batched = aten_in(c, "batch1") != IR_NONE;
    ValId s, a, b;
    if (!aten_need(c, "self", &s) || !aten_need(c, batched ? "batch1" : "mat1", &a) ||
        !aten_need(c, batched ? "batch2" : "mat2", &b))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    double beta = 1, alpha = 1;
    aten_num(c, "beta", &beta);
    aten_num(c, "alpha", &alpha);
    ValId p = ir_matmul(c->g, dec_cast(c, a, t), dec_cast(c, b, t), c->o);
    if (alpha != 1)
        p = dec_bin_s(c, IR_BIN_MUL, p, alpha);
    if (beta == 0) {
        c->out[0] = p;
        return true;
    }
    s = dec_cast(c, s, t);
    if (beta != 1)
        s = dec_bin_s(c, IR_BIN_MUL, s, beta);
    c->out[0] = dec_bin(c, IR_BIN_ADD, p, s);
    return true;
}

/* Convolution geometry read from the arguments. */
typedef struct {
    int nsp;                               /* spatial dims */
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK];
    int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], opad[IR_MAX_RANK];
    int64_t groups;
    bool transposed;
} ConvGeo;

/* Read stride/padding/dilation/groups/output_padding (padding may be "same"/"valid"). */
static bool conv_geometry(DecCtx *c, const IrType *tw, ConvGeo *g)
{
    static const int64_t zero[IR_MAX_RANK] = {0}, one[IR_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    g->nsp = tw->rank - 2;
    g->transposed = strncmp(nm, "conv_transpose", 14) == 0 || dec_ai(c, "transposed", 0);
    g->groups = dec_ai(c, "groups", 1);
    for (int i = 0; i < g->nsp; i++)
        g->k[i] = tw->dims[i + 2];
    if (g->groups < 1 || !aten_sp_ints(c, "stride", g->nsp, one, g->s) ||
        !aten_sp_ints(c, "dilation", g->nsp, one, g->d) ||
        !aten_sp_ints(c, "output_padding", g->nsp, zero, g->opad)) {
        if (!ir_failed(c->g))
            dec_err(c, "invalid groups, stride, dilation or output_padding");
        return false;
    }
    const char *ps = dec_as(c, "padding", NULL);
    for (int i = 0; i < g->nsp; i++) {
        if (g->s[i] < 1 || g->d[i] < 1) {
            dec_err(c, "stride and dilation must be >= 1");
            return false;
        }
        int64_t total = ps && strcmp(ps, "same") == 0 ? g->d[i] * (g->k[i] - 1) : 0;
        g->lo[i] = total / 2;
        g->hi[i] = total - g->lo[i];
    }
    if (ps && strcmp(ps, "same") != 0 && strcmp(ps, "valid") != 0) {
        dec_err(c, "unknown padding mode '%s'", ps);
        return false;
    }
    if (!ps) {
        int64_t p[IR_MAX_RANK];
        if (!aten_sp_ints(c, "padding", g->nsp, zero, p))
            return false;
        for (int i = 0; i < g->nsp; i++)
            g->lo[i] = g->hi[i] = p[i];
    }
    return true;
}

/* Weight of a transposed convolution as a forward one: [Cin, Cout/g, k...] ->
 * [Cout, Cin/g, k...] with the spatial taps reversed. Folds for constant weights. */
static ValId forward_weight(DecCtx *c, ValId w, int64_t g)
{
    const IrType *t = dec_ty(c, w);
    int r = t->rank, nsp = r - 2;
    int64_t cin = t->dims[0], coutg = t->dims[1], dims[IR_MAX_RANK + 1], perm[IR_MAX_RANK + 1];
    dims[0] = g, dims[1] = cin / g, dims[2] = coutg;
    for (int i = 0; i < nsp; i++)
        dims[3 + i] = t->dims[2 + i];
    if (r + 1 > IR_MAX_RANK) {
        dec_err(c, "transposed convolution of rank %d is not supported", r);
        return IR_NONE;
    }
    ValId v = dec_reshape(c, w, dims, r + 1);
    perm[0] = 0, perm[1] = 2, perm[2] = 1;
    for (int i = 0; i < nsp; i++)
        perm[3 + i] = 3 + i;
    v = dec_transpose(c, v, perm);
    dims[0] = g * coutg, dims[1] = cin / g;
    for (int i = 0; i < nsp; i++)
        dims[2 + i] = t->dims[2 + i];
    v = dec_reshape(c, v, dims, r);
    int64_t st[IR_MAX_RANK], sp[IR_MAX_RANK], sz[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        bool flip = i >= 2;
        st[i] = flip ? dims[i] - 1 : 0;
        sp[i] = flip ? -1 : 1;
        sz[i] = dims[i];
    }
    return dec_slice(c, v, st, sp, sz);
}

/* The CONV node (with its input padding and bias) for geometry g. */
static ValId conv_core(DecCtx *c, ValId x, ValId w, ValId b, const ConvGeo *g)
{
    int r = dec_ty(c, x)->rank;
    int64_t pads[2 * IR_MAX_RANK] = {0}, inter[IR_MAX_RANK] = {0}, ones[IR_MAX_RANK];
    for (int i = 0; i < g->nsp; i++) {
        ones[i] = 1;
        if (g->transposed) {
            int64_t edge = g->d[i] * (g->k[i] - 1);
            inter[2 + i] = g->s[i] - 1;
            pads[2 + i] = edge - g->lo[i];
            pads[r + 2 + i] = edge - g->hi[i] + g->opad[i];
        } else {
            pads[2 + i] = g->lo[i];
            pads[r + 2 + i] = g->hi[i];
        }
    }
    ValId y;
    if (g->transposed && dec_convt_blocks_ok(c, x, g->nsp, g->groups, g->k, g->s, g->d, g->lo,
                                             g->hi, g->opad)) {
        y = dec_convt_blocks(c, x, w, g->nsp);
        goto bias;
    }
    if (!g->transposed && dec_conv3d_ok(c, x, g->groups) &&
        (y = dec_conv3d_2d(c, x, w, g->s, g->d, g->lo, g->hi, 0.0)) != IR_NONE)
        goto bias;
    if (g->transposed) {
        w = forward_weight(c, w, g->groups);
        if (w == IR_NONE)
            return IR_NONE;
    }
    x = dec_pad(c, x, pads, inter, 0.0);
    IrAttr at[3] = {ir_attr_ints_ref("strides", g->transposed ? ones : g->s, g->nsp),
                    ir_attr_ints_ref("dilations", g->d, g->nsp),
                    ir_attr_int("group", g->groups)};
    ValId in[2] = {x, w};
    y = dec_op(c, IR_OP_CONV, in, 2, at, 3);
bias:
    if (b == IR_NONE)
        return y;
    int64_t bd[IR_MAX_RANK];
    bd[0] = dec_numel(dec_ty(c, b));
    for (int i = 1; i < r - 1; i++)
        bd[i] = 1;
    return dec_bin(c, IR_BIN_ADD, y, dec_reshape(c, b, bd, r - 1));
}

/* conv1d/2d/3d, convolution, _convolution, conv_transpose1d/2d/3d. An unbatched
 * input (rank of the weight minus one) gets a batch dim for the CONV. */
bool aten_conv(DecCtx *c)
{
    ValId x, w, b = aten_in(c, "bias");
    if (!aten_need(c, "input", &x) || !aten_need(c, "weight", &w))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    x = dec_cast(c, x, t);
    w = dec_cast(c, w, t);
    if (b != IR_NONE)
        b = dec_cast(c, b, t);
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    ConvGeo g;
    if (tw->rank < 3 || (tx->rank != tw->rank && tx->rank != tw->rank - 1)) {
        dec_err(c, "convolution input of rank %d does not fit a weight of rank %d", tx->rank,
                tw->rank);
        return false;
    }
    if (!conv_geometry(c, tw, &g))
        return false;
    bool unbatched = tx->rank == tw->rank - 1;
    if (unbatched) {
        int64_t dims[IR_MAX_RANK] = {1};
        for (int i = 0; i < tx->rank; i++)
            dims[i + 1] = tx->dims[i];
        x = dec_reshape(c, x, dims, tx->rank + 1);
    }
    ValId y = conv_core(c, x, w, b, &g);
    if (y == IR_NONE)
        return false;
    const IrType *o = aten_oty(c, 0);
    c->out[0] = unbatched ? dec_reshape(c, y, o->dims, o->rank) : y;
    return true;
}

/* embedding(weight, indices): rows of weight. */
bool aten_embedding(DecCtx *c)
{
    ValId w, idx;
    if (!aten_need(c, "weight", &w) || !aten_need(c, "indices", &idx))
        return false;
    IrDType it = dec_ty(c, idx)->dtype;
    if (it != IR_DT_I32 && it != IR_DT_I64)
        idx = dec_cast(c, idx, IR_DT_I64);
    c->out[0] = dec_gather(c, w, idx, 0);
    return true;
}

/* softmax along axis ax (log: log_softmax), max-subtracted. */
static ValId softmax(DecCtx *c, ValId x, int ax, bool log)
{
    int64_t a = ax;
    ValId m = dec_reduce(c, IR_RED_MAX, x, &a, 1, true);
    ValId d = dec_bin(c, IR_BIN_SUB, x, m);
    ValId e = dec_un(c, IR_UN_EXP, d);
    ValId s = dec_reduce(c, IR_RED_SUM, e, &a, 1, true);
    if (log)
        return dec_bin(c, IR_BIN_SUB, d, dec_un(c, IR_UN_LOG, s));
    return dec_bin(c, IR_BIN_DIV, e, s);
}

/* softmax/_softmax/log_softmax/_log_softmax(self, dim, dtype | half_to_float). */
bool aten_softmax(DecCtx *c)
{
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    x = aten_like_out(c, x, 0);
    int r = dec_ty(c, x)->rank, ax;
    if (r == 0) { /* softmax of a scalar is 1 (log: 0) */
        bool lg = strstr(nm, "log") != NULL;
        c->out[0] = dec_scalar(c->g, dec_ty(c, x)->dtype, lg ? 0 : 1);
        return true;
    }
    if (!dec_axis(c, dec_ai(c, "dim", -1), r, &ax))
        return false;
    c->out[0] = softmax(c, x, ax, strstr(nm, "log") != NULL);
    return true;
}

/* k/v heads repeated to match the query heads (enable_gqa). */
static ValId repeat_heads(DecCtx *c, ValId kv, int64_t hq)
{
    const IrType *t = dec_ty(c, kv);
    int r = t->rank;
    int64_t hk = t->dims[r - 3];
    if (r < 3 || hk == hq || hk == 0 || hq % hk)
        return kv;
    int64_t d[IR_MAX_RANK + 1];
    for (int i = 0; i < r - 2; i++)
        d[i] = t->dims[i];
    d[r - 2] = 1, d[r - 1] = t->dims[r - 2], d[r] = t->dims[r - 1];
    ValId v = dec_reshape(c, kv, d, r + 1);
    d[r - 2] = hq / hk;
    v = dec_expand(c, v, d, r + 1);
    int64_t o[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        o[i] = t->dims[i];
    o[r - 3] = hq;
    return dec_reshape(c, v, o, r);
}

/* The additive mask of sdpa: the attn_mask (bool: -inf where false) and/or the causal
 * lower triangle; IR_NONE when there is none. */
static ValId sdpa_mask(DecCtx *c, ValId scores)
{
    const IrType *ts = dec_ty(c, scores);
    IrDType t = ts->dtype;
    int64_t L = ts->dims[ts->rank - 2], S = ts->dims[ts->rank - 1];
    ValId m = aten_in(c, "attn_mask"), add = IR_NONE;
    if (m != IR_NONE && dec_ty(c, m)->dtype == IR_DT_BOOL)
        add = dec_select(c, m, dec_scalar(c->g, t, 0), dec_scalar(c->g, t, -INFINITY));
    else if (m != IR_NONE)
        add = dec_cast(c, m, t);
    if (dec_ai(c, "is_causal", 0)) {
        if (L * S > ATEN_MAX_CONST) {
            dec_err(c, "causal mask of %lld x %lld is too large", (long long)L, (long long)S);
            return IR_NONE;
        }
        double *v = ir_scratch(c->g, (size_t)(L * S + 1) * sizeof *v);
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++)
                v[i * S + j] = j <= i ? 0 : -INFINITY;
        int64_t d[2] = {L, S};
        ValId cm = dec_const(c->g, t, d, 2, v);
        add = add == IR_NONE ? cm : dec_bin(c, IR_BIN_ADD, add, cm);
    }
    return add;
}

/* scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
 * scale, enable_gqa) = softmax(q k^T * scale + mask) v. */
bool aten_sdpa(DecCtx *c)
{
    ValId q, k, v;
    if (!aten_need(c, "query", &q) || !aten_need(c, "key", &k) || !aten_need(c, "value", &v))
        return false;
    double p = 0, scale;
    aten_num(c, "dropout_p", &p);
    if (p != 0) {
        dec_err(c, "attention dropout (dropout_p=%g) is not supported at inference", p);
        return false;
    }
    const IrType *tq = dec_ty(c, q);
    if (tq->rank < 2 || dec_ty(c, k)->rank != tq->rank) {
        dec_err(c, "query and key must have the same rank >= 2");
        return false;
    }
    if (!aten_num(c, "scale", &scale))
        scale = 1.0 / sqrt((double)tq->dims[tq->rank - 1]);
    if (tq->rank >= 3 && dec_ai(c, "enable_gqa", 0)) {
        k = repeat_heads(c, k, tq->dims[tq->rank - 3]);
        v = repeat_heads(c, v, tq->dims[tq->rank - 3]);
    }
    ValId s = dec_bin_s(c, IR_BIN_MUL, ir_matmul(c->g, q, dec_swap_last(c, k), c->o), scale);
    ValId mask = sdpa_mask(c, s);
    if (ir_failed(c->g))
        return false;
    if (mask != IR_NONE)
        s = dec_bin(c, IR_BIN_ADD, s, mask);
    c->out[0] = ir_matmul(c->g, softmax(c, s, dec_ty(c, s)->rank - 1, false), v, c->o);
    return true;
}
