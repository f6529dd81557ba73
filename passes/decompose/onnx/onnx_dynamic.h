/* onnx_dynamic.h: helpers shared by the decompositions of data-dependent ops
 * (onnx_dynamic.c: NonZero, Compress; onnx_unique.c: Unique; onnx_nms.c:
 * NonMaxSuppression). Each of them computes a keep mask on the device, turns it into
 * destination slots (exclusive cumulative sum) and a count, and compacts rows with
 * the SCATTER core op into a tensor of upper-bound shape; the count is recorded with
 * ir_dyn_add (ir/ir_dyn.c) and the runtime reports the actual shape.
 */
#ifndef SPYREC_ONNX_DYNAMIC_H
#define SPYREC_ONNX_DYNAMIC_H

#include "onnx.h"

/* Largest element count of one O(n^2) comparison table built by Unique and
 * NonMaxSuppression. */
#define DEC_DYN_MAX_TABLE ((int64_t)1 << 24)

/* keep[N] (bool): slot[N] (i32, the exclusive cumulative count of kept rows for kept
 * rows, -1 for the others) and *count (i32 scalar, the kept rows). */
ValId dec_dyn_slots(DecCtx *c, ValId keep, ValId *count);
/* Rows [N, R] scattered to their slots[N] (outside [0, size): dropped) -> [size, R]. */
ValId dec_dyn_scatter(DecCtx *c, ValId rows, ValId slots, int64_t size);
/* 0, 1, ..., n-1 of dtype t (folds to a constant unless very large). */
ValId dec_dyn_iota(DecCtx *c, int64_t n, IrDType t);
/* Permutation moving axis ax of a rank-r tensor to the front, and its inverse. */
void dec_dyn_front_perm(int r, int ax, int64_t *perm, int64_t *inv);
/* Rows of x (any rank >= 1) along axis ax as a 2-d [dims[ax], rest] tensor. */
ValId dec_dyn_rows(DecCtx *c, ValId x, int ax);
/* Inverse of dec_dyn_rows: [n, rest] back to x's layout with dims[ax] = n (like). */
ValId dec_dyn_unrows(DecCtx *c, ValId rows, const IrType *like, int ax);

#endif
