/* ir_parse.c: reads the text form written by ir_print.c (for golden tests).
 *
 * Constants without data get zeros. Core-op lines are rebuilt with ir_add_node and
 * the declared output types must match what inference gives. '#' starts a comment
 * (to the end of the line); one right after a node on the same line is its origin:
 * # 'name' (OpType). Errors are "file: line N: message" in the diag.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

#define MAX_ATTRS 64
#define MAX_ARGS 256
#define MAX_TEXT 1024
#define MAX_CONST_BYTES ((size_t)1 << 30)

typedef enum { T_EOF, T_IDENT, T_NUM, T_STR, T_QSTR, T_VAL, T_COMMENT, T_PUNCT } TokKind;

typedef struct {
    TokKind kind;
    char text[MAX_TEXT];                   /* identifier, number, unescaped string/name */
    char punct;
    int line;
} Tok;

typedef struct {
    const char *s;
    size_t pos;
    int line;
    Tok tok;                               /* current token */
    IrGraph *g;
    IrDiag *diag;
    bool err;
} Parser;

/* Report an error at the current token's line (first error only). */
__attribute__((format(printf, 2, 3))) static void perr(Parser *p, const char *fmt, ...)
{
    if (p->err)
        return;
    p->err = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(p->diag, "line %d: %s", p->tok.line, msg);
}

/* Read a quoted string (opening quote q at p->pos) into out, unescaping. */
static void lex_quoted(Parser *p, char q, char *out)
{
    size_t k = 0;
    p->pos++;
    for (;;) {
        char c = p->s[p->pos];
        if (!c || c == '\n') {
            perr(p, "unterminated string");
            break;
        }
        p->pos++;
        if (c == q)
            break;
        if (c == '\\') {
            c = p->s[p->pos++];
            if (c == 'n')
                c = '\n';
            else if (c == 'x' && isxdigit((unsigned char)p->s[p->pos]) &&
                     isxdigit((unsigned char)p->s[p->pos + 1])) {
                char h[3] = {p->s[p->pos], p->s[p->pos + 1], 0};
                c = (char)strtol(h, NULL, 16);
                p->pos += 2;
            } else if (!c) {
                perr(p, "unterminated string");
                break;
            }
        }
        if (k + 1 < MAX_TEXT)
            out[k++] = c;
    }
    out[k] = 0;
}

/* Characters of identifiers and plain value names. */
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* Read a run of chars accepted by ok() into out. */
static void lex_run(Parser *p, char *out, bool num)
{
    size_t k = 0;
    for (;;) {
        char c = p->s[p->pos];
        bool take = ident_char(c) || (num && k > 0 && (c == '+' || c == '-') &&
                                      (out[k - 1] == 'e' || out[k - 1] == 'E'));
        if (!take && !(num && k == 0 && (c == '-' || c == '+')))
            break;
        if (k + 1 < MAX_TEXT)
            out[k++] = c;
        p->pos++;
    }
    out[k] = 0;
}

/* Advance to the next token. */
static void next(Parser *p)
{
    Tok *t = &p->tok;
    for (;;) {
        char c = p->s[p->pos];
        if (c == '\n')
            p->line++;
        if (!isspace((unsigned char)c))
            break;
        p->pos++;
    }
    t->line = p->line;
    t->text[0] = 0;
    char c = p->s[p->pos];
    if (!c) {
        t->kind = T_EOF;
    } else if (c == '#') {
        size_t k = 0;
        for (p->pos++; p->s[p->pos] && p->s[p->pos] != '\n'; p->pos++)
            if (k + 1 < MAX_TEXT)
                t->text[k++] = p->s[p->pos];
        t->text[k] = 0;
        t->kind = T_COMMENT;
    } else if (c == '"' || c == '\'') {
        t->kind = c == '"' ? T_STR : T_QSTR;
        lex_quoted(p, c, t->text);
    } else if (c == '%') {
        t->kind = T_VAL;
        p->pos++;
        if (p->s[p->pos] == '"')
            lex_quoted(p, '"', t->text);
        else
            lex_run(p, t->text, false);
    } else if (isdigit((unsigned char)c) || c == '-' || c == '+') {
        t->kind = T_NUM;
        lex_run(p, t->text, true);
    } else if (ident_char(c)) {
        t->kind = T_IDENT;
        lex_run(p, t->text, false);
    } else {
        t->kind = T_PUNCT;
        t->punct = c;
        p->pos++;
    }
}

static bool is_punct(Parser *p, char c) { return p->tok.kind == T_PUNCT && p->tok.punct == c; }

/* Consume punctuation c or report an error. */
static bool expect(Parser *p, char c)
{
    if (!is_punct(p, c)) {
        perr(p, "expected '%c'", c);
        return false;
    }
    next(p);
    return true;
}

/* Parse a 64-bit integer token. */
static bool parse_i64(Parser *p, int64_t *v)
{
    char *end;
    errno = 0;
    if (p->tok.kind != T_NUM || (*v = strtoll(p->tok.text, &end, 10), *end) || errno) {
        perr(p, "expected an integer, found '%s'", p->tok.text);
        return false;
    }
    next(p);
    return true;
}

/* dtype[d0,d1,...] */
static bool parse_type(Parser *p, IrType *t)
{
    memset(t, 0, sizeof *t);
    t->dtype = ir_dtype_from_name(p->tok.text);
    if (p->tok.kind != T_IDENT || (t->dtype == IR_DT_UNDEF && strcmp(p->tok.text, "undef"))) {
        perr(p, "expected a dtype, found '%s'", p->tok.text);
        return false;
    }
    next(p);
    if (!expect(p, '['))
        return false;
    while (!p->err && !is_punct(p, ']')) {
        if (t->rank == IR_MAX_RANK) {
            perr(p, "rank exceeds %d", IR_MAX_RANK);
            return false;
        }
        if (!parse_i64(p, &t->dims[t->rank]))
            return false;
        if (t->dims[t->rank++] < 0) {
            perr(p, "negative dimension");
            return false;
        }
        if (!is_punct(p, ']') && !expect(p, ','))
            return false;
    }
    if (ir_type_numel(t) < 0) {
        perr(p, "shape too large");
        return false;
    }
    return expect(p, ']');
}

/* True if a number token denotes a float (has '.', an exponent, inf or nan). */
static bool floaty(const Tok *t)
{
    return (t->kind == T_NUM && strpbrk(t->text, ".eEnNiI")) ||
           (t->kind == T_IDENT && (!strcmp(t->text, "inf") || !strcmp(t->text, "nan")));
}

/* Parse a float token (number, inf, nan). */
static bool parse_f64(Parser *p, double *v)
{
    char *end;
    if ((p->tok.kind != T_NUM && !floaty(&p->tok)) ||
        (*v = strtod(p->tok.text, &end), *end)) {
        perr(p, "expected a number, found '%s'", p->tok.text);
        return false;
    }
    next(p);
    return true;
}

/* Store the current number token as element i of data (dtype t). */
static bool parse_elem(Parser *p, IrDType t, void *data, size_t i)
{
    if (ir_dtype_is_float(t)) {
        double v;
        if (!parse_f64(p, &v))
            return false;
        ir_store_f(t, data, i, v);
        return true;
    }
    if (t == IR_DT_U64) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p->tok.text, &end, 10);
        if (p->tok.kind != T_NUM || *end || errno) {
            perr(p, "expected an integer, found '%s'", p->tok.text);
            return false;
        }
        ((uint64_t *)data)[i] = v;
        next(p);
        return true;
    }
    int64_t v;
    if (!parse_i64(p, &v))
        return false;
    ir_store_i(t, data, i, v);
    return true;
}

/* Look up %name (current token) as a value; '_' gives IR_NONE. */
static bool parse_use(Parser *p, ValId *v)
{
    if (p->tok.kind == T_IDENT && !strcmp(p->tok.text, "_")) {
        *v = IR_NONE;
        next(p);
        return true;
    }
    if (p->tok.kind != T_VAL) {
        perr(p, "expected a value (%%name), found '%s'", p->tok.text);
        return false;
    }
    *v = ir_find_value(p->g, p->tok.text);
    if (*v == IR_NONE) {
        perr(p, "unknown value %%%s", p->tok.text);
        return false;
    }
    next(p);
    return true;
}

/* A fresh name being defined (current token); false if taken. */
static bool parse_def(Parser *p, char *name)
{
    if (p->tok.kind != T_VAL) {
        perr(p, "expected a value name (%%name), found '%s'", p->tok.text);
        return false;
    }
    if (ir_find_value(p->g, p->tok.text) != IR_NONE) {
        perr(p, "value %%%s is defined twice", p->tok.text);
        return false;
    }
    strcpy(name, p->tok.text);
    next(p);
    return true;
}

/* input %x: T */
static void parse_input(Parser *p)
{
    char name[MAX_TEXT];
    IrType t;
    next(p);
    if (!parse_def(p, name) || !expect(p, ':') || !parse_type(p, &t))
        return;
    ir_add_input(p->g, name, &t);
}

/* const %w: T [= [data]] */
static void parse_const(Parser *p)
{
    char name[MAX_TEXT];
    IrType t;
    next(p);
    if (!parse_def(p, name) || !expect(p, ':') || !parse_type(p, &t))
        return;
    size_t bytes = ir_type_bytes(&t);
    if (bytes > MAX_CONST_BYTES || ir_dtype_size(t.dtype) == 0) {
        perr(p, "constant %%%s is too large or has no dtype", name);
        return;
    }
    ValId v = ir_add_const(p->g, name, &t, NULL);
    if (!is_punct(p, '='))
        return;
    next(p);
    if (!expect(p, '['))
        return;
    void *data = (void *)p->g->vals[v].data;
    int64_t ne = ir_type_numel(&t), k = 0;
    for (; !p->err && !is_punct(p, ']'); k++) {
        if (k >= ne) {
            perr(p, "constant %%%s has more than %lld elements", name, (long long)ne);
            return;
        }
        if (!parse_elem(p, t.dtype, data, (size_t)k) || (!is_punct(p, ']') && !expect(p, ',')))
            return;
    }
    if (!p->err && k != ne)
        perr(p, "constant %%%s has %lld elements, expected %lld", name, (long long)k,
             (long long)ne);
    expect(p, ']');
}

/* output %y */
static void parse_output(Parser *p)
{
    ValId v;
    next(p);
    if (parse_use(p, &v)) {
        if (v == IR_NONE)
            perr(p, "graph output cannot be omitted");
        else
            ir_add_output(p->g, v);
    }
}

/* [elements] after the '[': ints, floats (if any element looks like a float) or strings. */
static bool parse_list(Parser *p, IrAttr *a)
{
    size_t n = 0, cap = 16;
    int64_t *iv = malloc(cap * sizeof *iv);
    double *fv = malloc(cap * sizeof *fv);
    const char **sv = malloc(cap * sizeof *sv);
    bool any_float = false, strs = p->tok.kind == T_STR, ok = iv && fv && sv;
    while (ok && !p->err && !is_punct(p, ']')) {
        if (n == cap) {
            cap *= 2;
            int64_t *i2 = realloc(iv, cap * sizeof *iv);
            iv = i2 ? i2 : iv;
            double *f2 = realloc(fv, cap * sizeof *fv);
            fv = f2 ? f2 : fv;
            const char **s2 = realloc((void *)sv, cap * sizeof *sv);
            sv = s2 ? s2 : sv;
            if (!i2 || !f2 || !s2)
                break;
        }
        if (strs) {
            if (p->tok.kind != T_STR) {
                perr(p, "mixed strings and numbers in a list");
                break;
            }
            sv[n] = ir_strdup(p->g, p->tok.text);
            next(p);
        } else {
            any_float |= floaty(&p->tok);
            iv[n] = floaty(&p->tok) ? 0 : strtoll(p->tok.text, NULL, 10);
            if (!parse_f64(p, &fv[n]))
                break;
        }
        n++;
        if (!is_punct(p, ']') && !expect(p, ','))
            break;
    }
    if (n == cap && !is_punct(p, ']'))
        perr(p, "out of memory");
    bool good = !p->err && expect(p, ']');
    if (good && strs) {
        a->kind = IR_ATTR_STRINGS;
        a->n = (uint32_t)n;
        a->strings = ir_alloc(p->g, n * sizeof(char *));
        memcpy((void *)a->strings, sv, n * sizeof(char *));
    } else if (good) {
        *a = any_float ? ir_attr_floats(p->g, a->name, fv, (int)n)
                       : ir_attr_ints(p->g, a->name, iv, (int)n);
    }
    free(iv);
    free(fv);
    free((void *)sv);
    return good;
}

/* Named integer of a core op: fn by name, to by dtype name. */
static bool parse_named_int(Parser *p, IrOp op, IrAttr *a)
{
    int v = -1;
    IrFnKind fk = ir_op_info[op].fn;
    if (!strcmp(a->name, "fn"))
        v = fk == IR_FNK_UN ? ir_unfn_from_name(p->tok.text)
          : fk == IR_FNK_BIN ? ir_binfn_from_name(p->tok.text)
          : fk == IR_FNK_RED ? ir_redfn_from_name(p->tok.text) : -1;
    else if (!strcmp(a->name, "to") && strcmp(p->tok.text, "undef"))
        v = (int)ir_dtype_from_name(p->tok.text);
    if (v <= 0 && !(v == 0 && !strcmp(a->name, "fn"))) {
        perr(p, "unknown value '%s' for attribute '%s'", p->tok.text, a->name);
        return false;
    }
    *a = ir_attr_int(a->name, v);
    next(p);
    return true;
}

/* One attribute value. */
static bool parse_attr_value(Parser *p, IrOp op, IrAttr *a)
{
    Tok *t = &p->tok;
    if (is_punct(p, '[')) {
        next(p);
        return parse_list(p, a);
    }
    if (t->kind == T_IDENT && (!strcmp(t->text, "f") || !strcmp(t->text, "s"))) {
        bool fl = t->text[0] == 'f';
        next(p);
        if (!expect(p, '[') || !expect(p, ']'))
            return false;
        *a = fl ? ir_attr_floats(p->g, a->name, NULL, 0)
                : (IrAttr){.name = a->name, .kind = IR_ATTR_STRINGS, .tensor = IR_NONE};
        return true;
    }
    if (floaty(t)) {
        double v;
        *a = ir_attr_float(a->name, 0);
        return parse_f64(p, &v) && (a->f = v, true);
    }
    if (t->kind == T_NUM) {
        int64_t v;
        *a = ir_attr_int(a->name, 0);
        return parse_i64(p, &v) && (a->i = v, true);
    }
    if (t->kind == T_STR) {
        *a = ir_attr_str(p->g, a->name, t->text);
        next(p);
        return true;
    }
    if (t->kind == T_VAL) {
        ValId v;
        if (!parse_use(p, &v))
            return false;
        *a = (IrAttr){.name = a->name, .kind = IR_ATTR_TENSOR, .tensor = v};
        return true;
    }
    if (t->kind == T_IDENT && op != IR_OP_FOREIGN)
        return parse_named_int(p, op, a);
    perr(p, "cannot read attribute '%s' (subgraphs are not supported)", a->name);
    return false;
}

/* {name=value, ...}; *n receives the count. */
static bool parse_attrs(Parser *p, IrOp op, IrAttr *attrs, int *n)
{
    *n = 0;
    if (!is_punct(p, '{'))
        return true;
    next(p);
    while (!p->err && !is_punct(p, '}')) {
        if (*n == MAX_ATTRS) {
            perr(p, "too many attributes");
            return false;
        }
        if (p->tok.kind != T_IDENT && p->tok.kind != T_STR) {
            perr(p, "expected an attribute name, found '%s'", p->tok.text);
            return false;
        }
        IrAttr *a = &attrs[(*n)++];
        a->name = ir_strdup(p->g, p->tok.text);
        next(p);
        if (!expect(p, '=') || !parse_attr_value(p, op, a))
            return false;
        if (!is_punct(p, '}') && !expect(p, ','))
            return false;
    }
    return expect(p, '}');
}

/* Origin from a comment " 'name' (OpType)"; false if the comment has another form. */
static bool parse_origin(IrGraph *g, const char *c, IrOrigin *o)
{
    char name[MAX_TEXT], op[MAX_TEXT];
    size_t k = 0;
    while (*c == ' ')
        c++;
    if (*c++ != '\'')
        return false;
    for (; *c && *c != '\''; c++) {
        char ch = *c;
        if (ch == '\\' && c[1]) {
            c++;
            ch = *c == 'n' ? '\n' : *c;
            if (*c == 'x' && isxdigit((unsigned char)c[1]) && isxdigit((unsigned char)c[2])) {
                char h[3] = {c[1], c[2], 0};
                ch = (char)strtol(h, NULL, 16);
                c += 2;
            }
        }
        name[k++] = ch;
    }
    name[k] = 0;
    if (*c++ != '\'')
        return false;
    while (*c == ' ')
        c++;
    if (*c++ != '(')
        return false;
    for (k = 0; *c && *c != ')';)
        op[k++] = *c++;
    op[k] = 0;
    if (*c != ')')
        return false;
    o->name = ir_strdup(g, name);
    o->op_type = ir_strdup(g, op);
    return true;
}

/* Declared outputs of a node line: "()" or "%a: T, %b: T". */
static int parse_outs(Parser *p, char (*names)[MAX_TEXT], IrType *types, int max)
{
    int n = 0;
    if (is_punct(p, '(')) {
        next(p);
        expect(p, ')');
        return 0;
    }
    for (;;) {
        if (n == max) {
            perr(p, "too many outputs");
            return -1;
        }
        if (!parse_def(p, names[n]) || !expect(p, ':') || !parse_type(p, &types[n]))
            return -1;
        for (int i = 0; i < n; i++)
            if (!strcmp(names[i], names[n])) {
                perr(p, "value %%%s is defined twice", names[n]);
                return -1;
            }
        n++;
        if (!is_punct(p, ','))
            return n;
        next(p);
    }
}

/* The op after '=': a core op name or foreign "domain::op"@opset. */
static bool parse_op(Parser *p, IrOp *op, IrForeign *f)
{
    if (p->tok.kind != T_IDENT) {
        perr(p, "expected an op name, found '%s'", p->tok.text);
        return false;
    }
    *op = ir_op_from_name(p->tok.text);
    if (*op == IR_OP_COUNT) {
        perr(p, "unknown op '%s'", p->tok.text);
        return false;
    }
    next(p);
    if (*op != IR_OP_FOREIGN)
        return true;
    const char *sep = p->tok.kind == T_STR ? strstr(p->tok.text, "::") : NULL;
    if (!sep) {
        perr(p, "expected \"domain::OpType\" after foreign");
        return false;
    }
    f->domain = ir_strdup(p->g, p->tok.text);
    ((char *)f->domain)[sep - p->tok.text] = 0;
    f->op_type = ir_strdup(p->g, sep + 2);
    next(p);
    return expect(p, '@') && parse_i64(p, &f->opset);
}

/* Arguments "(%a, _, %b)". */
static int parse_args(Parser *p, ValId *in)
{
    int n = 0;
    if (!expect(p, '('))
        return -1;
    while (!p->err && !is_punct(p, ')')) {
        if (n == MAX_ARGS) {
            perr(p, "too many inputs");
            return -1;
        }
        if (!parse_use(p, &in[n++]))
            return -1;
        if (!is_punct(p, ')') && !expect(p, ','))
            return -1;
    }
    return expect(p, ')') ? n : -1;
}

/* Build a core node from a parsed line and check the declared output types. */
static void build_core(Parser *p, IrOp op, const ValId *in, int nin, const IrAttr *attrs,
                       int na, const IrOrigin *o, char (*names)[MAX_TEXT], const IrType *types,
                       int nout)
{
    const IrOpInfo *info = &ir_op_info[op];
    if (nin < info->min_in || (info->max_in >= 0 && nin > info->max_in) || nout != info->nout) {
        perr(p, "%s takes %d..%d inputs and %d outputs", info->name, info->min_in, info->max_in,
             info->nout);
        return;
    }
    for (int i = 0; i < nin; i++)
        if (in[i] == IR_NONE) {
            perr(p, "%s cannot have an omitted input", info->name);
            return;
        }
    NodeId id = ir_add_node(p->g, op, in, nin, attrs, na, o);
    if (ir_failed(p->g)) {
        p->err = true;
        return;
    }
    const IrNode *n = ir_node(p->g, id);
    for (int i = 0; i < nout; i++) {
        const IrType *got = ir_vtype(p->g, n->out[i]);
        if (!ir_type_eq(got, &types[i])) {
            char b[256];
            size_t k = (size_t)snprintf(b, sizeof b, "%s[", ir_dtype_name(got->dtype));
            for (int d = 0; d < got->rank && k < sizeof b; d++)
                k += (size_t)snprintf(b + k, sizeof b - k, "%s%lld", d ? "," : "",
                                      (long long)got->dims[d]);
            perr(p, "%%%s is declared with another type than inference gives (%s])", names[i], b);
            return;
        }
        ir_set_name(p->g, n->out[i], names[i]);
    }
}

/* %outs = op(args) {attrs} # origin */
static void parse_node(Parser *p)
{
    char names[16][MAX_TEXT];
    IrType types[16];
    ValId in[MAX_ARGS];
    IrAttr attrs[MAX_ATTRS];
    IrForeign f = {"", "", 0};
    IrOrigin o = {"", "", NULL};
    IrOp op;
    int line = p->tok.line, na;
    int nout = parse_outs(p, names, types, 16);
    if (nout < 0 || !expect(p, '=') || !parse_op(p, &op, &f))
        return;
    int nin = parse_args(p, in);
    if (nin < 0 || !parse_attrs(p, op, attrs, &na))
        return;
    if (p->tok.kind == T_COMMENT && p->tok.line == line) {
        parse_origin(p->g, p->tok.text, &o);
        next(p);
    }
    if (op != IR_OP_FOREIGN) {
        build_core(p, op, in, nin, attrs, na, &o, names, types, nout);
        return;
    }
    NodeId id = ir_add_foreign(p->g, &f, in, nin, nout, attrs, na, &o);
    for (int i = 0; i < nout; i++) {
        ValId v = ir_node(p->g, id)->out[i];
        p->g->vals[v].type = types[i];
        ir_set_name(p->g, v, names[i]);
    }
}

/* Statements up to the closing '}'. */
static void parse_body(Parser *p)
{
    while (!p->err) {
        Tok *t = &p->tok;
        if (t->kind == T_COMMENT) {
            next(p);
        } else if (is_punct(p, '}')) {
            next(p);
            return;
        } else if (t->kind == T_IDENT && !strcmp(t->text, "input")) {
            parse_input(p);
        } else if (t->kind == T_IDENT && !strcmp(t->text, "const")) {
            parse_const(p);
        } else if (t->kind == T_IDENT && !strcmp(t->text, "output")) {
            parse_output(p);
        } else if (t->kind == T_VAL || is_punct(p, '(')) {
            parse_node(p);
        } else if (t->kind == T_EOF) {
            perr(p, "missing '}' at the end of the graph");
        } else {
            perr(p, "unexpected '%s'", t->kind == T_PUNCT ? (char[2]){t->punct, 0} : t->text);
        }
    }
}

IrGraph *ir_parse(const char *text, IrDiag *diag)
{
    Parser p = {.s = text, .line = 1, .diag = diag};
    p.g = ir_graph_new(diag);
    if (!p.g) {
        ir_diag_error(diag, "out of memory");
        return NULL;
    }
    next(&p);
    while (p.tok.kind == T_COMMENT)
        next(&p);
    if (p.tok.kind != T_IDENT || strcmp(p.tok.text, "graph") != 0) {
        perr(&p, "expected 'graph'");
    } else {
        next(&p);
        if (p.tok.kind == T_STR) {
            p.g->model_path = ir_strdup(p.g, p.tok.text);
            next(&p);
        }
        if (expect(&p, '{'))
            parse_body(&p);
        while (!p.err && p.tok.kind == T_COMMENT)
            next(&p);
        if (!p.err && p.tok.kind != T_EOF)
            perr(&p, "text after the end of the graph");
    }
    if (p.err) {
        ir_graph_free(p.g);
        return NULL;
    }
    return p.g;
}
