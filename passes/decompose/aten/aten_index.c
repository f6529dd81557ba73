/* aten_index.c: ATen indexing (index.Tensor, index_put, index_copy, index_select, gather).
 *
 * Advanced indexing becomes one GATHER: the indexed dims are merged into one, the
 * index tensors combined into a linear index over it (negative indices wrapped).
 */
#include <stdint.h>
#include <string.h>

#include "aten.h"
#include "passes/decompose/dec_index.h"

/* Move the dims listed in pos (k of them) to the front, others after in order. */
static ValId front_dims(DecCtx *c, ValId x, const int *pos, int k)
{
    int r = dec_ty(c, x)->rank, n = 0;
    int64_t perm[IR_MAX_RANK];
    bool used[IR_MAX_RANK] = {false};
    for (int j = 0; j < k; j++)
        perm[n++] = pos[j], used[pos[j]] = true;
    for (int i = 0; i < r; i++)
        if (!used[i])
            perm[n++] = i;
    return dec_transpose(c, x, perm);
}

/* index.Tensor(self, indices): torch advanced indexing with integer index tensors. */
bool aten_index(DecCtx *c)
{
    ValId x, idx[IR_MAX_RANK + 1];
    if (!aten_need(c, "self", &x))
        return false;
    const IrType *t = dec_ty(c, x);
    int n = aten_ins(c, "indices", idx, IR_MAX_RANK + 1), pos[IR_MAX_RANK], k = 0;
    if (n > t->rank) {
        dec_err(c, "%d indices for a tensor of rank %d", n, t->rank);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (idx[i] == IR_NONE)
            continue;
        IrDType it = dec_ty(c, idx[i])->dtype;
        if (!ir_dtype_is_int(it)) {
            dec_err(c, "indexing with a %s mask has a data-dependent shape",
                    ir_dtype_name(it));
            return false;
        }
        pos[k] = i;
        idx[k++] = idx[i];
    }
    if (k == 0) {
        c->out[0] = x;
        return true;
    }
    bool adjacent = pos[k - 1] - pos[0] == k - 1;
    int first = adjacent ? pos[0] : 0;
    int64_t dsz[IR_MAX_RANK];
    for (int j = 0; j < k; j++)
        dsz[j] = t->dims[pos[j]];
    if (!adjacent) {
        x = front_dims(c, x, pos, k);
        t = dec_ty(c, x);
    }
    /* merge dims first..first+k-1 and build the linear index over them */
    int64_t md[IR_MAX_RANK], merged = 1;
    int r = 0;
    for (int i = 0; i < t->rank; i++) {
        if (i > first && i < first + k)
            continue;
        md[r++] = i == first ? 0 : t->dims[i];
    }
    ValId lin = IR_NONE;
    for (int j = k - 1; j >= 0; j--) {
        ValId term = dix_wrap_size(c, idx[j], dsz[j]);
        if (merged != 1)
            term = dec_bin_s(c, IR_BIN_MUL, term, (double)merged);
        lin = lin == IR_NONE ? term : dec_bin(c, IR_BIN_ADD, lin, term);
        merged *= dsz[j];
    }
    md[first] = merged;
    ValId y = dec_gather(c, dec_reshape(c, x, md, r), lin, first);
    const IrType *o = aten_oty(c, 0);
    c->out[0] = dec_reshape(c, y, o->dims, o->rank);
    return true;
}

/* x with the positions idx (constant 1-D integers) along axis ax replaced by v
 * (broadcast to the indexed shape): a GATHER along ax from concat(x, v); a position
 * indexed twice reads the later value. */
static bool put_along(DecCtx *c, ValId x, int ax, ValId index, ValId v)
{
    const IrType *t = dec_ty(c, x);
    int cnt = 0;
    int64_t d = t->dims[ax], m = dec_numel(dec_ty(c, index));
    int64_t *iv = ir_alloc(c->g, (size_t)(m + 1) * sizeof *iv);
    int64_t *map = ir_alloc(c->g, (size_t)(d + 1) * sizeof *map);
    if (m > INT32_MAX || !dec_const_ints(c, index, "index_put indices", iv, (int)m, &cnt))
        return false;
    for (int64_t j = 0; j < d; j++)
        map[j] = j;
    for (int u = 0; u < cnt; u++) {
        int64_t j = iv[u] < 0 ? iv[u] + d : iv[u];
        if (j < 0 || j >= d) {
            dec_err(c, "index %lld out of range for a dimension of %lld", (long long)iv[u],
                    (long long)d);
            return false;
        }
        map[j] = d + u;
    }
    int64_t vd[IR_MAX_RANK];
    memcpy(vd, t->dims, sizeof vd);
    vd[ax] = cnt;
    ValId both[2] = {x, dec_expand(c, dec_cast(c, v, t->dtype), vd, t->rank)};
    c->out[0] = dec_gather(c, dec_concat(c, both, 2, ax), dec_const_i64(c->g, &d, 1, map), ax);
    return true;
}

/* index_put(self, indices, values, accumulate) with one 1-D integer index tensor,
 * the other entries None (x[:, idx] = v, or += with accumulate): a constant source
 * map for constant indices, else a scatter (aten_put_along). */
bool aten_index_put(DecCtx *c)
{
    ValId x, v, idx[IR_MAX_RANK + 1];
    if (!aten_need(c, "self", &x) || !aten_need(c, "values", &v))
        return false;
    const IrType *t = dec_ty(c, x);
    int n = aten_ins(c, "indices", idx, IR_MAX_RANK + 1), ax = -1;
    for (int i = 0; i < n && ax != -2; i++)
        if (idx[i] != IR_NONE)
            ax = ax == -1 && i < t->rank ? i : -2;
    if (ax < 0 || n > t->rank) {
        dec_err(c, "index_put is supported with one index tensor");
        return false;
    }
    if (dec_ai(c, "accumulate", 0) || !ir_is_const(c->g, idx[ax])) {
        c->out[0] = aten_put_along(c, x, ax, idx[ax], v,
                                   dec_ai(c, "accumulate", 0) ? IR_RED_SUM : DIX_RED_NONE);
        return c->out[0] != IR_NONE;
    }
    return put_along(c, x, ax, idx[ax], v);
}

/* index_copy(self, dim, index, source): self with the slices index along dim
 * replaced by those of source (a scatter when the index is not a constant). */
bool aten_index_copy(DecCtx *c)
{
    ValId x, idx, src;
    int ax;
    if (!aten_need(c, "self", &x) || !aten_need(c, "index", &idx) ||
        !aten_need(c, "source", &src))
        return false;
    int r = dec_ty(c, x)->rank;
    if (r == 0 || !dec_axis(c, dec_ai(c, "dim", 0), r, &ax))
        return false;
    if (!ir_is_const(c->g, idx)) {
        c->out[0] = aten_put_along(c, x, ax, idx, src, DIX_RED_NONE);
        return c->out[0] != IR_NONE;
    }
    return put_along(c, x, ax, idx, src);
}

/* index_select(self, dim, index). */
bool aten_index_select(DecCtx *c)
{
    ValId x, idx;
    if (!aten_need(c, "self", &x) || !aten_need(c, "index", &idx))
        return false;
    const IrType *t = dec_ty(c, x);
    int ax;
    if (!dec_axis(c, dec_ai(c, "dim", 0), t->rank > 0 ? t->rank : 1, &ax))
        return false;
    ValId y = dec_gather(c, x, dix_wrap_size(c, idx, t->dims[ax]), ax);
    const IrType *o = aten_oty(c, 0);
    c->out[0] = dec_reshape(c, y, o->dims, o->rank);
    return true;
}

/* gather(self, dim, index): out[p] = self[p with p[dim] = index[p]] (dix_take_along). */
bool aten_gather(DecCtx *c)
{
    ValId x, idx;
    if (!aten_need(c, "self", &x) || !aten_need(c, "index", &idx))
        return false;
    const IrType *t = dec_ty(c, x), *ti = dec_ty(c, idx);
    int ax, r = t->rank;
    if (!dec_axis(c, dec_ai(c, "dim", 0), r, &ax))
        return false;
    if (ti->rank != r || r == 0) {
        dec_err(c, "gather index must have the rank of the input (%d)", r);
        return false;
    }
    for (int i = 0; i < r; i++)
        if (i != ax && ti->dims[i] > t->dims[i]) {
            dec_err(c, "gather index dim %d (%lld) exceeds the input's (%lld)", i,
                    (long long)ti->dims[i], (long long)t->dims[i]);
            return false;
        }
    c->out[0] = dix_take_along(c, x, dec_cast(c, idx, IR_DT_I64), ax);
    return true;
}
