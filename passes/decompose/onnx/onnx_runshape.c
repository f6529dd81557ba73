/* onnx_runshape.c: Reshape, Squeeze, Unsqueeze and the reductions whose target shape or
 * axes are runtime inputs (not constants, not bound with --bind).
 *
 * The result's rank is known when compiling (the length of the shape or axes input),
 * its dims are not. The result is recorded as a value whose whole shape is computed at
 * run time (ir_dyn_add_shape, axis IR_DYN_SHAPE): its type is [capacity, 1, ...] of
 * the actual rank, its data the row-major prefix of the actual shape, and an int32
 * vector computed on the device by ordinary core ops holds the actual dims. The
 * runtime reads that vector after the run (bundle flag SPY_TF_SHAPED) and checks it
 * against the capacity; an invalid shape is computed as -1 dims and refused there.
 *
 * - Reshape: the data is the input's (a view); the dims follow the ONNX rules (0
 *   copies the input dim unless allowzero, one -1 is inferred) evaluated on the device.
 * - Squeeze, Unsqueeze, reductions: the axes input holds L distinct axes in
 *   [-range, range), so the normalised set is one of the C(range, L) subsets. Each
 *   candidate subset S gets its constant dims and, for a reduction, its own result
 *   (flattened and padded to the capacity); SELECTs on "the axes are exactly S" pick
 *   the dims and data. Candidates that cannot hold (squeezing an axis whose size is not
 *   1) are left out, so such axes get the -1 dims. At most MAX_CAND candidates.
 * - Split with a runtime split input: each output is computed at the whole axis
 *   (GATHERed from its runtime offset, the exclusive CUMSUM of the sizes) with its
 *   size as the valid extent along the axis (ir_dyn_add, one axis).
 * - Range and the windows with runtime inputs: computed at the length the model
 *   declares for the output (its bound) from iotas, with the runtime length as the
 *   valid extent; without a declared length they stay refused (--bind). Likewise
 *   ConstantOfShape of a runtime shape, at the declared output's element count.
 */
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

#define MAX_CAND 64                        /* most candidate axis sets */

/* The i64 extents d as int32; a value beyond int32 or below -1 becomes -1 (refused by
 * the runtime) rather than wrapping to a plausible extent. */
ValId dec_rt_dims32(DecCtx *c, ValId d)
{
    ValId bad = dec_bin(c, IR_BIN_OR, dec_bin_s(c, IR_BIN_GT, d, 2147483647.0),
                        dec_bin_s(c, IR_BIN_LT, d, -1));
    return dec_cast(c, dec_select(c, bad, dec_scalar(c->g, IR_DT_I64, -1), d), IR_DT_I32);
}

/* The int32 dims vector d (i64 values, rank r) and the data value y ([cap, 1, ...] of
 * rank r) become c's output, a value whose shape is computed at run time. */
static void finish(DecCtx *c, ValId y, ValId d)
{
    ValId d32 = dec_rt_dims32(c, d);
    if (ir_failed(c->g))                   /* y or d is a stand-in after a reported error */
        return;
    ir_dyn_add_shape(c->g, y, d32);
    c->out[0] = y;
}

/* x viewed as [n, 1, ...] of rank r (n its element count). */
static ValId capacity_view(DecCtx *c, ValId x, int r)
{
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = i == 0 ? dec_numel(dec_ty(c, x)) : 1;
    return dec_reshape(c, x, dims, r);
}

/* Reshape to a runtime target: the data is x viewed at its capacity; the dims follow the
 * ONNX rules on the device (0 copies x's dim unless allowzero, one -1 is inferred), -1
 * everywhere when the target does not hold x's elements. */
bool dec_rt_reshape(DecCtx *c, ValId x, ValId shape, bool allowzero)
{
    const IrType *t = dec_ty(c, x), *st = dec_ty(c, shape);
    int r = st->rank == 1 ? (int)st->dims[0] : -1;
    if (r < 1 || r > IR_MAX_RANK) {
        dec_err(c, "shape input must be a vector of 1 to %d entries", IR_MAX_RANK);
        return false;
    }
    int64_t total = dec_numel(t), rd = r;
    double xd[IR_MAX_RANK];
    for (int i = 0; i < r; i++)            /* 0 beyond the input's rank: invalid (-1) */
        xd[i] = i < t->rank ? (double)t->dims[i] : -1;
    ValId s = dec_cast(c, shape, IR_DT_I64);
    if (!allowzero)
        s = dec_select(c, dec_bin_s(c, IR_BIN_EQ, s, 0), dec_const(c->g, IR_DT_I64, &rd, 1, xd), s);
    ValId inf = dec_bin_s(c, IR_BIN_EQ, s, -1);
    int64_t ax = 0;
    ValId known = dec_reduce(c, IR_RED_PROD, dec_select(c, inf, dec_scalar(c->g, IR_DT_I64, 1), s),
                             &ax, 1, false);
    ValId q = dec_bin(c, IR_BIN_DIV, dec_scalar(c->g, IR_DT_I64, (double)total),
                      dec_bin_s(c, IR_BIN_MAX, known, 1));
    ValId d = dec_select(c, inf, q, s);
    ValId ok = dec_bin(c, IR_BIN_AND,
                       dec_bin_s(c, IR_BIN_EQ, dec_reduce(c, IR_RED_PROD, d, &ax, 1, false), (double)total),
                       dec_bin_s(c, IR_BIN_GE, dec_reduce(c, IR_RED_MIN, d, &ax, 1, false), 0));
    ValId ninf = dec_reduce(c, IR_RED_SUM, dec_cast(c, inf, IR_DT_I64), &ax, 1, false);
    ok = dec_bin(c, IR_BIN_AND, ok, dec_bin_s(c, IR_BIN_LE, ninf, 1));   /* one -1 at most */
    d = dec_select(c, ok, d, dec_scalar(c->g, IR_DT_I64, -1));
    finish(c, capacity_view(c, x, r), d);
    return true;
}

/* Bool scalar: the normalised axes vector a (i64 [L], values in [0, range)) holds
 * exactly the set S of L distinct axes: every axis of S occurs in a (then the L
 * entries of a are a permutation of S; repeated axes match no set). */
static ValId axes_are(DecCtx *c, ValId a, const int64_t *S, int L)
{
    int64_t ax = 0;
    ValId all = IR_NONE;
    for (int k = 0; k < L; k++) {
        ValId has = dec_reduce(c, IR_RED_MAX, dec_cast(c, dec_bin_s(c, IR_BIN_EQ, a, (double)S[k]),
                                                       IR_DT_I64), &ax, 1, false);
        has = dec_bin_s(c, IR_BIN_EQ, has, 1);
        all = all == IR_NONE ? has : dec_bin(c, IR_BIN_AND, all, has);
    }
    return all;
}

/* Next L-subset of [0, range) in lexicographic order; false after the last. */
static bool next_subset(int64_t *S, int L, int range)
{
    int k = L - 1;
    while (k >= 0 && S[k] == range - L + k)
        k--;
    if (k < 0)
        return false;
    S[k]++;
    for (int j = k + 1; j < L; j++)
        S[j] = S[j - 1] + 1;
    return true;
}

/* Dims of candidate S for kind (squeeze: drop S, each of size 1; unsqueeze: insert 1s
 * at S; reduce: those of y) into d; returns the rank, -1 when S cannot hold. */
static int cand_dims(DecRtAxes kind, const IrType *t, const int64_t *S, int L, ValId y,
                     const DecCtx *c, int64_t *d)
{
    int r = 0;
    if (kind == DEC_RT_REDUCE) {
        const IrType *yt = dec_ty(c, y);
        memcpy(d, yt->dims, sizeof(int64_t) * (size_t)yt->rank);
        return yt->rank;
    }
    for (int i = 0, k = 0, j = 0; i < (kind == DEC_RT_SQUEEZE ? t->rank : t->rank + L); i++) {
        bool in = k < L && S[k] == i;
        k += in;
        if (kind == DEC_RT_SQUEEZE && in && t->dims[i] != 1)
            return -1;
        if (kind == DEC_RT_UNSQUEEZE)
            d[r++] = in ? 1 : t->dims[j++];
        else if (!in)
            d[r++] = t->dims[i];
    }
    return r;
}

/* Squeeze, Unsqueeze or a reduction over a runtime axes input: one candidate per
 * L-subset of the axes, SELECTed on the input (see the file comment). */
bool dec_rt_axes(DecCtx *c, DecRtAxes kind, ValId x, ValId axes, int out_rank, DecAxesFn fn,
                 const void *arg)
{
    const IrType *t = dec_ty(c, x), *at = dec_ty(c, axes);
    int L = at->rank <= 1 ? (int)dec_numel(at) : -1;
    int range = kind == DEC_RT_UNSQUEEZE ? t->rank + L : t->rank;
    if (L < 1 || L > range || out_rank < 0 || out_rank > IR_MAX_RANK) {
        dec_err(c, "axes input must be a vector of 1 to %d entries", range);
        return false;
    }
    ValId a = dec_reshape(c, dec_cast(c, axes, IR_DT_I64), (int64_t[]){L}, 1);
    a = dec_select(c, dec_bin_s(c, IR_BIN_LT, a, 0), dec_bin_s(c, IR_BIN_ADD, a, range), a);
    int64_t S[IR_MAX_RANK], rd = out_rank, cap = dec_numel(t);
    ValId ys[MAX_CAND], ds[MAX_CAND], hits[MAX_CAND];
    int n = 0;
    for (int i = 0; i < L; i++)
        S[i] = i;
    do {
        if (n == MAX_CAND) {
            dec_err(c, "unsupported: runtime axes input '%s' has more than %d candidate "
                    "sets (specialise it with --bind)", c->g->vals[axes].name, MAX_CAND);
            return false;
        }
        ValId y = kind == DEC_RT_REDUCE ? fn(c, x, S, L, arg) : IR_NONE;
        int64_t d[IR_MAX_RANK];
        double dv[IR_MAX_RANK];
        if (cand_dims(kind, t, S, L, y, c, d) != out_rank)
            continue;
        for (int i = 0; i < out_rank; i++)
            dv[i] = (double)d[i];
        ds[n] = dec_const(c->g, IR_DT_I64, &rd, 1, dv);
        hits[n] = axes_are(c, a, S, L);
        ys[n++] = y;
        if (y != IR_NONE && dec_numel(dec_ty(c, y)) > cap)
            cap = dec_numel(dec_ty(c, y));      /* reducing an empty axis adds elements */
    } while (next_subset(S, L, range));
    for (int i = 0; i < n && kind == DEC_RT_REDUCE; i++) {  /* flatten, pad to capacity */
        int64_t m = dec_numel(dec_ty(c, ys[i])), pads[2] = {0, cap - m};
        if (m > 0)
            ys[i] = dec_pad(c, dec_reshape(c, ys[i], &m, 1), pads, NULL, 0.0);
    }
    double bad[IR_MAX_RANK];
    for (int i = 0; i < out_rank; i++)
        bad[i] = -1;
    ValId d = dec_const(c->g, IR_DT_I64, &rd, 1, bad), y = IR_NONE;
    if (kind == DEC_RT_REDUCE) {                 /* zeros when no candidate matches */
        IrDType yt = n > 0 ? dec_ty(c, ys[0])->dtype : t->dtype;
        double *z = ir_scratch(c->g, sizeof(double) * (size_t)(cap + 1));
        for (int64_t i = 0; i < cap; i++)
            z[i] = 0;
        y = dec_const(c->g, yt, &cap, 1, z);
    }
    for (int i = n - 1; i >= 0; i--) {
        d = dec_select(c, hits[i], ds[i], d);
        if (kind == DEC_RT_REDUCE && dec_numel(dec_ty(c, ys[i])) == cap)
            y = dec_select(c, hits[i], ys[i], y);
    }
    finish(c, capacity_view(c, kind == DEC_RT_REDUCE ? y : x, out_rank), d);
    return true;
}

/* Element i of the i64 vector v as a rank-0 value. */
static ValId elem(DecCtx *c, ValId v, int i)
{
    return dec_reshape(c, dec_slice_axis(c, v, 0, i, 1, 1), NULL, 0);
}

/* Split by runtime sizes: each part GATHERed from its runtime offset over the whole
 * axis, its size the valid extent; sizes that do not add up to the axis give -1. */
bool dec_rt_split(DecCtx *c, ValId x, int axis, ValId split)
{
    const IrType *t = dec_ty(c, x);
    int nout = c->n->nout;
    int64_t n = t->dims[axis], ns = dec_numel(dec_ty(c, split)), ax = 0;
    if (ns != nout) {
        dec_err(c, "split input has %lld entries for %d outputs", (long long)ns, nout);
        return false;
    }
    for (int i = 0; i < nout && n == 0; i++)   /* an empty axis: every part is empty */
        c->out[i] = dec_slice_axis(c, x, axis, 0, 1, 0);
    if (n == 0)
        return true;
    ValId s = dec_reshape(c, dec_cast(c, split, IR_DT_I64), &ns, 1);
    IrAttr a[3] = {ir_attr_int("axis", 0), ir_attr_int("exclusive", 1), ir_attr_int("reverse", 0)};
    ValId off = dec_op(c, IR_OP_CUMSUM, &s, 1, a, 3);
    ValId ok = dec_bin(c, IR_BIN_AND,
                       dec_bin_s(c, IR_BIN_EQ, dec_reduce(c, IR_RED_SUM, s, &ax, 1, false), (double)n),
                       dec_bin_s(c, IR_BIN_GE, dec_reduce(c, IR_RED_MIN, s, &ax, 1, false), 0));
    ValId iota = dix_iota(c, IR_DT_I64, n, 1, 0);
    for (int i = 0; i < nout; i++) {       /* rows off_i + j, clamped: the first s_i valid */
        ValId idx = dec_bin_s(c, IR_BIN_MIN, dec_bin(c, IR_BIN_ADD, iota, elem(c, off, i)),
                              (double)(n - 1));
        ValId y = dec_gather(c, x, idx, axis);
        ValId cnt = dec_select(c, ok, elem(c, s, i), dec_scalar(c->g, IR_DT_I64, -1));
        ir_dyn_add(c->g, y, axis, dec_rt_dims32(c, cnt));
        c->out[i] = y;
    }
    return true;
}

/* The declared length of c's rank-1 output 0 (the model's type of it), the bound of a
 * runtime length; -1 when the model does not declare one. */
static int64_t declared_len(const DecCtx *c)
{
    const IrType *d = dix_declared(c, 0);
    return d && d->rank == 1 && d->dims[0] >= 0 ? d->dims[0] : -1;
}

/* c's output 0 is y ([bound]) with the runtime length len (i64 scalar): a value outside
 * [0, bound] fails the run. */
static void runtime_len(DecCtx *c, ValId y, ValId len, int64_t bound)
{
    len = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, len, -1), (double)(bound + 1));
    ir_dyn_add(c->g, y, 0, dec_cast(c, len, IR_DT_I32));
    c->out[0] = y;
}

/* Range with runtime inputs over the declared length: start + i * delta, the length
 * ceil((limit - start) / delta) (exact in int64 for integer ranges) the valid extent. */
bool dec_rt_range(DecCtx *c)
{
    int64_t n = declared_len(c);
    if (n < 0)
        return false;
    ValId st = dix_scalar(c, dec_in(c, 0), "start", IR_DT_F32),
          lim = dix_scalar(c, dec_in(c, 1), "limit", IR_DT_F32),
          d = dix_scalar(c, dec_in(c, 2), "delta", IR_DT_F32);
    if (st == IR_NONE || lim == IR_NONE || d == IR_NONE)
        return false;
    IrDType t = dec_ty(c, dec_in(c, 0))->dtype;
    ValId cnt;
    if (ir_dtype_is_float(t)) {            /* ceil((limit - start) / delta) */
        cnt = dec_un(c, IR_UN_CEIL, dec_bin(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, lim, st), d));
        cnt = dec_cast(c, dec_bin_s(c, IR_BIN_MAX, cnt, 0), IR_DT_I64);
    } else {                               /* exactly: (diff + delta - sign) / delta */
        ValId si = dix_scalar(c, dec_in(c, 0), "start", IR_DT_I64),
              li = dix_scalar(c, dec_in(c, 1), "limit", IR_DT_I64),
              di = dix_scalar(c, dec_in(c, 2), "delta", IR_DT_I64);
        ValId sg = dec_select(c, dec_bin_s(c, IR_BIN_GT, di, 0), dec_scalar(c->g, IR_DT_I64, 1),
                              dec_scalar(c->g, IR_DT_I64, -1));
        ValId num = dec_bin(c, IR_BIN_SUB, dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_SUB, li, si), di), sg);
        ValId safe = dec_select(c, dec_bin_s(c, IR_BIN_EQ, di, 0), dec_scalar(c->g, IR_DT_I64, 1), di);
        cnt = dec_bin_s(c, IR_BIN_MAX, dec_bin(c, IR_BIN_DIV, num, safe), 0);
        cnt = dec_select(c, dec_bin_s(c, IR_BIN_EQ, di, 0), dec_scalar(c->g, IR_DT_I64, -1), cnt);
    }
    ValId s0 = dec_cast(c, dec_in(c, 0), t), d0 = dec_cast(c, dec_in(c, 2), t);
    ValId y = dec_bin(c, IR_BIN_ADD, dec_reshape(c, s0, NULL, 0),
                      dec_bin(c, IR_BIN_MUL, dix_iota(c, t, n, 1, 0), dec_reshape(c, d0, NULL, 0)));
    runtime_len(c, y, cnt, n);
    return true;
}

/* Hann, Hamming or Blackman window of a runtime size over the declared length, the
 * cosine terms computed on the device from an iota. */
bool dec_rt_window(DecCtx *c, IrDType dt, int kind)
{
    int64_t n = declared_len(c);
    ValId size = n < 0 ? IR_NONE : dix_scalar(c, dec_in(c, 0), "size", IR_DT_I64);
    if (size == IR_NONE)
        return false;
    ValId N = dec_cast(c, dec_ai(c, "periodic", 1) ? size : dec_bin_s(c, IR_BIN_SUB, size, 1),
                       IR_DT_F32);
    ValId a = dec_bin(c, IR_BIN_DIV, dec_bin_s(c, IR_BIN_MUL, dix_iota(c, IR_DT_F32, n, 1, 0),
                                               6.283185307179586), N);
    static const double co[3][3] = {{0.5, 0.5, 0}, {25.0 / 46.0, 21.0 / 46.0, 0}, {0.42, 0.5, 0.08}};
    ValId y = dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_COS, a), -co[kind][1]);
    y = dec_bin_s(c, IR_BIN_ADD, y, co[kind][0]);
    if (co[kind][2] != 0)
        y = dec_bin(c, IR_BIN_ADD, y, dec_bin_s(c, IR_BIN_MUL,
                                                dec_un(c, IR_UN_COS, dec_bin_s(c, IR_BIN_MUL, a, 2)),
                                                co[kind][2]));
    runtime_len(c, dec_cast(c, y, dt), size, n);
    return true;
}

/* ConstantOfShape of a runtime shape: s at the declared capacity, the dims the input. */
bool dec_rt_fill(DecCtx *c, ValId s)
{
    const IrType *decl = dix_declared(c, 0), *xt = dec_ty(c, dec_in(c, 0));
    if (!decl || xt->rank != 1 || decl->rank != xt->dims[0] || decl->rank < 1 ||
        ir_type_numel(decl) < 0)
        return false;
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < decl->rank; i++)
        dims[i] = i == 0 ? ir_type_numel(decl) : 1;
    ValId y = dec_expand(c, s, dims, decl->rank);
    finish(c, y, dec_cast(c, dec_in(c, 0), IR_DT_I64));
    return true;
}
