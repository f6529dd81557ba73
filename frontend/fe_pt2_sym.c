/* fe_pt2_sym.c: symbolic sizes of a torch.export archive (dynamic_shapes).
 *
 * torch.export records a dynamic dimension as a sympy symbol ("s0", "s77": backed by
 * an input's size) with the range the exporter proved or the user gave
 * (range_constraints: min_val, max_val; an unbounded max is null or a huge integer), and
 * every size, stride or SymInt argument that depends on it as a sympy expression, in
 * srepr form (Symbol('s77', positive=True, integer=True), Integer(16), Add(...),
 * Mul(...), FloorDiv(...), ...) or, from older torch, as str() ("2*s0 - 1",
 * "((s0 + 1)//2)"). The program is converted at the bounds, as the ONNX frontend does
 * with a bounded dim_param (pass_symdim then makes it exact at every size): each
 * expression is evaluated with every symbol at its upper bound, which the range gives,
 * or spyrec --dim SYMBOL=[MIN..]MAX narrows or supplies. Unbacked symbols (data-dependent
 * sizes, "u0") and functions outside the integer arithmetic below are refused.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe_pt2_priv.h"

#define SYM_MAX_BOUND ((int64_t)1 << 40) /* a larger max_val: no bound (torch's int_oo) */
#define SYM_MAX_DEPTH 64                 /* nesting of an expression */

/* The bound of symbol nm; NULL when it is not a backed symbol of the table. */
static const FePt2Sym *find(const FePt2Syms *sy, const char *nm, size_t len)
{
    for (int i = 0; sy && i < sy->n; i++)
        if (strlen(sy->v[i].name) == len && !strncmp(sy->v[i].name, nm, len))
            return &sy->v[i];
    return NULL;
}

/* A parse of one expression (srepr or str()); err set on failure. */
typedef struct {
    const char *p;
    const FePt2Syms *sy;
    const char *err;
    const char *bare;                      /* the symbol when the whole expression is one */
} SymParse;

static bool expr(SymParse *x, int depth, int64_t *out);

static void skip_ws(SymParse *x)
{
    while (isspace((unsigned char)*x->p))
        x->p++;
}

/* A quoted string's contents (x->p at its quote): *s and *len; past it. */
static bool quoted(SymParse *x, const char **s, size_t *len)
{
    char q = *x->p;
    if (q != '\'' && q != '"')
        return false;
    const char *e = strchr(x->p + 1, q);
    if (!e)
        return false;
    *s = x->p + 1, *len = (size_t)(e - x->p - 1);
    x->p = e + 1;
    return true;
}

/* Skip an argument that is not an expression: a keyword (name=...) or a literal. */
static void skip_arg(SymParse *x)
{
    int level = 0;
    while (*x->p && !(level == 0 && (*x->p == ',' || *x->p == ')'))) {
        level += *x->p == '(' ? 1 : *x->p == ')' ? -1 : 0;
        x->p++;
    }
}

/* Whether the argument at x->p is a keyword argument (name=value). */
static bool keyword(const SymParse *x)
{
    const char *q = x->p;
    while (isalnum((unsigned char)*q) || *q == '_')
        q++;
    return q > x->p && *q == '=';
}

/* Floor division and modulo as Python's (the divisor's sign). */
static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Function fn applied to its n values v: false (err) for an unknown one, or where
 * the integer arithmetic overflows. */
static bool apply(SymParse *x, const char *fn, size_t fl, const int64_t *v, int n, int64_t *out)
{
#define IS(s) (fl == sizeof(s) - 1 && !strncmp(fn, s, fl))
    bool over = false;
    if ((IS("Add") || IS("Mul") || IS("Max") || IS("Min")) && n >= 1) {
        int64_t r = v[0];
        for (int i = 1; i < n; i++) {
            if (IS("Add"))
                over |= __builtin_add_overflow(r, v[i], &r);
            else if (IS("Mul"))
                over |= __builtin_mul_overflow(r, v[i], &r);
            else
                r = IS("Max") ? (v[i] > r ? v[i] : r) : (v[i] < r ? v[i] : r);
        }
        *out = r;
        return !over || (x->err = "an integer overflow", false);
    }
    if ((IS("FloorDiv") || IS("CleanDiv") || IS("IntTrueDiv") || IS("Mod") ||
         IS("PythonMod") || IS("CeilDiv")) && n == 2) {
        if (v[1] == 0 || v[0] == INT64_MIN) {
            x->err = v[1] == 0 ? "a division by zero" : "an integer overflow";
            return false;
        }
        int64_t q = IS("CeilDiv") ? -floordiv(-v[0], v[1]) : floordiv(v[0], v[1]), m;
        if (IS("Mod") || IS("PythonMod")) {
            over = __builtin_mul_overflow(q, v[1], &m) || __builtin_sub_overflow(v[0], m, &q);
            if (over)
                return x->err = "an integer overflow", false;
        }
        *out = q;
        return true;
    }
    if (IS("Pow") && n == 2 && v[1] >= 0 && v[1] < 63) {
        int64_t r = 1;
        for (int64_t i = 0; i < v[1]; i++)
            over |= __builtin_mul_overflow(r, v[0], &r);
        *out = r;
        return !over || (x->err = "an integer overflow", false);
    }
    if ((IS("Abs") || IS("CeilToInt") || IS("FloorToInt") || IS("TruncToInt")) && n == 1 &&
        v[0] != INT64_MIN) {
        *out = IS("Abs") && v[0] < 0 ? -v[0] : v[0];
        return true;
    }
#undef IS
    x->err = "a function outside integer arithmetic";
    return false;
}

/* The bound of symbol nm (len bytes) into *out; false (err) when it is none. */
static bool symbol(SymParse *x, const char *nm, size_t len, int64_t *out)
{
    const FePt2Sym *s = find(x->sy, nm, len);
    if (!s) {
        x->err = "a symbol that is not a bounded dimension of an input (a data-dependent "
                 "size)";
        return false;
    }
    *out = s->max;
    x->bare = s->name;
    return true;
}

/* The arguments of function fn (x->p past its '('), evaluated: Symbol('s0', ...) and
 * Integer(n) (sympy's srepr), else expressions (keyword arguments skipped). */
static bool call(SymParse *x, const char *fn, size_t fl, int depth, int64_t *out)
{
    bool sym = fl == 6 && !strncmp(fn, "Symbol", 6), lit = fl == 7 && !strncmp(fn, "Integer", 7);
    int64_t v[16];
    int n = 0;
    skip_ws(x);
    if (sym) {
        const char *nm;
        size_t len;
        if (!quoted(x, &nm, &len) || !symbol(x, nm, len, out))
            return x->err = x->err ? x->err : "a malformed Symbol", false;
    } else if (lit) {
        char *e;
        *out = strtoll(x->p, &e, 10);
        if (e == x->p)
            return x->err = "a malformed Integer", false;
        x->p = e;
    }
    while ((sym || lit) && *x->p == ',') {  /* Symbol's assumptions (positive=True, ...) */
        x->p++;
        skip_arg(x);
    }
    while (!sym && !lit && *x->p != ')') {
        if (keyword(x))
            skip_arg(x);
        else if (n == 16 || !expr(x, depth + 1, &v[n++]))
            return x->err = x->err ? x->err : "an expression of too many terms", false;
        skip_ws(x);
        if (*x->p == ',')
            x->p++, skip_ws(x);
        else if (*x->p != ')')
            return x->err = "a malformed expression", false;
    }
    if (*x->p != ')')
        return x->err = "a malformed expression", false;
    x->p++;
    return sym || lit || apply(x, fn, fl, v, n, out);
}

static bool unary(SymParse *x, int depth, int64_t *out);

/* A number, a symbol (s0), a call (FloorDiv(s0, 2), Symbol('s0', ...)) or a
 * parenthesised expression. */
static bool primary(SymParse *x, int depth, int64_t *out)
{
    skip_ws(x);
    if (*x->p == '(') {
        x->p++;
        if (!expr(x, depth + 1, out))
            return false;
        skip_ws(x);
        if (*x->p != ')')
            return x->err = "a malformed expression", false;
        x->p++;
        return true;
    }
    if (isdigit((unsigned char)*x->p)) {
        char *e;
        *out = strtoll(x->p, &e, 10);
        x->p = e;
        return true;
    }
    const char *id = x->p;
    while (isalnum((unsigned char)*x->p) || *x->p == '_')
        x->p++;
    size_t len = (size_t)(x->p - id);
    if (!len)
        return x->err = "a malformed expression", false;
    if (*x->p == '(') {
        x->p++;
        return call(x, id, len, depth, out);
    }
    return symbol(x, id, len, out);
}

/* primary ['**' unary] */
static bool power(SymParse *x, int depth, int64_t *out)
{
    if (!primary(x, depth, out))
        return false;
    skip_ws(x);
    if (strncmp(x->p, "**", 2))
        return true;
    x->p += 2;
    int64_t v[2] = {*out, 0};
    return unary(x, depth + 1, &v[1]) && apply(x, "Pow", 3, v, 2, out);
}

/* ['-'] power */
static bool unary(SymParse *x, int depth, int64_t *out)
{
    skip_ws(x);
    if (depth > SYM_MAX_DEPTH)
        return x->err = "an expression nested too deeply", false;
    if (*x->p != '-')
        return power(x, depth, out);
    x->p++;
    if (!unary(x, depth + 1, out))
        return false;
    if (*out == INT64_MIN)
        return x->err = "an integer overflow", false;
    *out = -*out;
    return true;
}

/* unary (('*' | '//' | '/' | '%') unary)*: '/' only where it divides exactly */
static bool term(SymParse *x, int depth, int64_t *out)
{
    if (!unary(x, depth, out))
        return false;
    for (;;) {
        skip_ws(x);
        int op = !strncmp(x->p, "//", 2) ? 'f' : *x->p == '*' && x->p[1] != '*' ? '*'
                 : *x->p == '/' ? '/' : *x->p == '%' ? '%' : 0;
        if (!op)
            return true;
        x->p += op == 'f' ? 2 : 1;
        int64_t v[2] = {*out, 0};
        if (!unary(x, depth + 1, &v[1]))
            return false;
        if (op == '/' && (!v[1] || v[0] % v[1]))
            return x->err = "a division that is not exact", false;
        if (!apply(x, op == '*' ? "Mul" : op == '%' ? "Mod" : "FloorDiv",
                   op == '*' ? 3 : op == '%' ? 3 : 8, v, 2, out))
            return false;
    }
}

/* term (('+' | '-') term)*: str(expr) as older torch writes it ("2*s0 - 1"), or srepr. */
static bool expr(SymParse *x, int depth, int64_t *out)
{
    if (!term(x, depth, out))
        return false;
    for (;;) {
        skip_ws(x);
        char op = *x->p;
        if (op != '+' && op != '-')
            return true;
        x->p++;
        int64_t r;
        if (!term(x, depth + 1, &r))
            return false;
        if (op == '+' ? __builtin_add_overflow(*out, r, out)
                      : __builtin_sub_overflow(*out, r, out))
            return x->err = "an integer overflow", false;
        x->bare = NULL;
    }
}

/* Whether e is one symbol: Symbol('s0', ...) or s0, with no other term. */
static bool one_symbol(const char *e)
{
    while (isspace((unsigned char)*e))
        e++;
    if (!strncmp(e, "Symbol(", 7))
        return strchr(e, ')') && !strchr(strchr(e, ')') + 1, '(') &&
               strspn(strchr(e, ')') + 1, " ") == strlen(strchr(e, ')') + 1);
    size_t n = strspn(e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    return n && !isdigit((unsigned char)*e) && strspn(e + n, " ") == strlen(e + n);
}

bool fe_pt2_sym_eval(const FePt2Syms *sy, const char *e, int64_t *out, const char **bare,
                     const char **why)
{
    SymParse x = {e, sy, NULL, NULL};
    bool ok = expr(&x, 0, out);
    if (!one_symbol(e))
        x.bare = NULL;
    skip_ws(&x);
    if (ok && *x.p) {
        ok = false;
        x.err = "a malformed expression";
    }
    if (bare)
        *bare = ok ? x.bare : NULL;
    if (why)
        *why = x.err;
    return ok;
}

/* The --dim bound of symbol nm (NULL: none), or a size bucket's cap. */
static const FeDimBound *dim_bound(const FeOptions *opt, const char *nm, bool cap)
{
    int n = cap ? opt->nsym_caps : opt->ndim_bounds;
    const FeDimBound *b = cap ? opt->sym_caps : opt->dim_bounds;
    for (int i = 0; i < n; i++)
        if (!strcmp(b[i].param, nm))
            return &b[i];
    return NULL;
}

/* The program's graph. */
static json_t *graph_of(json_t *doc)
{
    return fe_pt2_obj(fe_pt2_obj(doc, "graph_module"), "graph");
}

/* Graph input i: its name into *nm and its sizes (tensor_values), NULL when it is not
 * a tensor. */
static json_t *input_at(json_t *doc, size_t i, const char **nm)
{
    json_t *g = graph_of(doc);
    *nm = fe_pt2_str(fe_pt2_obj(json_array_get(fe_pt2_arr(g, "inputs"), i), "as_tensor"),
                     "name");
    return *nm ? fe_pt2_arr(fe_pt2_obj(fe_pt2_obj(g, "tensor_values"), *nm), "sizes") : NULL;
}

/* Where symbol k is an input's size: " (axis A of input 'NAME')" into buf, or "". */
static void where(json_t *doc, const char *k, char *buf, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "Symbol('%s'", k);
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(fe_pt2_arr(graph_of(doc), "inputs")) && !buf[0];
         i++) {
        const char *nm;
        json_t *sz = input_at(doc, i, &nm);
        for (size_t a = 0; a < json_array_size(sz) && !buf[0]; a++) {
            const char *e = fe_pt2_str(fe_pt2_obj(json_array_get(sz, a), "as_expr"),
                                       "expr_str");
            if (e && (strstr(e, pat) || !strcmp(e, k)))
                snprintf(buf, len, " (axis %zu of input '%.100s')", a, nm);
        }
    }
}

/* The sizes of user input nm (the graph's tensor_values), or NULL. */
static json_t *input_sizes(json_t *doc, const char *nm)
{
    for (size_t i = 0; i < json_array_size(fe_pt2_arr(graph_of(doc), "inputs")); i++) {
        const char *n;
        json_t *sz = input_at(doc, i, &n);
        if (n && !strcmp(n, nm))
            return sz;
    }
    return NULL;
}

/* The table entry of symbol nm (NUL-terminated), or NULL. */
static FePt2Sym *entry(FePt2Syms *sy, const char *nm)
{
    return (FePt2Sym *)find(sy, nm, strlen(nm));
}

/* --input-shape NAME=D0xD1.. on a .pt2 input: a symbol (or m times one) along an axis
 * takes the given size, or range MIN..MAX (divided by m); a static axis must match.
 * False (reported) otherwise; --bind and sequences are refused. */
static bool apply_spec(FePt2 *p, json_t *doc, const FeInputSpec *sp)
{
    json_t *sz = input_sizes(doc, sp->name);
    if (!sz || sp->value || sp->seq || sp->rank != (int)json_array_size(sz)) {
        ir_diag_error(p->diag, "%s: input '%s': %s", p->json_entry, sp->name,
                      !sz ? "no user input of that name"
                      : sp->value || sp->seq ? "--bind and --input-seq are not supported for "
                                               "a .pt2 program"
                                             : "--input-shape gives another rank");
        return false;
    }
    for (int a = 0; a < sp->rank; a++) {
        json_t *x = NULL;
        const char *tag = fe_pt2_tag(json_array_get(sz, (size_t)a), &x), *nm = NULL;
        const char *e = tag && !strcmp(tag, "as_expr") ? fe_pt2_str(x, "expr_str") : NULL;
        int64_t mul = 1, v;
        if (!e) {
            if (fe_pt2_symint(json_array_get(sz, (size_t)a), NULL, &v) && v == sp->dims[a] &&
                sp->min[a] == v)
                continue;
            ir_diag_error(p->diag, "%s: input '%s' axis %d is static: --input-shape must give "
                          "its size", p->json_entry, sp->name, a);
            return false;
        }
        if ((!fe_pt2_sym_eval(&p->syms, e, &v, &nm, NULL) || !nm) &&
            !fe_pt2_sym_multiple(&p->syms, e, &mul, &nm)) {
            ir_diag_error(p->diag, "%s: input '%s' axis %d: --input-shape cannot set the size "
                          "%.100s", p->json_entry, sp->name, a, e);
            return false;
        }
        FePt2Sym *s = entry(&p->syms, nm);
        if (sp->dims[a] % mul) {
            ir_diag_error(p->diag, "%s: input '%s' axis %d is %lld * %s: --input-shape gives "
                          "%lld", p->json_entry, sp->name, a, (long long)mul, nm,
                          (long long)sp->dims[a]);
            return false;
        }
        s->min = (sp->min[a] + mul - 1) / mul;
        s->max = sp->dims[a] / mul;
    }
    return true;
}

bool fe_pt2_syms_read(FePt2 *p, json_t *doc)
{
    json_t *rc = fe_pt2_obj(doc, "range_constraints");
    const char *k;
    json_t *r;
    FePt2Syms *sy = &p->syms;
    size_t n = rc ? json_object_size(rc) : 0;
    sy->v = n ? ir_alloc(p->g, n * sizeof *sy->v) : NULL;
    json_object_foreach(rc, k, r)
    {
        json_t *lo = json_object_get(r, "min_val"), *hi = json_object_get(r, "max_val");
        if (k[0] != 's' || strlen(k) >= sizeof sy->v[0].name)
            continue;                      /* unbacked (data-dependent) symbols */
        FePt2Sym *s = &sy->v[sy->n++];
        snprintf(s->name, sizeof s->name, "%s", k);
        s->min = json_is_integer(lo) && json_integer_value(lo) > 0 ? json_integer_value(lo) : 1;
        s->max = json_is_integer(hi) ? json_integer_value(hi) : SYM_MAX_BOUND + 1;
        const FeDimBound *d = dim_bound(&p->opt, k, false);
        if (d) {
            s->min = d->min > s->min ? d->min : s->min;
            s->max = d->max;
        }
    }
    for (int i = 0; i < p->opt.ndim_bounds; i++)   /* a Dim's own name is not recorded */
        if (!entry(sy, p->opt.dim_bounds[i].param)) {
            char at[160] = "";
            if (sy->n)
                where(doc, sy->v[0].name, at, sizeof at);
            ir_diag_warn(p->diag, "%s: --dim %s: the program has no dynamic dimension of "
                         "that name; torch.export names them by symbol (%s%s%s)",
                         p->json_entry, p->opt.dim_bounds[i].param,
                         sy->n ? sy->v[0].name : "it has none", at, sy->n > 1 ? ", ..." : "");
        }
    for (int i = 0; i < p->opt.nspecs; i++)
        if (!apply_spec(p, doc, &p->opt.specs[i]))
            return false;
    for (int i = 0; i < sy->n; i++) {
        FePt2Sym *s = &sy->v[i];
        const FeDimBound *c = dim_bound(&p->opt, s->name, true);
        if (c && c->max < s->max && c->max >= s->min)
            s->max = c->max, s->step = c->step;
        if (s->max > SYM_MAX_BOUND || s->max < s->min) {
            char at[160];
            where(doc, s->name, at, sizeof at);
            ir_diag_error(p->diag, "%s: unsupported: dynamic dimension '%s'%s %s (give one "
                          "with --dim %s=MAX or --dim %s=MIN..MAX, or fix its input's shape "
                          "with --input-shape)", p->json_entry, s->name, at,
                          s->max < s->min ? "has bounds that exclude every size"
                                          : "has no bound",
                          s->name, s->name);
            return false;
        }
    }
    return true;
}

bool fe_pt2_sym_multiple(const FePt2Syms *sy, const char *e, int64_t *mul, const char **sym)
{
    static const char pfx[] = "Mul(Integer(";
    char *end;
    if (isdigit((unsigned char)*e)) {        /* str() form: 4*s0 */
        long long m = strtoll(e, &end, 10);
        const FePt2Sym *s = *end == '*' && end[1] != '*' && one_symbol(end + 1)
                                ? find(sy, end + 1, strlen(end + 1))
                                : NULL;
        if (m < 2 || !s)
            return false;
        *mul = m, *sym = s->name;
        return true;
    }
    if (strncmp(e, pfx, sizeof pfx - 1))
        return false;
    long long m = strtoll(e + sizeof pfx - 1, &end, 10);
    if (m < 2 || strncmp(end, "), ", 3))
        return false;
    const char *arg = end + 3;              /* Symbol(...) then Mul's ')' */
    size_t n = strlen(arg);
    if (n < 2 || arg[n - 1] != ')')
        return false;
    char *inner = strndup(arg, n - 1);
    int64_t v;
    const char *bare = NULL;
    bool ok = inner && fe_pt2_sym_eval(sy, inner, &v, &bare, NULL) && bare;
    free(inner);
    if (ok)
        *mul = m, *sym = bare;
    return ok;
}
