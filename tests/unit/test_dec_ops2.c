/* test_dec_ops2.c: unit tests of the decompositions of recurrent, attention-like,
 * linear-algebra, text and quantized-contraction operators (passes/decompose/onnx/:
 * onnx_rnn.c, onnx_linear_attention.c, onnx_linalg.c, onnx_tfidf.c, onnx_qlinear.c).
 * Each test builds one ONNX node, decomposes it, evaluates the core graph node by node
 * with ir_eval_node and compares with a direct C reference of the ONNX semantics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "ir.h"
#include "pass.h"
#include "unit_util.h"

/* ---- fixture and helpers ---- */

/* Add a foreign ONNX node with nout outputs, all made graph outputs. */
static void onnx_node(IrGraph *g, const char *op, int64_t opset, const ValId *in, int nin, int nout,
                      const IrAttr *a, int na)
{
    NodeId id = ut_onnx_node(g, op, opset, in, nin, nout, a, na);
    for (int i = 0; i < nout; i++)
        ir_add_output(g, g->nodes[id].out[i]);
}

/* got within tol * (1 + |want[i]|) of the double-precision reference want. */
static void expect_close(const float *got, const double *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol * (1 + fabs(want[i])))) {
            fprintf(stderr, "  element %lld: got %.7g want %.7g\n", (long long)i, got[i], want[i]);
            fail();
        }
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
static double clipv(double x, double c) { return c > 0 ? fmin(fmax(x, -c), c) : x; }

/* ---- RNN / GRU / LSTM reference ---- */

typedef enum { K_RNN, K_GRU, K_LSTM } RnnKind;

typedef struct {
    RnnKind kind;
    int T, B, I, H, D, G;
    bool reverse, lbr, input_forget;
    double clip;
    const float *x, *w, *r, *bias, *p, *h0, *c0; /* x [T, B, I] (layout 0) */
    const int32_t *len;                           /* per batch entry, or NULL */
    double (*f_rnn[2])(double);                   /* RNN activation per direction */
    double *y, *yh, *yc;                          /* [T, D, B, H], [D, B, H] x2 */
} RefRnn;

static double d_tanh(double x) { return tanh(x); }
static double d_leaky(double x) { return x < 0 ? 0.1 * x : x; }

/* Pre-activation of gate row j (of gate gi) for input vector x and state h. */
static double pre(const RefRnn *s, int d, int gi, int j, const float *x, const double *h, bool with_rb)
{
    int GH = s->G * s->H, row = gi * s->H + j;
    double acc = 0;
    for (int i = 0; i < s->I; i++)
        acc += x[i] * s->w[((size_t)d * GH + row) * s->I + i];
    if (h)
        for (int k = 0; k < s->H; k++)
            acc += h[k] * s->r[((size_t)d * GH + row) * s->H + k];
    if (s->bias) {
        acc += s->bias[(size_t)d * 2 * GH + row];
        if (with_rb)
            acc += s->bias[(size_t)d * 2 * GH + GH + row];
    }
    return acc;
}

/* One step of batch entry b, direction d: h, c updated in place. */
static void ref_step(const RefRnn *s, int d, const float *x, double *h, double *c)
{
    int H = s->H;
    double hn[64], cn[64], rr[64], rh[64];
    for (int j = 0; j < H; j++) {
        if (s->kind == K_RNN) {
            hn[j] = s->f_rnn[d](clipv(pre(s, d, 0, j, x, h, true), s->clip));
        } else if (s->kind == K_LSTM) {
            const float *p = s->p ? s->p + (size_t)d * 3 * H : NULL;
            double ig = sigm(clipv(pre(s, d, 0, j, x, h, true) + (p ? p[j] * c[j] : 0), s->clip));
            double fg = s->input_forget ? 1 - ig
                                        : sigm(clipv(pre(s, d, 2, j, x, h, true) + (p ? p[2 * H + j] * c[j] : 0), s->clip));
            double cg = tanh(clipv(pre(s, d, 3, j, x, h, true), s->clip));
            cn[j] = fg * c[j] + ig * cg;
            double og = sigm(clipv(pre(s, d, 1, j, x, h, true) + (p ? p[H + j] * cn[j] : 0), s->clip));
            hn[j] = og * tanh(cn[j]);
        } else {
            rr[j] = sigm(clipv(pre(s, d, 1, j, x, h, true), s->clip));
        }
    }
    if (s->kind == K_GRU) {
        for (int j = 0; j < H; j++)
            rh[j] = rr[j] * h[j];
        for (int j = 0; j < H; j++) {
            double z = sigm(clipv(pre(s, d, 0, j, x, h, true), s->clip)), hp;
            if (s->lbr) {
                double rec = pre(s, d, 2, j, x, h, true) - pre(s, d, 2, j, x, NULL, true); /* h R^T + Rb */
                double rb = s->bias ? s->bias[(size_t)d * 6 * H + 3 * H + 2 * H + j] : 0;
                hp = pre(s, d, 2, j, x, NULL, false) + rr[j] * (rec + rb);
            } else {
                hp = pre(s, d, 2, j, x, rh, true);
            }
            double hh = tanh(clipv(hp, s->clip));
            hn[j] = (1 - z) * hh + z * h[j];
        }
    }
    memcpy(h, hn, sizeof(double) * (size_t)H);
    if (s->kind == K_LSTM)
        memcpy(c, cn, sizeof(double) * (size_t)H);
}

/* Full reference: fills y, yh, yc. */
static void ref_rnn(const RefRnn *s)
{
    int T = s->T, B = s->B, H = s->H, D = s->D;
    memset(s->y, 0, sizeof(double) * (size_t)(T * D * B * H));
    for (int d = 0; d < D; d++)
        for (int b = 0; b < B; b++) {
            double h[64], c[64];
            for (int j = 0; j < H; j++) {
                h[j] = s->h0 ? s->h0[(d * B + b) * H + j] : 0;
                c[j] = s->c0 ? s->c0[(d * B + b) * H + j] : 0;
            }
            int len = s->len ? s->len[b] : T;
            for (int k = 0; k < len; k++) {
                int t = (d == 1 || s->reverse) ? len - 1 - k : k;
                ref_step(s, d, s->x + ((size_t)t * B + b) * s->I, h, c);
                for (int j = 0; j < H; j++)
                    s->y[((t * D + d) * B + b) * H + j] = h[j];
            }
            for (int j = 0; j < H; j++) {
                s->yh[(d * B + b) * H + j] = h[j];
                if (s->yc)
                    s->yc[(d * B + b) * H + j] = c[j];
            }
        }
}

/* RNN, bidirectional, LeakyRelu forward / Tanh backward, bias, initial_h, constant
 * sequence_lens, clip. */
static void test_rnn_bidirectional(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { T = 4, B = 3, I = 2, H = 3, D = 2 };
    float x[T * B * I], w[D * H * I], r[D * H * H], bias[D * 2 * H], h0[D * B * H];
    int32_t len[B] = {4, 2, 0};
    ut_fill(x, T * B * I, 0.2f, 0.05f);
    ut_fill(w, D * H * I, 0.15f, 0);
    ut_fill(r, D * H * H, 0.1f, 0.02f);
    ut_fill(bias, D * 2 * H, 0.05f, 0);
    ut_fill(h0, D * B * H, 0.1f, -0.1f);
    int64_t xd[3] = {T, B, I}, wd[3] = {D, H, I}, rd[3] = {D, H, H}, bd[2] = {D, 2 * H};
    int64_t ld[1] = {B}, hd[3] = {D, B, H};
    ValId in[6] = {ut_input(g, "x", IR_DT_F32, 3, xd), ut_input(g, "w", IR_DT_F32, 3, wd),
                   ut_const(g, IR_DT_F32, 3, rd, r), ut_const(g, IR_DT_F32, 2, bd, bias),
                   ut_const(g, IR_DT_I32, 1, ld, len), ut_input(g, "h0", IR_DT_F32, 3, hd)};
    static const char *acts[2] = {"LeakyRelu", "Tanh"};
    double alpha[1] = {0.1};
    IrAttr a[5] = {ir_attr_str(g, "direction", "bidirectional"), ir_attr_int("hidden_size", H),
                   {.name = "activations", .kind = IR_ATTR_STRINGS, .strings = acts, .n = 2},
                   ir_attr_floats(g, "activation_alpha", alpha, 1), ir_attr_float("clip", 0.8)};
    onnx_node(g, "RNN", 22, in, 6, 2, a, 5);
    ut_decompose_ok(f);
    int64_t yd[4] = {T, D, B, H};
    ut_expect_shape(g, 0, 4, yd);
    ut_expect_shape(g, 1, 3, hd);
    double y[T * D * B * H], yh[D * B * H];
    RefRnn s = {.kind = K_RNN, .T = T, .B = B, .I = I, .H = H, .D = D, .G = 1, .clip = 0.8,
                .x = x, .w = w, .r = r, .bias = bias, .h0 = h0, .len = len,
                .f_rnn = {d_leaky, d_tanh}, .y = y, .yh = yh};
    ref_rnn(&s);
    const void *inputs[3] = {x, w, h0};
    expect_close(ut_run_graph(g, inputs, 0), y, T * D * B * H, 1e-5);
    expect_close(ut_run_graph(g, inputs, 1), yh, D * B * H, 1e-5);
}

/* GRU, reverse, layout 1, with bias; lbr selects linear_before_reset. */
static void gru_case(void **state, int lbr)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { T = 3, B = 2, I = 3, H = 4 };
    float x[B * T * I], xt[T * B * I], w[3 * H * I], r[3 * H * H], bias[6 * H];
    ut_fill(x, B * T * I, 0.2f, 0.1f);
    ut_fill(w, 3 * H * I, 0.12f, 0);
    ut_fill(r, 3 * H * H, 0.09f, 0.01f);
    ut_fill(bias, 6 * H, 0.07f, 0.02f);
    for (int t = 0; t < T; t++) /* layout 1 input [B, T, I] -> reference [T, B, I] */
        for (int b = 0; b < B; b++)
            memcpy(xt + (t * B + b) * I, x + (b * T + t) * I, sizeof(float) * I);
    int64_t xd[3] = {B, T, I}, wd[3] = {1, 3 * H, I}, rd[3] = {1, 3 * H, H}, bd[2] = {1, 6 * H};
    ValId in[4] = {ut_input(g, "x", IR_DT_F32, 3, xd), ut_const(g, IR_DT_F32, 3, wd, w),
                   ut_input(g, "r", IR_DT_F32, 3, rd), ut_const(g, IR_DT_F32, 2, bd, bias)};
    IrAttr a[4] = {ir_attr_str(g, "direction", "reverse"), ir_attr_int("hidden_size", H),
                   ir_attr_int("layout", 1), ir_attr_int("linear_before_reset", lbr)};
    onnx_node(g, "GRU", 22, in, 4, 2, a, 4);
    ut_decompose_ok(f);
    int64_t yd[4] = {B, T, 1, H}, hd[3] = {B, 1, H};
    ut_expect_shape(g, 0, 4, yd);
    ut_expect_shape(g, 1, 3, hd);
    double y[T * B * H], yh[B * H], y1[B * T * H];
    RefRnn s = {.kind = K_GRU, .T = T, .B = B, .I = I, .H = H, .D = 1, .G = 3, .reverse = true,
                .lbr = lbr, .x = xt, .w = w, .r = r, .bias = bias, .y = y, .yh = yh};
    ref_rnn(&s);
    for (int t = 0; t < T; t++) /* [T, 1, B, H] -> [B, T, 1, H] */
        for (int b = 0; b < B; b++)
            for (int j = 0; j < H; j++)
                y1[(b * T + t) * H + j] = y[(t * B + b) * H + j];
    const void *inputs[2] = {x, r};
    expect_close(ut_run_graph(g, inputs, 0), y1, B * T * H, 1e-5);
    expect_close(ut_run_graph(g, inputs, 1), yh, B * H, 1e-5);
}

static void test_gru_reverse_layout1(void **state) { gru_case(state, 0); }
static void test_gru_linear_before_reset(void **state) { gru_case(state, 1); }

/* Constants of g shaped [r, c]. */
static int consts_shaped(IrGraph *g, int64_t r, int64_t c)
{
    int n = 0;
    for (ValId v = 0; v < g->nvals; v++) {
        const IrValue *iv = ir_val(g, v);
        n += iv->kind == IR_VAL_CONST && iv->type.rank == 2 && iv->type.dims[0] == r &&
             iv->type.dims[1] == c;
    }
    return n;
}

/* LSTM, forward, peepholes, initial_h/c, dynamic sequence_lens; all three outputs. The
 * recurrent weight's transpose [H, 4H] is one constant for all steps (one per step
 * made a long sequence's bundle hold that many copies). */
static void lstm_case(void **state, int input_forget)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { T = 3, B = 2, I = 2, H = 3 };
    float x[T * B * I], w[4 * H * I], r[4 * H * H], bias[8 * H], p[3 * H], h0[B * H], c0[B * H];
    int32_t len[B] = {3, 2};
    ut_fill(x, T * B * I, 0.3f, 0.1f);
    ut_fill(w, 4 * H * I, 0.1f, 0);
    ut_fill(r, 4 * H * H, 0.08f, 0.01f);
    ut_fill(bias, 8 * H, 0.05f, 0);
    ut_fill(p, 3 * H, 0.2f, 0);
    ut_fill(h0, B * H, 0.1f, 0);
    ut_fill(c0, B * H, 0.15f, 0.05f);
    int64_t xd[3] = {T, B, I}, wd[3] = {1, 4 * H, I}, rd[3] = {1, 4 * H, H}, bd[2] = {1, 8 * H};
    int64_t ld[1] = {B}, hd[3] = {1, B, H}, pd[2] = {1, 3 * H};
    ValId in[8] = {ut_input(g, "x", IR_DT_F32, 3, xd), ut_const(g, IR_DT_F32, 3, wd, w),
                   ut_const(g, IR_DT_F32, 3, rd, r), ut_const(g, IR_DT_F32, 2, bd, bias),
                   ut_input(g, "len", IR_DT_I32, 1, ld), ut_const(g, IR_DT_F32, 3, hd, h0),
                   ut_const(g, IR_DT_F32, 3, hd, c0), ut_const(g, IR_DT_F32, 2, pd, p)};
    IrAttr a[2] = {ir_attr_int("hidden_size", H), ir_attr_int("input_forget", input_forget)};
    onnx_node(g, "LSTM", 22, in, 8, 3, a, 2);
    ut_decompose_ok(f);
    assert_int_equal(consts_shaped(g, H, 4 * H), 1);
    double y[T * B * H], yh[B * H], yc[B * H];
    RefRnn s = {.kind = K_LSTM, .T = T, .B = B, .I = I, .H = H, .D = 1, .G = 4,
                .input_forget = input_forget, .x = x, .w = w, .r = r, .bias = bias, .p = p,
                .h0 = h0, .c0 = c0, .len = len, .y = y, .yh = yh, .yc = yc};
    ref_rnn(&s);
    const void *inputs[2] = {x, len};
    expect_close(ut_run_graph(g, inputs, 0), y, T * B * H, 1e-5);
    expect_close(ut_run_graph(g, inputs, 1), yh, B * H, 1e-5);
    expect_close(ut_run_graph(g, inputs, 2), yc, B * H, 1e-5);
}

static void test_lstm_peepholes_seqlen(void **state) { lstm_case(state, 0); }
static void test_lstm_input_forget(void **state) { lstm_case(state, 1); }

/* Bad attributes are reported, not asserted on. */
static void test_rnn_bad_hidden_size(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[3] = {2, 1, 2}, wd[3] = {1, 4, 2}, rd[3] = {1, 4, 4};
    ValId in[3] = {ut_input(g, "x", IR_DT_F32, 3, xd), ut_input(g, "w", IR_DT_F32, 3, wd),
                   ut_input(g, "r", IR_DT_F32, 3, rd)};
    IrAttr a[1] = {ir_attr_int("hidden_size", 5)};
    onnx_node(g, "RNN", 22, in, 3, 1, a, 1);
    assert_false(pass_decompose(g, &f->opt));
    assert_true(f->d.nerrors > 0);
    assert_non_null(strstr(f->d.msgs[0], "hidden_size"));
}

/* ---- LinearAttention ---- */

/* Reference recurrence (q [B,T,Hq*dk], k [B,T,Hkv*dk], v [B,T,Hkv*dv]). */
static void ref_linattn(int B, int T, int hq, int hkv, int dk, int dv, const float *q, const float *k,
                        const float *v, const float *decay, int dn, const float *beta, int bh,
                        double scale, double *out, double *st)
{
    int G = hq / hkv;
    memset(st, 0, sizeof(double) * (size_t)(B * hkv * dk * dv));
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < hkv; h++) {
                double *S = st + (size_t)(b * hkv + h) * dk * dv;
                const float *kt = k + ((size_t)(b * T + t) * hkv + h) * dk;
                const float *vt = v + ((size_t)(b * T + t) * hkv + h) * dv;
                double vv[64];
                for (int i = 0; decay && i < dk; i++)
                    for (int m = 0; m < dv; m++)
                        S[i * dv + m] *= exp(decay[((size_t)(b * T + t) * hkv + h) * dn + (dn == 1 ? 0 : i)]);
                for (int m = 0; m < dv; m++) {
                    vv[m] = vt[m];
                    if (beta) {
                        double got = 0;
                        for (int i = 0; i < dk; i++)
                            got += S[i * dv + m] * kt[i];
                        vv[m] = beta[(size_t)(b * T + t) * bh + (bh == 1 ? 0 : h)] * (vt[m] - got);
                    }
                }
                for (int i = 0; i < dk; i++)
                    for (int m = 0; m < dv; m++)
                        S[i * dv + m] += kt[i] * vv[m];
                for (int gq = 0; gq < G; gq++) {
                    int qh = h * G + gq;
                    const float *qt = q + ((size_t)(b * T + t) * hq + qh) * dk;
                    for (int m = 0; m < dv; m++) {
                        double o = 0;
                        for (int i = 0; i < dk; i++)
                            o += qt[i] * S[i * dv + m];
                        out[((size_t)(b * T + t) * hq + qh) * dv + m] = scale * o;
                    }
                }
            }
}

/* gated_delta with grouped-query heads, per-key decay, per-head beta. */
static void test_linear_attention_gated_delta_gqa(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { B = 2, T = 3, HQ = 4, HKV = 2, DK = 3, DV = 2 };
    float q[B * T * HQ * DK], k[B * T * HKV * DK], v[B * T * HKV * DV], dc[B * T * HKV * DK], be[B * T * HKV];
    ut_fill(q, B * T * HQ * DK, 0.1f, 0.05f);
    ut_fill(k, B * T * HKV * DK, 0.08f, 0);
    ut_fill(v, B * T * HKV * DV, 0.2f, 0.1f);
    ut_fill(dc, B * T * HKV * DK, 0.03f, -0.2f);
    ut_fill(be, B * T * HKV, 0.02f, 0.5f);
    int64_t qd[3] = {B, T, HQ * DK}, kd[3] = {B, T, HKV * DK}, vd[3] = {B, T, HKV * DV}, bd[3] = {B, T, HKV};
    ValId in[6] = {ut_input(g, "q", IR_DT_F32, 3, qd), ut_input(g, "k", IR_DT_F32, 3, kd),
                   ut_input(g, "v", IR_DT_F32, 3, vd), IR_NONE, ut_input(g, "d", IR_DT_F32, 3, kd),
                   ut_input(g, "b", IR_DT_F32, 3, bd)};
    IrAttr a[2] = {ir_attr_int("q_num_heads", HQ), ir_attr_int("kv_num_heads", HKV)};
    onnx_node(g, "LinearAttention", 27, in, 6, 2, a, 2);
    ut_decompose_ok(f);
    int64_t sd[4] = {B, HKV, DK, DV}, od[3] = {B, T, HQ * DV};
    ut_expect_shape(g, 0, 3, od);
    ut_expect_shape(g, 1, 4, sd);
    double out[B * T * HQ * DV], st[B * HKV * DK * DV];
    ref_linattn(B, T, HQ, HKV, DK, DV, q, k, v, dc, DK, be, HKV, 1 / sqrt(DK), out, st);
    const void *inputs[5] = {q, k, v, dc, be};
    expect_close(ut_run_graph(g, inputs, 0), out, B * T * HQ * DV, 1e-5);
    expect_close(ut_run_graph(g, inputs, 1), st, B * HKV * DK * DV, 1e-5);
}

/* linear rule with a past state and an explicit scale. */
static void test_linear_attention_linear_past(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { B = 1, T = 2, H = 2, DK = 2, DV = 3 };
    float q[B * T * H * DK], k[B * T * H * DK], v[B * T * H * DV], past[B * H * DK * DV];
    ut_fill(q, B * T * H * DK, 0.1f, 0);
    ut_fill(k, B * T * H * DK, 0.2f, 0.1f);
    ut_fill(v, B * T * H * DV, 0.1f, 0.2f);
    ut_fill(past, B * H * DK * DV, 0.05f, 0);
    int64_t qd[3] = {B, T, H * DK}, vd[3] = {B, T, H * DV}, sd[4] = {B, H, DK, DV};
    ValId in[4] = {ut_input(g, "q", IR_DT_F32, 3, qd), ut_input(g, "k", IR_DT_F32, 3, qd),
                   ut_input(g, "v", IR_DT_F32, 3, vd), ut_input(g, "s", IR_DT_F32, 4, sd)};
    IrAttr a[4] = {ir_attr_int("q_num_heads", H), ir_attr_int("kv_num_heads", H),
                   ir_attr_str(g, "update_rule", "linear"), ir_attr_float("scale", 0.5)};
    onnx_node(g, "LinearAttention", 27, in, 4, 2, a, 4);
    ut_decompose_ok(f);
    /* reference with the past folded in: run with zero state, then add q.past terms */
    double out[B * T * H * DV], st[B * H * DK * DV];
    ref_linattn(B, T, H, H, DK, DV, q, k, v, NULL, 1, NULL, 1, 0.5, out, st);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int m = 0; m < DV; m++) {
                double add = 0;
                for (int i = 0; i < DK; i++)
                    add += q[(t * H + h) * DK + i] * past[(h * DK + i) * DV + m];
                out[(t * H + h) * DV + m] += 0.5 * add;
            }
    for (int i = 0; i < B * H * DK * DV; i++)
        st[i] += past[i];
    const void *inputs[4] = {q, k, v, past};
    expect_close(ut_run_graph(g, inputs, 0), out, B * T * H * DV, 1e-5);
    expect_close(ut_run_graph(g, inputs, 1), st, B * H * DK * DV, 1e-5);
}

/* A rule that needs decay without it is refused with a message. */
static void test_linear_attention_missing_decay(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t qd[3] = {1, 2, 4};
    ValId in[3] = {ut_input(g, "q", IR_DT_F32, 3, qd), ut_input(g, "k", IR_DT_F32, 3, qd),
                   ut_input(g, "v", IR_DT_F32, 3, qd)};
    IrAttr a[3] = {ir_attr_int("q_num_heads", 2), ir_attr_int("kv_num_heads", 2),
                   ir_attr_str(g, "update_rule", "gated")};
    onnx_node(g, "LinearAttention", 27, in, 3, 2, a, 3);
    assert_false(pass_decompose(g, &f->opt));
    assert_non_null(strstr(f->d.msgs[0], "decay"));
}

/* ---- CausalConvWithState ---- */

static void causal_case(void **state, int k, bool past_bias_silu)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { B = 2, C = 3, L = 4 };
    float x[B * C * L], w[C * 8], bias[C], past[B * C * 8];
    ut_fill(x, B * C * L, 0.2f, 0.1f);
    ut_fill(w, C * k, 0.3f, 0);
    ut_fill(bias, C, 0.1f, 0);
    ut_fill(past, B * C * (k - 1), 0.15f, 0.05f);
    int64_t xd[3] = {B, C, L}, wd[3] = {C, 1, k}, bd[1] = {C}, pd[3] = {B, C, k - 1};
    ValId in[4] = {ut_input(g, "x", IR_DT_F32, 3, xd), ut_const(g, IR_DT_F32, 3, wd, w),
                   past_bias_silu ? ut_const(g, IR_DT_F32, 1, bd, bias) : IR_NONE,
                   past_bias_silu ? ut_input(g, "p", IR_DT_F32, 3, pd) : IR_NONE};
    IrAttr a[1] = {ir_attr_str(g, "activation", past_bias_silu ? "silu" : "none")};
    onnx_node(g, "CausalConvWithState", 27, in, 4, 2, a, 1);
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 3, xd);
    ut_expect_shape(g, 1, 3, pd);
    double y[B * C * L], st[B * C * 8], padded[B * C * 16];
    int P = L + k - 1;
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            for (int i = 0; i < P; i++)
                padded[(b * C + c) * P + i] = i < k - 1 ? (past_bias_silu ? past[(b * C + c) * (k - 1) + i] : 0)
                                                        : x[(b * C + c) * L + i - (k - 1)];
            for (int t = 0; t < L; t++) {
                double acc = past_bias_silu ? bias[c] : 0;
                for (int j = 0; j < k; j++)
                    acc += padded[(b * C + c) * P + t + j] * w[c * k + j];
                y[(b * C + c) * L + t] = past_bias_silu ? acc * sigm(acc) : acc;
            }
            for (int i = 0; i < k - 1; i++)
                st[(b * C + c) * (k - 1) + i] = padded[(b * C + c) * P + L + i];
        }
    const void *inputs[2] = {x, past};
    expect_close(ut_run_graph(g, inputs, 0), y, B * C * L, 1e-5);
    if (k > 1)
        expect_close(ut_run_graph(g, inputs, 1), st, B * C * (k - 1), 0);
}

static void test_causal_conv_past_bias_silu(void **state) { causal_case(state, 3, true); }
static void test_causal_conv_no_state(void **state) { causal_case(state, 5, false); }

/* ---- Det ---- */

static void test_det_pivoting_and_singular(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    /* first needs a row swap (zero leading entry); second is singular; third random */
    float x[3 * 9] = {0, 1, 2, 3, 4, 5, 6, 7, 9,
                      1, 2, 3, 2, 4, 6, 1, 0, 1,
                      0.5f, -1.25f, 2, 3, 0.75f, -1, -2, 1.5f, 0.25f};
    int64_t xd[3] = {3, 3, 3}, od[1] = {3};
    ValId in = ut_input(g, "x", IR_DT_F32, 3, xd);
    onnx_node(g, "Det", 22, &in, 1, 1, NULL, 0);
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 1, od);
    double want[3];
    for (int m = 0; m < 3; m++) {
        const float *a = x + 9 * m;
        want[m] = (double)a[0] * (a[4] * a[8] - a[5] * a[7]) - (double)a[1] * (a[3] * a[8] - a[5] * a[6]) +
                  (double)a[2] * (a[3] * a[7] - a[4] * a[6]);
    }
    const void *inputs[1] = {x};
    const float *got = ut_run_graph(g, inputs, 0);
    expect_close(got, want, 3, 1e-5);
    assert_false(isnan(got[1]));
}

/* ---- TfIdfVectorizer ---- */

static void test_tfidf_skip_bigrams(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    /* pool: unigrams {2, 3}, bigrams {(5, 6), (2, 5)}; outputs in a permuted order */
    int32_t x[2 * 6] = {2, 5, 6, 2, 3, 6, 5, 2, 5, 6, 5, 6};
    int64_t counts[2] = {0, 2}, idx[4] = {3, 0, 1, 2}, pool[6] = {2, 3, 5, 6, 2, 5};
    int64_t xd[2] = {2, 6}, od[2] = {2, 4};
    ValId in = ut_input(g, "x", IR_DT_I32, 2, xd);
    double wts[4] = {0.5, 1, 2, 4};
    IrAttr a[8] = {ir_attr_int("min_gram_length", 1), ir_attr_int("max_gram_length", 2),
                   ir_attr_int("max_skip_count", 1), ir_attr_ints(g, "ngram_counts", counts, 2),
                   ir_attr_ints(g, "ngram_indexes", idx, 4), ir_attr_ints(g, "pool_int64s", pool, 6),
                   ir_attr_str(g, "mode", "TFIDF"), ir_attr_floats(g, "weights", wts, 4)};
    onnx_node(g, "TfIdfVectorizer", 9, &in, 1, 1, a, 8);
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 2, od);
    double want[8] = {0};
    for (int b = 0; b < 2; b++) {
        const int32_t *r = x + 6 * b;
        for (int i = 0; i < 6; i++) {
            want[b * 4 + 3] += r[i] == 2;
            want[b * 4 + 0] += r[i] == 3;
        }
        for (int d = 1; d <= 2; d++)
            for (int i = 0; i + d < 6; i++) {
                want[b * 4 + 1] += r[i] == 5 && r[i + d] == 6;
                want[b * 4 + 2] += r[i] == 2 && r[i + d] == 5;
            }
        for (int j = 0; j < 4; j++)
            want[b * 4 + j] *= wts[j];
    }
    const void *inputs[1] = {x};
    expect_close(ut_run_graph(g, inputs, 0), want, 8, 0);
}

/* ---- integer and quantized contractions ---- */

/* K = 300 terms of ~255*255 exceed 2^24: the result must still be exact. */
static void test_matmul_integer_exact(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { M = 2, K = 300, N = 3 };
    uint8_t a[M * K], b[K * N], za[1] = {1}, zb[N] = {0, 3, 250};
    for (int i = 0; i < M * K; i++)
        a[i] = (uint8_t)(255 - i % 7);
    for (int i = 0; i < K * N; i++)
        b[i] = (uint8_t)(255 - (i * 5) % 11);
    int64_t ad[2] = {M, K}, bd[2] = {K, N}, zad[1] = {1}, zbd[1] = {N}, od[2] = {M, N};
    ValId in[4] = {ut_input(g, "a", IR_DT_U8, 2, ad), ut_input(g, "b", IR_DT_U8, 2, bd),
                   ut_const(g, IR_DT_U8, 1, zad, za), ut_const(g, IR_DT_U8, 1, zbd, zb)};
    onnx_node(g, "MatMulInteger", 10, in, 4, 1, NULL, 0);
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 2, od);
    assert_int_equal(ir_vtype(g, g->outputs[0])->dtype, IR_DT_I32);
    const void *inputs[2] = {a, b};
    const int32_t *got = ut_run_graph(g, inputs, 0);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int64_t acc = 0;
            for (int k = 0; k < K; k++)
                acc += (int64_t)(a[i * K + k] - za[0]) * (b[k * N + j] - zb[j]);
            assert_int_equal(got[i * N + j], acc);
        }
}

static void test_qlinear_matmul(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { M = 2, K = 4, N = 3 };
    int8_t a[M * K] = {-128, 5, 17, 127, 0, -3, 64, -64}, b[K * N] = {1, -2, 3, 4, 5, -6, 7, -8, 9, 10, 11, -128};
    float sa = 0.05f, sb = 0.02f, sy = 0.01f;
    int8_t za = 3, zb = -1, zy = 10;
    int64_t ad[2] = {M, K}, bd[2] = {K, N}, od[2] = {M, N};
    ValId in[8] = {ut_input(g, "a", IR_DT_I8, 2, ad), ut_const(g, IR_DT_F32, 0, NULL, &sa),
                   ut_const(g, IR_DT_I8, 0, NULL, &za), ut_input(g, "b", IR_DT_I8, 2, bd),
                   ut_const(g, IR_DT_F32, 0, NULL, &sb), ut_const(g, IR_DT_I8, 0, NULL, &zb),
                   ut_const(g, IR_DT_F32, 0, NULL, &sy), ut_const(g, IR_DT_I8, 0, NULL, &zy)};
    onnx_node(g, "QLinearMatMul", 21, in, 8, 1, NULL, 0);
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 2, od);
    const void *inputs[2] = {a, b};
    const int8_t *got = ut_run_graph(g, inputs, 0);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int32_t acc = 0;
            for (int k = 0; k < K; k++)
                acc += (a[i * K + k] - za) * (b[k * N + j] - zb);
            double y = nearbyint((double)acc * (double)(sa * sb / sy)) + zy;
            assert_int_equal(got[i * N + j], (int)fmin(fmax(y, -128), 127));
        }
}

/* 40 channels x 3x3 = 360 products per output: chunked over input channels. */
static void test_conv_integer_chunked(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { C = 40, H = 4, W = 4, M = 2, KH = 3, OH = 4, OW = 4 };
    int8_t x[C * H * W], w[M * C * KH * KH], zx = -5;
    for (int i = 0; i < C * H * W; i++)
        x[i] = (int8_t)(i % 2 ? 127 : -128 + i % 3);
    for (int i = 0; i < M * C * KH * KH; i++)
        w[i] = (int8_t)(i % 5 ? -128 : 127);
    int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C, KH, KH}, od[4] = {1, M, OH, OW}, pads[4] = {1, 1, 1, 1};
    ValId in[3] = {ut_input(g, "x", IR_DT_I8, 4, xd), ut_const(g, IR_DT_I8, 4, wd, w),
                   ut_const(g, IR_DT_I8, 0, NULL, &zx)};
    IrAttr a[1] = {ir_attr_ints(g, "pads", pads, 4)};
    onnx_node(g, "ConvInteger", 10, in, 3, 1, a, 1);
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 4, od);
    const void *inputs[1] = {x};
    const int32_t *got = ut_run_graph(g, inputs, 0);
    for (int m = 0; m < M; m++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                int64_t acc = 0;
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < KH; i++)
                        for (int j = 0; j < KH; j++) {
                            int ih = oh + i - 1, iw = ow + j - 1;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                continue;
                            acc += (int64_t)(x[(c * H + ih) * W + iw] - zx) * w[((m * C + c) * KH + i) * KH + j];
                        }
                assert_int_equal(got[(m * OH + oh) * OW + ow], acc);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rnn_bidirectional, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_gru_reverse_layout1, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_gru_linear_before_reset, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_lstm_peepholes_seqlen, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_lstm_input_forget, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_rnn_bad_hidden_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_linear_attention_gated_delta_gqa, ut_setup,
                                        ut_teardown),
        cmocka_unit_test_setup_teardown(test_linear_attention_linear_past, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_linear_attention_missing_decay, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_causal_conv_past_bias_silu, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_causal_conv_no_state, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_det_pivoting_and_singular, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_tfidf_skip_bigrams, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_matmul_integer_exact, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_qlinear_matmul, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_conv_integer_chunked, ut_setup, ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
