/* onnx_gqa_ms.c: onnxruntime's GroupQueryAttention (domain com.microsoft) as core ops:
 * the attention of the LLM exports written by onnxruntime-genai's model builder (Phi-3,
 * Llama, Qwen, Mistral), next to MatMulNBits, the simplified layer norms and
 * RotaryEmbedding.
 *
 *   GroupQueryAttention(query, key?, value?, past_key?, past_value?, seqlens_k,
 *       total_sequence_length, cos_cache?, sin_cache?, position_ids?, attention_bias?)
 *       {num_heads N, kv_num_heads kvN, scale, softcap, local_window_size, do_rotary,
 *        rotary_interleaved, causal}
 *       -> output [B, S, N*H], present_key, present_value [B, kvN, T, H]
 *
 * query is [B, S, N*H] with key and value [B, S, kvN*H], or packed QKV [B, S,
 * (N + 2 kvN) H] when both are absent; past_key/past_value [B, kvN, P, H] (BNSH); T = P + S.
 * As onnxruntime's CPU kernel does (checked against onnxruntime 1.32): batch entry b
 * holds T_b = seqlens_k[b] + 1 tokens after the step. Without past positions (P = 0: the
 * first prompt) its S new tokens are at positions 0 .. S-1; with a past they are at
 * o_b .. o_b + S - 1, o_b = T_b - S (a right-padded past keeps its first o_b rows).
 * present = past rows [0, o_b), the new rows at [o_b, o_b + S), zeros after. Query s at
 * position p = o_b + s sees key j iff j < T_b, j <= p (causal=1) and p - j <
 * local_window_size (when that is >= 0); with do_rotary, q and k are rotated by the rows p
 * of cos_cache/sin_cache (rotary_dim = 2 * their width, halves or interleaved pairs);
 * query head h uses kv head h / (N / kvN); scores are scale q.k (1/sqrt(H) when scale is
 * 0 or absent), capped by softcap, plus attention_bias [B|1, N|1, S, T], softmaxed (rows
 * with no key give zeros). The attention itself is the ONNX Attention's (dec_attention)
 * run on the placed present and that mask.
 *
 * seqlens_k is data (no shape depends on its value): the mask, the rotary positions and
 * the placement of the new rows are computed from it (a plain concatenation when it is a
 * constant with o_b = P). total_sequence_length is taken to be P + S (past and present
 * buffers not shared), checked when it is a constant; given as an input it is not read:
 * a call of a shared-buffer model (total < P + S) gets onnxruntime's output, but present
 * keeps P + S rows where onnxruntime's has P. Refused by name: position_ids,
 * head_sink, smooth_softmax=1, quantized caches (k_scale, v_scale, kv_cache_bit_width,
 * k/v_quant_type), q/k_norm_weight, query_seqlens, sliding_window_cache=1, qk_output and
 * the output_qk output, causal=0 with a local window, negative scale. A past of a
 * bounded dynamic length (spyrec --dim) is refused by the padding check of the dynamic
 * compile (the new rows are placed by padding the past).
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

/* The node's sizes. */
typedef struct {
    int64_t b, s, n, kvn, h, p, t;        /* batch, new tokens, heads, kv heads, head size,
                                             past and total positions */
    bool packed;                          /* QKV packed in query */
} Gqa;

/* The node's inputs, in order. */
enum { GQA_Q, GQA_K, GQA_V, GQA_PK, GQA_PV, GQA_SEQLENS, GQA_TOTAL, GQA_COS, GQA_SIN,
       GQA_POS, GQA_BIAS, GQA_SINK, GQA_KSCALE, GQA_VSCALE, GQA_QNORM, GQA_KNORM,
       GQA_QSEQLENS, GQA_NIN };

/* Refuses the attributes and inputs of the features not supported (see the top). */
static bool gqa_unsupported(DecCtx *c)
{
    static const struct { int in; const char *name; } ins[] = {
        {GQA_POS, "position_ids"}, {GQA_SINK, "head_sink"}, {GQA_KSCALE, "k_scale"},
        {GQA_VSCALE, "v_scale"}, {GQA_QNORM, "q_norm_weight"}, {GQA_KNORM, "k_norm_weight"},
        {GQA_QSEQLENS, "query_seqlens"}};
    for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
        if (dec_in(c, ins[i].in) != IR_NONE) {
            dec_err(c, "unsupported: input %s", ins[i].name);
            return false;
        }
    if (c->n->nin > GQA_NIN || dec_out_used(c, 3)) {
        dec_err(c, "unsupported: more than %d inputs, or the output output_qk", GQA_NIN);
        return false;
    }
    static const char *const zero[] = {"sliding_window_cache", "qk_output", "kv_cache_bit_width"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        if (dec_ai(c, zero[i], 0) != 0) {
            dec_err(c, "unsupported: %s=%lld", zero[i], (long long)dec_ai(c, zero[i], 0));
            return false;
        }
    if (dec_ai(c, "smooth_softmax", -1) == 1) {
        dec_err(c, "unsupported: smooth_softmax=1");
        return false;
    }
    if (strcmp(dec_as(c, "k_quant_type", "NONE"), "NONE") ||
        strcmp(dec_as(c, "v_quant_type", "NONE"), "NONE")) {
        dec_err(c, "unsupported: a quantized KV cache (k_quant_type/v_quant_type)");
        return false;
    }
    int64_t causal = dec_ai(c, "causal", 1), lw = dec_ai(c, "local_window_size", -1);
    if ((causal != 0 && causal != 1) || lw < -1 || (causal == 0 && lw != -1)) {
        dec_err(c, "unsupported: causal=%lld with local_window_size=%lld (causal must be 0 or "
                "1, the window -1 or >= 0, and -1 without causal)", (long long)causal,
                (long long)lw);
        return false;
    }
    if (dec_af(c, "scale", 0.0) < 0) {
        dec_err(c, "unsupported: negative scale %g", dec_af(c, "scale", 0.0));
        return false;
    }
    return true;
}

/* Whether x has shape d[0..r) (-1: any size). */
static bool has_dims(DecCtx *c, ValId x, const int64_t *d, int r)
{
    const IrType *t = dec_ty(c, x);
    if (t->rank != r)
        return false;
    for (int i = 0; i < r; i++)
        if (d[i] >= 0 && t->dims[i] != d[i])
            return false;
    return true;
}

/* Head counts and query/key/value shapes into *g. */
static bool gqa_qkv_shapes(DecCtx *c, Gqa *g)
{
    ValId q = dec_in(c, GQA_Q), k = dec_in(c, GQA_K), v = dec_in(c, GQA_V);
    if (!dec_has_attr(c, "num_heads") || !dec_has_attr(c, "kv_num_heads")) {
        dec_err(c, "missing attribute %s", dec_has_attr(c, "num_heads") ? "kv_num_heads" :
                "num_heads");
        return false;
    }
    g->n = dec_ai(c, "num_heads", 0);
    g->kvn = dec_ai(c, "kv_num_heads", 0);
    if (g->n < 1 || g->kvn < 1 || g->n % g->kvn) {
        dec_err(c, "needs num_heads and kv_num_heads >= 1, num_heads a multiple of "
                "kv_num_heads (got %lld and %lld)", (long long)g->n, (long long)g->kvn);
        return false;
    }
    const IrType *tq = dec_ty(c, q);
    if (tq->rank != 3 || !ir_dtype_is_float(tq->dtype)) {
        dec_err(c, "query must be a 3-D float tensor [batch, sequence, hidden], got rank %d",
                tq->rank);
        return false;
    }
    g->b = tq->dims[0];
    g->s = tq->dims[1];
    g->packed = k == IR_NONE;
    if ((k == IR_NONE) != (v == IR_NONE)) {
        dec_err(c, "key and value must be both present or both absent (packed QKV)");
        return false;
    }
    int64_t heads = g->packed ? g->n + 2 * g->kvn : g->n;
    g->h = tq->dims[2] / heads;
    if (g->h < 1 || tq->dims[2] % heads) {
        dec_err(c, "query width %lld is not a multiple of %lld heads%s", (long long)tq->dims[2],
                (long long)heads, g->packed ? " (num_heads + 2 kv_num_heads, packed QKV)" : "");
        return false;
    }
    int64_t kd[3] = {g->b, g->s, g->kvn * g->h};
    if (!g->packed && (!has_dims(c, k, kd, 3) || !has_dims(c, v, kd, 3) ||
                       dec_ty(c, k)->dtype != tq->dtype || dec_ty(c, v)->dtype != tq->dtype)) {
        dec_err(c, "key and value must be [%lld, %lld, %lld] (batch, sequence, kv_num_heads * "
                "head size) of the query's type", (long long)kd[0], (long long)kd[1],
                (long long)kd[2]);
        return false;
    }
    return true;
}

/* The past, seqlens_k and total_sequence_length inputs against *g; fills g->p, g->t. */
static bool gqa_state_shapes(DecCtx *c, Gqa *g)
{
    ValId pk = dec_in(c, GQA_PK), pv = dec_in(c, GQA_PV), sl = dec_in(c, GQA_SEQLENS);
    ValId tot = dec_in(c, GQA_TOTAL);
    IrDType dt = dec_ty(c, dec_in(c, GQA_Q))->dtype;
    g->p = 0;
    if ((pk == IR_NONE) != (pv == IR_NONE)) {
        dec_err(c, "past_key and past_value must be both present or both absent");
        return false;
    }
    if (pk != IR_NONE) {
        int64_t pd[4] = {g->b, g->kvn, -1, g->h};
        if (!has_dims(c, pk, pd, 4) || !has_dims(c, pv, dec_ty(c, pk)->dims, 4) ||
            dec_ty(c, pk)->dtype != dt || dec_ty(c, pv)->dtype != dt) {
            dec_err(c, "past_key and past_value must be [%lld, %lld, P, %lld] (BNSH) of the "
                    "query's type (a quantized cache is not supported)", (long long)g->b,
                    (long long)g->kvn, (long long)g->h);
            return false;
        }
        g->p = dec_ty(c, pk)->dims[2];
    }
    g->t = g->p + g->s;
    if (sl == IR_NONE || tot == IR_NONE) {
        dec_err(c, "missing input %s", sl == IR_NONE ? "seqlens_k" : "total_sequence_length");
        return false;
    }
    const IrType *ts = dec_ty(c, sl), *tt = dec_ty(c, tot);
    if (ts->rank != 1 || ts->dims[0] != g->b || !ir_dtype_is_int(ts->dtype) ||
        dec_numel(tt) != 1 || !ir_dtype_is_int(tt->dtype)) {
        dec_err(c, "seqlens_k must be [%lld] and total_sequence_length a scalar, integers",
                (long long)g->b);
        return false;
    }
    if (ir_is_const(c->g, tot)) {
        int64_t total = dec_load_int(tt->dtype, ir_val(c->g, tot)->data, 0);
        if (total != g->t) {
            dec_err(c, "unsupported: total_sequence_length %lld is not past (%lld) + new (%lld) "
                    "positions (past and present sharing one buffer)", (long long)total,
                    (long long)g->p, (long long)g->s);
            return false;
        }
    }
    return true;
}

/* x [B, S, n*H] -> [B, n, S, H]. */
static ValId split_heads(DecCtx *c, ValId x, const Gqa *g, int64_t n)
{
    int64_t d4[4] = {g->b, g->s, n, g->h}, p[4] = {0, 2, 1, 3};
    return dec_transpose(c, dec_reshape(c, x, d4, 4), p);
}

/* Query, key and value heads [B, n, S, H] (from the packed QKV or the three inputs). */
static void gqa_heads(DecCtx *c, const Gqa *g, ValId *q, ValId *k, ValId *v)
{
    ValId x = dec_in(c, GQA_Q);
    if (!g->packed) {
        *q = split_heads(c, x, g, g->n);
        *k = split_heads(c, dec_in(c, GQA_K), g, g->kvn);
        *v = split_heads(c, dec_in(c, GQA_V), g, g->kvn);
        return;
    }
    int64_t qw = g->n * g->h, kw = g->kvn * g->h;
    *q = split_heads(c, dec_slice_axis(c, x, 2, 0, 1, qw), g, g->n);
    *k = split_heads(c, dec_slice_axis(c, x, 2, qw, 1, kw), g, g->kvn);
    *v = split_heads(c, dec_slice_axis(c, x, 2, qw + kw, 1, kw), g, g->kvn);
}

/* 0 .. n-1 as an int64 constant of rank 4 along axis `axis`. */
static ValId iota4(DecCtx *c, int64_t n, int axis)
{
    int64_t *v = ir_scratch(c->g, sizeof(int64_t) * (size_t)(n + 1)), d[4] = {1, 1, 1, 1};
    for (int64_t i = 0; i < n; i++)
        v[i] = i;
    d[axis] = n;
    return dec_const_i64(c->g, d, 4, v);
}

/* seqlens_k + 1 + add as int64 [B, 1, 1, 1]. */
static ValId seqlens_plus(DecCtx *c, const Gqa *g, int64_t add)
{
    int64_t d4[4] = {g->b, 1, 1, 1};
    ValId sl = dec_cast(c, dec_in(c, GQA_SEQLENS), IR_DT_I64);
    return dec_reshape(c, dec_bin_s(c, IR_BIN_ADD, sl, (double)(1 + add)), d4, 4);
}

/* The positions of the new tokens, int64 [B or 1, 1, S, 1]: 0 .. S-1 without a past,
 * else o_b + s. */
static ValId gqa_positions(DecCtx *c, const Gqa *g)
{
    ValId s = iota4(c, g->s, 2);
    return g->p == 0 ? s : dec_bin(c, IR_BIN_ADD, seqlens_plus(c, g, -g->s), s);
}

/* Heads x [B, n, S, H] rotated by the cos/sin cache rows of positions pos. */
static ValId gqa_rotary(DecCtx *c, const Gqa *g, ValId x, ValId pos)
{
    ValId cs = dec_in(c, GQA_COS), sn = dec_in(c, GQA_SIN), out[DEC_MAX_OUT];
    const IrType *tc = dec_ty(c, cs);
    const IrType *tp = dec_ty(c, pos);
    int64_t d2[2] = {tp->dims[0], g->s};
    pos = dec_reshape(c, pos, d2, 2);
    if (g->p > 0) /* data positions: kept inside the cache for any seqlens_k */
        pos = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, pos, 0), (double)(tc->dims[0] - 1));
    IrAttr at[2] = {ir_attr_int("rotary_embedding_dim", 2 * tc->dims[1]),
                    ir_attr_int("interleaved", dec_ai(c, "rotary_interleaved", 0) != 0)};
    ValId in[4] = {x, cs, sn, pos};
    if (!dec_sub_run_with(c, dec_rotary, "RotaryEmbedding", in, 4, at, 2, out))
        return IR_NONE;
    return out[0];
}

/* Checks of cos_cache and sin_cache for do_rotary. */
static bool gqa_rotary_shapes(DecCtx *c, const Gqa *g)
{
    ValId cs = dec_in(c, GQA_COS), sn = dec_in(c, GQA_SIN);
    if (cs == IR_NONE || sn == IR_NONE) {
        dec_err(c, "do_rotary=1 needs cos_cache and sin_cache");
        return false;
    }
    const IrType *tc = dec_ty(c, cs);
    if (tc->rank != 2 || !has_dims(c, sn, tc->dims, 2) || tc->dims[1] < 1 ||
        2 * tc->dims[1] > g->h || tc->dims[0] < g->t) {
        dec_err(c, "cos_cache and sin_cache must be [max positions >= %lld, rotary_dim / 2 <= "
                "%lld], of one shape", (long long)g->t, (long long)(g->h / 2));
        return false;
    }
    return true;
}

/* Whether seqlens_k is a constant with every o_b = P (present = past, new). */
static bool uniform_past(DecCtx *c, const Gqa *g)
{
    ValId sl = dec_in(c, GQA_SEQLENS);
    if (!ir_is_const(c->g, sl))
        return false;
    const IrType *t = dec_ty(c, sl);
    for (int64_t i = 0; i < g->b; i++)
        if (dec_load_int(t->dtype, ir_val(c->g, sl)->data, i) != g->t - 1)
            return false;
    return true;
}

/* present [B, kvN, T, H]: past rows [0, o_b), the new rows x [B, kvN, S, H] at
 * [o_b, o_b + S), zeros after. */
static ValId gqa_place(DecCtx *c, const Gqa *g, ValId past, ValId x)
{
    if (past == IR_NONE || g->p == 0)
        return x;
    if (uniform_past(c, g)) {
        ValId pp[2] = {past, x};
        return dec_concat(c, pp, 2, 2);
    }
    IrDType dt = dec_ty(c, x)->dtype;
    ValId j = iota4(c, g->t, 2), off = seqlens_plus(c, g, -g->s), placed; /* [B,1,1,1] */
    if (g->s == 1) {
        placed = dec_select(c, dec_bin(c, IR_BIN_EQ, j, off), x, dec_scalar(c->g, dt, 0));
    } else { /* one-hot [B, 1, T, S] of j - o_b == s, times the new rows */
        ValId rel = dec_bin(c, IR_BIN_SUB, j, off);
        ValId hot = dec_cast(c, dec_bin(c, IR_BIN_EQ, rel, iota4(c, g->s, 3)), dt);
        placed = ir_matmul(c->g, hot, x, c->o);
    }
    int64_t pads[8] = {0};
    pads[6] = g->s; /* end of the sequence axis */
    ValId ext = dec_pad(c, past, pads, NULL, 0.0);
    return dec_select(c, dec_bin(c, IR_BIN_LT, j, off), ext, placed);
}

/* The mask [B or 1, 1, S, T] of the keys each query sees (bool), or with attention_bias
 * that bias where seen and -inf elsewhere. */
static ValId gqa_mask(DecCtx *c, const Gqa *g, ValId pos)
{
    ValId j = iota4(c, g->t, 3), ok = dec_bin(c, IR_BIN_LT, j, seqlens_plus(c, g, 0));
    if (dec_ai(c, "causal", 1))
        ok = dec_bin(c, IR_BIN_AND, ok, dec_bin(c, IR_BIN_LE, j, pos));
    int64_t lw = dec_ai(c, "local_window_size", -1);
    if (lw >= 0)
        ok = dec_bin(c, IR_BIN_AND, ok, dec_bin_s(c, IR_BIN_LT, dec_bin(c, IR_BIN_SUB, pos, j),
                                                  (double)lw));
    ValId ab = dec_in(c, GQA_BIAS);
    if (ab == IR_NONE)
        return ok;
    const IrType *ta = dec_ty(c, ab);
    int64_t want[4] = {-1, -1, g->s, g->t};
    if (!has_dims(c, ab, want, 4) || (ta->dims[0] != 1 && ta->dims[0] != g->b) ||
        (ta->dims[1] != 1 && ta->dims[1] != g->n) ||
        ta->dtype != dec_ty(c, dec_in(c, GQA_Q))->dtype) {
        dec_err(c, "attention_bias must be [%lld or 1, %lld or 1, %lld, %lld] of the query's "
                "type", (long long)g->b, (long long)g->n, (long long)g->s, (long long)g->t);
        return IR_NONE;
    }
    return dec_select(c, ok, ab, dec_scalar(c->g, ta->dtype, -INFINITY));
}

bool dec_ms_gqa(DecCtx *c)
{
    Gqa g;
    if (!dec_need_in(c, GQA_Q) || !gqa_unsupported(c) || !gqa_qkv_shapes(c, &g) ||
        !gqa_state_shapes(c, &g))
        return false;
    bool rotary = dec_ai(c, "do_rotary", 0) != 0;
    if (rotary && !gqa_rotary_shapes(c, &g))
        return false;
    ValId q, k, v, pos = gqa_positions(c, &g);
    gqa_heads(c, &g, &q, &k, &v);
    if (rotary) {
        q = gqa_rotary(c, &g, q, pos);
        k = gqa_rotary(c, &g, k, pos);
        if (q == IR_NONE || k == IR_NONE)
            return false;
    }
    ValId pk = gqa_place(c, &g, dec_in(c, GQA_PK), k), pv = gqa_place(c, &g, dec_in(c, GQA_PV), v);
    ValId mask = gqa_mask(c, &g, pos), out[DEC_MAX_OUT];
    if (mask == IR_NONE)
        return false;
    double scale = dec_af(c, "scale", 0.0);
    IrAttr at[2] = {ir_attr_float("scale", scale > 0 ? scale : 1.0 / sqrt((double)g.h)),
                    ir_attr_float("softcap", dec_af(c, "softcap", 0.0))};
    ValId in[4] = {q, pk, pv, mask};
    if (!dec_sub_run_with(c, dec_attention, "Attention", in, 4, at, 2, out))
        return false;
    int64_t perm[4] = {0, 2, 1, 3}, d3[3] = {g.b, g.s, g.n * g.h};
    c->out[0] = dec_reshape(c, dec_transpose(c, out[0], perm), d3, 3);
    c->out[1] = pk;
    c->out[2] = pv;
    return true;
}
