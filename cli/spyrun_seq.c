/* spyrun_seq.c: sequences and optionals at a bundle's edges (spyrun).
 *
 * A model input or output typed as an ONNX sequence or optional is compiled into one
 * bundle tensor per element, named "NAME[0]", "NAME[1]", ... (none for an empty
 * optional or sequence). Data sets hold such a value as one SequenceProto or
 * OptionalProto file: this file feeds the element inputs from it, and lines up the
 * golden files of --check with the bundle's outputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "frontend/fe.h"

int cli_seq_element(const char *name, char *base, size_t n)
{
    size_t len = strlen(name);
    if (len < 4 || name[len - 1] != ']')
        return -1;
    size_t i = len - 1;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i == len - 1 || i < 2 || name[i - 1] != '[' || len - 1 - i > 6 ||
        (name[i] == '0' && i + 1 < len - 1) || i - 1 >= n)
        return -1;
    memcpy(base, name, i - 1);
    base[i - 1] = '\0';
    return atoi(name + i);
}

bool cli_seq_any_input(const spy_model *m)
{
    char base[512];
    for (int i = 0; i < spy_model_num_inputs(m); i++) {
        spy_tensor_info info;
        if (spy_model_input_info(m, i, &info) == SPY_OK &&
            cli_seq_element(info.name, base, sizeof base) >= 0)
            return true;
    }
    return false;
}

/* The last sequence file read by cli_seq_take (element inputs come in order). */
static struct {
    char *path;
    FeSeq s;
} cache;

void cli_seq_cache_free(void)
{
    free(cache.path);
    fe_seq_free(&cache.s);
    cache.path = NULL;
}

bool cli_seq_take(const char *path, int k, FeTensor *t, char *err, size_t errlen)
{
    if (!cache.path || strcmp(cache.path, path)) {
        cli_seq_cache_free();
        if (!fe_seq_read(path, &cache.s, err, errlen))
            return false;
        if (!(cache.path = strdup(path))) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
    }
    if (k >= cache.s.n || cache.s.items[k].dtype == IR_DT_UNDEF) {
        snprintf(err, errlen, "%s: the %s '%s' has no element %d (it holds %d tensor%s)", path,
                 cache.s.none ? "optional" : "sequence", cache.s.name, k, cache.s.n,
                 cache.s.n == 1 ? "" : "s");
        return false;
    }
    *t = cache.s.items[k];
    memset(&cache.s.items[k], 0, sizeof cache.s.items[k]);
    return true;
}

/* "DIR/PREFIX_K.pb" (malloc'd; NULL when out of memory). */
static char *file_k(const char *dir, const char *prefix, int k)
{
    size_t n = strlen(dir) + strlen(prefix) + 32;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s_%d.pb", dir, prefix, k);
    return p;
}

char *cli_seq_find_file(const char *dir, const char *base)
{
    for (int k = 0;; k++) {
        char *p = file_k(dir, "input", k), err[256];
        FeSeq s;
        if (!p || access(p, F_OK) != 0) {
            free(p);
            return NULL;
        }
        if (fe_seq_read(p, &s, err, sizeof err)) {
            bool same = !strcmp(s.name, base);
            fe_seq_free(&s);
            if (same)
                return p;
        }
        free(p);
    }
}

bool cli_seq_describe(const char *path)
{
    FeSeq s;
    char err[256];
    if (!fe_seq_read(path, &s, err, sizeof err))
        return false;
    if (s.none) {
        printf("%s\toptional\tnone\n", s.name);
    } else {
        printf("%s\tsequence(%s)\t%d:", s.name, s.n ? ir_dtype_name(s.elem) : "?", s.n);
        for (int i = 0; i < s.n; i++) {
            printf("%s", i ? "," : "");
            for (int d = 0; d < s.items[i].rank; d++)
                printf("%s%lld", d ? "x" : "", (long long)s.items[i].dims[d]);
        }
        printf("\n");
    }
    fe_seq_free(&s);
    return true;
}

/* Input i named "BASE[k]" (an element of a sequence or optional input), when no
 * --input names it: element k of the SequenceProto / OptionalProto file given by
 * --input BASE=FILE or found by its name in the data folder. Returns 1 and fills t
 * (or prints why not and sets *failed), 0 if input i is not such an input. */
int cli_seq_element_input(const CliInputArg *args, int nargs, const char *dir, int i,
                          const char *name, FeTensor *t, bool *failed)
{
    char base[512], idx[16], err[640];
    int e = cli_seq_element(name, base, sizeof base);
    snprintf(idx, sizeof idx, "%d", i);
    for (int k = 0; e >= 0 && k < nargs; k++)
        if (!strcmp(args[k].name, name) || !strcmp(args[k].name, idx))
            return 0;
    if (e < 0)
        return 0;
    const char *file = NULL;
    char *owned = NULL;
    for (int k = 0; k < nargs && !file; k++)
        if (!strcmp(args[k].name, base))
            file = args[k].file;
    if (!file && dir)
        file = owned = cli_seq_find_file(dir, base);
    if (!file)
        return 0;
    *failed = !cli_seq_take(file, e, t, err, sizeof err);
    if (*failed)
        fprintf(stderr, "spyrun: %s\n", err);
    free(owned);
    return 1;
}

/* ---- goldens of --check ---- */

typedef struct {
    char *path;
    bool is_seq;                   /* a SequenceProto/OptionalProto (else a tensor) */
    FeTensor t;
    FeSeq s;
    int taken;                     /* tensors handed to outputs */
} Golden;

/* Read DIR/output_J.pb for J = 0, 1, ... into *gs (count *ng). Returns 0, or an exit
 * status after printing why a file is unreadable (only when some golden is a sequence:
 * otherwise the positional check reports it as before). */
static int read_goldens(const char *dir, Golden **gs, int *ng, bool *any_seq)
{
    char first_err[512] = "";
    *gs = NULL;
    *ng = 0;
    *any_seq = false;
    for (int j = 0;; j++) {
        char *p = file_k(dir, "output", j), err[512], err2[512];
        if (!p || access(p, F_OK) != 0) {
            free(p);
            if (p && *any_seq && first_err[0]) {
                fprintf(stderr, "spyrun: %s\n", first_err);
                return 2;
            }
            return p ? 0 : 1;
        }
        Golden *n = realloc(*gs, (size_t)(j + 1) * sizeof *n);
        if (!n) {
            free(p);
            return 1;
        }
        *gs = n;
        Golden *g = &n[j];
        memset(g, 0, sizeof *g);
        g->path = p;
        (*ng)++;
        if (fe_tensor_read(p, &g->t, err, sizeof err))
            continue;
        if (fe_seq_read(p, &g->s, err2, sizeof err2))
            g->is_seq = *any_seq = true;
        else if (!first_err[0])
            snprintf(first_err, sizeof first_err, "%s", err);
    }
}

/* Give golden tensor (file g, element e or -1 for a tensor file) to output k. */
static void give(CliGoldens *out, int k, Golden *g, int e)
{
    char buf[600];
    if (e < 0) {
        out->exp[k] = g->t;
        memset(&g->t, 0, sizeof g->t);
        snprintf(buf, sizeof buf, "%s", g->path);
    } else {
        out->exp[k] = g->s.items[e];
        memset(&g->s.items[e], 0, sizeof g->s.items[e]);
        snprintf(buf, sizeof buf, "%s element %d", g->path, e);
    }
    g->taken++;
    out->label[k] = strdup(buf);
}

/* The golden for output k named name, by name: a tensor file of that name; element e
 * of the sequence file named like "NAME" of "NAME[e]"; a one-tensor optional named
 * name. false if there is none. */
static bool match_by_name(CliGoldens *out, int k, const char *name, Golden *gs, int ng)
{
    char base[512];
    int e = cli_seq_element(name, base, sizeof base);
    for (int j = 0; j < ng; j++)
        if (!gs[j].is_seq && !gs[j].taken && gs[j].t.name && !strcmp(gs[j].t.name, name)) {
            give(out, k, &gs[j], -1);
            return true;
        }
    for (int j = 0; j < ng; j++) {
        Golden *g = &gs[j];
        if (!g->is_seq)
            continue;
        if (e >= 0 && !strcmp(g->s.name, base) && e < g->s.n &&
            g->s.items[e].dtype != IR_DT_UNDEF) {
            give(out, k, g, e);
            return true;
        }
        if (!g->taken && g->s.n == 1 && !strcmp(g->s.name, name)) {
            give(out, k, g, 0);
            return true;
        }
    }
    return false;
}

/* The golden for output k when none matched by name: the first one not yet used that
 * holds one tensor. Returns false (message printed) if none is left. */
static bool match_next(CliGoldens *out, int k, const char *name, Golden *gs, int ng)
{
    for (int j = 0; j < ng; j++) {
        Golden *g = &gs[j];
        if (g->taken || (g->is_seq && g->s.n != 1))
            continue;
        give(out, k, g, g->is_seq ? 0 : -1);
        return true;
    }
    fprintf(stderr, "spyrun: no golden output for output %d '%s'\n", k, name);
    return false;
}

/* Every golden must have gone to outputs whole; an empty optional or sequence has no
 * output. Returns 0 or an exit status (message printed). */
static int check_leftovers(const Golden *gs, int ng)
{
    int rc = 0;
    for (int j = 0; j < ng; j++) {
        const Golden *g = &gs[j];
        int want = g->is_seq ? g->s.n : 1;
        if (g->taken == want) {
            if (want == 0)
                printf("golden '%s' (%s): %s, no output to compare: OK\n", g->s.name, g->path,
                       g->s.none ? "an empty optional" : "an empty sequence");
            continue;
        }
        fprintf(stderr, "spyrun: %s: golden '%s' holds %d tensor%s, %d matched the bundle's "
                "outputs\n", g->path, g->is_seq ? g->s.name : g->t.name ? g->t.name : "",
                want, want == 1 ? "" : "s", g->taken);
        rc = 2;
    }
    return rc;
}

void cli_seq_goldens_free(CliGoldens *g)
{
    if (!g)
        return;
    for (int k = 0; k < g->n; k++) {
        fe_tensor_free(&g->exp[k]);
        free(g->label[k]);
    }
    free(g->exp);
    free(g->label);
    free(g);
}

int cli_seq_goldens(const char *dir, const spy_model *m, CliGoldens **out)
{
    Golden *gs;
    int ng, nout = spy_model_num_outputs(m), rc;
    bool any_seq;
    *out = NULL;
    rc = read_goldens(dir, &gs, &ng, &any_seq);
    CliGoldens *r = NULL;
    if (!rc && any_seq) {
        r = calloc(1, sizeof *r);
        if (r) {
            r->n = nout;
            r->exp = calloc((size_t)nout + 1, sizeof *r->exp);
            r->label = calloc((size_t)nout + 1, sizeof *r->label);
        }
        if (!r || !r->exp || !r->label)
            rc = 1;
        bool *named = calloc((size_t)nout + 1, sizeof *named);
        spy_tensor_info info;
        if (!named)
            rc = 1;
        for (int k = 0; k < nout && !rc; k++)       /* by name first, then by position */
            if (spy_model_output_info(m, k, &info) != SPY_OK)
                rc = 2;
            else
                named[k] = match_by_name(r, k, info.name, gs, ng);
        for (int k = 0; k < nout && !rc; k++)
            if (!named[k] && (spy_model_output_info(m, k, &info) != SPY_OK ||
                              !match_next(r, k, info.name, gs, ng)))
                rc = 2;
        free(named);
        if (!rc)
            rc = check_leftovers(gs, ng);
    }
    for (int j = 0; j < ng; j++) {
        free(gs[j].path);
        fe_tensor_free(&gs[j].t);
        fe_seq_free(&gs[j].s);
    }
    free(gs);
    if (rc == 1)
        fprintf(stderr, "spyrun: out of memory\n");
    if (rc)
        cli_seq_goldens_free(r);
    else
        *out = r;
    return rc;
}
