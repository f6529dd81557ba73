/* fe_onnx_seqin.c: main-graph inputs typed as ONNX sequences or optionals.
 *
 * An ahead-of-time compile with static shapes fixes such an input's structure: how
 * many tensors a sequence holds and their shapes, whether an optional holds a value
 * (spyrec --input-seq NAME=FILE or --input-shape NAME=N:D0xD1,...|none, an FeSeq).
 * The input then becomes one tensor input per element, named "NAME[0]", "NAME[1]",
 * ..., and the ONNX value NAME is rebuilt from them by a FOREIGN node that the
 * decomposition resolves at compile time like any intermediate sequence:
 *
 *   sequence(tensor)            SequenceConstruct(NAME[0], ...)  or SequenceEmpty
 *   optional(tensor)            Optional(NAME[0])                or Optional()
 *   optional(sequence(tensor))  SequenceConstruct(NAME[0], ...)  or Optional()
 */
#include <stdio.h>
#include <string.h>

#include "fe_onnx.h"

typedef enum { SEQ_IN_SEQUENCE, SEQ_IN_OPT_TENSOR, SEQ_IN_OPT_SEQUENCE } SeqInKind;

static const char *const kind_names[] = {"sequence", "optional tensor", "optional sequence"};

/* The kind of a sequence/optional type and its element tensor type; false if the type
 * is none of the three supported shapes (a map, a sequence of sequences, ...). */
static bool seq_in_kind(const Onnx__TypeProto *tp, SeqInKind *kind,
                        const Onnx__TypeProto__Tensor **tt)
{
    const Onnx__TypeProto *e = NULL;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && tp->sequence_type) {
        *kind = SEQ_IN_SEQUENCE;
        e = tp->sequence_type->elem_type;
    } else if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type) {
        *kind = SEQ_IN_OPT_TENSOR;
        e = tp->optional_type->elem_type;
        if (e && e->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && e->sequence_type) {
            *kind = SEQ_IN_OPT_SEQUENCE;
            e = e->sequence_type->elem_type;
        }
    }
    if (!e || e->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !e->tensor_type)
        return false;
    *tt = e->tensor_type;
    return true;
}

bool fe_seq_input_type(const Onnx__ValueInfoProto *vi)
{
    SeqInKind k;
    const Onnx__TypeProto__Tensor *tt;
    return vi->type && seq_in_kind(vi->type, &k, &tt);
}

/* The IR type of element i (shape from the spec) after checking it against the declared
 * element type tt; false after reporting a mismatch. */
static bool seq_elem_type(FeScope *s, const char *nm, const Onnx__TypeProto__Tensor *tt,
                          const FeSeq *sq, int i, IrType *t)
{
    IrDiag *d = s->cx->diag;
    const FeTensor *e = &sq->items[i];
    char msg[256];
    size_t nbytes;
    IrDType dt = tt->has_elem_type ? fe_onnx_dtype(tt->elem_type) : IR_DT_UNDEF;
    if (dt == IR_DT_UNDEF || dt == IR_DT_STRING) {
        ir_diag_error(d, "input '%s': unsupported element type of the sequence", nm);
        return false;
    }
    if (e->dtype != IR_DT_UNDEF && e->dtype != dt) {
        ir_diag_error(d, "input '%s': element %d is %s, the model declares %s", nm, i,
                      ir_dtype_name(e->dtype), ir_dtype_name(dt));
        return false;
    }
    bool ok = !tt->shape || tt->shape->n_dim == (size_t)e->rank;
    for (int k = 0; ok && tt->shape && k < e->rank; k++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[k];
        ok = dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
             dm->dim_value == e->dims[k];
    }
    if (!ok) {
        ir_diag_error(d, "input '%s': the shape of element %d does not match the declared "
                      "element shape", nm, i);
        return false;
    }
    t->dtype = dt;
    if (!fe_check_dims(e->dims, (size_t)e->rank, dt, t->dims, &t->rank, &nbytes, msg,
                       sizeof msg)) {
        ir_diag_error(d, "input '%s': element %d: %s", nm, i, msg);
        return false;
    }
    return true;
}

/* Check that the structure sq fits an input of this kind; reports why not. */
static bool seq_fits(FeScope *s, const char *nm, SeqInKind kind, const FeSeq *sq)
{
    if (kind == SEQ_IN_OPT_TENSOR && !sq->none && sq->n != 1) {
        ir_diag_error(s->cx->diag, "input '%s' is an optional tensor: it holds one tensor or "
                      "none, not %d", nm, sq->n);
        return false;
    }
    if (sq->n > UINT16_MAX) {
        ir_diag_error(s->cx->diag, "input '%s': unsupported: a sequence of %d tensors", nm,
                      sq->n);
        return false;
    }
    return true;
}

/* The FOREIGN node that rebuilds the ONNX value nm from its element inputs (see the
 * table at the top); binds nm. */
static void seq_rebuild(FeScope *s, const char *nm, SeqInKind kind, const FeSeq *sq,
                        const ValId *items, IrDType dt)
{
    IrGraph *g = s->g;
    const char *op = "Optional";       /* an optional tensor, or no value */
    IrAttr at[1];
    int nat = 0, nin = sq->none ? 0 : sq->n;
    if (kind == SEQ_IN_SEQUENCE || (kind == SEQ_IN_OPT_SEQUENCE && !sq->none)) {
        op = nin ? "SequenceConstruct" : "SequenceEmpty";
        if (!nin)
            at[nat++] = ir_attr_int("dtype", dt);
    }
    IrOrigin o = {ir_strdup(g, nm), op, NULL};
    const char *outname = nm;
    fe_emit_foreign(s, op, "", s->opset, items, nin, &outname, 1, at, nat, &o);
}

bool fe_seq_input(FeScope *s, const Onnx__ValueInfoProto *vi, const FeInputSpec *sp)
{
    IrDiag *d = s->cx->diag;
    const char *nm = vi->name;
    SeqInKind kind;
    const Onnx__TypeProto__Tensor *tt;
    if (!vi->type || !seq_in_kind(vi->type, &kind, &tt)) {
        ir_diag_error(d, "input '%s': unsupported type (only sequences of tensors, optional "
                      "tensors and optional sequences of tensors)", nm);
        return false;
    }
    if (!sp || !sp->seq) {
        ir_diag_error(d, "unsupported: %s input '%s' has no fixed structure (an ahead-of-time "
                      "compile fixes %s: give --input-seq %s=FILE or --input-shape %s=%s)",
                      kind_names[kind], nm,
                      kind == SEQ_IN_OPT_TENSOR ? "whether it holds a tensor and its shape"
                                                : "its length and element shapes",
                      nm, nm, kind == SEQ_IN_OPT_TENSOR ? "none|D0xD1..." : "N:D0xD1,D0xD1,...");
        return false;
    }
    const FeSeq *sq = sp->seq;
    if (!seq_fits(s, nm, kind, sq))
        return false;
    IrDType dt = tt->has_elem_type ? fe_onnx_dtype(tt->elem_type) : IR_DT_UNDEF;
    ValId *items = ir_alloc(s->g, ((size_t)sq->n + 1) * sizeof *items);
    for (int i = 0; !sq->none && i < sq->n; i++) {
        IrType t = {0};
        char buf[600];
        if (!seq_elem_type(s, nm, tt, sq, i, &t))
            return false;
        snprintf(buf, sizeof buf, "%.580s[%d]", nm, i);
        items[i] = ir_add_input(s->g, buf, &t);
    }
    seq_rebuild(s, nm, kind, sq, items, dt);
    return true;
}
