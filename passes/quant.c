/* quant.c: calibrated W8A8 quantization (spyrec --precision=int8 --calibrate DIR...).
 *
 * The pass runs first, on the frontend's graph, and gives every contraction with a
 * constant float32 weight (ONNX MatMul, Gemm, Conv) the QuantizeLinear /
 * DequantizeLinear pairs of an ONNX QDQ model, so that the quantized graph is the one
 * such a model would be and the rest of the compiler treats both alike:
 *
 *   x -> Q(s_x, zp_x) -> DQ -> Conv/MatMul/Gemm -> y -> Q(s_y, zp_y) -> DQ -> readers
 *                               ^ DQ(axis) <- int8 weight constant
 *
 *  - weights: symmetric int8 per output channel, scale max|w|/127 (zero point 0),
 *    quantized here at compile time to an int8 constant read through a
 *    DequantizeLinear (the output channel is axis 1 of a MatMul weight [K, N] (the last
 *    axis of a batched one), axis 0 of a Conv weight and of a Gemm weight with transB);
 *  - activations (the contraction's data input and its result): int8 per tensor with a
 *    zero point, from the range the calibration observed (PassQParam, computed by the
 *    compiler driver from ir_run_graph on the calibration inputs): the range is
 *    widened to contain 0, scale = (hi - lo) / 255, zero point round(-128 - lo/scale);
 *  - biases (Gemm C, Conv B) stay float;
 *  - a quantized activation is read quantized by every later reader too (a residual
 *    add as well as the projection), so that its producer stores only the int8 tensor;
 *    one that reaches the contraction through view ops or a MaxPool is quantized
 *    above them (they commute with a per-tensor quantization), so they move int8; a
 *    result that only products of activations read (attention's Q, K, V) is left
 *    float there (its kernel stores a float for them, or they quantize it themselves);
 *  - products of two activations more than 64 deep (attention's weighted sum P.V; see
 *    act_product) get symmetric int8 operands per tensor (zero point 0, scale
 *    max(|lo|, |hi|)/127 from the calibrated range): a plain int8 x int8 -> int32
 *    product, with no zero-point correction sums; their result stays float;
 *  - MatMuls of one activation whose results stay float that way and feed no quantized
 *    product of activations (attention's Q and K projections) become first one product
 *    of their weights side by side, read through a Slice per member (merge_siblings):
 *    one kernel with all cores streams the weights. V's projection stays alone, so that
 *    its epilogue stores V quantized for P.V.
 * The decomposition lowers the pairs to float arithmetic (fake quantization: the
 * values are exactly those of int8), which gives the accuracy of int8; the
 * weights' DequantizeLinear folds to a constant.
 * Nodes that --keep-fp16 or --keep-fp32 name (node name, operator type, or the name of
 * one of their input or output tensors) are left alone; so is a tensor the calibration
 * has no range for. The operators of .pt2 archives (aten.linear, ...) are not matched
 * yet: a compile that quantizes nothing says so in a warning.
 * pass_quant_observe is the calibration's half: it makes the activation tensors this
 * pass would quantize extra graph outputs, whose values ir_run_graph then reports.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"

/* Whether a keep list names node n: its name, operator type or one of its tensors. */
static bool kept(IrGraph *g, const IrNode *n, const char *keep)
{
    if (!keep)
        return false;
    if (pass_list_has(keep, n->origin.name) || pass_list_has(keep, n->origin.op_type))
        return true;
    for (int i = 0; i < n->nin + n->nout; i++) {
        ValId v = i < n->nin ? n->in[i] : n->out[i - n->nin];
        if (v != IR_NONE && pass_list_has(keep, ir_val(g, v)->name))
            return true;
    }
    return false;
}

/* Whether n is a contraction this pass quantizes; *wslot and *axis: the slot of its
 * constant weight and the weight's output-channel axis. */
static bool candidate(IrGraph *g, const IrNode *n, const char *keep32, const char *keep16,
                      int *wslot, int *axis)
{
    if (n->op != IR_OP_FOREIGN || n->dead || (n->foreign.domain && n->foreign.domain[0]) ||
        n->nin < 2 || n->nout < 1 || n->in[0] == IR_NONE || n->in[1] == IR_NONE)
        return false;
    const char *t = n->foreign.op_type;
    const IrType *tw = ir_vtype(g, n->in[1]), *tx = ir_vtype(g, n->in[0]);
    IrDType ty = ir_vtype(g, n->out[0])->dtype;   /* frontend results may be untyped */
    if (!ir_is_const(g, n->in[1]) || tw->dtype != IR_DT_F32 || tw->rank < 2 ||
        (tx->dtype != IR_DT_F32 && tx->dtype != IR_DT_UNDEF) ||
        (ty != IR_DT_F32 && ty != IR_DT_UNDEF))
        return false;
    *wslot = 1;
    if (strcmp(t, "MatMul") == 0)
        *axis = tw->rank - 1;
    else if (strcmp(t, "Gemm") == 0)
        *axis = ir_attr_get_int(n, "transB", 0) ? 0 : 1;
    else if (strcmp(t, "Conv") == 0)
        *axis = 0;
    else
        return false;
    return !kept(g, n, keep32) && !kept(g, n, keep16);
}

#define ACT_DEPTH_MIN 64                  /* products of activations this deep stay float */

/* Whether n is an ONNX MatMul of two float activations this pass quantizes (attention's
 * weighted sum P.V): not kept, and summing more than ACT_DEPTH_MIN products. A shallower
 * one (attention's scores over heads of 64) stays DLFloat16: an int8 operand row of 64
 * bytes is half a 128-byte stick, which DRAM transfers charge whole, so int8 operands
 * would read no fewer bytes, and quantizing them costs a kernel of its own where their
 * producer cannot take it (the slices of a merged projection). */
#define VIEW_CHAIN_MAX 8                  /* view ops a quantization moves above */

static bool view_op(const IrNode *n);

/* Whether v is a constant or a chain of view ops over one (a tied weight read
 * transposed, GPT-2's LM head over its embedding table): not an activation, and not
 * a constant weight that candidate() quantizes at compile time either, so its product
 * stays float rather than quantizing 38M weights at every run. */
static bool const_view(IrGraph *g, ValId v)
{
    for (int i = 0; i < VIEW_CHAIN_MAX && v != IR_NONE; i++) {
        if (ir_is_const(g, v))
            return true;
        NodeId p = ir_val(g, v)->def;
        if (p == IR_NONE || !view_op(&g->nodes[p]))
            return false;
        v = g->nodes[p].in[0];
    }
    return false;
}

static bool act_product(IrGraph *g, const IrNode *n, const char *keep32, const char *keep16)
{
    if (n->op != IR_OP_FOREIGN || n->dead || (n->foreign.domain && n->foreign.domain[0]) ||
        strcmp(n->foreign.op_type, "MatMul") != 0 || n->nin != 2 || n->nout < 1 ||
        n->in[0] == IR_NONE)
        return false;
    const IrType *ta = ir_vtype(g, n->in[0]);
    if (ta->rank < 2 || ta->dims[ta->rank - 1] <= ACT_DEPTH_MIN)
        return false;
    for (int i = 0; i < 2; i++) {
        if (n->in[i] == IR_NONE || const_view(g, n->in[i]))
            return false;
        IrDType t = ir_vtype(g, n->in[i])->dtype;
        if (t != IR_DT_F32 && t != IR_DT_UNDEF)
            return false;
    }
    return !kept(g, n, keep32) && !kept(g, n, keep16);
}

uint32_t pass_quant_observe(IrGraph *g, const char *keep_fp32, const char *keep_fp16,
                            const char ***names, uint8_t **symmetric)
{
    uint32_t cap = 2 * g->nnodes + 1, k = 0;
    const char **nm = ir_alloc(g, cap * sizeof *nm);
    uint8_t *sym = ir_alloc(g, cap);
    uint32_t *seen = ir_alloc(g, (g->nvals + 1) * sizeof *seen);   /* index + 1 */
    uint32_t nn = g->nnodes;
    for (uint32_t i = 0; i < nn; i++) {
        int ws, axis;
        bool prod = act_product(g, &g->nodes[i], keep_fp32, keep_fp16);
        if (!prod && !candidate(g, &g->nodes[i], keep_fp32, keep_fp16, &ws, &axis))
            continue;
        ValId v2[2] = {g->nodes[i].in[0], g->nodes[i].nin > 1 && prod ? g->nodes[i].in[1]
                                                                        : g->nodes[i].out[0]};
        for (int j = 0; j < 2; j++)
            if (!seen[v2[j]] && !ir_is_const(g, v2[j])) {
                seen[v2[j]] = k + 1;
                sym[k] = prod;
                nm[k++] = ir_val(g, v2[j])->name;
                ir_add_output(g, v2[j]);
            } else if (seen[v2[j]] && prod) {
                sym[seen[v2[j]] - 1] = 1;
            }
    }
    *names = nm;
    *symmetric = sym;
    return k;
}

/* The calibration's parameters of tensor name, or NULL. */
static const PassQParam *find_param(const PassQuant *q, const char *name)
{
    for (uint32_t i = 0; i < q->nact; i++)
        if (strcmp(q->act[i].name, name) == 0)
            return &q->act[i];
    return NULL;
}

/* A foreign ai.onnx node op(in[0..nin)) with one output of type t (left to the
 * decomposition's inference when t is untyped); its output. */
static ValId add_qdq(IrGraph *g, const char *op, const ValId *in, int nin, const IrType *t,
                     int axis, const IrOrigin *o)
{
    IrForeign f = {.op_type = op, .domain = "", .opset = g->onnx_opset < 13 ? 13 : g->onnx_opset};
    IrAttr a = ir_attr_int("axis", axis);
    NodeId id = ir_add_foreign(g, &f, in, nin, 1, &a, axis >= 0 ? 1 : 0, o);
    ValId out = g->nodes[id].out[0];
    if (t->dtype != IR_DT_UNDEF)
        g->vals[out].type = *t;
    return out;
}

/* x -> QuantizeLinear -> DequantizeLinear with the per-tensor parameters p. */
static ValId fake_quant(IrGraph *g, ValId x, const PassQParam *p, const IrOrigin *o)
{
    IrType ts = {.dtype = IR_DT_F32, .rank = 0}, tz = {.dtype = IR_DT_I8, .rank = 0};
    float s = (float)p->scale;
    int8_t zp = (int8_t)p->zero_point;
    ValId in[3] = {x, ir_add_const(g, ir_fresh_name(g, "qscale"), &ts, &s),
                   ir_add_const(g, ir_fresh_name(g, "qzero"), &tz, &zp)};
    IrType tq = *ir_vtype(g, x), tx = tq;
    if (tq.dtype != IR_DT_UNDEF)
        tq.dtype = IR_DT_I8;
    in[0] = add_qdq(g, "QuantizeLinear", in, 3, &tq, -1, o);
    return add_qdq(g, "DequantizeLinear", in, 3, &tx, -1, o);
}

/* The int8 weight of constant w quantized per channel along axis, read through a
 * DequantizeLinear; its statistics go to *st. */
static ValId quant_weight(IrGraph *g, ValId w, int axis, PassQWeight *st, const IrOrigin *o)
{
    const IrType *tw = ir_vtype(g, w);
    int64_t outer = 1, C = tw->dims[axis], inner = 1, n = ir_type_numel(tw);
    for (int i = 0; i < axis; i++)
        outer *= tw->dims[i];
    for (int i = axis + 1; i < tw->rank; i++)
        inner *= tw->dims[i];
    const float *x = ir_val(g, w)->data;
    float *scale = ir_scratch(g, (size_t)C * sizeof *scale);
    int8_t *zp = ir_scratch(g, (size_t)C), *q = ir_scratch(g, (size_t)n);
    for (int64_t ou = 0, i = 0; ou < outer; ou++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t j = 0; j < inner; j++, i++)
                scale[c] = fabsf(x[i]) > scale[c] ? fabsf(x[i]) : scale[c];
    *st = (PassQWeight){.name = ir_val(g, w)->name, .channels = C, .axis = axis,
                        .scale_min = INFINITY, .scale_max = 0};
    for (int64_t c = 0; c < C; c++) {
        scale[c] = scale[c] > 0 && isfinite(scale[c]) ? scale[c] / 127.0f : 1.0f;
        st->scale_min = fmin(st->scale_min, scale[c]);
        st->scale_max = fmax(st->scale_max, scale[c]);
    }
    for (int64_t ou = 0, i = 0; ou < outer; ou++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t j = 0; j < inner; j++, i++) {
                float r = nearbyintf(x[i] / scale[c]);
                q[i] = (int8_t)(r < -127 ? -127 : r > 127 ? 127 : r);
            }
    IrType tq = *tw, ts = {.dtype = IR_DT_F32, .rank = 1, .dims = {C}};
    IrType tz = {.dtype = IR_DT_I8, .rank = 1, .dims = {C}};
    tq.dtype = IR_DT_I8;
    char nm[256];
    snprintf(nm, sizeof nm, "%s_int8", ir_val(g, w)->name);
    ValId in[3] = {ir_add_const(g, ir_fresh_name(g, nm), &tq, q),
                   ir_add_const(g, ir_fresh_name(g, "wscale"), &ts, scale),
                   ir_add_const(g, ir_fresh_name(g, "wzero"), &tz, zp)};
    return add_qdq(g, "DequantizeLinear", in, 3, tw, axis, o);
}

/* The nodes later[0..nlater) (not re-added yet) read x as xq instead: every later
 * reader of a quantized activation sees its int8 values, as in an ONNX QDQ model, so
 * that its producer stores the int8 tensor alone (a layer norm feeding both a
 * projection and a residual add is one kernel with an int8 result, not a float result
 * and a quantizing kernel). */
static void requant_readers(IrNode *later, uint32_t nlater, ValId x, ValId xq)
{
    for (uint32_t j = 0; j < nlater; j++)
        for (int i = 0; !later[j].dead && i < later[j].nin; i++)
            if (later[j].in[i] == x)
                later[j].in[i] = xq;
}


/* Whether node n is an ONNX op that only rearranges or selects the elements of its
 * first input: a per-tensor quantization commutes with it (MaxPool: quantization is
 * monotonic, so the largest quantized value is the quantized largest one). */
static bool view_op(const IrNode *n)
{
    static const char *const ops[] = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                                      "MaxPool"};
    if (n->op != IR_OP_FOREIGN || n->dead || n->nout != 1 || n->nin < 1 ||
        (n->foreign.domain && n->foreign.domain[0]))
        return false;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->foreign.op_type, ops[i]) == 0)
            return true;
    return false;
}

/* The tensor that the chain of view ops ending at x rearranges, each link's result
 * read once (uses: the counts before the pass, values below nv); chain[0..*nc) the
 * links from x's producer up. x itself when it is no such view. */
static ValId view_source(IrGraph *g, ValId x, const uint32_t *uses, uint32_t nv,
                         NodeId *chain, int *nc)
{
    ValId v = x;
    *nc = 0;
    while (*nc < VIEW_CHAIN_MAX && v < nv && (v == x || uses[v] == 1)) {
        NodeId p = ir_val(g, v)->def;
        if (p == IR_NONE || !view_op(&g->nodes[p]) || g->nodes[p].in[0] == IR_NONE ||
            ir_is_const(g, g->nodes[p].in[0]))
            break;
        chain[(*nc)++] = p;
        v = g->nodes[p].in[0];
    }
    return v;
}

/* x quantized with p: when x is a view of another tensor (the heads of attention
 * merged by a transpose and a reshape, a max pooling's input), the tensor is quantized before the views and
 * the views are made again on its quantized form, so that its producer's epilogue
 * quantizes and the views move int8 data. */
static ValId quant_input(IrGraph *g, ValId x, const PassQParam *p, const IrOrigin *o,
                         const uint32_t *uses, uint32_t nv)
{
    NodeId chain[VIEW_CHAIN_MAX];
    int nc;
    ValId v = fake_quant(g, view_source(g, x, uses, nv, chain, &nc), p, o);
    for (int i = nc; i-- > 0;) {
        IrNode c = g->nodes[chain[i]];     /* a copy: adding nodes may move the array */
        ValId in[IR_MAX_RANK + 4];
        if (c.nin > (int)(sizeof in / sizeof in[0]))
            return fake_quant(g, x, p, o);
        memcpy(in, c.in, (size_t)c.nin * sizeof in[0]);
        in[0] = v;
        NodeId id = ir_add_foreign(g, &c.foreign, in, c.nin, 1, c.attrs, c.nattrs, &c.origin);
        v = g->nodes[id].out[0];
        g->vals[v].type = *ir_vtype(g, c.out[0]);
    }
    return v;
}

/* Whether node r is ONNX arithmetic of v with a constant (a bias Add, a scaling Mul or
 * Div): it keeps a value that only float products read float. */
static bool const_arith(IrGraph *g, const IrNode *r, ValId v)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div"};
    if (r->op != IR_OP_FOREIGN || r->nin != 2 || r->nout != 1 ||
        (r->foreign.domain && r->foreign.domain[0]))
        return false;
    ValId o = r->in[0] == v ? r->in[1] : r->in[0];
    if (o == v || !ir_is_const(g, o))
        return false;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(r->foreign.op_type, ops[i]) == 0)
            return true;
    return false;
}

/* Whether live node r reads v. */
static bool reads_val(const IrNode *r, ValId v)
{
    for (int i = 0; !r->dead && i < r->nin; i++)
        if (r->in[i] == v)
            return true;
    return false;
}

/* Whether every reader of v among later[0..nlater) (directly or through view ops and
 * arithmetic with constants) is
 * a float product of two activations (attention's scores and weighted sum), and there
 * is one: quantizing v would only add rounding, its producer stores it as a float for
 * them anyway. */
static bool float_products_only(IrGraph *g, const IrNode *later, uint32_t nlater, ValId v,
                                int depth)
{
    bool any = false;
    for (uint32_t k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == v)
            return false;
    for (uint32_t j = 0; j < nlater; j++) {
        const IrNode *r = &later[j];
        if (!reads_val(r, v))
            continue;
        any = true;
        if ((view_op(r) || const_arith(g, r, v)) && depth < VIEW_CHAIN_MAX) {
            if (!float_products_only(g, later + j + 1, nlater - j - 1, r->out[0], depth + 1))
                return false;
        } else if (r->op != IR_OP_FOREIGN || strcmp(r->foreign.op_type, "MatMul") != 0 ||
                   r->nin != 2 || ir_is_const(g, r->in[0]) || ir_is_const(g, r->in[1])) {
            return false;
        }
    }
    return any;
}

#define MERGE_MAX 8                       /* sibling products merged into one */

/* Whether a reader of v among later[0..nlater) (directly or through view ops and
 * arithmetic with constants) is a product of activations this pass quantizes: v's
 * producer then quantizes it in its epilogue, which the slice of a merged product
 * could not (its kernel stores the float product for all its members). */
static bool feeds_act_product(IrGraph *g, const IrNode *later, uint32_t nlater, ValId v,
                              const PassOptions *opt, int depth)
{
    for (uint32_t j = 0; j < nlater; j++) {
        const IrNode *r = &later[j];
        if (!reads_val(r, v))
            continue;
        if (act_product(g, r, opt->keep_fp32, opt->quant->keep_fp16) &&
            find_param(opt->quant, ir_val(g, v)->name))
            return true;
        if ((view_op(r) || const_arith(g, r, v)) && depth < VIEW_CHAIN_MAX &&
            feeds_act_product(g, later + j + 1, nlater - j - 1, r->out[0], opt, depth + 1))
            return true;
    }
    return false;
}

/* Whether node n is a MatMul this pass quantizes whose weight is a 2-D [K, N] float
 * constant and whose result stays float (nothing after it, later[0..nlater), needs it
 * quantized): a candidate for merge_siblings. */
static bool mergeable(IrGraph *g, const IrNode *n, const IrNode *later, uint32_t nlater,
                      const PassOptions *opt)
{
    int ws, axis;
    if (!candidate(g, n, opt->keep_fp32, opt->quant->keep_fp16, &ws, &axis) ||
        strcmp(n->foreign.op_type, "MatMul") != 0 || n->nin != 2 || n->nout != 1 ||
        ir_vtype(g, n->in[1])->rank != 2 || ir_is_const(g, n->in[0]) ||
        !ir_val(g, n->in[1])->data)
        return false;
    if (feeds_act_product(g, later, nlater, n->out[0], opt, 0))
        return false;
    return !find_param(opt->quant, ir_val(g, n->out[0])->name) ||
           float_products_only(g, later, nlater, n->out[0], 0);
}

/* Re-add group[0..ng) (MatMuls of one input, old node indices) as one MatMul of the
 * concatenated weights [K, N0 + N1 + ...] and a Slice of its last axis per member, which
 * takes over the member's result (and name). */
static void merge_group(IrGraph *g, IrNode *old, const uint32_t *group, int ng)
{
    const IrNode *f = &old[group[0]];
    int64_t K = ir_vtype(g, f->in[1])->dims[0], N = 0, off = 0;
    for (int i = 0; i < ng; i++)
        N += ir_vtype(g, old[group[i]].in[1])->dims[1];
    float *w = ir_scratch(g, (size_t)(K * N) * sizeof *w);
    for (int i = 0; i < ng; i++) {
        ValId wv = old[group[i]].in[1];
        int64_t ni = ir_vtype(g, wv)->dims[1];
        const float *src = ir_val(g, wv)->data;
        for (int64_t r = 0; r < K; r++)
            memcpy(w + r * N + off, src + r * ni, (size_t)ni * sizeof *w);
        off += ni;
    }
    IrType tw = {.dtype = IR_DT_F32, .rank = 2, .dims = {K, N}}, ty = *ir_vtype(g, f->out[0]);
    ValId in[2] = {f->in[0], ir_add_const(g, ir_fresh_name(g, "merged_weight"), &tw, w)};
    NodeId mm = ir_add_foreign(g, &f->foreign, in, 2, 1, f->attrs, f->nattrs, &f->origin);
    ValId y = g->nodes[mm].out[0];
    if (ty.dtype != IR_DT_UNDEF && ty.rank > 0) {
        ty.dims[ty.rank - 1] = N;
        g->vals[y].type = ty;
    }
    IrForeign sl = {.op_type = "Slice", .domain = "", .opset = g->onnx_opset < 13 ? 13
                                                                             : g->onnx_opset};
    off = 0;
    for (int i = 0; i < ng; i++) {
        const IrNode *n = &old[group[i]];
        int64_t ni = ir_vtype(g, n->in[1])->dims[1], end = off + ni, axis = -1;
        ValId si[4] = {y, ir_const_i64s(g, &off, 1), ir_const_i64s(g, &end, 1),
                       ir_const_i64s(g, &axis, 1)};
        NodeId s = ir_add_foreign(g, &sl, si, 4, 1, NULL, 0, &n->origin);
        ValId v = g->nodes[s].out[0], o = n->out[0];
        g->vals[v].type = *ir_vtype(g, o);
        const char *name = ir_val(g, o)->name;
        ir_replace_uses(g, o, v);
        if (strcmp(ir_val(g, v)->name, name) != 0) {   /* the model's name stays */
            ir_set_name(g, o, ir_fresh_name(g, "merged"));
            ir_set_name(g, v, name);
        }
        off = end;
    }
}

/* MatMuls of one activation with constant weights whose results stay float (attention's
 * Q, K and V projections) become one product with the weights side by side: the input is
 * quantized once, the card reads it once, and one kernel with all cores streams the
 * weights (per-channel weight scales and the per-tensor input scale are those of the
 * separate products, so the values are the same). */
static void merge_siblings(IrGraph *g, const PassOptions *opt)
{
    uint32_t nold;
    IrNode *old = ir_rewrite_begin(g, &nold);
    uint8_t *done = ir_scratch(g, nold + 1);
    for (uint32_t i = 0; i < nold; i++) {
        if (old[i].dead || done[i])
            continue;
        uint32_t group[MERGE_MAX];
        int ng = 0;
        if (mergeable(g, &old[i], old + i + 1, nold - i - 1, opt)) {
            group[ng++] = i;
            for (uint32_t j = i + 1; j < nold && ng < MERGE_MAX; j++)
                if (!old[j].dead && !done[j] && old[j].op == IR_OP_FOREIGN &&
                    old[j].nin == 2 && old[j].in[0] == old[i].in[0] &&
                    mergeable(g, &old[j], old + j + 1, nold - j - 1, opt) &&
                    ir_vtype(g, old[j].in[1])->dims[0] == ir_vtype(g, old[i].in[1])->dims[0])
                    group[ng++] = j;
        }
        if (ng < 2) {
            ir_readd_node(g, &old[i]);
            continue;
        }
        for (int k = 0; k < ng; k++)
            done[group[k]] = 1;
        merge_group(g, old, group, ng);
    }
}

/* Give contraction n (re-added here) its Q/DQ pairs; xq caches the quantized form of
 * each activation (a tensor read by several contractions is quantized once); the
 * nodes after n (later[0..nlater)) read it quantized too. */
static void quantize_node(IrGraph *g, const IrNode *n, int ws, int axis, PassQuant *q,
                          ValId *xq, uint32_t nxq, IrNode *later, uint32_t nlater,
                          const uint32_t *uses)
{
    /* an input >= nxq is the Q/DQ result of an earlier contraction: quantized already */
    const PassQParam *px = n->in[0] < nxq ? find_param(q, ir_val(g, n->in[0])->name) : NULL;
    const PassQParam *py = find_param(q, ir_val(g, n->out[0])->name);
    IrNode nd = *n;
    nd.in = ir_scratch(g, (size_t)n->nin * sizeof(ValId));
    memcpy(nd.in, n->in, (size_t)n->nin * sizeof(ValId));
    if (px) {
        if (xq[n->in[0]] == IR_NONE) {
            xq[n->in[0]] = quant_input(g, n->in[0], px, &n->origin, uses, nxq);
            requant_readers(later, nlater, n->in[0], xq[n->in[0]]);
        }
        nd.in[0] = xq[n->in[0]];
    }
    q->w = realloc(q->w, (q->nw + 1) * sizeof *q->w);
    if (!q->w)
        ir_oom(g);
    nd.in[ws] = quant_weight(g, n->in[ws], axis, &q->w[q->nw++], &n->origin);
    ir_readd_node(g, &nd);
    q->nquantized++;
    if (!py || float_products_only(g, later, nlater, n->out[0], 0))
        return;
    ValId y = n->out[0], yq = fake_quant(g, y, py, &n->origin);
    NodeId qnode = ir_val(g, ir_node(g, ir_val(g, yq)->def)->in[0])->def;
    const char *name = ir_val(g, y)->name;
    ir_replace_uses(g, y, yq);
    g->nodes[qnode].in[0] = y;             /* the Quantize itself reads y */
    if (strcmp(ir_val(g, yq)->name, name) != 0) { /* the quantized result keeps the
                                                     model's name (spyrun --compare) */
        ir_set_name(g, y, ir_fresh_name(g, "prequant"));
        ir_set_name(g, yq, name);
    }
}

/* Give product n of two activations (re-added here) int8 Q/DQ pairs on both inputs
 * (symmetric: the calibration gives such operands zero point 0, which makes the product
 * a plain int8 one, without the correction sums that zero points need, products with
 * ones beside it in its kernel, plan_sums.c; quantized above the views that make them,
 * like a contraction's data input); left float when the calibration has no range for
 * one of them. xq, later, uses: as for quantize_node. */
static void quantize_product(IrGraph *g, const IrNode *n, PassQuant *q, ValId *xq,
                             uint32_t nxq, IrNode *later, uint32_t nlater, const uint32_t *uses)
{
    const PassQParam *p[2];
    for (int i = 0; i < 2; i++) {
        p[i] = n->in[i] < nxq ? find_param(q, ir_val(g, n->in[i])->name) : NULL;
        if (!p[i] && n->in[i] < nxq) {
            ir_readd_node(g, n);
            return;
        }
    }
    IrNode nd = *n;
    nd.in = ir_scratch(g, (size_t)n->nin * sizeof(ValId));
    memcpy(nd.in, n->in, (size_t)n->nin * sizeof(ValId));
    for (int i = 0; i < 2; i++) {
        if (!p[i])
            continue;                      /* quantized already by an earlier reader */
        if (xq[n->in[i]] == IR_NONE) {
            xq[n->in[i]] = quant_input(g, n->in[i], p[i], &n->origin, uses, nxq);
            requant_readers(later, nlater, n->in[i], xq[n->in[i]]);
        }
        nd.in[i] = xq[n->in[i]];
    }
    ir_readd_node(g, &nd);
    q->nquantized++;
}

bool pass_quantize(IrGraph *g, const PassOptions *opt)
{
    PassQuant *q = opt->quant;
    if (opt->precision != PASS_PREC_INT8 || !q)
        return true;
    merge_siblings(g, opt);
    uint32_t nold;
    ValId *xq = ir_scratch(g, (size_t)g->nvals * sizeof(ValId));
    memset(xq, 0xff, (size_t)g->nvals * sizeof(ValId));
    uint32_t nv = g->nvals, *uses = ir_use_counts(g);
    IrNode *old = ir_rewrite_begin(g, &nold);
    for (uint32_t i = 0; i < nold; i++) {
        int ws, axis;
        if (old[i].dead)
            continue;
        if (candidate(g, &old[i], opt->keep_fp32, q->keep_fp16, &ws, &axis))
            quantize_node(g, &old[i], ws, axis, q, xq, nv, old + i + 1, nold - i - 1, uses);
        else if (act_product(g, &old[i], opt->keep_fp32, q->keep_fp16))
            quantize_product(g, &old[i], q, xq, nv, old + i + 1, nold - i - 1, uses);
        else
            ir_readd_node(g, &old[i]);
    }
    if (!q->nquantized && g->diag)
        ir_diag_warn(g->diag, "--precision=int8: no contraction to quantize (an ONNX MatMul, "
                              "Gemm or Conv with a constant float32 weight, not kept)");
    return !ir_failed(g);
}
