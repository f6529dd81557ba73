/* fp8.c: the fp8 precision mode (spyrec --precision=fp8).
 *
 * In fp8 mode the model is compiled as in fp16 mode (passes/fp16.c: activations and
 * other float tensors are DLFloat16), and then every matrix product whose B operand is
 * a constant weight (MATMUL of DLFloat16 operands with a constant B of rank >= 2) reads
 * that weight as float8 e4m3 (F8E4M3FN: the OCP format, no infinities, saturating at
 * 448) with one scale per output channel (column n of B, the last axis):
 *
 *   scale[n] = max_k |B[k, n]| / 448      (1 for an all-zero column)
 *   B8[k, n] = e4m3(B[k, n] / scale[n])   (round to nearest even, saturated)
 *   y        = MATMUL(a, B8) * scale      (an F32 multiply of the F32 product, before
 *                                          the product's rounding to DLFloat16)
 *
 * The card's matrix unit reads the e4m3 weight directly (isa.md MATMUL, flag BF8: the
 * weight bytes are half those of DLFloat16 and the product runs at the int8/fp8 rate);
 * the scale is an ordinary F32 multiply that fusion puts into the product's epilogue.
 * The pass runs after the fp16 pass, so B is already DLFloat16 (rounded once from the
 * model's float32; the e4m3 grid is much coarser, so this second rounding changes at
 * most an exact tie). Products of activations (attention's scores and values),
 * convolutions and weights read through a view stay DLFloat16. --keep-fp32 nodes
 * compute in float32 and are not touched (their B is float32).
 * With --calibrate (PassOptions.fp8cal: the mean of each product's data input over the
 * calibration set), the product's systematic error, the mean input times the weight's
 * rounding error, is added back (bias correction, as in Nagel et al., "Data-Free
 * Quantization", 2019, with measured means):
 *
 *   y = MATMUL(a, B8) * scale + c,   c[n] = sum_k mean(a)[k] (B[k, n] - scale[n] B8[k, n])
 *
 * one more F32 epilogue operation. Rounding to nearest leaves each product a random
 * error of about 2.6% of its weights' norm; that part of it which the same input
 * components (LLMs' large, nearly constant activation channels) give every token is
 * what the correction removes. It is shrunk by the sampling noise of the means
 * (correction()), so that a model without such components gets none.
 * With --calibrate the weights are also rounded with GPTQ (passes/fp8_gptq.c, unless
 * --calibrate-method=bias) where the calibration measured the input second moments
 * H = sum x x^T (inputs of K <= 4096; shrunk towards I where the calibration rows are
 * too few to measure it): the scales stay those above, and each row of B
 * is rounded after the rounding errors of the rows before it were fed back, so that
 * the product's error over the calibration inputs is small, not each weight's. Its
 * mean error is then small too, and the bias correction, computed from the GPTQ codes,
 * is mostly shrunk to nothing (gpt2_124m: 1 of its 48 products keeps one).
 * With any other precision the pass does nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtconv.h"
#include "fp8_gptq.h"
#include "pass.h"

/* float32 -> F8E4M3FN, round to nearest even, saturating: spy_f32_to_narrow's result
 * (checked equal on all 2^32 inputs) by bit arithmetic, which the weights of a 1B-
 * parameter model need (the generic conversion took 20 s there). */
static uint8_t f32_to_e4m3(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    uint8_t sign = (uint8_t)((b >> 24) & 0x80);
    uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7f;                        /* NaN */
    if (a >= 0x43e00000u)                          /* >= 448 (and infinity): saturate */
        return sign | 0x7e;
    if (a < 0x3c800000u) {                         /* below 2^-6: subnormal steps of 2^-9 */
        float f;
        memcpy(&f, &a, 4);
        return sign | (uint8_t)nearbyintf(f * 512.0f);
    }
    uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);  /* round the mantissa to 3 bits, even */
    uint32_t e = (r >> 23) - 120u, m = (r >> 20) & 7u, code = (e << 3) | m;
    return sign | (uint8_t)(code > 0x7e ? 0x7e : code);
}

/* The bias correction of b [K, N] quantized to q with scales s: c[n] = f sum_k
 * mean[k] (b[k, n] - s[n] q[k, n]), the F32 constant [N], or IR_NONE when f is 0. f
 * shrinks the estimate by its noise: with e = sum_n sum_k var[k] err[k, n]^2 (the
 * expected square norm that the means' sampling error puts into c) and t = |c|^2,
 * f = max(0, 1 - e / t) (James-Stein): a correction hardly above its noise (a model
 * whose inputs have no systematic part) is left out rather than adding noise. */
static ValId correction(IrGraph *g, const uint16_t *b, const uint8_t *q, const float *s,
                        const PassFp8Mean *m, int64_t N)
{
    double *acc = ir_scratch(g, (size_t)N * sizeof *acc), e = 0, t = 0;
    float *c = ir_scratch(g, (size_t)N * sizeof *c);
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = spy_narrow_to_f32((uint8_t)v, IR_DT_F8E4M3FN);
    for (int64_t k = 0; k < m->k; k++) {
        const uint16_t *bk = b + k * N;
        const uint8_t *qk = q + k * N;
        double mk = m->mean[k], vk = m->var[k];
        for (int64_t j = 0; j < N; j++) {
            double d = (double)spy_dlf16_to_f32(bk[j]) - (double)s[j] * lut[qk[j]];
            acc[j] += mk * d;
            e += vk * d * d;
        }
    }
    for (int64_t j = 0; j < N; j++)
        t += acc[j] * acc[j];
    double f = t > 0 ? 1 - e / t : 0;
    if (!(f > 0))
        return IR_NONE;
    for (int64_t j = 0; j < N; j++)
        c[j] = (float)(f * acc[j]);
    IrType tc = {.dtype = IR_DT_F32, .rank = 1, .dims = {N}};
    return ir_add_const(g, ir_fresh_name(g, "fp8_bias"), &tc, c);
}

/* The calibration's input means for weight b (a rank-2 [K, N] constant), or NULL. */
static const PassFp8Mean *find_mean(IrGraph *g, const PassOptions *opt, ValId b)
{
    const IrType *tb = ir_vtype(g, b);
    if (!opt->fp8cal || tb->rank != 2)
        return NULL;
    const char *name = ir_val(g, b)->name;
    for (uint32_t i = 0; name && i < opt->fp8cal->nw; i++)
        if (strcmp(opt->fp8cal->w[i].name, name) == 0 && opt->fp8cal->w[i].k == tb->dims[0])
            return &opt->fp8cal->w[i];
    return NULL;
}

/* GPTQ rounding of the DLFloat16 weight x [K, N] (m->k = K) with scales s into q, for
 * the input second moments m->h; false (q untouched) when H is unusable or memory
 * is short, and the caller rounds to nearest. */
static bool gptq_b(const uint16_t *x, int64_t N, const float *s, const PassFp8Mean *m,
                   uint8_t *q)
{
    int64_t K = m->k;
    float *w = malloc((size_t)(K * N + 1) * sizeof *w), *c = malloc((size_t)(K * K + 1) * sizeof *c);
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = spy_narrow_to_f32((uint8_t)v, IR_DT_F8E4M3FN);
    bool ok = w && c;
    for (int64_t i = 0; ok && i < K * N; i++)
        w[i] = spy_dlf16_to_f32(x[i]);
    ok = ok && gptq_coefficients(m->h, K, m->shrink, c) && gptq_round(w, K, N, s, c, f32_to_e4m3, lut, q);
    free(w);
    free(c);
    return ok;
}

/* The e4m3 weight and per-column scales of the DLFloat16 constant b [..., K, N]; the
 * new weight value, the scale vector [N] (F32) in *scale, and with input means m the
 * bias correction [N] (F32) in *corr (else IR_NONE); *gptq tells whether the weight
 * was rounded with GPTQ (m has H) rather than to nearest. */
static ValId quant_b(IrGraph *g, ValId b, const PassFp8Mean *m, ValId *scale, ValId *corr,
                     bool *gptq)
{
    const IrType *tb = ir_vtype(g, b);
    int64_t N = tb->dims[tb->rank - 1], n = ir_type_numel(tb);
    const uint16_t *x = ir_val(g, b)->data;
    float *s = ir_scratch(g, (size_t)N * sizeof *s);
    uint8_t *q = calloc((size_t)(n > 0 ? n : 1), 1);   /* copied by ir_add_const: freed
                                                          here, not held with the others
                                                          to the pass's end */
    if (!q)
        ir_oom(g);
    for (int64_t i = 0, j = 0; i < n; i++, j = j + 1 == N ? 0 : j + 1) {
        float v = fabsf(spy_dlf16_to_f32(x[i]));
        if (isfinite(v) && v > s[j])
            s[j] = v;
    }
    for (int64_t j = 0; j < N; j++)
        s[j] = s[j] > 0 ? s[j] / 448.0f : 1.0f;
    *gptq = m && m->h && tb->rank == 2 && gptq_b(x, N, s, m, q);
    for (int64_t i = 0, j = 0; !*gptq && i < n; i++, j = j + 1 == N ? 0 : j + 1)
        q[i] = f32_to_e4m3(spy_dlf16_to_f32(x[i]) / s[j]);
    IrType tq = *tb, ts = {.dtype = IR_DT_F32, .rank = 1, .dims = {N}};
    tq.dtype = IR_DT_F8E4M3FN;
    char nm[256];
    snprintf(nm, sizeof nm, "%s_fp8", ir_val(g, b)->name);
    *scale = ir_add_const(g, ir_fresh_name(g, "fp8_scale"), &ts, s);
    *corr = m ? correction(g, x, q, s, m, N) : IR_NONE;
    ValId c = ir_add_const(g, ir_fresh_name(g, nm), &tq, q);
    free(q);
    return c;
}

/* Whether the DLFloat16 constant b [K, N] is a signed permutation (one +-1 in every row
 * and column, zeros elsewhere: passes/rotary.c's rotate-half matrix). Its product is
 * exact in DLFloat16; an fp8 copy would add a rounded scale and save nothing. */
static bool signed_perm(IrGraph *g, ValId b)
{
    const IrType *t = ir_vtype(g, b);
    const uint16_t *x = ir_val(g, b)->data;
    int64_t k = t->dims[0], n = t->dims[1];
    if (t->rank != 2 || k != n || !x || n > 4096)
        return false;
    uint16_t one = spy_f32_to_dlf16(1.0f);
    int64_t nz = 0;
    uint8_t *col = ir_scratch(g, (size_t)n);
    for (int64_t i = 0; i < k; i++) {
        int64_t row = 0;
        for (int64_t j = 0; j < n; j++) {
            uint16_t v = (uint16_t)(x[i * n + j] & 0x7FFF);
            if (v == 0)
                continue;
            if (v != one || col[j]++ || row++)
                return false;
            nz++;
        }
    }
    return nz == n;
}

/* Whether n is a MATMUL of DLFloat16 operands whose B is a constant (not a signed
 * permutation). */
static bool fp8_candidate(IrGraph *g, const IrNode *n)
{
    if (n->op != IR_OP_MATMUL || n->dead)
        return false;
    return ir_vtype(g, n->in[0])->dtype == IR_DT_DLF16 && ir_is_const(g, n->in[1]) &&
           ir_vtype(g, n->in[1])->dtype == IR_DT_DLF16 && ir_vtype(g, n->in[1])->rank >= 2 &&
           !signed_perm(g, n->in[1]);
}

/* The DLFloat16 weight b, just quantized for one of its readers, is given back once no
 * reader is left (uses: its readers not yet rewritten; free: the graph allows it). The
 * fp16 pass made a DLFloat16 copy of every weight, twice the bytes of its fp8 one:
 * kept to the end, llama_1b's compile held both (4.2 GiB besides the mapped weights). */
static void drop_b(IrGraph *g, uint32_t *uses, bool free_ok, ValId b)
{
    if (free_ok && --uses[b] == 0)
        ir_const_free(g, b);
}

bool pass_fp8(IrGraph *g, const PassOptions *opt)
{
    if (opt->precision != PASS_PREC_FP8)
        return true;
    uint32_t nold, *uses = ir_use_counts(g);
    bool free_ok = !ir_has_subgraphs(g);
    IrNode *old = ir_rewrite_begin(g, &nold);
    for (uint32_t i = 0; i < nold; i++) {
        const IrNode *n = &old[i];
        if (n->dead)
            continue;
        if (!fp8_candidate(g, n)) {
            ir_readd_node(g, n);
            continue;
        }
        const PassFp8Mean *m = find_mean(g, opt, n->in[1]);
        bool gptq;
        ValId scale, corr, in[2] = {n->in[0], quant_b(g, n->in[1], m, &scale, &corr, &gptq)};
        NodeId id = ir_add_node(g, IR_OP_MATMUL, in, 2, n->attrs, n->nattrs, &n->origin);
        if (ir_failed(g))
            return false;
        ValId y = ir_binary(g, IR_BIN_MUL, g->nodes[id].out[0], scale, &n->origin);
        if (corr != IR_NONE) {
            y = ir_binary(g, IR_BIN_ADD, y, corr, &n->origin);
            opt->fp8cal->ncorrected++;
        }
        if (gptq)
            opt->fp8cal->ngptq++;
        drop_b(g, uses, free_ok, n->in[1]);
        const char *name = ir_val(g, n->out[0])->name;
        ir_replace_uses(g, n->out[0], y);
        if (strcmp(ir_val(g, y)->name, name) != 0) { /* the product keeps the model's name */
            ir_set_name(g, n->out[0], ir_fresh_name(g, "fp16"));
            ir_set_name(g, y, name);
        }
    }
    return !ir_failed(g);
}

uint32_t pass_fp8_observe(IrGraph *g, const char ***wnames, int64_t **outs)
{
    uint32_t nn = g->nnodes, k = 0;
    const char **nm = ir_alloc(g, (nn + 1) * sizeof *nm);
    int64_t *o = ir_alloc(g, (nn + 1) * sizeof *o);
    int64_t *out_of = ir_alloc(g, (g->nvals + 1) * sizeof *out_of); /* value -> output + 1 */
    for (uint32_t i = 0; i < nn; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->op != IR_OP_MATMUL || n->dead || !ir_is_const(g, n->in[1]) ||
            ir_is_const(g, n->in[0]) || ir_vtype(g, n->in[1])->dtype != IR_DT_F32 ||
            ir_vtype(g, n->in[1])->rank != 2 || ir_vtype(g, n->in[0])->dtype != IR_DT_F32)
            continue;
        const char *w = ir_val(g, n->in[1])->name;
        if (!w)
            continue;
        uint32_t j = 0;
        while (j < k && strcmp(nm[j], w) != 0)
            j++;
        if (j < k) {                       /* one weight, two products: left out */
            o[j] = -1;
            continue;
        }
        ValId a = n->in[0];
        if (!out_of[a]) {
            ir_add_output(g, a);
            out_of[a] = g->noutputs;
        }
        nm[k] = w;
        o[k++] = out_of[a] - 1;
    }
    *wnames = nm;
    *outs = o;
    return k;
}
