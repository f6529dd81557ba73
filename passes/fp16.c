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
 * Values of other dtypes are unchanged. Float16 models are still widened per operator
 * by halfwiden.c (their float16 results rounded as IEEE float16): converting them to
 * DLFloat16 natively loses float16's infinities and NaN in Cast/IsInf/IsNaN (one NINF
 * stands for all three), which the fp16 conformance column showed; left for later.
 *
 * --keep-fp32=LIST (opt->keep_fp32) names nodes that keep float32: a core node whose
 * origin (the ONNX node it came from, which survives decomposition) has a name or an
 * operator type in the list reads its DLFloat16 operands widened by a CAST, computes
 * in float32, and a CAST rounds its float results back to DLFloat16; a kept node
 * reads the float32 results of kept producers directly (no rounding between them, so
 * a kept Softmax computes in float32 from end to end). Entries that match no node are
 * reported in a warning.
 * With the default precision the pass does nothing, so bundles stay as they were.
 */
#include <stdio.h>
#include <string.h>

#include "dtconv.h"
#include "pass.h"

#define KEEP_MAX 64                        /* --keep-fp32 entries at most */

/* Old value -> its replacement (IR_NONE: unchanged); lives in the scratch arena. And
 * the --keep-fp32 entries, with whether each matched a node. */
typedef struct {
    ValId *rep;
    ValId *f32;                            /* old value -> float32 result of a kept node
                                              before its rounding (IR_NONE: none) */
    const uint8_t *is_out;                 /* old value -> 1 when a graph output */
    uint32_t n;
    const char *keep[KEEP_MAX];
    size_t keeplen[KEEP_MAX];
    bool matched[KEEP_MAX];
    int nkeep;
} F16Map;

/* Whether floats of dtype t live on the card as DLFloat16 in fp16 mode. */
static bool card_float(IrDType t)
{
    return t == IR_DT_F32;
}

/* Split the comma-separated list s into m's keep entries; false (reported) when it
 * has too many. */
static bool keep_parse(IrGraph *g, F16Map *m, const char *s)
{
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len) {
            if (m->nkeep == KEEP_MAX) {
                ir_error(g, NULL, "--keep-fp32: more than %d entries", KEEP_MAX);
                return false;
            }
            m->keep[m->nkeep] = s;
            m->keeplen[m->nkeep++] = len;
        }
        s = e ? e + 1 : NULL;
    }
    return true;
}

/* Whether string s equals entry k of m's keep list. */
static bool keep_eq(const F16Map *m, int k, const char *s)
{
    return s && strlen(s) == m->keeplen[k] && memcmp(s, m->keep[k], m->keeplen[k]) == 0;
}

/* Whether node n came from an ONNX node that --keep-fp32 names (by node name or by
 * operator type); marks the entries it matches. */
static bool kept(F16Map *m, const IrNode *n)
{
    bool any = false;
    for (int k = 0; k < m->nkeep; k++)
        if (keep_eq(m, k, n->origin.name) || keep_eq(m, k, n->origin.op_type)) {
            m->matched[k] = true;
            any = true;
        }
    return any;
}

/* Warn about the --keep-fp32 entries that matched no node. */
static void keep_report(IrGraph *g, const F16Map *m)
{
    char buf[512];
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < m->nkeep; k++)
        if (!m->matched[k] && len < sizeof buf)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s'%.*s'", len ? ", " : "",
                                    (int)m->keeplen[k], m->keep[k]);
    if (len && g->diag)
        ir_diag_warn(g->diag, "--keep-fp32: no node has the name or operator type %s", buf);
}

/* The current value standing for old value v. */
static ValId mapped(const F16Map *m, ValId v)
{
    return v != IR_NONE && v < m->n && m->rep[v] != IR_NONE ? m->rep[v] : v;
}

/* A DLFloat16 copy of float32 or float16 constant v (rounded element by element),
 * which takes over v's name. */
static ValId const_to_dlf16(IrGraph *g, ValId v)
{
    IrType t = ir_val(g, v)->type;
    t.dtype = IR_DT_DLF16;
    const char *name = ir_val(g, v)->name;
    ir_set_name(g, v, ir_fresh_name(g, "f32"));
    ValId c = ir_add_const(g, name, &t, NULL);
    size_t n = ir_type_bytes(&t) / 2;
    const void *src = ir_val(g, v)->data;
    uint16_t *dst = (uint16_t *)(uintptr_t)g->vals[c].data;
    for (size_t i = 0; i < n; i++)
        dst[i] = spy_f32_to_dlf16_sat(((const float *)src)[i]);
    return c;
}

/* Whether node n must read its float operands as float32 (reductions accumulate in
 * float32; BITCAST reinterprets float32 bits). */
static bool reads_f32(const IrNode *n)
{
    return ir_op_info[n->op].cls == IR_CLS_REDUCE || n->op == IR_OP_BITCAST;
}

/* Re-add node n with its operands mapped, in the precision of the mode (float32 when
 * --keep-fp32 names it); maps its outputs. False on an inference failure (reported). */
static bool rewrite_node(IrGraph *g, F16Map *m, const IrNode *n)
{
    ValId in[64];
    IR_ASSERT(n->nin <= 64);
    bool changed = false, keep = kept(m, n), f32 = keep || reads_f32(n);
    for (int i = 0; i < n->nin; i++) {
        in[i] = mapped(m, n->in[i]);
        if (keep && in[i] != IR_NONE && n->in[i] < m->n && m->f32[n->in[i]] != IR_NONE)
            in[i] = m->f32[n->in[i]];
        /* a BITCAST of float16 reinterprets float16 bits */
        IrDType wide = n->op == IR_OP_BITCAST && in[i] != IR_NONE
                           ? ir_vtype(g, n->in[i])->dtype : IR_DT_F32;
        if (f32 && in[i] != IR_NONE && ir_vtype(g, in[i])->dtype == IR_DT_DLF16)
            in[i] = ir_cast(g, in[i], wide, &n->origin);
        changed |= in[i] != n->in[i];
    }
    IrAttr attrs[32];
    IR_ASSERT(n->nattrs <= 32);
    memcpy(attrs, n->attrs, (size_t)n->nattrs * sizeof *attrs);
    for (int i = 0; i < n->nattrs && n->op == IR_OP_CAST && !keep; i++)
        if (strcmp(attrs[i].name, "to") == 0 && card_float((IrDType)attrs[i].i)) {
            attrs[i].i = IR_DT_DLF16;      /* a cast to float32 now casts to DLFloat16 */
            changed = true;
        }
    bool f32_out = false;
    for (int k = 0; k < n->nout; k++)
        f32_out |= card_float(ir_vtype(g, n->out[k])->dtype);
    if (!changed && !f32_out) {
        ir_readd_node(g, n);
        return true;
    }
    NodeId id = ir_add_node(g, n->op, in, n->nin, attrs, n->nattrs, &n->origin);
    if (ir_failed(g))
        return false;
    for (int k = 0; k < n->nout; k++) {
        ValId r = g->nodes[id].out[k];
        if (keep && ir_vtype(g, r)->dtype == IR_DT_F32)
            m->f32[n->out[k]] = r;
        if (card_float(ir_vtype(g, r)->dtype))
            r = ir_cast(g, r, IR_DT_DLF16, &n->origin);
        m->rep[n->out[k]] = r;
        if (!m->is_out[n->out[k]]) {       /* the replacement keeps the model's name (for
                                              the bundle's DEBUG section); a graph output's
                                              name goes to its edge cast below */
            const char *name = ir_val(g, n->out[k])->name;
            ir_set_name(g, n->out[k], ir_fresh_name(g, "f32"));
            ir_set_name(g, r, name);
        }
    }
    return !ir_failed(g);
}

/* Graph output v back in its model dtype at the bundle's edge (ir_replace_outputs map). */
static ValId edge_out(void *ctx, ValId v)
{
    return mapped((const F16Map *)ctx, v);
}

bool pass_fp16(IrGraph *g, const PassOptions *opt)
{
    if (opt->precision != PASS_PREC_FP16)
        return true;
    F16Map m = {.rep = ir_scratch(g, (size_t)g->nvals * sizeof(ValId)),
                .f32 = ir_scratch(g, (size_t)g->nvals * sizeof(ValId)), .n = g->nvals};
    if (!keep_parse(g, &m, opt->keep_fp32))
        return false;
    uint32_t *uses = ir_use_counts(g);
    uint8_t *is_out = ir_scratch(g, (size_t)g->nvals + 1);
    for (uint32_t i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]] = 1;
    m.is_out = is_out;
    for (uint32_t v = 0; v < m.n; v++)
        m.rep[v] = m.f32[v] = IR_NONE;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t v = 0; v < m.n; v++) {
        const IrValue *val = ir_val(g, v);
        if (!card_float(val->type.dtype) || !uses[v])
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
            m.rep[v] = ir_vtype(g, r)->dtype == IR_DT_DLF16
                           ? ir_cast(g, r, ir_vtype(g, v)->dtype, NULL) : r;
        else
            m.rep[v] = IR_NONE;            /* an input passed through stays as it is */
    }
    ir_replace_outputs(g, edge_out, &m);
    keep_report(g, &m);
    return !ir_failed(g);
}
