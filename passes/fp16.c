/* fp16.c: the fp16 precision mode (spyrec --precision=fp16).
 *
 * In fp16 mode every float32 tensor that lives on the card (activations and float
 * weights) is stored as the card's 16-bit float, DLFloat16 (IR_DT_DLF16, device
 * element of 2 bytes, schemas/dtconv.h). The pass rewrites the graph once, after the
 * front-end passes and before the back end, so that every later pass and the code
 * generator see the device types directly:
 *
 *  - float32 constants become DLFloat16 constants (rounded here, at compile time;
 *    values beyond the range saturate, spy_f32_to_dlf16_sat: the fill and pad values of
 *    the code generator too);
 *  - each float32 graph input is converted by one CAST to DLFloat16 and each float32
 *    graph output by one CAST from it, so the bundle's edge keeps the model's dtype
 *    (the casts are ordinary elementwise nodes: fusion puts them into the first and
 *    last kernels when it can, otherwise they are kernels of their own);
 *  - elementwise and data-movement nodes compute on DLFloat16 (the vector unit widens
 *    the operands to float32 and rounds each result once);
 *  - contractions take DLFloat16 operands and accumulate in float32 (their inferred
 *    result is float32, ir_shape.c); a CAST rounds the result, usually fused into the
 *    contraction's epilogue;
 *  - reductions (REDUCE, ARGREDUCE, WINDOW, CUMSUM: the statistics of softmax, layer
 *    and RMS norms, means) and BITCAST read float32: their DLFloat16 operands are
 *    widened (exact) by a CAST, they accumulate in float32 and a CAST rounds their
 *    float results back to DLFloat16.
 * Values of other dtypes (integers, bool, float64, the storage floats) are unchanged.
 * With the default precision the pass does nothing, so bundles stay as they were.
 */
#include <string.h>

#include "dtconv.h"
#include "pass.h"

/* Old value -> its replacement (IR_NONE: unchanged); lives in the scratch arena. */
typedef struct {
    ValId *rep;
    uint32_t n;
} F16Map;

/* The current value standing for old value v. */
static ValId mapped(const F16Map *m, ValId v)
{
    return v != IR_NONE && v < m->n && m->rep[v] != IR_NONE ? m->rep[v] : v;
}

/* A DLFloat16 copy of float32 constant v (rounded element by element), which takes
 * over v's name. */
static ValId const_to_dlf16(IrGraph *g, ValId v)
{
    IrType t = ir_val(g, v)->type;
    t.dtype = IR_DT_DLF16;
    const char *name = ir_val(g, v)->name;
    ir_set_name(g, v, ir_fresh_name(g, "f32"));
    ValId c = ir_add_const(g, name, &t, NULL);
    size_t n = ir_type_bytes(&t) / 2;
    const float *src = (const float *)ir_val(g, v)->data;
    uint16_t *dst = (uint16_t *)(uintptr_t)g->vals[c].data;
    for (size_t i = 0; i < n; i++)
        dst[i] = spy_f32_to_dlf16_sat(src[i]);
    return c;
}

/* Whether node n must read its float operands as float32 (reductions accumulate in
 * float32; BITCAST reinterprets float32 bits). */
static bool reads_f32(const IrNode *n)
{
    return ir_op_info[n->op].cls == IR_CLS_REDUCE || n->op == IR_OP_BITCAST;
}

/* Re-add node n with its operands mapped, in the precision of the mode; maps its
 * outputs. False on an inference failure (reported). */
static bool rewrite_node(IrGraph *g, F16Map *m, const IrNode *n)
{
    ValId in[64];
    IR_ASSERT(n->nin <= 64);
    bool changed = false, f32 = reads_f32(n);
    for (int i = 0; i < n->nin; i++) {
        in[i] = mapped(m, n->in[i]);
        if (f32 && in[i] != IR_NONE && ir_vtype(g, in[i])->dtype == IR_DT_DLF16)
            in[i] = ir_cast(g, in[i], IR_DT_F32, &n->origin);
        changed |= in[i] != n->in[i];
    }
    IrAttr attrs[32];
    IR_ASSERT(n->nattrs <= 32);
    memcpy(attrs, n->attrs, (size_t)n->nattrs * sizeof *attrs);
    for (int i = 0; i < n->nattrs && n->op == IR_OP_CAST; i++)
        if (strcmp(attrs[i].name, "to") == 0 && attrs[i].i == IR_DT_F32) {
            attrs[i].i = IR_DT_DLF16;      /* a cast to float32 now casts to DLFloat16 */
            changed = true;
        }
    bool f32_out = false;
    for (int k = 0; k < n->nout; k++)
        f32_out |= ir_vtype(g, n->out[k])->dtype == IR_DT_F32;
    if (!changed && !f32_out) {
        ir_readd_node(g, n);
        return true;
    }
    NodeId id = ir_add_node(g, n->op, in, n->nin, attrs, n->nattrs, &n->origin);
    if (ir_failed(g))
        return false;
    for (int k = 0; k < n->nout; k++) {
        ValId r = g->nodes[id].out[k];
        if (ir_vtype(g, r)->dtype == IR_DT_F32)
            r = ir_cast(g, r, IR_DT_DLF16, &n->origin);
        m->rep[n->out[k]] = r;
    }
    return !ir_failed(g);
}

/* Graph output v back in float32 at the bundle's edge (ir_replace_outputs map). */
static ValId edge_out(void *ctx, ValId v)
{
    return mapped((const F16Map *)ctx, v);
}

bool pass_fp16(IrGraph *g, const PassOptions *opt)
{
    if (opt->precision != PASS_PREC_FP16)
        return true;
    F16Map m = {ir_scratch(g, (size_t)g->nvals * sizeof(ValId)), g->nvals};
    uint32_t *uses = ir_use_counts(g);
    for (uint32_t v = 0; v < m.n; v++)
        m.rep[v] = IR_NONE;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t v = 0; v < m.n; v++) {
        const IrValue *val = ir_val(g, v);
        if (val->type.dtype != IR_DT_F32 || !uses[v])
            continue;
        if (val->kind == IR_VAL_CONST)
            m.rep[v] = const_to_dlf16(g, v);
        else if (val->kind == IR_VAL_INPUT)
            m.rep[v] = ir_cast(g, v, IR_DT_DLF16, NULL);
    }
    for (uint32_t i = 0; i < n; i++)
        if (!old[i].dead && !rewrite_node(g, &m, &old[i]))
            return false;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        ValId v = g->outputs[i], r = mapped(&m, v);
        if (r != v && ir_val(g, v)->kind != IR_VAL_INPUT)
            m.rep[v] = ir_vtype(g, r)->dtype == IR_DT_DLF16 ? ir_cast(g, r, IR_DT_F32, NULL) : r;
        else
            m.rep[v] = IR_NONE;            /* an input passed through stays as it is */
    }
    ir_replace_outputs(g, edge_out, &m);
    return !ir_failed(g);
}
