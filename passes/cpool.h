/* cpool.h: the constant pool shared by the size buckets of one bundle (spyrec
 * --dim-buckets; sbin.md "Size buckets"). Every bucket is compiled on its own, and
 * pass_dram_plan places each constant the kernels read at the pool offset of an
 * identical constant placed before (same dtype, shape, layout and bytes), or appends it,
 * so that one CONSTS section serves every bucket and no weight is stored twice.
 */
#ifndef SPYREC_CPOOL_H
#define SPYREC_CPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

typedef struct PassConstPool PassConstPool;

/* An empty pool. own: copy the data of constants added from now on (their graph is
 * freed before the pool); without it the pool only points at the graph's data, which
 * must outlive it. NULL when out of memory. */
PassConstPool *pass_cpool_new(void);
void pass_cpool_set_own(PassConstPool *p, bool own);
void pass_cpool_free(PassConstPool *p);
/* The byte offset of constant v of g (layout lay, bytes aligned device bytes) in the pool:
 * that of an identical constant placed before, else the end of the pool, which grows
 * by bytes. Returns -1 when out of memory. */
int64_t pass_cpool_place(PassConstPool *p, IrGraph *g, ValId v, int lay, uint64_t bytes);
/* Bytes the pool holds (its end). */
uint64_t pass_cpool_end(const PassConstPool *p);

#endif
