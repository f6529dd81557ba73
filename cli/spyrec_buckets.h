/* spyrec_buckets.h: size buckets for bounded dynamic dimensions (--dim-buckets; sbin.md
 * "Size buckets"): the bundle carries, besides the code for the bounds, the code for
 * smaller boxes of the symbolic dimensions, and the runtime runs the smallest that
 * holds the actual sizes.
 */
#ifndef SPYREC_BUCKETS_H
#define SPYREC_BUCKETS_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/spyrec_args.h"
#include "ir.h"
#include "passes/cpool.h"
#include "target.h"

#define CLI_MAX_BUCKETS 256

/* What the buckets add to the bound bundle (CgOptions's const_extra and variants). */
typedef struct {
    uint8_t *variants;             /* the VARIANTS section, NULL when no bucket */
    size_t variants_len;
    uint8_t *extra;                /* constants the buckets added to the pool */
    size_t extra_len;
    uint64_t extra_off;            /* where they start in the pool */
    int n;                         /* buckets in the section */
} CliBuckets;

/* The boxes of the size buckets (the bounds' own box excluded; spyrec_bucketgrid.c):
 * symbols with the same min and max form a class that takes one value per box; a
 * class's values are min, max and the numbers between with at most three significant
 * bits (thinned, the class with the most values first, while the grid has more than
 * 1024 points); from the bounds' box, the box of that grid that lowers the expected
 * waste (box volume over size volume, sizes log-uniform per class) the most is added
 * until limit boxes or none lowers it. Boxes (nsyms caps each) go to boxes[], ordered
 * by their product, then lexicographically; returns how many (at most cap). */
int cli_bucket_grid(const int64_t *min, const int64_t *max, int nsyms, int limit,
                    int64_t *boxes, int cap);

/* Compile every bucket of bound (already through the pipeline with the pool pool) into
 * out. A bucket that does not compile is left out with a warning. oom: the driver's
 * out-of-memory jump. Returns false when out of memory. */
bool cli_buckets_build(const Args *a, const SpyTarget *t, IrGraph *bound, PassConstPool *pool,
                       const char *meta, jmp_buf *oom, CliBuckets *out);
void cli_buckets_free(CliBuckets *b);

#endif
