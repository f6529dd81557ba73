/* spyrun.c: run a compiled bundle on the emulator.
 *
 *   spyrun MODEL.sbin [--input NAME=FILE ...] [--input-dir DIR] [--output-dir DIR]
 *          [--format pb|npy] [--check DIR] [--rtol R] [--atol A] [--metric NAME=X]
 *          [--profile]
 *          [--threads N] [--repeat N] [--warmup N] [--quiet] [--trace FILE.json]
 *   spyrun A.sbin --compare B.sbin [--input NAME=FILE ...] [--input-dir DIR] [--threads N]
 *   spyrun --describe FILE
 *
 * Inputs come from tensor files (ONNX TensorProto .pb or .npy); outputs are printed,
 * written to a folder, and/or compared with goldens (|a-b| <= atol + rtol*|b|, or the
 * accuracy metrics of --metric: cli/spyrun_metrics.c); --compare runs two compiles of one
 * model and compares their tensors layer by layer (cli/spyrun_compare.c).
 *
 * Exit status: 0 success (and every output matched); 1 an output did not match, or an
 * internal error; 2 bad input (bad bundle, unreadable file, wrong dtype or shape, a
 * data error at run time such as an index out of range) or bad usage.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "dtconv.h"
#include "frontend/fe.h"
#include "ir.h"
#include "spyrt.h"

enum { EXIT_FAIL = 1, EXIT_INPUT = 2 };

typedef CliInputArg InputArg;          /* --input NAME=FILE */

typedef struct {
    const char *model;
    InputArg *inputs;              /* --input NAME=FILE, in order given */
    int ninputs;
    const char *input_dir;
    const char *output_dir;
    const char *check_dir;
    int npy;                       /* --format npy */
    double rtol, atol;
    bool tol_given;                /* --rtol or --atol was given */
    bool profile;
    const char *trace;             /* --trace FILE.json, NULL if not given */
    bool quiet;
    int threads;                   /* 0 = one per host CPU */
    int repeat;                    /* 0 = one untimed-statistics run */
    int warmup;                    /* -1 = default */
    CliMetricSpec metrics;         /* --metric NAME=VALUE thresholds */
    const char *compare;           /* --compare B.sbin */
    uint64_t half_out;             /* outputs the model computes in half precision (META) */
} Args;

/* Print the usage text. */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: spyrun MODEL.sbin [options]\n"
            "\n"
            "Run a compiled bundle on the emulator of the 32-core accelerator.\n"
            "\n"
            "inputs (tensor files: ONNX TensorProto .pb or NumPy .npy; an input NAME[i] is\n"
            "element i of a SequenceProto / OptionalProto file NAME, see spyrun(1)):\n"
            "  --input NAME=FILE   data for the input NAME (or its index); repeatable\n"
            "  --describe FILE     print the name, dtype and shape of a tensor file and exit\n"
            "  --input-dir DIR     DIR/input_K.pb for the K-th input, in the bundle's order\n"
            "  --check DIR         read DIR/input_K.pb, run, and compare every output with\n"
            "                      DIR/output_K.pb\n"
            "  --rtol R, --atol A  tolerances of --check: |got - expected| <= A + R*|expected|\n"
            "                      per element (default R = 1e-3, A = 1e-4; NaN equals NaN;\n"
            "                      integer and bool outputs must match exactly)\n"
            "  --compare B.sbin    run this bundle (A) and B, the same model compiled\n"
            "                      another way, on the same inputs and print, for every\n"
            "                      tensor both name (kernel outputs, graph outputs), the\n"
            "                      max abs error, rel-l2 and cosine of A against B, worst\n"
            "                      first (needs the debug info: bundles made without\n"
            "                      spyrec --strip)\n"
            "  --metric NAME=X     pass float outputs by accuracy metrics instead: rel-l2=X\n"
            "                      (||got - expected|| / ||expected|| at most X), cosine=X\n"
            "                      (cosine similarity at least X), top1=X (fraction of rows of\n"
            "                      the last axis, golden top-1 and top-2 >= 1%% apart, whose\n"
            "                      top-1 agrees, at least X); repeatable, all must hold\n"
            "outputs:\n"
            "  --output-dir DIR    write DIR/output_K.pb (TensorProto named after the output)\n"
            "  --format pb|npy     file format of --output-dir (default pb)\n"
            "  -q, --quiet         do not print the output values\n"
            "running:\n"
            "  --threads N         host threads emulating the cores (default: one per CPU)\n"
            "  --repeat N          run N timed inferences and print the median host latency\n"
            "  --warmup N          untimed runs before them (default 2 with --repeat)\n"
            "  --profile           per-kernel table, by lost time (modelled - roofline):\n"
            "                      modelled device time, host time,\n"
            "                      roofline bound, lost time, efficiency and the limiter\n"
            "                      (matrix, vector, dram, 8-row passes, barrier); with\n"
            "                      totals; and the lines\n"
            "                      load_ms=T rss_mib=R bundle_mib=B (load time, resident\n"
            "                      memory after it) and first_run_ms=T (first inference)\n"
            "  --trace FILE.json   write a Chrome-trace / Perfetto timeline of the (last) run:\n"
            "                      host time per kernel and host thread, and the modelled\n"
            "                      device time per core (open in ui.perfetto.dev or\n"
            "                      chrome://tracing)\n"
            "  --version           print the version;  -h, --help  this help\n"
            "\n"
            "exit status: 0 success; 1 an output did not match (or internal error);\n"
            "2 bad input: unreadable or malformed bundle or tensor file, wrong dtype or shape,\n"
            "data error at run time (such as an index out of range), or bad usage.\n");
}

/* Report a usage error; returns the exit status for it. */
static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "spyrun: %s '%s' (see spyrun --help)\n", what, arg);
    return EXIT_INPUT;
}

/* Parse a non-negative int option value; false if malformed. */
static bool parse_count(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 1000000)
        return false;
    *out = (int)v;
    return true;
}

/* Parse a non-negative finite double option value; false if malformed. */
static bool parse_tol(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || isinf(v))
        return false;
    *out = v;
    return true;
}

/* The value of option argv[*i] ("--opt V" or "--opt=V"), advancing *i; NULL if
 * argv[*i] is another option. Sets *missing when the value is absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

/* --describe FILE: print "name<TAB>dtype<TAB>D0xD1..." of a tensor file (used by
 * scripts to specialise a compile on a data set). Returns the exit status. */
static int describe_file(const char *path)
{
    FeTensor t;
    char err[512];
    if (!fe_tensor_read(path, &t, err, sizeof err)) {
        if (cli_seq_describe(path))        /* a SequenceProto / OptionalProto */
            return 0;
        fprintf(stderr, "spyrun: %s\n", err);
        return EXIT_INPUT;
    }
    printf("%s\t%s\t", t.name ? t.name : "", ir_dtype_name(t.dtype));
    for (int i = 0; i < t.rank; i++)
        printf("%s%lld", i ? "x" : "", (long long)t.dims[i]);
    printf("\n");
    fe_tensor_free(&t);
    return 0;
}

/* Handle one option with a value; returns 1 if consumed, 0 if not this kind,
 * or an exit status + 2 (>= 2) on a bad value. */
static int parse_valued(int argc, char **argv, int *i, Args *a, bool *missing)
{
    const char *v;
    if ((v = opt_value(argc, argv, i, "--input", missing))) {
        const char *eq = strchr(v, '=');
        if (!eq || eq == v || !eq[1])
            return 2 + usage_error("--input wants NAME=FILE, got", v);
        InputArg *p = realloc(a->inputs, (size_t)(a->ninputs + 1) * sizeof *p);
        char *name = strndup(v, (size_t)(eq - v));
        if (!p || !name) {
            fprintf(stderr, "spyrun: out of memory\n");
            exit(EXIT_FAIL);
        }
        a->inputs = p;
        a->inputs[a->ninputs++] = (InputArg){name, eq + 1};
    } else if ((v = opt_value(argc, argv, i, "--describe", missing))) {
        return 2 + describe_file(v);
    } else if ((v = opt_value(argc, argv, i, "--trace", missing))) {
        a->trace = v;
    } else if ((v = opt_value(argc, argv, i, "--input-dir", missing))) {
        a->input_dir = v;
    } else if ((v = opt_value(argc, argv, i, "--output-dir", missing))) {
        a->output_dir = v;
    } else if ((v = opt_value(argc, argv, i, "--check", missing))) {
        a->check_dir = v;
    } else if ((v = opt_value(argc, argv, i, "--compare", missing))) {
        a->compare = v;
    } else if ((v = opt_value(argc, argv, i, "--format", missing))) {
        if (strcmp(v, "pb") && strcmp(v, "npy"))
            return 2 + usage_error("--format wants pb or npy, got", v);
        a->npy = !strcmp(v, "npy");
    } else if ((v = opt_value(argc, argv, i, "--rtol", missing))) {
        if (!parse_tol(v, &a->rtol))
            return 2 + usage_error("bad --rtol value", v);
        a->tol_given = true;
    } else if ((v = opt_value(argc, argv, i, "--atol", missing))) {
        if (!parse_tol(v, &a->atol))
            return 2 + usage_error("bad --atol value", v);
        a->tol_given = true;
    } else if ((v = opt_value(argc, argv, i, "--metric", missing))) {
        if (!cli_metric_parse(v, &a->metrics))
            return 2 + usage_error("--metric wants rel-l2=X (X >= 0), cosine=X (-1..1) or "
                                   "top1=X (0..1), got", v);
    } else if ((v = opt_value(argc, argv, i, "--threads", missing))) {
        if (!parse_count(v, &a->threads))
            return 2 + usage_error("bad --threads value", v);
    } else if ((v = opt_value(argc, argv, i, "--repeat", missing))) {
        if (!parse_count(v, &a->repeat))
            return 2 + usage_error("bad --repeat value", v);
    } else if ((v = opt_value(argc, argv, i, "--warmup", missing))) {
        if (!parse_count(v, &a->warmup))
            return 2 + usage_error("bad --warmup value", v);
    } else {
        return 0;
    }
    return 1;
}

/* Parse the command line. Returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, Args *a)
{
    memset(a, 0, sizeof *a);
    a->rtol = 1e-3;
    a->atol = 1e-4;
    a->warmup = -1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool missing = false;
        int r = parse_valued(argc, argv, &i, a, &missing);
        if (r >= 2)
            return r - 2;
        if (r == 1)
            continue;
        if (missing)
            return usage_error("option needs a value:", arg);
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(arg, "--version")) {
            printf("spyrun with %s\n", spy_version());
            return 0;
        } else if (!strcmp(arg, "--profile")) {
            a->profile = true;
        } else if (!strcmp(arg, "-q") || !strcmp(arg, "--quiet")) {
            a->quiet = true;
        } else if (arg[0] == '-' && arg[1]) {
            return usage_error("unknown option", arg);
        } else if (a->model) {
            return usage_error("more than one bundle given:", arg);
        } else {
            a->model = arg;
        }
    }
    if (!a->model) {
        fprintf(stderr, "spyrun: no bundle given (see spyrun --help)\n");
        return EXIT_INPUT;
    }
    if (a->warmup < 0)
        a->warmup = a->repeat > 0 ? 2 : 0;
    return -1;
}

/* Format "dtype[d0,d1,...]" into buf. */
static const char *type_str(int dtype, int rank, const int64_t *dims, char *buf, size_t n)
{
    const char *dn = ir_dtype_name((IrDType)dtype);
    size_t k = (size_t)snprintf(buf, n, "%s[", dn ? dn : "?");
    for (int d = 0; d < rank && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", (long long)dims[d]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* "DIR/PREFIX_K.EXT" into a malloc'd string. */
static char *path_k(const char *dir, const char *prefix, int k, const char *ext)
{
    size_t n = strlen(dir) + strlen(prefix) + 32;
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "spyrun: out of memory\n");
        exit(EXIT_FAIL);
    }
    snprintf(p, n, "%s/%s_%d.%s", dir, prefix, k, ext);
    return p;
}

/* Check that tensor t (read from path) has the dtype and shape of info. Prints a
 * message naming the file and tensor and returns false if not. */
static bool matches_info(const FeTensor *t, const spy_tensor_info *info, const char *role,
                         const char *path)
{
    bool ok = (int)t->dtype == info->dtype && t->rank == info->rank && t->nbytes == info->nbytes;
    for (int d = 0; ok && d < t->rank; d++)
        ok = t->dims[d] == info->dims[d];
    if (!ok) {
        char a[160], b[160];
        fprintf(stderr, "spyrun: %s: %s '%s': the file holds %s, the model wants %s\n", path,
                role, info->name, type_str(t->dtype, t->rank, t->dims, a, sizeof a),
                type_str(info->dtype, info->rank, info->dims, b, sizeof b));
    }
    return ok;
}

/* Number of consecutive DIR/input_K.pb files (K = 0, 1, ...). */
static int count_input_files(const char *dir)
{
    int k = 0;
    for (;; k++) {
        char *p = path_k(dir, "input", k, "pb");
        bool there = p && access(p, F_OK) == 0;
        free(p);
        if (!there)
            return k;
    }
}

/* The DIR/input_K.pb whose tensor carries the name `name`, or NULL (malloc'd path).
 * Used when a bundle was specialised (spyrec --bind) and has fewer inputs than the
 * data set, so positions no longer line up. */
static char *named_input_file(const char *dir, const char *name)
{
    int n = count_input_files(dir);
    for (int k = 0; k < n; k++) {
        char *p = path_k(dir, "input", k, "pb"), err[256];
        FeTensor t;
        if (p && fe_tensor_read(p, &t, err, sizeof err)) {
            bool same = t.name && !strcmp(t.name, name);
            fe_tensor_free(&t);
            if (same)
                return p;
        }
        free(p);
    }
    return NULL;
}

/* The file that feeds input i (named name), or NULL with a message. *owned is set
 * when the returned string must be freed. With a folder of input_K.pb files that has
 * more files than the model has inputs, the file is found by the tensor's name. */
static const char *input_file(const Args *a, const spy_model *m, int i, const char *name,
                              char **owned)
{
    *owned = NULL;
    char idx[16];
    snprintf(idx, sizeof idx, "%d", i);
    for (int k = 0; k < a->ninputs; k++)
        if (!strcmp(a->inputs[k].name, name) || !strcmp(a->inputs[k].name, idx))
            return a->inputs[k].file;
    const char *dir = a->input_dir ? a->input_dir : a->check_dir;
    if (dir && (count_input_files(dir) > spy_model_num_inputs(m) || cli_seq_any_input(m)) &&
        (*owned = named_input_file(dir, name)))
        return *owned;
    if (dir)
        return *owned = path_k(dir, "input", i, "pb");
    char base[512];                        /* an element: its sequence's file */
    bool el = cli_seq_element(name, base, sizeof base) >= 0;
    fprintf(stderr, "spyrun: no data for input %d '%s': give --input %s=FILE%s, --input-dir "
            "DIR or --check DIR\n", i, name, el ? base : name, el ? " (a SequenceProto)" : "");
    return NULL;
}

/* Every --input NAME must name an input of the model; false (message) if not. */
static bool inputs_known(const Args *a, const spy_model *m)
{
    int n = spy_model_num_inputs(m);
    for (int k = 0; k < a->ninputs; k++) {
        bool found = false;
        for (int i = 0; i < n && !found; i++) {
            spy_tensor_info info;
            char idx[16], base[512];
            snprintf(idx, sizeof idx, "%d", i);
            found = spy_model_input_info(m, i, &info) == SPY_OK &&
                    (!strcmp(info.name, a->inputs[k].name) || !strcmp(idx, a->inputs[k].name) ||
                     (cli_seq_element(info.name, base, sizeof base) >= 0 &&
                      !strcmp(base, a->inputs[k].name)));
        }
        if (!found) {
            fprintf(stderr, "spyrun: --input %s: the model has no such input (it has:",
                    a->inputs[k].name);
            for (int i = 0; i < n; i++) {
                spy_tensor_info info;
                if (spy_model_input_info(m, i, &info) == SPY_OK)
                    fprintf(stderr, " '%s'", info.name);
            }
            fprintf(stderr, ")\n");
            return false;
        }
    }
    return true;
}

/* info with the sizes of t on the bounded symbolic axes of input i (where t's fit
 * the bounds: the bundle serves them), so that the file is checked against them. */
static spy_tensor_info *actual_input(const spy_model *m, int i, const FeTensor *t,
                                     spy_tensor_info *info)
{
    size_t n = 1;
    for (int d = 0; d < info->rank; d++) {
        int64_t lo, hi;
        if (t->rank == info->rank && spy_model_input_dim_bounds(m, i, d, &lo, &hi) == 1 &&
            t->dims[d] >= lo && t->dims[d] <= hi)
            info->dims[d] = t->dims[d];
        n *= (size_t)info->dims[d];
    }
    info->nbytes = n * ir_dtype_size((IrDType)info->dtype);
    return info;
}

/* Read and validate every input into ins[] (FeTensor data). Returns 0 or an exit
 * status. */
static int load_inputs(const Args *a, const spy_model *m, FeTensor *ins)
{
    if (!inputs_known(a, m))
        return EXIT_INPUT;
    for (int i = 0; i < spy_model_num_inputs(m); i++) {
        spy_tensor_info info;
        if (spy_model_input_info(m, i, &info) != SPY_OK) {
            fprintf(stderr, "spyrun: %s: cannot describe input %d\n", a->model, i);
            return EXIT_FAIL;
        }
        char *owned, err[512];
        bool failed = false;
        const char *dir = a->input_dir ? a->input_dir : a->check_dir;
        if (cli_seq_element_input(a->inputs, a->ninputs, dir, i, info.name, &ins[i], &failed)) {
            if (failed || !matches_info(&ins[i], &info, "input", "sequence element"))
                return EXIT_INPUT;
            continue;
        }
        const char *path = input_file(a, m, i, info.name, &owned);
        if (!path)
            return EXIT_INPUT;
        bool ok = fe_tensor_read(path, &ins[i], err, sizeof err);
        if (!ok)
            fprintf(stderr, "spyrun: %s\n", err);
        else
            ok = matches_info(&ins[i], actual_input(m, i, &ins[i], &info), "input", path);
        free(owned);
        if (!ok)
            return EXIT_INPUT;
    }
    return 0;
}

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort comparator for doubles. */
static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* One inference; returns 0 or an exit status (message printed). */
static int run_once(spy_session *s, const void *const *in, void *const *out, const char *model)
{
    spy_status st = spy_session_run(s, in, out);
    if (st == SPY_OK)
        return 0;
    fprintf(stderr, "spyrun: %s: run failed (%s): %s\n", model, spy_status_str(st),
            spy_session_error(s));
    return st == SPY_E_RUNTIME || st == SPY_E_INVALID_ARG ? EXIT_INPUT : EXIT_FAIL;
}

/* Run warm-up and timed inferences; print host latency. Returns 0 or exit status. */
static int run_timed(const Args *a, spy_session *s, const void *const *in, void *const *out)
{
    double first = now_s();
    for (int r = 0; r < a->warmup; r++) {
        int rc = run_once(s, in, out, a->model);
        if (rc)
            return rc;
        if (r == 0 && a->profile)          /* the first inference after the load */
            printf("first_run_ms=%.3f\n", (now_s() - first) * 1e3);
    }
    int n = a->repeat > 0 ? a->repeat : 1;
    double *t = malloc((size_t)n * sizeof *t);
    if (!t) {
        fprintf(stderr, "spyrun: out of memory\n");
        return EXIT_FAIL;
    }
    for (int r = 0; r < n; r++) {
        double t0 = now_s();
        int rc = run_once(s, in, out, a->model);
        t[r] = (now_s() - t0) * 1e3;
        if (rc) {
            free(t);
            return rc;
        }
    }
    if (a->profile && a->warmup == 0)
        printf("first_run_ms=%.3f\n", t[0]);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    if (a->repeat > 0)
        printf("host latency: median %.3f ms (min %.3f ms, max %.3f ms) over %d runs after "
               "%d warm-up runs\n",
               med, t[0], t[n - 1], n, a->warmup);
    else
        printf("host time: %.3f ms for one inference\n", med);
    free(t);
    return 0;
}

typedef struct {
    double max_abs, max_rel;
    size_t bad, n;
    size_t first_bad;              /* index of the first mismatch (valid if bad > 0) */
} CmpResult;

/* Compare got with exp elementwise: floats by |a-b| <= atol + rtol*|b| (NaN == NaN),
 * integers and bools exactly (bytewise per element). */
static void compare(int dt, const void *got, const void *exp, size_t n, double rtol,
                    double atol, CmpResult *r)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    bool is_float = ir_dtype_is_float((IrDType)dt);
    size_t es = ir_dtype_size((IrDType)dt);
    for (size_t i = 0; i < n; i++) {
        double a = cli_elem_f(dt, got, i), b = cli_elem_f(dt, exp, i), d;
        bool ok;
        if (is_float) {
            ok = (isnan(a) && isnan(b)) || a == b;
            d = ok ? 0 : fabs(a - b);
            if (!ok)
                ok = d <= atol + rtol * fabs(b);   /* false for NaN/inf differences */
            if (isnan(d))
                d = INFINITY;
        } else {
            ok = memcmp((const char *)got + i * es, (const char *)exp + i * es, es) == 0;
            d = ok ? 0 : fabs(a - b);
        }
        if (d > r->max_abs)
            r->max_abs = d;
        if (b != 0 && !isnan(b) && d / fabs(b) > r->max_rel)
            r->max_rel = d / fabs(b);
        if (!ok && r->bad++ == 0)
            r->first_bad = i;
    }
}

/* Print the multi-index of flat element i of a tensor with the given dims. */
static void print_index(FILE *f, size_t i, int rank, const int64_t *dims)
{
    int64_t idx[SPY_MAX_RANK];
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = dims[d] > 0 ? (int64_t)(i % (size_t)dims[d]) : 0;
        i = dims[d] > 0 ? i / (size_t)dims[d] : i;
    }
    fputc('[', f);
    for (int d = 0; d < rank; d++)
        fprintf(f, d ? ",%lld" : "%lld", (long long)idx[d]);
    fputc(']', f);
}

/* Compare output k (n elements) with its golden exp and print the verdict line, the
 * metrics line of a float output, and where the first mismatch is. Float outputs pass
 * by the elementwise rule, or by the --metric thresholds when any is given. Returns 0
 * or EXIT_FAIL. */
static int print_check(const Args *a, int k, const spy_tensor_info *info, const void *got,
                       const void *exp, size_t n)
{
    CmpResult r;
    CliMetrics mt;
    char why[160] = "";
    bool fl = ir_dtype_is_float((IrDType)info->dtype);
    CliMetricSpec spec = a->metrics;
    bool half = info->dtype == IR_DT_F16 || info->dtype == IR_DT_BF16;
    bool cast = !half && k < 64 && (a->half_out >> k & 1);   /* a half value as float32 */
    if ((half || cast) && !cli_metric_any(&spec) && !a->tol_given) {
        cli_metric_half_defaults(&spec);   /* float16 goldens: the fp16 metrics */
        printf("output %d '%s' is %s: passes by rel-l2 <= %g, cosine >= %g, top1 = 1\n", k,
               info->name,
               cast ? "float32 cast from half precision in the model"
                    : info->dtype == IR_DT_F16 ? "float16" : "bfloat16",
               spec.thr[CLI_MET_REL_L2], spec.thr[CLI_MET_COSINE]);
    }
    bool by_metrics = fl && cli_metric_any(&spec);
    compare(info->dtype, got, exp, n, a->rtol, a->atol, &r);
    if (fl)
        cli_metrics(info->dtype, got, exp, n, info->rank ? info->dims[info->rank - 1] : 0, &mt);
    bool ok = by_metrics ? cli_metrics_pass(&mt, &spec, why, sizeof why) : r.bad == 0;
    printf("output %d '%s': max abs err %.3g, max rel err %.3g: ", k, info->name, r.max_abs,
           r.max_rel);
    if (ok)
        printf("OK\n");
    else if (by_metrics)
        printf("MISMATCH (%s)\n", why);
    else
        printf("MISMATCH (%zu of %zu elements)\n", r.bad, r.n);
    if (fl)
        cli_metrics_print(stdout, &mt);
    if (!ok && !by_metrics) {
        printf("  first mismatch at ");
        print_index(stdout, r.first_bad, info->rank, info->dims);
        printf(": got %.9g, expected %.9g\n", cli_elem_f(info->dtype, got, r.first_bad),
               cli_elem_f(info->dtype, exp, r.first_bad));
    }
    return ok ? 0 : EXIT_FAIL;
}

/* Compare output k with DIR/output_k.pb (or with the golden gold gives it) and print
 * one line. Returns 0 if it matches, EXIT_FAIL on mismatch, EXIT_INPUT if the golden is
 * unreadable or of another type. */
static int check_output(const Args *a, int k, const spy_tensor_info *info, const void *got,
                        CliGoldens *gold)
{
    char *path = gold ? strdup(gold->label[k] ? gold->label[k] : "?")
                      : path_k(a->check_dir, "output", k, "pb"), err[512];
    FeTensor exp;
    int rc = 0;
    if (gold) {
        exp = gold->exp[k];                /* moved: freed below */
        memset(&gold->exp[k], 0, sizeof gold->exp[k]);
    } else if (!fe_tensor_read(path, &exp, err, sizeof err)) {
        fprintf(stderr, "spyrun: %s\n", err);
        free(path);
        return EXIT_INPUT;
    }
    if (!matches_info(&exp, info, "golden output", path)) {
        rc = EXIT_INPUT;
    } else if (ir_dtype_size((IrDType)info->dtype) == 0) {
        fprintf(stderr, "spyrun: %s: output '%s': cannot compare dtype %d\n", path, info->name,
                info->dtype);
        rc = EXIT_INPUT;
    } else {
        size_t n = info->nbytes / ir_dtype_size((IrDType)info->dtype);
        rc = print_check(a, k, info, got, exp.data, n);
    }
    fe_tensor_free(&exp);
    free(path);
    return rc;
}

/* Print output k's type and its first few values. */
static void print_output(int k, const spy_tensor_info *info, const void *data)
{
    char ts[160];
    size_t es = ir_dtype_size((IrDType)info->dtype);
    size_t n = es ? info->nbytes / es : 0;
    printf("output %d '%s' %s:", k, info->name,
           type_str(info->dtype, info->rank, info->dims, ts, sizeof ts));
    for (size_t i = 0; i < n && i < 8; i++)
        printf(" %.6g", cli_elem_f(info->dtype, data, i));
    printf(n > 8 ? " ... (%zu values)\n" : "\n", n);
}

/* Write output k to DIR/output_k.{pb,npy}. Returns 0 or an exit status. */
static int write_output(const Args *a, int k, const spy_tensor_info *info, void *data)
{
    char *path = path_k(a->output_dir, "output", k, a->npy ? "npy" : "pb"), err[512];
    FeTensor t = {.name = (char *)info->name, .dtype = (IrDType)info->dtype, .rank = info->rank,
                  .data = data, .nbytes = info->nbytes};
    memcpy(t.dims, info->dims, sizeof t.dims);
    bool ok = fe_tensor_write(path, &t, a->npy, err, sizeof err);
    if (!ok)
        fprintf(stderr, "spyrun: %s\n", err);
    free(path);
    return ok ? 0 : EXIT_FAIL;
}

/* Output k of a data-dependent shape: info gets the shape of the last run (the buffer
 * holds the actual tensor as a row-major prefix). */
static void actual_shape(const spy_model *m, const spy_session *s, int k, spy_tensor_info *info)
{
    int rank;
    int64_t dims[SPY_MAX_RANK];
    if (spy_session_output_shape(s, k, &rank, dims) != SPY_OK)
        return;                            /* static outputs report their own shape */
    size_t n = 1;
    for (int d = 0; d < rank; d++) {
        info->dims[d] = dims[d];
        n *= (size_t)dims[d];
    }
    info->nbytes = n * ir_dtype_size((IrDType)info->dtype);
}

/* Create the output folder if it does not exist. */
static bool make_dir(const char *dir)
{
    if (mkdir(dir, 0777) == 0 || errno == EEXIST)
        return true;
    fprintf(stderr, "spyrun: %s: cannot create folder: %s\n", dir, strerror(errno));
    return false;
}

/* --compare's inputs (cli_compare_files): the command line's, as for a run. */
static int compare_inputs(const void *args, const spy_model *m, FeTensor *ins)
{
    return load_inputs(args, m, ins);
}

/* After the modelled time: " in size bucket V of N (its box: each input's bound
 * shape)". */
static void print_bucket(const spy_model *b, int v, int n)
{
    printf(" in size bucket %d of %d (", v, n);
    for (int i = 0; i < spy_model_num_inputs(b); i++) {
        spy_tensor_info ti;
        spy_model_input_info(b, i, &ti);
        printf("%s%s ", i ? ", " : "", ti.name);
        for (int d = 0; d < ti.rank; d++)
            printf("%s%lld", d ? "x" : "", (long long)ti.dims[d]);
    }
    printf(")");
}

/* Everything after loading: inputs, session, runs, outputs, checks. */
static int run_model(const Args *a, const spy_model *m)
{
    int nin = spy_model_num_inputs(m), nout = spy_model_num_outputs(m), rc = 0;
    FeTensor *ins = calloc((size_t)nin + 1, sizeof *ins);
    const void **in = calloc((size_t)nin + 1, sizeof *in);
    void **out = calloc((size_t)nout + 1, sizeof *out);
    spy_tensor_info *oinfo = calloc((size_t)nout + 1, sizeof *oinfo);
    spy_session *s = NULL;
    if (!ins || !in || !out || !oinfo) {
        fprintf(stderr, "spyrun: out of memory\n");
        rc = EXIT_FAIL;
        goto done;
    }
    if ((rc = load_inputs(a, m, ins)))
        goto done;
    for (int i = 0; i < nin; i++)
        in[i] = ins[i].data;
    for (int k = 0; k < nout && !rc; k++) {
        if (spy_model_output_info(m, k, &oinfo[k]) != SPY_OK ||
            !(out[k] = calloc(1, oinfo[k].nbytes + 1))) {
            fprintf(stderr, "spyrun: %s: cannot set up output %d\n", a->model, k);
            rc = EXIT_FAIL;
        }
    }
    spy_session_options so = {.num_threads = a->threads, .profile = a->profile || a->trace};
    spy_status st;
    if (!rc && (st = spy_session_create(m, &so, &s)) != SPY_OK) {
        fprintf(stderr, "spyrun: %s: cannot create a session: %s\n", a->model,
                spy_status_str(st));
        rc = EXIT_FAIL;
    }
    for (int i = 0; !rc && i < nin; i++)    /* bounded symbolic dims: the files' sizes */
        if (spy_session_set_input_shape(s, i, ins[i].rank, ins[i].dims) != SPY_OK) {
            fprintf(stderr, "spyrun: %s: %s\n", a->model, spy_session_error(s));
            rc = EXIT_INPUT;
        }
    if (rc || (rc = run_timed(a, s, in, out)))
        goto done;
    for (int k = 0; k < nout; k++)         /* data-dependent shapes: the actual ones */
        actual_shape(m, s, k, &oinfo[k]);
    bool bounded = false;                  /* bounded dynamic dims: run in the bounds' box */
    for (int i = 0; i < nin; i++)
        for (int d = 0; d < ins[i].rank && !bounded; d++)
            bounded = spy_model_input_dim_bounds(m, i, d, NULL, NULL) == 1;
    int v = spy_session_variant(s);        /* size buckets: the one this run used */
    const spy_model *rm = v >= 0 ? spy_model_variant(m, v) : m;
    printf("modelled device time: %.3f us per inference (%d kernels)%s",
           spy_session_device_us(s), spy_model_num_kernels(rm),
           v >= 0 ? "" : bounded ? " in the box of its dynamic dimensions' bounds" : "");
    if (v >= 0)
        print_bucket(rm, v, spy_model_num_variants(m));
    printf("\n");
    for (int k = 0; k < nout && !a->quiet; k++)
        print_output(k, &oinfo[k], out[k]);
    if (a->output_dir && !make_dir(a->output_dir))
        rc = EXIT_FAIL;
    for (int k = 0; k < nout && a->output_dir && !rc; k++)
        rc = write_output(a, k, &oinfo[k], out[k]);
    CliGoldens *gold = NULL;               /* sequences / optionals among the goldens */
    int grc = a->check_dir ? cli_seq_goldens(a->check_dir, m, &gold) : 0;
    if (grc > rc)
        rc = grc;
    Args ca = *a;                  /* an fp16/int8/fp8 bundle: its metric defaults */
    ca.half_out = cli_half_outputs_mask(spy_model_meta(m));
    const char *prec = a->check_dir ? cli_metric_precision_defaults(spy_model_meta(m),
                                                                    &ca.metrics) : NULL;
    if (prec)
        printf("%s bundle: float outputs pass by rel-l2 <= %g, cosine >= %g%s\n", prec,
               ca.metrics.thr[CLI_MET_REL_L2], ca.metrics.thr[CLI_MET_COSINE],
               ca.metrics.set[CLI_MET_TOP1] ? ", top1 = 1" : "");
    for (int k = 0; k < nout && a->check_dir && !grc && rc != EXIT_INPUT; k++) {
        int r = check_output(&ca, k, &oinfo[k], out[k], gold);
        if (r > rc)
            rc = r;
    }
    cli_seq_goldens_free(gold);
    if (a->profile)
        cli_print_profile(rm, s);
    if (a->trace) {
        char err[512];
        if (cli_trace_write(a->trace, rm, s, a->model, err, sizeof err))
            printf("trace: %s (open in ui.perfetto.dev or chrome://tracing)\n", a->trace);
        else {
            fprintf(stderr, "spyrun: --trace: %s\n", err);
            if (!rc)
                rc = EXIT_FAIL;
        }
    }
done:
    if (s)
        spy_session_free(s);
    for (int i = 0; ins && i < nin; i++)
        fe_tensor_free(&ins[i]);
    for (int k = 0; out && k < nout; k++)
        free(out[k]);
    cli_seq_cache_free();
    free(ins);
    free(in);
    free(out);
    free(oinfo);
    return rc;
}

int main(int argc, char **argv)
{
    Args a;
    setvbuf(stdout, NULL, _IOLBF, 0);      /* keep results and messages in order in logs */
    int rc = parse_args(argc, argv, &a);
    if (rc < 0) {
        spy_model *m = NULL;
        char err[1024] = "";
        spy_status st = cli_load_model(a.model, a.profile, &m, err, sizeof err);
        if (st != SPY_OK) {
            if (strstr(err, a.model))
                fprintf(stderr, "spyrun: %s\n", err);
            else
                fprintf(stderr, "spyrun: %s: %s\n", a.model, err[0] ? err : spy_status_str(st));
            rc = st == SPY_E_NOMEM ? EXIT_FAIL : EXIT_INPUT;
        } else {
            rc = a.compare ? cli_compare_files(a.model, m, a.compare, a.threads, compare_inputs, &a)
                           : run_model(&a, m);
            spy_model_free(m);
        }
    }
    for (int k = 0; k < a.ninputs; k++)
        free((char *)a.inputs[k].name);
    free(a.inputs);
    return rc;
}
