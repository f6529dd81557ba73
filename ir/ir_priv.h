/* ir_priv.h: helpers shared by the files of ir/ only (not part of the public API). */
#ifndef SPYREC_IR_PRIV_H
#define SPYREC_IR_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

/* ---- ir_dtype.c: element access ---- */
bool ir_dtype_is_unsigned(IrDType t);      /* u8..u64 (not bool) */
int ir_dtype_bits(IrDType t);              /* bits per element */
float ir_f16_to_f32(uint16_t h);
uint16_t ir_f32_to_f16(float f);           /* round to nearest even */
float ir_bf16_to_f32(uint16_t h);
uint16_t ir_f32_to_bf16(float f);          /* round to nearest even */
/* Load element i of a buffer of dtype t as double / as 64-bit integer (signed types
 * sign-extend, unsigned zero-extend, floats truncate toward zero). */
double ir_load_f(IrDType t, const void *p, size_t i);
int64_t ir_load_i(IrDType t, const void *p, size_t i);
/* Store a double (rounded to the dtype; ints truncate, saturating at the int64 range)
 * or a 64-bit integer (wrapped to the dtype's width; bool = v != 0). */
void ir_store_f(IrDType t, void *p, size_t i, double v);
void ir_store_i(IrDType t, void *p, size_t i, int64_t v);

/* ---- ir_shape.c ---- */
/* Compute the output types of core-op node n (inputs typed) into outs[n->nout].
 * On failure writes a message (without the node prefix) into err and returns false.
 * *quiet is set when an input was already untyped (an earlier error: do not report). */
bool ir_infer_types(IrGraph *g, const IrNode *n, IrType *outs, char *err, size_t errlen,
                    bool *quiet);

/* ---- ir.c ---- */
/* ir_oom(g) (longjmp to g->oom or die) is public: ir.h */
/* The node list detached by the last ir_rewrite_begin (count in *n; NULL if none). */
IrNode *ir_detached(IrGraph *g, uint32_t *n);

/* ---- ir_eval.c / ir_eval_move.c internals ---- */
#define IR_EV_MAXOPS 3
typedef struct IrEval {
    IrGraph *g;
    const IrNode *n;
    const void **in;
    void **out;
} IrEval;
/* Broadcast iterator over an output shape with up to IR_EV_MAXOPS operand offsets. */
typedef struct {
    int rank, k;
    int64_t dims[IR_MAX_RANK], idx[IR_MAX_RANK];
    int64_t st[IR_EV_MAXOPS][IR_MAX_RANK];
    int64_t off[IR_EV_MAXOPS];
} IrBIter;
void ir_strides_of(const IrType *t, int64_t *st);
void ir_bi_init(IrBIter *it, const IrType *out, int k, const IrType *const *t);
void ir_bi_next(IrBIter *it);
void ir_next_index(int64_t *idx, const int64_t *dims, int r);
void ir_split3(const IrType *t, int axis, int64_t *outer, int64_t *d, int64_t *inner);
/* The batches of a MATMUL a[..., M, K] @ b[..., K, N] -> o (batch dims broadcast): fn
 * gets each output batch i with the batch indices oa of a and ob of b. */
void ir_mm_batches(const IrType *ta, const IrType *tb, const IrType *o,
                   void (*fn)(void *ctx, int64_t i, int64_t oa, int64_t ob), void *ctx);

/* ---- the hooks named by ops.def (one declaration per row and column) ---- */
typedef struct IrInferCtx IrInferCtx;     /* ir_shape.c */
#define X(e, name, mi, ma, no, cls, flags, fn, vec, infer, eval, verify, ident, label, work) \
    bool infer(IrInferCtx *c);                                                               \
    bool eval(const IrEval *ev);                                                             \
    bool verify(IrGraph *g, const IrNode *n, char *err, size_t errlen);                      \
    ValId ident(IrGraph *g, const IrNode *n);                                                \
    uint64_t work(IrGraph *g, const IrNode *n);
#include "ops.def"
#undef X

#endif
