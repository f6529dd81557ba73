/* devtype.h: how IR dtypes live on the device (passes/devtype.c): device element
 * types, their sizes, and constants converted to device elements. Used by the
 * back-end passes and the code generator. */
#ifndef SPYREC_DEVTYPE_H
#define SPYREC_DEVTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

int pass_dev_dtype(IrDType t);                 /* ISA_DT_* for an IR dtype, 0 if none */
int pass_dev_esize(IrDType t);                 /* bytes of its device element, 0 if none */
bool pass_dtype_computable(IrDType t);         /* the vector unit computes on it */
const char *pass_dtype_long_name(IrDType t);   /* "float64", for messages */
/* Constants converted to device elements (float64 -> float32, int64/uint16/uint32/
 * uint64 -> int32); false with *val when outside int32. */
bool pass_dev_elem(IrDType t, const void *data, int64_t i, void *dst, int64_t *val);
bool pass_dev_narrows_int(IrDType t);          /* int64/uint32/uint64: range can be lost */

#endif
