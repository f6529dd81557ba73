/* ir_eval_move.c: reference evaluation of the data-movement core ops: transpose, slice,
 * pad, concat, gather, expand, scatter, and the plain copy of reshape and bitcast. */
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

typedef IrEval Ev;
typedef IrBIter BIter;

static const IrType *ity(const Ev *e, int i) { return &e->g->vals[e->n->in[i]].type; }
static const IrType *oty(const Ev *e, int i) { return &e->g->vals[e->n->out[i]].type; }

/* Copy one element of es bytes. */
static void copy_elem(void *dst, size_t di, const void *src, size_t si, size_t es)
{
    memcpy((char *)dst + di * es, (const char *)src + si * es, es);
}

/* ---- data movement ---- */

/* Rows gathered together by gather_plane: enough that one 64-byte line of a transposed
 * source gives one element to each (16 floats). */
#define TILE_ROWS 16

/* One element of size T at element index i of dst from element index j of src. */
#define COPY_T(T, dst, i, src, j) \
    memcpy((char *)(dst) + sizeof(T) * (size_t)(i), (const char *)(src) + (int64_t)sizeof(T) * (j), sizeof(T))

/* A tile of bl rows of n elements into dst (contiguous, row after row) from src: element
 * (b, i) is src[b * s2 + i * s]. The loop over b is innermost, so that a source whose
 * rows are adjacent (s2 == 1, a transpose) is read a cache line at a time rather than
 * an element per line; common element sizes are copies of constant size. */
static void gather_tile(void *dst, const void *src, int64_t bl, int64_t n, int64_t s2,
                        int64_t s, size_t es)
{
#define TILE_LOOP(T)                                  \
    for (int64_t i = 0; i < n; i++)                   \
        for (int64_t b = 0; b < bl; b++)              \
            COPY_T(T, dst, b * n + i, src, b * s2 + i * s);
    switch (es) {
    case 1: TILE_LOOP(uint8_t) break;
    case 2: TILE_LOOP(uint16_t) break;
    case 4: TILE_LOOP(uint32_t) break;
    case 8: TILE_LOOP(uint64_t) break;
    default:
        for (int64_t i = 0; i < n; i++)
            for (int64_t b = 0; b < bl; b++)
                memcpy((char *)dst + es * (size_t)(b * n + i),
                       (const char *)src + (int64_t)es * (b * s2 + i * s), es);
    }
#undef TILE_LOOP
}

/* One m x n plane of the output (its last two axes) into dst from src: source strides
 * s2 along the plane's rows, s along them. Rows contiguous in the source are copied
 * whole. */
static void gather_plane(char *dst, const char *src, int64_t m, int64_t n, int64_t s2,
                         int64_t s, size_t es)
{
    for (int64_t r = 0; r < m; r += TILE_ROWS) {
        int64_t bl = m - r < TILE_ROWS ? m - r : TILE_ROWS;
        char *d = dst + es * (size_t)(r * n);
        const char *p = src + (int64_t)es * r * s2;
        if (s == 1)
            for (int64_t b = 0; b < bl; b++)
                memcpy(d + es * (size_t)(b * n), p + (int64_t)es * b * s2, es * (size_t)n);
        else
            gather_tile(d, p, bl, n, s2, s, es);
    }
}

/* Fill output o from src plane by plane (its last two axes; a lower rank is a plane of
 * 1 row or 1 element): it walks the outer axes, it.off[0] giving each plane's first
 * source element and it.st[0] the source strides of every output axis. */
static void gather_rows(void *out, const void *src, const IrType *o, BIter *it)
{
    int64_t ne = ir_type_numel(o);
    size_t es = ir_dtype_size(o->dtype);
    if (ne == 0)
        return;
    int r = o->rank;
    int64_t n = r >= 1 ? o->dims[r - 1] : 1, s = r >= 1 ? it->st[0][r - 1] : 0;
    int64_t m = r >= 2 ? o->dims[r - 2] : 1, s2 = r >= 2 ? it->st[0][r - 2] : 0;
    it->rank = r >= 2 ? r - 2 : 0;         /* the outer axes */
    for (int64_t q = 0; q < ne / (m * n); q++, ir_bi_next(it))
        gather_plane((char *)out + es * (size_t)(q * m * n),
                     (const char *)src + es * (size_t)it->off[0], m, n, s2, s, es);
}

/* TRANSPOSE: output element at idx is input element at idx permuted by perm. */
bool ir_eval_transpose(const Ev *e)
{
    const IrType *t = ity(e, 0), *o = oty(e, 0);
    const int64_t *perm;
    ir_attr_get_ints(e->n, "perm", &perm);
    int64_t st[IR_MAX_RANK];
    ir_strides_of(t, st);
    BIter it;
    memset(&it, 0, sizeof it);
    it.rank = o->rank;
    it.k = 1;
    memcpy(it.dims, o->dims, sizeof it.dims);
    for (int i = 0; i < o->rank; i++)
        it.st[0][i] = st[perm[i]];
    gather_rows(e->out[0], e->in[0], o, &it);
    return true;
}

/* SLICE: the elements starts + k*steps, k < sizes, per axis. */
bool ir_eval_slice(const Ev *e)
{
    const IrType *t = ity(e, 0), *o = oty(e, 0);
    const int64_t *starts, *steps;
    ir_attr_get_ints(e->n, "starts", &starts);
    ir_attr_get_ints(e->n, "steps", &steps);
    int64_t st[IR_MAX_RANK];
    ir_strides_of(t, st);
    BIter it;
    memset(&it, 0, sizeof it);
    it.rank = o->rank;
    it.k = 1;
    memcpy(it.dims, o->dims, sizeof it.dims);
    for (int i = 0; i < o->rank; i++) {
        it.st[0][i] = steps[i] * st[i];
        it.off[0] += starts[i] * st[i];
    }
    gather_rows(e->out[0], e->in[0], o, &it);
    return true;
}

/* PAD: input placed with lo/hi/interior padding of value (negative pads crop). */
bool ir_eval_pad(const Ev *e)
{
    static const int64_t zeros[IR_MAX_RANK] = {0};
    const IrType *t = ity(e, 0), *o = oty(e, 0);
    const int64_t *pads, *inter;
    ir_attr_get_ints(e->n, "pads", &pads);
    if (ir_attr_get_ints(e->n, "interior", &inter) < 0)
        inter = zeros;
    double value = ir_attr_get_float(e->n, "value", 0.0);
    int64_t st[IR_MAX_RANK], idx[IR_MAX_RANK] = {0}, ne = ir_type_numel(o);
    size_t es = ir_dtype_size(o->dtype);
    ir_strides_of(t, st);
    for (int64_t i = 0; i < ne; i++, ir_next_index(idx, o->dims, o->rank)) {
        int64_t src = 0;
        for (int j = 0; j < o->rank && src >= 0; j++) {
            int64_t p = idx[j] - pads[j], q = inter[j] + 1;
            if (p < 0 || p % q != 0 || p / q >= t->dims[j])
                src = -1;
            else
                src += p / q * st[j];
        }
        if (src >= 0)
            copy_elem(e->out[0], (size_t)i, e->in[0], (size_t)src, es);
        else
            ir_store_f(o->dtype, e->out[0], (size_t)i, value);
    }
    return true;
}

/* CONCAT: the inputs one after another along axis. */
bool ir_eval_concat(const Ev *e)
{
    const IrType *o = oty(e, 0);
    int axis = (int)ir_attr_get_int(e->n, "axis", 0);
    size_t es = ir_dtype_size(o->dtype);
    int64_t outer, d, inner;
    ir_split3(o, axis, &outer, &d, &inner);
    char *dst = e->out[0];
    for (int64_t k = 0; k < outer; k++) {
        for (int j = 0; j < e->n->nin; j++) {
            size_t chunk = (size_t)(ity(e, j)->dims[axis] * inner) * es;
            if (chunk)
                memcpy(dst, (const char *)e->in[j] + (size_t)k * chunk, chunk);
            dst += chunk;
        }
    }
    return true;
}

/* GATHER: rows of data along axis picked by indices (negative ones wrap). */
bool ir_eval_gather(const Ev *e)
{
    const IrType *t = ity(e, 0), *ti = ity(e, 1);
    int axis = (int)ir_attr_get_int(e->n, "axis", 0);
    size_t es = ir_dtype_size(t->dtype);
    int64_t outer, d, inner, ni = ir_type_numel(ti);
    ir_split3(t, axis, &outer, &d, &inner);
    size_t chunk = (size_t)inner * es;
    for (int64_t j = 0; j < ni; j++) {          /* validate every index first */
        int64_t k = ir_load_i(ti->dtype, e->in[1], (size_t)j);
        if (k < -d || k >= d)
            return false;
    }
    char *dst = e->out[0];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = ir_load_i(ti->dtype, e->in[1], (size_t)j);
            k = k < 0 ? k + d : k;
            if (chunk)
                memcpy(dst, (const char *)e->in[0] + (size_t)(o * d + k) * chunk, chunk);
            dst += chunk;
        }
    }
    return true;
}

/* EXPAND: the input broadcast to the output shape. */
bool ir_eval_expand(const Ev *e)
{
    const IrType *t[1] = {ity(e, 0)}, *o = oty(e, 0);
    size_t es = ir_dtype_size(o->dtype);
    int64_t ne = ir_type_numel(o);
    BIter it;
    ir_bi_init(&it, o, 1, t);
    for (int64_t i = 0; i < ne; i++, ir_bi_next(&it))
        copy_elem(e->out[0], (size_t)i, e->in[0], (size_t)it.off[0], es);
    return true;
}

/* SCATTER: rows of updates to the rows their indices name (out starts zeroed by
 * ir_eval_node's allocation); indices outside [0, size) drop their row. */
bool ir_eval_scatter(const Ev *e)
{
    const IrType *u = ity(e, 0), *ti = ity(e, 1), *o = oty(e, 0);
    size_t row = (size_t)u->dims[1] * ir_dtype_size(u->dtype);
    memset(e->out[0], 0, ir_type_bytes(o));
    for (int64_t j = 0; j < u->dims[0]; j++) {
        int64_t k = ir_load_i(ti->dtype, e->in[1], (size_t)j);
        if (k >= 0 && k < o->dims[0] && row)
            memcpy((char *)e->out[0] + (size_t)k * row, (const char *)e->in[0] + (size_t)j * row,
                   row);
    }
    return true;
}

/* RESHAPE and BITCAST: the input's bytes unchanged under the output's shape or dtype
 * (BITCAST: same element size, little-endian host as the ONNX definition requires). */
bool ir_eval_copy(const Ev *e)
{
    size_t b = ir_type_bytes(oty(e, 0));
    if (b)
        memcpy(e->out[0], e->in[0], b);
    return true;
}
