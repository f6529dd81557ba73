/* onnx_attn_ms.c: the BERT-style fused operators of onnxruntime's transformer optimizer
 * (domain com.microsoft) as core ops; published "optimized" BERT, RoBERTa and DistilBERT
 * models are made of these, SkipLayerNormalization and a fused GELU (onnx_msft.c):
 *   EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
 *       segment_embedding?, gamma, beta, mask?, position_ids?) {epsilon}
 *       LayerNormalization of word + position (+ segment) embeddings; outputs that,
 *       mask_index (the mask's row sums as int32, zeros without a mask, as onnxruntime
 *       gives) and the embeddings' sum
 *   Attention(input, weights, bias?, mask_index?, past?, attention_bias?)
 *       {num_heads, qkv_hidden_sizes, unidirectional, scale, mask_filter_value}
 *       Q, K, V = input @ weights + bias split by qkv_hidden_sizes (three equal parts
 *       by default), per head softmax(scale Q K^T + bias) V with scale 1 / sqrt(head
 *       size) by default; the bias is mask_filter_value (-10000) where mask_index masks a
 *       key: a 1-D mask of B key lengths (keys from there on masked) or 2B (ends, then
 *       starts), a 2-D [B, T] or 3-D [B, S, T] mask of 0s (masked) and 1s, and with
 *       unidirectional the keys after each query; plus attention_bias.
 *   MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?)
 *       the same attention of projections already made (dec_ms_mha)
 * A past key/value state (KV cache), 4-D masks and rotary embedding inside Attention are
 * refused, naming them.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

bool dec_embed_layernorm(DecCtx *c)
{
    static const int need[] = {0, 2, 3, 5, 6};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!dec_need_in(c, need[i]))
            return false;
    ValId ids = dec_in(c, 0), pe = dec_in(c, 3), pos = dec_in(c, 8);
    const IrType *ti = dec_ty(c, ids);
    if (ti->rank != 2 || dec_ty(c, dec_in(c, 2))->rank != 2 || dec_ty(c, pe)->rank != 2 ||
        dec_ty(c, pe)->dims[0] < ti->dims[1]) {
        dec_err(c, "needs input_ids [B, S] and embedding matrices with at least S positions");
        return false;
    }
    ValId sum = dec_gather(c, dec_in(c, 2), ids, 0);
    if (pos != IR_NONE)
        pe = dec_gather(c, pe, pos, 0);
    else
        pe = dec_slice_axis(c, pe, 0, 0, 1, ti->dims[1]);
    sum = dec_bin(c, IR_BIN_ADD, sum, pe);
    if (dec_in(c, 1) != IR_NONE && dec_in(c, 4) != IR_NONE)
        sum = dec_bin(c, IR_BIN_ADD, sum, dec_gather(c, dec_in(c, 4), dec_in(c, 1), 0));
    ValId in[3] = {sum, dec_in(c, 5), dec_in(c, 6)}, out[DEC_MAX_OUT];
    if (!dec_sub_run(c, dec_layernorm, "LayerNormalization", in, 3, true, out))
        return false;
    c->out[0] = out[0];
    int64_t ax = 1;
    if (dec_in(c, 7) != IR_NONE)
        c->out[1] = dec_reduce(c, IR_RED_SUM, dec_cast(c, dec_in(c, 7), IR_DT_I32), &ax, 1, false);
    else
        c->out[1] = dec_expand(c, dec_scalar(c->g, IR_DT_I32, 0), ti->dims, 1);
    c->out[2] = sum;
    return true;
}

/* [B, S, n*d] -> [B, n, S, d], or with keys [B, n, d, S] (transposed for Q K^T). */
static ValId heads(DecCtx *c, ValId x, int64_t n, bool keys)
{
    const IrType *t = dec_ty(c, x);
    int64_t d4[4] = {t->dims[0], t->dims[1], n, t->dims[2] / n};
    int64_t pq[4] = {0, 2, 1, 3}, pk[4] = {0, 2, 3, 1};
    return dec_transpose(c, dec_reshape(c, x, d4, 4), keys ? pk : pq);
}

/* Positions 0 .. n-1 along axis `axis` of a rank-4 int32 constant. */
static ValId positions(DecCtx *c, int64_t n, int axis)
{
    int64_t *v = ir_scratch(c->g, (size_t)(n + 1) * sizeof *v), d[4] = {1, 1, 1, 1};
    for (int64_t i = 0; i < n; i++)
        v[i] = i;
    d[axis] = n;
    return dec_cast(c, dec_const_i64(c->g, d, 4, v), IR_DT_I32);
}

/* The additive bias [B or 1, 1, S or 1, T] of mask_index m: 0 where a key is kept,
 * filter where masked; IR_NONE (reported) for an unsupported mask. */
static ValId mask_bias(DecCtx *c, ValId m, int64_t b, int64_t s, int64_t t, double filter)
{
    const IrType *tm = dec_ty(c, m);
    ValId keep, j = positions(c, t, 3);
    if (tm->rank == 1 && (tm->dims[0] == b || tm->dims[0] == 2 * b)) {
        int64_t d4[4] = {b, 1, 1, 1};
        ValId mi = dec_cast(c, m, IR_DT_I32);
        ValId end = dec_reshape(c, dec_slice_axis(c, mi, 0, 0, 1, b), d4, 4);
        keep = dec_bin(c, IR_BIN_LT, j, end);
        if (tm->dims[0] == 2 * b) {
            ValId start = dec_reshape(c, dec_slice_axis(c, mi, 0, b, 1, b), d4, 4);
            keep = dec_bin(c, IR_BIN_AND, keep, dec_bin(c, IR_BIN_GE, j, start));
        }
    } else if ((tm->rank == 2 && tm->dims[0] == b && tm->dims[1] == t) ||
               (tm->rank == 3 && tm->dims[0] == b && tm->dims[1] == s && tm->dims[2] == t)) {
        int64_t d4[4] = {b, 1, tm->rank == 3 ? s : 1, t};
        keep = dec_bin_s(c, IR_BIN_GT, dec_reshape(c, dec_cast(c, m, IR_DT_F32), d4, 4), 0.0);
    } else {
        dec_err(c, "unsupported: mask_index of rank %d and first dim %lld (supported: [B], "
                "[2B], [B, T], [B, S, T])", tm->rank, (long long)(tm->rank ? tm->dims[0] : 0));
        return IR_NONE;
    }
    return dec_select(c, keep, dec_scalar(c->g, IR_DT_F32, 0.0),
                      dec_scalar(c->g, IR_DT_F32, filter));
}

/* The causal bias [1, 1, S, T]: filter on keys after their query. */
static ValId causal_bias(DecCtx *c, int64_t s, int64_t t, double filter)
{
    ValId later = dec_bin(c, IR_BIN_GT, positions(c, t, 3), positions(c, s, 2));
    return dec_select(c, later, dec_scalar(c->g, IR_DT_F32, filter),
                      dec_scalar(c->g, IR_DT_F32, 0.0));
}

/* The split of weights' Htot columns into Q, K and V widths (qkv_hidden_sizes, or three
 * equal parts), checked against num_heads n. */
static bool qkv_sizes(DecCtx *c, int64_t htot, int64_t n, int64_t *hq, int64_t *hk, int64_t *hv)
{
    const int64_t *qs = NULL;
    int got = dec_aints(c, "qkv_hidden_sizes", &qs);
    if (got == 3) {
        *hq = qs[0], *hk = qs[1], *hv = qs[2];
    } else {
        *hq = *hk = *hv = htot / 3;
    }
    if (n < 1 || *hq + *hk + *hv != htot || *hq != *hk || *hq % n || *hv % n || *hq < 1) {
        dec_err(c, "weights' %lld columns do not split into Q, K and V of num_heads %lld heads",
                (long long)htot, (long long)n);
        return false;
    }
    return true;
}

/* The attention of heads q [B, n, S, d], k^T [B, n, d, T] and v [B, n, T, dv]: per head
 * softmax(scale q k^T + mask_index's bias + causal bias + attention_bias) v, returned as
 * [B, S, n * dv]. m: mask_index (IR_NONE: none), ab: attention_bias (IR_NONE: none). */
static ValId attend(DecCtx *c, ValId q, ValId kt, ValId v, ValId m, ValId ab, double scale)
{
    const IrType *tq = dec_ty(c, q), *tv = dec_ty(c, v);
    int64_t b = tq->dims[0], n = tq->dims[1], s = tq->dims[2], t = dec_ty(c, kt)->dims[3];
    double filter = dec_af(c, "mask_filter_value", -10000.0);
    ValId sc = dec_bin_s(c, IR_BIN_MUL, ir_matmul(c->g, q, kt, c->o), scale);
    if (m != IR_NONE) {
        ValId mb = mask_bias(c, m, b, s, t, filter);
        if (mb == IR_NONE)
            return IR_NONE;
        sc = dec_bin(c, IR_BIN_ADD, sc, mb);
    }
    if (dec_ai(c, "unidirectional", 0))
        sc = dec_bin(c, IR_BIN_ADD, sc, causal_bias(c, s, t, filter));
    if (ab != IR_NONE)
        sc = dec_bin(c, IR_BIN_ADD, sc, ab);
    ValId y = ir_matmul(c->g, dec_softmax_last(c, sc), v, c->o);
    int64_t perm[4] = {0, 2, 1, 3}, d3[3] = {b, s, n * tv->dims[3]};
    return dec_reshape(c, dec_transpose(c, y, perm), d3, 3);
}

/* The scale attribute, or 1 / sqrt(head size d) when it is 0 or absent. */
static double attn_scale(DecCtx *c, int64_t d)
{
    double scale = dec_af(c, "scale", 0.0);
    return scale != 0.0 ? scale : 1.0 / sqrt((double)d);
}

bool dec_ms_attention(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    if (dec_in(c, 4) != IR_NONE || dec_out_used(c, 1) || dec_ai(c, "do_rotary", 0)) {
        dec_err(c, "unsupported: a past key/value state (KV cache) or do_rotary");
        return false;
    }
    ValId x = dec_in(c, 0), w = dec_in(c, 1), out[DEC_MAX_OUT];
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    int64_t n = dec_ai(c, "num_heads", 0), hq, hk, hv;
    if (tx->rank != 3 || tw->rank != 2 || tw->dims[0] != tx->dims[2]) {
        dec_err(c, "needs input [B, S, H] and weights [H, 3H']");
        return false;
    }
    if (!qkv_sizes(c, tw->dims[1], n, &hq, &hk, &hv))
        return false;
    ValId ab[2] = {x, w};
    if (!dec_sub_run(c, dec_matmul, "MatMul", ab, 2, false, out))
        return false;
    ValId qkv = dec_in(c, 2) != IR_NONE ? dec_bin(c, IR_BIN_ADD, out[0], dec_in(c, 2)) : out[0];
    ValId q = heads(c, dec_slice_axis(c, qkv, 2, 0, 1, hq), n, false);
    ValId k = heads(c, dec_slice_axis(c, qkv, 2, hq, 1, hk), n, true);
    ValId v = heads(c, dec_slice_axis(c, qkv, 2, hq + hk, 1, hv), n, false);
    c->out[0] = attend(c, q, k, v, dec_in(c, 3), dec_in(c, 5), attn_scale(c, hq / n));
    return c->out[0] != IR_NONE;
}

/* MultiHeadAttention's key or value: [B, T, n*d] (plus its part of bias, from column
 * off) split into heads, or [B, n, T, d] as given; keys transposed for q k^T. */
static ValId mha_operand(DecCtx *c, ValId x, int64_t n, int64_t off, bool keys)
{
    const IrType *t = dec_ty(c, x);
    if (t->rank == 4) {
        int64_t pk[4] = {0, 1, 3, 2};
        return keys ? dec_transpose(c, x, pk) : x;
    }
    if (dec_in(c, 3) != IR_NONE)
        x = dec_bin(c, IR_BIN_ADD, x, dec_slice_axis(c, dec_in(c, 3), 0, off, 1, t->dims[2]));
    return heads(c, x, n, keys);
}

/* MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?)
 * {num_heads, scale, mask_filter_value, unidirectional}: projected Q [B, S, D], K and V
 * [B, T, D] (or already in heads, [B, n, T, d]), bias [D + D + Dv] added to each;
 * key_padding_mask as Attention's mask_index. Packed QKV, a past state and the outputs
 * present_key / present_value are refused. */
bool dec_ms_mha(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1) || !dec_need_in(c, 2))
        return false;
    if (dec_in(c, 6) != IR_NONE || dec_in(c, 7) != IR_NONE || dec_out_used(c, 1) ||
        dec_out_used(c, 2)) {
        dec_err(c, "unsupported: a past key/value state (KV cache)");
        return false;
    }
    ValId q = dec_in(c, 0), k = dec_in(c, 1), v = dec_in(c, 2);
    int64_t n = dec_ai(c, "num_heads", 0);
    const IrType *tq = dec_ty(c, q), *tk = dec_ty(c, k);
    int64_t d = tq->rank == 3 ? tq->dims[2] : 0;
    if (tq->rank != 3 || n < 1 || d % n || (tk->rank != 3 && tk->rank != 4) ||
        dec_ty(c, v)->rank != tk->rank || (tk->rank == 3 && tk->dims[2] != d)) {
        dec_err(c, "needs query [B, S, D] with num_heads dividing D, and key and value "
                "[B, T, D] or [B, n, T, d] (packed QKV is not supported)");
        return false;
    }
    ValId qh = heads(c, dec_in(c, 3) != IR_NONE ? dec_bin(c, IR_BIN_ADD, q, dec_slice_axis(
                            c, dec_in(c, 3), 0, 0, 1, d)) : q, n, false);
    ValId kt = mha_operand(c, k, n, d, true), vh = mha_operand(c, v, n, 2 * d, false);
    c->out[0] = attend(c, qh, kt, vh, dec_in(c, 4), dec_in(c, 5), attn_scale(c, d / n));
    return c->out[0] != IR_NONE;
}
