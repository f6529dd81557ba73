/* fe_pt2_views.c: in-place ATen ops on views of another tensor.
 *
 * torch.export's default (training) IR is not functionalized: `mask[a:b, c:d] = k`
 * stays slice -> slice -> fill_, and the fill_ must change `mask`, not only the slice
 * (torchvision's Swin builds its shifted-window mask so). The frontend remembers which
 * names are views (slice, select, narrow, alias, transpose, permute, view, unsqueeze,
 * squeeze) of which base, and when an in-place op writes a view it writes the result
 * back into the base (slice_scatter / select_scatter for parts, the inverse transpose,
 * permutation or view for whole views), view by view up to the first tensor that is no
 * view, rebinding every base name.
 * Views taken of the base before the write keep their old values (torch would see the
 * write through them); no exporter we know reads such a stale view.
 */
#include <string.h>

#include "frontend/fe_pt2_views.h"

/* How a view's mutated value goes back into its base. */
typedef enum {
    WB_SCATTER,                            /* slice/select: the base with the part replaced */
    WB_NARROW,                             /* narrow(dim, start, length): a slice_scatter */
    WB_SAME,                               /* alias: the value is the new base */
    WB_TRANSPOSE,                          /* transpose/t: transposed back */
    WB_PERMUTE,                            /* permute: the inverse permutation */
    WB_RESHAPE,                            /* view/unsqueeze/squeeze: viewed as the base */
} WbKind;

/* The view ops tracked (aten.reshape is not: it copies when its input is strided). */
static const struct {
    const char *view;
    WbKind kind;
    const char *op;                        /* the write-back's ATen op */
} VIEW_OPS[] = {
    {"aten.slice.Tensor", WB_SCATTER, "aten.slice_scatter.default"},
    {"aten.select.int", WB_SCATTER, "aten.select_scatter.default"},
    {"aten.narrow.default", WB_NARROW, "aten.slice_scatter.default"},
    {"aten.alias.default", WB_SAME, NULL},
    {"aten.transpose.int", WB_TRANSPOSE, "aten.transpose.int"},
    {"aten.t.default", WB_TRANSPOSE, "aten.transpose.int"},
    {"aten.permute.default", WB_PERMUTE, "aten.permute.default"},
    {"aten.view.default", WB_RESHAPE, "aten.view.default"},
    {"aten._unsafe_view.default", WB_RESHAPE, "aten.view.default"},
    {"aten.unsqueeze.default", WB_RESHAPE, "aten.view.default"},
    {"aten.squeeze.default", WB_RESHAPE, "aten.view.default"},
    {"aten.squeeze.dim", WB_RESHAPE, "aten.view.default"},
    {"aten.squeeze.dims", WB_RESHAPE, "aten.view.default"},
};

static int view_kind(const char *op_type)
{
    for (size_t i = 0; i < sizeof VIEW_OPS / sizeof VIEW_OPS[0]; i++)
        if (strcmp(op_type, VIEW_OPS[i].view) == 0)
            return (int)i;
    return -1;
}

void fe_pt2_view_note(FePt2Scope *s, const IrForeign *f, const char *base, const char *out,
                      NodeId id)
{
    if (!base || !out || !s->views || view_kind(f->op_type) < 0)
        return;
    json_t *rec = json_pack("[s,I]", base, (json_int_t)id);
    if (rec)
        json_object_set_new(s->views, out, rec);
}

/* The write-back node: ATen op `op` on inputs in[0..nin) (schema names `names`) with
 * attributes at[0..na); its result has the base's type. */
static ValId wb_node(FePt2Build *b, const IrNode *view, const char *op, ValId *in, int nin,
                     const char *const *names, IrAttr *at, int na, const IrType *type,
                     const IrOrigin *o)
{
    memset(&at[na], 0, sizeof at[na]);
    at[na].name = FE_PT2_IN_NAMES, at[na].kind = IR_ATTR_STRINGS, at[na].tensor = IR_NONE;
    at[na].strings = names, at[na].n = (uint32_t)nin;
    IrForeign f = view->foreign;
    f.op_type = op;
    NodeId id = ir_add_foreign(b->g, &f, in, nin, 1, at, na + 1, o);
    ValId v = ir_node(b->g, id)->out[0];
    ir_val(b->g, v)->type = *type;
    return v;
}

/* base with the view that node `vn` took of it replaced by src (the view's new value). */
static ValId write_back(FePt2Build *b, ValId base, ValId src, NodeId vn, const IrOrigin *o)
{
    static const char *const two[] = {"self", "src"}, *const one[] = {"self"};
    const IrNode *view = ir_node(b->g, vn);
    int k = view_kind(view->foreign.op_type);
    const IrType *bt = &ir_val(b->g, base)->type;
    IrAttr at[12];
    int na = 0, r = bt->rank;
    ValId in[2] = {base, src};
    switch (VIEW_OPS[k].kind) {
    case WB_SAME:
        return src;
    case WB_SCATTER:
        for (uint32_t i = 0; i < view->nattrs && na < 8; i++)
            if (view->attrs[i].kind == IR_ATTR_INT)
                at[na++] = view->attrs[i];
        return wb_node(b, view, VIEW_OPS[k].op, in, 2, two, at, na, bt, o);
    case WB_NARROW: {
        int64_t st = ir_attr_get_int(view, "start", 0), d = ir_attr_get_int(view, "dim", 0);
        int64_t ax = d < 0 ? d + r : d, n = ax >= 0 && ax < r ? bt->dims[ax] : 0;
        st = st < 0 ? st + n : st;
        at[na++] = ir_attr_int("dim", d);
        at[na++] = ir_attr_int("start", st);
        at[na++] = ir_attr_int("end", st + ir_attr_get_int(view, "length", 0));
        return wb_node(b, view, VIEW_OPS[k].op, in, 2, two, at, na, bt, o);
    }
    case WB_TRANSPOSE:
        at[na++] = ir_attr_int("dim0", ir_attr_get_int(view, "dim0", 0));
        at[na++] = ir_attr_int("dim1", ir_attr_get_int(view, "dim1", r > 1 ? 1 : 0));
        return wb_node(b, view, VIEW_OPS[k].op, &in[1], 1, one, at, na, bt, o);
    case WB_PERMUTE: {
        const int64_t *p = NULL;
        int64_t inv[IR_MAX_RANK];
        if (ir_attr_get_ints(view, "dims", &p) != r || r > IR_MAX_RANK)
            break;
        for (int i = 0; i < r; i++) {
            int64_t d = p[i] < 0 ? p[i] + r : p[i];
            if (d < 0 || d >= r)
                return IR_NONE;
            inv[d] = i;
        }
        at[na++] = ir_attr_ints(b->g, "dims", inv, r);
        return wb_node(b, view, VIEW_OPS[k].op, &in[1], 1, one, at, na, bt, o);
    }
    case WB_RESHAPE:
        at[na++] = ir_attr_ints(b->g, "size", bt->dims, r);
        return wb_node(b, view, VIEW_OPS[k].op, &in[1], 1, one, at, na, bt, o);
    }
    return IR_NONE;
}

bool fe_pt2_view_writeback(FePt2Build *b, FePt2Scope *s, const char *name, ValId v,
                           const IrOrigin *o)
{
    json_t *rec;
    for (int depth = 0; s->views && (rec = json_object_get(s->views, name)); depth++) {
        const char *base = json_string_value(json_array_get(rec, 0));
        NodeId vn = (NodeId)json_integer_value(json_array_get(rec, 1));
        if (!base || depth > 64) {
            ir_error(b->g, o, "in-place write through views nested too deeply");
            return false;
        }
        ValId bv = fe_pt2_lookup(b, s, base, o);
        if (bv == IR_NONE)
            return false;
        v = write_back(b, bv, v, vn, o);
        if (v == IR_NONE) {
            ir_error(b->g, o, "in-place write through a view (%s) that cannot be written back",
                     ir_node(b->g, vn)->foreign.op_type);
            return false;
        }
        fe_pt2_bind(s, base, v);
        name = base;
    }
    return true;
}
