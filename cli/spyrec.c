/* spyrec.c: the compiler driver.
 *
 *   spyrec MODEL -o OUT.sbin [--target FILE.yaml] [-O0|-O1|-O2] [--dump-after=PASS|all]
 *          [--emit=sbin|ir|asm|dot] [--verify] [--max-memory=MIB] [-MD [-MF FILE] [-MT T]]
 *          [--report FILE.json] [--bind NAME=FILE] [--input-shape NAME=SHAPE]
 *          [--input-seq NAME=FILE] [--print-ops] [--cache-dir DIR] [--cache-max=SIZE]
 *          [--cache-copy] [--no-cache] [--fsync]
 *
 * MODEL (.onnx, .pt2, or .ir text for golden tests) -> frontend -> pass pipeline ->
 * codegen -> bundle, written atomically (temporary file in the output's folder, renamed
 * over it; fsynced first with --fsync): a failed compile never leaves a file behind.
 *
 * Exit status: 0 success; 1 internal error (or out of memory, or the output cannot be
 * written); 2 bad or unsupported input (every diagnostic is printed) or bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spyrec_args.h"
#include "cli/spyrec_calib.h"
#include "cli/spyrec_buckets.h"
#include "codegen/cg.h"
#include "frontend/fe.h"
#include "ir.h"
#include "passes/pass.h"
#include "sbin.h"
#include "target.h"

/* The target of the allocator's longjmp on out of memory: file-scope so that setjmp
 * cannot clobber it. */
static jmp_buf oom_jmp;

/* Print every collected diagnostic to stderr (the Diag itself notes a cut-off). */
static void print_diags(const IrDiag *d)
{
    cli_progress_clear();
    ir_diag_print(d, stderr);
}

/* True if one of the diagnostics reports a broken internal invariant (the verifier's
 * messages) or an allocation failure, which are not the model's fault. */
static bool diags_internal(const IrDiag *d)
{
    for (int i = 0; i < d->nmsgs; i++)
        if (strstr(d->msgs[i], "internal error") || strstr(d->msgs[i], "internal:") ||
            strstr(d->msgs[i], "out of memory"))
            return true;
    return false;
}

/* Exit status for a failed stage: 2 if the input was reported at fault, else 1. */
static int failure_status(const IrDiag *d, const char *stage)
{
    print_diags(d);
    if (d->nerrors == 0) {
        fprintf(stderr, "spyrec: internal error: %s failed without a message\n", stage);
        return EXIT_INTERNAL;
    }
    return diags_internal(d) ? EXIT_INTERNAL : EXIT_INPUT;
}

/* True if path ends with suffix. */
static bool ends_with(const char *path, const char *suffix)
{
    size_t n = strlen(path), m = strlen(suffix);
    return n >= m && strcmp(path + n - m, suffix) == 0;
}

/* Load the model: .ir text through the IR parser, anything else through the
 * frontends. NULL on failure (diagnostics in diag). */
static IrGraph *load_model(const char *path, IrDiag *diag, size_t max_memory,
                           const Args *a, FeFileList *files)
{
    if (ends_with(path, ".ir")) {
        char *text = cli_read_text(path, diag);
        if (!text)
            return NULL;
        IrGraph *g = ir_parse(text, diag);
        free(text);
        if (g && !g->model_path)
            g->model_path = ir_strdup(g, path);
        if (g)
            g->arena_limit = max_memory;
        return g;
    }
    FeOptions fo = {.max_file_bytes = (size_t)2 << 30, .max_nesting = 64,
                    .arena_limit = max_memory, .specs = a->specs, .nspecs = a->nspecs,
                    .dim_bounds = a->dim_bounds, .ndim_bounds = a->ndim_bounds,
                    .files = files, .lenient_types = a->print_ops};
    return fe_load_model(path, diag, &fo);
}

/* Print the text IR of g into a malloc'd buffer. */
static bool render_ir(IrGraph *g, char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    if (!f)
        return false;
    ir_print(g, f);
    return fclose(f) == 0;
}

/* Disassemble a bundle into a malloc'd buffer. */
static bool render_asm(const uint8_t *bundle, size_t n, char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    if (!f)
        return false;
    bool ok = cg_disassemble(bundle, n, f);
    return fclose(f) == 0 && ok;
}

/* The outputs of mask as META's list ("0,2"; "" for none), malloc'd; NULL when out of
 * memory. */
static char *half_list(uint64_t mask)
{
    char *s = malloc(64 * 3 + 1);
    size_t len = 0;
    for (int j = 0; s && j < 64; j++)
        if (mask >> j & 1)
            len += (size_t)snprintf(s + len, 64 * 3 + 1 - len, len ? ",%d" : "%d", j);
    if (s)
        s[len] = '\0';
    return s;
}

/* Bundle meta text: compiler version, the flags that shaped the output and, when the
 * model computes some float32 outputs in half precision, their indices (half, from
 * fe_half_outputs; spyrun --check judges them as float16 outputs). */
static char *make_meta(const Args *a, const char *half)
{
    const char *fmt = "compiler=spyrec %s\nflags=%s\n%s%s%s";
    const char *flags = a->flags ? a->flags : "";
    bool h = half && *half;
    size_t n = strlen(fmt) + strlen(SPYREC_VERSION) + strlen(flags) + (h ? strlen(half) : 0) + 16;
    char *m = malloc(n);
    if (m)
        snprintf(m, n, fmt, SPYREC_VERSION, flags, h ? "half_outputs=" : "", h ? half : "",
                 h ? "\n" : "");
    return m;
}

/* Everything the out-of-memory path must see and free: at file scope, so that
 * longjmp cannot leave it indeterminate. */
static struct {
    IrDiag diag;
    IrGraph *g;
    uint8_t *bundle;
    size_t blen;
    bool bundle_mapped;            /* bundle maps the written output (stream_bundle) */
    char *text;
    char *half;                    /* the outputs computed in half precision (META) */
    FILE *dot;                     /* --emit=dot: memstream of the graphs */
    char *dot_buf;
    size_t dot_len;
    CliReport *report;             /* --report, NULL otherwise */
    FeFileList files;              /* external data files read by the frontend */
    CliCache cache;                /* --cache-dir: this compile's entry */
    CliWriter *writer;             /* a hit's output being written (the guessed one) */
    bool unwritable;               /* the guessed output's temporary file could not be made */
    const void *out;               /* what was written to the output */
    size_t out_len;
    CliOutFile out_file;           /* the bundle's file as written (stream_bundle) */
    double whatif_us;              /* --report: modelled time in fp16 mode, -1: none */
    PassQuant quant;               /* --precision=int8: the calibration */
    PassFp8Calib fp8cal;           /* --precision=fp8 --calibrate: input means */
    double calib_seconds;
    PassConstPool *cpool;          /* size buckets: the shared constant pool */
    CliBuckets buckets;            /* what they add to the bound bundle */
} live = {.whatif_us = -1};

/* Write the output (atomically) and remember it for the cache. Returns the exit
 * status. */
static int write_output(const Args *a, const void *buf, size_t len)
{
    live.out = buf;
    live.out_len = len;
    return cli_write_atomic(a->output, buf, len) ? 0 : EXIT_INTERNAL;
}

/* The pass observer: progress, report, and the graphs of --emit=dot --dump-after. */
static void on_pass(IrGraph *g, int index, bool done, void *ctx)
{
    const Args *a = ctx;
    if (!done)
        cli_progress_pass(index);
    cli_report_pass(live.report, g, index, done);
    const char *name = pass_pipeline[index].name;
    if (done && a->emit == EMIT_DOT && pass_dump_wanted(a->dump_after, name)) {
        char title[512];
        snprintf(title, sizeof title, "%s after %s", cli_base_name(a->input), name);
        cli_dot_print(g, live.dot, title);
    }
}

/* --emit=dot: write the graphs captured after a pass, or the final graph. */
static int emit_dot(IrGraph *g, IrDiag *diag, const Args *a)
{
    if (!a->dump_after) {
        char title[512];
        snprintf(title, sizeof title, "%s", cli_base_name(a->input));
        cli_dot_print(g, live.dot, title);
    }
    int bad = fclose(live.dot);
    live.dot = NULL;
    if (bad) {
        fprintf(stderr, "spyrec: out of memory\n");
        return EXIT_INTERNAL;
    }
    print_diags(diag);
    if (live.dot_len == 0) {
        fprintf(stderr, "spyrec: --emit=dot: pass '%s' does not run at -O%d\n", a->dump_after,
                a->opt_level);
        return EXIT_INPUT;
    }
    return write_output(a, live.dot_buf, live.dot_len);
}

/* --emit=sbin to a file: the bundle is streamed into the output, so that its constants
 * are never held whole in memory. When the cache or the report needs its bytes, the
 * written file is mapped (live.bundle); otherwise nothing reads it back, and it is
 * written with direct I/O (cg_out.c). Returns the exit status. */
static int stream_bundle(IrGraph *g, IrDiag *diag, const Args *a, const CgOptions *co)
{
    int fd = cli_atomic_open_bundle(a->output);   /* may reuse the old output's blocks */
    if (fd < 0)
        return EXIT_INTERNAL;
    size_t len = 0;
    int err = 0;
    bool keep = live.cache.status == CLI_CACHE_MISS || a->report;
    bool ok = cg_emit_bundle_fd(g, co, fd, !keep, &len, &err);
    if (ok && !err && ftruncate(fd, (off_t)len) != 0)   /* a reused file may be longer */
        err = errno;
    if ((!ok && !err) || ir_failed(g)) {
        close(fd);
        cli_io_abandon();
        return failure_status(diag, "code generation");
    }
    print_diags(diag);                     /* warnings */
    void *map = keep && !err && len ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : NULL;
    if (map == MAP_FAILED)
        map = NULL;
    if (map && cli_file_id(fd, &live.out_file.id))
        live.out_file.path = a->output;
    if (!cli_atomic_close(a->output, fd, err)) {
        if (map)
            munmap(map, len);
        return EXIT_INTERNAL;
    }
    if (keep && !map) {
        fprintf(stderr, "spyrec: %s: cannot map the written bundle: %s\n", a->output,
                strerror(errno));
        return EXIT_INTERNAL;
    }
    live.bundle = map;
    live.blen = len;
    live.bundle_mapped = true;
    live.out = map;
    live.out_len = len;
    return 0;
}

/* Orders two name pointers by strcmp. */
static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of the loaded model's inputs and computed values, sorted, in g's arena: the
 * tensors the DEBUG section may name (cg_debug.c), taken before the passes add theirs. */
static const char **model_names(IrGraph *g, uint32_t *n)
{
    const char **names = ir_alloc(g, ((size_t)g->nvals + 1) * sizeof *names);
    *n = 0;
    for (ValId v = 0; v < g->nvals; v++)
        if (g->vals[v].kind != IR_VAL_CONST)
            names[(*n)++] = g->vals[v].name;
    qsort(names, *n, sizeof *names, cmp_name);
    return names;
}

/* Run the pipeline and codegen on a loaded graph and write the output. Returns the
 * exit status. The caller holds the out-of-memory jump. */
static int compile_graph(IrGraph *g, IrDiag *diag, const Args *a, const SpyTarget *target)
{
    bool dot = a->emit == EMIT_DOT;
    if (dot && !(live.dot = open_memstream(&live.dot_buf, &live.dot_len))) {
        fprintf(stderr, "spyrec: out of memory\n");
        return EXIT_INTERNAL;
    }
    PassOptions po = {
        .opt_level = a->opt_level,
        .target = target,
        .dump_after = dot ? NULL : a->dump_after,
        .dump_file = stderr,
        .verify = a->verify,
        .precision = a->precision,
        .keep_fp32 = a->keep_fp32,
        .quant = a->precision == PASS_PREC_INT8 ? &live.quant : NULL,
        .fp8cal = a->precision == PASS_PREC_FP8 && a->ncalib ? &live.fp8cal : NULL,
        .hook = on_pass,
        .hook_ctx = (void *)a,
    };
    bool buckets = a->emit == EMIT_SBIN && a->dim_buckets > 1 && g->nsymdims &&
                   ends_with(a->input, ".onnx");
    if (buckets && !(live.cpool = pass_cpool_new()))
        ir_oom(g);
    po.cpool = live.cpool;
    uint32_t nnames = 0;
    const char **names = a->strip || a->emit == EMIT_IR ? NULL : model_names(g, &nnames);
    live.half = half_list(fe_half_outputs(g));  /* before the pipeline rewrites casts */
    if (!pass_run_pipeline(g, &po) || ir_failed(g))
        return failure_status(diag, "the pass pipeline");
    if (dot)
        return emit_dot(g, diag, a);

    size_t len = 0;
    if (a->emit == EMIT_IR) {
        if (!render_ir(g, &live.text, &len)) {
            fprintf(stderr, "spyrec: out of memory\n");
            return EXIT_INTERNAL;
        }
        print_diags(diag);
        return write_output(a, live.text, len);
    }
    cli_progress_stage("codegen");
    char *meta = make_meta(a, live.half);
    CgOptions co = {.target = target, .meta = meta ? meta : "", .debug = !a->strip,
                    .model_names = names, .nmodel_names = nnames};
    if (buckets) {
        cli_progress_stage("size buckets");
        if (!cli_buckets_build(a, target, g, live.cpool, co.meta, g->oom, &live.buckets))
            ir_oom(g);
        co.variants = live.buckets.variants;
        co.variants_len = live.buckets.variants_len;
        co.const_extra = live.buckets.extra;
        co.const_extra_off = live.buckets.extra_off;
        co.const_extra_len = live.buckets.extra_len;
        co.shared_consts = true;
        cli_progress_stage("codegen");
    }
    if (a->emit == EMIT_SBIN && strcmp(a->output, "-") != 0) {
        int rc = stream_bundle(g, diag, a, &co);
        free(meta);
        return rc;
    }
    bool ok = cg_emit_bundle(g, &co, &live.bundle, &live.blen);
    free(meta);
    if (!ok || ir_failed(g))
        return failure_status(diag, "code generation");
    print_diags(diag);                     /* warnings */
    if (a->emit == EMIT_ASM) {
        if (!render_asm(live.bundle, live.blen, &live.text, &len)) {
            fprintf(stderr, "spyrec: internal error: cannot disassemble the bundle\n");
            return EXIT_INTERNAL;
        }
        return write_output(a, live.text, len);
    }
    return write_output(a, live.bundle, live.blen);
}

/* --precision=int8: calibrate on a second copy of the model (freed here), filling
 * live.quant. Returns the exit status (errors in diag). */
static int calibrate(const Args *a, const SpyTarget *target, IrDiag *diag)
{
    cli_progress_stage("calibrate");
    IrGraph *g = load_model(a->input, diag, a->max_memory, a, NULL);
    bool ok = g && !ir_failed(g) && !diag->nerrors;
    if (ok) {
        g->oom = &oom_jmp;
        g->diag = diag;
        ok = a->precision == PASS_PREC_FP8
                 ? cli_fp8_calibrate(g, a, target, &live.fp8cal, &live.calib_seconds)
                 : cli_calibrate(g, a, target, &live.quant, &live.calib_seconds);
        g->oom = NULL;
    }
    ir_graph_free(g);
    return ok ? 0 : failure_status(diag, "calibration");
}

/* The what-if figure of the compile report: the modelled device time (us) of the same
 * model compiled with --precision=fp16 (a second, quiet compile whose bundle goes to a
 * temporary file and is timed by the runtime's timing model), or -1 when it cannot be
 * had. Only for a default-precision compile with --report. */
static double whatif_fp16_us(const Args *a, const SpyTarget *target)
{
    IrDiag diag;
    ir_diag_init(&diag, a->input);
    double us = -1;
    IrGraph *g = load_model(a->input, &diag, a->max_memory, a, NULL);
    PassOptions po = {.opt_level = a->opt_level, .target = target, .dump_file = stderr,
                      .precision = PASS_PREC_FP16, .keep_fp32 = a->keep_fp32};
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/spyrec-whatif-XXXXXX", dir && dir[0] ? dir : "/tmp");
    int fd = -1;
    if (g && !ir_failed(g) && !diag.nerrors && pass_run_pipeline(g, &po) && !ir_failed(g) &&
        (fd = mkstemp(path)) >= 0) {
        CgOptions co = {.target = target, .meta = ""};
        size_t len = 0;
        int err = 0;
        spy_model *m = NULL;
        char msg[256];
        if (cg_emit_bundle_fd(g, &co, fd, false, &len, &err) && !err && !ir_failed(g) &&
            spy_model_load_file(path, &m, msg, sizeof msg) == SPY_OK)
            us = spy_model_device_us(m);
        spy_model_free(m);
        close(fd);
        unlink(path);
    }
    if (g)
        ir_graph_free(g);
    ir_diag_free(&diag);
    return us;
}

/* -MD: write the dependency file of a successful compile (atomically). On failure the
 * output is removed too, so that make does not take it for up to date. */
static int write_deps(const Args *a)
{
    char *dflt = a->deps_file ? NULL : cli_deps_default_path(a->output);
    const char *path = a->deps_file ? a->deps_file : dflt;
    const char **pre = calloc((size_t)live.files.n + (size_t)a->nspecs + 3, sizeof *pre);
    char *self = cli_self_path(a->argv0), *text = NULL;
    if (pre && path) {
        int n = 0;
        pre[n++] = a->input;
        for (int i = 0; i < live.files.n; i++)
            pre[n++] = live.files.paths[i];
        if (a->target_path)
            pre[n++] = a->target_path;
        for (int i = 0; i < a->nspecs; i++)
            if (a->bind_path[i])
                pre[n++] = a->bind_path[i];
        if (self)
            pre[n++] = self;
        text = cli_deps_text(a->deps_target ? a->deps_target : a->output, pre, n);
    }
    bool ok = text != NULL;
    if (!ok)
        fprintf(stderr, "spyrec: out of memory while writing the dependency file\n");
    else
        ok = cli_write_atomic(path, text, strlen(text));
    if (!ok && strcmp(a->output, "-") != 0)
        unlink(a->output);
    free(text);
    free(self);
    free(pre);
    free(dflt);
    return ok ? 0 : EXIT_INTERNAL;
}

/* --print-ops: each distinct frontend operator of the model, once, in first-use order
 * ("Domain::Op" outside the default ONNX domain). */
static void print_ops(IrGraph *g)
{
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        const char *op = n->op == IR_OP_FOREIGN ? n->foreign.op_type : ir_op_info[n->op].name;
        const char *dom = n->op == IR_OP_FOREIGN ? n->foreign.domain : "";
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++) {
            const IrNode *m = &g->nodes[j];
            const char *op2 = m->op == IR_OP_FOREIGN ? m->foreign.op_type : ir_op_info[m->op].name;
            const char *dom2 = m->op == IR_OP_FOREIGN ? m->foreign.domain : "";
            seen = !strcmp(op, op2) && !strcmp(dom ? dom : "", dom2 ? dom2 : "");
        }
        if (!seen)
            printf("%s%s%s\n", dom && dom[0] ? dom : "", dom && dom[0] ? "::" : "", op);
    }
}

/* --report: write the compile report; turns success into failure if it cannot be
 * written. g is NULL when the graph is not usable (not loaded, out of memory). */
static int write_report(const Args *a, const IrDiag *diag, const SpyTarget *target,
                        IrGraph *g, int rc)
{
    static const char *const cache_status_names[] = {"off", "miss", "hit"};
    bool hit = live.cache.status == CLI_CACHE_HIT;
    CliReportInfo ri = {
        .compiler = "spyrec " SPYREC_VERSION,
        .model = a->input,
        .output = a->output,
        .emit = cli_emit_names[a->emit],
        .flags = a->flags,
        .opt_level = a->opt_level,
        .target = target,
        .target_path = a->target_path,
        .exit_status = rc,
        .diag = diag,
        .g = g,
        .bundle = rc != 0 ? NULL : hit && a->emit == EMIT_SBIN ? live.cache.out : live.bundle,
        .bundle_len = hit ? live.cache.out_len : live.blen,
        .cache = cache_status_names[live.cache.status],
        .cache_key = live.cache.key[0] ? live.cache.key : NULL,
        .fp16_whatif_us = live.whatif_us,
        .quant = a->precision == PASS_PREC_INT8 ? &live.quant : NULL,
        .fp8cal = a->precision == PASS_PREC_FP8 && a->ncalib ? &live.fp8cal : NULL,
        .calib_method = a->calib_percentile > 0 ? "percentile" : "minmax",
        .calib_sets = a->ncalib,
        .calib_seconds = live.calib_seconds,
    };
    if (!cli_report_write(live.report, a->report, &ri))
        return rc ? rc : EXIT_INTERNAL;
    return rc;
}

/* The target: --target FILE or the built-in one. Returns -1 when loaded, else the
 * exit status (messages printed; the report, if any, is written). */
static int load_target(const Args *a, SpyTarget *target)
{
    if (!a->target_path) {
        fe_default_target(target);
        return -1;
    }
    IrDiag tdiag;
    ir_diag_init(&tdiag, a->target_path);
    int rc = -1;
    if (!fe_load_target(a->target_path, target, &tdiag)) {
        rc = failure_status(&tdiag, "loading the target");
        if (a->report)
            rc = write_report(a, &tdiag, NULL, NULL, rc);
    }
    ir_diag_free(&tdiag);
    return rc;
}

/* --cache-dir: the key of this compile, and its output when the cache holds it. The
 * output of the entry the cache guesses is written (not yet renamed) while the key is
 * computed; a wrong guess is thrown away. No cache for --print-ops, nor for the
 * standard error dumps of --dump-after, which a hit would not print. */
static void cache_lookup(const Args *a, IrDiag *diag)
{
    static const char *inputs[SPEC_MAX];
    int n = 0;
    for (int i = 0; i < a->nspecs; i++)
        if (a->bind_path[i])
            inputs[n++] = a->bind_path[i];
    bool off = a->no_cache || a->print_ops || (a->dump_after && a->emit != EMIT_DOT);
    const char *out = a->output ? a->output : "-";     /* --print-ops takes no -o */
    CliCacheSpec spec = {
        .dir = off ? NULL : a->cache_dir,
        .max_bytes = a->cache_max,
        .model = a->input,
        .model_name = a->emit == EMIT_IR ? a->input : cli_base_name(a->input),
        .flags = a->flags,
        .target_path = a->target_path,
        .inputs = inputs,
        .ninputs = n,
        .argv0 = a->argv0,
        .version = SPYREC_VERSION,
        .link = a->emit == EMIT_SBIN && !a->cache_copy && strcmp(out, "-"),
    };
    cli_cache_guess(&live.cache, &spec);
    if (live.cache.guess_out && strcmp(out, "-")) {
        live.writer = cli_write_begin(a->output, live.cache.guess_out, live.cache.guess_len,
                                      live.cache.guess_crc, live.cache.guess_src);
        live.unwritable = !live.writer;    /* said why; a hit would only say it again */
    }
    cli_cache_lookup(&live.cache, diag, a->deps ? &live.files : NULL);
    bool dropped;
    if (live.writer && !(live.cache.status == CLI_CACHE_HIT && live.cache.guess_right)) {
        cli_write_end(live.writer, false, &dropped);   /* a wrong guess: never renamed */
        live.writer = NULL;
    }
}

/* A cache hit: the output (its CRC checked as it is written), the warnings of the
 * original compile, the dependency file. Returns the exit status, or -1 when the output
 * failed its CRC: the entry is gone, the status is a miss and the compile must run. */
static int write_hit(const Args *a, IrDiag *diag)
{
    bool damaged;
    live.out = live.cache.out;
    live.out_len = live.cache.out_len;
    CliWriter *w = live.writer;            /* started on the right guess */
    live.writer = NULL;
    if (live.unwritable)
        return EXIT_INTERNAL;
    if (w ? !cli_write_end(w, true, &damaged)
          : !cli_write_atomic_checked(a->output, live.cache.out, live.cache.out_len,
                                      live.cache.out_crc, live.cache.out_src, &damaged))
        return EXIT_INTERNAL;
    if (damaged) {                         /* a miss after all: compile (the caller) */
        cli_cache_damaged(&live.cache);
        live.out = NULL;
        live.out_len = 0;
        ir_diag_free(diag);                /* the entry's warnings come again */
        ir_diag_init(diag, a->input);
        fe_file_list_free(&live.files);
        return -1;
    }
    print_diags(diag);
    return a->deps ? write_deps(a) : 0;
}

/* Load, compile, write. Returns the exit status. */
static int compile(const Args *a)
{
    IrDiag *diag = &live.diag;
    SpyTarget target;
    int rc = load_target(a, &target);
    if (rc >= 0)
        return rc;
    ir_diag_init(diag, a->input);
    cache_lookup(a, diag);
    if (live.cache.status == CLI_CACHE_HIT)
        rc = write_hit(a, diag);           /* -1: its output was damaged, compile */
    bool oom = false, cached = live.cache.status == CLI_CACHE_MISS;
    if (live.cache.status == CLI_CACHE_HIT)
        goto done;
    if (setjmp(oom_jmp)) {
        cli_io_abandon();
        cli_progress_clear();
        fprintf(stderr, "spyrec: out of memory\n");
        rc = EXIT_INTERNAL;
        oom = true;
    } else {
        cli_progress_stage("load");
        live.g = load_model(a->input, diag, a->max_memory, a,
                            a->deps || cached ? &live.files : NULL);
        if (!live.g || ir_failed(live.g) || diag->nerrors) {
            rc = failure_status(diag, "loading the model");
        } else {
            live.g->oom = &oom_jmp;
            live.g->diag = diag;
            if (a->print_ops) {
                cli_progress_clear();
                print_ops(live.g);
                rc = 0;
                goto done;
            }
            if (a->max_memory)
                live.g->arena_limit = a->max_memory;
            rc = 0;
            if (a->precision == PASS_PREC_INT8 || (a->precision == PASS_PREC_FP8 && a->ncalib))
                rc = calibrate(a, &target, diag);
            if (rc == 0)
                rc = compile_graph(live.g, diag, a, &target);
            if (rc == 0 && a->report && a->emit == EMIT_SBIN && a->precision == PASS_PREC_MODEL)
                live.whatif_us = whatif_fp16_us(a, &target);
            if (rc == 0 && a->deps)
                rc = write_deps(a);
            if (rc == 0 && cached)
                cli_cache_store(&live.cache, live.out, live.out_len, &live.out_file, diag,
                                &live.files);
        }
    }
done:
    cli_progress_clear();
    if (a->report) {
        if (live.g)
            live.g->oom = NULL;        /* the report never allocates in the graph */
        rc = write_report(a, diag, &target, oom ? NULL : live.g, rc);
    }
    if (live.dot)
        fclose(live.dot);
    free(live.dot_buf);
    if (live.bundle_mapped && live.bundle)
        munmap(live.bundle, live.blen);
    else
        free(live.bundle);
    free(live.text);
    free(live.half);
    if (live.g) {
        live.g->oom = NULL;
        ir_graph_free(live.g);
    }
    fe_file_list_free(&live.files);
    cli_calib_free(&live.quant);
    cli_fp8_calib_free(&live.fp8cal);
    pass_cpool_free(live.cpool);
    cli_buckets_free(&live.buckets);
    cli_cache_free(&live.cache);
    ir_diag_free(diag);
    return rc;
}

int main(int argc, char **argv)
{
    Args a;
    int rc = cli_spyrec_parse_args(argc, argv, &a);
    if (rc >= 0) {
        cli_spyrec_free_args(&a);
        return rc;
    }
    cli_io_signals();
    cli_io_durable(a.fsync);
    cli_progress_init(!a.dump_after || a.emit == EMIT_DOT, a.opt_level);
    if (a.report && !(live.report = cli_report_new())) {
        fprintf(stderr, "spyrec: out of memory\n");
        cli_spyrec_free_args(&a);
        return EXIT_INTERNAL;
    }
    rc = compile(&a);
    cli_report_free(live.report);
    cli_spyrec_free_args(&a);
    cli_io_finish();
    return rc;
}
