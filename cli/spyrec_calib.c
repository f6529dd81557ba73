/* spyrec_calib.c: the calibration of spyrec --precision=int8 --calibrate DIR...
 *
 * The activation tensors that the quantize pass (passes/quant.c) will quantize are made
 * extra outputs of a second copy of the model (pass_quant_observe), which is lowered
 * to core ops (decompose, halfwiden, fold, dce; float32 throughout) and evaluated
 * by the reference evaluator (ir_run_graph) on every calibration input set: the
 * folder's input_K.pb files, K the graph input's position, in the ONNX test-data
 * layout. Each tensor's range is its smallest and largest value over the whole set
 * (minmax), or with --calibrate-method=percentile:P the values at the (100-P)/2-th
 * and (100+P)/2-th percentiles (a second sweep fills a 4096-bin histogram of each
 * tensor over its min-max range). The int8 parameters follow from the range
 * (quant_params). cli_calib_report_json puts them, and the weights' per-channel
 * scales, into the compile report.
 * With --precision=fp8 (cli_fp8_calibrate) the copy is lowered by the passes that run
 * before fp16 (so that the weights keep the names the fp8 pass sees), and what is
 * gathered is the mean of each matrix product's data input, per column, for the fp8
 * pass's bias correction, and (unless --calibrate-method=bias) the sum H of x x^T over
 * its rows x, for the GPTQ rounding of its weight (passes/fp8_gptq.c).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/spyrec_args.h"
#include "cli/spyrec_calib.h"
#include "passes/fp8_gptq.h"
#include "passes/pass.h"

/* fp8 GPTQ: inputs wider than this get no second-moment matrix H, nor any once the
 * H matrices would take more than GPTQ_H_CAP bytes in all (gpt2_124m takes 540 MB) */
#define GPTQ_MAX_K 4096
#define GPTQ_H_CAP ((int64_t)1 << 30)

#define HIST_BINS 4096

/* The running statistics of the observed tensors: output index base + i is tensor i. */
typedef struct {
    uint32_t base, n;
    double *lo, *hi;
    uint64_t *hist;                /* n x HIST_BINS (percentile sweep), or NULL */
    uint64_t *count;
} CalibStats;

/* ir_run_graph visitor: fold one observed tensor's values into the statistics. */
static void observe(void *ctx, uint32_t out, const void *data, const IrType *t)
{
    CalibStats *s = ctx;
    if (out < s->base || out >= s->base + s->n || t->dtype != IR_DT_F32)
        return;
    uint32_t i = out - s->base;
    const float *x = data;
    int64_t n = ir_type_numel(t);
    if (!s->hist) {
        double lo = s->lo[i], hi = s->hi[i];
        for (int64_t k = 0; k < n; k++)
            if (isfinite(x[k])) {
                lo = x[k] < lo ? x[k] : lo;
                hi = x[k] > hi ? x[k] : hi;
            }
        s->lo[i] = lo;
        s->hi[i] = hi;
        return;
    }
    uint64_t *h = s->hist + (size_t)i * HIST_BINS;
    double w = s->hi[i] > s->lo[i] ? (s->hi[i] - s->lo[i]) / HIST_BINS : 1;
    for (int64_t k = 0; k < n; k++)
        if (isfinite(x[k])) {
            double b = (x[k] - s->lo[i]) / w;
            h[b < 0 ? 0 : b >= HIST_BINS ? HIST_BINS - 1 : (int)b]++;
        }
    s->count[i] += (uint64_t)n;
}

/* "f32[2,16]" into buf. */
static void shape_text(IrDType dt, int rank, const int64_t *dims, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s[", ir_dtype_name(dt));
    for (int d = 0; d < rank && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", d ? "," : "", (long long)dims[d]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

/* Read folder dir's input_K.pb for every graph input K of g (type-checked) into t[]. */
static bool read_set(IrGraph *g, const char *dir, FeTensor *t, IrDiag *diag)
{
    for (uint32_t k = 0; k < g->ninputs; k++) {
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/input_%u.pb", dir, k);
        const IrType *ty = ir_vtype(g, g->inputs[k]);
        if (!fe_tensor_read(path, &t[k], err, sizeof err)) {
            ir_diag_error(diag, "--calibrate: %s", err);
            return false;
        }
        bool ok = t[k].dtype == ty->dtype && t[k].rank == ty->rank &&
                  t[k].nbytes == ir_type_bytes(ty);
        for (int d = 0; ok && d < ty->rank; d++)
            ok = t[k].dims[d] == ty->dims[d];
        if (!ok) {
            char want[160], got[160];
            shape_text(ty->dtype, ty->rank, ty->dims, want, sizeof want);
            shape_text(t[k].dtype, t[k].rank, t[k].dims, got, sizeof got);
            ir_diag_error(diag, "--calibrate: %s: not of the type of input '%s' (holds %s, "
                          "the model %s%s)", path, ir_val(g, g->inputs[k])->name, got, want,
                          g->nsymdims ? ": with bounded dynamic dimensions the calibration "
                                        "sets are taken at the bounds" : "");
            return false;
        }
    }
    return true;
}

/* One sweep of the evaluator over every calibration set, each output given to
 * visit(ctx, ...). */
static bool sweep(IrGraph *g, const Args *a, IrRunVisit visit, void *ctx, IrDiag *diag)
{
    FeTensor *t = calloc(g->ninputs + 1, sizeof *t);
    const void **in = calloc(g->ninputs + 1, sizeof *in);
    bool ok = t && in;
    for (int d = 0; ok && d < a->ncalib; d++) {
        ok = read_set(g, a->calib_dirs[d], t, diag);
        for (uint32_t k = 0; ok && k < g->ninputs; k++)
            in[k] = t[k].data;
        char err[512];
        if (ok && !(ok = ir_run_graph(g, in, visit, ctx, err, sizeof err)))
            ir_diag_error(diag, "--calibrate: %s", err);
        for (uint32_t k = 0; k < g->ninputs; k++)
            fe_tensor_free(&t[k]);
        memset(t, 0, (g->ninputs + 1) * sizeof *t);
    }
    free(t);
    free(in);
    return ok;
}

/* The percentile clip of tensor i: the range between the (100-p)/2-th and the
 * (100+p)/2-th percentile of its histogram. */
static void clip_range(const CalibStats *s, uint32_t i, double p)
{
    const uint64_t *h = s->hist + (size_t)i * HIST_BINS;
    double w = (s->hi[i] - s->lo[i]) / HIST_BINS, tail = (1 - p / 100) / 2 * (double)s->count[i];
    int lo = 0, hi = HIST_BINS - 1;
    for (double c = 0; lo < HIST_BINS - 1 && (c += (double)h[lo]) <= tail;)
        lo++;
    for (double c = 0; hi > 0 && (c += (double)h[hi]) <= tail;)
        hi--;
    if (lo <= hi && w > 0) {
        s->lo[i] += lo * w;
        s->hi[i] = s->lo[i] - lo * w + (hi + 1) * w;
    }
}

/* The int8 parameters of range [lo, hi] (widened to contain 0): scale (hi - lo) / 255
 * and the zero point that maps lo to -128. */
static void quant_params(PassQParam *p, double lo, double hi)
{
    lo = fmin(lo, 0);
    hi = fmax(hi, 0);
    p->lo = lo;
    p->hi = hi;
    p->scale = hi > lo ? (hi - lo) / 255 : 1;
    p->scale = (double)(float)p->scale;    /* stored as a float32 constant */
    double zp = nearbyint(-128 - lo / p->scale);
    p->zero_point = (int)fmax(-128, fmin(127, zp));
}

/* The symmetric int8 parameters of range [lo, hi] (widened to contain 0): scale
 * max(|lo|, |hi|) / 127 and zero point 0 (the operands of a product of two activations,
 * which then needs no zero-point corrections). */
static void quant_params_symmetric(PassQParam *p, double lo, double hi)
{
    double m = fmax(fabs(lo), fabs(hi));
    p->lo = fmin(lo, 0);
    p->hi = fmax(hi, 0);
    p->scale = m > 0 ? (double)(float)(m / 127) : 1;
    p->zero_point = 0;
}

/* fp8 calibration: per observed input (output index base + i; sum[i] NULL when not
 * observed), the sums over the calibration sets of its per-set column means, m1, and
 * of their squares, m2, the number of sets seen, and (for GPTQ, NULL when skipped) the
 * sum h of x x^T over all its rows x. */
typedef struct {
    uint32_t base, n;
    double **m1, **m2;
    float **h;
    double *x4;                    /* sum over the rows of |x|^4 (GPTQ's shrinkage) */
    int64_t *k, *sets, *rows;
    bool oom;                      /* an H accumulation ran out of memory */
} Fp8Sums;

/* ir_run_graph visitor: add one set's column means of an observed input. */
static void observe_fp8(void *ctx, uint32_t out, const void *data, const IrType *t)
{
    Fp8Sums *s = ctx;
    if (out < s->base || out >= s->base + s->n || t->dtype != IR_DT_F32 || t->rank < 1)
        return;
    uint32_t i = out - s->base;
    int64_t k = t->dims[t->rank - 1], rows = k > 0 ? ir_type_numel(t) / k : 0;
    if (!s->m1[i] || s->k[i] != k || rows == 0)
        return;
    const float *x = data;
    for (int64_t j = 0; j < k; j++) {
        double m = 0;
        for (int64_t r = 0; r < rows; r++)
            m += x[r * k + j];
        m /= (double)rows;
        s->m1[i][j] += m;
        s->m2[i][j] += m * m;
    }
    if (s->h[i] && !gptq_h_accumulate(s->h[i], x, rows, k))
        s->oom = true;
    for (int64_t r = 0; r < rows; r++) {
        double n2 = 0;
        for (int64_t j = 0; j < k; j++)
            n2 += (double)x[r * k + j] * x[r * k + j];
        s->x4[i] += n2 * n2;
    }
    s->rows[i] += rows;
    s->sets[i]++;
}

/* Lower g for the fp8 calibration: the pipeline's passes before fp16 (but quantize and
 * dynamic), at the compile's optimisation level, so that weight names match. */
static bool lower_fp8(IrGraph *g, const Args *a, const SpyTarget *target)
{
    PassOptions po = {.opt_level = a->opt_level, .target = target};
    for (int i = 0; i < pass_pipeline_len && strcmp(pass_pipeline[i].name, "fp16") != 0; i++) {
        const PassInfo *p = &pass_pipeline[i];
        if (a->opt_level < p->min_opt || strcmp(p->name, "quantize") == 0 ||
            strcmp(p->name, "dynamic") == 0)
            continue;
        bool ok = p->run(g, &po) && !ir_failed(g);
        ir_scratch_reset(g);
        if (!ok)
            return false;
    }
    return true;
}

/* Lower g (the model with the observed tensors as extra outputs) to core ops. */
static bool lower(IrGraph *g, const SpyTarget *target)
{
    PassOptions po = {.opt_level = 0, .target = target};
    PassFn fns[] = {pass_decompose, pass_halfwiden, pass_fold, pass_dce};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        bool ok = fns[i](g, &po) && !ir_failed(g);
        ir_scratch_reset(g);
        if (!ok)
            return false;
    }
    return true;
}

bool cli_calibrate(IrGraph *g, const Args *a, const SpyTarget *target, PassQuant *q,
                   double *seconds)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char **names;
    uint8_t *sym;
    uint32_t base = g->noutputs,
             n = pass_quant_observe(g, a->keep_fp32, a->keep_fp16, &names, &sym);
    if (!lower(g, target))
        return false;
    CalibStats s = {.base = base, .n = n, .lo = malloc((n + 1) * sizeof(double)),
                    .hi = malloc((n + 1) * sizeof(double))};
    PassQParam *p = calloc(n + 1, sizeof *p);
    bool ok = s.lo && s.hi && p;
    for (uint32_t i = 0; ok && i < n; i++) {
        s.lo[i] = INFINITY;
        s.hi[i] = -INFINITY;
    }
    ok = ok && sweep(g, a, observe, &s, g->diag);
    if (ok && a->calib_percentile > 0) {
        s.hist = calloc((size_t)(n + 1) * HIST_BINS, sizeof *s.hist);
        s.count = calloc(n + 1, sizeof *s.count);
        ok = s.hist && s.count && sweep(g, a, observe, &s, g->diag);
        for (uint32_t i = 0; ok && i < n; i++)
            if (s.hi[i] > s.lo[i])
                clip_range(&s, i, a->calib_percentile);
    }
    uint32_t np = 0;
    for (uint32_t i = 0; ok && i < n; i++) {
        if (!(s.lo[i] <= s.hi[i]))
            continue;                      /* never seen: left unquantized */
        p[np].name = strdup(names[i]);
        if (!p[np].name)
            ok = false;
        else if (sym[i])
            quant_params_symmetric(&p[np++], s.lo[i], s.hi[i]);
        else
            quant_params(&p[np++], s.lo[i], s.hi[i]);
    }
    free(s.lo);
    free(s.hi);
    free(s.hist);
    free(s.count);
    q->act = p;
    q->nact = np;
    q->keep_fp16 = a->keep_fp16;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (!ok && !ir_failed(g))
        ir_diag_error(g->diag, "--calibrate: out of memory");
    return ok;
}

/* The mean over the sets of observed input o (w->mean) and the variance of that
 * estimate (w->var: the variance of the set means over the number of sets), for weight
 * name; false when out of memory. */
static bool fp8_mean(const Fp8Sums *s, uint32_t o, const char *name, PassFp8Mean *w)
{
    int64_t k = s->k[o], ns = s->sets[o];
    double *mean = malloc((size_t)k * sizeof *mean), *var = malloc((size_t)k * sizeof *var);
    if (!mean || !var || !(w->name = strdup(name))) {
        free(mean);
        free(var);
        return false;
    }
    for (int64_t j = 0; j < k; j++) {
        mean[j] = s->m1[o][j] / (double)ns;
        double v = (s->m2[o][j] / (double)ns - mean[j] * mean[j]) * (double)ns / (double)(ns - 1);
        var[j] = fmax(v, 0) / (double)ns;
    }
    w->k = k;
    w->mean = mean;
    w->var = var;
    return true;
}

/* Free the sums of s. */
static void fp8_sums_free(Fp8Sums *s)
{
    for (uint32_t i = 0; s->m1 && s->m2 && s->h && i < s->n; i++) {
        free(s->m1[i]);
        free(s->m2[i]);
        free(s->h[i]);
    }
    free(s->m1);
    free(s->m2);
    free(s->h);
    free(s->k);
    free(s->sets);
    free(s->rows);
    free(s->x4);
}

bool cli_fp8_calibrate(IrGraph *g, const Args *a, const SpyTarget *target, PassFp8Calib *c,
                       double *seconds)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!lower_fp8(g, a, target))
        return false;
    const char **names;
    int64_t *outs;
    uint32_t base = g->noutputs, nw = pass_fp8_observe(g, &names, &outs);
    Fp8Sums s = {.base = base, .n = g->noutputs - base};
    s.m1 = calloc(s.n + 1, sizeof *s.m1);
    s.m2 = calloc(s.n + 1, sizeof *s.m2);
    s.k = calloc(s.n + 1, sizeof *s.k);
    s.sets = calloc(s.n + 1, sizeof *s.sets);
    s.h = calloc(s.n + 1, sizeof *s.h);
    s.rows = calloc(s.n + 1, sizeof *s.rows);
    s.x4 = calloc(s.n + 1, sizeof *s.x4);
    PassFp8Mean *w = calloc(nw + 1, sizeof *w);
    bool ok = s.m1 && s.m2 && s.k && s.sets && s.h && s.rows && s.x4 && w;
    int64_t hbytes = 0;
    for (uint32_t i = 0; ok && i < s.n; i++) {
        const IrType *t = ir_vtype(g, g->outputs[base + i]);
        s.k[i] = t->rank ? t->dims[t->rank - 1] : 0;
        ok = s.k[i] > 0 && (s.m1[i] = calloc((size_t)s.k[i], sizeof **s.m1)) &&
             (s.m2[i] = calloc((size_t)s.k[i], sizeof **s.m2));
        int64_t hb = ok ? s.k[i] * s.k[i] * (int64_t)sizeof(float) : 0;
        if (a->calib_bias_only)
            continue;                      /* --calibrate-method=bias: no H */
        if (ok && s.k[i] <= GPTQ_MAX_K && hbytes + hb <= GPTQ_H_CAP &&
            (s.h[i] = calloc((size_t)(s.k[i] * s.k[i]), sizeof(float))))
            hbytes += hb;
        else
            c->nhskipped++;
    }
    ok = ok && sweep(g, a, observe_fp8, &s, g->diag) && !s.oom;
    for (uint32_t i = 0; ok && i < s.n; i++)
        if (s.h[i])
            gptq_h_mirror(s.h[i], s.k[i]);
    uint32_t n = 0;
    for (uint32_t i = 0; ok && i < nw; i++) {
        int64_t o = outs[i] - (int64_t)base;
        if (outs[i] < 0 || s.sets[o] < 2)
            continue;                      /* shared weight, or too few sets */
        w[n].h = s.h[o];
        w[n].shrink = s.h[o] ? gptq_shrinkage(s.h[o], s.k[o], s.rows[o], s.x4[o]) : 1;
        ok = fp8_mean(&s, (uint32_t)o, names[i], &w[n++]);
    }
    for (uint32_t i = 0; i < n; i++)       /* the weights own their H now */
        for (uint32_t j = 0; j < s.n; j++)
            if (s.h[j] == w[i].h)
                s.h[j] = NULL;
    fp8_sums_free(&s);
    c->w = w;
    c->nw = n;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (!ok && !ir_failed(g))
        ir_diag_error(g->diag, "--calibrate: out of memory");
    return ok;
}

void cli_fp8_calib_free(PassFp8Calib *c)
{
    for (uint32_t i = 0; i < c->nw; i++) {
        bool shared = false;               /* weights of one input share its H */
        for (uint32_t j = 0; j < i; j++)
            shared = shared || c->w[j].h == c->w[i].h;
        if (!shared)
            free((float *)c->w[i].h);
        free((char *)c->w[i].name);
        free((double *)c->w[i].mean);
        free((double *)c->w[i].var);
    }
    free((void *)c->w);
    memset(c, 0, sizeof *c);
}

json_t *cli_fp8_calib_report_json(const PassFp8Calib *c, int ninputs, double seconds)
{
    return json_pack("{s:s,s:i,s:f,s:i,s:i,s:i,s:i}", "precision", "fp8", "calibration_sets",
                     ninputs, "calibration_seconds", seconds, "weights_calibrated", (int)c->nw,
                     "bias_corrected", (int)c->ncorrected, "gptq_rounded", (int)c->ngptq,
                     "gptq_inputs_skipped", (int)c->nhskipped);
}

void cli_calib_free(PassQuant *q)
{
    for (uint32_t i = 0; i < q->nact; i++)
        free((char *)q->act[i].name);
    free((void *)q->act);
    free(q->w);
    memset(q, 0, sizeof *q);
}

/* The report's "quantization" object: method, inputs, time, and per activation tensor
 * its range, scale and zero point, per weight its channels and scale range. */
json_t *cli_calib_report_json(const PassQuant *q, const char *method, int ninputs,
                              double seconds)
{
    json_t *acts = json_array(), *ws = json_array();
    for (uint32_t i = 0; i < q->nact; i++) {
        const PassQParam *p = &q->act[i];
        json_array_append_new(acts, json_pack("{s:s,s:f,s:f,s:f,s:i,s:s}", "name", p->name,
                                              "min", p->lo, "max", p->hi, "scale", p->scale,
                                              "zero_point", p->zero_point, "dtype", "int8"));
    }
    for (uint32_t i = 0; i < q->nw; i++) {
        const PassQWeight *w = &q->w[i];
        json_array_append_new(ws, json_pack("{s:s,s:I,s:i,s:f,s:f,s:s}", "name", w->name,
                                            "channels", (json_int_t)w->channels, "axis", w->axis,
                                            "scale_min", w->scale_min, "scale_max", w->scale_max,
                                            "dtype", "int8"));
    }
    return json_pack("{s:s,s:s,s:i,s:f,s:i,s:o,s:o}", "precision", "int8", "method", method,
                     "calibration_sets", ninputs, "calibration_seconds", seconds,
                     "contractions", (int)q->nquantized, "activations", acts, "weights", ws);
}
