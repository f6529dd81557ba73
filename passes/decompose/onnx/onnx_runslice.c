/* onnx_runslice.c: Slice, Expand, Tile, Pad and CenterCropPad whose starts, ends,
 * steps, target shape, repeats or pads are runtime inputs.
 *
 * The result's rank is known when compiling; its dims are computed on the device (for
 * Slice with the ONNX rules: negative starts and ends count from the end, clamping per
 * step sign, the length ceil((end - start) / step)), and its data is GATHERed from x as
 * the row-major prefix of those dims (prefix_gather): output element o has, along each
 * axis a, the index i_a of o in the actual dims (a mixed-radix split of o), which a
 * per-op map turns into x's index along a (Slice: start + i * step; Expand: 0 on a
 * broadcast axis; Tile: i mod d; Pad: i - pad_begin, folded back by the mode, or the
 * pad value outside; CenterCropPad: i + the centring offset, or 0 outside). The result
 * is a value whose whole shape is computed at run time (ir_dyn_add_shape); its capacity
 * is numel(x) for Slice and the element count of the declared output for the others
 * (without a declared output they stay refused: --bind). Invalid values (a zero step,
 * a shape that does not broadcast, negative repeats) give -1 dims: a run-time error.
 */
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

typedef struct {
    ValId st, step, len;                   /* i64 scalars of one axis */
} SliceAxis;

/* x's index along axis a (size d) of the output index i (i64 [cap]); *ok gets a bool
 * [cap] of the valid positions, or stays IR_NONE when all are. */
typedef ValId (*AxisMap)(DecCtx *c, int a, int64_t d, ValId i, const void *arg, ValId *ok);

/* Input i as an i64 vector of k entries; dflt (a constant for every entry) when the
 * input is absent. */
static ValId vec_in(DecCtx *c, int i, int64_t k, const double *dflt)
{
    ValId v = dec_in(c, i);
    if (v == IR_NONE)
        return dec_const(c->g, IR_DT_I64, &k, 1, dflt);
    return dec_reshape(c, dec_cast(c, v, IR_DT_I64), &k, 1);
}

/* min(max(v, lo), hi) with i64 scalars lo, hi. */
static ValId clamp(DecCtx *c, ValId v, ValId lo, ValId hi)
{
    return dec_bin(c, IR_BIN_MIN, dec_bin(c, IR_BIN_MAX, v, lo), hi);
}

/* Start, step and length of axis a (size d) from the entries of starts, ends and steps
 * whose normalised axis is a (none: the whole axis). */
static SliceAxis slice_axis_rt(DecCtx *c, ValId axes, ValId st, ValId en, ValId sp, int a,
                               int64_t d)
{
    int64_t z = 0;
    ValId m = dec_bin_s(c, IR_BIN_EQ, axes, a), zero = dec_scalar(c->g, IR_DT_I64, 0);
    ValId has = dec_bin_s(c, IR_BIN_EQ, dec_reduce(c, IR_RED_MAX, dec_cast(c, m, IR_DT_I64), &z,
                                                   1, false), 1);
    ValId v[3] = {st, en, sp};
    double dflt[3] = {0, (double)d, 1};
    for (int k = 0; k < 3; k++)
        v[k] = dec_select(c, has, dec_reduce(c, IR_RED_SUM, dec_select(c, m, v[k], zero), &z, 1,
                                             false),
                          dec_scalar(c->g, IR_DT_I64, dflt[k]));
    for (int k = 0; k < 2; k++)            /* negative: from the end */
        v[k] = dec_select(c, dec_bin_s(c, IR_BIN_LT, v[k], 0), dec_bin_s(c, IR_BIN_ADD, v[k], (double)d),
                          v[k]);
    ValId pos = dec_bin_s(c, IR_BIN_GT, v[2], 0);
    ValId dm1 = dec_scalar(c->g, IR_DT_I64, (double)(d - 1)), dd = dec_scalar(c->g, IR_DT_I64, (double)d);
    ValId s = dec_select(c, pos, clamp(c, v[0], zero, dd), clamp(c, v[0], zero, dm1));
    ValId e = dec_select(c, pos, clamp(c, v[1], zero, dd),
                         clamp(c, v[1], dec_scalar(c->g, IR_DT_I64, -1), dm1));
    ValId mag = dec_un(c, IR_UN_ABS, v[2]);
    ValId span = dec_select(c, pos, dec_bin(c, IR_BIN_SUB, e, s), dec_bin(c, IR_BIN_SUB, s, e));
    ValId len = dec_bin(c, IR_BIN_DIV, dec_bin(c, IR_BIN_ADD, span, dec_bin_s(c, IR_BIN_SUB, mag, 1)),
                        dec_bin_s(c, IR_BIN_MAX, mag, 1));
    len = dec_bin_s(c, IR_BIN_MAX, len, 0);
    len = dec_select(c, dec_bin_s(c, IR_BIN_EQ, v[2], 0), dec_scalar(c->g, IR_DT_I64, -1), len);
    return (SliceAxis){s, v[2], len};
}

/* The data of x (rank r) in the row-major prefix of the runtime dims lens (i64
 * scalars) at capacity cap: output element o reads x where map sends its index along
 * each axis, or fill (a scalar of x's dtype) where map says invalid. The result (a value
 * of runtime shape) becomes c's output 0. */
static bool prefix_gather(DecCtx *c, ValId x, const ValId *lens, int64_t cap, AxisMap map,
                          const void *arg, ValId fill)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    int64_t xn = dec_numel(t), stride = 1, one = 1, dims[IR_MAX_RANK];
    ValId o = dix_iota(c, IR_DT_I64, cap, 1, 0), rem = o, src = IR_NONE, ok = IR_NONE;
    ValId total = dec_scalar(c->g, IR_DT_I64, 1), lv[IR_MAX_RANK];
    for (int a = 0; a < r; a++) {
        total = dec_bin(c, IR_BIN_MUL, total, lens[a]);
        lv[a] = dec_reshape(c, lens[a], &one, 1);
        dims[a] = a == 0 ? cap : 1;
    }
    for (int a = r - 1; a >= 0; a--) {     /* o split in the radices of the actual dims */
        ValId l = dec_bin_s(c, IR_BIN_MAX, lens[a], 1), oka = IR_NONE;
        ValId at = map(c, a, t->dims[a], dec_bin(c, IR_BIN_MOD, rem, l), arg, &oka);
        rem = dec_bin(c, IR_BIN_DIV, rem, l);
        at = dec_bin_s(c, IR_BIN_MUL, at, (double)stride);
        src = src == IR_NONE ? at : dec_bin(c, IR_BIN_ADD, src, at);
        ok = oka == IR_NONE ? ok : ok == IR_NONE ? oka : dec_bin(c, IR_BIN_AND, ok, oka);
        stride *= t->dims[a];
    }
    ValId in = dec_bin(c, IR_BIN_LT, o, total);
    ok = ok == IR_NONE ? in : dec_bin(c, IR_BIN_AND, ok, in);
    src = dec_select(c, ok, src, dec_scalar(c->g, IR_DT_I64, 0));
    ValId y = xn > 0 ? dec_gather(c, dec_reshape(c, x, &xn, 1), src, 0) : IR_NONE;
    if (fill != IR_NONE)
        y = y == IR_NONE ? dec_expand(c, fill, &cap, 1) : dec_select(c, ok, y, fill);
    if (y == IR_NONE) {         /* a bound of no element (a declared 0): nothing to read */
        dec_err(c, "unsupported: runtime sizes within a bound that holds no element");
        return false;
    }
    y = dec_reshape(c, y, dims, r);
    ValId sh = dec_rt_dims32(c, dec_concat(c, lv, r, 0));
    const IrType *st = sh == IR_NONE ? NULL : dec_ty(c, sh);
    if (y == IR_NONE || !st || st->rank != 1 || st->dims[0] != r) {   /* malformed sizes */
        dec_err(c, "unsupported: runtime sizes that are not one integer per axis");
        return false;
    }
    ir_dyn_add_shape(c->g, y, sh);
    c->out[0] = y;
    return true;
}

/* Slice's map: start + i * step. */
static ValId slice_map(DecCtx *c, int a, int64_t d, ValId i, const void *arg, ValId *ok)
{
    const SliceAxis *s = (const SliceAxis *)arg + a;
    return dec_bin(c, IR_BIN_ADD, s->st, dec_bin(c, IR_BIN_MUL, i, s->step));
}

/* Slice with runtime starts, ends, axes or steps, at the capacity of x. */
bool dec_rt_slice(DecCtx *c, ValId x)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    if (!dec_need_in(c, 1) || !dec_need_in(c, 2))
        return false;
    int64_t k = dec_numel(dec_ty(c, dec_in(c, 1))), cap = dec_numel(t);
    if (r < 1 || cap < 1 || k < 1 || k > r || dec_numel(dec_ty(c, dec_in(c, 2))) != k) {
        dec_err(c, "unsupported: runtime Slice of this shape (starts and ends must have 1 to "
                "rank entries; x must not be empty)");
        return false;
    }
    double iota[IR_MAX_RANK], ones[IR_MAX_RANK];
    for (int i = 0; i < k; i++)
        iota[i] = i, ones[i] = 1;
    ValId axes = vec_in(c, 3, k, iota);
    axes = dec_select(c, dec_bin_s(c, IR_BIN_LT, axes, 0), dec_bin_s(c, IR_BIN_ADD, axes, r), axes);
    ValId st = vec_in(c, 1, k, NULL), en = vec_in(c, 2, k, NULL), sp = vec_in(c, 4, k, ones);
    SliceAxis s[IR_MAX_RANK];
    ValId lens[IR_MAX_RANK];
    for (int a = 0; a < r; a++) {
        s[a] = slice_axis_rt(c, axes, st, en, sp, a, t->dims[a]);
        lens[a] = s[a].len;
    }
    return prefix_gather(c, x, lens, cap, slice_map, s, IR_NONE);
}

/* Element i of the i64 vector v as a rank-0 value. */
static ValId at(DecCtx *c, ValId v, int i)
{
    return dec_reshape(c, dec_slice_axis(c, v, 0, i, 1, 1), NULL, 0);
}

/* Element count of c's declared output 0 when it has rank r; -1 otherwise. */
static int64_t declared_cap(const DecCtx *c, int r)
{
    const IrType *d = dix_declared(c, 0);
    return d && d->rank == r ? ir_type_numel(d) : -1;
}

/* Expand's map: 0 on a broadcast (size-1) axis. */
static ValId expand_map(DecCtx *c, int a, int64_t d, ValId i, const void *arg, ValId *ok)
{
    return d == 1 ? dec_bin_s(c, IR_BIN_MUL, i, 0) : i;
}

/* Expand to a runtime shape: each dim x's (the shape's entry 1 or equal) or, where x
 * has 1, the entry; -1 when they do not broadcast. */
bool dec_rt_expand(DecCtx *c, ValId x)
{
    int64_t n = dec_numel(dec_ty(c, dec_in(c, 1))), xd[IR_MAX_RANK];
    const IrType *t = dec_ty(c, x);
    int R = t->rank > n ? t->rank : (int)n;
    int64_t cap = R <= IR_MAX_RANK ? declared_cap(c, R) : -1;
    if (cap < 0)
        return false;
    for (int a = 0; a < R; a++)
        xd[a] = a < R - t->rank ? 1 : t->dims[a - (R - t->rank)];
    x = dec_reshape(c, x, xd, R);
    ValId s = vec_in(c, 1, n, NULL), lens[IR_MAX_RANK];
    for (int a = 0; a < R; a++) {
        ValId sa = a < R - n ? dec_scalar(c->g, IR_DT_I64, 1) : at(c, s, a - (R - (int)n));
        ValId fits = dec_bin(c, IR_BIN_OR, dec_bin_s(c, IR_BIN_EQ, sa, 1),
                             dec_bin_s(c, IR_BIN_EQ, sa, (double)xd[a]));
        lens[a] = xd[a] == 1 ? sa : dec_select(c, fits, dec_scalar(c->g, IR_DT_I64, (double)xd[a]),
                                               dec_scalar(c->g, IR_DT_I64, -1));
    }
    return prefix_gather(c, x, lens, cap, expand_map, NULL, IR_NONE);
}

/* Tile's map: i mod d. */
static ValId tile_map(DecCtx *c, int a, int64_t d, ValId i, const void *arg, ValId *ok)
{
    return dec_bin_s(c, IR_BIN_MOD, i, (double)(d > 0 ? d : 1));
}

/* Tile by runtime repeats: dims d * repeat, x read at i mod d. */
bool dec_rt_tile(DecCtx *c, ValId x)
{
    const IrType *t = dec_ty(c, x);
    int64_t cap = declared_cap(c, t->rank);
    if (cap < 0 || dec_numel(dec_ty(c, dec_in(c, 1))) != t->rank || dec_numel(t) == 0)
        return false;
    ValId rep = vec_in(c, 1, t->rank, NULL), lens[IR_MAX_RANK];
    for (int a = 0; a < t->rank; a++)
        lens[a] = dec_bin_s(c, IR_BIN_MUL, at(c, rep, a), (double)t->dims[a]);
    return prefix_gather(c, x, lens, cap, tile_map, NULL, IR_NONE);
}

typedef struct {
    ValId off[IR_MAX_RANK];                /* x index = output index + off */
    int mode;                              /* 0 constant (or crop/pad), 1 edge, 2 wrap,
                                              3 reflect */
} PadMap;

/* Pad's and CenterCropPad's map: p = i + off, then by the mode: constant (valid only
 * inside [0, d)), edge (clamped), wrap (mod d) or reflect (folded at the ends). */
static ValId pad_map(DecCtx *c, int a, int64_t d, ValId i, const void *arg, ValId *ok)
{
    const PadMap *m = arg;
    ValId p = dec_bin(c, IR_BIN_ADD, i, m->off[a]);
    if (m->mode == 0) {
        *ok = dec_bin(c, IR_BIN_AND, dec_bin_s(c, IR_BIN_GE, p, 0), dec_bin_s(c, IR_BIN_LT, p, (double)d));
        return p;
    }
    if (m->mode == 1)
        return dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, p, 0), (double)(d - 1));
    if (m->mode == 2 || d == 1)
        return dec_bin_s(c, IR_BIN_MOD, p, (double)d);
    double period = 2.0 * (double)(d - 1);
    ValId q = dec_bin_s(c, IR_BIN_MOD, p, period);
    return dec_select(c, dec_bin_s(c, IR_BIN_LT, q, (double)d), q,
                      dec_bin(c, IR_BIN_SUB, dec_scalar(c->g, IR_DT_I64, period), q));
}

/* Pad by runtime pads (and axes, constant value): dims d + begin + end, x read at
 * i - begin folded by the mode, or the pad value outside in constant mode. */
bool dec_rt_pad(DecCtx *c, ValId x, const char *mode)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    int64_t np = dec_numel(dec_ty(c, dec_in(c, 1))), nax = np / 2, cap = declared_cap(c, r);
    PadMap m = {.mode = strcmp(mode, "edge") == 0 ? 1 : strcmp(mode, "wrap") == 0 ? 2
                      : strcmp(mode, "reflect") == 0 ? 3 : strcmp(mode, "constant") == 0 ? 0 : -1};
    if (cap < 0 || m.mode < 0 || np % 2 || nax < 1 || nax > r || (m.mode && dec_numel(t) == 0))
        return false;
    double iota[IR_MAX_RANK];
    for (int i = 0; i < nax; i++)
        iota[i] = i;
    ValId axes = c->opset >= 18 ? vec_in(c, 3, nax, iota) : dec_const(c->g, IR_DT_I64, &nax, 1, iota);
    axes = dec_select(c, dec_bin_s(c, IR_BIN_LT, axes, 0), dec_bin_s(c, IR_BIN_ADD, axes, r), axes);
    ValId pv = vec_in(c, 1, np, NULL), lens[IR_MAX_RANK], zero = dec_scalar(c->g, IR_DT_I64, 0);
    ValId pb = dec_slice_axis(c, pv, 0, 0, 1, nax), pe = dec_slice_axis(c, pv, 0, nax, 1, nax);
    for (int a = 0; a < r; a++) {          /* the entries of axis a (none: 0) */
        int64_t z = 0;
        ValId hit = dec_bin_s(c, IR_BIN_EQ, axes, a);
        ValId b = dec_reduce(c, IR_RED_SUM, dec_select(c, hit, pb, zero), &z, 1, false);
        ValId e = dec_reduce(c, IR_RED_SUM, dec_select(c, hit, pe, zero), &z, 1, false);
        m.off[a] = dec_un(c, IR_UN_NEG, b);
        lens[a] = dec_bin_s(c, IR_BIN_ADD, dec_bin(c, IR_BIN_ADD, b, e), (double)t->dims[a]);
    }
    ValId fill = IR_NONE;
    if (m.mode == 0) {
        ValId v = c->opset >= 11 ? dec_in(c, 2) : IR_NONE;
        fill = v != IR_NONE && dec_numel(dec_ty(c, v)) > 0
                   ? dix_scalar(c, v, "constant_value", t->dtype)
                   : dec_scalar(c->g, t->dtype, c->opset < 11 ? dec_af(c, "value", 0.0) : 0.0);
        if (fill == IR_NONE)
            return false;
    }
    return prefix_gather(c, x, lens, cap, pad_map, &m, fill);
}

/* CenterCropPad to a runtime shape: x read at i plus the centring offset of the axis
 * (crop: (d - want) / 2; pad: -(want - d) / 2), 0 outside. */
bool dec_rt_center_crop_pad(DecCtx *c, ValId x)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    const int64_t *av;
    int na = dec_aints(c, "axes", &av), n = na >= 0 ? na : r;
    int64_t cap = declared_cap(c, r), k = n;
    if (cap < 0 || dec_numel(dec_ty(c, dec_in(c, 1))) != n)
        return false;
    ValId s = vec_in(c, 1, k, NULL), lens[IR_MAX_RANK];
    PadMap m = {.mode = 0};
    for (int a = 0; a < r; a++) {
        lens[a] = dec_scalar(c->g, IR_DT_I64, (double)t->dims[a]);
        m.off[a] = dec_scalar(c->g, IR_DT_I64, 0);
    }
    for (int i = 0; i < n; i++) {
        int a = i;
        if (na >= 0 && !dec_axis(c, av[i], r, &a))
            return false;
        ValId want = at(c, s, i), d = lens[a];   /* crop: (d - want) / 2; pad: -(want - d) / 2 */
        ValId crop = dec_bin_s(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, d, want), 2);
        ValId pad = dec_un(c, IR_UN_NEG, dec_bin_s(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, want, d), 2));
        m.off[a] = dec_select(c, dec_bin(c, IR_BIN_LT, want, d), crop, pad);
        lens[a] = want;
    }
    return prefix_gather(c, x, lens, cap, pad_map, &m, dec_scalar(c->g, t->dtype, 0));
}

/* The identity map: the box of the bound. */
static ValId box_map(DecCtx *c, int a, int64_t d, ValId i, const void *arg, ValId *ok)
{
    return i;
}

/* The box [0, lens) of y as the row-major prefix of the actual shape. */
void dec_rt_box(DecCtx *c, ValId y, const ValId *lens)
{
    prefix_gather(c, y, lens, dec_numel(dec_ty(c, y)), box_map, NULL, IR_NONE);
}
