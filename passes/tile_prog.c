/* tile_prog.c: tile programs (IrTileProg): the pointwise part of a kernel on one 2-d
 * tile (rows x cols) of its iteration space, and their LX buffers.
 *
 * Each value gets a shape class (plan.h): a value that does not vary along the tile
 * columns (e.g. a per-channel bias when rows are channels) is kept as one element per
 * row and read with column stride 0, and so on; loads of such values move only the
 * distinct elements. Scalar constants become VEC immediates where the instruction
 * takes one, otherwise a one-element buffer filled once per program. A step's result
 * takes over the buffer of an operand that dies at that step (same class, element no
 * wider), so long chains need few buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "isa.h"
#include "tile.h"

/* Identity map over shape t. */
void tile_map_identity(TileMap *m, const IrType *t)
{
    memset(m, 0, sizeof *m);
    m->nd = t->rank;
    m->rrank = t->rank;
    for (int j = 0; j < t->rank; j++) {
        m->rdims[j] = t->dims[j];
        m->coef[j][j] = 1;
    }
}

/* Access of v over map m: its value at iteration point i is root element
 * base + sum is[d]*i[d]. Dims of v of size 1 (broadcast) get stride 0. */
void tile_access(IrGraph *g, const TileMap *m, ValId v, bool logical, IrAccess *a)
{
    const IrType *t = ir_vtype(g, v);
    IrView lv;
    const IrView *vw = &g->plan->val[v].view;
    if (logical) {
        memset(&lv, 0, sizeof lv);
        lv.root = v;
        plan_dense_strides(t, lv.stride);
        vw = &lv;
    }
    memset(a, 0, sizeof *a);
    a->root = vw->root;
    a->base = vw->off;
    IR_ASSERT(t->rank <= m->rrank);
    for (int j = 0; j < m->rrank; j++) {
        int jj = j - (m->rrank - t->rank);
        if (jj < 0 || t->dims[jj] == 1)
            continue;
        IR_ASSERT(t->dims[jj] == m->rdims[j]);
        for (int d = 0; d < m->nd; d++)
            a->is[d] += vw->stride[jj] * m->coef[j][d];
    }
}

/* Class of an access: varies along some wide row dim (ROW), some wide column dim (COL). */
static uint8_t access_class(const TileSpec *sp, const IrAccess *a)
{
    uint8_t c = 0;
    for (int i = 0; i < sp->map->nd; i++) {
        int d = sp->order[i];
        if (sp->cap[d] > 1 && a->is[d] != 0)
            c |= i < sp->nrow ? IR_TC_ROW : IR_TC_COL;
    }
    return c;
}

/* Bits of scalar constant v as a device immediate (I64 narrowed to I32, small ints
 * sign- or zero-extended). False (reported against node n) when out of int32 range. */
static bool const_bits(IrGraph *g, ValId v, const IrNode *n, uint32_t *bits)
{
    const IrValue *val = ir_val(g, v);
    const void *p = val->data;
    int64_t x;
    switch (val->type.dtype) {
    case IR_DT_F32: memcpy(bits, p, 4); return true;
    case IR_DT_I32: memcpy(bits, p, 4); return true;
    case IR_DT_I16: *bits = (uint32_t)(int32_t)*(const int16_t *)p; return true;
    case IR_DT_I8: *bits = (uint32_t)(int32_t)*(const int8_t *)p; return true;
    case IR_DT_U8: case IR_DT_BOOL: case IR_DT_U4: case IR_DT_U2: case IR_DT_F8E4M3FN:
    case IR_DT_F8E4M3FNUZ: case IR_DT_F8E5M2: case IR_DT_F8E5M2FNUZ: case IR_DT_F4E2M1:
    case IR_DT_F8E8M0:
        *bits = *(const uint8_t *)p;
        return true;
    case IR_DT_I4: case IR_DT_I2: *bits = (uint32_t)(int32_t)*(const int8_t *)p; return true;
    case IR_DT_F16: case IR_DT_BF16: case IR_DT_DLF16: *bits = *(const uint16_t *)p; return true;
    case IR_DT_F64: case IR_DT_U16: return pass_dev_elem(val->type.dtype, p, 0, bits, &x);
    case IR_DT_I64: case IR_DT_U32: case IR_DT_U64:
        if (!pass_dev_elem(val->type.dtype, p, 0, bits, &x)) {
            ir_error(g, &n->origin, "constant %lld does not fit the device's int32 (%s is "
                     "computed as int32 on the device)", (long long)x,
                     pass_dtype_long_name(val->type.dtype));
            return false;
        }
        return true;
    default:
        IR_ASSERT(!"constant of a dtype the layout pass refuses");
    }
    return false;
}

/* Append a value entry of the given source; returns its index. */
static int add_val(IrGraph *g, IrTileProg *tp, ValId v, uint8_t src)
{
    IrTileVal *tv = &tp->vals[tp->nvals];
    memset(tv, 0, sizeof *tv);
    tv->v = v;
    tv->src = src;
    tv->dtype = (uint8_t)pass_dev_dtype(ir_vtype(g, v)->dtype);
    tv->esize = (uint8_t)pass_dev_esize(ir_vtype(g, v)->dtype);
    tv->lx = UINT32_MAX;
    tv->last = -1;
    plan_tp_index_add(tp, tp->nvals);
    return (int)tp->nvals++;
}

/* Collect the program's values with their sources, classes and last uses. */
static bool collect_vals(IrGraph *g, const TileSpec *sp, IrTileProg *tp)
{
    ValId seeds[3] = {sp->seed, sp->xseed[0], sp->xseed[1]};
    uint32_t lx[3] = {sp->seed_lx, sp->xseed_lx[0], sp->xseed_lx[1]};
    for (int s = 0; s < 3; s++) {
        if (seeds[s] == IR_NONE)
            continue;
        int i = add_val(g, tp, seeds[s], IR_TV_SEED);
        IrAccess a;
        tile_access(g, sp->map, seeds[s], true, &a);
        tp->vals[i].cls = access_class(sp, &a);
        tp->vals[i].lx = lx[s];
    }
    for (uint32_t s = 0; s < sp->nsteps; s++) {
        const IrNode *n = ir_node(g, sp->steps[s]);
        uint8_t cls = 0;
        for (int k = 0; k < n->nin; k++) {
            ValId x = n->in[k];
            int i = plan_tp_find(tp, x);
            if (i < 0) {
                const IrValue *xv = ir_val(g, x);
                if (xv->kind == IR_VAL_CONST && plan_numel(&xv->type) == 1) {
                    i = add_val(g, tp, x, IR_TV_CONST);
                    if (!const_bits(g, x, n, &tp->vals[i].imm))
                        return false;
                } else {
                    i = add_val(g, tp, x, IR_TV_LOAD);
                    tile_access(g, sp->map, x, false, &tp->vals[i].acc);
                    tp->vals[i].cls = access_class(sp, &tp->vals[i].acc);
                }
            }
            IrTileVal *tv = &tp->vals[i];
            if (tv->src == IR_TV_CONST && !plan_imm_slot(g, n, k))
                tv->needs_buf = true;
            tv->last = (int32_t)s;
            cls |= tv->cls;
        }
        if (n->op == IR_OP_REDUCE)             /* reduces the columns: one per row */
            cls &= IR_TC_ROW;
        int o = add_val(g, tp, n->out[0], IR_TV_NODE);
        tp->vals[o].cls = n->out[0] == sp->result && sp->force_full ? IR_TC_FULL : cls;
    }
    int r = plan_tp_find(tp, sp->result);
    if (r < 0) {                           /* no step made it: load it */
        r = add_val(g, tp, sp->result, IR_TV_LOAD);
        tile_access(g, sp->map, sp->result, false, &tp->vals[r].acc);
        tp->vals[r].cls = sp->force_full ? IR_TC_FULL : access_class(sp, &tp->vals[r].acc);
    }
    tp->result = r;
    tp->vals[r].last = (int32_t)sp->nsteps;
    return true;
}

/* Bytes of a buffer of class cls for elements of esize bytes. */
static uint64_t class_bytes(const TileSpec *sp, uint8_t cls, unsigned esize)
{
    uint64_t rows = 1, cols = 1;
    for (int i = 0; i < sp->map->nd; i++) {
        int64_t c = sp->cap[sp->order[i]];
        if (i < sp->nrow)
            rows *= (uint64_t)c;
        else
            cols *= (uint64_t)c;
    }
    uint64_t n = ((cls & IR_TC_ROW) ? rows : 1) * ((cls & IR_TC_COL) ? cols : 1);
    return tile_align(n * esize);
}

/* Assign LX buffers: constants and loads first, then step results (reusing a dying
 * operand's buffer when possible). Returns the end offset (saturated). */
static uint64_t assign_buffers(IrGraph *g, const TileSpec *sp, IrTileProg *tp, uint64_t cur)
{
    uint8_t *owns = ir_scratch(g, tp->nvals + 1);
    for (uint32_t i = 0; i < tp->nvals; i++) {
        IrTileVal *tv = &tp->vals[i];
        bool need = tv->src == IR_TV_LOAD || (tv->src == IR_TV_CONST && tv->needs_buf);
        if (tv->src == IR_TV_SEED)
            owns[i] = 1;
        if (!need)
            continue;
        uint64_t b = tv->src == IR_TV_CONST ? tile_align(tv->esize)
                                            : class_bytes(sp, tv->cls, tv->esize);
        tv->lx = cur > UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)cur;
        tv->bytes = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
        cur += b;
        owns[i] = tv->src == IR_TV_LOAD;
    }
    for (uint32_t s = 0; s < sp->nsteps; s++) {
        const IrNode *n = ir_node(g, sp->steps[s]);
        int o = plan_tp_find(tp, n->out[0]);
        IrTileVal *ov = &tp->vals[o];
        for (int k = 0; k < n->nin && ov->lx == UINT32_MAX; k++) {
            int i = plan_tp_find(tp, n->in[k]);
            IrTileVal *iv = &tp->vals[i];
            if (owns[i] && iv->last == (int32_t)s && iv->cls == ov->cls &&
                iv->esize >= ov->esize) {
                ov->lx = iv->lx;
                ov->bytes = iv->bytes;
                owns[i] = 0;
                owns[o] = 1;
            }
        }
        if (ov->lx == UINT32_MAX) {
            uint64_t b = class_bytes(sp, ov->cls, ov->esize);
            ov->lx = cur > UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)cur;
            ov->bytes = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
            cur += b;
            owns[o] = 1;
        }
    }
    return cur;
}

/* Build the tile program described by sp with buffers from lx_base. */
bool tile_prog_build(IrGraph *g, const TileSpec *sp, uint32_t lx_base, IrTileProg *tp)
{
    memset(tp, 0, sizeof *tp);
    tp->nd = sp->map->nd;
    tp->nrow = sp->nrow;
    memcpy(tp->order, sp->order, sizeof tp->order);
    memcpy(tp->cap, sp->cap, sizeof tp->cap);
    uint32_t cap = 4 * sp->nsteps + 5;
    tp->vals = ir_scratch(g, cap * sizeof *tp->vals);
    tp->index_mask = plan_tp_index_slots(cap) - 1;
    tp->index = ir_scratch(g, ((size_t)tp->index_mask + 1) * sizeof *tp->index);
    tp->steps = ir_scratch(g, (sp->nsteps + 1) * sizeof *tp->steps);
    memcpy(tp->steps, sp->steps, sp->nsteps * sizeof *tp->steps);
    tp->nsteps = sp->nsteps;
    if (!collect_vals(g, sp, tp))
        return false;
    uint64_t end = assign_buffers(g, sp, tp, lx_base);
    tp->lx_lo = lx_base;
    tp->lx_hi = end > UINT32_MAX ? UINT32_MAX : (uint32_t)end;
    tp->store = sp->store;
    if (sp->store)
        tile_access(g, sp->map, sp->result, false, &tp->out);
    else
        tp->out.root = IR_NONE;
    return true;
}

/* Drop a program that is not kept (its arrays return with the pass's scratch). */
void tile_prog_free(IrTileProg *tp)
{
    tp->vals = NULL;
    tp->index = NULL;
    tp->steps = NULL;
}

/* Keep a built program in the plan: its arrays move from scratch to the graph's arena
 * (the index rebuilt at the size of its values). */
void tile_prog_keep(IrGraph *g, IrTileProg *tp)
{
    if (!tp->vals)
        return;
    IrTileVal *vals = ir_alloc(g, (tp->nvals + 1) * sizeof *vals);
    NodeId *steps = ir_alloc(g, (tp->nsteps + 1) * sizeof *steps);
    memcpy(vals, tp->vals, tp->nvals * sizeof *vals);
    memcpy(steps, tp->steps, tp->nsteps * sizeof *steps);
    tp->vals = vals;
    tp->steps = steps;
    tp->index_mask = plan_tp_index_slots(tp->nvals) - 1;
    tp->index = ir_alloc(g, ((size_t)tp->index_mask + 1) * sizeof *tp->index);
    for (uint32_t i = 0; i < tp->nvals; i++)
        plan_tp_index_add(tp, i);
}
