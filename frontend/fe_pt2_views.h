/* fe_pt2_views.h: in-place writes through slice/select/alias views (fe_pt2_views.c). */
#ifndef SPYREC_FE_PT2_VIEWS_H
#define SPYREC_FE_PT2_VIEWS_H

#include "frontend/fe_pt2_graph.h"

/* Remember that `out`, made by node id (op f), is a view of the tensor named `base`
 * (nothing if f is no tracked view op). */
void fe_pt2_view_note(FePt2Scope *s, const IrForeign *f, const char *base, const char *out,
                      NodeId id);
/* An in-place op wrote v into the tensor named `name`: if that is a view, write v back
 * into its base (and the base's base...), rebinding their names. False after an error. */
bool fe_pt2_view_writeback(FePt2Build *b, FePt2Scope *s, const char *name, ValId v,
                           const IrOrigin *o);

#endif
