/* onnx_rnn.c: the ONNX recurrent operators RNN, GRU and LSTM as core ops.
 *
 * The recurrence is unrolled over the static sequence length. The input projection
 * of every time step is one MATMUL ([T*B, I] x W^T) with the biases folded in; each
 * step then adds H_{t-1} R^T and applies the gate equations with UNARY/BINARY ops.
 * Directions forward, reverse and bidirectional; layout 0 ([T, B, ...]) and 1
 * ([B, T, ...]); initial_h / initial_c; LSTM peepholes and input_forget; GRU with
 * linear_before_reset 0 or 1; the activations / activation_alpha / activation_beta
 * attributes; clip. sequence_lens (constant or not) masks every step with SELECT:
 * a batch entry keeps its state past its length and its Y rows there are zero, which
 * also makes the reverse direction start at the entry's last valid step.
 * A sequence along a bounded symbolic dimension (spyrec --dim) is unrolled at its bound
 * the same way: every entry's length is at most the actual extent (SYMLEN), the steps
 * are slices that pass_symdim accepts along that axis (padok: past the actual length
 * they only reach the masked-out branch of those SELECTs), and Y is declared to lie
 * along the sequence's axis again (SYMLIKE), so the runtime gives it its actual length
 * (passes/symdim_steps.c).
 *
 * onnxruntime's DynamicQuantizeLSTM (com.microsoft; what its dynamic quantizer makes of
 * an LSTM) is the same recurrence with 8-bit weights W [D, I, 4H] and R [D, H, 4H]
 * (transposed; a scale and zero point per direction or per gate column): each
 * product quantizes its float operand to uint8 as DynamicQuantizeLinear does (one scale
 * for all of X's steps at once; for H_{t-1}, one per step), multiplies exactly in
 * int32 and scales back, as onnxruntime's kernel does. Not along a bounded dynamic
 * sequence (the padded steps would join X's range).
 */
#include <stdio.h>
#include <string.h>

#include "onnx.h"

#define RNN_MAX_ACT 6                     /* 3 functions (LSTM) x 2 directions */
#define RNN_MAX_STEPS 4096                /* most unrolled steps (all directions) */

typedef enum {
    RA_RELU, RA_TANH, RA_SIGMOID, RA_AFFINE, RA_LEAKYRELU, RA_THRESHRELU, RA_SCALEDTANH,
    RA_HARDSIGMOID, RA_ELU, RA_SOFTSIGN, RA_SOFTPLUS
} RnnActKind;

typedef struct {
    RnnActKind kind;
    double alpha, beta;
} RnnAct;

/* What one recurrent node needs, normalised to layout 0. */
typedef struct {
    int64_t T, B, I, H, D, G;              /* steps, batch, input, hidden, directions, gates */
    int layout;
    IrDType dt;
    ValId x;                               /* [T, B, I] */
    ValId w, r, b;                         /* [D, G*H, I], [D, G*H, H], [D, 2*G*H] or NONE */
    ValId seqlen;                          /* [B, 1] lengths, NONE when not needed */
    bool sym;                              /* T may be a bounded symbolic dimension */
    ValId h0, c0;                          /* [D, B, H] or NONE */
    double clip;                           /* <= 0: no clipping */
    RnnAct act[RNN_MAX_ACT];               /* nact per direction, forward first */
    int nact;
    bool quant;                            /* DynamicQuantizeLSTM: w, r 8-bit, [D, I or H, G*H] */
    ValId ws, wz, rs, rz;                  /* their scales and zero points: [D] or [D, G*H] */
} Rnn;

/* Activation kind named s (case-insensitive); false when unknown. */
static bool act_kind(const char *s, RnnActKind *k)
{
    static const struct { const char *name; RnnActKind kind; } tab[] = {
        {"relu", RA_RELU}, {"tanh", RA_TANH}, {"sigmoid", RA_SIGMOID}, {"affine", RA_AFFINE},
        {"leakyrelu", RA_LEAKYRELU}, {"thresholdedrelu", RA_THRESHRELU},
        {"scaledtanh", RA_SCALEDTANH}, {"hardsigmoid", RA_HARDSIGMOID}, {"elu", RA_ELU},
        {"softsign", RA_SOFTSIGN}, {"softplus", RA_SOFTPLUS},
    };
    char low[32];
    size_t n = strlen(s);
    if (n >= sizeof low)
        return false;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(tab[i].name, low) == 0) {
            *k = tab[i].kind;
            return true;
        }
    return false;
}

/* Default alpha/beta of an activation (those of the ONNX operator of that name), and
 * whether it takes an alpha / a beta from activation_alpha / activation_beta. */
static void act_defaults(RnnAct *a, bool *takes_alpha, bool *takes_beta)
{
    static const struct { double alpha, beta; bool ta, tb; } d[] = {
        [RA_RELU] = {0, 0, false, false},       [RA_TANH] = {0, 0, false, false},
        [RA_SIGMOID] = {0, 0, false, false},    [RA_AFFINE] = {1.0, 0.0, true, true},
        [RA_LEAKYRELU] = {0.01, 0, true, false}, [RA_THRESHRELU] = {1.0, 0, true, false},
        [RA_SCALEDTANH] = {1.0, 1.0, true, true}, [RA_HARDSIGMOID] = {0.2, 0.5, true, true},
        [RA_ELU] = {1.0, 0, true, false},       [RA_SOFTSIGN] = {0, 0, false, false},
        [RA_SOFTPLUS] = {0, 0, false, false},
    };
    a->alpha = d[a->kind].alpha;
    a->beta = d[a->kind].beta;
    *takes_alpha = d[a->kind].ta;
    *takes_beta = d[a->kind].tb;
}

/* Read the activations attribute (or the defaults, repeated per direction); alphas
 * and betas are consumed in order by the functions that take them. */
static bool read_acts(DecCtx *c, Rnn *s, const RnnActKind *dflt, int nper)
{
    const IrAttr *a = ir_attr_find(c->n, "activations");
    int total = (int)(nper * s->D);
    if (a && (a->kind != IR_ATTR_STRINGS || (int)a->n != total)) {
        dec_err(c, "activations must list %d functions (%d per direction)", total, nper);
        return false;
    }
    const IrAttr *al = ir_attr_find(c->n, "activation_alpha");
    const IrAttr *be = ir_attr_find(c->n, "activation_beta");
    uint32_t ia = 0, ib = 0;
    for (int i = 0; i < total; i++) {
        RnnAct *x = &s->act[i];
        x->kind = dflt[i % nper];
        if (a && (!a->strings[i] || !act_kind(a->strings[i], &x->kind))) {
            dec_err(c, "unsupported: activation function '%s'", a->strings[i] ? a->strings[i] : "");
            return false;
        }
        bool ta, tb;
        act_defaults(x, &ta, &tb);
        if (ta && al && al->kind == IR_ATTR_FLOATS && ia < al->n)
            x->alpha = al->floats[ia++];
        if (tb && be && be->kind == IR_ATTR_FLOATS && ib < be->n)
            x->beta = be->floats[ib++];
    }
    s->nact = nper;
    return true;
}

/* Apply activation a to x. */
static ValId act_apply(DecCtx *c, const RnnAct *a, ValId x)
{
    IrDType dt = dec_ty(c, x)->dtype;
    ValId zero = dec_scalar(c->g, dt, 0);
    switch (a->kind) {
    case RA_RELU: return dec_un(c, IR_UN_RELU, x);
    case RA_TANH: return dec_un(c, IR_UN_TANH, x);
    case RA_SIGMOID: return dec_un(c, IR_UN_SIGMOID, x);
    case RA_SOFTPLUS: return dec_un(c, IR_UN_SOFTPLUS, x);
    case RA_AFFINE: return dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, x, a->alpha), a->beta);
    case RA_LEAKYRELU:
        return dec_select(c, dec_bin_s(c, IR_BIN_LT, x, 0), dec_bin_s(c, IR_BIN_MUL, x, a->alpha), x);
    case RA_THRESHRELU: return dec_select(c, dec_bin_s(c, IR_BIN_GT, x, a->alpha), x, zero);
    case RA_SCALEDTANH:
        return dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_TANH, dec_bin_s(c, IR_BIN_MUL, x, a->beta)),
                         a->alpha);
    case RA_HARDSIGMOID: {
        ValId y = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, x, a->alpha), a->beta);
        return dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, y, 0), 1);
    }
    case RA_ELU: {
        ValId em1 = dec_bin_s(c, IR_BIN_SUB, dec_un(c, IR_UN_EXP, x), 1);
        return dec_select(c, dec_bin_s(c, IR_BIN_LT, x, 0), dec_bin_s(c, IR_BIN_MUL, em1, a->alpha), x);
    }
    case RA_SOFTSIGN:
        return dec_bin(c, IR_BIN_DIV, x, dec_bin_s(c, IR_BIN_ADD, dec_un(c, IR_UN_ABS, x), 1));
    }
    IR_ASSERT(!"unknown activation");
    return x;
}

/* Activation number k of direction d, applied to the clipped pre-activation x. */
static ValId act(DecCtx *c, const Rnn *s, int d, int k, ValId x)
{
    if (s->clip > 0)
        x = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, x, -s->clip), s->clip);
    return act_apply(c, &s->act[d * s->nact + k], x);
}

/* Check that v has the given rank and dims (a negative dim is not checked). */
static bool check_dims(DecCtx *c, ValId v, const char *what, int rank, const int64_t *dims)
{
    const IrType *t = dec_ty(c, v);
    bool ok = t->rank == rank;
    for (int i = 0; ok && i < rank; i++)
        ok = dims[i] < 0 || t->dims[i] == dims[i];
    if (!ok) {
        char want[128], got[128];
        size_t k = 0, j = 0;
        for (int i = 0; i < rank && k < sizeof want; i++)
            k += (size_t)snprintf(want + k, sizeof want - k, "%s%lld", i ? "," : "", (long long)dims[i]);
        for (int i = 0; i < t->rank && j < sizeof got; i++)
            j += (size_t)snprintf(got + j, sizeof got - j, "%s%lld", i ? "," : "",
                                  (long long)t->dims[i]);
        dec_err(c, "%s must have shape [%s]; got [%s]", what, want, got);
    }
    return ok;
}

/* Swap the first two axes of a rank-3 value (layout 1 <-> layout 0). */
static ValId swap01(DecCtx *c, ValId x)
{
    static const int64_t p[3] = {1, 0, 2};
    return dec_transpose(c, x, p);
}

/* sequence_lens as [B, 1], or IR_NONE when absent or a constant that never cuts. */
static bool read_seqlen(DecCtx *c, Rnn *s, ValId sl)
{
    if (sl == IR_NONE)
        return true;
    int64_t bd[1] = {s->B};
    if (!check_dims(c, sl, "sequence_lens", 1, bd))
        return false;
    if (ir_is_const(c->g, sl)) {
        const IrType *t = dec_ty(c, sl);
        bool full = true;
        for (int64_t i = 0; i < s->B; i++) {
            int64_t v = dec_load_int(t->dtype, ir_val(c->g, sl)->data, i);
            if (v < 0 || v > s->T) {
                dec_err(c, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)i,
                        (long long)v, (long long)s->T);
                return false;
            }
            full &= v == s->T;
        }
        if (full)
            return true;
    }
    int64_t b1[2] = {s->B, 1};
    s->seqlen = dec_reshape(c, sl, b1, 2);
    return true;
}

/* In a graph with bounded symbolic dimensions the sequence may be shorter than its
 * bound T: every entry's length becomes at most the actual extent of X's axis 0
 * (SYMLEN, resolved by pass_symdim), so the steps past it keep the state as those past
 * sequence_lens do. */
static void clip_to_actual(DecCtx *c, Rnn *s)
{
    if (!c->g->nsymdims)
        return;
    IrAttr ax = ir_attr_int("axis", 0);
    int64_t one[2] = {1, 1}, b1[2] = {s->B, 1};
    ValId n = dec_reshape(c, dec_op(c, IR_OP_SYMLEN, &s->x, 1, &ax, 1), one, 2);
    if (s->seqlen == IR_NONE)
        s->seqlen = dec_expand(c, n, b1, 2);
    else
        s->seqlen = dec_bin(c, IR_BIN_MIN, s->seqlen, dec_cast(c, n, dec_ty(c, s->seqlen)->dtype));
    s->sym = true;
}

/* Shared setup of RNN/GRU/LSTM: inputs, shapes, direction, layout, activations.
 * ih/ic: input indices of initial_h / initial_c (ic < 0: none). */
static bool rnn_setup(DecCtx *c, Rnn *s, int gates, const RnnActKind *dflt, int nper, int ih,
                      int ic, bool quant)
{
    memset(s, 0, sizeof *s);
    s->quant = quant;
    s->seqlen = IR_NONE;
    s->G = gates;
    s->x = dec_in(c, 0);
    s->w = dec_in(c, 1);
    s->r = dec_in(c, 2);
    s->b = dec_in(c, 3);
    if (s->x == IR_NONE || s->w == IR_NONE || s->r == IR_NONE) {
        dec_err(c, "missing X, W or R");
        return false;
    }
    const char *dir = dec_as(c, "direction", "forward");
    s->D = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (s->D == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0) {
        dec_err(c, "unknown direction '%s'", dir);
        return false;
    }
    s->layout = (int)dec_ai(c, "layout", 0);
    if (s->layout != 0 && s->layout != 1) {
        dec_err(c, "layout must be 0 or 1, got %d", s->layout);
        return false;
    }
    const IrType *tx = dec_ty(c, s->x);
    s->dt = tx->dtype;
    if (tx->rank != 3 || !ir_dtype_is_float(s->dt)) {
        dec_err(c, "X must be a rank-3 float tensor");
        return false;
    }
    if (s->layout)
        s->x = swap01(c, s->x);
    s->T = dec_ty(c, s->x)->dims[0];
    s->B = dec_ty(c, s->x)->dims[1];
    s->I = dec_ty(c, s->x)->dims[2];
    s->H = dec_ty(c, s->r)->rank == 3 ? dec_ty(c, s->r)->dims[quant ? 1 : 2] : -1;
    int64_t hs = dec_ai(c, "hidden_size", s->H);
    int64_t wd[3] = {s->D, gates * hs, s->I}, rd[3] = {s->D, gates * hs, hs};
    if (quant) {                           /* stored transposed */
        wd[1] = s->I, wd[2] = gates * hs;
        rd[1] = hs, rd[2] = gates * hs;
    }
    int64_t bd[2] = {s->D, 2 * gates * hs}, hd[3] = {s->D, s->B, hs};
    if (hs < 1 || hs != s->H) {
        dec_err(c, "hidden_size %lld does not match R (rank 3, last dim %lld)", (long long)hs,
                (long long)s->H);
        return false;
    }
    if (!check_dims(c, s->w, "W", 3, wd) || !check_dims(c, s->r, "R", 3, rd) ||
        (s->b != IR_NONE && !check_dims(c, s->b, "B", 2, bd)))
        return false;
    s->h0 = dec_in(c, ih);
    s->c0 = ic >= 0 ? dec_in(c, ic) : IR_NONE;
    if (s->layout && s->h0 != IR_NONE)
        s->h0 = swap01(c, s->h0);
    if (s->layout && s->c0 != IR_NONE)
        s->c0 = swap01(c, s->c0);
    if ((s->h0 != IR_NONE && !check_dims(c, s->h0, "initial_h", 3, hd)) ||
        (s->c0 != IR_NONE && !check_dims(c, s->c0, "initial_c", 3, hd)))
        return false;
    s->clip = dec_has_attr(c, "clip") ? dec_af(c, "clip", 0) : 0;
    if (dec_has_attr(c, "clip") && !(s->clip > 0)) {
        dec_err(c, "clip must be positive");
        return false;
    }
    if (!read_seqlen(c, s, dec_in(c, 4)) || !read_acts(c, s, dflt, nper))
        return false;
    clip_to_actual(c, s);
    return true;
}

/* Direction d of a [D, ...] value as [...] (rank - 1). */
static ValId dir_part(DecCtx *c, ValId v, int64_t d)
{
    const IrType *t = dec_ty(c, v);
    int64_t dims[IR_MAX_RANK];
    for (int i = 1; i < t->rank; i++)
        dims[i - 1] = t->dims[i];
    return dec_reshape(c, dec_slice_axis(c, v, 0, d, 1, 1), dims, t->rank - 1);
}

/* Initial state of direction d: [B, H] slice of v, or zeros. */
static ValId init_state(DecCtx *c, const Rnn *s, ValId v, int d)
{
    if (v != IR_NONE)
        return dir_part(c, v, d);
    int64_t bh[2] = {s->B, s->H};
    return dec_expand(c, dec_scalar(c->g, s->dt, 0), bh, 2);
}

/* Gate k ([B, H]) of a [B, n*H] value. */
static ValId gate(DecCtx *c, const Rnn *s, ValId v, int k)
{
    return dec_slice_axis(c, v, 1, k * s->H, 1, s->H);
}

/* x [rows, I or H] times direction d of W (r false) or R (r true), transposed: a float
 * product (by wt, the transpose made once for all steps, when not IR_NONE), or for
 * DynamicQuantizeLSTM that of x quantized dynamically and the 8-bit weights (IR_NONE
 * after reporting when that fails). */
static ValId weight_product(DecCtx *c, const Rnn *s, int d, ValId x, bool r, ValId wt)
{
    static const int64_t pt[2] = {1, 0};
    ValId w = dir_part(c, r ? s->r : s->w, d);
    if (!s->quant)
        return ir_matmul(c->g, x, wt != IR_NONE ? wt : dec_transpose(c, w, pt), c->o);
    return dec_dynq_product(c, x, w, dir_part(c, r ? s->rz : s->wz, d),
                            dir_part(c, r ? s->rs : s->ws, d));
}

/* Input projection of direction d for every step: [T, B, G*H] = X W^T + xbias. */
static ValId project_x(DecCtx *c, const Rnn *s, int d, ValId xbias)
{
    int64_t tbi[2] = {s->T * s->B, s->I}, tbg[3] = {s->T, s->B, s->G * s->H};
    ValId xw = weight_product(c, s, d, dec_reshape(c, s->x, tbi, 2), false, IR_NONE);
    if (xw == IR_NONE)
        return IR_NONE;
    if (xbias != IR_NONE)
        xw = dec_bin(c, IR_BIN_ADD, xw, xbias);
    return dec_reshape(c, xw, tbg, 3);
}

/* Step t of a projection [T, B, n] as [B, n]; along a symbolic T a slice marked padok
 * (its result past the actual length is masked out, clip_to_actual). */
static ValId step_of(DecCtx *c, const Rnn *s, ValId xw, int64_t t)
{
    const IrType *ty = dec_ty(c, xw);
    int64_t bn[2] = {ty->dims[1], ty->dims[2]};
    int64_t st[3] = {t, 0, 0}, sp[3] = {1, 1, 1}, sz[3] = {1, ty->dims[1], ty->dims[2]};
    IrAttr a[4] = {ir_attr_ints_ref("starts", st, 3), ir_attr_ints_ref("steps", sp, 3),
                   ir_attr_ints_ref("sizes", sz, 3), ir_attr_int("padok", 1)};
    ValId x = dec_op(c, IR_OP_SLICE, &xw, 1, a, s->sym ? 4 : 3);
    return dec_reshape(c, x, bn, 2);
}

/* Bias halves of direction d: *wb and *rb are [G*H] (IR_NONE when B is absent). */
static void biases(DecCtx *c, const Rnn *s, int d, ValId *wb, ValId *rb)
{
    *wb = *rb = IR_NONE;
    if (s->b == IR_NONE)
        return;
    ValId bd = dir_part(c, s->b, d);
    *wb = dec_slice_axis(c, bd, 0, 0, 1, s->G * s->H);
    *rb = dec_slice_axis(c, bd, 0, s->G * s->H, 1, s->G * s->H);
}

/* Mask of batch entries still running at step t ([B, 1] bool), or IR_NONE. */
static ValId live_mask(DecCtx *c, const Rnn *s, int64_t t)
{
    return s->seqlen == IR_NONE ? IR_NONE : dec_bin_s(c, IR_BIN_GT, s->seqlen, (double)t);
}

/* New state where the entry is live, the old one elsewhere. */
static ValId keep(DecCtx *c, ValId live, ValId nv, ValId old)
{
    return live == IR_NONE ? nv : dec_select(c, live, nv, old);
}

/* Outputs of one direction: the per-step hidden states in time order and the
 * final states. */
typedef struct {
    ValId *ys;                             /* [T] per-step outputs [B, H] (time order) */
    ValId h, cst;                          /* final hidden / cell state [B, H] */
} RnnDirOut;

/* Y value of a step: the new state where live, zeros elsewhere. */
static ValId y_of(DecCtx *c, const Rnn *s, ValId live, ValId h)
{
    return live == IR_NONE ? h : dec_select(c, live, h, dec_scalar(c->g, s->dt, 0));
}

/* Time index of the k-th processed step of direction d. */
static int64_t step_time(const Rnn *s, int d, int64_t k, bool reverse_only)
{
    bool rev = d == 1 || reverse_only;
    return rev ? s->T - 1 - k : k;
}

/* Assemble Y [T, D, B, H] (layout 0) or [B, T, D, H], Y_h and Y_c from the
 * per-direction results. */
static void rnn_outputs(DecCtx *c, const Rnn *s, RnnDirOut *dirs, bool lstm, ValId *out,
                        bool need_y)
{
    int64_t one_bh[3] = {1, s->B, s->H}, one4[4] = {1, 1, s->B, s->H};
    if (need_y) {
        ValId perdir[2];
        for (int d = 0; d < s->D; d++) {
            ValId *rows = ir_scratch(c->g, sizeof(ValId) * (size_t)(s->T + 1));
            for (int64_t t = 0; t < s->T; t++)
                rows[t] = dec_reshape(c, dirs[d].ys[t], one4, 4);
            perdir[d] = dec_concat(c, rows, (int)s->T, 0);
        }
        ValId y = dec_concat(c, perdir, (int)s->D, 1);
        if (s->sym) {                      /* Y's axis 0 is X's: symbolic when it is */
            IrAttr a[2] = {ir_attr_int("axis", 0), ir_attr_int("like_axis", 0)};
            ValId yx[2] = {y, s->x};
            y = dec_op(c, IR_OP_SYMLIKE, yx, 2, a, 2);
        }
        static const int64_t p[4] = {2, 0, 1, 3};
        out[0] = s->layout ? dec_transpose(c, y, p) : y;
    }
    ValId hs[2], cs[2];
    for (int d = 0; d < s->D; d++) {
        hs[d] = dec_reshape(c, dirs[d].h, one_bh, 3);
        if (lstm)
            cs[d] = dec_reshape(c, dirs[d].cst, one_bh, 3);
    }
    ValId yh = dec_concat(c, hs, (int)s->D, 0);
    out[1] = s->layout ? swap01(c, yh) : yh;
    if (lstm) {
        ValId yc = dec_concat(c, cs, (int)s->D, 0);
        out[2] = s->layout ? swap01(c, yc) : yc;
    }
}

/* Whether the single direction runs in reverse. */
static bool is_reverse(DecCtx *c)
{
    return strcmp(dec_as(c, "direction", "forward"), "reverse") == 0;
}

/* Bias of the input projection: wb + rb (either may be absent). */
static ValId sum_bias(DecCtx *c, ValId wb, ValId rb)
{
    return wb == IR_NONE ? IR_NONE : dec_bin(c, IR_BIN_ADD, wb, rb);
}

/* One direction of RNN: H = f(X W^T + H R^T + Wb + Rb). */
static void rnn_dir(DecCtx *c, const Rnn *s, int d, bool rev, RnnDirOut *o)
{
    static const int64_t pt[2] = {1, 0};
    ValId wb, rb;
    biases(c, s, d, &wb, &rb);
    ValId xw = project_x(c, s, d, sum_bias(c, wb, rb));
    ValId rt = dec_transpose(c, dir_part(c, s->r, d), pt);
    ValId h = init_state(c, s, s->h0, d);
    for (int64_t k = 0; k < s->T; k++) {
        int64_t t = step_time(s, d, k, rev);
        ValId live = live_mask(c, s, t);
        ValId pre = dec_bin(c, IR_BIN_ADD, step_of(c, s, xw, t), ir_matmul(c->g, h, rt, c->o));
        ValId hn = act(c, s, d, 0, pre);
        o->ys[t] = y_of(c, s, live, hn);
        h = keep(c, live, hn, h);
    }
    o->h = h;
}

/* One direction of GRU (gates z, r, h). */
static void gru_dir(DecCtx *c, const Rnn *s, int d, bool rev, bool lbr, RnnDirOut *o)
{
    static const int64_t pt[2] = {1, 0};
    ValId wb, rb, rbh = IR_NONE, xb = IR_NONE;
    biases(c, s, d, &wb, &rb);
    if (wb != IR_NONE && lbr) { /* Rbh stays inside r * (H Rh^T + Rbh) */
        ValId parts[2] = {dec_slice_axis(c, rb, 0, 0, 1, 2 * s->H),
                          dec_scalar(c->g, s->dt, 0)};
        int64_t hd[1] = {s->H};
        parts[1] = dec_expand(c, parts[1], hd, 1);
        xb = dec_bin(c, IR_BIN_ADD, wb, dec_concat(c, parts, 2, 0));
        rbh = dec_slice_axis(c, rb, 0, 2 * s->H, 1, s->H);
    } else {
        xb = sum_bias(c, wb, rb);
    }
    ValId xw = project_x(c, s, d, xb);
    ValId rt = dec_transpose(c, dir_part(c, s->r, d), pt); /* [H, 3H] */
    ValId rzr = dec_slice_axis(c, rt, 1, 0, 1, 2 * s->H), rh = dec_slice_axis(c, rt, 1, 2 * s->H, 1, s->H);
    ValId h = init_state(c, s, s->h0, d);
    for (int64_t k = 0; k < s->T; k++) {
        int64_t t = step_time(s, d, k, rev);
        ValId live = live_mask(c, s, t), xt = step_of(c, s, xw, t);
        ValId hr = ir_matmul(c->g, h, lbr ? rt : rzr, c->o);
        ValId zr = dec_bin(c, IR_BIN_ADD, dec_slice_axis(c, xt, 1, 0, 1, 2 * s->H),
                           dec_slice_axis(c, hr, 1, 0, 1, 2 * s->H));
        ValId z = act(c, s, d, 0, gate(c, s, zr, 0)), r = act(c, s, d, 0, gate(c, s, zr, 1));
        ValId rec;
        if (lbr) {
            rec = gate(c, s, hr, 2);
            if (rbh != IR_NONE)
                rec = dec_bin(c, IR_BIN_ADD, rec, rbh);
            rec = dec_bin(c, IR_BIN_MUL, r, rec);
        } else {
            rec = ir_matmul(c->g, dec_bin(c, IR_BIN_MUL, r, h), rh, c->o);
        }
        ValId hh = act(c, s, d, 1, dec_bin(c, IR_BIN_ADD, gate(c, s, xt, 2), rec));
        /* H = (1 - z) * hh + z * H = hh + z * (H - hh) */
        ValId hn = dec_bin(c, IR_BIN_ADD, hh, dec_bin(c, IR_BIN_MUL, z, dec_bin(c, IR_BIN_SUB, h, hh)));
        o->ys[t] = y_of(c, s, live, hn);
        h = keep(c, live, hn, h);
    }
    o->h = h;
}

/* pre + p * cst where the peephole p may be absent. */
static ValId peep(DecCtx *c, ValId pre, ValId p, ValId cst)
{
    return p == IR_NONE ? pre : dec_bin(c, IR_BIN_ADD, pre, dec_bin(c, IR_BIN_MUL, p, cst));
}

/* One direction of LSTM (gates i, o, f, c; peepholes i, o, f); false when a
 * quantized product failed (reported). */
static bool lstm_dir(DecCtx *c, const Rnn *s, int d, bool rev, ValId p, RnnDirOut *o)
{
    ValId wb, rb, pi = IR_NONE, po = IR_NONE, pf = IR_NONE;
    biases(c, s, d, &wb, &rb);
    if (p != IR_NONE) {
        ValId pd = dir_part(c, p, d);
        pi = dec_slice_axis(c, pd, 0, 0, 1, s->H);
        po = dec_slice_axis(c, pd, 0, s->H, 1, s->H);
        pf = dec_slice_axis(c, pd, 0, 2 * s->H, 1, s->H);
    }
    bool couple = dec_ai(c, "input_forget", 0) != 0;
    ValId xw = project_x(c, s, d, sum_bias(c, wb, rb));
    ValId h = init_state(c, s, s->h0, d), cs = init_state(c, s, s->c0, d);
    /* R^T once: made per step, each step's transpose folded into a constant of its
     * own (50 steps of H 128: 50 copies of 256 KiB in the bundle, each streamed from
     * DRAM by its step) */
    static const int64_t pt[2] = {1, 0};
    ValId rt = s->quant ? IR_NONE : dec_transpose(c, dir_part(c, s->r, d), pt);
    for (int64_t k = 0; xw != IR_NONE && k < s->T; k++) {
        int64_t t = step_time(s, d, k, rev);
        ValId live = live_mask(c, s, t);
        ValId hr = weight_product(c, s, d, h, true, rt);
        if (hr == IR_NONE)
            return false;
        ValId g = dec_bin(c, IR_BIN_ADD, step_of(c, s, xw, t), hr);
        ValId ig = act(c, s, d, 0, peep(c, gate(c, s, g, 0), pi, cs));
        ValId fg = couple ? dec_bin(c, IR_BIN_SUB, dec_scalar(c->g, s->dt, 1), ig)
                          : act(c, s, d, 0, peep(c, gate(c, s, g, 2), pf, cs));
        ValId cg = act(c, s, d, 1, gate(c, s, g, 3));
        ValId cn = dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, fg, cs), dec_bin(c, IR_BIN_MUL, ig, cg));
        ValId og = act(c, s, d, 0, peep(c, gate(c, s, g, 1), po, cn));
        ValId hn = dec_bin(c, IR_BIN_MUL, og, act(c, s, d, 2, cn));
        o->ys[t] = y_of(c, s, live, hn);
        h = keep(c, live, hn, h);
        cs = keep(c, live, cn, cs);
    }
    o->h = h;
    o->cst = cs;
    return xw != IR_NONE;
}

/* Per-direction result slots with room for T step outputs. */
static void alloc_dirs(DecCtx *c, const Rnn *s, RnnDirOut *dirs)
{
    for (int d = 0; d < s->D; d++) {
        dirs[d].ys = ir_scratch(c->g, sizeof(ValId) * (size_t)(s->T + 1));
        dirs[d].h = dirs[d].cst = IR_NONE;
    }
}

/* Refuse an empty sequence or batch (no step to unroll). */
static bool nonempty(DecCtx *c, const Rnn *s)
{
    if (s->T < 1 || s->B < 1) {
        dec_err(c, "unsupported: empty sequence or batch (seq_length %lld, batch %lld)",
                (long long)s->T, (long long)s->B);
        return false;
    }
    if (s->T * s->D > RNN_MAX_STEPS) {
        dec_err(c, "unsupported: %lld recurrent steps to unroll (at most %d)",
                (long long)(s->T * s->D), RNN_MAX_STEPS);
        return false;
    }
    return true;
}

bool dec_rnn(DecCtx *c)
{
    static const RnnActKind dflt[1] = {RA_TANH};
    Rnn s;
    if (!rnn_setup(c, &s, 1, dflt, 1, 5, -1, false) || !nonempty(c, &s))
        return false;
    RnnDirOut dirs[2];
    alloc_dirs(c, &s, dirs);
    for (int d = 0; d < s.D; d++)
        rnn_dir(c, &s, d, is_reverse(c), &dirs[d]);
    rnn_outputs(c, &s, dirs, false, c->out, dec_out_used(c, 0));
    return true;
}

bool dec_gru(DecCtx *c)
{
    static const RnnActKind dflt[2] = {RA_SIGMOID, RA_TANH};
    Rnn s;
    if (!rnn_setup(c, &s, 3, dflt, 2, 5, -1, false) || !nonempty(c, &s))
        return false;
    bool lbr = dec_ai(c, "linear_before_reset", 0) != 0;
    RnnDirOut dirs[2];
    alloc_dirs(c, &s, dirs);
    for (int d = 0; d < s.D; d++)
        gru_dir(c, &s, d, is_reverse(c), lbr, &dirs[d]);
    rnn_outputs(c, &s, dirs, false, c->out, dec_out_used(c, 0));
    return true;
}

/* LSTM or DynamicQuantizeLSTM (quant) once set up in s. */
static bool lstm_run(DecCtx *c, Rnn *s)
{
    ValId p = dec_in(c, 7);
    int64_t pd[2] = {s->D, 3 * s->H};
    if (p != IR_NONE && !check_dims(c, p, "P", 2, pd))
        return false;
    RnnDirOut dirs[2];
    alloc_dirs(c, s, dirs);
    for (int d = 0; d < s->D; d++)
        if (!lstm_dir(c, s, d, is_reverse(c), p, &dirs[d]))
            return false;
    rnn_outputs(c, s, dirs, true, c->out, dec_out_used(c, 0));
    return true;
}

bool dec_lstm(DecCtx *c)
{
    static const RnnActKind dflt[3] = {RA_SIGMOID, RA_TANH, RA_TANH};
    Rnn s;
    return rnn_setup(c, &s, 4, dflt, 3, 5, 6, false) && nonempty(c, &s) && lstm_run(c, &s);
}

/* Checks DynamicQuantizeLSTM's scale i and zero point i + 1 into *sv and *zv: [D], or
 * [D, cols] (per column), both of one shape, as onnxruntime reads them. */
static bool quant_param(DecCtx *c, const Rnn *s, int i, int64_t cols, ValId *sv, ValId *zv)
{
    *sv = dec_in(c, i);
    *zv = dec_in(c, i + 1);
    const IrType *t = dec_ty(c, *sv), *z = dec_ty(c, *zv);
    bool ok = t->rank >= 1 && t->rank <= 2 && t->dims[0] == s->D &&
              (t->rank == 1 || t->dims[1] == cols) && z->rank == t->rank;
    for (int k = 0; ok && k < t->rank; k++)
        ok = z->dims[k] == t->dims[k];
    if (!ok)
        dec_err(c, "%s and its zero point must both be [%lld] or both [%lld, %lld]",
                i == 8 ? "W_scale" : "R_scale", (long long)s->D, (long long)s->D,
                (long long)cols);
    return ok;
}

bool dec_dq_lstm(DecCtx *c)
{
    static const RnnActKind dflt[3] = {RA_SIGMOID, RA_TANH, RA_TANH};
    Rnn s;
    for (int i = 8; i < 12; i++)
        if (!dec_need_in(c, i))
            return false;
    if (!rnn_setup(c, &s, 4, dflt, 3, 5, 6, true) || !nonempty(c, &s))
        return false;
    if (s.sym) {
        dec_err(c, "unsupported: a quantized LSTM along a bounded dynamic sequence (X's "
                "quantization range would take in the padded steps); fix its length with "
                "--input-shape");
        return false;
    }
    int64_t g = s.G * s.H;
    return quant_param(c, &s, 8, g, &s.ws, &s.wz) && quant_param(c, &s, 10, g, &s.rs, &s.rz) &&
           lstm_run(c, &s);
}

/* See onnx.h: the Rnn of one layer with the default activations, unrolled. */
bool dec_rnn_layer(DecCtx *c, const DecRnnLayer *L, ValId out[3])
{
    static const RnnActKind lstm_act[3] = {RA_SIGMOID, RA_TANH, RA_TANH};
    static const RnnActKind gru_act[2] = {RA_SIGMOID, RA_TANH};
    const IrType *tx = dec_ty(c, L->x);
    Rnn s;
    memset(&s, 0, sizeof s);
    s.G = L->lstm ? 4 : 3;
    s.T = tx->dims[0], s.B = tx->dims[1], s.I = tx->dims[2], s.H = dec_ty(c, L->r)->dims[2];
    s.D = L->dirs;
    s.dt = tx->dtype;
    s.x = L->x, s.w = L->w, s.r = L->r, s.b = L->b, s.h0 = L->h0, s.c0 = L->c0;
    s.seqlen = IR_NONE;
    s.nact = L->lstm ? 3 : 2;
    for (int i = 0; i < s.nact * s.D; i++) {
        bool ta, tb;
        s.act[i].kind = L->lstm ? lstm_act[i % 3] : gru_act[i % 2];
        act_defaults(&s.act[i], &ta, &tb);
    }
    if (!nonempty(c, &s))
        return false;
    clip_to_actual(c, &s);
    RnnDirOut dirs[2];
    alloc_dirs(c, &s, dirs);
    for (int d = 0; d < s.D; d++) {
        if (L->lstm)
            lstm_dir(c, &s, d, false, IR_NONE, &dirs[d]);
        else
            gru_dir(c, &s, d, false, true, &dirs[d]);
    }
    rnn_outputs(c, &s, dirs, L->lstm, out, true);
    return true;
}
