/* dec.h: private interface of the decomposition pass (passes/decompose/): the
 * driver (decompose.c), the helpers every handler uses (dec_util.c) and the two
 * frontends' handlers (onnx/, declared in onnx/onnx.h; aten/, in aten/aten.h).
 *
 * pass_decompose walks the graph in topological order and hands every FOREIGN node
 * to the handler registered for it in the dispatch table of its frontend
 * (onnx/onnx_table.c, aten/aten_table.c). A handler reads its inputs (already core
 * values with known types), builds core nodes with the ir_* builders or dec_op(), and
 * stores one value per output in c->out[]. Constant inputs fold while building
 * (g->fold_consts is set), so shape subgraphs turn into constants before the node
 * that needs them. Handlers report user errors with dec_err() (which names the node)
 * and return false.
 */
#ifndef SPYREC_DEC_H
#define SPYREC_DEC_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

#define DEC_MAX_OUT 64                    /* most outputs one foreign node may have */

typedef struct {
    IrGraph *g;
    const IrNode *n;                      /* the foreign node; inputs already remapped */
    const IrOrigin *o;                    /* its origin: given to new nodes and errors */
    int64_t opset;                        /* imported version of the node's domain */
    const uint32_t *uses;                 /* use counts of the values before the pass */
    uint32_t nuses;                       /* entries in uses */
    ValId out[DEC_MAX_OUT];               /* results, one per output (IR_NONE: not made) */
    struct DecSeqTab *seqs;               /* compile-time sequences (onnx_sequence.c) */
    IrGraph *outg;                        /* graph of n->out and uses[] (NULL: g); a subgraph
                                             while its body is being inlined */
    const char *const *in_names;          /* names n->in had at import (NULL: current names);
                                             binds the values subgraphs capture */
    struct DecQdqTab *qdq;                /* dequantized values (onnx/onnx_qdq.c; NULL: none) */
} DecCtx;

typedef bool (*DecFn)(DecCtx *c);

/* halfwiden.c: after a handler built nodes [first, g->nnodes) (values from
 * first_val on), make them compute in float32 when they work on float16/bfloat16
 * values; out[nout] (the handler's results) are replaced by their values rounded
 * back to the declared half dtypes. */
void pass_halfwiden_group(IrGraph *g, uint32_t first, ValId first_val, ValId *out, int nout);

/* ---- dec_util.c: helpers shared by the handlers ---- */
void dec_err(DecCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ValId dec_in(const DecCtx *c, int i);     /* input i, IR_NONE if absent or omitted */
/* A handler's temporary v on the way to its result, given back (ir_const_free) once the
 * result folded to a constant, so that only the handler's own folds read v (a weight's
 * int32 or float copy on the way to its sums or dequantized value: 4 bytes a parameter
 * each, kept to the end of the compile otherwise). Only a v the handler made (v >=
 * made_from, the first value id of the handler's) and that is not the result itself (a
 * builder may return its operand); a value it was given stays. */
void dec_drop_temp(DecCtx *c, ValId v, ValId result, ValId made_from);
bool dec_need_in(DecCtx *c, int i);       /* input i is present; reports otherwise */
const IrType *dec_ty(const DecCtx *c, ValId v);
bool dec_out_used(const DecCtx *c, int i);/* is output i consumed or a graph output */
int64_t dec_ai(const DecCtx *c, const char *name, int64_t dflt);
double dec_af(const DecCtx *c, const char *name, double dflt);
const char *dec_as(const DecCtx *c, const char *name, const char *dflt);
int dec_aints(const DecCtx *c, const char *name, const int64_t **out); /* -1 if absent */
bool dec_has_attr(const DecCtx *c, const char *name);
bool dec_max_outputs(DecCtx *c, int n);   /* reports a node with more than n outputs */

bool dec_fits(DecCtx *c, int64_t n, size_t es, const char *what);
/* Normalise axis a (may be negative) for rank r; reports and returns false if out of range. */
bool dec_axis(DecCtx *c, int64_t a, int r, int *out);
/* "unsupported: dynamic WHAT input 'name'" error for a non-constant input x. */
void dec_dynamic_err(DecCtx *c, ValId x, const char *what);
/* Constant integer tensor (rank <= 1) into v[max]; *n gets the count. Reports
 * "unsupported: dynamic WHAT input" when x is not a constant. */
bool dec_const_ints(DecCtx *c, ValId x, const char *what, int64_t *v, int max, int *n);
/* Same for a float tensor (any float dtype). */
bool dec_const_floats(DecCtx *c, ValId x, const char *what, double *v, int max, int *n);
/* First element of a constant tensor as double; reports when not constant. */
bool dec_const_scalar(DecCtx *c, ValId x, const char *what, double *v);

/* Element access on host buffers of any numeric dtype. */
double dec_load(IrDType t, const void *p, int64_t i);
int64_t dec_load_int(IrDType t, const void *p, int64_t i);
void dec_store(IrDType t, void *p, int64_t i, double v);

/* Constants. */
ValId dec_scalar(IrGraph *g, IrDType t, double v);      /* rank-0 constant */
ValId dec_const(IrGraph *g, IrDType t, const int64_t *dims, int rank, const double *v);
ValId dec_const_i64(IrGraph *g, const int64_t *dims, int rank, const int64_t *v);
ValId dec_const_f32(IrGraph *g, const int64_t *dims, int rank, const float *v);

/* Builders for core ops without a convenience builder in ir.h; return output 0. */
ValId dec_op(DecCtx *c, IrOp op, const ValId *in, int nin, const IrAttr *a, int na);
ValId dec_slice(DecCtx *c, ValId x, const int64_t *starts, const int64_t *steps,
                const int64_t *sizes);
ValId dec_slice_axis(DecCtx *c, ValId x, int axis, int64_t start, int64_t step, int64_t size);
ValId dec_pad(DecCtx *c, ValId x, const int64_t *pads, const int64_t *interior, double value);
ValId dec_pad_at(DecCtx *c, ValId x, const int64_t *pads, const int64_t *interior,
                 double value, int64_t bound);
ValId dec_concat(DecCtx *c, const ValId *xs, int n, int axis);
ValId dec_gather(DecCtx *c, ValId data, ValId idx, int axis);
ValId dec_reshape(DecCtx *c, ValId x, const int64_t *dims, int rank); /* no-op if same */
ValId dec_transpose(DecCtx *c, ValId x, const int64_t *perm);         /* no-op if identity */
ValId dec_swap_last(DecCtx *c, ValId x);   /* last two axes swapped; rank < 2: x itself */
ValId dec_softmax_last(DecCtx *c, ValId x); /* softmax over the last axis (-inf rows: NaN) */
ValId dec_expand(DecCtx *c, ValId x, const int64_t *dims, int rank);  /* no-op if same */
ValId dec_expand_from(DecCtx *c, ValId x, const int64_t *dims, int rank, ValId shape);
ValId dec_cast(DecCtx *c, ValId x, IrDType t);                         /* no-op if same */
ValId dec_reduce(DecCtx *c, int fn, ValId x, const int64_t *axes, int naxes, bool keep);
ValId dec_mean(DecCtx *c, ValId x, const int64_t *axes, int naxes, bool keep);
/* (x - mean) * rsqrt(var + eps) over axes; mean, 1/std and the variance (kept) out */
ValId dec_normalize(DecCtx *c, ValId x, const int64_t *axes, int naxes, double eps,
                    ValId *mean, ValId *rstd, ValId *var);
/* The order in which a separable resize resamples the n axes first .. first + n - 1 of
 * a tensor of rank `rank` from in[] to out[] elements (both indexed by axis): into
 * order[] (dec_util.c) */
void dec_resize_order(int rank, int first, int n, const int64_t *in, const int64_t *out,
                      int *order);
/* An upsampling of x's axis by an integer factor along a bounded symbolic dimension
 * (dec_util.c): dec_sym_last is its last index at the actual length (SYMLEN - 1, an i64
 * scalar); dec_sym_gather gathers x along axis at the n constant indices idx clamped
 * to last (inbounds; a plain GATHER when last is IR_NONE); dec_sym_like declares y to
 * lie along x's axis times mul (SYMLIKE), so that pass_symdim follows it. */
ValId dec_sym_last(DecCtx *c, ValId x, int axis);
ValId dec_sym_gather(DecCtx *c, ValId x, int axis, int64_t n, const int64_t *idx, ValId last);
ValId dec_sym_like(DecCtx *c, ValId y, ValId x, int axis, int64_t mul);
ValId dec_un(DecCtx *c, int fn, ValId a);
ValId dec_bin(DecCtx *c, int fn, ValId a, ValId b);
ValId dec_bin_s(DecCtx *c, int fn, ValId a, double s); /* a FN scalar of a's dtype */
ValId dec_select(DecCtx *c, ValId cond, ValId a, ValId b);
ValId dec_chan_view(DecCtx *c, ValId v, int r); /* v[C] -> [1, C, 1, ...] of rank r */

/* Numpy broadcast of two shapes; false if incompatible. */
bool dec_broadcast(const IrType *a, const IrType *b, int64_t *dims, int *rank);
int64_t dec_numel(const IrType *t);

/* ---- dec_poolwin.c: a pooling WINDOW shaped for the patch kernels ---- */
/* The WINDOW of function fn (IR_RED_*) over the last nsp axes of the padded x: a 3-d
 * window as 2-d windows of the depth slices combined; else one WINDOW node. */
ValId dec_pool_window(DecCtx *c, ValId x, int fn, const int64_t *k, const int64_t *s,
                 const int64_t *d, int nsp);

/* ---- dec_conv3d.c: a 3-d convolution as one 2-d convolution ---- */
/* Whether it applies (one group, no symbolic dimensions, x of rank 5). */
bool dec_conv3d_ok(const DecCtx *c, ValId x, int64_t group);
/* The convolution of x [N, C, D, H, W] (unpadded; pads lo / hi per spatial axis,
 * padding value pad_value) by w [M, C, kd, kh, kw] with strides s and dilations d,
 * without the bias; IR_NONE when the kernel's depth is too large to stack. */
ValId dec_conv3d_2d(DecCtx *c, ValId x, ValId w, const int64_t *s, const int64_t *d,
                    const int64_t *lo, const int64_t *hi, double pad_value);

/* ---- dec_convt.c: a transposed convolution whose kernel tiles its output ---- */
/* Whether it qualifies (group 1, kernel = stride, dilation 1, no pads or output
 * padding, no symbolic dimensions; x [N, C, S...] with nsp spatial axes). */
bool dec_convt_blocks_ok(const DecCtx *c, ValId x, int nsp, int64_t group, const int64_t *k,
                         const int64_t *s, const int64_t *d, const int64_t *lo,
                         const int64_t *hi, const int64_t *opad);
/* Its value (without the bias) for x [N, C, S...] and the weight w [C, M, k...]:
 * MATMUL, then depth to space. */
ValId dec_convt_blocks(DecCtx *c, ValId x, ValId w, int nsp);

/* ---- onnx/onnx_qdq.c: the results of DequantizeLinear, for int8 contractions ---- */
typedef struct DecQdqTab DecQdqTab;
DecQdqTab *dec_qdq_new(IrGraph *g);       /* empty table for g's DequantizeLinear (and move) nodes */
/* A data-movement node (Reshape, Transpose, Squeeze, Unsqueeze, Flatten) of a per-tensor
 * dequantized value: runs fn on the integer data and dequantizes its result, so the
 * 8-bit data moves and stays known as such; *ok: whether that worked. False (nothing
 * built): not such a node. */
bool dec_qdq_move(DecCtx *c, DecFn fn, bool *ok);

/* ---- decompose.c: recursive use of the dispatch tables (control flow) ---- */
/* Run the handler registered for foreign node c->n (inputs are values of c->g) and
 * leave its results in c->out; reports an unknown operator. The caller fills c. */
bool dec_run(DecCtx *c);

/* ---- the dispatch tables, one per frontend ---- */
/* onnx/onnx_table.c: handler of op_type in ONNX domain dom ("" for ai.onnx) at that
 * opset, or NULL when unsupported. */
DecFn dec_onnx_find(const char *dom, const char *op_type, int64_t opset);
/* aten/aten_table.c: handler of an ATen op type ("aten.relu.default"), or NULL when
 * unsupported; dec_aten runs it for a node of domain "aten" and checks its results
 * against the types torch.export recorded. */
DecFn dec_aten_find(const char *op_type);
bool dec_aten(DecCtx *c);

/* ---- onnx/onnx_sequence.c: sequences and optionals resolved at compile time ---- */
typedef struct DecSeqTab DecSeqTab;
DecSeqTab *dec_seq_new(IrGraph *g);       /* empty table in g's scratch arena */
/* Whether v stands for a sequence or an optional (no tensor type of its own). */
bool dec_seq_known(const DecSeqTab *t, ValId v);
/* Elements of sequence v; false if v is not a sequence (an empty optional). */
bool dec_seq_items(const DecSeqTab *t, ValId v, const ValId **items, uint32_t *n);
/* A new value standing for the sequence items[0..n) of elem (IR_DT_UNDEF: from items). */
ValId dec_seq_make(DecCtx *c, const ValId *items, uint32_t n, IrDType elem);
ValId dec_optional_none(DecCtx *c);       /* a new empty optional */
/* Report an input of c->n that is a sequence/optional when the op takes none. */
bool dec_seq_check_inputs(DecCtx *c);
/* Replace every graph output that is a sequence or an optional by one output per
 * element, "NAME[i]" (none for an empty one); hidden outputs stay last. */
bool dec_seq_expand_outputs(IrGraph *g, const DecSeqTab *t);
/* Whether a and b differ in structure: one is a sequence or an optional and the other
 * is not, one is an empty optional, or they hold different numbers of tensors. */
bool dec_seq_len_differs(const DecSeqTab *t, ValId a, ValId b);
/* Charge one inlined body to the pass-wide unrolling budget (limit bodies in all; the
 * table is the pass's state of compile-time control flow); false once it is spent. */
bool dec_seq_charge(DecSeqTab *t, uint64_t limit);

#endif
