/* ir_work.c: what a node costs and how it is named in a kernel, per op (the label and
 * work columns of ops.def).
 *
 * The work hooks count a node's useful operations, the FLOP figure of the roofline that
 * the fusion pass records per kernel: 2*M*N*K for a matrix product, 2 * outputs * taps
 * for a convolution, one per input element for a reduction and one per output element
 * (times the window) for everything else.
 */
#include <stdio.h>

#include "ir.h"
#include "ir_priv.h"

/* Product of the dims of t (rank 0: 1). */
static uint64_t elems(const IrType *t)
{
    uint64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (uint64_t)t->dims[i];
    return n;
}

/* One operation per output element. */
uint64_t ir_work_elems(IrGraph *g, const IrNode *n)
{
    return elems(ir_vtype(g, n->out[0]));
}

/* One operation per element of the (first) input: reductions and scans. */
uint64_t ir_work_input(IrGraph *g, const IrNode *n)
{
    return elems(ir_vtype(g, n->in[0]));
}

/* A multiply and an add per output element and step of K. */
uint64_t ir_work_matmul(IrGraph *g, const IrNode *n)
{
    const IrType *a = ir_vtype(g, n->in[0]);
    return 2 * ir_work_elems(g, n) * (uint64_t)a->dims[a->rank - 1];
}

/* A multiply and an add per output element and weight tap of its group. */
uint64_t ir_work_conv(IrGraph *g, const IrNode *n)
{
    const IrType *w = ir_vtype(g, n->in[1]);
    uint64_t per_out = elems(w) / (uint64_t)(w->dims[0] ? w->dims[0] : 1);
    return 2 * ir_work_elems(g, n) * per_out;
}

/* One operation per output element and window tap. */
uint64_t ir_work_window(IrGraph *g, const IrNode *n)
{
    uint64_t w = ir_work_elems(g, n);
    const int64_t *k;
    int nk = ir_attr_get_ints(n, "kernel", &k);
    for (int i = 0; i < nk; i++)
        w *= (uint64_t)k[i];
    return w;
}

const char *ir_op_label(const IrNode *n, char *buf, size_t len)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    const char *fn = ir_op_fn_name(n->op, (int)ir_attr_get_int(n, "fn", 0));
    snprintf(buf, len, ir_op_info[n->op].label, fn ? fn : "");
#pragma GCC diagnostic pop
    return buf;
}
