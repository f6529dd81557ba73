/* ir_diag.c: collection of user-facing diagnostics (IrDiag) and ir_error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

void ir_diag_init(IrDiag *d, const char *file)
{
    memset(d, 0, sizeof *d);
    d->file = file;
    d->max_errors = 50;
}

void ir_diag_free(IrDiag *d)
{
    for (int i = 0; i < d->nmsgs; i++)
        free(d->msgs[i]);
    free(d->msgs);
    d->msgs = NULL;
    d->nmsgs = d->capmsgs = 0;
}

/* Append a heap copy of msg; on allocation failure the message goes to stderr. */
static void diag_push(IrDiag *d, char *msg)
{
    if (d->nmsgs == d->capmsgs) {
        int cap = d->capmsgs ? d->capmsgs * 2 : 16;
        char **m = realloc(d->msgs, (size_t)cap * sizeof *m);
        if (!m) {
            fprintf(stderr, "%s\n", msg);
            free(msg);
            return;
        }
        d->msgs = m;
        d->capmsgs = cap;
    }
    d->msgs[d->nmsgs++] = msg;
}

/* Format "prefix" + fmt/ap into a heap string (NULL if out of memory). */
static char *vformat(const char *prefix, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    size_t pl = strlen(prefix);
    if (n < 0)
        n = 0;
    char *s = malloc(pl + (size_t)n + 1);
    if (!s)
        return NULL;
    memcpy(s, prefix, pl);
    vsnprintf(s + pl, (size_t)n + 1, fmt, ap);
    return s;
}

/* Record one message; kind is "" for errors and "warning: " for warnings. Past
 * max_errors errors, messages are counted but no longer stored. */
static void diag_vrecord(IrDiag *d, bool error, const char *node_prefix, const char *fmt,
                         va_list ap)
{
    if (!d) {
        fprintf(stderr, "%s%s", node_prefix, error ? "" : "warning: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        return;
    }
    int limit = d->max_errors > 0 ? d->max_errors : 50;
    if (error)
        d->nerrors++;
    else
        d->nwarnings++;
    if (error && d->nerrors > limit) {
        if (d->nerrors == limit + 1) {
            char *s = malloc(128);
            if (s) {
                snprintf(s, 128, "%s: too many errors, stopping here", d->file ? d->file : "spyrec");
                diag_push(d, s);
            }
        }
        return;
    }
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s: %s%s", d->file ? d->file : "spyrec",
             error ? "" : "warning: ", node_prefix);
    char *s = vformat(prefix, fmt, ap);
    if (s)
        diag_push(d, s);
}

void ir_diag_error(IrDiag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vrecord(d, true, "", fmt, ap);
    va_end(ap);
}

void ir_diag_warn(IrDiag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vrecord(d, false, "", fmt, ap);
    va_end(ap);
}

void ir_diag_print(const IrDiag *d, FILE *f)
{
    for (int i = 0; i < d->nmsgs; i++)
        fprintf(f, "%s\n", d->msgs[i]);
}

/* "file: node 'name' (OpType): message"; the name part is left out when empty. */
void ir_error(IrGraph *g, const IrOrigin *o, const char *fmt, ...)
{
    char prefix[512] = "";
    if (o) {
        const char *name = o->name ? o->name : "";
        const char *op = o->op_type && o->op_type[0] ? o->op_type : "?";
        if (name[0])
            snprintf(prefix, sizeof prefix, "node '%.300s' (%.150s): ", name, op);
        else
            snprintf(prefix, sizeof prefix, "node (%.150s): ", op);
    }
    va_list ap;
    va_start(ap, fmt);
    diag_vrecord(g ? g->diag : NULL, true, prefix, fmt, ap);
    va_end(ap);
}
