/* layout.c: device data types and layouts, and the strided view of every value.
 *
 * Every activation is dense row-major. A constant whose every use is the right operand
 * of a MATMUL is stored STICKED (rows padded to whole 128-byte sticks) when its rows
 * are not already a whole number of sticks, so that each row of B starts on a stick.
 * The layout decides the strides of the value's view; every DMA derives its strides
 * from views, so the choice needs no other change. The views are then recomputed
 * (plan_compute_views): values produced by virtual view nodes, and the inputs of
 * CONCATs done in place (pass_fuse), are views of their root's storage.
 *
 * Also refuses, with a message naming the node, data types the device cannot hold
 * (strings; see devtype.c for the narrowed ones), arithmetic on float16/bfloat16
 * (only moved and converted: pass_halfwiden computes it in float32) and contractions
 * other than float32 (float64 computes as float32).
 */
#include <string.h>

#include "isa.h"
#include "pass.h"
#include "plan/plan.h"

/* Report value v of node n (or of the graph's interface) if its dtype cannot live on
 * the device. */
static bool check_storable(IrGraph *g, const IrNode *n, ValId v)
{
    IrDType t = ir_vtype(g, v)->dtype;
    if (pass_dev_dtype(t))
        return true;
    const IrValue *val = ir_val(g, v);
    if (n)
        ir_error(g, &n->origin, "%s is not supported on the device (value '%s': unsupported "
                 "dtype)", pass_dtype_long_name(t), val->name);
    else
        ir_diag_error(g->diag, "%s '%s': %s is not supported on the device (unsupported "
                      "dtype)", val->kind == IR_VAL_INPUT ? "input" : "output", val->name,
                      pass_dtype_long_name(t));
    return false;
}

/* BITCAST n is a view of its input's storage: both dtypes must keep their bits in
 * device elements of one width. float64 does not (the device holds it as float32, as
 * it holds int64 as int32), nor uint16 (held as int32) against a 16-bit type. */
static bool check_bitcast(IrGraph *g, const IrNode *n)
{
    IrDType a = ir_vtype(g, n->in[0])->dtype, b = ir_vtype(g, n->out[0])->dtype;
    if (a == IR_DT_F64 || b == IR_DT_F64) {
        ir_error(g, &n->origin, "bitcast from %s to %s is not supported on the device "
                 "(unsupported: the device has no 64-bit types; it holds float64 as float32 "
                 "and int64 as int32, so the 64-bit pattern to reinterpret does not exist "
                 "there)", pass_dtype_long_name(a), pass_dtype_long_name(b));
        return false;
    }
    if (pass_dev_esize(a) != pass_dev_esize(b)) {
        ir_error(g, &n->origin, "bitcast from %s to %s is not supported on the device "
                 "(unsupported: the device holds them in elements of %d and %d bytes)",
                 pass_dtype_long_name(a), pass_dtype_long_name(b), pass_dev_esize(a),
                 pass_dev_esize(b));
        return false;
    }
    return true;
}

/* Check the dtypes of node n: storable everywhere, computable for arithmetic. */
static bool check_node(IrGraph *g, const IrNode *n)
{
    for (int i = 0; i < n->nin; i++)
        if (!check_storable(g, n, n->in[i]))
            return false;
    for (int i = 0; i < n->nout; i++)
        if (!check_storable(g, n, n->out[i]))
            return false;
    IrOpClass c = ir_op_info[n->op].cls;
    if (n->op == IR_OP_BITCAST)
        return check_bitcast(g, n);
    if (c == IR_CLS_MOVE || n->op == IR_OP_CAST)   /* CAST converts any storable pair */
        return true;
    for (int i = 0; i < n->nin + n->nout; i++) {
        ValId v = i < n->nin ? n->in[i] : n->out[i - n->nin];
        IrDType t = ir_vtype(g, v)->dtype;
        bool fp8_b = n->op == IR_OP_MATMUL && i == 1 &&
                     (t == IR_DT_F8E4M3FN ||                           /* fp8.c */
                      t == IR_DT_F16 || t == IR_DT_BF16);              /* halfweight.c */
        if (!pass_dtype_computable(t) && !fp8_b) {
            ir_error(g, &n->origin, "%s arithmetic is not supported on the device "
                     "(unsupported: it can only move %s data)", pass_dtype_long_name(t),
                     pass_dtype_long_name(t));
            return false;
        }
    }
    int cdt = c == IR_CLS_CONTRACT ? pass_dev_dtype(ir_vtype(g, n->in[0])->dtype) : 0;
    if (c == IR_CLS_CONTRACT && cdt != ISA_DT_F32 && cdt != ISA_DT_DLF16 && cdt != ISA_DT_I8) {
        ir_error(g, &n->origin, "%s on %s is not supported on the device (unsupported: "
                 "float32 and int8 only)",
                 n->op == IR_OP_CONV ? "convolution" : "matrix multiplication",
                 pass_dtype_long_name(ir_vtype(g, n->in[0])->dtype));
        return false;
    }
    return true;
}

/* Whether constant v is used only as the right operand of MATMUL nodes. */
static bool only_matmul_b(IrGraph *g, ValId v)
{
    uint32_t uses = 0;
    for (NodeId n = 0; n < g->nnodes; n++) {
        const IrNode *nd = &g->nodes[n];
        if (nd->dead)
            continue;
        for (int i = 0; i < nd->nin; i++) {
            if (nd->in[i] != v)
                continue;
            if (nd->op != IR_OP_MATMUL || i != 1)
                return false;
            uses++;
        }
    }
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return false;
    return uses > 0;
}

/* Choose the layout of every value. */
static void choose_layouts(IrGraph *g, const SpyTarget *t)
{
    for (ValId v = 0; v < g->nvals; v++) {
        const IrValue *val = ir_val(g, v);
        g->plan->val[v].layout = IR_LAYOUT_ROWMAJOR;
        if (val->kind != IR_VAL_CONST || val->type.rank < 2 || !pass_dev_dtype(val->type.dtype))
            continue;
        size_t es = ir_dtype_size(val->type.dtype);
        int64_t se = (int64_t)(t->stick_bytes / (es ? es : 1));
        int64_t n = val->type.dims[val->type.rank - 1];
        if (se > 1 && n > se && n % se != 0 && plan_numel(&val->type) > 0 &&
            only_matmul_b(g, v))
            g->plan->val[v].layout = IR_LAYOUT_STICKED;
    }
}

/* Refuse tensors that cannot fit the device's memory at all (reported by name). */
static bool check_sizes(IrGraph *g, const SpyTarget *t)
{
    Plan *s = g->plan;
    uint64_t limit = (uint64_t)t->dram_gib << 30;
    bool ok = true;
    for (ValId v = 0; v < g->nvals && ok; v++) {
        const IrValue *val = ir_val(g, v);
        if (s->val[v].virt || val->kind == IR_VAL_CONST || !pass_dev_esize(val->type.dtype))
            continue;
        if (val->kind == IR_VAL_ACT && (val->def == IR_NONE || g->nodes[val->def].dead))
            continue;
        double bytes = (double)pass_dev_esize(val->type.dtype);
        for (int i = 0; i < val->type.rank; i++)
            bytes *= (double)val->type.dims[i];
        if (bytes <= (double)limit)
            continue;
        if (val->kind == IR_VAL_INPUT)
            ir_diag_error(g->diag, "input '%s' needs %.0f bytes, more than the %u GiB of "
                          "device memory (unsupported size)", val->name, bytes, t->dram_gib);
        else
            ir_error(g, &g->nodes[val->def].origin, "result '%s' needs %.0f bytes, more than "
                     "the %u GiB of device memory (unsupported size)", val->name, bytes,
                     t->dram_gib);
        ok = false;
    }
    return ok;
}

bool pass_layout(IrGraph *g, const PassOptions *opt)
{
    IR_ASSERT(g->plan && opt->target);
    bool ok = true;
    for (uint32_t i = 0; i < g->ninputs; i++)
        ok &= check_storable(g, NULL, g->inputs[i]);
    for (uint32_t i = 0; i < g->noutputs; i++)
        ok &= check_storable(g, NULL, g->outputs[i]);
    for (NodeId n = 0; n < g->nnodes; n++)
        if (!g->nodes[n].dead)
            ok &= check_node(g, &g->nodes[n]);
    if (!ok || !check_sizes(g, opt->target))
        return false;
    choose_layouts(g, opt->target);
    IR_ASSERT(plan_compute_views(g, opt->target));    /* layouts break no view of fuse */
    return true;
}
