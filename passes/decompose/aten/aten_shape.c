/* aten_shape.c: ATen views and data movement: view/reshape/flatten/unflatten,
 * permute/transpose, (un)squeeze, slice/select/narrow, expand, repeat, cat/stack,
 * split/chunk/unbind, flip, roll, constant padding and tril/triu, as RESHAPE,
 * TRANSPOSE, SLICE, EXPAND, CONCAT, PAD and SELECT core ops.
 */
#include <stdlib.h>
#include <string.h>

#include "aten.h"

/* Op base name. */
static const char *op_name(const DecCtx *c, char *buf, size_t len)
{
    return aten_base(c->n->foreign.op_type, buf, len);
}

/* "self" (or "input"), reporting when absent. */
static bool get_self(DecCtx *c, ValId *x)
{
    *x = aten_in(c, "self");
    if (*x == IR_NONE)
        *x = aten_in(c, "input");
    if (*x == IR_NONE)
        dec_err(c, "missing tensor argument 'self'");
    return *x != IR_NONE;
}

/* "self" and its argument "dim" (default 0) as an axis of it, reporting errors. */
static bool get_self_dim(DecCtx *c, ValId *x, int *ax)
{
    return get_self(c, x) && dec_axis(c, dec_ai(c, "dim", 0), dec_ty(c, *x)->rank, ax);
}

/* Output 0 is x reshaped to the recorded output shape; returns true. */
static bool out_recorded_shape(DecCtx *c, ValId x)
{
    const IrType *o = aten_oty(c, 0);
    c->out[0] = dec_reshape(c, x, o->dims, o->rank);
    return true;
}

/* view/_unsafe_view/reshape (size|shape, one -1 allowed), view_as/reshape_as: the
 * result must be the recorded output shape. */
bool aten_view(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    const IrType *o = aten_oty(c, 0);
    int64_t numel = dec_numel(dec_ty(c, x));
    int64_t d[IR_MAX_RANK];
    int n = aten_ints(c, dec_has_attr(c, "shape") ? "shape" : "size", d, IR_MAX_RANK, 0);
    if (n == -2)
        return false;
    if (n >= 0) { /* check the arguments against the recorded shape */
        int64_t known = 1, neg = -1;
        for (int i = 0; i < n; i++) {
            if (d[i] == -1 && neg < 0) {
                neg = i;
            } else if (__builtin_mul_overflow(known, d[i], &known)) {
                dec_err(c, "view size: the product of the sizes overflows int64 at entry %d", i);
                return false;
            }
        }
        if (neg >= 0 && known > 0)
            d[neg] = numel / known;
        bool same = n == o->rank;
        for (int i = 0; same && i < n; i++)
            same = d[i] == o->dims[i];
        if (!same) {
            dec_err(c, "view size does not give the recorded shape");
            return false;
        }
    }
    return out_recorded_shape(c, x);
}

/* flatten(start_dim, end_dim) and unflatten(dim, sizes): reshapes to the recorded
 * shape after checking the dims. */
bool aten_flatten(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    const IrType *t = dec_ty(c, x);
    int r = t->rank > 0 ? t->rank : 1, s, e;
    if (!dec_axis(c, dec_ai(c, "start_dim", 0), r, &s) ||
        !dec_axis(c, dec_ai(c, "end_dim", -1), r, &e))
        return false;
    if (s > e) {
        dec_err(c, "flatten start_dim %d is after end_dim %d", s, e);
        return false;
    }
    return out_recorded_shape(c, x);
}

bool aten_unflatten(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    if (dec_numel(aten_oty(c, 0)) != dec_numel(dec_ty(c, x))) {
        dec_err(c, "unflatten changes the element count");
        return false;
    }
    return out_recorded_shape(c, x);
}

/* permute(dims) (negative dims allowed); numpy_T reverses all dims. */
bool aten_permute(DecCtx *c)
{
    char buf[128];
    ValId x;
    if (!get_self(c, &x))
        return false;
    int r = dec_ty(c, x)->rank;
    int64_t p[IR_MAX_RANK];
    if (strcmp(op_name(c, buf, sizeof buf), "numpy_T") == 0) {
        for (int i = 0; i < r; i++)
            p[i] = r - 1 - i;
    } else if (aten_ints(c, "dims", p, IR_MAX_RANK, 0) != r) {
        dec_err(c, "permute needs %d dims", r);
        return false;
    }
    for (int i = 0; i < r; i++) {
        int a;
        if (!dec_axis(c, p[i], r, &a))
            return false;
        p[i] = a;
    }
    c->out[0] = dec_transpose(c, x, p);
    return true;
}

/* transpose(dim0, dim1), swapaxes/swapdims(axis0, axis1), t (rank <= 2). */
bool aten_transpose(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    int r = dec_ty(c, x)->rank, a, b;
    if (r < 2) { /* t() of a vector or scalar is itself */
        c->out[0] = x;
        return true;
    }
    int64_t d0 = dec_has_attr(c, "dim0") ? dec_ai(c, "dim0", 0) : dec_ai(c, "axis0", 0);
    int64_t d1 = dec_has_attr(c, "dim1") ? dec_ai(c, "dim1", 1) : dec_ai(c, "axis1", 1);
    if (!dec_axis(c, d0, r, &a) || !dec_axis(c, d1, r, &b))
        return false;
    int64_t p[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        p[i] = i;
    p[a] = b;
    p[b] = a;
    c->out[0] = dec_transpose(c, x, p);
    return true;
}

/* unsqueeze(dim) and squeeze(dim | dims | all): reshapes to the recorded shape. */
bool aten_unsqueeze(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    int r = dec_ty(c, x)->rank, a;
    if (!dec_axis(c, dec_ai(c, "dim", 0), r + 1, &a))
        return false;
    return out_recorded_shape(c, x);
}

bool aten_squeeze(DecCtx *c)
{
    ValId x;
    return get_self(c, &x) && out_recorded_shape(c, x);
}

/* Clamp a Python-style slice bound into [0, d]. */
static int64_t clamp_bound(int64_t v, int64_t d)
{
    if (v < 0)
        v += d;
    return v < 0 ? 0 : v > d ? d : v;
}

/* slice(dim, start, end, step) and narrow(dim, start, length). */
bool aten_slice(DecCtx *c)
{
    char buf[128];
    ValId x;
    int ax;
    if (!get_self_dim(c, &x, &ax))
        return false;
    int64_t d = dec_ty(c, x)->dims[ax], st, en, step = dec_ai(c, "step", 1);
    if (strcmp(op_name(c, buf, sizeof buf), "narrow") == 0) {
        st = clamp_bound(dec_ai(c, "start", 0), d);
        int64_t len = dec_ai(c, "length", 0);
        en = len > d - st ? d + 1 : st + len;  /* past the end is refused below */
    } else {
        st = clamp_bound(dec_ai(c, "start", 0), d);
        en = clamp_bound(dec_ai(c, "end", INT64_MAX), d);
    }
    if (step < 1 || en > d) {
        dec_err(c, "slice step must be positive and the end inside the dimension");
        return false;
    }
    int64_t size = en > st ? (en - st - 1) / step + 1 : 0; /* no overflow at huge steps */
    c->out[0] = dec_slice_axis(c, x, ax, size ? st : 0, size > 1 ? step : 1, size);
    return true;
}

/* select(dim, index): a one-element slice with that dim dropped. */
bool aten_select(DecCtx *c)
{
    ValId x;
    int ax;
    if (!get_self_dim(c, &x, &ax))
        return false;
    int64_t d = dec_ty(c, x)->dims[ax], i = dec_ai(c, "index", 0);
    if (i < -d || i >= d) {
        dec_err(c, "index %lld is out of range for dimension %d of size %lld", (long long)i, ax,
                (long long)d);
        return false;
    }
    return out_recorded_shape(c, dec_slice_axis(c, x, ax, i < 0 ? i + d : i, 1, 1));
}

/* unfold(dimension, size, step) (Tensor.unfold): the windows of `size` elements every
 * `step` along `dimension`, on a new last axis: out[.., i, .., j] = self[.., i*step + j,
 * ..]. One strided SLICE of the windows' j-th elements per j, stacked on the new axis
 * (one SLICE when size is 1). */
bool aten_unfold(DecCtx *c)
{
    ValId x;
    int ax;
    if (!get_self(c, &x))
        return false;
    const IrType *t = dec_ty(c, x);
    if (t->rank == 0 || !dec_axis(c, dec_ai(c, "dimension", 0), t->rank, &ax))
        return false;
    int64_t n = t->dims[ax], size = dec_ai(c, "size", 0), step = dec_ai(c, "step", 0);
    if (size < 1 || step < 1 || size > n || size > ATEN_MAX_LIST) {
        dec_err(c, "unfold: window size %lld, step %lld over a dimension of %lld", (long long)size,
                (long long)step, (long long)n);
        return false;
    }
    int64_t count = (n - size) / step + 1, d[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        d[i] = i == ax ? count : t->dims[i];
    d[t->rank] = 1;
    ValId *js = ir_scratch(c->g, (size_t)size * sizeof *js);
    for (int64_t j = 0; j < size; j++)
        js[j] = dec_reshape(c, dec_slice_axis(c, x, ax, j, count > 1 ? step : 1, count), d,
                            t->rank + 1);
    c->out[0] = dec_concat(c, js, (int)size, t->rank);
    return true;
}

/* expand(size) (-1 keeps a dim), expand_as, broadcast_to: the recorded shape. */
bool aten_expand(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    const IrType *o = aten_oty(c, 0);
    c->out[0] = dec_expand(c, dec_cast(c, x, o->dtype), o->dims, o->rank);
    return true;
}

/* repeat(repeats): tile by interleaving unit dims, expanding and merging. */
bool aten_repeat(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    const IrType *t = dec_ty(c, x);
    int64_t rep[IR_MAX_RANK], d[2 * IR_MAX_RANK], e[2 * IR_MAX_RANK];
    int n = aten_ints(c, "repeats", rep, IR_MAX_RANK, 0);
    if (n < t->rank || 2 * n > IR_MAX_RANK) {
        if (n != -2)
            dec_err(c, "repeat needs between %d and %d repeats", t->rank, IR_MAX_RANK / 2);
        return false;
    }
    for (int i = 0; i < n; i++) {
        int j = i - (n - t->rank);
        d[2 * i] = 1;
        d[2 * i + 1] = j >= 0 ? t->dims[j] : 1;
        e[2 * i] = rep[i];
        e[2 * i + 1] = d[2 * i + 1];
    }
    return out_recorded_shape(c, dec_expand(c, dec_reshape(c, x, d, 2 * n), e, 2 * n));
}

/* Each of the n elements along axis ax of x (rank r) rep times in a row: a unit axis
 * after ax expanded to rep, then merged into ax. */
static ValId repeat_each(DecCtx *c, ValId x, int ax, int64_t rep)
{
    const IrType *t = dec_ty(c, x);
    int64_t d[IR_MAX_RANK], e[IR_MAX_RANK];
    int r = t->rank;
    for (int i = 0, j = 0; i < r; i++) {
        d[j] = e[j] = t->dims[i], j++;
        if (i == ax)
            d[j] = 1, e[j] = rep, j++;
    }
    ValId y = dec_expand(c, dec_reshape(c, x, d, r + 1), e, r + 1);
    memcpy(d, t->dims, sizeof(int64_t) * (size_t)r);
    d[ax] *= rep;
    return dec_reshape(c, y, d, r);
}

/* The counts of repeat_interleave into rep[0..*nr): the int argument "repeats" or the
 * constant tensor of that name, each non-negative; their sum in *total. */
static bool repeat_counts(DecCtx *c, int64_t *rep, int *nr, int64_t *total)
{
    ValId rv = aten_in(c, "repeats");
    *nr = 1;
    if (rv == IR_NONE)
        rep[0] = dec_ai(c, "repeats", -1);
    else if (!dec_const_ints(c, rv, "repeat_interleave repeats", rep, ATEN_MAX_LIST, nr))
        return false;
    *total = 0;
    for (int i = 0; i < *nr; i++) {
        if (rep[i] < 0) {
            dec_err(c, "repeat_interleave repeats must be non-negative");
            return false;
        }
        *total += rep[i];
    }
    return true;
}

/* The positions 0..nr-1, position i rep[i] times in a row: a constant of total
 * int64s (IR_NONE, reported, when out of memory). */
static ValId repeat_positions(DecCtx *c, const int64_t *rep, int nr, int64_t total)
{
    if (!dec_fits(c, total, 8, "repeat_interleave indices"))
        return IR_NONE;
    int64_t *idx = malloc((size_t)(total ? total : 1) * sizeof *idx);
    if (!idx) {
        dec_err(c, "out of memory");
        return IR_NONE;
    }
    for (int64_t i = 0, k = 0; i < nr; i++)
        for (int64_t j = 0; j < rep[i]; j++)
            idx[k++] = i;
    ValId v = dec_const_i64(c->g, &total, 1, idx);
    free(idx);
    return v;
}

/* repeat_interleave(self, repeats, dim, output_size): every element along dim (of the
 * flattened tensor when dim is None) repeats times in a row. repeats is an int or a
 * constant tensor: one count for all (an EXPAND), or one per element (a GATHER of
 * constant positions). Without self (the .Tensor overload of core ATen), the
 * positions themselves: i repeats[i] times. */
bool aten_repeat_interleave(DecCtx *c)
{
    int64_t rep[ATEN_MAX_LIST], total;
    int nr;
    ValId x = aten_in(c, "self");
    if (x == IR_NONE && aten_in(c, "input") == IR_NONE && aten_in(c, "repeats") != IR_NONE) {
        if (!repeat_counts(c, rep, &nr, &total))
            return false;
        c->out[0] = dec_cast(c, repeat_positions(c, rep, nr, total), aten_oty(c, 0)->dtype);
        return c->out[0] != IR_NONE;
    }
    if (!get_self(c, &x) || !repeat_counts(c, rep, &nr, &total))
        return false;
    const IrType *t = dec_ty(c, x);
    int ax = 0;
    if (!dec_has_attr(c, "dim")) {
        int64_t n = 1;
        for (int i = 0; i < t->rank; i++)
            n *= t->dims[i];
        x = dec_reshape(c, x, &n, 1);
        t = dec_ty(c, x);
    } else if (t->rank < 1) {
        dec_err(c, "repeat_interleave along a dim of a rank-0 tensor");
        return false;
    } else if (!dec_axis(c, dec_ai(c, "dim", 0), t->rank, &ax)) {
        return false;
    }
    if (nr != 1 && nr != t->dims[ax]) {
        dec_err(c, "repeat_interleave has %d repeats for a dimension of %lld", nr,
                (long long)t->dims[ax]);
        return false;
    }
    bool same = true;
    for (int i = 1; i < nr; i++)
        same = same && rep[i] == rep[0];
    if (same) {
        c->out[0] = repeat_each(c, x, ax, rep[0]);
        return true;
    }
    ValId idx = repeat_positions(c, rep, nr, total);
    c->out[0] = idx == IR_NONE ? IR_NONE : dec_gather(c, x, idx, ax);
    return c->out[0] != IR_NONE;
}

/* cat(tensors, dim): empty legacy 1-D tensors are skipped; inputs cast to the result
 * dtype. */
bool aten_cat(DecCtx *c)
{
    ValId xs[ATEN_MAX_LIST], keep[ATEN_MAX_LIST];
    int n = aten_ins(c, "tensors", xs, ATEN_MAX_LIST), k = 0, ax;
    const IrType *o = aten_oty(c, 0);
    for (int i = 0; i < n; i++) {
        const IrType *t = dec_ty(c, xs[i]);
        if (t->rank == 1 && t->dims[0] == 0 && o->rank != 1)
            continue;
        keep[k++] = dec_cast(c, xs[i], o->dtype);
    }
    if (k == 0 || !dec_axis(c, dec_ai(c, "dim", 0), o->rank, &ax)) {
        if (k == 0)
            dec_err(c, "cat of no tensors");
        return false;
    }
    c->out[0] = dec_concat(c, keep, k, ax);
    return true;
}

/* stack(tensors, dim): each input gets a unit dim, then CONCAT. */
bool aten_stack(DecCtx *c)
{
    ValId xs[ATEN_MAX_LIST];
    int n = aten_ins(c, "tensors", xs, ATEN_MAX_LIST), ax;
    const IrType *o = aten_oty(c, 0);
    if (n == 0 || !dec_axis(c, dec_ai(c, "dim", 0), o->rank, &ax)) {
        if (n == 0)
            dec_err(c, "stack of no tensors");
        return false;
    }
    for (int i = 0; i < n; i++) {
        const IrType *t = dec_ty(c, xs[i]);
        int64_t d[IR_MAX_RANK];
        for (int j = 0, k = 0; j < o->rank; j++)
            d[j] = j == ax ? 1 : t->dims[k++];
        xs[i] = dec_reshape(c, dec_cast(c, xs[i], o->dtype), d, o->rank);
    }
    c->out[0] = dec_concat(c, xs, n, ax);
    return true;
}

/* split(split_size | split_sizes), split_with_sizes, chunk(chunks): consecutive slices
 * whose sizes are the recorded output shapes. */
bool aten_split(DecCtx *c)
{
    ValId x;
    int ax;
    if (!get_self_dim(c, &x, &ax))
        return false;
    const IrType *t = dec_ty(c, x);
    int64_t off = 0;
    for (int i = 0; i < c->n->nout && i < DEC_MAX_OUT; i++) {
        int64_t sz = aten_oty(c, i)->dims[ax];
        if (off + sz > t->dims[ax]) {
            dec_err(c, "split outputs exceed dimension %d", ax);
            return false;
        }
        c->out[i] = dec_slice_axis(c, x, ax, off, 1, sz);
        off += sz;
    }
    return true;
}

/* unbind(dim): one select per index. */
bool aten_unbind(DecCtx *c)
{
    ValId x;
    int ax;
    if (!get_self_dim(c, &x, &ax))
        return false;
    const IrType *t = dec_ty(c, x);
    for (int i = 0; i < c->n->nout && i < DEC_MAX_OUT && i < t->dims[ax]; i++) {
        const IrType *o = aten_oty(c, i);
        c->out[i] = dec_reshape(c, dec_slice_axis(c, x, ax, i, 1, 1), o->dims, o->rank);
    }
    return true;
}

/* flip(dims): negative-step slices. */
bool aten_flip(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    const IrType *t = dec_ty(c, x);
    int64_t dims[IR_MAX_RANK], st[IR_MAX_RANK], sp[IR_MAX_RANK], sz[IR_MAX_RANK];
    int n = aten_ints(c, "dims", dims, IR_MAX_RANK, 0);
    for (int i = 0; i < t->rank; i++)
        st[i] = 0, sp[i] = 1, sz[i] = t->dims[i];
    for (int i = 0; i < n; i++) {
        int a;
        if (!dec_axis(c, dims[i], t->rank, &a))
            return false;
        if (t->dims[a] > 0)
            st[a] = t->dims[a] - 1, sp[a] = -1;
    }
    c->out[0] = dec_slice(c, x, st, sp, sz);
    return true;
}

/* roll(shifts, dims): per dim, the last `shift` elements move to the front. */
bool aten_roll(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    int64_t sh[IR_MAX_RANK], dims[IR_MAX_RANK];
    int ns = aten_ints(c, "shifts", sh, IR_MAX_RANK, 0);
    int nd = aten_ints(c, "dims", dims, IR_MAX_RANK, 0);
    if (nd <= 0 || ns != nd) {
        dec_err(c, "roll without dims (over the flattened tensor) is not supported");
        return false;
    }
    for (int i = 0; i < nd; i++) {
        const IrType *t = dec_ty(c, x);
        int a;
        if (!dec_axis(c, dims[i], t->rank, &a))
            return false;
        int64_t d = t->dims[a], s = d ? ((sh[i] % d) + d) % d : 0;
        if (s == 0)
            continue;
        ValId parts[2] = {dec_slice_axis(c, x, a, d - s, 1, s),
                          dec_slice_axis(c, x, a, 0, 1, d - s)};
        x = dec_concat(c, parts, 2, a);
    }
    c->out[0] = x;
    return true;
}

/* One side of a reflect/replicate border on axis ax: n elements next to the edge
 * (lo: the start), mirrored (reflect, edge excluded) or the edge repeated. */
static ValId border(DecCtx *c, ValId x, int ax, int64_t n, bool lo, bool reflect)
{
    int64_t d = dec_ty(c, x)->dims[ax];
    if (!reflect) {
        const IrType *t = dec_ty(c, x);
        int64_t e[IR_MAX_RANK];
        for (int i = 0; i < t->rank; i++)
            e[i] = i == ax ? n : t->dims[i];
        return dec_expand(c, dec_slice_axis(c, x, ax, lo ? 0 : d - 1, 1, 1), e, t->rank);
    }
    return lo ? dec_slice_axis(c, x, ax, n, -1, n) : dec_slice_axis(c, x, ax, d - 2, -1, n);
}

/* Reflect or replicate padding (pads as in aten_pad, non-negative). */
static bool border_pad(DecCtx *c, ValId *x, const int64_t *pads, bool reflect)
{
    const IrType *t = dec_ty(c, *x);
    int r = t->rank;
    for (int ax = 0; ax < r; ax++) {
        int64_t lo = pads[ax], hi = pads[r + ax], d = dec_ty(c, *x)->dims[ax];
        if (lo == 0 && hi == 0)
            continue;
        if (lo < 0 || hi < 0 || (reflect ? (lo >= d || hi >= d) : d == 0)) {
            dec_err(c, "padding %lld/%lld does not fit dimension %d of size %lld", (long long)lo,
                    (long long)hi, ax, (long long)d);
            return false;
        }
        ValId parts[3];
        int n = 0;
        if (lo)
            parts[n++] = border(c, *x, ax, lo, true, reflect);
        parts[n++] = *x;
        if (hi)
            parts[n++] = border(c, *x, ax, hi, false, reflect);
        *x = dec_concat(c, parts, n, ax);
    }
    return true;
}

/* constant_pad_nd(pad, value), pad(pad, mode, value), reflection_padNd(padding),
 * replication_padNd(padding): the list gives pairs from the last dim backwards;
 * negative constant pads crop. */
bool aten_pad(DecCtx *c)
{
    char buf[128];
    const char *nm = op_name(c, buf, sizeof buf);
    ValId x;
    if (!get_self(c, &x))
        return false;
    const char *mode = dec_as(c, "mode", "constant");
    if (strncmp(nm, "reflection", 10) == 0)
        mode = "reflect";
    if (strncmp(nm, "replication", 11) == 0)
        mode = "replicate";
    bool reflect = strcmp(mode, "reflect") == 0, replicate = strcmp(mode, "replicate") == 0;
    if (!reflect && !replicate && strcmp(mode, "constant") != 0) {
        dec_err(c, "padding mode '%s' is not supported", mode);
        return false;
    }
    const IrType *t = dec_ty(c, x);
    int64_t p[2 * IR_MAX_RANK], pads[2 * IR_MAX_RANK] = {0};
    int n = aten_ints(c, dec_has_attr(c, "padding") ? "padding" : "pad", p, 2 * IR_MAX_RANK, 0);
    if (n < 0 || n % 2 || n / 2 > t->rank) {
        if (n != -2)
            dec_err(c, "pad must list pairs for at most %d dims", t->rank);
        return false;
    }
    for (int i = 0; i < n / 2; i++) {
        int ax = t->rank - 1 - i;
        pads[ax] = p[2 * i];
        pads[t->rank + ax] = p[2 * i + 1];
    }
    if (reflect || replicate) {
        if (!border_pad(c, &x, pads, reflect))
            return false;
        c->out[0] = x;
        return true;
    }
    double v = 0;
    aten_num(c, "value", &v);
    c->out[0] = dec_pad(c, x, pads, NULL, v);
    return true;
}

/* tril/triu(diagonal): a constant mask over the last two dims and a SELECT. */
bool aten_tri(DecCtx *c)
{
    char buf[128];
    bool lower = strcmp(op_name(c, buf, sizeof buf), "tril") == 0;
    ValId x;
    if (!get_self(c, &x))
        return false;
    const IrType *t = dec_ty(c, x);
    if (t->rank < 2) {
        dec_err(c, "tril/triu need rank >= 2");
        return false;
    }
    int64_t R = t->dims[t->rank - 2], C = t->dims[t->rank - 1], k = dec_ai(c, "diagonal", 0);
    if (R * C > ATEN_MAX_CONST) {
        dec_err(c, "tril/triu mask of %lld x %lld is too large", (long long)R, (long long)C);
        return false;
    }
    double *m = ir_scratch(c->g, (size_t)(R * C + 1) * sizeof *m);
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++)
            m[i * C + j] = lower ? (j - i <= k) : (j - i >= k);
    int64_t d[2] = {R, C};
    ValId mask = dec_const(c->g, IR_DT_BOOL, d, 2, m);
    c->out[0] = dec_select(c, mask, x, dec_scalar(c->g, t->dtype, 0));
    return true;
}

/* movedim/moveaxis(source, destination): numpy's moveaxis. */
bool aten_movedim(DecCtx *c)
{
    ValId x;
    if (!get_self(c, &x))
        return false;
    int r = dec_ty(c, x)->rank;
    int64_t src[IR_MAX_RANK], dst[IR_MAX_RANK], perm[IR_MAX_RANK];
    int ns = aten_ints(c, "source", src, IR_MAX_RANK, 0);
    int nd = aten_ints(c, "destination", dst, IR_MAX_RANK, 0);
    bool used[IR_MAX_RANK] = {false}, placed[IR_MAX_RANK] = {false};
    if (ns < 0 || ns != nd) {
        dec_err(c, "movedim needs as many destinations as sources");
        return false;
    }
    for (int i = 0; i < ns; i++) {
        int a, b;
        if (!dec_axis(c, src[i], r, &a) || !dec_axis(c, dst[i], r, &b))
            return false;
        if (used[a] || placed[b]) {
            dec_err(c, "movedim repeats a dimension");
            return false;
        }
        perm[b] = a, used[a] = placed[b] = true;
    }
    for (int i = 0, k = 0; i < r; i++) {
        if (placed[i])
            continue;
        while (used[k])
            k++;
        perm[i] = k, used[k] = true;
    }
    c->out[0] = dec_transpose(c, x, perm);
    return true;
}

/* A stepped slice_scatter: self with positions st, st+step, ... (n of them) along ax
 * replaced by src, as a GATHER along ax from concat(self, src) with constant indices
 * (position j reads src's row (j - st) / step where the slice has it, else self's j). */
static ValId stepped_scatter(DecCtx *c, ValId x, ValId src, int ax, int64_t st, int64_t step,
                             int64_t n)
{
    const IrType *t = dec_ty(c, x);
    int64_t d = t->dims[ax];
    int64_t *idx = ir_alloc(c->g, (size_t)(d + 1) * sizeof *idx);
    for (int64_t j = 0; j < d; j++) {
        int64_t k = (j - st) / step;
        idx[j] = j >= st && (j - st) % step == 0 && k < n ? d + k : j;
    }
    ValId both[2] = {x, dec_cast(c, src, t->dtype)};
    return dec_gather(c, dec_concat(c, both, 2, ax), dec_const_i64(c->g, &d, 1, idx), ax);
}

/* slice_scatter(self, src, dim, start, end, step=1) and select_scatter(self, src,
 * dim, index): self with a slice replaced by src, as a CONCAT of the kept parts
 * and src (unit steps), or a GATHER from self and src (other positive steps). */
bool aten_scatter_view(DecCtx *c)
{
    char buf[128];
    bool sel = strcmp(op_name(c, buf, sizeof buf), "select_scatter") == 0;
    ValId x, src;
    if (!get_self(c, &x) || !aten_need(c, "src", &src))
        return false;
    const IrType *t = dec_ty(c, x);
    int ax;
    if (!dec_axis(c, dec_ai(c, "dim", 0), t->rank, &ax))
        return false;
    int64_t d = t->dims[ax], st, en;
    if (sel) {
        int64_t i = dec_ai(c, "index", 0);
        st = i < 0 ? i + d : i;
        en = st + 1;
        int64_t u[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            u[k] = k == ax ? 1 : t->dims[k];
        src = dec_reshape(c, src, u, t->rank);
    } else {
        st = clamp_bound(dec_ai(c, "start", 0), d);
        en = clamp_bound(dec_ai(c, "end", INT64_MAX), d);
    }
    int64_t step = sel ? 1 : dec_ai(c, "step", 1);
    int64_t cnt = step > 0 && en > st ? (en - st + step - 1) / step : 0;
    if (step < 1 || st < 0 || en > d || st > en || dec_ty(c, src)->dims[ax] != cnt) {
        dec_err(c, "only positive-step scatters whose source fills the slice are supported");
        return false;
    }
    if (step > 1) {
        c->out[0] = stepped_scatter(c, x, src, ax, st, step, cnt);
        return true;
    }
    ValId parts[3];
    int n = 0;
    if (st > 0)
        parts[n++] = dec_slice_axis(c, x, ax, 0, 1, st);
    parts[n++] = dec_cast(c, src, t->dtype);
    if (en < d)
        parts[n++] = dec_slice_axis(c, x, ax, en, 1, d - en);
    c->out[0] = dec_concat(c, parts, n, ax);
    return true;
}
