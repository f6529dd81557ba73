/* ir_run.c: the reference evaluator run over a whole core-op graph (ir_run_graph).
 *
 * Used by calibration (spyrec --calibrate): the activation ranges of a model are
 * collected by evaluating its graph, after decomposition and constant folding, on the
 * calibration inputs. Every node goes through its op's evaluator (ir_eval.c), except
 * float32 MATMUL and two-dimensional CONV, which have fast paths here: the reference
 * evaluator widens every operand to double and sums one output element at a time,
 * which takes minutes on a resnet50 or bert_base; the paths here accumulate in float32
 * in an order the C compiler vectorises, four rows of the result per pass over a
 * cache-sized block of the other operand, a CONV as a product with its patch matrix
 * (im2col) (a calibration statistic does not need the last bit); float32 BINARY has
 * its fast path in ir_eval.c itself. Buffers are malloc'd and freed after their last reader, so a graph of
 * real size runs in the memory of its live activations, not of all of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

/* GCC's -O2 vectorises only loops without a scalar remainder; these inner loops have
 * one, which the dynamic cost model accepts (4x on the product loops). */
#if defined(__GNUC__) && !defined(__clang__)
#define RUN_VECTORISE __attribute__((optimize("vect-cost-model=dynamic")))
#else
#define RUN_VECTORISE
#endif

/* Rows m0..m0+R (R <= 4) of c[M,N] += a[M,K] @ b[K,N] over depth k0..k0+kl and columns
 * n0..n0+nn: each row of b loaded feeds R rows of c (restrict: the compiler vectorises
 * the inner loop). */
RUN_VECTORISE static void mm_rows(const float *a, const float *b, float *c, int64_t m0, int R,
                                  int64_t K, int64_t N, int64_t k0, int64_t kl, int64_t n0,
                                  int64_t nn)
{
    float *restrict c0 = c + m0 * N + n0, *restrict c1 = R > 1 ? c0 + N : c0;
    float *restrict c2 = R > 2 ? c0 + 2 * N : c0, *restrict c3 = R > 3 ? c0 + 3 * N : c0;
    if (R < 4) {                           /* the last rows, one at a time */
        for (int r = 0; r < R; r++)
            for (int64_t k = k0; k < k0 + kl; k++) {
                float x = a[(m0 + r) * K + k];
                const float *restrict br = b + k * N + n0;
                float *restrict cr = c0 + r * N;
                for (int64_t n = 0; n < nn; n++)
                    cr[n] += x * br[n];
            }
        return;
    }
    const float *a0 = a + m0 * K;
    for (int64_t k = k0; k < k0 + kl; k++) {
        float x0 = a0[k], x1 = a0[K + k], x2 = a0[2 * K + k], x3 = a0[3 * K + k];
        const float *restrict br = b + k * N + n0;
        for (int64_t n = 0; n < nn; n++) {
            float bv = br[n];
            c0[n] += x0 * bv;
            c1[n] += x1 * bv;
            c2[n] += x2 * bv;
            c3[n] += x3 * bv;
        }
    }
}

/* c[M,N] = a[M,K] @ b[K,N], float32, in blocks of 128 deep x 512 columns of b (256 KiB,
 * which stays in the cache while every row of a passes over it), four rows of c at a
 * time. */
static void mm_f32(const float *a, const float *b, float *c, int64_t M, int64_t K, int64_t N)
{
    memset(c, 0, (size_t)(M * N) * sizeof *c);
    for (int64_t n0 = 0; n0 < N; n0 += 512) {
        int64_t nn = N - n0 < 512 ? N - n0 : 512;
        for (int64_t k0 = 0; k0 < K; k0 += 128) {
            int64_t kl = K - k0 < 128 ? K - k0 : 128;
            for (int64_t m = 0; m < M; m += 4)
                mm_rows(a, b, c, m, M - m < 4 ? (int)(M - m) : 4, K, N, k0, kl, n0, nn);
        }
    }
}

/* One MATMUL batch of run_matmul_f32 (ir_mm_batches callback). */
typedef struct {
    const float *a, *b;
    float *c;
    int64_t M, K, N;
} MmF32;

/* ir_mm_batches callback: output batch i of a float32 MATMUL. */
static void mm_f32_batch(void *ctx, int64_t i, int64_t oa, int64_t ob)
{
    const MmF32 *m = ctx;
    mm_f32(m->a + oa * m->M * m->K, m->b + ob * m->K * m->N, m->c + i * m->M * m->N, m->M,
           m->K, m->N);
}

/* Fast MATMUL of float32 operands (batch dims broadcast as in ir_eval_matmul). */
static void run_matmul_f32(IrGraph *g, const IrNode *n, const void **in, void *out)
{
    const IrType *ta = ir_vtype(g, n->in[0]), *tb = ir_vtype(g, n->in[1]);
    MmF32 m = {in[0], in[1], out, ta->dims[ta->rank - 2], ta->dims[ta->rank - 1],
               tb->dims[tb->rank - 1]};
    ir_mm_batches(ta, tb, ir_vtype(g, n->out[0]), mm_f32_batch, &m);
}

/* The patch matrix of one image and group of a 2-D CONV: col[(c*KH + kh)*KW + kw][p],
 * p = oh*OW + ow, is x[c, oh*s0 + kh*d0, ow*s1 + kw*d1] (cg channels from xc). */
static void im2col(const float *xc, int64_t cg, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   const int64_t *s, const int64_t *d, int64_t OH, int64_t OW, float *col)
{
    for (int64_t c = 0; c < cg; c++)
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                float *row = col + ((c * KH + kh) * KW + kw) * OH * OW;
                for (int64_t oh = 0; oh < OH; oh++) {
                    const float *xr = xc + (c * H + oh * s[0] + kh * d[0]) * W + kw * d[1];
                    for (int64_t ow = 0; ow < OW; ow++)
                        row[oh * OW + ow] = xr[ow * s[1]];
                }
            }
}

/* Fast CONV of float32 operands with two spatial dims: per image and group, the weights
 * [M/group, C/group*KH*KW] times the patch matrix (im2col; a 1x1 convolution of stride
 * 1 reads the image itself). False when out of memory. */
static bool run_conv2d_f32(IrGraph *g, const IrNode *n, const void **in, void *out)
{
    static const int64_t ones[2] = {1, 1};
    const IrType *tx = ir_vtype(g, n->in[0]), *tw = ir_vtype(g, n->in[1]);
    const IrType *o = ir_vtype(g, n->out[0]);
    const int64_t *s, *d;
    if (ir_attr_get_ints(n, "strides", &s) < 0)
        s = ones;
    if (ir_attr_get_ints(n, "dilations", &d) < 0)
        d = ones;
    int64_t group = ir_attr_get_int(n, "group", 1), cg = tw->dims[1], M = tw->dims[0];
    int64_t mg = M / group, C = tx->dims[1], H = tx->dims[2], W = tx->dims[3];
    int64_t OH = o->dims[2], OW = o->dims[3], KH = tw->dims[2], KW = tw->dims[3];
    int64_t ckk = cg * KH * KW, P = OH * OW;
    bool direct = KH == 1 && KW == 1 && s[0] == 1 && s[1] == 1;
    float *col = direct ? NULL : malloc((size_t)(ckk * P) * sizeof *col);
    if (!direct && !col)
        return false;
    for (int64_t b = 0; b < tx->dims[0]; b++)
        for (int64_t gi = 0; gi < group; gi++) {
            const float *xc = (const float *)in[0] + (b * C + gi * cg) * H * W;
            if (!direct)
                im2col(xc, cg, H, W, KH, KW, s, d, OH, OW, col);
            mm_f32((const float *)in[1] + gi * mg * ckk, direct ? xc : col,
                   (float *)out + (b * M + gi * mg) * P, mg, ckk, P);
        }
    free(col);
    return true;
}

/* Whether every input and output of n is float32. */
static bool all_f32(IrGraph *g, const IrNode *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] == IR_NONE || ir_vtype(g, n->in[i])->dtype != IR_DT_F32)
            return false;
    return ir_vtype(g, n->out[0])->dtype == IR_DT_F32;
}

/* Evaluate node n into freshly allocated out[] buffers; false when it cannot be. */
static bool run_node(IrGraph *g, const IrNode *n, const void **in, void **out)
{
    for (int i = 0; i < n->nout; i++) {
        size_t bytes = ir_type_bytes(ir_vtype(g, n->out[i]));
        if (bytes == SIZE_MAX || !(out[i] = calloc(1, bytes ? bytes : 1)))
            return false;
    }
    if (n->op == IR_OP_MATMUL && all_f32(g, n)) {
        run_matmul_f32(g, n, in, out[0]);
        return true;
    }
    if (n->op == IR_OP_CONV && all_f32(g, n) && ir_vtype(g, n->in[0])->rank == 4)
        return run_conv2d_f32(g, n, in, out[0]);
    if (n->op >= IR_OP_FOREIGN)
        return false;
    IrEval e = {g, n, in, out};
    return ir_op_info[n->op].eval(&e);
}

/* Hand every graph output whose value is v to the visitor. */
static void visit_outputs(IrGraph *g, ValId v, const void *data, IrRunVisit visit, void *ctx)
{
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            visit(ctx, i, data, ir_vtype(g, v));
}

/* The state of one ir_run_graph: each value's buffer and its readers still to come. */
typedef struct {
    IrGraph *g;
    const void *const *inputs;
    void **buf;
    uint32_t *uses;
    IrRunVisit visit;
    void *ctx;
} RunState;

/* The data of value v: a constant's, a graph input's, or its node's buffer. */
static const void *value_data(const RunState *r, ValId v)
{
    const IrValue *val = &r->g->vals[v];
    if (val->kind == IR_VAL_CONST)
        return val->data;
    if (val->kind == IR_VAL_ACT)
        return r->buf[v];
    for (uint32_t k = 0; k < r->g->ninputs; k++)
        if (r->g->inputs[k] == v)
            return r->inputs[k];
    return NULL;
}

/* Run node n: its results are visited when graph outputs, kept while they have readers,
 * and the inputs it read last are freed. False when it cannot be evaluated. */
static bool run_step(RunState *r, const IrNode *n)
{
    const void **in = calloc((size_t)n->nin + 1, sizeof *in);
    void **out = calloc((size_t)n->nout + 1, sizeof *out);
    bool ok = in && out;
    for (int j = 0; ok && j < n->nin; j++)
        in[j] = n->in[j] == IR_NONE ? NULL : value_data(r, n->in[j]);
    ok = ok && run_node(r->g, n, in, out);
    for (int j = 0; out && j < n->nout; j++) {
        if (ok)
            visit_outputs(r->g, n->out[j], out[j], r->visit, r->ctx);
        if (ok && r->uses[n->out[j]])
            r->buf[n->out[j]] = out[j];
        else
            free(out[j]);
    }
    for (int j = 0; ok && j < n->nin; j++)
        if (n->in[j] != IR_NONE && --r->uses[n->in[j]] == 0) {
            free(r->buf[n->in[j]]);
            r->buf[n->in[j]] = NULL;
        }
    free(in);
    free(out);
    return ok;
}

/* Evaluate the nodes of g in order on the graph inputs' data inputs[i]; visit(ctx, i,
 * data, type) is called once for each graph output i as soon as its value exists.
 * False, with a message in err, when a node cannot be evaluated (a frontend op left,
 * an unsupported dtype) or memory runs out. */
bool ir_run_graph(IrGraph *g, const void *const *inputs, IrRunVisit visit, void *ctx,
                  char *err, size_t errlen)
{
    RunState r = {g, inputs, calloc(g->nvals + 1, sizeof(void *)),
                  calloc(g->nvals + 1, sizeof(uint32_t)), visit, ctx};
    bool ok = r.uses && r.buf;
    if (!ok)
        snprintf(err, errlen, "out of memory");
    for (uint32_t i = 0; ok && i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].nin; j++)
            if (!g->nodes[i].dead && g->nodes[i].in[j] != IR_NONE)
                r.uses[g->nodes[i].in[j]]++;
    for (uint32_t i = 0; ok && i < g->ninputs; i++)
        visit_outputs(g, g->inputs[i], inputs[i], visit, ctx);
    for (uint32_t v = 0; ok && v < g->nvals; v++)
        if (g->vals[v].kind == IR_VAL_CONST)
            visit_outputs(g, v, g->vals[v].data, visit, ctx);
    for (uint32_t i = 0; ok && i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (!n->dead && !(ok = run_step(&r, n)))
            snprintf(err, errlen, "node '%s' (%s, op %s) cannot be evaluated (or out of "
                     "memory)", n->origin.name, n->origin.op_type ? n->origin.op_type : "",
                     ir_op_info[n->op].name);
    }
    for (uint32_t v = 0; r.buf && v < g->nvals; v++)
        free(r.buf[v]);
    free(r.buf);
    free(r.uses);
    return ok;
}
