/* onnx_attention.c: the ONNX Attention operator (opset 23+) as core ops.
 *
 * Q, K, V (3-D inputs are split into heads first); optional past key/value
 * concatenated in front of K/V (the present_* outputs); K/V heads repeated for
 * grouped-query attention; scores = (Q*sqrt(scale)) (K*sqrt(scale))^T, softcap,
 * plus an additive bias built from the mask, the causal frontier (bottom-right
 * aligned by the past length or by nonpad_kv_seqlen), the sliding window and the
 * padding of nonpad_kv_seqlen; a softmax that is safe on fully masked rows (they
 * give zeros); then the product with V. Constant parts of the bias fold at compile
 * time.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

/* [B, S, H*d] -> [B, H, S, d] */
static ValId split_heads(DecCtx *c, ValId x, int64_t heads)
{
    const IrType *t = dec_ty(c, x);
    int64_t d4[4] = {t->dims[0], t->dims[1], heads, t->dims[2] / heads}, p[4] = {0, 2, 1, 3};
    return dec_transpose(c, dec_reshape(c, x, d4, 4), p);
}

/* K or V heads [B, Hk, S, d] repeated to [B, Hk*rep, S, d] (each head rep times). */
static ValId repeat_heads(DecCtx *c, ValId x, int64_t rep)
{
    if (rep == 1)
        return x;
    const IrType *t = dec_ty(c, x);
    int64_t b = t->dims[0], h = t->dims[1], s = t->dims[2], d = t->dims[3];
    int64_t d5[5] = {b, h, 1, s, d}, e5[5] = {b, h, rep, s, d}, o4[4] = {b, h * rep, s, d};
    ValId v = dec_expand(c, dec_reshape(c, x, d5, 5), e5, 5);
    return dec_reshape(c, v, o4, 4);
}

/* 0 where allowed, -inf elsewhere, in dtype dt. */
static ValId to_bias(DecCtx *c, ValId allowed, IrDType dt)
{
    return dec_select(c, allowed, dec_scalar(c->g, dt, 0), dec_scalar(c->g, dt, -INFINITY));
}

/* Bias sum a + b where either may be IR_NONE (zero). */
static ValId add_bias(DecCtx *c, ValId a, ValId b)
{
    return a == IR_NONE ? b : b == IR_NONE ? a : dec_bin(c, IR_BIN_ADD, a, b);
}

/* diff[b, i, j] = i + offset - j: offset is a constant (off_v == IR_NONE) or the
 * per-batch values nonpad_kv_seqlen - q_len (shape [B, 1, 1, 1]). */
static ValId diff_grid(DecCtx *c, int64_t q, int64_t kv, int64_t off, ValId off_v)
{
    int64_t *iv = ir_scratch(c->g, sizeof(int64_t) * (size_t)(q + 1));
    int64_t *jv = ir_scratch(c->g, sizeof(int64_t) * (size_t)(kv + 1));
    for (int64_t i = 0; i < q; i++)
        iv[i] = i + off;
    for (int64_t j = 0; j < kv; j++)
        jv[j] = j;
    int64_t di[4] = {1, 1, q, 1}, dj[4] = {1, 1, 1, kv};
    ValId i4 = dec_const_i64(c->g, di, 4, iv), j4 = dec_const_i64(c->g, dj, 4, jv);
    if (off_v != IR_NONE)
        i4 = dec_bin(c, IR_BIN_ADD, i4, off_v);
    return dec_bin(c, IR_BIN_SUB, i4, j4);
}

/* The additive attention bias (IR_NONE when there is none). */
static ValId attn_bias(DecCtx *c, ValId mask, int64_t q, int64_t kv, int64_t past, ValId nonpad,
                       IrDType dt)
{
    ValId bias = IR_NONE, off_v = IR_NONE;
    if (mask != IR_NONE) {
        const IrType *tm = dec_ty(c, mask);
        int64_t pw = kv - tm->dims[tm->rank - 1], pads[2 * IR_MAX_RANK] = {0};
        bool isbool = tm->dtype == IR_DT_BOOL;
        pads[2 * tm->rank - 1] = pw;
        if (pw > 0)
            mask = dec_pad(c, mask, pads, NULL, isbool ? 0.0 : -INFINITY);
        bias = isbool ? to_bias(c, mask, dt) : dec_cast(c, mask, dt);
    }
    if (nonpad != IR_NONE && past == 0) {
        int64_t b4[4] = {dec_numel(dec_ty(c, nonpad)), 1, 1, 1};
        off_v = dec_reshape(c, dec_bin_s(c, IR_BIN_SUB, dec_cast(c, nonpad, IR_DT_I64), (double)q), b4, 4);
    }
    int64_t off = nonpad != IR_NONE && past == 0 ? 0 : past;
    int64_t lw = dec_ai(c, "left_window_size", -1), rw = dec_ai(c, "right_window_size", -1);
    if (dec_ai(c, "is_causal", 0)) /* key j allowed iff j <= i + offset */
        bias = add_bias(c, bias, to_bias(c, dec_bin_s(c, IR_BIN_GE, diff_grid(c, q, kv, off, off_v), 0), dt));
    if (lw >= 0 || rw >= 0) {
        ValId diff = diff_grid(c, q, kv, off, off_v), ok = IR_NONE;
        if (lw >= 0)
            ok = dec_bin_s(c, IR_BIN_LE, diff, (double)lw);
        if (rw >= 0) {
            ValId r = dec_bin_s(c, IR_BIN_GE, diff, (double)-rw);
            ok = ok == IR_NONE ? r : dec_bin(c, IR_BIN_AND, ok, r);
        }
        bias = add_bias(c, bias, to_bias(c, ok, dt));
    }
    if (nonpad != IR_NONE) { /* keys past nonpad_kv_seqlen[b] are padding */
        int64_t *jv = ir_scratch(c->g, sizeof(int64_t) * (size_t)(kv + 1));
        for (int64_t j = 0; j < kv; j++)
            jv[j] = j;
        int64_t dj[4] = {1, 1, 1, kv}, b4[4] = {dec_numel(dec_ty(c, nonpad)), 1, 1, 1};
        ValId n4 = dec_reshape(c, dec_cast(c, nonpad, IR_DT_I64), b4, 4);
        ValId ok = dec_bin(c, IR_BIN_LT, dec_const_i64(c->g, dj, 4, jv), n4);
        bias = add_bias(c, bias, to_bias(c, ok, dt));
    }
    return bias;
}

/* Softmax over the last axis that gives zeros (not NaN) on rows of -inf. */
static ValId safe_softmax(DecCtx *c, ValId x)
{
    int64_t last = dec_ty(c, x)->rank - 1;
    IrDType dt = dec_ty(c, x)->dtype;
    ValId m = dec_reduce(c, IR_RED_MAX, x, &last, 1, true);
    ValId dead = dec_bin_s(c, IR_BIN_EQ, m, -INFINITY);
    m = dec_select(c, dead, dec_scalar(c->g, dt, 0), m);
    ValId e = dec_un(c, IR_UN_EXP, dec_bin(c, IR_BIN_SUB, x, m));
    ValId s = dec_reduce(c, IR_RED_SUM, e, &last, 1, true);
    s = dec_select(c, dec_bin_s(c, IR_BIN_EQ, s, 0), dec_scalar(c->g, dt, 1), s);
    return dec_bin(c, IR_BIN_DIV, e, s);
}

/* Checks of ranks and head counts; fills the head counts. */
static bool attn_shapes(DecCtx *c, ValId q, ValId k, ValId v, int64_t *hq, int64_t *hk)
{
    const IrType *tq = dec_ty(c, q), *tk = dec_ty(c, k), *tv = dec_ty(c, v);
    int r = tq->rank;
    if ((r != 3 && r != 4) || tk->rank != r || tv->rank != r) {
        dec_err(c, "Q, K and V must all be 3-D or all 4-D");
        return false;
    }
    if (r == 3) {
        *hq = dec_ai(c, "q_num_heads", 0);
        *hk = dec_ai(c, "kv_num_heads", 0);
        if (*hq < 1 || *hk < 1 || tq->dims[2] % *hq || tk->dims[2] % *hk || tv->dims[2] % *hk) {
            dec_err(c, "3-D inputs need q_num_heads and kv_num_heads dividing the hidden sizes");
            return false;
        }
    } else {
        *hq = tq->dims[1];
        *hk = tk->dims[1];
        if (*hq < 1 || *hk < 1 || tv->dims[1] != *hk) {
            dec_err(c, "4-D Q, K and V need at least one head, and as many in V as in K "
                       "(Q %lld, K %lld, V %lld)", (long long)*hq, (long long)*hk,
                    (long long)tv->dims[1]);
            return false;
        }
    }
    if (*hq % *hk != 0) {
        dec_err(c, "q_num_heads %lld is not a multiple of kv_num_heads %lld", (long long)*hq, (long long)*hk);
        return false;
    }
    return true;
}

bool dec_attention(DecCtx *c)
{
    ValId q = dec_in(c, 0), k = dec_in(c, 1), v = dec_in(c, 2), mask = dec_in(c, 3);
    ValId pk = dec_in(c, 4), pv = dec_in(c, 5), nonpad = dec_in(c, 6);
    int64_t hq, hk;
    if (q == IR_NONE || k == IR_NONE || v == IR_NONE) {
        dec_err(c, "missing Q, K or V");
        return false;
    }
    if ((pk == IR_NONE) != (pv == IR_NONE) || (nonpad != IR_NONE && pk != IR_NONE)) {
        dec_err(c, "past_key and past_value go together, and not with nonpad_kv_seqlen");
        return false;
    }
    if (!attn_shapes(c, q, k, v, &hq, &hk))
        return false;
    bool three = dec_ty(c, q)->rank == 3;
    IrDType dt = dec_ty(c, q)->dtype;
    if (three) {
        q = split_heads(c, q, hq);
        k = split_heads(c, k, hk);
        v = split_heads(c, v, hk);
    }
    double scale = dec_af(c, "scale", 1.0 / sqrt((double)dec_ty(c, q)->dims[3]));
    int64_t past = pk != IR_NONE ? dec_ty(c, pk)->dims[2] : 0;
    if (pk != IR_NONE) {
        ValId kk[2] = {pk, k}, vv[2] = {pv, v};
        k = dec_concat(c, kk, 2, 2);
        v = dec_concat(c, vv, 2, 2);
    }
    c->out[1] = k;
    c->out[2] = v;
    int64_t ql = dec_ty(c, q)->dims[2], kvl = dec_ty(c, k)->dims[2];
    ValId bias = attn_bias(c, mask, ql, kvl, past, nonpad, dt);
    ValId kr = repeat_heads(c, k, hq / hk), vr = repeat_heads(c, v, hq / hk);
    double ss = sqrt(scale);
    static const int64_t pt[4] = {0, 1, 3, 2};
    ValId s = ir_matmul(c->g, dec_bin_s(c, IR_BIN_MUL, q, ss),
                        dec_transpose(c, dec_bin_s(c, IR_BIN_MUL, kr, ss), pt), c->o);
    double cap = dec_af(c, "softcap", 0.0);
    if (cap > 0)
        s = dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_TANH, dec_bin_s(c, IR_BIN_MUL, s, 1.0 / cap)), cap);
    int64_t mode = dec_ai(c, "qk_matmul_output_mode", 0);
    ValId sb = add_bias(c, s, bias), qk_out = mode == 2 ? sb : s;
    int64_t sp = dec_ai(c, "softmax_precision", 0);
    if (sp != 0 && sp != IR_DT_F32 && sp != IR_DT_F64 && sp != IR_DT_F16 && sp != IR_DT_BF16) {
        dec_err(c, "softmax_precision %lld is not a float type", (long long)sp);
        return false;
    }
    ValId p = safe_softmax(c, sp ? dec_cast(c, sb, (IrDType)sp) : sb);
    if (bias != IR_NONE) { /* rows whose keys are all masked give zeros */
        int64_t last = dec_ty(c, bias)->rank - 1;
        ValId bm = dec_reduce(c, IR_RED_MAX, bias, &last, 1, true);
        ValId dead = dec_bin_s(c, IR_BIN_EQ, bm, -INFINITY);
        p = dec_select(c, dead, dec_scalar(c->g, dec_ty(c, p)->dtype, 0), p);
    }
    if (mode == 3)
        qk_out = p;
    p = dec_cast(c, p, dt);
    c->out[3] = dec_cast(c, qk_out, dt);
    ValId y = ir_matmul(c->g, p, vr, c->o);
    if (three) {
        const IrType *ty = dec_ty(c, y);
        int64_t p4[4] = {0, 2, 1, 3}, o3[3] = {ty->dims[0], ty->dims[2], ty->dims[1] * ty->dims[3]};
        y = dec_reshape(c, dec_transpose(c, y, p4), o3, 3);
    }
    c->out[0] = y;
    return true;
}

/* x [B, S, H, D] sliced on the last axis: `size` elements from start, step. */
static ValId last_slice(DecCtx *c, ValId x, int64_t start, int64_t step, int64_t size)
{
    return dec_slice_axis(c, x, dec_ty(c, x)->rank - 1, start, step, size);
}

/* RotaryEmbedding: rotate the first rotary_embedding_dim channels of each head by
 * the cached cos/sin (gathered by position_ids when given), halves or interleaved
 * pairs; the remaining channels pass through. */
bool dec_rotary(DecCtx *c)
{
    ValId x = dec_in(c, 0), cs = dec_in(c, 1), sn = dec_in(c, 2), pos = dec_in(c, 3);
    if (x == IR_NONE || cs == IR_NONE || sn == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    IrType orig = *dec_ty(c, x);
    static const int64_t p4[4] = {0, 2, 1, 3};
    if (orig.rank == 4) {
        x = dec_transpose(c, x, p4);
    } else if (orig.rank == 3) {
        int64_t nh = dec_ai(c, "num_heads", 0);
        if (nh < 1 || orig.dims[2] % nh) {
            dec_err(c, "3-D input needs num_heads dividing the hidden size");
            return false;
        }
        int64_t d4[4] = {orig.dims[0], orig.dims[1], nh, orig.dims[2] / nh};
        x = dec_reshape(c, x, d4, 4);
    } else {
        dec_err(c, "input must be 3-D or 4-D");
        return false;
    }
    IrType t = *dec_ty(c, x);
    int64_t d = t.dims[3], rd = dec_ai(c, "rotary_embedding_dim", 0);
    rd = rd ? rd : d;
    int64_t half = rd / 2;
    if (rd > d || rd % 2) {
        dec_err(c, "rotary_embedding_dim %lld must be even and <= the head size %lld", (long long)rd,
                (long long)d);
        return false;
    }
    if (pos != IR_NONE) {
        cs = dec_gather(c, cs, pos, 0);
        sn = dec_gather(c, sn, pos, 0);
    }
    const IrType *tc = dec_ty(c, cs);
    if (tc->rank != 3 || tc->dims[2] != half) {
        dec_err(c, "cos/sin caches must be [batch, seq, rotary_embedding_dim/2]");
        return false;
    }
    int64_t c4[4] = {tc->dims[0], tc->dims[1], 1, half};
    cs = dec_reshape(c, cs, c4, 4);
    sn = dec_reshape(c, sn, c4, 4);
    bool inter = dec_ai(c, "interleaved", 0) != 0;
    ValId xr = last_slice(c, x, 0, 1, rd);
    ValId x1 = inter ? last_slice(c, xr, 0, 2, half) : last_slice(c, xr, 0, 1, half);
    ValId x2 = inter ? last_slice(c, xr, 1, 2, half) : last_slice(c, xr, half, 1, half);
    ValId re = dec_bin(c, IR_BIN_SUB, dec_bin(c, IR_BIN_MUL, cs, x1), dec_bin(c, IR_BIN_MUL, sn, x2));
    ValId im = dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, sn, x1), dec_bin(c, IR_BIN_MUL, cs, x2));
    ValId parts[2] = {re, im}, rot;
    if (inter) {
        const IrType *tr = dec_ty(c, re);
        int64_t d5[5] = {tr->dims[0], tr->dims[1], tr->dims[2], half, 1};
        int64_t r4[4] = {tr->dims[0], tr->dims[1], tr->dims[2], rd};
        parts[0] = dec_reshape(c, re, d5, 5);
        parts[1] = dec_reshape(c, im, d5, 5);
        rot = dec_reshape(c, dec_concat(c, parts, 2, 4), r4, 4);
    } else {
        rot = dec_concat(c, parts, 2, 3);
    }
    if (rd < d) {
        ValId all[2] = {rot, last_slice(c, x, rd, 1, d - rd)};
        rot = dec_concat(c, all, 2, 3);
    }
    c->out[0] = orig.rank == 4 ? dec_transpose(c, rot, p4) : dec_reshape(c, rot, orig.dims, 3);
    return true;
}
