/* convcost.h: DRAM bytes charged for a convolution's row chunks (convcost.c). */
#ifndef SPYREC_CONVCOST_H
#define SPYREC_CONVCOST_H

#include <stdint.h>

#include "plan/plan.h"
#include "target.h"

/* Bytes charged for the input rows an output-row chunk of rc of the ext output rows
 * reads ([cg channels, rows, width] of a dense NCHW-like input), averaged over the
 * chunks; es the element's bytes. */
double pass_conv_rows_bytes(const SpyTarget *t, const IrGeom *geo, int64_t es, int64_t rc,
                            int64_t ext);

/* Bytes charged for storing the output tile of one item of mt of the m output channels
 * by rc of the ext output rows of pix elements (eo bytes each), averaged over the
 * items. */
double pass_conv_out_bytes(const SpyTarget *t, int64_t eo, int64_t m, int64_t mt, int64_t rc,
                           int64_t ext, int64_t pix);

#endif
