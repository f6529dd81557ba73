/* spyrec_report_plan.c: the back end's plan in the compile report: kernels (fusion
 * groups with their nodes, split over cores, tiles, LX buffers, modelled time per
 * kernel and per core from the emitted bundle), the LX and DRAM plans, and the
 * bundle's section sizes. Reads the kernel plan (passes/plan/plan.h) only; changes nothing.
 */
#include <string.h>

#include "cli/spyrec_report.h"
#include "isa.h"
#include "passes/plan/plan.h"
#include "passes/pass.h"
#include "sbin.h"

void cli_report_op_name(const IrNode *n, char *buf, size_t len)
{
    if (n->op == IR_OP_FOREIGN) {
        snprintf(buf, len, "%s", n->foreign.op_type ? n->foreign.op_type : "?");
        return;
    }
    const char *sub = NULL;
    const IrAttr *fn = ir_attr_find(n, "fn");
    if (fn && fn->kind == IR_ATTR_INT)
        sub = n->op == IR_OP_UNARY    ? ir_unfn_name((int)fn->i)
              : n->op == IR_OP_BINARY ? ir_binfn_name((int)fn->i)
                                      : ir_redfn_name((int)fn->i);
    else if (n->op == IR_OP_CAST)
        sub = ir_dtype_name((IrDType)ir_attr_get_int(n, "to", 0));
    snprintf(buf, len, "%s%s%s", ir_op_info[n->op].name, sub ? "." : "", sub ? sub : "");
}

/* [{extent, chunk}] of a grid. */
static json_t *grid_json(const IrGrid *gr)
{
    json_t *a = json_array();
    for (int d = 0; d < gr->rank; d++)
        json_array_append_new(a, json_pack("{s:I,s:I}", "extent", (json_int_t)gr->ext[d],
                                           "chunk", (json_int_t)gr->chunk[d]));
    return a;
}

/* Live nodes of kernel k, in graph order. */
static json_t *kernel_nodes(IrGraph *g, uint32_t k)
{
    json_t *a = json_array();
    for (NodeId i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || g->plan->node[i].kernel != k)
            continue;
        char op[64];
        cli_report_op_name(n, op, sizeof op);
        json_array_append_new(
            a, json_pack("{s:I,s:s,s:s,s:s,s:s}", "node", (json_int_t)i, "op", op, "value",
                         n->nout && n->out[0] != IR_NONE ? ir_val(g, n->out[0])->name : "",
                         "origin", n->origin.name ? n->origin.name : "", "origin_op",
                         n->origin.op_type ? n->origin.op_type : ""));
    }
    return a;
}

/* Work division: grid, items, items per core. */
static json_t *kernel_split(const IrKernel *k)
{
    json_t *per = json_array();
    int busy = 0;
    for (uint32_t c = 0; c < k->ncores; c++) {
        uint64_t n = k->core_first[c + 1] - k->core_first[c];
        busy += n > 0;
        json_array_append_new(per, json_integer((json_int_t)n));
    }
    return json_pack("{s:o,s:I,s:i,s:i,s:o}", "grid", grid_json(&k->grid), "items",
                     (json_int_t)k->nitems, "cores", (int)k->ncores, "busy_cores", busy,
                     "items_per_core", per);
}

/* One tile program: steps, row/column iteration dims, tile caps, LX range. */
static json_t *tile_prog(const IrTileProg *tp, const char *role)
{
    json_t *rows = json_array(), *cols = json_array(), *cap = json_array();
    for (int i = 0; i < tp->nd; i++) {
        json_array_append_new(i < tp->nrow ? rows : cols, json_integer(tp->order[i]));
        json_array_append_new(cap, json_integer((json_int_t)tp->cap[i]));
    }
    return json_pack("{s:s,s:i,s:o,s:o,s:o,s:[i,i],s:b}", "role", role, "steps",
                     (int)tp->nsteps, "row_dims", rows, "col_dims", cols, "tile_cap", cap,
                     "lx", (int)tp->lx_lo, (int)tp->lx_hi, "stores", tp->store);
}

/* Tiling: inner loop, LX bytes, anchor buffers, tile programs. */
static json_t *kernel_tiles(const IrKernel *k)
{
    json_t *bufs = json_array(), *progs = json_array();
    for (int b = 0; b < IR_KBUF_MAX; b++)
        if (k->buf_bytes[b])
            json_array_append_new(bufs, json_pack("{s:i,s:i,s:i}", "buffer", b, "offset",
                                                  (int)k->buf[b], "bytes", (int)k->buf_bytes[b]));
    for (int t = 0; t < 2; t++) {
        const IrTileProg *tp = &k->tp[t];
        if (tp->nd == 0 && tp->nvals == 0)
            continue;
        const char *role = k->kind == IR_KK_REDUCE ? (t ? "epilogue" : "prologue")
                           : k->kind == IR_KK_CONTRACT ? "epilogue"
                                                       : "body";
        json_array_append_new(progs, tile_prog(tp, role));
    }
    return json_pack("{s:o,s:i,s:o,s:o}", "inner", grid_json(&k->inner), "lx_bytes",
                     (int)k->lx_bytes, "buffers", bufs, "programs", progs);
}

/* Modelled figures of kernel i from the loaded bundle. */
static json_t *kernel_time(const spy_model *m, int i)
{
    spy_kernel_profile p;
    if (!m || spy_model_kernel_profile(m, i, &p) != SPY_OK)
        return json_null();
    double core_us[256];
    int nc = spy_model_kernel_core_us(m, i, core_us, 256);
    json_t *cores = json_array();
    for (int c = 0; c < nc && c < 256; c++)
        json_array_append_new(cores, json_real(core_us[c]));
    json_t *o = json_pack("{s:f,s:f,s:f,s:f,s:s,s:I,s:I,s:I,s:o}", "device_us", p.device_us,
                          "roofline_us", p.roofline_us, "lost_us", p.device_us - p.roofline_us,
                          "efficiency", p.device_us > 0 ? p.roofline_us / p.device_us : 0.0,
                          "limiter", p.limiter ? p.limiter : "", "flops", (json_int_t)p.flops,
                          "dram_bytes", (json_int_t)p.dram_bytes, "min_dram_bytes",
                          (json_int_t)p.min_dram_bytes, "core_us", cores);
    return o ? o : json_null();
}

json_t *cli_report_kernels(const CliPlanState *ps)
{
    IrGraph *g = ps->g;
    json_t *a = json_array();
    for (uint32_t i = 0; i < g->plan->nkernels; i++) {
        const IrKernel *k = &g->plan->kernels[i];
        json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:o,s:I,s:I}", "index", (int)i, "name",
                              k->name ? k->name : "", "kind", plan_kernel_kind_name(k->kind),
                              "out", k->out != IR_NONE ? ir_val(g, k->out)->name : "",
                              "nodes", kernel_nodes(g, i), "flops", (json_int_t)k->flops,
                              "min_dram_bytes", (json_int_t)k->min_dram_bytes);
        bool split = ps->divided && k->core_first;
        json_object_set_new(o, "split", split ? kernel_split(k) : json_null());
        json_object_set_new(o, "tiles", split && ps->tiled ? kernel_tiles(k) : json_null());
        json_object_set_new(o, "modelled", kernel_time(ps->model, (int)i));
        uint32_t budget = ps->target ? ps->target->lx_budget_bytes : 0;
        json_object_set_new(o, "lx_bytes", ps->tiled ? json_integer(k->lx_bytes) : json_null());
        json_object_set_new(o, "lx_of_budget", ps->tiled && budget
                                                   ? json_real((double)k->lx_bytes / budget)
                                                   : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

json_t *cli_report_lx(const CliPlanState *ps)
{
    IrGraph *g = ps->g;
    uint32_t hi = 0, over = 0, budget = ps->target ? ps->target->lx_budget_bytes : 0;
    const char *who = NULL;
    for (uint32_t i = 0; i < g->plan->nkernels; i++) {
        if (g->plan->kernels[i].lx_bytes > hi || !who) {
            hi = g->plan->kernels[i].lx_bytes;
            who = g->plan->kernels[i].name;
        }
        over += g->plan->kernels[i].lx_bytes > budget;
    }
    return json_pack("{s:i,s:i,s:i,s:s?,s:i,s:i}", "lx_bytes",
                     ps->target ? (int)ps->target->lx_bytes : 0, "budget_bytes", (int)budget,
                     "max_kernel_bytes", (int)hi, "max_kernel", who, "kernels",
                     (int)g->plan->nkernels, "kernels_over_budget", (int)over);
}

/* "const", "arena", "input K" or "output K" for a DRAM segment id. */
static void seg_name(const IrGraph *g, uint32_t seg, char *buf, size_t len)
{
    if (seg == ISA_SEG_CONST)
        snprintf(buf, len, "const");
    else if (seg == ISA_SEG_ARENA)
        snprintf(buf, len, "arena");
    else if (seg - ISA_SEG_IO0 < g->ninputs)
        snprintf(buf, len, "input %u", seg - ISA_SEG_IO0);
    else
        snprintf(buf, len, "output %u", seg - ISA_SEG_IO0 - g->ninputs);
}

json_t *cli_report_dram(const CliPlanState *ps)
{
    IrGraph *g = ps->g;
    Plan *s = g->plan;
    if (!s)
        return json_null();
    json_t *vals = json_array();
    for (ValId v = 0; v < g->nvals && v < s->nvals; v++) {
        if (s->val[v].seg == UINT32_MAX)
            continue;
        char seg[32];
        seg_name(g, s->val[v].seg, seg, sizeof seg);
        ValId r = s->val[v].view.root;
        json_t *o = json_pack("{s:s,s:s,s:I}", "name", g->vals[v].name, "segment", seg, "offset",
                              (json_int_t)s->val[v].dram_offset);
        if (r == v || r == IR_NONE)
            json_object_set_new(o, "bytes",
                                json_integer((json_int_t)plan_storage_bytes(g, v, ps->target)));
        else
            json_object_set_new(o, "view_of", json_string(g->vals[r].name));
        json_array_append_new(vals, o);
    }
    return json_pack("{s:I,s:I,s:I,s:f,s:I,s:o}", "constant_bytes", (json_int_t)s->seg0_bytes,
                     "arena_bytes", (json_int_t)s->arena_bytes, "liveness_bound_bytes",
                     (json_int_t)s->live_bound, "arena_over_bound",
                     s->live_bound ? (double)s->arena_bytes / (double)s->live_bound : 1.0,
                     "constants", (json_int_t)s->nconsts, "values", vals);
}

/* Name of a bundle section id. */
static const char *section_name(uint32_t id)
{
    static const char *const n[SPY_SEC_MAX] = {"?",        "STRINGS",  "TENSORS", "CONSTS",
                                               "KERNELS",  "PROGRAMS", "CODE",    "SCHEDULE",
                                               "SEGMENTS", "META",     "SELFTEST", [15] = "VARIANTS"};
    return id < SPY_SEC_MAX && n[id] ? n[id] : "?";
}

json_t *cli_report_bundle(const uint8_t *bundle, size_t len, const spy_model *m)
{
    json_t *secs = json_array();
    const SpyHeader *h = (const SpyHeader *)bundle;
    uint64_t code = 0;
    if (len >= sizeof *h && h->nsections <= (len - sizeof *h) / sizeof(SpySection)) {
        const SpySection *s = (const SpySection *)(bundle + sizeof *h);
        for (uint32_t i = 0; i < h->nsections; i++) {
            json_array_append_new(secs, json_pack("{s:s,s:I,s:I}", "name", section_name(s[i].id),
                                                  "offset", (json_int_t)s[i].offset, "size",
                                                  (json_int_t)s[i].size));
            if (s[i].id == SPY_SEC_CODE)
                code = s[i].size / sizeof(SpyInsn);
        }
    }
    json_t *o = json_pack("{s:I,s:o,s:I}", "bytes", (json_int_t)len, "sections", secs,
                          "instructions", (json_int_t)code);
    json_object_set_new(o, "kernels", m ? json_integer(spy_model_num_kernels(m)) : json_null());
    json_object_set_new(o, "device_us", m ? json_real(spy_model_device_us(m)) : json_null());
    return o;
}
