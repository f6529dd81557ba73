/* spyrec_args.c: the compiler driver's command line: usage text, option parsing and
 * checks, the --bind / --input-shape / --input-seq specialisations, and the flags string
 * recorded in the bundle. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/spyrec_args.h"
#include "passes/pass.h"
#include "sbin.h"

const char *const cli_emit_names[] = {"sbin", "ir", "asm", "dot"};

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
            "  --dump-after=PASS     print the IR to standard error after PASS (a comma list:\n"
            "                        after each; 'all': after every pass)\n"
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
            "  --precision=fp32|fp16|int8|fp8\n"
            "                        fp16: every float32 tensor on the card is DLFloat16,\n"
            "                        matrix products accumulate in float32 (default: the\n"
            "                        model's own types; fp32 is the same); float16 models\n"
            "                        compute natively in DLFloat16 (rounded from float16);\n"
            "                        int8: as fp16, and contractions with constant weights\n"
            "                        quantized W8A8 (needs --calibrate); fp8: as fp16, and\n"
            "                        matrix weights stored as float8 e4m3 with a scale per\n"
            "                        output channel\n"
            "  --keep-fp32=LIST      with --precision=fp16/int8/fp8: keep the nodes of these\n"
            "                        ONNX node names or operator types (comma-separated, such\n"
            "                        as Softmax,LayerNormalization) in float32, with casts at\n"
            "                        their edges (and out of quantization)\n"
            "  --keep-fp16=LIST      with --precision=int8: leave these nodes (node names,\n"
            "                        operator types or tensor names) unquantized, in fp16\n"
            "  --calibrate DIR...    with --precision=int8: the calibration set, folders of\n"
            "                        input_K.pb files; activation ranges come from running\n"
            "                        the model on them in the compiler's reference evaluator;\n"
            "                        with --precision=fp8 (optional): input statistics for\n"
            "                        error-compensating (GPTQ) rounding of the fp8 weights\n"
            "                        and a bias correction of the fp8 products\n"
            "  --calibrate-method=minmax|percentile:P\n"
            "                        the activation range: min and max (default) or the\n"
            "                        P-th percentile of the values (such as percentile:99.99)\n"
            "  --calibrate-method=gptq|bias\n"
            "                        with --precision=fp8: GPTQ rounding and bias correction\n"
            "                        (default), or the bias correction alone\n"
            "  --dim-buckets=N       with bounded dynamic dims: compile at most N size buckets\n"
            "                        (boxes of smaller bounds) into the bundle; the runtime\n"
            "                        runs the smallest that holds the actual sizes (default\n"
            "                        17, the smallest size's box among them; 1: the bounds\n"
            "                        only)\n"
            "  --strip               leave out the bundle's DEBUG section (the model's names\n"
            "                        of the tensors kernels store, for spyrun --compare)\n"
            "  --bind NAME=FILE      specialise: input NAME becomes a constant read from FILE\n"
            "                        (.pb or .npy); for inputs that decide shapes (axes,\n"
            "                        target shapes, pads) which a static compile needs\n"
            "  --input-shape NAME=D0xD1...\n"
            "                        specialise: fix the dynamic dimensions of input NAME;\n"
            "                        for a sequence or optional input: N:D0xD1,D0xD1,...\n"
            "                        (N tensors of these shapes) or none (no value); the\n"
            "                        bundle then has inputs NAME[0], NAME[1], ...\n"
            "                        An axis may be a range MIN..MAX or ..MAX (MIN 1): a\n"
            "                        bounded dynamic dimension, any size in it at run time\n"
            "  --dim PARAM=MAX       bound the symbolic dimension PARAM (an ONNX dim_param) of\n"
            "                        every input to 1..MAX (or PARAM=MIN..MAX): one bundle\n"
            "                        serves every size within the bounds\n"
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
            "  --cache-copy          write the output as a copy of the cache entry, never\n"
            "                        as a hard link to it (the default for a bundle where\n"
            "                        the cache folder is on the output's file system)\n"
            "  --no-cache            do not use the cache, whatever the options above say\n"
            "  --fsync               wait until each output is on the disk before it takes\n"
            "                        its name, so that it survives a power loss (off by\n"
            "                        default, as for cc and ld; outputs are always written\n"
            "                        atomically)\n"
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
const char *cli_base_name(const char *p)
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

/* One size or range of --input-shape / --dim at p: "N", "MIN..MAX" or "..MAX" (MIN 1)
 * into *lo, *hi; returns the end of what it read, NULL if malformed (a range needs
 * 1 <= MIN <= MAX). */
static const char *parse_range(const char *p, int64_t *lo, int64_t *hi)
{
    char *end = (char *)p;
    long long a = 1, b;
    bool range = !strncmp(p, "..", 2);
    if (!range) {
        a = strtoll(p, &end, 10);
        if (end == p || a < 0)
            return NULL;
        range = !strncmp(end, "..", 2);
    }
    b = a;
    if (range) {
        const char *q = end + 2;
        b = strtoll(q, &end, 10);
        if (end == q || a < 1 || b < a)
            return NULL;
    }
    *lo = a;
    *hi = b;
    return end;
}

/* The shape D0xD1x... of --input-shape into sp (an axis may be a range MIN..MAX or
 * ..MAX: a bounded symbolic dimension); false if malformed. */
static bool parse_dims(const char *value, FeInputSpec *sp)
{
    sp->rank = 0;
    for (const char *p = value; *p;) {
        int64_t lo, hi;
        const char *end = sp->rank == IR_MAX_RANK ? NULL : parse_range(p, &lo, &hi);
        if (!end || (*end && *end != 'x'))
            return false;
        sp->min[sp->rank] = lo;
        sp->dims[sp->rank++] = hi;
        p = *end ? end + 1 : end;
    }
    return true;
}

/* --dim PARAM=MAX or PARAM=MIN..MAX: the bounds of an ONNX dim_param. Returns -1 to go
 * on, else an exit status. */
static int parse_dim_bound(Args *a, const char *v)
{
    const char *value;
    char *name = split_spec(v, &value);
    int64_t lo, hi;
    const char *end = name ? parse_range(value, &lo, &hi) : NULL;
    if (end && value[0] != '.' && !strstr(value, ".."))
        lo = 1;                            /* PARAM=MAX */
    if (!end || *end || hi < 1 || a->ndim_bounds == SPEC_MAX) {
        free(name);
        return usage_error("bad --dim '%s' (PARAM=MAX or PARAM=MIN..MAX, 1 <= MIN <= MAX)", v);
    }
    a->dim_bounds[a->ndim_bounds++] = (FeDimBound){name, lo, hi, 0};
    flags_add(&a->flags, "--dim");
    flags_add(&a->flags, v);
    return -1;
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
        return usage_error("bad --input-shape '%s' (NAME=D0xD1..., dims >= 0, an axis may be "
                           "a range MIN..MAX or ..MAX with 1 <= MIN <= MAX; NAME=N:D0xD1,"
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
void cli_spyrec_free_args(Args *a)
{
    for (int i = 0; i < a->ndim_bounds; i++)
        free((char *)a->dim_bounds[i].param);
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

/* Whether path p is a folder. */
static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* --calibrate DIR [DIR...]: first the value v, then every following argument that is
 * a folder (a model file never is). Returns -1 to go on, else an exit status. */
static int parse_calib_dirs(Args *a, int argc, char **argv, int *i, const char *v)
{
    for (;;) {
        if (!is_dir(v))
            return usage_error("--calibrate: '%s' is not a folder", v);
        if (a->ncalib == CALIB_MAX)
            return usage_error("%s", "more than 256 --calibrate folders");
        a->calib_dirs[a->ncalib++] = v;
        if (*i + 1 >= argc || argv[*i + 1][0] == '-' || !is_dir(argv[*i + 1]))
            return -1;
        v = argv[++*i];
    }
}

/* --calibrate-method=minmax|percentile:P (0 < P < 100) for int8, gptq|bias for fp8.
 * Returns -1 to go on, else an exit status. */
static int parse_calib_method(Args *a, const char *v)
{
    char *end = NULL;
    if (!strcmp(v, "gptq") || !strcmp(v, "bias"))
        a->calib_bias_only = !strcmp(v, "bias");
    else if (!strcmp(v, "minmax"))
        a->calib_percentile = 0;
    else if (!strncmp(v, "percentile:", 11) &&
             (a->calib_percentile = strtod(v + 11, &end), end && end != v + 11 && !*end) &&
             a->calib_percentile > 0 && a->calib_percentile < 100)
        ;
    else
        return usage_error("bad --calibrate-method '%s' (minmax, percentile:P with 0 < P < "
                           "100, gptq or bias)", v);
    flags_add(&a->flags, "--calibrate-method");
    flags_add(&a->flags, v);
    return -1;
}

/* The checks of the precision options: --calibrate goes with int8, which needs it;
 * the keep lists with a reduced precision. Returns -1 to go on, else an exit status. */
static int check_precision_args(const Args *a)
{
    if (a->precision == PASS_PREC_INT8 && !a->ncalib && !a->print_ops)
        return usage_error("%s", "--precision=int8 needs --calibrate DIR...");
    if (a->ncalib && a->precision != PASS_PREC_INT8 && a->precision != PASS_PREC_FP8)
        return usage_error("%s", "--calibrate goes with --precision=int8 or fp8");
    if (a->calib_bias_only && a->precision != PASS_PREC_FP8)
        return usage_error("%s", "--calibrate-method=bias goes with --precision=fp8");
    if (a->keep_fp16 && a->precision != PASS_PREC_INT8)
        return usage_error("%s", "--keep-fp16 goes with --precision=int8");
    return -1;
}

/* Check the parsed options against each other (and default the output to standard
 * output where that is allowed). Returns -1 to go on, else an exit status. */
static int check_args(Args *a)
{
    if (!a->input)
        return usage_error("%s", "no model given");
    int rc = check_precision_args(a);
    if (rc >= 0)
        return rc;
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
int cli_spyrec_parse_args(int argc, char **argv, Args *a)
{
    memset(a, 0, sizeof *a);
    a->opt_level = 2;
    a->dim_buckets = CLI_DIM_BUCKETS;
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
            static const char *const precs[] = {"fp32", "fp16", "int8", "fp8"};
            int p = 0;
            while (p < 4 && strcmp(v, precs[p]))
                p++;
            if (p == 4)
                return usage_error("bad --precision value '%s' (fp32, fp16, int8 or fp8)", v);
            a->precision = p;              /* fp32 is the model's own types */
            flags_add(&a->flags, "--precision");
            flags_add(&a->flags, v);
        } else if ((v = opt_value(argc, argv, &i, "--keep-fp32", &missing)) ||
                   (v = opt_value(argc, argv, &i, "--keep-fp16", &missing))) {
            bool f32 = !strncmp(arg, "--keep-fp32", 11);
            *(f32 ? &a->keep_fp32 : &a->keep_fp16) = v;
            flags_add(&a->flags, f32 ? "--keep-fp32" : "--keep-fp16");
            flags_add(&a->flags, v);
        } else if ((v = opt_value(argc, argv, &i, "--calibrate", &missing))) {
            int rc = parse_calib_dirs(a, argc, argv, &i, v);
            if (rc >= 0)
                return rc;
        } else if ((v = opt_value(argc, argv, &i, "--calibrate-method", &missing))) {
            int rc = parse_calib_method(a, v);
            if (rc >= 0)
                return rc;
        } else if ((v = opt_value(argc, argv, &i, "--target", &missing))) {
            a->target_path = v;
            flags_add(&a->flags, "--target");
            flags_add(&a->flags, cli_base_name(v));
        } else if ((v = opt_value(argc, argv, &i, "--dump-after", &missing))) {
            if (!pass_dump_list_ok(v))
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
        } else if ((v = opt_value(argc, argv, &i, "--dim", &missing))) {
            int rc = parse_dim_bound(a, v);
            if (rc >= 0)
                return rc;
        } else if ((v = opt_value(argc, argv, &i, "--dim-buckets", &missing))) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 256)
                return usage_error("bad --dim-buckets value '%s' (1 to 256)", v);
            a->dim_buckets = (int)n;
            flags_add(&a->flags, "--dim-buckets");
            flags_add(&a->flags, v);
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
        } else if (!strcmp(arg, "--cache-copy")) {
            a->cache_copy = true;
        } else if (!strcmp(arg, "--fsync")) {
            a->fsync = true;
        } else if (missing) {
            return usage_error("option '%s' needs a value", arg);
        } else if (arg[0] == '-' && arg[1] == 'O' && arg[2] >= '0' && arg[2] <= '2' && !arg[3]) {
            a->opt_level = arg[2] - '0';
            flags_add(&a->flags, arg);
        } else if (!strcmp(arg, "--verify")) {
            a->verify = true;
            flags_add(&a->flags, arg);
        } else if (!strcmp(arg, "--strip")) {
            a->strip = true;
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
    if (a->ncalib) {                       /* the calibration set is not part of the key */
        char n[32];
        snprintf(n, sizeof n, "%d", a->ncalib);
        flags_add(&a->flags, "--calibrate");
        flags_add(&a->flags, n);
        a->no_cache = true;
    }
    if (!a->cache_dir && getenv("SPYREC_CACHE_DIR") && *getenv("SPYREC_CACHE_DIR"))
        a->cache_dir = getenv("SPYREC_CACHE_DIR");
    return check_args(a);
}

