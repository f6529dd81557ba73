/* rt_kern_red.c: the ISA_VREDUCE and ISA_VSCAN tile kernels.
 *
 * Reductions walk each row in chunks of RT_RCH elements: a contiguous F32 row is read
 * in place, anything else is first gathered into a local buffer (float, or int32 for
 * the integer types), then reduced with the function switch outside the loop. F32 SUM
 * keeps 8 interleaved partial sums (see isa.md), so it vectorises and its result does
 * not depend on chunking or host threads.
 * DLF16 rows are widened (exact, vectorised rt_dlf16.c) chunk by chunk into the float
 * buffer and reduced as F32: sums accumulate in F32, MAX/MIN/ARG* are exact; the
 * result is rounded once to DLF16. VSCAN on DLF16 scans in F32 and rounds each output.
 */
#include <math.h>
#include <string.h>

#include "rt_dlf16.h"
#include "rt_exec.h"

#define RT_RCH 256
#define RT_SHORT_ROW 64      /* F32 rows up to this length are reduced 8 rows at a time */

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

typedef struct {
    float lanes[8];          /* SUM partials (element i in lane i % 8) */
    float acc;               /* PROD / MAX / MIN running value, ARG* best value */
    int64_t iacc;            /* integer running value */
    int64_t pos;             /* ARG* best position */
    int64_t seen;            /* elements consumed so far */
} RedState;

/* Element size of a device dtype the reducer handles. */
static unsigned esz(int dt) {
    return dt == ISA_DT_F32 || dt == ISA_DT_I32 ? 4 : dt == ISA_DT_I16 || dt == ISA_DT_DLF16 ? 2 : 1;
}

/* Gathers n integer elements at byte stride cs into the int32 domain. */
static void get_i(int32_t *buf, const uint8_t *p, int64_t cs, int n, int dt) {
    switch (dt) {
    case ISA_DT_I32: for (int i = 0; i < n; i++) buf[i] = *(const rt_i32 *)(p + i * cs); break;
    case ISA_DT_I16: for (int i = 0; i < n; i++) buf[i] = *(const rt_i16 *)(p + i * cs); break;
    case ISA_DT_I8: for (int i = 0; i < n; i++) buf[i] = (int8_t)p[i * cs]; break;
    case ISA_DT_U8: for (int i = 0; i < n; i++) buf[i] = p[i * cs]; break;
    default: for (int i = 0; i < n; i++) buf[i] = p[i * cs] != 0; break;
    }
}

/* The MAX (max) or MIN of acc (not NaN) and x[0..i) for the largest multiple i of 16
 * not above n, in 8-lane vectors (the step of isa.md one element after the other is a
 * chain of compares and selects through one value: softmax's row maximum was a third
 * of its time); returns i, or 0 (acc untouched: the caller folds them one by one) when
 * a NaN is among them or the result is a zero. Otherwise the result is the same in any
 * order: the maximum (minimum) is one value, and a nonzero float equal to it has its
 * bits (a zero could be +0 or -0, the first one met wins). */
#define MM8_STEP(CMP)                                                                      \
    for (; i + 16 <= n; i += 16) {                                                         \
        memcpy(&v0, (const float *)x + i, sizeof v0);                                      \
        memcpy(&v1, (const float *)x + i + 8, sizeof v1);                                  \
        nan |= (v0 != v0) | (v1 != v1);                                                    \
        v8i b0 = v0 CMP m0, b1 = v1 CMP m1;                                                \
        m0 = (v8f)((b0 & (v8i)v0) | (~b0 & (v8i)m0));                                      \
        m1 = (v8f)((b1 & (v8i)v1) | (~b1 & (v8i)m1));                                      \
    }
static inline __attribute__((always_inline)) int fold_maxmin8(float *acc, const rt_f32 *x,
                                                              int n, bool max) {
    int i = 0;
    v8f m0, m1, v0, v1;
    v8i nan = {0};
    for (int t = 0; t < 8; t++)
        m0[t] = m1[t] = *acc;
    if (max)
        MM8_STEP(>)
    else
        MM8_STEP(<)
    float r = *acc;
    for (int t = 0; t < 8; t++) {
        nan[0] |= nan[t];
        r = (max ? m0[t] > r : m0[t] < r) ? m0[t] : r;
        r = (max ? m1[t] > r : m1[t] < r) ? m1[t] : r;
    }
    if (nan[0] || r == 0.0f)
        return 0;
    *acc = r;
    return i;
}

/* Folds n contiguous floats x into the state of reduction fn. The state is copied to
 * locals first: x may alias anything, which would keep it in memory. */
RT_HOT static void fold_f(RedState *st, int fn, bool last, const rt_f32 *x, int n) {
    int i = 0;
    float acc = st->acc;
    switch (fn) {
    case ISA_RF_SUM: {
        v8f l;
        memcpy(&l, st->lanes, sizeof l);
        for (; i + 8 <= n; i += 8) {
            v8f v;
            memcpy(&v, (const float *)x + i, sizeof v);
            l += v;
        }
        memcpy(st->lanes, &l, sizeof l);
        for (int t = 0; i + t < n; t++)
            st->lanes[t] += x[i + t];
        break;
    }
    case ISA_RF_PROD:
        for (; i < n; i++)
            acc *= x[i];
        break;
    case ISA_RF_MAX:
        if (acc == acc)
            i = fold_maxmin8(&acc, x, n, true);
        for (; i < n; i++) {
            float v = x[i];
            acc = ((v > acc || v != v) && acc == acc) ? v : acc;
        }
        break;
    case ISA_RF_MIN:
        if (acc == acc)
            i = fold_maxmin8(&acc, x, n, false);
        for (; i < n; i++) {
            float v = x[i];
            acc = ((v < acc || v != v) && acc == acc) ? v : acc;
        }
        break;
    default: /* ARGMAX / ARGMIN */
        for (; i < n; i++) {
            float v = x[i];
            bool better = fn == ISA_RF_ARGMAX ? (last ? v >= acc : v > acc)
                                              : (last ? v <= acc : v < acc);
            if (st->seen + i == 0 || better) {
                acc = v;
                st->pos = st->seen + i;
            }
        }
        break;
    }
    st->acc = acc;
    st->seen += n;
}

/* Folds n int32-domain values into the state of reduction fn. */
static void fold_i(RedState *st, int fn, bool last, const int32_t *x, int n) {
    for (int i = 0; i < n; i++) {
        int64_t v = x[i];
        switch (fn) {
        case ISA_RF_SUM: st->iacc = (int64_t)((uint64_t)st->iacc + (uint64_t)v); break;
        case ISA_RF_PROD: st->iacc = (int64_t)((uint64_t)st->iacc * (uint64_t)v); break;
        case ISA_RF_MAX: st->iacc = v > st->iacc ? v : st->iacc; break;
        case ISA_RF_MIN: st->iacc = v < st->iacc ? v : st->iacc; break;
        default: {
            bool better = fn == ISA_RF_ARGMAX ? (last ? v >= st->iacc : v > st->iacc)
                                              : (last ? v <= st->iacc : v < st->iacc);
            if (st->seen + i == 0 || better) {
                st->iacc = v;
                st->pos = st->seen + i;
            }
        }
        }
    }
    st->seen += n;
}

/* Initial state of reduction fn. */
static void red_init(RedState *st, int fn) {
    memset(st, 0, sizeof *st);
    st->acc = fn == ISA_RF_PROD ? 1.0f : fn == ISA_RF_MAX ? -INFINITY : INFINITY;
    st->iacc = fn == ISA_RF_PROD ? 1 : fn == ISA_RF_MAX ? INT64_MIN : fn == ISA_RF_MIN ? INT64_MAX : 0;
}

/* Final float value of a non-ARG reduction. */
static float red_final_f(const RedState *st, int fn) {
    if (fn != ISA_RF_SUM)
        return st->acc;
    const float *l = st->lanes;
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* Writes an integer result v of dtype dt at d, wrapping to the width. */
static void put_i(uint8_t *d, int64_t v, int dt) {
    switch (dt) {
    case ISA_DT_I32: *(rt_i32 *)d = (int32_t)(uint32_t)(uint64_t)v; break;
    case ISA_DT_I16: *(rt_i16 *)d = (int16_t)(uint16_t)(uint64_t)v; break;
    case ISA_DT_BOOL: *d = v != 0; break;
    default: *d = (uint8_t)(uint64_t)v; break;
    }
}

/* Reads an integer element of dtype dt at p. */
static int64_t get1_i(const uint8_t *p, int dt) {
    int32_t v;
    get_i(&v, p, 0, 1, dt);
    return v;
}

/* Combines the old destination value with a new F32 result under ISA_F_ACCUM. */
static float accum_f(int fn, float old, float v) {
    switch (fn) {
    case ISA_RF_SUM: return old + v;
    case ISA_RF_PROD: return old * v;
    case ISA_RF_MAX: return (v > old || v != v) ? v : old;
    default: return (v < old || v != v) ? v : old;
    }
}

/* Combines the old integer destination value with a new result under ISA_F_ACCUM. */
static int64_t accum_i(int fn, int64_t old, int64_t v) {
    switch (fn) {
    case ISA_RF_SUM: return (int64_t)((uint64_t)old + (uint64_t)v);
    case ISA_RF_PROD: return (int64_t)((uint64_t)old * (uint64_t)v);
    case ISA_RF_MAX: return v > old ? v : old;
    default: return v < old ? v : old;
    }
}

/* Reduces one row of len elements at s (byte stride cs) into the state. */
static void red_row(RedState *st, const SpyVReduce *r, const uint8_t *s, int64_t cs) {
    bool last = r->flags & ISA_F_LAST, isf = r->dtype == ISA_DT_F32;
    float fb[RT_RCH];
    uint16_t hb[RT_RCH];
    int32_t ib[RT_RCH];
    for (uint64_t c0 = 0; c0 < r->len; c0 += RT_RCH) {
        int n = (int)(r->len - c0 < RT_RCH ? r->len - c0 : RT_RCH);
        const uint8_t *p = s + (int64_t)c0 * cs;
        if (r->dtype == ISA_DT_DLF16) {
            const uint8_t *h = p;
            if (cs != 2) {
                for (int i = 0; i < n; i++)
                    memcpy(&hb[i], p + i * cs, 2);
                h = (const uint8_t *)hb;
            }
            rt_dlf16_to_f32_n(fb, h, (size_t)n);
            fold_f(st, r->fn, last, fb, n);
        } else if (isf && cs == 4) {
            fold_f(st, r->fn, last, (const rt_f32 *)p, n);
        } else if (isf) {
            for (int i = 0; i < n; i++)
                fb[i] = *(const rt_f32 *)(p + i * cs);
            fold_f(st, r->fn, last, fb, n);
        } else {
            get_i(ib, p, cs, n, r->dtype);
            fold_i(st, r->fn, last, ib, n);
        }
    }
}

/* Element i of 8 rows (row byte stride rs) as one vector; p is element i of row 0.
 * (Macros: a function returning a vector would change the ABI between the clones.) */
#define F(p) (*(const rt_f32 *)(p))
#define LOAD_COL8(p, rs)                                                                   \
    ((v8f){F(p), F((p) + (rs)), F((p) + 2 * (rs)), F((p) + 3 * (rs)), F((p) + 4 * (rs)),     \
           F((p) + 5 * (rs)), F((p) + 6 * (rs)), F((p) + 7 * (rs))})

/* The NaN-propagating MAX (better = x > acc) or MIN step of isa.md on 8 rows at once:
 * the first NaN seen is kept, otherwise x replaces acc when it is strictly better. */
#define MAXMIN8(acc, x, better)                                                            \
    do {                                                                                   \
        v8i sel_ = ((better) | ((x) != (x))) & ((acc) == (acc));                           \
        (acc) = (v8f)((sel_ & (v8i)(x)) | (~sel_ & (v8i)(acc)));                           \
    } while (0)

/* Reduces rows r0..r0+8 of a short F32 row set into out[8], each lane one row, in
 * exactly the order of fold_f (SUM: 8 interleaved partial sums per row). s is element
 * 0 of row r0; rs, cs byte strides. (Results go through memory: a vector return value
 * would differ between the clones' ABIs.) */
RT_HOT static void red8_f32(int fn, const uint8_t *s, int64_t rs, int64_t cs, uint32_t len,
                            float *out) {
    v8f acc = {0};
    if (fn == ISA_RF_SUM) {
        v8f l[8];
        for (int t = 0; t < 8; t++)
            l[t] = acc;
        uint32_t i = 0;
        for (; i + 8 <= len; i += 8)
            for (int t = 0; t < 8; t++)
                l[t] += LOAD_COL8(s + (int64_t)(i + t) * cs, rs);
        for (int t = 0; i + (uint32_t)t < len; t++)
            l[t] += LOAD_COL8(s + (int64_t)(i + (uint32_t)t) * cs, rs);
        acc = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
        memcpy(out, &acc, sizeof acc);
        return;
    }
    float init = fn == ISA_RF_PROD ? 1.0f : fn == ISA_RF_MAX ? -INFINITY : INFINITY;
    acc += init;
    if (fn == ISA_RF_MAX)                /* one loop per function: a pooling's hot path */
        for (uint32_t i = 0; i < len; i++) {
            v8f x = LOAD_COL8(s + (int64_t)i * cs, rs);
            MAXMIN8(acc, x, x > acc);
        }
    else if (fn == ISA_RF_MIN)
        for (uint32_t i = 0; i < len; i++) {
            v8f x = LOAD_COL8(s + (int64_t)i * cs, rs);
            MAXMIN8(acc, x, x < acc);
        }
    else
        for (uint32_t i = 0; i < len; i++)
            acc *= LOAD_COL8(s + (int64_t)i * cs, rs);
    memcpy(out, &acc, sizeof acc);
}

/* F32 SUM/PROD/MAX/MIN over short rows, 8 rows at a time; returns the rows done. */
static uint32_t red_rows8_f32(RtCore *c, const SpyVReduce *r) {
    int64_t rs = (int64_t)r->src_rs * 4, cs = (int64_t)r->src_cs * 4;
    uint32_t row = 0;
    for (; row + 8 <= r->rows; row += 8) {
        float v[8];
        red8_f32(r->fn, c->lx + r->src + (int64_t)row * rs, rs, cs, r->len, v);
        for (int t = 0; t < 8; t++) {
            rt_f32 *d = (rt_f32 *)(c->lx + r->dst + ((int64_t)row + t) * r->dst_rs * 4);
            *d = (r->flags & ISA_F_ACCUM) ? accum_f(r->fn, *d, v[t]) : v[t];
        }
    }
    return row;
}

/* Stores the float result v of a DLF16 reduction at d (rounded once; under ACCUM
 * combined in F32 with the widened old value first). */
static void put_dlf16(uint8_t *d, int fn, bool accum, float v) {
    if (accum) {
        float old;
        rt_dlf16_to_f32_n(&old, d, 1);
        v = accum_f(fn, old, v);
    }
    rt_f32_to_dlf16_n(d, &v, 1);
}

/* DLF16 SUM/PROD/MAX/MIN over short rows, 8 rows at a time: the rows are widened into
 * a float block and reduced by red8_f32 (same order as the per-row path); returns the
 * rows done. */
static uint32_t red_rows8_dlf16(RtCore *c, const SpyVReduce *r) {
    int64_t rs = (int64_t)r->src_rs * 2, cs = (int64_t)r->src_cs * 2;
    float blk[8 * RT_SHORT_ROW];
    uint16_t hb[RT_SHORT_ROW];
    uint32_t row = 0;
    bool dense = cs == 2 && rs == (int64_t)r->len * 2;   /* 8 rows: one run */
    for (; row + 8 <= r->rows; row += 8) {
        if (dense)
            rt_dlf16_to_f32_n(blk, c->lx + r->src + (int64_t)row * rs, 8 * (size_t)r->len);
        for (int t = 0; t < 8 && !dense; t++) {
            const uint8_t *p = c->lx + r->src + ((int64_t)row + t) * rs;
            if (cs != 2) {
                for (uint32_t i = 0; i < r->len; i++)
                    memcpy(&hb[i], p + (int64_t)i * cs, 2);
                p = (const uint8_t *)hb;
            }
            rt_dlf16_to_f32_n(blk + t * r->len, p, r->len);
        }
        float v[8];
        red8_f32(r->fn, (const uint8_t *)blk, (int64_t)r->len * 4, 4, r->len, v);
        if (r->dst_rs == 1 && !(r->flags & ISA_F_ACCUM)) {
            rt_f32_to_dlf16_n(c->lx + r->dst + (int64_t)row * 2, v, 8);
            continue;
        }
        for (int t = 0; t < 8; t++)
            put_dlf16(c->lx + r->dst + ((int64_t)row + t) * r->dst_rs * 2, r->fn,
                      r->flags & ISA_F_ACCUM, v[t]);
    }
    return row;
}

/* Executes a verified VREDUCE. */
void rt_vreduce(RtCore *c, const SpyVReduce *r) {
    unsigned es = esz(r->dtype);
    bool arg = r->fn == ISA_RF_ARGMAX || r->fn == ISA_RF_ARGMIN;
    bool accum = r->flags & ISA_F_ACCUM;
    int64_t cs = (int64_t)r->src_cs * es;
    uint32_t row0 = 0;
    if (r->dtype == ISA_DT_F32 && !arg && r->len <= RT_SHORT_ROW)
        row0 = red_rows8_f32(c, r);
    else if (r->dtype == ISA_DT_DLF16 && !arg && r->len <= RT_SHORT_ROW && r->len > 0)
        row0 = red_rows8_dlf16(c, r);
    for (uint32_t row = row0; row < r->rows; row++) {
        const uint8_t *s = c->lx + r->src + (int64_t)row * r->src_rs * es;
        uint8_t *d = c->lx + r->dst + (int64_t)row * r->dst_rs * (arg ? 4 : es);
        RedState st;
        red_init(&st, r->fn);
        red_row(&st, r, s, cs);
        if (arg) {
            *(rt_i32 *)d = (int32_t)st.pos;
        } else if (r->dtype == ISA_DT_F32) {
            float v = red_final_f(&st, r->fn);
            *(rt_f32 *)d = accum ? accum_f(r->fn, *(rt_f32 *)d, v) : v;
        } else if (r->dtype == ISA_DT_DLF16) {
            put_dlf16(d, r->fn, accum, red_final_f(&st, r->fn));
        } else {
            int64_t v = st.iacc;
            if (r->len == 0 && (r->fn == ISA_RF_MAX || r->fn == ISA_RF_MIN))
                v = r->fn == ISA_RF_MAX ? (r->dtype == ISA_DT_U8 || r->dtype == ISA_DT_BOOL
                                               ? 0
                                               : INT32_MIN >> (32 - 8 * (int)es))
                                        : (r->dtype == ISA_DT_U8 ? 255
                                           : r->dtype == ISA_DT_BOOL
                                               ? 1
                                               : INT32_MAX >> (32 - 8 * (int)es));
            put_i(d, accum ? accum_i(r->fn, get1_i(d, r->dtype), v) : v, r->dtype);
        }
    }
}

/* Scans one integer row (len elements) with the given direction and exclusivity. */
static void scan_row_i(uint8_t *d, const uint8_t *s, uint32_t len, int dt, bool rev,
                       bool excl) {
    unsigned es = esz(dt);
    uint64_t acc = 0;
    for (uint32_t k = 0; k < len; k++) {
        uint32_t i = rev ? len - 1 - k : k;
        uint64_t x = (uint64_t)get1_i(s + (size_t)i * es, dt);
        if (!excl)
            acc += x;
        put_i(d + (size_t)i * es, (int64_t)acc, dt);
        if (excl)
            acc += x;
    }
}

/* Scans one DLF16 row (len elements) in F32, chunk by chunk in scan order (each chunk
 * is widened before its outputs are written: in place allowed); each output rounded. */
static void scan_row_dlf16(uint8_t *d, const uint8_t *s, uint32_t len, bool rev, bool excl) {
    float x[RT_RCH], y[RT_RCH], acc = 0.0f;
    for (uint32_t k0 = 0; k0 < len; k0 += RT_RCH) {
        uint32_t n = len - k0 < RT_RCH ? len - k0 : RT_RCH;
        uint32_t i0 = rev ? len - k0 - n : k0;   /* first element of the chunk */
        rt_dlf16_to_f32_n(x, s + (size_t)i0 * 2, n);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = rev ? n - 1 - k : k;
            if (!excl)
                acc += x[i];
            y[i] = acc;
            if (excl)
                acc += x[i];
        }
        rt_f32_to_dlf16_n(d + (size_t)i0 * 2, y, n);
    }
}

/* Executes a verified VSCAN (sequential per row; in place allowed). */
void rt_vscan(RtCore *c, const SpyVScan *sc) {
    unsigned es = esz(sc->dtype);
    bool rev = sc->flags & ISA_F_REV, excl = sc->flags & ISA_F_EXCL;
    if (!sc->len)    /* no element: no row loop (as rt_vec) */
        return;
    for (uint32_t row = 0; row < sc->rows; row++) {
        const uint8_t *s = c->lx + sc->src + (int64_t)row * sc->src_rs * es;
        uint8_t *d = c->lx + sc->dst + (int64_t)row * sc->dst_rs * es;
        if (sc->dtype == ISA_DT_DLF16) {
            scan_row_dlf16(d, s, sc->len, rev, excl);
            continue;
        }
        if (sc->dtype != ISA_DT_F32) {
            scan_row_i(d, s, sc->len, sc->dtype, rev, excl);
            continue;
        }
        const rt_f32 *x = (const rt_f32 *)s;
        rt_f32 *y = (rt_f32 *)d;
        float acc = 0.0f;
        for (uint32_t k = 0; k < sc->len; k++) {
            uint32_t i = rev ? sc->len - 1 - k : k;
            float v = x[i];
            if (!excl)
                acc += v;
            y[i] = acc;
            if (excl)
                acc += v;
        }
    }
}
