/* rt_kern_vtaps.c: runs of depthwise-convolution taps (codegen/cg_contract.c dw_taps):
 * a VEC MUL then FMAs into one region, each multiplying a window of one input patch by
 * a weight per row, computed in one pass with each element's sum kept in registers
 * instead of one pass over the region per tap. A kernel of more taps than a run takes
 * (7 x 7: 49) continues in runs that start with an FMA, from the sums in the region.
 *
 * Every element goes through the same operations, in the same order, as with the
 * instructions one by one (rt_kern_vec.c): the same bits.
 */
#include <stdbool.h>
#include <string.h>

#include "dtconv.h"
#include "rt_dlf16.h"
#include "rt_exec.h"
#include "rt_vlanes.h"

/* The taps of columns j.. of a row, W lanes of vector type V at a time (taps_row). */
#define TAPS_LANES(V, LOAD, W)                                                             \
    for (; (cs == 1 || cs == 2) && j + (W) <= n; j += (W)) {                               \
        V acc, x;                                                                          \
        if (acc0) {                                                                        \
            memcpy(&acc, d + 4 * (size_t)j, sizeof acc);                                   \
        } else {                                                                           \
            LOAD(acc, s[0] + 4 * (size_t)(j * cs), cs);                                    \
            acc *= w[0];                                                                   \
        }                                                                                  \
        for (uint32_t t = t0; t < nt; t++) {                                               \
            LOAD(x, s[t] + 4 * (size_t)(j * cs), cs);                                      \
            acc = x * w[t] + acc;                                                          \
        }                                                                                  \
        memcpy(d + 4 * (size_t)j, &acc, sizeof acc);                                       \
    }

/* The taps of columns j.. of a row, four vectors of W lanes a step: four independent
 * sums, so that the multiply-adds of a tap do not wait on each other's latency (one
 * vector a step left one chain of nt dependent multiply-adds per W columns). */
#define TAPS_LANES4(V, LOAD, W)                                                            \
    for (; (cs == 1 || cs == 2) && j + 4 * (W) <= n; j += 4 * (W)) {                       \
        V a0, a1, a2, a3, x0, x1, x2, x3;                                                  \
        size_t st = 4 * (size_t)((W) * cs);                                                \
        const uint8_t *p = s[0] + 4 * (size_t)(j * cs);                                    \
        if (acc0) {                                                                        \
            memcpy(&a0, d + 4 * (size_t)j, sizeof a0);                                     \
            memcpy(&a1, d + 4 * (size_t)(j + (W)), sizeof a1);                             \
            memcpy(&a2, d + 4 * (size_t)(j + 2 * (W)), sizeof a2);                         \
            memcpy(&a3, d + 4 * (size_t)(j + 3 * (W)), sizeof a3);                         \
        } else {                                                                           \
            LOAD(a0, p, cs);                                                               \
            LOAD(a1, p + st, cs);                                                          \
            LOAD(a2, p + 2 * st, cs);                                                      \
            LOAD(a3, p + 3 * st, cs);                                                      \
            a0 *= w[0];                                                                    \
            a1 *= w[0];                                                                    \
            a2 *= w[0];                                                                    \
            a3 *= w[0];                                                                    \
        }                                                                                  \
        for (uint32_t t = t0; t < nt; t++) {                                               \
            p = s[t] + 4 * (size_t)(j * cs);                                               \
            LOAD(x0, p, cs);                                                               \
            LOAD(x1, p + st, cs);                                                          \
            LOAD(x2, p + 2 * st, cs);                                                      \
            LOAD(x3, p + 3 * st, cs);                                                      \
            a0 = x0 * w[t] + a0;                                                           \
            a1 = x1 * w[t] + a1;                                                           \
            a2 = x2 * w[t] + a2;                                                           \
            a3 = x3 * w[t] + a3;                                                           \
        }                                                                                  \
        memcpy(d + 4 * (size_t)j, &a0, sizeof a0);                                         \
        memcpy(d + 4 * (size_t)(j + (W)), &a1, sizeof a1);                                 \
        memcpy(d + 4 * (size_t)(j + 2 * (W)), &a2, sizeof a2);                             \
        memcpy(d + 4 * (size_t)(j + 3 * (W)), &a3, sizeof a3);                             \
    }

/* One row of rt_vec_taps: d[j] = s_0[j*cs]*w_0 + s_1[j*cs]*w_1 + ... (left to right),
 * or with acc0, d[j] + s_0[j*cs]*w_0 + ... (a run that continues the taps of one before
 * it: a 7 x 7 kernel has more than RT_TAPS_MAX), the sums kept in registers:
 * sixteen-lane vectors on AVX-512 hosts, eight-lane ones elsewhere (a sixteen-lane
 * vector of stride-2 lanes was taken apart element by element through the stack on
 * AVX2 hosts: mobilenet_v2's taps were 35% of its time on AMD Zen 3), four vectors a
 * step while they fill the row. */
RT_HOT static void taps_row(uint8_t *d, const uint8_t *const *s, const float *w, uint32_t nt,
                            int64_t cs, uint32_t n, bool acc0) {
    uint32_t j = 0, t0 = acc0 ? 0 : 1;
    if (rt_host_has(RT_HOST_AVX512)) {
        TAPS_LANES4(v16f, RT_LOAD16, 16)
        TAPS_LANES(v16f, RT_LOAD16, 16)
    }
    TAPS_LANES4(v8f, RT_LOAD8, 8)
    TAPS_LANES(v8f, RT_LOAD8, 8)
    for (; j < n; j++) {
        float acc = 0, x;
        if (acc0)
            memcpy(&acc, d + 4 * (size_t)j, 4);
        for (uint32_t t = 0; t < nt; t++) {
            memcpy(&x, s[t] + 4 * (size_t)((int64_t)j * cs), 4);
            acc = t || acc0 ? x * w[t] + acc : x * w[t];
        }
        memcpy(d + 4 * (size_t)j, &acc, 4);
    }
}

/* Whether v continues a run of taps that starts with r (rt_vec_taps): F32 result,
 * F32 or DLF16 operands; the first a MUL, or an FMA into the region (it continues the
 * run before it). */
static bool tap_of(const SpyVec *r, const SpyVec *v, bool first) {
    int sdt = v->src_dtype ? v->src_dtype : ISA_DT_F32;
    if ((v->fn != ISA_VF_FMA && !(first && v->fn == ISA_VF_MUL)) || v->dtype != ISA_DT_F32 ||
        v->flags ||
        (sdt != ISA_DT_F32 && sdt != ISA_DT_DLF16) || v->src_dtype != r->src_dtype ||
        v->src_cs[1] != 0 || (v->src_cs[0] != 1 && v->src_cs[0] != 2) || v->dst != r->dst ||
        v->rows != r->rows || v->cols != r->cols || v->dst_rs != r->dst_rs ||
        v->src_cs[0] != r->src_cs[0] || !v->rows || !v->cols)
        return false;
    if (v->fn == ISA_VF_FMA &&
        (v->src[2] != v->dst || v->src_rs[2] != v->dst_rs || v->src_cs[2] != 1))
        return false;
    if (v->src_rs[0] < 0 || v->dst_rs < 0)
        return false;
    uint64_t ss = sdt == ISA_DT_F32 ? 4 : 2;
    uint64_t slo = v->src[0], dlo = v->dst;   /* byte ranges, one element of slack */
    uint64_t shi = slo + ss * ((uint64_t)(v->rows - 1) * (uint32_t)v->src_rs[0] +
                               (uint64_t)(v->cols - 1) * (uint32_t)v->src_cs[0] + 2);
    uint64_t dhi = dlo + 4 * ((uint64_t)(v->rows - 1) * (uint32_t)v->dst_rs + v->cols);
    return shi <= dlo || slo >= dhi;
}

/* One row of DLF16 taps: the operands widened to F32 (exactly), then summed as F32
 * taps. The taps read overlapping windows of one patch row, so the span they cover is
 * widened once per block of columns (each tap alone when the span is too wide). */
static void taps_row_half(uint8_t *d, const uint8_t *const *s, const float *w, uint32_t nt,
                          int64_t cs, uint32_t n, bool acc0) {
    enum { NBUF = 8192, TB = 120 };
    _Static_assert(RT_TAPS_MAX * (2 * TB + 2) <= NBUF, "tap buffers fit");
    float buf[NBUF + 2];
    const uint8_t *lo = s[0], *hi = s[0], *p[RT_TAPS_MAX];
    for (uint32_t t = 1; t < nt; t++) {
        lo = s[t] < lo ? s[t] : lo;
        hi = s[t] > hi ? s[t] : hi;
    }
    int64_t span = (hi - lo) / 2, tb = (NBUF - span - 1) / cs;
    if (tb < TB) {                           /* each tap on its own, TB columns at a time */
        for (uint32_t c0 = 0; c0 < n; c0 += TB) {
            uint32_t nb = n - c0 < TB ? n - c0 : TB;
            size_t ne = (size_t)((int64_t)(nb - 1) * cs + 1);
            for (uint32_t t = 0; t < nt; t++) {
                float *bt = buf + (size_t)t * (2 * TB + 2);
                rt_dlf16_to_f32_n(bt, s[t] + 2 * (size_t)((int64_t)c0 * cs), ne);
                bt[ne] = 0;                 /* the stride-2 lanes' one element of slack */
                p[t] = (const uint8_t *)bt;
            }
            taps_row(d + 4 * (size_t)c0, p, w, nt, cs, nb, acc0);
        }
        return;
    }
    for (uint32_t c0 = 0; c0 < n; c0 += (uint32_t)tb) {
        uint32_t nb = n - c0 < tb ? n - c0 : (uint32_t)tb;
        size_t ne = (size_t)(span + (int64_t)(nb - 1) * cs + 1);
        rt_dlf16_to_f32_n(buf, lo + 2 * (size_t)((int64_t)c0 * cs), ne);
        buf[ne] = 0;
        for (uint32_t t = 0; t < nt; t++)
            p[t] = (const uint8_t *)(buf + (s[t] - lo) / 2);
        taps_row(d + 4 * (size_t)c0, p, w, nt, cs, nb, acc0);
    }
}

/* Length of the run of taps at code[0..n) (0: none): VECs with an F32 result (F32 or
 * DLF16 operands), a MUL (or an FMA: the rest of a kernel's taps past RT_TAPS_MAX) then
 * FMAs into the same region, each multiplying an operand apart from it by one value per
 * row (the taps of a depthwise convolution, cg_contract.c). */
uint32_t rt_vec_taps_run(const SpyInsn *code, uint32_t n) {
    const SpyVec *r = &code[0].vec;
    if (code[0].opcode != ISA_VEC || !tap_of(r, r, true))
        return 0;
    uint32_t nt = 1;
    while (nt < n && nt < RT_TAPS_MAX && code[nt].opcode == ISA_VEC &&
           tap_of(r, &code[nt].vec, false))
        nt++;
    return nt >= 2 || r->fn == ISA_VF_FMA ? nt : 0;
}

/* Runs the nt taps at code (rt_vec_taps_run) with the sum of each element kept in
 * registers: the same roundings, in the same order, as one instruction after the
 * other, with one pass over the region instead of nt. */
void rt_vec_taps(RtCore *c, const SpyInsn *code, uint32_t nt) {
    const SpyVec *r = &code[0].vec;
    const uint8_t *s[RT_TAPS_MAX];
    float w[RT_TAPS_MAX];
    bool half = r->src_dtype == ISA_DT_DLF16, acc0 = r->fn == ISA_VF_FMA;
    int64_t ss = half ? 2 : 4;
    for (uint32_t row = 0; row < r->rows; row++) {
        for (uint32_t t = 0; t < nt; t++) {
            const SpyVec *v = &code[t].vec;
            const uint8_t *wp = c->lx + v->src[1] + (int64_t)row * v->src_rs[1] * ss;
            s[t] = c->lx + v->src[0] + (int64_t)row * v->src_rs[0] * ss;
            if (half) {
                uint16_t h;
                memcpy(&h, wp, 2);
                w[t] = spy_dlf16_to_f32(h);
            } else {
                memcpy(&w[t], wp, 4);
            }
        }
        uint8_t *d = c->lx + r->dst + (int64_t)row * r->dst_rs * 4;
        if (half)
            taps_row_half(d, s, w, nt, r->src_cs[0], r->cols, acc0);
        else
            taps_row(d, s, w, nt, r->src_cs[0], r->cols, acc0);
    }
}
