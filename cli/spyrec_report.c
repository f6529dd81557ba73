/* spyrec_report.c: the machine-readable compile report (spyrec --report FILE.json).
 *
 * One JSON object (schema version 1):
 *   report, compiler, model, output, emit, flags, opt_level, target, status,
 *   exit_status, errors, warnings,
 *   diagnostics        every message of the compile, in order
 *   unsupported_ops    [{op, message}]: every unsupported operator at once
 *   passes             [{name, ms, ok}] in the order they ran
 *   frontend_ops       {op type: nodes} before decomposition
 *   decompositions     {op type: {nodes, core_ops, by_op {core op: count}}}
 *   kernels            fusion groups with their nodes, work split over cores, tiles,
 *                      LX use and modelled time (spyrec_report_plan.c)
 *   lx, dram           scratchpad budget and use (the largest kernel plan, kernels over
 *                      the budget; each kernel's lx_bytes and lx_of_budget are in
 *                      kernels); constant bytes, arena bytes, the arena's liveness
 *                      lower bound and their ratio, per-value segments and offsets
 * Written, a summary of the LX and DRAM figures goes to standard error (summary).
 *   bundle             bytes, sections [{name, offset, size}], modelled device time
 *   cache, cache_key   the compile cache: "off", "miss" or "hit", and the entry's key
 *                      (null when not known); on a hit nothing was compiled, so the
 *                      parts from the pipeline (passes ... dram) are empty or null
 * Parts the compile did not reach are null. The report is written even when the
 * compile fails, atomically, like the bundle.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/spyrec_calib.h"
#include "cli/spyrec_report.h"
#include "passes/pass.h"

struct CliReport {
    json_t *passes;                /* [{name, ms, ok}] */
    json_t *frontend_ops;          /* before decompose, NULL until then */
    json_t *decomp;                /* after decompose, NULL until then */
    double t0;                     /* start of the running pass, ms */
    bool done[64];                 /* per pass_pipeline index: completed */
};

/* Monotonic clock in milliseconds. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

CliReport *cli_report_new(void)
{
    CliReport *r = calloc(1, sizeof *r);
    if (r && !(r->passes = json_array())) {
        free(r);
        r = NULL;
    }
    return r;
}

void cli_report_free(CliReport *r)
{
    if (!r)
        return;
    json_decref(r->passes);
    json_decref(r->frontend_ops);
    json_decref(r->decomp);
    free(r);
}

/* Add n to the integer at key of object o (creating it). */
static void count_add(json_t *o, const char *key, json_int_t n)
{
    json_t *v = json_object_get(o, key);
    json_object_set_new(o, key, json_integer((v ? json_integer_value(v) : 0) + n));
}

/* The frontend op type a node came from ("?" when unknown). */
static const char *origin_op(const IrNode *n)
{
    if (n->op == IR_OP_FOREIGN && n->foreign.op_type)
        return n->foreign.op_type;
    return n->origin.op_type && *n->origin.op_type ? n->origin.op_type : "?";
}

/* Foreign nodes per op type, before decomposition. */
static json_t *count_frontend(IrGraph *g)
{
    json_t *o = json_object();
    for (NodeId i = 0; o && i < g->nnodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == IR_OP_FOREIGN)
            count_add(o, origin_op(&g->nodes[i]), 1);
    return o;
}

/* After decomposition: per frontend op type, the core ops its nodes became. */
static json_t *count_decomp(IrGraph *g, json_t *before)
{
    json_t *o = json_object();
    const char *key;
    json_t *val;
    json_object_foreach(before, key, val)
    {
        json_t *e = json_pack("{s:O,s:i,s:o}", "nodes", val, "core_ops", 0, "by_op", json_object());
        json_object_set_new(o, key, e);
    }
    for (NodeId i = 0; o && i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead)
            continue;
        const char *op = origin_op(n);
        json_t *e = json_object_get(o, op);
        if (!e) {
            e = json_pack("{s:i,s:i,s:o}", "nodes", 0, "core_ops", 0, "by_op", json_object());
            json_object_set_new(o, op, e);
        }
        char name[64];
        cli_report_op_name(n, name, sizeof name);
        count_add(e, "core_ops", 1);
        count_add(json_object_get(e, "by_op"), name, 1);
    }
    return o;
}

void cli_report_pass(CliReport *r, IrGraph *g, int index, bool done)
{
    if (!r || index < 0 || index >= pass_pipeline_len)
        return;
    const char *name = pass_pipeline[index].name;
    if (!done) {
        r->t0 = now_ms();
        if (!strcmp(name, "decompose") && !r->frontend_ops)
            r->frontend_ops = count_frontend(g);
        json_array_append_new(r->passes, json_pack("{s:s,s:f,s:b}", "name", name, "ms", 0.0,
                                                   "ok", 0));
        return;
    }
    if (index < 64)
        r->done[index] = true;
    json_t *last = json_array_get(r->passes, json_array_size(r->passes) - 1);
    json_object_set_new(last, "ms", json_real(now_ms() - r->t0));
    json_object_set_new(last, "ok", json_true());
    if (!strcmp(name, "decompose") && r->frontend_ops && !r->decomp)
        r->decomp = count_decomp(g, r->frontend_ops);
}

/* Whether the pass named name completed. */
static bool pass_done(const CliReport *r, const char *name)
{
    for (int i = 0; i < pass_pipeline_len && i < 64; i++)
        if (!strcmp(pass_pipeline[i].name, name))
            return r->done[i];
    return false;
}

/* Every diagnostic, and the unsupported operators among them. */
static void add_diagnostics(json_t *root, const IrDiag *d)
{
    json_t *all = json_array(), *uns = json_array();
    static const char key[] = "unsupported operator ";
    for (int i = 0; d && i < d->nmsgs; i++) {
        const char *m = d->msgs[i];
        json_array_append_new(all, json_string(m));
        const char *p = strstr(m, key);
        if (!p)
            continue;
        p += strlen(key);
        size_t n = strcspn(p, " ");
        char *op = strndup(p, n);
        json_array_append_new(uns, json_pack("{s:s,s:s}", "op", op ? op : "?", "message", m));
        free(op);
    }
    json_object_set_new(root, "errors", json_integer(d ? d->nerrors : 0));
    json_object_set_new(root, "warnings", json_integer(d ? d->nwarnings : 0));
    json_object_set_new(root, "diagnostics", all);
    json_object_set_new(root, "unsupported_ops", uns);
}

/* The target's main parameters. */
static json_t *target_json(const SpyTarget *t, const char *path)
{
    if (!t)
        return json_null();
    return json_pack("{s:s#,s:s?,s:i,s:i,s:i,s:i,s:i}", "name", t->name,
                     (int)strnlen(t->name, sizeof t->name), "file", path, "cores", (int)t->cores,
                     "lx_bytes", (int)t->lx_bytes, "lx_budget_bytes", (int)t->lx_budget_bytes,
                     "stick_bytes", (int)t->stick_bytes, "clock_mhz", (int)t->clock_mhz);
}

/* What --precision=fp16 would change: the modelled time of the fp16 compile, this
 * bundle's, and their ratio; null when there is no figure. */
static json_t *whatif_json(const CliReportInfo *in, const spy_model *m)
{
    if (in->fp16_whatif_us < 0 || !m)
        return json_null();
    double us = spy_model_device_us(m);
    return json_pack("{s:s,s:f,s:f,s:f}", "precision", "fp16", "device_us", in->fp16_whatif_us,
                     "this_device_us", us, "speedup",
                     in->fp16_whatif_us > 0 ? us / in->fp16_whatif_us : 0.0);
}

/* The size buckets of bundle m (spyrec --dim-buckets), smallest first, then the bounds
 * (the bundle itself): each with its box (every input's bound shape), kernels and
 * modelled time; null when it has none. */
static json_t *buckets_json(const spy_model *m)
{
    int n = spy_model_num_variants(m);
    if (!m || !n)
        return json_null();
    json_t *a = json_array();
    for (int v = 0; v <= n; v++) {
        const spy_model *b = v < n ? spy_model_variant(m, v) : m;
        json_t *box = json_object();
        for (int i = 0; i < spy_model_num_inputs(b); i++) {
            spy_tensor_info ti;
            spy_model_input_info(b, i, &ti);
            json_t *dims = json_array();
            for (int d = 0; d < ti.rank; d++)
                json_array_append_new(dims, json_integer(ti.dims[d]));
            json_object_set_new(box, ti.name, dims);
        }
        json_array_append_new(a, json_pack("{s:o,s:i,s:f,s:b}", "inputs", box, "kernels",
                                           spy_model_num_kernels(b), "device_us",
                                           spy_model_device_us(b), "bounds", v == n));
    }
    return a;
}

/* The whole report object. */
static json_t *build(CliReport *r, const CliReportInfo *in)
{
    json_t *root = json_object();
    json_object_set_new(root, "report", json_string("spyrec compile report"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "compiler", json_string(in->compiler));
    json_object_set_new(root, "model", json_string(in->model));
    json_object_set_new(root, "output", in->output ? json_string(in->output) : json_null());
    json_object_set_new(root, "emit", json_string(in->emit));
    json_object_set_new(root, "flags", json_string(in->flags ? in->flags : ""));
    json_object_set_new(root, "opt_level", json_integer(in->opt_level));
    json_object_set_new(root, "target", target_json(in->target, in->target_path));
    json_object_set_new(root, "status", json_string(in->exit_status ? "error" : "ok"));
    json_object_set_new(root, "exit_status", json_integer(in->exit_status));
    json_object_set_new(root, "cache", json_string(in->cache ? in->cache : "off"));
    json_object_set_new(root, "cache_key", in->cache_key ? json_string(in->cache_key) : json_null());
    add_diagnostics(root, in->diag);
    json_object_set(root, "passes", r->passes);
    json_object_set(root, "frontend_ops", r->frontend_ops ? r->frontend_ops : json_null());
    json_object_set(root, "decompositions", r->decomp ? r->decomp : json_null());
    spy_model *m = NULL;
    char err[256];
    if (in->bundle && spy_model_load_memory(in->bundle, in->bundle_len, &m, err, sizeof err))
        m = NULL;
    bool fused = in->g && in->g->plan && pass_done(r, "fuse");
    CliPlanState ps = {.g = in->g, .target = in->target, .model = m,
                       .divided = pass_done(r, "divide"), .tiled = pass_done(r, "tile")};
    json_object_set_new(root, "kernels", fused ? cli_report_kernels(&ps) : json_null());
    json_object_set_new(root, "lx", fused && ps.tiled ? cli_report_lx(&ps) : json_null());
    json_object_set_new(root, "dram", in->g && in->target && pass_done(r, "dram_plan")
                                          ? cli_report_dram(&ps)
                                          : json_null());
    json_object_set_new(root, "bundle", in->bundle ? cli_report_bundle(in->bundle, in->bundle_len, m)
                                                   : json_null());
    json_object_set_new(root, "fp16_what_if", whatif_json(in, m));
    json_object_set_new(root, "quantization",
                        in->quant ? cli_calib_report_json(in->quant, in->calib_method,
                                                          in->calib_sets, in->calib_seconds)
                        : in->fp8cal ? cli_fp8_calib_report_json(in->fp8cal, in->calib_sets,
                                                                 in->calib_seconds)
                                     : json_null());
    json_object_set_new(root, "size_buckets", buckets_json(m));
    spy_model_free(m);
    return root;
}

/* The text summary of the memory figures of report root (nothing for parts the compile
 * did not reach). */
static void summary(json_t *root)
{
    json_t *lx = json_object_get(root, "lx"), *dram = json_object_get(root, "dram");
    if (json_is_object(lx)) {
        json_int_t hi = json_integer_value(json_object_get(lx, "max_kernel_bytes"));
        json_int_t bud = json_integer_value(json_object_get(lx, "budget_bytes"));
        fprintf(stderr, "spyrec: report: LX plan: largest %s %lld bytes, %.1f%% of the %lld-byte "
                        "budget; %lld of %lld kernels over it\n",
                json_string_value(json_object_get(lx, "max_kernel")) ? json_string_value(json_object_get(lx, "max_kernel")) : "-",
                (long long)hi, bud ? 100.0 * (double)hi / (double)bud : 0.0, (long long)bud,
                (long long)json_integer_value(json_object_get(lx, "kernels_over_budget")),
                (long long)json_integer_value(json_object_get(lx, "kernels")));
    }
    if (json_is_object(dram))
        fprintf(stderr, "spyrec: report: DRAM activation arena %lld bytes, liveness lower "
                        "bound %lld bytes (%.3fx)\n",
                (long long)json_integer_value(json_object_get(dram, "arena_bytes")),
                (long long)json_integer_value(json_object_get(dram, "liveness_bound_bytes")),
                json_real_value(json_object_get(dram, "arena_over_bound")));
}

bool cli_report_write(CliReport *r, const char *path, const CliReportInfo *info)
{
    json_t *root = r ? build(r, info) : NULL;
    if (root)
        summary(root);
    char *text = root ? json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(root);
    if (!text) {
        fprintf(stderr, "spyrec: %s: out of memory while building the report\n", path);
        return false;
    }
    size_t n = strlen(text);
    text[n] = '\n';                        /* json_dumps' NUL becomes the last newline */
    bool ok = cli_write_atomic(path, text, n + 1);
    free(text);
    return ok;
}
