/* irrun.c: run a model through the front-end passes and evaluate it with the reference
 * evaluator (ir_eval_node), node by node, without the back end. A check of the
 * decomposition's numerics before (and independently of) code generation: the
 * "reference" part of make check runs it on every model of the numeric model tests.
 *
 *   irrun MODEL [DATASET_DIR] [--no-opt] [--stats] [--rtol R] [--atol A]
 *
 * Runs the passes of the pipeline table (passes/pipeline.c) that come before "dynamic"
 * (the front-end passes: decompose, halfwiden, fold, simplify, bnfold, dce), or only
 * decompose with --no-opt, verifying the graph after each pass. With DATASET_DIR it
 * reads input_K.pb for each graph input, evaluates, and compares every
 * output_K.pb (|got - want| <= atol + rtol*|want|; a float16 output, or a float32 one
 * the model computes in half precision (fe_half_outputs), by spyrun's float16 metrics
 * instead). Exit status: 0 ok, 1 mismatch or error. Built by `make build/tests/irrun`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/fe.h"
#include "ir.h"
#include "pass.h"

static const char *prog = "irrun";

/* Print the diagnostics collected so far. */
static void print_diag(const IrDiag *d)
{
    for (int i = 0; i < d->nmsgs; i++)
        fprintf(stderr, "%s\n", d->msgs[i]);
}

/* Run the front-end passes of the pipeline table (all before "dynamic", or decompose
 * alone when !opt_passes), each followed by the verifier, as the driver does; false on
 * the first failure. */
static bool run_front_passes(IrGraph *g, bool opt_passes)
{
    PassOptions po = {.opt_level = 2, .verify = true};
    for (int i = 0; i < pass_pipeline_len; i++) {
        const PassInfo *p = &pass_pipeline[i];
        if (strcmp(p->name, "dynamic") == 0 || (!opt_passes && strcmp(p->name, "decompose") != 0))
            break;
        bool ok = p->run(g, &po) && !ir_failed(g);
        ir_scratch_reset(g);
        if (!ok || !ir_verify(g, p->name)) {
            fprintf(stderr, "%s: pass %s failed\n", prog, p->name);
            return false;
        }
    }
    return true;
}

/* Print the number of live nodes of each op. */
static void print_stats(IrGraph *g)
{
    int count[IR_OP_COUNT] = {0};
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead)
            count[g->nodes[i].op]++;
    printf("nodes:");
    for (int op = 0; op < IR_OP_COUNT; op++)
        if (count[op])
            printf(" %s=%d", ir_op_info[op].name, count[op]);
    printf("\n");
}

/* IEEE half to float. */
static double half(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0)
        return s * ldexp(m, -24);
    if (e == 31)
        return m ? NAN : s * INFINITY;
    return s * ldexp(m + 1024, e - 25);
}

/* Element i of p (dtype t) as double, for the comparison. */
static double load(IrDType t, const void *p, size_t i)
{
    switch (t) {
    case IR_DT_F32: return ((const float *)p)[i];
    case IR_DT_F64: return ((const double *)p)[i];
    case IR_DT_F16: return half(((const uint16_t *)p)[i]);
    case IR_DT_BF16: {
        uint32_t x = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
    case IR_DT_I64: return (double)((const int64_t *)p)[i];
    case IR_DT_U64: return (double)((const uint64_t *)p)[i];
    case IR_DT_I32: return ((const int32_t *)p)[i];
    case IR_DT_U32: return ((const uint32_t *)p)[i];
    case IR_DT_I16: return ((const int16_t *)p)[i];
    case IR_DT_U16: return ((const uint16_t *)p)[i];
    case IR_DT_BOOL: case IR_DT_U8: return ((const uint8_t *)p)[i];
    case IR_DT_I8: return ((const int8_t *)p)[i];
    default: return NAN;
    }
}

/* Evaluate the graph; vd[v] receives each value's data. */
static bool evaluate(IrGraph *g, const void **vd)
{
    for (ValId v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == IR_VAL_CONST)
            vd[v] = g->vals[v].data;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        const void *in[256];
        void *out[16];
        if (n->dead)
            continue;
        if (n->nin > 256 || n->nout > 16 || n->op == IR_OP_FOREIGN) {
            fprintf(stderr, "%s: node %u cannot be evaluated\n", prog, i);
            return false;
        }
        for (int k = 0; k < n->nin; k++)
            in[k] = vd[n->in[k]];
        if (!ir_eval_node(g, n, in, out)) {
            fprintf(stderr, "%s: ir_eval_node failed on node %u (%s, from '%s')\n", prog, i,
                    ir_op_info[n->op].name, n->origin.name);
            return false;
        }
        for (int k = 0; k < n->nout; k++)
            vd[n->out[k]] = out[k];
    }
    return true;
}

/* Read input_K.pb into graph input K. */
static bool read_inputs(IrGraph *g, const char *dir, const void **vd, FeTensor *tin)
{
    char path[4096], err[512];
    for (uint32_t i = 0; i < g->ninputs; i++) {
        snprintf(path, sizeof path, "%s/input_%u.pb", dir, i);
        if (!fe_tensor_read(path, &tin[i], err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return false;
        }
        const IrType *t = ir_vtype(g, g->inputs[i]);
        if (tin[i].dtype != t->dtype || tin[i].nbytes != ir_type_bytes(t)) {
            fprintf(stderr, "%s: %s does not match input '%s'\n", prog, path, g->vals[g->inputs[i]].name);
            return false;
        }
        vd[g->inputs[i]] = tin[i].data;
    }
    return true;
}

/* Whether the float outputs a (got) and b (want) of n elements, t's dtype, pass the
 * float16 metrics (cli_metric_half_defaults, as spyrun --check judges a half output). */
static bool half_pass(const IrType *t, const void *a, const void *b, size_t n)
{
    CliMetrics m;
    CliMetricSpec spec;
    char why[160] = "";
    cli_metric_half_defaults(&spec);
    cli_metrics(t->dtype, a, b, n, t->rank ? t->dims[t->rank - 1] : 0, &m);
    bool ok = cli_metrics_pass(&m, &spec, why, sizeof why);
    printf("  half precision: rel-l2 %.3g, cosine %.8f%s%s\n", m.rel_l2, m.cosine, ok ? "" : ": ",
           why);
    return ok;
}

/* Compare graph output K with output_K.pb: element by element, or by the float16
 * metrics when half (a float16 output, or one the model computes in half precision). */
static bool compare_output(IrGraph *g, const char *dir, uint32_t k, const void *got, double rtol,
                           double atol, bool half)
{
    char path[4096], err[512];
    FeTensor want = {0};
    snprintf(path, sizeof path, "%s/output_%u.pb", dir, k);
    if (!fe_tensor_read(path, &want, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return false;
    }
    const IrType *t = ir_vtype(g, g->outputs[k]);
    size_t n = (size_t)ir_type_numel(t);
    bool ok = want.dtype == t->dtype && want.nbytes == ir_type_bytes(t);
    double maxerr = 0;
    size_t bad = 0;
    for (size_t i = 0; ok && i < n; i++) {
        double a = load(t->dtype, got, i), b = load(want.dtype, want.data, i), e = fabs(a - b);
        if (isnan(a) && isnan(b))
            continue;
        if (e > maxerr || isnan(a))
            maxerr = isnan(a) ? INFINITY : e;
        if (!(e <= atol + rtol * fabs(b)) && !(a == b))
            bad++;
    }
    printf("output %u '%s': %zu elements, max abs err %.3g, %zu outside tolerance%s\n", k,
           g->vals[g->outputs[k]].name, n, maxerr, bad, ok ? "" : " (type mismatch)");
    bool pass = ok && (half ? half_pass(t, got, want.data, n) : bad == 0);
    fe_tensor_free(&want);
    return pass;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *dir = NULL;
    bool opt_passes = true, stats = false;
    double rtol = 1e-3, atol = 1e-4;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-opt") == 0)
            opt_passes = false;
        else if (strcmp(argv[i], "--stats") == 0)
            stats = true;
        else if (strcmp(argv[i], "--rtol") == 0 && i + 1 < argc)
            rtol = atof(argv[++i]);
        else if (strcmp(argv[i], "--atol") == 0 && i + 1 < argc)
            atol = atof(argv[++i]);
        else if (!model)
            model = argv[i];
        else if (!dir)
            dir = argv[i];
        else {
            fprintf(stderr, "usage: %s MODEL [DATASET_DIR] [--no-opt] [--stats] [--rtol R] [--atol A]\n", prog);
            return 1;
        }
    }
    if (!model) {
        fprintf(stderr, "usage: %s MODEL [DATASET_DIR] [--no-opt] [--stats] [--rtol R] [--atol A]\n", prog);
        return 1;
    }
    IrDiag diag;
    ir_diag_init(&diag, model);
    FeOptions fo = {0};
    IrGraph *g = fe_load_model(model, &diag, &fo);
    uint64_t half = g ? fe_half_outputs(g) : 0;   /* before the passes rewrite the casts */
    bool ok = g && run_front_passes(g, opt_passes);
    print_diag(&diag);
    if (ok && stats)
        print_stats(g);
    if (ok && dir) {
        const void **vd = calloc(g->nvals, sizeof *vd);
        FeTensor *tin = calloc(g->ninputs + 1, sizeof *tin);
        ok = vd && tin && read_inputs(g, dir, vd, tin) && evaluate(g, vd);
        bool evaluated = ok;
        for (uint32_t k = 0; evaluated && k < g->noutputs; k++)
            if (!compare_output(g, dir, k, vd[g->outputs[k]], rtol, atol,
                                (k < 64 && (half >> k & 1)) ||
                                    ir_vtype(g, g->outputs[k])->dtype == IR_DT_F16 ||
                                    ir_vtype(g, g->outputs[k])->dtype == IR_DT_BF16))
                ok = false;
        for (uint32_t i = 0; tin && i < g->ninputs; i++)
            fe_tensor_free(&tin[i]);
        free(tin);
        free(vd);
    }
    printf("%s: %s\n", model, ok ? "ok" : "FAILED");
    if (g)
        ir_graph_free(g);
    ir_diag_free(&diag);
    return ok ? 0 : 1;
}
