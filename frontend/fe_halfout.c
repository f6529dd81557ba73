/* fe_halfout.c: which graph outputs the model itself computes in half precision.
 *
 * Converters that turn a model to float16 while keeping its interface in float32
 * (onnxconverter-common's keep_io_types, published "fp16" models) end each output with
 * a Cast from float16 (or bfloat16) to float32. Such an output holds a half value: it
 * carries about 3 significant digits, whatever the dtype of the file, so the reference
 * and any other implementation (onnxruntime's included) agree with it to half
 * precision, not to the float32 tolerance of a check. spyrec lists those outputs in
 * the bundle's META ("half_outputs=0,2"), and spyrun --check judges them as it judges
 * float16 outputs (cli_metric_half_defaults), saying so; so does the reference runner
 * of make check (tests/tools/irrun.c).
 *
 * An output counts when, going back through ops that only move or reshape values
 * (Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, their core forms), its
 * value comes from a conversion of a float16 or bfloat16 value that the model computed
 * (not an input or a constant: those convert exactly, and keep the float32 check).
 */
#include <string.h>

#include "fe.h"

/* Whether node n only moves its first input's values (their bits unchanged). */
static bool moves_only(const IrNode *n)
{
    static const char *const ops[] = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                      "Transpose", "aten.view.default",
                                      "aten.reshape.default", "aten.permute.default",
                                      "aten.squeeze.dim", "aten.unsqueeze.default",
                                      "aten.clone.default"};
    if (n->op == IR_OP_RESHAPE || n->op == IR_OP_TRANSPOSE)
        return true;
    for (size_t i = 0; n->op == IR_OP_FOREIGN && i < sizeof ops / sizeof ops[0]; i++)
        if (n->foreign.op_type && !strcmp(n->foreign.op_type, ops[i]))
            return true;
    return false;
}

/* Whether node n converts its first input to another dtype. */
static bool converts(const IrNode *n)
{
    static const char *const ops[] = {"Cast", "CastLike", "aten._to_copy.default",
                                      "aten.to.dtype", "prims.convert_element_type.default"};
    if (n->op == IR_OP_CAST)
        return true;
    for (size_t i = 0; n->op == IR_OP_FOREIGN && i < sizeof ops / sizeof ops[0]; i++)
        if (n->foreign.op_type && !strcmp(n->foreign.op_type, ops[i]))
            return true;
    return false;
}

/* The dtype of value v of g as imported: its type's when known, else (types are
 * inferred later) a conversion's target, else that of the producer's first input (float
 * ops keep their operands' dtype); IR_DT_UNDEF when none says. */
static IrDType val_dtype(IrGraph *g, ValId v, int depth)
{
    const IrValue *x = ir_val(g, v);
    if (x->type.dtype != IR_DT_UNDEF || x->def == IR_NONE || depth > 64)
        return x->type.dtype;
    const IrNode *n = ir_node(g, x->def);
    if (n->foreign.op_type && !strcmp(n->foreign.op_type, "CastLike") && n->nin >= 2 &&
        n->in[1] != IR_NONE)
        return val_dtype(g, n->in[1], depth + 1);
    if (converts(n))
        return (IrDType)ir_attr_get_int(n, "to", IR_DT_UNDEF);
    return n->nin >= 1 && n->in[0] != IR_NONE ? val_dtype(g, n->in[0], depth + 1) : IR_DT_UNDEF;
}

/* The value v of g comes from, past the ops that only move values (v itself when its
 * producer does something else, or when it is a graph input or constant). */
static ValId skip_moves(IrGraph *g, ValId v)
{
    for (int hops = 0; hops < 64; hops++) {
        NodeId def = ir_val(g, v)->def;
        if (def == IR_NONE)
            return v;
        const IrNode *n = ir_node(g, def);
        if (!moves_only(n) || n->nin < 1 || n->in[0] == IR_NONE)
            return v;
        v = n->in[0];
    }
    return v;
}

/* Whether value v of g is a float value converted from a half one that the model
 * computed (a half input or constant converted is exact: the float32 tolerance stays). */
static bool from_half(IrGraph *g, ValId v)
{
    NodeId def = ir_val(g, skip_moves(g, v))->def;
    if (def == IR_NONE)
        return false;
    const IrNode *n = ir_node(g, def);
    if (!converts(n) || n->nin < 1 || n->in[0] == IR_NONE)
        return false;
    IrDType src = val_dtype(g, n->in[0], 0);
    return (src == IR_DT_F16 || src == IR_DT_BF16) &&
           ir_val(g, skip_moves(g, n->in[0]))->def != IR_NONE;
}

uint64_t fe_half_outputs(IrGraph *g)
{
    uint64_t mask = 0;
    for (uint32_t j = 0; j < g->noutputs && j < 64; j++)
        if (ir_vtype(g, g->outputs[j])->dtype == IR_DT_F32 && from_half(g, g->outputs[j]))
            mask |= 1ull << j;
    return mask;
}
