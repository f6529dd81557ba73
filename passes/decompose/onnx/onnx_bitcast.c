/* onnx_bitcast.c: BitCast (opset 26) as core ops.
 *
 * BitCast is the core BITCAST (a view) where the device keeps both types' bits in
 * elements of one width; bool, uint16 and the sub-byte integers go through integers of
 * the same width (modular arithmetic).
 */
#include <math.h>

#include "onnx.h"

/* Width in bits of dtype t as BitCast sees it (4 and 2 for the sub-byte types, which
 * the IR holds one per byte); 0 for strings and unknown types. */
static int bc_bits(IrDType t)
{
    switch (t) {
    case IR_DT_U4: case IR_DT_I4: case IR_DT_F4E2M1: return 4;
    case IR_DT_U2: case IR_DT_I2: return 2;
    default: return 8 * (int)ir_dtype_size(t);
    }
}

/* Whether the core BITCAST reinterprets t in place: whole-byte elements whose device
 * element keeps the IR bits (not bool, not sub-byte, not uint16 which the device holds
 * as int32). */
static bool bc_direct(IrDType t)
{
    return t != IR_DT_BOOL && t != IR_DT_U16 && bc_bits(t) >= 8;
}

/* Integer type that carries t's bits: t itself for integers, uint8 (0/1) for bool, the
 * signed integer of the same width for floats; UNDEF for float4. */
static IrDType bc_carrier(IrDType t)
{
    if (ir_dtype_is_int(t))
        return t;
    switch (bc_bits(t)) {
    case 8: return t == IR_DT_BOOL ? IR_DT_U8 : IR_DT_I8;
    case 16: return IR_DT_I16;
    case 32: return IR_DT_I32;
    case 64: return IR_DT_I64;
    default: return IR_DT_UNDEF;
    }
}

/* Core BITCAST of x to t. */
static ValId bc_op(DecCtx *c, ValId x, IrDType t)
{
    IrAttr a = ir_attr_int("to", t);
    return dec_op(c, IR_OP_BITCAST, &x, 1, &a, 1);
}

/* Integer x of type a reinterpreted as integer type b of the same width. Types the
 * core BITCAST cannot take (uint16, the sub-byte ones) use two's complement modular
 * arithmetic: signed -> unsigned adds 2^bits to negatives, and back. */
static ValId bc_int(DecCtx *c, ValId x, IrDType a, IrDType b)
{
    bool sa = a == IR_DT_I2 || a == IR_DT_I4 || a == IR_DT_I8 || a == IR_DT_I16 ||
              a == IR_DT_I32 || a == IR_DT_I64;
    bool sb = b == IR_DT_I2 || b == IR_DT_I4 || b == IR_DT_I8 || b == IR_DT_I16 ||
              b == IR_DT_I32 || b == IR_DT_I64;
    if (a == b)
        return x;
    if (bc_direct(a) && bc_direct(b))
        return bc_op(c, x, b);
    if (sa == sb)
        return dec_cast(c, x, b);
    double m = ldexp(1.0, bc_bits(a));
    ValId w = dec_cast(c, x, IR_DT_I64);
    ValId adj = sa ? dec_select(c, dec_bin_s(c, IR_BIN_LT, w, 0.0), dec_bin_s(c, IR_BIN_ADD, w, m), w)
                   : dec_select(c, dec_bin_s(c, IR_BIN_GE, w, m / 2), dec_bin_s(c, IR_BIN_SUB, w, m), w);
    return dec_cast(c, adj, b);
}

/* BitCast(x, to): same-width reinterpretation. Types whose bits the device keeps in
 * place are one core BITCAST (a view of x); the others go through integers of the
 * same width: bool as uint8 0/1, uint16 and sub-byte integers by modular arithmetic. */
bool dec_bitcast(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    IrDType from = dec_ty(c, x)->dtype, to = (IrDType)dec_ai(c, "to", 0);
    if (ir_dtype_size(to) == 0 || bc_bits(to) != bc_bits(from)) {
        dec_err(c, "BitCast from %s to dtype %d: the types must have the same bit width",
                ir_dtype_name(from), (int)to);
        return false;
    }
    if (from == to) {
        c->out[0] = x;
        return true;
    }
    if (bc_direct(from) && bc_direct(to)) {
        c->out[0] = bc_op(c, x, to);
        return true;
    }
    IrDType a = bc_carrier(from), b = bc_carrier(to);
    if (a == IR_DT_UNDEF || b == IR_DT_UNDEF) {
        dec_err(c, "unsupported: BitCast from %s to %s: 4-bit float codes cannot be "
                "reinterpreted", ir_dtype_name(from), ir_dtype_name(to));
        return false;
    }
    ValId v = from == a ? x : from == IR_DT_BOOL ? dec_cast(c, x, a) : bc_op(c, x, a);
    v = bc_int(c, v, a, b);
    c->out[0] = to == b ? v : to == IR_DT_BOOL ? dec_cast(c, v, to) : bc_op(c, v, to);
    return true;
}
