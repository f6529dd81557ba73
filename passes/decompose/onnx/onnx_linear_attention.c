/* onnx_linear_attention.c: recurrent attention-like operators of opset 27 as core ops.
 *
 * LinearAttention: the state recurrence (linear, gated, delta, gated_delta update
 * rules, grouped-query heads) unrolled over the static sequence length: per step a
 * few broadcast BINARY ops on the state [B, Hkv, dk, dv], one MATMUL for the delta
 * rule's read-back and one for the query read ([B, Hkv, G, dk] x state).
 * CausalConvWithState: the past state (or zeros) concatenated in front of the input,
 * a depthwise CONV, optional bias and SiLU; the new state is the last k-1 positions.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

#define LA_MAX_STEPS 4096                 /* most unrolled LinearAttention steps */

/* Shapes and options of one LinearAttention node. */
typedef struct {
    int64_t B, T, hq, hkv, G, dk, dv;     /* batch, steps, heads, group size, head sizes */
    bool gating, delta;
    int64_t decay_n;                      /* decay entries per kv head: 1 or dk */
    int64_t beta_h;                       /* beta heads: hkv or 1 */
    double scale;
} LinAttn;

/* Check the update rule against the decay/beta inputs. */
static bool la_rule(DecCtx *c, LinAttn *a, ValId decay, ValId beta)
{
    const char *rule = dec_as(c, "update_rule", "gated_delta");
    if (strcmp(rule, "linear") && strcmp(rule, "gated") && strcmp(rule, "delta") &&
        strcmp(rule, "gated_delta")) {
        dec_err(c, "unknown update_rule '%s' (linear, gated, delta, gated_delta)", rule);
        return false;
    }
    a->gating = strstr(rule, "gated") != NULL;
    a->delta = strstr(rule, "delta") != NULL;
    if (a->gating != (decay != IR_NONE) || a->delta != (beta != IR_NONE)) {
        dec_err(c, "update_rule '%s' %s decay and %s beta", rule,
                a->gating ? "needs" : "forbids", a->delta ? "needs" : "forbids");
        return false;
    }
    return true;
}

/* Last dimension of a rank-3 value [B, T, n] or -1 when the shape differs. */
static int64_t packed_last(DecCtx *c, ValId v, const LinAttn *a)
{
    const IrType *t = dec_ty(c, v);
    if (t->rank != 3 || t->dims[0] != a->B || t->dims[1] != a->T)
        return -1;
    return t->dims[2];
}

/* Shapes of q, k, v, past_state, decay and beta; fills a. */
static bool la_shapes(DecCtx *c, LinAttn *a, const ValId *in)
{
    const IrType *tq = dec_ty(c, in[0]);
    a->hq = dec_ai(c, "q_num_heads", 0);
    a->hkv = dec_ai(c, "kv_num_heads", 0);
    if (a->hq < 1 || a->hkv < 1 || a->hq % a->hkv) {
        dec_err(c, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                (long long)a->hq, (long long)a->hkv);
        return false;
    }
    if (tq->rank != 3 || !ir_dtype_is_float(tq->dtype)) {
        dec_err(c, "query must be a rank-3 float tensor [B, T, H*dk]");
        return false;
    }
    a->B = tq->dims[0];
    a->T = tq->dims[1];
    a->G = a->hq / a->hkv;
    int64_t ql = tq->dims[2], kl = packed_last(c, in[1], a), vl = packed_last(c, in[2], a);
    if (ql % a->hq || kl != ql / a->hq * a->hkv || vl < 0 || vl % a->hkv) {
        dec_err(c, "query/key/value must be [B, T, q_num_heads*dk], [B, T, kv_num_heads*dk], "
                "[B, T, kv_num_heads*dv]");
        return false;
    }
    a->dk = ql / a->hq;
    a->dv = vl / a->hkv;
    if (in[3] != IR_NONE) {
        const IrType *ts = dec_ty(c, in[3]);
        if (ts->rank != 4 || ts->dims[0] != a->B || ts->dims[1] != a->hkv || ts->dims[2] != a->dk ||
            ts->dims[3] != a->dv) {
            dec_err(c, "past_state must be [B, kv_num_heads, dk, dv] = [%lld, %lld, %lld, %lld]",
                    (long long)a->B, (long long)a->hkv, (long long)a->dk, (long long)a->dv);
            return false;
        }
    }
    int64_t dl = in[4] != IR_NONE ? packed_last(c, in[4], a) : a->hkv;
    a->decay_n = dl == a->hkv ? 1 : a->dk;
    if (dl != a->hkv && dl != a->hkv * a->dk) {
        dec_err(c, "decay must be [B, T, kv_num_heads] or [B, T, kv_num_heads*dk]");
        return false;
    }
    a->beta_h = in[5] != IR_NONE ? packed_last(c, in[5], a) : 1;
    if (a->beta_h != a->hkv && a->beta_h != 1) {
        dec_err(c, "beta must be [B, T, kv_num_heads] or [B, T, 1]");
        return false;
    }
    return true;
}

/* Step t of a [B, T, ...] value, reshaped to dims. */
static ValId la_step(DecCtx *c, ValId v, int64_t t, const int64_t *dims, int rank)
{
    return dec_reshape(c, dec_slice_axis(c, v, 1, t, 1, 1), dims, rank);
}

/* One step of the recurrence: updates *state and returns the output [B, 1, Hq*dv]. */
static ValId la_update(DecCtx *c, const LinAttn *a, const ValId *in, ValId eg, ValId *state,
                       int64_t t)
{
    int64_t k_row[4] = {a->B, a->hkv, 1, a->dk}, k_col[4] = {a->B, a->hkv, a->dk, 1};
    int64_t v_row[4] = {a->B, a->hkv, 1, a->dv}, g_col[4] = {a->B, a->hkv, a->decay_n, 1};
    int64_t b4[4] = {a->B, a->beta_h, 1, 1}, q4[4] = {a->B, a->hkv, a->G, a->dk};
    int64_t o3[3] = {a->B, 1, a->hq * a->dv};
    ValId s = *state, vt = la_step(c, in[2], t, v_row, 4);
    if (a->gating)
        s = dec_bin(c, IR_BIN_MUL, s, la_step(c, eg, t, g_col, 4));
    if (a->delta) {
        ValId got = ir_matmul(c->g, la_step(c, in[1], t, k_row, 4), s, c->o);
        vt = dec_bin(c, IR_BIN_MUL, la_step(c, in[5], t, b4, 4), dec_bin(c, IR_BIN_SUB, vt, got));
    }
    s = dec_bin(c, IR_BIN_ADD, s, dec_bin(c, IR_BIN_MUL, la_step(c, in[1], t, k_col, 4), vt));
    *state = s;
    ValId o = ir_matmul(c->g, la_step(c, in[0], t, q4, 4), s, c->o);
    return dec_reshape(c, o, o3, 3);
}

bool dec_linear_attention(DecCtx *c)
{
    ValId in[6];
    for (int i = 0; i < 6; i++)
        in[i] = dec_in(c, i);
    LinAttn a;
    memset(&a, 0, sizeof a);
    if (in[0] == IR_NONE || in[1] == IR_NONE || in[2] == IR_NONE) {
        dec_err(c, "missing query, key or value");
        return false;
    }
    if (!la_rule(c, &a, in[4], in[5]) || !la_shapes(c, &a, in))
        return false;
    if (a.T < 1 || a.T > LA_MAX_STEPS) {
        dec_err(c, "unsupported: sequence length %lld (1 to %d steps are unrolled)", (long long)a.T,
                LA_MAX_STEPS);
        return false;
    }
    IrDType dt = dec_ty(c, in[0])->dtype;
    double scale = dec_af(c, "scale", 0.0);
    a.scale = scale != 0.0 ? scale : 1.0 / sqrt((double)a.dk);
    in[0] = dec_bin_s(c, IR_BIN_MUL, in[0], a.scale);
    for (int i = 1; i < 6; i++)
        if (in[i] != IR_NONE)
            in[i] = dec_cast(c, in[i], dt);
    ValId eg = a.gating ? dec_un(c, IR_UN_EXP, in[4]) : IR_NONE;
    int64_t sd[4] = {a.B, a.hkv, a.dk, a.dv};
    ValId state = in[3] != IR_NONE ? in[3] : dec_expand(c, dec_scalar(c->g, dt, 0), sd, 4);
    IrDType state_dt = in[3] != IR_NONE ? dec_ty(c, dec_in(c, 3))->dtype : dt;
    ValId *outs = ir_scratch(c->g, sizeof(ValId) * (size_t)(a.T + 1));
    for (int64_t t = 0; t < a.T; t++)
        outs[t] = la_update(c, &a, in, eg, &state, t);
    c->out[0] = dec_concat(c, outs, (int)a.T, 1);
    c->out[1] = dec_cast(c, state, state_dt);
    return true;
}

/* CausalConvWithState: y = act(depthwise_conv(concat(past, x)) + bias). */
bool dec_causal_conv_state(DecCtx *c)
{
    ValId x = dec_in(c, 0), w = dec_in(c, 1), bias = dec_in(c, 2), past = dec_in(c, 3);
    if (x == IR_NONE || w == IR_NONE) {
        dec_err(c, "missing input or weight");
        return false;
    }
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    if (tx->rank != 3 || tw->rank != 3 || tw->dims[0] != tx->dims[1] || tw->dims[1] != 1 ||
        tw->dims[2] < 1) {
        dec_err(c, "input must be [B, C, L] and weight [C, 1, k]");
        return false;
    }
    int64_t b = tx->dims[0], ch = tx->dims[1], len = tx->dims[2], k = tw->dims[2];
    if (bias != IR_NONE && (dec_ty(c, bias)->rank != 1 || dec_ty(c, bias)->dims[0] != ch)) {
        dec_err(c, "bias must be [C] = [%lld]", (long long)ch);
        return false;
    }
    const char *actn = dec_as(c, "activation", "none");
    bool silu = !strcmp(actn, "silu") || !strcmp(actn, "swish");
    if (!silu && strcmp(actn, "none")) {
        dec_err(c, "unknown activation '%s' (none, silu, swish)", actn);
        return false;
    }
    ValId padded = x;
    if (past != IR_NONE) {
        const IrType *tp = dec_ty(c, past);
        if (tp->rank != 3 || tp->dims[0] != b || tp->dims[1] != ch || tp->dims[2] != k - 1) {
            dec_err(c, "past_state must be [B, C, k-1] = [%lld, %lld, %lld]", (long long)b,
                    (long long)ch, (long long)(k - 1));
            return false;
        }
        if (k > 1) {
            ValId parts[2] = {dec_cast(c, past, tx->dtype), x};
            padded = dec_concat(c, parts, 2, 2);
        }
    } else {
        int64_t pads[6] = {0, 0, k - 1, 0, 0, 0};
        padded = dec_pad(c, x, pads, NULL, 0.0);
    }
    static const int64_t one[1] = {1};
    IrAttr at[3] = {ir_attr_ints_ref("strides", one, 1), ir_attr_ints_ref("dilations", one, 1),
                    ir_attr_int("group", ch)};
    ValId cin[2] = {padded, dec_cast(c, w, tx->dtype)};
    ValId y = dec_op(c, IR_OP_CONV, cin, 2, at, 3);
    if (bias != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, dec_cast(c, bias, tx->dtype), 3));
    if (silu)
        y = dec_bin(c, IR_BIN_MUL, y, dec_un(c, IR_UN_SIGMOID, y));
    c->out[0] = y;
    c->out[1] = dec_slice_axis(c, padded, 2, len, 1, k - 1);
    return true;
}
