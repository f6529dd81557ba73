/* spyrec.c: the compiler driver.
 *
 *   spyrec MODEL -o OUT.sbin [--target FILE.yaml] [-O0|-O1|-O2] [--dump-after=PASS|all]
 *          [--emit=sbin|ir|asm] [--verify] [--max-memory=MIB]
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
#include <sys/stat.h>
#include <unistd.h>

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

#define FOLD_BUDGET ((size_t)256 << 20)   /* largest constant one fold may create */
#define MAX_IR_TEXT ((size_t)256 << 20)   /* largest .ir text file accepted */

typedef enum { EMIT_SBIN, EMIT_IR, EMIT_ASM } EmitKind;

#define SPEC_MAX 64                       /* --bind / --input-shape options at most */

typedef struct {
    const char *input;             /* model path */
    const char *output;            /* -o path, "-" for stdout, NULL if not given */
    const char *target_path;       /* --target, NULL for the built-in target */
    int opt_level;                 /* 0..2 */
    const char *dump_after;        /* --dump-after, NULL if not given */
    EmitKind emit;
    bool verify;
    size_t max_memory;             /* --max-memory in bytes, 0 = unlimited */
    char *flags;                   /* argv without input/output, for the bundle's meta */
    bool print_ops;                /* --print-ops: list the model's operators and exit */
    FeInputSpec specs[SPEC_MAX];   /* --bind / --input-shape specialisations */
    FeTensor bound[SPEC_MAX];      /* values read for --bind */
    int nspecs;
} Args;

/* State that must survive a longjmp from the allocator or be seen by the signal
 * handler: file-scope so that setjmp cannot clobber it. */
static jmp_buf oom_jmp;
static volatile sig_atomic_t have_tmp;
static char tmp_path[4096];

/* Remove the temporary output file on SIGINT/SIGTERM, then die of the signal. */
static void on_signal(int sig)
{
    if (have_tmp)
        unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

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
            "  --emit=sbin|ir|asm    what to write: the bundle (default), the text IR after\n"
            "                        the pipeline, or the bundle's disassembly\n"
            "  --dump-after=PASS     print the IR to standard error after PASS ('all': after\n"
            "                        every pass)\n"
            "  --verify              verify the IR after every pass (always on in debug builds)\n"
            "  --bind NAME=FILE      specialise: input NAME becomes a constant read from FILE\n"
            "                        (.pb or .npy); for inputs that decide shapes (axes,\n"
            "                        target shapes, pads) which a static compile needs\n"
            "  --input-shape NAME=D0xD1...\n"
            "                        specialise: fix the dynamic dimensions of input NAME\n"
            "  --print-ops           list the model's operators (one per line) and exit\n"
            "  --max-memory=MIB      cap the compiler's graph memory; exceeding it is reported\n"
            "                        as 'out of memory'\n"
            "  --version             print the version and exit\n"
            "  -h, --help            print this help and exit\n"
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

/* --bind NAME=FILE (bind: the input becomes a constant read from FILE) or
 * --input-shape NAME=D0xD1x... (fix its dynamic dimensions). Returns -1 to go on, else
 * an exit status. */
static int parse_spec(Args *a, const char *v, bool bind)
{
    const char *value;
    char *name = split_spec(v, &value);
    if (!name)
        return usage_error(bind ? "bad --bind '%s' (NAME=FILE)" : "bad --input-shape '%s' (NAME=D0xD1...)", v);
    if (a->nspecs == SPEC_MAX) {
        free(name);
        return usage_error("too many input specialisations ('%s')", v);
    }
    FeInputSpec *sp = &a->specs[a->nspecs];
    sp->name = name;
    sp->rank = -1;
    flags_add(&a->flags, bind ? "--bind" : "--input-shape");
    flags_add(&a->flags, bind ? name : v);
    if (bind) {
        char err[512];
        if (!fe_tensor_read(value, &a->bound[a->nspecs], err, sizeof err)) {
            fprintf(stderr, "spyrec: --bind %s: %s\n", name, err);
            free(name);
            return EXIT_INPUT;
        }
        sp->value = &a->bound[a->nspecs];
    } else {
        sp->rank = 0;
        for (const char *p = value; *p;) {
            char *end;
            long long d = strtoll(p, &end, 10);
            if (end == p || d < 0 || sp->rank == IR_MAX_RANK || (*end && *end != 'x')) {
                free(name);
                return usage_error("bad --input-shape '%s' (NAME=D0xD1..., dims >= 0)", v);
            }
            sp->dims[sp->rank++] = d;
            p = *end ? end + 1 : end;
        }
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
    }
    free(a->flags);
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
            if (!strcmp(v, "sbin"))
                a->emit = EMIT_SBIN;
            else if (!strcmp(v, "ir"))
                a->emit = EMIT_IR;
            else if (!strcmp(v, "asm"))
                a->emit = EMIT_ASM;
            else
                return usage_error("unknown --emit kind '%s' (sbin, ir or asm)", v);
            flags_add(&a->flags, "--emit");
            flags_add(&a->flags, v);
        } else if ((v = opt_value(argc, argv, &i, "--max-memory", &missing))) {
            char *end;
            errno = 0;
            unsigned long long mib = strtoull(v, &end, 10);
            if (errno || end == v || *end || mib == 0 || mib > ((size_t)-1 >> 20))
                return usage_error("bad --max-memory value '%s' (MiB, > 0)", v);
            a->max_memory = (size_t)mib << 20;
        } else if ((v = opt_value(argc, argv, &i, "--bind", &missing)) ||
                   (v = opt_value(argc, argv, &i, "--input-shape", &missing))) {
            int rc = parse_spec(a, v, !strncmp(arg, "--bind", 6));
            if (rc >= 0)
                return rc;
        } else if (!strcmp(arg, "--print-ops")) {
            a->print_ops = true;
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
    if (!a->input)
        return usage_error("%s", "no model given");
    if (!a->output && !a->print_ops) {
        if (a->emit == EMIT_SBIN)
            return usage_error("%s", "no output file given (use -o OUT.sbin)");
        a->output = "-";
    }
    return -1;
}

/* Print every collected diagnostic to stderr (the Diag itself notes a cut-off). */
static void print_diags(const IrDiag *d)
{
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

/* Read a whole text file into a NUL-terminated malloc'd buffer, or NULL (the reason
 * recorded in diag). */
static char *read_text(const char *path, IrDiag *diag)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ir_diag_error(diag, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *p = cap < MAX_IR_TEXT ? realloc(buf, cap * 2) : NULL;
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    if (!buf || ferror(f)) {
        if (!buf)
            ir_diag_error(diag, "larger than %zu MiB or out of memory", MAX_IR_TEXT >> 20);
        else
            ir_diag_error(diag, "cannot read: %s", strerror(errno));
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
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
                           const Args *a)
{
    if (ends_with(path, ".ir")) {
        char *text = read_text(path, diag);
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
                    .arena_limit = max_memory, .specs = a->specs, .nspecs = a->nspecs};
    return fe_load_model(path, diag, &fo);
}

/* Write all of buf to fd; false with errno set on failure. */
static bool write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* Write buf to path atomically: a temporary file in the same folder, fsync, rename.
 * On failure the temporary file is removed and a message printed. "-" is stdout. */
static bool write_output(const char *path, const void *buf, size_t len)
{
    if (!strcmp(path, "-")) {
        if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "spyrec: cannot write to standard output: %s\n", strerror(errno));
            return false;
        }
        return true;
    }
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    if (slash == path)
        dirlen = 1;                        /* "/x.sbin": the root folder */
    if (snprintf(tmp_path, sizeof tmp_path, "%.*s/.%s.tmpXXXXXX", dirlen, dir,
                 base_name(path)) >= (int)sizeof tmp_path) {
        fprintf(stderr, "spyrec: %s: path too long\n", path);
        return false;
    }
    int fd = mkstemp(tmp_path);
    if (fd < 0) {
        fprintf(stderr, "spyrec: %s: cannot create a temporary file next to it: %s\n", path,
                strerror(errno));
        return false;
    }
    have_tmp = 1;
    mode_t mask = umask(0);
    umask(mask);
    bool ok = fchmod(fd, 0666 & ~mask) == 0 && write_all(fd, buf, len) && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp_path, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp_path);
        fprintf(stderr, "spyrec: %s: cannot write: %s\n", path, strerror(saved));
    }
    have_tmp = 0;
    return ok;
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

/* Run the pipeline and codegen on a loaded graph and write the output. Returns the
 * exit status. The caller holds the out-of-memory jump. */
static int compile_graph(IrGraph *g, IrDiag *diag, const Args *a, const SpyTarget *target,
                         uint8_t **bundle, char **text)
{
    PassOptions po = {
        .opt_level = a->opt_level,
        .target = target,
        .dump_after = a->dump_after,
        .dump_file = stderr,
        .verify = a->verify,
        .fold_budget = FOLD_BUDGET,
    };
    g->fold_budget = FOLD_BUDGET;
    if (!pass_run_pipeline(g, &po) || ir_failed(g))
        return failure_status(diag, "the pass pipeline");

    size_t len = 0;
    if (a->emit == EMIT_IR) {
        if (!render_ir(g, text, &len)) {
            fprintf(stderr, "spyrec: out of memory\n");
            return EXIT_INTERNAL;
        }
        print_diags(diag);
        return write_output(a->output, *text, len) ? 0 : EXIT_INTERNAL;
    }
    char *meta = make_meta(a);
    CgOptions co = {.target = target, .meta = meta ? meta : ""};
    size_t blen = 0;
    bool ok = cg_emit_bundle(g, &co, bundle, &blen);
    free(meta);
    if (!ok || ir_failed(g))
        return failure_status(diag, "code generation");
    print_diags(diag);                     /* warnings */
    if (a->emit == EMIT_ASM) {
        if (!render_asm(*bundle, blen, text, &len)) {
            fprintf(stderr, "spyrec: internal error: cannot disassemble the bundle\n");
            return EXIT_INTERNAL;
        }
        return write_output(a->output, *text, len) ? 0 : EXIT_INTERNAL;
    }
    return write_output(a->output, *bundle, blen) ? 0 : EXIT_INTERNAL;
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

/* Everything the out-of-memory path must see and free: at file scope, so that
 * longjmp cannot leave it indeterminate. */
static struct {
    IrDiag diag;
    IrGraph *g;
    uint8_t *bundle;
    char *text;
} live;

/* Load, compile, write. Returns the exit status. */
static int compile(const Args *a)
{
    IrDiag *diag = &live.diag;
    ir_diag_init(diag, a->input);
    SpyTarget target;
    int rc;
    if (a->target_path) {
        IrDiag tdiag;
        ir_diag_init(&tdiag, a->target_path);
        bool ok = fe_load_target(a->target_path, &target, &tdiag);
        if (!ok)
            rc = failure_status(&tdiag, "loading the target");
        ir_diag_free(&tdiag);
        if (!ok) {
            ir_diag_free(diag);
            return rc;
        }
    } else {
        fe_default_target(&target);
    }
    if (setjmp(oom_jmp)) {
        if (have_tmp)
            unlink(tmp_path);
        fprintf(stderr, "spyrec: out of memory\n");
        rc = EXIT_INTERNAL;
    } else {
        live.g = load_model(a->input, diag, a->max_memory, a);
        if (!live.g || ir_failed(live.g) || diag->nerrors) {
            rc = failure_status(diag, "loading the model");
        } else {
            live.g->oom = &oom_jmp;
            live.g->diag = diag;
            if (a->print_ops) {
                print_ops(live.g);
                rc = 0;
                goto done;
            }
            if (a->max_memory)
                live.g->arena_limit = a->max_memory;
            rc = compile_graph(live.g, diag, a, &target, &live.bundle, &live.text);
        }
    }
done:
    free(live.bundle);
    free(live.text);
    if (live.g) {
        live.g->oom = NULL;
        ir_graph_free(live.g);
    }
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
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    rc = compile(&a);
    free_args(&a);
    return rc;
}
