/* dec_index.h: index arithmetic shared by the decompositions of both frontends
 * (ONNX gathers, scatters, sampling, signal, TopK, ...; ATen indexing).
 *
 * These operators take indices, coordinates or small parameters that may only be
 * known at run time. Everything here builds core ops that compute on such values
 * (constants fold while building), so one code path serves constant and runtime
 * inputs alike:
 *   - iotas and runtime scalars;
 *   - wrapping of negative indices, and the gather of elements along an axis by a
 *     same-rank index tensor (GatherElements, torch.gather, take_along_axis);
 *   - the declared (model) type of an output, used when an output size depends on
 *     an input value that is not a constant;
 *   - scatter as a one-hot comparison (positions == iota) followed by a SELECT and
 *     a REDUCE, O(targets x updates), refused past DIX_ONEHOT_MAX elements;
 *   - sampling of a tensor at fractional coordinates (nearest, linear, cubic) with
 *     GATHERs of computed indices.
 */
#ifndef SPYREC_DEC_INDEX_H
#define SPYREC_DEC_INDEX_H

#include "dec.h"

#define DIX_ONEHOT_MAX ((int64_t)1 << 24)  /* largest one-hot intermediate (elements) */
#define DIX_RED_NONE (-1)                   /* scatter reduction "none": last update wins */

/* Constant 0, 1, ..., n-1 of dtype t laid along `axis` of a rank-r shape of ones. */
ValId dix_iota(DecCtx *c, IrDType t, int64_t n, int r, int axis);
/* Value x (one element) as a rank-0 value of dtype t. Reports and returns IR_NONE
 * when x does not hold exactly one element. */
ValId dix_scalar(DecCtx *c, ValId x, const char *what, IrDType t);
/* The model's declared type of output i when it is fully known, else NULL. */
const IrType *dix_declared(const DecCtx *c, int i);
/* Integer value of input i when it is a one-element constant; false otherwise
 * (nothing reported). */
bool dix_const_int(const DecCtx *c, int i, int64_t *v);
/* idx < 0 ? idx + d : idx (d a value broadcast against idx). */
ValId dix_wrap(DecCtx *c, ValId idx, ValId d);
/* idx cast to i64, then wrapped by the constant axis size d as dix_wrap does. */
ValId dix_wrap_size(DecCtx *c, ValId idx, int64_t d);
/* Elements of data picked along `axis` by idx (i64, same rank as data, may hold
 * negative indices): out[p] = data[p with p[axis] = idx[p]], as one GATHER from the
 * flattened data. The result has idx's shape. */
ValId dix_take_along(DecCtx *c, ValId data, ValId idx, int axis);
/* Reduction named by a ScatterND/ScatterElements "reduction" attribute value:
 * DIX_RED_NONE or an IrRedFn; -2 if the name is unknown. */
int dix_reduction(const char *s);

/* Batched scatter: data[B, P, I], pos[B, U] (integer, target row of each update;
 * rows outside [0, P) are ignored), upd[B, U, I]. Returns out[B, P, I] with
 * out[b, p] = data[b, p] combined with every upd[b, u] whose pos[b, u] == p: the
 * last such update for DIX_RED_NONE, else the reduction fn (IR_RED_SUM/PROD/MAX/MIN)
 * of data and the updates. Reports and returns IR_NONE past DIX_ONEHOT_MAX. */
ValId dix_scatter(DecCtx *c, ValId data, ValId pos, ValId upd, int red);

/* Padding of sampled coordinates outside the input. */
typedef enum { DIX_PAD_ZEROS, DIX_PAD_BORDER, DIX_PAD_REFLECT } DixPad;
typedef enum { DIX_NEAREST, DIX_LINEAR, DIX_CUBIC } DixMode;

/* Sample x[N, C, d_0, ..., d_{k-1}] at points whose pixel coordinate along spatial
 * axis i is coord[i] (f32 [N, P] each, already mapped to input pixels). Out-of-range
 * taps: zeros (weight 0), border (clamped) or reflected about [lo[i], hi[i]] as in
 * GridSample. Nearest rounds half to even. Returns [N, P, C]. */
ValId dix_sample(DecCtx *c, ValId x, const ValId *coord, int k, DixMode mode, DixPad pad,
                 const double *lo, const double *hi);
/* Reflect coordinates v into [lo, hi] (GridSample's rule). */
ValId dix_reflect(DecCtx *c, ValId v, double lo, double hi);

#endif
