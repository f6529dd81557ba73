/* spyrec.c: the compiler driver.
 *
 *   spyrec MODEL -o OUT.sbin [--target FILE.yaml] [-O0|-O1|-O2] [--dump-after=PASS|all]
 *          [--emit=sbin|ir|asm|dot] [--verify] [--max-memory=MIB] [-MD [-MF FILE] [-MT T]]
 *          [--report FILE.json] [--bind NAME=FILE] [--input-shape NAME=SHAPE]
 *          [--input-seq NAME=FILE] [--print-ops] [--cache-dir DIR] [--cache-max=SIZE]
 *          [--no-cache]
 *
 * MODEL (.onnx, .pt2, or .ir text for golden tests) -> frontend -> pass pipeline ->
 * codegen -> bundle, written atomically (temporary file in the output's folder, fsync,
 * rename): a failed compile never leaves a file behind.
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
#include "codegen/cg.h"
#include "frontend/fe.h"
#include "ir.h"
#include "passes/pass.h"
#include "sbin.h"
#include "target.h"

#ifndef SPYREC_VERSION
#define SPYREC_VERSION "0.1.0"            /* the compiler's version, stored in bundles */
#endif

enum { EXIT_INTERNAL = 1, EXIT_INPUT = 2 };

typedef enum { EMIT_SBIN, EMIT_IR, EMIT_ASM, EMIT_DOT } EmitKind;
static const char *const emit_names[] = {"sbin", "ir", "asm", "dot"};

#define SPEC_MAX 64                       /* --bind / --input-shape options at most */

typedef struct {
    const char *input;             /* model path */
    const char *output;            /* -o path, "-" for stdout, NULL if not given */
    const char *target_path;       /* --target, NULL for the built-in target */
    int opt_level;                 /* 0..2 */
    const char *dump_after;        /* --dump-after, NULL if not given */
    EmitKind emit;
    bool verify;
    int precision;                 /* --precision: PASS_PREC_MODEL (default) or _FP16 */
    size_t max_memory;             /* --max-memory in bytes, 0 = unlimited */
    char *flags;                   /* argv without input/output, for the bundle's meta */
    bool print_ops;                /* --print-ops: list the model's operators and exit */
    FeInputSpec specs[SPEC_MAX];   /* --bind / --input-shape specialisations */
    FeTensor bound[SPEC_MAX];      /* values read for --bind */
    FeSeq seqs[SPEC_MAX];          /* structures of sequence / optional inputs */
    const char *bind_path[SPEC_MAX]; /* their files (dependencies), NULL for shapes */
    int nspecs;
    bool deps;                     /* -MD: write a make dependency file */
    const char *deps_file;         /* -MF FILE (default: OUT with .d) */
    const char *deps_target;       /* -MT TARGET (default: the output file) */
    const char *report;            /* --report FILE.json */
    const char *argv0;
    const char *cache_dir;         /* --cache-dir or SPYREC_CACHE_DIR; NULL: no cache */
    uint64_t cache_max;            /* --cache-max in bytes, 0 = unbounded */
    bool no_cache;                 /* --no-cache */
} Args;

/* The target of the allocator's longjmp on out of memory: file-scope so that setjmp
 * cannot clobber it. */
static jmp_buf oom_jmp;

/* Print the usage text, including the pass names --dump-after accepts. */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: spyrec MODEL -o OUT.sbin [options]\n"
            "\n"
            "Compile an ONNX model (.onnx), a torch.export archive (.pt2) or a text IR file\n"
            "(.ir) into a kernel bundle (.sbin) for the 32-core accelerator.\n"
            "\n"
            "options:\n"
            "  -o FILE               output file ('-' for standard output); written\n"
            "                        atomically, never left behind by a failed compile\n"
            "  --target FILE.yaml    target description (default: the built-in spyre32)\n"
            "  -O0 | -O1 | -O2       optimisation level (default -O2)\n"
            "  --emit=sbin|ir|asm|dot  what to write: the bundle (default), the text IR\n"
            "                        after the pipeline, the bundle's disassembly, or a\n"
            "                        Graphviz graph (after the pipeline, or after the pass\n"
            "                        named by --dump-after; fused kernels as clusters)\n"
            "  --dump-after=PASS     print the IR to standard error after PASS ('all': after\n"
            "                        every pass)\n"
            "  -MD                   also write a make dependency file: the output depends\n"
            "                        on the model, its external data, the --target file,\n"
            "                        --bind files and spyrec itself\n"
            "  -MF FILE              the dependency file (default: OUT with extension .d)\n"
            "  -MT TARGET            the rule's target (default: OUT)\n"
            "  --report FILE.json    write a compile report: diagnostics, decompositions,\n"
            "                        kernels and their split over cores and tiles, LX and\n"
            "                        DRAM plans, modelled time per kernel, section sizes\n"
            "                        (written also when the compile fails)\n"
            "  --verify              verify the IR and the kernel plan after every pass (always\n"
            "                        on in debug builds)\n"
            "  --precision=fp32|fp16 fp16: every float32 tensor on the card is DLFloat16,\n"
            "                        matrix products accumulate in float32 (default: the\n"
            "                        model's own types; fp32 is the same)\n"
            "  --bind NAME=FILE      specialise: input NAME becomes a constant read from FILE\n"
            "                        (.pb or .npy); for inputs that decide shapes (axes,\n"
            "                        target shapes, pads) which a static compile needs\n"
            "  --input-shape NAME=D0xD1...\n"
            "                        specialise: fix the dynamic dimensions of input NAME;\n"
            "                        for a sequence or optional input: N:D0xD1,D0xD1,...\n"
            "                        (N tensors of these shapes) or none (no value); the\n"
            "                        bundle then has inputs NAME[0], NAME[1], ...\n"
            "  --input-seq NAME=FILE specialise a sequence or optional input to the length\n"
            "                        and element shapes of a SequenceProto / OptionalProto\n"
            "                        file (its values are not used)\n"
            "  --print-ops           list the model's operators (one per line) and exit\n"
            "  --max-memory=MIB      cap the compiler's graph memory; exceeding it is reported\n"
            "                        as 'out of memory'\n"
            "  --cache-dir DIR       compile cache: reuse the output of an earlier compile\n"
            "                        of the same model, external data, flags, target and\n"
            "                        compiler (default: $SPYREC_CACHE_DIR; no cache when\n"
            "                        neither is set)\n"
            "  --cache-max=SIZE      bound the cache folder (512M, 2G, ...): the least\n"
            "                        recently used entries are removed\n"
            "  --no-cache            do not use the cache, whatever the two above say\n"
            "  --version             print the version and exit\n"
            "  -h, --help            print this help and exit\n"
            "\n"
            "When standard error is a terminal, spyrec shows its progress there ('[pass 8/12\n"
            "fuse]'); otherwise it prints nothing but diagnostics.\n"
            "\n"
            "passes (in pipeline order, with the lowest -O level that runs them):\n");
    for (int i = 0; i < pass_pipeline_len; i++)
        fprintf(f, "  %-12s -O%d  %s\n", pass_pipeline[i].name, pass_pipeline[i].min_opt,
                pass_pipeline[i].what ? pass_pipeline[i].what : "");
    fprintf(f,
            "\n"
            "exit status: 0 success; 1 internal error, out of memory, or the output could not\n"
            "be written; 2 bad or unsupported input or bad usage (every problem is printed as\n"
            "'MODEL: node 'NAME' (OP): message').\n");
}

/* Report a usage error and return the exit status for it. */
static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "spyrec: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see spyrec --help)\n");
    return EXIT_INPUT;
}

/* Append " word" to the malloc'd flags string *s. */
static void flags_add(char **s, const char *word)
{
    size_t n = *s ? strlen(*s) : 0, w = strlen(word);
    char *p = realloc(*s, n + w + 2);
    if (!p) {
        fprintf(stderr, "spyrec: out of memory\n");
        exit(EXIT_INTERNAL);
    }
    if (n)
        p[n++] = ' ';
    memcpy(p + n, word, w + 1);
    *s = p;
}

/* The last path component of p. */
static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Handle one option that takes a value: "--name=V", "--name V" (or "-oV", "-o V" for
 * short ones). Returns the value and advances *i, or NULL if argv[*i] is not this
 * option. Sets *missing when the value is absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=' && name[1] == '-')
        return a + n + 1;
    if (a[n] != '\0') {
        if (name[1] != '-')                /* "-oFILE" */
            return a + n;
        return NULL;
    }
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

/* NAME=VALUE split: returns a malloc'd NAME and sets *value, or NULL. */
static char *split_spec(const char *v, const char **value)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1])
        return NULL;
    *value = eq + 1;
    return strndup(v, (size_t)(eq - v));
}

/* The shape D0xD1x... of --input-shape into sp; false if malformed. */
static bool parse_dims(const char *value, FeInputSpec *sp)
{
    sp->rank = 0;
    for (const char *p = value; *p;) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || sp->rank == IR_MAX_RANK || (*end && *end != 'x'))
            return false;
        sp->dims[sp->rank++] = d;
        p = *end ? end + 1 : end;
    }
    return true;
}

/* The value of --bind (a tensor file), --input-seq (a SequenceProto / OptionalProto
 * file: its structure) or --input-shape (a shape, or N:SHAPE,... / none for a sequence
 * or optional input) into spec i. Returns -1 to go on, else an exit status. */
static int spec_value(Args *a, int i, const char *opt, const char *name, const char *value,
                      const char *v)
{
    FeInputSpec *sp = &a->specs[i];
    char err[512];
    if (!strcmp(opt, "--bind") || !strcmp(opt, "--input-seq")) {
        bool seq = opt[2] == 'i';
        if (seq ? !fe_seq_read(value, &a->seqs[i], err, sizeof err)
                : !fe_tensor_read(value, &a->bound[i], err, sizeof err)) {
            fprintf(stderr, "spyrec: %s %s: %s\n", opt, name, err);
            return EXIT_INPUT;
        }
        if (seq)
            sp->seq = &a->seqs[i];
        else
            sp->value = &a->bound[i];
        a->bind_path[i] = value;
        return -1;
    }
    int r = cli_seq_parse(value, &a->seqs[i]);
    if (r > 0)
        sp->seq = &a->seqs[i];
    if (r < 0 || (r == 0 && !parse_dims(value, sp)))
        return usage_error("bad --input-shape '%s' (NAME=D0xD1..., dims >= 0; NAME=N:D0xD1,"
                           "D0xD1,... or NAME=none for a sequence or optional)", v);
    return -1;
}

/* --bind NAME=FILE (bind: the input becomes a constant read from FILE), --input-shape
 * NAME=D0xD1x... (fix its dynamic dimensions; or the structure of a sequence) or
 * --input-seq NAME=FILE. Returns -1 to go on, else an exit status. */
static int parse_spec(Args *a, const char *v, const char *opt)
{
    const char *value;
    char *name = split_spec(v, &value);
    if (!name) {
        fprintf(stderr, "spyrec: bad %s '%s' (NAME=%s) (see spyrec --help)\n", opt, v,
                strcmp(opt, "--input-shape") ? "FILE" : "D0xD1...");
        return EXIT_INPUT;
    }
    if (a->nspecs == SPEC_MAX) {
        free(name);
        return usage_error("too many input specialisations ('%s')", v);
    }
    FeInputSpec *sp = &a->specs[a->nspecs];
    sp->name = name;
    sp->rank = -1;
    bool file = strcmp(opt, "--input-shape") != 0;
    flags_add(&a->flags, opt);
    flags_add(&a->flags, file ? name : v);
    int rc = spec_value(a, a->nspecs, opt, name, value, v);
    if (rc >= 0) {
        free(name);
        memset(sp, 0, sizeof *sp);
        return rc;
    }
    a->nspecs++;
    return -1;
}

/* Release what parse_args allocated. */
static void free_args(Args *a)
{
    for (int i = 0; i < a->nspecs; i++) {
        free((char *)a->specs[i].name);
        if (a->specs[i].value)
            fe_tensor_free(&a->bound[i]);
        if (a->specs[i].seq)
            fe_seq_free(&a->seqs[i]);
    }
    free(a->flags);
}

/* Set a->emit from the value of --emit and record it in the flags; false when v is not
 * a known kind. */
static bool parse_emit(Args *a, const char *v)
{
    if (!strcmp(v, "sbin"))
        a->emit = EMIT_SBIN;
    else if (!strcmp(v, "ir"))
        a->emit = EMIT_IR;
    else if (!strcmp(v, "asm"))
        a->emit = EMIT_ASM;
    else if (!strcmp(v, "dot"))
        a->emit = EMIT_DOT;
    else
        return false;
    flags_add(&a->flags, "--emit");
    flags_add(&a->flags, v);
    return true;
}

/* Check the parsed options against each other (and default the output to standard
 * output where that is allowed). Returns -1 to go on, else an exit status. */
static int check_args(Args *a)
{
    if (!a->input)
        return usage_error("%s", "no model given");
    if ((a->deps_file || a->deps_target) && !a->deps)
        return usage_error("%s", "-MF and -MT go with -MD");
    if (!a->output && !a->print_ops) {
        if (a->emit == EMIT_SBIN)
            return usage_error("%s", "no output file given (use -o OUT.sbin)");
        a->output = "-";
    }
    if (a->deps && !a->deps_target && !strcmp(a->output ? a->output : "-", "-"))
        return usage_error("%s", "-MD needs an output file (-o FILE) or -MT TARGET");
    if (a->deps && !a->deps_file && !strcmp(a->output ? a->output : "-", "-"))
        return usage_error("%s", "-MD with standard output needs -MF FILE");
    return -1;
}

/* Parse the command line into a. Returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, Args *a)
{
    memset(a, 0, sizeof *a);
    a->opt_level = 2;
#ifdef SPY_DEBUG
    a->verify = true;
#endif
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v;
        bool missing = false;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(arg, "--version")) {
            printf("spyrec %s (bundle format v%d.%d)\n", SPYREC_VERSION, SPY_SBIN_MAJOR,
                   SPY_SBIN_MINOR);
            return 0;
        } else if ((v = opt_value(argc, argv, &i, "-o", &missing)) ||
                   (v = opt_value(argc, argv, &i, "--output", &missing))) {
            if (a->output)
                return usage_error("more than one output file given ('%s')", v);
            a->output = v;
        } else if ((v = opt_value(argc, argv, &i, "--precision", &missing))) {
            if (strcmp(v, "fp32") && strcmp(v, "fp16"))
                return usage_error("bad --precision value '%s' (fp32 or fp16)", v);
            a->precision = strcmp(v, "fp16") ? PASS_PREC_MODEL : PASS_PREC_FP16;
            flags_add(&a->flags, "--precision");
            flags_add(&a->flags, v);
        } else if ((v = opt_value(argc, argv, &i, "--target", &missing))) {
            a->target_path = v;
            flags_add(&a->flags, "--target");
            flags_add(&a->flags, base_name(v));
        } else if ((v = opt_value(argc, argv, &i, "--dump-after", &missing))) {
            if (strcmp(v, "all") != 0 && !pass_find(v))
                return usage_error("unknown pass '%s' for --dump-after", v);
            a->dump_after = v;
            flags_add(&a->flags, arg);
            if (strchr(arg, '=') == NULL)
                flags_add(&a->flags, v);
        } else if ((v = opt_value(argc, argv, &i, "--emit", &missing))) {
            if (!parse_emit(a, v))
                return usage_error("unknown --emit kind '%s' (sbin, ir, asm or dot)", v);
        } else if ((v = opt_value(argc, argv, &i, "--max-memory", &missing))) {
            char *end;
            errno = 0;
            unsigned long long mib = strtoull(v, &end, 10);
            if (errno || end == v || *end || mib == 0 || mib > ((size_t)-1 >> 20))
                return usage_error("bad --max-memory value '%s' (MiB, > 0)", v);
            a->max_memory = (size_t)mib << 20;
        } else if ((v = opt_value(argc, argv, &i, "--bind", &missing)) ||
                   (v = opt_value(argc, argv, &i, "--input-shape", &missing)) ||
                   (v = opt_value(argc, argv, &i, "--input-seq", &missing))) {
            int rc = parse_spec(a, v, !strncmp(arg, "--bind", 6)          ? "--bind"
                                      : !strncmp(arg, "--input-shape", 13) ? "--input-shape"
                                                                           : "--input-seq");
            if (rc >= 0)
                return rc;
        } else if (!strcmp(arg, "--print-ops")) {
            a->print_ops = true;
        } else if (!strcmp(arg, "-MD")) {
            a->deps = true;
        } else if ((v = opt_value(argc, argv, &i, "-MF", &missing))) {
            a->deps_file = v;
        } else if ((v = opt_value(argc, argv, &i, "-MT", &missing))) {
            a->deps_target = v;
        } else if ((v = opt_value(argc, argv, &i, "--report", &missing))) {
            a->report = v;
        } else if ((v = opt_value(argc, argv, &i, "--cache-dir", &missing))) {
            a->cache_dir = v;
        } else if ((v = opt_value(argc, argv, &i, "--cache-max", &missing))) {
            if (!cli_cache_parse_size(v, &a->cache_max))
                return usage_error("bad --cache-max value '%s' (bytes, or 512K, 64M, 2G, 1T)", v);
        } else if (!strcmp(arg, "--no-cache")) {
            a->no_cache = true;
        } else if (missing) {
            return usage_error("option '%s' needs a value", arg);
        } else if (arg[0] == '-' && arg[1] == 'O' && arg[2] >= '0' && arg[2] <= '2' && !arg[3]) {
            a->opt_level = arg[2] - '0';
            flags_add(&a->flags, arg);
        } else if (!strcmp(arg, "--verify")) {
            a->verify = true;
            flags_add(&a->flags, arg);
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return usage_error("unknown option '%s'", arg);
        } else if (a->input) {
            return usage_error("more than one model given ('%s')", arg);
        } else {
            a->input = arg;
        }
    }
    a->argv0 = argv[0];
    if (!a->cache_dir && getenv("SPYREC_CACHE_DIR") && *getenv("SPYREC_CACHE_DIR"))
        a->cache_dir = getenv("SPYREC_CACHE_DIR");
    return check_args(a);
}

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

/* Bundle meta text: compiler version and the flags that shaped the output. */
static char *make_meta(const Args *a)
{
    const char *fmt = "compiler=spyrec %s\nflags=%s\n";
    const char *flags = a->flags ? a->flags : "";
    size_t n = strlen(fmt) + strlen(SPYREC_VERSION) + strlen(flags) + 1;
    char *m = malloc(n);
    if (m)
        snprintf(m, n, fmt, SPYREC_VERSION, flags);
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
    FILE *dot;                     /* --emit=dot: memstream of the graphs */
    char *dot_buf;
    size_t dot_len;
    CliReport *report;             /* --report, NULL otherwise */
    FeFileList files;              /* external data files read by the frontend */
    CliCache cache;                /* --cache-dir: this compile's entry */
    const void *out;               /* what was written to the output */
    size_t out_len;
} live;

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
    if (done && a->emit == EMIT_DOT && a->dump_after &&
        (!strcmp(a->dump_after, "all") || !strcmp(a->dump_after, name))) {
        char title[512];
        snprintf(title, sizeof title, "%s after %s", base_name(a->input), name);
        cli_dot_print(g, live.dot, title);
    }
}

/* --emit=dot: write the graphs captured after a pass, or the final graph. */
static int emit_dot(IrGraph *g, IrDiag *diag, const Args *a)
{
    if (!a->dump_after) {
        char title[512];
        snprintf(title, sizeof title, "%s", base_name(a->input));
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
 * written file is mapped (live.bundle). Returns the exit status. */
static int stream_bundle(IrGraph *g, IrDiag *diag, const Args *a, const CgOptions *co)
{
    int fd = cli_atomic_open(a->output);
    if (fd < 0)
        return EXIT_INTERNAL;
    size_t len = 0;
    int err = 0;
    bool ok = cg_emit_bundle_fd(g, co, fd, &len, &err);
    if ((!ok && !err) || ir_failed(g)) {
        close(fd);
        cli_io_abandon();
        return failure_status(diag, "code generation");
    }
    print_diags(diag);                     /* warnings */
    bool keep = live.cache.status == CLI_CACHE_MISS || a->report;
    void *map = keep && !err && len ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : NULL;
    if (map == MAP_FAILED)
        map = NULL;
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
        .hook = on_pass,
        .hook_ctx = (void *)a,
    };
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
    char *meta = make_meta(a);
    CgOptions co = {.target = target, .meta = meta ? meta : ""};
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
        .emit = emit_names[a->emit],
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

/* --cache-dir: the key of this compile, and its output when the cache holds it. No
 * cache for --print-ops, nor for the standard error dumps of --dump-after, which a
 * hit would not print. */
static void cache_lookup(const Args *a, IrDiag *diag)
{
    static const char *inputs[SPEC_MAX];
    int n = 0;
    for (int i = 0; i < a->nspecs; i++)
        if (a->bind_path[i])
            inputs[n++] = a->bind_path[i];
    bool off = a->no_cache || a->print_ops || (a->dump_after && a->emit != EMIT_DOT);
    CliCacheSpec spec = {
        .dir = off ? NULL : a->cache_dir,
        .max_bytes = a->cache_max,
        .model = a->input,
        .model_name = a->emit == EMIT_IR ? a->input : base_name(a->input),
        .flags = a->flags,
        .target_path = a->target_path,
        .inputs = inputs,
        .ninputs = n,
        .argv0 = a->argv0,
        .version = SPYREC_VERSION,
    };
    cli_cache_lookup(&live.cache, &spec, diag, a->deps ? &live.files : NULL);
}

/* A cache hit: the warnings of the original compile, the output, the dependency file.
 * Returns the exit status. */
static int write_hit(const Args *a, IrDiag *diag)
{
    print_diags(diag);
    int rc = write_output(a, live.cache.out, live.cache.out_len);
    return rc == 0 && a->deps ? write_deps(a) : rc;
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
    bool oom = false, cached = live.cache.status == CLI_CACHE_MISS;
    if (live.cache.status == CLI_CACHE_HIT) {
        rc = write_hit(a, diag);
    } else if (setjmp(oom_jmp)) {
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
            rc = compile_graph(live.g, diag, a, &target);
            if (rc == 0 && a->deps)
                rc = write_deps(a);
            if (rc == 0 && cached)
                cli_cache_store(&live.cache, live.out, live.out_len, diag, &live.files);
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
    if (live.g) {
        live.g->oom = NULL;
        ir_graph_free(live.g);
    }
    fe_file_list_free(&live.files);
    cli_cache_free(&live.cache);
    ir_diag_free(diag);
    return rc;
}

int main(int argc, char **argv)
{
    Args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) {
        free_args(&a);
        return rc;
    }
    cli_io_signals();
    cli_progress_init(!a.dump_after || a.emit == EMIT_DOT, a.opt_level);
    if (a.report && !(live.report = cli_report_new())) {
        fprintf(stderr, "spyrec: out of memory\n");
        free_args(&a);
        return EXIT_INTERNAL;
    }
    rc = compile(&a);
    cli_report_free(live.report);
    free_args(&a);
    return rc;
}
