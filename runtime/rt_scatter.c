/* rt_scatter.c: ISA_SCATTER, the indexed store of LX rows into a DRAM table (the mirror
 * of ISA_GATHER). Rows whose index lies outside [0, bound) are skipped, which is how a
 * compaction drops the rows it does not keep. The instruction was verified at load:
 * every table row 0..bound-1, the index vector and the source rows lie in range.
 */
#include <string.h>

#include "rt_exec.h"

/* Executes a verified SCATTER; later rows win when two indices are equal. */
void rt_scatter(RtCore *c, const SpyScatter *s) {
    uint8_t *tab = c->seg[s->seg] + s->dram_off;
    const uint8_t *idx = c->lx + s->lx_idx;
    const uint8_t *src = c->lx + s->lx_src;
    size_t row_bytes = (size_t)s->row_elems * s->esize;
    int64_t ss = (int64_t)s->src_row_stride * s->esize;
    for (uint32_t j = 0; j < s->nidx; j++) {
        int32_t i;
        memcpy(&i, idx + 4 * (size_t)j, 4);
        if (i < 0 || (uint32_t)i >= s->bound)
            continue;
        int64_t off = (int64_t)i * s->row_stride; /* verified in range for i < bound */
        memmove(tab + off * s->esize, src + j * ss, row_bytes);
    }
}
