/* fe_pt2_views.c: in-place ATen ops on views of another tensor.
 *
 * torch.export's default (training) IR is not functionalized: `mask[a:b, c:d] = k`
 * stays slice -> slice -> fill_, and the fill_ must change `mask`, not only the slice
 * (torchvision's Swin builds its shifted-window mask so). The frontend remembers which
 * names are slice/select/alias views of which base, and when an in-place op writes a
 * view it writes the result back into the base with slice_scatter / select_scatter,
 * view by view up to the first tensor that is no view, rebinding every base name.
 * Views taken of the base before the write keep their old values (torch would see the
 * write through them); no exporter we know reads such a stale view.
 */
#include <string.h>

#include "frontend/fe_pt2_views.h"

/* The view ops tracked and the scatter that writes each back (NULL: the whole base). */
static const struct {
    const char *view, *scatter;
} VIEW_OPS[] = {
    {"aten.slice.Tensor", "aten.slice_scatter.default"},
    {"aten.select.int", "aten.select_scatter.default"},
    {"aten.alias.default", NULL},
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

/* base with the view that node `vn` took of it replaced by src. */
static ValId scatter_back(FePt2Build *b, ValId base, ValId src, NodeId vn, const IrOrigin *o)
{
    const IrNode *view = ir_node(b->g, vn);
    int k = view_kind(view->foreign.op_type);
    if (!VIEW_OPS[k].scatter)
        return src;
    IrAttr at[8];
    int na = 0;
    static const char *const in_names[] = {"self", "src"};
    memset(&at[0], 0, sizeof at[0]);
    at[0].name = FE_PT2_IN_NAMES, at[0].kind = IR_ATTR_STRINGS, at[0].tensor = IR_NONE;
    at[0].strings = in_names, at[0].n = 2;
    na++;
    for (uint32_t i = 0; i < view->nattrs && na < 8; i++)
        if (view->attrs[i].kind == IR_ATTR_INT)
            at[na++] = view->attrs[i];
    IrForeign f = view->foreign;
    f.op_type = VIEW_OPS[k].scatter;
    ValId in[2] = {base, src};
    NodeId id = ir_add_foreign(b->g, &f, in, 2, 1, at, na, o);
    ValId v = ir_node(b->g, id)->out[0];
    ir_val(b->g, v)->type = ir_val(b->g, base)->type;
    return v;
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
        v = scatter_back(b, bv, v, vn, o);
        fe_pt2_bind(s, base, v);
        name = base;
    }
    return true;
}
