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
 *    (an input's CAST becomes a view when the input is read through it alone: the
 *    kernels that read it load the float32 data converting, isa.md LOAD / STORE flag
 *    F32, plan_edge_cast; an output's CAST is an elementwise node that fusion puts
 *    into the last kernel when it can, where the code generator turns it into the
 *    STORE's conversion, otherwise a kernel of its own);
 *  - elementwise and data-movement nodes compute on DLFloat16 (the vector unit widens
 *    the operands to float32 and rounds each result once);
 *  - contractions take DLFloat16 operands and accumulate in float32 (their inferred
 *    result is float32, ir_shape.c); a CAST rounds the result, usually fused into the
 *    contraction's epilogue;
 *  - reductions (REDUCE, ARGREDUCE, WINDOW, CUMSUM: the statistics of softmax, layer
 *    and RMS norms, means) and BITCAST read float32: their DLFloat16 operands are
 *    widened (exact) by a CAST, they accumulate in float32 and a CAST rounds their
 *    float results back to DLFloat16. The elementwise nodes that compute on the
 *    float32 results of summing reductions and constants alone (a norm's var + eps and
 *    rsqrt, stat_node) stay float32 and are rounded once, so a tiny epsilon survives;
 *  - additive attention masks (selects between 0 and -inf, saturated to the most
 *    negative finite value) are added in select form (mask_node): the DLFloat16 sum of
 *    two saturated -inf would overflow to NINF, which reads as NaN, where float32
 *    keeps -inf.
 *  - float16 tensors (a float16 model) are DLFloat16 too, like float32 ones: halfwiden.c
 *    leaves their arithmetic in float16 in this mode (no widening and rounding back per
 *    operator), float16 constants are converted here once, and a CAST between float16
 *    and float32 of a DLFloat16 value is dropped. Where a CAST converts between
 *    float16 and a dtype that is not a card float (float64, float8, integers), the
 *    IEEE float16 bits are kept (ieee_cast): DLFloat16's one NINF stands for NaN and
 *    both infinities, which Cast must tell apart.
 * Values of other dtypes (bfloat16 and the float8 variants, still widened by
 * halfwiden.c) are unchanged.
 *
 * --keep-fp32=LIST (opt->keep_fp32) names nodes that keep float32: a core node whose
 * origin (the ONNX node it came from, which survives decomposition) has a name or an
 * operator type in the list reads its DLFloat16 operands widened by a CAST, computes
 * in float32, and a CAST rounds its float results back to DLFloat16; a kept node
 * reads the float32 results of kept producers directly (no rounding between them, so
 * a kept Softmax computes in float32 from end to end). Entries that match no node are
 * reported in a warning.
 * A QDQ model (QuantizeLinear / DequantizeLinear from the model itself) keeps its
 * quantizations in float32: the scaling of every QuantizeLinear and DequantizeLinear,
 * and the nodes whose float results only such scaling reads (the residual adds, norms,
 * softmax and GELU between a DequantizeLinear and a QuantizeLinear, quant_region),
 * read float32 constants and graph inputs unrounded and pass float32 to each other,
 * as in the default precision: the 8-bit values the model defines by float32
 * arithmetic come out the same and the regions fuse as they do there. Contractions
 * among them are unchanged (DLFloat16 or int8 operands, float32 sums). Roundings to
 * DLFloat16 that nothing reads any more are removed (dce).
 * With the default precision the pass does nothing, so bundles stay as they were.
 */
#include <math.h>
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
    ValId *ieee;                           /* old float16 value -> a value with its IEEE
                                              float16 bits (IR_NONE: none), ieee_cast */
    const uint8_t *is_out;                 /* old value -> 1 when a graph output */
    const uint8_t *qreg;                   /* old value -> 1 when a result of a node of a
                                              quantization's float32 region, quant_region */
    uint8_t *stat;                         /* old value -> 1 when a float32 statistic: a
                                              summing reduction's or stat_node's result */
    uint32_t n;
    const char *keep[KEEP_MAX];
    size_t keeplen[KEEP_MAX];
    bool matched[KEEP_MAX];
    int nkeep;
    uint32_t masks;                        /* mask additions rewritten (mask_node) */
} F16Map;

/* Whether floats of dtype t live on the card as DLFloat16 in fp16 mode (float16 too:
 * halfwiden.c left its arithmetic in float16 for this pass, g->half_native). */
static bool card_float(IrDType t)
{
    return t == IR_DT_F32 || t == IR_DT_F16;
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

/* Whether node n computes a quantization's scaling (the float32 arithmetic of
 * QuantizeLinear / DequantizeLinear, a requantizing epilogue included): it stays
 * float32, since the 8-bit result it rounds to is defined by float32 arithmetic and
 * DLFloat16's 10-bit significand would move results by whole quantization steps. */
static bool quant_scaling(const IrNode *n)
{
    const char *t = n->origin.op_type;
    return t && (strcmp(t, "QuantizeLinear") == 0 || strcmp(t, "DequantizeLinear") == 0);
}

/* Mark in qreg (per old value) the results of the nodes that compute, in a QDQ model,
 * a QuantizeLinear's float32 input: nodes whose float results are all read by
 * quantization scaling (quant_scaling) or by other such nodes only. The model defines
 * the 8-bit values it quantizes by float32 arithmetic between a DequantizeLinear and a
 * QuantizeLinear (residual adds, layer norms, softmax, GELU, an attention mask of
 * float32's lowest value, which DLFloat16 cannot hold); these nodes keep it, as in the
 * default precision, so the region fuses as it does there. The old nodes are in
 * topological order, so walking them backwards sees every consumer before its
 * producer. */
static void quant_region(IrGraph *g, F16Map *m, const IrNode *old, uint32_t n,
                         const uint32_t *uses, uint8_t *qreg)
{
    uint8_t *other = ir_scratch(g, (size_t)m->n + 1);  /* value read by a node outside */
    memset(other, 0, (size_t)m->n + 1);
    memset(qreg, 0, (size_t)m->n + 1);
    for (uint32_t i = n; i-- > 0;) {
        const IrNode *nd = &old[i];
        if (nd->dead)
            continue;
        bool in = quant_scaling(nd), outs = nd->nout > 0;
        for (int k = 0; k < nd->nout && !in; k++) {
            ValId v = nd->out[k];
            outs &= card_float(ir_vtype(g, v)->dtype) && uses[v] && !other[v] && !m->is_out[v];
        }
        /* a contraction accumulates in float32 from DLFloat16 operands in this mode
           already (2: its float32 result is read unrounded, the node stays as it is) */
        if (!in && outs)
            for (int k = 0; k < nd->nout; k++)
                qreg[nd->out[k]] = ir_op_info[nd->op].cls == IR_CLS_CONTRACT ? 2 : 1;
        for (int k = 0; k < nd->nin && !in && !outs; k++)
            if (nd->in[k] != IR_NONE)
                other[nd->in[k]] = 1;
    }
}

/* Whether node n came from an ONNX node that --keep-fp32 names (by node name or by
 * operator type), marking the entries it matches, or computes a quantization's
 * scaling or its float32 input (quant_region). */
static bool kept(F16Map *m, const IrNode *n)
{
    bool any = quant_scaling(n) || (n->nout > 0 && m->qreg[n->out[0]] == 1);
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

/* The value of IEEE float16 bits h (exact in float32). */
static float half_value(uint16_t h)
{
    int e = (h >> 10) & 31, f = h & 1023;
    float v = e == 31 ? (f ? NAN : INFINITY) : e ? ldexpf((float)(1024 + f), e - 25) : ldexpf((float)f, -24);
    return h & 0x8000u ? -v : v;
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
    if (ir_val(g, v)->type.dtype == IR_DT_F16)
        for (size_t i = 0; i < n; i++)
            dst[i] = spy_f32_to_dlf16_sat(half_value(((const uint16_t *)src)[i]));
    else
        ir_f32_to_dlf16_sat_n(dst, src, n);
    return c;
}

/* Whether node n must read its float operands as float32 (sums and products
 * accumulate in float32, and a chunked reduction adds its partial results in the
 * destination; BITCAST reinterprets float32 bits). MAX / MIN reductions and windows
 * and ARGMAX / ARGMIN are exact in DLFloat16 (VREDUCE takes DLF16, isa.md), chunked
 * too: they read DLFloat16 directly. */
static bool reads_f32(const IrNode *n)
{
    int64_t fn = ir_attr_get_int(n, "fn", -1);
    if (n->op == IR_OP_ARGREDUCE ||
        ((n->op == IR_OP_REDUCE || n->op == IR_OP_WINDOW) && (fn == IR_RED_MAX || fn == IR_RED_MIN)))
        return false;
    return ir_op_info[n->op].cls == IR_CLS_REDUCE || n->op == IR_OP_BITCAST;
}

/* Whether every element of constant c (DLFloat16) has the bits of pattern h
 * (0x8000 ignored when zero is wanted: -0 is a zero). */
static bool const_all(IrGraph *g, ValId c, uint16_t h)
{
    const IrValue *cv = ir_val(g, c);
    if (cv->kind != IR_VAL_CONST || cv->type.dtype != IR_DT_DLF16 || !cv->data)
        return false;
    size_t n = ir_type_bytes(&cv->type) / 2;
    const uint16_t *d = (const uint16_t *)cv->data;
    for (size_t i = 0; i < n; i++)
        if ((h == 0 ? (uint16_t)(d[i] & 0x7fffu) : d[i]) != h)
            return false;
    return true;
}

/* Whether DLFloat16 value v is an additive attention mask, whose elements are 0 or
 * the saturated -inf (the most negative finite DLFloat16, 0xFFFE): a SELECT between
 * that constant and zero or another mask, or a RESHAPE / EXPAND / TRANSPOSE of a mask
 * (depth levels at most). */
static bool is_mask(IrGraph *g, ValId v, int depth)
{
    NodeId d = ir_val(g, v)->def;
    if (depth == 0 || d == IR_NONE || ir_vtype(g, v)->dtype != IR_DT_DLF16)
        return false;
    const IrNode *sn = &g->nodes[d];
    if (sn->op == IR_OP_RESHAPE || sn->op == IR_OP_EXPAND || sn->op == IR_OP_TRANSPOSE)
        return is_mask(g, sn->in[0], depth - 1);
    int64_t rfn = ir_attr_get_int(sn, "fn", -1);
    if (sn->op == IR_OP_REDUCE && (rfn == IR_RED_MAX || rfn == IR_RED_MIN))
        return is_mask(g, sn->in[0], depth - 1);   /* max / min of a mask in DLFloat16 */
    if (sn->op == IR_OP_CAST) {                /* rounding of a float32 max / min of a mask */
        NodeId r = ir_val(g, sn->in[0])->def;
        int64_t fn = r == IR_NONE ? -1 : ir_attr_get_int(&g->nodes[r], "fn", -1);
        if (r == IR_NONE || g->nodes[r].op != IR_OP_REDUCE || (fn != IR_RED_MAX && fn != IR_RED_MIN))
            return false;
        NodeId w = ir_val(g, g->nodes[r].in[0])->def;
        return w != IR_NONE && g->nodes[w].op == IR_OP_CAST && is_mask(g, g->nodes[w].in[0], depth - 1);
    }
    for (int i = 1; i <= 2 && sn->op == IR_OP_SELECT; i++) {
        ValId o = sn->in[3 - i];
        if (const_all(g, sn->in[i], 0xfffeu) &&
            (const_all(g, o, 0) || is_mask(g, o, depth - 1)))
            return true;
    }
    return false;
}

/* x + mask in select form, equal to the float32 sum for finite x (x + -inf = -inf)
 * and without the overflow of a DLFloat16 sum: a mask's SELECT with its other branch
 * b replaced by x + b (x itself where b is zero); any other mask M becomes
 * select(M == lowest, lowest, x). */
static ValId add_mask(IrGraph *g, ValId x, ValId mask, const IrOrigin *o)
{
    const IrNode *sn = &g->nodes[ir_val(g, mask)->def];
    if (sn->op != IR_OP_SELECT) {
        IrType t = {.dtype = IR_DT_DLF16, .rank = 0};
        uint16_t low = 0xfffeu;
        ValId c = ir_add_const(g, ir_fresh_name(g, "lowest"), &t, &low);
        return ir_select(g, ir_binary(g, IR_BIN_EQ, mask, c, o), c, x, o);
    }
    ValId in[3] = {sn->in[0], sn->in[1], sn->in[2]};
    int k = const_all(g, in[1], 0xfffeu) ? 2 : 1;
    in[k] = const_all(g, in[k], 0) ? x : add_mask(g, x, in[k], o);
    return ir_select(g, in[0], in[1], in[2], o);
}

/* x rounded to float16 and back to DLFloat16 (a float16 model's per-operator
 * rounding), where x may hold the saturated -inf: SELECT branches that are that
 * constant stay it (float16 would make it -inf and then NINF; float32 keeps -inf), the
 * others are rounded. */
static ValId round_trip(IrGraph *g, ValId x, const IrOrigin *o, int depth)
{
    NodeId d = ir_val(g, x)->def;
    if (depth > 0 && d != IR_NONE && g->nodes[d].op == IR_OP_SELECT &&
        (const_all(g, g->nodes[d].in[1], 0xfffeu) || const_all(g, g->nodes[d].in[2], 0xfffeu))) {
        ValId in[3] = {g->nodes[d].in[0], g->nodes[d].in[1], g->nodes[d].in[2]};
        int k = const_all(g, in[1], 0xfffeu) ? 2 : 1;
        in[k] = is_mask(g, in[k], 8) ? in[k] : round_trip(g, in[k], o, depth - 1);
        return ir_select(g, in[0], in[1], in[2], o);
    }
    return ir_cast(g, ir_cast(g, x, IR_DT_F16, o), IR_DT_DLF16, o);
}

/* An attention mask in DLFloat16: x + select(c, 0, -inf) with -inf saturated to the
 * most negative finite value overflows to NINF (NaN) when two masks are added (or a
 * mask to a large negative score), where float32 gives -inf. Node n is added in the
 * select form instead (add_mask), and its output mapped, when it adds a mask (BINARY
 * add of operands a, b, already mapped), or when it is a CAST back to DLFloat16 of a
 * mask's float16 rounding (a float16 model: the round trip would turn the saturated
 * -inf into float16 -inf and then NINF; float32 keeps -inf). False otherwise. */
static bool mask_node(IrGraph *g, F16Map *m, const IrNode *n, ValId a, ValId b, IrDType to)
{
    ValId r = IR_NONE;
    if (n->op == IR_OP_CAST && to == IR_DT_DLF16 && ir_vtype(g, a)->dtype == IR_DT_F16) {
        NodeId d = ir_val(g, a)->def;
        ValId x = d != IR_NONE && g->nodes[d].op == IR_OP_CAST ? g->nodes[d].in[0] : IR_NONE;
        NodeId xd = x == IR_NONE ? IR_NONE : ir_val(g, x)->def;
        if (x != IR_NONE && is_mask(g, x, 8))
            r = x;
        else if (xd != IR_NONE && ir_vtype(g, x)->dtype == IR_DT_DLF16 &&
                 g->nodes[xd].op == IR_OP_SELECT)
            r = round_trip(g, x, &n->origin, 8);
    } else if (n->op == IR_OP_BINARY && n->nin == 2 &&
               ir_attr_get_int(n, "fn", -1) == IR_BIN_ADD &&
               ir_vtype(g, a)->dtype == IR_DT_DLF16 && ir_vtype(g, b)->dtype == IR_DT_DLF16) {
        if (is_mask(g, b, 8))
            r = add_mask(g, a, b, &n->origin);
        else if (is_mask(g, a, 8))
            r = add_mask(g, b, a, &n->origin);
    }
    if (r == IR_NONE || ir_failed(g))
        return false;
    m->rep[n->out[0]] = r;
    m->masks++;
    return true;
}

/* A CAST between float16 and a dtype that is not a card float (float64, the float8
 * variants, integers) keeps IEEE float16 (infinities and NaN apart, where DLFloat16's
 * one NINF stands for all three): one that reads a float16 graph input reads its
 * float16 bits, and one that makes float16 keeps its result in float16 (converted to
 * DLFloat16 for the arithmetic that reads it, the graph output keeps the float16).
 * Float16 values made by arithmetic are DLFloat16. True when n was such a CAST
 * (re-added, outputs mapped). */
static bool ieee_cast(IrGraph *g, F16Map *m, const IrNode *n)
{
    if (n->op != IR_OP_CAST || n->nin != 1 || n->nout != 1)
        return false;
    ValId x = n->in[0], y = n->out[0];
    IrDType from = ir_vtype(g, x)->dtype, to = ir_vtype(g, y)->dtype;
    if (from == IR_DT_F16 && !card_float(to) && x < m->n && m->ieee[x] != IR_NONE) {
        IrNode cp = *n;
        ValId in = m->ieee[x];
        cp.in = &in;
        ir_readd_node(g, &cp);
        return true;
    }
    if (to != IR_DT_F16 || card_float(from) || from == IR_DT_DLF16)
        return false;
    IrNode cp = *n;
    ValId in = mapped(m, x);
    cp.in = &in;
    ir_readd_node(g, &cp);
    m->ieee[y] = y;
    m->rep[y] = ir_cast(g, y, IR_DT_DLF16, &n->origin);
    return !ir_failed(g);
}

/* Whether reduction node n sums in float32 (REDUCE other than MAX / MIN): its float32
 * result, before the rounding, is kept in m->f32 for the statistics nodes below. */
static bool stat_source(const IrNode *n)
{
    return n->op == IR_OP_REDUCE && reads_f32(n);
}

/* Whether node n computes on per-row statistics: a UNARY or BINARY whose operands are
 * all constants or statistics (m->stat: float32 results of summing reductions or of
 * other such nodes; not those of --keep-fp32 nodes), with at least one statistic and
 * no more elements than it (the mean, var + eps, rsqrt of a layer / RMS norm). It
 * computes in float32, as a kept node, and its result is rounded once: an epsilon
 * below DLFloat16's smallest normal (1e-12 of BERT-style norms) rounds to zero as a
 * constant, and a zero variance (a constant row: a zero class token) then gives
 * rsqrt(0) = inf and 0 * inf = NaN, where float32 gives 0. Statistics have one
 * element per row, so this costs next to nothing. */
static bool stat_node(IrGraph *g, const F16Map *m, const IrNode *n)
{
    if (n->op != IR_OP_UNARY && n->op != IR_OP_BINARY)
        return false;
    int64_t big = -1;
    for (int i = 0; i < n->nin; i++) {
        ValId v = n->in[i];
        if (v == IR_NONE || ir_is_const(g, v))
            continue;
        if (v >= m->n || !m->stat[v] || m->f32[v] == IR_NONE)
            return false;
        int64_t k = ir_type_numel(ir_vtype(g, v));
        big = k > big ? k : big;
    }
    return big > 0 && n->nout == 1 && ir_type_numel(ir_vtype(g, n->out[0])) <= big;
}

/* Re-add node n with its operands mapped, in the precision of the mode (float32 when
 * --keep-fp32 names it); maps its outputs. False on an inference failure (reported). */
static bool rewrite_node(IrGraph *g, F16Map *m, const IrNode *n)
{
    ValId in[64];
    IR_ASSERT(n->nin <= 64);
    bool stat = stat_node(g, m, n), changed = false, keep = kept(m, n) || stat;
    bool f32 = keep || reads_f32(n);
    if (!keep && ieee_cast(g, m, n))
        return true;
    for (int i = 0; i < n->nin; i++) {
        in[i] = mapped(m, n->in[i]);
        if (keep && in[i] != IR_NONE && n->in[i] < m->n && m->f32[n->in[i]] != IR_NONE)
            in[i] = m->f32[n->in[i]];
        else if (keep && in[i] != IR_NONE && ir_val(g, n->in[i])->kind != IR_VAL_ACT &&
                 ir_vtype(g, n->in[i])->dtype == IR_DT_F32)
            in[i] = n->in[i];              /* a kept node reads float32 constants (scales,
                                              zero points) and graph inputs unrounded */
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
    IrDType to = IR_DT_UNDEF;
    for (int i = 0; i < n->nattrs && n->op == IR_OP_CAST && !keep; i++)
        if (strcmp(attrs[i].name, "to") == 0 && card_float((IrDType)attrs[i].i)) {
            attrs[i].i = IR_DT_DLF16;      /* a cast to float32 now casts to DLFloat16 */
            to = IR_DT_DLF16;
            changed = true;
        }
    if (!keep && n->nout == 1 && mask_node(g, m, n, in[0], n->nin > 1 ? in[1] : IR_NONE, to))
        return true;
    if (n->op == IR_OP_CAST && ir_attr_get_int(n, "to", -1) == IR_DT_DLF16)
        to = IR_DT_DLF16;                  /* a rounding to DLFloat16 the model made */
    if (to == IR_DT_DLF16 && ir_vtype(g, in[0])->dtype == IR_DT_DLF16) {
        m->rep[n->out[0]] = in[0];         /* float16 <-> float32 of DLFloat16: nothing */
        return true;
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
        if ((keep || stat_source(n) || m->qreg[n->out[k]] == 2) && ir_vtype(g, r)->dtype == IR_DT_F32)
            m->f32[n->out[k]] = r;
        m->stat[n->out[k]] = (stat || stat_source(n)) && ir_vtype(g, r)->dtype == IR_DT_F32;
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
    if (!pass_prec_half(opt->precision))
        return true;
    F16Map m = {.rep = ir_scratch(g, (size_t)g->nvals * sizeof(ValId)),
                .f32 = ir_scratch(g, (size_t)g->nvals * sizeof(ValId)),
                .ieee = ir_scratch(g, (size_t)g->nvals * sizeof(ValId)),
                .stat = ir_scratch(g, (size_t)g->nvals + 1), .n = g->nvals};
    if (!keep_parse(g, &m, opt->keep_fp32))
        return false;
    uint32_t *uses = ir_use_counts(g);
    uint8_t *is_out = ir_scratch(g, (size_t)g->nvals + 1);
    for (uint32_t i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]] = 1;
    m.is_out = is_out;
    for (uint32_t v = 0; v < m.n; v++)
        m.rep[v] = m.f32[v] = m.ieee[v] = IR_NONE;
    memset(m.stat, 0, (size_t)m.n + 1);
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    uint8_t *qreg = ir_scratch(g, (size_t)m.n + 1);
    quant_region(g, &m, old, n, uses, qreg);
    m.qreg = qreg;
    for (uint32_t v = 0; v < m.n; v++) {
        const IrValue *val = ir_val(g, v);
        if (!card_float(val->type.dtype) || !uses[v])
            continue;
        if (val->kind == IR_VAL_CONST) {
            m.rep[v] = const_to_dlf16(g, v);
            ir_const_drop_pages(g, v);     /* the float32 source's pages, once read */
        }
        else if (val->kind == IR_VAL_INPUT) {
            m.rep[v] = ir_cast(g, v, IR_DT_DLF16, NULL);
            m.ieee[v] = val->type.dtype == IR_DT_F16 ? v : IR_NONE;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!old[i].dead && !rewrite_node(g, &m, &old[i]))
            return false;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        ValId v = g->outputs[i], r = mapped(&m, v);
        if (m.ieee[v] != IR_NONE)
            m.rep[v] = m.ieee[v];          /* float16 made by an IEEE cast stays as it is */
        else if (m.f32[v] != IR_NONE && ir_vtype(g, v)->dtype == IR_DT_F32)
            m.rep[v] = m.f32[v];           /* a kept node's (or a statistic's) float32
                                              result, not rounded */
        else if (r != v && ir_val(g, v)->kind != IR_VAL_INPUT)
            m.rep[v] = ir_vtype(g, r)->dtype == IR_DT_DLF16
                           ? ir_cast(g, r, ir_vtype(g, v)->dtype, NULL) : r;
        else
            m.rep[v] = IR_NONE;            /* an input passed through stays as it is */
    }
    ir_replace_outputs(g, edge_out, &m);
    keep_report(g, &m);
    /* the masks that were added in select form are no longer read, nor are the
       DLFloat16 roundings of kept nodes whose consumers are all kept */
    return !ir_failed(g) && pass_dce(g, opt);
}
