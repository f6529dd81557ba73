/* dec_util.c: helpers shared by the decomposition handlers of both frontends
 * (attributes, inputs, constant inputs, constant creation, thin builders for core
 * ops). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dec.h"

/* Report an error about the node being decomposed. */
void dec_err(DecCtx *c, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ir_error(c->g, c->o, "%s", buf);
}

/* Input i of the node, or IR_NONE when omitted or past the end. */
ValId dec_in(const DecCtx *c, int i)
{
    return (i >= 0 && i < c->n->nin) ? c->n->in[i] : IR_NONE;
}

/* Check that input i is present; report otherwise. */
bool dec_need_in(DecCtx *c, int i)
{
    if (dec_in(c, i) != IR_NONE)
        return true;
    dec_err(c, "missing required input %d", i);
    return false;
}

const IrType *dec_ty(const DecCtx *c, ValId v) { return ir_vtype(c->g, v); }

/* Whether output i is used by some node or is a graph output. */
bool dec_out_used(const DecCtx *c, int i)
{
    if (i >= c->n->nout || c->n->out[i] == IR_NONE)
        return false;
    ValId v = c->n->out[i];
    return v < c->nuses && c->uses[v] > 0;
}

static const char *const attr_kind_names[] = {"int", "float", "string", "ints", "floats",
                                              "strings", "tensor", "graph"};

/* The attribute `name` of the node if it has kind `want` (or `alt`). For ONNX nodes an
 * attribute of another kind is the model's error: reported, then treated as absent. */
static const IrAttr *attr_of_kind(const DecCtx *c, const char *name, IrAttrKind want,
                                  IrAttrKind alt)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (!a || a->kind == want || a->kind == alt)
        return a;
    const char *dom = c->n->foreign.domain;
    if (dom && dom[0])                     /* ATen arguments are polymorphic: not an error */
        return NULL;
    ir_error(c->g, c->o, "attribute '%s' has type %s, expected %s", name,
             attr_kind_names[a->kind], attr_kind_names[want]);
    return NULL;
}

int64_t dec_ai(const DecCtx *c, const char *name, int64_t dflt)
{
    const IrAttr *a = attr_of_kind(c, name, IR_ATTR_INT, IR_ATTR_INT);
    return a ? a->i : dflt;
}

/* Float attribute (an integer one is accepted and converted), or dflt. */
double dec_af(const DecCtx *c, const char *name, double dflt)
{
    const IrAttr *a = attr_of_kind(c, name, IR_ATTR_FLOAT, IR_ATTR_INT);
    return !a ? dflt : a->kind == IR_ATTR_FLOAT ? a->f : (double)a->i;
}

/* String attribute, or dflt when absent. */
const char *dec_as(const DecCtx *c, const char *name, const char *dflt)
{
    const IrAttr *a = attr_of_kind(c, name, IR_ATTR_STRING, IR_ATTR_STRING);
    return (a && a->s) ? a->s : dflt;
}

int dec_aints(const DecCtx *c, const char *name, const int64_t **out)
{
    if (!attr_of_kind(c, name, IR_ATTR_INTS, IR_ATTR_INTS))
        return -1;
    return ir_attr_get_ints(c->n, name, out);
}

/* The operator defines at most n outputs: a node with more is malformed. */
bool dec_max_outputs(DecCtx *c, int n)
{
    if (c->n->nout <= n)
        return true;
    dec_err(c, "the node has %d outputs; %s defines %d", c->n->nout, c->n->foreign.op_type, n);
    return false;
}

bool dec_has_attr(const DecCtx *c, const char *name) { return ir_attr_find(c->n, name) != NULL; }

/* Whether a compile-time table of n elements of es bytes fits the fold budget;
 * reports "WHAT of N elements is too large" when it does not. */
bool dec_fits(DecCtx *c, int64_t n, size_t es, const char *what)
{
    if (n >= 0 && (uint64_t)n <= c->g->fold_budget / (es ? es : 1))
        return true;
    dec_err(c, "%s of %lld elements is too large to build at compile time", what, (long long)n);
    return false;
}

/* Normalise a possibly negative axis for rank r. */
bool dec_axis(DecCtx *c, int64_t a, int r, int *out)
{
    if (a < -r || a >= (r > 0 ? r : 1)) {
        dec_err(c, "axis %lld out of range for rank %d", (long long)a, r);
        return false;
    }
    *out = (int)(a < 0 ? a + r : a);
    return true;
}

/* Report that input x (which decides a shape or an attribute) is not a compile-time
 * constant, naming the value so that the user can bind it with spyrec --bind. */
void dec_dynamic_err(DecCtx *c, ValId x, const char *what)
{
    if (x == IR_NONE || x >= c->g->nvals) {     /* an optional input left out */
        dec_err(c, "missing %s input", what);
        return;
    }
    const IrValue *v = ir_val(c->g, x);
    dec_err(c, "unsupported: dynamic %s input '%s'%s", what, v->name,
            v->kind == IR_VAL_INPUT ? " (a graph input: specialise it with --bind)" : "");
}

/* Read a constant 0-D/1-D integer input into v. */
bool dec_const_ints(DecCtx *c, ValId x, const char *what, int64_t *v, int max, int *n)
{
    if (!ir_is_const(c->g, x)) {
        dec_dynamic_err(c, x, what);
        return false;
    }
    const IrType *t = dec_ty(c, x);
    int64_t cnt = dec_numel(t);
    if (!ir_dtype_is_int(t->dtype) || t->rank > 1) {
        dec_err(c, "%s input must be a 1-D integer tensor, got %s of rank %d", what,
                ir_dtype_name(t->dtype), t->rank);
        return false;
    }
    if (cnt > max) {
        dec_err(c, "%s input has %lld entries, at most %d supported", what, (long long)cnt, max);
        return false;
    }
    const void *d = ir_val(c->g, x)->data;
    for (int64_t i = 0; i < cnt; i++)
        v[i] = dec_load_int(t->dtype, d, i);
    *n = (int)cnt;
    return true;
}

/* Read a constant 0-D/1-D float input into v. */
bool dec_const_floats(DecCtx *c, ValId x, const char *what, double *v, int max, int *n)
{
    if (!ir_is_const(c->g, x)) {
        dec_dynamic_err(c, x, what);
        return false;
    }
    const IrType *t = dec_ty(c, x);
    int64_t cnt = dec_numel(t);
    if (t->rank > 1 || cnt > max) {
        dec_err(c, "%s input must be a 1-D tensor of at most %d entries", what, max);
        return false;
    }
    const void *d = ir_val(c->g, x)->data;
    for (int64_t i = 0; i < cnt; i++)
        v[i] = dec_load(t->dtype, d, i);
    *n = (int)cnt;
    return true;
}

/* First element of a constant (scalar or 1-element) input. */
bool dec_const_scalar(DecCtx *c, ValId x, const char *what, double *v)
{
    if (!ir_is_const(c->g, x)) {
        dec_dynamic_err(c, x, what);
        return false;
    }
    const IrType *t = dec_ty(c, x);
    if (dec_numel(t) != 1) {
        dec_err(c, "%s input must hold one element", what);
        return false;
    }
    *v = dec_load(t->dtype, ir_val(c->g, x)->data, 0);
    return true;
}

/* IEEE half <-> float (round to nearest even). */
static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0)
        return s * ldexp(m, -24);
    if (e == 31)
        return m ? NAN : s * INFINITY;
    return s * ldexp(m + 1024, e - 25);
}

static uint16_t double_to_f16(double d)
{
    float f = (float)d;
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    if (isnan(f))
        return sign | 0x7e00;
    float a = fabsf(f);
    if (a >= 65520.0f)
        return sign | 0x7c00;
    if (a < 6.103515625e-05f) /* subnormal: quantum 2^-24 */
        return sign | (uint16_t)lrint(a * 16777216.0);
    int e;
    double fr = frexp(a, &e); /* a = fr * 2^e, fr in [0.5,1) */
    long m = lrint(fr * 2048.0); /* 11 significant bits */
    if (m == 2048) {
        m = 1024;
        e++;
    }
    return sign | (uint16_t)(((e + 14) << 10) | (m - 1024));
}

static double bf16_to_double(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t double_to_bf16(double d)
{
    float f = (float)d;
    uint32_t x;
    memcpy(&x, &f, 4);
    if (isnan(f))
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* Element i of buffer p of dtype t, as double. */
double dec_load(IrDType t, const void *p, int64_t i)
{
    switch (t) {
    case IR_DT_F32: return ((const float *)p)[i];
    case IR_DT_F64: return ((const double *)p)[i];
    case IR_DT_F16: return f16_to_double(((const uint16_t *)p)[i]);
    case IR_DT_BF16: return bf16_to_double(((const uint16_t *)p)[i]);
    case IR_DT_I8: return ((const int8_t *)p)[i];
    case IR_DT_U8: return ((const uint8_t *)p)[i];
    case IR_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case IR_DT_I16: return ((const int16_t *)p)[i];
    case IR_DT_U16: return ((const uint16_t *)p)[i];
    case IR_DT_I32: return ((const int32_t *)p)[i];
    case IR_DT_U32: return ((const uint32_t *)p)[i];
    case IR_DT_I64: return (double)((const int64_t *)p)[i];
    case IR_DT_U64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

/* Element i of an integer (or bool) buffer, exactly; floats truncate (saturating). */
int64_t dec_load_int(IrDType t, const void *p, int64_t i)
{
    switch (t) {
    case IR_DT_I64: return ((const int64_t *)p)[i];
    case IR_DT_U64: {
        uint64_t u = ((const uint64_t *)p)[i];
        return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    case IR_DT_I32: return ((const int32_t *)p)[i];
    case IR_DT_U32: return ((const uint32_t *)p)[i];
    default: {
        double d = dec_load(t, p, i);
        if (d != d)
            return 0;
        return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
    }
    }
}

/* v clamped to [lo, hi] (NaN -> 0), so that converting it to an integer is defined. */
static double clampd(double v, double lo, double hi)
{
    return v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
}

/* Store v as element i of buffer p of dtype t (ints truncate toward zero and
 * saturate at the dtype's range). */
void dec_store(IrDType t, void *p, int64_t i, double v)
{
    switch (t) {
    case IR_DT_I8: v = clampd(v, -128, 127); break;
    case IR_DT_U8: v = clampd(v, 0, 255); break;
    case IR_DT_I16: v = clampd(v, -32768, 32767); break;
    case IR_DT_U16: v = clampd(v, 0, 65535); break;
    case IR_DT_I32: v = clampd(v, -2147483648.0, 2147483647.0); break;
    case IR_DT_U32: v = clampd(v, 0, 4294967295.0); break;
    case IR_DT_I64: v = clampd(v, -9.2e18, 9.2e18); break;
    case IR_DT_U64: v = clampd(v, 0, 1.8e19); break;
    default: break;
    }
    switch (t) {
    case IR_DT_F32: ((float *)p)[i] = (float)v; break;
    case IR_DT_F64: ((double *)p)[i] = v; break;
    case IR_DT_F16: ((uint16_t *)p)[i] = double_to_f16(v); break;
    case IR_DT_BF16: ((uint16_t *)p)[i] = double_to_bf16(v); break;
    case IR_DT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case IR_DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case IR_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case IR_DT_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case IR_DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case IR_DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case IR_DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case IR_DT_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case IR_DT_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: break;
    }
}

/* Rank-0 constant of dtype t holding v (infinities clamp to the int range). */
ValId dec_scalar(IrGraph *g, IrDType t, double v)
{
    return dec_const(g, t, NULL, 0, &v);
}

/* Constant of dtype t and shape dims from doubles (v has numel entries; a single
 * value is not broadcast: callers pass full data). */
ValId dec_const(IrGraph *g, IrDType t, const int64_t *dims, int rank, const double *v)
{
    IrType ty = {.dtype = t, .rank = rank};
    for (int i = 0; i < rank; i++)
        ty.dims[i] = dims[i];
    int64_t n = ir_type_numel(&ty);
    IR_ASSERT(n >= 0);
    size_t es = ir_dtype_size(t);
    void *buf = ir_scratch(g, (size_t)n * es + 1);  /* ir_add_const copies it */
    for (int64_t i = 0; i < n; i++)
        dec_store(t, buf, i, v[i]);
    return ir_add_const(g, ir_fresh_name(g, "c"), &ty, buf);
}

ValId dec_const_i64(IrGraph *g, const int64_t *dims, int rank, const int64_t *v)
{
    IrType ty = {.dtype = IR_DT_I64, .rank = rank};
    for (int i = 0; i < rank; i++)
        ty.dims[i] = dims[i];
    return ir_add_const(g, ir_fresh_name(g, "c"), &ty, v);
}

ValId dec_const_f32(IrGraph *g, const int64_t *dims, int rank, const float *v)
{
    IrType ty = {.dtype = IR_DT_F32, .rank = rank};
    for (int i = 0; i < rank; i++)
        ty.dims[i] = dims[i];
    return ir_add_const(g, ir_fresh_name(g, "c"), &ty, v);
}

/* Add a core node and return its first output. */
ValId dec_op(DecCtx *c, IrOp op, const ValId *in, int nin, const IrAttr *a, int na)
{
    NodeId id = ir_add_node(c->g, op, in, nin, a, na, c->o);
    return ir_node(c->g, id)->out[0];
}

ValId dec_slice(DecCtx *c, ValId x, const int64_t *starts, const int64_t *steps,
                const int64_t *sizes)
{
    int r = dec_ty(c, x)->rank;
    bool ident = true;
    for (int i = 0; i < r; i++)
        if (starts[i] != 0 || steps[i] != 1 || sizes[i] != dec_ty(c, x)->dims[i])
            ident = false;
    if (ident)
        return x;
    IrAttr a[3] = {ir_attr_ints_ref("starts", starts, r), ir_attr_ints_ref("steps", steps, r),
                   ir_attr_ints_ref("sizes", sizes, r)};
    return dec_op(c, IR_OP_SLICE, &x, 1, a, 3);
}

/* Slice along one axis, the others taken whole. */
ValId dec_slice_axis(DecCtx *c, ValId x, int axis, int64_t start, int64_t step, int64_t size)
{
    const IrType *t = dec_ty(c, x);
    int64_t st[IR_MAX_RANK], sp[IR_MAX_RANK], sz[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        st[i] = 0;
        sp[i] = 1;
        sz[i] = t->dims[i];
    }
    st[axis] = start;
    sp[axis] = step;
    sz[axis] = size;
    return dec_slice(c, x, st, sp, sz);
}

/* PAD node; interior may be NULL (all zero). Returns x when nothing is padded. */
ValId dec_pad(DecCtx *c, ValId x, const int64_t *pads, const int64_t *interior, double value)
{
    return dec_pad_at(c, x, pads, interior, value, 0);
}

/* PAD node whose pads along the axes of bit mask `bound` were computed from those axes'
 * extents (auto_pad SAME with a stride, a pool's ceil_mode, ConvTranspose's
 * output_shape): in a graph with bounded symbolic dimensions it carries the mask (attr
 * "bound", made even when nothing is padded at these extents), so that pass_symdim
 * refuses such an axis that is symbolic instead of applying the bound's pads at every
 * size. Elsewhere as dec_pad. */
ValId dec_pad_at(DecCtx *c, ValId x, const int64_t *pads, const int64_t *interior,
                 double value, int64_t bound)
{
    int r = dec_ty(c, x)->rank;
    int64_t zi[IR_MAX_RANK] = {0};
    bool any = false;
    for (int i = 0; i < 2 * r; i++)
        any |= pads[i] != 0;
    for (int i = 0; interior && i < r; i++)
        any |= interior[i] != 0;
    if (!c->g->nsymdims)
        bound = 0;
    if (!any && !bound)
        return x;
    IrAttr a[4] = {ir_attr_ints_ref("pads", pads, 2 * r),
                   ir_attr_ints_ref("interior", interior ? interior : zi, r),
                   ir_attr_float("value", value), ir_attr_int("bound", bound)};
    return dec_op(c, IR_OP_PAD, &x, 1, a, bound ? 4 : 3);
}

ValId dec_softmax_last(DecCtx *c, ValId x)
{
    int64_t last = dec_ty(c, x)->rank - 1;
    ValId m = dec_reduce(c, IR_RED_MAX, x, &last, 1, true);
    ValId e = dec_un(c, IR_UN_EXP, dec_bin(c, IR_BIN_SUB, x, m));
    return dec_bin(c, IR_BIN_DIV, e, dec_reduce(c, IR_RED_SUM, e, &last, 1, true));
}

ValId dec_swap_last(DecCtx *c, ValId x)
{
    int r = dec_ty(c, x)->rank;
    if (r < 2)
        return x;
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    return dec_transpose(c, x, perm);
}

ValId dec_concat(DecCtx *c, const ValId *xs, int n, int axis)
{
    if (n == 1)
        return xs[0];
    IrAttr a = ir_attr_int("axis", axis);
    return dec_op(c, IR_OP_CONCAT, xs, n, &a, 1);
}

ValId dec_gather(DecCtx *c, ValId data, ValId idx, int axis)
{
    ValId in[2] = {data, idx};
    IrAttr a = ir_attr_int("axis", axis);
    return dec_op(c, IR_OP_GATHER, in, 2, &a, 1);
}

/* Whether t has exactly these dims. */
static bool same_dims(const IrType *t, const int64_t *dims, int rank)
{
    if (t->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i])
            return false;
    return true;
}

/* Reshape unless x already has these dims. */
ValId dec_reshape(DecCtx *c, ValId x, const int64_t *dims, int rank)
{
    if (same_dims(dec_ty(c, x), dims, rank))
        return x;
    return ir_reshape(c->g, x, dims, rank, c->o);
}

ValId dec_transpose(DecCtx *c, ValId x, const int64_t *perm)
{
    int r = dec_ty(c, x)->rank;
    bool ident = true;
    for (int i = 0; i < r; i++)
        ident &= perm[i] == i;
    return ident ? x : ir_transpose(c->g, x, perm, c->o);
}

ValId dec_expand(DecCtx *c, ValId x, const int64_t *dims, int rank)
{
    if (same_dims(dec_ty(c, x), dims, rank))
        return x;
    return ir_expand(c->g, x, dims, rank, c->o);
}

/* dec_expand whose target dims came from the constant shape (one entry per output
 * axis): in a graph with bounded symbolic dimensions, an axis that x broadcasts from 1
 * to an extent folded from a Shape (ir.h IrExt, exact) is marked on the EXPAND (attr
 * ext: output axis, source value, its axis, per such axis) and the node is not folded,
 * so that pass_symdim gives that axis the source's symbol when it is symbolic
 * (x.expand(b, L, L), torch.ones(L)): folded at the bound, a sum over it was the
 * bound's at every size. Float data only: integer index grids and bool masks stay
 * constants, which the gathers and selects that read them need. */
ValId dec_expand_from(DecCtx *c, ValId x, const int64_t *dims, int rank, ValId shape)
{
    const IrExt *ext = shape == IR_NONE ? NULL : ir_val(c->g, shape)->ext;
    const IrType *t = dec_ty(c, x);
    int64_t tag[3 * IR_MAX_RANK];
    int nt = 0;
    bool data = ir_dtype_is_float(t->dtype);  /* not an index grid (a vmapped gather's
                                                 indices must stay constant) */
    for (int a = 0; ext && data && c->g->nsymdims && a < rank; a++) {
        int xa = a - (rank - t->rank);
        IrExtElem e = ir_ext_at(ext, (uint64_t)a);
        if ((xa < 0 || t->dims[xa] == 1) && dims[a] > 1 && e.src != IR_NONE && e.exact) {
            tag[nt++] = a;
            tag[nt++] = e.src;
            tag[nt++] = e.axis;
        }
    }
    if (!nt || same_dims(t, dims, rank))
        return dec_expand(c, x, dims, rank);
    IrAttr at[2] = {ir_attr_ints_ref("shape", dims, rank), ir_attr_ints_ref("ext", tag, nt)};
    bool fold = c->g->fold_consts;
    c->g->fold_consts = false;
    ValId y = dec_op(c, IR_OP_EXPAND, &x, 1, at, 2);
    c->g->fold_consts = fold;
    return y;
}

ValId dec_cast(DecCtx *c, ValId x, IrDType t)
{
    return dec_ty(c, x)->dtype == t ? x : ir_cast(c->g, x, t, c->o);
}

void dec_drop_temp(DecCtx *c, ValId v, ValId result, ValId made_from)
{
    if (v != IR_NONE && v != result && v >= made_from && ir_is_const(c->g, result))
        ir_const_free(c->g, v);
}

ValId dec_reduce(DecCtx *c, int fn, ValId x, const int64_t *axes, int naxes, bool keep)
{
    if (naxes == 0)
        return x;
    return ir_reduce(c->g, fn, x, axes, naxes, keep, c->o);
}

/* Mean over axes: sum then multiply by 1/count. */
ValId dec_mean(DecCtx *c, ValId x, const int64_t *axes, int naxes, bool keep)
{
    const IrType *t = dec_ty(c, x);
    int64_t cnt = 1;
    for (int i = 0; i < naxes; i++)
        cnt *= t->dims[axes[i]];
    ValId s = dec_reduce(c, IR_RED_SUM, x, axes, naxes, keep);
    if (cnt == 1)
        return s;
    if (ir_dtype_is_float(dec_ty(c, s)->dtype))
        return dec_bin_s(c, IR_BIN_MUL, s, 1.0 / (double)cnt);
    return dec_bin_s(c, IR_BIN_DIV, s, (double)cnt);
}

/* Axes that shrink first (what follows works on less), then the last axis of the tensor
 * when it grows, then the other axes that grow. Along the last axis a resample gathers
 * single elements (a DMA descriptor each), along another one whole rows: DeepLabV3's x16
 * bilinear upsampling of [21, 32, 32] logits gathered 21 x 512 x 512 single elements
 * twice (height first) where width first gathers 21 x 32 x 512, and the height then whole
 * rows of 512. The values differ only in rounding (a separable resample's axes commute). */
void dec_resize_order(int rank, int first, int n, const int64_t *in, const int64_t *out,
                      int *order)
{
    double key[IR_MAX_RANK];
    for (int i = 0; i < n; i++) {
        int a = first + i;
        double grow = in[a] > 0 ? (double)out[a] / (double)in[a] : 1.0;
        key[i] = a == rank - 1 && grow > 1.0 ? 1.0 : grow;
        order[i] = a;
        for (int j = i; j > 0 && key[j] < key[j - 1]; j--) {   /* stable insertion */
            double k = key[j];
            int o = order[j];
            key[j] = key[j - 1], order[j] = order[j - 1];
            key[j - 1] = k, order[j - 1] = o;
        }
    }
}

ValId dec_sym_last(DecCtx *c, ValId x, int axis)
{
    IrAttr ax = ir_attr_int("axis", axis);
    return dec_bin_s(c, IR_BIN_SUB, dec_cast(c, dec_op(c, IR_OP_SYMLEN, &x, 1, &ax, 1),
                                             IR_DT_I64), 1.0);
}

ValId dec_sym_gather(DecCtx *c, ValId x, int axis, int64_t n, const int64_t *idx, ValId last)
{
    ValId iv = dec_const_i64(c->g, &n, 1, idx);
    if (last == IR_NONE)
        return dec_gather(c, x, iv, axis);
    ValId in[2] = {x, dec_bin(c, IR_BIN_MIN, iv, last)};
    IrAttr a[2] = {ir_attr_int("axis", axis), ir_attr_int("inbounds", 1)};
    return dec_op(c, IR_OP_GATHER, in, 2, a, 2);
}

ValId dec_sym_like(DecCtx *c, ValId y, ValId x, int axis, int64_t mul)
{
    IrAttr a[3] = {ir_attr_int("axis", axis), ir_attr_int("like_axis", axis),
                   ir_attr_int("mul", mul)};
    ValId yl[2] = {y, x};
    return dec_op(c, IR_OP_SYMLIKE, yl, 2, a, 3);
}

/* Normalise x over axes: (x - mean) * rsqrt(var + eps), with the mean and the biased
 * (population) variance over axes, kept; the mean, the inverse standard deviation and
 * the variance go to *mean / *rstd / *var when not NULL (layer, group, instance and
 * batch norms of both frontends). */
ValId dec_normalize(DecCtx *c, ValId x, const int64_t *axes, int naxes, double eps,
                    ValId *mean, ValId *rstd, ValId *var)
{
    ValId m = dec_mean(c, x, axes, naxes, true);
    ValId dx = dec_bin(c, IR_BIN_SUB, x, m);
    ValId v = dec_mean(c, dec_bin(c, IR_BIN_MUL, dx, dx), axes, naxes, true);
    ValId r = dec_un(c, IR_UN_RSQRT, dec_bin_s(c, IR_BIN_ADD, v, eps));
    if (mean)
        *mean = m;
    if (rstd)
        *rstd = r;
    if (var)
        *var = v;
    return dec_bin(c, IR_BIN_MUL, dx, r);
}

ValId dec_un(DecCtx *c, int fn, ValId a) { return ir_unary(c->g, fn, a, c->o); }
ValId dec_bin(DecCtx *c, int fn, ValId a, ValId b) { return ir_binary(c->g, fn, a, b, c->o); }

ValId dec_bin_s(DecCtx *c, int fn, ValId a, double s)
{
    return ir_binary(c->g, fn, a, dec_scalar(c->g, dec_ty(c, a)->dtype, s), c->o);
}

ValId dec_select(DecCtx *c, ValId cond, ValId a, ValId b) { return ir_select(c->g, cond, a, b, c->o); }

/* Reshape a per-channel vector v[C] to [1, C, 1, ...] for rank r. */
ValId dec_chan_view(DecCtx *c, ValId v, int r)
{
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = 1;
    dims[1] = dec_numel(dec_ty(c, v));
    return dec_reshape(c, v, dims, r);
}

/* Numpy broadcast of a and b into dims/rank. */
bool dec_broadcast(const IrType *a, const IrType *b, int64_t *dims, int *rank)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return false;
        dims[i] = da == 1 ? db : da;
    }
    *rank = r;
    return true;
}

int64_t dec_numel(const IrType *t) { return ir_type_numel(t); }
