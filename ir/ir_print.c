/* ir_print.c: the text form of a graph (one line per value or node, deterministic).
 *
 *   graph "name" {
 *     input %x: f32[1,3,224,224]
 *     const %w: f32[64,3,3,3]
 *     const %s: i64[2] = [1, 2]                  (data only for <= 8 elements)
 *     %y: f32[1,64,222,222] = conv(%x, %w) {strides=[1,1], group=1} # 'Conv_0' (Conv)
 *     %z: f32[4] = foreign "::Relu"@13(%y) {}
 *     output %y
 *   }
 *
 * Names that are not plain identifiers are quoted (%"a/b:0"); an omitted optional
 * input prints as _. Floats print with %.9g (always with a '.', 'e', or "inf"/"nan"
 * so they read back as floats); empty float/string lists print as f[] / s[].
 * ir_parse.c reads exactly this format.
 */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

#define PRINT_DATA_MAX 8

/* True if s can be printed without quotes. */
static bool plain_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.')
            return false;
    return true;
}

/* s in double quotes with C-style escapes. */
static void print_quoted(FILE *f, const char *s, char q)
{
    fputc(q, f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == (unsigned char)q || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
    fputc(q, f);
}

/* %name, quoted when needed. */
static void print_val(FILE *f, IrGraph *g, ValId v)
{
    if (v == IR_NONE) {
        fputc('_', f);
        return;
    }
    const char *s = g->vals[v].name;
    fputc('%', f);
    if (plain_name(s))
        fputs(s, f);
    else
        print_quoted(f, s, '"');
}

/* f32[1,2,3] */
static void print_type(FILE *f, const IrType *t)
{
    fprintf(f, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank; i++)
        fprintf(f, "%s%" PRId64, i ? "," : "", t->dims[i]);
    fputc(']', f);
}

/* A float that always reads back as a float. */
static void print_float(FILE *f, double v, const char *fmt)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    fputs(buf, f);
    if (!strpbrk(buf, ".eEni"))
        fputs(".0", f);
}

/* Element i of data of dtype t. */
static void print_elem(FILE *f, IrDType t, const void *data, size_t i)
{
    if (t == IR_DT_F64)
        print_float(f, ir_load_f(t, data, i), "%.17g");
    else if (ir_dtype_is_float(t))
        print_float(f, ir_load_f(t, data, i), "%.9g");
    else if (t == IR_DT_U64)
        fprintf(f, "%" PRIu64, ((const uint64_t *)data)[i]);
    else
        fprintf(f, "%" PRId64, ir_load_i(t, data, i));
}

/* Value of an attribute; fn and to of core ops print by name. */
static void print_attr_value(FILE *f, IrGraph *g, const IrNode *n, const IrAttr *a)
{
    switch (a->kind) {
    case IR_ATTR_INT: {
        const char *s = ir_op_fn_name(n->op, (int)a->i);
        if (s && strcmp(a->name, "fn") == 0) {
            if (strcmp(s, "?") != 0) {
                fputs(s, f);
                return;
            }
        } else if ((ir_op_info[n->op].flags & IR_OPF_TO_DTYPE) &&
                   strcmp(a->name, "to") == 0 &&
                   ir_dtype_size((IrDType)a->i)) {
            fputs(ir_dtype_name((IrDType)a->i), f);
            return;
        }
        fprintf(f, "%" PRId64, a->i);
        return;
    }
    case IR_ATTR_FLOAT: print_float(f, a->f, "%.9g"); return;
    case IR_ATTR_STRING: print_quoted(f, a->s, '"'); return;
    case IR_ATTR_INTS:
        fputc('[', f);
        for (uint32_t i = 0; i < a->n; i++)
            fprintf(f, "%s%" PRId64, i ? "," : "", a->ints[i]);
        fputc(']', f);
        return;
    case IR_ATTR_FLOATS:
        fputs(a->n ? "[" : "f[", f);
        for (uint32_t i = 0; i < a->n; i++) {
            fputs(i ? "," : "", f);
            print_float(f, a->floats[i], "%.9g");
        }
        fputc(']', f);
        return;
    case IR_ATTR_STRINGS:
        fputs(a->n ? "[" : "s[", f);
        for (uint32_t i = 0; i < a->n; i++) {
            fputs(i ? "," : "", f);
            print_quoted(f, a->strings[i], '"');
        }
        fputc(']', f);
        return;
    case IR_ATTR_TENSOR: print_val(f, g, a->tensor); return;
    case IR_ATTR_GRAPH:
        fprintf(f, "<graph of %u nodes>", a->graph ? a->graph->nnodes : 0);
        return;
    }
}

/* One node line. */
static void print_node(FILE *f, IrGraph *g, const IrNode *n)
{
    fputs("  ", f);
    if (n->nout == 0)
        fputs("()", f);
    for (int i = 0; i < n->nout; i++) {
        fputs(i ? ", " : "", f);
        print_val(f, g, n->out[i]);
        fputs(": ", f);
        print_type(f, &g->vals[n->out[i]].type);
    }
    if (n->op == IR_OP_FOREIGN) {
        fputs(" = foreign ", f);
        char buf[512];
        snprintf(buf, sizeof buf, "%s::%s", n->foreign.domain ? n->foreign.domain : "",
                 n->foreign.op_type ? n->foreign.op_type : "");
        print_quoted(f, buf, '"');
        fprintf(f, "@%" PRId64 "(", n->foreign.opset);
    } else {
        fprintf(f, " = %s(", ir_op_info[n->op].name);
    }
    for (int i = 0; i < n->nin; i++) {
        fputs(i ? ", " : "", f);
        print_val(f, g, n->in[i]);
    }
    fputc(')', f);
    if (n->nattrs)
        fputs(" {", f);
    for (int i = 0; i < n->nattrs; i++) {
        fputs(i ? ", " : "", f);
        if (plain_name(n->attrs[i].name))
            fputs(n->attrs[i].name, f);
        else
            print_quoted(f, n->attrs[i].name, '"');
        fputc('=', f);
        print_attr_value(f, g, n, &n->attrs[i]);
    }
    if (n->nattrs)
        fputc('}', f);
    if ((n->origin.name && n->origin.name[0]) || (n->origin.op_type && n->origin.op_type[0])) {
        fputs(" # ", f);
        print_quoted(f, n->origin.name ? n->origin.name : "", '\'');
        fprintf(f, " (%s)", n->origin.op_type ? n->origin.op_type : "");
    }
    fputc('\n', f);
}

/* const line; data printed for small constants. */
static void print_const(FILE *f, IrGraph *g, ValId v)
{
    const IrValue *val = &g->vals[v];
    fputs("  const ", f);
    print_val(f, g, v);
    fputs(": ", f);
    print_type(f, &val->type);
    int64_t ne = ir_type_numel(&val->type);
    if (val->data && ne >= 0 && ne <= PRINT_DATA_MAX && ir_dtype_size(val->type.dtype)) {
        fputs(" = [", f);
        for (int64_t i = 0; i < ne; i++) {
            fputs(i ? ", " : "", f);
            print_elem(f, val->type.dtype, val->data, (size_t)i);
        }
        fputc(']', f);
    }
    fputc('\n', f);
}

void ir_print(IrGraph *g, FILE *f)
{
    fputs("graph ", f);
    print_quoted(f, g->model_path ? g->model_path : "main", '"');
    fputs(" {\n", f);
    for (uint32_t i = 0; i < g->ninputs; i++) {
        fputs("  input ", f);
        print_val(f, g, g->inputs[i]);
        fputs(": ", f);
        print_type(f, &g->vals[g->inputs[i]].type);
        fputc('\n', f);
    }
    uint32_t *uses = ir_use_counts(g);
    for (ValId v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == IR_VAL_CONST && uses[v] > 0)
            print_const(f, g, v);
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead)
            print_node(f, g, &g->nodes[i]);
    for (uint32_t i = 0; i < g->noutputs; i++) {
        const IrDynDim *d = ir_dyn_find(g, g->outputs[i]);
        fputs("  output ", f);
        print_val(f, g, g->outputs[i]);
        if (d && d->axis == IR_DYN_SHAPE) {  /* comments: the parser reads them as such */
            fputs("  # runtime shape: ", f);
            print_val(f, g, d->count);
        } else if (d) {
            fprintf(f, "  # extent of axis %d: ", d->axis);
            print_val(f, g, d->count);
        }
        if (ir_output_hidden(g, i))
            fputs("  # hidden", f);
        fputc('\n', f);
    }
    fputs("}\n", f);
}
