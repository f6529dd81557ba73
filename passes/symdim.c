/* symdim.c: bounded symbolic input dimensions (spyrec --dim, --input-shape MIN..MAX).
 *
 * The frontend types such an input at its upper bound and lists the axis in the
 * graph's symbol table (IrSymDim, ir/ir_dyn.c). A bundle that serves every size within
 * the bounds needs the runtime side of schemas/sbin.md "Bounded dynamic dimensions",
 * which this version does not build yet: a graph with symbolic dimensions is refused
 * here, naming each dimension and the --input-shape value that fixes it, so that no
 * bundle computed at the bound is ever taken for one that accepts smaller sizes.
 */
#include <stdio.h>

#include "pass.h"

bool pass_symdim(IrGraph *g)
{
    for (uint32_t i = 0; i < g->nsymdims; i++) {
        const IrSymDim *d = &g->symdims[i];
        const IrValue *v = ir_val(g, d->input);
        ir_diag_error(g->diag, "unsupported: dynamic dimension '%s' (axis %d) of input '%s' "
                      "bounded to %lld..%lld: bundles that accept every size within bounds "
                      "are not built yet (fix the size with --input-shape)", d->name, d->axis,
                      v->name, (long long)d->min, (long long)d->max);
    }
    return g->nsymdims == 0;
}
