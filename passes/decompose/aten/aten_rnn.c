/* aten_rnn.c: aten.lstm.input and aten.gru.input (as the training IR keeps them):
 * a flat weight list, has_biases, num_layers, bidirectional, batch_first, unbatched
 * input. Each layer runs the ONNX recurrence core (dec_rnn_layer, onnx_rnn.c) after
 * the torch gate blocks are reordered into ONNX order and the directions stacked;
 * a layer's output [T, B, D*H] feeds the next. proj_size, packed sequences and
 * training-mode dropout between layers are refused.
 */
#include <string.h>

#include "aten.h"
#include "passes/decompose/onnx/onnx.h"

#define RNN_MAX_LAYERS 64

/* ONNX position k of the torch gate blocks: LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h. */
static const int lstm_order[4] = {0, 3, 1, 2};
static const int gru_order[3] = {1, 0, 2};

typedef struct {
    bool lstm;
    int64_t L, D, H, G;                    /* layers, directions, hidden, gates */
    bool bias, batch_first, unbatched;
    ValId p[ATEN_MAX_LIST];                /* the flat weight list */
    int np;
} AtRnn;

/* v (gate blocks of H rows along axis 0) with its blocks in ONNX order, as one
 * direction slot [1, G*H, ...]. */
static ValId onnx_gates(DecCtx *c, const AtRnn *s, ValId v)
{
    const IrType *t = dec_ty(c, v);
    ValId parts[4];
    for (int k = 0; k < s->G; k++) {
        int src = s->lstm ? lstm_order[k] : gru_order[k];
        parts[k] = dec_slice_axis(c, v, 0, src * s->H, 1, s->H);
    }
    int64_t dims[IR_MAX_RANK];
    dims[0] = 1;
    memcpy(dims + 1, t->dims, sizeof(int64_t) * (size_t)t->rank);
    return dec_reshape(c, dec_concat(c, parts, (int)s->G, 0), dims, t->rank + 1);
}

/* Weight j (0 w_ih, 1 w_hh, 2 b_ih, 3 b_hh) of layer l, direction d; checks its
 * shape ([G*H, in], [G*H, H], [G*H]). */
static ValId weight(DecCtx *c, const AtRnn *s, int64_t l, int64_t d, int j, int64_t in)
{
    ValId v = s->p[(l * s->D + d) * (s->bias ? 4 : 2) + j];
    const IrType *t = dec_ty(c, v);
    int64_t want[2] = {s->G * s->H, j == 0 ? in : s->H};
    int rank = j < 2 ? 2 : 1;
    if (t->rank != rank || t->dims[0] != want[0] || (rank == 2 && t->dims[1] != want[1])) {
        dec_err(c, "weight %lld of layer %lld has the wrong shape (hidden size %lld)",
                (long long)j, (long long)l, (long long)s->H);
        return IR_NONE;
    }
    return onnx_gates(c, s, v);
}

/* The stacked W, R, B of layer l over its directions; false when reported. */
static bool layer_weights(DecCtx *c, const AtRnn *s, int64_t l, int64_t in, DecRnnLayer *L)
{
    ValId w[2], r[2], b[2];
    for (int64_t d = 0; d < s->D; d++) {
        w[d] = weight(c, s, l, d, 0, in);
        r[d] = weight(c, s, l, d, 1, in);
        if (w[d] == IR_NONE || r[d] == IR_NONE)
            return false;
        if (s->bias) {
            ValId bi = weight(c, s, l, d, 2, in), bh = bi == IR_NONE ? IR_NONE : weight(c, s, l, d, 3, in);
            if (bh == IR_NONE)
                return false;
            ValId both[2] = {bi, bh};
            b[d] = dec_concat(c, both, 2, 1);
        }
    }
    L->w = dec_concat(c, w, (int)s->D, 0);
    L->r = dec_concat(c, r, (int)s->D, 0);
    L->b = s->bias ? dec_concat(c, b, (int)s->D, 0) : IR_NONE;
    return true;
}

/* Initial state of layer l ([D, B, H] slice of hx [L*D, B, H]), or IR_NONE. */
static ValId layer_state(DecCtx *c, const AtRnn *s, ValId hx, int64_t l)
{
    return hx == IR_NONE ? IR_NONE : dec_slice_axis(c, hx, 0, l * s->D, 1, s->D);
}

/* Read the scalar arguments and the weight list; false when reported. */
static bool rnn_args(DecCtx *c, AtRnn *s)
{
    char buf[128];
    memset(s, 0, sizeof *s);
    s->lstm = strcmp(aten_base(c->n->foreign.op_type, buf, sizeof buf), "lstm") == 0;
    s->G = s->lstm ? 4 : 3;
    s->L = dec_ai(c, "num_layers", 1);
    s->D = dec_ai(c, "bidirectional", 0) ? 2 : 1;
    s->bias = dec_ai(c, "has_biases", 1) != 0;
    s->batch_first = dec_ai(c, "batch_first", 0) != 0;
    double p = 0;
    aten_num(c, "dropout", &p);
    if (aten_in(c, "batch_sizes") != IR_NONE) {
        dec_err(c, "unsupported: packed sequences");
        return false;
    }
    if (dec_ai(c, "train", 0) && p > 0 && s->L > 1) {
        dec_err(c, "dropout in training mode (train=True, p=%g) is random; export the "
                "model in eval mode", p);
        return false;
    }
    s->np = aten_ins(c, "params", s->p, ATEN_MAX_LIST);
    if (s->L < 1 || s->np != s->L * s->D * (s->bias ? 4 : 2)) {
        dec_err(c, "unsupported: %d weights for %lld layers (proj_size is not supported)",
                s->np, (long long)s->L);
        return false;
    }
    s->H = dec_ty(c, s->p[1])->rank == 2 ? dec_ty(c, s->p[1])->dims[1] : 0;
    return true;
}

/* x as [T, B, I] (batch_first and unbatched inputs normalised). */
static ValId seq_first(DecCtx *c, AtRnn *s, ValId x)
{
    static const int64_t swap[3] = {1, 0, 2};
    const IrType *t = dec_ty(c, x);
    if (t->rank == 2) {
        int64_t d3[3] = {t->dims[0], 1, t->dims[1]};
        s->unbatched = true;
        return dec_reshape(c, x, d3, 3);
    }
    return s->batch_first ? dec_transpose(c, x, swap) : x;
}

/* Initial states hx[k] as [L*D, B, H] (IR_NONE when absent). */
static ValId init_state(DecCtx *c, const AtRnn *s, const ValId *hx, int n, int k, int64_t b)
{
    if (k >= n || hx[k] == IR_NONE)
        return IR_NONE;
    int64_t dims[3] = {s->L * s->D, b, s->H};
    if (dec_numel(dec_ty(c, hx[k])) != dims[0] * b * s->H) {
        dec_err(c, "initial state %d does not have %lld x %lld x %lld elements", k,
                (long long)dims[0], (long long)b, (long long)s->H);
        return IR_NONE;
    }
    return dec_reshape(c, hx[k], dims, 3);
}

/* lstm.input(input, hx, params, has_biases, num_layers, dropout, train,
 * bidirectional, batch_first) -> (output, h_n, c_n); gru.input likewise without c_n. */
bool aten_rnn(DecCtx *c)
{
    AtRnn s;
    ValId x, hx[2] = {IR_NONE, IR_NONE};
    if (!aten_need(c, "input", &x) || !rnn_args(c, &s))
        return false;
    const IrType *tx = dec_ty(c, x);
    if ((tx->rank != 2 && tx->rank != 3) || !ir_dtype_is_float(tx->dtype) || s.H < 1) {
        dec_err(c, "input must be a 2-D or 3-D float tensor and the hidden size positive");
        return false;
    }
    x = seq_first(c, &s, x);
    int nh = aten_ins(c, "hx", hx, 2);
    int64_t b = dec_ty(c, x)->dims[1];
    ValId h0 = init_state(c, &s, hx, nh, 0, b), c0 = s.lstm ? init_state(c, &s, hx, nh, 1, b) : IR_NONE;
    if (ir_failed(c->g))
        return false;
    ValId hs[RNN_MAX_LAYERS], cs[RNN_MAX_LAYERS];
    if (s.L > RNN_MAX_LAYERS) {
        dec_err(c, "unsupported: more than %d layers", RNN_MAX_LAYERS);
        return false;
    }
    for (int64_t l = 0; l < s.L; l++) {
        DecRnnLayer L = {.x = x, .h0 = layer_state(c, &s, h0, l), .c0 = layer_state(c, &s, c0, l),
                         .dirs = (int)s.D, .lstm = s.lstm};
        ValId out[3] = {IR_NONE, IR_NONE, IR_NONE};
        if (!layer_weights(c, &s, l, dec_ty(c, x)->dims[2], &L) || !dec_rnn_layer(c, &L, out))
            return false;
        static const int64_t tbdh[4] = {0, 2, 1, 3};
        const IrType *ty = dec_ty(c, out[0]);
        int64_t d3[3] = {ty->dims[0], ty->dims[2], s.D * s.H};
        x = dec_reshape(c, dec_transpose(c, out[0], tbdh), d3, 3);
        hs[l] = out[1];
        cs[l] = out[2];
    }
    static const int64_t swap[3] = {1, 0, 2};
    ValId y = s.batch_first && !s.unbatched ? dec_transpose(c, x, swap) : x;
    ValId fin[3] = {y, dec_concat(c, hs, (int)s.L, 0), s.lstm ? dec_concat(c, cs, (int)s.L, 0) : IR_NONE};
    for (int i = 0; i < c->n->nout && i < 3; i++) {
        const IrType *o = aten_oty(c, i);
        c->out[i] = fin[i] == IR_NONE ? IR_NONE : dec_reshape(c, fin[i], o->dims, o->rank);
    }
    return true;
}
