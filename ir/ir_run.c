/* ir_run.c: the reference evaluator run over a whole core-op graph (ir_run_graph).
 *
 * Used by calibration (spyrec --calibrate): the activation ranges of a model are
 * collected by evaluating its graph, after decomposition and constant folding, on the
 * calibration inputs. Every node goes through its op's evaluator (ir_eval.c), except
 * float32 MATMUL and two-dimensional CONV, which have fast paths here: the reference
 * evaluator widens every operand to double and sums one output element at a time,
 * which takes minutes on a resnet50 or bert_base; the paths here accumulate in float32
 * in an order the C compiler vectorises (a calibration statistic does not need the
 * last bit). Buffers are malloc'd and freed after their last reader, so a graph of
 * real size runs in the memory of its live activations, not of all of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

/* c[M,N] = a[M,K] @ b[K,N], float32, rows of b streamed (vectorised inner loop). */
static void mm_f32(const float *a, const float *b, float *c, int64_t M, int64_t K, int64_t N)
{
    for (int64_t m = 0; m < M; m++) {
        float *cr = c + m * N;
        memset(cr, 0, (size_t)N * sizeof *cr);
        for (int64_t k = 0; k < K; k++) {
            float av = a[m * K + k];
            const float *br = b + k * N;
            for (int64_t n = 0; n < N; n++)
                cr[n] += av * br[n];
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

/* Fast CONV of float32 operands with two spatial dims: for every output channel,
 * input channel and tap, one scaled input row is added to each output row. */
static void run_conv2d_f32(IrGraph *g, const IrNode *n, const void **in, void *out)
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
    const float *x = in[0], *w = in[1];
    float *y = out;
    memset(y, 0, ir_type_bytes(o));
    for (int64_t b = 0; b < tx->dims[0]; b++)
        for (int64_t m = 0; m < M; m++) {
            float *ym = y + (b * M + m) * OH * OW;
            for (int64_t c = 0; c < cg; c++) {
                const float *xc = x + (b * C + (m / mg) * cg + c) * H * W;
                for (int64_t kh = 0; kh < KH; kh++)
                    for (int64_t kw = 0; kw < KW; kw++) {
                        float wv = w[((m * cg + c) * KH + kh) * KW + kw];
                        for (int64_t oh = 0; oh < OH; oh++) {
                            const float *xr = xc + (oh * s[0] + kh * d[0]) * W + kw * d[1];
                            float *yr = ym + oh * OW;
                            if (s[1] == 1)
                                for (int64_t ow = 0; ow < OW; ow++)
                                    yr[ow] += wv * xr[ow];
                            else
                                for (int64_t ow = 0; ow < OW; ow++)
                                    yr[ow] += wv * xr[ow * s[1]];
                        }
                    }
            }
        }
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
    if (n->op == IR_OP_CONV && all_f32(g, n) && ir_vtype(g, n->in[0])->rank == 4) {
        run_conv2d_f32(g, n, in, out[0]);
        return true;
    }
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

/* Evaluate the nodes of g in order on the graph inputs' data inputs[i]; visit(ctx, i,
 * data, type) is called once for each graph output i as soon as its value exists.
 * False, with a message in err, when a node cannot be evaluated (a frontend op left,
 * an unsupported dtype) or memory runs out. */
bool ir_run_graph(IrGraph *g, const void *const *inputs, IrRunVisit visit, void *ctx,
                  char *err, size_t errlen)
{
    uint32_t *uses = calloc(g->nvals ? g->nvals : 1, sizeof *uses);
    void **buf = calloc(g->nvals ? g->nvals : 1, sizeof *buf);
    bool ok = uses && buf;
    for (uint32_t i = 0; ok && i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].nin; j++)
            if (!g->nodes[i].dead && g->nodes[i].in[j] != IR_NONE)
                uses[g->nodes[i].in[j]]++;
    for (uint32_t i = 0; ok && i < g->ninputs; i++)
        visit_outputs(g, g->inputs[i], inputs[i], visit, ctx);
    for (uint32_t v = 0; ok && v < g->nvals; v++)
        if (g->vals[v].kind == IR_VAL_CONST)
            visit_outputs(g, v, g->vals[v].data, visit, ctx);
    for (uint32_t i = 0; ok && i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead)
            continue;
        const void *in[64];
        void *out[64] = {0};
        ok = n->nin <= 64 && n->nout <= 64;
        for (int j = 0; ok && j < n->nin; j++) {
            ValId v = n->in[j];
            const IrValue *val = v == IR_NONE ? NULL : &g->vals[v];
            in[j] = !val ? NULL : val->kind == IR_VAL_CONST ? val->data
                  : val->kind == IR_VAL_INPUT ? NULL : buf[v];
            for (uint32_t k = 0; val && val->kind == IR_VAL_INPUT && k < g->ninputs; k++)
                if (g->inputs[k] == v)
                    in[j] = inputs[k];
        }
        if (ok && !(ok = run_node(g, n, in, out)))
            snprintf(err, errlen, "node '%s' (%s, op %s) cannot be evaluated", n->origin.name,
                     n->origin.op_type ? n->origin.op_type : "", ir_op_info[n->op].name);
        for (int j = 0; j < n->nout; j++) {
            if (ok)
                visit_outputs(g, n->out[j], out[j], visit, ctx);
            if (ok && uses[n->out[j]])
                buf[n->out[j]] = out[j];
            else
                free(out[j]);
        }
        for (int j = 0; ok && j < n->nin; j++)
            if (n->in[j] != IR_NONE && --uses[n->in[j]] == 0) {
                free(buf[n->in[j]]);
                buf[n->in[j]] = NULL;
            }
    }
    if (!uses || !buf)
        snprintf(err, errlen, "out of memory");
    for (uint32_t v = 0; buf && v < g->nvals; v++)
        free(buf[v]);
    free(buf);
    free(uses);
    return ok;
}
