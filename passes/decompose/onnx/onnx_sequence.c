/* onnx_sequence.c: ONNX sequences and optionals, resolved at compile time.
 *
 * A sequence value is a compile-time list of tensor values: the decomposition keeps a
 * side table (DecSeqTab) from a stand-in value id to the ids of its elements, so that
 * every sequence operator becomes plain data movement (or nothing at all) and no
 * sequence reaches later passes. An optional holding a value is that value itself; an
 * empty optional is a stand-in with no elements. Stand-ins are the untyped outputs of
 * dead marker nodes: they never reach the device. A graph output that is a sequence
 * becomes one output per element, named "NAME[0]", "NAME[1]", ... (an empty optional or
 * an empty sequence: none), see dec_seq_expand_outputs. Positions must be compile-time
 * constants.
 */
#include <stdio.h>
#include <string.h>

#include "onnx.h"

#define SEQ_MAX_ITEMS 65535               /* most elements one sequence may hold */

typedef struct {
    bool none;                            /* an empty optional (no elements) */
    IrDType elem;                         /* element dtype, IR_DT_UNDEF if unknown */
    uint32_t n;                           /* elements */
    const ValId *items;
} SeqEnt;

struct DecSeqTab {
    IrGraph *g;
    SeqEnt *ents;
    uint32_t nents, capents;
    uint32_t *slot;                       /* value id -> entry index + 1 (0: none) */
    uint32_t nslot;
    uint64_t charged;                     /* bodies inlined so far (dec_seq_charge) */
};

/* An empty table living in g's scratch arena (it ends with the decomposition). */
DecSeqTab *dec_seq_new(IrGraph *g)
{
    DecSeqTab *t = ir_scratch(g, sizeof *t);
    t->g = g;
    return t;
}

/* Entry of v, or NULL. */
static const SeqEnt *seq_find(const DecSeqTab *t, ValId v)
{
    if (!t || v == IR_NONE || v >= t->nslot || !t->slot[v])
        return NULL;
    return &t->ents[t->slot[v] - 1];
}

bool dec_seq_known(const DecSeqTab *t, ValId v) { return seq_find(t, v) != NULL; }

bool dec_seq_items(const DecSeqTab *t, ValId v, const ValId **items, uint32_t *n)
{
    const SeqEnt *e = seq_find(t, v);
    if (!e || e->none)
        return false;
    *items = e->items;
    *n = e->n;
    return true;
}

/* Record entry e for value v (arrays grow by doubling in the scratch arena). */
static void seq_put(DecSeqTab *t, ValId v, const SeqEnt *e)
{
    IrGraph *g = t->g;
    if (t->nents == t->capents) {
        uint32_t cap = t->capents ? 2 * t->capents : 16;
        SeqEnt *ne = ir_scratch(g, cap * sizeof *ne);
        if (t->nents)
            memcpy(ne, t->ents, t->nents * sizeof *ne);
        t->ents = ne;
        t->capents = cap;
    }
    if (v >= t->nslot) {
        uint32_t cap = g->nvals > 2 * t->nslot ? g->nvals : 2 * t->nslot;
        uint32_t *ns = ir_scratch(g, (size_t)cap * sizeof *ns);
        if (t->nslot)
            memcpy(ns, t->slot, t->nslot * sizeof *ns);
        t->slot = ns;
        t->nslot = cap;
    }
    t->ents[t->nents++] = *e;
    t->slot[v] = t->nents;
}

/* A fresh untyped value to stand for a sequence or optional: the output of a marker
 * node that is dead at once (it never reaches a later pass). */
static ValId stand_in(DecCtx *c)
{
    IrForeign f = {"SequenceValue", "", c->opset};
    NodeId id = ir_add_foreign(c->g, &f, NULL, 0, 1, NULL, 0, c->o);
    IrNode *n = ir_node(c->g, id);
    n->dead = true;
    return n->out[0];
}

ValId dec_seq_make(DecCtx *c, const ValId *items, uint32_t n, IrDType elem)
{
    IR_ASSERT(c->seqs != NULL);
    if (n > SEQ_MAX_ITEMS) {
        dec_err(c, "unsupported: a sequence of more than %d elements", SEQ_MAX_ITEMS);
        return IR_NONE;
    }
    for (uint32_t i = 0; i < n; i++) {
        IrDType t = dec_ty(c, items[i])->dtype;
        if (elem == IR_DT_UNDEF)
            elem = t;
        if (t != elem) {
            dec_err(c, "sequence element %u is %s, the sequence holds %s", i,
                    ir_dtype_name(t), ir_dtype_name(elem));
            return IR_NONE;
        }
    }
    ValId *copy = ir_scratch(c->g, ((size_t)n + 1) * sizeof *copy);
    if (n)
        memcpy(copy, items, n * sizeof *copy);
    SeqEnt e = {.none = false, .elem = elem, .n = n, .items = copy};
    ValId v = stand_in(c);
    seq_put(c->seqs, v, &e);
    return v;
}

ValId dec_optional_none(DecCtx *c)
{
    IR_ASSERT(c->seqs != NULL);
    SeqEnt e = {.none = true, .elem = IR_DT_UNDEF};
    ValId v = stand_in(c);
    seq_put(c->seqs, v, &e);
    return v;
}

/* Operators that accept sequence or optional inputs (the others are refused). */
static const char *const seq_aware[] = {
    "SequenceInsert", "SequenceErase", "SequenceAt", "SequenceLength", "ConcatFromSequence",
    "SequenceMap", "Optional", "OptionalHasElement", "OptionalGetElement", "If", "Loop",
    "Scan", "Identity",
};

bool dec_seq_check_inputs(DecCtx *c)
{
    const char *op = c->n->foreign.op_type ? c->n->foreign.op_type : "";
    for (size_t k = 0; k < sizeof seq_aware / sizeof seq_aware[0]; k++)
        if (!strcmp(op, seq_aware[k]))
            return true;
    for (int i = 0; i < c->n->nin; i++) {
        if (!dec_seq_known(c->seqs, c->n->in[i]))
            continue;
        dec_err(c, "unsupported: input %d ('%s') is a sequence or an optional, which %s "
                "does not take", i, ir_val(c->g, c->n->in[i])->name, op);
        return false;
    }
    return true;
}

/* Whether x may not simply be renamed to become element output "NAME[i]": it is not
 * an internal value, or it is already a graph output (of the list being rebuilt, or
 * one of the old outputs old[0..nold)). */
static bool elem_needs_copy(IrGraph *g, ValId x, const ValId *old, uint32_t nold)
{
    if (g->vals[x].kind != IR_VAL_ACT)
        return true;
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == x)
            return true;
    for (uint32_t i = 0; i < nold; i++)
        if (old[i] == x)
            return true;
    return false;
}

/* Append the elements of sequence output v (entry e) as outputs "NAME[i]"; an element
 * that cannot take that name is copied (a reshape to its own shape) first. */
static void expand_output(IrGraph *g, ValId v, const SeqEnt *e, const ValId *old, uint32_t nold)
{
    const char *name = g->vals[v].name;   /* names live in the arena, never moved */
    IrOrigin o = {name, "Identity", NULL};
    for (uint32_t k = 0; !e->none && k < e->n; k++) {
        ValId x = e->items[k];
        char nm[600];
        snprintf(nm, sizeof nm, "%.580s[%u]", name, k);
        if (elem_needs_copy(g, x, old, nold)) {
            const IrType *t = ir_vtype(g, x);
            x = ir_reshape(g, x, t->dims, t->rank, &o);
        }
        ir_set_name(g, x, nm);
        ir_add_output(g, x);
    }
}

bool dec_seq_expand_outputs(IrGraph *g, const DecSeqTab *t)
{
    uint32_t nout = g->noutputs, nvis = g->noutputs - g->nhidden;
    bool any = false;
    for (uint32_t i = 0; i < nvis; i++)
        any |= dec_seq_known(t, g->outputs[i]);
    if (!any)
        return true;
    ValId *old = ir_scratch(g, (size_t)nout * sizeof *old);
    memcpy(old, g->outputs, (size_t)nout * sizeof *old);
    g->noutputs = g->nhidden = 0;
    for (uint32_t i = 0; i < nvis; i++) {
        const SeqEnt *e = seq_find(t, old[i]);
        if (e)
            expand_output(g, old[i], e, old + i + 1, nvis - i - 1);
        else
            ir_add_output(g, old[i]);
    }
    for (uint32_t i = nvis; i < nout; i++)
        ir_add_hidden_output(g, old[i]);
    return !ir_failed(g);
}

bool dec_seq_len_differs(const DecSeqTab *t, ValId a, ValId b)
{
    const SeqEnt *x = seq_find(t, a), *y = seq_find(t, b);
    if (!x && !y)
        return false;
    return !x || !y || x->none != y->none || x->n != y->n;
}

bool dec_seq_charge(DecSeqTab *t, uint64_t limit)
{
    return !t || ++t->charged <= limit;
}

/* ---- sequence operators ---- */

/* Input i as a sequence: its elements and element dtype; reports otherwise. */
static bool seq_input(DecCtx *c, int i, const SeqEnt **out)
{
    const SeqEnt *e = seq_find(c->seqs, dec_in(c, i));
    if (!e || e->none) {
        dec_err(c, "input %d is not a sequence known at compile time", i);
        return false;
    }
    *out = e;
    return true;
}

/* Constant position input i (omitted: dflt) for a sequence of n elements, normalised;
 * valid positions are [-n, n-1], or [-n, n] when at_end is allowed. */
static bool seq_pos(DecCtx *c, int i, uint32_t n, bool at_end, int64_t dflt, int64_t *pos)
{
    ValId x = dec_in(c, i);
    if (x == IR_NONE) {
        *pos = dflt;
        return true;
    }
    if (!ir_is_const(c->g, x)) {
        dec_dynamic_err(c, x, "position");
        return false;
    }
    const IrType *t = dec_ty(c, x);
    if (!ir_dtype_is_int(t->dtype) || dec_numel(t) != 1) {
        dec_err(c, "position must be one integer");
        return false;
    }
    int64_t p = dec_load_int(t->dtype, ir_val(c->g, x)->data, 0);
    int64_t hi = at_end ? (int64_t)n : (int64_t)n - 1;
    if (p < -(int64_t)n || p > hi) {
        dec_err(c, "position %lld is out of range for a sequence of %u elements",
                (long long)p, n);
        return false;
    }
    *pos = p < 0 ? p + n : p;
    return true;
}

/* SequenceInsert: a new list with the tensor at the position (default: the end). */
static bool seq_insert(DecCtx *c)
{
    const SeqEnt *s;
    ValId x = dec_in(c, 1);
    int64_t pos;
    if (!seq_input(c, 0, &s) || !seq_pos(c, 2, s->n, true, s->n, &pos))
        return false;
    if (x == IR_NONE || dec_seq_known(c->seqs, x)) {
        dec_err(c, "SequenceInsert needs a tensor to insert");
        return false;
    }
    ValId *items = ir_scratch(c->g, ((size_t)s->n + 1) * sizeof *items);
    memcpy(items, s->items, (size_t)pos * sizeof *items);
    items[pos] = x;
    memcpy(items + pos + 1, s->items + pos, (s->n - (size_t)pos) * sizeof *items);
    c->out[0] = dec_seq_make(c, items, s->n + 1, s->elem);
    return c->out[0] != IR_NONE;
}

/* SequenceErase: a new list without the element at the position (default: last). */
static bool seq_erase(DecCtx *c)
{
    const SeqEnt *s;
    int64_t pos;
    if (!seq_input(c, 0, &s))
        return false;
    if (s->n == 0) {
        dec_err(c, "SequenceErase of an empty sequence");
        return false;
    }
    if (!seq_pos(c, 1, s->n, false, (int64_t)s->n - 1, &pos))
        return false;
    ValId *items = ir_scratch(c->g, (size_t)s->n * sizeof *items);
    memcpy(items, s->items, (size_t)pos * sizeof *items);
    memcpy(items + pos, s->items + pos + 1, (s->n - (size_t)pos - 1) * sizeof *items);
    c->out[0] = dec_seq_make(c, items, s->n - 1, s->elem);
    return c->out[0] != IR_NONE;
}

/* SequenceConstruct, SequenceEmpty, SequenceInsert, SequenceErase, SequenceAt,
 * SequenceLength. */
bool dec_sequence_op(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    const SeqEnt *s;
    int64_t pos;
    if (!strcmp(op, "SequenceEmpty")) {
        c->out[0] = dec_seq_make(c, NULL, 0, (IrDType)dec_ai(c, "dtype", IR_DT_F32));
    } else if (!strcmp(op, "SequenceConstruct")) {
        for (int i = 0; i < c->n->nin; i++) {
            if (dec_in(c, i) == IR_NONE || dec_seq_known(c->seqs, dec_in(c, i))) {
                dec_err(c, "SequenceConstruct input %d must be a tensor", i);
                return false;
            }
        }
        c->out[0] = dec_seq_make(c, c->n->in, c->n->nin, IR_DT_UNDEF);
    } else if (!strcmp(op, "SequenceInsert")) {
        return seq_insert(c);
    } else if (!strcmp(op, "SequenceErase")) {
        return seq_erase(c);
    } else if (!strcmp(op, "SequenceAt")) {
        if (!seq_input(c, 0, &s))
            return false;
        if (dec_in(c, 1) == IR_NONE) {
            dec_err(c, "SequenceAt needs a position");
            return false;
        }
        if (!seq_pos(c, 1, s->n, false, 0, &pos))
            return false;
        c->out[0] = s->items[pos];
    } else if (!strcmp(op, "SequenceLength")) {
        if (!seq_input(c, 0, &s))
            return false;
        c->out[0] = dec_scalar(c->g, IR_DT_I64, (double)s->n);
    } else {
        IR_ASSERT(!"dec_sequence_op: unexpected operator");
    }
    return c->out[0] != IR_NONE;
}

/* ConcatFromSequence: concatenate the elements along axis, or stack them along a new
 * axis when new_axis=1. */
bool dec_concat_from_sequence(DecCtx *c)
{
    const SeqEnt *s;
    if (!seq_input(c, 0, &s))
        return false;
    if (!dec_has_attr(c, "axis")) {
        dec_err(c, "attribute 'axis' is required");
        return false;
    }
    if (s->n == 0) {
        dec_err(c, "ConcatFromSequence of an empty sequence");
        return false;
    }
    bool stack = dec_ai(c, "new_axis", 0) != 0;
    int r = dec_ty(c, s->items[0])->rank, axis;
    if (!dec_axis(c, dec_ai(c, "axis", 0), r + (stack ? 1 : 0), &axis))
        return false;
    ValId *xs = ir_scratch(c->g, (size_t)s->n * sizeof *xs);
    for (uint32_t i = 0; i < s->n; i++) {
        const IrType *t = dec_ty(c, s->items[i]);
        if (t->rank != r) {
            dec_err(c, "sequence element %u has rank %d, element 0 has rank %d", i, t->rank, r);
            return false;
        }
        xs[i] = s->items[i];
        if (stack) {
            int64_t dims[IR_MAX_RANK];
            if (r + 1 > IR_MAX_RANK) {
                dec_err(c, "rank %d is too large to stack", r);
                return false;
            }
            for (int k = 0, j = 0; k <= r; k++)
                dims[k] = k == axis ? 1 : t->dims[j++];
            xs[i] = dec_reshape(c, xs[i], dims, r + 1);
        }
    }
    c->out[0] = dec_concat(c, xs, (int)s->n, axis);
    return !ir_failed(c->g);
}

/* Sizes of the SplitToSequence pieces along an axis of length d: from the split
 * input (scalar: equal chunks, the last may be shorter; 1-D: given sizes) or ones.
 * Returns the count, or -1 after reporting. */
static int64_t split_sizes(DecCtx *c, int64_t d, int64_t **sizes)
{
    ValId sp = dec_in(c, 1);
    int64_t n = d;
    if (sp == IR_NONE) {
        *sizes = ir_scratch(c->g, ((size_t)d + 1) * sizeof **sizes);
        for (int64_t i = 0; i < d; i++)
            (*sizes)[i] = 1;
        return d;
    }
    if (!ir_is_const(c->g, sp)) {
        dec_dynamic_err(c, sp, "split");
        return -1;
    }
    const IrType *t = dec_ty(c, sp);
    const void *data = ir_val(c->g, sp)->data;
    if (!ir_dtype_is_int(t->dtype) || t->rank > 1) {
        dec_err(c, "split must be an integer scalar or 1-D tensor");
        return -1;
    }
    if (t->rank == 0) {
        int64_t k = dec_load_int(t->dtype, data, 0);
        if (k <= 0) {
            dec_err(c, "split size %lld must be positive", (long long)k);
            return -1;
        }
        n = (d + k - 1) / k;
        *sizes = ir_scratch(c->g, ((size_t)n + 1) * sizeof **sizes);
        for (int64_t i = 0; i < n; i++)
            (*sizes)[i] = i < n - 1 ? k : d - k * (n - 1);
        return n;
    }
    n = t->dims[0];
    *sizes = ir_scratch(c->g, ((size_t)n + 1) * sizeof **sizes);
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
        (*sizes)[i] = dec_load_int(t->dtype, data, i);
        if ((*sizes)[i] < 0 || (*sizes)[i] > d) {
            dec_err(c, "split size %lld is out of range", (long long)(*sizes)[i]);
            return -1;
        }
        sum += (*sizes)[i];
    }
    if (sum != d) {
        dec_err(c, "split sizes add up to %lld, the axis has %lld", (long long)sum,
                (long long)d);
        return -1;
    }
    return n;
}

/* SplitToSequence: slices along axis; without a split input, pieces of one that
 * lose the axis unless keepdims=1. */
bool dec_split_to_sequence(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int axis;
    if (t->rank < 1) {
        dec_err(c, "SplitToSequence of a scalar");
        return false;
    }
    if (!dec_axis(c, dec_ai(c, "axis", 0), t->rank, &axis))
        return false;
    int64_t d = t->dims[axis], *sizes;
    if (d > SEQ_MAX_ITEMS) {
        dec_err(c, "unsupported: splitting an axis of %lld into a sequence", (long long)d);
        return false;
    }
    int64_t n = split_sizes(c, d, &sizes);
    if (n < 0)
        return false;
    bool squeeze = dec_in(c, 1) == IR_NONE && dec_ai(c, "keepdims", 1) == 0;
    ValId *items = ir_scratch(c->g, ((size_t)n + 1) * sizeof *items);
    int64_t start = 0;
    for (int64_t i = 0; i < n; i++) {
        items[i] = dec_slice_axis(c, x, axis, start, 1, sizes[i]);
        start += sizes[i];
        if (squeeze) {
            int64_t dims[IR_MAX_RANK];
            for (int k = 0, j = 0; k < t->rank; k++)
                if (k != axis)
                    dims[j++] = t->dims[k];
            items[i] = dec_reshape(c, items[i], dims, t->rank - 1);
        }
    }
    if (ir_failed(c->g))
        return false;
    c->out[0] = dec_seq_make(c, items, (uint32_t)n, t->dtype);
    return c->out[0] != IR_NONE;
}

/* Optional (wraps a value, or makes an empty optional), OptionalHasElement,
 * OptionalGetElement: an optional holding a value is that value. */
bool dec_optional_op(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    ValId x = dec_in(c, 0);
    const SeqEnt *e = seq_find(c->seqs, x);
    bool empty = x == IR_NONE || (e && e->none);
    if (!strcmp(op, "Optional")) {
        c->out[0] = x == IR_NONE ? dec_optional_none(c) : x;
    } else if (!strcmp(op, "OptionalHasElement")) {
        c->out[0] = dec_scalar(c->g, IR_DT_BOOL, empty ? 0 : 1);
    } else {
        if (empty) {
            dec_err(c, "OptionalGetElement of an empty optional");
            return false;
        }
        c->out[0] = x;
    }
    return true;
}
