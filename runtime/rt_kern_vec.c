/* rt_kern_vec.c: the ISA_VEC and ISA_VFILL tile kernels.
 *
 * A VEC runs row by row in chunks of RT_CH columns: each operand is converted into a
 * local buffer of its compute domain (float for F32, DLF16 and the storage floats F16,
 * BF16, float8, float4; int32 for the integer, 4-/2-bit integer and BOOL types), the
 * function runs over the buffers with the switch outside the loop and fixed-width
 * inner loops the compiler vectorises, and the result is converted into the
 * destination (storage types only as CAST operands: see isa.md). Rows that are contiguous for every operand are merged first.
 * Buffers are padded to a multiple of 16 so the loops need no scalar tail.
 * An F32 VEC of one element (rt_vec_one) goes straight to the same function kernels,
 * without the operand table and chunk loop: a normalisation computes several.
 */
#include <math.h>
#include <string.h>

#include "dtconv.h"
#include "rt_copy.h"
#include "rt_dlf16.h"
#include "rt_exec.h"
#include "rt_model.h"
#include "rt_vlanes.h"
#include "rt_vmath.h"

#define RT_CH 256

#define FOR16(n16) for (int i0_ = 0; i0_ < (n16); i0_ += 16) for (int i = i0_; i < i0_ + 16; i++)
#define FORN(n) for (int i = 0; i < (n); i++)

typedef struct {
    const uint8_t *p;        /* LX address of element (0, 0); NULL for the immediate */
    int64_t rs, cs;          /* row / column strides in bytes */
    int dt;                  /* dtype */
    float fimm;              /* immediate in the float domain */
    int32_t iimm;            /* immediate in the integer domain */
} Opnd;

/* Decodes immediate bits in dtype dt into the integer domain. */
static int32_t imm_int(uint32_t bits, int dt) {
    switch (dt) {
    case ISA_DT_I16: return (int16_t)(bits & 0xffff);
    case ISA_DT_I8: return (int8_t)(bits & 0xff);
    case ISA_DT_U8: return (int32_t)(bits & 0xff);
    case ISA_DT_BOOL: return bits != 0;
    default: return (int32_t)bits;
    }
}


/* Loads n F16/BF16/DLF16/float8/float4 elements (exactly widened to float),
 * zero-padded to 16. */
static void load_half(float *buf, const Opnd *o, const uint8_t *p, int n) {
    const int64_t cs = o->cs;
    uint16_t h;
    if (o->dt == ISA_DT_DLF16) {
        if (cs == 2) {
            rt_dlf16_to_f32_n(buf, p, (size_t)n);
        } else if (cs == 0) {                /* broadcast: decoded once, stored in vectors */
            memcpy(&h, p, 2);
            float x = spy_dlf16_to_f32(h);
            v8f v = {x, x, x, x, x, x, x, x};
            for (int i = 0; i < n; i += 8)   /* buf holds n rounded up to 16 */
                memcpy(buf + i, &v, sizeof v);
        } else {                             /* strided: gathered, then decoded as a row */
            uint16_t g[256];
            for (int i0 = 0; i0 < n; i0 += 256) {
                int m = n - i0 < 256 ? n - i0 : 256;
                for (int i = 0; i < m; i++)
                    memcpy(&g[i], p + (int64_t)(i0 + i) * cs, 2);
                rt_dlf16_to_f32_n(buf + i0, g, (size_t)m);
            }
        }
    } else if (o->dt == ISA_DT_F16 && cs == 2) {
        rt_f16_to_f32_n(buf, p, (size_t)n);
    } else if (o->dt != ISA_DT_F16 && o->dt != ISA_DT_BF16) {
        for (int i = 0; i < n; i++)
            buf[i] = spy_narrow_to_f32(p[i * cs], o->dt);
    } else {
        for (int i = 0; i < n; i++) {
            memcpy(&h, p + i * cs, 2);
            buf[i] = o->dt == ISA_DT_F16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
        }
    }
    for (int i = n; i & 15; i++)
        buf[i] = 0;
}

/* Loads n F32 elements (byte column stride cs) into buf, padded to a multiple of 16.
 * A contiguous row is copied in whole vectors: it may read up to 15 elements past the
 * row, which the scratchpad's RT_LX_SLACK bytes keep inside the allocation; those
 * lanes are never stored. */
static inline void load_f(float *buf, const Opnd *o, const uint8_t *p, int n) {
    int n16 = (n + 15) & ~15;
    if (o->p && o->dt != ISA_DT_F32) {
        load_half(buf, o, p, n);
        return;
    }
    if (!o->p || o->cs == 0) {
        float x = o->p ? *(const rt_f32 *)p : o->fimm;
        v8f v = {x, x, x, x, x, x, x, x};
        for (int i = 0; i < n16; i += 8)
            memcpy(buf + i, &v, sizeof v);
        return;
    }
    if (o->cs == 4) {
        for (int i = 0; i < n16; i += 8) {
            v8f v;
            memcpy(&v, p + 4 * (size_t)i, sizeof v);
            memcpy(buf + i, &v, sizeof v);
        }
        return;
    }
    const int64_t cs = o->cs;
    FORN(n) buf[i] = *(const rt_f32 *)(p + i * cs);
    for (int i = n; i < n16; i++)
        buf[i] = 0;
}

/* Stores n floats from buf to p as dtype dt (F32, or F16/BF16/float8/float4 rounded
 * to nearest even, DLF16 to nearest with ties away from zero; float8 overflow
 * saturates when sat); exactly n: the destination is not padded. */
static inline void store_f(uint8_t *p, const float *buf, int n, int dt, bool sat) {
    if (dt == ISA_DT_DLF16) {
        rt_f32_to_dlf16_n(p, buf, (size_t)n);
        return;
    }
    if (spy_dt_narrow_float(dt)) {
        for (int i = 0; i < n; i++)
            p[i] = spy_f32_to_narrow(buf[i], dt, sat);
        return;
    }
    if (dt != ISA_DT_F32) {
        for (int i = 0; i < n; i++) {
            uint16_t h = dt == ISA_DT_F16 ? rt_f32_to_f16(buf[i]) : rt_f32_to_bf16(buf[i]);
            memcpy(p + 2 * (size_t)i, &h, 2);
        }
        return;
    }
    int i = 0;
    for (; i + 8 <= n; i += 8)
        memcpy(p + 4 * (size_t)i, buf + i, sizeof(v8f));
    for (; i < n; i++)
        memcpy(p + 4 * (size_t)i, buf + i, 4);
}

/* Loads n integer/BOOL elements into the int32 domain, zero-padded to 16. */
static void load_i(int32_t *buf, const Opnd *o, const uint8_t *p, int n) {
    const int64_t cs = o->cs;
    if (!o->p) {
        FORN(n) buf[i] = o->iimm;
    } else {
        switch (o->dt) {
        case ISA_DT_I32:
            if (cs == 4)
                memcpy(buf, p, (size_t)n * 4);
            else
                FORN(n) buf[i] = *(const rt_i32 *)(p + i * cs);
            break;
        case ISA_DT_I16: FORN(n) buf[i] = *(const rt_i16 *)(p + i * cs); break;
        case ISA_DT_I8: case ISA_DT_I4: case ISA_DT_I2: FORN(n) buf[i] = (int8_t)p[i * cs]; break;
        case ISA_DT_U8: case ISA_DT_U4: case ISA_DT_U2: FORN(n) buf[i] = p[i * cs]; break;
        default: FORN(n) buf[i] = p[i * cs] != 0; break;
        }
    }
    for (int i = n; i & 15; i++)
        buf[i] = 0;
}

/* Stores n int32-domain results into dtype dt (integers wrap, BOOL is x != 0). */
static void store_i(uint8_t *p, const int32_t *buf, int n, int dt) {
    switch (dt) {
    case ISA_DT_I32: memcpy(p, buf, (size_t)n * 4); break;
    case ISA_DT_I16: FORN(n) ((rt_i16 *)p)[i] = (int16_t)buf[i]; break;
    case ISA_DT_I8:
    case ISA_DT_U8: FORN(n) p[i] = (uint8_t)buf[i]; break;
    case ISA_DT_U4: case ISA_DT_I4: case ISA_DT_U2: case ISA_DT_I2:
        FORN(n) p[i] = (uint8_t)spy_wrap_subbyte(buf[i], dt);
        break;
    default: FORN(n) p[i] = buf[i] != 0; break;
    }
}

/* Float-domain unary functions. */
RT_HOT static void f_unary(int fn, float *restrict r, const rt_f32 *restrict a, int n, int n16) {
    switch (fn) {
    case ISA_VF_NEG: FOR16(n16) r[i] = -a[i]; break;
    case ISA_VF_ABS: FOR16(n16) r[i] = fabsf(a[i]); break;
    case ISA_VF_EXP: FOR16(n16) r[i] = rt_vm_exp(a[i]); break;
    case ISA_VF_LOG: FORN(n) r[i] = logf(a[i]); break;
    case ISA_VF_SQRT: FORN(n) r[i] = sqrtf(a[i]); break;
    case ISA_VF_RSQRT: FORN(n) r[i] = 1.0f / sqrtf(a[i]); break;
    case ISA_VF_RECIP: FOR16(n16) r[i] = 1.0f / a[i]; break;
    case ISA_VF_TANH: FOR16(n16) r[i] = rt_vm_tanh(a[i]); break;
    case ISA_VF_ERF: FOR16(n16) r[i] = rt_vm_erf(a[i]); break;
    case ISA_VF_SIGMOID: FOR16(n16) r[i] = rt_vm_sigmoid(a[i]); break;
    case ISA_VF_RELU: FOR16(n16) r[i] = a[i] < 0.0f ? 0.0f : a[i]; break;
    case ISA_VF_FLOOR: FORN(n) r[i] = floorf(a[i]); break;
    case ISA_VF_CEIL: FORN(n) r[i] = ceilf(a[i]); break;
    case ISA_VF_ROUND: FORN(n) r[i] = nearbyintf(a[i]); break;
    case ISA_VF_SIN: FORN(n) r[i] = sinf(a[i]); break;
    case ISA_VF_COS: FORN(n) r[i] = cosf(a[i]); break;
    case ISA_VF_TAN: FORN(n) r[i] = tanf(a[i]); break;
    case ISA_VF_ASIN: FORN(n) r[i] = asinf(a[i]); break;
    case ISA_VF_ACOS: FORN(n) r[i] = acosf(a[i]); break;
    case ISA_VF_ATAN: FORN(n) r[i] = atanf(a[i]); break;
    case ISA_VF_SINH: FORN(n) r[i] = sinhf(a[i]); break;
    case ISA_VF_COSH: FORN(n) r[i] = coshf(a[i]); break;
    case ISA_VF_ASINH: FORN(n) r[i] = asinhf(a[i]); break;
    case ISA_VF_ACOSH: FORN(n) r[i] = acoshf(a[i]); break;
    case ISA_VF_ATANH: FORN(n) r[i] = atanhf(a[i]); break;
    case ISA_VF_SIGN: FORN(n) r[i] = a[i] > 0.0f ? 1.0f : a[i] < 0.0f ? -1.0f : a[i]; break;
    case ISA_VF_SOFTPLUS:
        FORN(n) r[i] = (a[i] > 0.0f ? a[i] : 0.0f) + log1pf(expf(-fabsf(a[i])));
        break;
    default: FOR16(n16) r[i] = a[i]; break; /* CAST f32 -> f32 */
    }
}

/* Python-style float modulo: the result has the divisor's sign. */
static float fmod_py(float a, float b) {
    float m = fmodf(a, b);
    if (m != 0.0f && ((m < 0.0f) != (b < 0.0f)))
        m += b;
    return m;
}

/* Float-domain binary functions. */
RT_HOT static void f_binary(int fn, float *restrict r, const rt_f32 *restrict a,
                            const rt_f32 *restrict b, int n, int n16) {
    switch (fn) {
    case ISA_VF_ADD: FOR16(n16) r[i] = a[i] + b[i]; break;
    case ISA_VF_SUB: FOR16(n16) r[i] = a[i] - b[i]; break;
    case ISA_VF_MUL: FOR16(n16) r[i] = a[i] * b[i]; break;
    case ISA_VF_DIV: FOR16(n16) r[i] = a[i] / b[i]; break;
    case ISA_VF_POW: FORN(n) r[i] = powf(a[i], b[i]); break;
    case ISA_VF_MAX: FOR16(n16) r[i] = ((a[i] > b[i]) | (a[i] != a[i])) ? a[i] : b[i]; break;
    case ISA_VF_MIN: FOR16(n16) r[i] = ((a[i] < b[i]) | (a[i] != a[i])) ? a[i] : b[i]; break;
    case ISA_VF_FMOD: FORN(n) r[i] = fmodf(a[i], b[i]); break;
    case ISA_VF_MOD: FORN(n) r[i] = fmod_py(a[i], b[i]); break;
    default: FORN(n) r[i] = atan2f(a[i], b[i]); break; /* ATAN2 */
    }
}

/* Float comparisons and classifications into 0/1 int32. */
RT_HOT static void f_compare(int fn, int32_t *restrict r, const rt_f32 *restrict a,
                             const rt_f32 *restrict b, int n16) {
    switch (fn) {
    case ISA_VF_EQ: FOR16(n16) r[i] = a[i] == b[i]; break;
    case ISA_VF_NE: FOR16(n16) r[i] = a[i] != b[i]; break;
    case ISA_VF_LT: FOR16(n16) r[i] = a[i] < b[i]; break;
    case ISA_VF_LE: FOR16(n16) r[i] = a[i] <= b[i]; break;
    case ISA_VF_GT: FOR16(n16) r[i] = a[i] > b[i]; break;
    case ISA_VF_GE: FOR16(n16) r[i] = a[i] >= b[i]; break;
    case ISA_VF_ISNAN: FOR16(n16) r[i] = a[i] != a[i]; break;
    default: FOR16(n16) r[i] = fabsf(a[i]) == INFINITY; break; /* ISINF */
    }
}

/* Integer power with wrap-around; negative exponents give 0 except for |base| 1. */
static int32_t ipow(int32_t a, int32_t e) {
    if (e < 0)
        return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint32_t r = 1, b = (uint32_t)a;
    for (uint32_t k = (uint32_t)e; k; k >>= 1, b *= b)
        if (k & 1)
            r *= b;
    return (int32_t)r;
}

/* Integer-domain unary functions (bits = width of dt in bits, for NOT on BOOL). */
RT_HOT static void i_unary(int fn, int32_t *restrict r, const int32_t *restrict a, int n16,
                           int dt) {
    switch (fn) {
    case ISA_VF_NEG: FOR16(n16) r[i] = (int32_t)(0u - (uint32_t)a[i]); break;
    case ISA_VF_ABS: FOR16(n16) r[i] = a[i] < 0 ? (int32_t)(0u - (uint32_t)a[i]) : a[i]; break;
    case ISA_VF_SIGN: FOR16(n16) r[i] = (a[i] > 0) - (a[i] < 0); break;
    case ISA_VF_RELU: FOR16(n16) r[i] = a[i] < 0 ? 0 : a[i]; break;
    case ISA_VF_NOT:
        if (dt == ISA_DT_BOOL)
            FOR16(n16) r[i] = !a[i];
        else
            FOR16(n16) r[i] = ~a[i];
        break;
    default: FOR16(n16) r[i] = a[i]; break; /* CAST int -> int */
    }
}

/* Integer division-like functions; returns false on a zero divisor. */
static bool i_divide(int fn, int32_t *r, const int32_t *a, const int32_t *b, int n) {
    for (int i = 0; i < n; i++) {
        int32_t x = a[i], y = b[i];
        if (fn == ISA_VF_POW) {
            r[i] = ipow(x, y);
            continue;
        }
        if (y == 0)
            return false;
        if (y == -1) { /* avoids INT32_MIN / -1 */
            r[i] = fn == ISA_VF_DIV ? (int32_t)(0u - (uint32_t)x) : 0;
            continue;
        }
        int32_t q = x / y, m = x % y;
        if (fn == ISA_VF_DIV)
            r[i] = q;
        else if (fn == ISA_VF_FMOD)
            r[i] = m;
        else
            r[i] = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
    }
    return true;
}

/* Integer-domain binary functions; returns false on division by zero. */
RT_HOT static bool i_binary(int fn, int32_t *restrict r, const int32_t *restrict a,
                            const int32_t *restrict b, int n, int n16, int dt) {
    unsigned w = dt == ISA_DT_I32 ? 32 : dt == ISA_DT_I16 ? 16 : 8;
    uint32_t mask = w == 32 ? 0xffffffffu : (1u << w) - 1;
    switch (fn) {
    case ISA_VF_ADD: FOR16(n16) r[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]); break;
    case ISA_VF_SUB: FOR16(n16) r[i] = (int32_t)((uint32_t)a[i] - (uint32_t)b[i]); break;
    case ISA_VF_MUL: FOR16(n16) r[i] = (int32_t)((uint32_t)a[i] * (uint32_t)b[i]); break;
    case ISA_VF_MAX: FOR16(n16) r[i] = a[i] > b[i] ? a[i] : b[i]; break;
    case ISA_VF_MIN: FOR16(n16) r[i] = a[i] < b[i] ? a[i] : b[i]; break;
    case ISA_VF_AND: FOR16(n16) r[i] = a[i] & b[i]; break;
    case ISA_VF_OR: FOR16(n16) r[i] = a[i] | b[i]; break;
    case ISA_VF_XOR: FOR16(n16) r[i] = a[i] ^ b[i]; break;
    case ISA_VF_EQ: FOR16(n16) r[i] = a[i] == b[i]; break;
    case ISA_VF_NE: FOR16(n16) r[i] = a[i] != b[i]; break;
    case ISA_VF_LT: FOR16(n16) r[i] = a[i] < b[i]; break;
    case ISA_VF_LE: FOR16(n16) r[i] = a[i] <= b[i]; break;
    case ISA_VF_GT: FOR16(n16) r[i] = a[i] > b[i]; break;
    case ISA_VF_GE: FOR16(n16) r[i] = a[i] >= b[i]; break;
    case ISA_VF_SHL:
        FORN(n) r[i] = (uint32_t)b[i] >= w ? 0 : (int32_t)(((uint32_t)a[i] & mask) << b[i]);
        break;
    case ISA_VF_SHR:
        FORN(n) r[i] = (uint32_t)b[i] >= w ? 0 : (int32_t)(((uint32_t)a[i] & mask) >> b[i]);
        break;
    default: return i_divide(fn, r, a, b, n); /* DIV MOD FMOD POW */
    }
    return true;
}

/* Per-instruction state of a VEC. */
typedef struct {
    const SpyVec *v;
    Opnd op[3];
    int arity;
    bool fdom;               /* operands (other than a SELECT condition) are F32 */
    bool fres;               /* result is produced in the float domain */
    bool cmp;                /* comparison or classification: BOOL result */
    unsigned desize;         /* destination element size */
    float f[4][RT_CH];       /* operand / result buffers, float domain */
    int32_t n[4][RT_CH];     /* operand / result buffers, integer domain */
} VecRun;

/* Converts the float result of a CAST into the integer domain of dtype dt. */
static void cast_f2i(int32_t *r, const rt_f32 *a, int n, int dt) {
    if (dt == ISA_DT_BOOL) {
        FORN(n) r[i] = a[i] != 0.0f;
        return;
    }
    FORN(n) {
        float x = a[i];
        r[i] = x != x ? 0 : x >= 2147483647.0f ? INT32_MAX : x <= -2147483648.0f ? INT32_MIN
                                                                                 : (int32_t)x;
    }
}

/* Computes one chunk of n elements with operand addresses p[] into dst d. */
RT_HOT static bool vec_chunk(VecRun *s, const uint8_t *const *p, uint8_t *d, int n) {
    const SpyVec *v = s->v;
    int n16 = (n + 15) & ~15, fn = v->fn;
    const rt_f32 *fa[3] = {s->f[0], s->f[1], s->f[2]}; /* float operands */
    for (int q = 0; q < s->arity; q++) {
        const Opnd *o = &s->op[q];
        bool fq = s->fdom && !(fn == ISA_VF_SELECT && q == 0);
        if (fq && o->p && o->dt == ISA_DT_F32 && o->cs == 4)
            fa[q] = (const rt_f32 *)p[q]; /* read in place (RT_LX_SLACK covers the padding) */
        else if (fq)
            load_f(s->f[q], o, p[q], n);
        else
            load_i(s->n[q], o, p[q], n);
    }
    float *fr = s->f[3];
    int32_t *ir = s->n[3];
    if (fn == ISA_VF_SELECT) {
        if (s->fdom)
            FOR16(n16) fr[i] = s->n[0][i] ? fa[1][i] : fa[2][i];
        else
            FOR16(n16) ir[i] = s->n[0][i] ? s->n[1][i] : s->n[2][i];
    } else if (fn == ISA_VF_FMA) {
        FOR16(n16) fr[i] = fa[0][i] * fa[1][i] + fa[2][i];
    } else if (fn == ISA_VF_CAST) {
        if (s->fdom && s->fres)
            memcpy(fr, (const float *)fa[0], sizeof(float) * (size_t)n16);
        else if (s->fdom)
            cast_f2i(ir, fa[0], n, v->dtype);
        else if (s->fres)
            FOR16(n16) fr[i] = (float)s->n[0][i];
        else
            memcpy(ir, s->n[0], sizeof(int32_t) * (size_t)n16);
    } else if (s->fdom && s->cmp) {
        f_compare(fn, ir, fa[0], fa[1], n16);
    } else if (s->fdom) {
        if (s->arity == 1)
            f_unary(fn, fr, fa[0], n, n16);
        else
            f_binary(fn, fr, fa[0], fa[1], n, n16);
    } else if (s->arity == 1) {
        i_unary(fn, ir, s->n[0], n16, v->dtype);
    } else if (!i_binary(fn, ir, s->n[0], s->n[1], n, n16, s->op[0].dt)) {
        return false;
    }
    if (s->fres)
        store_f(d, fr, n, v->dtype, !(v->flags & ISA_F_NOSAT));
    else
        store_i(d, ir, n, v->dtype);
    return true;
}

/* Copies n 4-byte elements d[j] = s[j * cs] (cs in elements, rows that do not
 * overlap); the common strides get loops the compiler vectorises. */
RT_HOT static void copy_strided4(uint8_t *d, const uint8_t *s, int64_t cs, uint32_t n) {
    rt_i32 *restrict dd = (rt_i32 *)d;
    const rt_i32 *restrict ss = (const rt_i32 *)s;
    switch (cs) {
    case 0: {
        int32_t x = ss[0];
        for (uint32_t j = 0; j < n; j++)
            dd[j] = x;
        break;
    }
    case 2: { /* even elements of pairs of vectors (the last may read one element past
                 the row: RT_LX_SLACK keeps it inside the scratchpad) */
        uint32_t j = 0;
        for (; j + 8 <= n; j += 8) {
            v8i a, b, r;
            memcpy(&a, s + 8 * (size_t)j, sizeof a);
            memcpy(&b, s + 8 * (size_t)j + 32, sizeof b);
            r = RT_EVEN8(a, b);
            memcpy(d + 4 * (size_t)j, &r, sizeof r);
        }
        for (; j < n; j++)
            dd[j] = ss[2 * j];
        break;
    }
    case 3: for (uint32_t j = 0; j < n; j++) dd[j] = ss[3 * j]; break;
    case 4: for (uint32_t j = 0; j < n; j++) dd[j] = ss[4 * j]; break;
    default: for (uint32_t j = 0; j < n; j++) dd[j] = ss[j * cs]; break;
    }
}

/* Copies n 2-byte elements d[j] = s[j * cs] (cs in elements, rows that do not
 * overlap), in loops the compiler vectorises for the common strides. */
RT_HOT static void copy_strided2(uint8_t *d, const uint8_t *s, int64_t cs, uint32_t n) {
    rt_i16 *restrict dd = (rt_i16 *)d;
    const rt_i16 *restrict ss = (const rt_i16 *)s;
    switch (cs) {
    case 0: for (uint32_t j = 0; j < n; j++) dd[j] = ss[0]; break;
    case 2: for (uint32_t j = 0; j < n; j++) dd[j] = ss[2 * j]; break;
    default: for (uint32_t j = 0; j < n; j++) dd[j] = ss[j * cs]; break;
    }
}

/* Byte range [*lo, *hi) of rows rows of cols elements of es bytes at p, row stride
 * rs elements (may be negative). */
static void rows_range(const uint8_t *p, int64_t rs, uint32_t rows, uint32_t cols,
                       unsigned es, const uint8_t **lo, const uint8_t **hi) {
    int64_t last = rs * (int64_t)(rows - 1) * es;
    *lo = p + (last < 0 ? last : 0);
    *hi = p + (last > 0 ? last : 0) + (size_t)cols * es;
}

/* A COPY of contiguous rows (src_cs 1) whose source and destination do not overlap:
 * one copy when both sides are dense, else inline copies per row (rows are often a
 * few sticks: im2col windows, concatenations). False (nothing done) when they overlap. */
static bool copy_rows_apart(RtCore *c, const SpyVec *v, unsigned es) {
    uint8_t *d = c->lx + v->dst;
    const uint8_t *s = c->lx + v->src[0];
    const uint8_t *slo, *shi, *dlo, *dhi;
    rows_range(s, v->src_rs[0], v->rows, v->cols, es, &slo, &shi);
    rows_range(d, v->dst_rs, v->rows, v->cols, es, &dlo, &dhi);
    if (shi > dlo && slo < dhi)
        return false;
    size_t nb = (size_t)v->cols * es;
    if (v->src_rs[0] == (int32_t)v->cols && v->dst_rs == (int32_t)v->cols) {
        rt_copy_bytes(d, s, nb * v->rows);
        return true;
    }
    int64_t srs = (int64_t)v->src_rs[0] * es, drs = (int64_t)v->dst_rs * es;
    for (uint32_t r = 0; r < v->rows; r++)
        rt_copy_bytes(d + r * drs, s + r * srs, nb);
    return true;
}

/* Raw COPY of any dtype (also F16/BF16): row by row, strided or broadcast. A strided
 * row that overlaps its destination is copied element by element in increasing order. */
static void vec_copy(RtCore *c, const SpyVec *v, unsigned es) {
    if (!(v->flags & ISA_F_IMM_A) && v->src_cs[0] == 1 && v->rows && v->cols &&
        copy_rows_apart(c, v, es))
        return;
    for (uint32_t r = 0; r < v->rows; r++) {
        uint8_t *d = c->lx + v->dst + (int64_t)r * v->dst_rs * es;
        if (v->flags & ISA_F_IMM_A) {
            for (uint32_t j = 0; j < v->cols; j++)
                memcpy(d + (size_t)j * es, &v->imm, es);
            continue;
        }
        const uint8_t *s = c->lx + v->src[0] + (int64_t)r * v->src_rs[0] * es;
        int64_t cs = (int64_t)v->src_cs[0] * es;
        if (cs == (int64_t)es) {
            memmove(d, s, (size_t)v->cols * es);
            continue;
        }
        const uint8_t *lo = cs < 0 ? s + cs * (int64_t)(v->cols - 1) : s;
        const uint8_t *hi = (cs < 0 ? s : s + cs * (int64_t)(v->cols - 1)) + es;
        bool apart = hi <= d || lo >= d + (size_t)v->cols * es;
        if (es == 4 && apart)
            copy_strided4(d, s, v->src_cs[0], v->cols);
        else if (es == 2 && apart)           /* DLF16 (fp16 mode), F16, BF16 */
            copy_strided2(d, s, v->src_cs[0], v->cols);
        else
            for (uint32_t j = 0; j < v->cols; j++)
                memcpy(d + (size_t)j * es, s + j * cs, es);
    }
}

/* Whether device dtype dt is computed in the float domain. */
static bool float_dt(int dt) {
    return dt == ISA_DT_F32 || dt == ISA_DT_F16 || dt == ISA_DT_BF16 || dt == ISA_DT_DLF16 ||
           spy_dt_narrow_float(dt);
}

/* Element size of a device dtype the VEC kernels handle. */
static unsigned vec_esize(int dt) {
    return rt_dtype_size(dt);
}

/* Fills the operand table of a VEC from its fields (strides turned into bytes). */
static void vec_setup(VecRun *s, RtCore *c, const SpyVec *v) {
    int sdt = v->src_dtype ? v->src_dtype : v->dtype;
    int imm_q = (v->flags & ISA_F_IMM) ? 1 : (v->flags & ISA_F_IMM_A) ? 0 : -1;
    s->v = v;
    s->arity = rt_vecfn_arity(v->fn);
    s->fdom = float_dt(sdt);
    s->fres = float_dt(v->dtype);
    s->cmp = rt_vecfn_compare(v->fn);
    for (int q = 0; q < s->arity; q++) {
        Opnd *o = &s->op[q];
        o->dt = (v->fn == ISA_VF_SELECT && q == 0) ? ISA_DT_BOOL
              : (v->fn == ISA_VF_FMA && q == 2) ? v->dtype : sdt;
        unsigned es = vec_esize(o->dt);
        if (q == imm_q) {
            o->p = NULL;
            o->rs = o->cs = 0;
            memcpy(&o->fimm, &v->imm, 4);
            if (o->dt == ISA_DT_F16 || o->dt == ISA_DT_BF16)
                o->fimm = o->dt == ISA_DT_F16 ? rt_f16_to_f32((uint16_t)v->imm)
                                              : rt_bf16_to_f32((uint16_t)v->imm);
            else if (o->dt == ISA_DT_DLF16)
                o->fimm = spy_dlf16_to_f32((uint16_t)v->imm);
            o->iimm = imm_int(v->imm, o->dt);
        } else {
            o->p = c->lx + v->src[q];
            o->rs = (int64_t)v->src_rs[q] * es;
            o->cs = (int64_t)v->src_cs[q] * es;
        }
    }
    s->desize = vec_esize(v->dtype);
}

/* Whether fn is an F32 function of one or two operands that rt_vec_one computes: the
 * float-domain arithmetic of f_unary / f_binary (no comparison, CAST, COPY, SELECT or
 * FMA: those have their own paths in vec_chunk). */
static bool one_fn(int fn) {
    switch (fn) {
    case ISA_VF_COPY: case ISA_VF_CAST: case ISA_VF_SELECT: case ISA_VF_FMA: case ISA_VF_NOT:
    case ISA_VF_AND: case ISA_VF_OR: case ISA_VF_XOR: case ISA_VF_SHL: case ISA_VF_SHR:
        return false;
    default: {
        int ar = rt_vecfn_arity(fn);
        return (ar == 1 || ar == 2) && !rt_vecfn_compare(fn);
    }
    }
}

/* Whether v is an F32 VEC of one element (a statistic of a normalisation: a mean
 * scaled, an epsilon added, a square root taken) that rt_vec_one runs. */
bool rt_vec_one_ok(const SpyVec *v) {
    return v->opcode == ISA_VEC && v->rows == 1 && v->cols == 1 && v->dtype == ISA_DT_F32 &&
           (!v->src_dtype || v->src_dtype == ISA_DT_F32) &&
           !(v->flags & ~(uint8_t)(ISA_F_IMM | ISA_F_IMM_A)) && one_fn(v->fn);
}

/* Runs a VEC that rt_vec_one_ok takes: its element goes through f_unary / f_binary
 * (the functions vec_chunk calls, on lanes padded to 16 the same way), without the
 * operand table and chunk loop of rt_vec, so the bits are those of rt_vec. */
void rt_vec_one(RtCore *c, const SpyVec *v) {
    _Alignas(64) float x[3][16];
    int imm_q = (v->flags & ISA_F_IMM) ? 1 : (v->flags & ISA_F_IMM_A) ? 0 : -1;
    int ar = rt_vecfn_arity(v->fn);
    for (int q = 0; q < ar; q++) {
        float e;
        if (q == imm_q)
            memcpy(&e, &v->imm, 4);
        else
            memcpy(&e, c->lx + v->src[q], 4);
        for (int i = 0; i < 16; i++)    /* as load_f pads a scalar operand */
            x[q][i] = e;
    }
    if (ar == 1)
        f_unary(v->fn, x[2], x[0], 1, 16);
    else
        f_binary(v->fn, x[2], x[0], x[1], 1, 16);
    memcpy(c->lx + v->dst, x[2], 4);
}

/* Executes a verified VEC; returns RT_XERR_DIVZERO on an integer division by zero. */
int rt_vec(RtCore *c, const SpyVec *v) {
    if (!v->rows || !v->cols) /* no element: no row loop (a bundle may give 2^30 rows) */
        return RT_XOK;
    if (v->fn == ISA_VF_COPY) {
        vec_copy(c, v, vec_esize(v->dtype));
        return RT_XOK;
    }
    if (rt_vec_fast(c, v))
        return RT_XOK;
    VecRun s;
    vec_setup(&s, c, v);
    uint64_t rows = v->rows, cols = v->cols;
    bool merge = rows > 1 && (int64_t)v->dst_rs == (int64_t)cols;
    for (int q = 0; q < s.arity && merge; q++)
        if (s.op[q].p && s.op[q].rs != s.op[q].cs * (int64_t)cols)
            merge = false;
    if (merge)
        cols *= rows, rows = 1;
    int64_t drs = (int64_t)v->dst_rs * s.desize;
    for (uint64_t r = 0; r < rows; r++) {
        for (uint64_t c0 = 0; c0 < cols; c0 += RT_CH) {
            int n = (int)(cols - c0 < RT_CH ? cols - c0 : RT_CH);
            const uint8_t *p[3] = {NULL, NULL, NULL};
            for (int q = 0; q < s.arity; q++)
                if (s.op[q].p)
                    p[q] = s.op[q].p + (int64_t)r * s.op[q].rs + (int64_t)c0 * s.op[q].cs;
            uint8_t *d = c->lx + v->dst + (int64_t)r * drs + (int64_t)c0 * s.desize;
            if (!vec_chunk(&s, p, d, n))
                return RT_XERR_DIVZERO;
        }
    }
    return RT_XOK;
}

/* Executes a verified VFILL: n elements := the low esize bytes of value. */
void rt_vfill(RtCore *c, const SpyVFill *f) {
    unsigned es = vec_esize(f->dtype);
    uint8_t *d = c->lx + f->dst;
    if (es == 1) {
        memset(d, (int)(f->value & 0xff), f->n);
        return;
    }
    if (f->n == 0)
        return;
    if (es == 4 && f->n <= 1024) { /* short fills (a window's padding): no library calls */
        uint32_t v = (uint32_t)f->value, i = 0;
        v8i w = {0};
        w += (int32_t)v;
        for (; i + 8 <= f->n; i += 8)  /* eight elements a store */
            memcpy(d + 4 * (size_t)i, &w, sizeof w);
        for (; i < f->n; i++)
            memcpy(d + 4 * (size_t)i, &v, 4);
        return;
    }
    memcpy(d, &f->value, es);
    size_t done = es, total = (size_t)f->n * es;
    while (done < total) { /* doubling copies */
        size_t k = done < total - done ? done : total - done;
        memcpy(d + done, d, k);
        done += k;
    }
}
