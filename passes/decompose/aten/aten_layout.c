/* aten_layout.c: outputs picked from their inputs by static index maps (meshgrid,
 * as_strided).
 */
#include <string.h>

#include "aten.h"

/* meshgrid(tensors, indexing="ij"|"xy"): output i is input i (0-d or 1-D) laid along
 * axis i of the grid and expanded over the others; "xy" swaps the first two axes. */
bool aten_meshgrid(DecCtx *c)
{
    ValId xs[IR_MAX_RANK + 1];
    int n = aten_ins(c, "tensors", xs, IR_MAX_RANK + 1);
    const char *ix = dec_as(c, "indexing", "ij");
    bool xy = strcmp(ix, "xy") == 0;
    if (n < 1 || n > IR_MAX_RANK || (!xy && strcmp(ix, "ij") != 0)) {
        dec_err(c, "meshgrid of %d tensors with indexing '%s' (1 to %d tensors, 'ij' or "
                "'xy')", n, ix, IR_MAX_RANK);
        return false;
    }
    int64_t grid[IR_MAX_RANK];
    int axis[IR_MAX_RANK];
    for (int i = 0; i < n; i++) {
        const IrType *t = dec_ty(c, xs[i]);
        if (xs[i] == IR_NONE || t->rank > 1) {
            dec_err(c, "meshgrid input %d must be 0-d or 1-D", i);
            return false;
        }
        axis[i] = xy && n > 1 && i < 2 ? 1 - i : i;
        grid[axis[i]] = dec_numel(t);
    }
    for (int i = 0; i < n && i < c->n->nout; i++) {
        int64_t dims[IR_MAX_RANK];
        for (int k = 0; k < n; k++)
            dims[k] = k == axis[i] ? grid[k] : 1;
        c->out[i] = dec_expand(c, dec_reshape(c, xs[i], dims, n), grid, n);
    }
    return true;
}

/* as_strided(self, size, stride, storage_offset): element p of the result is
 * element offset + sum(p_k * stride_k) of self's storage. That is self in row-major
 * order when torch recorded self as dense; a self recorded as a strided view (a
 * transpose, a slice with an offset) is refused, its storage being unknown here.
 * One GATHER through a constant map. */
bool aten_as_strided(DecCtx *c)
{
    ValId x;
    int64_t size[IR_MAX_RANK], stride[IR_MAX_RANK];
    if (!aten_need(c, "self", &x))
        return false;
    if (aten_in_strided(c, "self")) {
        dec_err(c, "unsupported: as_strided of a tensor recorded as a strided view (not "
                "contiguous, or with a storage offset)");
        return false;
    }
    int r = aten_ints(c, "size", size, IR_MAX_RANK, 0);
    int rs = aten_ints(c, "stride", stride, IR_MAX_RANK, 0);
    int64_t off = dec_ai(c, "storage_offset", 0), n = 1, have = dec_numel(dec_ty(c, x));
    if (r == -2 || rs == -2)
        return false;
    if (r < 0 || rs != r) {
        dec_err(c, "as_strided needs size and stride lists of one length");
        return false;
    }
    int64_t last = off;
    for (int i = 0; i < r; i++) {
        if (size[i] < 0 || stride[i] < 0) {
            dec_err(c, "as_strided: negative size or stride");
            return false;
        }
        if (size[i] > 0 && n > ATEN_MAX_CONST / size[i]) {
            dec_err(c, "as_strided: more than %lld elements", (long long)ATEN_MAX_CONST);
            return false;
        }
        n *= size[i];
        last += size[i] ? (size[i] - 1) * stride[i] : 0;
    }
    if (n > 0 && (off < 0 || last >= have)) {
        dec_err(c, "as_strided reads element %lld of a tensor of %lld", (long long)last,
                (long long)have);
        return false;
    }
    int64_t *map = ir_scratch(c->g, sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t p = 0; p < n; p++) {
        int64_t rem = p, e = off;
        for (int i = r - 1; i >= 0; i--) {
            e += (rem % size[i]) * stride[i];
            rem /= size[i];
        }
        map[p] = e;
    }
    ValId flat = dec_reshape(c, x, &have, 1);
    c->out[0] = dec_gather(c, flat, dec_const_i64(c->g, size, r, map), 0);
    return true;
}
