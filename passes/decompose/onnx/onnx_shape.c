/* onnx_shape.c: decomposition of ONNX shape and data-movement ops into RESHAPE,
 * TRANSPOSE, SLICE, PAD, CONCAT, GATHER and EXPAND. Shape-valued inputs must be
 * constants (they are, once shape subgraphs have folded). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

#define MAXV 64                            /* most entries of a shape-like input */

/* Integer list from attribute `name` (opset < from_opset) or from input idx.
 * *n = -1 when neither is given. */
static bool ints_attr_or_input(DecCtx *c, const char *name, int64_t from_opset, int idx,
                               int64_t *v, int *n)
{
    *n = -1;
    if (c->opset < from_opset) {
        const int64_t *a;
        int cnt = dec_aints(c, name, &a);
        if (cnt > MAXV) {
            dec_err(c, "attribute %s has too many entries", name);
            return false;
        }
        for (int i = 0; i < cnt; i++)
            v[i] = a[i];
        *n = cnt;
        return true;
    }
    if (dec_in(c, idx) == IR_NONE)
        return true;
    if (dec_numel(dec_ty(c, dec_in(c, idx))) == 0) { /* statically empty: values not needed */
        *n = 0;
        return true;
    }
    return dec_const_ints(c, dec_in(c, idx), name, v, MAXV, n);
}

/* "[d0, d1, ...]" of the n entries of d into buf (truncated with "..." to fit). */
static const char *shape_text(const int64_t *d, int n, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "", (long long)d[i]);
    if (at < len)
        snprintf(buf + at, len - at, "]");
    else if (len > 4)
        memcpy(buf + len - 4, "...", 4);
    return buf;
}

/* Whether input idx (from opset from_opset) is given, not empty and not a constant: a
 * runtime shape or axes input (onnx_runshape.c). */
static bool runtime_input(const DecCtx *c, int idx, int64_t from_opset)
{
    ValId v = dec_in(c, idx);
    return c->opset >= from_opset && v != IR_NONE && !ir_is_const(c->g, v) &&
           dec_numel(dec_ty(c, v)) > 0;
}

/* Reshape: 0 copies the input dim (unless allowzero), -1 is inferred. */
bool dec_reshape_op(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    if (runtime_input(c, 1, 5))
        return dec_rt_reshape(c, x, dec_in(c, 1), dec_ai(c, "allowzero", 0) != 0);
    int64_t sh[MAXV], dims[IR_MAX_RANK];
    int n;
    if (!ints_attr_or_input(c, "shape", 5, 1, sh, &n))
        return false;
    if (n < 0 || n > IR_MAX_RANK) {
        dec_err(c, n < 0 ? "missing shape" : "shape has rank %d, more than supported", n);
        return false;
    }
    bool allowzero = dec_ai(c, "allowzero", 0) != 0;
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        dims[i] = sh[i];
        if (sh[i] == 0 && !allowzero) {
            if (i >= t->rank) {
                dec_err(c, "shape[%d] = 0 refers to a missing input dim", i);
                return false;
            }
            dims[i] = t->dims[i];
        } else if (sh[i] == -1) {
            if (infer >= 0) {
                dec_err(c, "shape has more than one -1");
                return false;
            }
            infer = i;
            continue;
        } else if (sh[i] < 0) {
            dec_err(c, "shape[%d] = %lld is invalid", i, (long long)sh[i]);
            return false;
        }
        if (__builtin_mul_overflow(known, dims[i], &known)) {
            char buf[256];
            dec_err(c, "shape %s has more than %lld elements", shape_text(sh, n, buf, sizeof buf),
                    (long long)INT64_MAX);
            return false;
        }
    }
    int64_t total = dec_numel(t);
    if (infer >= 0) {
        if (known == 0 || total % known != 0) {
            dec_err(c, "cannot infer -1: %lld elements do not divide by %lld", (long long)total,
                    (long long)known);
            return false;
        }
        dims[infer] = total / known;
        known *= dims[infer];
    }
    if (known != total) {
        dec_err(c, "shape holds %lld elements, input has %lld", (long long)known, (long long)total);
        return false;
    }
    c->out[0] = dec_reshape(c, x, dims, n);
    return true;
}

/* Shape (with start/end since opset 15) of a statically shaped value: a constant. */
bool dec_shape_op(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    const IrType *t = dec_ty(c, dec_in(c, 0));
    int64_t r = t->rank, st = dec_ai(c, "start", 0), en = dec_ai(c, "end", r);
    if (st < 0)
        st += r;
    if (en < 0)
        en += r;
    st = st < 0 ? 0 : st > r ? r : st;
    en = en < 0 ? 0 : en > r ? r : en;
    int64_t n = en > st ? en - st : 0;
    c->out[0] = dec_const_i64(c->g, &n, 1, t->dims + st);
    if (c->g->nsymdims)           /* extents at the bounds: pass_symdim may follow them */
        ir_ext_set(c->g, c->out[0], dec_in(c, 0), (int)st, false);
    return true;
}

bool dec_size_op(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    int64_t n = dec_numel(dec_ty(c, dec_in(c, 0)));
    c->out[0] = dec_const_i64(c->g, NULL, 0, &n);
    if (c->g->nsymdims)
        ir_ext_set(c->g, c->out[0], dec_in(c, 0), 0, true);
    return true;
}

bool dec_transpose_op(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    int r = dec_ty(c, x)->rank;
    int64_t perm[IR_MAX_RANK];
    const int64_t *p;
    int n = dec_aints(c, "perm", &p);
    if (n >= 0 && n != r) {
        dec_err(c, "perm has %d entries for rank %d", n, r);
        return false;
    }
    unsigned seen = 0;
    for (int i = 0; i < r; i++) {
        perm[i] = n >= 0 ? p[i] : r - 1 - i;
        if (perm[i] < 0 || perm[i] >= r || (seen >> perm[i] & 1)) {
            dec_err(c, "perm is not a permutation of 0..%d", r - 1);
            return false;
        }
        seen |= 1u << perm[i];
    }
    c->out[0] = dec_transpose(c, x, perm);
    return true;
}

/* Squeeze: drop the listed axes (or every axis of size 1). */
bool dec_squeeze(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t ax[MAXV], dims[IR_MAX_RANK];
    int n, nd = 0;
    bool drop[IR_MAX_RANK] = {false};
    if (runtime_input(c, 1, 13))
        return dec_rt_axes(c, DEC_RT_SQUEEZE, x, dec_in(c, 1),
                           t->rank - (int)dec_numel(dec_ty(c, dec_in(c, 1))), NULL, NULL);
    if (!ints_attr_or_input(c, "axes", 13, 1, ax, &n))
        return false;
    for (int i = 0; i < n; i++) {
        int a;
        if (!dec_axis(c, ax[i], t->rank, &a))
            return false;
        if (t->dims[a] != 1) {
            dec_err(c, "cannot squeeze axis %d of size %lld", a, (long long)t->dims[a]);
            return false;
        }
        drop[a] = true;
    }
    for (int i = 0; i < t->rank; i++)
        if (!(n > 0 ? drop[i] : t->dims[i] == 1))
            dims[nd++] = t->dims[i];
    c->out[0] = dec_reshape(c, x, dims, nd);
    return true;
}

/* Unsqueeze: insert size-1 axes at the listed output positions. */
bool dec_unsqueeze(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t ax[MAXV], dims[IR_MAX_RANK];
    int n;
    bool ins[IR_MAX_RANK] = {false};
    if (runtime_input(c, 1, 13))
        return dec_rt_axes(c, DEC_RT_UNSQUEEZE, x, dec_in(c, 1),
                           t->rank + (int)dec_numel(dec_ty(c, dec_in(c, 1))), NULL, NULL);
    if (!ints_attr_or_input(c, "axes", 13, 1, ax, &n))
        return false;
    int r = t->rank + (n > 0 ? n : 0);
    if (n <= 0 || r > IR_MAX_RANK) {
        dec_err(c, n <= 0 ? "missing axes" : "result rank %d is more than supported", r);
        return false;
    }
    for (int i = 0; i < n; i++) {
        int a;
        if (!dec_axis(c, ax[i], r, &a))
            return false;
        if (ins[a]) {
            dec_err(c, "axis %d listed twice", a);
            return false;
        }
        ins[a] = true;
    }
    for (int i = 0, j = 0; i < r; i++)
        dims[i] = ins[i] ? 1 : t->dims[j++];
    c->out[0] = dec_reshape(c, x, dims, r);
    return true;
}

/* Flatten to [prod(dims[:axis]), prod(dims[axis:])]. */
bool dec_flatten(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t axis = dec_ai(c, "axis", 1);
    if (axis < 0)
        axis += t->rank;
    if (axis < 0 || axis > t->rank) {
        dec_err(c, "axis %lld out of range for rank %d", (long long)dec_ai(c, "axis", 1), t->rank);
        return false;
    }
    int64_t d[2] = {1, 1};
    for (int i = 0; i < t->rank; i++)
        d[i >= axis] *= t->dims[i];
    c->out[0] = dec_reshape(c, x, d, 2);
    return true;
}

/* Concat; empty inputs are dropped. */
bool dec_concat_op(DecCtx *c)
{
    int n = c->n->nin, m = 0, axis;
    if (n < 1 || !dec_need_in(c, 0))
        return false;
    const IrType *t0 = dec_ty(c, dec_in(c, 0));
    if (!dec_has_attr(c, "axis") && c->opset >= 4) {
        dec_err(c, "missing attribute axis");
        return false;
    }
    if (!dec_axis(c, dec_ai(c, "axis", 1), t0->rank, &axis))
        return false;
    ValId *xs = ir_scratch(c->g, sizeof(ValId) * (size_t)n);
    for (int i = 0; i < n; i++) {
        ValId v = dec_in(c, i);
        if (v == IR_NONE)
            continue;
        const IrType *t = dec_ty(c, v);
        if (t->dtype != t0->dtype || t->rank != t0->rank) {
            dec_err(c, "input %d has type %s rank %d, input 0 has %s rank %d", i,
                    ir_dtype_name(t->dtype), t->rank, ir_dtype_name(t0->dtype), t0->rank);
            return false;
        }
        if (dec_numel(t) > 0)
            xs[m++] = v;
    }
    if (m == 0)
        xs[m++] = dec_in(c, 0);
    c->out[0] = dec_concat(c, xs, m, axis);
    return true;
}

/* Split into SLICEs along axis: sizes from the split attribute/input, or equal
 * parts (the last one smaller when the dim does not divide). */
bool dec_split(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int axis, nout = c->n->nout, ns;
    int64_t sp[MAXV];
    if (!dec_axis(c, dec_ai(c, "axis", 0), t->rank, &axis))
        return false;
    if (runtime_input(c, 1, 13))
        return dec_rt_split(c, x, axis, dec_in(c, 1));
    if (!ints_attr_or_input(c, "split", 13, 1, sp, &ns))
        return false;
    int64_t d = t->dims[axis];
    if (ns < 0) {
        int64_t parts = dec_ai(c, "num_outputs", nout);
        if (parts != nout || nout < 1) {
            dec_err(c, "num_outputs %lld does not match %d outputs", (long long)parts, nout);
            return false;
        }
        int64_t chunk = (d + nout - 1) / nout;
        for (int i = 0; i < nout; i++) {
            int64_t left = d - chunk * i;
            sp[i] = left < 0 ? 0 : left < chunk ? left : chunk;
        }
        ns = nout;
    }
    int64_t sum = 0;
    for (int i = 0; i < ns; i++)
        sum += sp[i] >= 0 ? sp[i] : -1000000;
    if (ns != nout || sum != d) {
        dec_err(c, "split sizes (%d entries, sum %lld) do not match %d outputs and dim %lld", ns,
                (long long)sum, nout, (long long)d);
        return false;
    }
    int64_t off = 0;
    for (int i = 0; i < nout; i++) {
        c->out[i] = dec_slice_axis(c, x, axis, sp[i] > 0 ? off : 0, 1, sp[i]);
        off += sp[i];
    }
    return true;
}

/* One axis of ONNX Slice, clamped as the spec says; writes start and size, and sets
 * *step to 1 when at most one element is taken (a step of any size, INT64_MAX
 * included, then means nothing and must not reach stride arithmetic). */
static bool slice_axis(DecCtx *c, int64_t d, int64_t st, int64_t en, int64_t *step,
                       int64_t *ostart, int64_t *osize)
{
    int64_t sp = *step;
    if (sp == 0) {
        dec_err(c, "slice step is zero");
        return false;
    }
    if (st < 0)
        st += d;
    if (en < 0)
        en += d;
    int64_t size;                          /* ceil(extent / |step|), without overflow */
    if (sp > 0) {
        st = st < 0 ? 0 : st > d ? d : st;
        en = en < 0 ? 0 : en > d ? d : en;
        size = en > st ? (en - st - 1) / sp + 1 : 0;
    } else {
        st = st < 0 ? 0 : st > d - 1 ? d - 1 : st;
        en = en < -1 ? -1 : en > d - 1 ? d - 1 : en;
        size = st > en ? (sp < -d ? 1 : (st - en - 1) / -sp + 1) : 0;
    }
    *ostart = size > 0 ? st : 0;
    *osize = size;
    if (size <= 1)
        *step = 1;
    return true;
}

/* In a graph with bounded symbolic dimensions, x[..., -1:, ...]: the last position of
 * axis a (which may be symbolic) counted from its actual extent, as Gather(-1) is
 * (dec_gather_from_end), keeping the axis; the other axes as sliced (ost, osp, osz).
 * Only the last one: a start further from the end would be clamped by ONNX where the
 * actual extent is shorter, which a constant index cannot follow. */
static ValId slice_last(DecCtx *c, ValId x, int a, int64_t *ost, int64_t *osp, int64_t *osz)
{
    int64_t keep = osz[a], minus1 = -1, one = 1;
    osz[a] = dec_ty(c, x)->dims[a];            /* axis a whole, the others sliced */
    ost[a] = 0;
    osp[a] = 1;
    ValId y = dec_slice(c, x, ost, osp, osz);
    osz[a] = keep;
    return dec_gather_from_end(c, y, dec_const_i64(c->g, &one, 1, &minus1), a);
}

/* In a graph with bounded symbolic dimensions, a slice whose end along the axes of bit
 * mask tail (each cut, so never an identity) is counted from the end (ends negative or
 * past the extent, start from the front, step 1: x[:, 1:], x[:, :-1]): those axes
 * marked (SLICE attr tail), so that pass_symdim takes such an axis that is symbolic as
 * the derived size n - start - e (e the positions left at the end), the prefix of the
 * slice made at the bound. */
static ValId slice_tail(DecCtx *c, ValId x, const int64_t *ost, const int64_t *osp,
                        const int64_t *osz, int64_t tail)
{
    int r = dec_ty(c, x)->rank;
    IrAttr a[4] = {ir_attr_ints_ref("starts", ost, r), ir_attr_ints_ref("steps", osp, r),
                   ir_attr_ints_ref("sizes", osz, r), ir_attr_int("tail", tail)};
    return dec_op(c, IR_OP_SLICE, &x, 1, a, 4);
}

/* The one axis that Slice takes from start -1 to the end with step 1 (x[:, -1:]), or
 * -1: the case slice_last serves. */
static int from_last(const int64_t *st, const int64_t *en, const int64_t *sp, int np,
                     const int64_t *ax, int na, int ns, int rank)
{
    int found = -1;
    for (int i = 0; i < ns; i++) {
        int a = (int)(na >= 0 ? ax[i] : i);
        a = a < 0 ? a + rank : a;
        if (st[i] == -1 && en[i] >= INT32_MAX && (np < 0 || sp[i] == 1)) {
            if (found >= 0)
                return -1;
            found = a;
        }
    }
    return found;
}

/* Slice: attributes (opset < 10) or inputs starts/ends/axes/steps. */
bool dec_slice_op(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t st[MAXV], en[MAXV], ax[MAXV], sp[MAXV];
    int ns, ne, na = -1, np = -1;
    for (int i = 1; i <= 4; i++)
        if (runtime_input(c, i, 10))
            return dec_rt_slice(c, x);
    if (!ints_attr_or_input(c, "starts", 10, 1, st, &ns) ||
        !ints_attr_or_input(c, "ends", 10, 2, en, &ne) ||
        !ints_attr_or_input(c, "axes", 10, 3, ax, &na))
        return false;
    if (c->opset >= 10 && dec_in(c, 4) != IR_NONE &&
        !dec_const_ints(c, dec_in(c, 4), "steps", sp, MAXV, &np))
        return false;
    if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns)) {
        dec_err(c, "starts, ends, axes and steps must have the same length");
        return false;
    }
    int64_t ost[IR_MAX_RANK], osp[IR_MAX_RANK], osz[IR_MAX_RANK], tail = 0;
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < t->rank; i++) {
        ost[i] = 0;
        osp[i] = 1;
        osz[i] = t->dims[i];
    }
    for (int i = 0; i < ns; i++) {
        int a;
        if (!dec_axis(c, na >= 0 ? ax[i] : i, t->rank, &a))
            return false;
        if (seen[a]) {
            dec_err(c, "axis %d sliced twice", a);
            return false;
        }
        seen[a] = true;
        osp[a] = np >= 0 ? sp[i] : 1;
        if (!slice_axis(c, t->dims[a], st[i], en[i], &osp[a], &ost[a], &osz[a]))
            return false;
        if (osp[a] == 1 && st[i] >= 0 && (en[i] < 0 || en[i] >= t->dims[a]) && osz[a] > 0 &&
            osz[a] < t->dims[a])
            tail |= (int64_t)1 << a;           /* x[:, s:], x[:, s:-e]: ends at the end */
    }
    bool sym = c->g->nsymdims && !ir_is_const(c->g, x);  /* a constant's axes are static */
    int last = sym ? from_last(st, en, sp, np, ax, na, ns, t->rank) : -1;
    if (last >= 0 && t->dims[last] > 1)
        c->out[0] = slice_last(c, x, last, ost, osp, osz);
    else if (sym && tail)
        c->out[0] = slice_tail(c, x, ost, osp, osz, tail);
    else
        c->out[0] = dec_slice(c, x, ost, osp, osz);
    return true;
}

/* Expand: bidirectional broadcast of the input with a constant shape. */
bool dec_expand_op(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    ValId x = dec_in(c, 0);
    int64_t sh[MAXV];
    int n;
    if (runtime_input(c, 1, 8) && dec_rt_expand(c, x))
        return true;
    if (ir_failed(c->g) || !dec_const_ints(c, dec_in(c, 1), "shape", sh, MAXV, &n))
        return false;
    IrType ts = {.dtype = IR_DT_I64, .rank = n};
    if (n > IR_MAX_RANK) {
        dec_err(c, "shape rank %d is more than supported", n);
        return false;
    }
    for (int i = 0; i < n; i++)
        ts.dims[i] = sh[i];
    int64_t dims[IR_MAX_RANK];
    int r;
    if (!dec_broadcast(dec_ty(c, x), &ts, dims, &r)) {
        dec_err(c, "input shape does not broadcast to the requested shape");
        return false;
    }
    c->out[0] = dec_expand_from(c, x, dims, r, dec_in(c, 1));
    return true;
}

/* Tile: reshape to [1, d0, 1, d1, ...], expand to [r0, d0, r1, d1, ...], reshape. */
bool dec_tile(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t rep[MAXV];
    int n;
    if (runtime_input(c, 1, 6) && dec_rt_tile(c, x))
        return true;
    if (ir_failed(c->g) || !dec_const_ints(c, dec_in(c, 1), "repeats", rep, MAXV, &n))
        return false;
    if (n != t->rank) {
        dec_err(c, "repeats has %d entries for rank %d", n, t->rank);
        return false;
    }
    int64_t inter[2 * IR_MAX_RANK], big[2 * IR_MAX_RANK], out[IR_MAX_RANK];
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (rep[i] < 0) {
            dec_err(c, "negative repeat %lld", (long long)rep[i]);
            return false;
        }
        if (__builtin_mul_overflow(t->dims[i], rep[i], &out[i])) {
            char buf[256];
            dec_err(c, "repeats %s: axis %d of %lld x %lld elements overflows int64",
                    shape_text(rep, n, buf, sizeof buf), i, (long long)t->dims[i],
                    (long long)rep[i]);
            return false;
        }
        if (rep[i] != 1) {
            inter[k] = 1;
            big[k++] = rep[i];
        }
        inter[k] = t->dims[i];
        big[k++] = t->dims[i];
    }
    if (k > IR_MAX_RANK) {
        dec_err(c, "unsupported: Tile over too many axes");
        return false;
    }
    ValId v = dec_reshape(c, x, inter, k);
    v = dec_expand(c, v, big, k);
    c->out[0] = dec_reshape(c, v, out, n);
    return true;
}

/* Source position of output position p (may be outside [0,d)) for reflect, edge
 * or wrap padding. */
static int64_t pad_src(const char *mode, int64_t p, int64_t d)
{
    if (strcmp(mode, "edge") == 0)
        return p < 0 ? 0 : p >= d ? d - 1 : p;
    if (strcmp(mode, "wrap") == 0)
        return ((p % d) + d) % d;
    if (d == 1)
        return 0;
    int64_t period = 2 * (d - 1);
    p = ((p % period) + period) % period;
    return p < d ? p : period - p;
}

#define PAD_RUNS 8   /* at most this many slices take a padded last axis (pad_runs) */

/* x taken along its last axis a at the positions v[0..n) as a CONCAT of slices, each a
 * run of v with step 1 or -1 (reflect, wrap) or a repeated position (edge: a slice of
 * one, expanded); IR_NONE when v has more than PAD_RUNS runs. A GATHER along the last
 * axis copies an element per index: a reflect pad of 4 around 64 x 128 x 128 took 3x
 * onnxruntime's time, where the slices copy whole runs of each row. */
static ValId pad_runs(DecCtx *c, ValId x, int a, const int64_t *v, int64_t n)
{
    ValId parts[PAD_RUNS];
    int np = 0;
    for (int64_t i = 0, j; i < n; i = j) {
        int64_t step = i + 1 < n ? v[i + 1] - v[i] : 1;
        step = step >= -1 && step <= 1 ? step : 1;
        for (j = i + 1; j < n && v[j] - v[j - 1] == step; j++)
            ;
        if (np == PAD_RUNS)
            return IR_NONE;
        if (step) {
            parts[np++] = dec_slice_axis(c, x, a, v[i], step, j - i);
            continue;
        }
        ValId one = dec_slice_axis(c, x, a, v[i], 1, 1);
        IrType t = *dec_ty(c, one);
        t.dims[a] = j - i;
        parts[np++] = dec_expand(c, one, t.dims, t.rank);
    }
    return dec_concat(c, parts, np, a);
}

/* Pad: constant mode is one PAD node; reflect/edge/wrap are a GATHER per padded
 * axis with a constant index vector, or slices of runs of it on the last axis
 * (pad_runs). */
bool dec_pad_op(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int r = t->rank, np, na = -1;
    int64_t pv[2 * MAXV], ax[MAXV], pads[2 * IR_MAX_RANK] = {0};
    double value = 0;
    const char *mode = dec_as(c, "mode", "constant");
    bool rt = runtime_input(c, 1, 11) || runtime_input(c, 2, 11) || runtime_input(c, 3, 18);
    if (rt && dec_in(c, 1) != IR_NONE && dec_rt_pad(c, x, mode))
        return true;
    if (ir_failed(c->g) || !ints_attr_or_input(c, "pads", 11, 1, pv, &np))
        return false;
    if (c->opset < 11)
        value = dec_af(c, "value", 0.0);
    else if (dec_in(c, 2) != IR_NONE && dec_numel(dec_ty(c, dec_in(c, 2))) > 0 &&
             !dec_const_scalar(c, dec_in(c, 2), "constant_value", &value))
        return false;
    if (c->opset >= 18 && dec_in(c, 3) != IR_NONE &&
        !dec_const_ints(c, dec_in(c, 3), "axes", ax, MAXV, &na))
        return false;
    int nax = na >= 0 ? na : r;
    if (np != 2 * nax) {
        dec_err(c, "pads has %d entries, expected %d", np, 2 * nax);
        return false;
    }
    for (int i = 0; i < nax; i++) {
        int a = i;
        if (na >= 0 && !dec_axis(c, ax[i], r, &a))
            return false;
        pads[a] = pv[i];
        pads[r + a] = pv[nax + i];
        int64_t size;                        /* pads are any int64: the sum may overflow */
        if (__builtin_add_overflow(t->dims[a], pads[a], &size) ||
            __builtin_add_overflow(size, pads[r + a], &size)) {
            dec_err(c, "pads of axis %d (%lld, %lld) overflow its size", a, (long long)pads[a],
                    (long long)pads[r + a]);
            return false;
        }
        if (size < 0) {
            dec_err(c, "pads remove more than the whole axis %d", a);
            return false;
        }
    }
    if (strcmp(mode, "constant") == 0) {
        c->out[0] = dec_pad(c, x, pads, NULL, value);
        return true;
    }
    if (strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0 && strcmp(mode, "wrap") != 0) {
        dec_err(c, "unknown pad mode '%s'", mode);
        return false;
    }
    for (int a = 0; a < r; a++) {
        int64_t d = t->dims[a], lo = pads[a], n = d + lo + pads[r + a];
        if (lo == 0 && pads[r + a] == 0)
            continue;
        if (d == 0) {
            dec_err(c, "cannot %s-pad an empty axis", mode);
            return false;
        }
        if (!dec_fits(c, n, sizeof(int64_t), "the index table of a padded axis"))
            return false;
        int64_t *v = ir_scratch(c->g, sizeof(int64_t) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++)
            v[i] = pad_src(mode, i - lo, d);
        ValId y = a == r - 1 && !c->g->nsymdims ? pad_runs(c, x, a, v, n) : IR_NONE;
        x = y != IR_NONE ? y : dec_gather(c, x, dec_const_i64(c->g, &n, 1, v), a);
    }
    c->out[0] = x;
    return true;
}

/* DepthToSpace (DCR or CRD) as reshape, transpose, reshape. */
bool dec_depth_to_space(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t b = dec_ai(c, "blocksize", 0);
    if (t->rank != 4 || b < 1 || t->dims[1] % (b * b) != 0) {
        dec_err(c, "needs a 4-D input whose channels divide by blocksize^2");
        return false;
    }
    int64_t n = t->dims[0], ch = t->dims[1] / (b * b), h = t->dims[2], w = t->dims[3];
    bool crd = strcmp(dec_as(c, "mode", "DCR"), "CRD") == 0;
    int64_t d6[6] = {n, b, b, ch, h, w}, c6[6] = {n, ch, b, b, h, w};
    int64_t pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
    int64_t o4[4] = {n, ch, h * b, w * b};
    ValId v = dec_reshape(c, x, crd ? c6 : d6, 6);
    v = dec_transpose(c, v, crd ? pc : pd);
    c->out[0] = dec_reshape(c, v, o4, 4);
    return true;
}

bool dec_space_to_depth(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t b = dec_ai(c, "blocksize", 0);
    if (t->rank != 4 || b < 1 || t->dims[2] % b != 0 || t->dims[3] % b != 0) {
        dec_err(c, "needs a 4-D input whose spatial dims divide by blocksize");
        return false;
    }
    int64_t n = t->dims[0], ch = t->dims[1], h = t->dims[2] / b, w = t->dims[3] / b;
    bool crd = strcmp(dec_as(c, "mode", "DCR"), "CRD") == 0;
    int64_t d6[6] = {n, ch, h, b, w, b}, o4[4] = {n, ch * b * b, h, w};
    int64_t pd[6] = {0, 3, 5, 1, 2, 4}, pc[6] = {0, 1, 3, 5, 2, 4};
    ValId v = dec_reshape(c, x, d6, 6);
    v = dec_transpose(c, v, crd ? pc : pd);
    c->out[0] = dec_reshape(c, v, o4, 4);
    return true;
}

/* CenterCropPad: per axis, a centred SLICE (crop) or zero PAD (extra pixel at the
 * end when odd) to the constant target shape. */
bool dec_center_crop_pad(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    ValId x = dec_in(c, 0);
    IrType t = *dec_ty(c, x);
    int64_t sh[MAXV], ax[IR_MAX_RANK];
    int n;
    if (runtime_input(c, 1, 18) && dec_rt_center_crop_pad(c, x))
        return true;
    if (ir_failed(c->g) || !dec_const_ints(c, dec_in(c, 1), "shape", sh, MAXV, &n))
        return false;
    const int64_t *av;
    int na = dec_aints(c, "axes", &av);
    if ((na >= 0 ? na : t.rank) != n) {
        dec_err(c, "shape has %d entries, expected %d", n, na >= 0 ? na : t.rank);
        return false;
    }
    for (int i = 0; i < n; i++) {
        int a = i;
        if (na >= 0 && !dec_axis(c, av[i], t.rank, &a))
            return false;
        ax[i] = a;
        if (sh[i] < 0) {
            dec_err(c, "negative target size %lld", (long long)sh[i]);
            return false;
        }
    }
    for (int i = 0; i < n; i++) {
        int a = (int)ax[i];
        int64_t d = dec_ty(c, x)->dims[a], want = sh[i];
        if (want < d) {
            x = dec_slice_axis(c, x, a, (d - want) / 2, 1, want);
        } else if (want > d) {
            int64_t pads[2 * IR_MAX_RANK] = {0};
            pads[a] = (want - d) / 2;
            pads[t.rank + a] = want - d - (want - d) / 2;
            x = dec_pad(c, x, pads, NULL, 0.0);
        }
    }
    c->out[0] = x;
    return true;
}
