/* window.c: pass_window, tensors larger than one core's DRAM window.
 *
 * A core reaches device memory through a window of target.core_window_mib (256 MiB on
 * the card): every DRAM access a core makes to one tensor in one kernel must lie inside
 * one window (schemas/isa.md, "DRAM windows"). Most kernels satisfy this by their
 * division over the cores; two kinds of reads do not, and this pass rewrites them
 * before fusion so that every core's reads fall inside one window-sized part:
 *
 *   GATHER from a table larger than the window (embedding tables): one GATHER reads
 *     any row of its table, so the table is cut along the gathered axis into parts of
 *     at most one window each, read through SLICE views (the storage stays one tensor,
 *     shared with any other reader such as a tied LM head). Part p gathers the rows
 *     whose index falls in its range (the others read row 0 of the part) and SELECTs
 *     combine the parts by the index's range: the output rows are disjoint, so the
 *     result is exact. An index outside the table still stops the run (it is passed
 *     unchanged to part 0, whose GATHER refuses it).
 *   MATMUL by a constant row-major weight [K, N] larger than the window (untied LM
 *     heads, large projections): a core computing a block of columns reads a strided
 *     slice that spans nearly the whole weight, so the weight is stored as column
 *     parts [K, n] of at most one window each (new constants, whole sticks wide) and
 *     the product becomes one MATMUL per part and a CONCAT of their results along the
 *     last axis (done in place by pass_fuse: each product writes its columns).
 *
 * Weights read transposed (x @ transpose(W), W [N, K] row-major, as a tied LM head) need
 * nothing: each core reads a contiguous range of W's rows. Nothing changes for a model
 * whose tensors all fit one window, so its bundle is the same.
 */
#include <string.h>

#include "devtype.h"
#include "dtconv.h"
#include "pass.h"

/* Device bytes of `rows` rows of d (dims after axis, the innermost rounded up to whole
 * sticks): an upper bound of the storage of that many rows. */
static uint64_t rows_bytes(const IrType *d, int axis, uint64_t rows, const SpyTarget *t)
{
    uint64_t es = (uint64_t)pass_dev_esize(d->dtype), inner = 1;
    for (int i = axis + 1; i < d->rank; i++) {
        uint64_t n = (uint64_t)d->dims[i];
        if (i == d->rank - 1 && es && t->stick_bytes >= es) {
            uint64_t se = t->stick_bytes / es;
            n = (n + se - 1) / se * se;
        }
        inner *= n;
    }
    return rows * inner * es;
}

/* Scalar constant v of integer dtype dt (i32 or i64). */
static ValId int_scalar(IrGraph *g, IrDType dt, int64_t v)
{
    IrType t = {.dtype = dt, .rank = 0};
    int32_t v32 = (int32_t)v;
    return ir_add_const(g, "c", &t, dt == IR_DT_I64 ? (const void *)&v : (const void *)&v32);
}

/* (lo <= w) & (w < hi), lo/hi scalar constants of w's dtype. */
static ValId in_range(IrGraph *g, ValId w, int64_t lo, int64_t hi, const IrOrigin *o)
{
    IrDType dt = ir_vtype(g, w)->dtype;
    ValId a = ir_binary(g, IR_BIN_GE, w, int_scalar(g, dt, lo), o);
    ValId b = ir_binary(g, IR_BIN_LT, w, int_scalar(g, dt, hi), o);
    return ir_binary(g, IR_BIN_AND, a, b, o);
}

/* SLICE of rows [lo, hi) of x along axis. */
static ValId slice_rows(IrGraph *g, ValId x, int axis, int64_t lo, int64_t hi,
                        const IrOrigin *o)
{
    const IrType *t = ir_vtype(g, x);
    int64_t starts[IR_MAX_RANK] = {0}, steps[IR_MAX_RANK], sizes[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        steps[i] = 1, sizes[i] = t->dims[i];
    starts[axis] = lo, sizes[axis] = hi - lo;
    IrAttr a[3] = {ir_attr_ints_ref("starts", starts, t->rank),
                   ir_attr_ints_ref("steps", steps, t->rank),
                   ir_attr_ints_ref("sizes", sizes, t->rank)};
    NodeId n = ir_add_node(g, IR_OP_SLICE, &x, 1, a, 3, o);
    return g->nodes[n].out[0];
}

/* GATHER of table rows selected by j (already inside [0, rows of the table)). */
static ValId gather(IrGraph *g, ValId table, ValId j, int axis, const IrOrigin *o)
{
    ValId in[2] = {table, j};
    IrAttr a = ir_attr_int("axis", axis);
    NodeId n = ir_add_node(g, IR_OP_GATHER, in, 2, &a, 1, o);
    return g->nodes[n].out[0];
}

/* x's bits as dtype to (of the same element size): a BITCAST view. */
static ValId bitcast(IrGraph *g, ValId x, IrDType to, const IrOrigin *o)
{
    IrAttr a = ir_attr_int("to", (int64_t)to);
    NodeId n = ir_add_node(g, IR_OP_BITCAST, &x, 1, &a, 1, o);
    return g->nodes[n].out[0];
}

/* The dtype the SELECTs combining the parts of a table of dtype t run on: t, or for a
 * storage-only float (float16, bfloat16, float8: the vector unit only moves them) the
 * integer of its element size, whose SELECT moves the same bits. */
static IrDType select_dtype(IrDType t)
{
    if (t == IR_DT_F16 || t == IR_DT_BF16)
        return IR_DT_I16;
    if (!pass_dtype_computable(t) && spy_dt_narrow_float(pass_dev_dtype(t)))
        return IR_DT_I8;
    return t;
}

/* Number of parts (of at most one window each) for a table of `rows` rows along axis;
 * 0 when the table fits one window or cannot be cut (rows before the axis, a row wider
 * than the window). */
static int64_t gather_parts(const IrType *d, int axis, const SpyTarget *t)
{
    uint64_t window = (uint64_t)t->core_window_mib << 20;
    uint64_t rows = (uint64_t)d->dims[axis], row = rows_bytes(d, axis, 1, t);
    for (int i = 0; i < axis; i++)
        if (d->dims[i] != 1)
            return 0;
    if (row == 0 || rows_bytes(d, axis, rows, t) <= window || row > window)
        return 0;
    uint64_t per = window / row;
    return (int64_t)((rows + per - 1) / per);
}

/* Replace GATHER n (table larger than the window, nparts parts) by per-part GATHERs of
 * SLICE views combined by the index's range; uses of its output go to the result. */
static void split_gather(IrGraph *g, const IrNode *n, int64_t nparts)
{
    const IrOrigin *o = &n->origin;
    ValId table = n->in[0], idx = n->in[1];
    int axis = (int)ir_attr_get_int(n, "axis", 0);
    const IrType *it = ir_vtype(g, idx);
    IrDType dt = it->dtype;
    int64_t rows = ir_vtype(g, table)->dims[axis], per = (rows + nparts - 1) / nparts;
    /* w: the index with negatives wrapped; below -rows it becomes rows (refused) */
    ValId zero = int_scalar(g, dt, 0);
    ValId neg = ir_binary(g, IR_BIN_LT, idx, zero, o);
    ValId u = ir_select(g, neg, ir_binary(g, IR_BIN_ADD, idx, int_scalar(g, dt, rows), o),
                        idx, o);
    ValId under = ir_binary(g, IR_BIN_LT, u, zero, o);   /* before the constant, always */
    ValId w = ir_select(g, under, int_scalar(g, dt, rows), u, o);
    /* mask shape: the index's dims followed by ones for the dims after the axis */
    int64_t mdims[IR_MAX_RANK];
    int mr = 0, tr = ir_vtype(g, table)->rank;
    for (int i = 0; i < it->rank; i++)
        mdims[mr++] = it->dims[i];
    for (int i = axis + 1; i < tr; i++)
        mdims[mr++] = 1;
    IrDType tt = ir_vtype(g, table)->dtype, st = select_dtype(tt);
    ValId res = IR_NONE;
    for (int64_t p = 0; p < nparts; p++) {
        int64_t lo = p * per, hi = lo + per < rows ? lo + per : rows;
        ValId part = slice_rows(g, table, axis, lo, hi, o), j;
        if (p == 0) {                      /* rows of the other parts read row 0 */
            j = ir_select(g, in_range(g, w, hi, rows, o), zero, w, o);
            res = gather(g, part, j, axis, o);
            if (st != tt)
                res = bitcast(g, res, st, o);
            continue;
        }
        ValId in = in_range(g, w, lo, hi, o);
        j = ir_select(g, in, ir_binary(g, IR_BIN_SUB, w, int_scalar(g, dt, lo), o), zero, o);
        ValId gp = gather(g, part, j, axis, o);
        if (st != tt)
            gp = bitcast(g, gp, st, o);
        ValId m = mr == it->rank ? in : ir_reshape(g, in, mdims, mr, o);
        res = ir_select(g, m, gp, res, o);
    }
    if (st != tt)
        res = bitcast(g, res, tt, o);
    ir_replace_uses(g, n->out[0], res);
}

/* Columns per part (a multiple of the stick) for a constant weight [K, N] larger than
 * the window; 0 when it fits one window or cannot be cut (one stick of columns over
 * all K rows is larger than the window). */
static int64_t weight_cols(IrGraph *g, const IrNode *n, const SpyTarget *t)
{
    ValId w = n->in[1];
    const IrType *wt = ir_vtype(g, w);
    uint64_t es = (uint64_t)pass_dev_esize(wt->dtype), window = (uint64_t)t->core_window_mib << 20;
    if (!ir_is_const(g, w) || wt->rank != 2 || es == 0 || t->stick_bytes < es ||
        rows_bytes(wt, 0, (uint64_t)wt->dims[0], t) <= window)
        return 0;
    uint64_t se = t->stick_bytes / es, k = (uint64_t)wt->dims[0], n_ = (uint64_t)wt->dims[1];
    uint64_t cols = window / (k * es) / se * se;
    if (cols == 0)
        return 0;
    uint64_t parts = (n_ + cols - 1) / cols, even = (n_ + parts - 1) / parts;
    even = (even + se - 1) / se * se;      /* balanced parts, still whole sticks */
    return (int64_t)(even < cols ? even : cols);
}

/* Replace MATMUL n (constant weight wider than the window) by one MATMUL per column
 * part of cols columns and a CONCAT of their results. */
static void split_matmul(IrGraph *g, const IrNode *n, int64_t cols)
{
    const IrOrigin *o = &n->origin;
    ValId w = n->in[1];
    const IrType *wt = ir_vtype(g, w);
    int64_t k = wt->dims[0], nn = wt->dims[1];
    size_t es = ir_dtype_size(wt->dtype);
    const uint8_t *src = ir_val(g, w)->data;
    int64_t nparts = (nn + cols - 1) / cols;
    ValId *outs = ir_scratch(g, sizeof(ValId) * (size_t)nparts);
    for (int64_t p = 0; p < nparts; p++) {
        int64_t lo = p * cols, np = lo + cols < nn ? cols : nn - lo;
        IrType pt = {.dtype = wt->dtype, .rank = 2, .dims = {k, np}};
        uint8_t *d = ir_scratch(g, (size_t)(k * np) * es + 1);    /* ir_add_const copies */
        for (int64_t r = 0; r < k; r++)
            memcpy(d + (size_t)(r * np) * es, src + (size_t)(r * nn + lo) * es, (size_t)np * es);
        ValId part = ir_add_const(g, ir_val(g, w)->name, &pt, d);
        outs[p] = ir_matmul(g, n->in[0], part, o);
    }
    IrAttr a = ir_attr_int("axis", ir_vtype(g, n->out[0])->rank - 1);
    NodeId c = ir_add_node(g, IR_OP_CONCAT, outs, (int)nparts, &a, 1, o);
    ir_replace_uses(g, n->out[0], g->nodes[c].out[0]);
}

/* The pass. */
bool pass_window(IrGraph *g, const PassOptions *opt)
{
    const SpyTarget *t = opt->target;
    if (!t)
        return true;
    uint32_t nn = g->nnodes;
    bool any = false;
    for (uint32_t i = 0; i < nn && !any; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead)
            continue;
        any = (n->op == IR_OP_GATHER &&
               gather_parts(ir_vtype(g, n->in[0]), (int)ir_attr_get_int(n, "axis", 0), t)) ||
              (n->op == IR_OP_MATMUL && weight_cols(g, n, t));
    }
    if (!any)
        return !ir_failed(g);
    bool fold = g->fold_consts;            /* the parts are views, not folded copies */
    g->fold_consts = false;
    uint32_t cnt = 0;
    IrNode *old = ir_rewrite_begin(g, &cnt);
    for (uint32_t i = 0; i < cnt; i++) {
        IrNode *n = &old[i];
        if (n->dead)
            continue;
        int64_t parts = n->op == IR_OP_GATHER
                            ? gather_parts(ir_vtype(g, n->in[0]), (int)ir_attr_get_int(n, "axis", 0), t)
                            : 0;
        int64_t cols = n->op == IR_OP_MATMUL ? weight_cols(g, n, t) : 0;
        if (parts)
            split_gather(g, n, parts);
        else if (cols)
            split_matmul(g, n, cols);
        else
            ir_readd_node(g, n);
    }
    g->fold_consts = fold;
    return !ir_failed(g);
}
