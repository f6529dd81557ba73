/* plan.c: the kernel plan (plan.h): its creation, storage sizes, work grids and the
 * assignment of work items to cores.
 */
#include <string.h>

#include "plan.h"

Plan *plan_new(IrGraph *g)
{
    Plan *p = ir_alloc(g, sizeof *p);
    p->nvals = g->nvals;
    p->nnodes = g->nnodes;
    p->val = ir_alloc(g, (g->nvals + 1) * sizeof *p->val);
    p->node = ir_alloc(g, (g->nnodes + 1) * sizeof *p->node);
    for (ValId v = 0; v < g->nvals; v++) {
        PlanValue *pv = &p->val[v];
        pv->view.root = v;
        plan_dense_strides(ir_vtype(g, v), pv->view.stride);
        pv->claim = -1;
        pv->seg = UINT32_MAX;
        pv->dram_offset = -1;
    }
    for (NodeId n = 0; n < g->nnodes; n++) {
        p->node[n].kernel = IR_NONE;
        p->node[n].inplace = false;
    }
    g->plan = p;
    return p;
}

/* Extend p to the values added to g since it was made (constants a pass makes while it
 * fills the plan): dense views of their own, no segment yet. */
void plan_add_vals(IrGraph *g, Plan *p)
{
    if (g->nvals <= p->nvals)
        return;
    PlanValue *nv = ir_alloc(g, (g->nvals + 1) * sizeof *nv);
    memcpy(nv, p->val, p->nvals * sizeof *nv);
    for (ValId v = p->nvals; v < g->nvals; v++) {
        nv[v].view.root = v;
        plan_dense_strides(ir_vtype(g, v), nv[v].view.stride);
        nv[v].claim = -1;
        nv[v].seg = UINT32_MAX;
        nv[v].dram_offset = -1;
    }
    p->val = nv;
    p->nvals = g->nvals;
}

/* Element count of t (product of dims; rank 0 = 1). */
int64_t plan_numel(const IrType *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

/* Row-major element strides of t. */
void plan_dense_strides(const IrType *t, int64_t *stride)
{
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= t->dims[i] > 0 ? t->dims[i] : 1;
    }
}

/* Bytes the storage of root value v takes on the device in its layout. */
uint64_t plan_storage_bytes(IrGraph *g, ValId v, const SpyTarget *t)
{
    const IrValue *val = ir_val(g, v);
    uint64_t es = (uint64_t)pass_dev_esize(val->type.dtype);
    int64_t n = plan_numel(&val->type);
    if (g->plan->val[v].layout == IR_LAYOUT_STICKED && val->type.rank >= 1 && n > 0) {
        int r = val->type.rank;
        uint64_t se = t->stick_bytes / es, last = (uint64_t)val->type.dims[r - 1];
        uint64_t padded = (last + se - 1) / se * se;
        return (uint64_t)(n / val->type.dims[r - 1]) * padded * es;
    }
    return (uint64_t)n * es;
}

/* Number of work items of a grid (0 when any extent is 0). */
int64_t plan_grid_items(const IrGrid *gr)
{
    int64_t n = 1;
    for (int d = 0; d < gr->rank; d++) {
        IR_ASSERT(gr->chunk[d] >= 1);
        n *= (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
    }
    return n;
}

/* Decode item number `item` into its box (start, len per dim). */
void plan_grid_item(const IrGrid *gr, uint64_t item, int64_t *start, int64_t *len)
{
    for (int d = gr->rank - 1; d >= 0; d--) {
        int64_t nc = (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
        int64_t c = (int64_t)(item % (uint64_t)nc);
        item /= (uint64_t)nc;
        start[d] = c * gr->chunk[d];
        len[d] = gr->ext[d] - start[d] < gr->chunk[d] ? gr->ext[d] - start[d] : gr->chunk[d];
    }
}

/* Last dim whose chunk is smaller than its extent; -1 if every chunk is whole. */
int plan_grid_split(const IrGrid *gr)
{
    for (int d = gr->rank - 1; d >= 0; d--)
        if (gr->chunk[d] < gr->ext[d])
            return d;
    return -1;
}

/* Give each core a balanced range of the positions of the kernel's work items (cores
 * 0, 1, ... first when there are fewer items than cores). A position is its item
 * (contiguous items per core) unless the graph has symbolic dims: then the items are
 * dealt round-robin (IrKernel.dealt), so that the items valid at a small size (the
 * first ones along a symbolic grid dim: grids are row-major and a symbolic axis keeps
 * its data at its start) fall to every core and a guarded run's work shrinks on each;
 * where several split grid dims may be shortened, plan_deal chooses the cores so that
 * a box of valid items spreads too. */
void plan_assign_cores(IrGraph *g, IrKernel *k, uint32_t cores)
{
    k->nitems = (uint64_t)plan_grid_items(&k->grid);
    if (!k->core_first || k->ncores != cores)
        k->core_first = ir_alloc(g, (cores + 1) * sizeof *k->core_first);
    k->ncores = cores;
    k->dealt = false;
    k->deal = NULL;
    k->item_core = NULL;
    if (k->kind == IR_KK_MOVE && ir_node(g, k->anchor)->op == IR_OP_SCATTER) {
        for (uint32_t c = 0; c <= cores; c++)   /* one core: it zero-fills, then scatters */
            k->core_first[c] = c ? k->nitems : 0;
        return;
    }
    k->dealt = g->nsymdims > 0 && k->nitems > cores;
    uint64_t q = k->nitems / cores, r = k->nitems % cores;
    for (uint32_t c = 0; c <= cores; c++)               /* the first r cores get q + 1 */
        k->core_first[c] = c * q + (c < r ? c : r);
    if (k->dealt)
        plan_deal(g, k);
}

uint64_t plan_kernel_item(const IrKernel *k, uint64_t pos, int64_t *start, int64_t *len)
{
    uint64_t item = pos;
    if (k->deal) {
        item = k->deal[pos];
    } else if (k->dealt) {                  /* core c's j-th position: item j * ncores + c */
        uint64_t q = k->nitems / k->ncores, r = k->nitems % k->ncores, c, j;
        if (pos < r * (q + 1)) {
            c = pos / (q + 1);
            j = pos % (q + 1);
        } else {
            c = r + (pos - r * (q + 1)) / q;
            j = (pos - r * (q + 1)) % q;
        }
        item = j * k->ncores + c;
    }
    plan_grid_item(&k->grid, item, start, len);
    return item;
}

uint32_t plan_item_core(const IrKernel *k, uint64_t item)
{
    if (k->item_core)
        return k->item_core[item];
    if (k->dealt)
        return (uint32_t)(item % k->ncores);
    uint32_t c = 0;
    while (c + 1 < k->ncores && k->core_first[c + 1] <= item)
        c++;
    return c;
}

/* Whether input slot `slot` of node n can be the VEC immediate (see plan.h). */
bool plan_imm_slot(IrGraph *g, const IrNode *n, int slot)
{
    if (n->op != IR_OP_BINARY)
        return false;
    if (slot == 1)
        return true;
    ValId b = n->in[1];
    return !(ir_is_const(g, b) && plan_numel(ir_vtype(g, b)) == 1);
}

/* Name of a kernel kind for reports. */
const char *plan_kernel_kind_name(IrKernelKind k)
{
    static const char *const names[] = {"elem", "contract", "reduce", "move", "copy"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* Slots of the index of a tile program of at most n values: twice n, rounded up to a
 * power of two, so probes stay short. */
uint32_t plan_tp_index_slots(uint32_t n)
{
    uint32_t s = 16;
    while (s < 2 * (uint64_t)n)
        s *= 2;
    return s;
}

/* First slot to probe for value v. */
static uint32_t tp_hash(const IrTileProg *tp, ValId v)
{
    return (uint32_t)(v * 2654435761u) & tp->index_mask;
}

/* Enter tp->vals[i] into tp's index (linear probing). */
void plan_tp_index_add(IrTileProg *tp, uint32_t i)
{
    uint32_t h = tp_hash(tp, tp->vals[i].v);
    while (tp->index[h])
        h = (h + 1) & tp->index_mask;
    tp->index[h] = i + 1;
}

/* Position of value v in tp->vals, -1 if absent. */
int plan_tp_find(const IrTileProg *tp, ValId v)
{
    if (!tp->index)
        return -1;
    for (uint32_t h = tp_hash(tp, v); tp->index[h]; h = (h + 1) & tp->index_mask)
        if (tp->vals[tp->index[h] - 1].v == v)
            return (int)tp->index[h] - 1;
    return -1;
}
