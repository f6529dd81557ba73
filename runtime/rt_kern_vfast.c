/* rt_kern_vfast.c: the direct path of the commonest ISA_VEC steps: F32 ADD SUB MUL
 * DIV MAX MIN on contiguous rows with a contiguous or scalar (immediate or column
 * stride 0) second operand, or a scalar first operand, F32 RELU NEG ABS on
 * contiguous rows, and F32 SELECT on a BOOL condition (the masks of dynamic
 * dimensions). They are computed straight from LX into LX in whole vectors,
 * without the staging buffers of rt_kern_vec.c.
 *
 * Results equal those of rt_kern_vec.c bit for bit: the same IEEE operation per
 * element. A row is taken only when each source either is the destination itself
 * (in place) or does not overlap it, so the order of reads and writes cannot matter;
 * anything else is left to the general kernel.
 */
#include <string.h>

#include "rt_exec.h"
#include "rt_vlanes.h"

/* Operand kinds of a direct row. */
enum { OP_ROW = 0, OP_SCALAR = 1 };

typedef struct {
    int fn;
    int ka, kb;              /* OP_ROW or OP_SCALAR (kb unused for unary) */
    float sa, sb;            /* scalar values */
} Fast;

/* Loads 8 floats (macros: a function returning a vector would change the ABI between
 * the clones). */
#define LDV(v, p) memcpy(&(v), (p), sizeof(v8f))
#define STV(p, v) memcpy((p), &(v), sizeof(v8f))

/* The MAX / MIN of isa.md: a when it is better or NaN, else b. */
#define SELV(m, a, b) ((v8f)(((m) & (v8i)(a)) | (~(m) & (v8i)(b))))

/* One element of fn on (a, b), exactly as the vector code. */
static inline float op1(int fn, float a, float b) {
    switch (fn) {
    case ISA_VF_ADD: return a + b;
    case ISA_VF_SUB: return a - b;
    case ISA_VF_MUL: return a * b;
    case ISA_VF_DIV: return a / b;
    case ISA_VF_MAX: return (a > b || a != a) ? a : b;
    case ISA_VF_MIN: return (a < b || a != a) ? a : b;
    case ISA_VF_RELU: return a < 0.0f ? 0.0f : a;
    case ISA_VF_NEG: return -a;
    default: { /* ABS */
        uint32_t u;
        memcpy(&u, &a, 4);
        u &= 0x7fffffffu;
        memcpy(&a, &u, 4);
        return a;
    }
    }
}

/* The whole-vector part of a row for each operand kind, with EXPR of x and y. */
#define ROW_LOOP(EXPR)                                                                   \
    do {                                                                                 \
        if (ka == OP_ROW && kb == OP_ROW)                                                \
            for (; i + 8 <= n; i += 8) {                                                 \
                LDV(x, a + 4 * (size_t)i), LDV(y, b + 4 * (size_t)i);                    \
                r = (EXPR);                                                              \
                STV(d + 4 * (size_t)i, r);                                               \
            }                                                                            \
        else if (ka == OP_ROW)                                                           \
            for (y = sb; i + 8 <= n; i += 8) {                                           \
                LDV(x, a + 4 * (size_t)i);                                               \
                r = (EXPR);                                                              \
                STV(d + 4 * (size_t)i, r);                                               \
            }                                                                            \
        else                                                                             \
            for (x = sa; i + 8 <= n; i += 8) {                                           \
                LDV(y, b + 4 * (size_t)i);                                               \
                r = (EXPR);                                                              \
                STV(d + 4 * (size_t)i, r);                                               \
            }                                                                            \
    } while (0)

/* The same over 16 lanes (one AVX-512 register; two or four on the other clones). */
#define ROW_LOOP16(EXPR)                                                                 \
    do {                                                                                 \
        if (ka == OP_ROW && kb == OP_ROW)                                                \
            for (; i + 16 <= n; i += 16) {                                               \
                memcpy(&x, a + 4 * (size_t)i, 64), memcpy(&y, b + 4 * (size_t)i, 64);   \
                r = (EXPR);                                                              \
                memcpy(d + 4 * (size_t)i, &r, 64);                                       \
            }                                                                            \
        else if (ka == OP_ROW)                                                           \
            for (y = sb; i + 16 <= n; i += 16) {                                         \
                memcpy(&x, a + 4 * (size_t)i, 64);                                       \
                r = (EXPR);                                                              \
                memcpy(d + 4 * (size_t)i, &r, 64);                                       \
            }                                                                            \
        else                                                                             \
            for (x = sa; i + 16 <= n; i += 16) {                                         \
                memcpy(&y, b + 4 * (size_t)i, 64);                                       \
                r = (EXPR);                                                              \
                memcpy(d + 4 * (size_t)i, &r, 64);                                       \
            }                                                                            \
    } while (0)

/* The whole 16-lane blocks of a row of ADD SUB MUL DIV NEG ABS; returns the elements
 * done. Always inlined, into each clone of fast_row (else it is compiled once, for the
 * baseline ISA). The functions with a comparison are left to the 8 lanes of fast_row:
 * a comparison of 16 lanes gives a mask register that plain AVX-512F cannot turn back
 * into a vector, so that clone would scalarise them. */
#define RT_INLINE static inline __attribute__((always_inline))
RT_INLINE uint32_t fast_row16(const Fast *f, uint8_t *d, const uint8_t *a, const uint8_t *b,
                              uint32_t n) {
    const int ka = f->ka, kb = f->kb;
    v16f x, y, r, sa = {0}, sb = {0};
    sa += f->sa;
    sb += f->sb;
    uint32_t i = 0;
    switch (f->fn) {
    case ISA_VF_ADD: ROW_LOOP16(x + y); break;
    case ISA_VF_SUB: ROW_LOOP16(x - y); break;
    case ISA_VF_MUL: ROW_LOOP16(x * y); break;
    case ISA_VF_DIV: ROW_LOOP16(x / y); break;
    case ISA_VF_NEG: ROW_LOOP16(-x); break;
    case ISA_VF_ABS: ROW_LOOP16((v16f)((v16i)x & 0x7fffffff)); break;
    default: break;
    }
    return i;
}

/* d[0..n) = fn(a, b) for one row; a, b are rows or scalars as f says. The arithmetic
 * functions take 16 lanes at a time (AVX-512 hosts: on AVX2 the clone built a 16-lane
 * vector's scalars through the stack at every call, and spilled them), then 8, then
 * one: the same operation per element. */
RT_HOT static void fast_row(const Fast *f, uint8_t *d, const uint8_t *a, const uint8_t *b,
                            uint32_t n) {
    const int fn = f->fn, ka = f->ka, kb = f->kb;
    const float fa = f->sa, fb = f->sb;
    v8f sa = {0}, sb = {0}, x, y, r, zero = {0};
    sa += fa;
    sb += fb;
    uint32_t i = rt_host_has(RT_HOST_AVX512) ? fast_row16(f, d, a, b, n) : 0;
    switch (fn) {
    case ISA_VF_ADD: ROW_LOOP(x + y); break;
    case ISA_VF_SUB: ROW_LOOP(x - y); break;
    case ISA_VF_MUL: ROW_LOOP(x * y); break;
    case ISA_VF_DIV: ROW_LOOP(x / y); break;
    case ISA_VF_MAX: ROW_LOOP(SELV((x > y) | (x != x), x, y)); break;
    case ISA_VF_MIN: ROW_LOOP(SELV((x < y) | (x != x), x, y)); break;
    case ISA_VF_RELU: ROW_LOOP(SELV(x < zero, zero, x)); break;
    case ISA_VF_NEG: ROW_LOOP(-x); break;
    default: ROW_LOOP((v8f)((v8i)x & 0x7fffffff)); break; /* ABS */
    }
    for (; i < n; i++) {
        float xa = ka == OP_ROW ? *(const rt_f32 *)(a + 4 * (size_t)i) : fa;
        float xb = kb == OP_ROW ? *(const rt_f32 *)(b + 4 * (size_t)i) : fb;
        *(rt_f32 *)(d + 4 * (size_t)i) = op1(fn, xa, xb);
    }
}

/* Whether fn has a direct path (binary, or unary with arity 1). */
static int fast_arity(int fn) {
    switch (fn) {
    case ISA_VF_ADD: case ISA_VF_SUB: case ISA_VF_MUL: case ISA_VF_DIV:
    case ISA_VF_MAX: case ISA_VF_MIN: return 2;
    case ISA_VF_RELU: case ISA_VF_NEG: case ISA_VF_ABS: return 1;
    default: return 0;
    }
}

/* Whether the byte ranges [p, p+pn) and [q, q+qn) are disjoint. */
static bool apart(const uint8_t *p, size_t pn, const uint8_t *q, size_t qn) {
    return p + pn <= q || q + qn <= p;
}

/* The same for LX byte offsets. */
static bool apart_lx(uint64_t p, uint64_t pn, uint64_t q, uint64_t qn) {
    return p + pn <= q || q + qn <= p;
}

/* One row of an F32 SELECT: d[i] = m[i] ? a[i] : b[i], the BOOL condition m (one byte
 * an element, true when not 0) and the operands rows or scalars (OP_SCALAR: element
 * 0 for every i); the bits of the chosen operand are copied, as the general kernel
 * does. */
RT_HOT static void select_row(uint8_t *d, const uint8_t *m, int km, const uint8_t *a, int ka,
                              const uint8_t *b, int kb, uint32_t n) {
    uint32_t sa = 0, sb = 0;
    if (ka == OP_SCALAR)
        memcpy(&sa, a, 4);
    if (kb == OP_SCALAR)
        memcpy(&sb, b, 4);
    if (km == OP_ROW && ka == OP_ROW && kb == OP_SCALAR) { /* a mask's SELECT */
        uint32_t i = 0;
        v8i vb = {0};
        vb += (int32_t)sb;
        for (; i + 8 <= n; i += 8) {           /* eight bytes of condition at a time */
            v8i x, z;
            RT_COND0(z, m + i);
            memcpy(&x, a + 4 * (size_t)i, sizeof x);
            x = (vb & z) | (x & ~z);
            memcpy(d + 4 * (size_t)i, &x, sizeof x);
        }
        for (; i < n; i++) {
            uint32_t x, t = 0u - (uint32_t)(m[i] != 0);
            memcpy(&x, a + 4 * (size_t)i, 4);
            x = (x & t) | (sb & ~t);
            memcpy(d + 4 * (size_t)i, &x, 4);
        }
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = sa, y = sb;
        if (ka == OP_ROW)
            memcpy(&x, a + 4 * (size_t)i, 4);
        if (kb == OP_ROW)
            memcpy(&y, b + 4 * (size_t)i, 4);
        x = m[km == OP_ROW ? i : 0] ? x : y;
        memcpy(d + 4 * (size_t)i, &x, 4);
    }
}

/* An F32 SELECT on the direct path (select_row) when its operands are in registers'
 * reach: no immediate, a BOOL condition and F32 values each a contiguous row or a
 * scalar, every row in place or apart from the destination's; false (nothing done)
 * otherwise. */
static bool fast_select(RtCore *c, const SpyVec *v) {
    if (v->dtype != ISA_DT_F32 || (v->src_dtype && v->src_dtype != ISA_DT_F32) || v->flags)
        return false;
    int kind[3];
    for (int q = 0; q < 3; q++) {
        if (v->src_cs[q] != 0 && v->src_cs[q] != 1)
            return false;
        kind[q] = v->src_cs[q] ? OP_ROW : OP_SCALAR;
    }
    size_t rowb = (size_t)v->cols * 4;
    for (uint64_t r = 0; r < v->rows; r++) {
        const uint8_t *d = c->lx + v->dst + (int64_t)r * v->dst_rs * 4;
        const uint8_t *m = c->lx + v->src[0] + (int64_t)r * v->src_rs[0];
        if (!apart(m, kind[0] == OP_ROW ? v->cols : 1, d, rowb))
            return false;
        for (int q = 1; q < 3; q++) {
            const uint8_t *p = c->lx + v->src[q] + (int64_t)r * v->src_rs[q] * 4;
            if (kind[q] == OP_ROW ? p != d && !apart(p, rowb, d, rowb) : !apart(p, 4, d, rowb))
                return false;
        }
    }
    for (uint64_t r = 0; r < v->rows; r++)
        select_row(c->lx + v->dst + (int64_t)r * v->dst_rs * 4,
                   c->lx + v->src[0] + (int64_t)r * v->src_rs[0], kind[0],
                   c->lx + v->src[1] + (int64_t)r * v->src_rs[1] * 4, kind[1],
                   c->lx + v->src[2] + (int64_t)r * v->src_rs[2] * 4, kind[2], v->cols);
    return true;
}

/* The direct-path plan of an arithmetic VEC: operand kinds and rows x cols after
 * merging rows that follow each other in every operand. Depends on the instruction
 * alone (LX offsets), so rt_prep.c computes it once at load. */
typedef struct {
    int ka, kb;              /* OP_ROW or OP_SCALAR */
    uint64_t rows, cols;
} FastPlan;

/* Operand q's LX byte offset in row r of v (q not an immediate). */
static uint64_t row_off(const SpyVec *v, int q, uint64_t r) {
    return v->src[q] + (uint64_t)((int64_t)r * v->src_rs[q] * 4);
}

/* Rows of a VEC whose operands fast_plan checks one by one; past them, the rule of
 * fast_apart_all (a bundle can ask for millions of rows of a VEC: a fuzzed one took
 * its load 15 s in the sanitizer build, checking each row) */
#define FAST_CHECK_ROWS 1024

/* For a VEC of many rows (rows of rowb bytes): whether every row of each operand is,
 * whatever the row, where fast_plan's check of the first rows says: a row operand with
 * the destination's row stride (the same offset from its row in every row), a scalar
 * outside the destination's whole span. False (not the direct path) for the others. */
static bool fast_apart_all(const SpyVec *v, int ar, const bool imm[2], const int kind[2],
                           uint64_t rows, uint64_t rowb) {
    int64_t last = (int64_t)(rows - 1) * v->dst_rs * 4;
    uint64_t lo = v->dst + (uint64_t)(last < 0 ? last : 0);
    uint64_t hi = v->dst + (uint64_t)(last > 0 ? last : 0) + rowb;
    for (int q = 0; q < ar; q++) {
        if (imm[q])
            continue;
        if (kind[q] == OP_ROW && v->src_rs[q] != v->dst_rs)
            return false;
        if (kind[q] == OP_SCALAR) {
            int64_t sl = (int64_t)(rows - 1) * v->src_rs[q] * 4;
            uint64_t so = v->src[q] + (uint64_t)(sl < 0 ? sl : 0);
            uint64_t se = v->src[q] + (uint64_t)(sl > 0 ? sl : 0) + 4;
            if (!apart_lx(so, se - so, lo, hi - lo))
                return false;
        }
    }
    return true;
}

/* Fills fp when the arithmetic VEC v (not SELECT) qualifies for the direct path:
 * F32, contiguous rows or scalars, every row in place or apart from the
 * destination's; false otherwise. */
static bool fast_plan(const SpyVec *v, FastPlan *fp) {
    int ar = fast_arity(v->fn);
    if (!ar || v->dtype != ISA_DT_F32 || (v->src_dtype && v->src_dtype != ISA_DT_F32) ||
        (v->flags & ~(uint8_t)(ISA_F_IMM | ISA_F_IMM_A)) ||
        ((v->flags & ISA_F_IMM) && (v->flags & ISA_F_IMM_A)) || (ar == 1 && v->flags))
        return false;
    bool imm[2] = {(v->flags & ISA_F_IMM_A) != 0, (v->flags & ISA_F_IMM) != 0};
    int kind[2] = {OP_ROW, OP_SCALAR};
    for (int q = 0; q < ar; q++) {
        kind[q] = imm[q] || v->src_cs[q] == 0 ? OP_SCALAR : OP_ROW;
        if (kind[q] == OP_ROW && v->src_cs[q] != 1)
            return false;
    }
    if (kind[0] == OP_SCALAR && (ar == 1 || kind[1] == OP_SCALAR))
        return false;
    /* rows that follow each other in every operand run as one */
    uint64_t rows = v->rows, cols = v->cols;
    bool merge = rows > 1 && v->dst_rs == (int64_t)cols;
    for (int q = 0; q < ar && merge; q++)
        if (!imm[q] && v->src_rs[q] != (kind[q] == OP_ROW ? (int64_t)cols : 0))
            merge = false;
    if (merge)
        cols *= rows, rows = 1;
    uint64_t rowb = cols * 4;
    if (rows > FAST_CHECK_ROWS && !fast_apart_all(v, ar, imm, kind, rows, rowb))
        return false;
    for (uint64_t r = 0; r < rows && r <= FAST_CHECK_ROWS; r++) { /* every row in place
                                                            or apart, else no */
        uint64_t d = v->dst + (uint64_t)((int64_t)r * v->dst_rs * 4);
        for (int q = 0; q < ar; q++) {
            if (imm[q])
                continue;
            uint64_t o = row_off(v, q, r);
            if (kind[q] == OP_ROW ? o != d && !apart_lx(o, rowb, d, rowb)
                                  : !apart_lx(o, 4, d, rowb))
                return false;
        }
    }
    *fp = (FastPlan){kind[0], kind[1], rows, cols};
    return true;
}

/* Runs the arithmetic VEC v by its plan fp: fast_row over each row. */
static void fast_run(RtCore *c, const SpyVec *v, const FastPlan *fp) {
    Fast f = {v->fn, fp->ka, fp->kb, 0, 0};
    bool imm[2] = {(v->flags & ISA_F_IMM_A) != 0, (v->flags & ISA_F_IMM) != 0};
    bool two = fast_arity(v->fn) > 1;
    if (imm[0] || imm[1])
        memcpy(imm[0] ? &f.sa : &f.sb, &v->imm, 4);
    for (uint64_t r = 0; r < fp->rows; r++) {
        uint8_t *d = c->lx + v->dst + (int64_t)r * v->dst_rs * 4;
        const uint8_t *p[2] = {imm[0] ? NULL : c->lx + row_off(v, 0, r),
                               !two || imm[1] ? NULL : c->lx + row_off(v, 1, r)};
        if (p[0] && f.ka == OP_SCALAR)
            memcpy(&f.sa, p[0], 4);
        if (p[1] && f.kb == OP_SCALAR)
            memcpy(&f.sb, p[1], 4);
        fast_row(&f, d, p[0], p[1], (uint32_t)fp->cols);
    }
}

/* Runs v on the direct path if it qualifies; false (nothing done) otherwise. */
bool rt_vec_fast(RtCore *c, const SpyVec *v) {
    if (v->fn == ISA_VF_SELECT)
        return fast_select(c, v);
    FastPlan fp;
    if (!fast_plan(v, &fp))
        return false;
    fast_run(c, v, &fp);
    return true;
}

/* The plan of a VEC that takes the direct path as it is (RT_PH_FAST: rows rows of rowb
 * bytes, the operand kinds in kinds); false (p untouched) when it does not, or its
 * merged row does not fit the plan's fields. */
bool rt_vec_fast_prep(const SpyVec *v, RtPrep *p) {
    FastPlan fp;
    if (v->fn == ISA_VF_SELECT || !fast_plan(v, &fp) || fp.cols * 4 > UINT32_MAX ||
        fp.rows > UINT32_MAX)
        return false;
    p->how = RT_PH_FAST;
    p->rows = (uint32_t)fp.rows;
    p->rowb = (uint32_t)(fp.cols * 4);
    p->kinds = (uint8_t)(fp.ka | fp.kb << 1);
    return true;
}

/* Runs the VEC v planned by rt_vec_fast_prep into p. */
void rt_vec_fast_prepared(RtCore *c, const SpyVec *v, const RtPrep *p) {
    FastPlan fp = {p->kinds & 1, (p->kinds >> 1) & 1, p->rows, p->rowb / 4};
    fast_run(c, v, &fp);
}
