/* spyrun_compare.c: spyrun A.sbin --compare B.sbin: one model compiled two ways (fp16
 * and fp32, two -O levels, ...) runs on the same inputs, and every tensor both bundles
 * produce under the same name in the model is compared, A against B as the reference:
 * maximum absolute error, relative L2 error ||A - B|| / ||B|| and cosine similarity,
 * both widened to float32 (so dlf16 against f32 compares the values), worst first, so
 * that the layer where accuracy goes shows at the top.
 *
 * The tensors are the graph outputs (matched by name) and the kernel outputs of the
 * bundles' DEBUG sections (spyrt.h spy_model_debug_tensor_info): each is read in the
 * kernel hook of the kernel that writes it, before a later kernel can reuse its DRAM.
 * A is run first and its tensors are kept as float32; B is run next and each of its
 * tensors is compared as soon as its kernel is done, so only A's are held.
 * Names found in only one bundle (the compiles fused differently, or kept a different
 * tensor in DRAM) and names whose shapes differ are listed, counted and not compared. A
 * bundle without a DEBUG section (spyrec --strip) is refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/fe.h"

/* One tensor both bundles produce. */
typedef struct {
    const char *name;
    int ia, ib;                    /* debug index in A / B, or -(output index) - 1 */
    int ka, kb;                    /* kernel writing it in A / B (-1: a graph output) */
    int dta, dtb;                  /* dtypes (device dtype of debug tensors, else host) */
    int rank;
    int64_t dims[SPY_MAX_RANK];
    size_t n;
    float *a;                      /* A's values, after A's run */
    float *tmp;                    /* B's values while comparing */
    bool done;
    double maxabs;
    CliMetrics met;
} Pair;

typedef struct {
    Pair *p;
    int n;
    bool run_b;                    /* the hooks run B (compare) rather than A (keep) */
    bool oom;
} Cmp;

/* Find a debug tensor of m by name: its index, or -1. */
static int find_debug(const spy_model *m, const char *name)
{
    int n = spy_model_num_debug_tensors(m);
    for (int i = 0; i < n; i++) {
        spy_debug_tensor_info d;
        if (spy_model_debug_tensor_info(m, i, &d) == SPY_OK && !strcmp(d.name, name))
            return i;
    }
    return -1;
}

/* Find an output of m by name: its index, or -1. */
static int find_output(const spy_model *m, const char *name)
{
    for (int k = 0; k < spy_model_num_outputs(m); k++) {
        spy_tensor_info t;
        if (spy_model_output_info(m, k, &t) == SPY_OK && !strcmp(t.name, name))
            return k;
    }
    return -1;
}

/* Name, kernel, dtype and shape of tensor id of m (debug index, or -(output) - 1). */
static void tensor_desc(const spy_model *m, int id, const char **name, int *kernel, int *dt,
                        int *rank, int64_t *dims)
{
    if (id >= 0) {
        spy_debug_tensor_info d;
        spy_model_debug_tensor_info(m, id, &d);
        *name = d.name, *kernel = d.kernel, *dt = d.dtype, *rank = d.rank;
        memcpy(dims, d.dims, sizeof d.dims);
    } else {
        spy_tensor_info t;
        spy_model_output_info(m, -id - 1, &t);
        *name = t.name, *kernel = -1, *dt = t.dtype, *rank = t.rank;
        memcpy(dims, t.dims, sizeof t.dims);
    }
}

/* Add the pair (A's id ia, B's id ib) when the shapes agree; otherwise print why not.
 * Returns false when the shapes differ. */
static bool add_pair(Cmp *c, const spy_model *ma, int ia, const spy_model *mb, int ib)
{
    Pair p = {.ia = ia, .ib = ib};
    const char *nb;
    int rb;
    int64_t db[SPY_MAX_RANK];
    tensor_desc(ma, ia, &p.name, &p.ka, &p.dta, &p.rank, p.dims);
    tensor_desc(mb, ib, &nb, &p.kb, &p.dtb, &rb, db);
    if (rb != p.rank || memcmp(db, p.dims, (size_t)rb * sizeof *db)) {
        printf("  not compared: '%s': shapes differ\n", p.name);
        return false;
    }
    p.n = 1;
    for (int k = 0; k < p.rank; k++)
        p.n *= (size_t)p.dims[k];
    c->p[c->n++] = p;
    return true;
}

#define LIST_NAMES 8                      /* names listed of those in one bundle only */

/* Name of tensor id of m (debug index, or -(output) - 1). */
static const char *tensor_name(const spy_model *m, int id)
{
    const char *name;
    int kernel, dt, rank;
    int64_t dims[SPY_MAX_RANK];
    tensor_desc(m, id, &name, &kernel, &dt, &rank, dims);
    return name;
}

/* The tensors of m (debug ones, then outputs) that other does not name; the first
 * LIST_NAMES of them are printed after label. Returns their count. */
static int only_in(const spy_model *m, const spy_model *other, const char *label)
{
    int nd = spy_model_num_debug_tensors(m), no = spy_model_num_outputs(m), count = 0;
    for (int i = 0; i < nd + no; i++) {
        const char *name = tensor_name(m, i < nd ? i : -(i - nd) - 1);
        if (find_debug(other, name) >= 0 || find_output(other, name) >= 0)
            continue;
        if (count < LIST_NAMES)
            printf("%s%s", count ? ", " : label, name);
        count++;
    }
    if (count > LIST_NAMES)
        printf(", ... (%d more)", count - LIST_NAMES);
    if (count)
        printf("\n");
    return count;
}

/* The tensors to compare: A's debug tensors and outputs that B has under the same name
 * and shape. Lists the names that only one bundle has (not compared) and prints the
 * counts. */
static bool match(Cmp *c, const spy_model *ma, const spy_model *mb)
{
    int nda = spy_model_num_debug_tensors(ma), noa = spy_model_num_outputs(ma), differ = 0;
    c->p = calloc((size_t)(nda + noa) + 1, sizeof *c->p);
    if (!c->p)
        return false;
    for (int i = 0; i < nda + noa; i++) {
        int ia = i < nda ? i : -(i - nda) - 1;
        const char *name = tensor_name(ma, ia);
        int j = find_debug(mb, name), o = j < 0 ? find_output(mb, name) : -1;
        if ((j >= 0 || o >= 0) && !add_pair(c, ma, ia, mb, j >= 0 ? j : -o - 1))
            differ++;
    }
    int only_a = only_in(ma, mb, "  named in A only (not compared): ");
    int only_b = only_in(mb, ma, "  named in B only (not compared): ");
    printf("compared: %d tensors; named in A only: %d, in B only: %d, shapes differ: %d\n",
           c->n, only_a, only_b, differ);
    return true;
}

/* Values of pair p (A's or B's side) into dst from the session's DRAM. */
static bool read_side(spy_session *s, int id, float *dst, size_t n)
{
    return spy_session_read_debug_tensor(s, id, dst, n) == SPY_OK;
}

/* Compare B's values b of pair p with A's kept ones. */
static void compare_pair(Pair *p, const float *b)
{
    double mx = 0;
    for (size_t i = 0; i < p->n; i++) {
        double d = fabs((double)p->a[i] - (double)b[i]);
        if (d > mx || isnan(d))
            mx = isnan(d) && !(isnan(p->a[i]) && isnan(b[i])) ? NAN : d > mx ? d : mx;
    }
    p->maxabs = mx;
    cli_metrics(IR_DT_F32, p->a, b, p->n, 0, &p->met);
    p->done = true;
}

/* Kernel hook of both runs: keep (A) or compare (B) the tensors kernel k writes. */
static void on_kernel(spy_session *s, int pos, int k, void *user)
{
    Cmp *c = user;
    (void)pos;
    for (int i = 0; i < c->n; i++) {
        Pair *p = &c->p[i];
        int id = c->run_b ? p->ib : p->ia, kk = c->run_b ? p->kb : p->ka;
        if (id < 0 || kk != k || !p->a)
            continue;
        float *dst = c->run_b ? p->tmp : p->a;
        if (!read_side(s, id, dst, p->n))
            c->oom = true;
        else if (c->run_b)
            compare_pair(p, dst);
    }
}

/* One run of m with the hook installed; outputs widened to float32 afterwards into the
 * pairs that are outputs of m. Returns 0 or an exit status. */
static int run_side(Cmp *c, const char *path, const spy_model *m, const void *const *in,
                    int threads, bool b)
{
    int nout = spy_model_num_outputs(m), rc = 0;
    void **out = calloc((size_t)nout + 1, sizeof *out);
    spy_session *s = NULL;
    spy_session_options so = {.num_threads = threads};
    for (int k = 0; out && k < nout; k++) {
        spy_tensor_info t;
        spy_model_output_info(m, k, &t);
        if (!(out[k] = calloc(1, t.nbytes + 1)))
            rc = 1;
    }
    spy_status st = !out || rc ? SPY_E_NOMEM : spy_session_create(m, &so, &s);
    c->run_b = b;
    if (st == SPY_OK && (st = spy_session_set_kernel_hook(s, on_kernel, c)) == SPY_OK)
        st = spy_session_run(s, in, out);
    if (st != SPY_OK) {
        fprintf(stderr, "spyrun: %s: %s%s%s\n", path, spy_status_str(st), s ? ": " : "",
                s ? spy_session_error(s) : "");
        rc = st == SPY_E_RUNTIME ? 2 : 1;
    }
    for (int i = 0; i < c->n && !rc; i++) {
        Pair *p = &c->p[i];
        int id = b ? p->ib : p->ia;
        if (id >= 0 || !p->a)
            continue;
        spy_tensor_info t;
        spy_model_output_info(m, -id - 1, &t);
        float *dst = b ? p->tmp : p->a;
        for (size_t e = 0; e < p->n; e++)
            dst[e] = (float)cli_elem_f(t.dtype, out[-id - 1], e);
        if (b)
            compare_pair(p, dst);
    }
    spy_session_free(s);
    for (int k = 0; out && k < nout; k++)
        free(out[k]);
    free(out);
    return rc ? rc : c->oom ? 1 : 0;
}

/* Worst first: larger relative L2 error (NaN and infinity first), then larger max abs. */
static int cmp_worst(const void *x, const void *y)
{
    const Pair *a = x, *b = y;
    double ra = isnan(a->met.rel_l2) ? INFINITY : a->met.rel_l2;
    double rb = isnan(b->met.rel_l2) ? INFINITY : b->met.rel_l2;
    if (ra != rb)
        return ra > rb ? -1 : 1;
    if (a->maxabs != b->maxabs)
        return a->maxabs > b->maxabs ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The table, worst first. */
static void print_table(Cmp *c)
{
    qsort(c->p, (size_t)c->n, sizeof *c->p, cmp_worst);
    printf("%-4s %-40s %-7s %-13s %-20s %12s %12s %12s\n", "#", "tensor", "kernel", "dtype A/B",
           "shape", "max abs", "rel-l2", "cosine");
    for (int i = 0; i < c->n; i++) {
        const Pair *p = &c->p[i];
        char shape[64] = "", dt[32], kn[16];
        size_t at = 0;
        for (int k = 0; k < p->rank && at < sizeof shape - 24; k++)
            at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%lld", k ? "x" : "",
                                   (long long)p->dims[k]);
        snprintf(dt, sizeof dt, "%s/%s", spy_dtype_name(p->dta), spy_dtype_name(p->dtb));
        if (p->ka >= 0)
            snprintf(kn, sizeof kn, "%d", p->ka);
        else
            snprintf(kn, sizeof kn, "output");
        printf("%-4d %-40s %-7s %-13s %-20s %12.4g %12.4g %12.8f\n", i + 1, p->name, kn, dt,
               p->rank ? shape : "scalar", p->maxabs, p->met.rel_l2, p->met.cosine);
    }
}

/* Run ma and mb on inputs `in` and print the table (see the top); the exit status. */
static int compare(const char *path_a, const spy_model *ma, const char *path_b,
                   const spy_model *mb, const void *const *in, int threads)
{
    const char *stripped = spy_model_num_debug_tensors(ma) < 0   ? path_a
                           : spy_model_num_debug_tensors(mb) < 0 ? path_b
                                                                 : NULL;
    if (stripped) {
        fprintf(stderr, "spyrun: %s has no debug info (compiled with spyrec --strip); "
                        "--compare needs bundles compiled without --strip\n", stripped);
        return 2;
    }
    Cmp c = {0};
    int rc = match(&c, ma, mb) ? 0 : 1;
    for (int i = 0; i < c.n && !rc; i++)
        if (!(c.p[i].a = malloc(c.p[i].n * sizeof(float) + 1)) ||
            !(c.p[i].tmp = malloc(c.p[i].n * sizeof(float) + 1)))
            rc = 1;
    if (rc)
        fprintf(stderr, "spyrun: --compare: out of memory\n");
    if (!rc)
        rc = run_side(&c, path_a, ma, in, threads, false);
    if (!rc)
        rc = run_side(&c, path_b, mb, in, threads, true);
    int missing = 0;
    for (int i = 0; i < c.n; i++)
        missing += !c.p[i].done;
    if (!rc && missing) {
        fprintf(stderr, "spyrun: --compare: %d tensors were not produced by a run\n", missing);
        rc = 1;
    }
    if (!rc) {
        printf("A = %s, B = %s (reference); errors of A against B, worst first:\n", path_a,
               path_b);
        print_table(&c);
    }
    for (int i = 0; i < c.n; i++) {
        free(c.p[i].a);
        free(c.p[i].tmp);
    }
    free(c.p);
    return rc;
}

/* Whether some input of m has a bounded dynamic dimension (spyrec --dim). */
static bool bounded_dims(const spy_model *m)
{
    for (int i = 0; i < spy_model_num_inputs(m); i++) {
        spy_tensor_info t;
        spy_model_input_info(m, i, &t);
        for (int d = 0; d < t.rank; d++)
            if (spy_model_input_dim_bounds(m, i, d, NULL, NULL) == 1)
                return true;
    }
    return false;
}

/* Whether ma and mb have the same inputs: names, dtypes and sizes, in order. */
static bool same_inputs(const spy_model *ma, const spy_model *mb)
{
    int nin = spy_model_num_inputs(ma);
    if (nin != spy_model_num_inputs(mb))
        return false;
    for (int i = 0; i < nin; i++) {
        spy_tensor_info x, y;
        spy_model_input_info(ma, i, &x);
        spy_model_input_info(mb, i, &y);
        if (strcmp(x.name, y.name) || x.dtype != y.dtype || x.nbytes != y.nbytes)
            return false;
    }
    return true;
}

int cli_compare_files(const char *path_a, const spy_model *ma, const char *path_b, int threads,
                      int (*load)(const void *ctx, const spy_model *m, FeTensor *ins),
                      const void *ctx)
{
    spy_model *mb = NULL;
    char err[1024] = "";
    if (cli_load_model(path_b, false, &mb, err, sizeof err) != SPY_OK) {
        fprintf(stderr, "spyrun: %s: %s\n", path_b, err);
        return 2;
    }
    int nin = spy_model_num_inputs(ma), rc = 0;
    FeTensor *ins = calloc((size_t)nin + 1, sizeof *ins);
    const void **in = calloc((size_t)nin + 1, sizeof *in);
    rc = !ins || !in ? 1 : same_inputs(ma, mb) ? 0 : 2;
    if (rc == 2)
        fprintf(stderr, "spyrun: --compare: %s and %s do not have the same inputs\n", path_a,
                path_b);
    if (!rc && (bounded_dims(ma) || bounded_dims(mb))) {
        fprintf(stderr, "spyrun: --compare: %s has bounded dynamic dimensions, whose kernels "
                "compute padding that the two bundles need not agree on; compare the outputs "
                "(--output-dir, --check) instead\n", bounded_dims(ma) ? path_a : path_b);
        rc = 2;
    }
    if (!rc && !(rc = load(ctx, ma, ins))) {
        for (int i = 0; i < nin; i++)
            in[i] = ins[i].data;
        rc = compare(path_a, ma, path_b, mb, in, threads);
    }
    for (int i = 0; ins && i < nin; i++)
        fe_tensor_free(&ins[i]);
    cli_seq_cache_free();
    free(ins);
    free(in);
    spy_model_free(mb);
    return rc;
}
