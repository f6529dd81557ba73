/* pipeline.c: the compiler's pass table and the driver that runs it.
 *
 * Passes run in table order when opt_level >= min_opt. The observer PassOptions.hook
 * (when set) is called before and after each pass. After each pass the driver stops on
 * a reported error, runs ir_verify() and plan_verify() when asked (PassOptions.verify;
 * always in builds with SPY_DEBUG), releases the pass's scratch arena (ir_scratch), and
 * prints the IR (and, from pass "fuse" on, the kernel plan) when the pass is named
 * by --dump-after (or "all").
 */
#include <string.h>

#include "pass.h"
#include "plan/plan.h"

const PassInfo pass_pipeline[] = {
    {"quantize", pass_quantize, 0, "Q/DQ pairs around contractions (--precision=int8)"},
    {"decompose", pass_decompose, 0, "lower frontend operators to core ops"},
    {"halfwiden", pass_halfwiden, 0, "compute float16/bfloat16 arithmetic in float32"},
    {"fold", pass_fold, 0, "evaluate nodes whose inputs are all constants"},
    {"halfweight", pass_halfweight, 0, "float16/bfloat16 matrix weights widened per tile"},
    {"simplify", pass_simplify, 1, "cancel transposes/reshapes, algebraic identities, CSE"},
    {"bnfold", pass_bnfold, 1, "fold per-channel affine ops into convolutions/matmuls"},
    {"convtrim", pass_convtrim, 1, "drop convolution taps that only read zero padding"},
    {"dce", pass_dce, 0, "remove nodes whose results are never used"},
    {"requantid", pass_requant_id, 1, "a requantization with its input's parameters is the 8-bit input"},
    {"qsiblings", pass_qsiblings, 1, "merge int8 products of one activation and their chains"},
    {"dynamic", pass_dynamic, 0, "carry data-dependent extents to the graph outputs"},
    {"fp16", pass_fp16, 0, "store float32 tensors as DLFloat16 (--precision=fp16)"},
    {"fp8", pass_fp8, 0, "matrix weights as float8 e4m3 (--precision=fp8)"},
    {"window", pass_window, 0, "split reads of tensors larger than a core's DRAM window"},
    {"dequant", pass_dequant, 1, "one dequantization of 8-bit data per consumer"},
    {"fuse", pass_fuse, 0, "group nodes into kernels (epilogues, prologues, chains)"},
    {"layout", pass_layout, 0, "device dtypes, tensor layouts, strided views"},
    {"divide", pass_divide, 0, "split each kernel's work over the cores"},
    {"tile", pass_tile, 0, "tiles that fit the scratchpad, LX plan"},
    {"dram_plan", pass_dram_plan, 0, "constant segment and activation arena"},
};
const int pass_pipeline_len = (int)(sizeof pass_pipeline / sizeof pass_pipeline[0]);

/* The pipeline entry named name, or NULL. */
const PassInfo *pass_find(const char *name)
{
    for (int i = 0; name && i < pass_pipeline_len; i++)
        if (strcmp(pass_pipeline[i].name, name) == 0)
            return &pass_pipeline[i];
    return NULL;
}

/* Whether the --dump-after list names pass name ("all" names every pass). */
bool pass_dump_wanted(const char *list, const char *name)
{
    if (!list)
        return false;
    return strcmp(list, "all") == 0 || pass_list_has(list, name);
}

/* Whether the comma-separated list names s (an exact entry; NULL or "" never). */
bool pass_list_has(const char *list, const char *name)
{
    size_t n = name ? strlen(name) : 0;
    for (const char *s = list; s && n;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && memcmp(s, name, n) == 0)
            return true;
        s = e ? e + 1 : NULL;
    }
    return false;
}

/* Whether every comma-separated entry of the --dump-after list is a pass ("all" too). */
bool pass_dump_list_ok(const char *list)
{
    if (strcmp(list, "all") == 0)
        return true;
    for (const char *s = list;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        bool found = false;
        for (int i = 0; i < pass_pipeline_len && !found; i++)
            found = strlen(pass_pipeline[i].name) == len && memcmp(pass_pipeline[i].name, s, len) == 0;
        if (!found)
            return false;
        if (!e)
            return true;
        s = e + 1;
    }
}

/* Print the graph (and the kernel plan once kernels exist) after pass p. */
static void dump(IrGraph *g, const PassOptions *opt, const PassInfo *p)
{
    FILE *f = opt->dump_file ? opt->dump_file : stderr;
    fprintf(f, "# ---- after %s ----\n", p->name);
    ir_print(g, f);
    if (g->plan)
        plan_print(g, f, opt->target);
    fflush(f);
}

/* Run the passes of opt->opt_level on g (see the top of the file). False when one
 * failed (reported to g->diag). */
bool pass_run_pipeline(IrGraph *g, const PassOptions *opt)
{
#ifdef SPY_DEBUG
    bool verify = true;                    /* debug builds always verify */
#else
    bool verify = opt->verify;
#endif
    for (int i = 0; i < pass_pipeline_len; i++) {
        const PassInfo *p = &pass_pipeline[i];
        if (opt->opt_level < p->min_opt)
            continue;
        if (opt->hook)
            opt->hook(g, i, false, opt->hook_ctx);
        bool ok = p->run(g, opt) && !ir_failed(g);
        ok = ok && (!verify || (ir_verify(g, p->name) && plan_verify(g, opt->target, p->name)));
        ir_scratch_reset(g);               /* the pass's (and verifier's) temporaries */
        if (!ok)
            return false;
        if (pass_dump_wanted(opt->dump_after, p->name))
            dump(g, opt, p);
        if (opt->hook)
            opt->hook(g, i, true, opt->hook_ctx);
    }
    return true;
}
