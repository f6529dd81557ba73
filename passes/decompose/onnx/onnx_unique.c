/* onnx_unique.c: Unique (opset 11), with data-dependent output shapes.
 *
 * The input is taken as A rows of K elements (axis given: the slices along the axis;
 * no axis: the flattened elements, K = 1). Everything is decided by comparison tables
 * of A x A rows (O(A^2 K) work, refused above DEC_DYN_MAX_TABLE entries):
 *   same[i][j]  rows i and j are equal (all K elements)
 *   first[i]    no equal row before i: row i is the first occurrence of its value
 *   cnt[i]      rows equal to row i
 *   slot[i]     position of row i's value among the unique ones:
 *               sorted = 1: the number of distinct rows lexicographically less than it
 *               sorted = 0: the number of first occurrences before it (taken from its
 *                           own first occurrence, found by ARGMAX of same[i])
 * The first occurrences are scattered to their slots (onnx_dynamic.c) to give Y, the
 * first-occurrence indices and the counts, all with count = sum(first) rows valid;
 * inverse_indices is slot itself (static shape).
 */
#include "onnx_dynamic.h"

typedef struct {
    ValId rows;                            /* [A, K] */
    int64_t a, k;
    ValId same;                            /* [A, A] i32: 1 where rows i and j are equal */
    ValId first;                           /* [A] bool */
    ValId cnt;                             /* [A] i32 */
    ValId slot;                            /* [A] i32 */
} Uq;

/* [A, A, K] comparison of rows i (dim 0) and j (dim 1) with binary fn. */
static ValId pairwise(DecCtx *c, const Uq *u, int fn)
{
    int64_t di[3] = {u->a, 1, u->k}, dj[3] = {1, u->a, u->k};
    return dec_bin(c, fn, dec_reshape(c, u->rows, dj, 3), dec_reshape(c, u->rows, di, 3));
}

/* Constant [A, A] i32: 1 where j < i. */
static ValId below_diagonal(DecCtx *c, int64_t a)
{
    double *v = ir_scratch(c->g, (size_t)(a * a + 1) * sizeof *v);
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < a; j++)
            v[i * a + j] = j < i;
    int64_t dims[2] = {a, a};
    return dec_const(c->g, IR_DT_I32, dims, 2, v);
}

/* same, first and cnt. */
static void equal_rows(DecCtx *c, Uq *u)
{
    int64_t ax2 = 2, ax1 = 1, dims[2] = {u->a, u->a};
    ValId eq = dec_cast(c, pairwise(c, u, IR_BIN_EQ), IR_DT_I32);
    u->same = u->k == 1 ? dec_reshape(c, eq, dims, 2)
                        : dec_reduce(c, IR_RED_MIN, eq, &ax2, 1, false);
    ValId before = dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, u->same,
                                                     below_diagonal(c, u->a)),
                              &ax1, 1, false);
    u->first = dec_bin(c, IR_BIN_EQ, before, dec_scalar(c->g, IR_DT_I32, 0));
    u->cnt = dec_reduce(c, IR_RED_SUM, u->same, &ax1, 1, false);
}

/* [A, A] bool: row j lexicographically less than row i. */
static ValId row_less(DecCtx *c, const Uq *u)
{
    ValId lt = pairwise(c, u, IR_BIN_LT);
    int64_t dims[2] = {u->a, u->a}, ax2 = 2;
    if (u->k == 1)
        return dec_reshape(c, lt, dims, 2);
    /* element k decides when every element before it is equal */
    ValId ne = dec_cast(c, pairwise(c, u, IR_BIN_NE), IR_DT_I32);
    IrAttr a[3] = {ir_attr_int("axis", 2), ir_attr_int("exclusive", 1), ir_attr_int("reverse", 0)};
    ValId diff_before = dec_op(c, IR_OP_CUMSUM, &ne, 1, a, 3);
    ValId decides = dec_bin(c, IR_BIN_EQ, diff_before, dec_scalar(c->g, IR_DT_I32, 0));
    ValId l = dec_cast(c, dec_bin(c, IR_BIN_AND, lt, decides), IR_DT_I32);
    return dec_bin(c, IR_BIN_GT, dec_reduce(c, IR_RED_SUM, l, &ax2, 1, false),
                   dec_scalar(c->g, IR_DT_I32, 0));
}

/* slot (see the top) for sorted or first-occurrence order. */
static void slots(DecCtx *c, Uq *u, bool sorted)
{
    ValId f32 = dec_cast(c, u->first, IR_DT_I32);
    int64_t ax1 = 1, dims[2] = {1, u->a};
    if (sorted) {
        ValId less = dec_cast(c, row_less(c, u), IR_DT_I32);
        ValId firsts = dec_reshape(c, f32, dims, 2);       /* counts only first rows j */
        u->slot = dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, less, firsts), &ax1, 1,
                             false);
        return;
    }
    IrAttr a[3] = {ir_attr_int("axis", 0), ir_attr_int("exclusive", 1), ir_attr_int("reverse", 0)};
    ValId order = dec_op(c, IR_OP_CUMSUM, &f32, 1, a, 3);
    IrAttr r[4] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 1),
                   ir_attr_int("keepdims", 0), ir_attr_int("select_last", 0)};
    ValId rep = dec_op(c, IR_OP_ARGREDUCE, &u->same, 1, r, 4);   /* first equal row */
    u->slot = dec_gather(c, order, rep, 0);
}

/* Scatter [A] values v (one per row) of the first occurrences to their slots; [A] i64
 * with a data-dependent extent. */
static ValId per_unique(DecCtx *c, const Uq *u, ValId v, ValId sel, ValId count)
{
    int64_t col[2] = {u->a, 1};
    ValId rows = dec_dyn_scatter(c, dec_reshape(c, dec_cast(c, v, IR_DT_I64), col, 2), sel,
                                 u->a);
    ir_dyn_add(c->g, rows, 0, count);
    ValId out = dec_reshape(c, rows, &u->a, 1);
    ir_dyn_add(c->g, out, 0, count);
    return out;
}

/* Unique(X) -> Y, indices, inverse_indices, counts. */
bool dec_unique(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    IrType xt = *dec_ty(c, x);
    bool has_axis = dec_has_attr(c, "axis"), sorted = dec_ai(c, "sorted", 1) != 0;
    int ax = 0;
    if (has_axis && xt.rank == 0) {
        dec_err(c, "axis given for a scalar input");
        return false;
    }
    if (has_axis && !dec_axis(c, dec_ai(c, "axis", 0), xt.rank, &ax))
        return false;
    if (!has_axis) {
        int64_t n = dec_numel(&xt);
        x = dec_reshape(c, x, &n, 1);
        xt = *dec_ty(c, x);
    }
    Uq u = {.rows = dec_dyn_rows(c, x, ax)};
    u.a = dec_ty(c, u.rows)->dims[0];
    u.k = dec_ty(c, u.rows)->dims[1];
    if (u.a * u.a * (u.k ? u.k : 1) > DEC_DYN_MAX_TABLE || u.a == 0 || u.k == 0) {
        dec_err(c, "unsupported: Unique of %lld rows of %lld elements (at most %lld "
                "comparisons, and no empty input)", (long long)u.a, (long long)u.k,
                (long long)DEC_DYN_MAX_TABLE);
        return false;
    }
    equal_rows(c, &u);
    slots(c, &u, sorted);
    int64_t ax0 = 0;
    ValId count = dec_reduce(c, IR_RED_SUM, dec_cast(c, u.first, IR_DT_I32), &ax0, 1, false);
    ValId sel = dec_select(c, u.first, u.slot, dec_scalar(c->g, IR_DT_I32, -1));
    ValId y = dec_dyn_scatter(c, u.rows, sel, u.a);
    if (ir_failed(c->g))
        return false;
    ir_dyn_add(c->g, y, 0, count);
    c->out[0] = dec_dyn_unrows(c, y, &xt, ax);
    ir_dyn_add(c->g, c->out[0], ax, count);
    c->out[1] = per_unique(c, &u, dec_dyn_iota(c, u.a, IR_DT_I64), sel, count);
    c->out[2] = dec_cast(c, u.slot, IR_DT_I64);
    c->out[3] = per_unique(c, &u, u.cnt, sel, count);
    return !ir_failed(c->g);
}
